//! Task records in `PgSessionStore` against a real PostgreSQL (`pg_support`): migrations 3
//! and 4 from a version-2 schema and rerun; a principal's tasks listed a page at a time in
//! creation order, from either of two stores; a task created on node A is read, answered and
//! cancelled on node B (A hears of it through the store's notices); a restart of node A
//! (a new server with the same node name) reads a finished task's result and a task that
//! was running as `failed`. Waits are polls with bounded retries (`patient`).

#![cfg(feature = "postgres")]

mod http_support;
mod pg_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use http_support::{Conn, patient, post};
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_engine::mrtr::InputRequestBuf;
use mcp_engine::{Catalog, Config, TaskSupport, Tool};
use mcp_io_tokio::handler::TaskStart;
use mcp_io_tokio::http::AllowAll;
use mcp_io_tokio::reply::InputRequiredReply;
use mcp_io_tokio::store::{PgSessionStore, TaskSave, TaskStore};
use mcp_io_tokio::{Handler, HostFailure, HttpServer, ToolCall, ToolReply};
use pg_support::{connect, fresh, store};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;

fn catalog() -> Catalog {
    let tool = |name: &str| Tool::new(name).description("a task tool").task_support(TaskSupport::Optional);
    Catalog::builder().tool(tool("ask")).tool(tool("quick")).tool(tool("hang")).build().expect("a catalog")
}

/// The handler every node runs: `ask` asks a name and greets it, `quick` finishes at
/// once, `hang` never finishes (and says when its future is dropped).
#[derive(Default)]
struct Tasky {
    dropped: AtomicBool,
    dropped_now: Notify,
}

struct Dropped<'a>(&'a Tasky);

impl Drop for Dropped<'_> {
    fn drop(&mut self) {
        self.0.dropped.store(true, Ordering::SeqCst);
        self.0.dropped_now.notify_one();
    }
}

impl Handler for Tasky {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        if !call.is_task() && call.can_start_task() {
            call.start_task(TaskStart::new()).await.map_err(|e| HostFailure::internal(format!("{e:?}")))?;
        }
        match call.name.as_str() {
            "ask" => Ok(match call.input.response_as::<Value>("name") {
                Some(r) => {
                    ToolReply::text(format!("Hello, {}!", r["content"]["name"].as_str().unwrap_or("?")))
                }
                None => ToolReply::input_required(InputRequiredReply::new(vec![InputRequestBuf::elicit(
                    "name",
                    "Who are you?",
                    &json!({ "type": "object", "properties": { "name": { "type": "string" } } }),
                )])),
            }),
            "quick" => Ok(ToolReply::text("quickly done")),
            _ => {
                let _guard = Dropped(self);
                std::future::pending::<()>().await;
                Ok(ToolReply::text("never"))
            }
        }
    }
}

/// A server named `name` sharing `store` (sessions, notices and tasks); its serving task
/// (abort it to stop the node).
async fn node(
    name: &str,
    store: Arc<PgSessionStore>,
    handler: Arc<Tasky>,
) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let mut cfg = Config::new("io-tokio-pg-tasks", "0.0.1");
    cfg.secret_key([7; 32]).tasks(true);
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.node_name(name);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = HttpServer::new(HttpEngine::new(cfg, http, catalog()), handler, AllowAll)
        .session_store(Arc::clone(&store))
        .task_store(store);
    let task = tokio::spawn(async move {
        let _ = server.serve(listener).await;
    });
    (addr, task)
}

fn body(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {}, "extensions": { "io.modelcontextprotocol/tasks": {} }
        }
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

/// One request on a connection of its own: the status and the JSON answer.
async fn ask(addr: SocketAddr, id: u64, method: &str, params: Value) -> (u16, Value) {
    let name = params["name"].as_str().or(params["taskId"].as_str()).map(str::to_owned);
    let mut c = Conn::open(addr).await;
    c.send(&post(addr, method, name.as_deref(), &body(id, method, params))).await;
    let r = c.response().await;
    let v = if r.body.is_empty() { Value::Null } else { r.json() };
    (r.status, v)
}

async fn create(addr: SocketAddr, tool: &str) -> String {
    let (status, v) = ask(addr, 1, "tools/call", json!({ "name": tool, "arguments": {} })).await;
    assert_eq!((status, &v["result"]["resultType"]), (200, &json!("task")), "{v}");
    v["result"]["taskId"].as_str().expect("a task id").to_owned()
}

