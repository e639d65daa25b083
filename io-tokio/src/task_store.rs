//! Where task records are kept beyond the engine's memory: [`TaskStore`] and the
//! in-memory [`MemoryTaskStore`]. The server's side of the engine's task store events is
//! `task_io.rs`.
//!
//! With a task store ([`HttpServer::task_store`](crate::HttpServer::task_store)) a task's
//! handle is sent once its record is saved, a task is read, answered and cancelled on any
//! server sharing the store, and its result outlives the process that ran it. Another
//! server's change to a task this server runs is heard through the session store's
//! notices ([`StoreNotice::TaskChanged`](crate::StoreNotice::TaskChanged)). The record is
//! opaque bytes, versioned; its format is in `docs/decisions.md` ("The task record").

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use mcp_engine::http::SaveTask;

use crate::store::{StoreError, StoreFuture};

/// A task record to keep ([`TaskStore::save_task`]): the engine's
/// [`SaveTask`](mcp_engine::http::SaveTask), owned.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskSave {
    /// The task id (the store's key).
    pub id: String,
    /// The record's revision: 1 when created, one more with each save.
    pub revision: u64,
    /// The record.
    pub record: Vec<u8>,
    /// The digest of the principal that created it, if any.
    pub principal: Option<[u8; 32]>,
    /// When the task's TTL ends: the record may be deleted from then on.
    pub expires: SystemTime,
}

impl TaskSave {
    /// A save of `record` under `id` at `revision`, expiring at `expires`.
    pub fn new(id: &str, revision: u64, record: &[u8], expires: SystemTime) -> Self {
        Self { id: id.to_owned(), revision, record: record.to_vec(), principal: None, expires }
    }

    pub(crate) fn of(s: &SaveTask<'_>) -> Self {
        Self {
            id: s.id.to_owned(),
            revision: s.revision,
            record: s.record.to_vec(),
            principal: s.principal.copied(),
            expires: std::time::UNIX_EPOCH + std::time::Duration::from_micros(s.expires.as_micros()),
        }
    }
}

/// Keeps task records by task id.
///
/// A save is compare-and-set on the revision: it is kept only above the revision the
/// store holds (`Ok(false)` otherwise: another server wrote the task meanwhile; the
/// engine reads it again and merges). A save must be durable when its future completes:
/// the client is told of the task then.
pub trait TaskStore: Send + Sync + 'static {
    /// The record under `id`, or `None` when there is none (never saved, expired).
    fn load_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Vec<u8>>>;

    /// Keeps `save.record` under `save.id` if the store holds no revision of it at or
    /// above `save.revision`; returns whether it was kept.
    fn save_task<'a>(&'a self, save: &'a TaskSave) -> StoreFuture<'a, bool>;

    /// The server deleted task `id` at its TTL: the record may go.
    fn task_expired<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;
}

/// Records by task id: revision, record, expiry.
type Records = HashMap<String, (u64, Vec<u8>, SystemTime)>;

/// Task records in this process's memory (a single server, or tests): bounded by a
/// number of records; a record past its expiry is not found and is dropped when room is
/// needed. It hears no other server.
#[derive(Debug)]
pub struct MemoryTaskStore {
    max: usize,
    records: Mutex<Records>,
}

impl MemoryTaskStore {
    /// A store of at most `max` records.
    pub fn new(max: usize) -> Self {
        Self { max, records: Mutex::new(HashMap::new()) }
    }

    /// How many records it holds (expired ones included until dropped).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Default for MemoryTaskStore {
    /// 4,096 records.
    fn default() -> Self {
        Self::new(4096)
    }
}

impl TaskStore for MemoryTaskStore {
    fn load_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        let now = SystemTime::now();
        let found = self.lock().get(id).filter(|(_, _, at)| *at > now).map(|(_, r, _)| r.clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn save_task<'a>(&'a self, save: &'a TaskSave) -> StoreFuture<'a, bool> {
        let now = SystemTime::now();
        let mut records = self.lock();
        if records.len() >= self.max && !records.contains_key(&save.id) {
            records.retain(|_, (_, _, at)| *at > now);
        }
        let r = if records.get(&save.id).is_some_and(|(rev, _, _)| *rev >= save.revision) {
            Ok(false)
        } else if records.len() >= self.max && !records.contains_key(&save.id) {
            Err(StoreError::new("the memory task store is full"))
        } else {
            records.insert(save.id.clone(), (save.revision, save.record.clone(), save.expires));
            Ok(true)
        };
        Box::pin(std::future::ready(r))
    }

    fn task_expired<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.lock().remove(id);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A task store's answer, on its way back to the engine's task.
pub(crate) enum TaskDecided {
    Saved(String, u64, Result<bool, StoreError>),
    Loaded(String, Result<Option<Vec<u8>>, StoreError>),
}

#[cfg(test)]
mod tests {
    use super::{MemoryTaskStore, TaskSave, TaskStore};
    use std::time::{Duration, SystemTime};

    fn now<T>(f: crate::store::StoreFuture<'_, T>) -> T {
        futures_now(f).expect("a memory store answers")
    }

    fn futures_now<T>(mut f: crate::store::StoreFuture<'_, T>) -> Result<T, crate::store::StoreError> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(r) => r,
            std::task::Poll::Pending => unreachable!("a memory store is ready at once"),
        }
    }

    #[test]
    fn saves_are_kept_above_the_revision_held_and_bounded() {
        let s = MemoryTaskStore::new(2);
        let later = SystemTime::now() + Duration::from_secs(60);
        assert!(now(s.save_task(&TaskSave::new("a", 1, b"one", later))));
        assert!(now(s.save_task(&TaskSave::new("a", 2, b"two", later))));
        assert!(!now(s.save_task(&TaskSave::new("a", 2, b"same", later))), "not above");
        assert_eq!(now(s.load_task("a")).as_deref(), Some(&b"two"[..]));
        let past = SystemTime::now() - Duration::from_secs(1);
        assert!(now(s.save_task(&TaskSave::new("b", 1, b"old", past))));
        assert!(now(s.load_task("b")).is_none(), "past its expiry");
        // Full: the expired record makes room; then a third live one is refused.
        assert!(now(s.save_task(&TaskSave::new("c", 1, b"c", later))));
        assert!(futures_now(s.save_task(&TaskSave::new("d", 1, b"d", later))).is_err());
        now(s.task_expired("a"));
        assert!(now(s.load_task("a")).is_none());
        assert_eq!(s.len(), 1);
    }
}
