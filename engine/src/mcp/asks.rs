//! Requests the host sends a session-bound client (`2025-11-25`, `2025-06-18`) outside
//! any request: `sampling/createMessage`, `elicitation/create` (form and url modes) and
//! `roots/list`, each under a [`ClientAsk`] handle, and the client's reply handed back
//! to the host as [`Event::ClientReply`](crate::Event::ClientReply).
//!
//! The host asks ([`Engine::ask_client`](crate::Engine::ask_client) on stdio, where the
//! request goes out on the output stream;
//! [`HttpEngine::ask_client`](crate::http::HttpEngine::ask_client) over HTTP, where it
//! goes on the session's standalone `GET` stream). The engine numbers the request from
//! the sequence its input requests use (so ids never collide within a session), keeps
//! the ask in a table of [`Config::max_in_flight`](crate::Config::max_in_flight) slots,
//! and finishes it exactly once: with the client's result, with its error (or `-32602`
//! when the result does not fit the request), with `-32001` when no response came
//! within [`Config::input_timeout`](crate::Config::input_timeout), or with `-32000` when
//! the session or the stream ended first. A response is matched by its id and its
//! session only; one from another session, or a second one, answers nothing.
//!
//! Each slot keeps a reused buffer for its reply, so once warm an ask allocates nothing.

use std::collections::VecDeque;

use crate::mcp::inputs::{GONE, Inputs, Response, TIMED_OUT, response_id, write_outcome, write_request};
use crate::mcp::mrtr::{ClientCapabilities, InputError, InputKind, InputRequest, InputResponse};
use crate::output::{Outbox, Route};
use crate::wire::json;

/// Why a request to a client outside any request
/// ([`Engine::ask_client`](crate::Engine::ask_client),
/// [`HttpEngine::ask_client`](crate::http::HttpEngine::ask_client)) was refused. Nothing
/// was sent, and no reply will come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AskError {
    /// No session-bound session: the stdio stream was not opened with `initialize` under
    /// `2025-11-25` or `2025-06-18`, or the HTTP session id names no live session here.
    NoSession,
    /// The client did not declare the capability this request needs (`sampling`, its
    /// `tools` / `context`, `elicitation` form or `url`, `roots`).
    NotDeclared(InputKind),
    /// The session has no standalone `GET` stream open to carry the request (HTTP): ask
    /// again once the client opened one.
    NoStream,
    /// The stream holds too much unsent output (the stdio output past
    /// `Config::max_buffered_output`, or 64 KiB on the HTTP stream's connection).
    Backpressure,
    /// [`Config::max_in_flight`](crate::Config::max_in_flight) asks wait for their
    /// replies already.
    TooMany,
    /// The client's stream has ended (stdio end of input).
    ClientGone,
    /// The request's params could not be serialized.
    Unserializable,
}

impl core::fmt::Display for AskError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::NoSession => "no session-bound session to ask (initialize under 2025-11-25 or 2025-06-18)",
            Self::NotDeclared(InputKind::Sampling) => {
                "the client did not declare the sampling capability this request needs"
            }
            Self::NotDeclared(InputKind::Roots) => "the client did not declare roots",
            Self::NotDeclared(InputKind::ElicitationUrl) => {
                "the client did not declare elicitation in url mode"
            }
            Self::NotDeclared(_) => "the client did not declare elicitation in form mode",
            Self::NoStream => "the session has no standalone stream open to carry the request",
            Self::Backpressure => "the client's stream holds too much unsent output",
            Self::TooMany => "Config::max_in_flight requests to clients wait for replies already",
            Self::ClientGone => "the client's stream has ended",
            Self::Unserializable => "the request's params could not be serialized",
        })
    }
}

impl std::error::Error for AskError {}

/// A request the host sent a client outside any request
/// ([`Engine::ask_client`](crate::Engine::ask_client),
/// [`HttpEngine::ask_client`](crate::http::HttpEngine::ask_client)): its reply comes as
/// [`Event::ClientReply`](crate::Event::ClientReply) carrying the same handle, exactly
/// once. A small `Copy` value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientAsk {
    slot: u16,
    generation: u32,
    id: u64,
}

