//! The host's task store, sans-IO ([`HttpConfig::task_store`]): the engine hands out a
//! task's record when it is created and whenever it changes ([`StoreEvent::SaveTask`]),
//! holds the response that shows a task (its handle, a `tasks/*` answer) until the store
//! has the state it shows, asks for a task a `tasks/*` request names that it does not
//! hold ([`StoreEvent::LoadTask`]), and tells the host of the tasks it expired
//! ([`StoreEvent::TaskExpired`]), and lists the caller's tasks from the store for a
//! `2025-11-25` `tasks/list` ([`StoreEvent::ListTasks`]). The table's side (revisions, copies, merges) is
//! `mcp/tasks/store.rs`; the record is `mcp/tasks/record.rs`'s.
//!
//! A response held for a task waits in [`Phase::Saving`] like one held for a session,
//! bounded by [`HttpConfig::store_timeout`]; a request waiting for a record waits in
//! [`Phase::Loading`]. A store that fails or does not answer in time makes the request
//! `503` with `Retry-After`; a task whose creation was not saved is undone (the host's
//! work is cancelled), so no client holds the id of a task the store never had.
//!
//! What a lookup of an id this engine does not hold may cost is bounded (`task_misses`):
//! an id the store just said it does not hold is not asked for again for a while, and a
//! client's lookups that serve it nothing are counted against a rate
//! ([`HttpConfig::task_load_misses`]; past it, `429`). A `tasks/list` of a caller without
//! a principal never asks the store (the core does not offer it such a caller).

use std::collections::VecDeque;

use crate::http::auth::client::ClientKey;
use crate::http::auth::limits;
use crate::http::conn::conns;
use crate::http::conn::exchange::{Phase, Saving, respond_json};
use crate::http::store::StoreEvent;
use crate::http::store::session_store::Loaded;
use crate::http::store::task_misses::{Budget, Missing};
use crate::http::{ConnId, HttpConfig, HttpEngine, conn_in};
use crate::mcp::facts::NamedTask;
use crate::mcp::tasks::TASK_ID_LEN;
use crate::mcp::tasks::listing::{Query, Row};
use crate::mcp::tasks::store::Save;
use crate::mcp::tickets::Ticket;
use crate::output::Route;
use crate::time::{Instant, UnixTime};

/// A task was created or changed ([`StoreEvent::SaveTask`]): store `record` under `id`
/// unless the store holds a revision of it at or above `revision` (then the save fails:
/// another node wrote it meanwhile), and answer with [`HttpEngine::task_saved`]. The
/// response that shows the change waits until then.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SaveTask<'a> {
    /// The task id (the store's key).
    pub id: &'a str,
    /// The record's revision: 1 when created, one more with each save.
    pub revision: u64,
    /// The record (versioned; see `docs/decisions.md`, "The task record").
    pub record: &'a [u8],
    /// The digest of the principal that created it (`None`: anonymous), for a store
    /// that indexes tasks by principal.
    pub principal: Option<&'a [u8; 32]>,
    /// When the task was created (wall clock, its `createdAt`): with the id, what a
    /// store orders a principal's tasks by ([`StoreEvent::ListTasks`]). The same in every
    /// save of a task.
    pub created: UnixTime,
    /// When the task's TTL ends (wall clock): the store may delete it from then on.
    pub expires: UnixTime,
}

/// A `tasks/*` request names a task this engine does not hold ([`StoreEvent::LoadTask`]),
/// or another node changed a task this engine runs: look `id` up in the store and answer
/// with [`HttpEngine::task_loaded`]. Only well-formed ids get here (22 characters of
/// base64url, as the engine writes them): anything else is not found without asking.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LoadTask<'a> {
    /// The task id.
    pub id: &'a str,
}

/// This engine deleted task `id` at its TTL ([`StoreEvent::TaskExpired`]); nothing waits
/// for an answer. The store may delete it (its record's TTL has passed on every node).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct TaskExpired<'a> {
    /// The task id.
    pub id: &'a str,
}

/// A task's place in a principal's tasks as a store orders them for
/// [`StoreEvent::ListTasks`]: by `created`, then by `id` (byte order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskPosition<'a> {
    /// When the task was created ([`SaveTask::created`]).
    pub created: UnixTime,
    /// The task id.
    pub id: &'a str,
}

/// Names a [`ListTasks`] question, for its answer ([`HttpEngine::tasks_listed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskQuery(ConnId);

