//! Transcript tests: every method in both eras, each response checked field by field and
//! validated against the official schema of its revision.

use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::{legacy_open, modern, notification, request, run};
use serde_json::{Value, json};

fn rev_of(s: &str) -> Rev {
    match s {
        "2026-07-28" => Rev::V2026_07_28,
        "2025-11-25" => Rev::V2025_11_25,
        _ => Rev::V2025_06_18,
    }
}

/// Validates a response envelope and, for a result, the result against `def`.
fn check(rev: Rev, def: &str, resp: &Value) {
    if resp.get("result").is_some() {
        let envelope = if rev == Rev::V2025_06_18 { "JSONRPCResponse" } else { "JSONRPCResultResponse" };
        assert_valid(rev, envelope, resp);
        assert_valid(rev, def, &resp["result"]);
    } else {
        let envelope = if rev == Rev::V2025_06_18 { "JSONRPCError" } else { "JSONRPCErrorResponse" };
        assert_valid(rev, envelope, resp);
    }
}

fn modern_results_carry_envelope(result: &Value, cacheable: bool) {
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-engine-everything");
    assert_eq!(result.get("ttlMs").is_some(), cacheable, "{result}");
    assert_eq!(result.get("cacheScope").is_some(), cacheable, "{result}");
    if cacheable {
        assert_eq!(result["ttlMs"], 0);
        assert_eq!(result["cacheScope"], "private");
    }
}

#[test]
fn modern_discover() {
    let out = run(&modern(1, "server/discover", json!({})));
    assert_eq!(out.len(), 1);
    let r = &out[0]["result"];
    assert_eq!(out[0]["id"], 1);
    assert_eq!(r["supportedVersions"], json!(["2026-07-28", "2025-11-25", "2025-06-18"]));
    assert!(r["capabilities"]["tools"].is_object());
    assert!(r["capabilities"]["resources"].is_object());
    assert!(r["capabilities"]["prompts"].is_object());
    modern_results_carry_envelope(r, true);
    check(Rev::V2026_07_28, "DiscoverResult", &out[0]);
}

#[test]
fn discover_is_answered_bare_whatever_the_meta_says() {
    // The era probe: no _meta at all, or a legacy _meta, still gets the full modern result.
    for req in [
        request("p", "server/discover", json!({})),
        request(
            "p",
            "server/discover",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}}),
        ),
    ] {
        let out = run(&req);
        assert_eq!(out[0]["id"], "p");
        modern_results_carry_envelope(&out[0]["result"], true);
        check(Rev::V2026_07_28, "DiscoverResult", &out[0]);
    }
    let out = run(&format!("{}{}", legacy_open("2025-11-25"), request(5, "server/discover", json!({}))));
    assert_eq!(out[1]["id"], 5);
    modern_results_carry_envelope(&out[1]["result"], true);
}

#[test]
fn modern_lists() {
    let input = [
        modern(1, "tools/list", json!({})),
        modern(2, "resources/list", json!({})),
        modern(3, "resources/templates/list", json!({})),
        modern(4, "prompts/list", json!({})),
    ]
    .concat();
    let out = run(&input);
    assert_eq!(out.len(), 4);
    let names: Vec<_> =
        out[0]["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tools are listed in a deterministic order");
    assert!(names.contains(&"echo") && names.contains(&"test_simple_text"));
    for t in out[0]["result"]["tools"].as_array().unwrap() {
        assert!(t["description"].is_string() && t["inputSchema"]["type"] == "object");
    }
    assert_eq!(out[1]["result"]["resources"][0]["uri"], "test://static-binary");
    assert_eq!(out[2]["result"]["resourceTemplates"][0]["uriTemplate"], "test://template/{id}/data");
    assert_eq!(out[3]["result"]["prompts"].as_array().unwrap().len(), 5);
    for (i, def) in
        ["ListToolsResult", "ListResourcesResult", "ListResourceTemplatesResult", "ListPromptsResult"]
            .iter()
            .enumerate()
    {
        assert!(out[i]["result"].get("nextCursor").is_none());
        modern_results_carry_envelope(&out[i]["result"], true);
        check(Rev::V2026_07_28, def, &out[i]);
    }
}

