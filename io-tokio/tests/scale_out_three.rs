//! Three nodes: three processes of the tokio `everything` demo (`--store`, one PostgreSQL
//! database; `--keys-file`, one key; `--page-size 2`) on loopback ports, and a client that
//! sends each request to the next node in turn (issue 16, "Done when"):
//!
//! - a `2025-11-25` session: `initialize` on node 1, the calls on nodes 2 and 3;
//! - a `2026-07-28` multi-round-trip request (`input_required`) whose retry, with its
//!   `requestState`, lands on another node;
//! - pagination across nodes: each page asked of the next node, the cursor from the last;
//! - a list change made on node 1 (the fixture's `test_trigger_tool_change`) reaches the
//!   standalone `GET` streams and the `subscriptions/listen` streams on nodes 2 and 3,
//!   every one, counted;
//! - a stream written on node 1 resumed with `Last-Event-ID` on nodes 2 and 3 (the events
//!   come from the store's per-stream buffer, with node 1's ids);
//! - node 2 killed with `SIGKILL` mid-session: the next request, on node 3, succeeds.
//!
//! PostgreSQL: CI's server (`MCP_TEST_PG_URL`), else one the test starts (`pg_support`).
//! One test: the demos share the schema `mcp`, so list changes of a parallel test would be
//! counted here.

#![cfg(all(feature = "postgres", feature = "oauth"))]

mod http_support;
mod oauth_support;
mod pg_support;
mod store_support;

use std::collections::BTreeSet;
use std::net::SocketAddr;

use http_support::{Conn, HttpResponse, patient};
use oauth_support::demo::{self, Adapter, Demo, KeysFile};
use oauth_support::legacy_post;
use serde_json::{Value, json};
use store_support::{count, exchange, listen, read_until, resume_until, sse_events, stream};

const V: &str = "2025-11-25";

/// A client that sends each request to the next node in turn.
struct RoundRobin {
    nodes: Vec<SocketAddr>,
    next: usize,
}

