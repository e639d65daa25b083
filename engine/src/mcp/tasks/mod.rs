//! Tasks: tool calls that outlive their request (the `io.modelcontextprotocol/tasks`
//! extension of `2026-07-28`).
//!
//! The host turns a tool call into a task ([`CallTool::start_task`](crate::event::CallTool::start_task));
//! the engine answers the request at once with the task's handle and keeps a record of it
//! here, in memory, until its TTL: the status, the status message, the host's result or
//! error once there is one, the input it asks of the client, and the client's answers.
//! The host keeps working under a task [`Ticket`] and answers it as it would a call
//! (result, error, input required); the client reads the record with `tasks/get`, answers
//! input with `tasks/update` and cancels with `tasks/cancel` (`methods`).
//!
//! - this file: the table (slots by ticket, ids by token, the per-principal count, the
//!   TTL deadlines in a timer table, the tasks whose input is complete), the record, and
//!   the status machine (only the transitions the extension allows);
//! - [`write`]: the wire form of a task (`CreateTaskResult`, `DetailedTask`, timestamps);
//! - [`methods`]: `tasks/get`, `tasks/update`, `tasks/cancel`, and the host's answers
//!   to a task ticket;
//! - [`record`]: the task record a host's task store keeps (its versioned binary
//!   format, the owner and its lease, how a node reads a record another node wrote);
//! - [`legacy`]: the `2025-11-25` tasks utility on session-bound streams: task-augmented
//!   `tools/call` (`params.task`), `tasks/result` (waiting for the end), `tasks/list`,
//!   the `2025-11-25` forms of `tasks/get` and `tasks/cancel`,
//!   `notifications/tasks/status`;
//! - [`listing`]: `tasks/list` from a host's task store (every node's tasks, a page at a
//!   time by creation).
//!
//! Task ids are 128-bit tokens drawn by HMAC-SHA256 in counter mode from the host's
//! entropy (as session tokens are, `wire/session_id.rs`), written as 22 characters of
//! base64url (header-safe, so `Mcp-Name` carries them as they are). A record is bound to
//! the principal that created it: another principal's id is not found, exactly like an
//! unknown one. A `2025-11-25` task made without a principal in an HTTP session is bound
//! to that session instead (a digest of its token, [`session_key`]): another session's
//! request finds nothing, as for an unknown id. Without either (stdio, where there is one
//! client; `2026-07-28`, where there is no session and the id is the capability) a task is
//! bound to no one but the holder of its id.

pub(crate) mod legacy;
pub(crate) mod listing;
pub(crate) mod methods;
pub(crate) mod record;
pub(crate) mod store;
pub(crate) mod write;

use std::collections::VecDeque;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::mcp::mrtr::{ClientCapabilities, Entry, InputKind, MAX_INPUT_REQUESTS};
use crate::mcp::prepared::Prepared;
use crate::mcp::tickets::{IdBuf, Ticket, Tickets};
use crate::output::{Outbox, Route};
use crate::revision::Revision;
use crate::time::Instant;
use crate::timer::Timers;
use crate::wire::trace::TraceParent;

/// How the host wants a task to start (see [`CallTool::start_task`](crate::event::CallTool::start_task)).
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskOptions<'a> {
    pub(crate) ttl: Option<core::time::Duration>,
    pub(crate) poll_interval: Option<core::time::Duration>,
    pub(crate) message: Option<&'a str>,
}

