//! Sessions kept in PostgreSQL (feature `postgres`): [`PgSessionStore`], a
//! [`SessionStore`] that several servers share through one database, and its settings,
//! [`PgStoreConfig`]. It keeps session streams' events (`events.rs`, an
//! [`EventStore`](crate::store::EventStore)) and task records (`tasks.rs`, a
//! [`TaskStore`](crate::store::TaskStore)) too.
//!
//! The store creates and migrates its own tables at start ([`PgStoreConfig::build`]), in a
//! schema of its own (`mcp` unless [`PgStoreConfig::schema`] names another), so several
//! servers, or several deployments, can share one database. Every operation is bounded in
//! time: a stalled or absent database fails the operation (the request is `503` with
//! `Retry-After`), it never hangs.
//!
//! Each write is announced to the other nodes sharing the schema (`LISTEN/NOTIFY`, in
//! the write's own statement: only committed writes are told), and
//! [`PgSessionStore::notices`] hears the other nodes' announcements (`notify.rs`), each
//! signed with a key derived from the nodes' shared secret key (`signed.rs`): any role can
//! `NOTIFY`, so an announcement that does not verify is ignored, and counted
//! ([`PgSessionStore::ignored_notices`]). See `docs/scale-out.md`.

mod events;
mod notify;
mod schema;
mod signed;
mod tasks;

pub use signed::IgnoredNotices;

use std::sync::{Arc, Weak};
use std::time::Duration;

use deadpool_postgres::tokio_postgres::types::ToSql;
use deadpool_postgres::tokio_postgres::{self, NoTls, Row};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};

use crate::store::sessions::StoreNotices;
use crate::store::sessions::{CatalogNews, SessionStore, StoreError, StoreFuture};
use notify::ListenConfig;
use schema::fail;
use signed::NoticeKeys;

/// How a [`PgSessionStore`] connects, where it keeps its tables and how long it waits.
/// Built from a connection URL and the nodes' secret key ([`secret_key`](Self::secret_key),
/// required); every other setting has a default (given with its method), so
/// `PgStoreConfig::new(url)?.secret_key(key).build().await?` is a working store.
///
/// The timeouts nest: a statement waits at most [`lock_timeout`](Self::lock_timeout) for
/// a row lock and runs at most [`statement_timeout`](Self::statement_timeout); taking a
/// connection waits at most [`pool_wait`](Self::pool_wait) (and opening one at most
/// [`connect_timeout`](Self::connect_timeout)); and the whole operation is cut at
/// [`operation_timeout`](Self::operation_timeout), whatever happens on the network. Keep
/// that below the engine's
/// [`store_timeout`](mcp_engine::http::HttpConfig::store_timeout) (5 s by default), so
/// the store's error, not the engine's timeout, answers the request.
#[derive(Debug, Clone)]
pub struct PgStoreConfig {
    pg: tokio_postgres::Config,
    schema: String,
    ttl: Duration,
    expire_grace: Duration,
    pool_size: usize,
    pool_wait: Duration,
    connect_timeout: Duration,
    lock_timeout: Duration,
    statement_timeout: Duration,
    idle_in_transaction_timeout: Duration,
    operation_timeout: Duration,
    migrate_timeout: Duration,
    cleanup_every: Option<Duration>,
    cleanup_batch: u32,
    notice_capacity: usize,
    notice_check_every: Duration,
    notice_max_age: Duration,
    secret: Option<Secret>,
    previous: Vec<Secret>,
    events: crate::store::sessions::EventBounds,
}

