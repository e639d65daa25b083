//! Long-lived streams cannot lock out new connections (issue 27), over real TCP: one
//! client (127.0.0.2) holds every connection of a server with a small connection cap with
//! standalone `GET` streams; another client (127.0.0.3) still connects and is served, and
//! the first client's oldest stream ends with its last chunk. Before, the engine refused
//! the second client's connection (the adapter closed it) until one of the streams ended.

mod http_support;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use http_support::{Conn, Probe, catalog, patient};
use mcp_engine::Config;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_io_tokio::HttpServer;
use mcp_io_tokio::http::AllowAll;
use tokio::io::{AsyncReadExt, BufReader};
use tokio::net::{TcpListener, TcpSocket};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// A connection to `server` from the address `from`.
async fn conn_from(from: IpAddr, server: SocketAddr) -> Conn {
    let socket = TcpSocket::new_v4().expect("a socket");
    socket.bind(SocketAddr::new(from, 0)).expect("bind the client's address");
    let stream = patient("connect", socket.connect(server)).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (r, w) = stream.into_split();
    Conn { reader: BufReader::new(r), writer: w, addr: server }
}

/// A `2025-11-25` `POST` (no `Mcp-Method`), in session `session` when given.
fn legacy_post(server: SocketAddr, body: &str, session: Option<&str>) -> String {
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n",
        server.port()
    );
    if let Some(id) = session {
        req.push_str(&format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    req
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Opens a session on `conn`, then its standalone stream there; returns the session id.
async fn session_stream(conn: &mut Conn) -> String {
    let server = conn.addr;
    conn.send(&legacy_post(server, INITIALIZE, None)).await;
    let r = conn.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    conn.send(&legacy_post(server, INITIALIZED, Some(&id))).await;
    assert_eq!(conn.response().await.status, 202);
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {id}\r\n\r\n",
        server.port()
    );
    conn.send(&get).await;
    let head = conn.response().await;
    assert_eq!(head.status, 200, "{head:?}");
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    id
}

#[tokio::test]
async fn streams_of_one_client_holding_every_connection_do_not_lock_another_out() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.max_connections(6);
    let engine = HttpEngine::new(Config::new("stream-shares", "1"), http, catalog());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let server = listener.local_addr().expect("an address");
    tokio::spawn(HttpServer::new(engine, Probe::new(), AllowAll).serve(listener));
    // Client A takes every connection with a standalone stream.
    let mut streams = Vec::new();
    for _ in 0..6 {
        let mut conn = conn_from(A, server).await;
        session_stream(&mut conn).await;
        streams.push(conn);
    }
    // Client B connects and opens a session: served.
    let mut b = conn_from(B, server).await;
    b.send(&legacy_post(server, INITIALIZE, None)).await;
    let r = b.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.header("mcp-session-id").is_some(), "{r:?}");
    // A's oldest stream ended to make room: `retry:`, its last chunk, then the end.
    let mut rest = Vec::new();
    patient("the oldest stream's end", streams[0].reader.read_to_end(&mut rest)).await.expect("read");
    let rest = String::from_utf8(rest).expect("UTF-8");
    assert!(rest.contains("retry: 5000\n"), "{rest}");
    assert!(rest.ends_with("0\r\n\r\n"), "the chunked stream ends: {rest}");
}
