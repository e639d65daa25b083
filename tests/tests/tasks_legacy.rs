//! The `2025-11-25` tasks utility on a session-bound stream (stdio, and an HTTP
//! session): the capability, `execution.taskSupport`, task-augmented `tools/call`
//! (`params.task`), `tasks/get`, `tasks/result` (waiting for the end), `tasks/list`
//! (paginated, only the caller's), `tasks/cancel` (terminal: `-32602`),
//! `notifications/tasks/status`, TTL expiry, and that `2025-06-18` has none of it.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_engine::error::HostError;
use mcp_engine::{Catalog, Config, Content, Engine, Event, Instant, TaskSupport, Ticket, Tool, ToolOutput};
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::{drain_with, legacy_open, lines, request};
use serde_json::{Value, json};

fn catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("slow").description("May run as a task.").task_support(TaskSupport::Optional))
        .tool(Tool::new("only_task").description("Only as a task.").task_support(TaskSupport::Required))
        .tool(Tool::new("plain").description("Never a task."))
        .build()
        .expect("a valid catalog")
}

fn config() -> Config {
    let mut c = Config::new("tasks-legacy", "0.1.0");
    c.tasks(true).task_ttl(Duration::from_secs(60)).page_size(2).secret_key([9; 32]);
    c
}

/// A stdio session whose host keeps every call's ticket.
struct S {
    e: Engine,
    host: Box<dyn FnMut(Event<'_>)>,
    calls: Rc<RefCell<Vec<Ticket>>>,
    cancelled: Rc<RefCell<Vec<Ticket>>>,
    now: Instant,
    /// The `initialize` result.
    opened: Value,
}

impl S {
    fn open(rev: &str) -> Self {
        let (calls, cancelled) = (Rc::new(RefCell::new(Vec::new())), Rc::new(RefCell::new(Vec::new())));
        let (c, x) = (calls.clone(), cancelled.clone());
        let host: Box<dyn FnMut(Event<'_>)> = Box::new(move |ev| match ev {
            Event::CallTool(call) => c.borrow_mut().push(call.ticket),
            Event::Cancelled(t) => x.borrow_mut().push(t),
            _ => {}
        });
        let mut e = Engine::new(config(), catalog());
        e.set_entropy(&[2; 32]);
        let mut s = Self { e, host, calls, cancelled, now: Instant::ZERO, opened: Value::Null };
        let out = s.feed(&legacy_open(rev));
        assert_eq!(out[0]["result"]["protocolVersion"], rev, "{out:?}");
        s.opened = out[0].clone();
        s
    }

    fn feed(&mut self, input: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut fed = 0;
        while fed < input.len() {
            fed += self.e.handle_input(self.now, &input.as_bytes()[fed..]);
            drain_with(&mut self.e, &mut self.host, &mut out);
        }
        lines(&out)
    }

    fn send(&mut self, id: u64, method: &str, params: Value) -> Vec<Value> {
        self.feed(&request(id, method, params))
    }

    fn one(&mut self, id: u64, method: &str, params: Value) -> Value {
        let mut v = self.send(id, method, params);
        assert_eq!(v.len(), 1, "{v:?}");
        v.remove(0)
    }

    fn last_call(&self) -> Ticket {
        *self.calls.borrow().last().expect("a call")
    }

    /// Output the host's command made the engine write.
    fn after(&mut self, f: impl FnOnce(&mut Engine)) -> Vec<Value> {
        f(&mut self.e);
        let mut out = Vec::new();
        drain_with(&mut self.e, &mut self.host, &mut out);
        lines(&out)
    }

    fn create(&mut self, id: u64, ttl: u64) -> (String, Ticket) {
        let r = self.one(id, "tools/call", json!({ "name": "slow", "task": { "ttl": ttl } }));
        let task = r["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {r}")).to_owned();
        (task, self.last_call())
    }
}