/// A secret key, kept out of `Debug`.
#[derive(Clone)]
struct Secret([u8; 32]);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The most previous secret keys a store keeps (the engine's
/// [`Config::MAX_PREVIOUS_KEYS`](mcp_engine::Config::MAX_PREVIOUS_KEYS)).
const MAX_PREVIOUS_KEYS: usize = mcp_engine::Config::MAX_PREVIOUS_KEYS;

impl PgStoreConfig {
    /// Settings to reach the database at `url` (`postgres://user:password@host:port/db`,
    /// or the `key=value` form libpq takes). TLS is not supported yet: reach the database
    /// over loopback or a private network (`sslmode=require` fails to connect).
    pub fn new(url: &str) -> Result<Self, StoreError> {
        let pg: tokio_postgres::Config = url.parse().map_err(|e| fail("the connection URL", e))?;
        Ok(Self {
            pg,
            schema: "mcp".to_owned(),
            ttl: Duration::from_secs(30 * 60),
            expire_grace: Duration::from_secs(30 * 60),
            pool_size: 16,
            pool_wait: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(2),
            lock_timeout: Duration::from_secs(1),
            statement_timeout: Duration::from_secs(2),
            idle_in_transaction_timeout: Duration::from_secs(5),
            operation_timeout: Duration::from_secs(4),
            migrate_timeout: Duration::from_secs(30),
            cleanup_every: Some(Duration::from_secs(60)),
            cleanup_batch: 1000,
            notice_capacity: 1024,
            notice_check_every: Duration::from_secs(10),
            notice_max_age: Duration::from_secs(30),
            secret: None,
            previous: Vec::new(),
            events: crate::store::sessions::EventBounds::default(),
        })
    }

    /// The schema holding the store's tables (default `mcp`; created if absent, which
    /// takes the `CREATE` privilege on the database): 1 to 63 lower-case ASCII letters,
    /// digits and `_`, not starting with a digit nor `pg_` (checked by
    /// [`build`](Self::build)). Servers sharing sessions name the same schema; unrelated
    /// deployments sharing a database name different ones.
    pub fn schema(mut self, name: &str) -> Self {
        name.clone_into(&mut self.schema);
        self
    }

    /// How long a record is kept after its last save or load by any server (default 30
    /// minutes, the engine's default idle timeout; give at least the engine's
    /// [`session_idle_timeout`](mcp_engine::http::HttpConfig::session_idle_timeout)). A
    /// removed session is remembered as removed for as long.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// When a server ends a session on its idle timeout ([`SessionStore::expired`]), the
    /// record is deleted only if no server saved or loaded it within this much (default
    /// 30 minutes: give the engine's
    /// [`session_idle_timeout`](mcp_engine::http::HttpConfig::session_idle_timeout)): a
    /// session another server took up since stays.
    pub fn expire_grace(mut self, grace: Duration) -> Self {
        self.expire_grace = grace;
        self
    }

    /// At most this many connections (default 16).
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// How long an operation waits for a free connection when all are busy (default 1 s).
    pub fn pool_wait(mut self, wait: Duration) -> Self {
        self.pool_wait = wait;
        self
    }

    /// How long opening a connection may take (default 2 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a statement waits for a lock, a row another server is writing (default
    /// 1 s; PostgreSQL's `lock_timeout`).
    pub fn lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// How long a statement may run (default 2 s; PostgreSQL's `statement_timeout`).
    pub fn statement_timeout(mut self, timeout: Duration) -> Self {
        self.statement_timeout = timeout;
        self
    }

    /// How long a connection may sit idle inside a transaction before the server ends it
    /// (default 5 s; PostgreSQL's `idle_in_transaction_session_timeout`).
    pub fn idle_in_transaction_timeout(mut self, timeout: Duration) -> Self {
        self.idle_in_transaction_timeout = timeout;
        self
    }

    /// The bound on a whole operation, connection included (default 4 s): past it the
    /// operation fails whatever the network does.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// How long [`build`](Self::build) waits for another server migrating the same schema
    /// (default 30 s).
    pub fn migrate_timeout(mut self, timeout: Duration) -> Self {
        self.migrate_timeout = timeout;
        self
    }

    /// How often expired rows are deleted (default every 60 s; `None`: never, call
    /// [`PgSessionStore::cleanup`] yourself). Each round deletes at most
    /// [`cleanup_batch`](Self::cleanup_batch) rows.
    pub fn cleanup_every(mut self, every: Option<Duration>) -> Self {
        self.cleanup_every = every;
        self
    }

    /// The most rows one cleanup round deletes (default 1,000).
    pub fn cleanup_batch(mut self, rows: u32) -> Self {
        self.cleanup_batch = rows.max(1);
        self
    }

    /// How many notices [`PgSessionStore::notices`] holds for a receiver that has not
    /// taken them yet (default 1,024; at least 1): past that, notices are dropped and a
    /// [`StoreNotice::Missed`](crate::store::StoreNotice::Missed) is delivered once there is room.
    pub fn notice_capacity(mut self, notices: usize) -> Self {
        self.notice_capacity = notices.max(1);
        self
    }

    /// How often the connection listening for notices is checked (default every 10 s: a
    /// `SELECT 1` that must answer within the
    /// [`operation_timeout`](Self::operation_timeout)); a connection that fails the check
    /// is made again, and a [`StoreNotice::Missed`](crate::store::StoreNotice::Missed) delivered. This bounds how long a
    /// silently broken network leaves a node deaf to the others.
    pub fn notice_check_every(mut self, every: Duration) -> Self {
        self.notice_check_every = every.max(Duration::from_millis(10));
        self
    }

    /// The secret key the nodes sharing the schema share (required: give the engine's
    /// [`Config::secret_key`](mcp_engine::Config::secret_key), which they share already
    /// for session ids). The store signs what it announces to the other nodes with a key
    /// derived from it (HMAC-SHA256 under its own label: never a MAC the engine makes),
    /// and takes only the announcements that verify: any role that can connect to the
    /// database can `NOTIFY` on the schema's channels, and must not make a node drop
    /// copies, end sessions or tell its streams that lists changed. Draw it from a
    /// cryptographic source and keep it out of logs (it is kept out of `Debug`).
    pub fn secret_key(mut self, key: [u8; 32]) -> Self {
        self.secret = Some(Secret(key));
        self
    }

    /// Earlier secret keys whose announcements are still taken, for rotating the key:
    /// give the engine's
    /// [`Config::previous_secret_keys`](mcp_engine::Config::previous_secret_keys). At
    /// most [`Config::MAX_PREVIOUS_KEYS`](mcp_engine::Config::MAX_PREVIOUS_KEYS) are kept
    /// (the first ones given).
    pub fn previous_secret_keys(mut self, keys: impl IntoIterator<Item = [u8; 32]>) -> Self {
        self.previous = keys.into_iter().take(MAX_PREVIOUS_KEYS).map(Secret).collect();
        self
    }

    /// The oldest an announcement is taken (default 30 s, at least 1 s), by the sending
    /// node's clock against this one's, either way: an announcement seen before is
    /// refused, and one older than this is refused as a replay too. Give the nodes'
    /// clock skew plus the longest an announcement takes to arrive, with room.
    pub fn notice_max_age(mut self, age: Duration) -> Self {
        self.notice_max_age = age.max(Duration::from_secs(1));
        self
    }

    /// Connects, creates or migrates the schema, and starts the cleanup task (on the
    /// current tokio runtime; it ends with the store). Fails when no
    /// [`secret_key`](Self::secret_key) was given, the schema name is not valid, the
    /// database cannot be reached, or its schema is newer than this store.
    pub async fn build(self) -> Result<PgSessionStore, StoreError> {
        let Some(secret) = &self.secret else {
            return Err(StoreError::new(
                "postgres: no secret key: give PgStoreConfig::secret_key the nodes' shared \
                 Config::secret_key (the announcements between nodes are signed with a key derived from it)",
            ));
        };
        if !schema::valid_name(&self.schema) {
            return Err(StoreError::new(format!(
                "postgres: schema name {:?}: use 1 to 63 of a-z, 0-9 and _, not starting with a digit nor pg_",
                self.schema
            )));
        }
        let mut pg = self.pg.clone();
        let ms = |d: Duration| d.as_millis().max(1);
        let mut options = pg.get_options().map(|o| format!("{o} ")).unwrap_or_default();
        options.push_str(&format!(
            "-c lock_timeout={} -c statement_timeout={} -c idle_in_transaction_session_timeout={}",
            ms(self.lock_timeout),
            ms(self.statement_timeout),
            ms(self.idle_in_transaction_timeout),
        ));
        pg.options(options);
        if pg.get_application_name().is_none() {
            pg.application_name("mcp-io-tokio");
        }
        pg.connect_timeout(self.connect_timeout);
        pg.keepalives(true).keepalives_idle(Duration::from_secs(10));
        pg.tcp_user_timeout(self.operation_timeout);
        let manager = Manager::from_config(
            pg.clone(),
            NoTls,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(self.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(self.pool_wait))
            .create_timeout(Some(self.connect_timeout))
            .recycle_timeout(Some(self.connect_timeout))
            .build()
            .map_err(|e| fail("the pool", e))?;
        let migrate = async {
            let mut client = pool.get().await.map_err(|e| fail("connect", e))?;
            schema::migrate(&mut client, &self.schema, self.migrate_timeout).await
        };
        tokio::time::timeout(self.migrate_timeout + self.connect_timeout, migrate)
            .await
            .map_err(|_| StoreError::new("postgres: migration: timed out"))??;
        // The listening connection: a dead peer is found by the keepalives within about
        // 10 + 3 * 5 s even when no check is in flight.
        let mut listen = pg;
        listen.keepalives_interval(Duration::from_secs(5)).keepalives_retries(3);
        let listen = ListenConfig {
            pg: listen,
            channel: schema::channel(&self.schema),
            catalog: schema::catalog_channel(&self.schema),
            keys: Arc::new(NoticeKeys::new(
                &secret.0,
                &self.previous.iter().map(|k| k.0).collect::<Vec<_>>(),
                notify::node_id(),
                self.notice_max_age,
            )),
            capacity: self.notice_capacity,
            check_every: self.notice_check_every,
            connect_timeout: self.connect_timeout,
            operation_timeout: self.operation_timeout,
        };
        let inner = Arc::new(Inner::new(pool, &self, listen));
        let cleanup =
            self.cleanup_every.map(|every| spawn_cleanup(Arc::downgrade(&inner), every).abort_handle());
        Ok(PgSessionStore { inner, cleanup })
    }
}

/// A [`SessionStore`] in PostgreSQL, shared by every server naming the same database and
/// schema. Built with [`PgStoreConfig::build`].
///
/// **What a save guarantees.** Each record is one row; every statement is one atomic
/// write, so a load sees a whole record, never a mix of two. A save is committed before its
/// future completes. Saves of one session are serialized by the row's lock, and each
/// acknowledged save adds one to the row's version. *No lost update* means: every
/// acknowledged save is applied and counted, in commit order, so after N acknowledged
/// saves of a session its version is N and its record is the last one committed; and a
/// save that was not acknowledged (cut by the operation timeout: the request was `503`)
/// is cancelled on the server with its operation, so it does not commit late over a newer
/// one (its statement runs under a `statement_timeout` of what is left of the operation's
/// time). The trait's save replaces the whole record (the
/// engine sends the session as it is), so two servers saving different changes of one
/// session at once keep the later record; a caller that must merge changes reads and
/// writes with [`load_versioned`](Self::load_versioned) and
/// [`save_if`](Self::save_if) (compare-and-set on the version) and retries on a conflict.
///
/// **Removal wins.** A removed session ([`SessionStore::remove`], the client's `DELETE`)
/// is remembered as removed for the [`ttl`](PgStoreConfig::ttl): a save arriving later
/// (another server still holding the session) succeeds without bringing it back, as if
/// it had come just before the removal.
///
/// **Expiry** is judged on the database's clock: a record not saved or loaded within the
/// `ttl` is not found, and the cleanup task deletes such rows, at most
/// [`cleanup_batch`](PgStoreConfig::cleanup_batch) a round.
///
/// When the database is down, every operation fails within the configured bounds; once
/// it is back, the same store works again (broken connections are replaced).
#[derive(Debug)]
pub struct PgSessionStore {
    inner: Arc<Inner>,
    cleanup: Option<tokio::task::AbortHandle>,
}

#[derive(Debug)]
struct Inner {
    pool: Pool,
    operation_timeout: Duration,
    statement_timeout: Duration,
    ttl_ms: i64,
    grace_ms: i64,
    batch: i64,
    load: String,
    save: String,
    remove: String,
    expired: String,
    save_if: String,
    create_if: String,
    cleanup: String,
    touch: String,
    announce: String,
    listen: ListenConfig,
    events: events::Sql,
    tasks: tasks::Sql,
}

impl Inner {
    fn new(pool: Pool, cfg: &PgStoreConfig, listen: ListenConfig) -> Self {
        let t = format!("{}.sessions", schema::quote(&cfg.schema));
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let expiry = "now() + $2::bigint * interval '1 millisecond'";
        // Each write announces itself in its own statement (a data-modifying `WITH`): one
        // notice per row written, none when nothing was written, and PostgreSQL delivers
        // it only if the statement's transaction commits.
        // The payload is the statement's last parameter, signed before the statement is sent.
        let notify = |param: u8| notify::notify_sql(&listen.channel, param);
        Self {
            pool,
            operation_timeout: cfg.operation_timeout,
            statement_timeout: cfg.statement_timeout,
            ttl_ms: ms(cfg.ttl),
            grace_ms: ms(cfg.expire_grace),
            batch: i64::from(cfg.cleanup_batch),
            load: format!(
                "UPDATE {t} SET touched_at = now(), expires_at = greatest(expires_at, {expiry}) \
                 WHERE id = $1 AND record IS NOT NULL AND expires_at > now() RETURNING record, version"
            ),
            save: format!(
                "WITH w AS (INSERT INTO {t} AS t (id, record, version, principal, expires_at) \
                 VALUES ($1, $3, 1, $4, {expiry}) \
                 ON CONFLICT (id) DO UPDATE SET record = excluded.record, version = t.version + 1, \
                 principal = excluded.principal, touched_at = now(), expires_at = excluded.expires_at \
                 WHERE t.record IS NOT NULL RETURNING 1) SELECT {} FROM w",
                notify(5)
            ),
            remove: format!(
                "WITH w AS (INSERT INTO {t} AS t (id, record, version, expires_at) VALUES ($1, NULL, 1, {expiry}) \
                 ON CONFLICT (id) DO UPDATE SET record = NULL, principal = NULL, version = t.version + 1, \
                 touched_at = now(), expires_at = excluded.expires_at RETURNING 1) SELECT {} FROM w",
                notify(3)
            ),
            expired: format!(
                "WITH w AS (DELETE FROM {t} WHERE id = $1 AND record IS NOT NULL \
                 AND touched_at < now() - $2::bigint * interval '1 millisecond' RETURNING 1) \
                 SELECT {} FROM w",
                notify(3)
            ),
            save_if: format!(
                "WITH w AS (UPDATE {t} SET record = $3, version = version + 1, principal = $4, touched_at = now(), \
                 expires_at = {expiry} WHERE id = $1 AND version = $5 AND record IS NOT NULL AND expires_at > now() \
                 RETURNING version) SELECT w.version, {} FROM w",
                notify(6)
            ),
            create_if: format!(
                "WITH w AS (INSERT INTO {t} AS t (id, record, version, principal, expires_at) \
                 VALUES ($1, $3, 1, $4, {expiry}) \
                 ON CONFLICT (id) DO UPDATE SET record = excluded.record, version = t.version + 1, \
                 principal = excluded.principal, touched_at = now(), expires_at = excluded.expires_at \
                 WHERE t.record IS NOT NULL AND t.expires_at <= now() RETURNING version) \
                 SELECT w.version, {} FROM w",
                notify(5)
            ),
            cleanup: format!(
                "DELETE FROM {t} WHERE id IN (SELECT id FROM {t} WHERE expires_at <= now() \
                 ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)"
            ),
            touch: format!(
                "UPDATE {t} SET touched_at = now(), expires_at = greatest(expires_at, {expiry}) \
                 WHERE id = $1 AND record IS NOT NULL AND expires_at > now()"
            ),
            announce: format!("SELECT pg_notify('{}', $1::text)", listen.catalog),
            tasks: tasks::Sql::new(cfg, &listen.channel),
            listen,
            events: events::Sql::new(cfg),
        }
    }

    /// Runs `sql` with `params` on a pooled connection (its prepared statement cached on
    /// the connection), the whole within the operation timeout.
    ///
    /// The statement runs under a `statement_timeout` of what is left of the operation's
    /// time (less [`MARGIN`], at most the configured one), set in the same round trip: the
    /// server cancels a statement the client no longer waits for, so a write cut by the
    /// operation timeout (the request was answered `503`) cannot commit later, after a
    /// newer save of the same session. A connection whose operation was cut is closed, not
    /// returned to the pool.
    async fn run(
        &self,
        what: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        want_row: bool,
    ) -> Result<Answer, StoreError> {
        let deadline = tokio::time::Instant::now() + self.operation_timeout;
        let late =
            || StoreError::new(format!("postgres: {what}: no answer within {:?}", self.operation_timeout));
        let client = match tokio::time::timeout_at(deadline, self.pool.get()).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => return Err(fail(&format!("{what}: no connection"), e)),
            Err(_) => return Err(late()),
        };
        let work = async {
            let st = client.prepare_cached(sql).await?;
            let left = deadline.saturating_duration_since(tokio::time::Instant::now()).saturating_sub(MARGIN);
            let budget = left.min(self.statement_timeout).as_millis().max(1);
            let set = format!("SET statement_timeout = {budget}");
            // Both sent before either answer is awaited: one round trip.
            let (set, answer) = tokio::join!(client.batch_execute(&set), async {
                if want_row {
                    client.query_opt(&st, params).await.map(Answer::Row)
                } else {
                    client.execute(&st, params).await.map(Answer::Count)
                }
            });
            set?;
            answer
        };
        match tokio::time::timeout_at(deadline, work).await {
            Ok(r) => r.map_err(|e| fail(what, e)),
            Err(_) => {
                drop(deadpool_postgres::Object::take(client));
                Err(late())
            }
        }
    }

    async fn execute(
        &self,
        what: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, StoreError> {
        match self.run(what, sql, params, false).await? {
            Answer::Count(n) => Ok(n),
            Answer::Row(_) => unreachable!("asked for a count"),
        }
    }

    async fn query_opt(
        &self,
        what: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, StoreError> {
        match self.run(what, sql, params, true).await? {
            Answer::Row(row) => Ok(row),
            Answer::Count(_) => unreachable!("asked for a row"),
        }
    }

    /// The signed payload of a write of `kind` (`C`, `E`, `T`) about `id` on the
    /// sessions' channel: its statement's last parameter.
    fn notice(&self, kind: char, id: &str) -> String {
        notify::session_payload(&self.listen.keys, &self.listen.channel, kind, id)
    }

    async fn cleanup_once(&self) -> Result<u64, StoreError> {
        let sessions = self.execute("cleanup", &self.cleanup, &[&self.batch]).await?;
        let tasks = self.execute("cleanup tasks", &self.tasks.cleanup, &[&self.batch]).await?;
        Ok(sessions + tasks)
    }
}

/// Taken off what is left of an operation's time for its statement's server-side timeout:
/// the statement starts on the server a little after the client sent it.
const MARGIN: Duration = Duration::from_millis(50);

/// What a statement returned: rows changed, or the one row (if any).
enum Answer {
    Count(u64),
    Row(Option<Row>),
}

fn spawn_cleanup(inner: Weak<Inner>, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(inner) = inner.upgrade() else { return };
            match inner.cleanup_once().await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(rows = n, "expired sessions and tasks deleted"),
                Err(e) => tracing::warn!(%e, "expired sessions or tasks not deleted this round"),
            }
        }
    })
}

