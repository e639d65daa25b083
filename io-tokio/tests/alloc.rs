//! Heap allocations per request in steady state, counted exactly, over stdio (`serve` on
//! an in-memory duplex pipe) and over HTTP (`HttpServer` on loopback TCP, one keep-alive
//! connection, and a second one in a session for the client's responses).
//!
//! Everything runs on one current-thread runtime, so the per-thread counter of
//! `allocation_counter` sees the client, the run loop, the connection tasks and the
//! handler tasks alike. Each count is that of `ROUNDS` round trips (after a warm-up) less
//! that of an empty `block_on`, divided by `ROUNDS`; the client allocates nothing (a
//! request written once, its responses to the server formatted into reused buffers, a
//! reused read buffer). The adapter's own count is zero: what remains is the handler's
//! (or once the engine's), named case by case.
//!
//! The first cases are `2026-07-28` requests, each on its own. Inside a `2025-11-25`
//! session (over stdio, and over HTTP with the session's `Mcp-Session-Id`) come `ping`,
//! `tools/list`, `tools/call`, a notification, and a full round trip to the client for
//! input: the call, the server's `elicitation/create` to the client, the client's
//! response, the handler called again with it ([`InputContext`](mcp_io_tokio::handler::InputContext),
//! whose responses sit in pooled buffers), the final result.
//!
//! Before the adapter was made allocation-free, a `tools/call` answered with
//! `ToolReply::text("ok")` cost 6 allocations over stdio (the tool name and the arguments
//! copied into `String`s, the spawned task, the `Vec<Content>` of the answer, and the
//! handler's `String` and `Vec`) and 8 over HTTP (plus a oneshot channel per read and a
//! copy of each response for the writer task). Before `InputContext` kept its text in
//! pooled buffers, a round trip for input cost the adapter 4 (the vector of borrowed
//! requests it answered with, the response's key and text and the vector of them; 5 with
//! state, copied too), and the handler 3 more (its `Vec` of requests cloned for each
//! reply, where an `Arc` of them is shared now): 7 in all, now 0.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, Verdict};
use mcp_engine::mrtr::InputRequestBuf;
use mcp_engine::{Catalog, Config, Engine, Prompt, Resource, Tool};
use mcp_io_tokio::http::{AllowAll, AuthorizeInfo};
use mcp_io_tokio::reply::{InputRequiredReply, OwnedContent};
use mcp_io_tokio::stdio::serve;
use mcp_io_tokio::{
    Authorizer, Handler, HostFailure, HttpServer, PromptGet, PromptReply, ResourceRead, ResourceReply,
    ToolCall, ToolReply,
};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::runtime::Runtime;

/// Round trips measured.
const ROUNDS: u64 = 200;

/// Round trips before measuring: enough for a session's replay buffer, which grows with
/// the events of its streams (up to 256 events), to hold as many as it may (an input
/// round over HTTP writes 3 events).
const WARM_UP: u64 = 100;

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn catalog() -> Catalog {
    let text = json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
    });
    Catalog::builder()
        .tool(Tool::new("static").input_schema(text.clone()))
        .tool(Tool::new("two"))
        .tool(Tool::new("echo").input_schema(text))
        .tool(Tool::new("ask"))
        .tool(Tool::new("ask_state"))
        .resource(Resource::new("test://r", "r").mime_type("text/plain"))
        .prompt(Prompt::new("p"))
        .build()
        .expect("a valid catalog")
}

/// Answers each tool its own way (see the cases).
struct Cases {
    /// What `ask` asks its client, built once: a reply hands out a clone of the `Arc`.
    asks: Arc<[InputRequestBuf]>,
}

impl Cases {
    fn new() -> Arc<Self> {
        let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } });
        Arc::new(Self { asks: Arc::new([InputRequestBuf::elicit("go", "Go on?", &schema)]) })
    }
}

