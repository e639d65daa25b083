//! The Streamable HTTP endpoint as a tower [`Service`] (feature `tower`): [`McpService`].

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::header::{HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Full};
use mcp_engine::http::{ConnId, HttpEngine};
use tokio::sync::{mpsc, oneshot};
use tower::Service;

use crate::auth::Authorizer;
use crate::channel::Completion;
use crate::handler::Handler;
use crate::http::{Host, HttpServer, VerdictMsg};

/// Requests waiting for the engine task, all callers together.
const REQUEST_QUEUE: usize = 64;

/// The Streamable HTTP endpoint as a tower [`Service`], to mount in axum (or any
/// tower-based server) at a path of the host's choosing. Feature `tower`.
///
/// The host's server does the HTTP connections; the service gives each request to the
/// engine ([`HttpEngine::handle_request`]), so every rule of the engine applies to it
/// exactly as over [`serve_http`](crate::serve_http): methods, `Host` and `Origin`
/// checks, authorization, mirrored headers, the body cap. One task owns the engine and
/// runs the handlers, as for `serve_http`; the service is a cheap [`Clone`] handle to it.
///
/// Each call collects the body (at most the engine's body cap plus one byte: past the
/// cap the engine answers `413`, see [`HttpServer::max_body`]), waits for the answer and
/// returns it as an [`http::Response`] (hop-by-hop and framing headers such as
/// `connection` are left to the host's server). Dropping the call's future before it is
/// answered cancels the request: its handler task is aborted. At most
/// [`HttpServer::max_in_flight`] requests are with the handler at once; further calls wait
/// their turn.
///
/// # Streams
///
/// Responses are handed over whole: an answer preceded by progress or log notifications
/// (an SSE stream) reaches the caller once the answer is written, and a
/// `subscriptions/listen` stream, which stays open, never completes. Serve subscriptions
/// with [`serve_http`](crate::serve_http) instead.
///
/// # The path
///
/// The engine compares the path the service sees with its
/// [`HttpConfig::endpoint`](mcp_engine::http::HttpConfig::endpoint) (default `/mcp`) and
/// answers other paths `404`. Routers differ in what they pass:
///
/// - axum's `Router::route_service("/mcp", svc)` passes `/mcp`: keep the default endpoint.
/// - axum's `Router::nest_service("/mcp", svc)` strips the prefix and passes `/` (and
///   `/x` for `/mcp/x`): configure the endpoint as `/`.
///
/// # The peer
///
/// The engine's `Authorize` events and the handler see the peer's address when the
/// request carries a [`SocketAddr`] extension (insert one with a middleware, e.g. from
/// axum's `ConnectInfo`).
///
/// # Example
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use std::sync::Arc;
///
/// use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
/// use mcp_engine::{Catalog, Config, Tool};
/// use mcp_io_tokio::{AllowAll, McpService, ToolReply, tool_fn};
///
/// let catalog = Catalog::builder().tool(Tool::new("now")).build().expect("a valid catalog");
/// let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
/// http.endpoint("/"); // nest_service strips `/mcp`
/// let engine = HttpEngine::new(Config::new("clock", "1.0"), http, catalog);
/// let handler = Arc::new(tool_fn(|_call| async { Ok(ToolReply::text("It is now.")) }));
/// let app = axum::Router::new().nest_service("/mcp", McpService::new(engine, handler, AllowAll));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// axum::serve(listener, app).await
/// # }
/// ```
#[derive(Clone)]
pub struct McpService {
    requests: mpsc::Sender<Exchange>,
    gone: mpsc::UnboundedSender<u64>,
    next_id: Arc<AtomicU64>,
    max_body: usize,
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService").field("max_body", &self.max_body).finish_non_exhaustive()
    }
}

impl McpService {
    /// A service of `engine`, with `handler` doing its work and `auth` deciding its
    /// `Authorize` events; the defaults of [`HttpServer`] apply. Spawns the task owning
    /// the engine, which ends once every clone of the service is dropped and every call
    /// answered: must be called inside a tokio runtime.
    pub fn new<H: Handler, A: Authorizer>(engine: HttpEngine, handler: Arc<H>, auth: A) -> Self {
        HttpServer::new(engine, handler, auth).into_service()
    }

