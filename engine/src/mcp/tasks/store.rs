//! The task table's side of a host's task store (`HttpConfig::task_store`): which task
//! records the store must be told of next, what it has acknowledged, the records read
//! back from it (a task created on another node, or by this node before a restart), and
//! the owner's merge of what another node wrote (the client's answers, a cancellation).
//! The HTTP layer (`http/task_store.rs`) turns this into events and held responses; the
//! record format is `record`'s.
//!
//! Every record a store holds has a revision, one more with each save. A save is handed
//! out at most once at a time per task; a change made while it is out goes with the
//! next. An owner whose save fails asks the store for the record, merges it and saves
//! again (a store compares revisions: a save not above what it holds is refused, so a
//! client's answers written on another node are never overwritten unseen). A task this
//! engine runs renews its lease with a save every third of the lease while the host
//! holds it.

use std::collections::VecDeque;

use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::PeerError;
use crate::jsonrpc::{Reply, Req, field};
use crate::mcp::prepared::Prepared;
use crate::mcp::tasks::listing::{Listed, Position, Query, Row, open, seal};
use crate::mcp::tasks::record::{self, Liveness, Meta, Owner};
use crate::mcp::tasks::write::task_members;
use crate::mcp::tasks::{Record, Status, TASK_ID_LEN, TOKEN_LEN};
use crate::mcp::tickets::Ticket;
use crate::mcp::tickets::Tickets;
use crate::mcp::write::{result_end, result_start};
use crate::output::Outbox;
use crate::output::Route;
use crate::revision::Revision;
use crate::time::Instant;
use crate::timer::Timers;
use crate::wire::json;

/// What the table knows of the store (one per engine with a task store).
pub(crate) struct Settings {
    /// Who this engine is in the records it writes.
    pub(crate) me: Owner,
    /// How long a lease lasts (microseconds); it is renewed every third of it.
    pub(crate) lease_us: u64,
    /// The tasks expired here since the host last heard (their ids).
    pub(crate) expired: VecDeque<[u8; TASK_ID_LEN]>,
    /// When each task's lease is renewed next, or its failed save tried again (by slot).
    pub(crate) timers: Timers,
    /// Tasks created since the HTTP layer last looked, with the route of their handle.
    pub(crate) fresh: Vec<(Route, Ticket)>,
    /// The task the request being served named (`tasks/*`).
    pub(crate) touched: Option<Ticket>,
    /// Pages of `tasks/list` read from the store, by the route of their request.
    pub(crate) listed: Vec<Listed>,
    /// Copies to read again from the store: requests wait on them, and their owner's
    /// lease has lapsed without a word from it ([`TaskStore::watch_copy`]).
    pub(crate) reread: Vec<[u8; TASK_ID_LEN]>,
}

/// What the store has of one task.
#[derive(Debug, Default)]
pub(crate) struct Stored {
    /// The revision of the last save handed out (or of the record read).
    pub(crate) revision: u64,
    /// The revision the store last acknowledged (0: none yet).
    pub(crate) stored: u64,
    /// `Record::changes` as of the last save handed out, and as of the last one the
    /// store acknowledged.
    pub(crate) queued: u64,
    pub(crate) acked: u64,
    /// A save is out (no second one until it is answered).
    pub(crate) in_flight: bool,
    /// A save is due though nothing changed (the lease, a retry, a merge).
    pub(crate) due: bool,
    /// A copy of a record another engine runs (or ran): never renewed, dropped once
    /// served.
    pub(crate) copy: bool,
    /// The owner and lease a copy's record names (an owned task's are this engine's).
    pub(crate) owner: Owner,
    pub(crate) lease_until: u64,
    /// A copy's tool, by name (it may not be in this node's catalog).
    pub(crate) tool: String,
}

impl Stored {
    /// A task created here: nothing saved yet.
    pub(crate) fn reset(&mut self) {
        self.revision = 0;
        self.stored = 0;
        self.queued = 0;
        self.acked = 0;
        self.in_flight = false;
        self.due = true;
        self.copy = false;
        self.lease_until = 0;
        self.tool.clear();
    }

