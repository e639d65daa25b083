//! Session-bound Streamable HTTP (`2025-11-25`, `2025-06-18`) on the same endpoint as
//! the stateless wire: `initialize` opens a session named by `Mcp-Session-Id`, later
//! requests are served in it, `DELETE` ends it, and every refusal says why.

use mcp_engine::Commands;
use std::time::Duration;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, Principal, Verdict};
use mcp_engine::{Config, Instant};
use mcp_fixture as everything;
use mcp_tests::wire::{
    Client, Response, SSE, client_of, get, more, on_new, parse_responses, post, req, sse_events,
};
use serde_json::{Value, json};

const ENTROPY: [u8; 32] = [5; 32];

fn http() -> HttpConfig {
    HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone)
}

/// A client of the fixture over an engine with sessions on.
fn client_with(http: HttpConfig) -> Client {
    // A fixed key, so two engines seal the same ids (as nodes sharing a key do).
    let mut config = everything::config();
    config.secret_key([3; 32]);
    let mut c = client_of(config, http, everything::catalog(), Box::new(everything::respond));
    c.e.set_entropy(&ENTROPY);
    c
}

fn client() -> Client {
    client_with(http())
}

/// A session-bound POST: `MCP-Protocol-Version` (when given) and `Mcp-Session-Id` (when
/// given), no `Mcp-Method`.
fn legacy(body: &Value, version: Option<&str>, session: Option<&str>) -> Vec<u8> {
    let mut extra =
        vec![("Mcp-Method", ""), ("Mcp-Name", ""), ("MCP-Protocol-Version", version.unwrap_or(""))];
    if let Some(id) = session {
        extra.push(("Mcp-Session-Id", id));
    }
    post(body, &extra)
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn initialize(version: &str) -> Value {
    request(
        1,
        "initialize",
        json!({
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": "t", "version": "1" }
        }),
    )
}

fn one(c: &mut Client, raw: &[u8]) -> Response {
    let mut r = c.send(raw);
    assert_eq!(r.len(), 1, "{r:?}");
    r.remove(0)
}

/// Opens a session under `version`; returns its id.
fn open(c: &mut Client, version: &str) -> String {
    let r = one(c, &legacy(&initialize(version), None, None));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["result"]["protocolVersion"], version, "{}", r.json());
    let id = r.header("mcp-session-id").unwrap_or_else(|| panic!("no session id: {r:?}")).to_owned();
    let r = one(
        c,
        &legacy(
            &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            Some(version),
            Some(&id),
        ),
    );
    assert_eq!(r.status, 202, "{r:?}");
    id
}

#[test]
fn initialize_opens_a_session_whose_requests_are_served_in_it() {
    let mut c = client();
    let id = open(&mut c, "2025-11-25");
    assert_eq!(id.len(), 44);
    assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
    assert_eq!(c.e.sessions(), 1);

    let r = one(&mut c, &legacy(&request(2, "ping", json!({})), Some("2025-11-25"), Some(&id)));
    assert_eq!((r.status, r.json()), (200, json!({ "jsonrpc": "2.0", "id": 2, "result": {} })));
    let r = one(&mut c, &legacy(&request(3, "tools/list", json!({})), Some("2025-11-25"), Some(&id)));
    assert_eq!(r.status, 200);
    let tools = r.json()["result"]["tools"].as_array().cloned().unwrap_or_default();
    assert!(tools.iter().any(|t| t["name"] == "test_simple_text"), "{}", r.json());
    assert!(r.json()["result"].get("resultType").is_none(), "a session-bound result: {}", r.json());
    let r = one(
        &mut c,
        &legacy(&request(4, "tools/call", json!({ "name": "test_simple_text" })), None, Some(&id)),
    );
    assert_eq!(r.status, 200, "the header may be left out inside a session");
    assert_eq!(r.json()["result"]["content"][0]["type"], "text", "{}", r.json());
    // The answers carry no session id: only the one that opened it does.
    assert!(r.header("mcp-session-id").is_none());
}

#[test]
fn a_2025_06_18_client_gets_its_revision() {
    let mut c = client();
    let id = open(&mut c, "2025-06-18");
    let r = one(&mut c, &legacy(&request(2, "ping", json!({})), Some("2025-06-18"), Some(&id)));
    assert_eq!(r.status, 200);
}

#[test]
fn two_sessions_keep_their_own_state() {
    let mut c = client();
    let a = open(&mut c, "2025-11-25");
    let b = open(&mut c, "2025-11-25");
    assert_ne!(a, b);
    let r = one(&mut c, &legacy(&request(2, "logging/setLevel", json!({ "level": "info" })), None, Some(&a)));
    assert_eq!(r.json()["result"], json!({}));
    let call = request(3, "tools/call", json!({ "name": "test_logging_tool" }));
    let logged = |c: &mut Client, id: &str| {
        let out = c.feed(&legacy(&call, None, Some(id)), usize::MAX);
        String::from_utf8_lossy(&out).matches("notifications/message").count()
    };
    assert_eq!(logged(&mut c, &a), 3, "session a asked for info logs");
    assert_eq!(logged(&mut c, &b), 0, "session b did not");
    // Opening a second time inside a session is refused.
    let r = one(&mut c, &legacy(&initialize("2025-11-25"), None, Some(&a)));
    assert_eq!(r.json()["error"]["code"], -32600, "{}", r.json());
}

