//! Serves the conformance `everything` fixture over stdio.
//!
//! ```text
//! cargo run --release -p mcp-io-mio --example everything -- --stdio
//! ```
//!
//! `--stdio` is the only mode (and the default). Stdout carries protocol frames only;
//! errors go to stderr.

use std::process::ExitCode;

use mcp_engine::{Config, Engine, everything};

const USAGE: &str = "usage: everything [--stdio]\n\n  --stdio    serve MCP over stdin/stdout (the default)";

fn main() -> ExitCode {
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--stdio" => {}
            "-h" | "--help" => {
                eprintln!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("everything: unknown argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let engine =
        Engine::new(Config::new("mcp-engine-everything", env!("CARGO_PKG_VERSION")), everything::catalog());
    match mcp_io_mio::serve_stdio(engine, everything::respond) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("everything: {e}");
            ExitCode::FAILURE
        }
    }
}