impl<'a> TaskOptions<'a> {
    /// The engine's defaults: [`Config::task_ttl`](crate::Config::task_ttl) and
    /// [`Config::task_poll_interval`](crate::Config::task_poll_interval), no message.
    pub fn new() -> Self {
        Self::default()
    }
    /// How long the task lives from now (`ttlMs`): at most `Config::task_ttl`, at least
    /// one millisecond.
    #[must_use]
    pub fn ttl(mut self, ttl: core::time::Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
    /// How often the client should poll (`pollIntervalMs`, at least one millisecond).
    #[must_use]
    pub fn poll_interval(mut self, interval: core::time::Duration) -> Self {
        self.poll_interval = Some(interval);
        self
    }
    /// The first `statusMessage`.
    #[must_use]
    pub fn message(mut self, message: &'a str) -> Self {
        self.message = Some(message);
        self
    }
}

/// Bytes of a task's token.
pub(crate) const TOKEN_LEN: usize = 16;
/// Characters of a task id (base64url of the token, without padding).
pub(crate) const TASK_ID_LEN: usize = 22;
/// Input request keys one task may use over its life (they must never repeat).
pub(crate) const MAX_TASK_KEYS: usize = 256;
/// `tasks/result` requests that may wait for one task at once (`2025-11-25`).
pub(crate) const MAX_WAITERS: usize = 4;
/// The longest status message kept, in bytes (a longer one is cut on a char boundary).
pub(crate) const MAX_STATUS_MESSAGE_LEN: usize = 1024;
/// Bytes of the session key a task is bound to ([`session_key`]).
pub(crate) const SESSION_KEY_LEN: usize = 16;
const MINT_LABEL: &[u8] = b"mcp-engine/task-token";
const SESSION_LABEL: &[u8] = b"mcp-engine/task-session";

/// A task's status (the extension's `TaskStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// `completed`, `failed` and `cancelled`: nothing changes a task any more.
    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// Whether the extension allows a task to go from `self` to `to`: `working` and
    /// `input_required` to each other and to every terminal status; nothing out of a
    /// terminal one.
    pub(crate) fn may_become(self, to: Self) -> bool {
        match (self, to) {
            (Self::Working, Self::InputRequired) | (Self::InputRequired, Self::Working) => true,
            (Self::Working | Self::InputRequired, t) => t.is_terminal(),
            _ => false,
        }
    }
}

/// One input request a task asked: where its key and its `{"method":..,"params":..}`
/// are in [`Record::requests`], and whether the client answered it.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    /// The JSON-RPC id it was sent with (`2025-11-25`; 0 under `2026-07-28`, where the
    /// client reads it in `tasks/get`).
    pub(crate) id: u64,
    pub(crate) key: core::ops::Range<usize>,
    pub(crate) body: core::ops::Range<usize>,
    pub(crate) kind: InputKind,
    pub(crate) answered: bool,
}

/// What the engine keeps of one task. Buffers are kept from one task to the next in the
/// same slot (cleared, not freed).
#[derive(Default)]
pub(crate) struct Record {
    pub(crate) token: [u8; TOKEN_LEN],
    pub(crate) id: [u8; TASK_ID_LEN],
    /// The principal that created it (HTTP, when the host named one).
    pub(crate) principal: Option<[u8; 32]>,
    /// Without a principal, the HTTP session that created it ([`session_key`] of its
    /// token; a `2025-11-25` task only): only that session finds it. `None`: bound to no
    /// session (a principal's task, stdio, `2026-07-28`, a record written before the key
    /// was kept).
    pub(crate) session_key: Option<[u8; SESSION_KEY_LEN]>,
    pub(crate) revision: Option<Revision>,
    pub(crate) status: Option<Status>,
    pub(crate) message: String,
    pub(crate) has_message: bool,
    /// Wall-clock times (microseconds since the Unix epoch).
    pub(crate) created: u64,
    pub(crate) updated: u64,
    pub(crate) ttl_ms: u64,
    pub(crate) poll_ms: u64,
    /// The catalog index of the tool, the call's arguments (compact JSON), request id,
    /// `traceparent` and the input kinds its client declared: what the call's event is
    /// made of again when the client's input comes back.
    pub(crate) tool: u32,
    pub(crate) args: Vec<u8>,
    pub(crate) request_id: Option<IdBuf>,
    pub(crate) trace: Option<TraceParent>,
    pub(crate) caps: ClientCapabilities,
    /// `completed`: the `CallToolResult` object; `failed`: the error object (or, under
    /// `2025-11-25`, a `CallToolResult` with `isError`: `error_outcome` says which).
    pub(crate) outcome: Vec<u8>,
    pub(crate) error_outcome: bool,
    /// Where the creating call came from and its session's serial: `2025-11-25` status
    /// notifications go to that stdio stream or that HTTP session's standalone stream,
    /// and answers to what the task asks come from that session only.
    pub(crate) route: Option<Route>,
    pub(crate) session: u64,
    /// `tasks/result` requests waiting for the task to end (`2025-11-25`): their route,
    /// id and session's serial (any session of the task's principal may wait).
    pub(crate) waiters: heapless::Vec<(Route, IdBuf, u64), MAX_WAITERS>,
    /// The input requests of the latest round, and which the client answered.
    pub(crate) requests: Vec<u8>,
    pub(crate) asked: heapless::Vec<Asked, MAX_INPUT_REQUESTS>,
    /// The client's answers (keys and compact values, back to back) and the host's state.
    pub(crate) responses: Vec<u8>,
    pub(crate) entries: heapless::Vec<Entry, MAX_INPUT_REQUESTS>,
    pub(crate) state: Vec<u8>,
    pub(crate) has_state: bool,
    /// Digests of every key asked so far (they are unique over a task's life).
    pub(crate) used_keys: Vec<u64>,
    /// The host still holds the work (its ticket is live).
    pub(crate) held: bool,
    /// The creating call's `_meta.progressToken` (as JSON, inline) and the last progress
    /// sent for it: a `2025-11-25` task keeps reporting progress under it while its host
    /// holds it. Only the node that runs the task sends progress, so neither is part of
    /// the stored record (`record`).
    pub(crate) progress: Option<IdBuf>,
    pub(crate) last_progress: Option<f64>,
    /// Counts the changes a task store must hear of (status, message, answers).
    pub(crate) changes: u64,
}

