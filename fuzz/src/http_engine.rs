//! http_engine: Streamable HTTP end to end.

use core::time::Duration;
use mcp_engine::Commands;

use mcp_engine::error::{AnswerError, HostError};
use mcp_engine::http::{
    AllowedOrigins, Authorization, ConnId, Grant, HttpConfig, HttpEngine, HttpEvent, MAX_HEADERS, OpenError,
    Principal, ScopePolicy, Verdict,
};
use mcp_engine::internal::{Conn, Input, Limits};
use mcp_engine::{
    Catalog, Config, Content, Event, Instant, Prompt, PromptArgument, PromptMessage, PromptOutput, Resource,
    ResourceContents, ResourceTemplate, Ticket, Tool, ToolOutput, UnixTime,
};
use serde_json::Value;

use crate::common::{EvKind, MAX_HTTP_INPUT, lossy};

/// The wall clock at the harness's `Instant::ZERO`, in seconds.
const WALL_START: u64 = 1_800_000_000;

/// Connections the engine harness drives at once.
const PEERS: usize = 3;

/// The codec limits of the harness's `HttpConfig` (`max_head` 1024, `max_body` 4096).
const ENGINE_LIMITS: Limits = Limits { max_head_bytes: 1024, max_headers: MAX_HEADERS, max_body_bytes: 4096 };

fn http_catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("plain"))
        .tool(Tool::new("typed").input_schema(serde_json::json!({
            "type": "object",
            "properties": { "text": { "type": "string", "maxLength": 8 } },
            "required": ["text"]
        })))
        .tool(Tool::new("region").input_schema(serde_json::json!({
            "type": "object",
            "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "n": { "type": "integer", "x-mcp-header": "N" },
                "flag": { "type": "boolean", "x-mcp-header": "Flag" }
            },
            "required": ["region"]
        })))
        .tool(Tool::new("admin").requires_scopes(["a"]))
        .resource(Resource::new("x://r", "r"))
        .template(ResourceTemplate::new("x://t/{id}", "t").requires_scopes(["a"]))
        .prompt(Prompt::new("p").argument(PromptArgument::required("a")))
        .build()
        .unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"))
}

/// One connection as the harness (the peer and the adapter) sees it.
struct Peer {
    id: ConnId,
    /// Bytes received but not yet taken by the engine.
    backlog: Vec<u8>,
    /// Output read from the engine, `parsed` bytes of it checked.
    transcript: Vec<u8>,
    parsed: usize,
    /// Inside a chunked (SSE) response; whether it closes the connection.
    chunked: Option<bool>,
    /// A complete response said `connection: close`.
    closed: bool,
    /// The peer does not read its output.
    paused: bool,
    /// An exchange of `handle_request`: its response is structured, not HTTP/1.1 bytes.
    embedded: bool,
    /// A codec of the harness's own, fed the bytes the engine took: the request heads, in
    /// order, to match with the responses.
    shadow: Conn,
    /// Each request's minor version and whether it waits for `100 Continue`.
    requests: Vec<(u8, bool)>,
    /// Final (not `100`) responses read so far.
    answered: usize,
}

impl Peer {
    fn new(id: ConnId) -> Self {
        Self {
            id,
            backlog: Vec::new(),
            transcript: Vec::new(),
            parsed: 0,
            chunked: None,
            closed: false,
            paused: false,
            embedded: false,
            shadow: Conn::new(ENGINE_LIMITS),
            requests: Vec::new(),
            answered: 0,
        }
    }

    /// Parses the bytes the engine took with the shadow codec.
    fn shadow(&mut self, mut taken: &[u8]) {
        while !taken.is_empty() {
            let n = self.shadow.handle_bytes(taken);
            taken = &taken[n..];
            loop {
                let mut headers = [httparse::EMPTY_HEADER; 64];
                match self.shadow.poll(&mut headers) {
                    Input::Head(h) => self.requests.push((h.minor_version, h.expect_continue)),
                    Input::Body(_) => self.shadow.finish_request(),
                    // After an error the engine answers and closes: nothing more to match.
                    Input::Partial | Input::Error(_) => break,
                }
            }
            if n == 0 {
                break;
            }
        }
    }