#[test]
fn the_capability_and_execution_task_support_are_2025_11_25s() {
    let mut s = S::open("2025-11-25");
    let caps = &s.opened["result"]["capabilities"];
    assert_eq!(caps["tasks"], json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }));
    assert!(caps.get("extensions").is_none());
    let mut tools = Vec::new();
    let mut params = json!({});
    for id in 1..10 {
        let page = s.one(id, "tools/list", params.clone());
        tools.extend(page["result"]["tools"].as_array().expect("tools").iter().cloned());
        match page["result"]["nextCursor"].as_str() {
            Some(c) => params = json!({ "cursor": c }),
            None => break,
        }
    }
    assert_eq!(tools.len(), 3);
    let support = |name: &str| tools.iter().find(|t| t["name"] == name).map(|t| t["execution"].clone());
    assert_eq!(support("slow"), Some(json!({ "taskSupport": "optional" })));
    assert_eq!(support("only_task"), Some(json!({ "taskSupport": "required" })));
    assert_eq!(support("plain"), Some(Value::Null));
    for t in &tools {
        assert_valid(Rev::V2025_11_25, "Tool", t);
    }
    // The same stream's 2026-07-28 requests see neither.
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
    let list = s.one(20, "tools/list", json!({ "_meta": meta }));
    assert!(list["result"]["tools"].as_array().expect("tools").iter().all(|t| t.get("execution").is_none()));

    let mut old = S::open("2025-06-18");
    assert!(old.opened["result"]["capabilities"].get("tasks").is_none());
    let list = old.one(1, "tools/list", json!({}));
    assert!(list["result"]["tools"].as_array().expect("tools").iter().all(|t| t.get("execution").is_none()));
    // params.task is ignored there: a plain call.
    assert!(old.send(2, "tools/call", json!({ "name": "slow", "task": {} })).is_empty());
    assert!(!old.last_call().is_task());
    assert_eq!(old.one(3, "tasks/list", json!({}))["error"]["code"], -32601);
}

