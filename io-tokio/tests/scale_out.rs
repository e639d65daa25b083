//! Two nodes of the tokio `everything` demo on one PostgreSQL database (`--store`) sharing
//! a key (`--keys-file`; the second node mid-rotation: it seals with a new key and still
//! opens with the first): a `2025-11-25` session opened on one node is served by the
//! other, which loads it from the store; a node with another key refuses the session id
//! without a lookup (`404`); a request stream written on one node is resumed with
//! `Last-Event-ID` on the other (from the PostgreSQL event store). The first steps of
//! issue 16's three-node scenario. And a node killed mid-task and restarted under the same
//! `--node-name` reads its running task as `failed` at once (issue 17), and a session's
//! tasks made on two nodes are its own on either, without a principal (issue 27).
//!
//! PostgreSQL: CI's server (`MCP_TEST_PG_URL`), else one the test starts (see
//! `pg_support`).

#![cfg(all(feature = "postgres", feature = "oauth"))]

mod http_support;
mod oauth_support;
mod pg_support;
mod store_support;

use oauth_support::demo::{self, Adapter, KeysFile};
use oauth_support::legacy_post;
use serde_json::json;
use store_support::{exchange, resume_until, sse_events};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_on_one_node_is_served_by_another_with_the_same_key_and_store() {
    if !pg_support::available() {
        return;
    }
    let db = pg_support::database();
    let first = KeysFile::new("first", &[0x5a]);
    // Node B mid-rotation: it seals with a new key and still opens what the first sealed.
    let rotated = KeysFile::new("rotated", &[0x77, 0x5a]);
    let other = KeysFile::new("other", &[0xa5]);
    let start = |keys: &KeysFile| {
        let args = ["--store", db.url.as_str(), "--keys-file", keys.path()];
        demo::start(Adapter::Tokio, &args)
    };
    let (a, b, c) = (start(&first), start(&rotated), start(&other));

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = legacy_post(a.addr, "", &init, None, None).await;
    assert_eq!(r.status, 200, "{r:?}");
    let session = r.header("mcp-session-id").expect("a session").to_owned();
    let v = Some("2025-11-25");
    // `initialized` on node B: it loads the session from the store and saves the change.
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = legacy_post(b.addr, "", &initialized, v, Some(&session)).await;
    assert_eq!(r.status, 202, "{r:?}");
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"text": "across"}}})
    };
    for (node, id) in [(&b, 2), (&a, 3), (&b, 4)] {
        let r = legacy_post(node.addr, "", &call(id), v, Some(&session)).await;
        assert_eq!(r.status, 200, "{r:?}");
        let body = r.json();
        assert_eq!(body["id"], id, "{body}");
        assert!(
            body["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("across")),
            "{body}"
        );
    }
    // A node sealing with another key does not know the id: refused without a lookup.
    let r = legacy_post(c.addr, "", &call(5), v, Some(&session)).await;
    assert_eq!(r.status, 404, "{r:?}");
    drop((a, b, c));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_written_on_one_node_is_resumed_with_last_event_id_on_another() {
    if !pg_support::available() {
        return;
    }
    let db = pg_support::database();
    let keys = KeysFile::new("replay", &[0x5a]);
    let start = || demo::start(Adapter::Tokio, &["--store", db.url.as_str(), "--keys-file", keys.path()]);
    let (a, b) = (start(), start());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = legacy_post(a.addr, "", &init, None, None).await;
    let session = r.header("mcp-session-id").expect("a session").to_owned();
    let v = Some("2025-11-25");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(legacy_post(a.addr, "", &initialized, v, Some(&session)).await.status, 202);
    let level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "info"}});
    assert_eq!(legacy_post(a.addr, "", &level, v, Some(&session)).await.status, 200);

    // On node A, a call that streams three log messages, then its answer.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "test_tool_with_logging", "arguments": {}}})
    .to_string();
    let head = |addr: std::net::SocketAddr| {
        format!(
            "Host: 127.0.0.1:{}\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session}\r\n\
             Connection: close\r\n",
            addr.port()
        )
    };
    let post = |body: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\n{}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            head(a.addr),
            body.len()
        )
    };
    let written = sse_events(&http_support::patient("the call on A", exchange(a.addr, &post(&call))).await);
    assert_eq!(written.len(), 5, "priming, three logs, the answer: {written:?}");

    // The client saw the priming event only and comes back on node B, which never wrote
    // the stream. A's appends run in the background: ask until they are all there.
    let get = format!(
        "GET /mcp HTTP/1.1\r\n{}Accept: text/event-stream\r\nLast-Event-ID: {}\r\n\r\n",
        head(b.addr),
        written[0].0
    );
    let replayed = resume_until(b.addr, &get, 4).await;
    assert_eq!(replayed, written[1..].to_vec(), "every event, in order, with the ids A gave them");

    // A lets the stream of `test_reconnection` go at once (`retry:`) and answers it,
    // parked: the client comes back on B, which has the answer from the store.
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                      "params": {"name": "test_reconnection", "arguments": {}}})
    .to_string();
    let out = http_support::patient("the parked call on A", exchange(a.addr, &post(&call))).await;
    assert!(out.contains("retry: "), "{out}");
    let priming = sse_events(&out);
    assert_eq!(priming.len(), 1, "{out}");
    let get = get.replace(&written[0].0, &priming[0].0);
    let mut tries = 0;
    let answer = loop {
        let got = sse_events(&http_support::patient("the poll on B", exchange(b.addr, &get)).await);
        if !got.is_empty() || tries == 50 {
            break got;
        }
        tries += 1;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(answer.len(), 1, "{answer:?}");
    let v: serde_json::Value = serde_json::from_str(&answer[0].1).expect("JSON");
    assert_eq!(v["id"], 4, "{v}");
    assert!(v["result"]["content"][0]["text"].is_string(), "{v}");
    drop((a, b));
}

