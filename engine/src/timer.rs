//! One timer table: at most one deadline per key (a connection slot), the earliest of them
//! found without scanning the keys.
//!
//! A layer that keeps deadlines (the HTTP connection table: head, body, keep-alive idle,
//! write progress, SSE keep-alives) computes each key's next deadline itself and hands it
//! to [`Timers::set`]; [`Timers::next`] is the earliest armed deadline and
//! [`Timers::pop_due`] yields the keys whose deadline has passed. The table knows nothing
//! of what a deadline means.
//!
//! It is a binary heap with lazy deletion: re-arming a key pushes a new entry and leaves
//! the old one behind, marked stale by the key's stamp. Stale entries at the top are
//! dropped at once (so [`Timers::next`] is exact), and the heap is compacted when stale
//! entries outnumber live ones, so it holds at most about twice as many entries as there
//! are armed keys. Its storage is reused: once it has grown to the number of keys, arming
//! and expiring allocate nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::time::Instant;

/// A key's current deadline and the stamp its heap entry must carry to be live.
#[derive(Debug, Clone, Copy, Default)]
struct Key {
    at: Option<Instant>,
    stamp: u32,
}

/// One heap entry; ordered by deadline, then key, then stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    at: Instant,
    key: u32,
    stamp: u32,
}

/// Deadlines by key (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<Entry>>,
    keys: Vec<Key>,
    /// Keys with a deadline armed.
    live: usize,
}

impl Timers {
    /// An empty table.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Arms `key` for `at`, or disarms it (`None`). Setting the deadline it already has
    /// does nothing.
    pub(crate) fn set(&mut self, key: u32, at: Option<Instant>) {
        let i = key as usize;
        if i >= self.keys.len() {
            if at.is_none() {
                return;
            }
            self.keys.resize(i + 1, Key::default());
        }
        let k = &mut self.keys[i];
        if k.at == at {
            return;
        }
        match (k.at, at) {
            (None, Some(_)) => self.live += 1,
            (Some(_), None) => self.live -= 1,
            _ => {}
        }
        k.stamp = k.stamp.wrapping_add(1);
        k.at = at;
        if let Some(at) = at {
            self.heap.push(Reverse(Entry { at, key, stamp: k.stamp }));
        }
        self.settle();
    }

    /// The deadline `key` is armed for.
    #[cfg(test)]
    fn get(&self, key: u32) -> Option<Instant> {
        self.keys.get(key as usize).and_then(|k| k.at)
    }

    /// The earliest armed deadline.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.0.at)
    }

    /// A key whose deadline is at or before `now`, disarmed; `None` when no deadline has
    /// passed. Keys come in deadline order.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<u32> {
        let top = self.heap.peek()?.0;
        if top.at > now {
            return None;
        }
        self.heap.pop();
        let k = &mut self.keys[top.key as usize];
        // `settle` keeps the top live, so this entry is the key's current one.
        debug_assert_eq!(k.stamp, top.stamp);
        k.at = None;
        k.stamp = k.stamp.wrapping_add(1);
        self.live -= 1;
        self.settle();
        Some(top.key)
    }

    /// Entries in the heap, stale ones included (for tests of the bound).
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.heap.len()
    }

    fn is_live(keys: &[Key], e: &Entry) -> bool {
        keys.get(e.key as usize).is_some_and(|k| k.stamp == e.stamp && k.at.is_some())
    }

    /// Drops stale entries from the top, and compacts the heap when most of it is stale.
    fn settle(&mut self) {
        while let Some(top) = self.heap.peek() {
            if Self::is_live(&self.keys, &top.0) {
                break;
            }
            self.heap.pop();
        }
        if self.heap.len() > 2 * self.live + 16 {
            let keys = &self.keys;
            self.heap.retain(|e| Self::is_live(keys, &e.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    #[test]
    fn the_earliest_deadline_comes_first_and_rearming_replaces() {
        let mut t = Timers::new();
        t.set(3, Some(at(30)));
        t.set(1, Some(at(10)));
        t.set(2, Some(at(20)));
        assert_eq!(t.next(), Some(at(10)));
        t.set(1, Some(at(40))); // re-armed later: 2 is now first
        assert_eq!(t.next(), Some(at(20)));
        assert_eq!(t.pop_due(at(25)), Some(2));
        assert_eq!(t.pop_due(at(25)), None);
        assert_eq!(t.get(2), None);
        assert_eq!(t.pop_due(at(100)), Some(3));
        assert_eq!(t.pop_due(at(100)), Some(1));
        assert_eq!(t.pop_due(at(100)), None);
        assert_eq!(t.next(), None);
    }

    #[test]
    fn a_disarmed_key_never_fires() {
        let mut t = Timers::new();
        t.set(0, Some(at(5)));
        t.set(1, Some(at(6)));
        t.set(0, None);
        assert_eq!(t.next(), Some(at(6)));
        assert_eq!(t.pop_due(at(10)), Some(1));
        assert_eq!(t.pop_due(at(10)), None);
        // Disarming an unknown key is harmless.
        t.set(99, None);
        assert_eq!(t.next(), None);
    }

    #[test]
    fn rearming_many_times_keeps_the_heap_bounded() {
        let mut t = Timers::new();
        for key in 0..10 {
            t.set(key, Some(at(1000)));
        }
        for round in 0..10_000u64 {
            t.set((round % 10) as u32, Some(at(1000 + round)));
            assert!(t.entries() <= 2 * 10 + 16 + 1, "{} entries", t.entries());
        }
        let mut fired = 0;
        while t.pop_due(at(u64::MAX / 1000)).is_some() {
            fired += 1;
        }
        assert_eq!(fired, 10);
    }

    #[test]
    fn setting_the_same_deadline_is_a_no_op() {
        let mut t = Timers::new();
        t.set(0, Some(at(5)));
        t.set(0, Some(at(5)));
        assert_eq!(t.entries(), 1);
    }
}
