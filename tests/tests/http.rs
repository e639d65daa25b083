//! Streamable HTTP (2026-07-28) through the engine's HTTP codec: one table row per
//! refusal rule and status, header mirroring, keep-alive, pipelining, limits, timers.

use mcp_engine::Commands;
use std::time::Duration;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent, Verdict};
use mcp_engine::{Catalog, Config, Instant, Tool};
use mcp_fixture as everything;
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::wire::{Response, client, client_with, config, meta, one, parse_responses, post, req};
use serde_json::{Value, json};

#[test]
fn discover_over_http() {
    let mut c = client();
    let r = one(&mut c, &post(&req(1, "server/discover", json!({})), &[]));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert_valid(Rev::V2026_07_28, "JSONRPCResultResponse", &v);
    assert_valid(Rev::V2026_07_28, "DiscoverResult", &v["result"]);
    assert!(!r.closes());
}

#[test]
fn tool_calls_lists_reads_and_prompts() {
    let mut c = client();
    let cases = [
        (req(1, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})), "CallToolResult"),
        (req(2, "tools/list", json!({})), "ListToolsResult"),
        (req(3, "resources/read", json!({"uri": "test://static-text"})), "ReadResourceResult"),
        (req(4, "prompts/get", json!({"name": "test_simple_prompt"})), "GetPromptResult"),
    ];
    for (body, def) in cases {
        let r = one(&mut c, &post(&body, &[]));
        assert_eq!(r.status, 200, "{def}");
        let v = r.json();
        assert_eq!(v["id"], body["id"]);
        assert_valid(Rev::V2026_07_28, def, &v["result"]);
    }
}

#[test]
fn refusals_before_the_body_close_the_connection() {
    let body = req(1, "server/discover", json!({})).to_string();
    let get = b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec();
    let delete = b"DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n".to_vec();
    let elsewhere =
        format!("POST /other HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("GET", get, 405),
        ("DELETE", delete, 405),
        ("other path", elsewhere.into_bytes(), 404),
        (
            "foreign origin",
            post(&req(1, "server/discover", json!({})), &[("Origin", "http://evil.example.com")]),
            403,
        ),
        ("foreign host", post(&req(1, "server/discover", json!({})), &[("Host", "evil.example.com")]), 403),
        ("no host", post(&req(1, "server/discover", json!({})), &[("Host", "")]), 403),
        (
            "declared body over the cap",
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2000000\r\n\r\n".to_vec(),
            413,
        ),
    ];
    for (what, raw, status) in cases {
        let mut c = client();
        let out = c.feed(&raw, usize::MAX);
        let r = parse_responses(&out);
        assert_eq!(r[0].status, status, "{what}");
        assert!(r[0].closes(), "{what}: connection: close");
        assert!(c.e.wants_close(c.conn), "{what}");
        if status == 405 {
            assert_eq!(r[0].header("allow"), Some("POST"));
        }
    }
}

#[test]
fn loopback_hosts_and_allowed_origins_pass() {
    for host in ["localhost", "localhost:3000", "127.0.0.1:80", "[::1]:3000", "LOCALHOST"] {
        let mut c = client();
        let r = one(&mut c, &post(&req(1, "server/discover", json!({})), &[("Host", host)]));
        assert_eq!(r.status, 200, "{host}");
    }
    let mut c = client();
    let r = one(&mut c, &post(&req(1, "server/discover", json!({})), &[("Origin", "http://localhost:3000")]));
    assert_eq!(r.status, 200);
}

#[test]
fn authorization_refusals_are_opaque_and_close() {
    for (verdict, status) in
        [(Verdict::Unauthenticated, 401), (Verdict::Forbidden, 403), (Verdict::Failed, 500)]
    {
        let mut c = client();
        c.verdict = verdict;
        let r = one(&mut c, &post(&req(1, "server/discover", json!({})), &[]));
        assert_eq!(r.status, status);
        assert!(r.body.is_empty(), "the reason never reaches the caller");
        assert!(r.closes());
    }
}

