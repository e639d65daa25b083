//! The connection table's bookkeeping: after every change to a connection, [`settle`]
//! re-arms its deadline in the timer table, keeps the list of sheddable connections
//! (oldest first) and the list of connections with output, releases a long-lived stream
//! its connection left (`stream_shares`), and returns the buffers it does not need to the
//! pools; [`expire`] acts on a deadline that passed; [`shed_one`], [`shed_stream`] and
//! [`forget`] end connections.
//!
//! [`settle`]: HttpEngine::settle
//! [`expire`]: HttpEngine::expire
//! [`shed_one`]: HttpEngine::shed_one
//! [`shed_stream`]: HttpEngine::shed_stream
//! [`forget`]: HttpEngine::forget

use crate::http::conn::exchange::{ConnSlot, Exchange, Framing, Phase, SessionStream, finish, refuse};
use crate::http::session::replay::is_standalone;
use crate::http::session::stream_shares::StreamKind;
use crate::http::{ConnId, HttpEngine, Refusal, conn_in};
use crate::jsonrpc::Flow;
use crate::output::Route;
use crate::time::Instant;

/// No slot (the end of a list).
pub(in crate::http) const NONE: u32 = u32::MAX;

/// What a standalone stream ended to make room tells its client to wait before it
/// resumes (`retry:`, milliseconds).
const SHED_RETRY_MS: u32 = 5_000;

/// At most one in this many of `max_connections` may be connections sending the last
/// chunk of a stream ended to make room; past that, such a stream is closed at once.
const DRAINING_SHARE: usize = 16;

/// Spare buffers kept per pool; more are freed.
const POOL_KEEP: usize = 64;

/// A buffer that grew larger than this is freed rather than pooled, so that connections
/// that hold a pooled buffer while they wait (a slow head) never pin large ones.
const POOL_MAX_CAPACITY: usize = 64 * 1024;

/// Whether `c` serves a session's standalone `GET` stream.
fn is_standalone_stream(c: &Exchange) -> bool {
    c.get && c.streaming && c.sse.is_some_and(|st| is_standalone(st.stream))
}

/// Puts `buf` back into `pool`, or frees it.
fn recycle(pool: &mut Vec<Vec<u8>>, mut buf: Vec<u8>) {
    if pool.len() < POOL_KEEP && buf.capacity() <= POOL_MAX_CAPACITY {
        buf.clear();
        pool.push(buf);
    }
}

/// Gives `c` an output buffer from `pool` if it has none.
pub(in crate::http) fn lend_out(pool: &mut Vec<Vec<u8>>, c: &mut Exchange) {
    if c.out.capacity() == 0
        && let Some(buf) = pool.pop()
    {
        c.out = buf;
    }
}

/// Ends the standalone stream of the session `e` (it was deleted): the stream's
/// last chunk, then the connection closes.
pub(in crate::http) fn end_stream(slots: &mut [ConnSlot], stream: Option<(u32, u32)>, now: Instant) {
    let Some((slot, generation)) = stream else { return };
    let Some(c) = conn_in(slots, ConnId { slot, generation }) else { return };
    if c.phase != Phase::Waiting || !c.streaming {
        return;
    }
    c.write_sse_end(now);
    c.streaming = false;
    c.keep_alive = false;
    finish(c, now, true);
}

impl HttpEngine {
    /// Brings the table's view of `slot` up to date with the connection's state.
    pub(in crate::http) fn settle(&mut self, slot: u32) {
        let now = self.last_now;
        let Some(s) = self.slots.get_mut(slot as usize) else { return };
        let Some(c) = s.conn.as_mut() else {
            self.timers.set(slot, None);
            self.unlink(slot);
            self.in_flight.release(slot);
            return;
        };
        self.refusals.collect(slot, c);
        if c.phase == Phase::Head && c.deadline.is_none() && !c.codec.is_idle() {
            // Bytes of a next request arrived while the last one was served: its head is
            // due from now.
            c.deadline = Some(now + self.http.head_timeout);
        }
        if matches!(c.phase, Phase::Head | Phase::Closing)
            && let Some(buf) = c.codec.take_buffer()
        {
            recycle(&mut self.bufs, buf);
        }
        if c.out.is_empty() && c.out.capacity() != 0 {
            recycle(&mut self.outs, core::mem::take(&mut c.out));
        }
        if c.sendable() != 0 && !s.sending {
            s.sending = true;
            self.sending.push(slot);
        }
        if c.phase != Phase::Waiting
            && let Some(r) = c.session.take()
        {
            // Its session's request is over: the session's idle time starts.
            self.sessions.end(r, now);
            self.session_timers.set(r.slot(), self.sessions.deadline(r));
        }
        let due = c.due(&self.http);
        let sheddable = c.sheddable();
        if c.phase != Phase::Waiting {
            // The connection left its stream, if it held one (a listen ended, a
            // standalone stream's last chunk written), and its request, if the host had
            // one of it.
            self.shares.release(slot);
            self.in_flight.release(slot);
        }
        self.timers.set(slot, due);
        if sheddable != self.slots[slot as usize].linked {
            if sheddable {
                self.link(slot);
            } else {
                self.unlink(slot);
            }
        }
    }

