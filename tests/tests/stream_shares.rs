//! Fair shares of long-lived streams and of subscriptions (issue 27): a client's standalone
//! `GET` and `subscriptions/listen` streams are bounded per client and ended to make room
//! at the connection cap, so they cannot lock another client out; a standalone stream ends
//! when its grant expires; subscribed uris are bounded in length and in bytes per session;
//! a session's replay buffer grows with its events.

use core::net::{IpAddr, SocketAddr};
use core::time::Duration;
use mcp_engine::Commands;

use mcp_engine::http::{
    AllowedOrigins, Authorization, ConnId, Grant, HttpConfig, OpenError, Principal, Verdict,
};
use mcp_engine::{Catalog, Config, Engine, Instant, Resource, ResourceTemplate, Tool, UnixTime};
use mcp_fixture as everything;
use mcp_tests::wire::{Client, SSE, client_of, get, more, one, post, req, session_post};
use mcp_tests::{feed_keeping_tickets, legacy_open, request};
use serde_json::{Value, json};

/// The fixture's engine (list changes and resource subscriptions on) with `http`.
fn client_with(http: HttpConfig) -> Client {
    client_with_config(everything::config(), http)
}

fn client_with_config(config: Config, http: HttpConfig) -> Client {
    let mut c = client_of(config, http, everything::catalog(), Box::new(everything::respond));
    c.e.set_entropy(&[7; 32]);
    // The connection the helpers made has no address: not one of the clients here.
    c.e.handle_closed(c.now, c.conn);
    c
}

fn open_http() -> HttpConfig {
    HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone)
}

fn addr(a: [u8; 4]) -> SocketAddr {
    SocketAddr::new(IpAddr::from(a), 40_000)
}

/// Client A (one address, many connections) and client B.
const A: [u8; 4] = [192, 0, 2, 1];
const B: [u8; 4] = [198, 51, 100, 7];

/// Opens a connection from `peer`, sends `raw` on it and returns it with its output; the
/// connection stays open.
fn on_new_from(c: &mut Client, peer: SocketAddr, raw: &[u8]) -> Result<(ConnId, String), OpenError> {
    let keep = c.conn;
    c.conn = c.e.open(c.now, Some(peer))?;
    let out = c.feed(raw, usize::MAX);
    let conn = core::mem::replace(&mut c.conn, keep);
    Ok((conn, String::from_utf8(out).unwrap()))
}

/// Opens a `2025-11-25` session on a connection from `peer` that then closes; returns its
/// id. (Each session of a test comes from an address of its own, so that a per-client
/// bound on sessions never stands in the way of the streams measured here.)
fn session_from(c: &mut Client, peer: SocketAddr) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let (conn, out) = on_new_from(c, peer, &session_post(&init, "2025-11-25", None)).unwrap();
    let r = &mcp_tests::wire::parse_responses(out.as_bytes())[0];
    assert_eq!(r.status, 200, "{out}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    let keep = core::mem::replace(&mut c.conn, conn);
    let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(one(c, &session_post(&done, "2025-11-25", Some(&id))).status, 202);
    c.e.handle_closed(c.now, conn);
    c.conn = keep;
    id
}

/// The `n`th address of the sessions' clients.
fn nth(n: usize) -> SocketAddr {
    addr([10, (n >> 16) as u8, (n >> 8) as u8, n as u8])
}

/// A standalone `GET` of session `id` from `peer`; returns its connection and output.
fn stream_from(c: &mut Client, peer: SocketAddr, id: &str) -> (ConnId, String) {
    on_new_from(c, peer, &get(Some(id), SSE)).unwrap()
}

