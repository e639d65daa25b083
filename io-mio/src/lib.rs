//! # mcp-io-mio
//!
//! Drive the sans-IO [`mcp_engine::Engine`] from **your own** [mio] event loop.
//!
//! This crate holds no protocol logic: a [`StdioServer`] owns an [`Engine`] and the two
//! ends of a newline-delimited JSON-RPC stream (by default duplicates of the process's
//! stdin and stdout), registers them with your [`mio::Registry`] under tokens you choose,
//! and moves bytes between them and the engine when you hand it readiness events. Work
//! only your code can do (tool calls, resource reads, prompts) reaches you through a
//! *host* callback, one [`Event`] at a time: answer it at once through the event, or keep
//! its ticket and answer later from anywhere in your loop.
//!
//! [`HttpServer`] does the same for Streamable HTTP: one [`HttpEngine`] behind a
//! [`mio::net::TcpListener`], serving many connections (see
//! [Streamable HTTP](#streamable-http)).
//!
//! If you have no loop of your own, [`serve_stdio`] and [`serve_http`] run one for you.
//!
//! ## A user-owned loop
//!
//! ```no_run
//! use mcp_engine::{Config, Content, Engine, Event, ToolOutput};
//! use mcp_io_mio::StdioServer;
//! use mio::{Events, Poll, Token};
//!
//! const STDIN: Token = Token(0);
//! const STDOUT: Token = Token(1);
//!
//! # fn catalog() -> mcp_engine::Catalog { mcp_engine::Catalog::empty() }
//! let engine = Engine::new(Config::new("demo", "1.0"), catalog());
//! let mut server = StdioServer::stdio(engine)?;
//! let mut poll = Poll::new()?;
//! let mut events = Events::with_capacity(64);
//! server.register(poll.registry(), STDIN, STDOUT)?;
//!
//! // The host: answer each event inline (or keep `event.ticket()` to answer later).
//! let mut host = |event: Event<'_>| {
//!     if let Event::CallTool(call) = event {
//!         let text = call.arguments.raw();
//!         let _ = call.answer(&ToolOutput::new(&[Content::text(text)]));
//!     }
//! };
//!
//! // Needed when stdin is a regular file (see "Limits"); harmless otherwise.
//! server.drive(poll.registry(), &mut host)?;
//! while !server.is_finished() {
//!     poll.poll(&mut events, server.poll_timeout())?;
//!     for event in events.iter() {
//!         // Events for tokens the server does not own are ignored, so every event can
//!         // be offered; your own sources are handled next to it.
//!         server.handle_ready(poll.registry(), event, &mut host)?;
//!     }
//!     // After answering tickets from elsewhere: `server.drive(poll.registry(), &mut host)?`
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! `examples/custom_loop.rs` shows tickets answered later, by a worker thread that wakes
//! the loop through a [`mio::Waker`].
//!
//! ## The host callback
//!
//! Every method that moves bytes takes `host: impl FnMut(Event<'_>)` and calls it for
//! each event [`Engine::poll_event`] yields (the server drains them: you never poll). An
//! event borrows the engine; either answer through it (`call.answer(..)`,
//! `call.fail(..)`), or copy its [`Ticket`](mcp_engine::Ticket) and whatever data you
//! need and answer later with [`Engine::answer_tool`] and friends on
//! [`StdioServer::engine_mut`]. `mcp_engine::everything::respond` (feature `everything`)
//! is such a callback.
//!
//! Answers given outside the callback (from a channel, a timer, another thread's
//! result...) are written by the next [`StdioServer::drive`] (or by the next readiness
//! event): call `drive` after answering.
//!
//! ## What the server does with the descriptors
//!
//! - **Reading**: on a readiness event of the reader it reads until the pipe would block,
//!   offering every chunk to [`Engine::handle_input`]. Bytes the engine does not take
//!   yet (it is paused on the in-flight limit or on unsent output) are kept, and reading
//!   stops until they are taken: the kernel pipe buffer then fills and the client's
//!   writes block. End of file becomes [`Engine::handle_eof`] once every byte was taken.
//!   One call reads at most 1 MiB, so a flooding client cannot starve your other sources:
//!   past that, the server re-arms the reader's registration and returns, and the next
//!   poll reports the reader again.
//! - **Writing**: output is written as soon as there is some. Only when the pipe is full
//!   is the writer registered for writable readiness; it is deregistered again once the
//!   output is flushed, so an idle server gets no spurious wakeups.
//! - **Time**: the clock is read once per call ([`StdioServer::now`]): microseconds since
//!   the server was created.
//! - Nothing but engine output is ever written to the writer.
//!
//! ## Limits
//!
//! - The descriptors must be pollable: pipes, sockets or terminals. On Linux, epoll
//!   refuses regular files and `/dev/null` (`EPERM`). The server copes with a
//!   non-pollable *reader* (`server < requests.jsonl`): [`StdioServer::register`] then
//!   registers nothing for it and the server reads it whenever it runs, since such reads
//!   never block. Nothing wakes your loop for it, though, so call [`StdioServer::drive`]
//!   once after registering (as above; [`serve_stdio`] does). A non-pollable *writer*
//!   (`server > out.jsonl`) works as long as writes never block, which is the case for
//!   regular files; should one block, [`StdioServer::handle_ready`] returns the
//!   registration error.
//! - [`StdioServer::stdio`] duplicates the descriptors but `O_NONBLOCK` belongs to the
//!   open file, which the duplicates share with fds 0 and 1 (and with any other process
//!   holding them, such as the shell that owns a terminal). While the server lives, do not
//!   use [`std::io::stdin`] or [`std::io::stdout`] (print diagnostics on stderr; stdout
//!   carries only protocol frames anyway). Blocking mode is restored when the server is
//!   dropped.
//! - [`serve_stdio`] and [`StdioServer::run`] only call the host when a descriptor is
//!   ready: tickets must be answered inside the callback there. Hosts that answer later
//!   need their own loop and [`StdioServer::drive`].
//! - Unix only (mio's `unix::pipe`).
//!
//! ## Streamable HTTP
//!
//! [`HttpServer`] drives one [`HttpEngine`], which does all of HTTP/1.1 and MCP
//! (framing, keep-alive, pipelining, refusals, hooks, timers): the server only accepts
//! connections and moves bytes. Register it with a token for the listener and a range of
//! tokens for its connections, and offer it your loop's events:
//!
//! ```no_run
//! use mcp_engine::Config;
//! use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent, Verdict};
//! use mcp_io_mio::HttpServer;
//! use mio::{Events, Poll, Token};
//!
//! const LISTENER: Token = Token(0);
//! const MINE: Token = Token(1); // a source of your own, e.g. a `mio::Waker`
//!
//! # fn catalog() -> mcp_engine::Catalog { mcp_engine::Catalog::empty() }
//! let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
//! let engine = HttpEngine::new(Config::new("demo", "1.0"), http, catalog());
//! let listener = std::net::TcpListener::bind("127.0.0.1:3000")?;
//! let mut server = HttpServer::from_std(listener, engine)?;
//! let mut poll = Poll::new()?;
//! let mut events = Events::with_capacity(256);
//! // Connections get `Token(16)` and up.
//! server.register(poll.registry(), LISTENER, 16..usize::MAX)?;
//!
//! let mut host = |event: HttpEvent<'_>| match event {
//!     // Decide at once (or return `None` and call `HttpEngine::authorize` later).
//!     HttpEvent::Authorize(request) => {
//!         let ok = request.headers.get("authorization") == Some(b"Bearer let-me-in");
//!         Some(if ok { Verdict::Allow } else { Verdict::Unauthenticated })
//!     }
//!     HttpEvent::Mcp(event) => {
//!         // Answer through the event, or keep `event.ticket()` and answer later
//!         // through `server.engine_mut()`, then call `server.drive(..)`.
//!         let _ = event;
//!         None
//!     }
//!     _ => None,
//! };
//!
//! loop {
//!     poll.poll(&mut events, server.poll_timeout())?;
//!     for event in events.iter() {
//!         if event.token() == MINE {
//!             // your own source
//!         }
//!     }
//!     // Ignores your tokens; an empty batch (a timeout) serves the server's timers.
//!     server.handle_events(poll.registry(), &events, &mut host)?;
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The host callback is `FnMut(HttpEvent<'_>) -> Option<Verdict>`: MCP events are
//! answered as over stdio (return `None`); for [`HttpEvent::Authorize`] and
//! [`HttpEvent::AuthorizeBody`], return `Some(verdict)` and the server passes it on, or
//! `None` to decide later with [`HttpEngine::authorize`] / [`HttpEngine::authorize_body`]
//! on [`HttpServer::engine_mut`]. See [`HttpServer`].
//!
//! What the server does with the sockets:
//!
//! - **Accepting**: until the listener would block. While the token range is used up,
//!   the engine refuses connections
//!   ([`max_connections`](mcp_engine::http::HttpConfig::max_connections); the one it
//!   refused is then held, unserved) or the process is out of file descriptors
//!   (`EMFILE`), new connections wait in the kernel's backlog until one closes.
//! - **Reading**: until the socket would block, into one buffer shared by all
//!   connections, offering each chunk to [`HttpEngine::handle_input`]. Bytes the engine
//!   does not take yet (a pipelined request behind one the host has not answered) are
//!   kept for that connection, and it is not read until they are taken. Nor is a
//!   connection read while its output waits for the client to read: a pipelining
//!   client that never reads cannot make the server buffer without bound. One call
//!   reads at most 1 MiB per connection before it re-arms the socket and moves on.
//! - **Writing**: output is written as soon as there is some; a socket is registered
//!   for writable readiness only while output waits for it.
//! - **Closing connections**: end of file or an I/O error ends a connection:
//!   [`HttpEngine::handle_closed`] cancels its outstanding request (the host gets
//!   [`Event::Cancelled`]), and output already produced is still written first after
//!   end of file. HTTP/1.1 servers treat a client shutting down its sending side as
//!   gone, and so does this one. When the engine ends a connection
//!   ([`HttpEngine::wants_close`]: a refusal, or `Connection: close`), the server shuts
//!   down its sending side once the response is written, then reads and discards what
//!   the client still sends until the client closes or [`LINGER`] passes: closing
//!   with unread bytes would make the kernel reset the connection, which can destroy
//!   the response (a `413`, say) before the client reads it.
//! - **Time**: as for stdio, microseconds since the server was created. Timers (the
//!   engine's body deadlines, lingering) are served by the next call after
//!   [`HttpServer::poll_timeout`]: poll with it.
//!
//! Limits of the HTTP server:
//!
//! - [`serve_http`] and [`HttpServer::run`] call the host only when a socket is ready:
//!   MCP events and authorizations must be answered inside the callback there.
//! - The engine times out a request whose body is slow, not a client that is slow to
//!   send a head or idles on a kept-alive connection: such connections stay open (up
//!   to `max_connections`) until the client closes them.
//! - A client that sends `Expect: 100-continue` gets no interim `100 Continue`; clients
//!   send the body anyway after a wait of their own (one second for curl).
//!
//! [mio]: https://docs.rs/mio
//! [`HttpEngine`]: mcp_engine::http::HttpEngine
//! [`HttpEngine::handle_input`]: mcp_engine::http::HttpEngine::handle_input
//! [`HttpEngine::handle_closed`]: mcp_engine::http::HttpEngine::handle_closed
//! [`HttpEngine::wants_close`]: mcp_engine::http::HttpEngine::wants_close
//! [`HttpEngine::authorize`]: mcp_engine::http::HttpEngine::authorize
//! [`HttpEngine::authorize_body`]: mcp_engine::http::HttpEngine::authorize_body
//! [`HttpEvent::Authorize`]: mcp_engine::http::HttpEvent::Authorize
//! [`HttpEvent::AuthorizeBody`]: mcp_engine::http::HttpEvent::AuthorizeBody

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::time::Duration;

