//! A sans-IO, server-side HTTP/1.1 connection codec: one [`Conn`] per TCP connection.
//!
//! Bytes go in with [`Conn::handle_bytes`] (at most [`Conn::capacity`] of them), parsed input
//! comes out of [`Conn::poll`]: a request [`Head`], then the request's complete (de-chunked)
//! [`Input::Body`], then, after [`Conn::finish_request`], the next pipelined request. The
//! response writers ([`write_head`], [`write_chunked_end`], ...) append to a caller-owned
//! `Vec<u8>` that is meant to be reused; the Server-Sent Events written in chunks of a
//! response are `wire/sse.rs`'s.
//!
//! # Driving it
//!
//! ```text
//! loop {
//!     read at most conn.capacity() bytes; n = conn.handle_bytes(&read)   (keep the rest)
//!     loop {
//!         let mut headers = [httparse::EMPTY_HEADER; 64];   // declared per poll: it borrows
//!         match conn.poll(&mut headers) {
//!             Input::Head(head) => route; refuse now (then `discard_body`) or, if
//!                                  `expect_continue`, write `100 Continue`,
//!             Input::Body(body) => handle; write the response; `finish_request`,
//!             Input::Partial => break,
//!             Input::Error(e) => `write_error`, close,
//!         }
//!     }
//! }
//! ```
//!
//! Close after the response when the head's `keep_alive` is false: the codec then parses
//! nothing more.
//!
//! # Design
//!
//! - **One buffer, grown on demand, lent out between requests.** [`Conn::new`] reserves
//!   nothing; the buffer grows (doubling) as a request needs it, never past `max_head_bytes +
//!   max_body_bytes +` [`CHUNKED_FRAMING_ALLOWANCE`] bytes (every limit below bounds what it
//!   takes). Heads borrow the buffer, chunked bodies are de-chunked in place, finished requests
//!   are dropped by moving an offset, and pipelined bytes are moved to the front only when the
//!   room behind them runs out. Between requests the owner may take the empty buffer back
//!   ([`Conn::take_buffer`]) and lend one again before the next bytes
//!   ([`Conn::give_buffer`]), so an idle connection holds none and a pool of reused buffers
//!   makes the steady state allocation-free.
//! - **Limits on bytes seen, not on parse outcomes.** A head must end within its first
//!   `max_head_bytes` bytes (leading empty lines included); a chunked body may not grow past
//!   `max_body_bytes` decoded bytes nor `max_body_bytes + CHUNKED_FRAMING_ALLOWANCE` raw bytes.
//!   The codec never takes more than those bounds: past them it answers with an error, so
//!   feeding a transcript whole or byte by byte gives the same outputs, errors included.
//! - **No quadratic re-parsing.** The end of a head is looked for with `memchr`, resuming where
//!   the last search stopped; `httparse` runs once on the request line as soon as it is complete
//!   (so a bad method, target or version, e.g. the HTTP/2 preface, is answered at once) and once
//!   on the complete head. The method is checked byte by byte, so a TLS handshake or binary
//!   garbage is refused at its first byte. Every check is decided at a fixed byte position,
//!   whatever the reads. Chunked framing is decoded by a byte-at-a-time state machine (chunk data
//!   is copied in bulk), so each byte is looked at once.
//! - **`Partial` is not an error**; errors are sticky: after [`Input::Error`] the connection
//!   must be answered (`HttpError::status`) and closed.
//!
//! # Framing rules
//!
//! - HTTP/1.0 and HTTP/1.1 only; any other `HTTP/<digit>...` version (including the HTTP/2
//!   preface `PRI * HTTP/2.0`) is [`HttpError::UnsupportedVersion`].
//! - More than one `Host` header is malformed (RFC 9112 §3.2). A missing `Host` is left to the
//!   caller's `Host` policy (`docs/http.md` answers it after the path, method and origin checks).
//! - `Content-Length`: ASCII digits only; repeated headers must carry the same value.
//! - `Transfer-Encoding`: exactly one header whose value is `chunked` (HTTP/1.1 only); anything
//!   else, or `Transfer-Encoding` together with `Content-Length`, is [`HttpError::BadRequest`].
//! - Chunk lines end with CRLF (a bare LF is refused, as is any control byte). A chunk-size
//!   line is exactly RFC 9112 §7.1: `1*HEXDIG *( BWS ";" BWS token [ BWS "=" BWS ( token /
//!   quoted-string ) ] ) CRLF`, so whitespace appears only around an extension's `;` or `=`,
//!   never before the size or at the end of the line; anything else is
//!   [`HttpError::BadRequest`]. Extensions are then ignored; trailer fields are checked for
//!   syntax and discarded.
//! - Leading empty lines before a request line are ignored (RFC 9112 §2.2).
//! - `keep_alive`: HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
//!   `Connection: keep-alive` (and no `close`).
//! - `expect_continue`: `Expect: 100-continue` on an HTTP/1.1 request (ignored for HTTP/1.0,
//!   RFC 9110 §10.1.1); other expectations are not reported.

#![allow(dead_code, reason = "the HTTP transport adopts the codec item by item")]

use httparse::{Header, Status};

/// Most headers a request may carry (`431` past it).
pub const MAX_HEADERS: usize = 64;

/// Extra raw bytes a chunked body may take beyond `max_body_bytes`: chunk-size lines,
/// extensions, CRLFs and trailers. A body whose framing needs more (e.g. more than ~13,000
/// one-byte chunks) is refused with [`HttpError::BodyTooLarge`].
pub(crate) const CHUNKED_FRAMING_ALLOWANCE: usize = 64 * 1024;

/// The first size a buffer grows to.
const MIN_BUFFER: usize = 1024;

/// What [`Conn::capacity`] reports while the connection only drops input (after an error or
/// [`Conn::discard_body`]): enough for an I/O layer to keep reading during a lingering close.
pub(crate) const DRAIN_CAPACITY: usize = 64 * 1024;

/// Limits of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest request head (request line, headers, final empty line), default 16 KiB.
    pub max_head_bytes: usize,
    /// Most headers in one request, default 64 (at most the caller's header array is used).
    pub max_headers: usize,
    /// Largest request body (decoded), default 1 MiB.
    pub max_body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_head_bytes: 16 * 1024, max_headers: 64, max_body_bytes: 1024 * 1024 }
    }
}

/// How the body of a request is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// No body.
    None,
    /// A body of exactly this many bytes (`Content-Length`, at most `max_body_bytes`).
    Length(usize),
    /// A `Transfer-Encoding: chunked` body.
    Chunked,
}

/// A parsed request head. Header values borrow the connection buffer.
#[derive(Debug)]
pub struct Head<'b> {
    /// The request method, e.g. `POST`.
    pub method: &'b str,
    /// The request target, e.g. `/mcp?x=1`.
    pub path: &'b str,
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1. An HTTP/1.0 peer cannot read a
    /// chunked (SSE) response.
    pub minor_version: u8,
    /// The headers, in order (names as sent, values without surrounding whitespace).
    pub headers: &'b [Header<'b>],
    /// How the body is framed.
    pub body: BodyKind,
    /// Whether the connection may serve another request after this one.
    pub keep_alive: bool,
    /// Whether the client waits for `100 Continue` before sending the body.
    pub expect_continue: bool,
}

impl<'b> Head<'b> {
    /// The value of the first header called `name` (ASCII case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&'b [u8]> {
        self.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    }
}

/// What the connection produced.
#[derive(Debug)]
pub enum Input<'b> {
    /// A complete head; the body (if any) follows. The caller may refuse the request now (before
    /// the body is read), answering and then calling [`Conn::discard_body`].
    Head(Head<'b>),
    /// The complete body of the request whose head was last returned (de-chunked). Empty for no
    /// body. Returned once; call [`Conn::finish_request`] next.
    Body(&'b [u8]),
    /// Nothing complete yet: feed more bytes.
    Partial,
    /// The peer broke HTTP/1.1 framing; answer with [`HttpError::status`] and close. Sticky.
    Error(HttpError),
}

/// Why a request cannot be served: the peer broke framing or a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpError {
    /// 400: malformed head, bad chunk syntax, both `Content-Length` and `Transfer-Encoding`,
    /// conflicting or malformed `Content-Length`, a transfer coding other than `chunked`, more
    /// than one `Host`.
    BadRequest,
    /// 431: the head did not end within `max_head_bytes`.
    HeadTooLarge,
    /// 431: more than `max_headers` headers (or the caller's header array).
    TooManyHeaders,
    /// 413: a declared `Content-Length` over `max_body_bytes` (refused at the head), or a
    /// chunked body passing `max_body_bytes` decoded bytes (refused at the chunk size that
    /// passes it) or `max_body_bytes + CHUNKED_FRAMING_ALLOWANCE` raw bytes.
    BodyTooLarge,
    /// 505: an HTTP version other than 1.0 and 1.1 (e.g. the HTTP/2 preface).
    UnsupportedVersion,
}

impl HttpError {
    /// The status code to answer with.
    pub fn status(self) -> u16 {
        match self {
            Self::BadRequest => 400,
            Self::HeadTooLarge | Self::TooManyHeaders => 431,
            Self::BodyTooLarge => 413,
            Self::UnsupportedVersion => 505,
        }
    }

