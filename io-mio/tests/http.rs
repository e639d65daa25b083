//! `HttpServer` over real TCP on 127.0.0.1: the server runs its loop on a thread, the
//! test is a raw HTTP/1.1 client (`std::net::TcpStream`).

mod support;

use mcp_engine::Commands;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, mpsc};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent, Verdict};
use mcp_engine::{Config, Content, Event, Ticket, ToolOutput};
use mcp_fixture as everything;
use mcp_io_mio::HttpServer;
use mio::{Events, Poll, Token, Waker};
use support::http::{Client, echo_body, echo_post};
use support::within;

/// The fixture's HTTP engine: loopback, any (loopback) origin, everyone authorized.
fn engine_with(http: HttpConfig) -> HttpEngine {
    HttpEngine::new(Config::new("mcp-engine-everything", "test"), http, everything::catalog())
}

fn open_config() -> HttpConfig {
    HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone)
}

/// A server thread running `HttpServer::run` with the fixture's synchronous answers, on
/// a fresh `127.0.0.1:0` listener. The thread serves until the test process ends.
fn spawn_server(engine: HttpEngine) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local_addr");
    thread::spawn(move || {
        mcp_io_mio::serve_http(listener, engine, |event| {
            if let HttpEvent::Mcp(event) = event {
                everything::respond(event);
            }
            None
        })
    });
    addr
}

#[test]
fn echo_over_http() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let mut client = Client::connect(addr);
        let r = client.call(&echo_post(addr, 1, "hi", ""));
        assert_eq!(r.echo_text(1), "hi");
        assert!(!r.closes(), "keep-alive by default: {r:?}");
        let v = r.json();
        assert_eq!(v["jsonrpc"], "2.0");
        assert!(v["result"].get("isError").is_none(), "{v}");
    });
}

#[test]
fn keep_alive_serves_two_requests_on_one_connection() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let mut client = Client::connect(addr);
        let r = client.call(&echo_post(addr, 1, "first", ""));
        assert_eq!(r.echo_text(1), "first");
        let r = client.call(&echo_post(addr, 2, "second", ""));
        assert_eq!(r.echo_text(2), "second");
    });
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let mut client = Client::connect(addr);
        let mut all = Vec::new();
        for (id, text) in [(1, "one"), (2, "two"), (3, "three")] {
            all.extend_from_slice(&echo_post(addr, id, text, ""));
        }
        client.send(&all);
        for (id, text) in [(1, "one"), (2, "two"), (3, "three")] {
            assert_eq!(client.recv().echo_text(id), text);
        }
        // The connection is still usable.
        assert_eq!(client.call(&echo_post(addr, 4, "four", "")).echo_text(4), "four");
    });
}

#[test]
fn many_pipelined_requests_in_one_write() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let mut client = Client::connect(addr);
        let all: Vec<u8> = (1..=300).flat_map(|i| echo_post(addr, i, &format!("m{i}"), "")).collect();
        // Written from another thread: the server holds back reading while its answers
        // wait for this client to read them.
        let mut writer = client.stream.try_clone().expect("clone");
        let w = thread::spawn(move || io::Write::write_all(&mut writer, &all));
        for i in 1..=300 {
            assert_eq!(client.recv().echo_text(i), format!("m{i}"));
        }
        w.join().expect("writer thread").expect("write");
    });
}

#[test]
fn another_method_is_refused_405_and_the_server_closes() {
    // Sessions are on (the server seeds the engine): `GET` opens a session's stream and
    // `DELETE` ends a session; a `GET` naming no session is 405 (no stream outside a
    // session) and, as every 405, closes the connection.
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let mut client = Client::connect(addr);
        let r = client.call(
            format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n").as_bytes(),
        );
        assert_eq!(r.status, 405, "{r:?}");
        assert!(r.closes(), "{r:?}");
        assert!(client.is_closed_by_server(), "the server closes after a refusal");
        let mut client = Client::connect(addr);
        let r =
            client.call(format!("PUT /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n").as_bytes());
        assert_eq!(r.status, 405, "{r:?}");
        assert!(r.closes(), "{r:?}");
        assert_eq!(r.header("allow"), Some("GET, POST, DELETE"), "{r:?}");
        assert!(client.is_closed_by_server(), "the server closes after a refusal");
    });
}