use mcp_engine::{Engine, Event, Instant};
use mio::unix::pipe::{Receiver, Sender};
use mio::{Events, Interest, Poll, Registry, Token};

mod http;

pub use http::{HttpServer, LINGER, serve_http};

/// Size of the buffer bytes are read into.
const READ_BUF_LEN: usize = 64 * 1024;

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
    /// Bytes read and not yet taken by the engine: `buf[start..end]`.
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
    pub fn new(engine: Engine, reader: Receiver, writer: Sender) -> io::Result<Self> {
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
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
                host(event);
            }
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

    /// Reads one chunk if the reader may have bytes, every kept byte was taken, the
    /// engine has room and (for a polled reader) `budget` is not spent. Returns whether
    /// anything happened (bytes or end of file).
    fn fill(&mut self, budget: &mut usize) -> io::Result<bool> {
        if !self.readable || self.read_eof || self.start < self.end || self.engine.input_capacity() == 0 {
            return Ok(false);
        }
        if *budget == 0 && self.reader_registered {
            return Ok(false);
        }
        loop {
            match (&self.reader).read(&mut self.buf) {
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
    /// asked for ([`Engine::replace_catalog`], [`Engine::notify_resource_updated`]),
    /// answer tickets it kept. The server then writes what that produced.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    pub fn run_with(
        mut self,
        mut host: impl FnMut(Event<'_>),
        mut after: impl FnMut(&mut Engine),
    ) -> io::Result<()> {
        const READ: Token = Token(0);
        const WRITE: Token = Token(1);
        let mut poll = Poll::new()?;
        let mut events = Events::with_capacity(8);
        self.register(poll.registry(), READ, WRITE)?;
        self.drive(poll.registry(), &mut host)?;
        while !self.is_finished() {
            match poll.poll(&mut events, self.poll_timeout()) {
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
            after(&mut self.engine);
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
/// use mcp_engine::{Config, Engine, everything};
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