fn call(id: i64, name: &str, args: Option<Value>) -> String {
    let mut p = json!({ "name": name });
    if let Some(a) = args {
        p["arguments"] = a;
    }
    modern(id, "tools/call", p)
}

#[test]
fn modern_tool_calls_of_every_content_type() {
    let input = [
        call(1, "test_simple_text", None),
        call(2, "test_image_content", Some(json!({}))),
        call(3, "test_audio_content", None),
        call(4, "test_embedded_resource", None),
        call(5, "test_multiple_content_types", None),
        call(6, "test_error_handling", None),
        call(7, "echo", Some(json!({"text": "héllo \"world\"\n"}))),
    ]
    .concat();
    let out = run(&input);
    assert_eq!(out.len(), 7);
    for (i, o) in out.iter().enumerate() {
        assert_eq!(o["id"], i as i64 + 1);
        modern_results_carry_envelope(&o["result"], false);
        check(Rev::V2026_07_28, "CallToolResult", o);
    }
    assert_eq!(out[0]["result"]["content"][0]["text"], mcp_fixture::SIMPLE_TEXT);
    assert_eq!(out[1]["result"]["content"][0]["type"], "image");
    assert_eq!(out[2]["result"]["content"][0]["mimeType"], "audio/wav");
    assert_eq!(out[3]["result"]["content"][0]["resource"]["uri"], "test://embedded-resource");
    let kinds: Vec<_> =
        out[4]["result"]["content"].as_array().unwrap().iter().map(|c| c["type"].clone()).collect();
    assert_eq!(kinds, [json!("text"), json!("image"), json!("resource")]);
    assert_eq!(out[5]["result"]["isError"], true);
    assert_eq!(out[6]["result"]["content"], json!([{"type": "text", "text": "héllo \"world\"\n"}]));
}

#[test]
fn modern_resource_reads() {
    let input = [
        modern(1, "resources/read", json!({"uri": "test://static-text"})),
        modern(2, "resources/read", json!({"uri": "test://static-binary"})),
        modern(3, "resources/read", json!({"uri": "test://template/123/data"})),
        modern(4, "resources/read", json!({"uri": "test://nonexistent-resource-for-conformance-testing"})),
        modern(5, "resources/read", json!({"uri": "test://template/a/b/data"})),
    ]
    .concat();
    let out = run(&input);
    assert_eq!(out[0]["result"]["contents"][0]["text"], mcp_fixture::STATIC_TEXT);
    assert_eq!(out[1]["result"]["contents"][0]["mimeType"], "image/png");
    assert!(out[1]["result"]["contents"][0]["blob"].is_string());
    assert!(out[2]["result"]["contents"][0]["text"].as_str().unwrap().contains("123"));
    for o in &out[..3] {
        modern_results_carry_envelope(&o["result"], true);
        check(Rev::V2026_07_28, "ReadResourceResult", o);
    }
    for (o, uri) in out[3..]
        .iter()
        .zip(["test://nonexistent-resource-for-conformance-testing", "test://template/a/b/data"])
    {
        assert_eq!(o["error"]["code"], -32602);
        assert_eq!(o["error"]["data"]["uri"], uri);
        check(Rev::V2026_07_28, "", o);
    }
}

#[test]
fn modern_prompts() {
    let input = [
        modern(1, "prompts/get", json!({"name": "test_simple_prompt"})),
        modern(2, "prompts/get", json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "testValue1", "arg2": "testValue2"}})),
        modern(3, "prompts/get", json!({"name": "test_prompt_with_embedded_resource", "arguments": {"resourceUri": "test://example-resource"}})),
        modern(4, "prompts/get", json!({"name": "test_prompt_with_image"})),
    ]
    .concat();
    let out = run(&input);
    assert_eq!(out.len(), 4);
    for o in &out {
        modern_results_carry_envelope(&o["result"], false);
        check(Rev::V2026_07_28, "GetPromptResult", o);
    }
    let text = out[1]["result"].to_string();
    assert!(text.contains("testValue1") && text.contains("testValue2"));
    assert_eq!(out[2]["result"]["messages"][0]["content"]["type"], "resource");
    assert_eq!(out[2]["result"]["messages"][0]["content"]["resource"]["uri"], "test://example-resource");
    assert_eq!(out[3]["result"]["messages"][0]["content"]["type"], "image");
}

