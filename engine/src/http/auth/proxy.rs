//! Behind a reverse proxy: the `Host` names the server answers to
//! ([`HttpConfig::allowed_hosts`](crate::http::HttpConfig::allowed_hosts), DNS-rebinding
//! protection beyond loopback) and who the client is when a trusted proxy forwards the
//! request ([`HttpConfig::trusted_proxies`](crate::http::HttpConfig::trusted_proxies)): the
//! address named by the one header the operator says the proxy writes
//! ([`ForwardedHeader`]: `X-Forwarded-For` or `Forwarded`, RFC 7239; the other is
//! ignored), believed only when the peer itself is a configured proxy, read from the
//! right and skipping the configured proxies, so a client cannot name an address of its
//! choosing.

use core::fmt;
use core::net::{IpAddr, SocketAddr};

pub use ipnet::IpNet;

/// A `Host` name the server answers to: a DNS name or an IP address, with an optional
/// port (without one, any port matches). Compared case-insensitively.
#[derive(Clone, PartialEq, Eq)]
pub struct HostName {
    name: Box<str>,
    port: Option<u16>,
}

/// Why a [`HostName`] could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidHost {
    /// Empty, or a character that cannot appear in a `Host` header (a scheme, a path,
    /// user information, whitespace).
    Name,
    /// A port that is not a number from 1 to 65,535.
    Port,
}

impl fmt::Display for InvalidHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Name => "not a host name: give a DNS name or IP address, without scheme or path",
            Self::Port => "not a port number (1..=65535)",
        })
    }
}

impl std::error::Error for InvalidHost {}

impl HostName {
    /// Parses `mcp.example.com`, `mcp.example.com:8443`, `203.0.113.7` or `[2001:db8::1]:443`.
    ///
    /// ```
    /// use mcp_engine::http::HostName;
    /// assert!(HostName::parse("mcp.example.com").is_ok());
    /// assert!(HostName::parse("https://mcp.example.com/").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, InvalidHost> {
        let text = text.trim();
        let valid =
            |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':' | b'[' | b']');
        if !text.as_bytes().iter().all(valid) {
            return Err(InvalidHost::Name);
        }
        let (name, port) = split_host(text.as_bytes()).ok_or(InvalidHost::Name)?;
        if name.is_empty() || (!name.starts_with(b"[") && name.contains(&b':')) {
            return Err(InvalidHost::Name);
        }
        let port = match port {
            None => None,
            Some(p) => Some(parse_port(p).filter(|&p| p != 0).ok_or(InvalidHost::Port)?),
        };
        let name = core::str::from_utf8(name).map_err(|_| InvalidHost::Name)?.to_ascii_lowercase();
        Ok(Self { name: name.into(), port })
    }

    /// Whether a request's `Host` value names this host.
    pub(crate) fn matches(&self, host: &[u8]) -> bool {
        let Some((name, port)) = split_host(host.trim_ascii()) else { return false };
        if !name.eq_ignore_ascii_case(self.name.as_bytes()) {
            return false;
        }
        match (self.port, port) {
            (None, _) => true,
            (Some(want), Some(p)) => parse_port(p) == Some(want),
            (Some(_), None) => false,
        }
    }
}

impl fmt::Debug for HostName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(p) => write!(f, "HostName({}:{p})", self.name),
            None => write!(f, "HostName({})", self.name),
        }
    }
}

/// `name[:port]` or `[v6][:port]`: the name (brackets kept) and the port's digits.
fn split_host(host: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    if host.starts_with(b"[") {
        let end = host.iter().position(|&b| b == b']')?;
        let rest = &host[end + 1..];
        return match rest {
            [] => Some((&host[..=end], None)),
            [b':', port @ ..] => Some((&host[..=end], Some(port))),
            _ => None,
        };
    }
    match host.iter().position(|&b| b == b':') {
        Some(colon) => Some((&host[..colon], Some(&host[colon + 1..]))),
        None => Some((host, None)),
    }
}

fn parse_port(digits: &[u8]) -> Option<u16> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(digits).ok()?.parse().ok()
}

/// The header a trusted proxy writes the client's address into
/// ([`HttpConfig::trusted_proxies`](crate::http::HttpConfig::trusted_proxies)): only that
/// one is read; the other is ignored, whoever sends it. A proxy appends to the header it
/// writes but passes the other through as the client sent it, so believing both (or
/// whichever is present) would let any client name its own address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, …`: what nginx (`$proxy_add_x_forwarded_for`),
    /// HAProxy (`option forwardfor`), Envoy and the cloud load balancers write.
    XForwardedFor,
    /// `Forwarded: for=client, for=proxy1` (RFC 7239): the `for=` parameter of each element.
    Forwarded,
}