    /// The reason phrase of [`HttpError::status`].
    pub(crate) fn reason(self) -> &'static str {
        status_reason(self.status())
    }
}

/// Where the head search stands (all offsets relative to the request start). Every check it
/// makes is decided by a fixed byte position, never by how the bytes were cut into reads.
#[derive(Debug, Clone, Copy)]
struct HeadScan {
    /// Where the next search for `\n` starts.
    pos: usize,
    /// Where the request line starts, once the leading empty lines are skipped.
    line_start: Option<usize>,
    /// The next byte of the method to check; `None` once the method is complete.
    method_pos: Option<usize>,
    /// The `\n` ending the request line, once seen.
    line_end: Option<usize>,
    /// Whether the request line was checked by `httparse`.
    line_checked: bool,
}

impl HeadScan {
    const NEW: Self =
        Self { pos: 0, line_start: None, method_pos: Some(0), line_end: None, line_checked: false };

    /// The length of the head in `w` (through its final empty line), if `w` holds all of it.
    /// Resumes where the last call stopped: every byte is searched once. Fails early, at the
    /// offending byte, on a method that is not a token (a TLS handshake, binary garbage).
    fn find_end(&mut self, w: &[u8]) -> Result<Option<usize>, HttpError> {
        let line_start = match self.line_start {
            Some(line_start) => line_start,
            None => {
                while self.pos < w.len() && matches!(w[self.pos], b'\r' | b'\n') {
                    self.pos += 1;
                }
                if self.pos == w.len() {
                    return Ok(None);
                }
                self.method_pos = Some(self.pos);
                *self.line_start.insert(self.pos)
            }
        };
        if let Some(mut i) = self.method_pos {
            while i < w.len() {
                match w[i] {
                    b' ' if i > line_start => break,
                    b if is_tchar(b) => i += 1,
                    _ => return Err(HttpError::BadRequest),
                }
            }
            self.method_pos = if i < w.len() { None } else { Some(i) };
            if self.method_pos.is_some() {
                return Ok(None);
            }
        }
        while let Some(i) = memchr::memchr(b'\n', &w[self.pos..]).map(|i| i + self.pos) {
            self.line_end.get_or_insert(i);
            match (w.get(i + 1), w.get(i + 2)) {
                (Some(b'\n'), _) => return Ok(Some(i + 2)),
                (Some(b'\r'), Some(b'\n')) => return Ok(Some(i + 3)),
                // Too few bytes to tell: look at this line end again next time.
                (None, _) | (Some(b'\r'), None) => {
                    self.pos = i;
                    return Ok(None);
                }
                _ => self.pos = i + 1,
            }
        }
        self.pos = w.len();
        Ok(None)
    }
}

/// A step of the chunked-body state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// In the chunk size; `digits` tells whether a hex digit was seen.
    Size { size: u64, digits: bool },
    /// Whitespace after the chunk size (BWS: a `;` must follow).
    SizeWs(u64),
    /// In a chunk extension (checked, then ignored).
    Ext(u64, Ext),
    /// Saw the CR ending a chunk-size line.
    SizeLf(u64),
    /// In chunk data, this many bytes left.
    Data(u64),
    /// Expecting the CR after chunk data.
    DataCr,
    /// Expecting the LF after chunk data.
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    /// In a trailer field name.
    TrailerName,
    /// In a trailer field value.
    TrailerValue,
    /// Saw the CR ending a trailer field line.
    TrailerLf,
    /// Saw the CR of the final empty line.
    EndLf,
}

/// Where a chunk-size line stands within its extensions (RFC 9112 §7.1.1):
/// `chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )`,
/// `chunk-ext-name = token`, `chunk-ext-val = token / quoted-string`. Whitespace is
/// allowed only around a `;` or `=`, so the line ends right after a name or a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ext {
    /// After `;` (and whitespace): a name must come.
    BeforeName,
    /// In a name.
    Name,
    /// Whitespace after a name: `=` or `;` must follow.
    AfterName,
    /// After `=` (and whitespace): a value must come.
    BeforeValue,
    /// In a token value.
    Token,
    /// In a quoted-string value.
    Quoted,
    /// After a backslash in a quoted-string.
    Escape,
    /// Right after the closing quote of a value.
    Closed,
    /// Whitespace after a value: `;` must follow.
    AfterValue,
}

impl Ext {
    /// The next step on byte `b`, `None` to refuse the line. `CR` is handled by the caller
    /// ([`Self::may_end`]).
    fn step(self, b: u8) -> Option<Self> {
        let ws = b == b' ' || b == b'\t';
        Some(match self {
            Self::BeforeName if ws => Self::BeforeName,
            Self::BeforeName | Self::Name if is_tchar(b) => Self::Name,
            Self::Name | Self::AfterName if ws => Self::AfterName,
            Self::Name | Self::AfterName if b == b'=' => Self::BeforeValue,
            Self::BeforeValue if ws => Self::BeforeValue,
            Self::BeforeValue if b == b'"' => Self::Quoted,
            Self::BeforeValue | Self::Token if is_tchar(b) => Self::Token,
            Self::Token | Self::Closed | Self::AfterValue if ws => Self::AfterValue,
            Self::Name | Self::AfterName | Self::Token | Self::Closed | Self::AfterValue if b == b';' => {
                Self::BeforeName
            }
            Self::Quoted if b == b'"' => Self::Closed,
            Self::Quoted if b == b'\\' => Self::Escape,
            // qdtext: HTAB, SP, VCHAR but `"` and `\`, obs-text.
            Self::Quoted | Self::Escape if is_field_char(b) => Self::Quoted,
            _ => return None,
        })
    }

    /// Whether the line may end here: right after a name or a value.
    fn may_end(self) -> bool {
        matches!(self, Self::Name | Self::Token | Self::Closed)
    }
}

/// The state of a chunked body being decoded in place (offsets relative to the request start).
#[derive(Debug, Clone, Copy)]
struct Dechunk {
    /// Where the body starts (right after the head); decoded bytes are moved here.
    body_start: usize,
    /// The next raw (undecoded) byte.
    raw_pos: usize,
    /// Decoded bytes so far, at `body_start..body_start + decoded` (always `<= raw_pos`).
    decoded: usize,
    /// Where the state machine stands.
    step: Step,
}

impl Dechunk {
    fn new(body_start: usize) -> Self {
        Self { body_start, raw_pos: body_start, decoded: 0, step: Step::Size { size: 0, digits: false } }
    }

    /// Decodes `req[raw_pos..end]`; returns the end of the chunked body once it is complete.
    fn run(&mut self, req: &mut [u8], end: usize, max_body: usize) -> Result<Option<usize>, HttpError> {
        let mut pos = self.raw_pos;
        while pos < end {
            if let Step::Data(left) = self.step {
                let take = if left < (end - pos) as u64 { left as usize } else { end - pos };
                let dst = self.body_start + self.decoded;
                if dst != pos {
                    req.copy_within(pos..pos + take, dst);
                }
                self.decoded += take;
                pos += take;
                let left = left - take as u64;
                self.step = if left == 0 { Step::DataCr } else { Step::Data(left) };
                continue;
            }
            let b = req[pos];
            pos += 1;
            self.step = match (self.step, b) {
                (Step::Size { size, .. }, b) if b.is_ascii_hexdigit() => {
                    let digit = (b as char).to_digit(16).unwrap_or(0);
                    let size = size.saturating_mul(16).saturating_add(u64::from(digit));
                    if size > (max_body - self.decoded) as u64 {
                        return Err(HttpError::BodyTooLarge);
                    }
                    Step::Size { size, digits: true }
                }
                (Step::Size { size, digits: true } | Step::SizeWs(size), b' ' | b'\t') => Step::SizeWs(size),
                (Step::Size { size, digits: true } | Step::SizeWs(size), b';') => {
                    Step::Ext(size, Ext::BeforeName)
                }
                (Step::Size { size, digits: true }, b'\r') => Step::SizeLf(size),
                (Step::Ext(size, e), b'\r') if e.may_end() => Step::SizeLf(size),
                (Step::Ext(size, e), b) => match e.step(b) {
                    Some(e) => Step::Ext(size, e),
                    None => return Err(HttpError::BadRequest),
                },
                (Step::SizeLf(0), b'\n') => Step::TrailerStart,
                (Step::SizeLf(size), b'\n') => Step::Data(size),
                (Step::DataCr, b'\r') => Step::DataLf,
                (Step::DataLf, b'\n') => Step::Size { size: 0, digits: false },
                (Step::TrailerStart, b'\r') => Step::EndLf,
                (Step::TrailerStart | Step::TrailerName, b) if is_tchar(b) => Step::TrailerName,
                (Step::TrailerName, b':') => Step::TrailerValue,
                (Step::TrailerValue, b'\r') => Step::TrailerLf,
                (Step::TrailerValue, b) if is_field_char(b) => Step::TrailerValue,
                (Step::TrailerLf, b'\n') => Step::TrailerStart,
                (Step::EndLf, b'\n') => {
                    self.raw_pos = pos;
                    return Ok(Some(pos));
                }
                _ => return Err(HttpError::BadRequest),
            };
        }
        self.raw_pos = pos;
        Ok(None)
    }
}