#[test]
fn a_session_bound_request_without_a_session_id_is_400() {
    let mut c = client();
    for version in [Some("2025-11-25"), None] {
        let r = one(&mut c, &legacy(&request(7, "tools/list", json!({})), version, None));
        assert_eq!(r.status, 400, "{version:?}: {r:?}");
        assert_eq!(r.json()["id"], 7);
        assert_eq!(r.json()["error"]["code"], -32600, "{}", r.json());
        assert!(r.json()["error"]["message"].as_str().unwrap().contains("Mcp-Session-Id"));
    }
}

#[test]
fn an_unknown_forged_or_foreign_session_id_is_404() {
    let mut c = client();
    let real = open(&mut c, "2025-11-25");
    let mut forged = real.clone().into_bytes();
    forged[20] = if forged[20] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    let mut other =
        client_of(Config::new("x", "1"), http(), everything::catalog(), Box::new(everything::respond));
    other.e.set_entropy(&[6; 32]);
    let foreign = open(&mut other, "2025-11-25");
    for id in [forged.as_str(), "nope", foreign.as_str()] {
        let r = one(&mut c, &legacy(&request(9, "ping", json!({})), Some("2025-11-25"), Some(id)));
        assert_eq!(r.status, 404, "{id}: {r:?}");
        assert_eq!(r.json()["id"], 9, "the id is echoed");
        assert_eq!(r.json()["error"]["code"], -32001);
        let n = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let r = one(&mut c, &legacy(&n, Some("2025-11-25"), Some(id)));
        assert_eq!(r.status, 404, "{id}: a notification too");
    }
    // Two session ids: neither is taken.
    let mut raw = legacy(&request(9, "ping", json!({})), Some("2025-11-25"), Some(&real));
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    raw.splice(at..at, format!("\r\nMcp-Session-Id: {real}").into_bytes());
    assert_eq!(one(&mut c, &raw).status, 404);
}

#[test]
fn a_protocol_version_header_other_than_the_sessions_is_400() {
    let mut c = client();
    let id = open(&mut c, "2025-11-25");
    let r = one(&mut c, &legacy(&request(2, "ping", json!({})), Some("2025-06-18"), Some(&id)));
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.json()["error"]["code"], -32600);
}

#[test]
fn delete_ends_the_session() {
    let mut c = client();
    let id = open(&mut c, "2025-11-25");
    let delete = |id: Option<&str>| {
        let mut s = String::from(
            "DELETE /mcp HTTP/1.1\r\nHost: localhost:3000\r\nMCP-Protocol-Version: 2025-11-25\r\n",
        );
        if let Some(id) = id {
            s.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
        }
        s.push_str("\r\n");
        s.into_bytes()
    };
    assert_eq!(one(&mut c, &delete(Some(&id))).status, 200);
    assert_eq!(c.e.sessions(), 0);
    let r = one(&mut c, &legacy(&request(2, "ping", json!({})), Some("2025-11-25"), Some(&id)));
    assert_eq!(r.status, 404, "ended: {r:?}");
    assert_eq!(one(&mut c, &delete(Some(&id))).status, 404, "once");
    assert_eq!(one(&mut c, &delete(None)).status, 400, "which session?");
    // Another method says what is allowed.
    let r = one(&mut c, b"PUT /mcp HTTP/1.1\r\nHost: localhost:3000\r\nContent-Length: 0\r\n\r\n");
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, POST, DELETE")));
}

#[test]
fn get_opens_the_sessions_standalone_stream_once() {
    let mut c = client();
    let id = open(&mut c, "2025-11-25");
    let refusals = [
        (get(Some(&id), ""), 406, "no Accept: text/event-stream"),
        (get(Some(&id), "Accept: application/json\r\n"), 406, "JSON only"),
        (get(None, SSE), 405, "no session: no standalone stream"),
        (get(Some("nope"), SSE), 404, "an unknown session"),
        (get(Some(&id), &format!("{SSE}MCP-Protocol-Version: 2025-06-18\r\n")), 400, "another revision"),
    ];
    for (raw, status, why) in refusals {
        let (_, out) = on_new(&mut c, &raw);
        assert!(out.starts_with(&format!("HTTP/1.1 {status}")), "{why}: {out}");
    }
    let (stream, out) =
        on_new(&mut c, &get(Some(&id), &format!("{SSE}MCP-Protocol-Version: 2025-11-25\r\n")));
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(out.to_ascii_lowercase().contains("content-type: text/event-stream"), "{out}");
    // One at a time.
    let (_, out) = on_new(&mut c, &get(Some(&id), SSE));
    assert!(out.starts_with("HTTP/1.1 409"), "{out}");
    // Once it closes, another may open.
    c.e.handle_closed(c.now, stream);
    let (_, out) = on_new(&mut c, &get(Some(&id), SSE));
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
}

