//! Requests the host sends a session-bound client outside any request
//! (`Engine::ask_client`, `HttpEngine::ask_client`): on stdio they go out on the output,
//! over HTTP on the session's standalone `GET` stream; the client's reply (or an error,
//! a timeout, the session or stream gone) comes back as `Event::ClientReply`, exactly
//! once per ask.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_engine::event::{AskError, ClientAsk};
use mcp_engine::http::{AllowedOrigins, Authorization, ConnId, HttpConfig};
use mcp_engine::mrtr::{InputKind, InputRequest};
use mcp_engine::{Config, Engine, Event, Instant};
use mcp_fixture as everything;
use mcp_tests::wire::{Client, SSE, client_of, get, more, on_new, on_new_in, session_post, sse_events};
use mcp_tests::{drain_with, lines, request};
use serde_json::{Value, json};

/// What the host heard: `(request id, Ok(result) | Err((code, message)))`.
type Replies = Rc<RefCell<Vec<(u64, Result<Value, (i64, String)>)>>>;

/// A host that records every reply and answers everything else with the fixture.
fn recording(replies: &Replies) -> impl FnMut(Event<'_>) + 'static {
    let replies = replies.clone();
    move |ev| match ev {
        Event::ClientReply(r) => {
            let outcome = match r.result {
                Ok(v) => Ok(serde_json::from_str(v.raw()).unwrap()),
                Err(e) => Err((e.code(), e.message().into_owned())),
            };
            replies.borrow_mut().push((r.ask.request_id(), outcome));
        }
        ev => everything::respond(ev),
    }
}

fn config() -> Config {
    let mut c = everything::config();
    c.input_timeout(Duration::from_secs(30));
    c
}

fn init(version: &str, caps: Value) -> String {
    let mut s = request(
        0,
        "initialize",
        json!({ "protocolVersion": version, "capabilities": caps, "clientInfo": { "name": "t", "version": "1" } }),
    );
    s.push_str(&mcp_tests::notification("notifications/initialized", json!({})));
    s
}

fn result(id: u64, value: &Value) -> String {
    format!("{}\n", json!({ "jsonrpc": "2.0", "id": id, "result": value }))
}

fn error(id: u64, code: i64, message: &str) -> String {
    format!("{}\n", json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }))
}

fn sampled() -> Value {
    json!({ "role": "assistant", "content": { "type": "text", "text": "4" }, "model": "m" })
}

const FORM: &str = r#"{"type":"object","properties":{"name":{"type":"string"}}}"#;

fn sample_params() -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string(
        r#"{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":10}"#.into(),
    )
    .unwrap()
}

// ------------------------------------------------------------------ stdio

struct Stdio {
    e: Engine,
    host: Box<dyn FnMut(Event<'_>)>,
    replies: Replies,
    now: Instant,
}

impl Stdio {
    fn new(caps: Value) -> Self {
        let replies = Replies::default();
        let host = Box::new(recording(&replies));
        let mut s =
            Self { e: Engine::new(config(), everything::catalog()), host, replies, now: Instant::ZERO };
        assert_eq!(s.send(&init("2025-11-25", caps)).len(), 1);
        s
    }

    fn send(&mut self, input: &str) -> Vec<Value> {
        mcp_tests::send_with(&mut self.e, self.now, &mut *self.host, input)
    }

    fn pump(&mut self) -> Vec<Value> {
        self.send("")
    }
}

#[test]
fn on_stdio_the_request_goes_out_and_the_reply_comes_back_once() {
    let mut s = Stdio::new(json!({ "sampling": {}, "roots": {} }));
    let params = sample_params();
    let ask = s.e.ask_client(&InputRequest::raw("k", InputKind::Sampling, &params)).unwrap();
    let out = s.pump();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["method"], "sampling/createMessage");
    assert_eq!(out[0]["id"], ask.request_id());
    assert_eq!(out[0]["params"]["maxTokens"], 10);
    assert_eq!(s.e.poll_timeout(), Some(Instant::ZERO + Duration::from_secs(30)));
    assert_eq!(s.e.in_flight(), 0, "an ask holds no ticket");
    assert!(s.send(&result(ask.request_id(), &sampled())).is_empty());
    assert_eq!(*s.replies.borrow(), [(ask.request_id(), Ok(sampled()))]);
    assert_eq!(s.e.poll_timeout(), None);
    // A second response, and a timeout later, finish nothing more.
    assert!(s.send(&result(ask.request_id(), &sampled())).is_empty());
    s.e.handle_timeout(Instant::ZERO + Duration::from_secs(60));
    assert!(s.pump().is_empty());
    assert_eq!(s.replies.borrow().len(), 1);

