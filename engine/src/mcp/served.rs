//! What the engine answered itself: one fixed-size record per request it served without
//! the host (lists, `ping`, `server/discover`, `initialize`, `logging/setLevel`,
//! subscriptions, and every refusal), for the adapter to turn into the same span and
//! metric points as the requests the host serves (`docs/observability.md`); and one per
//! HTTP session that ended, for its duration.
//!
//! The records wait in a queue reserved when the engine is built
//! ([`SERVED_CAPACITY`] of them): recording never allocates, and a record that finds the
//! queue full is dropped and counted ([`Log::dropped`]), never grown into. Nothing a
//! client sent is kept but the request's id, its `traceparent`, and the names of the
//! definitions the catalog declares: no argument, uri, cursor, `tracestate` or `baggage`.
//!
//! May use: `wire`, `catalog`, `jsonrpc`, `revision`, `time`, and its own
//! folder (`lifecycle`'s method table, `tickets`' id buffer, `event`'s [`RequestId`]).

use core::fmt;
use core::net::{IpAddr, SocketAddr};
use std::collections::VecDeque;

use crate::catalog::Catalog;
use crate::error::PeerError;
use crate::jsonrpc::{IdRef, Req};
use crate::mcp::event::RequestId;
use crate::mcp::lifecycle::METHODS;
use crate::mcp::tickets::IdBuf;
use crate::revision::Revision;
use crate::time::Instant;
use crate::wire::session_id::SESSION_ID_LEN;
use crate::wire::trace::TraceParent;

/// Records the engine keeps for the adapter between two drains: past that many, a record
/// is dropped and counted.
pub const SERVED_CAPACITY: usize = 128;

/// The definition a request named, by its position in the catalog it was served with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    None,
    Tool(u32),
    Prompt(u32),
}

/// A request's id as kept: an integer as it is (written out when polled), a string as
/// JSON text.
#[derive(Clone, Copy)]
enum Id {
    None,
    I(i64),
    U(u64),
    Str(IdBuf),
}

/// One request the engine answered, as kept (fixed size).
#[derive(Clone, Copy)]
pub(crate) struct Record {
    /// The engine's name for the method; `None` for one it does not serve (a client's
    /// method string is never kept: it could be anything, of any length) and a message
    /// refused before it named one.
    method: Option<&'static str>,
    /// A notification the engine acted on (no answer).
    notification: bool,
    target: Target,
    /// The catalog revision `target` is a position in.
    catalog_revision: u64,
    revision: Option<Revision>,
    id: Id,
    code: Option<i32>,
    tool_error: bool,
    parent: Option<TraceParent>,
    at: Instant,
    session_id: Option<[u8; SESSION_ID_LEN]>,
    peer: Option<SocketAddr>,
    client: Option<IpAddr>,
}

/// A session that ended, as kept.
#[derive(Clone, Copy)]
pub(crate) struct EndRecord {
    id: [u8; SESSION_ID_LEN],
    revision: Option<Revision>,
    at: Instant,
}

/// The records waiting for the adapter, and the one it holds now.
pub(crate) struct Log {
    /// A ring of at most [`SERVED_CAPACITY`] records (reserved at build): `len` of them
    /// from `head` on wait.
    ring: Vec<Record>,
    head: usize,
    len: usize,
    /// The front record was handed out by the last poll (a [`Served`] borrows it in
    /// place): it leaves the queue at the next call.
    polled: bool,
    /// The polled record's integer id, written out.
    id_text: itoa::Buffer,
    /// Sessions that ended, and the one [`SessionEnd`] borrows.
    ended: VecDeque<EndRecord>,
    polled_end: Option<EndRecord>,
    dropped: u64,
    /// The revision of the request being dispatched, once the lifecycle decided it.
    revision: Option<Revision>,
    /// The engine answered the request being dispatched with a tool result with
    /// `isError: true` (arguments its schema refuses).
    tool_error: bool,
}

