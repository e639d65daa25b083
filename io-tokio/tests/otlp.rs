//! Feature `otel`, end to end: `Otel` exports a request's span and the duration
//! histograms as OTLP over HTTP (protobuf) to a collector this test runs on loopback, and
//! the requests it receives, decoded with the `opentelemetry-proto` types, carry the span
//! with the client's context as its parent and the histogram with the conventions'
//! buckets.

mod http_support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use mcp_engine::{Catalog, Config, Engine, Tool};
use mcp_io_tokio::ToolReply;
use mcp_io_tokio::handler::tool_fn;
use mcp_io_tokio::stdio::serve_with;
use mcp_io_tokio::telemetry::otel::{DURATION_BUCKETS, Otel};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use prost::Message as _;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tracing_subscriber::layer::SubscriberExt as _;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// What the collector received: the path, content type and body of each request.
type Received = Arc<Mutex<Vec<(String, String, Bytes)>>>;

/// Runs an OTLP/HTTP collector on loopback, on a thread and runtime of its own (the
/// exporter's batch thread sends while the test's thread waits in `shutdown`).
fn collector() -> (SocketAddr, Received) {
    let received: Received = Arc::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let sink = Arc::clone(&received);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let sink = Arc::clone(&sink);
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                            let sink = Arc::clone(&sink);
                            async move {
                                let path = req.uri().path().to_owned();
                                let kind = req
                                    .headers()
                                    .get("content-type")
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or_default()
                                    .to_owned();
                                let body = req.into_body().collect().await?.to_bytes();
                                sink.lock().unwrap_or_else(PoisonError::into_inner).push((path, kind, body));
                                // An empty export response: everything accepted.
                                let ok = hyper::Response::builder()
                                    .header("content-type", "application/x-protobuf")
                                    .body(Full::new(Bytes::new()))
                                    .expect("a response");
                                Ok::<_, hyper::Error>(ok)
                            }
                        });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
    });
    (addr, received)
}

