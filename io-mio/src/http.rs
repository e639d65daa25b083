//! [`HttpServer`]: one [`HttpEngine`] behind a mio [`TcpListener`], many connections.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::ops::Range;
use std::time::Duration;

use mcp_engine::Instant;
use mcp_engine::http::{ConnId, HttpEngine, HttpEvent, Verdict};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Registry, Token};

use crate::spans::{self, Spans};
use crate::stdio::READ_BUF_LEN;

/// Bytes one call reads at most from one connection before it yields to the others.
const READ_BUDGET: usize = 1 << 20;

/// How long a connection the server ends stays open for reading (and discarding) what
/// the client still sends, after its last response was written and its sending side
/// shut down. See the crate docs' "Closing connections".
pub const LINGER: Duration = Duration::from_secs(2);

/// `EMFILE` and `ENFILE` (the same on Linux, the BSDs and macOS).
const EMFILE: i32 = 24;
const ENFILE: i32 = 23;

/// One accepted TCP connection.
struct Connection {
    stream: TcpStream,
    token: Token,
    /// The engine's connection; stale once `lingering` (the engine forgot it).
    id: ConnId,
    /// Tells a reused slot from its previous occupant (for linger deadlines).
    serial: u64,
    /// Bytes read and not yet taken by the engine: `kept[kept_at..]`. Reading stops
    /// while there are any. (Not used while the engine keeps its word: each read asks
    /// for at most what it takes, [`HttpEngine::input_capacity`].)
    kept: Vec<u8>,
    kept_at: usize,
    /// The socket may have bytes: no read returned `WouldBlock` since the last
    /// readiness event.
    readable: bool,
    /// The socket may take bytes: no write returned `WouldBlock` since the last
    /// readiness event.
    writable: bool,
    /// A read returned end of file: the client is gone (or shut its sending side down,
    /// which HTTP/1.1 servers treat alike); what was already produced is still written.
    read_closed: bool,
    /// A read or write failed, or a registration: the connection is dropped.
    failed: bool,
    /// The engine asked to close it; its sending side is shut down and what the client
    /// still sends is read and discarded until end of file or [`LINGER`].
    lingering: bool,
    /// On the active list (see [`HttpServer::active`]).
    queued: bool,
    /// The interest the socket is registered with.
    interest: Interest,
    /// The read budget left in the current call (`budget_epoch`).
    budget: usize,
    budget_epoch: u64,
}

impl Connection {
    /// Output waits for the socket: a write would have blocked and bytes remain.
    fn write_blocked(&self, engine: &HttpEngine) -> bool {
        !self.lingering && !self.writable && !engine.pending_output(self.id).is_empty()
    }

    /// Whether the input side has anything to do: kept bytes to offer, or a socket that
    /// may have bytes while the budget lasts.
    fn wants_input(&self) -> bool {
        if self.failed {
            return false;
        }
        if self.lingering {
            return self.readable && self.budget > 0;
        }
        !self.read_closed && (self.kept_at < self.kept.len() || (self.readable && self.budget > 0))
    }

    /// [`wants_input`](Self::wants_input), and the engine takes input now (else the
    /// connection waits off the active list until its output is written or its head is
    /// decided).
    fn may_read(&self, engine: &HttpEngine) -> bool {
        self.wants_input()
            && (self.lingering || self.kept_at < self.kept.len() || engine.input_capacity(self.id) > 0)
    }

