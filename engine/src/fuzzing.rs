//! Fuzzing harnesses (compiled only with `--cfg fuzzing`, which cargo-fuzz sets).
//! The targets in `fuzz/` are one-line calls into these functions.

use core::fmt::Write as _;
use core::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::http::{
    AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent, OpenError, Verdict,
};
use crate::http_headers::{self, BodyValue, Expected, MAX_DECODED_LEN, MismatchReason, ParamCheck};
use crate::http1::{self, BodyKind, HttpError, Input, Limits};
use crate::{
    AnswerError, Catalog, Config, Content, Engine, Event, HeaderParamKind, HostError, Instant, Prompt,
    PromptArgument, PromptMessage, PromptOutput, Resource, ResourceContents, ResourceTemplate, Ticket, Tool,
    ToolOutput,
};

fn catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("plain"))
        .tool(Tool::new("typed").input_schema(serde_json::json!({
            "type": "object",
            "properties": { "text": { "type": "string", "maxLength": 8 } },
            "required": ["text"]
        })))
        .resource(Resource::new("x://r", "r"))
        .template(ResourceTemplate::new("x://t/{id}/{+rest}", "t"))
        .prompt(Prompt::new("p").argument(PromptArgument::required("a")))
        .build()
        .unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"))
}

/// The stdio frame decoder and everything behind it. The first byte picks the chunk size
/// the rest is fed in; events are answered at once, every other event is deferred and
/// answered later; every output line must be a JSON object, and feeding the same input
/// whole must give the same output.
pub fn stdio_frames(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else { return };
    let chunk = usize::from(first % 64) + 1;
    let chunked = run(input, chunk);
    let whole = run(input, usize::MAX);
    assert_eq!(chunked, whole, "chunking changed the output");
    for line in whole.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).expect("every output line is JSON");
        assert!(v.is_object() && v["jsonrpc"] == "2.0");
    }
}

fn run(input: &[u8], chunk: usize) -> Vec<u8> {
    let mut cfg = Config::new("fuzz", "0");
    cfg.max_frame_len(512).max_in_flight(4).max_depth(16);
    let mut e = Engine::new(cfg, catalog());
    let mut out = Vec::new();
    let mut deferred = Vec::new();
    let mut k = 0usize;
    let mut rest = input;
    let mut stalls = 0;
    loop {
        let take = rest.len().min(chunk);
        let n = e.handle_input(Instant::ZERO, &rest[..take]);
        rest = &rest[n..];
        while let Some(ev) = e.poll_event() {
            k += 1;
            let ticket = ev.ticket();
            match ev {
                Event::Cancelled(_) => {}
                _ if k.is_multiple_of(2) => deferred.push(ticket),
                Event::CallTool(c) => {
                    let text = c.arguments.raw();
                    let _ = c.answer(&ToolOutput::new(&[Content::text(text)]));
                }
                Event::ReadResource(r) => {
                    let uri = r.uri;
                    let _ = r.answer(&[ResourceContents::text(uri, None, "x")]);
                }
                Event::GetPrompt(p) => {
                    let _ = p.answer(&PromptOutput::new(&[PromptMessage::user(Content::text("x"))]));
                }
                Event::Complete(c) => {
                    let value = c.value;
                    let _ = c.answer(&[value, "x"], Some(2), false);
                }
            }
        }
        if n == 0 {
            // Paused: answer a deferred ticket (or it was cancelled: the answer is refused).
            if let Some(t) = deferred.pop() {
                let _ = e.answer_tool(t, &ToolOutput::new(&[]));
                let _ = e.answer_resource(t, &[]);
                let _ = e.answer_prompt(t, &PromptOutput::new(&[]));
                let _ = e.answer_completion(t, &[], None, false);
                stalls = 0;
            } else if !e.pending_output().is_empty() {
                stalls = 0;
            } else {
                stalls += 1;
            }
        }
        let pending = e.pending_output().len();
        out.extend_from_slice(e.pending_output());
        e.consume_output(pending);
        if rest.is_empty() {
            break;
        }
        assert!(stalls < 3, "the engine stopped taking input with nothing left to do");
    }
    e.handle_eof(Instant::ZERO);
    for t in deferred.drain(..) {
        let _ = e.answer_tool(t, &ToolOutput::new(&[]));
        let _ = e.answer_resource(t, &[]);
        let _ = e.answer_prompt(t, &PromptOutput::new(&[]));
        let _ = e.answer_completion(t, &[], None, false);
    }
    while let Some(ev) = e.poll_event() {
        let _ = ev.ticket();
    }
    out.extend_from_slice(e.pending_output());
    out
}

// ---------------------------------------------------------------------------------------
// http_codec: the HTTP/1.1 connection codec.
// ---------------------------------------------------------------------------------------

/// Largest input the HTTP harnesses look at (bigger inputs are ignored): keeps memory and
/// the time of one run bounded.
const MAX_HTTP_INPUT: usize = 64 * 1024;

/// What the codec produced, owned, for comparisons (as in the codec's own proptest).
#[derive(Debug, Clone, PartialEq, Eq)]
enum CodecEvent {
    Head {
        method: String,
        path: String,
        minor: u8,
        headers: usize,
        body: BodyKind,
        keep_alive: bool,
        expect: bool,
    },
    Body(Vec<u8>),
    Error(HttpError),
}

/// The limit sets the two top bits of the first byte choose from: tight ones, so that
/// every limit is reached, and the engine's HTTP fuzz limits.
const CODEC_LIMITS: [Limits; 4] = [
    Limits { max_head_bytes: 48, max_headers: 2, max_body_bytes: 16 },
    Limits { max_head_bytes: 256, max_headers: 8, max_body_bytes: 300 },
    Limits { max_head_bytes: 1024, max_headers: 64, max_body_bytes: 4096 },
    Limits { max_head_bytes: 128, max_headers: 4, max_body_bytes: 0 },
];

