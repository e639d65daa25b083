//! The endpoint as an OAuth 2.1 protected resource (`HttpConfig::protected_resource`):
//! the RFC 9728 metadata document served without a token, the token only from
//! `Authorization: Bearer`, and the RFC 6750 challenges (`401` without credentials or
//! with a token the host refuses, `400` for a malformed header, `403` for too little
//! scope), each carrying `resource_metadata`.

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, ProtectedResource, Verdict};
use mcp_fixture as everything;
use mcp_tests::wire::{Client, Response, client_with, parse_responses, post, req};
use serde_json::{Value, json};

const RESOURCE: &str = "http://localhost:3000/mcp";
const METADATA: &str = "http://localhost:3000/.well-known/oauth-protected-resource/mcp";

fn protected() -> HttpConfig {
    let pr = ProtectedResource::new(RESOURCE, ["https://auth.example.com"])
        .unwrap()
        .scopes_supported(["mcp:read", "mcp:tools"])
        .unwrap();
    // `Everyone` is overridden: a protected resource always asks the host about a token.
    let mut http =
        HttpConfig::new(AllowedOrigins::List(vec!["http://localhost:3000".into()]), Authorization::Everyone);
    http.protected_resource(pr);
    http
}

/// A client whose host counts the `Authorize` events it is asked.
fn client() -> Client {
    client_with(protected(), everything::catalog())
}

fn get(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: localhost:3000\r\n{extra}\r\n").into_bytes()
}

fn one(c: &mut Client, raw: &[u8]) -> Response {
    let mut r = parse_responses(&c.feed(raw, usize::MAX));
    assert_eq!(r.len(), 1, "{r:?}");
    r.remove(0)
}

fn ping(auth: Option<&str>) -> Vec<u8> {
    let body = req(1, "tools/list", json!({}));
    match auth {
        Some(a) => post(&body, &[("Authorization", a)]),
        None => post(&body, &[]),
    }
}

#[test]
fn the_metadata_document_is_served_without_a_token_at_both_well_known_paths() {
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let mut c = client();
        c.verdict = Verdict::Failed; // the host is never asked
        let r = one(&mut c, &get(path, "Origin: https://inspector.example\r\n"));
        assert_eq!(r.status, 200, "{path}: {r:?}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("cache-control"), Some("public, max-age=3600"));
        assert_eq!(r.header("access-control-allow-origin"), Some("*"), "public, for browser clients");
        assert_eq!(
            r.json(),
            json!({
                "resource": RESOURCE,
                "authorization_servers": ["https://auth.example.com"],
                "scopes_supported": ["mcp:read", "mcp:tools"],
                "bearer_methods_supported": ["header"]
            })
        );
        assert!(!r.closes(), "keep-alive");
    }
    let mut c = client();
    let r = one(&mut c, b"POST /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: localhost:3000\r\nContent-Length: 0\r\n\r\n");
    assert_eq!((r.status, r.header("allow")), (405, Some("GET")));
    let r = one(&mut client(), &get("/.well-known/oauth-protected-resource/other", ""));
    assert_eq!(r.status, 404, "another resource's path");
}

#[test]
fn without_credentials_the_challenge_names_the_metadata_and_the_scopes() {
    for auth in [None, Some("Basic dXNlcjpwYXNz")] {
        let mut c = client();
        c.verdict = Verdict::Failed; // not asked: a 500 would show it was
        let r = one(&mut c, &ping(auth));
        assert_eq!(r.status, 401, "{auth:?}: {r:?}");
        assert_eq!(
            r.header("www-authenticate"),
            Some(format!("Bearer scope=\"mcp:read mcp:tools\", resource_metadata=\"{METADATA}\"").as_str()),
            "no error parameter without credentials"
        );
    }
}

#[test]
fn a_malformed_authorization_header_is_400_invalid_request() {
    for bad in ["Bearer", "Bearer a b", "Bearer =abc"] {
        let mut c = client();
        c.verdict = Verdict::Failed;
        let r = one(&mut c, &ping(Some(bad)));
        assert_eq!(r.status, 400, "{bad:?}: {r:?}");
        assert_eq!(
            r.header("www-authenticate"),
            Some(format!("Bearer error=\"invalid_request\", resource_metadata=\"{METADATA}\"").as_str())
        );
    }
    let body = req(1, "tools/list", json!({}));
    let two = post(&body, &[("Authorization", "Bearer a"), ("+Authorization", "Bearer b")]);
    assert_eq!(one(&mut client(), &two).status, 400, "two Authorization headers");
}

#[test]
fn the_hosts_verdict_on_a_token_becomes_the_rfc_challenge() {
    let mut c = client();
    c.verdict = Verdict::Allow;
    let r = one(&mut c, &ping(Some("Bearer good")));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json()["result"]["tools"].is_array());
    assert!(r.header("www-authenticate").is_none());

    let mut c = client();
    c.verdict = Verdict::Unauthenticated;
    let r = one(&mut c, &ping(Some("Bearer expired")));
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("www-authenticate"),
        Some(
            format!("Bearer error=\"invalid_token\", scope=\"mcp:read mcp:tools\", resource_metadata=\"{METADATA}\"")
                .as_str()
        )
    );

    let mut c = client();
    c.verdict = Verdict::Forbidden;
    let r = one(&mut c, &ping(Some("Bearer narrow")));
    assert_eq!(r.status, 403);
    let challenge = r.header("www-authenticate").unwrap_or_default().to_owned();
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp:read mcp:tools\""),
        "{challenge}"
    );
    assert!(challenge.ends_with(&format!("resource_metadata=\"{METADATA}\"")), "{challenge}");
}

#[test]
fn a_body_refusal_carries_the_challenge_and_keeps_the_connection() {
    let mut http = protected();
    http.authorize_body(true);
    let mut c = client_with(http, everything::catalog());
    c.verdict = Verdict::Allow;
    c.body_verdict = Verdict::Forbidden;
    let r = one(&mut c, &ping(Some("Bearer narrow")));
    assert_eq!(r.status, 403);
    assert!(r.header("www-authenticate").unwrap_or_default().contains("insufficient_scope"));
    assert!(!r.closes());
    // The metadata is still served with body authorization on.
    c.body_verdict = Verdict::Failed;
    let r = one(&mut c, &get("/.well-known/oauth-protected-resource/mcp", ""));
    assert_eq!(r.status, 200);
}

#[test]
fn the_same_outputs_whole_or_split() {
    let script: Vec<u8> = [
        get("/.well-known/oauth-protected-resource/mcp", ""),
        ping(Some("Bearer good")),
        ping(Some("Bearer")),
    ]
    .concat();
    let run = |chunk: usize| {
        let mut c = client();
        c.verdict = Verdict::Allow;
        c.feed(&script, chunk)
    };
    let whole = run(usize::MAX);
    let statuses: Vec<u16> = parse_responses(&whole).iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 200, 400]);
    for chunk in [1, 5, 64] {
        assert_eq!(run(chunk), whole, "split every {chunk}");
    }
    let _: Value = serde_json::from_slice(&parse_responses(&whole)[0].body).unwrap();
}
