//! The event store, sans-IO (`HttpConfig::event_store`): the events of session streams
//! are handed to the host, and a `Last-Event-ID` this engine cannot replay from memory
//! (another node wrote the stream) is answered from what the host kept: every event in
//! order with its own id, a gap said as from memory, a foreign or forged id refused
//! without asking, a failing or stalled store `503`, and a request still running on the
//! node that wrote it followed by polling (`retry:`).

use mcp_engine::Commands;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_engine::http::store::LoadedEvents;
use mcp_engine::http::{AllowedOrigins, Authorization, ConnId, HttpConfig};
use mcp_engine::{Content, Event, Instant, LogLevel, Ticket, ToolOutput};
use mcp_fixture as everything;
use mcp_tests::wire::{
    Client, SSE, Store, client_of, get, more, on_new, on_new_in, open_session, session_post, sse_events,
};
use serde_json::{Value, json};

const V: &str = "2025-11-25";

fn http(events: bool) -> HttpConfig {
    let mut h = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    h.session_store(true).event_store(events);
    h
}

/// A node: the store and the event store on, the key every node shares.
fn node(entropy: u8) -> Client {
    node_with(http(true), entropy, Box::new(everything::respond))
}

fn node_with(http: HttpConfig, entropy: u8, host: mcp_tests::wire::Host) -> Client {
    let mut config = everything::config();
    config.secret_key([3; 32]);
    let mut c = client_of(config, http, everything::catalog(), host);
    c.e.set_entropy(&[entropy; 32]);
    c
}

