//! The task store, sans-IO (`HttpConfig::task_store`): a task's handle waits until the
//! host stored its record, a store that fails or stalls makes the request `503` and
//! undoes the task, a task created on one engine is read, answered and cancelled on
//! another sharing the store (the owner hears of it through `task_changed_elsewhere`),
//! a node that restarted reads its running tasks as `failed` and its finished ones with
//! their result, a lapsed lease reads as `failed`, expiry is told, garbage ids never
//! reach the store, and the bytes are the same whole or split; a `2025-11-25` task made
//! without a principal is its session's on every node, and a flood of unknown ids costs a
//! bounded number of store lookups.
//!
//! Two `HttpEngine`s share a store kept in the test (records by id, with revisions, and
//! session records for the nodes that keep sessions there); time is passed in. The host
//! authorizes every request as one principal unless a test says otherwise.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use mcp_engine::http::store::{Loaded, StoreEvent, TaskRow};
use mcp_engine::http::{
    AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent, Principal, Verdict,
};
use mcp_engine::mrtr::InputRequired;
use mcp_engine::{Catalog, Config, Content, Event, Instant, TaskOptions, Ticket, ToolOutput, UnixTime};
use mcp_tests::wire::drain_engine;
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";
/// The wall clock both nodes start on (2026-01-01).
const WALL: u64 = 1_767_225_600_000_000;

fn catalog() -> Catalog {
    mcp_tests::slow_task_catalog()
}

fn config() -> Config {
    let mut c = Config::new("task-store-test", "0.1.0");
    c.tasks(true).task_ttl(Duration::from_secs(600));
    c
}

fn http(node: &str) -> HttpConfig {
    let mut h = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    h.task_store(true).node_name(node).task_lease(Duration::from_secs(30));
    h
}

/// The store both nodes share.
#[derive(Default)]
struct Store {
    /// Records by task id, with their revision.
    records: HashMap<String, (u64, Vec<u8>)>,
    /// What it was asked: `save ID REV`, `load ID`, `expired ID`.
    log: Vec<String>,
    /// Saves that changed a record, for the other nodes to hear of (node, id).
    notices: Vec<(String, String)>,
    fail: bool,
    hold: bool,
    /// Saves left unanswered while `hold` was on.
    held: Vec<(String, u64)>,
    /// Each record's principal digest and `createdAt` (microseconds), as its saves said.
    order: HashMap<String, (Option<[u8; 32]>, u64)>,
    /// Session records by session id (`HttpConfig::session_store`).
    sessions: HashMap<String, Vec<u8>>,
}

impl Store {
    /// A page of `ListTasks`: up to `limit` records of `principal` after `after`, by
    /// `createdAt` then id.
    fn list(
        &self,
        principal: Option<[u8; 32]>,
        after: Option<(u64, String)>,
        limit: usize,
    ) -> Vec<(String, u64, Vec<u8>)> {
        let mut rows: Vec<_> = self
            .order
            .iter()
            .filter(|(id, (p, at))| {
                *p == principal && after.as_ref().is_none_or(|(t, i)| (*at, id.as_str()) > (*t, i.as_str()))
            })
            .filter_map(|(id, (_, at))| Some((id.clone(), *at, self.records.get(id)?.1.clone())))
            .collect();
        rows.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        rows.truncate(limit);
        rows
    }
}

type Shared<T> = Rc<RefCell<T>>;

/// What a host saw.
#[derive(Default)]
struct Host {
    /// Every call event: its ticket and the input responses it carried.
    calls: Vec<(Ticket, Vec<String>)>,
    cancelled: Vec<Ticket>,
}

struct Node {
    name: String,
    e: HttpEngine,
    conn: ConnId,
    now: Instant,
    store: Shared<Store>,
    host: Shared<Host>,
    /// What the host's authorization says of every request (`Authorization::Host`).
    verdict: Verdict,
}

/// The principal the host names for every request by default.
fn client() -> Verdict {
    Verdict::AllowAs(Principal::of(b"client"))
}

impl Node {
    fn new(name: &str, entropy: u8, store: &Shared<Store>) -> Self {
        Self::with(name, entropy, store, http(name))
    }

    fn with(name: &str, entropy: u8, store: &Shared<Store>, http: HttpConfig) -> Self {
        Self::configured(name, entropy, store, config(), http)
    }

    fn configured(name: &str, entropy: u8, store: &Shared<Store>, config: Config, http: HttpConfig) -> Self {
        let mut e = HttpEngine::new(config, http, catalog());
        e.set_entropy(&[entropy; 32]);
        e.set_wall_clock(Instant::ZERO, UnixTime::from_micros(WALL));
        let conn = e.open(Instant::ZERO, None).expect("a connection");
        Self {
            name: name.into(),
            e,
            conn,
            now: Instant::ZERO,
            store: store.clone(),
            host: Shared::default(),
            verdict: client(),
        }
    }

    /// Feeds `raw` in chunks of `chunk`, answering every event; returns the output.
    fn feed(&mut self, raw: &[u8], chunk: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut rest = raw;
        while !rest.is_empty() {
            let take = rest.len().min(chunk);
            let n = self.e.handle_input(self.now, self.conn, &rest[..take]);
            rest = &rest[n..];
            self.pump(&mut out);
            assert!(n > 0 || rest.is_empty() || !self.e.pending_output(self.conn).is_empty() || self.stuck());
        }
        self.pump(&mut out);
        out
    }

    fn stuck(&self) -> bool {
        self.store.borrow().hold
    }

    /// Answers every event and takes every output byte.
    fn pump(&mut self, out: &mut Vec<u8>) {
        let Self { name, e, conn, now, store, host, verdict } = self;
        drain_engine(e, *conn, out, |e| answer_event(e, *now, name, store, host, *verdict));
    }

    /// Answers events until `poll_event` says there are none, once, as an adapter that
    /// drains only when woken does; takes no output.
    fn answer_events(&mut self) {
        while answer_event(&mut self.e, self.now, &self.name, &self.store, &self.host, self.verdict) {}
    }

    /// Sends one request; returns its JSON answer (or `Value::Null`) and status.
    fn call(&mut self, id: u64, method: &str, params: Value) -> (u16, Value) {
        let out = self.feed(&post(id, method, params), usize::MAX);
        parse(&out)
    }

    fn get(&mut self, id: u64, task: &str) -> Value {
        let (status, v) = self.call(id, "tasks/get", json!({ "taskId": task }));
        assert_eq!(status, 200, "{v}");
        v
    }

    /// Calls `slow` and returns the task id and the host's task ticket.
    fn create(&mut self, id: u64) -> (String, Ticket) {
        let (status, r) = self.call(id, "tools/call", json!({ "name": "slow", "arguments": {} }));
        assert_eq!(status, 200, "{r}");
        assert_eq!(r["result"]["resultType"], "task", "{r}");
        let task = r["result"]["taskId"].as_str().expect("a task id").to_owned();
        (task, self.host.borrow().calls.last().expect("a call").0)
    }

