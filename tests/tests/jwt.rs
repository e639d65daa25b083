//! The JWT access-token verifier (feature `jwt`, `mcp_engine::http::JwtVerifier`): every
//! check of RFC 9068 §4 it makes, key rotation, the cache, and what verifying allocates.
//! Tokens are minted with jsonwebtoken from the fixed test keys in `engine/tests/keys`.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_engine::UnixTime;
use mcp_engine::http::{JwksError, JwsAlgorithm, JwtVerifier, Principal, TokenError, Verdict, VerifiedToken};
use serde_json::{Value, json};

const ISS: &str = "https://as.example.com";
const AUD: &str = "https://mcp.example.com/mcp";
/// The time of every verification unless a test says otherwise.
const NOW: u64 = 1_800_000_000;

const RSA_1: &[u8] = include_bytes!("../../engine/tests/keys/rsa-1.pem");
const RSA_2: &[u8] = include_bytes!("../../engine/tests/keys/rsa-2.pem");
const EC_1: &[u8] = include_bytes!("../../engine/tests/keys/ec-1.pem");
const ED_1: &[u8] = include_bytes!("../../engine/tests/keys/ed-1.pem");
const JWKS: &str = include_str!("../../engine/tests/keys/jwks.json");

fn now() -> UnixTime {
    UnixTime::from_secs(NOW)
}

/// The public keys named by `kids`, as a JWKS document.
fn jwks(kids: &[&str]) -> Vec<u8> {
    let all: Value = serde_json::from_str(JWKS).unwrap();
    let keys: Vec<Value> = kids
        .iter()
        .map(|kid| all["keys"].as_array().unwrap().iter().find(|k| k["kid"] == *kid).unwrap().clone())
        .collect();
    serde_json::to_vec(&json!({ "keys": keys })).unwrap()
}

/// A verifier holding every test key.
fn verifier() -> JwtVerifier {
    let mut v = JwtVerifier::new(ISS, AUD);
    assert_eq!(v.set_jwks(&jwks(&["rsa-1", "rsa-2", "ec-1", "ed-1"])), Ok(4));
    v
}

/// Good RFC 9068 claims.
fn claims() -> Value {
    json!({
        "iss": ISS, "aud": AUD, "sub": "alice", "client_id": "client-1",
        "exp": NOW + 300, "iat": NOW - 10, "jti": "t-1", "scope": "mcp:read mcp:tools",
    })
}

/// The private key of `kid`, for `alg`.
fn encoding_key(alg: Algorithm, kid: &str) -> EncodingKey {
    match (alg, kid) {
        (Algorithm::ES256, _) => EncodingKey::from_ec_pem(EC_1).unwrap(),
        (Algorithm::EdDSA, _) => EncodingKey::from_ed_pem(ED_1).unwrap(),
        (_, "rsa-2") => EncodingKey::from_rsa_pem(RSA_2).unwrap(),
        _ => EncodingKey::from_rsa_pem(RSA_1).unwrap(),
    }
}

/// A token signed with the key of `kid` (`kid` in the header unless `None` is asked for by
/// `header_kid`), with header `typ`.
fn mint_with(
    alg: Algorithm,
    kid: &str,
    header_kid: Option<&str>,
    typ: Option<&str>,
    claims: &Value,
) -> String {
    let mut header = Header::new(alg);
    header.typ = typ.map(str::to_owned);
    header.kid = header_kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &encoding_key(alg, kid)).unwrap()
}

/// A token signed with the key of `kid`, naming it, `typ: at+jwt`.
fn mint(alg: Algorithm, kid: &str, claims: &Value) -> String {
    mint_with(alg, kid, Some(kid), Some("at+jwt"), claims)
}

fn good(alg: Algorithm, kid: &str) -> String {
    mint(alg, kid, &claims())
}