    // Roots, and ids go on from the engine's one sequence.
    let roots = s.e.ask_client(&InputRequest::list_roots("r")).unwrap();
    assert_eq!(roots.request_id(), ask.request_id() + 1);
    let out = s.pump();
    assert_eq!(out[0]["method"], "roots/list");
    // A result that does not fit its request is an error for the host.
    s.send(&result(roots.request_id(), &json!({ "roots": [{ "name": "no uri" }] })));
    let replies = s.replies.borrow();
    let (id, Err((code, message))) = &replies[1] else { panic!("{replies:?}") };
    assert_eq!((*id, *code), (roots.request_id(), -32602));
    assert!(message.contains("roots/list"), "{message}");
}

#[test]
fn on_stdio_what_the_client_did_not_declare_is_refused_and_nothing_is_written() {
    let form = serde_json::value::RawValue::from_string(FORM.into()).unwrap();
    // Before `initialize` there is no session to ask.
    let mut e = Engine::new(config(), everything::catalog());
    assert_eq!(e.ask_client(&InputRequest::list_roots("r")), Err(AskError::NoSession));
    // A 2026-07-28 stream (server/discover) opens no session either.
    let mut s = Stdio::new(json!({ "elicitation": {} }));
    assert_eq!(s.e.ask_client(&InputRequest::list_roots("r")), Err(AskError::NotDeclared(InputKind::Roots)));
    let params = sample_params();
    assert_eq!(
        s.e.ask_client(&InputRequest::raw("k", InputKind::Sampling, &params)),
        Err(AskError::NotDeclared(InputKind::Sampling))
    );
    // Form mode only: url mode is refused, form mode goes.
    assert_eq!(
        s.e.ask_client(&InputRequest::elicit_url("u", "Sign in", "https://example.com/a", "el-1")),
        Err(AskError::NotDeclared(InputKind::ElicitationUrl))
    );
    assert!(s.pump().is_empty(), "a refused ask writes nothing");
    assert_eq!(s.e.poll_timeout(), None);
    let ok = s.e.ask_client(&InputRequest::elicit("f", "Name?", &form)).unwrap();
    let out = s.pump();
    assert_eq!(out[0]["params"]["mode"], "form");
    assert_eq!(out[0]["id"], ok.request_id());
    // Sampling with tools needs `sampling.tools`.
    let mut s = Stdio::new(json!({ "sampling": {} }));
    let tools = serde_json::value::RawValue::from_string(
        r#"{"messages":[],"maxTokens":1,"tools":[{"name":"t","inputSchema":{"type":"object"}}]}"#.into(),
    )
    .unwrap();
    assert_eq!(
        s.e.ask_client(&InputRequest::raw("k", InputKind::Sampling, &tools)),
        Err(AskError::NotDeclared(InputKind::Sampling))
    );
}

