//! The hardened HTTP edge of the engine: every connection has a deadline whenever the
//! peer is the one to act (head, body, keep-alive idle, write progress), connections are
//! shed instead of refused at the limit, and idle connections hold no buffers.

use mcp_engine::Commands;
use std::time::Duration;

use mcp_engine::http::{AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::{Config, Instant};
use mcp_fixture as everything;
use mcp_tests::wire::{parse_responses, post, req};
use serde_json::json;

fn at(secs: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(secs)
}

fn engine_with(http: HttpConfig) -> HttpEngine {
    HttpEngine::new(Config::new("s", "1"), http, everything::catalog())
}

fn engine() -> HttpEngine {
    engine_with(HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone))
}

/// Answers every event with the fixture.
fn drain(e: &mut HttpEngine) {
    while let Some(ev) = e.poll_event() {
        if let HttpEvent::Mcp(ev) = ev {
            everything::respond(ev);
        }
    }
}

/// Sends a `server/discover` on `conn` at `now`, answers it, and returns the output (not
/// consumed).
fn discover(e: &mut HttpEngine, now: Instant, conn: ConnId) -> Vec<u8> {
    let raw = post(&req(1, "server/discover", json!({})), &[]);
    assert_eq!(e.handle_input(now, conn, &raw), raw.len());
    drain(e);
    e.pending_output(conn).to_vec()
}

fn ended(e: &mut HttpEngine) -> Vec<ConnId> {
    std::iter::from_fn(|| e.poll_ended()).collect()
}

#[test]
fn a_connection_that_sends_nothing_is_closed_at_the_head_timeout() {
    let mut e = engine();
    let conn = e.open(at(0), None).unwrap();
    assert_eq!(e.poll_timeout(), Some(at(10)), "waiting for the first byte counts");
    e.handle_timeout(at(9));
    assert!(ended(&mut e).is_empty());
    e.handle_timeout(at(10));
    assert_eq!(ended(&mut e), vec![conn], "closed without a response");
    assert!(e.pending_output(conn).is_empty());
    assert_eq!(e.connections(), 0);
    assert_eq!(e.poll_timeout(), None);
    // The adapter's close of a forgotten connection is harmless.
    e.handle_closed(at(10), conn);
}

#[test]
fn a_dripping_head_is_answered_408_at_the_head_timeout_counted_from_open() {
    let mut e = engine();
    let conn = e.open(at(0), None).unwrap();
    let raw = post(&req(1, "server/discover", json!({})), &[]);
    // One byte a second: the head never completes in time.
    for (i, b) in raw.iter().take(9).enumerate() {
        assert_eq!(e.handle_input(at(i as u64 + 1), conn, std::slice::from_ref(b)), 1);
        assert_eq!(e.poll_timeout(), Some(at(10)), "bytes do not extend the deadline");
    }
    e.handle_timeout(at(10));
    let r = parse_responses(e.pending_output(conn));
    assert_eq!(r[0].status, 408);
    assert!(r[0].closes());
    let n = e.pending_output(conn).len();
    e.consume_output(conn, n);
    assert!(e.wants_close(conn));
}

#[test]
fn a_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let mut e = engine();
    let conn = e.open(at(0), None).unwrap();
    let out = discover(&mut e, at(1), conn);
    assert_eq!(parse_responses(&out)[0].status, 200);
    // The response is not taken yet: the write timeout runs, not the idle one.
    assert_eq!(e.poll_timeout(), Some(at(31)));
    e.consume_output(conn, out.len());
    assert_eq!(e.poll_timeout(), Some(at(31)), "30 s of idleness from the response sent");
    // A second request at 20 s restarts the clock at its response.
    let out = discover(&mut e, at(20), conn);
    e.consume_output(conn, out.len());
    assert_eq!(e.poll_timeout(), Some(at(50)));
    e.handle_timeout(at(49));
    assert!(ended(&mut e).is_empty());
    e.handle_timeout(at(50));
    assert_eq!(ended(&mut e), vec![conn]);
    assert_eq!(e.connections(), 0);
}

#[test]
fn a_peer_that_stops_reading_is_closed_at_the_write_timeout() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.write_timeout(Duration::from_secs(5));
    let mut e = engine_with(http);
    let conn = e.open(at(0), None).unwrap();
    let out = discover(&mut e, at(1), conn);
    assert_eq!(e.poll_timeout(), Some(at(6)));
    // Progress (a part of the output taken) restarts the clock.
    e.handle_timeout(at(4));
    e.consume_output(conn, 10);
    assert_eq!(e.poll_timeout(), Some(at(9)));
    e.handle_timeout(at(9));
    assert_eq!(ended(&mut e), vec![conn], "closed without writing more");
    assert!(e.pending_output(conn).is_empty());
    assert!(out.len() > 10);
}

