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

#[cfg(doc)]
use crate::http::HttpEngine;
use crate::http::auth::client::ClientKey;
use crate::http::conn::conns;
use crate::http::conn::exchange::{ConnSlot, Exchange, Phase, Saving, respond_empty};
use crate::http::session::parked::Parked;
use crate::http::session::sessions::{CreateError, Entry, Plan, SessionRef, Sessions};
#[cfg(doc)]
use crate::http::store::StoreAsk;
#[cfg(doc)]
use crate::http::store::StoreEvent;
use crate::http::store::session_record;
use crate::http::{ConnId, HeaderList};
use crate::mcp::Core;
use crate::time::Instant;
use crate::timer::Timers;
use crate::wire::session_id::SESSION_ID_LEN;
use core::net::IpAddr;

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

/// Drops the copy of session `r` if nothing uses it (see
/// [`HttpEngine::session_changed_elsewhere`]): no request in flight, no live standalone
/// stream among `slots`, no parked stream, no change of its own unsaved.
pub(in crate::http) fn drop_if_idle(
    sessions: &mut Sessions,
    timers: &mut Timers,
    parked: &Parked,
    slots: &[ConnSlot],
    r: SessionRef,
) -> bool {
    let parked = parked.find(|st| st.session == r).is_some();
    let Some(e) = sessions.get(r) else { return false };
    // A stream whose connection closed since leaves `stream` set: only a live one counts.
    let streaming = e.stream.is_some_and(|(s, g)| {
        slots
            .get(s as usize)
            .and_then(|x| x.conn.as_ref())
            .is_some_and(|c| c.generation == g && c.streaming && c.session == Some(r))
    });
    if parked || streaming || e.active != 0 || e.unsaved() {
        return false;
    }
    sessions.remove(r);
    timers.set(r.slot(), None);
    true
}

/// Whether `c`'s request names a session the store may hold (a sealed id this engine
/// does not hold); if so it waits for the store until `deadline`, asked once per request
/// (the caller queues its [`StoreAsk::Load`]).
pub(in crate::http) fn begin_load(c: &mut Exchange, sessions: &Sessions, deadline: Instant) -> bool {
    if c.loaded {
        return false;
    }
    let (head, _, spans) = c.codec.head_body_and_spans();
    let headers = HeaderList::from_spans(head, spans);
    let mut named = headers.as_slice().iter().filter(|h| h.name.eq_ignore_ascii_case("mcp-session-id"));
    let (Some(h), None) = (named.next(), named.next()) else { return false };
    let value = h.value.trim_ascii();
    // Not held here, or held but stale (`sessions_changed_elsewhere`): ask the store.
    if value.len() != SESSION_ID_LEN || !sessions.needs_load(value) {
        return false;
    }
    c.store_id.copy_from_slice(value);
    c.loaded = true;
    c.phase = Phase::Loading;
    c.deadline = Some(deadline);
    true
}

/// Holds `c`'s response (written after the first `held` output bytes) until the store
/// took the change to `session` (`None`: the session `id` ended), or until `deadline`
/// (the caller queues its [`StoreAsk::Save`]).
pub(in crate::http) fn begin_save(
    c: &mut Exchange,
    sessions: &Sessions,
    session: Option<SessionRef>,
    (id, created): ([u8; SESSION_ID_LEN], bool),
    held: usize,
    deadline: Instant,
) {
    let changes = session.and_then(|r| sessions.get(r)).map_or(0, |e| e.session.changes);
    c.saving = Some(Saving { session, changes, created, then: c.phase, held });
    c.phase = Phase::Saving;
    c.deadline = Some(deadline);
    c.store_id = id;
}

/// What a [`Loaded`] answer did to the session a request waited for (see
/// [`HttpEngine::session_loaded`]).
#[derive(Debug, Clone, Copy)]
pub(in crate::http) struct LoadOutcome {
    /// The store was unavailable, or the table is full of sessions that cannot leave it:
    /// `503`.
    pub(in crate::http) full: bool,
    /// The session the request goes on in (pinned until it is served).
    pub(in crate::http) restored: Option<SessionRef>,
    /// A stale copy the store no longer holds (or holds unreadable): the caller ends it
    /// here, as `DELETE` would, without telling the store.
    pub(in crate::http) ended: Option<SessionRef>,
}