#[test]
fn modern_ping_and_removed_methods_are_method_not_found() {
    for m in ["ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "unknown/method"] {
        let out = run(&modern(9, m, json!({})));
        assert_eq!(out[0]["error"]["code"], -32601, "{m}");
        assert_eq!(out[0]["id"], 9);
        check(Rev::V2026_07_28, "", &out[0]);
    }
}

/// The legacy session: initialize, initialized, then every method, for both revisions.
#[test]
fn legacy_sessions() {
    for v in ["2025-11-25", "2025-06-18"] {
        let rev = rev_of(v);
        let input = [
            legacy_open(v),
            request(1, "ping", json!({})),
            request(2, "tools/list", json!({})),
            request(3, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})),
            request(4, "resources/list", json!({})),
            request(5, "resources/templates/list", json!({})),
            request(6, "resources/read", json!({"uri": "test://static-text"})),
            request(7, "prompts/list", json!({})),
            request(8, "prompts/get", json!({"name": "test_simple_prompt"})),
            request(9, "resources/read", json!({"uri": "test://missing"})),
            notification("notifications/cancelled", json!({"requestId": 77})),
            request(10, "ping", Value::Null).replace(",\"params\":null", ""),
        ]
        .concat();
        let out = run(&input);
        assert_eq!(out.len(), 11, "{v}: {out:#?}");
        let init = &out[0];
        assert_eq!(init["result"]["protocolVersion"], v);
        assert_eq!(init["result"]["serverInfo"]["name"], "mcp-engine-everything");
        check(rev, "InitializeResult", init);
        let defs = [
            "EmptyResult",
            "ListToolsResult",
            "CallToolResult",
            "ListResourcesResult",
            "ListResourceTemplatesResult",
            "ReadResourceResult",
            "ListPromptsResult",
            "GetPromptResult",
        ];
        for (o, def) in out[1..9].iter().zip(defs) {
            let r = &o["result"];
            assert!(
                r.get("resultType").is_none() && r.get("_meta").is_none() && r.get("ttlMs").is_none(),
                "{v} {def}: {o}"
            );
            check(rev, def, o);
        }
        assert_eq!(out[1]["result"], json!({}));
        assert_eq!(out[3]["result"]["content"][0]["text"], "x");
        assert_eq!(out[9]["error"]["code"], -32002, "legacy resource-not-found code");
        assert_eq!(out[9]["error"]["data"]["uri"], "test://missing");
        check(rev, "", &out[9]);
        assert_eq!(out[10]["result"], json!({}), "ping without params");
    }
}

#[test]
fn initialize_negotiates_a_supported_legacy_revision() {
    for (asked, got) in [
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let out = run(&legacy_open(asked));
        assert_eq!(out.len(), 1, "initialized is a notification");
        assert_eq!(out[0]["result"]["protocolVersion"], got, "asked {asked}");
    }
    let out = run(&format!("{}{}", legacy_open("2025-11-25"), legacy_open("2025-11-25")));
    assert_eq!(out[1]["error"]["code"], -32600, "a second initialize is refused");
}

#[test]
fn legacy_request_named_by_meta_is_served_with_legacy_semantics() {
    let out =
        run(&request(1, "ping", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}})));
    assert_eq!(out[0]["result"], json!({}));
    let out = run(&request(
        1,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-06-18"}}),
    ));
    assert!(out[0]["result"].get("resultType").is_none());
    check(Rev::V2025_06_18, "ListToolsResult", &out[0]);
}

#[test]
fn a_modern_request_on_a_legacy_stream_is_served_statelessly() {
    let out = run(&format!("{}{}", legacy_open("2025-06-18"), modern(1, "tools/list", json!({}))));
    modern_results_carry_envelope(&out[1]["result"], true);
    check(Rev::V2026_07_28, "ListToolsResult", &out[1]);
}

