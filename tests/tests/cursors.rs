//! Sealed list cursors and expiry on the host's wall clock (issue 14, review items 1-2).
//!
//! A cursor is refused (`-32602`) on every list method, stdio and HTTP, when it comes from
//! another principal, another page size, another protocol revision or another catalog,
//! when it was forged or changed, and when it has expired on the wall clock the host
//! passes in. `requestState` expires on the same clock, so one engine can judge what
//! another sealed.

use core::time::Duration;
use mcp_engine::Commands;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, Principal, Verdict};
use mcp_engine::{Catalog, Config, Engine, Instant, Prompt, Resource, ResourceTemplate, Tool, UnixTime};
use mcp_fixture as everything;
use mcp_tests::peer::{Peer, WIRES, Wire};
use mcp_tests::wire::{self, Client};
use mcp_tests::{legacy_open, lines, modern, request};
use serde_json::{Value, json};

const KEY: [u8; 32] = [0x5a; 32];
const METHODS: [(&str, &str); 4] = [
    ("tools/list", "tools"),
    ("resources/list", "resources"),
    ("resources/templates/list", "resourceTemplates"),
    ("prompts/list", "prompts"),
];
/// A wall-clock time well after the epoch (2026-12-02).
const T: UnixTime = UnixTime::from_secs(1_796_000_000);
const TTL: Duration = Duration::from_secs(300);
const SKEW: Duration = Duration::from_secs(20);

/// `n` items of every list.
fn catalog(n: usize) -> Catalog {
    let mut b = Catalog::builder();
    for i in 0..n {
        b = b
            .tool(Tool::new(format!("tool_{i:02}")))
            .resource(Resource::new(format!("test://r/{i:02}"), format!("r{i}")))
            .template(ResourceTemplate::new(format!("test://t{i:02}/{{id}}"), format!("t{i}")))
            .prompt(Prompt::new(format!("prompt_{i:02}")));
    }
    b.build().unwrap()
}

fn config(page: usize) -> Config {
    let mut c = Config::new("cursors", "1");
    c.secret_key(KEY).page_size(page).cursor_ttl(TTL).clock_skew(SKEW);
    c
}

/// A stdio engine of `catalog(5)`, pages of 2, its wall clock at `wall` (if any).
fn engine(wall: Option<UnixTime>) -> Engine {
    let mut e = Engine::new(config(2), catalog(5));
    if let Some(w) = wall {
        e.set_wall_clock(Instant::ZERO, w);
    }
    e
}

/// Sends one line at `now`; returns the one message.
fn send(e: &mut Engine, now: Instant, line: &str) -> Value {
    e.handle_input(now, line.as_bytes());
    let mut out = lines(e.pending_output());
    e.consume_output(e.pending_output().len());
    assert_eq!(out.len(), 1, "{out:?}");
    out.remove(0)
}

/// A 2026-07-28 list request, with `cursor` if any.
fn list_line(method: &str, cursor: Option<&str>) -> String {
    modern(1, method, cursor.map_or(json!({}), |c| json!({ "cursor": c })))
}

/// The first page's `nextCursor` of `method` (stdio, 2026-07-28).
fn first_cursor(e: &mut Engine, method: &str) -> String {
    let v = send(e, Instant::ZERO, &list_line(method, None));
    v["result"]["nextCursor"].as_str().unwrap_or_else(|| panic!("{method}: {v}")).to_owned()
}

/// Asserts `v` is the `-32602` answer whose message holds `why`.
fn refused(v: &Value, why: &str) {
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains(why), "{msg:?} should say {why:?}");
}

/// The names (or uris) of a page.
fn page(v: &Value, member: &str) -> Vec<String> {
    v["result"][member]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_owned())
        .collect()
}

/// An HTTP client (origins: any; the host authorizes) answering every `Authorize` with
/// `verdict`.
fn http(config: Config, verdict: Verdict) -> Client {
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let mut c = wire::client_of(config, http, catalog(5), Box::new(|_| {}));
    c.verdict = verdict;
    c
}

fn http_list(c: &mut Client, method: &str, cursor: Option<&str>) -> Value {
    let params = cursor.map_or(json!({}), |cur| json!({ "cursor": cur }));
    wire::one(c, &wire::post(&wire::req(1, method, params), &[])).json()
}