#[test]
fn on_stdio_an_error_a_timeout_and_the_end_of_input_each_reach_the_host_once() {
    let mut s = Stdio::new(json!({ "roots": {} }));
    let a = s.e.ask_client(&InputRequest::list_roots("a")).unwrap();
    let b = s.e.ask_client(&InputRequest::list_roots("b")).unwrap();
    let c = s.e.ask_client(&InputRequest::list_roots("c")).unwrap();
    assert_eq!(s.pump().len(), 3);
    s.send(&error(a.request_id(), -1, "User rejected"));
    assert_eq!(s.replies.borrow()[0], (a.request_id(), Err((-1, "User rejected".into()))));
    let deadline = s.e.poll_timeout().unwrap();
    s.e.handle_timeout(Instant::from_micros(deadline.as_micros() - 1));
    assert!(s.pump().is_empty());
    assert_eq!(s.replies.borrow().len(), 1);
    // b times out; c is answered before the end of input fails it.
    s.send(&result(c.request_id(), &json!({ "roots": [] })));
    s.e.handle_timeout(deadline);
    s.pump();
    s.e.handle_timeout(deadline + Duration::from_secs(1));
    s.e.handle_eof(deadline);
    s.pump();
    let replies = s.replies.borrow();
    assert_eq!(replies.len(), 3, "{replies:?}");
    assert_eq!(replies[1], (c.request_id(), Ok(json!({ "roots": [] }))));
    assert_eq!(replies[2].0, b.request_id());
    assert_eq!(replies[2].1.as_ref().unwrap_err().0, -32001);
    drop(replies);
    assert_eq!(s.e.ask_client(&InputRequest::list_roots("d")), Err(AskError::ClientGone));

    // Waiting at the end of input: -32000.
    let mut s = Stdio::new(json!({ "roots": {} }));
    let a = s.e.ask_client(&InputRequest::list_roots("a")).unwrap();
    s.e.handle_eof(s.now);
    s.pump();
    assert_eq!(s.replies.borrow()[0].0, a.request_id());
    assert_eq!(s.replies.borrow()[0].1.as_ref().unwrap_err().0, -32000);
    assert!(s.e.is_finished());
}

#[test]
fn at_most_max_in_flight_asks_wait() {
    let mut config = config();
    config.max_in_flight(2);
    let replies = Replies::default();
    let mut e = Engine::new(config, everything::catalog());
    let mut host = recording(&replies);
    let mut out = Vec::new();
    e.handle_input(Instant::ZERO, init("2025-06-18", json!({ "roots": {} })).as_bytes());
    drain_with(&mut e, &mut host, &mut out);
    let a = e.ask_client(&InputRequest::list_roots("a")).unwrap();
    e.ask_client(&InputRequest::list_roots("b")).unwrap();
    assert_eq!(e.ask_client(&InputRequest::list_roots("c")), Err(AskError::TooMany));
    e.handle_input(Instant::ZERO, result(a.request_id(), &json!({ "roots": [] })).as_bytes());
    drain_with(&mut e, &mut host, &mut out);
    assert!(e.ask_client(&InputRequest::list_roots("c")).is_ok(), "a slot freed with the reply");
}

/// The client's responses and requests after an ask, as one input: whole, byte by byte
/// and split anywhere, the output and what the host heard are the same (a reply pauses
/// the input like a request does, so the host's reaction lands at the same place).
#[test]
fn on_stdio_a_reply_gives_the_same_output_however_the_input_is_split() {
    let run = |chunks: &[usize]| {
        let replies = Replies::default();
        let mut record = recording(&replies);
        let asked: Rc<RefCell<Vec<ClientAsk>>> = Rc::default();
        let mut e = Engine::new(config(), everything::catalog());
        let mut out = Vec::new();
        e.handle_input(Instant::ZERO, init("2025-11-25", json!({ "roots": {} })).as_bytes());
        drain_with(&mut e, &mut record, &mut out);
        let first = e.ask_client(&InputRequest::list_roots("a")).unwrap();
        let mut input = result(first.request_id(), &json!({ "roots": [{ "uri": "file:///a" }] }));
        input.push_str(&request(5, "ping", json!({})));
        input.push_str(&result(first.request_id() + 1, &json!({ "roots": [] })));
        input.push_str(&request(6, "tools/call", json!({ "name": "test_simple_text" })));
        let bytes = input.as_bytes();
        let (mut pos, mut k) = (0, 0);
        while pos < bytes.len() {
            let end = (pos + chunks[k % chunks.len()]).min(bytes.len());
            k += 1;
            while pos < end {
                pos += e.handle_input(Instant::ZERO, &bytes[pos..end]);
                // The host asks again on each reply (until it has two).
                loop {
                    let mut progressed = false;
                    while let Some(ev) = e.poll_event() {
                        progressed = true;
                        let again = matches!(ev, Event::ClientReply(_));
                        record(ev);
                        if again && asked.borrow().is_empty() {
                            asked.borrow_mut().push(e.ask_client(&InputRequest::list_roots("b")).unwrap());
                        }
                    }
                    let n = e.pending_output().len();
                    if n == 0 && !progressed {
                        break;
                    }
                    out.extend_from_slice(e.pending_output());
                    e.consume_output(n);
                }
            }
        }
        let heard = replies.borrow().clone();
        (String::from_utf8(out).unwrap(), heard)
    };
    let whole = run(&[usize::MAX]);
    let out = lines(whole.0.as_bytes());
    let order: Vec<_> =
        out.iter().map(|m| m.get("method").cloned().unwrap_or_else(|| m["id"].clone())).collect();
    assert_eq!(
        order,
        [json!(0), json!("roots/list"), json!("roots/list"), json!(5), json!(6)],
        "the second ask goes out before the ping's answer: {out:?}"
    );
    assert_eq!(whole.1.len(), 2, "{:?}", whole.1);
    assert_eq!(run(&[1]), whole);
    for split in [2, 7, 40, 91] {
        assert_eq!(run(&[split, 3]), whole, "split {split}");
    }
}

