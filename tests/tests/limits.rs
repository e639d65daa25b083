//! Rate limits over Streamable HTTP: a token bucket per principal and per client
//! address for tool calls (and completions, subscriptions), refused with `429`,
//! `Retry-After` and a JSON-RPC error that echoes the id; and authentication failures
//! per address, after which the address is refused before its credentials are read.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use mcp_engine::Instant;
use mcp_engine::http::{
    AllowedOrigins, Authorization, HttpConfig, Limits, Principal, RATE_LIMITED, Rate, Verdict,
};
use mcp_fixture as everything;
use mcp_tests::wire::{Client, Response, client_of, post, req};
use serde_json::json;

/// A client whose host counts the tool calls it is given.
fn client(http: HttpConfig) -> (Client, Rc<RefCell<usize>>) {
    let calls = Rc::new(RefCell::new(0));
    let seen = calls.clone();
    let c = client_of(
        everything::config(),
        http,
        everything::catalog(),
        Box::new(move |ev| {
            if matches!(ev, mcp_engine::Event::CallTool(_)) {
                *seen.borrow_mut() += 1;
            }
            everything::respond(ev)
        }),
    );
    (c, calls)
}

fn call(id: i64) -> Vec<u8> {
    post(&req(id, "tools/call", json!({ "name": "test_simple_text" })), &[])
}

/// Sends `raw` on a new connection from `peer`; the one response.
fn from(c: &mut Client, peer: &str, raw: &[u8]) -> Response {
    let keep = c.conn;
    c.conn = c.e.open(c.now, Some(peer.parse::<SocketAddr>().unwrap())).unwrap();
    let mut r = c.send(raw);
    c.conn = keep;
    assert_eq!(r.len(), 1, "{r:?}");
    r.remove(0)
}

fn limited(http: &mut HttpConfig, rate: Rate) {
    http.limits(Limits::none().calls(Some(rate)));
}

#[test]
fn calls_over_the_rate_are_429_with_retry_after_and_an_error_echoing_the_id() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    limited(&mut http, Rate::new(2, Duration::from_secs(10)));
    let (mut c, calls) = client(http);
    let peer = "192.0.2.1:4000";
    assert_eq!(from(&mut c, peer, &call(1)).status, 200);
    assert_eq!(from(&mut c, peer, &call(2)).status, 200);
    let r = from(&mut c, peer, &call(3));
    assert_eq!(r.status, 429, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("5"));
    let body = r.json();
    assert_eq!(body["id"], 3);
    assert_eq!(body["error"]["code"], RATE_LIMITED);
    assert_eq!(body["error"]["data"]["retryAfter"], 5);
    assert_eq!(*calls.borrow(), 2, "the host never saw the refused call");
    // Other methods are not limited, other addresses have their own bucket.
    assert_eq!(from(&mut c, peer, &post(&req(4, "tools/list", json!({})), &[])).status, 200);
    assert_eq!(from(&mut c, "192.0.2.2:4000", &call(5)).status, 200);
    // Time refills the bucket.
    c.now = Instant::ZERO + Duration::from_secs(5);
    assert_eq!(from(&mut c, peer, &call(6)).status, 200);
    assert_eq!(from(&mut c, peer, &call(7)).status, 429);
    assert_eq!(*calls.borrow(), 4);
}

#[test]
fn a_principal_is_limited_across_addresses() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    limited(&mut http, Rate::new(2, Duration::from_secs(60)));
    let (mut c, _) = client(http);
    c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    assert_eq!(from(&mut c, "192.0.2.1:1", &call(1)).status, 200);
    assert_eq!(from(&mut c, "192.0.2.2:1", &call(2)).status, 200);
    assert_eq!(from(&mut c, "192.0.2.3:1", &call(3)).status, 429, "alice is out, from anywhere");
    c.verdict = Verdict::AllowAs(Principal::of(b"bob"));
    assert_eq!(from(&mut c, "192.0.2.3:1", &call(4)).status, 200, "bob is not");
}

#[test]
fn an_address_past_its_authentication_failures_is_refused_before_the_host_is_asked() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    http.limits(Limits::none().auth_failures(Some(Rate::new(3, Duration::from_secs(30)))));
    let (mut c, _) = client(http);
    c.verdict = Verdict::Unauthenticated;
    let bad = "198.51.100.7:1";
    for id in 0..3 {
        assert_eq!(from(&mut c, bad, &call(id)).status, 401);
    }
    let r = from(&mut c, bad, &call(9));
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("10"));
    // Even with good credentials now: the address waits.
    c.verdict = Verdict::Allow;
    assert_eq!(from(&mut c, bad, &call(10)).status, 429);
    assert_eq!(from(&mut c, "198.51.100.8:1", &call(11)).status, 200, "another address is heard");
    c.now = Instant::ZERO + Duration::from_secs(10);
    assert_eq!(from(&mut c, bad, &call(12)).status, 200);
}