/// Applies a [`Loaded`] answer for the session id `id` a request of client address
/// `addr` named: a stale copy refreshed (or to end), a copy another request brought back,
/// or the session restored from its record (room made for it first).
pub(in crate::http) fn take_loaded(
    core: &mut Core,
    sessions: &mut Sessions,
    parked: &Parked,
    timers: &mut Timers,
    (id, addr): ([u8; SESSION_ID_LEN], Option<IpAddr>),
    found: Loaded<'_>,
    now: Instant,
) -> LoadOutcome {
    let mut out = LoadOutcome { full: matches!(found, Loaded::Unavailable), restored: None, ended: None };
    let stale = sessions.stale(&id);
    // Held here and not stale: another request's load brought it back first.
    let here = if stale.is_none() { sessions.held(&id) } else { None };
    if let Some(r) = stale {
        match found {
            Loaded::Record(bytes) => match session_record::decode(bytes) {
                Ok((session, _)) => {
                    sessions.refresh(r, session);
                    sessions.synced(r, now);
                    // It stays until this request is served, should it wait for a slot.
                    sessions.pin(r);
                    out.restored = Some(r);
                }
                Err(_) => out.ended = Some(r),
            },
            Loaded::Missing => out.ended = Some(r),
            Loaded::Unavailable => {}
        }
    } else if let Some(r) = here {
        // The same: else, waiting for a slot, this request could find the session
        // gone from memory at the cap and get `404` (the first request's pin ends
        // when that one is served).
        if !out.full {
            sessions.pin(r);
            out.restored = Some(r);
        }
    } else if let Loaded::Record(bytes) = found
        && let Some(token) = sessions.absent(&id)
        && let Ok((mut session, principal)) = session_record::decode(bytes)
    {
        core.number_session(&mut session);
        // It counts against the client loading it.
        let client = ClientKey::of(principal, addr);
        if !sessions.room_for(client) {
            make_room(core, sessions, parked, timers, client);
        }
        match sessions.restore(now, token, principal, client, session) {
            Ok(r) => {
                timers.set(r.slot(), sessions.deadline(r));
                // It stays until this request is served, should it wait for a slot.
                sessions.pin(r);
                out.restored = Some(r);
            }
            Err(CreateError::Full) => out.full = true,
            Err(CreateError::Unseeded) => {}
        }
    }
    out
}

/// The store failed `c`'s wait, or did not answer in time: `503` with `Retry-After`
/// instead of what it waited for (a held response withdrawn, a session its request
/// created undone). Returns whether `c` waited on the session store (then it goes to
/// work again).
pub(in crate::http) fn fail_wait(
    c: &mut Exchange,
    outs: &mut Vec<Vec<u8>>,
    core: &mut Core,
    sessions: &mut Sessions,
    timers: &mut Timers,
    now: Instant,
) -> bool {
    match c.phase {
        Phase::Loading => {
            c.resume = None;
            conns::lend_out(outs, c);
            respond_empty(c, now, 503, RETRY);
        }
        Phase::Saving => {
            let Some(sv) = c.saving.take() else { return false };
            // The held response is withdrawn; what went before it stays.
            c.out.truncate(sv.held);
            c.phase = sv.then;
            c.deadline = None;
            c.write_head(now, 503, None, 0, RETRY, sv.then == Phase::Closing);
            if let (true, Some(r)) = (sv.created, sv.session) {
                // Its client never learns the id: the session is undone.
                if let Some(e) = sessions.get(r) {
                    core.inputs_gone(Some(e.session.serial));
                }
                sessions.remove(r);
                timers.set(r.slot(), None);
            }
        }
        _ => return false,
    }
    true
}

/// Lends `c` an output buffer and answers its request `503` with `Retry-After` (the
/// session a loaded record brought back found no room).
pub(in crate::http) fn refuse_unavailable(c: &mut Exchange, outs: &mut Vec<Vec<u8>>, now: Instant) {
    conns::lend_out(outs, c);
    respond_empty(c, now, 503, RETRY);
}

/// Ends session `r` as `DELETE` does: what its client was asked can no longer be
/// answered, its parked requests are cancelled, it leaves the table. Returns the
/// connection of its standalone stream, for the caller to end.
pub(in crate::http) fn end_session(
    core: &mut Core,
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
    core: &Core,
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
    core: &Core,
    sessions: &Sessions,
    parked: &Parked,
    stored: bool,
    client: Option<ClientKey>,
) -> Plan {
    let busy =
        |r, e: &Entry| parked.find(|st| st.session == r).is_some() || core.asks_waiting_in(e.session.serial);
    sessions.plan(client, stored, busy)
}