    /// Checks the output read so far: a sequence of HTTP/1.1 responses, the last possibly
    /// incomplete.
    fn check_output(&mut self) {
        loop {
            let rest = &self.transcript[self.parsed..];
            if rest.is_empty() {
                self.transcript.clear();
                self.parsed = 0;
                return;
            }
            assert!(!self.closed, "output after a response that closes the connection: {:?}", lossy(rest));
            if let Some(close) = self.chunked {
                let Some(line) = rest.windows(2).position(|w| w == b"\r\n") else { return };
                let size =
                    core::str::from_utf8(&rest[..line]).ok().and_then(|s| usize::from_str_radix(s, 16).ok());
                let Some(size) = size else { panic!("a bad chunk size line: {:?}", lossy(rest)) };
                let end = line + 2 + size + 2;
                if rest.len() < end {
                    return;
                }
                assert_eq!(&rest[end - 2..end], b"\r\n", "a chunk without its CRLF: {:?}", lossy(rest));
                if size == 0 {
                    self.chunked = None;
                    self.closed = close;
                } else {
                    check_sse_event(&rest[line + 2..end - 2]);
                }
                self.parsed += end;
                continue;
            }
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            let head_len = match resp.parse(rest) {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) => return,
                Err(e) => panic!("not an HTTP/1.1 response ({e}): {:?}", lossy(rest)),
            };
            assert_eq!(resp.version, Some(1));
            let status = resp.code.unwrap_or_default();
            let (mut length, mut chunked, mut close, mut json) = (None, false, false, false);
            for h in resp.headers.iter() {
                let value = core::str::from_utf8(h.value).unwrap_or_else(|_| panic!("{:?}", lossy(rest)));
                match h.name.to_ascii_lowercase().as_str() {
                    "content-length" => {
                        assert!(length.is_none(), "two content-lengths");
                        length = Some(value.parse::<usize>().unwrap_or_else(|e| panic!("{e}: {value}")));
                    }
                    "transfer-encoding" => chunked = value == "chunked",
                    "connection" => close = value == "close",
                    "content-type" => json = value == "application/json",
                    _ => {}
                }
            }
            // The request this response answers, when the harness parsed it.
            let request = self.requests.get(self.answered).copied();
            if status == 100 {
                assert!(length.is_none() && !chunked && !close);
                if let Some((minor, expect)) = request {
                    assert!(expect && minor == 1, "100 Continue for a request that did not ask for it");
                }
                self.parsed += head_len;
                continue;
            }
            assert!((200..600).contains(&status), "status {status}");
            self.answered += 1;
            if chunked {
                assert!(length.is_none() && status == 200, "{:?}", lossy(rest));
                if let Some((minor, _)) = request {
                    assert_eq!(minor, 1, "a chunked (SSE) response to an HTTP/1.0 request");
                }
                self.chunked = Some(close);
                self.parsed += head_len;
                continue;
            }
            let Some(length) = length else { panic!("a response without framing: {:?}", lossy(rest)) };
            if rest.len() < head_len + length {
                return;
            }
            let body = &rest[head_len..head_len + length];
            if json {
                check_json_rpc(body);
            } else {
                assert!(body.is_empty(), "a body without a content type");
            }
            self.parsed += head_len + length;
            self.closed = close;
        }
    }
}

fn check_json_rpc(msg: &[u8]) {
    let v: Value = serde_json::from_slice(msg).unwrap_or_else(|e| panic!("{e}: not JSON: {:?}", lossy(msg)));
    assert!(v.is_object() && v["jsonrpc"] == "2.0", "{v}");
}

fn check_sse_event(chunk: &[u8]) {
    let Some(data) = chunk.strip_prefix(b"data: ").and_then(|c| c.strip_suffix(b"\n\n")) else {
        panic!("not an SSE event: {:?}", lossy(chunk));
    };
    assert!(!data.contains(&b'\n'), "a multi-line event: {:?}", lossy(chunk));
    check_json_rpc(data);
}

