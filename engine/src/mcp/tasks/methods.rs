//! The task methods of `2026-07-28` (`tasks/get`, `tasks/update`, `tasks/cancel`) and the
//! host's side of a task: starting one from a tool call, and its answers (result, error,
//! input required, status message) landing in the record instead of the outbox.

use simd_json::Node;

use crate::catalog::TaskSupport;
use crate::content::ToolOutput;
use crate::error::{AnswerError, HostError, PeerError, TaskRefusal, code};
use crate::jsonrpc::{Reply, Req, field};
use crate::mcp::Core;
use crate::mcp::answers::{Answers, result_end, result_start};
use crate::mcp::mrtr::{self, Entry, InputRequired};
use crate::mcp::tasks::write::{detail_members, task_members};
use crate::mcp::tasks::{Asked, MAX_TASK_KEYS, NewTask, Record, Status, key_digest};
use crate::mcp::tickets::{Kind, Ticket};
use crate::output::Route;
use crate::revision::Revision;
use crate::wire::json;

/// The extension's name, under `clientCapabilities.extensions` and
/// `capabilities.extensions`.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` key that ties a `2025-11-25` message to its task (as `legacy` writes it).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Whether the client capabilities at `caps` declare the tasks extension (an object
/// under `extensions`).
pub(crate) fn declares(n: &[Node<'_>], caps: Option<usize>) -> bool {
    caps.and_then(|c| json::get(n, c, "extensions"))
        .and_then(|e| json::get(n, e, EXTENSION))
        .is_some_and(|t| json::is_object(n, t))
}

/// How the host wants a task to start (see [`CallTool::start_task`](crate::CallTool::start_task)).
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskOptions<'a> {
    ttl: Option<core::time::Duration>,
    poll_interval: Option<core::time::Duration>,
    message: Option<&'a str>,
}

impl<'a> TaskOptions<'a> {
    /// The engine's defaults: [`Config::task_ttl`](crate::Config::task_ttl) and
    /// [`Config::task_poll_interval`](crate::Config::task_poll_interval), no message.
    pub fn new() -> Self {
        Self::default()
    }
    /// How long the task lives from now (`ttlMs`): at most `Config::task_ttl`, at least
    /// one millisecond.
    #[must_use]
    pub fn ttl(mut self, ttl: core::time::Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
    /// How often the client should poll (`pollIntervalMs`, at least one millisecond).
    #[must_use]
    pub fn poll_interval(mut self, interval: core::time::Duration) -> Self {
        self.poll_interval = Some(interval);
        self
    }
    /// The first `statusMessage`.
    #[must_use]
    pub fn message(mut self, message: &'a str) -> Self {
        self.message = Some(message);
        self
    }
}

fn millis(d: core::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl Core {
    /// The task a `tasks/*` request names, for its caller: the extension declared on this
    /// request (`-32021` before anything else), `params.taskId` a string, a task of the
    /// caller's (`-32602` otherwise, whether it never existed, expired, or is another
    /// principal's or, without a principal, another session's).
    pub(crate) fn task_of<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<Ticket, PeerError<'t>> {
        if rev.is_stateless() && !declares(req.n, req.meta.capabilities) {
            return Err(PeerError::TasksNotDeclared);
        }
        let id = req.str_at(req.param("taskId")).ok_or(PeerError::NotAString("taskId"))?;
        let session = self.task_session_key(rev);
        let ticket =
            self.tasks.find(id, self.principal.as_ref(), session.as_ref()).ok_or(PeerError::TaskNotFound)?;
        // A task lives on the wire it was made on.
        let same = |r: &Record| r.revision.is_some_and(|v| v.is_stateless() == rev.is_stateless());
        let found = self.tasks.get(ticket).filter(|r| same(r)).map(|_| ticket).ok_or(PeerError::TaskNotFound);
        if let (Ok(t), Some(st)) = (found, self.tasks.store.as_mut()) {
            st.touched = Some(t);
        }
        found
    }

    /// The key of the session a `rev` request without a principal is served in
    /// (`2025-11-25` over HTTP; see [`crate::mcp::tasks::session_key`]).
    pub(crate) fn task_session_key(&self, rev: Revision) -> Option<[u8; crate::mcp::tasks::SESSION_KEY_LEN]> {
        let bound = self.principal.is_none() && !rev.is_stateless();
        self.session.token.filter(|_| bound).map(|t| crate::mcp::tasks::session_key(&t))
    }

    /// The wall clock now (microseconds since the Unix epoch; the engine's time until the
    /// host sets the wall clock).
    pub(crate) fn wall_now(&self) -> u64 {
        self.clock().wall.unwrap_or(self.now)
    }

    /// `tasks/get`: the task as it is now (`DetailedTask`), `resultType: "complete"`.
    pub(crate) fn get_task<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let ticket = self.task_of(req, rev)?;
        let r = self.tasks.get(ticket).ok_or(PeerError::TaskNotFound)?;
        let out = &mut self.outbox.out;
        result_start(out, Reply::Id(req.id));
        task_members(out, r, !rev.is_stateless());
        if rev.is_stateless() {
            detail_members(out, r);
        }
        result_end(out, &self.prepared, rev, None);
        Ok(())
    }

