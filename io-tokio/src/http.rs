//! Streamable HTTP: [`serve_http`] over a [`TcpListener`], and the engine-owning core it
//! shares with the tower service.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use mcp_engine::http::{ConnId, HttpEngine, HttpEvent, Verdict};
use mcp_engine::{Config, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::auth::{AuthorizeInfo, Authorizer};
use crate::channel::{Completion, Publisher};
use crate::handler::Handler;
use crate::work::Tasks;

/// Bytes read from a connection at a time.
const READ_BUF_LEN: usize = 16 * 1024;

/// A write buffer larger than this is not kept for the connection's next response.
const SPARE_CAPACITY: usize = 64 * 1024;

/// How long a connection the server ends keeps draining what the client still sends,
/// after its last response, so that the client reads that response rather than a reset.
const LINGER: Duration = Duration::from_secs(2);

/// Serves Streamable HTTP on `listener`: see [`HttpServer`], whose defaults this uses.
///
/// Returns only on an error of `listener` (use [`HttpServer::serve_with_shutdown`] to stop
/// it). Must run inside a tokio runtime.
pub async fn serve_http<H: Handler, A: Authorizer>(
    listener: TcpListener,
    engine: HttpEngine,
    handler: Arc<H>,
    auth: A,
) -> io::Result<()> {
    HttpServer::new(engine, handler, auth).serve(listener).await
}

/// A Streamable HTTP server: an [`HttpEngine`], the [`Handler`] doing its work and the
/// [`Authorizer`] deciding its `Authorize` events, served over TCP
/// ([`serve`](Self::serve)) or, with feature `tower`, as a tower service
/// (`into_service`, see `McpService`).
///
/// # Design
///
/// One task owns the engine. Each TCP connection has a reader task and a writer task: the
/// reader hands the engine task one buffer at a time and reads again only once the engine
/// took all of it, so a connection whose input the engine does not take (its request is
/// with the handler, or it pipelined more than the engine buffers) is not read further,
/// and the bytes not taken are kept and offered again. The engine task writes each
/// response as far as the socket takes it without waiting, and hands the rest to the
/// writer; a connection's input is offered to the engine only while nothing it was
/// answered waits to be written, so a client that does not read its responses stops being
/// read. Each tool call, resource read or prompt request runs in a task of its own, as with
/// [`serve`](crate::serve). Closing a connection cancels its request and aborts the task;
/// a client that shuts down only its sending side is taken to have gone away too (once the
/// server reads the end of its input, which it does while the client's request is with the
/// handler, not while the server holds input it has not offered to the engine yet).
/// The engine's body deadlines run on a timer.
///
/// A connection the engine ends (`connection: close`, a refusal, a `408`) has its response
/// written, its sending side shut down, and what the client still sends drained for up to
/// two seconds before the socket closes, so the client sees the response rather than a
/// reset.
///
/// # Bounds
///
/// At most [`max_in_flight`](Self::max_in_flight) requests are with the handler at once:
/// at that many, no input is offered to the engine and no request authorized, until one
/// finishes. Each connection holds at most one read buffer (16 KiB) besides the engine's
/// own request buffer. [`HttpConfig::max_connections`](mcp_engine::http::HttpConfig::max_connections)
/// bounds the connections: past it, an accepted connection is closed at once and the
/// listener is not polled again until a connection ends.
#[must_use = "an HttpServer does nothing until served"]
pub struct HttpServer<H, A> {
    pub(crate) engine: HttpEngine,
    pub(crate) handler: Arc<H>,
    pub(crate) auth: A,
    pub(crate) max_in_flight: usize,
    pub(crate) max_body: usize,
    /// The channel handler replies and publications come back on (made early so that
    /// [`HttpServer::publisher`] works before serving).
    pub(crate) done: (mpsc::UnboundedSender<Completion>, mpsc::UnboundedReceiver<Completion>),
}

impl<H, A> std::fmt::Debug for HttpServer<H, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("engine", &self.engine)
            .field("max_in_flight", &self.max_in_flight)
            .field("max_body", &self.max_body)
            .finish_non_exhaustive()
    }
}

impl<H: Handler, A: Authorizer> HttpServer<H, A> {
    /// A server of `engine`, with `handler` doing its work and `auth` deciding its
    /// `Authorize` events ([`AllowAll`](crate::AllowAll) for an engine configured with
    /// [`Authorization::Everyone`](mcp_engine::http::Authorization::Everyone)).
    pub fn new(engine: HttpEngine, handler: Arc<H>, auth: A) -> Self {
        let defaults = Config::new("", "");
        Self {
            engine,
            handler,
            auth,
            max_in_flight: defaults.in_flight_limit(),
            max_body: 1 << 20,
            done: mpsc::unbounded_channel(),
        }
    }

