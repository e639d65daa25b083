//! The tokio adapter's OAuth verification (feature `oauth`) against a real authorization
//! server: `oidc-provider` on Node 22 (`tests/oauth_as/server.mjs`), issuing RFC 9068 JWT
//! access tokens with resource indicators (RFC 8707) by the client credentials grant, and
//! introspecting (RFC 7662) and revoking opaque ones; a second instance serves HTTPS with
//! a certificate of a test authority (`tests/oauth_as/tls`), which the verifiers are told
//! to trust. Each refused token is checked twice:
//! the verifier names the right reason, and the protected MCP server answers `401
//! error="invalid_token"`.
//!
//! The server runs on the Node that `npm ci` installs in `tests/oauth_as/node_modules`
//! (the `node` package pinned in its lock). When that is missing the test runs `npm ci`
//! itself (npm on `PATH`, the npm registry reachable). Where that cannot work, set
//! `MCP_OAUTH_AS_SKIP=1` to skip these tests, loudly; in CI (`CI` set) they never skip.

#![cfg(feature = "oauth")]

mod http_support;
mod oauth_support;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_engine::http::{JwtVerifier, TokenError};
use mcp_io_tokio::http::oauth::{IntrospectionVerifier, JwksVerifier, OAuthAuthorizer, VerifyError};
use oauth_support::server::{AuthServer, node, start};
use oauth_support::{challenge_error, legacy_post, list_tools, protected_server, protected_server_of};
use serde_json::{Value, json};

/// The resource the MCP server under test is (the tokens' audience).
const RESOURCE: &str = "https://rs.example/mcp";
/// Another resource the server issues JWTs for.
const OTHER: &str = "https://other.example/mcp";
/// A resource the server issues opaque tokens for (introspected).
const OPAQUE: &str = "https://rs.example/opaque";

/// The test certificate authority the AS's HTTPS certificate is signed by.
const CA: &[u8] = include_bytes!("oauth_as/tls/ca.pem");

static AS: OnceLock<Option<AuthServer>> = OnceLock::new();
static AS_TLS: OnceLock<Option<AuthServer>> = OnceLock::new();

/// The AS over plain HTTP on loopback, started once for every test of this file.
fn authorization_server() -> Option<&'static AuthServer> {
    AS.get_or_init(|| node().map(|n| start(n, RESOURCE, OTHER, OPAQUE, false))).as_ref()
}

/// The AS over HTTPS, with a certificate signed by [`CA`].
fn tls_authorization_server() -> Option<&'static AuthServer> {
    AS_TLS.get_or_init(|| node().map(|n| start(n, RESOURCE, OTHER, OPAQUE, true))).as_ref()
}

