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

use mcp_engine::CatalogChange;
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
    /// Lists changed in the sender's catalog ([`Publisher::replace_catalog`](crate::Publisher::replace_catalog)):
    /// the receiving server tells its streams
    /// ([`HttpEngine::announce_list_changed`](mcp_engine::http::HttpEngine::announce_list_changed)),
    /// and its clients list again, from the receiver's own catalog.
    ListChanged(CatalogChange),
    /// A resource changed ([`Publisher::resource_updated`](crate::Publisher::resource_updated)):
    /// the receiving server tells its subscribers
    /// ([`HttpEngine::notify_resource_updated`](mcp_engine::http::HttpEngine::notify_resource_updated)).
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
}

impl StoreNotice {
    /// The session the notice is about (`None` for [`Missed`](Self::Missed) and
    /// [`Catalog`](Self::Catalog)).
    pub fn session(&self) -> Option<&str> {
        match self {
            Self::Changed(id) | Self::Ended(id) => Some(id),
            Self::Missed | Self::Catalog(_) => None,
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
#[derive(Debug)]
pub struct MemorySessionStore {
    records: Mutex<HashMap<String, (Vec<u8>, Instant)>>,
    max: usize,
    ttl: Duration,
}

impl MemorySessionStore {
    /// A store of at most `max` records, each kept `ttl` after its last save or load
    /// (give at least the engine's
    /// [`session_idle_timeout`](mcp_engine::http::HttpConfig::session_idle_timeout)).
    pub fn new(max: usize, ttl: Duration) -> Self {
        Self { records: Mutex::new(HashMap::new()), max, ttl }
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
        self.lock().remove(id);
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
}
