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
use http_body_util::BodyExt;
use mcp_engine::http::{ConnId, HttpEngine};
use tokio::sync::{mpsc, oneshot};
use tower::Service;

use crate::auth::Authorizer;
use crate::channel::Completion;
use crate::handler::Handler;
use crate::http::{Decided, Host, HttpServer};

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
/// cap the engine answers `413`, see [`HttpServer::max_body`]), waits for the response
/// head and returns an [`http::Response`] with a [`McpBody`] (framing headers are left to
/// the host's server, and so is `100 Continue`, which hyper sends when the body is first
/// read). Dropping the call's future before it is answered cancels the request: its
/// handler task is aborted. At most [`HttpServer::max_in_flight`] requests are with the
/// handler at once; further calls wait their turn.
///
/// # Streams
///
/// An answer preceded by progress or log notifications, and a `subscriptions/listen`
/// stream, is a `text/event-stream` response whose body yields each SSE event as the
/// engine writes it (keep-alive comments included) and ends when the engine ends the
/// stream. The body takes from the engine only what the caller reads (a few events
/// ahead), so the engine's bound on unsent output applies: a listener that stops reading
/// is dropped. Dropping the body before its end cancels the request (or ends the listen
/// stream), exactly as closing the connection does over [`serve_http`](crate::serve_http).
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
/// let app = axum::Router::new().nest_service("/mcp", McpService::without_authorizer(engine, handler));
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

    /// A service of `engine` under
    /// [`Authorization::Everyone`](mcp_engine::http::Authorization::Everyone): no
    /// authorizer to give (see [`HttpServer::without_authorizer`]).
    pub fn without_authorizer<H: Handler>(engine: HttpEngine, handler: Arc<H>) -> Self {
        HttpServer::without_authorizer(engine, handler).into_service()
    }

    async fn call_engine<B>(self, req: Request<B>) -> Response<McpBody>
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
        let (mut host, done_rx, verdict_rx) = Host::new(self);
        // Other nodes' news: heard once the store listens (this cannot wait for it).
        host.listen();
        let (requests, requests_rx) = mpsc::channel(REQUEST_QUEUE);
        let (gone, gone_rx) = mpsc::unbounded_channel();
        let (demand, demand_rx) = mpsc::unbounded_channel();
        let task =
            EngineTask { host, live: HashMap::new(), by_id: HashMap::new(), gone: gone.clone(), demand };
        tokio::spawn(run(task, requests_rx, gone_rx, demand_rx, done_rx, verdict_rx));
        McpService { requests, gone, next_id: Arc::new(AtomicU64::new(0)), max_body }
    }
}

impl<B> Service<Request<B>> for McpService
where
    B: Body + Send + 'static,
    B::Data: Send,
{
    type Response = Response<McpBody>;
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
    reply: oneshot::Sender<Response<McpBody>>,
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

fn plain(status: StatusCode) -> Response<McpBody> {
    let mut response = Response::new(McpBody::full(Bytes::new()));
    *response.status_mut() = status;
    response
}

/// SSE events handed to a stream's body ahead of what the caller has read.
const STREAM_AHEAD: usize = 4;

/// The body of a [`McpService`] response: the whole JSON body at once, or, for a
/// `text/event-stream` response, each SSE event as the engine writes it. Dropping a
/// stream's body before its end cancels its request.
pub struct McpBody {
    inner: Inner,
}

enum Inner {
    Full(Option<Bytes>),
    Stream(StreamBody),
}

struct StreamBody {
    events: mpsc::Receiver<Bytes>,
    /// Asks the engine task for more once `events` runs dry.
    demand: mpsc::UnboundedSender<u64>,
    id: u64,
    asked: bool,
    /// Cancels the request if the body is dropped before its end.
    guard: Option<GoneGuard>,
}

impl McpBody {
    fn full(bytes: Bytes) -> Self {
        Self { inner: Inner::Full(Some(bytes)) }
    }
}

impl std::fmt::Debug for McpBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Inner::Full(b) => {
                f.debug_struct("McpBody").field("len", &b.as_ref().map_or(0, Bytes::len)).finish()
            }
            Inner::Stream(s) => f.debug_struct("McpBody").field("stream", &s.id).finish(),
        }
    }
}

