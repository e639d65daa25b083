//! Our engine through the tokio adapter, serving the `everything` catalog with an async
//! handler that answers `echo` (as the adapter's `everything` example does).

use std::sync::Arc;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_engine::{Config, Engine};
use mcp_fixture as everything;
use mcp_io_tokio::http::AllowAll;
use mcp_io_tokio::{Handler, HostFailure, HttpServer, ToolCall, ToolReply};
use mcp_load::Mode;

struct Echo;

impl Handler for Echo {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        #[derive(serde::Deserialize)]
        struct Args {
            text: String,
        }
        match call.name.as_str() {
            "echo" => {
                let Args { text } =
                    call.deserialize().map_err(|_| HostFailure::invalid_params("text must be a string"))?;
                Ok(ToolReply::text(text))
            }
            _ => Err(HostFailure::internal("no handler for this tool")),
        }
    }
}

/// Set (to anything) to run on tokio's current-thread runtime instead of the
/// multi-threaded one.
const CURRENT_THREAD_ENV: &str = "SRV_TOKIO_CURRENT_THREAD";

/// Set to keep HTTP sessions and their streams' events in a store as well: `memory` (a
/// `MemorySessionStore`) or a `postgres://` URL (a `PgSessionStore`, schema `mcp_load`,
/// which keeps task records too), as the tokio demo's `--store` does.
const STORE_ENV: &str = "SRV_TOKIO_STORE";

fn main() -> std::io::Result<()> {
    let mode = mcp_load::mode("srv-tokio");
    mcp_load::serve_stats();
    mcp_load::raise_open_file_limit();
    let config = Config::new("mcp-load-tokio", env!("CARGO_PKG_VERSION"));
    let runtime = if std::env::var_os(CURRENT_THREAD_ENV).is_some() {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?
    } else {
        mcp_load::tokio_runtime()
    };
    let result = match mode {
        Mode::Stdio => runtime
            .block_on(mcp_io_tokio::serve_stdio(Engine::new(config, everything::catalog()), Arc::new(Echo))),
        Mode::Http(addr) => runtime.block_on(async {
            // Loopback `Host` checks stay on (the default), any `Origin`.
            let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
            mcp_load::held_settings(&mut http);
            let engine = HttpEngine::new(config, http, everything::catalog());
            let std_listener = mcp_load::bind(addr);
            std_listener.set_nonblocking(true)?;
            let listener = tokio::net::TcpListener::from_std(std_listener)?;
            let server = HttpServer::new(engine, Arc::new(Echo), AllowAll);
            match std::env::var(STORE_ENV).ok().as_deref() {
                None | Some("") => server.serve(listener).await,
                Some("memory") => {
                    let store = Arc::new(mcp_io_tokio::store::MemorySessionStore::default());
                    server.session_store(Arc::clone(&store)).event_store(store).serve(listener).await
                }
                Some(url) => {
                    let store = mcp_io_tokio::store::PgStoreConfig::new(url)
                        .map_err(std::io::Error::other)?
                        .schema("mcp_load")
                        // One node: any key signs its announcements (none hears them).
                        .secret_key(*b"mcp-load one node notice key 000")
                        .build()
                        .await
                        .map_err(std::io::Error::other)?;
                    let store = Arc::new(store);
                    server
                        .session_store(Arc::clone(&store))
                        .event_store(Arc::clone(&store))
                        .task_store(store)
                        .serve(listener)
                        .await
                }
            }
        }),
    };
    // A read of stdin may still be pending: do not wait for it.
    runtime.shutdown_background();
    result
}