impl Record {
    /// Whether a request of `principal`, in the session whose key is `session` (if any),
    /// may see this task: a principal's task is its principal's (in any of its sessions);
    /// a task without one bound to a session is that session's; any other is everyone's
    /// without a principal.
    pub(crate) fn belongs_to(
        &self,
        principal: Option<&[u8; 32]>,
        session: Option<&[u8; SESSION_KEY_LEN]>,
    ) -> bool {
        self.principal.as_ref() == principal
            && (principal.is_some() || self.session_key.is_none() || self.session_key.as_ref() == session)
    }

    /// The route of the first `tasks/result` waiting from the session that created the
    /// task: where what the task asks of that session's client goes (its input requests,
    /// its progress). A waiter from another session of the same principal gets only the
    /// result: that client did not make the call, and its answers would not be taken.
    pub(crate) fn session_waiter(&self) -> Option<Route> {
        self.waiters.iter().find(|w| w.2 == self.session).map(|w| w.0)
    }

    pub(crate) fn status(&self) -> Status {
        self.status.unwrap_or(Status::Working)
    }

    pub(crate) fn id_str(&self) -> &str {
        core::str::from_utf8(&self.id).unwrap_or_default()
    }

    /// Moves to `to` at wall time `wall` if the status machine allows it.
    pub(crate) fn move_to(&mut self, to: Status, wall: u64) -> bool {
        if !self.status().may_become(to) {
            return false;
        }
        self.status = Some(to);
        self.updated = wall;
        self.changes += 1;
        if to.is_terminal() {
            self.held = false;
            self.asked.clear();
        }
        true
    }

    /// Whether the host's progress reports become `notifications/progress` (a
    /// `2025-11-25` task whose creating call carried a progress token, while held).
    pub(crate) fn sends_progress(&self) -> bool {
        self.held && self.progress.is_some()
    }

    /// Sets the status message (cut to [`MAX_STATUS_MESSAGE_LEN`] bytes).
    pub(crate) fn set_message(&mut self, message: Option<&str>, wall: u64) {
        self.message.clear();
        self.has_message = message.is_some();
        if let Some(m) = message {
            self.message.push_str(crate::error::cut(m, MAX_STATUS_MESSAGE_LEN));
        }
        self.updated = wall;
        self.changes += 1;
    }
}

struct Slot {
    generation: u32,
    used: bool,
    rec: Record,
    /// What the host's task store has of it (with a task store only).
    st: store::Stored,
}

