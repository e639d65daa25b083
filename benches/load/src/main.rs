//! The load driver: starts each server binary as a child process, drives it with `echo`
//! tool calls over stdio or HTTP (stateless 2026-07-28, or inside 2025-11-25 sessions),
//! and prints a markdown table of medians.
//!
//! ```text
//! cargo run --release --manifest-path benches/load/Cargo.toml -- [--quick]
//! ```
//!
//! See README.md beside Cargo.toml for the method.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex, mpsc};
use std::time::{Duration, Instant};

use mcp_load::{AllocStats, STATS_ENV};
use memchr::memmem;

const USAGE: &str = "\
usage: load [--quick] [--requests N] [--rounds R] [--servers LIST] [--scenarios LIST] [--depth D]
            [--pg-url URL] [--no-build]

Drives each server with tools/call `echo` requests and prints a markdown table of medians.

  --quick            10,000 requests, 2 rounds (default: 100,000 requests, 5 rounds)
  --requests N       timed requests per run
  --rounds R         rounds; each runs every server once per scenario, in rotated order
  --servers LIST     comma-separated, of: mio,tokio,tokio-ct,tokio-mem,tokio-pg,rmcp,
                     rmcp-flush,floor (default: all, tokio-pg only with --pg-url;
                     tokio-ct is the tokio adapter on a current-thread runtime,
                     tokio-mem and tokio-pg the tokio adapter with a session store, in
                     memory and in PostgreSQL, HTTP only; rmcp-flush is rmcp on hyper
                     with pipeline_flush, HTTP only)
  --scenarios LIST   comma-separated, of: stdio-pipelined,stdio-64,http-1,http-4,
                     http-1-pipelined,http-4-pipelined,session-1,session-4,
                     session-1-pipelined,session-4-pipelined (default: all; session-*
                     open a 2025-11-25 session on each connection first)
  --depth D          requests kept unanswered on each connection in the *-pipelined
                     HTTP scenarios, 1 to 900 (default: 16)
  --pg-url URL       the PostgreSQL database tokio-pg keeps its sessions in (schema
                     mcp_load, created if absent)
  --no-build         do not build the server binaries first (they must be beside this one)
  -h, --help         print this help";

/// The text every request asks `echo` to return.
const ECHO_TEXT: &str = "hello";
/// What every response must contain: the echoed text as a text block's `text`.
const MARKER: &[u8] = br#""text":"hello""#;
/// The default `--depth`: requests in flight on each pipelined HTTP connection.
const DEFAULT_DEPTH: usize = 16;
/// The pipelined HTTP scenarios number their requests with the ids `FIRST_ID..` in a
/// cycle of this many, all of three digits, so that each response's id can be checked.
const ID_CYCLE: usize = 900;
const FIRST_ID: usize = 100;
/// In a session a request id is never used twice (2025-11-25, "Requests"): the session
/// scenarios count their ids up from this one, all of [`SESSION_ID_DIGITS`] digits.
const SESSION_FIRST_ID: usize = 1_000_000;
const SESSION_ID_DIGITS: usize = 7;
/// The revision the session scenarios open their sessions with.
const SESSION_REVISION: &str = "2025-11-25";
/// The most one run may take before its server is killed.
const RUN_DEADLINE: Duration = Duration::from_secs(600);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Server {
    Mio,
    Tokio,
    /// The tokio adapter on tokio's current-thread runtime.
    TokioCt,
    /// The tokio adapter with a `MemorySessionStore` (HTTP only).
    TokioMem,
    /// The tokio adapter with a `PgSessionStore` on `--pg-url` (HTTP only).
    TokioPg,
    Rmcp,
    /// rmcp over hyper's HTTP/1 server with `pipeline_flush` (HTTP only).
    RmcpFlush,
    Floor,
}

impl Server {
    const ALL: [Self; 8] = [
        Self::Mio,
        Self::Tokio,
        Self::TokioCt,
        Self::TokioMem,
        Self::TokioPg,
        Self::Rmcp,
        Self::RmcpFlush,
        Self::Floor,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Mio => "mio",
            Self::Tokio => "tokio",
            Self::TokioCt => "tokio-ct",
            Self::TokioMem => "tokio-mem",
            Self::TokioPg => "tokio-pg",
            Self::Rmcp => "rmcp",
            Self::RmcpFlush => "rmcp-flush",
            Self::Floor => "floor",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Mio => "ours, mio adapter",
            Self::Tokio => "ours, tokio adapter",
            Self::TokioCt => "ours, tokio adapter, current-thread runtime",
            Self::TokioMem => "ours, tokio adapter, `MemorySessionStore`",
            Self::TokioPg => "ours, tokio adapter, `PgSessionStore`",
            Self::Rmcp => "rmcp 3.11.0",
            Self::RmcpFlush => "rmcp 3.11.0, hyper `pipeline_flush`",
            Self::Floor => "floor (no parsing)",
        }
    }

    fn binary(self) -> &'static str {
        match self {
            Self::Mio => "srv-mio",
            Self::Tokio | Self::TokioCt | Self::TokioMem | Self::TokioPg => "srv-tokio",
            Self::Rmcp | Self::RmcpFlush => "srv-rmcp",
            Self::Floor => "srv-floor",
        }
    }

    /// Whether this server runs in `scenario` (the `pipeline_flush` variant differs from
    /// plain rmcp over HTTP only).
    fn runs(self, scenario: Scenario) -> bool {
        !(matches!(self, Self::RmcpFlush | Self::TokioMem | Self::TokioPg) && scenario.is_stdio())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    /// Every request written as fast as the server takes them, responses read meanwhile.
    StdioPipelined,
    /// At most this many requests unanswered at once.
    StdioWindow(usize),
    /// This many keep-alive connections, each sending its next request once the last is
    /// answered.
    Http(usize),
    /// `conns` keep-alive connections, each keeping `depth` requests unanswered (HTTP/1.1
    /// pipelining).
    HttpPipelined { conns: usize, depth: usize },
    /// As [`Http`](Self::Http), each connection first opening a 2025-11-25 session of its
    /// own (`initialize`, `notifications/initialized`) and sending every request in it.
    Session(usize),
    /// As [`HttpPipelined`](Self::HttpPipelined), in a session per connection.
    SessionPipelined { conns: usize, depth: usize },
}

impl Scenario {
    const ALL: [Self; 10] = [
        Self::StdioPipelined,
        Self::StdioWindow(64),
        Self::Http(1),
        Self::Http(4),
        Self::HttpPipelined { conns: 1, depth: DEFAULT_DEPTH },
        Self::HttpPipelined { conns: 4, depth: DEFAULT_DEPTH },
        Self::Session(1),
        Self::Session(4),
        Self::SessionPipelined { conns: 1, depth: DEFAULT_DEPTH },
        Self::SessionPipelined { conns: 4, depth: DEFAULT_DEPTH },
    ];

    fn name(self) -> String {
        match self {
            Self::StdioPipelined => "stdio-pipelined".into(),
            Self::StdioWindow(n) => format!("stdio-{n}"),
            Self::Http(n) => format!("http-{n}"),
            Self::HttpPipelined { conns, .. } => format!("http-{conns}-pipelined"),
            Self::Session(n) => format!("session-{n}"),
            Self::SessionPipelined { conns, .. } => format!("session-{conns}-pipelined"),
        }
    }

    fn label(self) -> String {
        let conns = |n: usize| if n == 1 { "1 connection".to_owned() } else { format!("{n} connections") };
        match self {
            Self::StdioPipelined => "stdio, fully pipelined".into(),
            Self::StdioWindow(n) => format!("stdio, {n} in flight"),
            Self::Http(n) => format!("HTTP keep-alive, {}", conns(n)),
            Self::HttpPipelined { conns: n, depth } => {
                format!("HTTP pipelined, {}, {depth} in flight each", conns(n))
            }
            Self::Session(n) => format!("HTTP session keep-alive, {}", conns(n)),
            Self::SessionPipelined { conns: n, depth } => {
                format!("HTTP session pipelined, {}, {depth} in flight each", conns(n))
            }
        }
    }

