//! Rate limits ([`Limits`], [`HttpConfig::limits`](crate::http::HttpConfig::limits)):
//! token buckets per principal and per client address for tool calls, completions,
//! subscriptions, session-opening `initialize` requests and authentication failures, on
//! the engine's clock (time passed in).
//!
//! Each bucket is the GCRA form of a token bucket: one timestamp per key (the
//! "theoretical arrival time", TAT), so a check is a comparison and a store. An address
//! is keyed as [`ClientKey`] keys it (an IPv6 address by its `/64`).
//!
//! Each limit has a table of its own, of [`Limits::max_keys`] keys (rounded up to a
//! multiple of 8), allocated in full when the limit first counts a key: a fixed-size
//! set-associative table, where a key hashes (randomly seeded) to a set of 8 entries. A
//! key not in its set takes the place of the entry of that set whose TAT is the smallest
//! (an empty one first), so a new key is never refused for want of room and a check costs
//! one hash and a scan of 8 entries, with no allocation. What that costs the key that
//! gives way: its bucket refills at once. The one that goes is the one of its set that had
//! spent the fewest tokens (its TAT furthest behind), and it gets back exactly what it had
//! spent: a key whose bucket was full again (TAT not ahead of now) loses nothing, and a key
//! that spent `j` tokens is reset only when each of the other 7 keys of its set has spent
//! `j` or more. So keys that make one request each (a flood of invented addresses) reset
//! a key that spent two tokens or more only when it is the least active of 8 keys all
//! further ahead than they are (as any new key would), and never while one of them shares
//! its set: they give way to each other. The `governor`
//! crate does the same arithmetic, but its keyed store only shrinks when told to
//! (`retain_recent`), which cannot bound it while every key is active, and it keeps its
//! own clock types and locks; the engine needs neither (see `docs/decisions.md`).

use core::hash::BuildHasher;
use core::net::IpAddr;
use core::time::Duration;

use crate::http::auth::authorize::Principal;
use crate::http::auth::client::ClientKey;
use crate::jsonrpc::{IdRef, Reply, write_error};
use crate::mcp::facts::{RequestFacts, RequestKind};
use crate::time::Instant;

/// The JSON-RPC error code of a rate refusal, from the range JSON-RPC leaves to
/// implementations (-32000..-32019; MCP reserves -32020..-32099 for its own codes).
pub const RATE_LIMITED: i32 = -32010;

/// Entries per set of a limit's table.
const WAYS: usize = 8;

/// Rate classes ([`Class`]).
const CLASSES: usize = 5;

/// A rate: `count` requests per `per`, up to `count` at once (a bucket of `count`
/// tokens refilled evenly over `per`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    count: u32,
    per: Duration,
}

impl Rate {
    /// `count` per `per` (a `count` of 0 is taken as 1; a `per` under a millisecond as one).
    pub fn new(count: u32, per: Duration) -> Self {
        Self { count: count.max(1), per: per.max(Duration::from_millis(1)) }
    }

    /// `count` per minute.
    pub fn per_minute(count: u32) -> Self {
        Self::new(count, Duration::from_secs(60))
    }

    /// Microseconds between two requests at the steady rate.
    fn interval(self) -> u64 {
        (self.per.as_micros() / u128::from(self.count)).max(1) as u64
    }

    /// How far ahead of now the bucket may run before a request is refused.
    fn tolerance(self) -> u64 {
        self.interval() * u64::from(self.count - 1)
    }
}

/// What a request is limited as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Class {
    /// `tools/call`.
    Calls,
    /// `completion/complete`.
    Completions,
    /// `subscriptions/listen`, `resources/subscribe`.
    Subscriptions,
    /// A request refused for its credentials (401, 403, a malformed `Authorization`).
    AuthFailures,
    /// `initialize` without `Mcp-Session-Id` (it would open a session).
    Initialize,
}