    /// Runs a host command, then answers what follows.
    fn host_does<R>(&mut self, f: impl FnOnce(&mut HttpEngine) -> R) -> R {
        let r = f(&mut self.e);
        self.pump(&mut Vec::new());
        r
    }

    /// Moves time (and the wall clock with it) and fires the timers.
    fn advance(&mut self, d: Duration) {
        self.now = self.now + d;
        self.e.handle_timeout(self.now);
        self.e.handle_closed(self.now, self.conn);
        self.conn = self.e.open(self.now, None).expect("a connection");
        self.pump(&mut Vec::new());
    }

    /// Hears the notices of every other node's saves.
    fn hear(&mut self) -> usize {
        let notices: Vec<_> = self.store.borrow_mut().notices.drain(..).collect();
        let mut runs = 0;
        for (from, id) in notices {
            if from != self.name && self.e.task_changed_elsewhere(self.now, id.as_bytes()) {
                runs += 1;
            }
        }
        self.pump(&mut Vec::new());
        runs
    }

    fn log(&self) -> Vec<String> {
        self.store.borrow().log.clone()
    }

    /// Opens a `2025-11-25` session (`initialize`, `notifications/initialized`); returns
    /// its id.
    fn legacy_session(&mut self) -> String {
        let v = "2025-11-25";
        let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": v, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
        let raw = self.feed(&mcp_tests::wire::session_post(&init, v, None), usize::MAX);
        let session =
            mcp_tests::wire::parse_responses(&raw)[0].header("mcp-session-id").expect("a session").to_owned();
        let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        self.feed(&mcp_tests::wire::session_post(&done, v, Some(&session)), usize::MAX);
        session
    }
}

/// Takes one event from `e` (the request path's first, then the store's) and answers it as node `name` does; returns whether there was
/// one.
fn answer_event(
    e: &mut HttpEngine,
    now: Instant,
    name: &str,
    store: &Shared<Store>,
    host: &Shared<Host>,
    verdict: Verdict,
) -> bool {
    if let Some(ev) = e.poll_event() {
        match ev {
            HttpEvent::Authorize(a) => {
                let conn = a.conn;
                e.authorize(now, conn, verdict);
            }
            HttpEvent::Mcp(Event::CallTool(mut call)) => {
                let responses = call.input_responses.iter().map(|(k, _)| k.to_owned()).collect();
                let ticket = if call.can_start_task {
                    call.start_task(&TaskOptions::new()).expect("a task")
                } else {
                    call.ticket
                };
                host.borrow_mut().calls.push((ticket, responses));
            }
            HttpEvent::Mcp(Event::Cancelled(t)) => host.borrow_mut().cancelled.push(t),
            _ => {}
        }
        return true;
    }
    let Some(ev) = e.poll_store() else {
        return false;
    };
    match ev {
        StoreEvent::LoadSession(l) => {
            let (conn, id) = (l.conn, l.id.to_owned());
            let found = store.borrow().sessions.get(&id).cloned();
            match found {
                Some(r) => e.session_loaded(now, conn, Loaded::Record(&r)),
                None => e.session_loaded(now, conn, Loaded::Missing),
            }
        }
        StoreEvent::SaveSession(s) => {
            let (conn, id, record) = (s.conn, s.id.to_owned(), s.record.map(<[u8]>::to_vec));
            match record {
                Some(r) => store.borrow_mut().sessions.insert(id, r),
                None => store.borrow_mut().sessions.remove(&id),
            };
            e.session_saved(now, conn, true);
        }
        StoreEvent::SaveTask(s) => {
            let (id, rev, record) = (s.id.to_owned(), s.revision, s.record.to_vec());
            let mut st = store.borrow_mut();
            st.log.push(format!("save {id} {rev}"));
            st.order.insert(id.clone(), (s.principal.copied(), s.created.as_micros()));
            if st.hold {
                st.held.push((id, rev));
                return true;
            }
            let ok = !st.fail && st.records.get(&id).is_none_or(|(r, _)| *r < rev);
            if ok {
                st.records.insert(id.clone(), (rev, record));
                st.notices.push((name.to_owned(), id.clone()));
            }
            drop(st);
            e.task_saved(now, &id, rev, ok);
        }
        StoreEvent::LoadTask(l) => {
            let id = l.id.to_owned();
            let st = store.borrow();
            let found = st.records.get(&id).map(|(_, r)| r.clone());
            let fail = st.fail;
            drop(st);
            store.borrow_mut().log.push(format!("load {id}"));
            let answer = match (&found, fail) {
                (_, true) => Loaded::Unavailable,
                (Some(r), _) => Loaded::Record(r),
                (None, _) => Loaded::Missing,
            };
            e.task_loaded(now, &id, answer);
        }
        StoreEvent::TaskExpired(x) => {
            let id = x.id.to_owned();
            let mut st = store.borrow_mut();
            st.log.push(format!("expired {id}"));
            st.records.remove(&id);
        }
        StoreEvent::ListTasks(q) => {
            let after = q.after.map(|a| (a.created.as_micros(), a.id.to_owned()));
            let (query, principal, limit) = (q.query, q.principal.copied(), q.limit);
            let mut st = store.borrow_mut();
            st.log.push(format!("list {limit}"));
            let (fail, rows) = (st.fail, st.list(principal, after, limit));
            drop(st);
            let rows: Vec<TaskRow<'_>> =
                rows.iter().map(|(id, at, r)| TaskRow::new(id, UnixTime::from_micros(*at), r)).collect();
            e.tasks_listed(now, query, (!fail).then_some(&rows[..]));
        }
        _ => {}
    }
    true
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { TASKS: {} } }
    })
}

fn post(id: u64, method: &str, mut params: Value) -> Vec<u8> {
    params["_meta"] = meta();
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let name = params["name"].as_str().or(params["taskId"].as_str()).unwrap_or_default().to_owned();
    let body = body.to_string();
    let mut s = String::from("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n");
    s.push_str("Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n");
    s.push_str(&format!("Mcp-Method: {method}\r\n"));
    if !name.is_empty() {
        s.push_str(&format!("Mcp-Name: {name}\r\n"));
    }
    s.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.into_bytes()
}

/// The status and JSON body of the one response in `out` (`Null` for none).
fn parse(out: &[u8]) -> (u16, Value) {
    let r = mcp_tests::wire::parse_responses(out);
    assert!(r.len() <= 1, "{r:?}");
    r.first().map_or((0, Value::Null), |r| {
        (
            r.status,
            if r.body.is_empty() { Value::Null } else { serde_json::from_slice(&r.body).expect("json") },
        )
    })
}

/// Two nodes sharing a store, and a task node A runs that asks for input: the store, the
/// nodes, the task id and A's task ticket.
fn asking() -> (Shared<Store>, Node, Node, String, Ticket) {
    let store = Shared::default();
    let mut a = Node::new("a", 1, &store);
    let b = Node::new("b", 2, &store);
    let (id, task) = a.create(1);
    let requests = [mcp_tests::confirm()];
    a.host_does(|e| e.answer_input_required(task, &InputRequired::new(&requests))).expect("asked");
    (store, a, b, id, task)
}