impl Handler for Cases {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        match call.name.as_str() {
            // Asks the client first, answers once it has the response (no state: the
            // response tells the rounds apart).
            "ask" => Ok(match call.input.response("go") {
                None => ToolReply::input_required(InputRequiredReply::new(Arc::clone(&self.asks))),
                Some(r) => {
                    assert_eq!(r, ANSWER, "the client's response, as it sent it");
                    assert_eq!((call.input.errors().count(), call.input.request_state()), (0, None));
                    ToolReply::text("ok")
                }
            }),
            // The same with state, handed back with the response.
            "ask_state" => Ok(match call.input.request_state() {
                None => ToolReply::input_required(
                    InputRequiredReply::new(Arc::clone(&self.asks)).with_state(b"round 1"),
                ),
                Some(state) => {
                    assert_eq!((state, call.input.response("go")), (&b"round 1"[..], Some(ANSWER)));
                    ToolReply::text("ok")
                }
            }),
            "static" => {
                assert_eq!(call.arguments, r#"{"text":"hi"}"#);
                Ok(ToolReply::text("ok"))
            }
            "two" => Ok(ToolReply::new([OwnedContent::text("o"), OwnedContent::text("k")])),
            "echo" => {
                #[derive(serde::Deserialize)]
                struct Args {
                    text: String,
                }
                Ok(ToolReply::text(call.deserialize::<Args>()?.text))
            }
            other => panic!("no tool {other}"),
        }
    }

    async fn read_resource(&self, read: ResourceRead) -> Result<ResourceReply, HostFailure> {
        assert_eq!(read.uri, "test://r");
        Ok(ResourceReply::text(read.uri.as_str(), Some("text/plain"), "ok"))
    }

    async fn get_prompt(&self, get: PromptGet) -> Result<PromptReply, HostFailure> {
        assert_eq!(get.name, "p");
        Ok(PromptReply::user_text("ok"))
    }
}

/// A request of the `2026-07-28` revision: `(method, name for Mcp-Name, params)`.
type Case = (&'static str, &'static str, &'static str);

/// One block of static text, from a handler that allocates nothing: nothing at all.
const STATIC: Case = ("tools/call", "static", r#""name":"static","arguments":{"text":"hi"}"#);
/// Two blocks: the handler's `Vec` of blocks (the adapter's borrowed form of them reuses
/// a vector).
const TWO: Case = ("tools/call", "two", r#""name":"two","arguments":{}"#);
/// A realistic echo: the handler's `String` deserialized from the arguments (then moved
/// into the reply).
const ECHO: Case = ("tools/call", "echo", r#""name":"echo","arguments":{"text":"ok"}"#);
/// A listed resource: the handler's reply owns its uri, MIME type and text, in a `Vec`.
const RESOURCE: Case = ("resources/read", "test://r", r#""uri":"test://r""#);
/// A prompt of one static user message: the handler's `Vec` of messages.
const PROMPT: Case = ("prompts/get", "p", r#""name":"p""#);
/// [`STATIC`] with a W3C trace context in `_meta`: read and handed over (to the request's
/// span, when a subscriber wants it) without an allocation either.
const TRACED: Case = (
    "tools/call",
    "static",
    r#""name":"static","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"rojo=00f067aa0ba902b7","baggage":"k=v"}"#,
);

fn body((method, _, params): Case) -> String {
    if params.contains(r#""_meta""#) {
        return format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{params}}}}}"#);
    }
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{params},{META}}}}}"#)
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// Reads into `buf`, after the `len` bytes already there, until `done` says a whole
/// response is there; returns its length.
async fn read_until(
    r: &mut (impl AsyncRead + Unpin),
    buf: &mut [u8],
    mut len: usize,
    done: impl Fn(&[u8]) -> Option<usize>,
) -> usize {
    loop {
        if let Some(n) = done(&buf[..len]) {
            assert_eq!(n, len, "one response at a time");
            return n;
        }
        let n = r.read(&mut buf[len..]).await.expect("read");
        assert!(n > 0, "the server closed its output");
        len += n;
    }
}

/// A whole line.
fn line(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n').map(|i| i + 1)
}

/// Where `needle` first is in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A whole HTTP response: with `Content-Length`, or chunked (an SSE stream, whole once
/// its last chunk is there).
fn http_response(buf: &[u8]) -> Option<usize> {
    let head = find(buf, b"\r\n\r\n")? + 4;
    let text = std::str::from_utf8(&buf[..head]).expect("an ASCII head");
    let header = |name: &str| {
        text.split("\r\n").find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        return buf.ends_with(b"\r\n0\r\n\r\n").then_some(buf.len());
    }
    let len = header("content-length").map_or(0, |v| v.parse::<usize>().expect("a number"));
    (buf.len() >= head + len).then_some(head + len)
}

