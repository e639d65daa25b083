//! Tasks (the `io.modelcontextprotocol/tasks` extension, `2026-07-28`) over stdio and
//! HTTP: creation by the host, `tasks/get`, `tasks/update`, `tasks/cancel`, the status
//! machine, TTL expiry on the engine's time, principals, id mirroring, cancellation
//! races, the per-principal bound, the refusals, and chunking invariance.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use mcp_engine::error::{AnswerError, HostError, TaskRefusal};
use mcp_engine::http::{Authorization, HttpConfig, Principal, Verdict};
use mcp_engine::mrtr::{InputRequest, InputRequired};
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, TaskOptions, TaskSupport, Ticket, Tool, ToolOutput,
};
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::wire::{self, Client};
use mcp_tests::{confirm, drain_with, lines, request};
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("slow").description("May run as a task.").task_support(TaskSupport::Optional))
        .tool(Tool::new("only_task").description("Runs only as a task.").task_support(TaskSupport::Required))
        .tool(Tool::new("plain").description("Never a task."))
        .build()
        .expect("a valid catalog")
}

fn config() -> Config {
    let mut c = Config::new("tasks-test", "0.1.0");
    c.tasks(true).max_tasks_per_principal(3).task_ttl(Duration::from_secs(60));
    c.task_poll_interval(Duration::from_millis(250));
    c
}

/// What the host saw of one call event.
#[derive(Debug, Clone)]
struct Seen {
    ticket: Ticket,
    tool: String,
    can_start_task: bool,
    responses: HashMap<String, String>,
}

/// What the test host does with a call event: starts a task when it may (tools `slow`
/// and `only_task`), or keeps the ticket.
#[derive(Default)]
struct Log {
    calls: Vec<Seen>,
    cancelled: Vec<Ticket>,
    refused: Vec<AnswerError>,
    auto_task: bool,
}

type Shared = Rc<RefCell<Log>>;

fn host(log: Shared) -> Box<dyn FnMut(Event<'_>)> {
    Box::new(move |ev| match ev {
        Event::CallTool(mut call) => {
            let mut l = log.borrow_mut();
            let responses =
                call.input_responses.iter().map(|(k, r)| (k.to_owned(), r.raw().to_owned())).collect();
            if l.auto_task
                && call.can_start_task
                && let Err(e) = call.start_task(&TaskOptions::new().message("started"))
            {
                l.refused.push(e);
            }
            let seen = Seen {
                ticket: call.ticket,
                tool: call.tool.name.clone(),
                can_start_task: call.can_start_task,
                responses,
            };
            l.calls.push(seen);
        }
        Event::Cancelled(t) => log.borrow_mut().cancelled.push(t),
        _ => {}
    })
}

/// A client with the tasks extension declared (and elicitation).
fn declaring() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { TASKS: {} } }
    })
}

fn not_declaring() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} }
    })
}

