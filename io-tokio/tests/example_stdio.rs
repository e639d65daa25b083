//! End to end: the `everything` example as a child process over real stdin/stdout pipes.
//!
//! Its async answers are compared with the engine's own synchronous fixture answers
//! (`mcp_fixture::respond`) for the same requests.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcp_engine::Engine;
use mcp_fixture as everything;
use serde_json::Value;

/// The example's catalog: the engine's fixture plus `test_x_mcp_header`.
#[allow(dead_code, unreachable_pub)]
#[path = "../examples/fixture/mod.rs"]
mod fixture;

mod example_support;
use example_support::example_binary;

/// Hang protection only: no assertion depends on it.
const PATIENCE: Duration = Duration::from_secs(60);

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn requests() -> Vec<String> {
    let modern = |id: u32, method: &str, params: &str| {
        let sep = if params.is_empty() { "" } else { "," };
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}{sep}{META}}}}}"#)
    };
    let mut id = 0;
    let mut next = || {
        id += 1;
        id
    };
    let mut reqs =
        vec![format!(r#"{{"jsonrpc":"2.0","id":{},"method":"server/discover","params":{{}}}}"#, next())];
    for method in ["tools/list", "resources/list", "resources/templates/list", "prompts/list"] {
        reqs.push(modern(next(), method, ""));
    }
    let tools = [
        ("echo", r#"{"text":"hello \"pipes\" ☃"}"#),
        ("echo", r#"{"text":7}"#),
        ("test_simple_text", "{}"),
        ("test_image_content", "{}"),
        ("test_audio_content", "{}"),
        ("test_embedded_resource", "{}"),
        ("test_multiple_content_types", "{}"),
        ("test_error_handling", "{}"),
        ("test_logging_tool", "{}"),
        ("test_streaming_elicitation", "{}"),
        ("test_missing_capability", "{}"),
        ("no_such_tool", "{}"),
    ];
    for (name, args) in tools {
        reqs.push(modern(next(), "tools/call", &format!(r#""name":"{name}","arguments":{args}"#)));
    }
    for uri in ["test://static-text", "test://static-binary", "test://template/42/data", "test://nope"] {
        reqs.push(modern(next(), "resources/read", &format!(r#""uri":"{uri}""#)));
    }
    let prompts = [
        ("test_simple_prompt", "{}"),
        ("test_prompt_with_arguments", r#"{"arg1":"a","arg2":"b"}"#),
        ("test_prompt_with_embedded_resource", r#"{"resourceUri":"test://x"}"#),
        ("test_prompt_with_image", "{}"),
        ("test_prompt_with_arguments", r#"{"arg1":"a"}"#),
    ];
    for (name, args) in prompts {
        reqs.push(modern(next(), "prompts/get", &format!(r#""name":"{name}","arguments":{args}"#)));
    }
    reqs.push(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}"#.to_owned(),
    );
    reqs.push(
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#
            .to_owned(),
    );
    reqs.push(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned());
    reqs.push(r#"{"jsonrpc":"2.0","id":"ping","method":"ping"}"#.to_owned());
    reqs.push(r#"{"jsonrpc":"2.0","id":"legacy-echo","method":"tools/call","params":{"name":"echo","arguments":{"text":"old"}}}"#.to_owned());
    // The example's own tool (the engine's fixture handler does not know it).
    reqs.push(
        modern(0, "tools/call", r#""name":"test_x_mcp_header","arguments":{"region":"eu-west"}"#).replacen(
            r#""id":0"#,
            r#""id":"region""#,
            1,
        ),
    );
    reqs
}

/// The engine's own answers to `input`, with the synchronous fixture handler.
fn reference_answers(input: &str) -> BTreeMap<String, Value> {
    let config = everything::config();
    let mut engine = Engine::new(config, fixture::catalog());
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let bytes = input.as_bytes();
    let mut fed = 0;
    let now = mcp_engine::Instant::ZERO;
    loop {
        fed += engine.handle_input(now, &bytes[fed..]);
        if fed == bytes.len() {
            engine.handle_eof(now);
        }
        while let Some(event) = engine.poll_event() {
            everything::respond(event);
        }
        loop {
            let n = engine.poll_transmit(&mut buf);
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        if engine.is_finished() {
            break;
        }
    }
    by_id(std::str::from_utf8(&out).expect("UTF-8 output").lines())
}

fn by_id<'a>(lines: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, Value> {
    let mut map = BTreeMap::new();
    for line in lines {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "not a JSON-RPC message: {line}");
        let id = v["id"].to_string();
        assert!(map.insert(id.clone(), v).is_none(), "id {id} answered twice");
    }
    map
}

fn wait_with_patience(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the example did not exit after stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn example_answers_like_the_fixture_over_real_pipes_and_exits_cleanly() {
    let reqs = requests();
    let input: String = reqs.iter().map(|r| format!("{r}\n")).collect();
    let expected = reference_answers(&input);
    assert_eq!(expected.len(), reqs.len() - 2, "every request but the 2 notifications is answered");

    let mut child = Command::new(example_binary())
        .arg("--stdio")
        .env("RUST_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the example");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("read stdout");
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stderr = child.stderr.take().expect("stderr");
    let logs = std::thread::spawn(move || std::io::read_to_string(stderr).expect("read stderr"));

    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write requests");
    stdin.flush().expect("flush");
    let mut lines = Vec::new();
    while lines.len() < expected.len() {
        lines.push(rx.recv_timeout(PATIENCE).expect("an answer in time"));
    }
    // Close stdin: the server finishes and exits 0.
    drop(stdin);
    let status = wait_with_patience(&mut child);
    reader.join().expect("stdout reader");
    lines.extend(rx.try_iter());
    let logs = logs.join().expect("stderr reader");
    assert!(status.success(), "exit status {status}; stderr:\n{logs}");
    assert_eq!(status.code(), Some(0));

    let mut got = by_id(lines.iter().map(String::as_str));
    let region = got.remove("\"region\"").expect("test_x_mcp_header is answered");
    assert_eq!(region["result"]["content"][0]["text"], "region: eu-west", "{region}");
    let mut expected = expected;
    expected.remove("\"region\"");
    assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
    for (id, want) in &expected {
        assert_eq!(&got[id], want, "answer to id {id} differs from the engine's fixture answer");
    }
    // Spot checks, in case both sides went wrong the same way.
    assert_eq!(got["6"]["result"]["content"][0]["text"], "hello \"pipes\" ☃");
    assert_eq!(got["\"ping\""]["result"], serde_json::json!({}));
    assert_eq!(got["\"legacy-echo\""]["result"]["content"][0]["text"], "old");
    assert!(logs.contains("serving the everything fixture"), "logs go to stderr: {logs}");
}

#[test]
fn example_rejects_unknown_flags_with_usage() {
    let out =
        Command::new(example_binary()).arg("--tcp").stdin(Stdio::null()).output().expect("run the example");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing on stdout");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("usage: everything"), "{stderr}");
    assert!(stderr.contains("--tcp"), "{stderr}");
}