/// A `2025-11-25` `tasks/list` waits for the store ([`StoreEvent::ListTasks`]): answer
/// with [`HttpEngine::tasks_listed`] and up to `limit` of the tasks saved with
/// `principal` ([`SaveTask::principal`]; `None`: those saved without one) whose TTL has
/// not ended, ordered by [`TaskPosition`] (`created`, then id), starting after `after`
/// (from the first when `None`). Every save of a task carries the same principal and
/// `created`, so the order is stable across pages and nodes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ListTasks<'a> {
    /// The question's name, for the answer.
    pub query: TaskQuery,
    /// The digest of the caller's principal (`None`: anonymous).
    pub principal: Option<&'a [u8; 32]>,
    /// The position the page starts after.
    pub after: Option<TaskPosition<'a>>,
    /// The most tasks to return (the engine shows one fewer: the last tells it whether
    /// there is a next page).
    pub limit: usize,
}

/// One task in a store's answer to [`ListTasks`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct TaskRow<'a> {
    /// The task id.
    pub id: &'a str,
    /// When it was created, as its saves said ([`SaveTask::created`]).
    pub created: UnixTime,
    /// Its record, as last saved.
    pub record: &'a [u8],
}

impl<'a> TaskRow<'a> {
    /// A row: task `id`, created at `created`, its `record`.
    pub fn new(id: &'a str, created: UnixTime, record: &'a [u8]) -> Self {
        Self { id, created, record }
    }
}

/// A response held until the store has the task state it shows.
#[derive(Debug, Clone, Copy)]
struct Wait {
    conn: ConnId,
    ticket: Ticket,
    changes: u64,
    /// The response is the task's handle: should the save fail, the task is undone.
    created: bool,
}

/// The HTTP layer's state for a task store.
#[derive(Default)]
pub(in crate::http) struct TaskIo {
    /// The record and ids the last event lends.
    record: Vec<u8>,
    id: [u8; TASK_ID_LEN],
    principal: [u8; 32],
    save: Option<Save>,
    /// Ids to ask the store for, and those asked and not yet answered.
    loads: VecDeque<[u8; TASK_ID_LEN]>,
    asking: Vec<[u8; TASK_ID_LEN]>,
    /// Requests waiting for a record (until they are dispatched).
    loading: Vec<(ConnId, [u8; TASK_ID_LEN])>,
    /// Responses held for a save.
    waits: Vec<Wait>,
    /// `tasks/list` requests to ask the store for, and those asked and not yet answered.
    lists: VecDeque<(ConnId, Query)>,
    listing: Vec<(ConnId, Query)>,
    /// The position the last [`ListTasks`] lends.
    after: [u8; TASK_ID_LEN],
    /// This engine's boot id, once its entropy is known.
    boot: Option<[u8; 16]>,
    /// Ids the store said lately it does not hold.
    missing: Missing,
    /// Store lookups per client that served it nothing (set with the store).
    budget: Option<Budget>,
    /// Requests whose lookup took a token of their client's, until they are served (the
    /// token comes back if they are served one of the caller's tasks).
    charged: Vec<(ConnId, Option<ClientKey>)>,
}

/// The boot id of an engine: 16 bytes drawn from its entropy under a label.
fn boot_id(entropy: &[u8; 32]) -> [u8; 16] {
    use hmac::{KeyInit, Mac};
    let mut m =
        <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(entropy).unwrap_or_else(|_| unreachable!());
    m.update(b"mcp-engine/boot-id");
    let mut id = [0u8; 16];
    id.copy_from_slice(&m.finalize().into_bytes()[..16]);
    id
}

/// What to do with a `tasks/*` request before it is served.
enum Step {
    /// Serve it now (nothing to ask, or the answer is known: "not found").
    Serve,
    /// Ask the store for the task it names.
    Load([u8; TASK_ID_LEN]),
    /// Ask the store for a page of the caller's tasks (the cursor, if any).
    List(Option<String>),
    /// Refuse it: its client is out of lookups (retry after, in seconds; the refusal is
    /// written).
    Refuse(u64),
}

impl HttpEngine {
    /// Draws the boot id from `entropy`, and turns the task store on if
    /// [`HttpConfig::task_store`] says so.
    pub(in crate::http) fn start_task_store(&mut self, entropy: &[u8; 32]) {
        self.task_io.boot = Some(boot_id(entropy));
        self.enable_task_store();
    }

