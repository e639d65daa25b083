//! Rate limits ([`Limits`], [`HttpConfig::limits`](crate::http::HttpConfig::limits)):
//! token buckets per principal and per client address for tool calls, completions,
//! subscriptions and authentication failures, on the engine's clock (time passed in).
//!
//! Each bucket is the GCRA form of a token bucket: one timestamp per key (the
//! "theoretical arrival time"), so a check is a comparison and a store. The tables are
//! bounded ([`Limits::max_keys`]): a new key takes the place of one whose bucket has
//! refilled completely (it is indistinguishable from a key never seen); when every key
//! in the table is still active, the new caller is refused like one over its rate. The
//! `governor` crate does the same arithmetic, but its keyed store only shrinks when told
//! to (`retain_recent`), which cannot bound it while every key is active, and it keeps
//! its own clock types and locks; the engine needs neither (see `docs/decisions.md`).

use core::net::IpAddr;
use core::time::Duration;

use hashbrown::HashMap;
use simd_json::Node;

use crate::http::auth::Principal;
use crate::jsonrpc::{IdRef, Reply, write_error};
use crate::time::Instant;
use crate::wire::json;

/// The JSON-RPC error code of a rate refusal, from the range JSON-RPC leaves to
/// implementations (-32000..-32019; MCP reserves -32020..-32099 for its own codes).
pub const RATE_LIMITED: i32 = -32010;

const LIMITED: &str = "Rate limit exceeded";
const BUSY: &str = "Too many requests in flight for this principal";

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
}

/// Rate limits for Streamable HTTP. Off unless set with
/// [`HttpConfig::limits`](crate::http::HttpConfig::limits); [`Limits::default`] gives
/// 600 tool calls, 300 completions, 100 subscriptions and 120 authentication failures
/// per minute, each per principal and per client address.
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
    /// Requests that hold a ticket (tool calls, reads, prompts, completions) one
    /// principal may have in flight at once (default: no limit beyond
    /// `Config::max_in_flight`). One more is refused with `429`, `Retry-After: 1` and the
    /// same JSON-RPC error as a rate refusal; requests without a principal are not counted.
    pub fn per_principal_concurrency(mut self, max: Option<u32>) -> Self {
        self.per_principal = max.map(|m| m.max(1));
        self
    }
    /// Whether a request rate is limited (calls, completions or subscriptions): without
    /// one, a request's method is not even looked at.
    pub(crate) fn rates_requests(&self) -> bool {
        self.calls.is_some() || self.completions.is_some() || self.subscriptions.is_some()
    }
    /// The per-principal concurrency limit, if any.
    pub(crate) fn per_principal(&self) -> Option<usize> {
        self.per_principal.map(|m| m as usize)
    }
    /// Keys (principals and addresses) each limit tracks at once (default 10,000,
    /// clamped to at least 16). See the module documentation for what happens at the cap.
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
        }
    }
}

/// Whom a bucket belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Principal([u8; 32]),
    Addr(IpAddr),
}

/// The buckets of every limit.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    /// Theoretical arrival time (µs on the engine's clock) per class and key.
    tat: HashMap<(Class, Key), u64>,
}

impl Limiter {
    /// Takes one token from each bucket of `class` that applies (the principal's and the
    /// address's), or refuses: `Err(retry after, in whole seconds)`. Nothing is taken
    /// unless every bucket allows.
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
        let keys = [principal.map(|p| Key::Principal(p.0)), addr.map(Key::Addr)];
        let mut wait = 0;
        for (planned, key) in keys.into_iter().flatten().enumerate() {
            wait = wait.max(self.wait(limits, rate, class, key, now, planned)?);
        }
        if wait > 0 {
            return Err(retry_secs(wait));
        }
        for key in keys.into_iter().flatten() {
            let tat = self.tat.entry((class, key)).or_insert(now);
            *tat = (*tat).max(now) + rate.interval();
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
        match self.tat.get(&(Class::AuthFailures, Key::Addr(addr))) {
            Some(&tat) if tat.saturating_sub(now) > rate.tolerance() => {
                Err(retry_secs(tat - rate.tolerance() - now))
            }
            _ => Ok(()),
        }
    }

