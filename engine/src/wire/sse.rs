//! Server-Sent Events written as the chunks of an HTTP/1.1 response (`text/event-stream`):
//! the response head, events (`data:` lines, an `id:` for `Last-Event-ID` resumption),
//! comments (keep-alives, notes), `retry:`; and the same events unframed, for a host that
//! frames the stream itself. Above the HTTP/1.1 codec (`http1`), whose head and chunk
//! writers it uses.

use super::http1::{finish_head, push_hex, push_status_line, push_text};

/// Appends the head of a Server-Sent Events response: `200 OK`, `content-type:
/// text/event-stream`, `cache-control: no-cache`, `x-accel-buffering: no`,
/// `transfer-encoding: chunked`, then `connection: close` (when `close`) and the `extra`
/// headers. Events follow with [`write_sse_event`], the end with
/// [`write_chunked_end`](super::http1::write_chunked_end).
pub(crate) fn write_sse_head(out: &mut Vec<u8>, extra: &[(&str, &str)], close: bool) {
    push_status_line(out, 200, "OK");
    out.extend_from_slice(
        b"content-type: text/event-stream\r\ncache-control: no-cache\r\nx-accel-buffering: no\r\n\
          transfer-encoding: chunked\r\n",
    );
    finish_head(out, extra, close);
}

/// Appends one chunk holding the event `data: {data}\n\n`. `data` should hold no line break
/// (JSON-RPC messages never do); if it does, each line becomes its own `data:` field, which
/// SSE clients join back with `\n`.
pub(crate) fn write_sse_event(out: &mut Vec<u8>, data: &[u8]) {
    write_sse(out, None, data);
}

/// Appends one chunk holding an SSE comment line (`:`), which readers ignore: a keep-alive.
pub(crate) fn write_sse_comment(out: &mut Vec<u8>) {
    out.extend_from_slice(b"2\r\n:\n\r\n");
}

/// Appends one chunk holding an SSE comment `: {text}` (line breaks in `text` become
/// spaces), which readers ignore.
pub(crate) fn write_sse_note(out: &mut Vec<u8>, text: &str) {
    push_hex(out, 2 + text.len() + 2);
    out.extend_from_slice(b"\r\n: ");
    out.extend(text.bytes().map(|b| if matches!(b, b'\r' | b'\n') { b' ' } else { b }));
    out.extend_from_slice(b"\n\n\r\n");
}

/// Appends one chunk holding an SSE `retry: {ms}` field (when the client reconnects).
pub(crate) fn write_sse_retry(out: &mut Vec<u8>, ms: u32) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(ms).as_bytes();
    push_hex(out, 7 + digits.len() + 2);
    out.extend_from_slice(b"\r\nretry: ");
    out.extend_from_slice(digits);
    out.extend_from_slice(b"\n\n\r\n");
}

/// Like [`write_sse_event`], with an `id: {id}` field first (for `Last-Event-ID` resumption).
/// CR, LF and NUL in `id` are written as spaces.
pub(crate) fn write_sse_event_with_id(out: &mut Vec<u8>, id: &str, data: &[u8]) {
    write_sse(out, Some(id), data);
}

/// The `data:` field name of an SSE event.
const SSE_FIELD: &[u8] = b"data: ";

/// Appends one chunk holding an SSE event.
fn write_sse(out: &mut Vec<u8>, id: Option<&str>, data: &[u8]) {
    let mut len = id.map_or(0, |id| 4 + id.len() + 1) + 1;
    for_each_line(data, |line| len += SSE_FIELD.len() + line.len() + 1);
    push_hex(out, len);
    out.extend_from_slice(b"\r\n");
    push_sse_event(out, id, data);
    out.extend_from_slice(b"\r\n");
}

/// Appends an SSE event without chunked framing (`id: {id}\n` when given, a `data: ` line
/// per line of `data`, the empty line), for a host that frames the stream itself.
pub(crate) fn push_sse_event(out: &mut Vec<u8>, id: Option<&str>, data: &[u8]) {
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        push_text(out, id);
        out.push(b'\n');
    }
    for_each_line(data, |line| {
        out.extend_from_slice(SSE_FIELD);
        out.extend_from_slice(line);
        out.push(b'\n');
    });
    out.push(b'\n');
}

