//! Streamable HTTP served by the engine (MCP 2026-07-28 stateless, and the session-bound
//! 2025-11-25 / 2025-06-18 beside it): HTTP/1.1 framing, the refusal rules, header
//! mirroring, sessions, and routing of answers to connections.
//!
//! This layer owns the connection table ([`HttpEngine`], this file) and four rooms beside
//! it, each with its own `mod.rs` saying what it holds: `conn` (connections and their
//! exchanges: the table's bookkeeping, the phase machine, refusals, dispatch of a complete
//! request, the host's answers routed to connections, what the core answered itself for the
//! adapters' spans), `session` (the session table, the sessions' SSE streams, resumption
//! from the replay buffer, streams parked when their connection went away), `store` (the
//! host's session, event and task stores, sans-IO, and the session record format) and
//! `auth` (who may call: verdicts, principals, the OAuth protected resource, the scope
//! policy, JWT, proxies, client keys, rate limits); and the settings (`config`). It is a
//! client of the core: it hands it parsed messages through `Core::handle`, learns what
//! each became (`Dispatched`), and routes what the outbox holds to connections. It never
//! reads or writes the core's fields, and holds no MCP rule: those live in `mcp`.
//!
//! [`HttpEngine`] is the HTTP counterpart of [`Engine`](crate::Engine): the same catalog,
//! validation and events, many connections. The adapter accepts TCP connections, calls
//! [`HttpEngine::open`], feeds each connection's bytes to [`HttpEngine::handle_input`],
//! writes [`HttpEngine::pending_output`] back, and closes a connection when
//! [`HttpEngine::wants_close`] says so once its output is written.
//!
//! # Input
//!
//! One rule, the same as over stdio ([`Engine::handle_input`](crate::Engine::handle_input)),
//! keeps every byte a client sends in its place: **read at most
//! [`input_capacity`](HttpEngine::input_capacity) bytes from the socket and give them
//! all** to [`handle_input`](HttpEngine::handle_input), which then takes every one. Should
//! you give more, the engine takes what fits and you must offer the rest first, before any
//! byte read after them, and read nothing more while you hold some. The capacity is what
//! the request being received may still need within its limits (a head, then its body);
//! 0 while the connection reads nothing (its request is complete and waits for its answer,
//! the host decides on its head, or its output must drain first); after a refusal, a fixed
//! amount that is taken and dropped. It grows only through the engine's own progress: ask
//! again after draining [`poll_event`](HttpEngine::poll_event) and
//! [`poll_store`](HttpEngine::poll_store), after writing the
//! connection's output, and after answering an [`HttpEvent::Authorize`] for it.
//!
//! A host that parses requests itself (hyper, axum) opens an exchange with the request's
//! head ([`handle_request_head`](HttpEngine::handle_request_head)) and gives the body the
//! same way, as it arrives; [`handle_request`](HttpEngine::handle_request) does both for a
//! body already read whole.

mod auth;
mod config;
mod conn;
mod session;
pub mod store;

pub use crate::mcp::scopes::{ScopeSet, Scopes};
pub use auth::authorize::{
    Authorization, AuthorizeBody, AuthorizeRequest, Grant, HeaderList, Principal, Verdict,
};
#[cfg(feature = "jwt")]
pub use auth::jwt::{JwksError, JwsAlgorithm, JwtConfigError, JwtVerifier, TokenError, VerifiedToken};
pub use auth::limits::{Limits, RATE_LIMITED, Rate};
pub use auth::proxy::{ForwardedHeader, HostName, InvalidHost, IpNet};
pub use auth::resource::{ProtectedResource, ResourceError};
pub use auth::scope_policy::{ScopePolicy, ScopePolicyError};
pub use config::{AllowedOrigins, HttpConfig, OpenError};
pub use conn::exchange::ResponseHead;
pub use conn::refusal::{REFUSALS_KEPT, Refusal, RefusalCounts, Refused};

use core::fmt;
use core::net::SocketAddr;

use crate::catalog::Catalog;
use crate::commands::Commands;
use crate::commands::sealed::{Lent, Output, Shown};
use crate::config::Config;
use crate::jsonrpc::Parser;
use crate::mcp::asks::{AskError, ClientAsk};
use crate::mcp::event::Event;
use crate::mcp::mrtr::InputRequest;
use crate::mcp::subs::CatalogChange;
use crate::mcp::tickets::Ticket;
use crate::mcp::{Core, Mode, new_core};
use crate::output::Route;

use crate::time::{Instant, UnixTime};
use crate::timer::Timers;
use crate::wire::http1::{self, Input};
use auth::resource::{Challenge, Credentials};
use auth::verdicts::Gate;
use auth::{client, limits, proxy, resource, scope_policy};
use conn::exchange::{
    ConnSlot, Exchange, Framing, Phase, allowed_origin, check_head, finish, is_metadata, refuse,
    respond_json, start_body,
};
use conn::{answer_routing, conns, in_flight, refusal};
use session::session_streams::{StreamParts, stream_event, stream_head, stream_last};
use session::sessions::{SessionRef, Sessions};
use session::{parked, stream_shares};
use store::port::StorePort;
use store::{StoreAsk, StoreEvent, TouchSession};
use store::{event_store, session_store, task_store};

/// The response of an exchange started with [`HttpEngine::handle_request`], read with
/// [`HttpEngine::response`].
#[derive(Debug, Clone, Copy)]
pub struct Response<'a> {
    /// The status code, headers, and whether the body is a stream.
    pub head: &'a ResponseHead,
    /// The status code.
    pub status: u16,
    /// Body bytes produced and not yet taken with
    /// [`consume_output`](HttpEngine::consume_output): the whole body of a plain
    /// response; for a stream, the SSE events so far (`data: ...` lines and the empty
    /// line that ends each, comments as `:` lines).
    pub body: &'a [u8],
    /// Whether the response is complete: no more body will follow what `body` holds.
    pub complete: bool,
}

impl Response<'_> {
    /// The headers (no framing headers: the host frames the body).
    pub fn headers(&self) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        self.head.headers()
    }
}

/// What [`HttpEngine::buffer_use`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BufferUse {
    /// Bytes of request and output buffers the open connections hold (their capacity).
    pub held: usize,
    /// Connections that hold any buffer.
    pub holding: usize,
    /// Bytes of spare buffers kept for reuse.
    pub pooled: usize,
    /// Bytes the sessions' replay buffers hold (each grows with its events, up to
    /// [`HttpConfig::replay_buffer`]).
    pub replay: usize,
}

/// A connection of an [`HttpEngine`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnId {
    slot: u32,
    generation: u32,
}

/// Output a connection may hold unsent before its next pipelined request is parsed.
const MAX_UNSENT: usize = 64 * 1024;

pub use crate::wire::http1::MAX_HEADERS;

/// Work for the host from an [`HttpEngine`] on a request's path
/// ([`HttpEngine::poll_event`]); the host's stores get theirs from
/// [`HttpEngine::poll_store`] ([`StoreEvent`]).
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
enum Ask {
    Head(u32),
    Body(u32),
}

impl Ask {
    fn slot(self) -> u32 {
        let (Self::Head(s) | Self::Body(s)) = self;
        s
    }
}

