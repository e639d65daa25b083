//! [`StdioServer`]: an [`Engine`] and the two ends of a newline-delimited JSON-RPC
//! stream, driven from a mio loop; [`serve_stdio`], a loop of its own.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::time::Duration;

use mcp_engine::{Engine, Event, Instant};
use mio::unix::pipe::{Receiver, Sender};
use mio::{Events, Interest, Poll, Registry, Token};

use crate::spans::{self, Spans};

/// Size of the buffer bytes are read into.
pub(crate) const READ_BUF_LEN: usize = 64 * 1024;

/// Bytes one call reads at most from a polled reader before it yields to the caller's
/// other sources.
const READ_BUDGET: usize = 1 << 20;

/// An [`Engine`] wired to a non-blocking reader and writer that a caller's mio loop
/// polls. See the [crate docs](crate) for the loop it expects.
pub struct StdioServer {
    engine: Engine,
    reader: Receiver,
    writer: Sender,
    origin: std::time::Instant,
    /// Bytes read and not yet taken by the engine: `buf[start..end]` (empty while the
    /// engine keeps its word: each read asks for at most what it takes,
    /// [`Engine::input_capacity`]).
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    tokens: Option<(Token, Token)>,
    /// The reader is registered with the registry (false before `register`, when it
    /// cannot be polled, and after end of file).
    reader_registered: bool,
    /// The reader may have bytes: no read has returned `WouldBlock` since the last
    /// readiness event (always true for a reader that cannot be polled).
    readable: bool,
    /// The reader returned end of file.
    read_eof: bool,
    /// [`Engine::handle_eof`] was called.
    eof_delivered: bool,
    /// The writer is registered for writable readiness.
    writer_registered: bool,
    /// The writer may take bytes: no write has returned `WouldBlock` since the last
    /// readiness event.
    writable: bool,
    /// Put the descriptors back in blocking mode on drop (the stdio duplicates).
    restore_blocking: bool,
    /// The request spans (feature `tracing`; a no-op without it).
    spans: Spans,
}

impl StdioServer {
    /// A server on duplicates of this process's stdin and stdout, put in non-blocking
    /// mode (which affects fds 0 and 1 too until the server is dropped: see the crate
    /// docs' "Limits").
    pub fn stdio(engine: Engine) -> io::Result<Self> {
        let reader = Receiver::from(io::stdin().as_fd().try_clone_to_owned()?);
        let writer = Sender::from(io::stdout().as_fd().try_clone_to_owned()?);
        let mut server = Self::new(engine, reader, writer)?;
        server.restore_blocking = true;
        Ok(server)
    }

    /// A server reading requests from `reader` and writing responses to `writer`, for
    /// instance the ends of two [`mio::unix::pipe::new`] pairs, or a child process's
    /// pipes. Both are put in non-blocking mode.
    pub fn new(mut engine: Engine, reader: Receiver, writer: Sender) -> io::Result<Self> {
        // Task ids are drawn from the OS random source (without it no call becomes a task).
        let mut entropy = [0u8; 32];
        if getrandom::fill(&mut entropy).is_ok() {
            engine.set_entropy(&entropy);
        }
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
        spans::keep_answers(&mut engine);
        Ok(Self {
            engine,
            reader,
            writer,
            origin: std::time::Instant::now(),
            buf: vec![0; READ_BUF_LEN].into_boxed_slice(),
            start: 0,
            end: 0,
            tokens: None,
            reader_registered: false,
            readable: false,
            read_eof: false,
            eof_delivered: false,
            writer_registered: false,
            writable: true,
            restore_blocking: false,
            spans: Spans::new(false),
        })
    }

