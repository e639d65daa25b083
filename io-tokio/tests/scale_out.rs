//! Two nodes of the tokio `everything` demo on one PostgreSQL database (`--store`) with one
//! shared key (`--keys-file`): a `2025-11-25` session opened on one node is served by the
//! other, which loads it from the store; a node with another key refuses the session id
//! without a lookup (`404`). The first steps of issue 16's three-node scenario.
//!
//! PostgreSQL: CI's server (`MCP_TEST_PG_URL`), else one the test starts (see
//! `pg_support`).

#![cfg(all(feature = "postgres", feature = "oauth"))]

mod http_support;
mod oauth_support;
mod pg_support;

use std::path::PathBuf;

use oauth_support::demo::{self, Adapter};
use oauth_support::legacy_post;
use serde_json::json;

/// A keys file of one hex key, removed when dropped.
struct KeysFile(PathBuf);

impl KeysFile {
    fn new(name: &str, byte: u8) -> Self {
        let path = std::env::temp_dir().join(format!("mcp-scale-{name}-{}", std::process::id()));
        std::fs::write(&path, format!("{}\n", hex(&[byte; 32]))).expect("write the keys file");
        Self(path)
    }
    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 path")
    }
}

impl Drop for KeysFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_on_one_node_is_served_by_another_with_the_same_key_and_store() {
    let db = pg_support::database();
    let shared = KeysFile::new("shared", 0x5a);
    let other = KeysFile::new("other", 0xa5);
    let args = |keys: &KeysFile| {
        vec!["--store".to_owned(), db.url.clone(), "--keys-file".to_owned(), keys.path().to_owned()]
    };
    let a_args = args(&shared);
    let a = demo::start(Adapter::Tokio, &a_args.iter().map(String::as_str).collect::<Vec<_>>());
    let b = demo::start(Adapter::Tokio, &a_args.iter().map(String::as_str).collect::<Vec<_>>());
    let c_args = args(&other);
    let c = demo::start(Adapter::Tokio, &c_args.iter().map(String::as_str).collect::<Vec<_>>());

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
