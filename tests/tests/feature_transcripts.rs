//! The transcripts of `docs/features.md`, captured from the engine, and the facts the doc
//! states about them, asserted so that the doc cannot drift silently.
//!
//! Print them with
//! `cargo test -p mcp-tests --test feature_transcripts -- --nocapture --test-threads=1`;
//! each test fails if the doc does not show its transcript verbatim.
//! Lines are `C:` (client to server), `S:` (server to client) and `H:` (what the host
//! called on the engine, or the event it polled, with the result). In client lines the
//! `_meta` members `"io.modelcontextprotocol/protocolVersion":"2026-07-28",
//! "io.modelcontextprotocol/clientCapabilities":{}` are written `…`; other shortenings
//! are said where they happen.

use mcp_engine::Commands;
use std::time::Duration;

use mcp_engine::error::{AnswerError, NotifyError};
use mcp_engine::event::CompletionRef;
use mcp_engine::http::{AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::mrtr::{InputRequest, InputRequired};
use mcp_engine::subs::{CatalogChange, ReplaceError};
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, LogLevel, Prompt, PromptArgument, Resource,
    ResourceContents, ResourceTemplate, Ticket, Tool, ToolOutput,
};
use mcp_tests::legacy_open;
use mcp_tests::spec::{Rev, assert_valid};
use serde_json::{Value, json};

/// The `_meta` members of a 2026-07-28 request whose client declares no capabilities.
const META: &str = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}"#;
const SUB_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A 2026-07-28 request: `params` are object members (may be empty), `extra` is appended
/// to the `_meta` members (starting with a comma).
fn req(id: &str, method: &str, params: &str, extra: &str) -> String {
    req_meta(id, method, params, &format!("{META}{extra}"))
}

/// A request whose `_meta` members are exactly `meta`.
fn req_meta(id: &str, method: &str, params: &str, meta: &str) -> String {
    let sep = if params.is_empty() { "" } else { "," };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}{sep}"_meta":{{{meta}}}}}}}"#
    )
}

/// A request without `_meta` (session-bound streams).
fn bare(id: &str, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}}}}}"#)
}

fn notif(method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{{params}}}}}"#)
}

/// Settings shared by every transcript: no `serverInfo` in result `_meta`, to keep lines
/// short.
fn config() -> Config {
    let mut c = Config::new("demo", "1.0");
    c.server_info_in_meta(false);
    c
}

// ------------------------------------------------------------------------ recording

/// One transcript.
struct Tx {
    name: &'static str,
    lines: Vec<String>,
    /// Text replaced in printed lines (long values shortened).
    short: Vec<(String, String)>,
}

impl Tx {
    fn new(name: &'static str) -> Self {
        Self { name, lines: Vec::new(), short: Vec::new() }
    }

    fn shorten(&mut self, from: impl Into<String>, to: impl Into<String>) {
        self.short.push((from.into(), to.into()));
    }

    fn push(&mut self, prefix: &str, text: &str) {
        let mut t = text.to_owned();
        for (from, to) in &self.short {
            t = t.replace(from.as_str(), to);
        }
        let line = format!("{prefix} {t}");
        self.lines.push(line.trim_end().to_owned());
    }

    fn client(&mut self, text: &str) {
        let t = text.trim_end_matches('\n').replace(META, "…");
        self.push("C:", &t);
    }

    fn host(&mut self, text: impl AsRef<str>) {
        self.push("H:", text.as_ref());
    }

    /// Records stdio output; returns its frames.
    fn server(&mut self, out: &[u8]) -> Vec<Value> {
        let text = std::str::from_utf8(out).unwrap();
        assert!(text.is_empty() || text.ends_with('\n'), "ends mid-frame: {text:?}");
        text.lines()
            .map(|l| {
                self.push("S:", l);
                serde_json::from_str(l).unwrap()
            })
            .collect()
    }
}

/// The doc the transcripts are pasted into.
const DOC: &str = include_str!("../../docs/features.md");

impl Drop for Tx {
    /// Prints the transcript, then checks that the doc shows it verbatim. A transcript
    /// named "" is neither printed nor checked (it backs a statement of the doc only).
    fn drop(&mut self) {
        if self.name.is_empty() || std::thread::panicking() {
            return;
        }
        let text = self.lines.join("\n");
        println!("----- {} -----\n{text}\n", self.name);
        assert!(
            DOC.contains(&format!("```text\n{text}\n```")),
            "docs/features.md does not show the transcript \"{}\" as the engine writes it now",
            self.name
        );
    }
}

fn describe(ev: &Event<'_>) -> String {
    match ev {
        Event::CallTool(c) => format!(
            "poll_event() -> Event::CallTool {{ ticket: {:?}, tool: {:?}, arguments: {} }}",
            c.ticket,
            c.tool.name,
            c.arguments.raw()
        ),
        Event::Complete(c) => {
            let reference = match c.reference {
                CompletionRef::Prompt(p) => format!("Prompt({:?})", p.name),
                CompletionRef::Template(t) => format!("Template({:?})", t.uri_template),
                _ => "?".into(),
            };
            format!(
                "poll_event() -> Event::Complete {{ reference: {reference}, argument: {:?}, value: {:?}, context: {} }}",
                c.argument,
                c.value,
                c.context.raw()
            )
        }
        Event::Cancelled(t) => format!("poll_event() -> Event::Cancelled({t:?})"),
        other => format!("poll_event() -> {other:?}"),
    }
}

/// A stdio engine and its transcript.
struct Stdio {
    e: Engine,
    tx: Tx,
}

impl Stdio {
    fn new(name: &'static str, config: Config, catalog: Catalog) -> Self {
        Self { e: Engine::new(config, catalog), tx: Tx::new(name) }
    }

    /// Sends one line; `host` gets each event; returns the frames written.
    fn send(&mut self, line: &str, mut host: impl FnMut(Event<'_>, &mut Tx)) -> Vec<Value> {
        self.tx.client(line);
        let mut input = line.to_owned();
        input.push('\n');
        let mut fed = 0;
        while fed < input.len() {
            fed += self.e.handle_input(Instant::ZERO, &input.as_bytes()[fed..]);
            while let Some(ev) = self.e.poll_event() {
                host(ev, &mut self.tx);
            }
        }
        self.flush()
    }

    /// Sends lines without recording them or their answers; returns the frames.
    fn quiet(&mut self, input: &str) -> Vec<Value> {
        let mut fed = 0;
        while fed < input.len() {
            fed += self.e.handle_input(Instant::ZERO, &input.as_bytes()[fed..]);
            while self.e.poll_event().is_some() {}
        }
        let out = self.e.pending_output().to_vec();
        self.e.consume_output(out.len());
        mcp_tests::lines(&out)
    }

    /// Records and returns the output written so far.
    fn flush(&mut self) -> Vec<Value> {
        let out = self.e.pending_output().to_vec();
        self.e.consume_output(out.len());
        self.tx.server(&out)
    }
}

/// Runs a command on the engine, records it with its result, then the output it wrote.
macro_rules! act {
    ($s:expr, |$e:ident| $body:expr) => {{
        let r = {
            let $e = &mut $s.e;
            $body
        };
        $s.tx.host(format!("{} -> {:?}", stringify!($body), r));
        let frames = $s.flush();
        (r, frames)
    }};
}

/// An HTTP engine (any origin, everyone authorized) and its transcript.
struct Http {
    e: HttpEngine,
    tx: Tx,
}

impl Http {
    fn new(name: &'static str, config: Config, catalog: Catalog) -> Self {
        let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
        Self { e: HttpEngine::new(config, http, catalog), tx: Tx::new(name) }
    }

