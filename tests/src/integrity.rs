//! Every byte intact through a front end: `echo` calls of chosen sizes, written to a real
//! socket or pipe in chosen pieces (pipelined on one connection), their answers read back
//! and compared byte for byte. Used by `tests/integrity.rs` (the mio and tokio servers,
//! both stdio loops) and by the tower service's tests in `io-tokio`.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::wire::{Response, session_post};

/// Hang protection only: no assertion depends on it.
pub const HANG: Duration = Duration::from_secs(120);

/// The HTTP body cap (the default).
pub const MAX_BODY: usize = 1 << 20;

/// The characters an echoed text is made of: ASCII, characters JSON escapes, and UTF-8
/// sequences of two, three and four bytes, so that a byte moved, dropped or repeated
/// anywhere shows (as other text, broken UTF-8 or broken JSON).
const ALPHABET: &[char] = &[
    'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r', 's', 't', 'u',
    'v', 'w', 'x', 'y', 'z', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', ' ', '"', '\\', '\n', 'é',
    '€', '𝄞',
];

/// How many bytes `c` takes inside a JSON string (as `serde_json` writes it).
fn encoded_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' => 2,
        c => c.len_utf8(),
    }
}

/// A text drawn from `seed` whose JSON string (quotes excluded) is exactly `encoded`
/// bytes long.
pub fn text(seed: u64, encoded: usize) -> String {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut out = String::with_capacity(encoded);
    let mut left = encoded;
    while left > 0 {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let c = ALPHABET[(r >> 33) as usize % ALPHABET.len()];
        let c = if encoded_len(c) > left { 'a' } else { c };
        left -= encoded_len(c);
        out.push(c);
    }
    out
}

/// The body of a `2026-07-28` `tools/call` of `echo` with `text`.
pub fn echo_body(id: u64, text: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": { "text": text },
            "_meta": crate::modern_meta(),
        }
    })
    .to_string()
}

/// An `echo` call whose body is exactly `len` bytes (at least the length of one with an
/// empty text), and its text drawn from `seed`.
pub fn echo_of_len(id: u64, seed: u64, len: usize) -> (String, String) {
    let bare = echo_body(id, "").len();
    assert!(len >= bare, "an echo body of id {id} takes at least {bare} bytes");
    let text = text(seed, len - bare);
    let body = echo_body(id, &text);
    assert_eq!(body.len(), len);
    (body, text)
}

/// A `POST /mcp` of `body` with the headers a `2026-07-28` client sends (`Mcp-Method`,
/// `Mcp-Name` taken from the body) and `extra` header lines (each ending in CRLF).
pub fn post(host: &str, body: &str, extra: &str) -> Vec<u8> {
    let v: Value = serde_json::from_str(body).expect("a JSON body");
    let mut s = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n");
    s.push_str("Accept: application/json, text/event-stream\r\n");
    if v["params"]["_meta"].is_object() {
        s.push_str("MCP-Protocol-Version: 2026-07-28\r\n");
        s.push_str(&format!("Mcp-Method: {}\r\n", v["method"].as_str().unwrap_or_default()));
        if let Some(name) = v["params"]["name"].as_str() {
            s.push_str(&format!("Mcp-Name: {name}\r\n"));
        }
    }
    s.push_str(extra);
    s.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.into_bytes()
}

/// The sizes of the writes that send `total` bytes: `pieces` first (each at least one
/// byte, cut short at the end), then the rest at once.
pub fn writes(total: usize, pieces: &[usize]) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut left = total;
    for &p in pieces {
        if left == 0 {
            break;
        }
        let n = p.clamp(1, left);
        sizes.push(n);
        left -= n;
    }
    if left > 0 {
        sizes.push(left);
    }
    sizes
}

/// Writes `bytes` to `w` in writes of `sizes` (see [`writes`]), each flushed, on a thread
/// of its own (so that the caller reads the answers meanwhile: a server stops reading a
/// client that does not read); the thread gives `w` back.
pub fn write_in<W: Write + Send + 'static>(mut w: W, bytes: Vec<u8>, sizes: Vec<usize>) -> JoinHandle<W> {
    thread::spawn(move || {
        let mut at = 0;
        for n in sizes {
            w.write_all(&bytes[at..at + n]).expect("write to the server");
            w.flush().expect("flush");
            at += n;
        }
        assert_eq!(at, bytes.len(), "the writes cover the bytes");
        w
    })
}

