//! The TCP loop of the Streamable HTTP server: one task owning the engine (through an
//! [`Owner`]) accepts connections, waits on every socket itself through per-connection
//! wakers (`readiness`), reads each connection into one buffer as far as the engine takes
//! input, writes output as far as each socket takes it, and lingers on the connections it
//! ends (see [`HttpServer`](crate::HttpServer) for the design and bounds).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use mcp_engine::http::ConnId;
use tokio::io::ReadBuf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::auth::Authorizer;
use crate::host::channel::Completion;
use crate::host::handler::Handler;
use crate::run::owner::{Decided, Owner};
use crate::run::readiness::{Ready, ReadyQueue};
use crate::telemetry::{Telemetry, Wire};

/// The one buffer every connection is read into (by the engine task).
const READ_BUF_LEN: usize = 64 * 1024;

/// Bytes one readiness report reads at most from one connection before it yields to the
/// others.
const READ_BUDGET: usize = 1 << 20;

/// How long a connection the server ends keeps draining what the client still sends,
/// after its last response, so that the client reads that response rather than a reset.
const LINGER: Duration = Duration::from_secs(2);

/// Serves connections accepted on `listener` with `owner` until `shutdown` completes (see
/// [`HttpServer::serve_with_shutdown`](crate::HttpServer::serve_with_shutdown)).
pub(crate) async fn serve<H: Handler, A: Authorizer>(
    mut owner: Owner<H, A>,
    mut done_rx: mpsc::UnboundedReceiver<Completion>,
    mut decided_rx: mpsc::UnboundedReceiver<Decided>,
    telemetry: Telemetry,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    // Connections this server reads itself speak HTTP/1.1.
    owner.set_telemetry(Wire::HTTP1, telemetry);
    // Other nodes' news is heard before the first connection is taken.
    owner.listen_first().await;
    let ready = Arc::new(ReadyQueue::default());
    let mut tcp = Tcp {
        owner,
        conns: HashMap::new(),
        waiting: VecDeque::new(),
        ready: Arc::clone(&ready),
        reports: Vec::new(),
        reading: true,
        accept_paused: false,
        scratch: Vec::new(),
        buf: vec![0; READ_BUF_LEN].into_boxed_slice(),
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
        let timer = tcp.owner.next_timeout();
        tokio::select! {
            biased;
            () = &mut shutdown, if !shutting_down => {
                tracing::debug!("shutting down: no more connections or requests");
                shutting_down = true;
                tcp.reading = false;
            }
            Some(done) = done_rx.recv() => tcp.owner.complete(done),
            Some(decided) = decided_rx.recv() => tcp.owner.decided(decided),
            notice = tcp.owner.notice() => tcp.owner.noticed(notice),
            // Every report queued, before one pump: a burst of readiness (thousands
            // of slow clients each sending a byte) costs one pass of the loop.
            () = ready.wait() => tcp.take_ready(),
            () = tokio::time::sleep_until(timer.unwrap_or_else(tokio::time::Instant::now)), if timer.is_some() => {
                tcp.owner.handle_timeout();
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
/// The engine task's side of a TCP connection. Dropping it closes the socket.
struct TcpConn {
    stream: TcpStream,
    /// Report this connection readable, or writable (see [`ReadyQueue`]).
    read_waker: Waker,
    write_waker: Waker,
    /// A waker is registered for that direction and has not fired since.
    armed_read: bool,
    armed_write: bool,
    /// Bytes read and not yet taken by the engine: offered first, and the connection is
    /// not read while there are any. (Not used while the engine keeps its word: each read
    /// asks for at most what it takes.)
    held: Vec<u8>,
    held_at: usize,
    /// The socket was reported readable and not read to `WouldBlock` since.
    readable: bool,
    /// A write would have blocked: output waits for the socket's report.
    write_blocked: bool,
    /// Listed in [`Tcp::waiting`].
    queued: bool,
}

impl TcpConn {
    /// Whether the connection has input to offer the engine.
    fn has_input(&self) -> bool {
        self.held_at < self.held.len() || self.readable
    }
}

struct Tcp<H, A> {
    owner: Owner<H, A>,
    conns: HashMap<ConnId, TcpConn>,
    /// Connections with input to offer (held bytes, or a readable socket), oldest first.
    waiting: VecDeque<ConnId>,
    /// What the sockets report.
    ready: Arc<ReadyQueue>,
    /// Reports taken from [`ready`](Self::ready), reused.
    reports: Vec<Ready>,
    /// Whether input is offered to the engine (not once shutting down).
    reading: bool,
    /// Whether the engine refused a connection, and none ended since.
    accept_paused: bool,
    scratch: Vec<ConnId>,
    /// The buffer every read goes to.
    buf: Box<[u8]>,
}

impl<H: Handler, A: Authorizer> Tcp<H, A> {
    /// Opens a connection on the engine and waits for its first bytes. When the engine refuses
    /// it (every connection is busy), closes it and pauses accepting.
    fn open(&mut self, stream: TcpStream, peer: SocketAddr) {
        let now = self.owner.now();
        let conn = match self.owner.engine.open(now, Some(peer)) {
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
        let c = TcpConn {
            stream,
            read_waker: self.ready.waker(conn, true),
            write_waker: self.ready.waker(conn, false),
            armed_read: false,
            armed_write: false,
            held: Vec::new(),
            held_at: 0,
            readable: false,
            write_blocked: false,
            queued: false,
        };
        self.conns.insert(conn, c);
        self.sync(conn);
    }

    /// Takes the sockets' reports.
    fn take_ready(&mut self) {
        let mut reports = std::mem::take(&mut self.reports);
        self.ready.take(&mut reports);
        for ready in reports.drain(..) {
            let Some(c) = self.conns.get_mut(&ready.conn) else { continue };
            if ready.read {
                c.armed_read = false;
                c.readable = true;
                if !c.queued {
                    c.queued = true;
                    self.waiting.push_back(ready.conn);
                }
            } else {
                c.armed_write = false;
                c.write_blocked = false;
            }
        }
        self.reports = reports;
    }

    /// Registers `conn`'s wakers for what the engine task waits for now: bytes when it
    /// has no input, room when a write would have blocked. A socket ready at once is
    /// reported through the queue like any other.
    fn sync(&mut self, conn: ConnId) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        if !c.has_input() && !c.armed_read {
            match c.stream.poll_read_ready(&mut Context::from_waker(&c.read_waker)) {
                Poll::Pending => c.armed_read = true,
                // Ready, or an error the next read reports.
                Poll::Ready(_) => self.ready.push(Ready { conn, read: true }),
            }
        }
        if c.write_blocked && !c.armed_write {
            match c.stream.poll_write_ready(&mut Context::from_waker(&c.write_waker)) {
                Poll::Pending => c.armed_write = true,
                Poll::Ready(_) => self.ready.push(Ready { conn, read: false }),
            }
        }
    }

    /// Ends a connection on the engine (cancelling its request) and here.
    fn close(&mut self, conn: ConnId) {
        self.owner.closed(conn);
        self.conns.remove(&conn);
        self.accept_paused = false;
    }

    /// The engine is done with `conn` and its output is written: forget it there, shut
    /// the sending side down and drain (in a task) what the client still sends, so
    /// that the client reads the response rather than a reset.
    fn linger(&mut self, conn: ConnId) {
        self.owner.closed(conn);
        if let Some(c) = self.conns.remove(&conn) {
            tokio::spawn(linger(c.stream));
        }
        self.accept_paused = false;
    }

    /// Closes the connections the engine ended on its own (shed for room, idle past
    /// their timeout, a client that stopped reading). Returns whether there were any.
    fn reap(&mut self) -> bool {
        let mut any = false;
        while let Some(conn) = self.owner.engine.poll_ended() {
            any = true;
            tracing::debug!(?conn, "the engine ended the connection");
            self.close(conn);
        }
        any
    }

    /// Runs the engine until it rests: kept decisions, input, events, output, closes.
    fn pump(&mut self) {
        loop {
            let mut progress = self.owner.deliver_deferred();
            // A head allowed: its body is read now.
            let mut decided = std::mem::take(&mut self.scratch);
            self.owner.take_decided(&mut decided);
            for &conn in &decided {
                self.requeue(conn);
            }
            decided.clear();
            self.scratch = decided;
            progress |= self.offer_input();
            progress |= self.owner.drain();
            progress |= self.flush();
            progress |= self.reap();
            if !progress {
                break;
            }
        }
    }

    /// Offers waiting input to the engine, oldest first, where allowed. Returns whether
    /// the engine took any.
    fn offer_input(&mut self) -> bool {
        let mut progress = false;
        for _ in 0..self.waiting.len() {
            if !self.reading || !self.owner.room() {
                break;
            }
            let Some(conn) = self.waiting.pop_front() else { break };
            let Some(c) = self.conns.get_mut(&conn) else { continue };
            c.queued = false;
            if !c.has_input() {
                continue;
            }
            if !self.owner.engine.pending_output(conn).is_empty() {
                // A response still waits to be written: read no further for now.
                c.queued = true;
                self.waiting.push_back(conn);
                continue;
            }
            progress |= self.input(conn);
            self.sync(conn);
        }
        progress
    }

    /// Moves what `conn`'s socket has into the engine: each read asks for at most what
    /// the engine takes now ([`HttpEngine::input_capacity`](mcp_engine::http::HttpEngine::input_capacity)), so every byte read is taken
    /// at once, in order. Returns whether the engine took any.
    ///
    /// A connection the engine reads nothing from now (its request waits for its answer,
    /// or the authorizer decides on its head) is left out of [`Tcp::waiting`] until that
    /// changes: its output is written ([`Tcp::flush`] queues it again) or its verdict
    /// delivered ([`Owner::take_decided`]).
    fn input(&mut self, conn: ConnId) -> bool {
        let now = self.owner.now();
        self.owner.received(now);
        let mut progress = false;
        let Some(c) = self.conns.get_mut(&conn) else { return false };
        if c.held_at < c.held.len() {
            // Not reached while the engine keeps its word (it takes what it has room
            // for): bytes it did not take go in first, and nothing is read meanwhile.
            let n = self.owner.engine.handle_input(now, conn, &c.held[c.held_at..]);
            c.held_at += n;
            progress = n > 0;
            if c.held_at < c.held.len() {
                c.queued = true;
                self.waiting.push_back(conn);
                return progress;
            }
            c.held = Vec::new();
            c.held_at = 0;
        }
        let mut budget = READ_BUDGET;
        let mut buf = std::mem::take(&mut self.buf);
        while budget > 0 {
            let Some(c) = self.conns.get_mut(&conn) else { break };
            if !c.readable || !self.owner.engine.pending_output(conn).is_empty() {
                break;
            }
            let room = self.owner.engine.input_capacity(conn).min(buf.len());
            if room == 0 {
                // Nothing is read, but a client that went away is noticed (closing the
                // connection cancels its request): a peek that would block waits for the
                // socket's next report.
                let mut probe = [0u8; 1];
                match c
                    .stream
                    .poll_peek(&mut Context::from_waker(&c.read_waker), &mut ReadBuf::new(&mut probe))
                {
                    Poll::Pending => {
                        c.readable = false;
                        c.armed_read = true;
                    }
                    Poll::Ready(Ok(0)) => {
                        tracing::debug!(?conn, "peer closed the connection");
                        self.close(conn);
                    }
                    // Bytes wait for the engine: read once it takes them.
                    Poll::Ready(Ok(_)) => {}
                    Poll::Ready(Err(e)) => {
                        tracing::debug!(?conn, %e, "peek failed");
                        self.close(conn);
                    }
                }
                break;
            }
            match c.stream.try_read(&mut buf[..room]) {
                Ok(0) => {
                    tracing::debug!(?conn, "peer closed the connection");
                    self.close(conn);
                    break;
                }
                Ok(n) => {
                    budget = budget.saturating_sub(n);
                    tracing::trace!(?conn, bytes = n, "read");
                    let taken = self.owner.engine.handle_input(now, conn, &buf[..n]);
                    progress = true;
                    if taken < n {
                        c.held.extend_from_slice(&buf[taken..n]);
                        c.held_at = 0;
                        break;
                    }
                    self.owner.drain();
                    self.flush();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => c.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(?conn, %e, "read failed");
                    self.close(conn);
                    break;
                }
            }
        }
        self.buf = buf;
        self.requeue(conn);
        progress
    }

    /// Queues `conn` for [`input`](Self::input) if it has input the engine takes now (the
    /// read budget ran out, or held bytes wait), unless output holds it back (then
    /// [`flush`](Self::flush) queues it once written).
    fn requeue(&mut self, conn: ConnId) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let held = c.held_at < c.held.len();
        let wanted = held || self.owner.engine.input_capacity(conn) > 0;
        if c.has_input() && wanted && !c.queued && self.owner.engine.pending_output(conn).is_empty() {
            c.queued = true;
            self.waiting.push_back(conn);
        }
    }

    /// Writes every connection's output as far as its socket takes it, and ends the
    /// connections the engine is done with. Returns whether anything was written.
    fn flush(&mut self) -> bool {
        let mut conns = std::mem::take(&mut self.scratch);
        conns.clear();
        conns.extend(self.owner.engine.writable());
        let mut progress = false;
        for &conn in &conns {
            let Some(c) = self.conns.get_mut(&conn) else {
                tracing::warn!(?conn, "output for an unknown connection");
                continue;
            };
            if c.write_blocked {
                continue;
            }
            let mut failed = false;
            loop {
                let out = self.owner.engine.pending_output(conn);
                if out.is_empty() {
                    break;
                }
                match c.stream.try_write(out) {
                    Ok(0) => failed = true,
                    Ok(n) => {
                        tracing::trace!(?conn, bytes = n, "written");
                        // Only what the socket took leaves the engine: its limits on
                        // unsent output and its write timeout hold.
                        self.owner.engine.consume_output(conn, n);
                        progress = true;
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => c.write_blocked = true,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        tracing::debug!(?conn, %e, "write failed");
                        failed = true;
                    }
                }
                break;
            }
            if failed {
                self.close(conn);
            } else if self.owner.engine.wants_close(conn) {
                tracing::debug!(?conn, "closing the connection");
                self.linger(conn);
            } else {
                // Output no longer holds its input back.
                self.requeue(conn);
                self.sync(conn);
            }
        }
        self.scratch = conns;
        progress
    }

    /// Whether shutting down may finish: nothing with the handler, nothing left to write.
    fn drained(&self) -> bool {
        self.owner.idle() && self.conns.keys().all(|&c| self.owner.engine.pending_output(c).is_empty())
    }
}

/// Shuts the sending side of a connection the server is done with down, then reads and
/// drops what the client still sends, until it closes or [`LINGER`] passes.
async fn linger(stream: TcpStream) {
    let mut stream = stream;
    let _ = tokio::io::AsyncWriteExt::shutdown(&mut stream).await;
    let r = &stream;
    let drain = async {
        let mut sink = [0u8; 1024];
        loop {
            if r.readable().await.is_err() {
                break;
            }
            match r.try_read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                Err(_) => break,
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}