fn string(attributes: &[KeyValue], key: &str) -> Option<String> {
    let kv = attributes.iter().find(|kv| kv.key == key)?;
    match kv.value.as_ref()?.value.as_ref()? {
        Value::StringValue(s) => Some(s.clone()),
        Value::IntValue(i) => Some(i.to_string()),
        other => Some(format!("{other:?}")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_request_span_and_its_point_reach_an_otlp_collector() {
    let (addr, received) = collector();
    let otel = Otel::builder().endpoint(format!("http://{addr}")).service_name("otlp-test").build().unwrap();
    let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(otel.layer()));

    let catalog = Catalog::builder().tool(Tool::new("ok")).build().unwrap();
    let engine = Engine::new(Config::new("s", "1"), catalog);
    let handler = Arc::new(tool_fn(|_call| async { Ok(ToolReply::text("ok")) }));
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(server);
    let served = tokio::spawn(serve_with(engine, handler, r, w, otel.telemetry()));
    let (client_r, mut client_w) = tokio::io::split(client);
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"ok","_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"traceparent":"00-{TRACE_ID}-{PARENT_ID}-01"}}}}}}"#
    );
    client_w.write_all(format!("{call}\n").as_bytes()).await.unwrap();
    client_w.shutdown().await.unwrap();
    let mut lines = tokio::io::BufReader::new(client_r).lines();
    let answer = http_support::patient("the answer", lines.next_line()).await.unwrap().expect("an answer");
    assert!(answer.contains(r#""text":"ok""#), "{answer}");
    http_support::patient("serve", served).await.unwrap().unwrap();
    drop(guard);
    // Sends what the batch processor and the periodic reader hold, and waits for it.
    otel.shutdown().unwrap();

    let got = received.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let traces: Vec<_> = got.iter().filter(|(path, _, _)| path == "/v1/traces").collect();
    assert!(
        !traces.is_empty(),
        "no trace export: {:?}",
        got.iter().map(|(p, k, _)| (p, k)).collect::<Vec<_>>()
    );
    assert!(traces.iter().all(|(_, kind, _)| kind == "application/x-protobuf"), "protobuf over HTTP");
    let mut spans = Vec::new();
    for (_, _, body) in &traces {
        let export = ExportTraceServiceRequest::decode(body.clone()).expect("a valid OTLP trace export");
        for rs in export.resource_spans {
            let service = rs.resource.as_ref().and_then(|r| string(&r.attributes, "service.name"));
            assert_eq!(service.as_deref(), Some("otlp-test"));
            spans.extend(rs.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
    let span = spans.iter().find(|s| s.name == "tools/call ok").expect("the request's span");
    assert_eq!(hex(&span.trace_id), TRACE_ID, "the client's trace");
    assert_eq!(hex(&span.parent_span_id), PARENT_ID, "the client's span is the parent");
    // SPAN_KIND_SERVER; the flags say the parent is remote (bits 8 and 9).
    assert_eq!(span.kind, 2);
    assert_eq!(span.flags & 0x300, 0x300, "flags {:#x}", span.flags);
    assert_eq!(string(&span.attributes, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(string(&span.attributes, "gen_ai.tool.name").as_deref(), Some("ok"));
    assert_eq!(string(&span.attributes, "jsonrpc.request.id").as_deref(), Some("3"));
    assert_eq!(string(&span.attributes, "network.transport").as_deref(), Some("pipe"));
    for absent in ["code.file.path", "thread.id", "target", "busy_ns"] {
        assert_eq!(
            string(&span.attributes, absent),
            None,
            "{absent}: the layer adds no attribute of its own"
        );
    }

    let metrics: Vec<_> = got.iter().filter(|(path, _, _)| path == "/v1/metrics").collect();
    assert!(!metrics.is_empty(), "no metric export");
    let mut found = false;
    for (_, _, body) in metrics {
        let export = ExportMetricsServiceRequest::decode(body.clone()).expect("a valid OTLP metric export");
        for m in export.resource_metrics.iter().flat_map(|r| &r.scope_metrics).flat_map(|s| &s.metrics) {
            if m.name != "mcp.server.operation.duration" {
                continue;
            }
            assert_eq!(m.unit, "s");
            let Some(Data::Histogram(h)) = &m.data else { panic!("not a histogram: {m:?}") };
            let p = h
                .data_points
                .iter()
                .find(|p| string(&p.attributes, "gen_ai.tool.name").as_deref() == Some("ok"));
            let p = p.expect("the call's point");
            assert_eq!(p.count, 1);
            assert_eq!(p.explicit_bounds, DURATION_BUCKETS.to_vec());
            assert_eq!(string(&p.attributes, "jsonrpc.request.id"), None, "no request id on a metric");
            found = true;
        }
    }
    assert!(found, "no mcp.server.operation.duration in the metric export");
}

/// The demo with `--otlp`: started on loopback with the collector's URL, it exports the
/// span of a call and, when interrupted (Ctrl-C), the metrics: the call's duration and
/// the refusal of a request for another `Host`, by reason.
#[tokio::test]
async fn the_demo_exports_to_the_collector_its_otlp_flag_names() {
    use std::io::BufRead as _;
    use std::process::{Command, Stdio};

    let (collector, received) = collector();
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--message-format=json", "--features", "otel", "--example", "everything"])
        .args(["--manifest-path", manifest])
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo build");
    assert!(out.status.success(), "building the demo failed");
    let demo = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "everything")
        .find_map(|m| m["executable"].as_str().map(str::to_owned))
        .expect("the demo's executable");
    let mut child = Command::new(demo)
        .args(["--http", "127.0.0.1:0", "--otlp", &format!("http://{collector}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the demo");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(at) = line.strip_prefix("listening on http://") {
                let _ = tx.send(at.trim_end_matches("/mcp").to_owned());
            }
        }
    });
    let addr: SocketAddr =
        rx.recv_timeout(http_support::PATIENCE).expect("the demo listens").parse().unwrap();
    let mut conn = http_support::Conn::open(addr).await;
    let r = conn.call(1, "echo", &serde_json::json!({ "text": "to the collector" })).await;
    assert_eq!(r.status, 200);
    let mut conn = http_support::Conn::open(addr).await;
    let req = http_support::post(addr, "tools/list", None, &http_support::body(2, "tools/list", ""))
        .replace(&format!("Host: 127.0.0.1:{}", addr.port()), "Host: evil.example");
    conn.send(&req).await;
    assert_eq!(conn.response().await.status, 403);
    // Ctrl-C: the demo stops serving and sends what is left.
    let interrupted = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(interrupted.success());
    let status = http_support::patient("the demo exits", tokio::task::spawn_blocking(move || child.wait()))
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");

    let got = received.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let mut spans = Vec::new();
    let mut metrics = Vec::new();
    for (path, _, body) in &got {
        if path == "/v1/traces" {
            let export = ExportTraceServiceRequest::decode(body.clone()).unwrap();
            for rs in export.resource_spans {
                let service = rs.resource.as_ref().and_then(|r| string(&r.attributes, "service.name"));
                assert_eq!(service.as_deref(), Some("mcp-everything"));
                spans.extend(rs.scope_spans.into_iter().flat_map(|s| s.spans));
            }
        } else if path == "/v1/metrics" {
            let export = ExportMetricsServiceRequest::decode(body.clone()).unwrap();
            metrics.extend(
                export.resource_metrics.into_iter().flat_map(|r| r.scope_metrics).flat_map(|s| s.metrics),
            );
        }
    }
    let span = spans.iter().find(|s| s.name == "tools/call echo").expect("the call's span");
    assert_eq!(string(&span.attributes, "network.protocol.name").as_deref(), Some("http"));
    assert!(metrics.iter().any(|m| m.name == "mcp.server.operation.duration"), "the durations");
    let refusals = metrics
        .iter()
        .rev()
        .find(|m| m.name == mcp_io_tokio::telemetry::otel::REFUSALS)
        .expect("the refusal counter");
    let Some(Data::Sum(sum)) = &refusals.data else { panic!("a sum: {refusals:?}") };
    let host = sum
        .data_points
        .iter()
        .find(|p| string(&p.attributes, "error.type").as_deref() == Some("host_not_allowed"))
        .expect("the Host refusal's point");
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
    assert_eq!(host.value, Some(Number::AsInt(1)));
}
