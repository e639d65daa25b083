//! # mcp-engine
//!
//! A sans-IO [Model Context Protocol](https://modelcontextprotocol.io) server engine.
//! Bytes go in, frames and host actions come out. The engine does no I/O, reads no
//! clock, starts no thread and needs no async runtime: adapters (`mcp-io-mio`,
//! `mcp-io-tokio`, or your own loop) move bytes and run the host's work.
//!
//! It speaks three protocol revisions on one stream: `2026-07-28` (stateless: every
//! request carries its revision and client capabilities in `params._meta`) and the
//! session-bound `2025-11-25` and `2025-06-18` (opened with `initialize`), over stdio
//! (newline-delimited JSON-RPC).
//!
//! ## What the engine does and what the host does
//!
//! The host declares a [`Catalog`] of tools, resources, resource templates and prompts.
//! The engine frames, parses, validates (JSON-RPC rules, revision rules, the tool's input
//! schema, a prompt's declared arguments, whether a resource uri is listed or matches a
//! template), paginates, enforces limits and serializes. Work only the host can do leaves
//! the engine as an [`Event`] carrying a [`Ticket`]; the host answers the ticket later
//! with a command such as [`Engine::answer_tool`].
//!
//! ## The run loop
//!
//! ```no_run
//! use mcp_engine::{Catalog, Config, Content, Engine, Event, Instant, Tool, ToolOutput};
//! use std::io::{Read, Write};
//!
//! let catalog = Catalog::builder().tool(Tool::new("echo")).build()?;
//! let mut engine = Engine::new(Config::new("demo", "1.0"), catalog);
//! let (mut stdin, mut stdout) = (std::io::stdin(), std::io::stdout());
//! let start = std::time::Instant::now();
//! let mut read_buf = vec![0u8; 64 * 1024];
//! let mut write_buf = vec![0u8; 64 * 1024];
//! loop {
//!     let n = stdin.read(&mut read_buf)?;
//!     let now = Instant::from_micros(start.elapsed().as_micros() as u64);
//!     if n == 0 { engine.handle_eof(now) }
//!     let mut fed = 0;
//!     loop {
//!         fed += engine.handle_input(now, &read_buf[fed..n]);
//!         // Drain events: answer inline here; an async host would answer later.
//!         while let Some(event) = engine.poll_event() {
//!             if let Event::CallTool(call) = event {
//!                 // Answer through the event: the arguments stay borrowed, nothing is copied.
//!                 let args = call.arguments.raw();
//!                 call.answer(&ToolOutput::new(&[Content::text(args)]))?;
//!             }
//!         }
//!         // Drain output.
//!         loop {
//!             let len = engine.poll_transmit(&mut write_buf);
//!             if len == 0 { break }
//!             stdout.write_all(&write_buf[..len])?;
//!         }
//!         stdout.flush()?;
//!         if fed == n { break }
//!     }
//!     if engine.is_finished() { break }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The rule the loop follows is documented on [`Engine`]: after every input or command,
//! drain [`Engine::poll_event`] and [`Engine::poll_transmit`].
//!
//! ## Allocation
//!
//! Buffers are allocated when the engine is built, at their working size. In steady
//! state every request path allocates nothing (tests count them, both revisions, stdio and
//! HTTP): `ping`, `server/discover`, every list page, `tools/call` with its arguments
//! validated against the tool's input schema, `resources/read`, `prompts/get`. Frames are
//! parsed with a reused simd-json tape; arguments are validated by `jsonschema` on that
//! tape; output is serialized straight into a reused buffer. The `serde_json::Value` path
//! is kept for error messages (a request that repeats a member name is refused).
//!
//! ## Panics and errors
//!
//! Nothing a peer sends makes the engine panic: every malformed frame gets the JSON-RPC
//! error its fault calls for and the stream resumes at the next frame. A panic is a bug.

#![forbid(unsafe_code)]
#![cfg_attr(not(fuzzing), warn(missing_docs))]

// The modules by layer, lowest first (`docs/architecture.md`, "Layers"): one group per
// layer, the groups apart by a blank line so that rustfmt, which sorts within a group,
// keeps this order. A module imports only modules of the groups above its own, or of its
// own folder, never the crate face; `tests/tests/layers.rs` checks both the rule and that
// these groups are its layers.
mod level;
mod revision;
mod time;

mod timer;

mod wire;

mod content;

mod catalog;

mod config;
pub mod error;

#[cfg(feature = "connectome")]
pub mod connectome;

mod jsonrpc;

mod output;

mod mcp;

pub mod observe;

mod commands;

mod stdio;

pub mod http;

#[cfg(fuzzing)]
#[doc(hidden)]
pub mod internal;

pub use mcp::{mrtr, subs};

/// What the host is handed besides [`Event`] itself: each event's request (a tool call,
/// a resource read, a prompt, a completion) with its arguments and its request's
/// context, and the client's replies to what the host asked it ([`ClientAsk`](event::ClientAsk)).
pub mod event {
    pub use crate::mcp::asks::{AskError, ClientAsk, ClientReply};
    pub use crate::mcp::event::{
        Arguments, CallTool, Complete, CompletionRef, GetPrompt, ReadResource, RequestId, RequestInfo,
        TemplateVars,
    };
}

/// Agent Skills the server offers (the `io.modelcontextprotocol/skills` extension): a
/// [`Skill`](skills::Skill) is a folder of files whose root holds `SKILL.md`, added to a
/// catalog with [`CatalogBuilder::skill`]; [`skills_in`](skills::skills_in) makes skills from a
/// tree of files; why a skill is refused is a [`SkillError`](skills::SkillError).
pub mod skills {
    pub use crate::catalog::skills::{Skill, SkillError, skills_in};
}

pub use catalog::uritemplate::TemplateError;
pub use catalog::xheader::{HeaderParam, HeaderParamKind, XHeaderError, XHeaderReason};
pub use catalog::{
    Catalog, CatalogBuilder, CatalogError, Icon, Prompt, PromptArgument, Resource, ResourceTemplate,
    TaskSupport, Tool, ToolAnnotations,
};
#[cfg(feature = "schemars")]
pub use catalog::{input_schema_of, output_schema_of};
pub use commands::Commands;
pub use config::{CachePolicy, CacheScope, Config, ServerInfo};
pub use content::{Base64, Content, PromptMessage, PromptOutput, ResourceContents, Role, ToolOutput};
pub use level::LogLevel;
pub use mcp::event::Event;
pub use mcp::tasks::TaskOptions;
pub use mcp::tickets::Ticket;
pub use revision::Revision;
pub use stdio::Engine;
pub use time::{Instant, UnixTime};
