//! Malformed input: each fault gets its JSON-RPC error, never a panic, and the stream
//! goes on at the next frame.

use mcp_engine::{Catalog, Config, Engine, Tool};
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::{drive, everything_engine, legacy_open, lines, modern, notification, request, run};
use serde_json::{Value, json};

const PING_LEGACY: &str = "{\"jsonrpc\":\"2.0\",\"id\":\"after\",\"method\":\"ping\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2025-11-25\"}}}\n";

/// Runs `bad` followed by a good request and returns (response to bad, if any; the good one).
fn then_good(bad: &[u8]) -> (Vec<Value>, Value) {
    let mut input = bad.to_vec();
    input.extend_from_slice(PING_LEGACY.as_bytes());
    let mut e = everything_engine();
    let mut out = lines(&drive(&mut e, &input, &[usize::MAX]));
    let good = out.pop().expect("the good request is answered");
    assert_eq!(good["id"], "after", "the stream resynchronises: {good}");
    assert_eq!(good["result"], json!({}));
    (out, good)
}

fn single_error(bad: &[u8]) -> Value {
    let (out, _) = then_good(bad);
    assert_eq!(out.len(), 1, "{:?}: {out:?}", String::from_utf8_lossy(bad));
    let e = out.into_iter().next().unwrap();
    assert_valid(Rev::V2026_07_28, "JSONRPCErrorResponse", &e);
    e
}

#[test]
fn parse_errors() {
    for bad in [
        &b"{not json}\n"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"\n",
        b"\xff\xfe\n",
        b"{\"a\":\"\xc3\x28\"}\n",
        b"{} {}\n",
        b"nul\n",
    ] {
        let e = single_error(bad);
        assert_eq!(e["error"]["code"], -32700, "{:?}", String::from_utf8_lossy(bad));
        assert!(e.get("id").is_none(), "no id can be read from an unparsable frame");
    }
}

#[test]
fn invalid_requests() {
    let cases: &[(&str, Value)] = &[
        ("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n", Value::Null),
        ("[]\n", Value::Null),
        ("42\n", Value::Null),
        ("\"str\"\n", Value::Null),
        ("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\n", Value::Null),
        ("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}\n", Value::Null),
        ("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}\n", Value::Null),
        ("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}\n", Value::Null),
        ("{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}\n", json!(7)),
        ("{\"id\":7,\"method\":\"ping\"}\n", json!(7)),
        ("{\"jsonrpc\":\"2.0\",\"id\":7}\n", json!(7)),
        ("{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":3}\n", json!("s")),
    ];
    for (bad, id) in cases {
        let e = single_error(bad.as_bytes());
        assert_eq!(e["error"]["code"], -32600, "{bad}");
        assert_eq!(e.get("id").cloned().unwrap_or(Value::Null), *id, "{bad}");
    }
}

#[test]
fn ids_are_echoed_with_their_type() {
    for id in [json!(0), json!(-5), json!(u64::MAX), json!(i64::MIN), json!("x"), json!(""), json!("é\"\\\n")]
    {
        let out = run(&modern(id.clone(), "tools/list", json!({})));
        assert_eq!(out[0]["id"], id);
    }
}

#[test]
fn depth_bound() {
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":{}{}}}}}\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    let e = single_error(deep.as_bytes());
    assert_eq!(e["error"]["code"], -32600);
    assert!(e["error"]["message"].as_str().unwrap().contains("deeper"));
}

#[test]
fn notifications_are_never_answered() {
    let input = [
        notification("notifications/initialized", json!({})),
        notification("notifications/cancelled", json!({"requestId": 99})),
        notification("notifications/cancelled", json!({})),
        notification("notifications/cancelled", json!({"requestId": [1]})),
        notification("unknown/notification", json!({"x": 1})),
        "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":5}\n".into(),
        "{\"jsonrpc\":\"1.0\",\"method\":\"x\"}\n".into(),
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n".into(),
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":1,\"message\":\"m\"}}\n".into(),
    ]
    .concat();
    let (out, _) = then_good(input.as_bytes());
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn invalid_params() {
    let cases = [
        // _meta at the top level of the request.
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"_meta\":{},\"params\":{}}\n".to_owned(),
        // params not an object.
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":[1]}\n".to_owned(),
        // No _meta and no initialize.
        request(1, "tools/list", json!({})),
        request(1, "tools/list", json!({"_meta": {}})),
        request(1, "tools/list", json!({"_meta": 5})),
        // Modern _meta missing clientCapabilities, or with a bad one.
        request(1, "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})),
        request(
            1,
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": []}}),
        ),
        // Missing protocolVersion, or not a string.
        request(1, "tools/list", json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}})),
        request(
            1,
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 2026, "io.modelcontextprotocol/clientCapabilities": {}}}),
        ),
        // Unknown log level.
        request(
            1,
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/logLevel": "loud"}}),
        ),
        // Method parameters.
        modern(1, "tools/call", json!({})),
        modern(1, "tools/call", json!({"name": 5})),
        modern(1, "tools/call", json!({"name": "nope"})),
        modern(1, "tools/call", json!({"name": "echo", "arguments": [1]})),
        modern(1, "tools/call", json!({"name": "echo", "arguments": null})),
        modern(1, "tools/list", json!({"cursor": 5})),
        modern(1, "tools/list", json!({"cursor": "!!!"})),
        modern(1, "tools/list", json!({"cursor": ""})),
        modern(1, "resources/read", json!({})),
        modern(1, "prompts/get", json!({"name": "nope"})),
        modern(1, "prompts/get", json!({"name": "test_prompt_with_arguments"})),
        modern(
            1,
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": 2}}),
        ),
        modern(
            1,
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b", "zzz": "c"}}),
        ),
        initialize_without_version(),
    ];
    for bad in cases {
        let e = single_error(bad.as_bytes());
        assert_eq!(e["error"]["code"], -32602, "{bad} -> {e}");
        assert_eq!(e["id"], 1, "{bad}");
    }
}