#[test]
fn body_refusals_keep_the_connection() {
    let mut http = config();
    http.authorize_body(true);
    let mut c = client_with(http, everything::catalog());
    c.body_verdict = Verdict::Forbidden;
    let r = one(&mut c, &post(&req(1, "server/discover", json!({})), &[]));
    assert_eq!(r.status, 403);
    assert!(!r.closes());
    c.body_verdict = Verdict::Allow;
    let r = one(&mut c, &post(&req(2, "server/discover", json!({})), &[]));
    assert_eq!(r.status, 200);
}

fn error_of(r: &Response) -> (u16, i64, Value) {
    let v = r.json();
    (r.status, v["error"]["code"].as_i64().unwrap_or(0), v)
}

#[test]
fn envelope_and_header_rules_in_order() {
    let d = |m: Value| req(1, "server/discover", json!({"_meta": m}));
    let cases: Vec<(&str, Vec<u8>, u16, i64)> = vec![
        (
            "no _meta",
            post(&json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}), &[]),
            400,
            -32602,
        ),
        (
            "no protocolVersion",
            post(&d(json!({"io.modelcontextprotocol/clientCapabilities": {}})), &[]),
            400,
            -32602,
        ),
        (
            "no clientCapabilities",
            post(&d(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"})), &[]),
            400,
            -32602,
        ),
        ("body version differs from header", post(&d(meta("v999.0.0")), &[]), 400, -32020),
        (
            "unsupported version",
            post(&d(meta("v999.0.0")), &[("MCP-Protocol-Version", "v999.0.0")]),
            400,
            -32022,
        ),
        (
            "legacy version over HTTP",
            post(&d(meta("2025-11-25")), &[("MCP-Protocol-Version", "2025-11-25")]),
            400,
            -32022,
        ),
        (
            "no MCP-Protocol-Version",
            post(&d(meta("2026-07-28")), &[("MCP-Protocol-Version", "")]),
            400,
            -32020,
        ),
        ("no Mcp-Method", post(&d(meta("2026-07-28")), &[("Mcp-Method", "")]), 400, -32020),
        ("Mcp-Method differs", post(&d(meta("2026-07-28")), &[("Mcp-Method", "tools/list")]), 400, -32020),
        (
            "Mcp-Method differs in case",
            post(&d(meta("2026-07-28")), &[("Mcp-Method", "Server/Discover")]),
            400,
            -32020,
        ),
        (
            "a repeated Mcp-Method with one bad value",
            post(&d(meta("2026-07-28")), &[("+Mcp-Method", "tools/list")]),
            400,
            -32020,
        ),
        (
            "Mcp-Name differs",
            post(
                &req(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})),
                &[("Mcp-Name", "test_simple_text")],
            ),
            400,
            -32020,
        ),
        (
            "Mcp-Name missing",
            post(&req(1, "resources/read", json!({"uri": "test://static-text"})), &[("Mcp-Name", "")]),
            400,
            -32020,
        ),
        (
            "bad base64",
            post(
                &req(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})),
                &[("Mcp-Name", "=?base64?ZWNob===?=")],
            ),
            400,
            -32020,
        ),
    ];
    for (what, raw, status, code) in cases {
        let mut c = client();
        let r = one(&mut c, &raw);
        let (s, k, v) = error_of(&r);
        assert_eq!((s, k), (status, code), "{what}: {v}");
        assert_eq!(v["id"], 1, "{what}: the id is echoed");
        assert!(!r.closes(), "{what}: refused after the body is read, the connection survives");
        assert_valid(Rev::V2026_07_28, "JSONRPCErrorResponse", &v);
        if code == -32022 {
            assert_eq!(v["error"]["data"]["supported"], json!(["2026-07-28"]));
        }
    }
}

#[test]
fn header_names_are_case_insensitive_and_values_trimmed_and_decoded() {
    let mut c = client();
    let body = req(7, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    let raw = post(
        &body,
        &[
            ("mcp-protocol-version", "  2026-07-28 "),
            ("MCP-METHOD", "tools/call"),
            ("mcp-name", "=?base64?ZWNobw==?="),
        ],
    );
    let r = one(&mut c, &raw);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["result"]["content"][0]["text"], "x");
}

#[test]
fn removed_and_unknown_methods_are_404() {
    for m in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "unknown/method",
    ] {
        let mut c = client();
        let r = one(&mut c, &post(&req(3, m, json!({})), &[]));
        let (s, k, v) = error_of(&r);
        assert_eq!((s, k), (404, -32601), "{m}: {v}");
        assert_eq!(v["id"], 3);
    }
}

