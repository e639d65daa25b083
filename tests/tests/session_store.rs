//! The session store, sans-IO (`HttpConfig::session_store`): the engine asks the host
//! for a session it does not hold, holds the answer to a request that changed a session
//! until the host stored the record, tells the host of expired sessions, and turns a
//! store that fails or stalls into `503` with `Retry-After`, never into a hang or a lost
//! acknowledged change.

use mcp_engine::Commands;
use std::time::Duration;

use mcp_engine::Instant;
use mcp_engine::http::store::Loaded;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, Principal, Verdict};
use mcp_fixture as everything;
use mcp_tests::wire::{Client, Response, Store, client_of, parse_responses, post};
use serde_json::{Value, json};

const V: &str = "2025-11-25";

fn http() -> HttpConfig {
    let mut h = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    h.session_store(true);
    h
}

/// A node: an engine with the store on, sealing with the key every node shares.
fn node_with(http: HttpConfig, entropy: u8) -> Client {
    let mut config = everything::config();
    config.secret_key([3; 32]);
    let mut c = client_of(config, http, everything::catalog(), Box::new(everything::respond));
    c.e.set_entropy(&[entropy; 32]);
    c
}

fn node() -> Client {
    node_with(http(), 5)
}

fn legacy(body: &Value, session: Option<&str>) -> Vec<u8> {
    let mut extra = vec![("Mcp-Method", ""), ("Mcp-Name", ""), ("MCP-Protocol-Version", "")];
    if let Some(id) = session {
        extra.push(("MCP-Protocol-Version", V));
        extra.push(("Mcp-Session-Id", id));
    }
    post(body, &extra)
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn initialize() -> Value {
    request(
        1,
        "initialize",
        json!({ "protocolVersion": V, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
    )
}

fn initialized() -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })
}

fn one(c: &mut Client, raw: &[u8]) -> Response {
    let mut r = c.send(raw);
    assert_eq!(r.len(), 1, "{r:?}");
    r.remove(0)
}

/// Opens a session; returns its id.
fn open(c: &mut Client) -> String {
    let r = one(c, &legacy(&initialize(), None));
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    assert_eq!(one(c, &legacy(&initialized(), Some(&id))).status, 202);
    id
}

fn ping(c: &mut Client, id: &str) -> Response {
    one(c, &legacy(&request(9, "ping", json!({})), Some(id)))
}

/// The `notifications/message` lines a logging tool call in session `id` gets.
fn logged(c: &mut Client, id: &str) -> usize {
    let call = request(3, "tools/call", json!({ "name": "test_logging_tool" }));
    let out = c.feed(&legacy(&call, Some(id)), usize::MAX);
    String::from_utf8_lossy(&out).matches("notifications/message").count()
}

#[test]
fn a_session_stored_by_one_node_is_served_by_another_with_its_state() {
    let mut a = node();
    let id = open(&mut a);
    assert_eq!(a.store.log, [format!("save {id}"), format!("save {id}")], "created, then initialized");
    let r = one(&mut a, &legacy(&request(2, "logging/setLevel", json!({ "level": "info" })), Some(&id)));
    assert_eq!(r.json()["result"], json!({}));
    assert_eq!(a.store.log.len(), 3, "the level is part of the record");
    assert_eq!(ping(&mut a, &id).status, 200);
    assert_eq!(a.store.log.len(), 3, "a ping changes nothing: nothing is stored");

    // Node B shares the key and the store, not the memory.
    let mut b = node_with(http(), 6);
    b.store = Store { log: Vec::new(), ..a.store.clone() };
    let r = ping(&mut b, &id);
    assert_eq!((r.status, r.json()["result"].clone()), (200, json!({})), "{r:?}");
    assert_eq!(b.store.log, [format!("load {id}")]);
    assert_eq!(b.e.sessions(), 1);
    assert_eq!(logged(&mut b, &id), 3, "the session's log level came with it");
    assert_eq!(b.store.log.len(), 1, "loaded once, then held in memory");
    // Its revision came too: another protocol version header is refused.
    let wrong = post(
        &request(4, "ping", json!({})),
        &[("Mcp-Method", ""), ("MCP-Protocol-Version", "2025-06-18"), ("Mcp-Session-Id", &id)],
    );
    assert_eq!(one(&mut b, &wrong).status, 400);
}