// ------------------------------------------------------------------ Streamable HTTP

fn http_client(replies: &Replies) -> Client {
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let mut c = client_of(config(), http, everything::catalog(), Box::new(recording(replies)));
    c.e.set_entropy(&[9; 32]);
    c
}

/// Opens a session under `version` declaring `caps`; returns its id.
fn http_open(c: &mut Client, version: &str, caps: Value) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": version, "capabilities": caps, "clientInfo": { "name": "t", "version": "1" } } });
    let (_, raw) = on_new(c, &session_post(&init, version, None));
    let id = raw.lines().find_map(|l| l.strip_prefix("mcp-session-id: ")).unwrap_or_else(|| panic!("{raw}"));
    let id = id.trim().to_owned();
    let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let (_, raw) = on_new(c, &session_post(&done, version, Some(&id)));
    assert!(raw.starts_with("HTTP/1.1 202"), "{raw}");
    id
}

/// Opens the standalone stream of session `sid`: its connection and the priming
/// event's id (`2025-11-25`; empty for `2025-06-18`, which has none).
fn open_stream(c: &mut Client, sid: &str) -> (ConnId, String) {
    let (conn, raw) = on_new(c, &get(Some(sid), SSE));
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    let priming = sse_events(&raw);
    assert!(priming.len() <= 1, "{raw}");
    (conn, priming.first().map(|p| p.0.clone()).unwrap_or_default())
}

/// Posts `body` in session `sid` on a new connection, fed in chunks of `chunk`: `202`.
fn answer(c: &mut Client, sid: &str, body: &str, chunk: usize) {
    let body: Value = serde_json::from_str(body).unwrap();
    let (_, raw) = on_new_in(c, &session_post(&body, "2025-11-25", Some(sid)), chunk);
    assert!(raw.starts_with("HTTP/1.1 202"), "{raw}");
}

