//! Session streams (`2025-11-25`, `2025-06-18`): the standalone `GET` stream, event ids
//! and what each session keeps for `Last-Event-ID` (`replay`), and the streams parked
//! when their connection went away (`parked`). The connection table and routing stay in
//! `mod.rs`; this file writes a session stream's events and opens, resumes and asks on
//! its streams ([`StreamParts`]: the parts it writes with, lent by the engine for one
//! call; it knows no engine). A resumption this engine's buffer does not cover asks the
//! host's event store first, see `store::event_store`.

use crate::http::auth::client::ClientKey;
use crate::http::config::HttpConfig;
use crate::http::conn::conns;
use crate::http::conn::exchange::{Exchange, Phase, SessionStream, finish, respond_empty};
use crate::http::conn::refusal::Refusal;
use crate::http::session::parked::Parked;
use crate::http::session::replay::is_standalone;
use crate::http::session::sessions::{self, SessionRef, Sessions};
use crate::http::session::stream_shares::StreamKind;
use crate::http::session::stream_shares::StreamShares;
use crate::http::store::StoreAsk;
use crate::http::store::event_store::{self, Keep, StoredEvent, replay_stored};
use crate::http::store::port::StorePort;
use crate::http::{ConnId, ConnSlot, HeaderList, MAX_UNSENT, conn_in, instant_at};
use crate::mcp::asks::{AskError, ClientAsk};
use crate::mcp::mrtr::InputRequest;
use crate::mcp::{Core, SessionCheck};
use crate::output::Route;
use crate::revision::Revision;
use crate::time::Instant;
use crate::timer::Timers;

/// What the session streams are written with, lent by the engine for one call: the
/// core (its outbox, reroutes), the connection table's slots and output pool, the
/// sessions with their idle timers, the parked streams, the long-lived streams' shares,
/// the store port (the replay bound, events for the host), the settings and the time.
pub(in crate::http) struct StreamParts<'a> {
    pub(in crate::http) core: &'a mut Core,
    pub(in crate::http) slots: &'a mut [ConnSlot],
    pub(in crate::http) outs: &'a mut Vec<Vec<u8>>,
    pub(in crate::http) sessions: &'a mut Sessions,
    pub(in crate::http) session_timers: &'a mut Timers,
    pub(in crate::http) parked: &'a mut Parked,
    pub(in crate::http) shares: &'a mut StreamShares,
    pub(in crate::http) store: &'a mut StorePort,
    pub(in crate::http) http: &'a HttpConfig,
    pub(in crate::http) now: Instant,
}