/// One engine on either transport, its host's log, and its time.
enum Side {
    Stdio(Box<Engine>, Box<dyn FnMut(Event<'_>)>, Instant),
    Http(Box<Client>),
}

struct T {
    side: Side,
    log: Shared,
    status: u16,
    /// What commands made the engine write (answers to held calls).
    out: Vec<Value>,
}

impl T {
    fn new(http: bool, config: Config) -> Self {
        let log = Shared::default();
        log.borrow_mut().auto_task = true;
        let side = if http {
            let mut h = HttpConfig::new(mcp_engine::http::AllowedOrigins::Any, Authorization::Host);
            h.loopback(true);
            let mut c = wire::client_of(config, h, catalog(), host(log.clone()));
            c.e.set_entropy(&[3; 32]);
            Side::Http(Box::new(c))
        } else {
            let mut e = Engine::new(config, catalog());
            e.set_entropy(&[3; 32]);
            Side::Stdio(Box::new(e), host(log.clone()), Instant::ZERO)
        };
        Self { side, log, status: 200, out: Vec::new() }
    }

    fn both() -> [Self; 2] {
        [Self::new(false, config()), Self::new(true, config())]
    }

    fn is_http(&self) -> bool {
        matches!(self.side, Side::Http(_))
    }

    /// Sends a request with `meta` (extra headers over HTTP) and returns what came back.
    fn send_with(
        &mut self,
        id: u64,
        method: &str,
        mut params: Value,
        meta: Value,
        extra: &[(&str, &str)],
    ) -> Vec<Value> {
        params["_meta"] = meta;
        match &mut self.side {
            Side::Stdio(e, h, now) => {
                let line = request(id, method, params);
                let mut out = Vec::new();
                let mut fed = 0;
                while fed < line.len() {
                    fed += e.handle_input(*now, &line.as_bytes()[fed..]);
                    drain_with(e, h, &mut out);
                }
                self.status = 200;
                lines(&out)
            }
            Side::Http(c) => {
                let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
                let raw = c.feed(&wire::post(&body, extra), usize::MAX);
                if let Some(r) = wire::parse_responses(&raw).first() {
                    self.status = r.status;
                }
                mcp_tests::peer::http_messages(&raw)
            }
        }
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        let mut v = self.send_with(id, method, params, declaring(), &[]);
        assert_eq!(v.len(), 1, "{v:?}");
        v.remove(0)
    }

    fn call_as(&mut self, id: u64, method: &str, params: Value, meta: Value) -> Value {
        let mut v = self.send_with(id, method, params, meta, &[]);
        assert_eq!(v.len(), 1, "{v:?}");
        v.remove(0)
    }

    /// Runs a command on the engine, then lets the host see what follows; what was
    /// written meanwhile is kept in `self.out`.
    fn with<R>(&mut self, f: impl FnOnce(Eng<'_>) -> R) -> R {
        let r = match &mut self.side {
            Side::Stdio(e, _, _) => f(Eng::Stdio(e)),
            Side::Http(c) => f(Eng::Http(&mut c.e)),
        };
        self.settle();
        r
    }

    fn settle(&mut self) {
        let mut out = Vec::new();
        match &mut self.side {
            Side::Stdio(e, h, _) => {
                drain_with(e, h, &mut out);
                self.out.extend(lines(&out));
            }
            Side::Http(c) => {
                c.drain(&mut out);
                self.out.extend(mcp_tests::peer::http_messages(&out));
            }
        }
    }

    /// Moves the engine's time forward and fires its timers.
    fn advance(&mut self, d: Duration) {
        match &mut self.side {
            Side::Stdio(e, _, now) => {
                *now = *now + d;
                e.handle_timeout(*now);
            }
            Side::Http(c) => {
                c.now = c.now + d;
                c.e.handle_timeout(c.now);
                // The keep-alive connection may have idled out: the client opens another
                // (a task outlives its connection).
                c.e.handle_closed(c.now, c.conn);
                c.conn = c.e.open(c.now, None).expect("a connection");
            }
        }
        self.settle();
    }

    fn last_call(&self) -> Seen {
        self.log.borrow().calls.last().cloned().expect("a call event")
    }

    /// Calls `tool` and returns the task id of its `CreateTaskResult`, and the task ticket.
    fn create(&mut self, id: u64, tool: &str) -> (String, Ticket) {
        let r = self.call(id, "tools/call", json!({ "name": tool, "arguments": {} }));
        assert_eq!(r["result"]["resultType"], "task", "{r}");
        let task = r["result"]["taskId"].as_str().expect("a task id").to_owned();
        (task, self.last_call().ticket)
    }

    fn get(&mut self, id: u64, task: &str) -> Value {
        self.call(id, "tasks/get", json!({ "taskId": task }))
    }
}

/// The engine commands a test uses, on either engine.
enum Eng<'a> {
    Stdio(&'a mut Engine),
    Http(&'a mut mcp_engine::http::HttpEngine),
}

impl Eng<'_> {
    fn answer(&mut self, t: Ticket, text: &str, is_error: bool) -> Result<(), AnswerError> {
        let content = [Content::text(text)];
        let mut out = ToolOutput::new(&content);
        out.is_error = is_error;
        match self {
            Self::Stdio(e) => e.answer_tool(t, &out),
            Self::Http(e) => e.answer_tool(t, &out),
        }
    }
    fn fail(&mut self, t: Ticket, e: HostError<'_>) -> Result<(), AnswerError> {
        match self {
            Self::Stdio(x) => x.answer_error(t, e),
            Self::Http(x) => x.answer_error(t, e),
        }
    }
    fn ask(&mut self, t: Ticket, ir: &InputRequired<'_>) -> Result<(), AnswerError> {
        match self {
            Self::Stdio(e) => e.answer_input_required(t, ir),
            Self::Http(e) => e.answer_input_required(t, ir),
        }
    }
    fn start(&mut self, t: Ticket) -> Result<Ticket, AnswerError> {
        match self {
            Self::Stdio(e) => e.start_task(t, &TaskOptions::new()),
            Self::Http(e) => e.start_task(t, &TaskOptions::new()),
        }
    }
    fn status(&mut self, t: Ticket, m: &str) -> Result<(), mcp_engine::error::NotifyError> {
        match self {
            Self::Stdio(e) => e.task_status(t, Some(m)),
            Self::Http(e) => e.task_status(t, Some(m)),
        }
    }
    fn progress(&mut self, t: Ticket, p: f64, m: Option<&str>) -> Result<(), mcp_engine::error::NotifyError> {
        match self {
            Self::Stdio(e) => e.notify_progress(t, p, Some(1.0), m),
            Self::Http(e) => e.notify_progress(t, p, Some(1.0), m),
        }
    }
    fn tasks(&self) -> usize {
        match self {
            Self::Stdio(e) => e.tasks(),
            Self::Http(e) => e.tasks(),
        }
    }
}

fn error_code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error: {v}"))
}

#[test]
fn discover_declares_the_extension_and_never_the_legacy_capability() {
    for mut t in T::both() {
        let r = t.call(1, "server/discover", json!({}));
        let caps = &r["result"]["capabilities"];
        assert_eq!(caps["extensions"][TASKS], json!({}), "{r}");
        assert!(caps.get("tasks").is_none(), "{r}");
    }
    // Off: neither, and the methods do not exist.
    let mut off = Config::new("no-tasks", "0.1.0");
    off.max_tasks(4);
    let mut t = T::new(false, off);
    let r = t.call(1, "server/discover", json!({}));
    assert!(r["result"]["capabilities"].get("extensions").is_none(), "{r}");
    assert_eq!(error_code(&t.call(2, "tasks/get", json!({ "taskId": "x" }))), -32601);
}

#[test]
fn a_task_lives_from_working_to_completed() {
    for mut t in T::both() {
        let r = t.call(1, "tools/call", json!({ "name": "slow", "arguments": { "n": 1 } }));
        let res = &r["result"];
        assert_eq!(res["resultType"], "task", "{r}");
        assert_eq!(res["status"], "working");
        assert_eq!(res["statusMessage"], "started");
        assert_eq!(res["ttlMs"], 60_000);
        assert_eq!(res["pollIntervalMs"], 250);
        for absent in ["task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"] {
            assert!(res.get(absent).is_none(), "{absent} in {r}");
        }
        let id = res["taskId"].as_str().expect("an id").to_owned();
        assert_eq!(id.len(), 22, "128 bits as base64url");
        assert!(id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert!(res["createdAt"].as_str().is_some_and(|s| s.len() == 24 && s.ends_with('Z')), "{r}");
        let task = t.last_call().ticket;
        assert!(task.is_task());

        let g = t.get(2, &id);
        assert_eq!(g["result"]["resultType"], "complete", "{g}");
        assert_eq!(g["result"]["status"], "working");
        assert_eq!(g["result"]["taskId"], id);
        assert!(g["result"].get("result").is_none());

        t.with(|mut e| e.status(task, "halfway")).expect("a live task");
        assert_eq!(t.get(3, &id)["result"]["statusMessage"], "halfway");

        t.with(|mut e| e.answer(task, "done", false)).expect("the task takes its result");
        let g = t.get(4, &id);
        assert_eq!(g["result"]["status"], "completed", "{g}");
        assert_eq!(g["result"]["result"]["content"][0]["text"], "done");
        assert!(g["result"]["result"]["_meta"].is_null(), "no related-task meta");
        assert_valid(Rev::V2026_07_28, "CallToolResult", &g["result"]["result"]);
        // Terminal: nothing changes it any more.
        assert_eq!(t.with(|mut e| e.answer(task, "again", false)), Err(AnswerError::UnknownTicket));
        assert_eq!(
            t.with(|mut e| e.status(task, "late")),
            Err(mcp_engine::error::NotifyError::UnknownTicket)
        );
        assert_eq!(t.get(5, &id)["result"]["result"]["content"][0]["text"], "done");
    }
}

#[test]
fn tool_errors_complete_and_host_errors_fail() {
    for mut t in T::both() {
        let (a, ta) = t.create(1, "slow");
        t.with(|mut e| e.answer(ta, "it broke", true)).expect("live");
        let g = t.get(2, &a);
        assert_eq!(g["result"]["status"], "completed", "{g}");
        assert_eq!(g["result"]["result"]["isError"], true);

        let (b, tb) = t.create(3, "slow");
        t.with(|mut e| e.fail(tb, HostError::Internal("the backend is down"))).expect("live");
        let g = t.get(4, &b);
        assert_eq!(g["result"]["status"], "failed", "{g}");
        assert_eq!(g["result"]["error"]["code"], -32603);
        assert_eq!(g["result"]["error"]["message"], "Internal error: the backend is down");
        assert!(g["result"].get("result").is_none());
    }
}

#[test]
fn the_extension_must_be_declared_on_each_request() {
    for mut t in T::both() {
        // tasks/* without it: -32021 before the id is even looked at.
        for (i, method) in ["tasks/get", "tasks/update", "tasks/cancel"].into_iter().enumerate() {
            let r = t.call_as(
                i as u64,
                method,
                json!({ "taskId": "gate-test", "inputResponses": {} }),
                not_declaring(),
            );
            assert_eq!(error_code(&r), -32021, "{method}: {r}");
            assert_eq!(r["error"]["data"]["requiredCapabilities"]["extensions"][TASKS], json!({}));
            if t.is_http() {
                assert_eq!(t.status, 400);
            }
        }
        // A task-only tool: -32021; an optional one runs as a plain call.
        let r = t.call_as(10, "tools/call", json!({ "name": "only_task" }), not_declaring());
        assert_eq!(error_code(&r), -32021, "{r}");
        assert_eq!(r["error"]["data"]["requiredCapabilities"]["extensions"][TASKS], json!({}));
        let before = t.log.borrow().calls.len();
        let out = t.send_with(11, "tools/call", json!({ "name": "slow" }), not_declaring(), &[]);
        assert!(out.is_empty(), "the host holds it: {out:?}");
        let seen = t.last_call();
        assert_eq!(t.log.borrow().calls.len(), before + 1);
        assert!(!seen.can_start_task);
        assert_eq!(
            t.with(|mut e| e.start(seen.ticket)),
            Err(AnswerError::TaskRefused(TaskRefusal::NotDeclared))
        );
        t.with(|mut e| e.answer(seen.ticket, "plain result", false)).expect("answered as a call");
        // A forbidden tool never offers a task, declared or not, and the legacy
        // `params.task` is ignored.
        t.log.borrow_mut().auto_task = false;
        let out = t.send_with(
            12,
            "tools/call",
            json!({ "name": "plain", "task": { "ttl": 100 } }),
            declaring(),
            &[],
        );
        assert!(out.is_empty());
        let seen = t.last_call();
        assert!(!seen.can_start_task);
        assert_eq!(
            t.with(|mut e| e.start(seen.ticket)),
            Err(AnswerError::TaskRefused(TaskRefusal::Forbidden))
        );
    }
}

#[test]
fn removed_and_unknown_methods_and_ids() {
    for mut t in T::both() {
        for method in ["tasks/result", "tasks/list"] {
            let r = t.call(1, method, json!({ "taskId": "tasks-conformance-isolation-probe" }));
            assert_eq!(error_code(&r), -32601, "{method}: {r}");
            if t.is_http() {
                assert_eq!(t.status, 404);
            }
        }
        for id in ["tasks-conformance-nonexistent-12345", "AAAAAAAAAAAAAAAAAAAAAA", ""] {
            for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
                let r = t.call(2, method, json!({ "taskId": id, "inputResponses": {} }));
                assert_eq!(error_code(&r), -32602, "{method} {id}: {r}");
            }
        }
        let r = t.call(3, "tasks/get", json!({ "taskId": 7 }));
        assert_eq!(error_code(&r), -32602);
    }
}

#[test]
fn mcp_name_must_mirror_the_task_id() {
    let mut t = T::new(true, config());
    let (id, _) = t.create(1, "slow");
    let body = |rid: u64| json!({ "jsonrpc": "2.0", "id": rid, "method": "tasks/get", "params": { "taskId": id, "_meta": declaring() } });
    let Side::Http(c) = &mut t.side else { unreachable!() };
    let ok = wire::one(c, &wire::post(&body(2), &[]));
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["result"]["taskId"], id.as_str());
    let bad = wire::one(c, &wire::post(&body(3), &[("Mcp-Name", "someone-else")]));
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"]["code"], -32020);
    let missing = wire::one(c, &wire::post(&body(4), &[("Mcp-Name", "")]));
    assert_eq!(missing.json()["error"]["code"], -32020);
    // The method header is checked as on every request.
    let wrong = wire::one(c, &wire::post(&body(5), &[("Mcp-Method", "tools/call")]));
    assert_eq!(wrong.json()["error"]["code"], -32020);
}

/// A task has no progress notifications: the message of a handler's progress report
/// becomes the task's `statusMessage` (cut to 1,024 bytes on a char boundary), a report
/// without one leaves it, a report that is not finite is refused, and once the task has
/// ended its ticket takes none.
#[test]
fn a_progress_message_on_a_task_becomes_its_status_message() {
    for mut t in T::both() {
        let (id, task) = t.create(1, "slow");
        t.out.clear();
        t.with(|mut e| e.progress(task, 0.5, Some("half way"))).expect("a live task");
        assert_eq!(t.get(2, &id)["result"]["statusMessage"], "half way");
        t.with(|mut e| e.progress(task, 0.6, None)).expect("a live task");
        assert_eq!(t.get(3, &id)["result"]["statusMessage"], "half way", "kept without a message");
        let refused = t.with(|mut e| e.progress(task, f64::NAN, Some("nan")));
        assert_eq!(refused, Err(mcp_engine::error::NotifyError::NotFinite));
        let long = "é".repeat(600); // 1,200 bytes
        t.with(|mut e| e.progress(task, 0.7, Some(&long))).expect("a live task");
        let g = t.get(4, &id);
        let kept = g["result"]["statusMessage"].as_str().expect("a message");
        assert_eq!(kept, "é".repeat(512), "cut at 1,024 bytes, on a char boundary");
        assert!(t.out.is_empty(), "no notifications/progress: {:?}", t.out);
        t.with(|mut e| e.answer(task, "done", false)).expect("the task takes its result");
        let late = t.with(|mut e| e.progress(task, 0.9, Some("late")));
        assert_eq!(late, Err(mcp_engine::error::NotifyError::UnknownTicket));
        assert_eq!(t.get(5, &id)["result"]["statusMessage"], kept.to_owned().as_str());
    }
}

#[test]
fn another_principals_task_is_not_found() {
    let mut t = T::new(true, config());
    let alice = Verdict::AllowAs(Principal::of(b"alice"));
    let bob = Verdict::AllowAs(Principal::of(b"bob"));
    let set = |t: &mut T, v: Verdict| {
        let Side::Http(c) = &mut t.side else { unreachable!() };
        c.verdict = v;
    };
    set(&mut t, alice);
    let (id, _) = t.create(1, "slow");
    assert_eq!(t.get(2, &id)["result"]["status"], "working");
    set(&mut t, bob);
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let r = t.call(3, method, json!({ "taskId": id, "inputResponses": {} }));
        assert_eq!(error_code(&r), -32602, "{method}: {r}");
        assert_eq!(r["error"]["message"], "Invalid params: Task not found (unknown, or expired)");
    }
    // Bob's cancel did nothing.
    set(&mut t, alice);
    assert_eq!(t.get(4, &id)["result"]["status"], "working");
    // Anonymous callers are one principal of their own.
    set(&mut t, Verdict::Allow);
    assert_eq!(error_code(&t.get(5, &id)), -32602);
}

