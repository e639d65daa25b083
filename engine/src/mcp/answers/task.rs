//! The answers to task tickets: a tool call made a task (`start_task`), and the host's
//! answers to a task (result, error, input required, progress, status message) landing in
//! the task's record instead of the outbox. `Answers`' methods, beside the type; the task
//! table below them never sees `Answers`.

use crate::catalog::TaskSupport;
use crate::content::ToolOutput;
use crate::error::{AnswerError, HostError, TaskRefusal, code};
use crate::jsonrpc::{Reply, Req, field};
use crate::mcp::answers::Answers;
use crate::mcp::mrtr::{self, InputRequired};
use crate::mcp::tasks::legacy;
use crate::mcp::tasks::write::task_members;
use crate::mcp::tasks::{Asked, MAX_TASK_KEYS, NewTask, Status, TaskOptions, key_digest};
use crate::mcp::tickets::{Kind, Ticket};
use crate::mcp::write::{MISMATCH_RESULT, result_start, write_number, write_tool_members};
use crate::output::Route;
use crate::revision::Revision;
use crate::wire::json;

/// The `_meta` key that ties a `2025-11-25` message to its task (as `legacy` writes it).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

impl Answers<'_> {
    /// A `2025-11-25` `tools/call` with `params.task` (`{ttl?}`), handed over just now:
    /// the engine makes it a task at once (the client asked for one), so the request is
    /// answered with the task and the host's event carries the task's ticket. At a bound
    /// it stays a plain call.
    pub(crate) fn augment(&mut self, req: &Req<'_, '_>) {
        let Some(p) = self.tickets.pending else { return };
        let ttl =
            req.param("task").and_then(|t| json::get(req.n, t, "ttl")).and_then(|i| match req.n.get(i) {
                Some(simd_json::Node::Static(simd_json::StaticNode::U64(v))) => Some(*v),
                Some(simd_json::Node::Static(simd_json::StaticNode::I64(v))) => u64::try_from(*v).ok(),
                _ => None,
            });
        let mut options = TaskOptions::new();
        if let Some(ms) = ttl {
            options = options.ttl(core::time::Duration::from_millis(ms));
        }
        if let Ok(task) = self.start_task(p.ticket, &options)
            && let Some(p) = self.tickets.pending.as_mut()
        {
            p.ticket = task;
        }
    }

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
        legacy::changed(self.outbox, r);
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
                write_tool_members(out, output)?;
            } else {
                out.extend_from_slice(MISMATCH_RESULT);
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
            legacy::ask(self.outbox, r, route);
            legacy::changed(self.outbox, r);
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
        write_number(out, progress);
        if let Some(t) = total {
            out.extend_from_slice(b",\"total\":");
            write_number(out, t);
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

fn millis(d: core::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
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
