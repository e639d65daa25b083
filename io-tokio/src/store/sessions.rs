//! Where HTTP sessions are kept beyond the engine's memory: [`SessionStore`], and the
//! in-memory [`MemorySessionStore`].
//!
//! With a store ([`HttpServer::session_store`](crate::HttpServer::session_store)), the
//! engine asks for a session it does not hold (a request names it after a restart, or on
//! another node sharing the engine's key), and holds the answer to a request that changed
//! a session until the store has the session's record. The record is opaque bytes, small
//! (a few dozen bytes plus the subscribed uris) and versioned; its format is described in
//! `docs/decisions.md`. A store that fails, or does not answer within the engine's
//! [`store_timeout`](mcp_engine::http::HttpConfig::store_timeout), makes the request
//! `503` with `Retry-After`.
//!
//! Beside it, [`EventStore`] keeps the events of session streams for `Last-Event-ID`
//! resumption on any node ([`HttpServer::event_store`](crate::HttpServer::event_store)),
//! within [`EventBounds`]; [`MemorySessionStore`] is one too.
//! A store shared by several servers may tell each of them what the others did
//! ([`SessionStore::notices`], [`StoreNotice`]): the server hands each notice to its
//! engine, so a copy of a session another node changed or ended is not served stale. It
//! may also carry what the servers announce to each other ([`SessionStore::announce`],
//! [`CatalogNews`]): catalog changes and resource updates, for the streams of every node.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use mcp_engine::subs::CatalogChange;
use tokio::sync::mpsc;

/// What a [`SessionStore`] method returns: a boxed future (the trait is used as a trait
/// object, and the store is asked only when a session changes or comes back, never for a
/// steady-state request).
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A store that could not do what it was asked (the request is answered `503` with
/// `Retry-After`). The message goes to the server's log, never to the client.
#[derive(Debug)]
pub struct StoreError(Box<dyn std::error::Error + Send + Sync>);

impl StoreError {
    /// An error of the store's own.
    pub fn new(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self(e.into())
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "session store: {}", self.0)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// Keeps session records by session id.
///
/// Every method may be called concurrently for different ids; for one id the server
/// asks one thing at a time per request, and a later save replaces an earlier one.
/// A save must be durable when its future completes: the client is told of the change
/// then.
pub trait SessionStore: Send + Sync + 'static {
    /// The record saved under `id`, or `None` when there is none (never saved, removed,
    /// or expired): the client is then told the session is gone (`404`) and opens a new
    /// one.
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Vec<u8>>>;

    /// Keeps `record` under `id`, replacing what was there.
    fn save<'a>(&'a self, id: &'a str, record: &'a [u8]) -> StoreFuture<'a, ()>;

    /// Forgets `id` (the client ended the session with `DELETE`). Forgetting an id that is
    /// not there succeeds.
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;

    /// This server ended `id` on its idle timeout. By default the record is removed; a
    /// store shared by several servers may keep it if another one used the session since.
    fn expired<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.remove(id)
    }

    /// A session in use on this server has not been saved or loaded for a while
    /// ([`HttpConfig::session_touch_every`](mcp_engine::http::HttpConfig::session_touch_every)):
    /// keep its record as a load would (push its expiry), without reading it. Called off
    /// the request path (nothing waits); a failure is logged and the next interval tries
    /// again. The default does nothing (a store whose records expire only on their own
    /// schedule should implement it).
    fn touch<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let _ = id;
        Box::pin(std::future::ready(Ok(())))
    }

    /// What the other servers sharing this store do, as it hears them: the server asks
    /// once, when it starts serving (and again, after a pause, while this fails), and
    /// hands every notice to its engine (see [`StoreNotice`]). `None`, the default: the
    /// store tells nothing (it serves one server, or cannot hear the others).
    fn notices(&self) -> StoreFuture<'_, Option<StoreNotices>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Tells the other servers sharing this store of a catalog change or resource update
    /// made on this one: they hear it as [`StoreNotice::Catalog`] (and this server does
    /// not). The server calls it after applying the change to its own engine, off the
    /// request path; a failure is logged. The default tells no one.
    fn announce<'a>(&'a self, news: &'a CatalogNews) -> StoreFuture<'a, ()> {
        let _ = news;
        Box::pin(std::future::ready(Ok(())))
    }
}