fn second() -> InputRequest<'static> {
    static SCHEMA: std::sync::OnceLock<Box<serde_json::value::RawValue>> = std::sync::OnceLock::new();
    let schema =
        SCHEMA.get_or_init(|| serde_json::value::to_raw_value(&json!({ "type": "object" })).expect("raw"));
    InputRequest::elicit("second", "And this?", schema)
}

#[test]
fn input_is_asked_through_the_task_and_answered_with_tasks_update() {
    for mut t in T::both() {
        let (id, task) = t.create(1, "slow");
        let requests = [confirm(), second()];
        t.with(|mut e| e.ask(task, &InputRequired::new(&requests).state(b"round-1"))).expect("asked");
        let g = t.get(2, &id);
        assert_eq!(g["result"]["status"], "input_required", "{g}");
        let asked = &g["result"]["inputRequests"];
        assert_eq!(asked["confirm"]["method"], "elicitation/create");
        assert_eq!(asked["second"]["params"]["message"], "And this?");
        assert_eq!(
            t.get(3, &id),
            {
                let mut g2 = g.clone();
                g2["id"] = json!(3);
                g2
            },
            "polls repeat the snapshot"
        );

        // An unknown key is acked and ignored, unread; an outstanding one must fit.
        let r = t.call(
            4,
            "tasks/update",
            json!({ "taskId": id, "inputResponses": { "unknown-key": { "ignored": true } } }),
        );
        assert_eq!(r["result"], json!({ "resultType": "complete", "_meta": r["result"]["_meta"] }), "{r}");
        assert!(r["result"].get("taskId").is_none());
        let r = t.call(
            5,
            "tasks/update",
            json!({ "taskId": id, "inputResponses": { "confirm": { "nope": 1 } } }),
        );
        assert_eq!(error_code(&r), -32602, "{r}");
        let r = t.call(6, "tasks/update", json!({ "taskId": id }));
        assert_eq!(error_code(&r), -32602, "inputResponses is required: {r}");

        // A partial answer: only the other key is outstanding, at once.
        let calls = t.log.borrow().calls.len();
        let yes = json!({ "action": "accept", "content": { "confirm": true } });
        let r = t.call(7, "tasks/update", json!({ "taskId": id, "inputResponses": { "confirm": yes } }));
        assert_eq!(r["result"]["resultType"], "complete");
        let g = t.get(8, &id);
        assert_eq!(g["result"]["status"], "input_required");
        assert!(g["result"]["inputRequests"].get("confirm").is_none(), "{g}");
        assert!(g["result"]["inputRequests"].get("second").is_some(), "{g}");
        assert_eq!(t.log.borrow().calls.len(), calls, "the host waits for every answer");

        // The rest: the call comes back to the host with both answers, as the task.
        let ok = json!({ "action": "accept", "content": {} });
        t.call(
            9,
            "tasks/update",
            json!({ "taskId": id, "inputResponses": { "second": ok, "confirm": { "late": 1 } } }),
        );
        let back = t.last_call();
        assert_eq!(t.log.borrow().calls.len(), calls + 1);
        assert_eq!(back.ticket, task);
        assert_eq!(back.tool, "slow");
        assert!(!back.can_start_task);
        let confirm_answer: Value = serde_json::from_str(&back.responses["confirm"]).expect("json");
        assert_eq!(confirm_answer["content"]["confirm"], true);
        assert!(back.responses.contains_key("second"));
        assert_eq!(t.get(10, &id)["result"]["status"], "working");
        // Keys are unique over the task's life.
        let again = [confirm()];
        assert!(matches!(
            t.with(|mut e| e.ask(task, &InputRequired::new(&again))),
            Err(AnswerError::InvalidInputRequest(_))
        ));
        t.with(|mut e| e.answer(task, "confirmed", false)).expect("live");
        assert_eq!(t.get(11, &id)["result"]["status"], "completed");
    }
}

