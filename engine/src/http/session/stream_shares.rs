//! Who holds the long-lived streams. A session's standalone `GET` stream and a
//! `subscriptions/listen` stream stay open as long as their client likes, each on a
//! connection of its own: left alone, one client could hold every connection with them and
//! lock everyone else out. This table counts them per client ([`ClientKey`]: the
//! principal, else the address, IPv6 by `/64`), so that a client is refused past
//! `HttpConfig::max_streams_per_client`, and names the stream to end when a new connection
//! finds every connection busy ([`StreamShares::victim`]: the oldest stream of the client
//! holding the most). It also counts the connections of streams ended that way that still
//! send their last chunk ([`StreamShares::draining`]).
//!
//! A leaf keyed by connection slot: the connection table keeps it up to date (a stream is
//! recorded when it opens, released when its connection leaves the stream, forgotten with
//! the connection). It allocates only when it grows (a slot or a client it has not seen
//! held at once before); nothing per request.

use hashbrown::HashMap;

use crate::error::PeerError;
use crate::http::auth::client::ClientKey;
use crate::time::Instant;

/// What kind of stream a connection holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// A session's standalone `GET` stream (`2025-11-25`, `2025-06-18`).
    Standalone,
    /// A `subscriptions/listen` stream (`2026-07-28`).
    Listen,
}

/// What a connection slot holds.
#[derive(Debug, Clone, Copy)]
enum Held {
    /// A stream of `client` (`None`: a request with neither principal nor address, which
    /// no per-client bound counts), open since `since`.
    Stream { client: Option<ClientKey>, kind: StreamKind, since: Instant },
    /// A stream ended to make room, whose connection still sends its last chunk.
    Draining,
}

/// The streams one client holds.
#[derive(Debug, Clone, Copy, Default)]
struct Count {
    streams: u32,
    listens: u32,
}

/// The long-lived streams, by connection slot and by client (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct StreamShares {
    by_slot: Vec<Option<Held>>,
    per_client: HashMap<Option<ClientKey>, Count>,
    draining: usize,
}

impl StreamShares {
    /// Records that the connection in `slot` holds a stream of `client` from `now`.
    pub(crate) fn open(&mut self, slot: u32, client: Option<ClientKey>, kind: StreamKind, now: Instant) {
        self.forget(slot);
        let i = slot as usize;
        if self.by_slot.len() <= i {
            self.by_slot.resize(i + 1, None);
        }
        self.by_slot[i] = Some(Held::Stream { client, kind, since: now });
        let n = self.per_client.entry(client).or_default();
        n.streams += 1;
        n.listens += u32::from(kind == StreamKind::Listen);
    }

    /// Whether the connection in `slot` holds a stream (not one ending to make room).
    pub(crate) fn holds(&self, slot: u32) -> bool {
        matches!(self.by_slot.get(slot as usize), Some(Some(Held::Stream { .. })))
    }

    /// The stream of `slot` ended (its connection may go on serving requests); a
    /// connection sending the last chunk of a stream ended to make room stays counted.
    pub(crate) fn release(&mut self, slot: u32) {
        if self.holds(slot) {
            self.forget(slot);
        }
    }

    /// The connection in `slot` is gone: whatever it held is released.
    pub(crate) fn forget(&mut self, slot: u32) {
        let Some(held) = self.by_slot.get_mut(slot as usize).and_then(Option::take) else { return };
        match held {
            Held::Draining => self.draining -= 1,
            Held::Stream { client, kind, .. } => self.uncount(client, kind),
        }
    }

    /// The stream of `slot` was ended to make room: its connection sends its last chunk,
    /// then closes. It no longer counts against its client.
    pub(crate) fn drain(&mut self, slot: u32) {
        if let Some(h) = self.by_slot.get_mut(slot as usize)
            && let Some(Held::Stream { client, kind, .. }) = *h
        {
            *h = Some(Held::Draining);
            self.draining += 1;
            self.uncount(client, kind);
        }
    }

    fn uncount(&mut self, client: Option<ClientKey>, kind: StreamKind) {
        if let Some(n) = self.per_client.get_mut(&client) {
            n.streams -= 1;
            n.listens -= u32::from(kind == StreamKind::Listen);
            if n.streams == 0 {
                self.per_client.remove(&client);
            }
        }
    }

    /// Connections sending the last chunk of a stream ended to make room.
    pub(crate) fn draining(&self) -> usize {
        self.draining
    }

    /// Whether no stream is open (those ending aside).
    pub(crate) fn is_empty(&self) -> bool {
        self.per_client.is_empty()
    }