/// What a server announces to the others sharing its store ([`SessionStore::announce`])
/// and hears from them ([`StoreNotice::Catalog`]): news for the clients' streams.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CatalogNews {
    /// Lists changed in the sender's catalog ([`Publisher::replace_catalog`](crate::handler::Publisher::replace_catalog)):
    /// the receiving server tells its streams
    /// ([`HttpEngine::announce_list_changed`](mcp_engine::http::HttpEngine::announce_list_changed)),
    /// and its clients list again, from the receiver's own catalog.
    ListChanged(CatalogChange),
    /// A resource changed ([`Publisher::resource_updated`](crate::handler::Publisher::resource_updated)):
    /// the receiving server tells its subscribers
    /// ([`Commands::notify_resource_updated`](mcp_engine::Commands::notify_resource_updated)).
    ResourceUpdated(String),
}

/// What another server sharing a [`SessionStore`] did, as its
/// [`notices`](SessionStore::notices) tell it.
///
/// [`HttpServer`](crate::HttpServer) hands `Changed` to
/// [`HttpEngine::session_changed_elsewhere`](mcp_engine::http::HttpEngine::session_changed_elsewhere),
/// `Ended` to
/// [`HttpEngine::session_ended_elsewhere`](mcp_engine::http::HttpEngine::session_ended_elsewhere),
/// `Missed` to
/// [`HttpEngine::sessions_changed_elsewhere`](mcp_engine::http::HttpEngine::sessions_changed_elsewhere)
/// (and announces every list changed), and `Catalog` news to its streams (see
/// [`CatalogNews`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreNotice {
    /// Another node committed a new record for this session (a save).
    Changed(String),
    /// Another node ended this session: removed it (the client's `DELETE`), or deleted
    /// it on its idle timeout ([`SessionStore::expired`]).
    Ended(String),
    /// Notices were lost: the receiver fell behind (the channel was full) or the
    /// listening connection broke and was made again (what was written meanwhile was not
    /// heard). Any session may have changed or ended since: treat every copy nothing
    /// uses as stale (drop it; the next request loads it again), and check copies in use
    /// against the store at their next request. Delivered once, after the loss, before
    /// any notice heard after it. Catalog news may have been lost too: the server
    /// announces every list changed to its streams, so their clients list again.
    Missed,
    /// Another node announced news for the clients' streams ([`SessionStore::announce`]).
    Catalog(CatalogNews),
    /// Another node saved this task's record (a [`TaskStore`](crate::store::TaskStore) sharing
    /// the notices): the server hands it to
    /// [`HttpEngine::task_changed_elsewhere`](mcp_engine::http::HttpEngine::task_changed_elsewhere).
    TaskChanged(String),
}

impl StoreNotice {
    /// The session the notice is about (`None` for [`Missed`](Self::Missed) and
    /// [`Catalog`](Self::Catalog)).
    pub fn session(&self) -> Option<&str> {
        match self {
            Self::Changed(id) | Self::Ended(id) => Some(id),
            Self::Missed | Self::Catalog(_) | Self::TaskChanged(_) => None,
        }
    }

    /// Whether this is [`Changed`](Self::Changed).
    pub fn is_changed(&self) -> bool {
        matches!(self, Self::Changed(_))
    }

    /// Whether this is [`Ended`](Self::Ended).
    pub fn is_ended(&self) -> bool {
        matches!(self, Self::Ended(_))
    }

    /// Whether this is [`Missed`](Self::Missed).
    pub fn is_missed(&self) -> bool {
        matches!(self, Self::Missed)
    }
}

/// The notices a [`SessionStore`] delivers ([`SessionStore::notices`]): a bounded
/// channel a task of the store's fills. The store decides what happens when the
/// receiver falls behind (it must not buffer without bound: drop, and deliver
/// [`StoreNotice::Missed`] once there is room). Dropping this value ends the store's
/// task, if it gave one ([`with_task`](Self::with_task)).
#[derive(Debug)]
pub struct StoreNotices {
    rx: mpsc::Receiver<StoreNotice>,
    task: Option<tokio::task::AbortHandle>,
}