#[test]
fn the_standalone_stream_carries_list_changes_and_resource_updates() {
    let mut c = client();
    let id = open(&mut c, "2025-11-25");
    let quiet = open(&mut c, "2025-11-25");
    let sub = request(3, "resources/subscribe", json!({ "uri": "test://watched-resource" }));
    assert_eq!(one(&mut c, &legacy(&sub, Some("2025-11-25"), Some(&id))).status, 200);
    let (stream, _) = on_new(&mut c, &get(Some(&id), SSE));
    let (other, _) = on_new(&mut c, &get(Some(&quiet), SSE));
    let d = everything::Dynamic { tool: true, ..Default::default() };
    c.e.replace_catalog(everything::catalog_with(d)).unwrap();
    assert_eq!(c.e.notify_resource_updated("test://watched-resource"), 1);
    let events: Vec<Value> = more(&mut c, stream)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(events[0], json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert_eq!(events[1]["method"], "notifications/resources/updated");
    assert_eq!(events[1]["params"]["uri"], "test://watched-resource");
    assert_eq!(events.len(), 2);
    // The other session subscribed to nothing: it hears of the list change only.
    let others = more(&mut c, other);
    assert_eq!(others.matches("data: ").count(), 1, "{others}");
    assert!(others.contains("tools/list_changed"));
}

#[test]
fn a_list_change_announced_from_elsewhere_reaches_the_streams_and_leaves_the_catalog() {
    let mut c = client();
    let id = open(&mut c, "2025-11-25");
    let (stream, _) = on_new(&mut c, &get(Some(&id), SSE));
    let tools = |c: &mut Client| {
        let r = one(c, &legacy(&request(4, "tools/list", json!({})), Some("2025-11-25"), Some(&id)));
        r.json()["result"]["tools"].as_array().map(Vec::len)
    };
    let before = tools(&mut c);
    let change = mcp_engine::subs::CatalogChange::of(true, false, true);
    assert_eq!(c.e.announce_list_changed(change), change);
    let out = more(&mut c, stream);
    let methods: Vec<Value> = out
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).unwrap()["method"].clone())
        .collect();
    assert_eq!(
        methods,
        [json!("notifications/tools/list_changed"), json!("notifications/prompts/list_changed")]
    );
    assert_eq!(tools(&mut c), before, "the catalog is this node's: unchanged");
}

#[test]
fn an_open_stream_keeps_its_session_and_delete_ends_it() {
    let mut http = http();
    http.session_idle_timeout(Duration::from_secs(5));
    let mut c = client_with(http);
    let id = open(&mut c, "2025-11-25");
    let (stream, _) = on_new(&mut c, &get(Some(&id), SSE));
    c.now = c.now + Duration::from_secs(60);
    c.e.handle_timeout(c.now);
    assert_eq!(c.e.sessions(), 1, "a session with an open stream does not expire");
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost:3000\r\nMcp-Session-Id: {id}\r\n\r\n");
    let (_, out) = on_new(&mut c, delete.as_bytes());
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    let end = more(&mut c, stream);
    assert!(end.ends_with("0\r\n\r\n"), "the stream ends: {end:?}");
    assert!(c.e.wants_close(stream));
    // Closed, the session would expire on its own; here it is gone already.
    assert_eq!(c.e.sessions(), 0);
}

#[test]
fn the_stateless_wire_is_unchanged_beside_sessions() {
    let mut c = client();
    let r = one(&mut c, &post(&req(1, "tools/list", json!({})), &[]));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["resultType"], "complete");
    // `initialize` naming 2026-07-28 is a stateless request: no such method.
    let init = req(1, "initialize", initialize("2025-11-25")["params"].clone());
    let r = one(&mut c, &post(&init, &[]));
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (404, json!(-32601)), "{r:?}");
    assert_eq!(c.e.sessions(), 0);
}

#[test]
fn at_the_cap_initialize_is_503_and_live_sessions_stay() {
    let mut h = http();
    h.max_sessions(2);
    let mut c = client_with(h);
    let a = open(&mut c, "2025-11-25");
    let _b = open(&mut c, "2025-11-25");
    let r = one(&mut c, &legacy(&initialize("2025-11-25"), None, None));
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.header("retry-after").is_some());
    assert!(r.header("mcp-session-id").is_none());
    assert_eq!(c.e.sessions(), 2);
    let r = one(&mut c, &legacy(&request(2, "ping", json!({})), None, Some(&a)));
    assert_eq!(r.status, 200, "live sessions are never evicted");
}

#[test]
fn an_idle_session_expires_and_a_used_one_does_not() {
    let mut h = http();
    h.session_idle_timeout(Duration::from_secs(60)).idle_timeout(Duration::from_secs(600));
    let mut c = client_with(h);
    let idle = open(&mut c, "2025-11-25");
    let used = open(&mut c, "2025-11-25");
    for step in 1..=3u64 {
        c.now = Instant::ZERO + Duration::from_secs(40 * step);
        c.e.handle_timeout(c.now);
        let r = one(&mut c, &legacy(&request(2, "ping", json!({})), None, Some(&used)));
        assert_eq!(r.status, 200, "step {step}");
    }
    let r = one(&mut c, &legacy(&request(2, "ping", json!({})), None, Some(&idle)));
    assert_eq!(r.status, 404, "idle for 120 s");
    assert_eq!(c.e.sessions(), 1);
}

#[test]
fn a_session_is_found_only_by_the_principal_that_opened_it() {
    let mut c = client_with(HttpConfig::new(AllowedOrigins::Any, Authorization::Host));
    c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    let id = open(&mut c, "2025-11-25");
    c.verdict = Verdict::AllowAs(Principal::of(b"bob"));
    let r = one(&mut c, &legacy(&request(2, "ping", json!({})), None, Some(&id)));
    assert_eq!(r.status, 404, "{r:?}");
    c.verdict = Verdict::Allow;
    assert_eq!(one(&mut c, &legacy(&request(2, "ping", json!({})), None, Some(&id))).status, 404);
    c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    assert_eq!(one(&mut c, &legacy(&request(2, "ping", json!({})), None, Some(&id))).status, 200);
}

