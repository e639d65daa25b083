//! task_store: two or three `HttpEngine` nodes with tasks on and a task store
//! (`HttpConfig::task_store`), sharing a store kept here (records by id with
//! compare-and-set on the revision, `ListTasks` by principal in (`createdAt`, id) order,
//! notices of saves), driven by a sequence of operations: tool calls that become tasks
//! (`2026-07-28` with the extension, `2025-11-25` sessions with `params.task`),
//! `tasks/get`, `tasks/update`, `tasks/cancel`, `tasks/result` and `tasks/list` (cursors
//! from earlier pages, and garbled ones) sent to any node by one of two callers (two
//! principals, a principal and an anonymous caller, or two anonymous callers: the host
//! names no principal for them, as `Authorization::Everyone` would),
//! the host's answers on task tickets, a store that fails, holds its answers (released
//! later in a fuzz-chosen order), refuses a save, drops notices or lists carelessly
//! (rows of every principal), notices delivered or lost (`task_changed_elsewhere`,
//! `tasks_changed_elsewhere`), time passing (past leases and TTLs) and a node restarting
//! (a new engine with the same node name). Requests are fed whole or split.
//!
//! Checks: no panic; every request gets exactly one response (a JSON-RPC answer, `503`
//! when the store failed, or `429` when the caller ran out of task lookups); a task's
//! status as `tasks/get` on one node shows it only moves as the status machine allows (a
//! node that restarted starts afresh); `tasks/get`, `tasks/result` and `tasks/cancel`
//! find a task only for its caller: another principal's never, and a `2025-11-25` task
//! made without a principal only from the session that made it; an anonymous caller is
//! never offered `tasks/list` (`initialize` leaves `tasks.list` out, the method is
//! `-32601`); `tasks/list` never shows a task of another principal or of `2026-07-28`, nor
//! the same id twice in one walk of pages; every record the store keeps decodes back.
//!
//! Found so far (inputs `crash-*` in the corpus, regression tests in
//! `tests/tests/task_store.rs`): a `2025-11-25` `tasks/cancel` answered while a
//! `tasks/result` waited on its task on another connection panicked in the HTTP layer
//! (the cancel's answer took the waiter's with it, with or without a task store); an
//! owner's late result overwrote a cancellation another node had stored.

use core::time::Duration;
use mcp_engine::Commands;
use std::collections::HashMap;

use mcp_engine::error::HostError;
use mcp_engine::http::store::{Loaded, StoreEvent, TaskQuery, TaskRow};
use mcp_engine::http::{
    AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent, Principal, Verdict,
};
use mcp_engine::mrtr::{InputRequest, InputRequired};
use mcp_engine::{
    Catalog, Config, Content, Event, Instant, TaskOptions, TaskSupport, Ticket, Tool, ToolOutput, UnixTime,
};
use serde_json::{Value, json};

use crate::common::{Bytes, lossy, task_status_may_follow};

const MAX_OPS: usize = 192;
const WALL: u64 = 1_767_225_600_000_000;
const NAMES: [&str; 3] = ["n0", "n1", "n2"];
const PRINCIPALS: [&[u8]; 2] = [b"alice", b"bob"];
const KEYS: [&str; 2] = ["a", "b"];
const LEGACY: &str = "2025-11-25";

/// A store answer held back.
enum Held {
    Save {
        node: usize,
        generation: u32,
        id: String,
        rev: u64,
        record: Vec<u8>,
        created: u64,
    },
    Load {
        node: usize,
        generation: u32,
        id: String,
    },
    List {
        node: usize,
        generation: u32,
        query: TaskQuery,
        principal: Option<[u8; 32]>,
        after: Option<(u64, String)>,
        limit: usize,
    },
}

#[derive(Default)]
struct Store {
    /// Records by id: revision, bytes, `createdAt`.
    records: HashMap<String, (u64, Vec<u8>, u64)>,
    /// Each task's principal digest, as its saves said.
    principal_of: HashMap<String, Option<[u8; 32]>>,
    fail: bool,
    hold: bool,
    /// Saves left to refuse.
    refuse: u8,
    drop_notices: bool,
    /// Lists rows of every principal (the engine must leave the others out).
    careless: bool,
    held: Vec<Held>,
    /// Saves written: (node, id), for the other nodes to hear of.
    notices: Vec<(usize, String)>,
}

impl Store {
    fn save(&mut self, node: usize, id: &str, rev: u64, record: &[u8], created: u64) -> bool {
        let ok = !self.fail && self.records.get(id).is_none_or(|(r, _, _)| *r < rev);
        let ok = ok && {
            if self.refuse > 0 {
                self.refuse -= 1;
                false
            } else {
                true
            }
        };
        if ok {
            assert!(
                mcp_engine::internal::task_record_decodes(record),
                "a saved record does not decode: {:?}",
                lossy(record)
            );
            self.records.insert(id.to_owned(), (rev, record.to_vec(), created));
            if !self.drop_notices {
                self.notices.push((node, id.to_owned()));
            }
        }
        ok
    }

