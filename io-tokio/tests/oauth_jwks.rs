//! The tokio adapter's key-set handling (feature `oauth`, `JwksVerifier`): discovery from
//! the issuer's metadata (RFC 8414, then OpenID Connect), a key set that a test rotates on
//! a loopback server, refreshes on an unknown `kid` at most once per interval, the last
//! good set kept when a refresh fails, the bounds on every fetch (size, time, scheme,
//! redirects), a key set from a file, and what a cached token costs. Tokens are minted
//! with jsonwebtoken from the fixed test keys in `engine/tests/keys`.

#![cfg(feature = "oauth")]

mod http_support;
mod oauth_support;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_engine::http::{
    AllowedOrigins, Authorization, HttpConfig, HttpEngine, JwtVerifier, ScopePolicy, TokenError, Verdict,
};
use mcp_engine::{Catalog, Config};
use mcp_io_tokio::Authorizer;
use mcp_io_tokio::http::AuthorizeInfo;
use mcp_io_tokio::http::oauth::{JwksSource, JwksVerifier, OAuthAuthorizer, OAuthError, VerifyError};
use oauth_support::{Route, Routes, challenge_error, list_tools, protected_server};
use serde_json::{Value, json};

const RESOURCE: &str = "https://mcp.example.com/mcp";
const RSA_1: &[u8] = include_bytes!("../../engine/tests/keys/rsa-1.pem");
const RSA_2: &[u8] = include_bytes!("../../engine/tests/keys/rsa-2.pem");
const JWKS: &str = include_str!("../../engine/tests/keys/jwks.json");

/// The public keys named by `kids`, as a JWKS document.
fn jwks(kids: &[&str]) -> Value {
    let all: Value = serde_json::from_str(JWKS).unwrap();
    let keys: Vec<Value> = kids
        .iter()
        .map(|kid| all["keys"].as_array().unwrap().iter().find(|k| k["kid"] == *kid).unwrap().clone())
        .collect();
    json!({ "keys": keys })
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A good access token of `issuer` for [`RESOURCE`], signed RS256 by the key `kid`.
fn mint(issuer: &str, kid: &str, sub: &str) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.typ = Some("at+jwt".into());
    header.kid = Some(kid.into());
    let claims = json!({
        "iss": issuer, "aud": RESOURCE, "sub": sub, "client_id": "c",
        "iat": now(), "exp": now() + 600, "scope": "mcp:read mcp:tools",
    });
    let pem = if kid == "rsa-2" { RSA_2 } else { RSA_1 };
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_rsa_pem(pem).unwrap()).unwrap()
}

/// An authorization server's metadata and key set on a loopback server: the metadata at
/// the RFC 8414 path, the key set holding `kids`.
async fn issuer_with(kids: &[&str]) -> Routes {
    let r = Routes::start().await;
    let iss = r.url();
    r.json(
        "/.well-known/oauth-authorization-server",
        &json!({ "issuer": iss, "jwks_uri": format!("{iss}/jwks") }),
    );
    r.json("/jwks", &jwks(kids));
    r
}

fn keys_of(r: &Routes) -> JwksVerifier {
    JwksVerifier::new(JwtVerifier::new(r.url(), RESOURCE)).allow_loopback_http(true)
}

#[tokio::test]
async fn the_key_set_is_found_through_the_issuers_metadata() {
    let r = issuer_with(&["rsa-1"]).await;
    let keys = keys_of(&r);
    assert_eq!(keys.load().await, Ok(1));
    assert_eq!(r.hits("/.well-known/oauth-authorization-server"), 1);
    assert_eq!(r.hits("/jwks"), 1);
    let t = keys.verify(&mint(&r.url(), "rsa-1", "alice")).await.expect("a good token");
    assert_eq!((t.subject(), t.client_id(), t.issuer()), ("alice", Some("c"), r.url().as_str()));
    assert!(t.has_scope("mcp:tools") && !t.has_scope("mcp:admin"));
    // Loading again rediscovers nothing: the jwks_uri is kept.
    assert_eq!(keys.load().await, Ok(1));
    assert_eq!((r.hits("/.well-known/oauth-authorization-server"), r.hits("/jwks")), (1, 2));
}