/// The Streamable HTTP server state machine: many connections, one catalog.
///
/// The call order is the one of [`Engine`](crate::Engine): after every input or
/// command, drain [`poll_event`](Self::poll_event) (and, with a store on,
/// [`poll_store`](Self::poll_store), until both return `None`), then write every
/// connection's [`pending_output`](Self::pending_output), then close the connections
/// [`wants_close`](Self::wants_close) names, and arm a timer for
/// [`poll_timeout`](Self::poll_timeout).
///
/// Requests on one connection are served one at a time, in order (HTTP/1.1 pipelining):
/// the next request is parsed once the previous response is in the connection's output,
/// and not while that output holds 64 KiB or more unsent. While every ticket slot is busy
/// ([`Config::max_in_flight`](crate::Config::max_in_flight)), a request that was read
/// waits for a slot before it is dispatched, and its connection reads nothing more.
///
/// Every connection has a deadline whenever the peer is the one to act (see `docs/http.md`):
/// a head within [`HttpConfig::head_timeout`] (from [`open`](Self::open) for the first
/// request, waiting for the first byte included), a whole request within
/// [`HttpConfig::body_deadline`] of its first byte, the next request of a keep-alive
/// connection within [`HttpConfig::idle_timeout`], and output taken by the peer within
/// [`HttpConfig::write_timeout`]. The deadlines live in one timer table:
/// [`poll_timeout`](Self::poll_timeout) is its earliest entry, and
/// [`handle_timeout`](Self::handle_timeout) acts on the connections past theirs. A
/// connection the engine ends on its own without a response to send (idle, shed, a peer
/// that stopped reading) is forgotten at once and reported by
/// [`poll_ended`](Self::poll_ended): close its socket.
///
/// At [`HttpConfig::max_connections`], [`open`](Self::open) ends the connection that has
/// waited longest with no request in flight, no stream and nothing to send; when there is
/// none, the oldest long-lived stream (standalone `GET`, `subscriptions/listen`) of the
/// client holding the most; and refuses the new one only when every connection has a
/// request in flight. No client holds more than
/// [`HttpConfig::max_streams_per_client`] such streams. A connection holds a request buffer only while it
/// receives a request and an output buffer only while it has something to send; both come
/// from pools of reused buffers, so an idle connection costs a few hundred bytes and the
/// steady state allocates nothing.
pub struct HttpEngine {
    http: HttpConfig,
    core: Core,
    parser: Parser,
    slots: Vec<ConnSlot>,
    open: usize,
    asks: std::collections::VecDeque<Ask>,
    work: std::collections::VecDeque<u32>,
    /// A request waits for a ticket slot: when one frees, every ready connection is retried.
    blocked: bool,
    /// A copy of a body looked at while every ticket slot is busy (`waits_for_slot`).
    peek: Vec<u8>,
    /// The rate limits' buckets, and the body of the last rate refusal.
    limiter: limits::Limiter,
    limit_body: Vec<u8>,
    last_now: Instant,
    /// Every connection's next deadline.
    timers: Timers,
    /// The sheddable connections (`ConnSlot::prev`/`next`), oldest first.
    shed_head: u32,
    shed_tail: u32,
    /// Spare request and output buffers.
    bufs: Vec<Vec<u8>>,
    outs: Vec<Vec<u8>>,
    /// Connections the engine ended and forgot, for the adapter to close.
    ended: std::collections::VecDeque<ConnId>,
    /// Slots without a connection.
    free: Vec<u32>,
    /// Slots that had output to send when last settled (`ConnSlot::sending`).
    sending: Vec<u32>,
    /// The origin allow-list, shared with the responses that name an origin.
    cors_origins: Vec<std::sync::Arc<str>>,
    /// The sessions of session-bound clients, and their idle deadlines (by slot).
    sessions: Sessions,
    session_timers: Timers,
    /// Session streams whose connection went away while their request is in flight.
    parked: parked::Parked,
    /// The long-lived streams (standalone `GET`, listen), per client.
    shares: stream_shares::StreamShares,
    /// The requests with the host, per client.
    in_flight: in_flight::InFlight,
    /// The store protocol's own state: expiries and events to keep for the host's
    /// stores, the bytes the last store event lends, the replay buffers' bound.
    store: StorePort,
    /// The scope names the policy and the catalog know (empty without scopes), and the
    /// `insufficient_scope` challenge of each method slot.
    scopes: Scopes,
    step_up: [Option<std::sync::Arc<str>>; crate::mcp::scopes::METHOD_SLOTS],
    /// The task store's events and held responses (`task_store`).
    task_io: task_store::TaskIo,
    /// Refused requests: counts per reason, and the latest for the adapter's log.
    refusals: refusal::RefusalLog,
}

impl fmt::Debug for HttpEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEngine")
            .field("open", &self.open)
            .field("in_flight", &self.core.in_flight())
            .finish()
    }
}

impl HttpEngine {
    /// A new engine serving `catalog` over Streamable HTTP.
    pub fn new(cfg: Config, mut http: HttpConfig, catalog: Catalog) -> Self {
        if http.max_in_flight_per_client == 0 {
            // Not set: half the ticket slots.
            http.max_in_flight_per_client = (cfg.in_flight_limit() / 2).max(1);
        }
        let max_len = http.max_body.max(cfg.frame_limit()) + 2;
        let depth = cfg.depth_limit();
        let cors_origins = match &http.origins {
            AllowedOrigins::List(list) => list.iter().map(|o| std::sync::Arc::from(o.as_str())).collect(),
            AllowedOrigins::Any => Vec::new(),
        };
        let (rules, step_up) = scope_policy::rules(&http, &catalog);
        let mut core = new_core(cfg, catalog, Mode::Http);
        let scopes = rules.as_ref().map(|r| r.scopes.clone()).unwrap_or_default();
        if let Some(r) = rules {
            core.set_rules(r);
        }
        let mut sessions =
            Sessions::new(http.max_sessions, http.max_sessions_per_client, http.session_idle_timeout);
        sessions.set_touch_every(http.session_store.then_some(http.session_touch_every));
        Self {
            parser: Parser::new(max_len, depth),
            core,
            scopes,
            step_up,
            slots: Vec::new(),
            open: 0,
            asks: std::collections::VecDeque::new(),
            work: std::collections::VecDeque::new(),
            blocked: false,
            peek: Vec::new(),
            limiter: limits::Limiter::default(),
            limit_body: Vec::new(),
            last_now: Instant::ZERO,
            timers: Timers::new(),
            shed_head: conns::NONE,
            shed_tail: conns::NONE,
            bufs: Vec::new(),
            outs: Vec::new(),
            ended: std::collections::VecDeque::new(),
            free: Vec::new(),
            sending: Vec::new(),
            cors_origins,
            sessions,
            session_timers: Timers::new(),
            parked: parked::Parked::default(),
            shares: stream_shares::StreamShares::default(),
            in_flight: in_flight::InFlight::default(),
            store: StorePort::new(http.replay_buffer, http.event_store && http.session_store),
            task_io: task_store::TaskIo::default(),
            refusals: refusal::RefusalLog::default(),
            http,
        }
    }

    /// Turns sessions on: `initialize` over HTTP (`2025-11-25`, `2025-06-18`) then opens
    /// a session named by `Mcp-Session-Id`. `entropy` must be 32 bytes fresh from the OS
    /// random source (say `getrandom::fill`), for each process: session tokens are drawn
    /// from it. Ids are sealed with [`Config::secret_key`](crate::Config::secret_key) when
    /// it is set (so every node sharing the key accepts them), else with a key derived
    /// from `entropy` (this process only). Task ids are drawn from it too. Until this is
    /// called the engine serves the stateless `2026-07-28` wire only, without tasks; the
    /// adapters call it.
    pub fn set_entropy(&mut self, entropy: &[u8; 32]) {
        let config = self.core.config();
        let (secret, previous): (_, Vec<[u8; 32]>) = match &config.state_key {
            Some(key) => (key.0, config.previous_keys.iter().map(|k| k.0).collect()),
            None => (derive_key(entropy), Vec::new()),
        };
        self.sessions.seed(&secret, &previous, entropy);
        self.core.seed_tasks(entropy);
        self.start_task_store(entropy);
    }

    /// Turns the host's session store on or off, as
    /// [`HttpConfig::session_store`] does (for an adapter given a store after the engine
    /// was built). Call it before serving.
    pub fn set_session_store(&mut self, on: bool) {
        self.http.session_store = on;
        self.store.set_events(on && self.http.event_store);
        self.sessions.set_touch_every(on.then_some(self.http.session_touch_every));
    }

    /// The latest time the engine was given (for a host answering outside its own
    /// clock, say in a callback that only has the engine).
    pub fn now(&self) -> Instant {
        self.last_now
    }