    /// A [`Publisher`] to this server once it runs: replace its catalog, announce
    /// resource updates, end its subscriptions (from any task).
    pub fn publisher(&self) -> Publisher {
        Publisher::new(self.done.0.clone())
    }

    /// The most requests with the handler at once. Set it to the engine's
    /// [`Config::max_in_flight`] when you changed that (default 64): the engine cannot report
    /// its limit, and answers a request over it `202 Accepted` with no body instead of
    /// waiting for room, so the server must never let it get there.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// The engine's [`HttpConfig::max_body`](mcp_engine::http::HttpConfig::max_body)
    /// (default 1 MiB), which the tower service must know to collect a body (it gives the
    /// engine at most this plus one byte, so that a longer body is refused `413`): set it
    /// when you changed that. Set smaller than the engine's cap, bodies between the two are
    /// cut short and refused as malformed JSON. Not used by [`serve`](Self::serve).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes.max(1);
        self
    }

    /// Serves connections accepted on `listener`. Returns only on an error of `listener`
    /// (a failed accept that concerns one connection, or a lack of file descriptors, is
    /// logged and serving goes on). Must run inside a tokio runtime.
    pub async fn serve(self, listener: TcpListener) -> io::Result<()> {
        self.serve_with_shutdown(listener, std::future::pending()).await
    }

    /// Serves connections accepted on `listener` until `shutdown` completes, then stops
    /// accepting connections and reading requests, waits for the requests with the
    /// handler to be answered and their responses written, and returns `Ok(())`;
    /// connections still open are then closed. Wrap the call in a timeout to bound the
    /// wait.
    pub async fn serve_with_shutdown(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        let (host, mut done_rx, mut verdict_rx) = Host::new(self);
        // Unbounded, yet it holds at most a read and a close per connection (a reader reads
        // again only once the engine took what it read), and a write per piece of output
        // handed to a writer.
        let (conn_tx, mut conn_rx) = mpsc::unbounded_channel();
        let mut tcp = Tcp {
            host,
            conns: HashMap::new(),
            held: VecDeque::new(),
            conn_tx,
            reading: true,
            accept_paused: false,
            scratch: Vec::new(),
        };
        let mut shutdown = std::pin::pin!(shutdown);
        let mut shutting_down = false;
        // Set after running out of file descriptors: accept again from then on.
        let mut accept_after: Option<tokio::time::Instant> = None;
        tracing::debug!(addr = ?listener.local_addr().ok(), "serving HTTP");
        loop {
            tcp.pump();
            if shutting_down && tcp.drained() {
                tracing::debug!("shut down");
                return Ok(());
            }
            let timer = tcp.host.next_timeout();
            tokio::select! {
                biased;
                () = &mut shutdown, if !shutting_down => {
                    tracing::debug!("shutting down: no more connections or requests");
                    shutting_down = true;
                    tcp.reading = false;
                }
                Some(done) = done_rx.recv() => tcp.host.complete(done),
                Some(verdict) = verdict_rx.recv() => tcp.host.verdict(verdict),
                Some(msg) = conn_rx.recv() => match msg {
                    FromConn::Read(read) => tcp.read(read),
                    FromConn::Written(written) => tcp.written(written),
                },
                () = tokio::time::sleep_until(timer.unwrap_or_else(tokio::time::Instant::now)), if timer.is_some() => {
                    tcp.host.handle_timeout();
                }
                () = tokio::time::sleep_until(accept_after.unwrap_or_else(tokio::time::Instant::now)), if accept_after.is_some() => {
                    accept_after = None;
                }
                accepted = listener.accept(), if !shutting_down && !tcp.accept_paused && accept_after.is_none() => match accepted {
                    Ok((stream, peer)) => tcp.open(stream, peer),
                    Err(e) if is_transient(&e) => tracing::debug!(%e, "accept failed"),
                    Err(e) if is_resource_shortage(&e) => {
                        tracing::warn!(%e, "accept failed; accepting again in 100 ms");
                        accept_after = Some(tokio::time::Instant::now() + Duration::from_millis(100));
                    }
                    Err(e) => return Err(e),
                },
            }
        }
    }
}

