//! Streamed responses through the tower service mounted in axum: progress and log
//! messages arrive as SSE events before the result, a listen stream carries a list
//! change, dropping the body cancels, `Expect: 100-continue` works over a real listener,
//! under both authorization modes.

#![cfg(feature = "tower")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, Verdict};
use mcp_engine::{Catalog, Config, LogLevel, Tool};
use mcp_io_tokio::handler::Publisher;
use mcp_io_tokio::http::AuthorizeInfo;
use mcp_io_tokio::{Handler, HostFailure, HttpServer, ToolCall, ToolReply};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Notify;
use tower::ServiceExt;

/// How long a test waits for something that should happen at once.
const PATIENCE: Duration = Duration::from_secs(20);

async fn patient<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, fut).await.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

fn catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("ticks"))
        .tool(Tool::new("logs"))
        .tool(Tool::new("hang"))
        .build()
        .expect("a valid catalog")
}

/// `ticks`: progress 1, waits for the test, progress 2, then answers; `logs`: a log
/// message, waits, answers; `hang`: progress 1, then never answers (counts drops).
#[derive(Default)]
struct Streams {
    release: Notify,
    dropped: AtomicUsize,
    dropped_notify: Notify,
}

struct Dropped<'a>(&'a Streams);

impl Drop for Dropped<'_> {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
        self.0.dropped_notify.notify_waiters();
    }
}

impl Handler for Streams {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        match call.name.as_str() {
            "ticks" => {
                call.progress(1.0, Some(2.0), Some("one"));
                self.release.notified().await;
                call.progress(2.0, Some(2.0), Some("two"));
                Ok(ToolReply::text("ticked"))
            }
            "logs" => {
                call.log(LogLevel::Info, Some("t"), json!("hello"));
                self.release.notified().await;
                Ok(ToolReply::text("logged"))
            }
            "hang" => {
                let _count = Dropped(self);
                call.progress(1.0, None, None);
                std::future::pending::<()>().await;
                Ok(ToolReply::text("never"))
            }
            other => Err(HostFailure::internal(format!("no tool {other}"))),
        }
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Everyone,
    Host,
}

const MODES: [Mode; 2] = [Mode::Everyone, Mode::Host];

fn app(mode: Mode, handler: Arc<Streams>) -> (Router, Publisher) {
    let auth = match mode {
        Mode::Everyone => Authorization::Everyone,
        Mode::Host => Authorization::Host,
    };
    let mut cfg = Config::new("t", "1");
    cfg.logging(true);
    cfg.list_changed(true);
    let engine = HttpEngine::new(cfg, HttpConfig::new(AllowedOrigins::Any, auth), catalog());
    let allow = |_: &AuthorizeInfo| Verdict::Allow;
    let server = HttpServer::new(engine, handler, allow);
    let publisher = server.publisher();
    (Router::new().route_service("/mcp", server.into_service()), publisher)
}

fn meta(progress: bool) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "debug",
    });
    if progress {
        meta["progressToken"] = json!("p");
    }
    meta
}

fn request(method: &str, name: Option<&str>, params: Value) -> Request<Body> {
    let mut req = Request::post("/mcp")
        .header("host", "127.0.0.1:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        req = req.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    req.body(Body::from(body.to_string())).expect("a request")
}

fn call(tool: &str, progress: bool) -> Request<Body> {
    request("tools/call", Some(tool), json!({"name": tool, "arguments": {}, "_meta": meta(progress)}))
}

/// The JSON messages of the SSE `data:` lines in `bytes`.
fn events(bytes: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("JSON data"))
        .collect()
}

/// Reads frames of `body` until `n` more events arrived; returns them.
async fn read_events(body: &mut Body, n: usize) -> Vec<Value> {
    let mut raw = Vec::new();
    loop {
        let got = events(&raw);
        if got.len() >= n && raw.ends_with(b"\n\n") {
            return got;
        }
        let frame = patient("an event", body.frame()).await.expect("the stream goes on").expect("a frame");
        if let Ok(data) = frame.into_data() {
            raw.extend_from_slice(&data);
        }
    }
}

#[tokio::test]
async fn progress_arrives_as_events_before_the_result() {
    for mode in MODES {
        let handler = Arc::new(Streams::default());
        let (app, _) = app(mode, Arc::clone(&handler));
        let response = patient("the head", app.oneshot(call("ticks", true))).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        assert!(response.headers().get("content-length").is_none());
        let mut body = response.into_body();
        // The first event arrives while the tool still works.
        let first = read_events(&mut body, 1).await;
        assert_eq!(first[0]["method"], "notifications/progress");
        assert_eq!(first[0]["params"]["progress"], 1.0);
        handler.release.notify_one();
        let rest = patient("the rest", body.collect()).await.expect("a body").to_bytes();
        let rest = events(&rest);
        assert_eq!(rest[0]["params"]["progress"], 2.0);
        assert_eq!(rest[1]["result"]["content"][0]["text"], "ticked");
        assert_eq!(rest.len(), 2, "the stream ends with the result");
    }
}

