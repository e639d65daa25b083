//! Time as the caller gives it: the engine never reads a clock.

use core::ops::Add;
use core::time::Duration;

/// A point in time, in microseconds since an origin the caller picks (typically the
/// moment the engine was created). It must never go backwards; the engine clamps it
/// so that it does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The origin.
    pub const ZERO: Self = Self(0);

    /// `micros` microseconds after the origin.
    pub const fn from_micros(micros: u64) -> Self {
        Self(micros)
    }

    /// Microseconds since the origin.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time since `earlier`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Self) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Self;
    fn add(self, d: Duration) -> Self {
        Self(self.0.saturating_add(u64::try_from(d.as_micros()).unwrap_or(u64::MAX)))
    }
}

/// Wall-clock time: microseconds since the Unix epoch (1970-01-01T00:00:00Z), as the
/// host's clock reads it. The engine never reads a clock; the host passes this to
/// [`Engine::set_wall_clock`](crate::Engine::set_wall_clock) (or the HTTP engine's), and
/// the engine measures the expiry of what it seals (`requestState`, list cursors) on it,
/// so that another process with the same key judges it the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct UnixTime(u64);

impl UnixTime {
    /// The Unix epoch.
    pub const EPOCH: Self = Self(0);

    /// `micros` microseconds after the Unix epoch.
    pub const fn from_micros(micros: u64) -> Self {
        Self(micros)
    }

    /// `secs` seconds after the Unix epoch.
    pub const fn from_secs(secs: u64) -> Self {
        Self(secs.saturating_mul(1_000_000))
    }

    /// A reading of the system clock (say `SystemTime::now()`); a time before the epoch
    /// is the epoch. Converts a value the host read; reads nothing itself.
    pub fn from_system_time(t: std::time::SystemTime) -> Self {
        let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Self(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }

    /// Microseconds since the Unix epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }
}

impl Add<Duration> for UnixTime {
    type Output = Self;
    fn add(self, d: Duration) -> Self {
        Self(self.0.saturating_add(u64::try_from(d.as_micros()).unwrap_or(u64::MAX)))
    }
}

/// How long a sealed token lives, and how far apart two clocks may be (microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Lifetime {
    pub(crate) ttl: u64,
    pub(crate) skew: u64,
}

/// When a sealed token expires, and on which clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expiry {
    /// On the wall clock (microseconds since the Unix epoch), else on the engine's own
    /// [`Instant`]s (meaningful to this engine only).
    pub(crate) wall: bool,
    pub(crate) at: u64,
}

/// The clocks at the moment: the engine's [`Instant`] and, once the host has set it, the
/// wall clock (advanced since by the `Instant`s given).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Clock {
    pub(crate) mono: u64,
    pub(crate) wall: Option<u64>,
}

impl Clock {
    /// The expiry of a token sealed now: on the wall clock once it is set, else on the
    /// engine's `Instant`s.
    pub(crate) fn expiry(self, life: Lifetime) -> Expiry {
        match self.wall {
            Some(w) => Expiry { wall: true, at: w.saturating_add(life.ttl) },
            None => Expiry { wall: false, at: self.mono.saturating_add(life.ttl) },
        }
    }

    /// Whether a token that expires at `e` still holds. On the wall clock it holds until
    /// `e` plus the skew allowance (inclusive), and only if `e` is no later than now plus
    /// the lifetime plus the skew (a token from a clock further ahead is refused). On the
    /// `Instant`s it holds until `e` (inclusive). A token sealed on the other clock never
    /// holds: neither can be judged on the other.
    pub(crate) fn holds(self, e: Expiry, life: Lifetime) -> bool {
        match (e.wall, self.wall) {
            (true, Some(w)) => {
                w <= e.at.saturating_add(life.skew)
                    && e.at <= w.saturating_add(life.ttl).saturating_add(life.skew)
            }
            (false, None) => self.mono <= e.at,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIFE: Lifetime = Lifetime { ttl: 100, skew: 10 };

    #[test]
    fn wall_expiry_allows_the_skew_and_no_more() {
        let sealed = Clock { mono: 5, wall: Some(1_000) };
        let e = sealed.expiry(LIFE);
        assert_eq!(e, Expiry { wall: true, at: 1_100 });
        let at = |w| Clock { mono: 0, wall: Some(w) };
        assert!(at(1_000).holds(e, LIFE));
        assert!(at(1_110).holds(e, LIFE), "the last microsecond of the skew");
        assert!(!at(1_111).holds(e, LIFE));
        // A clock behind the sealer's by the skew still accepts; further behind, not.
        assert!(at(990).holds(e, LIFE));
        assert!(!at(989).holds(e, LIFE));
    }

    #[test]
    fn local_expiry_is_exact_and_clocks_do_not_mix() {
        let e = Clock { mono: 50, wall: None }.expiry(LIFE);
        assert_eq!(e, Expiry { wall: false, at: 150 });
        assert!(Clock { mono: 150, wall: None }.holds(e, LIFE));
        assert!(!Clock { mono: 151, wall: None }.holds(e, LIFE));
        assert!(!Clock { mono: 50, wall: Some(50) }.holds(e, LIFE), "a local token, a wall judge");
        let w = Clock { mono: 0, wall: Some(7) }.expiry(LIFE);
        assert!(!Clock { mono: 0, wall: None }.holds(w, LIFE), "a wall token, no wall clock");
    }

    #[test]
    fn unix_time_conversions() {
        assert_eq!(UnixTime::from_secs(2).as_micros(), 2_000_000);
        let t = std::time::UNIX_EPOCH + Duration::from_micros(1_234_567);
        assert_eq!(UnixTime::from_system_time(t), UnixTime::from_micros(1_234_567));
        let before = std::time::UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(UnixTime::from_system_time(before), UnixTime::EPOCH);
        assert_eq!(UnixTime::EPOCH + Duration::from_secs(1), UnixTime::from_secs(1));
    }
}
