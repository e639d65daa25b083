//! One exchange per connection: the phase machine's state, its deadlines, the refusals
//! decided on a request head before dispatch (path, method, `Origin`, `Host`), and how a
//! response is written (HTTP/1.1 bytes, or a structured response for a host that frames
//! it) and the connection finished.

use core::net::SocketAddr;
use std::sync::Arc;

use crate::http::auth::authorize::Principal;
use crate::http::config::{AllowedOrigins, HttpConfig};
use crate::http::conn::refusal::{Early, Refusal};
use crate::http::session::sessions::SessionRef;
use crate::mcp::scopes::ScopeSet;
use crate::time::{Instant, UnixTime};
use crate::wire::session_id::SESSION_ID_LEN;
use crate::wire::{http1, sse};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::http) enum Phase {
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
    /// The host's session store looks for the session the request names (deadline:
    /// the store timeout).
    Loading,
    /// The response is written and held until the host's session store took the
    /// session's change (deadline: the store timeout).
    Saving,
}

/// How a connection's responses are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::http) enum Framing {
    /// HTTP/1.1 bytes, for a socket.
    Wire,
    /// A structured response (head, body bytes or SSE events) for a host that frames it
    /// itself ([`HttpEngine::handle_request`](crate::http::HttpEngine::handle_request)).
    Embedded,
}

pub(in crate::http) struct Exchange {
    pub(in crate::http) generation: u32,
    pub(in crate::http) codec: http1::Conn,
    pub(in crate::http) peer: Option<SocketAddr>,
    /// The client's address for the current request: the peer's, or what a trusted
    /// proxy forwarded (`proxy::client_addr`).
    pub(in crate::http) client: Option<core::net::IpAddr>,
    /// What is to be sent: HTTP/1.1 bytes ([`Framing::Wire`]), or the body / SSE event text
    /// ([`Framing::Embedded`]).
    pub(in crate::http) out: Vec<u8>,
    pub(in crate::http) framing: Framing,
    /// An embedded exchange's response head, once decided.
    pub(in crate::http) head: Option<ResponseHead>,
    pub(in crate::http) phase: Phase,
    /// Keep the connection after this request's response.
    pub(in crate::http) keep_alive: bool,
    /// The client waits for `100 Continue` before it sends the body.
    pub(in crate::http) expect_continue: bool,
    /// The request came as HTTP/1.0 (no chunked responses: no streams).
    pub(in crate::http) http10: bool,
    /// The response is an SSE stream: its head and earlier events are written.
    pub(in crate::http) streaming: bool,
    /// A listen stream that could not take its notifications: close it now.
    pub(in crate::http) dropped: bool,
    /// The principal the host's authorization named for the current request.
    pub(in crate::http) principal: Option<Principal>,
    /// The scopes the host granted the current request, and when they expire (`None`:
    /// unrestricted, as under `Authorization::Everyone`).
    pub(in crate::http) grant: Option<(ScopeSet, Option<UnixTime>)>,
    /// A listen stream: when to write a keep-alive comment if nothing else is written.
    pub(in crate::http) keepalive: Option<Instant>,
    /// The current request's deadline (head, or head and body).
    pub(in crate::http) deadline: Option<Instant>,
    /// When the connection was opened.
    pub(in crate::http) opened: Instant,
    /// Requests finished on this connection.
    pub(in crate::http) served: u32,
    /// Since when the connection waits for a request with nothing to send (its idle
    /// timeout counts from here).
    pub(in crate::http) idle_since: Instant,
    /// When output last became pending or was last taken by the peer (the write timeout
    /// counts from here while output is pending).
    pub(in crate::http) write_since: Instant,
    /// The current request came from this allowed `Origin` (an allow-list is configured):
    /// its response carries the CORS headers.
    pub(in crate::http) cors: Option<Arc<str>>,
    /// The session id the response names (`Mcp-Session-Id`: the answer to an
    /// `initialize` that opened a session); cleared when the response is done.
    pub(in crate::http) session_id: Option<[u8; SESSION_ID_LEN]>,
    /// The request is a `DELETE` (ending its session).
    pub(in crate::http) delete: bool,
    /// The request is a `GET` (opening its session's standalone stream).
    pub(in crate::http) get: bool,
    /// The session whose request this connection waits on (it keeps the session alive
    /// until the response is done or the connection ends).
    pub(in crate::http) session: Option<SessionRef>,
    /// The response is (or will be, if it becomes SSE) a session's stream: its events
    /// carry ids and are kept for resumption.
    pub(in crate::http) sse: Option<SessionStream>,
    /// The session store was asked for the session this request names (it is not asked
    /// twice for one request).
    pub(in crate::http) loaded: bool,
    /// The task store was asked for the task this request names (or it names none).
    pub(in crate::http) task_loaded: bool,
    /// While [`Phase::Saving`]: what is being stored, and the output that may be sent
    /// meanwhile (what preceded the held response).
    pub(in crate::http) saving: Option<Saving>,
    /// The session id a store is asked about (loading) or told of (saving).
    pub(in crate::http) store_id: [u8; SESSION_ID_LEN],
    /// While [`Phase::Loading`] for a `GET`'s `Last-Event-ID`: the session, stream and
    /// last event seen whose missed events the host's event store is asked for.
    pub(in crate::http) resume: Option<(SessionRef, u32, u32)>,
    /// The session a store gave back for this request, kept in memory until the
    /// request is served (`Sessions::pin`).
    pub(in crate::http) pinned: Option<SessionRef>,
    /// The `WWW-Authenticate` challenge the response carries (a protected resource's
    /// refusal).
    pub(in crate::http) challenge: Option<Arc<str>>,
    /// The request is for the protected-resource metadata document.
    pub(in crate::http) metadata: bool,
    /// The last response refused its request: why, and its status (moved to the
    /// engine's `RefusalLog` when the engine next looks at the connection).
    pub(in crate::http) refused: Option<(Refusal, u16)>,
}

