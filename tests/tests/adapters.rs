//! The adapters only move bytes: driving the same transcript through the engine directly,
//! through `mcp-io-mio` over OS pipes and through `mcp-io-tokio` over an in-memory duplex
//! gives byte-identical output.

use std::io::{Read, Write};
use std::sync::Arc;

use mcp_fixture as everything;
use mcp_io_tokio::ToolReply;
use mcp_io_tokio::handler::tool_fn;
use mcp_tests::{drive, everything_engine, legacy_open, modern, notification, request};
use serde_json::json;

/// A transcript whose host work is only `echo`, so any host answering echo the same way
/// must produce the same bytes.
fn transcript() -> Vec<u8> {
    let mut s = String::new();
    s.push_str(&modern(1, "server/discover", json!({})));
    for i in 0..40 {
        s.push_str(&modern(
            i + 10,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": format!("n{i}\u{e9}")}}),
        ));
    }
    s.push_str("{broken\n");
    s.push_str(&modern("list", "tools/list", json!({})));
    s.push_str(&legacy_open("2025-06-18"));
    s.push_str(&request(99, "tools/call", json!({"name": "echo", "arguments": {"text": 5}})));
    s.push_str(&notification("notifications/cancelled", json!({"requestId": 12345})));
    s.push_str(&request(100, "ping", json!({})));
    s.into_bytes()
}

fn direct() -> Vec<u8> {
    drive(&mut everything_engine(), &transcript(), &[usize::MAX])
}

#[test]
fn mio_over_pipes_writes_what_the_engine_writes() {
    let (client_tx, server_rx) = mio::unix::pipe::new().unwrap();
    let (server_tx, client_rx) = mio::unix::pipe::new().unwrap();
    // mio makes both ends non-blocking; the test's client side blocks.
    client_tx.set_nonblocking(false).unwrap();
    client_rx.set_nonblocking(false).unwrap();
    let server = mcp_io_mio::StdioServer::new(everything_engine(), server_rx, server_tx).unwrap();
    let handle = std::thread::spawn(move || server.run(everything::respond));
    let input = transcript();
    let writer = std::thread::spawn(move || {
        let mut tx = std::fs::File::from(std::os::fd::OwnedFd::from(client_tx));
        tx.write_all(&input).unwrap();
        // Dropping the file closes the pipe: EOF for the server.
    });
    let mut rx = std::fs::File::from(std::os::fd::OwnedFd::from(client_rx));
    let mut out = Vec::new();
    rx.read_to_end(&mut out).unwrap();
    writer.join().unwrap();
    handle.join().unwrap().unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(direct()).unwrap());
}

#[test]
fn tokio_over_a_duplex_writes_what_the_engine_writes() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let out = rt.block_on(async {
        let (client, server) = tokio::io::duplex(4096);
        let (read_half, write_half) = tokio::io::split(server);
        let handler = Arc::new(tool_fn(|call| async move {
            #[derive(serde::Deserialize)]
            struct Echo {
                text: String,
            }
            let Echo { text } = call.deserialize()?;
            Ok(ToolReply::text(text))
        }));
        let serving =
            tokio::spawn(mcp_io_tokio::stdio::serve(everything_engine(), handler, read_half, write_half));
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut rx, mut tx) = tokio::io::split(client);
        let input = transcript();
        let writing = tokio::spawn(async move {
            tx.write_all(&input).await.unwrap();
            tx.shutdown().await.unwrap();
        });
        let mut out = Vec::new();
        rx.read_to_end(&mut out).await.unwrap();
        writing.await.unwrap();
        serving.await.unwrap().unwrap();
        out
    });
    // Tool answers come back in completion order; everything else is in request order.
    let mut got = mcp_tests::lines(&out);
    let mut want = mcp_tests::lines(&direct());
    let key = |v: &serde_json::Value| v["id"].to_string();
    got.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(got, want);
}

/// An async handler asks for input with an owned reply; the retry brings the response and
/// the handler's state back; under a legacy revision the refused reply becomes an error
/// rather than a ticket left open.
#[test]
fn tokio_handlers_take_several_rounds() {
    use mcp_engine::mrtr::InputRequestBuf;
    use mcp_engine::{Config, Engine};
    use mcp_io_tokio::reply::InputRequiredReply;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mut config = Config::new("s", "1");
        config.request_state_key([1; 32]);
        let engine = Engine::new(config, everything::catalog());
        let handler = Arc::new(tool_fn(|call| async move {
            match (call.input.response("k"), call.input.request_state()) {
                (Some(roots), Some(b"round-1")) => Ok(ToolReply::text(format!("roots: {roots}"))),
                _ => Ok(ToolReply::input_required(
                    InputRequiredReply::new(vec![InputRequestBuf::list_roots("k")]).with_state("round-1"),
                )),
            }
        }));
        let (client, server) = tokio::io::duplex(4096);
        let (read_half, write_half) = tokio::io::split(server);
        let serving = tokio::spawn(mcp_io_tokio::stdio::serve(engine, handler, read_half, write_half));
        let (rx, mut tx) = tokio::io::split(client);
        let mut rx = BufReader::new(rx).lines();
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "roots": {} }
        });
        let call = request(1, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" }, "_meta": meta }));
        tx.write_all(call.as_bytes()).await.unwrap();
        let r1: serde_json::Value = serde_json::from_str(&rx.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(r1["result"]["resultType"], "input_required", "{r1}");
        assert_eq!(r1["result"]["inputRequests"]["k"]["method"], "roots/list");
        let retry = request(
            2,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "x" }, "_meta": meta,
                    "requestState": r1["result"]["requestState"], "inputResponses": { "k": { "roots": [] } } }),
        );
        tx.write_all(retry.as_bytes()).await.unwrap();
        let r2: serde_json::Value = serde_json::from_str(&rx.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(r2["result"]["content"][0]["text"], r#"roots: {"roots":[]}"#, "{r2}");

        tx.write_all(legacy_open("2025-11-25").as_bytes()).await.unwrap();
        let _init = rx.next_line().await.unwrap().unwrap();
        let legacy = request(3, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } }));
        tx.write_all(legacy.as_bytes()).await.unwrap();
        let r3: serde_json::Value = serde_json::from_str(&rx.next_line().await.unwrap().unwrap()).unwrap();
        // A session whose client declared no roots capability cannot be asked: the same
        // refusal as on 2026-07-28.
        assert_eq!(r3["id"], 3);
        assert_eq!(r3["error"]["code"], -32021, "{r3}");
        assert_eq!(r3["error"]["data"]["requiredCapabilities"], json!({ "roots": {} }), "{r3}");
        tx.shutdown().await.unwrap();
        assert!(rx.next_line().await.unwrap().is_none());
        serving.await.unwrap().unwrap();
    });
}