    fn open(&mut self) -> ConnId {
        self.e.open(Instant::ZERO, None).unwrap()
    }

    /// POSTs `body` on `conn`; `host` gets each MCP event; returns the raw output.
    fn post(&mut self, conn: ConnId, body: &str, mut host: impl FnMut(Event<'_>, &mut Tx)) -> String {
        let v: Value = serde_json::from_str(body).unwrap();
        let mut head = String::from("POST /mcp HTTP/1.1\r\nHost: localhost\r\n");
        head.push_str("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n");
        head.push_str("MCP-Protocol-Version: 2026-07-28\r\n");
        head.push_str(&format!("Mcp-Method: {}\r\n", v["method"].as_str().unwrap()));
        if let Some(name) = v["params"]["name"].as_str() {
            head.push_str(&format!("Mcp-Name: {name}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        for l in head.strip_suffix("\r\n").unwrap().split("\r\n") {
            self.tx.client(l);
        }
        self.tx.client(body);
        let raw = head + body;
        assert_eq!(self.e.handle_input(Instant::ZERO, conn, raw.as_bytes()), raw.len());
        while let Some(ev) = self.e.poll_event() {
            if let HttpEvent::Mcp(ev) = ev {
                host(ev, &mut self.tx);
            }
        }
        self.flush(conn)
    }

    /// Records and returns the raw output of `conn` so far.
    fn flush(&mut self, conn: ConnId) -> String {
        let out = String::from_utf8(self.e.pending_output(conn).to_vec()).unwrap();
        self.e.consume_output(conn, out.len());
        if !out.is_empty() {
            for l in out.lines() {
                self.tx.push("S:", l);
            }
        }
        out
    }
}

/// The JSON messages of the SSE events in a raw chunked response.
fn sse(raw: &str) -> Vec<Value> {
    raw.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect()
}

fn lower_head(raw: &str) -> String {
    raw.split("\r\n\r\n").next().unwrap().to_ascii_lowercase()
}

// ------------------------------------------------------------------------ 1. progress

#[test]
fn progress_over_stdio() {
    let catalog = Catalog::builder().tool(Tool::new("export")).build().unwrap();
    let mut s = Stdio::new("progress (stdio)", config(), catalog);
    let mut ticket = None;
    let out = s.send(&req("1", "tools/call", r#""name":"export""#, r#","progressToken":"p-1""#), |ev, tx| {
        tx.host(describe(&ev) + "  (ticket kept)");
        ticket = Some(ev.ticket());
    });
    assert!(out.is_empty());
    let t = ticket.unwrap();

    let (r, out) = act!(s, |engine| engine.notify_progress(t, 1.0, Some(3.0), Some("tables")));
    assert_eq!(r, Ok(()));
    assert_eq!(
        out,
        [json!({ "jsonrpc": "2.0", "method": "notifications/progress",
                 "params": { "progressToken": "p-1", "progress": 1, "total": 3, "message": "tables" } })]
    );
    assert_valid(Rev::V2026_07_28, "ProgressNotification", &out[0]);
    let (r, out) = act!(s, |engine| engine.notify_progress(t, 2.0, Some(3.0), None));
    assert_eq!(r, Ok(()));
    assert_eq!(out[0]["params"], json!({ "progressToken": "p-1", "progress": 2, "total": 3 }));
    let (r, out) = act!(s, |engine| engine.notify_progress(t, 2.0, Some(3.0), None));
    assert_eq!(r, Err(NotifyError::NotIncreasing));
    assert!(out.is_empty());
    let (r, out) = act!(s, |engine| engine.answer_tool(t, &ToolOutput::new(&[Content::text("3 tables")])));
    assert_eq!(r, Ok(()));
    assert_eq!(out[0]["id"], 1);
    assert_eq!(out[0]["result"]["content"][0]["text"], "3 tables");
    let (r, out) = act!(s, |engine| engine.notify_progress(t, 3.0, Some(3.0), None));
    assert_eq!(r, Err(NotifyError::UnknownTicket));
    assert!(out.is_empty(), "nothing after the answer");

    // Without a progress token the client asked for none.
    let out = s.send(&req("2", "tools/call", r#""name":"export""#, ""), |ev, tx| {
        tx.host(describe(&ev));
        let Event::CallTool(mut call) = ev else { panic!() };
        let r = call.progress(1.0, None, None);
        tx.host(format!("call.progress(1.0, None, None) -> {r:?}"));
        assert_eq!(r, Err(NotifyError::NoProgressToken));
        let r = call.answer(&ToolOutput::new(&[Content::text("done")]));
        tx.host(format!("call.answer(&ToolOutput::new(&[Content::text(\"done\")])) -> {r:?}"));
    });
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], 2);
}

#[test]
fn progress_over_http() {
    let catalog = Catalog::builder().tool(Tool::new("export")).build().unwrap();
    let mut h = Http::new("progress (HTTP)", config(), catalog);
    let conn = h.open();
    let raw =
        h.post(conn, &req("1", "tools/call", r#""name":"export""#, r#","progressToken":7"#), |ev, tx| {
            tx.host(describe(&ev));
            let Event::CallTool(mut call) = ev else { panic!() };
            let r = call.progress(1.0, Some(2.0), Some("first half"));
            tx.host(format!("call.progress(1.0, Some(2.0), Some(\"first half\")) -> {r:?}"));
            let r = call.progress(2.0, Some(2.0), None);
            tx.host(format!("call.progress(2.0, Some(2.0), None) -> {r:?}"));
            let r = call.answer(&ToolOutput::new(&[Content::text("2 tables")]));
            tx.host(format!("call.answer(&ToolOutput::new(&[Content::text(\"2 tables\")])) -> {r:?}"));
        });
    let head = lower_head(&raw);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    let events = sse(&raw);
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[0]["params"]["progressToken"], 7);
    assert_eq!(events[1]["params"]["progress"], 2);
    assert_eq!(events[2]["id"], 1, "the result is the last event");
    assert!(raw.ends_with("0\r\n\r\n"), "the stream ends with the answer");

