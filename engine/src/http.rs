//! Streamable HTTP (MCP 2026-07-28, stateless) served by the engine: HTTP/1.1 framing,
//! the refusal rules, header mirroring, and routing of answers to connections.
//!
//! [`HttpEngine`] is the HTTP counterpart of [`Engine`](crate::Engine): the same catalog,
//! validation and events, many connections. The adapter accepts TCP connections, calls
//! [`HttpEngine::open`], feeds each connection's bytes to [`HttpEngine::handle_input`],
//! writes [`HttpEngine::pending_output`] back, and closes a connection when
//! [`HttpEngine::wants_close`] says so once its output is written.

use core::fmt;
use core::net::SocketAddr;
use core::time::Duration;

use crate::catalog::Catalog;
use crate::content::{PromptOutput, ResourceContents, ToolOutput};
use crate::engine::{Config, Core, Event, Mode, Route, Ticket, new_core};
use crate::error::{AnswerError, HostError};
use crate::http1::{self, Input};
use crate::time::Instant;

/// Which `Origin` headers are accepted. There is no default: a server must say.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllowedOrigins {
    /// Any origin, or none. Choose it deliberately: browsers on other sites can then call
    /// a server they can reach (the specification's DNS-rebinding warning).
    Any,
    /// Only these origins (compared exactly, e.g. `https://app.example.com`); requests
    /// without an `Origin` header (non-browser clients) are accepted.
    List(Vec<String>),
}

/// Who decides whether a request may proceed. There is no default: a server must say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Authorization {
    /// The host decides on every request, from its head and peer, before the body is
    /// read: the engine emits [`HttpEvent::Authorize`] and waits for
    /// [`HttpEngine::authorize`].
    Host,
    /// Every caller may call every tool. Choose it deliberately.
    Everyone,
}

/// The host's decision on a request ([`HttpEngine::authorize`],
/// [`HttpEngine::authorize_body`]). Reasons are the host's to log: the caller learns only
/// the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Proceed.
    Allow,
    /// Proceed, acting for this principal: the engine binds the `requestState` it issues
    /// to it, so another principal cannot replay the state (`-32602`).
    AllowAs(Principal),
    /// `401 Unauthorized` (no or bad credentials).
    Unauthenticated,
    /// `403 Forbidden` (credentials that may not do this).
    Forbidden,
    /// `500 Internal Server Error`: the hook itself failed.
    Failed,
}

impl Verdict {
    /// Whether the request may proceed.
    pub fn allows(self) -> bool {
        matches!(self, Self::Allow | Self::AllowAs(_))
    }

    fn principal(self) -> Option<Principal> {
        match self {
            Self::AllowAs(p) => Some(p),
            _ => None,
        }
    }
}

/// Who a request acts for, as the host's authorization established it: a SHA-256 digest
/// of the host's identifier (a user id, a token subject), so the engine keeps 32 bytes
/// and never the identifier itself.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Principal(pub(crate) [u8; 32]);

impl Principal {
    /// The principal the host identifies as `id`.
    pub fn of(id: &[u8]) -> Self {
        use sha2::Digest as _;
        Self(sha2::Sha256::digest(id).into())
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Principal({:02x}{:02x}{:02x}{:02x}..)", self.0[0], self.0[1], self.0[2], self.0[3])
    }
}

/// Streamable HTTP settings.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    endpoint: String,
    origins: AllowedOrigins,
    authorization: Authorization,
    authorize_body: bool,
    loopback: bool,
    max_body: usize,
    body_deadline: Duration,
    max_head: usize,
    max_connections: usize,
    sse_keepalive: Duration,
}

impl HttpConfig {
    /// Settings with the two choices that have no default.
    pub fn new(origins: AllowedOrigins, authorization: Authorization) -> Self {
        Self {
            endpoint: "/mcp".to_owned(),
            origins,
            authorization,
            authorize_body: false,
            loopback: true,
            max_body: 1 << 20,
            body_deadline: Duration::from_secs(15),
            max_head: 16 * 1024,
            max_connections: 1024,
            sse_keepalive: Duration::from_secs(15),
        }
    }
    /// The endpoint path (default `/mcp`). Other paths are answered `404`.
    pub fn endpoint(&mut self, path: impl Into<String>) -> &mut Self {
        self.endpoint = path.into();
        self
    }
    /// Whether the host also sees each body, exactly as received and before it is decoded
    /// ([`HttpEvent::AuthorizeBody`]); default off.
    pub fn authorize_body(&mut self, on: bool) -> &mut Self {
        self.authorize_body = on;
        self
    }
    /// Whether the server listens on loopback only, in which case the `Host` header must
    /// name `localhost`, `127.0.0.1` or `[::1]` (any port): DNS-rebinding protection.
    /// Default on; turn it off for a server reachable under other names.
    pub fn loopback(&mut self, on: bool) -> &mut Self {
        self.loopback = on;
        self
    }
    /// The largest body accepted (default 1 MiB). A larger declared body is refused `413`
    /// before any of it is read; a chunked body is refused as soon as it passes the cap.
    pub fn max_body(&mut self, bytes: usize) -> &mut Self {
        self.max_body = bytes.max(1);
        self
    }
    /// How long a client may take to send a whole body once its head arrived (default
    /// 15 s). Past it the request is answered `408` and the connection ends.
    pub fn body_deadline(&mut self, d: Duration) -> &mut Self {
        self.body_deadline = d;
        self
    }
    /// The largest request head (default 16 KiB): `431` past it.
    pub fn max_head(&mut self, bytes: usize) -> &mut Self {
        self.max_head = bytes.max(256);
        self
    }
    /// The endpoint path.
    pub fn endpoint_path(&self) -> &str {
        &self.endpoint
    }
    /// The body cap.
    pub fn body_limit(&self) -> usize {
        self.max_body
    }
    /// Most connections open at once (default 1024). [`HttpEngine::open`] refuses more.
    pub fn max_connections(&mut self, n: usize) -> &mut Self {
        self.max_connections = n.max(1);
        self
    }
    /// How long a `subscriptions/listen` stream may stay silent before the engine writes
    /// an SSE comment (`:`) on it, so that proxies and clients do not take it for dead
    /// (default 15 s; zero turns the comments off).
    pub fn sse_keepalive(&mut self, every: Duration) -> &mut Self {
        self.sse_keepalive = every;
        self
    }
}

