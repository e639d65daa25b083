//! `serve_http` over real TCP on 127.0.0.1: keep-alive, pipelining, refusals, cancellation
//! by closing, many connections, the in-flight limit, authorization, deadlines, shutdown.

mod http_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http_support::{
    Conn, PATIENCE, Probe, body, call, call_body, catalog, first_text, patient, post, post_to,
};
use mcp_engine::Config;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, Verdict};
use mcp_io_tokio::handler::tool_fn;
use mcp_io_tokio::http::{AllowAll, AuthorizeInfo};
use mcp_io_tokio::{Authorizer, Handler, HttpServer, ToolCall, ToolReply, serve_http};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

fn config() -> Config {
    Config::new("io-tokio-http-test", "0.0.1")
}

fn open_http() -> HttpConfig {
    HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone)
}

async fn listener() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    (listener, addr)
}

/// Serves `catalog()` with `handler` and default settings; returns the address.
async fn start<H: Handler>(handler: Arc<H>) -> (SocketAddr, JoinHandle<std::io::Result<()>>) {
    start_with(config(), open_http(), handler, AllowAll, |s| s).await
}

async fn start_with<H: Handler, A: Authorizer>(
    cfg: Config,
    http: HttpConfig,
    handler: Arc<H>,
    auth: A,
    tune: impl FnOnce(HttpServer<H, A>) -> HttpServer<H, A>,
) -> (SocketAddr, JoinHandle<std::io::Result<()>>) {
    let (listener, addr) = listener().await;
    let server = tune(HttpServer::new(HttpEngine::new(cfg, http, catalog()), handler, auth));
    (addr, tokio::spawn(server.serve(listener)))
}

#[tokio::test]
async fn discover_and_echo_over_one_keep_alive_connection() {
    let (addr, server) = start(Probe::new()).await;
    let mut conn = Conn::open(addr).await;

    conn.send(&post(addr, "server/discover", None, &body(1, "server/discover", ""))).await;
    let discover = conn.response().await;
    assert_eq!(discover.status, 200, "{discover:?}");
    assert_eq!(discover.header("content-type"), Some("application/json"));
    assert!(!discover.closes());
    let v = discover.json();
    assert_eq!(v["id"], 1);
    assert!(
        v["result"]["supportedVersions"].as_array().is_some_and(|a| a.contains(&json!("2026-07-28"))),
        "{v}"
    );

    for id in 2..5 {
        let r = conn.call(id, "echo", &json!({ "text": format!("hi {id}") })).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert!(!r.closes());
        let v = r.json();
        assert_eq!(v["id"], id);
        assert_eq!(first_text(&v), format!("hi {id}"));
    }

    // A header-mirrored argument.
    let req = post(addr, "tools/call", Some("region"), &call_body(5, "region", &json!({ "region": "eu" })))
        .replacen("\r\n", "\r\nMcp-Param-Region: eu\r\n", 1);
    conn.send(&req).await;
    let r = conn.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_text(&r.json()), "region: eu");
    assert!(!server.is_finished());
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let (addr, _server) = start(Probe::new()).await;
    let mut conn = Conn::open(addr).await;
    let mut burst = String::new();
    burst.push_str(&post(addr, "tools/list", None, &body(1, "tools/list", "")));
    for id in 2..=40 {
        burst.push_str(&call(addr, id, "echo", &json!({ "text": format!("n{id}") })));
    }
    // One write: the server reads them in whatever pieces and answers one at a time.
    conn.send(&burst).await;
    let list = conn.response().await.json();
    assert_eq!(list["id"], 1);
    assert!(list["result"]["tools"].as_array().is_some_and(|t| t.len() == 4), "{list}");
    for id in 2..=40 {
        let r = conn.response().await;
        assert_eq!(r.status, 200);
        let v = r.json();
        assert_eq!(v["id"], id);
        assert_eq!(first_text(&v), format!("n{id}"));
    }
}

#[tokio::test]
async fn a_slow_call_holds_back_the_requests_pipelined_after_it() {
    let probe = Probe::new();
    let (addr, _server) = start(Arc::clone(&probe)).await;
    let mut conn = Conn::open(addr).await;
    let mut burst = call(addr, 1, "busy", &json!({}));
    burst.push_str(&call(addr, 2, "echo", &json!({ "text": "after" })));
    conn.send(&burst).await;
    let first = conn.response().await.json();
    assert_eq!(first["id"], 1);
    assert_eq!(first_text(&first), "done");
    let second = conn.response().await.json();
    assert_eq!(second["id"], 2);
    assert_eq!(first_text(&second), "after");
}