    fn is_stdio(self) -> bool {
        matches!(self, Self::StdioPipelined | Self::StdioWindow(_))
    }

    fn is_session(self) -> bool {
        matches!(self, Self::Session(_) | Self::SessionPipelined { .. })
    }
}

struct Opts {
    requests: usize,
    rounds: usize,
    servers: Vec<Server>,
    scenarios: Vec<Scenario>,
    build: bool,
    quick: bool,
    /// Where `tokio-pg` keeps its sessions.
    pg_url: Option<String>,
}

fn parse_opts() -> Result<Option<Opts>, String> {
    let mut o = Opts {
        requests: 100_000,
        rounds: 5,
        servers: Vec::new(),
        scenarios: Scenario::ALL.to_vec(),
        build: true,
        quick: false,
        pg_url: None,
    };
    let (mut requests, mut rounds, mut depth) = (None, None, DEFAULT_DEPTH);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--quick" => o.quick = true,
            "--requests" => requests = Some(parse_count(&value("--requests")?)?),
            "--rounds" => rounds = Some(parse_count(&value("--rounds")?)?),
            "--servers" => {
                o.servers = parse_list(&value("--servers")?, &Server::ALL, |s| s.name().to_owned())?;
            }
            "--scenarios" => o.scenarios = parse_list(&value("--scenarios")?, &Scenario::ALL, |s| s.name())?,
            "--depth" => {
                depth = parse_count(&value("--depth")?)?;
                if depth > ID_CYCLE {
                    return Err(format!("--depth is at most {ID_CYCLE}"));
                }
            }
            "--pg-url" => o.pg_url = Some(value("--pg-url")?),
            "--no-build" => o.build = false,
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if o.servers.is_empty() {
        let pg = o.pg_url.is_some();
        o.servers = Server::ALL.into_iter().filter(|&s| s != Server::TokioPg || pg).collect();
    }
    if o.servers.contains(&Server::TokioPg) && o.pg_url.is_none() {
        return Err("tokio-pg needs --pg-url".to_owned());
    }
    if o.quick {
        (o.requests, o.rounds) = (10_000, 2);
    }
    o.requests = requests.unwrap_or(o.requests);
    o.rounds = rounds.unwrap_or(o.rounds);
    for s in &mut o.scenarios {
        if let Scenario::HttpPipelined { depth: d, .. } | Scenario::SessionPipelined { depth: d, .. } = s {
            *d = depth;
        }
    }
    Ok(Some(o))
}

fn parse_count(s: &str) -> Result<usize, String> {
    match s.replace('_', "").parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{s:?} is not a positive count")),
    }
}

fn parse_list<T: Copy>(s: &str, all: &[T], name: impl Fn(&T) -> String) -> Result<Vec<T>, String> {
    s.split(',')
        .map(|item| {
            all.iter().find(|t| name(t) == item).copied().ok_or_else(|| format!("unknown item {item:?}"))
        })
        .collect()
}

fn main() -> ExitCode {
    let opts = match parse_opts() {
        Ok(Some(o)) => o,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("load: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if cfg!(debug_assertions) {
        eprintln!("load: build with --release: a debug build measures nothing useful");
        return ExitCode::from(2);
    }
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("load: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(opts: &Opts) -> io::Result<()> {
    let bin_dir = std::env::current_exe()?.parent().map(Path::to_path_buf).unwrap_or_default();
    if opts.build {
        build_servers()?;
    }
    for s in &opts.servers {
        let path = bin_dir.join(s.binary());
        if !path.is_file() {
            return Err(io::Error::other(format!(
                "{} is missing: build the package's binaries",
                path.display()
            )));
        }
    }
    let warmup = (opts.requests / 10).clamp(500, 10_000);
    let stdio = StdioLoad::new(warmup + opts.requests);
    // Per scenario and server, one sample per round, in round order.
    let mut results: Vec<(Scenario, Server, Vec<Sample>)> = Vec::new();
    for &scenario in &opts.scenarios {
        for &server in opts.servers.iter().filter(|s| s.runs(scenario)) {
            results.push((scenario, server, Vec::new()));
        }
    }
    eprintln!(
        "{} requests per run after {warmup} warm-up requests, {} rounds, {} cores",
        opts.requests,
        opts.rounds,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for round in 0..opts.rounds {
        for &scenario in &opts.scenarios {
            let servers: Vec<Server> = opts.servers.iter().copied().filter(|s| s.runs(scenario)).collect();
            let n = servers.len();
            for i in 0..n {
                let server = servers[(i + round) % n];
                let job = Job {
                    server,
                    scenario,
                    warmup,
                    requests: opts.requests,
                    stdio: &stdio,
                    pg_url: opts.pg_url.as_deref(),
                };
                let sample = job.run(&bin_dir).map_err(|e| {
                    io::Error::new(e.kind(), format!("{} / {}: {e}", scenario.name(), server.name()))
                })?;
                eprintln!(
                    concat!(
                        "round {}/{} {:<19} {:<10} {:>10.0} req/s {:>7.2} µs CPU/req ",
                        "{:>8.3} allocs/req {:>6.1} MiB peak {:>6.2} µs driver CPU/req{}"
                    ),
                    round + 1,
                    opts.rounds,
                    scenario.name(),
                    server.name(),
                    sample.rps,
                    sample.cpu_us,
                    sample.allocs,
                    sample.rss_mib,
                    sample.driver_cpu_us,
                    if sample.sse > 0.0 {
                        format!(" {:>5.1}% SSE", sample.sse * 100.0)
                    } else {
                        String::new()
                    }
                );
                if let Some(r) = results.iter_mut().find(|r| r.0 == scenario && r.1 == server) {
                    r.2.push(sample);
                }
            }
        }
    }
    print_report(opts, warmup, &results);
    Ok(())
}

/// Builds the server binaries in release, beside this one: `cargo run` builds only the
/// binary it runs.
fn build_servers() -> io::Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let status = Command::new(cargo)
        .args(["build", "--release", "--quiet", "--bins", "--manifest-path"])
        .arg(&manifest)
        .status()?;
    if !status.success() {
        return Err(io::Error::other(format!("building the servers failed: {status}")));
    }
    Ok(())
}

/// One run's measurements, per timed request.
#[derive(Clone, Copy, Debug)]
struct Sample {
    rps: f64,
    /// Server CPU time (user and system, all threads), microseconds per request.
    cpu_us: f64,
    /// The driver's own CPU time (all its threads), microseconds per request.
    driver_cpu_us: f64,
    allocs: f64,
    alloc_bytes: f64,
    /// VmHWM: the server's peak resident set over its whole life.
    rss_mib: f64,
    /// The share of HTTP responses (warm-up and timed) whose body was an SSE stream.
    sse: f64,
}

/// All stdio requests of a run, ids counting from 1, as one buffer.
struct StdioLoad {
    bytes: Vec<u8>,
    /// Where each line starts, and the end of the last.
    starts: Vec<usize>,
}

impl StdioLoad {
    fn new(lines: usize) -> Self {
        let mut bytes = Vec::with_capacity(lines * 240);
        let mut starts = Vec::with_capacity(lines + 1);
        for id in 1..=lines {
            starts.push(bytes.len());
            bytes.extend_from_slice(request_body(id).as_bytes());
            bytes.push(b'\n');
        }
        starts.push(bytes.len());
        Self { bytes, starts }
    }

    /// Lines `from..to`, zero-based.
    fn lines(&self, from: usize, to: usize) -> &[u8] {
        &self.bytes[self.starts[from]..self.starts[to]]
    }
}

/// A 2026-07-28 `tools/call` of `echo`: the revision's per-request `_meta` and no session.
fn request_body(id: usize) -> String {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","#,
            r#""params":{{"name":"echo","arguments":{{"text":"{}"}},"#,
            r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
            r#""io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
        ),
        id, ECHO_TEXT
    )
}

