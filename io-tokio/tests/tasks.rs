//! The handler's side of tasks (`ToolCall::start_task`): over `serve` (in-memory pipes)
//! and `serve_http` (real TCP): a handler turns its call into a task, reports a status
//! message, asks for input with the same reply as a plain call, is aborted on
//! `tasks/cancel`, finishes with a result or an error; a task outlives the connection
//! that started it; a refused start leaves a plain call.

mod common;
mod http_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_engine::error::{AnswerError, TaskRefusal};
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_engine::mrtr::InputRequestBuf;
use mcp_engine::{Catalog, Config, TaskSupport, Tool};
use mcp_io_tokio::handler::TaskStart;
use mcp_io_tokio::http::AllowAll;
use mcp_io_tokio::reply::InputRequiredReply;
use mcp_io_tokio::{Handler, HostFailure, HttpServer, ToolCall, ToolReply};
use serde_json::{Value, json};
use tokio::sync::Notify;

const PATIENCE: Duration = Duration::from_secs(30);

fn config() -> Config {
    let mut c = Config::new("io-tokio-tasks", "0.0.1");
    c.tasks(true).max_tasks_per_principal(2);
    c
}

fn catalog() -> Catalog {
    let tool = |name: &str| Tool::new(name).description("a task tool").task_support(TaskSupport::Optional);
    Catalog::builder()
        .tool(tool("wait"))
        .tool(tool("ask"))
        .tool(tool("fail"))
        .tool(tool("hang"))
        .build()
        .expect("a valid catalog")
}

/// What the handler saw and does; `release` lets a `wait` task finish.
#[derive(Default)]
struct Tasky {
    release: Notify,
    dropped: Notify,
    was_dropped: AtomicBool,
    refused: std::sync::Mutex<Vec<AnswerError>>,
}

struct OnDrop<'a>(&'a Tasky);

impl Drop for OnDrop<'_> {
    fn drop(&mut self) {
        self.0.was_dropped.store(true, Ordering::SeqCst);
        self.0.dropped.notify_one();
    }
}

impl Handler for Tasky {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        if !call.is_task() && call.can_start_task() {
            let start = TaskStart::new().message("queued").poll_interval(Duration::from_millis(10));
            if let Err(e) = call.start_task(start).await {
                self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(e);
                return Ok(ToolReply::text("not a task"));
            }
        }
        match call.name.as_str() {
            "wait" => {
                call.task_status(Some("working on it"));
                self.release.notified().await;
                Ok(ToolReply::text("waited"))
            }
            "ask" => match call.input.response_as::<Value>("name") {
                Some(r) => {
                    Ok(ToolReply::text(format!("Hello, {}!", r["content"]["name"].as_str().unwrap_or("?"))))
                }
                None => {
                    Ok(ToolReply::input_required(InputRequiredReply::new(vec![InputRequestBuf::elicit(
                        "name",
                        "Who are you?",
                        &json!({ "type": "object", "properties": { "name": { "type": "string" } } }),
                    )])))
                }
            },
            "fail" => Err(HostFailure::internal("it could not be done")),
            _ => {
                let _guard = OnDrop(self);
                std::future::pending::<()>().await;
                Ok(ToolReply::text("never"))
            }
        }
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "extensions": { "io.modelcontextprotocol/tasks": {} }
        }
    })
}

