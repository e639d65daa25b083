//! Progress of a task: under `2025-11-25` the `progressToken` of the `tools/call` that
//! created a task stays valid for the task's life, so `notify_progress` on the task's
//! ticket sends `notifications/progress` under it (tagged with the task), on stdio or,
//! over HTTP, on a waiting `tasks/result`'s stream, else the creating session's `GET`
//! stream; the message is also the task's status message. A `2026-07-28` task sends
//! none. The output does not depend on how the input is cut.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_engine::error::NotifyError;
use mcp_engine::{Catalog, Config, Content, Engine, Event, Instant, TaskOptions, Ticket, ToolOutput};
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::{drain_with, legacy_open, lines, request};
use serde_json::{Value, json};

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn catalog() -> Catalog {
    mcp_tests::slow_task_catalog()
}

fn config() -> Config {
    let mut c = Config::new("task-progress", "0.1.0");
    c.tasks(true).task_ttl(Duration::from_secs(60));
    c
}

/// A stdio engine whose host keeps every call's ticket (and, with `start`, turns each
/// call into a task itself, as a `2026-07-28` host does).
struct S {
    e: Engine,
    host: Box<dyn FnMut(Event<'_>)>,
    calls: Rc<RefCell<Vec<Ticket>>>,
}

impl S {
    fn open(rev: &str, start: bool) -> Self {
        let calls = Rc::new(RefCell::new(Vec::new()));
        let kept = calls.clone();
        let host: Box<dyn FnMut(Event<'_>)> = Box::new(move |ev| {
            if let Event::CallTool(mut call) = ev {
                let t =
                    if start { call.start_task(&TaskOptions::new()).expect("a task") } else { call.ticket };
                kept.borrow_mut().push(t);
            }
        });
        let mut e = Engine::new(config(), catalog());
        e.set_entropy(&[3; 32]);
        let mut s = Self { e, host, calls };
        if rev != "2026-07-28" {
            let out = s.feed(&legacy_open(rev));
            assert_eq!(out[0]["result"]["protocolVersion"], rev, "{out:?}");
        }
        s
    }

    fn feed(&mut self, input: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut fed = 0;
        while fed < input.len() {
            fed += self.e.handle_input(Instant::ZERO, &input.as_bytes()[fed..]);
            drain_with(&mut self.e, &mut self.host, &mut out);
        }
        lines(&out)
    }

    fn one(&mut self, id: u64, method: &str, params: Value) -> Value {
        let mut v = self.feed(&request(id, method, params));
        assert_eq!(v.len(), 1, "{v:?}");
        v.remove(0)
    }

    /// What the host's command made the engine write.
    fn after<R>(&mut self, f: impl FnOnce(&mut Engine) -> R) -> (R, Vec<Value>) {
        let r = f(&mut self.e);
        let mut out = Vec::new();
        drain_with(&mut self.e, &mut self.host, &mut out);
        (r, lines(&out))
    }

    fn progress(
        &mut self,
        t: Ticket,
        p: f64,
        total: Option<f64>,
        m: Option<&str>,
    ) -> (Result<(), NotifyError>, Vec<Value>) {
        self.after(|e| e.notify_progress(t, p, total, m))
    }

    /// A `2025-11-25` task-augmented call of `slow` with `meta` as its `_meta`: the task
    /// id and the host's ticket.
    fn create(&mut self, id: u64, meta: Value) -> (String, Ticket) {
        let r = self.one(id, "tools/call", json!({ "name": "slow", "task": {}, "_meta": meta }));
        assert_valid(Rev::V2025_11_25, "CreateTaskResult", &r["result"]);
        let task = r["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {r}")).to_owned();
        let t = *self.calls.borrow().last().expect("a call");
        assert!(t.is_task());
        (task, t)
    }

    fn status_message(&mut self, id: u64, task: &str) -> Value {
        let g = self.one(id, "tasks/get", json!({ "taskId": task }));
        g["result"].get("statusMessage").cloned().unwrap_or(Value::Null)
    }
}

/// The progress notification `v` is, for `token` and `task`, valid under `2025-11-25`.
fn is_progress(v: &Value, token: &Value, task: &str) {
    assert_eq!(v["method"], "notifications/progress", "{v}");
    assert_eq!(&v["params"]["progressToken"], token, "{v}");
    assert_eq!(v["params"]["_meta"][RELATED]["taskId"], task, "{v}");
    assert_valid(Rev::V2025_11_25, "ProgressNotification", v);
}