#[test]
fn connection_close_requested_by_the_client() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let mut client = Client::connect(addr);
        let r = client.call(&echo_post(addr, 7, "bye", "Connection: close\r\n"));
        assert_eq!(r.echo_text(7), "bye");
        assert!(r.closes(), "{r:?}");
        assert!(client.is_closed_by_server());
    });
}

#[test]
fn many_connections_at_once() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let threads: Vec<_> = (0..20u64)
            .map(|t| {
                thread::spawn(move || {
                    let mut client = Client::connect(addr);
                    for i in 0..10u64 {
                        let id = t * 100 + i;
                        let text = format!("thread {t} request {i}");
                        assert_eq!(client.call(&echo_post(addr, id, &text, "")).echo_text(id), text);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("client thread");
        }
    });
}

#[test]
fn many_short_connections() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                thread::spawn(move || {
                    for i in 0..25u64 {
                        let mut client = Client::connect(addr);
                        let id = t * 100 + i;
                        assert_eq!(client.call(&echo_post(addr, id, "x", "")).echo_text(id), "x");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("client thread");
        }
    });
}

#[test]
fn a_request_trickling_in_byte_by_byte() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let mut client = Client::connect(addr);
        for b in echo_post(addr, 1, "slow", "") {
            client.send(&[b]);
        }
        assert_eq!(client.recv().echo_text(1), "slow");
    });
}

#[test]
fn large_request_and_response() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let mut client = Client::connect(addr);
        // ~800 KiB each way: more than socket buffers hold, so the server's writes block
        // and it waits for writable readiness.
        let text: String = (0..100_000).map(|i| format!("{:07}\n", i)).collect();
        let r = client.call(&echo_post(addr, 1, &text, ""));
        assert_eq!(r.echo_text(1), text);
        assert_eq!(client.call(&echo_post(addr, 2, "after", "")).echo_text(2), "after");
    });
}

#[test]
fn large_pipelined_requests() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let mut client = Client::connect(addr);
        // 6 MB each way: the server reads at most 1 MiB of a connection per call, then
        // re-arms its socket and comes back; it holds back reading while its answers wait
        // for this client, which starts reading only once everything is written (or after
        // a while, should the buffers be too small for that; no timing is checked).
        let texts: Vec<String> =
            (0..10u8).map(|i| char::from(b'a' + i).to_string().repeat(600_000)).collect();
        let all: Vec<u8> = (0..10).flat_map(|i| echo_post(addr, i, &texts[i as usize], "")).collect();
        let mut writer = client.stream.try_clone().expect("clone");
        let (done_tx, done) = mpsc::channel();
        let w = thread::spawn(move || {
            let r = io::Write::write_all(&mut writer, &all);
            let _ = done_tx.send(());
            r
        });
        let _ = done.recv_timeout(Duration::from_millis(300));
        for (i, text) in (0..).zip(&texts) {
            assert!(client.recv().echo_text(i) == *text, "answer {i} arrives whole");
        }
        w.join().expect("writer thread").expect("write");
    });
}

#[test]
fn oversized_body_is_refused_413_without_a_reset() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        let mut client = Client::connect(addr);
        let len = 2 << 20;
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n\
             Content-Length: {len}\r\n\r\n"
        );
        client.send(head.as_bytes());
        // The client keeps sending its body: the server must read (and drop) it while
        // the response is on its way, not reset the connection under it.
        let mut writer = client.stream.try_clone().expect("clone");
        let w = thread::spawn(move || {
            let chunk = vec![b' '; 64 * 1024];
            for _ in 0..(len / chunk.len()) {
                if io::Write::write_all(&mut writer, &chunk).is_err() {
                    break; // the server may stop reading once it lingered long enough
                }
            }
        });
        let r = client.recv();
        assert_eq!(r.status, 413, "{r:?}");
        assert!(r.closes(), "{r:?}");
        assert!(client.is_closed_by_server());
        w.join().expect("writer thread");
    });
}

