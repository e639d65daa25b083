//! Fuzzing harnesses (compiled only with `--cfg fuzzing`, which cargo-fuzz sets).
//! The targets in `fuzz/` are one-line calls into these functions.

use core::fmt::Write as _;
use core::time::Duration;
use std::collections::{HashMap, VecDeque};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::http::{
    AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent, OpenError, Verdict,
};
use crate::http_headers::{self, BodyValue, Expected, MAX_DECODED_LEN, MismatchReason, ParamCheck};
use crate::http1::{self, BodyKind, HttpError, Input, Limits};
use crate::{
    AnswerError, Catalog, Config, Content, Engine, Event, HeaderParamKind, HostError, Instant, LogLevel,
    Prompt, PromptArgument, PromptMessage, PromptOutput, Resource, ResourceContents, ResourceTemplate,
    Ticket, Tool, ToolOutput,
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

/// The engine writes strings and content blocks itself; they must be `serde_json`'s bytes.
fn writers_match_serde(text: &str) {
    let mut ours = Vec::new();
    crate::json::write_str(&mut ours, text);
    assert_eq!(ours, serde_json::to_vec(text).unwrap_or_default(), "string {text:?}");
    let half = text.char_indices().nth(text.chars().count() / 2).map_or(text.len(), |(i, _)| i);
    let (a, b) = text.split_at(half);
    for block in [
        Content::text(text),
        Content::image(a.as_bytes(), b),
        Content::ResourceLink { uri: a, name: b, description: Some(text), mime_type: None },
        Content::embedded(ResourceContents::text(a, Some(b), text)),
        Content::embedded(ResourceContents::blob_base64(b, None, a)),
    ] {
        let mut ours = Vec::new();
        block.write_json(&mut ours);
        assert_eq!(ours, serde_json::to_vec(&block).unwrap_or_default(), "{block:?}");
    }
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
        let v: Value = serde_json::from_slice(line).expect("every output line is JSON");
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
    let v: Value = serde_json::from_slice(msg).unwrap_or_else(|e| panic!("{e}: not JSON: {:?}", lossy(msg)));
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        if let Ok(v) = serde_json::from_slice::<Value>(body) {
            let meta = &v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"];
            let mut mirror = |name: &str, value: &Value| match value {
                Value::String(s) => headers.push((name.into(), s.clone().into_bytes())),
                Value::Number(_) | Value::Bool(_) => {
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

// ---------------------------------------------------------------------------------------
// Structured input: choices read from fuzz bytes.
// ---------------------------------------------------------------------------------------

/// Reads choices from fuzz bytes, in the manner of `arbitrary::Unstructured` (the harnesses
/// live in the engine crate, which does not depend on `arbitrary`). Every read succeeds:
/// past the end it yields zeros, so every input decodes, a short one to the simplest
/// choices.
struct Bytes<'a> {
    data: &'a [u8],
}

/// Characters that matter to JSON, URIs and templates; `text` draws mostly from these.
const TEXT_CHARS: &[char] = &[
    'a', 'b', 'x', '0', '1', '9', ' ', '/', '-', '_', '.', ':', '?', '#', '%', '+', '=', '&', '"', '\\',
    '\n', '\r', '\t', '\u{0}', '\u{1f}', '\u{7f}', 'é', '☃', '😀', '\u{2028}', '\u{feff}', '{', '}', '[',
    ']', ',', 'A', 'Z', '\u{80}', '\u{ffff}',
];

impl<'a> Bytes<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |v, i| v | u64::from(self.u8()) << (8 * i))
    }

    /// A number below `n` (0 when `n` is 0 or 1).
    fn below(&mut self, n: usize) -> usize {
        match n {
            0 | 1 => 0,
            2..=256 => usize::from(self.u8()) % n,
            _ => usize::from(self.u16()) % n,
        }
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Up to `max` bytes: a length, then the bytes.
    fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = self.below(max.saturating_add(1)).min(self.data.len());
        let (taken, rest) = self.data.split_at(n);
        self.data = rest;
        taken
    }

    /// Up to `max` characters, mostly from [`TEXT_CHARS`] and printable ASCII, sometimes
    /// any scalar value; never `~` (the op_sequence harness reserves it for its markers).
    fn text(&mut self, max: usize) -> String {
        let n = self.below(max.saturating_add(1));
        let mut s = String::new();
        for _ in 0..n {
            if self.is_empty() {
                break;
            }
            let c = self.u8();
            let ch = match usize::from(c) {
                i if i < TEXT_CHARS.len() => TEXT_CHARS[i],
                i if i < 0xf0 => char::from(b' ' + (c % 95)),
                _ => char::from_u32(u32::from(self.u16())).unwrap_or('\u{fffd}'),
            };
            s.push(if ch == '~' { '-' } else { ch });
        }
        s
    }
}

/// Writes `s` as a JSON string, escaped in one of four ways: as `serde_json` does; every
/// character but ASCII alphanumerics as `\uXXXX` (UTF-16, surrogate pairs included);
/// short escapes where JSON has them and `\/`; every character as `\uXXXX`, upper case.
fn write_styled(out: &mut Vec<u8>, s: &str, style: u8) {
    fn unicode(out: &mut Vec<u8>, c: char, upper: bool) {
        let mut units = [0u16; 2];
        for u in c.encode_utf16(&mut units) {
            let text = if upper { format!("\\u{u:04X}") } else { format!("\\u{u:04x}") };
            out.extend_from_slice(text.as_bytes());
        }
    }
    match style & 3 {
        0 => crate::json::write_str(out, s),
        1 => {
            out.push(b'"');
            for c in s.chars() {
                if c.is_ascii_alphanumeric() {
                    out.push(c as u8);
                } else {
                    unicode(out, c, false);
                }
            }
            out.push(b'"');
        }
        2 => {
            out.push(b'"');
            for c in s.chars() {
                match c {
                    '/' => out.extend_from_slice(b"\\/"),
                    '"' => out.extend_from_slice(b"\\\""),
                    '\\' => out.extend_from_slice(b"\\\\"),
                    '\u{8}' => out.extend_from_slice(b"\\b"),
                    '\u{c}' => out.extend_from_slice(b"\\f"),
                    '\n' => out.extend_from_slice(b"\\n"),
                    '\r' => out.extend_from_slice(b"\\r"),
                    '\t' => out.extend_from_slice(b"\\t"),
                    c if c < ' ' => unicode(out, c, false),
                    c => {
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
            }
            out.push(b'"');
        }
        _ => {
            out.push(b'"');
            for c in s.chars() {
                unicode(out, c, true);
            }
            out.push(b'"');
        }
    }
}

/// Renders JSON text from fuzz choices and records what the engine's parser will make of
/// it: how deep it nests, and whether it is broken (not valid UTF-8 JSON).
struct Json<'b, 'a> {
    b: &'b mut Bytes<'a>,
    /// Whitespace between tokens (bits 0-1) and string escaping (bits 2-3).
    style: u8,
    /// Deepest container written (the top-level value is at depth 1).
    depth: usize,
    /// Containers are written only up to this depth.
    max_nest: usize,
    /// Something that makes the text invalid JSON was written (a lone surrogate, a raw
    /// control character, invalid UTF-8, a bad escape).
    broken: bool,
    /// Prefer well-formed requests (see [`Json::choose`]).
    bias: bool,
}

/// Object keys the engine looks for, and a few it does not.
const KEYS: &[&str] = &[
    "name",
    "uri",
    "arguments",
    "_meta",
    "cursor",
    "text",
    "a",
    "b",
    "ref",
    "argument",
    "value",
    "type",
    "level",
    "requestId",
    "progressToken",
    "protocolVersion",
    "capabilities",
    "id",
    "method",
    "jsonrpc",
    "params",
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/logLevel",
    "sampling",
    "n",
    "context",
    "",
];

impl Json<'_, '_> {
    /// A choice below `n`: with `bias`, `good` most of the time (so that most generated
    /// requests are well-formed and reach the host), else any.
    fn choose(&mut self, n: usize, good: usize) -> usize {
        if !self.bias {
            return self.b.below(n);
        }
        match self.b.u8() {
            v if v < 208 => good,
            v => usize::from(v) % n,
        }
    }

    fn ws(&self, out: &mut Vec<u8>) {
        match self.style & 3 {
            0 => {}
            1 => out.push(b' '),
            2 => out.extend_from_slice(b"\t "),
            _ => out.extend_from_slice(b" \r\t"),
        }
    }

    fn string(&self, out: &mut Vec<u8>, s: &str) {
        write_styled(out, s, self.style >> 2);
    }

    /// A string that is not valid JSON.
    fn broken_string(&mut self, out: &mut Vec<u8>) {
        const BROKEN: [&[u8]; 8] = [
            b"\"\\ud800\"",
            b"\"\\udc00x\"",
            b"\"a\x01b\"",
            b"\"a\xffb\"",
            b"\"\xc3\"",
            b"\"\\x\"",
            b"\"\\u12\"",
            b"\"\\ud83d\\u0041\"",
        ];
        out.extend_from_slice(self.b.pick(&BROKEN));
        self.broken = true;
    }

    fn key(&mut self) -> String {
        if self.b.u8() < 200 { self.b.pick(KEYS).to_owned() } else { self.b.text(8) }
    }

    /// A random value at nesting `depth` (containers count from 1 at the top level).
    fn value(&mut self, out: &mut Vec<u8>, depth: usize) {
        let container = depth <= self.max_nest;
        match self.b.below(24) {
            0 | 1 => out.extend_from_slice(b"null"),
            2 => out.extend_from_slice(b"true"),
            3 => out.extend_from_slice(b"false"),
            4 | 5 => out.extend_from_slice(i64::from(self.b.u8() as i8).to_string().as_bytes()),
            6 => out.extend_from_slice((self.b.u64() as i64).to_string().as_bytes()),
            7 => out.extend_from_slice(self.b.u64().to_string().as_bytes()),
            8 => {
                const FLOATS: [&str; 10] = [
                    "1.5",
                    "-0",
                    "1e3",
                    "1E-7",
                    "-2.5e+10",
                    "0.1",
                    "1e400",
                    "-0.0",
                    "1.7976931348623157e308",
                    "5e-324",
                ];
                let f = self.b.pick(&FLOATS);
                // Out of the range of an f64: the parser refuses it (JSON lets it).
                self.broken |= f == "1e400";
                out.extend_from_slice(f.as_bytes());
            }
            9..=13 => {
                let s = self.b.text(24);
                self.string(out, &s);
            }
            14 if self.b.u8() < 16 => self.broken_string(out),
            15..=17 if container => {
                self.depth = self.depth.max(depth);
                out.push(b'[');
                for i in 0..self.b.below(4) {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.ws(out);
                    self.value(out, depth + 1);
                }
                self.ws(out);
                out.push(b']');
            }
            18..=21 if container => {
                self.depth = self.depth.max(depth);
                let mut members = Vec::new();
                for _ in 0..self.b.below(5) {
                    let k = self.key();
                    let mut v = Vec::new();
                    self.value(&mut v, depth + 1);
                    members.push((k, v));
                }
                self.object(out, &members);
            }
            _ => out.extend_from_slice(b"0"),
        }
    }

    /// A value that is not a container.
    fn scalar(&mut self, out: &mut Vec<u8>) {
        match self.b.below(4) {
            0 => out.extend_from_slice(b"null"),
            1 => out.extend_from_slice(b"-12.5e3"),
            2 => {
                let s = self.b.text(8);
                self.string(out, &s);
            }
            _ => out.extend_from_slice(self.b.u64().to_string().as_bytes()),
        }
    }

    /// Writes an object of already rendered members (the caller records its depth).
    fn object(&mut self, out: &mut Vec<u8>, members: &[(String, Vec<u8>)]) {
        out.push(b'{');
        for (i, (k, v)) in members.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.ws(out);
            self.string(out, k);
            self.ws(out);
            out.push(b':');
            self.ws(out);
            out.extend_from_slice(v);
        }
        self.ws(out);
        out.push(b'}');
    }

    /// An object at `depth` from members, recording the depth.
    fn object_at(&mut self, depth: usize, members: &[(String, Vec<u8>)]) -> Vec<u8> {
        self.depth = self.depth.max(depth);
        let mut out = Vec::new();
        self.object(&mut out, members);
        out
    }

    fn str_value(&self, s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        self.string(&mut out, s);
        out
    }

    /// A value that is neither an object nor a string.
    fn non_object(&mut self, depth: usize) -> Vec<u8> {
        self.depth = self.depth.max(depth);
        let choices: [&[u8]; 6] = [b"[]", b"[1,2]", b"7", b"null", b"true", b"-1.5"];
        self.b.pick(&choices).to_vec()
    }

    /// A value that is neither a string nor an integer (an invalid id).
    fn invalid_id(&mut self, depth: usize) -> Vec<u8> {
        self.depth = self.depth.max(depth);
        let choices: [&[u8]; 7] = [b"[]", b"[1,2]", b"{}", b"null", b"true", b"-1.5", b"1e0"];
        self.b.pick(&choices).to_vec()
    }

    /// `v` (an id or a token) as JSON, strings escaped in the writer's style.
    fn id_value(&self, v: &Value) -> Vec<u8> {
        match v {
            Value::String(s) => self.str_value(s),
            other => other.to_string().into_bytes(),
        }
    }
}

/// The methods the engine knows, and a few it does not.
const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "resources/subscribe",
    "sampling/createMessage",
    "tasks/get",
    "",
];

/// The methods whose requests reach the host.
const TICKETED: &[&str] = &["tools/call", "resources/read", "prompts/get", "completion/complete"];

const REVISIONS: &[&str] = &["2026-07-28", "2025-11-25", "2025-06-18", "2024-11-05"];

/// What the engine must write for one frame.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// Nothing: a notification, or a response (this server sends no requests).
    Nothing,
    /// One error without an id: not JSON, not an object, a bad id, too deep, too long.
    Anonymous,
    /// Exactly one response (result or error) carrying this id.
    Reply(Value),
}

/// One generated frame (without its newline) and what the engine must make of it.
struct Frame {
    bytes: Vec<u8>,
    expect: Expect,
    /// The method (first occurrence), when it is a string.
    method: Option<String>,
    /// The request's `_meta.progressToken`, when the engine can keep it.
    token: Option<Value>,
}

/// Which id a generated message carries.
#[derive(Debug, Clone)]
enum IdPlan {
    /// Any: absent, valid of every type, invalid.
    Random,
    /// This one (a valid id).
    Use(Value),
    /// None: a notification.
    Absent,
    /// One of an invalid type.
    Invalid,
}

/// Settings of the message generator.
struct MsgCfg<'c> {
    depth_limit: usize,
    frame_limit: usize,
    id: IdPlan,
    /// Embedded where the host sees it (tool and prompt arguments, the uri, the completion
    /// value) so that the harness can tell which request an event is for.
    marker: Option<&'c str>,
    /// The progress token to send (`Random`: any).
    token: Option<Value>,
    /// Prefer the methods that reach the host, and well-formed requests.
    ticketed: bool,
}