/// A `subscriptions/listen` from `peer`; returns its connection and output.
fn listen_from(c: &mut Client, peer: SocketAddr, id: i64) -> Result<(ConnId, String), OpenError> {
    let raw =
        post(&req(id, "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } })), &[]);
    on_new_from(c, peer, &raw)
}

/// `initialize` on a new connection from `peer`: its status.
fn initialize_from(c: &mut Client, peer: SocketAddr) -> Result<u16, OpenError> {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "b", "version": "1" } } });
    let (_, out) = on_new_from(c, peer, &session_post(&init, "2025-11-25", None))?;
    Ok(mcp_tests::wire::parse_responses(out.as_bytes())[0].status)
}

/// The lockout, with every default: one client opens 1,024 standalone streams
/// (on 1,024 connections, the whole connection cap). Only 32 of them open (the per-client
/// bound); the rest are `429` with `Retry-After`, and another client's connection and
/// `initialize` are served. Before, all 1,024 opened and the 1,025th connection of anyone
/// was refused.
#[test]
fn a_thousand_streams_of_one_client_do_not_lock_another_out() {
    let mut c = client_with(open_http());
    let ids: Vec<String> = (0..1024).map(|i| session_from(&mut c, nth(i))).collect();
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    for id in &ids {
        let (_, out) = stream_from(&mut c, addr(A), id);
        let status = out.split(' ').nth(1).unwrap_or_default().to_owned();
        if status == "429" {
            assert!(out.to_ascii_lowercase().contains("retry-after: 5\r\n"), "{out}");
        }
        *statuses.entry(status).or_default() += 1;
    }
    assert_eq!(statuses.get("200"), Some(&32), "{statuses:?}");
    assert_eq!(statuses.get("429"), Some(&(1024 - 32)), "{statuses:?}");
    // Each refusal is recorded with its reason, for the adapters' logs.
    assert_eq!(c.e.refusal_counts().get(mcp_engine::http::Refusal::TooManyStreams), 1024 - 32);
    assert_eq!(c.e.streams(), 32);
    assert_eq!(c.e.connections(), 1024, "every connection of A is open: the cap is reached");
    // Another client is served: a connection (an idle one of A's makes room) and a session.
    assert_eq!(initialize_from(&mut c, addr(B)), Ok(200));
    let id = session_from(&mut c, addr(B));
    let (_, out) = stream_from(&mut c, addr(B), &id);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
}

/// With the cap lowered and no per-client bound in the way, one client holds every
/// connection with standalone streams: the next connection of another client ends the
/// oldest stream of the client holding the most (its `retry:` and last chunk; it resumes
/// with `Last-Event-ID`) and is served.
#[test]
fn at_the_connection_cap_a_stream_of_the_biggest_holder_makes_room() {
    let mut http = open_http();
    http.max_connections(16).max_streams_per_client(1024);
    let mut c = client_with(http);
    let ids: Vec<String> = (0..16).map(|i| session_from(&mut c, nth(i))).collect();
    // Opened one after the other: the first is the oldest.
    let streams: Vec<(ConnId, String)> = ids
        .iter()
        .map(|id| {
            c.now = c.now + Duration::from_millis(1);
            stream_from(&mut c, addr(A), id)
        })
        .collect();
    assert!(streams.iter().all(|(_, out)| out.starts_with("HTTP/1.1 200")));
    assert_eq!((c.e.connections(), c.e.streams()), (16, 16));
    // B's connection is admitted at once; A's oldest stream ends.
    assert_eq!(initialize_from(&mut c, addr(B)), Ok(200), "B's connection and initialize are served");
    let oldest = streams[0].0;
    let end = more(&mut c, oldest);
    assert!(end.contains("retry: 5000\n"), "{end}");
    assert!(end.ends_with("0\r\n\r\n"), "its last chunk: {end}");
    assert!(c.e.wants_close(oldest), "the connection closes once that is sent");
    assert_eq!(c.e.streams(), 15);
    assert!(streams[1..].iter().all(|(conn, _)| !c.e.wants_close(*conn)), "the others stay");
    // A resumes the ended stream (from the priming event's id) once it is closed.
    c.e.handle_closed(c.now, oldest);
    let primed = mcp_tests::wire::sse_events(&streams[0].1)[0].0.clone();
    let (_, out) =
        on_new_from(&mut c, addr(A), &get(Some(&ids[0]), &format!("{SSE}Last-Event-ID: {primed}\r\n")))
            .unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "resumed: {out}");
}

