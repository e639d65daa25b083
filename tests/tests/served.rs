//! What the engine answered itself (`engine.observe().poll_served()`, either engine):
//! one record per request it served without the host, with the method, the declared
//! target, the revision, the id, the error code, the client's `traceparent`, and over
//! HTTP the session and addresses; none for a request the host serves; bounded, with
//! the records that found the queue full counted.

use mcp_engine::Commands;
use std::net::SocketAddr;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig};
use mcp_engine::observe::{SERVED_CAPACITY, Served};
use mcp_engine::{Catalog, Config, Engine, Event, Instant, Revision, Tool};
use mcp_fixture as everything;
use mcp_tests::wire::{client_of, legacy_post, one, post, req};
use mcp_tests::{drive, everything_engine, legacy_open, modern, request};
use serde_json::json;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// What a record says, owned.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    method: Option<&'static str>,
    notification: bool,
    tool: Option<String>,
    prompt: Option<String>,
    revision: Option<Revision>,
    id: Option<String>,
    code: Option<i32>,
    tool_error: bool,
    parent: Option<String>,
    session_id: Option<String>,
    peer: Option<SocketAddr>,
}

fn seen(s: &Served<'_>) -> Seen {
    Seen {
        method: s.method(),
        notification: s.is_notification(),
        tool: s.tool().map(str::to_owned),
        prompt: s.prompt().map(str::to_owned),
        revision: s.revision(),
        id: s.id().map(|id| id.to_string()),
        code: s.error_code(),
        tool_error: s.is_tool_error(),
        parent: s.trace_parent().map(|p| p.parent_id().to_string()),
        session_id: s.session_id().map(str::to_owned),
        peer: s.peer(),
    }
}

fn served(e: &mut Engine) -> Vec<Seen> {
    let mut all = Vec::new();
    while let Some(s) = e.observe().poll_served() {
        all.push(seen(&s));
    }
    all
}

fn plain(method: &'static str, revision: Option<Revision>, id: &str) -> Seen {
    Seen {
        method: Some(method),
        notification: false,
        tool: None,
        prompt: None,
        revision,
        id: Some(id.into()),
        code: None,
        tool_error: false,
        parent: None,
        session_id: None,
        peer: None,
    }
}

#[test]
fn every_request_the_engine_answers_is_recorded_and_none_the_host_serves() {
    let mut e = everything_engine();
    let mut list = json!({ "jsonrpc": "2.0", "id": "l-1", "method": "tools/list",
        "params": { "_meta": mcp_tests::modern_meta() } });
    list["params"]["_meta"]["traceparent"] = json!(PARENT);
    let input = [
        format!("{list}\n"),
        modern(2, "server/discover", json!({})),
        modern(3, "tools/call", json!({ "name": "test_simple_text" })),
        modern(4, "tools/call", json!({ "name": "no_such_tool" })),
        modern(5, "tools/call", json!({ "name": "echo", "arguments": { "text": 5 } })),
        modern(6, "prompts/get", json!({ "name": "test_prompt_with_arguments" })),
        modern(7, "nope/never", json!({})),
        "{not json\n".into(),
        "{\"jsonrpc\":\"2.0\",\"id\":8}\n".into(),
    ]
    .concat();
    let out = drive(&mut e, input.as_bytes(), &[input.len()]);
    assert!(!out.is_empty());
    let rev = Some(Revision::V2026_07_28);
    let got = served(&mut e);
    let mut list = plain("tools/list", rev, "l-1");
    list.parent = Some("00f067aa0ba902b7".into());
    let unknown_tool = Seen { code: Some(-32602), ..plain("tools/call", rev, "4") };
    // Invalid arguments: a tool result with `isError`, written by the engine.
    let bad_args = Seen { tool_error: true, tool: Some("echo".into()), ..plain("tools/call", rev, "5") };
    let bad_prompt = Seen {
        code: Some(-32602),
        prompt: Some("test_prompt_with_arguments".into()),
        ..plain("prompts/get", rev, "6")
    };
    // A method the engine does not serve, and messages with none: no method recorded
    // (the client's string is not kept).
    let other = Seen { code: Some(-32601), method: None, ..plain("", None, "7") };
    let parse = Seen { code: Some(-32700), id: None, method: None, ..plain("", None, "") };
    let no_method = Seen { code: Some(-32600), id: None, method: None, ..plain("", None, "") };
    assert_eq!(
        got,
        vec![
            list,
            plain("server/discover", rev, "2"),
            unknown_tool,
            bad_args,
            bad_prompt,
            other,
            parse,
            no_method
        ],
        "request 3 went to the host: no record; the unknown tool's name is not kept"
    );
    assert_eq!(e.observe().dropped(), 0);
    assert!(e.observe().poll_served().is_none());
}