#[test]
fn an_augmented_call_is_a_task_from_the_start() {
    let mut s = S::open("2025-11-25");
    let r = s.one(1, "tools/call", json!({ "name": "slow", "task": { "ttl": 5000 } }));
    assert_valid(Rev::V2025_11_25, "CreateTaskResult", &r["result"]);
    let task = &r["result"]["task"];
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 5000);
    assert!(r["result"].get("resultType").is_none() && task.get("ttlMs").is_none(), "{r}");
    let id = task["taskId"].as_str().expect("id").to_owned();
    let t = s.last_call();
    assert!(t.is_task(), "the host works on the task");

    let g = s.one(2, "tasks/get", json!({ "taskId": id }));
    assert_valid(Rev::V2025_11_25, "GetTaskResult", &g["result"]);
    assert_eq!(g["result"]["status"], "working");
    assert!(g["result"].get("result").is_none());

    // tasks/result waits for the end.
    assert!(s.send(3, "tasks/result", json!({ "taskId": id })).is_empty());
    let out = s.after(|e| e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])).expect("live"));
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0]["id"], 3);
    assert_eq!(out[0]["result"]["content"][0]["text"], "done");
    assert_eq!(out[0]["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    assert_valid(Rev::V2025_11_25, "CallToolResult", &out[0]["result"]);
    assert_eq!(out[1]["method"], "notifications/tasks/status");
    assert_eq!(out[1]["params"]["status"], "completed");
    assert_valid(Rev::V2025_11_25, "TaskStatusNotification", &out[1]);
    // And answers at once now.
    let again = s.one(4, "tasks/result", json!({ "taskId": id }));
    assert_eq!(again["result"]["content"][0]["text"], "done");
    // A finished task cannot be cancelled.
    let c = s.one(5, "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(c["error"]["code"], -32602, "{c}");
}

#[test]
fn tool_errors_and_host_errors_fail_the_task() {
    let mut s = S::open("2025-11-25");
    let (a, ta) = s.create(1, 10_000);
    let _ = s.after(|e| {
        let content = [Content::text("broke")];
        let mut o = ToolOutput::new(&content);
        o.is_error = true;
        e.answer_tool(ta, &o).expect("live");
    });
    assert_eq!(s.one(2, "tasks/get", json!({ "taskId": a }))["result"]["status"], "failed");
    let r = s.one(3, "tasks/result", json!({ "taskId": a }));
    assert_eq!(r["result"]["isError"], true, "the result as the call would have had it: {r}");

    let (b, tb) = s.create(4, 10_000);
    s.after(|e| e.answer_error(tb, HostError::InvalidParams("no such file")).expect("live"));
    let r = s.one(5, "tasks/result", json!({ "taskId": b }));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["message"], "Invalid params: no such file");
}

#[test]
fn cancel_answers_with_the_cancelled_task_and_wakes_the_waiters() {
    let mut s = S::open("2025-11-25");
    let (id, t) = s.create(1, 10_000);
    assert!(s.send(2, "tasks/result", json!({ "taskId": id })).is_empty());
    let out = s.send(3, "tasks/cancel", json!({ "taskId": id }));
    let cancel = out.iter().find(|v| v["id"] == 3).expect("the cancel's answer");
    assert_valid(Rev::V2025_11_25, "CancelTaskResult", &cancel["result"]);
    assert_eq!(cancel["result"]["status"], "cancelled");
    let waiter = out.iter().find(|v| v["id"] == 2).expect("the waiting tasks/result");
    assert_eq!(waiter["error"]["code"], -32602);
    assert!(out.iter().any(|v| v["method"] == "notifications/tasks/status"));
    assert_eq!(*s.cancelled.borrow(), vec![t]);
    assert_eq!(
        s.one(4, "tasks/cancel", json!({ "taskId": id }))["error"]["code"],
        -32602,
        "already cancelled"
    );
}

#[test]
fn tasks_list_pages_the_callers_tasks() {
    let mut s = S::open("2025-11-25");
    let ids: Vec<String> = (1..=3).map(|i| s.create(i, 10_000).0).collect();
    let first = s.one(10, "tasks/list", json!({}));
    assert_valid(Rev::V2025_11_25, "ListTasksResult", &first["result"]);
    let page: Vec<&str> = first["result"]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["taskId"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(page, [ids[0].as_str(), ids[1].as_str()]);
    let cursor = first["result"]["nextCursor"].as_str().expect("a next page").to_owned();
    let second = s.one(11, "tasks/list", json!({ "cursor": cursor }));
    let page: Vec<&str> = second["result"]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["taskId"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(page, [ids[2].as_str()]);
    assert!(second["result"].get("nextCursor").is_none());
    assert_eq!(s.one(12, "tasks/list", json!({ "cursor": "not-ours" }))["error"]["code"], -32602);
    assert_eq!(s.one(13, "tasks/list", json!({ "cursor": 5 }))["error"]["code"], -32602);
}

#[test]
fn augmentation_must_match_the_tool() {
    let mut s = S::open("2025-11-25");
    let r = s.one(1, "tools/call", json!({ "name": "plain", "task": {} }));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let r = s.one(2, "tools/call", json!({ "name": "only_task" }));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    // Without params.task an optional tool is a plain call.
    assert!(s.send(3, "tools/call", json!({ "name": "slow" })).is_empty());
    assert!(!s.last_call().is_task());
    // 2026-07-28 tasks are not seen from the session's revision, nor the other way.
    assert_eq!(s.one(4, "tasks/get", json!({ "taskId": "AAAAAAAAAAAAAAAAAAAAAA" }))["error"]["code"], -32602);
}

#[test]
fn a_waiting_result_hears_the_ttl() {
    let mut s = S::open("2025-11-25");
    let (id, t) = s.create(1, 2_000);
    assert!(s.send(2, "tasks/result", json!({ "taskId": id })).is_empty());
    let out = s.after(|e| e.handle_timeout(Instant::from_micros(1_999_000)));
    assert!(out.is_empty(), "{out:?}");
    let out = s.after(|e| e.handle_timeout(Instant::from_micros(2_000_000)));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["id"], 2);
    assert_eq!(out[0]["error"]["message"], "Invalid params: Task has expired");
    assert_eq!(*s.cancelled.borrow(), vec![t]);
    s.now = Instant::from_micros(2_000_000);
    assert_eq!(s.one(3, "tasks/get", json!({ "taskId": id }))["error"]["code"], -32602);
}

/// An HTTP engine anyone may use (one principal), whose host keeps every call's ticket.
fn http_client() -> (mcp_tests::wire::Client, Rc<RefCell<Vec<Ticket>>>) {
    mcp_tests::wire::ticket_client(config(), catalog())
}

/// Over an HTTP session: the augmented call answered on one connection, `tasks/result`
/// waiting on another until the host finishes the task, a third waiter's connection
/// closing first.
#[test]
fn over_an_http_session_tasks_result_waits_on_its_connection() {
    use mcp_tests::wire::{parse_responses, post};
    let (mut c, calls) = http_client();
    // Session-bound requests: no Mcp-Method / Mcp-Name, the session's id once there is one.
    let legacy = |body: Value, session: Option<&str>| {
        let mut extra = vec![("Mcp-Method", ""), ("Mcp-Name", ""), ("MCP-Protocol-Version", "")];
        if let Some(id) = session {
            extra.push(("Mcp-Session-Id", id));
        }
        post(&body, &extra)
    };
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let r = c.send(&legacy(init, None)).remove(0);
    assert!(r.json()["result"]["capabilities"]["tasks"].is_object(), "{:?}", r.json());
    let session = r.header("mcp-session-id").expect("a session").to_owned();
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "slow", "task": {} } });
    let r = c.send(&legacy(call, Some(&session))).remove(0);
    assert_eq!(r.status, 200);
    let id = r.json()["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    let t = *calls.borrow().last().expect("the host has the task");
    assert!(t.is_task());

    let result = |rid: u64| {
        legacy(
            json!({ "jsonrpc": "2.0", "id": rid, "method": "tasks/result", "params": { "taskId": id } }),
            Some(&session),
        )
    };
    let first = c.conn;
    let waiting = c.e.open(c.now, None).expect("a connection");
    c.conn = waiting;
    assert!(parse_responses(&c.feed(&result(3), usize::MAX)).is_empty(), "it waits");
    let gone = c.e.open(c.now, None).expect("a connection");
    c.conn = gone;
    assert!(parse_responses(&c.feed(&result(4), usize::MAX)).is_empty());
    c.e.handle_closed(c.now, gone);
    c.conn = first;
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("built")])).expect("live");
    c.conn = waiting;
    let mut out = Vec::new();
    c.drain(&mut out);
    let answered = parse_responses(&out);
    assert_eq!(answered.len(), 1, "{}", String::from_utf8_lossy(&out));
    let v = answered[0].json();
    assert_eq!(v["id"], 3);
    assert_eq!(v["result"]["content"][0]["text"], "built");
    assert_eq!(v["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
}

/// A `2025-11-25` task asks its stdio client for input: the requests go out tagged with
/// the task, the task is `input_required` until every one is answered, then the call comes
/// back to the host with the answers.
#[test]
fn a_2025_task_asks_its_client_with_requests_tagged_by_the_task() {
    let calls = Rc::new(RefCell::new(Vec::new()));
    let kept = calls.clone();
    let mut host: Box<dyn FnMut(Event<'_>)> = Box::new(move |ev| {
        if let Event::CallTool(call) = ev {
            let answers: Vec<(String, String)> =
                call.input_responses.iter().map(|(k, r)| (k.to_owned(), r.raw().to_owned())).collect();
            kept.borrow_mut().push((call.ticket, answers));
        }
    });
    let mut e = Engine::new(config(), catalog());
    e.set_entropy(&[6; 32]);
    let open = request(
        0,
        "initialize",
        json!({ "protocolVersion": "2025-11-25",
        "capabilities": { "elicitation": {} }, "clientInfo": { "name": "t", "version": "1" } }),
    );
    let feed = |e: &mut Engine, host: &mut Box<dyn FnMut(Event<'_>)>, input: &str| {
        let mut out = Vec::new();
        e.handle_input(Instant::ZERO, input.as_bytes());
        drain_with(e, host, &mut out);
        lines(&out)
    };
    feed(&mut e, &mut host, &open);
    let created = feed(&mut e, &mut host, &request(1, "tools/call", json!({ "name": "slow", "task": {} })));
    let id = created[0]["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    let t = calls.borrow()[0].0;
    let schema = serde_json::value::to_raw_value(&json!({ "type": "object" })).expect("raw");
    let asks = [
        mcp_engine::mrtr::InputRequest::elicit("ok", "Go on?", &schema),
        mcp_engine::mrtr::InputRequest::list_roots("roots"),
    ];
    e.answer_input_required(t, &mcp_engine::mrtr::InputRequired::new(&asks)).expect("asked");
    let mut out = Vec::new();
    drain_with(&mut e, &mut host, &mut out);
    let sent = lines(&out);
    // Only what the client declared (elicitation), tagged with the task; then the status.
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0]["method"], "elicitation/create");
    assert_eq!(sent[0]["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    assert_eq!(sent[0]["params"]["message"], "Go on?");
    assert_valid(Rev::V2025_11_25, "JSONRPCRequest", &sent[0]);
    assert_eq!(sent[1]["params"]["status"], "input_required");
    let get = feed(&mut e, &mut host, &request(2, "tasks/get", json!({ "taskId": id })));
    assert_eq!(get[0]["result"]["status"], "input_required");
    // The client answers the request the task sent.
    let answer = json!({ "jsonrpc": "2.0", "id": sent[0]["id"], "result": { "action": "accept", "content": { "go": true } } });
    let out = feed(&mut e, &mut host, &(answer.to_string() + "\n"));
    assert_eq!(out[0]["params"]["status"], "working", "{out:?}");
    let (back, answers) = calls.borrow()[1].clone();
    assert_eq!(back, t);
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].0, "ok");
    assert!(answers[0].1.contains("\"go\":true"));
    // A second answer to the same request is ignored.
    assert!(feed(&mut e, &mut host, &(answer.to_string() + "\n")).is_empty());
    assert_eq!(calls.borrow().len(), 2);
}