/// The server's request for input is there, whole (its line, or its SSE `data:` line).
fn server_request(buf: &[u8]) -> Option<usize> {
    let at = find(buf, br#""method":"elicitation/create""#)?;
    find(&buf[at..], b"\n").map(|_| buf.len())
}

/// The JSON-RPC id of the server's request in `buf` (`{"jsonrpc":"2.0","id":N,"method":..`).
fn server_request_id(buf: &[u8]) -> u64 {
    let method = find(buf, br#","method":"elicitation/create""#).expect("the server's request");
    let start = buf[..method].iter().rposition(|&b| b == b':').expect("an id") + 1;
    std::str::from_utf8(&buf[start..method]).ok().and_then(|id| id.parse().ok()).expect("a numeric id")
}

/// The client's answer to `elicitation/create`.
const ANSWER: &str = r#"{"action":"accept","content":{"ok":true}}"#;

/// What a client sends and gets back, once.
#[derive(Clone, Copy)]
enum Round<'a> {
    /// A request (or a notification then a request, in one write); its response
    /// contains this.
    Plain(&'a [u8], &'a [u8]),
    /// A tool call whose handler asks for input: the client answers the server's request
    /// with [`ANSWER`] and gets the final result, `"text":"ok"`.
    Input(&'a [u8]),
}

/// The stdio line, or the HTTP `POST` in session `session`, of a message of `body`.
type Frame = fn(out: &mut Vec<u8>, session: &str, body: &[u8]);

fn stdio_line(out: &mut Vec<u8>, _: &str, body: &[u8]) {
    out.extend_from_slice(body);
    out.push(b'\n');
}

fn session_post(out: &mut Vec<u8>, session: &str, body: &[u8]) {
    write!(
        out,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Mcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .expect("write to a vector");
    out.extend_from_slice(body);
}

/// A `2025-11-25` `initialize` whose client can answer elicitation.
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"alloc","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const CALL: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"static","arguments":{"text":"hi"}}}"#;
const ASK: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}"#;
const ASK_STATE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask_state"}}"#;
/// A response of `ping`, `tools/list`, a call.
const PONG: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
const LISTED: &[u8] = br#""name":"ask_state""#;
const OK: &[u8] = br#""text":"ok""#;

/// A client of one server: sends a request, reads its response.
struct Client<R, W> {
    r: R,
    w: W,
    buf: Vec<u8>,
    done: fn(&[u8]) -> Option<usize>,
    /// Frames what the client sends outside [`Round::Plain`]: its response to the server's
    /// request.
    frame: Frame,
    /// The session (HTTP), empty before `initialize` (and over stdio, where the stream is
    /// the session).
    session: String,
    /// Another connection, for the client's responses to the server's requests (HTTP: the
    /// call's own is busy streaming); over stdio `None`, they go on the same stream.
    back: Option<(R, W)>,
    /// Reused buffers: the body of the client's response, and its frame.
    body: Vec<u8>,
    out: Vec<u8>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Client<R, W> {
    fn new(r: R, w: W, done: fn(&[u8]) -> Option<usize>, frame: Frame) -> Self {
        let buf = vec![0; 64 * 1024];
        let (body, out) = (Vec::with_capacity(1024), Vec::with_capacity(1024));
        Self { r, w, buf, done, frame, session: String::new(), back: None, body, out }
    }

    /// Sends `request` and reads its response, whose text it returns (setup only).
    async fn exchange(&mut self, request: &[u8]) -> String {
        self.w.write_all(request).await.expect("write");
        let n = read_until(&mut self.r, &mut self.buf, 0, self.done).await;
        String::from_utf8_lossy(&self.buf[..n]).into_owned()
    }

    /// Plays `round` `rounds` times; checks each response.
    async fn rounds(&mut self, round: Round<'_>, rounds: u64) {
        for _ in 0..rounds {
            match round {
                Round::Plain(request, want) => {
                    self.w.write_all(request).await.expect("write");
                    self.w.flush().await.expect("flush");
                    let n = read_until(&mut self.r, &mut self.buf, 0, self.done).await;
                    let response = &self.buf[..n];
                    assert!(find(response, want).is_some(), "{}", String::from_utf8_lossy(response));
                }
                Round::Input(call) => self.input_round(call).await,
            }
        }
    }

    /// The call, the server's request, the client's answer, the final result.
    async fn input_round(&mut self, call: &[u8]) {
        self.w.write_all(call).await.expect("write");
        self.w.flush().await.expect("flush");
        let asked = read_until(&mut self.r, &mut self.buf, 0, server_request).await;
        let id = server_request_id(&self.buf[..asked]);
        self.body.clear();
        write!(self.body, r#"{{"jsonrpc":"2.0","id":{id},"result":{ANSWER}}}"#).expect("write to a vector");
        self.out.clear();
        (self.frame)(&mut self.out, &self.session, &self.body);
        let from = match &mut self.back {
            None => {
                self.w.write_all(&self.out).await.expect("write");
                self.w.flush().await.expect("flush");
                // The request's line was whole: the result is the next line.
                0
            }
            Some((r, w)) => {
                w.write_all(&self.out).await.expect("write");
                w.flush().await.expect("flush");
                let n = read_until(r, &mut self.buf[asked..], 0, http_response).await;
                let accepted = &self.buf[asked..asked + n];
                assert!(accepted.starts_with(b"HTTP/1.1 202"), "{}", String::from_utf8_lossy(accepted));
                // The call's stream goes on after the request's event.
                asked
            }
        };
        let n = read_until(&mut self.r, &mut self.buf, from, self.done).await;
        let result = &self.buf[from..n];
        assert!(find(result, OK).is_some(), "{}", String::from_utf8_lossy(result));
    }

    /// Allocations per `round`, once warm.
    fn per_round(&mut self, rt: &Runtime, round: Round<'_>) -> u64 {
        rt.block_on(self.rounds(round, WARM_UP));
        let base = allocation_counter::measure(|| rt.block_on(async {}));
        let info = allocation_counter::measure(|| rt.block_on(self.rounds(round, ROUNDS)));
        let total = info.count_total - base.count_total;
        assert_eq!(total % ROUNDS, 0, "the same allocations every round: {total} for {ROUNDS} ({info:?})");
        total / ROUNDS
    }
}

/// Allocations per request of each case, measured one after the other on one server.
fn measure<R, W>(rt: &Runtime, client: &mut Client<R, W>, request: impl Fn(Case) -> Vec<u8>) -> Vec<u64>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let two = br#"[{"type":"text","text":"o"},{"type":"text","text":"k"}]"#;
    [STATIC, TWO, ECHO, RESOURCE, PROMPT, TRACED]
        .into_iter()
        .map(|case| client.per_round(rt, Round::Plain(&request(case), if case == TWO { two } else { OK })))
        .collect()
}

#[test]
fn allocations_per_stdio_request() {
    let rt = runtime();
    let (r, w) = rt.block_on(async {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (sr, sw) = tokio::io::split(server);
        let engine = Engine::new(Config::new("alloc", "1"), catalog());
        tokio::spawn(serve(engine, Cases::new(), sr, sw));
        tokio::io::split(client)
    });
    let mut client = Client::new(r, w, line, stdio_line);
    let counts = measure(&rt, &mut client, |case| format!("{}\n", body(case)).into_bytes());
    // static, two blocks, echo, resource, prompt, static with a trace context: see the cases.
    assert_eq!(counts, [0, 1, 1, 4, 1, 0], "allocations per stdio request");
}

/// The counts of `Cases` over HTTP on loopback, with the engine's `authorization` mode and
/// authorizer `auth` (asked about bodies too when `bodies`), requests carrying `extra`
/// header lines.
fn http_counts<A: Authorizer>(authorization: Authorization, bodies: bool, auth: A, extra: &str) -> Vec<u64> {
    let rt = runtime();
    let (stream, addr) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("an address");
        let mut http = HttpConfig::new(AllowedOrigins::Any, authorization);
        http.authorize_body(bodies);
        let engine = HttpEngine::new(Config::new("alloc", "1"), http, catalog());
        tokio::spawn(HttpServer::new(engine, Cases::new(), auth).serve(listener));
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        (stream, addr)
    });
    let (r, w) = stream.into_split();
    let mut client = Client::new(r, w, http_response, session_post);
    measure(&rt, &mut client, |case| http_request(addr, case, extra).into_bytes())
}

/// The `POST` of `case` to the server at `addr`, with `extra` header lines.
fn http_request(addr: SocketAddr, case: Case, extra: &str) -> String {
    let (method, name, _) = case;
    let body = body(case);
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\nMcp-Name: {name}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        addr.port(),
        body.len()
    )
}