#[test]
fn a_session_bound_stream_records_its_lifecycle_requests() {
    let mut e = everything_engine();
    let mut input = legacy_open("2025-11-25");
    input.push_str(&request(1, "ping", json!({})));
    input.push_str(&request(2, "logging/setLevel", json!({ "level": "debug" })));
    input.push_str(&request(3, "resources/subscribe", json!({ "uri": "test://static-text" })));
    input.push_str(&request(4, "logging/setLevel", json!({ "level": "loud" })));
    input.push_str(&request(5, "tools/list", json!({})));
    input.push_str(&mcp_tests::notification("notifications/cancelled", json!({ "requestId": 99 })));
    drive(&mut e, input.as_bytes(), &[7]);
    let rev = Some(Revision::V2025_11_25);
    let got = served(&mut e);
    let note = |method| Seen { id: None, notification: true, ..plain(method, rev, "") };
    assert_eq!(
        got,
        vec![
            plain("initialize", rev, "0"),
            note("notifications/initialized"),
            plain("ping", rev, "1"),
            plain("logging/setLevel", rev, "2"),
            // This engine offers no subscriptions: the method is not found.
            Seen { code: Some(-32601), revision: None, ..plain("resources/subscribe", rev, "3") },
            Seen { code: Some(-32602), ..plain("logging/setLevel", rev, "4") },
            plain("tools/list", rev, "5"),
            note("notifications/cancelled"),
        ],
        "the notifications the engine acts on are recorded, without an id; the byte-by-byte split changes nothing"
    );
}

#[test]
fn records_past_the_bound_are_dropped_and_counted() {
    let mut e = everything_engine();
    let n = SERVED_CAPACITY + 5;
    // Small refusals (a method not served), so the output never fills.
    let input: String = (0..n).map(|i| modern(i as i64, "nope", json!({}))).collect();
    assert_eq!(e.handle_input(Instant::ZERO, input.as_bytes()), input.len());
    assert_eq!(served(&mut e).len(), SERVED_CAPACITY);
    assert_eq!(e.observe().dropped(), 5);
    // Drained, it records again.
    let more = modern(1000, "nope", json!({}));
    assert_eq!(e.handle_input(Instant::ZERO, more.as_bytes()), more.len());
    assert_eq!(served(&mut e).iter().map(|s| s.id.clone()).collect::<Vec<_>>(), [Some("1000".into())]);
    assert_eq!(e.observe().dropped(), 5);
}

#[test]
fn a_replaced_catalog_drops_the_target_rather_than_misname_it() {
    let schema = json!({ "type": "object", "properties": { "text": { "type": "string" } } });
    let catalog = Catalog::builder().tool(Tool::new("echo").input_schema(schema)).build().unwrap();
    let mut e = Engine::new(Config::new("s", "1"), catalog);
    let line = modern(1, "tools/call", json!({ "name": "echo", "arguments": { "text": 5 } }));
    drive(&mut e, line.as_bytes(), &[line.len()]);
    e.replace_catalog(Catalog::builder().tool(Tool::new("other")).build().unwrap()).unwrap();
    let got = served(&mut e);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].method, got[0].tool.as_deref(), got[0].tool_error), (Some("tools/call"), None, true));
}