/// Over HTTP a `2025-11-25` task's status changes reach the standalone `GET` stream of
/// the session that created it, as `notifications/tasks/status` carrying the whole task
/// (valid under the `2025-11-25` schema), and no other session's stream.
#[test]
fn over_an_http_session_status_notifications_reach_the_creating_sessions_stream() {
    use mcp_tests::wire::{SSE, get, more, on_new, one, open_session, session_post, sse_events};
    let (mut c, calls) = http_client();
    let mine = open_session(&mut c, "2025-11-25");
    let other = open_session(&mut c, "2025-11-25");
    let (my_stream, head) = on_new(&mut c, &get(Some(&mine), SSE));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (their_stream, head) = on_new(&mut c, &get(Some(&other), SSE));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let notes = |raw: &str| -> Vec<Value> {
        sse_events(raw)
            .into_iter()
            .filter(|(_, d)| !d.is_empty())
            .map(|(_, d)| serde_json::from_str(&d).expect("JSON"))
            .collect()
    };
    let create = |c: &mut mcp_tests::wire::Client, rid: u64| {
        let call = json!({ "jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": { "name": "slow", "task": {} } });
        let r = one(c, &session_post(&call, "2025-11-25", Some(&mine)));
        r.json()["result"]["task"]["taskId"].as_str().expect("a task").to_owned()
    };

    // The host finishes the task: its session's stream hears `completed`.
    let id = create(&mut c, 2);
    let t = *calls.borrow().last().expect("the host has the task");
    assert!(notes(&more(&mut c, my_stream)).is_empty(), "created: no notification");
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("built")])).expect("live");
    let heard = notes(&more(&mut c, my_stream));
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_valid(Rev::V2025_11_25, "TaskStatusNotification", &heard[0]);
    assert_eq!(heard[0]["method"], "notifications/tasks/status");
    assert_eq!(heard[0]["params"]["taskId"], id.as_str());
    assert_eq!(heard[0]["params"]["status"], "completed");
    assert!(heard[0]["params"].get("_meta").is_none(), "no related-task _meta on it");

    // The client cancels another: `cancelled`, on the same stream.
    let id = create(&mut c, 3);
    let cancel = json!({ "jsonrpc": "2.0", "id": 4, "method": "tasks/cancel", "params": { "taskId": id } });
    let r = one(&mut c, &session_post(&cancel, "2025-11-25", Some(&mine)));
    assert_eq!(r.json()["result"]["status"], "cancelled", "{:?}", r.json());
    let heard = notes(&more(&mut c, my_stream));
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_valid(Rev::V2025_11_25, "TaskStatusNotification", &heard[0]);
    assert_eq!(heard[0]["params"]["taskId"], id.as_str());
    assert_eq!(heard[0]["params"]["status"], "cancelled");

    // The other session's stream heard nothing of either.
    assert!(notes(&more(&mut c, their_stream)).is_empty());
}

