//! Ticket slots: the work handed to the host and not yet answered, cancel routing.

use simd_json::{Node, StaticNode};

use crate::catalog::Catalog;
use crate::error::AnswerError;
use crate::jsonrpc::IdRef;
use crate::level::LogLevel;
use crate::mcp::mrtr::ClientCapabilities;
use std::collections::VecDeque;

use crate::error::{MAX_NOT_FOUND_URI_LEN, MAX_TICKET_ID_LEN, cut};
use crate::output::Route;
use crate::revision::Revision;
use crate::wire::json;
use crate::wire::trace::TraceParent;

/// A handle on work the engine asked the host to do. Answer it once: through the event
/// while it is held ([`CallTool::answer`](crate::event::CallTool::answer), ...), or later with [`Commands::answer_tool`](crate::Commands::answer_tool),
/// [`Commands::answer_resource`](crate::Commands::answer_resource), [`Commands::answer_prompt`](crate::Commands::answer_prompt) or [`Commands::answer_error`](crate::Commands::answer_error). Tickets are small `Copy` values and may be moved to any
/// thread or event loop.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ticket {
    pub(crate) slot: u16,
    /// A task's ticket: `slot` and `generation` are in the task table
    /// ([`tasks`](crate::mcp::tasks)), not the ticket table.
    pub(crate) task: bool,
    pub(crate) generation: u32,
}

impl core::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = if self.task { "TaskTicket" } else { "Ticket" };
        f.debug_struct(name).field("slot", &self.slot).field("generation", &self.generation).finish()
    }
}

