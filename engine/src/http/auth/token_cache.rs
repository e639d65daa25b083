//! A bounded cache of verified tokens, keyed by the SHA-256 digest of the token's bytes
//! (the token itself is never kept), each entry held until a time the caller names (the
//! token's expiry plus the leeway). A lookup allocates nothing; the table is allocated
//! once, at its full size, when the cache is made.

use hashbrown::HashMap;

/// The SHA-256 digest of a token: the cache key.
pub(super) type TokenDigest = [u8; 32];

/// Verified tokens by digest, at most `capacity` of them.
pub(super) struct TokenCache<V> {
    map: HashMap<TokenDigest, (V, u64)>,
    capacity: usize,
}

impl<V: Clone> TokenCache<V> {
    /// A cache of at most `capacity` entries (zero: nothing is kept). The table is sized
    /// for twice that, so that the tombstones removals leave are always cleared in place
    /// rather than by growing the table.
    pub(super) fn new(capacity: usize) -> Self {
        Self { map: HashMap::with_capacity(capacity.saturating_mul(2)), capacity }
    }

    /// How many entries it may hold.
    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many entries it holds.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    /// The value kept for `key`, whatever its time (the caller judges it).
    pub(super) fn get(&self, key: &TokenDigest) -> Option<&V> {
        self.map.get(key).map(|(v, _)| v)
    }

    /// Forgets `key`.
    pub(super) fn remove(&mut self, key: &TokenDigest) {
        self.map.remove(key);
    }

    /// Forgets everything (the table keeps its size).
    pub(super) fn clear(&mut self) {
        self.map.clear();
    }

    /// Keeps `value` for `key` until `until` (microseconds, on the clock `now` is read
    /// on). When the cache is full, the entries already past their time go first; if none
    /// is, the one whose time comes soonest does. Both are a scan of the table: at a
    /// capacity of a thousand entries, far less than one signature check.
    pub(super) fn insert(&mut self, key: TokenDigest, value: V, until: u64, now: u64) {
        if self.capacity == 0 || until <= now {
            return;
        }
        if self.map.len() >= self.capacity && !self.map.contains_key(&key) {
            self.map.retain(|_, (_, t)| *t > now);
            if self.map.len() >= self.capacity
                && let Some(soonest) = self.map.iter().min_by_key(|(_, (_, t))| *t).map(|(k, _)| *k)
            {
                self.map.remove(&soonest);
            }
        }
        self.map.insert(key, (value, until));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u8) -> TokenDigest {
        [i; 32]
    }

    #[test]
    fn holds_at_most_its_capacity_and_evicts_the_expired_first() {
        let mut c = TokenCache::new(3);
        c.insert(key(1), 1, 100, 0);
        c.insert(key(2), 2, 50, 0);
        c.insert(key(3), 3, 300, 0);
        assert_eq!(c.len(), 3);
        // Full at time 60: entry 2 is past its time and goes, the others stay.
        c.insert(key(4), 4, 400, 60);
        assert_eq!(c.len(), 3);
        assert!(c.get(&key(2)).is_none());
        assert_eq!(c.get(&key(1)), Some(&1));
        // Full, none expired: the soonest to expire (1, at 100) goes.
        c.insert(key(5), 5, 500, 60);
        assert_eq!(c.len(), 3);
        assert!(c.get(&key(1)).is_none());
        assert_eq!(c.get(&key(3)), Some(&3));
        assert_eq!(c.get(&key(5)), Some(&5));
        // Replacing a present key evicts nothing.
        c.insert(key(5), 6, 600, 60);
        assert_eq!((c.len(), c.get(&key(5))), (3, Some(&6)));
    }

    #[test]
    fn zero_capacity_and_past_times_keep_nothing() {
        let mut c = TokenCache::new(0);
        c.insert(key(1), 1, 100, 0);
        assert_eq!(c.len(), 0);
        let mut c = TokenCache::new(2);
        c.insert(key(1), 1, 10, 10);
        assert_eq!(c.len(), 0);
        c.insert(key(1), 1, 11, 10);
        c.remove(&key(1));
        assert_eq!(c.len(), 0);
        c.insert(key(2), 2, 11, 10);
        c.clear();
        assert_eq!((c.len(), c.capacity()), (0, 2));
    }
}