/// An accept error that concerns one connection only.
fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// Out of file descriptors or memory: waiting may help.
fn is_resource_shortage(e: &io::Error) -> bool {
    // ENFILE, EMFILE (the same numbers on Linux, the BSDs and macOS); ENOBUFS, ENOMEM.
    matches!(e.raw_os_error(), Some(23 | 24)) || e.kind() == io::ErrorKind::OutOfMemory
}

/// A decision of the [`Authorizer`] on connection `conn`.
pub(crate) struct VerdictMsg {
    conn: ConnId,
    body: bool,
    verdict: Verdict,
}

/// Sends [`Verdict::Failed`] if an authorization task ends without deciding (it
/// panicked), so the request is answered `500` rather than left waiting.
struct VerdictGuard {
    tx: Option<mpsc::UnboundedSender<VerdictMsg>>,
    conn: ConnId,
    body: bool,
}

impl VerdictGuard {
    fn send(mut self, verdict: Verdict) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(VerdictMsg { conn: self.conn, body: self.body, verdict });
        }
    }
}

impl Drop for VerdictGuard {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(VerdictMsg { conn: self.conn, body: self.body, verdict: Verdict::Failed });
        }
    }
}

type BoxVerdict = Pin<Box<dyn Future<Output = Verdict> + Send>>;

/// The engine and what runs its work: handler tasks, authorization tasks, the clock. Used
/// by the TCP loop and the tower service's task alike.
pub(crate) struct Host<H, A> {
    pub(crate) engine: HttpEngine,
    handler: Arc<H>,
    auth: Arc<A>,
    tasks: Tasks,
    verdict_tx: mpsc::UnboundedSender<VerdictMsg>,
    /// Authorization tasks still deciding, by connection.
    authorizing: HashMap<ConnId, AbortHandle>,
    /// Allowed requests waiting for room under the in-flight limit.
    deferred: VecDeque<VerdictMsg>,
    max_in_flight: usize,
    start: tokio::time::Instant,
}

impl<H: Handler, A: Authorizer> Host<H, A> {
    #[allow(clippy::type_complexity)]
    pub(crate) fn new(
        server: HttpServer<H, A>,
    ) -> (Self, mpsc::UnboundedReceiver<Completion>, mpsc::UnboundedReceiver<VerdictMsg>) {
        let (done_tx, done_rx) = server.done;
        let tasks = Tasks::with_sender(done_tx);
        let (verdict_tx, verdict_rx) = mpsc::unbounded_channel();
        let host = Self {
            engine: server.engine,
            handler: server.handler,
            auth: Arc::new(server.auth),
            tasks,
            verdict_tx,
            authorizing: HashMap::new(),
            deferred: VecDeque::new(),
            max_in_flight: server.max_in_flight,
            start: tokio::time::Instant::now(),
        };
        (host, done_rx, verdict_rx)
    }

    pub(crate) fn now(&self) -> Instant {
        Instant::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// Whether the engine may start one more request without passing the in-flight limit.
    pub(crate) fn room(&self) -> bool {
        self.engine.in_flight() < self.max_in_flight
    }

    /// Whether nothing is with the handler or the authorizer.
    pub(crate) fn idle(&self) -> bool {
        self.engine.in_flight() == 0 && self.tasks.is_empty()
    }

    /// When the engine's next deadline falls.
    pub(crate) fn next_timeout(&self) -> Option<tokio::time::Instant> {
        let at = self.engine.poll_timeout()?;
        Some(self.start + Duration::from_micros(at.as_micros()))
    }

    pub(crate) fn handle_timeout(&mut self) {
        let now = self.now();
        self.engine.handle_timeout(now);
    }

    /// Drains the engine's events: starts handler and authorization work, aborts cancelled
    /// work. Returns whether there was any.
    pub(crate) fn drain(&mut self) -> bool {
        let mut any = false;
        loop {
            let ask = match self.engine.poll_event() {
                None => break,
                Some(HttpEvent::Mcp(event)) => {
                    self.tasks.dispatch(&self.handler, event);
                    None
                }
                Some(HttpEvent::Authorize(req)) => {
                    Some((req.conn, AuthorizeInfo::from_engine(req.peer, &req.headers), None))
                }
                Some(HttpEvent::AuthorizeBody(req)) => Some((
                    req.conn,
                    AuthorizeInfo::from_engine(req.peer, &req.headers),
                    Some(req.body.to_vec()),
                )),
                Some(other) => {
                    tracing::warn!(event = ?other, "ignoring an event this adapter does not know");
                    None
                }
            };
            any = true;
            if let Some((conn, info, body)) = ask {
                self.authorize(conn, info, body);
            }
        }
        any
    }

    /// Asks the authorizer about a head (`body` is `None`) or a body.
    fn authorize(&mut self, conn: ConnId, info: AuthorizeInfo, body: Option<Vec<u8>>) {
        let auth = Arc::clone(&self.auth);
        let is_body = body.is_some();
        let mut decision: BoxVerdict = match body {
            None => Box::pin(async move { auth.authorize(&info).await }),
            Some(body) => Box::pin(async move { auth.authorize_body(&info, &body).await }),
        };
        // A synchronous decision is taken at once.
        if let Poll::Ready(verdict) = decision.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            self.verdict(VerdictMsg { conn, body: is_body, verdict });
            return;
        }
        let guard = VerdictGuard { tx: Some(self.verdict_tx.clone()), conn, body: is_body };
        let task = tokio::spawn(async move {
            let guard = guard;
            let verdict = decision.await;
            guard.send(verdict);
        });
        self.authorizing.insert(conn, task.abort_handle());
    }

