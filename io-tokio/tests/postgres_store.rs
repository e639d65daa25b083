//! `PgSessionStore` against a real PostgreSQL (`pg_support`: CI's server, or one started
//! for the test): records created, loaded, updated and removed; concurrent saves of one
//! session from two stores (no lost update: every acknowledged save counted, and
//! compare-and-set merges); expiry and the bounded cleanup; the schema created from an
//! empty database, rerun, and by several stores at once; the database killed under a
//! server (the request is `503` with `Retry-After`, and the same store works once the
//! database is back); lock and statement timeouts bounded.

#![cfg(feature = "postgres")]

mod http_support;
mod pg_support;
mod store_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_support::{Conn, patient};
use mcp_io_tokio::store::{PgSessionStore, SessionStore};
use pg_support::{PgServer, config, connect, fresh, store};
use store_support::{INITIALIZE, PING, legacy, node, open, ping};

/// "No hang": an operation that must fail does so well within this (the bounds under
/// test are 1 to 2 s; the machines are noisy).
const NO_HANG: Duration = Duration::from_secs(10);

/// A version-1 session record with a principal digest (`docs/decisions.md`).
fn record_with_principal(digest: u8) -> Vec<u8> {
    let mut r = vec![1, 2, 0b11, 0, 0];
    r.extend([digest; 32]);
    r.extend([0, 0]);
    r
}

#[tokio::test]
async fn records_are_created_loaded_updated_and_removed() {
    let Some(db) = fresh("t_crud").await else { return };
    patient("crud", async {
        let s = store(&db.url, "t_crud").await;
        assert!(s.load("a").await.unwrap().is_none());
        s.save("a", b"one").await.unwrap();
        assert_eq!(s.load("a").await.unwrap().as_deref(), Some(&b"one"[..]));
        s.save("a", b"two").await.unwrap();
        assert_eq!(s.load_versioned("a").await.unwrap(), Some((b"two".to_vec(), 2)));
        s.save("b", &record_with_principal(9)).await.unwrap();
        let c = connect(&db.url).await;
        let row = c.query_one("SELECT principal FROM t_crud.sessions WHERE id = 'b'", &[]).await.unwrap();
        assert_eq!(row.get::<_, Option<Vec<u8>>>(0), Some(vec![9; 32]), "the principal column");
        let row = c.query_one("SELECT principal FROM t_crud.sessions WHERE id = 'a'", &[]).await.unwrap();
        assert_eq!(row.get::<_, Option<Vec<u8>>>(0), None);

        s.remove("a").await.unwrap();
        s.remove("a").await.unwrap();
        s.remove("never-saved").await.unwrap();
        assert!(s.load("a").await.unwrap().is_none());
        s.save("a", b"late").await.unwrap();
        assert!(s.load("a").await.unwrap().is_none(), "a removed session stays removed");
        assert_eq!(s.load("b").await.unwrap(), Some(record_with_principal(9)), "others untouched");
    })
    .await;
}

#[tokio::test]
async fn concurrent_saves_of_one_session_lose_no_update() {
    let Some(db) = fresh("t_race").await else { return };
    patient("concurrent saves", async {
        // Two stores, as two servers would have.
        let (a, b) = (Arc::new(store(&db.url, "t_race").await), Arc::new(store(&db.url, "t_race").await));
        const N: usize = 50;
        let writer = |s: Arc<PgSessionStore>, tag: &'static str| {
            tokio::spawn(async move {
                for i in 0..N {
                    s.save("s", format!("{tag}{i}").as_bytes()).await.expect("save");
                }
            })
        };
        let (x, y) = tokio::join!(writer(Arc::clone(&a), "a"), writer(Arc::clone(&b), "b"));
        x.unwrap();
        y.unwrap();
        let (record, version) = a.load_versioned("s").await.unwrap().expect("saved");
        assert_eq!(version, 2 * N as i64, "every acknowledged save counted once");
        let last = String::from_utf8(record).unwrap();
        assert!(last == format!("a{}", N - 1) || last == format!("b{}", N - 1), "the last committed: {last}");

        // Read-modify-write with compare-and-set: two tasks each add N to a counter.
        assert_eq!(a.save_if("c", b"0", None).await.unwrap(), Some(1));
        assert_eq!(b.save_if("c", b"0", None).await.unwrap(), None, "created once");
        let adder = |s: Arc<PgSessionStore>| {
            tokio::spawn(async move {
                let mut conflicts = 0;
                for _ in 0..N {
                    loop {
                        let (rec, v) = s.load_versioned("c").await.unwrap().expect("counter");
                        let n: u64 = std::str::from_utf8(&rec).unwrap().parse().unwrap();
                        match s.save_if("c", (n + 1).to_string().as_bytes(), Some(v)).await.unwrap() {
                            Some(_) => break,
                            None => conflicts += 1,
                        }
                    }
                }
                conflicts
            })
        };
        let (x, y) = tokio::join!(adder(Arc::clone(&a)), adder(Arc::clone(&b)));
        let conflicts = x.unwrap() + y.unwrap();
        let (rec, v) = a.load_versioned("c").await.unwrap().unwrap();
        assert_eq!(rec, (2 * N).to_string().into_bytes(), "no increment lost ({conflicts} retried)");
        assert_eq!(v, 1 + 2 * N as i64);
        assert_eq!(a.save_if("c", b"stale", Some(1)).await.unwrap(), None, "a stale version is refused");
    })
    .await;
}

