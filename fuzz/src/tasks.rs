//! tasks: a stdio engine with tasks on, driven by a sequence of operations: tool calls the
//! host may make tasks (under `2026-07-28`, and `2025-11-25` with `params.task`),
//! `tasks/get`, `tasks/update` (answers of every shape, to outstanding and unknown keys),
//! `tasks/cancel` and `tasks/result` with known, foreign-revision and garbled ids, the
//! host's answers, errors, input requests and status messages on task tickets, and time
//! passing (TTL expiry).
//!
//! Checks: no panic; every request is answered exactly once (a `tasks/result` at the
//! latest when its task ends or expires); every line is one JSON-RPC message; a task's
//! status, as `tasks/get` reports it, only moves as the status machine allows and never
//! leaves a terminal status; an id of another revision, or a deleted task's, is `-32602`.

use core::time::Duration;
use mcp_engine::Commands;
use std::collections::HashMap;

use mcp_engine::error::HostError;
use mcp_engine::mrtr::{InputRequest, InputRequired};
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, TaskOptions, TaskSupport, Ticket, Tool, ToolOutput,
};
use serde_json::{Value, json};

use crate::common::{Bytes, check_line, task_status_may_follow};

const MAX_OPS: usize = 256;
const KEYS: [&str; 3] = ["a", "b", "c"];

struct Harness {
    e: Engine,
    now: Instant,
    next_id: u64,
    /// Requests sent, by id: answered how many times.
    answers: HashMap<u64, u32>,
    /// Known tasks: id, revision (`true`: 2026-07-28), last status seen.
    tasks: Vec<(String, bool, String)>,
    /// Task tickets the host holds.
    held: Vec<Ticket>,
    /// Whether the host makes the next offered call a task.
    make_task: bool,
}

impl Harness {
    fn drain(&mut self) {
        let make = self.make_task;
        let mut held = Vec::new();
        loop {
            let mut progressed = false;
            while let Some(ev) = self.e.poll_event() {
                progressed = true;
                match ev {
                    Event::CallTool(mut call) => {
                        if call.ticket.is_task() {
                            held.push(call.ticket);
                        } else if make
                            && call.can_start_task
                            && let Ok(t) = call.start_task(&TaskOptions::new().ttl(Duration::from_secs(5)))
                        {
                            held.push(t);
                        } else {
                            // Refused (a bound reached), or not made a task: a plain call.
                            let _ = call.answer(&ToolOutput::new(&[Content::text("plain")]));
                        }
                    }
                    Event::Cancelled(t) => held.retain(|h| *h != t),
                    _ => {}
                }
            }
            let out = self.e.pending_output().to_vec();
            self.e.consume_output(out.len());
            if !out.is_empty() {
                progressed = true;
                self.take(&out);
            }
            if !progressed {
                break;
            }
        }
        self.held.extend(held);
    }

    fn take(&mut self, out: &[u8]) {
        for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let v = check_line(line);
            if let Some(id) = v.get("id").and_then(Value::as_u64) {
                *self.answers.entry(id).or_default() += 1;
            }
            let result = &v["result"];
            let created = result["taskId"]
                .as_str()
                .map(|t| (t, true))
                .or(result["task"]["taskId"].as_str().map(|t| (t, false)));
            if let Some((id, modern)) = created
                && (result["resultType"] == "task" || result.get("task").is_some())
                && !self.tasks.iter().any(|(t, _, _)| t == id)
            {
                self.tasks.push((id.to_owned(), modern, "working".to_owned()));
            }
            // A task as tasks/get, tasks/cancel or a notification shows it.
            let task = if v["method"] == "notifications/tasks/status" { &v["params"] } else { result };
            if let (Some(id), Some(status)) = (task["taskId"].as_str(), task["status"].as_str())
                && let Some(known) = self.tasks.iter_mut().find(|(t, _, _)| t == id)
            {
                assert!(
                    task_status_may_follow(&known.2, status),
                    "task {id} went from {} to {status}",
                    known.2
                );
                known.2 = status.to_owned();
            }
        }
    }

    fn send(&mut self, method: &str, mut params: Value, modern: bool) {
        if modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } }
            });
        }
        let id = self.next_id;
        self.next_id += 1;
        self.answers.insert(id, 0);
        let line =
            json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string() + "\n";
        let mut fed = 0;
        while fed < line.len() {
            fed += self.e.handle_input(self.now, &line.as_bytes()[fed..]);
            self.drain();
        }
    }
}

