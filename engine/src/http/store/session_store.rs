//! The host's session store, sans-IO ([`HttpConfig::session_store`]): the engine asks
//! for a session it does not hold and waits for the answer, holds the response to a
//! request that changed a session until the host stored the session's record, and tells
//! the host of the sessions it expired. The engine never does the I/O; the record's
//! format is `record`'s.
//!
//! A request waits for the store in [`Phase::Loading`] (before it is dispatched) or
//! [`Phase::Saving`] (its response written and held; output written before it may go),
//! each bounded by [`HttpConfig::store_timeout`]. A store that fails or does not answer
//! in time makes the request `503` with `Retry-After`: nothing the client was not told
//! of is kept (a session whose creation was not stored is undone), and a change the
//! store did not take is offered again with the session's next request.

use crate::http::auth::client::ClientKey;
use crate::http::conn::conns;
use crate::http::conn::exchange::{Phase, Saving, respond_empty};
use crate::http::session::parked::Parked;
use crate::http::session::sessions::{CreateError, Entry, Plan, SessionRef, Sessions};
use crate::http::store::StoreAsk;
use crate::http::store::StoreEvent;
use crate::http::store::session_record;
use crate::http::{ConnId, HeaderList, HttpEngine, conn_in};
use crate::time::Instant;
use crate::timer::Timers;
use crate::wire::session_id::SESSION_ID_LEN;

/// What a refusal for an unavailable store says: try again shortly.
const RETRY: &[(&str, &str)] = &[("retry-after", "1")];

/// A request names a session this engine does not hold ([`StoreEvent::LoadSession`]):
/// look `id` up in the store and answer with [`HttpEngine::session_loaded`]. Only ids
/// this engine's key sealed get here (a forged one is refused without asking).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LoadSession<'a> {
    /// The connection whose request waits.
    pub conn: ConnId,
    /// The session id (the store's key).
    pub id: &'a str,
}

/// A session changed, was created or ended ([`StoreEvent::SaveSession`]): store `record`
/// under `id`, replacing what was there (or, when `record` is `None`, forget `id`), and
/// answer with [`HttpEngine::session_saved`]. The response that acknowledges the change
/// is held until then.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SaveSession<'a> {
    /// The connection whose response waits.
    pub conn: ConnId,
    /// The session id (the store's key).
    pub id: &'a str,
    /// The session's record (versioned; see `docs/decisions.md`), or `None`: the session
    /// ended (`DELETE`).
    pub record: Option<&'a [u8]>,
}

/// This engine ended session `id` on its idle timeout ([`StoreEvent::SessionExpired`]);
/// nothing waits for an answer. A store serving this engine alone forgets it; a store
/// shared by several engines may keep it if another one used it since.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SessionExpired<'a> {
    /// The session id.
    pub id: &'a str,
}

/// A session in use here has not been saved or loaded for
/// [`HttpConfig::session_touch_every`](crate::http::HttpConfig::session_touch_every)
/// ([`StoreEvent::TouchSession`]): push its expiry in the store as a load would, without
/// reading the record. Nothing waits for an answer (no request is held); a store that
/// fails is tried again one interval later. A store whose records do not expire ignores it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct TouchSession<'a> {
    /// The session id.
    pub id: &'a str,
}

/// The answer to a [`LoadSession`].
#[derive(Debug, Clone, Copy)]
pub enum Loaded<'r> {
    /// The session's record, as a [`SaveSession`] gave it.
    Record(&'r [u8]),
    /// The store holds no such session: the request is answered `404` and the client
    /// opens a new one.
    Missing,
    /// The store could not be asked: the request is answered `503` with `Retry-After`.
    Unavailable,
}

impl HttpEngine {
    /// Another node ended session `id` (`DELETE` there, or its expiry; a shared store
    /// said so): if this engine holds the session, it ends here too, as a `DELETE` would
    /// end it (its standalone stream closes, its requests waiting on the client are
    /// cancelled), and the host's store is not told (the other node did that). Returns
    /// whether the session was held here.
    pub fn session_ended_elsewhere(&mut self, now: Instant, id: &[u8]) -> bool {
        self.tick(now);
        let now = self.last_now;
        let Some(r) = self.sessions.held(id) else { return false };
        self.end_here(r, now);
        self.process();
        true
    }

