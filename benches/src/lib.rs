//! Shared setup for the benchmarks and the instruction counter: engines, request bytes,
//! drivers that answer tool calls inline and drain output into a reused buffer, and the
//! reference (a bare simd-json tape parse with reused buffers).
//!
//! Every workload is a [`Workload`]: the criterion bench (`benches/dispatch.rs`) and the
//! instruction counter (`src/bin/icount.rs`) run the same code.

use mcp_engine::Commands;
use mcp_engine::http::{AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::{Catalog, Config, Content, Engine, Event, Instant, Tool, ToolOutput};

/// An engine with 100 tools without input schema.
pub fn engine() -> Engine {
    Engine::new(Config::new("bench", "1"), catalog())
}

/// The configuration of the list workloads: defaults and a secret key, so that a page
/// ends with a sealed cursor (without a key each list is one page).
pub fn list_config() -> Config {
    let mut c = Config::new("bench", "1");
    c.secret_key([7; 32]);
    c
}

/// The catalog both engines serve: 100 tools without input schema.
pub fn catalog() -> Catalog {
    let mut b = Catalog::builder();
    for i in 0..100 {
        b = b.tool(Tool::new(format!("tool_{i:03}")).description("A tool that takes no declared arguments."));
    }
    b.build().expect("valid catalog")
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// The JSON body of a 2026-07-28 `tools/call` request (no trailing newline).
pub fn tools_call_body() -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{{\"name\":\"tool_050\",\"arguments\":{{\"city\":\"Oslo\",\"days\":3}},{META}}}}}"
    )
}

/// A 2026-07-28 `tools/call` frame.
pub fn tools_call() -> Vec<u8> {
    format!("{}\n", tools_call_body()).into_bytes()
}

/// A 2026-07-28 `tools/list` frame (first page of 50).
pub fn tools_list() -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{{{META}}}}}\n").into_bytes()
}

/// A legacy `ping` frame naming its revision in `_meta`.
pub fn ping() -> Vec<u8> {
    br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}
"#
    .to_vec()
}

/// The tool output every call is answered with.
fn answer_call(ev: Event<'_>) {
    if let Event::CallTool(call) = ev {
        // Answers go to a live ticket just polled.
        let _ = call.answer(&ToolOutput::new(&[Content::text("12°C, light rain")]));
    }
}

/// Feeds one frame, answers a tool call inline, copies the output into `sink`; returns
/// the number of output bytes.
pub fn dispatch(e: &mut Engine, frame: &[u8], sink: &mut [u8]) -> usize {
    let mut fed = 0;
    let mut written = 0;
    while fed < frame.len() {
        fed += e.handle_input(Instant::ZERO, &frame[fed..]);
        while let Some(ev) = e.poll_event() {
            answer_call(ev);
        }
        // What the engine answered itself, as an adapter drains it for its spans.
        while e.observe().poll_served().is_some() {}
        loop {
            let n = e.poll_transmit(sink);
            if n == 0 {
                break;
            }
            written += n;
        }
    }
    written
}

/// An HTTP engine serving [`catalog`] to any origin and every caller (no authorization
/// events), with one open keep-alive connection.
pub fn http_engine() -> (HttpEngine, ConnId) {
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let mut e = HttpEngine::new(Config::new("bench", "1"), http, catalog());
    let conn = e.open(Instant::ZERO, None).expect("a first connection");
    (e, conn)
}

/// A keep-alive HTTP/1.1 POST of [`tools_call_body`] with the headers a conforming
/// 2026-07-28 client sends.
pub fn http_tools_call() -> Vec<u8> {
    let body = tools_call_body();
    format!(
        "POST /mcp HTTP/1.1\r\n\
         Host: localhost:3000\r\n\
         Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\n\
         Mcp-Name: tool_050\r\n\
         Content-Length: {}\r\n\
         \r\n\
         {body}",
        body.len()
    )
    .into_bytes()
}

/// The body of an HTTP request (what follows the blank line).
pub fn http_body(request: &[u8]) -> &[u8] {
    let at = request.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete head");
    &request[at + 4..]
}

/// Feeds one HTTP request on `conn`, answers a tool call inline, copies the response
/// into `sink` (cleared first) and marks it sent; returns the number of response bytes.
pub fn http_dispatch(e: &mut HttpEngine, conn: ConnId, request: &[u8], sink: &mut Vec<u8>) -> usize {
    let mut fed = 0;
    let mut written = 0;
    sink.clear();
    loop {
        let n = e.handle_input(Instant::ZERO, conn, &request[fed..]);
        fed += n;
        while let Some(ev) = e.poll_event() {
            if let HttpEvent::Mcp(ev) = ev {
                answer_call(ev);
            }
        }
        while e.observe().poll_served().is_some() {}
        let out = e.pending_output(conn);
        let out_len = out.len();
        sink.extend_from_slice(out);
        e.consume_output(conn, out_len);
        written += out_len;
        if fed >= request.len() {
            return written;
        }
        assert!(n > 0 || out_len > 0, "the HTTP engine stopped taking input");
    }
}