/// Node `b` sees what `a`'s store holds now (records and events), with a log of its own.
fn share(a: &Client, b: &mut Client) {
    b.store = Store { log: Vec::new(), ..a.store.clone() };
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// A session logging at `info` and a tool call streaming three log messages, then its
/// answer: the session id and the call's events (priming, three logs, the answer).
fn logging_call(c: &mut Client) -> (String, Vec<(String, String)>) {
    let id = open_session(c, V);
    let level = request(2, "logging/setLevel", json!({ "level": "info" }));
    assert_eq!(c.send(&session_post(&level, V, Some(&id)))[0].status, 200);
    let call = request(3, "tools/call", json!({ "name": "test_tool_with_logging" }));
    let (_, raw) = on_new(c, &session_post(&call, V, Some(&id)));
    let events = sse_events(&raw);
    assert_eq!(events.len(), 5, "{raw}");
    (id, events)
}

fn resume(id: &str, last: &str) -> Vec<u8> {
    get(Some(id), &format!("{SSE}Last-Event-ID: {last}\r\n"))
}

/// What the store was asked for events, in order.
fn event_loads(c: &Client) -> Vec<&String> {
    c.store.log.iter().filter(|l| l.starts_with("events ")).collect()
}

#[test]
fn a_stream_written_on_one_node_resumes_on_another_with_every_event_in_order() {
    let mut a = node(5);
    let (id, events) = logging_call(&mut a);
    let kept: Vec<_> = a.store.events.iter().filter(|e| e.session == id).collect();
    assert_eq!(kept.len(), 5, "every event of the stream was handed over: {kept:?}");
    assert_eq!(kept.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    assert!(kept.iter().all(|e| e.stream == kept[0].stream));
    assert_eq!(kept.iter().map(|e| e.last).collect::<Vec<_>>(), [false, false, false, false, true]);
    assert_eq!(kept[1].data, events[1].1.as_bytes());

    let mut b = node(6);
    share(&a, &mut b);
    let (_, out) = on_new(&mut b, &resume(&id, &events[0].0));
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert_eq!(sse_events(&out), events[1..].to_vec(), "the rest, in order, with the same ids");
    assert!(!out.contains(": gap") && !out.contains("retry:"), "{out}");
    assert!(out.ends_with("0\r\n\r\n"), "the request is over: the stream ends: {out:?}");
    let stream = kept[0].stream;
    assert_eq!(b.store.log, [format!("load {id}"), format!("events {id} {stream} 1")]);

    // Resumed after the answer: nothing is missed, the stream ends at once.
    let (_, out) = on_new(&mut b, &resume(&id, &events[4].0));
    assert!(out.starts_with("HTTP/1.1 200") && sse_events(&out).is_empty(), "{out}");
    assert!(!out.contains(": gap") && out.ends_with("0\r\n\r\n"), "{out}");
}

#[test]
fn the_writing_node_replays_from_memory_without_asking_the_store() {
    let mut a = node(5);
    let (id, events) = logging_call(&mut a);
    let (_, out) = on_new(&mut a, &resume(&id, &events[1].0));
    assert_eq!(sse_events(&out), events[2..].to_vec());
    assert!(event_loads(&a).is_empty(), "{:?}", a.store.log);
}

#[test]
fn the_standalone_stream_resumes_on_another_node_and_goes_on_there() {
    let mut a = node(5);
    let id = open_session(&mut a, V);
    let (stream, opened) = on_new(&mut a, &get(Some(&id), SSE));
    assert_eq!(sse_events(&opened).len(), 1, "the priming event: {opened}");
    let mut d = everything::Dynamic::default();
    for _ in 0..3 {
        d.tool = !d.tool;
        a.e.replace_catalog(everything::catalog_with(d)).unwrap();
    }
    let seen = sse_events(&more(&mut a, stream));
    assert_eq!(seen.len(), 3, "{seen:?}");
    a.e.handle_closed(a.now, stream);

    let mut b = node(6);
    share(&a, &mut b);
    let (on_b, out) = on_new(&mut b, &resume(&id, &seen[0].0));
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert_eq!(sse_events(&out), seen[1..].to_vec(), "{out}");
    assert!(!out.contains("retry:") && !out.ends_with("0\r\n\r\n"), "it stays open: {out:?}");
    // It is B's standalone stream now: B's list changes come on it, with ids of B's own.
    let d = everything::Dynamic { tool: true, ..Default::default() };
    b.e.replace_catalog(everything::catalog_with(d)).unwrap();
    let live = sse_events(&more(&mut b, on_b));
    assert_eq!(live.len(), 1, "{live:?}");
    assert!(live[0].1.contains("tools/list_changed"));
    assert!(!seen.iter().any(|(i, _)| *i == live[0].0), "a new id");
    let a_stream = a.store.events.iter().find(|e| e.session == id).map(|e| e.stream);
    let b_stream = b.store.events.iter().rev().find(|e| e.session == id).map(|e| e.stream);
    assert_eq!(a_stream, Some(0));
    assert_ne!(b_stream, a_stream, "B numbers its standalone stream apart from A's");
    // A second standalone stream on B is refused while B's is open, resumed or not.
    let (_, out) = on_new(&mut b, &resume(&id, &seen[0].0));
    assert!(out.starts_with("HTTP/1.1 409"), "{out}");

    // The client goes back to A with B's id: A never wrote that stream, the store did.
    b.e.handle_closed(b.now, on_b);
    share(&b, &mut a);
    let (_, out) = on_new(&mut a, &resume(&id, &live[0].0));
    assert!(out.starts_with("HTTP/1.1 200") && sse_events(&out).is_empty(), "{out}");
    assert!(!out.contains(": gap"), "nothing was missed: {out}");
    assert_eq!(event_loads(&a).len(), 1, "{:?}", a.store.log);
}

#[test]
fn a_replay_from_the_store_says_when_events_were_dropped() {
    let mut a = node(5);
    let (id, events) = logging_call(&mut a);
    let mut b = node(6);
    share(&a, &mut b);
    // The store keeps the newest two events of a stream.
    b.store.events.retain(|e| e.session != id || e.seq >= 4);
    let (_, out) = on_new(&mut b, &resume(&id, &events[0].0));
    assert!(out.contains(": gap"), "{out}");
    assert_eq!(sse_events(&out), events[3..].to_vec(), "the newest, still kept");
    assert!(out.find(": gap") < out.find("data: "), "the gap is said first");

    // A hole inside what is kept (an event not handed over) is a gap too.
    let mut c = node(7);
    share(&a, &mut c);
    c.store.events.retain(|e| e.session != id || e.seq != 3);
    let (_, out) = on_new(&mut c, &resume(&id, &events[0].0));
    assert!(out.contains(": gap"), "{out}");
    let got = sse_events(&out);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], events[1]);
    assert_eq!(got[1..], events[3..]);

    // The store keeps nothing of the stream (it expired there): a gap, and the end.
    let mut d = node(8);
    share(&a, &mut d);
    d.store.events.clear();
    let (_, out) = on_new(&mut d, &resume(&id, &events[0].0));
    assert!(out.starts_with("HTTP/1.1 200") && out.contains(": gap"), "{out}");
    assert!(sse_events(&out).is_empty());
}

