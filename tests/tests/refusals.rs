//! Every refused HTTP request is recorded with its reason (`HttpEngine::poll_refusal`,
//! `HttpEngine::refusal_counts`) for the adapters to log and count; the responses are
//! what they were (empty bodies stay empty).

use std::time::Duration;

use mcp_engine::http::{
    AllowedOrigins, Authorization, ConnId, HostName, HttpConfig, HttpEngine, HttpEvent, Limits, Rate,
    Refusal, Verdict,
};
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

fn drain(e: &mut HttpEngine) {
    while let Some(ev) = e.poll_event() {
        if let HttpEvent::Mcp(ev) = ev {
            everything::respond(ev);
        }
    }
}

/// Sends `raw` on a new connection at `now`; its status and the refusals recorded.
fn send(e: &mut HttpEngine, now: Instant, raw: &[u8]) -> (ConnId, u16, Vec<(Refusal, u16)>) {
    let conn = e.open(now, None).unwrap();
    e.handle_input(now, conn, raw);
    drain(e);
    let status = parse_responses(e.pending_output(conn)).first().map_or(0, |r| r.status);
    (conn, status, refusals(e))
}

fn refusals(e: &mut HttpEngine) -> Vec<(Refusal, u16)> {
    std::iter::from_fn(|| e.poll_refusal()).map(|r| (r.refusal, r.status)).collect()
}

fn discover() -> serde_json::Value {
    req(1, "server/discover", json!({}))
}

#[test]
fn a_non_loopback_host_is_refused_with_its_reason() {
    let mut e = engine();
    let (conn, status, seen) = send(&mut e, at(0), &post(&discover(), &[("Host", "203.0.113.7:3000")]));
    assert_eq!(status, 403);
    assert_eq!(seen, vec![(Refusal::HostNotAllowed, 403)]);
    // The body is as it was: empty.
    let r = parse_responses(e.pending_output(conn));
    assert!(r[0].body.is_empty());
    assert_eq!(e.refusal_counts().get(Refusal::HostNotAllowed), 1);
    assert_eq!(e.refusal_counts().total(), 1);
    // Allowed by name: served, nothing recorded.
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.allowed_hosts([HostName::parse("mcp.example.com").unwrap()]);
    let mut e = engine_with(http);
    let (_, status, seen) = send(&mut e, at(0), &post(&discover(), &[("Host", "mcp.example.com")]));
    assert_eq!((status, seen), (200, vec![]));
    assert_eq!(e.refusal_counts().total(), 0);
}

#[test]
fn each_refusal_before_the_body_names_its_reason() {
    let mut http =
        HttpConfig::new(AllowedOrigins::List(vec!["https://app.example".into()]), Authorization::Everyone);
    http.max_body(400);
    let mut e = engine_with(http);
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x".repeat(500)}}});
    let cases: Vec<(Vec<u8>, Refusal, u16)> = vec![
        (post(&discover(), &[("Origin", "https://evil.example")]), Refusal::OriginNotAllowed, 403),
        (post(&discover(), &[("Host", "")]), Refusal::HostNotAllowed, 403),
        (post(&big, &[]), Refusal::BodyTooLarge, 413),
        (b"GET /other HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(), Refusal::PathNotFound, 404),
        (
            b"PUT /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n".to_vec(),
            Refusal::MethodNotAllowed,
            405,
        ),
        (
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: x\r\n\r\n".to_vec(),
            Refusal::Malformed,
            400,
        ),
        (
            format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Pad: {}\r\n\r\n", "p".repeat(20_000))
                .into_bytes(),
            Refusal::HeadTooLarge,
            431,
        ),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(), Refusal::VersionNotSupported, 505),
    ];
    for (raw, refusal, status) in cases {
        let (_, got, seen) = send(&mut e, at(0), &raw);
        assert_eq!(got, status, "{refusal:?}");
        assert_eq!(seen, vec![(refusal, status)]);
    }
    assert_eq!(e.refusal_counts().total(), 8);
    assert!(Refusal::ALL.iter().all(|&r| e.refusal_counts().get(r) <= 1));
}

#[test]
fn timeouts_are_refusals_with_their_phase() {
    let mut e = engine();
    // A head that never ends.
    let head = e.open(at(0), None).unwrap();
    e.handle_input(at(0), head, b"POST /mcp HTTP/1.1\r\nHost: local");
    // A body that never ends.
    let body = e.open(at(0), None).unwrap();
    let raw = post(&discover(), &[]);
    e.handle_input(at(0), body, &raw[..raw.len() - 5]);
    e.handle_timeout(at(60));
    let mut seen: Vec<(ConnId, Refusal)> =
        std::iter::from_fn(|| e.poll_refusal()).map(|r| (r.conn, r.refusal)).collect();
    seen.sort_by_key(|(c, _)| *c == body);
    assert_eq!(seen, vec![(head, Refusal::HeadTimeout), (body, Refusal::BodyTimeout)]);
    assert_eq!(parse_responses(e.pending_output(head))[0].status, 408);
}

