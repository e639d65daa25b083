//! The sessions of session-bound Streamable HTTP (`2025-11-25`, `2025-06-18`): the table
//! a request's `Mcp-Session-Id` is looked up in.
//!
//! `initialize` creates a session ([`Sessions::create`]): a fresh 128-bit token, its
//! sealed id (`wire::session_id`), the core's [`Session`] value (revision, log level,
//! `initialized`, legacy subscriptions), the principal that created it. A later request
//! finds it by id ([`Sessions::find`]): an id that does not verify under the engine's key
//! is refused without a lookup, and an unknown, ended or expired session, or one another
//! principal created, is not found alike (the client sees `404` and opens a new one).
//!
//! Bounds: at most `max` sessions live, and at most `per_client` of them a client's
//! ([`ClientKey`]: the principal, else the address; counted in `http::shares`). A new
//! session makes room first ([`Sessions::plan`]): a client at its share gives up its own
//! session idle longest; at `max`, the client holding the most sessions gives up its
//! session idle longest (the one asking, when it holds as many as any); only a session
//! with nothing in flight, no stream open and nothing waiting for its client ever gives
//! way. When none can, `create` refuses (the engine answers `429` for a client's share,
//! `503` for the table). A session expires `idle` after its last request ended, and never
//! while the host works on one of its requests ([`Sessions::deadline`]). Finding a
//! session allocates nothing; counting one in or out of its client's share is a few
//! index writes.

use hashbrown::HashMap;

use crate::http::auth::authorize::Principal;
use crate::http::auth::client::ClientKey;
use crate::http::session::shares::Shares;
use crate::mcp::lifecycle::{Mode, Session};
use crate::mcp::{Room, SessionCheck};
use crate::revision::Revision;
use core::time::Duration;

use crate::http::session::replay::{Replay, STANDALONE};
use crate::time::Instant;
use crate::wire::session_id::{EVENT_ID_LEN, SESSION_ID_LEN, SessionIds, Token};

/// A session of the table: its slot and the generation that slot had, so a stale
/// reference to an ended session finds nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct SessionRef {
    slot: u32,
    generation: u32,
}

impl SessionRef {
    /// The slot, as the timer table's key.
    pub(crate) fn slot(self) -> u32 {
        self.slot
    }
}

/// One live session.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) token: Token,
    /// The sealed id the client presents.
    pub(crate) id: [u8; SESSION_ID_LEN],
    /// What the client set up, handed to the core for each of its requests.
    pub(crate) session: Session,
    /// Who created it: only they find it.
    pub(crate) principal: Option<Principal>,
    /// Requests of it the host is still working on (or streams it holds open).
    pub(crate) active: u32,
    /// When its last request ended (or it was created).
    pub(crate) idle_since: Instant,
    /// The connection (slot, generation) holding its standalone `GET` stream, if one was
    /// opened (it may have closed since: check the connection).
    pub(crate) stream: Option<(u32, u32)>,
    /// The number of its standalone stream here: 0 on the engine that created it, a
    /// number of its own (marked `replay::STANDALONE`) on one that loaded it from a store.
    pub(crate) standalone: u32,
    /// The last event number of the standalone stream (it goes on across
    /// reconnections).
    pub(crate) standalone_seq: u32,
    /// The number the next `POST` stream gets (from 1).
    pub(crate) next_stream: u32,
    /// Recent events of its streams, for `Last-Event-ID`.
    pub(crate) replay: Replay,
    /// The session's change count (`Session::changes`) a session store last took: it
    /// is behind while a change is not stored yet.
    pub(crate) stored: u32,
    /// Requests loaded it from a store and wait to be served (for a ticket slot): it
    /// does not leave memory to make room meanwhile.
    pub(crate) pinned: u32,
    /// Another node may have changed or ended it while this engine did not hear
    /// (`HttpEngine::sessions_changed_elsewhere`): its next request checks it against
    /// the store first.
    pub(crate) stale: bool,
    /// When the store last heard of it (created or saved, loaded, touched): a session in
    /// use is touched in the store when this is older than the touch interval.
    pub(crate) synced: Instant,
}