#[test]
fn a_subscription_is_stored_and_the_unsubscription_too() {
    let mut a = node();
    let id = open(&mut a);
    let sub = request(2, "resources/subscribe", json!({ "uri": "test://static-text" }));
    assert_eq!(one(&mut a, &legacy(&sub, Some(&id))).status, 200);
    let with_uri = a.store.records[&id].clone();
    assert!(with_uri.windows(18).any(|w| w == b"test://static-text"), "{with_uri:?}");
    let unsub = request(3, "resources/unsubscribe", json!({ "uri": "test://static-text" }));
    assert_eq!(one(&mut a, &legacy(&unsub, Some(&id))).status, 200);
    assert_eq!(a.store.log.len(), 4);
    assert!(a.store.records[&id].len() < with_uri.len());
}

#[test]
fn a_forged_id_never_reaches_the_store_and_a_missing_one_is_404() {
    let mut c = node();
    let forged = "A".repeat(44);
    assert_eq!(ping(&mut c, &forged).status, 404);
    assert!(c.store.log.is_empty(), "refused on its seal, without a lookup");

    // A sealed id the store does not hold (deleted elsewhere, say).
    let mut other = node_with(http(), 7);
    let id = open(&mut other);
    assert_eq!(ping(&mut c, &id).status, 404);
    assert_eq!(c.store.log, [format!("load {id}")]);
    assert_eq!(c.e.sessions(), 0);
}

#[test]
fn an_unreadable_record_is_a_missing_session() {
    let mut a = node();
    let id = open(&mut a);
    let mut b = node_with(http(), 6);
    for bad in [vec![], vec![2, 2, 0, 0, 0, 0, 0], vec![1, 9, 0, 0, 0, 0, 0]] {
        b.store.records.insert(id.clone(), bad.clone());
        assert_eq!(ping(&mut b, &id).status, 404, "{bad:?}");
    }
    assert_eq!(b.e.sessions(), 0);
}

#[test]
fn the_answer_to_a_change_is_held_until_the_store_has_it() {
    let mut c = node();
    c.store.hold = true;
    let out = c.feed(&legacy(&initialize(), None), usize::MAX);
    assert!(out.is_empty(), "held: {}", String::from_utf8_lossy(&out));
    assert_eq!(c.e.sessions(), 1);
    let conn = c.store.held.pop().expect("a save was asked");
    assert_eq!(c.store.log.len(), 1);
    c.e.session_saved(c.now, conn, true);
    let mut out = Vec::new();
    c.drain(&mut out);
    let r = parse_responses(&out);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].status, 200);
    assert!(r[0].header("mcp-session-id").is_some());
    // A late second answer is ignored.
    c.e.session_saved(c.now, conn, false);
    c.drain(&mut out);
    assert_eq!(c.e.sessions(), 1);
}

#[test]
fn a_failed_save_is_503_and_a_created_session_is_undone() {
    let mut c = node();
    c.store.fail = true;
    let r = one(&mut c, &legacy(&initialize(), None));
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.header("mcp-session-id").is_none());
    assert_eq!(c.e.sessions(), 0, "its client never learnt the id");
    assert!(!r.closes(), "the connection goes on");

    c.store.fail = false;
    let id = open(&mut c);
    c.store.fail = true;
    let set = request(2, "logging/setLevel", json!({ "level": "info" }));
    assert_eq!(one(&mut c, &legacy(&set, Some(&id))).status, 503);
    assert_eq!(c.e.sessions(), 1, "an existing session stays");
    // The change not stored goes with the session's next answered request.
    c.store.fail = false;
    let before = c.store.log.len();
    assert_eq!(ping(&mut c, &id).status, 200);
    assert_eq!(c.store.log.len(), before + 1, "{:?}", c.store.log);
    let mut b = node_with(http(), 6);
    b.store.records = c.store.records.clone();
    assert_eq!(logged(&mut b, &id), 3, "the level reached the store");
}