/// The reference: a bare simd-json tape parse (`fill_tape`) with reused buffers, of a
/// copy of the input (simd-json parses in place).
pub struct TapeParser {
    buffers: simd_json::Buffers,
    scratch: Vec<u8>,
    tape: Option<simd_json::Tape<'static>>,
}

impl TapeParser {
    /// A parser with buffers sized for `len` input bytes.
    pub fn new(len: usize) -> Self {
        Self {
            buffers: simd_json::Buffers::new(len),
            scratch: Vec::with_capacity(len),
            tape: Some(simd_json::Tape(Vec::new())),
        }
    }

    /// Copies `json` and parses it to a tape; returns the number of tape nodes (0 on a
    /// parse error).
    pub fn parse(&mut self, json: &[u8]) -> usize {
        self.scratch.clear();
        self.scratch.extend_from_slice(json);
        let mut tape = self.tape.take().unwrap_or_else(|| simd_json::Tape(Vec::new())).reset();
        let nodes = match simd_json::fill_tape(&mut self.scratch, &mut self.buffers, &mut tape) {
            Ok(()) => tape.0.len(),
            Err(_) => 0,
        };
        self.tape = Some(tape.reset());
        nodes
    }
}

/// A benchmarked path, runnable any number of times on state built once.
pub trait Workload {
    /// Runs the path once; returns a figure that depends on the work (bytes out, nodes).
    fn run(&mut self) -> usize;
}

/// The paths measured, each paired with its reference (see [`reference()`]).
pub const CANDIDATES: [&str; 4] = ["stdio/tools_call", "stdio/ping", "stdio/tools_list", "http/tools_call"];

/// The connectome's recording of one `tools/call` (what the dispatcher adds to each),
/// measured beside the same reference as `stdio/tools_call`: a tape parse of its frame.
pub const CONNECTOME: &str = "connectome/record";

/// Every measured path: [`CANDIDATES`] and [`CONNECTOME`].
pub const ALL: [&str; 5] =
    ["stdio/tools_call", "stdio/ping", "stdio/tools_list", "http/tools_call", CONNECTOME];

/// Counts one `tools/call` of tool 50 by one principal into the connectome's observed
/// counts of [`catalog`], as the dispatcher does after handing the call to the host.
struct Record {
    observed: mcp_engine::connectome::Observed,
    principal: [u8; 32],
}

impl Workload for Record {
    fn run(&mut self) -> usize {
        use mcp_engine::connectome::{Method, Target};
        let p = std::hint::black_box(&self.principal);
        self.observed.record(Some(p), Method::CallTool, Some(std::hint::black_box(Target::Tool(50))));
        1
    }
}

struct Stdio {
    engine: Engine,
    frame: Vec<u8>,
    sink: Vec<u8>,
}

impl Workload for Stdio {
    fn run(&mut self) -> usize {
        dispatch(&mut self.engine, std::hint::black_box(&self.frame), &mut self.sink)
    }
}

struct Http {
    engine: HttpEngine,
    conn: ConnId,
    request: Vec<u8>,
    sink: Vec<u8>,
}

impl Workload for Http {
    fn run(&mut self) -> usize {
        http_dispatch(&mut self.engine, self.conn, std::hint::black_box(&self.request), &mut self.sink)
    }
}

struct Reference {
    parser: TapeParser,
    json: Vec<u8>,
}

impl Workload for Reference {
    fn run(&mut self) -> usize {
        self.parser.parse(std::hint::black_box(&self.json))
    }
}

/// The input bytes of candidate `name`: the frame, or the whole HTTP request.
pub fn input(name: &str) -> Option<Vec<u8>> {
    Some(match name {
        "stdio/tools_call" => tools_call(),
        "stdio/ping" => ping(),
        "stdio/tools_list" => tools_list(),
        "http/tools_call" => http_tools_call(),
        CONNECTOME => tools_call(),
        _ => return None,
    })
}

/// Catalog sizes of the scaling workloads (`scale/tools_call/N`, `scale/tools_list/N`).
pub const SCALES: [usize; 4] = [1, 10, 100, 1000];

