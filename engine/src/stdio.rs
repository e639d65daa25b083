//! The stdio [`Engine`]: a newline-delimited JSON-RPC stream over one connection, frames
//! held while every ticket slot is busy, end of input. The input buffer and the frames in
//! it are `wire::ndjson`'s; which frames go to the core, and when, is this file's.

use core::fmt;
use core::ops::Range;

use crate::catalog::Catalog;
use crate::commands::Commands;
use crate::commands::sealed::{Lent, Output, Shown};
use crate::config::Config;
use crate::jsonrpc::{Flow, Parser};
use crate::mcp::asks::{AskError, ClientAsk};
use crate::mcp::context::RequestContext;
use crate::mcp::event::Event;
use crate::mcp::mrtr::InputRequest;
use crate::mcp::subs::CatalogChange;
use crate::mcp::tickets::Ticket;
use crate::mcp::{Core, Mode, new_core};
use crate::output::Route;
use crate::revision::Revision;
use crate::time::{Instant, UnixTime};
use crate::wire::frame_id::{FrameId, MAX_ID_LEN};
use crate::wire::ndjson::{self, Lines, Next};

// An id read from an over-long frame is one the engine would have kept.
const _: () = assert!(MAX_ID_LEN == crate::error::MAX_TICKET_ID_LEN);

/// The MCP server state machine.
///
/// # Method classes
///
/// - **Input** (`handle_*`): [`handle_input`](Self::handle_input) takes bytes read from the
///   client, [`handle_eof`](Self::handle_eof) says the client closed its side.
/// - **Commands** (`answer_*`, `notify_*`, ...): [`Commands`], the trait both engines
///   share (bring it into scope): [`answer_tool`](Commands::answer_tool),
///   [`answer_resource`](Commands::answer_resource), [`answer_prompt`](Commands::answer_prompt)
///   and [`answer_error`](Commands::answer_error) answer a [`Ticket`], in any order, at any
///   time; [`observe`](Commands::observe) hands out the records for spans and metrics.
/// - **Output** (`poll_*`): [`poll_event`](Self::poll_event) yields work for the host,
///   [`poll_transmit`](Self::poll_transmit) copies bytes to send into a caller buffer
///   ([`pending_output`](Self::pending_output) / [`consume_output`](Self::consume_output)
///   do the same without a copy), [`poll_timeout`](Self::poll_timeout) says when to call
///   [`handle_timeout`](Self::handle_timeout).
/// - **Getters** (`&self`): [`is_finished`](Self::is_finished),
///   [`input_capacity`](Self::input_capacity), [`Commands::in_flight`], ...
///
/// # The drain rule
///
/// After every input or command, drain [`poll_event`](Self::poll_event) until it returns
/// `None`, then [`poll_transmit`](Self::poll_transmit) until it returns `0`. The engine
/// processes frames one at a time and pauses at each host event until that event has
/// been polled, so a loop that does not drain stops making progress (it never loses
/// input: [`handle_input`](Self::handle_input) then accepts fewer bytes).
///
/// ```
/// use mcp_engine::{Catalog, Config, Content, Engine, Event, Instant, Tool, ToolOutput};
///
/// let catalog = Catalog::builder().tool(Tool::new("hello")).build().unwrap();
/// let mut engine = Engine::new(Config::new("demo", "1.0"), catalog);
/// let input = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
/// "#;
/// let mut out = Vec::new();
/// let mut buf = [0u8; 4096];
/// let mut fed = 0;
/// while fed < input.len() {
///     fed += engine.handle_input(Instant::ZERO, &input[fed..]);
///     while let Some(event) = engine.poll_event() {
///         if let Event::CallTool(call) = event {
///             call.answer(&ToolOutput::new(&[Content::text("hi")])).unwrap();
///         }
///     }
///     loop {
///         let n = engine.poll_transmit(&mut buf);
///         if n == 0 { break }
///         out.extend_from_slice(&buf[..n]);
///     }
/// }
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains(r#""content":[{"type":"text","text":"hi"}]"#));
/// ```
///
/// # Time
///
/// Every input takes `now`, a monotonic [`Instant`] the caller reads from its clock.
/// The engine never reads a clock; over stdio it arms no timer, so
/// [`poll_timeout`](Self::poll_timeout) is `None`. What it seals for clients to bring back
/// (`requestState`, list cursors) expires on the wall clock the caller gives it with
/// [`set_wall_clock`](Self::set_wall_clock) (a [`UnixTime`]), so that another process can
/// judge it.
///
/// # Errors and panics
///
/// Nothing the peer sends makes the engine panic or stop: every malformed frame is
/// answered with its JSON-RPC error and the stream goes on at the next frame. Misuse of
/// a ticket is reported as an [`AnswerError`](crate::error::AnswerError).
pub struct Engine {
    /// The input buffer and the frames in it.
    lines: Lines,
    /// Reads an over-long frame's bytes for its request id ([`FrameId`]).
    frame_id: FrameId,
    /// The over-long frame being discarded is not answered yet: its answer waits for
    /// its id (or its end).
    owed: bool,
    eof: bool,
    /// A copy of a frame examined while the slots are full (parsing mutates its input).
    peek: Vec<u8>,
    /// Find `cancelled`, `result` and `error` in frames held behind the in-flight limit
    /// (built once): only such frames can be served from there.
    cancelled: memchr::memmem::Finder<'static>,
    result: memchr::memmem::Finder<'static>,
    error: memchr::memmem::Finder<'static>,
    last_now: Instant,
    parser: Parser,
    core: Core,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("buffered_input", &self.lines.buffered())
            .field("pending_output", &self.core.outbox().buffered())
            .field("in_flight", &self.core.in_flight())
            .field("legacy", &self.core.session().legacy)
            .field("eof", &self.eof)
            .finish()
    }
}