/// Rate limits for Streamable HTTP. Off unless set with
/// [`HttpConfig::limits`](crate::http::HttpConfig::limits); [`Limits::default`] gives
/// 600 tool calls, 300 completions, 100 subscriptions, 60 session-opening `initialize`
/// requests and 120 authentication failures per minute, each per principal and per
/// client address.
///
/// A request over a rate is answered `429 Too Many Requests` with `Retry-After` (whole
/// seconds, rounded up) and a JSON-RPC error with code [`RATE_LIMITED`] that echoes its
/// id; the host never sees it. An address over its authentication-failure rate gets
/// `429` before its credentials are looked at.
///
/// ```
/// use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, Limits, Rate};
/// let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
/// http.limits(Limits::default().calls(Some(Rate::per_minute(60))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    calls: Option<Rate>,
    completions: Option<Rate>,
    subscriptions: Option<Rate>,
    auth_failures: Option<Rate>,
    initialize: Option<Rate>,
    max_keys: usize,
    per_principal: Option<u32>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            calls: Some(Rate::per_minute(600)),
            completions: Some(Rate::per_minute(300)),
            subscriptions: Some(Rate::per_minute(100)),
            auth_failures: Some(Rate::per_minute(120)),
            initialize: Some(Rate::per_minute(60)),
            max_keys: 10_000,
            per_principal: None,
        }
    }
}

impl Limits {
    /// No limit at all (what an `HttpConfig` has until [`HttpConfig::limits`](crate::http::HttpConfig::limits)).
    pub fn none() -> Self {
        Self {
            calls: None,
            completions: None,
            subscriptions: None,
            auth_failures: None,
            initialize: None,
            max_keys: 10_000,
            per_principal: None,
        }
    }
    /// `tools/call` per principal and per address (`None`: unlimited).
    pub fn calls(mut self, rate: Option<Rate>) -> Self {
        self.calls = rate;
        self
    }
    /// `completion/complete` per principal and per address.
    pub fn completions(mut self, rate: Option<Rate>) -> Self {
        self.completions = rate;
        self
    }
    /// `subscriptions/listen` and `resources/subscribe` per principal and per address.
    pub fn subscriptions(mut self, rate: Option<Rate>) -> Self {
        self.subscriptions = rate;
        self
    }
    /// Requests refused for their credentials, per address.
    pub fn auth_failures(mut self, rate: Option<Rate>) -> Self {
        self.auth_failures = rate;
        self
    }
    /// `initialize` requests that would open a session (no `Mcp-Session-Id`), per
    /// principal and per address: with a session store each one is a record written.
    /// Counted before the session is made room for (see
    /// [`HttpConfig::max_sessions_per_client`](crate::http::HttpConfig::max_sessions_per_client)).
    pub fn initialize(mut self, rate: Option<Rate>) -> Self {
        self.initialize = rate;
        self
    }
    /// Requests that hold a ticket (tool calls, reads, prompts, completions) one
    /// principal may have in flight at once (default: no limit beyond
    /// `Config::max_in_flight`). One more is refused with `429`, `Retry-After: 1` and the
    /// same JSON-RPC error as a rate refusal; requests without a principal are not counted.
    pub fn per_principal_concurrency(mut self, max: Option<u32>) -> Self {
        self.per_principal = max.map(|m| m.max(1));
        self
    }
    /// Whether a request rate is limited (calls, completions, subscriptions or
    /// `initialize`): without one, a request's method is not even looked at.
    pub(crate) fn rates_requests(&self) -> bool {
        self.calls.is_some()
            || self.completions.is_some()
            || self.subscriptions.is_some()
            || self.initialize.is_some()
    }
    /// The per-principal concurrency limit, if any.
    pub(crate) fn per_principal(&self) -> Option<usize> {
        self.per_principal.map(|m| m as usize)
    }
    /// Keys (principals and addresses) each limit tracks at once, in a table of its own
    /// (default 10,000, clamped to at least 16 and rounded up to a multiple of 8). A new
    /// key always takes a place: the one of its set of 8 that is furthest behind its rate
    /// gives way, and its bucket starts full again when it comes back. See the module
    /// documentation (`http::limits`) for exactly what a flood of new keys can reset.
    pub fn max_keys(mut self, n: usize) -> Self {
        self.max_keys = n.max(16);
        self
    }

