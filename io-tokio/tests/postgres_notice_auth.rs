//! The nodes' notices authenticated, against a real PostgreSQL (`pg_support`): any role
//! that can connect can `NOTIFY` on the schema's channels, so a node takes only the
//! notices a node sharing its secret key signed. Two nodes (`HttpServer` and
//! `PgSessionStore`) on one schema; node B has a session subscribed to a resource, its
//! standalone stream open. Plain `NOTIFY`s naming node A (the payloads earlier versions
//! took: "lists changed", "resource updated", "session ended", an unknown kind that meant
//! "notices missed", and a signed-looking one with a made-up MAC) change nothing on node
//! B: its stream carries no list change and no update, and stays open; node A's own
//! notice, a resource update sent after them, still arrives, alone. The ignored ones are
//! counted. "Nothing happened" is checked by order (NOTIFYs are delivered in commit
//! order), never by waiting.

#![cfg(feature = "postgres")]

mod http_support;
mod pg_support;
mod store_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_support::{Conn, patient};
use mcp_io_tokio::store::PgSessionStore;
use pg_support::{config, connect, fresh};
use store_support::{count, legacy, open, ping, read_until, stream};

/// The uri the nodes' catalog offers.
const URI: &str = "test://watched";

/// A node announcing list changes and resource updates to the others, with its publisher
/// and its store.
async fn node(
    url: &str,
    schema: &str,
) -> (SocketAddr, mcp_io_tokio::handler::Publisher, Arc<PgSessionStore>) {
    use mcp_engine::Config;
    use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
    let store =
        config(url, schema).notice_check_every(Duration::from_secs(3600)).build().await.expect("store");
    let store = Arc::new(store);
    let mut cfg = Config::new("io-tokio-store-test", "0.0.1");
    cfg.secret_key(pg_support::SECRET).logging(true).list_changed(true).resource_subscriptions(true);
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let catalog = mcp_engine::Catalog::builder()
        .tool(mcp_engine::Tool::new("echo"))
        .resource(mcp_engine::Resource::new(URI, "watched"))
        .build()
        .expect("a catalog");
    let engine = HttpEngine::new(cfg, http, catalog);
    let server =
        mcp_io_tokio::HttpServer::new(engine, http_support::Probe::new(), mcp_io_tokio::http::AllowAll)
            .session_store(Arc::clone(&store));
    let publisher = server.publisher();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(server.serve(listener));
    (addr, publisher, store)
}

/// A 2025-11-25 session on `addr` subscribed to [`URI`]: its id, and its standalone
/// stream.
async fn subscribed(addr: SocketAddr) -> (String, Conn) {
    let id = open(addr).await;
    let mut c = Conn::open(addr).await;
    let sub =
        format!(r#"{{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{{"uri":"{URI}"}}}}"#);
    c.send(&legacy(addr, Some(&id), &sub)).await;
    assert_eq!(c.response().await.status, 200);
    let s = stream(addr, &id).await;
    (id, s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_notify_changes_nothing_and_a_nodes_own_notice_still_works() {
    let schema = "t_n_auth";
    let Some(db) = fresh(schema).await else { return };
    patient("two nodes and a stranger", async {
        let (_a, pa, sa) = node(&db.url, schema).await;
        let (b, _pb, sb) = node(&db.url, schema).await;
        // B answers requests once its store listens (`HttpServer::serve` waits for it).
        let (id, mut s) = subscribed(b).await;
        let before = sb.ignored_notices();

        // A stranger on a connection of its own, naming node A.
        let node_a = sa.node_id();
        let (sessions, catalog) = (format!("{schema}.sessions"), format!("{schema}.catalog"));
        let made_up = "0".repeat(32);
        let forged = [
            (&catalog, format!("l {node_a} trp")),
            (&catalog, format!("u {node_a} {URI}")),
            (&catalog, format!("L {node_a} 1800000000000 1 {made_up} trp")),
            (&sessions, format!("z {node_a} x")),
            (&sessions, format!("e {node_a} {id}")),
            (&sessions, format!("E {node_a} 1800000000000 2 {made_up} {id}")),
        ];
        let stranger = connect(&db.url).await;
        for (channel, payload) in &forged {
            stranger.execute("SELECT pg_notify($1, $2)", &[channel, payload]).await.expect("NOTIFY");
        }
        // Then node A's own: a resource update, heard by B after the stranger's.
        assert!(pa.resource_updated(format!("{URI}/part")));
        let t = read_until(&mut s, |t| t.contains("notifications/resources/updated")).await;
        assert_eq!(count(&t, "notifications/resources/updated"), 1, "node A's update alone: {t}");
        assert!(t.contains(&format!("{URI}/part")), "{t}");
        assert!(!t.contains("list_changed"), "no list changed: {t}");
        // The session was not ended: it is served, and its stream is still open.
        assert_eq!(ping(b, &id).await.0, 200);
        pa.resource_updated(format!("{URI}/again"));
        let t = read_until(&mut s, |t| t.contains(&format!("{URI}/again"))).await;
        assert_eq!(count(&t, "notifications/resources/updated"), 1, "{t}");

        let after = sb.ignored_notices();
        assert_eq!(after.unauthenticated - before.unauthenticated, forged.len() as u64, "{after:?}");
        assert_eq!(after.replayed, before.replayed);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_without_the_secret_key_does_not_build() {
    let Some(db) = fresh("t_n_nokey").await else { return };
    let e = mcp_io_tokio::store::PgStoreConfig::new(&db.url)
        .expect("url")
        .schema("t_n_nokey")
        .build()
        .await
        .unwrap_err();
    assert!(e.to_string().contains("PgStoreConfig::secret_key"), "{e}");
}