#[test]
fn icons_are_omitted_for_2025_06_18_only() {
    use mcp_engine::{Catalog, Config, Engine, Icon, Tool};
    let catalog = || {
        Catalog::builder()
            .tool(Tool::new("t").description("d").icon(Icon::new("https://example.com/i.png")))
            .build()
            .unwrap()
    };
    let listing = |input: String| {
        let mut e = Engine::new(Config::new("s", "1"), catalog());
        mcp_tests::lines(&mcp_tests::drive(&mut e, input.as_bytes(), &[usize::MAX]))
    };
    let modern_out = listing(modern(1, "tools/list", json!({})));
    assert_eq!(modern_out[0]["result"]["tools"][0]["icons"][0]["src"], "https://example.com/i.png");
    let o1125 = listing(format!("{}{}", legacy_open("2025-11-25"), request(1, "tools/list", json!({}))));
    assert!(o1125[1]["result"]["tools"][0]["icons"].is_array());
    check(Rev::V2025_11_25, "ListToolsResult", &o1125[1]);
    let o0618 = listing(format!("{}{}", legacy_open("2025-06-18"), request(1, "tools/list", json!({}))));
    assert!(o0618[1]["result"]["tools"][0].get("icons").is_none());
    check(Rev::V2025_06_18, "ListToolsResult", &o0618[1]);
}

#[test]
fn official_2026_examples_decode_and_requests_are_served() {
    let mut served = 0;
    for (ty, file, msg) in mcp_tests::spec::examples_2026() {
        // Every example is one JSON message; the engine must accept its framing.
        let Some(method) = msg.get("method").and_then(Value::as_str) else { continue };
        if msg.get("id").is_none() || !ty.ends_with("Request") {
            continue;
        }
        let out = run(&format!("{msg}\n"));
        assert_eq!(out.len(), 1, "{ty}/{file}: exactly one response");
        let o = &out[0];
        assert_eq!(o["id"], msg["id"], "{ty}/{file}: the id is echoed with its type");
        // Requests for names the fixture lacks get a clean JSON-RPC error; all responses are schema-valid.
        if msg.get("jsonrpc").is_none() {
            // An MRTR input request object (server to client), not a JSON-RPC message.
            assert_eq!(o["error"]["code"], -32600, "{ty}/{file}");
        } else if o.get("error").is_some() {
            let code = o["error"]["code"].as_i64().unwrap();
            assert!([-32601, -32602].contains(&code), "{ty}/{file} ({method}): {o}");
        }
        check(Rev::V2026_07_28, "Result", o);
        served += 1;
    }
    assert!(served >= 10, "only {served} example requests found");
}

#[test]
fn progress_notifications_precede_the_result_on_stdio() {
    let mut p = json!({"name": "test_tool_with_progress"});
    p["_meta"] = mcp_tests::modern_meta();
    p["_meta"]["progressToken"] = json!("p1");
    let input = request(1, "tools/call", p);
    let out = run(&input);
    assert_eq!(out.len(), 4, "{out:#?}");
    let mut last = -1.0;
    for n in &out[..3] {
        assert_eq!(n["method"], "notifications/progress");
        assert_eq!(n["params"]["progressToken"], "p1");
        let p = n["params"]["progress"].as_f64().unwrap();
        assert!(p > last);
        last = p;
        assert_valid(Rev::V2026_07_28, "ProgressNotification", n);
    }
    assert_eq!(out[3]["id"], 1);
    // Without a progress token, no notification.
    let out = run(&modern(2, "tools/call", json!({"name": "test_tool_with_progress"})));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], 2);
}