/// A token character (RFC 9110 §5.6.2).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A character of a field value or chunk extension: HTAB, SP, VCHAR, obs-text.
fn is_field_char(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

/// Where the current request stands (offsets relative to [`Conn::start`]).
#[derive(Debug, Clone, Copy)]
enum State {
    /// Waiting for (the rest of) a head.
    Head,
    /// Reading a `Content-Length` body at `body_start..body_start + len`.
    Length { body_start: usize, len: usize },
    /// Reading a chunked body.
    Chunked(Dechunk),
    /// The request is complete: its body is `body_start..body_start + body_len`, it ends at `end`.
    Ready { body_start: usize, body_len: usize, end: usize, delivered: bool },
    /// The peer broke framing: input is dropped, `poll` repeats the error.
    Failed(HttpError),
    /// The connection is closing: input is dropped, `poll` is `Partial`.
    Draining,
}

/// The HTTP/1.1 codec of one connection.
pub struct Conn {
    /// The limits.
    limits: Limits,
    /// Received bytes; never grown past its initial capacity.
    buf: Vec<u8>,
    /// Where the current request starts in `buf`.
    start: usize,
    /// Where the current request stands.
    state: State,
    /// The head search.
    scan: HeadScan,
    /// Whether the current request lets the connection serve another one.
    keep_alive: bool,
    /// Where each header of the current head lies (name start and end, value start and
    /// end, from the head's first byte), so that it is not parsed twice.
    spans: heapless::Vec<[u32; 4], MAX_HEADERS>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("limits", &self.limits)
            .field("buffered", &(self.buf.len() - self.start))
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Conn {
    /// A connection with these limits. It reserves nothing: its buffer grows as requests
    /// need it, up to [`Conn::max_buffer`] bytes.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            buf: Vec::new(),
            start: 0,
            state: State::Head,
            scan: HeadScan::NEW,
            keep_alive: true,
            spans: heapless::Vec::new(),
        }
    }

    /// The limits of this connection.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// The raw bytes a chunked body may take: `max_body_bytes + CHUNKED_FRAMING_ALLOWANCE`.
    fn chunked_budget(&self) -> usize {
        self.limits.max_body_bytes.saturating_add(CHUNKED_FRAMING_ALLOWANCE)
    }

    /// Bytes the connection can take now: what the current head or body may still need within
    /// the limits (a head: `max_head_bytes` minus what is buffered; a `Content-Length` body: the
    /// rest of it; a chunked body: the rest of its raw budget). 0 once a complete request has
    /// been returned and waits for [`Conn::finish_request`]. After an error or
    /// [`Conn::discard_body`], input is only dropped and this is a fixed positive amount.
    pub fn capacity(&self) -> usize {
        let buffered = self.buf.len() - self.start;
        match self.state {
            State::Head => self.limits.max_head_bytes.saturating_sub(buffered),
            State::Length { body_start, len } => (body_start + len).saturating_sub(buffered),
            State::Chunked(d) => d.body_start.saturating_add(self.chunked_budget()).saturating_sub(buffered),
            State::Ready { .. } => 0,
            State::Failed(_) | State::Draining => DRAIN_CAPACITY,
        }
    }

    /// Appends received bytes, returns how many were taken: exactly the first
    /// [`Conn::capacity`] of them (all, if there are no more). After an error or
    /// [`Conn::discard_body`] every byte is taken and dropped.
    pub fn handle_bytes(&mut self, data: &[u8]) -> usize {
        if matches!(self.state, State::Failed(_) | State::Draining) {
            return data.len();
        }
        let mut take = data.len().min(self.capacity());
        let max = self.max_buffer();
        // What the current request holds and may still take is within `max`: bytes of
        // finished requests before it move out of the way when they are in it.
        if self.buf.len() + take > self.buf.capacity().min(max) && self.start > 0 {
            let buffered = self.buf.len() - self.start;
            self.buf.copy_within(self.start.., 0);
            self.buf.truncate(buffered);
            self.start = 0;
        }
        if self.buf.len() + take > self.buf.capacity() {
            // Grow by doubling, within the bound the limits set.
            let want = (self.buf.len() + take).max(self.buf.capacity() * 2).max(MIN_BUFFER).min(max);
            self.buf.reserve_exact(want - self.buf.len());
        }
        take = take.min(max.saturating_sub(self.buf.len()));
        self.buf.extend_from_slice(&data[..take]);
        take
    }

    /// The most bytes the buffer ever holds: `max_head_bytes + max_body_bytes +`
    /// [`CHUNKED_FRAMING_ALLOWANCE`].
    pub fn max_buffer(&self) -> usize {
        self.limits
            .max_head_bytes
            .saturating_add(self.limits.max_body_bytes)
            .saturating_add(CHUNKED_FRAMING_ALLOWANCE)
    }

    /// The buffer, if no request is in progress and no byte of a next one is held (the
    /// connection waits for a head, or drains): the connection keeps an empty one and takes
    /// the next it is given, or grows its own. `None` while it holds bytes or has no
    /// buffer.
    pub fn take_buffer(&mut self) -> Option<Vec<u8>> {
        let idle = matches!(self.state, State::Head | State::Draining | State::Failed(_));
        if !idle || self.buf.len() != self.start || self.buf.capacity() == 0 {
            return None;
        }
        self.start = 0;
        self.scan = HeadScan::NEW;
        let mut buf = core::mem::take(&mut self.buf);
        buf.clear();
        Some(buf)
    }

    /// Lends the connection a buffer (cleared first) for its next bytes, if it has none;
    /// gives it back otherwise.
    pub fn give_buffer(&mut self, mut buf: Vec<u8>) -> Option<Vec<u8>> {
        if self.buf.capacity() != 0 {
            return Some(buf);
        }
        buf.clear();
        self.buf = buf;
        self.start = 0;
        None
    }

    /// The capacity of the buffer held now.
    pub fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Whether no request is in progress and no byte of a next one was received: the peer may
    /// be closed (or timed out) without an answer.
    pub(crate) fn is_idle(&self) -> bool {
        matches!(self.state, State::Head) && self.buf.len() == self.start
    }

    /// Advances parsing. `headers` is the caller's header array (`[httparse::EMPTY_HEADER; N]`,
    /// declared where `poll` is called so that it lives as long as the returned input); at most
    /// `max_headers` of it is used.
    pub fn poll<'b>(&'b mut self, headers: &'b mut [Header<'b>]) -> Input<'b> {
        self.advance_body();
        match self.state {
            State::Head => self.poll_head(headers),
            State::Length { .. } | State::Chunked(_) | State::Draining => Input::Partial,
            State::Ready { delivered: true, .. } => Input::Partial,
            State::Ready { body_start, body_len, end, delivered: false } => {
                self.state = State::Ready { body_start, body_len, end, delivered: true };
                let from = self.start + body_start;
                Input::Body(&self.buf[from..from + body_len])
            }
            State::Failed(e) => Input::Error(e),
        }
    }

    /// Moves a body in progress forward with the bytes buffered so far.
    fn advance_body(&mut self) {
        let buffered = self.buf.len() - self.start;
        let budget = self.chunked_budget();
        match &mut self.state {
            State::Length { body_start, len } => {
                let (body_start, len) = (*body_start, *len);
                if buffered >= body_start + len {
                    self.state =
                        State::Ready { body_start, body_len: len, end: body_start + len, delivered: false };
                }
            }
            State::Chunked(d) => {
                let budget_end = d.body_start.saturating_add(budget);
                let end = buffered.min(budget_end);
                self.state = match d.run(&mut self.buf[self.start..], end, self.limits.max_body_bytes) {
                    Ok(Some(end)) => {
                        State::Ready { body_start: d.body_start, body_len: d.decoded, end, delivered: false }
                    }
                    Ok(None) if end == budget_end => State::Failed(HttpError::BodyTooLarge),
                    Ok(None) => return,
                    Err(e) => State::Failed(e),
                };
            }
            _ => {}
        }
    }

    /// Looks for a complete head.
    fn poll_head<'b>(&'b mut self, headers: &'b mut [Header<'b>]) -> Input<'b> {
        let limits = self.limits;
        let buffered = self.buf.len() - self.start;
        if buffered == 0 {
            return Input::Partial;
        }
        let window_len = buffered.min(limits.max_head_bytes);
        let at_limit = buffered >= limits.max_head_bytes;
        let Self { buf, start, state, scan, keep_alive, spans, .. } = self;
        let buf: &'b Vec<u8> = buf;
        let window: &'b [u8] = &buf[*start..*start + window_len];
        let end = match scan.find_end(window) {
            Ok(end) => end,
            Err(e) => return fail(state, e),
        };
        // Check the request line as soon as it is complete, so that a bad one (e.g. an
        // unsupported version) is answered without waiting for the rest of the head.
        if let (Some(line_end), false, None) = (scan.line_end, scan.line_checked, end) {
            scan.line_checked = true;
            let mut no_headers: [Header<'_>; 0] = [];
            if let Err(e) = httparse::Request::new(&mut no_headers).parse(&window[..=line_end]) {
                return fail(state, parse_error(e, window));
            }
        }
        if end.is_none() && !at_limit {
            return Input::Partial;
        }
        let window = &window[..end.unwrap_or(window_len)];
        let n = headers.len().min(limits.max_headers);
        let mut req = httparse::Request::new(&mut headers[..n]);
        match req.parse(window) {
            Ok(Status::Complete(head_len)) => {
                let minor_version = req.version.unwrap_or(1);
                let (method, path) = (req.method.unwrap_or(""), req.path.unwrap_or(""));
                let headers: &'b [Header<'b>] = req.headers;
                let origin = window.as_ptr() as usize;
                spans.clear();
                for h in headers {
                    let (n, v) = (h.name.as_ptr() as usize - origin, h.value.as_ptr() as usize - origin);
                    let span = [n as u32, (n + h.name.len()) as u32, v as u32, (v + h.value.len()) as u32];
                    let _ = spans.push(span); // at most `max_headers`, which the Vec holds
                }
                let framing = match analyze(minor_version, headers, limits.max_body_bytes) {
                    Ok(framing) => framing,
                    Err(e) => return fail(state, e),
                };
                *scan = HeadScan::NEW;
                *keep_alive = framing.keep_alive;
                *state = match framing.body {
                    BodyKind::None => {
                        State::Ready { body_start: head_len, body_len: 0, end: head_len, delivered: false }
                    }
                    BodyKind::Length(len) => State::Length { body_start: head_len, len },
                    BodyKind::Chunked => State::Chunked(Dechunk::new(head_len)),
                };
                Input::Head(Head {
                    method,
                    path,
                    minor_version,
                    headers,
                    body: framing.body,
                    keep_alive: framing.keep_alive,
                    expect_continue: framing.expect_continue,
                })
            }
            // Not complete within `max_head_bytes`.
            Ok(Status::Partial) if end.is_none() => fail(state, HttpError::HeadTooLarge),
            // The head search and httparse agree on where a head ends: a disagreement is malformed.
            Ok(Status::Partial) => fail(state, HttpError::BadRequest),
            Err(e) => fail(state, parse_error(e, window)),
        }
    }

    /// The caller is done with the current request (head + body): drop its bytes, keep any
    /// pipelined bytes that follow; `poll` then returns the next request. After a request
    /// without [`Head::keep_alive`], or before the body is complete (the request can no longer
    /// be delimited), the connection drains instead as after [`Conn::discard_body`]: close it
    /// once the response is written. Does nothing while no head was returned or after an error.
    pub fn finish_request(&mut self) {
        self.advance_body();
        match self.state {
            State::Ready { .. } if !self.keep_alive => self.discard_body(),
            State::Ready { end, .. } => {
                self.start += end;
                if self.start == self.buf.len() {
                    self.buf.clear();
                    self.start = 0;
                }
                self.state = State::Head;
                self.scan = HeadScan::NEW;
            }
            State::Length { .. } | State::Chunked(_) => self.discard_body(),
            State::Head | State::Failed(_) | State::Draining => {}
        }
    }

    /// The current request's raw head (request line and headers), once [`Input::Head`] was
    /// returned for it; empty otherwise.
    pub fn head_bytes(&self) -> &[u8] {
        match self.body_start() {
            Some(body_start) => &self.buf[self.start..self.start + body_start],
            None => &[],
        }
    }

    /// The current request's complete body, once [`Input::Body`] was returned; empty
    /// otherwise.
    pub fn body(&self) -> &[u8] {
        match self.state {
            State::Ready { body_start, body_len, .. } => {
                &self.buf[self.start + body_start..self.start + body_start + body_len]
            }
            _ => &[],
        }
    }

    /// The raw head and the complete body, the body writable (JSON is parsed in place).
    pub(crate) fn head_and_body_mut(&mut self) -> (&[u8], &mut [u8]) {
        let (head, body, _) = self.head_body_and_spans();
        (head, body)
    }

    /// [`Self::head_and_body_mut`], and where the head's headers lie in it.
    pub(crate) fn head_body_and_spans(&mut self) -> (&[u8], &mut [u8], &[[u32; 4]]) {
        match self.state {
            State::Ready { body_start, body_len, .. } => {
                let (head, rest) = self.buf[self.start..].split_at_mut(body_start);
                (head, &mut rest[..body_len], &self.spans)
            }
            _ => (&[], &mut [], &[]),
        }
    }

    fn body_start(&self) -> Option<usize> {
        match &self.state {
            State::Length { body_start, .. } | State::Ready { body_start, .. } => Some(*body_start),
            State::Chunked(d) => Some(d.body_start),
            _ => None,
        }
    }

    /// Discards the current request's body without reading it (used after a refusal issued at
    /// the head, which then closes the connection anyway): from now on input is taken and
    /// dropped (so the I/O layer can linger before closing) and `poll` returns `Partial`.
    pub fn discard_body(&mut self) {
        if !matches!(self.state, State::Failed(_)) {
            self.state = State::Draining;
        }
        self.buf.clear();
        self.start = 0;
    }
}