#[tokio::test]
async fn openid_discovery_is_the_fallback_and_the_issuer_must_match() {
    let r = Routes::start().await;
    let iss = r.url();
    r.json("/.well-known/openid-configuration", &json!({ "issuer": iss, "jwks_uri": format!("{iss}/jwks") }));
    r.json("/jwks", &jwks(&["rsa-1"]));
    assert_eq!(keys_of(&r).load().await, Ok(1));
    assert_eq!(r.hits("/.well-known/oauth-authorization-server"), 1, "RFC 8414 asked first (404)");

    // Metadata naming another issuer is refused (RFC 8414 §3.3), as is one without keys.
    r.json(
        "/.well-known/openid-configuration",
        &json!({ "issuer": "https://evil.example", "jwks_uri": format!("{iss}/jwks") }),
    );
    assert!(matches!(keys_of(&r).load().await, Err(OAuthError::Metadata(m)) if m.contains("evil.example")));
    r.json("/.well-known/openid-configuration", &json!({ "issuer": iss }));
    assert!(matches!(keys_of(&r).load().await, Err(OAuthError::Metadata(m)) if m.contains("jwks_uri")));
    // A jwks_uri that is plain http off loopback is refused.
    r.json(
        "/.well-known/openid-configuration",
        &json!({ "issuer": iss, "jwks_uri": "http://keys.example/jwks" }),
    );
    assert!(matches!(keys_of(&r).load().await, Err(OAuthError::Fetch(m)) if m.contains("not an https URL")));
}

#[tokio::test]
async fn plain_http_is_refused_unless_allowed_and_then_only_on_loopback() {
    let r = issuer_with(&["rsa-1"]).await;
    let strict = JwksVerifier::new(JwtVerifier::new(r.url(), RESOURCE));
    assert!(matches!(strict.load().await, Err(OAuthError::Metadata(m)) if m.contains("not an https URL")));
    assert_eq!(r.hits("/.well-known/oauth-authorization-server"), 0, "nothing was fetched");
    let off_loopback = keys_of(&r).source(JwksSource::Url("http://keys.example/jwks".into()));
    assert!(matches!(off_loopback.load().await, Err(OAuthError::Fetch(m)) if m.contains("not an https URL")));
}

#[tokio::test]
async fn an_unknown_kid_is_refreshed_in_once_rotated() {
    let r = issuer_with(&["rsa-1"]).await;
    let keys = Arc::new(keys_of(&r).refresh_interval(Duration::ZERO));
    assert_eq!(keys.load().await, Ok(1));
    let new_key_token = mint(&r.url(), "rsa-2", "bob");
    // Not published yet: a refresh is made, and the kid is still unknown.
    assert!(matches!(
        keys.verify(&new_key_token).await,
        Err(VerifyError::Invalid(TokenError::UnknownKid(_)))
    ));
    assert_eq!(r.hits("/jwks"), 2);
    // The issuer rotates the new key in: the next token naming it refreshes the set.
    r.json("/jwks", &jwks(&["rsa-1", "rsa-2"]));
    let t = keys.verify(&new_key_token).await.expect("the rotated-in key");
    assert_eq!(t.subject(), "bob");
    assert_eq!((r.hits("/jwks"), keys.key_count()), (3, 2));
    // Known now: no further fetch.
    keys.verify(&new_key_token).await.unwrap();
    assert_eq!(r.hits("/jwks"), 3);

    // Over HTTP, through the authorizer: a third key rotated in is picked up by the
    // request that names it (the asynchronous path), and the old key rotated out stops
    // working once the set is refreshed.
    let addr = protected_server(RESOURCE, &r.url(), OAuthAuthorizer::jwt(Arc::clone(&keys))).await;
    r.json("/jwks", &jwks(&["rsa-2", "ec-1"]));
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("at+jwt".into());
    header.kid = Some("ec-1".into());
    let claims = json!({ "iss": r.url(), "aud": RESOURCE, "sub": "carol", "exp": now() + 600 });
    let ec = EncodingKey::from_ec_pem(include_bytes!("../../engine/tests/keys/ec-1.pem")).unwrap();
    let ec_token = jsonwebtoken::encode(&header, &claims, &ec).unwrap();
    assert_eq!(list_tools(addr, Some(&ec_token)).await.status, 200);
    let old = list_tools(addr, Some(&mint(&r.url(), "rsa-1", "alice"))).await;
    assert_eq!((old.status, challenge_error(&old).as_deref()), (401, Some("invalid_token")));
}

#[tokio::test]
async fn unknown_kids_refresh_at_most_once_per_interval() {
    let r = issuer_with(&["rsa-1"]).await;
    let keys = Arc::new(keys_of(&r).refresh_interval(Duration::from_secs(3600)));
    assert_eq!(keys.load().await, Ok(1));
    r.json("/jwks", &jwks(&["rsa-1", "rsa-2"]));
    // Many requests with unknown kids, some at once: within the interval, no fetch.
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (keys, token) = (Arc::clone(&keys), mint(&r.url(), "rsa-2", &format!("user-{i}")));
        tasks.push(tokio::spawn(async move { keys.verify(&token).await }));
    }
    for t in tasks {
        assert!(matches!(t.await.unwrap(), Err(VerifyError::Invalid(TokenError::UnknownKid(_)))));
    }
    assert_eq!(r.hits("/jwks"), 1, "the load only");
    // The same through the authorizer.
    let auth = OAuthAuthorizer::jwt(Arc::clone(&keys));
    let token = mint(&r.url(), "rsa-2", "x");
    let info = AuthorizeInfo::new(None, [("authorization", format!("Bearer {token}"))]);
    assert_eq!(auth.authorize(&info).await, Verdict::Unauthenticated);
    assert_eq!(r.hits("/jwks"), 1);
}

