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
//!
//! The slow tools (`test_tool_with_progress`, `test_logging_tool`, `test_tool_with_logging`) keep their
//! ticket and send each notification 50 ms after the previous one, then the result,
//! from the loop's own timer (`run_timed`): a client sees them arrive one by one, as the
//! conformance tool descriptions ask, without a thread.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::{Config, Content, Engine, LogLevel, Ticket, ToolOutput};
use mcp_fixture as everything;
use mcp_fixture::edge::EdgeOptions;

const USAGE: &str = "\
usage: everything [--http [ADDR] | --stdio]

Serves the MCP conformance `everything` fixture.

  --http [ADDR]  serve Streamable HTTP on ADDR (default 127.0.0.1:3000; loopback
                 addresses only), at /mcp: the default mode
  --stdio        serve one client over stdin/stdout
  -h, --help     print this help

Over HTTP:";

const DEFAULT_ADDR: &str = "127.0.0.1:3000";

enum Mode {
    Http(SocketAddr, EdgeOptions),
    Stdio,
}

fn usage() -> String {
    format!("{USAGE}\n{}", everything::edge::USAGE)
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
            eprintln!("{}", usage());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("everything: {e}\n{}", usage());
            return ExitCode::from(2);
        }
    };
    let config = everything::config();
    let result = match mode {
        Mode::Stdio => serve_stdio(config),
        Mode::Http(addr, edge) => serve_http(addr, config, &edge),
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
    let mut edge = EdgeOptions::default();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if edge.take(&arg, || args.next())? {
            continue;
        }
        let next = match arg.as_str() {
            "--stdio" => Mode::Stdio,
            "--http" => {
                let addr = args.next_if(|a| !a.starts_with('-'));
                Mode::Http(loopback_addr(addr.as_deref().unwrap_or(DEFAULT_ADDR))?, EdgeOptions::default())
            }
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}")),
        };
        if mode.replace(next).is_some() {
            return Err("give one of --http and --stdio".to_owned());
        }
    }
    Ok(Some(match mode {
        Some(Mode::Http(addr, _)) => Mode::Http(addr, edge),
        Some(Mode::Stdio) => Mode::Stdio,
        None => Mode::Http(loopback_addr(DEFAULT_ADDR)?, edge),
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

/// The time between a slow tool's messages.
const PACE: Duration = Duration::from_millis(50);

/// One message of a slow tool.
#[derive(Clone, Copy)]
enum Step {
    Progress(f64, &'static str),
    Log(&'static str),
    Answer(&'static str),
}

const PROGRESS_STEPS: [Step; 4] = [
    Step::Progress(0.0, "started"),
    Step::Progress(50.0, "halfway"),
    Step::Progress(100.0, "done"),
    Step::Answer("Progress tool finished."),
];

const LOGGING_STEPS: [Step; 4] = [
    Step::Log("Tool execution started"),
    Step::Log("Tool processing data"),
    Step::Log("Tool execution completed"),
    Step::Answer("Logging tool finished."),
];

/// A slow tool's call: its ticket, the messages still to send, when the next one is due.
struct Paced {
    ticket: Ticket,
    steps: VecDeque<Step>,
    due: Option<Instant>,
}

/// What both engines do for a kept ticket.
trait Sink {
    fn step(&mut self, ticket: Ticket, step: Step);
}

/// The same calls on both engines (they share no trait).
macro_rules! sink {
    ($engine:ty) => {
        impl Sink for $engine {
            fn step(&mut self, ticket: Ticket, step: Step) {
                // A report the client did not ask for (no progress token, a log level above
                // `info`) is dropped by the engine; so is anything for a cancelled ticket.
                let _ = match step {
                    Step::Progress(p, m) => {
                        self.notify_progress(ticket, p, Some(100.0), Some(m)).map_err(drop)
                    }
                    Step::Log(text) => {
                        self.notify_log(ticket, LogLevel::Info, Some("test_logging_tool"), text).map_err(drop)
                    }
                    Step::Answer(text) => {
                        self.answer_tool(ticket, &ToolOutput::new(&[Content::text(text)])).map_err(drop)
                    }
                };
            }
        }
    };
}
sink!(Engine);
sink!(HttpEngine);

/// The fixture's answers, noting what the trigger tools ask for and keeping the slow
/// tools' tickets; the server's loop publishes and paces them after each batch of events
/// (the engine is busy during a callback).
#[derive(Default)]
struct Triggers {
    asked: RefCell<Vec<everything::Trigger>>,
    dynamic: Cell<everything::Dynamic>,
    paced: RefCell<Vec<Paced>>,
}

impl Triggers {
    fn respond(&self, event: mcp_engine::Event<'_>) {
        match &event {
            mcp_engine::Event::CallTool(call) => {
                let steps = match call.tool.name.as_str() {
                    "test_tool_with_progress" => Some(PROGRESS_STEPS),
                    "test_logging_tool" | "test_tool_with_logging" => Some(LOGGING_STEPS),
                    _ => None,
                };
                if let Some(steps) = steps {
                    let steps = steps.into_iter().collect();
                    self.paced.borrow_mut().push(Paced { ticket: call.ticket, steps, due: None });
                    return; // answered from `pace`
                }
                if let Some(t) = everything::Trigger::of(&call.tool.name) {
                    self.asked.borrow_mut().push(t);
                }
            }
            mcp_engine::Event::Cancelled(ticket) => self.paced.borrow_mut().retain(|p| p.ticket != *ticket),
            _ => {}
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

    /// Sends the slow tools' messages that are due (a new call's first at once), and
    /// says when the next one is.
    fn pace(&self, engine: &mut impl Sink, now: Instant) -> Option<Instant> {
        let mut paced = self.paced.borrow_mut();
        for p in paced.iter_mut() {
            if p.due.is_none_or(|due| due <= now)
                && let Some(step) = p.steps.pop_front()
            {
                engine.step(p.ticket, step);
                p.due = Some(now + PACE);
            }
        }
        paced.retain(|p| !p.steps.is_empty());
        paced.iter().filter_map(|p| p.due).min()
    }
}

fn serve_stdio(config: Config) -> std::io::Result<()> {
    let triggers = Triggers::default();
    let server = mcp_io_mio::StdioServer::stdio(Engine::new(config, everything::catalog()))?;
    server.run_timed(
        |event| triggers.respond(event),
        |engine, now| {
            for p in triggers.take() {
                match p {
                    // A refused replacement keeps the catalog; the fixture never adds a family.
                    Published::Catalog(c) => _ = engine.replace_catalog(*c),
                    Published::Updated(uri) => _ = engine.notify_resource_updated(uri),
                }
            }
            triggers.pace(engine, now)
        },
    )
}

fn serve_http(addr: SocketAddr, mut config: Config, edge: &EdgeOptions) -> std::io::Result<()> {
    // Loopback only: `Host` must name localhost (or an allowed host), and a browser's
    // `Origin` too.
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.loopback(true);
    edge.apply(&mut config, &mut http);
    let engine = HttpEngine::new(config, http, everything::catalog());
    raise_open_file_limit();
    // mio listens with a backlog of 1,024 (the standard library's is 128).
    let listener = mio::net::TcpListener::bind(addr)?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    let triggers = Triggers::default();
    let server = mcp_io_mio::HttpServer::new(listener, engine);
    server.run_timed(
        |event| {
            if let HttpEvent::Mcp(event) = event {
                triggers.respond(event);
            }
            None // `Authorization::Everyone`: no authorization events
        },
        |engine, now| {
            for p in triggers.take() {
                match p {
                    // A refused replacement keeps the catalog; the fixture never adds a family.
                    Published::Catalog(c) => _ = engine.replace_catalog(*c),
                    Published::Updated(uri) => _ = engine.notify_resource_updated(uri),
                }
            }
            triggers.pace(engine, now)
        },
    )
}