/// `claims()` with `key` set to `value` (`Value::Null`: removed).
fn with(key: &str, value: Value) -> Value {
    let mut c = claims();
    if value.is_null() {
        c.as_object_mut().unwrap().remove(key);
    } else {
        c[key] = value;
    }
    c
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The principal the docs promise: `Principal::of(len(iss) as u64 BE || iss || sub)`.
fn documented_principal(iss: &str, sub: &str) -> Principal {
    let mut bytes = (iss.len() as u64).to_be_bytes().to_vec();
    bytes.extend_from_slice(iss.as_bytes());
    bytes.extend_from_slice(sub.as_bytes());
    Principal::of(&bytes)
}

#[test]
fn a_good_token_of_every_key_type_verifies() {
    let v = verifier();
    for (alg, kid) in [
        (Algorithm::RS256, "rsa-1"),
        (Algorithm::RS256, "rsa-2"),
        (Algorithm::RS384, "rsa-2"),
        (Algorithm::PS256, "rsa-2"),
        (Algorithm::PS512, "rsa-2"),
        (Algorithm::ES256, "ec-1"),
        (Algorithm::EdDSA, "ed-1"),
    ] {
        let t = v.verify(&good(alg, kid), now()).unwrap_or_else(|e| panic!("{alg:?} {kid}: {e}"));
        assert_eq!(t.subject(), "alice");
        assert_eq!(t.client_id(), Some("client-1"));
        assert_eq!(t.issuer(), ISS);
        assert_eq!(t.expiry(), UnixTime::from_secs(NOW + 300));
        assert_eq!(t.tenant(), None);
        assert_eq!(t.scopes().collect::<Vec<_>>(), ["mcp:read", "mcp:tools"]);
        assert!(t.has_scope("mcp:read") && t.has_scope("mcp:tools"));
        assert!(!t.has_scope("mcp:admin") && !t.has_scope("mcp") && !t.has_scope(""));
        assert_eq!(t.principal(), documented_principal(ISS, "alice"));
        assert_eq!(t.verdict(), Verdict::AllowAs(t.principal()));
    }
}

#[test]
fn time_claims_are_judged_on_the_time_given_with_the_leeway() {
    let v = verifier();
    let at = |claims: &Value, secs: u64| {
        v.verify(&mint(Algorithm::EdDSA, "ed-1", claims), UnixTime::from_secs(secs))
    };
    // exp: refused from exp + 60 s on (the default leeway).
    let c = with("exp", json!(NOW));
    assert!(at(&c, NOW + 59).is_ok());
    assert_eq!(at(&c, NOW + 60).unwrap_err(), TokenError::Expired);
    assert_eq!(at(&with("exp", json!(NOW - 3600)), NOW).unwrap_err(), TokenError::Expired);
    // A fractional NumericDate.
    assert!(at(&with("exp", json!(NOW as f64 - 59.5)), NOW).is_ok());
    // nbf: refused while more than 60 s ahead.
    assert_eq!(at(&with("nbf", json!(NOW + 61)), NOW).unwrap_err(), TokenError::NotYetValid);
    assert!(at(&with("nbf", json!(NOW + 60)), NOW).is_ok());
    assert!(at(&with("nbf", json!(NOW - 1)), NOW).is_ok());
    // iat: not after now + 60 s.
    assert_eq!(at(&with("iat", json!(NOW + 61)), NOW).unwrap_err(), TokenError::IssuedInFuture);
    assert!(at(&with("iat", json!(NOW + 60)), NOW).is_ok());
    // nbf and iat are optional, exp is not.
    let mut c = with("iat", Value::Null);
    c.as_object_mut().unwrap().remove("nbf");
    assert!(at(&c, NOW).is_ok());
    assert_eq!(at(&with("exp", Value::Null), NOW).unwrap_err(), TokenError::MissingClaim("exp"));
    assert_eq!(at(&with("exp", json!("tomorrow")), NOW).unwrap_err(), TokenError::Malformed);

    // Without leeway, exactly at exp is expired; a leeway above 5 minutes is cut to 5.
    let mut strict = JwtVerifier::new(ISS, AUD).leeway(Duration::ZERO).cache_capacity(0);
    strict.set_jwks(&jwks(&["ed-1"])).unwrap();
    let t = mint(Algorithm::EdDSA, "ed-1", &with("exp", json!(NOW)));
    assert_eq!(strict.verify(&t, now()).unwrap_err(), TokenError::Expired);
    assert!(strict.verify(&t, UnixTime::from_micros(NOW * 1_000_000 - 1)).is_ok());
    let mut lax = JwtVerifier::new(ISS, AUD).leeway(Duration::from_secs(3600));
    lax.set_jwks(&jwks(&["ed-1"])).unwrap();
    assert!(lax.verify(&t, UnixTime::from_secs(NOW + 299)).is_ok());
    assert_eq!(lax.verify(&t, UnixTime::from_secs(NOW + 300)).unwrap_err(), TokenError::Expired);
}

#[test]
fn issuer_must_match_exactly() {
    let v = verifier();
    let verify = |c: &Value| v.verify(&mint(Algorithm::ES256, "ec-1", c), now());
    for iss in ["https://evil.example.com", "https://as.example.com/", "HTTPS://as.example.com", ""] {
        assert_eq!(verify(&with("iss", json!(iss))).unwrap_err(), TokenError::Issuer, "{iss}");
    }
    assert_eq!(verify(&with("iss", json!([ISS]))).unwrap_err(), TokenError::Malformed);
    assert_eq!(verify(&with("iss", Value::Null)).unwrap_err(), TokenError::MissingClaim("iss"));
    // Escapes in the JSON are read as the string they spell.
    let body = format!(
        r#"{{"iss":"https:\/\/as.example.com","aud":"{AUD}","sub":"\u0061lice","exp":{}}}"#,
        NOW + 60
    );
    let t = sign_raw(r#"{"alg":"ES256","typ":"at+jwt","kid":"ec-1"}"#, &body, Algorithm::ES256, "ec-1");
    assert_eq!(v.verify(&t, now()).unwrap().subject(), "alice");
    // A repeated claim is refused, whichever copy would pass.
    let body =
        format!(r#"{{"iss":"https://evil","iss":"{ISS}","aud":"{AUD}","sub":"alice","exp":{}}}"#, NOW + 60);
    let t = sign_raw(r#"{"alg":"ES256","typ":"at+jwt","kid":"ec-1"}"#, &body, Algorithm::ES256, "ec-1");
    assert_eq!(v.verify(&t, now()).unwrap_err(), TokenError::Malformed);
    // So is a repeated header member, and a `crit` one.
    let body = serde_json::to_string(&claims()).unwrap();
    for head in [
        r#"{"alg":"ES256","typ":"at+jwt","kid":"ec-1","kid":"rsa-1"}"#,
        r#"{"alg":"ES256","typ":"at+jwt","kid":"ec-1","crit":["b64"],"b64":true}"#,
    ] {
        let t = sign_raw(head, &body, Algorithm::ES256, "ec-1");
        assert_eq!(v.verify(&t, now()).unwrap_err(), TokenError::Malformed, "{head}");
    }
}

/// A token of exactly these header and claims bytes, signed with the key of `kid`.
fn sign_raw(header: &str, claims: &str, alg: Algorithm, kid: &str) -> String {
    let message = format!("{}.{}", b64(header.as_bytes()), b64(claims.as_bytes()));
    let sig = jsonwebtoken::crypto::sign(message.as_bytes(), &encoding_key(alg, kid), alg).unwrap();
    format!("{message}.{sig}")
}

#[test]
fn audience_must_contain_this_resource() {
    let v = verifier();
    let verify = |c: &Value| v.verify(&mint(Algorithm::RS256, "rsa-1", c), now());
    assert_eq!(
        verify(&with("aud", json!("https://other.example.com/mcp"))).unwrap_err(),
        TokenError::Audience
    );
    assert_eq!(verify(&with("aud", json!(format!("{AUD}/")))).unwrap_err(), TokenError::Audience);
    assert!(verify(&with("aud", json!(["https://other.example.com", AUD]))).is_ok());
    assert_eq!(verify(&with("aud", json!(["https://other.example.com"]))).unwrap_err(), TokenError::Audience);
    assert_eq!(verify(&with("aud", json!([]))).unwrap_err(), TokenError::Audience);
    assert_eq!(verify(&with("aud", Value::Null)).unwrap_err(), TokenError::MissingClaim("aud"));
    assert_eq!(verify(&with("aud", json!([AUD, 7]))).unwrap_err(), TokenError::Malformed);
}

#[test]
fn subject_is_required() {
    let v = verifier();
    let verify = |c: &Value| v.verify(&mint(Algorithm::EdDSA, "ed-1", c), now());
    assert_eq!(verify(&with("sub", Value::Null)).unwrap_err(), TokenError::MissingClaim("sub"));
    assert_eq!(verify(&with("sub", json!(""))).unwrap_err(), TokenError::MissingClaim("sub"));
    assert_eq!(verify(&with("sub", json!(42))).unwrap_err(), TokenError::Malformed);
}

#[test]
fn alg_none_is_refused() {
    let v = verifier();
    let body = b64(&serde_json::to_vec(&claims()).unwrap());
    for header in [
        r#"{"alg":"none","typ":"at+jwt"}"#,
        r#"{"alg":"none","typ":"at+jwt","kid":"rsa-1"}"#,
        r#"{"alg":"None","typ":"at+jwt"}"#,
        r#"{"alg":"","typ":"at+jwt"}"#,
        r#"{"alg":null,"typ":"at+jwt"}"#,
        r#"{"typ":"at+jwt"}"#,
    ] {
        let head = b64(header.as_bytes());
        for sig in ["", "c2ln"] {
            let token = format!("{head}.{body}.{sig}");
            assert_eq!(v.verify(&token, now()).unwrap_err(), TokenError::Algorithm, "{header} / {sig:?}");
        }
    }
    // Not allowed either when the allow-list leaves the algorithm out.
    let mut rsa_only = JwtVerifier::new(ISS, AUD).algorithms(&[JwsAlgorithm::RS256]).unwrap();
    assert_eq!(rsa_only.set_jwks(&jwks(&["rsa-1", "ec-1"])), Ok(1), "the EC key is of no use");
    assert!(rsa_only.verify(&good(Algorithm::RS256, "rsa-1"), now()).is_ok());
    assert_eq!(rsa_only.set_jwks(&jwks(&["rsa-2"])), Ok(1));
    assert_eq!(rsa_only.verify(&good(Algorithm::PS256, "rsa-2"), now()).unwrap_err(), TokenError::Algorithm);
    assert!(rsa_only.verify(&good(Algorithm::RS256, "rsa-2"), now()).is_ok());
}

#[test]
fn a_symmetric_algorithm_never_uses_a_public_key() {
    // The classic confusion: HS256 with the RSA public key (as published) as the secret.
    let rsa_jwks = jwks(&["rsa-1"]);
    let public: Value = serde_json::from_slice(&rsa_jwks).unwrap();
    let n = URL_SAFE_NO_PAD.decode(public["keys"][0]["n"].as_str().unwrap()).unwrap();
    let mut header = Header::new(Algorithm::HS256);
    header.typ = Some("at+jwt".into());
    header.kid = Some("rsa-1".into());
    let forged: Vec<String> = [&rsa_jwks[..], &n[..]]
        .iter()
        .map(|secret| {
            jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_secret(secret).unwrap()).unwrap()
        })
        .collect();

    let v = verifier();
    for t in &forged {
        assert_eq!(v.verify(t, now()).unwrap_err(), TokenError::Algorithm);
    }
    // With HMAC allowed (its own secret), the forged tokens fail on their signature, and a
    // token made with the shared secret passes.
    let secret = [7u8; 32];
    let mut hs = JwtVerifier::new(ISS, AUD).shared_secret(&secret, &[JwsAlgorithm::HS256]).unwrap();
    hs.set_jwks(&rsa_jwks).unwrap();
    for t in &forged {
        assert_eq!(hs.verify(t, now()).unwrap_err(), TokenError::Signature);
    }
    let shared =
        jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_secret(&secret).unwrap()).unwrap();
    assert_eq!(hs.verify(&shared, now()).unwrap().subject(), "alice");
    // HS384 was not allowed with the secret.
    let mut header384 = header.clone();
    header384.alg = Algorithm::HS384;
    let t =
        jsonwebtoken::encode(&header384, &claims(), &EncodingKey::from_secret(&[7; 48]).unwrap()).unwrap();
    assert_eq!(hs.verify(&t, now()).unwrap_err(), TokenError::Algorithm);
    // A key is used only with the algorithms of its type (ES256 under an RSA key's kid),
    // and only with its own `alg` when it names one (rsa-1 is RS256's).
    assert_eq!(v.verify(&good(Algorithm::PS256, "rsa-1"), now()).unwrap_err(), TokenError::Algorithm);
    let t = mint_with(Algorithm::ES256, "ec-1", Some("rsa-1"), Some("at+jwt"), &claims());
    assert_eq!(v.verify(&t, now()).unwrap_err(), TokenError::Algorithm);
}

#[test]
fn the_type_must_be_at_jwt_unless_allowed_otherwise() {
    let strict = verifier();
    let mut lax = JwtVerifier::new(ISS, AUD).accept_missing_typ(true);
    lax.set_jwks(&jwks(&["rsa-1", "rsa-2", "ec-1", "ed-1"])).unwrap();
    let token = |typ: Option<&str>| mint_with(Algorithm::EdDSA, "ed-1", Some("ed-1"), typ, &claims());
    for (typ, strict_ok, lax_ok) in [
        (Some("at+jwt"), true, true),
        (Some("AT+JWT"), true, true),
        (Some("application/at+jwt"), true, true),
        (Some("application/At+Jwt"), true, true),
        (None, false, true),
        (Some("JWT"), false, true),
        (Some("jwt"), false, true),
        (Some("dpop+jwt"), false, false),
        (Some("id_token+jwt"), false, false),
        (Some("at+jwt; charset=utf-8"), false, false),
        (Some(""), false, false),
    ] {
        let t = token(typ);
        assert_eq!(
            strict.verify(&t, now()).map(|_| ()),
            if strict_ok { Ok(()) } else { Err(TokenError::Type) },
            "{typ:?}"
        );
        assert_eq!(
            lax.verify(&t, now()).map(|_| ()),
            if lax_ok { Ok(()) } else { Err(TokenError::Type) },
            "{typ:?}"
        );
    }
}

#[test]
fn a_bad_signature_is_refused() {
    let v = verifier().cache_capacity(0);
    for (alg, kid) in [(Algorithm::RS256, "rsa-1"), (Algorithm::ES256, "ec-1"), (Algorithm::EdDSA, "ed-1")] {
        let t = good(alg, kid);
        let (signed, sig) = t.rsplit_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(sig).unwrap();
        for i in [0, bytes.len() / 2, bytes.len() - 1] {
            bytes[i] ^= 0x01;
            let flipped = format!("{signed}.{}", b64(&bytes));
            assert_eq!(v.verify(&flipped, now()).unwrap_err(), TokenError::Signature, "{alg:?} byte {i}");
            bytes[i] ^= 0x01;
        }
        // Claims changed under the same signature.
        let (head, _) = signed.split_once('.').unwrap();
        let other = b64(&serde_json::to_vec(&with("sub", json!("mallory"))).unwrap());
        assert_eq!(v.verify(&format!("{head}.{other}.{sig}"), now()).unwrap_err(), TokenError::Signature);
        // Truncated, and in non-canonical base64 (the last character's spare bits set).
        assert_eq!(
            v.verify(&format!("{signed}.{}", &sig[..sig.len() - 4]), now()).unwrap_err(),
            TokenError::Signature
        );
    }
    // Signed by rsa-2, naming rsa-1.
    let t = mint_with(Algorithm::RS256, "rsa-2", Some("rsa-1"), Some("at+jwt"), &claims());
    assert_eq!(v.verify(&t, now()).unwrap_err(), TokenError::Signature);
}

#[test]
fn an_unknown_kid_is_named_and_a_refreshed_key_set_accepts_it() {
    let mut v = JwtVerifier::new(ISS, AUD);
    assert_eq!(v.set_jwks(&jwks(&["rsa-1"])), Ok(1));
    let rotated_in = good(Algorithm::RS256, "rsa-2");
    let err = v.verify(&rotated_in, now()).unwrap_err();
    assert_eq!(err, TokenError::UnknownKid("rsa-2".into()));
    assert_eq!(err.to_string(), "unknown key id \"rsa-2\"");
    assert_eq!(err.verdict(), Verdict::Unauthenticated);
    // The adapter refreshes the key set and tries again.
    let old = good(Algorithm::RS256, "rsa-1");
    assert!(v.verify(&old, now()).is_ok(), "cached now");
    assert_eq!(v.set_jwks(&jwks(&["rsa-1", "rsa-2"])), Ok(2));
    assert!(v.verify(&rotated_in, now()).is_ok());
    // rsa-1 rotated away: its token, cached a moment ago, stops working at once.
    assert_eq!(v.set_jwks(&jwks(&["rsa-2"])), Ok(1));
    assert_eq!(v.verify(&old, now()).unwrap_err(), TokenError::UnknownKid("rsa-1".into()));
    assert!(v.verify(&rotated_in, now()).is_ok());
    // A refresh that fails keeps the keys there were.
    assert_eq!(v.set_jwks(b"<html>"), Err(JwksError::Malformed));
    assert_eq!(
        v.set_jwks(br#"{"keys":[{"kty":"oct","k":"AAAA"}]}"#),
        Err(JwksError::NoUsableKey { skipped: 1 })
    );
    assert!(v.verify(&rotated_in, now()).is_ok());
    assert_eq!(v.key_count(), 1);
    // A long kid is cut in the error.
    let t = mint(Algorithm::RS256, &"k".repeat(500), &claims());
    let TokenError::UnknownKid(kid) = v.verify(&t, now()).unwrap_err() else { panic!() };
    assert_eq!(kid.len(), 64);
}

#[test]
fn without_a_kid_only_a_single_key_of_the_type_is_used() {
    let no_kid = |alg, kid| mint_with(alg, kid, None, Some("at+jwt"), &claims());
    let mut one = JwtVerifier::new(ISS, AUD);
    one.set_jwks(&jwks(&["rsa-1"])).unwrap();
    assert!(one.verify(&no_kid(Algorithm::RS256, "rsa-1"), now()).is_ok());
    // Two RSA keys: which one is unknown. One of each type: the type decides.
    let v = verifier();
    assert_eq!(v.verify(&no_kid(Algorithm::RS256, "rsa-1"), now()).unwrap_err(), TokenError::NoKey);
    assert!(v.verify(&no_kid(Algorithm::ES256, "ec-1"), now()).is_ok());
    assert!(v.verify(&no_kid(Algorithm::EdDSA, "ed-1"), now()).is_ok());
    // No key at all yet.
    let empty = JwtVerifier::new(ISS, AUD);
    assert_eq!(empty.verify(&no_kid(Algorithm::RS256, "rsa-1"), now()).unwrap_err(), TokenError::NoKey);
    assert_eq!(
        empty.verify(&good(Algorithm::RS256, "rsa-1"), now()).unwrap_err(),
        TokenError::UnknownKid("rsa-1".into())
    );
}

#[test]
fn malformed_strings_give_errors_never_panics() {
    let v = verifier();
    let t = good(Algorithm::ES256, "ec-1");
    let (head, rest) = t.split_once('.').unwrap();
    let (body, sig) = rest.split_once('.').unwrap();
    let cases = [
        String::new(),
        "Bearer".into(),
        "a.b".into(),
        format!("{head}.{body}"),
        format!("{head}.{body}.{sig}.{sig}"),
        format!("{head}.{body}.{sig}.{sig}.{sig}"),
        format!("{head}..{sig}"),
        format!(".{body}.{sig}"),
        format!("{head}.{body}!.{sig}"),
        format!("{head}=.{body}.{sig}"),
        format!("{}.{body}.{sig}", b64(b"[1,2]")),
        format!("{}.{body}.{sig}", b64(b"{\"alg\":\"ES256\"")),
        format!("{head}.{}.{sig}", b64(b"null")),
        format!("{head}.{}.{sig}", b64(b"[\"https://as.example.com\"]")),
        format!("{head}.{}.{sig}", b64(&[0xff, 0xfe])),
        "\u{0}\u{1}.\u{7f}.é".into(),
    ];
    for c in &cases {
        let e = v.verify(c, now()).unwrap_err();
        assert_eq!(e, TokenError::Malformed, "{c:.60}");
    }
    // Every prefix of a good token, and pseudo-random strings: an error each, no panic.
    for end in 0..t.len() {
        assert!(v.verify(&t[..end], now()).is_err(), "prefix {end}");
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \0\xff";
    for _ in 0..2_000 {
        let len = (next() % 300) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
        let s = String::from_utf8_lossy(&bytes);
        assert!(v.verify(&s, now()).is_err());
        // The good token with one character replaced.
        let mut m = t.clone().into_bytes();
        let i = (next() % m.len() as u64) as usize;
        let replacement = alphabet[(next() % alphabet.len() as u64) as usize];
        if m[i] != replacement {
            m[i] = replacement;
            let s = String::from_utf8_lossy(&m);
            assert!(v.verify(&s, now()).is_err(), "{s}");
        }
    }
}

#[test]
fn scopes_come_from_scope_or_scp() {
    let v = verifier();
    let scopes = |c: &Value| -> Result<Vec<String>, TokenError> {
        let t = v.verify(&mint(Algorithm::EdDSA, "ed-1", c), now())?;
        Ok(t.scopes().map(str::to_owned).collect())
    };
    assert_eq!(scopes(&with("scope", json!("a b  c"))).unwrap(), ["a", "b", "c"]);
    let scp = |value: Value| {
        let mut c = with("scope", Value::Null);
        c["scp"] = value;
        c
    };
    assert_eq!(scopes(&scp(json!(["a", "b:c"]))).unwrap(), ["a", "b:c"]);
    assert_eq!(scopes(&scp(json!("a b"))).unwrap(), ["a", "b"]);
    assert_eq!(scopes(&scp(json!([]))).unwrap(), Vec::<String>::new());
    assert_eq!(scopes(&with("scope", Value::Null)).unwrap(), Vec::<String>::new());
    assert_eq!(scopes(&scp(json!(["a b"]))).unwrap_err(), TokenError::Malformed);
    assert_eq!(scopes(&scp(json!([""]))).unwrap_err(), TokenError::Malformed);
    assert_eq!(scopes(&scp(json!([1]))).unwrap_err(), TokenError::Malformed);
    // `scope` wins over `scp`.
    let mut both = with("scope", json!("x"));
    both["scp"] = json!(["y"]);
    assert_eq!(scopes(&both).unwrap(), ["x"]);
    let t = v.verify(&mint(Algorithm::EdDSA, "ed-1", &scp(json!(["mcp:read", "mcp:admin"]))), now()).unwrap();
    assert!(t.has_scope("mcp:admin") && !t.has_scope("mcp:tools"));
}

#[test]
fn client_id_and_tenant() {
    let v = verifier();
    let verify = |c: &Value| v.verify(&mint(Algorithm::EdDSA, "ed-1", c), now()).unwrap();
    let mut c = with("client_id", Value::Null);
    assert_eq!(verify(&c).client_id(), None);
    c["azp"] = json!("from-azp");
    assert_eq!(verify(&c).client_id(), Some("from-azp"));
    c["client_id"] = json!("from-client-id");
    assert_eq!(verify(&c).client_id(), Some("from-client-id"));
    c["tenant"] = json!("t-2");
    assert_eq!(verify(&c).tenant(), Some("t-2"));
    c["tid"] = json!("t-1");
    assert_eq!(verify(&c).tenant(), Some("t-1"));
    c["tid"] = json!({"id": 1});
    assert_eq!(verify(&c).tenant(), Some("t-2"), "a tid that is not a string is ignored");
    let t = verify(&c);
    assert_eq!((t.subject(), t.client_id(), t.tenant()), ("alice", Some("from-client-id"), Some("t-2")));
    assert_eq!(t.scopes().collect::<Vec<_>>(), ["mcp:read", "mcp:tools"]);
}

#[test]
fn the_principal_is_issuer_and_subject() {
    let other_iss = "https://other-as.example.com";
    let mut a = JwtVerifier::new(ISS, AUD);
    let mut b = JwtVerifier::new(other_iss, AUD);
    let mut c = JwtVerifier::new(ISS, "https://elsewhere.example.com/mcp");
    for v in [&mut a, &mut b, &mut c] {
        v.set_jwks(&jwks(&["ed-1"])).unwrap();
    }
    let from_a = a.verify(&good(Algorithm::EdDSA, "ed-1"), now()).unwrap();
    let mut cb = with("iss", json!(other_iss));
    let from_b = b.verify(&mint(Algorithm::EdDSA, "ed-1", &cb), now()).unwrap();
    assert_eq!(from_a.subject(), from_b.subject());
    assert_ne!(from_a.principal(), from_b.principal(), "same sub, two issuers");
    assert_eq!(from_b.principal(), documented_principal(other_iss, "alice"));
    // The audience is not part of it.
    let from_c = c.verify(
        &mint(Algorithm::EdDSA, "ed-1", &with("aud", json!("https://elsewhere.example.com/mcp"))),
        now(),
    );
    assert_eq!(from_c.unwrap().principal(), from_a.principal());
    // Another subject, another principal.
    cb["sub"] = json!("bob");
    assert_ne!(
        b.verify(&mint(Algorithm::EdDSA, "ed-1", &cb), now()).unwrap().principal(),
        from_b.principal()
    );
}

#[test]
fn errors_never_show_the_token_or_a_claim() {
    let v = verifier();
    let secret_sub = "sub-secret-4711";
    let mut errors = Vec::new();
    for c in [
        with("iss", json!("https://iss-secret.example")),
        with("aud", json!("aud-secret")),
        with("exp", json!(1)),
        with("nbf", json!(NOW + 999)),
        with("iat", json!(NOW + 999)),
    ] {
        let mut c = c;
        c["sub"] = json!(secret_sub);
        let t = mint(Algorithm::EdDSA, "ed-1", &c);
        let e = v.verify(&t, now()).unwrap_err();
        errors.push((t, e));
    }
    for (t, e) in &errors {
        for shown in [e.to_string(), format!("{e:?}")] {
            for secret in [secret_sub, "iss-secret", "aud-secret", &t[..20], &t[t.len() - 20..]] {
                assert!(!shown.contains(secret), "{shown} shows {secret}");
            }
        }
    }
    let ok = v.verify(&good(Algorithm::EdDSA, "ed-1"), now()).unwrap();
    let shown = format!("{ok:?}");
    assert!(
        !shown.contains("alice") && !shown.contains("client-1") && !shown.contains("mcp:read"),
        "{shown}"
    );
}

#[test]
fn a_verifier_is_shared_and_a_changed_setting_forgets_the_cache() {
    fn shared<T: Send + Sync>() {}
    shared::<JwtVerifier>();
    shared::<VerifiedToken>();
    let v = verifier();
    let t = good(Algorithm::EdDSA, "ed-1");
    assert!(v.verify(&t, now()).is_ok(), "cached now");
    let v = v.algorithms(&[JwsAlgorithm::RS256]).unwrap();
    assert_eq!(v.verify(&t, now()).unwrap_err(), TokenError::Algorithm);
}

#[test]
fn a_cached_token_is_judged_on_time_again() {
    let v = verifier();
    let t = mint(Algorithm::RS256, "rsa-1", &with("exp", json!(NOW + 10)));
    assert!(v.verify(&t, now()).is_ok());
    assert!(v.verify(&t, UnixTime::from_secs(NOW + 69)).is_ok());
    assert_eq!(v.verify(&t, UnixTime::from_secs(NOW + 70)).unwrap_err(), TokenError::Expired);
    // A token verified after nbf is refused by the cache when the clock is set back.
    let t = mint(Algorithm::RS256, "rsa-1", &with("nbf", json!(NOW)));
    assert!(v.verify(&t, now()).is_ok());
    assert_eq!(v.verify(&t, UnixTime::from_secs(NOW - 61)).unwrap_err(), TokenError::NotYetValid);
    // A cached token is the same token: the clone shares it.
    let a = v.verify(&t, now()).unwrap();
    let b = v.verify(&t, now()).unwrap();
    assert_eq!((a.subject(), a.principal()), (b.subject(), b.principal()));
}

/// Allocations of one verification of a token by `alg` and `kid`: `(cache hit, first sight
/// with the cache on, without a cache)`.
fn allocations(v: &JwtVerifier, uncached: &JwtVerifier, alg: Algorithm, kid: &str) -> [u64; 3] {
    let token = good(alg, kid);
    let fresh = mint(alg, kid, &with("jti", json!("t-2")));
    // Warm up: one-time initialization in the backends is not the path measured.
    v.verify(&token, now()).unwrap();
    uncached.verify(&token, now()).unwrap();
    let mut out: Option<VerifiedToken> = None;
    let mut count = |v: &JwtVerifier, token: &str| {
        let info = allocation_counter::measure(|| out = Some(v.verify(token, now()).unwrap()));
        assert_eq!(out.take().unwrap().subject(), "alice");
        info.count_total
    };
    [count(v, &token), count(v, &fresh), count(uncached, &token)]
}

/// Run with `--nocapture` to see the figures.
#[test]
fn a_cached_token_allocates_nothing_and_a_miss_is_counted() {
    let v = verifier();
    let uncached = verifier().cache_capacity(0);
    let mut figures = Vec::new();
    for (alg, kid) in [
        (Algorithm::RS256, "rsa-1"),
        (Algorithm::PS256, "rsa-2"),
        (Algorithm::ES256, "ec-1"),
        (Algorithm::EdDSA, "ed-1"),
    ] {
        let [hit, first, miss] = allocations(&v, &uncached, alg, kid);
        assert_eq!(hit, 0, "{alg:?}: a cache hit allocated");
        assert_eq!(first, miss, "{alg:?}: keeping the token in the cache allocated");
        figures.push((alg, miss));
    }
    println!("allocations of one uncached verification: {figures:?}");
    // The miss path: 2 allocations are the engine's (the verified token: one `Arc`, one
    // `String`), 2 are what jsonwebtoken's verifier interface takes (the signature as a
    // `Vec`, the boxed verifier); RSA adds the backend's own (the public key's big
    // integers, rebuilt on every verification, and the arithmetic). Header and claims are
    // decoded on the stack. Exact, so that a change of a dependency shows.
    let expected =
        [(Algorithm::RS256, 53), (Algorithm::PS256, 56), (Algorithm::ES256, 4), (Algorithm::EdDSA, 4)];
    assert_eq!(figures, expected);
}