#[test]
fn an_unavailable_store_on_load_is_503_and_the_request_can_be_retried() {
    let mut a = node();
    let id = open(&mut a);
    let mut b = node_with(http(), 6);
    b.store.records = a.store.records.clone();
    b.store.fail = true;
    let r = ping(&mut b, &id);
    assert_eq!((r.status, r.header("retry-after")), (503, Some("1")));
    b.store.fail = false;
    assert_eq!(ping(&mut b, &id).status, 200);
}

#[test]
fn a_store_that_does_not_answer_in_time_gives_503_and_late_answers_are_ignored() {
    let mut h = http();
    h.store_timeout(Duration::from_secs(2));
    let mut a = node_with(h.clone(), 5);
    let id = open(&mut a);

    // A stalled load.
    let mut b = node_with(h.clone(), 6);
    b.store.records = a.store.records.clone();
    b.store.hold = true;
    let out = b.feed(&legacy(&request(2, "ping", json!({})), Some(&id)), usize::MAX);
    assert!(out.is_empty());
    assert_eq!(b.e.poll_timeout(), Some(Instant::ZERO + Duration::from_secs(2)));
    b.now = Instant::ZERO + Duration::from_secs(2);
    b.e.handle_timeout(b.now);
    let mut out = Vec::new();
    b.drain(&mut out);
    let r = parse_responses(&out);
    assert_eq!(r[0].status, 503);
    let late = b.store.held.pop().unwrap();
    b.e.session_loaded(b.now, late, Loaded::Record(&a.store.records[&id]));
    b.drain(&mut out);
    assert_eq!(b.e.sessions(), 0, "the late answer was ignored");

    // A stalled save of a new session.
    let mut c = node_with(h, 7);
    c.store.hold = true;
    assert!(c.feed(&legacy(&initialize(), None), usize::MAX).is_empty());
    c.now = Instant::ZERO + Duration::from_secs(2);
    c.e.handle_timeout(c.now);
    let mut out = Vec::new();
    c.drain(&mut out);
    assert_eq!(parse_responses(&out)[0].status, 503);
    assert_eq!(c.e.sessions(), 0);
}

#[test]
fn delete_answers_once_the_store_forgot_the_session() {
    let mut a = node();
    let id = open(&mut a);
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: {id}\r\n\r\n");
    a.store.hold = true;
    assert!(a.feed(delete.as_bytes(), usize::MAX).is_empty(), "held");
    assert_eq!(a.store.log.last(), Some(&format!("forget {id}")));
    let conn = a.store.held.pop().unwrap();
    a.store.hold = false;
    a.store.records.remove(&id);
    a.e.session_saved(a.now, conn, true);
    let mut out = Vec::new();
    a.drain(&mut out);
    assert_eq!(parse_responses(&out)[0].status, 200);
    // Gone for every node.
    assert_eq!(ping(&mut a, &id).status, 404);
    let mut b = node_with(http(), 6);
    b.store.records = a.store.records.clone();
    assert_eq!(ping(&mut b, &id).status, 404);

    // A session held only in the store is loaded to be deleted.
    let id = open(&mut a);
    let mut b = node_with(http(), 6);
    b.store.records = a.store.records.clone();
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: {id}\r\n\r\n");
    assert_eq!(one(&mut b, delete.as_bytes()).status, 200);
    assert_eq!(b.store.log, [format!("load {id}"), format!("forget {id}")]);
    assert!(!b.store.records.contains_key(&id));
}

