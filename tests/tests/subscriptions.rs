//! `subscriptions/listen` (`2026-07-28`) and the legacy `resources/subscribe`, over stdio
//! and HTTP: acknowledgement, filtering, catalog replacement and its fan-out, resource
//! updates, teardown from both sides, and the bound on slow subscribers.

use mcp_engine::Commands;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent, Verdict};
use mcp_engine::subs::ReplaceError;
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, Prompt, Resource, ResourceTemplate, Tool, ToolOutput,
};
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::{feed_keeping_tickets, legacy_open, lines, modern, notification, request};
use serde_json::{Value, json};

const SUB_ID: &str = "io.modelcontextprotocol/subscriptionId";

fn catalog(extra_tool: bool) -> Catalog {
    let mut b = Catalog::builder()
        .tool(Tool::new("a"))
        .resource(Resource::new("file:///watched", "watched"))
        .template(ResourceTemplate::new("db://rows/{id}", "rows"))
        .prompt(Prompt::new("p"));
    if extra_tool {
        b = b.tool(Tool::new("b"));
    }
    b.build().unwrap()
}

fn config() -> Config {
    let mut c = Config::new("s", "1");
    c.list_changed(true).resource_subscriptions(true).max_subscriptions(3);
    c
}

fn take(e: &mut Engine) -> Vec<Value> {
    let out = e.pending_output().to_vec();
    e.consume_output(out.len());
    lines(&out)
}

fn listen(id: Value, filter: Value) -> String {
    modern(id, "subscriptions/listen", json!({ "notifications": filter }))
}

#[test]
fn the_acknowledgement_comes_first_with_the_honoured_subset() {
    let mut e = Engine::new(config(), catalog(false));
    let (out, _) = feed_keeping_tickets(
        &mut e,
        &listen(
            json!("s-1"),
            json!({ "toolsListChanged": true, "promptsListChanged": false,
                    "resourceSubscriptions": ["file:///watched", "file:///unknown", "db://rows/7", "file:///watched"] }),
        ),
    );
    assert_eq!(out.len(), 1, "{out:?}");
    let ack = &out[0];
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][SUB_ID], "s-1", "the id, as a string");
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "toolsListChanged": true, "resourceSubscriptions": ["file:///watched", "db://rows/7"] })
    );
    assert_valid(Rev::V2026_07_28, "SubscriptionsAcknowledgedNotification", ack);
    assert_eq!(e.subscriptions(), 1);
    // A numeric id keeps its type.
    let (out, _) = feed_keeping_tickets(&mut e, &listen(json!(42), json!({ "resourcesListChanged": true })));
    assert_eq!(out[0]["params"]["_meta"][SUB_ID], 42);
    assert_eq!(out[0]["params"]["notifications"], json!({ "resourcesListChanged": true }));
}

#[test]
fn listen_refusals() {
    // Nothing to listen for: not served (the suite reads -32601 as "not applicable").
    let mut e = Engine::new(Config::new("s", "1"), catalog(false));
    let (out, _) = feed_keeping_tickets(&mut e, &listen(json!(1), json!({ "toolsListChanged": true })));
    assert_eq!(out[0]["error"]["code"], -32601);

    let mut e = Engine::new(config(), catalog(false));
    for (params, code) in [
        (json!({}), -32602),
        (json!({ "notifications": true }), -32602),
        (json!({ "notifications": { "resourceSubscriptions": "file:///watched" } }), -32602),
        (json!({ "notifications": { "resourceSubscriptions": [1] } }), -32602),
    ] {
        let (out, _) = feed_keeping_tickets(&mut e, &modern(1, "subscriptions/listen", params.clone()));
        assert_eq!(out[0]["error"]["code"], code, "{params}: {out:?}");
        assert_eq!(out[0]["id"], 1);
    }
    assert_eq!(e.subscriptions(), 0);
    // At most `max_subscriptions` (3) at once.
    for i in 0..3 {
        let (out, _) = feed_keeping_tickets(&mut e, &listen(json!(i), json!({})));
        assert_eq!(out[0]["method"], "notifications/subscriptions/acknowledged");
    }
    let (out, _) = feed_keeping_tickets(&mut e, &listen(json!(9), json!({})));
    assert_eq!(out[0]["error"]["code"], -32603, "{out:?}");
    assert_eq!(e.subscriptions(), 3);
    // Session-bound streams have no listen.
    let mut e = Engine::new(config(), catalog(false));
    let (out, _) = feed_keeping_tickets(
        &mut e,
        &(legacy_open("2025-11-25") + &request(5, "subscriptions/listen", json!({ "notifications": {} }))),
    );
    assert_eq!(out.last().unwrap()["error"]["code"], -32601);
}