    /// Delivers a decision, or keeps an `Allow` until the in-flight limit has room.
    pub(crate) fn verdict(&mut self, msg: VerdictMsg) {
        self.authorizing.remove(&msg.conn);
        if msg.verdict.allows() && !self.room() {
            self.deferred.push_back(msg);
        } else {
            self.deliver(&msg);
        }
    }

    fn deliver(&mut self, msg: &VerdictMsg) {
        let now = self.now();
        tracing::trace!(conn = ?msg.conn, verdict = ?msg.verdict, body = msg.body, "authorized");
        if msg.body {
            self.engine.authorize_body(now, msg.conn, msg.verdict);
        } else {
            self.engine.authorize(now, msg.conn, msg.verdict);
        }
    }

    /// Delivers the kept decisions there is room for. Returns whether it delivered any.
    pub(crate) fn deliver_deferred(&mut self) -> bool {
        let mut any = false;
        while self.room() {
            let Some(msg) = self.deferred.pop_front() else { break };
            self.deliver(&msg);
            any = true;
            // Starting the request may have taken the room: drain before the next one.
            self.drain();
        }
        any
    }

    /// Answers a finished handler task.
    pub(crate) fn complete(&mut self, done: Completion) {
        self.tasks.complete(&mut self.engine, done);
    }

    /// Forgets `conn`, cancelling its request if it has one.
    pub(crate) fn closed(&mut self, conn: ConnId) {
        let now = self.now();
        self.engine.handle_closed(now, conn);
        if let Some(task) = self.authorizing.remove(&conn) {
            task.abort();
        }
        self.deferred.retain(|m| m.conn != conn);
    }
}

impl<H, A> Drop for Host<H, A> {
    fn drop(&mut self) {
        for (_, task) in self.authorizing.drain() {
            task.abort();
        }
    }
}

/// A message of a connection's reader or writer task.
enum FromConn {
    Read(Read),
    Written(Written),
}

/// A reader task's message.
enum Read {
    /// `buf[..len]` was read; send the buffer back on the connection's `back` channel
    /// once the engine took it all.
    Data { conn: ConnId, buf: Vec<u8>, len: usize },
    /// The peer closed its side, or reading failed.
    Closed { conn: ConnId },
}

/// A writer task's message.
enum Written {
    /// `buf` was written; it can take the connection's next output.
    Done { conn: ConnId, buf: Vec<u8> },
    /// Writing failed: the connection is gone.
    Failed { conn: ConnId },
}

/// Input read but not yet taken by the engine.
struct Held {
    buf: Vec<u8>,
    pos: usize,
    len: usize,
}

/// The engine task's side of a TCP connection. Dropping it ends the connection: the
/// writer writes what it was given and shuts the socket down (once both hold no more
/// `socket`), the reader drains and stops.
struct TcpConn {
    held: Option<Held>,
    /// Gives the reader its buffer back; dropped to stop the reader.
    back: mpsc::Sender<Vec<u8>>,
    /// The sending side, shared with the writer: output is written from the engine task
    /// while the writer has nothing to write, and handed to the writer otherwise.
    socket: Arc<OwnedWriteHalf>,
    writer: mpsc::UnboundedSender<Vec<u8>>,
    /// Bytes given to the writer and not yet written.
    unwritten: usize,
    /// A buffer for output to hand to the writer, back from it.
    spare: Vec<u8>,
}