#[test]
fn an_expired_session_is_reported_to_the_store() {
    let mut h = http();
    h.session_idle_timeout(Duration::from_secs(60));
    let mut c = node_with(h, 5);
    let id = open(&mut c);
    c.now = Instant::ZERO + Duration::from_secs(60);
    c.e.handle_timeout(c.now);
    let mut out = Vec::new();
    c.drain(&mut out);
    assert_eq!(c.store.log.last(), Some(&format!("expired {id}")));
    assert!(c.store.records.is_empty());
    c.conn = c.e.open(c.now, None).unwrap(); // the first one sat idle past its own timeout
    assert_eq!(ping(&mut c, &id).status, 404);
    assert_eq!(c.store.log.last(), Some(&format!("load {id}")), "asked, and the store forgot it");
}

#[test]
fn at_the_cap_a_stored_session_leaves_memory_and_comes_back_when_named() {
    let mut h = http();
    h.max_sessions(1);
    let mut c = node_with(h, 5);
    let a = open(&mut c);
    let b = open(&mut c);
    assert_eq!(c.e.sessions(), 1, "a left memory for b");
    assert_eq!(logged(&mut c, &b), 0);
    let r = ping(&mut c, &a);
    assert_eq!(r.status, 200, "a came back from the store: {r:?}");
    assert_eq!(c.store.log.last(), Some(&format!("load {a}")));
    assert_eq!(ping(&mut c, &b).status, 200, "and b in turn");

    // Without a store the cap refuses instead.
    let mut plain = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    plain.max_sessions(1);
    let mut m = node_with(plain, 5);
    open(&mut m);
    assert_eq!(one(&mut m, &legacy(&initialize(), None)).status, 503);
}

#[test]
fn a_session_with_an_unsaved_change_does_not_leave_memory() {
    let mut h = http();
    h.max_sessions(1);
    let mut c = node_with(h, 5);
    let a = open(&mut c);
    c.store.fail = true;
    let set = request(2, "logging/setLevel", json!({ "level": "info" }));
    assert_eq!(one(&mut c, &legacy(&set, Some(&a))).status, 503);
    c.store.fail = false;
    let r = one(&mut c, &legacy(&initialize(), None));
    assert_eq!(r.status, 503, "a holds a change the store lacks: it stays, and the cap holds");
    assert_eq!(logged(&mut c, &a), 3);
}

#[test]
fn a_stored_session_stays_bound_to_its_principal() {
    let mut h = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    h.session_store(true);
    let mut a = node_with(h.clone(), 5);
    a.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    let id = open(&mut a);
    let mut b = node_with(h, 6);
    b.store.records = a.store.records.clone();
    b.verdict = Verdict::AllowAs(Principal::of(b"bob"));
    assert_eq!(ping(&mut b, &id).status, 404, "bob does not get alice's session");
    b.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    assert_eq!(ping(&mut b, &id).status, 200);
}

#[test]
fn the_store_paths_give_the_same_output_whole_or_split() {
    let mut whole = node();
    let id = open(&mut whole);
    let records = whole.store.records.clone();
    let script = [
        legacy(&request(2, "ping", json!({})), Some(&id)),
        legacy(&request(3, "logging/setLevel", json!({ "level": "info" })), Some(&id)),
        legacy(&request(4, "tools/call", json!({ "name": "test_logging_tool" })), Some(&id)),
    ]
    .concat();
    let run = |chunk: usize| {
        let mut n = node_with(http(), 6);
        n.store.records = records.clone();
        let out = n.feed(&script, chunk);
        (out, n.store.log)
    };
    let reference = run(usize::MAX);
    assert!(reference.1.len() == 2, "a load and a save: {:?}", reference.1);
    for chunk in [1, 3, 7, 64, 333] {
        assert_eq!(run(chunk), reference, "split every {chunk} bytes");
    }
}

