//! # mcp-io-tokio
//!
//! Serve the sans-IO [`mcp_engine`] MCP server engine with [tokio] and asynchronous
//! handlers.
//!
//! This crate is a thin adapter: it moves bytes between an [`AsyncRead`] /
//! [`AsyncWrite`] pair (or TCP connections) and an [`Engine`] (or an [`HttpEngine`]), and
//! runs the work the engine hands out on your [`Handler`]. Framing, HTTP, JSON-RPC,
//! validation against the catalog and serialization all stay in the engine.
//!
//! - [`Handler`]: async methods taking owned requests ([`ToolCall`], [`ResourceRead`],
//!   [`PromptGet`]) and returning owned replies ([`ToolReply`], [`ResourceReply`],
//!   [`PromptReply`]) or a [`HostFailure`]. [`tool_fn`] makes one from a closure.
//! - [`serve`] runs one stream over any reader and writer; [`serve_stdio`] over stdin and
//!   stdout.
//! - [`serve_http`] (or [`HttpServer`], for settings and graceful shutdown) serves
//!   Streamable HTTP on a [`TcpListener`](tokio::net::TcpListener), with an
//!   [`Authorizer`] deciding the engine's authorization events ([`AllowAll`], or a closure
//!   over an [`AuthorizeInfo`]).
//! - With feature `tower`, `McpService` is the same endpoint as a tower `Service`, to
//!   mount in an axum router.
//! - With feature `otel`, each request span has the client's trace context as its
//!   OpenTelemetry parent, the duration histograms and the refusal counter are recorded,
//!   and `Otel` exports them as OTLP over HTTP.
//!
//! Each request runs in a tokio task of its own, so slow handlers do not hold up others and
//! replies go out in the order they finish. At most the engine's in-flight limit
//! ([`Config::max_in_flight`](mcp_engine::Config::max_in_flight)) run at once: while
//! that many are unanswered the engine takes no new request, and once its one-frame
//! input buffer is full no more input is read. A cancelled request's task is aborted.
//!
//! The tasks are kept and reused from one request to the next, catalog names are shared
//! ([`Name`]) and the text of a request is copied into reused buffers ([`PooledString`]), and
//! a reply of one content block needs no `Vec` ([`ContentBlocks`]): in steady state, a
//! request whose handler allocates nothing makes no heap allocation, over stdio and over
//! [`serve_http`] alike.
//!
//! Logging goes through [`tracing`], never to stdout. Every HTTP request the engine
//! refuses (a `Host` or `Origin` not allowed, a body over the cap, a timeout, a rate
//! limit, ...) is logged at `DEBUG` with its reason (`RUST_LOG=mcp_io_tokio=debug`), and
//! counted by reason in `mcp.server.http.refusals` with feature `otel`.
//!
//! ## Example
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use mcp_engine::{Catalog, Config, Engine, Resource, Tool};
//! use mcp_io_tokio::{Handler, HostFailure, ResourceRead, ResourceReply, ToolCall, ToolReply, serve_stdio};
//!
//! struct Greeter {
//!     greeting: String,
//! }
//!
//! impl Handler for Greeter {
//!     async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
//!         #[derive(serde::Deserialize)]
//!         struct Args {
//!             name: String,
//!         }
//!         match call.name.as_str() {
//!             "greet" => {
//!                 let args: Args = call.deserialize()?;
//!                 // Any async work can happen here: I/O, timers, other tasks.
//!                 Ok(ToolReply::text(format!("{}, {}!", self.greeting, args.name)))
//!             }
//!             other => Err(HostFailure::internal(format!("no tool {other}"))),
//!         }
//!     }
//!
//!     async fn read_resource(&self, read: ResourceRead) -> Result<ResourceReply, HostFailure> {
//!         match read.uri.as_str() {
//!             "greeter://greeting" => Ok(ResourceReply::text(read.uri.clone(), Some("text/plain"), &self.greeting)),
//!             _ => Ok(ResourceReply::not_found()),
//!         }
//!     }
//!     // `get_prompt` keeps its default: this catalog declares no prompt.
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let catalog = Catalog::builder()
//!         .tool(Tool::new("greet").description("Greets someone.").input_schema(serde_json::json!({
//!             "type": "object",
//!             "properties": { "name": { "type": "string" } },
//!             "required": ["name"]
//!         })))
//!         .resource(Resource::new("greeter://greeting", "greeting").mime_type("text/plain"))
//!         .build()?;
//!     let engine = Engine::new(Config::new("greeter", "1.0.0"), catalog);
//!     serve_stdio(engine, Arc::new(Greeter { greeting: "Hello".into() })).await?;
//!     Ok(())
//! }
//! ```
//!
//! Over Streamable HTTP, the same handler serves many connections:
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, Verdict};
//! use mcp_engine::{Catalog, Config, Tool};
//! use mcp_io_tokio::{AuthorizeInfo, ToolReply, serve_http, tool_fn};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let catalog = Catalog::builder().tool(Tool::new("now")).build()?;
//!     let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
//!     let engine = HttpEngine::new(Config::new("clock", "1.0"), http, catalog);
//!     let handler = Arc::new(tool_fn(|_call| async { Ok(ToolReply::text("It is now.")) }));
//!     let auth = |req: &AuthorizeInfo| match req.bearer_token() {
//!         Some("let-me-in") => Verdict::Allow,
//!         Some(_) => Verdict::Forbidden,
//!         None => Verdict::Unauthenticated,
//!     };
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//!     serve_http(listener, engine, handler, auth).await?;
//!     Ok(())
//! }
//! ```
//!
//! The `everything` example of this crate serves the conformance fixture catalog, over
//! Streamable HTTP at `http://127.0.0.1:3000/mcp` by default (`--http ADDR` for another
//! loopback address) or over stdio:
//! `cargo run --release -p mcp-io-tokio --example everything -- --stdio`. The `axum`
//! example (feature `tower`) mounts it in an axum router.
//!
//! ## Module map
//!
//! The modules of this crate (all private; their public items are re-exported here) form
//! layers, lowest first: each imports only modules listed above it.
//!
//! - `strings`: the shared catalog names ([`Name`]) and the pool of reused request text
//!   buffers ([`PooledString`]).
//! - `auth`: deciding the HTTP engine's authorization events ([`Authorizer`],
//!   [`AllowAll`], [`AuthorizeInfo`]).
//! - `reply/`: the owned replies a handler returns ([`ToolReply`], [`ContentBlocks`], …),
//!   [`HostFailure`], the results a handler resolves to ([`ToolResult`], …), and their
//!   borrowed engine forms.
//! - `readiness`: the per-connection wakers through which the HTTP server's engine task
//!   waits on every socket itself, and the queue they report to.
//! - `task`: how a tool call becomes a task ([`TaskStart`]), and the handler's side of a
//!   task (the module docs).
//! - `channel` (imports `reply`, `task`): the channel between handler futures and the task
//!   driving the engine: what a handler task sends back, the progress, log and read
//!   reports of a running call, and [`Publisher`] / [`PublishError`].
//! - `otel` (feature `otel`; imports `strings`): the client's trace context
//!   as each span's OpenTelemetry parent, the `mcp.server.operation.duration` and
//!   `mcp.server.session.duration` histograms, and `Otel`, OTLP over HTTP.
//! - `request` (imports `strings`, `channel`, `task`): the owned requests handed to a
//!   handler ([`ToolCall`], [`ResourceRead`], [`PromptGet`], [`CompletionRequest`]), copied
//!   out of engine events; a call's side of a task ([`ToolCall::start_task`]).
//! - `telemetry` (imports `channel`, `reply`, `otel`; used by `work`, `serve` and `http`):
//!   one `tracing` span per request, host-served or answered by the engine itself, named
//!   and attributed as OpenTelemetry's MCP conventions say by the mapping the mio adapter
//!   shares (crate `mcp-spans`: the span, the transport a run loop records, the class of
//!   an answer) ([`Telemetry`]; see `docs/observability.md`); the `DEBUG` line and the
//!   count of every request the HTTP engine refused.
//! - `handler` (imports `reply`, `request`): the [`Handler`] trait and [`tool_fn`].
//! - `work` (imports `strings`, `reply`, `channel`, `otel`, `request`, `telemetry`,
//!   `handler`): the handler
//!   tasks every run loop shares: starting an event's work on a worker task, aborting it
//!   when cancelled, answering its ticket on the engine when it finishes (a call made a
//!   task goes on under the task's ticket).
//! - `serve` (imports `handler`, `telemetry`, `work`): the stream run loop, [`serve`],
//!   [`serve_with`] and [`serve_stdio`].
//! - `store`: where HTTP sessions are kept beyond the engine's memory, [`SessionStore`]
//!   and [`MemorySessionStore`], what servers sharing one tell each other
//!   ([`StoreNotice`], [`CatalogNews`]), and their streams' events for `Last-Event-ID`
//!   on any node, [`EventStore`] within [`EventBounds`].
//! - `task_store` (imports `store`): where task records are kept beyond the engine's
//!   memory, [`TaskStore`] (compare-and-set on the record's revision; a principal's
//!   tasks listed by creation, [`TaskListQuery`], [`ListedTask`]) and
//!   [`MemoryTaskStore`], with [`TaskSave`].
//! - `stream_events` (imports `store`): the server's side of an event store: the task
//!   appending the engine's events in order, a load's answer handed to the engine.
//! - `http` (imports `auth`, `readiness`, `channel`, `handler`, `store`,
//!   `stream_events`, `task_store`, `work`): the
//!   Streamable HTTP server over TCP, [`HttpServer`] and [`serve_http`].
//! - `nodes` (imports `auth`, `channel`, `handler`, `http`, `store`): the server's side of
//!   a store shared by several servers: the store's notices of other nodes' changes into
//!   the engine, this node's catalog news out ([`SessionStore::announce`]), touches of
//!   sessions in use.
//! - `task_io` (imports `auth`, `handler`, `http`, `task_store`): the server's side of a
//!   task store: the engine's `SaveTask`, `LoadTask` and `TaskExpired` handed to it in
//!   tasks of their own, the answers back to the engine.
//! - `tower` (feature `tower`; imports `auth`, `channel`, `handler`, `http`): the same
//!   endpoint as a tower `Service`, `McpService`.
//! - `typed/` (feature `schemars`, default; imports `reply`, `request`, `handler`): the
//!   typed router, `Router`: each tool, resource, template and prompt declared once with
//!   its handler and argument type, building both the catalog and the dispatch;
//!   `Structured` output, `NoArgs`, and the route types (`routes`).
//! - `oauth` (feature `oauth`; imports `auth`): verifying OAuth 2.1 access tokens for a
//!   protected resource, `OAuthAuthorizer`, with the issuer's key set fetched over HTTPS
//!   (`JwksVerifier`) or RFC 7662 introspection (`IntrospectionVerifier`).
//! - `postgres` (feature `postgres`; imports `store`, `task_store`): sessions kept in
//!   PostgreSQL for several nodes behind one balancer (`PgSessionStore`, `PgStoreConfig`),
//!   their streams' events (`events.rs`), task records (`tasks.rs`, migration 3), and the
//!   notices of other nodes' writes (into `StoreNotices`).
//!
//! [`AsyncRead`]: tokio::io::AsyncRead
//! [`AsyncWrite`]: tokio::io::AsyncWrite
//! [`Engine`]: mcp_engine::Engine
//! [`HttpEngine`]: mcp_engine::http::HttpEngine

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod auth;
mod channel;
mod handler;
mod http;
mod nodes;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(feature = "otel")]
mod otel;
#[cfg(feature = "postgres")]
mod postgres;
mod readiness;
mod reply;
mod request;
mod serve;
mod store;
mod stream_events;
mod strings;
mod task;
mod task_io;
mod task_store;
mod telemetry;
#[cfg(feature = "tower")]
mod tower;
#[cfg(feature = "schemars")]
mod typed;
mod work;