impl StoreNotices {
    /// The notices sent on the other end of `rx`.
    pub fn new(rx: mpsc::Receiver<StoreNotice>) -> Self {
        Self { rx, task: None }
    }

    /// The notices sent on the other end of `rx` by `task`, which is aborted when this
    /// value is dropped.
    pub fn with_task(rx: mpsc::Receiver<StoreNotice>, task: tokio::task::AbortHandle) -> Self {
        Self { rx, task: Some(task) }
    }

    /// The next notice, waiting for it. `None` once every sender is gone (the store's
    /// task ended). Cancel-safe: in a `select!`, no notice is lost when another branch
    /// wins.
    pub async fn recv(&mut self) -> Option<StoreNotice> {
        self.rx.recv().await
    }

    /// The next notice if one is waiting.
    pub fn try_recv(&mut self) -> Option<StoreNotice> {
        self.rx.try_recv().ok()
    }

    /// [`recv`](Self::recv) as a poll, for a hand-written future or stream.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<StoreNotice>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for StoreNotices {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// A [`SessionStore`] in this process's memory: sessions survive the engine dropping
/// them from its own table (at its session cap) but not a restart. Bounded: at most
/// `max` records, each kept at most `ttl` after it was last saved or loaded (a save
/// beyond the cap, once expired records are dropped, fails: the request is `503`).
/// It is an [`EventStore`] too, keeping each session's stream events
/// within its [`EventBounds`] until the session is removed or expires.
#[derive(Debug)]
pub struct MemorySessionStore {
    records: Mutex<HashMap<String, (Vec<u8>, Instant)>>,
    max: usize,
    ttl: Duration,
    events: Mutex<HashMap<String, SessionEvents>>,
    pub(crate) event_bounds: EventBounds,
}

impl MemorySessionStore {
    /// A store of at most `max` records, each kept `ttl` after its last save or load
    /// (give at least the engine's
    /// [`session_idle_timeout`](mcp_engine::http::HttpConfig::session_idle_timeout)).
    pub fn new(max: usize, ttl: Duration) -> Self {
        Self {
            records: Mutex::new(HashMap::new()),
            max,
            ttl,
            events: Mutex::new(HashMap::new()),
            event_bounds: EventBounds::default(),
        }
    }

    /// How many stream events it keeps per stream and per session (default
    /// [`EventBounds::default`]).
    pub fn event_bounds(mut self, bounds: EventBounds) -> Self {
        self.event_bounds = bounds;
        self
    }

    /// Records held now (expired ones included until they are dropped).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Vec<u8>, Instant)>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.records.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The records and the events, locked in that order (always: no deadlock).
    #[allow(clippy::type_complexity)]
    pub(crate) fn lock_both(
        &self,
    ) -> (
        std::sync::MutexGuard<'_, HashMap<String, (Vec<u8>, Instant)>>,
        std::sync::MutexGuard<'_, HashMap<String, SessionEvents>>,
    ) {
        let records = self.lock();
        (records, self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Whether `records` holds `id`, not expired.
    pub(crate) fn holds(&self, records: &HashMap<String, (Vec<u8>, Instant)>, id: &str) -> bool {
        records.get(id).is_some_and(|(_, at)| at.elapsed() < self.ttl)
    }
}

impl MemorySessionStore {
    /// Drops the events of the sessions `gone` names (the records' lock is held).
    fn forget_events(&self, gone: impl Fn(&str) -> bool) {
        let mut events = self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        events.retain(|id, _| !gone(id));
    }
}

impl Default for MemorySessionStore {
    /// 65,536 records, each kept 30 minutes (the engine's default idle timeout).
    fn default() -> Self {
        Self::new(65_536, Duration::from_secs(30 * 60))
    }
}

impl SessionStore for MemorySessionStore {
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        let now = Instant::now();
        let mut map = self.lock();
        let found = match map.get_mut(id) {
            Some((record, at)) if now.duration_since(*at) < self.ttl => {
                *at = now;
                Some(record.clone())
            }
            Some(_) => {
                map.remove(id);
                self.forget_events(|e| e == id);
                None
            }
            None => None,
        };
        Box::pin(std::future::ready(Ok(found)))
    }

    fn save<'a>(&'a self, id: &'a str, record: &'a [u8]) -> StoreFuture<'a, ()> {
        let now = Instant::now();
        let mut map = self.lock();
        if map.len() >= self.max && !map.contains_key(id) {
            map.retain(|_, (_, at)| now.duration_since(*at) < self.ttl);
            self.forget_events(|e| !map.contains_key(e));
        }
        let r = if map.len() >= self.max && !map.contains_key(id) {
            Err(StoreError::new(format!("full ({} records)", self.max)))
        } else {
            map.insert(id.to_owned(), (record.to_vec(), now));
            Ok(())
        };
        Box::pin(std::future::ready(r))
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let (mut records, mut events) = self.lock_both();
        records.remove(id);
        events.remove(id);
        Box::pin(std::future::ready(Ok(())))
    }