#[test]
fn over_http_a_record_names_the_session_and_the_peer() {
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let mut config = everything::config();
    config.secret_key([3; 32]);
    let mut c = client_of(config, http, everything::catalog(), Box::new(everything::respond));
    c.e.set_entropy(&[5; 32]);
    let peer: SocketAddr = "192.0.2.7:41000".parse().unwrap();
    c.e.handle_closed(Instant::ZERO, c.conn);
    c.conn = c.e.open(Instant::ZERO, Some(peer)).unwrap();
    let mut all = Vec::new();
    let mut take = |c: &mut mcp_tests::wire::Client| {
        while let Some(s) = c.e.observe().poll_served() {
            all.push(seen(&s));
        }
    };

    // 2026-07-28: no session.
    let r = one(&mut c, &post(&req(5, "tools/list", json!({})), &[]));
    assert_eq!(r.status, 200, "{r:?}");
    let r = one(&mut c, &post(&req(6, "tools/call", json!({ "name": "test_simple_text" })), &[]));
    assert_eq!(r.status, 200, "{r:?}");
    take(&mut c);

    // 2025-11-25: the session initialize opened, and a request in it.
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let r = one(&mut c, &legacy_post(&init, None));
    let id = r.header("mcp-session-id").expect("a session").to_owned();
    let ping = json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" });
    let r = one(&mut c, &legacy_post(&ping, Some(&id)));
    assert_eq!(r.status, 200, "{r:?}");
    take(&mut c);

    let rev = Some(Revision::V2025_11_25);
    let at = |s: Seen| Seen { peer: Some(peer), ..s };
    assert_eq!(
        all,
        vec![
            at(plain("tools/list", Some(Revision::V2026_07_28), "5")),
            at(Seen { session_id: Some(id.clone()), ..plain("initialize", rev, "1") }),
            at(Seen { session_id: Some(id.clone()), ..plain("ping", rev, "2") }),
        ]
    );
    // A request refused for a session that is not there: recorded, with its code.
    let r = one(&mut c, &legacy_post(&ping, Some(&format!("{}x", &id[..id.len() - 1]))));
    assert_eq!(r.status, 404, "{r:?}");
    let s = c.e.observe().poll_served().map(|s| seen(&s)).expect("a record");
    assert_eq!((s.method, s.code, s.session_id), (Some("ping"), Some(-32001), None));

    // Ending the session is reported with its id; a second session ends by expiry.
    assert!(c.e.observe().poll_session_end().is_none());
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost:3000\r\nMcp-Session-Id: {id}\r\n\r\n");
    assert_eq!(one(&mut c, delete.as_bytes()).status, 200);
    let end = c.e.observe().poll_session_end().expect("the session's end");
    assert_eq!((end.id(), end.revision(), end.at()), (id.as_str(), rev, Instant::ZERO));
    assert!(c.e.observe().poll_session_end().is_none());
    let r = one(&mut c, &legacy_post(&init, None));
    let second = r.header("mcp-session-id").expect("a session").to_owned();
    let later = Instant::ZERO + std::time::Duration::from_secs(24 * 3600);
    c.e.handle_timeout(later);
    let end = c.e.observe().poll_session_end().expect("the idle session's end");
    assert_eq!((end.id(), end.at()), (second.as_str(), later));
}

/// The events the host sees are unchanged by the records: a cancelled request has none.
#[test]
fn polling_records_does_not_disturb_events() {
    let mut e = everything_engine();
    let line = modern(1, "tools/call", json!({ "name": "test_simple_text" }));
    e.handle_input(Instant::ZERO, line.as_bytes());
    assert!(e.observe().poll_served().is_none());
    assert!(matches!(e.poll_event(), Some(Event::CallTool(_))));
}

