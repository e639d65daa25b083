//! What answers become on the wire.

use serde::Serialize;

use crate::catalog::Catalog;
use crate::config::CachePolicy;
use crate::content::{self, PromptMessage, PromptOutput, ResourceContents, ToolOutput};
use crate::error::{AnswerError, HostError, NotifyError, code};
use crate::jsonrpc::{Reply, field, write_error};
use crate::level::LogLevel;
use crate::mcp::answered::AnswerLog;
use crate::mcp::inputs::Inputs;
use crate::mcp::mrtr::{self, InputRequired, Method};
use crate::mcp::prepared::Prepared;
use crate::mcp::tasks::Tasks;
use crate::mcp::tickets::Tickets;
use crate::mcp::tickets::{Busy, Kind, Ticket};
use crate::mcp::write::{MISMATCH_RESULT, result_end, result_start, write_number, write_tool_members};
use crate::output::Outbox;
use crate::output::{Route, Routed};
use crate::revision::Revision;
use crate::time::Clock;
use crate::wire::json;

mod task;

/// Whether `structuredContent` conforms to the tool's output schema (and, before
/// 2026-07-28, is an object as those revisions require).
pub(crate) fn structured_conforms<S: Serialize + ?Sized>(
    validator: &jsonschema::Validator,
    structured: Option<&S>,
    revision: Revision,
) -> bool {
    let Some(s) = structured else { return false };
    let Ok(value) = serde_json::to_value(s) else { return false };
    (revision.is_stateless() || value.is_object()) && validator.is_valid(&value)
}

/// The one place answers and notifications for tickets are written: a short-lived handle
/// on the ticket table and the outbox ([`Core::answers`](crate::mcp::Core::answers)), used
/// by both engines and by the events the host answers through.
pub(crate) struct Answers<'a> {
    pub(crate) tickets: &'a mut Tickets,
    pub(crate) outbox: &'a mut Outbox,
    pub(crate) inputs: &'a mut Inputs,
    pub(crate) tasks: &'a mut Tasks,
    pub(crate) prepared: &'a Prepared,
    pub(crate) catalog: &'a Catalog,
    pub(crate) resources_cache: CachePolicy,
    /// The engine's clocks at its latest time (`requestState` expiry).
    pub(crate) clock: Clock,
    /// Where each answer is recorded for an adapter that asked (`served`).
    pub(crate) log: &'a mut AnswerLog,
}

