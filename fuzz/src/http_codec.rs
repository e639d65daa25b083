//! http_codec: the HTTP/1.1 connection codec.

use mcp_engine::internal::{BodyKind, Conn, HttpError, Input, Limits};

use crate::common::MAX_HTTP_INPUT;

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

/// The HTTP/1.1 codec (`Conn`). The first byte picks the limits (two top bits) and
/// the chunk size (1 to 64) the rest is fed in. The same bytes fed whole, in chunks and
/// byte by byte give the same events (heads, bodies, errors); `handle_bytes` takes exactly
/// `capacity()` bytes, or all when fewer; the connection never stalls with input left; a head's raw
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
    let mut conn = Conn::new(limits);
    let mut run = CodecRun { events: Vec::new(), taken: 0, cut_short: false };
    let mut fed = 0;
    for piece in input.chunks(chunk) {
        let mut off = 0;
        let mut idle = 0;
        loop {
            let capacity = conn.capacity();
            let n = conn.handle_bytes(&piece[off..]);
            let given = piece.len() - off;
            assert_eq!(
                n,
                capacity.min(given),
                "took {n} of {given} bytes with a capacity of {capacity}: {conn:?}"
            );
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
fn codec_drain(conn: &mut Conn, limits: Limits, run: &mut CodecRun) -> Option<HttpError> {
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
fn codec_sticky(conn: &mut Conn, e: HttpError, rest: &[u8]) {
    fn same(conn: &mut Conn, e: HttpError) {
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