    /// Acts on `slot`'s deadline, which passed at `now`.
    pub(in crate::http) fn expire(&mut self, slot: u32, now: Instant) {
        let (write_timeout, keepalive) = (self.http.write_timeout, self.http.sse_keepalive);
        let Some(c) = self.slots.get_mut(slot as usize).and_then(|s| s.conn.as_mut()) else { return };
        let id = ConnId { slot, generation: c.generation };
        let stalled = c.framing == Framing::Wire && c.sendable() != 0 && c.write_since + write_timeout <= now;
        if stalled || (c.phase == Phase::Head && c.codec.is_idle() && c.out.is_empty()) {
            // A peer that takes no output, or a connection idle past its timeout: there
            // is nothing to say to it.
            self.end(slot, id);
            return;
        }
        match c.phase {
            Phase::Head | Phase::Body if c.deadline.is_some_and(|d| d <= now) => {
                lend_out(&mut self.outs, c);
                let late = if c.phase == Phase::Head { Refusal::HeadTimeout } else { Refusal::BodyTimeout };
                refuse(c, now, late, &[]);
            }
            Phase::Loading | Phase::Saving if c.deadline.is_some_and(|d| d <= now) => {
                // The session store did not answer in time.
                self.store_failed(slot, now);
                return;
            }
            Phase::Waiting if c.deadline.is_some_and(|d| d <= now) && is_standalone_stream(c) => {
                // A session's standalone stream opened with a grant that expired ends, as a
                // listen stream does: its last chunk, then the connection closes; the
                // client authorizes again to open another.
                lend_out(&mut self.outs, c);
                c.write_sse_end(now);
                c.streaming = false;
                c.keep_alive = false;
                finish(c, now, true);
            }
            Phase::Waiting if c.deadline.is_some_and(|d| d <= now) => {
                // The host took longer than `request_timeout` (or a listen stream's grant
                // expired): the client hears so, the host is told the request is over.
                c.deadline = None;
                self.core.time_out_route(Route::Http { conn: slot, generation: id.generation });
                self.collect_answers();
            }
            Phase::Waiting if c.keepalive.is_some_and(|k| k <= now) => {
                lend_out(&mut self.outs, c);
                c.write_sse_comment(now);
                c.keepalive = Some(now + keepalive);
            }
            _ => {}
        }
        self.settle(slot);
    }

    /// Ends the connection that has been sheddable longest, if any, to make room.
    pub(in crate::http) fn shed_one(&mut self) -> bool {
        let slot = self.shed_head;
        let Some(generation) =
            self.slots.get(slot as usize).and_then(|s| s.conn.as_ref()).map(|c| c.generation)
        else {
            return false;
        };
        self.end(slot, ConnId { slot, generation });
        true
    }

    /// Ends a long-lived stream to make room for a new connection when no connection is
    /// idle: the oldest stream of the client holding the most (`StreamShares::victim`).
    /// A standalone stream gets `retry:` and its last chunk (its client resumes it with
    /// `Last-Event-ID`), a listen stream its closing result; the connection closes once
    /// that is sent, and does not count against `max_connections` meanwhile. Past
    /// `max_connections / 16` such connections at once, the stream's connection is closed
    /// at once instead (reported by `poll_ended`). Returns whether a stream was ended.
    pub(in crate::http) fn shed_stream(&mut self) -> bool {
        let now = self.last_now;
        let drain_max = (self.http.max_connections / DRAINING_SHARE).max(1);
        while let Some((slot, kind)) = self.shares.victim() {
            let Some(c) = self.slots.get_mut(slot as usize).and_then(|s| s.conn.as_mut()) else {
                self.shares.forget(slot);
                continue;
            };
            if c.phase != Phase::Waiting || !c.streaming {
                self.shares.release(slot); // not a stream any more (kept up to date by `settle`)
                continue;
            }
            let id = ConnId { slot, generation: c.generation };
            if self.shares.draining() >= drain_max {
                self.end(slot, id);
                return true;
            }
            lend_out(&mut self.outs, c);
            c.keep_alive = false;
            match kind {
                StreamKind::Standalone => {
                    c.write_sse_retry(now, SHED_RETRY_MS);
                    c.write_sse_end(now);
                    c.streaming = false;
                    finish(c, now, true);
                }
                StreamKind::Listen => {
                    // Ended as the server ends a listen stream (as at its grant's expiry):
                    // the closing result is its last event.
                    c.deadline = None;
                    self.core.time_out_route(Route::Http { conn: slot, generation: id.generation });
                    self.collect_answers();
                }
            }
            let closing = self.slots[slot as usize].conn.as_ref().is_some_and(|c| c.phase == Phase::Closing);
            if closing {
                self.shares.drain(slot);
                self.settle(slot);
            } else {
                self.end(slot, id); // nothing ended it (its subscription was gone): closed at once
            }
            return true;
        }
        false
    }

