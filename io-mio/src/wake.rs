//! The host's own wake-up times in the servers' private loops
//! ([`HttpServer::run_timed`](crate::HttpServer::run_timed),
//! [`StdioServer::run_timed`](crate::StdioServer::run_timed)).

use std::time::{Duration, Instant};

/// How long a loop may sleep: the sooner of the server's poll timeout and the host's
/// wake-up time (`None`: until a descriptor is ready).
pub(crate) fn earliest(timeout: Option<Duration>, wake: Option<Instant>) -> Option<Duration> {
    let host = wake.map(|at| at.saturating_duration_since(Instant::now()));
    match (timeout, host) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sooner_of_the_two() {
        let later = Instant::now() + Duration::from_secs(3600);
        assert_eq!(earliest(None, None), None);
        assert_eq!(earliest(Some(Duration::from_secs(1)), None), Some(Duration::from_secs(1)));
        assert_eq!(earliest(Some(Duration::from_secs(1)), Some(later)), Some(Duration::from_secs(1)));
        let host = earliest(None, Some(later)).expect("the host's time");
        assert!(host > Duration::from_secs(3500) && host <= Duration::from_secs(3600));
        let past = Instant::now().checked_sub(Duration::from_secs(1)).unwrap_or_else(Instant::now);
        assert_eq!(earliest(Some(Duration::from_secs(1)), Some(past)), Some(Duration::ZERO));
    }
}
