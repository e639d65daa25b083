//! One value for one name: a request whose `params` repeat a member name at any depth is
//! refused (`-32602`, HTTP 400) before anything reads it, on every method and both
//! transports, so the `Mcp-Param-*` header matcher, the schema validator and the host can
//! never see different values for one name (`docs/decisions.md`, decision 15).
//!
//! Frames with repeated names cannot be built with `serde_json::Value` (it keeps one), so
//! they are written out by hand here.

use mcp_engine::{Catalog, Config, Engine, Event, Instant, Tool};
use mcp_tests::wire::{Client, client, client_with, config, parse_responses};
use mcp_tests::{drain_with, drive, everything_engine, lines, modern_meta};
use serde_json::{Value, json};

/// A `tools/call`, `prompts/get`, ... line with `params` written exactly as given (its
/// `_meta` is appended, unless `params` already names one).
fn frame(id: u32, method: &str, params: &str) -> String {
    let params = if params.contains("\"_meta\"") {
        params.to_owned()
    } else {
        let body = params.strip_prefix('{').and_then(|p| p.strip_suffix('}')).expect("an object");
        let sep = if body.is_empty() { "" } else { "," };
        format!("{{{body}{sep}\"_meta\":{}}}", modern_meta())
    };
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{params}}}\n")
}

/// Runs `input` through a fixture engine; returns the output and how many events the host
/// was handed.
fn stdio(input: &str) -> (Vec<Value>, usize) {
    let mut e = everything_engine();
    let mut events = 0;
    let mut out = Vec::new();
    e.handle_input(Instant::ZERO, input.as_bytes());
    drain_with(
        &mut e,
        &mut |ev| {
            events += 1;
            mcp_fixture::respond(ev);
        },
        &mut out,
    );
    (lines(&out), events)
}

/// Asserts that `input` (one request, id 1) is refused for repeating `name`, and that the
/// host never saw it.
#[track_caller]
fn assert_refused(input: &str, name: &str) {
    let (out, events) = stdio(input);
    assert_eq!(events, 0, "the host never sees it: {input}");
    assert_eq!(out.len(), 1, "{out:?}");
    let error = &out[0]["error"];
    assert_eq!(out[0]["id"], 1, "{input}");
    assert_eq!(error["code"], -32602, "{input}: {error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(&format!("\"{name}\"")), "the message names {name}: {message}");
}

