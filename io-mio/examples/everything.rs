//! Serves the conformance `everything` fixture over Streamable HTTP (the default) or
//! stdio.
//!
//! ```text
//! cargo run --release -p mcp-io-mio --example everything                  # http://127.0.0.1:3000/mcp
//! cargo run --release -p mcp-io-mio --example everything -- --http 127.0.0.1:8080
//! cargo run --release -p mcp-io-mio --example everything -- --stdio
//! cargo run --release -p mcp-io-mio --example everything -- --connectome      # + connectome://…
//! cargo run --release -p mcp-io-mio --example everything -- --connectome-export declared.json
//! # as an OAuth 2.1 protected resource:
//! cargo run --release -p mcp-io-mio --example everything -- --oauth-issuer https://auth.example.com \
//!     --oauth-jwks jwks.json --public-url https://mcp.example.com/mcp
//! ```
//!
//! Over HTTP the server listens on loopback only (`127.0.0.1`, `[::1]`; port `0` picks a
//! free one) and prints `listening on http://ADDR/mcp` on stderr once it is bound, with
//! the actual address. Over stdio, stdout carries protocol frames only. Errors go to
//! stderr.
//!
//! With `--oauth-issuer` the server is a protected resource: it answers each
//! `HttpEvent::Authorize` itself, on the loop, with the engine's pure `JwtVerifier`
//! (feature `jwt`): `Verdict::Grant` with the token's principal, scopes and expiry, or
//! `Verdict::Unauthenticated`. The key set is read once, at start, from a file or from a
//! plain `http` URL on a loopback host (a blocking `GET`); this demo fetches nothing
//! over `https`.
//!
//! With `--connectome` the catalog also lists `connectome://declared`, `…/observed` and
//! `…/diff` (the engine answers their reads; `engine().connectome()` shows the same) and
//! `test_read_resource`, whose reads the fixture reports through its event
//! (`CallTool::report_read`).
//!
//! The slow tools (`test_tool_with_progress`, `test_logging_tool`, `test_tool_with_logging`) keep their
//! ticket and send each notification 50 ms after the previous one, then the result,
//! from the loop's own timer (`run_timed`): a client sees them arrive one by one, as the
//! conformance tool descriptions ask, without a thread. The task tools
//! (`mcp_fixture::tasks`: `slow_compute`, `failing_job`, ...) become tasks on the event
//! and finish from the same timer once their delay has passed.
//!
//! Built with the feature `tracing` and run with `RUST_LOG` set (`RUST_LOG=info`), the
//! demo prints each request's span on stderr as it closes (name, the conventions'
//! attributes, time busy):
//!
//! ```text
//! RUST_LOG=info cargo run -p mcp-io-mio --features tracing --example everything -- --stdio
//! ```

use mcp_engine::Commands;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use mcp_engine::http::{
    AllowedOrigins, Authorization, AuthorizeRequest, Grant, HttpConfig, HttpEngine, HttpEvent, JwtVerifier,
    Verdict,
};
use mcp_engine::{Config, Content, Engine, LogLevel, Ticket, ToolOutput, UnixTime};
use mcp_fixture as everything;
use mcp_fixture::connectome::ConnectomeOptions;
use mcp_fixture::edge::EdgeOptions;
use mcp_fixture::oauth::{Jwks, OAuthOptions};
use mcp_fixture::scale::ScaleOptions;

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
    Http(SocketAddr, Box<(EdgeOptions, OAuthOptions)>),
    Stdio,
}

/// This demo's `--oauth-jwks`.
const JWKS_USAGE: &str = "from a file, or a plain
                                  http URL on a loopback host (for https, save the key
                                  set to a file and give its path); read once, at
                                  start. Required with --oauth-issuer";

/// This demo's `--store`.
const STORE_USAGE: &str = "not here: this adapter keeps sessions and tasks in memory
                                  (the tokio demo has a PostgreSQL store; --node-name
                                  is refused too)";

fn usage() -> String {
    format!(
        "{USAGE}\n{}\n{}\n{}\n\nBoth:\n{}",
        everything::edge::USAGE,
        everything::oauth::usage(JWKS_USAGE),
        everything::scale::usage(STORE_USAGE),
        everything::connectome::USAGE
    )
}

