//! A bounded map from token digests to values, each kept until a time: the introspection
//! cache, and the set of JWTs known to be in the engine verifier's cache. The table is
//! allocated once, at twice its capacity; a lookup allocates nothing.

use std::collections::HashMap;

use sha2::Digest as _;

/// The SHA-256 digest of a token (the token itself is never kept).
pub(super) fn digest(token: &str) -> [u8; 32] {
    sha2::Sha256::digest(token.as_bytes()).into()
}

/// Values by token digest, at most `capacity` of them, each until a time (microseconds
/// since the Unix epoch).
pub(super) struct Expiring<V> {
    map: HashMap<[u8; 32], (V, u64)>,
    capacity: usize,
}

impl<V: Clone> Expiring<V> {
    pub(super) fn new(capacity: usize) -> Self {
        Self { map: HashMap::with_capacity(capacity.saturating_mul(2)), capacity }
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    /// The value of `key` if its time has not come at `now`; an entry past its time is
    /// dropped.
    pub(super) fn get(&mut self, key: &[u8; 32], now: u64) -> Option<V> {
        match self.map.get(key) {
            Some((v, until)) if *until > now => Some(v.clone()),
            Some(_) => {
                self.map.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `value` for `key` until `until`. When full, the entries past their time go
    /// first; if none is, the one whose time comes soonest does.
    pub(super) fn insert(&mut self, key: [u8; 32], value: V, until: u64, now: u64) {
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

    /// Forgets everything (the table keeps its size).
    pub(super) fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_evicting_the_expired_then_the_soonest() {
        let mut c = Expiring::new(2);
        c.insert([1; 32], 1, 10, 0);
        c.insert([2; 32], 2, 20, 0);
        c.insert([3; 32], 3, 30, 0);
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(&[1; 32], 0), None, "the soonest to expire went");
        c.insert([4; 32], 4, 40, 25);
        assert_eq!(
            (c.get(&[3; 32], 25), c.get(&[4; 32], 25)),
            (Some(3), Some(4)),
            "the expired one went first"
        );
        c.insert([5; 32], 5, 25, 25);
        assert_eq!(c.get(&[5; 32], 0), None, "nothing is kept past its time");
        assert_eq!(c.get(&[4; 32], 40), None, "past its time at 40");
        assert_eq!(c.len(), 1, "and dropped");
        let mut none = Expiring::new(0);
        none.insert([1; 32], 1, 10, 0);
        assert_eq!(none.get(&[1; 32], 0), None);
        c.clear();
        assert_eq!((c.len(), c.capacity()), (0, 2));
    }
}
