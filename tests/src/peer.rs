//! One engine over either transport, for tests that must hold on both: a stdio
//! [`Engine`] fed request lines, or an [`HttpEngine`] fed POSTs on one keep-alive
//! connection. Events go to a host closure; messages come back as JSON values (HTTP
//! responses and SSE events decoded).

use core::time::Duration;
use mcp_engine::Commands;

use mcp_engine::error::{AnswerError, NotifyError};
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_engine::{Catalog, Config, Content, Engine, Instant, LogLevel, Ticket, ToolOutput};
use serde_json::{Value, json};

use crate::wire::{self, Host};
use crate::{lines, notification, request};

/// A transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// Newline-delimited JSON-RPC.
    Stdio,
    /// Streamable HTTP, one keep-alive connection.
    Http,
}

/// Both transports.
pub const WIRES: [Wire; 2] = [Wire::Stdio, Wire::Http];

/// The `_meta` of a 2026-07-28 request with these client capabilities.
pub fn meta_with(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps
    })
}

/// An engine of either transport.
pub struct Peer {
    wire: Wire,
    stdio: Option<(Engine, Host)>,
    http: Option<wire::Client>,
    /// HTTP: every byte the connection was sent; stdio: output not yet returned.
    raw: Vec<u8>,
    /// HTTP: how many messages of `raw` were returned.
    seen: usize,
    now: Instant,
}

impl Peer {
    /// An engine with `config` and `catalog` on `wire`, its events answered by `host`.
    pub fn new(wire: Wire, config: Config, catalog: Catalog, host: Host) -> Self {
        let (stdio, http) = match wire {
            Wire::Stdio => (Some((Engine::new(config, catalog), host)), None),
            Wire::Http => {
                let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
                (None, Some(wire::client_of(config, http, catalog, host)))
            }
        };
        Self { wire, stdio, http, raw: Vec::new(), seen: 0, now: Instant::ZERO }
    }

    /// The transport.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// Moves the clock forward.
    pub fn advance(&mut self, d: Duration) {
        self.now = self.now + d;
        if let Some(c) = &mut self.http {
            c.now = self.now;
        }
    }

    /// Sends a request (a modern `_meta` declaring every input kind is added when `params`
    /// has none) and returns the messages written by the time the engine rests.
    pub fn send(&mut self, id: impl Into<Value>, method: &str, params: Value) -> Vec<Value> {
        let mut params = params;
        if params.get("_meta").is_none() {
            params["_meta"] = meta_with(json!({ "elicitation": {}, "sampling": {}, "roots": {} }));
        }
        let id = id.into();
        match self.wire {
            Wire::Stdio => {
                let line = request(id, method, params);
                self.feed_stdio(line.as_bytes());
            }
            Wire::Http => {
                let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
                let c = self.http.as_mut().expect("http");
                let out = c.feed(&wire::post(&body, &[]), usize::MAX);
                self.raw.extend_from_slice(&out);
            }
        }
        self.poll()
    }

    /// Sends one request and returns its one message, with the HTTP status (200 on stdio).
    pub fn call(&mut self, id: impl Into<Value>, method: &str, params: Value) -> (u16, Value) {
        let mut v = self.send(id, method, params);
        assert_eq!(v.len(), 1, "one message expected: {v:?}");
        (self.last_status(), v.remove(0))
    }

    /// The status of the latest HTTP response head (200 on stdio).
    pub fn last_status(&self) -> u16 {
        if self.wire == Wire::Stdio {
            return 200;
        }
        let text = String::from_utf8_lossy(&self.raw);
        let at = text.rfind("HTTP/1.1 ").expect("a response head");
        text[at + 9..at + 12].parse().expect("a status")
    }

    /// Messages written since the last call (answering events as they come).
    pub fn poll(&mut self) -> Vec<Value> {
        match self.wire {
            Wire::Stdio => {
                let (e, host) = self.stdio.as_mut().expect("stdio");
                crate::drain_with(e, host, &mut self.raw);
                let v = lines(&self.raw);
                self.raw.clear();
                v
            }
            Wire::Http => {
                let c = self.http.as_mut().expect("http");
                let mut out = Vec::new();
                c.drain(&mut out);
                self.raw.extend_from_slice(&out);
                let all = http_messages(&self.raw);
                let new = all[self.seen..].to_vec();
                self.seen = all.len();
                new
            }
        }
    }