/// The HTTP/1.1 codec (`http1::Conn`). The first byte picks the limits (two top bits) and
/// the chunk size (1 to 64) the rest is fed in. The same bytes fed whole, in chunks and
/// byte by byte give the same events (heads, bodies, errors); `handle_bytes` never takes
/// more than `capacity()`; the connection never stalls with input left; a head's raw
/// bytes parse again into the same headers; a body has the length its head declared;
/// after an error every poll returns that error.
pub fn http_codec(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else { return };
    if input.len() > MAX_HTTP_INPUT {
        return;
    }
    let limits = CODEC_LIMITS[usize::from(first >> 6)];
    let chunk = usize::from(first & 0x3f) + 1;
    let whole = codec_feed(limits, input, usize::MAX);
    let chunked = codec_feed(limits, input, chunk);
    assert_eq!(chunked.events, whole.events, "chunks of {chunk} changed the events");
    let bytewise = codec_feed(limits, input, 1);
    assert_eq!(bytewise.events, whole.events, "feeding byte by byte changed the events");
    if whole.cut_short {
        // After an error or a closing request, a bigger read holds bytes past the one that
        // decided it; byte by byte, nothing past it is taken.
        assert!(bytewise.taken <= chunked.taken && bytewise.taken <= whole.taken);
    } else {
        assert_eq!((chunked.taken, bytewise.taken), (whole.taken, whole.taken));
        assert_eq!(whole.taken, input.len());
    }
}

/// The outcome of one feed.
struct CodecRun {
    events: Vec<CodecEvent>,
    /// Bytes taken while the connection still parsed (not after an error or while
    /// draining).
    taken: usize,
    /// The connection stopped parsing (an error, or a request without keep-alive).
    cut_short: bool,
}

fn codec_feed(limits: Limits, input: &[u8], chunk: usize) -> CodecRun {
    let mut conn = http1::Conn::new(limits);
    let mut run = CodecRun { events: Vec::new(), taken: 0, cut_short: false };
    let mut fed = 0;
    for piece in input.chunks(chunk) {
        let mut off = 0;
        let mut idle = 0;
        loop {
            let capacity = conn.capacity();
            let n = conn.handle_bytes(&piece[off..]);
            assert!(n <= capacity, "took {n} bytes with a capacity of {capacity}: {conn:?}");
            assert!(n <= piece.len() - off);
            if run.cut_short {
                assert_eq!(n, piece.len() - off, "a draining connection takes every byte");
            } else {
                run.taken += n;
            }
            off += n;
            if let Some(e) = codec_drain(&mut conn, limits, &mut run) {
                codec_sticky(&mut conn, e, &input[fed + off..]);
                return run;
            }
            if off == piece.len() {
                break;
            }
            idle = if n == 0 { idle + 1 } else { 0 };
            assert!(idle < 2 && conn.capacity() > 0, "stuck with input left: {conn:?}");
        }
        fed += piece.len();
    }
    run
}

/// Polls until `Partial`, finishing each request after its body; returns the error, if
/// any.
fn codec_drain(conn: &mut http1::Conn, limits: Limits, run: &mut CodecRun) -> Option<HttpError> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let ev = match conn.poll(&mut headers) {
            Input::Head(h) => CodecEvent::Head {
                method: h.method.to_owned(),
                path: h.path.to_owned(),
                minor: h.minor_version,
                headers: h.headers.len(),
                body: h.body,
                keep_alive: h.keep_alive,
                expect: h.expect_continue,
            },
            Input::Body(b) => CodecEvent::Body(b.to_vec()),
            Input::Partial => return None,
            Input::Error(e) => {
                assert!(matches!(e.status(), 400 | 413 | 431 | 505), "{e:?}");
                run.events.push(CodecEvent::Error(e));
                run.cut_short = true;
                return Some(e);
            }
        };
        assert!(!run.cut_short, "a draining connection produced {ev:?}");
        let mut finish = None;
        match &ev {
            CodecEvent::Head { method, minor, headers, body, .. } => {
                assert!(!matches!(run.events.last(), Some(CodecEvent::Head { .. })), "a head after a head");
                assert!(!method.is_empty() && *minor <= 1);
                assert!(*headers <= limits.max_headers);
                if let BodyKind::Length(n) = body {
                    assert!(*n <= limits.max_body_bytes);
                }
                // The HTTP engine parses the raw head again (`HeaderList`): it must parse
                // into the same headers.
                let raw = conn.head_bytes();
                let mut again = [httparse::EMPTY_HEADER; 64];
                let mut req = httparse::Request::new(&mut again);
                assert_eq!(req.parse(raw), Ok(httparse::Status::Complete(raw.len())), "{raw:?}");
                assert_eq!(req.headers.len(), *headers);
            }
            CodecEvent::Body(b) => {
                let Some(CodecEvent::Head { body, keep_alive, .. }) = run.events.last() else {
                    panic!("a body without a head");
                };
                match *body {
                    BodyKind::None => assert!(b.is_empty()),
                    BodyKind::Length(n) => assert_eq!(b.len(), n),
                    BodyKind::Chunked => assert!(b.len() <= limits.max_body_bytes),
                }
                assert_eq!(conn.body(), &b[..]);
                let mut headers = [httparse::EMPTY_HEADER; 64];
                assert!(matches!(conn.poll(&mut headers), Input::Partial), "a body is returned once");
                finish = Some(*keep_alive);
            }
            CodecEvent::Error(_) => {}
        }
        run.events.push(ev);
        if let Some(keep_alive) = finish {
            conn.finish_request();
            if !keep_alive {
                // Nothing more is parsed: input is taken and dropped.
                run.cut_short = true;
            }
        }
    }
}