/// The whole HTTP request, with the 2026-07-28 standard headers.
fn http_request(addr: SocketAddr, id: usize) -> Vec<u8> {
    let body = request_body(id);
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A POST to `/mcp` as a 2025-11-25 client sends it: in a session (`Mcp-Session-Id` and
/// `MCP-Protocol-Version`), or without (the `initialize` that opens it).
fn session_post(addr: SocketAddr, session: Option<&str>, body: &str) -> Vec<u8> {
    let session = session.map_or(String::new(), |id| {
        format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: {SESSION_REVISION}\r\n")
    });
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The `initialize` each connection of a session scenario opens its session with.
fn initialize_body() -> String {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{}","#,
            r#""capabilities":{{}},"clientInfo":{{"name":"mcp-load","version":"{}"}}}}}}"#
        ),
        SESSION_REVISION,
        env!("CARGO_PKG_VERSION")
    )
}

const INITIALIZED_BODY: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A `tools/call` of `echo` in a session: no `_meta`, the session carries the revision.
fn session_call_body(id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{ECHO_TEXT}"}}}}}}"#
    )
}

/// How the connections of an HTTP run talk to the server.
#[derive(Clone, Copy)]
enum Wire<'a> {
    /// Stateless 2026-07-28 requests from one cycle shared by every connection.
    Stateless(&'a HttpRequests),
    /// A 2025-11-25 session per connection. Not `strict` for the floor, which answers
    /// `initialize` like any request and names no session.
    Session { strict: bool },
}

/// What one connection sends.
enum Requests<'a> {
    /// A cycle shared by every connection of the run (the stateless wire).
    Cycle(&'a HttpRequests),
    /// The calls of one session.
    Session(SessionRequests),
}

impl Requests<'_> {
    fn write(&mut self, w: &mut impl Write, seq: usize, k: usize) -> io::Result<()> {
        match self {
            Self::Cycle(r) => r.write(w, seq, k),
            Self::Session(r) => r.write(w, seq, k),
        }
    }

    /// The id the response to the `seq`-th request must carry, when ids are checked.
    fn id(&self, seq: usize) -> Option<usize> {
        match self {
            Self::Cycle(r) => r.check_ids.then_some(FIRST_ID + seq % ID_CYCLE),
            Self::Session(r) => r.check_ids.then(|| session_call_id(seq)),
        }
    }

    fn checks_ids(&self) -> bool {
        match self {
            Self::Cycle(r) => r.check_ids,
            Self::Session(r) => r.check_ids,
        }
    }
}

/// The id of the `seq`-th call of a session: counting up, never reused (it wraps only
/// after 9,000,000 calls on one connection).
fn session_call_id(seq: usize) -> usize {
    SESSION_FIRST_ID + seq % (10usize.pow(SESSION_ID_DIGITS as u32) - SESSION_FIRST_ID)
}

/// The `tools/call` requests of one session, each with an id of its own: one request's
/// bytes, with the id's digits written in for each request.
struct SessionRequests {
    template: Vec<u8>,
    /// Where the id's [`SESSION_ID_DIGITS`] digits lie in `template`.
    id_at: usize,
    check_ids: bool,
    /// The requests of one write, put together.
    out: Vec<u8>,
}

