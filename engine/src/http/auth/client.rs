//! Who a per-client bound counts against ([`ClientKey`]): the principal the host named for
//! the request when there is one, else the client's address, an IPv6 address by its `/64`
//! network (one host commonly holds a whole `/64`, so counting its addresses one by one
//! would let it take as many shares as it likes).
//!
//! A leaf: the session table, the stream bounds and the rate limiter key their per-client
//! counts by it; none of them knows the others.

use core::net::{IpAddr, Ipv6Addr};

use crate::http::auth::authorize::Principal;

/// The client a request is counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ClientKey {
    /// The principal the host named (`Verdict::AllowAs`).
    Principal([u8; 32]),
    /// No principal: the client's address (after a trusted proxy's forwarding header),
    /// IPv4 whole, IPv6 by its `/64`.
    Addr(IpAddr),
}

impl ClientKey {
    /// The key of a request by `principal` (if any) from `addr` (if known); `None` when
    /// neither is known (an embedded request without a peer address), which no per-client
    /// bound counts.
    pub(crate) fn of(principal: Option<Principal>, addr: Option<IpAddr>) -> Option<Self> {
        match (principal, addr) {
            (Some(p), _) => Some(Self::Principal(p.0)),
            (None, Some(a)) => Some(Self::addr(a)),
            (None, None) => None,
        }
    }

    /// The key of an address alone: IPv4 (and IPv4-mapped IPv6) whole, IPv6 by its `/64`.
    pub(crate) fn addr(addr: IpAddr) -> Self {
        Self::Addr(network_of(addr))
    }
}

/// `addr` as per-client bounds count it: an IPv4 address (plain or IPv4-mapped) as it
/// is, an IPv6 address with its last 64 bits cleared.
pub(crate) fn network_of(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(_) => addr,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv6_addresses_of_one_64_are_one_client_and_ipv4_is_whole() {
        assert_eq!(ClientKey::addr(ip("2001:db8:1:2::1")), ClientKey::addr(ip("2001:db8:1:2:ffff::9")));
        assert_ne!(ClientKey::addr(ip("2001:db8:1:2::1")), ClientKey::addr(ip("2001:db8:1:3::1")));
        assert_ne!(ClientKey::addr(ip("192.0.2.1")), ClientKey::addr(ip("192.0.2.2")));
        assert_eq!(ClientKey::addr(ip("::ffff:192.0.2.1")), ClientKey::addr(ip("192.0.2.1")));
    }

    #[test]
    fn a_principal_is_the_client_wherever_it_calls_from() {
        let p = Principal::of(b"alice");
        assert_eq!(
            ClientKey::of(Some(p), Some(ip("192.0.2.1"))),
            ClientKey::of(Some(p), Some(ip("198.51.100.7")))
        );
        assert_eq!(ClientKey::of(None, Some(ip("192.0.2.1"))), Some(ClientKey::addr(ip("192.0.2.1"))));
        assert_eq!(ClientKey::of(None, None), None);
    }
}