/// Listen streams too: one client's listens fill the cap; another's connection ends the
/// oldest with its closing result.
#[test]
fn at_the_connection_cap_a_listen_stream_makes_room() {
    let mut http = open_http();
    http.max_connections(8).max_streams_per_client(1024);
    let mut config = everything::config();
    config.max_subscriptions(64).max_subscriptions_per_peer(64);
    let mut c = client_with_config(config, http);
    let listens: Vec<ConnId> = (0..8)
        .map(|i| {
            c.now = c.now + Duration::from_millis(1);
            let (conn, out) = listen_from(&mut c, addr(A), i).unwrap();
            assert!(out.contains("notifications/subscriptions/acknowledged"), "{out}");
            conn
        })
        .collect();
    assert_eq!((c.e.subscriptions(), c.e.streams()), (8, 8));
    let raw = post(&req(1, "tools/list", json!({})), &[]);
    let (_, out) = on_new_from(&mut c, addr(B), &raw).expect("B's connection is admitted");
    assert!(out.starts_with("HTTP/1.1 200") && out.contains("\"tools\""), "{out}");
    let end = more(&mut c, listens[0]);
    assert!(end.contains("\"resultType\":\"complete\""), "the closing result: {end}");
    assert!(end.ends_with("0\r\n\r\n") && c.e.wants_close(listens[0]), "{end}");
    assert_eq!((c.e.subscriptions(), c.e.streams()), (7, 7));
}

/// The per-client bound counts standalone and listen streams together, by address (or
/// principal) and not by connection: another client still opens its own.
#[test]
fn a_client_at_its_stream_bound_is_refused_and_another_is_not() {
    let mut http = open_http();
    http.max_streams_per_client(3);
    let mut config = everything::config();
    config.max_subscriptions(64);
    let mut c = client_with_config(config, http);
    let ids: Vec<String> = (0..4).map(|i| session_from(&mut c, nth(i))).collect();
    let mut held = Vec::new();
    for id in &ids[..2] {
        let (conn, out) = stream_from(&mut c, addr(A), id);
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        held.push(conn);
    }
    let (_, out) = listen_from(&mut c, addr(A), 1).unwrap();
    assert!(out.contains("acknowledged"), "{out}");
    // A holds 3: one more of either kind is refused, with a clear answer.
    let (_, out) = stream_from(&mut c, addr(A), &ids[2]);
    assert!(out.starts_with("HTTP/1.1 429"), "{out}");
    let (_, out) = listen_from(&mut c, addr(A), 2).unwrap();
    let r = &mcp_tests::wire::parse_responses(out.as_bytes())[0];
    let v = r.json();
    assert_eq!(v["error"]["code"], -32603, "{v}");
    assert_eq!(v["error"]["message"], "Internal error: too many open streams for this client (at most 3)");
    // B is another client.
    assert!(stream_from(&mut c, addr(B), &ids[3]).1.starts_with("HTTP/1.1 200"));
    assert_eq!(c.e.streams(), 4);
    // A's share frees as its streams close: the refused stream opens now.
    c.e.handle_closed(c.now, held[0]);
    let (_, out) = stream_from(&mut c, addr(A), &ids[2]);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
}

/// `Config::max_subscriptions_per_peer` counts per client (address, else principal), not
/// per connection: one address cannot take every listen stream by opening connections.
#[test]
fn listen_streams_per_peer_count_per_client_address() {
    let mut config = everything::config();
    config.max_subscriptions(16).max_subscriptions_per_peer(2);
    let mut c = client_with_config(config, open_http());
    for id in 0..2 {
        assert!(listen_from(&mut c, addr(A), id).unwrap().1.contains("acknowledged"));
    }
    let (_, out) = listen_from(&mut c, addr(A), 3).unwrap();
    assert!(out.contains("too many open subscriptions for this client (at most 2)"), "{out}");
    assert!(listen_from(&mut c, addr(B), 4).unwrap().1.contains("acknowledged"), "another client");
}

