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

use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::{Config, Engine, everything};

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
    let mut config = Config::new("mcp-engine-everything", env!("CARGO_PKG_VERSION"));
    config.logging(true).completions(true);
    let result = match mode {
        Mode::Stdio => {
            mcp_io_mio::serve_stdio(Engine::new(config, everything::catalog()), everything::respond)
        }
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

fn serve_http(addr: SocketAddr, config: Config) -> std::io::Result<()> {
    // Loopback only: `Host` must name localhost, and a browser's `Origin` too.
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.loopback(true);
    let engine = HttpEngine::new(config, http, everything::catalog());
    let listener = TcpListener::bind(addr)?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    mcp_io_mio::serve_http(listener, engine, |event| {
        if let HttpEvent::Mcp(event) = event {
            everything::respond(event);
        }
        None // `Authorization::Everyone`: no authorization events
    })
}