#[test]
fn a_replay_from_the_store_is_bounded_by_the_replay_buffer() {
    let mut a = node(5);
    let (id, events) = logging_call(&mut a);
    let mut h = http(true);
    h.replay_buffer(200);
    let mut b = node_with(h, 6, Box::new(everything::respond));
    share(&a, &mut b);
    let (_, out) = on_new(&mut b, &resume(&id, &events[0].0));
    assert!(out.contains(": gap"), "{out}");
    let got = sse_events(&out);
    assert!(!got.is_empty() && got.len() < 4, "{got:?}");
    assert_eq!(got.last(), events.last(), "the newest are written");
    assert!(got.iter().map(|e| e.1.len()).sum::<usize>() <= 200);
}

#[test]
fn a_foreign_or_forged_last_event_id_is_refused_without_asking_the_store() {
    let mut a = node(5);
    let (id, events) = logging_call(&mut a);
    let other = open_session(&mut a, V);
    let mut b = node(6);
    share(&a, &mut b);
    let (_, out) = on_new(&mut b, &resume(&other, &events[1].0));
    assert!(out.starts_with("HTTP/1.1 400"), "another session's event id: {out}");
    let forged = format!("{}A", &events[1].0[..31]);
    let (_, out) = on_new(&mut b, &resume(&id, &forged));
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    // Sealed by another key: refused the same way.
    let mut elsewhere = node(6);
    elsewhere.e = {
        let mut config = everything::config();
        config.secret_key([4; 32]);
        let mut e = mcp_engine::http::HttpEngine::new(config, http(true), everything::catalog());
        e.set_entropy(&[6; 32]);
        e
    };
    elsewhere.conn = elsewhere.e.open(Instant::ZERO, None).unwrap();
    let other_key = open_session(&mut elsewhere, V);
    let (_, out) = on_new(&mut b, &resume(&id, &other_key[..32]));
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    assert!(event_loads(&b).is_empty(), "the store was not asked: {:?}", b.store.log);
}

#[test]
fn a_failing_or_stalled_event_store_makes_the_get_503() {
    let mut a = node(5);
    let (id, events) = logging_call(&mut a);
    let mut b = node(6);
    share(&a, &mut b);
    b.store.events_fail = true;
    let (_, out) = on_new(&mut b, &resume(&id, &events[0].0));
    assert!(out.starts_with("HTTP/1.1 503"), "{out}");
    assert!(out.to_ascii_lowercase().contains("retry-after: 1\r\n"), "{out}");

    b.store.events_fail = false;
    b.store.events_hold = true;
    let (conn, out) = on_new(&mut b, &resume(&id, &events[0].0));
    assert!(out.is_empty(), "it waits for the store: {out}");
    assert_eq!(b.store.events_held, [conn]);
    b.now = b.now + Duration::from_secs(5);
    b.e.handle_timeout(b.now);
    let out = more(&mut b, conn);
    assert!(out.starts_with("HTTP/1.1 503"), "{out}");
    assert!(out.to_ascii_lowercase().contains("retry-after: 1\r\n"), "{out}");
    // A late answer is ignored.
    b.e.events_loaded(b.now, conn, LoadedEvents::Events(&[]));
    assert!(more(&mut b, conn).is_empty());
    // The store answers again: so does the resumption.
    b.store.events_hold = false;
    let (_, out) = on_new(&mut b, &resume(&id, &events[0].0));
    assert_eq!(sse_events(&out), events[1..].to_vec(), "{out}");
}

