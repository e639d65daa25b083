//! Heap allocations per request in steady state, counted exactly, over stdio (`serve` on
//! an in-memory duplex pipe) and over HTTP (`HttpServer` on loopback TCP, one keep-alive
//! connection).
//!
//! Everything runs on one current-thread runtime, so the per-thread counter of
//! `allocation_counter` sees the client, the run loop, the connection tasks and the
//! handler tasks alike. Each count is that of `ROUNDS` round trips (after a warm-up) less
//! that of an empty `block_on`, divided by `ROUNDS`; the client allocates nothing (a
//! request written once, a reused read buffer). The adapter's own count is zero: what
//! remains is the handler's, named case by case.
//!
//! Before the adapter was made allocation-free, a `tools/call` answered with
//! `ToolReply::text("ok")` cost 6 allocations over stdio (the tool name and the arguments
//! copied into `String`s, the spawned task, the `Vec<Content>` of the answer, and the
//! handler's `String` and `Vec`) and 8 over HTTP (plus a oneshot channel per read and a
//! copy of each response for the writer task).

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, Verdict};
use mcp_engine::{Catalog, Config, Engine, Prompt, Resource, Tool};
use mcp_io_tokio::{
    AllowAll, AuthorizeInfo, Authorizer, Handler, HostFailure, HttpServer, OwnedContent, PromptGet,
    PromptReply, ResourceRead, ResourceReply, ToolCall, ToolReply, serve,
};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::runtime::Runtime;

/// Round trips measured.
const ROUNDS: u64 = 200;

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
        .resource(Resource::new("test://r", "r").mime_type("text/plain"))
        .prompt(Prompt::new("p"))
        .build()
        .expect("a valid catalog")
}

/// Answers each tool its own way (see the cases).
struct Cases;

impl Handler for Cases {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        match call.name.as_str() {
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

fn body((method, _, params): Case) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{params},{META}}}}}"#)
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// Reads into `buf` until `done` says a whole response is there; returns its length.
async fn read_until(
    r: &mut (impl AsyncRead + Unpin),
    buf: &mut [u8],
    done: impl Fn(&[u8]) -> Option<usize>,
) -> usize {
    let mut len = 0;
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

/// A whole HTTP response with `Content-Length`.
fn http_response(buf: &[u8]) -> Option<usize> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = std::str::from_utf8(&buf[..head]).expect("an ASCII head");
    let len = text
        .split("\r\n")
        .find_map(|l| l.strip_prefix("content-length: ").or_else(|| l.strip_prefix("Content-Length: ")))
        .expect("a content length")
        .parse::<usize>()
        .expect("a number");
    (buf.len() >= head + len).then_some(head + len)
}

/// A client of one server: sends a request, reads its response.
struct Client<R, W> {
    r: R,
    w: W,
    buf: Vec<u8>,
    done: fn(&[u8]) -> Option<usize>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Client<R, W> {
    /// Sends `request` and reads the response, `rounds` times; checks each one.
    async fn rounds(&mut self, request: &[u8], rounds: u64) {
        for _ in 0..rounds {
            self.w.write_all(request).await.expect("write");
            self.w.flush().await.expect("flush");
            let n = read_until(&mut self.r, &mut self.buf, self.done).await;
            let response = &self.buf[..n];
            let answered =
                [&br#""text":"ok""#[..], br#"[{"type":"text","text":"o"},{"type":"text","text":"k"}]"#]
                    .iter()
                    .any(|want| response.windows(want.len()).any(|w| w == *want));
            assert!(answered, "{}", String::from_utf8_lossy(response));
        }
    }

    /// Allocations per round trip of `request`, once warm.
    fn per_round(&mut self, rt: &Runtime, request: &[u8]) -> u64 {
        rt.block_on(self.rounds(request, 50));
        let base = allocation_counter::measure(|| rt.block_on(async {}));
        let info = allocation_counter::measure(|| rt.block_on(self.rounds(request, ROUNDS)));
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
    [STATIC, TWO, ECHO, RESOURCE, PROMPT]
        .into_iter()
        .map(|case| client.per_round(rt, &request(case)))
        .collect()
}

#[test]
fn allocations_per_stdio_request() {
    let rt = runtime();
    let (r, w) = rt.block_on(async {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (sr, sw) = tokio::io::split(server);
        let engine = Engine::new(Config::new("alloc", "1"), catalog());
        tokio::spawn(serve(engine, Arc::new(Cases), sr, sw));
        tokio::io::split(client)
    });
    let mut client = Client { r, w, buf: vec![0; 64 * 1024], done: line };
    let counts = measure(&rt, &mut client, |case| format!("{}\n", body(case)).into_bytes());
    // static, two blocks, echo, resource, prompt: see the cases.
    assert_eq!(counts, [0, 1, 1, 4, 1], "allocations per stdio request");
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
        tokio::spawn(HttpServer::new(engine, Arc::new(Cases), auth).serve(listener));
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        (stream, addr)
    });
    let (r, w) = stream.into_split();
    let mut client = Client { r, w, buf: vec![0; 64 * 1024], done: http_response };
    measure(&rt, &mut client, |case| {
        let (method, name, _) = case;
        let body = body(case);
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {method}\r\nMcp-Name: {name}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            addr.port(),
            body.len()
        )
        .into_bytes()
    })
}

#[test]
fn allocations_per_http_request() {
    let counts = http_counts(Authorization::Everyone, false, AllowAll, "");
    // The same as over stdio: the HTTP server adds nothing.
    assert_eq!(counts, [0, 1, 1, 4, 1], "allocations per HTTP request");
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
    assert_eq!(counts, [0, 1, 1, 4, 1], "allocations per HTTP request, head authorized");
    let counts = http_counts(Authorization::Host, true, bearer, header);
    assert_eq!(counts, [0, 1, 1, 4, 1], "allocations per HTTP request, head and body authorized");
}