    /// Registers the reader under `read` for readable readiness, and remembers `write`
    /// for the writer, which is registered only while output waits for a full pipe.
    ///
    /// A reader that cannot be polled (`EPERM`: a regular file or `/dev/null` on Linux)
    /// is not registered; it is read whenever the server runs, so call
    /// [`drive`](Self::drive) once after this. Registering twice is an error
    /// ([`io::ErrorKind::AlreadyExists`]); [`deregister`](Self::deregister) first.
    pub fn register(&mut self, registry: &Registry, read: Token, write: Token) -> io::Result<()> {
        if self.tokens.is_some() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "the server is already registered"));
        }
        self.tokens = Some((read, write));
        if !self.read_eof {
            match registry.register(&mut self.reader, read, Interest::READABLE) {
                Ok(()) => self.reader_registered = true,
                // Not pollable: such files never block, so read them unprompted.
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => self.readable = true,
                Err(e) => {
                    self.tokens = None;
                    return Err(e);
                }
            }
        }
        self.update_writer(registry)
    }

    /// Removes both descriptors from `registry`. Do it before dropping the server if the
    /// [`Poll`] lives on: a duplicated descriptor's registration outlives it while the
    /// original (fd 0 or 1) stays open.
    pub fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        self.tokens = None;
        if self.reader_registered {
            self.reader_registered = false;
            registry.deregister(&mut self.reader)?;
        }
        if self.writer_registered {
            self.writer_registered = false;
            registry.deregister(&mut self.writer)?;
        }
        Ok(())
    }

    /// Handles one readiness event of the caller's loop: reads, feeds the engine, hands
    /// every engine [`Event`] to `host`, and writes output, until nothing more can be done
    /// without waiting. Events whose token is not one the server registered are ignored.
    ///
    /// # Errors
    ///
    /// A read or write error other than `WouldBlock` and `Interrupted` (for instance
    /// `BrokenPipe` when the client closed its reading end), or a registration error.
    /// The stream is then unusable: stop serving.
    pub fn handle_ready(
        &mut self,
        registry: &Registry,
        event: &mio::event::Event,
        host: impl FnMut(Event<'_>),
    ) -> io::Result<()> {
        let Some((read, write)) = self.tokens else { return Ok(()) };
        let token = event.token();
        if token == read && self.reader_registered {
            self.readable = true;
        } else if token == write && self.writer_registered {
            self.writable = true;
        } else {
            return Ok(());
        }
        self.drive(registry, host)
    }

    /// Makes all the progress possible without waiting: offers kept input, reads what
    /// the reader has (if it was ready), hands engine events to `host`, writes output.
    /// Call it after answering tickets outside the host callback so that the answers are
    /// sent and the engine, if it was held back by the in-flight limit, resumes reading.
    /// Cheap when there is nothing to do.
    ///
    /// # Errors
    ///
    /// As [`handle_ready`](Self::handle_ready).
    pub fn drive(&mut self, registry: &Registry, mut host: impl FnMut(Event<'_>)) -> io::Result<()> {
        let now = self.now();
        self.engine.set_wall_clock(now, mcp_engine::UnixTime::from_system_time(std::time::SystemTime::now()));
        if self.engine.poll_timeout().is_some_and(|t| t <= now) {
            self.engine.handle_timeout(now);
        }
        let mut budget = READ_BUDGET;
        loop {
            let mut progress = false;
            // Kept input first: it was read before anything still in the pipe.
            if self.start < self.end {
                let n = self.engine.handle_input(now, &self.buf[self.start..self.end]);
                self.start += n;
                progress |= n > 0;
                if self.start == self.end {
                    (self.start, self.end) = (0, 0);
                }
            }
            if self.read_eof && !self.eof_delivered && self.start == self.end {
                self.engine.handle_eof(now);
                self.eof_delivered = true;
                progress = true;
            }
            while let Some(event) = self.engine.poll_event() {
                self.spans.call(event, &mut host);
            }
            self.spans.drain(&mut self.engine);
            progress |= self.flush()?;
            progress |= self.fill(&mut budget)?;
            if !progress {
                break;
            }
        }
        if self.read_eof && self.reader_registered {
            self.reader_registered = false;
            registry.deregister(&mut self.reader)?;
        }
        if let Some((read, _)) = self.tokens
            && budget == 0
            && self.readable
            && self.reader_registered
        {
            // Yield to the caller's other sources: re-arming the registration makes the
            // poller report the reader again while it has bytes.
            registry.reregister(&mut self.reader, read, Interest::READABLE)?;
        }
        self.update_writer(registry)
    }

    /// Writes pending output until there is none or the writer would block. Returns
    /// whether any byte was written.
    fn flush(&mut self) -> io::Result<bool> {
        let mut wrote = false;
        while self.writable {
            let out = self.engine.pending_output();
            if out.is_empty() {
                break;
            }
            match (&self.writer).write(out) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    // Frees room in the engine, which may resume and produce more.
                    self.engine.consume_output(n);
                    wrote = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(wrote)
    }

    /// Reads one chunk, of at most what the engine takes now, if the reader may have
    /// bytes, every kept byte was taken, the engine has room and (for a polled reader)
    /// `budget` is not spent. Returns whether anything happened (bytes or end of file).
    fn fill(&mut self, budget: &mut usize) -> io::Result<bool> {
        let room = self.engine.input_capacity().min(self.buf.len());
        if !self.readable || self.read_eof || self.start < self.end || room == 0 {
            return Ok(false);
        }
        if *budget == 0 && self.reader_registered {
            return Ok(false);
        }
        loop {
            match (&self.reader).read(&mut self.buf[..room]) {
                Ok(0) => {
                    self.read_eof = true;
                    self.readable = false;
                    return Ok(true);
                }
                Ok(n) => {
                    (self.start, self.end) = (0, n);
                    *budget = budget.saturating_sub(n);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.readable = false;
                    return Ok(false);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Registers the writer while output waits for a full pipe; deregisters it otherwise.
    fn update_writer(&mut self, registry: &Registry) -> io::Result<()> {
        let Some((_, write)) = self.tokens else { return Ok(()) };
        let blocked = self.is_write_blocked();
        if blocked && !self.writer_registered {
            // A fresh registration reports the pipe at once if it drained meanwhile.
            registry.register(&mut self.writer, write, Interest::WRITABLE)?;
            self.writer_registered = true;
        } else if !blocked && self.writer_registered {
            registry.deregister(&mut self.writer)?;
            self.writer_registered = false;
        }
        Ok(())
    }

    crate::spans::span_options!();

    /// The engine, for its getters.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The engine, to answer tickets. Call [`drive`](Self::drive) afterwards so the
    /// answers are written.
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// The engine's clock: microseconds since the server was created.
    pub fn now(&self) -> Instant {
        Instant::from_micros(u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// How long the caller's [`Poll::poll`] may sleep before the server needs
    /// [`drive`](Self::drive) for the engine's timers: `None` when it arms none (as over
    /// stdio), `Some(Duration::ZERO)` when one is due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let deadline = self.engine.poll_timeout()?;
        Some(deadline.saturating_duration_since(self.now()))
    }

    /// Whether output waits for the writer: a write would have blocked and bytes remain.
    /// Exactly while this is true, the writer of a registered server is registered for
    /// writable readiness.
    pub fn is_write_blocked(&self) -> bool {
        !self.writable && !self.engine.pending_output().is_empty()
    }

    /// Whether serving is over: the client closed its side, every request was answered
    /// and every byte of output was written.
    pub fn is_finished(&self) -> bool {
        self.engine.is_finished()
    }

    /// Runs a private [`Poll`] loop until [`is_finished`](Self::is_finished). The server
    /// runs only when a descriptor is ready, so `host` must answer every event inside
    /// the callback.
    ///
    /// # Errors
    ///
    /// Those of [`handle_ready`](Self::handle_ready) and of the poller.
    pub fn run(self, host: impl FnMut(Event<'_>)) -> io::Result<()> {
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
    pub fn run_with(self, host: impl FnMut(Event<'_>), mut after: impl FnMut(&mut Engine)) -> io::Result<()> {
        self.run_timed(host, |engine, _| {
            after(engine);
            None
        })
    }

    /// [`run_with`](Self::run_with) for a host with timers of its own: `after` gets the
    /// current time too and returns when it wants to be called next (`None`: only after
    /// the next batch of work). The loop wakes at that time even if no descriptor is
    /// ready, so a host can pace what it sends for a ticket it kept.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    pub fn run_timed(
        mut self,
        mut host: impl FnMut(Event<'_>),
        mut after: impl FnMut(&mut Engine, std::time::Instant) -> Option<std::time::Instant>,
    ) -> io::Result<()> {
        const READ: Token = Token(0);
        const WRITE: Token = Token(1);
        let mut poll = Poll::new()?;
        let mut events = Events::with_capacity(8);
        self.register(poll.registry(), READ, WRITE)?;
        self.drive(poll.registry(), &mut host)?;
        let mut wake: Option<std::time::Instant> = None;
        while !self.is_finished() {
            match poll.poll(&mut events, crate::wake::earliest(self.poll_timeout(), wake)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if events.is_empty() {
                self.drive(poll.registry(), &mut host)?; // a timer is due
            }
            for event in events.iter() {
                self.handle_ready(poll.registry(), event, &mut host)?;
            }
            wake = after(&mut self.engine, std::time::Instant::now());
            self.drive(poll.registry(), &mut host)?;
        }
        self.deregister(poll.registry())
    }
}

impl fmt::Debug for StdioServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioServer")
            .field("engine", &self.engine)
            .field("tokens", &self.tokens)
            .field("kept_input", &(self.end - self.start))
            .field("read_eof", &self.read_eof)
            .field("write_blocked", &self.is_write_blocked())
            .finish_non_exhaustive()
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        if self.restore_blocking {
            // Fds 0 and 1 share the mode: give them back the blocking mode std expects.
            let _ = self.reader.set_nonblocking(false);
            let _ = self.writer.set_nonblocking(false);
        }
    }
}

/// Serves `engine` over this process's stdin and stdout until the client closes stdin
/// and every answer is written. `host` gets each [`Event`] and must answer it inside the
/// callback; hosts that answer later need their own loop (see the [crate docs](crate)).
///
/// ```no_run
/// use mcp_engine::{Config, Engine};
/// use mcp_fixture as everything;
///
/// let engine = Engine::new(Config::new("demo", env!("CARGO_PKG_VERSION")), everything::catalog());
/// mcp_io_mio::serve_stdio(engine, everything::respond)?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
///
/// Those of [`StdioServer::stdio`] and [`StdioServer::run`], e.g. `BrokenPipe` when the
/// client stops reading before the answers are written.
pub fn serve_stdio(engine: Engine, host: impl FnMut(Event<'_>)) -> io::Result<()> {
    StdioServer::stdio(engine)?.run(host)
}