/// A `POST` of a form to the authorization server, with Basic client authentication
/// (over HTTPS trusting [`CA`] when the issuer is `https`); the status and the JSON answer.
async fn post_form(issuer: &str, path: &str, client: &str, form: &str) -> (u16, Value) {
    use http_body_util::BodyExt as _;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;

    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(CA) {
        roots.add(cert.unwrap()).unwrap();
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    let http =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector);
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{client}:secret-{client}"));
    let req = http::Request::post(format!("{issuer}{path}"))
        .header("authorization", format!("Basic {basic}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(http_body_util::Full::new(bytes::Bytes::from(form.to_owned())))
        .unwrap();
    let resp = http_support::patient("the AS answers", http.request(req)).await.expect("the AS answers");
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.expect("a body").to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// An access token for `client`, for `resource`, with `scope`.
async fn token(issuer: &str, client: &str, resource: &str, scope: &str) -> String {
    let form = format!(
        "grant_type=client_credentials&resource={}&scope={}",
        resource.replace(':', "%3A").replace('/', "%2F"),
        scope.replace(' ', "+").replace(':', "%3A")
    );
    let (status, json) = post_form(issuer, "/token", client, &form).await;
    assert_eq!(status, 200, "a token for {client}: {json}");
    json["access_token"].as_str().expect("an access token").to_owned()
}

/// The key set of the AS, fetched through its metadata.
async fn keys(issuer: &str) -> Arc<JwksVerifier> {
    let keys = JwksVerifier::new(JwtVerifier::new(issuer, RESOURCE)).allow_loopback_http(true);
    assert_eq!(keys.load().await, Ok(1), "the AS publishes one key");
    Arc::new(keys)
}

macro_rules! real_as {
    () => {
        match authorization_server() {
            Some(a) => a.issuer.clone(),
            None => return,
        }
    };
}

/// Asserts that the verifier refuses `token` for `reason` and that the protected server
/// answers it `401 invalid_token`.
async fn refused(keys: &Arc<JwksVerifier>, issuer: &str, token: &str, reason: TokenError) {
    assert_eq!(keys.verify(token).await.map(|_| ()), Err(VerifyError::Invalid(reason.clone())), "{reason:?}");
    let addr = protected_server(RESOURCE, issuer, OAuthAuthorizer::jwt(Arc::clone(keys))).await;
    let r = list_tools(addr, Some(token)).await;
    assert_eq!((r.status, challenge_error(&r).as_deref()), (401, Some("invalid_token")), "{reason:?}: {r:?}");
}

#[tokio::test]
async fn a_good_token_is_accepted_and_carries_the_principal() {
    let issuer = real_as!();
    let keys = keys(&issuer).await;
    let t = token(&issuer, "good", RESOURCE, "mcp:read mcp:tools").await;
    let v = keys.verify(&t).await.expect("a good token");
    assert_eq!((v.subject(), v.client_id(), v.issuer()), ("good", Some("good"), issuer.as_str()));
    assert_eq!(v.scopes().collect::<Vec<_>>(), ["mcp:read", "mcp:tools"]);
    assert!(v.expiry().is_some() && v.tenant().is_none());

    let addr = protected_server(RESOURCE, &issuer, OAuthAuthorizer::jwt(Arc::clone(&keys))).await;
    let r = list_tools(addr, Some(&t)).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["result"]["tools"][0]["name"], "echo");
    // Without a token: the engine's challenge, no error.
    let r = list_tools(addr, None).await;
    assert_eq!((r.status, challenge_error(&r)), (401, None));
    assert!(r.header("www-authenticate").unwrap().contains("resource_metadata="));

    // A scope every request needs and the token lacks: 403 insufficient_scope.
    let admin = OAuthAuthorizer::jwt(Arc::clone(&keys)).require_scopes(["mcp:admin"]);
    let addr = protected_server(RESOURCE, &issuer, admin).await;
    let r = list_tools(addr, Some(&t)).await;
    assert_eq!((r.status, challenge_error(&r).as_deref()), (403, Some("insufficient_scope")));
    let t_admin = token(&issuer, "good", RESOURCE, "mcp:read mcp:admin").await;
    assert_eq!(list_tools(addr, Some(&t_admin)).await.status, 200);
}

#[tokio::test]
async fn an_expired_token_is_refused() {
    let issuer = real_as!();
    let keys = keys(&issuer).await;
    let t = token(&issuer, "expired", RESOURCE, "mcp:read").await;
    refused(&keys, &issuer, &t, TokenError::Expired).await;
}

#[tokio::test]
async fn a_token_not_yet_valid_is_refused() {
    let issuer = real_as!();
    let keys = keys(&issuer).await;
    let t = token(&issuer, "early", RESOURCE, "mcp:read").await;
    refused(&keys, &issuer, &t, TokenError::NotYetValid).await;
}

#[tokio::test]
async fn a_token_of_another_issuer_is_refused() {
    let issuer = real_as!();
    let keys = keys(&issuer).await;
    let t = token(&issuer, "foreign", RESOURCE, "mcp:read").await;
    refused(&keys, &issuer, &t, TokenError::Issuer).await;
}

#[tokio::test]
async fn a_token_for_another_resource_is_refused() {
    let issuer = real_as!();
    let keys = keys(&issuer).await;
    let t = token(&issuer, "good", OTHER, "mcp:read").await;
    refused(&keys, &issuer, &t, TokenError::Audience).await;
}

#[tokio::test]
async fn a_token_without_the_access_token_type_is_refused() {
    let issuer = real_as!();
    let keys = keys(&issuer).await;
    let t = token(&issuer, "typ", RESOURCE, "mcp:read").await;
    refused(&keys, &issuer, &t, TokenError::Type).await;
}

#[tokio::test]
async fn alg_none_and_a_bad_signature_are_refused() {
    let issuer = real_as!();
    let keys = keys(&issuer).await;
    let good = token(&issuer, "good", RESOURCE, "mcp:read").await;
    let mut parts = good.split('.');
    let (head, claims, sig) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    // The AS's own claims, re-headed `alg: none` with no signature.
    let none = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"at+jwt","kid":"as-rsa-1"}"#);
    refused(&keys, &issuer, &format!("{none}.{claims}."), TokenError::Algorithm).await;
    // One character of the signature changed (in the middle: every bit of it counts).
    let mut bad: Vec<u8> = sig.bytes().collect();
    let mid = bad.len() / 2;
    bad[mid] = if bad[mid] == b'A' { b'B' } else { b'A' };
    let bad = String::from_utf8(bad).unwrap();
    refused(&keys, &issuer, &format!("{head}.{claims}.{bad}"), TokenError::Signature).await;
    // A claim changed under the AS's signature.
    let mut c: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
    c["scope"] = "mcp:read mcp:admin".into();
    let forged = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&c).unwrap());
    refused(&keys, &issuer, &format!("{head}.{forged}.{sig}"), TokenError::Signature).await;
    // The untouched token still passes.
    assert!(keys.verify(&good).await.is_ok());
}