#[test]
fn the_authorizer_s_verdicts_and_rate_limits_are_refusals() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    http.limits(Limits::none().auth_failures(Some(Rate::per_minute(1))));
    let mut e = engine_with(http);
    let mut verdicts = vec![Verdict::Unavailable, Verdict::Failed, Verdict::Forbidden];
    // The first failure uses the client's one failure a minute: the next request is
    // refused before the authorizer is asked.
    let expect = [
        (Refusal::Forbidden, 403),
        (Refusal::AuthFailures, 429),
        (Refusal::AuthorizerFailed, 500),
        (Refusal::Unavailable, 503),
    ];
    for (i, (refusal, status)) in expect.into_iter().enumerate() {
        // A minute apart but for the second: the failure rate lets one through a minute.
        let now = at(if i == 1 { 1 } else { i as u64 * 60 });
        let conn = e.open(now, Some("192.0.2.9:5000".parse().unwrap())).unwrap();
        e.handle_input(now, conn, &post(&discover(), &[]));
        let mut asked = None;
        while let Some(ev) = e.poll_event() {
            if let HttpEvent::Authorize(a) = ev {
                asked = Some(a.conn);
            }
        }
        if let Some(c) = asked {
            e.authorize(now, c, verdicts.pop().unwrap());
        }
        let got: Vec<_> = std::iter::from_fn(|| e.poll_refusal()).collect();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].refusal, got[0].status, got[0].conn), (refusal, status, conn));
        assert_eq!(got[0].client, Some("192.0.2.9".parse().unwrap()));
    }
}

#[test]
fn responses_after_the_body_are_recorded_too_and_the_queue_is_bounded() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.limits(Limits::none().calls(Some(Rate::per_minute(1))));
    let mut e = engine_with(http);
    let call = req(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    let conn = e.open(at(0), Some("192.0.2.9:5000".parse().unwrap())).unwrap();
    for _ in 0..2 {
        e.handle_input(at(0), conn, &post(&call, &[]));
        drain(&mut e);
    }
    let r = parse_responses(e.pending_output(conn));
    assert_eq!((r[0].status, r[1].status), (200, 429));
    assert_eq!(refusals(&mut e), vec![(Refusal::RateLimited, 429)]);
    // Pipelined in one read: each refusal is recorded.
    let conn = e.open(at(0), Some("192.0.2.9:5001".parse().unwrap())).unwrap();
    let three: Vec<u8> = (0..3).flat_map(|_| post(&call, &[])).collect();
    e.handle_input(at(0), conn, &three);
    drain(&mut e);
    assert_eq!(parse_responses(e.pending_output(conn)).len(), 3);
    assert_eq!(refusals(&mut e), vec![(Refusal::RateLimited, 429); 3]);
    // A message the engine refuses after reading it (no `Mcp-Method`): 400, its reason.
    let (_, status, seen) = send(&mut e, at(0), &post(&discover(), &[("Mcp-Method", "")]));
    assert_eq!((status, seen), (400, vec![(Refusal::BadMessage, 400)]));
    // More refusals than are kept: the oldest go, every one is counted.
    let before = e.refusal_counts().total();
    let n = mcp_engine::http::REFUSALS_KEPT + 10;
    for _ in 0..n {
        let conn = e.open(at(0), None).unwrap();
        e.handle_input(at(0), conn, b"GET /nope HTTP/1.1\r\nHost: localhost\r\n\r\n");
        e.handle_closed(at(0), conn);
    }
    assert_eq!(e.refusal_counts().total(), before + n as u64);
    assert_eq!(refusals(&mut e).len(), mcp_engine::http::REFUSALS_KEPT);
}

#[test]
fn an_embedded_exchange_s_refusal_is_recorded() {
    let mut e = engine();
    let body = discover().to_string();
    let headers: [(&str, &[u8]); 2] = [("host", b"mcp.evil.example"), ("content-type", b"application/json")];
    let conn = e.handle_request(at(0), None, "POST", "/mcp", &headers, body.as_bytes()).unwrap();
    assert_eq!(e.response(conn).map(|r| r.status), Some(403));
    let seen: Vec<_> = std::iter::from_fn(|| e.poll_refusal()).collect();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].conn, seen[0].refusal), (conn, Refusal::HostNotAllowed));
}
