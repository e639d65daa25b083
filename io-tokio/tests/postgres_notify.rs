//! `PgSessionStore`'s notices between nodes against a real PostgreSQL (`pg_support`: CI's
//! server, or one started for the test): two stores on one database and schema, as two
//! nodes. A save on one is a `Changed` on the other's notices and not on its own; a removal,
//! or an expiry that deletes, is an `Ended`; a write that does not commit is told to no
//! one; a receiver that falls behind gets `Missed`, then the later notices; a database
//! restarted or stalled under a listener gives `Missed`, then notices flow again; dropping
//! the receiver closes its connection.
//!
//! "Nothing was told" is checked by order, never by waiting: a marker written afterwards
//! is the next notice.

#![cfg(feature = "postgres")]

mod pg_support;

use std::time::Duration;

use mcp_io_tokio::store::SessionStore;
use pg_support::{PgServer, config, connect, fresh, store};

/// The bound on every wait for a notice (the machines are noisy; nothing here should take
/// more than a fraction of it).
const WITHIN: Duration = Duration::from_secs(10);

/// The next notice, within [`WITHIN`]. (A macro: the notice types are not named here, so
/// these tests build whether or not the crate root re-exports them.)
macro_rules! next {
    ($notices:expr) => {
        tokio::time::timeout(WITHIN, $notices.recv())
            .await
            .expect("a notice within 10 s")
            .expect("the listening task runs")
    };
}

/// Asserts the next notice is `Changed(id)`.
macro_rules! changed {
    ($notices:expr, $id:expr) => {{
        let n = next!($notices);
        assert!(n.is_changed() && n.session() == Some($id), "expected Changed({:?}), got {n:?}", $id);
    }};
}

/// Asserts the next notice is `Ended(id)`.
macro_rules! ended {
    ($notices:expr, $id:expr) => {{
        let n = next!($notices);
        assert!(n.is_ended() && n.session() == Some($id), "expected Ended({:?}), got {n:?}", $id);
    }};
}

/// The whole test within a minute: a hang fails, it does not stall CI.
async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), fut).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

#[tokio::test]
async fn a_save_on_one_node_is_a_change_on_the_other_and_not_on_its_own() {
    let Some(db) = fresh("t_n_save").await else { return };
    bounded("saves", async {
        let (a, b) = (store(&db.url, "t_n_save").await, store(&db.url, "t_n_save").await);
        assert_ne!(a.node_id(), b.node_id());
        let mut na = a.notices().await.expect("A listens");
        let mut nb = b.notices().await.expect("B listens");

        a.save("s1", b"one").await.unwrap();
        changed!(nb, "s1");
        a.save("s1", b"two").await.unwrap();
        changed!(nb, "s1");
        assert_eq!(a.save_if("s2", b"x", None).await.unwrap(), Some(1));
        changed!(nb, "s2");
        assert_eq!(a.save_if("s2", b"y", Some(1)).await.unwrap(), Some(2));
        changed!(nb, "s2");
        a.save("with space", b"z").await.unwrap();
        changed!(nb, "with space");
        // A load changes no record: not told.
        assert!(a.load("s1").await.unwrap().is_some());

        // A's own writes were not told to A: B's marker is A's first notice; and B's
        // marker is not told to B: A's next write is.
        b.save("marker", b"m").await.unwrap();
        changed!(na, "marker");
        a.save("after", b"a").await.unwrap();
        changed!(nb, "after");
        assert!(na.try_recv().is_none(), "A's own write not told to A");
    })
    .await;
}

