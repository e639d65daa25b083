//! The tower service (feature `tower`) mounted in a real axum server on a loopback
//! socket: every byte of a request body reaches the engine, in order, as it arrives, under
//! the same edge rules as the servers' (the cap and the verdict on the head before the
//! body is read, the body deadline). The checks are those of `tests/tests/integrity.rs`.

#![cfg(feature = "tower")]

mod http_support;

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::OnceLock;
use std::time::Duration;

use axum::Router;
use http_support::Probe;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, Verdict};
use mcp_fixture as everything;
use mcp_io_tokio::http::{AllowAll, AuthorizeInfo};
use mcp_io_tokio::{Authorizer, HttpServer};
use mcp_tests::integrity::{self as integrity, MAX_BODY, connect, read_response, within};
use proptest::prelude::*;

/// Cases the property runs (each sends one to three bodies of up to the cap).
const CASES: u32 = 48;

/// The runtime the servers run on.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
    })
}

/// An axum server on a fresh `127.0.0.1:0` listener with the service at `/mcp`, serving
/// the fixture's catalog (its `echo` answered by [`Probe`]) with `http` and `auth`.
fn serve_axum<A: Authorizer>(http: HttpConfig, auth: A) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local addr");
    listener.set_nonblocking(true).expect("non-blocking");
    let _in = runtime().enter();
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    let engine = HttpEngine::new(integrity::server_config(), http, everything::catalog());
    let service = HttpServer::new(engine, Probe::new(), auth).into_service();
    let app = Router::new().route_service("/mcp", service);
    runtime().spawn(axum::serve(listener, app).into_future());
    addr
}

/// Everyone authorized, the other settings the defaults.
fn open() -> HttpConfig {
    HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone)
}

fn axum() -> SocketAddr {
    serve_axum(open(), AllowAll)
}

/// Decides after a while, in a task of its own: every head that names `x-key`.
struct Later;