/// How a new task starts.
pub(crate) struct NewTask<'a> {
    pub(crate) principal: Option<[u8; 32]>,
    /// The creating session's key, for a task without a principal ([`session_key`]).
    pub(crate) session_key: Option<[u8; SESSION_KEY_LEN]>,
    pub(crate) revision: Revision,
    pub(crate) tool: u32,
    pub(crate) args: &'a [u8],
    pub(crate) request_id: IdBuf,
    pub(crate) trace: Option<TraceParent>,
    pub(crate) caps: ClientCapabilities,
    pub(crate) route: Route,
    pub(crate) session: u64,
    pub(crate) ttl_ms: u64,
    pub(crate) poll_ms: u64,
    pub(crate) message: Option<&'a str>,
    /// The call's progress token and its last progress (kept under `2025-11-25` only).
    pub(crate) progress: Option<IdBuf>,
    pub(crate) last_progress: Option<f64>,
}

/// The task methods' view of the core for the request being dispatched: the parts they
/// use, who asks and the wall clock (see `Core::task_methods`); its methods are
/// `methods.rs`' (`2026-07-28`) and `legacy.rs`' (`2025-11-25`).
pub(crate) struct TaskMethods<'a> {
    pub(crate) tasks: &'a mut Tasks,
    pub(crate) tickets: &'a mut Tickets,
    pub(crate) outbox: &'a mut Outbox,
    pub(crate) prepared: &'a Prepared,
    /// The caller's principal (`None`: anonymous).
    pub(crate) principal: Option<[u8; 32]>,
    /// The token of the session the request is served in, if any.
    pub(crate) token: Option<[u8; 16]>,
    /// The serial of the session the request is served in (0: none).
    pub(crate) serial: u64,
    /// Tasks on a `tasks/list` page (`Config::page_size`).
    pub(crate) page_size: usize,
    /// The wall clock now (microseconds since the Unix epoch).
    pub(crate) wall: u64,
}

/// The task table.
pub(crate) struct Tasks {
    slots: Vec<Slot>,
    by_token: hashbrown::HashMap<[u8; TOKEN_LEN], u32>,
    free: Vec<u32>,
    /// Each used slot's TTL deadline.
    timers: Timers,
    /// Tasks whose client answered every input request: their call comes back to the host.
    resumes: VecDeque<Ticket>,
    mint: Option<Hmac<Sha256>>,
    counter: u64,
    max: usize,
    per_principal: usize,
    /// Per ticket slot: the arguments of a tool call that may become a task (kept while
    /// its ticket is live, so that the host may start the task after the event is gone).
    kept: Vec<Vec<u8>>,
    /// The host's task store, when it has one (`store`).
    pub(crate) store: Option<store::Settings>,
}

impl Tasks {
    /// Deletes the tasks past their TTL (at `now`, in microseconds); the host is told of
    /// those it still works on, their waiters answered.
    pub(crate) fn expire_due(&mut self, now: u64, tickets: &mut Tickets, outbox: &mut Outbox) {
        self.expire(Instant::from_micros(now), |t, r| {
            if r.held {
                tickets.tell_cancelled(t);
            }
            legacy::answer_waiters(outbox, r, Some("Task has expired"));
        });
    }

    pub(crate) fn new(max: usize, per_principal: usize) -> Self {
        Self {
            slots: Vec::new(),
            by_token: hashbrown::HashMap::new(),
            free: Vec::new(),
            timers: Timers::new(),
            resumes: VecDeque::new(),
            mint: None,
            counter: 0,
            max,
            per_principal,
            kept: Vec::new(),
            store: None,
        }
    }

    /// Keeps the arguments of the call in ticket slot `slot`, which may become a task.
    pub(crate) fn keep_args(&mut self, slot: u16, args: &[u8]) {
        let i = usize::from(slot);
        if self.kept.len() <= i {
            self.kept.resize_with(i + 1, Vec::new);
        }
        self.kept[i].clear();
        self.kept[i].extend_from_slice(args);
    }

    /// Takes the arguments kept for ticket slot `slot` (give them back with
    /// [`Self::return_args`], so the buffer is reused).
    pub(crate) fn kept_args(&mut self, slot: u16) -> Vec<u8> {
        self.kept.get_mut(usize::from(slot)).map(core::mem::take).unwrap_or_default()
    }

    /// Gives back the buffer [`Self::kept_args`] took.
    pub(crate) fn return_args(&mut self, slot: u16, args: Vec<u8>) {
        if let Some(k) = self.kept.get_mut(usize::from(slot)) {
            *k = args;
        }
    }