impl Body for McpBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().inner {
            Inner::Full(bytes) => {
                Poll::Ready(bytes.take().filter(|b| !b.is_empty()).map(|b| Ok(http_body::Frame::data(b))))
            }
            Inner::Stream(s) => match s.events.poll_recv(cx) {
                Poll::Ready(Some(event)) => {
                    s.asked = false;
                    Poll::Ready(Some(Ok(http_body::Frame::data(event))))
                }
                Poll::Ready(None) => {
                    // The engine ended the stream: nothing to cancel.
                    if let Some(guard) = s.guard.take() {
                        guard.disarm();
                    }
                    Poll::Ready(None)
                }
                Poll::Pending => {
                    if !s.asked {
                        s.asked = true;
                        let _ = s.demand.send(s.id);
                    }
                    Poll::Pending
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(&self.inner, Inner::Full(None))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match &self.inner {
            Inner::Full(b) => http_body::SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Inner::Stream(_) => http_body::SizeHint::default(),
        }
    }
}

/// The head of an engine response as an [`http::Response`].
fn to_http(head: &mcp_engine::http::ResponseHead, body: McpBody) -> Response<McpBody> {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(head.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in head.headers() {
        match (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
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
    /// Until the head is decided.
    reply: Option<oneshot::Sender<Response<McpBody>>>,
    /// A stream's events, once its head was sent.
    events: Option<mpsc::Sender<Bytes>>,
}

/// The engine task of a [`McpService`]: the engine, and the calls it works on.
struct EngineTask<H, A> {
    host: Host<H, A>,
    live: HashMap<ConnId, Live>,
    by_id: HashMap<u64, ConnId>,
    gone: mpsc::UnboundedSender<u64>,
    demand: mpsc::UnboundedSender<u64>,
}

async fn run<H: Handler, A: Authorizer>(
    mut task: EngineTask<H, A>,
    mut requests: mpsc::Receiver<Exchange>,
    mut gone: mpsc::UnboundedReceiver<u64>,
    mut demand: mpsc::UnboundedReceiver<u64>,
    mut done: mpsc::UnboundedReceiver<Completion>,
    mut decisions: mpsc::UnboundedReceiver<Decided>,
) {
    let mut open = true;
    let mut scratch = Vec::new();
    tracing::debug!("serving HTTP requests from a tower service");
    loop {
        task.pump(&mut scratch);
        if !open && task.live.is_empty() {
            tracing::debug!("every service handle is gone; stopping");
            return;
        }
        let timer = task.host.next_timeout();
        tokio::select! {
            biased;
            Some(completion) = done.recv() => task.host.complete(completion),
            Some(decided) = decisions.recv() => task.host.decided(decided),
            notice = task.host.notice() => task.host.noticed(notice),
            Some(id) = gone.recv() => task.gone(id),
            // Room in a stream's body: the next pump moves more.
            Some(_) = demand.recv() => {}
            exchange = requests.recv(), if open && task.host.room() => match exchange {
                Some(exchange) => task.start(exchange),
                None => open = false,
            },
            () = tokio::time::sleep_until(timer.unwrap_or_else(tokio::time::Instant::now)), if timer.is_some() => {
                task.host.handle_timeout();
            }
        }
    }
}

impl<H: Handler, A: Authorizer> EngineTask<H, A> {
    /// Gives one request to the engine.
    fn start(&mut self, exchange: Exchange) {
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
        let endpoint = self.host.engine.http_config().endpoint_path();
        let bare = path.split('?').next().unwrap_or(path);
        if bare != endpoint && !bare.starts_with("/.well-known/") {
            // Answered 404: a mount that does not strip (or strips) what the endpoint expects.
            tracing::debug!(
                path = bare,
                endpoint,
                "a request for a path that is not the endpoint (404): with axum's nest_service, \
                 configure HttpConfig::endpoint(\"/\")"
            );
        }
        let now = self.host.now();
        self.host.received(now);
        match self.host.engine.handle_request(now, peer, parts.method.as_str(), path, &headers, &body) {
            Ok(conn) => {
                self.live.insert(conn, Live { id, reply: Some(reply), events: None });
                self.by_id.insert(id, conn);
            }
            Err(e) => {
                tracing::warn!(%e, "request refused");
                let _ = reply.send(plain(StatusCode::SERVICE_UNAVAILABLE));
            }
        }
    }

    /// The caller of `id` dropped its call or its stream: cancel what is left.
    fn gone(&mut self, id: u64) {
        if let Some(conn) = self.by_id.remove(&id) {
            tracing::debug!(?conn, "the caller went away: cancelling");
            self.live.remove(&conn);
            self.host.closed(conn);
        }
    }

    /// Ends the exchange `conn` (its response is complete, or its caller is gone).
    fn finish(&mut self, conn: ConnId) {
        if let Some(l) = self.live.remove(&conn) {
            self.by_id.remove(&l.id);
        }
        self.host.closed(conn);
    }

    /// Runs the engine until it rests, handing each response head and each stream's
    /// events to its caller.
    fn pump(&mut self, scratch: &mut Vec<ConnId>) {
        loop {
            let mut progress = self.host.deliver_deferred();
            progress |= self.host.drain();
            while let Some(conn) = self.host.engine.poll_ended() {
                // A stream the engine ended (a listener dropped for not reading).
                progress = true;
                self.finish(conn);
            }
            scratch.clear();
            scratch.extend(self.live.keys().copied());
            for &conn in scratch.iter() {
                progress |= self.forward(conn);
            }
            if !progress {
                break;
            }
        }
    }

    /// Moves what the engine has for `conn` to its caller. Returns whether anything moved.
    fn forward(&mut self, conn: ConnId) -> bool {
        let Some(live) = self.live.get_mut(&conn) else { return false };
        let Some(r) = self.host.engine.response(conn) else { return false };
        let mut progress = false;
        if let Some(reply) = live.reply.take() {
            progress = true;
            if !r.head.stream {
                tracing::trace!(?conn, status = r.status, "answered");
                let _ = reply.send(to_http(r.head, McpBody::full(Bytes::copy_from_slice(r.body))));
                self.finish(conn);
                return true;
            }
            let (tx, rx) = mpsc::channel(STREAM_AHEAD);
            let guard = GoneGuard { id: live.id, tx: Some(self.gone.clone()) };
            let body = StreamBody {
                events: rx,
                demand: self.demand.clone(),
                id: live.id,
                asked: false,
                guard: Some(guard),
            };
            tracing::trace!(?conn, "streaming");
            if reply.send(to_http(r.head, McpBody { inner: Inner::Stream(body) })).is_err() {
                // The caller went away before the head: its body's guard cancels.
                return true;
            }
            live.events = Some(tx);
        }
        let Some(events) = live.events.as_ref() else { return progress };
        let Some(r) = self.host.engine.response(conn) else { return progress };
        if !r.body.is_empty() {
            let n = r.body.len();
            match events.try_send(Bytes::copy_from_slice(r.body)) {
                Ok(()) => {
                    self.host.engine.consume_output(conn, n);
                    progress = true;
                }
                // The caller reads slowly: more once it asks.
                Err(mpsc::error::TrySendError::Full(_)) => return progress,
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.finish(conn);
                    return true;
                }
            }
        }
        if let Some(r) = self.host.engine.response(conn)
            && r.complete
            && r.body.is_empty()
        {
            // The stream is over: dropping its sender ends the body.
            self.finish(conn);
            progress = true;
        }
        progress
    }
}