impl Entry {
    /// Whether a change is not in the session store yet.
    pub(crate) fn unsaved(&self) -> bool {
        self.session.changes != self.stored
    }
}

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    entry: Option<Entry>,
}

/// Why a session could not be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CreateError {
    /// `max` sessions are live, or the client holds its share.
    Full,
    /// The host gave the engine no entropy for tokens ([`Sessions::seed`]).
    Unseeded,
}

/// The session table (see the module docs).
#[derive(Debug)]
pub(crate) struct Sessions {
    ids: Option<SessionIds>,
    /// With a session store: how often a session in use is touched there.
    touch_every: Option<Duration>,
    /// Ids of sessions due a touch, oldest first (at most one per session per interval).
    touches: std::collections::VecDeque<[u8; SESSION_ID_LEN]>,
    /// The id the last `next_touch` lends.
    touch_id: [u8; SESSION_ID_LEN],
    by_token: HashMap<Token, u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
    max: usize,
    /// The sessions each client holds.
    shares: Shares,
    idle: Duration,
}

/// How a new session of a client finds room ([`Sessions::plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// There is room.
    Free,
    /// This session gives way first.
    Evict(SessionRef),
    /// The client holds its share, every session of it busy (`429`).
    ClientFull,
    /// The table is full, no session that could give way is idle (`503`).
    Full,
}

impl Sessions {
    /// A table of at most `max` live sessions, at most `per_client` of them one client's,
    /// each expiring `idle` after its last activity. It creates none until
    /// [`seed`](Self::seed)ed.
    pub(crate) fn new(max: usize, per_client: usize, idle: Duration) -> Self {
        Self {
            ids: None,
            touch_every: None,
            touches: std::collections::VecDeque::new(),
            touch_id: [0; SESSION_ID_LEN],
            by_token: HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            max,
            shares: Shares::new(per_client),
            idle,
        }
    }

    /// Touches sessions in use in the store every `every` (`None`, or zero: never; see
    /// `HttpConfig::session_touch_every`).
    pub(crate) fn set_touch_every(&mut self, every: Option<Duration>) {
        self.touch_every = every.filter(|d| !d.is_zero());
    }

    /// Whether a session is due a touch in the store.
    pub(crate) fn has_touch(&self) -> bool {
        !self.touches.is_empty()
    }

    /// The id of the next session due a touch in the store, if any.
    pub(crate) fn next_touch(&mut self) -> Option<&str> {
        self.touch_id = self.touches.pop_front()?;
        core::str::from_utf8(&self.touch_id).ok()
    }

    /// The store heard of session `r` at `now` (it was saved or loaded).
    pub(crate) fn synced(&mut self, r: SessionRef, now: Instant) {
        if let Some(e) = self.get_mut(r) {
            e.synced = now;
        }
    }

    /// A request of `r` ended at `now`: if the store last heard of the session a touch
    /// interval ago or more (and it has nothing unsaved, which a save will carry), it is
    /// due a touch.
    fn note_use(&mut self, r: SessionRef, now: Instant) {
        let Some(every) = self.touch_every else { return };
        let Some(s) = self.slots.get_mut(r.slot as usize).filter(|s| s.generation == r.generation) else {
            return;
        };
        let Some(e) = s.entry.as_mut() else { return };
        if e.unsaved() || now < e.synced + every {
            return;
        }
        e.synced = now;
        // Bounded by the table: a session is queued at most once per interval.
        self.touches.push_back(e.id);
    }

    /// Seals ids with `secret` and draws tokens from `entropy` from now on. Ids sealed
    /// with another secret no longer open.
    pub(crate) fn seed(&mut self, secret: &[u8; 32], previous: &[[u8; 32]], entropy: &[u8; 32]) {
        self.ids = Some(SessionIds::new(secret, previous, entropy));
    }

