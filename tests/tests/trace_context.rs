//! W3C trace context in `params._meta` (`traceparent`, `tracestate`, `baggage`): a valid
//! one reaches the host on the event ([`RequestInfo::trace`]), an invalid one is ignored
//! (the request is served as if it carried none), and the rest of what a span needs
//! (method, JSON-RPC id, session, addresses) is on the event too, over stdio and HTTP.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

use mcp_engine::error::HostError;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig};
use mcp_engine::{Catalog, Config, Content, Engine, Event, Instant, Prompt, Resource, Tool, ToolOutput};
use mcp_fixture as everything;
use mcp_tests::wire::{client_of, legacy_post, one, post, req};
use mcp_tests::{lines, modern_meta};
use serde_json::{Value, json};

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// What the host saw of one event's request.
#[derive(Debug, Clone, PartialEq, Default)]
struct Seen {
    method: String,
    id: String,
    id_json: String,
    trace_id: Option<String>,
    parent_id: Option<String>,
    flags: Option<u8>,
    sampled: bool,
    tracestate: Option<String>,
    baggage: Option<String>,
    session_id: Option<String>,
    peer: Option<SocketAddr>,
    client: Option<std::net::IpAddr>,
}

fn seen(ev: &Event<'_>) -> Seen {
    let r = ev.request().expect("a request event");
    let t = r.trace;
    Seen {
        method: r.method.into(),
        id: r.id.to_string(),
        id_json: r.id.as_json().into(),
        trace_id: t.trace_id().map(|t| t.to_string()),
        parent_id: t.parent_id().map(|s| s.to_string()),
        flags: t.flags(),
        sampled: t.sampled(),
        tracestate: t.tracestate().map(str::to_owned),
        baggage: t.baggage().map(str::to_owned),
        session_id: r.session_id.map(str::to_owned),
        peer: r.peer,
        client: r.client,
    }
}

fn engine() -> Engine {
    let mut config = Config::new("s", "1");
    config.completions(true);
    let catalog = Catalog::builder()
        .tool(Tool::new("t"))
        .resource(Resource::new("test://r", "r"))
        .prompt(Prompt::new("p").argument(mcp_engine::PromptArgument::new("a")))
        .build()
        .unwrap();
    Engine::new(config, catalog)
}

/// A 2026-07-28 request line whose `_meta` also carries `extra`.
fn with_meta(id: Value, method: &str, mut params: Value, extra: Value) -> String {
    let mut meta = modern_meta();
    for (k, v) in extra.as_object().unwrap() {
        meta[k] = v.clone();
    }
    params["_meta"] = meta;
    let mut s = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
    s.push('\n');
    s
}

/// Feeds `line` to a fresh engine; returns what the host saw of the event (answering it)
/// and the output.
fn serve(line: &str) -> (Option<Seen>, Vec<Value>) {
    let mut e = engine();
    let mut got = None;
    let mut fed = 0;
    while fed < line.len() {
        fed += e.handle_input(Instant::ZERO, &line.as_bytes()[fed..]);
        while let Some(ev) = e.poll_event() {
            got = Some(seen(&ev));
            let x = HostError::Internal("x");
            let _ = match ev {
                Event::CallTool(c) => c.fail(x),
                Event::ReadResource(r) => r.fail(x),
                Event::GetPrompt(p) => p.fail(x),
                Event::Complete(c) => c.fail(x),
                _ => Ok(()),
            };
        }
    }
    let out = lines(e.pending_output());
    (got, out)
}

fn call(extra: Value) -> (Option<Seen>, Vec<Value>) {
    serve(&with_meta(json!(1), "tools/call", json!({ "name": "t" }), extra))
}