    /// A copy of a record read from the store (`meta`, its tool's name, its change count
    /// `base`): nothing of it left to save.
    fn take_copy(&mut self, meta: &Meta, tool: &str, base: u64) {
        self.revision = meta.revision;
        self.stored = meta.revision;
        self.queued = base;
        self.acked = base;
        self.in_flight = false;
        self.due = false;
        self.copy = true;
        self.owner = meta.owner;
        self.lease_until = meta.lease_until;
        self.tool.clear();
        self.tool.push_str(tool);
    }
}

/// A save the host is asked to make ([`TaskStore::next_save`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Save {
    pub(crate) id: [u8; TASK_ID_LEN],
    pub(crate) revision: u64,
    pub(crate) principal: Option<[u8; 32]>,
    /// `createdAt` (wall clock, microseconds).
    pub(crate) created: u64,
    /// When the record may be deleted (wall clock, microseconds): `createdAt` + TTL.
    pub(crate) expires: u64,
}

/// Why a record read from the store was not put in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestoreError {
    /// Not a record this engine reads, or past its TTL: as if the store had none.
    Gone,
    /// The table is full.
    Full,
}

/// An error object `{"code":-32603,"message":"Internal error: <why>"}`.
fn internal_error(out: &mut Vec<u8>, why: &str) {
    out.clear();
    out.extend_from_slice(b"{\"code\":-32603,\"message\":");
    json::write_str(out, &format!("Internal error: {why}"));
    out.push(b'}');
}

/// The token an id names, when it is one (22 characters of base64url, spelled as the
/// engine spells it): anything else never reaches a store.
pub(crate) fn token_of(id: &[u8]) -> Option<[u8; TOKEN_LEN]> {
    use base64::Engine as _;
    if id.len() != TASK_ID_LEN {
        return None;
    }
    let mut token = [0u8; TOKEN_LEN + 2];
    let n = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode_slice(id, &mut token).ok()?;
    let token: [u8; TOKEN_LEN] = token.get(..n)?.try_into().ok()?;
    let mut again = [0u8; TASK_ID_LEN];
    let _ = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode_slice(token, &mut again);
    (again == id).then_some(token)
}

impl super::Tasks {
    /// The slot of the task with `token`, whoever's it is.
    fn slot_of(&self, token: &[u8; TOKEN_LEN]) -> Option<(u32, Ticket)> {
        let &slot = self.by_token.get(token)?;
        let s = self.slots.get(slot as usize).filter(|s| s.used)?;
        Some((slot, Ticket { slot: slot as u16, generation: s.generation, task: true }))
    }

    /// The task `id` names, whoever's it is.
    pub(crate) fn ticket_of(&self, id: &[u8]) -> Option<Ticket> {
        self.slot_of(&token_of(id)?).map(|(_, t)| t)
    }

    /// Whether a `tasks/*` request naming `id` should ask the store first: a well-formed
    /// id this engine does not hold.
    pub(crate) fn wants_load(&self, id: &[u8]) -> bool {
        self.store.is_some() && token_of(id).is_some_and(|t| !self.by_token.contains_key(&t))
    }

    /// What the store has of `ticket`'s task.
    pub(crate) fn stored(&self, ticket: Ticket) -> Option<&Stored> {
        let s = self.slots.get(usize::from(ticket.slot))?;
        (s.used && s.generation == ticket.generation).then_some(&s.st)
    }

    /// Whether the store has acknowledged every change of `ticket`'s task up to
    /// `changes` (a task no longer in the table has nothing left to save).
    pub(crate) fn saved_up_to(&self, ticket: Ticket, changes: u64) -> bool {
        self.stored(ticket).is_none_or(|st| st.stored != 0 && st.acked >= changes)
    }

    /// The changes of `ticket`'s task so far.
    pub(crate) fn changes(&self, ticket: Ticket) -> u64 {
        self.get(ticket).map_or(0, |r| r.changes)
    }