#[test]
fn other_errors_are_200_with_the_error_body() {
    let mut c = client();
    let r = one(&mut c, &post(&req(1, "tools/call", json!({"name": "nope"})), &[]));
    assert_eq!(error_of(&r).0, 200);
    assert_eq!(error_of(&r).1, -32602);
    let r = one(&mut c, &post(&req(2, "resources/read", json!({"uri": "test://nonexistent"})), &[]));
    let (s, k, v) = error_of(&r);
    assert_eq!((s, k), (200, -32602));
    assert_eq!(v["error"]["data"]["uri"], "test://nonexistent");
}

#[test]
fn notifications_are_accepted_with_202() {
    let mut c = client();
    let body = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let r = one(&mut c, &post(&body, &[]));
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
}

#[test]
fn keep_alive_and_pipelining_answer_in_order() {
    let mut c = client();
    let mut raw = Vec::new();
    for i in 0..5 {
        raw.extend(post(
            &req(i, "tools/call", json!({"name": "echo", "arguments": {"text": format!("m{i}")}})),
            &[],
        ));
    }
    let rs = c.send(&raw);
    assert_eq!(rs.len(), 5);
    for (i, r) in rs.iter().enumerate() {
        assert_eq!(r.json()["id"], i as i64);
        assert_eq!(r.json()["result"]["content"][0]["text"], format!("m{i}"));
    }
}

#[test]
fn chunking_invariance_over_the_http_codec() {
    let mut raw = Vec::new();
    for i in 0..3 {
        raw.extend(post(&req(i, "tools/call", json!({"name": "echo", "arguments": {"text": "z"}})), &[]));
    }
    raw.extend(post(&req(9, "server/discover", json!({})), &[("Mcp-Method", "x")]));
    let whole = client().feed(&raw, usize::MAX);
    for chunk in [1, 2, 7, 64, 333] {
        assert_eq!(client().feed(&raw, chunk), whole, "chunk {chunk}");
    }
}

#[test]
fn chunked_request_bodies_are_accepted() {
    let body = req(1, "server/discover", json!({})).to_string();
    let (a, b) = body.split_at(10);
    let raw = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    let r = one(&mut client(), raw.as_bytes());
    assert_eq!(r.status, 200);
}

#[test]
fn a_slow_body_gets_408_at_the_deadline() {
    let mut c = client();
    let raw = post(&req(1, "server/discover", json!({})), &[]);
    let cut = raw.len() - 5;
    let out = c.feed(&raw[..cut], usize::MAX);
    assert!(out.is_empty());
    let deadline = c.e.poll_timeout().expect("a body deadline is armed");
    assert_eq!(deadline, Instant::ZERO + Duration::from_secs(15));
    c.e.handle_timeout(Instant::ZERO + Duration::from_secs(14));
    assert!(c.e.pending_output(c.conn).is_empty(), "not before the deadline");
    c.e.handle_timeout(deadline);
    let r = parse_responses(c.e.pending_output(c.conn));
    assert_eq!(r[0].status, 408);
    assert!(r[0].closes());
}

#[test]
fn closing_the_connection_cancels_its_ticket() {
    let mut c = client();
    let raw = post(&req(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})), &[]);
    c.e.handle_input(c.now, c.conn, &raw);
    let mut ticket = None;
    while let Some(ev) = c.e.poll_event() {
        match ev {
            HttpEvent::Authorize(a) => {
                let conn = a.conn;
                c.e.authorize(Instant::ZERO, conn, Verdict::Allow);
            }
            HttpEvent::Mcp(ev) => ticket = Some(ev.ticket()),
            _ => {}
        }
    }
    let ticket = ticket.expect("the call reached the host");
    c.e.handle_closed(Instant::ZERO, c.conn);
    let mut cancelled = false;
    while let Some(ev) = c.e.poll_event() {
        if let HttpEvent::Mcp(mcp_ev) = ev {
            cancelled |= mcp_ev.ticket() == ticket;
        }
    }
    assert!(cancelled, "the host learns of the cancellation");
    assert!(
        c.e.answer_error(ticket, mcp_engine::error::HostError::Internal("late")).is_err(),
        "a late answer is dropped"
    );
}