/// After an error, the connection answers the same error whatever is done to it.
fn codec_sticky(conn: &mut http1::Conn, e: HttpError, rest: &[u8]) {
    fn same(conn: &mut http1::Conn, e: HttpError) {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        match conn.poll(&mut headers) {
            Input::Error(again) => assert_eq!(again, e, "the error changed"),
            other => panic!("after {e:?}, poll gave {other:?}"),
        }
    }
    same(conn, e);
    assert!(conn.capacity() > 0, "a failed connection keeps taking (and dropping) input");
    assert_eq!(conn.handle_bytes(rest), rest.len());
    same(conn, e);
    conn.finish_request();
    same(conn, e);
    conn.discard_body();
    same(conn, e);
    let more = b"GET / HTTP/1.1\r\n\r\n";
    assert_eq!(conn.handle_bytes(more), more.len());
    same(conn, e);
}

// ---------------------------------------------------------------------------------------
// http_headers: the MCP header matcher.
// ---------------------------------------------------------------------------------------

/// A body value, owned.
#[derive(Debug, Clone)]
enum OwnedValue {
    Absent,
    Null,
    Str(String),
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Other,
}

impl OwnedValue {
    /// The first byte is the JSON type, the rest its value (as text, else as raw bytes).
    fn from_field(field: &[u8]) -> Self {
        let (tag, rest) = field.split_first().map_or((0, &[][..]), |(&t, r)| (t, r));
        let text = String::from_utf8_lossy(rest);
        let mut le = [0u8; 8];
        for (d, s) in le.iter_mut().zip(rest) {
            *d = *s;
        }
        match tag % 8 {
            0 => Self::Absent,
            1 => Self::Null,
            2 => Self::Str(text.into_owned()),
            3 => Self::I64(text.parse().unwrap_or_else(|_| i64::from_le_bytes(le))),
            // A number that fits a u64 and not an i64.
            4 => Self::U64(text.parse().unwrap_or_else(|_| u64::from_le_bytes(le)) | 1 << 63),
            // JSON has no NaN nor infinity.
            5 => Self::F64(
                text.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .or_else(|| Some(f64::from_le_bytes(le)).filter(|x| x.is_finite()))
                    .unwrap_or(0.5),
            ),
            6 => Self::Bool(rest.first().is_some_and(|b| b & 1 == 1)),
            _ => Self::Other,
        }
    }

    fn borrow(&self) -> BodyValue<'_> {
        match self {
            Self::Absent => BodyValue::Absent,
            Self::Null => BodyValue::Null,
            Self::Str(s) => BodyValue::Str(s),
            Self::I64(n) => BodyValue::I64(*n),
            Self::U64(n) => BodyValue::U64(*n),
            Self::F64(x) => BodyValue::F64(*x),
            Self::Bool(b) => BodyValue::Bool(*b),
            Self::Other => BodyValue::Other,
        }
    }
}

/// Strips SP / HTAB from both ends.
fn trim_ows(raw: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = raw.iter().position(|b| !is_ows(b)).unwrap_or(raw.len());
    let end = raw.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
    &raw[start..end]
}

fn sentinel_payload(value: &[u8]) -> Option<&[u8]> {
    value.strip_prefix(b"=?base64?")?.strip_suffix(b"?=")
}

fn sentinel(s: &[u8]) -> Vec<u8> {
    format!("=?base64?{}?=", STANDARD.encode(s)).into_bytes()
}

/// A value the matcher takes literally as `s`.
fn literal_for(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let ok = b.iter().all(|&c| matches!(c, b'\t' | b' '..=b'~')) && trim_ows(b) == b;
    ok.then(|| b.to_vec())
}

/// The `Mcp-Name` / `Mcp-Param-*` value a conforming client sends for string `s`.
fn mirror_str(s: &str, force_sentinel: bool) -> Option<Vec<u8>> {
    match literal_for(s) {
        Some(v) if !force_sentinel && sentinel_payload(&v).is_none() => Some(v),
        _ if s.len() <= MAX_DECODED_LEN => Some(sentinel(s.as_bytes())),
        _ => None,
    }
}

/// The `Mcp-Param-*` header a conforming client sends: `Ok(None)` for no header,
/// `Err(())` when the body value has no header spelling (wrong type, fraction).
fn mirror_param(
    kind: HeaderParamKind,
    value: &OwnedValue,
    force_sentinel: bool,
) -> Result<Option<Vec<u8>>, ()> {
    let text =
        match (kind, value) {
            (_, OwnedValue::Absent | OwnedValue::Null) => return Ok(None),
            (HeaderParamKind::String, OwnedValue::Str(s)) => {
                return mirror_str(s, force_sentinel).map(Some).ok_or(());
            }
            (HeaderParamKind::Integer, OwnedValue::I64(n)) => n.to_string(),
            (HeaderParamKind::Integer, OwnedValue::U64(n)) => n.to_string(),
            (HeaderParamKind::Integer, OwnedValue::F64(x)) if x.trunc() == *x => {
                if x.abs() < i128::MAX as f64 { (*x as i128).to_string() } else { format!("{x:e}") }
            }
            (HeaderParamKind::Boolean, OwnedValue::Bool(b)) => b.to_string(),
            _ => return Err(()),
        };
    Ok(Some(if force_sentinel { sentinel(text.as_bytes()) } else { text.into_bytes() }))
}

/// A token (what the catalog accepts as an `x-mcp-header` name) from fuzz bytes.
fn token(field: &[u8], taken: &[String]) -> String {
    const TCHARS: &[u8] = b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut t: String =
        field.iter().take(32).map(|&b| char::from(TCHARS[usize::from(b) % TCHARS.len()])).collect();
    if t.is_empty() {
        t.push('P');
    }
    // Names are unique, case-insensitively, within a tool.
    while taken.iter().any(|o| o.eq_ignore_ascii_case(&t)) {
        t.push('x');
    }
    t
}

