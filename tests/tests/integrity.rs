//! Every byte a client sends reaches the engine once, in order, through each front end
//! and a real socket or pipe: the mio and tokio HTTP servers, and the stdio loops of both
//! adapters. `echo` calls of random sizes up to the cap, written in random pieces and
//! pipelined, come back byte for byte; and the cases issue 27 reported. (The tower
//! service's own are in `io-tokio/tests/tower_integrity.rs`.)

use std::io::{BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, OnceLock, mpsc};
use std::thread;
use std::time::Duration;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::Engine;
use mcp_fixture as everything;
use mcp_io_tokio::{ToolReply, tool_fn};
use mcp_tests::integrity::{
    check_echo, check_echo_response, echo_of_len, post, read_frame, read_response, write_in, writes,
};
use mcp_tests::wire::session_post;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Hang protection only: no assertion depends on it.
const HANG: Duration = Duration::from_secs(120);

/// The HTTP body cap (the default).
const MAX_BODY: usize = 1 << 20;

/// The stdio frame cap the stdio cases run with.
const MAX_FRAME: usize = 192 * 1024;

/// Cases each property runs (each sends up to three bodies of up to the cap).
const CASES: u32 = 12;

/// The front ends.
#[derive(Debug, Clone, Copy)]
enum Front {
    Mio,
    Tokio,
}

/// The fixture's HTTP engine: any origin, everyone authorized, sessions' subscriptions on.
fn http_engine() -> HttpEngine {
    HttpEngine::new(everything::config(), HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone), everything::catalog())
}

/// The runtime the tokio servers run on.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
    })
}

/// The fixture's `echo`, answered asynchronously (the tokio servers' handler).
fn echo_handler() -> Arc<impl mcp_io_tokio::Handler> {
    #[derive(serde::Deserialize)]
    struct Echo {
        text: String,
    }
    Arc::new(tool_fn(|call| async move {
        match call.name.as_str() {
            "echo" => Ok(ToolReply::text(call.deserialize::<Echo>()?.text)),
            other => Ok(ToolReply::error(format!("no tool {other} here"))),
        }
    }))
}

/// A server of `front` on a fresh `127.0.0.1:0` listener; it serves until the process ends.
fn serve_http(front: Front) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local addr");
    match front {
        Front::Mio => {
            thread::spawn(move || {
                mcp_io_mio::serve_http(listener, http_engine(), |event| {
                    if let HttpEvent::Mcp(event) = event {
                        everything::respond(event);
                    }
                    None
                })
            });
        }
        Front::Tokio => {
            listener.set_nonblocking(true).expect("non-blocking");
            let _in = runtime().enter();
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            let server = mcp_io_tokio::HttpServer::without_authorizer(http_engine(), echo_handler());
            runtime().spawn(server.serve(listener));
        }
    }
    addr
}

/// Runs `f` on a thread of its own; panics if it does not finish within [`HANG`].
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
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
fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(HANG)).expect("read timeout");
    s.set_write_timeout(Some(HANG)).expect("write timeout");
    s.set_nodelay(true).expect("nodelay");
    s
}

