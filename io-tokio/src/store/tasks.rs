//! Where task records are kept beyond the engine's memory: [`TaskStore`] and the
//! in-memory [`MemoryTaskStore`]. The server's side of the engine's task store events is
//! `task_io.rs`.
//!
//! With a task store ([`HttpServer::task_store`](crate::HttpServer::task_store)) a task's
//! handle is sent once its record is saved, a task is read, answered and cancelled on any
//! server sharing the store, and its result outlives the process that ran it. Another
//! server's change to a task this server runs is heard through the session store's
//! notices ([`StoreNotice::TaskChanged`](crate::store::StoreNotice::TaskChanged)). The record is
//! opaque bytes, versioned; its format is in `docs/decisions.md` ("The task record").

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use mcp_engine::UnixTime;
use mcp_engine::http::store::{ListTasks, SaveTask};

use crate::store::sessions::{StoreError, StoreFuture};

/// A task record to keep ([`TaskStore::save_task`]): the engine's
/// [`SaveTask`](mcp_engine::http::store::SaveTask), owned.
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
    /// When the task was created (the same in every save of it): with the id, what
    /// [`TaskStore::list_tasks`] orders by.
    pub created: SystemTime,
    /// When the task's TTL ends: the record may be deleted from then on.
    pub expires: SystemTime,
}

impl TaskSave {
    /// A save of `record` under `id` at `revision`, created now, expiring at `expires`,
    /// of no principal.
    pub fn new(id: &str, revision: u64, record: &[u8], expires: SystemTime) -> Self {
        let created = SystemTime::now();
        Self { id: id.to_owned(), revision, record: record.to_vec(), principal: None, created, expires }
    }

    /// The same, of `principal` (its digest), created at `created`.
    #[must_use]
    pub fn of_principal(mut self, principal: Option<[u8; 32]>, created: SystemTime) -> Self {
        self.principal = principal;
        self.created = created;
        self
    }

    pub(crate) fn of(s: &SaveTask<'_>) -> Self {
        Self {
            id: s.id.to_owned(),
            revision: s.revision,
            record: s.record.to_vec(),
            principal: s.principal.copied(),
            created: system_time(s.created),
            expires: system_time(s.expires),
        }
    }
}

/// The engine's wall-clock time as a [`SystemTime`].
pub(crate) fn system_time(t: UnixTime) -> SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_micros(t.as_micros())
}

/// What [`TaskStore::list_tasks`] is asked for a `2025-11-25` `tasks/list`: the engine's
/// [`ListTasks`](mcp_engine::http::store::ListTasks), owned.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskListQuery {
    /// The caller's principal digest: only tasks saved with exactly this one (`None`:
    /// those saved without one).
    pub principal: Option<[u8; 32]>,
    /// The position the page starts after: a task's `created` and id.
    pub after: Option<(SystemTime, String)>,
    /// The most tasks to return.
    pub limit: usize,
}

impl TaskListQuery {
    /// The first `limit` tasks of `principal`.
    pub fn new(principal: Option<[u8; 32]>, limit: usize) -> Self {
        Self { principal, after: None, limit }
    }

    /// The same, starting after the task `id` created at `created`.
    #[must_use]
    pub fn after(mut self, created: SystemTime, id: &str) -> Self {
        self.after = Some((created, id.to_owned()));
        self
    }

    pub(crate) fn of(q: &ListTasks<'_>) -> Self {
        Self {
            principal: q.principal.copied(),
            after: q.after.map(|a| (system_time(a.created), a.id.to_owned())),
            limit: q.limit,
        }
    }
}

/// One task in a [`TaskStore::list_tasks`] answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListedTask {
    /// The task id.
    pub id: String,
    /// When it was created ([`TaskSave::created`]).
    pub created: SystemTime,
    /// Its record, as last saved.
    pub record: Vec<u8>,
}