#[test]
fn input_the_client_cannot_give_fails_the_task() {
    for mut t in T::both() {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } }
        });
        let r = t.call_as(1, "tools/call", json!({ "name": "slow" }), meta);
        let id = r["result"]["taskId"].as_str().expect("a task").to_owned();
        let task = t.last_call().ticket;
        let requests = [confirm()];
        t.with(|mut e| e.ask(task, &InputRequired::new(&requests))).expect("answered");
        let g = t.get(2, &id);
        assert_eq!(g["result"]["status"], "failed", "{g}");
        assert_eq!(g["result"]["error"]["code"], -32021);
        assert_eq!(g["result"]["error"]["data"]["requiredCapabilities"], json!({ "elicitation": {} }));
    }
}

#[test]
fn cancel_is_idempotent_and_tells_the_host() {
    for mut t in T::both() {
        let (id, task) = t.create(1, "slow");
        let r = t.call(2, "tasks/cancel", json!({ "taskId": id }));
        assert_eq!(r["result"]["resultType"], "complete", "{r}");
        for absent in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(r["result"].get(absent).is_none(), "{absent}: {r}");
        }
        assert_eq!(t.log.borrow().cancelled, vec![task]);
        assert_eq!(t.get(3, &id)["result"]["status"], "cancelled");
        // Again: the same ack, the host is not told twice.
        assert_eq!(t.call(4, "tasks/cancel", json!({ "taskId": id }))["result"]["resultType"], "complete");
        assert_eq!(t.log.borrow().cancelled.len(), 1);
        // Cancel, then the work finishes: the answer is dropped, the task stays cancelled.
        assert_eq!(t.with(|mut e| e.answer(task, "too late", false)), Err(AnswerError::UnknownTicket));
        assert_eq!(t.get(5, &id)["result"]["status"], "cancelled");

        // The work finishes, then the cancel: acked, and the task stays completed.
        let (id2, task2) = t.create(6, "slow");
        t.with(|mut e| e.answer(task2, "finished first", false)).expect("live");
        assert_eq!(t.call(7, "tasks/cancel", json!({ "taskId": id2 }))["result"]["resultType"], "complete");
        let g = t.get(8, &id2);
        assert_eq!(g["result"]["status"], "completed");
        assert_eq!(g["result"]["result"]["content"][0]["text"], "finished first");
        assert_eq!(t.log.borrow().cancelled.len(), 1, "nothing to tell the host");

        // A task parked for input is cancelled too.
        let (id3, task3) = t.create(9, "slow");
        let requests = [confirm()];
        t.with(|mut e| e.ask(task3, &InputRequired::new(&requests))).expect("asked");
        t.call(10, "tasks/cancel", json!({ "taskId": id3 }));
        assert_eq!(t.get(11, &id3)["result"]["status"], "cancelled");
        assert!(t.get(12, &id3)["result"].get("inputRequests").is_none());
        assert_eq!(t.log.borrow().cancelled.last(), Some(&task3));
    }
}