#[test]
fn log_messages_follow_the_requested_level() {
    let call = |level: Option<&str>| {
        let mut p = json!({"name": "test_logging_tool"});
        p["_meta"] = mcp_tests::modern_meta();
        if let Some(l) = level {
            p["_meta"]["io.modelcontextprotocol/logLevel"] = json!(l);
        }
        request(1, "tools/call", p)
    };
    for (level, messages) in [(None, 0), (Some("debug"), 3), (Some("info"), 3), (Some("warning"), 0)] {
        let out = run(&call(level));
        assert_eq!(out.len(), messages + 1, "{level:?}: {out:#?}");
        for m in &out[..messages] {
            assert_eq!(m["method"], "notifications/message");
            assert_eq!(m["params"]["level"], "info");
            assert_valid(Rev::V2026_07_28, "LoggingMessageNotification", m);
        }
        assert_eq!(out[messages]["id"], 1);
    }
    // Session-bound: logging/setLevel sets the stream's level.
    let input = [
        legacy_open("2025-11-25"),
        request(1, "tools/call", json!({"name": "test_logging_tool"})),
        request(2, "logging/setLevel", json!({"level": "info"})),
        request(3, "tools/call", json!({"name": "test_logging_tool"})),
        request(4, "logging/setLevel", json!({"level": "loud"})),
    ]
    .concat();
    let out = run(&input);
    let methods: Vec<_> = out.iter().map(|o| o["method"].as_str().unwrap_or("-").to_owned()).collect();
    assert_eq!(methods.iter().filter(|m| *m == "notifications/message").count(), 3, "{out:#?}");
    assert_eq!(out.last().unwrap()["error"]["code"], -32602);
    check(Rev::V2025_11_25, "EmptyResult", &out[2]);
}

#[test]
fn completion_for_prompts_and_templates() {
    let input = [
        modern(1, "completion/complete", json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": "test"}})),
        modern(2, "completion/complete", json!({"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"}, "argument": {"name": "id", "value": "1"}, "context": {"arguments": {}}})),
        modern(3, "completion/complete", json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "arg1", "value": ""}})),
        modern(4, "completion/complete", json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "zzz", "value": ""}})),
        modern(5, "completion/complete", json!({"ref": {"type": "ref/other"}, "argument": {"name": "a", "value": ""}})),
    ]
    .concat();
    let out = run(&input);
    assert_eq!(
        out[0]["result"]["completion"],
        json!({"values": ["test-value-1", "test-value-2", "testing"], "total": 3, "hasMore": false})
    );
    assert_eq!(out[1]["result"]["completion"]["values"], json!(["1", "123"]));
    for o in &out[..2] {
        modern_results_carry_envelope(&o["result"], false);
        check(Rev::V2026_07_28, "CompleteResult", o);
    }
    for o in &out[2..] {
        assert_eq!(o["error"]["code"], -32602, "{o}");
    }
    let d = run(&modern(9, "server/discover", json!({})));
    assert!(d[0]["result"]["capabilities"]["completions"].is_object());
}

#[test]
fn completion_answers_are_capped_deduplicated_and_truthful() {
    use mcp_engine::{Catalog, Config, Engine, Event, Instant, Prompt, PromptArgument};
    let mut cfg = Config::new("s", "1");
    cfg.completions(true);
    let catalog =
        Catalog::builder().prompt(Prompt::new("p").argument(PromptArgument::new("a"))).build().unwrap();
    let mut e = Engine::new(cfg, catalog);
    let req = modern(
        1,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}),
    );
    e.handle_input(Instant::ZERO, req.as_bytes());
    let Some(Event::Complete(c)) = e.poll_event() else { panic!("a completion event") };
    let many: Vec<String> = (0..150).map(|i| format!("v{}", i % 120)).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    c.answer(&refs, Some(5), false).unwrap();
    let out = mcp_tests::lines(e.pending_output());
    let completion = &out[0]["result"]["completion"];
    assert_eq!(completion["values"].as_array().unwrap().len(), 100);
    assert_eq!(completion["values"][0], "v0");
    assert_eq!(completion["total"], 120, "never less than the distinct values given");
    assert_eq!(completion["hasMore"], true);
}

#[test]
fn completion_is_method_not_found_unless_the_host_provides_it() {
    use mcp_engine::{Config, Engine};
    let mut e = Engine::new(Config::new("s", "1"), mcp_fixture::catalog());
    let req = modern(
        1,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "test_simple_prompt"}, "argument": {"name": "a", "value": ""}}),
    );
    let out = mcp_tests::lines(&mcp_tests::drive(&mut e, req.as_bytes(), &[usize::MAX]));
    assert_eq!(out[0]["error"]["code"], -32601);
}
