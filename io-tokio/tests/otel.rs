//! Feature `otel`, checked with the SDK's in-memory exporters: each request's span (host
//! served or answered by the engine itself) is an OpenTelemetry `SERVER` span named by
//! the conventions, whose parent is the client's `traceparent` (a remote parent, its
//! `tracestate` kept, its `baggage` in the handler's context), with the conventions'
//! attributes and nothing the client sent beyond them; the two duration histograms have
//! their points, attributes and bucket boundaries; over stdio and HTTP.

mod http_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_engine::{Catalog, Config, Engine, Resource, Tool};
use mcp_io_tokio::http::{AllowAll, AuthorizeInfo};
use mcp_io_tokio::stdio::serve_with;
use mcp_io_tokio::telemetry::otel::DURATION_BUCKETS;
use mcp_io_tokio::telemetry::{StatusCodeKey, Telemetry};
use mcp_io_tokio::{Handler, HostFailure, HttpServer, ToolCall, ToolReply};
use opentelemetry::baggage::BaggageExt as _;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tokio::net::TcpListener;
use tracing_subscriber::layer::SubscriberExt as _;

const SECRET: &str = "hunter2-do-not-export";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// The spans and metric points of one test, and the subscriber that makes them.
struct Otel {
    spans: InMemorySpanExporter,
    tracer: SdkTracerProvider,
    metrics: InMemoryMetricExporter,
    meter: SdkMeterProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Otel {
    /// Installs `tracing-opentelemetry` over in-memory exporters for this thread (the
    /// tests run on a current-thread runtime: the run loop and the handlers are on it).
    fn install() -> Self {
        let spans = InMemorySpanExporter::default();
        let tracer = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
        let metrics = InMemoryMetricExporter::default();
        let meter =
            SdkMeterProvider::builder().with_reader(PeriodicReader::builder(metrics.clone()).build()).build();
        let layer = tracing_opentelemetry::layer().with_tracer(tracer.tracer("test"));
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        Self { spans, tracer, metrics, meter, _guard: guard }
    }

    fn telemetry(&self) -> Telemetry {
        Telemetry::new().meter(&self.meter.meter("test"))
    }

    fn spans(&self) -> Vec<SpanData> {
        self.tracer.force_flush().unwrap();
        self.spans.get_finished_spans().unwrap()
    }

    fn named(&self, name: &str) -> Vec<SpanData> {
        self.spans().into_iter().filter(|s| s.name == name).collect()
    }

    /// Every point of histogram `name`: its attributes, count, bounds and bucket counts.
    fn points(&self, name: &str) -> Vec<Point> {
        self.meter.force_flush().unwrap();
        let exported: Vec<ResourceMetrics> = self.metrics.get_finished_metrics().unwrap();
        let mut points = Vec::new();
        // Cumulative: the last export has them all.
        let Some(last) = exported.last() else { return points };
        for metric in last.scope_metrics().flat_map(|s| s.metrics()).filter(|m| m.name() == name) {
            assert_eq!(metric.unit(), "s", "{name}");
            let AggregatedMetrics::F64(MetricData::Histogram(h)) = metric.data() else {
                panic!("{name} is not an f64 histogram");
            };
            for p in h.data_points() {
                points.push(Point {
                    attributes: p.attributes().map(|kv| (kv.key.to_string(), kv.value.to_string())).collect(),
                    count: p.count(),
                    bounds: p.bounds().collect(),
                    buckets: p.bucket_counts().collect(),
                });
            }
        }
        points
    }
}

#[derive(Debug)]
struct Point {
    attributes: BTreeMap<String, String>,
    count: u64,
    bounds: Vec<f64>,
    buckets: Vec<u64>,
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

/// What the handler saw of its context while it ran.
#[derive(Debug, Default, Clone)]
struct Seen {
    /// The trace id of the current OpenTelemetry span.
    trace_id: String,
    /// The baggage's `userId` in the current context.
    baggage: Option<String>,
    /// The `traceparent` on the owned request.
    request_parent: Option<String>,
}

/// `ok` succeeds and records what it saw of its context, `broken` is a tool error,
/// `crash` a server error.
#[derive(Default)]
struct Tools {
    seen: Mutex<Vec<Seen>>,
}

impl Handler for Tools {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        let cx = opentelemetry::Context::current();
        let seen = Seen {
            trace_id: cx.span().span_context().trace_id().to_string(),
            baggage: cx.baggage().get("userId").map(|v| v.to_string()),
            request_parent: call.trace.context().parent().map(|p| p.to_string()),
        };
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).push(seen);
        match call.name.as_str() {
            "broken" => Ok(ToolReply::error("the tool failed")),
            "crash" => Err(HostFailure::internal("down")),
            _ => Ok(ToolReply::text("ok")),
        }
    }
}

