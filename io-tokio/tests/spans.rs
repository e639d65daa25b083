//! The request spans (`telemetry`): one per request, named and attributed as
//! OpenTelemetry's MCP conventions say, with the client's trace context recorded, the
//! outcome's `error.type`, and no argument value, uri or baggage anywhere, captured by a
//! `tracing` layer that keeps every span's fields (and every event's).

mod common;
mod http_support;

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_engine::{Catalog, Config, Resource, Tool};
use mcp_io_tokio::http::AllowAll;
use mcp_io_tokio::telemetry::Telemetry;
use mcp_io_tokio::{Handler, HostFailure, HttpServer, ResourceRead, ResourceReply, ToolCall, ToolReply};
use mcp_spans::testing::{PARENT, PARENT_FIELDS, SpanRecord, capture};
use serde_json::json;
use tokio::net::TcpListener;

const SECRET: &str = "hunter2-do-not-log";
const URI: &str = "test://private/alice-secret";

/// Answers each tool its own way: `ok` succeeds, `broken` is a tool error, `crash` a
/// server error, `picky` invalid params.
struct Tools;

impl Handler for Tools {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        match call.name.as_str() {
            "broken" => Ok(ToolReply::error("the tool failed")),
            "crash" => Err(HostFailure::internal("down")),
            "picky" => Err(HostFailure::invalid_params("no")),
            _ => Ok(ToolReply::text("ok")),
        }
    }
    async fn read_resource(&self, read: ResourceRead) -> Result<ResourceReply, HostFailure> {
        Ok(ResourceReply::text(read.uri.clone(), Some("text/plain"), "body"))
    }
}

fn catalog() -> Catalog {
    let mut b = Catalog::builder().resource(Resource::new(URI, "private"));
    for name in ["ok", "broken", "crash", "picky"] {
        b = b.tool(Tool::new(name));
    }
    b.build().unwrap()
}

/// A `tools/call` of the `2026-07-28` revision with a trace context and a secret argument.
fn traced_call(id: u64, tool: &str) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool,
        "arguments": { "password": SECRET },
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "traceparent": PARENT,
            "tracestate": "rojo=00f067aa0ba902b7",
            "baggage": format!("userId={SECRET}")
        }
    } })
    .to_string()
}

fn field<'a>(span: &'a SpanRecord, name: &str) -> Option<&'a str> {
    span.field(name)
}

#[tokio::test]
async fn a_tool_call_over_stdio_has_one_span_named_and_attributed_by_the_conventions() {
    let (spans, _guard) = capture();
    let mut client = common::Client::start(Config::new("s", "1"), catalog(), Arc::new(Tools));
    client.send(&traced_call(7, "ok")).await;
    let r = client.recv().await;
    assert_eq!(r["result"]["content"][0]["text"], "ok", "{r}");
    assert!(client.finish().await.is_empty());

    let calls = spans.named("tools/call");
    assert_eq!(calls.len(), 1, "{calls:?}");
    let s = &calls[0];
    let expect = [
        ("otel.name", "tools/call ok"),
        ("otel.kind", "server"),
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "ok"),
        ("gen_ai.operation.name", "execute_tool"),
        ("mcp.protocol.version", "2026-07-28"),
        ("jsonrpc.request.id", "7"),
        ("network.transport", "pipe"),
    ];
    for (name, value) in expect.into_iter().chain(PARENT_FIELDS) {
        assert_eq!(field(s, name), Some(value), "{name}: {s:?}");
    }
    for absent in [
        "error.type",
        "otel.status_code",
        "rpc.response.status_code",
        "mcp.session.id",
        "network.protocol.name",
        "client.address",
        "gen_ai.prompt.name",
        "mcp.resource.uri",
    ] {
        assert_eq!(field(s, absent), None, "{absent}: {s:?}");
    }
    assert!(s.closed, "the span ends with the request: {s:?}");
    let all = spans.everything();
    assert!(!all.contains(SECRET), "an argument value or the baggage was recorded: {all}");
    assert!(!all.contains("rojo"), "the tracestate was recorded: {all}");
}