#[test]
fn allocations_per_http_request() {
    let counts = http_counts(Authorization::Everyone, false, AllowAll, "");
    // The same as over stdio: the HTTP server adds nothing.
    assert_eq!(counts, [0, 1, 1, 4, 1, 0], "allocations per HTTP request");
}

/// Under `Authorization::Host` the authorizer reads the request's headers from a reused
/// `AuthorizeInfo` and decides at once: still nothing per request from the adapter.
/// (Before `Authorizer::authorize_now`, each request cost 18 more: an owned copy of every
/// header and the boxed decision.)
#[test]
fn allocations_per_http_request_under_host_authorization() {
    let bearer = |req: &AuthorizeInfo| match req.bearer_token() {
        Some("s3cret") => Verdict::Allow,
        _ => Verdict::Unauthenticated,
    };
    let header = "Authorization: Bearer s3cret\r\n";
    let counts = http_counts(Authorization::Host, false, bearer, header);
    assert_eq!(counts, [0, 1, 1, 4, 1, 0], "allocations per HTTP request, head authorized");
    let counts = http_counts(Authorization::Host, true, bearer, header);
    assert_eq!(counts, [0, 1, 1, 4, 1, 0], "allocations per HTTP request, head and body authorized");
}

/// The allocations per round of a `2025-11-25` session over `client`, whose `initialize`
/// is answered: `ping`, `tools/list`, `tools/call`, a notification, a call that asks the
/// client for input, the same with state. Each message is framed by the client's
/// `frame`; over stdio a notification goes with a `ping` (it has no response to wait
/// for), over HTTP alone (answered `202`).
fn session_counts<R, W>(rt: &Runtime, client: &mut Client<R, W>, stdio: bool) -> Vec<u64>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let framed = |client: &Client<R, W>, body: &str| {
        let mut out = Vec::new();
        (client.frame)(&mut out, &client.session, body.as_bytes());
        out
    };
    let (ping, list, call) = (framed(client, PING), framed(client, LIST), framed(client, CALL));
    let (ask, ask_state) = (framed(client, ASK), framed(client, ASK_STATE));
    let notification = match stdio {
        true => [framed(client, INITIALIZED), ping.clone()].concat(),
        false => framed(client, INITIALIZED),
    };
    let notified: &[u8] = if stdio { PONG } else { b"HTTP/1.1 202" };
    [
        Round::Plain(&ping, PONG),
        Round::Plain(&list, LISTED),
        Round::Plain(&call, OK),
        Round::Plain(&notification, notified),
        Round::Input(&ask),
        Round::Input(&ask_state),
    ]
    .into_iter()
    .map(|round| client.per_round(rt, round))
    .collect()
}

