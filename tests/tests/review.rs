//! Defects found in review, one named regression test each (or a few for one defect):
//! request ids in flight, the uri of a host's "Resource not found", and the sampling
//! sub-capabilities an input request needs.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::rc::Rc;

use mcp_engine::error::HostError;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent, Verdict};
use mcp_engine::mrtr::{ClientCapabilities, InputKind, InputRequest, InputRequestBuf, InputRequired};
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, Resource, ResourceTemplate, Ticket, Tool, ToolOutput,
};
use mcp_tests::peer::{Peer, WIRES, Wire, meta_with};
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::wire::{Host, parse_responses, post, req};
use mcp_tests::{feed_keeping_tickets, legacy_open, lines, modern, request};
use serde_json::{Value, json};

// ------------------------------------------------------------------ ids in flight

fn slow_tool_engine(cfg: Config) -> Engine {
    Engine::new(cfg, Catalog::builder().tool(Tool::new("slow")).build().unwrap())
}

#[track_caller]
fn assert_id_in_use(v: &Value, id: &Value) {
    assert_eq!(&v["id"], id, "the refusal echoes the id: {v}");
    assert_eq!(v["error"]["code"], -32600, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("already in use"), "{message}");
    assert_valid(Rev::V2026_07_28, "JSONRPCErrorResponse", v);
}

#[test]
fn a_request_id_in_flight_is_refused_on_stdio() {
    let mut e = slow_tool_engine(Config::new("s", "1"));
    let (out, first) = feed_keeping_tickets(&mut e, &modern("A", "tools/call", json!({"name": "slow"})));
    assert!(out.is_empty());
    assert_eq!(first.len(), 1, "A is handed to the host");
    // The same id again, for work that needs a ticket and for work answered at once.
    let again = [
        modern("A", "tools/call", json!({"name": "slow"})),
        modern("A", "tools/list", json!({})),
        modern(7, "tools/list", json!({})),
    ]
    .concat();
    let (out, tickets) = feed_keeping_tickets(&mut e, &again);
    assert!(tickets.is_empty(), "nothing more reaches the host");
    assert_eq!(out.len(), 3, "{out:?}");
    assert_id_in_use(&out[0], &json!("A"));
    assert_id_in_use(&out[1], &json!("A"));
    assert!(out[2]["result"]["tools"].is_array(), "another id is served: {}", out[2]);
    assert_eq!(e.in_flight(), 1);
    // The earlier request keeps running and is answered normally, once.
    e.answer_tool(first[0], &ToolOutput::new(&[Content::text("done")])).unwrap();
    let answers = lines(e.pending_output());
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["id"], "A");
    assert_eq!(answers[0]["result"]["content"][0]["text"], "done");
    let n = e.pending_output().len();
    e.consume_output(n);
    // Answered, the id is free again.
    let (out, tickets) = feed_keeping_tickets(&mut e, &modern("A", "tools/call", json!({"name": "slow"})));
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(tickets.len(), 1);
    // Ids are told apart by their JSON form: 1 and "1" are different ids.
    let (out, tickets) = feed_keeping_tickets(
        &mut e,
        &[
            modern(1, "tools/call", json!({"name": "slow"})),
            modern("1", "tools/call", json!({"name": "slow"})),
        ]
        .concat(),
    );
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(tickets.len(), 2);
    let (out, _) = feed_keeping_tickets(&mut e, &modern(1, "tools/list", json!({})));
    assert_id_in_use(&out[0], &json!(1));
}

