//! Two `HttpServer`s, each with its own `PgSessionStore` on one database and schema (two
//! nodes), against a real PostgreSQL (`pg_support`): what one node does reaches the other
//! through the store's notices (`LISTEN/NOTIFY`), which the server hands to its engine.
//!
//! - A session changed on one node: the other drops its idle copy and loads the new
//!   record at the next request.
//! - A session deleted on one node: its standalone stream on the other closes (the other
//!   node serving through the tower service, which shares the server's handling).
//! - Notices missed (the listening connection cut by the database): a copy in use on the
//!   other node is checked against the store at its next request.
//!
//! What the other node did is observed through a counting store (its loads), never by
//! timing: a wait polls for the outcome within a generous bound.

#![cfg(all(feature = "postgres", feature = "tower"))]

mod http_support;
mod pg_support;
mod store_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_support::{Conn, patient};
use mcp_io_tokio::PgSessionStore;
use pg_support::{config, connect, fresh};
use store_support::{Counting, delete, get_stream, legacy, node, open, ping};
use tokio::io::AsyncReadExt;

/// The bound on waiting for another node's change to arrive (nothing here should take a
/// fraction of it).
const WITHIN: Duration = Duration::from_secs(15);

/// A node: a server with a store of its own on `schema` (listening for the other nodes'
/// notices from its start), counted.
async fn pg_node(url: &str, schema: &str) -> (SocketAddr, Arc<Counting<PgSessionStore>>) {
    // Checks of the listening connection far apart: the last statement on it is its LISTEN.
    let store =
        config(url, schema).notice_check_every(Duration::from_secs(3600)).build().await.expect("store");
    let store = Counting::new(store);
    (node(Arc::clone(&store)).await, store)
}

/// A node serving through the tower service (mounted in axum), with a store as
/// [`pg_node`]'s.
async fn tower_node(url: &str, schema: &str) -> (SocketAddr, Arc<Counting<PgSessionStore>>) {
    use mcp_engine::Config;
    use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
    let store =
        config(url, schema).notice_check_every(Duration::from_secs(3600)).build().await.expect("store");
    let store = Counting::new(store);
    let mut cfg = Config::new("io-tokio-store-test", "0.0.1");
    cfg.secret_key([7; 32]).logging(true);
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let engine = HttpEngine::new(cfg, http, http_support::catalog());
    let server = mcp_io_tokio::HttpServer::new(engine, http_support::Probe::new(), mcp_io_tokio::AllowAll)
        .session_store(Arc::clone(&store));
    let app = axum::Router::new().route_service("/mcp", server.into_service());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(axum::serve(listener, app).into_future());
    (addr, store)
}