    /// Live sessions.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// The scope names the scope policy and the catalog know: turns a token's scopes into
    /// the [`ScopeSet`] of a [`Grant`] (empty without a policy). Also lent with every
    /// [`HttpEvent::Authorize`]; clone it to keep it.
    pub fn scopes(&self) -> &Scopes {
        &self.scopes
    }

    /// The HTTP settings.
    pub fn http_config(&self) -> &HttpConfig {
        &self.http
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        self.open
    }

    /// The client's address for `conn`'s current request: the peer's, or the one a
    /// trusted proxy forwarded ([`HttpConfig::trusted_proxies`]). For logs and limits.
    pub fn client_addr(&self, conn: ConnId) -> Option<core::net::IpAddr> {
        self.conn(conn)?.client
    }

    /// The buffer memory the connections hold, the pools keep and the sessions' replay
    /// buffers hold (a diagnostic: it visits every connection and every session).
    pub fn buffer_use(&self) -> BufferUse {
        let mut held = 0;
        let mut holding = 0;
        for c in self.slots.iter().filter_map(|s| s.conn.as_ref()) {
            let n = c.codec.buffer_capacity() + c.out.capacity();
            held += n;
            holding += usize::from(n > 0);
        }
        let pooled = self.bufs.iter().chain(&self.outs).map(Vec::capacity).sum();
        let replay = self.sessions.refs().filter_map(|r| self.sessions.get(r)).map(|e| e.replay.held()).sum();
        BufferUse { held, holding, pooled, replay }
    }

    /// A new connection from `peer`. At [`HttpConfig::max_connections`] the connection
    /// that has waited longest with nothing in flight is ended to make room (reported by
    /// [`poll_ended`](Self::poll_ended)); when there is none, a long-lived stream of the
    /// client holding the most is ended (its last chunk written: send it, then close the
    /// connection when [`wants_close`](Self::wants_close) says so); when every connection
    /// has a request in flight, the new one is refused.
    pub fn open(&mut self, now: Instant, peer: Option<SocketAddr>) -> Result<ConnId, OpenError> {
        self.open_as(now, peer, Framing::Wire)
    }

