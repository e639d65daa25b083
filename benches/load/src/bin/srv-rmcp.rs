//! rmcp 3.11 serving one `echo` tool with the engine catalog's input schema and the same
//! text output, over stdio or Streamable HTTP.
//!
//! The handler implements `ServerHandler` by hand (no macros, no schema generation) and
//! keeps the tool in a field, so `list_tools`, `get_tool` and `call_tool` do the least
//! work rmcp lets them. Over stdio it uses `stdio_pipes`, rmcp's non-blocking transport
//! for FIFOs; over HTTP, `StreamableHttpService` in stateless mode with JSON responses,
//! served by axum (hyper), as rmcp's own tests serve it. With [`SESSIONS_ENV`] set, the
//! service runs in its stateful mode instead: `initialize` opens a session held by a
//! `LocalSessionManager`, and every request of the session is answered on an SSE stream.

use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

#[derive(Clone)]
struct Echo {
    tool: Tool,
}

impl Echo {
    fn new() -> Self {
        let schema: JsonObject = serde_json::from_str(mcp_load::ECHO_SCHEMA).expect("the echo schema");
        Self { tool: Tool::new("echo", mcp_load::ECHO_DESCRIPTION, Arc::new(schema)) }
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == "echo").then(|| self.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params("no such tool", None));
        }
        match request.arguments.as_ref().and_then(|a| a.get("text")).and_then(|t| t.as_str()) {
            Some(text) => Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into()),
            None => Err(ErrorData::invalid_params("text must be a string", None)),
        }
    }
}

/// Set (to anything) to serve HTTP through hyper's HTTP/1 server with `pipeline_flush`
/// instead of `axum::serve`.
const PIPELINE_FLUSH_ENV: &str = "SRV_RMCP_PIPELINE_FLUSH";

/// Set (to anything) to serve HTTP in rmcp's stateful mode (`legacy_session_mode`, its
/// default): the load driver's session scenarios set it. `axum::serve` then sets
/// `TCP_NODELAY` on each connection it accepts (see [`NO_NODELAY_ENV`]).
const SESSIONS_ENV: &str = "SRV_RMCP_SESSIONS";

/// Set (to anything) with [`SESSIONS_ENV`] to leave `TCP_NODELAY` off under `axum::serve`,
/// as it comes. A session's answer is an SSE stream written in pieces (head and priming
/// event, the message, the last chunk), so Nagle's algorithm holds a piece until the
/// client's delayed ACK: about 40 ms a request on one connection.
const NO_NODELAY_ENV: &str = "SRV_RMCP_NO_NODELAY";

fn main() -> std::io::Result<()> {
    let mode = mcp_load::mode("srv-rmcp");
    mcp_load::serve_stats();
    let runtime = mcp_load::tokio_runtime();
    let result = runtime.block_on(async {
        match mode {
            mcp_load::Mode::Stdio => {
                let running =
                    Echo::new().serve(rmcp::transport::stdio_pipes()).await.map_err(std::io::Error::other)?;
                running.waiting().await.map_err(std::io::Error::other)?;
                Ok(())
            }
            mcp_load::Mode::Http(addr) => {
                let sessions = std::env::var_os(SESSIONS_ENV).is_some();
                let config = if sessions {
                    // rmcp's stateful mode as it comes (sessions in a `LocalSessionManager`
                    // with its default `SessionConfig`, SSE priming events with `retry`),
                    // less the SSE keep-alive timer: no stream here lives for 15 s.
                    StreamableHttpServerConfig::default()
                        .with_legacy_session_mode(true)
                        .with_sse_keep_alive(None)
                } else {
                    StreamableHttpServerConfig::default()
                        .with_legacy_session_mode(false)
                        .with_json_response(true)
                        .with_sse_keep_alive(None)
                };
                // The service asks the factory for a handler per request: hand out clones
                // of one (the tool's strings are borrowed and its schema shared).
                let echo = Echo::new();
                let factory = move || Ok(echo.clone());
                let service =
                    StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
                let router = axum::Router::new().nest_service("/mcp", service);
                let std_listener = mcp_load::bind(addr);
                std_listener.set_nonblocking(true)?;
                let listener = tokio::net::TcpListener::from_std(std_listener)?;
                if std::env::var_os(PIPELINE_FLUSH_ENV).is_none() {
                    if sessions && std::env::var_os(NO_NODELAY_ENV).is_none() {
                        let listener = listener.tap_io(|tcp| {
                            let _ = tcp.set_nodelay(true);
                        });
                        return axum::serve(listener, router).await;
                    }
                    return axum::serve(listener, router).await;
                }
                // hyper's own HTTP/1 server with `pipeline_flush`: pipelined responses
                // are written together. `axum::serve` cannot turn it on.
                loop {
                    let (stream, _) = listener.accept().await?;
                    stream.set_nodelay(true)?;
                    let service = hyper_util::service::TowerToHyperService::new(router.clone());
                    tokio::spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .pipeline_flush(true)
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        }
    });
    runtime.shutdown_background();
    result
}
