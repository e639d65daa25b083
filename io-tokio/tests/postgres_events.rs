//! `PgSessionStore` as an `EventStore` against a real PostgreSQL (`pg_support`): events
//! appended and loaded in order, trimmed per stream and per session in the append's
//! transaction, gone with their session (removed, expired, cleaned up), the schema
//! migrated from version 1 (records kept) and the migration rerun, and a stalled
//! database failing an append and a load within the operation timeout.

#![cfg(feature = "postgres")]

mod http_support;
mod pg_support;

use std::time::{Duration, Instant};

use http_support::patient;
use mcp_io_tokio::store::{EventBounds, EventStore, KeptEvent, SessionStore, StreamEvent};
use pg_support::{PgServer, config, connect, fresh, store};

fn ev(session: &str, stream: u32, seq: u32, data: &[u8]) -> StreamEvent {
    StreamEvent::new(session, stream, seq, data, false)
}

fn seqs(kept: &[KeptEvent]) -> Vec<u32> {
    kept.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn events_are_appended_loaded_in_order_and_kept_once() {
    let Some(db) = fresh("t_ev_crud").await else { return };
    patient("events crud", async {
        let s = store(&db.url, "t_ev_crud").await;
        s.save("a", b"r").await.unwrap();
        s.save("b", b"r").await.unwrap();
        let mut batch: Vec<_> = (1..=4).map(|q| ev("a", 7, q, format!("a{q}").as_bytes())).collect();
        batch.push(ev("b", 7, 1, b"b1"));
        batch.push(StreamEvent::new("a", 7, 5, b"answer", true));
        batch.push(ev("a", u32::MAX, 1, b"big numbers"));
        s.append(&batch).await.unwrap();
        let kept = s.load_events("a", 7, 0).await.unwrap();
        assert_eq!(seqs(&kept), [1, 2, 3, 4, 5]);
        assert_eq!(kept[1].data, b"a2");
        assert!(kept[4].last && !kept[3].last);
        assert_eq!(seqs(&s.load_events("a", 7, 3).await.unwrap()), [3, 4, 5], "from the one named");
        assert_eq!(seqs(&s.load_events("a", u32::MAX, 0).await.unwrap()), [1]);
        assert_eq!(s.load_events("b", 7, 0).await.unwrap()[0].data, b"b1", "sessions apart");
        assert!(s.load_events("a", 8, 0).await.unwrap().is_empty(), "another stream");
        // Appended again (a retried batch): kept as it was.
        s.append(&[ev("a", 7, 2, b"other")]).await.unwrap();
        assert_eq!(s.load_events("a", 7, 2).await.unwrap()[0].data, b"a2");
        // A session the store does not hold takes no events (and the batch still works).
        s.append(&[ev("nobody", 1, 1, b"x"), ev("b", 7, 2, b"b2")]).await.unwrap();
        assert!(s.load_events("nobody", 1, 0).await.unwrap().is_empty());
        assert_eq!(seqs(&s.load_events("b", 7, 0).await.unwrap()), [1, 2]);
        // Another node on the same schema sees them.
        let other = store(&db.url, "t_ev_crud").await;
        assert_eq!(seqs(&other.load_events("a", 7, 0).await.unwrap()), [1, 2, 3, 4, 5]);
    })
    .await;
}

#[tokio::test]
async fn appends_are_trimmed_per_stream_and_per_session() {
    let Some(db) = fresh("t_ev_bound").await else { return };
    patient("events bounds", async {
        let bounds =
            EventBounds { stream_events: 3, stream_bytes: 100, session_events: 5, session_bytes: 1000 };
        let s = config(&db.url, "t_ev_bound").event_bounds(bounds).build().await.unwrap();
        s.save("a", b"r").await.unwrap();
        s.append(&(1..=5).map(|q| ev("a", 1, q, b"xx")).collect::<Vec<_>>()).await.unwrap();
        assert_eq!(seqs(&s.load_events("a", 1, 0).await.unwrap()), [3, 4, 5], "three per stream");
        // One at a time, as a server appends: still three, the newest.
        s.append(&[ev("a", 1, 6, b"xx")]).await.unwrap();
        assert_eq!(seqs(&s.load_events("a", 1, 0).await.unwrap()), [4, 5, 6]);
        // The session's bound: its oldest go, whatever their stream.
        s.append(&(1..=3).map(|q| ev("a", 2, q, b"z")).collect::<Vec<_>>()).await.unwrap();
        assert_eq!(seqs(&s.load_events("a", 1, 0).await.unwrap()), [5, 6]);
        assert_eq!(seqs(&s.load_events("a", 2, 0).await.unwrap()), [1, 2, 3]);
        // Bytes: a stream keeps its newest 100 bytes; an event larger is not kept.
        s.append(&[ev("a", 3, 1, &[1; 60]), ev("a", 3, 2, &[2; 60])]).await.unwrap();
        assert_eq!(seqs(&s.load_events("a", 3, 0).await.unwrap()), [2]);
        s.append(&[ev("a", 3, 3, &[3; 101])]).await.unwrap();
        assert!(s.load_events("a", 3, 0).await.unwrap().is_empty(), "too large: not kept, and 2 went");
        let c = connect(&db.url).await;
        let n: i64 = c.query_one("SELECT count(*) FROM t_ev_bound.events", &[]).await.unwrap().get(0);
        assert!(n <= 5, "the session's bound holds in the table: {n}");
    })
    .await;
}

#[tokio::test]
async fn events_go_with_their_session() {
    let Some(db) = fresh("t_ev_expiry").await else { return };
    patient("events expiry", async {
        let s = config(&db.url, "t_ev_expiry").ttl(Duration::from_millis(300)).build().await.unwrap();
        for id in ["removed", "expired", "cleaned", "kept"] {
            s.save(id, b"r").await.unwrap();
            s.append(&[ev(id, 1, 1, b"x")]).await.unwrap();
            assert_eq!(s.load_events(id, 1, 0).await.unwrap().len(), 1, "{id}");
        }
        // Removed (`DELETE`): its events are gone at once, and it takes no new ones.
        s.remove("removed").await.unwrap();
        assert!(s.load_events("removed", 1, 0).await.unwrap().is_empty());
        s.append(&[ev("removed", 1, 2, b"late")]).await.unwrap();
        assert!(s.load_events("removed", 1, 0).await.unwrap().is_empty());
        // Expired by this node (nobody used it within the grace): the rows are deleted.
        let grace = config(&db.url, "t_ev_expiry").expire_grace(Duration::ZERO).build().await.unwrap();
        grace.expired("expired").await.unwrap();
        let c = connect(&db.url).await;
        let count = async |id: &str| -> i64 {
            c.query_one("SELECT count(*) FROM t_ev_expiry.events WHERE session_id = $1", &[&id])
                .await
                .unwrap()
                .get(0)
        };
        assert_eq!(count("expired").await, 0, "deleted with the session's row");
        // Past the ttl: not shown; the cleanup deletes the rows.
        tokio::time::sleep(Duration::from_millis(400)).await;
        s.save("kept", b"r").await.unwrap();
        assert!(s.load_events("cleaned", 1, 0).await.unwrap().is_empty(), "expired: not shown");
        assert_eq!(count("cleaned").await, 1);
        s.cleanup().await.unwrap();
        assert_eq!(count("cleaned").await, 0, "the cleanup took them with the session");
        assert_eq!(count("removed").await, 0);
        assert_eq!(s.load_events("kept", 1, 0).await.unwrap().len(), 1, "a live session keeps its events");
    })
    .await;
}

#[tokio::test]
async fn a_version_1_schema_is_migrated_and_a_rerun_changes_nothing() {
    let Some(db) = fresh("t_ev_migrate").await else { return };
    patient("events migration", async {
        let c = connect(&db.url).await;
        let versions = async || -> Vec<i32> {
            c.query("SELECT version FROM t_ev_migrate.schema_version ORDER BY version", &[])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect()
        };
        let s = store(&db.url, "t_ev_migrate").await;
        assert_eq!(versions().await, [1, 2, 3, 4]);
        s.save("a", b"one").await.unwrap();
        drop(s);
        // Back to what version 1 left: no events table, version 1 recorded.
        c.batch_execute(
            "DROP TABLE t_ev_migrate.events; DROP TABLE t_ev_migrate.tasks;
             DELETE FROM t_ev_migrate.schema_version WHERE version >= 2",
        )
        .await
        .unwrap();
        assert_eq!(versions().await, [1]);
        let s = store(&db.url, "t_ev_migrate").await;
        assert_eq!(versions().await, [1, 2, 3, 4], "migrated to 2, 3 and 4");
        assert_eq!(s.load("a").await.unwrap().as_deref(), Some(&b"one"[..]), "the records stay");
        s.append(&[ev("a", 1, 1, b"x")]).await.unwrap();
        drop(s);
        let s = store(&db.url, "t_ev_migrate").await;
        assert_eq!(versions().await, [1, 2, 3, 4], "a rerun changes nothing");
        assert_eq!(seqs(&s.load_events("a", 1, 0).await.unwrap()), [1], "and keeps the events");
    })
    .await;
}

#[tokio::test]
async fn a_stalled_database_fails_appends_and_loads_within_the_operation_timeout() {
    if !pg_support::available() {
        return;
    }
    let server = PgServer::start();
    patient("events stalled", async {
        let s = config(&server.url(), "t_ev_stall")
            .operation_timeout(Duration::from_secs(1))
            .build()
            .await
            .unwrap();
        s.save("a", b"r").await.unwrap();
        s.append(&[ev("a", 1, 1, b"x")]).await.unwrap();
        server.signal("STOP");
        let t = Instant::now();
        assert!(s.append(&[ev("a", 1, 2, b"y")]).await.is_err());
        assert!(s.load_events("a", 1, 0).await.is_err());
        assert!(t.elapsed() < Duration::from_secs(10), "no hang: {:?}", t.elapsed());
        server.signal("CONT");
        let kept = loop {
            match s.load_events("a", 1, 0).await {
                Ok(kept) => break kept,
                Err(_) if t.elapsed() < Duration::from_secs(20) => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => panic!("the store did not come back: {e}"),
            }
        };
        assert_eq!(seqs(&kept)[0], 1, "what was acknowledged is there");
    })
    .await;
}