    /// Cancels request `id` the transport's way: `notifications/cancelled` on stdio,
    /// closing the connection on HTTP (a new one is opened for what follows).
    pub fn cancel(&mut self, id: impl Into<Value>) {
        match self.wire {
            Wire::Stdio => {
                let n = notification("notifications/cancelled", json!({ "requestId": id.into() }));
                self.feed_stdio(n.as_bytes());
            }
            Wire::Http => {
                let c = self.http.as_mut().expect("http");
                c.e.handle_closed(self.now, c.conn);
                c.conn = c.e.open(self.now, None).expect("a new connection");
                let mut out = Vec::new();
                c.drain(&mut out);
                self.raw.clear();
                self.seen = 0;
            }
        }
    }

    /// `notify_progress` on either engine.
    pub fn progress(&mut self, t: Ticket, p: f64, total: Option<f64>) -> Result<(), NotifyError> {
        match (&mut self.stdio, &mut self.http) {
            (Some((e, _)), _) => e.notify_progress(t, p, total, None),
            (_, Some(c)) => c.e.notify_progress(t, p, total, None),
            _ => unreachable!(),
        }
    }

    /// `notify_log` on either engine.
    pub fn log(&mut self, t: Ticket, level: LogLevel, text: &str) -> Result<(), NotifyError> {
        match (&mut self.stdio, &mut self.http) {
            (Some((e, _)), _) => e.notify_log(t, level, None, text),
            (_, Some(c)) => c.e.notify_log(t, level, None, text),
            _ => unreachable!(),
        }
    }

    /// Answers a tool-call ticket with one text block, on either engine.
    pub fn answer(&mut self, t: Ticket, text: &str) -> Result<(), AnswerError> {
        let content = [Content::text(text)];
        let output = &ToolOutput::new(&content);
        match (&mut self.stdio, &mut self.http) {
            (Some((e, _)), _) => e.answer_tool(t, output),
            (_, Some(c)) => c.e.answer_tool(t, output),
            _ => unreachable!(),
        }
    }

    /// The stdio engine (panics on HTTP).
    pub fn stdio_engine(&mut self) -> &mut Engine {
        &mut self.stdio.as_mut().expect("stdio").0
    }

    /// The HTTP engine (panics on stdio).
    pub fn http_engine(&mut self) -> &mut HttpEngine {
        &mut self.http.as_mut().expect("http").e
    }

    fn feed_stdio(&mut self, bytes: &[u8]) {
        // Output waits in `raw` (stdio) until `poll` returns it.
        let (e, host) = self.stdio.as_mut().expect("stdio");
        let mut fed = 0;
        while fed < bytes.len() {
            fed += e.handle_input(self.now, &bytes[fed..]);
            crate::drain_with(e, host, &mut self.raw);
        }
    }
}

/// Every JSON-RPC message in raw HTTP output: content-length bodies, and the `data:`
/// lines of chunked SSE streams (an unfinished stream is read as far as it goes).
pub fn http_messages(mut raw: &[u8]) -> Vec<Value> {
    let mut msgs = Vec::new();
    while !raw.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(n)) = resp.parse(raw) else { break };
        let header = |name: &str| {
            resp.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).into_owned())
        };
        let chunked = header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        let len: usize = header("content-length").map_or(0, |v| v.parse().unwrap_or(0));
        raw = &raw[n..];
        if !chunked {
            if len > 0 {
                msgs.push(serde_json::from_slice(&raw[..len]).expect("a JSON body"));
            }
            raw = &raw[len..];
            continue;
        }
        let mut data = Vec::new();
        loop {
            let Some(end) = raw.windows(2).position(|w| w == b"\r\n") else {
                raw = &[];
                break;
            };
            let size =
                usize::from_str_radix(std::str::from_utf8(&raw[..end]).unwrap_or("0"), 16).unwrap_or(0);
            if size == 0 {
                raw = raw.get(end + 4..).unwrap_or(&[]);
                break;
            }
            let Some(chunk) = raw.get(end + 2..end + 2 + size) else {
                raw = &[];
                break;
            };
            data.extend_from_slice(chunk);
            raw = raw.get(end + 4 + size..).unwrap_or(&[]);
        }
        for line in String::from_utf8_lossy(&data).lines() {
            if let Some(d) = line.strip_prefix("data: ") {
                msgs.push(serde_json::from_str(d).expect("an SSE event of JSON"));
            }
        }
    }
    msgs
}