    /// Whether `initialize` from `client` may open a session now without another giving
    /// way (see [`plan`](Self::plan)).
    pub(crate) fn room_for(&self, client: Option<ClientKey>) -> bool {
        self.live < self.max && !self.shares.at_share(client)
    }

    /// How a session of `client` finds room now: at once, or once a session gives way.
    /// A session gives way only when nothing of it is in flight (no request the host works
    /// on, no stream open, no request waiting to be served after a load), `busy` does not
    /// name it, and, with a store (`stored`), the store holds it as it is. Which one: at
    /// the client's share, its own idle longest; at the table's cap, the idle longest of
    /// the client holding the most sessions, or of the one asking when none holds more
    /// (with a store, failing those, any session idle longest, uncounted ones too, as it
    /// only leaves memory). A request counted against nobody takes no other's place
    /// without a store. The walk is over the client's sessions (its share) at the share;
    /// at the cap it stops at the first session that may go, so it is long only when
    /// nearly every session is busy.
    pub(crate) fn plan(
        &self,
        client: Option<ClientKey>,
        stored: bool,
        busy: impl Fn(SessionRef, &Entry) -> bool,
    ) -> Plan {
        let may_go = |slot: u32| {
            let Some(s) = self.slots.get(slot as usize) else { return false };
            let r = SessionRef { slot, generation: s.generation };
            s.entry
                .as_ref()
                .is_some_and(|e| e.active == 0 && e.pinned == 0 && (!stored || !e.unsaved()) && !busy(r, e))
        };
        let evict =
            |slot: u32| Plan::Evict(SessionRef { slot, generation: self.slots[slot as usize].generation });
        if let Some(key) = client
            && self.shares.at_share(client)
        {
            return self.shares.oldest_of(key, may_go).map_or(Plan::ClientFull, evict);
        }
        if self.live < self.max {
            return Plan::Free;
        }
        let mine = self.shares.count(client);
        let fair = client.and_then(|key| {
            self.shares.among_the_most(mine, &may_go).or_else(|| self.shares.oldest_of(key, &may_go))
        });
        let any = || {
            let slots =
                self.slots.iter().enumerate().filter_map(|(i, s)| Some((i as u32, s.entry.as_ref()?)));
            slots.filter(|&(i, _)| may_go(i)).min_by_key(|(_, e)| e.idle_since).map(|(i, _)| i)
        };
        match fair.or_else(|| if stored { any() } else { None }) {
            Some(slot) => evict(slot),
            None => Plan::Full,
        }
    }

    /// Whether sessions can be created (the table was seeded).
    pub(crate) fn is_seeded(&self) -> bool {
        self.ids.is_some()
    }

    /// Live sessions.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// A new session for `principal`, counted against `client`, idle from `now`.
    pub(crate) fn create(
        &mut self,
        now: Instant,
        principal: Option<Principal>,
        client: Option<ClientKey>,
        session: Session,
    ) -> Result<SessionRef, CreateError> {
        if self.ids.is_none() {
            return Err(CreateError::Unseeded);
        }
        if !self.room_for(client) {
            return Err(CreateError::Full);
        }
        let (token, id) = self.ids.as_mut().ok_or(CreateError::Unseeded)?.mint();
        let r = self.insert(now, token, id, principal, session, 1);
        self.shares.add(r.slot, client);
        Ok(r)
    }