impl Log {
    pub(crate) fn new() -> Self {
        Self {
            ring: Vec::with_capacity(SERVED_CAPACITY),
            head: 0,
            len: 0,
            polled: false,
            id_text: itoa::Buffer::new(),
            ended: VecDeque::with_capacity(SERVED_CAPACITY),
            polled_end: None,
            dropped: 0,
            revision: None,
            tool_error: false,
        }
    }

    /// A new message is being dispatched: it has no revision yet.
    pub(crate) fn begin(&mut self) {
        self.revision = None;
        self.tool_error = false;
    }

    /// The request being dispatched was answered with a tool error result.
    pub(crate) fn tool_error(&mut self) {
        self.tool_error = true;
    }

    /// The lifecycle decided the revision of the request being dispatched.
    pub(crate) fn revision(&mut self, rev: Revision) {
        self.revision = Some(rev);
    }

    /// Records a request (`None`: a message that never became one) refused with `e`.
    pub(crate) fn refused(
        &mut self,
        catalog: (&Catalog, u64),
        req: Option<&Req<'_, '_>>,
        e: &PeerError<'_>,
        now: u64,
    ) {
        let code = match *e {
            PeerError::Detailed { code, .. } => code,
            _ => e.code(),
        };
        self.answered(catalog, req, Some(code), now);
    }

    /// Records a request answered at `now` with JSON-RPC error `code` (`None`: a result).
    /// `req` is `None` for a message refused before it was a request (no method, or not
    /// JSON at all).
    pub(crate) fn answered(
        &mut self,
        catalog: (&Catalog, u64),
        req: Option<&Req<'_, '_>>,
        code: Option<i32>,
        now: u64,
    ) {
        self.settle();
        if self.len >= SERVED_CAPACITY {
            self.dropped += 1;
            return;
        }
        let (catalog, catalog_revision) = catalog;
        let method = req.and_then(|r| known_method(r.method));
        let name = req.and_then(|r| r.str_at(r.name));
        let target = match (method, name) {
            (Some("tools/call"), Some(n)) => {
                catalog.tool_index(n).map_or(Target::None, |i| Target::Tool(i as u32))
            }
            (Some("prompts/get"), Some(n)) => {
                catalog.prompt_index(n).map_or(Target::None, |i| Target::Prompt(i as u32))
            }
            _ => Target::None,
        };
        let record = Record {
            method,
            notification: false,
            target,
            catalog_revision,
            revision: self.revision,
            id: match req.map(|r| r.id) {
                Some(IdRef::I(n)) => Id::I(n),
                Some(IdRef::U(n)) => Id::U(n),
                Some(id) => IdBuf::of(id).map_or(Id::None, Id::Str),
                None => Id::None,
            },
            code,
            tool_error: self.tool_error,
            parent: req.and_then(|r| r.str_at(r.meta.traceparent)).and_then(TraceParent::parse),
            at: Instant::from_micros(now),
            session_id: None,
            peer: None,
            client: None,
        };
        self.push(record);
    }

    /// Records a notification the engine acted on at `now` (`method`: its name, as the
    /// lifecycle tables spell it) in a session of `revision` (`None`: none). Its
    /// `traceparent` is not read (a notification's `_meta` is not decoded).
    pub(crate) fn notified(&mut self, method: &'static str, revision: Option<Revision>, now: u64) {
        self.settle();
        if self.len >= SERVED_CAPACITY {
            self.dropped += 1;
            return;
        }
        self.push(Record {
            method: Some(method),
            notification: true,
            target: Target::None,
            catalog_revision: 0,
            revision,
            id: Id::None,
            code: None,
            tool_error: false,
            parent: None,
            at: Instant::from_micros(now),
            session_id: None,
            peer: None,
            client: None,
        });
    }

    /// Appends `record` to the ring (room checked by the caller).
    fn push(&mut self, record: Record) {
        let at = (self.head + self.len) % SERVED_CAPACITY;
        if at == self.ring.len() {
            self.ring.push(record);
        } else {
            self.ring[at] = record;
        }
        self.len += 1;
    }