impl Authorizer for Later {
    fn authorize(&self, request: &AuthorizeInfo) -> impl Future<Output = Verdict> + Send {
        let allowed = request.header("x-key").is_some();
        async move {
            tokio::task::yield_now().await;
            if allowed { Verdict::Allow } else { Verdict::Unauthenticated }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn axum_echoes_every_byte(seed in any::<u64>(), lens in integrity::lens(MAX_BODY), pieces in integrity::pieces()) {
        let r = within(move || integrity::http_echoes(axum(), seed, &lens, &pieces));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// Runs regression case `case` against a fresh axum server.
fn check(case: fn(SocketAddr) -> Result<(), String>) {
    within(move || case(axum())).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn axum_text_of_200_000_written_as_70_000_then_the_rest() {
    check(integrity::text_of_200_000_written_as_70_000_then_the_rest);
}

#[test]
fn axum_one_mebibyte_in_one_write() {
    check(integrity::one_mebibyte_in_one_write);
}

#[test]
fn axum_thirty_and_fifty_kilobytes_pipelined_in_one_write() {
    check(integrity::thirty_and_fifty_kilobytes_pipelined_in_one_write);
}

#[test]
fn axum_subscribe_with_a_long_uri() {
    check(integrity::subscribe_with_a_long_uri);
}

/// Sends `head` (a request head, CRLF CRLF included) and the first `sent` bytes of its
/// body to `addr`, then waits for the response, the rest of the body never coming.
fn status_with_the_body_still_coming(addr: SocketAddr, head: &str, sent: usize) -> u16 {
    let stream = connect(addr);
    (&stream).write_all(head.as_bytes()).expect("write the head");
    (&stream).write_all(&vec![b' '; sent]).expect("write some of the body");
    let mut reader = BufReader::new(stream);
    read_response(&mut reader).expect("read").expect("a response").status
}

/// A `POST /mcp` head of a `tools/call` of `echo` whose body is `len` bytes long, with
/// `extra` header lines.
fn echo_head(addr: SocketAddr, len: usize, extra: &str) -> String {
    let body = integrity::echo_body(1, "x");
    let request = String::from_utf8(integrity::post(&addr.to_string(), &body, extra)).expect("UTF-8");
    let head = request.split("\r\n\r\n").next().expect("a head");
    let head = head.replace(&format!("Content-Length: {}", body.len()), &format!("Content-Length: {len}"));
    format!("{head}\r\n\r\n")
}

/// Issue 27: a `Content-Length` over the cap is answered `413` while the body is still
/// coming (before, the service waited for the body until the client gave up).
#[test]
fn axum_a_content_length_over_the_cap_is_answered_413_while_the_body_is_still_coming() {
    within(|| {
        let addr = axum();
        assert_eq!(status_with_the_body_still_coming(addr, &echo_head(addr, MAX_BODY + 1, ""), 1000), 413);
    });
}

/// Issue 27: a body that stops coming is answered `408` at the engine's body deadline.
#[test]
fn axum_a_slow_body_is_answered_408() {
    within(|| {
        let mut http = open();
        http.body_deadline(Duration::from_millis(50));
        let addr = serve_axum(http, AllowAll);
        assert_eq!(status_with_the_body_still_coming(addr, &echo_head(addr, 5000, ""), 10), 408);
    });
}

/// The head is authorized before the body is read: a refused head is answered while its
/// body is still coming.
#[test]
fn axum_a_refused_head_is_answered_before_its_body() {
    within(|| {
        let addr = serve_axum(HttpConfig::new(AllowedOrigins::Any, Authorization::Host), Later);
        assert_eq!(status_with_the_body_still_coming(addr, &echo_head(addr, 500_000, ""), 0), 401);
    });
}

/// An allowed head's body is read once the verdict comes, every byte of it.
#[test]
fn axum_a_body_after_a_verdict_given_later_is_intact() {
    within(|| {
        let addr = serve_axum(HttpConfig::new(AllowedOrigins::Any, Authorization::Host), Later);
        let (body, text) = integrity::echo_of_len(1, 9, 300_000);
        let stream = connect(addr);
        let request = integrity::post(&addr.to_string(), &body, "x-key: 1\r\n");
        let sizes = integrity::writes(request.len(), &[100, 20_000, 1]);
        let writer = integrity::write_in(stream.try_clone().expect("clone"), request, sizes);
        let r = read_response(&mut BufReader::new(stream)).expect("read").expect("a response");
        integrity::check_echo_response(&r, 1, &text).unwrap_or_else(|e| panic!("{e}"));
        writer.join().expect("the writes");
    });
}

/// `body` as a chunked `POST /mcp` of a `tools/call` of `echo` to `addr`, its chunks of
/// the sizes `sizes` (cycled).
fn chunked_post(addr: SocketAddr, body: &str, sizes: &[usize]) -> Vec<u8> {
    let head = echo_head(addr, body.len(), "");
    let head = head.replace(&format!("Content-Length: {}", body.len()), "Transfer-Encoding: chunked");
    let mut out = head.into_bytes();
    let mut rest = body.as_bytes();
    for &n in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, more) = rest.split_at(n.clamp(1, rest.len()));
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
        rest = more;
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Writes `bytes` to `addr` (ignoring a server that stops reading) and reads one response.
fn send_and_read(addr: SocketAddr, bytes: Vec<u8>) -> mcp_tests::wire::Response {
    let stream = connect(addr);
    let mut writer = stream.try_clone().expect("clone");
    let w = std::thread::spawn(move || {
        for piece in bytes.chunks(50_000) {
            if writer.write_all(piece).is_err() {
                break; // refused and closed: the rest is not read
            }
        }
    });
    let r = read_response(&mut BufReader::new(stream)).expect("read").expect("a response");
    drop(w);
    r
}

/// A body without `Content-Length` (chunked, as hyper hands it on) reaches the engine
/// whole, given chunk-framed as it comes.
#[test]
fn axum_a_chunked_body_is_intact() {
    within(|| {
        let addr = axum();
        let (body, text) = integrity::echo_of_len(1, 11, 300_000);
        let r = send_and_read(addr, chunked_post(addr, &body, &[1, 7, 4096, 70_000, 3]));
        integrity::check_echo_response(&r, 1, &text).unwrap_or_else(|e| panic!("{e}"));
    });
}

/// A chunked body is refused `413` as it passes the engine's cap.
#[test]
fn axum_a_chunked_body_over_the_cap_is_refused_413() {
    within(|| {
        let addr = axum();
        let (body, _) = integrity::echo_of_len(1, 12, MAX_BODY + 1);
        assert_eq!(send_and_read(addr, chunked_post(addr, &body, &[60_000])).status, 413);
    });
}

/// A cap of the service's own, below the engine's (`HttpServer::max_body`): a declared
/// length over it, and a chunked body as it passes it, are `413`.
#[test]
fn axum_the_service_cap_below_the_engine_s() {
    within(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("local addr");
        listener.set_nonblocking(true).expect("non-blocking");
        let _in = runtime().enter();
        let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
        let engine = HttpEngine::new(everything::config(), open(), everything::catalog());
        let service = HttpServer::new(engine, Probe::new(), AllowAll).max_body(1000).into_service();
        runtime().spawn(axum::serve(listener, Router::new().route_service("/mcp", service)).into_future());

        let (body, text) = integrity::echo_of_len(1, 13, 1000);
        let r = send_and_read(addr, integrity::post(&addr.to_string(), &body, ""));
        integrity::check_echo_response(&r, 1, &text).unwrap_or_else(|e| panic!("{e}"));
        let (body, _) = integrity::echo_of_len(1, 14, 1001);
        assert_eq!(send_and_read(addr, integrity::post(&addr.to_string(), &body, "")).status, 413);
        assert_eq!(send_and_read(addr, chunked_post(addr, &body, &[100])).status, 413);
    });
}

/// The peer and the client address of a head, as the authorizer saw them.
type Addresses = (Option<SocketAddr>, Option<std::net::IpAddr>);

/// Remembers the addresses of every head it is asked about, and allows it.
#[derive(Clone, Default)]
struct Seen(std::sync::Arc<std::sync::Mutex<Vec<Addresses>>>);

impl Authorizer for Seen {
    fn authorize(&self, request: &AuthorizeInfo) -> impl Future<Output = Verdict> + Send {
        self.0.lock().expect("not poisoned").push((request.peer, request.client));
        async { Verdict::Allow }
    }
}

/// Issue 27: served with axum's `ConnectInfo` (as the axum demo is), the service hands the
/// engine the peer's address, so per-client bounds count each client by its own address
/// (without it every client without a principal went uncounted).
#[test]
fn axum_connect_info_is_the_peer_the_engine_sees() {
    within(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("local addr");
        listener.set_nonblocking(true).expect("non-blocking");
        let seen = Seen::default();
        {
            let _in = runtime().enter();
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
            let engine = HttpEngine::new(everything::config(), http, everything::catalog());
            let service = HttpServer::new(engine, Probe::new(), seen.clone()).into_service();
            let app = Router::new().route_service("/mcp", service);
            let app = app.into_make_service_with_connect_info::<SocketAddr>();
            runtime().spawn(axum::serve(listener, app).into_future());
        }
        let stream = connect(addr);
        let local = stream.local_addr().expect("the client's address");
        let mut writer = stream.try_clone().expect("clone");
        writer
            .write_all(&integrity::post(&addr.to_string(), &integrity::echo_body(1, "hi"), ""))
            .expect("write");
        let r = read_response(&mut BufReader::new(stream)).expect("read").expect("a response");
        assert_eq!(r.status, 200);
        let seen = seen.0.lock().expect("not poisoned").clone();
        assert_eq!(seen, vec![(Some(local), Some(local.ip()))]);
    });
}