#[test]
fn pipelined_bytes_of_a_next_request_get_a_head_deadline() {
    let mut e = engine();
    let conn = e.open(at(0), None).unwrap();
    let mut raw = post(&req(1, "server/discover", json!({})), &[]);
    raw.extend_from_slice(b"POST /mcp HTTP/1.1\r\nHost: loc");
    assert_eq!(e.handle_input(at(1), conn, &raw), raw.len());
    drain(&mut e);
    let n = e.pending_output(conn).len();
    e.consume_output(conn, n);
    // The partial second head is due 10 s after it began to be read.
    assert_eq!(e.poll_timeout(), Some(at(11)));
    e.handle_timeout(at(11));
    assert_eq!(parse_responses(e.pending_output(conn))[0].status, 408);
}

#[test]
fn at_the_connection_limit_the_oldest_idle_connection_is_shed() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.max_connections(3);
    let mut e = engine_with(http);
    let a = e.open(at(0), None).unwrap(); // idle, never sent a byte
    let b = e.open(at(0), None).unwrap(); // a partial head
    let c = e.open(at(0), None).unwrap(); // a request in flight (a slow tool)
    assert_eq!(e.handle_input(at(1), b, b"POST /mcp HT"), 12);
    let slow = post(&req(1, "tools/call", json!({"name": "test_tool_with_progress"})), &[]);
    assert_eq!(e.handle_input(at(1), c, &slow), slow.len());
    let ticket = match e.poll_event() {
        Some(HttpEvent::Mcp(ev)) => ev.ticket(),
        other => panic!("{other:?}"),
    };
    // The fourth connection takes the place of `a` (sheddable longest), then of `b`.
    let d = e.open(at(2), None).unwrap();
    assert_eq!(ended(&mut e), vec![a]);
    let f = e.open(at(2), None).unwrap();
    assert_eq!(ended(&mut e), vec![b]);
    assert_eq!(e.connections(), 3);
    // `d` and `f` are sheddable too; make them busy: now nothing can be shed.
    for conn in [d, f] {
        assert_eq!(e.handle_input(at(3), conn, &slow), slow.len());
        assert!(matches!(e.poll_event(), Some(HttpEvent::Mcp(_))));
    }
    assert!(e.open(at(3), None).is_err(), "every connection is busy: refused");
    assert!(ended(&mut e).is_empty());
    // The request in flight on `c` was never touched.
    e.answer_error(ticket, mcp_engine::error::HostError::Internal("x")).unwrap();
    let r = parse_responses(e.pending_output(c));
    assert_eq!(r[0].status, 200);
}

#[test]
fn an_idle_connection_holds_no_buffer() {
    let mut e = engine();
    let conns: Vec<ConnId> = (0..50).map(|_| e.open(at(0), None).unwrap()).collect();
    assert_eq!(e.buffer_use().holding, 0, "opening reserves nothing");
    for &conn in &conns {
        let out = discover(&mut e, at(1), conn);
        e.consume_output(conn, out.len());
    }
    let use_ = e.buffer_use();
    assert_eq!((use_.held, use_.holding), (0, 0), "every buffer went back to the pool: {use_:?}");
    assert!(use_.pooled > 0);
    // Serving one request at a time needs one buffer of each kind.
    assert!(use_.pooled <= 2 * 64 * 1024, "{use_:?}");
}

#[test]
fn expect_100_continue_is_answered_when_everyone_may_call() {
    let mut e = engine();
    let conn = e.open(at(0), None).unwrap();
    let mut raw = post(&req(1, "server/discover", json!({})), &[("Expect", "100-continue")]);
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let body = raw.split_off(split);
    assert_eq!(e.handle_input(at(0), conn, &raw), raw.len());
    assert_eq!(e.pending_output(conn), b"HTTP/1.1 100 Continue\r\n\r\n");
    let n = e.pending_output(conn).len();
    e.consume_output(conn, n);
    assert_eq!(e.handle_input(at(0), conn, &body), body.len());
    drain(&mut e);
    assert_eq!(parse_responses(e.pending_output(conn))[0].status, 200);
}