#[test]
fn the_id_of_an_open_listen_stream_is_in_use() {
    let mut cfg = Config::new("s", "1");
    cfg.list_changed(true);
    let mut e = slow_tool_engine(cfg);
    let listen = modern("L", "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let (out, _) = feed_keeping_tickets(&mut e, &listen);
    assert_eq!(out[0]["method"], "notifications/subscriptions/acknowledged");
    let (out, tickets) = feed_keeping_tickets(&mut e, &modern("L", "tools/call", json!({"name": "slow"})));
    assert!(tickets.is_empty());
    assert_id_in_use(&out[0], &json!("L"));
    // A cancellation names the stream alone; once it ended, its id is free.
    let cancel = mcp_tests::notification("notifications/cancelled", json!({"requestId": "L"}));
    feed_keeping_tickets(&mut e, &cancel);
    let (out, tickets) = feed_keeping_tickets(&mut e, &modern("L", "tools/call", json!({"name": "slow"})));
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(tickets.len(), 1);
}

#[test]
fn a_request_id_in_flight_is_refused_in_a_legacy_session() {
    let mut e = slow_tool_engine(Config::new("s", "1"));
    let (_, _) = feed_keeping_tickets(&mut e, &legacy_open("2025-11-25"));
    let (_, first) = feed_keeping_tickets(&mut e, &request(5, "tools/call", json!({"name": "slow"})));
    assert_eq!(first.len(), 1);
    let (out, _) = feed_keeping_tickets(&mut e, &request(5, "ping", json!({})));
    assert_eq!(out[0]["id"], 5);
    assert_eq!(out[0]["error"]["code"], -32600, "{}", out[0]);
}

/// An HTTP engine whose host keeps every tool-call ticket.
fn http_engine() -> HttpEngine {
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    HttpEngine::new(Config::new("s", "1"), http, Catalog::builder().tool(Tool::new("slow")).build().unwrap())
}

/// Polls every event (authorizing heads); returns the tool-call tickets.
fn http_events(e: &mut HttpEngine) -> Vec<Ticket> {
    let mut tickets = Vec::new();
    while let Some(ev) = e.poll_event() {
        match ev {
            HttpEvent::Authorize(a) => {
                let conn = a.conn;
                e.authorize(Instant::ZERO, conn, Verdict::Allow);
            }
            HttpEvent::Mcp(ev) => tickets.push(ev.ticket()),
            _ => {}
        }
    }
    tickets
}

fn http_take(e: &mut HttpEngine, conn: mcp_engine::http::ConnId) -> Vec<u8> {
    let out = e.pending_output(conn).to_vec();
    e.consume_output(conn, out.len());
    out
}

/// Over HTTP a route is one connection, and a connection serves one request at a time:
/// the same id on two connections is two requests (each client numbers its own), and the
/// same id pipelined on one connection is served after the first is answered, never
/// while it is in flight.
#[test]
fn http_request_ids_are_per_connection() {
    let mut e = http_engine();
    let call = |id| post(&req(id, "tools/call", json!({"name": "slow"})), &[]);
    let a = e.open(Instant::ZERO, None).unwrap();
    let b = e.open(Instant::ZERO, None).unwrap();
    e.handle_input(Instant::ZERO, a, &call(1));
    let ta = http_events(&mut e);
    e.handle_input(Instant::ZERO, b, &call(1));
    let tb = http_events(&mut e);
    assert_eq!((ta.len(), tb.len()), (1, 1), "both reach the host");
    assert!(http_take(&mut e, b).is_empty(), "b is not refused");
    e.answer_tool(tb[0], &ToolOutput::new(&[Content::text("b")])).unwrap();
    e.answer_tool(ta[0], &ToolOutput::new(&[Content::text("a")])).unwrap();
    for (conn, text) in [(a, "a"), (b, "b")] {
        let r = parse_responses(&http_take(&mut e, conn));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].status, 200);
        let v = r[0].json();
        assert_eq!((v["id"].clone(), v["result"]["content"][0]["text"].clone()), (json!(1), json!(text)));
    }
    // Pipelined on one connection: the second waits for the first, then runs.
    let both = [call(2), call(2)].concat();
    let taken = e.handle_input(Instant::ZERO, a, &both);
    let first = http_events(&mut e);
    assert_eq!(first.len(), 1, "one at a time");
    e.answer_tool(first[0], &ToolOutput::new(&[Content::text("first")])).unwrap();
    let mut out = http_take(&mut e, a);
    if taken < both.len() {
        assert_eq!(e.handle_input(Instant::ZERO, a, &both[taken..]), both.len() - taken);
    }
    let second = http_events(&mut e);
    assert_eq!(second.len(), 1, "the second is served once the first is answered");
    e.answer_tool(second[0], &ToolOutput::new(&[Content::text("second")])).unwrap();
    http_events(&mut e);
    out.extend_from_slice(&http_take(&mut e, a));
    let r = parse_responses(&out);
    let texts: Vec<Value> = r.iter().map(|r| r.json()["result"]["content"][0]["text"].clone()).collect();
    assert_eq!(texts, [json!("first"), json!("second")]);
}

// ------------------------------------------------------------------ Resource not found

/// A host that answers every read "not found" (`fail`) or with empty contents.
fn not_found_host(empty: bool) -> Host {
    Box::new(move |ev| {
        if let Event::ReadResource(read) = ev {
            let _ = if empty { read.answer(&[]) } else { read.fail(HostError::NotFound) };
        }
    })
}

fn resources() -> Catalog {
    Catalog::builder()
        .resource(Resource::new("test://gone", "gone"))
        .template(ResourceTemplate::new("test://rows/{id}", "rows"))
        .build()
        .unwrap()
}

