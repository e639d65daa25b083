//! For the session-store tests (`session_store.rs`, `postgres_store.rs`): servers sharing a
//! store and a key over real TCP, and the session-bound requests a client sends them.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_engine::Config;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_io_tokio::HttpServer;
use mcp_io_tokio::http::AllowAll;
use mcp_io_tokio::store::SessionStore;
use tokio::net::TcpListener;

use crate::http_support::{Conn, Probe, catalog};

pub const V: &str = "2025-11-25";
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
pub const PING: &str = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;

/// A server sharing `store` and the key every node of a test shares (with `logging`
/// on: `logging/setLevel` changes a session).
pub async fn node<S: SessionStore>(store: Arc<S>) -> SocketAddr {
    node_with(store, HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone)).await
}

/// [`node`] with `http`.
pub async fn node_with<S: SessionStore>(store: Arc<S>, http: HttpConfig) -> SocketAddr {
    let mut cfg = Config::new("io-tokio-store-test", "0.0.1");
    cfg.secret_key([7; 32]).logging(true);
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

/// A store that counts what it is asked and hands everything to `inner` (its notices
/// included).
pub struct Counting<S> {
    pub inner: S,
    pub loads: std::sync::atomic::AtomicUsize,
    pub saves: std::sync::atomic::AtomicUsize,
    pub removes: std::sync::atomic::AtomicUsize,
    /// Touches (off the request path; not in [`counts`](Self::counts)).
    pub touches: std::sync::atomic::AtomicUsize,
}

impl<S> Counting<S> {
    pub fn new(inner: S) -> Arc<Self> {
        Arc::new(Self {
            inner,
            loads: Default::default(),
            saves: Default::default(),
            removes: Default::default(),
            touches: Default::default(),
        })
    }

    /// Loads, saves and removals asked so far.
    pub fn counts(&self) -> (usize, usize, usize) {
        use std::sync::atomic::Ordering::SeqCst;
        (self.loads.load(SeqCst), self.saves.load(SeqCst), self.removes.load(SeqCst))
    }

    /// Every operation asked so far.
    pub fn total(&self) -> usize {
        let (l, s, r) = self.counts();
        l + s + r
    }
}

impl<S: SessionStore> SessionStore for Counting<S> {
    fn load<'a>(&'a self, id: &'a str) -> mcp_io_tokio::store::StoreFuture<'a, Option<Vec<u8>>> {
        self.loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.load(id)
    }
    fn save<'a>(&'a self, id: &'a str, record: &'a [u8]) -> mcp_io_tokio::store::StoreFuture<'a, ()> {
        self.saves.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.save(id, record)
    }
    fn remove<'a>(&'a self, id: &'a str) -> mcp_io_tokio::store::StoreFuture<'a, ()> {
        self.removes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.remove(id)
    }
    fn expired<'a>(&'a self, id: &'a str) -> mcp_io_tokio::store::StoreFuture<'a, ()> {
        self.removes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.expired(id)
    }
    fn touch<'a>(&'a self, id: &'a str) -> mcp_io_tokio::store::StoreFuture<'a, ()> {
        self.touches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.touch(id)
    }
    fn notices(&self) -> mcp_io_tokio::store::StoreFuture<'_, Option<mcp_io_tokio::store::StoreNotices>> {
        self.inner.notices()
    }
    fn announce<'a>(
        &'a self,
        news: &'a mcp_io_tokio::store::CatalogNews,
    ) -> mcp_io_tokio::store::StoreFuture<'a, ()> {
        self.inner.announce(news)
    }
}

/// A `GET` opening the standalone stream of session `id`.
pub fn get_stream(addr: SocketAddr, id: &str) -> String {
    format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {id}\r\n\
         MCP-Protocol-Version: {V}\r\n\r\n",
        addr.port()
    )
}

/// A `DELETE` of session `id`.
pub fn delete(addr: SocketAddr, id: &str) -> String {
    format!("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nMcp-Session-Id: {id}\r\n\r\n", addr.port())
}

