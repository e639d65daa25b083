//! Fair shares (issue 27): one client can neither take every session nor, by inventing
//! addresses, fill the rate limiter so that others are refused. A client is its
//! principal, else its address; the engine's clock is driven, never read.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, IpNet, Limits, RATE_LIMITED, Rate};
use mcp_engine::{Content, Event, Instant, Ticket, ToolOutput};
use mcp_fixture as everything;
use mcp_tests::wire::{Client, Host, Response, client_of, one, post, req, session_post};
use serde_json::{Value, json};

const VERSION: &str = "2025-11-25";

fn http() -> HttpConfig {
    HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone)
}

/// A client of the fixture over an engine with sessions on, its host `host`.
fn client_with(http: HttpConfig, host: Host) -> Client {
    let mut config = everything::config();
    config.secret_key([3; 32]);
    let mut c = client_of(config, http, everything::catalog(), host);
    c.e.set_entropy(&[5; 32]);
    c
}

/// Tickets the host holds unanswered.
type Held = Rc<RefCell<Vec<Ticket>>>;

/// A host that holds every tool call and answers the rest as the fixture does.
fn holding() -> (Host, Held) {
    let held: Held = Rc::default();
    let h = held.clone();
    let host = Box::new(move |ev: Event<'_>| match ev {
        Event::CallTool(_) => h.borrow_mut().push(ev.ticket()),
        Event::Cancelled(_) => {}
        ev => everything::respond(ev),
    });
    (host, held)
}

/// Points `c` at a new connection from `peer`.
fn connect(c: &mut Client, peer: &str) {
    c.conn = c.e.open(c.now, Some(peer.parse::<SocketAddr>().unwrap())).unwrap();
}

fn init(id: i64) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } })
}

/// An `initialize` that would open a session (no `Mcp-Session-Id`).
fn initialize(id: i64) -> Vec<u8> {
    session_post(&init(id), VERSION, None)
}

/// `initialize` from the current connection; the session id.
fn open(c: &mut Client) -> String {
    let r = one(c, &initialize(1));
    assert_eq!(r.status, 200, "{r:?}");
    r.header("mcp-session-id").expect("a session id").to_owned()
}

fn in_session(session: &str, body: &Value) -> Vec<u8> {
    session_post(body, VERSION, Some(session))
}

/// A `ping` in `session`: its status (`404` once the session ended).
fn ping(c: &mut Client, session: &str) -> u16 {
    one(c, &in_session(session, &json!({ "jsonrpc": "2.0", "id": 9, "method": "ping" }))).status
}

/// Starts a tool call in `session` on a connection of its own from `peer`, which the
/// host holds.
fn hold_call(c: &mut Client, peer: &str, session: &str) {
    let keep = c.conn;
    connect(c, peer);
    let call = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": { "name": "test_simple_text" } });
    assert!(c.send(&in_session(session, &call)).is_empty(), "the host holds it");
    c.conn = keep;
}

/// Issue 27: 6,000 `initialize` from 127.0.0.2 (4,096 sessions, then `503` for every
/// client, before). The client's share is 128: each `initialize` past it ends that
/// client's own session idle longest, and 127.0.0.3 is served.
#[test]
fn six_thousand_initialize_from_one_address_leave_another_address_served() {
    let mut c = client_with(http(), Box::new(everything::respond));
    connect(&mut c, "127.0.0.2:40000");
    let mut ids = Vec::new();
    for i in 0..6_000 {
        let r = one(&mut c, &initialize(i));
        assert_eq!(r.status, 200, "initialize {i}: {r:?}");
        ids.push(r.header("mcp-session-id").expect("a session id").to_owned());
    }
    assert_eq!(c.e.sessions(), 128, "its share, not the table");
    assert_eq!(ping(&mut c, &ids[0]), 404, "its oldest gave way");
    assert_eq!(ping(&mut c, &ids[6_000 - 129]), 404);
    assert_eq!(ping(&mut c, &ids[6_000 - 128]), 200, "its newest 128 live");
    assert_eq!(ping(&mut c, &ids[5_999]), 200);
    connect(&mut c, "127.0.0.3:40000");
    let other = open(&mut c);
    assert_eq!(ping(&mut c, &other), 200);
    assert_eq!(c.e.sessions(), 129);
}