/// The principal digest a version-1 record carries (`docs/decisions.md`, "The session
/// record"), for the `principal` column: informational (for operators), never used to
/// decide anything; `None` for any other record.
fn principal_of(record: &[u8]) -> Option<&[u8]> {
    match record {
        [1, _, flags, _, _, digest @ ..] if flags & 2 != 0 && digest.len() >= 32 => Some(&digest[..32]),
        _ => None,
    }
}

impl PgSessionStore {
    /// A store with the default settings for the database at `url`, signing and checking
    /// the announcements between nodes with `secret_key` (the nodes' shared
    /// [`Config::secret_key`](mcp_engine::Config::secret_key); see
    /// [`PgStoreConfig::secret_key`]).
    pub async fn connect(url: &str, secret_key: [u8; 32]) -> Result<Self, StoreError> {
        PgStoreConfig::new(url)?.secret_key(secret_key).build().await
    }

    /// The record under `id` with its version, as [`SessionStore::load`] (which it is,
    /// with the version): `None` when there is none.
    pub async fn load_versioned(&self, id: &str) -> Result<Option<(Vec<u8>, i64)>, StoreError> {
        let inner = &*self.inner;
        let row = inner.query_opt("load", &inner.load, &[&id, &inner.ttl_ms]).await?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    /// Compare-and-set: keeps `record` under `id` only if the stored version is
    /// `expected` (`None`: only if there is no record, or an expired one). Returns the new
    /// version, or `None` when another save came first (load again and retry) or the
    /// session was removed.
    pub async fn save_if(
        &self,
        id: &str,
        record: &[u8],
        expected: Option<i64>,
    ) -> Result<Option<i64>, StoreError> {
        let inner = &*self.inner;
        let principal = principal_of(record);
        let notice = inner.notice('C', id);
        let row = match expected {
            Some(v) => {
                let params: [&(dyn ToSql + Sync); 6] = [&id, &inner.ttl_ms, &record, &principal, &v, &notice];
                inner.query_opt("save", &inner.save_if, &params).await?
            }
            None => {
                let params: [&(dyn ToSql + Sync); 5] = [&id, &inner.ttl_ms, &record, &principal, &notice];
                inner.query_opt("save", &inner.create_if, &params).await?
            }
        };
        Ok(row.map(|r| r.get(0)))
    }

    /// Other nodes' writes to the sessions in this store's schema, as they commit: a
    /// task with a connection of its own listens for them (see [`StoreNotices`]). The
    /// writes of this store (this node) are not told back. Returns once the task listens
    /// (or fails, within the connect timeout plus the operation timeout, when the
    /// database cannot be reached), so every write another node commits afterwards is
    /// told, or followed by a [`StoreNotice::Missed`](crate::store::StoreNotice::Missed). Each call starts a task and a
    /// connection of its own; dropping the receiver ends them.
    ///
    /// What is told: [`StoreNotice::Changed`](crate::store::StoreNotice::Changed) for each committed save (and successful
    /// [`save_if`](Self::save_if)), [`StoreNotice::Ended`](crate::store::StoreNotice::Ended) for each
    /// [`remove`](SessionStore::remove), and for each [`expired`](SessionStore::expired)
    /// that deleted the row. A write that did not commit (failed, timed out, refused by
    /// `save_if`, a save of a removed session) is not told. The cleanup of rows past
    /// their `ttl` is not told either: a node serving a session from its memory keeps it
    /// (the row's expiry is the store's business, not the session's end).
    pub async fn notices(&self) -> Result<StoreNotices, StoreError> {
        notify::start(self.inner.listen.clone()).await
    }

    /// This store's node id (16 hex digits, random per store): what its notices carry,
    /// so that its own [`notices`](Self::notices) skip them.
    pub fn node_id(&self) -> &str {
        self.inner.listen.keys.node()
    }

    /// The announcements this store's [`notices`](Self::notices) ignored since it was
    /// built: without a MAC that verifies under its secret keys (a plain `NOTIFY` from
    /// any role, a node given another key or of a version before signed notices), or
    /// replayed (taken before, or older than
    /// [`notice_max_age`](PgStoreConfig::notice_max_age)). Each is logged at `debug`
    /// too; a count that grows says someone else writes to the nodes' channels, or a node
    /// does not share the key.
    pub fn ignored_notices(&self) -> IgnoredNotices {
        self.inner.listen.keys.ignored()
    }

    /// Deletes at most [`cleanup_batch`](PgStoreConfig::cleanup_batch) expired session
    /// rows and as many expired task rows (what the cleanup task does each round);
    /// returns how many.
    pub async fn cleanup(&self) -> Result<u64, StoreError> {
        self.inner.cleanup_once().await
    }
}

impl Drop for PgSessionStore {
    fn drop(&mut self) {
        if let Some(task) = &self.cleanup {
            task.abort();
        }
    }
}

impl SessionStore for PgSessionStore {
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move { Ok(self.load_versioned(id).await?.map(|(record, _)| record)) })
    }

    fn save<'a>(&'a self, id: &'a str, record: &'a [u8]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let inner = &*self.inner;
            let notice = inner.notice('C', id);
            let params: [&(dyn ToSql + Sync); 5] =
                [&id, &inner.ttl_ms, &record, &principal_of(record), &notice];
            inner.execute("save", &inner.save, &params).await?;
            Ok(())
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let inner = &*self.inner;
            inner.execute("remove", &inner.remove, &[&id, &inner.ttl_ms, &inner.notice('E', id)]).await?;
            Ok(())
        })
    }

    fn expired<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let inner = &*self.inner;
            inner.execute("expired", &inner.expired, &[&id, &inner.grace_ms, &inner.notice('E', id)]).await?;
            Ok(())
        })
    }

    /// Pushes the expiry of a live record to now + `ttl` and marks it touched, as a load
    /// does, without reading it (no notice: nothing changed). A removed or expired
    /// session is left as it is.
    fn touch<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let inner = &*self.inner;
            inner.execute("touch", &inner.touch, &[&id, &inner.ttl_ms]).await?;
            Ok(())
        })
    }

    /// Announces `news` on the schema's catalog channel (`pg_notify`, one statement): every
    /// other node's [`notices`](PgSessionStore::notices) hear it as
    /// [`StoreNotice::Catalog`](crate::store::StoreNotice::Catalog).
    fn announce<'a>(&'a self, news: &'a CatalogNews) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let inner = &*self.inner;
            let payload = notify::news_payload(&inner.listen.keys, &inner.listen.catalog, news);
            inner.query_opt("announce", &inner.announce, &[&payload]).await?;
            Ok(())
        })
    }

    /// [`PgSessionStore::notices`]: the server listens from its start.
    fn notices(&self) -> StoreFuture<'_, Option<StoreNotices>> {
        Box::pin(async move { Self::notices(self).await.map(Some) })
    }
}

#[cfg(test)]
mod tests {
    use super::principal_of;

    #[test]
    fn the_principal_column_comes_from_a_version_1_record_only() {
        let mut with = vec![1, 2, 0b11, 0, 0];
        with.extend([9; 32]);
        with.extend([0, 0]);
        assert_eq!(principal_of(&with), Some(&[9; 32][..]));
        assert_eq!(principal_of(&[1, 2, 1, 0, 0, 0, 0]), None, "no principal flag");
        with[0] = 2;
        assert_eq!(principal_of(&with), None, "another version");
        assert_eq!(principal_of(&[1, 2, 2, 0, 0, 1]), None, "short");
    }
}