/// How long a stream read waits for what a test expects (nothing should take a fraction
/// of it).
pub const STREAM_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// Opens the standalone stream of `id` on `addr`; returns the connection, its head read.
pub async fn stream(addr: SocketAddr, id: &str) -> Conn {
    let mut c = Conn::open(addr).await;
    c.send(&get_stream(addr, id)).await;
    let r = c.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    c
}

/// A `subscriptions/listen` stream (`2026-07-28`) for tool list changes and updates of
/// `uri`; its acknowledgement read.
pub async fn listen(addr: SocketAddr, uri: &str) -> Conn {
    let body = crate::http_support::body(
        1,
        "subscriptions/listen",
        &format!(r#""notifications":{{"toolsListChanged":true,"resourceSubscriptions":["{uri}"]}}"#),
    );
    let req = crate::http_support::post(addr, "subscriptions/listen", None, &body).replacen(
        "\r\n",
        "\r\nAccept: application/json, text/event-stream\r\n",
        1,
    );
    let mut c = Conn::open(addr).await;
    c.send(&req).await;
    let r = c.response().await;
    assert_eq!((r.status, r.header("content-type")), (200, Some("text/event-stream")), "{r:?}");
    read_until(&mut c, |t| t.contains("acknowledged")).await;
    c
}

/// Reads `c`'s stream until what came since the call satisfies `done` (within
/// [`STREAM_WAIT`] for each read); returns it.
pub async fn read_until(c: &mut Conn, done: impl Fn(&str) -> bool) -> String {
    use tokio::io::AsyncReadExt as _;
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !done(&String::from_utf8_lossy(&seen)) {
        let n = tokio::time::timeout(STREAM_WAIT, c.reader.read(&mut buf))
            .await
            .unwrap_or_else(|_| {
                panic!("not within {STREAM_WAIT:?}; so far: {}", String::from_utf8_lossy(&seen))
            })
            .expect("read");
        assert!(n > 0, "the stream closed; so far: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// How many times `what` occurs in `text`.
pub fn count(text: &str, what: &str) -> usize {
    text.matches(what).count()
}

/// Returns once node `b` has handled every notice of the writes node `a` committed before
/// the call: a marker session opened on `a` is streamed on `b` (a copy in use, which no
/// `Changed` drops), then deleted on `a`; the notices of one node reach another in commit
/// order, so when the marker's stream ends on `b`, the earlier ones were handled. (A
/// notice may reach a node after it loaded the session it names: it then drops a copy
/// that was fresh, and loads it once more.)
pub async fn heard_so_far(a: SocketAddr, b: SocketAddr) {
    let marker = open(a).await;
    let mut s = stream(b, &marker).await;
    let mut c = Conn::open(a).await;
    c.send(&delete(a, &marker)).await;
    assert_eq!(c.response().await.status, 200);
    read_until(&mut s, |t| t.ends_with("0\r\n\r\n")).await;
}

/// Sends `raw` on a connection of its own and reads until the server closes it.
pub async fn exchange(addr: SocketAddr, raw: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(raw.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.expect("read");
    String::from_utf8(out).expect("UTF-8")
}

/// The `(id, data)` of each SSE event of a chunked response (`head` and chunk sizes
/// dropped).
pub fn sse_events(raw: &str) -> Vec<(String, String)> {
    let (_, mut rest) = raw.split_once("\r\n\r\n").expect("a head");
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if n == 0 {
            break;
        }
        body.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
    let mut events = Vec::new();
    let mut id = String::new();
    for line in body.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            id = v.to_owned();
        } else if let Some(d) = line.strip_prefix("data: ") {
            events.push((std::mem::take(&mut id), d.to_owned()));
        }
    }
    events
}

/// Resumes with `get` (a `GET` carrying `Last-Event-ID`) on `addr` until `want` events
/// come back (the writing node appends to the store in the background; at most 50 tries,
/// 100 ms apart) and returns them; the replay must say no events are missing.
pub async fn resume_until(addr: SocketAddr, get: &str, want: usize) -> Vec<(String, String)> {
    let mut tries = 0;
    loop {
        let out = crate::http_support::patient("a resumption", exchange(addr, get)).await;
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        let got = sse_events(&out);
        if got.len() == want || tries == 50 {
            assert!(!out.contains(": gap"), "{out}");
            return got;
        }
        tries += 1;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