impl TcpConn {
    /// Writes `out` now as far as the socket takes it without waiting, and hands the rest
    /// to the writer. Fails when the connection is gone.
    fn write(&mut self, out: &[u8]) -> io::Result<()> {
        let mut done = 0;
        // While the writer has something, it writes everything, in order.
        while self.unwritten == 0 && done < out.len() {
            match self.socket.try_write(&out[done..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let rest = &out[done..];
        if !rest.is_empty() {
            let mut buf = std::mem::take(&mut self.spare);
            buf.extend_from_slice(rest);
            if self.writer.send(buf).is_ok() {
                self.unwritten += rest.len();
            }
        }
        Ok(())
    }
}

struct Tcp<H, A> {
    host: Host<H, A>,
    conns: HashMap<ConnId, TcpConn>,
    /// Connections with held input, oldest first.
    held: VecDeque<ConnId>,
    /// What the readers and writers of the connections send.
    conn_tx: mpsc::UnboundedSender<FromConn>,
    /// Whether input is offered to the engine (not once shutting down).
    reading: bool,
    /// Whether the engine refused a connection, and none ended since.
    accept_paused: bool,
    scratch: Vec<ConnId>,
}

impl<H: Handler, A: Authorizer> Tcp<H, A> {
    /// Opens a connection on the engine and starts its reader and writer. When the engine
    /// refuses it (too many connections), closes it and pauses accepting.
    fn open(&mut self, stream: tokio::net::TcpStream, peer: SocketAddr) {
        let now = self.host.now();
        let conn = match self.host.engine.open(now, Some(peer)) {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(%peer, %e, "connection refused; accepting no more until one ends");
                self.accept_paused = true;
                return;
            }
        };
        tracing::debug!(%peer, ?conn, "connection opened");
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%e, "cannot set TCP_NODELAY");
        }
        let (r, w) = stream.into_split();
        let socket = Arc::new(w);
        let (back, back_rx) = mpsc::channel(1);
        let (writer, out_rx) = mpsc::unbounded_channel();
        tokio::spawn(read_loop(conn, r, self.conn_tx.clone(), back_rx));
        tokio::spawn(write_loop(conn, Arc::clone(&socket), out_rx, self.conn_tx.clone()));
        let c = TcpConn { held: None, back, socket, writer, unwritten: 0, spare: Vec::new() };
        self.conns.insert(conn, c);
    }

    fn read(&mut self, read: Read) {
        match read {
            Read::Data { conn, buf, len } => {
                let Some(c) = self.conns.get_mut(&conn) else { return };
                tracing::trace!(?conn, bytes = len, "read");
                c.held = Some(Held { buf, pos: 0, len });
                self.held.push_back(conn);
            }
            Read::Closed { conn } => {
                if self.conns.contains_key(&conn) {
                    tracing::debug!(?conn, "peer closed the connection");
                    self.close(conn);
                }
            }
        }
    }