/// A response read back with [`HttpEngine::response`].
#[derive(Debug, Clone, Copy)]
pub struct Response<'a> {
    /// The status code.
    pub status: u16,
    headers: [(&'a str, &'a [u8]); 16],
    len: usize,
    /// The body.
    pub body: &'a [u8],
}

impl<'a> Response<'a> {
    /// The headers, framing headers (`content-length`, `connection`) included.
    pub fn headers(&self) -> &[(&'a str, &'a [u8])] {
        &self.headers[..self.len]
    }
}

/// A connection of an [`HttpEngine`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnId {
    slot: u32,
    generation: u32,
}

/// The headers of a request head, parsed with httparse into a fixed array.
pub struct HeaderList<'a> {
    headers: [httparse::Header<'a>; MAX_HEADERS],
    len: usize,
}

impl<'a> HeaderList<'a> {
    fn parse(head: &'a [u8]) -> Self {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        // The head was parsed once already, so this succeeds; a failure just yields none.
        let ok = matches!(req.parse(head), Ok(httparse::Status::Complete(_)));
        let len = if ok { req.headers.len() } else { 0 };
        Self { headers, len }
    }
    /// The headers where the codec found them (`spans`, from [`http1::Conn`]), without
    /// parsing the head again.
    fn from_spans(head: &'a [u8], spans: &[[u32; 4]]) -> Self {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut len = 0;
        for (slot, &[ns, ne, vs, ve]) in headers.iter_mut().zip(spans) {
            let name = head.get(ns as usize..ne as usize).and_then(|n| core::str::from_utf8(n).ok());
            let value = head.get(vs as usize..ve as usize);
            let (Some(name), Some(value)) = (name, value) else { break };
            *slot = httparse::Header { name, value };
            len += 1;
        }
        Self { headers, len }
    }
    /// The headers, in order, repeated ones included.
    pub fn as_slice(&self) -> &[httparse::Header<'a>] {
        &self.headers[..self.len]
    }
    /// The first value of header `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.as_slice().iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    }
}

impl fmt::Debug for HeaderList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice().iter().map(|h| h.name)).finish()
    }
}

/// Output a connection may hold unsent before its next pipelined request is parsed.
const MAX_UNSENT: usize = 64 * 1024;

/// Most headers a request may carry (`431` past it).
pub const MAX_HEADERS: usize = 64;

/// A request the host authorizes before its body is read ([`HttpEvent::Authorize`]).
#[non_exhaustive]
pub struct AuthorizeRequest<'a> {
    /// The connection: pass it to [`HttpEngine::authorize`].
    pub conn: ConnId,
    /// The peer's address, as given to [`HttpEngine::open`].
    pub peer: Option<SocketAddr>,
    /// The request's headers.
    pub headers: HeaderList<'a>,
}

impl fmt::Debug for AuthorizeRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizeRequest")
            .field("conn", &self.conn)
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

/// A body the host checks before it is decoded ([`HttpEvent::AuthorizeBody`]).
#[non_exhaustive]
pub struct AuthorizeBody<'a> {
    /// The connection: pass it to [`HttpEngine::authorize_body`].
    pub conn: ConnId,
    /// The peer's address.
    pub peer: Option<SocketAddr>,
    /// The request's headers.
    pub headers: HeaderList<'a>,
    /// The body exactly as received (de-chunked, never re-encoded): a signature over it
    /// can be checked.
    pub body: &'a [u8],
}

impl fmt::Debug for AuthorizeBody<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizeBody")
            .field("conn", &self.conn)
            .field("len", &self.body.len())
            .finish_non_exhaustive()
    }
}