/// A catalog of `n` tools, each with a small input schema.
pub fn catalog_of(n: usize) -> Catalog {
    let mut b = Catalog::builder();
    for i in 0..n {
        b = b.tool(
            Tool::new(format!("tool_{i:04}")).description("A tool with a small input schema.").input_schema(
                serde_json::json!({
                    "type": "object",
                    "properties": { "city": { "type": "string" }, "days": { "type": "integer", "minimum": 1 } }
                }),
            ),
        );
    }
    b.build().expect("valid catalog")
}

/// How cost grows with the catalog: `scale/tools_call/N` calls the middle tool of `N`
/// (arguments validated against its schema), `scale/tools_list/N` lists the first page
/// (`min(N, 50)` tools).
pub fn scaled(name: &str) -> Option<Box<dyn Workload>> {
    let rest = name.strip_prefix("scale/")?;
    let (what, n) = rest.split_once('/')?;
    let n: usize = n.parse().ok().filter(|n| *n > 0)?;
    let frame = match what {
        "tools_call" => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{{\"name\":\"tool_{:04}\",\"arguments\":{{\"city\":\"Oslo\",\"days\":3}},{META}}}}}\n",
            n / 2
        )
        .into_bytes(),
        "tools_list" => tools_list(),
        _ => return None,
    };
    let config = if what == "tools_list" { list_config() } else { Config::new("bench", "1") };
    let engine = Engine::new(config, catalog_of(n));
    Some(Box::new(Stdio { engine, frame, sink: vec![0; 1 << 20] }))
}

/// The engine path of candidate `name` (one of [`CANDIDATES`]).
pub fn candidate(name: &str) -> Option<Box<dyn Workload>> {
    let bytes = input(name)?;
    if name == CONNECTOME {
        let observed = mcp_engine::connectome::Observed::new(&catalog());
        return Some(Box::new(Record { observed, principal: [7; 32] }));
    }
    Some(if name.starts_with("http/") {
        let (engine, conn) = http_engine();
        Box::new(Http { engine, conn, request: bytes, sink: Vec::with_capacity(1 << 16) })
    } else {
        let engine =
            if name == "stdio/tools_list" { Engine::new(list_config(), catalog()) } else { engine() };
        Box::new(Stdio { engine, frame: bytes, sink: vec![0; 1 << 16] })
    })
}

/// The reference of candidate `name`: a tape parse of the same JSON bytes (for HTTP, of
/// the request body).
pub fn reference(name: &str) -> Option<Box<dyn Workload>> {
    let bytes = input(name)?;
    let json = if name.starts_with("http/") { http_body(&bytes).to_vec() } else { bytes };
    Some(Box::new(Reference { parser: TapeParser::new(json.len()), json }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes one dispatch writes, checking that the workload repeats them.
    fn output(name: &str) -> String {
        let request = input(name).unwrap();
        let out = if name.starts_with("http/") {
            let (mut e, conn) = http_engine();
            let mut sink = Vec::new();
            let n = http_dispatch(&mut e, conn, &request, &mut sink);
            assert_eq!(n, sink.len());
            sink
        } else {
            let mut sink = vec![0; 1 << 16];
            let mut e =
                if name == "stdio/tools_list" { Engine::new(list_config(), catalog()) } else { engine() };
            let n = dispatch(&mut e, &request, &mut sink);
            sink.truncate(n);
            sink
        };
        // The workload is repeatable: the same response each time, on one engine.
        let mut w = candidate(name).unwrap();
        for _ in 0..3 {
            assert_eq!(w.run(), out.len(), "{name}");
        }
        String::from_utf8(out).unwrap()
    }

    /// Each candidate measures the success path, not a refusal.
    #[test]
    fn candidates_answer_with_results() {
        let call = output("stdio/tools_call");
        assert!(
            call.starts_with(r#"{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text""#),
            "{call}"
        );
        assert!(call.ends_with('\n'));
        let ping = output("stdio/ping");
        assert_eq!(ping, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
        let list = output("stdio/tools_list");
        assert!(list.contains(r#""nextCursor""#), "{list}");
        assert_eq!(list.matches(r#""name":"tool_"#).count(), 50);
        let http = output("http/tools_call");
        assert!(http.starts_with("HTTP/1.1 200"), "{http}");
        assert!(!http.to_ascii_lowercase().contains("connection: close"), "{http}");
        assert!(http.contains(r#"{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text""#), "{http}");
    }

    #[test]
    fn references_parse() {
        for name in CANDIDATES {
            let mut r = reference(name).unwrap();
            let nodes = r.run();
            assert!(nodes > 10, "{name}: {nodes}");
            assert_eq!(r.run(), nodes);
        }
    }
}
