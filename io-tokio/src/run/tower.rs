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
use tokio::sync::mpsc;
use tower::Service;

use crate::auth::Authorizer;
use crate::host::channel::Completion;
use crate::host::handler::Handler;
use crate::run::http::HttpServer;
use crate::run::owner::{Decided, Owner};

/// Requests waiting for the engine task, all callers together.
const REQUEST_QUEUE: usize = 64;

/// The Streamable HTTP endpoint as a tower [`Service`], to mount in axum (or any
/// tower-based server) at a path of the host's choosing. Feature `tower`.
///
/// The host's server does the HTTP connections; the service gives each request to the
/// engine as a server's socket would, so every rule of the engine applies to it exactly
/// as over [`serve_http`](crate::serve_http): methods, `Host` and `Origin` checks,
/// authorization, mirrored headers, the body cap and the body deadline. One task owns
/// the engine and runs the handlers, as for `serve_http`; the service is a cheap
/// [`Clone`] handle to it.
///
/// Each call gives the engine the request's head first
/// ([`HttpEngine::handle_request_head`]): a refusal decided on the head is answered
/// before any body byte is read (a `Content-Length` over the body cap is `413` at once),
/// and under [`Authorization::Host`](mcp_engine::http::Authorization::Host) the head is
/// authorized before the body is read. Then the body goes to the engine frame by frame as
/// it arrives, each piece no more than the engine takes
/// ([`HttpEngine::input_capacity`]): its cap applies as it comes (a body without
/// `Content-Length` is given chunk-framed), and a caller that stops sending is answered
/// `408` at the engine's [`body_deadline`](mcp_engine::http::HttpConfig::body_deadline).
/// The call returns an [`http::Response`] with a [`McpBody`] once the response head is
/// decided (framing headers are left to the host's server, and so is `100 Continue`,
/// which hyper sends when the body is first read: after the head is allowed). Dropping
/// the call's future before it is answered cancels the request: its handler task is
/// aborted. At most [`HttpServer::max_in_flight`] requests are with the handler at once;
/// further calls wait their turn.
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
/// request carries it: axum's `ConnectInfo<SocketAddr>` (serve the router with
/// `into_make_service_with_connect_info::<SocketAddr>()`), or a [`SocketAddr`] extension
/// a middleware inserted. Every per-client bound (sessions, streams, rate limits) counts
/// a client without a principal by this address: without it, such clients have no share
/// of their own (they are bounded only by the global limits).
///
/// # Example
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use std::sync::Arc;
///
/// use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
/// use mcp_engine::{Catalog, Config, Tool};
/// use mcp_io_tokio::ToolReply;
/// use mcp_io_tokio::http::McpService;
/// use mcp_io_tokio::handler::tool_fn;
/// use mcp_io_tokio::http::AllowAll;
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
    /// Where the calls send their body's pieces.
    pieces: mpsc::UnboundedSender<Piece>,
    gone: mpsc::UnboundedSender<u64>,
    next_id: Arc<AtomicU64>,
    /// A body cap of the service's own, below the engine's (`HttpServer::max_body`).
    max_body: Option<usize>,
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
        let length = if body.is_end_stream() { Some(0) } else { body.size_hint().exact() };
        let cap = self.max_body.unwrap_or(usize::MAX);
        if length.is_some_and(|n| n > cap as u64) {
            // Over this service's own cap (see `HttpServer::max_body`), the body unread.
            return plain(StatusCode::PAYLOAD_TOO_LARGE);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (to_call, mut from_engine) = mpsc::unbounded_channel();
        let peer =
            parts.extensions.get::<SocketAddr>().copied().or_else(|| {
                parts.extensions.get::<axum::extract::ConnectInfo<SocketAddr>>().map(|info| info.0)
            });
        // From here on, dropping this future cancels the request.
        let guard = GoneGuard { id, tx: Some(self.gone.clone()) };
        if self.requests.send(Exchange { id, peer, parts, length, to_call }).await.is_err() {
            return plain(StatusCode::SERVICE_UNAVAILABLE);
        }
        let mut body = pin!(body);
        // What is left of the last frame, and how much the engine asked for.
        let mut spare: Option<B::Data> = None;
        let mut asked = 0;
        let mut sent = 0usize;
        loop {
            if asked > 0
                && let Some(data) = spare.as_mut().filter(|d| d.has_remaining())
            {
                // One piece of at most what the engine takes now.
                let n = data.remaining().min(asked);
                sent += n;
                if sent > cap {
                    return plain(StatusCode::PAYLOAD_TOO_LARGE);
                }
                asked = 0;
                let _ = self.pieces.send(Piece { id, data: Some(data.copy_to_bytes(n)) });
                continue;
            }
            let msg = if asked > 0 {
                tokio::select! {
                    biased;
                    msg = from_engine.recv() => msg,
                    frame = body.frame() => {
                        match frame {
                            Some(Ok(frame)) => spare = frame.into_data().ok(),
                            // Trailers are not kept; the end of the body is told.
                            None => {
                                asked = 0;
                                let _ = self.pieces.send(Piece { id, data: None });
                            }
                            // The caller's body failed: the request is cancelled (`guard`).
                            Some(Err(_)) => return plain(StatusCode::BAD_REQUEST),
                        }
                        continue;
                    }
                }
            } else {
                from_engine.recv().await
            };
            match msg {
                Some(ToCall::More(n)) => asked = n,
                Some(ToCall::Response(response)) => {
                    guard.disarm();
                    return response;
                }
                None => return plain(StatusCode::SERVICE_UNAVAILABLE),
            }
        }
    }
}