    /// Records waiting (the HTTP layer fills in what the core does not know of them).
    pub(crate) fn len(&mut self) -> usize {
        self.settle();
        self.len
    }

    /// The record handed out last leaves the ring.
    fn settle(&mut self) {
        if core::mem::take(&mut self.polled) {
            self.head = (self.head + 1) % SERVED_CAPACITY;
            self.len -= 1;
        }
    }

    /// Says what the HTTP layer knows of the records from `from` on (those of the request
    /// it just handed to the core): the session and the addresses.
    pub(crate) fn fill(
        &mut self,
        from: usize,
        session_id: Option<[u8; SESSION_ID_LEN]>,
        peer: Option<SocketAddr>,
        client: Option<IpAddr>,
    ) {
        self.settle();
        for k in from..self.len {
            let r = &mut self.ring[(self.head + k) % SERVED_CAPACITY];
            r.session_id = session_id;
            r.peer = peer;
            r.client = client;
        }
    }

    /// The next record, as a view on the engine's catalog.
    pub(crate) fn poll<'a>(&'a mut self, catalog: &'a Catalog, catalog_revision: u64) -> Option<Served<'a>> {
        self.settle();
        if self.len == 0 {
            return None;
        }
        let record = &self.ring[self.head];
        self.polled = true;
        let id = match &record.id {
            Id::None => None,
            Id::I(n) => Some(self.id_text.format(*n)),
            Id::U(n) => Some(self.id_text.format(*n)),
            Id::Str(buf) => core::str::from_utf8(buf.as_bytes()).ok(),
        };
        let catalog = (record.catalog_revision == catalog_revision).then_some(catalog);
        Some(Served { record, id, catalog })
    }

    /// Records that session `id` (of revision `revision`) ended at `now`.
    pub(crate) fn session_ended(&mut self, id: [u8; SESSION_ID_LEN], revision: Option<Revision>, now: u64) {
        if self.ended.len() >= SERVED_CAPACITY {
            self.dropped += 1;
            return;
        }
        self.ended.push_back(EndRecord { id, revision, at: Instant::from_micros(now) });
    }

    /// The next session that ended.
    pub(crate) fn poll_session_end(&mut self) -> Option<SessionEnd<'_>> {
        self.polled_end = Some(self.ended.pop_front()?);
        Some(SessionEnd { record: self.polled_end.as_ref()? })
    }

    /// Records dropped so far because the queue was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// The method's name as the method table spells it (`None`: not one the engine serves).
fn known_method(name: &str) -> Option<&'static str> {
    if name == "initialize" {
        return Some("initialize");
    }
    METHODS.iter().find(|r| r.name == name).map(|r| r.name)
}

/// A request the engine answered itself, without the host: what its span and its
/// `mcp.server.operation.duration` point need (see `docs/observability.md`). Polled with
/// [`Observer::poll_served`](crate::observe::Observer::poll_served) (`engine.observe()`, either
/// engine).
///
/// It holds no value the client sent but the request's id and `traceparent`: the method
/// is the engine's own name for it (none for one it does not serve), the target a name
/// the catalog declares. A notification the engine acted on (`notifications/initialized`,
/// `notifications/cancelled`) is recorded too ([`Served::is_notification`]).
#[derive(Clone, Copy)]
pub struct Served<'a> {
    record: &'a Record,
    /// The id as JSON text.
    id: Option<&'a str>,
    /// The catalog the target is a position in (`None`: replaced since).
    catalog: Option<&'a Catalog>,
}