#[test]
fn cursors_walk_every_list_and_are_short_and_url_safe() {
    let mut e = engine(Some(T));
    for (method, member) in METHODS {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let v = send(&mut e, Instant::ZERO, &list_line(method, cursor.as_deref()));
            seen.extend(page(&v, member));
            match v["result"]["nextCursor"].as_str() {
                Some(c) => {
                    assert_eq!(c.len(), 40, "{c}");
                    assert!(c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{c}");
                    cursor = Some(c.to_owned());
                }
                None => break,
            }
        }
        assert_eq!(seen.len(), 5, "{method}: {seen:?}");
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, seen, "{method}: every item once, in order");
    }
}

#[test]
fn a_cursor_of_another_principal_is_refused_over_http() {
    let alice = Verdict::AllowAs(Principal::of(b"alice"));
    let bob = Verdict::AllowAs(Principal::of(b"bob"));
    let mut c = http(config(2), alice);
    for (method, member) in METHODS {
        c.verdict = alice;
        let first = http_list(&mut c, method, None);
        let cursor = first["result"]["nextCursor"].as_str().unwrap().to_owned();
        let next = http_list(&mut c, method, Some(&cursor));
        assert_eq!(page(&next, member).len(), 2, "{method}: alice goes on: {next}");
        c.verdict = bob;
        refused(&http_list(&mut c, method, Some(&cursor)), "invalid cursor");
        c.verdict = Verdict::Allow;
        refused(&http_list(&mut c, method, Some(&cursor)), "invalid cursor");
    }
}

#[test]
fn stdio_cursors_are_bound_to_no_principal() {
    // A stdio cursor (no principal) opens on an HTTP engine with the same key only for a
    // request that names no principal either.
    for (method, member) in METHODS {
        let cursor = first_cursor(&mut engine(None), method);
        let mut anonymous = http(config(2), Verdict::Allow);
        assert_eq!(page(&http_list(&mut anonymous, method, Some(&cursor)), member).len(), 2, "{method}");
        let mut alice = http(config(2), Verdict::AllowAs(Principal::of(b"alice")));
        refused(&http_list(&mut alice, method, Some(&cursor)), "invalid cursor");
    }
}

#[test]
fn a_cursor_is_bound_to_the_page_size() {
    for (method, member) in METHODS {
        let cursor = first_cursor(&mut engine(None), method);
        let mut other = Engine::new(config(3), catalog(5));
        refused(&send(&mut other, Instant::ZERO, &list_line(method, Some(&cursor))), "invalid cursor");
        let mut same = Engine::new(config(2), catalog(5));
        let v = send(&mut same, Instant::ZERO, &list_line(method, Some(&cursor)));
        assert_eq!(page(&v, member).len(), 2, "{method}: {v}");
    }
}

#[test]
fn a_cursor_is_bound_to_the_protocol_revision() {
    let opened = |rev: &str| {
        let mut e = engine(None);
        e.handle_input(Instant::ZERO, legacy_open(rev).as_bytes());
        e.consume_output(e.pending_output().len());
        e
    };
    for (method, member) in METHODS {
        let mut e = opened("2025-11-25");
        let v = send(&mut e, Instant::ZERO, &request(1, method, json!({})));
        let cursor = v["result"]["nextCursor"].as_str().unwrap().to_owned();
        let retry = request(2, method, json!({ "cursor": cursor }));
        let v = send(&mut opened("2025-11-25"), Instant::ZERO, &retry);
        assert_eq!(page(&v, member).len(), 2, "{method}: {v}");
        refused(&send(&mut opened("2025-06-18"), Instant::ZERO, &retry), "invalid cursor");
        let modern_retry = list_line(method, Some(&cursor));
        refused(&send(&mut engine(None), Instant::ZERO, &modern_retry), "invalid cursor");
    }
}

#[test]
fn a_cursor_is_stale_once_its_list_is_replaced() {
    let mut e = engine(None);
    let tools = first_cursor(&mut e, "tools/list");
    let prompts = first_cursor(&mut e, "prompts/list");
    // The same catalog again: the lists are the same, and so are their cursors.
    e.replace_catalog(catalog(5)).unwrap();
    assert_eq!(page(&send(&mut e, Instant::ZERO, &list_line("tools/list", Some(&tools))), "tools").len(), 2);
    // One more tool: tools cursors are stale, prompts cursors are not.
    let mut b = Catalog::builder().tool(Tool::new("tool_zz"));
    for t in catalog(5).tools() {
        b = b.tool(t.clone());
    }
    for r in catalog(5).resources() {
        b = b.resource(r.clone());
    }
    for t in catalog(5).templates() {
        b = b.template(t.clone());
    }
    for p in catalog(5).prompts() {
        b = b.prompt(p.clone());
    }
    e.replace_catalog(b.build().unwrap()).unwrap();
    refused(&send(&mut e, Instant::ZERO, &list_line("tools/list", Some(&tools))), "invalid cursor");
    let v = send(&mut e, Instant::ZERO, &list_line("prompts/list", Some(&prompts)));
    assert_eq!(page(&v, "prompts"), ["prompt_02", "prompt_03"], "{v}");
    // A fresh cursor of the new list walks it.
    let fresh = first_cursor(&mut e, "tools/list");
    assert_eq!(page(&send(&mut e, Instant::ZERO, &list_line("tools/list", Some(&fresh))), "tools").len(), 2);
}