    fn touch<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let now = Instant::now();
        if let Some((_, at)) = self.lock().get_mut(id).filter(|(_, at)| now.duration_since(*at) < self.ttl) {
            *at = now;
        }
        Box::pin(std::future::ready(Ok(())))
    }
}

/// An event of a session stream, to append ([`EventStore::append`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamEvent {
    /// The session's id.
    pub session: String,
    /// The stream, within the session.
    pub stream: u32,
    /// Its number in the stream (from 1, in order).
    pub seq: u32,
    /// The SSE data (a JSON-RPC message; empty for a priming event).
    pub data: Vec<u8>,
    /// The stream's last event (its request's answer).
    pub last: bool,
}

impl StreamEvent {
    /// An event, as the engine lends it.
    pub fn new(session: &str, stream: u32, seq: u32, data: &[u8], last: bool) -> Self {
        Self { session: session.to_owned(), stream, seq, data: data.to_vec(), last }
    }
}

/// A kept event ([`EventStore::load_events`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeptEvent {
    /// Its number in its stream.
    pub seq: u32,
    /// Its data.
    pub data: Vec<u8>,
    /// Whether it was its stream's last.
    pub last: bool,
}

impl KeptEvent {
    /// A kept event.
    pub fn new(seq: u32, data: Vec<u8>, last: bool) -> Self {
        Self { seq, data, last }
    }
}

/// How many events an [`EventStore`] keeps, per stream and per session, in events and in
/// bytes of data: past any bound the oldest go first (a stream's oldest for the stream
/// bounds, the session's oldest whatever its stream for the session bounds), and a
/// client resuming after events that went is told so (`: gap`). An event larger than the
/// stream's byte bound is not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventBounds {
    /// Events kept per stream (default 256, at least 1).
    pub stream_events: u32,
    /// Bytes of data kept per stream (default 64 KiB, the engine's default
    /// [`replay_buffer`](mcp_engine::http::HttpConfig::replay_buffer): a replay writes at
    /// most that much).
    pub stream_bytes: u32,
    /// Events kept per session, across its streams (default 1,024).
    pub session_events: u32,
    /// Bytes of data kept per session (default 256 KiB).
    pub session_bytes: u32,
}

impl Default for EventBounds {
    fn default() -> Self {
        Self { stream_events: 256, stream_bytes: 64 * 1024, session_events: 1024, session_bytes: 256 * 1024 }
    }
}

/// Keeps the events of session streams, by session, stream and number.
///
/// Events of one stream arrive in order; a store keeps at most its [`EventBounds`] of
/// them, and forgets a session's events with the session (removed, expired). A
/// successful append is visible to every server sharing the store when its future
/// completes.
pub trait EventStore: Send + Sync + 'static {
    /// Appends `events` (of one or several sessions), trimming each session they touch
    /// to the bounds. An event already kept (same session, stream and number) is kept
    /// as it was. Events of a session the store does not hold (removed, expired, never
    /// saved) are dropped.
    fn append<'a>(&'a self, events: &'a [StreamEvent]) -> StoreFuture<'a, ()>;

    /// The kept events of `stream` of `session` numbered `from` or later, oldest first
    /// (none when the session is not held: removed or expired).
    fn load_events<'a>(&'a self, session: &'a str, stream: u32, from: u32)
    -> StoreFuture<'a, Vec<KeptEvent>>;
}