#[test]
fn over_http_the_request_goes_on_the_standalone_stream_with_an_id_and_the_post_answers_it() {
    for chunk in [usize::MAX, 1, 7, 100] {
        let replies = Replies::default();
        let mut c = http_client(&replies);
        let sid = http_open(&mut c, "2025-11-25", json!({ "sampling": {} }));
        let other = http_open(&mut c, "2025-11-25", json!({ "sampling": {} }));
        let (stream, priming) = open_stream(&mut c, &sid);
        let params = sample_params();
        let ask = c.e.ask_client(&sid, &InputRequest::raw("k", InputKind::Sampling, &params)).unwrap();
        let raw = more(&mut c, stream);
        let events = sse_events(&raw);
        assert_eq!(events.len(), 1, "{raw}");
        assert!(!events[0].0.is_empty() && events[0].0 != priming, "an event id of its own: {raw}");
        let sent: Value = serde_json::from_str(&events[0].1).unwrap();
        assert_eq!(sent["method"], "sampling/createMessage");
        assert_eq!(sent["id"], ask.request_id());
        assert_eq!(sent["params"]["messages"][0]["content"]["text"], "2+2?");
        let response = result(ask.request_id(), &sampled());
        // Posted in another session, it answers nothing (202 all the same).
        answer(&mut c, &other, &response, chunk);
        assert!(replies.borrow().is_empty(), "a foreign session's response answered the ask");
        answer(&mut c, &sid, &response, chunk);
        assert_eq!(*replies.borrow(), [(ask.request_id(), Ok(sampled()))], "chunk {chunk}");
        // Nothing more on the stream, and a second response finishes nothing.
        answer(&mut c, &sid, &response, chunk);
        assert_eq!(replies.borrow().len(), 1);
        assert!(sse_events(&more(&mut c, stream)).is_empty());
        // Past the ask's deadline, nothing more reaches the host.
        c.now = Instant::ZERO + Duration::from_secs(31);
        c.e.handle_timeout(c.now);
        more(&mut c, stream);
        assert_eq!(replies.borrow().len(), 1);
    }
}

#[test]
fn over_http_an_ask_is_refused_without_a_session_a_capability_or_a_stream() {
    let replies = Replies::default();
    let mut c = http_client(&replies);
    let sid = http_open(&mut c, "2025-06-18", json!({ "roots": {} }));
    let roots = InputRequest::list_roots("r");
    assert_eq!(c.e.ask_client(&sid, &roots), Err(AskError::NoStream), "no GET stream open");
    assert_eq!(c.e.ask_client("not-a-session", &roots), Err(AskError::NoSession));
    let forged = format!("{}A", &sid[..sid.len() - 1]);
    assert_eq!(c.e.ask_client(&forged, &roots), Err(AskError::NoSession));
    let (stream, _) = open_stream(&mut c, &sid);
    let params = sample_params();
    assert_eq!(
        c.e.ask_client(&sid, &InputRequest::raw("s", InputKind::Sampling, &params)),
        Err(AskError::NotDeclared(InputKind::Sampling))
    );
    assert!(more(&mut c, stream).is_empty(), "a refused ask writes nothing");
    assert!(c.e.ask_client(&sid, &roots).is_ok());
    // The stream's connection goes: no stream to carry the next one.
    c.e.handle_closed(c.now, stream);
    assert_eq!(c.e.ask_client(&sid, &roots), Err(AskError::NoStream));
}

#[test]
fn over_http_a_client_error_a_timeout_and_delete_each_reach_the_host_once() {
    let replies = Replies::default();
    let mut c = http_client(&replies);
    let sid = http_open(&mut c, "2025-11-25", json!({ "roots": {} }));
    let (stream, _) = open_stream(&mut c, &sid);
    let a = c.e.ask_client(&sid, &InputRequest::list_roots("a")).unwrap();
    let b = c.e.ask_client(&sid, &InputRequest::list_roots("b")).unwrap();
    assert_eq!(sse_events(&more(&mut c, stream)).len(), 2);
    answer(&mut c, &sid, &error(a.request_id(), -1, "no"), usize::MAX);
    assert_eq!(replies.borrow()[0], (a.request_id(), Err((-1, "no".into()))));
    let deadline = Instant::ZERO + Duration::from_secs(30);
    c.now = Instant::from_micros(deadline.as_micros() - 1);
    c.e.handle_timeout(c.now);
    more(&mut c, stream);
    assert_eq!(replies.borrow().len(), 1, "not before its deadline");
    c.now = deadline;
    c.e.handle_timeout(deadline);
    more(&mut c, stream);
    assert_eq!(replies.borrow().len(), 2);
    assert_eq!(replies.borrow()[1].0, b.request_id());
    assert_eq!(replies.borrow()[1].1.as_ref().unwrap_err().0, -32001);
    // A late response answers nothing.
    answer(&mut c, &sid, &result(b.request_id(), &json!({ "roots": [] })), usize::MAX);
    assert_eq!(replies.borrow().len(), 2);

    // Deleted while the client is asked: -32000, once; the stream ends.
    let d = c.e.ask_client(&sid, &InputRequest::list_roots("d")).unwrap();
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost:3000\r\nMcp-Session-Id: {sid}\r\n\r\n");
    let (_, raw) = on_new(&mut c, delete.as_bytes());
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    more(&mut c, stream);
    assert_eq!(replies.borrow().len(), 3);
    assert_eq!(replies.borrow()[2].0, d.request_id());
    assert_eq!(replies.borrow()[2].1.as_ref().unwrap_err().0, -32000);
    c.e.handle_timeout(deadline + Duration::from_secs(60));
    more(&mut c, stream);
    assert_eq!(replies.borrow().len(), 3, "nothing more after the session ended");
    assert_eq!(c.e.ask_client(&sid, &InputRequest::list_roots("e")), Err(AskError::NoSession));
}

