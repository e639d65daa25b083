//! End to end: the `everything` example binary, driven through its stdin and stdout, and
//! over HTTP.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};
use support::http::{Client, echo_post};
use support::{discover, echo, legacy_open, modern, ping, text_of, within};

/// The `everything` example, built once.
fn example() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| support::example_binary("everything")).clone()
}

/// The example over stdio: the child, its stdin, and its stdout read by lines.
fn spawn_stdio(bin: PathBuf) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    spawn_stdio_with(bin, &[])
}

/// The example over stdio with `args` too.
fn spawn_stdio_with(bin: PathBuf, args: &[&str]) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut child = Command::new(bin)
        .arg("--stdio")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the example");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    (child, stdin, stdout)
}

#[test]
fn serves_stdio_and_exits_0_when_stdin_closes() {
    let bin = example();
    within(move || {
        let (mut child, mut stdin, mut stdout) = spawn_stdio(bin);
        let mut call = |line: &str| -> Value {
            stdin.write_all(line.as_bytes()).expect("write");
            let mut response = String::new();
            stdout.read_line(&mut response).expect("read");
            serde_json::from_str(&response).unwrap_or_else(|e| panic!("not JSON ({e}): {response:?}"))
        };

        let r = call(&discover(1));
        assert_eq!(r["id"], 1);
        let info = &r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
        assert_eq!(info["name"], "mcp-engine-everything");
        assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));

        let r = call(&echo(2, "hi"));
        assert_eq!(r["id"], 2);
        assert_eq!(text_of(&r), "hi");

        let r = call(&modern(3, "resources/read", json!({ "uri": "test://static-text" })));
        assert_eq!(r["result"]["contents"][0]["text"], mcp_fixture::STATIC_TEXT);

        let r = call(&legacy_open());
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
        let r = call(&ping(4));
        assert_eq!(r, json!({ "jsonrpc": "2.0", "id": 4, "result": {} }));

        drop(stdin); // end of file: the server finishes and exits
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).expect("read to end");
        assert_eq!(rest, "", "nothing after the last answer");
        let status = child.wait().expect("wait");
        assert!(status.success(), "exit status {status}");
    });
}

/// With `--connectome` the mio demo reports `test_read_resource`'s reads through the
/// event (`CallTool::report_read`), and `connectome://observed` shows them with the calls.
#[test]
fn the_connectome_counts_the_calls_and_the_reported_reads() {
    let bin = example();
    within(move || {
        let (mut child, mut stdin, mut stdout) = spawn_stdio_with(bin, &["--connectome"]);
        let mut call = |line: &str| -> Value {
            stdin.write_all(line.as_bytes()).expect("write");
            let mut response = String::new();
            stdout.read_line(&mut response).expect("read");
            serde_json::from_str(&response).unwrap_or_else(|e| panic!("not JSON ({e}): {response:?}"))
        };
        let read_tool = json!({ "name": "test_read_resource", "arguments": { "uri": "test://static-text" } });
        let r = call(&modern(1, "tools/call", read_tool));
        assert_eq!(text_of(&r), mcp_fixture::STATIC_TEXT);
        let r = call(&modern(2, "resources/read", json!({ "uri": "connectome://observed" })));
        let g: Value =
            serde_json::from_str(r["result"]["contents"][0]["text"].as_str().expect("text")).unwrap();
        let edge = |kind: &str, from: &str, to: &str| {
            g["edges"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["kind"] == kind && e["from"] == from && e["to"] == to)
                .cloned()
        };
        let read = edge("reads", "tool:test_read_resource", "resource:test://static-text").expect("the read");
        assert_eq!(read["count"], 1);
        let called = edge("calls", "client:client", "method:tools/call").expect("the call");
        assert_eq!(called["count"], 1);
        drop(stdin);
        assert!(child.wait().expect("wait").success());
    });
}

