//! The sessions each client holds ([`Shares`]): per client ([`ClientKey`]) its count and
//! its sessions idle longest first, and the clients by how many sessions they hold, so
//! that the session table can bound a client's share
//! ([`HttpConfig::max_sessions_per_client`](crate::http::HttpConfig::max_sessions_per_client))
//! and, at its global cap, find whom a new session is taken from, without a scan.
//!
//! Everything is index-linked: a session's place in its client's list (by session slot),
//! a client's place among the clients holding as many sessions (by count). Counting a
//! session in or out, and moving a session to the end of its client's list when one of
//! its requests ends, are a few index writes; the memory grows with the session table
//! (one link per slot, one record per client holding a session) and is reused after.

use hashbrown::HashMap;

use crate::http::auth::client::ClientKey;

/// No slot, no client.
const NONE: u32 = u32::MAX;

/// A session slot's place in its client's list.
#[derive(Debug, Clone, Copy)]
struct Link {
    /// The client holding it (an index into `Shares::holders`), `NONE` when uncounted.
    holder: u32,
    prev: u32,
    next: u32,
}

impl Link {
    const UNCOUNTED: Self = Self { holder: NONE, prev: NONE, next: NONE };
}

/// A client holding at least one session.
#[derive(Debug)]
struct Holder {
    key: ClientKey,
    /// Its sessions.
    count: u32,
    /// Its sessions' slots, idle longest first.
    first: u32,
    last: u32,
    /// Its neighbours among the clients holding `count` sessions.
    prev: u32,
    next: u32,
}

/// Sessions per client (see the module docs).
#[derive(Debug)]
pub(crate) struct Shares {
    /// The most sessions one client holds.
    per_client: u32,
    by_key: HashMap<ClientKey, u32>,
    holders: Vec<Holder>,
    /// Holder records not in use.
    free: Vec<u32>,
    /// By session slot.
    links: Vec<Link>,
    /// By count `k`: the first client holding `k` sessions (index 0 unused).
    by_count: Vec<u32>,
    /// The most sessions any client holds.
    top: u32,
}

impl Shares {
    /// No client holds a session yet; each may hold `per_client` (at least 1).
    pub(crate) fn new(per_client: usize) -> Self {
        Self {
            per_client: u32::try_from(per_client.max(1)).unwrap_or(u32::MAX),
            by_key: HashMap::new(),
            holders: Vec::new(),
            free: Vec::new(),
            links: Vec::new(),
            by_count: Vec::new(),
            top: 0,
        }
    }

    /// Sessions `key` holds (0 for an uncounted request).
    pub(crate) fn count(&self, key: Option<ClientKey>) -> u32 {
        key.and_then(|k| self.by_key.get(&k)).map_or(0, |&h| self.holders[h as usize].count)
    }

    /// Whether `key` holds its whole share (never for an uncounted request).
    pub(crate) fn at_share(&self, key: Option<ClientKey>) -> bool {
        key.is_some() && self.count(key) >= self.per_client
    }

    /// Counts the session in `slot` against `key` (`None`: against nobody), idle longest
    /// of none: it goes at the end of its client's list.
    pub(crate) fn add(&mut self, slot: u32, key: Option<ClientKey>) {
        let i = slot as usize;
        if self.links.len() <= i {
            self.links.resize(i + 1, Link::UNCOUNTED);
        }
        self.links[i] = Link::UNCOUNTED;
        let Some(key) = key else { return };
        let h = match self.by_key.get(&key) {
            Some(&h) => {
                self.leave_count(h);
                h
            }
            None => {
                let holder = Holder { key, count: 0, first: NONE, last: NONE, prev: NONE, next: NONE };
                let h = match self.free.pop() {
                    Some(h) => {
                        self.holders[h as usize] = holder;
                        h
                    }
                    None => {
                        self.holders.push(holder);
                        u32::try_from(self.holders.len() - 1).unwrap_or(NONE)
                    }
                };
                self.by_key.insert(key, h);
                h
            }
        };
        self.holders[h as usize].count += 1;
        self.join_count(h);
        self.append(h, slot);
    }