#[test]
fn an_expired_session_fails_what_its_client_was_asked() {
    let replies = Replies::default();
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    // The session idles out (10 s) before the ask would time out (30 s).
    http.session_idle_timeout(Duration::from_secs(10));
    let mut c = client_of(config(), http, everything::catalog(), Box::new(recording(&replies)));
    c.e.set_entropy(&[9; 32]);
    let sid = http_open(&mut c, "2025-11-25", json!({ "roots": {} }));
    let (stream, _) = open_stream(&mut c, &sid);
    let a = c.e.ask_client(&sid, &InputRequest::list_roots("a")).unwrap();
    // The stream goes (the ask does not end with it), then the session idles out.
    c.e.handle_closed(c.now, stream);
    let expiry = Instant::ZERO + Duration::from_secs(10);
    c.now = expiry;
    c.e.handle_timeout(expiry);
    more(&mut c, stream);
    assert_eq!(c.e.sessions(), 0, "the session expired");
    assert_eq!(replies.borrow().len(), 1);
    assert_eq!(replies.borrow()[0].0, a.request_id());
    assert_eq!(replies.borrow()[0].1.as_ref().unwrap_err().0, -32000);
    c.e.handle_timeout(Instant::ZERO + Duration::from_secs(60));
    more(&mut c, stream);
    assert_eq!(replies.borrow().len(), 1, "exactly once");
}

#[test]
fn over_http_the_request_is_replayed_after_a_reconnect_with_last_event_id() {
    let replies = Replies::default();
    let mut c = http_client(&replies);
    let sid = http_open(&mut c, "2025-11-25", json!({ "elicitation": { "url": {} } }));
    let (stream, priming) = open_stream(&mut c, &sid);
    let ask =
        c.e.ask_client(&sid, &InputRequest::elicit_url("u", "Sign in", "https://example.com/auth", "el-7"))
            .unwrap();
    let first = sse_events(&more(&mut c, stream));
    assert_eq!(first.len(), 1);
    // The connection drops before the client read it; it comes back naming the priming event.
    c.e.handle_closed(c.now, stream);
    let (again, raw) = on_new(&mut c, &get(Some(&sid), &format!("{SSE}Last-Event-ID: {priming}\r\n")));
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    let replayed = sse_events(&raw);
    assert_eq!(replayed, first, "the request is replayed with the id it was first sent with");
    let sent: Value = serde_json::from_str(&replayed[0].1).unwrap();
    assert_eq!(sent["params"]["mode"], "url");
    assert_eq!(sent["params"]["elicitationId"], "el-7");
    // The stream goes on: the next ask comes on the new connection.
    answer(&mut c, &sid, &result(ask.request_id(), &json!({ "action": "accept" })), usize::MAX);
    assert_eq!(*replies.borrow(), [(ask.request_id(), Ok(json!({ "action": "accept" })))]);
    let next = c.e.ask_client(&sid, &InputRequest::elicit_url("v", "Again", "https://example.com/b", "el-8"));
    assert!(next.is_ok(), "{next:?}");
    assert_eq!(sse_events(&more(&mut c, again)).len(), 1);
}
