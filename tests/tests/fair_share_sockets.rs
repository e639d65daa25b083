//! Fair shares over real sockets (issue 27): a client at 127.0.0.2 opens sessions far
//! past its share and the table's cap, then a client at 127.0.0.3 (each socket bound to
//! its address before it connects, so the server sees two peers) is still answered
//! `200` for its `initialize`, by the mio and the tokio servers alike.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use mcp_engine::Config;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent};
use mcp_fixture as everything;
use mcp_io_tokio::ToolReply;
use mcp_io_tokio::handler::tool_fn;
use mcp_io_tokio::http::AllowAll;
use mcp_tests::wire::{Response, parse_responses, session_post};
use serde_json::json;

const VERSION: &str = "2025-11-25";
/// The table's cap and a client's share, small so the test is short.
const MAX_SESSIONS: usize = 16;
const SHARE: usize = 4;

fn engine() -> HttpEngine {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.max_sessions(MAX_SESSIONS).max_sessions_per_client(SHARE);
    HttpEngine::new(Config::new("fair-shares", "test"), http, everything::catalog())
}

/// A blocking connection to `server` from `from` (port chosen by the OS).
fn connect_from(from: &str, server: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    let stream = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        socket.connect(server).await.unwrap()
    });
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    // Only a guard against a hang: no assertion depends on time.
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    stream
}

/// Sends `raw` on `s` and reads its one response (JSON, `Content-Length`).
fn exchange(s: &mut TcpStream, raw: &[u8]) -> Response {
    s.write_all(raw).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse::<usize>().unwrap());
            if got.len() >= end + 4 + len {
                let mut r = parse_responses(&got[..end + 4 + len]);
                assert_eq!(r.len(), 1, "{r:?}");
                return r.remove(0);
            }
        }
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
}

fn initialize() -> Vec<u8> {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    session_post(&init, VERSION, None)
}

fn ping(session: &str) -> Vec<u8> {
    session_post(&json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }), VERSION, Some(session))
}

/// The first client opens sessions well past its share and the cap; the second is
/// served, and so is the first's newest session.
fn a_second_client_is_served(server: SocketAddr) {
    let mut first = connect_from("127.0.0.2", server);
    let mut newest = String::new();
    for i in 0..3 * MAX_SESSIONS {
        let r = exchange(&mut first, &initialize());
        assert_eq!(r.status, 200, "initialize {i} from 127.0.0.2: {r:?}");
        newest = r.header("mcp-session-id").unwrap().to_owned();
    }
    let mut second = connect_from("127.0.0.3", server);
    let r = exchange(&mut second, &initialize());
    assert_eq!(r.status, 200, "127.0.0.3's initialize: {r:?}");
    let id = r.header("mcp-session-id").unwrap().to_owned();
    assert_eq!(exchange(&mut second, &ping(&id)).status, 200);
    assert_eq!(exchange(&mut first, &ping(&newest)).status, 200);
}

#[test]
fn the_mio_server_serves_a_second_client_after_the_first_took_its_share() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        mcp_io_mio::serve_http(listener, engine(), |event| {
            if let HttpEvent::Mcp(event) = event {
                everything::respond(event);
            }
            None
        })
    });
    a_second_client_is_served(server);
}

#[test]
fn the_tokio_server_serves_a_second_client_after_the_first_took_its_share() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let server = listener.local_addr().unwrap();
    let handler = Arc::new(tool_fn(|_| async { Ok(ToolReply::text("unused")) }));
    rt.spawn(mcp_io_tokio::serve_http(listener, engine(), handler, AllowAll));
    a_second_client_is_served(server);
    rt.shutdown_background();
}