impl ClientAsk {
    /// The JSON-RPC id the request went out with.
    pub fn request_id(&self) -> u64 {
        self.id
    }
}

impl core::fmt::Debug for ClientAsk {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClientAsk").field("id", &self.id).finish()
    }
}

/// The reply to a [`ClientAsk`], borrowed from the engine until the next call on it.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ClientReply<'a> {
    /// The handle [`ask_client`](crate::Engine::ask_client) returned.
    pub ask: ClientAsk,
    /// What was asked.
    pub kind: InputKind,
    /// The client's result (an `ElicitResult`, `CreateMessageResult` or
    /// `ListRootsResult`, checked for the members its kind requires), or why there is
    /// none: the client's error, `-32602` (the result does not fit the request),
    /// `-32001` (no response within [`Config::input_timeout`](crate::Config::input_timeout)),
    /// `-32000` (the session was deleted or expired, or the stream ended).
    pub result: Result<InputResponse<'a>, InputError<'a>>,
}

impl core::fmt::Debug for ClientReply<'_> {
    /// The handle, the kind and the error code: a result carries what the user typed.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let outcome = match &self.result {
            Ok(r) => Ok(r.raw().len()),
            Err(e) => Err(e.code()),
        };
        f.debug_struct("ClientReply")
            .field("ask", &self.ask)
            .field("kind", &self.kind)
            .field("result", &outcome)
            .finish()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    /// Sent; waits for the client until `deadline`.
    Waiting,
    /// Finished; its reply waits in `done` to be handed to the host.
    Done,
}

struct Slot {
    generation: u32,
    state: State,
    id: u64,
    /// The session it was sent in ([`Session::serial`](crate::mcp::lifecycle::Session)).
    session: u64,
    kind: InputKind,
    /// Microseconds of the engine's time.
    deadline: u64,
    /// The reply is an error object.
    error: bool,
    /// The reply (compact JSON), reused from one ask to the next.
    value: Vec<u8>,
}

/// The asks in flight, and the finished ones waiting to be handed to the host.
pub(crate) struct Asks {
    slots: Vec<Slot>,
    /// Finished slots, oldest first.
    done: VecDeque<u16>,
    /// The slot whose reply the host holds (freed at the next call).
    delivered: Option<u16>,
    /// [`Config::input_timeout`](crate::Config::input_timeout), in microseconds.
    timeout: u64,
}

impl Asks {
    /// Sends `request` to the client of session `serial` (which declared `caps`) on
    /// `route`, if it declared what is asked and there is room (see
    /// `Core::ask_client`), with the next id `inputs` gives.
    pub(crate) fn ask_client(
        &mut self,
        inputs: &mut Inputs,
        outbox: &mut Outbox,
        route: Route,
        (serial, caps): (u64, ClientCapabilities),
        request: &InputRequest<'_>,
        now: u64,
    ) -> Result<ClientAsk, AskError> {
        if !request.declared_by(caps) {
            return Err(AskError::NotDeclared(request.kind()));
        }
        if !self.has_room() {
            return Err(AskError::TooMany);
        }
        let id = inputs.next_request_id();
        self.ask(outbox, route, serial, request, id, now)
    }

