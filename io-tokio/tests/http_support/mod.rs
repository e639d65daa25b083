//! A raw HTTP/1.1 test client over real TCP, and test handlers, for the HTTP adapters.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_engine::{Catalog, Tool};
use mcp_io_tokio::{Handler, HostFailure, ToolCall, ToolReply};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::Notify;

/// Hang protection only: no assertion depends on it.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// Runs `fut` with hang protection.
pub async fn patient<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, fut).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// A JSON-RPC request body of the `2026-07-28` revision; `params` is the inside of the
/// params object, without `_meta`.
pub fn body(id: u64, method: &str, params: &str) -> String {
    let sep = if params.is_empty() { "" } else { "," };
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}{sep}{META}}}}}"#)
}

/// A `tools/call` body.
pub fn call_body(id: u64, tool: &str, arguments: &Value) -> String {
    body(id, "tools/call", &format!(r#""name":"{tool}","arguments":{arguments}"#))
}

/// The headers of a request of `method` (naming `name` for tools/call, prompts/get and
/// resources/read), as (name, value) pairs, `Host` excluded.
pub fn mcp_headers(method: &str, name: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
        ("Mcp-Method".to_owned(), method.to_owned()),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name".to_owned(), name.to_owned()));
    }
    headers
}

/// A whole `POST {path}` request to `addr`, with `Content-Length`.
pub fn post_to(addr: SocketAddr, path: &str, method: &str, name: Option<&str>, body: &str) -> String {
    let mut req = format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", addr.port());
    for (n, v) in mcp_headers(method, name) {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    req
}

/// A `POST /mcp` request.
pub fn post(addr: SocketAddr, method: &str, name: Option<&str>, body: &str) -> String {
    post_to(addr, "/mcp", method, name, body)
}

/// A `tools/call` request.
pub fn call(addr: SocketAddr, id: u64, tool: &str, arguments: &Value) -> String {
    post(addr, "tools/call", Some(tool), &call_body(id, tool, arguments))
}

/// A response read off the wire.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn closes(&self) -> bool {
        self.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// The text of the first content block of a JSON-RPC result.
pub fn first_text(response: &Value) -> &str {
    response["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {response}"))
}

/// One client connection.
pub struct Conn {
    pub reader: BufReader<OwnedReadHalf>,
    pub writer: OwnedWriteHalf,
    pub addr: SocketAddr,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Self {
        let stream = patient("connect", TcpStream::connect(addr)).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let (r, w) = stream.into_split();
        Self { reader: BufReader::new(r), writer: w, addr }
    }

    pub async fn send(&mut self, bytes: &str) {
        patient("write", self.writer.write_all(bytes.as_bytes())).await.expect("write the request");
    }

    /// Reads one response (`Content-Length` framed).
    pub async fn response(&mut self) -> HttpResponse {
        patient("a response", read_response(&mut self.reader)).await
    }

    /// Sends a `tools/call` and reads its response.
    pub async fn call(&mut self, id: u64, tool: &str, arguments: &Value) -> HttpResponse {
        let req = call(self.addr, id, tool, arguments);
        self.send(&req).await;
        self.response().await
    }

    /// Whether the server closed the connection: reads until end of input.
    pub async fn closed_by_server(&mut self) -> bool {
        let mut rest = Vec::new();
        match patient("end of input", self.reader.read_to_end(&mut rest)).await {
            Ok(_) => rest.is_empty(),
            Err(e) => panic!("reading to the end failed: {e}"),
        }
    }
}

pub async fn read_response(reader: &mut BufReader<OwnedReadHalf>) -> HttpResponse {
    let mut line = String::new();
    reader.read_line(&mut line).await.expect("read the status line");
    assert!(line.starts_with("HTTP/1.1 "), "not a status line: {line:?}");
    let status = line[9..12].parse().expect("a status code");
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await.expect("read a header");
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').unwrap_or_else(|| panic!("bad header line {l:?}"));
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse::<usize>().expect("a content length"));
    let mut body = vec![0; len];
    reader.read_exact(&mut body).await.expect("read the body");
    HttpResponse { status, headers, body }
}

/// Counts drops (and so handler futures aborted).
pub struct DropCount(pub Arc<AtomicUsize>, pub Arc<Notify>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        self.1.notify_waiters();
        self.1.notify_one();
    }
}

/// A catalog with `echo` (a string `text`), `slow` (never answers), `busy` (answers
/// after a short while) and `region` (a header-mirrored argument).
pub fn catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("echo").input_schema(json!({
            "type": "object",
            "properties": { "text": { "type": "string" } },
            "required": ["text"]
        })))
        .tool(Tool::new("slow"))
        .tool(Tool::new("busy"))
        .tool(Tool::new("region").input_schema(json!({
            "type": "object",
            "properties": { "region": { "type": "string", "x-mcp-header": "Region" } },
            "required": ["region"]
        })))
        .build()
        .expect("a valid catalog")
}

/// The handler of [`catalog`], observable from the test.
#[derive(Default)]
pub struct Probe {
    /// `slow` calls started.
    pub started: AtomicUsize,
    pub started_notify: Notify,
    /// `slow` handler futures dropped (aborted).
    pub dropped: Arc<AtomicUsize>,
    pub dropped_notify: Arc<Notify>,
    /// `busy` calls running now, and the most at once.
    pub running: AtomicUsize,
    pub max_running: AtomicUsize,
}

impl Probe {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub async fn wait_started(&self, n: usize) {
        patient("the handler starts", async {
            loop {
                let notified = self.started_notify.notified();
                if self.started.load(Ordering::SeqCst) >= n {
                    return;
                }
                notified.await;
            }
        })
        .await;
    }

    pub async fn wait_dropped(&self, n: usize) {
        patient("the handler is aborted", async {
            loop {
                let notified = self.dropped_notify.notified();
                if self.dropped.load(Ordering::SeqCst) >= n {
                    return;
                }
                notified.await;
            }
        })
        .await;
    }
}

impl Handler for Probe {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        #[derive(serde::Deserialize)]
        struct Echo {
            text: String,
        }
        #[derive(serde::Deserialize)]
        struct Region {
            region: String,
        }
        match call.name.as_str() {
            "echo" => Ok(ToolReply::text(call.deserialize::<Echo>()?.text)),
            "region" => Ok(ToolReply::text(format!("region: {}", call.deserialize::<Region>()?.region))),
            "slow" => {
                let _guard = DropCount(Arc::clone(&self.dropped), Arc::clone(&self.dropped_notify));
                self.started.fetch_add(1, Ordering::SeqCst);
                self.started_notify.notify_waiters();
                std::future::pending::<()>().await;
                Ok(ToolReply::text("never"))
            }
            "busy" => {
                let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
                self.max_running.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                self.running.fetch_sub(1, Ordering::SeqCst);
                Ok(ToolReply::text("done"))
            }
            other => Err(HostFailure::internal(format!("no tool {other}"))),
        }
    }
}