/// The meaning of one top-level member, for the model.
enum Sem {
    /// `id`: the id when it is valid (a string or an integer).
    Id(Option<Value>),
    /// `jsonrpc`: whether it is the string "2.0".
    Jsonrpc(bool),
    /// `method`: the method when it is a string.
    Method(Option<String>),
    /// `result` or `error`.
    Response,
    Other,
}

/// A generated JSON-RPC message (or, rarely, a batch or a scalar), and what the engine
/// must answer: the model follows JSON-RPC 2.0 as the engine applies it (the first of
/// repeated member names counts; a response is never answered; a notification, even a
/// malformed one, is never answered; an id that is neither a string nor an integer makes
/// the error anonymous).
fn message(b: &mut Bytes<'_>, cfg: &MsgCfg<'_>) -> Frame {
    let style = b.u8();
    let mut j = Json { b, style, depth: 0, max_nest: cfg.depth_limit + 2, broken: false, bias: cfg.ticketed };
    let shape = j.choose(32, 2);
    if shape < 2 {
        let mut out = Vec::new();
        if shape == 0 {
            // A batch.
            j.depth = 1;
            out.push(b'[');
            for i in 0..j.b.below(3) {
                if i > 0 {
                    out.push(b',');
                }
                j.value(&mut out, 2);
            }
            out.push(b']');
        } else {
            j.scalar(&mut out);
        }
        return Frame { bytes: out, expect: Expect::Anonymous, method: None, token: None };
    }
    let mut members: Vec<(String, Vec<u8>, Sem)> = Vec::new();
    // The id.
    let id = match &cfg.id {
        IdPlan::Use(v) => Some((j.id_value(v), Some(v.clone()))),
        IdPlan::Absent => None,
        IdPlan::Invalid => Some((j.invalid_id(2), None)),
        IdPlan::Random => random_id(&mut j),
    };
    if let Some((text, valid)) = id {
        members.push(("id".into(), text, Sem::Id(valid)));
    }
    // The version.
    match j.choose(16, 3) {
        0 => {}
        1 => {
            let wrong = j.b.pick(&["1.0", "2.00", "", "2.0 ", "2"]);
            members.push(("jsonrpc".into(), j.str_value(wrong), Sem::Jsonrpc(false)));
        }
        2 => members.push(("jsonrpc".into(), b"2.0".to_vec(), Sem::Jsonrpc(false))),
        _ => members.push(("jsonrpc".into(), j.str_value("2.0"), Sem::Jsonrpc(true))),
    }
    // The method.
    let method = match j.choose(16, 3) {
        0 => None,
        1 => {
            let v = j.non_object(2);
            members.push(("method".into(), v, Sem::Method(None)));
            None
        }
        2 => Some(j.b.text(16)),
        n if cfg.ticketed && n < 10 => Some(j.b.pick(TICKETED).to_owned()),
        _ => Some(j.b.pick(METHODS).to_owned()),
    };
    let mut token = None;
    if let Some(m) = &method {
        members.push(("method".into(), j.str_value(m), Sem::Method(Some(m.clone()))));
        // The params.
        match j.choose(10, 2) {
            0 => {}
            1 => {
                let v = j.non_object(2);
                members.push(("params".into(), v, Sem::Other));
            }
            _ => {
                let (p, t) = params(&mut j, m, cfg);
                token = t;
                members.push(("params".into(), p, Sem::Other));
            }
        }
    }
    // Extra members: misplaced `_meta`, response members, repeated names, noise.
    for _ in 0..j.choose(3, 0) {
        match j.b.below(8) {
            0 => {
                let v = j.object_at(2, &[]);
                members.push(("_meta".into(), v, Sem::Other));
            }
            1 => members.push(("result".into(), b"{}".to_vec(), Sem::Response)),
            2 => members.push(("error".into(), b"{\"code\":1,\"message\":\"m\"}".to_vec(), Sem::Response)),
            3 => {
                let v = j.invalid_id(2);
                members.push(("id".into(), v, Sem::Id(None)));
            }
            4 => members.push(("jsonrpc".into(), j.str_value("1.0"), Sem::Jsonrpc(false))),
            5 => members.push(("method".into(), j.str_value("ping"), Sem::Method(Some("ping".into())))),
            _ => {
                let k = j.key();
                if !matches!(k.as_str(), "id" | "jsonrpc" | "method" | "result" | "error" | "params") {
                    let mut v = Vec::new();
                    j.value(&mut v, 2);
                    members.push((k, v, Sem::Other));
                }
            }
        }
    }
    // Member order.
    if j.b.u8() & 1 == 1 {
        for i in 0..members.len() {
            let k = i + j.b.below(members.len() - i);
            members.swap(i, k);
        }
    }
    let rendered: Vec<(String, Vec<u8>)> = members.iter().map(|(k, v, _)| (k.clone(), v.clone())).collect();
    let bytes = j.object_at(1, &rendered);
    let (depth, broken) = (j.depth, j.broken);

    // The model.
    let first_id =
        members.iter().find_map(|(_, _, s)| if let Sem::Id(v) = s { Some(v.clone()) } else { None });
    let jsonrpc_ok =
        members.iter().find_map(|(_, _, s)| if let Sem::Jsonrpc(ok) = s { Some(*ok) } else { None });
    let first_method =
        members.iter().find_map(|(_, _, s)| if let Sem::Method(m) = s { Some(m.clone()) } else { None });
    let response = members.iter().any(|(_, _, s)| matches!(s, Sem::Response));
    let expect = if broken || depth > cfg.depth_limit || bytes.len() > cfg.frame_limit {
        Expect::Anonymous
    } else if first_method.is_none() && response {
        Expect::Nothing
    } else {
        match first_id {
            Some(None) => Expect::Anonymous,
            id => {
                let id = id.flatten();
                let reply = id.clone().map_or(Expect::Anonymous, Expect::Reply);
                if jsonrpc_ok != Some(true) {
                    if id.is_none() && first_method.is_some() { Expect::Nothing } else { reply }
                } else {
                    match (&first_method, id) {
                        (None, _) => reply,
                        (Some(_), None) => Expect::Nothing,
                        (Some(_), Some(_)) => reply,
                    }
                }
            }
        }
    };
    let method = first_method.flatten();
    Frame { bytes, expect, method, token }
}

/// A random id: absent, valid (integers, strings, long strings), invalid, broken.
fn random_id(j: &mut Json<'_, '_>) -> Option<(Vec<u8>, Option<Value>)> {
    Some(match j.b.below(16) {
        0..=2 => return None,
        3..=5 => {
            let n = i64::from(j.b.u8() as i8);
            (n.to_string().into_bytes(), Some(Value::from(n)))
        }
        6 => {
            let n = j.b.u64() as i64;
            (n.to_string().into_bytes(), Some(Value::from(n)))
        }
        7 => {
            let n = j.b.u64() | 1 << 63;
            (n.to_string().into_bytes(), Some(Value::from(n)))
        }
        8..=10 => {
            let s = j.b.text(12);
            (j.str_value(&s), Some(Value::String(s)))
        }
        11 => {
            let s = format!("{}{}", "l".repeat(120), j.b.text(40));
            (j.str_value(&s), Some(Value::String(s)))
        }
        12 => (b"-0".to_vec(), Some(Value::from(0))),
        13 => {
            let text = j.b.pick(&["1.0", "1e2", "-1.5", "18446744073709551616", "-9223372036854775809"]);
            (text.as_bytes().to_vec(), None)
        }
        14 => (j.invalid_id(2), None),
        _ => {
            let mut out = Vec::new();
            j.broken_string(&mut out);
            (out, None)
        }
    })
}

/// `_meta`: the revision, the client capabilities, a log level, a progress token.
fn meta(j: &mut Json<'_, '_>, cfg: &MsgCfg<'_>, depth: usize) -> Option<(Vec<u8>, Option<Value>)> {
    match j.choose(10, 2) {
        0 => return None,
        1 => return Some((j.non_object(depth), None)),
        _ => {}
    }
    let mut m: Vec<(String, Vec<u8>)> = Vec::new();
    match j.choose(8, 7) {
        0 => {}
        1 => m.push(("io.modelcontextprotocol/protocolVersion".into(), b"2026".to_vec())),
        2 => {
            let t = j.b.text(12);
            m.push(("io.modelcontextprotocol/protocolVersion".into(), j.str_value(&t)));
        }
        n => {
            let r = REVISIONS[[3, 2, 1, 0, 0][n - 3]];
            m.push(("io.modelcontextprotocol/protocolVersion".into(), j.str_value(r)));
        }
    }
    match j.choose(6, 2) {
        0 => {}
        1 => m.push(("io.modelcontextprotocol/clientCapabilities".into(), j.str_value("yes"))),
        2 | 3 => {
            let caps = j.object_at(depth + 1, &[]);
            m.push(("io.modelcontextprotocol/clientCapabilities".into(), caps));
        }
        _ => {
            let sampling = j.object_at(depth + 2, &[]);
            let caps = j.object_at(depth + 1, &[("sampling".into(), sampling)]);
            m.push(("io.modelcontextprotocol/clientCapabilities".into(), caps));
        }
    }
    match j.b.below(8) {
        0..=3 => {}
        4 | 5 => {
            let level = j.b.pick(&LOG_LEVEL_NAMES);
            m.push(("io.modelcontextprotocol/logLevel".into(), j.str_value(level)));
        }
        6 => {
            let t = j.b.text(8);
            m.push(("io.modelcontextprotocol/logLevel".into(), j.str_value(&t)));
        }
        _ => m.push(("io.modelcontextprotocol/logLevel".into(), b"3".to_vec())),
    }
    let token = match &cfg.token {
        Some(t) => {
            m.push(("progressToken".into(), j.id_value(t)));
            Some(t.clone())
        }
        None => match j.b.below(8) {
            0..=3 => None,
            4 => {
                let t = j.b.text(10);
                m.push(("progressToken".into(), j.str_value(&t)));
                Some(Value::String(t))
            }
            5 => {
                let t = i64::from(j.b.u16() as i16);
                m.push(("progressToken".into(), t.to_string().into_bytes()));
                Some(Value::from(t))
            }
            6 => {
                let v = j.invalid_id(depth + 1);
                m.push(("progressToken".into(), v));
                None
            }
            _ => {
                // Too long for the engine to keep: no progress can be sent.
                let t = "p".repeat(130);
                m.push(("progressToken".into(), j.str_value(&t)));
                None
            }
        },
    };
    // The engine keeps a token of at most 128 bytes of JSON.
    let token = token.filter(|t| t.to_string().len() <= crate::MAX_TICKET_ID_LEN);
    if j.b.below(4) == 0 {
        let k = j.key();
        if !k.starts_with("io.") && k != "progressToken" {
            let mut v = Vec::new();
            j.value(&mut v, depth + 1);
            m.push((k, v));
        }
    }
    Some((j.object_at(depth, &m), token))
}