#[test]
fn a_change_made_on_another_node_is_loaded_when_the_copy_here_is_idle() {
    let mut a = node();
    let id = open(&mut a);
    let mut b = node_with(http(), 6);
    b.store = Store { log: Vec::new(), ..a.store.clone() };
    assert_eq!(ping(&mut b, &id).status, 200);
    assert_eq!(logged(&mut b, &id), 0, "no log level set: no log messages");
    // Node A sets a log level; its store (shared) says so to node B.
    a.store.log.clear();
    let r = one(&mut a, &legacy(&request(2, "logging/setLevel", json!({ "level": "info" })), Some(&id)));
    assert_eq!(r.status, 200);
    b.store.records = a.store.records.clone();
    assert!(b.e.session_changed_elsewhere(id.as_bytes()), "an idle copy is dropped");
    assert_eq!(b.e.sessions(), 0, "dropped, not ended");
    assert_eq!(logged(&mut b, &id), 3, "the next request loads the new record");
    assert!(b.store.log.iter().filter(|l| l.starts_with("load")).count() == 2, "{:?}", b.store.log);
    // Not held, forged or foreign: nothing to drop.
    assert!(!b.e.session_changed_elsewhere(b"A-forged-id"));
    assert!(!node_with(http(), 7).e.session_changed_elsewhere(id.as_bytes()));
}

#[test]
fn a_copy_in_use_is_kept_when_another_node_changes_the_session() {
    let mut b = node();
    let id = open(&mut b);
    // A request in flight (a slow tool) holds the copy.
    let call = request(3, "tools/call", json!({ "name": "test_tool_with_progress" }));
    let raw = legacy(&call, Some(&id));
    let n = b.e.handle_input(b.now, b.conn, &raw);
    assert_eq!(n, raw.len());
    let held = b.e.poll_event().is_some();
    assert!(held, "the call reached the host");
    assert!(!b.e.session_changed_elsewhere(id.as_bytes()), "in use: kept");
    assert_eq!(b.e.sessions(), 1);
}

#[test]
fn a_session_ended_on_another_node_ends_here_without_telling_the_store() {
    let mut a = node();
    let id = open(&mut a);
    let log = a.store.log.len();
    assert!(a.e.session_ended_elsewhere(a.now, id.as_bytes()));
    assert_eq!(a.e.sessions(), 0);
    assert_eq!(a.store.log.len(), log, "the other node told the store");
    // The store forgot it too (the other node's DELETE): the id is now unknown.
    a.store.records.clear();
    assert_eq!(ping(&mut a, &id).status, 404);
    assert!(!a.e.session_ended_elsewhere(a.now, id.as_bytes()), "not held any more");
}

#[test]
fn a_session_ended_elsewhere_closes_its_stream_here() {
    let mut a = node();
    let id = open(&mut a);
    let stream = open_stream(&mut a, &id);
    assert!(a.e.session_ended_elsewhere(a.now, id.as_bytes()));
    let rest = String::from_utf8(a.e.pending_output(stream).to_vec()).unwrap();
    assert!(rest.ends_with("0\r\n\r\n"), "the stream's last chunk: {rest:?}");
}

/// One ticket slot, room for two sessions in memory, and three sessions opened (the first
/// left memory to make room, kept by the store): the client, the tickets of the tool calls
/// the host holds, the first session's id and the third's.
fn three_sessions_at_a_cap_of_two()
-> (Client, std::rc::Rc<std::cell::RefCell<Vec<mcp_engine::Ticket>>>, String, String) {
    let held: std::rc::Rc<std::cell::RefCell<Vec<mcp_engine::Ticket>>> = Default::default();
    let keep = std::rc::Rc::clone(&held);
    let mut config = everything::config();
    config.secret_key([3; 32]);
    config.max_in_flight(1);
    let mut h = http();
    h.max_sessions(2);
    let host = Box::new(move |ev: mcp_engine::Event<'_>| match ev {
        mcp_engine::Event::CallTool(call) => keep.borrow_mut().push(call.ticket),
        ev => everything::respond(ev),
    });
    let mut c = client_of(config, h, everything::catalog(), host);
    c.e.set_entropy(&[5; 32]);
    let (a, _b, s3) = (open(&mut c), open(&mut c), open(&mut c));
    assert_eq!(c.e.sessions(), 2, "the first left memory to make room");
    (c, held, a, s3)
}