impl ListedTask {
    /// Task `id`, created at `created`, with `record`.
    pub fn new(id: &str, created: SystemTime, record: Vec<u8>) -> Self {
        Self { id: id.to_owned(), created, record }
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

    /// Up to `query.limit` tasks saved with `query.principal` whose expiry has not
    /// passed, ordered by `created` then id (byte order), after `query.after` when it is
    /// set: a page of a `2025-11-25` `tasks/list`. The order must be stable across
    /// calls (every save of a task carries the same `created`).
    fn list_tasks<'a>(&'a self, query: &'a TaskListQuery) -> StoreFuture<'a, Vec<ListedTask>>;
}

/// What the memory store keeps of a task.
#[derive(Debug)]
struct Kept {
    revision: u64,
    record: Vec<u8>,
    principal: Option<[u8; 32]>,
    created: SystemTime,
    expires: SystemTime,
}

/// Records by task id.
type Records = HashMap<String, Kept>;

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
        let found = self.lock().get(id).filter(|k| k.expires > now).map(|k| k.record.clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn save_task<'a>(&'a self, save: &'a TaskSave) -> StoreFuture<'a, bool> {
        let now = SystemTime::now();
        let mut records = self.lock();
        if records.len() >= self.max && !records.contains_key(&save.id) {
            records.retain(|_, k| k.expires > now);
        }
        let r = if records.get(&save.id).is_some_and(|k| k.revision >= save.revision) {
            Ok(false)
        } else if records.len() >= self.max && !records.contains_key(&save.id) {
            Err(StoreError::new("the memory task store is full"))
        } else {
            let kept = Kept {
                revision: save.revision,
                record: save.record.clone(),
                principal: save.principal,
                created: save.created,
                expires: save.expires,
            };
            records.insert(save.id.clone(), kept);
            Ok(true)
        };
        Box::pin(std::future::ready(r))
    }

    fn task_expired<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.lock().remove(id);
        Box::pin(std::future::ready(Ok(())))
    }

    /// Scans and sorts: a memory store holds few tasks.
    fn list_tasks<'a>(&'a self, query: &'a TaskListQuery) -> StoreFuture<'a, Vec<ListedTask>> {
        let now = SystemTime::now();
        let records = self.lock();
        let after = query.after.as_ref().map(|(at, id)| (*at, id.as_bytes()));
        let mut page: Vec<(SystemTime, &str, &Kept)> = records
            .iter()
            .filter(|(id, k)| {
                k.principal == query.principal
                    && k.expires > now
                    && after.is_none_or(|a| (k.created, id.as_bytes()) > a)
            })
            .map(|(id, k)| (k.created, id.as_str(), k))
            .collect();
        page.sort_unstable_by(|a, b| (a.0, a.1.as_bytes()).cmp(&(b.0, b.1.as_bytes())));
        let page =
            page.iter().take(query.limit).map(|(at, id, k)| ListedTask::new(id, *at, k.record.clone()));
        Box::pin(std::future::ready(Ok(page.collect())))
    }
}

/// A task store's answer, on its way back to the engine's task.
pub(crate) enum TaskDecided {
    Saved(String, u64, Result<bool, StoreError>),
    Loaded(String, Result<Option<Vec<u8>>, StoreError>),
    Listed(mcp_engine::http::store::TaskQuery, Result<Vec<ListedTask>, StoreError>),
}

#[cfg(test)]
mod tests {
    use super::{MemoryTaskStore, TaskSave, TaskStore};
    use std::time::{Duration, SystemTime};

    fn now<T>(f: crate::store::sessions::StoreFuture<'_, T>) -> T {
        futures_now(f).expect("a memory store answers")
    }

    fn futures_now<T>(
        mut f: crate::store::sessions::StoreFuture<'_, T>,
    ) -> Result<T, crate::store::sessions::StoreError> {
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

    #[test]
    fn a_principals_tasks_are_listed_by_creation_then_id_after_a_position() {
        use super::TaskListQuery;
        let s = MemoryTaskStore::new(16);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
        let later = SystemTime::now() + Duration::from_secs(60);
        let past = SystemTime::now() - Duration::from_secs(1);
        let at = |us: u64| t0 + Duration::from_micros(us);
        let (alice, bob) = (Some([1u8; 32]), Some([2u8; 32]));
        for (id, who, us, exp) in
            [("d", alice, 3, later), ("c", alice, 2, later), ("b", alice, 2, later), ("a", alice, 1, later)]
                .into_iter()
                .chain([("x", bob, 1, later), ("n", None, 1, later), ("old", alice, 0, past)])
        {
            assert!(now(s.save_task(&TaskSave::new(id, 1, b"r", exp).of_principal(who, at(us)))));
        }
        let ids = |q: &TaskListQuery| now(s.list_tasks(q)).into_iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(&TaskListQuery::new(alice, 3)), ["a", "b", "c"]);
        assert_eq!(ids(&TaskListQuery::new(alice, 3).after(at(2), "b")), ["c", "d"]);
        assert_eq!(ids(&TaskListQuery::new(bob, 9)), ["x"]);
        assert_eq!(ids(&TaskListQuery::new(None, 9)), ["n"]);
    }
}