#[tokio::test]
async fn a_removal_or_an_expiry_on_one_node_is_an_end_on_the_other() {
    let Some(db) = fresh("t_n_end").await else { return };
    bounded("ends", async {
        let (a, b) = (store(&db.url, "t_n_end").await, store(&db.url, "t_n_end").await);
        // A third node, ending sessions on its idle timeout at once.
        let c = config(&db.url, "t_n_end").expire_grace(Duration::ZERO).build().await.unwrap();
        let mut nb = b.notices().await.unwrap();

        a.save("s", b"x").await.unwrap();
        changed!(nb, "s");
        a.remove("s").await.unwrap();
        ended!(nb, "s");

        a.save("e1", b"x").await.unwrap();
        changed!(nb, "e1");
        tokio::time::sleep(Duration::from_millis(20)).await;
        c.expired("e1").await.unwrap();
        assert!(a.load("e1").await.unwrap().is_none(), "deleted");
        ended!(nb, "e1");

        // An expiry that deletes nothing (A's grace is 30 minutes): not told.
        a.save("e2", b"x").await.unwrap();
        changed!(nb, "e2");
        a.expired("e2").await.unwrap();
        assert!(a.load("e2").await.unwrap().is_some(), "kept");
        a.save("marker", b"m").await.unwrap();
        changed!(nb, "marker");
    })
    .await;
}

#[tokio::test]
async fn a_write_that_does_not_commit_is_told_to_no_one() {
    let Some(db) = fresh("t_n_fail").await else { return };
    bounded("failed writes", async {
        let a = config(&db.url, "t_n_fail").lock_timeout(Duration::from_millis(200)).build().await.unwrap();
        let b = store(&db.url, "t_n_fail").await;
        let mut nb = b.notices().await.unwrap();

        assert_eq!(a.save_if("c", b"0", None).await.unwrap(), Some(1));
        changed!(nb, "c");
        assert_eq!(a.save_if("c", b"stale", Some(7)).await.unwrap(), None, "a stale version");
        assert_eq!(a.save_if("c", b"again", None).await.unwrap(), None, "already there");
        a.remove("gone").await.unwrap();
        ended!(nb, "gone");
        a.save("gone", b"late").await.unwrap(); // a removed session stays removed

        // A save that fails (the row is locked past the lock timeout) and rolls back.
        let locker = connect(&db.url).await;
        locker
            .batch_execute("BEGIN; SELECT 1 FROM t_n_fail.sessions WHERE id = 'c' FOR UPDATE")
            .await
            .unwrap();
        assert!(a.save("c", b"blocked").await.is_err(), "lock timeout");
        locker.batch_execute("COMMIT").await.unwrap();
        assert_eq!(a.load_versioned("c").await.unwrap(), Some((b"0".to_vec(), 1)), "nothing written");

        a.save("marker", b"m").await.unwrap();
        changed!(nb, "marker");
    })
    .await;
}

