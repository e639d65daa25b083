//! A small notes server written with the typed router: two tools (one with structured
//! output), a slow tool that reports progress, a resource template, a static resource and
//! a prompt; over stdio or Streamable HTTP. `docs/guide.md` walks through it.
//!
//! ```text
//! cargo run -p mcp-io-tokio --example notes -- --stdio
//! cargo run -p mcp-io-tokio --example notes -- --http 127.0.0.1:3000   # http://127.0.0.1:3000/mcp
//! ```
//!
//! Logs go to stderr (`RUST_LOG` filters them, default `info`); over stdio, stdout carries
//! only JSON-RPC. Over HTTP it listens on a loopback address only (any `Origin` is
//! accepted and nobody is asked to authenticate) and prints `listening on http://ADDR/mcp`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_io_tokio::engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_io_tokio::engine::{Config, Engine, Prompt, Resource, ResourceTemplate, Tool};
use mcp_io_tokio::{
    HostFailure, HttpServer, NoArgs, PromptReply, ResourceRead, ResourceReply, Router, Structured, ToolCall,
    serve_stdio,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The notes, shared by every handler (each gets a clone of the `Arc`).
type Notes = Arc<Mutex<Vec<Note>>>;

#[derive(Clone, Serialize, JsonSchema)]
struct Note {
    id: usize,
    title: String,
    body: String,
}

fn lock(notes: &Notes) -> Result<std::sync::MutexGuard<'_, Vec<Note>>, HostFailure> {
    notes.lock().map_err(|_| HostFailure::internal("the notes lock is poisoned"))
}

#[derive(Deserialize, JsonSchema)]
struct AddNote {
    /// A short title.
    title: String,
    /// The text of the note.
    body: String,
}

#[derive(Deserialize, JsonSchema)]
struct SearchNotes {
    /// Words to look for in titles and bodies.
    query: String,
    /// At most this many notes (default 10).
    #[schemars(range(min = 1, max = 50))]
    limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
struct Found {
    notes: Vec<Note>,
}

/// The variables of `note://{id}`, and the argument of the `summarize` prompt.
#[derive(Deserialize, JsonSchema)]
struct NoteId {
    /// The note's id, as `add_note` gave it.
    id: String,
}

fn find(notes: &Notes, id: &str) -> Result<Option<Note>, HostFailure> {
    let notes = lock(notes)?;
    Ok(id.parse::<usize>().ok().and_then(|i| notes.get(i.checked_sub(1)?)).cloned())
}

fn router(notes: Notes) -> Router<Notes, impl mcp_io_tokio::routes::RouteList<Notes>> {
    Router::new(notes)
        .tool(Tool::new("add_note").description("Adds a note."), |notes, note: AddNote| async move {
            let mut notes = lock(&notes)?;
            let id = notes.len() + 1;
            notes.push(Note { id, title: note.title, body: note.body });
            Ok(format!("Added note {id}."))
        })
        .tool(
            Tool::new("search_notes").description("Finds notes by words."),
            |notes, search: SearchNotes| async move {
                let words: Vec<String> = search.query.split_whitespace().map(str::to_lowercase).collect();
                let notes = lock(&notes)?;
                let hit = |n: &&Note| {
                    words.iter().all(|w| (n.title.clone() + " " + &n.body).to_lowercase().contains(w))
                };
                let limit = search.limit.unwrap_or(10) as usize;
                Ok(Structured(Found { notes: notes.iter().filter(hit).take(limit).cloned().collect() }))
            },
        )
        .tool_with_call(
            Tool::new("slow_export").description("Exports every note, slowly, reporting progress."),
            |notes, _: NoArgs, call: ToolCall| async move {
                for step in 1..=5 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    call.progress(f64::from(step), Some(5.0), Some("exporting"));
                }
                let notes = lock(&notes)?;
                Ok(notes.iter().map(|n| format!("# {}\n\n{}\n", n.title, n.body)).collect::<String>())
            },
        )
        .template(
            ResourceTemplate::new("note://{id}", "note").mime_type("text/plain"),
            |notes, v: NoteId, read: ResourceRead| async move {
                Ok(match find(&notes, &v.id)? {
                    Some(n) => ResourceReply::text(read.uri.as_str(), Some("text/plain"), n.body),
                    None => ResourceReply::not_found(),
                })
            },
        )
        .resource(
            Resource::new("note://index", "index")
                .description("Every note's id and title.")
                .mime_type("text/plain"),
            |notes, read: ResourceRead| async move {
                let index: String =
                    lock(&notes)?.iter().map(|n| format!("{}: {}\n", n.id, n.title)).collect();
                Ok(ResourceReply::text(read.uri.as_str(), Some("text/plain"), index))
            },
        )
        .prompt(
            Prompt::new("summarize").description("Asks for a summary of a note."),
            |notes, v: NoteId| async move {
                let note = find(&notes, &v.id)?
                    .ok_or_else(|| HostFailure::invalid_params(format!("no note {}", v.id)))?;
                Ok(PromptReply::user_text(format!("Summarize this note in one sentence:\n\n{}", note.body)))
            },
        )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let (catalog, handler) = router(Notes::default()).build()?;
    let config = Config::new("notes", "1.0.0").instructions("Keeps notes: add, search, export.").to_owned();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--stdio"] => serve_stdio(Engine::new(config, catalog), handler).await?,
        ["--http", addr] => {
            let addr: SocketAddr = addr.parse()?;
            if !addr.ip().is_loopback() {
                return Err(format!("{addr} is not a loopback address").into());
            }
            let listener = tokio::net::TcpListener::bind(addr).await?;
            eprintln!("listening on http://{}/mcp", listener.local_addr()?);
            let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
            HttpServer::without_authorizer(HttpEngine::new(config, http, catalog), handler)
                .serve(listener)
                .await?;
        }
        _ => return Err("usage: notes --stdio | --http ADDR".into()),
    }
    Ok(())
}