/// Polls `tasks/get` on `addr` until the task is `status` (bounded by `patient`).
async fn until(addr: SocketAddr, task: &str, status: &str) -> Value {
    patient(status, async {
        loop {
            let (code, v) = ask(addr, 9, "tasks/get", json!({ "taskId": task })).await;
            if code == 200 && v["result"]["status"] == status {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test]
async fn migrations_3_and_4_from_a_version_2_schema_and_rerun() {
    let Some(db) = fresh("t_tmig").await else { return };
    patient("migration", async {
        drop(store(&db.url, "t_tmig").await);
        let c = connect(&db.url).await;
        // Back to version 2, with a session in it.
        c.batch_execute(
            "DROP TABLE t_tmig.tasks; DELETE FROM t_tmig.schema_version WHERE version >= 3;
             INSERT INTO t_tmig.sessions (id, record, version, expires_at) VALUES ('s', '\\x01', 1, now() + interval '1 hour')",
        )
        .await
        .expect("a version-2 schema");
        let s = store(&db.url, "t_tmig").await;
        let v: i32 = c.query_one("SELECT max(version) FROM t_tmig.schema_version", &[]).await.unwrap().get(0);
        assert_eq!(v, 4);
        assert!(mcp_io_tokio::store::SessionStore::load(&s, "s").await.unwrap().is_some(), "sessions kept");
        drop(store(&db.url, "t_tmig").await);
        let n: i64 = c.query_one("SELECT count(*) FROM t_tmig.schema_version", &[]).await.unwrap().get(0);
        assert_eq!(n, 4, "a rerun changes nothing");

        // Compare-and-set on the revision; expiry; the cleanup.
        let later = SystemTime::now() + Duration::from_secs(3600);
        assert!(s.save_task(&TaskSave::new("t1", 1, b"one", later)).await.unwrap());
        assert!(s.save_task(&TaskSave::new("t1", 2, b"two", later)).await.unwrap());
        assert!(!s.save_task(&TaskSave::new("t1", 2, b"other", later)).await.unwrap(), "not above");
        assert!(!s.save_task(&TaskSave::new("t1", 1, b"older", later)).await.unwrap());
        assert_eq!(s.load_task("t1").await.unwrap().as_deref(), Some(&b"two"[..]));
        let past = SystemTime::now() - Duration::from_secs(1);
        assert!(s.save_task(&TaskSave::new("t2", 1, b"gone", past)).await.unwrap());
        assert!(s.load_task("t2").await.unwrap().is_none(), "past its expiry");
        assert_eq!(s.cleanup().await.unwrap(), 1, "the expired task row");
        s.task_expired("t1").await.unwrap();
        assert!(s.load_task("t1").await.unwrap().is_none());
    })
    .await;
}

/// `list_tasks`: a principal's rows only (or the anonymous ones), not past their expiry,
/// by `created_at` then id, after a position, at most `limit`; the same from a second
/// store on the schema; a later save of a task keeps its place.
#[tokio::test]
async fn a_principals_tasks_are_listed_in_creation_order_after_a_position() {
    use mcp_io_tokio::store::TaskListQuery;
    let Some(db) = fresh("t_tlist").await else { return };
    patient("listing", async {
        let (s, other) = (store(&db.url, "t_tlist").await, store(&db.url, "t_tlist").await);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
        let later = SystemTime::now() + Duration::from_secs(3600);
        let past = SystemTime::now() - Duration::from_secs(1);
        let (alice, bob) = (Some([1u8; 32]), Some([2u8; 32]));
        // (id, principal, created µs after t0, expires): "b" and "c" share a creation time.
        let rows = [
            ("d", alice, 3, later),
            ("c", alice, 2, later),
            ("b", alice, 2, later),
            ("a", alice, 1, later),
            ("x", bob, 1, later),
            ("n", None, 1, later),
            ("old", alice, 0, past),
        ];
        for (id, who, at, exp) in rows {
            let save =
                TaskSave::new(id, 1, id.as_bytes(), exp).of_principal(who, t0 + Duration::from_micros(at));
            assert!(s.save_task(&save).await.unwrap());
        }
        // A later save of "a" (another revision) keeps its place.
        let again = TaskSave::new("a", 2, b"a2", later).of_principal(alice, t0 + Duration::from_micros(1));
        assert!(s.save_task(&again).await.unwrap());
        let ids =
            |page: Vec<mcp_io_tokio::store::ListedTask>| page.into_iter().map(|t| t.id).collect::<Vec<_>>();

        let first = s.list_tasks(&TaskListQuery::new(alice, 3)).await.unwrap();
        assert_eq!(first[0].record, b"a2", "the latest record");
        assert_eq!(first[0].created, t0 + Duration::from_micros(1), "createdAt to the microsecond");
        let last = first[2].clone();
        assert_eq!(ids(first), ["a", "b", "c"]);
        let rest =
            other.list_tasks(&TaskListQuery::new(alice, 3).after(last.created, &last.id)).await.unwrap();
        assert_eq!(ids(rest), ["d"], "after the position, from the other store");
        assert_eq!(ids(s.list_tasks(&TaskListQuery::new(bob, 10)).await.unwrap()), ["x"]);
        assert_eq!(ids(s.list_tasks(&TaskListQuery::new(None, 10)).await.unwrap()), ["n"], "anonymous");
        assert!(s.list_tasks(&TaskListQuery::new(Some([3; 32]), 10)).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_task_created_on_one_node_is_read_answered_and_cancelled_on_another() {
    let Some(db) = fresh("t_tnodes").await else { return };
    patient("two nodes", async {
        let (sa, sb) =
            (Arc::new(store(&db.url, "t_tnodes").await), Arc::new(store(&db.url, "t_tnodes").await));
        let (ha, hb) = (Arc::new(Tasky::default()), Arc::new(Tasky::default()));
        let (a, _ta) = node("a", sa, Arc::clone(&ha)).await;
        let (b, _tb) = node("b", sb, hb).await;

        let task = create(a, "ask").await;
        let v = until(b, &task, "input_required").await;
        assert_eq!(v["result"]["inputRequests"]["name"]["method"], "elicitation/create", "{v}");
        let answer = json!({ "action": "accept", "content": { "name": "Ada" } });
        let (status, ack) =
            ask(b, 2, "tasks/update", json!({ "taskId": task, "inputResponses": { "name": answer } })).await;
        let c = connect(&db.url).await;
        let rev: i64 = c.query_one("SELECT revision FROM t_tnodes.tasks", &[]).await.unwrap().get(0);
        assert!(rev >= 3, "created, input required, answered on node B: revision {rev}");
        assert_eq!((status, &ack["result"]["resultType"]), (200, &json!("complete")), "{ack}");
        // Node A hears of it, its handler runs again with the answer, node B reads the end.
        let done = until(b, &task, "completed").await;
        assert_eq!(done["result"]["result"]["content"][0]["text"], "Hello, Ada!", "{done}");

        let hang = create(a, "hang").await;
        until(b, &hang, "working").await;
        let (status, ack) = ask(b, 3, "tasks/cancel", json!({ "taskId": hang })).await;
        assert_eq!((status, &ack["result"]["resultType"]), (200, &json!("complete")), "{ack}");
        while !ha.dropped.load(Ordering::SeqCst) {
            ha.dropped_now.notified().await;
        }
        until(a, &hang, "cancelled").await;
    })
    .await;
}

#[tokio::test]
async fn a_restarted_node_reads_a_finished_result_and_a_mid_run_task_as_failed() {
    let Some(db) = fresh("t_trestart").await else { return };
    patient("restart", async {
        let s = Arc::new(store(&db.url, "t_trestart").await);
        let (a, served) = node("a", Arc::clone(&s), Arc::new(Tasky::default())).await;
        let quick = create(a, "quick").await;
        until(a, &quick, "completed").await;
        let hang = create(a, "hang").await;
        served.abort();
        let _ = served.await;

        // The same node name, a new process (a new boot).
        let (a2, _served) = node("a", s, Arc::new(Tasky::default())).await;
        let v = until(a2, &quick, "completed").await;
        assert_eq!(v["result"]["result"]["content"][0]["text"], "quickly done", "{v}");
        let v = until(a2, &hang, "failed").await;
        assert_eq!(v["result"]["statusMessage"], "the server restarted while the task ran", "{v}");
    })
    .await;
}
