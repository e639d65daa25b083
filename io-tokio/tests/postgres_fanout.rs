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
//! - A list change (a catalog replaced through the `Publisher`) and a resource update made
//!   on one node reach the other's standalone `GET` streams and `subscriptions/listen`
//!   streams, every one (`PostgreSQL`'s catalog channel); a node whose listening
//!   connection was cut announces every list changed to its streams.
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
use mcp_io_tokio::store::PgSessionStore;
use pg_support::{config, connect, fresh};
use store_support::{
    Counting, count, delete, heard_so_far, legacy, listen, node, open, ping, read_until, stream,
};
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
    let server =
        mcp_io_tokio::HttpServer::new(engine, http_support::Probe::new(), mcp_io_tokio::http::AllowAll)
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

/// Node A (`pg_node`) and node B (`pg_node`, or `tower_node` when `tower`) on `schema`,
/// each hearing the other.
async fn pair(
    url: &str,
    schema: &str,
    tower: bool,
) -> ((SocketAddr, Arc<Counting<PgSessionStore>>), (SocketAddr, Arc<Counting<PgSessionStore>>)) {
    let a = pg_node(url, schema).await;
    let b = if tower { tower_node(url, schema).await } else { pg_node(url, schema).await };
    both_listening((a.0, &a.1), (b.0, &b.1)).await;
    (a, b)
}

/// The database ends the listening connections of both nodes on `schema` (a network
/// failure, as the nodes see it).
async fn cut_listeners(url: &str, schema: &str) {
    let admin = connect(url).await;
    let cut = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE $1",
            &[&format!("LISTEN \"{schema}.sessions\"%")],
        )
        .await
        .expect("terminate the listeners");
    assert_eq!(cut.len(), 2, "both nodes' listening connections");
}