/// On stdio the task's progress comes under the call's token, after the
/// `CreateTaskResult`, tagged with the task; its message is the status message; once the
/// task has ended the token is spent.
#[test]
fn over_stdio_a_2025_task_reports_progress_under_its_calls_token() {
    let mut s = S::open("2025-11-25", false);
    let (id, t) = s.create(1, json!({ "progressToken": "p-1" }));

    let (r, out) = s.progress(t, 1.0, Some(4.0), Some("tables"));
    assert_eq!(r, Ok(()));
    assert_eq!(out.len(), 1, "{out:?}");
    is_progress(&out[0], &json!("p-1"), &id);
    assert_eq!(out[0]["params"]["progress"], 1);
    assert_eq!(out[0]["params"]["total"], 4);
    assert_eq!(out[0]["params"]["message"], "tables");
    assert_eq!(s.status_message(2, &id), "tables", "the message is the status message too");

    let (r, out) = s.progress(t, 2.5, None, None);
    assert_eq!(r, Ok(()));
    assert_eq!(out.len(), 1, "{out:?}");
    is_progress(&out[0], &json!("p-1"), &id);
    assert_eq!(out[0]["params"]["progress"], 2.5);
    assert!(out[0]["params"].get("total").is_none() && out[0]["params"].get("message").is_none());
    assert_eq!(s.status_message(3, &id), "tables", "no message: the status message stays");

    // A tasks/result waits; the progress goes on the one stream before its answer.
    assert!(s.feed(&request(4, "tasks/result", json!({ "taskId": id }))).is_empty());
    let (r, out) = s.progress(t, 3.0, Some(4.0), None);
    assert_eq!(r, Ok(()));
    assert_eq!(out.len(), 1, "{out:?}");
    is_progress(&out[0], &json!("p-1"), &id);

    let (r, out) = s.after(|e| e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])));
    assert_eq!(r, Ok(()));
    assert_eq!(out[0]["id"], 4, "{out:?}");
    // Ended: the token is no longer valid.
    let (r, out) = s.progress(t, 4.0, Some(4.0), None);
    assert_eq!(r, Err(NotifyError::UnknownTicket));
    assert!(out.is_empty(), "{out:?}");
}

/// Progress must increase and be finite, as for a call; a refused report sends nothing
/// (its message still becomes the status message).
#[test]
fn a_task_s_progress_must_increase() {
    let mut s = S::open("2025-11-25", false);
    let (id, t) = s.create(1, json!({ "progressToken": 9 }));
    let (r, out) = s.progress(t, 5.0, None, None);
    assert_eq!(r, Ok(()));
    is_progress(&out[0], &json!(9), &id);
    for (p, why) in [(5.0, "equal"), (4.0, "lower")] {
        let (r, out) = s.progress(t, p, None, Some(why));
        assert_eq!(r, Err(NotifyError::NotIncreasing), "{why}");
        assert!(out.is_empty(), "{why}: {out:?}");
    }
    assert_eq!(s.status_message(2, &id), "lower");
    let (r, out) = s.progress(t, f64::NAN, None, Some("nan"));
    assert_eq!(r, Err(NotifyError::NotFinite));
    assert!(out.is_empty());
    let (r, _) = s.progress(t, 6.0, Some(f64::INFINITY), None);
    assert_eq!(r, Err(NotifyError::NotFinite));
    assert_eq!(s.status_message(3, &id), "lower", "a refused number changes nothing");
    // The last value sent is still the bar.
    let (r, out) = s.progress(t, 5.5, None, None);
    assert_eq!(r, Ok(()));
    assert_eq!(out[0]["params"]["progress"], 5.5);
}