    /// Drops every copy that has nothing left to save, but those `keep` names.
    pub(crate) fn drop_copies(&mut self, mut keep: impl FnMut(Ticket, &[u8; TASK_ID_LEN]) -> bool) {
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            let idle = s.used && s.st.copy && !s.st.in_flight && s.st.queued == s.rec.changes;
            if !idle || !s.rec.waiters.is_empty() {
                continue;
            }
            let t = Ticket { slot: i as u16, generation: s.generation, task: true };
            if !keep(t, &s.rec.id) {
                self.remove(t);
            }
        }
    }

    /// Runs `f` on the id of every task whose news this engine follows ([`follows`]).
    ///
    /// [`follows`]: Self::follows
    pub(crate) fn each_followed(&self, mut f: impl FnMut(&[u8; TASK_ID_LEN])) {
        for s in self.slots.iter().filter(|s| s.used && followed(s)) {
            f(&s.rec.id);
        }
    }

    /// Whether another node's change to `ticket`'s task concerns this engine: it runs the
    /// task (held by its host, not a copy, not finished: it merges what the other node
    /// wrote), or requests wait on a copy of it (`2025-11-25` `tasks/result`: the copy is
    /// read again, and they are answered once it has ended).
    pub(crate) fn follows(&self, ticket: Ticket) -> bool {
        let s = self.slots.get(usize::from(ticket.slot));
        s.is_some_and(|s| s.used && s.generation == ticket.generation && followed(s))
    }

    /// The earliest lease renewal or retry.
    pub(crate) fn store_deadline(&self) -> Option<Instant> {
        self.store.as_ref().and_then(|s| s.timers.next())
    }

    /// Marks the saves due at `now`, and the watched copies to read again.
    pub(crate) fn store_due(&mut self, now: Instant) {
        let Some(settings) = self.store.as_mut() else { return };
        while let Some(slot) = settings.timers.pop_due(now) {
            match self.slots.get_mut(slot as usize).filter(|s| s.used) {
                Some(s) if s.st.copy && !s.rec.waiters.is_empty() => settings.reread.push(s.rec.id),
                Some(s) if !s.st.copy => s.st.due = true,
                _ => {}
            }
        }
    }
}

/// The task store's port ([`Core::task_store`](crate::mcp::Core::task_store)): the one handle through which the
/// transport works the table's side of a host's task store, and through which the core
/// reads records back. It borrows the parts it needs (the task table, the tickets, the
/// outbox, the catalog and configuration) and the engine's clocks, as `Answers` does;
/// it never sees the core.
pub(crate) struct TaskStore<'a> {
    pub(crate) tasks: &'a mut super::Tasks,
    pub(crate) tickets: &'a mut Tickets,
    pub(crate) outbox: &'a mut Outbox,
    pub(crate) catalog: &'a Catalog,
    pub(crate) prepared: &'a Prepared,
    pub(crate) cfg: &'a Config,
    /// The engine's time (microseconds).
    pub(crate) now: u64,
    /// The wall clock now (microseconds since the Unix epoch; `now` until the host sets
    /// the wall clock).
    pub(crate) wall: u64,
}

