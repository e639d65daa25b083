//! `serve` over in-memory duplex pipes: round trips, pipelining, backpressure,
//! cancellation, end of input and handler failures.

mod common;
mod log_capture;

use log_capture::Captured;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Client, PATIENCE, call, cancel, first_text, get, read, tools_catalog};
use mcp_engine::{Catalog, Config, Engine, Prompt, PromptArgument, Resource, ResourceTemplate};
use mcp_io_tokio::handler::tool_fn;
use mcp_io_tokio::reply::{OwnedContent, OwnedPromptMessage};
use mcp_io_tokio::{
    Handler, HostFailure, PromptGet, PromptReply, ResourceRead, ResourceReply, ToolCall, ToolReply,
};
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore};

fn config() -> Config {
    Config::new("io-tokio-test", "0.0.1")
}

#[derive(serde::Deserialize)]
struct Echo {
    text: String,
}

/// Echoes `text` after sleeping `delay_ms` (default 0) milliseconds.
struct Echoer;

impl Handler for Echoer {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        #[derive(serde::Deserialize)]
        struct Args {
            text: String,
            #[serde(default)]
            delay_ms: u64,
        }
        let args: Args = call.deserialize()?;
        if args.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(args.delay_ms)).await;
        }
        Ok(ToolReply::text(args.text))
    }
}

async fn wait_until(count: &AtomicUsize, at_least: usize, notify: &Notify) {
    while count.load(Ordering::SeqCst) < at_least {
        tokio::time::timeout(PATIENCE, notify.notified()).await.expect("handlers start in time");
    }
}