impl Engine {
    /// A new engine serving `catalog`. All buffers are allocated here, at their working
    /// size, so a steady stream of requests allocates nothing more.
    pub fn new(cfg: Config, catalog: Catalog) -> Self {
        let frame = cfg.max_frame_len;
        Self {
            lines: Lines::new(frame),
            frame_id: FrameId::new(),
            owed: false,
            eof: false,
            peek: Vec::with_capacity(frame),
            cancelled: memchr::memmem::Finder::new(b"cancelled"),
            result: memchr::memmem::Finder::new(b"\"result\""),
            error: memchr::memmem::Finder::new(b"\"error\""),
            last_now: Instant::ZERO,
            parser: Parser::new(frame + 2, cfg.max_depth),
            core: new_core(cfg, catalog, Mode::Stdio),
        }
    }

    /// The revision `initialize` negotiated on this stream, if any.
    pub fn negotiated_revision(&self) -> Option<Revision> {
        self.core.session().legacy
    }

    /// Whether the client sent `notifications/initialized` after `initialize`. Tracked,
    /// not enforced: requests are served before it, as they are over a stateless stream.
    pub fn is_initialized(&self) -> bool {
        self.core.session().initialized
    }

    /// Frames processed so far (blank lines excluded).
    pub fn frames_processed(&self) -> u64 {
        self.core.frames()
    }

    /// How many bytes [`handle_input`](Self::handle_input) takes now: read at most this
    /// many and give them all. The room left in the one-frame input buffer; 0 after the
    /// end of input, or while that buffer is full and the engine paused (ask again after
    /// draining [`poll_event`](Self::poll_event), answering a ticket or taking output).
    pub fn input_capacity(&self) -> usize {
        if self.eof {
            return 0;
        }
        (self.core.config().max_frame_len + 2).saturating_sub(self.lines.buffered())
    }

    /// Whether the stream is over: the client closed its side, every ticket is answered
    /// or cancelled, every buffered frame is processed and all output was taken.
    pub fn is_finished(&self) -> bool {
        self.eof
            && self.core.in_flight() == 0
            && !self.core.is_paused()
            && self.lines.all_taken()
            && self.core.outbox().buffered() == 0
    }

    fn clamp_now(&mut self, now: Instant) {
        if now > self.last_now {
            self.last_now = now;
        }
        self.core.set_now(self.last_now.as_micros());
    }

