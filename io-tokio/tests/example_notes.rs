//! End to end: the `notes` example (the typed router) as a child process, driven over
//! real stdin/stdout pipes and over Streamable HTTP on 127.0.0.1, port 0.

mod example_support;
mod http_support;

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver};

use http_support::{Conn, PATIENCE, body, first_text, post};
use serde_json::{Value, json};

const META: &str = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}"#;

fn notes_binary() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| example_support::build_example("notes"))
}

/// Kills the child when dropped, so a failing test leaves no server behind.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The example over stdio: requests written one at a time, each answer awaited.
struct StdioClient {
    _server: Server,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: u64,
}

impl StdioClient {
    fn start() -> Self {
        let mut child = Command::new(notes_binary())
            .arg("--stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the example");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Self { _server: Server(child), stdin, lines, next_id: 0 }
    }

    /// Sends a request with `params` (an object; `_meta` is added) and returns the
    /// notifications that came before its response, and the response.
    fn request_with(&mut self, method: &str, params: Value, meta: &str) -> (Vec<Value>, Value) {
        self.next_id += 1;
        let id = self.next_id;
        let params = params.to_string();
        let inner = params.trim_start_matches('{').trim_end_matches('}');
        let sep = if inner.is_empty() { "" } else { "," };
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{inner}{sep}"_meta":{{{meta}}}}}}}"#
        );
        writeln!(self.stdin, "{line}").expect("write a request");
        let mut before = Vec::new();
        loop {
            let v = self.lines.recv_timeout(PATIENCE).expect("an answer");
            if v["id"] == id {
                return (before, v);
            }
            before.push(v);
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let (notifications, response) = self.request_with(method, params, META);
        assert!(notifications.is_empty(), "unexpected notifications: {notifications:?}");
        response
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({ "name": tool, "arguments": arguments }))
    }
}

#[test]
fn the_catalog_comes_from_the_types() {
    let mut s = StdioClient::start();
    let list = s.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["add_note", "search_notes", "slow_export"]);
    let add = &tools[0]["inputSchema"];
    assert_eq!(add["required"], json!(["title", "body"]));
    assert_eq!(add["properties"]["body"]["description"], "The text of the note.");
    assert!(tools[0].get("outputSchema").is_none(), "a text reply declares no output schema");
    let search = &tools[1];
    assert_eq!(search["inputSchema"]["required"], json!(["query"]));
    assert_eq!(search["inputSchema"]["properties"]["limit"]["minimum"], 1);
    assert_eq!(search["inputSchema"]["properties"]["limit"]["maximum"], 50);
    assert_eq!(search["outputSchema"]["properties"]["notes"]["items"]["$ref"], "#/$defs/Note");
    assert_eq!(tools[2]["inputSchema"]["type"], "object");

    let templates = s.request("resources/templates/list", json!({}));
    assert_eq!(templates["result"]["resourceTemplates"][0]["uriTemplate"], "note://{id}");
    let resources = s.request("resources/list", json!({}));
    assert_eq!(resources["result"]["resources"][0]["uri"], "note://index");
    let prompts = s.request("prompts/list", json!({}));
    let summarize = &prompts["result"]["prompts"][0];
    assert_eq!(summarize["name"], "summarize");
    assert_eq!(
        summarize["arguments"],
        json!([{ "name": "id", "description": "The note's id, as `add_note` gave it.", "required": true }])
    );
}

#[test]
fn notes_are_added_searched_read_and_summarized_over_stdio() {
    let mut s = StdioClient::start();
    let r = s.call("add_note", json!({ "title": "Milk", "body": "Buy milk today" }));
    assert_eq!(first_text(&r), "Added note 1.");
    let r = s.call("add_note", json!({ "title": "Bread", "body": "Rye, not white" }));
    assert_eq!(first_text(&r), "Added note 2.");

    let r = s.call("search_notes", json!({ "query": "MILK" }));
    let found = json!({ "notes": [{ "id": 1, "title": "Milk", "body": "Buy milk today" }] });
    assert_eq!(r["result"]["structuredContent"], found);
    let text: Value = serde_json::from_str(first_text(&r)).expect("the text block is the JSON");
    assert_eq!(text, found);
    let r = s.call("search_notes", json!({ "query": "", "limit": 1 }));
    assert_eq!(r["result"]["structuredContent"]["notes"].as_array().map(Vec::len), Some(1));

    let r = s.request("resources/read", json!({ "uri": "note://2" }));
    assert_eq!(
        r["result"]["contents"][0],
        json!({ "uri": "note://2", "mimeType": "text/plain", "text": "Rye, not white" })
    );
    let r = s.request("resources/read", json!({ "uri": "note://index" }));
    assert_eq!(r["result"]["contents"][0]["text"], "1: Milk\n2: Bread\n");
    let r = s.request("resources/read", json!({ "uri": "note://3" }));
    assert_eq!(r["error"]["message"], "Resource not found", "{r}");

    let r = s.request("prompts/get", json!({ "name": "summarize", "arguments": { "id": "1" } }));
    let text = r["result"]["messages"][0]["content"]["text"].as_str().expect("a text message");
    assert!(text.ends_with("Buy milk today"), "{text}");
    let r = s.request("prompts/get", json!({ "name": "summarize", "arguments": { "id": "9" } }));
    assert_eq!(
        (r["error"]["code"].as_i64(), r["error"]["message"].as_str()),
        (Some(-32602), Some("Invalid params: no note 9"))
    );
}