/// Found by the session_streams fuzz target in store mode: a session loaded for a request
/// that then waited for a ticket slot was dropped from memory again (to make room for a
/// new one) before the request was served, which was then answered `404`.
#[test]
fn a_session_loaded_for_a_waiting_request_stays_until_the_request_is_served() {
    use mcp_tests::wire::{more, on_new};
    let (mut c, held, a, s3) = three_sessions_at_a_cap_of_two();
    let call = |id: i64| request(id, "tools/call", json!({ "name": "test_simple_text" }));
    // A's request waits for the store; meanwhile a request of the third takes the only slot.
    c.store.hold = true;
    let (on_a, out) = on_new(&mut c, &legacy(&call(5), Some(&a)));
    assert!(out.is_empty() && c.store.held.len() == 1);
    c.store.hold = false;
    let _ = on_new(&mut c, &legacy(&call(6), Some(&s3)));
    assert_eq!(held.borrow().len(), 1);
    // A comes back and waits for the slot; a new session finds no room now.
    let record = c.store.records[&a].clone();
    c.e.session_loaded(c.now, c.store.held[0], Loaded::Record(&record));
    assert!(more(&mut c, on_a).is_empty(), "A's request waits for the slot");
    let r = one(&mut c, &legacy(&initialize(), None));
    assert_eq!(r.status, 503, "A is not dropped while its request waits: {r:?}");
    // The slot frees: A's request is served in A.
    let t = held.borrow()[0];
    c.e.answer_tool(t, &mcp_engine::ToolOutput::new(&[mcp_engine::Content::text("six")])).unwrap();
    let mut out = Vec::new();
    c.drain(&mut out);
    assert_eq!(held.borrow().len(), 2, "A's call reached the host");
    let t = held.borrow()[1];
    c.e.answer_tool(t, &mcp_engine::ToolOutput::new(&[mcp_engine::Content::text("five")])).unwrap();
    let r = parse_responses(more(&mut c, on_a).as_bytes());
    assert_eq!(r[0].status, 200, "{r:?}");
    assert_eq!(r[0].json()["result"]["content"][0]["text"], "five");
}

