//! What a task id this engine does not hold may cost (with a task store): a `tasks/*`
//! request naming one asks the store ([`StoreEvent::LoadTask`](crate::http::store::StoreEvent::LoadTask)),
//! a round trip any client could otherwise spend at will with well-formed random ids.
//!
//! - [`Missing`]: the ids the store said it does not hold, for a short while
//!   ([`MISSING_FOR`]), at most [`MAX_MISSING`] of them (the oldest go first). A request
//!   naming one is answered "not found" without asking again. Such an answer is stable: a
//!   task id is 128 random bits, and its record is in the store before its client hears
//!   of it (the handle waits for the save), so no client can know an id the store does
//!   not have yet, and an expired one never comes back. The entries still expire, in case
//!   a store answered before it was consistent.
//! - [`Budget`]: per client ([`ClientKey`]: the principal, else the address, IPv6 by
//!   `/64`; requests with neither share one bucket), a token bucket of store lookups that
//!   serve the client nothing ([`HttpConfig::task_load_misses`](crate::http::HttpConfig::task_load_misses)):
//!   a lookup takes a token before the store is asked, and gives it back when the request
//!   is then served a task of the caller's. A client out of tokens gets `429` with
//!   `Retry-After` for its next lookup, and the store is not asked. The table of buckets is
//!   bounded ([`MAX_CLIENTS`]): at the bound a new client takes the place of the one
//!   furthest behind its budget (a rested one first), as the rate limiter's keys do, so a
//!   new client is never refused for room; the one that gave way starts with a full bucket
//!   should it come back.

use std::collections::VecDeque;

use hashbrown::{HashMap, HashSet};

use crate::http::auth::client::ClientKey;
use crate::mcp::tasks::TASK_ID_LEN;
use crate::time::Instant;

/// Ids the store said it does not hold, kept at most this many.
pub(crate) const MAX_MISSING: usize = 1024;
/// How long such an id is answered "not found" without asking (microseconds: 10 s).
pub(crate) const MISSING_FOR: u64 = 10_000_000;
/// Clients whose lookups are counted at once.
pub(crate) const MAX_CLIENTS: usize = 10_000;

/// The ids the store said it does not hold, recently (see the module docs).
#[derive(Default)]
pub(crate) struct Missing {
    ids: HashSet<[u8; TASK_ID_LEN]>,
    /// The same ids, oldest first, with when they were answered (µs on the engine's clock).
    order: VecDeque<([u8; TASK_ID_LEN], u64)>,
}

impl Missing {
    /// Forgets the ids answered [`MISSING_FOR`] or longer before `now`.
    fn expire(&mut self, now: Instant) {
        let now = now.as_micros();
        while let Some(&(id, at)) = self.order.front() {
            if now.saturating_sub(at) < MISSING_FOR {
                break;
            }
            self.order.pop_front();
            self.ids.remove(&id);
        }
    }

    /// Whether the store said lately that it does not hold `id`.
    pub(crate) fn knows(&mut self, id: &[u8; TASK_ID_LEN], now: Instant) -> bool {
        self.expire(now);
        self.ids.contains(id)
    }

    /// The store answered at `now` that it does not hold `id`.
    pub(crate) fn note(&mut self, id: [u8; TASK_ID_LEN], now: Instant) {
        self.expire(now);
        if !self.ids.insert(id) {
            return;
        }
        if self.order.len() >= MAX_MISSING
            && let Some((old, _)) = self.order.pop_front()
        {
            self.ids.remove(&old);
        }
        self.order.push_back((id, now.as_micros()));
    }

    /// Ids kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.ids.len()
    }
}

/// Store lookups per client that serve it nothing: `count` per `per` (a bucket of `count`
/// tokens refilled evenly), as a GCRA (one timestamp per client).
pub(crate) struct Budget {
    /// Microseconds between two lookups at the steady rate.
    interval: u64,
    /// How far ahead of now a client's timestamp may run before it is refused.
    tolerance: u64,
    /// The theoretical arrival time per client (µs on the engine's clock).
    tat: HashMap<Option<ClientKey>, u64>,
}

impl Budget {
    /// `count` lookups per `per` (a `count` of 0 is taken as 1, a `per` under a
    /// microsecond as one).
    pub(crate) fn new(count: u32, per: core::time::Duration) -> Self {
        let count = u64::from(count.max(1));
        let per = u64::try_from(per.as_micros()).unwrap_or(u64::MAX).max(1);
        let interval = (per / count).max(1);
        Self { interval, tolerance: interval.saturating_mul(count - 1), tat: HashMap::new() }
    }

