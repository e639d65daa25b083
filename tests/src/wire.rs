//! A Streamable HTTP client for tests: raw HTTP/1.1 bytes into an [`HttpEngine`] on one
//! connection, every event answered by a host closure, responses split back out.

use std::collections::HashMap;

use mcp_engine::http::store::{Loaded, LoadedEvents, StoreEvent};
use mcp_engine::http::{AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent, Verdict};
use mcp_engine::{Catalog, Config, Event, Instant};
use mcp_fixture as everything;
use serde_json::{Value, json};

/// The host that answers the engine's events.
pub type Host = Box<dyn FnMut(Event<'_>)>;

/// One connection to an [`HttpEngine`].
pub struct Client {
    /// The engine.
    pub e: HttpEngine,
    /// The connection.
    pub conn: ConnId,
    /// The verdict every `Authorize` event gets.
    pub verdict: Verdict,
    /// The verdict every `AuthorizeBody` event gets.
    pub body_verdict: Verdict,
    /// The time passed to the engine.
    pub now: Instant,
    /// Answers MCP events (the `everything` fixture by default).
    pub host: Host,
    /// Answers the session store's events (`HttpConfig::session_store`).
    pub store: Store,
}

/// A session store kept by the test host: records by session id, and what it was asked.
#[derive(Debug, Default, Clone)]
pub struct Store {
    /// The records, by session id.
    pub records: HashMap<String, Vec<u8>>,
    /// Every request, in order: `load ID`, `save ID`, `forget ID`, `expired ID`, `touch ID`.
    pub log: Vec<String>,
    /// Answer loads `Unavailable` and saves as failed.
    pub fail: bool,
    /// Answer nothing: the asks wait in `held` (a stalled store).
    pub hold: bool,
    /// Asks left unanswered while `hold` was on.
    pub held: Vec<ConnId>,
    /// The events of session streams (`HttpConfig::event_store`), in the order appended.
    pub events: Vec<StoredEvent>,
    /// At most this many events kept per stream, oldest dropped first (0: all).
    pub keep_per_stream: usize,
    /// Answer event loads `Unavailable`.
    pub events_fail: bool,
    /// Answer no event load: they wait in `events_held` (a stalled store).
    pub events_hold: bool,
    /// Event loads left unanswered while `events_hold` was on.
    pub events_held: Vec<ConnId>,
}

/// An event a test store keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// The session id.
    pub session: String,
    /// The stream.
    pub stream: u32,
    /// Its number.
    pub seq: u32,
    /// Its data.
    pub data: Vec<u8>,
    /// The stream's last event.
    pub last: bool,
}

impl Store {
    /// Keeps an appended event, dropping the stream's oldest beyond `keep_per_stream`.
    fn append(&mut self, e: StoredEvent) {
        let (session, stream) = (e.session.clone(), e.stream);
        self.events.push(e);
        let of = |x: &StoredEvent| x.session == session && x.stream == stream;
        let n = self.events.iter().filter(|x| of(x)).count();
        if self.keep_per_stream != 0 && n > self.keep_per_stream {
            let i = self.events.iter().position(of).unwrap_or_default();
            self.events.remove(i);
        }
    }
}

