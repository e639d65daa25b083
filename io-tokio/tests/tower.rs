//! The tower service (feature `tower`): through axum with `oneshot`, over a real
//! `axum::serve` listener, and cancellation by dropping the call.

#![cfg(feature = "tower")]

mod http_support;
mod log_capture;

use log_capture::Captured;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use http_support::{Conn, Probe, body, call_body, catalog, first_text, mcp_headers, patient, post_to};
use mcp_engine::Config;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, Verdict};
use mcp_io_tokio::HttpServer;
use mcp_io_tokio::http::{AllowAll, AuthorizeInfo, McpService};
use serde_json::{Value, json};
use tower::{Service, ServiceExt};

fn engine(endpoint: &str) -> HttpEngine {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.endpoint(endpoint);
    HttpEngine::new(Config::new("io-tokio-tower-test", "0.0.1"), http, catalog())
}

/// The app of the example: the endpoint nested at `/mcp` (so the service sees `/`), next
/// to `/health`.
fn app(probe: Arc<Probe>) -> Router {
    let mcp = McpService::new(engine("/"), probe, AllowAll);
    Router::new().route("/health", get(|| async { "ok" })).nest_service("/mcp", mcp)
}

fn request(uri: &str, method: &str, name: Option<&str>, body: String) -> Request<Body> {
    let mut req = Request::post(uri).header("host", "127.0.0.1:3000");
    for (n, v) in mcp_headers(method, name) {
        req = req.header(n, v);
    }
    req.body(Body::from(body)).expect("a request")
}

async fn json_of(response: http::Response<Body>) -> (StatusCode, Value) {
    let status = response.status();
    let bytes = patient("the body", response.into_body().collect()).await.expect("a body").to_bytes();
    let value = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).expect("JSON") };
    (status, value)
}

#[tokio::test]
async fn oneshot_through_an_axum_router() {
    let probe = Probe::new();
    let app = app(Arc::clone(&probe));

    let req = request("/mcp", "tools/call", Some("echo"), call_body(1, "echo", &json!({ "text": "hi" })));
    let response = patient("oneshot", app.clone().oneshot(req)).await.expect("infallible");
    assert_eq!(response.headers().get("content-type").map(|v| v.as_bytes()), Some(&b"application/json"[..]));
    assert!(response.headers().get("connection").is_none(), "framing headers are the host's");
    let (status, v) = json_of(response).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["id"], 1);
    assert_eq!(first_text(&v), "hi");

    // The engine's rules apply: a GET naming no session is refused, another method is not
    // allowed, a path under the mount is not the endpoint.
    let get = Request::get("/mcp").header("host", "localhost").body(Body::empty()).expect("a request");
    let response = app.clone().oneshot(get).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    let put = Request::put("/mcp").header("host", "localhost").body(Body::empty()).expect("a request");
    let response = app.clone().oneshot(put).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(response.headers().get("allow").map(|v| v.as_bytes()), Some(&b"GET, POST, DELETE"[..]));
    let req = request("/mcp/other", "tools/list", None, body(2, "tools/list", ""));
    assert_eq!(app.clone().oneshot(req).await.expect("infallible").status(), StatusCode::NOT_FOUND);
    // A foreign Host.
    let mut req = request("/mcp", "tools/list", None, body(3, "tools/list", ""));
    req.headers_mut().insert("host", "evil.example".parse().expect("a header value"));
    assert_eq!(app.clone().oneshot(req).await.expect("infallible").status(), StatusCode::FORBIDDEN);
    // A body over the cap.
    let big = format!(r#"{{"pad":"{}"}}"#, "x".repeat(1 << 20));
    let req = request("/mcp", "tools/list", None, big);
    assert_eq!(app.clone().oneshot(req).await.expect("infallible").status(), StatusCode::PAYLOAD_TOO_LARGE);
    // The neighbouring route.
    let health = Request::get("/health").body(Body::empty()).expect("a request");
    assert_eq!(app.oneshot(health).await.expect("infallible").status(), StatusCode::OK);
}