    /// Feeds bytes read from the client and processes every complete frame it can.
    ///
    /// Returns how many bytes were taken. The engine takes every byte it is given up to
    /// [`input_capacity`](Self::input_capacity), processing as it goes, so `data` no
    /// longer than the capacity is always taken whole. **Read at most `input_capacity`
    /// bytes and give them all; should you give more, the engine takes what fits and you
    /// must offer the rest first, before any byte read after them, and read nothing more
    /// while you hold some.** Fewer than all are taken only while the engine is paused (a
    /// host event not yet polled, the in-flight limit reached, or too much output
    /// buffered) and its input buffer (one frame) is full. A partial frame is buffered,
    /// not an error; bytes of an over-long frame are discarded as they arrive.
    pub fn handle_input(&mut self, now: Instant, mut data: &[u8]) -> usize {
        self.clamp_now(now);
        self.release();
        if self.eof {
            return 0;
        }
        let total = data.len();
        while !data.is_empty() {
            if self.lines.is_discarding() {
                let (skipped, ended) = self.lines.discard(data);
                if self.owed {
                    self.frame_id.feed(&data[..skipped]);
                    if ended || self.frame_id.is_settled() {
                        self.answer_over_long();
                    }
                }
                data = &data[skipped + usize::from(ended)..];
                continue;
            }
            let room = self.input_capacity();
            if room == 0 {
                break;
            }
            let take = room.min(data.len());
            // Moved to the front only when they do not fit behind (`Lines::push`).
            self.lines.push(&data[..take]);
            data = &data[take..];
            self.process();
        }
        total - data.len()
    }

    /// Says the client closed its side. A final frame without a newline is processed;
    /// then [`is_finished`](Self::is_finished) turns true once the work is done.
    pub fn handle_eof(&mut self, now: Instant) {
        self.clamp_now(now);
        self.release();
        if self.eof {
            return;
        }
        self.eof = true;
        if self.owed {
            // The over-long frame ends here: answered with what was read of it.
            self.answer_over_long();
        }
        // Nobody is left to answer what the client was asked.
        self.core.inputs_gone(None);
        self.process();
    }