const LOG_LEVEL_NAMES: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// `text` with the marker, if any, somewhere in it.
fn marked(j: &mut Json<'_, '_>, cfg: &MsgCfg<'_>) -> String {
    let t = j.b.text(6);
    match cfg.marker {
        Some(m) => format!("{m}{t}"),
        None => t,
    }
}

/// The params object of `method` (at depth 2), and the progress token it carries.
fn params(j: &mut Json<'_, '_>, method: &str, cfg: &MsgCfg<'_>) -> (Vec<u8>, Option<Value>) {
    let mut p: Vec<(String, Vec<u8>)> = Vec::new();
    let marked_mode = cfg.marker.is_some();
    match method {
        "initialize" => {
            match j.b.below(8) {
                0 => {}
                1 => p.push(("protocolVersion".into(), b"20251125".to_vec())),
                2 => {
                    let t = j.b.text(12);
                    p.push(("protocolVersion".into(), j.str_value(&t)));
                }
                _ => {
                    let r = j.b.pick(REVISIONS);
                    p.push(("protocolVersion".into(), j.str_value(r)));
                }
            }
            p.push(("capabilities".into(), j.object_at(3, &[])));
            let info = [("name".to_owned(), j.str_value("f")), ("version".to_owned(), j.str_value("1"))];
            p.push(("clientInfo".into(), j.object_at(3, &info)));
        }
        "tools/call" => {
            let name = match j.choose(10, 3) {
                0 => None,
                1 => Some(j.non_object(3)),
                2 => {
                    let t = j.b.text(10);
                    Some(j.str_value(&t))
                }
                6 => Some(j.str_value("typed")),
                7 => Some(j.str_value("needs")),
                8 => Some(j.str_value("out")),
                _ => Some(j.str_value("plain")),
            };
            if let Some(n) = name {
                p.push(("name".into(), n));
            }
            let args = match j.choose(8, 2) {
                0 if !marked_mode => None,
                0 | 1 => Some(j.non_object(3)),
                _ => {
                    let mut a: Vec<(String, Vec<u8>)> = Vec::new();
                    if let Some(m) = cfg.marker {
                        a.push(("seq".into(), j.str_value(m)));
                    }
                    match j.b.below(4) {
                        0 => {}
                        1 => a.push(("text".into(), b"12".to_vec())),
                        _ => {
                            let t = j.b.text(10);
                            a.push(("text".into(), j.str_value(&t)));
                        }
                    }
                    for _ in 0..j.b.below(3) {
                        let k = j.key();
                        if k != "seq" {
                            let mut v = Vec::new();
                            j.value(&mut v, 4);
                            a.push((k, v));
                        }
                    }
                    Some(j.object_at(3, &a))
                }
            };
            if let Some(a) = args {
                p.push(("arguments".into(), a));
            }
        }
        "resources/read" => {
            let uri = match (j.choose(8, 2), marked_mode) {
                (0, false) => None,
                (0, true) | (1, false) => Some(j.non_object(3)),
                (1, true) | (4, false) => {
                    let t = marked(j, cfg);
                    Some(j.str_value(&t))
                }
                (2, false) => Some(j.str_value("x://r")),
                (3, false) => Some(j.str_value("x://s")),
                (2..=6, _) => {
                    let id = marked(j, cfg);
                    let rest = j.b.text(10);
                    Some(j.str_value(&format!("x://t/{id}/{rest}")))
                }
                _ => {
                    let a = marked(j, cfg);
                    Some(j.str_value(&format!("x://u/{a}")))
                }
            };
            if let Some(u) = uri {
                p.push(("uri".into(), u));
            }
        }
        "prompts/get" => {
            match j.choose(8, 3) {
                0 if !marked_mode => {}
                1 => {
                    let t = j.b.text(6);
                    p.push(("name".into(), j.str_value(&t)));
                }
                2 => p.push(("name".into(), j.str_value("q"))),
                _ => p.push(("name".into(), j.str_value("p"))),
            }
            let args = match j.choose(8, 5) {
                0 if !marked_mode => None,
                0 | 1 => Some(j.non_object(3)),
                2 => {
                    let m = marked(j, cfg);
                    Some(j.object_at(3, &[("a".into(), b"1".to_vec()), ("seq".into(), j.str_value(&m))]))
                }
                3 => {
                    let (a, t) = (marked(j, cfg), j.b.text(6));
                    Some(j.object_at(3, &[("a".into(), j.str_value(&a)), ("b".into(), j.str_value(&t))]))
                }
                4 => {
                    let (a, t) = (marked(j, cfg), j.b.text(6));
                    Some(j.object_at(3, &[("a".into(), j.str_value(&a)), ("c".into(), j.str_value(&t))]))
                }
                _ => {
                    let a = marked(j, cfg);
                    Some(j.object_at(3, &[("a".into(), j.str_value(&a))]))
                }
            };
            if let Some(a) = args {
                p.push(("arguments".into(), a));
            }
        }
        "completion/complete" => {
            let good = 1 + 3 * usize::from(j.b.u8() & 1);
            let reference: Option<Vec<(String, Vec<u8>)>> = match j.choose(7, good) {
                0 => None,
                1 | 2 => {
                    Some(vec![("type".into(), j.str_value("ref/prompt")), ("name".into(), j.str_value("p"))])
                }
                3 => {
                    let t = j.b.text(6);
                    Some(vec![("type".into(), j.str_value("ref/prompt")), ("name".into(), j.str_value(&t))])
                }
                4 | 5 => Some(vec![
                    ("type".into(), j.str_value("ref/resource")),
                    ("uri".into(), j.str_value("x://t/{id}/{+rest}")),
                ]),
                _ => {
                    let t = j.b.text(12);
                    Some(vec![("type".into(), j.str_value("ref/resource")), ("uri".into(), j.str_value(&t))])
                }
            };
            let prompt_ref = reference.as_ref().is_some_and(|r| r.len() == 2 && r[1].0 == "name");
            if let Some(r) = reference {
                p.push(("ref".into(), j.object_at(3, &r)));
            }
            match j.choose(8, 2) {
                0 => {}
                1 => p.push(("argument".into(), j.non_object(3))),
                _ => {
                    let fits: &[&str] = if prompt_ref { &["a", "b"] } else { &["id", "rest"] };
                    let name =
                        if j.choose(2, 0) == 0 { j.b.pick(fits) } else { j.b.pick(&["a", "id", "zz"]) };
                    let value = marked(j, cfg);
                    let arg =
                        [("name".to_owned(), j.str_value(name)), ("value".to_owned(), j.str_value(&value))];
                    p.push(("argument".into(), j.object_at(3, &arg)));
                }
            }
            match j.b.below(4) {
                0 | 1 => {}
                2 => {
                    let t = j.b.text(6);
                    let args = j.object_at(5, &[("a".into(), j.str_value(&t))]);
                    p.push(("context".into(), j.object_at(3, &[("arguments".into(), args)])));
                }
                _ => p.push(("context".into(), j.object_at(3, &[("arguments".into(), b"5".to_vec())]))),
            }
        }
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            use crate::cursor::{self, ListKind};
            let kinds =
                [ListKind::Tools, ListKind::Resources, ListKind::ResourceTemplates, ListKind::Prompts];
            let own = match method {
                "tools/list" => ListKind::Tools,
                "resources/list" => ListKind::Resources,
                "resources/templates/list" => ListKind::ResourceTemplates,
                _ => ListKind::Prompts,
            };
            match j.b.below(8) {
                0..=3 => {}
                n @ (4 | 5) => {
                    let kind = if n == 4 { own } else { j.b.pick(&kinds) };
                    let key = match j.b.below(3) {
                        0 => j.b.text(8),
                        _ => {
                            j.b.pick(&[
                                "plain",
                                "typed",
                                "needs",
                                "out",
                                "x://r",
                                "x://s",
                                "p",
                                "q",
                                "x://u/{a}",
                            ])
                            .to_owned()
                        }
                    };
                    let mut buf = [0u8; cursor::MAX_CURSOR_LEN];
                    if let Some(c) = cursor::encode(kind, &key, &mut buf) {
                        p.push(("cursor".into(), j.str_value(c)));
                    }
                }
                6 => {
                    let t = j.b.text(12);
                    p.push(("cursor".into(), j.str_value(&t)));
                }
                _ => p.push(("cursor".into(), j.non_object(3))),
            }
        }
        "logging/setLevel" => match j.b.below(4) {
            0 => {}
            1 => {
                let t = j.b.text(8);
                p.push(("level".into(), j.str_value(&t)));
            }
            _ => {
                let level = j.b.pick(&LOG_LEVEL_NAMES);
                p.push(("level".into(), j.str_value(level)));
            }
        },
        "notifications/cancelled" => {
            if let Some((id, _)) = random_id(j) {
                p.push(("requestId".into(), id));
            }
        }
        _ => {}
    }
    let mut token = None;
    if (method != "initialize" || j.b.below(4) == 0)
        && let Some((m, t)) = meta(j, cfg, 3)
    {
        p.push(("_meta".into(), m));
        token = t;
    }
    if j.b.below(4) == 0 {
        let k = j.key();
        if k != "_meta" && !p.iter().any(|(x, _)| *x == k) {
            let mut v = Vec::new();
            j.value(&mut v, 3);
            p.push((k, v));
        }
    }
    (j.object_at(2, &p), token)
}

/// The catalog of the JSON-RPC harnesses: every kind of item, a tool with an input schema,
/// one that needs a client capability, one with an output schema, two templates, a
/// prompt with a required and an optional argument.
fn rich_catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("plain"))
        .tool(Tool::new("typed").input_schema(serde_json::json!({
            "type": "object",
            "properties": { "text": { "type": "string", "maxLength": 8 } },
            "required": ["text"]
        })))
        .tool(Tool::new("needs").requires_client_capability("sampling"))
        .tool(Tool::new("out").output_schema(serde_json::json!({
            "type": "object",
            "properties": { "n": { "type": "integer" } },
            "required": ["n"]
        })))
        .resource(Resource::new("x://r", "r"))
        .resource(Resource::new("x://s", "s"))
        .template(ResourceTemplate::new("x://t/{id}/{+rest}", "t"))
        .template(ResourceTemplate::new("x://u/{a}", "u"))
        .prompt(Prompt::new("p").argument(PromptArgument::required("a")).argument(PromptArgument::new("b")))
        .prompt(Prompt::new("q"))
        .build()
        .unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"))
}

/// Checks one output line: a JSON-RPC 2.0 object, a response (exactly one of `result` and
/// `error`, an error with an integer code and a string message) or a notification
/// (progress or log, without an id). Returns the parsed value.
fn check_line(line: &[u8]) -> Value {
    let v: Value =
        serde_json::from_slice(line).unwrap_or_else(|e| panic!("{e}: not JSON: {:?}", lossy(line)));
    let Some(obj) = v.as_object() else { panic!("not an object: {v}") };
    assert_eq!(obj.get("jsonrpc"), Some(&Value::from("2.0")), "{v}");
    match obj.get("method") {
        Some(m) => {
            assert!(
                m == "notifications/progress" || m == "notifications/message",
                "the server sent a request or an unknown notification: {v}"
            );
            assert!(!obj.contains_key("id"), "a notification with an id: {v}");
            assert!(obj.get("params").is_some_and(Value::is_object), "{v}");
        }
        None => {
            assert!(obj.contains_key("result") != obj.contains_key("error"), "{v}");
            if let Some(id) = obj.get("id") {
                assert!(id.is_string() || id.is_i64() || id.is_u64(), "a response id of the wrong type: {v}");
            }
            if let Some(err) = obj.get("error") {
                assert!(err["code"].is_i64() && err["message"].is_string(), "{v}");
            } else {
                assert!(obj["result"].is_object(), "{v}");
            }
        }
    }
    v
}

/// Splits output into lines: every output ends with a newline.
fn output_lines(out: &[u8]) -> Vec<&[u8]> {
    assert!(out.is_empty() || out.ends_with(b"\n"), "output does not end a line: {:?}", lossy(out));
    out.split(|&c| c == b'\n').filter(|l| !l.is_empty()).collect()
}

// ---------------------------------------------------------------------------------------
// jsonrpc: one generated JSON-RPC frame.
// ---------------------------------------------------------------------------------------