/// A resource whose uri names its owner: never recorded unless the host opts in.
const URI: &str = "test://private/alice-8d2f";

fn catalog() -> Catalog {
    let mut b = Catalog::builder().resource(Resource::new(URI, "private"));
    for name in ["ok", "broken", "crash"] {
        b = b.tool(Tool::new(name));
    }
    b.build().unwrap()
}

/// A `2026-07-28` request whose `_meta` carries `traceparent` (flags `flags`), a
/// `tracestate` and a baggage naming the secret.
fn traced(id: u64, method: &str, params: &str, flags: &str) -> String {
    let sep = if params.is_empty() { "" } else { "," };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}{sep}"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"traceparent":"00-{TRACE_ID}-{PARENT_ID}-{flags}","tracestate":"rojo=00f067aa0ba902b7","baggage":"userId={SECRET}"}}}}}}"#
    )
}

fn call(id: u64, tool: &str) -> String {
    traced(id, "tools/call", &format!(r#""name":"{tool}","arguments":{{"password":"{SECRET}"}}"#), "01")
}

/// Serves `lines` over a duplex stdio stream with `telemetry`; returns the responses.
async fn over_stdio(lines: &[String], telemetry: Telemetry, tools: Arc<Tools>) -> Vec<serde_json::Value> {
    let engine = Engine::new(Config::new("s", "1"), catalog());
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(server);
    let served = tokio::spawn(serve_with(engine, tools, r, w, telemetry));
    let (client_r, mut client_w) = tokio::io::split(client);
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    for line in lines {
        client_w.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    client_w.shutdown().await.unwrap();
    let mut out = Vec::new();
    let mut reader = tokio::io::BufReader::new(client_r).lines();
    while let Some(line) = http_support::patient("output", reader.next_line()).await.unwrap() {
        out.push(serde_json::from_str(&line).unwrap());
    }
    http_support::patient("serve", served).await.unwrap().unwrap();
    out
}

#[tokio::test]
async fn a_host_served_call_is_a_server_span_whose_parent_is_the_clients() {
    let otel = Otel::install();
    let tools = Arc::new(Tools::default());
    let out = over_stdio(&[call(7, "ok")], otel.telemetry(), Arc::clone(&tools)).await;
    assert_eq!(out[0]["result"]["content"][0]["text"], "ok", "{out:?}");

    let spans = otel.named("tools/call ok");
    assert_eq!(spans.len(), 1, "{:?}", otel.spans());
    let s = &spans[0];
    assert_eq!(s.span_kind, SpanKind::Server);
    assert_eq!(s.span_context.trace_id().to_string(), TRACE_ID, "the client's trace");
    assert_eq!(s.parent_span_id.to_string(), PARENT_ID, "the client's span is the parent");
    assert!(s.parent_span_is_remote, "a remote parent");
    assert!(s.span_context.is_sampled());
    assert_eq!(s.span_context.trace_state().header(), "rojo=00f067aa0ba902b7", "the tracestate is kept");
    assert_eq!(s.status, Status::Unset);
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "ok"),
        ("gen_ai.operation.name", "execute_tool"),
        ("mcp.protocol.version", "2026-07-28"),
        ("jsonrpc.request.id", "7"),
        ("network.transport", "pipe"),
    ] {
        assert_eq!(attr(s, key).as_deref(), Some(value), "{key}: {s:?}");
    }
    // Nor the plain-`tracing` fields of the client's ids: the parent says it.
    for absent in [
        "error.type",
        "rpc.response.status_code",
        "mcp.session.id",
        "client.address",
        "parent.trace_id",
        "parent.span_id",
        "parent.sampled",
        "url.scheme",
    ] {
        assert_eq!(attr(s, absent), None, "{absent}: {s:?}");
    }
    let everything = format!("{:?}", otel.spans());
    assert!(!everything.contains(SECRET), "an argument value or the baggage was exported: {everything}");

    // The span is current while the handler runs, with the client's baggage beside it,
    // and the owned request carries the validated context.
    let seen = tools.seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].trace_id, TRACE_ID);
    assert_eq!(seen[0].baggage.as_deref(), Some(SECRET));
    assert_eq!(seen[0].request_parent.as_deref(), Some(format!("00-{TRACE_ID}-{PARENT_ID}-01").as_str()));

    // Its point: the conventions' attributes, and their buckets.
    let points = otel.points("mcp.server.operation.duration");
    assert_eq!(points.len(), 1, "{points:?}");
    let p = &points[0];
    assert_eq!(p.count, 1);
    assert_eq!(p.bounds, DURATION_BUCKETS.to_vec());
    assert_eq!(p.buckets.len(), DURATION_BUCKETS.len() + 1);
    assert_eq!(p.buckets.iter().sum::<u64>(), 1);
    let expect: BTreeMap<String, String> = [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "ok"),
        ("gen_ai.operation.name", "execute_tool"),
        ("mcp.protocol.version", "2026-07-28"),
        ("network.transport", "pipe"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(p.attributes, expect, "no request id, session, address or argument on a metric");
}