    /// When [`handle_timeout`](Self::handle_timeout) should next be called: the
    /// deadline of the earliest request sent to the client for input
    /// ([`Config::input_timeout`](crate::Config::input_timeout)) or the earliest task's
    /// TTL; `None` while there is neither.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let inputs = self.core.input_deadline();
        [inputs, self.core.task_deadline()].into_iter().flatten().min().map(Instant::from_micros)
    }

    /// Advances timers to `now`: requests sent to the client for input and not answered
    /// by their deadline fail, and the requests that asked for them come back to the
    /// host as events (drain [`poll_event`](Self::poll_event)); tasks past their TTL are
    /// deleted (the host hears [`Event::Cancelled`] of those it still works on).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.clamp_now(now);
        self.release();
        self.core.expire_inputs();
        self.core.expire_tasks();
    }

    /// Sets the wall clock: at `now` it reads `wall` (say
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
        self.clamp_now(now);
        self.core.set_wall_clock(wall.as_micros());
    }

    /// The next piece of work for the host, or `None` when there is none.
    ///
    /// Cancellations come first (they refer to earlier requests), then the event of
    /// the frame the engine paused at. Polling resumes frame processing, so it can
    /// produce output and further events.
    pub fn poll_event(&mut self) -> Option<Event<'_>> {
        self.release();
        self.process();
        // Nothing waits (every poll after the one that took the event): decided by
        // looking at the queues, without popping each of them in turn.
        if !self.core.has_event() {
            return None;
        }
        self.core.next_event()
    }

    /// Copies output into `buf`; returns how many bytes were written (0: none pending).
    /// Output is a byte stream of newline-terminated frames; a frame may be split
    /// across calls.
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> usize {
        let pending = self.pending_output();
        let n = pending.len().min(buf.len());
        buf[..n].copy_from_slice(&pending[..n]);
        self.consume_output(n);
        n
    }

    /// The output not yet taken, without copying. Pair with
    /// [`consume_output`](Self::consume_output).
    pub fn pending_output(&self) -> &[u8] {
        self.core.outbox().pending()
    }

    /// Marks `n` bytes of [`pending_output`](Self::pending_output) as sent, then resumes
    /// processing if output was what held it back.
    pub fn consume_output(&mut self, n: usize) {
        self.core.outbox_mut().consume(n);
        if n > 0 {
            self.release();
            self.process();
        }
    }

    /// Sends `request` to the client outside any request (`sampling/createMessage`,
    /// `elicitation/create` in form or url mode, `roots/list`): on a stream opened with
    /// `initialize` under `2025-11-25` or `2025-06-18`, the request goes out on the output
    /// at once, with an id from the engine's sequence. The client's reply comes back as
    /// [`Event::ClientReply`] carrying the returned handle, exactly once: its result or
    /// error, `-32001` after [`Config::input_timeout`](crate::Config::input_timeout)
    /// (see [`poll_timeout`](Self::poll_timeout)), `-32000` when the input ends first.
    ///
    /// Refused, with nothing written: no session-bound session ([`AskError::NoSession`]),
    /// a capability the client did not declare in `initialize`
    /// ([`AskError::NotDeclared`]), the output backlogged, `max_in_flight` asks waiting,
    /// the input ended ([`AskError::ClientGone`]).
    pub fn ask_client(&mut self, request: &InputRequest<'_>) -> Result<ClientAsk, AskError> {
        self.release();
        let r = self.core.ask_client(Route::Stdio, None, request);
        self.process();
        r
    }

    /// Gives the engine 32 bytes fresh from the OS random source (say `getrandom::fill`):
    /// task ids are drawn from them. Until this is called no call can become a task; the
    /// adapters call it.
    pub fn set_entropy(&mut self, entropy: &[u8; 32]) {
        self.core.seed_tasks(entropy);
    }

    /// Forgets the event the caller has polled: its borrow has ended by now.
    fn release(&mut self) {
        self.core.release();
    }

    /// Processes complete frames until the buffer is exhausted or the engine pauses.
    #[inline]
    fn process(&mut self) {
        // Nothing buffered (the buffer is reset whenever it is emptied, so nothing is
        // held either): the common case after every poll and consume, decided without
        // a call.
        if self.lines.is_empty() {
            return;
        }
        self.process_buffered();
    }

    fn process_buffered(&mut self) {
        let max = self.core.config().max_frame_len;
        loop {
            if self.lines.all_taken() {
                // Every byte taken: no frame to look for, none held.
                break;
            }
            let c = &self.core;
            if c.is_paused() || c.output_backlogged() {
                break;
            }
            if c.slots_full() {
                if self.process_held() {
                    continue;
                }
                break;
            }
            match self.lines.next(max, self.eof) {
                Next::Frame(frame) => self.frame(frame),
                // Answered (once its id is known); the rest of an incomplete one is
                // dropped unread as it arrives.
                Next::OverLong(frame, complete) => self.over_long(frame, complete),
                Next::Partial => break,
            }
        }
        self.lines.settle();
    }

    /// A frame longer than the limit, whose first bytes are `frame` (`complete`: all of
    /// it). Its refusal carries the request's id when one can be read
    /// ([`FrameId`]): it is answered now when the id is known or can no longer be learnt,
    /// else once the rest of the frame has gone by (see `handle_input`).
    #[cold]
    #[inline(never)]
    fn over_long(&mut self, frame: Range<usize>, complete: bool) {
        self.frame_id.reset();
        self.frame_id.feed(self.lines.bytes(frame));
        self.owed = true;
        if complete || self.frame_id.is_settled() {
            self.answer_over_long();
        }
    }

    /// Answers the over-long frame [`over_long`](Self::over_long) read.
    #[cold]
    #[inline(never)]
    fn answer_over_long(&mut self) {
        self.owed = false;
        self.core.oversized(self.frame_id.request_id());
    }

    /// While every ticket slot is busy: frames at the head that need no ticket are served
    /// in order, and from behind the requests that wait for a slot are taken the
    /// cancellations of requests holding a slot (a client can always cancel what it
    /// started) and the client's responses to the server's requests (a request holding a
    /// slot may wait for one). Requests that need a ticket, and anything else behind
    /// them, stay where they are. Returns whether a frame was consumed.
    fn process_held(&mut self) -> bool {
        let max = self.core.config().max_frame_len;
        // The head: served in order if it needs no slot (it may have moved up since).
        let Some((head, nl)) = self.lines.head() else {
            if self.lines.buffered() > max + 1 {
                // An over-long frame at the head: answered and dropped as on the normal path.
                let partial = self.lines.drop_partial_head();
                self.over_long(partial, false);
                return true;
            }
            return false;
        };
        let blank = ndjson::is_blank(self.lines.bytes(head.clone()));
        let long = head.len() > max;
        if blank || long || self.peek_frame(head.clone(), true) == Peeked::Served {
            if !blank && long {
                self.over_long(head, true);
            }
            self.lines.take_head(nl);
            return true;
        }
        // Cancellations seen before, whose request may hold a slot by now: one that names
        // a request still waiting for a slot is looked at again each time, since that
        // request may have got its slot meanwhile (the first eight; any more are served in
        // order).
        for k in 0..self.lines.held_cancels() {
            let Some((frame, nl)) = self.lines.held_cancel(k) else { continue };
            let pos = frame.start;
            if self.peek_frame(frame, false) == Peeked::Served {
                self.lines.take_from_behind(pos, nl);
                return true;
            }
        }
        // Frames not looked at yet. From behind, only a cancellation or a response can be
        // served: a frame that cannot be one is not parsed (one whose text has escapes is,
        // to be sure; responses are looked for only while the client is asked something).
        let responses = self.core.input_deadline().is_some();
        let mut pos = self.lines.unseen(nl + 1);
        while let Some((frame, nl)) = self.lines.frame_at(pos) {
            let bytes = self.lines.bytes(frame.clone());
            let candidate = frame.len() <= max
                && (self.cancelled.find(bytes).is_some()
                    || memchr::memchr(b'\\', bytes).is_some()
                    || (responses
                        && (self.result.find(bytes).is_some() || self.error.find(bytes).is_some())));
            if candidate {
                match self.peek_frame(frame, false) {
                    Peeked::Served => {
                        self.lines.seen_up_to(pos);
                        self.lines.take_from_behind(pos, nl);
                        return true;
                    }
                    Peeked::Later => {
                        // Past the first few, a cancellation of a waiting request waits in
                        // its place and is served in order (the scan goes on: a response or
                        // a live cancellation further on is still taken).
                        self.lines.hold_cancel(pos);
                    }
                    Peeked::Waits => {}
                }
            }
            pos = nl + 1;
            self.lines.seen_up_to(pos);
        }
        false
    }

    /// Parses a copy of a frame and serves it if it may go now: at the head, anything
    /// that needs no ticket; from behind a waiting request, a cancellation of a request
    /// that holds a ticket, or a response (any other frame could depend on what waits
    /// before it, and a cancel of a waiting request must wait with it).
    fn peek_frame(&mut self, frame: Range<usize>, at_head: bool) -> Peeked {
        let core = &mut self.core;
        self.parser.peek(self.lines.bytes(frame), &mut self.peek, |parsed| match parsed {
            Ok(n) => {
                let flow = Flow::of(n);
                let serve = match flow {
                    _ if at_head => flow != Flow::Ticketed,
                    Flow::Cancel => core.cancel_is_live(n),
                    Flow::Response => true,
                    Flow::Ticketed | Flow::Other => false,
                };
                if serve {
                    core.handle(RequestContext::STDIO, Ok(n), &[]);
                    Peeked::Served
                } else if flow == Flow::Cancel {
                    Peeked::Later
                } else {
                    Peeked::Waits
                }
            }
            Err(e) if at_head => {
                core.handle(RequestContext::STDIO, Err(e), &[]);
                Peeked::Served
            }
            Err(_) => Peeked::Waits,
        })
    }

    fn frame(&mut self, frame: Range<usize>) {
        let bytes = self.lines.bytes_mut(frame);
        if ndjson::is_blank(bytes) {
            return;
        }
        let core = &mut self.core;
        self.parser.parse(bytes, |parsed| core.handle(RequestContext::STDIO, parsed, &[]));
    }
}

impl Output for Engine {
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
        self.release();
    }

    #[inline]
    fn end(&mut self, resume: bool) {
        // The output is the core's own byte stream: nothing to move.
        if resume {
            self.process();
        }
    }

    fn backlogged(&self, ticket: Ticket, task_progress: bool) -> bool {
        let writes = self.core.route_of(ticket).is_some()
            || (task_progress && self.core.progress_task(ticket).is_some());
        writes && self.core.output_backlogged()
    }

    #[inline]
    fn list_changed(&mut self, _change: CatalogChange) {
        // One stream: the core told it already.
    }

    #[inline]
    fn resource_updated(&mut self, _uri: &str) -> usize {
        0
    }
}

/// The commands written once ([`Commands`]), over the stream above.
impl Commands for Engine {}

/// What [`Engine::peek_frame`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peeked {
    /// Served (and to be removed from the buffer).
    Served,
    /// A cancellation of a request that waits for a slot: looked at again later.
    Later,
    /// It waits in its place.
    Waits,
}