/// Inside a `2025-11-25` session over stdio: nothing, but for a handler that gives state
/// with its input request: its own `Vec` (the engine keeps the state in a buffer it
/// reuses, and the adapter's copy for `InputContext::request_state` is pooled).
#[test]
fn allocations_per_stdio_session_request() {
    let rt = runtime();
    let (r, w) = rt.block_on(async {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (sr, sw) = tokio::io::split(server);
        let engine = Engine::new(Config::new("alloc", "1"), catalog());
        tokio::spawn(serve(engine, Cases::new(), sr, sw));
        tokio::io::split(client)
    });
    let mut client = Client::new(r, w, line, stdio_line);
    let init = rt.block_on(client.exchange(format!("{INITIALIZE}\n{INITIALIZED}\n").as_bytes()));
    assert!(init.contains(r#""protocolVersion":"2025-11-25""#), "{init}");
    let counts = session_counts(&rt, &mut client, true);
    // ping, tools/list, tools/call, a notification, a round trip for input, with state
    // (the handler's own state).
    assert_eq!(counts, [0, 0, 0, 0, 0, 1], "allocations per stdio session request");
}

/// Inside a `2025-11-25` session over HTTP (one keep-alive connection for the requests,
/// another for the client's responses to the server's requests): the same as over stdio.
#[test]
fn allocations_per_http_session_request() {
    let rt = runtime();
    let (a, b) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("an address");
        let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
        let engine = HttpEngine::new(Config::new("alloc", "1"), http, catalog());
        tokio::spawn(HttpServer::new(engine, Cases::new(), AllowAll).serve(listener));
        let connect = || async {
            let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            stream.into_split()
        };
        (connect().await, connect().await)
    });
    let mut client = Client::new(a.0, a.1, http_response, session_post);
    client.back = Some(b);
    // No session yet: `initialize` goes without `Mcp-Session-Id`.
    let mut open = Vec::new();
    session_post(&mut open, "", INITIALIZE.as_bytes());
    let at = find(&open, b"Mcp-Session-Id: \r\n").expect("the session header");
    open.drain(at..at + "Mcp-Session-Id: \r\n".len());
    let init = rt.block_on(client.exchange(&open));
    assert!(init.starts_with("HTTP/1.1 200") && init.contains(r#""protocolVersion":"2025-11-25""#), "{init}");
    let session = init.split("\r\n").find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case("mcp-session-id").then(|| v.trim().to_owned())
    });
    client.session = session.unwrap_or_else(|| panic!("no session: {init}"));
    let mut initialized = Vec::new();
    session_post(&mut initialized, &client.session, INITIALIZED.as_bytes());
    let done = rt.block_on(client.exchange(&initialized));
    assert!(done.starts_with("HTTP/1.1 202"), "{done}");
    let counts = session_counts(&rt, &mut client, false);
    // ping, tools/list, tools/call, a notification, a round trip for input, with state
    // (the handler's own state).
    assert_eq!(counts, [0, 0, 0, 0, 0, 1], "allocations per HTTP session request");
}