/// A task whose call carried no token: `NoProgressToken` and nothing sent, but the
/// message is the status message as before.
#[test]
fn without_a_token_no_progress_but_the_status_message() {
    let mut s = S::open("2025-11-25", false);
    let (id, t) = s.create(1, json!({}));
    let (r, out) = s.progress(t, 1.0, None, Some("halfway"));
    assert_eq!(r, Err(NotifyError::NoProgressToken));
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(s.status_message(2, &id), "halfway");
    // Each task has its own call's token, or none.
    let (r, _) = s.after(|e| e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])));
    assert_eq!(r, Ok(()));
    let (with, tw) = s.create(3, json!({ "progressToken": "w" }));
    let (r, out) = s.progress(tw, 1.0, None, None);
    assert_eq!(r, Ok(()));
    is_progress(&out[0], &json!("w"), &with);
    let (_, out) = s.after(|e| e.answer_tool(tw, &ToolOutput::new(&[Content::text("done")])));
    assert!(!out.is_empty());
    let (again, ta) = s.create(4, json!({}));
    assert_ne!(again, with);
    let (r, out) = s.progress(ta, 2.0, None, None);
    assert_eq!(r, Err(NotifyError::NoProgressToken));
    assert!(out.is_empty(), "{out:?}");
}

/// A `2026-07-28` task has no progress notifications, token or not: the message is its
/// status message only.
#[test]
fn a_2026_task_sends_no_progress() {
    let mut s = S::open("2026-07-28", true);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } },
        "progressToken": "p"
    });
    let r = s.one(1, "tools/call", json!({ "name": "slow", "_meta": meta }));
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    let id = r["result"]["taskId"].as_str().expect("a task").to_owned();
    let t = *s.calls.borrow().last().expect("a call");
    assert!(t.is_task());
    for p in [1.0, 2.0, 1.0] {
        let (r, out) = s.progress(t, p, None, Some("busy"));
        assert_eq!(r, Ok(()));
        assert!(out.is_empty(), "{out:?}");
    }
    let g = s.one(2, "tasks/get", json!({ "taskId": id, "_meta": meta }));
    assert_eq!(g["result"]["statusMessage"], "busy", "{g}");
}

/// The same task's progress whether the input comes whole or a byte at a time (the host
/// reports from within the call's event, then answers).
#[test]
fn the_output_does_not_depend_on_how_the_input_is_cut() {
    let mut input = legacy_open("2025-11-25");
    input.push_str(&request(
        1,
        "tools/call",
        json!({ "name": "slow", "task": {}, "_meta": { "progressToken": "c" } }),
    ));
    input.push_str(&request(2, "tools/call", json!({ "name": "slow", "task": {} })));
    let run = |chunk: usize| -> (Vec<u8>, Vec<Result<(), NotifyError>>) {
        let mut e = Engine::new(config(), catalog());
        e.set_entropy(&[4; 32]);
        let results = Rc::new(RefCell::new(Vec::new()));
        let kept = results.clone();
        let mut host = move |ev: Event<'_>| {
            if let Event::CallTool(mut call) = ev {
                let mut r = kept.borrow_mut();
                r.push(call.progress(1.0, Some(2.0), Some("half")));
                r.push(call.progress(2.0, Some(2.0), None));
                drop(r);
                call.answer(&ToolOutput::new(&[Content::text("done")])).expect("answered");
            }
        };
        let mut out = Vec::new();
        let bytes = input.as_bytes();
        let mut pos = 0;
        while pos < bytes.len() {
            let end = pos.saturating_add(chunk).min(bytes.len());
            let mut fed = pos;
            while fed < end {
                fed += e.handle_input(Instant::ZERO, &bytes[fed..end]);
                drain_with(&mut e, &mut host, &mut out);
            }
            pos = end;
        }
        let r = results.borrow().clone();
        (out, r)
    };
    let (whole, results) = run(usize::MAX);
    let (bytewise, results_bytewise) = run(1);
    assert_eq!(String::from_utf8_lossy(&whole), String::from_utf8_lossy(&bytewise));
    assert_eq!(results, results_bytewise);
    assert_eq!(
        results,
        [Ok(()), Ok(()), Err(NotifyError::NoProgressToken), Err(NotifyError::NoProgressToken)]
    );
    let out = lines(&whole);
    let methods: Vec<String> = out
        .iter()
        .map(|v| match v["method"].as_str() {
            Some(m) => m.to_owned(),
            None if v["result"]["task"].is_object() => format!("task {}", v["id"]),
            None => format!("answer {}", v["id"]),
        })
        .collect();
    assert_eq!(
        methods,
        [
            "answer 0",
            "task 1",
            "notifications/progress",
            "notifications/progress",
            "notifications/tasks/status",
            "task 2",
            "notifications/tasks/status"
        ],
        "{out:?}"
    );
    let id = out[1]["result"]["task"]["taskId"].as_str().expect("a task");
    is_progress(&out[2], &json!("c"), id);
    assert_eq!(out[2]["params"]["message"], "half");
    is_progress(&out[3], &json!("c"), id);
    assert_eq!(out[3]["params"]["progress"], 2);
}