/// `logging/setLevel` in session `id` (a change of the session's state: saved).
async fn set_level(addr: SocketAddr, id: &str) {
    let mut c = Conn::open(addr).await;
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"info"}}"#;
    c.send(&legacy(addr, Some(id), body)).await;
    let r = c.response().await;
    assert_eq!(r.status, 200, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_changed_on_one_node_is_loaded_again_on_the_other() {
    let Some(db) = fresh("t_f_changed").await else { return };
    patient("two nodes", async {
        let ((a, _), (b, sb)) = pair(&db.url, "t_f_changed", false).await;

        let id = open(a).await;
        // The notices of the session's creation are behind us.
        heard_so_far(a, b).await;
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
        let ((a, _), (b, _)) = pair(&db.url, "t_f_ended", true).await;

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
        let ((a, _), (b, sb)) = pair(&db.url, schema, false).await;

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
        cut_listeners(&db.url, schema).await;
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

/// The uri the fan-out nodes' catalog offers.
const URI: &str = "test://watched";

fn fanout_catalog(extra: bool) -> mcp_engine::Catalog {
    fanout_catalog_with(extra, false)
}

/// [`fanout_catalog`], with another resource when `resource`.
fn fanout_catalog_with(extra: bool, resource: bool) -> mcp_engine::Catalog {
    let mut b = mcp_engine::Catalog::builder()
        .tool(mcp_engine::Tool::new("echo"))
        .resource(mcp_engine::Resource::new(URI, "watched"));
    if extra {
        b = b.tool(mcp_engine::Tool::new("added"));
    }
    if resource {
        b = b.resource(mcp_engine::Resource::new("test://other", "other"));
    }
    b.build().expect("a catalog")
}

/// A node whose engine announces list changes and resource updates (to the other nodes
/// too, unless `announce` is off), with its publisher and its (counted) store.
async fn fanout_node(
    url: &str,
    schema: &str,
    announce: bool,
) -> (SocketAddr, mcp_io_tokio::handler::Publisher, Arc<Counting<PgSessionStore>>) {
    use mcp_engine::Config;
    use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
    let store =
        config(url, schema).notice_check_every(Duration::from_secs(3600)).build().await.expect("store");
    let store = Counting::new(store);
    let mut cfg = Config::new("io-tokio-store-test", "0.0.1");
    cfg.secret_key([7; 32]).logging(true).list_changed(true).resource_subscriptions(true);
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let engine = HttpEngine::new(cfg, http, fanout_catalog(false));
    let server =
        mcp_io_tokio::HttpServer::new(engine, http_support::Probe::new(), mcp_io_tokio::http::AllowAll)
            .session_store(Arc::clone(&store))
            .announce_changes(announce);
    let publisher = server.publisher();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(server.serve(listener));
    (addr, publisher, store)
}

/// A 2025-11-25 session subscribed to [`URI`], with its standalone stream open.
async fn session_stream(addr: SocketAddr) -> Conn {
    let id = open(addr).await;
    let mut c = Conn::open(addr).await;
    let sub =
        format!(r#"{{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{{"uri":"{URI}"}}}}"#);
    c.send(&legacy(addr, Some(&id), &sub)).await;
    assert_eq!(c.response().await.status, 200);
    stream(addr, &id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_and_resource_updates_on_one_node_reach_every_stream_of_the_other() {
    let schema = "t_f_news";
    let Some(db) = fresh(schema).await else { return };
    patient("two nodes", async {
        let (a, pa, sa) = fanout_node(&db.url, schema, true).await;
        let (b, _pb, sb) = fanout_node(&db.url, schema, true).await;
        both_listening((a, &sa), (b, &sb)).await;
        // Node B: two listen streams and two session streams; node A one of each.
        let mut streams =
            [listen(b, URI).await, listen(b, URI).await, session_stream(b).await, session_stream(b).await];
        let mut own = [listen(a, URI).await, session_stream(a).await];

        // On node A: a list change, a resource update (of a sub-resource of the one
        // watched), another list change.
        pa.replace_catalog(fanout_catalog(true)).await.expect("replaced");
        assert!(pa.resource_updated(format!("{URI}/part")));
        pa.replace_catalog(fanout_catalog(false)).await.expect("replaced");
        let mut told = 0;
        for (i, s) in streams.iter_mut().chain(own.iter_mut()).enumerate() {
            let t = read_until(s, |t| {
                count(t, "notifications/tools/list_changed") >= 2
                    && t.contains("notifications/resources/updated")
            })
            .await;
            assert_eq!(count(&t, "notifications/tools/list_changed"), 2, "stream {i}: {t}");
            assert_eq!(count(&t, "notifications/resources/updated"), 1, "stream {i}: {t}");
            assert!(t.contains(&format!("{URI}/part")), "stream {i}: {t}");
            told += 1;
        }
        assert_eq!(told, 6, "every stream, on both nodes");

        // Node B's listening connection is cut: once it listens again it cannot know
        // what it missed, so it tells every stream to list again.
        cut_listeners(&db.url, schema).await;
        for (i, s) in streams.iter_mut().enumerate() {
            let t = read_until(s, |t| t.contains("notifications/tools/list_changed")).await;
            if i >= 2 {
                // A session stream hears of every list its catalog has.
                let t = if t.contains("resources/list_changed") {
                    t
                } else {
                    read_until(s, |t| t.contains("notifications/resources/list_changed")).await
                };
                assert!(!t.contains("prompts/list_changed"), "no prompts here: {t}");
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_does_not_announce_changes_tells_only_its_own_streams() {
    let schema = "t_f_quiet";
    let Some(db) = fresh(schema).await else { return };
    patient("three nodes", async {
        let (a, pa, _) = fanout_node(&db.url, schema, false).await;
        let (b, _, _) = fanout_node(&db.url, schema, true).await;
        let (_, pc, _) = fanout_node(&db.url, schema, true).await;
        let mut own = session_stream(a).await;
        let mut other = session_stream(b).await;
        // Node A (announcements off) changes its tool list; node C then its resource
        // list. C's announcement is made after A's replacement resolved, so had A
        // announced, node B would hear of A's change first.
        pa.replace_catalog(fanout_catalog(true)).await.expect("replaced");
        pc.replace_catalog(fanout_catalog_with(false, true)).await.expect("replaced");
        let t = read_until(&mut other, |t| t.contains("notifications/resources/list_changed")).await;
        assert!(!t.contains("notifications/tools/list_changed"), "node A's change stayed on node A: {t}");
        // Its own streams are told, and it still hears the others.
        let t = read_until(&mut own, |t| {
            t.contains("notifications/tools/list_changed")
                && t.contains("notifications/resources/list_changed")
        })
        .await;
        assert_eq!(count(&t, "list_changed"), 2, "{t}");
    })
    .await;
}