#[tokio::test]
async fn failures_and_engine_answers_have_their_spans_and_points() {
    let otel = Otel::install();
    let lines = [
        call(1, "broken"),
        call(2, "crash"),
        traced(3, "tools/list", "", "01"),
        traced(4, "tools/call", r#""name":"missing""#, "01"),
        traced(5, "tools/list", "", "01"),
    ];
    let out = over_stdio(&lines, otel.telemetry(), Arc::new(Tools::default())).await;
    assert_eq!(out.len(), 5, "{out:?}");

    let broken = &otel.named("tools/call broken")[0];
    assert_eq!(attr(broken, "error.type").as_deref(), Some("tool_error"));
    assert!(matches!(broken.status, Status::Error { .. }), "{broken:?}");
    let crash = &otel.named("tools/call crash")[0];
    assert_eq!(attr(crash, "error.type").as_deref(), Some("-32603"));
    assert_eq!(attr(crash, "rpc.response.status_code").as_deref(), Some("-32603"));
    assert!(matches!(crash.status, Status::Error { .. }), "{crash:?}");

    // Answered by the engine: the same span, parented on the client's.
    let lists = otel.named("tools/list");
    assert_eq!(lists.len(), 2, "{:?}", otel.spans());
    for s in &lists {
        assert_eq!(s.span_kind, SpanKind::Server);
        assert_eq!(s.parent_span_id.to_string(), PARENT_ID);
        assert!(s.parent_span_is_remote);
        assert_eq!(attr(s, "mcp.protocol.version").as_deref(), Some("2026-07-28"));
    }
    let missing = &otel.named("tools/call")[0];
    assert_eq!(attr(missing, "rpc.response.status_code").as_deref(), Some("-32602"));
    assert_eq!(attr(missing, "error.type"), None, "the caller's error is not the server's");
    assert_eq!(missing.status, Status::Unset);

    let points = otel.points("mcp.server.operation.duration");
    let find = |pairs: &[(&str, &str)]| {
        points
            .iter()
            .find(|p| pairs.iter().all(|(k, v)| p.attributes.get(*k).map(String::as_str) == Some(*v)))
    };
    let list = find(&[("mcp.method.name", "tools/list")]).expect("a tools/list point");
    assert_eq!(list.count, 2, "one point per request, one series per attribute set: {list:?}");
    assert_eq!(list.bounds, DURATION_BUCKETS.to_vec());
    let crash = find(&[("gen_ai.tool.name", "crash")]).expect("the crash's point");
    assert_eq!(crash.attributes.get("error.type").map(String::as_str), Some("-32603"));
    assert_eq!(crash.attributes.get("rpc.response.status_code").map(String::as_str), Some("-32603"));
    let broken = find(&[("gen_ai.tool.name", "broken")]).expect("the tool error's point");
    assert_eq!(broken.attributes.get("error.type").map(String::as_str), Some("tool_error"));
    let missing = find(&[("mcp.method.name", "tools/call"), ("rpc.response.status_code", "-32602")])
        .expect("the unknown tool's point");
    assert_eq!(missing.attributes.get("error.type"), None);
    assert_eq!(missing.attributes.get("gen_ai.tool.name"), None, "an undeclared name is not recorded");
    assert!(!format!("{points:?}").contains("missing"));
}

#[tokio::test]
async fn an_unsampled_parent_is_followed() {
    let otel = Otel::install();
    let line = traced(1, "tools/call", r#""name":"ok""#, "00");
    over_stdio(&[line], otel.telemetry(), Arc::new(Tools::default())).await;
    // The default sampler follows the parent: not sampled, not exported.
    assert!(otel.named("tools/call ok").is_empty(), "{:?}", otel.spans());
    // The point is recorded all the same.
    assert_eq!(otel.points("mcp.server.operation.duration").len(), 1);
}

#[tokio::test]
async fn a_stdio_session_has_its_duration() {
    let otel = Otel::install();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let lines = [init.to_owned(), r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_owned()];
    over_stdio(&lines, otel.telemetry(), Arc::new(Tools::default())).await;
    assert_eq!(otel.named("initialize").len(), 1);
    assert_eq!(otel.named("ping").len(), 1);
    let sessions = otel.points("mcp.server.session.duration");
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let s = &sessions[0];
    assert_eq!(s.count, 1);
    assert_eq!(s.bounds, DURATION_BUCKETS.to_vec());
    let expect: BTreeMap<String, String> =
        [("mcp.protocol.version", "2025-11-25"), ("network.transport", "pipe")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
    assert_eq!(s.attributes, expect);
}

async fn http_server(telemetry: Telemetry) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let engine = HttpEngine::new(Config::new("s", "1"), http, catalog());
    let server = HttpServer::new(engine, Arc::new(Tools::default()), AllowAll).telemetry(telemetry);
    tokio::spawn(server.serve(listener));
    addr
}

/// Waits (bounded) until `done` holds: spans and points are made by the server's task.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..300 {
        if done() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("never: {what}");
}

#[tokio::test]
async fn over_http_a_session_and_its_requests_are_exported() {
    let otel = Otel::install();
    let addr = http_server(otel.telemetry()).await;
    let mut conn = http_support::Conn::open(addr).await;
    let local = conn.writer.local_addr().unwrap();
    let head = |method: &str, session: Option<&str>, len: usize| {
        let mut h = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {len}\r\n"
        );
        if let Some(id) = session {
            h.push_str(&format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
        }
        h.push_str("\r\n");
        h
    };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    conn.send(&format!("{}{init}", head("POST", None, init.len()))).await;
    let r = conn.response().await;
    let id = r.header("mcp-session-id").expect("a session").to_owned();
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"ok","_meta":{{"traceparent":"00-{TRACE_ID}-{PARENT_ID}-01"}}}}}}"#
    );
    conn.send(&format!("{}{call}", head("POST", Some(&id), call.len()))).await;
    assert_eq!(conn.response().await.status, 200);
    conn.send(&head("DELETE", Some(&id), 0)).await;
    assert_eq!(conn.response().await.status, 200);

    eventually("the call's span", || !otel.named("tools/call ok").is_empty()).await;
    let s = &otel.named("tools/call ok")[0];
    assert_eq!(s.parent_span_id.to_string(), PARENT_ID);
    let port = local.port().to_string();
    for (key, value) in [
        ("mcp.session.id", id.as_str()),
        ("mcp.protocol.version", "2025-11-25"),
        ("network.transport", "tcp"),
        ("network.protocol.name", "http"),
        ("network.protocol.version", "1.1"),
        ("client.address", "127.0.0.1"),
        ("client.port", port.as_str()),
    ] {
        assert_eq!(attr(s, key).as_deref(), Some(value), "{key}: {s:?}");
    }
    let init = &otel.named("initialize")[0];
    assert_eq!(attr(init, "mcp.session.id").as_deref(), Some(id.as_str()));
    assert_eq!(init.parent_span_id.to_string(), "0000000000000000", "no context: a root span");

    eventually("the session's point", || !otel.points("mcp.server.session.duration").is_empty()).await;
    let sessions = otel.points("mcp.server.session.duration");
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let expect: BTreeMap<String, String> = [
        ("mcp.protocol.version", "2025-11-25"),
        ("network.transport", "tcp"),
        ("network.protocol.name", "http"),
        ("network.protocol.version", "1.1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(sessions[0].attributes, expect, "no session id on the metric");
    let ops = otel.points("mcp.server.operation.duration");
    let methods: Vec<&str> =
        ops.iter().filter_map(|p| p.attributes.get("mcp.method.name").map(String::as_str)).collect();
    assert!(methods.contains(&"initialize") && methods.contains(&"tools/call"), "{ops:?}");
    assert!(!format!("{ops:?}").contains(&id), "no session id on a metric");
}

#[tokio::test]
async fn the_status_code_attribute_is_named_as_the_host_chooses() {
    for (key, present, absent) in [
        (StatusCodeKey::Response, &["rpc.response.status_code"][..], &["rpc.status_code"][..]),
        (StatusCodeKey::Rpc, &["rpc.status_code"][..], &["rpc.response.status_code"][..]),
        (StatusCodeKey::Both, &["rpc.response.status_code", "rpc.status_code"][..], &[][..]),
    ] {
        let otel = Otel::install();
        let telemetry = otel.telemetry().status_code_key(key);
        over_stdio(
            &[call(1, "crash"), traced(2, "tools/call", r#""name":"missing""#, "01")],
            telemetry,
            Arc::default(),
        )
        .await;
        let crash = &otel.named("tools/call crash")[0];
        let missing = &otel.named("tools/call")[0];
        let points = otel.points("mcp.server.operation.duration");
        assert_eq!(points.len(), 2, "{points:?}");
        for name in present {
            assert_eq!(attr(crash, name).as_deref(), Some("-32603"), "{key:?} {name}: {crash:?}");
            assert_eq!(attr(missing, name).as_deref(), Some("-32602"), "{key:?} {name}: {missing:?}");
            assert!(points.iter().all(|p| p.attributes.contains_key(*name)), "{key:?} {name}: {points:?}");
        }
        for name in absent {
            assert_eq!(attr(crash, name), None, "{key:?} {name}: {crash:?}");
            assert!(points.iter().all(|p| !p.attributes.contains_key(*name)), "{key:?} {name}: {points:?}");
        }
    }
}

#[tokio::test]
async fn an_unknown_method_has_no_method_name_and_a_notification_has_its_span() {
    let otel = Otel::install();
    let lines = [
        traced(1, "no/such/method", "", "01"),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}"#.to_owned(),
    ];
    let out = over_stdio(&lines, otel.telemetry(), Arc::default()).await;
    assert_eq!(out.len(), 1, "the notification is not answered: {out:?}");
    let other = &otel.named("mcp")[0];
    assert_eq!(attr(other, "mcp.method.name"), None, "{other:?}");
    assert_eq!(attr(other, "rpc.response.status_code").as_deref(), Some("-32601"));
    let note = &otel.named("notifications/cancelled")[0];
    assert_eq!(note.span_kind, SpanKind::Server);
    assert_eq!(attr(note, "mcp.method.name").as_deref(), Some("notifications/cancelled"));
    assert_eq!(attr(note, "jsonrpc.request.id"), None, "a notification has no id: {note:?}");
    let points = otel.points("mcp.server.operation.duration");
    let unknown =
        points.iter().find(|p| p.attributes.contains_key("rpc.response.status_code")).expect("a point");
    assert_eq!(unknown.attributes.get("mcp.method.name"), None, "{points:?}");
    let all = format!("{:?}{points:?}", otel.spans());
    assert!(!all.contains("no/such/method") && !all.contains("_OTHER"), "{all}");
}

const TOKEN: &str = "tok-3f9a-secret-bearer";
const CURSOR: &str = "cursor-7c1e-secret";
const STATE: &str = "state-51d0-secret";
const RESPONSE: &str = "answer-9e2b-secret";

/// An HTTP server that lets in only the bearer of [`TOKEN`].
async fn guarded_server(telemetry: Telemetry) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let engine = HttpEngine::new(Config::new("s", "1"), http, catalog());
    let auth = |req: &AuthorizeInfo| match req.bearer_token() {
        Some(TOKEN) => mcp_engine::http::Verdict::Allow,
        _ => mcp_engine::http::Verdict::Unauthenticated,
    };
    let server = HttpServer::new(engine, Arc::new(Tools::default()), auth).telemetry(telemetry);
    tokio::spawn(server.serve(listener));
    addr
}

/// Sends, with the bearer token, a call with a secret argument, a list with a cursor, a
/// retry with `requestState` and `inputResponses`, and a read of [`URI`]; returns once
/// their four spans are exported.
async fn secrets_over_http(otel: &Otel, addr: SocketAddr) {
    let mut conn = http_support::Conn::open(addr).await;
    let bearer = |req: String| req.replacen("\r\n", &format!("\r\nAuthorization: Bearer {TOKEN}\r\n"), 1);
    let requests = [
        ("tools/call", Some("ok"), call(1, "ok")),
        ("tools/list", None, traced(2, "tools/list", &format!(r#""cursor":"{CURSOR}""#), "01")),
        (
            "tools/call",
            Some("ok"),
            traced(
                3,
                "tools/call",
                &format!(
                    r#""name":"ok","arguments":{{"k":"{SECRET}"}},"requestState":"{STATE}","inputResponses":{{"ask":{{"action":"accept","content":{{"v":"{RESPONSE}"}}}}}}"#
                ),
                "01",
            ),
        ),
        ("resources/read", Some(URI), traced(4, "resources/read", &format!(r#""uri":"{URI}""#), "01")),
    ];
    for (method, name, body) in requests {
        conn.send(&bearer(http_support::post(addr, method, name, &body))).await;
        let r = conn.response().await;
        assert_ne!(r.status, 401, "the token was accepted: {r:?}");
    }
    eventually("the four spans", || otel.spans().len() >= 4).await;
}

#[tokio::test]
async fn no_token_argument_cursor_state_input_or_uri_is_exported() {
    let otel = Otel::install();
    let addr = guarded_server(otel.telemetry()).await;
    secrets_over_http(&otel, addr).await;
    let spans = otel.spans();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert!(names.contains(&"resources/read") && names.contains(&"tools/list"), "{names:?}");
    let all = format!("{spans:?}{:?}", otel.points("mcp.server.operation.duration"));
    for secret in [TOKEN, SECRET, CURSOR, STATE, RESPONSE, URI, "alice"] {
        assert!(!all.contains(secret), "{secret} was exported: {all}");
    }
}

#[tokio::test]
async fn the_uri_is_exported_only_when_the_host_opts_in_and_only_on_the_span() {
    let otel = Otel::install();
    let addr = guarded_server(otel.telemetry().resource_uri(true)).await;
    secrets_over_http(&otel, addr).await;
    let read = &otel.named("resources/read")[0];
    assert_eq!(attr(read, "mcp.resource.uri").as_deref(), Some(URI), "{read:?}");
    let spans = format!("{:?}", otel.spans());
    assert_eq!(spans.matches(URI).count(), 1, "the uri in mcp.resource.uri only: {spans}");
    let points = format!("{:?}", otel.points("mcp.server.operation.duration"));
    assert!(!points.contains(URI), "never on a metric: {points}");
    for secret in [TOKEN, SECRET, CURSOR, STATE, RESPONSE] {
        assert!(!spans.contains(secret) && !points.contains(secret), "{secret} was exported");
    }
}