/// Raises this process's open-file soft limit to its hard limit, so that the server can
/// hold as many connections as the system lets it (the default soft limit is often 1,024,
/// the engine's default `max_connections`).
fn raise_open_file_limit() {
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("cannot raise the open-file limit: {e}");
    }
}

/// With the feature `tracing` and `RUST_LOG` set: a subscriber that prints each request
/// span on stderr when it closes.
fn trace_when_asked() {
    #[cfg(feature = "tracing")]
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_env_filter(filter)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .init();
    }
}

fn main() -> ExitCode {
    trace_when_asked();
    let (mode, scale, connectome) = match parse(std::env::args().skip(1)) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => {
            eprintln!("{}", usage());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("everything: {e}\n{}", usage());
            return ExitCode::from(2);
        }
    };
    let mut config = everything::config();
    if let Err(e) = scale.apply(&mut config) {
        eprintln!("everything: {e}");
        return ExitCode::FAILURE;
    }
    let start = match &mode {
        Mode::Http(_, options) => options.1.dynamic(),
        Mode::Stdio => everything::Dynamic::default(),
    };
    if let Some(path) = connectome.export_to() {
        // The declared graph the demo would serve as connectome://declared, and exit.
        let d = everything::Dynamic { connectome: true, ..start };
        return match everything::connectome::export(path, &everything::catalog_with(d), &config, d) {
            Ok(hash) => {
                println!("{hash}  {}", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("everything: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let dynamic = connectome.dynamic(start);
    let result = match mode {
        Mode::Stdio => serve_stdio(config, dynamic),
        Mode::Http(addr, options) => serve_http(addr, config, &options.0, &options.1, dynamic),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("everything: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The mode the arguments ask for, with the key options; `None` for `--help`.
fn parse(
    args: impl Iterator<Item = String>,
) -> Result<Option<(Mode, ScaleOptions, ConnectomeOptions)>, String> {
    let mut mode = None;
    let mut edge = EdgeOptions::default();
    let mut oauth = OAuthOptions::default();
    let mut scale = ScaleOptions::default();
    let mut connectome = ConnectomeOptions::default();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if edge.take(&arg, || args.next())?
            || oauth.take(&arg, || args.next())?
            || scale.take(&arg, || args.next())?
            || connectome.take(&arg, || args.next())?
        {
            continue;
        }
        let next = match arg.as_str() {
            "--stdio" => Mode::Stdio,
            "--http" => {
                let addr = args.next_if(|a| !a.starts_with('-'));
                let addr = loopback_addr(addr.as_deref().unwrap_or(DEFAULT_ADDR))?;
                Mode::Http(addr, Box::default())
            }
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}")),
        };
        if mode.replace(next).is_some() {
            return Err("give one of --http and --stdio".to_owned());
        }
    }
    oauth.check(&edge)?;
    if scale.store().is_some() {
        return Err("--store: the mio demo keeps sessions in memory (the tokio demo has a store)".into());
    }
    if scale.node_name().is_some() {
        return Err("--node-name: the mio demo keeps tasks in memory (the tokio demo has a store)".into());
    }
    if oauth.is_on() && oauth.jwks().is_none() {
        return Err(
            "--oauth-issuer needs --oauth-jwks here (this demo does not read the issuer's metadata)".into()
        );
    }
    let mode = match mode {
        Some(Mode::Http(addr, ..)) => Mode::Http(addr, Box::new((edge, oauth))),
        Some(Mode::Stdio) if oauth.is_on() => return Err("--oauth-issuer is for --http".to_owned()),
        Some(Mode::Stdio) => Mode::Stdio,
        None => Mode::Http(loopback_addr(DEFAULT_ADDR)?, Box::new((edge, oauth))),
    };
    Ok(Some((mode, scale, connectome)))
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

/// A task tool's call (or task) waiting for its time to finish (`mcp_fixture::tasks`).
struct Delayed {
    ticket: Ticket,
    after: Duration,
    due: Option<Instant>,
    finish: everything::tasks::Finish,
}

/// What both engines do for a kept ticket.
trait Sink {
    fn step(&mut self, ticket: Ticket, step: Step);
    fn finish(&mut self, ticket: Ticket, finish: &everything::tasks::Finish);
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
            fn finish(&mut self, ticket: Ticket, finish: &everything::tasks::Finish) {
                use everything::tasks::Finish;
                // A cancelled call or task refuses the answer; nothing more to do.
                let _ = match finish {
                    Finish::Answer { text, is_error, .. } => {
                        let content = [Content::text(text)];
                        let mut output = ToolOutput::new(&content);
                        output.is_error = *is_error;
                        self.answer_tool(ticket, &output)
                    }
                    Finish::Fail { message, .. } => {
                        self.answer_error(ticket, mcp_engine::error::HostError::Internal(message))
                    }
                    Finish::Ask(requests) => everything::Step::with_input_required(requests, None, |ir| {
                        self.answer_input_required(ticket, ir)
                    }),
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
    delayed: RefCell<Vec<Delayed>>,
}

impl Triggers {
    fn respond(&self, mut event: mcp_engine::Event<'_>) {
        if let mcp_engine::Event::CallTool(call) = &mut event
            && self.task_tool(call)
        {
            return;
        }
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
            mcp_engine::Event::Cancelled(ticket) => {
                self.paced.borrow_mut().retain(|p| p.ticket != *ticket);
                self.delayed.borrow_mut().retain(|d| d.ticket != *ticket);
            }
            _ => {}
        }
        everything::respond(event);
    }

    /// Carries out a task tool's plan (`mcp_fixture::tasks`): the call becomes a task
    /// when the plan says so and the engine lets it, then ends now or after its delay,
    /// from `pace`. Returns whether `call` was a task tool's.
    fn task_tool(&self, call: &mut mcp_engine::event::CallTool<'_>) -> bool {
        use everything::tasks::{Finish, Plan};
        let responses = call.input_responses;
        let get = |k: &str| responses.get(k).and_then(|r| r.deserialize().ok());
        let Some(plan) =
            everything::tasks::plan(&call.tool.name, call.arguments.raw(), get, call.can_start_task)
        else {
            return false;
        };
        let finish = match plan {
            Plan::Task(f) => {
                // Refused (the bounds): it stays a plain call and ends the same way.
                let _ = call.start_task(&mcp_engine::TaskOptions::new());
                f
            }
            Plan::Call(f) => f,
        };
        let after = match &finish {
            Finish::Answer { after, .. } | Finish::Fail { after, .. } => *after,
            Finish::Ask(_) => Duration::ZERO,
        };
        self.delayed.borrow_mut().push(Delayed { ticket: call.ticket, after, due: None, finish });
        true
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
        let mut next = paced.iter().filter_map(|p| p.due).min();
        let mut delayed = self.delayed.borrow_mut();
        delayed.retain_mut(|d| {
            let due = *d.due.get_or_insert(now + d.after);
            if due <= now {
                engine.finish(d.ticket, &d.finish);
                return false;
            }
            next = Some(next.map_or(due, |n| n.min(due)));
            true
        });
        next
    }
}

fn serve_stdio(config: Config, dynamic: everything::Dynamic) -> std::io::Result<()> {
    let triggers = Triggers { dynamic: Cell::new(dynamic), ..Triggers::default() };
    let mut engine = Engine::new(config, everything::catalog_with(dynamic));
    let declared = everything::connectome::declarations(dynamic);
    engine.connectome().set_declarations(declared).map_err(std::io::Error::other)?;
    let server = mcp_io_mio::StdioServer::stdio(engine)?;
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

fn serve_http(
    addr: SocketAddr,
    mut config: Config,
    edge: &EdgeOptions,
    oauth: &OAuthOptions,
    dynamic: everything::Dynamic,
) -> std::io::Result<()> {
    // Loopback only: `Host` must name localhost (or an allowed host), and a browser's
    // `Origin` too.
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.loopback(true);
    edge.apply(&mut config, &mut http);
    raise_open_file_limit();
    // mio listens with a backlog of 1,024 (the standard library's is 128).
    let listener = mio::net::TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    let resource = oauth.resource(edge, bound);
    let tokens = match oauth.issuer() {
        Some(issuer) => Some(Tokens::load(issuer, &resource, oauth.jwks()).map_err(std::io::Error::other)?),
        None => None,
    };
    if let Some(url) = oauth.apply(&resource, &mut http).map_err(std::io::Error::other)? {
        eprintln!("protected resource {resource}, its metadata at {url}");
    }
    let mut engine = HttpEngine::new(config, http, everything::catalog_with(dynamic));
    let declared = everything::connectome::declarations(dynamic);
    engine.connectome().set_declarations(declared).map_err(std::io::Error::other)?;
    eprintln!("listening on http://{bound}/mcp");
    let triggers = Triggers { dynamic: Cell::new(dynamic), ..Triggers::default() };
    let server = mcp_io_mio::HttpServer::new(listener, engine);
    server.run_timed(
        |event| match event {
            HttpEvent::Mcp(event) => {
                triggers.respond(event);
                None
            }
            // Only with `--oauth-issuer` (a protected resource asks about every token).
            HttpEvent::Authorize(request) => Some(match &tokens {
                Some(tokens) => tokens.verdict(&request),
                None => Verdict::Failed,
            }),
            _ => None,
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

/// The tokens of `--oauth-issuer`: JWT access tokens for the resource, verified on the
/// loop with the engine's pure verifier (no I/O; a token seen before is found in its
/// cache).
struct Tokens(JwtVerifier);

impl Tokens {
    /// A verifier of `issuer`'s tokens for `resource`, with the key set of `jwks`.
    fn load(issuer: &str, resource: &str, jwks: Option<&Jwks>) -> Result<Self, String> {
        let document = match jwks {
            Some(Jwks::File(path)) => {
                std::fs::read(path).map_err(|e| format!("key set file {}: {e}", path.display()))?
            }
            Some(Jwks::Url(url)) => fetch_loopback(url).map_err(|e| format!("key set {url}: {e}"))?,
            None => return Err("--oauth-issuer needs --oauth-jwks".to_owned()),
        };
        let mut verifier = JwtVerifier::new(issuer, resource);
        let keys = verifier.set_jwks(&document).map_err(|e| format!("key set: {e}"))?;
        eprintln!("key set loaded: {keys} keys");
        Ok(Self(verifier))
    }

    /// The verdict on the request's bearer token (the engine answers a request without
    /// one, or with a malformed `Authorization`, itself).
    fn verdict(&self, request: &AuthorizeRequest<'_>) -> Verdict {
        let token = request
            .headers
            .get("authorization")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let Some(token) = token else { return Verdict::Unauthenticated };
        match self.0.verify(token, UnixTime::from_system_time(SystemTime::now())) {
            Ok(t) => Verdict::Grant(
                Grant::new(t.principal()).scopes(request.scopes.set_of(t.scopes())).expires(t.expiry()),
            ),
            // Never the token or a claim in a log.
            Err(_) => Verdict::Unauthenticated,
        }
    }
}

/// The largest key set read.
const MAX_JWKS: u64 = 256 * 1024;

/// The body of a `GET` of `url`, a plain `http` URL on a loopback host (blocking, at
/// start: an HTTP/1.0 request, so the answer is never chunked; no redirect followed).
fn fetch_loopback(url: &str) -> Result<Vec<u8>, String> {
    use std::io::{Read as _, Write as _};
    use std::net::ToSocketAddrs as _;

    let rest =
        url.get(..7).filter(|s| s.eq_ignore_ascii_case("http://")).map(|_| &url[7..]).ok_or(
            "this demo fetches a key set over plain http from a loopback host only: save it to a file",
        )?;
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
    let with_port = if authority.rsplit_once(':').is_some_and(|(_, p)| !p.contains(']')) {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let addrs: Vec<SocketAddr> = with_port.to_socket_addrs().map_err(|e| e.to_string())?.collect();
    if addrs.is_empty() || !addrs.iter().all(|a| a.ip().is_loopback()) {
        return Err("not a loopback host: this demo fetches over plain http from loopback only".to_owned());
    }
    let timeout = Duration::from_secs(10);
    let mut stream = std::net::TcpStream::connect_timeout(&addrs[0], timeout).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {authority}\r\nAccept: application/json\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream.take(MAX_JWKS + 16 * 1024).read_to_end(&mut answer).map_err(|e| e.to_string())?;
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no complete answer")?;
    let head = String::from_utf8_lossy(&answer[..end]);
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!("answered {status}"));
    }
    let body = answer.split_off(end + 4);
    if body.len() as u64 > MAX_JWKS {
        return Err(format!("over {MAX_JWKS} bytes"));
    }
    Ok(body)
}
