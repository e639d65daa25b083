//! Zero heap allocations per request in steady state, counted exactly.

use mcp_engine::Commands;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig};
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, Prompt, PromptArgument, PromptMessage, PromptOutput,
    Resource, ResourceContents, ResourceTemplate, Tool, ToolOutput,
};
use mcp_tests::{legacy_open, modern, request};
use serde_json::{Value, json};

/// The input schema of the `calc` tool: the common keywords, a `$ref`, a `pattern` and
/// asserted `format`s.
fn calc_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "op": {"enum": ["add", "sub", "mul"]},
            "a": {"type": "number"},
            "b": {"type": "number", "minimum": -1e9, "maximum": 1e9},
            "label": {"type": "string", "maxLength": 40, "pattern": "^[a-z ]*$"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "options": {"$ref": "#/$defs/options"},
            "due": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "ref": {"type": "string", "format": "uuid"},
            "source": {"type": "string", "format": "uri"}
        },
        "required": ["op", "a", "b"],
        "additionalProperties": false,
        "$defs": {"options": {"type": "object", "properties": {"precision": {"type": "integer"}}}}
    })
}

fn calc_arguments() -> Value {
    json!({"op": "add", "a": 1.5, "b": 2, "label": "sum of two", "tags": ["x", "y"], "options": {"precision": 3},
        "due": "2026-07-28", "at": "2026-07-28T09:30:00Z", "ref": "67e55044-10b1-426f-9247-bb680e5fe0c8",
        "source": "https://example.com/data"})
}

fn engine() -> Engine {
    let mut b = Catalog::builder();
    for i in 0..120 {
        b = b.tool(Tool::new(format!("tool_{i:03}")).description("a tool without an input schema"));
    }
    let catalog = b.resource(Resource::new("test://r", "r")).prompt(Prompt::new("p")).build().unwrap();
    Engine::new(keyed(), catalog)
}

/// The test configuration with a secret key (list cursors are sealed with it).
fn keyed() -> Config {
    let mut c = Config::new("alloc", "1");
    c.secret_key([3; 32]);
    c
}

/// More than one page (50) of every list, a tool with an input schema, resources behind
/// templates, and prompts with declared arguments.
fn rich_catalog() -> Catalog {
    let mut b = Catalog::builder()
        .tool(Tool::new("calc").input_schema(calc_schema()))
        .template(ResourceTemplate::new("test://q/{id}{?page,rest*}", "query"));
    for i in 0..60 {
        b = b
            .tool(Tool::new(format!("tool_{i:03}")))
            .resource(Resource::new(format!("test://r/{i:03}"), format!("r{i}")))
            .template(ResourceTemplate::new(format!("test://t{i:03}/{{id}}"), format!("t{i}")))
            .prompt(
                Prompt::new(format!("p_{i:03}"))
                    .argument(PromptArgument::required("name"))
                    .argument(PromptArgument::new("style")),
            );
    }
    // The fixture's skills: a text reference file in a folder and a binary file.
    b.skills(mcp_fixture::skills::skills()).build().unwrap()
}

/// Answers one event inline with static content.
fn respond(ev: Event<'_>) {
    // What a span of the request reads (its trace context, session and addresses).
    if let Some(r) = ev.request() {
        std::hint::black_box((r.method, r.id, r.trace, r.session_id, r.peer, r.client));
    }
    match ev {
        Event::CallTool(call) => call.answer(&ToolOutput::new(&[Content::text("ok")])).unwrap(),
        Event::ReadResource(read) => {
            let uri = read.uri;
            // The host reads the decoded variables and pairs: no allocation either.
            let vars = read.variables;
            let body = vars.iter().chain(vars.pairs()).last().map_or("body", |(_, v)| v);
            read.answer(&[ResourceContents::text(uri, Some("text/plain"), body)]).unwrap();
        }
        Event::GetPrompt(get) => {
            get.answer(&PromptOutput::new(&[PromptMessage::user(Content::text("hi"))])).unwrap();
        }
        _ => {}
    }
}

/// Feeds `input`, answers every event inline with static content, drains output into a
/// reused sink. Returns the bytes written.
fn pump(e: &mut Engine, input: &[u8], sink: &mut [u8]) -> usize {
    pump_with(e, input, sink, &mut respond, |_| {})
}