#[test]
fn a_replacement_notifies_only_what_changed_to_whom_asked() {
    let mut e = Engine::new(config(), catalog(false));
    feed_keeping_tickets(&mut e, &listen(json!("tools"), json!({ "toolsListChanged": true })));
    feed_keeping_tickets(&mut e, &listen(json!("prompts"), json!({ "promptsListChanged": true })));
    assert_eq!(e.catalog_revision(), 0);

    let change = e.replace_catalog(catalog(true)).unwrap();
    assert!(change.tools && !change.prompts && !change.resources, "{change:?}");
    assert_eq!(e.catalog_revision(), 1);
    let out = take(&mut e);
    assert_eq!(out.len(), 1, "only the tools subscription: {out:?}");
    assert_eq!(out[0]["method"], "notifications/tools/list_changed");
    assert_eq!(out[0]["params"]["_meta"][SUB_ID], "tools");
    assert_valid(Rev::V2026_07_28, "ToolListChangedNotification", &out[0]);
    let (out, _) = feed_keeping_tickets(&mut e, &modern(3, "tools/list", json!({})));
    assert_eq!(out[0]["result"]["tools"].as_array().unwrap().len(), 2, "the new catalog is served");

    // The same catalog again: nothing changed, nothing sent.
    let change = e.replace_catalog(catalog(true)).unwrap();
    assert!(change.is_empty());
    assert!(take(&mut e).is_empty());
}

#[test]
fn a_failed_replacement_changes_nothing() {
    let mut e = Engine::new(config(), catalog(false));
    feed_keeping_tickets(&mut e, &listen(json!(1), json!({ "toolsListChanged": true })));
    let no_prompts = Catalog::builder()
        .tool(Tool::new("a"))
        .tool(Tool::new("z"))
        .resource(Resource::new("file:///watched", "w"))
        .build()
        .unwrap();
    assert_eq!(e.replace_catalog(no_prompts).unwrap_err(), ReplaceError::CapabilitiesChanged);
    assert!(take(&mut e).is_empty());
    assert_eq!(e.catalog_revision(), 0);
    let (out, _) = feed_keeping_tickets(&mut e, &modern(2, "prompts/list", json!({})));
    assert_eq!(out[0]["result"]["prompts"][0]["name"], "p");
    // While an event waits to be polled, its data points into the catalog.
    e.handle_input(Instant::ZERO, modern(3, "tools/call", json!({ "name": "a" })).as_bytes());
    assert_eq!(e.replace_catalog(catalog(true)).unwrap_err(), ReplaceError::EventPending);
    let t = e.poll_event().unwrap().ticket();
    // Polled (and still unanswered): now it may change; the call is answered afterwards.
    assert!(e.replace_catalog(catalog(true)).unwrap().tools);
    e.answer_tool(t, &ToolOutput::new(&[Content::text("late")])).unwrap();
    let out = take(&mut e);
    assert_eq!(out.last().unwrap()["result"]["content"][0]["text"], "late", "{out:?}");
}