impl StreamParts<'_> {
    /// Keeps message `i` of the outbox (for the parked stream at `route`) as the stream's
    /// next event in its session's replay buffer (and the host's event store); its final
    /// answer ends the entry.
    pub(in crate::http) fn park_event(&mut self, route: Route, interim: bool, i: usize) {
        let r = self.core.outbox().routed[i];
        let msg = self.core.outbox().message(&r);
        if let Some(st) = self.parked.get_mut(route) {
            st.seq = st.seq.wrapping_add(1);
            if let Some(e) = self.sessions.get_mut(st.session) {
                e.replay.push(st.stream, st.seq, msg, self.store.replay_max());
                self.store.keep_mut().hand_over(&e.id, st.stream, st.seq, msg, !interim);
            }
        }
        if !interim {
            self.parked.end(route);
        }
    }

    /// Opens the standalone stream of the session a `GET` names: an SSE response that
    /// stays open and carries what the session is told outside any request (list
    /// changes, resource updates), until its client closes it, its session ends, the
    /// grant it was opened with expires, or it is ended to make room for a new
    /// connection (see `shed_stream`). One per session: a second is `409` while the first
    /// is open; a client holding `max_streams_per_client` long-lived streams gets `429`
    /// with `Retry-After`. Refused: no `Accept: text/event-stream` (`406`), no `Mcp-Session-Id` (`400`),
    /// a session that is not there (`404`), an `MCP-Protocol-Version` other than the
    /// session's (`400`), HTTP/1.0, which cannot stream (`400`), a `Last-Event-ID` that
    /// is not an event id of this session (`400`, the store is not asked).
    pub(in crate::http) fn open_stream(&mut self, slot: u32) {
        let now = self.now;
        let generation = self.slots[slot as usize].generation;
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return };
        let (head, _, spans) = c.codec.head_body_and_spans();
        let headers = HeaderList::from_spans(head, spans);
        let (_, check, attached) = sessions::route(self.sessions, headers.as_slice(), c.principal.as_ref());
        let entry = attached.and_then(|r| self.sessions.get(r));
        let c_http10 = c.http10;
        let mut refusal = match (check, entry) {
            _ if c.http10 => Some(400),
            (_, Some(e)) => sessions::stream_refusal(headers.as_slice(), &e.session),
            (SessionCheck::Unknown, None) => Some(404),
            _ => Some(400),
        };
        // A resumption names the last event the client saw: of this session, or refused.
        let mut resume = None;
        if let (None, Some(r)) = (refusal, attached) {
            let mut ids = headers.as_slice().iter().filter(|h| h.name.eq_ignore_ascii_case("last-event-id"));
            if let Some(h) = ids.next() {
                resume = self.sessions.open_event_id(r, h.value.trim_ascii());
                if resume.is_none() || ids.next().is_some() {
                    refusal = Some(400);
                }
            }
        }
        let standalone = resume.is_none_or(|(stream, _)| is_standalone(stream));
        let open_elsewhere =
            standalone && attached.is_some_and(|r| self.standalone_open(r, slot, generation));
        let no_room = standalone && attached.is_some_and(|r| !self.stream_room(r, slot));
        // No session named at all: there is no standalone stream outside a session.
        let outside = matches!(check, SessionCheck::Absent(_) | SessionCheck::Own);
        let status = match refusal {
            Some(400) if outside && !c_http10 => 405,
            Some(status) => status,
            None if open_elsewhere => 409,
            None if no_room => 429,
            None => 200,
        };
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return };
        conns::lend_out(self.outs, c);
        c.principal = None;
        if status != 200 {
            // A `405` closes the connection, as every method refusal does (docs/http.md).
            c.keep_alive &= status != 405;
            if status == 429 {
                c.refused = Some((Refusal::TooManyStreams, 429));
            }
            respond_empty(c, now, status, refusal_headers(status));
            return;
        }
        let Some(r) = attached else { return };
        if let Some((stream, seen)) = resume
            && self.parked.find(|st| st.session == r && st.stream == stream).is_none()
            && let Some(c) = self.slots[slot as usize].conn.as_mut()
            && event_store::begin_events_load(
                self.store.events_on(),
                self.sessions,
                c,
                (r, stream, seen),
                self.now + self.http.store_timeout,
            )
        {
            self.store.ask(StoreAsk::Events(slot));
            return; // the host's event store has what this engine does not
        }
        self.serve_stream(slot, r, resume, None);
    }

    /// Checks an ask of the client of session `session_id` (see
    /// [`HttpEngine::ask_client`](crate::http::HttpEngine::ask_client)) and gives it to the
    /// core for the session's standalone stream: the outer error is a refusal before the
    /// core was asked, the inner result the core's.
    pub(in crate::http) fn ask_client(
        &mut self,
        session_id: &str,
        request: &InputRequest<'_>,
    ) -> Result<Result<ClientAsk, AskError>, AskError> {
        let r = self.sessions.held(session_id.as_bytes()).ok_or(AskError::NoSession)?;
        let e = self.sessions.get(r).ok_or(AskError::NoSession)?;
        let session = (e.session.serial, e.session.caps);
        if !request.declared_by(e.session.caps) {
            return Err(AskError::NotDeclared(request.kind()));
        }
        let standalone = e.standalone;
        let (slot, generation) = e.stream.ok_or(AskError::NoStream)?;
        let c = conn_in(self.slots, ConnId { slot, generation }).ok_or(AskError::NoStream)?;
        let open = c.phase == Phase::Waiting
            && c.streaming
            && c.sse.is_some_and(|st| st.session == r && st.stream == standalone);
        if !open {
            return Err(AskError::NoStream);
        }
        if c.out.len() >= MAX_UNSENT {
            return Err(AskError::Backpressure);
        }
        Ok(self.core.ask_client(Route::Http { conn: slot, generation }, Some(session), request))
    }

    /// Whether the client of the `GET` in `slot` for session `r` (the session's principal,
    /// else the connection's client address) may open one more long-lived stream.
    fn stream_room(&self, r: SessionRef, slot: u32) -> bool {
        let addr = self.slots.get(slot as usize).and_then(|s| s.conn.as_ref()).and_then(|c| c.client);
        let principal = self.sessions.get(r).and_then(|e| e.principal);
        self.shares.has_room(ClientKey::of(principal, addr), self.http.max_streams_per_client)
    }

    /// Whether another connection holds the standalone stream of session `r` open.
    fn standalone_open(&self, r: SessionRef, slot: u32, generation: u32) -> bool {
        self.sessions.get(r).and_then(|e| e.stream).is_some_and(|(s, g)| {
            (s, g) != (slot, generation)
                && self.slots.get(s as usize).and_then(|x| x.conn.as_ref()).is_some_and(|o| o.generation == g)
        })
    }

    /// Serves the `GET` of `slot` for session `r`, resuming `resume` (stream, last event
    /// seen) from this engine's buffer, or from `stored` (the host's event store): the
    /// head, what was missed, then the standalone stream, or the rest of a request's
    /// stream (see the module docs of `stored` for one another node may still write).
    pub(in crate::http) fn serve_stream(
        &mut self,
        slot: u32,
        r: SessionRef,
        resume: Option<(u32, u32)>,
        stored: Option<&[StoredEvent<'_>]>,
    ) {
        let now = self.now;
        let keepalive = self.http.sse_keepalive;
        let generation = self.slots[slot as usize].generation;
        let standalone = resume.is_none_or(|(stream, _)| is_standalone(stream));
        // Asked again after a wait for the store: the session may have ended meanwhile,
        // or opened its standalone stream on another connection.
        let refusal = match self.sessions.get(r) {
            None => Some(404),
            Some(_) if standalone && self.standalone_open(r, slot, generation) => Some(409),
            Some(_) if standalone && !self.stream_room(r, slot) => Some(429),
            Some(_) => None,
        };
        let priming = self.sessions.get(r).is_some_and(|e| e.session.legacy == Some(Revision::V2025_11_25));
        let client = ClientKey::of(
            self.sessions.get(r).and_then(|e| e.principal),
            self.slots[slot as usize].conn.as_ref().and_then(|c| c.client),
        );
        let wall = self.core.clock().wall;
        let Some(c) = self.slots[slot as usize].conn.as_mut() else { return };
        conns::lend_out(self.outs, c);
        if let Some(status) = refusal {
            if status == 429 {
                c.refused = Some((Refusal::TooManyStreams, 429));
            }
            respond_empty(c, now, status, refusal_headers(status));
            return;
        }
        let close = !c.keep_alive;
        c.streaming = true;
        c.write_sse_head(now, close);
        let mut ended = true;
        match (resume, stored) {
            (Some(at), Some(events)) => {
                ended = replay_stored(c, self.sessions, r, at, events, self.store.replay_max(), now)
            }
            (Some((stream, seen)), None) => replay(c, self.sessions, r, stream, seen, now),
            (None, _) => {}
        }
        if let (false, Some((stream, _))) = (standalone, resume) {
            let here = Route::Http { conn: slot, generation };
            let parked = self.parked.find(|st| st.session == r && st.stream == stream);
            let Some(st) = parked.and_then(|p| self.parked.end(p).map(|st| (p, st))) else {
                if !ended {
                    // Its request may still run on the node that wrote it: come back for
                    // the rest.
                    c.write_sse_retry(now, self.http.resume_retry_ms());
                }
                // A request's stream whose request is over here: what it sent since is
                // replayed, then it ends.
                c.write_sse_end(now);
                c.streaming = false;
                finish(c, now, close);
                return;
            };
            // Its request goes on: the rest of it comes on this connection.
            let (from, st) = st;
            self.core.reroute(from, here);
            c.sse = Some(st);
            self.sessions.begin(r);
            self.session_timers.set(r.slot(), self.sessions.deadline(r));
            c.session = Some(r);
            c.phase = Phase::Waiting;
            return;
        }
        let Some(e) = self.sessions.get_mut(r) else { return };
        e.stream = Some((slot, generation));
        self.shares.open(slot, client, StreamKind::Standalone, now);
        // Opened with a grant that expires: it ends then, as a listen stream does (`expire`).
        c.deadline = c.grant.take().and_then(|g| g.1).and_then(|exp| instant_at(wall, now, exp));
        c.sse = Some(SessionStream { session: r, stream: e.standalone, seq: e.standalone_seq, priming });
        if resume.is_none() && priming {
            stream_event(c, self.sessions, self.store.keep_mut(), now, b"");
        }
        // An open stream keeps its session alive (see `settle`).
        self.sessions.begin(r);
        self.session_timers.set(r.slot(), self.sessions.deadline(r));
        c.session = Some(r);
        c.phase = Phase::Waiting;
        c.keepalive = (!keepalive.is_zero()).then(|| now + keepalive);
    }
}

