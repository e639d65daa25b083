//! Support code for the integration tests: validation against the official MCP schemas,
//! and drivers that feed the engine and collect its output.

pub mod integrity;
pub mod layers;
pub mod peer;
pub mod spec;
pub mod wire;

use mcp_engine::{Config, Engine, Instant};
use mcp_fixture as everything;
use serde_json::{Value, json};

/// A catalog of one tool, `slow`, that may run as a task (the task tests' tool).
pub fn slow_task_catalog() -> mcp_engine::Catalog {
    mcp_engine::Catalog::builder()
        .tool(
            mcp_engine::Tool::new("slow")
                .description("May run as a task.")
                .task_support(mcp_engine::TaskSupport::Optional),
        )
        .build()
        .expect("a valid catalog")
}

/// A form elicitation under the key `confirm` asking "Really?" for a boolean `confirm`
/// (the input the task tests ask for).
pub fn confirm() -> mcp_engine::mrtr::InputRequest<'static> {
    static SCHEMA: std::sync::OnceLock<Box<serde_json::value::RawValue>> = std::sync::OnceLock::new();
    let schema = SCHEMA.get_or_init(|| {
        serde_json::value::to_raw_value(
            &json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } } }),
        )
        .expect("raw")
    });
    mcp_engine::mrtr::InputRequest::elicit("confirm", "Really?", schema)
}

/// The `_meta` a 2026-07-28 request carries.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A 2026-07-28 request line: `params` gets the modern `_meta` added.
pub fn modern(id: impl Into<Value>, method: &str, params: Value) -> String {
    let mut params = params;
    params.as_object_mut().expect("params is an object").insert("_meta".into(), modern_meta());
    line(json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params }))
}

/// A request line with `params` exactly as given.
pub fn request(id: impl Into<Value>, method: &str, params: Value) -> String {
    line(json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params }))
}

/// A notification line.
pub fn notification(method: &str, params: Value) -> String {
    line(json!({ "jsonrpc": "2.0", "method": method, "params": params }))
}

/// The legacy opening: `initialize` for `rev` and `notifications/initialized`.
pub fn legacy_open(rev: &str) -> String {
    let mut s = request(
        0,
        "initialize",
        json!({ "protocolVersion": rev, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
    );
    s.push_str(&notification("notifications/initialized", json!({})));
    s
}

fn line(v: Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

/// An engine serving the `everything` fixture with default settings.
pub fn everything_engine() -> Engine {
    let mut config = Config::new("mcp-engine-everything", "0.1.0");
    config.logging(true).completions(true);
    Engine::new(config, everything::catalog())
}

/// Feeds `input` in chunks of the given sizes (cycled), answering every event with the
/// fixture's synchronous answers and draining output after each call; then signals EOF.
/// Returns everything the engine wrote.
pub fn drive(engine: &mut Engine, input: &[u8], chunks: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut k = 0;
    let mut guard = 0usize;
    while pos < input.len() {
        let size = chunks.get(k % chunks.len().max(1)).copied().unwrap_or(input.len()).max(1);
        k += 1;
        let end = pos.saturating_add(size).min(input.len());
        let mut fed = pos;
        while fed < end {
            let n = engine.handle_input(Instant::ZERO, &input[fed..end]);
            fed += n;
            drain(engine, &mut out);
            guard += 1;
            assert!(guard < 10_000_000, "the engine stopped taking input");
        }
        pos = end;
    }
    engine.handle_eof(Instant::ZERO);
    drain(engine, &mut out);
    out
}

/// Answers every pending event with the fixture and moves all output into `out`.
pub fn drain(engine: &mut Engine, out: &mut Vec<u8>) {
    drain_with(engine, &mut everything::respond, out);
}

/// Hands every pending event to `host` and moves all output into `out`, until the
/// engine rests.
pub fn drain_with(engine: &mut Engine, host: &mut dyn FnMut(mcp_engine::Event<'_>), out: &mut Vec<u8>) {
    loop {
        let mut progressed = false;
        while let Some(ev) = engine.poll_event() {
            host(ev);
            progressed = true;
        }
        let pending = engine.pending_output();
        if !pending.is_empty() {
            out.extend_from_slice(pending);
            let n = pending.len();
            engine.consume_output(n);
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
}

/// Runs `input` through a fresh fixture engine in one piece.
pub fn run(input: &str) -> Vec<Value> {
    let mut e = everything_engine();
    lines(&drive(&mut e, input.as_bytes(), &[usize::MAX]))
}

/// Feeds `input` whole, taking every event without answering it; returns the output lines
/// and the events' tickets (kept for the test to answer).
pub fn feed_keeping_tickets(e: &mut Engine, input: &str) -> (Vec<Value>, Vec<mcp_engine::Ticket>) {
    let mut fed = 0;
    let mut tickets = Vec::new();
    let mut out = Vec::new();
    while fed < input.len() {
        fed += e.handle_input(Instant::ZERO, &input.as_bytes()[fed..]);
        while let Some(ev) = e.poll_event() {
            tickets.push(ev.ticket());
        }
        out.extend_from_slice(e.pending_output());
        let n = e.pending_output().len();
        e.consume_output(n);
    }
    (lines(&out), tickets)
}

/// Feeds `input` to `engine` at `now` until it is all taken, answering every event with
/// `host` and taking all output (with an empty `input`: what is pending now); returns the
/// frames written.
pub fn send_with(
    engine: &mut Engine,
    now: Instant,
    host: &mut dyn FnMut(mcp_engine::Event<'_>),
    input: &str,
) -> Vec<Value> {
    let mut out = Vec::new();
    let mut fed = 0;
    loop {
        fed += engine.handle_input(now, &input.as_bytes()[fed..]);
        drain_with(engine, host, &mut out);
        if fed >= input.len() {
            return lines(&out);
        }
    }
}

/// Parses newline-delimited JSON output; panics on a line that is not JSON.
pub fn lines(out: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(out).expect("output is UTF-8");
    assert!(text.is_empty() || text.ends_with('\n'), "output ends mid-frame: {text:?}");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("output line is not JSON ({e}): {l}")))
        .collect()
}

/// The README's Rust snippets, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