    /// `tasks/update`: the client's answers to the task's outstanding input requests.
    /// Answers to keys not outstanding (never asked, answered already, of an earlier
    /// round) are ignored unread; an answer to an outstanding key must fit its request
    /// (`-32602`, nothing applied). Once every outstanding request is answered the task
    /// is `working` again and its call comes back to the host with the answers. The
    /// acknowledgement is empty.
    pub(crate) fn update_task<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let ticket = self.task_of(req, rev)?;
        let n = req.n;
        let responses = req.param("inputResponses");
        let Some(&Node::Object { len, .. }) = responses.and_then(|i| n.get(i)) else {
            return Err(PeerError::InputResponsesNotObject);
        };
        let ri = responses.unwrap_or_default();
        let wall = self.wall_now();
        let r = self.tasks.get_mut(ticket).ok_or(PeerError::TaskNotFound)?;
        if r.status() == Status::InputRequired {
            // Checked first, applied after: a refusal changes nothing.
            for pass in [false, true] {
                let mut i = ri + 1;
                for _ in 0..len {
                    let (k, v) = (json::str_at(n, i).unwrap_or_default(), i + 1);
                    i = v + 1 + json::children(n, v);
                    let Some(at) = outstanding(r, k) else { continue };
                    let kind = r.asked[at].kind;
                    if !pass {
                        if !(json::is_object(n, v) && mrtr::response_fits(n, v, kind)) {
                            return Err(PeerError::BadInputResponse { key: k, expected: kind.method() });
                        }
                        continue;
                    }
                    let ks = r.responses.len();
                    r.responses.extend_from_slice(k.as_bytes());
                    let vs = r.responses.len();
                    json::write_value(n, v, &mut r.responses);
                    let ve = r.responses.len();
                    let _ = r.entries.push(Entry { key: ks..vs, value: vs..ve, error: false });
                    r.asked[at].answered = true;
                    r.changes += 1;
                }
            }
            // A copy of another node's task (task store) runs nothing here: its owner
            // hears of the answers and resumes the call.
            if r.asked.iter().all(|a| a.answered) && r.move_to(Status::Working, wall) && r.held {
                self.tasks.resume_later(ticket);
            }
        }
        self.ack(req, rev);
        Ok(())
    }

    /// `tasks/cancel`: a task not yet finished is `cancelled` at once and its host told
    /// ([`Event::Cancelled`](crate::Event::Cancelled) with the task's ticket); a finished
    /// one is left as it is. Either way the acknowledgement is the same, empty.
    pub(crate) fn cancel_task<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let ticket = self.task_of(req, rev)?;
        let wall = self.wall_now();
        let r = self.tasks.get_mut(ticket).ok_or(PeerError::TaskNotFound)?;
        let held = r.held;
        let moved = r.move_to(Status::Cancelled, wall);
        if moved && held {
            self.tickets.tell_cancelled(ticket);
        }
        if rev.is_stateless() {
            self.ack(req, rev);
            return Ok(());
        }
        // 2025-11-25: a finished task cannot be cancelled; the answer is the task.
        if !moved {
            return Err(PeerError::TaskFinished(r.status().as_str()));
        }
        crate::mcp::tasks::legacy::changed(&mut self.outbox, r);
        let out = &mut self.outbox.out;
        result_start(out, Reply::Id(req.id));
        task_members(out, r, true);
        result_end(out, &self.prepared, rev, None);
        Ok(())
    }

    /// An empty result (`resultType: "complete"`).
    fn ack(&mut self, req: &Req<'_, '_>, rev: Revision) {
        let out = &mut self.outbox.out;
        result_start(out, Reply::Id(req.id));
        result_end(out, &self.prepared, rev, None);
    }

    /// Deletes the tasks past their TTL; the host is told of those it still works on.
    pub(crate) fn expire_tasks(&mut self) {
        let Self { tasks, tickets, now, outbox, .. } = self;
        tasks.expire(crate::time::Instant::from_micros(*now), |t, r| {
            if r.held {
                tickets.tell_cancelled(t);
            }
            crate::mcp::tasks::legacy::answer_waiters(outbox, r, Some("Task has expired"));
        });
    }

    /// Whether the tools/call being dispatched may become a task: tasks on, the tool not
    /// forbidden, the extension declared on this request. A task-only tool called without
    /// the extension is refused `-32021`.
    pub(crate) fn task_offer<'t>(
        &self,
        req: &Req<'_, 't>,
        rev: Revision,
        tool: usize,
        name: &'t str,
    ) -> Result<bool, PeerError<'t>> {
        let support = self.catalog.tools[tool].tool.task_support;
        if !self.prepared.features.tasks || rev == Revision::V2025_06_18 {
            return Ok(false);
        }
        if !rev.is_stateless() {
            // 2025-11-25: the client asks for a task with `params.task`.
            let asked = req.param("task").filter(|&t| json::is_object(req.n, t));
            return match (asked, support) {
                (Some(_), TaskSupport::Forbidden) => {
                    Err(PeerError::TaskAugmentation { tool: name, required: false })
                }
                (None, TaskSupport::Required) => {
                    Err(PeerError::TaskAugmentation { tool: name, required: true })
                }
                (asked, _) => Ok(asked.is_some()),
            };
        }
        if support == TaskSupport::Forbidden {
            return Ok(false);
        }
        let declared = declares(req.n, req.meta.capabilities);
        if !declared && support == TaskSupport::Required {
            return Err(PeerError::TaskToolNeedsTasks(name));
        }
        Ok(declared)
    }
}