#[test]
fn mirrored_tool_arguments() {
    let tool = Tool::new("weather").input_schema(json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "days": { "type": "integer", "x-mcp-header": "Days" },
            "exact": { "type": "boolean", "x-mcp-header": "Exact" }
        }
    }));
    let catalog = || Catalog::builder().tool(tool.clone()).build().unwrap();
    let call = |args: Value| req(1, "tools/call", json!({"name": "weather", "arguments": args}));
    let ok_args = json!({"region": "eu-west", "days": 3, "exact": true});
    let good = [("Mcp-Param-Region", "eu-west"), ("mcp-param-days", "3"), ("MCP-PARAM-EXACT", "true")];
    type Case<'a> = (&'a str, Value, Vec<(&'a str, &'a str)>, u16);
    let cases: Vec<Case<'_>> = vec![
        ("all mirrored", ok_args.clone(), good.to_vec(), 200),
        ("integer written as 3.0", ok_args.clone(), vec![good[0], ("Mcp-Param-Days", "3.0"), good[2]], 200),
        ("region differs", ok_args.clone(), vec![("Mcp-Param-Region", "us-east"), good[1], good[2]], 400),
        ("region missing", ok_args.clone(), vec![("Mcp-Param-Region", ""), good[1], good[2]], 400),
        ("boolean in capitals", ok_args.clone(), vec![good[0], good[1], ("Mcp-Param-Exact", "True")], 400),
        (
            "absent argument, no header",
            json!({"days": 3, "exact": true}),
            vec![("Mcp-Param-Region", ""), good[1], good[2]],
            200,
        ),
    ];
    for (what, args, headers, status) in cases {
        let mut c = client_with(config(), catalog());
        let raw = post(&call(args), &headers);
        let out = c.feed(&raw, usize::MAX);
        // A call that passes the headers reaches the host (the fixture has no handler for
        // this tool and answers -32603); one that does not is refused with -32020.
        let rs = parse_responses(&out);
        if status == 200 {
            assert_eq!(rs[0].status, 200, "{what}");
            assert_eq!(rs[0].json()["error"]["code"], -32603, "{what}: reached the host");
        } else {
            assert_eq!(rs[0].status, status, "{what}");
            assert_eq!(rs[0].json()["error"]["code"], -32020, "{what}");
        }
    }
}

#[test]
fn no_more_than_the_cap_is_read_of_a_body_over_it() {
    let mut http = config();
    http.max_body(1000);
    let mut c = client_with(http, everything::catalog());
    let head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut raw = head.as_bytes().to_vec();
    let chunk = format!("{:x}\r\n{}\r\n", 600, "a".repeat(600));
    for _ in 0..10 {
        raw.extend_from_slice(chunk.as_bytes());
    }
    // Feed byte by byte and count what the codec took before it refused.
    let mut taken_before_refusal = 0;
    let mut out = Vec::new();
    for b in raw.chunks(1) {
        let n = c.e.handle_input(c.now, c.conn, b);
        c.drain(&mut out);
        if !out.is_empty() {
            break;
        }
        taken_before_refusal += n;
    }
    let body_taken = taken_before_refusal - head.len();
    assert!(
        body_taken <= 1000 + 2 * 8,
        "read {body_taken} body bytes (chunk framing included) before refusing"
    );
    let r = parse_responses(&out);
    assert_eq!(r[0].status, 413);
    assert!(r[0].closes());
}

#[test]
fn a_whole_exchange_on_the_wire() {
    let mut c = client();
    let out = c.feed(
        &post(&req(1, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})), &[]),
        usize::MAX,
    );
    let text = String::from_utf8(out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: application/json"));
    assert!(head.to_ascii_lowercase().contains(&format!("content-length: {}", body.len())));
    assert_eq!(
        body,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-engine-everything","version":"0.1.0"}}}}"#
    );
}