/// The JSON-RPC decoder and dispatcher, one frame at a time.
///
/// Input: a settings byte (frame limit 512-4096, depth limit, logging, completions, slots),
/// a prelude byte (opening the stream with `initialize` under a session-bound revision,
/// `notifications/initialized`, `logging/setLevel`; the page size), then a generated
/// message (`message`: ids of every type, known and unknown methods with well- and
/// ill-shaped params and `_meta`, repeated member names, member order, whitespace, four
/// string escapings, broken strings, batches, scalars), whether it ends at end of input
/// instead of a newline, then how the host answers the event, if any (at once or later,
/// an error, the wrong kind first, progress and log notifications first, twice).
///
/// Asserts: no panic; every output line is a JSON-RPC 2.0 object, a response with exactly
/// one of `result` and `error`, or a progress or log notification; at most one event, of
/// the kind the method calls for; the output is exactly what the message calls for: a
/// request with a valid id gets exactly one response echoing the id, a notification or a
/// response none, anything else one error without an id; progress notifications carry
/// the request's token, one per accepted `notify_progress`; a second answer, or a wrong
/// kind of answer, is refused and writes nothing. Also: the engine's direct JSON writers
/// give `serde_json`'s bytes for the input read as text (a string, each content block).
pub fn jsonrpc(data: &[u8]) {
    writers_match_serde(&String::from_utf8_lossy(data));
    let mut b = Bytes::new(data);
    let setup = b.u8();
    let prelude = b.u8();
    let frame_limit = 512usize << (setup & 3);
    let depth_limit = [8, 12, 16, 40][usize::from(setup >> 2) & 3];
    let mut cfg = Config::new("fuzz", "0");
    cfg.max_frame_len(frame_limit)
        .max_depth(depth_limit)
        .max_in_flight(1 + usize::from(setup >> 6))
        .logging(setup & 0x10 != 0)
        .completions(setup & 0x20 != 0)
        .page_size(1 + usize::from(prelude >> 6))
        .server_info_in_meta(prelude & 0x20 == 0);
    let mut e = Engine::new(cfg, rich_catalog());

    // The prelude: open a session-bound stream.
    let mut pre = String::new();
    if prelude & 3 != 0 {
        let rev = ["", "2025-11-25", "2025-06-18", "2024-11-05"][usize::from(prelude & 3)];
        pre.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"{rev}\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"f\",\"version\":\"1\"}}}}}}\n"
        ));
        if prelude & 4 != 0 {
            pre.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        }
        if prelude & 8 != 0 {
            let level = LOG_LEVEL_NAMES[usize::from(prelude >> 4) & 7];
            pre.push_str(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":\"lvl\",\"method\":\"logging/setLevel\",\"params\":{{\"level\":\"{level}\"}}}}\n"
            ));
        }
    }
    assert_eq!(e.handle_input(Instant::ZERO, pre.as_bytes()), pre.len());
    assert!(e.poll_event().is_none(), "the prelude needs no host");
    let n = e.pending_output().len();
    for line in output_lines(e.pending_output()) {
        let v = check_line(line);
        assert!(v.get("id").is_some(), "the prelude's requests carry ids: {v}");
    }
    e.consume_output(n);

    let mcfg =
        MsgCfg { depth_limit, frame_limit, id: IdPlan::Random, marker: None, token: None, ticketed: false };
    let frame = message(&mut b, &mcfg);
    let at_eof = b.u8() & 7 == 0;
    let mut input = frame.bytes.clone();
    if !at_eof {
        input.push(b'\n');
    }

    let mut host = JsonRpcHost { events: 0, progress: 0, logs: 0, deferred: None };
    let mut fed = 0;
    for round in 0.. {
        assert!(round < 100, "the engine does not take the frame");
        fed += e.handle_input(Instant::ZERO, &input[fed..]);
        host.drain(&mut e, &mut b, &frame);
        if fed == input.len() {
            break;
        }
    }
    if at_eof {
        e.handle_eof(Instant::ZERO);
        host.drain(&mut e, &mut b, &frame);
    }
    host.finish(&mut e, &mut b);
    assert!(e.poll_event().is_none());
    assert_eq!(e.in_flight(), 0, "the ticket outlives its answer");

    // The output the frame called for.
    let out = e.pending_output();
    let lines: Vec<Value> = output_lines(out).into_iter().map(check_line).collect();
    let (notes, responses): (Vec<&Value>, Vec<&Value>) =
        lines.iter().partition(|v| v.get("method").is_some());
    let progress = notes.iter().filter(|v| v["method"] == "notifications/progress").count();
    assert_eq!(progress, host.progress, "progress notifications written and accepted differ");
    assert_eq!(notes.len() - progress, host.logs, "log notifications written and accepted differ");
    let frame_text = String::from_utf8_lossy(&frame.bytes);
    for note in &notes {
        if note["method"] == "notifications/progress" {
            assert_eq!(
                Some(&note["params"]["progressToken"]),
                frame.token.as_ref(),
                "{frame_text} -> {note}"
            );
        }
    }
    match &frame.expect {
        Expect::Nothing => assert!(lines.is_empty(), "output for a notification or response {frame_text}"),
        Expect::Anonymous => {
            assert_eq!(responses.len(), 1, "{frame_text} -> {lines:?}");
            let r = responses[0];
            assert!(r.get("id").is_none(), "{frame_text} -> {r}");
            let code = &r["error"]["code"];
            assert!(*code == -32700 || *code == -32600, "{frame_text} -> {r}");
        }
        Expect::Reply(id) => {
            assert_eq!(responses.len(), 1, "{frame_text} -> {lines:?}");
            assert_eq!(responses[0].get("id"), Some(id), "{frame_text} -> {}", responses[0]);
        }
    }
    if host.events > 0 {
        assert!(matches!(frame.expect, Expect::Reply(_)), "an event for {frame_text}");
    }
}

/// The host of the jsonrpc harness.
struct JsonRpcHost {
    events: usize,
    /// `notify_progress` / `notify_log` calls accepted.
    progress: usize,
    logs: usize,
    /// A ticket kept to answer later, and its kind.
    deferred: Option<(Ticket, EvKind)>,
}

impl JsonRpcHost {
    fn drain(&mut self, e: &mut Engine, b: &mut Bytes<'_>, frame: &Frame) {
        while let Some(ev) = e.poll_event() {
            self.events += 1;
            assert_eq!(self.events, 1, "two events for one frame");
            let method = frame.method.as_deref();
            let how = b.u8();
            let ticket = ev.ticket();
            let kind = match &ev {
                Event::CallTool(_) => EvKind::Tool,
                Event::ReadResource(_) => EvKind::Resource,
                Event::GetPrompt(_) => EvKind::Prompt,
                Event::Complete(_) => EvKind::Completion,
                Event::Cancelled(_) => panic!("a cancellation with no request to cancel"),
            };
            let want = match kind {
                EvKind::Tool => "tools/call",
                EvKind::Resource => "resources/read",
                EvKind::Prompt => "prompts/get",
                EvKind::Completion => "completion/complete",
            };
            assert_eq!(method, Some(want), "an event of the wrong kind");
            let text = [Content::text("ok\n\u{0}\"")];
            let r = match (how % 8, ev) {
                (0, Event::CallTool(c)) => {
                    let args = c.arguments.raw();
                    assert!(serde_json::from_str::<Value>(args).is_ok_and(|v| v.is_object()), "{args}");
                    if c.tool.name == "out" {
                        let n = serde_json::json!({ "n": how >> 4 });
                        let s = serde_json::json!({ "n": "x" });
                        let structured = if how & 0x80 == 0 { &n } else { &s };
                        c.answer(&ToolOutput::new(&text).structured(structured))
                    } else {
                        c.answer(&ToolOutput::new(&[Content::text(args)]))
                    }
                }
                (0, Event::ReadResource(r)) => {
                    let uri = r.uri;
                    if r.template.is_some() {
                        assert!(!r.variables.is_empty());
                        for (name, value) in r.variables.iter() {
                            assert!(uri.contains(value), "{name}={value} is not part of {uri}");
                        }
                    }
                    r.answer(&[ResourceContents::text(uri, Some("text/plain"), "x\r\n")])
                }
                (0, Event::GetPrompt(p)) => {
                    let messages = [PromptMessage::user(Content::text(p.arguments.raw()))];
                    p.answer(&PromptOutput::new(&messages))
                }
                (0, Event::Complete(c)) => {
                    let value = c.value;
                    c.answer(&[value, "x", value, "y\n"], None, how & 0x10 != 0)
                }
                (1, Event::CallTool(c)) => c.fail(HostError::Internal("boom\n")),
                (1, Event::ReadResource(r)) => r.fail(HostError::NotFound),
                (1, Event::GetPrompt(p)) => p.fail(HostError::InvalidParams("bad \"x\"")),
                (1, Event::Complete(c)) => c.fail(HostError::NotFound),
                (4, Event::CallTool(mut c)) => {
                    let p = c.progress(1.0, Some(2.0), Some("half\n"));
                    self.progress += usize::from(p.is_ok());
                    assert_eq!(p.is_ok(), frame.token.is_some(), "{p:?}");
                    let p = c.progress(1.0, None, None);
                    assert!(p.is_err(), "progress must increase");
                    let l = c.log(LogLevel::Error, Some("fuzz"), &serde_json::json!({ "line": "a\nb" }));
                    self.logs += usize::from(l.is_ok());
                    c.answer(&ToolOutput::error(&text))
                }
                (_, _) => {
                    self.deferred = Some((ticket, kind));
                    Ok(())
                }
            };
            assert_eq!(r, Ok(()), "answering a live ticket");
            if how % 8 < 2 || (how % 8 == 4 && kind == EvKind::Tool) {
                // Answered: a second answer is refused and writes nothing.
                let before = e.pending_output().len();
                assert_eq!(e.answer_error(ticket, HostError::NotFound), Err(AnswerError::UnknownTicket));
                assert_eq!(
                    e.notify_progress(ticket, 9.0, None, None),
                    Err(crate::NotifyError::UnknownTicket)
                );
                assert_eq!(e.pending_output().len(), before, "a refused answer wrote output");
            }
        }
    }

    /// Answers the deferred ticket through the engine: progress and logs, maybe the wrong
    /// kind first (refused), then the answer, then a second answer (refused).
    fn finish(&mut self, e: &mut Engine, b: &mut Bytes<'_>) {
        let Some((t, kind)) = self.deferred.take() else { return };
        let how = b.u8();
        if how & 1 != 0 {
            let r = e.notify_progress(t, 0.5, None, Some("m"));
            self.progress += usize::from(r.is_ok());
            let r = e.notify_progress(t, f64::NAN, None, None);
            assert!(r.is_err(), "a NaN progress was accepted");
        }
        if how & 2 != 0 {
            let level = LogLevel::parse(LOG_LEVEL_NAMES[usize::from(how >> 5)]).unwrap_or(LogLevel::Info);
            let r = e.notify_log(t, level, None, "text");
            self.logs += usize::from(r.is_ok());
        }
        let before = e.pending_output().len();
        let wrong = match kind {
            EvKind::Tool => e.answer_prompt(t, &PromptOutput::new(&[])),
            _ => e.answer_tool(t, &ToolOutput::new(&[])),
        };
        assert_eq!(wrong, Err(AnswerError::WrongKind));
        assert_eq!(e.pending_output().len(), before, "a refused answer wrote output");
        let text = [Content::text("later")];
        let messages = [PromptMessage::assistant(Content::text("x"))];
        let r = match (how >> 2 & 3, kind) {
            (0, _) => e.answer_error(t, HostError::Internal("late")),
            (1, EvKind::Resource) => e.answer_resource(t, &[]),
            (_, EvKind::Tool) => e.answer_tool(t, &ToolOutput::new(&text)),
            (_, EvKind::Resource) => {
                e.answer_resource(t, &[ResourceContents::blob("x://r", None, b"\x00\xff")])
            }
            (_, EvKind::Prompt) => e.answer_prompt(t, &PromptOutput::new(&messages)),
            (_, EvKind::Completion) => {
                let many: Vec<String> = (0..150).map(|i| format!("v{}", i % 120)).collect();
                let refs: Vec<&str> = many.iter().map(String::as_str).collect();
                e.answer_completion(t, &refs, Some(3), false)
            }
        };
        assert_eq!(r, Ok(()), "answering a live ticket");
        let before = e.pending_output().len();
        assert_eq!(e.answer_tool(t, &ToolOutput::new(&text)), Err(AnswerError::UnknownTicket));
        assert_eq!(e.notify_log(t, LogLevel::Emergency, None, "x"), Err(crate::NotifyError::UnknownTicket));
        assert_eq!(e.pending_output().len(), before, "a refused answer wrote output");
    }
}

// ---------------------------------------------------------------------------------------
// cursor: pagination cursors.
// ---------------------------------------------------------------------------------------