#[tokio::test]
async fn a_full_channel_yields_missed_then_the_later_notices() {
    let Some(db) = fresh("t_n_full").await else { return };
    bounded("full channel", async {
        let a = store(&db.url, "t_n_full").await;
        let b = config(&db.url, "t_n_full").notice_capacity(2).build().await.unwrap();
        let mut nb = b.notices().await.unwrap();

        for i in 0..20 {
            a.save(&format!("f{i}"), b"x").await.unwrap();
        }
        // Not an assertion: lets the listener hear all twenty before anything is taken,
        // so that the channel overflows.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut before = Vec::new();
        loop {
            let n = next!(nb);
            if n.is_missed() {
                break;
            }
            before.push(n.session().expect("a session").to_owned());
        }
        assert!(before.len() <= 2, "at most the capacity before Missed: {before:?}");
        let expected: Vec<String> = (0..before.len()).map(|i| format!("f{i}")).collect();
        assert_eq!(before, expected, "in order");

        a.save("after", b"x").await.unwrap();
        loop {
            let n = next!(nb);
            assert!(!n.is_missed(), "one Missed for one loss");
            if n.session() == Some("after") {
                assert!(n.is_changed(), "{n:?}");
                break;
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_yields_missed_and_notices_flow_again() {
    if !pg_support::available() {
        return;
    }
    // A server of the test's own: it is stopped and started again.
    let server = tokio::task::spawn_blocking(PgServer::start).await.unwrap();
    let url = server.url();
    bounded("restart", async {
        let (a, b) = (store(&url, "t_n_restart").await, store(&url, "t_n_restart").await);
        let mut nb = b.notices().await.unwrap();
        a.save("before", b"x").await.unwrap();
        changed!(nb, "before");

        let server = &server;
        tokio::task::block_in_place(|| {
            server.kill();
            server.up();
        });
        // The listener reconnects (backoff at most 5 s), listens again, and says Missed.
        let n = next!(nb);
        assert!(n.is_missed(), "expected Missed after the restart, got {n:?}");

        // The first operation after the restart may still fail once (a broken pooled
        // connection); a few tries.
        let mut saved = false;
        for _ in 0..10 {
            if a.save("after", b"y").await.is_ok() {
                saved = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(saved, "A saves again once the database is back");
        changed!(nb, "after");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_database_is_found_by_the_check_and_yields_missed() {
    if !pg_support::available() {
        return;
    }
    // A server of the test's own: it is frozen and thawed.
    let server = tokio::task::spawn_blocking(PgServer::start).await.unwrap();
    let url = server.url();
    bounded("stall", async {
        let a = store(&url, "t_n_stall").await;
        let b = config(&url, "t_n_stall")
            .notice_check_every(Duration::from_millis(200))
            .operation_timeout(Duration::from_secs(1))
            .connect_timeout(Duration::from_secs(1))
            .build()
            .await
            .unwrap();
        let mut nb = b.notices().await.unwrap();
        a.save("before", b"x").await.unwrap();
        changed!(nb, "before");

        // Frozen: the connection stays open, nothing answers. Not an assertion: long
        // enough for the check (every 200 ms, answered within 1 s) to give up.
        server.signal("STOP");
        tokio::time::sleep(Duration::from_secs(4)).await;
        server.signal("CONT");
        let n = next!(nb);
        assert!(n.is_missed(), "expected Missed after the stall, got {n:?}");
        a.save("after", b"y").await.unwrap();
        changed!(nb, "after");
    })
    .await;
}

#[tokio::test]
async fn dropping_the_receiver_closes_its_listening_connection() {
    let Some(db) = fresh("t_n_drop").await else { return };
    bounded("drop", async {
        // No check in the window: the backend's last query stays the LISTEN.
        let b =
            config(&db.url, "t_n_drop").notice_check_every(Duration::from_secs(600)).build().await.unwrap();
        let c = connect(&db.url).await;
        let listeners = || async {
            let row = c
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN \"t_n_drop.sessions\"%'",
                    &[],
                )
                .await
                .unwrap();
            row.get::<_, i64>(0)
        };
        let (n1, n2) = (b.notices().await.unwrap(), b.notices().await.unwrap());
        assert_eq!(listeners().await, 2, "a connection per receiver");
        drop(n1);
        let start = std::time::Instant::now();
        while listeners().await != 1 {
            assert!(start.elapsed() < WITHIN, "the dropped receiver's connection closes");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        drop(n2);
        while listeners().await != 0 {
            assert!(start.elapsed() < WITHIN, "both closed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn catalog_news_announced_on_one_node_is_heard_on_the_other_and_not_on_its_own() {
    use mcp_engine::subs::CatalogChange;
    use mcp_io_tokio::store::{CatalogNews, StoreNotice};
    let Some(db) = fresh("t_n_news").await else { return };
    bounded("news", async {
        let (a, b) = (store(&db.url, "t_n_news").await, store(&db.url, "t_n_news").await);
        let mut na = a.notices().await.expect("A listens");
        let mut nb = b.notices().await.expect("B listens");
        let lists = CatalogNews::ListChanged(CatalogChange::of(true, true, false));
        let updated = CatalogNews::ResourceUpdated("test://r/1 2".into());
        a.announce(&lists).await.unwrap();
        a.announce(&updated).await.unwrap();
        assert_eq!(next!(nb), StoreNotice::Catalog(lists.clone()));
        assert_eq!(next!(nb), StoreNotice::Catalog(updated));
        // Session notices and news share the listening connection, in commit order.
        a.save("s", b"x").await.unwrap();
        changed!(nb, "s");
        // A's own news was not told to A: B's marker is A's first notice.
        b.announce(&lists).await.unwrap();
        assert_eq!(next!(na), StoreNotice::Catalog(lists));
        // A uri too long to send is "something changed".
        a.announce(&CatalogNews::ResourceUpdated("x".repeat(5000))).await.unwrap();
        assert!(next!(nb).is_missed());
    })
    .await;
}