/// Polls `done` (each poll may send a request) until it holds, within [`WITHIN`].
async fn eventually<F: AsyncFnMut() -> bool>(what: &str, mut done: F) {
    let start = tokio::time::Instant::now();
    loop {
        if done().await {
            return;
        }
        assert!(start.elapsed() < WITHIN, "not within {WITHIN:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until both nodes listen: a change made on `a` is heard on `b` (`b` loads the
/// session again), then the other way round.
async fn both_listening(
    a: (SocketAddr, &Counting<PgSessionStore>),
    b: (SocketAddr, &Counting<PgSessionStore>),
) {
    for (from, to) in [(a, b), (b, a)] {
        let id = open(from.0).await;
        assert_eq!(ping(to.0, &id).await.0, 200);
        let loads = to.1.counts().0;
        eventually("a change heard on the other node", async || {
            set_level(from.0, &id).await;
            assert_eq!(ping(to.0, &id).await.0, 200);
            to.1.counts().0 > loads
        })
        .await;
    }
}

/// `logging/setLevel` in session `id` (a change of the session's state: saved).
async fn set_level(addr: SocketAddr, id: &str) {
    let mut c = Conn::open(addr).await;
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"info"}}"#;
    c.send(&legacy(addr, Some(id), body)).await;
    let r = c.response().await;
    assert_eq!(r.status, 200, "{r:?}");
}

/// Opens the standalone stream of `id` on `addr`; returns the connection, its head read.
async fn stream(addr: SocketAddr, id: &str) -> Conn {
    let mut c = Conn::open(addr).await;
    c.send(&get_stream(addr, id)).await;
    let r = c.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_changed_on_one_node_is_loaded_again_on_the_other() {
    let Some(db) = fresh("t_f_changed").await else { return };
    patient("two nodes", async {
        let (a, sa) = pg_node(&db.url, "t_f_changed").await;
        let (b, sb) = pg_node(&db.url, "t_f_changed").await;
        both_listening((a, &sa), (b, &sb)).await;

        let id = open(a).await;
        assert_eq!(ping(b, &id).await.0, 200);
        let loads = sb.counts().0;
        for _ in 0..3 {
            assert_eq!(ping(b, &id).await.0, 200);
        }
        assert_eq!(sb.counts().0, loads, "held in memory: no load");
        set_level(a, &id).await;
        eventually("node B drops its copy and loads the new record", async || {
            assert_eq!(ping(b, &id).await.0, 200);
            sb.counts().0 == loads + 1
        })
        .await;
        for _ in 0..3 {
            assert_eq!(ping(b, &id).await.0, 200);
        }
        assert_eq!(sb.counts().0, loads + 1, "loaded once, then held again");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_deleted_on_one_node_closes_its_stream_on_the_other() {
    let Some(db) = fresh("t_f_ended").await else { return };
    patient("two nodes", async {
        let (a, sa) = pg_node(&db.url, "t_f_ended").await;
        let (b, sb) = tower_node(&db.url, "t_f_ended").await;
        both_listening((a, &sa), (b, &sb)).await;

        let id = open(a).await;
        let mut s = stream(b, &id).await;
        let mut c = Conn::open(a).await;
        c.send(&delete(a, &id)).await;
        assert_eq!(c.response().await.status, 200);
        // The stream on node B ends: its last chunk comes.
        let mut rest = Vec::new();
        let mut buf = [0u8; 512];
        while !rest.ends_with(b"0\r\n\r\n") {
            let n = tokio::time::timeout(WITHIN, s.reader.read(&mut buf))
                .await
                .expect("the stream on the other node ends")
                .expect("read");
            assert!(n > 0, "closed before its last chunk: {:?}", String::from_utf8_lossy(&rest));
            rest.extend_from_slice(&buf[..n]);
        }
        assert_eq!(ping(b, &id).await.0, 404, "gone on node B too");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_missed_notices_a_copy_in_use_is_checked_against_the_store() {
    let schema = "t_f_missed";
    let Some(db) = fresh(schema).await else { return };
    patient("two nodes", async {
        let (a, sa) = pg_node(&db.url, schema).await;
        let (b, sb) = pg_node(&db.url, schema).await;
        both_listening((a, &sa), (b, &sb)).await;

        let id = open(a).await;
        // Node B holds the session in use: its standalone stream is open there.
        let _s = stream(b, &id).await;
        let loads = sb.counts().0;
        set_level(a, &id).await;
        // A change heard while the copy is in use leaves it: B goes on serving it.
        for _ in 0..3 {
            assert_eq!(ping(b, &id).await.0, 200);
        }
        assert_eq!(sb.counts().0, loads, "in use: kept, no load");

        // The database cuts both nodes' listening connections: they listen again and
        // report what they may have missed.
        let admin = connect(&db.url).await;
        let cut = admin
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1",
                &[&format!("LISTEN \"{schema}.sessions\"")],
            )
            .await
            .expect("terminate the listeners");
        assert_eq!(cut.len(), 2, "both nodes' listening connections");
        eventually("node B checks its copy against the store", async || {
            assert_eq!(ping(b, &id).await.0, 200);
            sb.counts().0 > loads
        })
        .await;
        let after = sb.counts().0;
        for _ in 0..3 {
            assert_eq!(ping(b, &id).await.0, 200);
        }
        assert_eq!(sb.counts().0, after, "checked once, then served from memory");
    })
    .await;
}