/// A node whose host keeps every `tools/call` ticket (answering the rest).
fn holding_node(entropy: u8) -> (Client, Rc<RefCell<Vec<Ticket>>>) {
    let held: Rc<RefCell<Vec<Ticket>>> = Rc::default();
    let h = Rc::clone(&held);
    let host = Box::new(move |ev: Event<'_>| match ev {
        Event::CallTool(call) => h.borrow_mut().push(call.ticket),
        ev => everything::respond(ev),
    });
    (node_with(http(true), entropy, host), held)
}

#[test]
fn a_request_still_running_on_the_writing_node_is_followed_by_polling() {
    let (mut a, held) = holding_node(5);
    let id = open_session(&mut a, V);
    let level = request(2, "logging/setLevel", json!({ "level": "info" }));
    assert_eq!(a.send(&session_post(&level, V, Some(&id)))[0].status, 200);
    let call = request(3, "tools/call", json!({ "name": "test_simple_text" }));
    let (conn, _) = on_new(&mut a, &session_post(&call, V, Some(&id)));
    let t = held.borrow()[0];
    a.e.notify_log(t, LogLevel::Info, None, "one").unwrap();
    let seen = sse_events(&more(&mut a, conn));
    assert_eq!(seen.len(), 2, "priming and the first log: {seen:?}");
    // The connection drops; the request goes on at A, and what it says goes to the store.
    a.e.handle_closed(a.now, conn);
    a.e.notify_log(t, LogLevel::Info, None, "two").unwrap();
    let mut out = Vec::new();
    a.drain(&mut out);

    // The client comes back on B: what is stored, then `retry:` (the answer is not there).
    let mut b = node(6);
    share(&a, &mut b);
    let (_, out) = on_new(&mut b, &resume(&id, &seen[0].0));
    let got = sse_events(&out);
    assert_eq!(got.len(), 2, "{out}");
    assert_eq!(got[0], seen[1]);
    assert!(got[1].1.contains("\"two\""), "{got:?}");
    assert!(out.contains("retry: 1000\n"), "{out}");
    assert!(out.ends_with("0\r\n\r\n"), "{out:?}");
    assert_eq!(a.e.in_flight(), 1, "the request still runs at A");

    // A answers; the client polls B again with the last id it got, and gets the answer.
    a.e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])).unwrap();
    a.drain(&mut Vec::new());
    share(&a, &mut b);
    let (_, out) = on_new(&mut b, &resume(&id, &got[1].0));
    let rest = sse_events(&out);
    assert_eq!(rest.len(), 1, "{out}");
    let answer: Value = serde_json::from_str(&rest[0].1).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "done");
    assert!(!out.contains("retry:") && out.ends_with("0\r\n\r\n"), "over: {out:?}");
}

#[test]
fn a_resumption_on_the_writing_node_takes_its_parked_request_back() {
    let (mut a, held) = holding_node(5);
    let id = open_session(&mut a, V);
    let call = request(3, "tools/call", json!({ "name": "test_simple_text" }));
    let (conn, _) = on_new(&mut a, &session_post(&call, V, Some(&id)));
    let t = held.borrow()[0];
    assert_eq!(a.e.reconnect_later(t, Duration::from_millis(500)), Ok(true));
    let priming = sse_events(&more(&mut a, conn));
    assert_eq!(priming.len(), 1);
    let (back, out) = on_new(&mut a, &resume(&id, &priming[0].0));
    assert!(out.starts_with("HTTP/1.1 200") && !out.contains("retry:"), "{out}");
    assert!(event_loads(&a).is_empty(), "a parked stream is held here");
    a.e.answer_tool(t, &ToolOutput::new(&[Content::text("later")])).unwrap();
    let rest = sse_events(&more(&mut a, back));
    assert_eq!(rest.len(), 1);
    assert!(a.store.events.last().is_some_and(|e| e.last), "the answer is the stream's last");
}

