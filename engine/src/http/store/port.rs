//! [`StorePort`]: the store protocol's own state, apart from the connections and sessions
//! whose requests wait on the store. It queues what the host's stores are told without
//! an answer (sessions expired here, the events of session streams for the event store)
//! and lends the bytes an event carries (the expired session's id, the session record
//! to save) until the next event is polled, and the connections' requests waiting to ask
//! the host's stores, in order ([`StoreAsk`]). It knows no connection and no engine: the
//! engine composes it with its connection table and session table, and hands the host
//! what the stores are asked as [`StoreEvent`]s
//! ([`HttpEngine::poll_store`](crate::http::HttpEngine::poll_store)). The two enums live in
//! the room's `mod.rs`, so the files whose payloads they carry import no sibling back.

use std::collections::VecDeque;

use crate::http::auth::authorize::Principal;
use crate::http::store::event_store::Keep;
use crate::http::store::session_record;
use crate::http::store::session_store::SessionExpired;
use crate::http::store::{StoreAsk, StoreEvent};
use crate::mcp::lifecycle::Session;
use crate::wire::session_id::SESSION_ID_LEN;

/// The store protocol's state (see the module docs).
#[derive(Debug)]
pub(in crate::http) struct StorePort {
    /// Sessions that expired, for the host's session store to hear of (store mode only).
    expired: VecDeque<[u8; SESSION_ID_LEN]>,
    /// The id the last [`SessionExpired`] lends.
    expired_id: [u8; SESSION_ID_LEN],
    /// The record the last `SaveSession` lends.
    record: Vec<u8>,
    /// The replay buffers' bound, and the events waiting for the host's event store.
    keep: Keep,
    /// Connections waiting to ask the host's stores, oldest first.
    asks: VecDeque<StoreAsk>,
}

impl StorePort {
    /// A port for replay buffers of at most `replay_buffer` bytes, handing the session
    /// streams' events to the host when `events` is on.
    pub(in crate::http) fn new(replay_buffer: usize, events: bool) -> Self {
        Self {
            expired: VecDeque::new(),
            expired_id: [0; SESSION_ID_LEN],
            record: Vec::new(),
            keep: Keep::new(replay_buffer, events),
            asks: VecDeque::new(),
        }
    }

    /// Turns handing events to the host's event store on or off.
    pub(in crate::http) fn set_events(&mut self, on: bool) {
        self.keep.on = on;
    }

    /// Whether events are handed to the host's event store.
    pub(in crate::http) fn events_on(&self) -> bool {
        self.keep.on
    }

    /// Events not handed over because the host did not take them fast enough.
    pub(in crate::http) fn events_dropped(&self) -> u64 {
        self.keep.dropped
    }

    /// The replay buffers' bound (`HttpConfig::replay_buffer`).
    pub(in crate::http) fn replay_max(&self) -> usize {
        self.keep.max
    }

    /// What the session streams keep, for the stream writers.
    pub(in crate::http) fn keep_mut(&mut self) -> &mut Keep {
        &mut self.keep
    }

    /// Tells the host's session store, at the next poll, that session `id` expired here.
    pub(in crate::http) fn session_expired(&mut self, id: [u8; SESSION_ID_LEN]) {
        self.expired.push_back(id);
    }

    /// Whether a store event without an answer waits (an expiry, an event to keep).
    pub(in crate::http) fn has_notice(&self) -> bool {
        !self.expired.is_empty() || self.keep.waiting()
    }

    /// The oldest expiry the host has not heard of; else the oldest event to keep.
    pub(in crate::http) fn next_notice(&mut self) -> Option<StoreEvent<'_>> {
        if let Some(id) = self.expired.pop_front() {
            self.expired_id = id;
            let id = core::str::from_utf8(&self.expired_id).unwrap_or_default();
            return Some(StoreEvent::SessionExpired(SessionExpired { id }));
        }
        self.keep.next().map(StoreEvent::AppendEvent)
    }

    /// Queues `ask`, for the host to hear of after the asks before it.
    pub(in crate::http) fn ask(&mut self, ask: StoreAsk) {
        self.asks.push_back(ask);
    }

    /// The oldest ask waiting.
    pub(in crate::http) fn next_ask(&mut self) -> Option<StoreAsk> {
        self.asks.pop_front()
    }

    /// Drops the asks of the connection in `slot` (it ended, or its wait did).
    pub(in crate::http) fn forget_asks(&mut self, slot: u32) {
        self.asks.retain(|a| a.slot() != slot);
    }

    /// Writes the record of `session` (created by `principal`) to lend with the next
    /// `SaveSession`.
    pub(in crate::http) fn write_record(&mut self, session: &Session, principal: Option<&Principal>) {
        session_record::encode(session, principal, &mut self.record);
    }

    /// The record [`write_record`](Self::write_record) wrote last.
    pub(in crate::http) fn record(&self) -> &[u8] {
        &self.record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_come_before_events_to_keep_and_each_lends_its_bytes() {
        let mut port = StorePort::new(1024, true);
        assert!(!port.has_notice());
        let id = [b'a'; SESSION_ID_LEN];
        port.keep_mut().hand_over(&id, 0, 1, b"data: 1\n\n", false);
        port.session_expired([b'b'; SESSION_ID_LEN]);
        assert!(port.has_notice());
        match port.next_notice() {
            Some(StoreEvent::SessionExpired(e)) => assert_eq!(e.id.as_bytes(), &[b'b'; SESSION_ID_LEN][..]),
            other => panic!("expected the expiry first, got {other:?}"),
        }
        match port.next_notice() {
            Some(StoreEvent::AppendEvent(e)) => {
                assert_eq!((e.stream, e.seq, e.data), (0, 1, &b"data: 1\n\n"[..]));
                assert_eq!(e.session.as_bytes(), &id[..]);
            }
            other => panic!("expected the event to keep, got {other:?}"),
        }
        assert!(port.next_notice().is_none());
        assert!(!port.has_notice());
    }

    #[test]
    fn asks_come_out_in_order_and_a_connection_s_asks_can_be_dropped() {
        let mut port = StorePort::new(1024, false);
        port.ask(StoreAsk::Load(1));
        port.ask(StoreAsk::Events(2));
        port.ask(StoreAsk::Save(1));
        port.ask(StoreAsk::Save(3));
        port.forget_asks(1);
        assert_eq!(port.next_ask(), Some(StoreAsk::Events(2)));
        assert_eq!(port.next_ask(), Some(StoreAsk::Save(3)));
        assert_eq!(port.next_ask(), None);
    }

    #[test]
    fn events_are_not_kept_while_the_event_store_is_off() {
        let mut port = StorePort::new(1024, false);
        port.keep_mut().hand_over(&[b'a'; SESSION_ID_LEN], 0, 1, b"x", false);
        assert!(!port.has_notice());
        port.set_events(true);
        assert!(port.events_on());
        port.keep_mut().hand_over(&[b'a'; SESSION_ID_LEN], 0, 2, b"y", true);
        assert!(port.has_notice());
        assert_eq!(port.events_dropped(), 0);
        assert_eq!(port.replay_max(), 1024);
    }
}