fn initialize_without_version() -> String {
    request(1, "initialize", json!({"capabilities": {}}))
}

#[test]
fn unsupported_revision_lists_what_is_supported() {
    for v in ["2024-11-05", "v999.0.0", ""] {
        let e = single_error(
            request(1, "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": v, "io.modelcontextprotocol/clientCapabilities": {}}}))
                .as_bytes(),
        );
        assert_eq!(e["error"]["code"], -32022);
        assert_eq!(e["error"]["data"]["requested"], v);
        assert_eq!(e["error"]["data"]["supported"], json!(["2026-07-28", "2025-11-25", "2025-06-18"]));
    }
}

#[test]
fn argument_validation_follows_the_revision() {
    let bad = json!({"name": "echo", "arguments": {"text": 5}});
    // 2026-07-28 and 2025-11-25: a tool result with isError the model can read.
    let out = run(&modern(1, "tools/call", bad.clone()));
    assert_eq!(out[0]["result"]["isError"], true);
    assert!(
        out[0]["result"]["content"][0]["text"].as_str().unwrap().contains("Invalid arguments for tool echo")
    );
    assert_valid(Rev::V2026_07_28, "CallToolResult", &out[0]["result"]);
    let out = run(&format!("{}{}", legacy_open("2025-11-25"), request(1, "tools/call", bad.clone())));
    assert_eq!(out[1]["result"]["isError"], true);
    assert!(out[1]["result"].get("resultType").is_none());
    // 2025-06-18: a protocol error.
    let out = run(&format!("{}{}", legacy_open("2025-06-18"), request(1, "tools/call", bad)));
    assert_eq!(out[1]["error"]["code"], -32602);
    // Missing required and undeclared properties are refused too.
    for args in [json!({}), json!({"text": "a", "extra": 1})] {
        let out = run(&modern(1, "tools/call", json!({"name": "echo", "arguments": args})));
        assert_eq!(out[0]["result"]["isError"], true, "{args}");
    }
}

#[test]
fn long_validation_messages_are_bounded() {
    let long_key = "k".repeat(10_000);
    let out = run(&modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": 1, long_key: 1}})));
    let text = out[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.len() < 2_000, "{} bytes", text.len());
}

#[test]
fn oversized_frames_are_refused_with_their_id_and_the_stream_resumes() {
    let mut cfg = Config::new("s", "1");
    cfg.max_frame_len(1_000);
    let pad = "x".repeat(5_000);
    // The id first; the id last, after the long params (members are unordered: a client
    // may write it there); a response of the client's (its id is not a request's: none).
    let early =
        format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{pad}\"}}}}\n");
    let late = format!(
        "{{\"method\":\"tools/call\",\"params\":{{\"arguments\":{{\"id\":3,\"t\":\"{pad}\"}}}},\"jsonrpc\":\"2.0\",\"id\":\"late\"}}\n"
    );
    let response = format!("{{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{{\"pad\":\"{pad}\"}}}}\n");
    let mut input = Vec::new();
    for frame in [&early, &late, &response] {
        input.extend_from_slice(frame.as_bytes());
        input.extend_from_slice(PING_LEGACY.as_bytes());
    }
    for chunks in [&[usize::MAX][..], &[1], &[7, 1000, 3], &[999], &[1001]] {
        let mut e = Engine::new(cfg.clone(), mcp_fixture::catalog());
        let out = lines(&drive(&mut e, &input, chunks));
        assert_eq!(out.len(), 6, "{chunks:?}: {out:?}");
        for i in [0, 2, 4] {
            assert_eq!(out[i]["error"]["code"], -32600);
            assert_eq!(out[i]["error"]["message"], "Invalid Request: frame longer than 1000 bytes");
        }
        assert_eq!(out[0]["id"], 1);
        assert_eq!(out[2]["id"], "late");
        assert!(out[4].get("id").is_none(), "{:?}", out[4]);
        for i in [1, 3, 5] {
            assert_eq!(out[i]["id"], "after");
        }
    }
}

