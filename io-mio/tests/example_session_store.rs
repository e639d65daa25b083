//! End to end: the `session_store` example keeps its HTTP sessions in a directory, so a
//! session opened before a restart is served after it, and `DELETE` removes its file.

mod support;

use std::io::BufRead;
use std::io::BufReader;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use support::http::Client;
use support::within;

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the example on a free port with sessions in `dir`; returns it and its address.
fn start(bin: &Path, dir: &Path) -> (KillOnDrop, SocketAddr) {
    let mut child = KillOnDrop(
        Command::new(bin)
            .args(["--addr", "127.0.0.1:0", "--dir"])
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the example"),
    );
    let mut stderr = BufReader::new(child.0.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("read stderr");
    let addr = line
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.split_once("/mcp"))
        .and_then(|(addr, _)| addr.parse().ok())
        .unwrap_or_else(|| panic!("not a listening line: {line:?}"));
    (child, addr)
}

fn post(addr: SocketAddr, session: Option<&str>, body: &str) -> Vec<u8> {
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    );
    if let Some(id) = session {
        req.push_str(&format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    req.into_bytes()
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const SET_LEVEL: &str = r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;

#[test]
fn a_session_outlives_a_restart_and_delete_removes_its_file() {
    let bin = support::example_binary("session_store");
    let dir = std::env::temp_dir().join(format!("mcp-session-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = {
        let dir = dir.clone();
        move || -> usize {
            std::fs::read_dir(&dir)
                .map(|d| {
                    d.filter_map(Result::ok)
                        .filter(|e| e.path().extension().is_some_and(|x| x == "session"))
                        .count()
                })
                .unwrap_or(0)
        }
    };
    within(move || {
        let (first, addr) = start(&bin, &dir);
        let mut c = Client::connect(addr);
        let r = c.call(&post(addr, None, INITIALIZE));
        assert_eq!(r.status, 200, "{r:?}");
        let id = r.header("mcp-session-id").expect("a session id").to_owned();
        assert_eq!(files(), 1, "stored before the answer");
        assert_eq!(c.call(&post(addr, Some(&id), SET_LEVEL)).status, 200);
        drop(c);
        drop(first);

        let (_second, addr) = start(&bin, &dir);
        let mut c = Client::connect(addr);
        let r = c.call(&post(addr, Some(&id), PING));
        assert_eq!(r.status, 200, "the restarted server loads the session: {r:?}");
        assert_eq!(r.json()["result"], serde_json::json!({}));
        let r = c
            .call(format!("DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {id}\r\n\r\n").as_bytes());
        assert_eq!(r.status, 200);
        assert_eq!(files(), 0, "its file is gone");
        assert_eq!(c.call(&post(addr, Some(&id), PING)).status, 404);
        let _ = std::fs::remove_dir_all(&dir);
    });
}