#[tokio::test]
async fn route_service_keeps_the_path() {
    let svc = McpService::new(engine("/mcp"), Probe::new(), AllowAll);
    let app = Router::new().route_service("/mcp", svc);
    let req = request("/mcp", "tools/call", Some("echo"), call_body(1, "echo", &json!({ "text": "routed" })));
    let (status, v) = json_of(app.oneshot(req).await.expect("infallible")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first_text(&v), "routed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_real_axum_listener() {
    let probe = Probe::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let server = tokio::spawn(axum::serve(listener, app(Arc::clone(&probe))).into_future());

    // Keep-alive, several requests on one connection.
    let mut conn = Conn::open(addr).await;
    for id in 1..4 {
        let r = conn.call(id, "echo", &json!({ "text": format!("axum {id}") })).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(first_text(&r.json()), format!("axum {id}"));
    }
    let mut req = post_to(
        addr,
        "/mcp",
        "tools/call",
        Some("region"),
        &call_body(9, "region", &json!({ "region": "ap" })),
    );
    req = req.replacen("\r\n", "\r\nMcp-Param-Region: ap\r\n", 1);
    conn.send(&req).await;
    assert_eq!(first_text(&conn.response().await.json()), "region: ap");

    // Many at once.
    let clients: Vec<_> = (0..10u64)
        .map(|c| {
            tokio::spawn(async move {
                let mut conn = Conn::open(addr).await;
                for i in 0..3u64 {
                    let text = format!("{c}/{i}");
                    let r = conn.call(c * 10 + i, "echo", &json!({ "text": text })).await;
                    assert_eq!(first_text(&r.json()), text);
                }
            })
        })
        .collect();
    for client in clients {
        patient("a client", client).await.expect("the client succeeds");
    }

    // Closing the connection while the handler works cancels it.
    let mut conn = Conn::open(addr).await;
    conn.send(&http_support::call(addr, 20, "slow", &json!({}))).await;
    probe.wait_started(1).await;
    drop(conn);
    probe.wait_dropped(1).await;
    server.abort();
}

#[tokio::test]
async fn dropping_the_call_cancels_the_request() {
    let probe = Probe::new();
    let mut svc = McpService::new(engine("/mcp"), Arc::clone(&probe), AllowAll);
    let req = request("/mcp", "tools/call", Some("slow"), call_body(1, "slow", &json!({})));
    let call = svc.call(req);
    let pending = tokio::spawn(call);
    probe.wait_started(1).await;
    assert_eq!(probe.dropped.load(Ordering::SeqCst), 0);
    pending.abort();
    probe.wait_dropped(1).await;

    // The service goes on.
    let req = request("/mcp", "tools/call", Some("echo"), call_body(2, "echo", &json!({ "text": "next" })));
    let response =
        patient("a call", ServiceExt::<Request<Body>>::oneshot(svc, req)).await.expect("infallible");
    let bytes = response.into_body().collect().await.expect("a body").to_bytes();
    let v: Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(first_text(&v), "next");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_keeps_the_in_flight_limit_and_authorizes() {
    let probe = Probe::new();
    let mut cfg = Config::new("t", "1");
    cfg.max_in_flight(2);
    let engine = HttpEngine::new(cfg, HttpConfig::new(AllowedOrigins::Any, Authorization::Host), catalog());
    let auth = |req: &AuthorizeInfo| {
        if req.header("x-key").is_some() { Verdict::Allow } else { Verdict::Unauthenticated }
    };
    let svc = HttpServer::new(engine, Arc::clone(&probe), auth).max_in_flight(2).into_service();
    let calls: Vec<_> = (0..8u64)
        .map(|id| {
            let mut req = request("/mcp", "tools/call", Some("busy"), call_body(id, "busy", &json!({})));
            req.headers_mut().insert("x-key", "1".parse().expect("a header value"));
            tokio::spawn(svc.clone().oneshot(req))
        })
        .collect();
    for call in calls {
        let response = patient("a call", call).await.expect("the task").expect("infallible");
        assert_eq!(response.status(), StatusCode::OK);
        let bytes = response.into_body().collect().await.expect("a body").to_bytes();
        let v: Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(first_text(&v), "done");
    }
    let most = probe.max_running.load(Ordering::SeqCst);
    assert!((1..=2).contains(&most), "at most 2 handlers at once, saw {most}");

    let req = request("/mcp", "tools/call", Some("busy"), call_body(9, "busy", &json!({})));
    let response = svc.oneshot(req).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_request_for_a_path_that_is_not_the_endpoint_is_logged_at_debug() {
    let logs = Captured::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // Nested with the endpoint left at `/mcp`: the service sees `/`, the common mistake.
    let app = Router::new().nest_service("/mcp", McpService::new(engine("/mcp"), Probe::new(), AllowAll));
    let req = request("/mcp", "tools/call", Some("echo"), call_body(1, "echo", &json!({ "text": "hi" })));
    let response = patient("oneshot", app.oneshot(req)).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let text = logs.text();
    assert!(text.contains("DEBUG") && text.contains("not the endpoint"), "{text}");
    assert!(text.contains("endpoint=\"/mcp\"") || text.contains("endpoint=/mcp"), "{text}");
}

#[tokio::test]
async fn a_server_without_an_authorizer_serves_everyone_and_refuses_when_asked() {
    // Under `Authorization::Everyone` there is nothing to give.
    let app =
        Router::new().route_service("/mcp", McpService::without_authorizer(engine("/mcp"), Probe::new()));
    let req = request("/mcp", "tools/call", Some("echo"), call_body(1, "echo", &json!({ "text": "hi" })));
    let (status, v) = json_of(patient("oneshot", app.oneshot(req)).await.expect("infallible")).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(first_text(&v), "hi");
    // An engine that asks (`Authorization::Host`) gets a refusal, never an allowance.
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let asking = HttpEngine::new(Config::new("io-tokio-tower-test", "0.0.1"), http, catalog());
    let svc = McpService::without_authorizer(asking, Probe::new());
    let req = request("/mcp", "tools/call", Some("echo"), call_body(2, "echo", &json!({ "text": "hi" })));
    let response = patient("oneshot", svc.oneshot(req)).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
}