/// [`pump`] with `host` answering the events and `take` seeing each piece of output.
fn pump_with(
    e: &mut Engine,
    input: &[u8],
    sink: &mut [u8],
    host: &mut dyn FnMut(Event<'_>),
    mut take: impl FnMut(&[u8]),
) -> usize {
    let mut written = 0;
    let mut fed = 0;
    while fed < input.len() {
        fed += e.handle_input(Instant::ZERO, &input[fed..]);
        loop {
            let mut progressed = false;
            while let Some(ev) = e.poll_event() {
                progressed = true;
                host(ev);
            }
            loop {
                let n = e.poll_transmit(sink);
                if n == 0 {
                    break;
                }
                take(&sink[..n]);
                written += n;
                progressed = true;
            }
            if !progressed {
                break;
            }
        }
    }
    written
}

/// Feeds `input` and returns the output as JSON lines (allocates: setup only).
fn exchange(e: &mut Engine, input: &str) -> Vec<Value> {
    let mut sink = vec![0u8; 1 << 16];
    let mut out = Vec::new();
    let mut fed = 0;
    while fed < input.len() {
        fed += e.handle_input(Instant::ZERO, &input.as_bytes()[fed..]);
        while let Some(ev) = e.poll_event() {
            respond(ev);
        }
        loop {
            let n = e.poll_transmit(&mut sink);
            if n == 0 {
                break;
            }
            out.extend_from_slice(&sink[..n]);
        }
    }
    mcp_tests::lines(&out)
}

fn batch() -> Vec<u8> {
    let mut s = String::new();
    for i in 0..50 {
        s.push_str(&modern(i, "server/discover", json!({})));
        s.push_str(&modern(i, "tools/list", json!({})));
        s.push_str(&modern(
            i,
            "tools/call",
            json!({"name": "tool_007", "arguments": {"x": [1, 2, {"y": "z\n"}]}}),
        ));
        s.push_str(&modern(format!("id-{i}"), "tools/call", json!({"name": "tool_100"})));
        s.push_str(&modern(i, "resources/list", json!({})));
        s.push_str(&modern(i, "prompts/list", json!({})));
        s.push_str(&request(i, "ping", json!({})));
    }
    s.into_bytes()
}

#[test]
fn steady_state_requests_allocate_nothing() {
    let mut e = engine();
    let mut sink = vec![0u8; 1 << 16];
    let input = batch();
    // Warm-up: the session opens and buffers reach their working size.
    let warm = legacy_open("2025-11-25");
    pump(&mut e, warm.as_bytes(), &mut sink);
    pump(&mut e, &input, &mut sink);
    let mut written = 0;
    let info = allocation_counter::measure(|| {
        written = pump(&mut e, &input, &mut sink);
    });
    assert!(written > 100_000, "the batch was served ({written} bytes)");
    assert_eq!(e.frames_processed(), 2 + 2 * 350);
    assert_eq!(info.count_total, 0, "{} allocations for 350 requests: {info:?}", info.count_total);
}

/// Feeds `input` as a client that pipelines everything would, to a host that answers one
/// call at a time later (the in-flight limit holds the rest of the input buffered), in
/// chunks of `chunk` bytes; returns the output bytes.
fn pump_deferred(
    e: &mut Engine,
    input: &[u8],
    chunk: usize,
    tickets: &mut std::collections::VecDeque<mcp_engine::Ticket>,
    sink: &mut [u8],
) -> usize {
    let mut fed = 0;
    let mut written = 0;
    loop {
        let end = input.len().min(fed + chunk);
        fed += e.handle_input(Instant::ZERO, &input[fed..end]);
        while let Some(ev) = e.poll_event() {
            if let Event::CallTool(call) = ev {
                tickets.push_back(call.ticket);
            }
        }
        if let Some(t) = tickets.pop_front() {
            e.answer_tool(t, &ToolOutput::new(&[Content::text("later")])).unwrap();
        }
        loop {
            let n = e.poll_transmit(sink);
            if n == 0 {
                break;
            }
            written += n;
        }
        if fed == input.len() && tickets.is_empty() && e.poll_event().is_none() {
            return written;
        }
    }
}

/// A pipelining client and a host that answers later: the input buffer stays full of
/// frames waiting for a slot, each answer lets a few more bytes in, and still nothing is
/// allocated (the buffer never grows, however its bytes are moved).
#[test]
fn held_pipelined_requests_allocate_nothing() {
    let mut cfg = Config::new("alloc", "1");
    cfg.max_in_flight(4).max_frame_len(64_000);
    let catalog = Catalog::builder().tool(Tool::new("t")).build().unwrap();
    let mut e = Engine::new(cfg, catalog);
    let input: String = (0..2_000).map(|i| modern(i, "tools/call", json!({"name": "t"}))).collect();
    assert!(input.len() > 3 * 64_000, "more than the input buffer holds");
    let mut sink = vec![0u8; 1 << 16];
    let mut tickets = std::collections::VecDeque::with_capacity(16);
    // The input buffer is allocated whole with the engine: after one call (which sizes
    // the parse tape) even the first round allocates nothing (an engine whose input
    // buffer grew would, at least then).
    let one = modern(0, "tools/call", json!({"name": "t"}));
    pump_deferred(&mut e, one.as_bytes(), 4096, &mut tickets, &mut sink);
    let info = allocation_counter::measure(|| {
        pump_deferred(&mut e, input.as_bytes(), 4096, &mut tickets, &mut sink);
    });
    assert_eq!(info.count_total, 0, "the first round: {info:?}");
    for chunk in [4096, 1000, 97] {
        pump_deferred(&mut e, input.as_bytes(), chunk, &mut tickets, &mut sink);
        let mut written = 0;
        let info = allocation_counter::measure(|| {
            written = pump_deferred(&mut e, input.as_bytes(), chunk, &mut tickets, &mut sink);
        });
        assert!(written > 2_000 * 100, "every call was answered ({written} bytes)");
        assert_eq!(info.count_total, 0, "{} allocations in {chunk}-byte chunks: {info:?}", info.count_total);
    }
    assert_eq!(e.frames_processed(), 1 + 7 * 2_000);
}

/// A client that reads its responses slowly: the output the engine holds grows to its
/// limit (`max_buffered_output`, after which the engine takes no more input until some
/// is read) without the output buffer ever being reallocated, from the first round on.
#[test]
fn a_slow_reader_costs_no_allocation() {
    let mut cfg = Config::new("alloc", "1");
    // An input buffer smaller than the input: the engine stops taking it.
    cfg.max_buffered_output(256 * 1024).max_frame_len(64_000);
    let catalog = Catalog::builder().tool(Tool::new("t")).build().unwrap();
    let mut e = Engine::new(cfg, catalog);
    let input: String = (0..5_000).map(|i| modern(i, "tools/call", json!({"name": "t"}))).collect();
    let one = modern(0, "tools/call", json!({"name": "t"}));
    let mut sink = vec![0u8; 1 << 16];
    pump(&mut e, one.as_bytes(), &mut sink);
    let mut small = [0u8; 100];
    let (mut fed, mut lines, mut paused) = (0, 0, false);
    let info = allocation_counter::measure(|| {
        while fed < input.len() {
            let n = e.handle_input(Instant::ZERO, &input.as_bytes()[fed..]);
            paused |= n == 0;
            fed += n;
            while let Some(ev) = e.poll_event() {
                respond(ev);
            }
            // The client reads a little at a time: slower than the server writes.
            let n = e.poll_transmit(&mut small);
            lines += small[..n].iter().filter(|&&b| b == b'\n').count();
        }
    });
    assert!(paused, "the output limit was reached");
    assert_eq!(info.count_total, 0, "{info:?}");
    loop {
        let mut events = 0;
        while let Some(ev) = e.poll_event() {
            respond(ev);
            events += 1;
        }
        let n = e.poll_transmit(&mut sink);
        if n == 0 && events == 0 {
            break;
        }
        lines += sink[..n].iter().filter(|&&b| b == b'\n').count();
    }
    assert_eq!(lines, 5_000, "every call answered");
}

#[test]
fn the_paginated_tools_list_second_page_allocates_nothing() {
    let mut e = engine();
    let mut sink = vec![0u8; 1 << 16];
    let first = modern(1, "tools/list", json!({}));
    let mut out = Vec::new();
    e.handle_input(Instant::ZERO, first.as_bytes());
    out.extend_from_slice(e.pending_output());
    let v: Value = serde_json::from_slice(&out).unwrap();
    let cursor = v["result"]["nextCursor"].as_str().unwrap().to_owned();
    let second = modern(2, "tools/list", json!({"cursor": cursor})).into_bytes();
    pump(&mut e, &second, &mut sink);
    let info = allocation_counter::measure(|| {
        pump(&mut e, &second, &mut sink);
    });
    assert_eq!(info.count_total, 0);
}

/// How requests are written for one protocol revision.
#[derive(Clone, Copy, Debug)]
enum Rev {
    /// `2026-07-28`: every request carries `_meta`; no session.
    Modern,
    /// A `2025-11-25` session opened with `initialize`.
    Legacy,
}

impl Rev {
    fn line(self, id: i64, method: &str, params: Value) -> String {
        match self {
            Self::Modern => modern(id, method, params),
            Self::Legacy => request(id, method, params),
        }
    }
    /// A request line whose `params._meta` also carries a W3C trace context.
    fn traced(self, id: i64, method: &str, mut params: Value) -> String {
        let mut meta = match self {
            Self::Modern => mcp_tests::modern_meta(),
            Self::Legacy => json!({}),
        };
        meta["traceparent"] = json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        meta["tracestate"] = json!("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE");
        meta["baggage"] = json!("userId=alice,serverNode=DF%2028,isProduction=false");
        params["_meta"] = meta;
        request(id, method, params)
    }
    fn engine(self) -> Engine {
        let mut cfg = keyed();
        cfg.skills_directory_read(true);
        let mut e = Engine::new(cfg, rich_catalog());
        if let Self::Legacy = self {
            let opened = exchange(&mut e, &legacy_open("2025-11-25"));
            assert_eq!(opened[0]["result"]["protocolVersion"], "2025-11-25");
        }
        e
    }
}

/// Each request kind, sent 20 times after a warm-up, must allocate nothing. Every kind is
/// measured (and checked to be answered with a result) before the assertion, so a failure
/// names every path that allocates.
fn requests_allocate_nothing(rev: Rev) {
    let mut e = rev.engine();
    let mut cases: Vec<(&str, String)> = vec![
        (
            "tools/call with input validation",
            rev.line(1, "tools/call", json!({"name": "calc", "arguments": calc_arguments()})),
        ),
        (
            "tools/call with a trace context in _meta",
            rev.traced(1, "tools/call", json!({"name": "calc", "arguments": calc_arguments()})),
        ),
        (
            "resources/read of a listed resource",
            rev.line(2, "resources/read", json!({"uri": "test://r/007"})),
        ),
        (
            "resources/read through a template",
            rev.line(3, "resources/read", json!({"uri": "test://t005/abc"})),
        ),
        (
            "resources/read through a template with escapes and a query",
            rev.line(3, "resources/read", json!({"uri": "test://q/caf%C3%A9?x=%20y&page=2"})),
        ),
        (
            "prompts/get with arguments",
            rev.line(
                4,
                "prompts/get",
                json!({"name": "p_003", "arguments": {"name": "x", "style": "terse"}}),
            ),
        ),
        ("skills/list", rev.line(5, "skills/list", json!({}))),
        ("skills/get", rev.line(6, "skills/get", json!({"uri": "skill://pdf-forms/SKILL.md"}))),
        (
            "resources/read of a skill's text file",
            rev.line(7, "resources/read", json!({"uri": "skill://pdf-forms/reference/fields.md"})),
        ),
        (
            "resources/read of a skill's binary file",
            rev.line(8, "resources/read", json!({"uri": "skill://pdf-forms/assets/check.png"})),
        ),
        (
            "resources/directory/read of a skill's folder",
            rev.line(9, "resources/directory/read", json!({"uri": "skill://pdf-forms"})),
        ),
    ];
    for (i, method) in
        ["tools/list", "resources/list", "resources/templates/list", "prompts/list"].into_iter().enumerate()
    {
        let first = exchange(&mut e, &rev.line(10 + i as i64, method, json!({})));
        let cursor = first[0]["result"]["nextCursor"]
            .as_str()
            .unwrap_or_else(|| panic!("{rev:?} {method}: a first page with a cursor: {}", first[0]))
            .to_owned();
        cases.push((method, rev.line(20 + i as i64, method, json!({"cursor": cursor}))));
    }
    let mut sink = vec![0u8; 1 << 16];
    let mut failures = Vec::new();
    for (label, line) in &cases {
        let answer = exchange(&mut e, line);
        assert!(answer.len() == 1 && answer[0].get("result").is_some(), "{rev:?} {label}: {answer:?}");
        assert_ne!(answer[0]["result"]["isError"], true, "{rev:?} {label}: {answer:?}");
        let input = line.repeat(20).into_bytes();
        pump(&mut e, &input, &mut sink);
        let mut written = 0;
        let info = allocation_counter::measure(|| {
            written = pump(&mut e, &input, &mut sink);
        });
        assert!(written > 20 * 40, "{rev:?} {label}: answered ({written} bytes)");
        if info.count_total != 0 {
            failures.push(format!("{label}: {} allocations for 20 requests ({info:?})", info.count_total));
        }
    }
    assert!(failures.is_empty(), "{rev:?}:\n{}", failures.join("\n"));
}

#[test]
fn modern_requests_of_every_kind_allocate_nothing() {
    requests_allocate_nothing(Rev::Modern);
}

#[test]
fn legacy_session_requests_of_every_kind_allocate_nothing() {
    requests_allocate_nothing(Rev::Legacy);
}

/// Invalid arguments still get their error result (the `serde_json::Value` path, which may
/// allocate), and arguments with a repeated name still take that path.
#[test]
fn invalid_and_repeated_arguments_still_take_the_value_path() {
    let mut e = Rev::Modern.engine();
    let bad = exchange(&mut e, &modern(1, "tools/call", json!({"name": "calc", "arguments": {"op": "div"}})));
    assert_eq!(bad[0]["result"]["isError"], true, "{bad:?}");
    let text = bad[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Invalid arguments for tool calc: "), "{text}");
    let bad =
        exchange(&mut e, &modern(2, "prompts/get", json!({"name": "p_001", "arguments": {"style": "x"}})));
    assert_eq!(bad[0]["error"]["code"], -32602, "{bad:?}");
}

/// A keep-alive connection of the HTTP engine: POST in, response out.
struct Http {
    c: mcp_tests::wire::Client,
}

impl Http {
    fn new() -> Self {
        Self::with_store(false)
    }

    /// With the host's session store on or off (`HttpConfig::session_store`).
    fn with_store(store: bool) -> Self {
        let mut http =
            HttpConfig::new(AllowedOrigins::List(vec!["http://localhost:3000".into()]), Authorization::Host);
        http.session_store(store);
        let config = keyed();
        Self { c: mcp_tests::wire::client_of(config, http, rich_catalog(), Box::new(respond)) }
    }

    /// Opens a 2025-11-25 session whose client declares `capabilities`; returns its id.
    fn open_session(&mut self, capabilities: Value, sink: &mut Vec<u8>) -> String {
        self.c.e.set_entropy(&[4; 32]);
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}});
        let mut open = session_post(&init, "x");
        // No session yet: the same request without `Mcp-Session-Id`.
        let at = open.windows(16).position(|w| w == b"Mcp-Session-Id: ").unwrap();
        open.drain(at..at + "Mcp-Session-Id: x\r\n".len());
        self.round(&open, sink);
        let text = String::from_utf8_lossy(sink).into_owned();
        let id =
            text.lines().find_map(|l| l.strip_prefix("mcp-session-id: ")).unwrap_or_else(|| panic!("{text}"));
        id.trim().to_owned()
    }

    /// Feeds one request, authorizes and answers it, and drains the response into `sink`;
    /// returns the bytes of output.
    fn round(&mut self, raw: &[u8], sink: &mut Vec<u8>) -> usize {
        sink.clear();
        let mut rest = raw;
        loop {
            let n = self.c.e.handle_input(Instant::ZERO, self.c.conn, rest);
            rest = &rest[n..];
            self.c.drain(sink);
            if rest.is_empty() {
                break;
            }
            assert!(n > 0, "the engine stopped taking input");
        }
        sink.len()
    }
}