    fn rate(&self, class: Class) -> Option<Rate> {
        match class {
            Class::Calls => self.calls,
            Class::Completions => self.completions,
            Class::Subscriptions => self.subscriptions,
            Class::AuthFailures => self.auth_failures,
            Class::Initialize => self.initialize,
        }
    }
}

/// One limit's buckets: `keys.len() / WAYS` sets of [`WAYS`] entries, each a key and
/// its TAT (µs on the engine's clock; 0: the entry is empty). Empty until the limit first
/// counts a key, then its full size for good.
#[derive(Debug, Default)]
struct Table {
    keys: Vec<ClientKey>,
    tats: Vec<u64>,
}

impl Table {
    /// The first entry of the set `hash` falls in.
    fn set(&self, hash: u64) -> usize {
        let sets = (self.tats.len() / WAYS) as u128;
        ((u128::from(hash) * sets) >> 64) as usize * WAYS
    }

    /// The entry of `key`, if it is in the table.
    fn find(&self, key: &ClientKey, hash: u64) -> Option<usize> {
        if self.tats.is_empty() {
            return None;
        }
        let at = self.set(hash);
        (at..at + WAYS).find(|&i| self.tats[i] != 0 && self.keys[i] == *key)
    }

    /// The entry of `key`: its own, or (TAT 0) the place of the entry of its set that is
    /// furthest behind, other than `keep`. The table is allocated here, once, at
    /// `max_keys` rounded up to whole sets.
    fn entry(&mut self, key: ClientKey, hash: u64, max_keys: usize, keep: Option<usize>) -> usize {
        if self.tats.is_empty() {
            let n = max_keys.div_ceil(WAYS).max(1) * WAYS;
            self.tats = vec![0; n];
            // Placeholders: an entry whose TAT is 0 matches no key.
            self.keys = vec![key; n];
        }
        if let Some(i) = self.find(&key, hash) {
            return i;
        }
        let at = self.set(hash);
        let i = (at..at + WAYS).filter(|&i| Some(i) != keep).min_by_key(|&i| self.tats[i]).unwrap_or(at);
        self.keys[i] = key;
        self.tats[i] = 0;
        i
    }
}

/// The buckets of every limit: a table per class (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    /// Seeded at random (`hashbrown`'s default, foldhash): which keys share a set is not
    /// known outside.
    hasher: hashbrown::DefaultHashBuilder,
    tables: [Table; CLASSES],
}

impl Limiter {
    /// Takes one token from each bucket of `class` that applies (the principal's and the
    /// address's), or refuses: `Err(retry after, in whole seconds)`. Nothing is taken
    /// unless every bucket allows; a key not in the table has a full bucket, and takes a
    /// place in it only when the request is allowed.
    pub(crate) fn take(
        &mut self,
        limits: &Limits,
        class: Class,
        principal: Option<Principal>,
        addr: Option<IpAddr>,
        now: Instant,
    ) -> Result<(), u64> {
        let Some(rate) = limits.rate(class) else { return Ok(()) };
        let now = now.as_micros();
        let keys = [principal.map(|p| ClientKey::Principal(p.0)), addr.map(ClientKey::addr)];
        let keyed = keys.map(|k| k.map(|k| (k, self.hasher.hash_one(k))));
        let table = &mut self.tables[class as usize];
        let mut wait = 0;
        for (key, hash) in keyed.iter().flatten() {
            if let Some(i) = table.find(key, *hash) {
                wait = wait.max(table.tats[i].saturating_sub(now).saturating_sub(rate.tolerance()));
            }
        }
        if wait > 0 {
            return Err(retry_secs(wait));
        }
        let mut placed = None;
        for (key, hash) in keyed.into_iter().flatten() {
            // The principal's entry is not the one the address's replaces.
            let i = table.entry(key, hash, limits.max_keys, placed);
            table.tats[i] = table.tats[i].max(now) + rate.interval();
            placed = Some(i);
        }
        Ok(())
    }