fn answer(e: &mut HttpEngine, t: Ticket, text: &str) {
    let content = [Content::text(text)];
    e.answer_tool(t, &ToolOutput::new(&content)).expect("a live task");
}

#[test]
fn the_handle_waits_until_the_store_has_the_task() {
    let store = Shared::default();
    let mut a = Node::new("a", 1, &store);
    store.borrow_mut().hold = true;
    let out = a.feed(&post(1, "tools/call", json!({ "name": "slow", "arguments": {} })), usize::MAX);
    assert!(out.is_empty(), "no handle byte before the store answers: {}", String::from_utf8_lossy(&out));
    assert_eq!(a.e.tasks(), 1);
    let (id, rev) = store.borrow_mut().held.pop().expect("a save held");
    assert_eq!((rev, a.log()), (1, vec![format!("save {id} 1")]));
    store.borrow_mut().hold = false;
    a.e.task_saved(a.now, &id, rev, true);
    let mut out = Vec::new();
    a.pump(&mut out);
    let (status, r) = parse(&out);
    assert_eq!((status, r["result"]["taskId"].as_str()), (200, Some(id.as_str())), "{r}");
    // A second answer for the same save is ignored.
    a.e.task_saved(a.now, &id, rev, true);
}

#[test]
fn a_store_that_fails_or_stalls_is_503_and_no_task() {
    let store = Shared::default();
    let mut a = Node::new("a", 1, &store);
    store.borrow_mut().fail = true;
    let out = a.feed(&post(1, "tools/call", json!({ "name": "slow", "arguments": {} })), usize::MAX);
    let r = mcp_tests::wire::parse_responses(&out);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].status, r[0].header("retry-after")), (503, Some("1")));
    assert_eq!(a.e.tasks(), 0, "the task is undone");
    let task = a.host.borrow().calls[0].0;
    assert_eq!(a.host.borrow().cancelled, vec![task], "its host's work is cancelled");

    // A store that never answers: the same, at the store timeout.
    store.borrow_mut().fail = false;
    store.borrow_mut().hold = true;
    let out = a.feed(&post(2, "tools/call", json!({ "name": "slow", "arguments": {} })), usize::MAX);
    assert!(out.is_empty());
    a.now = a.now + Duration::from_secs(5);
    a.e.handle_timeout(a.now);
    let mut out = Vec::new();
    a.pump(&mut out);
    let r = mcp_tests::wire::parse_responses(&out);
    assert_eq!(r[0].status, 503, "{r:?}");
    assert_eq!(a.e.tasks(), 0);
    assert_eq!(a.host.borrow().cancelled.len(), 2);
    // The late answer changes nothing.
    let (id, rev) = store.borrow_mut().held.pop().expect("held");
    a.e.task_saved(a.now, &id, rev, true);
    assert_eq!(a.e.tasks(), 0);
}

#[test]
fn a_task_is_read_answered_and_cancelled_on_another_node() {
    let (_store, mut a, mut b, id, task) = asking();
    assert_eq!(b.hear(), 0, "b runs none of it");

    // Node B reads it from the store.
    let g = b.get(2, &id);
    assert_eq!(g["result"]["status"], "input_required", "{g}");
    assert_eq!(g["result"]["inputRequests"]["confirm"]["method"], "elicitation/create");
    assert!(b.log().contains(&format!("load {id}")));
    assert_eq!(b.e.tasks(), 0, "a copy is dropped once served");

    // Node B takes the answer; node A hears of it and its host gets the call back.
    let yes = json!({ "action": "accept", "content": { "confirm": true } });
    let (status, r) =
        b.call(3, "tasks/update", json!({ "taskId": id, "inputResponses": { "confirm": yes } }));
    assert_eq!((status, &r["result"]["resultType"]), (200, &json!("complete")), "{r}");
    let calls = a.host.borrow().calls.len();
    assert_eq!(a.hear(), 1);
    let host = a.host.borrow();
    assert_eq!(host.calls.len(), calls + 1, "the call comes back to its host");
    assert_eq!(host.calls[calls], (task, vec!["confirm".to_owned()]));
    drop(host);
    assert_eq!(a.get(4, &id)["result"]["status"], "working");

    // Node A finishes it; node B reads the result.
    a.host_does(|e| answer(e, task, "done"));
    let g = b.get(5, &id);
    assert_eq!(g["result"]["status"], "completed", "{g}");
    assert_eq!(g["result"]["result"]["content"][0]["text"], "done");

    // A second task, cancelled on node B: node A's host hears of it.
    let (id2, task2) = a.create(6);
    let (status, r) = b.call(7, "tasks/cancel", json!({ "taskId": id2 }));
    assert_eq!((status, &r["result"]["resultType"]), (200, &json!("complete")), "{r}");
    assert_eq!(b.get(8, &id2)["result"]["status"], "cancelled");
    assert!(a.host.borrow().cancelled.is_empty());
    assert_eq!(a.hear(), 1);
    assert_eq!(a.host.borrow().cancelled, vec![task2]);
    assert_eq!(a.get(9, &id2)["result"]["status"], "cancelled");
    assert!(a.e.answer_tool(task2, &ToolOutput::new(&[Content::text("late")])).is_err());
}

#[test]
fn a_restarted_node_reads_its_running_task_as_failed_and_a_finished_one_with_its_result() {
    let store = Shared::default();
    let mut a = Node::new("a", 1, &store);
    let (running, _) = a.create(1);
    let (finished, t2) = a.create(2);
    a.host_does(|e| answer(e, t2, "kept"));
    drop(a);
    // The same node name, another boot.
    let mut a2 = Node::new("a", 9, &store);
    let g = a2.get(3, &running);
    assert_eq!(g["result"]["status"], "failed", "{g}");
    assert_eq!(g["result"]["statusMessage"], "the server restarted while the task ran");
    assert_eq!(g["result"]["error"]["code"], -32603);
    let g = a2.get(4, &finished);
    assert_eq!(g["result"]["status"], "completed", "{g}");
    assert_eq!(g["result"]["result"]["content"][0]["text"], "kept");
    // The record says so now, for every node.
    assert!(a2.log().contains(&format!("save {running} 2")), "{:?}", a2.log());
    let mut b = Node::new("b", 3, &store);
    assert_eq!(b.get(5, &running)["result"]["status"], "failed");
}