/// At the table's cap a client holding fewer sessions takes the place of the idle-longest
/// session of the client holding the most; the others' sessions stay.
#[test]
fn at_the_cap_the_client_holding_the_most_gives_way_to_a_new_one() {
    let mut h = http();
    h.max_sessions(8).max_sessions_per_client(5);
    let mut c = client_with(h, Box::new(everything::respond));
    connect(&mut c, "192.0.2.1:1");
    let of_a: Vec<String> = (0..5).map(|_| open(&mut c)).collect();
    connect(&mut c, "192.0.2.2:1");
    let of_b: Vec<String> = (0..3).map(|_| open(&mut c)).collect();
    assert_eq!(c.e.sessions(), 8);
    connect(&mut c, "192.0.2.3:1");
    let new = open(&mut c);
    assert_eq!(c.e.sessions(), 8);
    assert_eq!(ping(&mut c, &of_a[0]), 404, "a held the most: its session idle longest went");
    for id in of_a[1..].iter().chain(&of_b).chain([&new]) {
        assert_eq!(ping(&mut c, id), 200);
    }
}

/// A session with a request in flight never gives way: a client whose sessions are all
/// busy is refused `429` (its share) and, when every session is busy, any client `503`
/// (the table); once a request ends, its session is the one that gives way.
#[test]
fn busy_sessions_never_give_way() {
    let (host, held) = holding();
    let mut h = http();
    h.max_sessions(3).max_sessions_per_client(2);
    let mut c = client_with(h, host);
    let a = "192.0.2.1:1";
    connect(&mut c, a);
    let of_a = [open(&mut c), open(&mut c)];
    for id in &of_a {
        hold_call(&mut c, a, id);
    }
    let r = one(&mut c, &initialize(7));
    assert_eq!(r.status, 429, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("5"));
    assert!(r.header("mcp-session-id").is_none());
    let body = r.json();
    assert_eq!((body["id"].clone(), body["error"]["code"].clone()), (json!(7), json!(RATE_LIMITED)));
    assert!(
        body["error"]["message"].as_str().unwrap().starts_with("Too many sessions for this client"),
        "{body}"
    );
    assert_eq!(c.e.sessions(), 2);
    assert_eq!(c.e.refusal_counts().get(mcp_engine::http::Refusal::TooManySessions), 1);
    // Another client is served, to the cap; with every session busy, the next is 503.
    connect(&mut c, "192.0.2.2:1");
    let of_b = open(&mut c);
    hold_call(&mut c, "192.0.2.2:1", &of_b);
    connect(&mut c, "192.0.2.3:1");
    let r = one(&mut c, &initialize(8));
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.header("retry-after").is_some());
    assert_eq!(c.e.sessions(), 3);
    // The first call of a ends: that session gives way to a's next.
    let t = held.borrow()[0];
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])).unwrap();
    let mut out = Vec::new();
    c.drain(&mut out);
    connect(&mut c, a);
    let third = open(&mut c);
    assert_eq!(ping(&mut c, &of_a[0]), 404);
    assert_eq!(ping(&mut c, &third), 200);
    assert_eq!(c.e.sessions(), 3);
}