fn http_post(body: &Value, name: &str) -> Vec<u8> {
    let body = body.to_string();
    let method = serde_json::from_str::<Value>(&body).unwrap()["method"].as_str().unwrap().to_owned();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost:3000\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\nMcp-Name: {name}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[test]
fn http_keep_alive_requests_allocate_nothing() {
    let meta = mcp_tests::modern_meta();
    let cases = [
        ("tools/call with input validation", "calc", json!({"name": "calc", "arguments": calc_arguments()})),
        ("resources/read", "test://t005/abc", json!({"uri": "test://t005/abc"})),
        ("prompts/get", "p_003", json!({"name": "p_003", "arguments": {"name": "x"}})),
        (
            "tools/call with a trace context",
            "calc",
            json!({"name": "calc", "arguments": calc_arguments(), "_meta": {
                "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "tracestate": "rojo=00f067aa0ba902b7",
                "baggage": "k=v"
            }}),
        ),
    ];
    let mut failures = Vec::new();
    for (label, name, mut params) in cases {
        let mut h = Http::new();
        let mut sink = Vec::with_capacity(1 << 16);
        let trace = params.get("_meta").cloned().unwrap_or_else(|| json!({}));
        params["_meta"] = meta.clone();
        for (k, v) in trace.as_object().unwrap() {
            params["_meta"][k] = v.clone();
        }
        let method = label.split(' ').next().unwrap();
        let raw = http_post(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}), name);
        for _ in 0..3 {
            h.round(&raw, &mut sink);
        }
        let text = String::from_utf8_lossy(&sink).into_owned();
        assert!(text.starts_with("HTTP/1.1 200"), "{label}: {text}");
        assert!(!text.contains("\"isError\":true") && !text.contains("\"error\""), "{label}: {text}");
        let mut written = 0;
        let info = allocation_counter::measure(|| {
            for _ in 0..20 {
                written += h.round(&raw, &mut sink);
            }
        });
        assert!(written > 20 * 100, "{label}: answered ({written} bytes)");
        assert_eq!(h.c.e.connections(), 1, "{label}: the connection is kept alive");
        if info.count_total != 0 {
            failures.push(format!("{label}: {} allocations for 20 requests ({info:?})", info.count_total));
        }
    }
    assert!(failures.is_empty(), "HTTP:\n{}", failures.join("\n"));
}