#[test]
fn a_session_two_requests_loaded_stays_until_the_second_is_served() {
    // Found by the session_streams fuzz target: two requests of a stored session ask the
    // store at once; the second load finds the session already back (the first brought
    // it) and did not hold it for its request, which then waited for a slot while the
    // session left memory at the cap, and got 404.
    use mcp_tests::wire::{more, on_new};
    let (mut c, held, a, s3) = three_sessions_at_a_cap_of_two();
    let call = |id: i64| request(id, "tools/call", json!({ "name": "test_simple_text" }));
    let answer = |c: &mut Client, i: usize, text: &str| {
        let t = held.borrow()[i];
        c.e.answer_tool(t, &mcp_engine::ToolOutput::new(&[mcp_engine::Content::text(text)])).unwrap();
        let mut out = Vec::new();
        c.drain(&mut out);
    };
    // Two requests of A wait for the store; a request of the third takes the only slot.
    c.store.hold = true;
    let (on_a1, out) = on_new(&mut c, &legacy(&call(1), Some(&a)));
    assert!(out.is_empty());
    // (The connection of the third's second request, opened between A's two, is served
    // before A's second.)
    let on_s3 = c.e.open(c.now, None).unwrap();
    let (on_a2, out) = on_new(&mut c, &legacy(&call(2), Some(&a)));
    assert!(out.is_empty() && c.store.held.len() == 2, "{:?}", c.store.held);
    c.store.hold = false;
    let _ = on_new(&mut c, &legacy(&call(3), Some(&s3)));
    assert_eq!(held.borrow().len(), 1);
    // The first load brings A back; a second request of the third waits behind A's first;
    // then the second load answers (A is here already).
    let record = c.store.records[&a].clone();
    c.e.session_loaded(c.now, c.store.held[0], Loaded::Record(&record));
    let keep = std::mem::replace(&mut c.conn, on_s3);
    assert!(c.feed(&legacy(&call(4), Some(&s3)), usize::MAX).is_empty());
    c.conn = keep;
    c.e.session_loaded(c.now, c.store.held[1], Loaded::Record(&record));
    assert!(more(&mut c, on_a1).is_empty() && more(&mut c, on_a2).is_empty(), "both wait for the slot");
    // A's first request is served and answered; the third's second request takes the slot.
    answer(&mut c, 0, "three");
    assert_eq!(held.borrow().len(), 2, "A's first call reached the host");
    answer(&mut c, 1, "one");
    let r = parse_responses(more(&mut c, on_a1).as_bytes());
    assert_eq!(r[0].status, 200, "{r:?}");
    assert_eq!(held.borrow().len(), 3, "the third's second call reached the host");
    assert!(more(&mut c, on_a2).is_empty(), "A's second request still waits");
    // Nothing of A is in flight, but its second request waits: A stays.
    let r = one(&mut c, &legacy(&initialize(), None));
    assert_eq!(r.status, 503, "A is not dropped while its second request waits: {r:?}");
    answer(&mut c, 2, "four");
    assert_eq!(held.borrow().len(), 4, "A's second call reached the host");
    answer(&mut c, 3, "two");
    let r = parse_responses(more(&mut c, on_a2).as_bytes());
    assert_eq!(r[0].status, 200, "{r:?}");
    assert_eq!(r[0].json()["result"]["content"][0]["text"], "two");
}

/// Opens the standalone stream of session `id` on a connection of its own; returns it
/// (the client's own connection stays `c.conn`).
fn open_stream(c: &mut Client, id: &str) -> mcp_engine::http::ConnId {
    let keep = c.conn;
    c.conn = c.e.open(c.now, None).unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: localhost:3000\r\nAccept: text/event-stream\r\nMcp-Session-Id: {id}\r\n\
         MCP-Protocol-Version: {V}\r\n\r\n"
    );
    let head = String::from_utf8(c.feed(get.as_bytes(), usize::MAX)).unwrap();
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"), "{head}");
    let stream = c.conn;
    c.conn = keep;
    stream
}

#[test]
fn a_copy_whose_stream_closed_is_dropped_when_another_node_changes_it() {
    let mut b = node();
    let id = open(&mut b);
    let stream = open_stream(&mut b, &id);
    assert!(!b.e.session_changed_elsewhere(id.as_bytes()), "its stream is open: kept");
    b.e.handle_closed(b.now, stream);
    assert!(b.e.session_changed_elsewhere(id.as_bytes()), "the stream's connection is gone: dropped");
    assert_eq!(b.e.sessions(), 0);
    assert_eq!(ping(&mut b, &id).status, 200, "loaded again");
    assert_eq!(b.store.log.iter().filter(|l| l.starts_with("load")).count(), 1, "{:?}", b.store.log);
}

#[test]
fn after_missed_notices_idle_copies_are_dropped_and_copies_in_use_checked_at_their_next_request() {
    let mut b = node();
    let idle = open(&mut b);
    let busy = open(&mut b);
    let _stream = open_stream(&mut b, &busy);
    // Another node sets a log level on `busy`: the store has it, this node did not hear.
    let mut a = node_with(http(), 6);
    a.store = Store { log: Vec::new(), ..b.store.clone() };
    let r = one(&mut a, &legacy(&request(2, "logging/setLevel", json!({ "level": "info" })), Some(&busy)));
    assert_eq!(r.status, 200);
    b.store.records = a.store.records.clone();
    assert_eq!(logged(&mut b, &busy), 0, "the copy here is stale and nobody said so");

    b.store.log.clear();
    assert_eq!(b.e.sessions_changed_elsewhere(), 1, "the idle copy is dropped");
    assert_eq!(b.e.sessions(), 1, "the one with a stream stays");
    assert!(b.store.log.is_empty(), "nothing asked of the store until a request comes");
    assert_eq!(logged(&mut b, &busy), 3, "checked against the store first: the level set elsewhere");
    assert_eq!(b.store.log, [format!("load {busy}")]);
    assert_eq!(logged(&mut b, &busy), 3);
    assert_eq!(b.store.log.len(), 1, "fresh again: served from memory");
    assert_eq!(ping(&mut b, &idle).status, 200, "the dropped one comes back from the store");
    assert_eq!(b.store.log, [format!("load {busy}"), format!("load {idle}")]);
}