/// The header matcher (`http_headers::check`, `decode_value`).
///
/// Input: a separator byte, two flag bytes, then fields split on the separator: protocol
/// version, method, name, two fields per parameter (header name, typed value), then
/// request headers as name/value field pairs. Flags: whether there is a name; how many
/// string, integer and boolean parameters (0-3 each); whether the conforming headers are
/// sent first (then, with no other header, `check` must pass); whether they use the
/// base64 sentinel; the `decode_value` scratch size; whitespace around the round-trip
/// value.
///
/// Asserts: no panic; a mismatch is missing exactly when it has no header value, and
/// renders as one printable line under 2 KiB; `decode_value` returns literals unchanged,
/// decodes only canonical base64 (re-encoding gives the payload back), and is exact about
/// the space it needs; for any string `s`, `=?base64?{base64(s)}?=` decodes to `s`.
pub fn http_headers(data: &[u8]) {
    let [sep, flags, flags2, rest @ ..] = data else { return };
    if rest.len() > MAX_HTTP_INPUT {
        return;
    }
    let fields: Vec<&[u8]> = rest.split(|b| b == sep).collect();
    let mut it = fields.iter();
    let mut next = || it.next().copied().unwrap_or(b"");
    let version = String::from_utf8_lossy(next()).into_owned();
    let method = String::from_utf8_lossy(next()).into_owned();
    let name = String::from_utf8_lossy(next()).into_owned();
    let kinds = [HeaderParamKind::String, HeaderParamKind::Integer, HeaderParamKind::Boolean];
    let mut names: Vec<String> = Vec::new();
    let mut values: Vec<(HeaderParamKind, OwnedValue)> = Vec::new();
    for (i, kind) in kinds.into_iter().enumerate() {
        for _ in 0..(flags >> (1 + 2 * i)) & 3 {
            names.push(token(next(), &names));
            values.push((kind, OwnedValue::from_field(next())));
        }
    }
    let params: Vec<ParamCheck<'_>> = names
        .iter()
        .zip(&values)
        .map(|(header, (kind, value))| ParamCheck { header, kind: *kind, value: value.borrow() })
        .collect();
    let expected = Expected {
        protocol_version: &version,
        method: &method,
        name: (flags & 1 != 0).then_some(name.as_str()),
        params: &params,
    };

    // The headers a conforming client sends, if asked for.
    let mirror = flags & 0x80 != 0;
    let force_sentinel = flags2 & 1 != 0;
    let mut raw: Vec<(String, Vec<u8>)> = Vec::new();
    let mut conforming = true;
    if mirror {
        let mut push = |n: String, v: Option<Vec<u8>>| match v {
            Some(v) => raw.push((n, v)),
            None => conforming = false,
        };
        push("MCP-Protocol-Version".into(), literal_for(&version));
        push("mcp-method".into(), literal_for(&method));
        if let Some(name) = expected.name {
            push("Mcp-Name".into(), mirror_str(name, force_sentinel));
        }
        for (header, (kind, value)) in names.iter().zip(&values) {
            match mirror_param(*kind, value, force_sentinel) {
                Ok(Some(v)) => raw.push((format!("Mcp-Param-{header}"), v)),
                Ok(None) => {}
                Err(()) => conforming = false,
            }
        }
    }
    let mirrored = raw.len();
    for pair in it.as_slice().chunks(2) {
        let value = pair.get(1).copied().unwrap_or(b"");
        raw.push((String::from_utf8_lossy(pair[0]).into_owned(), value.to_vec()));
    }
    let headers: Vec<httparse::Header<'_>> =
        raw.iter().map(|(name, value)| httparse::Header { name, value }).collect();

    let outcome = http_headers::check(&headers, &expected);
    if mirror && conforming && headers.len() == mirrored {
        assert_eq!(outcome, Ok(()), "the headers of a conforming client were refused: {raw:?}");
    }
    if let Err(m) = outcome {
        assert_eq!(m.header_value.is_none(), m.reason == MismatchReason::Missing, "{m:?}");
        let mut msg = String::new();
        write!(msg, "{m}").unwrap_or_else(|_| unreachable!("writing to a String cannot fail"));
        assert!(msg.len() < 2048, "a {}-byte mismatch message: {msg}", msg.len());
        assert!(msg.starts_with("Header mismatch: "), "{msg}");
        assert!(!msg.chars().any(char::is_control), "a control character in {msg:?}");
    }

    // decode_value on every header value, with a small scratch and a full one.
    let sizes = [0, 1, 3, 16, 64, MAX_DECODED_LEN];
    let mut small = vec![0u8; sizes[usize::from(flags2 >> 1) % sizes.len()]];
    let cap = small.len();
    let mut full = vec![0u8; MAX_DECODED_LEN];
    for (_, value) in &raw {
        let a = http_headers::decode_value(value, &mut small).map(str::to_owned);
        let b = http_headers::decode_value(value, &mut full);
        let trimmed = trim_ows(value);
        match sentinel_payload(trimmed) {
            None => {
                assert_eq!(a.as_deref().map_err(|e| *e), b);
                if let Ok(s) = b {
                    assert_eq!(s.as_bytes(), trimmed);
                }
            }
            Some(payload) => {
                if let Ok(s) = b {
                    assert_eq!(STANDARD.encode(s).as_bytes(), payload, "a non-canonical payload decoded");
                }
                match (&a, b) {
                    (Ok(x), Ok(y)) => assert_eq!(x, y),
                    (Err(MismatchReason::TooLong), Ok(y)) => assert!(y.len() > cap, "{y:?} fits {cap} bytes"),
                    (Ok(x), Err(e)) => panic!("{x:?} with {cap} bytes, {e:?} with more"),
                    (Err(MismatchReason::TooLong), Err(_)) => {}
                    (Err(e), Ok(y)) => panic!("{e:?} with {cap} bytes, {y:?} with more"),
                    (Err(e), Err(f)) => assert_eq!(*e, f),
                }
            }
        }
    }

    // Round trip: any string, sentinel-encoded, decodes back, needing exactly its length.
    let pad: [&[u8]; 4] = [b"", b" ", b"\t", b" \t "];
    let (before, after) = (pad[usize::from(flags2 >> 4) & 3], pad[usize::from(flags2 >> 6)]);
    let encoded = [before, &sentinel(name.as_bytes()), after].concat();
    if name.len() <= MAX_DECODED_LEN {
        assert_eq!(http_headers::decode_value(&encoded, &mut full), Ok(name.as_str()));
    }
    let mut exact = vec![0u8; name.len()];
    assert_eq!(http_headers::decode_value(&encoded, &mut exact), Ok(name.as_str()));
    if let Some(short) = name.len().checked_sub(1) {
        let mut short = vec![0u8; short];
        assert_eq!(http_headers::decode_value(&encoded, &mut short), Err(MismatchReason::TooLong));
    }
}