#[tokio::test]
async fn introspection_active_and_inactive() {
    let issuer = real_as!();
    let introspect = |cache: Duration| {
        let issuer = issuer.clone();
        async move {
            let v = IntrospectionVerifier::at_issuer(&issuer, OPAQUE, "rs", "secret-rs")
                .allow_loopback_http(true)
                .discover_endpoint()
                .await
                .expect("the introspection endpoint from the AS metadata");
            Arc::new(v.cache_time(cache))
        }
    };
    let cached = introspect(Duration::from_secs(60)).await;
    let uncached = introspect(Duration::ZERO).await;
    let t = token(&issuer, "good", OPAQUE, "mcp:read mcp:tools").await;
    assert_eq!(t.split('.').count(), 1, "an opaque token");

    // Active.
    let v = cached.verify(&t).await.expect("active");
    assert_eq!((v.subject(), v.client_id(), v.issuer()), ("good", Some("good"), issuer.as_str()));
    assert_eq!(v.scopes().collect::<Vec<_>>(), ["mcp:read", "mcp:tools"]);
    assert!(v.expiry().is_some());
    assert!(uncached.verify(&t).await.is_ok());
    let addr = protected_server(OPAQUE, &issuer, OAuthAuthorizer::introspection(Arc::clone(&uncached))).await;
    assert_eq!(list_tools(addr, Some(&t)).await.status, 200);

    // Revoked at the AS: inactive, 401 invalid_token. The cache keeps the active answer
    // for its time (documented): the verifier that caches still accepts it.
    let (status, _) = post_form(&issuer, "/token/revocation", "good", &format!("token={t}")).await;
    assert_eq!(status, 200);
    assert_eq!(uncached.verify(&t).await.map(|_| ()), Err(VerifyError::Inactive));
    assert!(cached.verify(&t).await.is_ok(), "cached for up to its cache time");
    let r = list_tools(addr, Some(&t)).await;
    assert_eq!((r.status, challenge_error(&r).as_deref()), (401, Some("invalid_token")));
    // A token the AS never issued: inactive.
    assert_eq!(uncached.verify("never-issued-token").await.map(|_| ()), Err(VerifyError::Inactive));
    // A JWT the AS does not introspect (it answers 400 unsupported_token_type): inactive.
    let jwt = token(&issuer, "good", RESOURCE, "mcp:read").await;
    assert_eq!(uncached.verify(&jwt).await.map(|_| ()), Err(VerifyError::Inactive));
    // Wrong client credentials: the AS refuses to answer, so the token is not checkable
    // (500), never accepted.
    let wrong = Arc::new(
        IntrospectionVerifier::new(cached.endpoint(), &issuer, OPAQUE, "rs", "wrong")
            .allow_loopback_http(true)
            .cache_time(Duration::ZERO),
    );
    let t2 = token(&issuer, "good", OPAQUE, "mcp:read").await;
    assert_eq!(wrong.verify(&t2).await.map(|_| ()), Err(VerifyError::Unavailable));
    let addr = protected_server(OPAQUE, &issuer, OAuthAuthorizer::introspection(wrong)).await;
    assert_eq!(list_tools(addr, Some(&t2)).await.status, 500);
}

