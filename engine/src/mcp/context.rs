//! The per-request context: what a transport knows of one request, handed to
//! [`Core::handle`](super::Core::handle) with it as one value ([`RequestContext`]), and
//! what the core hands back ([`Handled`]) — no setters before `handle`, no resets or
//! getters after it.

use crate::error::PeerError;
use crate::mcp::lifecycle::{Mode, Session};
use crate::mcp::requests::Caller;
use crate::mcp::scopes::{Grant, Rules, ScopeSet};
use crate::mcp::subs::Listener;
use crate::output::Route;

/// What the transport knows of the request it hands the core: who sent it, on which
/// route, under which rules, and the session it belongs to.
#[derive(Debug)]
pub(crate) struct RequestContext<'s> {
    /// The route its answer goes to (becomes its ticket's route).
    pub(crate) route: Route,
    /// The rules it is served under (HTTP picks them per request).
    pub(crate) mode: Mode,
    /// Its principal (HTTP, see `http::Principal`).
    pub(crate) principal: Option<[u8; 32]>,
    /// The scopes granted to it (`None`: unrestricted, as on stdio and for
    /// `Authorization::Everyone`).
    pub(crate) granted: Option<ScopeSet>,
    /// What the HTTP layer found for its `Mcp-Session-Id`.
    pub(crate) check: SessionCheck,
    /// Its response cannot be a stream (HTTP/1.0): a `subscriptions/listen` is refused.
    pub(crate) no_stream: bool,
    /// Why a `subscriptions/listen` of it is refused: its HTTP client holds as many
    /// streams as it may (see `http::stream_shares`).
    pub(crate) listen_refusal: Option<PeerError<'static>>,
    /// The HTTP session it belongs to (`SessionCheck::Attached`): the core's session
    /// while the request is served, handed back after.
    pub(crate) session: Option<&'s mut Session>,
}

impl RequestContext<'_> {
    /// A frame of the stdio stream: one client, unrestricted, its own session.
    pub(crate) const STDIO: RequestContext<'static> = RequestContext::idle(Mode::Stdio);

    /// A request on the stdio route under `mode`'s rules with nothing else known (what
    /// the core holds between requests).
    pub(crate) const fn idle(mode: Mode) -> RequestContext<'static> {
        RequestContext {
            route: Route::Stdio,
            mode,
            principal: None,
            granted: None,
            check: SessionCheck::Own,
            no_stream: false,
            listen_refusal: None,
            session: None,
        }
    }
}

/// The part of the [`RequestContext`] the core keeps while it dispatches the request
/// (the session is swapped in; the rest is read by the method families).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Current {
    pub(crate) route: Route,
    pub(crate) mode: Mode,
    pub(crate) principal: Option<[u8; 32]>,
    pub(crate) granted: Option<ScopeSet>,
    pub(crate) check: SessionCheck,
    pub(crate) no_stream: bool,
    pub(crate) listen_refusal: Option<PeerError<'static>>,
}

impl Current {
    /// Between requests: the stdio route under `mode`'s rules, nobody, unrestricted.
    pub(crate) const fn idle(mode: Mode) -> Self {
        Self::of(&RequestContext::idle(mode))
    }

    /// Whether `tasks/list` is offered to the caller: on stdio (one client: the requestor
    /// is the stream's), and over HTTP to a principal; not to an HTTP session without one,
    /// as the utility advises a receiver that cannot tell requestors apart (its `tasks/list`
    /// is `-32601`, and `initialize` leaves `tasks.list` out).
    pub(crate) fn lists_tasks(&self) -> bool {
        self.principal.is_some() || self.mode == Mode::Stdio
    }

    /// What it was granted, against the endpoint's `rules`.
    pub(crate) fn grant<'r>(&self, rules: Option<&'r Rules>) -> Grant<'r> {
        Grant { rules, granted: self.granted }
    }

    /// The caller of a method that reaches the host.
    pub(crate) fn caller<'r>(&self, rules: Option<&'r Rules>) -> Caller<'r> {
        let (route, principal, no_stream) = (self.route, self.principal, self.no_stream);
        Caller { route, principal, grant: self.grant(rules), no_stream }
    }

    /// The caller of a `subscriptions/listen`.
    pub(crate) fn listener<'r>(&self, rules: Option<&'r Rules>) -> Listener<'r> {
        let (route, principal, no_stream, refusal) =
            (self.route, self.principal, self.no_stream, self.listen_refusal);
        Listener { route, principal, grant: self.grant(rules), no_stream, refusal }
    }

    /// What the core keeps of `ctx`.
    pub(crate) const fn of(ctx: &RequestContext<'_>) -> Self {
        Self {
            route: ctx.route,
            mode: ctx.mode,
            principal: ctx.principal,
            granted: ctx.granted,
            check: ctx.check,
            no_stream: ctx.no_stream,
            listen_refusal: ctx.listen_refusal,
        }
    }
}

/// What the core made of a request, and what the transport must do with it.
#[derive(Debug)]
pub(crate) struct Handled {
    /// What the message became (what the HTTP layer responds with).
    pub(crate) dispatched: Dispatched,
    /// The method slot whose scopes it lacked (its challenge names them).
    pub(crate) denied: Option<usize>,
    /// The session an `initialize` opened (`SessionCheck::Absent(Room::Yes)`): the
    /// transport moves it to its table.
    pub(crate) opened: Option<Session>,
}

/// What the HTTP layer found for a request's `Mcp-Session-Id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionCheck {
    /// Stdio, or stateless HTTP: the core's own session value.
    Own,
    /// No header: `initialize` opens a session, if there is room.
    Absent(Room),
    /// The header named a live session, whose value the HTTP layer handed in.
    Attached,
    /// The header named no live session of this caller: every message is refused `404`.
    Unknown,
}

/// Whether an HTTP `initialize` may open a session now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Room {
    Yes,
    /// The live sessions are at the cap (`503`).
    Full,
}

/// What a message dispatched just now became (what the HTTP layer responds with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dispatched {
    /// Answered at once, with the HTTP status its answer calls for.
    Answered(u16),
    /// Handed to the host: the answer comes with its ticket.
    Pending,
    /// A `subscriptions/listen` stream opened: its acknowledgement is routed, and the
    /// stream stays open.
    Listening,
    /// A notification or a response: nothing to answer.
    Accepted,
}