    /// Streams open (not counting those ending).
    pub(crate) fn len(&self) -> usize {
        self.per_client.values().map(|n| n.streams as usize).sum()
    }

    /// How many streams `client` holds (`None`: no per-client bound counts it).
    pub(crate) fn held_by(&self, client: Option<ClientKey>) -> usize {
        client.and_then(|c| self.per_client.get(&Some(c))).map_or(0, |n| n.streams as usize)
    }

    /// Whether `client` may open one more stream, under a bound of `max` per client.
    pub(crate) fn has_room(&self, client: Option<ClientKey>, max: usize) -> bool {
        self.held_by(client) < max
    }

    /// Why a `subscriptions/listen` of `client` would be refused, if it would: `max`
    /// streams of any kind held already, or `max_listens` listen streams.
    pub(crate) fn listen_refusal(
        &self,
        client: Option<ClientKey>,
        max: usize,
        max_listens: usize,
    ) -> Option<PeerError<'static>> {
        let n = self.per_client.get(&Some(client?)).copied().unwrap_or_default();
        if n.streams as usize >= max {
            Some(PeerError::TooManyStreamsForClient(max))
        } else if n.listens as usize >= max_listens {
            Some(PeerError::TooManySubscriptionsForPeer(max_listens))
        } else {
            None
        }
    }

    /// The stream to end when a new connection needs room: the oldest stream of the
    /// client holding the most (its slot and kind).
    pub(crate) fn victim(&self) -> Option<(u32, StreamKind)> {
        let (&client, _) = self.per_client.iter().max_by_key(|(_, n)| n.streams)?;
        let mut oldest: Option<(Instant, u32, StreamKind)> = None;
        for (i, h) in self.by_slot.iter().enumerate() {
            if let Some(Held::Stream { client: c, kind, since }) = *h
                && c == client
                && oldest.is_none_or(|(t, _, _)| since < t)
            {
                oldest = Some((since, i as u32, kind));
            }
        }
        oldest.map(|(_, slot, kind)| (slot, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn client(last: u8) -> Option<ClientKey> {
        Some(ClientKey::addr(core::net::IpAddr::from([192, 0, 2, last])))
    }

    fn at(secs: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(secs)
    }

    #[test]
    fn streams_are_counted_per_client_and_released() {
        let mut s = StreamShares::default();
        s.open(3, client(1), StreamKind::Standalone, at(0));
        s.open(7, client(1), StreamKind::Listen, at(1));
        s.open(9, client(2), StreamKind::Listen, at(2));
        assert_eq!((s.held_by(client(1)), s.held_by(client(2)), s.len()), (2, 1, 3));
        assert!(!s.has_room(client(1), 2) && s.has_room(client(2), 2));
        s.open(11, None, StreamKind::Standalone, at(3));
        assert!(s.has_room(None, 1), "no key: no per-client bound");
        s.forget(11);
        assert!(matches!(s.listen_refusal(client(1), 2, 4), Some(PeerError::TooManyStreamsForClient(2))));
        assert!(matches!(s.listen_refusal(client(2), 8, 1), Some(PeerError::TooManySubscriptionsForPeer(1))));
        assert!(s.listen_refusal(client(3), 1, 1).is_none());
        s.release(7);
        assert!(!s.holds(7) && s.holds(3));
        assert_eq!(s.held_by(client(1)), 1);
        s.forget(3);
        s.forget(9);
        assert_eq!(s.len(), 0);
        assert!(s.per_client.is_empty(), "a client holding nothing is not kept");
    }

    #[test]
    fn the_victim_is_the_oldest_stream_of_the_client_holding_the_most() {
        let mut s = StreamShares::default();
        assert_eq!(s.victim(), None);
        s.open(1, client(1), StreamKind::Standalone, at(5));
        s.open(2, client(2), StreamKind::Standalone, at(6));
        s.open(4, client(2), StreamKind::Listen, at(1));
        s.open(5, client(2), StreamKind::Standalone, at(3));
        assert_eq!(s.victim(), Some((4, StreamKind::Listen)));
        // Ending it to make room: its connection drains, its client holds one fewer.
        s.drain(4);
        assert_eq!((s.draining(), s.held_by(client(2)), s.holds(4)), (1, 2, false));
        s.release(4);
        assert_eq!(s.draining(), 1, "a draining connection stays counted until it is gone");
        assert_eq!(s.victim(), Some((5, StreamKind::Standalone)));
        s.forget(4);
        assert_eq!(s.draining(), 0);
    }
}