    fn enable_task_store(&mut self) {
        let HttpConfig { task_store, node_name, task_lease, task_load_misses: (count, per), .. } = &self.http;
        match (*task_store, self.task_io.boot) {
            (true, Some(boot)) if !self.core.task_store_attached() => {
                self.core.task_store().enable(node_name, boot, *task_lease);
                self.task_io.budget = Some(Budget::new(*count, *per));
            }
            (false, _) => self.core.task_store().detach(),
            _ => {}
        }
    }

    /// Turns the task store on or off, as [`HttpConfig::task_store`] would (for an
    /// adapter given a store after the engine was built); set it before serving.
    pub fn set_task_store(&mut self, on: bool) {
        self.http.task_store = on;
        self.enable_task_store();
    }

    /// Another node may have changed any task without this engine hearing of it (the
    /// host's notices from a shared store were lost): every task this engine runs, and
    /// every copy a `tasks/result` waits on, is read again from the store, as
    /// [`task_changed_elsewhere`](Self::task_changed_elsewhere) does for one. Returns how
    /// many. Scans the task table.
    pub fn tasks_changed_elsewhere(&mut self, now: Instant) -> usize {
        self.tick(now);
        let mut ids: Vec<[u8; TASK_ID_LEN]> = Vec::new();
        self.core.task_store().followed_ids(|id| ids.push(*id));
        for id in &ids {
            self.ask_task(id);
        }
        ids.len()
    }

    /// Whether a task store event is ready ([`task_store_event`](Self::task_store_event)
    /// lends it): an expiry, a load, then a save.
    pub(in crate::http) fn task_store_ready(&mut self) -> bool {
        if !self.core.task_store_attached() {
            return false;
        }
        for id in self.core.task_store().take_rereads() {
            self.ask_task(&id);
        }
        if self.core.task_store().has_expired()
            || !self.task_io.loads.is_empty()
            || !self.task_io.lists.is_empty()
        {
            return true;
        }
        self.task_io.save = self.core.task_store().next_save(&mut self.task_io.record);
        self.task_io.save.is_some()
    }