    /// The session in `slot` ended or left the table: it no longer counts.
    pub(crate) fn remove(&mut self, slot: u32) {
        let Some(&link) = self.links.get(slot as usize) else { return };
        let h = link.holder;
        if h == NONE {
            return;
        }
        self.unlink(slot);
        self.links[slot as usize] = Link::UNCOUNTED;
        self.leave_count(h);
        let holder = &mut self.holders[h as usize];
        holder.count -= 1;
        if holder.count == 0 {
            let key = holder.key;
            self.by_key.remove(&key);
            self.free.push(h);
        } else {
            self.join_count(h);
        }
        while self.top > 0 && self.by_count.get(self.top as usize).is_none_or(|&f| f == NONE) {
            self.top -= 1;
        }
    }

    /// A request of the session in `slot` ended: it is its client's session idle least.
    pub(crate) fn touch(&mut self, slot: u32) {
        let Some(&link) = self.links.get(slot as usize) else { return };
        if link.holder == NONE || link.next == NONE {
            return;
        }
        self.unlink(slot);
        self.append(link.holder, slot);
    }

    /// The first of `key`'s sessions, idle longest first, that `ok` takes.
    pub(crate) fn oldest_of(&self, key: ClientKey, mut ok: impl FnMut(u32) -> bool) -> Option<u32> {
        let &h = self.by_key.get(&key)?;
        self.sessions_of(h).find(|&s| ok(s))
    }

    /// The first session `ok` takes among those of the clients holding more than
    /// `above` sessions: the clients holding the most first, each client's sessions
    /// idle longest first.
    pub(crate) fn among_the_most(&self, above: u32, mut ok: impl FnMut(u32) -> bool) -> Option<u32> {
        let mut count = self.top;
        while count > above {
            let mut h = self.by_count.get(count as usize).copied().unwrap_or(NONE);
            while h != NONE {
                if let Some(slot) = self.sessions_of(h).find(|&s| ok(s)) {
                    return Some(slot);
                }
                h = self.holders[h as usize].next;
            }
            count -= 1;
        }
        None
    }

