//! Two nodes of the tokio `everything` demo on one PostgreSQL database (`--store`) sharing
//! a key (`--keys-file`; the second node mid-rotation: it seals with a new key and still
//! opens with the first): a `2025-11-25` session opened on one node is served by the
//! other, which loads it from the store; a node with another key refuses the session id
//! without a lookup (`404`). The first steps of issue 16's three-node scenario.
//!
//! PostgreSQL: CI's server (`MCP_TEST_PG_URL`), else one the test starts (see
//! `pg_support`).

#![cfg(all(feature = "postgres", feature = "oauth"))]

mod http_support;
mod oauth_support;
mod pg_support;

use oauth_support::demo::{self, Adapter, KeysFile};
use oauth_support::legacy_post;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_on_one_node_is_served_by_another_with_the_same_key_and_store() {
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
