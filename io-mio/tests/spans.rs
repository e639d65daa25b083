//! The request spans of feature `tracing`: one per request, named and attributed as
//! OpenTelemetry's MCP conventions say (the same mapping as mcp-io-tokio's), captured by a
//! layer that keeps every span's fields and every event's; the host's answer closes its
//! request's span with the outcome; nothing a client sent beyond the conventions' values
//! (arguments, a bearer token, a cursor, `requestState`, `inputResponses`, a uri unless
//! the host opts in) is recorded.

mod support;

use mcp_engine::Commands;
use std::io::Read as _;
use std::net::{SocketAddr, TcpListener};
use std::thread;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent, Verdict};
use mcp_engine::{Config, Engine};
use mcp_fixture as everything;
use mcp_io_mio::{HttpServer, StatusCodeKey, StdioServer};
use mcp_spans::testing::{Captured, PARENT, PARENT_FIELDS, SpanRecord, capture};
use serde_json::{Value, json};
use support::http::Client;
use support::{pipes, within};

const SECRET: &str = "hunter2-do-not-log";
const TOKEN: &str = "tok-3f9a-secret-bearer";
const CURSOR: &str = "cursor-7c1e-secret";
const STATE: &str = "state-51d0-secret";
const RESPONSE: &str = "answer-9e2b-secret";
const URI: &str = "test://static-text";

/// A `2026-07-28` request with the client's trace context (and a secret in its baggage).
fn traced(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": PARENT,
        "tracestate": "rojo=00f067aa0ba902b7",
        "baggage": format!("userId={SECRET}"),
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

/// Serves `input` over stdio on this thread (the client's side closed after it, so the
/// server finishes) and returns what it wrote.
fn serve_stdio(engine: Engine, input: &str) -> String {
    let (mut client, ends) = pipes();
    client.send(input);
    client.close();
    StdioServer::new(engine, ends.rx, ends.tx).expect("server").run(everything::respond).expect("served");
    let mut out = String::new();
    client.rx.read_to_string(&mut out).expect("the output");
    out
}

fn one(mut spans: Vec<SpanRecord>, what: &str) -> SpanRecord {
    assert_eq!(spans.len(), 1, "{what}: {spans:?}");
    spans.remove(0)
}

fn assert_fields(s: &SpanRecord, expect: &[(&str, &str)]) {
    for (name, value) in expect {
        assert_eq!(s.field(name), Some(*value), "{name}: {s:?}");
    }
}

fn assert_redacted(captured: &Captured, secrets: &[&str]) {
    let all = captured.everything();
    for secret in secrets {
        assert!(!all.contains(secret), "{secret} was recorded: {all}");
    }
}

#[test]
fn over_stdio_each_request_has_the_conventions_span() {
    within(|| {
        let (spans, _guard) = capture();
        let input = [
            traced(7, "tools/call", json!({ "name": "echo", "arguments": { "text": SECRET } })),
            traced(8, "tools/call", json!({ "name": "test_error_handling" })),
            traced(9, "tools/list", json!({})),
            traced(10, "no/such/method", json!({})),
            "{not json".into(),
            json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 99 } })
                .to_string(),
        ]
        .join("\n")
            + "\n";
        let out = serve_stdio(support::engine(), &input);
        assert_eq!(out.lines().count(), 5, "five answers, none to the notification: {out}");

        // A request the host answered: made before the host callback, closed at the answer.
        let calls = spans.named("tools/call");
        assert_eq!(calls.len(), 2, "{calls:?}");
        let echo = calls.iter().find(|s| s.field("gen_ai.tool.name") == Some("echo")).expect("echo's span");
        assert_fields(
            echo,
            &[
                ("otel.name", "tools/call echo"),
                ("otel.kind", "server"),
                ("mcp.method.name", "tools/call"),
                ("gen_ai.operation.name", "execute_tool"),
                ("mcp.protocol.version", "2026-07-28"),
                ("jsonrpc.request.id", "7"),
                ("network.transport", "pipe"),
            ],
        );
        assert_fields(echo, &PARENT_FIELDS);
        for absent in
            ["error.type", "otel.status_code", "rpc.response.status_code", "mcp.session.id", "client.address"]
        {
            assert_eq!(echo.field(absent), None, "{absent}: {echo:?}");
        }
        assert!(echo.closed, "{echo:?}");

        // A tool result with `isError: true`, given by the host.
        let failed =
            calls.iter().find(|s| s.field("jsonrpc.request.id") == Some("8")).expect("the failed call");
        assert_fields(failed, &[("error.type", "tool_error"), ("otel.status_code", "ERROR")]);
        assert_eq!(failed.field("rpc.response.status_code"), None);
        assert!(failed.closed);

        // Answered by the engine itself.
        let list = &one(spans.named("tools/list"), "tools/list");
        assert_fields(list, &[("mcp.method.name", "tools/list"), ("jsonrpc.request.id", "9")]);
        assert!(list.closed);

        // No method the engine serves: no `mcp.method.name`, never the client's string.
        let other = spans.named("mcp");
        assert_eq!(other.len(), 2, "the unknown method and the parse error: {other:?}");
        assert_eq!(other[0].field("mcp.method.name"), None);
        assert_eq!(other[0].field("rpc.response.status_code"), Some("-32601"));
        assert_eq!(other[1].field("rpc.response.status_code"), Some("-32700"));
        assert_eq!((other[1].field("error.type"), other[1].field("jsonrpc.request.id")), (None, None));

        // The notification the engine acted on.
        let note = &one(spans.named("notifications/cancelled"), "the notification");
        assert_fields(
            note,
            &[("mcp.method.name", "notifications/cancelled"), ("otel.name", "notifications/cancelled")],
        );
        assert_eq!(note.field("jsonrpc.request.id"), None, "a notification has no id: {note:?}");

        assert_redacted(&spans, &[SECRET, "rojo", "no/such/method", "_OTHER"]);
    });
}

