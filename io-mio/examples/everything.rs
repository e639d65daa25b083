//! Serves the conformance `everything` fixture over Streamable HTTP (the default) or
//! stdio.
//!
//! ```text
//! cargo run --release -p mcp-io-mio --example everything                  # http://127.0.0.1:3000/mcp
//! cargo run --release -p mcp-io-mio --example everything -- --http 127.0.0.1:8080
//! cargo run --release -p mcp-io-mio --example everything -- --stdio
//! ```
//!
//! Over HTTP the server listens on loopback only (`127.0.0.1`, `[::1]`; port `0` picks a
//! free one) and prints `listening on http://ADDR/mcp` on stderr once it is bound, with
//! the actual address. Over stdio, stdout carries protocol frames only. Errors go to
//! stderr.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::process::ExitCode;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::{Config, Engine};
use mcp_fixture as everything;

const USAGE: &str = "\
usage: everything [--http [ADDR] | --stdio]

Serves the MCP conformance `everything` fixture.

  --http [ADDR]  serve Streamable HTTP on ADDR (default 127.0.0.1:3000; loopback
                 addresses only), at /mcp: the default mode
  --stdio        serve one client over stdin/stdout
  -h, --help     print this help";

const DEFAULT_ADDR: &str = "127.0.0.1:3000";

enum Mode {
    Http(SocketAddr),
    Stdio,
}

/// Raises this process's open-file soft limit to its hard limit, so that the server can
/// hold as many connections as the system lets it (the default soft limit is often 1,024,
/// the engine's default `max_connections`).
fn raise_open_file_limit() {
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("cannot raise the open-file limit: {e}");
    }
}

fn main() -> ExitCode {
    let mode = match parse(std::env::args().skip(1)) {
        Ok(Some(mode)) => mode,
        Ok(None) => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("everything: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let config = everything::config();
    let result = match mode {
        Mode::Stdio => serve_stdio(config),
        Mode::Http(addr) => serve_http(addr, config),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("everything: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The mode the arguments ask for; `None` for `--help`.
fn parse(args: impl Iterator<Item = String>) -> Result<Option<Mode>, String> {
    let mut mode = None;
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let next = match arg.as_str() {
            "--stdio" => Mode::Stdio,
            "--http" => {
                let addr = args.next_if(|a| !a.starts_with('-'));
                Mode::Http(loopback_addr(addr.as_deref().unwrap_or(DEFAULT_ADDR))?)
            }
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}")),
        };
        if mode.replace(next).is_some() {
            return Err("give one of --http and --stdio".to_owned());
        }
    }
    Ok(Some(match mode {
        Some(mode) => mode,
        None => Mode::Http(loopback_addr(DEFAULT_ADDR)?),
    }))
}

/// `addr` parsed, if it is a loopback address: the server trusts whoever can reach it.
fn loopback_addr(addr: &str) -> Result<SocketAddr, String> {
    let parsed: SocketAddr = addr
        .parse()
        .map_err(|_| format!("{addr:?} is not an address such as 127.0.0.1:3000 or [::1]:3000"))?;
    if !parsed.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on {parsed}: this example serves anyone who can reach it, so it listens \
             on loopback addresses only (127.0.0.1, [::1])"
        ));
    }
    Ok(parsed)
}

/// What the trigger tools ask to publish, once their event is answered.
enum Published {
    Catalog(Box<mcp_engine::Catalog>),
    Updated(&'static str),
}

/// The fixture's answers, noting what the trigger tools ask for; the server's loop
/// publishes it after each batch of events (the engine is busy during a callback).
#[derive(Default)]
struct Triggers {
    asked: RefCell<Vec<everything::Trigger>>,
    dynamic: Cell<everything::Dynamic>,
}

impl Triggers {
    fn respond(&self, event: mcp_engine::Event<'_>) {
        if let mcp_engine::Event::CallTool(call) = &event
            && let Some(t) = everything::Trigger::of(&call.tool.name)
        {
            self.asked.borrow_mut().push(t);
        }
        everything::respond(event);
    }

    fn take(&self) -> Vec<Published> {
        let mut out = Vec::new();
        for t in self.asked.borrow_mut().drain(..) {
            match t.apply(self.dynamic.get()) {
                Some(next) => {
                    self.dynamic.set(next);
                    out.push(Published::Catalog(Box::new(everything::catalog_with(next))));
                }
                None => out.push(Published::Updated(everything::WATCHED)),
            }
        }
        out
    }
}

fn serve_stdio(config: Config) -> std::io::Result<()> {
    let triggers = Triggers::default();
    let server = mcp_io_mio::StdioServer::stdio(Engine::new(config, everything::catalog()))?;
    server.run_with(
        |event| triggers.respond(event),
        |engine| {
            for p in triggers.take() {
                match p {
                    // A refused replacement keeps the catalog; the fixture never adds a family.
                    Published::Catalog(c) => _ = engine.replace_catalog(*c),
                    Published::Updated(uri) => _ = engine.notify_resource_updated(uri),
                }
            }
        },
    )
}

fn serve_http(addr: SocketAddr, config: Config) -> std::io::Result<()> {
    // Loopback only: `Host` must name localhost, and a browser's `Origin` too.
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.loopback(true);
    let engine = HttpEngine::new(config, http, everything::catalog());
    raise_open_file_limit();
    // mio listens with a backlog of 1,024 (the standard library's is 128).
    let listener = mio::net::TcpListener::bind(addr)?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    let triggers = Triggers::default();
    let server = mcp_io_mio::HttpServer::new(listener, engine);
    server.run_with(
        |event| {
            if let HttpEvent::Mcp(event) = event {
                triggers.respond(event);
            }
            None // `Authorization::Everyone`: no authorization events
        },
        |engine| {
            for p in triggers.take() {
                match p {
                    // A refused replacement keeps the catalog; the fixture never adds a family.
                    Published::Catalog(c) => _ = engine.replace_catalog(*c),
                    Published::Updated(uri) => _ = engine.notify_resource_updated(uri),
                }
            }
        },
    )
}