/// Over HTTP with two principals, `tasks/list` shows each caller its own tasks only (the
/// other's are skipped, also between the pages), a cursor is good for the principal it
/// was given to only, and an anonymous caller is not offered `tasks/list` at all.
#[test]
fn over_http_tasks_list_hides_another_principals_tasks() {
    use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, Principal, Verdict};
    use mcp_tests::wire::{Client, client_of, one, open_session, session_post};
    // The host authorizes each request (its verdict names the principal).
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let mut c = client_of(config(), http, catalog(), Box::new(|_| {}));
    c.e.set_entropy(&[8; 32]);
    let alice = Verdict::AllowAs(Principal::of(b"alice"));
    let bob = Verdict::AllowAs(Principal::of(b"bob"));
    let mut sessions = Vec::new();
    for v in [alice, bob, Verdict::Allow] {
        c.verdict = v;
        sessions.push(open_session(&mut c, "2025-11-25"));
    }
    let ask = |c: &mut Client, who: usize, rid: u64, method: &str, params: Value| {
        c.verdict = [alice, bob, Verdict::Allow][who];
        let body = json!({ "jsonrpc": "2.0", "id": rid, "method": method, "params": params });
        one(c, &session_post(&body, "2025-11-25", Some(&sessions[who]))).json()
    };
    let create = |c: &mut Client, who: usize, rid: u64| {
        let r = ask(c, who, rid, "tools/call", json!({ "name": "slow", "task": {} }));
        r["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {r}")).to_owned()
    };
    let ids = |r: &Value| -> Vec<String> {
        let tasks = r["result"]["tasks"].as_array().unwrap_or_else(|| panic!("tasks: {r}"));
        tasks.iter().map(|t| t["taskId"].as_str().unwrap_or_default().to_owned()).collect()
    };
    // Bob's task sits between Alice's in the table.
    let a1 = create(&mut c, 0, 2);
    let b1 = create(&mut c, 1, 3);
    let a2 = create(&mut c, 0, 4);
    let a3 = create(&mut c, 0, 5);

    let first = ask(&mut c, 0, 6, "tasks/list", json!({}));
    assert_valid(Rev::V2025_11_25, "ListTasksResult", &first["result"]);
    assert_eq!(ids(&first), [a1.as_str(), a2.as_str()]);
    let cursor = first["result"]["nextCursor"].as_str().expect("a next page").to_owned();
    let second = ask(&mut c, 0, 7, "tasks/list", json!({ "cursor": cursor }));
    assert_eq!(ids(&second), [a3.as_str()]);
    assert!(second["result"].get("nextCursor").is_none(), "{second}");

    let theirs = ask(&mut c, 1, 8, "tasks/list", json!({}));
    assert_eq!(ids(&theirs), [b1.as_str()]);
    let stolen = ask(&mut c, 1, 9, "tasks/list", json!({ "cursor": cursor }));
    assert_eq!(stolen["error"]["code"], -32602, "Alice's cursor is hers: {stolen}");
    assert_eq!(ask(&mut c, 2, 10, "tasks/list", json!({}))["error"]["code"], -32601, "not offered");
}