/// A `POST /mcp` with the headers a conforming client sends for `method` (`name`: the
/// tool, prompt or uri), the bearer token, and `body`.
fn post(addr: SocketAddr, method: &str, name: Option<&str>, body: &str) -> Vec<u8> {
    let name = name.map(|n| format!("Mcp-Name: {n}\r\n")).unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {TOKEN}\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{name}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// An HTTP server on a thread of its own, with the capturing subscriber there, allowing
/// only [`TOKEN`]; `setup` configures its spans.
fn http_server(setup: impl FnOnce(&mut HttpServer) + Send + 'static) -> (SocketAddr, Captured) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local_addr");
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let (spans, _guard) = capture();
        let _ = tx.send(spans);
        let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
        let engine =
            HttpEngine::new(Config::new("mcp-engine-everything", "test"), http, everything::catalog());
        let mut server = HttpServer::from_std(listener, engine).expect("server");
        setup(&mut server);
        server.run(|event| match event {
            HttpEvent::Authorize(a) => {
                let ok = a.headers.get("authorization") == Some(format!("Bearer {TOKEN}").as_bytes());
                Some(if ok { Verdict::Allow } else { Verdict::Unauthenticated })
            }
            HttpEvent::Mcp(event) => {
                everything::respond(event);
                None
            }
            _ => None,
        })
    });
    (addr, rx.recv().expect("the server's capture"))
}