#[test]
fn an_already_parsed_request_goes_through_every_rule() {
    let mut e = HttpEngine::new(Config::new("s", "1"), config(), everything::catalog());
    let body = req(1, "tools/call", json!({"name": "echo", "arguments": {"text": "parsed"}})).to_string();
    let headers: Vec<(&str, &[u8])> = vec![
        ("host", b"localhost:3000"),
        ("mcp-protocol-version", b"2026-07-28"),
        ("mcp-method", b"tools/call"),
        ("mcp-name", b"echo"),
    ];
    let ex = e.handle_request(Instant::ZERO, None, "POST", "/mcp", &headers, body.as_bytes()).unwrap();
    while let Some(ev) = e.poll_event() {
        match ev {
            HttpEvent::Authorize(a) => {
                let conn = a.conn;
                e.authorize(Instant::ZERO, conn, Verdict::Allow);
            }
            HttpEvent::Mcp(ev) => everything::respond(ev),
            _ => {}
        }
    }
    let r = e.response(ex).expect("answered");
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_slice(r.body).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "parsed");
    e.handle_closed(Instant::ZERO, ex);
    assert_eq!(e.connections(), 0);
    // The same rules: a header mismatch is still -32020.
    let bad: Vec<(&str, &[u8])> =
        vec![("host", b"localhost"), ("mcp-protocol-version", b"2026-07-28"), ("mcp-method", b"x")];
    let ex = e.handle_request(Instant::ZERO, None, "POST", "/mcp", &bad, body.as_bytes()).unwrap();
    while let Some(ev) = e.poll_event() {
        if let HttpEvent::Authorize(a) = ev {
            let conn = a.conn;
            e.authorize(Instant::ZERO, conn, Verdict::Allow);
        }
    }
    let r = e.response(ex).unwrap();
    assert_eq!(r.status, 400);
    let v: Value = serde_json::from_slice(r.body).unwrap();
    assert_eq!(v["error"]["code"], -32020);
}

#[test]
fn a_missing_client_capability_is_400_with_the_required_capabilities() {
    let mut c = client();
    let mut body = req(1, "tools/call", json!({"name": "test_missing_capability"}));
    let r = one(&mut c, &post(&body, &[]));
    let (s, k, v) = error_of(&r);
    assert_eq!((s, k), (400, -32021), "{v}");
    assert_eq!(v["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}));
    assert_valid(Rev::V2026_07_28, "JSONRPCErrorResponse", &v);
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"sampling": {}});
    let r = one(&mut c, &post(&body, &[]));
    assert_eq!(r.status, 200);
    assert!(r.json()["result"]["content"].is_array());
}

#[test]
fn requests_wait_for_a_ticket_slot_instead_of_being_dropped() {
    let mut cfg = Config::new("s", "1");
    cfg.max_in_flight(1);
    let mut e = HttpEngine::new(
        cfg,
        HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone),
        everything::catalog(),
    );
    let h: Vec<(&str, &[u8])> = vec![
        ("host", b"localhost"),
        ("mcp-protocol-version", b"2026-07-28"),
        ("mcp-method", b"tools/call"),
        ("mcp-name", b"echo"),
    ];
    let body = |t: &str| req(1, "tools/call", json!({"name": "echo", "arguments": {"text": t}})).to_string();
    let a = e.handle_request(Instant::ZERO, None, "POST", "/mcp", &h, body("a").as_bytes()).unwrap();
    let first = match e.poll_event() {
        Some(HttpEvent::Mcp(ev)) => ev.ticket(),
        other => panic!("{other:?}"),
    };
    let b = e.handle_request(Instant::ZERO, None, "POST", "/mcp", &h, body("b").as_bytes()).unwrap();
    assert!(e.poll_event().is_none(), "the second call waits for the slot");
    assert!(e.response(b).is_none(), "and is not answered meanwhile");
    e.answer_tool(first, &mcp_engine::ToolOutput::new(&[mcp_engine::Content::text("a")])).unwrap();
    assert_eq!(e.response(a).unwrap().status, 200);
    match e.poll_event() {
        Some(HttpEvent::Mcp(ev)) => everything::respond(ev),
        other => panic!("the waiting call is dispatched once the slot frees: {other:?}"),
    }
    assert!(e.poll_event().is_none(), "drained (this also routes the answer given through the event)");
    let r = e.response(b).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(serde_json::from_slice::<Value>(r.body).unwrap()["result"]["content"][0]["text"], "b");
}