/// Records a framing error and returns it.
fn fail<'b>(state: &mut State, e: HttpError) -> Input<'b> {
    *state = State::Failed(e);
    Input::Error(e)
}

/// Maps an `httparse` error.
fn parse_error(e: httparse::Error, window: &[u8]) -> HttpError {
    match e {
        httparse::Error::TooManyHeaders => HttpError::TooManyHeaders,
        httparse::Error::Version => version_error(window),
        _ => HttpError::BadRequest,
    }
}

/// Tells a request line naming an unsupported `HTTP/<digit>` version (505) from a malformed one
/// (400). `httparse` stops at the first byte of the version that is not `HTTP/1.0`/`HTTP/1.1`,
/// so the bytes looked at here are always present when it fails: a prefix gets the same answer.
fn version_error(window: &[u8]) -> HttpError {
    let lead = window.iter().position(|b| !matches!(b, b'\r' | b'\n')).unwrap_or(window.len());
    let line = &window[lead..];
    let line = &line[..memchr::memchr(b'\n', line).unwrap_or(line.len())];
    match line.splitn(3, |&b| b == b' ').nth(2) {
        Some([b'H', b'T', b'T', b'P', b'/', d, ..]) if d.is_ascii_digit() => HttpError::UnsupportedVersion,
        _ => HttpError::BadRequest,
    }
}

/// The framing and connection semantics of a head.
struct Framing {
    /// How the body is framed.
    body: BodyKind,
    /// Whether the connection may serve another request.
    keep_alive: bool,
    /// Whether the client waits for `100 Continue`.
    expect_continue: bool,
}