const CURSOR_KINDS: [crate::cursor::ListKind; 4] = [
    crate::cursor::ListKind::Tools,
    crate::cursor::ListKind::Resources,
    crate::cursor::ListKind::ResourceTemplates,
    crate::cursor::ListKind::Prompts,
];

fn cursor_tag(kind: crate::cursor::ListKind) -> u8 {
    use crate::cursor::ListKind;
    match kind {
        ListKind::Tools => b't',
        ListKind::Resources => b'r',
        ListKind::ResourceTemplates => b'u',
        ListKind::Prompts => b'p',
    }
}

/// Pagination cursors (`cursor::encode`, `cursor::decode`).
///
/// Input: a mode byte (the list kind, what the rest is), then the rest: a string to decode
/// as it is; a payload (after `c1` and a tag byte, or not) to base64url-encode, then maybe
/// spoil (a character changed, padding added, the standard alphabet, a character cut); a
/// key to encode, stretched to lengths around the 1024-byte limit.
///
/// Asserts: no panic; `decode` agrees with an independent decoding (base64url without
/// padding, canonical; the prefix `c1`; a known tag; a key of at most 1024 bytes of
/// UTF-8; a cursor of at most `MAX_CURSOR_LEN` characters): a cursor decodes for exactly
/// its list and names that list to the others; a decoded key encodes back to the very
/// same cursor; `encode` refuses exactly the keys over 1024 bytes, and what it gives is
/// url-safe, at most `MAX_CURSOR_LEN` long, and decodes to the key.
pub fn cursor(data: &[u8]) {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let Some((&mode, rest)) = data.split_first() else { return };
    let kind = CURSOR_KINDS[usize::from(mode & 3)];
    let text: String = match (mode >> 2) & 7 {
        0..=2 => String::from_utf8_lossy(rest).into_owned(),
        3 | 4 => {
            let tags = [b't', b'r', b'u', b'p', b'z'];
            let mut raw = if mode & 0x80 != 0 { b"c1".to_vec() } else { b"c2".to_vec() };
            raw.push(tags[usize::from(mode >> 5) % tags.len()]);
            raw.extend_from_slice(rest);
            URL_SAFE_NO_PAD.encode(&raw)
        }
        5 => {
            let mut b = Bytes::new(rest);
            let how = b.u8();
            let key = String::from_utf8_lossy(b.bytes(usize::MAX)).into_owned();
            let mut buf = [0u8; crate::cursor::MAX_CURSOR_LEN];
            let Some(c) = crate::cursor::encode(kind, &key, &mut buf) else { return };
            let mut c = c.to_owned();
            match how & 3 {
                0 if !c.is_empty() => {
                    // Change one character to another base64 character, or to any.
                    let at = usize::from(how >> 2) % c.len();
                    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=.";
                    let with = char::from(alphabet[usize::from(b.u8()) % alphabet.len()]);
                    c.replace_range(at..at + 1, with.encode_utf8(&mut [0; 4]));
                }
                1 => c.push_str(["=", "==", "A", "AA"][usize::from(how >> 2) & 3]),
                2 => c = c.replace('-', "+").replace('_', "/"),
                _ => {
                    c.pop();
                }
            }
            c
        }
        _ => {
            // The encoding side, with keys around the length limit.
            let piece = String::from_utf8_lossy(rest);
            let piece = if piece.is_empty() { "k".into() } else { piece };
            let target = crate::cursor::MAX_CURSOR_KEY - 4 + usize::from(mode >> 5);
            let mut key = String::new();
            while key.len() < target {
                key.push_str(&piece);
            }
            let mut cut = target.min(key.len());
            while !key.is_char_boundary(cut) {
                cut -= 1;
            }
            key.truncate(cut);
            cursor_encode_check(kind, &key);
            return;
        }
    };
    cursor_decode_check(&text);
    cursor_encode_check(kind, &text);
}

/// `decode` of `text` for every list, against an independent decoding.
fn cursor_decode_check(text: &str) {
    use crate::cursor::{self, CursorError, MAX_CURSOR_KEY, MAX_CURSOR_LEN};
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    // What the cursor names: (the list, its key when valid).
    let named = URL_SAFE_NO_PAD
        .decode(text)
        .ok()
        .filter(|_| !text.is_empty() && text.len() <= MAX_CURSOR_LEN)
        .and_then(|raw| {
            let (prefix, key) = raw.split_at_checked(3)?;
            let kind = CURSOR_KINDS.into_iter().find(|&k| prefix == [b'c', b'1', cursor_tag(k)])?;
            let key = core::str::from_utf8(key).ok().filter(|k| k.len() <= MAX_CURSOR_KEY).map(str::to_owned);
            Some((kind, key))
        });
    for kind in CURSOR_KINDS {
        let mut buf = [0u8; MAX_CURSOR_KEY + 8];
        let got = cursor::decode(kind, text, &mut buf).map(str::to_owned);
        let want = match &named {
            None => Err(CursorError::Invalid),
            Some((k, _)) if *k != kind => Err(CursorError::OtherList(*k)),
            Some((_, None)) => Err(CursorError::Invalid),
            Some((_, Some(key))) => Ok(key.clone()),
        };
        assert_eq!(got, want, "decoding {text:?} for {kind:?}");
        if let Ok(key) = got {
            let mut out = [0u8; MAX_CURSOR_LEN];
            assert_eq!(cursor::encode(kind, &key, &mut out), Some(text), "a decoded cursor is not canonical");
        }
    }
}