#[test]
fn a_lease_renewed_holds_and_a_lapsed_one_reads_as_failed() {
    let store = Shared::default();
    let mut a = Node::new("a", 1, &store);
    let (id, _) = a.create(1);
    // The owner renews every third of the lease while its host holds the task.
    a.advance(Duration::from_secs(10));
    assert!(a.log().contains(&format!("save {id} 2")), "{:?}", a.log());
    // Another node, 30 s of lease plus 30 s of skew later: still running elsewhere.
    let mut b = Node::new("b", 2, &store);
    b.e.set_wall_clock(b.now, UnixTime::from_micros(WALL + 70_000_000));
    assert_eq!(b.get(2, &id)["result"]["status"], "working");
    // One more second and the owner is gone.
    b.e.set_wall_clock(b.now, UnixTime::from_micros(WALL + 70_000_001));
    let g = b.get(3, &id);
    assert_eq!(g["result"]["status"], "failed", "{g}");
    assert_eq!(g["result"]["statusMessage"], "the server running the task stopped (its lease ran out)");
}

#[test]
fn expiry_is_told_to_the_store() {
    let store = Shared::default();
    let mut a = Node::new("a", 1, &store);
    let (id, _) = a.create(1);
    a.advance(Duration::from_secs(601));
    assert!(a.log().contains(&format!("expired {id}")), "{:?}", a.log());
    assert!(store.borrow().records.is_empty());
    assert_eq!(a.e.tasks(), 0);
}

#[test]
fn garbage_ids_never_reach_the_store() {
    let store = Shared::default();
    let mut a = Node::new("a", 1, &store);
    for bad in ["nope", "!!!!!!!!!!!!!!!!!!!!!!", "AAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAB"] {
        let (status, r) = a.call(1, "tasks/get", json!({ "taskId": bad }));
        assert_eq!((status, r["error"]["code"].as_i64()), (200, Some(-32602)), "{bad}: {r}");
    }
    assert!(a.log().is_empty(), "{:?}", a.log());
    // A well-formed id the store does not hold: asked once, not found.
    let (status, r) = a.call(2, "tasks/get", json!({ "taskId": "AAAAAAAAAAAAAAAAAAAAAA" }));
    assert_eq!((status, r["error"]["code"].as_i64()), (200, Some(-32602)), "{r}");
    assert_eq!(a.log(), ["load AAAAAAAAAAAAAAAAAAAAAA"]);
    // A store that fails: 503 (for an id it was not just asked about: that one is known
    // to be missing for a while, see `a_flood_of_unknown_ids_costs_a_bounded_number_of_loads`).
    store.borrow_mut().fail = true;
    let (status, _) = a.call(3, "tasks/get", json!({ "taskId": "BAAAAAAAAAAAAAAAAAAAAA" }));
    assert_eq!(status, 503);
}

/// Runs a cross-node scenario feeding every request in chunks of `chunk`; returns every
/// output byte of node B.
fn scenario(chunk: usize) -> Vec<u8> {
    let (_store, mut a, mut b, id, task) = asking();
    let mut out = b.feed(&post(2, "tasks/get", json!({ "taskId": id })), chunk);
    let yes = json!({ "action": "accept", "content": { "confirm": true } });
    out.extend(b.feed(
        &post(3, "tasks/update", json!({ "taskId": id, "inputResponses": { "confirm": yes } })),
        chunk,
    ));
    a.hear();
    a.host_does(|e| answer(e, task, "done"));
    out.extend(b.feed(&post(4, "tasks/get", json!({ "taskId": id })), chunk));
    out.extend(b.feed(&post(5, "tasks/cancel", json!({ "taskId": id })), chunk));
    out
}

#[test]
fn whole_and_split_input_give_the_same_bytes() {
    let whole = scenario(usize::MAX);
    assert_eq!(parse_all(&whole), 4);
    for chunk in [1, 7, 64] {
        assert_eq!(scenario(chunk), whole, "chunks of {chunk}");
    }
}

fn parse_all(out: &[u8]) -> usize {
    mcp_tests::wire::parse_responses(out).len()
}

#[test]
fn without_the_store_nothing_is_asked() {
    let store = Shared::default();
    let mut h = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    h.node_name("a");
    let mut a = Node::with("a", 1, &store, h);
    let (id, _) = a.create(1);
    assert_eq!(a.get(2, &id)["result"]["status"], "working");
    let (_, r) = a.call(3, "tasks/get", json!({ "taskId": "AAAAAAAAAAAAAAAAAAAAAA" }));
    assert_eq!(r["error"]["code"], -32602);
    assert!(a.log().is_empty());
}

#[test]
fn a_2025_11_25_task_handle_waits_for_the_store_too() {
    let store = Shared::default();
    let mut a = Node::new("a", 1, &store);
    let v = "2025-11-25";
    let session = a.legacy_session();

    store.borrow_mut().hold = true;
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "slow", "arguments": {}, "task": { "ttl": 60000 } } });
    let out = a.feed(&mcp_tests::wire::session_post(&call, v, Some(&session)), usize::MAX);
    assert!(out.is_empty(), "no handle byte before the store answers: {}", String::from_utf8_lossy(&out));
    let (id, rev) = store.borrow_mut().held.pop().expect("a save held");
    store.borrow_mut().hold = false;
    a.e.task_saved(a.now, &id, rev, true);
    let mut out = Vec::new();
    a.pump(&mut out);
    let (status, r) = parse(&out);
    assert_eq!((status, r["result"]["task"]["taskId"].as_str()), (200, Some(id.as_str())), "{r}");
    // Its record says the revision it was made on, and has its result once finished.
    let task = a.host.borrow().calls.last().expect("a call").0;
    a.host_does(|e| answer(e, task, "legacy"));
    let rec = store.borrow().records[&id].1.clone();
    assert_eq!((rec[1], rec[2]), (2, 2), "revision 2025-11-25, completed");
}

#[test]
fn a_store_given_after_the_entropy_and_missed_notices() {
    let store = Shared::default();
    let mut h = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    h.node_name("a");
    let mut a = Node::with("a", 1, &store, h);
    a.e.set_task_store(true);
    let (id, task) = a.create(1);
    assert_eq!(a.log(), [format!("save {id} 1")]);
    // A node that missed its notices reads every task it runs again.
    let (id2, _) = a.create(2);
    a.host_does(|e| answer(e, task, "done"));
    assert_eq!(a.e.tasks_changed_elsewhere(a.now), 1, "the finished one is not asked for");
    a.pump(&mut Vec::new());
    let log = a.log();
    assert!(log.contains(&format!("load {id2}")) && !log.contains(&format!("load {id}")), "{log:?}");
}

#[test]
fn answers_taken_on_a_copy_are_saved_in_the_same_drain() {
    let (_store, _a, mut b, id, _) = asking();
    // One drain, as an adapter woken by the input runs it: the load, the update and its
    // save all come out of it (the copy resumes nothing, so no event is owed).
    let yes = json!({ "action": "accept", "content": { "confirm": true } });
    let raw = post(2, "tasks/update", json!({ "taskId": id, "inputResponses": { "confirm": yes } }));
    let n = b.e.handle_input(b.now, b.conn, &raw);
    assert_eq!(n, raw.len());
    b.answer_events();
    assert!(b.log().contains(&format!("save {id} 3")), "{:?}", b.log());
}

