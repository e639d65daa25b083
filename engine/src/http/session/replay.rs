//! What a session's SSE streams sent lately, for `Last-Event-ID` resumption.
//!
//! Every event of a session-bound stream (the standalone `GET` stream, a `POST`'s SSE
//! response) has an id naming its stream and its sequence number in it
//! (`wire::session_id`, sealed to the session). The session keeps its recent events in
//! one buffer of at most [`HttpConfig::replay_buffer`](crate::http::HttpConfig::replay_buffer)
//! bytes, oldest dropped first: a client that comes back with the id of the last event it
//! saw gets the events of that stream it missed, and is told when some of them are no
//! longer kept (a gap) instead of getting a silently incomplete stream. At most 256 events
//! are kept, whatever their size. The buffer and its index grow as events come, doubling
//! up to their bound (a session that streams one small event holds a few hundred bytes,
//! not the whole bound), and are reused from then on: once a session's buffer has grown to
//! what its events need, nothing is allocated per event.

use std::collections::VecDeque;

/// One kept event: its stream, sequence number and bytes in [`Replay::bytes`].
#[derive(Debug, Clone, Copy)]
struct Kept {
    stream: u32,
    seq: u32,
    start: usize,
    len: usize,
}

/// How many streams' latest sequence numbers are remembered (for gap detection).
const STREAMS: usize = 64;
/// How many events are kept at most, whatever their size (a priming event has none).
const EVENTS: usize = 256;
/// The least the byte buffer grows to, once it holds any byte.
const MIN_BYTES: usize = 256;
/// The least the event index grows to.
const MIN_EVENTS: usize = 4;

/// The bit that marks the standalone stream of a session this engine loaded from the
/// store (the engine that created a session numbers its standalone stream 0): every
/// engine's standalone stream of one session has a number of its own, so their events
/// never share ids.
pub(crate) const STANDALONE: u32 = 1 << 31;

/// Whether stream `n` is a standalone `GET` stream (of this engine or another).
pub(crate) fn is_standalone(n: u32) -> bool {
    n == 0 || n & STANDALONE != 0
}

/// The recent events of one session's streams.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    kept: VecDeque<Kept>,
    bytes: Vec<u8>,
    /// The latest sequence number written on each of the most recent streams.
    latest: VecDeque<(u32, u32)>,
}

/// What a resumption gets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Missed<'a> {
    /// Events of the stream after the one named, oldest first: (sequence number, data).
    pub(crate) events: Vec<(u32, &'a [u8])>,
    /// Some events after the one named are no longer kept (or the stream is unknown).
    pub(crate) gap: bool,
}