/// Sends `echo` calls of the body lengths `lens` (texts drawn from `seed`) pipelined on
/// one connection to `addr`, in writes of `pieces` then the rest; checks every answer.
fn http_echoes(addr: SocketAddr, seed: u64, lens: &[usize], pieces: &[usize]) -> Result<(), String> {
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

/// A stdio server of `front` on a fresh pair of pipes (mio) or a socket pair (tokio);
/// returns the client's ends.
fn serve_stdio(front: Front) -> (Box<dyn Write + Send>, Box<dyn std::io::Read + Send>) {
    let mut config = everything::config();
    config.max_frame_len(MAX_FRAME);
    let engine = Engine::new(config, everything::catalog());
    match front {
        Front::Mio => {
            let (client_tx, server_rx) = mio::unix::pipe::new().expect("a pipe");
            let (server_tx, client_rx) = mio::unix::pipe::new().expect("a pipe");
            client_tx.set_nonblocking(false).expect("blocking");
            client_rx.set_nonblocking(false).expect("blocking");
            thread::spawn(move || {
                let server = mcp_io_mio::StdioServer::new(engine, server_rx, server_tx).expect("a server");
                server.run(everything::respond)
            });
            (Box::new(client_tx), Box::new(client_rx))
        }
        Front::Tokio => {
            let (client, server) = UnixStream::pair().expect("a socket pair");
            server.set_nonblocking(true).expect("non-blocking");
            let _in = runtime().enter();
            let server = tokio::net::UnixStream::from_std(server).expect("a tokio socket");
            let (r, w) = server.into_split();
            runtime().spawn(mcp_io_tokio::serve(engine, echo_handler(), r, w));
            let writer = client.try_clone().expect("clone");
            (Box::new(ShutOnDrop(writer)), Box::new(client))
        }
    }
}

/// The writing end of a socket pair, shut down when dropped (the server reads its end).
struct ShutOnDrop(UnixStream);

impl Write for ShutOnDrop {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Drop for ShutOnDrop {
    fn drop(&mut self) {
        let _ = self.0.shutdown(Shutdown::Write);
    }
}

/// Sends `echo` frames of the lengths `lens` (newline excluded) over a fresh stdio
/// server of `front`, in writes of `pieces` then the rest; checks every answer, then that
/// the server ends its output once the input ends.
fn stdio_echoes(front: Front, seed: u64, lens: &[usize], pieces: &[usize]) -> Result<(), String> {
    let (tx, rx) = serve_stdio(front);
    let mut bytes = Vec::new();
    let mut expected = Vec::new();
    for (i, &len) in lens.iter().enumerate() {
        let id = i as u64 + 1;
        let (body, text) = echo_of_len(id, seed.wrapping_add(id), len);
        bytes.extend_from_slice(body.as_bytes());
        bytes.push(b'\n');
        expected.push((id, text));
    }
    let sizes = writes(bytes.len(), pieces);
    let writer = write_in(tx, bytes, sizes);
    let mut reader = BufReader::new(rx);
    // Over stdio, answers come as they are ready: matched by id.
    while !expected.is_empty() {
        let v = read_frame(&mut reader)
            .map_err(|e| format!("reading an answer: {e}"))?
            .ok_or_else(|| "the server ended its output before every answer".to_owned())?;
        let Some(at) = expected.iter().position(|(id, _)| v["id"] == *id) else {
            return Err(format!("an answer to no request waiting for one: {}", v["id"]));
        };
        let (id, text) = expected.swap_remove(at);
        check_echo(&v, id, &text)?;
    }
    drop(writer.join().map_err(|_| "the writes failed".to_owned())?);
    match read_frame(&mut reader) {
        Ok(None) => Ok(()),
        other => Err(format!("after the last answer: {other:?}")),
    }
}

/// The smallest `echo` body (an empty text, a one-digit id).
fn bare() -> usize {
    mcp_tests::integrity::echo_body(1, "").len()
}

/// Body lengths: one to three, small, medium (past a read buffer) or up to `cap`.
fn lens(cap: usize) -> impl Strategy<Value = Vec<usize>> {
    let b = bare();
    proptest::collection::vec(prop_oneof![b..2_000usize, 2_000..80_000usize, 80_000..=cap], 1..=3)
}

/// Write sizes: a first write past the head capacity (16 KiB) half the time, then up to
/// seven of one byte, a few bytes, or many.
fn pieces() -> impl Strategy<Value = Vec<usize>> {
    let first = prop_oneof![16_385..200_000usize, 1..16_385usize];
    let more = proptest::collection::vec(prop_oneof![Just(1usize), 1..64usize, 64..20_000usize, 20_000..300_000usize], 0..8);
    (first, more).prop_map(|(first, mut more)| {
        more.insert(0, first);
        more
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn mio_http_echoes_every_byte(seed in any::<u64>(), lens in lens(MAX_BODY), pieces in pieces()) {
        let r = within(move || http_echoes(serve_http(Front::Mio), seed, &lens, &pieces));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn tokio_http_echoes_every_byte(seed in any::<u64>(), lens in lens(MAX_BODY), pieces in pieces()) {
        let r = within(move || http_echoes(serve_http(Front::Tokio), seed, &lens, &pieces));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn mio_stdio_echoes_every_byte(seed in any::<u64>(), lens in lens(MAX_FRAME), pieces in pieces()) {
        let r = within(move || stdio_echoes(Front::Mio, seed, &lens, &pieces));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn tokio_stdio_echoes_every_byte(seed in any::<u64>(), lens in lens(MAX_FRAME), pieces in pieces()) {
        let r = within(move || stdio_echoes(Front::Tokio, seed, &lens, &pieces));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// Issue 27: `echo` of 200,000 bytes of text, written as 70,000 bytes then the rest.
fn text_of_200_000_written_as_70_000_then_the_rest(front: Front) {
    let r = within(move || http_echoes(serve_http(front), 1, &[bare() + 200_000], &[70_000]));
    r.unwrap_or_else(|e| panic!("{front:?}: {e}"));
}

/// Issue 27: a body of the cap, 1 MiB, in one write.
fn one_mebibyte_in_one_write(front: Front) {
    let r = within(move || http_echoes(serve_http(front), 2, &[MAX_BODY], &[]));
    r.unwrap_or_else(|e| panic!("{front:?}: {e}"));
}

/// Issue 27: two requests of 30 KB and 50 KB pipelined in one write.
fn thirty_and_fifty_kilobytes_pipelined_in_one_write(front: Front) {
    let r = within(move || http_echoes(serve_http(front), 3, &[30_000, 50_000], &[]));
    r.unwrap_or_else(|e| panic!("{front:?}: {e}"));
}

/// Issue 27: a `resources/subscribe` with a long uri in a `2025-11-25` session: the
/// answer names the uri, every byte of it.
fn subscribe_with_a_long_uri(front: Front) {
    within(move || {
        let addr = serve_http(front);
        let stream = connect(addr);
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut call = |bytes: Vec<u8>| {
            (&stream).write_all(&bytes).expect("write");
            read_response(&mut reader).expect("read").expect("an answer")
        };
        let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
        let r = call(session_post(&init, "2025-11-25", None));
        assert_eq!(r.status, 200, "{r:?}");
        let session = r.header("mcp-session-id").expect("a session").to_owned();
        let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        assert_eq!(call(session_post(&done, "2025-11-25", Some(&session))).status, 202);
        let letters: String = mcp_tests::integrity::text(7, 150_000)
            .chars()
            .map(|c| char::from(b'a' + (u32::from(c) % 26) as u8))
            .collect();
        let uri = format!("test://nowhere/{letters}");
        let sub = json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": uri } });
        let r = call(session_post(&sub, "2025-11-25", Some(&session)));
        assert_eq!(r.status, 200, "{front:?}: {}", String::from_utf8_lossy(&r.body[..r.body.len().min(300)]));
        let v: Value = serde_json::from_slice(&r.body).expect("JSON");
        assert_eq!(v["id"], 2, "{front:?}");
        let named = v["error"]["data"]["uri"].as_str().unwrap_or_else(|| panic!("{front:?}: no uri named"));
        assert!(named == uri, "{front:?}: another uri came back ({} bytes for {})", named.len(), uri.len());
    });
}

#[test]
fn mio_text_of_200_000_written_as_70_000_then_the_rest() {
    text_of_200_000_written_as_70_000_then_the_rest(Front::Mio);
}

#[test]
fn tokio_text_of_200_000_written_as_70_000_then_the_rest() {
    text_of_200_000_written_as_70_000_then_the_rest(Front::Tokio);
}

#[test]
fn mio_one_mebibyte_in_one_write() {
    one_mebibyte_in_one_write(Front::Mio);
}

#[test]
fn tokio_one_mebibyte_in_one_write() {
    one_mebibyte_in_one_write(Front::Tokio);
}

#[test]
fn mio_thirty_and_fifty_kilobytes_pipelined_in_one_write() {
    thirty_and_fifty_kilobytes_pipelined_in_one_write(Front::Mio);
}

#[test]
fn tokio_thirty_and_fifty_kilobytes_pipelined_in_one_write() {
    thirty_and_fifty_kilobytes_pipelined_in_one_write(Front::Tokio);
}

#[test]
fn mio_subscribe_with_a_long_uri() {
    subscribe_with_a_long_uri(Front::Mio);
}

#[test]
fn tokio_subscribe_with_a_long_uri() {
    subscribe_with_a_long_uri(Front::Tokio);
}
