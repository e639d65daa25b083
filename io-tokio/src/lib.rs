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
//! - With feature `tower`, `http::McpService` is the same endpoint as a tower `Service`, to
//!   mount in an axum router.
//! - With feature `otel`, each request span has the client's trace context as its
//!   OpenTelemetry parent, the duration histograms and the refusal counter are recorded,
//!   and `Otel` exports them as OTLP over HTTP.
//! - With feature `connectome` (off by default: it builds the engine's `connectome`, with
//!   petgraph), a handler reports the resources a call read (`ToolCall::report_read`) and
//!   asks for the observed graph (`Publisher::observed_graph`).
//!
//! The root holds what a server written as `docs/guide.md` says names; the rest is in
//! modules by concern: [`handler`] (the rest of a handler's side), [`reply`] (the other
//! owned replies and results), [`routes`] (the typed router's other types), [`stdio`],
//! [`http`] (the HTTP server's other parts, with `http::oauth`), [`store`] (where
//! sessions, their events and task records are kept) and [`telemetry`] (with
//! `telemetry::otel`). The engine is re-exported whole as [`engine`], so a server needs
//! `mcp-io-tokio` as its only MCP dependency.
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
//! use mcp_io_tokio::engine::{Catalog, Config, Engine, Resource, Tool};
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
//! use mcp_io_tokio::engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, Verdict};
//! use mcp_io_tokio::engine::{Catalog, Config, Tool};
//! use mcp_io_tokio::{ToolReply, serve_http};
//! use mcp_io_tokio::handler::tool_fn;
//! use mcp_io_tokio::http::AuthorizeInfo;
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
//!     finishes (a call made a task goes on under the task's ticket), written once for
//!     both engines over `mcp_engine::Commands` (`ask_client`, whose signatures differ,
//!     is the one per-engine method).
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
//! [`AllowAll`]: http::AllowAll
//! [`AuthorizeInfo`]: http::AuthorizeInfo
//! [`CatalogNews`]: store::CatalogNews
//! [`CompletionRequest`]: handler::CompletionRequest
//! [`ContentBlocks`]: reply::ContentBlocks
//! [`EventBounds`]: store::EventBounds
//! [`EventStore`]: store::EventStore
//! [`ListedTask`]: store::ListedTask
//! [`MemorySessionStore`]: store::MemorySessionStore
//! [`MemoryTaskStore`]: store::MemoryTaskStore
//! [`Name`]: handler::Name
//! [`NoAuthorizer`]: http::NoAuthorizer
//! [`PooledString`]: handler::PooledString
//! [`PublishError`]: handler::PublishError
//! [`Publisher`]: handler::Publisher
//! [`SessionStore`]: store::SessionStore
//! [`SessionStore::announce`]: store::SessionStore::announce
//! [`StoreNotice`]: store::StoreNotice
//! [`TaskListQuery`]: store::TaskListQuery
//! [`TaskSave`]: store::TaskSave
//! [`TaskStart`]: handler::TaskStart
//! [`TaskStore`]: store::TaskStore
//! [`Telemetry`]: telemetry::Telemetry
//! [`ToolResult`]: reply::ToolResult
//! [`serve`]: stdio::serve
//! [`serve_with`]: stdio::serve_with
//! [`tool_fn`]: handler::tool_fn

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod host;

mod auth;
pub mod store;

pub mod telemetry;

mod run;

// The face: what a server built as `docs/guide.md` says names at the root, the rest in
// modules by concern, and the engine re-exported whole (`engine`), so that one dependency
// is enough.

pub use auth::Authorizer;
pub use host::handler::Handler;
pub use host::reply::{HostFailure, PromptReply, ResourceReply, ToolReply};
pub use host::request::{PromptGet, ResourceRead, ToolCall};
#[cfg(feature = "schemars")]
pub use host::typed::Router;
#[cfg(feature = "schemars")]
pub use host::typed::output::{NoArgs, Structured};
/// The sans-IO engine this crate serves (crate `mcp-engine`), re-exported whole: the
/// catalog ([`Catalog`](mcp_engine::Catalog), [`Tool`](mcp_engine::Tool), …), the
/// configuration ([`Config`](mcp_engine::Config), [`http::HttpConfig`](mcp_engine::http::HttpConfig)),
/// the engines ([`Engine`](mcp_engine::Engine), [`http::HttpEngine`](mcp_engine::http::HttpEngine))
/// and their content types, so that a server needs no dependency on `mcp-engine` of its own.
pub use mcp_engine as engine;
pub use run::http::{HttpServer, serve_http};
pub use run::stdio::serve_stdio;