/// Work for the host from an [`HttpEngine`].
#[derive(Debug)]
#[non_exhaustive]
pub enum HttpEvent<'a> {
    /// An MCP request or cancellation, exactly as over stdio.
    Mcp(Event<'a>),
    /// Decide whether this request may proceed; answer with [`HttpEngine::authorize`].
    Authorize(AuthorizeRequest<'a>),
    /// Decide on this body; answer with [`HttpEngine::authorize_body`].
    AuthorizeBody(AuthorizeBody<'a>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request head.
    Head,
    /// The host decides on the head.
    Authorizing,
    /// Reading the body (deadline armed).
    Body,
    /// The host decides on the body.
    AuthorizingBody,
    /// The body is read and allowed; it waits for a free ticket slot to be dispatched.
    Ready,
    /// A ticket is outstanding; its answer is the response.
    Waiting,
    /// A final response was written; the connection closes once it is sent.
    Closing,
}

struct Conn {
    generation: u32,
    codec: http1::Conn,
    peer: Option<SocketAddr>,
    out: Vec<u8>,
    phase: Phase,
    /// Keep the connection after this request's response.
    keep_alive: bool,
    /// The client waits for `100 Continue` before it sends the body.
    expect_continue: bool,
    /// The request came as HTTP/1.0 (no chunked responses: no streams).
    http10: bool,
    /// The response is an SSE stream: its head and earlier events are written.
    streaming: bool,
    /// A listen stream that could not take its notifications: close it now.
    dropped: bool,
    /// The principal the host's authorization named for the current request.
    principal: Option<Principal>,
    /// A listen stream: when to write a keep-alive comment if nothing else is written.
    keepalive: Option<Instant>,
    deadline: Option<Instant>,
}

struct Slot {
    generation: u32,
    conn: Option<Conn>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    Head(u32),
    Body(u32),
}

/// The Streamable HTTP server state machine: many connections, one catalog.
///
/// The call order is the one of [`Engine`](crate::Engine): after every input or
/// command, drain [`poll_event`](Self::poll_event), then write every connection's
/// [`pending_output`](Self::pending_output), then close the connections
/// [`wants_close`](Self::wants_close) names, and arm a timer for
/// [`poll_timeout`](Self::poll_timeout).
///
/// Requests on one connection are served one at a time, in order (HTTP/1.1 pipelining):
/// the next request is parsed once the previous response is in the connection's output,
/// and not while that output holds 64 KiB or more unsent. While every ticket slot is busy
/// ([`Config::max_in_flight`](crate::Config::max_in_flight)), a request that was read
/// waits for a slot before it is dispatched, and its connection reads nothing more.
///
/// Each request (head and body) must arrive within [`HttpConfig::body_deadline`] of its
/// first byte, or it is answered `408` and the connection ends. An idle keep-alive
/// connection has no timer here: closing idle connections is the adapter's choice.
pub struct HttpEngine {
    http: HttpConfig,
    core: Core,
    parser: crate::engine::Parser,
    slots: Vec<Slot>,
    open: usize,
    asks: std::collections::VecDeque<Ask>,
    work: std::collections::VecDeque<u32>,
    /// A request waits for a ticket slot: when one frees, every ready connection is retried.
    blocked: bool,
    last_now: Instant,
}

impl fmt::Debug for HttpEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEngine")
            .field("open", &self.open)
            .field("in_flight", &self.core.st.in_flight)
            .finish()
    }
}

/// Why [`HttpEngine::open`] refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenError {
    /// [`HttpConfig::max_connections`] connections are open.
    TooManyConnections,
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("too many open connections")
    }
}

impl std::error::Error for OpenError {}

impl HttpEngine {
    /// A new engine serving `catalog` over Streamable HTTP.
    pub fn new(cfg: Config, http: HttpConfig, catalog: Catalog) -> Self {
        let max_len = http.max_body.max(cfg.frame_limit()) + 2;
        let depth = cfg.depth_limit();
        Self {
            parser: crate::engine::Parser::new(max_len, depth),
            core: new_core(cfg, catalog, Mode::Http),
            http,
            slots: Vec::new(),
            open: 0,
            asks: std::collections::VecDeque::new(),
            work: std::collections::VecDeque::new(),
            blocked: false,
            last_now: Instant::ZERO,
        }
    }

    /// The catalog being served.
    pub fn catalog(&self) -> &Catalog {
        &self.core.catalog
    }

    /// The engine settings.
    pub fn config(&self) -> &Config {
        &self.core.cfg
    }

    /// The HTTP settings.
    pub fn http_config(&self) -> &HttpConfig {
        &self.http
    }

    /// Tickets handed out and not yet answered or cancelled.
    pub fn in_flight(&self) -> usize {
        self.core.st.in_flight
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        self.open
    }