impl SessionRequests {
    fn new(addr: SocketAddr, session: &str, check_ids: bool) -> Self {
        let template = session_post(addr, Some(session), &session_call_body(SESSION_FIRST_ID));
        let id_at = memmem::find(&template, br#""id":"#).expect("the call has an id") + 5;
        Self { template, id_at, check_ids, out: Vec::with_capacity(16 * 1024) }
    }

    /// Writes the requests `seq..seq + k` of the session with one write.
    fn write(&mut self, w: &mut impl Write, seq: usize, k: usize) -> io::Result<()> {
        self.out.clear();
        for i in 0..k {
            let at = self.out.len() + self.id_at;
            self.out.extend_from_slice(&self.template);
            write_digits(&mut self.out[at..at + SESSION_ID_DIGITS], session_call_id(seq + i));
        }
        w.write_all(&self.out)
    }
}

/// Writes `n` in decimal into all of `out`, with leading zeros.
fn write_digits(out: &mut [u8], mut n: usize) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// `"id":N`: what the body answering request `N` contains.
struct IdPattern {
    buf: [u8; 32],
    len: usize,
}

impl IdPattern {
    fn new(id: usize) -> Self {
        let mut buf = [0u8; 32];
        let mut cur = io::Cursor::new(&mut buf[..]);
        write!(cur, r#""id":{id}"#).expect("an id fits");
        let len = cur.position() as usize;
        Self { buf, len }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// The requests each HTTP connection sends, in a cycle, as one buffer.
struct HttpRequests {
    bytes: Vec<u8>,
    /// Where each request starts, and the end of the last.
    starts: Vec<usize>,
    /// Whether the responses' ids are checked (the cycle's ids are `FIRST_ID..`).
    check_ids: bool,
}

impl HttpRequests {
    /// The same request, id 1, again and again; responses' ids are not checked.
    fn single(addr: SocketAddr) -> Self {
        let bytes = http_request(addr, 1);
        Self { starts: vec![0, bytes.len()], bytes, check_ids: false }
    }

    /// [`ID_CYCLE`] requests with the ids `FIRST_ID..`, all of the same length, so that
    /// the `k`-th response on a connection can be checked to answer the `k`-th request.
    fn numbered(addr: SocketAddr, check_ids: bool) -> Self {
        let mut bytes = Vec::new();
        let mut starts = Vec::with_capacity(ID_CYCLE + 1);
        for id in FIRST_ID..FIRST_ID + ID_CYCLE {
            starts.push(bytes.len());
            bytes.extend_from_slice(&http_request(addr, id));
        }
        starts.push(bytes.len());
        Self { bytes, starts, check_ids }
    }

    fn count(&self) -> usize {
        self.starts.len() - 1
    }

    /// Writes `k` requests, from the `seq`-th sent on the connection, with one write, or two
    /// where the cycle wraps.
    fn write(&self, w: &mut impl Write, seq: usize, k: usize) -> io::Result<()> {
        let mut i = seq % self.count();
        let mut left = k;
        while left > 0 {
            let end = self.count().min(i + left);
            w.write_all(&self.bytes[self.starts[i]..self.starts[end]])?;
            left -= end - i;
            i = 0;
        }
        Ok(())
    }
}

struct Job<'a> {
    server: Server,
    scenario: Scenario,
    warmup: usize,
    requests: usize,
    stdio: &'a StdioLoad,
    pg_url: Option<&'a str>,
}

/// What the driver reads of a server process at both ends of the timed window.
struct Snapshot {
    at: Instant,
    cpu_ns: u64,
    /// The driver's CPU time, every thread, ended ones included.
    driver_cpu_ns: u64,
    alloc: AllocStats,
    /// `VmHWM` so far, in KiB.
    peak_rss_kib: u64,
}

impl Job<'_> {
    fn run(&self, bin_dir: &Path) -> io::Result<Sample> {
        static RUN: AtomicU64 = AtomicU64::new(0);
        let sock = std::env::temp_dir().join(format!(
            "mcp-load-{}-{}.sock",
            std::process::id(),
            RUN.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&sock);
        let mut cmd = Command::new(bin_dir.join(self.server.binary()));
        cmd.env(STATS_ENV, &sock).stderr(Stdio::piped());
        if self.server == Server::RmcpFlush {
            cmd.env("SRV_RMCP_PIPELINE_FLUSH", "1");
        }
        if self.server == Server::TokioCt {
            cmd.env("SRV_TOKIO_CURRENT_THREAD", "1");
        }
        match (self.server, self.pg_url) {
            (Server::TokioMem, _) => {
                cmd.env("SRV_TOKIO_STORE", "memory");
            }
            (Server::TokioPg, Some(url)) => {
                cmd.env("SRV_TOKIO_STORE", url);
            }
            _ => {}
        }
        if matches!(self.server, Server::Rmcp | Server::RmcpFlush) && self.scenario.is_session() {
            // rmcp's stateful mode (our servers serve both wires on one endpoint).
            cmd.env("SRV_RMCP_SESSIONS", "1");
        }
        if self.scenario.is_stdio() {
            cmd.arg("--stdio").stdin(Stdio::piped()).stdout(Stdio::piped());
        } else {
            cmd.args(["--http", "127.0.0.1:0"]).stdin(Stdio::null()).stdout(Stdio::null());
        }
        let mut child = Proc::spawn(cmd, sock)?;
        let result = self.drive(&mut child);
        let result = result.map_err(|e| {
            let tail = child.stderr_tail();
            if tail.is_empty() { e } else { io::Error::new(e.kind(), format!("{e}; server stderr:\n{tail}")) }
        });
        child.finish();
        result
    }

    fn drive(&self, p: &mut Proc) -> io::Result<Sample> {
        p.wait_for_stats()?;
        // The floor answers every request with the same fixed id, and opens no session.
        let floor = self.server == Server::Floor;
        let (before, after, sse) = match self.scenario {
            Scenario::StdioPipelined | Scenario::StdioWindow(_) => {
                let (before, after) = self.drive_stdio(p)?;
                (before, after, 0.0)
            }
            Scenario::Http(conns) => {
                let addr = p.http_addr()?;
                self.drive_http(p, addr, Wire::Stateless(&HttpRequests::single(addr)), conns, 1)?
            }
            Scenario::HttpPipelined { conns, depth } => {
                let addr = p.http_addr()?;
                let requests = HttpRequests::numbered(addr, !floor);
                self.drive_http(p, addr, Wire::Stateless(&requests), conns, depth)?
            }
            Scenario::Session(conns) => {
                let addr = p.http_addr()?;
                self.drive_http(p, addr, Wire::Session { strict: !floor }, conns, 1)?
            }
            Scenario::SessionPipelined { conns, depth } => {
                let addr = p.http_addr()?;
                self.drive_http(p, addr, Wire::Session { strict: !floor }, conns, depth)?
            }
        };
        let n = self.requests as f64;
        let secs = after.at.duration_since(before.at).as_secs_f64();
        Ok(Sample {
            rps: n / secs,
            cpu_us: after.cpu_ns.saturating_sub(before.cpu_ns) as f64 / 1e3 / n,
            driver_cpu_us: after.driver_cpu_ns.saturating_sub(before.driver_cpu_ns) as f64 / 1e3 / n,
            allocs: after.alloc.allocs.saturating_sub(before.alloc.allocs) as f64 / n,
            alloc_bytes: after.alloc.bytes.saturating_sub(before.alloc.bytes) as f64 / n,
            rss_mib: after.peak_rss_kib as f64 / 1024.0,
            sse,
        })
    }

    fn drive_stdio(&self, p: &mut Proc) -> io::Result<(Snapshot, Snapshot)> {
        let mut stdin = p.child.stdin.take().expect("piped stdin");
        let mut stdout = p.child.stdout.take().expect("piped stdout");
        let mut lines = Lines::new();
        let (w, n) = (self.warmup, self.requests);
        windowed(self.stdio, &mut stdin, &mut stdout, &mut lines, 0, w, 64)?;
        let before = p.snapshot()?;
        match self.scenario {
            Scenario::StdioWindow(window) => {
                windowed(self.stdio, &mut stdin, &mut stdout, &mut lines, w, w + n, window)?;
            }
            _ => std::thread::scope(|s| -> io::Result<()> {
                let all = self.stdio.lines(w, w + n);
                let writer = s.spawn(|| stdin.write_all(all));
                let mut done = 0;
                while done < n {
                    done += lines.read(&mut stdout)?;
                }
                writer.join().expect("the writer does not panic")
            })?,
        }
        let after = p.snapshot()?;
        lines.check()?;
        // Closing stdin ends the server.
        drop(stdin);
        p.child.stdout = Some(stdout);
        Ok((before, after))
    }

    /// Drives `conns` connections, each in its own thread, each keeping `depth` requests
    /// unanswered (1: the next request is sent once the last response is read). Returns
    /// the snapshots and the share of responses that were SSE streams.
    fn drive_http(
        &self,
        p: &Proc,
        addr: SocketAddr,
        wire: Wire<'_>,
        conns: usize,
        depth: usize,
    ) -> io::Result<(Snapshot, Snapshot, f64)> {
        let ready = Barrier::new(conns + 1);
        let go = Barrier::new(conns + 1);
        let failed = AtomicBool::new(false);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..conns)
                .map(|i| {
                    let share = |total: usize| total / conns + usize::from(i < total % conns);
                    let (warmup, timed) = (share(self.warmup), share(self.requests));
                    let (ready, go, failed) = (&ready, &go, &failed);
                    // The connection is handed back, so that it stays open until the
                    // closing snapshot: a server thread serving it must not exit first.
                    s.spawn(move || -> io::Result<(Instant, HttpConn<'_>)> {
                        // A session is opened before the warm-up, outside the timed window.
                        let conn = match wire {
                            Wire::Stateless(requests) => HttpConn::connect(addr, Requests::Cycle(requests)),
                            Wire::Session { strict } => HttpConn::open_session(addr, strict),
                        };
                        let warmed = conn.and_then(|mut c| {
                            c.run(warmup, depth)?;
                            Ok(c)
                        });
                        if warmed.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        ready.wait();
                        go.wait();
                        let mut c = warmed?;
                        if failed.load(Ordering::Relaxed) {
                            return Ok((Instant::now(), c));
                        }
                        c.run(timed, depth)?;
                        let end = Instant::now();
                        c.check()?;
                        Ok((end, c))
                    })
                })
                .collect();
            ready.wait();
            let before = if failed.load(Ordering::Relaxed) { None } else { p.snapshot().ok() };
            let start = Instant::now();
            go.wait();
            let mut end = start;
            let mut open = Vec::with_capacity(conns);
            for w in workers {
                let (done, conn) = w.join().expect("a connection thread does not panic")?;
                end = end.max(done);
                open.push(conn);
            }
            let Some(mut before) = before else {
                return Err(io::Error::other("warm-up failed or the server's counters could not be read"));
            };
            before.at = start;
            let mut after = p.snapshot()?;
            after.at = end;
            let sse = open.iter().map(|c| c.sse).sum::<usize>() as f64
                / open.iter().map(|c| c.read).sum::<usize>() as f64;
            drop(open);
            Ok((before, after, sse))
        })
    }
}

/// Sends lines `from..to`, keeping at most `window` unanswered, until all are answered.
fn windowed(
    load: &StdioLoad,
    stdin: &mut ChildStdin,
    stdout: &mut ChildStdout,
    lines: &mut Lines,
    from: usize,
    to: usize,
    window: usize,
) -> io::Result<()> {
    let mut next = to.min(from + window);
    stdin.write_all(load.lines(from, next))?;
    let mut done = 0;
    while done < to - from {
        let k = lines.read(stdout)?;
        done += k;
        let more = (to - next).min(k);
        if more > 0 {
            stdin.write_all(load.lines(next, next + more))?;
            next += more;
        }
    }
    Ok(())
}

/// Reads response lines, counting them and checking each carries the echoed text.
struct Lines {
    buf: Vec<u8>,
    len: usize,
    finder: memmem::Finder<'static>,
    bad: u64,
    first_bad: Option<String>,
}

impl Lines {
    fn new() -> Self {
        Self {
            buf: vec![0; 256 * 1024],
            len: 0,
            finder: memmem::Finder::new(MARKER),
            bad: 0,
            first_bad: None,
        }
    }

