//! End to end: the `everything` example as a child process serving Streamable HTTP on
//! 127.0.0.1, port 0.

mod example_support;
mod http_support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use example_support::example_binary;
use http_support::{Conn, PATIENCE, body, first_text, patient, post};
use serde_json::json;

/// Kills the child when dropped, so a failing test leaves no server behind.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the example on `--http 127.0.0.1:0` and reads the address it prints.
fn start() -> (Server, SocketAddr) {
    let mut child = Command::new(example_binary())
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the example");
    let stderr = child.stderr.take().expect("stderr");
    let server = Server(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("listening on http://") {
                let _ = tx.send(url.trim_end_matches("/mcp").to_owned());
            }
        }
    });
    let addr = rx.recv_timeout(PATIENCE).expect("the example says where it listens");
    (server, addr.parse().expect("a socket address"))
}

#[tokio::test]
async fn the_example_serves_http_by_address_it_prints() {
    let (_server, addr) = start();
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    let mut conn = Conn::open(addr).await;

    conn.send(&post(addr, "tools/list", None, &body(1, "tools/list", ""))).await;
    let list = conn.response().await.json();
    let tools = list["result"]["tools"].as_array().expect("tools");
    let region = tools.iter().find(|t| t["name"] == "test_x_mcp_header").expect("the x-mcp-header tool");
    assert_eq!(region["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region");

    let r = conn.call(2, "echo", &json!({ "text": "over http" })).await;
    assert_eq!(r.status, 200);
    assert_eq!(first_text(&r.json()), "over http");

    let call = post(
        addr,
        "tools/call",
        Some("test_x_mcp_header"),
        &http_support::call_body(3, "test_x_mcp_header", &json!({ "region": "eu-west-1" })),
    );
    conn.send(&call.replacen("\r\n", "\r\nMcp-Param-Region: eu-west-1\r\n", 1)).await;
    let r = conn.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_text(&r.json()), "region: eu-west-1");

    // Without the mirrored header the engine refuses the call.
    conn.send(&call).await;
    let r = conn.response().await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32020);

    // A foreign Host is refused: the server listens on loopback.
    let mut conn = Conn::open(addr).await;
    let req = post(addr, "tools/list", None, &body(4, "tools/list", ""))
        .replace(&format!("Host: 127.0.0.1:{}", addr.port()), "Host: evil.example");
    conn.send(&req).await;
    assert_eq!(patient("refusal", conn.response()).await.status, 403);
}

#[test]
fn the_example_listens_on_loopback_only() {
    for addr in ["0.0.0.0:0", "192.0.2.1:3000", "[::]:0"] {
        let out = Command::new(example_binary())
            .args(["--http", addr])
            .stdin(Stdio::null())
            .output()
            .expect("run the example");
        assert_eq!(out.status.code(), Some(2), "{addr}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("loopback"), "{stderr}");
    }
    let out = Command::new(example_binary())
        .args(["--http", "not-an-address"])
        .stdin(Stdio::null())
        .output()
        .expect("run the example");
    assert_eq!(out.status.code(), Some(2));
}