/// Two nodes sharing a store, and a `2025-11-25` task created on node A (id 2 in a
/// session of A's): the store, the nodes, A's session and the task id.
fn legacy_task_on_a() -> (Shared<Store>, Node, Node, String, String) {
    legacy_task_on(http("a"))
}

/// The same, node A configured with `http_a`.
fn legacy_task_on(http_a: HttpConfig) -> (Shared<Store>, Node, Node, String, String) {
    let store = Shared::default();
    let mut a = Node::with("a", 1, &store, http_a);
    let b = Node::new("b", 2, &store);
    let on_a = a.legacy_session();
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "slow", "arguments": {}, "task": { "ttl": 60000 } } });
    let (_, r) = parse(&a.feed(&mcp_tests::wire::session_post(&call, "2025-11-25", Some(&on_a)), usize::MAX));
    let id = r["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    (store, a, b, on_a, id)
}

/// A `2025-11-25` `tasks/result` on node B for a task node A runs waits on a copy read
/// from the store; when A changes the task B hears of it and reads the copy again: it
/// waits on while the task runs, and is answered with the result once A finishes it.
#[test]
fn a_tasks_result_waiting_on_a_copy_is_answered_when_the_owner_finishes() {
    use mcp_tests::wire::session_post;
    let v = "2025-11-25";
    let (store, mut a, mut b, _, id) = legacy_task_on_a();
    let task = a.host.borrow().calls.last().expect("a call").0;

    // B's client (a session of the same principal there) waits for the result.
    let on_b = b.legacy_session();
    let result = json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": { "taskId": id } });
    let out = b.feed(&session_post(&result, v, Some(&on_b)), usize::MAX);
    assert!(out.is_empty(), "it waits: {}", String::from_utf8_lossy(&out));
    assert!(b.log().contains(&format!("load {id}")));
    assert_eq!(b.e.tasks(), 1, "the copy stays while a request waits on it");

    // A changes the task without finishing it: B reads it again and waits on.
    a.host_does(|e| e.task_status(task, Some("halfway"))).expect("live");
    let loads = |b: &Node| b.log().iter().filter(|l| **l == format!("load {id}")).count();
    let notices: Vec<_> = store.borrow_mut().notices.drain(..).collect();
    assert!(notices.iter().any(|(from, n)| from == "a" && *n == id), "{notices:?}");
    assert!(b.e.task_changed_elsewhere(b.now, id.as_bytes()), "b follows the copy");
    let mut out = Vec::new();
    b.pump(&mut out);
    assert!(out.is_empty(), "still running: {}", String::from_utf8_lossy(&out));
    assert_eq!(loads(&b), 2);

    // A finishes it: B's waiting request gets the result.
    a.host_does(|e| answer(e, task, "done elsewhere"));
    store.borrow_mut().notices.clear();
    assert!(b.e.task_changed_elsewhere(b.now, id.as_bytes()));
    let mut out = Vec::new();
    b.pump(&mut out);
    let (status, r) = parse(&out);
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["id"], 3);
    assert_eq!(r["result"]["content"][0]["text"], "done elsewhere", "{r}");
    assert_eq!(r["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    assert_eq!(loads(&b), 3);
    assert_eq!(b.e.tasks(), 0, "the copy is dropped once nothing waits on it");
    assert!(!b.e.task_changed_elsewhere(b.now, id.as_bytes()), "nothing left to follow");
}

/// A `2025-11-25` task cancelled on node B: node A, which runs it, merges the
/// cancellation and answers the `tasks/result` waiting there (a cancelled task has no
/// result: `-32602`), as a local `tasks/cancel` would.
#[test]
fn an_owners_waiting_tasks_result_hears_a_cancel_made_elsewhere() {
    use mcp_tests::wire::session_post;
    let v = "2025-11-25";
    let (store, mut a, mut b, on_a, id) = legacy_task_on_a();
    let result = json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": { "taskId": id } });
    assert!(a.feed(&session_post(&result, v, Some(&on_a)), usize::MAX).is_empty(), "it waits");

    let on_b = b.legacy_session();
    let cancel = json!({ "jsonrpc": "2.0", "id": 4, "method": "tasks/cancel", "params": { "taskId": id } });
    let (status, r) = parse(&b.feed(&session_post(&cancel, v, Some(&on_b)), usize::MAX));
    assert_eq!((status, &r["result"]["status"]), (200, &json!("cancelled")), "{r}");

    store.borrow_mut().notices.clear();
    assert!(a.e.task_changed_elsewhere(a.now, id.as_bytes()), "a runs it");
    let mut out = Vec::new();
    a.pump(&mut out);
    let (status, r) = parse(&out);
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["id"].as_u64(), r["error"]["code"].as_i64()), (Some(3), Some(-32602)), "{r}");
    assert_eq!(a.host.borrow().cancelled.len(), 1, "its host was told");
}

/// A `2025-11-25` `tasks/list` with a task store comes from the store (every node's
/// tasks), a page at a time in creation order, and `initialize` offers it.
#[test]
fn with_a_task_store_tasks_list_pages_every_nodes_tasks_in_creation_order() {
    use mcp_tests::wire::session_post;
    let v = "2025-11-25";
    let store = Shared::default();
    let keyed = |name: &str, entropy: u8| {
        let mut c = config();
        c.secret_key([9; 32]).page_size(2);
        Node::configured(name, entropy, &store, c, http(name))
    };
    let (mut a, mut b) = (keyed("a", 1), keyed("b", 2));
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": v, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let raw = a.feed(&session_post(&init, v, None), usize::MAX);
    let body: Value = serde_json::from_slice(&mcp_tests::wire::parse_responses(&raw)[0].body).expect("json");
    assert_eq!(body["result"]["capabilities"]["tasks"]["list"], json!({}), "offered: {body}");

    let (on_a, on_b) = (a.legacy_session(), b.legacy_session());
    let call = |rid: u64| {
        json!({ "jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": { "name": "slow", "arguments": {}, "task": { "ttl": 60000 } } })
    };
    // Five tasks, a millisecond apart, made on alternating nodes; a 2026-07-28 task
    // between them is never listed.
    let mut made = Vec::new();
    for i in 0..5u64 {
        let (node, session) = if i % 2 == 0 { (&mut a, &on_a) } else { (&mut b, &on_b) };
        let (_, r) = parse(&node.feed(&session_post(&call(10 + i), v, Some(session)), usize::MAX));
        made.push(r["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {r}")).to_owned());
        if i == 2 {
            node.create(30);
        }
        a.advance(Duration::from_millis(1));
        b.advance(Duration::from_millis(1));
    }
    // A finishes its first task: B's list shows the store's state of it.
    let first = a.host.borrow().calls[0].0;
    a.host_does(|e| answer(e, first, "done"));

    let ids = |r: &Value| -> Vec<String> {
        let tasks = r["result"]["tasks"].as_array().unwrap_or_else(|| panic!("tasks: {r}"));
        tasks.iter().map(|t| t["taskId"].as_str().unwrap_or_default().to_owned()).collect()
    };
    let list = |node: &mut Node, session: &str, rid: u64, cursor: Option<&str>| {
        let params = cursor.map_or(json!({}), |c| json!({ "cursor": c }));
        let body = json!({ "jsonrpc": "2.0", "id": rid, "method": "tasks/list", "params": params });
        let (status, r) = parse(&node.feed(&session_post(&body, v, Some(session)), usize::MAX));
        assert_eq!(status, 200, "{r}");
        r
    };
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    // Pages alternate between the nodes: a cursor from one is good on the other.
    for (page, rid) in (0..).zip(40..) {
        let r = if page % 2 == 0 {
            list(&mut b, &on_b, rid, cursor.as_deref())
        } else {
            list(&mut a, &on_a, rid, cursor.as_deref())
        };
        let shown = ids(&r);
        assert!(shown.len() <= 2, "a page of two: {r}");
        if page == 0 {
            assert_eq!(r["result"]["tasks"][0]["status"], "completed", "the store has A's result: {r}");
        }
        seen.extend(shown);
        match r["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
        assert!(page < 5, "the pages end");
    }
    assert_eq!(seen, made, "every node's tasks, in creation order, once each");
    assert!(b.log().iter().any(|l| l == "list 3"), "a page and one more asked: {:?}", b.log());
}

