//! Every byte a client sends reaches the engine once, in order, through each front end
//! and a real socket or pipe: the mio and tokio HTTP servers, and the stdio loops of both
//! adapters. `echo` calls of random sizes up to the cap, written in random pieces and
//! pipelined, come back byte for byte; and the cases of issue 27. (The tower service's
//! are in `io-tokio/tests/tower_integrity.rs`.)

use std::cell::RefCell;
use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::thread;

use mcp_engine::Engine;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent, Verdict};
use mcp_fixture as everything;
use mcp_io_tokio::handler::tool_fn;
use mcp_io_tokio::http::AuthorizeInfo;
use mcp_io_tokio::{Authorizer, ToolReply};
use mcp_tests::integrity::{
    self as integrity, MAX_BODY, check_echo, echo_of_len, read_frame, within, write_in, writes,
};
use proptest::prelude::*;

/// The stdio frame cap the stdio cases run with.
const MAX_FRAME: usize = 192 * 1024;

/// Cases each property runs (each sends one to three bodies of up to the cap).
const CASES: u32 = 48;

/// The front ends.
#[derive(Debug, Clone, Copy)]
enum Front {
    Mio,
    Tokio,
}

/// The fixture's HTTP engine: any origin, everyone authorized, the fixture's settings
/// (session subscriptions on).
fn http_engine() -> HttpEngine {
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    HttpEngine::new(integrity::server_config(), http, everything::catalog())
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

/// A fresh `127.0.0.1:0` listener and its address.
fn bind() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local addr");
    (listener, addr)
}

/// Runs `serve` with `listener` as a tokio listener, on [`runtime`].
fn on_tokio<F: Future<Output = std::io::Result<()>> + Send + 'static>(
    listener: TcpListener,
    serve: impl FnOnce(tokio::net::TcpListener) -> F,
) {
    listener.set_nonblocking(true).expect("non-blocking");
    let _in = runtime().enter();
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    runtime().spawn(serve(listener));
}

/// An HTTP server of `front` on a fresh `127.0.0.1:0` listener; it serves until the
/// process ends.
fn serve_http(front: Front) -> SocketAddr {
    let (listener, addr) = bind();
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
        Front::Tokio => on_tokio(listener, |listener| {
            mcp_io_tokio::HttpServer::without_authorizer(http_engine(), echo_handler()).serve(listener)
        }),
    }
    addr
}