    async fn call_engine<B>(self, req: Request<B>) -> Response<Full<Bytes>>
    where
        B: Body + Send,
        B::Data: Send,
    {
        let (parts, body) = req.into_parts();
        let Ok(body) = collect(body, self.max_body.saturating_add(1)).await else {
            return plain(StatusCode::BAD_REQUEST);
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        let peer = parts.extensions.get::<SocketAddr>().copied();
        // From here on, dropping this future cancels the request.
        let guard = GoneGuard { id, tx: Some(self.gone.clone()) };
        if self.requests.send(Exchange { id, peer, parts, body, reply }).await.is_err() {
            return plain(StatusCode::SERVICE_UNAVAILABLE);
        }
        let response = answer.await.unwrap_or_else(|_| plain(StatusCode::SERVICE_UNAVAILABLE));
        guard.disarm();
        response
    }
}

impl<H: Handler, A: Authorizer> HttpServer<H, A> {
    /// The endpoint as a tower service (feature `tower`): see [`McpService`]. Spawns the
    /// task owning the engine: must be called inside a tokio runtime.
    pub fn into_service(self) -> McpService {
        let max_body = self.max_body;
        let (host, done_rx, verdict_rx) = Host::new(self);
        let (requests, requests_rx) = mpsc::channel(REQUEST_QUEUE);
        let (gone, gone_rx) = mpsc::unbounded_channel();
        tokio::spawn(run(host, requests_rx, gone_rx, done_rx, verdict_rx));
        McpService { requests, gone, next_id: Arc::new(AtomicU64::new(0)), max_body }
    }
}

impl<B> Service<Request<B>> for McpService
where
    B: Body + Send + 'static,
    B::Data: Send,
{
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.call_engine(req).await) })
    }
}

/// A request on its way to the engine task.
struct Exchange {
    id: u64,
    peer: Option<SocketAddr>,
    parts: http::request::Parts,
    body: Bytes,
    reply: oneshot::Sender<Response<Full<Bytes>>>,
}

/// Tells the engine task that call `id` was dropped, unless disarmed.
struct GoneGuard {
    id: u64,
    tx: Option<mpsc::UnboundedSender<u64>>,
}

impl GoneGuard {
    fn disarm(mut self) {
        self.tx = None;
    }
}

impl Drop for GoneGuard {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(self.id);
        }
    }
}

/// Reads `body` up to `limit` bytes (what is past it is left unread).
async fn collect<B: Body>(body: B, limit: usize) -> Result<Bytes, ()> {
    let mut body = pin!(body);
    let hint = body.size_hint().exact().and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
    let mut out = Vec::with_capacity(hint.min(limit));
    while out.len() < limit {
        let Some(frame) = body.frame().await else { break };
        let Ok(mut data) = frame.map_err(|_| ())?.into_data() else { continue };
        while data.has_remaining() && out.len() < limit {
            let chunk = data.chunk();
            let n = chunk.len().min(limit - out.len());
            out.extend_from_slice(&chunk[..n]);
            data.advance(n);
        }
    }
    Ok(out.into())
}