#[tokio::test]
async fn expired_records_are_not_found_and_cleaned_up_in_bounded_rounds() {
    let Some(db) = fresh("t_expiry").await else { return };
    patient("expiry", async {
        let s = config(&db.url, "t_expiry")
            .ttl(Duration::from_millis(300))
            .cleanup_batch(2)
            .build()
            .await
            .unwrap();
        let long = store(&db.url, "t_expiry").await; // the default ttl, 30 minutes
        for i in 0..5 {
            s.save(&format!("short{i}"), b"x").await.unwrap();
        }
        long.save("long", b"y").await.unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(s.load("short0").await.unwrap().is_none(), "expired");
        let c = connect(&db.url).await;
        let rows = async || -> i64 {
            c.query_one("SELECT count(*) FROM t_expiry.sessions", &[]).await.unwrap().get(0)
        };
        assert_eq!(rows().await, 6, "still there until cleaned up");
        assert_eq!(s.cleanup().await.unwrap(), 2, "at most the batch per round");
        assert_eq!(s.cleanup().await.unwrap(), 2);
        assert_eq!(s.cleanup().await.unwrap(), 1);
        assert_eq!(s.cleanup().await.unwrap(), 0);
        assert_eq!(rows().await, 1);
        assert_eq!(s.load("long").await.unwrap().as_deref(), Some(&b"y"[..]));

        // An expired record is saved afresh.
        s.save("again", b"1").await.unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(
            s.save_if("again", b"2", None).await.unwrap(),
            Some(2),
            "an expired record may be replaced"
        );

        // The cleanup task does the same on its own.
        let auto = config(&db.url, "t_expiry")
            .cleanup_every(Some(Duration::from_millis(100)))
            .build()
            .await
            .unwrap();
        s.save("gone", b"z").await.unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        let deadline = Instant::now() + NO_HANG;
        while rows().await > 1 {
            assert!(Instant::now() < deadline, "the cleanup task deletes expired rows");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        drop(auto);

        // A server's idle expiry deletes a record no server used within the grace only.
        let g = config(&db.url, "t_expiry").expire_grace(Duration::from_millis(300)).build().await.unwrap();
        g.save("idle", b"i").await.unwrap();
        g.expired("idle").await.unwrap();
        assert!(g.load("idle").await.unwrap().is_some(), "used within the grace: kept");
        tokio::time::sleep(Duration::from_millis(600)).await;
        g.expired("idle").await.unwrap();
        assert!(g.load("idle").await.unwrap().is_none(), "idle everywhere: deleted");
        g.save("idle", b"back").await.unwrap();
        assert!(g.load("idle").await.unwrap().is_some(), "an expired session is not a removed one");
    })
    .await;
}

#[tokio::test]
async fn the_schema_is_created_from_nothing_rerun_and_created_by_several_stores_at_once() {
    let Some(db) = fresh("t_schema").await else { return };
    patient("migrations", async {
        let c = connect(&db.url).await;
        let versions = async |schema: &str| -> Vec<i32> {
            c.query(&format!("SELECT version FROM {schema}.schema_version ORDER BY version"), &[])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect()
        };
        let s = store(&db.url, "t_schema").await;
        s.save("a", b"1").await.unwrap();
        assert_eq!(versions("t_schema").await, [1, 2, 3, 4]);
        drop(s);
        let s = store(&db.url, "t_schema").await;
        assert_eq!(versions("t_schema").await, [1, 2, 3, 4], "a rerun changes nothing");
        assert_eq!(s.load("a").await.unwrap().as_deref(), Some(&b"1"[..]), "and keeps the records");

        // Four stores starting at once on an empty schema.
        c.batch_execute("DROP SCHEMA IF EXISTS t_schema_race CASCADE").await.unwrap();
        let starts = (0..4).map(|_| {
            let url = db.url.clone();
            tokio::spawn(async move { config(&url, "t_schema_race").build().await.map(|_| ()) })
        });
        for s in starts.collect::<Vec<_>>() {
            s.await.unwrap().expect("every store starts");
        }
        assert_eq!(versions("t_schema_race").await, [1, 2, 3, 4]);

        // Namespaces are apart.
        let other = store(&db.url, "t_schema_race").await;
        assert!(other.load("a").await.unwrap().is_none(), "another schema, other sessions");

        // A schema newer than this store is refused, not guessed at.
        c.batch_execute("INSERT INTO t_schema_race.schema_version (version) VALUES (99)").await.unwrap();
        let e = config(&db.url, "t_schema_race").build().await.expect_err("newer schema");
        assert!(e.to_string().contains("newer"), "{e}");
        c.batch_execute("DROP SCHEMA t_schema_race CASCADE").await.unwrap();

        for bad in ["", "Mcp", "a;drop", "pg_x", "1a"] {
            let e = config(&db.url, bad).build().await.expect_err("an invalid schema name");
            assert!(e.to_string().contains("schema name"), "{e}");
        }
    })
    .await;
}

/// Runs `op` until it succeeds; panics if it has not within [`NO_HANG`].
async fn eventually<T, E: std::fmt::Debug, F: Future<Output = Result<T, E>>>(
    what: &str,
    mut op: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + NO_HANG;
    loop {
        match op().await {
            Ok(t) => return t,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{what}: still failing after {NO_HANG:?}: {e:?}"),
        }
    }
}

#[tokio::test]
async fn a_database_killed_mid_session_is_503_fast_then_the_same_store_recovers() {
    if !pg_support::available() {
        return;
    }
    let pg = PgServer::start();
    patient("database killed", async {
        let store = Arc::new(store(&pg.url(), "mcp").await);
        let (a, b) = (node(Arc::clone(&store)).await, node(Arc::clone(&store)).await);
        let id = open(a).await;
        assert_eq!(ping(b, &id).await.0, 200, "b loads the session from PostgreSQL");

        pg.kill();
        let t = Instant::now();
        assert!(store.load(&id).await.is_err(), "the store fails");
        assert!(store.save(&id, b"x").await.is_err());
        assert!(store.remove(&id).await.is_err());
        assert!(t.elapsed() < NO_HANG, "fast: {:?}", t.elapsed());
        let t = Instant::now();
        let mut c = Conn::open(a).await;
        c.send(&legacy(a, None, INITIALIZE)).await;
        let r = c.response().await;
        assert_eq!((r.status, r.header("retry-after")), (503, Some("1")), "{r:?}");
        assert!(r.header("mcp-session-id").is_none(), "no session the store lacks");
        let other = node(Arc::clone(&store)).await;
        assert_eq!(ping(other, &id).await, (503, Some("1".to_owned())), "a node without the session");
        assert!(t.elapsed() < NO_HANG, "503s without a hang: {:?}", t.elapsed());

        pg.up();
        // The connections the crash broke are replaced: the same store, not rebuilt.
        eventually("the store after the restart", || store.load(&id)).await.expect("the session survived");
        let third = node(Arc::clone(&store)).await;
        assert_eq!(ping(third, &id).await.0, 200, "served from the store again");
        let fresh = open(a).await;
        assert!(store.load(&fresh).await.unwrap().is_some(), "new sessions stored again");
    })
    .await;
}

#[tokio::test]
async fn a_database_killed_while_a_request_waits_on_it_is_503_then_the_same_store_recovers() {
    if !pg_support::available() {
        return;
    }
    let pg = PgServer::start();
    patient("database killed mid-request", async {
        let store = Arc::new(store(&pg.url(), "mcp").await);
        let a = node(Arc::clone(&store)).await;
        let id = open(a).await;
        // Node b does not hold the session: its request waits on a load from PostgreSQL.
        let b = node(Arc::clone(&store)).await;
        // Frozen, the database takes the load's statement and answers nothing; then every
        // one of its processes is killed (SIGKILL reaches frozen processes), as a crashed
        // host would be. The request is sent while the database is frozen, so its load is
        // stuck on the database when the kill comes, or starts after it: both are a crash
        // under a request in flight, and both must end in a 503, never a hang.
        pg.signal("STOP");
        let t = Instant::now();
        let mut c = Conn::open(b).await;
        c.send(&legacy(b, Some(&id), PING)).await;
        pg.crash();
        let r = c.response().await;
        assert_eq!((r.status, r.header("retry-after")), (503, Some("1")), "{r:?}");
        assert!(t.elapsed() < NO_HANG, "503 without a hang: {:?}", t.elapsed());

        pg.up();
        // The connections the crash broke are replaced: the same store, not rebuilt.
        eventually("the store after the crash", || store.load(&id)).await.expect("the session survived");
        assert_eq!(ping(b, &id).await.0, 200, "the node that got the 503 serves the session now");
    })
    .await;
}

#[tokio::test]
async fn a_stalled_database_fails_operations_within_the_bound_then_serves_again() {
    if !pg_support::available() {
        return;
    }
    let pg = PgServer::start();
    patient("database stalled", async {
        let store = Arc::new(
            config(&pg.url(), "mcp")
                .operation_timeout(Duration::from_secs(1))
                .connect_timeout(Duration::from_millis(500))
                .build()
                .await
                .unwrap(),
        );
        store.save("a", b"1").await.unwrap();
        let addr = node(Arc::clone(&store)).await;
        pg.signal("STOP");
        let t = Instant::now();
        let (l, s) = tokio::join!(store.load("a"), store.save("b", b"2"));
        assert!(l.is_err() && s.is_err(), "{l:?} {s:?}");
        let mut c = Conn::open(addr).await;
        c.send(&legacy(addr, None, INITIALIZE)).await;
        let r = c.response().await;
        assert_eq!((r.status, r.header("retry-after")), (503, Some("1")), "{r:?}");
        let elapsed = t.elapsed();
        pg.signal("CONT");
        assert!(elapsed < NO_HANG, "bounded: {elapsed:?}");
        let got = eventually("the store once the database answers", || store.load("a")).await;
        assert_eq!(got.as_deref(), Some(&b"1"[..]));
        open(addr).await;
    })
    .await;
}

#[tokio::test]
async fn a_row_locked_elsewhere_fails_within_the_lock_and_statement_timeouts() {
    let Some(db) = fresh("t_locks").await else { return };
    patient("timeouts", async {
        let s = config(&db.url, "t_locks").lock_timeout(Duration::from_secs(1)).build().await.unwrap();
        s.save("a", b"1").await.unwrap();
        // Another connection holds the row.
        let mut holder = connect(&db.url).await;
        let tx = holder.transaction().await.unwrap();
        tx.execute("SELECT 1 FROM t_locks.sessions WHERE id = 'a' FOR UPDATE", &[]).await.unwrap();

        let t = Instant::now();
        let e = s.save("a", b"2").await.expect_err("the row is locked");
        assert!(t.elapsed() < NO_HANG, "lock_timeout bounds it: {:?}", t.elapsed());
        assert!(e.to_string().contains("lock timeout"), "{e}");

        // With a longer lock timeout, the statement timeout cuts the wait.
        let st = config(&db.url, "t_locks")
            .lock_timeout(Duration::from_secs(60))
            .statement_timeout(Duration::from_secs(1))
            .build()
            .await
            .unwrap();
        let t = Instant::now();
        let e = st.load("a").await.expect_err("the row is locked");
        assert!(t.elapsed() < NO_HANG, "statement_timeout bounds it: {:?}", t.elapsed());
        assert!(e.to_string().contains("statement timeout"), "{e}");

        // And with both long, the operation timeout does (the statement is cancelled on
        // the server as its operation ends: it does not commit later, below).
        let op = config(&db.url, "t_locks")
            .lock_timeout(Duration::from_secs(60))
            .statement_timeout(Duration::from_secs(60))
            .operation_timeout(Duration::from_secs(1))
            .pool_size(1)
            .pool_wait(Duration::from_millis(200))
            .build()
            .await
            .unwrap();
        let t = Instant::now();
        let (e1, e2) = tokio::join!(op.save("a", b"3"), async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            op.load("other").await
        });
        let e1 = e1.unwrap_err().to_string();
        assert!(e1.contains("statement timeout") || e1.contains("no answer within"), "{e1}");
        assert!(e2.unwrap_err().to_string().contains("no connection"), "the pool wait is bounded too");
        assert!(t.elapsed() < NO_HANG, "{:?}", t.elapsed());

        tx.rollback().await.unwrap();
        s.save("a", b"4").await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(st.load("a").await.unwrap().as_deref(), Some(&b"4"[..]), "free again, the cut write gone");
        eventually("the single connection after its cut operation", || op.load("a")).await;
    })
    .await;
}