    /// A new connection from `peer`.
    pub fn open(&mut self, now: Instant, peer: Option<SocketAddr>) -> Result<ConnId, OpenError> {
        self.tick(now);
        if self.open >= self.http.max_connections {
            return Err(OpenError::TooManyConnections);
        }
        let limits = http1::Limits {
            max_head_bytes: self.http.max_head,
            max_headers: MAX_HEADERS,
            max_body_bytes: self.http.max_body,
        };
        let conn = Conn {
            generation: 0,
            codec: http1::Conn::new(limits),
            peer,
            out: Vec::new(),
            phase: Phase::Head,
            keep_alive: true,
            expect_continue: false,
            http10: false,
            streaming: false,
            dropped: false,
            principal: None,
            keepalive: None,
            deadline: None,
        };
        let slot = match self.slots.iter().position(|s| s.conn.is_none()) {
            Some(i) => i,
            None => {
                self.slots.push(Slot { generation: 0, conn: None });
                self.slots.len() - 1
            }
        };
        let s = &mut self.slots[slot];
        s.generation = s.generation.wrapping_add(1);
        s.conn = Some(Conn { generation: s.generation, ..conn });
        self.open += 1;
        Ok(ConnId { slot: slot as u32, generation: s.generation })
    }

    fn conn(&self, id: ConnId) -> Option<&Conn> {
        self.slots.get(id.slot as usize)?.conn.as_ref().filter(|c| c.generation == id.generation)
    }

    fn conn_mut(&mut self, id: ConnId) -> Option<&mut Conn> {
        self.slots.get_mut(id.slot as usize)?.conn.as_mut().filter(|c| c.generation == id.generation)
    }

    fn tick(&mut self, now: Instant) {
        if now > self.last_now {
            self.last_now = now;
        }
        self.core.st.now = self.last_now.as_micros();
        self.core.release();
        self.collect_answers();
    }

    /// Feeds bytes received on `conn`; returns how many were taken (the rest waits until
    /// the connection's current request is answered).
    pub fn handle_input(&mut self, now: Instant, conn: ConnId, data: &[u8]) -> usize {
        self.tick(now);
        let deadline = self.last_now + self.http.body_deadline;
        let Some(c) = self.conn_mut(conn) else { return 0 };
        if c.phase == Phase::Closing {
            return data.len(); // refused already: what follows is dropped unread
        }
        let n = c.codec.handle_bytes(data);
        if c.phase == Phase::Head && n > 0 && c.deadline.is_none() {
            // The whole request (head and body) must arrive within the deadline.
            c.deadline = Some(deadline);
        }
        self.work.push_back(conn.slot);
        self.process();
        n
    }

    /// Says the peer closed `conn` (or it failed). Its outstanding ticket is cancelled:
    /// closing a response stream is cancellation. Forget `conn` afterwards.
    pub fn handle_closed(&mut self, now: Instant, conn: ConnId) {
        self.tick(now);
        if self.conn(conn).is_none() {
            return;
        }
        self.core.cancel_route(Route::Http { conn: conn.slot, generation: conn.generation });
        self.asks.retain(|a| !matches!(a, Ask::Head(s) | Ask::Body(s) if *s == conn.slot));
        let s = &mut self.slots[conn.slot as usize];
        s.conn = None;
        self.open -= 1;
        self.process();
    }