#[test]
fn expect_100_continue_is_answered_before_the_body() {
    let mut c = client();
    let mut raw = post(&req(1, "server/discover", json!({})), &[("Expect", "100-continue")]);
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let body = raw.split_off(split);
    let out = c.feed(&raw, usize::MAX);
    assert_eq!(out, b"HTTP/1.1 100 Continue\r\n\r\n");
    let r = parse_responses(&c.feed(&body, usize::MAX));
    assert_eq!(r[0].status, 200);
}

#[test]
fn a_slow_head_gets_408_at_the_head_timeout() {
    let mut c = client();
    c.feed(b"POST /mcp HTTP/1.1\r\nHost: local", usize::MAX);
    // The head timeout (10 s by default) counts from `open`.
    assert_eq!(c.e.poll_timeout(), Some(Instant::ZERO + Duration::from_secs(10)));
    c.e.handle_timeout(Instant::ZERO + Duration::from_millis(9_999));
    assert!(c.e.pending_output(c.conn).is_empty(), "not before the deadline");
    c.e.handle_timeout(Instant::ZERO + Duration::from_secs(10));
    let r = parse_responses(c.e.pending_output(c.conn));
    assert_eq!(r[0].status, 408);
    assert!(r[0].closes());
}

#[test]
fn progress_turns_the_response_into_an_sse_stream() {
    let mut c = client();
    let mut body = req(1, "tools/call", json!({"name": "test_tool_with_progress"}));
    body["params"]["_meta"]["progressToken"] = json!(7);
    let out = c.feed(&post(&body, &[]), usize::MAX);
    let text = String::from_utf8(out).unwrap();
    let (head, chunked) = text.split_once("\r\n\r\n").unwrap();
    let head = head.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"));
    assert!(head.contains("x-accel-buffering: no"));
    assert!(head.contains("transfer-encoding: chunked"));
    // De-chunk, then read the events.
    let mut rest = chunked.as_bytes();
    let mut data = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).unwrap(), 16).unwrap();
        rest = &rest[line_end + 2..];
        if size == 0 {
            break;
        }
        data.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
    let events: Vec<Value> = String::from_utf8(data)
        .unwrap()
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    assert_eq!(events.len(), 4, "{events:#?}");
    for e in &events[..3] {
        assert_eq!(e["method"], "notifications/progress");
        assert_eq!(e["params"]["progressToken"], 7);
    }
    assert_eq!(events[3]["id"], 1);
    assert_valid(Rev::V2026_07_28, "CallToolResult", &events[3]["result"]);
    // The stream ended cleanly: the connection serves the next request.
    let r = one(&mut c, &post(&req(2, "server/discover", json!({})), &[]));
    assert_eq!(r.status, 200);
}

/// Found by the `http_engine` fuzz target: while the host takes its time to authorize, no
/// deadline runs, so `poll_timeout` never names a moment that has passed.
#[test]
fn no_deadline_runs_while_the_host_authorizes() {
    let mut e = HttpEngine::new(Config::new("s", "1"), config(), everything::catalog());
    let conn = e.open(Instant::ZERO, None).unwrap();
    e.handle_input(Instant::ZERO, conn, &post(&req(1, "server/discover", json!({})), &[]));
    let Some(HttpEvent::Authorize(_)) = e.poll_event() else { panic!("authorization is asked") };
    let later = Instant::ZERO + Duration::from_millis(15_100);
    e.handle_timeout(later);
    assert!(e.poll_timeout().is_none_or(|t| t > later), "{:?}", e.poll_timeout());
    assert!(e.pending_output(conn).is_empty(), "no 408 while the host decides");
    e.authorize(later, conn, Verdict::Allow);
    assert_eq!(parse_responses(e.pending_output(conn))[0].status, 200);
}

/// Found by the `http_engine` fuzz target: an HTTP/1.0 client cannot read a chunked SSE
/// stream, so it gets the answer alone, as JSON.
#[test]
fn http_1_0_gets_json_even_with_progress() {
    let mut c = client();
    let mut body = req(1, "tools/call", json!({"name": "test_tool_with_progress"}));
    body["params"]["_meta"]["progressToken"] = json!(1);
    let mut raw = post(&body, &[]);
    let line_end = raw.iter().position(|&b| b == b'\r').unwrap();
    raw.splice(..line_end, b"POST /mcp HTTP/1.0".iter().copied());
    let r = one(&mut c, &raw);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["id"], 1);
}