/// The headers of a `GET` refused with `status`: `Allow` on a `405`, `Retry-After` on a
/// `429` (a client at its bound of long-lived streams: one frees only when one closes).
fn refusal_headers(status: u16) -> &'static [(&'static str, &'static str)] {
    match status {
        405 => &[("allow", "POST, DELETE")],
        429 => &[("retry-after", "5")],
        _ => &[],
    }
}

/// Writes `data` as the next event of `c`'s stream: with an id, and kept for
/// resumption (and handed to the host's event store), when it is a session's stream
/// (see `replay`).
pub(in crate::http) fn stream_event(
    c: &mut Exchange,
    sessions: &mut Sessions,
    keep: &mut Keep,
    now: Instant,
    data: &[u8],
) {
    stream_event_as(c, sessions, keep, now, data, false);
}

/// Writes `data` as the last event of `c`'s stream (its request's answer), as
/// [`stream_event`] does.
pub(in crate::http) fn stream_last(
    c: &mut Exchange,
    sessions: &mut Sessions,
    keep: &mut Keep,
    now: Instant,
    data: &[u8],
) {
    stream_event_as(c, sessions, keep, now, data, true);
}

fn stream_event_as(
    c: &mut Exchange,
    sessions: &mut Sessions,
    keep: &mut Keep,
    now: Instant,
    data: &[u8],
    last: bool,
) {
    let Some(mut st) = c.sse else { return c.write_sse_event(now, data) };
    st.seq = st.seq.wrapping_add(1);
    c.sse = Some(st);
    let Some(id) = sessions.event_id(st.session, st.stream, st.seq) else {
        return c.write_sse_event(now, data); // its session ended meanwhile
    };
    c.write_sse_event_with_id(now, core::str::from_utf8(&id).unwrap_or_default(), data);
    if let Some(e) = sessions.get_mut(st.session) {
        if st.stream == e.standalone {
            e.standalone_seq = st.seq;
        }
        e.replay.push(st.stream, st.seq, data, keep.max);
        keep.hand_over(&e.id, st.stream, st.seq, data, last);
    }
}

/// Opens `c`'s SSE response: the head, and the priming event (an id, no data) of a
/// `2025-11-25` session's stream.
pub(in crate::http) fn stream_head(
    c: &mut Exchange,
    sessions: &mut Sessions,
    keep: &mut Keep,
    now: Instant,
    close: bool,
) {
    c.write_sse_head(now, close);
    if c.sse.is_some_and(|s| s.priming) {
        stream_event(c, sessions, keep, now, b"");
    }
}

/// Writes again, with their ids, the events of `stream` of session `r` after `seen`,
/// after a `: gap` comment when some of them are no longer kept.
fn replay(c: &mut Exchange, sessions: &Sessions, r: SessionRef, stream: u32, seen: u32, now: Instant) {
    let Some(e) = sessions.get(r) else { return };
    let missed = e.replay.since(stream, seen);
    if missed.gap {
        c.write_sse_note(now, "gap: events after Last-Event-ID were dropped from the replay buffer");
    }
    for (seq, data) in missed.events {
        match sessions.event_id(r, stream, seq) {
            Some(id) => c.write_sse_event_with_id(now, core::str::from_utf8(&id).unwrap_or_default(), data),
            None => c.write_sse_event(now, data),
        }
    }
}