/// The cases of [`measure`] through the typed router (`Router`, feature `schemars`):
/// each item declared once with its handler, arguments deserialized into the handler's
/// own types (here ones that need no heap: a unit enum, [`NoArgs`](mcp_io_tokio::NoArgs);
/// `echo`'s `String` is the handler's), the route found by name and its future awaited in
/// place.
#[cfg(feature = "schemars")]
mod typed {
    use mcp_engine::{Prompt, Resource, Tool};
    use mcp_io_tokio::reply::OwnedContent;
    use mcp_io_tokio::{NoArgs, PromptReply, ResourceRead, ResourceReply, Router, ToolReply};
    use schemars::JsonSchema;
    use serde::Deserialize;

    #[derive(Deserialize, JsonSchema, PartialEq)]
    enum Word {
        #[serde(rename = "hi")]
        Hi,
    }

    #[derive(Deserialize, JsonSchema)]
    struct Static {
        text: Word,
    }

    #[derive(Deserialize, JsonSchema)]
    struct Echo {
        text: String,
    }

    pub(super) fn router() -> (mcp_engine::Catalog, std::sync::Arc<impl mcp_io_tokio::Handler>) {
        Router::new(())
            .tool(Tool::new("static"), |(), args: Static| async move {
                assert!(args.text == Word::Hi);
                Ok(ToolReply::text("ok"))
            })
            .tool(Tool::new("two"), |(), _: NoArgs| async {
                Ok(ToolReply::new([OwnedContent::text("o"), OwnedContent::text("k")]))
            })
            .tool(Tool::new("echo"), |(), args: Echo| async move { Ok(args.text) })
            .resource(
                Resource::new("test://r", "r").mime_type("text/plain"),
                |(), read: ResourceRead| async move {
                    Ok(ResourceReply::text(read.uri.as_str(), Some("text/plain"), "ok"))
                },
            )
            .prompt(Prompt::new("p"), |(), _: NoArgs| async { Ok(PromptReply::user_text("ok")) })
            .build()
            .expect("a valid router")
    }
}

/// The typed router adds nothing to a request: the same counts as the hand-written
/// `Handler` of [`allocations_per_stdio_request`], over stdio and over HTTP.
#[cfg(feature = "schemars")]
#[test]
fn allocations_per_request_through_the_typed_router() {
    let rt = runtime();
    let (r, w) = rt.block_on(async {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (sr, sw) = tokio::io::split(server);
        let (catalog, handler) = typed::router();
        tokio::spawn(serve(Engine::new(Config::new("alloc", "1"), catalog), handler, sr, sw));
        tokio::io::split(client)
    });
    let mut client = Client::new(r, w, line, stdio_line);
    let counts = measure(&rt, &mut client, |case| format!("{}\n", body(case)).into_bytes());
    assert_eq!(counts, [0, 1, 1, 4, 1, 0], "allocations per stdio request, typed router");

    let (stream, addr) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("an address");
        let (catalog, handler) = typed::router();
        let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
        let engine = HttpEngine::new(Config::new("alloc", "1"), http, catalog);
        tokio::spawn(HttpServer::new(engine, handler, AllowAll).serve(listener));
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        (stream, addr)
    });
    let (r, w) = stream.into_split();
    let mut client = Client::new(r, w, http_response, session_post);
    let counts = measure(&rt, &mut client, |case| http_request(addr, case, "").into_bytes());
    assert_eq!(counts, [0, 1, 1, 4, 1, 0], "allocations per HTTP request, typed router");
}