/// Over HTTP, a `tasks/result` waiting from another session of the task's principal gets
/// the result only: the task's input requests and progress are for the session that
/// made the call (its client declared what it can answer, and only its answers are
/// taken). With only such a waiter, the host's input request is refused; once the
/// creating session waits too, they go on its stream, and the other waiter's stream gets
/// nothing but the result.
#[test]
fn a_tasks_result_from_another_session_is_sent_only_the_result() {
    use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, Principal, Verdict};
    use mcp_tests::wire::{one, parse_responses, session_post};
    // Both sessions are one principal's (the host names it for every request).
    let calls = Rc::new(RefCell::new(Vec::new()));
    let kept = calls.clone();
    let host: mcp_tests::wire::Host = Box::new(move |ev| {
        if let Event::CallTool(call) = ev {
            kept.borrow_mut().push(call.ticket);
        }
    });
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let mut c = mcp_tests::wire::client_of(config(), http, catalog(), host);
    c.e.set_entropy(&[8; 32]);
    c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    let v = "2025-11-25";
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": v, "capabilities": { "elicitation": {} }, "clientInfo": { "name": "t", "version": "1" } } });
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let r = one(&mut c, &session_post(&init, v, None));
        let s = r.header("mcp-session-id").expect("a session").to_owned();
        let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        assert_eq!(one(&mut c, &session_post(&done, v, Some(&s))).status, 202);
        sessions.push(s);
    }
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "slow", "task": {}, "_meta": { "progressToken": "p" } } });
    let r = one(&mut c, &session_post(&call, v, Some(&sessions[0])));
    let id = r.json()["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    let t = *calls.borrow().last().expect("the host has the task");
    let result = |rid: u64| json!({ "jsonrpc": "2.0", "id": rid, "method": "tasks/result", "params": { "taskId": id } });

    // The other session waits: the task's requests and progress are not for it.
    let theirs = c.e.open(c.now, None).expect("a connection");
    c.conn = theirs;
    assert!(
        parse_responses(&c.feed(&session_post(&result(3), v, Some(&sessions[1])), usize::MAX)).is_empty()
    );
    let requests = [mcp_tests::confirm()];
    assert!(
        c.e.answer_input_required(t, &mcp_engine::mrtr::InputRequired::new(&requests)).is_err(),
        "no stream of the creating session waits"
    );
    c.e.notify_progress(t, 1.0, None, Some("a step"))
        .expect("progress (no stream of the creating session: not sent)");
    let mut out = Vec::new();
    c.drain(&mut out);
    assert!(out.is_empty(), "nothing for the other session: {}", String::from_utf8_lossy(&out));

    // The creating session waits too: the request and the progress go there.
    let mine = c.e.open(c.now, None).expect("a connection");
    c.conn = mine;
    let head = c.feed(&session_post(&result(4), v, Some(&sessions[0])), usize::MAX);
    assert!(parse_responses(&head).iter().all(|r| r.body.is_empty() || r.status == 200), "it waits");
    c.e.answer_input_required(t, &mcp_engine::mrtr::InputRequired::new(&requests))
        .expect("asked on the creating session's stream");
    c.e.notify_progress(t, 2.0, None, None).expect("progress");
    let mut stream = head;
    c.drain(&mut stream);
    let text = String::from_utf8_lossy(&stream);
    assert!(text.contains("elicitation/create"), "{text}");
    assert!(text.contains("notifications/progress"), "{text}");
    c.conn = theirs;
    let mut out = Vec::new();
    c.drain(&mut out);
    assert!(out.is_empty(), "still nothing for the other session: {}", String::from_utf8_lossy(&out));

    // The task ends (the host gives up on the input): both waiters get the result.
    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])).expect("live");
    c.drain(&mut out);
    let answered = parse_responses(&out);
    assert_eq!(answered.len(), 1, "{}", String::from_utf8_lossy(&out));
    assert_eq!(answered[0].json()["result"]["content"][0]["text"], "done");
}