/// A `tasks/list` whose cursor this engine did not seal is `-32602` without asking the
/// store; a store that fails makes it `503` with `Retry-After`; the output is the same
/// whole or byte by byte.
#[test]
fn a_stored_tasks_list_refuses_a_bad_cursor_and_fails_with_the_store() {
    use mcp_tests::wire::session_post;
    let v = "2025-11-25";
    let mut outputs = Vec::new();
    for chunk in [usize::MAX, 1] {
        let (store, mut a, _, on_a, id) = legacy_task_on_a();
        let bad = json!({ "jsonrpc": "2.0", "id": 5, "method": "tasks/list", "params": { "cursor": "bm90LWEtY3Vyc29y" } });
        let (status, r) = parse(&a.feed(&session_post(&bad, v, Some(&on_a)), chunk));
        assert_eq!((status, &r["error"]["code"]), (200, &json!(-32602)), "{r}");
        assert!(!a.log().iter().any(|l| l.starts_with("list")), "the store was not asked: {:?}", a.log());

        let list = json!({ "jsonrpc": "2.0", "id": 6, "method": "tasks/list", "params": {} });
        let ok = a.feed(&session_post(&list, v, Some(&on_a)), chunk);
        let (_, r) = parse(&ok);
        assert_eq!(r["result"]["tasks"][0]["taskId"], json!(id), "{r}");
        assert_eq!(r["result"]["tasks"][0]["status"], "working", "{r}");

        store.borrow_mut().fail = true;
        let failed = a.feed(&session_post(&list, v, Some(&on_a)), chunk);
        let resp = &mcp_tests::wire::parse_responses(&failed)[0];
        assert_eq!(resp.status, 503, "{resp:?}");
        assert!(resp.header("retry-after").is_some(), "{resp:?}");
        outputs.push((ok, failed));
    }
    assert_eq!(outputs[0], outputs[1], "whole and byte by byte");
}

/// A `2025-11-25` `tasks/result` on node B waits on a copy of a task node A runs; A then
/// dies (it saves nothing more, so its lease is not renewed and nothing is announced).
/// Once A's lease and the clock skew have passed, B reads the record again, finds nothing
/// newer, judges the task `failed`, and answers the waiting request with its error, well
/// before the task's TTL.
#[test]
fn a_tasks_result_waiting_on_a_dead_owners_task_is_answered_when_its_lease_lapses() {
    use mcp_tests::wire::session_post;
    let (store, _a, mut b, id) = short_lease_task_on_a();
    let on_b = b.legacy_session();
    let result = json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": { "taskId": id } });
    assert!(b.feed(&session_post(&result, "2025-11-25", Some(&on_b)), usize::MAX).is_empty(), "it waits");
    let loads = |s: &Shared<Store>| s.borrow().log.iter().filter(|l| **l == format!("load {id}")).count();
    assert_eq!(loads(&store), 1);

    // Time passes on B only, without closing its connection.
    let mut out = Vec::new();
    for _ in 0..4 {
        b.now = b.now + Duration::from_secs(10);
        b.e.handle_timeout(b.now);
        b.pump(&mut out);
        assert!(out.is_empty(), "still waiting: {}", String::from_utf8_lossy(&out));
    }
    assert_eq!(loads(&store), 1, "not read again while the lease may run");
    b.now = b.now + Duration::from_secs(2);
    b.e.handle_timeout(b.now);
    b.pump(&mut out);
    assert_eq!(loads(&store), 2, "read again once it lapsed");
    let (status, r) = parse(&out);
    assert_eq!((status, r["id"].as_u64()), (200, Some(3)), "{r}");
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("lease ran out"), "{r}");
    // The store's record says so too (the copy's judgement is saved).
    let get = json!({ "jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": { "taskId": id } });
    let (_, r) = parse(&b.feed(&session_post(&get, "2025-11-25", Some(&on_b)), usize::MAX));
    assert_eq!(r["result"]["status"], "failed", "{r}");
}

/// Node A with a lease of 10 s (with the skew of 30 s it lapses at 40 s, before the TTL
/// of 60 s) runs a `2025-11-25` task; node B shares the store.
fn short_lease_task_on_a() -> (Shared<Store>, Node, Node, String) {
    let mut short = http("a");
    short.task_lease(Duration::from_secs(10));
    let (store, a, b, _, id) = legacy_task_on(short);
    (store, a, b, id)
}