    /// Whether `addr` may still fail authentication (`Err(retry after)` when not),
    /// without taking a token.
    pub(crate) fn check_failures(
        &self,
        limits: &Limits,
        addr: Option<IpAddr>,
        now: Instant,
    ) -> Result<(), u64> {
        let (Some(rate), Some(addr)) = (limits.auth_failures, addr) else { return Ok(()) };
        let now = now.as_micros();
        let key = ClientKey::addr(addr);
        let table = &self.tables[Class::AuthFailures as usize];
        match table.find(&key, self.hasher.hash_one(key)).map(|i| table.tats[i]) {
            Some(tat) if tat.saturating_sub(now) > rate.tolerance() => {
                Err(retry_secs(tat - rate.tolerance() - now))
            }
            _ => Ok(()),
        }
    }

    /// Counts an authentication failure of `addr`.
    pub(crate) fn failed(&mut self, limits: &Limits, addr: Option<IpAddr>, now: Instant) {
        let _ = self.take(limits, Class::AuthFailures, None, addr, now);
    }
}

/// `Retry-After` text for a wait of `secs` (at least 1): exact up to a minute, then
/// rounded up to 2, 5, 10, 30 or 60 minutes (never shorter than the wait, within an hour).
pub(crate) fn retry_after_text(secs: u64) -> &'static str {
    const EXACT: [&str; 61] = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17",
        "18", "19", "20", "21", "22", "23", "24", "25", "26", "27", "28", "29", "30", "31", "32", "33", "34",
        "35", "36", "37", "38", "39", "40", "41", "42", "43", "44", "45", "46", "47", "48", "49", "50", "51",
        "52", "53", "54", "55", "56", "57", "58", "59", "60",
    ];
    match secs {
        0..=60 => EXACT[secs.max(1) as usize],
        61..=120 => "120",
        121..=300 => "300",
        301..=600 => "600",
        601..=1800 => "1800",
        _ => "3600",
    }
}

fn retry_secs(micros: u64) -> u64 {
    micros.div_ceil(1_000_000).max(1)
}

/// The class of a request (what the core decoded it to), if it is limited.
pub(crate) fn class_of(facts: &RequestFacts<'_>) -> Option<Class> {
    match facts.kind {
        RequestKind::Call => Some(Class::Calls),
        RequestKind::Completion => Some(Class::Completions),
        RequestKind::Subscription => Some(Class::Subscriptions),
        RequestKind::Initialize => Some(Class::Initialize),
        RequestKind::Other => None,
    }
}

/// Why a request is refused `429` before the core sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Over a rate.
    Rate,
    /// Its principal holds `Limits::per_principal_concurrency` requests in flight.
    InFlight,
    /// Its client holds `HttpConfig::max_in_flight_per_client` requests in flight.
    ClientInFlight,
    /// An `initialize` of a client holding its share of sessions, each busy.
    Sessions,
}

impl Refused {
    /// The reason the engine records for the adapters' logs.
    pub(crate) fn refusal(self) -> crate::http::Refusal {
        match self {
            Self::Rate | Self::InFlight => crate::http::Refusal::RateLimited,
            Self::ClientInFlight => crate::http::Refusal::TooManyInFlight,
            Self::Sessions => crate::http::Refusal::TooManySessions,
        }
    }

    fn message(self) -> &'static str {
        match self {
            Self::Rate => "Rate limit exceeded",
            Self::InFlight => "Too many requests in flight for this principal",
            Self::ClientInFlight => "Too many requests in flight for this client",
            Self::Sessions => "Too many sessions for this client, each of them busy",
        }
    }
}

