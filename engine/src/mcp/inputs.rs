//! Input asked of a session-bound client (`2025-11-25`, `2025-06-18`) as server-to-client
//! requests.
//!
//! The host asks for input the same way under every revision: it answers a ticket with
//! [`InputRequired`]. Under `2026-07-28` the engine writes an `input_required` result and
//! the client retries (`mrtr`). Under a session-bound revision there is no retry: the
//! engine sends each input request the client declared it can answer (in `initialize`)
//! as a JSON-RPC request on the request's own stream (the stdio output, or the SSE
//! response of the HTTP `POST`), keeps the ticket, collects the client's responses, and
//! then hands the request back to the host as the same event again
//! ([`Event::CallTool`](crate::Event::CallTool), ...), with the responses under their keys
//! and the host's state, exactly as a `2026-07-28` retry brings them. The host may ask
//! again (more rounds) or answer.
//!
//! A client error response, a response that does not fit its request, no response within
//! [`Config::input_timeout`](crate::Config::input_timeout), or the end of the stream or of
//! the session reach the host as errors under their keys
//! ([`InputResponses::error`](crate::mrtr::InputResponses::error)): the request always comes
//! back, so no host waits forever.
//!
//! What is kept, per ticket slot, so the request can come back after its frame is gone:
//! its arguments (or uri), the host's state, the responses. The buffers are reused from
//! one request to the next (they grow to the largest request seen in a slot, at most the
//! frame limit), so the steady state allocates nothing.

use std::collections::VecDeque;

use simd_json::{Node, StaticNode};

use crate::mcp::mrtr::{self, Entry, InputKind, MAX_INPUT_KEY_LEN, MAX_INPUT_REQUESTS};
use crate::mcp::tickets::{Ticket, Tickets};
use crate::output::{Outbox, Route};
use crate::wire::json;

/// The error a request gets when the client did not answer in time (the code the
/// official SDKs use for a request timeout).
pub(crate) const TIMED_OUT: &[u8] =
    br#"{"code":-32001,"message":"Request timed out: the client did not answer in time"}"#;
/// The error a request gets when its stream or session ended before the client answered.
pub(crate) const GONE: &[u8] =
    br#"{"code":-32000,"message":"Connection closed: the client went away before answering"}"#;

/// A client's response as the dispatcher decoded it: the tape, the index of its id, and
/// `Ok(result)` or `Err(error)` at theirs.
#[derive(Clone, Copy)]
pub(crate) struct Response<'a, 'n> {
    pub(crate) n: &'a [Node<'n>],
    pub(crate) id: usize,
    pub(crate) outcome: Result<usize, usize>,
}