    fn open_as(
        &mut self,
        now: Instant,
        peer: Option<SocketAddr>,
        framing: Framing,
    ) -> Result<ConnId, OpenError> {
        self.tick(now);
        // A stream ended to make room does not count while it sends its last chunk.
        let counted = self.open.saturating_sub(self.shares.draining());
        if counted >= self.http.max_connections && !self.shed_one() && !self.shed_stream() {
            return Err(OpenError::TooManyConnections);
        }
        let limits = http1::Limits {
            max_head_bytes: self.http.max_head,
            max_headers: MAX_HEADERS,
            max_body_bytes: self.http.max_body,
        };
        let conn = Exchange::new(http1::Conn::new(limits), peer, self.last_now, framing);
        let slot = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.slots.push(ConnSlot {
                    generation: 0,
                    conn: None,
                    prev: conns::NONE,
                    next: conns::NONE,
                    linked: false,
                    sending: false,
                });
                self.slots.len() - 1
            }
        };
        let s = &mut self.slots[slot];
        s.generation = s.generation.wrapping_add(1);
        let generation = s.generation;
        s.conn = Some(Exchange { generation, ..conn });
        self.open += 1;
        self.settle(slot as u32);
        Ok(ConnId { slot: slot as u32, generation })
    }

    fn conn(&self, id: ConnId) -> Option<&Exchange> {
        self.slots.get(id.slot as usize)?.conn.as_ref().filter(|c| c.generation == id.generation)
    }

    fn conn_mut(&mut self, id: ConnId) -> Option<&mut Exchange> {
        conn_in(&mut self.slots, id)
    }

    fn tick(&mut self, now: Instant) {
        if now > self.last_now {
            self.last_now = now;
        }
        self.core.set_now(self.last_now.as_micros());
        self.core.release();
        self.collect_answers();
        self.prune_sending();
    }

    /// Answers an [`HttpEvent::Authorize`].
    pub fn authorize(&mut self, now: Instant, conn: ConnId, verdict: Verdict) {
        self.tick(now);
        let Some(c) = conn_in(&mut self.slots, conn) else { return };
        let mut gate = Gate { http: &self.http, limiter: &mut self.limiter, outs: &mut self.outs };
        let Some(read_body) = gate.head(c, self.last_now, verdict) else { return };
        if read_body {
            self.work.push_back(conn.slot);
        }
        self.settle(conn.slot);
        self.process();
    }

    /// Answers an [`HttpEvent::AuthorizeBody`]. A refusal here keeps the connection: the
    /// body was read, so the next request can follow.
    pub fn authorize_body(&mut self, now: Instant, conn: ConnId, verdict: Verdict) {
        self.tick(now);
        let Some(c) = conn_in(&mut self.slots, conn) else { return };
        let mut gate = Gate { http: &self.http, limiter: &mut self.limiter, outs: &mut self.outs };
        if !gate.body(c, self.last_now, verdict) {
            return;
        }
        self.work.push_back(conn.slot);
        self.settle(conn.slot);
        self.process();
    }

    /// How many bytes `conn` takes now: read at most this many from its socket and give
    /// them all to [`handle_input`](Self::handle_input) (see the [module docs](self#input)).
    ///
    /// - While a request is received: what it may still need within its limits (its head:
    ///   [`HttpConfig::max_head`] less what is buffered, pipelined bytes included; its
    ///   body: the rest of it, or of a chunked body's raw budget).
    /// - 0 while the connection reads nothing now: its request is complete and waits for
    ///   its answer (a ticket slot, the session store, the host's verdict on its body, the
    ///   host's answer, then the response); the host decides on its head (a body is read
    ///   only once its head is allowed); its output holds 64 KiB or more unsent. Ask again
    ///   after draining [`poll_event`](Self::poll_event) and [`poll_store`](Self::poll_store),
    ///   after writing the connection's output, and after answering an [`HttpEvent::Authorize`] for it: nothing else
    ///   raises it.
    /// - After a refusal (the connection ends once its response is sent): a fixed positive
    ///   amount (64 KiB), taken and dropped, so that the client's last bytes can be read
    ///   rather than the connection reset.
    /// - 0 for a connection that is closed or forgotten.
    pub fn input_capacity(&self, conn: ConnId) -> usize {
        self.room(conn, false)
    }

    /// [`input_capacity`](Self::input_capacity); with `before_verdict`, a body is taken
    /// while the host decides on its head too (for [`handle_request`](Self::handle_request),
    /// whose body the caller has read already).
    fn room(&self, conn: ConnId, before_verdict: bool) -> usize {
        let Some(c) = self.conn(conn) else { return 0 };
        match c.phase {
            Phase::Closing => http1::DRAIN_CAPACITY,
            // Pipelined requests wait until the client reads its responses.
            Phase::Head if c.out.len() >= MAX_UNSENT => 0,
            Phase::Head | Phase::Body => c.codec.capacity(),
            Phase::Authorizing if before_verdict => c.codec.capacity(),
            Phase::Authorizing
            | Phase::AuthorizingBody
            | Phase::Ready
            | Phase::Waiting
            | Phase::Loading
            | Phase::Saving => 0,
        }
    }

    /// Feeds bytes received on `conn` and serves what they complete; returns how many were
    /// taken.
    ///
    /// The engine takes every byte it is given up to [`input_capacity`](Self::input_capacity),
    /// processing as it goes (a head, then its body, then the next pipelined request,
    /// while the capacity stays positive), so `data` no longer than the capacity is always
    /// taken whole. **Read at most `input_capacity` bytes from the socket and give them
    /// all; should you give more, the engine takes what fits and you must offer the rest
    /// first, before any byte read after them, and read nothing more while you hold some.**
    /// (See the [module docs](self#input).) After a refusal, what follows is taken and
    /// dropped unread.
    pub fn handle_input(&mut self, now: Instant, conn: ConnId, data: &[u8]) -> usize {
        self.tick(now);
        self.feed(conn, data, false)
    }

    /// Takes `data` on `conn` for as long as it has room (see [`room`](Self::room)),
    /// processing after each piece; returns how much it took.
    fn feed(&mut self, conn: ConnId, data: &[u8], before_verdict: bool) -> usize {
        let mut taken = 0;
        while taken < data.len() {
            let room = self.room(conn, before_verdict);
            if room == 0 {
                break;
            }
            let n = self.take_input(conn, &data[taken..data.len().min(taken + room)]);
            if n == 0 {
                break; // not reached: the codec takes exactly what it has room for
            }
            taken += n;
        }
        taken
    }

    /// Gives `data` (at most the connection's room) to `conn`'s codec, then processes.
    fn take_input(&mut self, conn: ConnId, data: &[u8]) -> usize {
        let now = self.last_now;
        let head_timeout = self.http.head_timeout;
        let Some(c) = conn_in(&mut self.slots, conn) else { return 0 };
        if c.phase == Phase::Closing {
            return data.len(); // refused already: what follows is dropped unread
        }
        if c.codec.buffer_capacity() == 0
            && let Some(buf) = self.bufs.pop()
            && let Some(buf) = c.codec.give_buffer(buf)
        {
            self.bufs.push(buf);
        }
        let idle = c.codec.is_idle();
        let n = c.codec.handle_bytes(data);
        if c.phase == Phase::Head && n > 0 && idle {
            // A request starts: its head is due within the head timeout, counted from
            // `open` for the first request.
            let head_from = if c.served == 0 { c.opened } else { now };
            c.deadline = Some(head_from + head_timeout);
        }
        self.work.push_back(conn.slot);
        self.settle(conn.slot);
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
        self.forget(conn.slot);
        self.process();
    }

    /// The next refused request (every response with a status of 400 or more, with its
    /// reason), oldest first; `None` when none waits. At most [`REFUSALS_KEPT`] wait, the
    /// oldest dropped past that ([`refusal_counts`](Self::refusal_counts) counts every
    /// one). The adapters drain it after every input and log each at `debug`.
    pub fn poll_refusal(&mut self) -> Option<Refused> {
        self.refusals.next()
    }

    /// How many requests were refused, per reason, since the engine started.
    pub fn refusal_counts(&self) -> &RefusalCounts {
        self.refusals.counts()
    }

    /// A connection the engine ended on its own and forgot, with nothing left to send:
    /// close its socket. Connections end this way when they are shed to make room
    /// ([`open`](Self::open)), sit idle past their timeout, or stop taking output (see
    /// [`HttpEngine`]); a connection that ends with a response to send (a `408`, a
    /// refusal) is reported by [`wants_close`](Self::wants_close) once it is sent.
    pub fn poll_ended(&mut self) -> Option<ConnId> {
        self.ended.pop_front()
    }

    /// Serves a request that was already parsed elsewhere (a hyper or axum host), its
    /// body read whole: [`handle_request_head`](Self::handle_request_head) with the body's
    /// length, then the body. Give at most [`HttpConfig::max_body`] + 1 body bytes: a
    /// longer body is refused `413` at its declared length without being read. The body
    /// is taken whole, also while the host decides on the head
    /// ([`HttpEvent::Authorize`]): the caller holds it already.
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
        let conn = self.handle_request_head(now, peer, method, path, headers, Some(body.len() as u64))?;
        self.feed(conn, body, true);
        Ok(conn)
    }

    /// Starts serving a request that was parsed elsewhere (a hyper or axum host) whose
    /// body is still to come: every rule applies to it exactly as to bytes read off a
    /// socket, because the engine writes it out as an HTTP/1.1 request head on a fresh
    /// connection and takes it through [`handle_input`](Self::handle_input). Framing
    /// headers among `headers` (`content-length`, `transfer-encoding`, `connection`) are
    /// replaced: the body is `content_length` bytes, or, with `None`, comes chunk-framed
    /// (RFC 9112 §7.1: each piece as its size in hex, CRLF, the bytes, CRLF; a zero size
    /// and CRLF CRLF at the end), and the exchange ends after its response.
    ///
    /// The head is decided at once: a refusal (a `Content-Length` over
    /// [`HttpConfig::max_body`] is `413`, a bad `Origin` `403`, ...) is there to read with
    /// [`response`](Self::response) before any body byte; under
    /// [`Authorization::Host`] the host is asked ([`HttpEvent::Authorize`]) and no body is
    /// taken until it allows. Then give the body's bytes to [`handle_input`](Self::handle_input)
    /// as they arrive, at most [`input_capacity`](Self::input_capacity) at a time: the
    /// body's cap applies as they come, and [`HttpConfig::body_deadline`] runs from the
    /// head (from the verdict under `Authorization::Host`), so a caller that stops sending
    /// gets `408`. The answer is read with [`response`](Self::response), as for
    /// [`handle_request`](Self::handle_request).
    pub fn handle_request_head(
        &mut self,
        now: Instant,
        peer: Option<SocketAddr>,
        method: &str,
        path: &str,
        headers: &[(&str, &[u8])],
        content_length: Option<u64>,
    ) -> Result<ConnId, OpenError> {
        let conn = self.open_as(now, peer, Framing::Embedded)?;
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
        match content_length {
            Some(n) => {
                head.extend_from_slice(b"content-length: ");
                head.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
                head.extend_from_slice(b"\r\n");
            }
            None => head.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        }
        head.extend_from_slice(b"connection: close\r\n\r\n");
        // Taken whole: a head past its limit is refused, and what follows dropped.
        self.handle_input(now, conn, &head);
        Ok(conn)
    }

    /// The response of an exchange started with [`handle_request`](Self::handle_request),
    /// once its head is decided: the status, the headers, and the body produced so far.
    /// A plain response is complete at once; a stream (`text/event-stream`) grows as the
    /// engine writes events (progress, log messages, listen notifications, keep-alives):
    /// send [`Response::body`], take it with [`consume_output`](Self::consume_output), and
    /// ask again after the next input or command, until [`Response::complete`]. `None`
    /// before the head is decided, and for connections opened with [`open`](Self::open)
    /// (their output is HTTP/1.1 bytes: [`pending_output`](Self::pending_output)).
    ///
    /// An exchange that has a stream can also end from [`poll_ended`](Self::poll_ended)
    /// (its listener dropped for not reading, or its output not taken within the write
    /// timeout): end the body there.
    pub fn response(&self, conn: ConnId) -> Option<Response<'_>> {
        let c = self.conn(conn)?;
        if c.phase == Phase::Saving {
            return None; // held until the session is stored
        }
        let head = c.head.as_ref()?;
        Some(Response {
            head,
            status: head.status,
            body: &c.out,
            complete: c.phase == Phase::Closing || c.dropped,
        })
    }

    /// The bytes to send on `conn`.
    pub fn pending_output(&self, conn: ConnId) -> &[u8] {
        self.conn(conn).map_or(&[], |c| &c.out[..c.sendable()])
    }

    /// Marks `n` bytes of `conn`'s output as sent (or, for a
    /// [`handle_request`](Self::handle_request) exchange, taken by the host).
    pub fn consume_output(&mut self, conn: ConnId, n: usize) {
        let now = self.last_now;
        let Some(c) = self.conn_mut(conn) else { return };
        let n = n.min(c.sendable());
        if n == 0 {
            return;
        }
        if let Some(s) = c.saving.as_mut() {
            s.held -= n;
        }
        let was_full = c.out.len() >= MAX_UNSENT;
        c.out.drain(..n);
        c.write_since = now;
        if c.out.is_empty() && c.phase == Phase::Head {
            c.idle_since = now;
        }
        if was_full && c.out.len() < MAX_UNSENT {
            self.work.push_back(conn.slot);
        }
        self.settle(conn.slot);
        self.process();
    }

    /// Whether `conn` should be closed now: a response that ends the connection was
    /// written and sent.
    pub fn wants_close(&self, conn: ConnId) -> bool {
        self.conn(conn).is_some_and(|c| c.dropped || (c.phase == Phase::Closing && c.out.is_empty()))
    }

    /// Connections with output to send (found without scanning every connection).
    pub fn writable(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.sending.iter().filter_map(|&i| {
            let c = self.slots[i as usize].conn.as_ref()?;
            (c.sendable() != 0).then_some(ConnId { slot: i, generation: c.generation })
        })
    }

    /// When [`handle_timeout`](Self::handle_timeout) should next be called: the earliest
    /// deadline of any connection.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let inputs = self.core.input_deadline().map(Instant::from_micros);
        let tasks = self.core.task_deadline().map(Instant::from_micros);
        let store = self.core.task_store_deadline();
        [self.timers.next(), self.session_timers.next(), inputs, tasks, store].into_iter().flatten().min()
    }

    /// Acts on every connection past its deadline: a request not complete in time is
    /// answered `408` and the connection ends; a connection idle past its timeout, or
    /// whose peer took no output within the write timeout, is ended without a response
    /// (see [`poll_ended`](Self::poll_ended)); a `subscriptions/listen` stream silent for
    /// [`HttpConfig::sse_keepalive`] gets a keep-alive comment.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.tick(now);
        let now = self.last_now;
        while let Some(slot) = self.timers.pop_due(now) {
            self.expire(slot, now);
        }
        self.core.expire_inputs();
        self.core.expire_tasks();
        self.core.task_store().due(now);
        while let Some(slot) = self.session_timers.pop_due(now) {
            if let Some(r) = self.sessions.at(slot) {
                let id = self.sessions.get(r).map(|e| (e.id, e.session.legacy));
                let serial = self.sessions.get(r).map(|e| e.session.serial);
                if self.sessions.expire(r, now) {
                    if let Some((id, rev)) = id {
                        self.core.session_ended(id, rev);
                    }
                    // What its client was asked can no longer be answered.
                    if serial.is_some() {
                        self.core.inputs_gone(serial);
                    }
                    if let Some((id, _)) = id.filter(|_| self.http.session_store) {
                        self.store.session_expired(id);
                    }
                    for route in self.parked.drain(|st, _| st.session == r) {
                        self.core.cancel_route(route);
                    }
                }
                self.session_timers.set(slot, self.sessions.deadline(r));
            }
        }
        self.process();
    }

    /// Sets the wall clock (as [`Engine::set_wall_clock`](crate::Engine::set_wall_clock)):
    /// at `now` it reads `wall` (say
    /// `UnixTime::from_system_time(SystemTime::now())`, read at the same moment as
    /// `now`). From then on it advances with the `Instant`s the engine is given, until it
    /// is set again; set it whenever you pass time in (the adapters do). Once it is set,
    /// the `requestState` and list cursors the engine seals expire on it (microseconds
    /// since the Unix epoch, judged with [`Config::clock_skew`](crate::Config::clock_skew)),
    /// so another process with the same key, or this one after a restart, judges them the
    /// same way. Until it is set they expire on the `Instant`s, which only this engine can
    /// judge, and a token sealed on one clock is refused (`-32602`) by an engine that
    /// judges on the other.
    pub fn set_wall_clock(&mut self, now: Instant, wall: UnixTime) {
        if now > self.last_now {
            self.last_now = now;
        }
        self.core.set_now(self.last_now.as_micros());
        self.core.set_wall_clock(wall.as_micros());
    }

    /// The next piece of work for the host on a request's path (the stores' work comes
    /// from [`poll_store`](Self::poll_store)).
    pub fn poll_event(&mut self) -> Option<HttpEvent<'_>> {
        self.tick(self.last_now);
        self.process();
        if self.core.has_event() {
            let mut event = self.core.next_event()?;
            // What the core does not know of the request: its session and addresses.
            if let Some(info) = event.request_mut()
                && let Route::Http { conn, generation } = info.route
                && let Some(c) = self.slots.get(conn as usize).filter(|s| s.generation == generation)
                && let Some(c) = c.conn.as_ref()
            {
                info.peer = c.peer;
                info.client = c.client;
                let id = c.session.and_then(|r| self.sessions.get(r)).map(|e| &e.id[..]);
                info.session_id = id.and_then(|id| core::str::from_utf8(id).ok());
            }
            return Some(HttpEvent::Mcp(event));
        }
        let ask = self.asks.pop_front()?;
        let slot = ask.slot();
        let generation = self.slots[slot as usize].generation;
        let c = self.slots[slot as usize].conn.as_ref()?;
        let conn = ConnId { slot, generation };
        let head = c.codec.head_bytes();
        Some(match ask {
            Ask::Head(_) => HttpEvent::Authorize(AuthorizeRequest {
                conn,
                peer: c.peer,
                client: c.client,
                headers: HeaderList::parse(head),
                scopes: &self.scopes,
            }),
            Ask::Body(_) => HttpEvent::AuthorizeBody(AuthorizeBody {
                conn,
                peer: c.peer,
                client: c.client,
                headers: HeaderList::parse(head),
                body: c.codec.body(),
                scopes: &self.scopes,
            }),
        })
    }

    /// The next piece of work for the host's stores, `None` when none waits: drain it as
    /// [`poll_event`](Self::poll_event) is drained, after every input or command, until
    /// both return `None` (an answer to one may lead to more of the other). Only with a
    /// store on ([`HttpConfig::session_store`], [`HttpConfig::event_store`],
    /// [`HttpConfig::task_store`]); see [`StoreEvent`] for what each asks.
    pub fn poll_store(&mut self) -> Option<StoreEvent<'_>> {
        self.tick(self.last_now);
        self.process();
        if self.store.has_notice() {
            return self.store.next_notice();
        }
        if self.sessions.has_touch() {
            let id = self.sessions.next_touch().unwrap_or_default();
            return Some(StoreEvent::TouchSession(TouchSession { id }));
        }
        // `task_store_ready` starts with the same check: without a store, no call.
        if self.core.task_store_attached() && self.task_store_ready() {
            return self.task_store_event();
        }
        match self.store.next_ask()? {
            ask @ (StoreAsk::Load(_) | StoreAsk::Save(_)) => self.store_event(ask),
            StoreAsk::Events(slot) => event_store::load_events(&self.slots, &self.sessions, slot),
        }
    }

    /// Whether the connection `ticket` answers on holds 64 KiB or more unsent.
    fn backlogged(&self, ticket: Ticket) -> bool {
        let Some(Route::Http { conn, generation }) = self.core.route_of(ticket) else { return false };
        self.conn(ConnId { slot: conn, generation }).is_some_and(|c| c.out.len() >= MAX_UNSENT)
    }

    /// Announces that lists changed without replacing the catalog: another node sharing
    /// this deployment's clients changed its catalog (its host said so through a shared
    /// store), or this node may have missed such news. The listen streams that asked for
    /// the lists in `change` and the standalone streams of initialized sessions get their
    /// `notifications/*/list_changed`, exactly as after [`replace_catalog`](Commands::replace_catalog)
    /// (a family this catalog does not have is left out; nothing is sent unless
    /// `Config::list_changed` is on). Clients then list again, from this node's catalog.
    /// Returns the change as announced.
    pub fn announce_list_changed(&mut self, change: CatalogChange) -> CatalogChange {
        self.tick(self.last_now);
        let change = self.core.announce_list_changed(change);
        answer_routing::sessions_list_changed(&mut self.core, &self.sessions, change);
        self.collect_answers();
        self.process();
        change
    }

    /// Turns the host's event store on or off, as [`HttpConfig::event_store`] does (for
    /// an adapter given a store after the engine was built). Call it before serving.
    pub fn set_event_store(&mut self, on: bool) {
        self.http.event_store = on;
        self.store.set_events(on && self.http.session_store);
    }

    /// Events of session streams not handed to the host because it did not take them
    /// fast enough (see [`AppendEvent`](store::AppendEvent); a replay from the store
    /// reports them as a gap).
    pub fn events_not_handed_over(&self) -> u64 {
        self.store.events_dropped()
    }

    /// Answers a [`LoadEvents`](store::LoadEvents): the waiting `GET` gets its stream's
    /// events after the one its `Last-Event-ID` named, then goes on (see the module docs
    /// of `stored`); `503` with `Retry-After` when the store is unavailable; `404` when its
    /// session ended meanwhile. An answer for a request that no longer waits is ignored.
    pub fn events_loaded(&mut self, now: Instant, conn: ConnId, found: store::LoadedEvents<'_>) {
        self.tick(now);
        let now = self.last_now;
        let Some(c) = conn_in(&mut self.slots, conn) else { return };
        let Some(loaded) = event_store::take_loaded(c, found) else { return };
        let Some((r, resume, events)) = loaded else {
            self.store_failed(conn.slot, now);
            self.process();
            return;
        };
        self.stream_parts().serve_stream(conn.slot, r, Some(resume), Some(events));
        self.work.push_back(conn.slot);
        self.settle(conn.slot);
        self.process();
    }

    /// Sends `request` to the client of session `session_id` outside any request
    /// (`sampling/createMessage`, `elicitation/create` in form or url mode,
    /// `roots/list`), on the session's standalone `GET` stream: an event with an id, kept
    /// for `Last-Event-ID` like the stream's other events. The client answers with a
    /// `POST` of the JSON-RPC response in the same session (`202`); its reply comes back
    /// as [`Event::ClientReply`] (in [`HttpEvent::Mcp`])
    /// carrying the returned handle, exactly once: its result or error, `-32001` after
    /// [`Config::input_timeout`], `-32000` when the
    /// session is deleted or expires first. The stream's connection closing does not end
    /// the ask: the client may resume the stream and answer.
    ///
    /// Refused, with nothing sent: no live session of that id
    /// ([`AskError::NoSession`]), a capability its client did not declare in
    /// `initialize` ([`AskError::NotDeclared`]), no standalone stream open
    /// ([`AskError::NoStream`]: nothing is queued; ask again once the client opened
    /// one), 64 KiB unsent on the stream's connection ([`AskError::Backpressure`]),
    /// `max_in_flight` asks waiting ([`AskError::TooMany`]).
    pub fn ask_client(
        &mut self,
        session_id: &str,
        request: &InputRequest<'_>,
    ) -> Result<ClientAsk, AskError> {
        self.tick(self.last_now);
        let asked = self.stream_parts().ask_client(session_id, request)?;
        self.collect_answers();
        asked
    }

    /// The session streams' parts, lent for one call.
    fn stream_parts(&mut self) -> StreamParts<'_> {
        StreamParts {
            core: &mut self.core,
            slots: &mut self.slots,
            outs: &mut self.outs,
            sessions: &mut self.sessions,
            session_timers: &mut self.session_timers,
            parked: &mut self.parked,
            shares: &mut self.shares,
            store: &mut self.store,
            http: &self.http,
            now: self.last_now,
        }
    }

    /// Another node ended session `id` (`DELETE` there, or its expiry; a shared store
    /// said so): if this engine holds the session, it ends here too, as a `DELETE` would
    /// end it (its standalone stream closes, its requests waiting on the client are
    /// cancelled), and the host's store is not told (the other node did that). Returns
    /// whether the session was held here.
    pub fn session_ended_elsewhere(&mut self, now: Instant, id: &[u8]) -> bool {
        self.tick(now);
        let now = self.last_now;
        let Some(r) = self.sessions.held(id) else { return false };
        self.end_here(r, now);
        self.process();
        true
    }

    /// Another node changed session `id` (a shared store said so): if this engine holds
    /// a copy that nothing uses (no request in flight, no standalone stream open, no
    /// parked stream, no change of its own unsaved), the copy is dropped (the session is
    /// not ended) and the next request naming it loads the new record. Returns whether a
    /// copy was dropped; a copy in use stays, and what it saves next replaces the record
    /// (the store's last writer wins).
    pub fn session_changed_elsewhere(&mut self, id: &[u8]) -> bool {
        let Some(r) = self.sessions.held(id) else { return false };
        session_store::drop_if_idle(
            &mut self.sessions,
            &mut self.session_timers,
            &self.parked,
            &self.slots,
            r,
        )
    }

    /// Another node may have changed or ended any session without this engine hearing
    /// of it (the host's notices from a shared store were lost: it fell behind, or its
    /// connection to the store broke and was made again). Every copy nothing uses is
    /// dropped, as [`session_changed_elsewhere`](Self::session_changed_elsewhere) drops
    /// one; every copy in use stays and is marked stale: its next request asks the store
    /// for the session first ([`StoreEvent::LoadSession`], answered with
    /// [`session_loaded`](Self::session_loaded)) and goes on in the stored state, or is
    /// answered `404` (and the session ends here) when the store no longer holds it. A
    /// copy with a change of its own unsaved is not reloaded: its next save replaces the
    /// record. Returns how many copies were dropped. Scans the session table.
    pub fn sessions_changed_elsewhere(&mut self) -> usize {
        let mut dropped = 0;
        let refs: Vec<SessionRef> = self.sessions.refs().collect();
        for r in refs {
            if session_store::drop_if_idle(
                &mut self.sessions,
                &mut self.session_timers,
                &self.parked,
                &self.slots,
                r,
            ) {
                dropped += 1;
            } else if let Some(e) = self.sessions.get_mut(r) {
                e.stale = true;
            }
        }
        dropped
    }

    /// Answers a [`LoadSession`](store::LoadSession): the request goes on in the session `found` holds, is
    /// answered `404` when it holds none (or a record this engine cannot read), or `503`
    /// with `Retry-After` when the store is unavailable or the table is full of sessions
    /// that cannot leave it. For a stale copy held here (see
    /// [`sessions_changed_elsewhere`](Self::sessions_changed_elsewhere)) the record
    /// replaces what the copy holds, and a store holding none ends the session here. An
    /// answer for a request that no longer waits is ignored.
    pub fn session_loaded(&mut self, now: Instant, conn: ConnId, found: store::Loaded<'_>) {
        self.tick(now);
        let now = self.last_now;
        let Some(c) = conn_in(&mut self.slots, conn) else { return };
        if c.phase != Phase::Loading || c.resume.is_some() {
            return; // a `GET` waiting for the event store is not waiting for this
        }
        c.deadline = None;
        let named = (c.store_id, c.client);
        let out = session_store::take_loaded(
            &mut self.core,
            &mut self.sessions,
            &self.parked,
            &mut self.session_timers,
            named,
            found,
            now,
        );
        if let Some(r) = out.ended {
            self.end_here(r, now);
        }
        let Some(c) = conn_in(&mut self.slots, conn) else { return };
        if out.full {
            session_store::refuse_unavailable(c, &mut self.outs, now);
        } else {
            c.phase = Phase::Ready;
            c.pinned = out.restored;
        }
        self.work.push_back(conn.slot);
        self.settle(conn.slot);
        self.process();
    }

    /// Ends session `r` here as a `DELETE` would (its standalone stream closes, its
    /// waiting requests are cancelled) without telling the store: another node ended it,
    /// or the store no longer holds it (a request that asked then finds no session: `404`).
    fn end_here(&mut self, r: SessionRef, now: Instant) {
        let stream = session_store::end_session(
            &mut self.core,
            &mut self.sessions,
            &mut self.parked,
            &mut self.session_timers,
            r,
        );
        if let Some((slot, _)) = stream {
            conns::end_stream(&mut self.slots, stream, now);
            self.settle(slot);
        }
    }

    /// Answers a [`SaveSession`](store::SaveSession): `saved` releases the held response; a failure replaces
    /// it with `503` and `Retry-After` (and undoes a session the request created). An
    /// answer for a response that no longer waits is ignored.
    pub fn session_saved(&mut self, now: Instant, conn: ConnId, saved: bool) {
        self.tick(now);
        let now = self.last_now;
        let Some(c) = conn_in(&mut self.slots, conn) else { return };
        if c.phase != Phase::Saving {
            return;
        }
        if !saved {
            self.store_failed(conn.slot, now);
            self.process();
            return;
        }
        let Some(sv) = c.saving.take() else { return };
        c.phase = sv.then;
        c.deadline = None;
        if let Some(e) = sv.session.and_then(|r| self.sessions.get_mut(r)) {
            e.stored = sv.changes;
            e.synced = now;
        }
        self.work.push_back(conn.slot);
        self.settle(conn.slot);
        self.process();
    }

    /// The store failed `slot`'s request, or did not answer in time: `503` with
    /// `Retry-After` instead of what it waited for.
    fn store_failed(&mut self, slot: u32, now: Instant) {
        self.task_wait_failed(slot);
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return };
        self.asks.retain(|a| a.slot() != slot);
        self.store.forget_asks(slot);
        let failed = session_store::fail_wait(
            c,
            &mut self.outs,
            &mut self.core,
            &mut self.sessions,
            &mut self.session_timers,
            now,
        );
        if failed {
            self.work.push_back(slot);
            self.settle(slot);
        }
    }

    /// Whether `slot`'s request names a session the store may hold; if so it waits for
    /// the store, asked once per request.
    fn begin_load(&mut self, slot: u32) -> bool {
        let deadline = self.last_now + self.http.store_timeout;
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return false };
        let waits = session_store::begin_load(c, &self.sessions, deadline);
        if waits {
            self.store.ask(StoreAsk::Load(slot));
        }
        waits
    }

    /// Holds `slot`'s response (written after the first `held` output bytes) until the
    /// store took the change to `session` (`None`: the session `id` ended).
    fn begin_save(
        &mut self,
        slot: u32,
        session: Option<SessionRef>,
        id: [u8; crate::wire::session_id::SESSION_ID_LEN],
        created: bool,
        held: usize,
    ) {
        let deadline = self.last_now + self.http.store_timeout;
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return };
        session_store::begin_save(c, &self.sessions, session, (id, created), held, deadline);
        self.store.ask(StoreAsk::Save(slot));
    }

    /// The event of a session store `ask` (a load or a save); a save lends the session's
    /// record as it is now.
    fn store_event(&mut self, ask: StoreAsk) -> Option<StoreEvent<'_>> {
        let slot = ask.slot();
        let s = &mut self.slots[slot as usize];
        let c = s.conn.as_mut()?;
        let conn = ConnId { slot, generation: s.generation };
        let mut record = false;
        if let (StoreAsk::Save(_), Some(sv)) = (ask, c.saving.as_mut()) {
            // The record as it is now: a change made since the save was asked goes with it.
            if let Some(e) = sv.session.and_then(|r| self.sessions.get(r)) {
                self.store.write_record(&e.session, e.principal.as_ref());
                sv.changes = e.session.changes;
                record = true;
            }
        }
        let c = self.slots[slot as usize].conn.as_ref()?;
        let id = core::str::from_utf8(&c.store_id).ok()?;
        Some(match ask {
            StoreAsk::Load(_) => StoreEvent::LoadSession(store::LoadSession { conn, id }),
            _ => StoreEvent::SaveSession(store::SaveSession {
                conn,
                id,
                record: record.then_some(self.store.record()),
            }),
        })
    }

    /// How many long-lived streams are open: sessions' standalone `GET` streams and
    /// `subscriptions/listen` streams (each bounded per client by
    /// [`HttpConfig::max_streams_per_client`]), not counting those ended to make room
    /// that still send their last chunk.
    pub fn streams(&self) -> usize {
        self.shares.len()
    }

    /// Moves answers written for HTTP routes into their connections' output. A
    /// notification before the answer turns the response into an SSE stream
    /// (`text/event-stream`, `X-Accel-Buffering: no`); the answer is then its last event.
    fn collect_answers(&mut self) {
        answer_routing::route_session_notes(&mut self.core, &self.sessions);
        let now = self.last_now;
        // Streams parked in this pass: what was written for them after the parking (an
        // answer given right after `reconnect_later`) follows them.
        let mut moved: heapless::Vec<(Route, Route), 4> = heapless::Vec::new();
        for i in 0..self.core.outbox().routed.len() {
            let mut r = self.core.outbox().routed[i];
            if let Some(&(_, to)) = moved.iter().find(|(from, _)| *from == r.route) {
                r.route = to;
            }
            if let Route::Parked { .. } = r.route {
                if r.retry_ms == 0 {
                    self.stream_parts().park_event(r.route, r.interim, i);
                }
                continue;
            }
            let Route::Http { conn, generation } = r.route else { continue };
            let Some(c) = self.slots.get_mut(conn as usize).and_then(|s| s.conn.as_mut()) else { continue };
            if c.generation != generation || c.phase != Phase::Waiting {
                continue;
            }
            if r.retry_ms != 0 {
                let Some(st) = c.sse.filter(|_| !c.http10) else { continue };
                conns::lend_out(&mut self.outs, c);
                if !c.streaming {
                    stream_head(c, &mut self.sessions, self.store.keep_mut(), now, !c.keep_alive);
                    if !st.priming {
                        // The client needs an event id to come back with, whatever the revision.
                        stream_event(c, &mut self.sessions, self.store.keep_mut(), now, b"");
                    }
                }
                // The stream ends here; its request goes on, parked, for the client to resume.
                let st = c.sse.unwrap_or(st);
                c.write_sse_retry(now, r.retry_ms);
                c.write_sse_end(now);
                c.streaming = false;
                let close = !c.keep_alive;
                finish(c, now, close);
                if let Some(to) = self.park(st, r.route) {
                    if moved.is_full() {
                        moved.remove(0);
                    }
                    let _ = moved.push((r.route, to));
                }
                self.work.push_back(conn);
                self.settle(conn);
                continue;
            }
            if r.sub && r.interim && c.out.len() + self.core.outbox().message(&r).len() > MAX_UNSENT {
                // A subscriber that does not read: dropped, never allowed to grow memory.
                self.core.drop_subscriptions(r.route);
                c.phase = Phase::Closing;
                c.keep_alive = false;
                c.dropped = true;
                self.settle(conn);
                continue;
            }
            conns::lend_out(&mut self.outs, c);
            let msg = self.core.outbox().message(&r);
            let keepalive = self.http.sse_keepalive;
            c.keepalive = (r.sub && r.interim && !keepalive.is_zero()).then(|| now + keepalive);
            if r.interim {
                if c.http10 {
                    continue; // an HTTP/1.0 client cannot take a stream: it gets the answer only
                }
                if !c.streaming {
                    c.streaming = true;
                    let close = !c.keep_alive;
                    stream_head(c, &mut self.sessions, self.store.keep_mut(), now, close);
                }
                stream_event(c, &mut self.sessions, self.store.keep_mut(), now, msg);
                self.settle(conn);
                continue;
            }
            let before = c.out.len();
            if c.streaming {
                stream_last(c, &mut self.sessions, self.store.keep_mut(), now, msg);
                c.write_sse_end(now);
                c.streaming = false;
                let close = !c.keep_alive;
                finish(c, now, close);
            } else {
                respond_json(c, now, if r.status == 0 { 200 } else { r.status }, msg, &[]);
            }
            if self.core.task_store_attached() {
                self.hold_created(r.route, before);
            }
            self.work.push_back(conn);
            self.settle(conn);
        }
        self.core.outbox_mut().clear();
        if self.core.task_store_attached() {
            self.forget_fresh();
        }
    }

    /// Whether the client of `slot`'s request already has as many requests with the host
    /// as it may: then its request does not wait for a ticket slot, it is refused at once
    /// (`dispatch`).
    fn over_in_flight_share(&self, slot: u32) -> bool {
        let Some(c) = self.slots.get(slot as usize).and_then(|s| s.conn.as_ref()) else { return false };
        self.in_flight.of(client::ClientKey::of(c.principal, c.client)) >= self.http.max_in_flight_per_client
    }

    /// Advances every connection that has work, until the core holds an event.
    fn process(&mut self) {
        if self.blocked && !self.core.slots_full() {
            self.blocked = false;
            for (i, s) in self.slots.iter().enumerate() {
                if s.conn.as_ref().is_some_and(|c| c.phase == Phase::Ready) {
                    self.work.push_back(i as u32);
                }
            }
        }
        while !self.core.is_paused() {
            let Some(slot) = self.work.pop_front() else { break };
            self.advance(slot);
        }
    }

    /// Moves one connection forward as far as it can go, and re-arms its deadline.
    fn advance(&mut self, slot: u32) {
        self.step(slot);
        self.settle(slot);
    }

    fn step(&mut self, slot: u32) {
        loop {
            if self.core.is_paused() {
                // Resume this connection after the event is taken.
                self.work.push_front(slot);
                return;
            }
            let now = self.last_now;
            let Some(c) = self.slots.get_mut(slot as usize).and_then(|s| s.conn.as_mut()) else { return };
            self.refusals.collect(slot, c);
            match c.phase {
                Phase::Head => {
                    if c.out.len() >= MAX_UNSENT {
                        // Pipelined requests wait until the client reads its responses.
                        return;
                    }
                    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                    // Decide everything while the head is borrowed, act after.
                    let sessions = self.sessions.is_seeded();
                    let protected = self.http.protected.is_some();
                    let peer = c.peer;
                    let (
                        refusal,
                        keep_alive,
                        expect_continue,
                        http10,
                        cors,
                        method,
                        metadata,
                        credentials,
                        client,
                    ) = match c.codec.poll(&mut headers) {
                        Input::Partial | Input::Body(_) => return,
                        Input::Error(e) => (
                            Some((e.into(), &[][..])),
                            false,
                            false,
                            false,
                            None,
                            "",
                            false,
                            Credentials::None,
                            peer.map(|p| p.ip()),
                        ),
                        Input::Head(head) => (
                            check_head(&self.http, &head, sessions),
                            head.keep_alive,
                            head.expect_continue,
                            head.minor_version == 0,
                            allowed_origin(&self.http, &head),
                            match head.method {
                                "DELETE" => "DELETE",
                                "GET" => "GET",
                                _ => "",
                            },
                            is_metadata(&self.http, &head),
                            if protected { resource::credentials(head.headers) } else { Credentials::Bearer },
                            if self.http.proxies.is_empty() {
                                peer.map(|p| p.ip())
                            } else {
                                proxy::client_addr(
                                    &self.http.proxies,
                                    self.http.forwarded,
                                    peer,
                                    head.headers,
                                )
                            },
                        ),
                    };
                    c.client = client;
                    c.delete = method == "DELETE";
                    c.get = method == "GET";
                    c.cors = cors.and_then(|i| self.cors_origins.get(i)).cloned();
                    c.keep_alive = keep_alive;
                    c.expect_continue = expect_continue;
                    c.http10 = http10;
                    conns::lend_out(&mut self.outs, c);
                    if let Some((early, extra)) = refusal {
                        refuse(c, now, early, extra);
                        return;
                    }
                    if metadata {
                        // Public: read (no body expected) and answered without authorization.
                        c.metadata = true;
                        start_body(c, now);
                        c.deadline = Some(now + self.http.body_deadline);
                        continue;
                    }
                    if let Err(retry) = self.limiter.check_failures(&self.http.limits, client, now) {
                        // Past its authentication-failure rate, an address is not heard.
                        refuse(
                            c,
                            now,
                            Refusal::AuthFailures,
                            &[("retry-after", limits::retry_after_text(retry))],
                        );
                        return;
                    }
                    if let Some(pr) = &self.http.protected {
                        // The token comes only from `Authorization`; without one the host
                        // is not asked (RFC 6750 §3, RFC 9728 §5.1).
                        let challenge = match credentials {
                            Credentials::Bearer => None,
                            Credentials::None => Some(Challenge::Missing),
                            Credentials::Malformed => Some(Challenge::InvalidRequest),
                        };
                        if let Some(ch) = challenge {
                            c.challenge = Some(std::sync::Arc::clone(pr.challenge(ch)));
                            refuse(c, now, Refusal::from(ch), &[]);
                            self.limiter.failed(&self.http.limits, client, now);
                            return;
                        }
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
                            start_body(c, now);
                            c.deadline = Some(now + self.http.body_deadline);
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
                        refuse(c, now, e, &[]);
                        return;
                    }
                    c.deadline = None;
                    if self.http.authorize_body && !c.metadata {
                        c.phase = Phase::AuthorizingBody;
                        self.asks.push_back(Ask::Body(slot));
                        return;
                    }
                    c.phase = Phase::Ready;
                }
                Phase::Ready => {
                    if self.core.slots_full() && !self.over_in_flight_share(slot) && self.waits_for_slot(slot)
                    {
                        // Every ticket slot is busy: the request waits (its connection reads
                        // nothing more) until an answer frees one.
                        self.blocked = true;
                        return;
                    }
                    if self.http.session_store && self.begin_load(slot) {
                        return;
                    }
                    if self.http.task_store && self.begin_task_load(slot) {
                        return;
                    }
                    self.dispatch(slot);
                }
                Phase::Authorizing
                | Phase::AuthorizingBody
                | Phase::Waiting
                | Phase::Closing
                | Phase::Loading
                | Phase::Saving => return,
            }
        }
    }
}

