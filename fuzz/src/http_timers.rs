//! http_timers: `HttpEngine` with time advancing: opens past the connection limit (shedding),
//! partial and whole requests, slow peers, tickets held by the host, timeouts, closes.
//!
//! Invariants checked after every step:
//! - no deadline is left in the past after `handle_timeout(now)` (no connection outlives
//!   its deadline), and `poll_timeout` never goes backwards past `now`;
//! - the engine never holds more connections than `max_connections`, and `open` refuses
//!   only when every connection is busy (a request in flight, or output unsent);
//! - a connection the engine ends on its own (`poll_ended`) is one that is open, had no
//!   request in flight unless its peer stopped reading, and is forgotten afterwards;
//! - a request in flight is answered on its connection once the host answers, unless that
//!   connection was closed or ended;
//! - buffer memory stays within its bound.

use core::time::Duration;
use mcp_engine::Commands;

use mcp_engine::http::{AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::{Catalog, Config, Content, Event, Instant, Ticket, Tool, ToolOutput};

/// The connection limit of the harness's engine.
const MAX_CONNECTIONS: usize = 4;

struct Peer {
    id: ConnId,
    /// Names the peer in its requests' arguments (`{"peer": serial}`).
    serial: u32,
    /// The ticket of its `slow` request, held by the host.
    ticket: Option<Ticket>,
    /// Whether the peer reads its output.
    reading: bool,
    /// The request being sent, and how much of it was taken.
    req: Vec<u8>,
    sent: usize,
    head_len: usize,
    /// A whole request was sent and its response has not appeared yet.
    awaiting: bool,
    /// Output bytes the peer read so far, and how many the engine had produced when the
    /// request in flight was sent in full (its response is what comes after).
    read: usize,
    mark: usize,
}

impl Peer {
    /// Whether the engine may not shed this connection: a request in flight or being
    /// received past its head, or output unsent.
    fn busy(&self, e: &HttpEngine) -> bool {
        self.awaiting
            || !e.pending_output(self.id).is_empty()
            || (!self.req.is_empty() && self.sent >= self.head_len)
    }
}

fn request(serial: u32, id: u32, tool: &str) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"peer":{serial}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn engine() -> HttpEngine {
    let catalog = Catalog::builder()
        .tool(Tool::new("slow"))
        .tool(Tool::new("fast"))
        .build()
        .unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"));
    let mut cfg = Config::new("fuzz", "1");
    cfg.max_in_flight(2);
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.max_connections(MAX_CONNECTIONS)
        .head_timeout(Duration::from_millis(1000))
        .body_deadline(Duration::from_millis(1500))
        .idle_timeout(Duration::from_millis(2000))
        .write_timeout(Duration::from_millis(3000))
        .max_body(4096)
        .max_head(1024);
    HttpEngine::new(cfg, http, catalog)
}

/// Runs the host: `fast` answered at once, `slow` kept for later by the peer it came from.
fn drain(e: &mut HttpEngine, peers: &mut [Peer]) {
    while let Some(ev) = e.poll_event() {
        let HttpEvent::Mcp(ev) = ev else { continue };
        if let Event::CallTool(call) = ev {
            if call.tool.name == "fast" {
                let _ = call.answer(&ToolOutput::new(&[Content::text("x")]));
                continue;
            }
            let serial = serde_json::from_str::<serde_json::Value>(call.arguments.raw())
                .ok()
                .and_then(|v| v["peer"].as_u64());
            let ticket = call.ticket;
            let p = peers.iter_mut().find(|p| Some(u64::from(p.serial)) == serial);
            let p = p.expect("a call comes from a connection that is open");
            assert!(p.ticket.is_none(), "one request at a time per connection");
            p.ticket = Some(ticket);
        }
    }
}

pub fn http_timers(data: &[u8]) {
    let mut e = engine();
    let mut peers: Vec<Peer> = Vec::new();
    let mut now = Instant::ZERO;
    let (mut next_id, mut next_serial) = (1u32, 1u32);
    for op in data.chunks(2) {
        let (code, arg) = (op[0], op.get(1).copied().unwrap_or(0));
        let k = usize::from(arg) % peers.len().max(1);
        match code % 8 {
            0 => match e.open(now, None) {
                Ok(id) => {
                    peers.push(Peer {
                        id,
                        serial: next_serial,
                        ticket: None,
                        reading: arg & 1 == 0,
                        req: Vec::new(),
                        sent: 0,
                        head_len: 0,
                        awaiting: false,
                        read: 0,
                        mark: 0,
                    });
                    next_serial += 1;
                }
                Err(_) => {
                    // Refused only when every connection is busy.
                    assert_eq!(e.connections(), MAX_CONNECTIONS);
                    for p in &peers {
                        assert!(
                            p.busy(&e),
                            "an idle connection was not shed: serial {} ticket {:?} awaiting {} sent {}/{} head {} out {}",
                            p.serial,
                            p.ticket,
                            p.awaiting,
                            p.sent,
                            p.req.len(),
                            p.head_len,
                            e.pending_output(p.id).len()
                        );
                    }
                }
            },
            1 | 2 if !peers.is_empty() => {
                // Send some (1) or all (2) of a request.
                let p = &mut peers[k];
                if p.req.is_empty() && !p.awaiting {
                    p.sent = 0;
                    p.req = request(p.serial, next_id, if arg & 2 == 0 { "slow" } else { "fast" });
                    p.head_len = p.req.windows(4).position(|w| w == b"\r\n\r\n").map_or(0, |i| i + 4);
                    p.sent = 0;
                    next_id += 1;
                }
                let rest = p.req.len().saturating_sub(p.sent);
                let n = if code % 8 == 1 { usize::from(arg >> 2).min(rest) } else { rest };
                // Output produced before the request's last byte is not its response.
                let before = p.read + e.pending_output(p.id).len();
                if !p.req.is_empty() {
                    p.sent += e.handle_input(now, p.id, &p.req[p.sent..p.sent + n]);
                }
                if !p.req.is_empty() && p.sent == p.req.len() {
                    p.req.clear();
                    p.awaiting = true;
                    p.mark = before;
                }
            }
            3 => {
                let step = match arg >> 6 {
                    0 => Duration::from_millis(u64::from(arg & 63)),
                    1 => Duration::from_millis(100 * u64::from(arg & 63)),
                    _ => Duration::from_millis(1000 * u64::from(arg & 63)),
                };
                now = now + step;
                e.handle_timeout(now);
                assert!(e.poll_timeout().is_none_or(|t| t > now), "a deadline was left in the past");
            }
            4 if !peers.is_empty() => peers[k].reading = !peers[k].reading,
            5 if !peers.is_empty() => {
                let p = peers.swap_remove(k);
                e.handle_closed(now, p.id);
            }
            6 if !peers.is_empty() => {
                if let Some(t) = peers[k].ticket.take() {
                    let before = e.pending_output(peers[k].id).len();
                    // A ticket of a connection still open is answered on it.
                    if e.answer_tool(t, &ToolOutput::new(&[Content::text("late")])).is_ok() {
                        assert!(e.pending_output(peers[k].id).len() > before, "an answer was lost");
                    }
                }
            }
            _ => {}
        }
        // The peers that read take everything the engine has for them before time moves:
        // answers produced by what they read are read too.
        for _ in 0..16 {
            drain(&mut e, &mut peers);
            let mut took = false;
            for p in peers.iter_mut() {
                if p.awaiting && p.ticket.is_none() && p.read + e.pending_output(p.id).len() > p.mark {
                    p.awaiting = false; // its response was written
                }
                if p.reading {
                    let n = e.pending_output(p.id).len();
                    p.read += n;
                    e.consume_output(p.id, n);
                    took |= n > 0;
                }
            }
            if !took {
                break;
            }
        }
        drain(&mut e, &mut peers);
        while let Some(ended) = e.poll_ended() {
            let i =
                peers.iter().position(|p| p.id == ended).expect("an ended connection is one that was open");
            let p = peers.swap_remove(i);
            // A request in flight is only given up when its peer stopped reading.
            assert!(
                !(p.awaiting && p.reading),
                "a request in flight was dropped: serial {} ticket {:?} read {} mark {} sent {} req {} now {:?}",
                p.serial,
                p.ticket,
                p.read,
                p.mark,
                p.sent,
                p.req.len(),
                now
            );
            assert!(e.pending_output(ended).is_empty());
            assert_eq!(e.handle_input(now, ended, b"x"), 0, "an ended connection is forgotten");
        }
        peers.retain(|p| {
            if e.wants_close(p.id) {
                e.handle_closed(now, p.id);
                false
            } else {
                true
            }
        });
        assert!(e.connections() <= MAX_CONNECTIONS);
        assert_eq!(e.connections(), peers.len());
        let use_ = e.buffer_use();
        assert!(use_.held <= MAX_CONNECTIONS * (2 * (1024 + 4096 + 64 * 1024) + 2 * 64 * 1024), "{use_:?}");
        assert!(use_.pooled <= 2 * 64 * 64 * 1024, "{use_:?}");
    }
}