    /// Serves a request that was already parsed elsewhere (a hyper or axum host): every
    /// rule applies to it exactly as to bytes read off a socket, because the engine
    /// writes it out as an HTTP/1.1 request with `Content-Length` and `connection: close`
    /// and feeds it to a fresh connection. Give at most [`HttpConfig::max_body`] + 1 body
    /// bytes: a longer body is refused `413` at its declared length without being read.
    ///
    /// The answer is read with [`response`](Self::response); then forget the exchange
    /// with [`handle_closed`](Self::handle_closed) (which also cancels the request if the
    /// caller went away before it was answered).
    pub fn handle_request(
        &mut self,
        now: Instant,
        peer: Option<SocketAddr>,
        method: &str,
        path: &str,
        headers: &[(&str, &[u8])],
        body: &[u8],
    ) -> Result<ConnId, OpenError> {
        let conn = self.open(now, peer)?;
        let mut head = Vec::with_capacity(256);
        head.extend_from_slice(method.as_bytes());
        head.push(b' ');
        head.extend_from_slice(if path.is_empty() { b"/" } else { path.as_bytes() });
        head.extend_from_slice(b" HTTP/1.1\r\n");
        for (name, value) in headers {
            let framing = ["content-length", "transfer-encoding", "connection"];
            if framing.iter().any(|f| name.eq_ignore_ascii_case(f)) {
                continue;
            }
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(b": ");
            // A parsed header value holds no CR or LF; never let one split the head.
            head.extend(value.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(
            format!("content-length: {}\r\nconnection: close\r\n\r\n", body.len()).as_bytes(),
        );
        let taken = self.handle_input(now, conn, &head);
        if taken == head.len() {
            let mut rest = body;
            while !rest.is_empty() {
                let n = self.handle_input(now, conn, rest);
                if n == 0 {
                    break;
                }
                rest = &rest[n..];
            }
        }
        Ok(conn)
    }

    /// The complete response of an exchange started with
    /// [`handle_request`](Self::handle_request) (or of any connection whose output holds
    /// one), once it is written.
    pub fn response(&self, conn: ConnId) -> Option<Response<'_>> {
        let out = self.pending_output(conn);
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut resp = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(head_len)) = resp.parse(out) else { return None };
        let status = resp.code?;
        let mut list = [("", &b""[..]); 16];
        let mut len = 0;
        let mut body_len = 0;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                body_len = core::str::from_utf8(h.value).ok()?.trim().parse().ok()?;
            }
            list[len] = (h.name, h.value);
            len += 1;
        }
        let body = out.get(head_len..head_len + body_len)?;
        Some(Response { status, headers: list, len, body })
    }

    /// The bytes to send on `conn`.
    pub fn pending_output(&self, conn: ConnId) -> &[u8] {
        self.conn(conn).map_or(&[], |c| &c.out)
    }

    /// Marks `n` bytes of `conn`'s output as sent.
    pub fn consume_output(&mut self, conn: ConnId, n: usize) {
        let Some(c) = self.conn_mut(conn) else { return };
        let n = n.min(c.out.len());
        let was_full = c.out.len() >= MAX_UNSENT;
        c.out.drain(..n);
        if was_full && c.out.len() < MAX_UNSENT {
            self.work.push_back(conn.slot);
            self.process();
        }
    }

    /// Whether `conn` should be closed now: a response that ends the connection was
    /// written and sent.
    pub fn wants_close(&self, conn: ConnId) -> bool {
        self.conn(conn).is_some_and(|c| c.dropped || (c.phase == Phase::Closing && c.out.is_empty()))
    }

    /// Connections with output to send.
    pub fn writable(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            let c = s.conn.as_ref()?;
            (!c.out.is_empty()).then_some(ConnId { slot: i as u32, generation: c.generation })
        })
    }

    /// When [`handle_timeout`](Self::handle_timeout) should next be called: the earliest
    /// body deadline.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.slots
            .iter()
            .filter_map(|s| {
                let c = s.conn.as_ref()?;
                match c.phase {
                    Phase::Head | Phase::Body => c.deadline,
                    Phase::Waiting => c.keepalive,
                    _ => None,
                }
            })
            .min()
    }

    /// Expires body deadlines (each connection past its deadline is answered `408` and
    /// ends) and writes a keep-alive comment on each `subscriptions/listen` stream that
    /// has been silent for [`HttpConfig::sse_keepalive`].
    pub fn handle_timeout(&mut self, now: Instant) {
        self.tick(now);
        for i in 0..self.slots.len() {
            let Some(c) = self.slots[i].conn.as_mut() else { continue };
            if matches!(c.phase, Phase::Head | Phase::Body) && c.deadline.is_some_and(|d| d <= now) {
                c.deadline = None;
                refuse(c, 408, &[]);
            } else if c.phase == Phase::Waiting && c.keepalive.is_some_and(|k| k <= now) {
                http1::write_sse_comment(&mut c.out);
                c.keepalive = Some(now + self.http.sse_keepalive);
            }
        }
    }

    /// Answers an [`HttpEvent::Authorize`].
    pub fn authorize(&mut self, now: Instant, conn: ConnId, verdict: Verdict) {
        self.tick(now);
        let body_phase = self.http.body_deadline;
        let Some(c) = self.conn_mut(conn) else { return };
        if c.phase != Phase::Authorizing {
            return;
        }
        c.principal = verdict.principal();
        match verdict {
            Verdict::Allow | Verdict::AllowAs(_) => {
                // The deadline counts from the request's first byte; the host's time to
                // decide is not the client's fault, so it starts again for the body.
                start_body(c);
                c.deadline = Some(now + body_phase);
                self.work.push_back(conn.slot);
            }
            // Refused before the body is read: the connection ends.
            Verdict::Unauthenticated => refuse(c, 401, &[("www-authenticate", "Bearer")]),
            Verdict::Forbidden => refuse(c, 403, &[]),
            Verdict::Failed => refuse(c, 500, &[]),
        }
        self.process();
    }

    /// Answers an [`HttpEvent::AuthorizeBody`]. A refusal here keeps the connection: the
    /// body was read, so the next request can follow.
    pub fn authorize_body(&mut self, now: Instant, conn: ConnId, verdict: Verdict) {
        self.tick(now);
        let Some(c) = self.conn_mut(conn) else { return };
        if c.phase != Phase::AuthorizingBody {
            return;
        }
        if let Some(p) = verdict.principal() {
            c.principal = Some(p);
        }
        match verdict {
            Verdict::Allow | Verdict::AllowAs(_) => c.phase = Phase::Ready,
            Verdict::Unauthenticated => respond_empty(c, 401, &[("www-authenticate", "Bearer")]),
            Verdict::Forbidden => respond_empty(c, 403, &[]),
            Verdict::Failed => respond_empty(c, 500, &[]),
        }
        self.work.push_back(conn.slot);
        self.process();
    }

    /// The next piece of work for the host.
    pub fn poll_event(&mut self) -> Option<HttpEvent<'_>> {
        self.tick(self.last_now);
        self.process();
        if self.core.st.pending.is_some() || !self.core.st.cancels.is_empty() {
            return self.core.next_event().map(HttpEvent::Mcp);
        }
        let ask = self.asks.pop_front()?;
        let (Ask::Head(slot) | Ask::Body(slot)) = ask;
        let generation = self.slots[slot as usize].generation;
        let c = self.slots[slot as usize].conn.as_ref()?;
        let conn = ConnId { slot, generation };
        let head = c.codec.head_bytes();
        Some(match ask {
            Ask::Head(_) => HttpEvent::Authorize(AuthorizeRequest {
                conn,
                peer: c.peer,
                headers: HeaderList::parse(head),
            }),
            Ask::Body(_) => HttpEvent::AuthorizeBody(AuthorizeBody {
                conn,
                peer: c.peer,
                headers: HeaderList::parse(head),
                body: c.codec.body(),
            }),
        })
    }

    /// Answers a tool call (see [`Engine::answer_tool`](crate::Engine::answer_tool)).
    pub fn answer_tool<S: serde::Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        output: &ToolOutput<'_, S>,
    ) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answer_tool(ticket, output);
        self.collect_answers();
        self.process();
        r
    }

    /// Answers a resource read.
    pub fn answer_resource(
        &mut self,
        ticket: Ticket,
        contents: &[ResourceContents<'_>],
    ) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answer_resource(ticket, contents);
        self.collect_answers();
        self.process();
        r
    }

    /// Answers a prompt.
    pub fn answer_prompt(&mut self, ticket: Ticket, output: &PromptOutput<'_>) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answer_prompt(ticket, output);
        self.collect_answers();
        self.process();
        r
    }

    /// Sends `notifications/progress` for a ticket whose request carried
    /// `_meta.progressToken`: the response becomes an SSE stream that carries it before the
    /// result (see [`Engine::notify_progress`](crate::Engine::notify_progress)).
    pub fn notify_progress(
        &mut self,
        ticket: Ticket,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), crate::NotifyError> {
        self.tick(self.last_now);
        let r = self.core.notify_progress(ticket, progress, total, message);
        self.collect_answers();
        r
    }

    /// Answers a completion request (see
    /// [`Engine::answer_completion`](crate::Engine::answer_completion)).
    pub fn answer_completion(
        &mut self,
        ticket: Ticket,
        values: &[&str],
        total: Option<u64>,
        has_more: bool,
    ) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answer_completion(ticket, values, total, has_more);
        self.collect_answers();
        self.process();
        r
    }

    /// Sends `notifications/message` for a ticket (see
    /// [`Engine::notify_log`](crate::Engine::notify_log)); over HTTP the response becomes
    /// an SSE stream that carries it before the result.
    pub fn notify_log<S: serde::Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        level: crate::LogLevel,
        logger: Option<&str>,
        data: &S,
    ) -> Result<(), crate::NotifyError> {
        self.tick(self.last_now);
        let r = self.core.notify_log(ticket, level, logger, data);
        self.collect_answers();
        r
    }

    /// Answers a ticket with an error.
    pub fn answer_error(&mut self, ticket: Ticket, error: HostError<'_>) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answer_error(ticket, error);
        self.collect_answers();
        self.process();
        r
    }

    /// Answers a tool call, prompt or resource read with input requests (see
    /// [`crate::Engine::answer_input_required`]).
    pub fn answer_input_required(
        &mut self,
        ticket: Ticket,
        input: &crate::InputRequired<'_>,
    ) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answer_input_required(ticket, input);
        self.collect_answers();
        self.process();
        r
    }

    /// Replaces the catalog (see [`crate::Engine::replace_catalog`]); listen streams that
    /// asked for the changed lists get their notifications.
    pub fn replace_catalog(&mut self, catalog: Catalog) -> Result<crate::CatalogChange, crate::ReplaceError> {
        self.tick(self.last_now);
        let r = self.core.replace_catalog(catalog);
        self.collect_answers();
        self.process();
        r
    }

    /// Notifies the subscribers of `uri` (see [`crate::Engine::notify_resource_updated`]).
    pub fn notify_resource_updated(&mut self, uri: &str) -> usize {
        self.tick(self.last_now);
        let n = self.core.notify_resource_updated(uri);
        self.collect_answers();
        n
    }

    /// Ends every listen stream with its graceful result (see
    /// [`crate::Engine::end_subscriptions`]).
    pub fn end_subscriptions(&mut self) -> usize {
        self.tick(self.last_now);
        let n = self.core.end_subscriptions();
        self.collect_answers();
        self.process();
        n
    }

    /// How many `subscriptions/listen` streams are open.
    pub fn subscriptions(&self) -> usize {
        self.core.st.subs.len()
    }

    /// Moves answers written for HTTP routes into their connections' output. A
    /// notification before the answer turns the response into an SSE stream
    /// (`text/event-stream`, `X-Accel-Buffering: no`); the answer is then its last event.
    fn collect_answers(&mut self) {
        if self.core.st.routed.is_empty() {
            self.core.st.out.clear();
            return;
        }
        for i in 0..self.core.st.routed.len() {
            let r = self.core.st.routed[i];
            let Route::Http { conn, generation } = r.route else { continue };
            let Some(c) = self.slots.get_mut(conn as usize).and_then(|s| s.conn.as_mut()) else { continue };
            if c.generation != generation || c.phase != Phase::Waiting {
                continue;
            }
            let msg = trim_newline(&self.core.st.out[r.start..r.end]);
            if r.sub && r.interim && c.out.len() + msg.len() > MAX_UNSENT {
                // A subscriber that does not read: dropped, never allowed to grow memory.
                let route = r.route;
                self.core.st.subs.retain(|s| s.route != route);
                c.phase = Phase::Closing;
                c.keep_alive = false;
                c.dropped = true;
                continue;
            }
            let keepalive = self.http.sse_keepalive;
            c.keepalive = (r.sub && r.interim && !keepalive.is_zero()).then(|| self.last_now + keepalive);
            if r.interim {
                if c.http10 {
                    continue; // an HTTP/1.0 client cannot take a stream: it gets the answer only
                }
                if !c.streaming {
                    c.streaming = true;
                    http1::write_sse_head(&mut c.out, &[], !c.keep_alive);
                }
                http1::write_sse_event(&mut c.out, msg);
                continue;
            }
            if c.streaming {
                http1::write_sse_event(&mut c.out, msg);
                http1::write_chunked_end(&mut c.out);
                c.streaming = false;
                let close = !c.keep_alive;
                finish(c, close);
            } else {
                respond_json(c, if r.status == 0 { 200 } else { r.status }, msg);
            }
            self.work.push_back(conn);
        }
        self.core.st.routed.clear();
        self.core.st.out.clear();
    }

    /// Advances every connection that has work, until the core holds an event.
    fn process(&mut self) {
        if self.blocked && self.core.st.in_flight < self.core.cfg.in_flight_limit() {
            self.blocked = false;
            for (i, s) in self.slots.iter().enumerate() {
                if s.conn.as_ref().is_some_and(|c| c.phase == Phase::Ready) {
                    self.work.push_back(i as u32);
                }
            }
        }
        while self.core.st.pending.is_none() {
            let Some(slot) = self.work.pop_front() else { break };
            self.advance(slot);
        }
    }

    /// Moves one connection forward as far as it can go.
    fn advance(&mut self, slot: u32) {
        loop {
            if self.core.st.pending.is_some() {
                // Resume this connection after the event is taken.
                self.work.push_front(slot);
                return;
            }
            let Some(c) = self.slots.get_mut(slot as usize).and_then(|s| s.conn.as_mut()) else { return };
            match c.phase {
                Phase::Head => {
                    if c.out.len() >= MAX_UNSENT {
                        // Pipelined requests wait until the client reads its responses.
                        return;
                    }
                    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                    // Decide everything while the head is borrowed, act after.
                    let (refusal, keep_alive, expect_continue, http10) = match c.codec.poll(&mut headers) {
                        Input::Partial | Input::Body(_) => return,
                        Input::Error(e) => (Some((e.status(), &[][..])), false, false, false),
                        Input::Head(head) => (
                            check_head(&self.http, &head),
                            head.keep_alive,
                            head.expect_continue,
                            head.minor_version == 0,
                        ),
                    };
                    c.keep_alive = keep_alive;
                    c.expect_continue = expect_continue;
                    c.http10 = http10;
                    if let Some((status, extra)) = refusal {
                        refuse(c, status, extra);
                        return;
                    }
                    match self.http.authorization {
                        Authorization::Host => {
                            // The host's time to decide is not the client's: no deadline
                            // runs meanwhile (the body's starts when it allows).
                            c.phase = Phase::Authorizing;
                            c.deadline = None;
                            self.asks.push_back(Ask::Head(slot));
                            return;
                        }
                        Authorization::Everyone => {
                            c.phase = Phase::Body;
                            c.deadline = Some(self.last_now + self.http.body_deadline);
                        }
                    }
                }
                Phase::Body => {
                    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                    let error = match c.codec.poll(&mut headers) {
                        Input::Partial | Input::Head(_) => return,
                        Input::Error(e) => Some(e),
                        Input::Body(_) => None,
                    };
                    if let Some(e) = error {
                        refuse(c, e.status(), &[]);
                        return;
                    }
                    c.deadline = None;
                    if self.http.authorize_body {
                        c.phase = Phase::AuthorizingBody;
                        self.asks.push_back(Ask::Body(slot));
                        return;
                    }
                    c.phase = Phase::Ready;
                }
                Phase::Ready => {
                    if self.core.st.in_flight >= self.core.cfg.in_flight_limit() {
                        // Every ticket slot is busy: the request waits (its connection reads
                        // nothing more) until an answer frees one.
                        self.blocked = true;
                        return;
                    }
                    self.dispatch(slot);
                }
                Phase::Authorizing | Phase::AuthorizingBody | Phase::Waiting | Phase::Closing => return,
            }
        }
    }

    /// Decodes the body of `slot`'s request and serves it.
    fn dispatch(&mut self, slot: u32) {
        let generation = self.slots[slot as usize].generation;
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return };
        let core = &mut self.core;
        core.st.route = Route::Http { conn: slot, generation };
        core.st.http_status = 0;
        core.st.principal = c.principal.take().map(|p| p.0);
        let mark = core.st.out.len();
        let (head, body, spans) = c.codec.head_body_and_spans();
        let headers = HeaderList::from_spans(head, spans);
        self.parser.parse(body, |parsed| match parsed {
            Ok(n) => core.dispatch(n, headers.as_slice()),
            Err(e) => core.parse_failure(&e),
        });
        core.st.route = Route::Stdio;
        core.st.principal = None;
        if core.st.pending.is_some() {
            c.phase = Phase::Waiting;
            return;
        }
        if core.st.subscribed {
            // A listen stream: its acknowledgement opens the SSE response, which stays open.
            core.st.subscribed = false;
            c.phase = Phase::Waiting;
            self.collect_answers();
            return;
        }
        let status = if core.st.http_status == 0 { 200 } else { core.st.http_status };
        if core.st.out.len() > mark {
            let msg = trim_newline(&core.st.out[mark..]);
            respond_json(c, status, msg);
        } else {
            // A notification (or a response, which a client must not send): accepted.
            respond_empty(c, 202, &[]);
        }
        core.st.out.truncate(mark);
    }
}

