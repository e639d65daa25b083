//! Behind a reverse proxy: the `Host` names the server answers to beyond loopback, and the
//! client's address taken from `Forwarded` / `X-Forwarded-For` only when the peer is a
//! trusted proxy.

use std::net::{IpAddr, SocketAddr};

use mcp_engine::http::{
    AllowedOrigins, Authorization, ForwardedHeader, HostName, HttpConfig, HttpEngine, HttpEvent, IpNet,
    Verdict,
};
use mcp_engine::{Config, Instant};
use mcp_fixture as everything;
use mcp_tests::wire::{parse_responses, post, req};
use serde_json::json;

fn engine(http: HttpConfig) -> HttpEngine {
    HttpEngine::new(Config::new("s", "1"), http, everything::catalog())
}

/// The status of a `server/discover` with `extra` headers, from `peer`; and the client
/// address the host was shown (under `Authorization::Host`).
fn discover(e: &mut HttpEngine, peer: &str, extra: &[(&str, &str)]) -> (u16, Option<IpAddr>) {
    let peer: SocketAddr = peer.parse().unwrap();
    let conn = e.open(Instant::ZERO, Some(peer)).unwrap();
    let raw = post(&req(1, "server/discover", json!({})), extra);
    e.handle_input(Instant::ZERO, conn, &raw);
    let mut shown = None;
    while let Some(ev) = e.poll_event() {
        match ev {
            HttpEvent::Authorize(a) => {
                shown = a.client;
                assert_eq!(e.client_addr(conn), shown);
                e.authorize(Instant::ZERO, conn, Verdict::Allow);
            }
            HttpEvent::Mcp(ev) => everything::respond(ev),
            _ => {}
        }
    }
    let r = parse_responses(e.pending_output(conn));
    assert_eq!(r.len(), 1, "{r:?}");
    (r[0].status, shown)
}

fn hosts(list: &[&str]) -> Vec<HostName> {
    list.iter().map(|h| HostName::parse(h).unwrap()).collect()
}

#[test]
fn behind_a_proxy_the_public_host_is_served_and_others_are_403() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.allowed_hosts(hosts(&["mcp.example.com"]));
    let mut e = engine(http.clone());
    let peer = "10.0.0.5:4000";
    assert_eq!(discover(&mut e, peer, &[("Host", "mcp.example.com")]).0, 200);
    assert_eq!(discover(&mut e, peer, &[("Host", "MCP.example.com:443")]).0, 200);
    assert_eq!(discover(&mut e, peer, &[("Host", "localhost:3000")]).0, 200, "loopback still on");
    assert_eq!(discover(&mut e, peer, &[("Host", "evil.example")]).0, 403);
    assert_eq!(discover(&mut e, peer, &[("Host", "")]).0, 403, "no Host");
    // A browser page elsewhere (DNS rebinding) names its own origin.
    let ours = [("Host", "mcp.example.com"), ("Origin", "https://mcp.example.com")];
    assert_eq!(discover(&mut e, peer, &ours).0, 200);
    let theirs = [("Host", "mcp.example.com"), ("Origin", "https://evil.example")];
    assert_eq!(discover(&mut e, peer, &theirs).0, 403);
    // Off loopback, only the list.
    http.loopback(false);
    let mut e = engine(http);
    assert_eq!(discover(&mut e, peer, &[("Host", "localhost:3000")]).0, 403);
    assert_eq!(discover(&mut e, peer, &[("Host", "mcp.example.com")]).0, 200);
}

#[test]
fn without_a_list_only_the_loopback_rule_applies() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let mut e = engine(http.clone());
    assert_eq!(discover(&mut e, "127.0.0.1:1", &[("Host", "mcp.example.com")]).0, 403);
    http.loopback(false);
    let mut e = engine(http);
    assert_eq!(discover(&mut e, "127.0.0.1:1", &[("Host", "mcp.example.com")]).0, 200);
}

#[test]
fn the_client_address_comes_from_a_trusted_proxy_only() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let nets = ["10.0.0.0/8".parse::<IpNet>().unwrap(), "::1/128".parse().unwrap()];
    http.trusted_proxies(ForwardedHeader::XForwardedFor, nets);
    let mut e = engine(http.clone());
    let ip = |s: &str| s.parse::<IpAddr>().ok();
    let xff = [("X-Forwarded-For", "6.6.6.6, 198.51.100.7")];
    assert_eq!(discover(&mut e, "10.0.0.5:4000", &xff), (200, ip("198.51.100.7")));
    assert_eq!(discover(&mut e, "[::1]:4000", &xff), (200, ip("198.51.100.7")));
    // A client that is not a proxy cannot name an address.
    assert_eq!(discover(&mut e, "203.0.113.9:4000", &xff), (200, ip("203.0.113.9")));
    // Nor can one behind the proxy with the header the proxy does not write (and passes
    // through): a `Forwarded` of its own is ignored, the proxy's `X-Forwarded-For` holds.
    for spoof in ["for=192.0.2.1", "for=192.0.2.2", "for=\"[2001:db8::17]:4711\""] {
        let both = [("Forwarded", spoof), ("X-Forwarded-For", "198.51.100.7")];
        assert_eq!(discover(&mut e, "10.0.0.5:4000", &both), (200, ip("198.51.100.7")), "{spoof}");
        let alone = [("Forwarded", spoof)];
        assert_eq!(discover(&mut e, "10.0.0.5:4000", &alone), (200, ip("10.0.0.5")), "{spoof}");
    }
    // A proxy that writes `Forwarded`: read, and a client's `X-Forwarded-For` ignored.
    http.trusted_proxies(ForwardedHeader::Forwarded, nets);
    let mut e = engine(http);
    let fwd = [("Forwarded", "for=\"[2001:db8::17]:4711\";proto=https"), ("X-Forwarded-For", "6.6.6.6")];
    assert_eq!(discover(&mut e, "10.0.0.5:4000", &fwd), (200, ip("2001:db8::17")));
    assert_eq!(discover(&mut e, "10.0.0.5:4000", &xff), (200, ip("10.0.0.5")));
    // Without the setting, forwarding headers are ignored.
    let mut e = engine(HttpConfig::new(AllowedOrigins::Any, Authorization::Host));
    assert_eq!(discover(&mut e, "10.0.0.5:4000", &xff), (200, ip("10.0.0.5")));
}