#[test]
fn a_task_lives_until_its_ttl_on_the_engines_time() {
    for mut t in T::both() {
        let (done, task) = t.create(1, "slow");
        t.with(|mut e| e.answer(task, "kept", false)).expect("live");
        let (running, held) = t.create(2, "slow");
        t.advance(Duration::from_millis(59_999));
        assert_eq!(t.get(3, &done)["result"]["status"], "completed", "kept until its TTL");
        assert!(t.log.borrow().cancelled.is_empty());
        t.advance(Duration::from_millis(1));
        for id in [&done, &running] {
            assert_eq!(error_code(&t.get(4, id)), -32602, "gone at its TTL");
        }
        // The host still working on one hears that it is cancelled.
        assert_eq!(t.log.borrow().cancelled, vec![held]);
        assert_eq!(t.with(|mut e| e.answer(held, "late", false)), Err(AnswerError::UnknownTicket));
        assert_eq!(t.with(|e| e.tasks()), 0);
    }
}

#[test]
fn a_host_starts_a_task_after_the_event_with_a_shorter_ttl_never_a_longer_one() {
    for mut t in T::both() {
        t.log.borrow_mut().auto_task = false;
        let mut ids = Vec::new();
        for (i, ttl) in [(1, Duration::from_secs(2)), (2, Duration::from_secs(3600))] {
            let out = t.send_with(
                i,
                "tools/call",
                json!({ "name": "slow", "arguments": { "i": i } }),
                declaring(),
                &[],
            );
            assert!(out.is_empty(), "held: {out:?}");
            let ticket = t.last_call().ticket;
            let opts = TaskOptions::new().ttl(ttl).poll_interval(Duration::from_millis(5));
            let task = t.with(|e| match e {
                Eng::Stdio(e) => e.start_task(ticket, &opts),
                Eng::Http(e) => e.start_task(ticket, &opts),
            });
            assert!(task.expect("a task").is_task());
            let r = t.out.pop().expect("the handle");
            assert_eq!(r["id"], i);
            assert_eq!(r["result"]["resultType"], "task", "{r}");
            assert_eq!(r["result"]["pollIntervalMs"], 5);
            ids.push((r["result"]["taskId"].as_str().expect("id").to_owned(), r["result"]["ttlMs"].clone()));
            // The call's ticket is spent.
            assert_eq!(t.with(|mut e| e.answer(ticket, "x", false)), Err(AnswerError::UnknownTicket));
        }
        assert_eq!(ids[0].1, 2000);
        assert_eq!(ids[1].1, 60_000, "capped at Config::task_ttl");
        t.advance(Duration::from_secs(2));
        assert_eq!(error_code(&t.get(9, &ids[0].0)), -32602);
        assert_eq!(t.get(10, &ids[1].0)["result"]["status"], "working");
    }
}

