//! The one input rule of `HttpEngine` (see `mcp_engine::http`, "Input"): what
//! `input_capacity` says at each step of a request, and that bytes given within it are
//! always taken whole, whatever the pieces, pipelining and verdicts.

use mcp_engine::Commands;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent, Verdict};
use mcp_engine::{Config, Content, Event, Instant, Ticket, ToolOutput};
use mcp_fixture as everything;
use mcp_tests::integrity::{self as integrity, check_echo_response, echo_of_len};
use mcp_tests::wire::{Client, client_with, parse_responses};
use proptest::prelude::*;

const HEAD_CAPACITY: usize = 16 * 1024;

fn engine(authorization: Authorization) -> HttpEngine {
    let http = HttpConfig::new(AllowedOrigins::Any, authorization);
    HttpEngine::new(Config::new("input", "1"), http, everything::catalog())
}

/// The `echo` POST of `body`, and where its head ends.
fn request(body: &str) -> (Vec<u8>, usize) {
    let raw = integrity::post("localhost", body, "");
    let head = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
    (raw, head)
}

#[test]
fn the_capacity_follows_each_step_of_a_request() {
    let now = Instant::ZERO;
    let mut e = engine(Authorization::Host);
    let conn = e.open(now, None).expect("open");
    assert_eq!(e.input_capacity(conn), HEAD_CAPACITY, "a head first");
    let (body, text) = echo_of_len(1, 1, 50_000);
    let (raw, head) = request(&body);
    assert_eq!(e.handle_input(now, conn, &raw[..head]), head);

    // The host decides on the head: no body byte is taken meanwhile.
    let Some(HttpEvent::Authorize(a)) = e.poll_event() else { panic!("an Authorize event") };
    assert_eq!(a.conn, conn);
    assert_eq!(e.input_capacity(conn), 0);
    assert_eq!(e.handle_input(now, conn, &raw[head..]), 0, "nothing taken past the capacity");
    e.authorize(now, conn, Verdict::Allow);
    assert_eq!(e.input_capacity(conn), 50_000, "the rest of the body");

    // Given more than the capacity (the request and the first bytes of a next one), it
    // takes exactly the capacity.
    let mut more = raw[head..].to_vec();
    more.extend_from_slice(b"POST /mcp HTTP/1.1\r\n");
    assert_eq!(e.handle_input(now, conn, &more), 50_000);
    let ticket: Ticket = match e.poll_event() {
        Some(HttpEvent::Mcp(Event::CallTool(call))) => call.ticket,
        other => panic!("the call: {other:?}"),
    };
    assert_eq!(e.input_capacity(conn), 0, "the request waits for its answer");
    let content = [Content::text(&text)];
    e.answer_tool(ticket, &ToolOutput::new(&content)).expect("answered");
    let out = e.pending_output(conn).to_vec();
    e.consume_output(conn, out.len());
    check_echo_response(&parse_responses(&out)[0], 1, &text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.input_capacity(conn), HEAD_CAPACITY, "the next head");

    // A refused request: what follows is taken and dropped, 64 KiB at a time.
    assert_eq!(e.handle_input(now, conn, b"GET /nowhere HTTP/1.1\r\nHost: localhost\r\n\r\n"), 42);
    assert_eq!(e.input_capacity(conn), 64 * 1024);
    assert_eq!(e.handle_input(now, conn, &[b'x'; 200_000]), 200_000);
    let out = String::from_utf8(e.pending_output(conn).to_vec()).expect("UTF-8");
    assert!(out.starts_with("HTTP/1.1 404"), "{out}");

    e.handle_closed(now, conn);
    assert_eq!(e.input_capacity(conn), 0, "a closed connection takes nothing");
}

#[test]
fn output_unsent_holds_the_next_request_back() {
    let now = Instant::ZERO;
    let mut e = engine(Authorization::Everyone);
    let conn = e.open(now, None).expect("open");
    let (body, _) = echo_of_len(1, 2, 100_000);
    let (raw, _) = request(&body);
    assert_eq!(e.handle_input(now, conn, &raw), raw.len());
    while let Some(HttpEvent::Mcp(ev)) = e.poll_event() {
        everything::respond(ev);
    }
    assert!(e.pending_output(conn).len() >= 64 * 1024, "a response of more than 64 KiB waits");
    assert_eq!(e.input_capacity(conn), 0, "read nothing until it drains");
    let n = e.pending_output(conn).len();
    e.consume_output(conn, n);
    assert_eq!(e.input_capacity(conn), HEAD_CAPACITY);
}