#[test]
fn a_host_not_found_carries_the_requested_uri() {
    for w in WIRES {
        for empty in [false, true] {
            let mut p = Peer::new(w, Config::new("s", "1"), resources(), not_found_host(empty));
            let (status, v) = p.call(1, "resources/read", json!({"uri": "test://gone"}));
            assert_eq!(status, 200, "{w:?}");
            assert_eq!(v["error"]["code"], -32602, "{w:?}: {v}");
            assert_eq!(v["error"]["message"], "Resource not found");
            assert_eq!(v["error"]["data"], json!({"uri": "test://gone"}), "{w:?}, empty {empty}: {v}");
            assert_valid(Rev::V2026_07_28, "JSONRPCErrorResponse", &v);
            // A uri past 256 bytes is cut there.
            let long = format!("test://rows/{}", "x".repeat(400));
            let (_, v) = p.call(2, "resources/read", json!({"uri": long}));
            assert_eq!(v["error"]["data"]["uri"], long[..256], "{w:?}");
        }
    }
}

#[test]
fn a_host_not_found_carries_the_uri_in_a_legacy_session() {
    let mut e = Engine::new(Config::new("s", "1"), resources());
    let input =
        [legacy_open("2025-11-25"), request(3, "resources/read", json!({"uri": "test://rows/7"}))].concat();
    let mut out = Vec::new();
    let mut host = not_found_host(false);
    e.handle_input(Instant::ZERO, input.as_bytes());
    mcp_tests::drain_with(&mut e, &mut *host, &mut out);
    let v = lines(&out).pop().unwrap();
    assert_eq!(v["id"], 3);
    assert_eq!(v["error"]["code"], -32002, "{v}");
    assert_eq!(v["error"]["data"], json!({"uri": "test://rows/7"}));
}

#[test]
fn a_kept_read_ticket_answered_later_still_names_its_uri() {
    // Two reads in flight; answered out of order, each names its own uri.
    let mut e = Engine::new(Config::new("s", "1"), resources());
    let input = [
        modern(1, "resources/read", json!({"uri": "test://rows/1"})),
        modern(2, "resources/read", json!({"uri": "test://gone"})),
    ]
    .concat();
    let (_, tickets) = feed_keeping_tickets(&mut e, &input);
    assert_eq!(tickets.len(), 2);
    e.answer_error(tickets[1], HostError::NotFound).unwrap();
    e.answer_error(tickets[0], HostError::NotFound).unwrap();
    let out = lines(e.pending_output());
    assert_eq!(
        (out[0]["id"].clone(), out[0]["error"]["data"]["uri"].clone()),
        (json!(2), json!("test://gone"))
    );
    assert_eq!(
        (out[1]["id"].clone(), out[1]["error"]["data"]["uri"].clone()),
        (json!(1), json!("test://rows/1"))
    );
}

// ------------------------------------------------------------------ sampling sub-capabilities

const KEY: [u8; 32] = [9; 32];

/// A host that answers every tool call with these input requests (raw params per key).
fn asks(requests: Vec<(&'static str, InputKind, Value)>, seen: Rc<RefCell<Vec<ClientCapabilities>>>) -> Host {
    Box::new(move |ev| {
        if let Event::CallTool(call) = ev {
            seen.borrow_mut().push(call.client);
            let bufs: Vec<InputRequestBuf> =
                requests.iter().map(|(k, kind, params)| InputRequestBuf::new(*k, *kind, params)).collect();
            let reqs: Vec<InputRequest<'_>> = bufs.iter().map(InputRequestBuf::as_request).collect();
            call.input_required(&InputRequired::new(&reqs)).unwrap();
        }
    })
}

fn sampling(extra: Value) -> Value {
    let mut p =
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5});
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    p
}

fn call_with(p: &mut Peer, id: i64, caps: Value) -> (u16, Value) {
    p.call(id, "tools/call", json!({"name": "t", "_meta": meta_with(caps)}))
}