/// Runs the operations `data` encodes.
pub fn tasks(data: &[u8]) {
    let mut b = Bytes::new(data);
    let mut config = Config::new("fuzz", "0");
    config
        .tasks(true)
        .max_tasks_per_principal(8)
        .task_ttl(Duration::from_secs(30))
        .request_state_key([1; 32]);
    let catalog = Catalog::builder()
        .tool(Tool::new("t").task_support(TaskSupport::Optional))
        .tool(Tool::new("r").task_support(TaskSupport::Required))
        .tool(Tool::new("p"))
        .build()
        .unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"));
    let mut e = Engine::new(config, catalog);
    e.set_entropy(&[b.u8(); 32]);
    let mut h = Harness {
        e,
        now: Instant::ZERO,
        next_id: 1,
        answers: HashMap::new(),
        tasks: Vec::new(),
        held: Vec::new(),
        make_task: true,
    };
    let open = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "f", "version": "0" } } })
    .to_string()
        + "\n";
    h.e.handle_input(h.now, open.as_bytes());
    h.drain();
    let schema = serde_json::value::to_raw_value(&json!({ "type": "object" })).unwrap_or_default();
    for _ in 0..MAX_OPS {
        if b.is_empty() {
            break;
        }
        let op = b.u8();
        let modern = op & 0x80 == 0;
        let pick_task = |b: &mut Bytes<'_>, tasks: &[(String, bool, String)]| -> String {
            match b.below(tasks.len() + 2) {
                i if i < tasks.len() => tasks[i].0.clone(),
                i if i == tasks.len() => "AAAAAAAAAAAAAAAAAAAAAA".to_owned(),
                _ => b.text(24),
            }
        };
        match op & 0x0f {
            0 | 1 => {
                h.make_task = op & 0x10 == 0;
                let tool = b.pick(&["t", "r", "p"]);
                let mut params = json!({ "name": tool });
                if !modern && op & 0x20 == 0 {
                    params["task"] = json!({ "ttl": u64::from(b.u16()) });
                }
                h.send("tools/call", params, modern);
            }
            2 => {
                let id = pick_task(&mut b, &h.tasks);
                h.send("tasks/get", json!({ "taskId": id }), modern);
            }
            3 => {
                let id = pick_task(&mut b, &h.tasks);
                let mut responses = serde_json::Map::new();
                for _ in 0..b.below(4) {
                    let value = match b.below(4) {
                        0 => json!({ "action": "accept", "content": {} }),
                        1 => json!({ "action": "nope" }),
                        2 => json!(b.u8()),
                        _ => json!({ "ignored": true }),
                    };
                    responses.insert(b.pick(&KEYS).to_owned(), value);
                }
                h.send("tasks/update", json!({ "taskId": id, "inputResponses": responses }), modern);
            }
            4 => {
                let id = pick_task(&mut b, &h.tasks);
                h.send("tasks/cancel", json!({ "taskId": id }), modern);
            }
            5 => {
                let id = pick_task(&mut b, &h.tasks);
                h.send("tasks/result", json!({ "taskId": id }), false);
            }
            6..=9 if !h.held.is_empty() => {
                let t = h.held[b.below(h.held.len())];
                let done = match op & 0x0f {
                    6 => {
                        let content = [Content::text("done")];
                        let mut output = ToolOutput::new(&content);
                        output.is_error = op & 0x10 != 0;
                        h.e.answer_tool(t, &output).is_ok()
                    }
                    7 => h.e.answer_error(t, HostError::Internal("failed")).is_ok(),
                    8 => {
                        let n = 1 + b.below(KEYS.len());
                        let requests: Vec<InputRequest<'_>> =
                            KEYS[..n].iter().map(|k| InputRequest::elicit(k, "?", &schema)).collect();
                        // Parked for input: the host is handed the call again later.
                        h.e.answer_input_required(t, &InputRequired::new(&requests)).is_ok()
                    }
                    _ => {
                        let _ = h.e.task_status(t, Some("busy"));
                        false
                    }
                };
                if done {
                    h.held.retain(|x| *x != t);
                }
                h.drain();
            }
            _ => {
                h.now = h.now + Duration::from_millis(u64::from(b.u8()) * 250);
                h.e.handle_timeout(h.now);
                h.drain();
            }
        }
    }
    // Everything held ends: the host answers, then every TTL passes.
    for t in core::mem::take(&mut h.held) {
        let _ = h.e.answer_tool(t, &ToolOutput::new(&[Content::text("late")]));
    }
    h.drain();
    h.now = h.now + Duration::from_secs(3600);
    h.e.handle_timeout(h.now);
    h.drain();
    for (id, n) in &h.answers {
        assert_eq!(*n, 1, "request {id} was answered {n} times");
    }
    assert_eq!(h.e.tasks(), 0, "every task expired");
}
