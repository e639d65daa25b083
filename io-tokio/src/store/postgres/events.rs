//! The events of session streams in PostgreSQL: [`PgSessionStore`] as an [`EventStore`],
//! so a client resumes a stream with `Last-Event-ID` on any node sharing the schema.
//!
//! One row per event in `<schema>.events` (migration 2, `schema.rs`): the session, the
//! stream, the event's number, its data, whether it was the stream's last, and `n`, the
//! order of appends. A row references its session's row (`ON DELETE CASCADE`): it goes
//! when the session's row is deleted (its expiry, the periodic cleanup). A removed
//! session (its record cleared until its expiry) shows no events and takes no new ones.
//!
//! An append is one transaction per session: the events inserted (an event already kept
//! is left as it was), then the session trimmed to its [`EventBounds`] (per stream from
//! its newest back, then per session across its streams by order of append), under a
//! transaction-scoped advisory lock on the session so that two nodes appending to one
//! session trim in turn. Every statement is pipelined (one round trip for the whole
//! transaction bar its commit) and bounded like the store's other operations: the
//! transaction runs under a `statement_timeout` of what is left of the operation's time,
//! and the whole is cut at the operation timeout (its connection then closed).

use deadpool_postgres::tokio_postgres::Row;
use deadpool_postgres::tokio_postgres::types::ToSql;

use super::schema::{self, fail};
use super::{Inner, MARGIN, PgSessionStore, PgStoreConfig};
use crate::store::sessions::{EventBounds, EventStore, KeptEvent, StoreError, StoreFuture, StreamEvent};

/// The first key of the advisory lock an append takes on its session ("mcpe" folded into
/// an `int4`; the migration's lock is another class).
const LOCK_CLASS: i32 = 0x6d63_7065;

/// The statements, for one schema, and the bounds.
#[derive(Debug)]
pub(super) struct Sql {
    schema: String,
    insert: String,
    trim: String,
    load: String,
    bounds: EventBounds,
}

impl Sql {
    pub(super) fn new(cfg: &PgStoreConfig) -> Self {
        let q = schema::quote(&cfg.schema);
        let (t, s) = (format!("{q}.events"), format!("{q}.sessions"));
        let live =
            format!("EXISTS (SELECT 1 FROM {s} WHERE id = $1 AND record IS NOT NULL AND expires_at > now())");
        Self {
            schema: cfg.schema.clone(),
            insert: format!(
                "INSERT INTO {t} (session_id, stream, seq, data, is_last) \
                 SELECT $1, e.stream, e.seq, e.data, e.is_last \
                 FROM unnest($2::bigint[], $3::bigint[], $4::bytea[], $5::boolean[]) WITH ORDINALITY \
                 AS e(stream, seq, data, is_last, o) WHERE {live} ORDER BY e.o \
                 ON CONFLICT (session_id, stream, seq) DO NOTHING"
            ),
            trim: format!(
                "WITH w AS (SELECT stream, seq, n, length(data) AS len, \
                   row_number() OVER (PARTITION BY stream ORDER BY seq DESC) AS sn, \
                   sum(length(data)) OVER (PARTITION BY stream ORDER BY seq DESC) AS sb \
                   FROM {t} WHERE session_id = $1), \
                 k AS (SELECT stream, seq, row_number() OVER (ORDER BY n DESC) AS tn, \
                   sum(len) OVER (ORDER BY n DESC) AS tb FROM w WHERE sn <= $2 AND sb <= $3) \
                 DELETE FROM {t} WHERE session_id = $1 AND (stream, seq) IN ( \
                   SELECT stream, seq FROM w WHERE sn > $2 OR sb > $3 \
                   UNION ALL SELECT stream, seq FROM k WHERE tn > $4 OR tb > $5)"
            ),
            load: format!(
                "SELECT seq, data, is_last FROM {t} WHERE session_id = $1 AND stream = $2 AND seq >= $3 \
                 AND {live} ORDER BY seq"
            ),
            bounds: cfg.events,
        }
    }
}

impl PgStoreConfig {
    /// How many stream events the store keeps per stream and per session (default
    /// [`EventBounds::default`]: 256 events and 64 KiB per stream, 1,024 events and
    /// 256 KiB per session); the oldest go first.
    pub fn event_bounds(mut self, bounds: EventBounds) -> Self {
        self.events = bounds;
        self
    }
}

/// `events` grouped by session, in their order (each group keeps its events' order).
fn by_session(events: &[StreamEvent]) -> Vec<(&str, Vec<&StreamEvent>)> {
    let mut groups: Vec<(&str, Vec<&StreamEvent>)> = Vec::new();
    for e in events {
        match groups.iter_mut().find(|(id, _)| *id == e.session) {
            Some((_, g)) => g.push(e),
            None => groups.push((&e.session, vec![e])),
        }
    }
    groups
}

