//! The host's event store, sans-IO ([`HttpConfig::event_store`]): the events of every
//! session stream handed to the host to keep ([`AppendEvent`]), and a `Last-Event-ID`
//! this engine cannot replay from its memory answered from what the host kept
//! ([`LoadEvents`], [`HttpEngine::events_loaded`](crate::http::HttpEngine::events_loaded)), so that a stream written on one node
//! resumes on another.
//!
//! Handing over: each event written on a session stream (live, or parked while its
//! client is away) is queued here as it is written (its session id, stream, number,
//! bytes, and whether it is the stream's last: the answer to its request) and lent to
//! the host with [`HttpEngine::poll_store`](crate::http::HttpEngine::poll_store), oldest first; nothing waits for the host.
//! The queue holds at most [`QUEUE_EVENTS`] events and 4 × `replay_buffer` bytes
//! (reserved when the first event is queued, then reused): an event that finds it full
//! (a host that does not drain its events) is not handed over, and a later replay from
//! the store reports the hole as a gap.
//!
//! Resuming: a `GET` whose `Last-Event-ID` verified under the key for the session the
//! request is authorized for, naming a stream this engine's buffer does not cover (it
//! never wrote the stream, or dropped events after the one named), waits in
//! [`Phase::Loading`] for the host (bounded by [`HttpConfig::store_timeout`]; a store
//! that fails or does not answer makes it `503` with `Retry-After`). The events come back
//! oldest first and are written with their own ids; `: gap` comes first when some are
//! missing. Then the stream goes on as a resumption from memory does (see `streams`),
//! except for a request stream whose last event the store does not hold and which is not
//! parked here: its request may still run on the node that wrote it, so the stream ends
//! with `retry:` ([`HttpConfig::resume_retry`]) and the client asks again with the last
//! id it got, until the answer is among the events.

use std::collections::VecDeque;

use crate::http::ConnId;
use crate::http::conn::exchange::{ConnSlot, Exchange, Phase};
use crate::http::session::sessions::{SessionRef, Sessions};
#[cfg(doc)]
use crate::http::store::StoreAsk;
use crate::http::store::StoreEvent;
use crate::time::Instant;
use crate::wire::session_id::SESSION_ID_LEN;

/// An event written on a session's SSE stream ([`StoreEvent::AppendEvent`]): keep it for
/// `Last-Event-ID` resumption on any node sharing the store. No answer is expected.
/// Events of one stream come in order, numbered from 1 without holes (a hole means an
/// event was not handed over); keep at most a bounded number of them per stream and per
/// session, dropping the oldest first, and forget them with the session.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AppendEvent<'a> {
    /// The session's id (the session store's key).
    pub session: &'a str,
    /// The stream, within the session.
    pub stream: u32,
    /// The event's number in its stream.
    pub seq: u32,
    /// The event's data (the SSE `data:` payload, a JSON-RPC message; empty for a
    /// priming event).
    pub data: &'a [u8],
    /// The last event of its stream (the answer that ends a request's stream).
    pub last: bool,
}

/// A client resumes a stream this engine cannot replay from memory
/// ([`StoreEvent::LoadEvents`]): answer with
/// [`HttpEngine::events_loaded`](crate::http::HttpEngine::events_loaded), giving the
/// kept events of `stream` of `session` numbered `from` or later, oldest first.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LoadEvents<'a> {
    /// The connection whose `GET` waits.
    pub conn: ConnId,
    /// The session's id.
    pub session: &'a str,
    /// The stream.
    pub stream: u32,
    /// The number of the last event the client saw (give it too, if kept: it shows
    /// that nothing after it was dropped).
    pub from: u32,
}

/// One event of a [`LoadedEvents::Events`] answer, as an [`AppendEvent`] gave it.
#[derive(Debug, Clone, Copy)]
pub struct StoredEvent<'r> {
    /// Its number in its stream.
    pub seq: u32,
    /// Its data.
    pub data: &'r [u8],
    /// Whether it was its stream's last.
    pub last: bool,
}

/// The answer to a [`LoadEvents`].
#[derive(Debug, Clone, Copy)]
pub enum LoadedEvents<'r> {
    /// The kept events, oldest first (none: the store keeps nothing of the stream).
    Events(&'r [StoredEvent<'r>]),
    /// The store could not be asked: the `GET` is answered `503` with `Retry-After`.
    Unavailable,
}

/// At most this many events wait for the host to take them.
pub(crate) const QUEUE_EVENTS: usize = 1024;