    /// Counts an authentication failure of `addr`.
    pub(crate) fn failed(&mut self, limits: &Limits, addr: Option<IpAddr>, now: Instant) {
        let _ = self.take(limits, Class::AuthFailures, None, addr, now);
    }

    /// How long `key` must wait for a token of `class` (0: it may go now), making room
    /// for it in the table; `Err` when the table is full of active keys.
    /// `planned`: keys of this request looked at before (each may still be inserted).
    fn wait(
        &mut self,
        limits: &Limits,
        rate: Rate,
        class: Class,
        key: Key,
        now: u64,
        planned: usize,
    ) -> Result<u64, u64> {
        if let Some(&tat) = self.tat.get(&(class, key)) {
            let ahead = tat.saturating_sub(now);
            return Ok(if ahead > rate.tolerance() { ahead - rate.tolerance() } else { 0 });
        }
        if self.tat.len() + planned >= limits.max_keys {
            // A key whose bucket is full again is as good as absent: it goes.
            let rested = self.tat.iter().find(|&(_, &tat)| tat <= now).map(|(k, _)| *k);
            match rested {
                Some(k) => {
                    self.tat.remove(&k);
                }
                None => return Err(retry_secs(rate.interval())),
            }
        }
        Ok(0)
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

/// The class of the request on tape `n`, if it is limited.
pub(crate) fn class_of(n: &[Node<'_>]) -> Option<Class> {
    json::get(n, 0, "id")?;
    match json::get(n, 0, "method").and_then(|m| json::str_at(n, m))? {
        "tools/call" => Some(Class::Calls),
        "completion/complete" => Some(Class::Completions),
        "subscriptions/listen" | "resources/subscribe" => Some(Class::Subscriptions),
        _ => None,
    }
}

/// Writes the JSON-RPC error of a rate refusal of the request on tape `n` (its id
/// echoed) into `out`, cleared first.
pub(crate) fn write_refusal(out: &mut Vec<u8>, n: &[Node<'_>], retry: u64, busy: bool) {
    out.clear();
    let id = json::get(n, 0, "id").and_then(|i| match n.get(i)? {
        Node::String(s) => Some(IdRef::Str(s)),
        Node::Static(simd_json::StaticNode::I64(v)) => Some(IdRef::I(*v)),
        Node::Static(simd_json::StaticNode::U64(v)) => Some(IdRef::U(*v)),
        _ => None,
    });
    let reply = id.map_or(Reply::None, Reply::Id);
    write_error(
        out,
        reply,
        RATE_LIMITED,
        format_args!("{}: retry after {retry} s", if busy { BUSY } else { LIMITED }),
        |out| {
            out.extend_from_slice(b"{\"retryAfter\":");
            out.extend_from_slice(itoa::Buffer::new().format(retry).as_bytes());
            out.push(b'}');
        },
    );
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

    #[test]
    fn the_table_is_bounded_and_gives_way_only_to_rested_keys() {
        let limits = Limits::none().calls(Some(Rate::new(1, Duration::from_secs(1)))).max_keys(16);
        let mut l = Limiter::default();
        for i in 0..16u8 {
            assert_eq!(l.take(&limits, Class::Calls, None, ip(&format!("10.0.0.{i}")), at(0)), Ok(()));
        }
        // Every key is active: a new one is refused, and the table does not grow.
        assert!(l.take(&limits, Class::Calls, None, ip("10.0.1.1"), at(0)).is_err());
        assert_eq!(l.tat.len(), 16);
        // Once they have rested, a new key takes a place.
        assert_eq!(l.take(&limits, Class::Calls, None, ip("10.0.1.1"), at(1_000)), Ok(()));
        assert_eq!(l.tat.len(), 16);
    }
}
