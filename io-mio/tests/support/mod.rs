//! Helpers shared by the integration tests: request lines, a blocking client over pipes,
//! a server thread, hang protection, and a raw HTTP client ([`http`]).

#![allow(dead_code, unreachable_pub)] // each test file uses a different subset

pub mod http;

use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use mcp_engine::{Config, Engine};
use mcp_fixture as everything;
use mio::unix::pipe::{self, Receiver, Sender};
use serde_json::{Value, json};

/// Hang protection only: no test relies on timing.
pub const HANG: Duration = Duration::from_secs(120);

/// Runs `f` on its own thread and panics if it does not finish within [`HANG`].
pub fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HANG) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the test hung for {HANG:?}"),
        // The closure panicked: surface its panic.
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(p) => std::panic::resume_unwind(p),
            Ok(()) => unreachable!("the closure sent nothing yet returned"),
        },
    }
}

/// The `_meta` of a 2026-07-28 request.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A 2026-07-28 request line (`_meta` added to `params`).
pub fn modern(id: impl Into<Value>, method: &str, mut params: Value) -> String {
    params.as_object_mut().expect("params is an object").insert("_meta".into(), meta());
    line(json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params }))
}

/// A 2026-07-28 `tools/call` of `echo`.
pub fn echo(id: impl Into<Value>, text: &str) -> String {
    modern(id, "tools/call", json!({ "name": "echo", "arguments": { "text": text } }))
}

/// A `server/discover` line.
pub fn discover(id: impl Into<Value>) -> String {
    line(json!({ "jsonrpc": "2.0", "id": id.into(), "method": "server/discover" }))
}

/// `initialize` (2025-11-25) with id 0 and `notifications/initialized`.
pub fn legacy_open() -> String {
    let mut s = line(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    }));
    s.push_str(&line(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })));
    s
}

/// A session-bound `ping` line.
pub fn ping(id: impl Into<Value>) -> String {
    line(json!({ "jsonrpc": "2.0", "id": id.into(), "method": "ping" }))
}

fn line(v: Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

/// The `everything` fixture engine.
pub fn engine() -> Engine {
    engine_with(Config::new("mcp-engine-everything", "test"))
}

/// The `everything` fixture catalog with `config`.
pub fn engine_with(config: Config) -> Engine {
    Engine::new(config, everything::catalog())
}

/// The text of the first content block of a tool result.
pub fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a text result: {response}"))
}

/// The client's side of two pipes, in blocking mode.
pub struct Client {
    /// `None` once closed.
    pub tx: Option<Sender>,
    pub rx: BufReader<Receiver>,
}

/// The server's side of the same pipes, as `StdioServer::new` takes them.
pub struct ServerEnds {
    pub rx: Receiver,
    pub tx: Sender,
}

/// Two pipes: client → server and server → client.
pub fn pipes() -> (Client, ServerEnds) {
    let (client_tx, server_rx) = pipe::new().expect("pipe");
    let (server_tx, client_rx) = pipe::new().expect("pipe");
    client_tx.set_nonblocking(false).expect("blocking");
    client_rx.set_nonblocking(false).expect("blocking");
    (
        Client { tx: Some(client_tx), rx: BufReader::new(client_rx) },
        ServerEnds { rx: server_rx, tx: server_tx },
    )
}

impl Client {
    /// Writes `text` entirely.
    pub fn send(&mut self, text: &str) {
        let tx = self.tx.as_mut().expect("the client's output is closed");
        tx.write_all(text.as_bytes()).expect("write to the server");
    }

    /// Closes the client's output: the server sees end of file.
    pub fn close(&mut self) {
        self.tx = None;
    }

    /// Takes the client's output, e.g. to write from another thread.
    pub fn take_writer(&mut self) -> Sender {
        self.tx.take().expect("the client's output is closed")
    }

    /// Reads one response line; panics at end of file.
    pub fn recv(&mut self) -> Value {
        self.try_recv().expect("the server closed its output early")
    }

    /// Reads one response line, `None` at end of file.
    pub fn try_recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = self.rx.read_line(&mut line).expect("read from the server");
        if n == 0 {
            return None;
        }
        assert!(line.ends_with('\n'), "a frame without its newline: {line:?}");
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
    }

    /// Sends `text` and reads one response.
    pub fn call(&mut self, text: &str) -> Value {
        self.send(text);
        self.recv()
    }
}

/// Builds example `name` of mcp-io-mio with the profile of the running test (a no-op when
/// `cargo test` just built it) and returns the path cargo reports for it. Asking cargo
/// rather than guessing a path under `target/` keeps this right when only this test
/// target was built, or with a custom target directory.
pub fn example_binary(name: &str) -> std::path::PathBuf {
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<this test>
    let profile = exe.parent().and_then(|d| d.parent()).and_then(|d| d.file_name()).and_then(|n| n.to_str());
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q", "-p", "mcp-io-mio", "--example", name, "--message-format=json"]);
    if let Some(p) = profile.filter(|p| *p != "debug") {
        cmd.args(["--profile", p]);
    }
    let out = cmd.stderr(Stdio::inherit()).output().expect("run cargo build");
    assert!(out.status.success(), "cargo build --example {name} failed");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .and_then(|m| m["executable"].as_str().map(std::path::PathBuf::from))
        .expect("cargo reported the example's executable")
}