#[test]
fn repeated_names_at_any_depth_are_refused_over_stdio() {
    let cases = [
        // Depth 1: `params` itself.
        (r#"{"name":"echo","name":"test_simple_text","arguments":{"text":"a"}}"#, "name"),
        (r#"{"name":"echo","arguments":{"text":"a"},"arguments":{"text":"b"}}"#, "arguments"),
        // Depth 2 and 3.
        (r#"{"name":"echo","arguments":{"text":"a","text":"b"}}"#, "text"),
        (r#"{"name":"echo","arguments":{"text":"a","x":{"y":{"z":1,"z":2}}}}"#, "z"),
        // Deep inside arrays.
        (
            r#"{"name":"echo","arguments":{"text":"a","list":[1,[{"ok":1},{"k":[{"d":1,"e":2,"d":3}]}]]}}"#,
            "d",
        ),
    ];
    for (params, name) in cases {
        assert_refused(&frame(1, "tools/call", params), name);
    }
}

#[test]
fn repeated_names_in_meta_are_refused() {
    let meta = modern_meta().to_string();
    let body = meta.strip_prefix('{').unwrap().strip_suffix('}').unwrap();
    // The revision named twice (a validator and a router could read different ones).
    let twice = format!(
        r#"{{"name":"echo","arguments":{{"text":"a"}},"_meta":{{{body},"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}}"#
    );
    assert_refused(&frame(1, "tools/call", &twice), "io.modelcontextprotocol/protocolVersion");
    let token = format!(
        r#"{{"name":"echo","arguments":{{"text":"a"}},"_meta":{{{body},"progressToken":1,"progressToken":2}}}}"#
    );
    assert_refused(&frame(1, "tools/call", &token), "progressToken");
    let caps = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"sampling":{"tools":{}}}}}"#;
    assert_refused(&frame(1, "tools/list", caps), "sampling");
}

#[test]
fn repeated_prompt_arguments_never_reach_the_host() {
    let params =
        r#"{"name":"test_prompt_with_arguments","arguments":{"arg1":"one","arg2":"two","arg1":"three"}}"#;
    assert_refused(&frame(1, "prompts/get", params), "arg1");
    // The same request without the repetition is served with the values given.
    let params = r#"{"name":"test_prompt_with_arguments","arguments":{"arg1":"one","arg2":"two"}}"#;
    let (out, events) = stdio(&frame(1, "prompts/get", params));
    assert_eq!(events, 1);
    let text = out[0]["result"]["messages"][0]["content"]["text"].as_str().unwrap();
    assert_eq!(text, "Prompt with arguments: arg1='one', arg2='two'");
}

#[test]
fn every_method_refuses_repeated_params() {
    for (method, params) in [
        ("tools/list", r#"{"cursor":"a","cursor":"b"}"#),
        ("resources/read", r#"{"uri":"test://static-text","uri":"test://other"}"#),
        ("resources/templates/list", r#"{"x":{"a":1,"a":1}}"#),
        ("prompts/list", r#"{"x":[{"a":1,"a":1}]}"#),
        ("completion/complete", r#"{"ref":{"type":"ref/prompt","name":"a","name":"b"}}"#),
        ("server/discover", r#"{"x":{"a":null,"a":null}}"#),
        ("no/such/method", r#"{"a":1,"a":1}"#),
    ] {
        let name = if method == "resources/read" { "uri" } else { "" };
        let input = frame(1, method, params);
        let (out, events) = stdio(&input);
        assert_eq!(events, 0, "{method}");
        assert_eq!(out[0]["error"]["code"], -32602, "{method}: {}", out[0]);
        if !name.is_empty() {
            assert!(out[0]["error"]["message"].as_str().unwrap().contains(name));
        }
    }
    // A legacy session, and a session-bound revision, refuse them too.
    let input = format!(
        "{}{}",
        mcp_tests::legacy_open("2025-11-25"),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"a\",\"text\":\"b\"}}}\n"
    );
    let (out, events) = stdio(&input);
    assert_eq!(events, 0);
    assert_eq!(out[1]["id"], 1);
    assert_eq!(out[1]["error"]["code"], -32602, "{}", out[1]);
}

#[test]
fn repeated_top_level_members_are_invalid_requests() {
    let cases = [
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"ping","params":{}}"#, Some(1)),
        (r#"{"jsonrpc":"2.0","id":1,"params":{},"method":"tools/list","params":{"a":1}}"#, Some(1)),
        // The first id is echoed, as for every other refusal.
        (r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#, Some(1)),
        (r#"{"jsonrpc":"2.0","id":1,"method":"ping","id":[]}"#, Some(1)),
        // No id: nothing to echo.
        (r#"{"jsonrpc":"2.0","params":{},"params":{}}"#, None),
    ];
    for (input, id) in cases {
        let (out, events) = stdio(&format!("{input}\n"));
        assert_eq!(events, 0);
        assert_eq!(out.len(), 1, "{input}");
        assert_eq!(out[0]["error"]["code"], -32600, "{input}: {}", out[0]);
        match id {
            Some(id) => assert_eq!(out[0]["id"], id, "{input}"),
            None => assert!(out[0].get("id").is_none(), "no id to echo: {}", out[0]),
        }
    }
}

#[test]
fn a_notification_with_repeated_names_is_ignored() {
    // Two requests wait on one tool: a cancellation naming a request id twice (its two
    // values disagree) is ignored; a proper one is acted on.
    let mut cfg = Config::new("s", "1");
    cfg.max_in_flight(4);
    let mut e = Engine::new(cfg, Catalog::builder().tool(Tool::new("slow")).build().unwrap());
    let input = [
        mcp_tests::modern("A", "tools/call", json!({"name": "slow"})),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"A\",\"requestId\":\"B\"}}\n".to_owned(),
    ]
    .concat();
    e.handle_input(Instant::ZERO, input.as_bytes());
    let mut events = Vec::new();
    while let Some(ev) = e.poll_event() {
        events.push(matches!(ev, Event::Cancelled(_)));
    }
    assert_eq!(events, [false], "the call is handed out and not cancelled");
    assert!(e.pending_output().is_empty(), "a notification is never answered");
}

/// An engine with one tool `t` that takes any object.
fn any_object_tool(cfg: Config) -> Engine {
    let tool = Tool::new("t").input_schema(json!({"type": "object"}));
    Engine::new(cfg, Catalog::builder().tool(tool).build().unwrap())
}

/// Feeds a `tools/call` of `t` with `args`; returns the arguments the host was handed, or
/// the engine's answer when it handed out nothing.
fn call_t(e: &mut Engine, args: &str) -> Result<Value, Value> {
    let input = frame(1, "tools/call", &format!(r#"{{"name":"t","arguments":{args}}}"#));
    assert_eq!(e.handle_input(Instant::ZERO, input.as_bytes()), input.len());
    match e.poll_event() {
        Some(Event::CallTool(call)) => Ok(call.arguments.deserialize::<Value>().unwrap()),
        Some(_) => panic!("not a tool call"),
        None => Err(lines(e.pending_output()).remove(0)),
    }
}

#[test]
fn the_same_name_in_sibling_objects_is_not_a_repetition() {
    for args in [
        r#"{"a":{"k":1},"b":{"k":2}}"#,
        r#"{"list":[{"k":1},{"k":1}],"k":{"k":{"k":1}}}"#,
        r#"{"k":"k","K":"k","k ":1,"k\u0000":2}"#,
        // Past the pair-by-pair bound: sorted, with long shared prefixes.
        r#"{"prefix-1":1,"prefix-2":2,"prefix-3":3,"prefix-4":4,"prefix-5":5,"prefix-6":6,"prefix-7":7,"prefix-8":8,"prefix-9":9,"prefix-":0,"prefix":0}"#,
    ] {
        let mut e = any_object_tool(Config::new("s", "1"));
        let expected: Value = serde_json::from_str(args).unwrap();
        assert_eq!(call_t(&mut e, args), Ok(expected), "{args}");
    }
}

/// Objects far past the pair-by-pair bound: 100,000 distinct names pass; the same with one
/// name repeated (first and last, or sharing a long prefix with all the others) is refused.
#[test]
fn objects_with_many_members_are_checked() {
    let many = |n: usize, prefix: &str| -> String {
        let members: Vec<String> = (0..n).map(|i| format!("\"{prefix}{i}\":0")).collect();
        members.join(",")
    };
    let mut cfg = Config::new("s", "1");
    cfg.max_frame_len(6_000_000);
    let long = "p".repeat(30);
    let cases = [
        (many(100_000, "k"), None),
        (many(100_000, &long), None),
        (format!("{},\"k0\":1", many(100_000, "k")), Some("k0".to_owned())),
        (format!("{},\"{long}99999\":1", many(100_000, &long)), Some(format!("{long}99999"))),
        (format!("\"x\":1,{},\"x\":2", many(20, "k")), Some("x".to_owned())),
    ];
    for (members, repeated) in cases {
        let mut e = any_object_tool(cfg.clone());
        let got = call_t(&mut e, &format!("{{{members}}}"));
        match repeated {
            None => assert!(got.is_ok_and(|v| v.as_object().unwrap().len() == 100_000)),
            Some(name) => {
                let answer = got.expect_err("refused");
                assert_eq!(answer["error"]["code"], -32602, "{answer}");
                let message = answer["error"]["message"].as_str().unwrap();
                assert!(message.contains(&format!("\"{name}\"")), "{message}");
            }
        }
    }
}

#[test]
fn the_refusal_is_the_same_however_the_frame_is_split() {
    let input =
        frame(1, "tools/call", r#"{"name":"echo","arguments":{"text":"a","x":[{"y":{"z":1,"z":2}}]}}"#);
    let whole = drive(&mut everything_engine(), input.as_bytes(), &[usize::MAX]);
    let refusal = lines(&whole);
    assert_eq!(refusal[0]["error"]["code"], -32602);
    for at in 1..input.len() {
        let split = drive(&mut everything_engine(), input.as_bytes(), &[at, usize::MAX]);
        assert_eq!(split, whole, "split at {at}");
    }
    let bytewise = drive(&mut everything_engine(), input.as_bytes(), &[1]);
    assert_eq!(bytewise, whole, "byte by byte");
}

/// A POST of `body` (written as given) with the headers a conforming client sends plus
/// `extra`.
fn post_raw(body: &str, method: &str, name: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut s =
        String::from("POST /mcp HTTP/1.1\r\nHost: localhost:3000\r\nContent-Type: application/json\r\n");
    s.push_str("Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n");
    s.push_str(&format!("Mcp-Method: {method}\r\nMcp-Name: {name}\r\n"));
    for (k, v) in extra {
        s.push_str(&format!("{k}: {v}\r\n"));
    }
    s.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.into_bytes()
}

fn region_call(arguments: &str) -> Vec<u8> {
    let body = frame(1, "tools/call", &format!(r#"{{"name":"test_x_mcp_header","arguments":{arguments}}}"#));
    post_raw(body.trim_end(), "tools/call", "test_x_mcp_header", &[("Mcp-Param-Region", "us-west1")])
}

/// The header matcher reads one value and the host another: a second `region` used to
/// pass the `Mcp-Param-Region` check and run the tool with `eu-central1`.
#[test]
fn a_repeated_argument_cannot_bypass_the_header_check_over_http() {
    let mut c: Client = client();
    let r = parse_responses(&c.feed(&region_call(r#"{"region":"us-west1"}"#), usize::MAX));
    assert_eq!(r[0].status, 200);
    assert_eq!(r[0].json()["result"]["content"][0]["text"], "region: us-west1", "the honest call runs");

    let mut c = client();
    let raw = region_call(r#"{"region":"us-west1","region":"eu-central1"}"#);
    let r = parse_responses(&c.feed(&raw, usize::MAX));
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].status, 400);
    let v = r[0].json();
    assert_eq!(v["id"], 1);
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("\"region\""));
    assert!(v.get("result").is_none(), "the tool never ran: {v}");
    assert!(!r[0].closes(), "a refused request leaves the connection usable");
    // Split anywhere, the refusal is the same.
    for chunk in [1, 7, 64] {
        let mut c = client();
        let split = parse_responses(&c.feed(&raw, chunk));
        assert_eq!(split[0].status, 400, "chunks of {chunk}");
        assert_eq!(split[0].json(), v, "chunks of {chunk}");
    }
}

#[test]
fn repeated_prompt_arguments_are_refused_over_http() {
    let body = frame(
        3,
        "prompts/get",
        r#"{"name":"test_prompt_with_arguments","arguments":{"arg1":"one","arg2":"two","arg2":"three"}}"#,
    );
    let mut c = client_with(config(), mcp_fixture::catalog());
    let raw = post_raw(body.trim_end(), "prompts/get", "test_prompt_with_arguments", &[]);
    let r = parse_responses(&c.feed(&raw, usize::MAX));
    assert_eq!(r[0].status, 400);
    assert_eq!(r[0].json()["error"]["code"], -32602);
    assert_eq!(r[0].json()["id"], 3);
}