    /// Reads once; returns the number of complete lines that read finished.
    fn read(&mut self, r: &mut impl Read) -> io::Result<usize> {
        if self.len == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let n = match r.read(&mut self.buf[self.len..]) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed stdout")),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => return Err(e),
        };
        self.len += n;
        let Some(last) = memchr::memrchr(b'\n', &self.buf[..self.len]) else { return Ok(0) };
        let complete = &self.buf[..=last];
        let count = memchr::memchr_iter(b'\n', complete).count();
        if self.finder.find_iter(complete).count() != count {
            for line in complete.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                if self.finder.find(line).is_none() {
                    self.bad += 1;
                    self.first_bad.get_or_insert_with(|| String::from_utf8_lossy(line).into_owned());
                }
            }
        }
        self.buf.copy_within(last + 1..self.len, 0);
        self.len -= last + 1;
        Ok(count)
    }

    fn check(&self) -> io::Result<()> {
        match &self.first_bad {
            None => Ok(()),
            Some(line) => Err(io::Error::other(format!(
                "{} responses did not echo the text; the first: {}",
                self.bad,
                truncate(line, 400)
            ))),
        }
    }
}

/// One keep-alive connection sending `tools/call` requests (from an [`HttpRequests`]
/// cycle, or in a session of its own) and checking each response, in order.
struct HttpConn<'a> {
    stream: TcpStream,
    requests: Requests<'a>,
    /// Requests written, and responses read, on this connection so far (the session's
    /// opening exchanges are not counted).
    sent: usize,
    read: usize,
    /// Responses read whose body was an SSE stream (`text/event-stream`).
    sse: usize,
    /// Bytes read and not yet parsed are `buf[start..len]`.
    buf: Vec<u8>,
    start: usize,
    len: usize,
    /// A chunked body, put back together.
    body: Vec<u8>,
    finder: memmem::Finder<'static>,
    bad: u64,
    first_bad: Option<String>,
}

/// A response parsed at the front of a connection's buffer.
struct Parsed {
    status: u16,
    /// The body is an SSE stream (`Content-Type: text/event-stream`), not JSON.
    sse: bool,
    /// `Mcp-Session-Id`, when asked for and present.
    session: Option<String>,
    /// Where the body is: `buf[a..b]`, or `body` when it was chunked.
    body: Option<(usize, usize)>,
    /// Where the response ends in `buf`.
    end: usize,
}

impl<'a> HttpConn<'a> {
    fn connect(addr: SocketAddr, requests: Requests<'a>) -> io::Result<Self> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        // A server that stops reading fails the run instead of hanging it.
        stream.set_write_timeout(Some(Duration::from_secs(30)))?;
        Ok(Self {
            stream,
            requests,
            sent: 0,
            read: 0,
            sse: 0,
            buf: vec![0; 64 * 1024],
            start: 0,
            len: 0,
            body: Vec::with_capacity(4096),
            finder: memmem::Finder::new(MARKER),
            bad: 0,
            first_bad: None,
        })
    }

    /// Connects and opens a 2025-11-25 session as a client does: `initialize` (its answer,
    /// JSON or SSE, must name the revision, and its `Mcp-Session-Id` the session), then
    /// `notifications/initialized` (answered `202`). Every later request carries the
    /// session's id. Not `strict` (the floor), the answers are read but not checked.
    fn open_session(addr: SocketAddr, strict: bool) -> io::Result<HttpConn<'static>> {
        let placeholder = Requests::Session(SessionRequests::new(addr, "-", false));
        let mut c = HttpConn::connect(addr, placeholder)?;
        let fail = |what: String| Err(io::Error::other(format!("opening a session: {what}")));
        let init = c.exchange(&session_post(addr, None, &initialize_body()), true)?;
        let session = match init.session.clone() {
            Some(id) => id,
            None if !strict => "floor".to_owned(),
            None => return fail(format!("initialize answered {} with no Mcp-Session-Id", init.status)),
        };
        if strict {
            let answer = jsonrpc_messages(init.sse, &init.body)?
                .into_iter()
                .find(|m| m.get("id") == Some(&serde_json::Value::from(1)));
            let revision = answer.as_ref().and_then(|m| m.pointer("/result/protocolVersion"));
            if init.status != 200 || revision.and_then(|v| v.as_str()) != Some(SESSION_REVISION) {
                return fail(format!(
                    "initialize answered {} {}",
                    init.status,
                    truncate(&String::from_utf8_lossy(&init.body), 400)
                ));
            }
        }
        let initialized = c.exchange(&session_post(addr, Some(&session), INITIALIZED_BODY), false)?;
        if strict && initialized.status != 202 {
            return fail(format!("notifications/initialized answered {}", initialized.status));
        }
        c.requests = Requests::Session(SessionRequests::new(addr, &session, strict));
        Ok(c)
    }

    /// Sends one request and reads its response, outside the counted requests.
    fn exchange(&mut self, request: &[u8], want_session: bool) -> io::Result<Exchange> {
        self.stream.write_all(request)?;
        loop {
            if let Some(r) = self.parse(want_session)? {
                let body = self.body_of(&r).to_vec();
                self.start = r.end;
                return Ok(Exchange { status: r.status, sse: r.sse, session: r.session, body });
            }
            self.fill()?;
        }
    }

    /// Sends `count` requests, keeping at most `depth` unanswered, and reads every response.
    /// It writes `depth` requests, then, after each read from the socket, one more for each
    /// response that read completed. With `depth` 1 it is one request, one response.
    fn run(&mut self, count: usize, depth: usize) -> io::Result<()> {
        let target = self.read + count;
        self.send(depth.min(count))?;
        let mut unsent = count - depth.min(count);
        while self.read < target {
            let mut answered = 0;
            while self.response()? {
                answered += 1;
            }
            let more = unsent.min(answered);
            if more > 0 {
                self.send(more)?;
                unsent -= more;
            }
            if self.read < target {
                self.fill()?;
            }
        }
        Ok(())
    }

    fn send(&mut self, k: usize) -> io::Result<()> {
        self.requests.write(&mut self.stream, self.sent, k)?;
        self.sent += k;
        Ok(())
    }

    /// Parses the response at the front of the buffer if the buffer holds all of it.
    fn parse(&mut self, want_session: bool) -> io::Result<Option<Parsed>> {
        let data = &self.buf[self.start..self.len];
        if data.is_empty() {
            return Ok(None);
        }
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        let (status, head_len, framing, sse, session) = match resp.parse(data) {
            Ok(httparse::Status::Complete(n)) => {
                let header = |name: &str| {
                    resp.headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .and_then(|h| std::str::from_utf8(h.value).ok())
                };
                let status = resp.code.unwrap_or(0);
                let framing = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
                    Framing::Chunked
                } else if (100..200).contains(&status) || status == 204 || status == 304 {
                    Framing::Length(0)
                } else {
                    let len = header("content-length").and_then(|v| v.trim().parse().ok());
                    Framing::Length(len.ok_or_else(|| io::Error::other("a response without a length"))?)
                };
                let sse = header("content-type").is_some_and(|v| {
                    v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
                });
                let session =
                    if want_session { header("mcp-session-id").map(|v| v.trim().to_owned()) } else { None };
                (status, n, framing, sse, session)
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(io::Error::other(format!("a malformed response: {e}"))),
        };
        let (body, end) = match framing {
            Framing::Length(n) => {
                if data.len() < head_len + n {
                    return Ok(None);
                }
                (Some((self.start + head_len, self.start + head_len + n)), head_len + n)
            }
            Framing::Chunked => {
                self.body.clear();
                let mut pos = head_len;
                loop {
                    let (start, size) = match httparse::parse_chunk_size(&data[pos..]) {
                        Ok(httparse::Status::Complete((i, size))) => (pos + i, size as usize),
                        Ok(httparse::Status::Partial) => return Ok(None),
                        Err(_) => return Err(io::Error::other("a malformed chunk size")),
                    };
                    if data.len() < start + size + 2 {
                        return Ok(None);
                    }
                    self.body.extend_from_slice(&data[start..start + size]);
                    pos = start + size + 2;
                    if size == 0 {
                        break;
                    }
                }
                (None, pos)
            }
        };
        Ok(Some(Parsed { status, sse, session, body, end: self.start + end }))
    }

    fn body_of(&self, r: &Parsed) -> &[u8] {
        match r.body {
            Some((a, b)) => &self.buf[a..b],
            None => &self.body,
        }
    }

    /// Parses and checks the next response if the buffer holds all of it; says whether it
    /// did. The body, JSON or an SSE stream, must carry the echoed text and (where ids are
    /// checked) the request's id: in an SSE stream both lie in the response's `data:`.
    fn response(&mut self) -> io::Result<bool> {
        let Some(r) = self.parse(false)? else { return Ok(false) };
        let body = self.body_of(&r);
        let id = self.requests.id(self.read).map(IdPattern::new);
        let id_ok = id.as_ref().is_none_or(|id| memmem::find(body, id.as_bytes()).is_some());
        if r.status != 200 || self.finder.find(body).is_none() || !id_ok {
            let what = format!(
                "{} {}{}",
                r.status,
                String::from_utf8_lossy(body),
                id.map_or(String::new(), |id| format!(
                    " (expected {})",
                    String::from_utf8_lossy(id.as_bytes())
                ))
            );
            self.bad += 1;
            self.first_bad.get_or_insert(what);
        }
        self.sse += usize::from(r.sse);
        self.start = r.end;
        self.read += 1;
        Ok(true)
    }

    /// Reads once from the socket, after moving what is left unparsed to the front.
    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.len, 0);
            self.len -= self.start;
            self.start = 0;
        }
        if self.len == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        match self.stream.read(&mut self.buf[self.len..])? {
            0 => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection")),
            n => {
                self.len += n;
                Ok(())
            }
        }
    }

    fn check(&self) -> io::Result<()> {
        match &self.first_bad {
            None => Ok(()),
            Some(r) => Err(io::Error::other(format!(
                "{} responses were not 200 with the echoed text{}; the first: {}",
                self.bad,
                if self.requests.checks_ids() { " and the request's id" } else { "" },
                truncate(r, 400)
            ))),
        }
    }
}