#[derive(Debug, Clone, Copy)]
struct Queued {
    id: [u8; SESSION_ID_LEN],
    stream: u32,
    seq: u32,
    start: usize,
    len: usize,
    last: bool,
}

/// What the session streams keep: the replay buffers' bound, and (event store on) the
/// events waiting for the host.
#[derive(Debug)]
pub(crate) struct Keep {
    /// `HttpConfig::replay_buffer`.
    pub(crate) max: usize,
    /// Events are handed to the host (`HttpConfig::event_store` with the session store).
    pub(crate) on: bool,
    queue: VecDeque<Queued>,
    bytes: Vec<u8>,
    /// The session id the last [`AppendEvent`] lends.
    lent: [u8; SESSION_ID_LEN],
    /// Events not handed over because the queue was full.
    pub(crate) dropped: u64,
}

impl Keep {
    pub(crate) fn new(max: usize, on: bool) -> Self {
        Self { max, on, queue: VecDeque::new(), bytes: Vec::new(), lent: [0; SESSION_ID_LEN], dropped: 0 }
    }

    fn cap(&self) -> usize {
        self.max.saturating_mul(4).max(64 * 1024)
    }

    /// Queues event `seq` of `stream` of the session with id `id` for the host (event
    /// store on; else nothing).
    pub(crate) fn hand_over(
        &mut self,
        id: &[u8; SESSION_ID_LEN],
        stream: u32,
        seq: u32,
        data: &[u8],
        last: bool,
    ) {
        if !self.on {
            return;
        }
        let cap = self.cap();
        if self.bytes.capacity() == 0 {
            self.bytes.reserve_exact(cap);
            self.queue.reserve_exact(QUEUE_EVENTS);
        }
        match self.queue.front() {
            None => self.bytes.clear(),
            Some(front) if self.bytes.len() + data.len() > cap => {
                // Move what the host has not taken yet to the front.
                let cut = front.start;
                self.bytes.copy_within(cut.., 0);
                self.bytes.truncate(self.bytes.len() - cut);
                for q in &mut self.queue {
                    q.start -= cut;
                }
            }
            Some(_) => {}
        }
        if self.queue.len() >= QUEUE_EVENTS || self.bytes.len() + data.len() > cap {
            self.dropped += 1;
            return;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(data);
        self.queue.push_back(Queued { id: *id, stream, seq, start, len: data.len(), last });
    }

    /// Whether an event waits for the host.
    pub(crate) fn waiting(&self) -> bool {
        !self.queue.is_empty()
    }

    /// The oldest event waiting for the host.
    pub(crate) fn next(&mut self) -> Option<AppendEvent<'_>> {
        let q = self.queue.pop_front()?;
        self.lent = q.id;
        Some(AppendEvent {
            session: core::str::from_utf8(&self.lent).unwrap_or_default(),
            stream: q.stream,
            seq: q.seq,
            data: &self.bytes[q.start..q.start + q.len],
            last: q.last,
        })
    }
}

/// Whether the `GET` in `c` resuming `stream` of `r` after `seen` must ask the host
/// (`events_on`: the event store is on, and this engine's buffer does not cover it); if
/// so it waits for the answer until `deadline` (the caller queues its
/// [`StoreAsk::Events`]).
pub(in crate::http) fn begin_events_load(
    events_on: bool,
    sessions: &Sessions,
    c: &mut Exchange,
    (r, stream, seen): (SessionRef, u32, u32),
    deadline: Instant,
) -> bool {
    if !events_on || sessions.get(r).is_none_or(|e| e.replay.covers(stream, seen)) {
        return false;
    }
    c.resume = Some((r, stream, seen));
    c.phase = Phase::Loading;
    c.deadline = Some(deadline);
    true
}

/// The event of a [`StoreAsk::Events`] for the connection in `slot`.
pub(in crate::http) fn load_events<'a>(
    slots: &[ConnSlot],
    sessions: &'a Sessions,
    slot: u32,
) -> Option<StoreEvent<'a>> {
    let s = &slots[slot as usize];
    let c = s.conn.as_ref().filter(|c| c.phase == Phase::Loading)?;
    let (r, stream, from) = c.resume?;
    let conn = ConnId { slot, generation: s.generation };
    let e = sessions.get(r)?;
    let session = core::str::from_utf8(&e.id).ok()?;
    Some(StoreEvent::LoadEvents(LoadEvents { conn, session, stream, from }))
}