// ---------------------------------------------------------------------------------------
// http_engine: Streamable HTTP end to end.
// ---------------------------------------------------------------------------------------

/// Connections the engine harness drives at once.
const PEERS: usize = 3;

/// The codec limits of the harness's `HttpConfig` (`max_head` 1024, `max_body` 4096).
const ENGINE_LIMITS: Limits =
    Limits { max_head_bytes: 1024, max_headers: crate::http::MAX_HEADERS, max_body_bytes: 4096 };

fn http_catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("plain"))
        .tool(Tool::new("typed").input_schema(serde_json::json!({
            "type": "object",
            "properties": { "text": { "type": "string", "maxLength": 8 } },
            "required": ["text"]
        })))
        .tool(Tool::new("region").input_schema(serde_json::json!({
            "type": "object",
            "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "n": { "type": "integer", "x-mcp-header": "N" },
                "flag": { "type": "boolean", "x-mcp-header": "Flag" }
            },
            "required": ["region"]
        })))
        .resource(Resource::new("x://r", "r"))
        .template(ResourceTemplate::new("x://t/{id}", "t"))
        .prompt(Prompt::new("p").argument(PromptArgument::required("a")))
        .build()
        .unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"))
}

/// One connection as the harness (the peer and the adapter) sees it.
struct Peer {
    id: ConnId,
    /// Bytes received but not yet taken by the engine.
    backlog: Vec<u8>,
    /// Output read from the engine, `parsed` bytes of it checked.
    transcript: Vec<u8>,
    parsed: usize,
    /// Inside a chunked (SSE) response; whether it closes the connection.
    chunked: Option<bool>,
    /// A complete response said `connection: close`.
    closed: bool,
    /// The peer does not read its output.
    paused: bool,
    /// A codec of the harness's own, fed the bytes the engine took: the request heads, in
    /// order, to match with the responses.
    shadow: http1::Conn,
    /// Each request's minor version and whether it waits for `100 Continue`.
    requests: Vec<(u8, bool)>,
    /// Final (not `100`) responses read so far.
    answered: usize,
}

impl Peer {
    fn new(id: ConnId) -> Self {
        Self {
            id,
            backlog: Vec::new(),
            transcript: Vec::new(),
            parsed: 0,
            chunked: None,
            closed: false,
            paused: false,
            shadow: http1::Conn::new(ENGINE_LIMITS),
            requests: Vec::new(),
            answered: 0,
        }
    }

    /// Parses the bytes the engine took with the shadow codec.
    fn shadow(&mut self, mut taken: &[u8]) {
        while !taken.is_empty() {
            let n = self.shadow.handle_bytes(taken);
            taken = &taken[n..];
            loop {
                let mut headers = [httparse::EMPTY_HEADER; 64];
                match self.shadow.poll(&mut headers) {
                    Input::Head(h) => self.requests.push((h.minor_version, h.expect_continue)),
                    Input::Body(_) => self.shadow.finish_request(),
                    // After an error the engine answers and closes: nothing more to match.
                    Input::Partial | Input::Error(_) => break,
                }
            }
            if n == 0 {
                break;
            }
        }
    }

    /// Checks the output read so far: a sequence of HTTP/1.1 responses, the last possibly
    /// incomplete.
    fn check_output(&mut self) {
        loop {
            let rest = &self.transcript[self.parsed..];
            if rest.is_empty() {
                self.transcript.clear();
                self.parsed = 0;
                return;
            }
            assert!(!self.closed, "output after a response that closes the connection: {:?}", lossy(rest));
            if let Some(close) = self.chunked {
                let Some(line) = rest.windows(2).position(|w| w == b"\r\n") else { return };
                let size =
                    core::str::from_utf8(&rest[..line]).ok().and_then(|s| usize::from_str_radix(s, 16).ok());
                let Some(size) = size else { panic!("a bad chunk size line: {:?}", lossy(rest)) };
                let end = line + 2 + size + 2;
                if rest.len() < end {
                    return;
                }
                assert_eq!(&rest[end - 2..end], b"\r\n", "a chunk without its CRLF: {:?}", lossy(rest));
                if size == 0 {
                    self.chunked = None;
                    self.closed = close;
                } else {
                    check_sse_event(&rest[line + 2..end - 2]);
                }
                self.parsed += end;
                continue;
            }
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            let head_len = match resp.parse(rest) {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) => return,
                Err(e) => panic!("not an HTTP/1.1 response ({e}): {:?}", lossy(rest)),
            };
            assert_eq!(resp.version, Some(1));
            let status = resp.code.unwrap_or_default();
            let (mut length, mut chunked, mut close, mut json) = (None, false, false, false);
            for h in resp.headers.iter() {
                let value = core::str::from_utf8(h.value).unwrap_or_else(|_| panic!("{:?}", lossy(rest)));
                match h.name.to_ascii_lowercase().as_str() {
                    "content-length" => {
                        assert!(length.is_none(), "two content-lengths");
                        length = Some(value.parse::<usize>().unwrap_or_else(|e| panic!("{e}: {value}")));
                    }
                    "transfer-encoding" => chunked = value == "chunked",
                    "connection" => close = value == "close",
                    "content-type" => json = value == "application/json",
                    _ => {}
                }
            }
            // The request this response answers, when the harness parsed it.
            let request = self.requests.get(self.answered).copied();
            if status == 100 {
                assert!(length.is_none() && !chunked && !close);
                if let Some((minor, expect)) = request {
                    assert!(expect && minor == 1, "100 Continue for a request that did not ask for it");
                }
                self.parsed += head_len;
                continue;
            }
            assert!((200..600).contains(&status), "status {status}");
            self.answered += 1;
            if chunked {
                assert!(length.is_none() && status == 200, "{:?}", lossy(rest));
                if let Some((minor, _)) = request {
                    assert_eq!(minor, 1, "a chunked (SSE) response to an HTTP/1.0 request");
                }
                self.chunked = Some(close);
                self.parsed += head_len;
                continue;
            }
            let Some(length) = length else { panic!("a response without framing: {:?}", lossy(rest)) };
            if rest.len() < head_len + length {
                return;
            }
            let body = &rest[head_len..head_len + length];
            if json {
                check_json_rpc(body);
            } else {
                assert!(body.is_empty(), "a body without a content type");
            }
            self.parsed += head_len + length;
            self.closed = close;
        }
    }
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(&b[..b.len().min(600)])
}