/// The slow tools keep their ticket and send each message from the loop's timer
/// (`StdioServer::run_timed`), while the client sends nothing more: every message comes,
/// in order, then the result. (Without the loop waking on the host's time, nothing after
/// the first message would ever be sent, and `within` would fail the test.)
#[test]
fn slow_tools_send_their_messages_one_by_one_from_the_loops_timer() {
    let bin = example();
    within(move || {
        let (mut child, mut stdin, mut stdout) = spawn_stdio(bin);
        let mut next = || -> Value {
            let mut line = String::new();
            stdout.read_line(&mut line).expect("read");
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
        };

        let mut meta = support::meta();
        meta["progressToken"] = json!("p1");
        let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "test_tool_with_progress", "arguments": {}, "_meta": meta } });
        stdin.write_all(format!("{call}\n").as_bytes()).expect("write");
        for (progress, message) in [(0.0, "started"), (50.0, "halfway"), (100.0, "done")] {
            let n = next();
            assert_eq!(n["method"], "notifications/progress", "{n}");
            assert_eq!(n["params"]["progressToken"], "p1");
            assert_eq!(n["params"]["progress"], progress);
            assert_eq!(n["params"]["message"], message);
        }
        let r = next();
        assert_eq!(r["id"], 1);
        assert_eq!(text_of(&r), "Progress tool finished.");

        let mut meta = support::meta();
        meta["io.modelcontextprotocol/logLevel"] = json!("info");
        let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": "test_logging_tool", "arguments": {}, "_meta": meta } });
        stdin.write_all(format!("{call}\n").as_bytes()).expect("write");
        for text in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
            let n = next();
            assert_eq!(n["method"], "notifications/message", "{n}");
            assert_eq!(n["params"]["level"], "info");
            assert_eq!(n["params"]["data"], text);
        }
        let r = next();
        assert_eq!(r["id"], 2);
        assert_eq!(text_of(&r), "Logging tool finished.");

        drop(stdin);
        assert!(child.wait().expect("wait").success());
    });
}

#[test]
fn pipelined_requests_then_eof() {
    let bin = example();
    within(move || {
        let (mut child, mut stdin, mut stdout) = spawn_stdio(bin);
        let input: String = (1..=200).map(|i| echo(i, &format!("m{i}"))).collect();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let mut out = String::new();
        stdout.read_to_string(&mut out).expect("read");
        writer.join().expect("writer thread").expect("write");
        let responses: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).expect("json")).collect();
        assert_eq!(responses.len(), 200);
        for (i, r) in (1..).zip(&responses) {
            assert_eq!(r["id"], i);
            assert_eq!(text_of(r), format!("m{i}"));
        }
        assert!(child.wait().expect("wait").success());
    });
}

#[test]
fn unknown_flag_prints_usage_and_exits_2() {
    let bin = example();
    within(move || {
        let out = Command::new(bin).arg("--tcp").stdin(Stdio::null()).output().expect("run the example");
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty(), "stdout carries protocol frames only");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("usage:") && err.contains("--tcp"), "{err}");
    });
}

/// Kills the child when dropped, so that a failing test leaves no server behind.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serves_http_on_the_address_it_prints() {
    let bin = example();
    within(move || {
        let mut child = KillOnDrop(
            Command::new(bin)
                .args(["--http", "127.0.0.1:0"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn the example"),
        );
        let mut stderr = BufReader::new(child.0.stderr.take().expect("stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("read stderr");
        let addr: SocketAddr = line
            .trim_end()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .and_then(|addr| addr.parse().ok())
            .unwrap_or_else(|| panic!("not a listening line: {line:?}"));
        assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");

        let mut client = Client::connect(addr);
        assert_eq!(client.call(&echo_post(addr, 1, "hi", "")).echo_text(1), "hi");
        let r = client.call(&echo_post(addr, 2, "again", ""));
        assert_eq!(r.echo_text(2), "again");
        let info = &r.json()["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
        assert_eq!(info["name"], "mcp-engine-everything");
        assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));

        child.0.kill().expect("kill the example");
        child.0.wait().expect("wait");
        let mut out = Vec::new();
        child.0.stdout.take().expect("stdout").read_to_end(&mut out).expect("read stdout");
        assert!(out.is_empty(), "nothing on stdout over HTTP: {:?}", String::from_utf8_lossy(&out));
    });
}

#[test]
fn non_loopback_addresses_are_refused_with_exit_2() {
    let bin = example();
    within(move || {
        for addr in ["0.0.0.0:3000", "[::]:3000", "192.0.2.1:3000", "not-an-address"] {
            let out = Command::new(&bin).args(["--http", addr]).stdin(Stdio::null()).output().expect("run");
            assert_eq!(out.status.code(), Some(2), "{addr}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(addr) && err.contains("usage:"), "{err}");
            assert!(!err.contains("listening"), "{err}");
        }
    });
}