#[tokio::test]
async fn over_https_the_authorization_servers_certificate_is_verified() {
    let Some(tls_as) = tls_authorization_server() else { return };
    let issuer = tls_as.issuer.clone();
    assert!(issuer.starts_with("https://127.0.0.1:"));
    // Its certificate chains to the test authority, which only this verifier trusts.
    let keys = JwksVerifier::new(JwtVerifier::new(&issuer, RESOURCE)).trust_roots_pem(CA).unwrap();
    assert_eq!(keys.load().await, Ok(1), "metadata and keys over https");
    let t = token(&issuer, "good", RESOURCE, "mcp:read").await;
    assert_eq!(keys.verify(&t).await.expect("a good token").issuer(), issuer);
    // Without trusting it, the fetch fails on the certificate (no plain-http fallback).
    let untrusting = JwksVerifier::new(JwtVerifier::new(&issuer, RESOURCE)).allow_loopback_http(true);
    let e = untrusting.load().await.unwrap_err();
    assert!(e.to_string().to_ascii_lowercase().contains("certificate"), "{e}");
    // Introspection over https.
    let introspect = IntrospectionVerifier::at_issuer(&issuer, OPAQUE, "rs", "secret-rs")
        .trust_roots_pem(CA)
        .unwrap()
        .discover_endpoint()
        .await
        .expect("the introspection endpoint");
    assert!(introspect.endpoint().starts_with("https://"));
    let opaque = token(&issuer, "good", OPAQUE, "mcp:read").await;
    assert_eq!(introspect.verify(&opaque).await.expect("active").subject(), "good");
    assert_eq!(introspect.verify("never-issued").await.map(|_| ()), Err(VerifyError::Inactive));
    // Text with no certificate is refused.
    assert!(JwksVerifier::new(JwtVerifier::new(&issuer, RESOURCE)).trust_roots_pem(b"nothing").is_err());
}

#[tokio::test]
async fn sessions_and_cursors_are_bound_to_the_tokens_principal() {
    let issuer = real_as!();
    let keys = keys(&issuer).await;
    // Two clients of the AS: two principals.
    let alice = token(&issuer, "good", RESOURCE, "mcp:read mcp:tools").await;
    let bob = token(&issuer, "rs", RESOURCE, "mcp:read mcp:tools").await;
    let mut config = mcp_engine::Config::new("oauth-test", "1.0");
    // Pages of one, sealed with a key (a test key: draw a real one from the OS).
    config.page_size(1).secret_key([0x5a; 32]);
    let catalog = mcp_engine::Catalog::builder()
        .tool(mcp_engine::Tool::new("one"))
        .tool(mcp_engine::Tool::new("two"))
        .build()
        .unwrap();
    let addr = protected_server_of(RESOURCE, &issuer, OAuthAuthorizer::jwt(keys), config, catalog).await;

    // A list cursor issued to alice's token is refused to bob's.
    let first = list_tools(addr, Some(&alice)).await;
    assert_eq!(first.status, 200, "{first:?}");
    let cursor = first.json()["result"]["nextCursor"].as_str().expect("a second page").to_owned();
    let page = |token: String, cursor: String| async move {
        let body = http_support::body(2, "tools/list", &format!(r#""cursor":"{cursor}""#));
        let req = http_support::post(addr, "tools/list", None, &body).replacen(
            "\r\n",
            &format!("\r\nAuthorization: Bearer {token}\r\n"),
            1,
        );
        let mut c = http_support::Conn::open(addr).await;
        c.send(&req).await;
        c.response().await.json()
    };
    let next = page(alice.clone(), cursor.clone()).await;
    assert_eq!(next["result"]["tools"][0]["name"], "two", "{next}");
    let stolen = page(bob.clone(), cursor).await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");

    // A session opened with alice's token is not found with bob's.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = legacy_post(addr, &alice, &init, None, None).await;
    assert_eq!(r.status, 200, "{r:?}");
    let session = r.header("mcp-session-id").expect("a session").to_owned();
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {}});
    let r = legacy_post(addr, &bob, &ping, Some("2025-11-25"), Some(&session)).await;
    assert_eq!(r.status, 404, "{r:?}");
    let r = legacy_post(addr, &alice, &ping, Some("2025-11-25"), Some(&session)).await;
    assert_eq!(r.status, 200, "{r:?}");
}