#[test]
fn a_body_that_never_comes_times_out_408() {
    within(|| {
        let mut http = open_config();
        http.body_deadline(Duration::from_millis(50));
        let addr = spawn_server(engine_with(http));
        let mut client = Client::connect(addr);
        let post = echo_post(addr, 1, "never sent", "");
        client.send(&post[..post.len() - 5]); // the head and most of the body
        let r = client.recv();
        assert_eq!(r.status, 408, "{r:?}");
        assert!(r.closes(), "{r:?}");
        assert!(client.is_closed_by_server());
    });
}

#[test]
fn refusals_of_the_engine_reach_the_client() {
    within(|| {
        let addr = spawn_server(engine_with(open_config()));
        // Not a loopback Host: DNS-rebinding protection.
        let mut client = Client::connect(addr);
        let body = echo_body(1, "hi");
        let r = client.call(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        assert_eq!(r.status, 403, "{r:?}");
        assert!(client.is_closed_by_server());

        // A mirrored header that disagrees with the body: 400, the connection survives.
        let mut client = Client::connect(addr);
        let bad = String::from_utf8(echo_post(addr, 2, "hi", ""))
            .unwrap()
            .replace("Mcp-Name: echo", "Mcp-Name: nope");
        let r = client.call(bad.as_bytes());
        assert_eq!(r.status, 400, "{r:?}");
        assert_eq!(r.json()["error"]["code"], -32020, "{r:?}");
        assert!(!r.closes(), "{r:?}");
        assert_eq!(client.call(&echo_post(addr, 3, "still here", "")).echo_text(3), "still here");
    });
}

#[test]
fn at_the_limit_the_connection_idle_longest_makes_room() {
    within(|| {
        let mut http = open_config();
        http.max_connections(2);
        let addr = spawn_server(engine_with(http));
        let mut first = Client::connect(addr);
        let mut second = Client::connect(addr);
        assert_eq!(first.call(&echo_post(addr, 1, "a", "")).echo_text(1), "a");
        assert_eq!(second.call(&echo_post(addr, 2, "b", "")).echo_text(2), "b");
        // A third connection is served at once: the first (idle longest) is closed.
        let mut third = Client::connect(addr);
        assert_eq!(third.call(&echo_post(addr, 3, "c", "")).echo_text(3), "c");
        assert!(first.is_closed_by_server());
        assert_eq!(second.call(&echo_post(addr, 4, "d", "")).echo_text(4), "d");
    });
}

#[test]
fn a_connection_that_sends_nothing_is_closed_at_the_head_timeout() {
    within(|| {
        let mut http = open_config();
        http.head_timeout(Duration::from_millis(50));
        let addr = spawn_server(engine_with(http));
        let mut silent = Client::connect(addr);
        assert!(silent.is_closed_by_server(), "closed without a response");
        // A dripping head gets 408 at the same deadline.
        let mut slow = Client::connect(addr);
        slow.send(b"POST /mcp HTTP/1.1\r\nHo");
        let r = slow.recv();
        assert_eq!(r.status, 408, "{r:?}");
        assert!(slow.is_closed_by_server());
    });
}

#[test]
fn an_idle_keep_alive_connection_is_closed_at_the_idle_timeout() {
    within(|| {
        let mut http = open_config();
        http.idle_timeout(Duration::from_millis(50));
        let addr = spawn_server(engine_with(http));
        let mut client = Client::connect(addr);
        assert_eq!(client.call(&echo_post(addr, 1, "a", "")).echo_text(1), "a");
        assert!(client.is_closed_by_server());
    });
}

#[test]
fn register_checks_its_tokens() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut server = HttpServer::from_std(listener, engine_with(open_config())).expect("server");
    let poll = Poll::new().expect("poll");
    let err =
        server.register(poll.registry(), Token(5), 0..10).expect_err("the listener's token in the range");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    let err = server.register(poll.registry(), Token(5), 10..10).expect_err("an empty range");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    server.register(poll.registry(), Token(5), 10..20).expect("register");
    let err = server.register(poll.registry(), Token(5), 10..20).expect_err("twice");
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    server.deregister(poll.registry()).expect("deregister");
    server.register(poll.registry(), Token(0), 1..usize::MAX).expect("register again");
}