#[test]
fn a_forged_or_changed_cursor_is_refused_on_every_list_over_both_wires() {
    for w in WIRES {
        let mut p = Peer::new(w, config(2), catalog(5), Box::new(|_| {}));
        for (method, _) in METHODS {
            let first = p.call(1, method, json!({})).1;
            let cursor = first["result"]["nextCursor"].as_str().unwrap().to_owned();
            for at in [0, 1, 20, 39] {
                let mut bytes = cursor.clone().into_bytes();
                bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
                let flipped = String::from_utf8(bytes).unwrap();
                refused(&p.call(2, method, json!({ "cursor": flipped })).1, "invalid cursor");
            }
            // Made up, cut short, and an old (v1) keyset cursor: "c1t" and a key.
            for forged in ["", "AAAA", &cursor[..39], "YzF0dG9vbF8wMQ", &"A".repeat(40)] {
                refused(&p.call(3, method, json!({ "cursor": forged })).1, "invalid cursor");
            }
            // Another list's cursor says whose it is.
            let other = if method == "tools/list" { "prompts/list" } else { "tools/list" };
            refused(&p.call(4, other, json!({ "cursor": cursor })).1, method);
        }
        assert_eq!(p.wire(), w);
    }
}

#[test]
fn a_cursor_expires_on_the_wall_clock_after_its_lifetime_and_the_skew() {
    let last = T + TTL + SKEW;
    for (method, member) in METHODS {
        let cursor = first_cursor(&mut engine(Some(T)), method);
        let line = list_line(method, Some(&cursor));
        // Judged by other engines with the same key, whose Instants mean nothing to it.
        let mut judge = Engine::new(config(2), catalog(5));
        judge.set_wall_clock(Instant::from_micros(7), last);
        let v = send(&mut judge, Instant::from_micros(7), &line);
        assert_eq!(page(&v, member).len(), 2, "{method}: the last microsecond holds: {v}");
        let late = engine(Some(last + Duration::from_micros(1)));
        refused(&send(&mut { late }, Instant::ZERO, &line), "expired");
        // A judge whose clock is behind by the skew accepts; further behind, it refuses
        // (sealed by a clock too far ahead).
        let behind = UnixTime::from_micros(T.as_micros() - SKEW.as_micros() as u64);
        assert!(send(&mut engine(Some(behind)), Instant::ZERO, &line)["result"].is_object());
        let too_far = UnixTime::from_micros(behind.as_micros() - 1);
        refused(&send(&mut engine(Some(too_far)), Instant::ZERO, &line), "expired");
    }
}

#[test]
fn the_wall_clock_advances_with_the_instants_until_it_is_set_again() {
    let mut e = engine(Some(T));
    let cursor = first_cursor(&mut e, "tools/list");
    let line = list_line("tools/list", Some(&cursor));
    let lifetime = TTL + SKEW;
    let v = send(&mut e, Instant::ZERO + lifetime, &line);
    assert!(v["result"].is_object(), "{v}");
    refused(&send(&mut e, Instant::ZERO + lifetime + Duration::from_micros(1), &line), "expired");
    // Set back (a restart, a clock step): judged on the new reading.
    e.set_wall_clock(Instant::ZERO, T + Duration::from_secs(1));
    assert!(send(&mut e, Instant::ZERO, &line)["result"].is_object());
}

