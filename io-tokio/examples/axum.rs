//! Mounts the conformance `everything` fixture in an axum router, at `/mcp` next to a
//! `/health` route, with the tower service of feature `tower`.
//!
//! ```text
//! cargo run -p mcp-io-tokio --features tower --example axum              # 127.0.0.1:3000
//! cargo run -p mcp-io-tokio --features tower --example axum -- 127.0.0.1:0
//! ```
//!
//! Prints `listening on http://ADDR/mcp` to stderr once bound. Loopback addresses only:
//! the endpoint accepts any `Origin` and has no authorization.

mod fixture;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_io_tokio::HttpServer;

use crate::fixture::Everything;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt().with_writer(std::io::stderr).init();
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3000".to_owned());
    let addr: SocketAddr = match addr.parse() {
        Ok(addr) if SocketAddr::ip(&addr).is_loopback() => addr,
        _ => {
            eprintln!("usage: axum [LOOPBACK_ADDR]   (default 127.0.0.1:3000)");
            return ExitCode::from(2);
        }
    };

    // Hold as many connections as the system allows (the soft limit is often 1,024).
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("cannot raise the open-file limit: {e}");
    }
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    // `nest_service` strips the `/mcp` prefix: the service sees `/`.
    http.endpoint("/");
    let config = mcp_fixture::config();
    let engine = HttpEngine::new(config, http, fixture::catalog());
    let mcp = HttpServer::without_authorizer(engine, Arc::new(Everything::default())).into_service();
    let app = Router::new().route("/health", get(|| async { "ok" })).nest_service("/mcp", mcp);

    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("axum: cannot listen on {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("listening on http://{}/mcp", listener.local_addr().unwrap_or(addr));
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    // With the peer's address (axum's `ConnectInfo`), so that each client's sessions,
    // streams and rate limits are counted against it.
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    match axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("axum: serving failed: {e}");
            ExitCode::FAILURE
        }
    }
}