#[test]
fn an_over_long_frame_cut_by_the_end_of_input_is_answered() {
    let mut cfg = Config::new("s", "1");
    cfg.max_frame_len(600);
    for (frame, id) in [
        (format!("{{\"method\":\"ping\",\"id\":7,\"params\":{{\"pad\":\"{}", "x".repeat(2_000)), json!(7)),
        (format!("{{\"method\":\"ping\",\"params\":{{\"pad\":\"{}", "x".repeat(2_000)), Value::Null),
    ] {
        for chunks in [&[usize::MAX][..], &[1], &[601]] {
            let mut e = Engine::new(cfg.clone(), Catalog::empty());
            let out = lines(&drive(&mut e, frame.as_bytes(), chunks));
            assert_eq!(out.len(), 1, "{chunks:?}: {out:?}");
            assert_eq!(out[0]["error"]["code"], -32600);
            assert_eq!(out[0].get("id").cloned().unwrap_or(Value::Null), id);
            assert!(e.is_finished());
        }
    }
}

#[test]
fn a_frame_at_the_limit_is_accepted() {
    let mut cfg = Config::new("s", "1");
    cfg.max_frame_len(600);
    let head = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2025-11-25\"},\"pad\":\"";
    let pad = 600 - head.len() - 3;
    let frame = format!("{head}{}\"}}}}", "x".repeat(pad));
    assert_eq!(frame.len(), 600);
    for ending in ["\n", "\r\n"] {
        let mut e = Engine::new(cfg.clone(), Catalog::empty());
        let out = lines(&drive(&mut e, format!("{frame}{ending}").as_bytes(), &[1]));
        assert_eq!(out[0]["result"], json!({}), "{ending:?}");
        let mut e = Engine::new(cfg.clone(), Catalog::empty());
        let out = lines(&drive(&mut e, format!("{frame}x{ending}").as_bytes(), &[1]));
        assert_eq!(out[0]["error"]["code"], -32600);
    }
}

#[test]
fn blank_lines_and_crlf_are_tolerated_and_a_final_frame_without_newline_is_served() {
    let input = format!("\n  \r\n\t\n{}", PING_LEGACY.trim_end());
    let mut e = everything_engine();
    let out = lines(&drive(&mut e, input.as_bytes(), &[3]));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], "after");
    assert!(e.is_finished());
}

#[test]
fn long_ids_are_refused_only_where_a_ticket_must_keep_them() {
    let long = "i".repeat(300);
    // Answered at once: echoed whatever its length.
    let out = run(&modern(long.clone(), "tools/list", json!({})));
    assert_eq!(out[0]["id"], long.as_str());
    // Needs a ticket: refused, echoing it.
    let out = run(&modern(long.clone(), "tools/call", json!({"name": "test_simple_text"})));
    assert_eq!(out[0]["error"]["code"], -32600);
    assert_eq!(out[0]["id"], long.as_str());
}

#[test]
fn unadvertised_families_are_method_not_found() {
    let c = Catalog::builder().tool(Tool::new("only")).build().unwrap();
    let mut e = Engine::new(Config::new("s", "1"), c);
    let input = [
        modern(1, "resources/list", json!({})),
        modern(2, "prompts/get", json!({"name": "x"})),
        modern(3, "server/discover", json!({})),
    ]
    .concat();
    let out = lines(&drive(&mut e, input.as_bytes(), &[usize::MAX]));
    assert_eq!(out[0]["error"]["code"], -32601);
    assert_eq!(out[1]["error"]["code"], -32601);
    let caps = &out[2]["result"]["capabilities"];
    assert!(caps["tools"].is_object() && caps.get("resources").is_none() && caps.get("prompts").is_none());
}

#[test]
fn input_schemas_default_to_json_schema_2020_12() {
    // `prefixItems` exists only in 2020-12: enforced without a `$schema`, as MCP's default dialect says.
    let schema = json!({
        "type": "object",
        "properties": { "a": { "type": "array", "prefixItems": [{ "type": "string" }] } }
    });
    let catalog = Catalog::builder().tool(Tool::new("t").input_schema(schema)).build().unwrap();
    let mut e = Engine::new(Config::new("s", "1"), catalog);
    let input = modern(1, "tools/call", json!({"name": "t", "arguments": {"a": [1]}}));
    let out = lines(&drive(&mut e, input.as_bytes(), &[usize::MAX]));
    assert_eq!(out[0]["result"]["isError"], true, "{}", out[0]);
}
