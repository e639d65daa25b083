//! Task records in PostgreSQL: [`PgSessionStore`] as a [`TaskStore`], so a task created
//! on one node is read, answered and cancelled on another sharing the schema, and its
//! result outlives the node that ran it.
//!
//! One row per task in `<schema>.tasks` (migration 3, `schema.rs`): the id, the record's
//! revision, the principal's digest (informational, for operators), the record, and
//! `expires_at` (the task's `createdAt` plus its TTL, as the engine says), indexed for the
//! cleanup. A save is one statement, compare-and-set on the revision: the row is written
//! only when it is absent or holds a lower revision, and the write announces itself on the
//! sessions' channel in the same statement (`T`, signed, with the task id: heard as
//! [`StoreNotice::TaskChanged`](crate::store::StoreNotice::TaskChanged); a node of a version that
//! does not know the kind takes it as a `Missed` and checks its copies). A load finds a row
//! not past its expiry. A list (`tasks/list`, `2025-11-25`) reads a principal's rows not
//! past their expiry in the order `created_at`, then id in byte order, after a position,
//! on the index of migration 4. The periodic cleanup deletes expired rows, at most
//! [`cleanup_batch`](super::PgStoreConfig::cleanup_batch) a round, beside the sessions'.

use std::time::SystemTime;

use deadpool_postgres::tokio_postgres::types::ToSql;

use super::{PgSessionStore, PgStoreConfig, notify, schema};
use crate::store::sessions::{StoreError, StoreFuture};
use crate::store::tasks::{ListedTask, TaskListQuery, TaskSave, TaskStore};

/// The statements, for one schema.
#[derive(Debug)]
pub(super) struct Sql {
    load: String,
    save: String,
    /// A page of a principal's tasks, and of the tasks saved without one.
    list: String,
    list_anonymous: String,
    expired: String,
    pub(super) cleanup: String,
}

impl Sql {
    pub(super) fn new(cfg: &PgStoreConfig, channel: &str) -> Self {
        let t = format!("{}.tasks", schema::quote(&cfg.schema));
        // The signed payload is the last parameter.
        let changed = notify::notify_sql(channel, 7);
        Self {
            load: format!("SELECT record FROM {t} WHERE id = $1 AND expires_at > now()"),
            save: format!(
                "WITH w AS (INSERT INTO {t} AS t (id, revision, principal, record, expires_at, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, principal = excluded.principal, \
                 record = excluded.record, updated_at = now(), expires_at = excluded.expires_at \
                 WHERE t.revision < excluded.revision RETURNING 1) SELECT {changed} FROM w"
            ),
            list: format!(
                "SELECT id, created_at, record FROM {t} WHERE principal = $1 AND expires_at > now() \
                 AND (created_at, id COLLATE \"C\") > ($2, $3 COLLATE \"C\") \
                 ORDER BY created_at, id COLLATE \"C\" LIMIT $4"
            ),
            list_anonymous: format!(
                "SELECT id, created_at, record FROM {t} WHERE principal IS NULL AND expires_at > now() \
                 AND (created_at, id COLLATE \"C\") > ($1, $2 COLLATE \"C\") \
                 ORDER BY created_at, id COLLATE \"C\" LIMIT $3"
            ),
            expired: format!("DELETE FROM {t} WHERE id = $1"),
            cleanup: format!(
                "DELETE FROM {t} WHERE id IN (SELECT id FROM {t} WHERE expires_at <= now() \
                 ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)"
            ),
        }
    }
}

impl TaskStore for PgSessionStore {
    fn load_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            let inner = &*self.inner;
            let row = inner.query_opt("load task", &inner.tasks.load, &[&id]).await?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// Compare-and-set on the revision, announced to the other nodes in the same
    /// statement when it writes.
    fn save_task<'a>(&'a self, save: &'a TaskSave) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let inner = &*self.inner;
            let revision = i64::try_from(save.revision).map_err(StoreError::new)?;
            let principal = save.principal.as_ref().map(<[u8; 32]>::as_slice);
            let expires: SystemTime = save.expires;
            let created: SystemTime = save.created;
            let notice = inner.notice('T', &save.id);
            let params: [&(dyn ToSql + Sync); 7] =
                [&save.id, &revision, &principal, &save.record, &expires, &created, &notice];
            let row = inner.query_opt("save task", &inner.tasks.save, &params).await?;
            Ok(row.is_some())
        })
    }

    fn task_expired<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let inner = &*self.inner;
            inner.execute("expired task", &inner.tasks.expired, &[&id]).await?;
            Ok(())
        })
    }

    /// One statement on the index of migration 4; the first page starts after the
    /// epoch (no task is older).
    fn list_tasks<'a>(&'a self, query: &'a TaskListQuery) -> StoreFuture<'a, Vec<ListedTask>> {
        Box::pin(async move {
            let inner = &*self.inner;
            let (after, after_id) = match &query.after {
                Some((at, id)) => (*at, id.as_str()),
                None => (std::time::UNIX_EPOCH, ""),
            };
            let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
            let principal = query.principal.as_ref().map(<[u8; 32]>::as_slice);
            let rows = inner
                .within("list tasks", async |client, budget| {
                    let set = format!("SET statement_timeout = {budget}");
                    let (sql, args): (&str, Vec<&(dyn ToSql + Sync)>) = match &principal {
                        Some(p) => (&inner.tasks.list, vec![p, &after, &after_id, &limit]),
                        None => (&inner.tasks.list_anonymous, vec![&after, &after_id, &limit]),
                    };
                    let st = client.prepare_cached(sql).await?;
                    let (set, rows) = tokio::join!(client.batch_execute(&set), client.query(&st, &args));
                    set?;
                    rows
                })
                .await?;
            Ok(rows.iter().map(|r| ListedTask::new(r.get(0), r.get(1), r.get(2))).collect())
        })
    }
}