/// A `2026-07-28` task running on demo node A, which is killed mid-run: restarted under
/// the same `--node-name`, node A reads the task as `failed` at once (its own name under
/// another boot), and saves it so; node B read it as `working` while A lived (without the
/// name, A's successor would too, until the 30 s lease ran out) and reads `failed` after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_restarted_under_its_node_name_reads_its_running_task_as_failed_at_once() {
    if !pg_support::available() {
        return;
    }
    let db = pg_support::database();
    let start = |name: &str| demo::start(Adapter::Tokio, &["--store", db.url.as_str(), "--node-name", name]);
    let (a, b) = (start("node-a"), start("node-b"));
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } } });
    let ask = |addr: std::net::SocketAddr, method: &str, name: &str, params: serde_json::Value| {
        let mut params = params;
        params["_meta"] = meta.clone();
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string();
        let raw = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {method}\r\nMcp-Name: {name}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            addr.port(),
            body.len()
        );
        async move {
            let out = http_support::patient("a request", exchange(addr, &raw)).await;
            let json = out.split("\r\n\r\n").nth(1).unwrap_or_default();
            serde_json::from_str::<serde_json::Value>(json).unwrap_or_else(|e| panic!("{e}: {out}"))
        }
    };
    let r = ask(
        a.addr,
        "tools/call",
        "slow_compute",
        json!({ "name": "slow_compute",
        "arguments": { "seconds": 60, "label": "restart" } }),
    )
    .await;
    let id = r["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {r}")).to_owned();
    let status = |r: &serde_json::Value| r["result"]["status"].as_str().unwrap_or_default().to_owned();
    let get = json!({ "taskId": id });
    assert_eq!(status(&ask(b.addr, "tasks/get", &id, get.clone()).await), "working");

    drop(a);
    let a = start("node-a");
    let r = ask(a.addr, "tasks/get", &id, get.clone()).await;
    assert_eq!(status(&r), "failed", "{r}");
    assert!(r["result"]["statusMessage"].as_str().is_some_and(|m| m.contains("restarted")), "{r}");
    assert_eq!(status(&ask(b.addr, "tasks/get", &id, get).await), "failed", "A's successor saved it");
    drop((a, b));
}