#[test]
fn a_valid_traceparent_reaches_the_event() {
    let (seen, _) = call(json!({ "traceparent": PARENT }));
    let s = seen.unwrap();
    assert_eq!(s.trace_id.as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    assert_eq!(s.parent_id.as_deref(), Some("00f067aa0ba902b7"));
    assert_eq!((s.flags, s.sampled), (Some(1), true));
    assert_eq!((s.tracestate, s.baggage), (None, None));
    assert_eq!((s.method.as_str(), s.id.as_str(), s.id_json.as_str()), ("tools/call", "1", "1"));
    assert_eq!((s.session_id, s.peer, s.client), (None, None, None), "stdio has no session id or address");
}

#[test]
fn tracestate_and_baggage_come_with_it() {
    let (seen, _) = call(json!({
        "traceparent": PARENT.replace("-01", "-00"),
        "tracestate": "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE",
        "baggage": "userId=alice,serverNode=DF%2028,isProduction=false"
    }));
    let s = seen.unwrap();
    assert_eq!((s.flags, s.sampled), (Some(0), false));
    assert_eq!(s.tracestate.as_deref(), Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
    assert_eq!(s.baggage.as_deref(), Some("userId=alice,serverNode=DF%2028,isProduction=false"));
}

#[test]
fn an_invalid_trace_context_is_ignored_and_the_request_served() {
    let bad_parents = [
        json!("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),
        json!("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),
        json!("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"),
        json!(42),
        json!({ "traceparent": PARENT }),
        json!(null),
    ];
    for bad in bad_parents {
        let (seen, out) = call(json!({ "traceparent": bad, "tracestate": "a=1" }));
        let s = seen.unwrap_or_else(|| panic!("{bad}: no event, {out:?}"));
        assert_eq!((s.trace_id, s.parent_id, s.flags), (None, None, None), "{bad}");
        assert_eq!(s.tracestate, None, "a tracestate without a valid traceparent is discarded: {bad}");
        // The host answered: the request went through (its answer is the host's error).
        assert_eq!(out[0]["error"]["message"], "Internal error: x", "{bad}: {out:?}");
    }
    // An invalid tracestate or baggage drops that part only.
    let (seen, _) = call(json!({ "traceparent": PARENT, "tracestate": "A=1", "baggage": "k=v w" }));
    let s = seen.unwrap();
    assert_eq!(s.parent_id.as_deref(), Some("00f067aa0ba902b7"));
    assert_eq!((s.tracestate, s.baggage), (None, None));
    // Baggage does not need a traceparent.
    let (seen, _) = call(json!({ "baggage": "k=v" }));
    let s = seen.unwrap();
    assert_eq!((s.trace_id, s.baggage.as_deref()), (None, Some("k=v")));
    // Without any: nothing.
    let (seen, _) = call(json!({}));
    assert_eq!(seen.unwrap().trace_id, None);
}

#[test]
fn every_host_event_carries_its_request() {
    let extra = json!({ "traceparent": PARENT });
    let cases = [
        (json!("req-7"), "resources/read", json!({ "uri": "test://r" })),
        (json!(-3), "prompts/get", json!({ "name": "p", "arguments": { "a": "x" } })),
        (
            json!("a\"b\\c\nd\u{e9}"),
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": "p" }, "argument": { "name": "a", "value": "" } }),
        ),
    ];
    for (id, method, params) in cases {
        let (seen, out) = serve(&with_meta(id.clone(), method, params, extra.clone()));
        let s = seen.unwrap_or_else(|| panic!("{method}: {out:?}"));
        assert_eq!(s.method, method);
        // The string form: a string's text, an integer's digits; the JSON form as written.
        let text = id.as_str().map_or_else(|| id.to_string(), str::to_owned);
        assert_eq!(s.id, text, "{method}");
        assert_eq!(serde_json::from_str::<Value>(&s.id_json).unwrap(), id, "{method}");
        assert_eq!(s.parent_id.as_deref(), Some("00f067aa0ba902b7"), "{method}");
    }
}

#[test]
fn a_session_bound_request_keeps_no_trace_across_requests() {
    // Two requests in a 2025-11-25 stdio session: only the one that carried a context has it.
    let mut e = engine();
    let mut input = mcp_tests::legacy_open("2025-11-25");
    let traced = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "t", "_meta": { "traceparent": PARENT } } });
    let plain = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "t" } });
    input.push_str(&format!("{traced}\n{plain}\n"));
    let mut got = Vec::new();
    let mut fed = 0;
    while fed < input.len() {
        fed += e.handle_input(Instant::ZERO, &input.as_bytes()[fed..]);
        while let Some(ev) = e.poll_event() {
            got.push(seen(&ev));
            if let Event::CallTool(c) = ev {
                c.answer(&ToolOutput::new(&[Content::text("ok")])).unwrap();
            }
        }
    }
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].parent_id.as_deref(), Some("00f067aa0ba902b7"));
    assert_eq!(got[1].parent_id, None);
}

#[test]
fn over_http_the_event_names_the_peer_and_the_session() {
    let record: Rc<RefCell<Vec<Seen>>> = Rc::default();
    let sink = Rc::clone(&record);
    let host = Box::new(move |ev: Event<'_>| {
        sink.borrow_mut().push(seen(&ev));
        everything::respond(ev);
    });
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let mut config = everything::config();
    config.secret_key([3; 32]);
    let mut c = client_of(config, http, everything::catalog(), host);
    c.e.set_entropy(&[5; 32]);
    let peer: SocketAddr = "192.0.2.7:41000".parse().unwrap();
    c.e.handle_closed(Instant::ZERO, c.conn);
    c.conn = c.e.open(Instant::ZERO, Some(peer)).unwrap();

    // 2026-07-28: stateless, no session id.
    let mut body = req(5, "tools/call", json!({ "name": "test_simple_text" }));
    body["params"]["_meta"]["traceparent"] = json!(PARENT);
    let r = one(&mut c, &post(&body, &[]));
    assert_eq!(r.status, 200, "{r:?}");
    let s = record.borrow_mut().pop().unwrap();
    assert_eq!((s.peer, s.client), (Some(peer), Some(peer.ip())));
    assert_eq!(s.session_id, None, "2026-07-28 has no sessions");
    assert_eq!((s.id.as_str(), s.parent_id.as_deref()), ("5", Some("00f067aa0ba902b7")));

    // 2025-11-25 in a session: its Mcp-Session-Id.
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let r = one(&mut c, &legacy_post(&init, None));
    let id = r.header("mcp-session-id").expect("a session").to_owned();
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "test_simple_text", "_meta": { "traceparent": PARENT } } });
    let r = one(&mut c, &legacy_post(&call, Some(&id)));
    assert_eq!(r.status, 200, "{r:?}");
    let s = record.borrow_mut().pop().unwrap();
    assert_eq!(s.session_id.as_deref(), Some(id.as_str()));
    assert_eq!((s.peer, s.parent_id.as_deref()), (Some(peer), Some("00f067aa0ba902b7")));
}

#[test]
fn the_request_debug_output_hides_the_session_id_and_baggage() {
    let line =
        with_meta(json!(1), "tools/call", json!({ "name": "t" }), json!({ "baggage": "secret=alice" }));
    let mut e = engine();
    e.handle_input(Instant::ZERO, line.as_bytes());
    let ev = e.poll_event().unwrap();
    let text = format!("{ev:?}");
    assert!(!text.contains("alice"), "{text}");
    assert!(text.contains("baggage_len: Some(12)"), "{text}");
}