    /// The session a store kept under `token`, back in the table, idle from `now`. Its
    /// streams are numbered from a random point: another engine may have numbered
    /// streams of the same session, and an event id of one of those must not name one
    /// of these. It counts against `client`, the client loading it.
    pub(crate) fn restore(
        &mut self,
        now: Instant,
        token: Token,
        principal: Option<Principal>,
        client: Option<ClientKey>,
        session: Session,
    ) -> Result<SessionRef, CreateError> {
        if self.ids.is_none() {
            return Err(CreateError::Unseeded);
        }
        if !self.room_for(client) {
            return Err(CreateError::Full);
        }
        if let Some(&slot) = self.by_token.get(&token) {
            // Loaded twice at once: the one in the table stands.
            let generation = self.slots[slot as usize].generation;
            return Ok(SessionRef { slot, generation });
        }
        let ids = self.ids.as_mut().ok_or(CreateError::Unseeded)?;
        let (noise, _) = ids.mint();
        let first = u32::from_le_bytes([noise[0], noise[1], noise[2], noise[3]]) & !STANDALONE | (1 << 30);
        // Its standalone stream too: its events must not share ids with another engine's.
        let standalone = u32::from_le_bytes([noise[4], noise[5], noise[6], noise[7]]) | STANDALONE;
        let id = ids.id_of(&token);
        let r = self.insert(now, token, id, principal, session, first);
        self.shares.add(r.slot, client);
        if let Some(e) = self.get_mut(r) {
            e.stored = e.session.changes;
            e.standalone = standalone;
        }
        Ok(r)
    }