/// `initialize` is a rate class: past it the client is refused `429` before a session
/// is made (so, with a store, before a record is written); another client is not, and
/// an `initialize` inside a session opens nothing and is not counted.
#[test]
fn initialize_is_rate_limited_per_client() {
    let mut h = http();
    h.limits(Limits::none().initialize(Some(Rate::new(2, Duration::from_secs(60)))));
    let mut c = client_with(h, Box::new(everything::respond));
    connect(&mut c, "192.0.2.1:1");
    let first = open(&mut c);
    open(&mut c);
    let r = one(&mut c, &initialize(3));
    assert_eq!(r.status, 429, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("30"));
    assert_eq!(r.json()["error"]["code"], RATE_LIMITED);
    assert_eq!(r.json()["id"], 3);
    assert!(r.header("mcp-session-id").is_none());
    assert_eq!(c.e.sessions(), 2);
    assert_eq!(c.e.refusal_counts().get(mcp_engine::http::Refusal::RateLimited), 1);
    let inside = one(&mut c, &in_session(&first, &init(4)));
    assert_eq!(
        inside.json()["error"]["code"],
        -32600,
        "refused as a second initialize, not counted: {inside:?}"
    );
    connect(&mut c, "192.0.2.2:1");
    open(&mut c);
    c.now = Instant::ZERO + Duration::from_secs(30);
    connect(&mut c, "192.0.2.1:1");
    open(&mut c);
    assert_eq!(c.e.sessions(), 4);
}

fn call_from(c: &mut Client, id: i64, forwarded: &str) -> Response {
    let call = req(id, "tools/call", json!({ "name": "test_simple_text" }));
    one(c, &post(&call, &[("X-Forwarded-For", forwarded)]))
}

/// Issue 27: behind a trusted proxy a client names its own address; 10,000 invented ones
/// filled the limiter's one table and every new client got `429`. Now a new key takes
/// the place of the one furthest behind its rate: 12,000 invented addresses later a new
/// client is served, and a client that spent its bucket is still refused (each flooder
/// spent one token, it two: the flooders give way to each other).
#[test]
fn a_flood_of_invented_addresses_neither_locks_out_a_new_client_nor_resets_a_busy_one() {
    let mut h = http();
    h.trusted_proxies(
        mcp_engine::http::ForwardedHeader::XForwardedFor,
        [IpNet::from("127.0.0.1".parse::<std::net::IpAddr>().unwrap())],
    );
    h.limits(Limits::none().calls(Some(Rate::new(2, Duration::from_secs(60)))));
    let mut c = client_with(h, Box::new(everything::respond));
    connect(&mut c, "127.0.0.1:5000");
    let busy = "203.0.113.9";
    assert_eq!(call_from(&mut c, 1, busy).status, 200);
    assert_eq!(call_from(&mut c, 2, busy).status, 200);
    assert_eq!(call_from(&mut c, 3, busy).status, 429);
    for i in 0..12_000u32 {
        let invented = std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string();
        let r = call_from(&mut c, 10, &invented);
        assert_eq!(r.status, 200, "flooder {i}: {r:?}");
    }
    let r = call_from(&mut c, 4, busy);
    assert_eq!((r.status, r.header("retry-after")), (429, Some("30")), "still over its rate");
    assert_eq!(call_from(&mut c, 5, "198.51.100.1").status, 200, "a new client is served");
    assert_eq!(call_from(&mut c, 6, "198.51.100.1").status, 200);
    assert_eq!(call_from(&mut c, 7, "198.51.100.1").status, 429, "and limited");
}

/// With a session store, the session that gives way at a client's share leaves memory
/// only: it is not ended (the store is not told to forget it, another node may serve
/// it) and comes back when named, counted against the client again.
#[test]
fn with_a_store_the_session_that_gives_way_leaves_memory_and_comes_back() {
    let mut h = http();
    h.session_store(true).max_sessions_per_client(2);
    let mut c = client_with(h, Box::new(everything::respond));
    connect(&mut c, "192.0.2.1:1");
    let ids = [open(&mut c), open(&mut c), open(&mut c)];
    assert_eq!(c.e.sessions(), 2);
    assert!(c.store.log.iter().all(|l| l.starts_with("save ")), "nothing forgotten: {:?}", c.store.log);
    assert_eq!(ping(&mut c, &ids[0]), 200, "loaded again");
    assert_eq!(c.store.log.last(), Some(&format!("load {}", ids[0])));
    assert_eq!(c.e.sessions(), 2, "and another of its sessions left memory for it");
    assert_eq!(ping(&mut c, &ids[2]), 200);
    assert_eq!(ping(&mut c, &ids[1]), 200);
}