#[tokio::test]
async fn concurrent_unknown_kids_make_one_fetch() {
    let r = issuer_with(&["rsa-1"]).await;
    let keys = Arc::new(keys_of(&r).refresh_interval(Duration::from_secs(3600)));
    // Never loaded: the first unknown kid is due a refresh; twenty at once make one.
    r.json("/jwks", &jwks(&["rsa-1", "rsa-2"]));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (keys, token) = (Arc::clone(&keys), mint(&r.url(), "rsa-2", &format!("user-{i}")));
        tasks.push(tokio::spawn(async move { keys.verify(&token).await }));
    }
    for t in tasks {
        assert!(t.await.unwrap().is_ok());
    }
    assert_eq!(r.hits("/jwks"), 1);
}

#[tokio::test]
async fn a_failed_refresh_keeps_the_last_good_set() {
    let r = issuer_with(&["rsa-1"]).await;
    let keys = keys_of(&r).refresh_interval(Duration::ZERO);
    assert_eq!(keys.load().await, Ok(1));
    let good = mint(&r.url(), "rsa-1", "alice");
    let unknown = mint(&r.url(), "rsa-2", "bob");
    for (what, route) in [
        ("a server error", Route::Answer(500, b"{}".to_vec())),
        ("not a key set", Route::Answer(200, b"<html>".to_vec())),
        ("no usable key", Route::Answer(200, br#"{"keys":[{"kty":"oct","k":"AAAA"}]}"#.to_vec())),
    ] {
        r.set("/jwks", route);
        assert!(
            matches!(keys.verify(&unknown).await, Err(VerifyError::Invalid(TokenError::UnknownKid(_)))),
            "{what}"
        );
        assert_eq!(keys.key_count(), 1, "{what}");
        assert_eq!(keys.verify(&good).await.unwrap().subject(), "alice", "{what}: the last good set serves");
    }
    // A failed key-set fetch makes discovery run again next time (the keys may have moved).
    let before = r.hits("/.well-known/oauth-authorization-server");
    r.set("/jwks", Route::Answer(500, b"{}".to_vec()));
    assert!(keys.load().await.is_err());
    r.json("/jwks", &jwks(&["rsa-1", "rsa-2"]));
    assert_eq!(keys.load().await, Ok(2));
    assert_eq!(r.hits("/.well-known/oauth-authorization-server"), before + 1);
}

#[tokio::test]
async fn every_fetch_is_bounded_in_size_and_time_and_redirects_are_not_followed() {
    let r = issuer_with(&["rsa-1"]).await;
    // Bigger than the cap.
    let small = keys_of(&r).source(JwksSource::Url(format!("{}/jwks", r.url()))).max_response_bytes(100);
    assert!(matches!(small.load().await, Err(OAuthError::Fetch(m)) if m.contains("over 100 bytes")));
    // No answer: the deadline ends the fetch (the assertion is on the error, not the time).
    r.set("/hang", Route::Hang);
    let hanging =
        keys_of(&r).source(JwksSource::Url(format!("{}/hang", r.url()))).timeout(Duration::from_millis(200));
    assert!(matches!(
        http_support::patient("the fetch deadline", hanging.load()).await,
        Err(OAuthError::Fetch(m)) if m.contains("no answer in time")
    ));
    // A redirect is an error, not followed.
    r.set("/moved", Route::Answer(302, b"{}".to_vec()));
    let moved = keys_of(&r).source(JwksSource::Url(format!("{}/moved", r.url())));
    assert!(matches!(moved.load().await, Err(OAuthError::Fetch(m)) if m.contains("status 302")));
}

#[tokio::test]
async fn a_key_set_from_a_file() {
    let dir = std::env::temp_dir().join(format!("mcp-oauth-jwks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("jwks.json");
    std::fs::write(&path, serde_json::to_vec(&jwks(&["rsa-1", "rsa-2"])).unwrap()).unwrap();
    let keys = JwksVerifier::new(JwtVerifier::new("https://as.example", RESOURCE))
        .source(JwksSource::File(path.clone()));
    assert_eq!(keys.load().await, Ok(2));
    assert!(keys.verify(&mint("https://as.example", "rsa-2", "dan")).await.is_ok());
    let capped = JwksVerifier::new(JwtVerifier::new("https://as.example", RESOURCE))
        .source(JwksSource::File(path.clone()))
        .max_response_bytes(64);
    assert!(matches!(capped.load().await, Err(OAuthError::File(_, m)) if m.contains("over 64 bytes")));
    let missing = JwksVerifier::new(JwtVerifier::new("https://as.example", RESOURCE))
        .source(JwksSource::File(dir.join("none.json")));
    assert!(matches!(missing.load().await, Err(OAuthError::File(..))));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_token_that_verified_is_decided_at_once_without_allocating() {
    let r = issuer_with(&["rsa-1"]).await;
    let keys = Arc::new(keys_of(&r));
    keys.load().await.unwrap();
    let token = mint(&r.url(), "rsa-1", "alice");
    let auth = OAuthAuthorizer::jwt(Arc::clone(&keys)).require_scopes(["mcp:read"]);
    let mut info = AuthorizeInfo::new(None, [("authorization", format!("Bearer {token}"))]);
    // The scope names of a server whose policy knows `mcp:read` and `mcp:admin`.
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    http.scope_policy(
        ScopePolicy::new().require("tools/call", ["mcp:read"]).unwrap().known(["mcp:admin"]).unwrap(),
    );
    let engine = HttpEngine::new(Config::new("t", "1"), http, Catalog::empty());
    info.scopes = engine.scopes().clone();
    // Not seen before: verified in a task (the signature check stays off the engine's
    // task).
    assert_eq!(auth.authorize_now(&info), None);
    let first = auth.authorize(&info).await;
    let Verdict::Grant(grant) = first else { panic!("{first:?}") };
    assert_eq!(grant.scope_set(), info.scopes.set_of(["mcp:read"]), "the token's scopes the server knows");
    // Seen: decided at once, from the cache, allocating nothing.
    let mut again = None;
    let info_ref = &info;
    let counts = allocation_counter::measure(|| {
        for _ in 0..100 {
            again = auth.authorize_now(info_ref);
        }
    });
    assert_eq!(again, Some(first));
    assert_eq!(counts.count_total, 0, "a cached token allocates nothing: {counts:?}");
    // A scope it lacks: 403, at once too.
    let admin = OAuthAuthorizer::jwt(Arc::clone(&keys)).require_scopes(["mcp:admin"]);
    assert_eq!(admin.authorize_now(&info), Some(Verdict::Forbidden));
    // A new key set empties the engine's cache: the token is verified in a task again.
    keys.load().await.unwrap();
    assert_eq!(auth.authorize_now(&info), None);
}

#[tokio::test]
async fn a_bad_signature_is_never_decided_on_the_engines_task() {
    let r = issuer_with(&["rsa-1"]).await;
    let keys = Arc::new(keys_of(&r));
    keys.load().await.unwrap();
    let good = mint(&r.url(), "rsa-1", "mallory");
    let (signed, sig) = good.rsplit_once('.').unwrap();
    let mut bad: Vec<u8> = sig.bytes().collect();
    let mid = bad.len() / 2;
    bad[mid] = if bad[mid] == b'A' { b'B' } else { b'A' };
    let forged = format!("{signed}.{}", String::from_utf8(bad).unwrap());
    let auth = OAuthAuthorizer::jwt(Arc::clone(&keys));
    let info = AuthorizeInfo::new(None, [("authorization", format!("Bearer {forged}"))]);
    for _ in 0..3 {
        assert_eq!(auth.authorize_now(&info), None, "a signature check goes to a task, every time");
        assert_eq!(auth.authorize(&info).await, Verdict::Unauthenticated);
    }
    assert_eq!(keys.verify(&forged).await.map(|_| ()), Err(VerifyError::Invalid(TokenError::Signature)));
}

#[tokio::test]
async fn an_authorization_server_that_does_not_answer_is_503_to_try_again() {
    // A loopback port nobody listens on: the introspection endpoint does not answer.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let endpoint = format!("http://{closed}/introspect");
    let issuer = "http://127.0.0.1:1";
    let verifier = Arc::new(
        mcp_io_tokio::http::oauth::IntrospectionVerifier::new(
            endpoint,
            issuer,
            "http://127.0.0.1/mcp",
            "rs",
            "secret",
        )
        .allow_loopback_http(true)
        .timeout(Duration::from_secs(2)),
    );
    assert_eq!(verifier.verify("some-token").await.map(|_| ()), Err(VerifyError::Unreachable));
    let addr =
        protected_server("http://127.0.0.1/mcp", issuer, OAuthAuthorizer::introspection(verifier)).await;
    let r = list_tools(addr, Some("some-token")).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
}