fn trim_newline(msg: &[u8]) -> &[u8] {
    msg.strip_suffix(b"\n").unwrap_or(msg)
}

/// The refusals decided on a request head, before its body is read.
fn check_head(
    http: &HttpConfig,
    head: &http1::Head<'_>,
) -> Option<(u16, &'static [(&'static str, &'static str)])> {
    let path = head.path.split('?').next().unwrap_or(head.path);
    if path != http.endpoint {
        return Some((404, &[]));
    }
    if head.method != "POST" {
        return Some((405, &[("allow", "POST")]));
    }
    let headers = head.headers;
    let header = move |name: &'static str| {
        headers.iter().filter(move |h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    };
    if let AllowedOrigins::List(list) = &http.origins {
        for origin in header("origin") {
            let ok = core::str::from_utf8(origin).is_ok_and(|o| list.iter().any(|a| a == o.trim()));
            if !ok {
                return Some((403, &[]));
            }
        }
    }
    if http.loopback {
        let mut hosts = header("host").peekable();
        if hosts.peek().is_none() {
            return Some((403, &[]));
        }
        for host in hosts {
            if !is_loopback_host(host) {
                return Some((403, &[]));
            }
        }
        // A browser on a rebinding page sends its own origin: it must be loopback too.
        if http.origins == AllowedOrigins::Any {
            for origin in header("origin") {
                if !is_loopback_origin(origin) {
                    return Some((403, &[]));
                }
            }
        }
    }
    None
}

