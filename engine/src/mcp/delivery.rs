//! The event handed to the host: a cancellation, else the pending request made an
//! [`Event`] (its ticket slot's id, route and trace context, the scratch buffers it reads,
//! the [`Answers`] it is answered through), a request or task coming back with its
//! client's input made pending again (the scratch buffers refilled), else a reply to what
//! the host asked a client outside any request; and the delivered event forgotten once its
//! borrow ends.
//!
//! [`Delivery`] borrows the parts an event reads and answers through (the core hands it
//! out in `Core::next_event`); it never sees `Core`.

use crate::catalog::Catalog;
use crate::config::Config;
#[cfg(feature = "connectome")]
use crate::connectome::Observed;
use crate::mcp::answered::AnswerLog;
use crate::mcp::answers::Answers;
use crate::mcp::asks::Asks;
use crate::mcp::event::{
    Arguments, CallTool, Complete, CompletionRef, Event, GetPrompt, ReadResource, RequestId, RequestInfo,
    TemplateVars,
};
use crate::mcp::inputs::Inputs;
use crate::mcp::mrtr::{self, ClientCapabilities, InputResponses};
use crate::mcp::prepared::Prepared;
use crate::mcp::scratch::Scratch;
use crate::mcp::tasks::Tasks;
use crate::mcp::tickets::{Kind, Pending, PendingKind, Tickets};
use crate::output::{Outbox, Route};
use crate::revision::Revision;
use crate::time::Clock;
use crate::wire::trace::TraceContext;

impl Scratch {
    /// Puts back what a request coming back to the host with its client's input reads:
    /// the input kinds, the responses (keys and values back to back, and their entries),
    /// the host's state, the arguments (or uri).
    fn refill(
        &mut self,
        caps: ClientCapabilities,
        responses: &[u8],
        entries: &[mrtr::Entry],
        state: Option<&[u8]>,
        args: &[u8],
    ) {
        self.round.reset();
        self.round.caps = caps;
        self.responses.clear();
        self.responses.extend_from_slice(responses);
        for e in entries {
            let _ = self.round.entries.push(e.clone());
        }
        if let Some(state) = state {
            self.state.clear();
            self.state.extend_from_slice(state);
            self.round.host_state = Some(0..state.len());
        }
        self.args.clear();
        self.args.extend_from_slice(args);
    }
}

/// What the next event is made of: the parts it reads and is answered through, and the
/// engine's clocks (`Core::next_event`).
pub(crate) struct Delivery<'a> {
    pub(crate) cfg: &'a Config,
    pub(crate) catalog: &'a Catalog,
    pub(crate) prepared: &'a Prepared,
    pub(crate) scratch: &'a mut Scratch,
    pub(crate) tickets: &'a mut Tickets,
    pub(crate) outbox: &'a mut Outbox,
    pub(crate) inputs: &'a mut Inputs,
    pub(crate) tasks: &'a mut Tasks,
    pub(crate) asks: &'a mut Asks,
    pub(crate) answered: &'a mut AnswerLog,
    /// The connectome's counts (a tool call reports what it read).
    #[cfg(feature = "connectome")]
    pub(crate) observed: &'a mut Observed,
    pub(crate) clock: Clock,
}