fn check_json_rpc(msg: &[u8]) {
    let v: serde_json::Value =
        serde_json::from_slice(msg).unwrap_or_else(|e| panic!("{e}: not JSON: {:?}", lossy(msg)));
    assert!(v.is_object() && v["jsonrpc"] == "2.0", "{v}");
}

fn check_sse_event(chunk: &[u8]) {
    let Some(data) = chunk.strip_prefix(b"data: ").and_then(|c| c.strip_suffix(b"\n\n")) else {
        panic!("not an SSE event: {:?}", lossy(chunk));
    };
    assert!(!data.contains(&b'\n'), "a multi-line event: {:?}", lossy(chunk));
    check_json_rpc(data);
}

/// Work the engine handed out and the harness has not answered yet.
#[derive(Debug, Clone, Copy)]
enum EvKind {
    Tool,
    Resource,
    Prompt,
    Completion,
}

struct EngineHarness {
    e: HttpEngine,
    now: Instant,
    peers: [Option<Peer>; PEERS],
    max_connections: usize,
    /// Connections closed earlier (their ids must be inert).
    stale: Vec<ConnId>,
    /// `Authorize` (false) and `AuthorizeBody` (true) events not yet answered.
    asks: Vec<(ConnId, bool)>,
    tickets: Vec<(Ticket, EvKind)>,
    progress: f64,
}

/// Reads a 16-bit little-endian length and that many bytes (fewer at the end).
fn take_bytes(ops: &[u8]) -> (&[u8], &[u8]) {
    let (len, rest) = match ops {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        [a] => (usize::from(*a), &[][..]),
        [] => (0, ops),
    };
    rest.split_at(len.min(rest.len()))
}

fn take_byte(ops: &[u8]) -> (u8, &[u8]) {
    ops.split_first().map_or((0, ops), |(b, r)| (*b, r))
}

/// `HttpEngine` end to end, through up to three connections.
///
/// The first byte is the configuration: host or open authorization, body authorization,
/// loopback, an origin list, 1-4 ticket slots, 2 or 3 connections at most. Then ops, each
/// an op byte (low 3 bits: the op; the rest: connection or choice) and its arguments:
/// - 0-2: feed a 16-bit-length-prefixed slice to a connection (opened if need be); bytes
///   the engine does not take wait and are offered again after every op;
/// - 3: the peer closes a connection;
/// - 4: time passes (a byte × 100 ms), then `handle_timeout`;
/// - 5: answer an outstanding ticket (a byte picks it; the op how: tool, resource or
///   prompt output, errors, progress, a tool error);
/// - 6: answer an outstanding `Authorize`/`AuthorizeBody` (a byte picks it; the op the
///   verdict);
/// - 7: misc: pause/resume reading a connection's output, probe the ids of closed
///   connections, open a connection, serve a request with `handle_request` (method byte,
///   length-prefixed body; the MCP headers are mirrored from the body when it is JSON).
///
/// After every op the harness polls every event (keeping tickets and asks for later),
/// reads every connection's output, and closes the connections `wants_close` names.
/// Asserts: no panic; every connection's output is a sequence of HTTP/1.1 responses
/// (JSON bodies are JSON-RPC objects, chunked bodies SSE events carrying them), nothing
/// follows a `connection: close` response, which is exactly when `wants_close` turns true;
/// matched with the request heads a codec of the harness's own parses from the bytes the
/// engine took, `100 Continue` answers only a request that asked for it and a chunked (SSE)
/// response only an HTTP/1.1 request;
/// `connections()` matches the harness's count; `in_flight()` matches the tickets the
/// harness holds; after `handle_timeout(now)`, `poll_timeout()` is not in the past; closed
/// ids are inert; once every connection is closed, no ticket remains.
pub fn http_engine(data: &[u8]) {
    if data.len() > MAX_HTTP_INPUT {
        return;
    }
    let Some((&cfg, mut ops)) = data.split_first() else { return };
    let mut h = EngineHarness::new(cfg);
    while let Some((&op, rest)) = ops.split_first() {
        ops = rest;
        let arg = usize::from(op >> 3);
        let k = arg % PEERS;
        match op & 7 {
            0..=2 => {
                let (bytes, rest) = take_bytes(ops);
                ops = rest;
                h.feed(k, bytes);
            }
            3 => h.close(k),
            4 => {
                let (d, rest) = take_byte(ops);
                ops = rest;
                h.now = h.now + Duration::from_millis(u64::from(d) * 100);
                h.e.handle_timeout(h.now);
                h.check_timeout();
            }
            5 => {
                let (sel, rest) = take_byte(ops);
                ops = rest;
                h.answer(usize::from(sel), arg);
            }
            6 => {
                let (sel, rest) = take_byte(ops);
                ops = rest;
                h.authorize(usize::from(sel), arg);
            }
            _ => match (arg / PEERS) % 4 {
                0 => {
                    if let Some(p) = h.peers[k].as_mut() {
                        p.paused = !p.paused;
                    }
                }
                1 => h.probe_stale(),
                2 => {
                    h.open(k);
                }
                _ => {
                    let (method, rest) = take_byte(ops);
                    let (body, rest) = take_bytes(rest);
                    ops = rest;
                    h.request(k, method, body);
                }
            },
        }
        h.settle();
    }
    h.finish();
}