impl RoundRobin {
    fn node(&mut self) -> SocketAddr {
        let n = self.nodes[self.next % self.nodes.len()];
        self.next += 1;
        n
    }
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A `2026-07-28` request with its `_meta` (and `Mcp-Method`, `Mcp-Name` headers).
async fn stateless(addr: SocketAddr, id: u64, method: &str, name: Option<&str>, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let body = request(id, method, params).to_string();
    let mut c = Conn::open(addr).await;
    c.send(&http_support::post(addr, method, name, &body)).await;
    let r = c.response().await;
    assert_eq!(r.status, 200, "{method} on {addr}: {r:?}");
    r.json()
}

/// A session-bound request in `session`.
async fn in_session(addr: SocketAddr, session: &str, body: &Value) -> HttpResponse {
    legacy_post(addr, "", body, Some(V), Some(session)).await
}

/// Opens a `2025-11-25` session on `addr` (initialized); returns its id.
async fn open_on(addr: SocketAddr) -> String {
    let init = request(
        1,
        "initialize",
        json!({
        "protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let r = legacy_post(addr, "", &init, None, None).await;
    assert_eq!(r.status, 200, "{r:?}");
    r.header("mcp-session-id").expect("a session").to_owned()
}

fn echo(id: u64, text: &str) -> Value {
    request(id, "tools/call", json!({"name": "echo", "arguments": {"text": text}}))
}

fn echoed(r: &HttpResponse, id: u64, text: &str) {
    assert_eq!(r.status, 200, "{r:?}");
    let body = r.json();
    assert_eq!(body["id"], id, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], text, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_on_one_database_serve_a_client_that_goes_round_them() {
    if !pg_support::available() {
        return;
    }
    if !pg_support::available() {
        return;
    }
    let db = pg_support::database();
    let keys = KeysFile::new("three", &[0x3c]);
    let args = ["--store", db.url.as_str(), "--keys-file", keys.path(), "--page-size", "2"];
    let nodes: Vec<Demo> = (0..3).map(|_| demo::start(Adapter::Tokio, &args)).collect();
    let addrs: Vec<SocketAddr> = nodes.iter().map(|n| n.addr).collect();
    let mut nodes: Vec<Option<Demo>> = nodes.into_iter().map(Some).collect();
    patient("three nodes", async {
        // A 2025-11-25 session: initialize on node 1, then each request on the next node.
        let mut rr = RoundRobin { nodes: addrs.clone(), next: 0 };
        let session = open_on(rr.node()).await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(in_session(rr.node(), &session, &initialized).await.status, 202, "on node 2");
        for id in 2..8 {
            let r = in_session(rr.node(), &session, &echo(id, &format!("call {id}"))).await;
            echoed(&r, id, &format!("call {id}"));
        }
        let level = request(9, "logging/setLevel", json!({"level": "info"}));
        assert_eq!(in_session(rr.node(), &session, &level).await.status, 200);
        for id in 10..13 {
            echoed(&in_session(rr.node(), &session, &echo(id, "after")).await, id, "after");
        }

        // A multi-round-trip request: asked on one node, retried on the next.
        let tool = "test_input_required_result_request_state";
        let args = || json!({"name": tool, "arguments": {}});
        let first = stateless(rr.node(), 20, "tools/call", Some(tool), args()).await;
        assert_eq!(first["result"]["resultType"], "input_required", "{first}");
        let state = first["result"]["requestState"].as_str().expect("a requestState").to_owned();
        let mut retry = args();
        retry["requestState"] = json!(state);
        retry["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
        let done = stateless(rr.node(), 21, "tools/call", Some(tool), retry).await;
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        assert_eq!(done["result"]["content"][0]["text"], "state-ok: confirmed (true)", "{done}");

        // Pagination across nodes: two tools a page, each page from the next node.
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({"cursor": c}));
            let page = stateless(rr.node(), 30 + pages, "tools/list", None, params).await;
            let tools = page["result"]["tools"].as_array().unwrap_or_else(|| panic!("{page}"));
            assert!(tools.len() <= 2, "{page}");
            names.extend(tools.iter().map(|t| t["name"].as_str().expect("a name").to_owned()));
            pages += 1;
            match page["result"]["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        let distinct: BTreeSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), names.len(), "no tool twice: {names:?}");
        assert!(pages >= 3, "the pages went round the three nodes ({pages})");
        assert!(names.iter().any(|n| n == "echo"), "{names:?}");

        // A list change made on node 1 reaches every stream on nodes 2 and 3: a
        // standalone GET stream of a session and a subscriptions/listen stream on each.
        let mut streams = Vec::new();
        for &node in &addrs[1..] {
            let id = open_on(node).await;
            assert_eq!(in_session(node, &id, &initialized).await.status, 202);
            streams.push(stream(node, &id).await);
            streams.push(listen(node, "test://watched-resource").await);
        }
        let trigger = request(40, "tools/call", json!({"name": "test_trigger_tool_change", "arguments": {}}));
        let r = in_session(addrs[0], &session, &trigger).await;
        assert_eq!(r.status, 200, "{r:?}");
        let mut told = 0;
        for (i, s) in streams.iter_mut().enumerate() {
            let t = read_until(s, |t| t.contains("notifications/tools/list_changed")).await;
            assert_eq!(count(&t, "notifications/tools/list_changed"), 1, "stream {i}: {t}");
            told += 1;
        }
        assert_eq!(told, 4, "both streams on nodes 2 and 3");

        // A stream written on node 1 (a call that logs three messages, then answers),
        // resumed after its priming event on nodes 2 and 3, which never wrote it. Node 1
        // appends to the store in the background: ask until every event is there.
        let call =
            request(45, "tools/call", json!({"name": "test_tool_with_logging", "arguments": {}})).to_string();
        let head = |addr: SocketAddr| {
            format!(
                "Host: 127.0.0.1:{}\r\nMCP-Protocol-Version: {V}\r\nMcp-Session-Id: {session}\r\n\
                 Connection: close\r\n",
                addr.port()
            )
        };
        let post = format!(
            "POST /mcp HTTP/1.1\r\n{}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{call}",
            head(addrs[0]),
            call.len()
        );
        let written = sse_events(&exchange(addrs[0], &post).await);
        assert_eq!(written.len(), 5, "priming, three logs, the answer: {written:?}");
        for &node in &addrs[1..] {
            let get = format!(
                "GET /mcp HTTP/1.1\r\n{}Accept: text/event-stream\r\nLast-Event-ID: {}\r\n\r\n",
                head(node),
                written[0].0
            );
            let replayed = resume_until(node, &get, 4).await;
            assert_eq!(replayed, written[1..].to_vec(), "every event, in order, with node 1's ids");
        }

        // Node 2 killed (SIGKILL) mid-session: the next request goes to node 3 and is
        // served (the session comes from the store).
        let r = in_session(addrs[1], &session, &echo(50, "on node 2")).await;
        echoed(&r, 50, "on node 2");
        drop(nodes[1].take()); // `Child::kill`: SIGKILL
        let r = in_session(addrs[2], &session, &echo(51, "on node 3")).await;
        echoed(&r, 51, "on node 3");
        let r = in_session(addrs[0], &session, &echo(52, "on node 1")).await;
        echoed(&r, 52, "on node 1");
    })
    .await;
    drop(nodes);
}