/// Writes the JSON-RPC error of a `429` refusal of the request with id `id` (as the
/// core decoded it: [`RequestFacts::id`]) into `out`, cleared first.
pub(crate) fn write_refusal(out: &mut Vec<u8>, id: Option<IdRef<'_>>, retry: u64, why: Refused) {
    out.clear();
    let reply = id.map_or(Reply::None, Reply::Id);
    write_error(out, reply, RATE_LIMITED, format_args!("{}: retry after {retry} s", why.message()), |out| {
        out.extend_from_slice(b"{\"retryAfter\":");
        out.extend_from_slice(itoa::Buffer::new().format(retry).as_bytes());
        out.push(b'}');
    });
    if out.last() == Some(&b'\n') {
        out.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1_000)
    }

    fn ip(s: &str) -> Option<IpAddr> {
        s.parse().ok()
    }

    #[test]
    fn a_bucket_allows_its_burst_then_refuses_and_recovers_with_time() {
        let limits = Limits::none().calls(Some(Rate::new(3, Duration::from_secs(3))));
        let mut l = Limiter::default();
        let a = ip("192.0.2.1");
        for _ in 0..3 {
            assert_eq!(l.take(&limits, Class::Calls, None, a, at(0)), Ok(()));
        }
        assert_eq!(l.take(&limits, Class::Calls, None, a, at(0)), Err(1));
        assert_eq!(l.take(&limits, Class::Calls, None, a, at(999)), Err(1));
        // One token back per second.
        assert_eq!(l.take(&limits, Class::Calls, None, a, at(1_000)), Ok(()));
        assert_eq!(l.take(&limits, Class::Calls, None, a, at(1_000)), Err(1));
        // Another address, another bucket; completions are not calls.
        assert_eq!(l.take(&limits, Class::Calls, None, ip("192.0.2.2"), at(1_000)), Ok(()));
        assert_eq!(l.take(&limits, Class::Completions, None, a, at(1_000)), Ok(()));
        // Long idle: the whole burst again, not more.
        for _ in 0..3 {
            assert_eq!(l.take(&limits, Class::Calls, None, a, at(60_000)), Ok(()));
        }
        assert!(l.take(&limits, Class::Calls, None, a, at(60_000)).is_err());
    }

    #[test]
    fn the_principal_and_the_address_each_have_a_bucket_and_both_must_allow() {
        let limits = Limits::none().calls(Some(Rate::new(2, Duration::from_secs(60))));
        let mut l = Limiter::default();
        let (p, q) = (Principal::of(b"alice"), Principal::of(b"bob"));
        let (a, b) = (ip("192.0.2.1"), ip("192.0.2.2"));
        assert_eq!(l.take(&limits, Class::Calls, Some(p), a, at(0)), Ok(()));
        assert_eq!(l.take(&limits, Class::Calls, Some(p), b, at(0)), Ok(()));
        // Alice is out from any address; bob behind address a has one left there.
        assert_eq!(l.take(&limits, Class::Calls, Some(p), ip("192.0.2.3"), at(0)), Err(30));
        assert_eq!(l.take(&limits, Class::Calls, Some(q), a, at(0)), Ok(()));
        assert!(l.take(&limits, Class::Calls, Some(q), a, at(0)).is_err(), "address a is out");
        // A refusal takes nothing: bob's own bucket still has its second token.
        assert_eq!(l.take(&limits, Class::Calls, Some(q), b, at(0)), Ok(()));
        assert!(l.take(&limits, Class::Calls, Some(q), ip("192.0.2.9"), at(0)).is_err(), "now bob is out");
    }

    #[test]
    fn failures_are_checked_without_taking_and_counted_when_they_happen() {
        let limits = Limits::none().auth_failures(Some(Rate::new(2, Duration::from_secs(10))));
        let mut l = Limiter::default();
        let a = ip("192.0.2.1");
        assert_eq!(l.check_failures(&limits, a, at(0)), Ok(()));
        l.failed(&limits, a, at(0));
        assert_eq!(l.check_failures(&limits, a, at(0)), Ok(()));
        l.failed(&limits, a, at(0));
        l.failed(&limits, a, at(0));
        assert_eq!(l.check_failures(&limits, a, at(0)), Err(5));
        assert_eq!(l.check_failures(&limits, a, at(5_000)), Ok(()));
        assert_eq!(l.check_failures(&limits, None, at(0)), Ok(()));
    }

    fn calls(count: u32, secs: u64, max_keys: usize) -> Limits {
        Limits::none().calls(Some(Rate::new(count, Duration::from_secs(secs)))).max_keys(max_keys)
    }

    /// The `i`th of many invented IPv4 addresses.
    fn invented(i: u32) -> Option<IpAddr> {
        Some(IpAddr::V4(core::net::Ipv4Addr::from(0x0a00_0000 + i)))
    }

    #[test]
    fn a_new_key_is_never_refused_for_room_and_each_limit_has_a_table_of_its_own() {
        let limits = calls(1, 60, 16).completions(Some(Rate::new(1, Duration::from_secs(60))));
        let mut l = Limiter::default();
        // Every key active (each has spent its one token for the next minute).
        for i in 0..10_000 {
            assert_eq!(l.take(&limits, Class::Calls, None, invented(i), at(0)), Ok(()), "key {i}");
        }
        assert_eq!(l.take(&limits, Class::Calls, None, ip("192.0.2.1"), at(0)), Ok(()), "a new key");
        assert_eq!(l.tables[Class::Calls as usize].tats.len(), 16, "the table does not grow");
        assert!(l.tables[Class::Completions as usize].tats.is_empty(), "completions count nothing yet");
        assert_eq!(l.take(&limits, Class::Completions, None, ip("192.0.2.1"), at(0)), Ok(()));
        assert_eq!(l.tables[Class::Completions as usize].tats.len(), 16);
        // The last key is still tracked in its own class.
        assert!(l.take(&limits, Class::Calls, None, ip("192.0.2.1"), at(0)).is_err());
    }

    #[test]
    fn a_flood_of_one_request_keys_never_resets_a_key_two_tokens_ahead() {
        // 3 per 3 minutes: one token a minute, a burst of 3.
        let limits = calls(3, 180, 16);
        let mut l = Limiter::default();
        let (busy, light) = (ip("192.0.2.1"), ip("192.0.2.2"));
        for _ in 0..3 {
            assert_eq!(l.take(&limits, Class::Calls, None, busy, at(0)), Ok(()));
        }
        assert_eq!(l.take(&limits, Class::Calls, None, busy, at(0)), Err(60));
        assert_eq!(l.take(&limits, Class::Calls, None, light, at(0)), Ok(()));
        for i in 0..10_000 {
            assert_eq!(l.take(&limits, Class::Calls, None, invented(i), at(1_000)), Ok(()));
        }
        // The busy key spent three tokens, every flooder one: it kept its bucket.
        assert_eq!(l.take(&limits, Class::Calls, None, busy, at(1_000)), Err(59));
        // The light key spent one, as each flooder: it may have been reset, and then got
        // back that one token, not more: two left either way, three at most.
        let mut left = 0;
        while l.take(&limits, Class::Calls, None, light, at(1_000)).is_ok() {
            left += 1;
        }
        assert!((2..=3).contains(&left), "{left}");
    }

    #[test]
    fn the_entry_that_gives_way_is_the_one_of_its_set_furthest_behind() {
        let key = |i: u32| ClientKey::addr(invented(i).unwrap());
        let mut t = Table::default();
        // One set: every key hashes to it.
        for i in 0..8 {
            let e = t.entry(key(i), 0, 8, None);
            t.tats[e] = 100 + u64::from(i);
        }
        assert_eq!(t.tats.len(), 8);
        assert_eq!(t.find(&key(3), 0), Some(3));
        // A new key takes key 0's place (smallest TAT), but not one kept.
        let e = t.entry(key(8), 0, 8, None);
        assert_eq!((e, t.tats[e]), (0, 0));
        assert_eq!(t.find(&key(0), 0), None);
        t.tats[e] = 500;
        let e = t.entry(key(9), 0, 8, Some(1));
        assert_eq!(e, 2, "key 1 is kept, key 2 goes");
        assert_eq!(t.find(&key(1), 0), Some(1));
    }

    #[test]
    fn addresses_of_one_ipv6_64_share_a_bucket() {
        let limits = calls(1, 60, 16);
        let mut l = Limiter::default();
        assert_eq!(l.take(&limits, Class::Calls, None, ip("2001:db8:0:1::1"), at(0)), Ok(()));
        assert!(l.take(&limits, Class::Calls, None, ip("2001:db8:0:1::2"), at(0)).is_err());
        assert_eq!(l.take(&limits, Class::Calls, None, ip("2001:db8:0:2::1"), at(0)), Ok(()));
    }
}
