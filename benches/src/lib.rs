//! Shared setup for the benchmarks: an engine, request frames and a driver that answers
//! tool calls inline and drains output into a reused buffer.

use mcp_engine::{Catalog, Config, Content, Engine, Event, Instant, Tool, ToolOutput};

/// An engine with 100 tools without input schema.
pub fn engine() -> Engine {
    let mut b = Catalog::builder();
    for i in 0..100 {
        b = b.tool(Tool::new(format!("tool_{i:03}")).description("A tool that takes no declared arguments."));
    }
    Engine::new(Config::new("bench", "1"), b.build().expect("valid catalog"))
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// A 2026-07-28 `tools/call` frame.
pub fn tools_call() -> Vec<u8> {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{{\"name\":\"tool_050\",\"arguments\":{{\"city\":\"Oslo\",\"days\":3}},{META}}}}}\n"
    )
    .into_bytes()
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

/// Feeds one frame, answers a tool call inline, copies the output into `sink`; returns
/// the number of output bytes.
pub fn dispatch(e: &mut Engine, frame: &[u8], sink: &mut [u8]) -> usize {
    let mut fed = 0;
    let mut written = 0;
    while fed < frame.len() {
        fed += e.handle_input(Instant::ZERO, &frame[fed..]);
        while let Some(ev) = e.poll_event() {
            if let Event::CallTool(call) = ev {
                // Answers go to a live ticket just polled.
                let _ = call.answer(&ToolOutput::new(&[Content::text("12°C, light rain")]));
            }
        }
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
