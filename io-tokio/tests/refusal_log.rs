//! Every request the HTTP engine refuses is logged at `DEBUG` with its reason, by
//! `serve_http` and by the tower service, and counted by reason in
//! `mcp.server.http.refusals` when telemetry is on (feature `otel`). The responses stay
//! what they were (an empty `403` for a `Host` that is not allowed).

mod http_support;
mod log_capture;

use http_support::{Conn, Probe, body, catalog, mcp_headers};
use log_capture::Captured;
use mcp_engine::Config;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_io_tokio::HttpServer;
use mcp_io_tokio::telemetry::Telemetry;
use tokio::net::TcpListener;

fn engine() -> HttpEngine {
    HttpEngine::new(
        Config::new("io-tokio-refusals", "0.0.1"),
        HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone),
        catalog(),
    )
}

/// A `POST /mcp` of `server/discover` naming `host`.
fn discover_for(host: &str) -> String {
    let body = body(1, "server/discover", "");
    let mut req = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\n");
    for (n, v) in mcp_headers("server/discover", None) {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    req
}

/// Logs at `DEBUG` and above into the returned buffer, for this thread (the tests run on a
/// current-thread runtime: the server's loop is on it too).
fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    let logs = Captured::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .finish();
    (logs, tracing::subscriber::set_default(subscriber))
}

/// Serves `engine()` with `telemetry` on a fresh loopback port.
async fn serve(telemetry: Telemetry) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = HttpServer::without_authorizer(engine(), Probe::new()).telemetry(telemetry);
    tokio::spawn(server.serve(listener));
    addr
}

/// The lines of `text` that say a request was refused.
fn refusal_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.contains("request refused")).collect()
}

#[tokio::test]
async fn a_host_that_is_not_allowed_is_logged_at_debug_with_its_reason() {
    let (logs, _guard) = capture();
    let addr = serve(Telemetry::new()).await;
    let mut conn = Conn::open(addr).await;
    conn.send(&discover_for("203.0.113.7:3000")).await;
    let r = conn.response().await;
    assert_eq!(r.status, 403);
    assert!(r.body.is_empty(), "the body stays empty");
    assert!(conn.closed_by_server().await);
    let text = logs.text();
    let lines = refusal_lines(&text);
    assert_eq!(lines.len(), 1, "{text}");
    let line = lines[0];
    assert!(line.contains("DEBUG") && line.contains("mcp_io_tokio"), "{line}");
    assert!(line.contains("Host not allowed (neither loopback nor in allowed_hosts)"), "{line}");
    assert!(line.contains("http.response.status_code=403"), "{line}");
    assert!(line.contains("host_not_allowed"), "{line}");
    assert!(line.contains("client.address=127.0.0.1"), "{line}");
    // A request that is served says nothing of the kind.
    let mut conn = Conn::open(addr).await;
    conn.send(&discover_for(&format!("127.0.0.1:{}", addr.port()))).await;
    assert_eq!(conn.response().await.status, 200);
    assert_eq!(refusal_lines(&logs.text()).len(), 1);
}

#[tokio::test]
async fn a_body_over_the_cap_and_a_wrong_path_are_logged_with_their_reasons() {
    let (logs, _guard) = capture();
    let addr = serve(Telemetry::new()).await;
    let host = format!("127.0.0.1:{}", addr.port());
    let mut conn = Conn::open(addr).await;
    conn.send(&format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2000000\r\n\r\n")).await;
    assert_eq!(conn.response().await.status, 413);
    let mut conn = Conn::open(addr).await;
    conn.send(&format!("GET /elsewhere HTTP/1.1\r\nHost: {host}\r\n\r\n")).await;
    assert_eq!(conn.response().await.status, 404);
    let text = logs.text();
    let lines = refusal_lines(&text);
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("body over the cap (max_body)") && lines[0].contains("=413"), "{text}");
    assert!(lines[1].contains("path is not the endpoint") && lines[1].contains("=404"), "{text}");
}

#[cfg(feature = "tower")]
#[tokio::test]
async fn the_tower_service_logs_a_refusal_too() {
    use axum::body::Body;
    use tower::ServiceExt as _;

    let (logs, _guard) = capture();
    let svc = mcp_io_tokio::http::McpService::without_authorizer(engine(), Probe::new());
    let mut req = http::Request::post("/mcp").header("host", "mcp.example.com");
    for (n, v) in mcp_headers("server/discover", None) {
        req = req.header(n, v);
    }
    let req = req.body(Body::from(body(1, "server/discover", ""))).expect("a request");
    let response = http_support::patient("oneshot", svc.oneshot(req)).await.expect("infallible");
    assert_eq!(response.status(), http::StatusCode::FORBIDDEN);
    let text = logs.text();
    let lines = refusal_lines(&text);
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].contains("DEBUG") && lines[0].contains("Host not allowed"), "{text}");
}

#[cfg(feature = "otel")]
#[tokio::test]
async fn refusals_are_counted_by_reason() {
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

    let metrics = InMemoryMetricExporter::default();
    let provider =
        SdkMeterProvider::builder().with_reader(PeriodicReader::builder(metrics.clone()).build()).build();
    let addr = serve(Telemetry::new().meter(&provider.meter("test"))).await;
    for host in ["203.0.113.7", "mcp.example.com"] {
        let mut conn = Conn::open(addr).await;
        conn.send(&discover_for(host)).await;
        assert_eq!(conn.response().await.status, 403);
    }
    let mut conn = Conn::open(addr).await;
    conn.send(&format!("GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n", addr.port())).await;
    assert_eq!(conn.response().await.status, 404);
    // The server's loop logs (and counts) before it writes a response: all three are in.
    provider.force_flush().expect("flush");
    let exported = metrics.get_finished_metrics().expect("metrics");
    let last = exported.last().expect("an export");
    let metric = last
        .scope_metrics()
        .flat_map(|s| s.metrics())
        .find(|m| m.name() == mcp_io_tokio::telemetry::otel::REFUSALS)
        .expect("the refusal counter");
    let AggregatedMetrics::U64(MetricData::Sum(sum)) = metric.data() else { panic!("a u64 sum") };
    let mut by_reason: Vec<(String, u64)> = sum
        .data_points()
        .map(|p| {
            let reason =
                p.attributes().find(|kv| kv.key.as_str() == "error.type").map(|kv| kv.value.to_string());
            (reason.unwrap_or_default(), p.value())
        })
        .collect();
    by_reason.sort();
    assert_eq!(by_reason, vec![("host_not_allowed".to_owned(), 2), ("path_not_found".to_owned(), 1)]);
}