/// `encode` of `key` for `kind`: refused exactly over the limit; otherwise url-safe,
/// bounded, the base64url of `c1`, the tag and the key, and decoding to the key.
fn cursor_encode_check(kind: crate::cursor::ListKind, key: &str) {
    use crate::cursor::{self, CursorError, MAX_CURSOR_KEY, MAX_CURSOR_LEN};
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut out = [0u8; MAX_CURSOR_LEN];
    let Some(c) = cursor::encode(kind, key, &mut out) else {
        assert!(key.len() > MAX_CURSOR_KEY, "a key of {} bytes was refused", key.len());
        return;
    };
    assert!(key.len() <= MAX_CURSOR_KEY, "a key of {} bytes was encoded", key.len());
    assert!(c.len() <= MAX_CURSOR_LEN);
    assert!(c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{c:?}");
    let mut raw = vec![b'c', b'1', cursor_tag(kind)];
    raw.extend_from_slice(key.as_bytes());
    assert_eq!(c, URL_SAFE_NO_PAD.encode(&raw));
    let c = c.to_owned();
    for other in CURSOR_KINDS {
        let mut buf = [0u8; MAX_CURSOR_KEY + 8];
        let got = cursor::decode(other, &c, &mut buf);
        if other == kind {
            assert_eq!(got, Ok(key), "round trip of {key:?}");
        } else {
            assert_eq!(got, Err(CursorError::OtherList(kind)));
        }
    }
}

// ---------------------------------------------------------------------------------------
// uritemplate: resource template parsing and matching.
// ---------------------------------------------------------------------------------------

/// A parsed template as the harness reads it: the literal prefix, then per variable
/// whether it is `{+name}`, its name, and the literal after it.
struct TemplateModel {
    prefix: String,
    vars: Vec<(bool, String, String)>,
}

impl TemplateModel {
    /// Reads a template the engine accepted.
    fn of(template: &str) -> Self {
        let mut parts = template.split('{');
        let prefix = parts.next().unwrap_or_default().to_owned();
        let vars = parts
            .map(|p| {
                let (body, literal) = p.split_once('}').unwrap_or_else(|| panic!("accepted {template:?}"));
                let (reserved, name) = match body.strip_prefix('+') {
                    Some(n) => (true, n),
                    None => (false, body),
                };
                (reserved, name.to_owned(), literal.to_owned())
            })
            .collect();
        Self { prefix, vars }
    }

    /// Fills the variables with `values`.
    fn expand(&self, values: &[String]) -> String {
        let mut s = self.prefix.clone();
        for ((_, _, literal), v) in self.vars.iter().zip(values) {
            s.push_str(v);
            s.push_str(literal);
        }
        s
    }

    /// The first split (shortest captures, left to right), by plain search; `Err` when it
    /// takes more than `work` steps.
    fn reference(&self, uri: &str) -> Result<Option<Vec<(u32, u32)>>, ()> {
        fn go(
            m: &TemplateModel,
            uri: &[u8],
            k: usize,
            pos: usize,
            work: &mut u32,
        ) -> Result<Option<Vec<(u32, u32)>>, ()> {
            let (reserved, _, literal) = &m.vars[k];
            let last = k + 1 == m.vars.len();
            for end in pos + 1..=uri.len() {
                *work = work.checked_sub(1).ok_or(())?;
                if !reserved && uri[end - 1] == b'/' {
                    break;
                }
                if !uri[end..].starts_with(literal.as_bytes()) {
                    continue;
                }
                let next = end + literal.len();
                let rest =
                    if last { (next == uri.len()).then(Vec::new) } else { go(m, uri, k + 1, next, work)? };
                if let Some(mut rest) = rest {
                    rest.insert(0, (pos as u32, end as u32));
                    return Ok(Some(rest));
                }
            }
            Ok(None)
        }
        if !uri.starts_with(&self.prefix) {
            return Ok(None);
        }
        let mut work = 200_000;
        go(self, uri.as_bytes(), 0, self.prefix.len(), &mut work)
    }
}

/// Literal pieces and values the structured templates and uris are made of.
const URI_PIECES: &[&str] =
    &["/", "-", "a", "x", ".", "é", "//", "a/", "://", "?q=", "😀", "-a", "x-", "%2F", "ab", "\u{0}", " "];

fn uri_piece_text(b: &mut Bytes<'_>, max: usize) -> String {
    (0..b.below(max + 1)).map(|_| b.pick(URI_PIECES)).collect()
}

/// Resource templates (`uritemplate`): `UriTemplate::parse` and `UriTemplate::matches`.
///
/// Input: a mode byte, then a template (any text, or one built from literals and `{name}`
/// / `{+name}` expressions that must parse), then up to four uris (any text; the
/// template expanded with values that may or may not fit; a piece repeated up to 4000
/// times, to spend the work budgets).
///
/// Asserts: no panic; a refused template's error points at the brace it is about (or
/// says why not) and names the template; an accepted one has the variables the harness
/// reads in it; a match has one capture per variable, in order, non-empty, `{name}`
/// captures without `/`, on character boundaries, and substituting the captured values
/// back into the template gives the uri; the match is the first split a plain search
/// finds (shortest captures first), and a uri the search matches is matched unless the
/// matcher ran out of its budget (then it reports no match); `matches` clears the
/// captures when there is no match.
pub fn uritemplate(data: &[u8]) {
    use crate::TemplateError as E;
    use crate::uritemplate::{Captures, MAX_TEMPLATE_LEN, MAX_TEMPLATE_VARS, UriTemplate};
    let mut b = Bytes::new(data);
    let mode = b.u8();
    let structured = mode & 1 != 0;
    let template = if structured {
        let n = 1 + b.below(if mode & 2 != 0 { MAX_TEMPLATE_VARS + 2 } else { 4 });
        let mut t = uri_piece_text(&mut b, 3);
        let names = ["id", "a", "b.c", "x_1", "rest", "v"];
        for i in 0..n {
            t.push('{');
            if b.u8() & 1 != 0 {
                t.push('+');
            }
            t.push_str(names[i % names.len()]);
            if i >= names.len() {
                t.push_str(&i.to_string());
            }
            t.push('}');
            let mut literal = uri_piece_text(&mut b, 3);
            if literal.is_empty() && i + 1 < n {
                literal.push('-');
            }
            t.push_str(&literal);
        }
        t
    } else if mode & 2 != 0 {
        String::from_utf8_lossy(b.bytes(96)).into_owned()
    } else {
        b.text(48)
    };
    let parsed = UriTemplate::parse(&template);
    let tpl = match parsed {
        Err(e) => {
            let bytes = template.as_bytes();
            let brace = |offset: usize, c: u8| {
                assert!(
                    bytes.get(offset) == Some(&c),
                    "{e:?} does not point at {:?} in {template:?}",
                    char::from(c)
                )
            };
            match &e {
                E::Empty => assert!(template.is_empty()),
                E::TooLong { len } => assert!(*len == template.len() && *len > MAX_TEMPLATE_LEN),
                E::StrayClose { offset } => brace(*offset, b'}'),
                E::Unclosed { offset }
                | E::NestedOpen { offset }
                | E::EmptyExpression { offset }
                | E::UnsupportedOperator { offset, .. }
                | E::PrefixModifier { offset }
                | E::ExplodeModifier { offset }
                | E::MultipleVariables { offset }
                | E::InvalidName { offset }
                | E::AdjacentExpressions { offset }
                | E::DuplicateVariable { offset, .. }
                | E::TooManyVariables { offset } => brace(*offset, b'{'),
                E::NoVariables => assert!(!template.contains('{'), "{template:?}"),
            }
            let msg = e.to_string();
            assert!(msg.contains("template"), "{msg}");
            let vars = template.matches('{').count();
            assert!(!structured || vars > MAX_TEMPLATE_VARS, "{template:?} was refused: {e}");
            return;
        }
        Ok(t) => t,
    };
    let model = TemplateModel::of(&template);
    let names: Vec<&str> = tpl.var_names().iter().map(|n| &**n).collect();
    let want: Vec<&str> = model.vars.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(names, want, "{template:?}");
    assert!(!names.is_empty() && names.len() <= MAX_TEMPLATE_VARS);

    for _ in 0..1 + b.below(4) {
        let uri = match b.below(8) {
            0 => b.text(64),
            1 => {
                let piece = uri_piece_text(&mut b, 2);
                let times = b.below(4000);
                format!("{}{}", model.prefix, piece.repeat(times))
            }
            _ => {
                let values: Vec<String> = model
                    .vars
                    .iter()
                    .map(|(reserved, _, _)| {
                        let v = uri_piece_text(&mut b, 4);
                        if *reserved || b.u8() & 7 == 0 { v } else { v.replace('/', "") }
                    })
                    .collect();
                model.expand(&values)
            }
        };
        let mut caps = Captures::new();
        let _ = caps.push((9, 9, 9));
        let matched = tpl.matches(&uri, &mut caps);
        let mut decided_caps = Captures::new();
        let decided = tpl.matches_decided(&uri, &mut decided_caps);
        assert_eq!(matched, decided == Some(true), "{template:?} / {uri:?}: {decided:?}");
        if !matched {
            assert!(caps.is_empty(), "captures left after no match");
        } else {
            assert_eq!(caps, decided_caps);
            assert_eq!(caps.len(), model.vars.len());
            let mut rebuilt = model.prefix.clone();
            let mut pos = model.prefix.len();
            for (i, (&(var, start, end), (reserved, _, literal))) in caps.iter().zip(&model.vars).enumerate()
            {
                assert_eq!(usize::from(var), i);
                assert_eq!(start as usize, pos, "captures are not contiguous");
                let value = uri.get(start as usize..end as usize).expect("a capture on character boundaries");
                assert!(!value.is_empty(), "an empty capture");
                assert!(*reserved || !value.contains('/'), "{{name}} captured {value:?}");
                rebuilt.push_str(value);
                rebuilt.push_str(literal);
                pos = end as usize + literal.len();
            }
            assert_eq!(rebuilt, uri, "the captures do not expand back to the uri");
        }
        match model.reference(&uri) {
            Err(()) => {}
            Ok(Some(split)) => match decided {
                Some(true) => {
                    let got: Vec<(u32, u32)> = caps.iter().map(|&(_, s, e)| (s, e)).collect();
                    assert_eq!(got, split, "not the first split of {uri:?} by {template:?}");
                }
                Some(false) => panic!("{template:?} missed {uri:?} (split {split:?})"),
                None => {}
            },
            Ok(None) => assert!(!matched, "{template:?} matched {uri:?} with no split"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// op_sequence: a stdio session driven by a sequence of operations.
// ---------------------------------------------------------------------------------------

/// Most operations one input runs.
const MAX_OPS: usize = 512;

/// What the harness knows of one generated request (by its sequence number, the marker
/// `~N` it carries where the host sees it).
struct SeqInfo {
    /// The id, when the engine must answer the frame with one: its JSON, and the value.
    id: Option<(String, Value)>,
    /// The method, when it is a string.
    method: Option<String>,
    /// The progress token the engine keeps, as JSON.
    token: Option<String>,
    /// Output offset of the response the host wrote for it.
    responded_at: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TicketState {
    Live,
    Answered,
    Cancelled,
}

/// A ticket the host was handed.
struct Tracked {
    ticket: Ticket,
    seq: u64,
    kind: EvKind,
    state: TicketState,
    /// An answer or notification was refused as unknown while the harness held the ticket
    /// live: the client's cancellation was processed, and its event must follow.
    cancel_due: bool,
    /// Output offset when the harness saw the cancellation.
    cancelled_at: Option<usize>,
    last_progress: f64,
}

/// Per request id: frames the engine took, responses written, cancellations seen.
#[derive(Debug, Default)]
struct IdCount {
    delivered: u32,
    responses: u32,
    cancelled: u32,
}

/// A line the host wrote, by output offset.
#[derive(Debug, Clone, Copy)]
enum HostLine {
    Response(u64),
    Progress(u64),
    Log,
}

/// What the host did with an event.
enum Did {
    Answered,
    Progress,
    Log,
    Kept,
}

struct OpHarness {
    e: Engine,
    now: Instant,
    max_in_flight: usize,
    max_buffered: usize,
    frame_limit: usize,
    depth_limit: usize,
    next_seq: u64,
    /// Bytes the client sent that the engine has not taken.
    backlog: Vec<u8>,
    /// Bytes of the stream the engine took.
    taken: usize,
    /// Frames not wholly taken: where each ends in the stream, and its request.
    queued: VecDeque<(usize, Option<u64>)>,
    eof: bool,
    /// All output seen: what was consumed, then what is pending.
    seen: Vec<u8>,
    consumed: usize,
    /// Where the next unchecked line starts.
    parsed: usize,
    /// Lines not wholly consumed: start, end, whether the host wrote it.
    lines: VecDeque<(usize, usize, bool)>,
    host_lines: HashMap<usize, HostLine>,
    ids: HashMap<String, IdCount>,
    seqs: HashMap<u64, SeqInfo>,
    tickets: Vec<Tracked>,
    /// An event was polled and the engine has not processed frames since: a refused
    /// command may then let the engine write output for frames behind the event.
    unprocessed: bool,
    progress_value: f64,
    /// `MCP_FUZZ_TRACE` is set: print what is sent and read.
    trace: bool,
}

/// The sequence number in a marker `~N` inside `s`.
fn marker_in(s: &str) -> Option<u64> {
    let at = s.find('~')?;
    let digits: String = s[at + 1..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The host acts on an event: answers it (`how` 0-1), fails it (2), reports progress (3),
/// logs (4) or keeps it for later.
fn host_act(ev: Event<'_>, how: u8) -> Did {
    let text = [Content::text("ok")];
    let r = match (how % 8, ev) {
        (0 | 1, Event::CallTool(c)) => c.answer(&ToolOutput::new(&text)),
        (0 | 1, Event::ReadResource(r)) => {
            let uri = r.uri;
            r.answer(&[ResourceContents::text(uri, None, "x")])
        }
        (0 | 1, Event::GetPrompt(p)) => {
            p.answer(&PromptOutput::new(&[PromptMessage::user(Content::text("x"))]))
        }
        (0 | 1, Event::Complete(c)) => {
            let value = c.value;
            c.answer(&[value, "y"], None, false)
        }
        (2, Event::CallTool(c)) => c.fail(HostError::Internal("x")),
        (2, Event::ReadResource(r)) => r.fail(HostError::NotFound),
        (2, Event::GetPrompt(p)) => p.fail(HostError::InvalidParams("x")),
        (2, Event::Complete(c)) => c.fail(HostError::NotFound),
        (3, Event::CallTool(mut c)) => {
            return match c.progress(1.0, Some(4.0), Some("p")) {
                Ok(()) => Did::Progress,
                Err(crate::NotifyError::NoProgressToken) => Did::Kept,
                Err(e) => panic!("progress on a live ticket: {e}"),
            };
        }
        (4, Event::CallTool(mut c)) => {
            return match c.log(LogLevel::Warning, Some("l"), "w") {
                Ok(()) => Did::Log,
                Err(crate::NotifyError::Filtered) => Did::Kept,
                Err(e) => panic!("a log on a live ticket: {e}"),
            };
        }
        _ => return Did::Kept,
    };
    assert_eq!(r, Ok(()), "answering a live ticket through its event");
    Did::Answered
}

impl OpHarness {
    fn new(a: u8, c: u8) -> Self {
        let max_in_flight = 1 + usize::from(a & 3);
        let max_buffered = [1, 300, 4096, 1 << 20][usize::from(a >> 2) & 3];
        let frame_limit = [512, 1024, 2048, 700][usize::from(a >> 4) & 3];
        let depth_limit = [8, 16][usize::from(a >> 6) & 1];
        let mut cfg = Config::new("fuzz", "0");
        cfg.max_frame_len(frame_limit)
            .max_depth(depth_limit)
            .max_in_flight(max_in_flight)
            .max_buffered_output(max_buffered)
            .logging(a & 0x80 != 0)
            .completions(c & 1 == 0)
            .page_size(1 + usize::from((c >> 1) & 3))
            .server_info_in_meta(c & 8 != 0);
        Self {
            e: Engine::new(cfg, rich_catalog()),
            now: Instant::ZERO,
            max_in_flight,
            max_buffered,
            frame_limit,
            depth_limit,
            next_seq: 0,
            backlog: Vec::new(),
            taken: 0,
            queued: VecDeque::new(),
            eof: false,
            seen: Vec::new(),
            consumed: 0,
            parsed: 0,
            lines: VecDeque::new(),
            host_lines: HashMap::new(),
            ids: HashMap::new(),
            seqs: HashMap::new(),
            tickets: Vec::new(),
            unprocessed: false,
            progress_value: 1.0,
            trace: std::env::var_os("MCP_FUZZ_TRACE").is_some(),
        }
    }

    /// Output written so far (consumed and pending).
    fn total(&self) -> usize {
        self.consumed + self.e.pending_output().len()
    }

    /// The client sends a frame (the harness's request `seq`, if any).
    fn send(&mut self, mut bytes: Vec<u8>, seq: Option<u64>) {
        if !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        if self.trace {
            eprintln!("send {seq:?}: {}", String::from_utf8_lossy(&bytes).trim_end());
        }
        self.backlog.extend_from_slice(&bytes);
        self.queued.push_back((self.taken + self.backlog.len(), seq));
    }

    /// A fresh id for request `seq`, of a type `n` picks; no two requests share one, and
    /// no other frame carries one (garbage has no digits and no `~`).
    fn fresh_id(seq: u64, n: usize) -> Value {
        match n % 5 {
            0 => Value::from(seq),
            1 => Value::from(-(seq as i64) - 1),
            2 => Value::from(u64::MAX - seq),
            3 => Value::String(format!("~{seq}")),
            _ => Value::String(format!("~{seq}{}", "_".repeat(130))),
        }
    }

    /// A generated request (or notification) carrying marker `~seq`, with a fresh id or
    /// `reuse`.
    fn request(&mut self, b: &mut Bytes<'_>, reuse: Option<Value>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let id = match reuse {
            Some(v) => IdPlan::Use(v),
            None => match b.below(16) {
                0 => IdPlan::Absent,
                1 => IdPlan::Invalid,
                n => IdPlan::Use(Self::fresh_id(seq, n)),
            },
        };
        let token = match b.below(4) {
            0 | 1 => None,
            2 => Some(Value::String(format!("~p{seq}"))),
            _ => Some(Value::from(4_000_000_000u64 + seq)),
        };
        let marker = format!("~{seq}.");
        let cfg = MsgCfg {
            depth_limit: self.depth_limit,
            frame_limit: self.frame_limit,
            id,
            marker: Some(&marker),
            token,
            ticketed: true,
        };
        let frame = message(b, &cfg);
        let id = match frame.expect {
            Expect::Reply(v) => Some((v.to_string(), v)),
            _ => None,
        };
        let token = frame.token.map(|t| t.to_string());
        self.seqs.insert(seq, SeqInfo { id, method: frame.method, token, responded_at: None });
        self.send(frame.bytes, Some(seq));
    }

    /// A request that reuses the id of an earlier one.
    fn duplicate(&mut self, b: &mut Bytes<'_>) {
        let mut with_ids: Vec<&Value> =
            self.seqs.values().filter_map(|s| s.id.as_ref().map(|(_, v)| v)).collect();
        if with_ids.is_empty() {
            return;
        }
        with_ids.sort_by_key(|v| v.to_string());
        let v = with_ids[b.below(with_ids.len())].clone();
        self.request(b, Some(v));
    }

    /// `initialize` (opening a session-bound stream), then `notifications/initialized`.
    fn initialize(&mut self, b: &mut Bytes<'_>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let id = Self::fresh_id(seq, 0);
        let rev = b.pick(REVISIONS);
        let frame = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"{rev}\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"f\",\"version\":\"1\"}}}}}}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n"
        );
        let info = SeqInfo {
            id: Some((id.to_string(), id)),
            method: Some("initialize".into()),
            token: None,
            responded_at: None,
        };
        self.seqs.insert(seq, info);
        let (first, second) = frame.split_at(frame.find('\n').unwrap_or(0) + 1);
        self.send(first.as_bytes().to_vec(), Some(seq));
        self.send(second.as_bytes().to_vec(), None);
    }

    /// `notifications/cancelled` for a live request, any request, or none the harness sent.
    fn cancel(&mut self, b: &mut Bytes<'_>, how: u8) {
        let live: Vec<u64> =
            self.tickets.iter().filter(|t| t.state == TicketState::Live).map(|t| t.seq).collect();
        let mut any: Vec<u64> = self.seqs.iter().filter(|(_, s)| s.id.is_some()).map(|(&k, _)| k).collect();
        any.sort_unstable();
        let seq = match how % 4 {
            0 | 1 if !live.is_empty() => Some(live[b.below(live.len())]),
            0..=2 if !any.is_empty() => Some(any[b.below(any.len())]),
            _ => None,
        };
        let target = seq.and_then(|s| self.seqs.get(&s)).and_then(|s| s.id.as_ref()).map(|(_, v)| v.clone());
        let style = b.u8();
        let j = Json { b, style, depth: 0, max_nest: 0, broken: false, bias: false };
        let mut params: Vec<(String, Vec<u8>)> = Vec::new();
        match target {
            Some(v) => params.push(("requestId".into(), j.id_value(&v))),
            None => match how >> 2 & 3 {
                0 => params.push(("requestId".into(), b"1000000007".to_vec())),
                1 => params.push(("requestId".into(), j.str_value("~x"))),
                2 => params.push(("requestId".into(), b"null".to_vec())),
                _ => {}
            },
        }
        params.push(("reason".into(), j.str_value("r")));
        let mut j = Json { b: j.b, style, depth: 0, max_nest: 0, broken: false, bias: false };
        let p = j.object_at(2, &params);
        let members = [
            ("jsonrpc".to_owned(), j.str_value("2.0")),
            ("method".to_owned(), j.str_value("notifications/cancelled")),
            ("params".to_owned(), p),
        ];
        let frame = j.object_at(1, &members);
        self.send(frame, None);
    }

    /// A frame that is not a request: sanitized bytes (no digit, `~` or `\`, so no valid
    /// request and no id the harness tracks), a cut request, a blank or over-long line.
    fn garbage(&mut self, b: &mut Bytes<'_>) {
        let bytes = match b.below(4) {
            0 | 1 => b
                .bytes(300)
                .iter()
                .map(|&c| match c {
                    b'0'..=b'9' => b'x',
                    b'~' => b'-',
                    b'\\' => b'/',
                    c => c,
                })
                .collect(),
            2 => {
                let cfg = MsgCfg {
                    depth_limit: self.depth_limit,
                    frame_limit: self.frame_limit,
                    id: IdPlan::Random,
                    marker: None,
                    token: None,
                    ticketed: true,
                };
                let frame = message(b, &cfg).bytes;
                let cut = b.below(frame.len());
                frame[..cut].to_vec()
            }
            _ => {
                let mut line = if b.u8() & 1 == 0 { b"{\"jsonrpc\":\"".to_vec() } else { Vec::new() };
                line.resize(self.frame_limit + 1 + b.below(100), b'x');
                line
            }
        };
        self.send(bytes, None);
    }

    /// Offers up to `max` bytes of the backlog.
    fn feed(&mut self, max: usize) {
        if self.eof {
            if !self.backlog.is_empty() {
                assert_eq!(self.e.handle_input(self.now, &self.backlog), 0, "input taken after the end");
            }
            return;
        }
        let k = max.min(self.backlog.len());
        if k == 0 {
            return;
        }
        let n = self.e.handle_input(self.now, &self.backlog[..k]);
        if n > 0 {
            // (Taking nothing, it does not process frames: the next poll does.)
            self.unprocessed = false;
        }
        assert!(n <= k);
        if n < k {
            assert_eq!(self.e.input_capacity(), 0, "took {n} of {k} bytes with room left");
        }
        self.backlog.drain(..n);
        self.taken += n;
        while let Some(&(end, seq)) = self.queued.front() {
            if end > self.taken {
                break;
            }
            self.queued.pop_front();
            self.delivered(seq);
        }
    }

    fn delivered(&mut self, seq: Option<u64>) {
        if let Some((key, _)) = seq.and_then(|s| self.seqs.get(&s)).and_then(|s| s.id.as_ref()) {
            self.ids.entry(key.clone()).or_default().delivered += 1;
        }
    }

    /// The client closes its side: a frame taken but for its newline is processed.
    fn eof(&mut self) {
        if self.eof {
            return;
        }
        self.e.handle_eof(self.now);
        self.unprocessed = false;
        self.eof = true;
        if let Some(&(end, seq)) = self.queued.front()
            && end == self.taken + 1
        {
            self.delivered(seq);
        }
        self.queued.clear();
        assert_eq!(self.e.input_capacity(), 0);
    }

    /// Polls one event, or every event; the host acts on each (`b` says how).
    fn poll(&mut self, b: &mut Bytes<'_>, all: bool, answer_all: bool) {
        loop {
            let Some(ev) = self.e.poll_event() else {
                self.unprocessed = false;
                break;
            };
            self.unprocessed = true;
            if self.trace {
                eprintln!("event {ev:?}");
            }
            if let Event::Cancelled(t) = ev {
                let at = self.consumed + self.e.pending_output().len();
                let Some(tr) = self.tickets.iter_mut().find(|x| x.ticket == t) else {
                    panic!("a cancellation of a ticket never handed out");
                };
                assert_eq!(tr.state, TicketState::Live, "a cancellation of a ticket no longer live");
                tr.state = TicketState::Cancelled;
                tr.cancelled_at = Some(at);
                let key = self.seqs.get(&tr.seq).and_then(|s| s.id.as_ref()).map(|(k, _)| k.clone());
                let key = key.unwrap_or_else(|| panic!("a ticket for request {} that has no id", tr.seq));
                self.ids.entry(key).or_default().cancelled += 1;
            } else {
                let ticket = ev.ticket();
                let (kind, text) = match &ev {
                    Event::CallTool(c) => (EvKind::Tool, c.arguments.raw()),
                    Event::ReadResource(r) => (EvKind::Resource, r.uri),
                    Event::GetPrompt(p) => (EvKind::Prompt, p.arguments.raw()),
                    Event::Complete(c) => (EvKind::Completion, c.value),
                    Event::Cancelled(_) => unreachable!("handled above"),
                };
                let Some(seq) = marker_in(text) else {
                    panic!("an event without the request's marker: {text:?}")
                };
                let Some(info) = self.seqs.get(&seq) else {
                    panic!("an event for request {seq}, never sent")
                };
                let want = match kind {
                    EvKind::Tool => "tools/call",
                    EvKind::Resource => "resources/read",
                    EvKind::Prompt => "prompts/get",
                    EvKind::Completion => "completion/complete",
                };
                assert_eq!(
                    info.method.as_deref(),
                    Some(want),
                    "an event of the wrong kind for request {seq}"
                );
                assert!(info.id.is_some(), "an event for request {seq}, which the engine must not answer");
                assert!(!self.tickets.iter().any(|x| x.ticket == ticket), "a ticket handed out twice");
                let has_token = info.token.is_some();
                let how = if answer_all { 0 } else { b.u8() };
                let did = host_act(ev, how);
                let mut tr = Tracked {
                    ticket,
                    seq,
                    kind,
                    state: TicketState::Live,
                    cancel_due: false,
                    cancelled_at: None,
                    last_progress: f64::NEG_INFINITY,
                };
                // The host wrote one line, at the end of the output.
                let last_line = || {
                    let out = self.e.pending_output();
                    let start = out[..out.len().saturating_sub(1)]
                        .iter()
                        .rposition(|&c| c == b'\n')
                        .map_or(0, |i| i + 1);
                    self.consumed + start
                };
                match did {
                    Did::Answered => {
                        tr.state = TicketState::Answered;
                        self.host_lines.insert(last_line(), HostLine::Response(seq));
                    }
                    Did::Progress => {
                        assert!(has_token, "progress accepted for a request without a token");
                        tr.last_progress = 1.0;
                        self.host_lines.insert(last_line(), HostLine::Progress(seq));
                    }
                    Did::Log => {
                        self.host_lines.insert(last_line(), HostLine::Log);
                    }
                    Did::Kept => {}
                }
                self.tickets.push(tr);
                assert!(self.e.in_flight() <= self.max_in_flight);
            }
            if !all {
                return;
            }
        }
        // Every event polled: the engine holds exactly the live tickets.
        let live = self.tickets.iter().filter(|t| t.state == TicketState::Live).count();
        assert_eq!(self.e.in_flight(), live, "tickets in flight");
        assert!(self.tickets.iter().all(|t| !t.cancel_due || t.state == TicketState::Cancelled));
    }

    /// Answers a live ticket: the right kind, an error, or the wrong kind (refused).
    fn answer(&mut self, b: &mut Bytes<'_>, how: u8) {
        let live: Vec<usize> =
            (0..self.tickets.len()).filter(|&i| self.tickets[i].state == TicketState::Live).collect();
        if live.is_empty() {
            return;
        }
        let i = live[b.below(live.len())];
        self.answer_one(i, how);
    }

    fn answer_one(&mut self, i: usize, how: u8) {
        let (t, kind) = (self.tickets[i].ticket, self.tickets[i].kind);
        let before = self.total();
        let unprocessed = self.unprocessed;
        let text = [Content::text("later")];
        let messages = [PromptMessage::assistant(Content::text("x"))];
        let wrong = how % 8 == 6;
        let e = &mut self.e;
        let r = match (how % 8, kind) {
            (4, _) => e.answer_error(t, HostError::Internal("late")),
            (5, _) => e.answer_error(t, HostError::NotFound),
            (7, _) => e.answer_error(t, HostError::InvalidParams("p")),
            (6, EvKind::Tool) => e.answer_completion(t, &["x"], None, false),
            (6, _) => e.answer_tool(t, &ToolOutput::new(&text)),
            (_, EvKind::Tool) => e.answer_tool(t, &ToolOutput::error(&text)),
            (_, EvKind::Resource) => e.answer_resource(t, &[ResourceContents::text("x://r", None, "x")]),
            (_, EvKind::Prompt) => e.answer_prompt(t, &PromptOutput::new(&messages)),
            (_, EvKind::Completion) => e.answer_completion(t, &["a", "b"], Some(1), false),
        };
        self.unprocessed = false;
        match r {
            Ok(()) => {
                assert!(!wrong, "the wrong kind of answer was accepted");
                self.tickets[i].state = TicketState::Answered;
                self.host_lines.insert(before, HostLine::Response(self.tickets[i].seq));
            }
            Err(err) => {
                match err {
                    AnswerError::WrongKind => assert!(wrong, "the right kind of answer was refused"),
                    AnswerError::UnknownTicket => self.tickets[i].cancel_due = true,
                    e => panic!("answering ticket {t:?}: {e}"),
                }
                if !unprocessed {
                    assert_eq!(self.total(), before, "a refused answer wrote output");
                }
            }
        }
    }

    /// Commands on a ticket that is answered or cancelled: all refused, nothing written.
    fn answer_dead(&mut self, b: &mut Bytes<'_>, how: u8) {
        let dead: Vec<usize> =
            (0..self.tickets.len()).filter(|&i| self.tickets[i].state != TicketState::Live).collect();
        if dead.is_empty() {
            return;
        }
        let t = self.tickets[dead[b.below(dead.len())]].ticket;
        let before = self.total();
        let unprocessed = self.unprocessed;
        let e = &mut self.e;
        let r = match how % 6 {
            0 => e.answer_tool(t, &ToolOutput::new(&[])),
            1 => e.answer_resource(t, &[]),
            2 => e.answer_prompt(t, &PromptOutput::new(&[])),
            3 => e.answer_completion(t, &[], None, false),
            _ => e.answer_error(t, HostError::NotFound),
        };
        self.unprocessed = false;
        assert_eq!(r, Err(AnswerError::UnknownTicket), "a command on a dead ticket");
        assert_eq!(e.notify_progress(t, 1e9, None, None), Err(crate::NotifyError::UnknownTicket));
        assert_eq!(e.notify_log(t, LogLevel::Emergency, None, "x"), Err(crate::NotifyError::UnknownTicket));
        if !unprocessed {
            assert_eq!(self.total(), before, "a refused answer wrote output");
        }
    }

    /// `notify_progress` (increasing, repeated, or not finite) or `notify_log` on any
    /// ticket.
    fn notify(&mut self, b: &mut Bytes<'_>, how: u8, log: bool) {
        if self.tickets.is_empty() {
            return;
        }
        let i = b.below(self.tickets.len());
        let (t, seq, state, last) = (
            self.tickets[i].ticket,
            self.tickets[i].seq,
            self.tickets[i].state,
            self.tickets[i].last_progress,
        );
        let before = self.total();
        let (r, progress) = if log {
            let level = LogLevel::parse(LOG_LEVEL_NAMES[usize::from(how & 7)]).unwrap_or(LogLevel::Info);
            let r = if how & 8 != 0 {
                // Data that cannot be serialized: refused, nothing written.
                let bad: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into_iter().collect();
                self.e.notify_log(t, level, Some("l"), &bad)
            } else {
                self.e.notify_log(t, level, None, &serde_json::json!({ "n": how }))
            };
            (r, 0.0)
        } else {
            let p = match how % 4 {
                0 => last,
                1 => f64::INFINITY,
                _ => {
                    self.progress_value += 1.0;
                    self.progress_value
                }
            };
            (self.e.notify_progress(t, p, (how & 4 != 0).then_some(p * 2.0), Some("m")), p)
        };
        use crate::NotifyError as N;
        match (state, r) {
            (TicketState::Answered | TicketState::Cancelled, r) => assert_eq!(r, Err(N::UnknownTicket)),
            (_, Ok(())) => {
                if log {
                    assert!(how & 8 == 0, "unserializable log data was accepted");
                    self.host_lines.insert(before, HostLine::Log);
                } else {
                    assert!(
                        self.seqs[&seq].token.is_some(),
                        "progress accepted for a request without a token"
                    );
                    assert!(progress > last && progress.is_finite());
                    self.tickets[i].last_progress = progress;
                    self.host_lines.insert(before, HostLine::Progress(seq));
                }
            }
            (_, Err(N::UnknownTicket)) => self.tickets[i].cancel_due = true,
            (_, Err(N::NoProgressToken)) => assert!(self.seqs[&seq].token.is_none()),
            (_, Err(N::NotIncreasing)) => assert!(progress <= last),
            (_, Err(N::NotFinite)) => assert!(!progress.is_finite() || (log && how & 8 != 0)),
            (_, Err(N::Filtered)) => assert!(log),
        }
        if r.is_err() {
            assert_eq!(self.total(), before, "a refused notification wrote output");
        }
    }

    /// The client reads `k` bytes of output.
    fn consume(&mut self, k: usize) {
        self.observe();
        let n = k.min(self.e.pending_output().len());
        self.e.consume_output(k);
        if k > 0 {
            self.unprocessed = false;
        }
        self.consumed += n;
        self.observe();
    }

    /// Time passes (or seems to go back): stdio arms no timer.
    fn timeout(&mut self, d: u8) {
        let now = if d == 255 { Instant::ZERO } else { self.now + Duration::from_millis(u64::from(d) * 10) };
        self.now = self.now.max(now);
        self.e.handle_timeout(now);
        assert_eq!(self.e.poll_timeout(), None);
    }

    /// Reads the output written since the last look and checks each new line.
    fn observe(&mut self) {
        let pending = self.e.pending_output();
        let known = self.seen.len() - self.consumed;
        assert!(pending.len() >= known, "output shrank without being consumed");
        assert!(pending[..known] == self.seen[self.consumed..], "output already written changed");
        assert!(pending.is_empty() || pending.ends_with(b"\n"), "pending output ends inside a line");
        self.seen.extend_from_slice(&pending[known..]);
        while let Some(i) = memchr::memchr(b'\n', &self.seen[self.parsed..]) {
            let (start, end) = (self.parsed, self.parsed + i + 1);
            self.parsed = end;
            self.line(start, end);
        }
    }

    fn line(&mut self, start: usize, end: usize) {
        if self.trace {
            eprintln!("read @{start}: {}", String::from_utf8_lossy(&self.seen[start..end - 1]));
        }
        let v = check_line(&self.seen[start..end - 1]);
        let host = self.host_lines.remove(&start);
        self.lines.push_back((start, end, host.is_some()));
        if let Some(method) = v.get("method") {
            match host {
                Some(HostLine::Progress(seq)) => {
                    assert_eq!(method, "notifications/progress", "{v}");
                    let token = v["params"]["progressToken"].to_string();
                    let info = &self.seqs[&seq];
                    assert_eq!(Some(&token), info.token.as_ref(), "progress with another request's token");
                    assert!(info.responded_at.is_none(), "progress after the response: {v}");
                    let tr = self.tickets.iter().find(|t| t.seq == seq);
                    assert!(
                        tr.is_none_or(|t| t.cancelled_at.is_none_or(|c| start < c)),
                        "progress after a cancellation"
                    );
                }
                Some(HostLine::Log) => assert_eq!(method, "notifications/message", "{v}"),
                _ => panic!("a notification the host did not send: {v}"),
            }
            return;
        }
        let Some(id) = v.get("id") else {
            assert!(host.is_none(), "the host's answer has no id: {v}");
            return;
        };
        let key = id.to_string();
        match self.ids.get_mut(&key) {
            Some(c) => {
                c.responses += 1;
                assert!(c.responses <= c.delivered, "id {key} answered more often than sent: {v}");
            }
            None => assert!(
                id.as_str().is_some_and(|s| !s.starts_with('~')),
                "a response to an id the engine never took, or to a frame it must not answer: {v}"
            ),
        }
        match host {
            Some(HostLine::Response(seq)) => {
                let info = self.seqs.get_mut(&seq).unwrap_or_else(|| unreachable!("a tracked request"));
                assert_eq!(
                    Some(&key),
                    info.id.as_ref().map(|(k, _)| k),
                    "the host's answer went to another id"
                );
                info.responded_at = Some(start);
            }
            Some(other) => panic!("{other:?} is a response: {v}"),
            None => {}
        }
        // A request the harness saw cancelled gets no response (unless its id was reused).
        if self.ids.get(&key).is_some_and(|c| c.delivered == 1) {
            for t in &self.tickets {
                let same = self.seqs.get(&t.seq).and_then(|s| s.id.as_ref()).is_some_and(|(k, _)| *k == key);
                assert!(
                    !(same && t.state == TicketState::Cancelled),
                    "a response to a cancelled request: {v}"
                );
            }
        }
    }

    /// After every operation: output checked; buffered output bounded; slots bounded.
    fn check(&mut self) {
        self.observe();
        while self.lines.front().is_some_and(|&(_, end, _)| end <= self.consumed) {
            self.lines.pop_front();
        }
        let engine_bytes: usize = self
            .lines
            .iter()
            .filter(|(_, _, host)| !host)
            .map(|&(start, end, _)| end - start.max(self.consumed))
            .sum();
        // One frame's answer echoes at most two strings of the frame, escaped (6 bytes a
        // character at worst), plus a list page.
        let one_frame = 12 * self.frame_limit + 4096;
        assert!(
            engine_bytes <= self.max_buffered + one_frame,
            "{engine_bytes} bytes of output buffered (the limit is {})",
            self.max_buffered
        );
        assert!(self.e.in_flight() <= self.max_in_flight);
    }

    /// The rest of the session: the client sends what is left and closes; the host answers
    /// everything; the client reads everything. Then the stream must be finished, every
    /// ticket answered or cancelled, every request answered exactly once unless cancelled.
    fn finish(&mut self, b: &mut Bytes<'_>) {
        let mut idle = 0;
        for round in 0.. {
            assert!(round < 100_000, "the session never ends");
            let before = (self.taken, self.total(), self.tickets.len(), self.eof);
            self.poll(b, true, true);
            for i in 0..self.tickets.len() {
                if self.tickets[i].state == TicketState::Live {
                    self.answer_one(i, 0);
                }
            }
            self.poll(b, true, true);
            self.feed(usize::MAX);
            if self.backlog.is_empty() {
                self.eof();
            }
            self.consume(usize::MAX);
            self.check();
            if self.eof && self.e.pending_output().is_empty() && self.e.in_flight() == 0 {
                self.poll(b, true, true);
                if self.e.pending_output().is_empty() && self.e.in_flight() == 0 {
                    break;
                }
            }
            let after = (self.taken, self.total(), self.tickets.len(), self.eof);
            idle = if before == after { idle + 1 } else { 0 };
            assert!(idle < 3, "stalled: {} bytes unsent, engine {:?}", self.backlog.len(), self.e);
        }
        assert!(self.e.is_finished(), "the stream is not finished: {:?}", self.e);
        for t in &self.tickets {
            assert_ne!(t.state, TicketState::Live);
            assert!(
                !t.cancel_due || t.state == TicketState::Cancelled,
                "a refused ticket was never cancelled"
            );
        }
        assert!(self.host_lines.is_empty(), "host lines never seen: {:?}", self.host_lines);
        for (key, c) in &self.ids {
            assert_eq!(c.responses + c.cancelled, c.delivered, "request {key}: {c:?}");
        }
    }
}

/// A stdio session as a sequence of operations.
///
/// Input: two settings bytes (1-4 ticket slots, 1 byte to 1 MiB of output buffered, the
/// frame and depth limits, logging, completions, page size), then operations, each an op
/// byte (low nibble: the operation; high nibble: a choice) and its arguments:
/// - 0-2: the client sends a generated request (`message`, preferring the methods that
///   reach the host; a fresh id of any type, sometimes none or an invalid one; maybe a
///   progress token), and maybe feeds it at once;
/// - 3: a request reusing an earlier request's id;
/// - 4: `notifications/cancelled` for a live request, an answered one, or an unknown id;
/// - 5: garbage: bytes without digits (no valid request, no tracked id), a cut request, a
///   blank or over-long line;
/// - 6: the engine is offered some or all of the bytes the client sent;
/// - 7: poll one event or all; the host answers at once, fails, reports progress, logs,
///   or keeps the ticket;
/// - 8: answer a kept ticket later (the right kind, an error, the wrong kind);
/// - 9: answer, notify on a ticket already answered or cancelled;
/// - 10, 11: `notify_progress` (increasing, repeated, infinite) / `notify_log` (any level,
///   unserializable data) on any ticket;
/// - 12: the client reads some or all output;
/// - 13: time passes (or a clock goes back);
/// - 14: the client closes its side (choice 0) or sends a request;
/// - 15: `initialize` and `notifications/initialized` (choice 0) or a request.
///
/// Then the session ends: what is left is sent, the host answers everything, the client
/// reads everything.
///
/// Asserts: no panic; every output line is a JSON-RPC object (`check_line`); output once
/// written never changes and always ends a line; a response's id is one the engine took
/// (never a request it must not answer), and no id is answered more often than it was
/// sent; the host's answer is the response to its request's id; progress carries the
/// request's token, never after its response or a cancellation the host saw; no response
/// to a cancelled request; a cancellation is only of a live ticket; an event is for a
/// request whose method calls for it, once; every command on an answered or cancelled
/// ticket is refused, and a refused command writes nothing; `handle_input` takes less
/// than offered only when its buffer is full, nothing after the end; buffered output
/// written for frames stays under `max_buffered_output` plus one frame's answer; tickets
/// in flight stay within the slots and, once every event is polled, match the live
/// tickets; at the end the stream is finished, and every request the engine took with a
/// valid id was answered exactly once or cancelled.
pub fn op_sequence(data: &[u8]) {
    let mut b = Bytes::new(data);
    let (a, c) = (b.u8(), b.u8());
    let mut h = OpHarness::new(a, c);
    for _ in 0..MAX_OPS {
        if b.is_empty() {
            break;
        }
        let op = b.u8();
        let arg = op >> 4;
        if h.trace {
            eprintln!("op {} ({arg})", op & 15);
        }
        match op & 15 {
            0..=2 => {
                h.request(&mut b, None);
                if arg & 1 != 0 {
                    h.feed(usize::MAX);
                }
            }
            3 => h.duplicate(&mut b),
            4 => {
                h.cancel(&mut b, arg);
                if arg & 8 != 0 {
                    h.feed(usize::MAX);
                }
            }
            5 => h.garbage(&mut b),
            6 => {
                let k = if arg & 1 != 0 { usize::MAX } else { usize::from(b.u16()) % 700 };
                h.feed(k);
            }
            7 => h.poll(&mut b, arg & 1 != 0, false),
            8 => h.answer(&mut b, arg),
            9 => h.answer_dead(&mut b, arg),
            10 => h.notify(&mut b, arg, false),
            11 => h.notify(&mut b, arg, true),
            12 => {
                let k = if arg & 1 != 0 { usize::MAX } else { usize::from(b.u16()) % 2000 };
                h.consume(k);
            }
            13 => h.timeout(b.u8()),
            14 if arg == 0 => h.eof(),
            15 if arg == 0 => h.initialize(&mut b),
            _ => h.request(&mut b, None),
        }
        h.check();
    }
    h.finish(&mut b);
}