/// The JSON-RPC id of a client's response (at tape index `id`) as the engine numbers its
/// requests: a non-negative integer (anything else answers nothing the engine sent).
pub(crate) fn response_id(n: &[Node<'_>], id: usize) -> Option<u64> {
    match n.get(id) {
        Some(Node::Static(StaticNode::U64(v))) => Some(*v),
        Some(Node::Static(StaticNode::I64(v))) => u64::try_from(*v).ok(),
        _ => None,
    }
}

/// Writes `{"jsonrpc":"2.0","id":<id>,"method":..,"params":..}` and a line break: a
/// request the engine sends its client. Host-serialized params may hold line breaks as
/// JSON whitespace; a frame must not, so they become spaces.
pub(crate) fn write_request(
    out: &mut Vec<u8>,
    id: u64,
    r: &mrtr::InputRequest<'_>,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    json::write_u64(out, id);
    out.push(b',');
    r.write_members(out)?;
    out.extend_from_slice(b"}\n");
    let end = out.len();
    for b in &mut out[start..end - 1] {
        if matches!(*b, b'\n' | b'\r') {
            *b = b' ';
        }
    }
    Ok(())
}

/// Writes to `buf` what a client's response (`Ok(result)` or `Err(error)` at their tape
/// indices) to a request of `kind` gives the host: the result, or the error object, or
/// a `-32602` error when the result does not fit the request or either repeats a member
/// name (one value for one name, as for requests). Returns whether it wrote an error.
pub(crate) fn write_outcome(
    n: &[Node<'_>],
    outcome: Result<usize, usize>,
    kind: InputKind,
    names: &mut json::Names,
    buf: &mut Vec<u8>,
) -> bool {
    let mut clean = |at: usize| json::is_object(n, at) && names.repeated_below(n, at).is_none();
    match outcome {
        Ok(r) if clean(r) && mrtr::response_fits(n, r, kind) => {
            json::write_value(n, r, buf);
            false
        }
        Err(e) if clean(e) => {
            json::write_value(n, e, buf);
            true
        }
        _ => {
            buf.extend_from_slice(b"{\"code\":-32602,\"message\":\"Invalid response: it does not fit ");
            buf.extend_from_slice(kind.method().as_bytes());
            buf.extend_from_slice(b"\"}");
            true
        }
    }
}

/// One request the engine sent for a ticket.
#[derive(Clone)]
struct Asked {
    /// The JSON-RPC id the request went out with.
    id: u64,
    kind: InputKind,
    key: heapless::String<MAX_INPUT_KEY_LEN>,
    done: bool,
}

/// What is kept for one ticket slot whose request may ask its client for input.
#[derive(Default)]
pub(crate) struct Cont {
    /// The ticket this belongs to (`None`: the slot keeps nothing).
    ticket: Option<Ticket>,
    /// The session the request was made in ([`Session::serial`](crate::mcp::lifecycle::Session)).
    session: u64,
    /// The request's arguments (compact JSON), or the uri of a read.
    pub(crate) args: Vec<u8>,
    /// The host's state of its latest [`InputRequired`](mrtr::InputRequired), when it
    /// gave one (`has_state`; the buffer is kept across requests either way).
    pub(crate) state: Vec<u8>,
    pub(crate) has_state: bool,
    /// Keys and values (compact JSON) of the responses, back to back.
    pub(crate) responses: Vec<u8>,
    pub(crate) entries: heapless::Vec<Entry, MAX_INPUT_REQUESTS>,
    asked: heapless::Vec<Asked, MAX_INPUT_REQUESTS>,
    /// Requests are out and not all answered.
    waiting: bool,
    /// When the unanswered ones time out (microseconds of the engine's time).
    deadline: u64,
}

impl Cont {
    /// Records `error` (a JSON-RPC error object) as the response under `asked[i]`.
    fn fail(&mut self, i: usize, error: &[u8]) {
        self.record(i, |buf| {
            buf.extend_from_slice(error);
            true
        });
    }

    /// Records what `value` writes as the response under `asked[i]` (an error object
    /// when it returns `true`), which is then answered.
    fn record(&mut self, i: usize, value: impl FnOnce(&mut Vec<u8>) -> bool) {
        let ks = self.responses.len();
        self.responses.extend_from_slice(self.asked[i].key.as_bytes());
        let vs = self.responses.len();
        let error = value(&mut self.responses);
        let ve = self.responses.len();
        let _ = self.entries.push(Entry { key: ks..vs, value: vs..ve, error });
        self.asked[i].done = true;
    }
}

/// The continuations of every ticket slot, the ids of the requests sent, and the tickets
/// whose input is complete.
pub(crate) struct Inputs {
    conts: Vec<Cont>,
    next_id: u64,
    /// Tickets ready to come back to the host, oldest first.
    resumes: VecDeque<Ticket>,
    /// [`Config::input_timeout`](crate::Config::input_timeout), in microseconds.
    timeout: u64,
    /// The stream ended (stdio): nothing can be asked from now on
    /// ([`AnswerError::ClientGone`](crate::error::AnswerError::ClientGone)).
    closed: bool,
}

impl Inputs {
    pub(crate) fn new(slots: usize, timeout: core::time::Duration) -> Self {
        Self {
            conts: (0..slots).map(|_| Cont::default()).collect(),
            next_id: 1,
            resumes: VecDeque::with_capacity(slots),
            timeout: u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX),
            closed: false,
        }
    }

    /// Keeps what `ticket`'s request needs to come back to the host later: its arguments
    /// (or uri), made in session `session`.
    pub(crate) fn keep(&mut self, ticket: Ticket, session: u64, args: &[u8]) {
        let Some(c) = self.conts.get_mut(ticket.slot as usize) else { return };
        c.ticket = Some(ticket);
        c.session = session;
        c.args.clear();
        c.args.extend_from_slice(args);
        c.state.clear();
        c.has_state = false;
        c.responses.clear();
        c.entries.clear();
        c.asked.clear();
        c.waiting = false;
    }

    /// The continuation of a live `ticket`, if its request was kept.
    fn live<'a>(conts: &'a mut [Cont], tickets: &Tickets, ticket: Ticket) -> Option<&'a mut Cont> {
        let slot = tickets.slots.get(ticket.slot as usize)?;
        let c = conts.get_mut(ticket.slot as usize)?;
        let live = slot.busy.is_some() && slot.generation == ticket.generation && c.ticket == Some(ticket);
        live.then_some(c)
    }

    /// Whether `ticket`'s request was kept (it can ask its client for input).
    pub(crate) fn kept(&mut self, tickets: &Tickets, ticket: Ticket) -> bool {
        Self::live(&mut self.conts, tickets, ticket).is_some()
    }

    /// Sends `requests` (already checked and filtered by what the client declared) for
    /// `ticket` on its route, with `state` kept for the host; the ticket stays busy.
    /// Returns `false` (nothing written) when the request was not kept.
    pub(crate) fn ask(
        &mut self,
        outbox: &mut Outbox,
        ticket: Ticket,
        route: Route,
        requests: &[&mrtr::InputRequest<'_>],
        state: Option<&[u8]>,
        now: u64,
    ) -> Result<bool, serde_json::Error> {
        let timeout = self.timeout;
        // The caller checked the ticket is live and kept (`Self::kept`).
        let Some(c) = self.conts.get_mut(ticket.slot as usize).filter(|c| c.ticket == Some(ticket)) else {
            return Ok(false);
        };
        c.responses.clear();
        c.entries.clear();
        c.asked.clear();
        c.state.clear();
        c.state.extend_from_slice(state.unwrap_or_default());
        c.has_state = state.is_some();
        let mark = outbox.out.len();
        let mut asked = heapless::Vec::<Asked, MAX_INPUT_REQUESTS>::new();
        let mut next_id = self.next_id;
        for r in requests {
            let start = outbox.out.len();
            if let Err(e) = write_request(&mut outbox.out, next_id, r) {
                outbox.out.truncate(mark);
                outbox.routed.retain(|m| m.start < mark);
                return Err(e);
            }
            outbox.interim(route, start, false);
            let key = heapless::String::try_from(r.key()).unwrap_or_default();
            let _ = asked.push(Asked { id: next_id, kind: r.kind(), key, done: false });
            next_id += 1;
        }
        self.next_id = next_id;
        c.asked = asked;
        c.waiting = true;
        c.deadline = now.saturating_add(timeout);
        Ok(true)
    }

    /// Takes a client's response `r` in session `session`. Returns whether it answered a
    /// request the engine sent there; a response to anything else is ignored.
    pub(crate) fn response(
        &mut self,
        tickets: &Tickets,
        session: u64,
        r: Response<'_, '_>,
        names: &mut json::Names,
    ) -> bool {
        let Response { n, id, outcome } = r;
        let Some(id) = response_id(n, id) else { return false };
        let found = self
            .conts
            .iter()
            .position(|c| c.waiting && c.session == session && c.asked.iter().any(|a| a.id == id && !a.done));
        let Some(slot) = found else { return false };
        let Some(ticket) = self.conts[slot].ticket else { return false };
        let Some(c) = Self::live(&mut self.conts, tickets, ticket) else { return false };
        let Some(i) = c.asked.iter().position(|a| a.id == id) else { return false };
        let kind = c.asked[i].kind;
        c.record(i, |buf| write_outcome(n, outcome, kind, names, buf));
        if c.asked.iter().all(|a| a.done) {
            c.waiting = false;
            self.resumes.push_back(ticket);
        }
        true
    }

    /// Fails every unanswered request past its deadline (`-32001`); their tickets come
    /// back to the host.
    pub(crate) fn expire(&mut self, tickets: &Tickets, now: u64) {
        self.fail_where(tickets, TIMED_OUT, |c| c.deadline <= now);
    }

    /// Fails every unanswered request (of `session` only, if given: the session ended;
    /// else every one: the stream ended) with `-32000`.
    pub(crate) fn gone(&mut self, tickets: &Tickets, session: Option<u64>) {
        self.closed |= session.is_none();
        self.fail_where(tickets, GONE, |c| session.is_none_or(|s| c.session == s));
    }

    fn fail_where(&mut self, tickets: &Tickets, error: &[u8], pick: impl Fn(&Cont) -> bool) {
        for slot in 0..self.conts.len() {
            let c = &self.conts[slot];
            if !c.waiting || !pick(c) {
                continue;
            }
            let Some(ticket) = c.ticket else { continue };
            let Some(c) = Self::live(&mut self.conts, tickets, ticket) else {
                self.conts[slot].waiting = false; // its ticket was answered or cancelled
                continue;
            };
            for i in 0..c.asked.len() {
                if !c.asked[i].done {
                    c.fail(i, error);
                }
            }
            c.waiting = false;
            self.resumes.push_back(ticket);
        }
    }

    /// The earliest deadline of a request still waiting for its client (whose ticket is
    /// still live: one answered or cancelled meanwhile waits for nothing).
    pub(crate) fn deadline(&self, tickets: &Tickets) -> Option<u64> {
        let live = |c: &Cont| {
            c.ticket.is_some_and(|t| {
                tickets
                    .slots
                    .get(t.slot as usize)
                    .is_some_and(|s| s.busy.is_some() && s.generation == t.generation)
            })
        };
        self.conts.iter().filter(|c| c.waiting && live(c)).map(|c| c.deadline).min()
    }

    /// A JSON-RPC id for a request the engine sends for a task (`tasks`), from the same
    /// sequence as this table's.
    pub(crate) fn next_request_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Whether the stream ended: nothing can be asked any more.
    pub(crate) fn closed(&self) -> bool {
        self.closed
    }

    /// Whether a ticket waits to come back to the host.
    pub(crate) fn has_resume(&self) -> bool {
        !self.resumes.is_empty()
    }

    /// The next live ticket ready to come back, with what was kept for it.
    pub(crate) fn next_resume(&mut self, tickets: &Tickets) -> Option<(Ticket, &Cont)> {
        while let Some(t) = self.resumes.pop_front() {
            if Self::live(&mut self.conts, tickets, t).is_some() {
                return Some((t, &self.conts[t.slot as usize]));
            }
        }
        None
    }
}