    /// Forgets a connection the engine ends on its own, and reports it.
    fn end(&mut self, slot: u32, id: ConnId) {
        self.forget(slot);
        self.ended.push_back(id);
    }

    /// Forgets the connection in `slot`: its request is cancelled, its buffers pooled.
    pub(in crate::http) fn forget(&mut self, slot: u32) {
        let Some(s) = self.slots.get_mut(slot as usize) else { return };
        let Some(mut c) = s.conn.take() else { return };
        let route = Route::Http { conn: slot, generation: c.generation };
        // A session's request stream outlives its connection (disconnection is not
        // cancellation there): parked, for the client to resume; else the request is
        // cancelled.
        match c.sse {
            Some(st)
                if c.streaming
                    && c.phase == Phase::Waiting
                    && !is_standalone(st.stream)
                    && self.core.has_route(route) =>
            {
                self.park(st, route);
            }
            _ => self.core.cancel_route(route),
        }
        if let Some(r) = c.session.take() {
            self.sessions.end(r, self.last_now);
            self.session_timers.set(r.slot(), self.sessions.deadline(r));
        }
        if let Some(r) = c.pinned.take() {
            self.sessions.unpin(r);
        }
        self.asks.retain(|a| a.slot() != slot);
        self.store.forget_asks(slot);
        c.codec.discard_body();
        if let Some(buf) = c.codec.take_buffer() {
            recycle(&mut self.bufs, buf);
        }
        if c.out.capacity() != 0 {
            recycle(&mut self.outs, core::mem::take(&mut c.out));
        }
        self.shares.forget(slot);
        self.in_flight.release(slot);
        self.open -= 1;
        self.free.push(slot);
        self.timers.set(slot, None);
        self.unlink(slot);
    }

    /// Whether the complete request in `slot` needs a ticket slot: a request the host is
    /// asked to do work for does; a `GET`, a `DELETE`, the metadata document, a
    /// notification, a client's response to a request of the server's, and anything
    /// malformed do not, and are served while every slot is busy (a request holding a
    /// slot may be waiting for that very response).
    pub(in crate::http) fn waits_for_slot(&mut self, slot: u32) -> bool {
        let Some(c) = self.slots.get_mut(slot as usize).and_then(|s| s.conn.as_mut()) else { return false };
        if c.get || c.delete || c.metadata {
            return false;
        }
        let (_, body, _) = c.codec.head_body_and_spans();
        self.parser.peek(body, &mut self.peek, |parsed| parsed.is_ok_and(|n| Flow::of(n) == Flow::Ticketed))
    }

    /// Parks the stream `st` of the request answering on `route`, for its client to
    /// resume with `Last-Event-ID`; returns the route its tickets now answer on. Where
    /// nobody can resume it (its session has ended) or every parking place is taken, the
    /// request is cancelled instead.
    pub(in crate::http) fn park(&mut self, st: SessionStream, route: Route) -> Option<Route> {
        let parked = if self.sessions.get(st.session).is_some() {
            let core = &self.core;
            self.parked.drain(|_, r| !core.has_route(r));
            self.parked.park(st, self.core.config().max_in_flight)
        } else {
            None
        };
        match parked {
            Some(to) => self.core.reroute(route, to),
            None => self.core.cancel_route(route),
        }
        parked
    }

    /// Drops from the output list the connections that have nothing to send.
    pub(in crate::http) fn prune_sending(&mut self) {
        let slots = &mut self.slots;
        self.sending.retain(|&i| {
            let s = &mut slots[i as usize];
            let keep = s.conn.as_ref().is_some_and(|c| c.sendable() != 0);
            s.sending = keep;
            keep
        });
    }

    /// Appends `slot` to the sheddable list.
    fn link(&mut self, slot: u32) {
        let tail = self.shed_tail;
        {
            let s = &mut self.slots[slot as usize];
            s.prev = tail;
            s.next = NONE;
            s.linked = true;
        }
        match tail {
            NONE => self.shed_head = slot,
            t => self.slots[t as usize].next = slot,
        }
        self.shed_tail = slot;
    }

    /// Takes `slot` out of the sheddable list, if it is in it.
    fn unlink(&mut self, slot: u32) {
        let Some(s) = self.slots.get_mut(slot as usize) else { return };
        if !s.linked {
            return;
        }
        let (prev, next) = (s.prev, s.next);
        s.linked = false;
        s.prev = NONE;
        s.next = NONE;
        match prev {
            NONE => self.shed_head = next,
            p => self.slots[p as usize].next = next,
        }
        match next {
            NONE => self.shed_tail = prev,
            n => self.slots[n as usize].prev = prev,
        }
    }
}