#[test]
fn without_limits_nothing_is_refused() {
    let (mut c, calls) = client(HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone));
    for id in 0..50 {
        assert_eq!(from(&mut c, "192.0.2.1:1", &call(id)).status, 200);
    }
    assert_eq!(*calls.borrow(), 50);
}

#[test]
fn a_request_the_host_does_not_answer_in_time_is_answered_once_and_cancelled() {
    use mcp_engine::error::AnswerError;
    use mcp_engine::{Content, Event, Ticket, ToolOutput};
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.request_timeout(Some(Duration::from_secs(5)));
    let held: Rc<RefCell<Vec<Ticket>>> = Rc::default();
    let cancelled: Rc<RefCell<Vec<Ticket>>> = Rc::default();
    let (h, x) = (held.clone(), cancelled.clone());
    let mut c = client_of(
        everything::config(),
        http,
        everything::catalog(),
        Box::new(move |ev| match ev {
            Event::Cancelled(t) => x.borrow_mut().push(t),
            ev => h.borrow_mut().push(ev.ticket()),
        }),
    );
    assert!(c.send(&call(7)).is_empty(), "the host holds it");
    let t = held.borrow()[0];
    assert_eq!(c.e.poll_timeout(), Some(Instant::ZERO + Duration::from_secs(5)));
    c.e.handle_timeout(Instant::ZERO + Duration::from_millis(4_999));
    let mut out = Vec::new();
    c.drain(&mut out);
    assert!(out.is_empty());
    c.e.handle_timeout(Instant::ZERO + Duration::from_secs(5));
    c.drain(&mut out);
    let r = mcp_tests::wire::parse_responses(&out);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].status, 200);
    assert_eq!(r[0].json()["id"], 7);
    assert_eq!(r[0].json()["error"]["code"], -32001);
    assert_eq!(*cancelled.borrow(), vec![t], "the host is told");
    assert_eq!(c.e.in_flight(), 0);
    // A late answer is refused and writes nothing.
    assert_eq!(
        c.e.answer_tool(t, &ToolOutput::new(&[Content::text("late")])),
        Err(AnswerError::UnknownTicket)
    );
    c.drain(&mut out);
    assert_eq!(mcp_tests::wire::parse_responses(&out).len(), 1);
    // The connection goes on.
    let held_before = held.borrow().len();
    assert!(c.send(&call(8)).is_empty());
    assert_eq!(held.borrow().len(), held_before + 1);
}

#[test]
fn an_answer_in_time_clears_the_request_timer() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.request_timeout(Some(Duration::from_secs(5)));
    let (mut c, calls) = client(http);
    let r = c.send(&call(1));
    assert_eq!(r[0].status, 200);
    assert_eq!(r[0].json()["result"]["content"][0]["type"], "text");
    assert_eq!(*calls.borrow(), 1);
    // Only the keep-alive idle timer is left, not the request's.
    c.e.handle_timeout(Instant::ZERO + Duration::from_secs(5));
    let mut out = Vec::new();
    c.drain(&mut out);
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
}

#[test]
fn a_principal_holds_at_most_its_share_of_tickets_under_a_burst() {
    use mcp_engine::{Content, Event, Ticket, ToolOutput};
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    http.limits(Limits::none().per_principal_concurrency(Some(2)));
    let held: Rc<RefCell<Vec<Ticket>>> = Rc::default();
    let h = held.clone();
    let mut c = client_of(
        everything::config(),
        http,
        everything::catalog(),
        Box::new(move |ev: Event<'_>| {
            if !matches!(ev, Event::Cancelled(_)) {
                h.borrow_mut().push(ev.ticket());
            }
        }),
    );
    c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    // A burst of five: two are taken, three refused at once.
    let mut refused = Vec::new();
    for id in 0..5 {
        let keep = c.conn;
        c.conn = c.e.open(c.now, None).unwrap();
        let r = c.send(&call(id));
        c.conn = keep;
        if let Some(r) = r.first() {
            assert_eq!(r.status, 429, "{r:?}");
            assert_eq!(r.header("retry-after"), Some("1"));
            assert_eq!(r.json()["error"]["code"], RATE_LIMITED);
            refused.push(r.json()["id"].as_i64().unwrap());
        }
    }
    assert_eq!(held.borrow().len(), 2);
    assert_eq!(refused, [2, 3, 4]);
    // Another principal is not held back.
    c.verdict = Verdict::AllowAs(Principal::of(b"bob"));
    assert!(from_any(&mut c, &call(10)).is_empty());
    assert_eq!(held.borrow().len(), 3);
    // One of alice's ends: she may start another.
    let t = held.borrow()[0];
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])).unwrap();
    c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    assert!(from_any(&mut c, &call(11)).is_empty());
    assert_eq!(held.borrow().len(), 4);
}

/// Sends `raw` on a new connection; its responses.
fn from_any(c: &mut Client, raw: &[u8]) -> Vec<Response> {
    let keep = c.conn;
    c.conn = c.e.open(c.now, None).unwrap();
    let r = c.send(raw);
    c.conn = keep;
    r
}