    fn list(
        &self,
        principal: Option<[u8; 32]>,
        after: &Option<(u64, String)>,
        limit: usize,
    ) -> Vec<(String, u64, Vec<u8>)> {
        let mut rows: Vec<_> = self
            .records
            .iter()
            .filter(|(id, (_, _, at))| {
                (self.careless || self.principal_of.get(*id).copied().flatten() == principal)
                    && after.as_ref().is_none_or(|(t, i)| (*at, id.as_str()) > (*t, i.as_str()))
            })
            .map(|(id, (_, r, at))| (id.clone(), *at, r.clone()))
            .collect();
        rows.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        rows.truncate(limit);
        rows
    }
}

/// What a request was, for checking its answer.
#[derive(Clone)]
enum Kind {
    Call {
        modern: bool,
    },
    Get(String),
    /// `tasks/result` or `tasks/cancel` of a task.
    Touch(String),
    List {
        seen: Vec<String>,
    },
}

struct Req {
    node: usize,
    principal: usize,
    kind: Kind,
    answers: u32,
    /// Its connection was dropped (a restart): no answer is owed.
    lost: bool,
    /// The `2025-11-25` session it was sent in.
    session: Option<String>,
}

/// A task learnt from an answer.
struct Known {
    id: String,
    /// Made under `2026-07-28`.
    modern: bool,
    /// The caller that made it.
    by: usize,
    /// The `2025-11-25` session that made it.
    session: Option<String>,
}

struct Conn {
    id: ConnId,
    principal: usize,
    req: u64,
    out: Vec<u8>,
    done: bool,
}

struct Node {
    e: HttpEngine,
    generation: u32,
    conns: Vec<Conn>,
    /// Per principal: the `2025-11-25` session.
    sessions: [Option<String>; 2],
    /// Task tickets the host holds.
    tickets: Vec<Ticket>,
    /// Statuses `tasks/get` showed here.
    view: HashMap<String, String>,
}

struct Harness {
    nodes: Vec<Node>,
    store: Store,
    now: Instant,
    seed: u8,
    next_id: u64,
    reqs: HashMap<u64, Req>,
    /// Tasks learnt from answers.
    tasks: Vec<Known>,
    /// Which of the two callers are anonymous (no principal named).
    anon: [bool; 2],
    /// Principal digests as saves showed them.
    digests: [Option<Option<[u8; 32]>>; 2],
    /// Cursors seen, with the ids of the walk so far.
    cursors: Vec<(String, Vec<String>)>,
    make_task: bool,
    /// Connections whose principal is to be authorized.
    auth: HashMap<(usize, ConnId), usize>,
}

fn config() -> Config {
    let mut c = Config::new("fuzz", "0");
    c.tasks(true).task_ttl(Duration::from_secs(60)).secret_key([9; 32]).page_size(2);
    c
}

fn http(node: usize) -> HttpConfig {
    let mut h = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    h.task_store(true)
        .node_name(NAMES[node])
        .task_lease(Duration::from_secs(10))
        .store_timeout(Duration::from_secs(2));
    h
}

fn catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("slow").task_support(TaskSupport::Optional))
        .tool(Tool::new("must").task_support(TaskSupport::Required))
        .build()
        .unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"))
}

fn engine(node: usize, generation: u32, seed: u8, now: Instant) -> HttpEngine {
    let mut e = HttpEngine::new(config(), http(node), catalog());
    // Distinct per node and generation, so task ids never collide.
    let salt = (node as u32 + 3 * generation) as u8;
    let mut entropy = [seed; 32];
    entropy[0] = salt;
    entropy[1] = (generation >> 8) as u8;
    e.set_entropy(&entropy);
    e.set_wall_clock(now, UnixTime::from_micros(WALL + now.as_micros()));
    e
}

fn post(body: &Value, modern: bool, session: Option<&str>) -> Vec<u8> {
    let text = body.to_string();
    let mut s = String::from("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n");
    s.push_str("Accept: application/json, text/event-stream\r\n");
    if modern {
        s.push_str("MCP-Protocol-Version: 2026-07-28\r\n");
        let method = body["method"].as_str().unwrap_or_default();
        s.push_str(&format!("Mcp-Method: {method}\r\n"));
        let name = body["params"]["name"].as_str().or(body["params"]["taskId"].as_str());
        if let Some(name) = name {
            s.push_str(&format!("Mcp-Name: {name}\r\n"));
        }
    } else if let Some(session) = session {
        s.push_str(&format!("MCP-Protocol-Version: {LEGACY}\r\nMcp-Session-Id: {session}\r\n"));
    }
    s.push_str(&format!("Content-Length: {}\r\n\r\n{text}", text.len()));
    s.into_bytes()
}