struct EngineHarness {
    e: HttpEngine,
    now: Instant,
    peers: [Option<Peer>; PEERS],
    max_connections: usize,
    /// Connections closed earlier (their ids must be inert).
    stale: Vec<ConnId>,
    /// `Authorize` (false) and `AuthorizeBody` (true) events not yet answered.
    asks: Vec<(ConnId, bool)>,
    tickets: Vec<(Ticket, EvKind)>,
    progress: f64,
}

/// Reads a 16-bit little-endian length and that many bytes (fewer at the end).
fn take_bytes(ops: &[u8]) -> (&[u8], &[u8]) {
    let (len, rest) = match ops {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        [a] => (usize::from(*a), &[][..]),
        [] => (0, ops),
    };
    rest.split_at(len.min(rest.len()))
}

fn take_byte(ops: &[u8]) -> (u8, &[u8]) {
    ops.split_first().map_or((0, ops), |(b, r)| (*b, r))
}

/// `HttpEngine` end to end, through up to three connections.
///
/// The first byte is the configuration: host or open authorization, body authorization,
/// loopback, an origin list, 1-4 ticket slots, 2 or 3 connections at most, sessions on
/// (`initialize`, `Mcp-Session-Id`, `DELETE`) or off. Then ops, each
/// an op byte (low 3 bits: the op; the rest: connection or choice) and its arguments:
/// - 0-2: feed a 16-bit-length-prefixed slice to a connection (opened if need be); bytes
///   the engine does not take wait and are offered again after every op;
/// - 3: the peer closes a connection;
/// - 4: time passes (a byte × 100 ms), then `handle_timeout`;
/// - 5: answer an outstanding ticket (a byte picks it; the op how: tool, resource or
///   prompt output, errors, progress, a tool error);
/// - 6: answer an outstanding `Authorize`/`AuthorizeBody` (a byte picks it; the op the
///   verdict);
/// - 7: misc: pause/resume reading a connection's output, probe the ids of closed
///   connections, open a connection, serve a request with `handle_request`, or with
///   `handle_request_head` and its body (with its length or chunk-framed) given as the
///   connection's input (a byte: method, how, chunk size; a length-prefixed body; the MCP
///   headers are mirrored from the body when it is JSON).
///
/// After every op the harness polls every event (keeping tickets and asks for later),
/// reads every connection's output, and closes the connections `wants_close` names.
/// Asserts: no panic; every connection's output is a sequence of HTTP/1.1 responses
/// (JSON bodies are JSON-RPC objects, chunked bodies SSE events carrying them), nothing
/// follows a `connection: close` response, which is exactly when `wants_close` turns true;
/// matched with the request heads a codec of the harness's own parses from the bytes the
/// engine took, `100 Continue` answers only a request that asked for it and a chunked (SSE)
/// response only an HTTP/1.1 request;
/// `connections()` matches the harness's count; `in_flight()` matches the tickets the
/// harness holds; after `handle_timeout(now)`, `poll_timeout()` is not in the past; closed
/// ids are inert; once every connection is closed, no ticket remains.
pub fn http_engine(data: &[u8]) {
    if data.len() > MAX_HTTP_INPUT {
        return;
    }
    let Some((&cfg, mut ops)) = data.split_first() else { return };
    let mut h = EngineHarness::new(cfg);
    while let Some((&op, rest)) = ops.split_first() {
        ops = rest;
        let arg = usize::from(op >> 3);
        let k = arg % PEERS;
        match op & 7 {
            0..=2 => {
                let (bytes, rest) = take_bytes(ops);
                ops = rest;
                h.feed(k, bytes);
            }
            3 => h.close(k),
            4 => {
                let (d, rest) = take_byte(ops);
                ops = rest;
                h.now = h.now + Duration::from_millis(u64::from(d) * 100);
                h.e.handle_timeout(h.now);
                h.check_timeout();
                h.reap();
            }
            5 => {
                let (sel, rest) = take_byte(ops);
                ops = rest;
                h.answer(usize::from(sel), arg);
            }
            6 => {
                let (sel, rest) = take_byte(ops);
                ops = rest;
                h.authorize(usize::from(sel), arg);
            }
            _ => match (arg / PEERS) % 4 {
                0 => {
                    if let Some(p) = h.peers[k].as_mut() {
                        p.paused = !p.paused;
                    }
                }
                1 => h.probe_stale(),
                2 => {
                    h.open(k);
                }
                _ => {
                    let (method, rest) = take_byte(ops);
                    let (body, rest) = take_bytes(rest);
                    ops = rest;
                    h.request(k, method, body);
                }
            },
        }
        h.settle();
    }
    h.finish();
}

