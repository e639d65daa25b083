//! Notifications a host sends for a request are bounded by what the client reads: past
//! the bound, `notify_*` refuses with `NotifyError::Backpressure` and writes nothing.

use mcp_engine::Commands;
use mcp_engine::error::NotifyError;
use mcp_engine::{Config, Engine, Event, Instant, LogLevel};
use mcp_fixture as everything;
use serde_json::json;

#[test]
fn stdio_progress_past_the_buffered_bound_is_refused_with_backpressure() {
    let mut cfg = Config::new("s", "1");
    cfg.max_buffered_output(4096).logging(true);
    let mut e = Engine::new(cfg, everything::catalog());
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "test_tool_with_progress", "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/logLevel": "debug",
            "progressToken": 7
        }
    }});
    let line = format!("{call}\n");
    assert_eq!(e.handle_input(Instant::ZERO, line.as_bytes()), line.len());
    let ticket = match e.poll_event() {
        Some(Event::CallTool(c)) => c.ticket,
        other => panic!("{other:?}"),
    };
    let mut sent = 0u32;
    let refused = loop {
        match e.notify_progress(ticket, f64::from(sent + 1), None, Some(&"m".repeat(200))) {
            Ok(()) => sent += 1,
            Err(err) => break err,
        }
        assert!(sent < 1000, "never refused");
    };
    assert_eq!(refused, NotifyError::Backpressure);
    assert!(e.pending_output().len() >= 4096);
    assert_eq!(e.notify_log(ticket, LogLevel::Info, None, &"x"), Err(NotifyError::Backpressure));
    // Once the client reads, notifications go out again.
    let n = e.pending_output().len();
    e.consume_output(n);
    assert_eq!(e.notify_progress(ticket, f64::from(sent + 1), None, None), Ok(()));
}
