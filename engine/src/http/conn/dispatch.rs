//! Serving a complete request: the body of a `POST` decoded and handed to the core in
//! the session its `Mcp-Session-Id` names (`sessions::route`), `DELETE` ending a session,
//! a `GET` opening a stream, the metadata document, and what the core made of the
//! request (an answer, a notification accepted, work for the host) turned into the
//! response.

use crate::http::auth::client::ClientKey;
use crate::http::auth::limits;
use crate::http::auth::limits::{Class, Refused};
use crate::http::auth::resource::ProtectedResource;
use crate::http::conn::conns;
use crate::http::conn::exchange::{Phase, SessionStream, respond_empty, respond_json, trim_newline};
use crate::http::session::sessions;
use crate::http::session::sessions::Plan;
use crate::http::session::stream_shares::StreamKind;
use crate::http::store::session_store;
use crate::http::{HeaderList, HttpEngine, instant_at};
use crate::jsonrpc::Message;
use crate::mcp::Core;
use crate::mcp::context::RequestContext;
use crate::mcp::facts::RequestFacts;
use crate::mcp::{Dispatched, Room, SessionCheck};
use crate::output::Route;
use crate::revision::Revision;

/// `Retry-After` of an `initialize` refused for its client's share of sessions, each
/// busy (as long as the table's `503` says).
const SESSIONS_RETRY: u64 = 5;