/// What a [`LoadedEvents`] answer does to the `GET` in `c`: `None` when it waits for no
/// events (the answer is ignored); the stream to replay, with the events to write, when
/// the store answered (`c` is ready to serve it); `Some(None)` when the store was
/// unavailable.
#[allow(clippy::type_complexity)]
pub(in crate::http) fn take_loaded<'r>(
    c: &mut Exchange,
    found: LoadedEvents<'r>,
) -> Option<Option<(SessionRef, (u32, u32), &'r [StoredEvent<'r>])>> {
    if c.phase != Phase::Loading {
        return None;
    }
    let (r, stream, seen) = c.resume?; // else it waits for its session
    let LoadedEvents::Events(events) = found else { return Some(None) };
    c.resume = None;
    c.deadline = None;
    c.phase = Phase::Ready;
    Some(Some((r, (stream, seen), events)))
}

/// Writes again the events of `stream` of session `r` after `seen` that the store gave
/// (`events`, oldest first), with their ids, at most `max` bytes of them (the newest);
/// `: gap` first when some are missing (the one after `seen` is not the first given, a
/// number is skipped, or more than `max` bytes were given). Returns whether the stream's
/// last event was among them (or was the one the client saw).
pub(in crate::http) fn replay_stored(
    c: &mut Exchange,
    sessions: &Sessions,
    r: SessionRef,
    (stream, seen): (u32, u32),
    events: &[StoredEvent<'_>],
    max: usize,
    now: Instant,
) -> bool {
    let ended = events.iter().any(|e| e.last && e.seq >= seen);
    let after = events.iter().position(|e| e.seq > seen).unwrap_or(events.len());
    let mut missed = &events[after..];
    // Nothing dropped before the first one given: it follows `seen`, or `seen` itself
    // was given (what follows it was kept).
    let mut gap = match missed.first() {
        Some(first) => first.seq > seen.saturating_add(1) && !events[..after].iter().any(|e| e.seq == seen),
        None => !events.iter().any(|e| e.seq == seen),
    };
    gap |= missed.windows(2).any(|w| w[1].seq != w[0].seq.wrapping_add(1));
    let mut bytes: usize = missed.iter().map(|e| e.data.len()).sum();
    while bytes > max && !missed.is_empty() {
        bytes -= missed[0].data.len();
        missed = &missed[1..];
        gap = true;
    }
    if gap {
        c.write_sse_note(now, "gap: events after Last-Event-ID were dropped from the replay buffer");
    }
    for e in missed {
        match sessions.event_id(r, stream, e.seq) {
            Some(id) => c.write_sse_event_with_id(now, core::str::from_utf8(&id).unwrap_or_default(), e.data),
            None => c.write_sse_event(now, e.data),
        }
    }
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_events_come_out_in_order_and_a_full_queue_drops_new_ones() {
        let mut k = Keep::new(16 * 1024, true);
        let id = [b'a'; SESSION_ID_LEN];
        k.hand_over(&id, 3, 1, b"one", false);
        k.hand_over(&id, 3, 2, b"two", true);
        let e = k.next().unwrap();
        assert_eq!((e.stream, e.seq, e.data, e.last), (3, 1, &b"one"[..], false));
        assert_eq!(e.session.as_bytes(), &id[..]);
        let e = k.next().unwrap();
        assert_eq!((e.seq, e.data, e.last), (2, &b"two"[..], true));
        assert!(k.next().is_none());
        // Not drained: at the bound, new events are dropped and counted.
        for seq in 0..QUEUE_EVENTS as u32 + 5 {
            k.hand_over(&id, 1, seq, b"x", false);
        }
        assert_eq!(k.dropped, 5);
        assert_eq!(k.next().unwrap().seq, 0, "the oldest are kept");
        // Bytes: 64 KiB at least; an event that does not fit is dropped.
        let mut k = Keep::new(10, true);
        k.hand_over(&id, 1, 1, &[1; 40 * 1024], false);
        k.hand_over(&id, 1, 2, &[2; 40 * 1024], false);
        assert_eq!(k.dropped, 1);
        assert_eq!(k.next().unwrap().seq, 1);
        // Once the host took it, the room is reused.
        k.hand_over(&id, 1, 3, &[3; 40 * 1024], false);
        assert_eq!(k.next().map(|e| (e.seq, e.data[0])), Some((3, 3)));
        let mut off = Keep::new(10, false);
        off.hand_over(&id, 1, 1, b"x", false);
        assert!(off.next().is_none(), "store off: nothing is handed over");
    }
}