/// `localhost`, `127.0.0.1` or `[::1]`, with an optional port.
fn is_loopback_host(host: &[u8]) -> bool {
    let host = host.trim_ascii();
    let name = if host.starts_with(b"[") {
        match host.iter().position(|&b| b == b']') {
            Some(end) => {
                let rest = &host[end + 1..];
                if !(rest.is_empty() || rest.starts_with(b":") && rest[1..].iter().all(u8::is_ascii_digit)) {
                    return false;
                }
                &host[..=end]
            }
            None => return false,
        }
    } else {
        match host.iter().position(|&b| b == b':') {
            Some(colon) => {
                if !host[colon + 1..].iter().all(u8::is_ascii_digit) {
                    return false;
                }
                &host[..colon]
            }
            None => host,
        }
    };
    name.eq_ignore_ascii_case(b"localhost") || name == b"127.0.0.1" || name == b"[::1]"
}

/// An `Origin` whose host is loopback (`http://localhost:3000`).
fn is_loopback_origin(origin: &[u8]) -> bool {
    let origin = origin.trim_ascii();
    let rest = origin.strip_prefix(b"http://").or_else(|| origin.strip_prefix(b"https://")).unwrap_or(b"");
    !rest.is_empty() && !rest.contains(&b'/') && is_loopback_host(rest)
}