/// Reads one HTTP/1.1 response (its body framed by `Content-Length`); `None` at end of
/// input before its first byte.
pub fn read_response(r: &mut impl BufRead) -> io::Result<Option<Response>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let status = line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').unwrap_or_else(|| panic!("not a header line: {l:?}"));
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse::<usize>().expect("a content length"));
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    Ok(Some(Response { status, headers, body }))
}

/// Reads one newline-delimited JSON frame; `None` at end of input.
pub fn read_frame(r: &mut impl BufRead) -> io::Result<Option<Value>> {
    let mut line = Vec::new();
    if r.read_until(b'\n', &mut line)? == 0 {
        return Ok(None);
    }
    assert!(line.ends_with(b"\n"), "a frame without its newline");
    Ok(Some(serde_json::from_slice(&line).unwrap_or_else(|e| {
        panic!("a frame that is not JSON ({e}): {}", String::from_utf8_lossy(&line[..line.len().min(300)]))
    })))
}

/// Checks that `answer` is the result of `echo` call `id` with `text`; says where it
/// differs otherwise.
pub fn check_echo(answer: &Value, id: u64, text: &str) -> Result<(), String> {
    if answer["id"] != id {
        return Err(format!("an answer to id {} where {id} was due: {}", answer["id"], short(answer)));
    }
    let Some(got) = answer["result"]["content"][0]["text"].as_str() else {
        return Err(format!("no text in the answer to {id}: {}", short(answer)));
    };
    if got == text {
        return Ok(());
    }
    let at = got.bytes().zip(text.bytes()).position(|(a, b)| a != b).unwrap_or(got.len().min(text.len()));
    Err(format!("echo {id}: {} bytes back for {}, different from byte {at}", got.len(), text.len()))
}

/// [`check_echo`] of an HTTP response: a `200` JSON body.
pub fn check_echo_response(r: &Response, id: u64, text: &str) -> Result<(), String> {
    if r.status != 200 {
        return Err(format!("echo {id}: status {}: {}", r.status, String::from_utf8_lossy(&r.body)));
    }
    let v: Value = serde_json::from_slice(&r.body).map_err(|e| format!("echo {id}: not JSON: {e}"))?;
    check_echo(&v, id, text)
}

/// A JSON value shortened for a message.
fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(300) {
        Some((at, _)) => format!("{}...", &s[..at]),
        None => s,
    }
}

/// Runs `f` on a thread of its own; panics if it does not finish within [`HANG`].
pub fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HANG) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("hung for {HANG:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("finished without a result"),
        },
    }
}

/// A connection to `addr`, with timeouts as hang protection.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(HANG)).expect("read timeout");
    s.set_write_timeout(Some(HANG)).expect("write timeout");
    s.set_nodelay(true).expect("nodelay");
    s
}

/// Sends `echo` calls of the body lengths `lens` (texts drawn from `seed`) pipelined on
/// one connection to `addr`, in writes of `pieces` then the rest; checks every answer.
pub fn http_echoes(addr: SocketAddr, seed: u64, lens: &[usize], pieces: &[usize]) -> Result<(), String> {
    let host = addr.to_string();
    let mut bytes = Vec::new();
    let mut expected = Vec::new();
    for (i, &len) in lens.iter().enumerate() {
        let id = i as u64 + 1;
        let (body, text) = echo_of_len(id, seed.wrapping_add(id), len);
        bytes.extend_from_slice(&post(&host, &body, ""));
        expected.push((id, text));
    }
    let stream = connect(addr);
    let sizes = writes(bytes.len(), pieces);
    let writer = write_in(stream.try_clone().expect("clone"), bytes, sizes);
    let mut reader = BufReader::new(stream);
    for (id, text) in &expected {
        let r = read_response(&mut reader)
            .map_err(|e| format!("reading the answer to {id}: {e}"))?
            .ok_or_else(|| format!("the server closed the connection before answering {id}"))?;
        check_echo_response(&r, *id, text)?;
    }
    writer.join().map_err(|_| "the writes failed".to_owned())?;
    Ok(())
}