#[test]
fn the_derived_schema_is_what_the_engine_enforces() {
    let mut s = StdioClient::start();
    for limit in [0, 51] {
        let r = s.call("search_notes", json!({ "query": "x", "limit": limit }));
        assert_eq!(r["result"]["isError"], true, "limit {limit}: {r}");
        assert!(first_text(&r).contains("/limit"), "limit {limit}: {r}");
    }
    let r = s.call("search_notes", json!({ "query": "x", "limit": "ten" }));
    assert_eq!(r["result"]["isError"], true, "{r}");
    let r = s.call("add_note", json!({ "title": "no body" }));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(first_text(&r).contains("body"), "{r}");
    // Nothing was added by the refused calls.
    let r = s.request("resources/read", json!({ "uri": "note://index" }));
    assert_eq!(r["result"]["contents"][0]["text"], "");
}

#[test]
fn slow_export_reports_progress_five_times_then_answers() {
    let mut s = StdioClient::start();
    s.call("add_note", json!({ "title": "A", "body": "alpha" }));
    let meta = format!(r#""progressToken":"export",{META}"#);
    let (notes, r) = s.request_with("tools/call", json!({ "name": "slow_export", "arguments": {} }), &meta);
    let steps: Vec<(f64, f64)> = notes
        .iter()
        .map(|n| {
            assert_eq!(n["method"], "notifications/progress", "{n}");
            assert_eq!(n["params"]["progressToken"], "export");
            (n["params"]["progress"].as_f64().unwrap(), n["params"]["total"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(steps, [(1.0, 5.0), (2.0, 5.0), (3.0, 5.0), (4.0, 5.0), (5.0, 5.0)]);
    assert_eq!(first_text(&r), "# A\n\nalpha\n");
}

#[test]
fn the_same_server_answers_over_http() {
    let mut child = Command::new(notes_binary())
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the example");
    let stderr = child.stderr.take().expect("stderr");
    let _server = Server(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("listening on http://") {
                let _ = tx.send(url.trim_end_matches("/mcp").to_owned());
            }
        }
    });
    let addr: SocketAddr = rx.recv_timeout(PATIENCE).expect("the address").parse().expect("an address");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    rt.block_on(async {
        let mut conn = Conn::open(addr).await;
        let r = conn.call(1, "add_note", &json!({ "title": "Web", "body": "over http" })).await;
        assert_eq!((r.status, first_text(&r.json())), (200, "Added note 1."));
        let r = conn.call(2, "search_notes", &json!({ "query": "http" })).await;
        assert_eq!(r.json()["result"]["structuredContent"]["notes"][0]["title"], "Web");
        let r = conn.call(3, "search_notes", &json!({ "query": "http", "limit": 0 })).await;
        assert_eq!(r.json()["result"]["isError"], true);
        let read = body(4, "resources/read", r#""uri":"note://1""#);
        conn.send(&post(addr, "resources/read", Some("note://1"), &read)).await;
        assert_eq!(conn.response().await.json()["result"]["contents"][0]["text"], "over http");
        let get = body(5, "prompts/get", r#""name":"summarize","arguments":{"id":"1"}"#);
        conn.send(&post(addr, "prompts/get", Some("summarize"), &get)).await;
        let r = conn.response().await.json();
        assert!(
            r["result"]["messages"][0]["content"]["text"].as_str().unwrap().ends_with("over http"),
            "{r}"
        );
    });
}

#[test]
fn bad_arguments_are_refused() {
    for args in [&["--http", "0.0.0.0:0"][..], &["--tcp"], &[]] {
        let out = Command::new(notes_binary()).args(args).stdin(Stdio::null()).output().expect("run");
        assert!(!out.status.success(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
}