/// The head is accepted: read the body (telling a client that waits for it to send).
fn start_body(c: &mut Conn) {
    c.phase = Phase::Body;
    if c.expect_continue {
        c.expect_continue = false;
        http1::write_100_continue(&mut c.out);
    }
}

/// A refusal issued before the body is read: `connection: close`, and the connection
/// ends once it is sent (the unread body is never drained on behalf of a refused caller).
fn refuse(c: &mut Conn, status: u16, extra: &[(&str, &str)]) {
    http1::write_head(&mut c.out, status, http1::status_reason(status), None, Some(0), extra, true);
    c.phase = Phase::Closing;
    c.keep_alive = false;
    c.deadline = None;
}

/// A response without body after the body was read: the connection survives unless the
/// client asked to close it.
fn respond_empty(c: &mut Conn, status: u16, extra: &[(&str, &str)]) {
    let close = !c.keep_alive;
    http1::write_head(&mut c.out, status, http1::status_reason(status), None, Some(0), extra, close);
    finish(c, close);
}

fn respond_json(c: &mut Conn, status: u16, body: &[u8]) {
    let close = !c.keep_alive;
    http1::write_head(
        &mut c.out,
        status,
        http1::status_reason(status),
        Some("application/json"),
        Some(body.len()),
        &[],
        close,
    );
    c.out.extend_from_slice(body);
    finish(c, close);
}

fn finish(c: &mut Conn, close: bool) {
    c.codec.finish_request();
    c.deadline = None;
    c.keepalive = None;
    c.phase = if close { Phase::Closing } else { Phase::Head };
}