    fn insert(
        &mut self,
        now: Instant,
        token: Token,
        id: [u8; SESSION_ID_LEN],
        principal: Option<Principal>,
        session: Session,
        next_stream: u32,
    ) -> SessionRef {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Slot::default());
                u32::try_from(self.slots.len() - 1).unwrap_or(u32::MAX)
            }
        };
        let s = &mut self.slots[slot as usize];
        s.entry = Some(Entry {
            token,
            id,
            session,
            principal,
            active: 0,
            idle_since: now,
            stream: None,
            standalone: 0,
            standalone_seq: 0,
            next_stream,
            replay: Replay::default(),
            stored: 0,
            pinned: 0,
            stale: false,
            synced: now,
        });
        let generation = s.generation;
        self.by_token.insert(token, slot);
        self.live += 1;
        SessionRef { slot, generation }
    }

    /// The token of `id` when it verifies under the key and names no session in the
    /// table (a session store may hold it). Allocates nothing.
    pub(crate) fn absent(&self, id: &[u8]) -> Option<Token> {
        let token = self.ids.as_ref()?.open(id)?;
        (!self.by_token.contains_key(&token)).then_some(token)
    }

    /// The session `id` names when it is held here, marked stale and has no change of its
    /// own unsaved: its next request checks it against the store. Allocates nothing.
    pub(crate) fn stale(&self, id: &[u8]) -> Option<SessionRef> {
        let r = self.held(id)?;
        self.get(r).filter(|e| e.stale && !e.unsaved()).map(|_| r)
    }

    /// Whether a request naming `id` must ask the store first: `id` verifies under the
    /// key and names no session held here, or one marked [`stale`](Self::stale). Opens
    /// the id once; allocates nothing.
    pub(crate) fn needs_load(&self, id: &[u8]) -> bool {
        let Some(token) = self.ids.as_ref().and_then(|ids| ids.open(id)) else { return false };
        let Some(&slot) = self.by_token.get(&token) else { return true };
        self.slots.get(slot as usize).and_then(|s| s.entry.as_ref()).is_some_and(|e| e.stale && !e.unsaved())
    }

    /// Every live session (a scan of the table).
    pub(crate) fn refs(&self) -> impl Iterator<Item = SessionRef> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.entry.is_some())
            .map(|(i, s)| SessionRef { slot: i as u32, generation: s.generation })
    }

    /// Replaces what the client set up in session `r` by what a store holds (`session`,
    /// decoded from its record): the copy is fresh again. Its streams, event numbers and
    /// requests stay as they are.
    pub(crate) fn refresh(&mut self, r: SessionRef, mut session: Session) {
        if let Some(e) = self.get_mut(r) {
            session.serial = e.session.serial;
            e.session = session;
            e.stored = e.session.changes;
            e.stale = false;
        }
    }

    /// The session `id` names, if it is live and `principal` created it. Allocates
    /// nothing.
    pub(crate) fn find(&self, id: &[u8], principal: Option<&Principal>) -> Option<SessionRef> {
        let token = self.ids.as_ref()?.open(id)?;
        let &slot = self.by_token.get(&token)?;
        let s = self.slots.get(slot as usize)?;
        let e = s.entry.as_ref()?;
        (e.principal.as_ref() == principal).then_some(SessionRef { slot, generation: s.generation })
    }

    /// The session `id` names, if it is live here, whoever created it (for what a store
    /// shared with other nodes reports). Allocates nothing.
    pub(crate) fn held(&self, id: &[u8]) -> Option<SessionRef> {
        let token = self.ids.as_ref()?.open(id)?;
        let &slot = self.by_token.get(&token)?;
        let s = self.slots.get(slot as usize)?;
        s.entry.as_ref().map(|_| SessionRef { slot, generation: s.generation })
    }

    /// The live session `r` refers to.
    pub(crate) fn get(&self, r: SessionRef) -> Option<&Entry> {
        let s = self.slots.get(r.slot as usize)?;
        if s.generation != r.generation {
            return None;
        }
        s.entry.as_ref()
    }

    /// The live session `r` refers to.
    pub(crate) fn get_mut(&mut self, r: SessionRef) -> Option<&mut Entry> {
        let s = self.slots.get_mut(r.slot as usize)?;
        if s.generation != r.generation {
            return None;
        }
        s.entry.as_mut()
    }

    /// The id of event `seq` of `stream` of session `r`.
    pub(crate) fn event_id(&self, r: SessionRef, stream: u32, seq: u32) -> Option<[u8; EVENT_ID_LEN]> {
        let token = self.get(r)?.token;
        Some(self.ids.as_ref()?.event_id(&token, stream, seq))
    }

    /// The stream and event number an event id of session `r` names.
    pub(crate) fn open_event_id(&self, r: SessionRef, text: &[u8]) -> Option<(u32, u32)> {
        let token = self.get(r)?.token;
        self.ids.as_ref()?.open_event_id(&token, text)
    }

    /// Every live session that opened a standalone stream (a scan of the table: for
    /// catalog changes and resource updates).
    pub(crate) fn with_streams(&self) -> impl Iterator<Item = &Entry> {
        self.slots.iter().filter_map(|s| s.entry.as_ref()).filter(|e| e.stream.is_some())
    }

    /// The live session in `slot` (a timer fired for it).
    pub(crate) fn at(&self, slot: u32) -> Option<SessionRef> {
        let s = self.slots.get(slot as usize)?;
        s.entry.as_ref().map(|_| SessionRef { slot, generation: s.generation })
    }

    /// Ends a session (`DELETE`, expiry). Returns whether it was live.
    pub(crate) fn remove(&mut self, r: SessionRef) -> bool {
        let Some(s) = self.slots.get_mut(r.slot as usize) else { return false };
        if s.generation != r.generation {
            return false;
        }
        let Some(e) = s.entry.take() else { return false };
        s.generation = s.generation.wrapping_add(1);
        self.by_token.remove(&e.token);
        self.shares.remove(r.slot);
        self.free.push(r.slot);
        self.live -= 1;
        true
    }

    /// A request loaded `r` from a store and waits to be served: `r` stays in memory
    /// until [`unpin`](Self::unpin).
    pub(crate) fn pin(&mut self, r: SessionRef) {
        if let Some(e) = self.get_mut(r) {
            e.pinned += 1;
        }
    }

    /// The request that [`pin`](Self::pin)ned `r` is served (or gone).
    pub(crate) fn unpin(&mut self, r: SessionRef) {
        if let Some(e) = self.get_mut(r) {
            e.pinned = e.pinned.saturating_sub(1);
        }
    }

    /// A request of `r` waits for the host: the session does not expire meanwhile.
    pub(crate) fn begin(&mut self, r: SessionRef) {
        if let Some(e) = self.get_mut(r) {
            e.active += 1;
        }
    }

    /// A request of `r` ended (answered, or its connection closed) at `now`.
    pub(crate) fn end(&mut self, r: SessionRef, now: Instant) {
        if let Some(e) = self.get_mut(r) {
            e.active = e.active.saturating_sub(1);
            e.idle_since = now;
            self.shares.touch(r.slot);
        }
        self.note_use(r, now);
    }

    /// A request of `r` was answered at once, at `now`.
    pub(crate) fn end_now(&mut self, r: SessionRef, now: Instant) {
        if let Some(e) = self.get_mut(r) {
            e.idle_since = now;
            self.shares.touch(r.slot);
        }
        self.note_use(r, now);
    }

    /// When `r` expires: `idle` after its last request ended, never while one runs.
    pub(crate) fn deadline(&self, r: SessionRef) -> Option<Instant> {
        let e = self.get(r)?;
        (e.active == 0).then(|| e.idle_since + self.idle)
    }

    /// Ends `r` if it is past its deadline at `now`. Returns whether it ended.
    pub(crate) fn expire(&mut self, r: SessionRef, now: Instant) -> bool {
        if self.deadline(r).is_some_and(|d| d <= now) { self.remove(r) } else { false }
    }
}

