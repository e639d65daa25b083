//! For the session-store tests (`session_store.rs`, `postgres_store.rs`): servers sharing a
//! store and a key over real TCP, and the session-bound requests a client sends them.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_engine::Config;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_io_tokio::{AllowAll, HttpServer, SessionStore};
use tokio::net::TcpListener;

use crate::http_support::{Conn, Probe, catalog};

pub const V: &str = "2025-11-25";
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
pub const PING: &str = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;

/// A server sharing `store` and the key every node of a test shares.
pub async fn node<S: SessionStore>(store: Arc<S>) -> SocketAddr {
    let mut cfg = Config::new("io-tokio-store-test", "0.0.1");
    cfg.secret_key([7; 32]);
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server =
        HttpServer::new(HttpEngine::new(cfg, http, catalog()), Probe::new(), AllowAll).session_store(store);
    tokio::spawn(server.serve(listener));
    addr
}

/// A session-bound POST (`session` names the session, if any).
pub fn legacy(addr: SocketAddr, session: Option<&str>, body: &str) -> String {
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
        addr.port()
    );
    if let Some(id) = session {
        req.push_str(&format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: {V}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    req
}

/// Opens a session on `addr`; returns its id.
pub async fn open(addr: SocketAddr) -> String {
    let mut c = Conn::open(addr).await;
    c.send(&legacy(addr, None, INITIALIZE)).await;
    let r = c.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    c.send(&legacy(addr, Some(&id), INITIALIZED)).await;
    assert_eq!(c.response().await.status, 202);
    id
}

/// A ping in session `id`: the status and `Retry-After`.
pub async fn ping(addr: SocketAddr, id: &str) -> (u16, Option<String>) {
    let mut c = Conn::open(addr).await;
    c.send(&legacy(addr, Some(id), PING)).await;
    let r = c.response().await;
    (r.status, r.header("retry-after").map(str::to_owned))
}