/// A stdio server of `front` on a fresh pair of pipes (mio) or a socket pair (tokio);
/// returns the client's ends.
fn serve_stdio(front: Front) -> (Box<dyn Write + Send>, Box<dyn Read + Send>) {
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
            runtime().spawn(mcp_io_tokio::stdio::serve(engine, echo_handler(), r, w));
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn mio_http_echoes_every_byte(seed in any::<u64>(), lens in integrity::lens(MAX_BODY), pieces in integrity::pieces()) {
        let r = within(move || integrity::http_echoes(serve_http(Front::Mio), seed, &lens, &pieces));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn tokio_http_echoes_every_byte(seed in any::<u64>(), lens in integrity::lens(MAX_BODY), pieces in integrity::pieces()) {
        let r = within(move || integrity::http_echoes(serve_http(Front::Tokio), seed, &lens, &pieces));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn mio_stdio_echoes_every_byte(seed in any::<u64>(), lens in integrity::lens(MAX_FRAME), pieces in integrity::pieces()) {
        let r = within(move || stdio_echoes(Front::Mio, seed, &lens, &pieces));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn tokio_stdio_echoes_every_byte(seed in any::<u64>(), lens in integrity::lens(MAX_FRAME), pieces in integrity::pieces()) {
        let r = within(move || stdio_echoes(Front::Tokio, seed, &lens, &pieces));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// Runs regression case `case` against a fresh server of `front`.
fn check(front: Front, case: fn(SocketAddr) -> Result<(), String>) {
    within(move || case(serve_http(front))).unwrap_or_else(|e| panic!("{front:?}: {e}"));
}

#[test]
fn mio_text_of_200_000_written_as_70_000_then_the_rest() {
    check(Front::Mio, integrity::text_of_200_000_written_as_70_000_then_the_rest);
}

#[test]
fn tokio_text_of_200_000_written_as_70_000_then_the_rest() {
    check(Front::Tokio, integrity::text_of_200_000_written_as_70_000_then_the_rest);
}

#[test]
fn mio_one_mebibyte_in_one_write() {
    check(Front::Mio, integrity::one_mebibyte_in_one_write);
}

#[test]
fn tokio_one_mebibyte_in_one_write() {
    check(Front::Tokio, integrity::one_mebibyte_in_one_write);
}

#[test]
fn mio_thirty_and_fifty_kilobytes_pipelined_in_one_write() {
    check(Front::Mio, integrity::thirty_and_fifty_kilobytes_pipelined_in_one_write);
}

#[test]
fn tokio_thirty_and_fifty_kilobytes_pipelined_in_one_write() {
    check(Front::Tokio, integrity::thirty_and_fifty_kilobytes_pipelined_in_one_write);
}

#[test]
fn mio_subscribe_with_a_long_uri() {
    check(Front::Mio, integrity::subscribe_with_a_long_uri);
}

#[test]
fn tokio_subscribe_with_a_long_uri() {
    check(Front::Tokio, integrity::subscribe_with_a_long_uri);
}

/// Decides after a while, in a task of its own: allows every head.
struct Later;

impl Authorizer for Later {
    async fn authorize(&self, _: &AuthorizeInfo) -> Verdict {
        tokio::task::yield_now().await;
        Verdict::Allow
    }
}

/// An HTTP server of `front` whose host decides on each head later: the tokio server's
/// authorizer in a task of its own, the mio host outside its event callback (in the
/// loop's `after`).
fn serve_http_deciding_later(front: Front) -> SocketAddr {
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let engine = HttpEngine::new(everything::config(), http, everything::catalog());
    let (listener, addr) = bind();
    match front {
        Front::Mio => {
            thread::spawn(move || {
                let asked = Rc::new(RefCell::new(Vec::new()));
                let keep = Rc::clone(&asked);
                let server = mcp_io_mio::HttpServer::from_std(listener, engine).expect("a server");
                let host = move |event: HttpEvent<'_>| {
                    match event {
                        HttpEvent::Mcp(event) => everything::respond(event),
                        HttpEvent::Authorize(a) => keep.borrow_mut().push(a.conn),
                        _ => {}
                    }
                    None
                };
                // Called after each batch of work, and every few milliseconds (a head
                // asked about in the batch after it waits for the next call).
                server.run_timed(host, move |engine, now| {
                    for conn in asked.borrow_mut().drain(..) {
                        engine.authorize(engine.now(), conn, Verdict::Allow);
                    }
                    Some(now + std::time::Duration::from_millis(2))
                })
            });
        }
        Front::Tokio => on_tokio(listener, |listener| {
            mcp_io_tokio::HttpServer::new(engine, echo_handler(), Later).serve(listener)
        }),
    }
    addr
}

/// Bodies past the head's first read (200,000 bytes, then 30 KB and 50 KB pipelined),
/// each read once its head is allowed: every byte comes back.
fn bodies_after_a_verdict_given_later(front: Front) {
    let lens = [integrity::bare() + 200_000, 30_000, 50_000];
    let r = within(move || integrity::http_echoes(serve_http_deciding_later(front), 4, &lens, &[20_000]));
    r.unwrap_or_else(|e| panic!("{front:?}: {e}"));
}

#[test]
fn mio_bodies_after_a_verdict_given_later() {
    bodies_after_a_verdict_given_later(Front::Mio);
}

#[test]
fn tokio_bodies_after_a_verdict_given_later() {
    bodies_after_a_verdict_given_later(Front::Tokio);
}