    /// The slots of client `h`'s sessions, idle longest first.
    fn sessions_of(&self, h: u32) -> impl Iterator<Item = u32> + '_ {
        let mut at = self.holders[h as usize].first;
        core::iter::from_fn(move || {
            let slot = at;
            at = self.links.get(slot as usize)?.next;
            Some(slot)
        })
    }

    /// Puts `slot` at the end of client `h`'s list.
    fn append(&mut self, h: u32, slot: u32) {
        let last = self.holders[h as usize].last;
        self.links[slot as usize] = Link { holder: h, prev: last, next: NONE };
        match self.links.get_mut(last as usize) {
            Some(l) => l.next = slot,
            None => self.holders[h as usize].first = slot,
        }
        self.holders[h as usize].last = slot;
    }

    /// Takes `slot` out of its client's list (it stays counted).
    fn unlink(&mut self, slot: u32) {
        let Link { holder: h, prev, next } = self.links[slot as usize];
        match self.links.get_mut(prev as usize) {
            Some(l) => l.next = next,
            None => self.holders[h as usize].first = next,
        }
        match self.links.get_mut(next as usize) {
            Some(l) => l.prev = prev,
            None => self.holders[h as usize].last = prev,
        }
        self.links[slot as usize].prev = NONE;
        self.links[slot as usize].next = NONE;
    }

    /// Takes client `h` out of the list of clients holding its count.
    fn leave_count(&mut self, h: u32) {
        let Holder { count, prev, next, .. } = self.holders[h as usize];
        match self.holders.get_mut(prev as usize) {
            Some(p) => p.next = next,
            None => {
                if let Some(first) = self.by_count.get_mut(count as usize) {
                    *first = next;
                }
            }
        }
        if let Some(n) = self.holders.get_mut(next as usize) {
            n.prev = prev;
        }
        let holder = &mut self.holders[h as usize];
        holder.prev = NONE;
        holder.next = NONE;
    }

    /// Puts client `h` first in the list of clients holding its count.
    fn join_count(&mut self, h: u32) {
        let count = self.holders[h as usize].count;
        let c = count as usize;
        if self.by_count.len() <= c {
            // Grows to the share (or past it, for a session a store brought back).
            self.by_count.resize(c + 1, NONE);
        }
        let first = self.by_count[c];
        if let Some(f) = self.holders.get_mut(first as usize) {
            f.prev = h;
        }
        let holder = &mut self.holders[h as usize];
        holder.prev = NONE;
        holder.next = first;
        self.by_count[c] = h;
        self.top = self.top.max(count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Option<ClientKey> {
        Some(ClientKey::addr(s.parse().unwrap()))
    }

    fn all(s: &Shares, key: Option<ClientKey>) -> Vec<u32> {
        let Some(&h) = key.and_then(|k| s.by_key.get(&k)) else { return Vec::new() };
        s.sessions_of(h).collect()
    }

    #[test]
    fn a_client_is_counted_and_its_sessions_kept_idle_longest_first() {
        let mut s = Shares::new(3);
        let (a, b) = (addr("192.0.2.1"), addr("192.0.2.2"));
        s.add(0, a);
        s.add(1, b);
        s.add(2, a);
        s.add(3, a);
        s.add(4, None);
        assert_eq!((s.count(a), s.count(b), s.count(None)), (3, 1, 0));
        assert!(s.at_share(a) && !s.at_share(b) && !s.at_share(None));
        assert_eq!(all(&s, a), [0, 2, 3]);
        s.touch(0);
        assert_eq!(all(&s, a), [2, 3, 0], "used last, idle least");
        s.touch(0);
        s.touch(4);
        assert_eq!(all(&s, a), [2, 3, 0]);
        s.remove(3);
        assert_eq!(all(&s, a), [2, 0]);
        assert_eq!(s.oldest_of(a.unwrap(), |_| true), Some(2));
        assert_eq!(s.oldest_of(a.unwrap(), |slot| slot != 2), Some(0));
        assert_eq!(s.oldest_of(a.unwrap(), |_| false), None);
        s.remove(2);
        s.remove(0);
        s.remove(0);
        s.remove(4);
        assert_eq!((s.count(a), s.top), (0, 1));
        assert!(s.by_key.get(&a.unwrap()).is_none(), "a client holding none is forgotten");
        s.remove(1);
        assert_eq!((s.by_key.len(), s.top), (0, 0));
        // Its record is reused.
        s.add(1, addr("192.0.2.3"));
        assert_eq!(s.holders.len(), 2);
    }

    #[test]
    fn the_clients_holding_the_most_are_looked_at_first() {
        let mut s = Shares::new(8);
        let (a, b, c) = (addr("192.0.2.1"), addr("192.0.2.2"), addr("192.0.2.3"));
        for slot in 0..3 {
            s.add(slot, a);
        }
        for slot in 3..8 {
            s.add(slot, b);
        }
        s.add(8, c);
        assert_eq!(s.top, 5);
        assert_eq!(s.among_the_most(0, |_| true), Some(3), "b's idle longest");
        assert_eq!(s.among_the_most(0, |slot| slot < 3 || slot == 8), Some(0), "b's all busy: then a");
        assert_eq!(s.among_the_most(3, |slot| slot < 3), None, "only clients holding more than 3");
        assert_eq!(s.among_the_most(5, |_| true), None);
        for slot in 3..6 {
            s.remove(slot);
        }
        assert_eq!(s.top, 3);
        assert_eq!(s.among_the_most(2, |_| true), Some(0), "a holds 3, b 2 now");
        assert_eq!(s.among_the_most(0, |slot| slot != 0 && slot != 1 && slot != 2), Some(6));
    }
}