    // Without notifications the answer is plain JSON.
    let mut h = Http::new("", config(), Catalog::builder().tool(Tool::new("export")).build().unwrap());
    let c = h.open();
    let plain = h.post(c, &req("2", "tools/call", r#""name":"export""#, ""), |ev, _| {
        let Event::CallTool(call) = ev else { panic!() };
        call.answer(&ToolOutput::new(&[Content::text("x")])).unwrap();
    });
    assert!(lower_head(&plain).contains("content-type: application/json"), "{plain}");
}

// ------------------------------------------------------------------------ 2. logging

fn logging_config() -> Config {
    let mut c = config();
    c.logging(true);
    c
}

#[test]
fn logging_per_request_level() {
    let catalog = Catalog::builder().tool(Tool::new("migrate")).build().unwrap();
    let mut s = Stdio::new("logging (2026-07-28)", logging_config(), catalog);
    let level = r#","io.modelcontextprotocol/logLevel":"warning""#;
    let out = s.send(&req("1", "tools/call", r#""name":"migrate""#, level), |ev, tx| {
        tx.host(describe(&ev));
        let Event::CallTool(mut call) = ev else { panic!() };
        let r = call.log(LogLevel::Info, Some("db"), "connecting");
        tx.host(format!("call.log(LogLevel::Info, Some(\"db\"), \"connecting\") -> {r:?}"));
        assert_eq!(r, Err(NotifyError::Filtered));
        let data = json!({ "table": "users", "skipped": 2 });
        let r = call.log(LogLevel::Warning, Some("db"), &data);
        tx.host(format!("call.log(LogLevel::Warning, Some(\"db\"), &json!({data})) -> {r:?}"));
        assert_eq!(r, Ok(()));
        let r = call.answer(&ToolOutput::new(&[Content::text("migrated")]));
        tx.host(format!("call.answer(&ToolOutput::new(&[Content::text(\"migrated\")])) -> {r:?}"));
    });
    assert_eq!(out.len(), 2);
    assert_eq!(
        out[0],
        json!({ "jsonrpc": "2.0", "method": "notifications/message",
                "params": { "level": "warning", "logger": "db", "data": { "table": "users", "skipped": 2 } } })
    );
    assert_valid(Rev::V2026_07_28, "LoggingMessageNotification", &out[0]);
    assert_eq!(out[1]["id"], 1);

    // No level asked: nothing is sent, whatever the level.
    let out = s.send(&req("2", "tools/call", r#""name":"migrate""#, ""), |ev, tx| {
        tx.host(describe(&ev));
        let Event::CallTool(mut call) = ev else { panic!() };
        let r = call.log(LogLevel::Emergency, None, "disk on fire");
        tx.host(format!("call.log(LogLevel::Emergency, None, \"disk on fire\") -> {r:?}"));
        assert_eq!(r, Err(NotifyError::Filtered));
        let _ = call.answer(&ToolOutput::new(&[]));
        tx.host("call.answer(&ToolOutput::new(&[])) -> Ok(())");
    });
    assert_eq!(out.len(), 1);

    // An unknown level refuses the request before the host sees it.
    let out = s.send(
        &req("3", "tools/call", r#""name":"migrate""#, r#","io.modelcontextprotocol/logLevel":"verbose""#),
        |_, _| panic!("no event"),
    );
    assert_eq!(out[0]["error"]["code"], -32602);
    assert_eq!(out[0]["id"], 3);
    // Over HTTP that refusal is status 400.
    let mut h =
        Http::new("", logging_config(), Catalog::builder().tool(Tool::new("migrate")).build().unwrap());
    let c = h.open();
    let bad =
        req("3", "tools/call", r#""name":"migrate""#, r#","io.modelcontextprotocol/logLevel":"verbose""#);
    let raw = h.post(c, &bad, |_, _| panic!("no event"));
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
}

#[test]
fn logging_legacy_set_level() {
    let catalog = Catalog::builder().tool(Tool::new("migrate")).build().unwrap();
    let mut s = Stdio::new("logging (2025-11-25, logging/setLevel)", logging_config(), catalog);
    let opened = s.quiet(&legacy_open("2025-11-25"));
    assert_eq!(opened[0]["result"]["capabilities"]["logging"], json!({}));
    s.tx.host("(initialize and notifications/initialized for 2025-11-25 exchanged, not shown)");
    let out = s.send(&bare("1", "logging/setLevel", r#""level":"info""#), |_, _| panic!("no event"));
    assert_eq!(out[0]["result"], json!({}));
    let out = s.send(&bare("2", "tools/call", r#""name":"migrate""#), |ev, tx| {
        tx.host(describe(&ev));
        let Event::CallTool(mut call) = ev else { panic!() };
        let r = call.log(LogLevel::Debug, None, "step");
        tx.host(format!("call.log(LogLevel::Debug, None, \"step\") -> {r:?}"));
        assert_eq!(r, Err(NotifyError::Filtered));
        let r = call.log(LogLevel::Info, None, "started");
        tx.host(format!("call.log(LogLevel::Info, None, \"started\") -> {r:?}"));
        assert_eq!(r, Ok(()));
        let _ = call.answer(&ToolOutput::new(&[]));
        tx.host("call.answer(&ToolOutput::new(&[])) -> Ok(())");
    });
    assert_eq!(out[0]["params"], json!({ "level": "info", "data": "started" }));
    assert_eq!(out[1]["id"], 2);
    let out = s.send(&bare("3", "logging/setLevel", r#""level":"loud""#), |_, _| panic!("no event"));
    assert_eq!(out[0]["error"]["code"], -32602);

    // With logging off: not advertised, setLevel unknown, every message filtered.
    let mut off = Engine::new(config(), Catalog::builder().tool(Tool::new("t")).build().unwrap());
    let mut input = legacy_open("2025-11-25");
    input.push_str(&bare("1", "logging/setLevel", r#""level":"debug""#));
    input.push('\n');
    off.handle_input(Instant::ZERO, input.as_bytes());
    let out = mcp_tests::lines(off.pending_output());
    assert!(out[0]["result"]["capabilities"].get("logging").is_none());
    assert_eq!(out[1]["error"]["code"], -32601);
}

/// A request the host sends its session-bound client outside any request, and the reply.
#[test]
fn asking_the_client_outside_any_request() {
    let catalog = Catalog::builder().tool(Tool::new("t")).build().unwrap();
    let mut s = Stdio::new("asking the client outside any request (2025-11-25)", config(), catalog);
    let init = mcp_tests::request(
        0,
        "initialize",
        json!({ "protocolVersion": "2025-11-25", "capabilities": { "roots": {} }, "clientInfo": { "name": "t", "version": "1" } }),
    ) + &mcp_tests::notification("notifications/initialized", json!({}));
    s.quiet(&init);
    s.tx.host(
        "(initialize with capabilities {\"roots\":{}} and notifications/initialized exchanged, not shown)",
    );
    let (r, out) = act!(s, |e| e.ask_client(&InputRequest::list_roots("roots")));
    let ask = r.unwrap();
    assert_eq!(out[0]["method"], "roots/list");
    let sampling =
        serde_json::value::RawValue::from_string(r#"{"messages":[],"maxTokens":5}"#.into()).unwrap();
    let sample = InputRequest::raw("s", mcp_engine::mrtr::InputKind::Sampling, &sampling);
    let (r, out) = act!(s, |e| e.ask_client(&sample));
    assert!(r.is_err() && out.is_empty());
    let reply = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"roots":[{{"uri":"file:///work"}}]}}}}"#,
        ask.request_id()
    );
    let out = s.send(&reply, |ev, tx| {
        tx.host(format!("poll_event() -> {ev:?}"));
        let Event::ClientReply(r) = ev else { panic!("{ev:?}") };
        let raw = r.result.map(|v| v.raw()).unwrap_or_default();
        tx.host(format!("reply.result -> Ok({raw})"));
        assert_eq!(r.ask, ask);
    });
    assert!(out.is_empty());
}

// ------------------------------------------------------------------------ 3. cancellation

#[test]
fn cancellation_over_stdio() {
    let catalog = Catalog::builder().tool(Tool::new("sleep")).build().unwrap();
    let mut s = Stdio::new("cancellation (stdio)", config(), catalog);
    let mut ticket = None;
    s.send(&req("5", "tools/call", r#""name":"sleep""#, r#","progressToken":5"#), |ev, tx| {
        tx.host(describe(&ev) + "  (ticket kept)");
        ticket = Some(ev.ticket());
    });
    let t = ticket.unwrap();
    let mut cancelled = None;
    let out = s.send(
        &notif("notifications/cancelled", r#""requestId":5,"reason":"user pressed stop""#),
        |ev, tx| {
            tx.host(describe(&ev));
            if let Event::Cancelled(c) = ev {
                cancelled = Some(c);
            }
        },
    );
    assert!(out.is_empty());
    assert_eq!(cancelled, Some(t), "the host learns which ticket");
    assert_eq!(s.e.in_flight(), 0);
    let (r, out) = act!(s, |engine| engine.notify_progress(t, 1.0, None, None));
    assert_eq!(r, Err(NotifyError::UnknownTicket));
    assert!(out.is_empty(), "no progress after the cancellation");
    let (r, out) = act!(s, |engine| engine.answer_tool(t, &ToolOutput::new(&[Content::text("late")])));
    assert_eq!(r, Err(AnswerError::UnknownTicket));
    assert!(out.is_empty(), "a late answer writes nothing");
}

#[test]
fn cancellation_over_http() {
    let catalog = Catalog::builder().tool(Tool::new("sleep")).build().unwrap();
    let mut h = Http::new("cancellation (HTTP)", config(), catalog);
    let conn = h.open();
    let mut ticket = None;
    let raw = h.post(conn, &req("5", "tools/call", r#""name":"sleep""#, ""), |ev, tx| {
        tx.host(describe(&ev) + "  (ticket kept)");
        ticket = Some(ev.ticket());
    });
    assert!(raw.is_empty());
    let t = ticket.unwrap();
    h.e.handle_closed(Instant::ZERO, conn);
    h.tx.host("engine.handle_closed(now, conn)  (the client closed the connection)");
    let mut cancelled = None;
    while let Some(ev) = h.e.poll_event() {
        if let HttpEvent::Mcp(ev) = ev {
            h.tx.host(describe(&ev));
            cancelled = Some(ev.ticket());
        }
    }
    assert_eq!(cancelled, Some(t));
    let r = h.e.answer_tool(t, &ToolOutput::new(&[Content::text("late")]));
    h.tx.host(format!("engine.answer_tool(t, &ToolOutput::new(&[Content::text(\"late\")])) -> {r:?}"));
    assert_eq!(r, Err(AnswerError::UnknownTicket));
    assert_eq!(h.e.in_flight(), 0);

    // notifications/cancelled over HTTP is accepted (202) and does nothing.
    let mut h = Http::new("", config(), Catalog::builder().tool(Tool::new("sleep")).build().unwrap());
    let c2 = h.open();
    let mut ticket = None;
    h.post(c2, &req("6", "tools/call", r#""name":"sleep""#, ""), |ev, _| ticket = Some(ev.ticket()));
    let c3 = h.open();
    let raw = h.post(c3, &notif("notifications/cancelled", r#""requestId":6"#), |_, _| panic!("no event"));
    assert!(raw.starts_with("HTTP/1.1 202"), "{raw}");
    assert_eq!(h.e.in_flight(), 1, "still running");
    h.e.answer_tool(ticket.unwrap(), &ToolOutput::new(&[])).unwrap();
}

// ------------------------------------------------------------------------ 4. completion

#[test]
fn completion() {
    let catalog = || {
        Catalog::builder()
            .prompt(
                Prompt::new("scaffold")
                    .argument(PromptArgument::required("language"))
                    .argument(PromptArgument::required("framework")),
            )
            .template(ResourceTemplate::new("db://rows/{id}", "rows"))
            .build()
            .unwrap()
    };
    let mut cfg = config();
    cfg.completions(true);
    let mut s = Stdio::new("completion", cfg, catalog());
    let out = s.send(
        &req(
            "1",
            "completion/complete",
            r#""ref":{"type":"ref/prompt","name":"scaffold"},"argument":{"name":"framework","value":"f"},"context":{"arguments":{"language":"python"}}"#,
            "",
        ),
        |ev, tx| {
            tx.host(describe(&ev));
            let Event::Complete(c) = ev else { panic!() };
            assert_eq!(c.context.raw(), r#"{"language":"python"}"#);
            let r = c.answer(&["flask", "fastapi", "flask"], Some(1), false);
            tx.host(format!("complete.answer(&[\"flask\", \"fastapi\", \"flask\"], Some(1), false) -> {r:?}"));
        },
    );
    assert_eq!(
        out[0]["result"]["completion"],
        json!({ "values": ["flask", "fastapi"], "total": 2, "hasMore": false })
    );
    assert_valid(Rev::V2026_07_28, "CompleteResult", &out[0]["result"]);

    // More than 100: the first 100 are sent, total and hasMore say there are more.
    let many: Vec<String> = (0..150).map(|i| i.to_string()).collect();
    let sent: Vec<&str> = many[..100].iter().map(String::as_str).collect();
    s.tx.shorten(serde_json::to_string(&sent).unwrap(), r#"["0","1","2",…,"99"]"#);
    let out = s.send(
        &req(
            "2",
            "completion/complete",
            r#""ref":{"type":"ref/resource","uri":"db://rows/{id}"},"argument":{"name":"id","value":""}"#,
            "",
        ),
        |ev, tx| {
            tx.host(describe(&ev));
            let Event::Complete(c) = ev else { panic!() };
            let values: Vec<&str> = many.iter().map(String::as_str).collect();
            let r = c.answer(&values, None, false);
            tx.host(format!("complete.answer(&[\"0\", \"1\", …, \"149\"], None, false) -> {r:?}"));
        },
    );
    let completion = &out[0]["result"]["completion"];
    assert_eq!(completion["values"].as_array().unwrap().len(), 100, "(values shortened in the doc)");
    assert_eq!(completion["values"][99], "99");
    assert_eq!(completion["total"], 150);
    assert_eq!(completion["hasMore"], true);

    // Off by default: not served.
    let mut off = Engine::new(config(), catalog());
    let line = req(
        "1",
        "completion/complete",
        r#""ref":{"type":"ref/prompt","name":"scaffold"},"argument":{"name":"language","value":""}"#,
        "",
    ) + "\n";
    off.handle_input(Instant::ZERO, line.as_bytes());
    assert_eq!(mcp_tests::lines(off.pending_output())[0]["error"]["code"], -32601);
}

// ------------------------------------------------------------------------ 5. subscriptions

fn subs_catalog(extra_tool: bool, prompts: bool) -> Catalog {
    let mut b = Catalog::builder().tool(Tool::new("a")).resource(Resource::new("file:///watched", "watched"));
    if extra_tool {
        b = b.tool(Tool::new("b"));
    }
    if prompts {
        b = b.prompt(Prompt::new("p"));
    }
    b.build().unwrap()
}

fn subs_config() -> Config {
    let mut c = config();
    c.list_changed(true).resource_subscriptions(true);
    c
}

#[test]
fn subscriptions_over_stdio() {
    let mut s = Stdio::new("subscriptions (stdio)", subs_config(), subs_catalog(false, true));
    let out = s.send(
        &req(
            r#""s-1""#,
            "subscriptions/listen",
            r#""notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///watched","file:///unknown"]}"#,
            "",
        ),
        |_, _| panic!("no event"),
    );
    assert_eq!(out[0]["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(out[0]["params"]["_meta"][SUB_ID], "s-1");
    assert_eq!(
        out[0]["params"]["notifications"],
        json!({ "toolsListChanged": true, "resourceSubscriptions": ["file:///watched"] })
    );
    assert_valid(Rev::V2026_07_28, "SubscriptionsAcknowledgedNotification", &out[0]);
    let out = s.send(
        &req(r#""s-2""#, "subscriptions/listen", r#""notifications":{"promptsListChanged":true}"#, ""),
        |_, _| panic!("no event"),
    );
    assert_eq!(out[0]["params"]["_meta"][SUB_ID], "s-2");
    let out = s.send(&notif("notifications/cancelled", r#""requestId":"s-2""#), |_, _| panic!("no event"));
    assert!(out.is_empty());
    let (n, _) = act!(s, |engine| engine.subscriptions());
    assert_eq!(n, 1);

    let with_tool_b = subs_catalog(true, true);
    let (r, out) = act!(s, |engine| engine.replace_catalog(with_tool_b));
    let change: CatalogChange = r.unwrap();
    assert!(change.tools && !change.resources && !change.prompts);
    assert_eq!(out.len(), 1, "only the subscription that asked for tools");
    assert_eq!(out[0]["method"], "notifications/tools/list_changed");
    assert_eq!(out[0]["params"]["_meta"][SUB_ID], "s-1");
    assert_valid(Rev::V2026_07_28, "ToolListChangedNotification", &out[0]);

    let (n, out) = act!(s, |engine| engine.notify_resource_updated("file:///watched/part-2"));
    assert_eq!(n, 1);
    assert_eq!(out[0]["params"]["uri"], "file:///watched/part-2");
    assert_valid(Rev::V2026_07_28, "ResourceUpdatedNotification", &out[0]);

    let without_prompts = subs_catalog(true, false);
    let (r, out) = act!(s, |engine| engine.replace_catalog(without_prompts));
    assert_eq!(r, Err(ReplaceError::CapabilitiesChanged));
    assert!(out.is_empty());
    assert_eq!(s.e.catalog_revision(), 1, "nothing changed");

    let (n, out) = act!(s, |engine| engine.end_subscriptions());
    assert_eq!(n, 1);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["id"], "s-1");
    assert_eq!(out[0]["result"], json!({ "resultType": "complete", "_meta": { SUB_ID: "s-1" } }));
    assert_valid(Rev::V2026_07_28, "SubscriptionsListenResultResponse", &out[0]);
    assert_eq!(out[1]["method"], "notifications/cancelled");
    assert_eq!(out[1]["params"]["requestId"], "s-1");
}

#[test]
fn subscriptions_legacy() {
    let mut s = Stdio::new(
        "subscriptions (2025-11-25, resources/subscribe)",
        subs_config(),
        subs_catalog(false, true),
    );
    let opened = s.quiet(&legacy_open("2025-11-25"));
    let caps = &opened[0]["result"]["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true);
    assert_eq!(caps["resources"]["subscribe"], true);
    s.tx.host("(initialize and notifications/initialized for 2025-11-25 exchanged, not shown)");
    let out =
        s.send(&bare("1", "resources/subscribe", r#""uri":"file:///watched""#), |_, _| panic!("no event"));
    assert_eq!(out[0]["result"], json!({}));
    let (n, out) = act!(s, |engine| engine.notify_resource_updated("file:///watched"));
    assert_eq!(n, 1);
    assert_eq!(
        out[0],
        json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated",
                              "params": { "uri": "file:///watched" } })
    );
    let with_tool_b = subs_catalog(true, true);
    let (r, out) = act!(s, |engine| engine.replace_catalog(with_tool_b));
    assert!(r.unwrap().tools);
    assert_eq!(out, [json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" })]);
}

#[test]
fn subscriptions_over_http() {
    let mut h = Http::new("subscriptions (HTTP)", subs_config(), subs_catalog(false, true));
    let conn = h.open();
    let raw = h.post(
        conn,
        &req("7", "subscriptions/listen", r#""notifications":{"toolsListChanged":true}"#, ""),
        |_, _| panic!("no event"),
    );
    let head = lower_head(&raw);
    assert!(head.starts_with("http/1.1 200") && head.contains("content-type: text/event-stream"), "{head}");
    let msgs = sse(&raw);
    assert_eq!(msgs[0]["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(msgs[0]["params"]["_meta"][SUB_ID], 7);

    let r = h.e.replace_catalog(subs_catalog(true, true));
    h.tx.host(format!("engine.replace_catalog(with_tool_b) -> {r:?}"));
    let msgs = sse(&h.flush(conn));
    assert_eq!(msgs[0]["method"], "notifications/tools/list_changed");
    assert_eq!(msgs[0]["params"]["_meta"][SUB_ID], 7);

    let n = h.e.end_subscriptions();
    h.tx.host(format!("engine.end_subscriptions() -> {n}"));
    let tail = h.flush(conn);
    let msgs = sse(&tail);
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["result"]["resultType"], "complete");
    assert_eq!(msgs[0]["result"]["_meta"][SUB_ID], 7);
    assert!(tail.ends_with("0\r\n\r\n"), "the stream ends");
    assert!(!tail.contains("notifications/cancelled"), "HTTP ends a stream by closing it");

    // The client ends a subscription by closing its stream.
    let mut h = Http::new("", subs_config(), subs_catalog(false, true));
    let c = h.open();
    h.post(
        c,
        &req("8", "subscriptions/listen", r#""notifications":{"toolsListChanged":true}"#, ""),
        |_, _| (),
    );
    assert_eq!(h.e.subscriptions(), 1);
    h.e.handle_closed(Instant::ZERO, c);
    assert_eq!(h.e.subscriptions(), 0);
}

#[test]
fn slow_subscribers_are_dropped() {
    // stdio: past max_buffered_output of unsent output the subscription is ended.
    let mut cfg = subs_config();
    cfg.max_buffered_output(4096);
    let mut e = Engine::new(cfg, subs_catalog(false, true));
    let line = req(
        "1",
        "subscriptions/listen",
        r#""notifications":{"resourceSubscriptions":["file:///watched"]}"#,
        "",
    ) + "\n";
    e.handle_input(Instant::ZERO, line.as_bytes());
    for _ in 0..1000 {
        e.notify_resource_updated("file:///watched");
    }
    assert_eq!(e.subscriptions(), 0);
    let out = mcp_tests::lines(e.pending_output());
    let n = out.len();
    assert_eq!(out[n - 2]["result"]["_meta"][SUB_ID], 1, "ended with its graceful result");
    assert_eq!(out[n - 1]["method"], "notifications/cancelled");

    // HTTP: a connection holding 64 KiB unsent is dropped and closed.
    let mut e = HttpEngine::new(
        subs_config(),
        HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone),
        subs_catalog(false, true),
    );
    let c = e.open(Instant::ZERO, None).unwrap();
    let body = line.trim_end();
    let post = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    e.handle_input(Instant::ZERO, c, post.as_bytes());
    for _ in 0..5000 {
        e.notify_resource_updated("file:///watched");
    }
    assert_eq!(e.subscriptions(), 0);
    assert!(e.wants_close(c));
    assert!(e.pending_output(c).len() <= 64 * 1024);
}

// ------------------------------------------------------------------------ 6. multi-round-trip

const KEY: [u8; 32] = [7; 32];
const ELICIT: &str = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}"#;

fn mrtr_catalog() -> Catalog {
    let schema =
        json!({ "type": "object", "properties": { "env": { "type": "string" } }, "required": ["env"] });
    Catalog::builder().tool(Tool::new("deploy").input_schema(schema)).build().unwrap()
}

fn mrtr_config() -> Config {
    let mut c = config();
    c.request_state_key(KEY).request_state_ttl(Duration::from_secs(600));
    c
}

/// The host of the transcript: asks for a confirmation, then deploys.
fn deploy_host(ev: Event<'_>, tx: &mut Tx) {
    let Event::CallTool(call) = ev else { panic!() };
    let responses: Vec<&str> = call.input_responses.iter().map(|(k, _)| k).collect();
    let state = call.request_state.map(|s| String::from_utf8_lossy(s).into_owned());
    // Written out here: their `Debug` gives sizes only (it may end up in a log).
    let shown: Vec<String> =
        call.input_responses.iter().map(|(k, r)| format!("{k:?}: {}", r.raw())).collect();
    tx.host(format!(
        "poll_event() -> Event::CallTool {{ tool: {:?}, arguments: {}, input_responses: {{{}}}, request_state: {:?}, client: {:?} }}",
        call.tool.name,
        call.arguments.raw(),
        shown.join(", "),
        state,
        call.client
    ));
    let confirmed = call.input_responses.get("confirm").and_then(|r| r.accepted_content());
    match (call.request_state, confirmed) {
        (Some(b"deploy/v1"), Some(content)) => {
            assert_eq!(responses, ["confirm"], "the key not asked for is dropped");
            assert_eq!(content, r#"{"ok":true}"#);
            let r = call.answer(&ToolOutput::new(&[Content::text("deployed to staging")]));
            tx.host(format!(
                "call.answer(&ToolOutput::new(&[Content::text(\"deployed to staging\")])) -> {r:?}"
            ));
        }
        _ => {
            let schema = serde_json::value::to_raw_value(&json!({
                "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"]
            }))
            .unwrap();
            let asks = [InputRequest::elicit("confirm", "Deploy to staging?", &schema)];
            let r = call.input_required(&InputRequired::new(&asks).state(b"deploy/v1"));
            tx.host(format!(
                "call.input_required(&InputRequired::new(&[InputRequest::elicit(\"confirm\", \"Deploy to staging?\", &schema)]).state(b\"deploy/v1\")) -> {r:?}"
            ));
        }
    }
}

#[test]
fn multi_round_trip() {
    let mut s = Stdio::new("multi-round-trip request", mrtr_config(), mrtr_catalog());
    let args = r#""name":"deploy","arguments":{"env":"staging"}"#;
    let out = s.send(&req_meta("1", "tools/call", args, ELICIT), deploy_host);
    let result = &out[0]["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["confirm"],
        json!({ "method": "elicitation/create", "params": {
            "mode": "form", "message": "Deploy to staging?",
            "requestedSchema": { "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] } } })
    );
    assert_valid(Rev::V2026_07_28, "InputRequiredResult", result);
    let state = result["requestState"].as_str().unwrap().to_owned();
    assert!(state.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "base64url");
    let n = state.len();
    // Flip one character of the tag.
    let mut tampered = state.clone().into_bytes();
    tampered[n - 3] = if tampered[n - 3] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    // Shortened in the transcript: first 8 and last 4 characters.
    s.tx.shorten(state.clone(), format!("{}…{}", &state[..8], &state[n - 4..]));
    s.tx.shorten(tampered.clone(), format!("{}…{}", &tampered[..8], &tampered[n - 4..]));
    // Rewrite the first round's line, recorded before the state was known.
    let first = s.tx.lines.len() - 1;
    s.tx.lines[first] = s.tx.lines[first].replace(&state, &format!("{}…{}", &state[..8], &state[n - 4..]));

    let retry = |id: &str, state: &str, responses: &str| {
        req_meta(
            id,
            "tools/call",
            &format!(r#"{args},"inputResponses":{responses},"requestState":"{state}""#),
            ELICIT,
        )
    };
    let accept = r#"{"confirm":{"action":"accept","content":{"ok":true}},"unasked":{"action":"accept"}}"#;
    let out = s.send(&retry("2", &state, accept), deploy_host);
    assert_eq!(out[0]["result"]["resultType"], "complete");
    assert_eq!(out[0]["result"]["content"][0]["text"], "deployed to staging");

    let out =
        s.send(&retry("3", &tampered, accept), |_, _| panic!("a tampered state never reaches the host"));
    assert_eq!(out[0]["error"]["code"], -32602);
    let out = s.send(&retry("4", &state, r#"{"confirm":12345}"#), |_, _| panic!("refused before the host"));
    assert_eq!(out[0]["error"]["code"], -32602);
    assert!(out[0]["error"]["message"].as_str().unwrap().contains("inputResponses.confirm"), "{}", out[0]);

    // A client that cannot answer an elicitation.
    let out = s.send(&req("5", "tools/call", args, ""), deploy_host);
    assert_eq!(out[0]["error"]["code"], -32021);
    assert_eq!(out[0]["error"]["data"]["requiredCapabilities"], json!({ "elicitation": {} }));
}

#[test]
fn multi_round_trip_limits() {
    // The state expires after its ttl, measured on the Instants the engine is given.
    let mut e = Engine::new(mrtr_config(), mrtr_catalog());
    let mut tx = Tx::new("");
    let args = r#""name":"deploy","arguments":{"env":"staging"}"#;
    let send = |e: &mut Engine, tx: &mut Tx, now: Instant, line: String| {
        let line = line + "\n";
        e.handle_input(now, line.as_bytes());
        while let Some(ev) = e.poll_event() {
            deploy_host(ev, tx);
        }
        let out = mcp_tests::lines(e.pending_output());
        e.consume_output(e.pending_output().len());
        out
    };
    let out = send(&mut e, &mut tx, Instant::ZERO, req_meta("1", "tools/call", args, ELICIT));
    let state = out[0]["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = req_meta(
        "2",
        "tools/call",
        &format!(
            r#"{args},"inputResponses":{{"confirm":{{"action":"accept","content":{{"ok":true}}}}}},"requestState":"{state}""#
        ),
        ELICIT,
    );
    let late = Instant::ZERO + Duration::from_secs(601);
    let out = send(&mut e, &mut tx, late, retry);
    assert_eq!(out[0]["error"]["code"], -32602);
    assert!(out[0]["error"]["message"].as_str().unwrap().contains("expired"), "{}", out[0]);

    // Under a legacy revision the input is asked of the client directly, if it declared
    // the capability; this one did not: -32021, as under 2026-07-28.
    let mut e = Engine::new(mrtr_config(), mrtr_catalog());
    let mut input = legacy_open("2025-11-25");
    input.push_str(&bare("1", "tools/call", args));
    input.push('\n');
    e.handle_input(Instant::ZERO, input.as_bytes());
    let t: Ticket = e.poll_event().unwrap().ticket();
    let asks = [InputRequest::list_roots("r")];
    e.answer_input_required(t, &InputRequired::new(&asks)).unwrap();
    assert_eq!(e.in_flight(), 0);

    // Over HTTP, -32021 is status 400.
    let mut h = Http::new("", mrtr_config(), mrtr_catalog());
    let c = h.open();
    let raw = h.post(c, &req("1", "tools/call", args, ""), deploy_host);
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
    assert!(raw.contains("-32021"));
}

// ------------------------------------------------------------------------ 7. content

#[test]
fn content_types() {
    let weather = Tool::new("weather").output_schema(json!({
        "type": "object", "properties": { "celsius": { "type": "number" } }, "required": ["celsius"]
    }));
    let catalog = Catalog::builder().tool(Tool::new("gallery")).tool(weather).build().unwrap();
    let mut s = Stdio::new("content types", config(), catalog);
    let out = s.send(&req("1", "tools/call", r#""name":"gallery""#, ""), |ev, tx| {
        tx.host(describe(&ev));
        let Event::CallTool(call) = ev else { panic!() };
        let r = call.answer(&ToolOutput::new(&[
            Content::text("three files"),
            Content::image(b"\x89PNG", "image/png"),
            Content::audio(b"RIFF", "audio/wav"),
            Content::resource_link("file:///report.pdf", "report"),
            Content::embedded(ResourceContents::text("file:///notes.txt", Some("text/plain"), "hello")),
            Content::embedded(ResourceContents::blob("file:///logo.png", Some("image/png"), b"\x89PNG")),
        ]));
        tx.host(format!(
            "call.answer(&ToolOutput::new(&[\n    Content::text(\"three files\"),\n    Content::image(b\"\\x89PNG\", \"image/png\"),\n    Content::audio(b\"RIFF\", \"audio/wav\"),\n    Content::resource_link(\"file:///report.pdf\", \"report\"),\n    Content::embedded(ResourceContents::text(\"file:///notes.txt\", Some(\"text/plain\"), \"hello\")),\n    Content::embedded(ResourceContents::blob(\"file:///logo.png\", Some(\"image/png\"), b\"\\x89PNG\")),\n])) -> {r:?}"
        ));
    });
    let content = &out[0]["result"]["content"];
    let types: Vec<&str> = content.as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["text", "image", "audio", "resource_link", "resource", "resource"]);
    assert_eq!(content[1]["data"], "iVBORw==");
    assert_eq!(content[5]["resource"]["blob"], "iVBORw==");
    assert_valid(Rev::V2026_07_28, "CallToolResult", &out[0]["result"]);

    let out = s.send(&req("2", "tools/call", r#""name":"weather""#, ""), |ev, tx| {
        tx.host(describe(&ev));
        let Event::CallTool(call) = ev else { panic!() };
        let value = json!({ "celsius": 21.5 });
        let r = call.answer(&ToolOutput::new(&[Content::text("21.5 °C")]).structured(&value));
        tx.host(format!(
            "call.answer(&ToolOutput::new(&[Content::text(\"21.5 °C\")]).structured(&json!({value}))) -> {r:?}"
        ));
    });
    assert_eq!(out[0]["result"]["structuredContent"], json!({ "celsius": 21.5 }));
    assert!(out[0]["result"].get("isError").is_none());
    assert_valid(Rev::V2026_07_28, "CallToolResult", &out[0]["result"]);

    let out = s.send(&req("3", "tools/call", r#""name":"weather""#, ""), |ev, tx| {
        tx.host(describe(&ev));
        let Event::CallTool(call) = ev else { panic!() };
        let value = json!({ "fahrenheit": 70 });
        let r = call.answer(&ToolOutput::new(&[Content::text("70 °F")]).structured(&value));
        tx.host(format!(
            "call.answer(&ToolOutput::new(&[Content::text(\"70 °F\")]).structured(&json!({value}))) -> {r:?}"
        ));
    });
    assert_eq!(out[0]["result"]["isError"], true);
    assert!(out[0]["result"].get("structuredContent").is_none());
    assert_eq!(
        out[0]["result"]["content"][0]["text"],
        "Internal error: the tool's result does not match its output schema"
    );
}

// ------------------------------------------------------------------------ adapters

/// The tokio adapter's view of the multi-round-trip transcript, as the doc shows it.
mod tokio_view {
    use mcp_engine::mrtr::InputRequestBuf;
    use mcp_io_tokio::reply::{InputRequiredReply, ToolResult};
    use mcp_io_tokio::{Handler, ToolCall, ToolReply};
    use serde_json::json;

    pub(crate) struct Deploy;

    impl Handler for Deploy {
        async fn call_tool(&self, call: ToolCall) -> ToolResult {
            let confirmed = call.input.response("confirm").is_some();
            if confirmed && call.input.request_state() == Some(b"deploy/v1".as_slice()) {
                if let Some(publisher) = call.publisher() {
                    publisher.resource_updated("file:///deployments/staging");
                }
                return Ok(ToolReply::text("deployed to staging"));
            }
            let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } });
            let ask = InputRequestBuf::elicit("confirm", "Deploy to staging?", &schema);
            Ok(ToolReply::input_required(InputRequiredReply::new(vec![ask]).with_state(b"deploy/v1")))
        }
    }

    /// A publisher used outside any handler (compiled, not run).
    #[allow(dead_code)]
    pub(crate) async fn publish_from_outside(
        engine: mcp_engine::http::HttpEngine,
        listener: tokio::net::TcpListener,
        next: mcp_engine::Catalog,
    ) -> std::io::Result<()> {
        let server =
            mcp_io_tokio::HttpServer::new(engine, std::sync::Arc::new(Deploy), mcp_io_tokio::http::AllowAll);
        let publisher = server.publisher();
        tokio::spawn(async move {
            match publisher.replace_catalog(next).await {
                Ok(change) => println!("tools changed: {}", change.tools),
                Err(e) => eprintln!("not replaced: {e}"),
            }
            publisher.resource_updated("file:///deployments/staging");
            publisher.end_subscriptions();
        });
        server.serve(listener).await
    }
}

/// The mio adapter's view (compiled, not run): `after` publishes what events asked for.
#[allow(dead_code)]
fn mio_view(engine: Engine) -> std::io::Result<()> {
    let changed = std::cell::RefCell::new(Vec::<String>::new());
    let server = mcp_io_mio::StdioServer::stdio(engine)?;
    server.run_with(
        |event| {
            if let Event::CallTool(call) = event {
                changed.borrow_mut().push("file:///deployments/staging".to_owned());
                let _ = call.answer(&ToolOutput::new(&[Content::text("deployed")]));
            }
        },
        |engine| {
            for uri in changed.borrow_mut().drain(..) {
                engine.notify_resource_updated(&uri);
            }
        },
    )
}

#[tokio::test]
async fn tokio_adapter_round_trip_and_publisher() {
    use std::sync::Arc;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let catalog = Catalog::builder()
        .tool(Tool::new("deploy"))
        .resource(Resource::new("file:///deployments", "deployments"))
        .build()
        .unwrap();
    let mut cfg = mrtr_config();
    cfg.resource_subscriptions(true);
    let engine = Engine::new(cfg, catalog);
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server);
    let serving = tokio::spawn(mcp_io_tokio::stdio::serve(
        engine,
        Arc::new(tokio_view::Deploy),
        server_read,
        server_write,
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let mut send = async |line: String| client_write.write_all((line + "\n").as_bytes()).await.unwrap();
    let mut next =
        async || -> Value { serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap() };

    let listen = r#""notifications":{"resourceSubscriptions":["file:///deployments"]}"#;
    send(req("0", "subscriptions/listen", listen, "")).await;
    assert_eq!(next().await["method"], "notifications/subscriptions/acknowledged");
    send(req_meta("1", "tools/call", r#""name":"deploy""#, ELICIT)).await;
    let first = next().await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = format!(
        r#""name":"deploy","inputResponses":{{"confirm":{{"action":"accept","content":{{"ok":true}}}}}},"requestState":"{state}""#
    );
    send(req_meta("2", "tools/call", &retry, ELICIT)).await;
    let (a, b) = (next().await, next().await);
    let (update, result) = if a.get("id").is_some() { (b, a) } else { (a, b) };
    assert_eq!(result["result"]["content"][0]["text"], "deployed to staging", "{result}");
    assert_eq!(update["method"], "notifications/resources/updated");
    assert_eq!(update["params"]["uri"], "file:///deployments/staging");
    drop(client_write);
    serving.abort();
}

// ------------------------------------------------------------------------ 9. tasks

const TASKS: &str = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}"#;

/// The transcripts' engine with tasks on and one task tool, `build`; its entropy and wall
/// clock fixed (2026-12-01T08:00Z), so ids and times are the same on every run.
fn task_stdio(name: &'static str) -> Stdio {
    let mut c = config();
    c.tasks(true).task_ttl(Duration::from_secs(600)).task_poll_interval(Duration::from_secs(2));
    let catalog = Catalog::builder()
        .tool(Tool::new("build").task_support(mcp_engine::TaskSupport::Optional))
        .build()
        .unwrap();
    let mut s = Stdio::new(name, c, catalog);
    s.e.set_entropy(&[1; 32]);
    s.e.set_wall_clock(Instant::ZERO, mcp_engine::UnixTime::from_secs(1_796_112_000));
    s
}

#[test]
fn a_tasks_life() {
    let mut s = task_stdio("a task's life");
    s.tx.shorten(TASKS, "…tasks…");
    let mut task = None;
    let out = s.send(&req_meta("1", "tools/call", r#""name":"build""#, TASKS), |ev, tx| {
        let Event::CallTool(mut call) = ev else { panic!() };
        tx.host(format!(
            "poll_event() -> Event::CallTool {{ tool: {:?}, can_start_task: {} }}",
            call.tool.name, call.can_start_task
        ));
        let r = call.start_task(&mcp_engine::TaskOptions::new().message("queued"));
        tx.host(format!("call.start_task(&TaskOptions::new().message(\"queued\")) -> {r:?}"));
        task = r.ok();
    });
    let t = task.expect("a task");
    let id = out[0]["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(out[0]["result"]["resultType"], "task");
    let get = |rid: &str| req_meta(rid, "tasks/get", &format!(r#""taskId":"{id}""#), TASKS);
    let out = s.send(&get("2"), |_, _| panic!("answered by the engine"));
    assert_eq!(out[0]["result"]["status"], "working");

    let schema = serde_json::value::to_raw_value(
        &json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } }),
    )
    .unwrap();
    let asks = [InputRequest::elicit("approve", "Ship it?", &schema)];
    let r = s.e.answer_input_required(t, &InputRequired::new(&asks));
    s.tx.host(format!(
        "engine.answer_input_required(t, &InputRequired::new(&[InputRequest::elicit(\"approve\", \"Ship it?\", &schema)])) -> {r:?}"
    ));
    let out = s.send(&get("3"), |_, _| panic!("answered by the engine"));
    assert_eq!(out[0]["result"]["status"], "input_required");
    assert_eq!(out[0]["result"]["inputRequests"]["approve"]["method"], "elicitation/create");

    let update = format!(
        r#""taskId":"{id}","inputResponses":{{"approve":{{"action":"accept","content":{{"ok":true}}}}}}"#
    );
    let out = s.send(&req_meta("4", "tasks/update", &update, TASKS), |ev, tx| {
        let Event::CallTool(call) = ev else { panic!() };
        let shown: Vec<String> =
            call.input_responses.iter().map(|(k, r)| format!("{k:?}: {}", r.raw())).collect();
        tx.host(format!(
            "poll_event() -> Event::CallTool {{ ticket: {:?}, tool: {:?}, input_responses: {{{}}} }}",
            call.ticket,
            call.tool.name,
            shown.join(", ")
        ));
        let r = call.answer(&ToolOutput::new(&[Content::text("shipped")]));
        tx.host(format!("call.answer(&ToolOutput::new(&[Content::text(\"shipped\")])) -> {r:?}"));
    });
    assert_eq!(out[0]["result"], json!({ "resultType": "complete" }));
    let out = s.send(&get("5"), |_, _| panic!("answered by the engine"));
    assert_eq!(out[0]["result"]["status"], "completed");
    assert_eq!(out[0]["result"]["result"]["content"][0]["text"], "shipped");
    let out = s.send(&req_meta("6", "tasks/cancel", &format!(r#""taskId":"{id}""#), TASKS), |_, _| {
        panic!("a finished task has no work to cancel")
    });
    assert_eq!(out[0]["result"], json!({ "resultType": "complete" }));
    let out = s.send(&req("7", "tasks/get", &format!(r#""taskId":"{id}""#), ""), |_, _| panic!());
    assert_eq!(out[0]["error"]["code"], -32021);
}

#[test]
fn a_tasks_life_in_a_2025_11_25_session() {
    let mut s = task_stdio("a task's life, 2025-11-25");
    let opened = s.quiet(&legacy_open("2025-11-25"));
    assert_eq!(opened[0]["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"], json!({}));
    let mut task = None;
    let out = s.send(&bare("1", "tools/call", r#""name":"build","task":{"ttl":60000}"#), |ev, tx| {
        let Event::CallTool(call) = ev else { panic!() };
        tx.host(format!(
            "poll_event() -> Event::CallTool {{ ticket: {:?}, tool: {:?} }}",
            call.ticket, call.tool.name
        ));
        task = Some(call.ticket);
    });
    let t = task.expect("a task's ticket");
    let id = out[0]["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    let task_params = format!(r#""taskId":"{id}""#);
    let out = s.send(&bare("2", "tasks/get", &task_params), |_, _| panic!("answered by the engine"));
    assert_eq!(out[0]["result"]["status"], "working");
    let out = s.send(&bare("3", "tasks/result", &task_params), |_, _| panic!("answered by the engine"));
    assert!(out.is_empty(), "tasks/result waits for the end");
    let r = s.e.answer_tool(t, &ToolOutput::new(&[Content::text("built")]));
    s.tx.host(format!("engine.answer_tool(t, &ToolOutput::new(&[Content::text(\"built\")])) -> {r:?}"));
    let out = s.flush();
    assert_eq!(out[0]["id"], 3);
    assert_eq!(out[1]["params"]["status"], "completed");
    let out = s.send(&bare("4", "tasks/list", ""), |_, _| panic!("answered by the engine"));
    assert_eq!(out[0]["result"]["tasks"][0]["taskId"], id.as_str());
    let out = s.send(&bare("5", "tasks/cancel", &task_params), |_, _| panic!("answered by the engine"));
    assert_eq!(out[0]["error"]["code"], -32602);
}