/// A change to a session that the host's store is taking; the response that
/// acknowledges it is held until it is taken.
#[derive(Debug, Clone, Copy)]
pub(in crate::http) struct Saving {
    /// The session (`None`: it ended, and the store is to forget it).
    pub(in crate::http) session: Option<SessionRef>,
    /// Its change count being stored.
    pub(in crate::http) changes: u32,
    /// The request opened the session: should the store fail, the session is undone.
    pub(in crate::http) created: bool,
    /// The phase the connection goes on in once the change is stored.
    pub(in crate::http) then: Phase,
    /// Output bytes before the held response.
    pub(in crate::http) held: usize,
}

/// A session-bound SSE stream: its session, its number in it (0: the standalone `GET`
/// stream) and its last event number; whether it opens with a priming event
/// (`2025-11-25`).
#[derive(Debug, Clone, Copy)]
pub(in crate::http) struct SessionStream {
    pub(in crate::http) session: SessionRef,
    pub(in crate::http) stream: u32,
    pub(in crate::http) seq: u32,
    pub(in crate::http) priming: bool,
}

impl Exchange {
    /// A new connection opened at `now`.
    pub(in crate::http) fn new(
        codec: http1::Conn,
        peer: Option<SocketAddr>,
        now: Instant,
        framing: Framing,
    ) -> Self {
        Self {
            generation: 0,
            codec,
            peer,
            client: peer.map(|p| p.ip()),
            out: Vec::new(),
            framing,
            head: None,
            phase: Phase::Head,
            keep_alive: true,
            expect_continue: false,
            http10: false,
            streaming: false,
            dropped: false,
            principal: None,
            grant: None,
            keepalive: None,
            deadline: None,
            opened: now,
            served: 0,
            idle_since: now,
            write_since: now,
            cors: None,
            session_id: None,
            delete: false,
            get: false,
            session: None,
            sse: None,
            loaded: false,
            task_loaded: false,
            saving: None,
            store_id: [0; SESSION_ID_LEN],
            resume: None,
            pinned: None,
            challenge: None,
            metadata: false,
            refused: None,
        }
    }

    /// The output that may be sent now: all of it, but for a response held while its
    /// session is stored.
    pub(in crate::http) fn sendable(&self) -> usize {
        self.saving.map_or(self.out.len(), |s| s.held)
    }