/// Over HTTP without a principal (`Authorization::Everyone`), a `2025-11-25` task is the
/// session's that made it: another session's `tasks/get`, `tasks/result` and
/// `tasks/cancel` get what an unknown id gets (`-32602`, the same error), its
/// `tasks/result` does not wait, and the host's work goes on; the creating session reads,
/// waits on and cancels it. Neither session is offered `tasks/list` (`initialize` leaves
/// `tasks.list` out; the method is `-32601`). Before, any session read, waited on and
/// cancelled any other's task, and listed them all.
#[test]
fn over_http_without_a_principal_a_task_is_its_sessions_only() {
    use mcp_tests::wire::{one, open_session, parse_responses, session_post};
    let (mut c, calls) = http_client();
    let v = "2025-11-25";
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": v, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let r = one(&mut c, &session_post(&init, v, None));
    let caps = &r.json()["result"]["capabilities"]["tasks"];
    assert_eq!(*caps, json!({ "cancel": {}, "requests": { "tools": { "call": {} } } }), "no tasks.list");
    assert_valid(Rev::V2025_11_25, "InitializeResult", &r.json()["result"]);
    let mine = open_session(&mut c, v);
    let theirs = open_session(&mut c, v);
    let ask = |c: &mut mcp_tests::wire::Client, session: &str, rid: u64, method: &str, params: Value| {
        let body = json!({ "jsonrpc": "2.0", "id": rid, "method": method, "params": params });
        let r = c.send(&session_post(&body, v, Some(session)));
        assert_eq!(r.len(), 1, "{r:?}");
        (r[0].status, if r[0].body.is_empty() { Value::Null } else { r[0].json() })
    };
    let (_, r) = ask(&mut c, &mine, 2, "tools/call", json!({ "name": "slow", "task": {} }));
    let id = r["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {r}")).to_owned();
    let t = *calls.borrow().last().expect("the host has the task");

    let unknown = "QUJDREVGR0hJSktMTU5PUA";
    for (rid, method) in [(3, "tasks/get"), (4, "tasks/result"), (5, "tasks/cancel")] {
        let (status, r) = ask(&mut c, &theirs, rid, method, json!({ "taskId": id }));
        let (_, none) = ask(&mut c, &theirs, rid, method, json!({ "taskId": unknown }));
        assert_eq!((status, &r["error"]), (200, &none["error"]), "{method}: as for an unknown id: {r}");
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
    }
    for session in [&mine, &theirs] {
        let (status, r) = ask(&mut c, session, 6, "tasks/list", json!({}));
        assert_eq!((status, r["error"]["code"].as_i64()), (404, Some(-32601)), "{r}");
    }

    // The creating session: it is there, still working (the other's cancel did nothing).
    let (_, r) = ask(&mut c, &mine, 7, "tasks/get", json!({ "taskId": id }));
    assert_eq!(r["result"]["status"], "working", "{r}");
    let waiting = c.e.open(c.now, None).expect("a connection");
    let first = c.conn;
    c.conn = waiting;
    let result = json!({ "jsonrpc": "2.0", "id": 8, "method": "tasks/result", "params": { "taskId": id } });
    assert!(
        parse_responses(&c.feed(&session_post(&result, v, Some(&mine)), usize::MAX)).is_empty(),
        "it waits"
    );
    c.conn = first;
    let (_, r) = ask(&mut c, &mine, 9, "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(r["result"]["status"], "cancelled", "{r}");
    c.conn = waiting;
    let mut out = Vec::new();
    c.drain(&mut out);
    let answered = parse_responses(&out);
    assert_eq!(answered[0].json()["error"]["code"], -32602, "the waiter hears the cancellation");
    assert!(
        c.e.answer_tool(t, &ToolOutput::new(&[Content::text("late")])).is_err(),
        "the work was cancelled"
    );
}