#[tokio::test]
async fn log_messages_arrive_as_events_before_the_result() {
    for mode in MODES {
        let handler = Arc::new(Streams::default());
        let (app, _) = app(mode, Arc::clone(&handler));
        let response = patient("the head", app.oneshot(call("logs", false))).await.expect("infallible");
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let mut body = response.into_body();
        let first = read_events(&mut body, 1).await;
        assert_eq!(first[0]["method"], "notifications/message");
        assert_eq!(first[0]["params"]["data"], "hello");
        handler.release.notify_one();
        let rest = events(&patient("the rest", body.collect()).await.expect("a body").to_bytes());
        assert_eq!(rest[0]["result"]["content"][0]["text"], "logged");
    }
}

#[tokio::test]
async fn dropping_the_body_cancels_the_call() {
    for mode in MODES {
        let handler = Arc::new(Streams::default());
        let (app, _) = app(mode, Arc::clone(&handler));
        let response = patient("the head", app.oneshot(call("hang", true))).await.expect("infallible");
        let mut body = response.into_body();
        let first = read_events(&mut body, 1).await;
        assert_eq!(first[0]["method"], "notifications/progress");
        assert_eq!(handler.dropped.load(Ordering::SeqCst), 0);
        drop(body);
        patient("the handler is aborted", async {
            while handler.dropped.load(Ordering::SeqCst) == 0 {
                handler.dropped_notify.notified().await;
            }
        })
        .await;
    }
}

#[tokio::test]
async fn a_listen_stream_carries_a_list_change() {
    for mode in MODES {
        let handler = Arc::new(Streams::default());
        let (app, publisher) = app(mode, handler);
        let listen = request(
            "subscriptions/listen",
            None,
            json!({"notifications": {"toolsListChanged": true}, "_meta": meta(false)}),
        );
        let response = patient("the head", app.clone().oneshot(listen)).await.expect("infallible");
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let mut body = response.into_body();
        let ack = read_events(&mut body, 1).await;
        assert!(ack[0]["method"].as_str().is_some_and(|m| m.contains("acknowledged")), "{ack:?}");
        let changed = Catalog::builder().tool(Tool::new("other")).build().expect("a catalog");
        patient("the replacement", publisher.replace_catalog(changed)).await.expect("replaced");
        let next = read_events(&mut body, 1).await;
        assert_eq!(next[0]["method"], "notifications/tools/list_changed", "{next:?}");
        // Dropping the body ends the listen stream; the service goes on.
        drop(body);
        let response = patient("a call", app.oneshot(call("logs", false))).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::OK);
    }
}

#[tokio::test]
async fn expect_100_continue_through_a_real_axum_listener() {
    for mode in MODES {
        let handler = Arc::new(Streams::default());
        let (app, _) = app(mode, Arc::clone(&handler));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(axum::serve(listener, app).into_future());
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                          "params": {"_meta": meta(false)}})
        .to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: server/discover\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
            addr.port(),
            body.len()
        );
        let stream = patient("connect", tokio::net::TcpStream::connect(addr)).await.expect("connect");
        let (r, mut w) = stream.into_split();
        let mut r = BufReader::new(r);
        w.write_all(head.as_bytes()).await.expect("write the head");
        let mut line = String::new();
        patient("100 Continue", r.read_line(&mut line)).await.expect("read");
        assert!(line.starts_with("HTTP/1.1 100"), "{line}");
        line.clear();
        r.read_line(&mut line).await.expect("read");
        assert_eq!(line, "\r\n");
        w.write_all(body.as_bytes()).await.expect("write the body");
        line.clear();
        patient("the response", r.read_line(&mut line)).await.expect("read");
        assert!(line.starts_with("HTTP/1.1 200"), "{line}");
        let mut len = 0;
        loop {
            line.clear();
            r.read_line(&mut line).await.expect("read");
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().expect("a length");
            }
        }
        let mut buf = vec![0; len];
        r.read_exact(&mut buf).await.expect("the body");
        let v: Value = serde_json::from_slice(&buf).expect("JSON");
        assert_eq!(v["result"]["supportedVersions"], json!(["2026-07-28"]));
        server.abort();
    }
}