#[tokio::test]
async fn failed_tool_calls_record_their_error_type() {
    let (spans, _guard) = capture();
    let mut client = common::Client::start(Config::new("s", "1"), catalog(), Arc::new(Tools));
    for (id, tool) in [(1, "broken"), (2, "crash"), (3, "picky")] {
        client.send(&traced_call(id, tool)).await;
        let r = client.recv().await;
        assert_eq!(r["id"], id, "{r}");
    }
    assert!(client.finish().await.is_empty());
    let calls = spans.named("tools/call");
    assert_eq!(calls.len(), 3, "{calls:?}");
    let by_tool = |tool: &str| calls.iter().find(|s| field(s, "gen_ai.tool.name") == Some(tool)).unwrap();
    // `isError: true`: a failed operation without a JSON-RPC error.
    let s = by_tool("broken");
    assert_eq!((field(s, "error.type"), field(s, "otel.status_code")), (Some("tool_error"), Some("ERROR")));
    assert_eq!(field(s, "rpc.response.status_code"), None, "{s:?}");
    // A server error: its code.
    let s = by_tool("crash");
    assert_eq!((field(s, "error.type"), field(s, "otel.status_code")), (Some("-32603"), Some("ERROR")));
    assert_eq!(field(s, "rpc.response.status_code"), Some("-32603"));
    // The caller's error: the code, but not a failure of the server's.
    let s = by_tool("picky");
    assert_eq!(field(s, "rpc.response.status_code"), Some("-32602"), "{s:?}");
    assert_eq!((field(s, "error.type"), field(s, "otel.status_code")), (None, None), "{s:?}");
    assert!(calls.iter().all(|s| s.closed));
    let all = spans.everything();
    assert!(!all.contains(SECRET), "{all}");
}

#[tokio::test]
async fn a_resource_read_records_no_uri_by_default() {
    let (spans, _guard) = capture();
    let mut client = common::Client::start(Config::new("s", "1"), catalog(), Arc::new(Tools));
    client.send(&common::read(4, URI)).await;
    let r = client.recv().await;
    assert_eq!(r["result"]["contents"][0]["text"], "body", "{r}");
    assert!(client.finish().await.is_empty());
    let reads = spans.named("resources/read");
    assert_eq!(reads.len(), 1);
    let s = &reads[0];
    assert_eq!(field(s, "otel.name"), Some("resources/read"), "no uri in the name: {s:?}");
    assert_eq!(field(s, "mcp.resource.uri"), None);
    assert_eq!(field(s, "url.scheme"), None, "not a convention attribute of the span: {s:?}");
    assert!(!spans.everything().contains("alice-secret"), "{}", spans.everything());
}

async fn http_server(telemetry: Telemetry) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let engine = HttpEngine::new(Config::new("s", "1"), http, catalog());
    let server = HttpServer::new(engine, Arc::new(Tools), AllowAll).telemetry(telemetry);
    tokio::spawn(server.serve(listener));
    addr
}