/// Rate-checked requests (issue 27): a tool call counted against its principal and its
/// address allocates nothing, whether it is allowed, refused `429`, or the first of a new
/// address taking the place of another in the limiter's table (a flood of invented
/// addresses behind a trusted proxy): the table is allocated once, when the limit first
/// counts a key.
#[test]
fn rate_checked_requests_allocate_nothing_even_from_new_addresses() {
    use mcp_engine::http::{IpNet, Limits, Principal, Rate, Verdict};
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "calc", "arguments": calc_arguments(), "_meta": mcp_tests::modern_meta()}});
    let forwarded = |addr: &str| {
        let raw = http_post(&call, "calc");
        let at = raw.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
        [&raw[..at], format!("X-Forwarded-For: {addr}\r\n").as_bytes(), &raw[at..]].concat()
    };
    let mut failures = Vec::new();
    // Allowed (new addresses each time) and refused (one address, over its rate).
    for (label, count, fresh, status) in
        [("new addresses", 100_000, true, "200"), ("over the rate", 1, false, "429")]
    {
        let mut http =
            HttpConfig::new(AllowedOrigins::List(vec!["http://localhost:3000".into()]), Authorization::Host);
        http.limits(
            Limits::default().calls(Some(Rate::new(count, std::time::Duration::from_secs(60)))).max_keys(64),
        );
        http.trusted_proxies(
            mcp_engine::http::ForwardedHeader::XForwardedFor,
            [IpNet::from("127.0.0.1".parse::<std::net::IpAddr>().unwrap())],
        );
        let mut h = Http { c: mcp_tests::wire::client_of(keyed(), http, rich_catalog(), Box::new(respond)) };
        h.c.conn = h.c.e.open(Instant::ZERO, Some("127.0.0.1:9".parse().unwrap())).unwrap();
        h.c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
        let raws: Vec<Vec<u8>> = (0..200)
            .map(|i| {
                forwarded(&if fresh { format!("10.0.{}.{}", i / 250, i % 250) } else { "10.9.9.9".into() })
            })
            .collect();
        let mut sink = Vec::with_capacity(1 << 16);
        for raw in &raws[..100] {
            h.round(raw, &mut sink);
        }
        let text = String::from_utf8_lossy(&sink).into_owned();
        assert!(text.starts_with(&format!("HTTP/1.1 {status}")), "{label}: {text}");
        let info = allocation_counter::measure(|| {
            for raw in &raws[100..120] {
                h.round(raw, &mut sink);
            }
        });
        let text = String::from_utf8_lossy(&sink).into_owned();
        assert!(text.starts_with(&format!("HTTP/1.1 {status}")), "{label}: {text}");
        if info.count_total != 0 {
            failures.push(format!("{label}: {} allocations for 20 requests ({info:?})", info.count_total));
        }
    }
    assert!(failures.is_empty(), "rate-checked requests:\n{}", failures.join("\n"));
}