/// Sessions are created only after authorization passed: an `initialize` refused by the
/// host's verdict on its head (`401`, `403`) or on its body (`403`) creates none, and
/// with a session store on the store hears of none.
#[test]
fn an_initialize_refused_by_authorization_creates_no_session() {
    for store in [false, true] {
        for (verdict, body_verdict, status) in [
            (Verdict::Unauthenticated, Verdict::Allow, 401),
            (Verdict::Forbidden, Verdict::Allow, 403),
            (Verdict::Allow, Verdict::Forbidden, 403),
        ] {
            let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
            http.session_store(store);
            http.authorize_body(true);
            let mut c = client_with(http);
            c.verdict = verdict;
            c.body_verdict = body_verdict;
            let r = one(&mut c, &legacy(&initialize("2025-11-25"), None, None));
            let label = format!("store {store}, {verdict:?} / {body_verdict:?}");
            assert_eq!(r.status, status, "{label}: {r:?}");
            assert_eq!(r.header("mcp-session-id"), None, "{label}");
            assert_eq!(c.e.sessions(), 0, "{label}");
            assert!(c.store.log.is_empty(), "{label}: {:?}", c.store.log);
            // Allowed, the same request opens one (and the store hears of it).
            c.verdict = Verdict::Allow;
            c.body_verdict = Verdict::Allow;
            let conn = c.e.open(c.now, None).unwrap();
            c.conn = conn;
            let r = one(&mut c, &legacy(&initialize("2025-11-25"), None, None));
            assert_eq!(r.status, 200, "{label}: {r:?}");
            assert_eq!(c.e.sessions(), 1, "{label}");
            let saves = c.store.log.iter().filter(|l| l.starts_with("save ")).count();
            assert_eq!(saves, usize::from(store), "{label}: {:?}", c.store.log);
        }
    }
}

#[test]
fn without_entropy_the_engine_serves_the_stateless_wire_only() {
    let mut c =
        client_of(Config::new("x", "1"), http(), everything::catalog(), Box::new(everything::respond));
    let r = one(&mut c, &legacy(&initialize("2025-11-25"), None, None));
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.header("mcp-session-id").is_none());
    assert_eq!(c.e.sessions(), 0);
}

#[test]
fn a_session_request_split_anywhere_gives_the_same_output() {
    let input: Vec<u8> = legacy(&initialize("2025-11-25"), None, None);
    let whole = client().feed(&input, usize::MAX);
    for chunk in [1, 2, 7, 64] {
        assert_eq!(client().feed(&input, chunk), whole, "chunks of {chunk}");
    }
    let r = parse_responses(&whole);
    assert_eq!(r[0].status, 200);
}

#[test]
fn a_session_lives_while_the_host_works_on_its_request() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let kept: Rc<RefCell<Vec<mcp_engine::Ticket>>> = Rc::default();
    let keep = Rc::clone(&kept);
    let mut h = http();
    h.session_idle_timeout(Duration::from_secs(60)).idle_timeout(Duration::from_secs(6000));
    let mut config = everything::config();
    config.secret_key([3; 32]);
    let host = Box::new(move |ev: mcp_engine::Event<'_>| match ev {
        mcp_engine::Event::CallTool(call) if call.tool.name == "test_simple_text" => {
            keep.borrow_mut().push(call.ticket)
        }
        ev => everything::respond(ev),
    });
    let mut c = client_of(config, h, everything::catalog(), host);
    c.e.set_entropy(&ENTROPY);
    let id = open(&mut c, "2025-11-25");
    let call = request(5, "tools/call", json!({ "name": "test_simple_text" }));
    assert!(c.feed(&legacy(&call, None, Some(&id)), usize::MAX).is_empty(), "the host holds it");
    let ticket = kept.borrow_mut().pop().expect("a kept ticket");
    // Long past the idle timeout: the request still runs, so the session stays.
    c.now = Instant::ZERO + Duration::from_secs(500);
    c.e.handle_timeout(c.now);
    assert_eq!(c.e.sessions(), 1);
    c.e.answer_tool(ticket, &mcp_engine::ToolOutput::new(&[mcp_engine::Content::text("late")])).unwrap();
    let mut out = Vec::new();
    c.drain(&mut out);
    assert_eq!(parse_responses(&out)[0].json()["result"]["content"][0]["text"], "late");
    // Idle from the answer on.
    c.now = Instant::ZERO + Duration::from_secs(559);
    c.e.handle_timeout(c.now);
    assert_eq!(c.e.sessions(), 1);
    c.now = Instant::ZERO + Duration::from_secs(560);
    c.e.handle_timeout(c.now);
    assert_eq!(c.e.sessions(), 0);
}

/// A session whose client logs at `info`, and a tool call that streams three log
/// messages then its result; returns the session id and the call's raw response.
fn logging_call(c: &mut Client, version: &str) -> (String, String) {
    let id = open(c, version);
    let level = request(2, "logging/setLevel", json!({ "level": "info" }));
    assert_eq!(one(c, &legacy(&level, Some(version), Some(&id))).status, 200);
    let call = request(3, "tools/call", json!({ "name": "test_tool_with_logging" }));
    let (_, raw) = on_new(c, &legacy(&call, Some(version), Some(&id)));
    (id, raw)
}

#[test]
fn session_streams_carry_event_ids_and_2025_11_25_ones_open_with_a_priming_event() {
    let mut c = client();
    let (_, raw) = logging_call(&mut c, "2025-11-25");
    let events = sse_events(&raw);
    assert_eq!(events.len(), 5, "priming, three logs, the result: {raw}");
    assert_eq!(events[0].1, "", "the priming event has no data");
    assert!(events.iter().all(|(id, _)| id.len() == 32), "{events:?}");
    let mut ids: Vec<_> = events.iter().map(|(id, _)| id.clone()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 5, "distinct ids");
    // 2025-06-18 streams have ids too, and no priming event.
    let (_, raw) = logging_call(&mut c, "2025-06-18");
    let events = sse_events(&raw);
    assert_eq!(events.len(), 4, "{raw}");
    assert!(events.iter().all(|(id, data)| id.len() == 32 && !data.is_empty()), "{events:?}");
}