#[test]
fn a_cursor_sealed_by_one_engine_opens_in_another_with_a_later_wall_clock() {
    let mut a = engine(Some(T));
    let cursor = first_cursor(&mut a, "resources/list");
    // Another process: its Instants started elsewhere, its wall clock a minute later.
    let mut b = Engine::new(config(2), catalog(5));
    b.set_wall_clock(Instant::from_micros(123_456_789), T + Duration::from_secs(60));
    let v = send(&mut b, Instant::from_micros(123_456_789), &list_line("resources/list", Some(&cursor)));
    let uris: Vec<_> =
        v["result"]["resources"].as_array().unwrap().iter().map(|r| r["uri"].clone()).collect();
    assert_eq!(uris, [json!("test://r/02"), json!("test://r/03")], "{v}");
    // An engine that was never given the wall clock cannot judge it, and refuses it.
    refused(&send(&mut engine(None), Instant::ZERO, &list_line("resources/list", Some(&cursor))), "expired");
    // Nor does an engine with the wall clock take a cursor sealed on Instants.
    let local = first_cursor(&mut engine(None), "resources/list");
    refused(
        &send(&mut b, Instant::from_micros(123_456_789), &list_line("resources/list", Some(&local))),
        "expired",
    );
}

#[test]
fn without_a_wall_clock_cursors_expire_on_the_instants() {
    let mut e = engine(None);
    let cursor = first_cursor(&mut e, "prompts/list");
    let line = list_line("prompts/list", Some(&cursor));
    assert!(send(&mut e, Instant::ZERO + TTL, &line)["result"].is_object(), "no skew on one clock");
    refused(&send(&mut e, Instant::ZERO + TTL + Duration::from_micros(1), &line), "expired");
}

#[test]
fn without_a_key_each_list_is_one_page_and_no_cursor_is_ours() {
    let mut c = Config::new("cursors", "1");
    c.page_size(2);
    let mut e = Engine::new(c, catalog(5));
    let sealed = first_cursor(&mut engine(None), "tools/list");
    for (method, member) in METHODS {
        let v = send(&mut e, Instant::ZERO, &list_line(method, None));
        assert_eq!(page(&v, member).len(), 5, "{method}: {v}");
        assert!(v["result"].get("nextCursor").is_none(), "{v}");
        refused(&send(&mut e, Instant::ZERO, &list_line(method, Some(&sealed))), "invalid cursor");
    }
}

#[test]
fn the_cursor_lifetime_and_skew_are_clamped() {
    // A zero lifetime is one second; a skew over ten minutes is ten minutes.
    let mut c = config(2);
    c.cursor_ttl(Duration::ZERO).clock_skew(Duration::from_secs(3600));
    let mut a = Engine::new(c.clone(), catalog(5));
    a.set_wall_clock(Instant::ZERO, T);
    let cursor = first_cursor(&mut a, "tools/list");
    let line = list_line("tools/list", Some(&cursor));
    let at = |d: Duration| {
        let mut e = Engine::new(c.clone(), catalog(5));
        e.set_wall_clock(Instant::ZERO, T + d);
        send(&mut e, Instant::ZERO, &line)
    };
    assert!(at(Duration::from_secs(601))["result"].is_object());
    refused(&at(Duration::from_secs(601) + Duration::from_micros(1)), "expired");
}

// ---------------------------------------------------------------- requestState

const STATE_TOOL: &str = "test_input_required_result_request_state";

fn state_config() -> Config {
    let mut c = everything::config();
    c.secret_key(KEY).request_state_ttl(TTL).clock_skew(SKEW);
    c
}

fn peer(w: Wire, wall: Option<UnixTime>) -> Peer {
    let mut p = Peer::new(w, state_config(), everything::catalog(), Box::new(everything::respond));
    if let Some(t) = wall {
        set_wall(&mut p, Instant::ZERO, t);
    }
    p
}

/// At `now` (the peer's time), the wall clock reads `t`.
fn set_wall(p: &mut Peer, now: Instant, t: UnixTime) {
    match p.wire() {
        Wire::Stdio => p.stdio_engine().set_wall_clock(now, t),
        Wire::Http => p.http_engine().set_wall_clock(now, t),
    }
}

fn issue_state(p: &mut Peer) -> String {
    let (_, r) = p.call(1, "tools/call", json!({ "name": STATE_TOOL, "arguments": {} }));
    r["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{r}")).to_owned()
}

fn retry(p: &mut Peer, state: &str) -> Value {
    let params = json!({
        "name": STATE_TOOL, "arguments": {}, "requestState": state,
        "inputResponses": { "confirm": { "action": "accept", "content": { "ok": true } } }
    });
    p.call(2, "tools/call", params).1
}