/// One complete response at the start of `buf`: status, session id, JSON messages, and
/// the bytes it took.
fn parse_response(buf: &[u8]) -> Option<(u16, Option<String>, Vec<Value>, usize)> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    let head = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return None,
        Err(e) => panic!("not an HTTP/1.1 response ({e}): {:?}", lossy(buf)),
    };
    let status = resp.code.unwrap_or_default();
    let (mut length, mut chunked, mut session) = (None, false, None);
    for h in resp.headers.iter() {
        let v = core::str::from_utf8(h.value).unwrap_or_else(|_| panic!("{:?}", lossy(buf)));
        match h.name.to_ascii_lowercase().as_str() {
            "content-length" => length = v.parse::<usize>().ok(),
            "transfer-encoding" => chunked = v == "chunked",
            "mcp-session-id" => session = Some(v.to_owned()),
            _ => {}
        }
    }
    let mut msgs = Vec::new();
    if chunked {
        let mut at = head;
        loop {
            let rest = &buf[at..];
            let line = rest.windows(2).position(|w| w == b"\r\n")?;
            let size =
                core::str::from_utf8(&rest[..line]).ok().and_then(|s| usize::from_str_radix(s, 16).ok());
            let size = size.unwrap_or_else(|| panic!("a bad chunk size line: {:?}", lossy(rest)));
            let end = line + 2 + size + 2;
            if rest.len() < end {
                return None;
            }
            at += end;
            if size == 0 {
                return Some((status, session, msgs, at));
            }
            let chunk = &rest[line + 2..end - 2];
            for l in chunk.split(|&c| c == b'\n') {
                if let Some(data) = l.strip_prefix(b"data: ") {
                    msgs.push(
                        serde_json::from_slice(data).unwrap_or_else(|e| panic!("{e}: {:?}", lossy(data))),
                    );
                }
            }
        }
    }
    let length = length.unwrap_or_else(|| panic!("a response without framing: {:?}", lossy(buf)));
    if buf.len() < head + length {
        return None;
    }
    let body = &buf[head..head + length];
    if !body.is_empty() {
        msgs.push(
            serde_json::from_slice(body).unwrap_or_else(|e| panic!("{e}: not JSON: {:?}", lossy(body))),
        );
    }
    Some((status, session, msgs, head + length))
}

/// One event taken from an engine, owned.
enum Ev {
    Authorize(ConnId, bool),
    Ticket(Ticket),
    Cancelled(Ticket),
    Save { id: String, rev: u64, record: Vec<u8>, principal: Option<[u8; 32]>, created: u64 },
    Load(String),
    Expired(String),
    List { query: TaskQuery, principal: Option<[u8; 32]>, after: Option<(u64, String)>, limit: usize },
    Other,
}

fn take_event(e: &mut HttpEngine, make_task: bool) -> Option<Ev> {
    let Some(ev) = e.poll_event() else {
        return take_store_event(e);
    };
    Some(match ev {
        HttpEvent::Authorize(a) => Ev::Authorize(a.conn, false),
        HttpEvent::AuthorizeBody(a) => Ev::Authorize(a.conn, true),
        HttpEvent::Mcp(Event::CallTool(mut call)) => {
            if call.ticket.is_task() {
                Ev::Ticket(call.ticket)
            } else if make_task
                && call.can_start_task
                && let Ok(t) = call.start_task(&TaskOptions::new())
            {
                Ev::Ticket(t)
            } else {
                let _ = call.answer(&ToolOutput::new(&[Content::text("plain")]));
                Ev::Other
            }
        }
        HttpEvent::Mcp(Event::Cancelled(t)) => Ev::Cancelled(t),
        _ => Ev::Other,
    })
}

/// The store's next event, as the harness answers it.
fn take_store_event(e: &mut HttpEngine) -> Option<Ev> {
    let ev = e.poll_store()?;
    Some(match ev {
        StoreEvent::SaveTask(s) => Ev::Save {
            id: s.id.to_owned(),
            rev: s.revision,
            record: s.record.to_vec(),
            principal: s.principal.copied(),
            created: s.created.as_micros(),
        },
        StoreEvent::LoadTask(l) => Ev::Load(l.id.to_owned()),
        StoreEvent::TaskExpired(x) => Ev::Expired(x.id.to_owned()),
        StoreEvent::ListTasks(q) => Ev::List {
            query: q.query,
            principal: q.principal.copied(),
            after: q.after.map(|a| (a.created.as_micros(), a.id.to_owned())),
            limit: q.limit,
        },
        _ => Ev::Other,
    })
}