#[test]
fn the_get_and_post_paths_split_anywhere_give_the_same_output() {
    // POST on A, byte by byte: the same events, handed over alike.
    let run = |chunk: usize| {
        let mut a = node(5);
        let id = open_session(&mut a, V);
        let level = request(2, "logging/setLevel", json!({ "level": "info" }));
        assert_eq!(a.send(&session_post(&level, V, Some(&id)))[0].status, 200);
        let call = request(3, "tools/call", json!({ "name": "test_tool_with_logging" }));
        let (_, raw) = on_new_in(&mut a, &session_post(&call, V, Some(&id)), chunk);
        (a, id, raw)
    };
    let (a, id, whole) = run(usize::MAX);
    for chunk in [1, 7] {
        let (other, _, raw) = run(chunk);
        assert_eq!(raw, whole, "chunks of {chunk}");
        assert_eq!(other.store.events, a.store.events);
    }
    // GET on B, whole and split: the same replay.
    let events = sse_events(&whole);
    let replay = |chunk: usize| {
        let mut b = node(6);
        share(&a, &mut b);
        on_new_in(&mut b, &resume(&id, &events[0].0), chunk).1
    };
    let expected = replay(usize::MAX);
    assert_eq!(sse_events(&expected), events[1..].to_vec());
    for chunk in [1, 3, 10] {
        assert_eq!(replay(chunk), expected, "chunks of {chunk}");
    }
}

#[test]
fn with_the_event_store_off_nothing_is_handed_over_and_nothing_is_asked() {
    let mut a = node_with(http(false), 5, Box::new(everything::respond));
    let (id, events) = logging_call(&mut a);
    assert!(a.store.events.is_empty());
    let mut b = node_with(http(false), 6, Box::new(everything::respond));
    share(&a, &mut b);
    let (_, out) = on_new(&mut b, &resume(&id, &events[0].0));
    assert!(out.starts_with("HTTP/1.1 200") && out.contains(": gap"), "{out}");
    assert!(sse_events(&out).is_empty());
    assert!(event_loads(&b).is_empty());
}

#[test]
fn a_session_ended_while_its_events_load_is_404() {
    let mut a = node(5);
    let (id, events) = logging_call(&mut a);
    let mut b = node(6);
    share(&a, &mut b);
    b.store.events_hold = true;
    let (conn, _) = on_new(&mut b, &resume(&id, &events[0].0));
    assert!(b.e.session_ended_elsewhere(b.now, id.as_bytes()));
    let conn: ConnId = conn;
    b.e.events_loaded(b.now, conn, LoadedEvents::Events(&[]));
    let out = more(&mut b, conn);
    assert!(out.starts_with("HTTP/1.1 404"), "{out}");
}

#[test]
fn the_writing_node_asks_the_store_when_its_buffer_dropped_what_the_client_missed() {
    let mut h = http(true);
    h.replay_buffer(200);
    let mut a = node_with(h, 5, Box::new(everything::respond));
    let (id, events) = logging_call(&mut a);
    // From memory this would be a gap; the store (bounded by the buffer per replay) has
    // the newest events again, and the stream is not its own memory's any more.
    let (_, out) = on_new(&mut a, &resume(&id, &events[3].0));
    assert_eq!(sse_events(&out), events[4..].to_vec(), "{out}");
    assert!(!out.contains(": gap"), "{out}");
    let (_, out) = on_new(&mut a, &resume(&id, &events[0].0));
    assert_eq!(event_loads(&a).len(), 1, "covered by memory once, then the store: {:?}", a.store.log);
    assert!(out.contains(": gap"), "more than the buffer's bytes: the newest, and the gap said: {out}");
}