fn completed(v: &Value) -> bool {
    v["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("state-ok"))
}

#[test]
fn request_state_expires_on_the_wall_clock_after_its_lifetime_and_the_skew() {
    for w in WIRES {
        let state = issue_state(&mut peer(w, Some(T)));
        let last = T + TTL + SKEW;
        assert!(completed(&retry(&mut peer(w, Some(last)), &state)), "{w:?}: the last microsecond holds");
        let r = retry(&mut peer(w, Some(last + Duration::from_micros(1))), &state);
        refused(&r, "expired");
    }
}

#[test]
fn request_state_sealed_by_one_engine_opens_in_another_with_a_later_wall_clock() {
    for w in WIRES {
        let state = issue_state(&mut peer(w, Some(T)));
        // A restarted process: fresh Instants (it has run for an hour), a later wall clock.
        let mut b = peer(w, None);
        let hour = Duration::from_secs(3600);
        b.advance(hour);
        set_wall(&mut b, Instant::ZERO + hour, T + Duration::from_secs(90));
        assert!(completed(&retry(&mut b, &state)), "{w:?}");
        // Without a wall clock the state cannot be judged, and is refused.
        refused(&retry(&mut peer(w, None), &state), "expired");
        // A state sealed on Instants is refused by an engine on the wall clock.
        let local = issue_state(&mut peer(w, None));
        refused(&retry(&mut peer(w, Some(T)), &local), "expired");
    }
}

#[test]
fn request_state_from_a_clock_too_far_ahead_is_refused() {
    // The judge's clock behind the sealer's by the skew: accepted; by more: refused.
    let behind = UnixTime::from_micros(T.as_micros() - SKEW.as_micros() as u64);
    for w in WIRES {
        let state = issue_state(&mut peer(w, Some(T)));
        assert!(completed(&retry(&mut peer(w, Some(behind)), &state)), "{w:?}");
        let further = UnixTime::from_micros(behind.as_micros() - 1);
        refused(&retry(&mut peer(w, Some(further)), &state), "expired");
    }
}

// ---------------------------------------------------------------- the adapters

/// Judges a cursor an adapter issued: an engine without a wall clock refuses it (so it was
/// sealed on the wall clock), one whose wall clock reads the system's accepts it (the
/// only reliance on real time: less than the cursor's five minutes between the two).
fn judge_adapter_cursor(out: &[u8]) {
    let v = lines(out);
    let cursor = v[0]["result"]["nextCursor"].as_str().unwrap_or_else(|| panic!("{v:?}")).to_owned();
    let line = list_line("tools/list", Some(&cursor));
    refused(&send(&mut engine(None), Instant::ZERO, &line), "expired");
    let now = UnixTime::from_system_time(std::time::SystemTime::now());
    let v = send(&mut engine(Some(now)), Instant::ZERO, &line);
    assert_eq!(page(&v, "tools"), ["tool_02", "tool_03"], "{v}");
}

#[test]
fn the_mio_adapter_seals_on_the_wall_clock() {
    use std::io::{Read, Write};
    let (client_tx, server_rx) = mio::unix::pipe::new().unwrap();
    let (server_tx, client_rx) = mio::unix::pipe::new().unwrap();
    client_tx.set_nonblocking(false).unwrap();
    client_rx.set_nonblocking(false).unwrap();
    let server = mcp_io_mio::StdioServer::new(engine(None), server_rx, server_tx).unwrap();
    let handle = std::thread::spawn(move || server.run(|_| {}));
    let mut tx = std::fs::File::from(std::os::fd::OwnedFd::from(client_tx));
    tx.write_all(list_line("tools/list", None).as_bytes()).unwrap();
    drop(tx);
    let mut rx = std::fs::File::from(std::os::fd::OwnedFd::from(client_rx));
    let mut out = Vec::new();
    rx.read_to_end(&mut out).unwrap();
    handle.join().unwrap().unwrap();
    judge_adapter_cursor(&out);
}

#[test]
fn the_tokio_adapter_seals_on_the_wall_clock() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(async {
        let (client, server) = tokio::io::duplex(4096);
        let (read_half, write_half) = tokio::io::split(server);
        let handler = std::sync::Arc::new(mcp_io_tokio::handler::tool_fn(|_call| async move {
            Ok(mcp_io_tokio::ToolReply::text("unused"))
        }));
        let serving = tokio::spawn(mcp_io_tokio::stdio::serve(engine(None), handler, read_half, write_half));
        let (mut rx, mut tx) = tokio::io::split(client);
        tx.write_all(list_line("tools/list", None).as_bytes()).await.unwrap();
        tx.shutdown().await.unwrap();
        let mut out = Vec::new();
        rx.read_to_end(&mut out).await.unwrap();
        serving.await.unwrap().unwrap();
        out
    });
    judge_adapter_cursor(&out);
}