impl EngineHarness {
    fn new(cfg: u8) -> Self {
        let origins = if cfg & 8 != 0 {
            AllowedOrigins::List(vec!["http://localhost:3000".into()])
        } else {
            AllowedOrigins::Any
        };
        let authorization = if cfg & 1 != 0 { Authorization::Host } else { Authorization::Everyone };
        let max_connections = if cfg & 0x40 != 0 { 2 } else { 3 };
        let mut http = HttpConfig::new(origins, authorization);
        http.authorize_body(cfg & 2 != 0)
            .loopback(cfg & 4 != 0)
            .max_body(ENGINE_LIMITS.max_body_bytes)
            .max_head(ENGINE_LIMITS.max_head_bytes)
            .max_connections(max_connections);
        let mut config = Config::new("fuzz", "0");
        config.max_frame_len(4096).max_in_flight(usize::from((cfg >> 4) & 3) + 1).max_depth(16);
        Self {
            e: HttpEngine::new(config, http, http_catalog()),
            now: Instant::ZERO,
            peers: [None, None, None],
            max_connections,
            stale: Vec::new(),
            asks: Vec::new(),
            tickets: Vec::new(),
            progress: 0.0,
        }
    }

    fn count(&self) -> usize {
        self.peers.iter().flatten().count()
    }

    /// Opens connection `k` if it is not open; false if the engine refuses.
    fn open(&mut self, k: usize) -> bool {
        if self.peers[k].is_some() {
            return true;
        }
        match self.e.open(self.now, None) {
            Ok(id) => {
                assert!(self.count() < self.max_connections);
                assert!(!self.stale.contains(&id), "a new connection got a closed one's id");
                self.peers[k] = Some(Peer::new(id));
                true
            }
            Err(OpenError::TooManyConnections) => {
                assert_eq!(self.count(), self.max_connections);
                false
            }
        }
    }

    fn feed(&mut self, k: usize, bytes: &[u8]) {
        if bytes.is_empty() || !self.open(k) {
            return;
        }
        if let Some(p) = self.peers[k].as_mut() {
            p.backlog.extend_from_slice(bytes);
        }
    }

    /// The peer of connection `k` goes away.
    fn close(&mut self, k: usize) {
        let Some(p) = self.peers[k].take() else { return };
        self.e.handle_closed(self.now, p.id);
        self.stale.push(p.id);
    }