#[test]
fn the_per_principal_bound_refuses_a_task_and_keeps_the_call() {
    for mut t in T::both() {
        for i in 0..3 {
            t.create(i, "slow");
        }
        let r = t.send_with(9, "tools/call", json!({ "name": "slow" }), declaring(), &[]);
        assert!(r.is_empty(), "the call is still the host's: {r:?}");
        assert_eq!(t.log.borrow().refused, vec![AnswerError::TaskRefused(TaskRefusal::PrincipalFull)]);
        let seen = t.last_call();
        assert!(!seen.ticket.is_task());
        t.with(|mut e| e.answer(seen.ticket, "answered as a call", false)).expect("the ticket stays open");
        assert_eq!(t.with(|e| e.tasks()), 3);
    }
}

/// A task's life in one input (created, read, updated, cancelled, read): the output is
/// the same however the bytes are split.
#[test]
fn a_tasks_session_is_the_same_whole_byte_by_byte_and_in_odd_chunks() {
    // The id is known in advance: the same entropy draws the same first token.
    let mut probe = T::new(false, config());
    let (id, _) = probe.create(1, "slow");
    let with = |rid: u64, method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = declaring();
        request(rid, method, params)
    };
    let input = [
        with(1, "tools/call", json!({ "name": "slow" })),
        with(2, "tasks/get", json!({ "taskId": id })),
        with(3, "tasks/update", json!({ "taskId": id, "inputResponses": { "k": {} } })),
        with(5, "tasks/cancel", json!({ "taskId": id })),
        with(6, "tasks/get", json!({ "taskId": id })),
        with(7, "tasks/get", json!({ "taskId": "AAAAAAAAAAAAAAAAAAAAAA" })),
    ]
    .concat();
    let run = |chunks: &[usize]| {
        let log = Shared::default();
        log.borrow_mut().auto_task = true;
        let mut h = host(log.clone());
        let mut e = Engine::new(config(), catalog());
        e.set_entropy(&[3; 32]);
        let mut out = Vec::new();
        let (mut pos, mut k) = (0, 0);
        while pos < input.len() {
            let end = (pos + chunks[k % chunks.len()]).min(input.len());
            k += 1;
            while pos < end {
                pos += e.handle_input(Instant::ZERO, &input.as_bytes()[pos..end]);
                drain_with(&mut e, &mut h, &mut out);
            }
        }
        lines(&out)
    };
    let whole = run(&[usize::MAX]);
    assert_eq!(whole.len(), 6, "{whole:?}");
    assert_eq!(whole[0]["result"]["taskId"], id.as_str());
    assert_eq!(whole[1]["result"]["status"], "working");
    assert_eq!(whole[4]["result"]["status"], "cancelled");
    assert_eq!(error_code(&whole[5]), -32602);
    assert_eq!(run(&[1]), whole, "byte by byte");
    assert_eq!(run(&[7, 1, 13, 64]), whole, "odd chunks");
}

/// A listen stream asking for task notifications needs the extension on its request.
#[test]
fn listening_for_task_ids_needs_the_extension() {
    let mut c = config();
    c.list_changed(true);
    let mut e = Engine::new(c, catalog());
    let listen = |meta: Value| {
        request(
            1,
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": ["x"], "toolsListChanged": true }, "_meta": meta }),
        )
    };
    let mut out = Vec::new();
    let mut h = host(Shared::default());
    e.handle_input(Instant::ZERO, listen(not_declaring()).as_bytes());
    drain_with(&mut e, &mut h, &mut out);
    let v = lines(&out);
    assert_eq!(error_code(&v[0]), -32021, "{v:?}");
    assert_eq!(v[0]["error"]["data"]["requiredCapabilities"]["extensions"][TASKS], json!({}));
    out.clear();
    e.handle_input(Instant::ZERO, listen(declaring()).as_bytes());
    drain_with(&mut e, &mut h, &mut out);
    let v = lines(&out);
    assert_eq!(v[0]["method"], "notifications/subscriptions/acknowledged", "{v:?}");
    assert!(v[0]["params"]["notifications"].get("taskIds").is_none(), "no task is agreed to: {v:?}");
}
