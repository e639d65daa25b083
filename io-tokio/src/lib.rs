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
//! The modules of this crate are private (their public items are re-exported here) and
//! grouped in folders by concern. The folders form layers, lowest first: each imports
//! only folders listed above it (`tests/tests/layers.rs` checks it), and the files of a
//! folder import each other without a cycle.
//!
//! - `host/`: the host's side of a request, what a handler is given and returns; knows no
//!   run loop, store or transport.
//!   - `strings`: the shared catalog names ([`Name`]) and the pool of reused request text
//!     buffers ([`PooledString`]).
//!   - `reply/`: the owned replies a handler returns ([`ToolReply`], [`ContentBlocks`], …),
//!     [`HostFailure`], the results a handler resolves to ([`ToolResult`], …), and their
//!     borrowed engine forms.
//!   - `task`: how a tool call becomes a task ([`TaskStart`]), and the handler's side of a
//!     task (the module docs).
//!   - `channel` (imports `reply`, `task`): the channel between handler futures and the
//!     task driving the engine: what a handler task sends back, the progress, log and read
//!     reports of a running call, and [`Publisher`] / [`PublishError`].
//!   - `request` (imports `strings`, `channel`, `task`): the owned requests handed to a
//!     handler ([`ToolCall`], [`ResourceRead`], [`PromptGet`], [`CompletionRequest`]),
//!     copied out of engine events; a call's side of a task ([`ToolCall::start_task`]).
//!   - `handler` (imports `reply`, `request`): the [`Handler`] trait and [`tool_fn`].
//!   - `typed/` (feature `schemars`, default; imports `reply`, `request`, `handler`): the
//!     typed router, `Router`: each tool, resource, template and prompt declared once with
//!     its handler and argument type, building both the catalog and the dispatch;
//!     `Structured` output, `NoArgs`, and the route types (`routes`).
//! - `auth/`: who may call over HTTP: the [`Authorizer`] hook ([`AllowAll`],
//!   [`AuthorizeInfo`], [`NoAuthorizer`]); `oauth/` (feature `oauth`) verifies OAuth 2.1
//!   access tokens for a protected resource, `OAuthAuthorizer`, with the issuer's key set
//!   fetched over HTTPS (`JwksVerifier`) or RFC 7662 introspection (`IntrospectionVerifier`).
//! - `store/`: what outlives the engine's memory.
//!   - `sessions`: where HTTP sessions are kept, [`SessionStore`] and
//!     [`MemorySessionStore`], what servers sharing one tell each other ([`StoreNotice`],
//!     [`CatalogNews`]), and their streams' events for `Last-Event-ID` on any node,
//!     [`EventStore`] within [`EventBounds`].
//!   - `tasks` (imports `sessions`): where task records are kept, [`TaskStore`]
//!     (compare-and-set on the record's revision; a principal's tasks listed by creation,
//!     [`TaskListQuery`], [`ListedTask`]) and [`MemoryTaskStore`], with [`TaskSave`].
//!   - `stream_events` (imports `sessions`): the task appending the engine's stream events
//!     to an event store in order, and a load's answer handed to the engine.
//!   - `postgres/` (feature `postgres`; imports `sessions`, `tasks`): sessions kept in
//!     PostgreSQL for several nodes behind one balancer (`PgSessionStore`,
//!     `PgStoreConfig`), their streams' events (`events.rs`), task records (`tasks.rs`,
//!     migration 3), and the notices of other nodes' writes (into `StoreNotices`).
//! - `telemetry/` (imports `host/`): one `tracing` span per request, host-served or
//!   answered by the engine itself, named and attributed as OpenTelemetry's MCP
//!   conventions say by the mapping the mio adapter shares (crate `mcp-spans`: the span,
//!   the transport a run loop records, the class of an answer) ([`Telemetry`]; see
//!   `docs/observability.md`); the `DEBUG` line and the count of every request the HTTP
//!   engine refused. `otel` (feature `otel`): the client's trace context as each span's
//!   OpenTelemetry parent, the `mcp.server.operation.duration` and
//!   `mcp.server.session.duration` histograms, and `Otel`, OTLP over HTTP.
//! - `run/` (imports every folder above): the run loops.
//!   - `readiness`: the per-connection wakers through which the HTTP server's engine task
//!     waits on every socket itself, and the queue they report to.
//!   - `work`: the handler tasks every run loop shares: starting an event's work on a
//!     worker task, aborting it when cancelled, answering its ticket on the engine when it
//!     finishes (a call made a task goes on under the task's ticket).
//!   - `stdio` (imports `work`): the stream run loop, [`serve`], [`serve_with`] and
//!     [`serve_stdio`].
//!   - `owner` (imports `work`): the HTTP engine's owner, shared by the TCP loop and the
//!     tower service: the engine's events handed to the handler, the authorizer and the
//!     stores, their answers back to the engine, the other nodes' notices in and this
//!     node's news out ([`SessionStore::announce`]), touches of sessions in use.
//!   - `tcp` (imports `readiness`, `owner`): the TCP loop of [`HttpServer`].
//!   - `http` (imports `owner`, `tcp`): the Streamable HTTP server's face, [`HttpServer`]
//!     (the builder of its settings) and [`serve_http`].
//!   - `tower` (feature `tower`; imports `owner`, `http`): the same endpoint as a tower
//!     `Service`, `McpService`.
//!
//! [`AsyncRead`]: tokio::io::AsyncRead
//! [`AsyncWrite`]: tokio::io::AsyncWrite
//! [`Engine`]: mcp_engine::Engine
//! [`HttpEngine`]: mcp_engine::http::HttpEngine

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod host;