    /// `extra`, the session id the response names, and, for a request from an allowed
    /// origin, the CORS response headers.
    fn with_cors<'e>(
        cors: Option<&'e str>,
        session_id: Option<&'e [u8; SESSION_ID_LEN]>,
        extra: &[(&'e str, &'e str)],
    ) -> heapless::Vec<(&'e str, &'e str), 12> {
        let mut all: heapless::Vec<(&str, &str), 12> = heapless::Vec::new();
        for &h in extra {
            let _ = all.push(h); // at most a few
        }
        if let Some(id) = session_id.and_then(|id| core::str::from_utf8(id).ok()) {
            let _ = all.push(("mcp-session-id", id));
        }
        if let Some(origin) = cors {
            let _ = all.push(("access-control-allow-origin", origin));
            let _ = all.push(("access-control-expose-headers", CORS_EXPOSE));
            let _ = all.push(("vary", "origin"));
        }
        all
    }

    /// The earliest deadline the connection has now, given the settings.
    pub(in crate::http) fn due(&self, http: &HttpConfig) -> Option<Instant> {
        let write = (self.sendable() != 0 && self.framing == Framing::Wire)
            .then(|| self.write_since + http.write_timeout);
        let phase = match self.phase {
            Phase::Head if self.codec.is_idle() && self.out.is_empty() => match self.framing {
                Framing::Embedded => None,
                Framing::Wire if self.served == 0 => Some(self.opened + http.head_timeout),
                Framing::Wire => Some(self.idle_since + http.idle_timeout),
            },
            // Pipelined bytes or a partial head: the request's deadline.
            Phase::Head | Phase::Body | Phase::Loading | Phase::Saving => self.deadline,
            // The keep-alive comment, or the request's timeout, whichever comes first.
            Phase::Waiting => match (self.keepalive, self.deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            Phase::Authorizing | Phase::AuthorizingBody | Phase::Ready | Phase::Closing => None,
        };
        match (write, phase) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the connection may be ended to make room for a new one: no request in
    /// flight, no stream, nothing to send.
    pub(in crate::http) fn sheddable(&self) -> bool {
        self.phase == Phase::Head && self.out.is_empty() && self.framing == Framing::Wire
    }

    /// Output is about to be written: the write timeout counts from now if none was
    /// pending.
    fn will_write(&mut self, now: Instant) {
        if self.out.is_empty() {
            self.write_since = now;
        }
    }

    /// A response head (and `len` body bytes to follow, through [`Exchange::body`]).
    pub(in crate::http) fn write_head(
        &mut self,
        now: Instant,
        status: u16,
        content_type: Option<&'static str>,
        len: usize,
        extra: &[(&'static str, &'static str)],
        close: bool,
    ) {
        self.will_write(now);
        if status >= 400 && self.refused.is_none() {
            self.refused = Some((Refusal::of_status(status), status));
        }
        // A 204 carries no `content-length` (RFC 9110 §8.6).
        let len = (status != 204).then_some(len);
        match self.framing {
            Framing::Wire => {
                let mut extra = Self::with_cors(self.cors.as_deref(), self.session_id.as_ref(), extra);
                if let Some(challenge) = self.challenge.as_deref() {
                    let _ = extra.push(("www-authenticate", challenge));
                }
                let reason = http1::status_reason(status);
                http1::write_head(&mut self.out, status, reason, content_type, len, &extra, close);
            }
            Framing::Embedded => {
                let (cors, id) = (self.cors.clone(), self.session_id);
                let mut head = ResponseHead::new(status, content_type, extra, false, cors, id);
                if let Some(challenge) = self.challenge.clone() {
                    let _ = head.headers.push(("www-authenticate", Text::Shared(challenge)));
                }
                self.head = Some(head);
            }
        }
    }

    /// Body bytes after [`Exchange::write_head`].
    pub(in crate::http) fn body(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// The head of an SSE response.
    pub(in crate::http) fn write_sse_head(&mut self, now: Instant, close: bool) {
        self.will_write(now);
        match self.framing {
            Framing::Wire => {
                let extra = Self::with_cors(self.cors.as_deref(), self.session_id.as_ref(), &[]);
                sse::write_sse_head(&mut self.out, &extra, close);
            }
            Framing::Embedded => {
                let (cors, id) = (self.cors.clone(), self.session_id);
                self.head =
                    Some(ResponseHead::new(200, Some("text/event-stream"), SSE_HEADERS, true, cors, id));
            }
        }
    }

    /// One SSE event holding `data`.
    pub(in crate::http) fn write_sse_event(&mut self, now: Instant, data: &[u8]) {
        self.will_write(now);
        match self.framing {
            Framing::Wire => sse::write_sse_event(&mut self.out, data),
            Framing::Embedded => sse::push_sse_event(&mut self.out, None, data),
        }
    }

    /// An SSE event with an `id:` field.
    pub(in crate::http) fn write_sse_event_with_id(&mut self, now: Instant, id: &str, data: &[u8]) {
        self.will_write(now);
        match self.framing {
            Framing::Wire => sse::write_sse_event_with_id(&mut self.out, id, data),
            Framing::Embedded => sse::push_sse_event(&mut self.out, Some(id), data),
        }
    }

    /// An SSE comment saying `text` (readers ignore it; people and tools can see it).
    pub(in crate::http) fn write_sse_note(&mut self, now: Instant, text: &str) {
        self.will_write(now);
        match self.framing {
            Framing::Wire => sse::write_sse_note(&mut self.out, text),
            Framing::Embedded => {
                self.out.extend_from_slice(b": ");
                self.out.extend_from_slice(text.as_bytes());
                self.out.extend_from_slice(b"\n\n");
            }
        }
    }

    /// An SSE `retry:` field (milliseconds before the client reconnects).
    pub(in crate::http) fn write_sse_retry(&mut self, now: Instant, ms: u32) {
        self.will_write(now);
        match self.framing {
            Framing::Wire => sse::write_sse_retry(&mut self.out, ms),
            Framing::Embedded => {
                self.out.extend_from_slice(b"retry: ");
                self.out.extend_from_slice(itoa::Buffer::new().format(ms).as_bytes());
                self.out.extend_from_slice(b"\n\n");
            }
        }
    }

    /// An SSE comment (a keep-alive).
    pub(in crate::http) fn write_sse_comment(&mut self, now: Instant) {
        self.will_write(now);
        match self.framing {
            Framing::Wire => sse::write_sse_comment(&mut self.out),
            Framing::Embedded => self.out.extend_from_slice(b":\n"),
        }
    }

    /// The end of an SSE response.
    pub(in crate::http) fn write_sse_end(&mut self, now: Instant) {
        if self.framing == Framing::Wire {
            self.will_write(now);
            http1::write_chunked_end(&mut self.out);
        }
    }
}

/// The headers of an SSE response besides its content type.
const SSE_HEADERS: &[(&str, &str)] = &[("cache-control", "no-cache"), ("x-accel-buffering", "no")];

/// The response headers a browser script on an allowed origin may read.
const CORS_EXPOSE: &str = "mcp-session-id, mcp-protocol-version";

/// The answer to a CORS preflight from an allowed origin (with the origin itself): `POST`
/// and any request header (`*`; `authorization` must be named, the wildcard never covers
/// it), for ten minutes.
pub(in crate::http) const PREFLIGHT: &[(&str, &str)] = &[
    ("access-control-allow-methods", "POST"),
    ("access-control-allow-headers", "*, authorization"),
    ("access-control-max-age", "600"),
];

/// [`PREFLIGHT`] where sessions can be ended with `DELETE`.
pub(in crate::http) const PREFLIGHT_SESSIONS: &[(&str, &str)] = &[
    ("access-control-allow-methods", "GET, POST, DELETE"),
    ("access-control-allow-headers", "*, authorization"),
    ("access-control-max-age", "600"),
];

/// A header value of a [`ResponseHead`].
#[derive(Debug, Clone)]
enum Text {
    Static(&'static str),
    Shared(Arc<str>),
    /// A session id (visible ASCII).
    Id([u8; SESSION_ID_LEN]),
}

/// The head of a response given to a host that frames it itself: see
/// [`HttpEngine::response`](crate::http::HttpEngine::response).
#[derive(Debug, Clone)]
pub struct ResponseHead {
    /// The status code.
    pub status: u16,
    headers: heapless::Vec<(&'static str, Text), 10>,
    /// Whether the body is an SSE stream (`text/event-stream`), whose events come as the
    /// engine produces them, rather than a body complete at once.
    pub stream: bool,
}

impl ResponseHead {
    fn new(
        status: u16,
        content_type: Option<&'static str>,
        extra: &[(&'static str, &'static str)],
        stream: bool,
        cors: Option<Arc<str>>,
        session_id: Option<[u8; SESSION_ID_LEN]>,
    ) -> Self {
        let mut headers = heapless::Vec::new();
        if let Some(ct) = content_type {
            let _ = headers.push(("content-type", Text::Static(ct)));
        }
        for &(name, value) in extra {
            // At most a few headers are ever set; the array holds them.
            let _ = headers.push((name, Text::Static(value)));
        }
        if let Some(id) = session_id {
            let _ = headers.push(("mcp-session-id", Text::Id(id)));
        }
        if let Some(origin) = cors {
            let _ = headers.push(("access-control-allow-origin", Text::Shared(origin)));
            let _ = headers.push(("access-control-expose-headers", Text::Static(CORS_EXPOSE)));
            let _ = headers.push(("vary", Text::Static("origin")));
        }
        Self { status, headers, stream }
    }

    /// The headers, framing headers (`content-length`, `transfer-encoding`, `connection`)
    /// excluded: the host frames the body.
    pub fn headers(&self) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        self.headers.iter().map(|(name, value)| {
            let value = match value {
                Text::Static(v) => v,
                Text::Shared(v) => &**v,
                Text::Id(v) => core::str::from_utf8(v).unwrap_or_default(),
            };
            (*name, value)
        })
    }
}

pub(in crate::http) struct ConnSlot {
    pub(in crate::http) generation: u32,
    pub(in crate::http) conn: Option<Exchange>,
    /// The list of sheddable connections, in the order they became sheddable.
    pub(in crate::http) prev: u32,
    pub(in crate::http) next: u32,
    pub(in crate::http) linked: bool,
    /// In the engine's list of connections with output.
    pub(in crate::http) sending: bool,
}

pub(in crate::http) fn trim_newline(msg: &[u8]) -> &[u8] {
    msg.strip_suffix(b"\n").unwrap_or(msg)
}

/// The refusals decided on a request head, before its body is read (and the answer to a
/// CORS preflight).
pub(in crate::http) fn check_head(
    http: &HttpConfig,
    head: &http1::Head<'_>,
    sessions: bool,
) -> Option<(Early, &'static [(&'static str, &'static str)])> {
    let path = head.path.split('?').next().unwrap_or(head.path);
    let headers = head.headers;
    let header = move |name: &'static str| {
        headers.iter().filter(move |h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    };
    if is_metadata(http, head) {
        // The protected-resource metadata: public, any origin; `Host` rules still hold.
        if head.method != "GET" {
            return Some((Refusal::MethodNotAllowed.into(), &[("allow", "GET")]));
        }
        return loopback_refusal(http, header);
    }
    if path != http.endpoint {
        return Some((Refusal::PathNotFound.into(), &[]));
    }
    // A CORS preflight: only with an allow-list, answered once the origin passed below.
    let preflight = head.method == "OPTIONS"
        && matches!(http.origins, AllowedOrigins::List(_))
        && header("origin").next().is_some()
        && header("access-control-request-method").next().is_some();
    let session_method = sessions && matches!(head.method, "DELETE" | "GET");
    if head.method != "POST" && !session_method && !preflight {
        let allow: &'static [(&'static str, &'static str)] =
            if sessions { &[("allow", "GET, POST, DELETE")] } else { &[("allow", "POST")] };
        return Some((Refusal::MethodNotAllowed.into(), allow));
    }
    if let AllowedOrigins::List(list) = &http.origins {
        for origin in header("origin") {
            let ok = core::str::from_utf8(origin).is_ok_and(|o| list.iter().any(|a| a == o.trim()));
            if !ok {
                return Some((Refusal::OriginNotAllowed.into(), &[]));
            }
        }
    }
    if let Some(refusal) = loopback_refusal(http, header) {
        return Some(refusal);
    }
    if (http.loopback || !http.hosts.is_empty()) && http.origins == AllowedOrigins::Any {
        // A browser on a rebinding page sends its own origin: it must be one of ours too.
        for origin in header("origin") {
            if !origin_host(origin).is_some_and(|h| host_allowed(http, h)) {
                return Some((Refusal::OriginHostNotAllowed.into(), &[]));
            }
        }
    }
    if preflight {
        return Some((Early::Preflight, if sessions { PREFLIGHT_SESSIONS } else { PREFLIGHT }));
    }
    None
}

/// Whether the request is for the protected-resource metadata document.
pub(in crate::http) fn is_metadata(http: &HttpConfig, head: &http1::Head<'_>) -> bool {
    let path = head.path.split('?').next().unwrap_or(head.path);
    http.protected.as_ref().is_some_and(|p| p.is_metadata_path(path))
}

/// `403` when loopback-only serving is on or an allow-list of hosts is set, and a `Host`
/// is missing or names neither loopback (while that is on) nor a listed host.
fn loopback_refusal<'h, I: Iterator<Item = &'h [u8]>>(
    http: &HttpConfig,
    header: impl Fn(&'static str) -> I,
) -> Option<(Early, &'static [(&'static str, &'static str)])> {
    if !http.loopback && http.hosts.is_empty() {
        return None;
    }
    let mut hosts = header("host").peekable();
    let allowed = hosts.peek().is_some() && hosts.all(|h| host_allowed(http, h));
    (!allowed).then_some((Refusal::HostNotAllowed.into(), &[]))
}

/// Whether `Host` value `host` names loopback (while that is on) or a listed host.
fn host_allowed(http: &HttpConfig, host: &[u8]) -> bool {
    (http.loopback && is_loopback_host(host)) || http.hosts.iter().any(|h| h.matches(host))
}

/// The index in the allow-list of the request's `Origin`, when a list is configured and
/// the request carries one `Origin` that is in it.
pub(in crate::http) fn allowed_origin(http: &HttpConfig, head: &http1::Head<'_>) -> Option<usize> {
    let AllowedOrigins::List(list) = &http.origins else { return None };
    let mut origins = head.headers.iter().filter(|h| h.name.eq_ignore_ascii_case("origin"));
    let origin = core::str::from_utf8(origins.next()?.value).ok()?.trim();
    if origins.next().is_some() {
        return None;
    }
    list.iter().position(|a| a == origin)
}

/// `localhost`, `127.0.0.1` or `[::1]`, with an optional port.
pub(in crate::http) fn is_loopback_host(host: &[u8]) -> bool {
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

/// The host (and port) of an `http` or `https` `Origin` (`localhost:3000` of
/// `http://localhost:3000`).
fn origin_host(origin: &[u8]) -> Option<&[u8]> {
    let origin = origin.trim_ascii();
    let rest = origin.strip_prefix(b"http://").or_else(|| origin.strip_prefix(b"https://"))?;
    (!rest.is_empty() && !rest.contains(&b'/')).then_some(rest)
}

/// The head is accepted: read the body (telling a client that waits for it to send; a
/// host that frames responses itself does that on its own).
pub(in crate::http) fn start_body(c: &mut Exchange, now: Instant) {
    c.phase = Phase::Body;
    if c.expect_continue {
        c.expect_continue = false;
        if c.framing == Framing::Wire {
            c.will_write(now);
            http1::write_100_continue(&mut c.out);
        }
    }
}

/// A refusal issued before the body is read (or a preflight's answer): `connection:
/// close`, and the connection ends once it is sent (the unread body is never drained on
/// behalf of a refused caller).
pub(in crate::http) fn refuse(
    c: &mut Exchange,
    now: Instant,
    why: impl Into<Early>,
    extra: &[(&'static str, &'static str)],
) {
    let status = match why.into() {
        Early::Refused(refusal) => {
            c.refused = Some((refusal, refusal.status()));
            refusal.status()
        }
        Early::Preflight => 204,
    };
    c.write_head(now, status, None, 0, extra, true);
    c.phase = Phase::Closing;
    c.keep_alive = false;
    c.deadline = None;
}

/// A response without body after the body was read: the connection survives unless the
/// client asked to close it.
pub(in crate::http) fn respond_empty(
    c: &mut Exchange,
    now: Instant,
    status: u16,
    extra: &[(&'static str, &'static str)],
) {
    let close = !c.keep_alive;
    c.write_head(now, status, None, 0, extra, close);
    finish(c, now, close);
}

pub(in crate::http) fn respond_json(
    c: &mut Exchange,
    now: Instant,
    status: u16,
    body: &[u8],
    extra: &[(&'static str, &'static str)],
) {
    let close = !c.keep_alive;
    c.write_head(now, status, Some("application/json"), body.len(), extra, close);
    c.body(body);
    finish(c, now, close);
}

pub(in crate::http) fn finish(c: &mut Exchange, now: Instant, close: bool) {
    c.codec.finish_request();
    c.deadline = None;
    c.keepalive = None;
    c.cors = None;
    c.session_id = None;
    c.delete = false;
    c.get = false;
    c.sse = None;
    c.loaded = false;
    c.task_loaded = false;
    c.challenge = None;
    c.metadata = false;
    c.served = c.served.saturating_add(1);
    c.idle_since = now;
    c.phase = if close { Phase::Closing } else { Phase::Head };
}
