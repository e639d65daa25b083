//! The store's tables, created and migrated by the store itself: a version table and the
//! ordered migrations, applied in one transaction under an advisory lock.

use std::time::Duration;

use deadpool_postgres::tokio_postgres::Client;

use crate::store::sessions::StoreError;

/// The migrations, in order: migration `i` (from 0) brings the schema to version `i + 1`.
/// `{s}` stands for the quoted schema name. A migration is never edited once released: a
/// change to the tables is a new entry at the end.
const MIGRATIONS: &[&str] = &[
    // Version 1: session records. `record` NULL is a removed session (kept until
    // `expires_at` so that a late save from another node does not bring it back);
    // `touched_at` is the last save or load by any node.
    "CREATE TABLE {s}.sessions (
        id text PRIMARY KEY,
        record bytea,
        version bigint NOT NULL,
        principal bytea,
        created_at timestamptz NOT NULL DEFAULT now(),
        touched_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
    );
    CREATE INDEX sessions_expires_at ON {s}.sessions (expires_at);",
    // Version 2: the events of session streams, for `Last-Event-ID` on any node
    // (`events.rs`). A row goes with its session's row (deleted at its expiry); `n` is the
    // order of appends across a session's streams (its oldest go first at its bounds).
    "CREATE TABLE {s}.events (
        session_id text NOT NULL REFERENCES {s}.sessions (id) ON DELETE CASCADE,
        stream bigint NOT NULL,
        seq bigint NOT NULL,
        n bigint GENERATED ALWAYS AS IDENTITY,
        data bytea NOT NULL,
        is_last boolean NOT NULL,
        PRIMARY KEY (session_id, stream, seq)
    );
    CREATE INDEX events_session_order ON {s}.events (session_id, n);",
    // Version 3: task records (`tasks.rs`). `revision` is the record's own (the engine's
    // compare-and-set); `expires_at` is the task's createdAt plus its TTL.
    "CREATE TABLE {s}.tasks (
        id text PRIMARY KEY,
        revision bigint NOT NULL,
        principal bytea,
        record bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
    );
    CREATE INDEX tasks_expires_at ON {s}.tasks (expires_at);",
    // Version 4: a principal's tasks in the order `tasks/list` pages them (`created_at`,
    // then id in byte order). `created_at` is the task's `createdAt` from here on (rows
    // saved before keep the time of their first save).
    "CREATE INDEX tasks_principal_order ON {s}.tasks (principal, created_at, id COLLATE \"C\");",
];

/// The schema version this store writes and reads.
pub(crate) const LATEST: i32 = MIGRATIONS.len() as i32;

/// The first key of the store's advisory locks ("mcp-s" folded into an `int4`): the second
/// is `hashtext` of the schema name.
const LOCK_CLASS: i32 = 0x6d63_7073;

/// Whether `name` may name the store's schema: 1 to 63 bytes of lower-case ASCII letters,
/// digits and `_`, not starting with a digit, not `pg_…` (reserved by PostgreSQL).
pub(crate) fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && !b[0].is_ascii_digit()
        && !name.starts_with("pg_")
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
}