    /// Another node changed session `id` (a shared store said so): if this engine holds
    /// a copy that nothing uses (no request in flight, no standalone stream open, no
    /// parked stream, no change of its own unsaved), the copy is dropped (the session is
    /// not ended) and the next request naming it loads the new record. Returns whether a
    /// copy was dropped; a copy in use stays, and what it saves next replaces the record
    /// (the store's last writer wins).
    pub fn session_changed_elsewhere(&mut self, id: &[u8]) -> bool {
        let Some(r) = self.sessions.held(id) else { return false };
        self.drop_if_idle(r)
    }

    /// Another node may have changed or ended any session without this engine hearing
    /// of it (the host's notices from a shared store were lost: it fell behind, or its
    /// connection to the store broke and was made again). Every copy nothing uses is
    /// dropped, as [`session_changed_elsewhere`](Self::session_changed_elsewhere) drops
    /// one; every copy in use stays and is marked stale: its next request asks the store
    /// for the session first ([`StoreEvent::LoadSession`], answered with
    /// [`session_loaded`](Self::session_loaded)) and goes on in the stored state, or is
    /// answered `404` (and the session ends here) when the store no longer holds it. A
    /// copy with a change of its own unsaved is not reloaded: its next save replaces the
    /// record. Returns how many copies were dropped. Scans the session table.
    pub fn sessions_changed_elsewhere(&mut self) -> usize {
        let mut dropped = 0;
        let refs: Vec<SessionRef> = self.sessions.refs().collect();
        for r in refs {
            if self.drop_if_idle(r) {
                dropped += 1;
            } else if let Some(e) = self.sessions.get_mut(r) {
                e.stale = true;
            }
        }
        dropped
    }

    /// Drops the copy of session `r` if nothing uses it (see
    /// [`session_changed_elsewhere`](Self::session_changed_elsewhere)).
    fn drop_if_idle(&mut self, r: SessionRef) -> bool {
        let parked = self.parked.find(|st| st.session == r).is_some();
        let Some(e) = self.sessions.get(r) else { return false };
        // A stream whose connection closed since leaves `stream` set: only a live one counts.
        let streaming = e.stream.is_some_and(|(s, g)| {
            self.slots
                .get(s as usize)
                .and_then(|x| x.conn.as_ref())
                .is_some_and(|c| c.generation == g && c.streaming && c.session == Some(r))
        });
        if parked || streaming || e.active != 0 || e.unsaved() {
            return false;
        }
        self.sessions.remove(r);
        self.session_timers.set(r.slot(), None);
        true
    }