/// Lets every other ready task run (on a current-thread runtime).
async fn settle() {
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn discover_and_echo_round_trip() {
    let mut client = Client::start(config(), tools_catalog(&[]), Arc::new(Echoer));
    client.send(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#).await;
    let discover = client.recv().await;
    assert_eq!(discover["id"], 1);
    let versions = discover["result"]["supportedVersions"].as_array().expect("supportedVersions");
    assert!(versions.contains(&json!("2026-07-28")), "{discover}");
    assert!(discover["result"]["capabilities"]["tools"].is_object(), "{discover}");

    client.send(&call(2, "echo", &json!({ "text": "hi" }))).await;
    let echo = client.recv().await;
    assert_eq!(echo["id"], 2);
    assert_eq!(echo["result"]["content"], json!([{ "type": "text", "text": "hi" }]));
    assert_eq!(echo["result"]["resultType"], "complete");
    assert_eq!(echo["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "io-tokio-test");
    assert!(echo["result"].get("isError").is_none(), "{echo}");

    // The engine's own validation still answers (no handler involved).
    client.send(&call(3, "echo", &json!({ "text": 5 }))).await;
    let invalid = client.recv().await;
    assert_eq!(invalid["id"], 3);
    assert_eq!(invalid["result"]["isError"], true, "{invalid}");

    assert!(client.finish().await.is_empty());
}

#[tokio::test]
async fn legacy_initialize_ping_and_call_round_trip() {
    let mut client = Client::start(config(), tools_catalog(&[]), Arc::new(Echoer));
    client
        .send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .await;
    let init = client.recv().await;
    assert_eq!(init["id"], 0);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"], json!({ "name": "io-tokio-test", "version": "0.0.1" }));
    client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    client.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    let ping = client.recv().await;
    assert_eq!(ping, json!({ "jsonrpc": "2.0", "id": 2, "result": {} }));
    client
        .send(r#"{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"echo","arguments":{"text":"legacy"}}}"#)
        .await;
    let echo = client.recv().await;
    assert_eq!(echo["id"], "three");
    assert_eq!(first_text(&echo), "legacy");
    assert!(echo["result"].get("resultType").is_none(), "legacy results carry no resultType: {echo}");
    assert!(client.finish().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_all_answered_once() {
    const N: u64 = 200;
    let mut client = Client::start(config(), tools_catalog(&[]), Arc::new(Echoer));
    // Written in one go; varying delays make answers finish out of order.
    let mut batch = String::new();
    for id in 1..=N {
        batch.push_str(&call(id, "echo", &json!({ "text": format!("t{id}"), "delay_ms": (id * 7) % 5 })));
        batch.push('\n');
    }
    client.send_raw(batch.as_bytes()).await;
    let mut seen = BTreeMap::new();
    for _ in 0..N {
        let response = client.recv().await;
        let id = response["id"].as_u64().unwrap_or_else(|| panic!("numeric id in {response}"));
        assert_eq!(first_text(&response), format!("t{id}"));
        assert!(seen.insert(id, ()).is_none(), "id {id} answered twice");
    }
    assert_eq!(seen.keys().copied().collect::<Vec<_>>(), (1..=N).collect::<Vec<_>>());
    assert!(client.finish().await.is_empty(), "nothing more after the {N} answers");
}

/// Counts started and running calls; each call waits for a permit.
struct Gated {
    started: AtomicUsize,
    running: AtomicUsize,
    max_running: AtomicUsize,
    started_notify: Notify,
    release: Semaphore,
}

impl Gated {
    fn new() -> Self {
        Self {
            started: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            max_running: AtomicUsize::new(0),
            started_notify: Notify::new(),
            release: Semaphore::new(0),
        }
    }
}

impl Handler for Gated {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        self.started.fetch_add(1, Ordering::SeqCst);
        self.started_notify.notify_one();
        let permit = self.release.acquire().await.map_err(|_| HostFailure::internal("closed"))?;
        permit.forget();
        self.running.fetch_sub(1, Ordering::SeqCst);
        let Echo { text } = call.deserialize()?;
        Ok(ToolReply::text(text))
    }
}

#[tokio::test]
async fn in_flight_limit_bounds_running_handlers() {
    let gated = Arc::new(Gated::new());
    let mut cfg = config();
    cfg.max_in_flight(4);
    let mut client = Client::start(cfg, tools_catalog(&[]), Arc::clone(&gated));
    for id in 1..=10 {
        client.send(&call(id, "echo", &json!({ "text": format!("g{id}") }))).await;
    }
    wait_until(&gated.started, 4, &gated.started_notify).await;
    settle().await;
    assert_eq!(gated.started.load(Ordering::SeqCst), 4, "only the in-flight limit of handlers start");
    assert!(client.try_recv().is_none(), "nothing is answered before release");

    gated.release.add_permits(10);
    let mut ids: Vec<u64> = Vec::new();
    for _ in 0..10 {
        let response = client.recv().await;
        let id = response["id"].as_u64().expect("numeric id");
        assert_eq!(first_text(&response), format!("g{id}"));
        ids.push(id);
    }
    ids.sort_unstable();
    assert_eq!(ids, (1..=10).collect::<Vec<_>>());
    assert_eq!(gated.started.load(Ordering::SeqCst), 10);
    assert_eq!(gated.max_running.load(Ordering::SeqCst), 4, "never more than 4 handlers at once");
    assert!(client.finish().await.is_empty());
}

/// Notifies when dropped.
struct DropFlag(Arc<Notify>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// `block` never finishes on its own; `echo` echoes.
struct Blocker {
    started: Arc<Notify>,
    dropped: Arc<Notify>,
}

impl Handler for Blocker {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        if call.name == "block" {
            let _flag = DropFlag(Arc::clone(&self.dropped));
            self.started.notify_one();
            std::future::pending::<()>().await;
            unreachable!("a pending future never completes");
        }
        let Echo { text } = call.deserialize()?;
        Ok(ToolReply::text(text))
    }
}

#[tokio::test]
async fn cancellation_aborts_the_handler_and_suppresses_its_answer() {
    let blocker = Arc::new(Blocker { started: Arc::new(Notify::new()), dropped: Arc::new(Notify::new()) });
    let mut client = Client::start(config(), tools_catalog(&["block"]), Arc::clone(&blocker));
    client.send(&call(1, "block", &json!({}))).await;
    tokio::time::timeout(PATIENCE, blocker.started.notified()).await.expect("the blocking handler starts");
    client.send(&cancel(1)).await;
    tokio::time::timeout(PATIENCE, blocker.dropped.notified())
        .await
        .expect("the cancelled handler is dropped");
    client.send(&call(2, "echo", &json!({ "text": "after" }))).await;
    let response = client.recv().await;
    assert_eq!(response["id"], 2, "the later request is answered, the cancelled one is not: {response}");
    assert_eq!(first_text(&response), "after");
    let rest = client.finish().await;
    assert!(rest.iter().all(|r| r["id"] != 1), "no answer for the cancelled request: {rest:?}");
    assert!(rest.is_empty(), "{rest:?}");
}

#[tokio::test]
async fn cancelling_an_unknown_or_answered_request_is_harmless() {
    let mut client = Client::start(config(), tools_catalog(&[]), Arc::new(Echoer));
    client.send(&cancel(99)).await;
    client.send(&call(1, "echo", &json!({ "text": "x" }))).await;
    assert_eq!(first_text(&client.recv().await), "x");
    client.send(&cancel(1)).await;
    client.send(&call(2, "echo", &json!({ "text": "y" }))).await;
    assert_eq!(first_text(&client.recv().await), "y");
    assert!(client.finish().await.is_empty());
}

/// Handler tasks are reused from one request to the next; a cancelled request takes its
/// task with it (here before the task even ran), and later requests get a new one.
#[tokio::test]
async fn calls_cancelled_at_once_leave_the_server_answering() {
    let mut client = Client::start(config(), tools_catalog(&[]), Arc::new(Echoer));
    for i in 0..20 {
        let cancelled = call(i, "echo", &json!({ "text": "never" }));
        client.send(&format!("{cancelled}\n{}", cancel(i))).await;
        client.send(&call(100 + i, "echo", &json!({ "text": format!("t{i}") }))).await;
        let r = client.recv().await;
        assert_eq!(r["id"], 100 + i, "only the call not cancelled is answered: {r}");
        assert_eq!(first_text(&r), format!("t{i}"));
    }
    assert!(client.finish().await.is_empty());
}

#[tokio::test]
async fn end_of_input_waits_for_in_flight_answers() {
    let gated = Arc::new(Gated::new());
    let mut client = Client::start(config(), tools_catalog(&[]), Arc::clone(&gated));
    for id in 1..=3 {
        client.send(&call(id, "echo", &json!({ "text": format!("e{id}") }))).await;
    }
    wait_until(&gated.started, 3, &gated.started_notify).await;
    client.close().await;
    settle().await;
    assert!(!client.server.is_finished(), "serve waits for the answers still owed");
    gated.release.add_permits(3);
    let mut texts: Vec<String> = client.finish().await.iter().map(|r| first_text(r).to_owned()).collect();
    texts.sort();
    assert_eq!(texts, ["e1", "e2", "e3"]);
}

#[tokio::test]
async fn end_of_input_without_a_final_newline_still_answers() {
    let mut client = Client::start(config(), tools_catalog(&[]), Arc::new(Echoer));
    client.send_raw(call(1, "echo", &json!({ "text": "last" })).as_bytes()).await;
    let rest = client.finish().await;
    assert_eq!(rest.len(), 1);
    assert_eq!(first_text(&rest[0]), "last");
}

#[tokio::test]
async fn frames_split_across_reads_are_reassembled() {
    let mut client = Client::start(config(), tools_catalog(&[]), Arc::new(Echoer));
    let frame = format!("{}\n", call(7, "echo", &json!({ "text": "pieces" })));
    for piece in frame.as_bytes().chunks(9) {
        client.send_raw(piece).await;
        tokio::task::yield_now().await;
    }
    assert_eq!(first_text(&client.recv().await), "pieces");
    assert!(client.finish().await.is_empty());
}

#[tokio::test]
async fn large_answers_cross_a_small_pipe_whole() {
    let big = "x".repeat(300_000);
    let handler = tool_fn(move |_call: ToolCall| {
        let big = big.clone();
        async move { Ok(ToolReply::text(big)) }
    });
    let mut client = Client::start_with(Engine::new(config(), tools_catalog(&[])), Arc::new(handler), 1024);
    for id in 1..=3 {
        client.send(&call(id, "echo", &json!({ "text": "" }))).await;
    }
    for _ in 0..3 {
        let response = client.recv().await;
        assert_eq!(first_text(&response).len(), 300_000);
    }
    assert!(client.finish().await.is_empty());
}

/// Fails in every way a handler can.
struct Failing;

impl Handler for Failing {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        match call.name.as_str() {
            "internal" => Err(HostFailure::internal("database unreachable")),
            "invalid" => Err(HostFailure::invalid_params("bad widget")),
            "business" => Ok(ToolReply::error("the widget is broken")),
            "panic" => panic!("handler panicked on purpose"),
            _ => {
                let Echo { text } = call.deserialize()?;
                Ok(ToolReply::text(text))
            }
        }
    }
}

#[tokio::test]
async fn handler_failures_and_panics_become_errors_and_the_server_goes_on() {
    let mut client = Client::start(
        config(),
        tools_catalog(&["internal", "invalid", "business", "panic"]),
        Arc::new(Failing),
    );
    client.send(&call(1, "internal", &json!({}))).await;
    let r = client.recv().await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert_eq!(r["error"]["message"], "Internal error: database unreachable");

    client.send(&call(2, "invalid", &json!({}))).await;
    let r = client.recv().await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["message"], "Invalid params: bad widget");

    client.send(&call(3, "business", &json!({}))).await;
    let r = client.recv().await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(first_text(&r), "the widget is broken");

    client.send(&call(4, "panic", &json!({}))).await;
    let r = client.recv().await;
    assert_eq!(r["id"], 4);
    assert_eq!(r["error"]["code"], -32603, "{r}");

    client.send(&call(5, "echo", &json!({ "text": "still here" }))).await;
    assert_eq!(first_text(&client.recv().await), "still here");
    assert!(client.finish().await.is_empty());
}

/// Answers resources and prompts of `resource_catalog`.
struct Library;

impl Handler for Library {
    async fn read_resource(&self, read: ResourceRead) -> Result<ResourceReply, HostFailure> {
        if let Some(id) = read.variable("id") {
            assert_eq!(read.template.as_deref(), Some("lib://book/{id}"));
            return Ok(ResourceReply::text(read.uri.clone(), Some("text/plain"), format!("book {id}")));
        }
        match read.uri.as_str() {
            "lib://logo" => Ok(ResourceReply::blob(read.uri.clone(), Some("image/png"), b"hi".to_vec())),
            _ => Ok(ResourceReply::not_found()),
        }
    }

    async fn get_prompt(&self, get: PromptGet) -> Result<PromptReply, HostFailure> {
        let who = get.argument("who").unwrap_or_default();
        Ok(PromptReply::new(vec![
            OwnedPromptMessage::user(format!("Hello {who}")),
            OwnedPromptMessage::assistant(OwnedContent::resource_link("lib://logo", "logo")),
        ])
        .with_description("a greeting"))
    }
}

fn library_catalog() -> Catalog {
    Catalog::builder()
        .resource(Resource::new("lib://logo", "logo"))
        .resource(Resource::new("lib://gone", "gone"))
        .template(ResourceTemplate::new("lib://book/{id}", "book"))
        .prompt(Prompt::new("greet").argument(PromptArgument::required("who")))
        .build()
        .expect("valid catalog")
}

#[tokio::test]
async fn resources_and_prompts_round_trip() {
    let mut client = Client::start(config(), library_catalog(), Arc::new(Library));
    client.send(&read(1, "lib://book/42")).await;
    let r = client.recv().await;
    assert_eq!(
        r["result"]["contents"],
        json!([{ "uri": "lib://book/42", "mimeType": "text/plain", "text": "book 42" }])
    );

    client.send(&read(2, "lib://logo")).await;
    let r = client.recv().await;
    assert_eq!(r["result"]["contents"][0]["blob"], "aGk=", "{r}");

    client.send(&read(3, "lib://gone")).await;
    let r = client.recv().await;
    assert_eq!(r["error"]["code"], -32602, "2026-07-28 answers an unknown resource -32602: {r}");
    assert_eq!(r["error"]["message"], "Resource not found");

    client.send(&get(4, "greet", &json!({ "who": "Ada" }))).await;
    let r = client.recv().await;
    assert_eq!(r["result"]["description"], "a greeting");
    assert_eq!(
        r["result"]["messages"],
        json!([
            { "role": "user", "content": { "type": "text", "text": "Hello Ada" } },
            { "role": "assistant", "content": { "type": "resource_link", "uri": "lib://logo", "name": "logo" } }
        ])
    );
    assert!(client.finish().await.is_empty());
}

/// Implements nothing: every method keeps its default.
struct Nothing;

impl Handler for Nothing {}

#[tokio::test]
async fn default_handler_methods_answer_internal_errors() {
    let catalog = Catalog::builder()
        .tool(mcp_engine::Tool::new("t"))
        .resource(Resource::new("x://r", "r"))
        .prompt(Prompt::new("p"))
        .build()
        .expect("valid catalog");
    let mut client = Client::start(config(), catalog, Arc::new(Nothing));
    client.send(&call(1, "t", &json!({}))).await;
    client.send(&read(2, "x://r")).await;
    client.send(&get(3, "p", &json!({}))).await;
    let mut codes = BTreeMap::new();
    for _ in 0..3 {
        let r: Value = client.recv().await;
        codes.insert(r["id"].as_u64().expect("id"), r["error"]["code"].clone());
    }
    assert_eq!(codes.into_values().collect::<Vec<_>>(), [json!(-32603), json!(-32603), json!(-32603)]);
    assert!(client.finish().await.is_empty());
}

#[tokio::test]
async fn structured_tool_replies_carry_structured_content() {
    let handler = tool_fn(|_call| async { Ok(ToolReply::structured(json!({ "sum": 3 }))) });
    let mut client = Client::start(config(), tools_catalog(&[]), Arc::new(handler));
    client.send(&call(1, "echo", &json!({ "text": "" }))).await;
    let r = client.recv().await;
    assert_eq!(r["result"]["structuredContent"], json!({ "sum": 3 }));
    assert_eq!(first_text(&r), r#"{"sum":3}"#);
    assert!(client.finish().await.is_empty());
}

/// Reports in a tight loop: how many the server queued.
struct Chatty(AtomicUsize);

impl Handler for Chatty {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        // No await between the reports: the server's loop cannot take any meanwhile.
        let queued = (0..5000).filter(|&i| call.progress(f64::from(i + 1), None, None)).count();
        self.0.store(queued, Ordering::SeqCst);
        Ok(ToolReply::text(queued.to_string()))
    }
}

#[tokio::test]
async fn a_handler_reporting_in_a_tight_loop_is_bounded() {
    let handler = Arc::new(Chatty(AtomicUsize::new(0)));
    let mut client = Client::start(config(), tools_catalog(&["chatty"]), Arc::clone(&handler));
    let mut req: Value = serde_json::from_str(&call(1, "chatty", &json!({}))).expect("JSON");
    req["params"]["_meta"]["progressToken"] = json!("p");
    client.send(&req.to_string()).await;
    let mut progress = 0;
    let result = loop {
        let v = client.recv().await;
        if v["method"] == "notifications/progress" {
            progress += 1;
        } else {
            break v;
        }
    };
    assert_eq!(first_text(&result), "1024", "{result}");
    assert_eq!(handler.0.load(Ordering::SeqCst), 1024);
    assert_eq!(progress, 1024, "every queued report reached the client");
}

/// Answers with `structuredContent` its output schema refuses.
struct Misshapen;

impl Handler for Misshapen {
    async fn call_tool(&self, _call: ToolCall) -> Result<ToolReply, HostFailure> {
        Ok(ToolReply::text("five").with_structured_content(json!({ "n": "five" })))
    }
}

#[tokio::test]
async fn a_result_that_does_not_match_its_output_schema_is_logged_at_warn() {
    let logs = Captured::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || sink.clone()).with_ansi(false).finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let schema = json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] });
    let catalog =
        Catalog::builder().tool(mcp_engine::Tool::new("count").output_schema(schema)).build().unwrap();
    let mut client = Client::start(config(), catalog, Arc::new(Misshapen));
    client.send(&call(1, "count", &json!({}))).await;
    let r = client.recv().await;
    // The client sees a generic tool error; the log says what is wrong, and where.
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r["result"].get("structuredContent").is_none(), "{r}");
    assert!(client.finish().await.is_empty());
    let text = logs.text();
    assert!(text.contains("WARN") && text.contains("does not match its output schema"), "{text}");
    assert!(text.contains("tool=count") && text.contains("path=/n"), "{text}");
}

