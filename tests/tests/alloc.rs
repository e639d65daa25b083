//! Zero heap allocations per request in steady state, counted exactly.

use mcp_engine::{Catalog, Config, Content, Engine, Event, Instant, Prompt, Resource, Tool, ToolOutput};
use mcp_tests::{legacy_open, modern, request};
use serde_json::json;

fn engine() -> Engine {
    let mut b = Catalog::builder();
    for i in 0..120 {
        b = b.tool(Tool::new(format!("tool_{i:03}")).description("a tool without an input schema"));
    }
    let catalog = b.resource(Resource::new("test://r", "r")).prompt(Prompt::new("p")).build().unwrap();
    Engine::new(Config::new("alloc", "1"), catalog)
}

/// Feeds `input`, answers every tool call inline with static content, drains output into
/// a reused sink. Returns the bytes written.
fn pump(e: &mut Engine, input: &[u8], sink: &mut [u8]) -> usize {
    let mut written = 0;
    let mut fed = 0;
    while fed < input.len() {
        fed += e.handle_input(Instant::ZERO, &input[fed..]);
        loop {
            let mut progressed = false;
            while let Some(ev) = e.poll_event() {
                progressed = true;
                if let Event::CallTool(call) = ev {
                    call.answer(&ToolOutput::new(&[Content::text("ok")])).unwrap();
                }
            }
            loop {
                let n = e.poll_transmit(sink);
                if n == 0 {
                    break;
                }
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

#[test]
fn the_paginated_tools_list_second_page_allocates_nothing() {
    let mut e = engine();
    let mut sink = vec![0u8; 1 << 16];
    let first = modern(1, "tools/list", json!({}));
    let mut out = Vec::new();
    e.handle_input(Instant::ZERO, first.as_bytes());
    out.extend_from_slice(e.pending_output());
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let cursor = v["result"]["nextCursor"].as_str().unwrap().to_owned();
    let second = modern(2, "tools/list", json!({"cursor": cursor})).into_bytes();
    pump(&mut e, &second, &mut sink);
    let info = allocation_counter::measure(|| {
        pump(&mut e, &second, &mut sink);
    });
    assert_eq!(info.count_total, 0);
}