/// The smallest `echo` body (an empty text, a one-digit id).
pub fn bare() -> usize {
    echo_body(1, "").len()
}

/// Body lengths for a property: one to three, small, medium (past a read buffer) or up to
/// `cap`.
pub fn lens(cap: usize) -> impl Strategy<Value = Vec<usize>> {
    let b = bare();
    proptest::collection::vec(prop_oneof![b..2_000usize, 2_000..80_000usize, 80_000..=cap], 1..=3)
}

/// Write sizes for a property: a first write past the head capacity (16 KiB) half the
/// time, then up to seven of one byte, a few bytes, or many.
pub fn pieces() -> impl Strategy<Value = Vec<usize>> {
    let first = prop_oneof![16_385..200_000usize, 1..16_385usize];
    let more = proptest::collection::vec(
        prop_oneof![Just(1usize), 1..64usize, 64..20_000usize, 20_000..300_000usize],
        0..8,
    );
    (first, more).prop_map(|(first, mut more)| {
        more.insert(0, first);
        more
    })
}

/// Issue 27: `echo` of 200,000 bytes of text, written as 70,000 bytes then the rest.
pub fn text_of_200_000_written_as_70_000_then_the_rest(addr: SocketAddr) -> Result<(), String> {
    http_echoes(addr, 1, &[bare() + 200_000], &[70_000])
}

/// Issue 27: a body of the cap, 1 MiB, in one write.
pub fn one_mebibyte_in_one_write(addr: SocketAddr) -> Result<(), String> {
    http_echoes(addr, 2, &[MAX_BODY], &[])
}

/// Issue 27: two requests of 30 KB and 50 KB pipelined in one write.
pub fn thirty_and_fifty_kilobytes_pipelined_in_one_write(addr: SocketAddr) -> Result<(), String> {
    http_echoes(addr, 3, &[30_000, 50_000], &[])
}

/// The settings of the servers these checks run against: the fixture's, with subscribed
/// uris allowed up to their longest (65,535 bytes; the default is 2,048), so that a long
/// uri reaches the catalog lookup whose answer names it.
pub fn server_config() -> mcp_engine::Config {
    let mut config = mcp_fixture::config();
    config.max_subscribed_uri_len(usize::from(u16::MAX));
    config
}

/// Issue 27: a `resources/subscribe` with a 60,000-byte uri in a `2025-11-25` session
/// (of a server of [`server_config`]): the answer names the uri, every byte of it.
pub fn subscribe_with_a_long_uri(addr: SocketAddr) -> Result<(), String> {
    let stream = connect(addr);
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut call = |bytes: Vec<u8>| -> Result<Response, String> {
        (&stream).write_all(&bytes).map_err(|e| format!("write: {e}"))?;
        read_response(&mut reader).map_err(|e| format!("read: {e}"))?.ok_or_else(|| "closed".to_owned())
    };
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let r = call(session_post(&init, "2025-11-25", None))?;
    let session = r.header("mcp-session-id").ok_or_else(|| format!("no session: {r:?}"))?.to_owned();
    let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let r = call(session_post(&done, "2025-11-25", Some(&session)))?;
    if r.status != 202 {
        return Err(format!("notifications/initialized: {r:?}"));
    }
    let letters: String =
        text(7, 60_000).chars().map(|c| char::from(b'a' + (u32::from(c) % 26) as u8)).collect();
    let uri = format!("test://nowhere/{letters}");
    let sub = json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": uri } });
    let r = call(session_post(&sub, "2025-11-25", Some(&session)))?;
    let v: Value =
        serde_json::from_slice(&r.body).map_err(|e| format!("status {}, not JSON: {e}", r.status))?;
    let named = v["error"]["data"]["uri"].as_str();
    if r.status != 200 || v["id"] != 2 || named.is_none() {
        return Err(format!("status {}: {}", r.status, short(&v)));
    }
    match named {
        Some(named) if named == uri => Ok(()),
        Some(named) => Err(format!("another uri came back ({} bytes for {})", named.len(), uri.len())),
        None => unreachable!("checked above"),
    }
}
