//! With feature `tracing`, the HTTP server logs every request the engine refused at
//! `DEBUG`, with its reason; the response stays what it was (an empty `403` for a `Host`
//! that is not allowed).

#![cfg(feature = "tracing")]

mod support;

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use mcp_engine::Config;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent};
use mcp_fixture as everything;
use support::http::{Client, echo_body};
use support::within;

/// Log lines, shared with the server's thread.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }

    /// The refusal lines, once there are `n` (hang protection only: the server thread
    /// logs before it writes the response, but this thread may read first).
    fn refusals(&self, n: usize) -> Vec<String> {
        let until = Instant::now() + support::HANG;
        loop {
            let lines: Vec<String> =
                self.text().lines().filter(|l| l.contains("request refused")).map(str::to_owned).collect();
            if lines.len() >= n || Instant::now() > until {
                return lines;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The fixture over HTTP on a thread of its own, logging at `DEBUG` into the result.
fn server() -> (SocketAddr, Logs) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local_addr");
    let logs = Logs::default();
    let sink = logs.clone();
    thread::spawn(move || {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .finish();
        let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
        let engine =
            HttpEngine::new(Config::new("mcp-engine-everything", "test"), http, everything::catalog());
        tracing::subscriber::with_default(subscriber, || {
            mcp_io_mio::serve_http(listener, engine, |event| {
                if let HttpEvent::Mcp(event) = event {
                    everything::respond(event);
                }
                None
            })
        })
    });
    (addr, logs)
}

fn echo_for(host: &str) -> Vec<u8> {
    let body = echo_body(1, "hi");
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[test]
fn a_host_that_is_not_allowed_is_logged_at_debug_with_its_reason() {
    within(|| {
        let (addr, logs) = server();
        let mut client = Client::connect(addr);
        let r = client.call(&echo_for("203.0.113.7:3000"));
        assert_eq!(r.status, 403);
        assert!(r.body.is_empty(), "the body stays empty");
        let lines = logs.refusals(1);
        assert_eq!(lines.len(), 1, "{}", logs.text());
        let line = &lines[0];
        assert!(line.contains("DEBUG") && line.contains("mcp_io_mio"), "{line}");
        assert!(line.contains("Host not allowed (neither loopback nor in allowed_hosts)"), "{line}");
        assert!(line.contains("http.response.status_code=403"), "{line}");
        // Served requests log no refusal; a wrong path does, with its reason.
        let mut client = Client::connect(addr);
        assert_eq!(client.call(&echo_for(&addr.to_string())).echo_text(1), "hi");
        let mut client = Client::connect(addr);
        client.send(format!("GET /elsewhere HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes());
        assert_eq!(client.recv().status, 404);
        let lines = logs.refusals(2);
        assert_eq!(lines.len(), 2, "{}", logs.text());
        assert!(lines[1].contains("path is not the endpoint"), "{}", lines[1]);
    });
}