impl Inner {
    /// Runs `work` on a pooled connection within the operation timeout, its statements
    /// under a server-side `statement_timeout` of what is left of it (`budget`, in ms); a
    /// connection whose operation was cut is closed, not returned to the pool.
    pub(super) async fn within<T>(
        &self,
        what: &'static str,
        work: impl AsyncFnOnce(&mut deadpool_postgres::Client, u128) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, StoreError> {
        let deadline = tokio::time::Instant::now() + self.operation_timeout;
        let late =
            || StoreError::new(format!("postgres: {what}: no answer within {:?}", self.operation_timeout));
        let mut client = match tokio::time::timeout_at(deadline, self.pool.get()).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => return Err(fail(&format!("{what}: no connection"), e)),
            Err(_) => return Err(late()),
        };
        let left = deadline.saturating_duration_since(tokio::time::Instant::now()).saturating_sub(MARGIN);
        let budget = left.min(self.statement_timeout).as_millis().max(1);
        match tokio::time::timeout_at(deadline, work(&mut client, budget)).await {
            Ok(r) => r.map_err(|e| fail(what, e)),
            Err(_) => {
                drop(deadpool_postgres::Object::take(client));
                Err(late())
            }
        }
    }

    /// Appends one session's events and trims the session, in one transaction.
    async fn append_session(&self, id: &str, events: &[&StreamEvent]) -> Result<(), StoreError> {
        let sql = &self.events;
        let streams: Vec<i64> = events.iter().map(|e| i64::from(e.stream)).collect();
        let seqs: Vec<i64> = events.iter().map(|e| i64::from(e.seq)).collect();
        let data: Vec<&[u8]> = events.iter().map(|e| &e.data[..]).collect();
        let last: Vec<bool> = events.iter().map(|e| e.last).collect();
        let b = sql.bounds;
        let bounds = [b.stream_events, b.stream_bytes, b.session_events, b.session_bytes].map(i64::from);
        let lock_key = format!("{}/{id}", sql.schema);
        self.within("append events", async |client, budget| {
            let insert = client.prepare_cached(&sql.insert).await?;
            let trim = client.prepare_cached(&sql.trim).await?;
            // Prepared beforehand, every statement is sent as it is polled: in order.
            let lock = client.prepare_cached("SELECT pg_advisory_xact_lock($1, hashtext($2))").await?;
            let tx = client.transaction().await?;
            let set = format!("SET LOCAL statement_timeout = {budget}");
            let lock_args: [&(dyn ToSql + Sync); 2] = [&LOCK_CLASS, &lock_key];
            let insert_args: [&(dyn ToSql + Sync); 5] = [&id, &streams, &seqs, &data, &last];
            let trim_args: [&(dyn ToSql + Sync); 5] = [&id, &bounds[0], &bounds[1], &bounds[2], &bounds[3]];
            // Sent one after the other without waiting: one round trip.
            let (set, lock, inserted, trimmed) = tokio::join!(
                tx.batch_execute(&set),
                tx.execute(&lock, &lock_args),
                tx.execute(&insert, &insert_args),
                tx.execute(&trim, &trim_args),
            );
            set?;
            lock?;
            inserted?;
            trimmed?;
            tx.commit().await
        })
        .await
    }

    async fn load_events(&self, id: &str, stream: u32, from: u32) -> Result<Vec<Row>, StoreError> {
        let (stream, from) = (i64::from(stream), i64::from(from));
        self.within("load events", async |client, budget| {
            let st = client.prepare_cached(&self.events.load).await?;
            let set = format!("SET statement_timeout = {budget}");
            let args: [&(dyn ToSql + Sync); 3] = [&id, &stream, &from];
            let (set, rows) = tokio::join!(client.batch_execute(&set), client.query(&st, &args));
            set?;
            rows
        })
        .await
    }
}

impl EventStore for PgSessionStore {
    fn append<'a>(&'a self, events: &'a [StreamEvent]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            // Each session in a transaction of its own: one that fails (its session's row
            // deleted meanwhile) does not lose the others'.
            let mut failed = None;
            for (id, group) in by_session(events) {
                if let Err(e) = self.inner.append_session(id, &group).await {
                    failed = Some(e);
                }
            }
            failed.map_or(Ok(()), Err)
        })
    }

    fn load_events<'a>(
        &'a self,
        session: &'a str,
        stream: u32,
        from: u32,
    ) -> StoreFuture<'a, Vec<KeptEvent>> {
        Box::pin(async move {
            let rows = self.inner.load_events(session, stream, from).await?;
            let event = |r: &Row| {
                let seq = u32::try_from(r.get::<_, i64>(0)).map_err(|e| fail("load events: a number", e))?;
                Ok(KeptEvent::new(seq, r.get(1), r.get(2)))
            };
            rows.iter().map(event).collect()
        })
    }
}