    pub(crate) fn new(slots: usize, timeout: core::time::Duration) -> Self {
        let slot = || Slot {
            generation: 0,
            state: State::Free,
            id: 0,
            session: 0,
            kind: InputKind::Roots,
            deadline: 0,
            error: false,
            value: Vec::new(),
        };
        Self {
            slots: (0..slots).map(|_| slot()).collect(),
            done: VecDeque::with_capacity(slots),
            delivered: None,
            timeout: u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX),
        }
    }

    /// Whether a slot is free for another ask.
    pub(crate) fn has_room(&self) -> bool {
        self.slots.iter().any(|s| s.state == State::Free)
    }

    /// Sends `request` (with JSON-RPC id `id`) to the client of session `session` on
    /// `route`, at `now`. Nothing is written when it is refused.
    pub(crate) fn ask(
        &mut self,
        outbox: &mut Outbox,
        route: Route,
        session: u64,
        request: &InputRequest<'_>,
        id: u64,
        now: u64,
    ) -> Result<ClientAsk, AskError> {
        let free = self.slots.iter().position(|s| s.state == State::Free).ok_or(AskError::TooMany)?;
        let start = outbox.out.len();
        if write_request(&mut outbox.out, id, request).is_err() {
            outbox.out.truncate(start);
            return Err(AskError::Unserializable);
        }
        // A message of the standalone stream (dropped with it if its connection cannot
        // take it); on stdio the output stream itself.
        outbox.interim(route, start, true);
        let s = &mut self.slots[free];
        s.state = State::Waiting;
        s.id = id;
        s.session = session;
        s.kind = request.kind();
        s.deadline = now.saturating_add(self.timeout);
        s.value.clear();
        Ok(ClientAsk { slot: free as u16, generation: s.generation, id })
    }

    /// Takes a client's response `r` in session `session`. Returns whether it answered
    /// an ask.
    pub(crate) fn response(&mut self, session: u64, r: Response<'_, '_>, names: &mut json::Names) -> bool {
        let Response { n, id, outcome } = r;
        let Some(id) = response_id(n, id) else { return false };
        let found =
            self.slots.iter().position(|s| s.state == State::Waiting && s.id == id && s.session == session);
        let Some(i) = found else { return false };
        let s = &mut self.slots[i];
        s.value.clear();
        s.error = write_outcome(n, outcome, s.kind, names, &mut s.value);
        self.finish(i);
        true
    }

    fn finish(&mut self, i: usize) {
        self.slots[i].state = State::Done;
        self.done.push_back(i as u16);
    }

    /// Fails every ask whose `pick` holds with `error`.
    fn fail_where(&mut self, error: &[u8], pick: impl Fn(&Slot) -> bool) {
        for i in 0..self.slots.len() {
            let s = &mut self.slots[i];
            if s.state != State::Waiting || !pick(s) {
                continue;
            }
            s.value.clear();
            s.value.extend_from_slice(error);
            s.error = true;
            self.finish(i);
        }
    }

    /// Fails the asks past their deadline (`-32001`).
    pub(crate) fn expire(&mut self, now: u64) {
        self.fail_where(TIMED_OUT, |s| s.deadline <= now);
    }

    /// Fails the asks of `session` (every one, with `None`: the stream ended) with
    /// `-32000`.
    pub(crate) fn gone(&mut self, session: Option<u64>) {
        self.fail_where(GONE, |s| session.is_none_or(|ser| s.session == ser));
    }

    /// The earliest deadline of an ask still waiting.
    pub(crate) fn deadline(&self) -> Option<u64> {
        self.slots.iter().filter(|s| s.state == State::Waiting).map(|s| s.deadline).min()
    }

    /// Whether an ask of `session` waits for its client.
    pub(crate) fn waiting_in(&self, session: u64) -> bool {
        self.slots.iter().any(|s| s.state == State::Waiting && s.session == session)
    }

    /// Whether a reply waits to be handed to the host.
    #[inline]
    pub(crate) fn has_reply(&self) -> bool {
        !self.done.is_empty()
    }

    /// Frees the slot whose reply the host held. Called before every poll and input:
    /// with none held (nearly always), one comparison and nothing written.
    #[inline]
    pub(crate) fn release(&mut self) {
        if let Some(i) = self.delivered {
            self.free_delivered(i);
        }
    }

    #[inline(never)]
    fn free_delivered(&mut self, i: u16) {
        self.delivered = None;
        if let Some(s) = self.slots.get_mut(usize::from(i)) {
            s.state = State::Free;
            s.generation = s.generation.wrapping_add(1);
        }
    }

    /// The next reply for the host; its slot is freed at the next [`Self::release`].
    pub(crate) fn next_reply(&mut self) -> Option<ClientReply<'_>> {
        self.release();
        let i = self.done.pop_front()?;
        self.delivered = Some(i);
        let s = &self.slots[usize::from(i)];
        let raw = core::str::from_utf8(&s.value).unwrap_or("{}");
        let result = if s.error { Err(InputError::new(raw)) } else { Ok(InputResponse::new(raw)) };
        let ask = ClientAsk { slot: i, generation: s.generation, id: s.id };
        Some(ClientReply { ask, kind: s.kind, result })
    }
}