fn frame(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = meta();
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

/// Sends one request over stdio and reads its answer.
async fn ask(c: &mut common::Client, id: u64, method: &str, params: Value) -> Value {
    c.send(&frame(id, method, params)).await;
    let v = c.recv().await;
    assert_eq!(v["id"], id, "{v}");
    v
}

/// Polls `tasks/get` until the task's status is `status`.
async fn until_status(c: &mut common::Client, task: &str, status: &str) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut id = 1000;
    loop {
        id += 1;
        let v = ask(c, id, "tasks/get", json!({ "taskId": task })).await;
        if v["result"]["status"] == status {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "still {v}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn task_id(v: &Value) -> String {
    assert_eq!(v["result"]["resultType"], "task", "{v}");
    v["result"]["taskId"].as_str().expect("a task id").to_owned()
}

#[tokio::test]
async fn a_handler_runs_its_call_as_a_task_to_the_end() {
    let handler = Arc::new(Tasky::default());
    let mut c = common::Client::start(config(), catalog(), Arc::clone(&handler));
    let created = ask(&mut c, 1, "tools/call", json!({ "name": "wait" })).await;
    assert_eq!(created["result"]["statusMessage"], "queued");
    assert_eq!(created["result"]["pollIntervalMs"], 10);
    let task = task_id(&created);
    until_status(&mut c, &task, "working").await;
    // The status message the handler set after the task started.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let v = ask(&mut c, 2, "tasks/get", json!({ "taskId": task })).await;
        if v["result"]["statusMessage"] == "working on it" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{v}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    handler.release.notify_one();
    let done = until_status(&mut c, &task, "completed").await;
    assert_eq!(done["result"]["result"]["content"][0]["text"], "waited", "{done}");

    // A host failure fails the task.
    let failed = ask(&mut c, 3, "tools/call", json!({ "name": "fail" })).await;
    let task = task_id(&failed);
    let v = until_status(&mut c, &task, "failed").await;
    assert_eq!(v["result"]["error"]["code"], -32603);
    assert_eq!(v["result"]["error"]["message"], "Internal error: it could not be done");
}

#[tokio::test]
async fn input_is_asked_with_the_same_reply_and_comes_back_to_the_task() {
    let mut c = common::Client::start(config(), catalog(), Arc::new(Tasky::default()));
    let task = task_id(&ask(&mut c, 1, "tools/call", json!({ "name": "ask" })).await);
    let v = until_status(&mut c, &task, "input_required").await;
    assert_eq!(v["result"]["inputRequests"]["name"]["method"], "elicitation/create", "{v}");
    let answer = json!({ "action": "accept", "content": { "name": "Ada" } });
    let ack =
        ask(&mut c, 2, "tasks/update", json!({ "taskId": task, "inputResponses": { "name": answer } })).await;
    assert_eq!(ack["result"]["resultType"], "complete");
    let done = until_status(&mut c, &task, "completed").await;
    assert_eq!(done["result"]["result"]["content"][0]["text"], "Hello, Ada!", "{done}");
}

#[tokio::test]
async fn tasks_cancel_aborts_the_handler() {
    let handler = Arc::new(Tasky::default());
    let mut c = common::Client::start(config(), catalog(), Arc::clone(&handler));
    let task = task_id(&ask(&mut c, 1, "tools/call", json!({ "name": "hang" })).await);
    until_status(&mut c, &task, "working").await;
    assert!(!handler.was_dropped.load(Ordering::SeqCst));
    let ack = ask(&mut c, 2, "tasks/cancel", json!({ "taskId": task })).await;
    assert_eq!(ack["result"]["resultType"], "complete");
    tokio::time::timeout(PATIENCE, async {
        while !handler.was_dropped.load(Ordering::SeqCst) {
            handler.dropped.notified().await;
        }
    })
    .await
    .expect("the handler's future is dropped");
    assert_eq!(until_status(&mut c, &task, "cancelled").await["result"]["status"], "cancelled");
}

#[tokio::test]
async fn a_refused_start_leaves_a_plain_call() {
    let handler = Arc::new(Tasky::default());
    let mut c = common::Client::start(config(), catalog(), Arc::clone(&handler));
    for id in 1..=2 {
        task_id(&ask(&mut c, id, "tools/call", json!({ "name": "hang" })).await);
    }
    // The principal holds max_tasks_per_principal (2): the third is answered as a call.
    let v = ask(&mut c, 3, "tools/call", json!({ "name": "wait" })).await;
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "not a task");
    let refused = handler.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    assert_eq!(refused, vec![AnswerError::TaskRefused(TaskRefusal::PrincipalFull)]);
    // A call made without a server cannot become a task.
    let alone = ToolCall::new("wait", "{}");
    assert!(!alone.can_start_task());
    assert_eq!(alone.start_task(TaskStart::new()).await, Err(AnswerError::TaskRefused(TaskRefusal::Off)));
}

#[tokio::test]
async fn a_task_outlives_the_http_connection_that_started_it() {
    use http_support::{Conn, post};
    let handler = Arc::new(Tasky::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let server = HttpServer::new(HttpEngine::new(config(), http, catalog()), Arc::clone(&handler), AllowAll);
    let serving = tokio::spawn(server.serve(listener));

    let mut first = Conn::open(addr).await;
    first
        .send(&post(addr, "tools/call", Some("wait"), &frame(1, "tools/call", json!({ "name": "wait" }))))
        .await;
    let created = first.response().await.json();
    let task = task_id(&created);
    drop(first);

    let get =
        |id: u64| post(addr, "tasks/get", Some(&task), &frame(id, "tasks/get", json!({ "taskId": task })));
    let mut second = Conn::open(addr).await;
    second.send(&get(2)).await;
    let v = second.response().await.json();
    assert_eq!(v["result"]["status"], "working", "the task lives on: {v}");
    handler.release.notify_one();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut id = 3;
    loop {
        second.send(&get(id)).await;
        let v = second.response().await.json();
        if v["result"]["status"] == "completed" {
            assert_eq!(v["result"]["result"]["content"][0]["text"], "waited");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{v}");
        id += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    serving.abort();
}