#[test]
fn many_deadlines_fire_in_order_and_only_once() {
    let mut e = engine();
    let conns: Vec<ConnId> =
        (0..200u64).map(|i| e.open(Instant::ZERO + Duration::from_millis(i), None).unwrap()).collect();
    let mut seen = Vec::new();
    for ms in (0..=10_300u64).step_by(50) {
        e.handle_timeout(Instant::ZERO + Duration::from_millis(ms));
        seen.extend(ended(&mut e));
    }
    assert_eq!(seen, conns, "each connection once, oldest first");
    assert_eq!(e.poll_timeout(), None);
}

fn listen_body(id: i64) -> serde_json::Value {
    req(id, "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }))
}

#[test]
fn a_listen_over_http_1_0_is_refused() {
    let mut cfg = Config::new("s", "1");
    cfg.list_changed(true);
    let mut e = HttpEngine::new(
        cfg,
        HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone),
        everything::catalog(),
    );
    let conn = e.open(at(0), None).unwrap();
    let raw = String::from_utf8(post(&listen_body(1), &[])).unwrap().replacen("HTTP/1.1", "HTTP/1.0", 1);
    assert_eq!(e.handle_input(at(0), conn, raw.as_bytes()), raw.len());
    drain(&mut e);
    let r = parse_responses(e.pending_output(conn));
    assert_eq!(r[0].status, 400);
    let v = r[0].json();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("HTTP/1.0"), "{v}");
    assert_eq!(e.subscriptions(), 0, "no stream was opened");
}

#[test]
fn one_principal_cannot_take_every_listen_stream() {
    use mcp_engine::http::{Principal, Verdict};
    let mut cfg = Config::new("s", "1");
    cfg.list_changed(true).max_subscriptions_per_peer(2);
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let mut e = HttpEngine::new(cfg, http, everything::catalog());
    let listen = |e: &mut HttpEngine, who: &str| {
        let conn = e.open(at(0), None).unwrap();
        let raw = post(&listen_body(1), &[]);
        e.handle_input(at(0), conn, &raw);
        while let Some(ev) = e.poll_event() {
            if let HttpEvent::Authorize(a) = ev {
                let c = a.conn;
                e.authorize(at(0), c, Verdict::AllowAs(Principal::of(who.as_bytes())));
            }
        }
        String::from_utf8(e.pending_output(conn).to_vec()).unwrap()
    };
    for _ in 0..2 {
        let out = listen(&mut e, "alice");
        assert!(out.contains("text/event-stream"), "a stream opens: {out}");
    }
    assert_eq!(e.subscriptions(), 2);
    let refused = parse_responses(listen(&mut e, "alice").as_bytes());
    assert_eq!(refused[0].status, 200, "a method error");
    assert_eq!(refused[0].json()["error"]["code"], -32603);
    assert_eq!(e.subscriptions(), 2);
    // Another principal still gets one.
    listen(&mut e, "bob");
    assert_eq!(e.subscriptions(), 3);
}

fn browser_engine() -> HttpEngine {
    let origins = AllowedOrigins::List(vec!["http://localhost:3000".into()]);
    engine_with(HttpConfig::new(origins, Authorization::Everyone))
}

#[test]
fn a_cors_preflight_from_an_allowed_origin_is_answered() {
    let mut e = browser_engine();
    let conn = e.open(at(0), None).unwrap();
    let raw = b"OPTIONS /mcp HTTP/1.1\r\nHost: localhost:3000\r\nOrigin: http://localhost:3000\r\n\
        Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: mcp-method, mcp-name, content-type\r\n\r\n";
    assert_eq!(e.handle_input(at(0), conn, raw), raw.len());
    let r = parse_responses(e.pending_output(conn));
    assert_eq!(r[0].status, 204);
    assert_eq!(r[0].header("access-control-allow-origin"), Some("http://localhost:3000"));
    assert_eq!(r[0].header("access-control-allow-methods"), Some("POST"));
    assert!(r[0].header("access-control-allow-headers").is_some_and(|h| h.contains("authorization")));
    assert!(r[0].header("access-control-expose-headers").is_some_and(|h| h.contains("mcp-session-id")));
    assert_eq!(r[0].header("content-length"), None, "a 204 has no content-length");
}

#[test]
fn a_cors_preflight_from_another_origin_or_without_a_list_is_refused() {
    let preflight = |origin: &str| {
        format!(
            "OPTIONS /mcp HTTP/1.1\r\nHost: localhost:3000\r\nOrigin: {origin}\r\n\
             Access-Control-Request-Method: POST\r\n\r\n"
        )
    };
    let mut e = browser_engine();
    let conn = e.open(at(0), None).unwrap();
    let raw = preflight("https://evil.example");
    e.handle_input(at(0), conn, raw.as_bytes());
    let r = parse_responses(e.pending_output(conn));
    assert_eq!(r[0].status, 403);
    assert_eq!(r[0].header("access-control-allow-origin"), None);
    // No allow-list (any origin): no CORS at all, OPTIONS is not served.
    let mut e = engine();
    let conn = e.open(at(0), None).unwrap();
    let raw = preflight("http://localhost:3000");
    e.handle_input(at(0), conn, raw.as_bytes());
    let r = parse_responses(e.pending_output(conn));
    assert_eq!(r[0].status, 405);
}