    /// Writes pending output until there is none or the socket would block. Returns
    /// whether anything happened (bytes written or a failure).
    fn flush(&mut self, engine: &mut HttpEngine) -> bool {
        let mut progress = false;
        while self.writable && !self.failed && !self.lingering {
            let out = engine.pending_output(self.id);
            if out.is_empty() {
                break;
            }
            match (&self.stream).write(out) {
                Ok(0) => self.failed = true,
                Ok(n) => engine.consume_output(self.id, n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.writable = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => self.failed = true,
            }
            progress = true;
        }
        progress
    }

    /// Registers writable interest exactly while output waits for the socket, and
    /// re-arms a socket whose read budget ran out while it may still have bytes (the
    /// poller then reports it again).
    fn sync_interest(&mut self, engine: &HttpEngine, registry: &Registry) {
        if self.failed {
            return;
        }
        let want = if self.write_blocked(engine) {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        let rearm = self.readable && self.budget == 0 && (self.lingering || !self.read_closed);
        if want != self.interest || rearm {
            match registry.reregister(&mut self.stream, self.token, want) {
                Ok(()) => self.interest = want,
                Err(_) => self.failed = true,
            }
        }
    }

    /// What to do with the connection now.
    fn next(&self, engine: &HttpEngine) -> Next {
        if self.failed {
            return Next::Close;
        }
        if self.lingering || !engine.pending_output(self.id).is_empty() {
            return Next::Keep;
        }
        if engine.wants_close(self.id) {
            Next::Linger
        } else if self.read_closed {
            Next::Close
        } else {
            Next::Keep
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Keep,
    /// The engine is done with it: shut down its sending side and linger.
    Linger,
    /// Drop it (and tell the engine, unless lingering).
    Close,
}

/// What the server calls for each engine event; see [`HttpServer`].
type Host<'h> = dyn FnMut(HttpEvent<'_>) -> Option<Verdict> + 'h;

/// Hands every engine event to `host` (an MCP request inside its span); answers the
/// authorization events the host decided. Notes in `asked` the connections whose head
/// the host was asked about (their body is read once it is allowed). Returns whether
/// there was any.
fn drain(
    engine: &mut HttpEngine,
    spans: &mut Spans,
    now: Instant,
    host: &mut Host<'_>,
    asked: &mut Vec<ConnId>,
) -> bool {
    let mut any = false;
    while let Some(event) = engine.poll_event() {
        any = true;
        let ask = match &event {
            HttpEvent::Authorize(a) => {
                asked.push(a.conn);
                Some((a.conn, false))
            }
            HttpEvent::AuthorizeBody(b) => Some((b.conn, true)),
            _ => None,
        };
        let verdict = match event {
            HttpEvent::Mcp(event) => spans.call(event, |event| host(HttpEvent::Mcp(event))),
            event => host(event),
        };
        match (ask, verdict) {
            (Some((conn, false)), Some(v)) => engine.authorize(now, conn, v),
            (Some((conn, true)), Some(v)) => engine.authorize_body(now, conn, v),
            _ => {}
        }
    }
    spans.drain(engine);
    spans.refusals(engine);
    any
}

/// An [`HttpEngine`] behind a non-blocking [`TcpListener`] that a caller's mio loop
/// polls: it accepts connections, moves their bytes to and from the engine, and closes
/// them. See the [crate docs](crate#streamable-http) for the loop it expects.
///
/// Every method that moves bytes takes `host: impl FnMut(HttpEvent<'_>) -> Option<Verdict>`
/// and calls it for each event the engine yields:
///
/// - [`HttpEvent::Mcp`]: an MCP request (or a cancellation), exactly as over stdio:
///   answer it through the event (`call.answer(..)`) or keep its ticket and answer later
///   through [`engine_mut`](Self::engine_mut). Return `None`.
/// - [`HttpEvent::Authorize`] / [`HttpEvent::AuthorizeBody`] (with
///   [`Authorization::Host`](mcp_engine::http::Authorization::Host) or
///   [`HttpConfig::authorize_body`](mcp_engine::http::HttpConfig::authorize_body)):
///   return `Some(verdict)` and the server passes it to [`HttpEngine::authorize`] or
///   [`HttpEngine::authorize_body`] for you; or return `None`, keep the event's `conn`,
///   and call those yourself later (then [`drive`](Self::drive)).
///
/// With a host's store on ([`HttpConfig::session_store`](mcp_engine::http::HttpConfig::session_store)
/// and the like), its work does not come through `host`: take it from
/// [`HttpEngine::poll_store`] where you have the engine, in [`run_timed`](Self::run_timed)'s
/// `after` (the `session_store` example does), and answer it there.
pub struct HttpServer {
    engine: HttpEngine,
    listener: TcpListener,
    origin: std::time::Instant,
    /// The buffer every read goes to.
    buf: Box<[u8]>,
    /// The listener's token and the connections' token range, while registered.
    tokens: Option<(Token, Range<usize>)>,
    /// Connection `i` has token `connections.start + i`.
    slots: Vec<Option<Connection>>,
    /// Free indices of `slots`.
    free: Vec<usize>,
    /// Occupied slots.
    live: usize,
    by_id: HashMap<ConnId, usize>,
    /// The listener may hold connections: no accept returned `WouldBlock` since the
    /// last readiness event.
    accept_ready: bool,
    /// A connection accepted while the engine was full: opened once one closes.
    parked: Option<(TcpStream, SocketAddr)>,
    /// Connections whose input side may have work (`Connection::wants_input`), possibly
    /// with stale or repeated entries (each is checked when taken).
    active: Vec<usize>,
    /// The list being worked on (kept to reuse its allocation).
    batch: Vec<usize>,
    /// Lingering connections by deadline (all lingers last [`LINGER`], so this is
    /// sorted): (deadline, slot, serial).
    lingering: VecDeque<(Instant, usize, u64)>,
    serial: u64,
    /// Counts [`drive`](Self::drive) calls, to refill read budgets.
    epoch: u64,
    /// Scratch for [`HttpEngine::writable`].
    ids: Vec<ConnId>,
    /// Connections whose head the host was asked about: once it allows, the engine takes
    /// their body ([`HttpServer::recheck_asked`]).
    asked: Vec<ConnId>,
    /// The request spans (feature `tracing`; a no-op without it).
    spans: Spans,
}

impl HttpServer {
    /// A server accepting on `listener` (already non-blocking, as mio's are).
    ///
    /// It turns the engine's sessions on ([`HttpEngine::set_entropy`], 32 bytes from the
    /// OS random source), so `initialize` opens a session; should the OS give no
    /// randomness, the engine serves the stateless wire only.
    pub fn new(listener: TcpListener, mut engine: HttpEngine) -> Self {
        let mut entropy = [0u8; 32];
        if getrandom::fill(&mut entropy).is_ok() {
            engine.set_entropy(&entropy);
        }
        spans::keep_answers(&mut engine);
        Self {
            engine,
            listener,
            origin: std::time::Instant::now(),
            buf: vec![0; READ_BUF_LEN].into_boxed_slice(),
            tokens: None,
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            by_id: HashMap::new(),
            accept_ready: false,
            parked: None,
            active: Vec::new(),
            batch: Vec::new(),
            lingering: VecDeque::new(),
            serial: 0,
            epoch: 0,
            ids: Vec::new(),
            asked: Vec::new(),
            spans: Spans::new(true),
        }
    }

    /// A server accepting on a standard library listener, which is put in non-blocking
    /// mode.
    pub fn from_std(listener: std::net::TcpListener, engine: HttpEngine) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        Ok(Self::new(TcpListener::from_std(listener), engine))
    }

    /// Registers the listener under `listener` and gives the server the tokens
    /// `connections` for its connections: connection `i` (of at most
    /// `connections.len()` at once) is registered under `Token(connections.start + i)`.
    /// Keep your own tokens out of that range; `base..usize::MAX` is fine, as the
    /// engine's [`max_connections`](mcp_engine::http::HttpConfig::max_connections)
    /// bounds how many are used. Events for other tokens are ignored by the server.
    ///
    /// Registering twice is an error ([`io::ErrorKind::AlreadyExists`]);
    /// [`deregister`](Self::deregister) first. An empty range, one holding `listener`,
    /// or one too short for the open connections is [`io::ErrorKind::InvalidInput`].
    pub fn register(
        &mut self,
        registry: &Registry,
        listener: Token,
        connections: Range<usize>,
    ) -> io::Result<()> {
        if self.tokens.is_some() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "the server is already registered"));
        }
        let invalid = |why| Err(io::Error::new(io::ErrorKind::InvalidInput, why));
        if connections.is_empty() {
            return invalid("the connection token range is empty");
        }
        if connections.contains(&listener.0) {
            return invalid("the connection token range holds the listener's token");
        }
        if self.slots.len() > connections.len() && self.slots[connections.len()..].iter().any(Option::is_some)
        {
            return invalid("the connection token range is too short for the open connections");
        }
        registry.register(&mut self.listener, listener, Interest::READABLE)?;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let Some(c) = slot else { continue };
            c.token = Token(connections.start + i);
            if let Err(e) = registry.register(&mut c.stream, c.token, c.interest) {
                // Leave nothing half registered.
                for c in self.slots[..i].iter_mut().flatten() {
                    let _ = registry.deregister(&mut c.stream);
                }
                let _ = registry.deregister(&mut self.listener);
                return Err(e);
            }
        }
        self.tokens = Some((listener, connections));
        // Connections may wait already; readiness of the others is reported anew.
        self.accept_ready = true;
        Ok(())
    }

    /// Removes the listener and every connection from `registry`. Nothing moves until
    /// the server is registered again.
    pub fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        if self.tokens.take().is_none() {
            return Ok(());
        }
        let mut result = registry.deregister(&mut self.listener);
        for c in self.slots.iter_mut().flatten() {
            let r = registry.deregister(&mut c.stream);
            if result.is_ok() {
                result = r;
            }
        }
        result
    }

    /// Handles one readiness event of the caller's loop, then makes all the progress
    /// possible without waiting ([`drive`](Self::drive)). Events whose token is not one
    /// the server registered are ignored. With many events at once,
    /// [`handle_events`](Self::handle_events) does the work once for all of them.
    ///
    /// # Errors
    ///
    /// As [`drive`](Self::drive).
    pub fn handle_ready(
        &mut self,
        registry: &Registry,
        event: &mio::event::Event,
        host: impl FnMut(HttpEvent<'_>) -> Option<Verdict>,
    ) -> io::Result<()> {
        if self.note(event) { self.drive(registry, host) } else { Ok(()) }
    }

    /// Handles a whole batch of readiness events (those of other tokens are ignored),
    /// then [`drive`](Self::drive)s once. An empty batch (the poll timed out) still
    /// drives, which serves the timers.
    ///
    /// # Errors
    ///
    /// As [`drive`](Self::drive).
    pub fn handle_events(
        &mut self,
        registry: &Registry,
        events: &Events,
        host: impl FnMut(HttpEvent<'_>) -> Option<Verdict>,
    ) -> io::Result<()> {
        for event in events.iter() {
            self.note(event);
        }
        self.drive(registry, host)
    }

    /// Records a readiness event; returns whether its token is one of the server's.
    fn note(&mut self, event: &mio::event::Event) -> bool {
        let Some((listener, range)) = &self.tokens else { return false };
        let token = event.token();
        if token == *listener {
            self.accept_ready = true;
            return true;
        }
        if !range.contains(&token.0) {
            return false;
        }
        let idx = token.0 - range.start;
        let Some(Some(c)) = self.slots.get_mut(idx) else { return true };
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            c.readable = true;
        }
        if event.is_writable() || event.is_write_closed() || event.is_error() {
            c.writable = true;
        }
        // Queued even with its read budget spent: `pump` refills it in the next call.
        if (c.readable || c.kept_at < c.kept.len()) && !c.queued {
            c.queued = true;
            self.active.push(idx);
        }
        true
    }

    /// Makes all the progress possible without waiting: serves due timers, accepts what
    /// the listener holds, reads what ready connections have, hands engine events to
    /// `host`, writes output and closes the connections that are done. Call it after
    /// answering tickets (or authorizations) outside the host callback so that the
    /// answers are written and pipelined requests behind them are served. Does nothing
    /// while the server is not registered.
    ///
    /// A connection's read or write errors only end that connection (the engine learns
    /// through [`HttpEngine::handle_closed`], which cancels its outstanding request).
    ///
    /// # Errors
    ///
    /// An `accept` error that is not about one connection (e.g. the listener itself
    /// failed, or the process is out of descriptors while holding no connection that
    /// could free one). The listener is then unusable: stop serving.
    pub fn drive(
        &mut self,
        registry: &Registry,
        mut host: impl FnMut(HttpEvent<'_>) -> Option<Verdict>,
    ) -> io::Result<()> {
        if self.tokens.is_none() {
            return Ok(());
        }
        let host: &mut Host<'_> = &mut host;
        let now = self.now();
        self.engine.set_wall_clock(now, mcp_engine::UnixTime::from_system_time(std::time::SystemTime::now()));
        self.epoch += 1;
        if self.engine.poll_timeout().is_some_and(|t| t <= now) {
            self.engine.handle_timeout(now);
        }
        while let Some(&(deadline, idx, serial)) = self.lingering.front() {
            if deadline > now {
                break;
            }
            self.lingering.pop_front();
            if self.slots[idx].as_ref().is_some_and(|c| c.serial == serial && c.lingering) {
                self.close(registry, idx, now);
            }
        }
        loop {
            let mut progress = self.accept(registry, now)?;
            self.recheck_asked();
            std::mem::swap(&mut self.active, &mut self.batch);
            for i in 0..self.batch.len() {
                let idx = self.batch[i];
                progress |= self.pump(registry, idx, now, host);
            }
            self.batch.clear();
            progress |= drain(&mut self.engine, &mut self.spans, now, host, &mut self.asked);
            progress |= self.flush_all(registry, now);
            progress |= self.reap(registry, now);
            if !progress {
                return Ok(());
            }
        }
    }

    /// Puts the connections whose head the host allowed (in the callback, or since,
    /// through [`engine_mut`](Self::engine_mut)) back on the active list: the engine
    /// takes their body now. The others stay listed while they are open and the engine
    /// reads nothing from them.
    fn recheck_asked(&mut self) {
        let mut i = 0;
        while i < self.asked.len() {
            let id = self.asked[i];
            let Some(&idx) = self.by_id.get(&id) else {
                self.asked.swap_remove(i);
                continue;
            };
            if self.engine.input_capacity(id) == 0 {
                i += 1;
                continue;
            }
            self.asked.swap_remove(i);
            if let Some(c) = self.slots[idx].as_mut()
                && c.may_read(&self.engine)
                && !c.queued
            {
                c.queued = true;
                self.active.push(idx);
            }
        }
    }

    /// Accepts connections while the listener has some and there is room. Returns
    /// whether any was accepted.
    fn accept(&mut self, registry: &Registry, now: Instant) -> io::Result<bool> {
        let mut progress = false;
        if let Some((stream, peer)) = self.parked.take() {
            match self.engine.open(now, Some(peer)) {
                Ok(id) => progress |= self.insert(registry, stream, id),
                Err(_) => {
                    self.parked = Some((stream, peer));
                    return Ok(false);
                }
            }
        }
        let Some((_, range)) = &self.tokens else { return Ok(progress) };
        let room = range.len();
        while self.accept_ready && (!self.free.is_empty() || self.slots.len() < room) {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    progress = true;
                    match self.engine.open(now, Some(peer)) {
                        Ok(id) => {
                            self.insert(registry, stream, id);
                        }
                        Err(_) => {
                            // Full: hold it (and leave the rest in the kernel's backlog)
                            // until a connection closes.
                            self.parked = Some((stream, peer));
                            break;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.accept_ready = false,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                    ) => {}
                // Out of descriptors: retry once a connection closes and frees one.
                Err(e) if matches!(e.raw_os_error(), Some(EMFILE | ENFILE)) && self.live > 0 => break,
                Err(e) => return Err(e),
            }
        }
        Ok(progress)
    }

    /// Registers an accepted connection the engine opened as `id`. Returns whether it
    /// was kept (a registration failure drops it).
    fn insert(&mut self, registry: &Registry, mut stream: TcpStream, id: ConnId) -> bool {
        let Some((_, range)) = &self.tokens else { return false };
        let idx = self.free.pop().unwrap_or(self.slots.len());
        let token = Token(range.start + idx);
        if registry.register(&mut stream, token, Interest::READABLE).is_err() {
            if idx < self.slots.len() {
                self.free.push(idx);
            }
            self.engine.handle_closed(self.now(), id);
            return false;
        }
        // Responses go out in one write each: no reason to wait for more.
        let _ = stream.set_nodelay(true);
        self.serial += 1;
        let c = Connection {
            stream,
            token,
            id,
            serial: self.serial,
            kept: Vec::new(),
            kept_at: 0,
            // A fresh registration reports bytes that arrived already.
            readable: false,
            writable: true,
            read_closed: false,
            failed: false,
            lingering: false,
            queued: false,
            interest: Interest::READABLE,
            budget: READ_BUDGET,
            budget_epoch: self.epoch,
        };
        if idx == self.slots.len() {
            self.slots.push(Some(c));
        } else {
            self.slots[idx] = Some(c);
        }
        self.by_id.insert(id, idx);
        self.live += 1;
        true
    }

    /// Moves connection `idx`'s input: offers kept bytes, reads while the engine takes
    /// them, hands events to `host` and writes the output after each chunk. Returns
    /// whether anything happened.
    fn pump(&mut self, registry: &Registry, idx: usize, now: Instant, host: &mut Host<'_>) -> bool {
        let Some(c) = self.slots.get_mut(idx).and_then(Option::as_mut) else { return false };
        c.queued = false;
        if c.budget_epoch != self.epoch {
            c.budget_epoch = self.epoch;
            c.budget = READ_BUDGET;
        }
        let engine = &mut self.engine;
        let spans = &mut self.spans;
        let buf = &mut self.buf;
        let asked = &mut self.asked;
        // Output first: it answers what was read before.
        let mut progress = c.flush(engine);
        while c.wants_input() && !c.write_blocked(engine) {
            if c.kept_at < c.kept.len() {
                let n = engine.handle_input(now, c.id, &c.kept[c.kept_at..]);
                if n == 0 {
                    break; // the engine waits for an answer first
                }
                c.kept_at += n;
                if c.kept_at == c.kept.len() {
                    c.kept.clear();
                    c.kept_at = 0;
                }
            } else {
                // At most what the engine takes now: every byte read is taken at once.
                let room = if c.lingering { buf.len() } else { engine.input_capacity(c.id).min(buf.len()) };
                if room == 0 {
                    // Nothing is read, but a client that went away is noticed (closing
                    // the connection cancels its request).
                    match c.stream.peek(&mut [0u8; 1]) {
                        Ok(0) => {
                            c.readable = false;
                            c.read_closed = true;
                            progress = true;
                        }
                        // Bytes wait for the engine: read once it takes them.
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => c.readable = false,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(_) => c.failed = true,
                    }
                    break;
                }
                match (&c.stream).read(&mut buf[..room]) {
                    Ok(0) => {
                        c.readable = false;
                        c.read_closed = true;
                    }
                    Ok(n) => {
                        c.budget = c.budget.saturating_sub(n);
                        if !c.lingering {
                            let taken = engine.handle_input(now, c.id, &buf[..n]);
                            c.kept.extend_from_slice(&buf[taken..n]);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        c.readable = false;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => c.failed = true,
                }
            }
            progress = true;
            if c.lingering {
                if c.read_closed {
                    c.failed = true; // the client is done: close
                }
                continue;
            }
            drain(engine, spans, now, host, asked);
            c.flush(engine);
            if c.next(engine) != Next::Keep {
                break;
            }
        }
        c.sync_interest(engine, registry);
        let next = c.next(engine);
        if next == Next::Keep && c.may_read(engine) {
            c.queued = true;
            self.active.push(idx);
        }
        self.finish(registry, idx, next, now);
        progress
    }

    /// Writes the output of every connection that has some and may take it. Returns
    /// whether anything happened.
    fn flush_all(&mut self, registry: &Registry, now: Instant) -> bool {
        let mut progress = false;
        self.ids.clear();
        self.ids.extend(self.engine.writable());
        for i in 0..self.ids.len() {
            let Some(&idx) = self.by_id.get(&self.ids[i]) else { continue };
            let Some(c) = self.slots[idx].as_mut() else { continue };
            if !c.writable {
                continue;
            }
            progress |= c.flush(&mut self.engine);
            c.sync_interest(&self.engine, registry);
            let next = c.next(&self.engine);
            if next == Next::Keep && c.may_read(&self.engine) && !c.queued {
                // Output no longer holds its input back.
                c.queued = true;
                self.active.push(idx);
            }
            progress |= next != Next::Keep;
            self.finish(registry, idx, next, now);
        }
        progress
    }

    /// Closes the connections the engine ended on its own (shed for room, idle past their
    /// timeout, a peer that stopped reading): it has nothing more to say on them. Returns
    /// whether there were any.
    fn reap(&mut self, registry: &Registry, now: Instant) -> bool {
        let mut any = false;
        while let Some(id) = self.engine.poll_ended() {
            any = true;
            if let Some(idx) = self.by_id.get(&id).copied() {
                self.close(registry, idx, now);
            }
        }
        any
    }

    /// Applies `next` to connection `idx`.
    fn finish(&mut self, registry: &Registry, idx: usize, next: Next, now: Instant) {
        match next {
            Next::Keep => {}
            Next::Close => self.close(registry, idx, now),
            Next::Linger => self.linger(registry, idx, now),
        }
    }

    /// The engine is done with connection `idx`: forget it there, shut the sending side
    /// down (the client reads end of file after the last response) and read what the
    /// client still sends until it closes too, or [`LINGER`] passes. Closing at once
    /// with unread bytes would make the kernel reset the connection, which can destroy
    /// the response before the client reads it.
    fn linger(&mut self, registry: &Registry, idx: usize, now: Instant) {
        let Some(c) = self.slots[idx].as_mut() else { return };
        self.engine.handle_closed(now, c.id);
        self.by_id.remove(&c.id);
        c.lingering = true;
        c.kept = Vec::new();
        c.kept_at = 0;
        if c.read_closed || c.stream.shutdown(Shutdown::Write).is_err() {
            c.failed = true;
            self.close(registry, idx, now);
            return;
        }
        c.sync_interest(&self.engine, registry);
        self.lingering.push_back((now + LINGER, idx, c.serial));
        if c.wants_input() && !c.queued {
            c.queued = true;
            self.active.push(idx);
        }
    }

    /// Drops connection `idx`; the engine learns it closed (which cancels its
    /// outstanding request) unless it was done with it already.
    fn close(&mut self, registry: &Registry, idx: usize, now: Instant) {
        let Some(mut c) = self.slots[idx].take() else { return };
        if !c.lingering {
            self.engine.handle_closed(now, c.id);
            self.by_id.remove(&c.id);
        }
        let _ = registry.deregister(&mut c.stream);
        self.free.push(idx);
        self.live -= 1;
    }

    crate::spans::span_options!();

    /// The engine, for its getters.
    pub fn engine(&self) -> &HttpEngine {
        &self.engine
    }

    /// The engine, to answer tickets and authorizations. Call [`drive`](Self::drive)
    /// afterwards so the answers are written.
    pub fn engine_mut(&mut self) -> &mut HttpEngine {
        &mut self.engine
    }

    /// The engine's clock: microseconds since the server was created.
    pub fn now(&self) -> Instant {
        Instant::from_micros(u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// How long the caller's [`Poll::poll`] may sleep before the server needs
    /// [`drive`](Self::drive) for a timer (a deadline of the engine, or the end of
    /// a [`LINGER`]): `None` when none is armed, `Some(Duration::ZERO)` when one is due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let linger = self.lingering.front().map(|&(deadline, ..)| deadline);
        let deadline = match (self.engine.poll_timeout(), linger) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(deadline.saturating_duration_since(self.now()))
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Open TCP connections, lingering ones included.
    pub fn connections(&self) -> usize {
        self.live
    }

    /// Runs a private [`Poll`] loop forever. The server runs only when a socket is ready
    /// or a timer is due, so `host` must answer every event inside the callback (MCP
    /// events through the event, authorizations with `Some(verdict)`).
    ///
    /// # Errors
    ///
    /// Those of [`register`](Self::register), [`drive`](Self::drive) and the poller.
    pub fn run(self, host: impl FnMut(HttpEvent<'_>) -> Option<Verdict>) -> io::Result<()> {
        self.run_with(host, |_| {})
    }

    /// [`run`](Self::run), calling `after` with the engine after every batch of work, so
    /// that the host can act on it outside the event callback: publish what an event
    /// asked for ([`Commands::replace_catalog`](mcp_engine::Commands::replace_catalog), [`Commands::notify_resource_updated`](mcp_engine::Commands::notify_resource_updated)),
    /// answer tickets it kept. The server then writes what that produced.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    pub fn run_with(
        self,
        host: impl FnMut(HttpEvent<'_>) -> Option<Verdict>,
        mut after: impl FnMut(&mut HttpEngine),
    ) -> io::Result<()> {
        self.run_timed(host, |engine, _| {
            after(engine);
            None
        })
    }

    /// [`run_with`](Self::run_with) for a host with timers of its own: `after` gets the
    /// current time too and returns when it wants to be called next (`None`: only after
    /// the next batch of work). The loop wakes at that time even if no socket is ready,
    /// so a host can pace what it sends for a ticket it kept (a slow tool's progress
    /// notifications, say) without a thread.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    pub fn run_timed(
        mut self,
        mut host: impl FnMut(HttpEvent<'_>) -> Option<Verdict>,
        mut after: impl FnMut(&mut HttpEngine, std::time::Instant) -> Option<std::time::Instant>,
    ) -> io::Result<()> {
        const LISTENER: Token = Token(0);
        let mut poll = Poll::new()?;
        let mut events = Events::with_capacity(256);
        self.register(poll.registry(), LISTENER, 1..usize::MAX)?;
        let mut wake: Option<std::time::Instant> = None;
        loop {
            let timeout = crate::wake::earliest(self.poll_timeout(), wake);
            match poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            self.handle_events(poll.registry(), &events, &mut host)?;
            wake = after(&mut self.engine, std::time::Instant::now());
            self.drive(poll.registry(), &mut host)?;
        }
    }
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServer")
            .field("engine", &self.engine)
            .field("local_addr", &self.listener.local_addr().ok())
            .field("tokens", &self.tokens)
            .field("connections", &self.live)
            .field("lingering", &self.lingering.len())
            .finish_non_exhaustive()
    }
}

/// Serves `engine` over HTTP on `listener` (put in non-blocking mode) until an error
/// ends the listener: it never returns otherwise. `host` gets each [`HttpEvent`] and
/// must answer it inside the callback: return `Some(verdict)` for authorization events,
/// `None` for MCP events after answering them (see [`HttpServer`]). Hosts that answer
/// later need their own loop (see the [crate docs](crate#streamable-http)).
///
/// ```no_run
/// use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent};
/// use mcp_engine::Config;
/// use mcp_fixture as everything;
///
/// let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
/// let config = Config::new("demo", env!("CARGO_PKG_VERSION"));
/// let engine = HttpEngine::new(config, http, everything::catalog());
/// let listener = std::net::TcpListener::bind("127.0.0.1:3000")?;
/// mcp_io_mio::serve_http(listener, engine, |event| {
///     if let HttpEvent::Mcp(event) = event {
///         everything::respond(event);
///     }
///     None // no authorization events: `Authorization::Everyone`
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
///
/// Those of [`HttpServer::from_std`] and [`HttpServer::run`].
pub fn serve_http(
    listener: std::net::TcpListener,
    engine: HttpEngine,
    host: impl FnMut(HttpEvent<'_>) -> Option<Verdict>,
) -> io::Result<()> {
    HttpServer::from_std(listener, engine)?.run(host)
}