/// The same wait while A lives: A renews its lease with saves, B hears of each and reads
/// the copy again, and the request waits on past the first lease's lapse.
#[test]
fn a_tasks_result_waiting_on_a_live_owners_task_waits_on_past_the_first_lease() {
    use mcp_tests::wire::session_post;
    let (_store, mut a, mut b, id) = short_lease_task_on_a();
    let on_b = b.legacy_session();
    let result = json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": { "taskId": id } });
    assert!(b.feed(&session_post(&result, "2025-11-25", Some(&on_b)), usize::MAX).is_empty(), "it waits");
    let mut out = Vec::new();
    for _ in 0..25 {
        for n in [&mut a, &mut b] {
            n.now = n.now + Duration::from_secs(2);
            n.e.handle_timeout(n.now);
            n.pump(&mut out);
        }
        hear_into(&mut b, &mut out);
        assert!(out.is_empty(), "still waiting: {}", String::from_utf8_lossy(&out));
    }
    // 50 s on: A finishes, B hears of it and answers the request with the result.
    let task = a.host.borrow().calls.last().expect("a call").0;
    a.host_does(|e| answer(e, task, "done"));
    hear_into(&mut b, &mut out);
    let (status, r) = parse(&out);
    assert_eq!((status, r["id"].as_u64()), (200, Some(3)), "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "done", "{r}");
}

/// Hears the notices of the other nodes' saves, keeping what the node then writes.
fn hear_into(n: &mut Node, out: &mut Vec<u8>) {
    let notices: Vec<_> = n.store.borrow_mut().notices.drain(..).collect();
    for (from, id) in notices {
        if from != n.name {
            n.e.task_changed_elsewhere(n.now, id.as_bytes());
        }
    }
    n.pump(out);
}

/// A `2025-11-25` `tasks/cancel` on node B for a task node A runs, while a `tasks/result`
/// of B's waits on B's copy of it: the cancel is answered (`cancelled`), and so is the
/// waiting `tasks/result` (a cancelled task has no result: `-32602`). Found by the
/// `task_store` fuzz target: the engine panicked (a slice out of range in its output).
#[test]
fn a_cancel_on_a_copy_a_tasks_result_waits_on_answers_both() {
    use mcp_tests::wire::session_post;
    let v = "2025-11-25";
    let (_store, _a, mut b, _, id) = legacy_task_on_a();
    let on_b = b.legacy_session();
    let result = json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": { "taskId": id } });
    assert!(b.feed(&session_post(&result, v, Some(&on_b)), usize::MAX).is_empty(), "it waits");
    // The cancel comes on a second connection of B's.
    let waiting = b.conn;
    b.conn = b.e.open(b.now, None).expect("a connection");
    let cancel = json!({ "jsonrpc": "2.0", "id": 4, "method": "tasks/cancel", "params": { "taskId": id } });
    let out = b.feed(&session_post(&cancel, v, Some(&on_b)), usize::MAX);
    let r = mcp_tests::wire::parse_responses(&out);
    assert_eq!(r.len(), 1, "{}", String::from_utf8_lossy(&out));
    let body: Value = serde_json::from_slice(&r[0].body).expect("json");
    assert_eq!((r[0].status, &body["result"]["status"]), (200, &json!("cancelled")), "{body}");
    // The waiting request is answered too.
    let mut out = Vec::new();
    drain_engine(&mut b.e, waiting, &mut out, |_| false);
    let (status, r) = parse(&out);
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["id"].as_u64(), r["error"]["code"].as_i64()), (Some(3), Some(-32602)), "{r}");
}

/// The same on the node that runs the task, without a task store: a `2025-11-25`
/// `tasks/cancel` over HTTP answers the `tasks/result` waiting on another connection
/// with `-32602`, and gets its own answer alone (the engine used to panic, and the
/// cancel's body carried the waiter's answer too).
#[test]
fn a_local_cancel_answers_a_tasks_result_waiting_on_another_connection() {
    use mcp_tests::wire::session_post;
    let v = "2025-11-25";
    let store = Shared::default();
    let mut plain = http("a");
    plain.task_store(false);
    let mut a = Node::with("a", 1, &store, plain);
    let on_a = a.legacy_session();
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "slow", "arguments": {}, "task": { "ttl": 60000 } } });
    let (_, r) = parse(&a.feed(&session_post(&call, v, Some(&on_a)), usize::MAX));
    let id = r["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    let result = json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": { "taskId": id } });
    assert!(a.feed(&session_post(&result, v, Some(&on_a)), usize::MAX).is_empty(), "it waits");
    let waiting = a.conn;
    a.conn = a.e.open(a.now, None).expect("a connection");
    let cancel = json!({ "jsonrpc": "2.0", "id": 4, "method": "tasks/cancel", "params": { "taskId": id } });
    let (status, r) = parse(&a.feed(&session_post(&cancel, v, Some(&on_a)), usize::MAX));
    assert_eq!(
        (status, r["id"].as_u64(), &r["result"]["status"]),
        (200, Some(4), &json!("cancelled")),
        "{r}"
    );
    let mut out = Vec::new();
    drain_engine(&mut a.e, waiting, &mut out, |_| false);
    let (status, r) = parse(&out);
    assert_eq!((status, r["id"].as_u64(), r["error"]["code"].as_i64()), (200, Some(3), Some(-32602)), "{r}");
}