/// What the host of [`UserLoop`] saw.
#[derive(Debug, PartialEq)]
enum Seen {
    Authorized(bool),
    Call(Ticket, String),
    Cancelled(Ticket),
}

/// What the test asks the loop to do.
enum Command {
    Answer(Ticket, String),
    Stop,
}

/// A user-owned mio loop: the server registered next to a `Waker` of the test's, with
/// the host authorizing requests by their `Authorization` header and handing every tool
/// call to the test, which answers it later.
struct UserLoop {
    addr: SocketAddr,
    seen: mpsc::Receiver<Seen>,
    commands: mpsc::Sender<Command>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

const LISTENER: Token = Token(0);
const WAKE: Token = Token(1);
const CONNECTIONS: std::ops::Range<usize> = 100..200;

impl UserLoop {
    fn start() -> Self {
        let (seen_tx, seen) = mpsc::channel();
        let (commands, command_rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread = thread::spawn(move || -> io::Result<()> {
            let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
            let listener = TcpListener::bind("127.0.0.1:0")?;
            let mut server = HttpServer::from_std(listener, engine_with(http))?;
            let mut poll = Poll::new()?;
            let mut events = Events::with_capacity(64);
            let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
            server.register(poll.registry(), LISTENER, CONNECTIONS)?;
            let _ = ready_tx.send((server.local_addr()?, Arc::clone(&waker)));

            let mut host = |event: HttpEvent<'_>| -> Option<Verdict> {
                match event {
                    HttpEvent::Authorize(request) => {
                        let ok = request.headers.get("authorization") == Some(b"Bearer ok");
                        let _ = seen_tx.send(Seen::Authorized(ok));
                        Some(if ok { Verdict::Allow } else { Verdict::Unauthenticated })
                    }
                    HttpEvent::Mcp(Event::CallTool(call)) => {
                        #[derive(serde::Deserialize)]
                        struct Echo {
                            text: String,
                        }
                        let text = call.arguments.deserialize::<Echo>().map(|e| e.text).unwrap_or_default();
                        let _ = seen_tx.send(Seen::Call(call.ticket, text));
                        None
                    }
                    HttpEvent::Mcp(Event::Cancelled(ticket)) => {
                        let _ = seen_tx.send(Seen::Cancelled(ticket));
                        None
                    }
                    other => panic!("unexpected event {other:?}"),
                }
            };

            loop {
                match poll.poll(&mut events, server.poll_timeout()) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
                let mut stop = false;
                if events.iter().any(|e| e.token() == WAKE) {
                    for command in command_rx.try_iter() {
                        match command {
                            Command::Answer(ticket, text) => {
                                let content = [Content::text(&text)];
                                let _ = server.engine_mut().answer_tool(ticket, &ToolOutput::new(&content));
                            }
                            Command::Stop => stop = true,
                        }
                    }
                }
                // Also writes the answers given above.
                server.handle_events(poll.registry(), &events, &mut host)?;
                if stop {
                    return server.deregister(poll.registry());
                }
            }
        });
        let (addr, waker) = ready_rx.recv().expect("the loop started");
        Self { addr, seen, commands, waker, thread: Some(thread) }
    }

    fn next_seen(&self) -> Seen {
        self.seen.recv().expect("the loop is running")
    }

    /// Waits for the next tool call; returns its ticket and text.
    fn next_call(&self) -> (Ticket, String) {
        match self.next_seen() {
            Seen::Call(ticket, text) => (ticket, text),
            other => panic!("expected a tool call, saw {other:?}"),
        }
    }