/// A `2025-11-25` session's tasks across nodes, without a principal (the demo does not
/// authenticate): tasks the session made on demo nodes A and B (sharing the store and the
/// key) are read by that session on either node, and by no other session on any node
/// (answered as an unknown id is); `tasks/list` is not offered to such a session
/// (`initialize` leaves `tasks.list` out; the method is `-32601`), since its tasks are
/// told apart from another anonymous session's by the session alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_tasks_made_on_two_nodes_are_its_own_on_either() {
    if !pg_support::available() {
        return;
    }
    let db = pg_support::database();
    let keys = KeysFile::new("list", &[0x3c]);
    let start = |name: &str| {
        demo::start(
            Adapter::Tokio,
            &["--store", db.url.as_str(), "--keys-file", keys.path(), "--node-name", name],
        )
    };
    let (a, b) = (start("list-a"), start("list-b"));
    let v = Some("2025-11-25");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut sessions = Vec::new();
    for node in [&a, &b] {
        let r = legacy_post(node.addr, "", &init, None, None).await;
        assert_eq!(r.status, 200, "{r:?}");
        let tasks = &r.json()["result"]["capabilities"]["tasks"];
        assert!(tasks["cancel"].is_object() && tasks.get("list").is_none(), "no tasks.list: {tasks}");
        let session = r.header("mcp-session-id").expect("a session").to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(legacy_post(node.addr, "", &initialized, v, Some(&session)).await.status, 202);
        sessions.push(session);
    }
    let (mine, theirs) = (&sessions[0], &sessions[1]);

    let mut made = Vec::new();
    for (i, node) in [&a, &b].into_iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {
            "name": "slow_compute", "arguments": {"seconds": 60, "label": "mine"}, "task": {"ttl": 60000}}});
        let r = legacy_post(node.addr, "", &call, v, Some(mine)).await;
        let body = r.json();
        let id = body["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {body}"));
        made.push(id.to_owned());
    }
    for (node, rid) in [(&a, 20), (&b, 30)] {
        for (k, id) in made.iter().enumerate() {
            let get =
                json!({"jsonrpc": "2.0", "id": rid + k, "method": "tasks/get", "params": {"taskId": id}});
            let body = legacy_post(node.addr, "", &get, v, Some(mine)).await.json();
            assert_eq!(body["result"]["status"], "working", "the session's own, on either node: {body}");
            let body = legacy_post(node.addr, "", &get, v, Some(theirs)).await.json();
            assert_eq!(body["error"]["code"], -32602, "another session's: not found: {body}");
        }
        let list = json!({"jsonrpc": "2.0", "id": rid + 9, "method": "tasks/list", "params": {}});
        let r = legacy_post(node.addr, "", &list, v, Some(mine)).await;
        assert_eq!((r.status, r.json()["error"]["code"].as_i64()), (404, Some(-32601)), "{r:?}");
    }
    drop((a, b));
}

/// Issue 27: with `--store` every session opened is a record written, so the demo limits
/// how fast one client opens sessions (60 a minute unless `--rate-initialize` says
/// otherwise): a client that sends 150 `initialize` at once is refused `429` (`-32010`)
/// long before the last (before, each of them was a record: 10,000 in 35 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_with_a_store_limits_how_fast_one_client_opens_sessions() {
    let db = pg_support::database();
    let keys = KeysFile::new("initialize-rate", &[0x5a]);
    let node = demo::start(Adapter::Tokio, &["--store", db.url.as_str(), "--keys-file", keys.path()]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (mut opened, mut refused) = (0, None);
    for _ in 0..150 {
        let r = legacy_post(node.addr, "", &init, None, None).await;
        match r.status {
            200 => opened += 1,
            429 => {
                refused = Some(r.json());
                break;
            }
            other => panic!("initialize answered {other}: {r:?}"),
        }
    }
    let refused = refused.unwrap_or_else(|| panic!("150 sessions opened by one client, none refused"));
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    assert!(opened >= 60, "the first 60 open at once: {opened}");
    drop(node);
}