#[test]
fn a_session_bound_client_gets_legacy_notifications_and_subscriptions() {
    let mut e = Engine::new(config(), catalog(false));
    let (out, _) = feed_keeping_tickets(&mut e, &legacy_open("2025-11-25"));
    assert_eq!(out[0]["result"]["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(out[0]["result"]["capabilities"]["resources"]["subscribe"], true);
    e.replace_catalog(catalog(true)).unwrap();
    let out = take(&mut e);
    assert_eq!(out, vec![json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" })]);
    assert_valid(Rev::V2025_11_25, "ToolListChangedNotification", &out[0]);

    let (out, _) =
        feed_keeping_tickets(&mut e, &request(2, "resources/subscribe", json!({ "uri": "file:///watched" })));
    assert_eq!(out[0]["result"], json!({}));
    let (out, _) =
        feed_keeping_tickets(&mut e, &request(3, "resources/subscribe", json!({ "uri": "file:///nope" })));
    assert_eq!(out[0]["error"]["code"], -32002);
    assert_eq!(e.notify_resource_updated("file:///watched/part"), 1);
    let out = take(&mut e);
    assert_eq!(out[0]["params"], json!({ "uri": "file:///watched/part" }));
    assert_valid(Rev::V2025_11_25, "ResourceUpdatedNotification", &out[0]);
    assert_eq!(e.notify_resource_updated("file:///other"), 0);
    let (out, _) = feed_keeping_tickets(
        &mut e,
        &request(4, "resources/unsubscribe", json!({ "uri": "file:///watched" })),
    );
    assert_eq!(out[0]["result"], json!({}));
    assert_eq!(e.notify_resource_updated("file:///watched"), 0);
    assert!(take(&mut e).is_empty());
}

#[test]
fn resource_updates_reach_matching_subscriptions() {
    let mut e = Engine::new(config(), catalog(false));
    feed_keeping_tickets(&mut e, &listen(json!(1), json!({ "resourceSubscriptions": ["file:///watched"] })));
    feed_keeping_tickets(
        &mut e,
        &listen(json!(2), json!({ "resourceSubscriptions": ["db://rows/7"], "toolsListChanged": true })),
    );
    assert_eq!(e.notify_resource_updated("file:///watched#frag"), 1);
    assert_eq!(e.notify_resource_updated("db://rows/7"), 1);
    assert_eq!(e.notify_resource_updated("db://rows/70"), 0, "not a sub-resource");
    let out = take(&mut e);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["params"]["uri"], "file:///watched#frag");
    assert_eq!(out[0]["params"]["_meta"][SUB_ID], 1);
    assert_eq!(out[1]["params"]["_meta"][SUB_ID], 2);
    for n in &out {
        assert_valid(Rev::V2026_07_28, "ResourceUpdatedNotification", n);
    }
    // Without the configuration nothing is sent.
    let mut plain = Config::new("s", "1");
    plain.list_changed(true);
    let mut e = Engine::new(plain, catalog(false));
    let (out, _) = feed_keeping_tickets(
        &mut e,
        &listen(json!(1), json!({ "resourceSubscriptions": ["file:///watched"] })),
    );
    assert!(out[0]["params"]["notifications"].get("resourceSubscriptions").is_none(), "{out:?}");
    assert_eq!(e.notify_resource_updated("file:///watched"), 0);
}

#[test]
fn either_side_can_end_a_stdio_subscription() {
    let mut e = Engine::new(config(), catalog(false));
    feed_keeping_tickets(&mut e, &listen(json!("a"), json!({ "toolsListChanged": true })));
    feed_keeping_tickets(&mut e, &listen(json!("b"), json!({ "toolsListChanged": true })));
    // The client cancels "a": nothing more for it.
    feed_keeping_tickets(&mut e, &notification("notifications/cancelled", json!({ "requestId": "a" })));
    assert_eq!(e.subscriptions(), 1);
    e.replace_catalog(catalog(true)).unwrap();
    let out = take(&mut e);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["params"]["_meta"][SUB_ID], "b");
    // The server ends "b": the graceful result, then notifications/cancelled naming it.
    assert_eq!(e.end_subscriptions(), 1);
    let out = take(&mut e);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0]["id"], "b");
    assert_eq!(out[0]["result"]["resultType"], "complete");
    assert_eq!(out[0]["result"]["_meta"][SUB_ID], "b");
    assert_valid(Rev::V2026_07_28, "SubscriptionsListenResultResponse", &out[0]);
    assert_eq!(out[1]["method"], "notifications/cancelled");
    assert_eq!(out[1]["params"]["requestId"], "b");
    assert_valid(Rev::V2026_07_28, "CancelledNotification", &out[1]);
    assert_eq!(e.subscriptions(), 0);
    e.replace_catalog(catalog(false)).unwrap();
    assert!(take(&mut e).is_empty());
}

#[test]
fn a_stdio_subscriber_that_does_not_read_is_ended() {
    let mut cfg = config();
    cfg.max_buffered_output(4096);
    let mut e = Engine::new(cfg, catalog(false));
    feed_keeping_tickets(&mut e, &listen(json!(1), json!({ "resourceSubscriptions": ["file:///watched"] })));
    let mut sent = 0;
    for _ in 0..1000 {
        sent += e.notify_resource_updated("file:///watched");
    }
    assert_eq!(e.subscriptions(), 0, "dropped");
    assert!(sent < 100, "stopped at the bound, not after {sent}");
    let pending = e.pending_output().len();
    assert!(pending < 4096 + 1024, "bounded output: {pending}");
    let out = take(&mut e);
    let last = &out[out.len() - 2..];
    assert_eq!(last[0]["result"]["_meta"][SUB_ID], 1, "the teardown is written once: {last:?}");
    assert_eq!(last[1]["method"], "notifications/cancelled");
}

// ---------------------------------------------------------------------------- HTTP

struct Http {
    e: HttpEngine,
}