#[test]
fn a_resumed_request_stream_replays_what_followed_and_only_for_its_session() {
    let mut c = client();
    let (id, raw) = logging_call(&mut c, "2025-11-25");
    let events = sse_events(&raw);
    // The client saw the priming event and the first log only.
    let last = &events[1].0;
    let (_, out) = on_new(&mut c, &get(Some(&id), &format!("{SSE}Last-Event-ID: {last}\r\n")));
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    let replayed = sse_events(&out);
    assert_eq!(replayed, events[2..].to_vec(), "the rest, with the same ids");
    assert!(out.ends_with("0\r\n\r\n"), "then the request's stream ends: {out:?}");
    // Another session cannot resume it; a forged id is refused the same way.
    let other = open(&mut c, "2025-11-25");
    let (_, out) = on_new(&mut c, &get(Some(&other), &format!("{SSE}Last-Event-ID: {last}\r\n")));
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    let forged = format!("{}A", &last[..31]);
    let (_, out) = on_new(&mut c, &get(Some(&id), &format!("{SSE}Last-Event-ID: {forged}\r\n")));
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
}

#[test]
fn the_standalone_stream_resumes_where_the_client_left_it() {
    let mut c = client();
    let id = open(&mut c, "2025-11-25");
    let (stream, opened) = on_new(&mut c, &get(Some(&id), SSE));
    let priming = sse_events(&opened);
    assert!(priming.len() == 1 && priming[0].1.is_empty(), "{opened}");
    let mut d = everything::Dynamic::default();
    for _ in 0..3 {
        d.tool = !d.tool;
        c.e.replace_catalog(everything::catalog_with(d)).unwrap();
    }
    let seen = sse_events(&more(&mut c, stream));
    assert_eq!(seen.len(), 3, "three list changes: {seen:?}");
    c.e.handle_closed(c.now, stream);
    // Back after the first change: the other two come again, then the stream goes on.
    let (stream, out) = on_new(&mut c, &get(Some(&id), &format!("{SSE}Last-Event-ID: {}\r\n", seen[0].0)));
    assert_eq!(sse_events(&out), seen[1..].to_vec(), "{out}");
    d.tool = !d.tool;
    c.e.replace_catalog(everything::catalog_with(d)).unwrap();
    let live = sse_events(&more(&mut c, stream));
    assert_eq!(live.len(), 1);
    assert!(live[0].1.contains("tools/list_changed"));
    assert!(!seen.iter().any(|(i, _)| *i == live[0].0), "a new id");
}

#[test]
fn a_replay_that_lost_events_says_so() {
    let mut http = http();
    http.replay_buffer(200);
    let mut c = client_with(http);
    let (id, raw) = logging_call(&mut c, "2025-11-25");
    let events = sse_events(&raw);
    let (_, out) = on_new(&mut c, &get(Some(&id), &format!("{SSE}Last-Event-ID: {}\r\n", events[0].0)));
    assert!(out.contains(": gap"), "{out}");
    let replayed = sse_events(&out);
    assert!(!replayed.is_empty() && replayed.len() < 4, "only what fits is kept: {replayed:?}");
    assert_eq!(replayed.last(), events.last(), "the newest events are the ones kept");
}

#[test]
fn a_cancellation_is_heeded_only_from_the_requests_session() {
    let (mut c, held, cancelled) = holding_client();
    let a = open(&mut c, "2025-11-25");
    let b = open(&mut c, "2025-11-25");
    let call = request(7, "tools/call", json!({ "name": "test_simple_text" }));
    let _ = on_new(&mut c, &legacy(&call, Some("2025-11-25"), Some(&a)));
    assert_eq!(held.borrow().len(), 1);
    let cancel =
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 7 } });
    assert_eq!(one(&mut c, &legacy(&cancel, Some("2025-11-25"), Some(&b))).status, 202);
    assert!(cancelled.borrow().is_empty(), "another session cancelled the request");
    assert_eq!(c.e.in_flight(), 1);
    assert_eq!(one(&mut c, &legacy(&cancel, Some("2025-11-25"), Some(&a))).status, 202);
    assert_eq!(*cancelled.borrow(), *held.borrow());
    assert_eq!(c.e.in_flight(), 0);
}

/// Tickets a test host saw.
type Tickets = std::rc::Rc<std::cell::RefCell<Vec<mcp_engine::Ticket>>>;

/// A client whose host keeps every ticket (and records cancellations).
fn holding_client() -> (Client, Tickets, Tickets) {
    holding_client_with(everything::config().in_flight_limit())
}

/// [`holding_client`] with `max_in_flight` ticket slots.
fn holding_client_with(max_in_flight: usize) -> (Client, Tickets, Tickets) {
    let held = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let cancelled = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let (h, x) = (held.clone(), cancelled.clone());
    let mut config = everything::config();
    config.secret_key([3; 32]);
    config.max_in_flight(max_in_flight);
    let mut c = client_of(
        config,
        http(),
        everything::catalog(),
        Box::new(move |ev: mcp_engine::Event<'_>| match ev {
            mcp_engine::Event::Cancelled(t) => x.borrow_mut().push(t),
            ev => h.borrow_mut().push(ev.ticket()),
        }),
    );
    c.e.set_entropy(&ENTROPY);
    (c, held, cancelled)
}

