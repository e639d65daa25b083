//! Heap allocations per request in steady state of `StdioServer`, counted exactly:
//! the server is driven from the test's own mio loop on this thread (so the per-thread
//! counter of `allocation_counter` sees the server, the engine and the host), the client
//! writing its requests once and reading the answers into a fixed buffer. With the
//! feature `tracing` compiled in (as under `--all-features`) and no subscriber, the span
//! path (the request's span, the engine's records of what it and the host answered)
//! allocates nothing either.

use std::io::{Read as _, Write as _};

use mcp_engine::{Catalog, Config, Content, Engine, Event, Tool, ToolOutput};
use mcp_io_mio::StdioServer;
use mio::unix::pipe;
use mio::{Events, Poll, Token};

const ROUNDS: usize = 200;

/// The tests of this file run one at a time: a subscriber set on one thread changes how
/// every thread's spans are decided (tracing's callsite interest is global), so a count
/// taken beside it is not the steady state's.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// One request line of the `2026-07-28` revision with the client's `traceparent`.
fn line(id: usize, method: &str, params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"traceparent":"{PARENT}"}}}}}}"#
    ) + "\n"
}

/// Answers every call with a static text, inside the callback.
fn host(event: Event<'_>) {
    if let Event::CallTool(call) = event {
        let _ = call.answer(&ToolOutput::new(&[Content::text("ok")]));
    }
}

/// Allocations in [`ROUNDS`] rounds (a `tools/call` and a `ping` each) of a server driven
/// from this thread's mio loop, after 20 rounds of warm-up.
fn allocations() -> u64 {
    let catalog = Catalog::builder().tool(Tool::new("t")).build().expect("catalog");
    let engine = Engine::new(Config::new("alloc", "1"), catalog);
    let (mut client_tx, server_rx) = pipe::new().expect("pipe");
    let (server_tx, mut client_rx) = pipe::new().expect("pipe");
    client_tx.set_nonblocking(false).expect("blocking");
    client_rx.set_nonblocking(false).expect("blocking");
    let mut server = StdioServer::new(engine, server_rx, server_tx).expect("server");
    let mut poll = Poll::new().expect("poll");
    let mut events = Events::with_capacity(8);
    server.register(poll.registry(), Token(0), Token(1)).expect("register");
    // A host-served call and a request the engine answers itself (its record polled).
    let requests = [line(1, "tools/call", r#""name":"t","#), line(2, "ping", "")];
    let mut buf = [0u8; 4096];
    let mut round = |n: usize| {
        for _ in 0..n {
            for request in &requests {
                client_tx.write_all(request.as_bytes()).expect("write");
                let mut got = 0;
                while !buf[..got].contains(&b'\n') {
                    poll.poll(&mut events, None).expect("poll");
                    for event in events.iter() {
                        server.handle_ready(poll.registry(), event, host).expect("served");
                    }
                    // The answer is written by now: read what is there.
                    got += client_rx.read(&mut buf[got..]).expect("read");
                }
                assert!(buf[..got].starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":"), "{:?}", &buf[..got]);
            }
        }
    };
    round(20);
    allocation_counter::measure(|| round(ROUNDS)).count_total
}

#[test]
fn a_request_costs_no_allocation_in_steady_state() {
    let _one = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let total = allocations();
    assert_eq!(total, 0, "{total} allocations in {ROUNDS} rounds of a tools/call and a ping");
}

/// With a subscriber that records the spans (`fmt` at INFO into `io::sink`), the spans
/// cost what the subscriber allocates: counted here for `docs/performance.md`, and
/// proof that the feature's spans are made at all.
#[cfg(feature = "tracing")]
#[test]
fn with_a_subscriber_the_spans_allocate() {
    let _one = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let subscriber = tracing_subscriber::fmt().with_writer(std::io::sink).finish();
    let total = tracing::subscriber::with_default(subscriber, allocations);
    println!("fmt subscriber: {total} allocations in {ROUNDS} rounds of a tools/call and a ping");
    assert!(total >= ROUNDS as u64, "a round recorded no span: {total} allocations");
}
