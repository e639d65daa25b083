//! Rotating the secret key (`Config::previous_secret_keys`): what the previous key sealed
//! (list cursors, `requestState`, session ids and SSE event ids) still opens on an engine
//! that seals with the new key and keeps the old one as previous; what the new key seals
//! opens only where the new key is known; once the old key is dropped, what it sealed is
//! refused. One key set for every node of a deployment (issue 16, shared keys).

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig};
use mcp_engine::{Catalog, Config, Engine, Instant, Tool, UnixTime};
use mcp_fixture as everything;
use mcp_tests::peer::{Peer, WIRES};
use mcp_tests::wire::{self, Client};
use mcp_tests::{lines, modern};
use serde_json::{Value, json};

const OLD: [u8; 32] = [0x11; 32];
const NEW: [u8; 32] = [0x22; 32];
const T: UnixTime = UnixTime::from_secs(1_796_000_000);

/// A config sealing with `sign`, still opening with `previous`.
fn keys(mut c: Config, sign: [u8; 32], previous: &[[u8; 32]]) -> Config {
    c.secret_key(sign).previous_secret_keys(previous.iter().copied());
    c
}

fn stdio(sign: [u8; 32], previous: &[[u8; 32]]) -> Engine {
    let mut b = Catalog::builder();
    for i in 0..5 {
        b = b.tool(Tool::new(format!("tool_{i}")));
    }
    let mut config = Config::new("rotation", "1");
    config.page_size(2);
    let mut e = Engine::new(keys(config, sign, previous), b.build().unwrap());
    e.set_wall_clock(Instant::ZERO, T);
    e
}

fn list(e: &mut Engine, cursor: Option<&str>) -> Value {
    let line = modern(1, "tools/list", cursor.map_or(json!({}), |c| json!({ "cursor": c })));
    e.handle_input(Instant::ZERO, line.as_bytes());
    let mut out = lines(e.pending_output());
    e.consume_output(e.pending_output().len());
    out.remove(0)
}

fn cursor(v: &Value) -> String {
    v["result"]["nextCursor"].as_str().unwrap_or_else(|| panic!("{v}")).to_owned()
}

#[test]
fn a_cursor_of_the_previous_key_opens_and_new_cursors_use_the_new_key() {
    let old_cursor = cursor(&list(&mut stdio(OLD, &[]), None));
    let mut rotated = stdio(NEW, &[OLD]);
    let page = list(&mut rotated, Some(&old_cursor));
    assert_eq!(page["result"]["tools"][0]["name"], "tool_2", "{page}");
    let new_cursor = cursor(&page);
    // The new key's cursor: the old-key-only engine does not know it, the new one does.
    assert_eq!(list(&mut stdio(OLD, &[]), Some(&new_cursor))["error"]["code"], -32602);
    assert_eq!(list(&mut stdio(NEW, &[]), Some(&new_cursor))["result"]["tools"][0]["name"], "tool_4");
    // The old key dropped: its cursors are refused.
    assert_eq!(list(&mut stdio(NEW, &[]), Some(&old_cursor))["error"]["code"], -32602);
}

const STATE_TOOL: &str = "test_input_required_result_request_state";

fn peer(w: mcp_tests::peer::Wire, sign: [u8; 32], previous: &[[u8; 32]]) -> Peer {
    let config = keys(everything::config(), sign, previous);
    let mut p = Peer::new(w, config, everything::catalog(), Box::new(everything::respond));
    match p.wire() {
        mcp_tests::peer::Wire::Stdio => p.stdio_engine().set_wall_clock(Instant::ZERO, T),
        mcp_tests::peer::Wire::Http => p.http_engine().set_wall_clock(Instant::ZERO, T),
    }
    p
}

fn retry(p: &mut Peer, state: &str) -> Value {
    let params = json!({
        "name": STATE_TOOL, "arguments": {}, "requestState": state,
        "inputResponses": { "confirm": { "action": "accept", "content": { "ok": true } } }
    });
    p.call(2, "tools/call", params).1
}

#[test]
fn a_request_state_of_the_previous_key_opens_after_rotation_on_both_wires() {
    for w in WIRES {
        let (_, r) = peer(w, OLD, &[]).call(1, "tools/call", json!({ "name": STATE_TOOL, "arguments": {} }));
        let state = r["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{r}")).to_owned();
        let done = retry(&mut peer(w, NEW, &[OLD]), &state);
        assert!(
            done["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("state-ok")),
            "{w:?}: {done}"
        );
        assert_eq!(retry(&mut peer(w, NEW, &[]), &state)["error"]["code"], -32602, "{w:?}");
    }
}

/// An HTTP engine with sessions kept in the test's store, sealing with `sign`.
fn sessions(sign: [u8; 32], previous: &[[u8; 32]]) -> Client {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.session_store(true);
    let config = keys(everything::config(), sign, previous);
    let mut c = wire::client_of(config, http, everything::catalog(), Box::new(everything::respond));
    c.e.set_entropy(&[9; 32]);
    c
}

fn session_post(c: &mut Client, body: &Value, session: Option<&str>) -> wire::Response {
    let mut headers = vec![("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Method", "")];
    if let Some(s) = session {
        headers.push(("Mcp-Session-Id", s));
    }
    wire::one(c, &wire::post(body, &headers))
}

#[test]
fn a_session_id_of_the_previous_key_is_loaded_by_a_rotated_node() {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut old = sessions(OLD, &[]);
    let r = session_post(&mut old, &init, None);
    let id = r.header("mcp-session-id").unwrap_or_else(|| panic!("{r:?}")).to_owned();
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    // A node that seals with the new key and keeps the old one opens the id and loads the
    // session from the shared store.
    let mut rotated = sessions(NEW, &[OLD]);
    rotated.store.records = old.store.records.clone();
    assert_eq!(session_post(&mut rotated, &ping, Some(&id)).status, 200);
    assert!(rotated.store.log.iter().any(|l| l.starts_with("load")), "{:?}", rotated.store.log);
    // A node that dropped the old key refuses the id without asking the store.
    let mut dropped = sessions(NEW, &[]);
    dropped.store.records = old.store.records.clone();
    assert_eq!(session_post(&mut dropped, &ping, Some(&id)).status, 404);
    assert!(dropped.store.log.is_empty(), "{:?}", dropped.store.log);
}