/// A session-bound POST (`2025-11-25`) inside the session `id`.
fn session_post(body: &Value, id: &str) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost:3000\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Mcp-Session-Id: {id}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[test]
fn http_session_requests_allocate_nothing() {
    session_requests_allocate_nothing(false);
}

/// With a session store, a request that changes nothing in its session asks nothing of
/// the store, and allocates nothing either.
#[test]
fn http_session_requests_with_a_session_store_allocate_nothing() {
    session_requests_allocate_nothing(true);
}

fn session_requests_allocate_nothing(store: bool) {
    let mut h = Http::with_store(store);
    let mut sink = Vec::with_capacity(1 << 16);
    let id = h.open_session(json!({}), &mut sink);
    let cases = [
        ("ping", json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}), "200"),
        ("tools/list", json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), "200"),
        (
            "tools/call with input validation",
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "calc", "arguments": calc_arguments()}}),
            "200",
        ),
        ("a notification", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), "202"),
    ];
    let mut failures = Vec::new();
    for (label, body, status) in cases {
        let raw = session_post(&body, &id);
        for _ in 0..3 {
            h.round(&raw, &mut sink);
        }
        let text = String::from_utf8_lossy(&sink).into_owned();
        assert!(text.starts_with(&format!("HTTP/1.1 {status}")), "{label}: {text}");
        assert!(!text.contains("\"error\""), "{label}: {text}");
        let info = allocation_counter::measure(|| {
            for _ in 0..20 {
                h.round(&raw, &mut sink);
            }
        });
        if info.count_total != 0 {
            failures.push(format!("{label}: {} allocations for 20 requests ({info:?})", info.count_total));
        }
    }
    assert_eq!(h.c.e.sessions(), 1);
    let saved = h.c.store.log.iter().filter(|l| l.starts_with("save ")).count();
    // Created, then `initialized` (the first notification of the cases); nothing since.
    assert_eq!(saved, 2 * usize::from(store), "{:?}", h.c.store.log);
    assert!(failures.is_empty(), "HTTP sessions (store {store}):\n{}", failures.join("\n"));
}

const SAMPLING: &str =
    r#"{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":10}"#;