fn answer_list(
    e: &mut HttpEngine,
    now: Instant,
    store: &Store,
    query: TaskQuery,
    principal: Option<[u8; 32]>,
    after: &Option<(u64, String)>,
    limit: usize,
) {
    let rows = store.list(principal, after, limit);
    let rows: Vec<TaskRow<'_>> =
        rows.iter().map(|(id, at, r)| TaskRow::new(id, UnixTime::from_micros(*at), r)).collect();
    e.tasks_listed(now, query, (!store.fail).then_some(&rows[..]));
}

fn answer_load(e: &mut HttpEngine, now: Instant, store: &Store, id: &str) {
    let found = store.records.get(id).map(|(_, r, _)| r.as_slice());
    let answer = match (found, store.fail) {
        (_, true) => Loaded::Unavailable,
        (Some(r), _) => Loaded::Record(r),
        (None, _) => Loaded::Missing,
    };
    e.task_loaded(now, id, answer);
}

impl Harness {
    /// Answers every event of node `n` and reads its output until neither moves.
    fn pump(&mut self, n: usize) {
        loop {
            let mut progressed = false;
            while let Some(ev) = take_event(&mut self.nodes[n].e, self.make_task) {
                progressed = true;
                self.event(n, ev);
            }
            while let Some(c) = self.nodes[n].e.poll_ended() {
                progressed = true;
                if let Some(conn) = self.nodes[n].conns.iter_mut().find(|x| x.id == c) {
                    conn.done = true;
                }
            }
            for k in 0..self.nodes[n].conns.len() {
                let node = &mut self.nodes[n];
                let conn = node.conns[k].id;
                let pending = node.e.pending_output(conn);
                if !pending.is_empty() {
                    let len = pending.len();
                    node.conns[k].out.extend_from_slice(pending);
                    node.e.consume_output(conn, len);
                    progressed = true;
                }
            }
            self.read(n);
            if !progressed {
                break;
            }
        }
    }

    fn event(&mut self, n: usize, ev: Ev) {
        let now = self.now;
        match ev {
            Ev::Authorize(conn, body) => {
                let p = self.auth.get(&(n, conn)).copied().unwrap_or(0);
                let verdict = if self.anon[p] {
                    Verdict::Allow
                } else {
                    Verdict::AllowAs(Principal::of(PRINCIPALS[p]))
                };
                if body {
                    self.nodes[n].e.authorize_body(now, conn, verdict);
                } else {
                    self.nodes[n].e.authorize(now, conn, verdict);
                }
            }
            Ev::Ticket(t) => self.nodes[n].tickets.push(t),
            Ev::Cancelled(t) => self.nodes[n].tickets.retain(|x| *x != t),
            Ev::Save { id, rev, record, principal, created } => {
                self.store.principal_of.insert(id.clone(), principal);
                if self.store.hold {
                    let generation = self.nodes[n].generation;
                    self.store.held.push(Held::Save { node: n, generation, id, rev, record, created });
                    return;
                }
                let ok = self.store.save(n, &id, rev, &record, created);
                self.nodes[n].e.task_saved(now, &id, rev, ok);
            }
            Ev::Load(id) => {
                if self.store.hold {
                    let generation = self.nodes[n].generation;
                    self.store.held.push(Held::Load { node: n, generation, id });
                    return;
                }
                answer_load(&mut self.nodes[n].e, now, &self.store, &id);
            }
            Ev::Expired(id) => {
                self.store.records.remove(&id);
            }
            Ev::List { query, principal, after, limit } => {
                if self.store.hold {
                    let generation = self.nodes[n].generation;
                    self.store.held.push(Held::List { node: n, generation, query, principal, after, limit });
                    return;
                }
                answer_list(&mut self.nodes[n].e, now, &self.store, query, principal, &after, limit);
            }
            Ev::Other => {}
        }
    }

    /// Reads the complete responses on node `n`'s connections.
    fn read(&mut self, n: usize) {
        let mut k = 0;
        while k < self.nodes[n].conns.len() {
            let c = &mut self.nodes[n].conns[k];
            if let Some((status, session, msgs, used)) = parse_response(&c.out) {
                let (rid, principal) = (c.req, c.principal);
                c.out.drain(..used);
                assert!(c.out.is_empty(), "a second response on a connection: {:?}", lossy(&c.out));
                c.done = true;
                self.response(n, rid, principal, status, session, &msgs);
            }
            let c = &self.nodes[n].conns[k];
            if c.done {
                let id = c.id;
                self.nodes[n].e.handle_closed(self.now, id);
                self.auth.remove(&(n, id));
                self.nodes[n].conns.remove(k);
            } else {
                k += 1;
            }
        }
    }