    /// A request served through `handle_request` on connection `k` (if `k` is free).
    fn request(&mut self, k: usize, method: u8, body: &[u8]) {
        if self.peers[k].is_some() {
            return;
        }
        let method = ["POST", "GET", "DELETE", "post"][usize::from(method & 3)];
        let path = if method == "POST" { "/mcp" } else { "/mcp?x" };
        let mut headers: Vec<(String, Vec<u8>)> = vec![
            ("Host".into(), b"localhost:3000".to_vec()),
            ("Content-Type".into(), b"application/json".to_vec()),
            ("Accept".into(), b"application/json, text/event-stream".to_vec()),
        ];
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
            let meta = &v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"];
            let mut mirror = |name: &str, value: &serde_json::Value| match value {
                serde_json::Value::String(s) => headers.push((name.into(), s.clone().into_bytes())),
                serde_json::Value::Number(_) | serde_json::Value::Bool(_) => {
                    headers.push((name.into(), value.to_string().into_bytes()))
                }
                _ => {}
            };
            mirror("MCP-Protocol-Version", meta);
            mirror("Mcp-Method", &v["method"]);
            mirror("Mcp-Name", &v["params"]["name"]);
            mirror("Mcp-Name", &v["params"]["uri"]);
            let args = &v["params"]["arguments"];
            mirror("Mcp-Param-Region", &args["region"]);
            mirror("Mcp-Param-N", &args["n"]);
            mirror("Mcp-Param-Flag", &args["flag"]);
        }
        let headers: Vec<(&str, &[u8])> = headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())).collect();
        match self.e.handle_request(self.now, None, method, path, &headers, body) {
            Ok(id) => {
                assert!(self.count() < self.max_connections);
                self.peers[k] = Some(Peer::new(id));
            }
            Err(_) => assert_eq!(self.count(), self.max_connections),
        }
    }

    fn answer(&mut self, sel: usize, how: usize) {
        if self.tickets.is_empty() {
            return;
        }
        let (t, kind) = self.tickets.remove(sel % self.tickets.len());
        let text = [Content::text("ok")];
        let messages = [PromptMessage::user(Content::text("x"))];
        let r = match (how % 8, kind) {
            (0 | 1, EvKind::Tool) => self.e.answer_tool(t, &ToolOutput::new(&text)),
            (0 | 1, EvKind::Resource) => {
                self.e.answer_resource(t, &[ResourceContents::text("x://r", Some("text/plain"), "x")])
            }
            (0 | 1, EvKind::Prompt) => self.e.answer_prompt(t, &PromptOutput::new(&messages)),
            (0 | 1, EvKind::Completion) => self.e.answer_completion(t, &["a", "b\n"], Some(2), true),
            (2, _) => self.e.answer_error(t, HostError::Internal("boom")),
            (3, _) => self.e.answer_error(t, HostError::NotFound),
            (4, _) => self.e.answer_error(t, HostError::InvalidParams("bad\r\n\"x\"")),
            (5 | 6, _) => {
                // A progress report: the response becomes a stream (if the request asked
                // for progress); the ticket stays outstanding.
                self.progress += 1.0;
                let _ = self.e.notify_progress(t, self.progress, Some(1e6), Some("m\n"));
                self.tickets.push((t, kind));
                return;
            }
            // Possibly the wrong kind of answer: refused, the ticket stays.
            _ => self.e.answer_tool(t, &ToolOutput::error(&text)),
        };
        match r {
            Ok(()) => {}
            Err(AnswerError::WrongKind) => self.tickets.push((t, kind)),
            Err(e) => panic!("answering a live ticket: {e}"),
        }
    }

    fn authorize(&mut self, sel: usize, how: usize) {
        if self.asks.is_empty() {
            return;
        }
        let (id, body) = self.asks.remove(sel % self.asks.len());
        let verdict = match how % 8 {
            0..=4 => Verdict::Allow,
            5 => Verdict::Unauthenticated,
            6 => Verdict::Forbidden,
            _ => Verdict::Failed,
        };
        if body {
            self.e.authorize_body(self.now, id, verdict);
        } else {
            self.e.authorize(self.now, id, verdict);
        }
    }

    /// Closed connections' ids do nothing.
    fn probe_stale(&mut self) {
        let open = self.e.connections();
        for &id in self.stale.iter().rev().take(4) {
            assert_eq!(self.e.handle_input(self.now, id, b"POST /mcp HTTP/1.1\r\n"), 0);
            assert!(self.e.pending_output(id).is_empty() && !self.e.wants_close(id));
            assert!(self.e.response(id).is_none());
            self.e.consume_output(id, 10);
            self.e.authorize(self.now, id, Verdict::Allow);
            self.e.authorize_body(self.now, id, Verdict::Allow);
            self.e.handle_closed(self.now, id);
        }
        assert_eq!(self.e.connections(), open);
    }

    /// After `handle_timeout(now)`, the next timeout is in the future: an adapter that
    /// sleeps until `poll_timeout()` would otherwise spin.
    fn check_timeout(&self) {
        if let Some(t) = self.e.poll_timeout() {
            assert!(t > self.now, "poll_timeout() is {t:?} after handle_timeout({:?})", self.now);
        }
    }

    /// Takes every event (keeping the work for later).
    fn poll_events(&mut self) {
        while let Some(ev) = self.e.poll_event() {
            match ev {
                HttpEvent::Authorize(a) => {
                    assert!(
                        self.peers.iter().flatten().any(|p| p.id == a.conn),
                        "an ask for a closed connection"
                    );
                    assert!(!self.asks.contains(&(a.conn, false)), "asked twice");
                    self.asks.push((a.conn, false));
                }
                HttpEvent::AuthorizeBody(a) => {
                    assert!(
                        self.peers.iter().flatten().any(|p| p.id == a.conn),
                        "an ask for a closed connection"
                    );
                    assert!(a.body.len() <= 4096);
                    self.asks.push((a.conn, true));
                }
                HttpEvent::Mcp(Event::Cancelled(t)) => {
                    let before = self.tickets.len();
                    self.tickets.retain(|(x, _)| *x != t);
                    assert_eq!(self.tickets.len() + 1, before, "a cancellation of an unknown ticket");
                }
                HttpEvent::Mcp(ev) => {
                    let kind = match ev {
                        Event::CallTool(_) => EvKind::Tool,
                        Event::ReadResource(_) => EvKind::Resource,
                        Event::GetPrompt(_) => EvKind::Prompt,
                        Event::Complete(_) => EvKind::Completion,
                        Event::Cancelled(_) => unreachable!("matched above"),
                    };
                    self.tickets.push((ev.ticket(), kind));
                }
            }
        }
    }

    /// Runs the adapter's loop until nothing moves: events, input backlogs, output, closes.
    fn settle(&mut self) {
        for round in 0.. {
            assert!(round < 10_000, "the engine never settles");
            let mut moved = false;
            self.poll_events();
            for k in 0..PEERS {
                let Some(p) = self.peers[k].as_mut() else { continue };
                if !p.backlog.is_empty() {
                    let n = self.e.handle_input(self.now, p.id, &p.backlog);
                    assert!(n <= p.backlog.len());
                    let taken: Vec<u8> = p.backlog.drain(..n).collect();
                    p.shadow(&taken);
                    moved |= n > 0;
                    self.poll_events();
                }
            }
            for k in 0..PEERS {
                let Some(p) = self.peers[k].as_mut() else { continue };
                if p.paused {
                    continue;
                }
                let _ = self.e.response(p.id);
                let out = self.e.pending_output(p.id);
                if !out.is_empty() {
                    p.transcript.extend_from_slice(out);
                    let n = out.len();
                    self.e.consume_output(p.id, n);
                    moved = true;
                    p.check_output();
                }
                let wants_close = self.e.wants_close(p.id);
                assert_eq!(wants_close, p.closed, "wants_close() and the last response disagree");
                if wants_close {
                    assert!(p.transcript.is_empty() && p.chunked.is_none());
                    self.close(k);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        assert_eq!(self.e.connections(), self.count(), "the engine's connection count");
        assert_eq!(self.e.in_flight(), self.tickets.len(), "tickets in flight");
        assert!(self.e.in_flight() <= self.e.config().in_flight_limit());
    }

    /// Every peer reads what is left, then goes away: no work may remain.
    fn finish(&mut self) {
        for p in self.peers.iter_mut().flatten() {
            p.paused = false;
        }
        self.settle();
        for k in 0..PEERS {
            self.close(k);
        }
        self.poll_events();
        assert!(self.asks.iter().all(|(id, _)| self.stale.contains(id)));
        assert_eq!(self.e.connections(), 0);
        assert_eq!(self.e.in_flight(), 0, "tickets outlive their connections");
        assert!(self.tickets.is_empty(), "{} tickets were never cancelled", self.tickets.len());
        assert_eq!(self.e.poll_timeout(), None);
    }
}