/// An HTTP engine anyone may use whose host keeps every call's ticket.
fn http_client() -> (mcp_tests::wire::Client, Rc<RefCell<Vec<Ticket>>>) {
    mcp_tests::wire::ticket_client(config(), catalog())
}

/// The JSON messages of an SSE stream's events (the empty priming event left out).
fn notes(raw: &str) -> Vec<Value> {
    mcp_tests::wire::sse_events(raw)
        .into_iter()
        .filter(|(_, d)| !d.is_empty())
        .map(|(_, d)| serde_json::from_str(&d).expect("JSON"))
        .collect()
}

/// Over an HTTP session the task's progress goes on the creating session's standalone
/// `GET` stream (another session's hears none; with no stream open it is not sent),
/// and on the stream of a `tasks/result` waiting for the task while one waits.
#[test]
fn over_an_http_session_progress_reaches_the_sessions_stream_or_a_waiting_result() {
    use mcp_tests::wire::{SSE, get, more, on_new, one, open_session, session_post};
    let (mut c, calls) = http_client();
    let mine = open_session(&mut c, "2025-11-25");
    let other = open_session(&mut c, "2025-11-25");
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "slow", "task": {}, "_meta": { "progressToken": 7 } } });
    let r = one(&mut c, &session_post(&call, "2025-11-25", Some(&mine)));
    let id = r.json()["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    let t = *calls.borrow().last().expect("the host has the task");
    assert!(t.is_task());

    // No stream open: not sent (the report is still taken).
    assert_eq!(c.e.notify_progress(t, 1.0, None, Some("one")), Ok(()));
    let (my_stream, head) = on_new(&mut c, &get(Some(&mine), SSE));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(notes(&head).is_empty(), "the earlier report is gone: {head}");
    let (their_stream, head) = on_new(&mut c, &get(Some(&other), SSE));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    assert_eq!(c.e.notify_progress(t, 2.0, Some(3.0), Some("two")), Ok(()));
    let heard = notes(&more(&mut c, my_stream));
    assert_eq!(heard.len(), 1, "{heard:?}");
    is_progress(&heard[0], &json!(7), &id);
    assert_eq!(heard[0]["params"]["progress"], 2);
    assert_eq!(heard[0]["params"]["message"], "two");

    // A tasks/result waits on its own connection: the progress goes there now.
    let result = json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": { "taskId": id } });
    let (waiting, head) = on_new(&mut c, &session_post(&result, "2025-11-25", Some(&mine)));
    assert!(head.is_empty(), "it waits: {head}");
    assert_eq!(c.e.notify_progress(t, 2.0, None, None), Err(NotifyError::NotIncreasing));
    assert_eq!(c.e.notify_progress(t, 3.0, Some(3.0), None), Ok(()));
    let raw = more(&mut c, waiting);
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    let heard = notes(&raw);
    assert_eq!(heard.len(), 1, "{raw}");
    is_progress(&heard[0], &json!(7), &id);
    assert_eq!(heard[0]["params"]["progress"], 3);
    assert!(notes(&more(&mut c, my_stream)).is_empty(), "one stream only");

    c.e.answer_tool(t, &ToolOutput::new(&[Content::text("built")])).expect("live");
    let heard = notes(&more(&mut c, waiting));
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_eq!(heard[0]["id"], 3);
    assert_eq!(heard[0]["result"]["content"][0]["text"], "built");
    assert_eq!(c.e.notify_progress(t, 4.0, None, None), Err(NotifyError::UnknownTicket));
    let status = notes(&more(&mut c, my_stream));
    assert_eq!(status.len(), 1, "only the status change: {status:?}");
    assert_eq!(status[0]["method"], "notifications/tasks/status");
    assert!(notes(&more(&mut c, their_stream)).is_empty(), "the other session heard nothing");
}