/// A 32-byte key derived from `entropy` (for sealing session ids when the host set no
/// secret key): HMAC-SHA256 under a label, so the key and the tokens drawn from the same
/// entropy are independent.
fn derive_key(entropy: &[u8; 32]) -> [u8; 32] {
    use hmac::{KeyInit, Mac};
    let mut m =
        <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(entropy).unwrap_or_else(|_| unreachable!());
    m.update(b"mcp-engine/session-seal-key");
    m.finalize().into_bytes().into()
}

/// The `Instant` when the wall clock (reading `wall` at `now`) reads `at` (`None` before
/// the host set the wall clock: a time on it cannot be judged).
fn instant_at(wall: Option<u64>, now: Instant, at: UnixTime) -> Option<Instant> {
    let left = at.as_micros().saturating_sub(wall?);
    Some(now + core::time::Duration::from_micros(left))
}

/// The engine's output for the commands ([`Commands`]): the core's outbox, moved into the
/// connections' output and the sessions' standalone streams (`conn::answer_routing`).
impl Output for HttpEngine {
    #[inline]
    fn lent(&mut self) -> Lent<'_> {
        Lent(&mut self.core)
    }

    #[inline]
    fn shown(&self) -> Shown<'_> {
        Shown(&self.core)
    }

    #[inline]
    fn begin(&mut self) {
        self.tick(self.last_now);
    }

    #[inline]
    fn end(&mut self, resume: bool) {
        self.collect_answers();
        if resume {
            self.process();
        }
    }

    fn backlogged(&self, ticket: Ticket, task_progress: bool) -> bool {
        self.backlogged(ticket)
            || (task_progress
                && answer_routing::task_backlogged(&self.core, &self.sessions, &self.slots, ticket))
    }

    fn list_changed(&mut self, change: CatalogChange) {
        answer_routing::sessions_list_changed(&mut self.core, &self.sessions, change);
    }

    /// Sessions that subscribed with `resources/subscribe` hear of it on their standalone
    /// streams.
    fn resource_updated(&mut self, uri: &str) -> usize {
        answer_routing::sessions_resource_updated(&mut self.core, &self.sessions, uri)
    }
}

/// The commands written once ([`Commands`]), over the connections above.
impl Commands for HttpEngine {}

/// The connection `id` names in `slots`, if it is still open.
fn conn_in(slots: &mut [ConnSlot], id: ConnId) -> Option<&mut Exchange> {
    slots.get_mut(id.slot as usize)?.conn.as_mut().filter(|c| c.generation == id.generation)
}