    /// Whether `slot`'s request names a session the store may hold (a sealed id this
    /// engine does not hold); if so it waits for the store, asked once per request.
    pub(in crate::http) fn begin_load(&mut self, slot: u32) -> bool {
        let deadline = self.last_now + self.http.store_timeout;
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return false };
        if c.loaded {
            return false;
        }
        let (head, _, spans) = c.codec.head_body_and_spans();
        let headers = HeaderList::from_spans(head, spans);
        let mut named = headers.as_slice().iter().filter(|h| h.name.eq_ignore_ascii_case("mcp-session-id"));
        let (Some(h), None) = (named.next(), named.next()) else { return false };
        let value = h.value.trim_ascii();
        // Not held here, or held but stale (`sessions_changed_elsewhere`): ask the store.
        if value.len() != SESSION_ID_LEN || !self.sessions.needs_load(value) {
            return false;
        }
        c.store_id.copy_from_slice(value);
        c.loaded = true;
        c.phase = Phase::Loading;
        c.deadline = Some(deadline);
        self.store.ask(StoreAsk::Load(slot));
        true
    }

    /// Holds `slot`'s response (written after the first `held` output bytes) until the
    /// store took the change to `session` (`None`: the session `id` ended).
    pub(in crate::http) fn begin_save(
        &mut self,
        slot: u32,
        session: Option<SessionRef>,
        id: [u8; SESSION_ID_LEN],
        created: bool,
        held: usize,
    ) {
        let deadline = self.last_now + self.http.store_timeout;
        let changes = session.and_then(|r| self.sessions.get(r)).map_or(0, |e| e.session.changes);
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return };
        c.saving = Some(Saving { session, changes, created, then: c.phase, held });
        c.phase = Phase::Saving;
        c.deadline = Some(deadline);
        c.store_id = id;
        self.store.ask(StoreAsk::Save(slot));
    }

    /// The event of a store `ask`.
    pub(in crate::http) fn store_event(&mut self, ask: StoreAsk) -> Option<StoreEvent<'_>> {
        let slot = ask.slot();
        let s = &mut self.slots[slot as usize];
        let c = s.conn.as_mut()?;
        let conn = ConnId { slot, generation: s.generation };
        let mut record = false;
        if let (StoreAsk::Save(_), Some(sv)) = (ask, c.saving.as_mut()) {
            // The record as it is now: a change made since the save was asked goes with it.
            if let Some(e) = sv.session.and_then(|r| self.sessions.get(r)) {
                self.store.write_record(&e.session, e.principal.as_ref());
                sv.changes = e.session.changes;
                record = true;
            }
        }
        let c = self.slots[slot as usize].conn.as_ref()?;
        let id = core::str::from_utf8(&c.store_id).ok()?;
        Some(match ask {
            StoreAsk::Load(_) => StoreEvent::LoadSession(LoadSession { conn, id }),
            _ => StoreEvent::SaveSession(SaveSession {
                conn,
                id,
                record: record.then_some(self.store.record()),
            }),
        })
    }

    /// Answers a [`LoadSession`]: the request goes on in the session `found` holds, is
    /// answered `404` when it holds none (or a record this engine cannot read), or `503`
    /// with `Retry-After` when the store is unavailable or the table is full of sessions
    /// that cannot leave it. For a stale copy held here (see
    /// [`sessions_changed_elsewhere`](Self::sessions_changed_elsewhere)) the record
    /// replaces what the copy holds, and a store holding none ends the session here. An
    /// answer for a request that no longer waits is ignored.
    pub fn session_loaded(&mut self, now: Instant, conn: ConnId, found: Loaded<'_>) {
        self.tick(now);
        let now = self.last_now;
        let Some(c) = conn_in(&mut self.slots, conn) else { return };
        if c.phase != Phase::Loading || c.resume.is_some() {
            return; // a `GET` waiting for the event store is not waiting for this
        }
        c.deadline = None;
        let addr = c.client;
        let mut full = matches!(found, Loaded::Unavailable);
        let mut restored = None;
        let stale = self.sessions.stale(&c.store_id);
        // Held here and not stale: another request's load brought it back first.
        let here = if stale.is_none() { self.sessions.held(&c.store_id) } else { None };
        if let Some(r) = stale {
            match found {
                Loaded::Record(bytes) => match session_record::decode(bytes) {
                    Ok((session, _)) => {
                        self.sessions.refresh(r, session);
                        self.sessions.synced(r, now);
                        // It stays until this request is served, should it wait for a slot.
                        self.sessions.pin(r);
                        restored = Some(r);
                    }
                    Err(_) => self.end_here(r, now),
                },
                Loaded::Missing => self.end_here(r, now),
                Loaded::Unavailable => {}
            }
        } else if let Some(r) = here {
            // The same: else, waiting for a slot, this request could find the session
            // gone from memory at the cap and get `404` (the first request's pin ends
            // when that one is served).
            if !full {
                self.sessions.pin(r);
                restored = Some(r);
            }
        } else if let Loaded::Record(bytes) = found
            && let Some(token) = self.sessions.absent(&c.store_id)
            && let Ok((mut session, principal)) = session_record::decode(bytes)
        {
            self.core.number_session(&mut session);
            // It counts against the client loading it.
            let client = ClientKey::of(principal, addr);
            if !self.sessions.room_for(client) {
                make_room(&self.core, &mut self.sessions, &self.parked, &mut self.session_timers, client);
            }
            match self.sessions.restore(now, token, principal, client, session) {
                Ok(r) => {
                    self.session_timers.set(r.slot(), self.sessions.deadline(r));
                    // It stays until this request is served, should it wait for a slot.
                    self.sessions.pin(r);
                    restored = Some(r);
                }
                Err(CreateError::Full) => full = true,
                Err(CreateError::Unseeded) => {}
            }
        }
        let Some(c) = conn_in(&mut self.slots, conn) else { return };
        if full {
            conns::lend_out(&mut self.outs, c);
            respond_empty(c, now, 503, RETRY);
        } else {
            c.phase = Phase::Ready;
            c.pinned = restored;
        }
        self.work.push_back(conn.slot);
        self.settle(conn.slot);
        self.process();
    }

    /// Ends session `r` here as a `DELETE` would (its standalone stream closes, its
    /// waiting requests are cancelled) without telling the store: another node ended it,
    /// or the store no longer holds it (a request that asked then finds no session: `404`).
    fn end_here(&mut self, r: SessionRef, now: Instant) {
        let stream =
            end_session(&mut self.core, &mut self.sessions, &mut self.parked, &mut self.session_timers, r);
        if let Some((slot, _)) = stream {
            conns::end_stream(&mut self.slots, stream, now);
            self.settle(slot);
        }
    }

    /// Answers a [`SaveSession`]: `saved` releases the held response; a failure replaces
    /// it with `503` and `Retry-After` (and undoes a session the request created). An
    /// answer for a response that no longer waits is ignored.
    pub fn session_saved(&mut self, now: Instant, conn: ConnId, saved: bool) {
        self.tick(now);
        let now = self.last_now;
        let Some(c) = conn_in(&mut self.slots, conn) else { return };
        if c.phase != Phase::Saving {
            return;
        }
        if !saved {
            self.store_failed(conn.slot, now);
            self.process();
            return;
        }
        let Some(sv) = c.saving.take() else { return };
        c.phase = sv.then;
        c.deadline = None;
        if let Some(e) = sv.session.and_then(|r| self.sessions.get_mut(r)) {
            e.stored = sv.changes;
            e.synced = now;
        }
        self.work.push_back(conn.slot);
        self.settle(conn.slot);
        self.process();
    }

    /// The store failed `slot`'s request, or did not answer in time: `503` with
    /// `Retry-After` instead of what it waited for.
    pub(in crate::http) fn store_failed(&mut self, slot: u32, now: Instant) {
        self.task_wait_failed(slot);
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return };
        self.asks.retain(|a| a.slot() != slot);
        self.store.forget_asks(slot);
        match c.phase {
            Phase::Loading => {
                c.resume = None;
                conns::lend_out(&mut self.outs, c);
                respond_empty(c, now, 503, RETRY);
            }
            Phase::Saving => {
                let Some(sv) = c.saving.take() else { return };
                // The held response is withdrawn; what went before it stays.
                c.out.truncate(sv.held);
                c.phase = sv.then;
                c.deadline = None;
                c.write_head(now, 503, None, 0, RETRY, sv.then == Phase::Closing);
                if let (true, Some(r)) = (sv.created, sv.session) {
                    // Its client never learns the id: the session is undone.
                    if let Some(e) = self.sessions.get(r) {
                        self.core.inputs_gone(Some(e.session.serial));
                    }
                    self.sessions.remove(r);
                    self.session_timers.set(r.slot(), None);
                }
            }
            _ => return,
        }
        self.work.push_back(slot);
        self.settle(slot);
    }
}