/// A stateless `tools/call` the holding host keeps, sent on a new connection from `peer`;
/// what came back at once (nothing while the host holds it).
fn call_on_new(c: &mut Client, peer: &str, id: i64) -> Vec<Response> {
    connect(c, peer);
    c.send(&post(&req(id, "tools/call", json!({ "name": "test_simple_text" })), &[]))
}

/// Slow calls of one client (issue 27's fair shares, for requests with the host): a
/// client holding `max_in_flight_per_client` (32, half the ticket slots) requests with the host is refused its
/// next at once, `429` with the JSON-RPC error echoing its id, while another client's
/// call still reaches the host.
#[test]
fn a_client_holding_its_share_of_requests_is_refused_the_next_and_another_is_served() {
    let (host, held) = holding();
    let mut c = client_with(http(), host);
    for i in 0..32 {
        assert!(call_on_new(&mut c, "192.0.2.1:1", i).is_empty(), "call {i} is with the host");
    }
    assert_eq!(held.borrow().len(), 32);
    let r = call_on_new(&mut c, "192.0.2.1:1", 99);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].status, 429, "{r:?}");
    assert_eq!(r[0].header("retry-after"), Some("1"));
    let body = r[0].json();
    assert_eq!((body["id"].clone(), body["error"]["code"].clone()), (json!(99), json!(RATE_LIMITED)));
    assert!(
        body["error"]["message"].as_str().unwrap().starts_with("Too many requests in flight for this client"),
        "{body}"
    );
    assert_eq!(c.e.refusal_counts().get(mcp_engine::http::Refusal::TooManyInFlight), 1);
    assert_eq!(held.borrow().len(), 32, "the refused call never reached the host");
    // Requests without a ticket are not counted: a `tools/list` of the same client is answered.
    connect(&mut c, "192.0.2.1:1");
    assert_eq!(one(&mut c, &post(&req(7, "tools/list", json!({})), &[])).status, 200);
    // Another client is served.
    assert!(call_on_new(&mut c, "192.0.2.2:1", 1).is_empty());
    assert_eq!(held.borrow().len(), 33);
    // One of the first client's calls ends: its next is taken again.
    let t = held.borrow()[0];
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])).unwrap();
    let mut out = Vec::new();
    c.drain(&mut out);
    assert!(call_on_new(&mut c, "192.0.2.1:1", 100).is_empty());
    assert_eq!(held.borrow().len(), 34);
}

/// With every ticket slot busy, a request of a client at its share is refused at once
/// rather than waiting for a slot (where it would stand before other clients' requests);
/// a request of a client under its share waits and is taken when a slot frees.
#[test]
fn with_every_slot_busy_a_client_at_its_share_is_refused_and_another_waits_its_turn() {
    let (host, held) = holding();
    let mut config = everything::config();
    config.secret_key([3; 32]).max_in_flight(4);
    let mut h = http();
    h.max_in_flight_per_client(2);
    let mut c = client_of(config, h, everything::catalog(), host);
    c.e.set_entropy(&[5; 32]);
    for (peer, id) in [("192.0.2.1:1", 1), ("192.0.2.1:1", 2), ("192.0.2.2:1", 3), ("192.0.2.2:1", 4)] {
        assert!(call_on_new(&mut c, peer, id).is_empty());
    }
    assert_eq!(held.borrow().len(), 4, "every slot busy");
    let r = call_on_new(&mut c, "192.0.2.1:1", 5);
    assert_eq!(r.len(), 1, "answered at once, not left waiting: {r:?}");
    assert_eq!(r[0].status, 429);
    assert_eq!(r[0].json()["id"], 5);
    // A third client waits for a slot: nothing comes back, the host hears nothing.
    let r = call_on_new(&mut c, "192.0.2.3:1", 6);
    assert!(r.is_empty(), "{r:?}");
    assert_eq!(held.borrow().len(), 4);
    let t = held.borrow()[0];
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])).unwrap();
    let mut out = Vec::new();
    c.drain(&mut out);
    assert_eq!(held.borrow().len(), 5, "the waiting call took the freed slot");
}