impl ForwardedHeader {
    /// The header's name, lower-case.
    pub fn name(self) -> &'static str {
        match self {
            Self::XForwardedFor => "x-forwarded-for",
            Self::Forwarded => "forwarded",
        }
    }

    /// `x-forwarded-for` or `forwarded` (any case), as a command line or a setting says it.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::XForwardedFor, Self::Forwarded]
            .into_iter()
            .find(|h| text.trim().eq_ignore_ascii_case(h.name()))
    }
}

/// The client's address: the peer's, unless the peer is a trusted proxy; then the
/// rightmost address of the forwarding chain in `header` (the other forwarding header is
/// never read) that is not a trusted proxy itself. An entry that is not an address
/// (`unknown`, an obfuscated identifier, garbage) ends the walk at the last proxy seen.
pub(crate) fn client_addr(
    trusted: &[IpNet],
    header: ForwardedHeader,
    peer: Option<SocketAddr>,
    headers: &[httparse::Header<'_>],
) -> Option<IpAddr> {
    let peer = peer?.ip();
    let is_trusted = |ip: IpAddr| trusted.iter().any(|n| n.contains(&ip));
    if !is_trusted(peer) {
        return Some(peer);
    }
    let forwarded = header == ForwardedHeader::Forwarded;
    let name = header.name();
    // Every hop, in order; walked from the right without collecting them.
    let mut client = peer;
    let mut values = headers.iter().rev().filter(|h| h.name.eq_ignore_ascii_case(name));
    for h in &mut values {
        let Ok(text) = core::str::from_utf8(h.value) else { return Some(client) };
        for element in text.rsplit(',') {
            let hop = if forwarded { forwarded_for(element) } else { Some(element.trim()) };
            let Some(ip) = hop.and_then(parse_hop) else { return Some(client) };
            client = ip;
            if !is_trusted(ip) {
                return Some(ip);
            }
        }
    }
    Some(client)
}

/// The `for=` parameter of one `Forwarded` element (RFC 7239 §4), unquoted.
fn forwarded_for(element: &str) -> Option<&str> {
    element.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        key.trim().eq_ignore_ascii_case("for").then(|| {
            let v = value.trim();
            v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v)
        })
    })
}