/// Ends session `r` as `DELETE` does: what its client was asked can no longer be
/// answered, its parked requests are cancelled, it leaves the table. Returns the
/// connection of its standalone stream, for the caller to end.
pub(in crate::http) fn end_session(
    core: &mut crate::mcp::Core,
    sessions: &mut Sessions,
    parked: &mut Parked,
    timers: &mut Timers,
    r: SessionRef,
) -> Option<(u32, u32)> {
    let stream = sessions.get(r).and_then(|e| {
        core.inputs_gone(Some(e.session.serial));
        core.session_ended(e.id, e.session.legacy);
        e.stream
    });
    for route in parked.drain(|st, _| st.session == r) {
        core.cancel_route(route);
    }
    sessions.remove(r);
    timers.set(r.slot(), None);
    stream
}

/// Makes room for a session of `client` that a store brought back: at its share, or at
/// the cap, a session the store holds unchanged leaves memory (see `Sessions::plan`),
/// with its timer. Returns whether there is room now.
pub(in crate::http) fn make_room(
    core: &crate::mcp::Core,
    sessions: &mut Sessions,
    parked: &Parked,
    timers: &mut Timers,
    client: Option<ClientKey>,
) -> bool {
    match plan_room(core, sessions, parked, true, client) {
        Plan::Free => true,
        Plan::Evict(r) => {
            sessions.remove(r);
            timers.set(r.slot(), None);
            true
        }
        Plan::ClientFull | Plan::Full => false,
    }
}

/// How a session of `client` finds room (`Sessions::plan`), none giving way that a
/// parked stream or a request the host sent its client outside any request still needs
/// (such a request is answered by serial, which a session coming back from a store does
/// not keep). `stored`: the host's session store is on.
pub(in crate::http) fn plan_room(
    core: &crate::mcp::Core,
    sessions: &Sessions,
    parked: &Parked,
    stored: bool,
    client: Option<ClientKey>,
) -> Plan {
    let busy =
        |r, e: &Entry| parked.find(|st| st.session == r).is_some() || core.asks_waiting_in(e.session.serial);
    sessions.plan(client, stored, busy)
}