impl<'a> Served<'a> {
    /// The JSON-RPC method: the engine's name for it (`tools/list`, `ping`,
    /// `initialize`, `notifications/cancelled`, ...); `None` for a method it does not
    /// serve (the client's string is not kept) and a message refused before it named one.
    pub fn method(&self) -> Option<&'static str> {
        self.record.method
    }
    /// Whether it was a notification (no id, no answer).
    pub fn is_notification(&self) -> bool {
        self.record.notification
    }
    /// The tool a refused `tools/call` named, if the catalog declares it.
    pub fn tool(&self) -> Option<&'a str> {
        match self.record.target {
            Target::Tool(i) => self.catalog?.tools.get(i as usize).map(|t| t.tool.name.as_str()),
            _ => None,
        }
    }
    /// The prompt a refused `prompts/get` named, if the catalog declares it.
    pub fn prompt(&self) -> Option<&'a str> {
        match self.record.target {
            Target::Prompt(i) => self.catalog?.prompts.get(i as usize).map(|p| p.prompt.name.as_str()),
            _ => None,
        }
    }
    /// The revision the request was served under, once the engine decided it (`None`
    /// for a message refused before: not JSON, no method, a revision it does not speak).
    pub fn revision(&self) -> Option<Revision> {
        self.record.revision
    }
    /// The request's JSON-RPC id (`None` when the message had none the engine could
    /// read, or one longer than [`MAX_TICKET_ID_LEN`](crate::error::MAX_TICKET_ID_LEN)).
    pub fn id(&self) -> Option<RequestId<'a>> {
        Some(RequestId { json: self.id? })
    }
    /// The JSON-RPC error code of the answer (`None`: it was a result).
    pub fn error_code(&self) -> Option<i32> {
        self.record.code
    }
    /// Whether the answer was a tool result with `isError: true`: the engine answers a
    /// `tools/call` whose arguments its input schema refuses so (`2025-11-25` and later).
    pub fn is_tool_error(&self) -> bool {
        self.record.tool_error
    }
    /// The valid `traceparent` the request carried in `params._meta`.
    pub fn trace_parent(&self) -> Option<TraceParent> {
        self.record.parent
    }
    /// When the engine answered it (the time it was given with the input).
    pub fn at(&self) -> Instant {
        self.record.at
    }
    /// The `Mcp-Session-Id` of the session it was made in (HTTP, session-bound
    /// revisions; also the id an `initialize` just opened). A bearer of the session.
    pub fn session_id(&self) -> Option<&'a str> {
        self.record.session_id.as_ref().and_then(|id| core::str::from_utf8(id).ok())
    }
    /// The TCP peer (HTTP).
    pub fn peer(&self) -> Option<SocketAddr> {
        self.record.peer
    }
    /// The client's address (HTTP): the peer's, or the one a trusted proxy forwarded.
    pub fn client(&self) -> Option<IpAddr> {
        self.record.client
    }
}

impl fmt::Debug for Served<'_> {
    /// The session id's length only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Served")
            .field("method", &self.method())
            .field("notification", &self.is_notification())
            .field("tool", &self.tool())
            .field("prompt", &self.prompt())
            .field("revision", &self.revision())
            .field("id", &self.id())
            .field("error_code", &self.error_code())
            .field("tool_error", &self.is_tool_error())
            .field("trace_parent", &self.trace_parent())
            .field("at", &self.at())
            .field("session_id_len", &self.session_id().map(str::len))
            .field("peer", &self.peer())
            .field("client", &self.client())
            .finish()
    }
}

/// A session of a session-bound revision that ended (`DELETE`, idle expiry, ended by
/// another node), polled with
/// [`Observer::poll_session_end`](crate::observe::Observer::poll_session_end).
#[derive(Clone, Copy)]
pub struct SessionEnd<'a> {
    record: &'a EndRecord,
}

impl<'a> SessionEnd<'a> {
    /// Its `Mcp-Session-Id` (the one the `initialize` record of its opening named).
    pub fn id(&self) -> &'a str {
        core::str::from_utf8(&self.record.id).unwrap_or_default()
    }
    /// The revision it was opened with.
    pub fn revision(&self) -> Option<Revision> {
        self.record.revision
    }
    /// When it ended (the engine's time).
    pub fn at(&self) -> Instant {
        self.record.at
    }
}

impl fmt::Debug for SessionEnd<'_> {
    /// The id's length only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionEnd")
            .field("id_len", &self.id().len())
            .field("revision", &self.revision())
            .field("at", &self.at())
            .finish()
    }
}
