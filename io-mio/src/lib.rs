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
//! [`StdioServer::engine_mut`]. `mcp_fixture::respond` (the `everything` fixture, crate
//! `mcp-fixture`) is such a callback.
//!
//! Answers given outside the callback (from a channel, a timer, another thread's
//! result...) are written by the next [`StdioServer::drive`] (or by the next readiness
//! event): call `drive` after answering.
//!
//! ## What the server does with the descriptors
//!
//! - **Reading**: on a readiness event of the reader it reads until the pipe would block,
//!   each read asking for at most what the engine takes now
//!   ([`Engine::input_capacity`]) and offering all of it to [`Engine::handle_input`], so
//!   every byte is taken at once, in order. While the engine takes nothing (it is paused
//!   on the in-flight limit or on unsent output, its one-frame buffer full) reading stops:
//!   the kernel pipe buffer then fills and the client's writes block. End of file becomes
//!   [`Engine::handle_eof`] once every byte was taken.
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
//! - **Accepting**: until the listener would block. At
//!   [`max_connections`](mcp_engine::http::HttpConfig::max_connections) the engine makes
//!   room by ending the connection idle longest (the server closes it); while the token
//!   range is used up, every connection is busy and the engine refuses (the one it refused
//!   is then held, unserved), or the process is out of file descriptors (`EMFILE`), new
//!   connections wait in the kernel's backlog until one closes.
//! - **Reading**: until the socket would block, into one buffer shared by all
//!   connections, each read asking for at most what the engine takes now
//!   ([`HttpEngine::input_capacity`]) and offering all of it to
//!   [`HttpEngine::handle_input`], so every byte is taken at once, in order, and no
//!   connection holds input of its own. A connection the engine reads nothing from (a
//!   pipelined request behind one the host has not answered, a head the host decides on)
//!   is not read until that changes, though a client that closes it is noticed (its
//!   request is cancelled). Nor is a connection read while its output waits for the
//!   client to read: a pipelining client that never reads cannot make the server buffer
//!   without bound. One call reads at most 1 MiB per connection before it re-arms the
//!   socket and moves on.
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
//!   the response (a `413`, say) before the client reads it. A connection the engine
//!   ends with nothing to send ([`HttpEngine::poll_ended`]: idle past its timeout, shed
//!   for room, a client that stopped reading) is closed at once.
//! - **Time**: as for stdio, microseconds since the server was created. Timers (the
//!   engine's head, body, idle and write deadlines, SSE keep-alives, lingering) are
//!   served by the next call after [`HttpServer::poll_timeout`]: poll with it.
//!
//! Limits of the HTTP server:
//!
//! - [`serve_http`] and [`HttpServer::run`] call the host only when a socket is ready:
//!   MCP events and authorizations must be answered inside the callback there.
//!
//! ## Request spans (feature `tracing`)
//!
//! With the feature `tracing` (off by default: without it the crate does not depend on
//! `tracing` at all), both servers make one `tracing` span per request, named and
//! attributed as OpenTelemetry's semantic conventions for MCP say, with the same names and
//! attributes as `mcp-io-tokio`'s (the mapping is shared: crate `mcp-spans`): for each
//! request handed to the host, entered while the host callback runs and closed when the
//! engine reports the host's answer (with `error.type` for a tool error or a server
//! error), and for each request or notification the engine answered itself. Install any
//! `tracing` subscriber to see them; with none, nothing is recorded or allocated. The
//! client's `traceparent` is recorded as the fields `parent.trace_id`, `parent.span_id`
//! and `parent.sampled` (this crate makes no OpenTelemetry spans, and records no metrics:
//! see `docs/observability.md`). `record_resource_uri` and `status_code_key` on either
//! server choose what else is recorded. The HTTP server also logs each request the engine
//! refused (`403` for a `Host` not allowed, `413` for a body over the cap, ...) as a
//! `DEBUG` event `request refused` with its reason; without the feature the refusals stay
//! in the engine for the host to read
//! ([`HttpEngine::poll_refusal`](mcp_engine::http::HttpEngine::poll_refusal),
//! [`HttpEngine::refusal_counts`](mcp_engine::http::HttpEngine::refusal_counts)).
//!
//! [mio]: https://docs.rs/mio
//! [`HttpEngine`]: mcp_engine::http::HttpEngine
//! [`HttpEngine::handle_input`]: mcp_engine::http::HttpEngine::handle_input
//! [`HttpEngine::input_capacity`]: mcp_engine::http::HttpEngine::input_capacity
//! [`HttpEngine::handle_closed`]: mcp_engine::http::HttpEngine::handle_closed
//! [`HttpEngine::wants_close`]: mcp_engine::http::HttpEngine::wants_close
//! [`HttpEngine::poll_ended`]: mcp_engine::http::HttpEngine::poll_ended
//! [`HttpEngine::authorize`]: mcp_engine::http::HttpEngine::authorize
//! [`HttpEngine::authorize_body`]: mcp_engine::http::HttpEngine::authorize_body
//! [`HttpEvent::Authorize`]: mcp_engine::http::HttpEvent::Authorize
//! [`HttpEvent::AuthorizeBody`]: mcp_engine::http::HttpEvent::AuthorizeBody
//!
//! [`Engine`]: mcp_engine::Engine
//! [`Engine::answer_tool`]: mcp_engine::Commands::answer_tool
//! [`Engine::handle_eof`]: mcp_engine::Engine::handle_eof
//! [`Engine::handle_input`]: mcp_engine::Engine::handle_input
//! [`Engine::input_capacity`]: mcp_engine::Engine::input_capacity
//! [`Engine::poll_event`]: mcp_engine::Engine::poll_event
//! [`Event`]: mcp_engine::Event
//! [`Event::Cancelled`]: mcp_engine::Event::Cancelled

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Module map, lowest first: `wake` (the host's own wake-up times in the private loops),
// `spans` (the request spans of feature `tracing`, made with crate `mcp-spans`; a no-op
// without it), `stdio` (the stdio server and the shared read-buffer size; uses `spans`),
// `http` (the Streamable HTTP server; uses `stdio`'s buffer size and `spans`). This file
// is the face.
mod http;
mod spans;
mod stdio;
mod wake;

pub use http::{HttpServer, LINGER, serve_http};
#[cfg(feature = "tracing")]
pub use mcp_spans::StatusCodeKey;
pub use stdio::{StdioServer, serve_stdio};