    /// Takes a token of `client`'s at `now`, or refuses: `Err(retry after, in whole
    /// seconds)`. A client new to a full table takes the place of the one furthest behind
    /// its budget (the lowest timestamp; one whose bucket is full again is as good as
    /// absent and goes first): a scan of the table, made only then.
    pub(crate) fn take(&mut self, client: Option<ClientKey>, now: Instant) -> Result<(), u64> {
        let now = now.as_micros();
        match self.tat.get(&client) {
            Some(&tat) if tat.saturating_sub(now) > self.tolerance => {
                return Err(secs(tat - self.tolerance - now));
            }
            Some(_) => {}
            None if self.tat.len() >= MAX_CLIENTS => {
                let mut behind: Option<(Option<ClientKey>, u64)> = None;
                for (&k, &tat) in &self.tat {
                    if behind.is_none_or(|(_, b)| tat < b) {
                        behind = Some((k, tat));
                    }
                    if tat <= now {
                        break;
                    }
                }
                if let Some((k, _)) = behind {
                    self.tat.remove(&k);
                }
            }
            None => {}
        }
        let tat = self.tat.entry(client).or_insert(now);
        *tat = (*tat).max(now).saturating_add(self.interval);
        Ok(())
    }

    /// Gives back the token [`take`](Self::take) took for `client` (the lookup served it).
    pub(crate) fn give_back(&mut self, client: Option<ClientKey>) {
        if let Some(tat) = self.tat.get_mut(&client) {
            *tat = tat.saturating_sub(self.interval);
        }
    }
}

/// Whole seconds (at least 1) to wait `micros`.
fn secs(micros: u64) -> u64 {
    micros.div_ceil(1_000_000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::IpAddr;
    use core::time::Duration;

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1_000)
    }

    fn ip(s: &str) -> Option<ClientKey> {
        s.parse::<IpAddr>().ok().map(ClientKey::addr)
    }

    #[test]
    fn a_missing_id_is_known_for_a_while_and_the_set_is_bounded() {
        let mut m = Missing::default();
        let a = [b'A'; TASK_ID_LEN];
        assert!(!m.knows(&a, at(0)));
        m.note(a, at(0));
        assert!(m.knows(&a, at(9_999)));
        assert!(!m.knows(&a, at(10_000)), "it expires");
        assert_eq!(m.len(), 0);
        for i in 0..MAX_MISSING + 5 {
            let mut id = [b'B'; TASK_ID_LEN];
            id[..8].copy_from_slice(&(i as u64).to_le_bytes());
            m.note(id, at(1));
        }
        assert_eq!(m.len(), MAX_MISSING, "the oldest went");
        let mut first = [b'B'; TASK_ID_LEN];
        first[..8].copy_from_slice(&0u64.to_le_bytes());
        assert!(!m.knows(&first, at(1)));
    }

    #[test]
    fn a_budget_allows_its_burst_per_client_and_gives_back_what_served() {
        let mut b = Budget::new(3, Duration::from_secs(3));
        let (x, y) = (ip("192.0.2.1"), ip("2001:db8::1"));
        for _ in 0..3 {
            assert_eq!(b.take(x, at(0)), Ok(()));
        }
        assert_eq!(b.take(x, at(0)), Err(1));
        assert_eq!(b.take(y, at(0)), Ok(()), "another client has its own");
        assert_eq!(b.take(ip("2001:db8::2"), at(0)), Ok(()), "the same /64 is one client");
        assert_eq!(b.take(ip("2001:db8::3"), at(0)), Ok(()));
        assert_eq!(b.take(ip("2001:db8::4"), at(0)), Err(1));
        // A lookup that served the client costs nothing.
        b.give_back(x);
        assert_eq!(b.take(x, at(0)), Ok(()));
        assert!(b.take(x, at(0)).is_err());
        // One back per second.
        assert_eq!(b.take(x, at(1_000)), Ok(()));
        // Requests with neither a principal nor an address share one bucket.
        for _ in 0..3 {
            assert_eq!(b.take(None, at(0)), Ok(()));
        }
        assert!(b.take(None, at(0)).is_err());
    }

    #[test]
    fn the_table_is_bounded_and_a_new_client_takes_the_place_of_the_one_furthest_behind() {
        let mut b = Budget::new(2, Duration::from_secs(2));
        let key = |i: u32| Some(ClientKey::addr(IpAddr::V4(i.into())));
        for i in 0..MAX_CLIENTS as u32 {
            assert_eq!(b.take(key(i), at(0)), Ok(()));
        }
        // Client 7 spends its second token: every other is further behind its budget.
        assert_eq!(b.take(key(7), at(0)), Ok(()));
        assert!(b.take(key(7), at(0)).is_err());
        // A new client is served, the table does not grow, and client 7 is still counted.
        assert_eq!(b.take(ip("2001:db8::1"), at(0)), Ok(()), "never refused for room");
        assert_eq!(b.tat.len(), MAX_CLIENTS);
        assert!(b.tat.contains_key(&key(7)));
        assert!(b.take(key(7), at(0)).is_err(), "its spent tokens are still spent");
    }
}