/// A host that asks the client's model once (sampling) and answers once it has the
/// response: the input API of every revision.
fn asking(sample: &serde_json::value::RawValue) -> impl FnMut(Event<'_>) + '_ {
    move |ev| {
        if let Event::CallTool(call) = ev {
            if call.input_responses.is_empty() {
                let asks =
                    [mcp_engine::mrtr::InputRequest::raw("s", mcp_engine::mrtr::InputKind::Sampling, sample)];
                // With state: the engine keeps it in a buffer it reuses.
                call.input_required(&mcp_engine::mrtr::InputRequired::new(&asks).state(b"round 1")).unwrap();
            } else {
                assert_eq!(call.request_state, Some(&b"round 1"[..]));
                call.answer(&ToolOutput::new(&[Content::text("ok")])).unwrap();
            }
        }
    }
}

fn open_with_sampling() -> String {
    let mut s = request(
        0,
        "initialize",
        json!({ "protocolVersion": "2025-11-25", "capabilities": { "sampling": {} },
                "clientInfo": { "name": "t", "version": "1" } }),
    );
    s.push_str(&mcp_tests::notification("notifications/initialized", json!({})));
    s
}

fn sampled(id: u64) -> String {
    let result = json!({ "role": "assistant", "content": { "type": "text", "text": "4" }, "model": "m" });
    format!("{}\n", json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

/// Rounds that bring a session's replay buffer to its steady state: it grows with the
/// events of its streams (doubling, up to `HttpConfig::replay_buffer` bytes and 256
/// events) and is reused from then on; these rounds write more than 256 events.
const REPLAY_WARM_UP: usize = 300;

/// A tool call that asks its session-bound client for input (a server-to-client request
/// out, the client's response in, the call back to the host, its answer out) allocates
/// nothing in steady state, over stdio.
#[test]
fn a_round_trip_to_a_session_bound_client_allocates_nothing_over_stdio() {
    let sample = serde_json::value::RawValue::from_string(SAMPLING.into()).unwrap();
    let mut host = asking(&sample);
    let mut e = Engine::new(keyed(), rich_catalog());
    let mut out = Vec::new();
    let mut feed = |e: &mut Engine, input: &[u8], out: &mut Vec<u8>, sink: &mut [u8]| {
        pump_with(e, input, sink, &mut host, |bytes| out.extend_from_slice(bytes));
    };
    let mut sink = vec![0u8; 1 << 16];
    feed(&mut e, open_with_sampling().as_bytes(), &mut out, &mut sink);
    // The engine numbers its requests 1, 2, ...: round `i` is answered with id `i`.
    let round = |i: u64| format!("{}{}", request(i, "tools/call", json!({"name": "tool_007"})), sampled(i));
    let warm: String = (1..=3).map(round).collect();
    let measured: String = (4..=23).map(round).collect();
    out.clear();
    feed(&mut e, warm.as_bytes(), &mut out, &mut sink);
    let lines = mcp_tests::lines(&out);
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert_eq!(lines[0]["method"], "sampling/createMessage");
    assert_eq!(lines[1]["result"]["content"][0]["text"], "ok", "{lines:?}");
    out.clear();
    out.reserve(1 << 16);
    let info = allocation_counter::measure(|| feed(&mut e, measured.as_bytes(), &mut out, &mut sink));
    assert_eq!(mcp_tests::lines(&out).len(), 40, "every round answered");
    assert_eq!(info.count_total, 0, "20 round trips: {info:?}");
}

/// The same over Streamable HTTP: the call on one keep-alive connection (its SSE
/// response carries the request), the client's response POSTed on another.
#[test]
fn a_round_trip_to_a_session_bound_client_allocates_nothing_over_http() {
    let sample = serde_json::value::RawValue::from_string(SAMPLING.into()).unwrap();
    let mut h = Http::new();
    h.c.host = Box::new(asking(Box::leak(sample)));
    let mut sink = Vec::with_capacity(1 << 16);
    let id = h.open_session(json!({"sampling": {}}), &mut sink);
    let a = h.c.conn;
    let b = h.c.e.open(Instant::ZERO, None).unwrap();
    let rounds: Vec<(Vec<u8>, Vec<u8>)> = (1..=REPLAY_WARM_UP as u64 + 20)
        .map(|i| {
            let call =
                json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "tool_007"}});
            let response: Value = serde_json::from_str(&sampled(i)).unwrap();
            (session_post(&call, &id), session_post(&response, &id))
        })
        .collect();
    let run = |h: &mut Http, (call, response): &(Vec<u8>, Vec<u8>), sink: &mut Vec<u8>| {
        h.c.conn = a;
        h.round(call, sink);
        assert!(sink.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(sink));
        h.c.conn = b;
        h.round(response, sink);
        assert!(sink.starts_with(b"HTTP/1.1 202"), "{}", String::from_utf8_lossy(sink));
        h.c.conn = a;
        sink.clear();
        h.c.drain(sink);
        assert!(sink.windows(4).any(|w| w == b"\"ok\""), "{}", String::from_utf8_lossy(sink));
    };
    // Warm-up: the session's replay buffer grows with the events of the calls' streams
    // until it holds as many as it may.
    for r in &rounds[..REPLAY_WARM_UP] {
        run(&mut h, r, &mut sink);
    }
    let info = allocation_counter::measure(|| {
        for r in &rounds[REPLAY_WARM_UP..] {
            run(&mut h, r, &mut sink);
        }
    });
    assert_eq!(info.count_total, 0, "20 round trips: {info:?}");
}

/// A stdio engine with tasks on and a tool that may run as one (`slow`).
fn task_engine() -> Engine {
    let mut config = keyed();
    config.tasks(true);
    let catalog = Catalog::builder()
        .tool(Tool::new("slow").task_support(mcp_engine::TaskSupport::Optional))
        .build()
        .unwrap();
    let mut e = Engine::new(config, catalog);
    e.set_entropy(&[5; 32]);
    e
}