    fn answer(&self, ticket: Ticket, text: &str) {
        self.commands.send(Command::Answer(ticket, text.to_owned())).expect("the loop is running");
        self.waker.wake().expect("wake");
    }

    fn stop(mut self) {
        let _ = self.commands.send(Command::Stop);
        self.waker.wake().expect("wake");
        self.thread.take().expect("running").join().expect("loop thread").expect("loop result");
    }
}

#[test]
fn user_loop_authorizes_and_answers_later() {
    within(|| {
        let user = UserLoop::start();
        let addr = user.addr;

        // No credentials: 401 before the body is read, and the connection ends.
        let mut client = Client::connect(addr);
        let r = client.call(&echo_post(addr, 1, "hi", ""));
        assert_eq!(r.status, 401, "{r:?}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"), "{r:?}");
        assert!(r.closes(), "{r:?}");
        assert!(client.is_closed_by_server());
        assert_eq!(user.next_seen(), Seen::Authorized(false));

        // Authorized: the call reaches the host, which answers later from outside the
        // callback.
        let mut client = Client::connect(addr);
        client.send(&echo_post(addr, 2, "hi", "Authorization: Bearer ok\r\n"));
        assert_eq!(user.next_seen(), Seen::Authorized(true));
        let (ticket, text) = user.next_call();
        assert_eq!(text, "hi");
        user.answer(ticket, "HI");
        assert_eq!(client.recv().echo_text(2), "HI");

        // Pipelined behind an unanswered request: served once it is answered.
        let mut both = echo_post(addr, 3, "three", "Authorization: Bearer ok\r\n");
        both.extend_from_slice(&echo_post(addr, 4, "four", "Authorization: Bearer ok\r\n"));
        client.send(&both);
        for (id, text) in [(3, "three"), (4, "four")] {
            assert_eq!(user.next_seen(), Seen::Authorized(true));
            let (ticket, seen) = user.next_call();
            assert_eq!(seen, text);
            user.answer(ticket, &text.to_uppercase());
            assert_eq!(client.recv().echo_text(id), text.to_uppercase());
        }

        // An answer far larger than the socket buffers, with a request pipelined behind
        // it: written as the client reads.
        let mut both = echo_post(addr, 5, "big", "Authorization: Bearer ok\r\n");
        both.extend_from_slice(&echo_post(addr, 6, "small", "Authorization: Bearer ok\r\n"));
        client.send(&both);
        let big = "x".repeat(16 << 20);
        assert_eq!(user.next_seen(), Seen::Authorized(true));
        let (ticket, _) = user.next_call();
        user.answer(ticket, &big);
        // The pipelined request is parsed only once the client has read most of the big
        // answer (the engine holds back while 64 KiB or more of a connection's output is
        // unsent), so read it first.
        assert!(client.recv().echo_text(5) == big, "the big answer arrives whole");
        assert_eq!(user.next_seen(), Seen::Authorized(true));
        let (ticket, _) = user.next_call();
        user.answer(ticket, "small");
        assert_eq!(client.recv().echo_text(6), "small");
        user.stop();
    });
}

#[test]
fn closing_the_connection_cancels_the_request() {
    within(|| {
        let user = UserLoop::start();
        let addr = user.addr;
        let mut client = Client::connect(addr);
        client.send(&echo_post(addr, 1, "never answered", "Authorization: Bearer ok\r\n"));
        assert_eq!(user.next_seen(), Seen::Authorized(true));
        let (ticket, _) = user.next_call();
        drop(client);
        assert_eq!(user.next_seen(), Seen::Cancelled(ticket));
        // A late answer is refused by the engine and changes nothing.
        user.answer(ticket, "too late");

        // The server is still serving.
        let mut client = Client::connect(addr);
        client.send(&echo_post(addr, 2, "next", "Authorization: Bearer ok\r\n"));
        assert_eq!(user.next_seen(), Seen::Authorized(true));
        let (ticket, _) = user.next_call();
        user.answer(ticket, "next");
        assert_eq!(client.recv().echo_text(2), "next");
        user.stop();
    });
}