impl EngineHarness {
    fn new(cfg: u8) -> Self {
        let origins = if cfg & 8 != 0 {
            AllowedOrigins::List(vec!["http://localhost:3000".into()])
        } else {
            AllowedOrigins::Any
        };
        let authorization = if cfg & 1 != 0 { Authorization::Host } else { Authorization::Everyone };
        let max_connections = if cfg & 0x40 != 0 { 2 } else { 3 };
        let mut http = HttpConfig::new(origins, authorization);
        http.authorize_body(cfg & 2 != 0)
            .loopback(cfg & 4 != 0)
            .max_body(ENGINE_LIMITS.max_body_bytes)
            .max_head(ENGINE_LIMITS.max_head_bytes)
            .max_connections(max_connections)
            // Scoped under `Authorization::Host`: calls need `t`, reads `r`; `a` implies
            // `t` and reaches the `admin` tool and the template.
            .scope_policy(
                ScopePolicy::new()
                    .require("tools/call", ["t"])
                    .and_then(|p| p.require("resources/read", ["r"]))
                    .and_then(|p| p.implies("a", ["t"]))
                    .unwrap_or_else(|e| unreachable!("the fuzz policy is valid: {e}")),
            );
        let mut config = Config::new("fuzz", "0");
        config.max_frame_len(4096).max_in_flight(usize::from((cfg >> 4) & 3) + 1).max_depth(16);
        let mut e = HttpEngine::new(config, http, http_catalog());
        // Grants expire on the wall clock (listen streams end then).
        e.set_wall_clock(Instant::ZERO, UnixTime::from_secs(WALL_START));
        if cfg & 0x80 != 0 {
            // Sessions on: `initialize`, `Mcp-Session-Id` and `DELETE` are served.
            e.set_entropy(&[cfg; 32]);
        }
        Self {
            e,
            now: Instant::ZERO,
            peers: [None, None, None],
            max_connections,
            stale: Vec::new(),
            asks: Vec::new(),
            tickets: Vec::new(),
            progress: 0.0,
        }
    }

    fn count(&self) -> usize {
        self.peers.iter().flatten().count()
    }

    /// Opens connection `k` if it is not open; false if the engine refuses.
    fn open(&mut self, k: usize) -> bool {
        if self.peers[k].is_some() {
            return true;
        }
        match self.e.open(self.now, None) {
            Ok(id) => {
                // At the limit, the engine made room by ending an idle connection.
                self.reap();
                assert!(self.count() < self.max_connections);
                assert!(!self.stale.contains(&id), "a new connection got a closed one's id");
                self.peers[k] = Some(Peer::new(id));
                true
            }
            Err(OpenError::TooManyConnections) => {
                assert_eq!(self.count(), self.max_connections);
                false
            }
            Err(e) => panic!("an open error this harness does not know: {e:?}"),
        }
    }

    fn feed(&mut self, k: usize, bytes: &[u8]) {
        if bytes.is_empty() || !self.open(k) {
            return;
        }
        if let Some(p) = self.peers[k].as_mut() {
            p.backlog.extend_from_slice(bytes);
        }
    }

    /// Forgets the connections the engine ended on its own (shed for room, idle past a
    /// timeout, a peer that took no output): each was one the harness held open.
    fn reap(&mut self) {
        while let Some(id) = self.e.poll_ended() {
            let k = self.peers.iter().position(|p| p.as_ref().is_some_and(|p| p.id == id));
            let k = k.expect("an ended connection is one that was open");
            self.peers[k] = None;
            self.stale.push(id);
            self.asks.retain(|(c, _)| *c != id);
            assert!(self.e.pending_output(id).is_empty() && !self.e.wants_close(id));
        }
    }