    fn response(
        &mut self,
        n: usize,
        rid: u64,
        principal: usize,
        status: u16,
        session: Option<String>,
        msgs: &[Value],
    ) {
        if rid == 0 {
            // An `initialize`: its session; `tasks.list` offered to a principal only.
            if status == 200 {
                if let Some(tasks) = msgs.first().map(|m| &m["result"]["capabilities"]["tasks"])
                    && tasks.is_object()
                {
                    let listed = tasks.get("list").is_some();
                    assert_eq!(listed, !self.anon[principal], "tasks.list offered: {msgs:?}");
                }
                self.nodes[n].sessions[principal] = session;
            }
            return;
        }
        let Some(req) = self.reqs.get_mut(&rid) else { return };
        req.answers += 1;
        assert_eq!(req.answers, 1, "request {rid} answered twice");
        let kind = req.kind.clone();
        let asked_in = req.session.clone();
        let answer = msgs
            .iter()
            .find(|m| m.get("id").and_then(Value::as_u64) == Some(rid) && m.get("method").is_none());
        match (status, answer) {
            (200, Some(_)) => {}
            (503, _) => return,
            // Out of lookups of task ids this node does not hold.
            (429, Some(a)) if a["error"]["code"] == -32010 => return,
            // A method the revision lacks (or `tasks/list` not offered to an anonymous
            // caller's session).
            (404, Some(a)) if a["error"]["code"] == -32601 => return,
            // The session is gone (it expired, or its node restarted).
            (404, a)
                if !matches!(kind, Kind::Call { modern: true })
                    && a.is_none_or(|a| a["error"]["code"] == -32001) =>
            {
                self.nodes[n].sessions[principal] = None;
                return;
            }
            _ => panic!("request {rid}: status {status}: {msgs:?}"),
        }
        let Some(answer) = answer else { unreachable!() };
        assert!(answer.get("result").is_some() != answer.get("error").is_some(), "{answer}");
        let result = &answer["result"];
        match kind {
            Kind::Call { modern } => {
                let id = if modern { result["taskId"].as_str() } else { result["task"]["taskId"].as_str() };
                if let Some(id) = id
                    && !self.tasks.iter().any(|t| t.id == id)
                {
                    self.tasks.push(Known {
                        id: id.to_owned(),
                        modern,
                        by: principal,
                        session: asked_in.filter(|_| !modern),
                    });
                    if self.digests[principal].is_none()
                        && let Some(d) = self.store.principal_of.get(id)
                    {
                        self.digests[principal] = Some(*d);
                    }
                }
            }
            Kind::Get(id) => {
                if let Some(status) = result["status"].as_str() {
                    assert_eq!(result["taskId"].as_str(), Some(id.as_str()), "{answer}");
                    self.check_visible(&id, principal, asked_in.as_deref(), answer);
                    let view = &mut self.nodes[n].view;
                    if let Some(before) = view.get(&id) {
                        assert!(
                            task_status_may_follow(before, status),
                            "task {id} on node {n}: {before} then {status}: {answer}"
                        );
                    }
                    view.insert(id, status.to_owned());
                }
            }
            Kind::Touch(id) => {
                // Found: a result, a task, or an error other than "not found" (`-32602`,
                // which a cancelled task's result and a finished task's cancel are too).
                if answer.get("result").is_some() || answer["error"]["code"] != -32602 {
                    self.check_visible(&id, principal, asked_in.as_deref(), answer);
                }
            }
            Kind::List { mut seen } => {
                let Some(tasks) = result["tasks"].as_array() else { return };
                assert!(!self.anon[principal], "a tasks/list answered to an anonymous caller: {answer}");
                let mine = self.digests[principal];
                for t in tasks {
                    let id = t["taskId"]
                        .as_str()
                        .unwrap_or_else(|| panic!("a listed task without an id: {answer}"));
                    assert!(!seen.iter().any(|s| s == id), "task {id} listed twice in one walk: {answer}");
                    if let Some(t) = self.tasks.iter().find(|t| t.id == id) {
                        assert!(!t.modern, "a 2026-07-28 task listed: {answer}");
                        assert_eq!(t.by, principal, "another principal's task listed: {answer}");
                    }
                    if let Some(d) = self.store.principal_of.get(id) {
                        if let Some(mine) = mine {
                            assert_eq!(*d, mine, "another principal's task {id} listed: {answer}");
                        }
                        let theirs = self.digests[1 - principal];
                        assert!(
                            theirs != Some(*d) || mine == Some(*d),
                            "another principal's task {id}: {answer}"
                        );
                    }
                    seen.push(id.to_owned());
                }
                if let Some(c) = result["nextCursor"].as_str() {
                    self.cursors.push((c.to_owned(), seen));
                    if self.cursors.len() > 16 {
                        self.cursors.remove(0);
                    }
                }
            }
        }
    }

