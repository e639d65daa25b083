//! A test client for `serve` over an in-memory duplex pipe.

#![allow(dead_code, unreachable_pub)]

use std::io;
use std::sync::Arc;
use std::time::Duration;

use mcp_engine::{Catalog, Config, Engine, Tool};
use mcp_io_tokio::Handler;
use mcp_io_tokio::stdio::serve;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Hang protection only: no assertion depends on it.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// A `tools/call` request of the `2026-07-28` revision.
pub fn call(id: impl std::fmt::Display, tool: &str, arguments: &Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},{META}}}}}"#
    )
}

/// A `resources/read` request of the `2026-07-28` revision.
pub fn read(id: impl std::fmt::Display, uri: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"{uri}",{META}}}}}"#)
}

/// A `prompts/get` request of the `2026-07-28` revision.
pub fn get(id: impl std::fmt::Display, prompt: &str, arguments: &Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"prompts/get","params":{{"name":"{prompt}","arguments":{arguments},{META}}}}}"#
    )
}

/// `notifications/cancelled` for request `id`.
pub fn cancel(id: impl std::fmt::Display) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#)
}

/// A catalog with the tools the adapter tests call.
pub fn tools_catalog(names: &[&str]) -> Catalog {
    let mut b = Catalog::builder().tool(Tool::new("echo").input_schema(json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
    })));
    for name in names {
        b = b.tool(Tool::new(*name));
    }
    b.build().expect("valid catalog")
}

/// The client side of a served duplex stream.
pub struct Client {
    writer: Option<WriteHalf<DuplexStream>>,
    lines: mpsc::UnboundedReceiver<String>,
    pub server: JoinHandle<io::Result<()>>,
}

impl Client {
    /// Serves `engine` with `handler` on a fresh duplex pipe of `pipe` bytes per direction.
    pub fn start_with<H: Handler>(engine: Engine, handler: Arc<H>, pipe: usize) -> Self {
        let (client, server) = tokio::io::duplex(pipe);
        let (server_r, server_w) = tokio::io::split(server);
        let server = tokio::spawn(serve(engine, handler, server_r, server_w));
        let (client_r, client_w) = tokio::io::split(client);
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(client_r).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self { writer: Some(client_w), lines, server }
    }

    pub fn start<H: Handler>(config: Config, catalog: Catalog, handler: Arc<H>) -> Self {
        Self::start_with(Engine::new(config, catalog), handler, 64 * 1024)
    }

    /// Sends one frame (a newline is appended).
    pub async fn send(&mut self, frame: &str) {
        let w = self.writer.as_mut().expect("input still open");
        w.write_all(frame.as_bytes()).await.expect("write frame");
        w.write_all(b"\n").await.expect("write newline");
        w.flush().await.expect("flush");
    }

    /// Sends raw bytes as they are.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let w = self.writer.as_mut().expect("input still open");
        w.write_all(bytes).await.expect("write bytes");
        w.flush().await.expect("flush");
    }

    /// The next output line, parsed.
    pub async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.lines.recv())
            .await
            .expect("a response in time")
            .expect("the server's output is still open");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// An output line if one is already there.
    pub fn try_recv(&mut self) -> Option<String> {
        self.lines.try_recv().ok()
    }

    /// Closes the client's output: the server sees end of file.
    pub async fn close(&mut self) {
        if let Some(mut w) = self.writer.take() {
            w.shutdown().await.expect("shutdown");
        }
    }

    /// Closes input, reads every remaining line until the server closes its output, and
    /// checks that `serve` returned `Ok`.
    pub async fn finish(mut self) -> Vec<Value> {
        self.close().await;
        let mut rest = Vec::new();
        while let Some(line) =
            tokio::time::timeout(PATIENCE, self.lines.recv()).await.expect("output ends in time")
        {
            rest.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")));
        }
        let result = tokio::time::timeout(PATIENCE, self.server).await.expect("serve returns in time");
        result.expect("serve did not panic").expect("serve returned Ok");
        rest
    }
}

/// The text of the first content block of a tool result.
pub fn first_text(response: &Value) -> &str {
    response["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {response}"))
}