/// Brings `schema` to [`LATEST`] (creating it when absent): idempotent, and safe when
/// several stores start at once (they take the same transaction-scoped advisory lock in
/// turn; the later ones find the work done). Refuses a schema newer than this store knows.
pub(crate) async fn migrate(client: &mut Client, schema: &str, bound: Duration) -> Result<i32, StoreError> {
    let q = quote(schema);
    let ms = bound.as_millis().max(1);
    let tx = client.transaction().await.map_err(|e| fail("migration: begin", e))?;
    tx.batch_execute(&format!("SET LOCAL lock_timeout = {ms}; SET LOCAL statement_timeout = {ms}"))
        .await
        .map_err(|e| fail("migration: timeouts", e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&LOCK_CLASS, &schema])
        .await
        .map_err(|e| fail("migration: advisory lock", e))?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {q};
         CREATE TABLE IF NOT EXISTS {q}.schema_version (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(|e| fail("migration: version table", e))?;
    let row = tx
        .query_one(&format!("SELECT coalesce(max(version), 0) FROM {q}.schema_version"), &[])
        .await
        .map_err(|e| fail("migration: version", e))?;
    let current: i32 = row.get(0);
    if current > LATEST {
        return Err(StoreError::new(format!(
            "schema {schema} is at version {current}, newer than this store knows ({LATEST}): \
             upgrade this server"
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = i as i32 + 1;
        tx.batch_execute(&sql.replace("{s}", &q))
            .await
            .map_err(|e| fail(&format!("migration to {version}"), e))?;
        tx.execute(&format!("INSERT INTO {q}.schema_version (version) VALUES ($1)"), &[&version])
            .await
            .map_err(|e| fail("migration: record the version", e))?;
    }
    tx.commit().await.map_err(|e| fail("migration: commit", e))?;
    Ok(LATEST)
}

/// The `LISTEN/NOTIFY` channel of the sessions in `schema` (a valid name): named like
/// the table, `<schema>.sessions`, when that fits in an identifier (63 bytes); else the
/// schema's first 46 bytes, a dot and 16 hex digits of a hash of the whole name (FNV-1a,
/// 64 bits), 63 bytes in all. Every store naming the same schema, whatever its version,
/// derives the same channel: this is part of the wire between nodes, never changed.
pub(crate) fn channel(schema: &str) -> String {
    named(schema, "sessions", schema)
}

/// The channel of the catalog news of `schema`'s servers: `<schema>.catalog`, or, when
/// that is too long, the schema's first 46 bytes, a dot and the hash of
/// `<schema>.catalog` (so it differs from [`channel`]'s). Part of the wire, never changed.
pub(crate) fn catalog_channel(schema: &str) -> String {
    named(schema, "catalog", &format!("{schema}.catalog"))
}

/// `<schema>.<suffix>` if it fits in 63 bytes, else the schema's first 46 bytes, a dot
/// and the FNV-1a hash of `hashed` in hex.
fn named(schema: &str, suffix: &str, hashed: &str) -> String {
    let plain = format!("{schema}.{suffix}");
    if plain.len() <= 63 {
        return plain;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in hashed.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // A valid name is ASCII, so any byte is a character boundary.
    format!("{}.{h:016x}", &schema[..46])
}

/// `name` as a quoted identifier (already validated: no quote inside).
pub(crate) fn quote(name: &str) -> String {
    format!("\"{name}\"")
}

/// A store error saying what failed and why: `e` and its sources (tokio-postgres puts the
/// server's message in the source: "db error: ERROR: canceling statement due to lock
/// timeout").
pub(crate) fn fail(what: &str, e: impl std::error::Error) -> StoreError {
    let mut text = format!("postgres: {what}: {e}");
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    StoreError::new(text)
}

#[cfg(test)]
mod tests {
    use super::{catalog_channel, channel, valid_name};

    #[test]
    fn channels_are_identifiers_of_at_most_63_bytes() {
        assert_eq!(channel("mcp"), "mcp.sessions");
        let fits = "a".repeat(54);
        assert_eq!(channel(&fits), format!("{fits}.sessions"));
        let long = "a".repeat(63);
        let other = format!("{}b", "a".repeat(62));
        let (x, y) = (channel(&long), channel(&other));
        assert_eq!(x.len(), 63);
        assert_eq!(y.len(), 63);
        assert!(x.starts_with(&"a".repeat(46)));
        assert_ne!(x, y, "names alike in their first 46 bytes get different channels");
        assert_eq!(channel(&long), x, "stable");
        assert_eq!(channel("a".repeat(55).as_str()).len(), 63);
        assert_eq!(catalog_channel("mcp"), "mcp.catalog");
        assert_eq!(catalog_channel(&long).len(), 63);
        assert_ne!(catalog_channel(&long), channel(&long), "the two channels of a long name differ");
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        for ok in ["mcp", "mcp_sessions", "_x", "a1", &"a".repeat(63)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", "1a", "pg_mcp", "Mcp", "a-b", "a\"b", "a b", &"a".repeat(64), "é"] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