    /// The peer of connection `k` goes away.
    fn close(&mut self, k: usize) {
        let Some(p) = self.peers[k].take() else { return };
        self.e.handle_closed(self.now, p.id);
        self.stale.push(p.id);
    }

    /// A request served through `handle_request` or `handle_request_head` on connection
    /// `k` (if `k` is free): `how`'s low two bits pick the method, the next two how the
    /// body is given, the rest the size of its chunks.
    fn request(&mut self, k: usize, how: u8, body: &[u8]) {
        if self.peers[k].is_some() {
            return;
        }
        let method = ["POST", "GET", "DELETE", "post"][usize::from(how & 3)];
        let path = if method == "POST" { "/mcp" } else { "/mcp?x" };
        let mut headers: Vec<(String, Vec<u8>)> = vec![
            ("Host".into(), b"localhost:3000".to_vec()),
            ("Content-Type".into(), b"application/json".to_vec()),
            ("Accept".into(), b"application/json, text/event-stream".to_vec()),
        ];
        if let Ok(v) = serde_json::from_slice::<Value>(body) {
            let meta = &v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"];
            let mut mirror = |name: &str, value: &Value| match value {
                Value::String(s) => headers.push((name.into(), s.clone().into_bytes())),
                Value::Number(_) | Value::Bool(_) => {
                    headers.push((name.into(), value.to_string().into_bytes()))
                }
                _ => {}
            };
            mirror("MCP-Protocol-Version", meta);
            mirror("Mcp-Method", &v["method"]);
            mirror("Mcp-Name", &v["params"]["name"]);
            mirror("Mcp-Name", &v["params"]["uri"]);
            let args = &v["params"]["arguments"];
            mirror("Mcp-Param-Region", &args["region"]);
            mirror("Mcp-Param-N", &args["n"]);
            mirror("Mcp-Param-Flag", &args["flag"]);
        }
        let headers: Vec<(&str, &[u8])> = headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())).collect();
        // The body whole (`handle_request`), or after the head as it comes, with its length
        // or chunk-framed (`handle_request_head`, the body waiting with the connection's
        // other input).
        let (opened, backlog) = match how & 12 {
            0 => (self.e.handle_request(self.now, None, method, path, &headers, body), Vec::new()),
            4 => {
                let len = Some(body.len() as u64);
                (self.e.handle_request_head(self.now, None, method, path, &headers, len), body.to_vec())
            }
            _ => {
                let mut framed = Vec::new();
                for chunk in body.chunks(1 + usize::from(how >> 4) * 7) {
                    framed.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    framed.extend_from_slice(chunk);
                    framed.extend_from_slice(b"\r\n");
                }
                framed.extend_from_slice(b"0\r\n\r\n");
                (self.e.handle_request_head(self.now, None, method, path, &headers, None), framed)
            }
        };
        match opened {
            Ok(id) => {
                self.reap();
                assert!(self.count() < self.max_connections);
                self.peers[k] = Some(Peer { embedded: true, backlog, ..Peer::new(id) });
            }
            Err(_) => assert_eq!(self.count(), self.max_connections),
        }
    }

    fn answer(&mut self, sel: usize, how: usize) {
        if self.tickets.is_empty() {
            return;
        }
        let (t, kind) = self.tickets.remove(sel % self.tickets.len());
        let text = [Content::text("ok")];
        let messages = [PromptMessage::user(Content::text("x"))];
        let r = match (how % 8, kind) {
            (0 | 1, EvKind::Tool) => self.e.answer_tool(t, &ToolOutput::new(&text)),
            (0 | 1, EvKind::Resource) => {
                self.e.answer_resource(t, &[ResourceContents::text("x://r", Some("text/plain"), "x")])
            }
            (0 | 1, EvKind::Prompt) => self.e.answer_prompt(t, &PromptOutput::new(&messages)),
            (0 | 1, EvKind::Completion) => self.e.answer_completion(t, &["a", "b\n"], Some(2), true),
            (2, _) => self.e.answer_error(t, HostError::Internal("boom")),
            (3, _) => self.e.answer_error(t, HostError::NotFound),
            (4, _) => self.e.answer_error(t, HostError::InvalidParams("bad\r\n\"x\"")),
            (5 | 6, _) => {
                // A progress report: the response becomes a stream (if the request asked
                // for progress); the ticket stays outstanding.
                self.progress += 1.0;
                let _ = self.e.notify_progress(t, self.progress, Some(1e6), Some("m\n"));
                self.tickets.push((t, kind));
                return;
            }
            // Possibly the wrong kind of answer: refused, the ticket stays.
            _ => self.e.answer_tool(t, &ToolOutput::error(&text)),
        };
        match r {
            Ok(()) => {}
            Err(AnswerError::WrongKind) => self.tickets.push((t, kind)),
            Err(e) => panic!("answering a live ticket: {e}"),
        }
    }

    fn authorize(&mut self, sel: usize, how: usize) {
        if self.asks.is_empty() {
            return;
        }
        let (id, body) = self.asks.remove(sel % self.asks.len());
        let grant = |names: &[&str]| {
            Grant::new(Principal::of(b"fuzz")).scopes(self.e.scopes().set_of(names.iter().copied()))
        };
        let verdict = match how % 8 {
            0..=2 => Verdict::Grant(grant(&["t", "r", "a"])),
            3 => Verdict::Allow,
            4 => match (how >> 3) % 3 {
                0 => Verdict::Grant(grant(&["t"])),
                1 => Verdict::Grant(grant(&["r"])),
                _ => {
                    let expires =
                        UnixTime::from_secs(WALL_START) + Duration::from_millis((how >> 5) as u64 % 4000);
                    Verdict::Grant(grant(&["a", "r"]).expires(expires))
                }
            },
            5 => Verdict::Unauthenticated,
            6 => Verdict::Forbidden,
            _ => Verdict::Failed,
        };
        if body {
            self.e.authorize_body(self.now, id, verdict);
        } else {
            self.e.authorize(self.now, id, verdict);
        }
    }

    /// Closed connections' ids do nothing.
    fn probe_stale(&mut self) {
        let open = self.e.connections();
        for &id in self.stale.iter().rev().take(4) {
            assert_eq!(self.e.handle_input(self.now, id, b"POST /mcp HTTP/1.1\r\n"), 0);
            assert!(self.e.pending_output(id).is_empty() && !self.e.wants_close(id));
            assert!(self.e.response(id).is_none());
            self.e.consume_output(id, 10);
            self.e.authorize(self.now, id, Verdict::Allow);
            self.e.authorize_body(self.now, id, Verdict::Allow);
            self.e.handle_closed(self.now, id);
        }
        assert_eq!(self.e.connections(), open);
    }

    /// After `handle_timeout(now)`, the next timeout is in the future: an adapter that
    /// sleeps until `poll_timeout()` would otherwise spin.
    fn check_timeout(&self) {
        if let Some(t) = self.e.poll_timeout() {
            assert!(t > self.now, "poll_timeout() is {t:?} after handle_timeout({:?})", self.now);
        }
    }

    /// Takes every event (keeping the work for later).
    fn poll_events(&mut self) {
        while let Some(ev) = self.e.poll_event() {
            match ev {
                HttpEvent::Authorize(a) => {
                    assert!(
                        self.peers.iter().flatten().any(|p| p.id == a.conn),
                        "an ask for a closed connection"
                    );
                    assert!(!self.asks.contains(&(a.conn, false)), "asked twice");
                    self.asks.push((a.conn, false));
                }
                HttpEvent::AuthorizeBody(a) => {
                    assert!(
                        self.peers.iter().flatten().any(|p| p.id == a.conn),
                        "an ask for a closed connection"
                    );
                    assert!(a.body.len() <= 4096);
                    self.asks.push((a.conn, true));
                }
                HttpEvent::Mcp(Event::Cancelled(t)) => {
                    let before = self.tickets.len();
                    self.tickets.retain(|(x, _)| *x != t);
                    assert_eq!(self.tickets.len() + 1, before, "a cancellation of an unknown ticket");
                }
                HttpEvent::Mcp(ev) => {
                    let kind = match ev {
                        Event::CallTool(_) => EvKind::Tool,
                        Event::ReadResource(_) => EvKind::Resource,
                        Event::GetPrompt(_) => EvKind::Prompt,
                        Event::Complete(_) => EvKind::Completion,
                        Event::Cancelled(_) => unreachable!("matched above"),
                        _ => panic!("an event this harness does not know"),
                    };
                    self.tickets.push((ev.ticket(), kind));
                }
                _ => panic!("an HTTP event this harness does not know"),
            }
        }
    }

    /// Runs the adapter's loop until nothing moves: events, input backlogs, output, closes.
    fn settle(&mut self) {
        for round in 0.. {
            assert!(round < 10_000, "the engine never settles");
            let mut moved = false;
            self.poll_events();
            self.reap();
            for k in 0..PEERS {
                let Some(p) = self.peers[k].as_mut() else { continue };
                if !p.backlog.is_empty() {
                    // The input rule: every byte up to the capacity is taken, and fewer than
                    // given only once there is no room left.
                    let (room, given) = (self.e.input_capacity(p.id), p.backlog.len());
                    let n = self.e.handle_input(self.now, p.id, &p.backlog);
                    assert!(n <= given);
                    assert!(n >= given.min(room), "took {n} of {given} bytes with room for {room}");
                    if n < given {
                        assert_eq!(
                            self.e.input_capacity(p.id),
                            0,
                            "took {n} of {given} bytes with room left"
                        );
                    }
                    let taken: Vec<u8> = p.backlog.drain(..n).collect();
                    p.shadow(&taken);
                    moved |= n > 0;
                    self.poll_events();
                }
            }
            for k in 0..PEERS {
                let Some(p) = self.peers[k].as_mut() else { continue };
                if p.paused {
                    continue;
                }
                if p.embedded {
                    // A structured response: a status, and JSON unless it is a stream.
                    if let Some(r) = self.e.response(p.id) {
                        assert!((100..600).contains(&r.status), "status {}", r.status);
                        if !r.head.stream && r.complete && !r.body.is_empty() {
                            let json = serde_json::from_slice::<Value>(r.body);
                            assert!(json.is_ok(), "not JSON: {:?}", lossy(r.body));
                        }
                        let (n, complete) = (r.body.len(), r.complete);
                        self.e.consume_output(p.id, n);
                        moved |= n > 0;
                        p.closed = complete;
                    }
                } else if !self.e.pending_output(p.id).is_empty() {
                    let out = self.e.pending_output(p.id);
                    p.transcript.extend_from_slice(out);
                    let n = out.len();
                    self.e.consume_output(p.id, n);
                    moved = true;
                    p.check_output();
                }
                let wants_close = self.e.wants_close(p.id);
                assert_eq!(wants_close, p.closed, "wants_close() and the last response disagree");
                if wants_close {
                    assert!(p.transcript.is_empty() && p.chunked.is_none());
                    self.close(k);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        assert_eq!(self.e.connections(), self.count(), "the engine's connection count");
        assert_eq!(self.e.in_flight(), self.tickets.len(), "tickets in flight");
        assert!(self.e.in_flight() <= self.e.config().in_flight_limit());
    }

    /// Every peer reads what is left, then goes away: no work may remain.
    fn finish(&mut self) {
        for p in self.peers.iter_mut().flatten() {
            p.paused = false;
        }
        self.settle();
        for k in 0..PEERS {
            self.close(k);
        }
        self.poll_events();
        assert!(self.asks.iter().all(|(id, _)| self.stale.contains(id)));
        assert_eq!(self.e.connections(), 0);
        assert_eq!(self.e.in_flight(), 0, "tickets outlive their connections");
        assert!(self.tickets.is_empty(), "{} tickets were never cancelled", self.tickets.len());
        assert_eq!(self.e.poll_timeout(), None);
    }
}
