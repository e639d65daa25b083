//! Our engine through the mio adapter, serving the `everything` catalog (its `echo` tool)
//! with the fixture's synchronous `everything::respond` (crate `mcp-fixture`).

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::{Config, Engine};
use mcp_fixture as everything;
use mcp_load::Mode;

fn main() -> std::io::Result<()> {
    let mode = mcp_load::mode("srv-mio");
    mcp_load::serve_stats();
    mcp_load::raise_open_file_limit();
    let config = Config::new("mcp-load-mio", env!("CARGO_PKG_VERSION"));
    match mode {
        Mode::Stdio => {
            mcp_io_mio::serve_stdio(Engine::new(config, everything::catalog()), everything::respond)
        }
        Mode::Http(addr) => {
            // As the adapter's `everything` example: loopback `Host` only, any `Origin`.
            let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
            http.loopback(true);
            mcp_load::held_settings(&mut http);
            let engine = HttpEngine::new(config, http, everything::catalog());
            mcp_io_mio::serve_http(mcp_load::bind(addr), engine, |event| {
                if let HttpEvent::Mcp(event) = event {
                    everything::respond(event);
                }
                None
            })
        }
    }
}