/// The host's answers, recorded only when asked (`record_answers`): each with its
/// event's ticket and what it was, whether given through the event or later by ticket;
/// a cancelled ticket's late answer is refused and not recorded.
#[test]
fn the_hosts_answers_are_recorded_when_asked() {
    use mcp_engine::error::HostError;
    use mcp_engine::{Content, ToolOutput};
    let catalog = Catalog::builder().tool(Tool::new("t")).build().unwrap();
    let mut e = Engine::new(Config::new("s", "1"), catalog);
    let mut tickets = Vec::new();
    let feed = |e: &mut Engine, id: i64| {
        let line = modern(id, "tools/call", json!({ "name": "t" }));
        assert_eq!(e.handle_input(Instant::ZERO, line.as_bytes()), line.len());
        let Some(event) = e.poll_event() else { panic!("no event for call {id}") };
        event.ticket()
    };
    // Not asked: nothing is kept.
    let t = feed(&mut e, 1);
    e.answer_tool(t, &ToolOutput::new(&[Content::text("x")])).unwrap();
    assert!(e.observe().poll_answered().is_none());

    e.observe().record_answers(true);
    for id in 2..=5 {
        tickets.push(feed(&mut e, id));
    }
    e.answer_tool(tickets[0], &ToolOutput::new(&[Content::text("ok")])).unwrap();
    e.answer_tool(tickets[1], &ToolOutput::error(&[Content::text("failed")])).unwrap();
    e.answer_error(tickets[2], HostError::Internal("down")).unwrap();
    e.answer_error(tickets[3], HostError::InvalidParams("no")).unwrap();
    let got: Vec<_> = std::iter::from_fn(|| e.observe().poll_answered())
        .map(|a| (a.ticket(), a.is_tool_error(), a.error_code()))
        .collect();
    assert_eq!(
        got,
        vec![
            (tickets[0], false, None),
            (tickets[1], true, None),
            (tickets[2], false, Some(-32603)),
            (tickets[3], false, Some(-32602)),
        ]
    );
    assert!(e.observe().poll_served().is_none(), "the host's answers are not the engine's");

    // Cancelled, then answered: the answer is refused, and not recorded.
    let t = feed(&mut e, 6);
    let cancel = mcp_tests::notification("notifications/cancelled", json!({ "requestId": 6 }));
    assert_eq!(e.handle_input(Instant::ZERO, cancel.as_bytes()), cancel.len());
    assert!(matches!(e.poll_event(), Some(Event::Cancelled(c)) if c == t));
    assert!(e.answer_tool(t, &ToolOutput::new(&[Content::text("late")])).is_err());
    assert!(e.observe().poll_answered().is_none());
    e.observe().record_answers(false);
    let t = feed(&mut e, 7);
    e.answer_tool(t, &ToolOutput::new(&[Content::text("x")])).unwrap();
    assert!(e.observe().poll_answered().is_none(), "turned off again");
}

/// A call the host makes a task is answered then, with the task's handle: recorded under
/// the call's ticket; the task's later result is not an answer to the request.
#[test]
fn a_call_made_a_task_is_recorded_when_the_task_is_made() {
    use mcp_engine::{Content, TaskOptions, TaskSupport, ToolOutput};
    let mut config = Config::new("s", "1");
    config.tasks(true);
    let catalog =
        Catalog::builder().tool(Tool::new("slow").task_support(TaskSupport::Optional)).build().unwrap();
    let mut e = Engine::new(config, catalog);
    e.set_entropy(&[5; 32]);
    e.observe().record_answers(true);
    let mut line = modern(1, "tools/call", json!({ "name": "slow" }));
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } } });
    let mut v: serde_json::Value = serde_json::from_str(&line).unwrap();
    v["params"]["_meta"] = meta;
    line = format!("{v}\n");
    assert_eq!(e.handle_input(Instant::ZERO, line.as_bytes()), line.len());
    let (ticket, task) = {
        let Some(Event::CallTool(mut call)) = e.poll_event() else { panic!("no call") };
        let ticket = call.ticket;
        (ticket, call.start_task(&TaskOptions::new()).expect("a task"))
    };
    let got: Vec<_> =
        std::iter::from_fn(|| e.observe().poll_answered()).map(|a| (a.ticket(), a.error_code())).collect();
    assert_eq!(got, vec![(ticket, None)]);
    e.answer_tool(task, &ToolOutput::new(&[Content::text("done")])).expect("the task's result");
    assert!(e.observe().poll_answered().is_none(), "the task's result answers no request");
}