/// Polling tasks allocates nothing: `tasks/get` of a working task and of a completed one,
/// `tasks/update` of a task that asks for nothing, `tasks/cancel` of a finished one.
#[test]
fn polling_tasks_allocates_nothing() {
    let mut e = task_engine();
    let mut tickets = Vec::new();
    let mut host = |ev: Event<'_>| {
        if let Event::CallTool(mut call) = ev {
            tickets.push(call.start_task(&mcp_engine::TaskOptions::new()).unwrap());
        }
    };
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } }
    });
    let call = |id: u64| request(id, "tools/call", json!({ "name": "slow", "_meta": meta }));
    let mut out = Vec::new();
    let mut sink = vec![0u8; 1 << 16];
    pump_with(&mut e, format!("{}{}", call(1), call(2)).as_bytes(), &mut sink, &mut host, |b| {
        out.extend_from_slice(b)
    });
    let ids: Vec<String> =
        mcp_tests::lines(&out).iter().map(|v| v["result"]["taskId"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids.len(), 2, "two tasks");
    e.answer_tool(tickets[1], &ToolOutput::new(&[Content::text("done")])).unwrap();
    let polls: String = (0..50u64)
        .flat_map(|i| {
            let p = |m: &str, id: &str| {
                request(100 + i, m, json!({ "taskId": id, "inputResponses": {}, "_meta": meta }))
            };
            [
                p("tasks/get", &ids[0]),
                p("tasks/get", &ids[1]),
                p("tasks/update", &ids[0]),
                p("tasks/cancel", &ids[1]),
            ]
        })
        .collect();
    let mut written = 0;
    let mut warm = Vec::new();
    pump_with(&mut e, polls.as_bytes(), &mut sink, &mut respond, |b| warm.extend_from_slice(b));
    let answers = mcp_tests::lines(&warm);
    assert_eq!(answers.len(), 200);
    assert_eq!(answers[0]["result"]["status"], "working", "{}", answers[0]);
    assert_eq!(answers[1]["result"]["status"], "completed", "{}", answers[1]);
    assert_eq!(answers[2]["result"]["resultType"], "complete", "{}", answers[2]);
    assert_eq!(answers[3]["result"]["resultType"], "complete", "{}", answers[3]);
    let info = allocation_counter::measure(|| {
        written = pump(&mut e, polls.as_bytes(), &mut sink);
    });
    assert!(written > 200 * 100, "every poll was answered ({written} bytes)");
    assert_eq!(info.count_total, 0, "200 task requests: {info:?}");
}

/// A `2025-11-25` task's progress under the creating call's token (kept inline in the
/// task's record) allocates nothing in steady state, over stdio.
#[test]
fn a_2025_task_s_progress_allocates_nothing() {
    let mut e = task_engine();
    let mut tickets = Vec::new();
    let mut host = |ev: Event<'_>| {
        if let Event::CallTool(call) = ev {
            tickets.push(call.ticket);
        }
    };
    let call =
        request(1, "tools/call", json!({ "name": "slow", "task": {}, "_meta": { "progressToken": "p" } }));
    let mut out = Vec::new();
    let mut sink = vec![0u8; 1 << 16];
    pump_with(&mut e, (legacy_open("2025-11-25") + &call).as_bytes(), &mut sink, &mut host, |b| {
        out.extend_from_slice(b)
    });
    let t = tickets[0];
    assert!(t.is_task(), "{}", String::from_utf8_lossy(&out));
    let mut report = |e: &mut Engine, i: u32| {
        e.notify_progress(t, f64::from(i), Some(1000.0), Some("working")).unwrap();
        let mut n = 0;
        loop {
            let k = e.poll_transmit(&mut sink);
            if k == 0 {
                return n;
            }
            n += k;
        }
    };
    let warm = report(&mut e, 1);
    assert!(warm > 0, "a notification was written");
    let mut written = 0;
    let info = allocation_counter::measure(|| {
        for i in 2..102 {
            written += report(&mut e, i);
        }
    });
    assert!(written >= 100 * warm, "every report was sent ({written} bytes)");
    assert_eq!(info.count_total, 0, "100 progress notifications: {info:?}");
}

/// A request the host sends its session-bound client outside any request
/// (`Engine::ask_client`: the request out, the client's response in, the reply handed to
/// the host) allocates nothing in steady state, over stdio.
#[test]
fn an_ask_outside_any_request_allocates_nothing_over_stdio() {
    let sample = serde_json::value::RawValue::from_string(SAMPLING.into()).unwrap();
    let request = mcp_engine::mrtr::InputRequest::raw("s", mcp_engine::mrtr::InputKind::Sampling, &sample);
    let replies = std::cell::Cell::new(0usize);
    let mut host = |ev: Event<'_>| {
        if let Event::ClientReply(r) = ev {
            let raw = r.result.map(|v| v.raw()).unwrap_or_else(|e| e.raw());
            assert!(raw.contains("\"model\""), "{raw}");
            replies.set(replies.get() + 1);
        }
    };
    let mut e = Engine::new(keyed(), rich_catalog());
    let mut out = Vec::with_capacity(1 << 16);
    let mut sink = vec![0u8; 1 << 16];
    pump_with(&mut e, open_with_sampling().as_bytes(), &mut sink, &mut host, |b| out.extend_from_slice(b));
    // The engine numbers its requests 1, 2, ...: ask `i` is answered with id `i`.
    let responses: Vec<String> = (1..=23).map(sampled).collect();
    let mut round = |e: &mut Engine, i: usize, out: &mut Vec<u8>| {
        let ask = e.ask_client(&request).unwrap();
        assert_eq!(ask.request_id(), i as u64 + 1);
        pump_with(e, responses[i].as_bytes(), &mut sink, &mut host, |b| out.extend_from_slice(b));
    };
    out.clear();
    for i in 0..3 {
        round(&mut e, i, &mut out);
    }
    let lines = mcp_tests::lines(&out);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["method"], "sampling/createMessage");
    out.clear();
    let info = allocation_counter::measure(|| {
        for i in 3..23 {
            round(&mut e, i, &mut out);
        }
    });
    assert_eq!(mcp_tests::lines(&out).len(), 20, "every ask sent");
    assert_eq!(replies.get(), 23, "every reply heard");
    assert_eq!(info.count_total, 0, "20 asks: {info:?}");
}