    /// Seeds the token generator with 32 bytes of fresh entropy.
    pub(crate) fn seed(&mut self, entropy: &[u8; 32]) {
        let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(entropy).unwrap_or_else(|_| unreachable!());
        m.update(MINT_LABEL);
        self.mint = Some(m);
    }

    /// Whether tokens can be drawn.
    pub(crate) fn seeded(&self) -> bool {
        self.mint.is_some()
    }

    /// How many tasks the engine holds.
    pub(crate) fn len(&self) -> usize {
        self.by_token.len()
    }

    /// How many tasks `principal` holds.
    pub(crate) fn held_by(&self, principal: Option<&[u8; 32]>) -> usize {
        self.slots.iter().filter(|s| s.used && s.rec.principal.as_ref() == principal).count()
    }

    /// Whether one more task fits for `principal` (`Err`: which bound it meets).
    pub(crate) fn room(&self, principal: Option<&[u8; 32]>) -> Result<(), crate::error::TaskRefusal> {
        if self.len() >= self.max {
            return Err(crate::error::TaskRefusal::Full);
        }
        if self.held_by(principal) >= self.per_principal {
            return Err(crate::error::TaskRefusal::PrincipalFull);
        }
        Ok(())
    }

    fn draw(&mut self) -> Option<[u8; TOKEN_LEN]> {
        let mut m = self.mint.clone()?;
        m.update(&self.counter.to_le_bytes());
        self.counter = self.counter.wrapping_add(1);
        let mut token = [0u8; TOKEN_LEN];
        token.copy_from_slice(&m.finalize().into_bytes()[..TOKEN_LEN]);
        Some(token)
    }

    /// Creates a `working` task at `now` (wall clock `wall`), whose TTL counts from now;
    /// `None` when no token can be drawn or the table is full (see [`Self::room`]).
    pub(crate) fn create(&mut self, t: &NewTask<'_>, now: u64, wall: u64) -> Option<Ticket> {
        if self.room(t.principal.as_ref()).is_err() {
            return None;
        }
        let token = self.draw()?;
        let slot = self.alloc();
        let s = &mut self.slots[slot as usize];
        s.st.reset();
        s.used = true;
        let r = &mut s.rec;
        r.token = token;
        let _ = URL_SAFE_NO_PAD.encode_slice(token, &mut r.id);
        r.principal = t.principal;
        r.session_key = t.session_key;
        r.revision = Some(t.revision);
        r.status = Some(Status::Working);
        r.set_message(t.message, wall);
        r.created = wall;
        r.updated = wall;
        r.ttl_ms = t.ttl_ms;
        r.poll_ms = t.poll_ms;
        r.tool = t.tool;
        r.args.clear();
        r.args.extend_from_slice(t.args);
        r.request_id = Some(t.request_id);
        r.trace = t.trace;
        r.caps = t.caps;
        r.outcome.clear();
        r.error_outcome = false;
        r.route = Some(t.route);
        r.session = t.session;
        r.waiters.clear();
        r.requests.clear();
        r.asked.clear();
        r.responses.clear();
        r.entries.clear();
        r.state.clear();
        r.has_state = false;
        r.used_keys.clear();
        r.held = true;
        r.progress = t.progress;
        r.last_progress = t.last_progress;
        r.changes = 0;
        self.by_token.insert(token, slot);
        let at = Instant::from_micros(now.saturating_add(t.ttl_ms.saturating_mul(1000)));
        self.timers.set(slot, Some(at));
        Some(Ticket { slot: slot as u16, generation: s.generation, task: true })
    }