/// An address of a forwarding hop: `192.0.2.60`, `192.0.2.60:4711`, `2001:db8::1`,
/// `[2001:db8::1]` or `[2001:db8::1]:4711`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(sa) = hop.parse::<SocketAddr>() {
        return Some(sa.ip());
    }
    hop.strip_prefix('[')?.strip_suffix(']')?.parse::<core::net::Ipv6Addr>().ok().map(IpAddr::V6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<'a>(name: &'a str, value: &'a str) -> httparse::Header<'a> {
        httparse::Header { name, value: value.as_bytes() }
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|n| n.parse().unwrap()).collect()
    }

    const PROXY: &str = "10.0.0.5:40000";

    #[test]
    fn host_names_match_with_and_without_ports() {
        let any = HostName::parse("MCP.example.com").unwrap();
        assert!(any.matches(b"mcp.example.com"));
        assert!(any.matches(b"mcp.EXAMPLE.com:8443"));
        assert!(!any.matches(b"mcp.example.com.evil"));
        assert!(!any.matches(b"evil.com"));
        let port = HostName::parse("mcp.example.com:8443").unwrap();
        assert!(port.matches(b"mcp.example.com:8443"));
        assert!(!port.matches(b"mcp.example.com"));
        assert!(!port.matches(b"mcp.example.com:443"));
        let v6 = HostName::parse("[2001:db8::1]").unwrap();
        assert!(v6.matches(b"[2001:db8::1]:443"));
        assert!(!v6.matches(b"[2001:db8::1]x"));
        for bad in ["", "https://a.com", "a.com/mcp", "a b", "user@a.com"] {
            assert_eq!(HostName::parse(bad), Err(InvalidHost::Name), "{bad:?}");
        }
        for bad in ["a.com:", "a.com:0", "a.com:65536", "a.com:x"] {
            assert_eq!(HostName::parse(bad), Err(InvalidHost::Port), "{bad:?}");
        }
    }

    const XFF: ForwardedHeader = ForwardedHeader::XForwardedFor;
    const FWD: ForwardedHeader = ForwardedHeader::Forwarded;

    #[test]
    fn the_peer_is_the_client_unless_it_is_a_trusted_proxy() {
        let trusted = nets(&["10.0.0.0/8"]);
        let direct = "203.0.113.9:5000".parse().ok();
        let spoof = [h("x-forwarded-for", "1.2.3.4")];
        assert_eq!(client_addr(&trusted, XFF, direct, &spoof), "203.0.113.9".parse().ok());
        assert_eq!(client_addr(&trusted, XFF, PROXY.parse().ok(), &spoof), "1.2.3.4".parse().ok());
        assert_eq!(client_addr(&trusted, XFF, PROXY.parse().ok(), &[]), "10.0.0.5".parse().ok());
        assert_eq!(client_addr(&[], XFF, PROXY.parse().ok(), &spoof), "10.0.0.5".parse().ok());
        assert_eq!(client_addr(&trusted, XFF, None, &spoof), None);
    }

    #[test]
    fn the_chain_is_read_from_the_right_past_trusted_proxies() {
        let trusted = nets(&["10.0.0.0/8", "2001:db8:ffff::/48"]);
        let peer = PROXY.parse().ok();
        // The client prepended a lie; the proxies appended the truth.
        let xff = [h("X-Forwarded-For", "6.6.6.6, 198.51.100.7, 10.1.1.1")];
        assert_eq!(client_addr(&trusted, XFF, peer, &xff), "198.51.100.7".parse().ok());
        // Split over two headers, in order.
        let two = [h("x-forwarded-for", "6.6.6.6, 198.51.100.7"), h("x-forwarded-for", "10.1.1.1")];
        assert_eq!(client_addr(&trusted, XFF, peer, &two), "198.51.100.7".parse().ok());
        let fwd = [h(
            "Forwarded",
            "for=6.6.6.6, for=\"[2001:db8::17]:4711\";proto=https, for=\"[2001:db8:ffff::1]\";by=x",
        )];
        assert_eq!(client_addr(&trusted, FWD, peer, &fwd), "2001:db8::17".parse().ok());
        // Every hop trusted: the leftmost.
        let all = [h("x-forwarded-for", "10.9.9.9, 10.1.1.1")];
        assert_eq!(client_addr(&trusted, XFF, peer, &all), "10.9.9.9".parse().ok());
    }

    #[test]
    fn only_the_header_the_proxy_writes_is_read() {
        let trusted = nets(&["10.0.0.0/8"]);
        let peer = PROXY.parse().ok();
        // nginx appended the client it saw to X-Forwarded-For and passed the client's own
        // Forwarded through: that one is the client's word, never believed.
        let spoofed = [h("forwarded", "for=192.0.2.60:80"), h("x-forwarded-for", "198.51.100.7")];
        assert_eq!(client_addr(&trusted, XFF, peer, &spoofed), "198.51.100.7".parse().ok());
        let alone = [h("forwarded", "for=192.0.2.60")];
        assert_eq!(client_addr(&trusted, XFF, peer, &alone), "10.0.0.5".parse().ok(), "the proxy itself");
        // And the other way round, for a proxy that writes Forwarded.
        let spoofed = [h("x-forwarded-for", "192.0.2.60"), h("forwarded", "for=198.51.100.7")];
        assert_eq!(client_addr(&trusted, FWD, peer, &spoofed), "198.51.100.7".parse().ok());
        let alone = [h("x-forwarded-for", "192.0.2.60")];
        assert_eq!(client_addr(&trusted, FWD, peer, &alone), "10.0.0.5".parse().ok(), "the proxy itself");
        assert_eq!(ForwardedHeader::parse(" X-Forwarded-For"), Some(XFF));
        assert_eq!(ForwardedHeader::parse("FORWARDED"), Some(FWD));
        assert_eq!(ForwardedHeader::parse("x-real-ip"), None);
    }

    #[test]
    fn an_entry_that_is_not_an_address_stops_at_the_last_proxy() {
        let trusted = nets(&["10.0.0.0/8"]);
        let peer = PROXY.parse().ok();
        for value in ["unknown", "_hidden", "", "1.2.3.4.5", "for=1.2.3.4"] {
            let xff = [h("x-forwarded-for", value)];
            assert_eq!(client_addr(&trusted, XFF, peer, &xff), "10.0.0.5".parse().ok(), "{value:?}");
        }
        let fwd = [h("forwarded", "for=unknown, for=10.2.2.2")];
        assert_eq!(client_addr(&trusted, FWD, peer, &fwd), "10.2.2.2".parse().ok());
        let bytes = [httparse::Header { name: "x-forwarded-for", value: b"\xff" }];
        assert_eq!(client_addr(&trusted, XFF, peer, &bytes), "10.0.0.5".parse().ok());
    }
}