pub mod handler {
    //! The rest of a handler's side: [`tool_fn`] (a [`Handler`](crate::Handler) from a
    //! closure, a [`ToolFn`]), the completion request ([`CompletionRequest`],
    //! [`CompletionTarget`]), what a request carries ([`Name`], [`PooledString`],
    //! [`RequestTrace`], [`InputContext`]), how a call becomes a task ([`TaskStart`]),
    //! the [`Publisher`] that changes what a running server serves (from a call,
    //! [`ToolCall::publisher`](crate::ToolCall::publisher), or a server,
    //! [`HttpServer::publisher`](crate::HttpServer::publisher)) and the errors of a call's
    //! and a publisher's methods ([`AskClientError`], [`PublishError`]).

    pub use crate::host::channel::{AskClientError, PublishError, Publisher};
    pub use crate::host::handler::{ToolFn, tool_fn};
    pub use crate::host::request::{CompletionRequest, CompletionTarget, InputContext, RequestTrace};
    pub use crate::host::strings::{Name, PooledString};
    pub use crate::host::task::TaskStart;
}

pub mod reply {
    //! The owned replies beyond the three at the root ([`ToolReply`](crate::ToolReply),
    //! [`ResourceReply`](crate::ResourceReply), [`PromptReply`](crate::PromptReply)): the
    //! completion and input-required replies, the owned content types (`Owned*`, the owned
    //! counterpart of the engine type of the same name), the content of a tool reply
    //! ([`ContentBlocks`]), and the results a handler resolves to (`*Result`).

    pub use crate::host::reply::{
        CompleteResult, CompletionReply, ContentBlocks, InputRequiredReply, OwnedBase64, OwnedContent,
        OwnedPromptMessage, OwnedResourceContents, PromptResult, ResourceResult, ToolResult,
    };
}

pub mod skills {
    //! Serving a folder of Agent Skills (the skills extension): [`load_dir`] reads a folder
    //! into the engine's [`Skill`](mcp_engine::skills::Skill)s, refusing with a
    //! [`LoadError`] what it must not serve.

    pub use crate::host::skills::{LoadError, load_dir};
}

#[cfg(feature = "schemars")]
pub mod routes {
    //! The typed router's other types (feature `schemars`): what [`Router::build`](crate::Router::build)
    //! refuses ([`RouterError`]) and makes ([`TypedHandler`]), what a typed tool may return
    //! ([`IntoToolReply`]), and the routes a [`Router`](crate::Router) collects, one value
    //! per declared tool, resource, template or prompt, chained into a list whose type
    //! records every handler. The routes are named only by the compiler; a `Router` builds
    //! them.

    pub use crate::host::typed::output::IntoToolReply;
    pub use crate::host::typed::route::{
        PromptRoute, ResourceRoute, Route, RouteList, TemplateRoute, ToolCallRoute, ToolRoute,
    };
    pub use crate::host::typed::{RouterError, TypedHandler};
}

pub mod stdio {
    //! Serving one stream beyond [`serve_stdio`](crate::serve_stdio): [`serve`] over any
    //! reader and writer, [`serve_with`] with a [`Telemetry`](crate::telemetry::Telemetry).

    pub use crate::run::stdio::{serve, serve_with};
}

pub mod http {
    //! The Streamable HTTP server's other parts: what an [`Authorizer`](crate::Authorizer)
    //! decides on ([`AuthorizeInfo`]), the authorizers of an engine that needs none
    //! ([`AllowAll`], [`NoAuthorizer`]), OAuth 2.1 access tokens verified for a protected
    //! resource (`oauth`, feature `oauth`), and the endpoint as a tower `Service` with the
    //! body of its responses (`McpService`, `McpBody`, feature `tower`).

    pub use crate::auth::{AllowAll, AuthorizeInfo, NoAuthorizer};
    #[cfg(feature = "tower")]
    pub use crate::run::tower::{McpBody, McpService};

    #[cfg(feature = "oauth")]
    pub mod oauth {
        //! OAuth 2.1 for a protected resource (feature `oauth`): [`OAuthAuthorizer`]
        //! verifies each request's access token, a JWT against the issuer's key set
        //! ([`JwksVerifier`], from a [`JwksSource`]) or by RFC 7662 introspection
        //! ([`IntrospectionVerifier`]), into an [`AccessToken`].

        pub use crate::auth::oauth::{
            AccessToken, IntrospectionVerifier, JwksSource, JwksVerifier, OAuthAuthorizer, OAuthError,
            VerifyError,
        };
    }
}

/// The code of `docs/guide.md`, compiled as doctests (its server uses the typed router).
#[cfg(all(doctest, feature = "schemars"))]
#[doc = include_str!("../../docs/guide.md")]
pub struct GuideDoctests;
