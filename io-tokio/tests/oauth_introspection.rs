//! Introspection's bounds (feature `oauth`, `IntrospectionVerifier`): a token the
//! authorization server refused is remembered for a while, by its digest, so repeating it
//! costs the server nothing more; the refusals are kept apart from the active answers and
//! bounded; and at most `max_in_flight` requests are at the server at once, a token past
//! that being refused at once (`503`, `Retry-After: 1`) rather than queued. Against a
//! loopback introspection endpoint (`oauth_support::Routes`) that counts what it is asked.

#![cfg(feature = "oauth")]

mod http_support;
mod oauth_support;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_engine::http::{TokenError, Verdict};
use mcp_io_tokio::Authorizer;
use mcp_io_tokio::http::AuthorizeInfo;
use mcp_io_tokio::http::oauth::{IntrospectionVerifier, OAuthAuthorizer, VerifyError};
use oauth_support::{Route, Routes, challenge_error, list_tools, protected_server};
use serde_json::json;

const RESOURCE: &str = "http://127.0.0.1/mcp";
const ENDPOINT: &str = "/introspect";

fn verifier(r: &Routes) -> IntrospectionVerifier {
    IntrospectionVerifier::new(format!("{}{ENDPOINT}", r.url()), r.url(), RESOURCE, "rs", "secret")
        .allow_loopback_http(true)
}

fn inactive(r: &Routes) {
    r.json(ENDPOINT, &json!({ "active": false }));
}

fn active(r: &Routes, sub: &str) {
    let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 600;
    r.json(ENDPOINT, &json!({ "active": true, "sub": sub, "aud": RESOURCE, "exp": exp }));
}

async fn outcome(v: &IntrospectionVerifier, token: &str) -> Result<(), VerifyError> {
    v.verify(token).await.map(|_| ())
}

#[tokio::test]
async fn a_refused_token_is_refused_again_without_asking() {
    let r = Routes::start().await;
    inactive(&r);
    let v = Arc::new(verifier(&r));
    for _ in 0..5 {
        assert_eq!(outcome(&v, "bad-1").await, Err(VerifyError::Inactive));
    }
    assert_eq!(r.hits(ENDPOINT), 1, "asked once");
    assert_eq!(outcome(&v, "bad-2").await, Err(VerifyError::Inactive));
    assert_eq!(r.hits(ENDPOINT), 2, "another token is asked about");
    // Through a protected server: 401 invalid_token every time, and no more requests.
    let addr = protected_server(RESOURCE, &r.url(), OAuthAuthorizer::introspection(Arc::clone(&v))).await;
    for _ in 0..3 {
        let resp = list_tools(addr, Some("bad-1")).await;
        assert_eq!((resp.status, challenge_error(&resp).as_deref()), (401, Some("invalid_token")));
    }
    assert_eq!(r.hits(ENDPOINT), 2);
    // Decided at once, on the engine's task.
    let auth = OAuthAuthorizer::introspection(Arc::clone(&v));
    let info = AuthorizeInfo::new(None, [("authorization", "Bearer bad-1".to_owned())]);
    assert_eq!(auth.authorize_now(&info), Some(Verdict::Unauthenticated));
    // An answer that does not fit this resource is remembered as well, with its reason.
    r.json(ENDPOINT, &json!({ "active": true, "sub": "x", "aud": "https://other.example/mcp" }));
    for _ in 0..3 {
        assert_eq!(outcome(&v, "elsewhere").await, Err(VerifyError::Invalid(TokenError::Audience)));
    }
    // So is a 400 (a token the server does not introspect).
    r.set(ENDPOINT, Route::Answer(400, br#"{"error":"unsupported_token_type"}"#.to_vec()));
    for _ in 0..3 {
        assert_eq!(outcome(&v, "a.jwt.perhaps").await, Err(VerifyError::Inactive));
    }
    assert_eq!(r.hits(ENDPOINT), 4);
    // An answer the server could not give is not: the next try asks again, and passes.
    r.set(ENDPOINT, Route::Answer(503, b"{}".to_vec()));
    assert_eq!(outcome(&v, "flaky").await, Err(VerifyError::Unreachable));
    active(&r, "flaky");
    assert_eq!(outcome(&v, "flaky").await, Ok(()));
    assert_eq!(r.hits(ENDPOINT), 6);
    // Without the refusal cache, every repeat asks.
    inactive(&r);
    let uncached = verifier(&r).refusal_cache_time(Duration::ZERO);
    for _ in 0..3 {
        assert_eq!(outcome(&uncached, "bad-1").await, Err(VerifyError::Inactive));
    }
    assert_eq!(r.hits(ENDPOINT), 9);
}

#[tokio::test]
async fn refusals_are_bounded_and_never_push_out_a_good_token() {
    let r = Routes::start().await;
    let v = verifier(&r).refusal_cache_capacity(2);
    active(&r, "alice");
    assert_eq!(outcome(&v, "good").await, Ok(()));
    inactive(&r);
    for i in 0..50 {
        assert_eq!(outcome(&v, &format!("bad-{i}")).await, Err(VerifyError::Inactive));
    }
    assert_eq!(r.hits(ENDPOINT), 51);
    // The good token is still known: answered without asking.
    assert_eq!(outcome(&v, "good").await, Ok(()));
    assert_eq!(r.hits(ENDPOINT), 51);
    // Two refusals are kept, the latest; an older one is asked about again.
    assert_eq!(outcome(&v, "bad-49").await, Err(VerifyError::Inactive));
    assert_eq!(r.hits(ENDPOINT), 51);
    assert_eq!(outcome(&v, "bad-0").await, Err(VerifyError::Inactive));
    assert_eq!(r.hits(ENDPOINT), 52);
}

#[tokio::test]
async fn past_the_cap_a_token_is_503_at_once_and_the_server_not_asked() {
    let r = Routes::start().await;
    // Known before the server stalls.
    active(&r, "alice");
    let v = Arc::new(verifier(&r).max_in_flight(2).timeout(Duration::from_secs(600)));
    assert_eq!(outcome(&v, "good").await, Ok(()));
    r.set(ENDPOINT, Route::Hang);
    let stalled: Vec<_> = (0..2)
        .map(|i| {
            let v = Arc::clone(&v);
            tokio::spawn(async move { outcome(&v, &format!("slow-{i}")).await })
        })
        .collect();
    // Both at the server (a count, not a time).
    while r.hits(ENDPOINT) < 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(outcome(&v, "third").await, Err(VerifyError::Busy));
    let addr = protected_server(RESOURCE, &r.url(), OAuthAuthorizer::introspection(Arc::clone(&v))).await;
    let resp = list_tools(addr, Some("fourth")).await;
    assert_eq!((resp.status, resp.header("retry-after")), (503, Some("1")));
    // A known token is still served.
    assert_eq!(list_tools(addr, Some("good")).await.status, 200);
    assert_eq!(r.hits(ENDPOINT), 3, "the two in flight, nothing more");
    // A refusal for being busy is not remembered: once the two end, the token is asked about.
    for task in stalled {
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
    }
    inactive(&r);
    assert_eq!(outcome(&v, "third").await, Err(VerifyError::Inactive));
    assert_eq!(r.hits(ENDPOINT), 4);
}