impl Answers<'_> {
    /// Writes `notifications/progress` for a live ticket whose request carried a
    /// progress token.
    pub(crate) fn notify_progress(
        &mut self,
        ticket: Ticket,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), NotifyError> {
        if ticket.task {
            // The status message, and under 2025-11-25 progress under the creating
            // call's token (`Answers::task_progress`).
            return self.task_progress(ticket, progress, total, message);
        }
        let slot = self.tickets.slots.get_mut(ticket.slot as usize).ok_or(NotifyError::UnknownTicket)?;
        let busy = match &mut slot.busy {
            Some(b) if slot.generation == ticket.generation => b,
            _ => return Err(NotifyError::UnknownTicket),
        };
        let Some(token) = busy.progress else { return Err(NotifyError::NoProgressToken) };
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return Err(NotifyError::NotFinite);
        }
        if busy.last_progress.is_some_and(|last| progress <= last) {
            return Err(NotifyError::NotIncreasing);
        }
        busy.last_progress = Some(progress);
        let route = busy.route;
        let out = &mut self.outbox.out;
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
        out.extend_from_slice(b"}}\n");
        self.outbox.interim(route, start, false);
        Ok(())
    }

    /// Writes `notifications/message` for a live ticket whose client asked for logs at
    /// `level` or below.
    pub(crate) fn notify_log<S: Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        level: LogLevel,
        logger: Option<&str>,
        data: &S,
    ) -> Result<(), NotifyError> {
        if ticket.task {
            // A task has no stream to log on.
            return Err(self
                .tasks
                .held_mut(ticket)
                .map_or(NotifyError::UnknownTicket, |_| NotifyError::Filtered));
        }
        let slot = self.tickets.slots.get(ticket.slot as usize).ok_or(NotifyError::UnknownTicket)?;
        let busy = match slot.busy {
            Some(b) if slot.generation == ticket.generation => b,
            _ => return Err(NotifyError::UnknownTicket),
        };
        if busy.log_level.is_none_or(|wanted| level < wanted) {
            return Err(NotifyError::Filtered);
        }
        let out = &mut self.outbox.out;
        let start = out.len();
        out.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":",
        );
        json::write_str(out, level.as_str());
        if let Some(l) = logger {
            out.extend_from_slice(b",\"logger\":");
            json::write_str(out, l);
        }
        out.extend_from_slice(b",\"data\":");
        if serde_json::to_writer(&mut *out, data).is_err() {
            out.truncate(start);
            return Err(NotifyError::NotFinite);
        }
        for b in &mut out[start..] {
            if matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
        out.extend_from_slice(b"}}\n");
        self.outbox.interim(busy.route, start, false);
        Ok(())
    }

    /// Asks the client to reconnect to `ticket`'s stream after `retry`: over a
    /// session-bound HTTP stream the response ends with an SSE `retry:` field while the
    /// request goes on, and the client resumes it with `GET` and `Last-Event-ID` (its
    /// events meanwhile are kept). Returns whether that happens (elsewhere: nothing to do).
    pub(crate) fn reconnect_later(
        &mut self,
        ticket: Ticket,
        retry: core::time::Duration,
    ) -> Result<bool, NotifyError> {
        if ticket.task {
            // A task has no connection to let go of.
            return self.tasks.held_mut(ticket).map(|_| false).ok_or(NotifyError::UnknownTicket);
        }
        let slot = self.tickets.slots.get(ticket.slot as usize).ok_or(NotifyError::UnknownTicket)?;
        let busy = match slot.busy {
            Some(b) if slot.generation == ticket.generation => b,
            _ => return Err(NotifyError::UnknownTicket),
        };
        if busy.revision.is_stateless() || busy.no_stream || !matches!(busy.route, Route::Http { .. }) {
            return Ok(false);
        }
        let at = self.outbox.out.len();
        let retry_ms = u32::try_from(retry.as_millis()).unwrap_or(u32::MAX).max(1);
        let route = busy.route;
        self.outbox.routed.push(Routed {
            route,
            start: at,
            end: at,
            interim: true,
            status: 0,
            sub: false,
            retry_ms,
        });
        Ok(true)
    }

    /// Answers a completion: at most 100 values, duplicates dropped (the first kept, in the
    /// host's order), `total` and `hasMore` kept truthful.
    pub(crate) fn answer_completion(
        &mut self,
        ticket: Ticket,
        values: &[&str],
        total: Option<u64>,
        has_more: bool,
    ) -> Result<(), AnswerError> {
        self.answer(ticket, Kind::Completion, |out, _| {
            const MAX: usize = 100;
            let mut kept: heapless::Vec<&str, MAX> = heapless::Vec::new();
            let mut unique = 0u64;
            let mut dropped = false;
            for (i, v) in values.iter().enumerate() {
                if values[..i].contains(v) {
                    continue; // a duplicate (quadratic, so bounded below)
                }
                unique += 1;
                if kept.push(v).is_err() {
                    dropped = true;
                }
                if i >= 10_000 {
                    dropped = true;
                    break;
                }
            }
            field(out, "completion");
            out.extend_from_slice(b"{\"values\":");
            serde_json::to_writer(&mut *out, &kept[..])?;
            let total = total.map_or(unique, |t| t.max(unique));
            out.extend_from_slice(b",\"total\":");
            json::write_u64(out, total);
            out.extend_from_slice(b",\"hasMore\":");
            out.extend_from_slice(if has_more || dropped || total > kept.len() as u64 {
                b"true"
            } else {
                b"false"
            });
            out.push(b'}');
            Ok(None)
        })
    }

    pub(crate) fn answer(
        &mut self,
        ticket: Ticket,
        kind: Kind,
        body: impl FnOnce(&mut Vec<u8>, Revision) -> Result<Option<CachePolicy>, serde_json::Error>,
    ) -> Result<(), AnswerError> {
        self.answer_as(ticket, kind, false, body)
    }

    /// [`Self::answer`], recorded as a tool result with `isError: true` when `tool_error`.
    fn answer_as(
        &mut self,
        ticket: Ticket,
        kind: Kind,
        tool_error: bool,
        body: impl FnOnce(&mut Vec<u8>, Revision) -> Result<Option<CachePolicy>, serde_json::Error>,
    ) -> Result<(), AnswerError> {
        if ticket.task {
            // A task is a tool call: it takes a tool result, an error or input.
            return Err(self
                .tasks
                .held_mut(ticket)
                .map_or(AnswerError::UnknownTicket, |_| AnswerError::WrongKind));
        }
        let busy = self.tickets.take(ticket, Some(kind))?;
        let out = &mut self.outbox.out;
        let mark = out.len();
        result_start(out, Reply::Stored(busy.id.as_bytes()));
        let body_start = out.len();
        match body(out, busy.revision) {
            Ok(cache) => {
                // Host-serialized values (a `RawValue`, say) may hold line breaks as JSON
                // whitespace; a frame must not. Outside strings they can only be whitespace.
                let mut at = body_start;
                while let Some(p) = memchr::memchr2(b'\n', b'\r', &out[at..]) {
                    out[at + p] = b' ';
                    at += p + 1;
                }
                result_end(out, &self.prepared.meta, busy.revision, cache);
                self.log.answered(ticket, None, tool_error);
            }
            Err(e) => {
                out.truncate(mark);
                write_error(
                    out,
                    Reply::Stored(busy.id.as_bytes()),
                    code::INTERNAL_ERROR,
                    format_args!("Internal error: the result could not be serialized ({e})"),
                    |_| {},
                );
                self.log.answered(ticket, Some(code::INTERNAL_ERROR), false);
            }
        }
        self.outbox.routed(busy.route, mark);
        Ok(())
    }

    /// Answers `ticket`'s request with "Request timed out" (`-32001`): the host took too
    /// long. The slot is freed; telling the host is the caller's.
    pub(crate) fn answer_timeout(&mut self, ticket: Ticket) -> Result<(), AnswerError> {
        let busy = self.tickets.take(ticket, None)?;
        let mark = self.outbox.out.len();
        let reply = Reply::Stored(busy.id.as_bytes());
        write_error(
            &mut self.outbox.out,
            reply,
            code::REQUEST_TIMEOUT,
            format_args!("Request timed out"),
            |_| {},
        );
        self.log.answered(ticket, Some(code::REQUEST_TIMEOUT), false);
        self.outbox.routed(busy.route, mark);
        Ok(())
    }

    pub(crate) fn answer_error(
        &mut self,
        ticket: Ticket,
        kind: Option<Kind>,
        error: HostError<'_>,
    ) -> Result<(), AnswerError> {
        if ticket.task {
            if kind.is_some_and(|k| k != Kind::Tool) {
                return Err(AnswerError::WrongKind);
            }
            return self.answer_task_error(ticket, error);
        }
        let busy = self.tickets.take(ticket, kind)?;
        let reply = Reply::Stored(busy.id.as_bytes());
        let out = &mut self.outbox.out;
        let mark = out.len();
        let logged = match error {
            HostError::NotFound if busy.kind == Kind::Resource && !busy.revision.is_stateless() => {
                code::RESOURCE_NOT_FOUND
            }
            HostError::NotFound | HostError::InvalidParams(_) => code::INVALID_PARAMS,
            HostError::Internal(_) => code::INTERNAL_ERROR,
        };
        self.log.answered(ticket, Some(logged), false);
        match error {
            HostError::NotFound if busy.kind == Kind::Resource => {
                let code = if busy.revision.is_stateless() {
                    code::INVALID_PARAMS
                } else {
                    code::RESOURCE_NOT_FOUND
                };
                // The uri the slot kept for this read (the slot was freed just now).
                let uri = self.tickets.uri(ticket.slot as usize);
                write_error(out, reply, code, format_args!("Resource not found"), |out| {
                    out.extend_from_slice(b"{\"uri\":");
                    json::write_str(out, uri);
                    out.push(b'}');
                });
            }
            HostError::NotFound => {
                write_error(out, reply, code::INVALID_PARAMS, format_args!("Not found"), |_| {})
            }
            HostError::InvalidParams(msg) => {
                write_error(out, reply, code::INVALID_PARAMS, format_args!("Invalid params: {msg}"), |_| {})
            }
            HostError::Internal(msg) => {
                write_error(out, reply, code::INTERNAL_ERROR, format_args!("Internal error: {msg}"), |_| {})
            }
        }
        self.outbox.routed(busy.route, mark);
        Ok(())
    }

    pub(crate) fn answer_tool<S: Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        output: &ToolOutput<'_, S>,
    ) -> Result<(), AnswerError> {
        let (target, revision) = match self.tasks.get(ticket).filter(|r| r.held) {
            Some(r) => (r.tool, r.revision.unwrap_or(Revision::V2026_07_28)),
            None => {
                let busy = self.tickets.peek(ticket, Kind::Tool)?;
                (busy.target, busy.revision)
            }
        };
        let declared = self.catalog.tools.get(target as usize).and_then(|t| t.output_validator.as_ref());
        if let Some(validator) = declared
            && !structured_conforms(validator, output.structured_content, revision)
        {
            // For the host's log: the validator's first error (the error path only).
            let (path, message) = match output.structured_content.map(serde_json::to_value) {
                None => {
                    (String::new(), "no structuredContent, and the tool declares an output schema".to_owned())
                }
                Some(Err(e)) => (String::new(), format!("structuredContent does not serialize: {e}")),
                Some(Ok(v)) => match validator.iter_errors(&v).next() {
                    Some(e) => (e.instance_path().to_string(), e.to_string()),
                    None => {
                        (String::new(), "structuredContent must be an object before 2026-07-28".to_owned())
                    }
                },
            };
            let tool = self.catalog.tools[target as usize].tool.name.to_string();
            self.outbox.mismatch = Some(crate::error::OutputMismatch { tool, path, message });
            // A host bug must not become invalid output: the model sees a failed call.
            if ticket.task {
                return self.answer_task_tool(ticket, output, false);
            }
            return self.answer_as(ticket, Kind::Tool, true, |out, _| {
                out.extend_from_slice(MISMATCH_RESULT);
                Ok(None)
            });
        }
        if ticket.task {
            return self.answer_task_tool(ticket, output, true);
        }
        self.answer_as(ticket, Kind::Tool, output.is_error, |out, _| {
            write_tool_members(out, output)?;
            Ok(None)
        })
    }

    /// Answers a tool call, prompt or resource read with `resultType: "input_required"`:
    /// the requests the client declared it can answer, and a sealed `requestState` when a
    /// key is set. When the client can answer none of the requests, the answer is `-32021`
    /// with `data.requiredCapabilities`. Refused (nothing written, ticket kept) for other
    /// work, earlier revisions and malformed answers.
    pub(crate) fn answer_input_required(
        &mut self,
        ticket: Ticket,
        ir: &InputRequired<'_>,
    ) -> Result<(), AnswerError> {
        if ticket.task {
            return self.answer_task_input(ticket, ir);
        }
        let slot = self.tickets.slots.get(ticket.slot as usize).ok_or(AnswerError::UnknownTicket)?;
        let busy = match slot.busy {
            Some(b) if slot.generation == ticket.generation => b,
            _ => return Err(AnswerError::UnknownTicket),
        };
        let method = match busy.kind {
            Kind::Tool => Method::CallTool,
            Kind::Prompt => Method::GetPrompt,
            Kind::Resource => Method::ReadResource,
            Kind::Completion => return Err(AnswerError::WrongKind),
        };
        if !busy.revision.is_stateless() {
            return self.ask_session(ticket, busy, ir);
        }
        mrtr::check(ir, self.prepared.state_key.as_ref(), false)?;
        let busy = self.tickets.take(ticket, None)?;
        let reply = Reply::Stored(busy.id.as_bytes());
        let out = &mut self.outbox.out;
        let mark = out.len();
        result_start(out, reply);
        out.extend_from_slice(b"\"resultType\":\"input_required\"");
        let mut sent = heapless::Vec::new();
        let missing = match mrtr::write_requests(out, ir, busy.caps, &mut sent) {
            Ok(d) => d,
            Err(e) => {
                out.truncate(mark);
                write_error(
                    out,
                    reply,
                    code::INTERNAL_ERROR,
                    format_args!("Internal error: the input requests could not be serialized ({e})"),
                    |_| {},
                );
                self.log.answered(ticket, Some(code::INTERNAL_ERROR), false);
                self.outbox.routed(busy.route, mark);
                return Ok(());
            }
        };
        if sent.is_empty() && !ir.requests.is_empty() {
            // The work cannot go on: the client can answer none of what it needs.
            out.truncate(mark);
            write_error(
                out,
                reply,
                code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format_args!(
                    "Missing required client capability: the request needs input the client cannot give"
                ),
                |out| mrtr::write_required(out, missing),
            );
            self.log.answered(ticket, Some(code::MISSING_REQUIRED_CLIENT_CAPABILITY), false);
            self.outbox.routed_with(busy.route, mark, 400);
            return Ok(());
        }
        if let Some(key) = &self.prepared.state_key {
            out.extend_from_slice(b",\"requestState\":");
            let expiry = self.clock.expiry(self.prepared.state_life);
            mrtr::seal(out, key, expiry, method, &busy.digest, &sent, ir.state.unwrap_or_default());
        }
        if !self.prepared.meta.is_empty() {
            out.push(b',');
            out.extend_from_slice(&self.prepared.meta);
        }
        out.extend_from_slice(b"}}\n");
        for b in &mut out[mark..] {
            if matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
        let end = out.len();
        out[end - 1] = b'\n';
        self.log.answered(ticket, None, false);
        self.outbox.routed(busy.route, mark);
        Ok(())
    }

    /// [`Self::answer_input_required`] for a session-bound request: the requests the
    /// client declared it can answer go out as server-to-client requests on the
    /// request's stream and the ticket stays busy until the request comes back to the
    /// host (see [`inputs`](crate::mcp::inputs)). When the client can answer none, the
    /// request is answered `-32021` as under `2026-07-28`.
    fn ask_session(&mut self, ticket: Ticket, busy: Busy, ir: &InputRequired<'_>) -> Result<(), AnswerError> {
        if ir.requests.is_empty() {
            // Nobody retries a session-bound request: there is nothing to wait for.
            return Err(AnswerError::InputRequiredUnsupported);
        }
        if self.inputs.closed() {
            return Err(AnswerError::ClientGone);
        }
        mrtr::check(ir, self.prepared.state_key.as_ref(), true)?;
        let mut sent = heapless::Vec::new();
        // A response that cannot stream cannot carry a request before the answer.
        let caps = if busy.no_stream { mrtr::ClientCapabilities::NONE } else { busy.caps };
        let missing = mrtr::sendable(ir, caps, &mut sent);
        if sent.is_empty() || !self.inputs.kept(self.tickets, ticket) {
            let busy = self.tickets.take(ticket, None)?;
            let out = &mut self.outbox.out;
            let mark = out.len();
            write_error(
                out,
                Reply::Stored(busy.id.as_bytes()),
                code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format_args!(
                    "Missing required client capability: the request needs input the client cannot give"
                ),
                |out| mrtr::write_required(out, missing),
            );
            self.log.answered(ticket, Some(code::MISSING_REQUIRED_CLIENT_CAPABILITY), false);
            self.outbox.routed(busy.route, mark);
            return Ok(());
        }
        let now = self.clock.mono;
        match self.inputs.ask(self.outbox, ticket, busy.route, &sent, ir.state, now) {
            Ok(_) => Ok(()),
            Err(_) => Err(AnswerError::InvalidInputRequest("an input request could not be serialized")),
        }
    }

    pub(crate) fn answer_resource(
        &mut self,
        ticket: Ticket,
        contents: &[ResourceContents<'_>],
    ) -> Result<(), AnswerError> {
        if contents.is_empty() {
            return self.answer_error(ticket, Some(Kind::Resource), HostError::NotFound);
        }
        let cache = self.resources_cache;
        self.answer(ticket, Kind::Resource, |out, _| {
            field(out, "contents");
            content::write_array(out, contents, ResourceContents::write_json);
            Ok(Some(cache))
        })
    }

    pub(crate) fn answer_prompt(
        &mut self,
        ticket: Ticket,
        output: &PromptOutput<'_>,
    ) -> Result<(), AnswerError> {
        self.answer(ticket, Kind::Prompt, |out, _| {
            if let Some(d) = output.description {
                field(out, "description");
                json::write_str(out, d);
            }
            field(out, "messages");
            content::write_array(out, output.messages, PromptMessage::write_json);
            Ok(None)
        })
    }
}