/// The events of one session a [`MemorySessionStore`] keeps, oldest first.
pub(crate) type SessionEvents = Vec<(u32, KeptEvent)>;

/// Trims `kept` (one session's events, oldest first) to `b`.
pub(crate) fn trim(kept: &mut SessionEvents, b: &EventBounds) {
    let size = |e: &(u32, KeptEvent)| e.1.data.len() as u64;
    // Per stream: from the newest back, drop what passes a stream bound.
    let mut per: HashMap<u32, (u32, u64)> = HashMap::new();
    let mut keep = vec![true; kept.len()];
    for (i, e) in kept.iter().enumerate().rev() {
        let (n, bytes) = per.entry(e.0).or_default();
        *n += 1;
        *bytes += size(e);
        keep[i] = *n <= b.stream_events && *bytes <= u64::from(b.stream_bytes);
    }
    // Per session: then the session's oldest beyond its bounds.
    let (mut n, mut bytes) = (0u32, 0u64);
    for (i, e) in kept.iter().enumerate().rev() {
        if keep[i] {
            n += 1;
            bytes += size(e);
            keep[i] = n <= b.session_events && bytes <= u64::from(b.session_bytes);
        }
    }
    let mut flags = keep.into_iter();
    kept.retain(|_| flags.next().unwrap_or(false));
}