    /// Checks that task `id`, found for caller `by` in `session`, is that caller's: made by
    /// the same principal, or, by an anonymous caller, under `2026-07-28` (bound to no
    /// session) or in that very session.
    fn check_visible(&self, id: &str, by: usize, session: Option<&str>, answer: &Value) {
        let Some(t) = self.tasks.iter().find(|t| t.id == id) else { return };
        let who = |p: usize| (!self.anon[p]).then_some(PRINCIPALS[p]);
        assert_eq!(who(t.by), who(by), "task {id} found for another principal: {answer}");
        if who(by).is_none() && !t.modern {
            assert_eq!(t.session.as_deref(), session, "task {id} found from another session: {answer}");
        }
    }

    /// Sends `raw` to node `n` on a new connection, as `principal`, split at `splits`.
    fn send(&mut self, n: usize, principal: usize, rid: u64, raw: &[u8], splits: &[usize]) {
        let Ok(id) = self.nodes[n].e.open(self.now, None) else {
            if let Some(r) = self.reqs.get_mut(&rid) {
                r.lost = true;
            }
            return;
        };
        self.auth.insert((n, id), principal);
        self.nodes[n].conns.push(Conn { id, principal, req: rid, out: Vec::new(), done: false });
        let mut fed = 0;
        let mut cuts: Vec<usize> = splits.iter().map(|s| s % (raw.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(raw.len());
        for cut in cuts {
            while fed < cut {
                let took = self.nodes[n].e.handle_input(self.now, id, &raw[fed..cut]);
                fed += took;
                self.pump(n);
                if took == 0 {
                    break;
                }
            }
        }
        // Whatever it did not take waits (the store holds the request); feed it later.
        if fed < raw.len() {
            let rest = raw[fed..].to_vec();
            for _ in 0..4 {
                if !self.nodes[n].conns.iter().any(|c| c.id == id) {
                    break;
                }
                let took = self.nodes[n].e.handle_input(self.now, id, &rest[..]);
                self.pump(n);
                if took > 0 {
                    break;
                }
            }
        }
    }

    fn request(
        &mut self,
        b: &mut Bytes<'_>,
        (n, principal, modern): (usize, usize, bool),
        method: &str,
        mut params: Value,
        kind: Kind,
    ) {
        let session = if modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } }
            });
            None
        } else {
            match self.session(n, principal) {
                Some(s) => Some(s),
                None => return,
            }
        };
        let rid = self.next_id;
        self.next_id += 1;
        self.reqs
            .insert(rid, Req { node: n, principal, kind, answers: 0, lost: false, session: session.clone() });
        let body = json!({ "jsonrpc": "2.0", "id": rid, "method": method, "params": params });
        let raw = post(&body, modern, session.as_deref());
        let splits: Vec<usize> = (0..b.below(3)).map(|_| usize::from(b.u16())).collect();
        self.send(n, principal, rid, &raw, &splits);
    }

    /// The `2025-11-25` session of `principal` on node `n`, opened if need be.
    fn session(&mut self, n: usize, principal: usize) -> Option<String> {
        if self.nodes[n].sessions[principal].is_none() {
            let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "f", "version": "0" } } });
            self.send(n, principal, 0, &post(&init, false, None), &[]);
            let s = self.nodes[n].sessions[principal].clone()?;
            let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
            self.send(n, principal, 0, &post(&done, false, Some(&s)), &[]);
        }
        self.nodes[n].sessions[principal].clone()
    }

    fn pick_task(&self, b: &mut Bytes<'_>) -> String {
        match b.below(self.tasks.len() + 2) {
            i if i < self.tasks.len() => self.tasks[i].id.clone(),
            i if i == self.tasks.len() => "AAAAAAAAAAAAAAAAAAAAAA".to_owned(),
            _ => {
                // A known id with one character changed, or a random one.
                let mut id =
                    self.tasks.first().map_or_else(|| "QUJDREVGR0hJSktMTU5PUA".to_owned(), |t| t.id.clone());
                let at = b.below(id.len());
                let c = b.pick(&['A', 'B', '_', '-', 'z', '0']);
                id.replace_range(at..=at, &c.to_string());
                id
            }
        }
    }

    fn advance(&mut self, d: Duration) {
        self.now = self.now + d;
        for n in 0..self.nodes.len() {
            self.nodes[n].e.handle_timeout(self.now);
            self.pump(n);
        }
    }

    fn release(&mut self, i: usize) {
        let now = self.now;
        let held = self.store.held.remove(i);
        let (n, generation) = match &held {
            Held::Save { node, generation, .. }
            | Held::Load { node, generation, .. }
            | Held::List { node, generation, .. } => (*node, *generation),
        };
        if self.nodes[n].generation != generation {
            return;
        }
        match held {
            Held::Save { id, rev, record, created, .. } => {
                let ok = self.store.save(n, &id, rev, &record, created);
                self.nodes[n].e.task_saved(now, &id, rev, ok);
            }
            Held::Load { id, .. } => answer_load(&mut self.nodes[n].e, now, &self.store, &id),
            Held::List { query, principal, after, limit, .. } => {
                answer_list(&mut self.nodes[n].e, now, &self.store, query, principal, &after, limit)
            }
        }
        self.pump(n);
    }

    fn deliver(&mut self, notice: (usize, String), to: Option<usize>) {
        for n in 0..self.nodes.len() {
            if n != notice.0 && to.is_none_or(|t| t == n) {
                self.nodes[n].e.task_changed_elsewhere(self.now, notice.1.as_bytes());
                self.pump(n);
            }
        }
    }

    fn restart(&mut self, n: usize) {
        let conns = core::mem::take(&mut self.nodes[n].conns);
        for c in conns {
            if let Some(r) = self.reqs.get_mut(&c.req) {
                r.lost |= r.answers == 0;
            }
            self.auth.remove(&(n, c.id));
        }
        let generation = self.nodes[n].generation + 1;
        self.nodes[n] = Node {
            e: engine(n, generation, self.seed, self.now),
            generation,
            conns: Vec::new(),
            sessions: [None, None],
            tickets: Vec::new(),
            view: HashMap::new(),
        };
    }

    fn host(&mut self, b: &mut Bytes<'_>, n: usize, how: u8) {
        if self.nodes[n].tickets.is_empty() {
            return;
        }
        let i = b.below(self.nodes[n].tickets.len());
        let t = self.nodes[n].tickets[i];
        let e = &mut self.nodes[n].e;
        let schema = serde_json::value::to_raw_value(&json!({ "type": "object" })).unwrap_or_default();
        let done = match how % 4 {
            0 => e.answer_tool(t, &ToolOutput::new(&[Content::text("done")])).is_ok(),
            1 => e.answer_error(t, HostError::Internal("failed")).is_ok(),
            2 => {
                let k = 1 + b.below(KEYS.len());
                let requests: Vec<InputRequest<'_>> =
                    KEYS[..k].iter().map(|k| InputRequest::elicit(k, "?", &schema)).collect();
                e.answer_input_required(t, &InputRequired::new(&requests)).is_ok()
            }
            _ => {
                let _ = e.task_status(t, Some("busy"));
                false
            }
        };
        if done {
            self.nodes[n].tickets.retain(|x| *x != t);
        }
        self.pump(n);
    }
}