/// Feeds `bytes` by the rule: each piece at most the capacity (and the plan's next cut),
/// asserting it is taken whole, every event answered after it; returns the output.
fn feed_by_capacity(c: &mut Client, bytes: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut at, mut k, mut stalls) = (0, 0, 0);
    while at < bytes.len() {
        let room = c.e.input_capacity(c.conn);
        let cut = cuts.get(k).copied().unwrap_or(usize::MAX).max(1);
        k += 1;
        let n = room.min(cut).min(bytes.len() - at);
        assert_eq!(c.e.handle_input(c.now, c.conn, &bytes[at..at + n]), n, "given {n} with room for {room}");
        at += n;
        c.drain(&mut out);
        stalls = if n == 0 { stalls + 1 } else { 0 };
        assert!(stalls < 3, "no room after draining");
    }
    c.drain(&mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Pipelined `echo` calls of any size up to the cap, in any pieces, with or without
    /// the host's verdict on each head: every piece within the capacity is taken whole,
    /// and every echo comes back.
    #[test]
    fn pieces_within_the_capacity_are_taken_whole(
        seed in any::<u64>(),
        lens in integrity::lens(integrity::MAX_BODY),
        cuts in proptest::collection::vec(1usize..70_000, 0..30),
        host in any::<bool>(),
    ) {
        let authorization = if host { Authorization::Host } else { Authorization::Everyone };
        let mut c = client_with(HttpConfig::new(AllowedOrigins::Any, authorization), everything::catalog());
        let mut bytes = Vec::new();
        let mut texts = Vec::new();
        for (i, &len) in lens.iter().enumerate() {
            let (body, text) = echo_of_len(i as u64 + 1, seed ^ i as u64, len);
            bytes.extend_from_slice(&request(&body).0);
            texts.push(text);
        }
        let responses = parse_responses(&feed_by_capacity(&mut c, &bytes, &cuts));
        prop_assert_eq!(responses.len(), texts.len());
        for (i, (r, text)) in responses.iter().zip(&texts).enumerate() {
            let checked = check_echo_response(r, i as u64 + 1, text);
            prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
        }
    }
}

/// The head of an embedded exchange is decided before any body byte: a declared length
/// over the cap is refused at once, and a chunk-framed body is refused as it passes it.
#[test]
fn an_embedded_exchange_applies_the_cap_as_the_body_comes() {
    let now = Instant::ZERO;
    let mut e = engine(Authorization::Everyone);
    let headers: [(&str, &[u8]); 1] = [("host", b"localhost")];
    let too_long = Some(integrity::MAX_BODY as u64 + 1);
    let conn = e.handle_request_head(now, None, "POST", "/mcp", &headers, too_long).expect("open");
    assert_eq!(e.response(conn).map(|r| r.status), Some(413));

    let conn = e.handle_request_head(now, None, "POST", "/mcp", &headers, None).expect("open");
    assert!(e.response(conn).is_none(), "the head is allowed: the body is read");
    let mut given = 0;
    while e.response(conn).is_none() {
        let room = e.input_capacity(conn);
        let n = room.saturating_sub(32).clamp(1, 60_000);
        let mut piece = format!("{n:x}\r\n").into_bytes();
        piece.extend(std::iter::repeat_n(b' ', n));
        piece.extend_from_slice(b"\r\n");
        assert!(piece.len() <= room, "a piece within the room ({room})");
        assert_eq!(e.handle_input(now, conn, &piece), piece.len());
        given += n;
        assert!(given <= integrity::MAX_BODY + 60_000, "refused once past the cap");
    }
    assert_eq!(e.response(conn).map(|r| r.status), Some(413));
    assert!(given > integrity::MAX_BODY, "{given} bytes given");
}