/// One HTTP response.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body (content-length bodies only).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
    /// Whether the response closes the connection.
    pub fn closes(&self) -> bool {
        self.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// Origins `http://localhost:3000`, the host authorizes.
pub fn config() -> HttpConfig {
    HttpConfig::new(AllowedOrigins::List(vec!["http://localhost:3000".into()]), Authorization::Host)
}

/// A client of an engine with `http` and `catalog`, answered by the fixture.
pub fn client_with(http: HttpConfig, catalog: Catalog) -> Client {
    client_of(Config::new("mcp-engine-everything", "0.1.0"), http, catalog, Box::new(everything::respond))
}

/// An HTTP engine anyone may use (`AllowedOrigins::Any`, `Authorization::Everyone`, one
/// principal), whose host keeps every tool call's ticket (a task's, when the engine made
/// the call a task) and answers nothing; the tickets in the order the calls came.
pub fn ticket_client(
    config: Config,
    catalog: Catalog,
) -> (Client, std::rc::Rc<std::cell::RefCell<Vec<mcp_engine::Ticket>>>) {
    let calls = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let kept = calls.clone();
    let host: Host = Box::new(move |ev| {
        if let Event::CallTool(call) = ev {
            kept.borrow_mut().push(call.ticket);
        }
    });
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let mut c = client_of(config, http, catalog, host);
    c.e.set_entropy(&[8; 32]);
    (c, calls)
}

/// A client of an engine built from all its parts.
pub fn client_of(config: Config, http: HttpConfig, catalog: Catalog, host: Host) -> Client {
    let mut e = HttpEngine::new(config, http, catalog);
    let conn = e.open(Instant::ZERO, None).unwrap();
    Client {
        e,
        conn,
        verdict: Verdict::Allow,
        body_verdict: Verdict::Allow,
        now: Instant::ZERO,
        host,
        store: Store::default(),
    }
}

/// A client of the fixture.
pub fn client() -> Client {
    client_with(config(), everything::catalog())
}

impl Client {
    /// Feeds bytes (in chunks of `chunk`), answering every event; returns all output.
    pub fn feed(&mut self, bytes: &[u8], chunk: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut rest = bytes;
        let mut stalls = 0;
        loop {
            let take = rest.len().min(chunk);
            let n = self.e.handle_input(self.now, self.conn, &rest[..take]);
            rest = &rest[n..];
            self.drain(&mut out);
            if rest.is_empty() {
                break;
            }
            stalls = if n == 0 { stalls + 1 } else { 0 };
            assert!(stalls < 3, "the engine stopped taking input");
        }
        self.drain(&mut out);
        out
    }

    /// Answers every event and moves all output into `out`.
    pub fn drain(&mut self, out: &mut Vec<u8>) {
        let Self { e, conn, verdict, body_verdict, now, host, store } = self;
        let now = *now;
        drain_engine(e, *conn, out, |e| {
            if let Some(ev) = e.poll_event() {
                match ev {
                    HttpEvent::Authorize(a) => {
                        let conn = a.conn;
                        let v = *verdict;
                        e.authorize(now, conn, v);
                    }
                    HttpEvent::AuthorizeBody(a) => {
                        let conn = a.conn;
                        let v = *body_verdict;
                        e.authorize_body(now, conn, v);
                    }
                    HttpEvent::Mcp(ev) => host(ev),
                    _ => {}
                }
                return true;
            }
            let Some(ev) = e.poll_store() else {
                return false;
            };
            match ev {
                StoreEvent::LoadSession(l) => {
                    let (conn, id) = (l.conn, l.id.to_owned());
                    store.log.push(format!("load {id}"));
                    if store.hold {
                        store.held.push(conn);
                    } else if store.fail {
                        e.session_loaded(now, conn, Loaded::Unavailable);
                    } else {
                        match store.records.get(&id) {
                            Some(r) => e.session_loaded(now, conn, Loaded::Record(r)),
                            None => e.session_loaded(now, conn, Loaded::Missing),
                        }
                    }
                }
                StoreEvent::SaveSession(s) => {
                    let (conn, id, record) = (s.conn, s.id.to_owned(), s.record.map(<[u8]>::to_vec));
                    let verb = if record.is_some() { "save" } else { "forget" };
                    store.log.push(format!("{verb} {id}"));
                    if record.is_none() {
                        store.events.retain(|e| e.session != id);
                    }
                    if store.hold {
                        store.held.push(conn);
                    } else if store.fail {
                        e.session_saved(now, conn, false);
                    } else {
                        match record {
                            Some(r) => store.records.insert(id, r),
                            None => store.records.remove(&id),
                        };
                        e.session_saved(now, conn, true);
                    }
                }
                StoreEvent::SessionExpired(x) => {
                    let id = x.id.to_owned();
                    store.log.push(format!("expired {id}"));
                    store.records.remove(&id);
                    store.events.retain(|e| e.session != id);
                }
                StoreEvent::AppendEvent(a) => store.append(StoredEvent {
                    session: a.session.to_owned(),
                    stream: a.stream,
                    seq: a.seq,
                    data: a.data.to_vec(),
                    last: a.last,
                }),
                StoreEvent::LoadEvents(l) => {
                    let (conn, id, stream, from) = (l.conn, l.session.to_owned(), l.stream, l.from);
                    store.log.push(format!("events {id} {stream} {from}"));
                    if store.events_hold {
                        store.events_held.push(conn);
                    } else if store.events_fail {
                        e.events_loaded(now, conn, LoadedEvents::Unavailable);
                    } else {
                        let kept: Vec<_> = store
                            .events
                            .iter()
                            .filter(|e| e.session == id && e.stream == stream && e.seq >= from)
                            .map(|e| mcp_engine::http::store::StoredEvent {
                                seq: e.seq,
                                data: &e.data,
                                last: e.last,
                            })
                            .collect();
                        e.events_loaded(now, conn, LoadedEvents::Events(&kept));
                    }
                }
                StoreEvent::TouchSession(t) => store.log.push(format!("touch {}", t.id)),
                _ => {}
            }
            true
        });
    }

    /// Sends raw request bytes; returns the responses.
    pub fn send(&mut self, raw: &[u8]) -> Vec<Response> {
        parse_responses(&self.feed(raw, usize::MAX))
    }
}

/// Answers events with `answer` and moves the output of `conn` into `out`, until neither
/// moves. `answer` takes one event (`HttpEngine::poll_event`) and answers it; it returns
/// whether there was one.
pub fn drain_engine(
    e: &mut HttpEngine,
    conn: ConnId,
    out: &mut Vec<u8>,
    mut answer: impl FnMut(&mut HttpEngine) -> bool,
) {
    loop {
        let mut progressed = false;
        while answer(e) {
            progressed = true;
        }
        let pending = e.pending_output(conn);
        if !pending.is_empty() {
            out.extend_from_slice(pending);
            let n = pending.len();
            e.consume_output(conn, n);
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
}

/// Splits raw output into responses (content-length bodies only).
pub fn parse_responses(mut raw: &[u8]) -> Vec<Response> {
    let mut out = Vec::new();
    while !raw.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        let httparse::Status::Complete(n) = resp.parse(raw).expect("a valid response head") else {
            panic!("incomplete response: {}", String::from_utf8_lossy(raw));
        };
        let headers: Vec<(String, String)> = resp
            .headers
            .iter()
            .map(|h| (h.name.to_owned(), String::from_utf8_lossy(h.value).into_owned()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.parse().unwrap());
        out.push(Response { status: resp.code.unwrap(), headers, body: raw[n..n + len].to_vec() });
        raw = &raw[n + len..];
    }
    out
}

/// The `_meta` of a request under `version`.
pub fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A POST with the headers a conforming client sends; `extra` adds or overrides.
pub fn post(body: &Value, extra: &[(&str, &str)]) -> Vec<u8> {
    let body = body.to_string();
    let method = body_str(&body, "method");
    let mut headers: Vec<(String, String)> = vec![
        ("Host".into(), "localhost:3000".into()),
        ("Content-Type".into(), "application/json".into()),
        ("Accept".into(), "application/json, text/event-stream".into()),
        ("MCP-Protocol-Version".into(), "2026-07-28".into()),
        ("Mcp-Method".into(), method),
    ];
    let v: Value = serde_json::from_str(&body).unwrap();
    let name = v["params"]["name"].as_str().or(v["params"]["uri"].as_str());
    if let Some(name) = name.or(v["params"]["taskId"].as_str()) {
        headers.push(("Mcp-Name".into(), name.into()));
    }
    for (k, val) in extra {
        headers.retain(|(h, _)| !h.eq_ignore_ascii_case(k) || k.starts_with('+'));
        if !val.is_empty() {
            headers.push((k.trim_start_matches('+').into(), (*val).into()));
        }
    }
    let mut s = String::from("POST /mcp HTTP/1.1\r\n");
    for (k, v) in headers {
        s.push_str(&format!("{k}: {v}\r\n"));
    }
    s.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.into_bytes()
}

/// A POST of a session-bound (`2025-11-25`) client: no `Mcp-Method`, `Mcp-Name` or
/// `MCP-Protocol-Version` header, and the session's `Mcp-Session-Id` once it has one.
pub fn legacy_post(body: &Value, session: Option<&str>) -> Vec<u8> {
    let mut extra = vec![("Mcp-Method", ""), ("Mcp-Name", ""), ("MCP-Protocol-Version", "")];
    if let Some(id) = session {
        extra.push(("Mcp-Session-Id", id));
    }
    post(body, &extra)
}

fn body_str(body: &str, key: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap();
    v[key].as_str().unwrap_or("").to_owned()
}

/// A request; `_meta` is added when `params` has none.
pub fn req(id: i64, method: &str, params: Value) -> Value {
    let mut params = params;
    if params.get("_meta").is_none() {
        params["_meta"] = meta("2026-07-28");
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// Sends one request and returns its one response.
pub fn one(c: &mut Client, raw: &[u8]) -> Response {
    let mut r = c.send(raw);
    assert_eq!(r.len(), 1, "{r:?}");
    r.remove(0)
}

/// `Accept` for an SSE `GET` (a line of `get`'s `extra`).
pub const SSE: &str = "Accept: text/event-stream\r\n";

/// A `GET` of the endpoint in `session` (if any), with `extra` header lines.
pub fn get(session: Option<&str>, extra: &str) -> Vec<u8> {
    let mut s = String::from("GET /mcp HTTP/1.1\r\nHost: localhost:3000\r\n");
    if let Some(id) = session {
        s.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
    }
    s.push_str(extra);
    s.push_str("\r\n");
    s.into_bytes()
}

/// Sends `raw` on a new connection of `c`; returns its connection and what it wrote.
pub fn on_new(c: &mut Client, raw: &[u8]) -> (ConnId, String) {
    on_new_in(c, raw, usize::MAX)
}

/// [`on_new`], feeding `raw` in chunks of `chunk` bytes.
pub fn on_new_in(c: &mut Client, raw: &[u8], chunk: usize) -> (ConnId, String) {
    let keep = c.conn;
    c.conn = c.e.open(c.now, None).unwrap();
    let out = c.feed(raw, chunk);
    let conn = core::mem::replace(&mut c.conn, keep);
    (conn, String::from_utf8(out).unwrap())
}

/// What `conn` of `c` wrote since it was last read (every event answered first).
pub fn more(c: &mut Client, conn: ConnId) -> String {
    let keep = core::mem::replace(&mut c.conn, conn);
    let mut out = Vec::new();
    c.drain(&mut out);
    c.conn = keep;
    String::from_utf8(out).unwrap()
}

/// `(id, data)` of every SSE event in `raw` (an event without an id has an empty one).
pub fn sse_events(raw: &str) -> Vec<(String, String)> {
    let mut events = Vec::new();
    let mut id = String::new();
    for line in raw.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            id = v.to_owned();
        } else if let Some(d) = line.strip_prefix("data: ") {
            events.push((core::mem::take(&mut id), d.to_owned()));
        }
    }
    events
}

/// A session-bound POST under `version`: `MCP-Protocol-Version` and `Mcp-Session-Id`
/// when a session is named (none for `initialize`), no `Mcp-Method`.
pub fn session_post(body: &Value, version: &str, session: Option<&str>) -> Vec<u8> {
    let mut extra = vec![("Mcp-Method", ""), ("Mcp-Name", ""), ("MCP-Protocol-Version", "")];
    if let Some(id) = session {
        extra.push(("MCP-Protocol-Version", version));
        extra.push(("Mcp-Session-Id", id));
    }
    post(body, &extra)
}

/// Opens a session under `version` (`initialize`, then `notifications/initialized`);
/// returns its id.
pub fn open_session(c: &mut Client, version: &str) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let r = one(c, &session_post(&init, version, None));
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(one(c, &session_post(&done, version, Some(&id))).status, 202);
    id
}