/// A task node A runs is cancelled through node B (the store has `cancelled`, and B's
/// client was told so); A's host, not yet told, finishes it. A's save is refused (B
/// wrote meanwhile), A reads the record back, and the stored end stands: A takes
/// `cancelled` (its late result is dropped, as a local cancel drops it) and saves that,
/// so no node reads `completed` after `cancelled`. Found by the `task_store` fuzz target.
#[test]
fn a_cancellation_stored_elsewhere_is_not_overwritten_by_the_owners_late_result() {
    let store = Shared::default();
    let mut a = Node::new("a", 1, &store);
    let mut b = Node::new("b", 2, &store);
    let (id, task) = a.create(1);
    let (status, r) = b.call(2, "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(status, 200, "{r}");
    assert_eq!(b.get(3, &id)["result"]["status"], "cancelled");
    // A has not heard of it yet: its host finishes the task.
    a.host_does(|e| answer(e, task, "done"));
    assert_eq!(b.get(4, &id)["result"]["status"], "cancelled", "a terminal status stays");
    let got = a.get(5, &id);
    assert_eq!(got["result"]["status"], "cancelled", "the owner took the stored end: {got}");
    assert!(got["result"].get("result").is_none(), "its late result is dropped: {got}");
}

/// Node `name` keeping its sessions in the shared store too (every node sharing the
/// secret key that seals session ids), authorizing every request without naming a
/// principal (an endpoint that does not authenticate).
fn anonymous_with_sessions(name: &str, entropy: u8, store: &Shared<Store>) -> Node {
    let mut h = http(name);
    h.session_store(true);
    let mut c = config();
    c.secret_key([9; 32]);
    let mut n = Node::configured(name, entropy, store, c, h);
    n.verdict = Verdict::Allow;
    n
}

/// A `2025-11-25` request in `session` on `node`: its status and JSON answer.
fn legacy(node: &mut Node, session: &str, id: u64, method: &str, params: Value) -> (u16, Value) {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    parse(&node.feed(&mcp_tests::wire::session_post(&body, "2025-11-25", Some(session)), usize::MAX))
}

/// Without a principal a `2025-11-25` task is its session's on every node sharing the
/// store: its record keeps the session's key, so on node B another session's
/// `tasks/get`, `tasks/result` and `tasks/cancel` find nothing (answered as an unknown id
/// is), while the same session, loaded there from the session store, finds it. Before,
/// every session without a principal read, waited on and cancelled it.
#[test]
fn across_nodes_a_task_without_a_principal_is_its_sessions_only() {
    let store = Shared::default();
    let mut a = anonymous_with_sessions("a", 1, &store);
    let mut b = anonymous_with_sessions("b", 2, &store);
    let mine = a.legacy_session();
    let call = json!({ "name": "slow", "arguments": {}, "task": { "ttl": 60000 } });
    let (status, r) = legacy(&mut a, &mine, 2, "tools/call", call);
    assert_eq!(status, 200, "{r}");
    let id = r["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    let rec = store.borrow().records[&id].1.clone();
    assert_eq!(rec[3] & 0x10, 0x10, "the record keeps the session's key");

    // Another session, on B: nothing, as for an id no one holds.
    let theirs = b.legacy_session();
    let unknown = "QUJDREVGR0hJSktMTU5PUA";
    for (rid, method) in [(3, "tasks/get"), (4, "tasks/result"), (5, "tasks/cancel")] {
        let (status, r) = legacy(&mut b, &theirs, rid, method, json!({ "taskId": id }));
        let (_, none) = legacy(&mut b, &theirs, rid, method, json!({ "taskId": unknown }));
        assert_eq!((status, &r["error"]), (200, &none["error"]), "{method}: {r}");
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
    }
    let (status, r) = legacy(&mut b, &theirs, 6, "tasks/list", json!({}));
    assert_eq!((status, r["error"]["code"].as_i64()), (404, Some(-32601)), "not offered: {r}");
    assert!(!store.borrow().log.iter().any(|l| l.starts_with("list")), "the store was not asked for a list");
    assert_eq!(a.host.borrow().cancelled.len(), 0, "nothing was cancelled");

    // The task's own session, on B (loaded from the session store): it is there.
    let (status, r) = legacy(&mut b, &mine, 7, "tasks/get", json!({ "taskId": id }));
    assert_eq!((status, &r["result"]["status"]), (200, &json!("working")), "{r}");
    let (status, r) = legacy(&mut b, &mine, 8, "tasks/cancel", json!({ "taskId": id }));
    assert_eq!((status, &r["result"]["status"]), (200, &json!("cancelled")), "{r}");
    assert_eq!(a.hear(), 1, "A runs it and hears of the cancellation");
    assert_eq!(a.host.borrow().cancelled.len(), 1);
    // And on A, where it was made.
    let (_, r) = legacy(&mut a, &mine, 9, "tasks/get", json!({ "taskId": id }));
    assert_eq!(r["result"]["status"], "cancelled", "{r}");
}

/// With a principal a `2025-11-25` task stays its principal's, in any of its sessions on
/// any node (as before): B's session of the same principal reads, waits on and cancels
/// it; another principal's session finds nothing.
#[test]
fn across_nodes_a_principals_task_is_seen_from_its_other_sessions() {
    let (_store, mut a, mut b, _, id) = legacy_task_on_a();
    let on_b = b.legacy_session();
    let (status, r) = legacy(&mut b, &on_b, 3, "tasks/get", json!({ "taskId": id }));
    assert_eq!((status, &r["result"]["status"]), (200, &json!("working")), "{r}");
    let (_, r) = legacy(&mut b, &on_b, 4, "tasks/list", json!({}));
    assert_eq!(r["result"]["tasks"][0]["taskId"], json!(id), "{r}");
    b.verdict = Verdict::AllowAs(Principal::of(b"someone else"));
    let other = b.legacy_session();
    let (_, r) = legacy(&mut b, &other, 5, "tasks/get", json!({ "taskId": id }));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    b.verdict = client();
    let (_, r) = legacy(&mut b, &on_b, 6, "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(r["result"]["status"], "cancelled", "{r}");
    a.hear();
    assert_eq!(a.host.borrow().cancelled.len(), 1);
}

/// A flood of well-formed task ids no one holds costs a bounded number of store lookups:
/// each client's lookups that serve it nothing are counted (`task_load_misses`, here 5 a
/// minute) and past them the client gets `429` with `Retry-After` without the store being
/// asked; an id the store just said it lacks is not asked for again for 10 s (nor
/// counted); another client is still served; a lookup that serves the client its own task
/// costs it nothing; time brings the lookups back. Before, every id was a store lookup.
#[test]
fn a_flood_of_unknown_ids_costs_a_bounded_number_of_loads() {
    let store = Shared::default();
    let mut h = http("a");
    h.task_load_misses(5, Duration::from_secs(60));
    let mut a = Node::with("a", 1, &store, h);
    let mut b = Node::new("b", 2, &store);
    let loads = || store.borrow().log.iter().filter(|l| l.starts_with("load ")).count();
    // A task of the client's that node B runs: looking it up on A serves the client, free.
    let (own, _) = b.create(1);
    for i in 0..8 {
        assert_eq!(a.get(10 + i, &own)["result"]["status"], "working");
    }
    assert_eq!(loads(), 8, "each read of another node's task is a lookup");

    let random = |i: u64| {
        use base64::Engine as _;
        let mut token = [0u8; 16];
        token[..8].copy_from_slice(&(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes());
        token[8] = 0xa5;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token)
    };
    let mut refused = 0;
    for i in 0..40 {
        let (status, r) = a.call(100 + i, "tasks/get", json!({ "taskId": random(i) }));
        match status {
            200 => assert_eq!(r["error"]["code"], -32602, "{r}"),
            429 => {
                assert_eq!(
                    (r["id"].as_u64(), r["error"]["code"].as_i64()),
                    (Some(100 + i), Some(-32010)),
                    "{r}"
                );
                refused += 1;
            }
            _ => panic!("{status}: {r}"),
        }
    }
    assert_eq!(loads(), 8 + 5, "five lookups, then none");
    assert_eq!(refused, 35);
    let counted = a.e.refusal_counts().get(mcp_engine::http::Refusal::RateLimited);
    assert_eq!(counted, 35, "each refusal recorded as a rate refusal");
    // The refusal says when to come back.
    let raw = a.feed(&post(200, "tasks/get", json!({ "taskId": random(200) })), usize::MAX);
    let resp = &mcp_tests::wire::parse_responses(&raw)[0];
    assert_eq!((resp.status, resp.header("retry-after")), (429, Some("12")), "{resp:?}");

    // Another client is served (the store asked once for it).
    a.verdict = Verdict::AllowAs(Principal::of(b"another client"));
    let (status, r) = a.call(300, "tasks/get", json!({ "taskId": random(300) }));
    assert_eq!((status, r["error"]["code"].as_i64()), (200, Some(-32602)), "{r}");
    assert_eq!(loads(), 14);
    // An id the store just said it lacks is not asked for again, and costs nothing.
    for i in 0..10 {
        let (status, r) = a.call(301 + i, "tasks/get", json!({ "taskId": random(300) }));
        assert_eq!((status, r["error"]["code"].as_i64()), (200, Some(-32602)), "{r}");
    }
    assert_eq!(loads(), 14);
    // 10 s later it is asked for again.
    a.advance(Duration::from_secs(10));
    let (status, _) = a.call(320, "tasks/get", json!({ "taskId": random(300) }));
    assert_eq!((status, loads()), (200, 15));

    // The first client gets a lookup back every 12 s.
    a.verdict = client();
    a.advance(Duration::from_secs(2));
    let (status, _) = a.call(400, "tasks/get", json!({ "taskId": random(400) }));
    assert_eq!((status, loads()), (200, 16));
    let (status, _) = a.call(401, "tasks/get", json!({ "taskId": random(401) }));
    assert_eq!((status, loads()), (429, 16));
}