fn plain(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

/// Headers of the engine's HTTP/1.1 response that belong to its framing, not to the
/// response: the host's server writes its own.
fn is_framing(name: &str) -> bool {
    ["connection", "content-length", "transfer-encoding", "keep-alive"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

fn to_http(r: &mcp_engine::http::Response<'_>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::copy_from_slice(r.body)));
    *response.status_mut() = StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for &(name, value) in r.headers() {
        if is_framing(name) {
            continue;
        }
        match (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_bytes(value)) {
            (Ok(name), Ok(value)) => {
                response.headers_mut().append(name, value);
            }
            _ => tracing::warn!(header = name, "dropping a response header http cannot carry"),
        }
    }
    response
}

/// A call the engine is working on.
struct Live {
    id: u64,
    reply: oneshot::Sender<Response<Full<Bytes>>>,
}

/// The engine task of a [`McpService`].
async fn run<H: Handler, A: Authorizer>(
    mut host: Host<H, A>,
    mut requests: mpsc::Receiver<Exchange>,
    mut gone: mpsc::UnboundedReceiver<u64>,
    mut done: mpsc::UnboundedReceiver<Completion>,
    mut verdicts: mpsc::UnboundedReceiver<VerdictMsg>,
) {
    let mut live: HashMap<ConnId, Live> = HashMap::new();
    let mut by_id: HashMap<u64, ConnId> = HashMap::new();
    let mut open = true;
    let mut answered = Vec::new();
    tracing::debug!("serving HTTP requests from a tower service");
    loop {
        pump(&mut host, &mut live, &mut by_id, &mut answered);
        if !open && live.is_empty() {
            tracing::debug!("every service handle is gone; stopping");
            return;
        }
        let timer = host.next_timeout();
        tokio::select! {
            biased;
            Some(completion) = done.recv() => host.complete(completion),
            Some(verdict) = verdicts.recv() => host.verdict(verdict),
            Some(id) = gone.recv() => {
                if let Some(conn) = by_id.remove(&id) {
                    tracing::debug!(?conn, "the caller went away: cancelling");
                    live.remove(&conn);
                    host.closed(conn);
                }
            }
            exchange = requests.recv(), if open && host.room() => match exchange {
                Some(exchange) => start(&mut host, &mut live, &mut by_id, exchange),
                None => open = false,
            },
            () = tokio::time::sleep_until(timer.unwrap_or_else(tokio::time::Instant::now)), if timer.is_some() => {
                host.handle_timeout();
            }
        }
    }
}

/// Gives one request to the engine.
fn start<H: Handler, A: Authorizer>(
    host: &mut Host<H, A>,
    live: &mut HashMap<ConnId, Live>,
    by_id: &mut HashMap<u64, ConnId>,
    exchange: Exchange,
) {
    let Exchange { id, peer, parts, body, reply } = exchange;
    if reply.is_closed() {
        return; // the caller went away while it waited its turn
    }
    let mut headers: Vec<(&str, &[u8])> =
        parts.headers.iter().map(|(name, value)| (name.as_str(), value.as_bytes())).collect();
    // HTTP/2 carries the host in the uri, not in a `Host` header.
    let authority = parts.uri.authority().map(|a| a.as_str());
    if let (false, Some(authority)) = (parts.headers.contains_key(http::header::HOST), authority) {
        headers.push(("host", authority.as_bytes()));
    }
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let now = host.now();
    match host.engine.handle_request(now, peer, parts.method.as_str(), path, &headers, &body) {
        Ok(conn) => {
            live.insert(conn, Live { id, reply });
            by_id.insert(id, conn);
        }
        Err(e) => {
            tracing::warn!(%e, "request refused");
            let _ = reply.send(plain(StatusCode::SERVICE_UNAVAILABLE));
        }
    }
}

/// Runs the engine until it rests, sending each finished response to its caller.
fn pump<H: Handler, A: Authorizer>(
    host: &mut Host<H, A>,
    live: &mut HashMap<ConnId, Live>,
    by_id: &mut HashMap<u64, ConnId>,
    answered: &mut Vec<ConnId>,
) {
    loop {
        let mut progress = host.deliver_deferred();
        progress |= host.drain();
        answered.clear();
        answered.extend(host.engine.writable());
        for &conn in answered.iter() {
            let Some(response) = host.engine.response(conn).map(|r| to_http(&r)) else {
                continue; // not complete yet
            };
            progress = true;
            match live.remove(&conn) {
                Some(l) => {
                    by_id.remove(&l.id);
                    tracing::trace!(?conn, status = response.status().as_u16(), "answered");
                    // The caller may have gone meanwhile.
                    let _ = l.reply.send(response);
                }
                None => tracing::warn!(?conn, "a response for no caller"),
            }
            host.closed(conn);
        }
        if !progress {
            break;
        }
    }
}