impl Ticket {
    /// Whether this is a task's ticket ([`CallTool::start_task`](crate::event::CallTool::start_task)):
    /// it lives until the task ends, not with a request.
    pub fn is_task(&self) -> bool {
        self.task
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tool,
    Resource,
    Prompt,
    Completion,
}

#[derive(Clone, Copy)]
pub(crate) struct IdBuf {
    pub(crate) len: u8,
    pub(crate) bytes: [u8; MAX_TICKET_ID_LEN],
}

impl IdBuf {
    pub(crate) fn of(id: IdRef<'_>) -> Option<Self> {
        let mut bytes = [0u8; MAX_TICKET_ID_LEN];
        let mut cur = std::io::Cursor::new(&mut bytes[..]);
        let ok = match id {
            IdRef::Str(s) => serde_json::to_writer(&mut cur, s),
            IdRef::I(n) => serde_json::to_writer(&mut cur, &n),
            IdRef::U(n) => serde_json::to_writer(&mut cur, &n),
        };
        let len = cur.position() as usize;
        ok.ok()?;
        Some(Self { len: len as u8, bytes })
    }
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

#[derive(Clone, Copy)]
pub(crate) struct Busy {
    pub(crate) kind: Kind,
    pub(crate) revision: Revision,
    pub(crate) id: IdBuf,
    pub(crate) route: Route,
    /// The catalog index of the tool (tool calls only).
    pub(crate) target: u32,
    /// The request's `_meta.progressToken`, as JSON, and the last progress sent for it.
    pub(crate) progress: Option<IdBuf>,
    pub(crate) last_progress: Option<f64>,
    /// The lowest level the client wants logs at for this request, if any.
    pub(crate) log_level: Option<LogLevel>,
    /// The input kinds the client declared on this request (2026-07-28).
    pub(crate) caps: ClientCapabilities,
    /// The digest a `requestState` for this request is bound to (when a key is set).
    pub(crate) digest: [u8; 32],
    /// The session the request was made in (its serial; 0 outside a session): a
    /// cancellation by message is heeded from that session only.
    pub(crate) session: u64,
    /// That session's token (HTTP sessions): a task the call becomes without a principal
    /// is bound to the session.
    pub(crate) session_token: Option<[u8; 16]>,
    /// Its response cannot be a stream (an HTTP/1.0 request): nothing can be sent to the
    /// client before the answer.
    pub(crate) no_stream: bool,
    /// The principal the request acts for (HTTP, when the host named one).
    pub(crate) principal: Option<[u8; 32]>,
    /// The request's valid `_meta.traceparent` (kept for the event made again when the
    /// client's input comes back).
    pub(crate) trace: Option<TraceParent>,
    /// A tool call that may become a task (its arguments are kept in the task table).
    pub(crate) tasks: bool,
}

#[derive(Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) generation: u32,
    pub(crate) busy: Option<Busy>,
}

#[derive(Clone, Copy)]
pub(crate) enum PendingKind {
    Tool(usize),
    Resource(Option<usize>),
    Prompt(usize),
    /// A completion for a prompt (`Ok`) or a resource template (`Err`).
    Complete(Result<usize, usize>),
}

#[derive(Clone, Copy)]
pub(crate) struct Pending {
    pub(crate) kind: PendingKind,
    pub(crate) ticket: Ticket,
    pub(crate) revision: Revision,
    /// The request's first event (the host has never seen its ticket), not one coming
    /// back with its client's input.
    pub(crate) fresh: bool,
}

/// The request id a `notifications/cancelled` frame names (its `params` at `params`),
/// in its stored form.
pub(crate) fn cancelled_id(n: &[Node<'_>], params: Option<usize>) -> Option<IdBuf> {
    let p = params?;
    let ri = json::get(n, p, "requestId")?;
    let id = match n.get(ri)? {
        Node::String(s) => IdRef::Str(s),
        Node::Static(StaticNode::I64(v)) => IdRef::I(*v),
        Node::Static(StaticNode::U64(v)) => IdRef::U(*v),
        _ => return None,
    };
    IdBuf::of(id)
}

/// The ticket table: one slot per request the host may hold, the event waiting to be
/// polled, and the cancellations to report.
pub(crate) struct Tickets {
    pub(crate) slots: Vec<Slot>,
    pub(crate) in_flight: usize,
    pub(crate) pending: Option<Pending>,
    pub(crate) delivered: bool,
    pub(crate) cancels: VecDeque<Ticket>,
    /// Per slot: the uri of its `resources/read` (cut to [`MAX_NOT_FOUND_URI_LEN`]), for
    /// the `data.uri` of a "Resource not found" the host reports. Kept beside the slots so
    /// that copying a [`Busy`] stays cheap.
    pub(crate) uris: Vec<heapless::String<MAX_NOT_FOUND_URI_LEN>>,
}

impl Tickets {
    /// A table of `slots` free slots.
    pub(crate) fn new(slots: usize) -> Self {
        Self {
            slots: vec![Slot { generation: 0, busy: None }; slots],
            in_flight: 0,
            pending: None,
            delivered: false,
            cancels: VecDeque::with_capacity(slots),
            uris: vec![heapless::String::new(); slots],
        }
    }

    /// Keeps the definition (by name) of the tool calls and prompts in flight as the
    /// catalog `old` is replaced by `new`: for the output-schema check, and for a request
    /// that comes back after asking its session-bound client for input.
    pub(crate) fn retarget(&mut self, old: &Catalog, new: &Catalog) {
        for slot in &mut self.slots {
            let Some(b) = slot.busy.as_mut() else { continue };
            let found = match b.kind {
                Kind::Tool => {
                    let name = old.tools.get(b.target as usize).map(|t| t.tool.name.as_str());
                    name.and_then(|n| new.tool_index(n))
                }
                Kind::Prompt => {
                    let name = old.prompts.get(b.target as usize).map(|p| p.prompt.name.as_str());
                    name.and_then(|n| new.prompt_index(n))
                }
                Kind::Resource | Kind::Completion => continue,
            };
            b.target = found.map_or(u32::MAX, |i| i as u32);
        }
    }

    /// Cancels every ticket of `route` (see [`Self::cancel`]).
    pub(crate) fn cancel_route(&mut self, route: Route) {
        for slot in 0..self.slots.len() {
            if self.slots[slot].busy.is_some_and(|b| b.route == route) {
                self.cancel(slot);
            }
        }
    }

    /// Moves the tickets of `from` to `to`.
    pub(crate) fn reroute(&mut self, from: Route, to: Route) {
        for s in &mut self.slots {
            if let Some(b) = s.busy.as_mut().filter(|b| b.route == from) {
                b.route = to;
            }
        }
    }

    /// Tickets held by requests acting for `principal`.
    pub(crate) fn in_flight_for(&self, principal: &[u8; 32]) -> usize {
        self.slots.iter().filter(|s| s.busy.is_some_and(|b| b.principal.as_ref() == Some(principal))).count()
    }

    /// Whether a live ticket answers on `route`.
    pub(crate) fn has_route(&self, route: Route) -> bool {
        self.slots.iter().any(|s| s.busy.is_some_and(|b| b.route == route))
    }

    /// Whether the cancellation notification `n` names a request holding a ticket.
    pub(crate) fn cancel_is_live(&self, n: &[Node<'_>]) -> bool {
        let Some(id) = cancelled_id(n, json::get(n, 0, "params")) else { return false };
        self.slots.iter().any(|s| s.busy.is_some_and(|b| b.id.as_bytes() == id.as_bytes()))
    }

    /// Ends the request in `slot` without an answer. The host hears of it as a
    /// cancellation, unless it never saw the ticket (its first event was still waiting
    /// to be polled): then the event is withdrawn and nothing is said.
    pub(crate) fn cancel(&mut self, slot: usize) {
        let Some(s) = self.slots.get(slot).filter(|s| s.busy.is_some()) else { return };
        let ticket = Ticket { slot: slot as u16, generation: s.generation, task: false };
        self.free(slot);
        self.tell_cancelled(ticket);
    }

    /// Ends the request whose id is `id` (of session `of`, if it must be), as a
    /// `notifications/cancelled` asks (see [`Self::cancel`]).
    pub(crate) fn cancel_named(&mut self, id: &IdBuf, of: Option<u64>) {
        let found = self.slots.iter().position(|s| {
            s.busy.is_some_and(|b| b.id.as_bytes() == id.as_bytes() && of.is_none_or(|ser| b.session == ser))
        });
        if let Some(slot) = found {
            self.cancel(slot);
        }
    }

    /// Tells the host that `ticket` (freed already) is over: `Event::Cancelled`, unless
    /// the host never saw the ticket, whose waiting event is then withdrawn instead.
    pub(crate) fn tell_cancelled(&mut self, ticket: Ticket) {
        match self.pending {
            Some(p) if p.ticket == ticket && !self.delivered => {
                self.pending = None;
                if !p.fresh {
                    self.cancels.push_back(ticket);
                }
            }
            _ => self.cancels.push_back(ticket),
        }
    }

    pub(crate) fn free(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        if s.busy.take().is_some() {
            s.generation = s.generation.wrapping_add(1);
            self.in_flight -= 1;
        }
    }

    /// Keeps `uri` (its first [`MAX_NOT_FOUND_URI_LEN`] bytes) for the read of `slot`.
    pub(crate) fn keep_uri(&mut self, slot: usize, uri: &str) {
        if let Some(u) = self.uris.get_mut(slot) {
            u.clear();
            let _ = u.push_str(cut(uri, MAX_NOT_FOUND_URI_LEN));
        }
    }

    /// The uri kept for the read of `slot` (still there right after the slot is freed,
    /// until the slot is taken again).
    pub(crate) fn uri(&self, slot: usize) -> &str {
        self.uris.get(slot).map_or("", |u| u.as_str())
    }

    /// The route of a live ticket.
    pub(crate) fn route_of(&self, ticket: Ticket) -> Option<Route> {
        if ticket.task {
            return None;
        }
        let slot = self.slots.get(ticket.slot as usize)?;
        slot.busy.filter(|_| slot.generation == ticket.generation).map(|b| b.route)
    }

    /// Whether a live ticket of `route` holds request id `id`.
    pub(crate) fn id_in_flight(&self, id: &IdBuf, route: Route) -> bool {
        self.slots
            .iter()
            .any(|s| s.busy.as_ref().is_some_and(|b| b.route == route && b.id.as_bytes() == id.as_bytes()))
    }

    /// The live slot of `ticket`, without freeing it.
    pub(crate) fn peek(&self, ticket: Ticket, kind: Kind) -> Result<Busy, AnswerError> {
        if ticket.task {
            return Err(AnswerError::UnknownTicket);
        }
        let slot = self.slots.get(ticket.slot as usize).ok_or(AnswerError::UnknownTicket)?;
        match slot.busy {
            Some(b) if slot.generation == ticket.generation && b.kind == kind => Ok(b),
            Some(b) if slot.generation == ticket.generation && b.kind != kind => Err(AnswerError::WrongKind),
            _ => Err(AnswerError::UnknownTicket),
        }
    }

    /// Frees the slot of `ticket` if it is live and of kind `kind`.
    pub(crate) fn take(&mut self, ticket: Ticket, kind: Option<Kind>) -> Result<Busy, AnswerError> {
        if ticket.task {
            return Err(AnswerError::UnknownTicket);
        }
        let slot = self.slots.get(ticket.slot as usize).ok_or(AnswerError::UnknownTicket)?;
        let busy = match slot.busy {
            Some(b) if slot.generation == ticket.generation => b,
            _ => return Err(AnswerError::UnknownTicket),
        };
        if kind.is_some_and(|k| k != busy.kind) {
            return Err(AnswerError::WrongKind);
        }
        self.free(ticket.slot as usize);
        Ok(busy)
    }
}