/// Calls `f` with each line of `data`, split at CRLF, CR or LF (one empty line for empty data).
fn for_each_line(data: &[u8], mut f: impl FnMut(&[u8])) {
    let mut rest = data;
    while let Some(i) = memchr::memchr2(b'\r', b'\n', rest) {
        f(&rest[..i]);
        let skip = if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
        rest = &rest[i + skip..];
    }
    f(rest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::http1::{BodyKind, Conn, Input, Limits, write_chunked_end};

    #[test]
    fn writers_are_byte_exact() {
        let mut out = Vec::new();
        write_sse_head(&mut out, &[("mcp-session-id", "s1")], false);
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
              x-accel-buffering: no\r\ntransfer-encoding: chunked\r\nmcp-session-id: s1\r\n\r\n"
        );
        out.clear();
        write_sse_head(&mut out, &[], true);
        assert!(out.ends_with(b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"));
        out.clear();
        let msg = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        write_sse_event(&mut out, msg);
        assert_eq!(out, [b"2c\r\ndata: ".as_slice(), msg, b"\n\n\r\n"].concat());
        out.clear();
        write_sse_event(&mut out, b"");
        assert_eq!(out, b"8\r\ndata: \n\n\r\n");
        out.clear();
        write_sse_event(&mut out, b"a\nb\r\nc\rd");
        assert_eq!(out, b"21\r\ndata: a\ndata: b\ndata: c\ndata: d\n\n\r\n");
        out.clear();
        write_sse_event_with_id(&mut out, "7", b"{}");
        assert_eq!(out, b"10\r\nid: 7\ndata: {}\n\n\r\n");
        out.clear();
        write_sse_comment(&mut out);
        assert_eq!(out, b"2\r\n:\n\r\n");
        out.clear();
        write_sse_note(&mut out, "gap:\r\nlost");
        assert_eq!(out, b"e\r\n: gap:  lost\n\n\r\n");
        out.clear();
        write_sse_retry(&mut out, 1500);
        assert_eq!(out, b"d\r\nretry: 1500\n\n\r\n");
        out.clear();
        push_sse_event(&mut out, Some("7"), b"a\nb");
        assert_eq!(out, b"id: 7\ndata: a\ndata: b\n\n");
    }

    /// The chunk size an SSE chunk declares matches its payload: the codec reads the
    /// chunks back as the events.
    #[test]
    fn sse_chunks_decode_back() {
        let mut out = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        write_sse_event(&mut out, &[b'x'; 300]);
        write_sse_event_with_id(&mut out, "id\r\n", b"l1\nl2");
        write_sse_note(&mut out, "n");
        write_sse_retry(&mut out, 7);
        write_sse_comment(&mut out);
        write_chunked_end(&mut out);
        let mut conn = Conn::new(Limits::default());
        assert_eq!(conn.handle_bytes(&out), out.len());
        {
            let mut headers = [httparse::EMPTY_HEADER; 16];
            assert!(matches!(conn.poll(&mut headers), Input::Head(h) if h.body == BodyKind::Chunked));
        }
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let expected = [
            b"data: ".as_slice(),
            &[b'x'; 300],
            b"\n\nid: id  \ndata: l1\ndata: l2\n\n: n\n\nretry: 7\n\n:\n",
        ]
        .concat();
        assert!(matches!(conn.poll(&mut headers), Input::Body(b) if b == expected.as_slice()));
    }

    #[test]
    fn steady_state_allocates_nothing() {
        let mut out = Vec::with_capacity(64 * 1024);
        let info = allocation_counter::measure(|| {
            for _ in 0..300 {
                out.clear();
                write_sse_head(&mut out, &[("mcp-session-id", "s")], false);
                write_sse_event(&mut out, b"{}");
                write_sse_event_with_id(&mut out, "s/1", b"{}");
                write_sse_note(&mut out, "gap");
                write_sse_retry(&mut out, 1000);
                write_sse_comment(&mut out);
                push_sse_event(&mut out, None, b"{}");
                write_chunked_end(&mut out);
            }
        });
        assert_eq!(info.count_total, 0, "{info:?}");
    }
}