impl HttpEngine {
    /// Decodes the body of `slot`'s request and serves it, in the session its
    /// `Mcp-Session-Id` names (see `sessions::route`).
    pub(in crate::http) fn dispatch(&mut self, slot: u32) {
        if let Some(r) = self.slots[slot as usize].conn.as_mut().and_then(|c| c.pinned.take()) {
            self.sessions.unpin(r);
        }
        if let (Some(c), Some(pr)) = (self.slots[slot as usize].conn.as_mut(), &self.http.protected)
            && c.metadata
        {
            conns::lend_out(&mut self.outs, c);
            let extra =
                [("cache-control", ProtectedResource::cache_control()), ("access-control-allow-origin", "*")];
            return respond_json(c, self.last_now, 200, pr.document(), &extra);
        }
        if self.slots[slot as usize].conn.as_ref().is_some_and(|c| c.get) {
            return self.stream_parts().open_stream(slot);
        }
        let now = self.last_now;
        let generation = self.slots[slot as usize].generation;
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return };
        conns::lend_out(&mut self.outs, c);
        // Output before this request's response: it may go while the response is held
        // for the session store.
        let before = c.out.len();
        let store = self.http.session_store;
        let core = &mut self.core;
        let route = Route::Http { conn: slot, generation };
        let principal = c.principal.take();
        let grant = c.grant.take();
        // A listen stream counts against its client's long-lived streams (`stream_shares`;
        // nothing to look up while no stream is open).
        let mut listen_refusal = None;
        if !self.shares.is_empty() {
            let holder = ClientKey::of(principal, c.client);
            let (max_streams, max_listens) =
                (self.http.max_streams_per_client, core.config().max_subscriptions_per_peer);
            listen_refusal = self.shares.listen_refusal(holder, max_streams, max_listens);
        }
        let mark = core.outbox().out.len();
        let (head, body, spans) = c.codec.head_body_and_spans();
        let headers = HeaderList::from_spans(head, spans);
        // Whom a session it opens counts against (looked at only when it may open one).
        let client = || ClientKey::of(principal, c.client);
        let (mode, mut check, attached) =
            sessions::route(&self.sessions, headers.as_slice(), principal.as_ref());
        // Should this request open a session, the one that gives way for it, if one must
        // (it goes only once the session is opened: see `sessions::Sessions::plan`).
        let mut gives_way = None;
        let mut client_full = false;
        if matches!(check, SessionCheck::Absent(_)) && !self.sessions.room_for(client()) {
            check = SessionCheck::Absent(Room::Full);
            match session_store::plan_room(core, &self.sessions, &self.parked, store, client()) {
                Plan::Evict(r) => {
                    gives_way = Some(r);
                    check = SessionCheck::Absent(Room::Yes);
                }
                Plan::ClientFull => client_full = true,
                Plan::Free | Plan::Full => {}
            }
        }
        if c.delete {
            // `DELETE` ends the session it names; nothing else is served by it.
            let mut stream = None;
            let mut ended = None;
            let status = match (check, attached) {
                (_, Some(r)) => {
                    ended = self.sessions.get(r).map(|e| e.id);
                    // What its client was asked can no longer be answered; its stream
                    // ends; its parked requests have nobody left to resume them.
                    stream = session_store::end_session(
                        core,
                        &mut self.sessions,
                        &mut self.parked,
                        &mut self.session_timers,
                        r,
                    );
                    200
                }
                (SessionCheck::Unknown, None) => 404,
                _ => 400,
            };
            respond_empty(c, now, status, &[]);
            if let Some((s, _)) = stream.filter(|&(s, _)| s != slot) {
                conns::end_stream(&mut self.slots, stream, now);
                self.settle(s);
            }
            if let Some(id) = ended.filter(|_| store) {
                // The `200` waits until the store forgot the session.
                self.begin_save(slot, None, id, false, before);
            }
            return;
        }
        // The session's state is the core's while it serves the request; should its
        // response become a stream, it is the session's next one.
        let mut session = None;
        if let Some((r, e)) = attached.and_then(|r| Some((r, self.sessions.get_mut(r)?))) {
            let priming = e.session.legacy == Some(Revision::V2025_11_25);
            c.sse = Some(SessionStream { session: r, stream: e.next_stream, seq: 0, priming });
            e.next_stream = e.next_stream.wrapping_add(1).max(1);
            e.session.token = Some(e.token);
            session = Some(&mut e.session);
        }
        let ctx = RequestContext {
            route,
            mode,
            principal: principal.map(|p| p.0),
            granted: grant.map(|g| g.0),
            check,
            no_stream: c.http10,
            listen_refusal,
            session,
        };
        let mut created = None;
        // A request over its rate never reaches the core: its refusal is written here.
        // So is an `initialize` of a client whose share of sessions is full and busy.
        let (limits, limiter, refusal, addr) =
            (&self.http.limits, &mut self.limiter, &mut self.limit_body, c.client);
        // The requests this client has with the host (its share of the ticket slots).
        let holder = ClientKey::of(principal, addr);
        let (in_flight, max_in_flight) = (self.in_flight.of(holder), self.http.max_in_flight_per_client);
        let opens = matches!(check, SessionCheck::Absent(_));
        let mut limited = None;
        let served_from = core.served_len();
        let handled = self.parser.parse(body, |parsed| {
            // Decided on what the core decoded the request to (`RequestFacts`), once.
            let gate = |core: &Core, m: &Message<'_, '_>| {
                let facts = || RequestFacts::of(m);
                if (limits.rates_requests() || client_full)
                    && let Some(class) = limits::class_of(&facts())
                    && (class != Class::Initialize || opens)
                {
                    let refused = if class == Class::Initialize && client_full {
                        Err((SESSIONS_RETRY, Refused::Sessions))
                    } else {
                        limiter
                            .take(limits, class, principal, addr, now)
                            .map_err(|retry| (retry, Refused::Rate))
                    };
                    if let Err((retry, why)) = refused {
                        limits::write_refusal(refusal, facts().id, retry, why);
                        limited = Some((retry, why));
                        return Some(Dispatched::Answered(429));
                    }
                }
                if let (Some(max), Some(p)) = (limits.per_principal(), principal)
                    && core.in_flight_for(&p.0) >= max
                    && facts().ticketed
                {
                    limits::write_refusal(refusal, facts().id, 1, Refused::InFlight);
                    limited = Some((1, Refused::InFlight));
                    return Some(Dispatched::Answered(429));
                }
                if in_flight >= max_in_flight && facts().ticketed {
                    limits::write_refusal(refusal, facts().id, 1, Refused::ClientInFlight);
                    limited = Some((1, Refused::ClientInFlight));
                    return Some(Dispatched::Answered(429));
                }
                None
            };
            core.handle_gated(ctx, parsed, headers.as_slice(), gate)
        });
        let outcome = handled.dispatched;
        if let Some(r) = attached {
            if matches!(outcome, Dispatched::Pending | Dispatched::Listening) {
                // The host works on it: the session lives until it ends (see `settle`).
                self.sessions.begin(r);
                c.session = Some(r);
            } else {
                self.sessions.end_now(r, now);
            }
            self.session_timers.set(r.slot(), self.sessions.deadline(r));
        } else if let Some(session) = handled.opened {
            // `initialize` opened a session: it moves to the table, named in the answer,
            // once the session chosen to give way has: ended, or with a store, dropped
            // from memory (it is not busy: no stream of it is open, nothing waits on it).
            if let Some(r) = gives_way {
                if store {
                    self.sessions.remove(r);
                    self.session_timers.set(r.slot(), None);
                } else {
                    session_store::end_session(
                        core,
                        &mut self.sessions,
                        &mut self.parked,
                        &mut self.session_timers,
                        r,
                    );
                }
            }
            if let Ok(r) = self.sessions.create(now, principal, ClientKey::of(principal, c.client), session) {
                c.session_id = self.sessions.get(r).map(|e| e.id);
                self.session_timers.set(r.slot(), self.sessions.deadline(r));
                created = Some(r);
            }
        }
        // The session and addresses of what the core answered itself (its spans).
        let session_id = attached.and_then(|r| self.sessions.get(r)).map(|e| e.id).or(c.session_id);
        core.fill_served(served_from, session_id, c.peer, c.client);
        match outcome {
            Dispatched::Pending => {
                c.phase = Phase::Waiting;
                c.deadline = self.http.request_timeout.map(|t| now + t);
                self.in_flight.enter(slot, holder);
            }
            Dispatched::Listening => {
                // A listen stream: its acknowledgement opens the SSE response, which stays
                // open until the token it was opened with expires.
                c.phase = Phase::Waiting;
                c.deadline = grant.and_then(|g| g.1).and_then(|exp| instant_at(core.clock().wall, now, exp));
                self.shares.open(slot, ClientKey::of(principal, c.client), StreamKind::Listen, now);
                self.collect_answers();
            }
            Dispatched::Answered(_) if let Some((retry, why)) = limited => {
                c.refused = Some((why.refusal(), 429));
                respond_json(
                    c,
                    now,
                    429,
                    &self.limit_body,
                    &[("retry-after", limits::retry_after_text(retry))],
                );
            }
            Dispatched::Answered(status) => {
                // A method the token lacks the scopes for: the challenge names them.
                if let Some(slot) = handled.denied {
                    c.challenge = self.step_up[slot].clone();
                }
                // At the session cap the client may try again shortly.
                let extra: &[(&str, &str)] = if status == 503 { &[("retry-after", "5")] } else { &[] };
                // Only its own answer: what it routed to other requests (the waiters a
                // `tasks/cancel` answered) stays for `collect_answers`.
                let own = core.outbox().answer_start(mark);
                respond_json(c, now, status, trim_newline(core.outbox().written_since(own)), extra);
                core.outbox_mut().discard_since(own);
            }
            // A notification (or a response, which a client must not send): accepted.
            Dispatched::Accepted => respond_empty(c, now, 202, &[]),
        }
        // Without a task store (the check `hold_for_task` starts with, made here so the
        // common case costs no call) no response waits for a task's record.
        let task_store = self.core.task_store_attached();
        if !store {
            if task_store {
                self.hold_for_task(slot, before);
            }
            return;
        }
        // A change to the session is acknowledged once the host's store has it (one
        // answered later, or not taken, goes with the session's next answered request).
        let answered = matches!(outcome, Dispatched::Answered(_) | Dispatched::Accepted);
        let save = match (created, attached) {
            (Some(r), _) => Some((r, true)),
            (None, Some(r)) if answered && self.sessions.get(r).is_some_and(sessions::Entry::unsaved) => {
                Some((r, false))
            }
            _ => None,
        };
        if let Some((r, created)) = save
            && let Some(id) = self.sessions.get(r).map(|e| e.id)
        {
            self.begin_save(slot, Some(r), id, created, before);
        }
        if task_store {
            self.hold_for_task(slot, before);
        }
    }
}