/// Applies the framing rules of the module documentation to a parsed head.
fn analyze(minor_version: u8, headers: &[Header<'_>], max_body: usize) -> Result<Framing, HttpError> {
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let (mut close, mut keep_alive_token, mut expect_continue, mut hosts) = (false, false, false, 0u32);
    for h in headers {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            if h.value.is_empty() || !h.value.iter().all(u8::is_ascii_digit) {
                return Err(HttpError::BadRequest);
            }
            let n =
                h.value.iter().fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0')));
            if length.is_some_and(|m| m != n) {
                return Err(HttpError::BadRequest);
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if chunked || minor_version == 0 || !h.value.eq_ignore_ascii_case(b"chunked") {
                return Err(HttpError::BadRequest);
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("expect") {
            expect_continue |= minor_version == 1 && h.value.eq_ignore_ascii_case(b"100-continue");
        } else if name.eq_ignore_ascii_case("host") {
            hosts += 1;
        }
    }
    if hosts > 1 || (chunked && length.is_some()) {
        return Err(HttpError::BadRequest);
    }
    let body = match length {
        _ if chunked => BodyKind::Chunked,
        Some(n) if n > max_body as u64 => return Err(HttpError::BodyTooLarge),
        Some(n) => BodyKind::Length(n as usize),
        None => BodyKind::None,
    };
    let keep_alive = !close && (minor_version == 1 || keep_alive_token);
    Ok(Framing { body, keep_alive, expect_continue })
}

/// The reason phrase of a status code ("" for codes not in the table).
pub(crate) fn status_reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Appends header text, replacing CR, LF and NUL by spaces so that no value can split the
/// response.
pub(super) fn push_text(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    if memchr::memchr3(b'\r', b'\n', 0, bytes).is_none() {
        out.extend_from_slice(bytes);
    } else {
        out.extend(bytes.iter().map(|&b| if matches!(b, b'\r' | b'\n' | 0) { b' ' } else { b }));
    }
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `n` in lowercase hexadecimal.
pub(super) fn push_hex(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b"0123456789abcdef"[n % 16];
        n /= 16;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `name: value\r\n`.
fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    push_text(out, name);
    out.extend_from_slice(b": ");
    push_text(out, value);
    out.extend_from_slice(b"\r\n");
}

/// Appends the status line.
pub(super) fn push_status_line(out: &mut Vec<u8>, status: u16, reason: &str) {
    out.extend_from_slice(b"HTTP/1.1 ");
    push_decimal(out, usize::from(status));
    out.push(b' ');
    push_text(out, reason);
    out.extend_from_slice(b"\r\n");
}

/// Appends a response head: `HTTP/1.1 {status} {reason}`, then `content-type`,
/// `content-length`, `connection: close` (when `close`), the `extra` headers, and the empty
/// line. CR, LF and NUL in any text are written as spaces.
pub(crate) fn write_head(
    out: &mut Vec<u8>,
    status: u16,
    reason: &str,
    content_type: Option<&str>,
    content_length: Option<usize>,
    extra: &[(&str, &str)],
    close: bool,
) {
    push_status_line(out, status, reason);
    if let Some(content_type) = content_type {
        push_header(out, "content-type", content_type);
    }
    if let Some(len) = content_length {
        out.extend_from_slice(b"content-length: ");
        push_decimal(out, len);
        out.extend_from_slice(b"\r\n");
    }
    finish_head(out, extra, close);
}

/// Appends `connection: close` (when `close`), the `extra` headers and the empty line.
pub(super) fn finish_head(out: &mut Vec<u8>, extra: &[(&str, &str)], close: bool) {
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    for (name, value) in extra {
        push_header(out, name, value);
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends the last chunk of a chunked body (`0\r\n\r\n`).
pub(crate) fn write_chunked_end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"0\r\n\r\n");
}

/// Appends `202 Accepted` with an empty body.
pub(crate) fn write_202(out: &mut Vec<u8>, close: bool) {
    write_head(out, 202, "Accepted", None, Some(0), &[], close);
}

/// Appends the interim `100 Continue` response (for [`Head::expect_continue`]).
pub(crate) fn write_100_continue(out: &mut Vec<u8>) {
    out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
}

/// Appends the answer to a framing error: its status, an empty body, `connection: close`.
pub(crate) fn write_error(out: &mut Vec<u8>, error: HttpError) {
    write_head(out, error.status(), error.reason(), None, Some(0), &[], true);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a request produced, owned, for comparisons.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Ev {
        Head { method: String, path: String, minor: u8, body: BodyKind, keep_alive: bool, expect: bool },
        Body(Vec<u8>),
        Error(HttpError),
    }

    fn head_ev(h: &Head<'_>) -> Ev {
        Ev::Head {
            method: h.method.to_owned(),
            path: h.path.to_owned(),
            minor: h.minor_version,
            body: h.body,
            keep_alive: h.keep_alive,
            expect: h.expect_continue,
        }
    }

    /// Polls until `Partial` (finishing each request after its body); true after an error.
    fn drain(conn: &mut Conn, events: &mut Vec<Ev>) -> bool {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let ev = match conn.poll(&mut headers) {
                Input::Head(h) => head_ev(&h),
                Input::Body(b) => Ev::Body(b.to_vec()),
                Input::Partial => return false,
                Input::Error(e) => {
                    events.push(Ev::Error(e));
                    return true;
                }
            };
            let finish = matches!(ev, Ev::Body(_));
            events.push(ev);
            if finish {
                conn.finish_request();
            }
        }
    }

    /// Feeds `pieces` one after the other, polling after each `handle_bytes`; returns the
    /// events and how many bytes the connection took.
    fn feed_pieces(limits: Limits, pieces: &[&[u8]]) -> (Vec<Ev>, usize) {
        let mut conn = Conn::new(limits);
        let bound = conn.max_buffer();
        let (mut events, mut taken) = (Vec::new(), 0);
        for piece in pieces {
            let mut off = 0;
            loop {
                let capacity = conn.capacity();
                let n = conn.handle_bytes(&piece[off..]);
                assert!(n <= capacity.max(piece.len() - off));
                if !matches!(conn.state, State::Draining | State::Failed(_)) {
                    taken += n;
                }
                off += n;
                assert!(conn.buf.capacity() <= bound, "the buffer never grows past its bound");
                if drain(&mut conn, &mut events) {
                    return (events, taken);
                }
                if off == piece.len() {
                    break;
                }
                assert!(n > 0 || conn.capacity() > 0, "stuck: {conn:?}");
            }
        }
        (events, taken)
    }

    fn feed(limits: Limits, data: &[u8]) -> (Vec<Ev>, usize) {
        feed_pieces(limits, &[data])
    }

    fn feed_bytewise(limits: Limits, data: &[u8]) -> (Vec<Ev>, usize) {
        let pieces: Vec<&[u8]> = data.chunks(1).collect();
        feed_pieces(limits, &pieces)
    }

    fn head(method: &str, path: &str, body: BodyKind, keep_alive: bool) -> Ev {
        Ev::Head { method: method.into(), path: path.into(), minor: 1, body, keep_alive, expect: false }
    }

    fn body(b: &[u8]) -> Ev {
        Ev::Body(b.to_vec())
    }

    fn err(e: HttpError) -> Ev {
        Ev::Error(e)
    }

    fn small() -> Limits {
        Limits { max_head_bytes: 256, max_headers: 8, max_body_bytes: 1000 }
    }

    #[test]
    fn simple_get() {
        let mut conn = Conn::new(Limits::default());
        assert!(conn.is_idle());
        let req = b"GET /mcp?x=1 HTTP/1.1\r\nHost: example.com\r\nAccept: text/event-stream\r\n\r\n";
        assert_eq!(conn.handle_bytes(req), req.len());
        assert!(!conn.is_idle());
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let Input::Head(h) = conn.poll(&mut headers) else { panic!("no head") };
        assert_eq!((h.method, h.path, h.minor_version), ("GET", "/mcp?x=1", 1));
        assert_eq!(h.headers.len(), 2);
        assert_eq!(h.header("accept"), Some(&b"text/event-stream"[..]));
        assert_eq!(h.header("ACCEPT"), Some(&b"text/event-stream"[..]));
        assert_eq!(h.header("content-type"), None);
        assert_eq!(h.body, BodyKind::None);
        assert!(h.keep_alive && !h.expect_continue);
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Body(b"")));
        assert_eq!(conn.capacity(), 0, "a complete request waits to be consumed");
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Partial), "the body is returned once");
        conn.finish_request();
        assert!(conn.is_idle());
        assert_eq!(conn.capacity(), Limits::default().max_head_bytes);
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Partial));
    }

    #[test]
    fn post_with_content_length() {
        let req = b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"jsonrpc\":1}";
        let expected = vec![head("POST", "/mcp", BodyKind::Length(13), true), body(b"{\"jsonrpc\":1}")];
        assert_eq!(feed(Limits::default(), req).0, expected);
        assert_eq!(feed_bytewise(Limits::default(), req).0, expected);
        // The capacity of a Content-Length body is exactly what is left of it.
        let mut conn = Conn::new(Limits::default());
        let head_len = req.len() - 13;
        assert_eq!(conn.handle_bytes(&req[..head_len + 3]), head_len + 3);
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Head(_)));
        assert_eq!(conn.capacity(), 10);
        assert_eq!(conn.handle_bytes(b"0123456789abc"), 10);
    }

    #[test]
    fn chunked_bodies() {
        let req = b"POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\
            5;foo=bar\r\nhello\r\n1 ; x=\"y z\"\r\n \r\n6\r\nworld!\r\nA\r\n0123456789\r\n\
            0;last\r\nX-Trailer: 1\r\nEmpty:\r\n\r\n";
        let expected = vec![head("POST", "/c", BodyKind::Chunked, true), body(b"hello world!0123456789")];
        assert_eq!(feed(Limits::default(), req).0, expected);
        assert_eq!(feed_bytewise(Limits::default(), req).0, expected);
        // Empty chunked body, transfer-coding name in any case, then a second request.
        let req = b"POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n\
            POST /d HTTP/1.1\r\nHost: h\r\ntransfer-encoding:  chunked \r\n\r\n000003\r\nabc\r\n00\r\n\r\n";
        let expected = vec![
            head("POST", "/c", BodyKind::Chunked, true),
            body(b""),
            head("POST", "/d", BodyKind::Chunked, true),
            body(b"abc"),
        ];
        assert_eq!(feed(Limits::default(), req).0, expected);
        assert_eq!(feed_bytewise(Limits::default(), req).0, expected);
    }

    /// RFC 9112 §7.1 chunk-size lines, one row each: the line (without its CRLF) and
    /// whether it is accepted. Each is fed as the first chunk of `hi`, whole and byte by
    /// byte; a refusal is a 400 (`BadRequest`).
    #[test]
    fn chunk_size_lines_follow_rfc_9112() {
        let table: &[(&[u8], bool)] = &[
            (b"2", true),
            (b"02", true),
            (b"0002", true),
            (b"2;a", true),
            (b"2;a=b", true),
            (b"2;a=\"b c\"", true),
            (b"2;a=\"q\\\"uote\"", true),
            (b"2;a=\"\"", true),
            (b"2;a;b=c;d", true),
            (b"2 ;a", true),
            (b"2\t;a", true),
            (b"2; a", true),
            (b"2 ; a = b", true),
            (b"2;a =b", true),
            (b"2;a= b", true),
            (b"2;a=b ;c", true),
            (b"2;a=\"b\" ;c", true),
            (b"2;a=\"b\";c", true),
            (b"2;!#$%&'*+-.^_`|~=!#$%&'*+-.^_`|~", true),
            // Whitespace trailing a bare size, or the line, or leading it.
            (b"2 ", false),
            (b"2\t", false),
            (b" 2", false),
            (b"\t2", false),
            (b"2;a ", false),
            (b"2;a=b ", false),
            (b"2;a=\"b\" ", false),
            (b"2 ;", false),
            // Extensions without a name or a value, or with bad characters.
            (b"2;", false),
            (b"2;;a", false),
            (b"2;=b", false),
            (b"2;a=", false),
            (b"2;a= ", false),
            (b"2;a b", false),
            (b"2;a=b c", false),
            (b"2;a=\"b", false),
            (b"2;a=\"b\"c", false),
            (b"2;a=b\"c\"", false),
            (b"2;a==b", false),
            (b"2;a=b=c", false),
            (b"2;a(b)", false),
            (b"2;a=\"\x01\"", false),
            (b"2;a=\x7f", false),
            // The size itself.
            (b"", false),
            (b";a", false),
            (b"2 2", false),
            (b"x2", false),
            (b"+2", false),
            (b"0x2", false),
        ];
        let head = b"POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
        for &(line, ok) in table {
            let req = [head.as_slice(), line, b"\r\nhi\r\n0\r\n\r\n"].concat();
            let expected = if ok {
                vec![head_ev_chunked_to("/c"), body(b"hi")]
            } else {
                vec![head_ev_chunked_to("/c"), err(HttpError::BadRequest)]
            };
            let shown = String::from_utf8_lossy(line);
            assert_eq!(feed(Limits::default(), &req).0, expected, "{shown:?}");
            assert_eq!(feed_bytewise(Limits::default(), &req).0, expected, "{shown:?} byte by byte");
            // The last chunk follows the same rule (the size `2` becomes `0`).
            if line.first() == Some(&b'2') && line.get(1).is_none_or(|b| !b.is_ascii_hexdigit()) {
                let last = [head.as_slice(), b"2\r\nhi\r\n0", &line[1..], b"\r\n\r\n"].concat();
                assert_eq!(feed(Limits::default(), &last).0, expected, "last chunk {shown:?}");
            }
        }
    }

    fn head_ev_chunked_to(path: &str) -> Ev {
        head("POST", path, BodyKind::Chunked, true)
    }

    #[test]
    fn three_pipelined_requests() {
        let reqs = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n\
            POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc\
            POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n";
        let expected = vec![
            head("GET", "/a", BodyKind::None, true),
            body(b""),
            head("POST", "/b", BodyKind::Length(3), true),
            body(b"abc"),
            head("POST", "/c", BodyKind::Chunked, true),
            body(b"de"),
        ];
        let (events, taken) = feed(Limits::default(), reqs);
        assert_eq!((events, taken), (expected.clone(), reqs.len()));
        assert_eq!(feed_bytewise(Limits::default(), reqs).0, expected);
        // By hand: the pipelined bytes wait in the buffer until `finish_request`.
        let mut conn = Conn::new(Limits::default());
        assert_eq!(conn.handle_bytes(reqs), reqs.len());
        for path in ["/a", "/b", "/c"] {
            let mut headers = [httparse::EMPTY_HEADER; 8];
            let Input::Head(h) = conn.poll(&mut headers) else { panic!("no head for {path}") };
            assert_eq!(h.path, path);
            let mut headers = [httparse::EMPTY_HEADER; 8];
            assert!(matches!(conn.poll(&mut headers), Input::Body(_)));
            let mut headers = [httparse::EMPTY_HEADER; 8];
            assert!(matches!(conn.poll(&mut headers), Input::Partial));
            conn.finish_request();
        }
        assert!(conn.is_idle());
        assert_eq!((conn.start, conn.buf.len()), (0, 0));
    }

    #[test]
    fn keep_alive_semantics() {
        let ka = |req: &[u8]| match &feed(Limits::default(), req).0[0] {
            Ev::Head { keep_alive, .. } => *keep_alive,
            other => panic!("{other:?}"),
        };
        assert!(ka(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: Keep-Alive, CLOSE\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n"));
        assert!(ka(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
        assert!(ka(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"));
        // After a request without keep-alive, pipelined requests are not served.
        let reqs =
            b"GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n";
        let (events, _) = feed(Limits::default(), reqs);
        assert_eq!(events, vec![head("GET", "/a", BodyKind::None, false), body(b"")]);
        let mut conn = Conn::new(Limits::default());
        conn.handle_bytes(reqs);
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Head(_)));
        conn.finish_request();
        assert!(matches!(conn.state, State::Draining));
        assert_eq!(conn.handle_bytes(b"more"), 4, "draining takes and drops bytes");
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Partial));
        // HTTP/1.0 keep-alive requests are pipelined like HTTP/1.1 ones.
        let reqs = b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n";
        let (events, _) = feed(Limits::default(), reqs);
        assert_eq!(events.len(), 4);
        assert!(matches!(&events[2], Ev::Head { minor: 0, keep_alive: false, .. }));
    }

    #[test]
    fn expect_continue() {
        let req = b"POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n";
        let mut conn = Conn::new(Limits::default());
        conn.handle_bytes(req);
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let Input::Head(h) = conn.poll(&mut headers) else { panic!() };
        assert!(h.expect_continue);
        let mut out = Vec::new();
        write_100_continue(&mut out);
        assert_eq!(out, b"HTTP/1.1 100 Continue\r\n\r\n");
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Partial));
        conn.handle_bytes(b"{}");
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Body(b"{}")));
        // Ignored for HTTP/1.0.
        let (events, _) = feed(Limits::default(), b"POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
        assert!(matches!(&events[0], Ev::Head { expect: false, .. }));
    }

    #[test]
    fn leading_empty_lines_and_bare_lf() {
        let req = b"\r\n\nGET / HTTP/1.1\nHost: h\n\n";
        let expected = vec![head("GET", "/", BodyKind::None, true), body(b"")];
        assert_eq!(feed(Limits::default(), req).0, expected);
        assert_eq!(feed_bytewise(Limits::default(), req).0, expected);
        // A client's stray CRLF after a body.
        let reqs =
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n";
        assert_eq!(feed(Limits::default(), reqs).0.len(), 4);
    }

    /// A head of exactly `len` bytes.
    fn head_of_len(len: usize) -> Vec<u8> {
        let mut req = b"GET / HTTP/1.1\r\nHost: h\r\nX-Pad: ".to_vec();
        let pad = len - req.len() - 4;
        req.extend(std::iter::repeat_n(b'a', pad));
        req.extend_from_slice(b"\r\n\r\n");
        assert_eq!(req.len(), len);
        req
    }

    #[test]
    fn head_too_large_at_the_same_byte_however_fed() {
        let limits = small();
        // A head of exactly `max_head_bytes` is fine, one more byte is not.
        let ok = head_of_len(256);
        assert_eq!(feed(limits, &ok).0[0], head("GET", "/", BodyKind::None, true));
        assert_eq!(feed_bytewise(limits, &ok).0[0], head("GET", "/", BodyKind::None, true));
        let long = head_of_len(257);
        let whole = feed(limits, &long);
        assert_eq!(whole, (vec![err(HttpError::HeadTooLarge)], 256));
        assert_eq!(feed_bytewise(limits, &long), whole);
        // Byte by byte, the error comes with byte 256 exactly, whatever follows.
        let mut conn = Conn::new(limits);
        for (i, b) in long.iter().enumerate() {
            assert_eq!(conn.handle_bytes(&[*b]), 1);
            let mut headers = [httparse::EMPTY_HEADER; 8];
            let input = conn.poll(&mut headers);
            if i < 255 {
                assert!(matches!(input, Input::Partial), "byte {i}: {input:?}");
            } else {
                assert!(matches!(input, Input::Error(HttpError::HeadTooLarge)), "byte {i}: {input:?}");
                break;
            }
        }
        // Endless header bytes with no line end: same.
        let endless = [b"GET / HTTP/1.1\r\nX: ".as_slice(), &[b'b'; 10_000]].concat();
        assert_eq!(feed(limits, &endless), (vec![err(HttpError::HeadTooLarge)], 256));
        assert_eq!(feed_bytewise(limits, &endless), (vec![err(HttpError::HeadTooLarge)], 256));
        // Leading empty lines count.
        let crlfs = [&[b'\r', b'\n'].repeat(100)[..], &ok[..]].concat();
        assert_eq!(feed(limits, &crlfs).0, vec![err(HttpError::HeadTooLarge)]);
    }

    /// A large head fed byte by byte is searched once, not re-parsed per byte (quadratic work
    /// would take minutes here).
    #[test]
    fn byte_by_byte_head_is_linear() {
        let limits = Limits { max_head_bytes: 128 * 1024, max_headers: 4, max_body_bytes: 0 };
        let mut req = head_of_len(100_000);
        req[50_000] = b'\n'; // a line end mid-head that is not the end of the head
        let clock = std::time::Instant::now();
        let mut conn = Conn::new(limits);
        for (i, b) in req.iter().enumerate() {
            assert_eq!(conn.handle_bytes(&[*b]), 1);
            let mut headers = [httparse::EMPTY_HEADER; 4];
            let input = conn.poll(&mut headers);
            assert_eq!(matches!(input, Input::Partial), i + 1 < req.len(), "{input:?}");
        }
        assert!(clock.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn too_many_headers() {
        let mut req = b"GET / HTTP/1.1\r\nHost: h\r\n".to_vec();
        for i in 0..7 {
            req.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        let ok = [&req[..], b"\r\n"].concat();
        assert!(matches!(feed(small(), &ok).0[0], Ev::Head { .. }), "8 headers are fine");
        req.extend_from_slice(b"X-7: v\r\n\r\n");
        assert_eq!(feed(small(), &req).0, vec![err(HttpError::TooManyHeaders)]);
        assert_eq!(feed_bytewise(small(), &req).0, vec![err(HttpError::TooManyHeaders)]);
        // The caller's array bounds the count too.
        let mut conn = Conn::new(Limits::default());
        conn.handle_bytes(&ok);
        let mut headers = [httparse::EMPTY_HEADER; 4];
        assert!(matches!(conn.poll(&mut headers), Input::Error(HttpError::TooManyHeaders)));
    }

    #[test]
    fn declared_body_over_the_cap_is_refused_at_the_head() {
        let req = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1001\r\n\r\n";
        let mut conn = Conn::new(small());
        conn.handle_bytes(req);
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Error(HttpError::BodyTooLarge)));
        let at_cap = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n";
        assert!(matches!(feed(small(), at_cap).0[0], Ev::Head { body: BodyKind::Length(1000), .. }));
        let huge = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999999\r\n\r\n";
        assert_eq!(feed(small(), huge).0, vec![err(HttpError::BodyTooLarge)]);
    }

    #[test]
    fn chunked_body_over_the_cap_is_refused_without_reading_past_it() {
        let limits = small();
        let head = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
        // Endless 100-byte chunks: refused at the size of the chunk that passes 1000 bytes.
        let mut req = head.to_vec();
        for _ in 0..100 {
            req.extend_from_slice(b"64\r\n");
            req.extend_from_slice(&[b'z'; 100]);
            req.extend_from_slice(b"\r\n");
        }
        let whole = feed(limits, &req);
        assert_eq!(whole.0, vec![head_ev_chunked(), err(HttpError::BodyTooLarge)]);
        assert!(whole.1 <= head.len() + limits.max_body_bytes + CHUNKED_FRAMING_ALLOWANCE);
        let bytewise = feed_bytewise(limits, &req);
        assert_eq!(bytewise.0, whole.0);
        // Fed byte by byte, the refusal comes at the first digit of the 11th chunk size.
        assert_eq!(bytewise.1, head.len() + 10 * 106 + 1);
        // One chunk declaring more than the cap: refused at its size line.
        let req = [&head[..], b"3E9\r\n"].concat();
        assert_eq!(feed(limits, &req).0, vec![head_ev_chunked(), err(HttpError::BodyTooLarge)]);
        let req = [&head[..], b"3E8\r\n"].concat();
        assert_eq!(feed(limits, &req).0, vec![head_ev_chunked()], "1000 bytes are fine");
        // Framing that outgrows its allowance: 1 data byte per ~1 KiB of chunk extension.
        let mut req = head.to_vec();
        let chunk = [b"1;".as_slice(), &[b'e'; 1000], b"\r\nx\r\n"].concat();
        while req.len() < head.len() + limits.max_body_bytes + CHUNKED_FRAMING_ALLOWANCE + 5000 {
            req.extend_from_slice(&chunk);
        }
        let expected = (
            vec![head_ev_chunked(), err(HttpError::BodyTooLarge)],
            head.len() + limits.max_body_bytes + CHUNKED_FRAMING_ALLOWANCE,
        );
        assert_eq!(feed(limits, &req), expected);
        let pieces: Vec<&[u8]> = req.chunks(7).collect();
        assert_eq!(feed_pieces(limits, &pieces), expected);
    }

    fn head_ev_chunked() -> Ev {
        head("POST", "/", BodyKind::Chunked, true)
    }

    #[test]
    fn malformed_inputs() {
        let cases: &[(&[u8], HttpError)] = &[
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5 5\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1;a\x01\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n folded\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1 2\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", HttpError::BadRequest),
            (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", HttpError::BadRequest),
            (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", HttpError::BadRequest),
            (b"GET / HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n", HttpError::BadRequest),
            (b"GET / HTTP/1.1\r\nHost: h\r\n folded: x\r\n\r\n", HttpError::BadRequest),
            (b"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", HttpError::BadRequest),
            (b"GET / FTP/1.1\r\nHost: h\r\n\r\n", HttpError::BadRequest),
            (b"GET / HTTP/1.1 \r\nHost: h\r\n\r\n", HttpError::BadRequest),
            (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", HttpError::BadRequest),
            (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", HttpError::UnsupportedVersion),
            (b"GET / HTTP/1.2\r\nHost: h\r\n\r\n", HttpError::UnsupportedVersion),
            (b"GET / HTTP/3\r\n", HttpError::UnsupportedVersion),
            (b"GET / HTTP/0.9\r\n\r\n", HttpError::UnsupportedVersion),
        ];
        for (req, error) in cases {
            let text = String::from_utf8_lossy(req);
            let whole = feed(Limits::default(), req).0;
            assert_eq!(whole.last(), Some(&err(*error)), "{text:?}");
            assert_eq!(feed_bytewise(Limits::default(), req).0, whole, "{text:?}");
        }
        // A missing Host is the caller's to judge.
        let (events, _) = feed(Limits::default(), b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(events, vec![head("GET", "/", BodyKind::None, true), body(b"")]);
        // Identical Content-Length values are one.
        let req = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\ncontent-length: 02\r\n\r\nab";
        assert_eq!(feed(Limits::default(), req).0[1], body(b"ab"));
    }

    #[test]
    fn errors_are_sticky_and_drain() {
        let mut conn = Conn::new(Limits::default());
        conn.handle_bytes(b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n");
        for _ in 0..3 {
            let mut headers = [httparse::EMPTY_HEADER; 8];
            assert!(matches!(conn.poll(&mut headers), Input::Error(HttpError::BadRequest)));
        }
        assert!(conn.capacity() > 0);
        assert_eq!(conn.handle_bytes(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"), 27);
        conn.finish_request();
        conn.discard_body();
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Error(HttpError::BadRequest)));
    }

    #[test]
    fn discard_and_early_finish() {
        // Refused at the head: the rest of the body is dropped, nothing else is parsed.
        let mut conn = Conn::new(Limits::default());
        conn.handle_bytes(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n12345");
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Head(_)));
        conn.discard_body();
        assert_eq!(conn.handle_bytes(b"67890GET / HTTP/1.1\r\nHost: h\r\n\r\n"), 32);
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Partial));
        // Finished before the body is complete: same.
        let mut conn = Conn::new(Limits::default());
        conn.handle_bytes(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Head(_)));
        conn.finish_request();
        assert!(matches!(conn.state, State::Draining));
        // Finished with the body complete but never polled: fine, the next request follows.
        let mut conn = Conn::new(Limits::default());
        conn.handle_bytes(
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nabGET /n HTTP/1.1\r\nHost: h\r\n\r\n",
        );
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Head(_)));
        conn.finish_request();
        let mut headers = [httparse::EMPTY_HEADER; 8];
        assert!(matches!(conn.poll(&mut headers), Input::Head(Head { path: "/n", .. })));
    }

    #[test]
    fn pipelined_bytes_move_to_the_front_only_when_room_runs_out() {
        let limits = Limits { max_head_bytes: 64, max_headers: 4, max_body_bytes: 64 };
        let mut conn = Conn::new(limits);
        let req = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello";
        let mut events = Vec::new();
        for _ in 0..1000 {
            let mut off = 0;
            while off < req.len() {
                off += conn.handle_bytes(&req[off..]);
                assert!(!drain(&mut conn, &mut events));
            }
        }
        assert_eq!(events.len(), 2000);
        assert!(events.iter().skip(1).step_by(2).all(|e| *e == body(b"hello")));
    }

    #[test]
    fn writers_are_byte_exact() {
        let mut out = Vec::new();
        write_head(
            &mut out,
            200,
            "OK",
            Some("application/json"),
            Some(17),
            &[("mcp-session-id", "abc")],
            false,
        );
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 17\r\n\
              mcp-session-id: abc\r\n\r\n"
        );
        out.clear();
        write_head(&mut out, 404, status_reason(404), None, Some(0), &[], true);
        assert_eq!(out, b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        out.clear();
        write_head(
            &mut out,
            405,
            status_reason(405),
            None,
            None,
            &[("allow", "GET, POST"), ("x", "y")],
            false,
        );
        assert_eq!(out, b"HTTP/1.1 405 Method Not Allowed\r\nallow: GET, POST\r\nx: y\r\n\r\n");
        out.clear();
        write_head(
            &mut out,
            401,
            "Unauthorized",
            None,
            Some(0),
            &[("www-authenticate", "a\r\nset-cookie: x")],
            true,
        );
        assert_eq!(
            out,
            b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\
              www-authenticate: a  set-cookie: x\r\n\r\n"
        );
        out.clear();
        write_202(&mut out, false);
        assert_eq!(out, b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
        out.clear();
        write_202(&mut out, true);
        assert_eq!(out, b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        out.clear();
        write_error(&mut out, HttpError::HeadTooLarge);
        assert_eq!(
            out,
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
        out.clear();
        write_chunked_end(&mut out);
        assert_eq!(out, b"0\r\n\r\n");
        for (status, reason) in [
            (200, "OK"),
            (202, "Accepted"),
            (400, "Bad Request"),
            (401, "Unauthorized"),
            (403, "Forbidden"),
            (404, "Not Found"),
            (405, "Method Not Allowed"),
            (408, "Request Timeout"),
            (413, "Content Too Large"),
            (415, "Unsupported Media Type"),
            (431, "Request Header Fields Too Large"),
            (500, "Internal Server Error"),
            (505, "HTTP Version Not Supported"),
            (299, ""),
        ] {
            assert_eq!(status_reason(status), reason);
        }
        for (e, status) in [
            (HttpError::BadRequest, 400),
            (HttpError::HeadTooLarge, 431),
            (HttpError::TooManyHeaders, 431),
            (HttpError::BodyTooLarge, 413),
            (HttpError::UnsupportedVersion, 505),
        ] {
            assert_eq!((e.status(), e.reason()), (status, status_reason(status)));
        }
    }

    #[test]
    fn steady_state_allocates_nothing() {
        let reqs = b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}\
            POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n\
            GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n";
        let mut conn = Conn::new(Limits::default());
        // The steady state: the connection holds a buffer lent from a pool.
        assert!(conn.give_buffer(Vec::with_capacity(conn.max_buffer())).is_none());
        let mut out = Vec::with_capacity(64 * 1024);
        let info = allocation_counter::measure(|| {
            for round in 0..300 {
                let mut off = 0;
                // Fed in uneven pieces so requests straddle reads.
                while off < reqs.len() {
                    let end = (off + 1 + (round * 7 + off) % 97).min(reqs.len());
                    off += conn.handle_bytes(&reqs[off..end]);
                    loop {
                        let mut headers = [httparse::EMPTY_HEADER; 16];
                        match conn.poll(&mut headers) {
                            Input::Head(h) => assert!(h.keep_alive),
                            Input::Body(b) => {
                                out.clear();
                                if b.is_empty() {
                                    write_head(
                                        &mut out,
                                        200,
                                        "OK",
                                        None,
                                        None,
                                        &[("transfer-encoding", "chunked")],
                                        false,
                                    );
                                    write_chunked_end(&mut out);
                                } else {
                                    assert_eq!(b, b"{\"a\":1}");
                                    write_head(
                                        &mut out,
                                        200,
                                        "OK",
                                        Some("application/json"),
                                        Some(b.len()),
                                        &[],
                                        false,
                                    );
                                    out.extend_from_slice(b);
                                }
                                conn.finish_request();
                            }
                            Input::Partial => break,
                            Input::Error(e) => panic!("{e:?}"),
                        }
                    }
                }
            }
        });
        assert_eq!(info.count_total, 0, "{info:?}");
        assert!(conn.is_idle());
    }

    /// A request of a transcript, with the events it must produce.
    #[derive(Debug, Clone)]
    enum Req {
        Get { path: u8, expect: bool },
        Length { body: Vec<u8>, expect: bool },
        Chunked { chunks: Vec<Vec<u8>>, ext: bool, trailer: bool },
    }

    impl Req {
        fn write(&self, out: &mut Vec<u8>, events: &mut Vec<Ev>) {
            let ev = |method: &str, path: String, body: BodyKind, expect: bool| Ev::Head {
                method: method.into(),
                path,
                minor: 1,
                body,
                keep_alive: true,
                expect,
            };
            match self {
                Self::Get { path, expect } => {
                    let path = format!("/get/{path}");
                    out.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: h\r\n").as_bytes());
                    if *expect {
                        out.extend_from_slice(b"Expect: 100-continue\r\n");
                    }
                    out.extend_from_slice(b"\r\n");
                    events.extend([ev("GET", path, BodyKind::None, *expect), body(b"")]);
                }
                Self::Length { body: b, expect } => {
                    let h = format!("POST /len HTTP/1.1\r\nhost: h\r\ncontent-length: {}\r\n", b.len());
                    out.extend_from_slice(h.as_bytes());
                    if *expect {
                        out.extend_from_slice(b"expect: 100-continue\r\n");
                    }
                    out.extend_from_slice(b"\r\n");
                    out.extend_from_slice(b);
                    events.extend([ev("POST", "/len".into(), BodyKind::Length(b.len()), *expect), body(b)]);
                }
                Self::Chunked { chunks, ext, trailer } => {
                    out.extend_from_slice(
                        b"PUT /chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
                    );
                    for c in chunks.iter().filter(|c| !c.is_empty()) {
                        out.extend_from_slice(format!("{:X}", c.len()).as_bytes());
                        if *ext {
                            out.extend_from_slice(b" ;name=\"v\\r\\n\";x");
                        }
                        out.extend_from_slice(b"\r\n");
                        out.extend_from_slice(c);
                        out.extend_from_slice(b"\r\n");
                    }
                    out.extend_from_slice(if *ext { b"0;end\r\n" } else { b"0\r\n" });
                    if *trailer {
                        out.extend_from_slice(b"X-Checksum: 1234\r\nX-Empty:\r\n");
                    }
                    out.extend_from_slice(b"\r\n");
                    events.extend([
                        ev("PUT", "/chunked".into(), BodyKind::Chunked, false),
                        body(&chunks.concat()),
                    ]);
                }
            }
        }
    }

    fn req_strategy() -> impl Strategy<Value = Req> {
        let bytes = || prop::collection::vec(any::<u8>(), 0..300);
        prop_oneof![
            (any::<u8>(), any::<bool>()).prop_map(|(path, expect)| Req::Get { path, expect }),
            (bytes(), any::<bool>()).prop_map(|(body, expect)| Req::Length { body, expect }),
            (prop::collection::vec(bytes(), 0..5), any::<bool>(), any::<bool>())
                .prop_map(|(chunks, ext, trailer)| Req::Chunked { chunks, ext, trailer }),
        ]
    }

    /// Cuts `data` at the given points (taken modulo its length).
    fn split<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        cuts.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([data.len()]) {
            pieces.push(&data[from..cut]);
            from = cut;
        }
        pieces
    }

    /// Feeds `data` whole, cut at `cuts` and byte by byte: the events are the same. Bytes
    /// taken may differ only after an error (a bigger read holds bytes past the one that
    /// decided it); byte by byte, the error comes with the byte that decides it, so no feed
    /// takes fewer.
    fn same_events(limits: Limits, data: &[u8], cuts: &[usize]) -> Result<(), TestCaseError> {
        let whole = feed(limits, data);
        let pieces = feed_pieces(limits, &split(data, cuts));
        let bytewise = feed_bytewise(limits, data);
        prop_assert_eq!(&pieces.0, &whole.0);
        prop_assert_eq!(&bytewise.0, &whole.0);
        if matches!(whole.0.last(), Some(Ev::Error(_))) {
            prop_assert!(bytewise.1 <= pieces.1 && bytewise.1 <= whole.1);
        } else {
            prop_assert_eq!(pieces.1, whole.1);
            prop_assert_eq!(bytewise.1, whole.1);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn chunking_invariance(
            reqs in prop::collection::vec(req_strategy(), 1..6),
            cuts in prop::collection::vec(any::<usize>(), 0..40),
        ) {
            let (mut transcript, mut expected) = (Vec::new(), Vec::new());
            for req in &reqs {
                req.write(&mut transcript, &mut expected);
            }
            let limits = Limits::default();
            let whole = feed(limits, &transcript);
            prop_assert_eq!(&whole, &(expected, transcript.len()));
            prop_assert_eq!(&feed_pieces(limits, &split(&transcript, &cuts)), &whole);
            prop_assert_eq!(&feed_bytewise(limits, &transcript), &whole);
        }

        /// Whatever the bytes (mutated transcripts under tight limits, so that limits and
        /// framing errors are hit), however they are cut: no panic, the same events and the
        /// same bytes taken.
        #[test]
        fn any_input_same_events_however_cut(
            reqs in prop::collection::vec(req_strategy(), 1..4),
            edits in prop::collection::vec((any::<usize>(), any::<u8>(), 0..3u8), 0..4),
            cuts in prop::collection::vec(any::<usize>(), 0..20),
            max_head_bytes in 40..200usize,
            max_headers in 1..5usize,
            max_body_bytes in 0..400usize,
        ) {
            let (mut data, mut expected) = (Vec::new(), Vec::new());
            for req in &reqs {
                req.write(&mut data, &mut expected);
            }
            for (at, byte, op) in edits {
                let at = at % (data.len() + 1);
                match op {
                    0 if at < data.len() => data[at] = byte,
                    1 => data.insert(at, byte),
                    _ if at < data.len() => { data.remove(at); }
                    _ => {}
                }
            }
            let limits = Limits { max_head_bytes, max_headers, max_body_bytes };
            same_events(limits, &data, &cuts)?;
        }

        #[test]
        fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..600), cuts in prop::collection::vec(any::<usize>(), 0..10)) {
            let limits = Limits { max_head_bytes: 128, max_headers: 4, max_body_bytes: 64 };
            same_events(limits, &data, &cuts)?;
        }
    }
}