#[test]
fn over_http_spans_name_the_client_and_record_no_secret() {
    within(|| {
        let (addr, spans) = http_server(|_| {});
        let mut client = Client::connect(addr);
        let local = client.stream.local_addr().expect("local_addr");
        let call = traced(1, "tools/call", json!({ "name": "echo", "arguments": { "text": SECRET } }));
        assert_eq!(client.call(&post(addr, "tools/call", Some("echo"), &call)).echo_text(1), SECRET);
        let list = traced(2, "tools/list", json!({ "cursor": CURSOR }));
        let r = client.call(&post(addr, "tools/list", None, &list));
        assert_eq!(r.json()["error"]["code"], -32602, "a cursor this server did not seal: {r:?}");
        let retry = traced(
            3,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": SECRET }, "requestState": STATE,
                    "inputResponses": { "ask": { "action": "accept", "content": { "v": RESPONSE } } } }),
        );
        let r = client.call(&post(addr, "tools/call", Some("echo"), &retry));
        assert_eq!(r.json()["id"], 3, "{r:?}");
        let read = traced(4, "resources/read", json!({ "uri": URI }));
        let r = client.call(&post(addr, "resources/read", Some(URI), &read));
        assert_eq!(r.json()["id"], 4, "{r:?}");

        let calls = spans.named("tools/call");
        assert_eq!(calls.len(), 2, "{calls:?}");
        let port = local.port().to_string();
        assert_fields(
            &calls[0],
            &[
                ("otel.name", "tools/call echo"),
                ("network.transport", "tcp"),
                ("network.protocol.name", "http"),
                ("network.protocol.version", "1.1"),
                ("client.address", "127.0.0.1"),
                ("client.port", port.as_str()),
                ("jsonrpc.request.id", "1"),
                ("parent.span_id", "00f067aa0ba902b7"),
            ],
        );
        assert_eq!(calls[0].field("mcp.session.id"), None, "2026-07-28 has no session");
        assert!(calls.iter().all(|s| s.closed), "{calls:?}");
        let list = &one(spans.named("tools/list"), "tools/list");
        assert_fields(list, &[("rpc.response.status_code", "-32602")]);
        let read = &one(spans.named("resources/read"), "resources/read");
        assert_eq!((read.field("otel.name"), read.field("mcp.resource.uri")), (Some("resources/read"), None));
        assert_redacted(&spans, &[SECRET, TOKEN, CURSOR, STATE, RESPONSE, URI, "rojo"]);
    });
}

#[test]
fn the_host_opts_in_to_the_uri_and_chooses_the_status_code_name() {
    within(|| {
        let (addr, spans) = http_server(|server| {
            server.record_resource_uri(true);
            server.status_code_key(StatusCodeKey::Both);
        });
        let mut client = Client::connect(addr);
        let read = traced(1, "resources/read", json!({ "uri": URI }));
        assert_eq!(client.call(&post(addr, "resources/read", Some(URI), &read)).status, 200);
        let list = traced(2, "tools/list", json!({ "cursor": CURSOR }));
        client.call(&post(addr, "tools/list", None, &list));

        let read = &one(spans.named("resources/read"), "resources/read");
        assert_eq!(read.field("mcp.resource.uri"), Some(URI), "{read:?}");
        assert_eq!(read.field("otel.name"), Some("resources/read"), "the uri is never the name's target");
        let list = &one(spans.named("tools/list"), "tools/list");
        assert_fields(list, &[("rpc.response.status_code", "-32602"), ("rpc.status_code", "-32602")]);
        let all = spans.everything();
        assert_eq!(all.matches(URI).count(), 1, "the uri only in mcp.resource.uri: {all}");
    });
}

#[test]
fn an_answer_given_later_closes_the_span_then() {
    within(|| {
        use mcp_engine::{Content, Event, Ticket, ToolOutput};
        use mio::{Events, Poll, Token};
        let (spans, _guard) = capture();
        let (mut client, ends) = pipes();
        let mut server = StdioServer::new(support::engine(), ends.rx, ends.tx).expect("server");
        let mut poll = Poll::new().expect("poll");
        let mut events = Events::with_capacity(8);
        server.register(poll.registry(), Token(0), Token(1)).expect("register");
        let kept = std::cell::Cell::new(None::<Ticket>);
        let keep = |event: Event<'_>| kept.set(Some(event.ticket()));
        client.send(&format!(
            "{}\n",
            traced(5, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } }))
        ));
        while kept.get().is_none() {
            poll.poll(&mut events, None).expect("poll");
            for event in events.iter() {
                server.handle_ready(poll.registry(), event, keep).expect("served");
            }
        }
        let open = &one(spans.named("tools/call"), "the kept call");
        assert!(!open.closed, "open while the host holds the ticket: {open:?}");
        let ticket = kept.get().expect("the kept ticket");
        server
            .engine_mut()
            .answer_tool(ticket, &ToolOutput::error(&[Content::text("later")]))
            .expect("answered");
        server.drive(poll.registry(), keep).expect("driven");
        let r: Value = serde_json::from_str(&{
            let mut line = String::new();
            std::io::BufRead::read_line(&mut client.rx, &mut line).expect("the answer");
            line
        })
        .expect("JSON");
        assert_eq!(r["result"]["isError"], true, "{r}");
        let done = &one(spans.named("tools/call"), "the kept call");
        assert!(done.closed, "{done:?}");
        assert_fields(done, &[("error.type", "tool_error"), ("otel.status_code", "ERROR")]);
    });
}