#[test]
fn a_stale_copy_the_store_no_longer_holds_ends_here() {
    let mut b = node();
    let id = open(&mut b);
    let stream = open_stream(&mut b, &id);
    // Ended on another node (its `DELETE`), unheard here.
    b.store.records.clear();
    assert_eq!(b.e.sessions_changed_elsewhere(), 0);
    let r = ping(&mut b, &id);
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!(b.e.sessions(), 0);
    let rest = String::from_utf8(b.e.pending_output(stream).to_vec()).unwrap();
    assert!(rest.ends_with("0\r\n\r\n"), "its stream ended: {rest:?}");
    // A store that cannot be asked leaves a stale copy alone: 503, and the next try
    // checks again.
    let mut c = node();
    let id = open(&mut c);
    let _stream = open_stream(&mut c, &id);
    c.e.sessions_changed_elsewhere();
    c.store.fail = true;
    assert_eq!(ping(&mut c, &id).status, 503);
    c.store.fail = false;
    assert_eq!(ping(&mut c, &id).status, 200);
    assert_eq!(c.store.log.iter().filter(|l| l.starts_with("load")).count(), 2, "{:?}", c.store.log);
}

#[test]
fn a_session_in_use_is_touched_in_the_store_once_per_interval_off_the_request_path() {
    let mut h = http();
    h.session_touch_every(Duration::from_secs(600));
    let mut c = node_with(h, 5);
    let id = open(&mut c);
    let at = |c: &mut Client, secs: u64| c.now = Instant::ZERO + Duration::from_secs(secs);
    let touches = |c: &Client| c.store.log.iter().filter(|l| l.starts_with("touch")).count();
    c.store.log.clear();
    for secs in [60, 300, 599] {
        at(&mut c, secs);
        assert_eq!(ping(&mut c, &id).status, 200);
    }
    assert!(c.store.log.is_empty(), "within the interval of its last save: nothing");
    at(&mut c, 600);
    assert_eq!(ping(&mut c, &id).status, 200, "answered as ever: nothing waits for the touch");
    assert_eq!(c.store.log, [format!("touch {id}")]);
    for secs in [601, 900, 1199] {
        at(&mut c, secs);
        assert_eq!(ping(&mut c, &id).status, 200);
    }
    assert_eq!(touches(&c), 1, "once per interval");
    // A change is a save: the interval starts again from it.
    at(&mut c, 1200);
    let r = one(&mut c, &legacy(&request(2, "logging/setLevel", json!({ "level": "info" })), Some(&id)));
    assert_eq!(r.status, 200);
    at(&mut c, 1799);
    assert_eq!(ping(&mut c, &id).status, 200);
    assert_eq!(touches(&c), 1, "saved at 1,200 s: not due before 1,800 s");
    at(&mut c, 1800);
    assert_eq!(ping(&mut c, &id).status, 200);
    assert_eq!(touches(&c), 2);
    // Zero: never.
    let mut h = http();
    h.session_touch_every(Duration::ZERO);
    let mut c = node_with(h, 5);
    let id = open(&mut c);
    at(&mut c, 1000);
    assert_eq!(ping(&mut c, &id).status, 200);
    assert_eq!(touches(&c), 0);
}