    fn written(&mut self, written: Written) {
        match written {
            Written::Done { conn, mut buf } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.unwritten -= buf.len();
                    if c.spare.capacity() == 0 && buf.capacity() <= SPARE_CAPACITY {
                        buf.clear();
                        c.spare = buf;
                    }
                }
            }
            Written::Failed { conn } => {
                if self.conns.contains_key(&conn) {
                    tracing::debug!(?conn, "writing failed");
                    self.close(conn);
                }
            }
        }
    }

    /// Ends a connection on the engine (cancelling its request) and here.
    fn close(&mut self, conn: ConnId) {
        self.host.closed(conn);
        self.conns.remove(&conn);
        self.accept_paused = false;
    }

    /// Runs the engine until it rests: kept decisions, held input, events, output,
    /// closes.
    fn pump(&mut self) {
        loop {
            let mut progress = self.host.deliver_deferred();
            progress |= self.offer_held();
            progress |= self.host.drain();
            progress |= self.flush();
            if !progress {
                break;
            }
        }
    }

    /// Offers held input to the engine, oldest first, where allowed. Returns whether the
    /// engine took any.
    fn offer_held(&mut self) -> bool {
        let mut progress = false;
        for _ in 0..self.held.len() {
            if !self.reading || !self.host.room() {
                break;
            }
            let Some(conn) = self.held.pop_front() else { break };
            let Some(c) = self.conns.get_mut(&conn) else { continue };
            let Some(h) = c.held.as_mut() else { continue };
            if c.unwritten > 0 {
                // A response still waits to be written: read no further for now.
                self.held.push_back(conn);
                continue;
            }
            let now = self.host.now();
            let taken = self.host.engine.handle_input(now, conn, &h.buf[h.pos..h.len]);
            h.pos += taken;
            progress |= taken > 0;
            if h.pos == h.len {
                let h = c.held.take().expect("held input");
                // The reader waits for it (there is room: it has no other buffer), or is
                // gone already.
                let _ = c.back.try_send(h.buf);
            } else {
                self.held.push_back(conn);
            }
            self.host.drain();
            self.flush();
        }
        progress
    }

    /// Hands every connection's output to its writer and ends the connections the engine
    /// is done with. Returns whether there was any output.
    fn flush(&mut self) -> bool {
        let mut conns = std::mem::take(&mut self.scratch);
        conns.clear();
        conns.extend(self.host.engine.writable());
        for &conn in &conns {
            let out = self.host.engine.pending_output(conn);
            let n = out.len();
            let mut failed = false;
            match self.conns.get_mut(&conn) {
                Some(c) => {
                    tracing::trace!(?conn, bytes = n, "response");
                    if let Err(e) = c.write(out) {
                        tracing::debug!(?conn, %e, "write failed");
                        failed = true;
                    }
                }
                None => tracing::warn!(?conn, "output for an unknown connection"),
            }
            self.host.engine.consume_output(conn, n);
            if failed {
                self.close(conn);
            } else if self.host.engine.wants_close(conn) {
                tracing::debug!(?conn, "closing the connection");
                self.close(conn);
            }
        }
        let any = !conns.is_empty();
        self.scratch = conns;
        any
    }

    /// Whether shutting down may finish: nothing with the handler, nothing left to write.
    fn drained(&self) -> bool {
        self.host.idle() && self.conns.values().all(|c| c.unwritten == 0)
    }
}

/// Reads a connection, one buffer at a time: the next read starts only once the engine
/// task gave the buffer back on `back`. Stops when the sender of `back` is dropped, then
/// drains the socket for a while.
async fn read_loop(
    conn: ConnId,
    mut r: OwnedReadHalf,
    tx: mpsc::UnboundedSender<FromConn>,
    mut back: mpsc::Receiver<Vec<u8>>,
) {
    let mut buf = vec![0; READ_BUF_LEN];
    loop {
        // Until the buffer is sent, `back` can only be closed, never hold a buffer.
        let read = tokio::select! {
            biased;
            _ = back.recv() => break,
            read = r.read(&mut buf) => read,
        };
        let len = match read {
            Ok(0) => {
                let _ = tx.send(FromConn::Read(Read::Closed { conn }));
                return;
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!(?conn, %e, "read failed");
                let _ = tx.send(FromConn::Read(Read::Closed { conn }));
                return;
            }
        };
        if tx.send(FromConn::Read(Read::Data { conn, buf, len })).is_err() {
            return;
        }
        buf = match back.recv().await {
            Some(buf) => buf,
            None => break,
        };
    }
    linger(r).await;
}

/// Reads and drops what the client still sends, until it closes or [`LINGER`] passes.
async fn linger(mut r: OwnedReadHalf) {
    let mut sink = vec![0; 4096];
    let drain = async {
        loop {
            match r.read(&mut sink).await {
                Ok(0) => break,
                Err(e) if e.kind() != io::ErrorKind::Interrupted => break,
                _ => {}
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// Writes what the engine task hands over, in order, handing each buffer back once
/// written. The socket's sending side is shut down once the engine task dropped its
/// sender and both dropped `w`.
async fn write_loop(
    conn: ConnId,
    w: Arc<OwnedWriteHalf>,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    tx: mpsc::UnboundedSender<FromConn>,
) {
    while let Some(buf) = rx.recv().await {
        if let Err(e) = write_all(&w, &buf).await {
            tracing::debug!(?conn, %e, "write failed");
            let _ = tx.send(FromConn::Written(Written::Failed { conn }));
            return;
        }
        let _ = tx.send(FromConn::Written(Written::Done { conn, buf }));
    }
    // Dropping the last reference to `w` shuts the sending side down.
}

/// Writes all of `buf` to the shared `w`.
async fn write_all(w: &OwnedWriteHalf, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        w.writable().await?;
        match w.try_write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