mod auth;
mod store;
mod telemetry;

mod run;

#[cfg(feature = "oauth")]
pub use auth::oauth::{
    AccessToken, IntrospectionVerifier, JwksSource, JwksVerifier, OAuthAuthorizer, OAuthError, VerifyError,
};
pub use auth::{AllowAll, AuthorizeInfo, Authorizer, NoAuthorizer};
pub use host::channel::{AskClientError, PublishError, Publisher};
pub use host::handler::{Handler, ToolFn, tool_fn};
pub use host::reply::{
    CompleteResult, CompletionReply, ContentBlocks, HostFailure, InputRequiredReply, OwnedBase64,
    OwnedContent, OwnedPromptMessage, OwnedResourceContents, PromptReply, PromptResult, ResourceReply,
    ResourceResult, ToolReply, ToolResult,
};
pub use host::request::{
    CompletionRequest, CompletionTarget, InputContext, PromptGet, RequestTrace, ResourceRead, ToolCall,
};
pub use host::strings::{Name, PooledString};
pub use host::task::TaskStart;
#[cfg(feature = "schemars")]
pub use host::typed::output::{IntoToolReply, NoArgs, Structured};
#[cfg(feature = "schemars")]
pub use host::typed::route as routes;
#[cfg(feature = "schemars")]
pub use host::typed::{Router, RouterError, TypedHandler};
pub use mcp_spans::StatusCodeKey;
pub use run::http::{HttpServer, serve_http};
pub use run::stdio::{serve, serve_stdio, serve_with};
#[cfg(feature = "tower")]
pub use run::tower::{McpBody, McpService};
#[cfg(feature = "postgres")]
pub use store::postgres::{IgnoredNotices, PgSessionStore, PgStoreConfig};
pub use store::sessions::{
    CatalogNews, EventBounds, EventStore, KeptEvent, MemorySessionStore, SessionStore, StoreError,
    StoreFuture, StoreNotice, StoreNotices, StreamEvent,
};
pub use store::tasks::{ListedTask, MemoryTaskStore, TaskListQuery, TaskSave, TaskStore};
pub use telemetry::Telemetry;
#[cfg(feature = "otel")]
pub use telemetry::otel::{DURATION_BUCKETS, Otel, OtelBuilder, OtelError, REFUSALS, SCOPE};

/// The code of `docs/guide.md`, compiled as doctests (its server uses the typed router).
#[cfg(all(doctest, feature = "schemars"))]
#[doc = include_str!("../../docs/guide.md")]
pub struct GuideDoctests;