    /// A free slot (not yet marked used).
    fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    used: false,
                    rec: Record::default(),
                    st: store::Stored::default(),
                });
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// The record `ticket` names, while it is a task in the table.
    pub(crate) fn get(&self, ticket: Ticket) -> Option<&Record> {
        let s = self.slots.get(usize::from(ticket.slot)).filter(|_| ticket.task)?;
        (s.used && s.generation == ticket.generation).then_some(&s.rec)
    }

    /// The record `ticket` names, mutably.
    pub(crate) fn get_mut(&mut self, ticket: Ticket) -> Option<&mut Record> {
        let s = self.slots.get_mut(usize::from(ticket.slot)).filter(|_| ticket.task)?;
        (s.used && s.generation == ticket.generation).then_some(&mut s.rec)
    }

    /// The record whose host still holds the work (a live task ticket).
    pub(crate) fn held_mut(&mut self, ticket: Ticket) -> Option<&mut Record> {
        self.get_mut(ticket).filter(|r| r.held)
    }

    /// The task `id` of `principal` in the session keyed `session` (see
    /// [`Record::belongs_to`]): its ticket (an unknown id, a malformed one, another
    /// principal's and another session's are all `None`).
    pub(crate) fn find(
        &self,
        id: &str,
        principal: Option<&[u8; 32]>,
        session: Option<&[u8; SESSION_KEY_LEN]>,
    ) -> Option<Ticket> {
        if id.len() != TASK_ID_LEN {
            return None;
        }
        let mut token = [0u8; TOKEN_LEN + 2];
        let n = URL_SAFE_NO_PAD.decode_slice(id.as_bytes(), &mut token).ok()?;
        let token: [u8; TOKEN_LEN] = token.get(..n)?.try_into().ok()?;
        let &slot = self.by_token.get(&token)?;
        let s = self.slots.get(slot as usize)?;
        // The id must be the one written (base64url has one spelling per token here, but
        // trailing bits could differ): compare the text.
        (s.used && s.rec.id == id.as_bytes() && s.rec.belongs_to(principal, session)).then_some(Ticket {
            slot: slot as u16,
            generation: s.generation,
            task: true,
        })
    }

    /// Queues `ticket`'s call to come back to the host with its client's input.
    pub(crate) fn resume_later(&mut self, ticket: Ticket) {
        self.resumes.push_back(ticket);
    }

    /// Whether a task's call waits to come back to the host.
    pub(crate) fn has_resume(&self) -> bool {
        !self.resumes.is_empty()
    }

    /// The next task whose call comes back to the host (still held, still `working`).
    pub(crate) fn next_resume(&mut self) -> Option<Ticket> {
        while let Some(t) = self.resumes.pop_front() {
            if self.get(t).is_some_and(|r| r.held && r.status() == Status::Working) {
                return Some(t);
            }
        }
        None
    }

    /// The earliest TTL deadline.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// Deletes every task past its TTL at `now`; `gone` sees each first (its host may
    /// still hold the work, requests may wait for it).
    pub(crate) fn expire(&mut self, now: Instant, mut gone: impl FnMut(Ticket, &mut Record)) {
        while let Some(slot) = self.timers.pop_due(now) {
            let Some(s) = self.slots.get_mut(slot as usize).filter(|s| s.used) else { continue };
            let ticket = Ticket { slot: slot as u16, generation: s.generation, task: true };
            gone(ticket, &mut s.rec);
            if let Some(st) = self.store.as_mut() {
                st.expired.push_back(s.rec.id);
            }
            self.remove(ticket);
        }
    }

    /// Every task in the table, with its ticket, in slot order from `from`.
    pub(crate) fn iter_from(&self, from: usize) -> impl Iterator<Item = (usize, &Record)> + '_ {
        self.slots.iter().enumerate().skip(from).filter(|(_, s)| s.used).map(|(i, s)| (i, &s.rec))
    }

    /// The task that sent request `id` in session `session` and waits for its answer.
    pub(crate) fn asked_by(&self, session: u64, id: u64) -> Option<Ticket> {
        self.slots.iter().enumerate().find_map(|(i, s)| {
            let asks = s.used && s.rec.held && s.rec.session == session;
            (asks && s.rec.asked.iter().any(|a| a.id == id && !a.answered)).then_some(Ticket {
                slot: i as u16,
                generation: s.generation,
                task: true,
            })
        })
    }

    /// Runs `f` on every task's record.
    pub(crate) fn each_mut(&mut self, mut f: impl FnMut(&mut Record)) {
        for s in self.slots.iter_mut().filter(|s| s.used) {
            f(&mut s.rec);
        }
    }

    /// Drops the waiters on `route` of every task (their connection went away).
    pub(crate) fn drop_waiters(&mut self, route: Route) {
        for s in self.slots.iter_mut().filter(|s| s.used && !s.rec.waiters.is_empty()) {
            s.rec.waiters.retain(|(r, ..)| *r != route);
        }
    }

    /// Deletes the task `ticket` names.
    pub(crate) fn remove(&mut self, ticket: Ticket) {
        let Some(s) = self.slots.get_mut(usize::from(ticket.slot)).filter(|s| s.used) else { return };
        if s.generation != ticket.generation {
            return;
        }
        s.used = false;
        s.rec.held = false;
        s.rec.progress = None;
        s.rec.last_progress = None;
        s.generation = s.generation.wrapping_add(1);
        self.by_token.remove(&s.rec.token);
        self.timers.set(u32::from(ticket.slot), None);
        if let Some(st) = self.store.as_mut() {
            st.timers.set(u32::from(ticket.slot), None);
        }
        self.free.push(u32::from(ticket.slot));
    }
}

