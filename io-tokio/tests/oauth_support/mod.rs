//! For the OAuth tests (feature `oauth`): a tiny loopback HTTP server whose routes a test
//! sets and changes (a key set it rotates, metadata, answers that are too big or never
//! come), a protected MCP server with an authorizer, and requests to it with a token.

#![allow(dead_code, unreachable_pub)]

pub mod demo;
pub mod server;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, ProtectedResource};
use mcp_engine::{Catalog, Config, Tool};
use mcp_io_tokio::handler::tool_fn;
use mcp_io_tokio::{Authorizer, HttpServer, ToolReply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::http_support::{Conn, HttpResponse, body, patient, post};

/// What a route answers.
#[derive(Clone)]
pub enum Route {
    /// This status and body (JSON).
    Answer(u16, Vec<u8>),
    /// Nothing, ever (the connection stays open).
    Hang,
}

/// A loopback HTTP/1.1 server of fixed routes, counting the requests of each path.
#[derive(Clone)]
pub struct Routes {
    pub addr: SocketAddr,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl Routes {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let (r, h) = (Arc::clone(&routes), Arc::clone(&hits));
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else { return };
                let (r, h) = (Arc::clone(&r), Arc::clone(&h));
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&head);
                    let path = text.split(' ').nth(1).unwrap_or("").to_owned();
                    *h.lock().unwrap().entry(path.clone()).or_default() += 1;
                    let route = r.lock().unwrap().get(&path).cloned();
                    let (status, body) = match route {
                        Some(Route::Answer(status, body)) => (status, body),
                        Some(Route::Hang) => {
                            std::future::pending::<()>().await;
                            return;
                        }
                        None => (404, b"{}".to_vec()),
                    };
                    let head = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = s.write_all(head.as_bytes()).await;
                    let _ = s.write_all(&body).await;
                    let _ = s.shutdown().await;
                });
            }
        });
        Self { addr, routes, hits }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set(&self, path: &str, route: Route) {
        self.routes.lock().unwrap().insert(path.to_owned(), route);
    }

    pub fn json(&self, path: &str, body: &serde_json::Value) {
        self.set(path, Route::Answer(200, serde_json::to_vec(body).unwrap()));
    }

    /// How many requests `path` had.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

/// An MCP server on loopback, protected as `resource` whose tokens `issuer` issues, its
/// requests decided by `auth`. One tool, `echo`.
pub async fn protected_server<A: Authorizer>(resource: &str, issuer: &str, auth: A) -> SocketAddr {
    let catalog = Catalog::builder().tool(Tool::new("echo")).build().expect("a catalog");
    protected_server_of(resource, issuer, auth, Config::new("oauth-test", "1.0"), catalog).await
}

/// [`protected_server`] with `config` and `catalog`.
pub async fn protected_server_of<A: Authorizer>(
    resource: &str,
    issuer: &str,
    auth: A,
    config: Config,
    catalog: Catalog,
) -> SocketAddr {
    let pr = ProtectedResource::new(resource, [issuer])
        .expect("a resource")
        .scopes_supported(["mcp:read", "mcp:tools"])
        .expect("scopes");
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    http.protected_resource(pr);
    let engine = HttpEngine::new(config, http, catalog);
    let handler = Arc::new(tool_fn(|_call| async { Ok(ToolReply::text("ok")) }));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(HttpServer::new(engine, handler, auth).serve(listener));
    addr
}

/// `tools/list` to `addr` with `Authorization: Bearer token` (none for `None`).
pub async fn list_tools(addr: SocketAddr, token: Option<&str>) -> HttpResponse {
    let mut req = post(addr, "tools/list", None, &body(1, "tools/list", ""));
    if let Some(t) = token {
        req = req.replacen("\r\n", &format!("\r\nAuthorization: Bearer {t}\r\n"), 1);
    }
    let mut c = Conn::open(addr).await;
    c.send(&req).await;
    patient("a response", c.response()).await
}

/// The `error` of a response's `WWW-Authenticate`, if any.
pub fn challenge_error(r: &HttpResponse) -> Option<String> {
    let h = r.header("www-authenticate")?;
    let start = h.find("error=\"")? + 7;
    Some(h[start..].split('"').next()?.to_owned())
}

/// A raw `POST /mcp` of `body` with `Authorization: Bearer token` and the legacy
/// (session-bound) headers: `MCP-Protocol-Version` and `Mcp-Session-Id` when given.
pub async fn legacy_post(
    addr: SocketAddr,
    token: &str,
    body: &serde_json::Value,
    version: Option<&str>,
    session: Option<&str>,
) -> HttpResponse {
    let body = body.to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n",
        addr.port()
    );
    if let Some(v) = version {
        req.push_str(&format!("MCP-Protocol-Version: {v}\r\n"));
    }
    if let Some(id) = session {
        req.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let mut c = Conn::open(addr).await;
    c.send(&req).await;
    patient("a response", c.response()).await
}