/// The same over Streamable HTTP: the request on the session's standalone `GET` stream
/// (an event with an id, kept for replay), the client's response POSTed on a keep-alive
/// connection (`202`), the reply handed to the host.
#[test]
fn an_ask_outside_any_request_allocates_nothing_over_http() {
    let sample = serde_json::value::RawValue::from_string(SAMPLING.into()).unwrap();
    let request = mcp_engine::mrtr::InputRequest::raw("s", mcp_engine::mrtr::InputKind::Sampling, &sample);
    let replies = std::rc::Rc::new(std::cell::Cell::new(0usize));
    let mut h = Http::new();
    let heard = replies.clone();
    h.c.host = Box::new(move |ev| {
        if let Event::ClientReply(r) = ev {
            assert!(r.result.is_ok());
            heard.set(heard.get() + 1);
        }
    });
    let mut sink = Vec::with_capacity(1 << 16);
    let id = h.open_session(json!({"sampling": {}}), &mut sink);
    let posts = h.c.conn;
    let stream = h.c.e.open(Instant::ZERO, None).unwrap();
    h.c.conn = stream;
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: localhost:3000\r\nAccept: text/event-stream\r\nMcp-Session-Id: {id}\r\n\r\n"
    );
    h.round(get.as_bytes(), &mut sink);
    assert!(sink.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&sink));
    let responses: Vec<Vec<u8>> = (1..=REPLAY_WARM_UP as u64 + 20)
        .map(|i| session_post(&serde_json::from_str(&sampled(i)).unwrap(), &id))
        .collect();
    let run = |h: &mut Http, i: usize, sink: &mut Vec<u8>| {
        let ask = h.c.e.ask_client(&id, &request).unwrap();
        assert_eq!(ask.request_id(), i as u64 + 1);
        h.c.conn = stream;
        sink.clear();
        h.c.drain(sink);
        assert!(sink.windows(4).any(|w| w == b"id: "), "{}", String::from_utf8_lossy(sink));
        h.c.conn = posts;
        h.round(&responses[i], sink);
        assert!(sink.starts_with(b"HTTP/1.1 202"), "{}", String::from_utf8_lossy(sink));
    };
    // Warm-up: the pooled output buffers circulate between the stream's connection and
    // the POSTs' until each has grown to the size it serves, and the session's replay
    // buffer grows with the stream's events until it holds as many as it may.
    for i in 0..REPLAY_WARM_UP {
        run(&mut h, i, &mut sink);
    }
    let info = allocation_counter::measure(|| {
        for i in REPLAY_WARM_UP..REPLAY_WARM_UP + 20 {
            run(&mut h, i, &mut sink);
        }
    });
    assert_eq!(replies.get(), REPLAY_WARM_UP + 20, "every reply heard");
    assert_eq!(info.count_total, 0, "20 asks: {info:?}");
}

/// A request naming a session this engine never issued (a well-formed id sealed under
/// the same key by another engine), a forged id, or a deleted session's id is answered
/// `404` without an allocation.
#[test]
fn a_request_with_an_unknown_or_forged_session_id_allocates_nothing() {
    let mut sink = Vec::with_capacity(1 << 16);
    // Another engine with the same key (and other entropy) issues an id unknown here.
    let mut other = Http::new();
    other.c.e.set_entropy(&[8; 32]);
    let unknown = {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let mut open = session_post(&init, "x");
        let at = open.windows(16).position(|w| w == b"Mcp-Session-Id: ").unwrap();
        open.drain(at..at + "Mcp-Session-Id: x\r\n".len());
        other.round(&open, &mut sink);
        let text = String::from_utf8_lossy(&sink).into_owned();
        text.lines().find_map(|l| l.strip_prefix("mcp-session-id: ")).unwrap().trim().to_owned()
    };
    let mut h = Http::new();
    let live = h.open_session(json!({}), &mut sink);
    assert_ne!(live, unknown);
    let mut forged = live.clone().into_bytes();
    forged[10] = if forged[10] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let mut failures = Vec::new();
    for (label, id) in [("never issued here", unknown.as_str()), ("forged", forged.as_str())] {
        let raw = session_post(&ping, id);
        for _ in 0..3 {
            h.round(&raw, &mut sink);
        }
        let text = String::from_utf8_lossy(&sink).into_owned();
        assert!(text.starts_with("HTTP/1.1 404"), "{label}: {text}");
        assert!(text.contains("-32001"), "{label}: {text}");
        let info = allocation_counter::measure(|| {
            for _ in 0..20 {
                h.round(&raw, &mut sink);
            }
        });
        if info.count_total != 0 {
            failures.push(format!("{label}: {} allocations for 20 requests ({info:?})", info.count_total));
        }
    }
    assert_eq!(h.c.e.sessions(), 1, "no session was created");
    assert!(failures.is_empty(), "404s:\n{}", failures.join("\n"));
}