fn post(body: &Value) -> Vec<u8> {
    let body = body.to_string();
    let v: Value = serde_json::from_str(&body).unwrap();
    let method = v["method"].as_str().unwrap().to_owned();
    let name = v["params"]["name"].as_str().map(|n| format!("Mcp-Name: {n}\r\n")).unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{name}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn body(id: Value, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

impl Http {
    fn new() -> Self {
        let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
        Self { e: HttpEngine::new(config(), http, catalog(false)) }
    }

    fn open(&mut self) -> mcp_engine::http::ConnId {
        self.e.open(Instant::ZERO, None).unwrap()
    }

    fn send(&mut self, conn: mcp_engine::http::ConnId, raw: &[u8]) {
        assert_eq!(self.e.handle_input(Instant::ZERO, conn, raw), raw.len());
        while let Some(ev) = self.e.poll_event() {
            if let HttpEvent::Authorize(a) = ev {
                let c = a.conn;
                self.e.authorize(Instant::ZERO, c, Verdict::Allow);
            } else if let HttpEvent::Mcp(Event::CallTool(call)) = ev {
                let _ = call.answer(&ToolOutput::new(&[Content::text("ok")]));
            }
        }
    }

    fn take(&mut self, conn: mcp_engine::http::ConnId) -> String {
        let out = self.e.pending_output(conn).to_vec();
        self.e.consume_output(conn, out.len());
        String::from_utf8(out).unwrap()
    }
}

/// The JSON messages of the SSE events in `raw` (chunk framing is skipped over).
fn sse_messages(raw: &str) -> Vec<Value> {
    raw.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect()
}

#[test]
fn an_http_listen_stream_stays_open_and_carries_its_notifications() {
    let mut h = Http::new();
    let listener = h.open();
    h.send(
        listener,
        &post(&body(
            json!(7),
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        )),
    );
    let head = h.take(listener);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: text/event-stream"), "{head}");
    let msgs = sse_messages(&head);
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(msgs[0]["params"]["_meta"][SUB_ID], 7);
    assert_eq!(h.e.subscriptions(), 1);

    // Another connection calls a tool: its progress, logs and result stay on its own
    // response; the listen stream only gets the list change.
    let caller = h.open();
    h.send(caller, &post(&body(json!(8), "tools/call", json!({ "name": "a" }))));
    assert!(h.take(caller).contains("\"text\":\"ok\""));
    assert!(h.take(listener).is_empty());
    h.e.replace_catalog(catalog(true)).unwrap();
    let msgs = sse_messages(&h.take(listener));
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["method"], "notifications/tools/list_changed");
    assert_eq!(msgs[0]["params"]["_meta"][SUB_ID], 7);

    // The server ends it: the graceful result is the last event and the stream ends.
    assert_eq!(h.e.end_subscriptions(), 1);
    let tail = h.take(listener);
    let msgs = sse_messages(&tail);
    assert_eq!(msgs[0]["id"], 7);
    assert_eq!(msgs[0]["result"]["resultType"], "complete");
    assert!(tail.ends_with("0\r\n\r\n"), "the chunked stream ends: {tail:?}");
    assert!(!tail.contains("notifications/cancelled"), "HTTP ends a stream by closing it");
}

#[test]
fn closing_an_http_listen_stream_ends_the_subscription() {
    let mut h = Http::new();
    let c = h.open();
    h.send(
        c,
        &post(&body(
            json!(1),
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        )),
    );
    assert_eq!(h.e.subscriptions(), 1);
    h.e.handle_closed(Instant::ZERO, c);
    assert_eq!(h.e.subscriptions(), 0);
    assert!(h.e.replace_catalog(catalog(true)).unwrap().tools);
}

#[test]
fn an_http_subscriber_that_does_not_read_is_dropped() {
    let mut h = Http::new();
    let c = h.open();
    h.send(
        c,
        &post(&body(
            json!(1),
            "subscriptions/listen",
            json!({ "notifications": { "resourceSubscriptions": ["file:///watched"] } }),
        )),
    );
    for _ in 0..5000 {
        h.e.notify_resource_updated("file:///watched");
    }
    assert_eq!(h.e.subscriptions(), 0, "dropped");
    assert!(h.e.wants_close(c), "its connection is closed at once");
    let pending = h.e.pending_output(c).len();
    assert!(pending <= 64 * 1024, "bounded: {pending}");
}

#[test]
fn a_silent_http_listen_stream_gets_keep_alive_comments() {
    use std::time::Duration;
    let mut h = Http::new();
    let c = h.open();
    h.send(
        c,
        &post(&body(
            json!(1),
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        )),
    );
    h.take(c);
    let at = Instant::ZERO + Duration::from_secs(15);
    assert_eq!(h.e.poll_timeout(), Some(at));
    h.e.handle_timeout(Instant::ZERO + Duration::from_secs(14));
    assert!(h.take(c).is_empty(), "not before it is due");
    h.e.handle_timeout(at);
    assert_eq!(h.take(c), "2\r\n:\n\r\n", "one SSE comment, in its own chunk");
    assert_eq!(h.e.poll_timeout(), Some(at + Duration::from_secs(15)));
    // A notification pushes the next comment back; the end of the stream stops them.
    h.e.end_subscriptions();
    h.take(c);
    // No more comments: the connection now waits for its next request, for the idle
    // timeout (30 s) since the end of the stream.
    assert_eq!(h.e.poll_timeout(), Some(at + Duration::from_secs(30)));
}