/// Runs the operations `data` encodes.
pub fn task_store(data: &[u8]) {
    if data.len() > 4096 {
        return;
    }
    let mut b = Bytes::new(data);
    let first = b.u8();
    let count = 2 + usize::from(first & 1);
    // Who the two callers are: two principals, a principal and an anonymous caller, or two
    // anonymous callers.
    let anon = match (first >> 1) & 3 {
        0 | 1 => [false, false],
        2 => [false, true],
        _ => [true, true],
    };
    let seed = b.u8();
    let nodes = (0..count)
        .map(|n| Node {
            e: engine(n, 0, seed, Instant::ZERO),
            generation: 0,
            conns: Vec::new(),
            sessions: [None, None],
            tickets: Vec::new(),
            view: HashMap::new(),
        })
        .collect();
    let mut h = Harness {
        nodes,
        store: Store::default(),
        now: Instant::ZERO,
        seed,
        next_id: 1,
        reqs: HashMap::new(),
        tasks: Vec::new(),
        digests: [None, None],
        cursors: Vec::new(),
        make_task: true,
        auth: HashMap::new(),
        anon,
    };
    for _ in 0..MAX_OPS {
        if b.is_empty() {
            break;
        }
        let op = b.u8();
        let n = b.below(count);
        let principal = usize::from(op >> 7);
        match op & 0x0f {
            0 | 1 => {
                h.make_task = op & 0x10 == 0;
                let modern = op & 0x20 == 0;
                let tool = b.pick(&["slow", "must"]);
                let mut params = json!({ "name": tool, "arguments": {} });
                if !modern && op & 0x40 == 0 {
                    params["task"] = json!({ "ttl": 1000 * u64::from(b.u8()) });
                }
                h.request(&mut b, (n, principal, modern), "tools/call", params, Kind::Call { modern });
            }
            2 | 3 => {
                let id = h.pick_task(&mut b);
                h.request(
                    &mut b,
                    (n, principal, op & 0x20 == 0),
                    "tasks/get",
                    json!({ "taskId": id }),
                    Kind::Get(id.clone()),
                );
            }
            4 => {
                let id = h.pick_task(&mut b);
                let mut responses = serde_json::Map::new();
                for _ in 0..b.below(3) {
                    let value = match b.below(3) {
                        0 => json!({ "action": "accept", "content": {} }),
                        1 => json!({ "action": "decline" }),
                        _ => json!(b.u8()),
                    };
                    responses.insert(b.pick(&KEYS).to_owned(), value);
                }
                let params = json!({ "taskId": id, "inputResponses": responses });
                h.request(&mut b, (n, principal, op & 0x20 == 0), "tasks/update", params, Kind::Touch(id));
            }
            5 => {
                let id = h.pick_task(&mut b);
                h.request(
                    &mut b,
                    (n, principal, op & 0x20 == 0),
                    "tasks/cancel",
                    json!({ "taskId": id }),
                    Kind::Touch(id.clone()),
                );
            }
            6 => {
                let id = h.pick_task(&mut b);
                h.request(
                    &mut b,
                    (n, principal, false),
                    "tasks/result",
                    json!({ "taskId": id }),
                    Kind::Touch(id.clone()),
                );
            }
            7 => {
                let (params, seen) = match b.below(h.cursors.len() + 2) {
                    i if i < h.cursors.len() => {
                        let (c, seen) = h.cursors[i].clone();
                        (json!({ "cursor": c }), seen)
                    }
                    i if i == h.cursors.len() => (json!({}), Vec::new()),
                    _ => {
                        let mut c =
                            h.cursors.first().map_or_else(|| "bm90LWEtY3Vyc29y".to_owned(), |c| c.0.clone());
                        let at = b.below(c.len());
                        c.replace_range(at..=at, if c.as_bytes()[at] == b'A' { "B" } else { "A" });
                        (json!({ "cursor": c }), Vec::new())
                    }
                };
                h.request(
                    &mut b,
                    (n, principal, op & 0x60 == 0x60),
                    "tasks/list",
                    params,
                    Kind::List { seen },
                );
            }
            8 | 9 => h.host(&mut b, n, op >> 4),
            10 => match (op >> 4) & 7 {
                0 => h.store.fail = !h.store.fail,
                1 => h.store.hold = !h.store.hold,
                2 => h.store.refuse = h.store.refuse.saturating_add(1),
                3 => h.store.drop_notices = !h.store.drop_notices,
                4 => h.store.careless = !h.store.careless,
                _ => {
                    h.store.fail = false;
                    h.store.hold = false;
                    h.store.refuse = 0;
                }
            },
            11 => {
                // Release held answers: one, or all in a fuzz-chosen order.
                if op & 0x10 == 0 {
                    if !h.store.held.is_empty() {
                        let i = b.below(h.store.held.len());
                        h.release(i);
                    }
                } else {
                    while !h.store.held.is_empty() {
                        let i = b.below(h.store.held.len());
                        h.release(i);
                    }
                }
            }
            12 => match (op >> 4) & 3 {
                0 | 1 => {
                    if !h.store.notices.is_empty() {
                        let i = b.below(h.store.notices.len());
                        let notice = h.store.notices.remove(i);
                        let to = if op & 0x20 == 0 { None } else { Some(n) };
                        h.deliver(notice, to);
                    }
                }
                2 => h.store.notices.clear(),
                _ => {
                    h.nodes[n].e.tasks_changed_elsewhere(h.now);
                    h.pump(n);
                }
            },
            13 | 14 => {
                let d = match (op >> 4) & 3 {
                    0 => Duration::from_millis(u64::from(b.u8()) * 10),
                    1 => Duration::from_secs(u64::from(b.u8() % 16)),
                    2 => Duration::from_secs(41),
                    _ => Duration::from_secs(61),
                };
                h.advance(d);
            }
            _ => h.restart(n),
        }
    }
    finish(&mut h);
}