/// Reports a read of `x://r`, then asks the server for the observed connectome graph and
/// answers with the count of that read edge.
struct Reader;

impl Handler for Reader {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        assert!(call.report_read("x://r"), "queued");
        assert!(call.report_read("x://unknown"), "queued, not counted");
        let publisher = call.publisher().ok_or_else(|| HostFailure::internal("no server"))?;
        let graph = publisher.observed_graph().await.map_err(|e| HostFailure::internal(e.to_string()))?;
        let key = mcp_engine::connectome::EdgeKey {
            from: "tool:reader".into(),
            kind: mcp_engine::connectome::EdgeKind::Reads,
            to: "resource:x://r".into(),
        };
        let reads = graph.get_edge(&key).and_then(|e| e.count).unwrap_or(0);
        Ok(ToolReply::text(format!("{reads} {}", graph.edges().len())))
    }
}

#[tokio::test]
async fn a_handler_reports_reads_and_the_publisher_shows_the_observed_graph() {
    let catalog = Catalog::builder()
        .tool(mcp_engine::Tool::new("reader"))
        .resource(Resource::new("x://r", "r"))
        .build()
        .unwrap();
    let mut client = Client::start(config(), catalog, Arc::new(Reader));
    client.send(&call(1, "reader", &json!({}))).await;
    let r = client.recv().await;
    // The reports reach the run loop before the graph is asked for: the read, the call of
    // tools/call and its dispatch to the tool.
    assert_eq!(first_text(&r), "1 3", "{r}");
    client.send(&call(2, "reader", &json!({}))).await;
    assert_eq!(first_text(&client.recv().await), "2 3");
    assert!(client.finish().await.is_empty());
}