impl<'a> Delivery<'a> {
    /// The handle an answer goes through.
    fn answers(&mut self) -> Answers<'_> {
        Answers {
            tickets: self.tickets,
            outbox: self.outbox,
            inputs: self.inputs,
            tasks: self.tasks,
            prepared: self.prepared,
            catalog: self.catalog,
            resources_cache: self.cfg.resources_cache,
            clock: self.clock,
            log: self.answered,
        }
    }

    /// The next event: a cancellation, else the pending request (marked delivered).
    pub(crate) fn next(mut self) -> Option<Event<'a>> {
        if let Some(t) = self.tickets.cancels.pop_front() {
            return Some(Event::Cancelled(t));
        }
        if self.tickets.pending.is_none() {
            self.tickets.pending = self.resume();
        }
        if self.tickets.pending.is_none() {
            self.tickets.pending = self.resume_task();
        }
        let pending = self.tickets.pending;
        let clock = self.clock;
        #[cfg(feature = "connectome")]
        let Self {
            cfg,
            catalog,
            prepared,
            scratch,
            tickets,
            outbox,
            inputs,
            tasks,
            asks,
            answered,
            observed,
            ..
        } = self;
        #[cfg(not(feature = "connectome"))]
        let Self { cfg, catalog, prepared, scratch, tickets, outbox, inputs, tasks, asks, answered, .. } =
            self;
        let Some(p) = pending else {
            // A reply to what the host asked a client outside any request.
            return asks.next_reply().map(Event::ClientReply);
        };
        // The slot's id (only its bytes), route and `traceparent`: the slot stays where it
        // is (a task's, from its record).
        let (route, kept, id, offer) = match tasks.get(p.ticket) {
            Some(r) => (Route::Stdio, r.trace, r.request_id?, false),
            None => {
                let busy = tickets.slots.get(usize::from(p.ticket.slot)).and_then(|s| s.busy.as_ref())?;
                (busy.route, busy.trace, busy.id, busy.tasks)
            }
        };
        let len = usize::from(id.len);
        scratch.id.len = id.len;
        scratch.id.bytes[..len].copy_from_slice(&id.bytes[..len]);
        let scratch = &*scratch;
        let t = &scratch.trace;
        let trace = if p.fresh {
            TraceContext {
                parent: t.parent,
                tracestate: t.has_state.then_some(t.state.as_str()),
                baggage: t.has_baggage.then_some(t.baggage.as_str()),
            }
        } else {
            TraceContext { parent: kept, tracestate: None, baggage: None }
        };
        let request = |method| RequestInfo {
            method,
            id: RequestId { json: core::str::from_utf8(scratch.id.as_bytes()).unwrap_or("null") },
            trace,
            session_id: None,
            peer: None,
            client: None,
            route,
        };
        tickets.delivered = true;
        let responder = Answers {
            tickets,
            outbox,
            inputs,
            tasks,
            prepared,
            catalog,
            resources_cache: cfg.resources_cache,
            clock,
            log: answered,
        };
        let args = Arguments { raw: core::str::from_utf8(&scratch.args).unwrap_or("{}") };
        let input_responses = InputResponses { buf: &scratch.responses, entries: &scratch.round.entries };
        let request_state = scratch.round.host_state.clone().and_then(|r| scratch.state.get(r));
        let client = scratch.round.caps;
        Some(match p.kind {
            PendingKind::Tool(i) => Event::CallTool(CallTool {
                ticket: p.ticket,
                tool: &catalog.tools[i].tool,
                arguments: args,
                revision: p.revision,
                request: request("tools/call"),
                input_responses,
                request_state,
                client,
                #[cfg(feature = "connectome")]
                observed,
                can_start_task: offer,
                responder,
            }),
            PendingKind::Prompt(i) => Event::GetPrompt(GetPrompt {
                ticket: p.ticket,
                prompt: &catalog.prompts[i].prompt,
                arguments: args,
                revision: p.revision,
                request: request("prompts/get"),
                input_responses,
                request_state,
                client,
                responder,
            }),
            PendingKind::Complete(target) => Event::Complete(Complete {
                ticket: p.ticket,
                reference: match target {
                    Ok(i) => CompletionRef::Prompt(&catalog.prompts[i].prompt),
                    Err(i) => CompletionRef::Template(&catalog.templates[i].template),
                },
                argument: &scratch.completion.0,
                value: &scratch.completion.1,
                context: args,
                revision: p.revision,
                request: request("completion/complete"),
                responder,
            }),
            PendingKind::Resource(t) => {
                let entry = t.map(|t| &catalog.templates[t]);
                Event::ReadResource(ReadResource {
                    ticket: p.ticket,
                    uri: &scratch.uri,
                    template: entry.map(|e| &e.template),
                    variables: TemplateVars {
                        names: entry.map_or(&[][..], |e| e.parsed.var_names()),
                        captures: &scratch.captures,
                    },
                    revision: p.revision,
                    request: request("resources/read"),
                    input_responses,
                    request_state,
                    client,
                    responder,
                })
            }
        })
    }

    /// A request whose client answered every input request it was sent (or failed to),
    /// made the pending event again: what was kept for it goes back into the scratch
    /// buffers the event reads, with the responses and the host's state.
    fn resume(&mut self) -> Option<Pending> {
        let (ticket, cont) = self.inputs.next_resume(self.tickets)?;
        let busy = self.tickets.slots[ticket.slot as usize].busy?;
        let scratch = &mut self.scratch;
        let state = cont.has_state.then_some(&cont.state[..]);
        scratch.refill(busy.caps, &cont.responses, &cont.entries, state, &cont.args);
        let target = busy.target as usize;
        let kind = match busy.kind {
            Kind::Tool if target < self.catalog.tools.len() => PendingKind::Tool(target),
            Kind::Prompt if target < self.catalog.prompts.len() => PendingKind::Prompt(target),
            Kind::Tool | Kind::Prompt => {
                // A catalog replacement took its definition away meanwhile.
                let gone =
                    crate::error::HostError::Internal("the definition was removed while it waited for input");
                let _ = self.answers().answer_error(ticket, None, gone);
                return None;
            }
            Kind::Resource => {
                let uri = core::str::from_utf8(&cont.args).unwrap_or_default();
                // The catalog may have been replaced since: the uri is matched again.
                match self.catalog.resolve_uri(uri, &mut scratch.captures) {
                    Some(target) => {
                        scratch.uri.clear();
                        scratch.uri.push_str(uri);
                        PendingKind::Resource(target)
                    }
                    None => {
                        let _ = self.answers().answer_error(ticket, None, crate::error::HostError::NotFound);
                        return None;
                    }
                }
            }
            Kind::Completion => return None,
        };
        Some(Pending { kind, ticket, revision: busy.revision, fresh: false })
    }

    /// A task whose client answered every input request, made the pending event again
    /// (its call, with the answers and the host's state), as [`Self::resume`] does for
    /// a session-bound request.
    fn resume_task(&mut self) -> Option<Pending> {
        let ticket = self.tasks.next_resume()?;
        let r = self.tasks.get(ticket)?;
        let state = r.has_state.then_some(&r.state[..]);
        self.scratch.refill(r.caps, &r.responses, &r.entries, state, &r.args);
        let (tool, revision) = (r.tool as usize, r.revision.unwrap_or(Revision::V2026_07_28));
        if tool >= self.catalog.tools.len() {
            let gone =
                crate::error::HostError::Internal("the tool was removed while its task waited for input");
            let _ = self.answers().answer_error(ticket, None, gone);
            return None;
        }
        Some(Pending { kind: PendingKind::Tool(tool), ticket, revision, fresh: false })
    }
}