#[tokio::test]
async fn another_method_is_refused_405_and_the_connection_closes() {
    let (addr, _server) = start(Probe::new()).await;
    let mut conn = Conn::open(addr).await;
    conn.send(&format!("PUT /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\n\r\n", addr.port()))
        .await;
    let r = conn.response().await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, POST, DELETE"));
    assert!(r.closes(), "{r:?}");
    assert!(conn.closed_by_server().await, "nothing follows the refusal, and the socket closes");

    // A refusal with a body the server never reads: the client still gets the response.
    let Conn { mut reader, mut writer, .. } = Conn::open(addr).await;
    let big = "x".repeat(200_000);
    let req = post_to(addr, "/elsewhere", "tools/list", None, &big);
    let (r, _) = tokio::join!(patient("a response", http_support::read_response(&mut reader)), async {
        // The server may close before reading it all: a failed write is fine.
        let _ = tokio::io::AsyncWriteExt::write_all(&mut writer, req.as_bytes()).await;
    });
    assert_eq!(r.status, 404);
    assert!(r.closes());
}

#[tokio::test]
async fn closing_the_connection_aborts_the_slow_handler() {
    let probe = Probe::new();
    let (addr, _server) = start(Arc::clone(&probe)).await;
    let mut conn = Conn::open(addr).await;
    conn.send(&call(addr, 1, "slow", &json!({}))).await;
    probe.wait_started(1).await;
    assert_eq!(probe.dropped.load(Ordering::SeqCst), 0);
    drop(conn);
    probe.wait_dropped(1).await;

    // The server goes on.
    let mut conn = Conn::open(addr).await;
    let r = conn.call(2, "echo", &json!({ "text": "still here" })).await;
    assert_eq!(first_text(&r.json()), "still here");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_connections_times_five_requests() {
    let (addr, _server) = start(Probe::new()).await;
    let clients: Vec<_> = (0..20u64)
        .map(|c| {
            tokio::spawn(async move {
                let mut conn = Conn::open(addr).await;
                for i in 0..5u64 {
                    let id = c * 100 + i;
                    let text = format!("conn {c} req {i}");
                    let r = conn.call(id, "echo", &json!({ "text": text })).await;
                    assert_eq!(r.status, 200, "{r:?}");
                    let v = r.json();
                    assert_eq!(v["id"], id);
                    assert_eq!(first_text(&v), text);
                }
            })
        })
        .collect();
    for client in clients {
        patient("a client", client).await.expect("the client succeeds");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_flight_limit_holds_requests_back_instead_of_dropping_them() {
    let probe = Probe::new();
    let mut cfg = config();
    cfg.max_in_flight(2);
    // Every connection is from 127.0.0.1, one client: its share is every slot here (by
    // default half, and a client past its share is refused rather than held back).
    let mut http = open_http();
    http.max_in_flight_per_client(2);
    let (addr, _server) = start_with(cfg, http, Arc::clone(&probe), AllowAll, |s| s.max_in_flight(2)).await;
    let clients: Vec<_> = (0..8u64)
        .map(|c| {
            tokio::spawn(async move {
                let mut conn = Conn::open(addr).await;
                for i in 0..3 {
                    let r = conn.call(c * 10 + i, "busy", &json!({})).await;
                    assert_eq!(r.status, 200, "{r:?}");
                    assert_eq!(first_text(&r.json()), "done");
                }
            })
        })
        .collect();
    for client in clients {
        patient("a client", client).await.expect("the client succeeds");
    }
    let most = probe.max_running.load(Ordering::SeqCst);
    assert!((1..=2).contains(&most), "at most 2 handlers at once, saw {most}");
}

#[tokio::test]
async fn the_authorizer_decides_before_the_body() {
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let auth = |req: &AuthorizeInfo| {
        assert!(req.peer.is_some_and(|p| p.ip().is_loopback()));
        match req.bearer_token() {
            Some("good") => Verdict::Allow,
            Some(_) => Verdict::Forbidden,
            None => Verdict::Unauthenticated,
        }
    };
    let (addr, _server) = start_with(config(), http, Probe::new(), auth, |s| s).await;
    let req = |token: Option<&str>| {
        let r = call(addr, 1, "echo", &json!({ "text": "authorized" }));
        match token {
            Some(t) => r.replacen("\r\n", &format!("\r\nAuthorization: Bearer {t}\r\n"), 1),
            None => r,
        }
    };

    let mut conn = Conn::open(addr).await;
    conn.send(&req(None)).await;
    let r = conn.response().await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    assert!(conn.closed_by_server().await);

    let mut conn = Conn::open(addr).await;
    conn.send(&req(Some("bad"))).await;
    assert_eq!(conn.response().await.status, 403);

    let mut conn = Conn::open(addr).await;
    for _ in 0..2 {
        conn.send(&req(Some("good"))).await;
        let r = conn.response().await;
        assert_eq!(r.status, 200);
        assert_eq!(first_text(&r.json()), "authorized");
    }
}

/// Decides asynchronously, and checks bodies.
struct SlowGate;

impl Authorizer for SlowGate {
    async fn authorize(&self, request: &AuthorizeInfo) -> Verdict {
        tokio::time::sleep(Duration::from_millis(5)).await;
        if request.header("x-key").is_some() { Verdict::Allow } else { Verdict::Unauthenticated }
    }

    async fn authorize_body(&self, _request: &AuthorizeInfo, body: &[u8]) -> Verdict {
        tokio::task::yield_now().await;
        if body.windows(6).any(|w| w == b"secret") { Verdict::Forbidden } else { Verdict::Allow }
    }
}

#[tokio::test]
async fn asynchronous_authorizers_and_body_checks() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    http.authorize_body(true);
    let (addr, _server) = start_with(config(), http, Probe::new(), SlowGate, |s| s).await;
    let with_key =
        |text: &str| call(addr, 1, "echo", &json!({ "text": text })).replacen("\r\n", "\r\nX-Key: 1\r\n", 1);
    let mut conn = Conn::open(addr).await;
    conn.send(&with_key("public")).await;
    let r = conn.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_text(&r.json()), "public");
    // A body refusal keeps the connection.
    conn.send(&with_key("secret")).await;
    let r = conn.response().await;
    assert_eq!(r.status, 403);
    assert!(!r.closes());
    conn.send(&with_key("again")).await;
    assert_eq!(first_text(&conn.response().await.json()), "again");

    let mut conn = Conn::open(addr).await;
    conn.send(&call(addr, 1, "echo", &json!({ "text": "no key" }))).await;
    assert_eq!(conn.response().await.status, 401);
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_answered_408() {
    let mut http = open_http();
    http.body_deadline(Duration::from_millis(100));
    let (addr, _server) = start_with(config(), http, Probe::new(), AllowAll, |s| s).await;
    let mut conn = Conn::open(addr).await;
    let full = call(addr, 1, "echo", &json!({ "text": "late" }));
    // The head and part of the body only.
    conn.send(&full[..full.len() - 5]).await;
    let r = conn.response().await;
    assert_eq!(r.status, 408);
    assert!(r.closes());
    assert!(conn.closed_by_server().await);
}

#[tokio::test]
async fn a_client_that_does_not_read_stops_being_read_and_loses_nothing() {
    let (addr, _server) = start(Probe::new()).await;
    let mut conn = Conn::open(addr).await;
    // Far more than the socket buffers hold, in responses: the server must stop reading
    // while its responses wait, then go on once they are read.
    let text = "y".repeat(4000);
    let one = call(addr, 7, "echo", &json!({ "text": text }));
    let n = 300;
    let burst = one.repeat(n);
    let writer = async {
        tokio::io::AsyncWriteExt::write_all(&mut conn.writer, burst.as_bytes()).await.expect("write");
    };
    let mut reader = conn.reader;
    let read_all = async {
        for _ in 0..n {
            let r = http_support::read_response(&mut reader).await;
            assert_eq!(r.status, 200);
            assert_eq!(first_text(&r.json()).len(), 4000);
        }
    };
    patient("the burst", async { tokio::join!(writer, read_all) }).await;
}

/// Responses larger than the socket takes at once: the server writes what it can and its
/// writer task the rest, in order, including a response that follows on the connection.
#[tokio::test]
async fn responses_larger_than_the_socket_buffers_arrive_whole_and_in_order() {
    const BIG: usize = 4 << 20;
    let handler = Arc::new(tool_fn(|call: ToolCall| async move {
        #[derive(serde::Deserialize)]
        struct Echo {
            text: String,
        }
        let Echo { text } = call.deserialize()?;
        let n = if text == "big" { BIG } else { 1 };
        Ok(ToolReply::text(text.repeat(n)))
    }));
    let (addr, _server) = start(handler).await;
    let mut conn = Conn::open(addr).await;
    for round in 0..2 {
        // Two big ones and a small one, pipelined; nothing read for a while.
        let burst: String = ["big", "big", "s"]
            .iter()
            .enumerate()
            .map(|(i, text)| call(addr, i as u64 + 1, "echo", &json!({ "text": text })))
            .collect();
        conn.send(&burst).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        for (id, len) in [(1, 3 * BIG), (2, 3 * BIG), (3, 1)] {
            let r = conn.response().await;
            assert_eq!(r.status, 200, "round {round}");
            let v = r.json();
            assert_eq!(v["id"], id, "round {round}: in order");
            assert_eq!(first_text(&v).len(), len, "round {round}: whole");
        }
    }
}

#[tokio::test]
async fn shutdown_waits_for_requests_in_flight() {
    let (listener, addr) = listener().await;
    let probe = Probe::new();
    let server =
        HttpServer::new(HttpEngine::new(config(), open_http(), catalog()), Arc::clone(&probe), AllowAll);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server.serve_with_shutdown(listener, async {
        let _ = stop_rx.await;
    }));
    let mut conn = Conn::open(addr).await;
    conn.send(&call(addr, 1, "busy", &json!({}))).await;
    // Wait until the request is with the handler.
    patient("the handler starts", async {
        while probe.running.load(Ordering::SeqCst) == 0 && probe.max_running.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    stop_tx.send(()).expect("the server listens for shutdown");
    let r = conn.response().await;
    assert_eq!(first_text(&r.json()), "done");
    patient("shutdown", served).await.expect("the server task").expect("a clean shutdown");
}

#[tokio::test]
async fn serve_http_runs_until_dropped() {
    let (listener, addr) = listener().await;
    let engine = HttpEngine::new(config(), open_http(), catalog());
    let server = tokio::spawn(serve_http(listener, engine, Probe::new(), AllowAll));
    let mut conn = Conn::open(addr).await;
    let r = conn.call(1, "echo", &json!({ "text": "x" })).await;
    assert_eq!(first_text(&r.json()), "x");
    server.abort();
    let _ = tokio::time::timeout(PATIENCE, server).await;
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_at_the_head_timeout() {
    let mut http = open_http();
    http.head_timeout(Duration::from_millis(100));
    let (addr, _server) = start_with(config(), http, Probe::new(), AllowAll, |s| s).await;
    let mut silent = Conn::open(addr).await;
    assert!(silent.closed_by_server().await, "closed without a response");
    // A dripping head gets 408 at the same deadline.
    let mut slow = Conn::open(addr).await;
    slow.send("POST /mcp HTTP/1.1\r\nHo").await;
    let r = slow.response().await;
    assert_eq!(r.status, 408);
    assert!(slow.closed_by_server().await);
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_at_the_idle_timeout() {
    let mut http = open_http();
    http.idle_timeout(Duration::from_millis(100));
    let (addr, _server) = start_with(config(), http, Probe::new(), AllowAll, |s| s).await;
    let mut conn = Conn::open(addr).await;
    let r = conn.call(1, "echo", &json!({ "text": "a" })).await;
    assert_eq!(first_text(&r.json()), "a");
    assert!(conn.closed_by_server().await);
}

#[tokio::test]
async fn at_the_limit_the_connection_idle_longest_makes_room() {
    let mut http = open_http();
    http.max_connections(2);
    let (addr, _server) = start_with(config(), http, Probe::new(), AllowAll, |s| s).await;
    let mut first = Conn::open(addr).await;
    let mut second = Conn::open(addr).await;
    assert_eq!(first_text(&first.call(1, "echo", &json!({ "text": "a" })).await.json()), "a");
    assert_eq!(first_text(&second.call(2, "echo", &json!({ "text": "b" })).await.json()), "b");
    // A third connection is served at once: the first (idle longest) is closed.
    let mut third = Conn::open(addr).await;
    assert_eq!(first_text(&third.call(3, "echo", &json!({ "text": "c" })).await.json()), "c");
    assert!(first.closed_by_server().await);
    assert_eq!(first_text(&second.call(4, "echo", &json!({ "text": "d" })).await.json()), "d");
}