/// A session whose client logs at `info`, and a tool call on a connection of its own
/// (its host keeps the ticket): the session id and that connection.
fn logged_call(c: &mut Client) -> (String, mcp_engine::http::ConnId) {
    let id = open(c, "2025-11-25");
    let level = request(2, "logging/setLevel", json!({ "level": "info" }));
    assert_eq!(one(c, &legacy(&level, Some("2025-11-25"), Some(&id))).status, 200);
    let call = request(3, "tools/call", json!({ "name": "test_simple_text" }));
    let (a, _) = on_new(c, &legacy(&call, Some("2025-11-25"), Some(&id)));
    (id, a)
}

#[test]
fn a_dropped_request_stream_goes_on_and_resumes_on_a_get() {
    use mcp_engine::{Content, LogLevel, ToolOutput};
    let (mut c, held, cancelled) = holding_client();
    let (id, a) = logged_call(&mut c);
    let t = held.borrow()[0];
    c.e.notify_log(t, LogLevel::Info, None, "one").unwrap();
    let seen = sse_events(&more(&mut c, a));
    assert_eq!(seen.len(), 2, "priming and the first log: {seen:?}");
    // The connection drops: the request goes on (no cancellation), and what it says is kept.
    c.e.handle_closed(c.now, a);
    assert!(cancelled.borrow().is_empty());
    assert_eq!(c.e.in_flight(), 1);
    c.e.notify_log(t, LogLevel::Info, None, "two").unwrap();
    let (b, out) = on_new(&mut c, &get(Some(&id), &format!("{SSE}Last-Event-ID: {}\r\n", seen[1].0)));
    let missed = sse_events(&out);
    assert_eq!(missed.len(), 1, "{out}");
    assert!(missed[0].1.contains("\"two\""), "{missed:?}");
    // The rest comes live on the new connection, and the stream ends with the answer.
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])).unwrap();
    let rest = more(&mut c, b);
    let last = sse_events(&rest);
    assert_eq!(last.len(), 1, "{rest}");
    let answer: Value = serde_json::from_str(&last[0].1).unwrap();
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["content"][0]["text"], "done");
    assert!(rest.ends_with("0\r\n\r\n"), "{rest:?}");
    let ids: Vec<_> = seen.iter().chain(&missed).chain(&last).map(|(i, _)| i.clone()).collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "every event of the stream has its own id");
}

#[test]
fn deleting_the_session_cancels_its_parked_requests() {
    use mcp_engine::LogLevel;
    let (mut c, held, cancelled) = holding_client();
    let (id, a) = logged_call(&mut c);
    let t = held.borrow()[0];
    c.e.notify_log(t, LogLevel::Info, None, "one").unwrap();
    c.e.handle_closed(c.now, a);
    assert_eq!(c.e.in_flight(), 1);
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost:3000\r\nMcp-Session-Id: {id}\r\n\r\n");
    let (_, out) = on_new(&mut c, delete.as_bytes());
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert_eq!(*cancelled.borrow(), vec![t]);
    assert_eq!(c.e.in_flight(), 0);
}

#[test]
fn the_host_can_let_a_request_stream_go_and_the_client_polls_for_the_rest() {
    use mcp_engine::{Content, ToolOutput};
    let (mut c, held, cancelled) = holding_client();
    let id = open(&mut c, "2025-11-25");
    let call = request(3, "tools/call", json!({ "name": "test_simple_text" }));
    let (a, _) = on_new(&mut c, &legacy(&call, Some("2025-11-25"), Some(&id)));
    let t = held.borrow()[0];
    assert_eq!(c.e.reconnect_later(t, Duration::from_millis(500)), Ok(true));
    let out = more(&mut c, a);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    let priming = sse_events(&out);
    assert_eq!(priming.len(), 1, "{out}");
    assert!(out.contains("retry: 500\n"), "{out}");
    assert!(out.ends_with("0\r\n\r\n"), "the stream ends: {out:?}");
    assert!(!c.e.wants_close(a), "the connection stays for the next request");
    assert!(cancelled.borrow().is_empty());
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("later")])).unwrap();
    let (_, out) = on_new(&mut c, &get(Some(&id), &format!("{SSE}Last-Event-ID: {}\r\n", priming[0].0)));
    let rest = sse_events(&out);
    assert_eq!(rest.len(), 1, "{out}");
    let answer: Value = serde_json::from_str(&rest[0].1).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "later");
    // A stateless request has no stream to let go.
    let call = req(9, "tools/call", json!({ "name": "test_simple_text" }));
    let _ = on_new(&mut c, &post(&call, &[]));
    let t = held.borrow()[1];
    assert_eq!(c.e.reconnect_later(t, Duration::from_millis(500)), Ok(false));
}

/// The fixture lets the connection go and answers at once, in one event: the answer is
/// kept for the client, which comes back for it.
#[test]
fn an_answer_right_after_letting_the_stream_go_waits_for_the_client() {
    let mut c = client();
    let id = open(&mut c, "2025-11-25");
    let call = request(4, "tools/call", json!({ "name": "test_reconnection" }));
    let (_, out) = on_new(&mut c, &legacy(&call, Some("2025-11-25"), Some(&id)));
    assert!(out.contains("retry: 500\n"), "{out}");
    let priming = sse_events(&out);
    assert_eq!(priming.len(), 1, "only the priming event before the stream ends: {out}");
    let (_, out) = on_new(&mut c, &get(Some(&id), &format!("{SSE}Last-Event-ID: {}\r\n", priming[0].0)));
    let rest = sse_events(&out);
    assert_eq!(rest.len(), 1, "{out}");
    let answer: Value = serde_json::from_str(&rest[0].1).unwrap();
    assert_eq!(answer["id"], 4);
    assert_eq!(answer["result"]["content"][0]["text"], everything::RECONNECTED);
}