fn peer(
    w: Wire,
    requests: Vec<(&'static str, InputKind, Value)>,
) -> (Peer, Rc<RefCell<Vec<ClientCapabilities>>>) {
    let mut cfg = Config::new("s", "1");
    cfg.request_state_key(KEY);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let catalog = Catalog::builder().tool(Tool::new("t")).build().unwrap();
    (Peer::new(w, cfg, catalog, asks(requests, seen.clone())), seen)
}

#[test]
fn a_sampling_request_with_tools_needs_sampling_tools() {
    let tool = json!([{"name": "calc", "inputSchema": {"type": "object"}}]);
    for w in WIRES {
        for extra in [json!({"tools": tool}), json!({"toolChoice": {"mode": "auto"}})] {
            let (mut p, seen) = peer(w, vec![("s", InputKind::Sampling, sampling(extra.clone()))]);
            let (status, v) = call_with(&mut p, 1, json!({"sampling": {}}));
            assert_eq!(v["error"]["code"], -32021, "{w:?} {extra}: {v}");
            assert_eq!(v["error"]["data"]["requiredCapabilities"], json!({"sampling": {"tools": {}}}));
            assert_valid(Rev::V2026_07_28, "JSONRPCErrorResponse", &v);
            if w == Wire::Http {
                assert_eq!(status, 400);
            }
            let (_, v) = call_with(&mut p, 2, json!({}));
            assert_eq!(
                v["error"]["data"]["requiredCapabilities"],
                json!({"sampling": {"tools": {}}}),
                "no sampling at all: sampling with tools is what it needs"
            );
            let (_, v) = call_with(&mut p, 3, json!({"sampling": {"tools": {}}}));
            assert_eq!(v["result"]["resultType"], "input_required", "{w:?}: {v}");
            assert_eq!(v["result"]["inputRequests"]["s"]["method"], "sampling/createMessage");
            assert_valid(Rev::V2026_07_28, "InputRequiredResult", &v["result"]);
            let seen = seen.borrow();
            assert!(!seen[0].sampling_tools() && seen[0].supports(InputKind::Sampling));
            assert!(seen[2].sampling_tools() && !seen[2].sampling_context());
        }
    }
}

#[test]
fn a_sampling_request_with_context_needs_sampling_context() {
    for w in WIRES {
        for (context, needs) in [("thisServer", true), ("allServers", true), ("none", false)] {
            let params = sampling(json!({"includeContext": context}));
            let (mut p, seen) = peer(w, vec![("s", InputKind::Sampling, params)]);
            let (_, v) = call_with(&mut p, 1, json!({"sampling": {}}));
            if needs {
                assert_eq!(v["error"]["code"], -32021, "{w:?} {context}: {v}");
                assert_eq!(v["error"]["data"]["requiredCapabilities"], json!({"sampling": {"context": {}}}));
            } else {
                assert_eq!(v["result"]["resultType"], "input_required", "{w:?} {context}: {v}");
            }
            let (_, v) = call_with(&mut p, 2, json!({"sampling": {"context": {}}}));
            assert_eq!(v["result"]["resultType"], "input_required", "{w:?} {context}: {v}");
            assert!(seen.borrow()[1].sampling_context());
        }
    }
}

#[test]
fn requests_the_client_cannot_answer_are_left_out_and_named() {
    let tools = json!({"tools": [{"name": "calc", "inputSchema": {"type": "object"}}], "includeContext": "thisServer"});
    let requests = vec![
        ("both", InputKind::Sampling, sampling(tools)),
        ("plain", InputKind::Sampling, sampling(json!({}))),
        ("roots", InputKind::Roots, json!({})),
    ];
    for w in WIRES {
        let (mut p, _) = peer(w, requests.clone());
        let (_, v) = call_with(&mut p, 1, json!({"sampling": {"tools": {}}, "roots": {}}));
        let asked = v["result"]["inputRequests"].as_object().unwrap_or_else(|| panic!("{v}"));
        let mut keys: Vec<&String> = asked.keys().collect();
        keys.sort();
        assert_eq!(keys, ["plain", "roots"], "{w:?}: the one needing context is left out");
        let (_, v) = call_with(&mut p, 2, json!({"elicitation": {}}));
        assert_eq!(v["error"]["code"], -32021);
        assert_eq!(
            v["error"]["data"]["requiredCapabilities"],
            json!({"sampling": {"context": {}, "tools": {}}, "roots": {}}),
            "{w:?}"
        );
        assert_valid(Rev::V2026_07_28, "JSONRPCErrorResponse", &v);
    }
}

/// Form and url elicitation both missing name `elicitation` once (the member used to be
/// written twice when the url request came first).
#[test]
fn missing_form_and_url_elicitation_name_elicitation_once() {
    let url = json!({"mode": "url", "message": "go", "url": "https://example.com/x", "elicitationId": "e1"});
    let form =
        json!({"mode": "form", "message": "name?", "requestedSchema": {"type": "object", "properties": {}}});
    for w in WIRES {
        let requests =
            vec![("u", InputKind::ElicitationUrl, url.clone()), ("f", InputKind::Elicitation, form.clone())];
        let (mut p, _) = peer(w, requests);
        let (_, v) = call_with(&mut p, 1, json!({"roots": {}}));
        let raw = serde_json::to_string(&v).unwrap();
        assert_eq!(raw.matches("\"elicitation\"").count(), 1, "{raw}");
        assert_eq!(
            v["error"]["data"]["requiredCapabilities"],
            json!({"elicitation": {"form": {}, "url": {}}}),
            "{w:?}"
        );
    }
}

#[test]
fn sampling_sub_capabilities_show_in_debug() {
    let caps = ClientCapabilities::NONE.with_sampling_tools().with(InputKind::Roots);
    assert_eq!(format!("{caps:?}"), "{Sampling, SamplingTools, Roots}");
    assert!(caps.supports(InputKind::Sampling));
    assert!(caps.sampling_tools() && !caps.sampling_context());
    assert!(ClientCapabilities::NONE.with_sampling_context().sampling_context());
}