impl<H: Handler, A: Authorizer> HttpServer<H, A> {
    /// The endpoint as a tower service (feature `tower`): see [`McpService`]. Spawns the
    /// task owning the engine: must be called inside a tokio runtime.
    pub fn into_service(self) -> McpService {
        // The engine enforces its own cap; a lower one is the service's to enforce.
        let max_body = (self.max_body < self.engine.http_config().body_limit()).then_some(self.max_body);
        let (mut owner, done_rx, verdict_rx) = self.into_owner();
        // Other nodes' news: heard once the store listens (this cannot wait for it).
        owner.listen();
        let (requests, requests_rx) = mpsc::channel(REQUEST_QUEUE);
        let (pieces, pieces_rx) = mpsc::unbounded_channel();
        let (gone, gone_rx) = mpsc::unbounded_channel();
        let (demand, demand_rx) = mpsc::unbounded_channel();
        let task =
            EngineTask { owner, live: HashMap::new(), by_id: HashMap::new(), gone: gone.clone(), demand };
        let channels =
            Channels { requests: requests_rx, pieces: pieces_rx, gone: gone_rx, demand: demand_rx };
        tokio::spawn(run(task, channels, done_rx, verdict_rx));
        McpService { requests, pieces, gone, next_id: Arc::new(AtomicU64::new(0)), max_body }
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

/// A request's head on its way to the engine task.
struct Exchange {
    id: u64,
    peer: Option<SocketAddr>,
    parts: http::request::Parts,
    /// The body's length, if known (else it is given to the engine chunk-framed).
    length: Option<u64>,
    /// Where the engine task talks to the call.
    to_call: mpsc::UnboundedSender<ToCall>,
}

/// What the engine task tells a call.
enum ToCall {
    /// Send one piece of the body, of at most this many bytes (or its end).
    More(usize),
    /// The response: its head is decided.
    Response(Response<McpBody>),
}

/// A piece of call `id`'s body (`None`: the body ended), sent when the engine task asked
/// for it.
struct Piece {
    id: u64,
    data: Option<Bytes>,
}

/// The most body bytes one piece carries.
const PIECE_MAX: usize = 64 * 1024;

/// What chunk framing adds to a piece at most (its size in hex, two CRLFs).
const CHUNK_FRAMING: usize = 32;

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
    /// Until the head is decided: where the call hears from the engine task.
    to_call: Option<mpsc::UnboundedSender<ToCall>>,
    /// A stream's events, once its head was sent.
    events: Option<mpsc::Sender<Bytes>>,
    /// The body's bytes still to come (`None`: it comes chunk-framed, until its end).
    left: Option<u64>,
    /// The whole body was given to the engine.
    body_done: bool,
    /// A piece was asked for and has not come.
    asked: bool,
    /// Body bytes given and not taken by the engine: offered first (not used while the
    /// engine keeps its word, as each piece is no more than it takes).
    held: Vec<u8>,
}

/// The engine task of a [`McpService`]: the engine, and the calls it works on.
struct EngineTask<H, A> {
    owner: Owner<H, A>,
    live: HashMap<ConnId, Live>,
    by_id: HashMap<u64, ConnId>,
    gone: mpsc::UnboundedSender<u64>,
    demand: mpsc::UnboundedSender<u64>,
}

/// What the calls send the engine task.
struct Channels {
    requests: mpsc::Receiver<Exchange>,
    pieces: mpsc::UnboundedReceiver<Piece>,
    gone: mpsc::UnboundedReceiver<u64>,
    demand: mpsc::UnboundedReceiver<u64>,
}

async fn run<H: Handler, A: Authorizer>(
    mut task: EngineTask<H, A>,
    channels: Channels,
    mut done: mpsc::UnboundedReceiver<Completion>,
    mut decisions: mpsc::UnboundedReceiver<Decided>,
) {
    let Channels { mut requests, mut pieces, mut gone, mut demand } = channels;
    let mut open = true;
    let mut scratch = Vec::new();
    tracing::debug!("serving HTTP requests from a tower service");
    loop {
        task.pump(&mut scratch);
        if !open && task.live.is_empty() {
            tracing::debug!("every service handle is gone; stopping");
            return;
        }
        let timer = task.owner.next_timeout();
        tokio::select! {
            biased;
            Some(completion) = done.recv() => task.owner.complete(completion),
            Some(decided) = decisions.recv() => task.owner.decided(decided),
            notice = task.owner.notice() => task.owner.noticed(notice),
            Some(id) = gone.recv() => task.gone(id),
            Some(piece) = pieces.recv() => task.piece(piece),
            // Room in a stream's body: the next pump moves more.
            Some(_) = demand.recv() => {}
            exchange = requests.recv(), if open && task.owner.room() => match exchange {
                Some(exchange) => task.start(exchange),
                None => open = false,
            },
            () = tokio::time::sleep_until(timer.unwrap_or_else(tokio::time::Instant::now)), if timer.is_some() => {
                task.owner.handle_timeout();
            }
        }
    }
}

impl<H: Handler, A: Authorizer> EngineTask<H, A> {
    /// Gives one request's head to the engine.
    fn start(&mut self, exchange: Exchange) {
        let Exchange { id, peer, parts, length, to_call } = exchange;
        if to_call.is_closed() {
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
        let endpoint = self.owner.engine.http_config().endpoint_path();
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
        let now = self.owner.now();
        self.owner.received(now);
        let method = parts.method.as_str();
        match self.owner.engine.handle_request_head(now, peer, method, path, &headers, length) {
            Ok(conn) => {
                let live = Live {
                    id,
                    to_call: Some(to_call),
                    events: None,
                    left: length,
                    body_done: length == Some(0),
                    asked: false,
                    held: Vec::new(),
                };
                self.live.insert(conn, live);
                self.by_id.insert(id, conn);
            }
            Err(e) => {
                tracing::warn!(%e, "request refused");
                let _ = to_call.send(ToCall::Response(plain(StatusCode::SERVICE_UNAVAILABLE)));
            }
        }
    }

    /// Gives a piece of a call's body to the engine (chunk-framed for a body of unknown
    /// length).
    fn piece(&mut self, piece: Piece) {
        let Some(&conn) = self.by_id.get(&piece.id) else { return };
        let Some(live) = self.live.get_mut(&conn) else { return };
        live.asked = false;
        if live.body_done || live.to_call.is_none() {
            return; // the body is complete, or the response went out already
        }
        let now = self.owner.now();
        self.owner.received(now);
        let engine = &mut self.owner.engine;
        match (piece.data, live.left) {
            (Some(data), Some(left)) => {
                let n = (data.len() as u64).min(left);
                live.left = Some(left - n);
                live.body_done = left == n;
                give(engine, now, conn, &mut live.held, &data[..n as usize]);
            }
            (Some(data), None) => {
                let mut size = [0u8; 18];
                let size = chunk_size(&mut size, data.len());
                for part in [size, &data[..], b"\r\n"] {
                    give(engine, now, conn, &mut live.held, part);
                }
            }
            (None, None) => {
                live.body_done = true;
                give(engine, now, conn, &mut live.held, b"0\r\n\r\n");
            }
            (None, Some(_)) => {
                // Shorter than its length said: never to be complete.
                tracing::debug!(?conn, "a request body ended short of its length");
                if let Some(to_call) = live.to_call.take() {
                    let _ = to_call.send(ToCall::Response(plain(StatusCode::BAD_REQUEST)));
                }
                self.finish(conn);
            }
        }
    }

    /// Asks call `conn` for the next piece of its body, when the engine takes one now
    /// (its head decided and allowed, and no piece on its way). Returns whether it asked.
    fn ask_body(&mut self, conn: ConnId) -> bool {
        let Some(live) = self.live.get_mut(&conn) else { return false };
        if live.asked || live.body_done || !live.held.is_empty() {
            return false;
        }
        let Some(to_call) = live.to_call.as_ref() else { return false };
        let room = self.owner.engine.input_capacity(conn);
        let n = match live.left {
            Some(left) => room.min(usize::try_from(left).unwrap_or(usize::MAX)),
            None => room.saturating_sub(CHUNK_FRAMING).max(room.min(1)),
        };
        if n == 0 {
            return false;
        }
        live.asked = true;
        let _ = to_call.send(ToCall::More(n.min(PIECE_MAX)));
        true
    }

    /// The caller of `id` dropped its call or its stream: cancel what is left.
    fn gone(&mut self, id: u64) {
        if let Some(conn) = self.by_id.remove(&id) {
            tracing::debug!(?conn, "the caller went away: cancelling");
            self.live.remove(&conn);
            self.owner.closed(conn);
        }
    }

    /// Ends the exchange `conn` (its response is complete, or its caller is gone).
    fn finish(&mut self, conn: ConnId) {
        if let Some(l) = self.live.remove(&conn) {
            self.by_id.remove(&l.id);
        }
        self.owner.closed(conn);
    }

    /// Runs the engine until it rests, handing each response head and each stream's
    /// events to its caller, and asking the calls for their body as the engine takes it.
    fn pump(&mut self, scratch: &mut Vec<ConnId>) {
        loop {
            let mut progress = self.owner.deliver_deferred();
            progress |= self.owner.drain();
            // Every exchange is looked at below: the heads decided need no list.
            scratch.clear();
            self.owner.take_decided(scratch);
            while let Some(conn) = self.owner.engine.poll_ended() {
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

    /// Moves what the engine has for `conn` to its caller: the body's next piece asked
    /// for, then the response head and the stream's events. Returns whether anything
    /// moved.
    fn forward(&mut self, conn: ConnId) -> bool {
        let Some(live) = self.live.get_mut(&conn) else { return false };
        let mut progress = false;
        if !live.held.is_empty() {
            let now = self.owner.now();
            let n = self.owner.engine.handle_input(now, conn, &live.held);
            live.held.drain(..n);
            progress |= n > 0;
        }
        let Some(r) = self.owner.engine.response(conn) else { return progress | self.ask_body(conn) };
        if let Some(reply) = live.to_call.take() {
            progress = true;
            if !r.head.stream {
                tracing::trace!(?conn, status = r.status, "answered");
                let full = McpBody::full(Bytes::copy_from_slice(r.body));
                let _ = reply.send(ToCall::Response(to_http(r.head, full)));
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
            let response = to_http(r.head, McpBody { inner: Inner::Stream(body) });
            if reply.send(ToCall::Response(response)).is_err() {
                // The caller went away before the head: its body's guard cancels.
                return true;
            }
            live.events = Some(tx);
        }
        let Some(events) = live.events.as_ref() else { return progress };
        let Some(r) = self.owner.engine.response(conn) else { return progress };
        if !r.body.is_empty() {
            let n = r.body.len();
            match events.try_send(Bytes::copy_from_slice(r.body)) {
                Ok(()) => {
                    self.owner.engine.consume_output(conn, n);
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
        if let Some(r) = self.owner.engine.response(conn)
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

/// Gives `data` to the engine on `conn`, after what it holds; what the engine does not
/// take is held (not reached while each piece is no more than the engine takes).
fn give(engine: &mut HttpEngine, now: mcp_engine::Instant, conn: ConnId, held: &mut Vec<u8>, data: &[u8]) {
    if held.is_empty() {
        let n = engine.handle_input(now, conn, data);
        held.extend_from_slice(&data[n..]);
    } else {
        held.extend_from_slice(data);
    }
}

/// The chunk-size line of a chunk of `len` bytes (`1a2b\r\n`), written into `buf`.
fn chunk_size(buf: &mut [u8; 18], len: usize) -> &[u8] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut at = 16;
    let mut n = len;
    loop {
        at -= 1;
        buf[at] = HEX[n & 0xf];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    buf[16] = b'\r';
    buf[17] = b'\n';
    &buf[at..]
}