#[test]
fn responses_to_an_allowed_origin_carry_the_cors_headers() {
    let mut e = browser_engine();
    let conn = e.open(at(0), None).unwrap();
    let raw = post(&req(1, "server/discover", json!({})), &[("Origin", "http://localhost:3000")]);
    e.handle_input(at(0), conn, &raw);
    drain(&mut e);
    let out = e.pending_output(conn).to_vec();
    let r = parse_responses(&out);
    assert_eq!(r[0].status, 200);
    assert_eq!(r[0].header("access-control-allow-origin"), Some("http://localhost:3000"));
    assert_eq!(r[0].header("vary"), Some("origin"));
    e.consume_output(conn, out.len());
    // The next request, without an Origin (not a browser): no CORS headers.
    let raw = post(&req(2, "server/discover", json!({})), &[]);
    e.handle_input(at(0), conn, &raw);
    drain(&mut e);
    let r = parse_responses(e.pending_output(conn));
    assert_eq!(r[0].status, 200);
    assert_eq!(r[0].header("access-control-allow-origin"), None);
}

#[test]
fn log_messages_past_the_unsent_bound_are_refused_with_backpressure() {
    let mut cfg = Config::new("s", "1");
    cfg.logging(true);
    let mut e = HttpEngine::new(
        cfg,
        HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone),
        everything::catalog(),
    );
    let conn = e.open(at(0), None).unwrap();
    let mut body = req(1, "tools/call", json!({"name": "test_tool_with_progress"}));
    body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let raw = post(&body, &[]);
    e.handle_input(at(0), conn, &raw);
    let ticket = match e.poll_event() {
        Some(HttpEvent::Mcp(ev)) => ev.ticket(),
        other => panic!("{other:?}"),
    };
    let big = "x".repeat(8 * 1024);
    let mut sent = 0;
    // The peer reads nothing: once 64 KiB wait, the handler is told.
    let refused = loop {
        match e.notify_log(ticket, mcp_engine::LogLevel::Info, None, &big) {
            Ok(()) => sent += 1,
            Err(err) => break err,
        }
        assert!(sent < 100, "never refused");
    };
    assert_eq!(refused, mcp_engine::error::NotifyError::Backpressure);
    assert!((8..=9).contains(&sent), "{sent} sent before the bound");
    assert!(e.pending_output(conn).len() < 64 * 1024 + 9 * 1024);
    // Once the peer reads, messages go out again.
    let n = e.pending_output(conn).len();
    e.consume_output(conn, n);
    assert_eq!(e.notify_log(ticket, mcp_engine::LogLevel::Info, None, &big), Ok(()));
}

#[test]
fn a_request_blocked_behind_unread_output_is_served_once_the_client_reads() {
    let mut e = engine();
    let conn = e.open(at(0), None).unwrap();
    let mut sent = 0;
    // The client sends requests without reading until the engine stops parsing them.
    let mut id = 1;
    while e.pending_output(conn).len() < 64 * 1024 {
        let raw = post(&req(id, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})), &[]);
        assert_eq!(e.handle_input(at(0), conn, &raw), raw.len());
        drain(&mut e);
        id += 1;
        sent += 1;
    }
    let before = e.pending_output(conn).len();
    let raw = post(&req(id, "tools/call", json!({"name": "echo", "arguments": {"text": "last"}})), &[]);
    // The input rule: nothing is read while 64 KiB wait (`input_capacity` is 0).
    assert_eq!(e.input_capacity(conn), 0);
    assert_eq!(e.handle_input(at(0), conn, &raw), 0, "not taken while 64 KiB wait");
    drain(&mut e);
    assert_eq!(e.pending_output(conn).len(), before, "not answered while 64 KiB wait");
    e.consume_output(conn, before);
    assert_eq!(e.handle_input(at(0), conn, &raw), raw.len(), "taken once the client reads");
    drain(&mut e);
    let r = parse_responses(e.pending_output(conn));
    assert_eq!(r.len(), 1, "the blocked request is answered once the client reads ({sent} before)");
    assert_eq!(r[0].json()["result"]["content"][0]["text"], "last");
}