impl EventStore for MemorySessionStore {
    fn append<'a>(&'a self, events: &'a [StreamEvent]) -> StoreFuture<'a, ()> {
        let (records, mut map) = self.lock_both();
        let mut touched = Vec::new();
        for e in events.iter().filter(|e| self.holds(&records, &e.session)) {
            let kept = map.entry(e.session.clone()).or_default();
            if !kept.iter().any(|(s, k)| *s == e.stream && k.seq == e.seq) {
                kept.push((e.stream, KeptEvent::new(e.seq, e.data.clone(), e.last)));
            }
            if !touched.contains(&e.session) {
                touched.push(e.session.clone());
            }
        }
        for id in touched {
            if let Some(kept) = map.get_mut(&id) {
                trim(kept, &self.event_bounds);
            }
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn load_events<'a>(
        &'a self,
        session: &'a str,
        stream: u32,
        from: u32,
    ) -> StoreFuture<'a, Vec<KeptEvent>> {
        let (records, map) = self.lock_both();
        let found = if self.holds(&records, session) {
            let kept = map.get(session).map(Vec::as_slice).unwrap_or_default();
            kept.iter().filter(|(s, e)| *s == stream && e.seq >= from).map(|(_, e)| e.clone()).collect()
        } else {
            Vec::new()
        };
        Box::pin(std::future::ready(Ok(found)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now<T>(f: StoreFuture<'_, T>) -> Result<T, StoreError> {
        let mut f = f;
        match f.as_mut().poll(&mut Context::from_waker(std::task::Waker::noop())) {
            Poll::Ready(r) => r,
            Poll::Pending => panic!("the memory store answers at once"),
        }
    }

    #[test]
    fn records_are_kept_replaced_and_removed() {
        let s = MemorySessionStore::default();
        assert!(now(s.load("a")).unwrap().is_none());
        now(s.save("a", b"one")).unwrap();
        now(s.save("a", b"two")).unwrap();
        assert_eq!(now(s.load("a")).unwrap().as_deref(), Some(&b"two"[..]));
        now(s.remove("a")).unwrap();
        now(s.remove("a")).unwrap();
        assert!(now(s.load("a")).unwrap().is_none());
        now(s.save("b", b"x")).unwrap();
        now(s.expired("b")).unwrap();
        assert!(s.is_empty());
    }

    #[test]
    fn beyond_its_cap_a_new_record_is_refused_and_old_ones_stay() {
        let s = MemorySessionStore::new(2, Duration::from_secs(3600));
        now(s.save("a", b"1")).unwrap();
        now(s.save("b", b"2")).unwrap();
        assert!(now(s.save("c", b"3")).is_err());
        now(s.save("a", b"1'")).unwrap();
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn a_touch_keeps_a_record_it_does_not_bring_back() {
        let s = MemorySessionStore::new(4, Duration::from_secs(3600));
        now(s.save("a", b"1")).unwrap();
        s.lock().get_mut("a").unwrap().1 -= Duration::from_secs(3000);
        now(s.touch("a")).unwrap();
        assert!(s.lock()["a"].1.elapsed() < Duration::from_secs(3000), "its life starts again");
        now(s.touch("b")).unwrap();
        assert!(now(s.load("b")).unwrap().is_none(), "nothing made");
    }

    #[test]
    fn an_expired_record_is_not_found_and_makes_room() {
        let s = MemorySessionStore::new(1, Duration::ZERO);
        now(s.save("a", b"1")).unwrap();
        assert!(now(s.load("a")).unwrap().is_none());
        now(s.save("b", b"2")).unwrap();
        now(s.save("c", b"3")).unwrap();
        assert_eq!(s.len(), 1);
    }

    fn ev(session: &str, stream: u32, seq: u32, data: &[u8]) -> StreamEvent {
        StreamEvent::new(session, stream, seq, data, false)
    }

    fn seqs(kept: &[KeptEvent]) -> Vec<u32> {
        kept.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn events_are_kept_in_order_bounded_and_forgotten_with_their_session() {
        let bounds =
            EventBounds { stream_events: 3, stream_bytes: 100, session_events: 5, session_bytes: 1000 };
        let s = MemorySessionStore::default().event_bounds(bounds);
        now(s.append(&[ev("a", 1, 1, b"x")])).unwrap();
        assert!(now(s.load_events("a", 1, 0)).unwrap().is_empty(), "no such session: dropped");
        now(s.save("a", b"r")).unwrap();
        now(s.save("b", b"r")).unwrap();
        let batch: Vec<_> = (1..=5).map(|q| ev("a", 1, q, b"xx")).chain([ev("b", 1, 1, b"y")]).collect();
        now(s.append(&batch)).unwrap();
        assert_eq!(seqs(&now(s.load_events("a", 1, 0)).unwrap()), [3, 4, 5], "three per stream, the newest");
        assert_eq!(seqs(&now(s.load_events("a", 1, 4)).unwrap()), [4, 5], "from the one named on");
        now(s.append(&[ev("a", 1, 5, b"other")])).unwrap();
        assert_eq!(now(s.load_events("a", 1, 5)).unwrap()[0].data, b"xx", "kept as it was");
        // Per session: five at most, the oldest of any stream going first.
        now(s.append(&(1..=3).map(|q| ev("a", 2, q, b"z")).collect::<Vec<_>>())).unwrap();
        assert_eq!(seqs(&now(s.load_events("a", 1, 0)).unwrap()), [4, 5]);
        assert_eq!(seqs(&now(s.load_events("a", 2, 0)).unwrap()), [1, 2, 3]);
        // Bytes: an event past the stream's byte bound is not kept.
        now(s.append(&[ev("a", 3, 1, &[0; 101])])).unwrap();
        assert!(now(s.load_events("a", 3, 0)).unwrap().is_empty());
        assert_eq!(seqs(&now(s.load_events("b", 1, 0)).unwrap()), [1], "other sessions untouched");
        now(s.remove("a")).unwrap();
        assert!(now(s.load_events("a", 2, 0)).unwrap().is_empty(), "gone with the session");
        now(s.save("a", b"r")).unwrap();
        assert!(now(s.load_events("a", 2, 0)).unwrap().is_empty(), "and not back with a new one");
    }

    #[test]
    fn trimming_by_session_bytes_drops_the_oldest_whatever_the_stream() {
        let b = EventBounds { stream_events: 10, stream_bytes: 10, session_events: 10, session_bytes: 6 };
        let mut kept: SessionEvents = vec![
            (1, KeptEvent::new(1, vec![0; 3], false)),
            (2, KeptEvent::new(1, vec![0; 3], false)),
            (1, KeptEvent::new(2, vec![0; 3], false)),
        ];
        trim(&mut kept, &b);
        assert_eq!(kept.iter().map(|(s, e)| (*s, e.seq)).collect::<Vec<_>>(), [(2, 1), (1, 2)]);
    }
}