/// How a request is served, from its headers: the rules, what its `Mcp-Session-Id`
/// names, and the session to hand the core.
///
/// - Sessions off (the table was not seeded): the stateless wire only.
/// - `Mcp-Session-Id` present: the session it names, if it is live and the caller's
///   (else every message is refused `404`; a second `Mcp-Session-Id` header names none).
/// - Absent, with `MCP-Protocol-Version` absent or naming a session-bound revision: the
///   session-bound wire, where `initialize` opens a session (and a request naming
///   `2026-07-28` in `_meta` is still served statelessly); `Room::Full` at the table's
///   cap (the caller asks [`Sessions::room_for`] its client, and [`Sessions::plan`]).
/// - Absent, with `MCP-Protocol-Version` naming anything else: the stateless wire (so
///   `initialize` there is `-32601`, as the stateless revision says).
pub(crate) fn route(
    sessions: &Sessions,
    headers: &[httparse::Header<'_>],
    principal: Option<&Principal>,
) -> (Mode, SessionCheck, Option<SessionRef>) {
    if !sessions.is_seeded() {
        return (Mode::Http, SessionCheck::Own, None);
    }
    let named = |name: &'static str| headers.iter().filter(move |h| h.name.eq_ignore_ascii_case(name));
    let mut ids = named("mcp-session-id");
    if let Some(first) = ids.next() {
        return match (ids.next(), sessions.find(first.value.trim_ascii(), principal)) {
            (None, Some(r)) => (Mode::HttpSessions, SessionCheck::Attached, Some(r)),
            _ => (Mode::HttpSessions, SessionCheck::Unknown, None),
        };
    }
    let legacy = match named("mcp-protocol-version").next() {
        None => true,
        Some(h) => core::str::from_utf8(h.value.trim_ascii())
            .ok()
            .and_then(Revision::parse)
            .is_some_and(|r| !r.is_stateless()),
    };
    if legacy {
        let room = if sessions.room_for(None) { Room::Yes } else { Room::Full };
        (Mode::HttpSessions, SessionCheck::Absent(room), None)
    } else {
        (Mode::Http, SessionCheck::Own, None)
    }
}

/// Why a `GET` for the standalone stream of `session` is refused, by its headers: no
/// `Accept: text/event-stream` (`406`), an `MCP-Protocol-Version` other than the
/// session's revision (`400`).
pub(crate) fn stream_refusal(headers: &[httparse::Header<'_>], session: &Session) -> Option<u16> {
    let named = |name: &'static str| headers.iter().filter(move |h| h.name.eq_ignore_ascii_case(name));
    let accepts = named("accept").any(|h| {
        h.value.split(|&b| b == b',').any(|t| {
            let t = t.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
            t.eq_ignore_ascii_case(b"text/event-stream") || t == b"*/*" || t.eq_ignore_ascii_case(b"text/*")
        })
    });
    if !accepts {
        return Some(406);
    }
    let revision = session.legacy.map(Revision::as_str);
    if named("mcp-protocol-version").any(|h| Some(h.value.trim_ascii()) != revision.map(str::as_bytes)) {
        return Some(400);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(secs)
    }

    fn table(max: usize) -> Sessions {
        let mut t = Sessions::new(max, max, Duration::from_secs(60));
        t.seed(&[1; 32], &[], &[2; 32]);
        t
    }

    #[test]
    fn a_created_session_is_found_by_its_id_and_only_by_it() {
        let mut t = table(8);
        let a = t.create(at(0), None, None, Session::default()).unwrap();
        let b = t.create(at(0), None, None, Session::default()).unwrap();
        let (ida, idb) = (t.get(a).unwrap().id, t.get(b).unwrap().id);
        assert_ne!(ida, idb);
        assert_eq!(t.find(&ida, None), Some(a));
        assert_eq!(t.find(&idb, None), Some(b));
        assert_eq!(t.find(b"not-an-id", None), None);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn an_unseeded_table_creates_none_and_finds_none() {
        let mut t = Sessions::new(8, 8, Duration::from_secs(60));
        assert_eq!(t.create(at(0), None, None, Session::default()), Err(CreateError::Unseeded));
        assert_eq!(t.find(&[b'A'; SESSION_ID_LEN], None), None);
    }

    #[test]
    fn at_the_cap_creation_is_refused_and_no_live_session_is_evicted() {
        let mut t = table(2);
        let a = t.create(at(0), None, None, Session::default()).unwrap();
        let b = t.create(at(0), None, None, Session::default()).unwrap();
        assert_eq!(t.create(at(0), None, None, Session::default()), Err(CreateError::Full));
        assert!(t.get(a).is_some() && t.get(b).is_some());
        assert!(t.remove(a));
        assert!(t.create(at(1), None, None, Session::default()).is_ok(), "room once one ended");
    }

    #[test]
    fn an_ended_session_is_not_found_and_its_reference_goes_stale() {
        let mut t = table(8);
        let a = t.create(at(0), None, None, Session::default()).unwrap();
        let id = t.get(a).unwrap().id;
        assert!(t.remove(a));
        assert!(!t.remove(a), "once");
        assert_eq!(t.find(&id, None), None);
        let b = t.create(at(0), None, None, Session::default()).unwrap();
        assert_eq!(b.slot(), a.slot(), "the slot is reused");
        assert!(t.get(a).is_none(), "under a new generation");
        assert_eq!(t.find(&id, None), None, "the old id still names nothing");
    }

    #[test]
    fn another_principal_does_not_find_the_session() {
        let mut t = table(8);
        let alice = Principal::of(b"alice");
        let a = t.create(at(0), Some(alice), None, Session::default()).unwrap();
        let id = t.get(a).unwrap().id;
        assert_eq!(t.find(&id, Some(&alice)), Some(a));
        assert_eq!(t.find(&id, Some(&Principal::of(b"bob"))), None);
        assert_eq!(t.find(&id, None), None);
    }

    #[test]
    fn a_session_expires_when_idle_past_its_timeout() {
        let mut t = table(8);
        let a = t.create(at(0), None, None, Session::default()).unwrap();
        assert_eq!(t.deadline(a), Some(at(60)));
        t.get_mut(a).unwrap().idle_since = at(100);
        assert_eq!(t.deadline(a), Some(at(160)), "idle from its last request");
        assert!(!t.expire(a, at(159)));
        assert!(t.expire(a, at(160)));
        assert!(t.get(a).is_none());
        assert_eq!(t.deadline(a), None);
    }

    #[test]
    fn a_session_with_a_request_in_flight_does_not_expire() {
        let mut t = table(8);
        let a = t.create(at(0), None, None, Session::default()).unwrap();
        t.begin(a);
        assert_eq!(t.deadline(a), None);
        assert!(!t.expire(a, at(1000)));
        t.end(a, at(1000));
        assert_eq!(t.deadline(a), Some(at(1060)), "idle from the end of the request");
    }

    #[test]
    fn a_reseeded_table_refuses_ids_of_the_old_secret() {
        let mut t = table(8);
        let a = t.create(at(0), None, None, Session::default()).unwrap();
        let id = t.get(a).unwrap().id;
        t.seed(&[3; 32], &[], &[2; 32]);
        assert_eq!(t.find(&id, None), None);
    }

    fn client(s: &str) -> Option<ClientKey> {
        Some(ClientKey::addr(s.parse().unwrap()))
    }

    fn idle(_: SessionRef, _: &Entry) -> bool {
        false
    }

    #[test]
    fn a_client_at_its_share_gives_up_its_own_session_idle_longest() {
        let mut t = Sessions::new(16, 3, Duration::from_secs(60));
        t.seed(&[1; 32], &[], &[2; 32]);
        let (a, b) = (client("192.0.2.1"), client("192.0.2.2"));
        let mine: Vec<_> = (0..3).map(|i| t.create(at(i), None, a, Session::default()).unwrap()).collect();
        let theirs = t.create(at(3), None, b, Session::default()).unwrap();
        assert!(!t.room_for(a) && t.room_for(b) && t.room_for(None));
        assert_eq!(t.create(at(4), None, a, Session::default()), Err(CreateError::Full));
        assert_eq!(t.plan(a, false, idle), Plan::Evict(mine[0]));
        // Used since: another is idle longest now; one in flight never gives way.
        t.end_now(mine[0], at(5));
        assert_eq!(t.plan(a, false, idle), Plan::Evict(mine[1]));
        t.begin(mine[1]);
        assert_eq!(t.plan(a, false, idle), Plan::Evict(mine[2]));
        assert_eq!(t.plan(a, false, |r, _| r == mine[2]), Plan::Evict(mine[0]), "busy for the caller");
        t.begin(mine[0]);
        t.begin(mine[2]);
        assert_eq!(t.plan(a, false, idle), Plan::ClientFull, "every one busy");
        assert_eq!(t.plan(b, false, idle), Plan::Free);
        assert!(t.get(theirs).is_some());
        t.end(mine[1], at(6));
        assert!(t.remove(mine[1]));
        assert!(t.room_for(a));
    }

    #[test]
    fn at_the_cap_the_client_holding_the_most_gives_way() {
        let mut t = Sessions::new(6, 4, Duration::from_secs(60));
        t.seed(&[1; 32], &[], &[2; 32]);
        let (a, b, c) = (client("192.0.2.1"), client("192.0.2.2"), client("192.0.2.3"));
        let of_a: Vec<_> = (0..2).map(|i| t.create(at(i), None, a, Session::default()).unwrap()).collect();
        let of_b: Vec<_> = (2..5).map(|i| t.create(at(i), None, b, Session::default()).unwrap()).collect();
        let none = t.create(at(0), None, None, Session::default()).unwrap();
        assert!(!t.room_for(c));
        // b holds the most: its session idle longest goes, for c or for a.
        assert_eq!(t.plan(c, false, idle), Plan::Evict(of_b[0]));
        assert_eq!(t.plan(a, false, idle), Plan::Evict(of_b[0]));
        // b itself, holding the most, gives up its own.
        assert_eq!(t.plan(b, false, idle), Plan::Evict(of_b[0]));
        // b's all busy: a client holding as many as a does not take a's place, a its own.
        for &r in &of_b {
            t.begin(r);
        }
        assert_eq!(t.plan(c, false, idle), Plan::Evict(of_a[0]), "a holds more than c");
        assert_eq!(t.plan(a, false, idle), Plan::Evict(of_a[0]), "its own");
        assert_eq!(t.plan(None, false, idle), Plan::Full, "uncounted, no store: nobody's place");
        for &r in &of_a {
            t.begin(r);
        }
        assert_eq!(t.plan(c, false, idle), Plan::Full, "only the uncounted one is idle");
        // With a store, an idle session leaves memory, uncounted or not.
        assert_eq!(t.plan(c, true, idle), Plan::Evict(none));
        assert_eq!(t.plan(None, true, idle), Plan::Evict(none));
    }
}