/// One exchange outside the counted requests (opening a session).
struct Exchange {
    status: u16,
    sse: bool,
    session: Option<String>,
    body: Vec<u8>,
}

/// The JSON-RPC messages of a response body: the body itself when it is JSON, or the
/// `data` of each event when it is an SSE stream (events without data, such as a priming
/// event, carry none).
fn jsonrpc_messages(sse: bool, body: &[u8]) -> io::Result<Vec<serde_json::Value>> {
    let parse = |data: &[u8]| {
        serde_json::from_slice(data).map_err(|e| {
            io::Error::other(format!("not JSON ({e}): {}", truncate(&String::from_utf8_lossy(data), 400)))
        })
    };
    if !sse {
        return Ok(vec![parse(body)?]);
    }
    let text = std::str::from_utf8(body).map_err(|_| io::Error::other("an SSE stream that is not UTF-8"))?;
    let mut messages = Vec::new();
    let mut data = String::new();
    let mut has_data = false;
    // Lines end with CRLF, LF or CR; an empty line ends an event.
    for line in text.split('\n').flat_map(|l| l.strip_suffix('\r').unwrap_or(l).split('\r')) {
        if line.is_empty() {
            if has_data && !data.is_empty() {
                messages.push(parse(data.as_bytes())?);
            }
            data.clear();
            has_data = false;
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        if field == "data" {
            if has_data {
                data.push('\n');
            }
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
            has_data = true;
        }
    }
    Ok(messages)
}

enum Framing {
    Length(usize),
    Chunked,
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// A server process, its stderr collected by a thread, and a watchdog that kills it past
/// [`RUN_DEADLINE`].
struct Proc {
    child: Child,
    pid: u32,
    sock: PathBuf,
    stderr: Arc<Mutex<VecDeque<String>>>,
    listening: mpsc::Receiver<SocketAddr>,
    done: Option<mpsc::Sender<()>>,
}

impl Proc {
    fn spawn(mut cmd: Command, sock: PathBuf) -> io::Result<Self> {
        let mut child = cmd.spawn()?;
        let pid = child.id();
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, listening) = mpsc::channel();
        let err = child.stderr.take().expect("piped stderr");
        let tail = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) =
                    line.strip_prefix("listening on http://").and_then(|r| r.strip_suffix("/mcp"))
                {
                    let _ = addr.parse().map(|a| tx.send(a));
                }
                let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                if tail.len() == 20 {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });
        let (done, stop) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(RUN_DEADLINE) {
                eprintln!("load: run over {RUN_DEADLINE:?}: killing server {pid}");
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
        });
        Ok(Self { child, pid, sock, stderr, listening, done: Some(done) })
    }

    fn wait_for_stats(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(&self.sock).is_err() {
            if let Some(status) = self.child.try_wait()? {
                return Err(io::Error::other(format!("the server exited at start: {status}")));
            }
            if Instant::now() > deadline {
                return Err(io::Error::other("the server's counters never came up"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    fn http_addr(&self) -> io::Result<SocketAddr> {
        self.listening
            .recv_timeout(Duration::from_secs(20))
            .map_err(|_| io::Error::other("the server never said where it listens"))
    }

    fn snapshot(&self) -> io::Result<Snapshot> {
        let mut line = String::new();
        UnixStream::connect(&self.sock)?.read_to_string(&mut line)?;
        let alloc = AllocStats::parse(&line)
            .ok_or_else(|| io::Error::other(format!("bad counters from the server: {line:?}")))?;
        Ok(Snapshot {
            at: Instant::now(),
            cpu_ns: cpu_ns(self.pid)?,
            driver_cpu_ns: own_cpu_ns(),
            alloc,
            peak_rss_kib: vm_hwm_kib(self.pid)?,
        })
    }

    fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        tail.iter().map(String::as_str).collect::<Vec<_>>().join("\n")
    }

    /// Lets a stdio server end on its own (its stdin is closed), kills an HTTP one.
    fn finish(mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let stdio = self.child.stdout.is_some();
        drop(self.child.stdin.take());
        // Drain what is left so that the server is not blocked writing.
        if let Some(mut out) = self.child.stdout.take() {
            std::thread::spawn(move || io::copy(&mut out, &mut io::sink()));
        }
        if stdio {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        drop(self.done.take());
        let _ = std::fs::remove_file(&self.sock);
    }
}

/// CPU time of every thread of `pid` (`/proc/PID/task/*/schedstat`: nanoseconds on the
/// CPU), falling back to `utime + stime` of `/proc/PID/stat` (clock ticks) where schedstat
/// is missing.
fn cpu_ns(pid: u32) -> io::Result<u64> {
    let mut total = 0u64;
    let mut seen = false;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Ok(task) = task else { continue };
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else { continue };
        if let Some(ns) = stat.split_ascii_whitespace().next().and_then(|v| v.parse::<u64>().ok()) {
            total += ns;
            seen = true;
        }
    }
    if seen {
        return Ok(total);
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, r)| r).split_ascii_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // After the command: state is field 3, utime 14, stime 15; ticks are 10 ms here
    // (CLK_TCK 100 on Linux).
    Ok((ticks(11) + ticks(12)) * 10_000_000)
}

/// The CPU time of this process: every thread, those that have ended included.
fn own_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid `timespec` for the call to write.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) } != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The peak resident set of `pid` (`VmHWM`), in KiB.
fn vm_hwm_kib(pid: u32) -> io::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| io::Error::other("no VmHWM in /proc/PID/status"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

type Results = [(Scenario, Server, Vec<Sample>)];

/// The samples of `server` in `scenario`, one per round, in round order.
fn samples_of(results: &Results, scenario: Scenario, server: Server) -> Option<&[Sample]> {
    results.iter().find(|r| r.0 == scenario && r.1 == server).map(|r| r.2.as_slice())
}

/// The median over rounds of `f(num) / f(den)`, each ratio taken within one round: the
/// A/B pairing that interleaved rounds allow, so that a slow spell of the machine weighs
/// on both sides.
fn paired(num: &[Sample], den: &[Sample], f: fn(&Sample) -> f64) -> f64 {
    median(num.iter().zip(den).map(|(a, b)| f(a) / f(b)).collect())
}

fn print_report(opts: &Opts, warmup: usize, results: &Results) {
    let med = |samples: &[Sample], f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
    println!();
    println!(
        "Medians of {} rounds; {} timed `echo` calls per run after {warmup} warm-up calls; {} cores.",
        opts.rounds,
        opts.requests,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("Ratios to rmcp are medians of the ratios within each round.");
    println!();
    println!(
        "| scenario | server | req/s | spread | × rmcp | server CPU µs/req \
         | rmcp's CPU ÷ this | allocs/req | alloc bytes/req | peak RSS MiB | driver CPU µs/req |"
    );
    println!("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for (scenario, server, samples) in results {
        let rps = med(samples, |s| s.rps);
        let lo = samples.iter().map(|s| s.rps).fold(f64::INFINITY, f64::min);
        let hi = samples.iter().map(|s| s.rps).fold(0.0, f64::max);
        let (vs, cpu_vs) = match samples_of(results, *scenario, Server::Rmcp) {
            Some(rmcp) if *server != Server::Rmcp => (
                format!("{:.1}×", paired(samples, rmcp, |s| s.rps)),
                format!("{:.1}×", paired(rmcp, samples, |s| s.cpu_us)),
            ),
            _ => ("–".into(), "–".into()),
        };
        println!(
            "| {} | {} | {} | ±{:.0}% | {vs} | {:.2} | {cpu_vs} | {} | {:.0} | {:.1} | {:.2} |",
            scenario.label(),
            server.label(),
            thousands(rps),
            (hi - lo) / 2.0 / rps * 100.0,
            med(samples, |s| s.cpu_us),
            allocs(med(samples, |s| s.allocs)),
            med(samples, |s| s.alloc_bytes),
            med(samples, |s| s.rss_mib),
            med(samples, |s| s.driver_cpu_us),
        );
    }
    let sse: Vec<String> = results
        .iter()
        .filter(|r| r.0.is_session())
        .filter_map(|(scenario, server, samples)| {
            let share = med(samples, |s| s.sse);
            (share > 0.0).then(|| format!("{} in {} {:.0}%", server.name(), scenario.name(), share * 100.0))
        })
        .collect();
    if !sse.is_empty() {
        println!();
        println!("Responses that came as an SSE stream (the others were JSON): {}.", sse.join(", "));
    }
    print_targets(opts, results);
    print_sessions(opts, results);
    print_stores(opts, results);
}

/// Issue #16: the session store in PostgreSQL against the one in memory, cache warm
/// (every session opened before the timed window): req/s and server CPU per request,
/// each the median of the ratios within a round.
fn print_stores(opts: &Opts, results: &Results) {
    let each: Vec<String> = opts
        .scenarios
        .iter()
        .filter(|s| s.is_session())
        .filter_map(|&s| {
            let (pg, mem) =
                (samples_of(results, s, Server::TokioPg)?, samples_of(results, s, Server::TokioMem)?);
            Some(format!(
                "{} {:.2}× the req/s, {:.2}× the CPU per request",
                s.name(),
                paired(pg, mem, |x| x.rps),
                paired(pg, mem, |x| x.cpu_us)
            ))
        })
        .collect();
    if !each.is_empty() {
        println!();
        println!(
            "Sessions in PostgreSQL (issue #16), `PgSessionStore` ÷ `MemorySessionStore`: {}.",
            each.join("; ")
        );
    }
}

/// Issue #11: the session-bound scenarios against rmcp's stateful mode, by server CPU per
/// request.
fn print_sessions(opts: &Opts, results: &Results) {
    let sessions: Vec<Scenario> = opts.scenarios.iter().copied().filter(|s| s.is_session()).collect();
    if sessions.is_empty() {
        return;
    }
    println!();
    println!(
        "Sessions (issue #11), rmcp in its stateful mode: rmcp's server CPU per request ÷ this server's:"
    );
    for server in [Server::Mio, Server::Tokio, Server::TokioCt, Server::RmcpFlush] {
        let each: Vec<String> = sessions
            .iter()
            .filter_map(|&s| {
                let (a, b) = (samples_of(results, s, server)?, samples_of(results, s, Server::Rmcp)?);
                Some(format!("{} {:.1}×", s.name(), paired(b, a, |x| x.cpu_us)))
            })
            .collect();
        if !each.is_empty() {
            println!("- {}: {}", server.label(), each.join(", "));
        }
    }
}

fn print_targets(opts: &Opts, results: &Results) {
    println!();
    println!("Targets (issue #5):");
    let ours = [Server::Mio, Server::Tokio, Server::TokioCt];
    for (stdio, want, base) in
        [(true, 20.0, Server::Rmcp), (false, 10.0, Server::Rmcp), (false, 10.0, Server::RmcpFlush)]
    {
        for server in ours {
            let ratios: Vec<(Scenario, f64)> = opts
                .scenarios
                .iter()
                .filter(|s| s.is_stdio() == stdio && !s.is_session())
                .filter_map(|&s| {
                    let (a, b) = (samples_of(results, s, server)?, samples_of(results, s, base)?);
                    Some((s, paired(a, b, |x| x.rps)))
                })
                .collect();
            if ratios.is_empty() {
                continue;
            }
            let met: Vec<String> = ratios.iter().filter(|r| r.1 >= want).map(|r| r.0.name()).collect();
            let verdict = if met.len() == ratios.len() {
                "met".to_owned()
            } else if met.is_empty() {
                "NOT met".to_owned()
            } else {
                format!("met only in {}", met.join(", "))
            };
            let each: Vec<String> = ratios.iter().map(|(s, r)| format!("{} {r:.1}×", s.name())).collect();
            println!(
                "- {} ≥ {want}× {}'s req/s over {}: {verdict} ({})",
                server.label(),
                base.name(),
                if stdio { "stdio" } else { "HTTP" },
                each.join(", ")
            );
        }
    }
    for server in ours {
        let per: Vec<(String, f64)> = results
            .iter()
            .filter(|r| r.1 == server)
            .map(|r| (r.0.name(), median(r.2.iter().map(|s| s.allocs).collect())))
            .collect();
        if per.is_empty() {
            continue;
        }
        let zero = per.iter().all(|(_, a)| *a == 0.0);
        let each: Vec<String> = per.iter().map(|(s, a)| format!("{s} {}", allocs(*a))).collect();
        // The tokio server's `echo` handler owns its reply: the text it deserializes is
        // one allocation per request of its own (the adapter's count is 0, asserted by
        // io-tokio/tests/alloc.rs).
        let whose = if matches!(server, Server::Tokio | Server::TokioCt) {
            "; the echo handler's own String: 1 per request"
        } else {
            ""
        };
        println!(
            "- {} 0 allocations per request: {} ({}{whose})",
            server.label(),
            if zero { "met" } else { "NOT met" },
            each.join(", ")
        );
    }
    for server in ours {
        let Some(samples) = samples_of(results, Scenario::StdioPipelined, server) else { continue };
        let peak = samples.iter().map(|s| s.rss_mib).fold(0.0, f64::max);
        let verdict = if peak >= 16.0 {
            "NOT met"
        } else if opts.requests < 100_000 {
            "met at this size, but the target is for 100,000 requests"
        } else {
            "met"
        };
        println!(
            "- {} peak RSS < 16 MiB with {} requests pipelined: {verdict} (highest run {peak:.1} MiB)",
            server.label(),
            thousands(opts.requests as f64)
        );
    }
}

/// Allocations per request: exact zero, or enough decimals to tell a few allocations in
/// the whole window (buffers growing once) from a few per request.
fn allocs(a: f64) -> String {
    if a == 0.0 {
        "0".into()
    } else if a < 0.01 {
        format!("{a:.5}")
    } else {
        format!("{a:.3}")
    }
}

fn thousands(x: f64) -> String {
    let s = format!("{:.0}", x);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that answers each request on one connection in order, with the id the
    /// `k`-th request of an [`HttpRequests::numbered`] cycle carries (or the ids of the
    /// 6th and 7th swapped), each response written in two pieces.
    fn fake_server(chunked: bool, swap: bool) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_nodelay(true).unwrap();
            let (mut pending, mut buf, mut seq) = (Vec::new(), vec![0; 8192], 0usize);
            loop {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    return;
                }
                pending.extend_from_slice(&buf[..n]);
                while let Some(h) = memmem::find(&pending, b"\r\n\r\n") {
                    let head = std::str::from_utf8(&pending[..h]).unwrap();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .unwrap()
                        .parse()
                        .unwrap();
                    if pending.len() < h + 4 + len {
                        break;
                    }
                    pending.drain(..h + 4 + len);
                    let k = match seq {
                        5 if swap => 6,
                        6 if swap => 5,
                        k => k,
                    };
                    let id = FIRST_ID + k % ID_CYCLE;
                    let body = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"hello"}}]}}}}"#
                    );
                    let resp = if chunked {
                        // The echoed text split between two chunks.
                        let (a, b) = body.split_at(body.find("llo").unwrap());
                        format!(
                            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
                            a.len(),
                            b.len()
                        )
                    } else {
                        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len())
                    };
                    let (a, b) = resp.as_bytes().split_at(resp.len() / 3 + seq % 7);
                    s.write_all(a).unwrap();
                    s.write_all(b).unwrap();
                    seq += 1;
                }
            }
        });
        (addr, handle)
    }

    fn drive(chunked: bool, swap: bool, depth: usize) -> io::Result<()> {
        let (addr, server) = fake_server(chunked, swap);
        let requests = HttpRequests::numbered(addr, true);
        let mut c = HttpConn::connect(addr, Requests::Cycle(&requests))?;
        // Twice, as warm-up and timed part, across the end of the id cycle.
        c.run(700, depth)?;
        c.run(700, depth)?;
        assert_eq!((c.sent, c.read), (1400, 1400));
        let result = c.check();
        drop(c);
        server.join().unwrap();
        result
    }

    #[test]
    fn pipelined_responses_are_read_and_checked_in_order() {
        for chunked in [false, true] {
            for depth in [1, 16, ID_CYCLE] {
                drive(chunked, false, depth).unwrap();
            }
        }
    }

    #[test]
    fn a_response_out_of_order_fails_the_check() {
        for chunked in [false, true] {
            let e = drive(chunked, true, 16).unwrap_err().to_string();
            assert!(e.starts_with("2 responses were not 200"), "{e}");
            assert!(e.contains(r#"(expected "id":105)"#), "{e}");
        }
    }

    /// A session server as rmcp's stateful mode answers: `initialize` on a chunked SSE
    /// stream with a priming event and `Mcp-Session-Id`, the notification `202`, each call
    /// on a chunked SSE stream (priming event first) with the call's id, or with
    /// `wrong_id` for the third. It checks that every call carries the session and the
    /// revision and that no id comes twice.
    fn fake_session_server(wrong_id: bool) -> (SocketAddr, std::thread::JoinHandle<usize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let (mut pending, mut buf, mut calls) = (Vec::new(), vec![0; 8192], 0usize);
            let mut seen = std::collections::HashSet::new();
            loop {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    return calls;
                }
                pending.extend_from_slice(&buf[..n]);
                while let Some(h) = memmem::find(&pending, b"\r\n\r\n") {
                    let head = std::str::from_utf8(&pending[..h]).unwrap().to_owned();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .unwrap()
                        .parse()
                        .unwrap();
                    if pending.len() < h + 4 + len {
                        break;
                    }
                    let body: serde_json::Value =
                        serde_json::from_slice(&pending[h + 4..h + 4 + len]).unwrap();
                    pending.drain(..h + 4 + len);
                    let sse = |data: String| {
                        let stream =
                            format!("id: 0\r\nretry: 3000\r\ndata:\r\n\r\ndata: {data}\r\nid: 1\r\n\r\n");
                        let (a, b) = stream.split_at(stream.len() / 2);
                        format!("{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n", a.len(), b.len())
                    };
                    let resp = match body["method"].as_str().unwrap() {
                        "initialize" => {
                            assert!(!head.contains("Mcp-Session-Id"));
                            assert_eq!(body["params"]["protocolVersion"], SESSION_REVISION);
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: s-1\r\n\
                                 transfer-encoding: chunked\r\n\r\n{}",
                                sse(format!(
                                    r#"{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":"{SESSION_REVISION}"}}}}"#
                                ))
                            )
                        }
                        method => {
                            assert!(head.contains("\r\nMcp-Session-Id: s-1\r\n"), "{head}");
                            assert!(
                                head.contains(&format!("\r\nMCP-Protocol-Version: {SESSION_REVISION}\r\n"))
                            );
                            if method == "notifications/initialized" {
                                "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned()
                            } else {
                                assert_eq!(method, "tools/call");
                                let id = body["id"].as_u64().unwrap();
                                assert!(seen.insert(id), "id {id} came twice");
                                calls += 1;
                                let id = if wrong_id && calls == 3 { 7 } else { id };
                                format!(
                                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                                     transfer-encoding: chunked\r\n\r\n{}",
                                    sse(format!(
                                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"hello"}}]}}}}"#
                                    ))
                                )
                            }
                        }
                    };
                    s.write_all(resp.as_bytes()).unwrap();
                }
            }
        });
        (addr, handle)
    }

    #[test]
    fn a_session_is_opened_and_its_sse_answers_are_checked() {
        for depth in [1, 16] {
            let (addr, server) = fake_session_server(false);
            let mut c = HttpConn::open_session(addr, true).unwrap();
            c.run(300, depth).unwrap();
            c.run(300, depth).unwrap();
            assert_eq!((c.sent, c.read, c.sse), (600, 600, 600));
            c.check().unwrap();
            drop(c);
            assert_eq!(server.join().unwrap(), 600);
        }
        let (addr, server) = fake_session_server(true);
        let mut c = HttpConn::open_session(addr, true).unwrap();
        c.run(10, 4).unwrap();
        let e = c.check().unwrap_err().to_string();
        assert!(e.starts_with("1 responses were not 200"), "{e}");
        assert!(e.contains(r#"(expected "id":1000002)"#), "{e}");
        drop(c);
        server.join().unwrap();
    }

    #[test]
    fn sse_streams_are_split_into_their_messages() {
        let body = b"id: 0\r\nretry: 3000\r\ndata:\r\n\r\n: a comment\ndata: {\"a\":\ndata:1}\nid: 5\n\nevent: x\rdata:{\"b\":2}\r\rdata: {\"cut\"";
        let messages = jsonrpc_messages(true, body).unwrap();
        assert_eq!(messages, vec![serde_json::json!({"a": 1}), serde_json::json!({"b": 2})]);
        assert_eq!(jsonrpc_messages(false, br#"{"c":3}"#).unwrap(), vec![serde_json::json!({"c": 3})]);
        assert!(jsonrpc_messages(true, b"data: {nope\n\n").is_err());
    }
}