/// The position in `r.asked` of the outstanding request under `key`.
fn outstanding(r: &Record, key: &str) -> Option<usize> {
    r.asked
        .iter()
        .position(|a| !a.answered && r.requests.get(a.key.clone()).is_some_and(|k| json_key_is(k, key)))
}

/// Whether `json` (a JSON string as the engine wrote it) is `key`.
fn json_key_is(json: &[u8], key: &str) -> bool {
    json.len() == key.len() + 2 && &json[1..json.len() - 1] == key.as_bytes()
}

impl Answers<'_> {
    /// Turns the live tool call `ticket` into a task: the request is answered now with
    /// the task's handle (`CreateTaskResult`), and the returned task ticket carries the
    /// work from here on.
    pub(crate) fn start_task(
        &mut self,
        ticket: Ticket,
        opts: &TaskOptions<'_>,
    ) -> Result<Ticket, AnswerError> {
        let busy = match self.tickets.peek(ticket, Kind::Tool) {
            Ok(b) => b,
            Err(AnswerError::WrongKind) => return Err(AnswerError::TaskRefused(TaskRefusal::NotACall)),
            Err(e) if ticket.task => {
                return Err(if self.tasks.get(ticket).is_some() {
                    AnswerError::TaskRefused(TaskRefusal::NotACall)
                } else {
                    e
                });
            }
            Err(e) => return Err(e),
        };
        let refuse = |why| Err(AnswerError::TaskRefused(why));
        if !self.prepared.features.tasks || !self.tasks.seeded() {
            return refuse(TaskRefusal::Off);
        }
        let support = self.catalog.tools.get(busy.target as usize).map(|t| t.tool.task_support);
        if support.is_none_or(|s| s == TaskSupport::Forbidden) {
            return refuse(TaskRefusal::Forbidden);
        }
        if !busy.tasks {
            return refuse(TaskRefusal::NotDeclared);
        }
        self.tasks.room(busy.principal.as_ref()).map_err(AnswerError::TaskRefused)?;
        let max_ttl = self.prepared.task_ttl_ms;
        let ttl_ms = opts.ttl.map_or(max_ttl, millis).min(max_ttl);
        let poll_ms = opts.poll_interval.map_or(self.prepared.task_poll_ms, millis);
        let args = self.tasks.kept_args(ticket.slot);
        // 2025-11-25 over HTTP without a principal: the task is the session's.
        let bound = busy.principal.is_none() && !busy.revision.is_stateless();
        let new = NewTask {
            principal: busy.principal,
            session_key: busy.session_token.filter(|_| bound).map(|t| crate::mcp::tasks::session_key(&t)),
            revision: busy.revision,
            tool: busy.target,
            args: &args,
            request_id: busy.id,
            trace: busy.trace,
            caps: busy.caps,
            route: busy.route,
            session: busy.session,
            ttl_ms,
            poll_ms,
            message: opts.message,
            // 2025-11-25: the progress token stays valid for the task's life (2026-07-28
            // tasks have no progress notifications).
            progress: busy.progress.filter(|_| !busy.revision.is_stateless()),
            last_progress: busy.last_progress,
        };
        let (now, wall) = (self.clock.mono, self.clock.wall.unwrap_or(self.clock.mono));
        let created = self.tasks.create(&new, now, wall);
        self.tasks.return_args(ticket.slot, args);
        let task = created.ok_or(AnswerError::TaskRefused(TaskRefusal::Full))?;
        let busy = self.tickets.take(ticket, Some(Kind::Tool))?;
        if let Some(st) = self.tasks.store.as_mut() {
            // Its handle is held until the store has the record.
            st.fresh.push((busy.route, task));
        }
        let out = &mut self.outbox.out;
        let mark = out.len();
        result_start(out, Reply::Stored(busy.id.as_bytes()));
        let legacy = !busy.revision.is_stateless();
        if legacy {
            // 2025-11-25: `{"task":{..}}`.
            out.extend_from_slice(b"\"task\":{");
        } else {
            out.extend_from_slice(b"\"resultType\":\"task\"");
        }
        if let Some(r) = self.tasks.get(task) {
            task_members(out, r, legacy);
        }
        if legacy {
            out.push(b'}');
        } else if !self.prepared.meta.is_empty() {
            out.push(b',');
            out.extend_from_slice(&self.prepared.meta);
        }
        out.extend_from_slice(b"}}\n");
        // The call's request is answered (with the task's handle).
        self.log.answered(ticket, None, false);
        self.outbox.routed(busy.route, mark);
        Ok(task)
    }

    /// Ends the task `ticket` with what `body` writes as its outcome (the members of a
    /// `CallToolResult`, or an error object) and `status`.
    fn finish_task(
        &mut self,
        ticket: Ticket,
        status: Status,
        error_outcome: bool,
        body: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
    ) -> Result<(), AnswerError> {
        let wall = self.clock.wall.unwrap_or(self.clock.mono);
        let r = self.tasks.held_mut(ticket).ok_or(AnswerError::UnknownTicket)?;
        r.outcome.clear();
        let (status, error_outcome) = match body(&mut r.outcome) {
            Ok(()) => (status, error_outcome),
            Err(e) => {
                r.outcome.clear();
                write_error_object(
                    &mut r.outcome,
                    code::INTERNAL_ERROR,
                    format_args!("Internal error: the result could not be serialized ({e})"),
                );
                (Status::Failed, true)
            }
        };
        // A frame must not hold line breaks; outside strings they can only be whitespace.
        for b in &mut r.outcome {
            if matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
        r.move_to(status, wall);
        r.error_outcome = error_outcome;
        crate::mcp::tasks::legacy::changed(self.outbox, r);
        Ok(())
    }

    /// The task's tool result: `completed`, the result inlined in `tasks/get`.
    pub(crate) fn answer_task_tool<S: serde::Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        output: &ToolOutput<'_, S>,
        conforms: bool,
    ) -> Result<(), AnswerError> {
        let revision = self.tasks.get(ticket).and_then(|r| r.revision).unwrap_or(Revision::V2026_07_28);
        // 2025-11-25: a tool error fails the task (its result is still what
        // `tasks/result` returns); 2026-07-28: the task completed.
        let status =
            if output.is_error && !revision.is_stateless() { Status::Failed } else { Status::Completed };
        self.finish_task(ticket, status, false, |out| {
            out.push(b'{');
            if conforms {
                crate::mcp::answers::write_tool_members(out, output)?;
            } else {
                out.extend_from_slice(crate::mcp::answers::MISMATCH_RESULT);
            }
            // The inlined result is the `CallToolResult` the call would have returned.
            if revision.is_stateless() {
                out.extend_from_slice(b",\"resultType\":\"complete\"");
            }
            out.push(b'}');
            Ok(())
        })
    }

    /// The task's error: `failed`, the error object inlined in `tasks/get`.
    pub(crate) fn answer_task_error(
        &mut self,
        ticket: Ticket,
        error: HostError<'_>,
    ) -> Result<(), AnswerError> {
        self.finish_task(ticket, Status::Failed, true, |out| {
            match error {
                HostError::NotFound => {
                    write_error_object(out, code::INVALID_PARAMS, format_args!("Not found"))
                }
                HostError::InvalidParams(m) => {
                    write_error_object(out, code::INVALID_PARAMS, format_args!("Invalid params: {m}"))
                }
                HostError::Internal(m) => {
                    write_error_object(out, code::INTERNAL_ERROR, format_args!("Internal error: {m}"))
                }
            }
            Ok(())
        })
    }

    /// The task needs input: `input_required`, the requests the client declared it can
    /// answer listed in `tasks/get` under the host's keys (which must be new in this
    /// task). When the client can answer none of them the task fails with `-32021`.
    pub(crate) fn answer_task_input(
        &mut self,
        ticket: Ticket,
        ir: &InputRequired<'_>,
    ) -> Result<(), AnswerError> {
        mrtr::check(ir, None, true)?;
        if ir.requests.is_empty() {
            return Err(AnswerError::InputRequiredUnsupported);
        }
        let wall = self.clock.wall.unwrap_or(self.clock.mono);
        let r = self.tasks.held_mut(ticket).ok_or(AnswerError::UnknownTicket)?;
        // 2025-11-25: the requests go to the client, on stdio or on a stream waiting
        // for the task's result.
        let legacy = r.revision.is_some_and(|v| !v.is_stateless());
        let to = match r.route {
            Some(Route::Stdio) => Some(Route::Stdio),
            _ => r.session_waiter(),
        };
        if legacy && to.is_none() {
            return Err(AnswerError::InvalidInputRequest(
                "a 2025-11-25 task asks for input on stdio, or while a tasks/result waits for it",
            ));
        }
        if r.status() != Status::Working {
            return Err(AnswerError::InvalidInputRequest("the task waits for input already"));
        }
        let mut sent = heapless::Vec::new();
        let missing = mrtr::sendable(ir, r.caps, &mut sent);
        if sent.is_empty() {
            r.outcome.clear();
            let out = &mut r.outcome;
            write_error_object_with(
                out,
                code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format_args!(
                    "Missing required client capability: the task needs input the client cannot give"
                ),
                |out| mrtr::write_required(out, missing),
            );
            r.move_to(Status::Failed, wall);
            return Ok(());
        }
        if sent.iter().any(|q| r.used_keys.contains(&key_digest(q.key().as_bytes()))) {
            return Err(AnswerError::InvalidInputRequest(
                "an input request key was used before in this task (keys are unique over a task's life)",
            ));
        }
        if r.used_keys.len() + sent.len() > MAX_TASK_KEYS {
            return Err(AnswerError::InvalidInputRequest(
                "a task asks for at most MAX_TASK_KEYS inputs in its life",
            ));
        }
        r.requests.clear();
        r.asked.clear();
        for q in &sent {
            let ks = r.requests.len();
            json::write_str(&mut r.requests, q.key());
            let bs = r.requests.len();
            r.requests.push(b'{');
            if q.write_members(&mut r.requests).is_err() {
                r.requests.clear();
                r.asked.clear();
                return Err(AnswerError::InvalidInputRequest("an input request could not be serialized"));
            }
            r.requests.push(b'}');
            let body = bs..r.requests.len();
            let id = if legacy { self.inputs.next_request_id() } else { 0 };
            let _ = r.asked.push(Asked { id, key: ks..bs, body, kind: q.kind(), answered: false });
        }
        for b in &mut r.requests {
            if matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
        r.used_keys.extend(sent.iter().map(|q| key_digest(q.key().as_bytes())));
        r.responses.clear();
        r.entries.clear();
        r.state.clear();
        r.has_state = ir.state.is_some();
        r.state.extend_from_slice(ir.state.unwrap_or_default());
        r.move_to(Status::InputRequired, wall);
        if let (true, Some(route)) = (legacy, to) {
            crate::mcp::tasks::legacy::ask(self.outbox, r, route);
            crate::mcp::tasks::legacy::changed(self.outbox, r);
        }
        Ok(())
    }

    /// A progress report on a task the host works on ([`Answers::notify_progress`] with a
    /// task ticket). `message` becomes the status message, under every revision, once
    /// `progress` and `total` are finite. A `2025-11-25` task also reports progress under
    /// the creating call's token (valid for the task's life): `notifications/progress`
    /// tagged with `_meta["io.modelcontextprotocol/related-task"]`, as every message
    /// related to a task is, on stdio, or over HTTP on the stream of a `tasks/result`
    /// the creating session has waiting (the request in flight it relates to), else on the creating
    /// session's standalone `GET` stream (dropped there when none is open). Refused
    /// `NoProgressToken` when that call carried none, `NotIncreasing` when `progress`
    /// does not increase (the status message is still set: the error says only why no
    /// notification went out). A `2026-07-28` task has no progress notifications.
    pub(crate) fn task_progress(
        &mut self,
        ticket: Ticket,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), crate::error::NotifyError> {
        use crate::error::NotifyError;
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return Err(NotifyError::NotFinite);
        }
        let wall = self.clock.wall.unwrap_or(self.clock.mono);
        let r = self.tasks.held_mut(ticket).ok_or(NotifyError::UnknownTicket)?;
        if message.is_some() {
            r.set_message(message, wall);
        }
        if r.revision.is_none_or(Revision::is_stateless) {
            return Ok(());
        }
        let Some(token) = r.progress else { return Err(NotifyError::NoProgressToken) };
        if r.last_progress.is_some_and(|last| progress <= last) {
            return Err(NotifyError::NotIncreasing);
        }
        r.last_progress = Some(progress);
        let waiter = r.session_waiter();
        let outbox = &mut *self.outbox;
        let (out, to) = match (r.route, waiter) {
            (Some(Route::Stdio), _) => (&mut outbox.out, Some(Route::Stdio)),
            (_, Some(route)) => (&mut outbox.out, Some(route)),
            // A copy of another node's task (no session here) has no host here either.
            (Some(_), None) if r.session != 0 => (&mut outbox.session_notes.bytes, None),
            _ => return Ok(()),
        };
        let start = out.len();
        out.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":",
        );
        out.extend_from_slice(token.as_bytes());
        out.extend_from_slice(b",\"progress\":");
        crate::mcp::answers::write_number(out, progress);
        if let Some(t) = total {
            out.extend_from_slice(b",\"total\":");
            crate::mcp::answers::write_number(out, t);
        }
        if let Some(m) = message {
            out.extend_from_slice(b",\"message\":");
            json::write_str(out, m);
        }
        out.extend_from_slice(b",\"_meta\":{\"");
        out.extend_from_slice(RELATED_TASK.as_bytes());
        out.extend_from_slice(b"\":{\"taskId\":");
        json::write_str(out, r.id_str());
        out.extend_from_slice(b"}}}}\n");
        match to {
            Some(route) => outbox.interim(route, start, false),
            None => {
                let end = outbox.session_notes.bytes.len();
                outbox.session_notes.ends.push((r.session, end));
            }
        }
        Ok(())
    }

    /// Sets the status message of a task the host works on.
    pub(crate) fn task_message(
        &mut self,
        ticket: Ticket,
        message: Option<&str>,
    ) -> Result<(), crate::error::NotifyError> {
        let wall = self.clock.wall.unwrap_or(self.clock.mono);
        let r = self.tasks.held_mut(ticket).ok_or(crate::error::NotifyError::UnknownTicket)?;
        r.set_message(message, wall);
        Ok(())
    }
}

/// Writes a JSON-RPC error object `{"code":..,"message":..}`.
fn write_error_object(out: &mut Vec<u8>, code: i32, message: core::fmt::Arguments<'_>) {
    write_error_object_with(out, code, message, |_| {});
}

/// Writes a JSON-RPC error object, with the `data` `data` writes (if it writes any).
fn write_error_object_with(
    out: &mut Vec<u8>,
    code: i32,
    message: core::fmt::Arguments<'_>,
    data: impl FnOnce(&mut Vec<u8>),
) {
    out.extend_from_slice(b"{\"code\":");
    let _ = serde_json::to_writer(&mut *out, &code);
    out.extend_from_slice(b",\"message\":");
    let _ = serde::Serializer::collect_str(&mut serde_json::Serializer::new(&mut *out), &message);
    let mark = out.len();
    field(out, "data");
    let at = out.len();
    data(out);
    if out.len() == at {
        out.truncate(mark);
    }
    out.push(b'}');
}