/// A standalone stream opened with a grant that expires ends then (its last chunk, the
/// connection closes), as a listen stream does; before, it went on delivering.
#[test]
fn a_standalone_stream_ends_when_its_grant_expires() {
    let mut c = client_with_config(everything::config(), mcp_tests::wire::config());
    let wall = UnixTime::from_secs(1_800_000_000);
    c.e.set_wall_clock(c.now, wall);
    c.verdict = Verdict::Grant(Grant::new(Principal::of(b"alice")).expires(wall + Duration::from_secs(60)));
    let id = session_from(&mut c, addr(A));
    let (stream, out) = stream_from(&mut c, addr(A), &id);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    // Keep-alive comments until the expiry, the stream open.
    let expiry = Instant::ZERO + Duration::from_secs(60);
    while c.now < expiry {
        let next = c.e.poll_timeout().expect("a deadline");
        assert!(next <= expiry, "{next:?}");
        c.now = next;
        c.e.handle_timeout(next);
        // The client reads what comes (a peer that does not is closed at the write
        // timeout).
        let read = more(&mut c, stream);
        if c.now < expiry {
            assert!(!c.e.wants_close(stream) && !read.ends_with("0\r\n\r\n"), "{read}");
        } else {
            assert!(read.ends_with("0\r\n\r\n"), "the stream ends: {read}");
        }
    }
    let rest = more(&mut c, stream);
    assert!(rest.is_empty(), "{rest}");
    assert!(c.e.wants_close(stream));
    assert_eq!(c.e.streams(), 0);
}

/// `resources/subscribe` over HTTP: a uri past `max_subscribed_uri_len` is refused
/// (`-32602`, naming the bound) before anything is done with it, and a session's uris
/// stop at `max_subscribed_bytes`.
#[test]
fn subscribed_uris_are_bounded_in_length_and_bytes_per_session() {
    let mut c = client_with(open_http());
    let id = session_from(&mut c, addr(A));
    let keep = c.conn;
    c.conn = c.e.open(c.now, Some(addr(A))).unwrap();
    let subscribe = |c: &mut Client, n: i64, uri: &str| -> Value {
        let body = request(n, "resources/subscribe", json!({ "uri": uri }));
        let body: Value = serde_json::from_str(body.trim()).unwrap();
        one(c, &session_post(&body, "2025-11-25", Some(&id))).json()
    };
    let uri = |len: usize, n: usize| {
        let head = format!("test://template/{n}-");
        format!("{head}{}/data", "x".repeat(len - head.len() - 5))
    };
    let v = subscribe(&mut c, 1, &uri(2049, 0));
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["error"]["message"], "Invalid params: a subscribed uri is at most 2048 bytes");
    let v = subscribe(&mut c, 2, &uri(1_000_000 - 1000, 0));
    assert_eq!(v["error"]["message"], "Invalid params: a subscribed uri is at most 2048 bytes");
    // 16 uris of 2,000 bytes fit in 32 KiB; the 17th does not.
    for n in 0..16 {
        let v = subscribe(&mut c, 10 + n as i64, &uri(2000, n));
        assert_eq!(v["result"], json!({}), "{v}");
    }
    let v = subscribe(&mut c, 30, &uri(2000, 16));
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["error"]["message"], "Invalid params: at most 32768 bytes of subscribed uris per session");
    // A subscription already held is not counted twice.
    assert_eq!(subscribe(&mut c, 31, &uri(2000, 3))["result"], json!({}));
    c.e.handle_closed(c.now, c.conn);
    c.conn = keep;
}