/// Over HTTP with a principal, every session of that principal sees the task (as
/// before), and `initialize` offers `tasks.list`.
#[test]
fn over_http_a_principals_task_is_seen_from_all_its_sessions() {
    use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, Principal, Verdict};
    use mcp_tests::wire::{one, open_session, session_post};
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let mut c = mcp_tests::wire::client_of(config(), http, catalog(), Box::new(|_| {}));
    c.e.set_entropy(&[8; 32]);
    c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    let v = "2025-11-25";
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": v, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let r = one(&mut c, &session_post(&init, v, None));
    assert_eq!(r.json()["result"]["capabilities"]["tasks"]["list"], json!({}), "offered");
    let (first, second) = (open_session(&mut c, v), open_session(&mut c, v));
    let ask = |c: &mut mcp_tests::wire::Client, session: &str, rid: u64, method: &str, params: Value| {
        let body = json!({ "jsonrpc": "2.0", "id": rid, "method": method, "params": params });
        one(c, &session_post(&body, v, Some(session))).json()
    };
    let r = ask(&mut c, &first, 2, "tools/call", json!({ "name": "slow", "task": {} }));
    let id = r["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    assert_eq!(ask(&mut c, &second, 3, "tasks/get", json!({ "taskId": id }))["result"]["status"], "working");
    assert_eq!(ask(&mut c, &second, 4, "tasks/list", json!({}))["result"]["tasks"][0]["taskId"], json!(id));
    assert_eq!(
        ask(&mut c, &second, 5, "tasks/cancel", json!({ "taskId": id }))["result"]["status"],
        "cancelled"
    );
}