impl TaskStore<'_> {
    /// Turns the task store off.
    pub(crate) fn detach(&mut self) {
        self.tasks.store = None;
    }

    /// Marks the saves due at `now`, and the watched copies to read again.
    pub(crate) fn due(&mut self, now: Instant) {
        self.tasks.store_due(now);
    }

    /// Runs `f` on the id of every task whose news this engine follows
    /// ([`super::Tasks::follows`]).
    pub(crate) fn followed_ids(&self, f: impl FnMut(&[u8; TASK_ID_LEN])) {
        self.tasks.each_followed(f);
    }

    /// The copies to read again from the store (their owner's lease lapsed).
    pub(crate) fn take_rereads(&mut self) -> Vec<[u8; TASK_ID_LEN]> {
        self.tasks.store.as_mut().map(|st| core::mem::take(&mut st.reread)).unwrap_or_default()
    }

    /// Whether tasks expired here that the host has not heard of.
    pub(crate) fn has_expired(&self) -> bool {
        self.tasks.store.as_ref().is_some_and(|st| !st.expired.is_empty())
    }

    /// The next task expired here that the host has not heard of.
    pub(crate) fn pop_expired(&mut self) -> Option<[u8; TASK_ID_LEN]> {
        self.tasks.store.as_mut().and_then(|st| st.expired.pop_front())
    }

    /// Whether the store has acknowledged every change of `ticket`'s task up to
    /// `changes`.
    pub(crate) fn saved_up_to(&self, ticket: Ticket, changes: u64) -> bool {
        self.tasks.saved_up_to(ticket, changes)
    }

    /// The changes of `ticket`'s task the store has not acknowledged yet (`None`: it has
    /// every one).
    pub(crate) fn needs_save(&self, ticket: Ticket) -> Option<u64> {
        let changes = self.tasks.changes(ticket);
        (!self.tasks.saved_up_to(ticket, changes)).then_some(changes)
    }

    /// Whether `ticket`'s task is in the table.
    pub(crate) fn holds(&self, ticket: Ticket) -> bool {
        self.tasks.get(ticket).is_some()
    }

    /// The task `id` names, whoever's it is.
    pub(crate) fn ticket_of(&self, id: &[u8]) -> Option<Ticket> {
        self.tasks.ticket_of(id)
    }

    /// Whether `ticket`'s task is one this engine runs (not a copy of another node's).
    pub(crate) fn runs(&self, ticket: Ticket) -> bool {
        self.tasks.stored(ticket).is_some_and(|s| !s.copy)
    }

    /// Whether another node's change to task `id` concerns this engine
    /// ([`super::Tasks::follows`]).
    pub(crate) fn follows_id(&self, id: &[u8]) -> bool {
        self.tasks.ticket_of(id).is_some_and(|t| self.tasks.follows(t))
    }

    /// Whether a `tasks/*` request naming `id` should ask the store first.
    pub(crate) fn wants_load(&self, id: &[u8]) -> bool {
        self.tasks.wants_load(id)
    }

    /// The task the request served last named (`tasks/*`), taken.
    pub(crate) fn take_touched(&mut self) -> Option<Ticket> {
        self.tasks.store.as_mut().and_then(|st| st.touched.take())
    }

    /// The task created in this pass whose handle was written on `route`, taken.
    pub(crate) fn take_fresh(&mut self, route: Route) -> Option<Ticket> {
        let st = self.tasks.store.as_mut()?;
        let at = st.fresh.iter().position(|(r, _)| *r == route)?;
        Some(st.fresh.swap_remove(at).1)
    }

    /// Forgets the tasks created in the pass whose answers were just collected.
    pub(crate) fn forget_fresh(&mut self) {
        if let Some(st) = self.tasks.store.as_mut() {
            st.fresh.clear();
        }
    }

    /// Drops every copy that has nothing left to save, but those `keep` names.
    pub(crate) fn drop_copies(&mut self, keep: impl FnMut(Ticket, &[u8; TASK_ID_LEN]) -> bool) {
        self.tasks.drop_copies(keep);
    }

    /// Turns the task store on: this engine is `node` (its host's name for it; may be
    /// empty) with boot id `boot`, and its leases last `lease`.
    pub(crate) fn enable(&mut self, node: &str, boot: [u8; 16], lease: core::time::Duration) {
        self.tasks.store = Some(Settings {
            me: Owner::new(boot, node),
            lease_us: u64::try_from(lease.as_micros()).unwrap_or(u64::MAX).max(3),
            expired: VecDeque::new(),
            timers: Timers::new(),
            fresh: Vec::new(),
            touched: None,
            listed: Vec::new(),
            reread: Vec::new(),
        });
    }

    /// The next task whose record the store must be told of, its record written into
    /// `out`: a task changed since its last save, one whose lease is due, or one whose
    /// save failed and is tried again. Scans the table (with a store only).
    pub(crate) fn next_save(&mut self, out: &mut Vec<u8>) -> Option<Save> {
        let settings = self.tasks.store.as_mut()?;
        let wall = self.wall;
        let i = self
            .tasks
            .slots
            .iter()
            .position(|s| s.used && !s.st.in_flight && (s.st.due || s.st.queued != s.rec.changes))?;
        let s = &mut self.tasks.slots[i];
        let (r, st) = (&s.rec, &mut s.st);
        st.revision += 1;
        st.queued = r.changes;
        st.in_flight = true;
        st.due = false;
        let meta = if st.copy {
            Meta { revision: st.revision, owner: st.owner, lease_until: st.lease_until }
        } else {
            let live = r.held && !r.status().is_terminal();
            if live {
                let at = Instant::from_micros(self.now.saturating_add(settings.lease_us / 3));
                settings.timers.set(i as u32, Some(at));
            }
            let lease_until = if live { wall.saturating_add(settings.lease_us) } else { 0 };
            Meta { revision: st.revision, owner: settings.me, lease_until }
        };
        let tool = if st.copy {
            st.tool.as_str()
        } else {
            self.catalog.tools.get(r.tool as usize).map_or("", |t| t.tool.name.as_str())
        };
        record::encode(r, tool, &meta, out);
        Some(Save {
            id: r.id,
            revision: st.revision,
            principal: r.principal,
            created: r.created,
            expires: r.created.saturating_add(r.ttl_ms.saturating_mul(1000)),
        })
    }

    /// The store answered the save of `id` at `revision`. Returns the task's ticket and,
    /// for a failure, whether it is a task this engine runs (it then asks the store for
    /// the record, merges it and saves again: the caller asks) or a copy (whose request
    /// fails). `None`: no such save is out.
    pub(crate) fn save_answered(
        &mut self,
        id: &[u8],
        revision: u64,
        saved: bool,
        retry: core::time::Duration,
    ) -> Option<(Ticket, bool)> {
        let token = token_of(id)?;
        let (slot, ticket) = self.tasks.slot_of(&token)?;
        let now = self.now;
        let settings = self.tasks.store.as_mut()?;
        let st = &mut self.tasks.slots[slot as usize].st;
        if !st.in_flight || st.revision != revision {
            return None;
        }
        st.in_flight = false;
        if saved {
            st.acked = st.queued;
            st.stored = revision;
            return Some((ticket, false));
        }
        if !st.copy {
            // Tried again once the store has been read (or after `retry`, should it fail).
            let at = u64::try_from(retry.as_micros()).unwrap_or(u64::MAX);
            settings.timers.set(slot, Some(Instant::from_micros(now.saturating_add(at))));
        }
        Some((ticket, !st.copy))
    }

    /// Reads `bytes` into `rec` as this engine reads another node's record: the tool's
    /// index in this catalog (`u32::MAX`: not in it), and `failed` when its owner is
    /// gone (`record::judge`; the record then says so at its next save). Returns the
    /// record's meta, its tool's name and its change count before any such failure.
    pub(crate) fn read_copy<'b>(&self, bytes: &'b [u8], rec: &mut Record) -> Option<(Meta, &'b str, u64)> {
        let wall = self.wall;
        let skew = u64::try_from(self.cfg.clock_skew.as_micros()).unwrap_or(u64::MAX);
        let me = self.tasks.store.as_ref()?.me;
        let decoded = record::decode(bytes, rec).ok()?;
        let tool = decoded.tool;
        rec.tool = self.catalog.tools.iter().position(|t| t.tool.name == tool).map_or(u32::MAX, |i| i as u32);
        let base = rec.changes;
        if let Liveness::Dead(why) = record::judge(rec.status(), &decoded.meta, &me, wall, skew) {
            fail(rec, why, wall);
        }
        Some((decoded.meta, tool, base))
    }

    /// A record the store gave for a task this engine does not hold: it joins the table
    /// as a copy (served, then dropped), read as `failed` when its owner is gone.
    pub(crate) fn restore(&mut self, bytes: &[u8]) -> Result<Ticket, RestoreError> {
        let (now, wall) = (self.now, self.wall);
        let mut rec = Record::default();
        let (meta, tool, base) = self.read_copy(bytes, &mut rec).ok_or(RestoreError::Gone)?;
        let expires = rec.created.saturating_add(rec.ttl_ms.saturating_mul(1000));
        if expires <= wall || self.tasks.by_token.contains_key(&rec.token) {
            return Err(RestoreError::Gone);
        }
        if self.tasks.len() >= self.tasks.max {
            return Err(RestoreError::Full);
        }
        let slot = self.tasks.alloc();
        let s = &mut self.tasks.slots[slot as usize];
        s.used = true;
        s.st = Stored::default();
        s.st.take_copy(&meta, tool, base);
        let token = rec.token;
        s.rec = rec;
        self.tasks.by_token.insert(token, slot);
        self.tasks.timers.set(slot, Some(Instant::from_micros(now.saturating_add(expires - wall))));
        Ok(Ticket { slot: slot as u16, generation: s.generation, task: true })
    }

    /// The store's record of a copy that requests wait on (`2025-11-25` `tasks/result`
    /// for a task another node runs), read again after that node changed it: the copy
    /// becomes what the record says, its waiters kept, and once the task has ended they
    /// are answered. A record not newer than the copy, and a copy with a change of its
    /// own not yet saved, leave it as it is. Returns whether it was taken.
    pub(crate) fn refresh_copy(&mut self, ticket: Ticket, bytes: &[u8]) -> bool {
        let mut theirs = Record::default();
        let Some((meta, tool, base)) = self.read_copy(bytes, &mut theirs) else { return false };
        let Some(s) = self.tasks.slots.get_mut(usize::from(ticket.slot)) else { return false };
        let current = s.used && s.generation == ticket.generation && s.st.copy && theirs.token == s.rec.token;
        let settled = !s.st.in_flight && s.st.queued == s.rec.changes;
        if !current || !settled {
            return false;
        }
        if meta.revision <= s.st.stored {
            // Nothing newer: the owner has said nothing since; its lease may have lapsed.
            self.rejudge_copy(ticket);
            return false;
        }
        theirs.waiters = core::mem::take(&mut s.rec.waiters);
        let was = s.rec.status();
        s.rec = theirs;
        s.st.take_copy(&meta, tool, base);
        if s.rec.status() != was {
            crate::mcp::tasks::legacy::changed(self.outbox, &mut s.rec);
        }
        self.watch_copy(ticket);
        true
    }

    /// Watches a copy that requests wait on (`2025-11-25` `tasks/result` for a task
    /// another node runs): should its owner say nothing until its lease (and the clock
    /// skew) has passed, the copy is read again from the store
    /// ([`Settings::reread`]). A live owner renews its lease with a save, which this
    /// engine hears of (`task_changed_elsewhere`) and reads; an owner that died says
    /// nothing, and the copy is then judged `failed` and its waiters are answered,
    /// rather than waiting for their timeout or the TTL.
    pub(crate) fn watch_copy(&mut self, ticket: Ticket) {
        let (now, wall) = (self.now, self.wall);
        let skew = u64::try_from(self.cfg.clock_skew.as_micros()).unwrap_or(u64::MAX);
        let Some(settings) = self.tasks.store.as_mut() else { return };
        let Some(s) = self.tasks.slots.get(usize::from(ticket.slot)) else { return };
        let watched = s.used && s.generation == ticket.generation && s.st.copy && !s.rec.waiters.is_empty();
        if !watched || s.rec.status().is_terminal() {
            return;
        }
        let lapse = s.st.lease_until.saturating_add(skew).saturating_add(1);
        let at = Instant::from_micros(now.saturating_add(lapse.saturating_sub(wall)));
        settings.timers.set(u32::from(ticket.slot), Some(at));
    }

    /// A watched copy whose record in the store is no newer than it: judged again as it
    /// is (`record::judge`); an owner whose lease has lapsed makes it `failed` (its
    /// waiters are answered, and the record says so at the copy's next save), otherwise
    /// it is watched on.
    fn rejudge_copy(&mut self, ticket: Ticket) {
        let wall = self.wall;
        let skew = u64::try_from(self.cfg.clock_skew.as_micros()).unwrap_or(u64::MAX);
        let Some(me) = self.tasks.store.as_ref().map(|st| st.me) else { return };
        let Some(s) = self.tasks.slots.get_mut(usize::from(ticket.slot)) else { return };
        if !s.used || s.generation != ticket.generation || !s.st.copy || s.rec.waiters.is_empty() {
            return;
        }
        let meta = Meta { revision: s.st.stored, owner: s.st.owner, lease_until: s.st.lease_until };
        match record::judge(s.rec.status(), &meta, &me, wall, skew) {
            Liveness::Dead(why) => {
                fail(&mut s.rec, why, wall);
                crate::mcp::tasks::legacy::changed(self.outbox, &mut s.rec);
            }
            _ => self.watch_copy(ticket),
        }
    }

    /// The store's record of a task this engine runs (read again after another node
    /// changed it, or after a save failed): what the other node wrote joins the task
    /// here (an end stored there stands, even over an end of this node's the store has
    /// not taken: a cancellation, or a judgement that this owner was gone, cancels the
    /// host's work; the client's answers to the
    /// outstanding requests are taken, and once every one is answered the call comes
    /// back to the host), and the task is saved again above the store's revision. A
    /// status it moves to is told as a local change is (`legacy::changed`: waiting
    /// `tasks/result` requests, the session's status notification). Returns whether it
    /// was merged.
    pub(crate) fn merge(&mut self, ticket: Ticket, bytes: &[u8]) -> bool {
        let wall = self.wall;
        let mut theirs = Record::default();
        let Ok(decoded) = record::decode(bytes, &mut theirs) else { return false };
        let Some(s) = self.tasks.slots.get_mut(usize::from(ticket.slot)) else { return false };
        if !s.used || s.generation != ticket.generation || s.st.copy || theirs.token != s.rec.token {
            return false;
        }
        s.st.revision = s.st.revision.max(decoded.meta.revision);
        s.st.due = true;
        let r = &mut s.rec;
        if theirs.status().is_terminal() {
            // Another node ended the task and the store has it (a cancellation, or its
            // judgement that this owner was gone): clients may have been told, so it
            // stands, even over an end of this node's not yet stored (the owner's late
            // result is dropped, as a local cancel drops it). The host's work stops.
            let (was, held) = (r.status(), r.held);
            if was == theirs.status() && r.outcome == theirs.outcome {
                return true;
            }
            if !was.is_terminal() {
                r.move_to(theirs.status(), wall);
            } else {
                r.status = theirs.status;
                r.updated = wall;
                r.changes += 1;
            }
            r.outcome.clone_from(&theirs.outcome);
            r.error_outcome = theirs.error_outcome;
            r.message.clone_from(&theirs.message);
            r.has_message = theirs.has_message;
            if held {
                self.tickets.tell_cancelled(ticket);
            }
            crate::mcp::tasks::legacy::changed(self.outbox, r);
            return true;
        }
        let same_round = r.status() == Status::InputRequired
            && theirs.requests == r.requests
            && theirs.asked.len() == r.asked.len()
            && theirs.asked.iter().filter(|a| a.answered).count()
                > r.asked.iter().filter(|a| a.answered).count();
        if same_round {
            r.responses.clone_from(&theirs.responses);
            r.entries.clone_from(&theirs.entries);
            for (mine, t) in r.asked.iter_mut().zip(&theirs.asked) {
                mine.answered = t.answered;
            }
            r.changes += 1;
            if r.asked.iter().all(|a| a.answered) && r.move_to(Status::Working, wall) {
                crate::mcp::tasks::legacy::changed(self.outbox, r);
                self.tasks.resume_later(ticket);
            }
        }
        true
    }

    /// Undoes task `ticket`, whose creation the store did not take: its client never
    /// learns the id; the host's work is cancelled.
    pub(crate) fn undo(&mut self, ticket: Ticket) {
        if self.tasks.get(ticket).is_some_and(|r| r.held) {
            self.tickets.tell_cancelled(ticket);
        }
        self.tasks.remove(ticket);
    }
}

