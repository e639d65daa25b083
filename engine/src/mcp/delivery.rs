//! The event handed to the host: a cancellation, else the pending request made an
//! [`Event`] (its ticket slot's id, route and trace context, the scratch buffers it reads,
//! the [`Answers`] it is answered through), a request or task coming back with its
//! client's input made pending again (the scratch buffers refilled), else a reply to what
//! the host asked a client outside any request; and the delivered event forgotten once its
//! borrow ends.
//!
//! `impl Core` only: nothing imports this module (the dispatcher and the transports call
//! its methods on `Core`), so it adds no edge back to `mcp`.

use crate::mcp::answers::Answers;
use crate::mcp::event::{
    Arguments, CallTool, Complete, CompletionRef, Event, GetPrompt, ReadResource, RequestId, RequestInfo,
    TemplateVars,
};
use crate::mcp::mrtr::{self, ClientCapabilities, InputResponses};
use crate::mcp::tickets::{Kind, Pending, PendingKind};
use crate::mcp::{Core, Scratch};
use crate::output::Route;
use crate::revision::Revision;
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

impl Core {
    /// Forgets the delivered event (its borrow has ended).
    pub(crate) fn release(&mut self) {
        self.asks.release();
        if self.tickets.delivered {
            self.tickets.delivered = false;
            self.tickets.pending = None;
        }
    }

    /// The next event: a cancellation, else the pending request (marked delivered).
    pub(crate) fn next_event(&mut self) -> Option<Event<'_>> {
        if let Some(t) = self.tickets.cancels.pop_front() {
            return Some(Event::Cancelled(t));
        }
        if self.tickets.pending.is_none() {
            self.tickets.pending = self.resume();
        }
        if self.tickets.pending.is_none() {
            self.tickets.pending = self.resume_task();
        }
        if self.tickets.pending.is_none() {
            // A reply to what the host asked a client outside any request.
            return self.asks.next_reply().map(Event::ClientReply);
        }
        let p = self.tickets.pending?;
        let clock = self.clock();
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
            answered,
            connectome,
            ..
        } = self;
        #[cfg(not(feature = "connectome"))]
        let Self { cfg, catalog, prepared, scratch, tickets, outbox, inputs, tasks, answered, .. } = self;
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
                observed: &mut connectome.observed,
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
        let (ticket, cont) = self.inputs.next_resume(&self.tickets)?;
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
