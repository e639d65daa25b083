//! What the load benchmark's server binaries share: the counting global allocator (the
//! same in every server, and in the driver), the side channel the driver reads its
//! counters from, the command line, and the `echo` tool's definition.
//!
//! Every server binary is started as `SERVER --stdio` or `SERVER --http ADDR`. Over HTTP
//! it prints `listening on http://ADDR/mcp` on stderr once bound. When the environment
//! names a socket path in [`STATS_ENV`], [`serve_stats`] answers each connection to it
//! with the allocator's counters, so the driver can take them just before and just after
//! its timed window.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Cursor, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The environment variable naming the Unix socket [`serve_stats`] listens on.
pub const STATS_ENV: &str = "MCP_LOAD_STATS";

/// The `echo` tool's input schema, as the `everything` fixture (`mcp-fixture`) declares it.
pub const ECHO_SCHEMA: &str = concat!(
    r#"{"type":"object","properties":{"text":{"type":"string"}},"#,
    r#""required":["text"],"additionalProperties":false}"#
);

/// The `echo` tool's description, as the `everything` fixture (`mcp-fixture`) declares it.
pub const ECHO_DESCRIPTION: &str = "Returns the text it is given as one text block.";

/// The system allocator, counting calls and bytes.
///
/// `alloc`, `alloc_zeroed` and `realloc` each count as one allocation; `dealloc` is
/// counted separately. Relaxed atomics: a few nanoseconds per call, the same in every
/// server.
pub struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static FREES: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the
// counters have no effect on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size as u64, Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        FREES.fetch_add(1, Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocator's counters since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocStats {
    /// Calls to `alloc`, `alloc_zeroed` and `realloc`.
    pub allocs: u64,
    /// Calls to `dealloc`.
    pub frees: u64,
    /// Bytes asked for by those allocations (a `realloc` counts its new size).
    pub bytes: u64,
}

impl AllocStats {
    /// This process's counters now.
    pub fn now() -> Self {
        Self { allocs: ALLOCS.load(Relaxed), frees: FREES.load(Relaxed), bytes: BYTES.load(Relaxed) }
    }

    /// Parses the line [`serve_stats`] writes: `allocs frees bytes`.
    pub fn parse(line: &str) -> Option<Self> {
        let mut it = line.split_ascii_whitespace().map(str::parse::<u64>);
        let stats = Self { allocs: it.next()?.ok()?, frees: it.next()?.ok()?, bytes: it.next()?.ok()? };
        it.next().is_none().then_some(stats)
    }
}

/// When [`STATS_ENV`] names a path, listens there on a thread of its own and answers
/// every connection with one line of [`AllocStats`] (`allocs frees bytes`), then closes
/// it. Answering allocates nothing, so a snapshot does not disturb what it measures.
///
/// # Panics
///
/// When the socket cannot be bound: the benchmark cannot count without it.
pub fn serve_stats() {
    let Some(path) = std::env::var_os(STATS_ENV) else { return };
    let listener = UnixListener::bind(&path)
        .unwrap_or_else(|e| panic!("cannot listen on {}: {e}", path.to_string_lossy()));
    std::thread::Builder::new()
        .name("alloc-stats".into())
        .spawn(move || {
            let mut line = [0u8; 96];
            loop {
                let Ok((mut conn, _)) = listener.accept() else { continue };
                let s = AllocStats::now();
                let mut cur = Cursor::new(&mut line[..]);
                let _ = writeln!(cur, "{} {} {}", s.allocs, s.frees, s.bytes);
                let n = cur.position() as usize;
                let _ = conn.write_all(&line[..n]);
            }
        })
        .expect("cannot start the stats thread");
}

/// How a server binary was asked to serve.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// Newline-delimited JSON-RPC over stdin and stdout.
    Stdio,
    /// HTTP on this (loopback) address; port 0 picks one.
    Http(SocketAddr),
}

/// The mode `--stdio` or `--http ADDR` asks for; exits with a usage message otherwise.
pub fn mode(server: &str) -> Mode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--stdio"] => Some(Mode::Stdio),
        ["--http", addr] => addr.parse::<SocketAddr>().ok().filter(|a| a.ip().is_loopback()).map(Mode::Http),
        _ => None,
    };
    parsed.unwrap_or_else(|| {
        eprintln!("usage: {server} --stdio | --http LOOPBACK_ADDR (e.g. 127.0.0.1:0)");
        std::process::exit(2)
    })
}

/// Binds `addr` and announces it on stderr the way the driver expects.
///
/// # Panics
///
/// When `addr` cannot be bound.
pub fn bind(addr: SocketAddr) -> std::net::TcpListener {
    // The standard library listens with a backlog of 128: a burst of connections (the
    // held-connections benchmark opens 16,000) then waits on SYN retransmissions. The
    // kernel caps this at `net.core.somaxconn`.
    let listen = || -> std::io::Result<std::net::TcpListener> {
        let socket = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
        socket.set_reuse_address(true)?;
        socket.bind(&addr.into())?;
        socket.listen(4096)?;
        Ok(socket.into())
    };
    let listener = listen().unwrap_or_else(|e| panic!("cannot bind {addr}: {e}"));
    let bound = listener.local_addr().expect("a bound listener has an address");
    eprintln!("listening on http://{bound}/mcp");
    listener
}

/// Raises this process's open-file soft limit to its hard limit (the held-connections
/// benchmark holds thousands of sockets) and returns the limit now in force.
pub fn raise_open_file_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => n,
        Err(_) => rlimit::Resource::NOFILE.get().map_or(1024, |(soft, _)| soft),
    }
}

/// The held-connections benchmark's (`held`) settings of the servers' HTTP engine, from
/// the environment: `SRV_MAX_CONNECTIONS`, the connection limit (it holds more than the
/// default), and `SRV_HEAD_TIMEOUT_MS`, the head timeout (longer than the default, so
/// that every connection is held for a while once the last one is open). Unset, the
/// engine's defaults stay.
pub fn held_settings(http: &mut mcp_engine::http::HttpConfig) {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = var("SRV_MAX_CONNECTIONS") {
        http.max_connections(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(ms) = var("SRV_HEAD_TIMEOUT_MS") {
        http.head_timeout(std::time::Duration::from_millis(ms));
    }
}

/// A tokio runtime as both tokio-based servers use it: multi-threaded (one worker per
/// core), with I/O and timers.
///
/// # Panics
///
/// When the runtime cannot start.
pub fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_lines_round_trip() {
        let s = AllocStats { allocs: 1, frees: 2, bytes: 3 };
        assert_eq!(AllocStats::parse("1 2 3\n"), Some(s));
        assert_eq!(AllocStats::parse("1 2"), None);
        assert_eq!(AllocStats::parse("1 2 3 4"), None);
    }

    #[test]
    fn the_echo_tool_is_the_catalogs() {
        let catalog = mcp_fixture::catalog();
        let echo = catalog.tool("echo").expect("the catalog has echo");
        let ours: serde_json::Value = serde_json::from_str(ECHO_SCHEMA).unwrap();
        assert_eq!(echo.input_schema.as_ref(), Some(&ours));
        assert_eq!(echo.description.as_deref(), Some(ECHO_DESCRIPTION));
    }
}
