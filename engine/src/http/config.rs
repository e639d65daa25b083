//! Streamable HTTP settings: [`HttpConfig`], [`AllowedOrigins`], and [`OpenError`].

use core::fmt;
use core::time::Duration;

use crate::http::auth::authorize::Authorization;
use crate::http::auth::limits::Limits;
use crate::http::auth::proxy::{ForwardedHeader, HostName, IpNet};
use crate::http::auth::resource::ProtectedResource;
use crate::http::auth::scope_policy::ScopePolicy;

/// The shortest timeout a setting takes.
const MIN_TIMEOUT: Duration = Duration::from_millis(1);

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

/// Streamable HTTP settings.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub(super) endpoint: String,
    pub(super) origins: AllowedOrigins,
    pub(super) authorization: Authorization,
    pub(super) authorize_body: bool,
    pub(super) loopback: bool,
    pub(super) max_body: usize,
    pub(super) body_deadline: Duration,
    pub(super) head_timeout: Duration,
    pub(super) idle_timeout: Duration,
    pub(super) write_timeout: Duration,
    pub(super) max_head: usize,
    pub(super) max_connections: usize,
    pub(super) max_streams_per_client: usize,
    pub(super) sse_keepalive: Duration,
    pub(super) max_sessions: usize,
    pub(super) max_sessions_per_client: usize,
    pub(super) max_in_flight_per_client: usize,
    pub(super) session_idle_timeout: Duration,
    pub(super) replay_buffer: usize,
    pub(super) session_store: bool,
    pub(super) store_timeout: Duration,
    pub(super) event_store: bool,
    pub(super) resume_retry: Duration,
    pub(super) session_touch_every: Duration,
    pub(super) task_store: bool,
    pub(super) node_name: String,
    pub(super) task_lease: Duration,
    pub(super) task_load_misses: (u32, Duration),
    pub(super) protected: Option<ProtectedResource>,
    pub(super) hosts: Vec<HostName>,
    pub(super) proxies: Vec<IpNet>,
    pub(super) forwarded: ForwardedHeader,
    pub(super) limits: Limits,
    pub(super) request_timeout: Option<Duration>,
    pub(super) scope_policy: ScopePolicy,
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
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            max_head: 16 * 1024,
            max_connections: 1024,
            max_streams_per_client: 32,
            sse_keepalive: Duration::from_secs(15),
            max_sessions: 4096,
            max_sessions_per_client: 128,
            // 0: half of `Config::max_in_flight`, resolved by `HttpEngine::new`.
            max_in_flight_per_client: 0,
            session_idle_timeout: Duration::from_secs(30 * 60),
            replay_buffer: 64 * 1024,
            session_store: false,
            store_timeout: Duration::from_secs(5),
            event_store: false,
            resume_retry: Duration::from_secs(1),
            session_touch_every: Duration::from_secs(10 * 60),
            task_store: false,
            node_name: String::new(),
            task_lease: Duration::from_secs(30),
            task_load_misses: (60, Duration::from_secs(60)),
            protected: None,
            hosts: Vec::new(),
            proxies: Vec::new(),
            forwarded: ForwardedHeader::XForwardedFor,
            limits: Limits::none(),
            request_timeout: None,
            scope_policy: ScopePolicy::new(),
        }
    }
    /// The endpoint path (default `/mcp`). Other paths are answered `404`.
    pub fn endpoint(&mut self, path: impl Into<String>) -> &mut Self {
        self.endpoint = path.into();
        self
    }
    /// Whether the host also sees each body, exactly as received and before it is decoded
    /// ([`HttpEvent::AuthorizeBody`](crate::http::HttpEvent::AuthorizeBody)); default off.
    pub fn authorize_body(&mut self, on: bool) -> &mut Self {
        self.authorize_body = on;
        self
    }
    /// The `Host` names the server answers to beyond loopback (its public names, behind
    /// a reverse proxy that passes `Host` on): DNS-rebinding protection for a server that
    /// is not loopback-only. With a list, every request's `Host` must name one of them
    /// (or loopback, while [`loopback`](Self::loopback) is on), else `403`; so must the
    /// host of an `Origin` when no origin allow-list is set. Without one (the default),
    /// only the loopback rule applies.
    ///
    /// ```
    /// use mcp_engine::http::{AllowedOrigins, Authorization, HostName, HttpConfig};
    /// let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    /// http.allowed_hosts([HostName::parse("mcp.example.com")?]);
    /// # Ok::<(), mcp_engine::http::InvalidHost>(())
    /// ```
    pub fn allowed_hosts(&mut self, hosts: impl IntoIterator<Item = HostName>) -> &mut Self {
        self.hosts = hosts.into_iter().collect();
        self
    }
    /// The reverse proxies whose forwarding header is believed (addresses or networks),
    /// and which header they write the client's address into: `X-Forwarded-For` or
    /// `Forwarded` (RFC 7239). Only that header is read; the other is ignored, whoever
    /// sends it (a proxy passes the header it does not write through as the client sent
    /// it). When the peer is one of them, the client's address is the rightmost address
    /// of that header that is not one of them; otherwise it is the peer's. Hosts see it as
    /// [`AuthorizeRequest::client`](crate::http::AuthorizeRequest::client)
    /// and [`HttpEngine::client_addr`](crate::http::HttpEngine::client_addr). Default: none
    /// (forwarding headers are ignored).
    ///
    /// ```
    /// use mcp_engine::http::{AllowedOrigins, Authorization, ForwardedHeader, HttpConfig, IpNet};
    /// let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    /// // nginx: proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    /// http.trusted_proxies(ForwardedHeader::XForwardedFor, ["10.0.0.0/8".parse::<IpNet>()?]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn trusted_proxies(
        &mut self,
        header: ForwardedHeader,
        proxies: impl IntoIterator<Item = IpNet>,
    ) -> &mut Self {
        self.forwarded = header;
        self.proxies = proxies.into_iter().collect();
        self
    }
    /// How long the host may take to answer a request (default: unlimited). Past it the
    /// client is answered `-32001` "Request timed out" (on the request's stream when it
    /// is one) and the host gets `Event::Cancelled` for the ticket; a late answer is
    /// refused (`AnswerError::UnknownTicket`). The clock runs while the request's
    /// connection is open (a parked session stream waits for its client instead, until
    /// its session ends). Clamped to at least 1 ms.
    pub fn request_timeout(&mut self, timeout: Option<Duration>) -> &mut Self {
        self.request_timeout = timeout.map(|t| t.max(MIN_TIMEOUT));
        self
    }
    /// Rate limits per principal and per client address (default: none; see [`Limits`]
    /// for what `Limits::default()` sets and what a refusal looks like).
    pub fn limits(&mut self, limits: Limits) -> &mut Self {
        self.limits = limits;
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
    /// How long a client may take to send a body once its head is complete (default 15 s;
    /// when the host authorizes heads, once the host allowed it). Past it the request is
    /// answered `408` and the connection ends. At least 1 ms.
    pub fn body_deadline(&mut self, d: Duration) -> &mut Self {
        self.body_deadline = d.max(MIN_TIMEOUT);
        self
    }
    /// How long a client may take to complete a request head (default 10 s): counted from
    /// [`HttpEngine::open`](crate::http::HttpEngine::open) for a connection's first request
    /// (waiting for the first byte counts), and from the first byte for a later one. Past
    /// it a connection that sent part of a head is answered `408` and ends; one that sent
    /// nothing is closed without a response. At least 1 ms.
    pub fn head_timeout(&mut self, d: Duration) -> &mut Self {
        self.head_timeout = d.max(MIN_TIMEOUT);
        self
    }
    /// How long a keep-alive connection may wait for its next request once its last
    /// response was sent (default 30 s). Past it the connection is closed without a
    /// response (RFC 9112 §9.5). At least 1 ms.
    pub fn idle_timeout(&mut self, d: Duration) -> &mut Self {
        self.idle_timeout = d.max(MIN_TIMEOUT);
        self
    }
    /// How long output may wait unsent without any of it being taken by the peer
    /// (default 30 s): a peer that stops reading is closed without more output, its
    /// request cancelled. At least 1 ms.
    pub fn write_timeout(&mut self, d: Duration) -> &mut Self {
        self.write_timeout = d.max(MIN_TIMEOUT);
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
    /// Most connections open at once (default 1024). At the limit,
    /// [`HttpEngine::open`](crate::http::HttpEngine::open) makes room by ending the
    /// connection that has waited longest without a request in flight or a stream open
    /// (idle keep-alive, or a head not yet complete); when there is none, it ends a
    /// long-lived stream (a session's standalone `GET` stream, a `subscriptions/listen`
    /// stream): the oldest of the client holding the most. That stream gets its last
    /// chunk (`retry:` for a standalone stream, which its client resumes with
    /// `Last-Event-ID`; the closing result for a listen stream) and its connection closes
    /// once it is sent, not counting against the limit meanwhile (at most one sixteenth
    /// of the limit at once; past that, a stream is closed without its last chunk). The
    /// new connection is refused only when every connection has a request in flight.
    pub fn max_connections(&mut self, n: usize) -> &mut Self {
        self.max_connections = n.max(1);
        self
    }
    /// The most long-lived streams one client (its principal, else its address, IPv6 by
    /// `/64`) holds open at once (default 32, at least 1): sessions' standalone `GET`
    /// streams and `subscriptions/listen` streams together. One more `GET` is answered
    /// `429` with `Retry-After: 5` and no body; one more listen is the JSON-RPC error
    /// `-32603` "too many open streams for this client". Behind a reverse proxy, set
    /// [`trusted_proxies`](Self::trusted_proxies), or every client is the proxy's address.
    pub fn max_streams_per_client(&mut self, n: usize) -> &mut Self {
        self.max_streams_per_client = n.max(1);
        self
    }
    /// The most sessions (`2025-11-25` / `2025-06-18` over HTTP) live at once (default
    /// 4,096). At the cap, `initialize` ends the session idle longest of the client
    /// holding the most sessions (see [`max_sessions_per_client`](Self::max_sessions_per_client)),
    /// so that a client holding fewer is still served; only a session with nothing in
    /// flight, no stream open and nothing waiting for its client is ended so (with a
    /// [`session_store`](Self::session_store), it leaves memory instead). When no session
    /// can give way, `initialize` is answered `503` with `Retry-After`.
    pub fn max_sessions(&mut self, n: usize) -> &mut Self {
        self.max_sessions = n;
        self
    }
    /// The most sessions one client holds at once (default 128, at least 1): a client is
    /// the principal the host named, else its address (after trusted proxies; an IPv6
    /// address by its `/64`). A client's `initialize` beyond it ends that client's own
    /// session idle longest (with a [`session_store`](Self::session_store): drops it from
    /// memory, to be loaded again when named); when every session of the client has a
    /// request in flight or a stream open, the `initialize` is answered `429` with
    /// `Retry-After` and the JSON-RPC error `-32010`. Requests with neither a principal nor
    /// an address (an embedding that gives no peer address) are not counted.
    pub fn max_sessions_per_client(&mut self, n: usize) -> &mut Self {
        self.max_sessions_per_client = n.max(1);
        self
    }
    /// The most requests one client has with the host at once (default: half of
    /// [`Config::max_in_flight`](crate::Config::max_in_flight), so 32 of 64; at least 1): a client
    /// is the principal the host named, else its address (after trusted proxies; an IPv6
    /// address by its `/64`). A request that needs a ticket (`tools/call`,
    /// `resources/read`, `prompts/get`, `completion/complete`) from a client already holding
    /// that many is answered at once, `429` with `Retry-After: 1` and the JSON-RPC error
    /// `-32010` echoing its id, instead of taking one more ticket slot or waiting for one:
    /// slow calls of one client never make another's wait. Set it to `max_in_flight` to
    /// leave the global limit alone. Requests with neither a principal nor an address are
    /// not counted.
    pub fn max_in_flight_per_client(&mut self, n: usize) -> &mut Self {
        self.max_in_flight_per_client = n.max(1);
        self
    }
    /// The bytes of recent SSE events each session keeps for `Last-Event-ID`
    /// resumption, across its streams (default 64 KiB; oldest dropped first). A client
    /// that resumes after events it missed were dropped is told so (an SSE comment
    /// `: gap`) before the events that are still kept.
    pub fn replay_buffer(&mut self, bytes: usize) -> &mut Self {
        self.replay_buffer = bytes;
        self
    }
    /// How long a session with no request in flight lives after its last request
    /// (default 30 minutes, at least 1 ms). Most clients never send `DELETE`: this is
    /// what ends their sessions. A request for an expired session is answered `404`.
    pub fn session_idle_timeout(&mut self, d: Duration) -> &mut Self {
        self.session_idle_timeout = d.max(MIN_TIMEOUT);
        self
    }
    /// Serves the endpoint as an OAuth 2.1 protected resource (see `docs/http.md`,
    /// "Authorization"): the metadata document at
    /// [`ProtectedResource::metadata_path`] and at `/.well-known/oauth-protected-resource`,
    /// without authentication; a request without `Authorization: Bearer` is answered
    /// `401` with a challenge naming the metadata and the scopes (the host is not asked),
    /// a malformed `Authorization` header `400`; with a token, the host decides
    /// ([`HttpEvent::Authorize`](crate::http::HttpEvent::Authorize), turned on by this
    /// setting whatever [`Authorization`] was given), and its
    /// [`Verdict::Unauthenticated`](crate::http::Verdict::Unauthenticated) becomes `401
    /// error="invalid_token"`, [`Verdict::Forbidden`](crate::http::Verdict::Forbidden)
    /// `403 error="insufficient_scope"`.
    pub fn protected_resource(&mut self, resource: ProtectedResource) -> &mut Self {
        self.authorization = Authorization::Host;
        self.protected = Some(resource);
        self
    }
    /// The scopes each method needs ([`ScopePolicy`]; default: none). With it, or with
    /// definitions that [require scopes](crate::Tool::requires_scopes), a request the host
    /// allowed runs a method only with the scopes it needs (else `403` with an
    /// `insufficient_scope` challenge naming them) and sees, lists and uses only the
    /// definitions its scopes reach (the others answer as unknown names). The scopes are
    /// those of the host's [`Verdict::Grant`](crate::http::Verdict::Grant);
    /// `Allow` and `AllowAs` grant none. [`Authorization::Everyone`] is not scoped.
    pub fn scope_policy(&mut self, policy: ScopePolicy) -> &mut Self {
        self.scope_policy = policy;
        self
    }
    /// Keeps sessions in a store of the host's as well as in memory (default off: memory
    /// only). The engine then asks for a session it does not hold when a request names
    /// one ([`StoreEvent::LoadSession`](crate::http::store::StoreEvent::LoadSession)), holds the
    /// response to a request that changed a session until the host stored its record
    /// ([`StoreEvent::SaveSession`](crate::http::store::StoreEvent::SaveSession); `initialize`,
    /// `notifications/initialized`, `logging/setLevel`, `resources/subscribe` and
    /// `unsubscribe`, `DELETE`), and reports sessions it ended on their idle timeout
    /// ([`StoreEvent::SessionExpired`](crate::http::store::StoreEvent::SessionExpired)). At
    /// [`max_sessions`](Self::max_sessions) and at a client's
    /// [`max_sessions_per_client`](Self::max_sessions_per_client) a session the store
    /// holds unchanged leaves memory to make room, chosen as those say (it is not ended:
    /// it is loaded again when next named). The record format is described in `docs/decisions.md`.
    pub fn session_store(&mut self, on: bool) -> &mut Self {
        self.session_store = on;
        self
    }
    /// How long the engine waits for the host's session store to answer a load or a save
    /// (default 5 s, at least 1 ms). Past it the request is answered `503` with
    /// `Retry-After` and a late answer is ignored; a session whose creation was not stored
    /// in time is undone.
    pub fn store_timeout(&mut self, d: Duration) -> &mut Self {
        self.store_timeout = d.max(MIN_TIMEOUT);
        self
    }
    /// Hands the events of session streams to the host's store too (default off; it
    /// takes [`session_store`](Self::session_store) on as well), so that a client
    /// resumes with `Last-Event-ID` on any node sharing the store: every event written on
    /// a session's SSE stream is lent to the host
    /// ([`StoreEvent::AppendEvent`](crate::http::store::StoreEvent::AppendEvent); no answer), and
    /// a `Last-Event-ID` naming a stream this engine's buffer does not cover asks for the
    /// events it missed ([`StoreEvent::LoadEvents`](crate::http::store::StoreEvent::LoadEvents),
    /// answered with [`HttpEngine::events_loaded`](crate::http::HttpEngine::events_loaded);
    /// a store that fails or does not answer within [`store_timeout`](Self::store_timeout)
    /// makes the `GET` `503` with `Retry-After`). The store keeps a bounded number of
    /// events per stream and per session, oldest dropped first; a replay that needs
    /// dropped ones says so (`: gap`) as one from memory does. See `docs/http.md`.
    pub fn event_store(&mut self, on: bool) -> &mut Self {
        self.event_store = on;
        self
    }
    /// How long a client resuming a request's stream from the event store, whose answer
    /// is not among the stored events, is told to wait before it asks again (`retry:`,
    /// default 1 s, at least 1 ms): the request may still run on the node that wrote the
    /// stream.
    pub fn resume_retry(&mut self, d: Duration) -> &mut Self {
        self.resume_retry = d.max(MIN_TIMEOUT);
        self
    }
    /// [`resume_retry`](Self::resume_retry) in milliseconds, for `retry:`.
    pub(super) fn resume_retry_ms(&self) -> u32 {
        u32::try_from(self.resume_retry.as_millis()).unwrap_or(u32::MAX)
    }
    /// With a [`session_store`](Self::session_store): how long a session in use may go
    /// without the store hearing of it (default 10 minutes; zero: never). A session
    /// served from this engine's memory changes nothing in the store, so a store whose
    /// records expire some time after their last save or load would let it expire while
    /// it is in use here; once that long has passed since the session was last saved,
    /// loaded or touched, the end of its next request asks the host to touch it
    /// ([`StoreEvent::TouchSession`](crate::http::store::StoreEvent::TouchSession)), off the
    /// request path: nothing waits for it. Give less than the store's record lifetime.
    pub fn session_touch_every(&mut self, every: Duration) -> &mut Self {
        self.session_touch_every = every;
        self
    }
    /// Hands task records to the host's task store (default off): a task's record is
    /// saved ([`StoreEvent::SaveTask`](crate::http::store::StoreEvent::SaveTask), answered with
    /// [`HttpEngine::task_saved`](crate::http::HttpEngine::task_saved)) before its handle
    /// is sent and whenever it changes, a `tasks/*` request naming a task this engine
    /// does not hold asks the store for it first
    /// ([`StoreEvent::LoadTask`](crate::http::store::StoreEvent::LoadTask), answered with
    /// [`HttpEngine::task_loaded`](crate::http::HttpEngine::task_loaded)), and the host
    /// hears of the tasks that expired ([`StoreEvent::TaskExpired`](crate::http::store::StoreEvent::TaskExpired)).
    /// A store that fails or does not answer within [`store_timeout`](Self::store_timeout)
    /// makes the request `503` with `Retry-After` (a task whose creation was not saved is
    /// undone). See `docs/decisions.md` ("The task record").
    pub fn task_store(&mut self, on: bool) -> &mut Self {
        self.task_store = on;
        self
    }
    /// This node's name in the task records it writes (default empty; at most 64 bytes,
    /// cut on a char boundary): stable across restarts of the same node and unique in the
    /// deployment. A node that finds its own name on a running task under another boot
    /// knows it restarted, and reads the task as `failed` at once; without a name only
    /// the lease tells (see [`task_lease`](Self::task_lease)).
    pub fn node_name(&mut self, name: impl Into<String>) -> &mut Self {
        self.node_name = name.into();
        self
    }
    /// How long a node's claim on a task it runs lasts (default 30 s, at least 3 ms);
    /// the node renews it every third of that with a save while its host holds the task.
    /// A task whose lease ended more than [`Config::clock_skew`](crate::Config::clock_skew)
    /// ago reads as `failed` on every node.
    pub fn task_lease(&mut self, lease: Duration) -> &mut Self {
        self.task_lease = lease.max(Duration::from_millis(3));
        self
    }
    /// With a task store, how many lookups of task ids this engine does not hold may
    /// serve a client nothing (the store has no such task, or it is another caller's):
    /// `count` per `per`, up to `count` at once, per client (its principal, else its
    /// address, IPv6 by `/64`). Default 60 per minute. Past it the client's next such
    /// lookup is `429` with `Retry-After` (the JSON-RPC error `-32010`, its id echoed) and
    /// the store is not asked; a lookup that serves the client one of its tasks costs
    /// nothing, and an id the store just said it does not hold is answered "not found"
    /// for a while without asking. See `docs/decisions.md` ("Tasks without a principal").
    pub fn task_load_misses(&mut self, count: u32, per: Duration) -> &mut Self {
        self.task_load_misses = (count.max(1), per.max(MIN_TIMEOUT));
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

/// Why [`HttpEngine::open`](crate::http::HttpEngine::open) refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenError {
    /// [`HttpConfig::max_connections`] connections are open, each with a request in
    /// flight (no idle connection or long-lived stream could be ended to make room).
    TooManyConnections,
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("too many open connections")
    }
}

impl std::error::Error for OpenError {}
