//! Feeding input whole, byte by byte, or split anywhere gives the same output.

use mcp_engine::{Config, Engine};
use mcp_tests::{drive, legacy_open, modern, notification, request};
use proptest::prelude::*;
use serde_json::json;

/// A transcript that exercises every path: both eras, errors, an oversized frame,
/// blank lines, CRLF, notifications, host events and a final frame without newline.
fn transcript() -> Vec<u8> {
    let mut s = String::new();
    s.push_str(&modern(1, "server/discover", json!({})));
    s.push_str("\r\n\n");
    s.push_str(&modern(2, "tools/call", json!({"name": "echo", "arguments": {"text": "a\u{e9}\"\n"}})));
    s.push_str("{bad json\n");
    s.push_str(&format!("{{\"pad\":\"{}\"}}\n", "x".repeat(700)));
    s.push_str(&modern("three", "resources/read", json!({"uri": "test://template/7/data"})));
    s.push_str(&legacy_open("2025-06-18"));
    s.push_str(&request(
        4,
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "x", "arg2": "y"}}),
    ));
    s.push_str(&notification("notifications/cancelled", json!({"requestId": 4})));
    s.push_str("[1,2]\r\n");
    s.push_str(&request(5, "tools/list", json!({})));
    s.push_str(&modern(6, "resources/read", json!({"uri": "test://nope"})));
    s.push_str(request(7, "ping", json!({})).trim_end());
    s.into_bytes()
}

fn engine() -> Engine {
    let mut cfg = Config::new("chunks", "1");
    cfg.max_frame_len(600);
    Engine::new(cfg, mcp_fixture::catalog())
}

fn whole(input: &[u8]) -> Vec<u8> {
    drive(&mut engine(), input, &[usize::MAX])
}

#[test]
fn byte_by_byte_equals_whole() {
    let input = transcript();
    let expected = whole(&input);
    assert_eq!(mcp_tests::lines(&expected).len(), 11, "{}", String::from_utf8_lossy(&expected));
    assert_eq!(drive(&mut engine(), &input, &[1]), expected);
}

#[test]
fn every_split_point_equals_whole() {
    let input = transcript();
    let expected = whole(&input);
    for k in 0..=input.len() {
        let out = drive(&mut engine(), &input, &[k.max(1), usize::MAX]);
        assert_eq!(out, expected, "split at {k}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn random_chunkings_equal_whole(chunks in proptest::collection::vec(1usize..300, 1..40)) {
        let input = transcript();
        let expected = whole(&input);
        prop_assert_eq!(drive(&mut engine(), &input, &chunks), expected);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_output_is_json_lines(bytes in proptest::collection::vec(any::<u8>(), 0..2000), chunk in 1usize..64) {
        let mut input = bytes;
        input.extend_from_slice(b"\n");
        input.extend_from_slice(request("end", "ping", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}})).as_bytes());
        let out = mcp_tests::lines(&drive(&mut engine(), &input, &[chunk]));
        let last = out.last().expect("the final ping is answered");
        prop_assert_eq!(&last["id"], &json!("end"));
    }
}