    /// The event [`task_store_ready`](Self::task_store_ready) found.
    pub(in crate::http) fn task_store_event(&mut self) -> Option<StoreEvent<'_>> {
        let io = &mut self.task_io;
        if let Some(id) = self.core.task_store().pop_expired() {
            io.id = id;
            let id = core::str::from_utf8(&io.id).unwrap_or_default();
            return Some(StoreEvent::TaskExpired(TaskExpired { id }));
        }
        if let Some(id) = io.loads.pop_front() {
            io.asking.push(id);
            io.id = id;
            let id = core::str::from_utf8(&io.id).unwrap_or_default();
            return Some(StoreEvent::LoadTask(LoadTask { id }));
        }
        if let Some((conn, q)) = io.lists.pop_front() {
            io.listing.push((conn, q));
            if let Some(p) = q.principal {
                io.principal = p;
            }
            if let Some(a) = q.after {
                io.after = a.id;
            }
            let after = q.after.map(|a| TaskPosition {
                created: UnixTime::from_micros(a.created),
                id: core::str::from_utf8(&io.after).unwrap_or_default(),
            });
            return Some(StoreEvent::ListTasks(ListTasks {
                query: TaskQuery(conn),
                principal: q.principal.map(|_| &io.principal),
                after,
                limit: q.page.saturating_add(1),
            }));
        }
        let save = io.save.take()?;
        io.id = save.id;
        if let Some(p) = save.principal {
            io.principal = p;
        }
        Some(StoreEvent::SaveTask(SaveTask {
            id: core::str::from_utf8(&io.id).unwrap_or_default(),
            revision: save.revision,
            record: &io.record,
            principal: save.principal.map(|_| &io.principal),
            created: UnixTime::from_micros(save.created),
            expires: UnixTime::from_micros(save.expires),
        }))
    }

    /// Answers a [`SaveTask`]: `saved` releases the responses that waited for it; a
    /// failure makes them `503` with `Retry-After` and undoes a task whose creation it
    /// was. A task this engine runs whose save failed is read again from the store
    /// ([`StoreEvent::LoadTask`]: another node may have written it) and saved again. An
    /// answer for a save that is not out is ignored.
    pub fn task_saved(&mut self, now: Instant, id: &str, revision: u64, saved: bool) {
        self.tick(now);
        let now = self.last_now;
        let retry = self.http.store_timeout;
        let Some((ticket, owned)) =
            self.core.task_store().save_answered(id.as_bytes(), revision, saved, retry)
        else {
            return;
        };
        let mut i = 0;
        while i < self.task_io.waits.len() {
            let w = self.task_io.waits[i];
            let done =
                w.ticket == ticket && (!saved || self.core.task_store().saved_up_to(ticket, w.changes));
            if !done {
                i += 1;
                continue;
            }
            self.task_io.waits.swap_remove(i);
            if saved {
                self.release(w.conn);
                continue;
            }
            if w.created {
                self.core.task_store().undo(ticket);
            }
            if conn_in(&mut self.slots, w.conn).is_some_and(|c| c.phase == Phase::Saving) {
                self.store_failed(w.conn.slot, now);
            }
        }
        if owned && self.core.task_store().holds(ticket) {
            self.ask_task(id.as_bytes());
        }
        self.drop_copies();
        self.process();
    }

    /// Answers a [`LoadTask`]: the requests that waited go on with the record (a task
    /// another node runs is served from it; one whose owner is gone reads as `failed`),
    /// or find no task (`-32602`) when the store holds none (or a record this engine
    /// cannot read), or are answered `503` with `Retry-After` when the store is
    /// unavailable or the task table is full. For a task this engine runs (read again
    /// after [`task_changed_elsewhere`](Self::task_changed_elsewhere) or a failed save),
    /// what the other node wrote joins it: a cancellation cancels the host's work, the
    /// client's answers bring the call back to the host once complete.
    pub fn task_loaded(&mut self, now: Instant, id: &str, found: Loaded<'_>) {
        self.tick(now);
        let now = self.last_now;
        let Ok(key) = <[u8; TASK_ID_LEN]>::try_from(id.as_bytes()) else { return };
        let Some(at) = self.task_io.asking.iter().position(|a| *a == key) else { return };
        self.task_io.asking.swap_remove(at);
        if matches!(found, Loaded::Missing) {
            self.task_io.missing.note(key, now);
        }
        let held = self.core.task_store().ticket_of(&key);
        let mut unavailable = matches!(found, Loaded::Unavailable);
        match (held, found) {
            (Some(t), Loaded::Record(bytes)) if self.core.task_store().runs(t) => {
                self.core.task_store().merge(t, bytes);
            }
            (Some(t), Loaded::Record(bytes)) => {
                // A copy requests wait on: they are answered once it has ended.
                self.core.task_store().refresh_copy(t, bytes);
            }
            (None, Loaded::Record(bytes))
                if self.core.task_store().restore(bytes)
                    == Err(crate::mcp::tasks::store::RestoreError::Full) =>
            {
                unavailable = true;
            }
            _ => {}
        }
        // What a merge or a refreshed copy answered (waiting `tasks/result` requests, a
        // status notification) goes out now.
        self.collect_answers();
        let mut i = 0;
        while i < self.task_io.loading.len() {
            let (conn, wanted) = self.task_io.loading[i];
            if wanted != key {
                i += 1;
                continue;
            }
            let Some(c) = conn_in(&mut self.slots, conn).filter(|c| c.phase == Phase::Loading) else {
                self.task_io.loading.swap_remove(i);
                continue;
            };
            i += 1;
            if unavailable {
                self.store_failed(conn.slot, now);
                continue;
            }
            c.phase = Phase::Ready;
            c.deadline = None;
            self.work.push_back(conn.slot);
            self.settle(conn.slot);
        }
        self.process();
        self.drop_copies();
    }

    /// Answers a [`ListTasks`]: `Some(rows)` the store's tasks for it (at most its
    /// `limit`, in its order), with which the `tasks/list` request is served; `None` when
    /// the store is unavailable (the request is answered `503` with `Retry-After`). Rows
    /// this engine cannot read, of another principal, or past their TTL are left out; a
    /// task this engine holds is shown as it is here. An answer to a question not asked,
    /// or whose request is gone, is ignored.
    pub fn tasks_listed(&mut self, now: Instant, query: TaskQuery, rows: Option<&[TaskRow<'_>]>) {
        self.tick(now);
        let now = self.last_now;
        let TaskQuery(conn) = query;
        let Some(at) = self.task_io.listing.iter().position(|(c, _)| *c == conn) else { return };
        let (_, q) = self.task_io.listing.swap_remove(at);
        if !conn_in(&mut self.slots, conn).is_some_and(|c| c.phase == Phase::Loading) {
            return;
        }
        let Some(rows) = rows else {
            self.store_failed(conn.slot, now);
            self.process();
            return;
        };
        let route = Route::Http { conn: conn.slot, generation: conn.generation };
        let mut read = Vec::with_capacity(rows.len());
        read.extend(rows.iter().map(|r| Row { id: r.id, created: r.created.as_micros(), record: r.record }));
        self.core.task_store().page(route, &q, &read);
        if let Some(c) = conn_in(&mut self.slots, conn) {
            c.phase = Phase::Ready;
            c.deadline = None;
        }
        self.work.push_back(conn.slot);
        self.settle(conn.slot);
        self.process();
    }

    /// Another node changed task `id` (a shared store said so): if this engine runs it,
    /// it reads the record again ([`StoreEvent::LoadTask`], answered with
    /// [`task_loaded`](Self::task_loaded)) and takes what the other node wrote (the
    /// client's answers, a cancellation); if `2025-11-25` `tasks/result` requests wait
    /// here on a copy of it, the copy is read again and they are answered once the task
    /// has ended (they wait on otherwise). Returns whether it asked the store.
    pub fn task_changed_elsewhere(&mut self, now: Instant, id: &[u8]) -> bool {
        self.tick(now);
        let follows = self.core.task_store().follows_id(id);
        if follows {
            self.ask_task(id);
        }
        follows
    }

    /// Asks the store for task `id` (once while a question about it is out).
    fn ask_task(&mut self, id: &[u8]) {
        let Ok(id) = <[u8; TASK_ID_LEN]>::try_from(id) else { return };
        if !self.task_io.asking.contains(&id) && !self.task_io.loads.contains(&id) {
            self.task_io.loads.push_back(id);
        }
    }

    /// Whether `slot`'s request names a task the store may hold (a well-formed id this
    /// engine does not hold, nor the store lately said it does not), or is a `tasks/list`
    /// of a caller with a principal; if so it waits for the store, asked once per request.
    /// A lookup of a client out of lookups (`task_misses`) is answered `429` here instead.
    pub(in crate::http) fn begin_task_load(&mut self, slot: u32) -> bool {
        let now = self.last_now;
        let deadline = now + self.http.store_timeout;
        let generation = self.slots[slot as usize].generation;
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return false };
        if c.task_loaded || c.get || c.delete || c.metadata {
            return false;
        }
        c.task_loaded = true;
        let (_, body, _) = c.codec.head_body_and_spans();
        if !body.windows(7).any(|w| w == b"\"tasks/") {
            return false;
        }
        let conn = ConnId { slot, generation };
        let principal = c.principal.as_ref().map(|p| p.0);
        let client = ClientKey::of(c.principal, c.client);
        let (core, io, refusal) = (&mut self.core, &mut self.task_io, &mut self.limit_body);
        let step = self.parser.peek(body, &mut self.peek, |p| {
            let n = p.ok()?;
            // What the request names, as the core decodes it; a task id of another
            // length is not found without asking.
            let facts = core.preview(n);
            let named = facts.task?;
            let id = match named {
                NamedTask::Task(id) => Some(<[u8; TASK_ID_LEN]>::try_from(id.as_bytes()).ok()?),
                NamedTask::List(_) => None,
            };
            Some(match (named, id) {
                (_, Some(id)) if !core.task_store().wants_load(&id) || io.missing.knows(&id, now) => {
                    Step::Serve
                }
                (_, Some(id)) => match io.budget.as_mut().map_or(Ok(()), |b| b.take(client, now)) {
                    Ok(()) => Step::Load(id),
                    Err(retry) => {
                        limits::write_refusal(refusal, facts.id, retry, limits::Refused::Rate);
                        Step::Refuse(retry)
                    }
                },
                // A cursor this engine did not seal for the caller is answered `-32602`
                // when the request is served, without asking the store; a caller without
                // a principal is not offered `tasks/list` (`-32601`).
                (NamedTask::List(Ok(cursor)), _) if principal.is_some() => {
                    Step::List(cursor.map(str::to_owned))
                }
                _ => Step::Serve,
            })
        });
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return false };
        match step {
            Some(Step::Load(id)) => {
                c.phase = Phase::Loading;
                c.deadline = Some(deadline);
                self.task_io.loading.push((conn, id));
                let slots = &mut self.slots;
                let charged = &mut self.task_io.charged;
                charged.retain(|(c, _)| conn_in(slots, *c).is_some_and(|x| x.phase == Phase::Loading));
                charged.push((conn, client));
                self.ask_task(&id);
                true
            }
            Some(Step::List(cursor)) => {
                let Some(q) = self.core.task_store().list_query(cursor.as_deref(), principal) else {
                    return false;
                };
                c.phase = Phase::Loading;
                c.deadline = Some(deadline);
                self.task_io.lists.push_back((conn, q));
                true
            }
            Some(Step::Refuse(retry)) => {
                conns::lend_out(&mut self.outs, c);
                c.refused = Some((limits::Refused::Rate.refusal(), 429));
                let retry = limits::retry_after_text(retry);
                respond_json(c, now, 429, &self.limit_body, &[("retry-after", retry)]);
                // The connection goes on with its next request, if any.
                self.work.push_back(slot);
                true
            }
            Some(Step::Serve) | None => false,
        }
    }

    /// After `slot`'s request was served: its response waits (from output byte `held`)
    /// if it shows a task whose state the store does not have yet.
    pub(in crate::http) fn hold_for_task(&mut self, slot: u32, held: usize) {
        if !self.core.task_store_attached() {
            return;
        }
        let touched = self.core.task_store().take_touched();
        self.task_io.loading.retain(|(c, _)| c.slot != slot);
        let generation = self.slots[slot as usize].generation;
        let io = &mut self.task_io;
        if let Some(at) = io.charged.iter().position(|(c, _)| c.slot == slot && c.generation == generation) {
            let (_, client) = io.charged.swap_remove(at);
            // The lookup served the caller one of its tasks: it cost the client nothing.
            if let (Some(_), Some(budget)) = (touched, io.budget.as_mut()) {
                budget.give_back(client);
            }
        }
        self.core.task_store().forget_page(Route::Http { conn: slot, generation });
        if let Some((t, changes)) = touched.and_then(|t| Some((t, self.core.task_store().needs_save(t)?))) {
            self.hold(slot, t, changes, false, held);
        }
        self.drop_copies();
    }

    /// A final answer was written on `route` from output byte `held`: if it is the
    /// handle of a task created just now, it waits until the store has the task.
    pub(in crate::http) fn hold_created(&mut self, route: Route, held: usize) {
        let Some(t) = self.core.task_store().take_fresh(route) else { return };
        let Route::Http { conn, .. } = route else { return };
        if let Some(changes) = self.core.task_store().needs_save(t) {
            self.hold(conn, t, changes, true, held);
        }
    }

    /// Forgets the tasks created in the pass whose answers were just collected.
    pub(in crate::http) fn forget_fresh(&mut self) {
        self.core.task_store().forget_fresh();
    }

    fn hold(&mut self, slot: u32, ticket: Ticket, changes: u64, created: bool, held: usize) {
        let deadline = self.last_now + self.http.store_timeout;
        let generation = self.slots[slot as usize].generation;
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return };
        if matches!(c.phase, Phase::Saving | Phase::Waiting | Phase::Loading) {
            return; // held for its session already, or not answered
        }
        c.saving = Some(Saving { session: None, changes: 0, created: false, then: c.phase, held });
        c.phase = Phase::Saving;
        c.deadline = Some(deadline);
        self.task_io.waits.push(Wait { conn: ConnId { slot, generation }, ticket, changes, created });
    }

    /// Sends the response held on `conn`.
    fn release(&mut self, conn: ConnId) {
        let Some(c) = conn_in(&mut self.slots, conn).filter(|c| c.phase == Phase::Saving) else { return };
        let Some(sv) = c.saving.take() else { return };
        c.phase = sv.then;
        c.deadline = None;
        self.work.push_back(conn.slot);
        self.settle(conn.slot);
    }

    /// `slot`'s wait for the store ended without an answer (timeout, failure): a task
    /// whose handle it held is undone.
    pub(in crate::http) fn task_wait_failed(&mut self, slot: u32) {
        if !self.core.task_store_attached() {
            return;
        }
        self.task_io.loading.retain(|(c, _)| c.slot != slot);
        self.task_io.charged.retain(|(c, _)| c.slot != slot);
        self.task_io.lists.retain(|(c, _)| c.slot != slot);
        self.task_io.listing.retain(|(c, _)| c.slot != slot);
        let mut i = 0;
        while i < self.task_io.waits.len() {
            let w = self.task_io.waits[i];
            if w.conn.slot != slot {
                i += 1;
                continue;
            }
            self.task_io.waits.swap_remove(i);
            if w.created {
                self.core.task_store().undo(w.ticket);
            }
        }
    }

    /// Drops the copies of other nodes' tasks nothing needs any more.
    fn drop_copies(&mut self) {
        let io = &self.task_io;
        self.core.task_store().drop_copies(|t, id| {
            io.waits.iter().any(|w| w.ticket == t) || io.loading.iter().any(|(_, l)| l == id)
        });
    }
}