impl Replay {
    /// Keeps event `seq` of `stream` (its data), dropping the oldest events to stay
    /// within `max` bytes. An event larger than `max` is not kept (a later resumption
    /// sees the gap).
    pub(crate) fn push(&mut self, stream: u32, seq: u32, data: &[u8], max: usize) {
        match self.latest.iter_mut().find(|(s, _)| *s == stream) {
            Some(l) => l.1 = seq,
            None => {
                if self.latest.len() == STREAMS {
                    self.latest.pop_front();
                }
                self.latest.push_back((stream, seq));
            }
        }
        if data.len() > max {
            return;
        }
        // Grow (doubling, within the bounds) before dropping anything: a buffer below its
        // bound keeps every event.
        let need = self.bytes.len() + data.len();
        if need > self.bytes.capacity() && self.bytes.capacity() < max {
            let to = need.max(self.bytes.capacity() * 2).max(MIN_BYTES).min(max);
            self.bytes.reserve_exact(to - self.bytes.len());
        }
        if self.kept.len() == self.kept.capacity() && self.kept.capacity() < EVENTS {
            let to = (self.kept.capacity() * 2).clamp(MIN_EVENTS, EVENTS);
            self.kept.reserve_exact(to - self.kept.len());
        }
        while self.bytes.len() + data.len() > max || self.kept.len() >= EVENTS {
            let Some(old) = self.kept.pop_front() else { break };
            // The oldest event is at the front of `bytes`: move the rest down.
            let cut = old.start + old.len;
            self.bytes.copy_within(cut.., 0);
            self.bytes.truncate(self.bytes.len() - cut);
            for k in &mut self.kept {
                k.start -= cut;
            }
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(data);
        self.kept.push_back(Kept { stream, seq, start, len: data.len() });
    }

    /// The bytes this buffer holds reserved: its events' bytes and its indexes (a
    /// diagnostic, for `HttpEngine::buffer_use`).
    pub(crate) fn held(&self) -> usize {
        self.bytes.capacity()
            + self.kept.capacity() * size_of::<Kept>()
            + self.latest.capacity() * size_of::<(u32, u32)>()
    }

    /// Whether this buffer can replay `stream` after `seq` with nothing missing: it wrote
    /// the stream (among the most recent ones) and still keeps every event after `seq`.
    /// Allocates nothing.
    pub(crate) fn covers(&self, stream: u32, seq: u32) -> bool {
        let Some(&(_, latest)) = self.latest.iter().find(|(s, _)| *s == stream) else { return false };
        match self.kept.iter().find(|k| k.stream == stream && k.seq > seq) {
            Some(first) => first.seq <= seq.saturating_add(1),
            None => latest <= seq,
        }
    }

    /// The events of `stream` after `seq` (the last one the client saw).
    pub(crate) fn since(&self, stream: u32, seq: u32) -> Missed<'_> {
        let events: Vec<(u32, &[u8])> = self
            .kept
            .iter()
            .filter(|k| k.stream == stream && k.seq > seq)
            .map(|k| (k.seq, &self.bytes[k.start..k.start + k.len]))
            .collect();
        let latest = self.latest.iter().find(|(s, _)| *s == stream).map(|(_, l)| *l);
        let gap = match (events.first(), latest) {
            (Some(&(first, _)), _) => first > seq.saturating_add(1),
            (None, Some(l)) => l > seq,
            (None, None) => true,
        };
        Missed { events, gap }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missed_events_come_back_in_order_and_a_gap_is_seen() {
        let mut r = Replay::default();
        for seq in 1..=5 {
            r.push(0, seq, format!("a{seq}").as_bytes(), 64);
            r.push(1, seq, format!("b{seq}").as_bytes(), 64);
        }
        let m = r.since(0, 2);
        assert_eq!(m.events, [(3, &b"a3"[..]), (4, b"a4"), (5, b"a5")]);
        assert!(!m.gap);
        assert_eq!(r.since(1, 5), Missed { events: vec![], gap: false }, "nothing missed");
        // A small buffer keeps only the newest events: the client learns it missed some.
        let mut small = Replay::default();
        for seq in 1..=10 {
            small.push(7, seq, b"0123456789", 30);
        }
        let m = small.since(7, 2);
        assert_eq!(m.events.iter().map(|e| e.0).collect::<Vec<_>>(), [8, 9, 10]);
        assert!(m.gap);
        assert!(!small.since(7, 7).gap);
        assert!(small.since(99, 0).gap, "an unknown stream");
        // Too big to keep: not kept, and seen as a gap.
        small.push(7, 11, &[b'x'; 31], 30);
        let m = small.since(7, 10);
        assert!(m.events.is_empty() && m.gap);
    }

    #[test]
    fn the_buffer_grows_with_its_events_and_never_past_its_bound() {
        let max = 64 * 1024;
        let mut r = Replay::default();
        // A priming event (no data) and one small event: a few hundred bytes, not `max`.
        r.push(0, 1, b"", max);
        r.push(0, 2, b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}", max);
        assert!(r.held() <= 512, "{} bytes held for one small event", r.held());
        assert_eq!(r.since(0, 0).events.len(), 2);
        // Growing never drops an event while the bound is not reached.
        let event = [b'x'; 1000];
        for seq in 3..=60 {
            r.push(0, seq, &event, max);
        }
        assert_eq!(r.since(0, 0).events.len(), 60, "every event kept below the bound");
        assert!(r.bytes.capacity() <= max && r.bytes.capacity() >= 58_000);
        // At the bound: the oldest go, the buffer stays at the bound.
        for seq in 61..=200 {
            r.push(0, seq, &event, max);
        }
        assert_eq!(r.bytes.capacity(), max);
        assert!(r.kept.capacity() <= EVENTS);
        let m = r.since(0, 0);
        assert!(m.gap && m.events.last().map(|e| e.0) == Some(200));
        assert_eq!(m.events.len(), max / 1000);
        // Many tiny events: the index grows to its bound of 256, no further.
        let mut tiny = Replay::default();
        for seq in 1..=1000 {
            tiny.push(1, seq, b"t", max);
        }
        assert_eq!(tiny.since(1, 0).events.len(), EVENTS);
        assert!(tiny.kept.capacity() <= EVENTS && tiny.bytes.capacity() <= 512, "{}", tiny.held());
    }

    #[test]
    fn standalone_streams_are_zero_or_marked() {
        assert!(is_standalone(0) && is_standalone(STANDALONE | 7));
        assert!(!is_standalone(1) && !is_standalone(1 << 30 | 5));
    }

    #[test]
    fn covers_says_whether_a_replay_would_miss_nothing() {
        let mut r = Replay::default();
        assert!(!r.covers(0, 0), "a stream it never wrote");
        for seq in 1..=10 {
            r.push(7, seq, b"0123456789", 30);
        }
        assert!(r.covers(7, 10), "nothing missed");
        assert!(r.covers(7, 7) && r.covers(7, 8));
        assert!(!r.covers(7, 6), "event 7 is no longer kept");
        assert!(!r.covers(8, 0));
        for (stream, seq) in [(7, 10), (7, 7), (7, 6), (8, 0), (7, 0)] {
            assert_eq!(r.covers(stream, seq), !r.since(stream, seq).gap, "{stream}/{seq}");
        }
    }
}