#[tokio::test]
async fn over_http_the_span_names_the_transport_and_the_client() {
    let (spans, _guard) = capture();
    let addr = http_server(Telemetry::default()).await;
    let mut conn = http_support::Conn::open(addr).await;
    let local = conn.writer.local_addr().unwrap();
    conn.send(&http_support::post(addr, "tools/call", Some("ok"), &traced_call(9, "ok"))).await;
    let r = conn.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    // The span closes once the answer is written: give the run loop a moment.
    for _ in 0..100 {
        if spans.named("tools/call").iter().any(|s| s.closed) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let calls = spans.named("tools/call");
    assert_eq!(calls.len(), 1, "{calls:?}");
    let s = &calls[0];
    let port = local.port().to_string();
    let expect = [
        ("network.transport", "tcp"),
        ("network.protocol.name", "http"),
        ("network.protocol.version", "1.1"),
        ("client.address", "127.0.0.1"),
        ("client.port", port.as_str()),
        ("jsonrpc.request.id", "9"),
        ("parent.span_id", "00f067aa0ba902b7"),
    ];
    for (name, value) in expect {
        assert_eq!(field(s, name), Some(value), "{name}: {s:?}");
    }
    assert_eq!(field(s, "mcp.session.id"), None, "2026-07-28 has no session: {s:?}");
    assert!(!spans.everything().contains(SECRET), "{}", spans.everything());
}

#[tokio::test]
async fn the_host_may_opt_in_to_the_resource_uri() {
    let (spans, _guard) = capture();
    let addr = http_server(Telemetry::new().resource_uri(true)).await;
    let mut conn = http_support::Conn::open(addr).await;
    let body = http_support::body(3, "resources/read", &format!(r#""uri":"{URI}""#));
    conn.send(&http_support::post(addr, "resources/read", Some(URI), &body)).await;
    let r = conn.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    let reads = spans.named("resources/read");
    assert_eq!(reads.len(), 1);
    assert_eq!(field(&reads[0], "mcp.resource.uri"), Some(URI), "{:?}", reads[0]);
}

/// A request of the `2026-07-28` revision with `params` (JSON object members) and the
/// client's `traceparent`.
fn traced(id: u64, method: &str, params: &str) -> String {
    let sep = if params.is_empty() { "" } else { "," };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}{sep}"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"traceparent":"{PARENT}","baggage":"userId={SECRET}"}}}}}}"#
    )
}

#[tokio::test]
async fn requests_the_engine_answers_itself_have_the_same_span() {
    let (spans, _guard) = capture();
    let mut client = common::Client::start(Config::new("s", "1"), catalog(), Arc::new(Tools));
    client.send(&traced(1, "tools/list", "")).await;
    client.send(&traced(2, "tools/call", &format!(r#""name":"nope","arguments":{{"k":"{SECRET}"}}"#))).await;
    client.send(&traced(3, "no/such/method", "")).await;
    client.send(&traced(4, "server/discover", "")).await;
    client.send("{not json").await;
    for _ in 0..5 {
        client.recv().await;
    }
    assert!(client.finish().await.is_empty());

    let list = spans.named("tools/list");
    assert_eq!(list.len(), 1, "{list:?}");
    let s = &list[0];
    let expect = [
        ("otel.name", "tools/list"),
        ("otel.kind", "server"),
        ("mcp.method.name", "tools/list"),
        ("mcp.protocol.version", "2026-07-28"),
        ("jsonrpc.request.id", "1"),
        ("network.transport", "pipe"),
        ("parent.trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"),
        ("parent.span_id", "00f067aa0ba902b7"),
    ];
    for (name, value) in expect {
        assert_eq!(field(s, name), Some(value), "{name}: {s:?}");
    }
    assert_eq!((field(s, "error.type"), field(s, "rpc.response.status_code")), (None, None), "{s:?}");
    assert!(s.closed, "{s:?}");

    // An unknown tool: the caller's error (its code, no failure), and no target named.
    let call = spans.named("tools/call");
    assert_eq!(call.len(), 1, "{call:?}");
    assert_eq!(field(&call[0], "otel.name"), Some("tools/call"), "the client's tool name is not recorded");
    assert_eq!(field(&call[0], "rpc.response.status_code"), Some("-32602"));
    assert_eq!((field(&call[0], "error.type"), field(&call[0], "otel.status_code")), (None, None));
    assert_eq!(field(&call[0], "gen_ai.tool.name"), None);

    // A method the engine does not serve: no `mcp.method.name` (the conventions have no
    // value for it; `_OTHER` is error.type's), never the client's string.
    let other = spans.named("mcp");
    assert_eq!(other.len(), 2, "the unknown method and the parse error: {other:?}");
    assert_eq!(field(&other[0], "mcp.method.name"), None);
    assert_eq!(field(&other[0], "otel.name"), Some("mcp"));
    assert!(!spans.everything().contains("_OTHER"), "{}", spans.everything());
    assert_eq!(field(&other[0], "rpc.response.status_code"), Some("-32601"));
    assert_eq!(field(&other[1], "rpc.response.status_code"), Some("-32700"));
    assert_eq!(field(&other[1], "jsonrpc.request.id"), None, "a parse error has no id");
    assert_eq!(spans.named("server/discover").len(), 1);
    let all = spans.everything();
    assert!(!all.contains(SECRET), "an argument value or the baggage was recorded: {all}");
    assert!(!all.contains("no/such/method"), "the client's method string was recorded: {all}");
}

#[tokio::test]
async fn over_http_engine_answered_requests_name_their_session() {
    let (spans, _guard) = capture();
    let addr = http_server(Telemetry::default()).await;
    let mut conn = http_support::Conn::open(addr).await;
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let head = |session: Option<&str>, len: usize| {
        let mut h = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {len}\r\n"
        );
        if let Some(id) = session {
            h.push_str(&format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
        }
        h.push_str("\r\n");
        h
    };
    conn.send(&format!("{}{init}", head(None, init.len()))).await;
    let r = conn.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    conn.send(&format!("{}{ping}", head(Some(&id), ping.len()))).await;
    assert_eq!(conn.response().await.status, 200);

    let init = spans.named("initialize");
    assert_eq!(init.len(), 1, "{init:?}");
    let ping = spans.named("ping");
    assert_eq!(ping.len(), 1, "{ping:?}");
    for s in [&init[0], &ping[0]] {
        assert_eq!(field(s, "mcp.session.id"), Some(id.as_str()), "{s:?}");
        assert_eq!(field(s, "mcp.protocol.version"), Some("2025-11-25"), "{s:?}");
        assert_eq!(field(s, "network.protocol.name"), Some("http"), "{s:?}");
        assert_eq!(field(s, "client.address"), Some("127.0.0.1"), "{s:?}");
        assert!(s.closed, "{s:?}");
    }
    assert_eq!(field(&ping[0], "jsonrpc.request.id"), Some("2"));
}