#[test]
fn a_cancellation_outside_a_session_cancels_nothing() {
    let (mut c, held, cancelled) = holding_client();
    // A stateless request in flight on its own connection...
    let call = req(7, "tools/call", json!({ "name": "test_simple_text" }));
    let _ = on_new(&mut c, &post(&call, &[]));
    assert_eq!(held.borrow().len(), 1);
    // ... is not cancelled by anyone's message naming its id, with or without headers.
    let cancel =
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 7 } });
    for extra in [vec![("Mcp-Method", ""), ("MCP-Protocol-Version", "")], vec![("Mcp-Method", "")]] {
        let (_, out) = on_new(&mut c, &post(&cancel, &extra));
        assert!(out.starts_with("HTTP/1.1 202") || out.starts_with("HTTP/1.1 4"), "{out}");
    }
    assert!(cancelled.borrow().is_empty(), "a stranger cancelled the request");
    assert_eq!(c.e.in_flight(), 1);
}

#[test]
fn letting_a_2025_06_18_stream_go_first_gives_the_client_an_id_to_come_back_with() {
    use mcp_engine::{Content, ToolOutput};
    let (mut c, held, _) = holding_client();
    let id = open(&mut c, "2025-06-18");
    let call = request(3, "tools/call", json!({ "name": "test_simple_text" }));
    let (a, _) = on_new(&mut c, &legacy(&call, Some("2025-06-18"), Some(&id)));
    let t = held.borrow()[0];
    assert_eq!(c.e.reconnect_later(t, Duration::from_millis(500)), Ok(true));
    let out = more(&mut c, a);
    let first = sse_events(&out);
    assert_eq!(first.len(), 1, "an id before retry: {out}");
    assert!(out.contains("retry: 500\n"), "{out}");
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("later")])).unwrap();
    let (_, out) = on_new(&mut c, &get(Some(&id), &format!("{SSE}Last-Event-ID: {}\r\n", first[0].0)));
    let rest = sse_events(&out);
    assert_eq!(rest.len(), 1, "{out}");
    assert!(rest[0].1.contains("later"), "{rest:?}");
}

#[test]
fn an_http_1_0_request_cannot_ask_its_client_for_input() {
    use mcp_engine::mrtr::{InputRequest, InputRequired};
    let (mut c, held, _) = holding_client();
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": { "roots": {} }, "clientInfo": { "name": "t", "version": "1" } } });
    let r = one(&mut c, &legacy(&init, None, None));
    let id = r.header("mcp-session-id").unwrap().to_owned();
    let call = request(3, "tools/call", json!({ "name": "test_simple_text" }));
    let raw = legacy(&call, Some("2025-11-25"), Some(&id));
    let raw = String::from_utf8(raw).unwrap().replacen("HTTP/1.1", "HTTP/1.0", 1);
    let (a, _) = on_new(&mut c, raw.as_bytes());
    let t = held.borrow()[0];
    let roots = [InputRequest::list_roots("r")];
    c.e.answer_input_required(t, &InputRequired::new(&roots)).unwrap();
    let out = more(&mut c, a);
    assert!(out.contains("-32021"), "it cannot carry the request: {out}");
    assert_eq!(
        c.e.reconnect_later(held.borrow()[0], Duration::from_millis(1)),
        Err(mcp_engine::error::NotifyError::UnknownTicket)
    );
}

// ---------------------------------------------------------------- flow around ticket slots

/// [`holding_client`] on an engine with one ticket slot.
fn one_slot_client() -> (Client, Tickets, Tickets) {
    holding_client_with(1)
}

/// Opens a 2025-11-25 session whose client declared `roots`; returns its id.
fn open_with_roots(c: &mut Client) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": { "roots": {} }, "clientInfo": { "name": "t", "version": "1" } } });
    let r = one(c, &legacy(&init, None, None));
    let id = r.header("mcp-session-id").unwrap().to_owned();
    let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(one(c, &legacy(&done, Some("2025-11-25"), Some(&id))).status, 202);
    id
}

#[test]
fn a_response_to_the_server_needs_no_free_ticket_slot() {
    use mcp_engine::mrtr::{InputRequest, InputRequired};
    let (mut c, held, _) = one_slot_client();
    let id = open_with_roots(&mut c);
    let call = request(3, "tools/call", json!({ "name": "test_simple_text" }));
    let (a, _) = on_new(&mut c, &legacy(&call, Some("2025-11-25"), Some(&id)));
    let t = held.borrow()[0];
    let roots = [InputRequest::list_roots("r")];
    c.e.answer_input_required(t, &InputRequired::new(&roots)).unwrap();
    let asked = sse_events(&more(&mut c, a));
    let ask: Value = serde_json::from_str(&asked.last().unwrap().1).unwrap();
    assert_eq!(ask["method"], "roots/list", "{asked:?}");
    // The only slot is the asking request's: the client's answer is taken at once, and
    // the request comes back to the host with it.
    let answer = json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "roots": [] } });
    let (_, out) = on_new(&mut c, &legacy(&answer, Some("2025-11-25"), Some(&id)));
    assert!(out.starts_with("HTTP/1.1 202"), "{out}");
    assert_eq!(*held.borrow(), vec![t, t], "the call came back with the response");
}