/// Over stdio the same bounds hold (a session-bound stdio stream keeps subscriptions).
#[test]
fn subscribed_uris_are_bounded_over_stdio_too() {
    let mut config = Config::new("s", "1");
    config.resource_subscriptions(true).max_subscribed_uri_len(64).max_subscribed_bytes(100);
    let catalog = Catalog::builder()
        .tool(Tool::new("t"))
        .resource(Resource::new("file:///watched", "watched"))
        .template(ResourceTemplate::new("db://rows/{id}", "rows"))
        .build()
        .unwrap();
    let mut e = Engine::new(config, catalog);
    feed_keeping_tickets(&mut e, &legacy_open("2025-11-25"));
    let sub = |e: &mut Engine, n: i64, uri: &str| {
        feed_keeping_tickets(e, &request(n, "resources/subscribe", json!({ "uri": uri }))).0.remove(0)
    };
    let long = format!("db://rows/{}", "7".repeat(60));
    assert_eq!(
        sub(&mut e, 1, &long)["error"]["message"],
        "Invalid params: a subscribed uri is at most 64 bytes"
    );
    let rows = |n: usize| format!("db://rows/{n}-{}", "0".repeat(30));
    assert_eq!(sub(&mut e, 2, &rows(1))["result"], json!({}));
    assert_eq!(sub(&mut e, 3, &rows(2))["result"], json!({}));
    let v = sub(&mut e, 4, &rows(3));
    assert_eq!(
        v["error"]["message"], "Invalid params: at most 100 bytes of subscribed uris per session",
        "{v}"
    );
    // Unsubscribing frees room.
    feed_keeping_tickets(&mut e, &request(5, "resources/unsubscribe", json!({ "uri": rows(1) })));
    assert_eq!(sub(&mut e, 6, &rows(3))["result"], json!({}));
}

/// A listen's `resourceSubscriptions` are held to the same bounds: uris past them are
/// not honoured (left out of the acknowledgement).
#[test]
fn a_listen_honours_no_uri_past_the_bounds() {
    let mut config = everything::config();
    config.max_subscribed_uri_len(40).max_subscribed_bytes(60);
    let mut c = client_with_config(config, open_http());
    let long = format!("test://template/{}/data", "y".repeat(30));
    let uris = ["test://template/1/data", long.as_str(), "test://template/2/data", "test://template/3/data"];
    let raw = post(
        &req(1, "subscriptions/listen", json!({ "notifications": { "resourceSubscriptions": uris } })),
        &[],
    );
    let (_, out) = on_new_from(&mut c, addr(A), &raw).unwrap();
    let ack: Value = serde_json::from_str(
        out.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or_else(|| panic!("{out}")),
    )
    .unwrap();
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!(["test://template/1/data", "test://template/2/data"]),
        "the long one and the one past 60 bytes are left out"
    );
}

/// A session's replay buffer grows with its events: 200 sessions whose standalone stream
/// sent one small event (the priming event) hold a few hundred bytes each, not the
/// bound (64 KiB) each as when the first event reserved the whole buffer.
#[test]
fn the_replay_buffer_of_a_session_with_one_small_event_is_small() {
    let mut http = open_http();
    http.max_streams_per_client(1024);
    let mut c = client_with(http);
    let before = c.e.buffer_use().replay;
    assert_eq!(before, 0);
    for i in 0..200 {
        let id = session_from(&mut c, nth(i));
        let (stream, out) = stream_from(&mut c, addr(A), &id);
        assert_eq!(mcp_tests::wire::sse_events(&out).len(), 1, "the priming event: {out}");
        c.e.handle_closed(c.now, stream);
    }
    let replay = c.e.buffer_use().replay;
    eprintln!("200 sessions with one small event each: {replay} bytes of replay buffers");
    assert!(replay <= 200 * 512, "{replay} bytes for 200 sessions");
}
