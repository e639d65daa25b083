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
    start_with(&[])
}

/// Starts the example on `--http 127.0.0.1:0` with `args` too.
fn start_with(args: &[&str]) -> (Server, SocketAddr) {
    let mut child = Command::new(example_binary())
        .args(["--http", "127.0.0.1:0"])
        .args(args)
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

/// With `--connectome` the demo serves its wiring diagram: the observed graph counts the
/// calls made and the reads `test_read_resource` reported through its handler context,
/// and `connectome://declared` is the file `--connectome-export` writes.
#[tokio::test]
async fn the_example_serves_its_connectome() {
    let (_server, addr) = start_with(&["--connectome"]);
    let mut conn = Conn::open(addr).await;
    for (id, uri) in [(1, "test://static-text"), (2, "test://template/5/data"), (3, "test://template/6/data")]
    {
        let r = conn.call(id, "test_read_resource", &json!({ "uri": uri })).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert!(!first_text(&r.json()).is_empty());
    }
    let r = conn.call(4, "echo", &json!({ "text": "hi" })).await;
    assert_eq!(first_text(&r.json()), "hi");

    let read = |id: u64, uri: &str| {
        let params = format!(r#""uri":"{uri}""#);
        post(addr, "resources/read", Some(uri), &body(id, "resources/read", &params))
    };
    // A handler's report travels on the channel its reply takes after it, so each call's
    // read was counted before its answer was written.
    conn.send(&read(5, "connectome://observed")).await;
    let r = patient("observed", conn.response()).await;
    assert_eq!(r.status, 200, "{r:?}");
    let contents = &r.json()["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "application/json");
    let observed: serde_json::Value = serde_json::from_str(contents["text"].as_str().expect("text")).unwrap();
    let edges = observed["edges"].as_array().unwrap();
    let count = |kind: &str, to: &str| {
        edges.iter().find(|e| e["kind"] == kind && e["to"] == to).map(|e| e["count"].clone())
    };
    assert_eq!(count("dispatches", "tool:test_read_resource"), Some(json!(3)));
    assert_eq!(count("dispatches", "tool:echo"), Some(json!(1)));
    assert_eq!(count("reads", "resource:test://static-text"), Some(json!(1)));
    assert_eq!(count("reads", "template:test://template/{id}/data"), Some(json!(2)));
    let reader = edges.iter().find(|e| e["kind"] == "reads").unwrap();
    assert_eq!(reader["from"], "tool:test_read_resource");

    // The declared graph served is byte for byte the exported file.
    conn.send(&read(6, "connectome://declared")).await;
    let r = conn.response().await;
    let served = r.json()["result"]["contents"][0]["text"].as_str().unwrap().to_owned();
    let file = std::env::temp_dir().join(format!("everything-declared-{}.json", std::process::id()));
    let out = Command::new(example_binary())
        .args(["--connectome-export", file.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .expect("run the export");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let exported = std::fs::read(&file).unwrap();
    let _ = std::fs::remove_file(&file);
    assert_eq!(served.as_bytes(), exported, "connectome://declared is the export");
    use sha2::Digest as _;
    let hash: String = sha2::Sha256::digest(&exported).iter().map(|b| format!("{b:02x}")).collect();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&hash), "the export prints its SHA-256");
}