/// `2025-11-25` `tasks/list` from the store: the query, the page read back.
impl TaskStore<'_> {
    /// The store query a `tasks/list` with `cursor` (its tape index, if any) of
    /// `principal` needs: `None` when the cursor is not one this engine sealed for the
    /// caller (the request is then answered `-32602` without asking). Without a secret
    /// key there are no cursors, and a page is as long as the task table.
    pub(crate) fn list_query(&self, cursor: Option<&str>, principal: Option<[u8; 32]>) -> Option<Query> {
        let key = self.prepared.state_key.as_ref().map(|k| k.sign);
        let after = match cursor {
            None => None,
            Some(text) => Some(open(&key?, principal.as_ref(), text)?),
        };
        let page = if key.is_some() { self.cfg.page_size } else { self.tasks.max.max(1) };
        Some(Query { principal, after, page })
    }

    /// Reads the store's `rows` for the `tasks/list` on `route` (asked with `query`) into
    /// the page it will be answered with. The store returns up to a page and one more, in
    /// order: with the extra row there is a next page, starting after the page's last.
    pub(crate) fn page(&mut self, route: Route, query: &Query, rows: &[Row<'_>]) {
        let wall = self.wall;
        let mut items = Vec::new();
        let mut next = None;
        for (i, row) in rows.iter().take(query.page).enumerate() {
            if rows.len() > query.page && i + 1 == query.page {
                next = row.id.as_bytes().try_into().ok().map(|id| Position { created: row.created, id });
            }
            let mut theirs = Record::default();
            if self.read_copy(row.record, &mut theirs).is_none() {
                continue;
            }
            let held = self.tasks.by_token.get(&theirs.token).and_then(|&s| self.tasks.slots.get(s as usize));
            let r = match held {
                Some(s) if s.used && s.rec.token == theirs.token => &s.rec,
                _ => &theirs,
            };
            let expires = r.created.saturating_add(r.ttl_ms.saturating_mul(1000));
            // (Only a principal's list asks the store: no session key to match.)
            let listed =
                r.belongs_to(query.principal.as_ref(), None) && r.revision.is_some_and(|v| !v.is_stateless());
            if !listed || expires <= wall || r.id_str() != row.id {
                continue;
            }
            if !items.is_empty() {
                items.push(b',');
            }
            items.push(b'{');
            task_members(&mut items, r, true);
            items.push(b'}');
        }
        let Some(st) = self.tasks.store.as_mut() else { return };
        st.listed.retain(|l| l.route != route);
        st.listed.push(Listed { route, items, next });
    }

    /// Forgets a page read for `route` that its request did not use (it was answered
    /// otherwise, or went away).
    pub(crate) fn forget_page(&mut self, route: Route) {
        if let Some(st) = self.tasks.store.as_mut() {
            st.listed.retain(|l| l.route != route);
        }
    }

    /// `tasks/list` with a task store: the page read for this request from the store
    /// ([`Self::page`]), for `principal`, its request on `route`, with a cursor to the next one.
    pub(crate) fn list_stored<'t>(
        &mut self,
        req: &Req<'_, 't>,
        rev: Revision,
        principal: Option<[u8; 32]>,
        route: Route,
    ) -> Result<(), PeerError<'t>> {
        let cursor = match req.param("cursor") {
            None => None,
            Some(ci) => Some(json::str_at(req.n, ci).ok_or(PeerError::CursorNotString)?),
        };
        self.list_query(cursor, principal).ok_or(PeerError::InvalidCursor)?;
        let key = self.prepared.state_key.as_ref().map(|k| k.sign);
        let st = self.tasks.store.as_mut().ok_or(PeerError::Internal)?;
        // Asked before the request was served; without a page (the store was never
        // asked) the request fails rather than list from the table.
        let at = st.listed.iter().position(|l| l.route == route).ok_or(PeerError::Internal)?;
        let page = st.listed.swap_remove(at);
        let out = &mut self.outbox.out;
        result_start(out, Reply::Id(req.id));
        out.extend_from_slice(b"\"tasks\":[");
        out.extend_from_slice(&page.items);
        out.push(b']');
        if let (Some(pos), Some(k)) = (page.next, key) {
            field(out, "nextCursor");
            seal(out, &k, principal.as_ref(), &pos);
        }
        result_end(out, &self.prepared.meta, rev, None);
        Ok(())
    }
}

/// See [`super::Tasks::follows`].
fn followed(s: &super::Slot) -> bool {
    let runs = !s.st.copy && s.rec.held && !s.rec.status().is_terminal();
    runs || (s.st.copy && !s.rec.waiters.is_empty())
}

/// Makes `r` `failed` with `why` (its owner is gone).
fn fail(r: &mut Record, why: &str, wall: u64) {
    if r.move_to(Status::Failed, wall) {
        r.set_message(Some(why), wall);
        internal_error(&mut r.outcome, why);
        r.error_outcome = true;
    }
}