pub use auth::{AllowAll, AuthorizeInfo, Authorizer, NoAuthorizer};
pub use channel::{AskClientError, PublishError, Publisher};
pub use handler::{Handler, ToolFn, tool_fn};
pub use http::{HttpServer, serve_http};
pub use mcp_spans::StatusCodeKey;
#[cfg(feature = "oauth")]
pub use oauth::{
    AccessToken, IntrospectionVerifier, JwksSource, JwksVerifier, OAuthAuthorizer, OAuthError, VerifyError,
};
#[cfg(feature = "otel")]
pub use otel::{DURATION_BUCKETS, Otel, OtelBuilder, OtelError, REFUSALS, SCOPE};
#[cfg(feature = "postgres")]
pub use postgres::{IgnoredNotices, PgSessionStore, PgStoreConfig};
pub use reply::{
    CompleteResult, CompletionReply, ContentBlocks, HostFailure, InputRequiredReply, OwnedBase64,
    OwnedContent, OwnedPromptMessage, OwnedResourceContents, PromptReply, PromptResult, ResourceReply,
    ResourceResult, ToolReply, ToolResult,
};
pub use request::{
    CompletionRequest, CompletionTarget, InputContext, PromptGet, RequestTrace, ResourceRead, ToolCall,
};
pub use serve::{serve, serve_stdio, serve_with};
pub use store::{
    CatalogNews, EventBounds, EventStore, KeptEvent, MemorySessionStore, SessionStore, StoreError,
    StoreFuture, StoreNotice, StoreNotices, StreamEvent,
};
pub use strings::{Name, PooledString};
pub use task::TaskStart;
pub use task_store::{ListedTask, MemoryTaskStore, TaskListQuery, TaskSave, TaskStore};
pub use telemetry::Telemetry;
#[cfg(feature = "tower")]
pub use tower::{McpBody, McpService};
#[cfg(feature = "schemars")]
pub use typed::output::{IntoToolReply, NoArgs, Structured};
#[cfg(feature = "schemars")]
pub use typed::route as routes;
#[cfg(feature = "schemars")]
pub use typed::{Router, RouterError, TypedHandler};