#[test]
fn a_get_and_a_delete_need_no_free_ticket_slot() {
    let (mut c, held, cancelled) = one_slot_client();
    let id = open(&mut c, "2025-11-25");
    let call = request(3, "tools/call", json!({ "name": "test_simple_text" }));
    on_new(&mut c, &legacy(&call, Some("2025-11-25"), Some(&id)));
    assert_eq!(held.borrow().len(), 1);
    let (_, out) = on_new(&mut c, &get(Some(&id), SSE));
    assert!(out.starts_with("HTTP/1.1 200"), "the standalone stream opens: {out}");
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost:3000\r\nMcp-Session-Id: {id}\r\n\r\n");
    let (_, out) = on_new(&mut c, delete.as_bytes());
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(cancelled.borrow().is_empty(), "the call's connection is still open");
}

#[test]
fn a_request_whose_session_was_deleted_is_cancelled_when_its_connection_closes() {
    use mcp_engine::LogLevel;
    let (mut c, held, cancelled) = holding_client();
    let (id, a) = logged_call(&mut c);
    let t = held.borrow()[0];
    c.e.notify_log(t, LogLevel::Info, None, "one").unwrap();
    more(&mut c, a);
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost:3000\r\nMcp-Session-Id: {id}\r\n\r\n");
    let (_, out) = on_new(&mut c, delete.as_bytes());
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    // Nobody can resume its stream any more: closing its connection cancels it.
    c.e.handle_closed(c.now, a);
    more(&mut c, a);
    assert_eq!(*cancelled.borrow(), vec![t]);
    assert_eq!(c.e.in_flight(), 0);
}

#[test]
fn a_request_gone_before_the_host_saw_it_is_never_announced() {
    let (mut c, held, cancelled) = holding_client();
    let id = open(&mut c, "2025-11-25");
    let call = request(3, "tools/call", json!({ "name": "test_simple_text" }));
    let a = c.e.open(c.now, None).unwrap();
    let raw = legacy(&call, Some("2025-11-25"), Some(&id));
    assert_eq!(c.e.handle_input(c.now, a, &raw), raw.len());
    // The connection closes before the host polled: neither the call nor its cancellation.
    c.e.handle_closed(c.now, a);
    let conn = c.conn;
    more(&mut c, conn);
    assert!(held.borrow().is_empty(), "{:?}", held.borrow());
    assert!(cancelled.borrow().is_empty(), "{:?}", cancelled.borrow());
    assert_eq!(c.e.in_flight(), 0);
}

#[test]
fn a_request_released_from_waiting_and_gone_before_the_host_saw_it_is_never_announced() {
    use mcp_engine::{Content, ToolOutput};
    let (mut c, held, cancelled) = one_slot_client();
    let id = open(&mut c, "2025-11-25");
    let call = |n| {
        legacy(
            &request(n, "tools/call", json!({ "name": "test_simple_text" })),
            Some("2025-11-25"),
            Some(&id),
        )
    };
    on_new(&mut c, &call(3));
    let t = held.borrow()[0];
    // The second call waits for the slot.
    let b = c.e.open(c.now, None).unwrap();
    let raw = call(4);
    c.e.handle_input(c.now, b, &raw);
    assert!(c.e.poll_event().is_none());
    // The first is answered (its slot frees, the second takes it), then the second's
    // connection closes before the host polled.
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("one")])).unwrap();
    c.e.handle_closed(c.now, b);
    let conn = c.conn;
    more(&mut c, conn);
    assert_eq!(*held.borrow(), vec![t]);
    assert!(cancelled.borrow().is_empty(), "{:?}", cancelled.borrow());
    assert_eq!(c.e.in_flight(), 0);
}

#[test]
fn letting_a_stream_go_after_its_session_was_deleted_cancels_the_request() {
    let (mut c, held, cancelled) = holding_client();
    let id = open(&mut c, "2025-11-25");
    let call = request(3, "tools/call", json!({ "name": "test_simple_text" }));
    let (a, _) = on_new(&mut c, &legacy(&call, Some("2025-11-25"), Some(&id)));
    let t = held.borrow()[0];
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost:3000\r\nMcp-Session-Id: {id}\r\n\r\n");
    let (_, out) = on_new(&mut c, delete.as_bytes());
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    // The stream ends as asked, but nobody can come back to it: the request is over.
    assert_eq!(c.e.reconnect_later(t, Duration::from_millis(500)), Ok(true));
    more(&mut c, a);
    assert_eq!(*cancelled.borrow(), vec![t]);
    assert_eq!(c.e.in_flight(), 0);
}

#[test]
fn a_get_without_a_session_is_405_and_closes_like_every_method_refusal() {
    let mut c = client();
    let id = open(&mut c, "2025-11-25");
    // The 405 and a request pipelined behind it, on one connection.
    let mut raw = get(None, SSE);
    raw.extend(legacy(&request(2, "ping", json!({})), Some("2025-11-25"), Some(&id)));
    let out = c.feed(&raw, usize::MAX);
    let r = parse_responses(&out);
    assert_eq!((r[0].status, r[0].header("allow")), (405, Some("POST, DELETE")), "{r:?}");
    assert!(r[0].closes(), "connection: close: {r:?}");
    assert_eq!(r.len(), 1, "the request behind it is not read: {r:?}");
    assert!(c.e.wants_close(c.conn));
    // The other refusals of a GET come after a complete request and keep the connection.
    let (conn, out) = on_new(&mut c, &get(Some("nope"), SSE));
    assert!(out.starts_with("HTTP/1.1 404"), "{out}");
    assert!(!out.to_ascii_lowercase().contains("connection: close"), "{out}");
    assert!(!c.e.wants_close(conn));
}