/// Ends the run: the store mends and answers everything held, the notices are heard,
/// the host answers what it holds, every timer runs out; then the checks.
fn finish(h: &mut Harness) {
    h.store.fail = false;
    h.store.hold = false;
    h.store.refuse = 0;
    while !h.store.held.is_empty() {
        h.release(0);
    }
    for n in 0..h.nodes.len() {
        h.nodes[n].e.tasks_changed_elsewhere(h.now);
        h.pump(n);
        for t in core::mem::take(&mut h.nodes[n].tickets) {
            let _ = h.nodes[n].e.answer_tool(t, &ToolOutput::new(&[Content::text("late")]));
        }
        h.pump(n);
    }
    for _ in 0..8 {
        h.advance(Duration::from_secs(30));
        while !h.store.held.is_empty() {
            h.release(0);
        }
    }
    h.advance(Duration::from_secs(3600));
    let mut unanswered = Vec::new();
    for (rid, r) in &h.reqs {
        if !r.lost && r.answers != 1 {
            unanswered.push((*rid, r.node, r.principal, r.answers));
        }
    }
    assert!(
        unanswered.is_empty(),
        "requests not answered once (id, node, principal, answers): {unanswered:?}"
    );
    for (id, (_, record, _)) in &h.store.records {
        assert!(mcp_engine::internal::task_record_decodes(record), "the record of {id} does not decode");
    }
}