/// The key of the session a `rev` request of `principal` (`None`: anonymous) is served
/// in, in the session holding `token` (`2025-11-25` over HTTP; see
/// [`session_key`]): only a request without a principal has one.
pub(crate) fn session_key_of(
    principal: Option<&[u8; 32]>,
    token: Option<[u8; 16]>,
    rev: Revision,
) -> Option<[u8; SESSION_KEY_LEN]> {
    let bound = principal.is_none() && !rev.is_stateless();
    token.filter(|_| bound).map(|t| session_key(&t))
}

/// The key a task made without a principal in the HTTP session with `token` is bound to:
/// 16 bytes of SHA-256 over a label and the token. The same on every node that serves the
/// session (the token is the session's, in its id and in a session store), and not the
/// token itself, so a task store holds nothing that names the session.
pub(crate) fn session_key(token: &[u8; 16]) -> [u8; SESSION_KEY_LEN] {
    use sha2::Digest as _;
    let mut h = Sha256::new();
    h.update(SESSION_LABEL);
    h.update(token);
    let d = h.finalize();
    let mut key = [0u8; SESSION_KEY_LEN];
    key.copy_from_slice(&d[..SESSION_KEY_LEN]);
    key
}

/// A digest of an input request key, to tell whether a task used it before.
pub(crate) fn key_digest(key: &[u8]) -> u64 {
    use sha2::Digest as _;
    let d = Sha256::digest(key);
    u64::from_le_bytes(d[..8].try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Status; 5] =
        [Status::Working, Status::InputRequired, Status::Completed, Status::Failed, Status::Cancelled];

    #[test]
    fn only_the_allowed_transitions() {
        use Status as S;
        let allowed = [
            (S::Working, S::InputRequired),
            (S::Working, S::Completed),
            (S::Working, S::Failed),
            (S::Working, S::Cancelled),
            (S::InputRequired, S::Working),
            (S::InputRequired, S::Completed),
            (S::InputRequired, S::Failed),
            (S::InputRequired, S::Cancelled),
        ];
        for from in ALL {
            for to in ALL {
                assert_eq!(from.may_become(to), allowed.contains(&(from, to)), "{from:?} -> {to:?}");
            }
        }
    }

    fn new_task(principal: Option<[u8; 32]>) -> NewTask<'static> {
        NewTask {
            principal,
            session_key: None,
            revision: Revision::V2026_07_28,
            tool: 0,
            args: b"{}",
            request_id: IdBuf::of(crate::jsonrpc::IdRef::I(1)).expect("short"),
            trace: None,
            caps: ClientCapabilities::NONE,
            route: Route::Stdio,
            session: 0,
            ttl_ms: 1000,
            poll_ms: 100,
            message: None,
            progress: None,
            last_progress: None,
        }
    }

    #[test]
    fn ids_are_found_by_their_principal_only() {
        let mut t = Tasks::new(8, 8);
        assert!(t.create(&new_task(None), 0, 0).is_none(), "no entropy, no task");
        t.seed(&[7; 32]);
        let a = t.create(&new_task(Some([1; 32])), 0, 0).expect("room");
        let b = t.create(&new_task(None), 0, 0).expect("room");
        let id_a = t.get(a).map(|r| r.id_str().to_owned()).unwrap_or_default();
        let id_b = t.get(b).map(|r| r.id_str().to_owned()).unwrap_or_default();
        assert_eq!(id_a.len(), TASK_ID_LEN);
        assert_ne!(id_a, id_b);
        assert_eq!(t.find(&id_a, Some(&[1; 32]), None), Some(a));
        assert_eq!(t.find(&id_a, None, None), None);
        assert_eq!(t.find(&id_a, Some(&[2; 32]), None), None);
        assert_eq!(t.find(&id_b, None, None), Some(b));
        assert_eq!(t.find("", None, None), None);
        assert_eq!(t.find("not-a-task-id-at-all!!", None, None), None);
    }

    #[test]
    fn a_task_without_a_principal_made_in_a_session_is_found_from_that_session_only() {
        let mut t = Tasks::new(8, 8);
        t.seed(&[3; 32]);
        let (mine, theirs) = (session_key(&[1; 16]), session_key(&[2; 16]));
        assert_ne!(mine, theirs);
        assert_eq!(mine, session_key(&[1; 16]), "the same on every node");
        let mut bound = new_task(None);
        bound.session_key = Some(mine);
        let a = t.create(&bound, 0, 0).expect("room");
        let id = t.get(a).map(|r| r.id_str().to_owned()).unwrap_or_default();
        assert_eq!(t.find(&id, None, Some(&mine)), Some(a));
        assert_eq!(t.find(&id, None, Some(&theirs)), None, "another session's");
        assert_eq!(t.find(&id, None, None), None, "no session");
        assert_eq!(t.find(&id, Some(&[1; 32]), Some(&mine)), None, "a principal's request");
        // A principal's task is its principal's in any session.
        let mut p = new_task(Some([4; 32]));
        p.session_key = None;
        let b = t.create(&p, 0, 0).expect("room");
        let id = t.get(b).map(|r| r.id_str().to_owned()).unwrap_or_default();
        assert_eq!(t.find(&id, Some(&[4; 32]), Some(&mine)), Some(b));
        assert_eq!(t.find(&id, Some(&[4; 32]), Some(&theirs)), Some(b));
        // An unbound task (stdio, 2026-07-28) is every principal-less caller's.
        let c = t.create(&new_task(None), 0, 0).expect("room");
        let id = t.get(c).map(|r| r.id_str().to_owned()).unwrap_or_default();
        assert_eq!(t.find(&id, None, Some(&theirs)), Some(c));
        assert_eq!(t.find(&id, None, None), Some(c));
    }

    #[test]
    fn a_reused_slot_keeps_no_progress_token() {
        let mut t = Tasks::new(8, 8);
        t.seed(&[5; 32]);
        let mut with = new_task(None);
        with.progress = IdBuf::of(crate::jsonrpc::IdRef::Str("p"));
        with.last_progress = Some(3.0);
        let a = t.create(&with, 0, 0).expect("room");
        assert!(t.get(a).is_some_and(|r| r.sends_progress() && r.last_progress == Some(3.0)));
        t.remove(a);
        let b = t.create(&new_task(None), 0, 0).expect("room");
        assert_eq!(b.slot, a.slot, "the slot is reused");
        let r = t.get(b).expect("the new task");
        assert!(r.progress.is_none() && r.last_progress.is_none() && !r.sends_progress());
    }

    #[test]
    fn the_bounds_and_the_ttl() {
        let mut t = Tasks::new(3, 2);
        t.seed(&[9; 32]);
        let p = Some([1; 32]);
        let a = t.create(&new_task(p), 0, 0).expect("room");
        assert!(t.create(&new_task(p), 10, 0).is_some());
        assert_eq!(t.room(p.as_ref()), Err(crate::error::TaskRefusal::PrincipalFull));
        assert!(t.create(&new_task(p), 0, 0).is_none());
        assert!(t.create(&new_task(None), 20, 0).is_some());
        assert_eq!(t.room(None), Err(crate::error::TaskRefusal::Full));
        // The first expires at 1,000 ms: its holder is told, the others stay.
        assert_eq!(t.deadline(), Some(Instant::from_micros(1_000_000)));
        let mut told = Vec::new();
        t.expire(Instant::from_micros(999_999), |x, _| told.push(x));
        assert!(told.is_empty());
        t.expire(Instant::from_micros(1_000_000), |x, _| told.push(x));
        assert_eq!(told, vec![a]);
        assert!(t.get(a).is_none());
        assert_eq!(t.len(), 2);
        assert_eq!(t.room(p.as_ref()), Ok(()));
    }
}
