//! Reference tokens asked about at the authorization server: [`IntrospectionVerifier`]
//! (RFC 7662), with a bounded cache of the active answers, one of the refusals, and a cap
//! on the requests in flight.

use core::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::sync::Semaphore;

use base64::Engine as _;
use mcp_engine::UnixTime;
use mcp_engine::http::TokenError;
use serde::Deserialize;

use super::cache::{Expiring, digest};
use super::fetch::{FetchError, Fetcher, form_encode};
use super::{AccessToken, Introspected, OAuthError, VerifyError, principal_of};

/// How long an active answer is kept unless set.
const DEFAULT_CACHE_TIME: Duration = Duration::from_secs(60);

/// The cache capacity unless set.
const DEFAULT_CACHE: usize = 1024;

/// The largest cache capacity: a larger setting is cut to this.
const MAX_CACHE: usize = 1 << 20;

/// How long a refusal is kept unless set.
const DEFAULT_REFUSAL_TIME: Duration = Duration::from_secs(10);

/// The most requests to the authorization server in flight at once unless set.
const DEFAULT_IN_FLIGHT: usize = 16;

/// The leeway for `exp` and `nbf`.
const LEEWAY: u64 = 60_000_000;

/// The longest token sent to the authorization server (bytes): a longer one is refused
/// without asking.
const MAX_TOKEN_LEN: usize = 16 * 1024;

/// Verifies tokens by asking the authorization server about them (RFC 7662 token
/// introspection; feature `oauth`): for reference (opaque) tokens, or to learn of a
/// revocation sooner than a JWT's expiry.
///
/// The endpoint is called with `POST`, the token in the form body, this resource server's
/// client credentials in HTTP Basic authentication (RFC 6749 §2.3.1), over `https`
/// (plain `http` only to a loopback host, when
/// [`allow_loopback_http`](Self::allow_loopback_http)), within a deadline
/// ([`timeout`](Self::timeout), 10 s unless set) and a cap on the answer's size
/// ([`max_response_bytes`](Self::max_response_bytes), 256 KiB unless set).
///
/// An answer is accepted when `active` is `true`, `iss` (when present) is the configured
/// issuer, `aud` contains the configured resource (required unless
/// [`require_audience`](Self::require_audience) is turned off; when present it is always
/// checked), `exp` (when present) is not past and `nbf` (when present) not ahead, with
/// 60 s of leeway. The subject is `sub`, else `client_id` (a client-credentials token
/// may have no `sub`).
///
/// Active answers are kept in a bounded cache ([`cache_capacity`](Self::cache_capacity),
/// 1,024 unless set), by the SHA-256 digest of the token (never the token), until the
/// token's `exp` or for [`cache_time`](Self::cache_time) (60 s unless set), whichever is
/// sooner: a token revoked at the server is still accepted here for at most that long.
/// A cached token costs no request and no allocation.
///
/// Refusals are kept too, in a bounded cache of their own (so a flood of bad tokens never
/// pushes out a good one; [`refusal_cache_capacity`](Self::refusal_cache_capacity),
/// 1,024 unless set), by the token's digest, for
/// [`refusal_cache_time`](Self::refusal_cache_time) (10 s unless set): a token the
/// server said is inactive, or whose answer does not fit this resource, is refused again
/// without asking. When the server could not be asked, nothing is kept.
///
/// At most [`max_in_flight`](Self::max_in_flight) requests (16 unless set) are in flight
/// at once; a token that would need another is refused at once with
/// [`VerifyError::Busy`] (`503` with `Retry-After: 1`) rather than queued, so a flood of
/// fresh tokens costs the authorization server a bounded load and holds no request
/// waiting, while tokens in either cache are still answered.
///
/// An answer `400 Bad Request` (a server that refuses to introspect this kind of token,
/// as `oidc-provider` does for its JWTs) is [`VerifyError::Inactive`]: the server vouches
/// for nothing. When the server cannot be asked (no answer in time, another error status
/// such as `401` for wrong client credentials, a malformed answer) the token is neither
/// accepted nor called invalid: [`VerifyError::Unavailable`].
pub struct IntrospectionVerifier {
    endpoint: String,
    issuer: String,
    resource: String,
    /// `Basic base64(client_id:client_secret)`, each form-encoded.
    authorization: String,
    require_audience: bool,
    cache_time: Duration,
    cache: Mutex<Expiring<AccessToken>>,
    refusal_time: Duration,
    refusals: Mutex<Expiring<VerifyError>>,
    in_flight: Semaphore,
    max_in_flight: usize,
    fetcher: Fetcher,
}

impl fmt::Debug for IntrospectionVerifier {
    /// The client secret is left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.endpoint)
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("require_audience", &self.require_audience)
            .field("cache_time", &self.cache_time)
            .field("cache_capacity", &self.lock().capacity())
            .field("refusal_cache_time", &self.refusal_time)
            .field("refusal_cache_capacity", &self.refusals().capacity())
            .field("max_in_flight", &self.max_in_flight)
            .field("fetcher", &self.fetcher)
            .finish_non_exhaustive()
    }
}

/// The members of an introspection answer read here (RFC 7662 §2.2).
#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    exp: Option<f64>,
    #[serde(default)]
    nbf: Option<f64>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    aud: Option<Audience>,
    #[serde(default)]
    tid: Option<serde_json::Value>,
    #[serde(default)]
    tenant: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn contains(&self, want: &str) -> bool {
        match self {
            Self::One(s) => s == want,
            Self::Many(v) => v.iter().any(|s| s == want),
        }
    }
}

/// Seconds (possibly fractional, negative is the epoch) in microseconds.
fn micros(secs: f64) -> u64 {
    // `as` saturates.
    (secs * 1e6) as u64
}

impl IntrospectionVerifier {
    /// Introspects at `endpoint` (the authorization server's `introspection_endpoint`)
    /// tokens that `issuer` issued for `resource` (this server's resource identifier),
    /// authenticating as the client `client_id` with `client_secret`.
    pub fn new(
        endpoint: impl Into<String>,
        issuer: impl Into<String>,
        resource: impl Into<String>,
        client_id: &str,
        client_secret: &str,
    ) -> Self {
        let mut credentials = String::new();
        form_encode(client_id, &mut credentials);
        credentials.push(':');
        form_encode(client_secret, &mut credentials);
        let authorization =
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials.as_bytes()));
        Self {
            endpoint: endpoint.into(),
            issuer: issuer.into(),
            resource: resource.into(),
            authorization,
            require_audience: true,
            cache_time: DEFAULT_CACHE_TIME,
            cache: Mutex::new(Expiring::new(DEFAULT_CACHE)),
            refusal_time: DEFAULT_REFUSAL_TIME,
            refusals: Mutex::new(Expiring::new(DEFAULT_CACHE)),
            in_flight: Semaphore::new(DEFAULT_IN_FLIGHT),
            max_in_flight: DEFAULT_IN_FLIGHT,
            fetcher: Fetcher::new(),
        }
    }

    /// Introspects at the endpoint `issuer`'s metadata names: call
    /// [`discover_endpoint`](Self::discover_endpoint) once configured (until then every
    /// token is [`VerifyError::Unavailable`]).
    pub fn at_issuer(
        issuer: impl Into<String>,
        resource: impl Into<String>,
        client_id: &str,
        client_secret: &str,
    ) -> Self {
        Self::new(String::new(), issuer, resource, client_id, client_secret)
    }

    /// Takes the introspection endpoint from the issuer's metadata (RFC 8414, else OpenID
    /// Connect Discovery), fetched with this verifier's settings (trusted certificates,
    /// loopback `http`, deadline, size cap).
    ///
    /// # Errors
    ///
    /// The metadata could not be fetched, names another issuer, or has no usable
    /// `introspection_endpoint`.
    pub async fn discover_endpoint(mut self) -> Result<Self, OAuthError> {
        let meta = super::jwks::discover(&self.fetcher, &self.issuer).await?;
        let endpoint = meta.introspection_endpoint.ok_or_else(|| {
            OAuthError::Metadata("the issuer's metadata has no introspection_endpoint".into())
        })?;
        self.fetcher.check(&endpoint).map_err(OAuthError::fetch)?;
        self.endpoint = endpoint;
        Ok(self)
    }

    /// Whether an answer must carry `aud` (containing the resource). On unless set; an
    /// `aud` that is present is checked either way.
    #[must_use]
    pub fn require_audience(mut self, require: bool) -> Self {
        self.require_audience = require;
        self
    }

    /// The longest an active answer is kept (60 s unless set; never past the token's
    /// `exp`). Zero keeps none.
    #[must_use]
    pub fn cache_time(mut self, time: Duration) -> Self {
        self.cache_time = time;
        self
    }

    /// How many active answers to keep (1,024 unless set; zero keeps none; at most
    /// 1,048,576). The table is allocated at this size now.
    #[must_use]
    pub fn cache_capacity(mut self, capacity: usize) -> Self {
        self.cache = Mutex::new(Expiring::new(capacity.min(MAX_CACHE)));
        self
    }

    /// How long a refusal is kept: a token the server said is inactive (or whose answer
    /// does not fit this resource) is refused again without asking for this long (10 s
    /// unless set). Zero keeps none.
    #[must_use]
    pub fn refusal_cache_time(mut self, time: Duration) -> Self {
        self.refusal_time = time;
        self
    }

    /// How many refusals to keep (1,024 unless set; zero keeps none; at most 1,048,576),
    /// apart from the active answers. The table is allocated at this size now.
    #[must_use]
    pub fn refusal_cache_capacity(mut self, capacity: usize) -> Self {
        self.refusals = Mutex::new(Expiring::new(capacity.min(MAX_CACHE)));
        self
    }

    /// The most requests to the authorization server in flight at once (16 unless set; at
    /// least 1). A token that would need one more is refused at once with
    /// [`VerifyError::Busy`]: `503` with `Retry-After: 1`.
    #[must_use]
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests.clamp(1, Semaphore::MAX_PERMITS);
        self.in_flight = Semaphore::new(self.max_in_flight);
        self
    }

    /// The deadline of one request, connection, request and answer together (10 s unless
    /// set).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.fetcher.timeout = timeout;
        self
    }

    /// The largest answer read, in bytes (256 KiB unless set): a longer one is
    /// [`VerifyError::Unavailable`].
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.fetcher.max_bytes = bytes;
        self
    }

    /// Also trusts the certificates in `pem` (PEM text: a private certificate authority
    /// the authorization server's certificate chains to), beside the operating system's.
    ///
    /// # Errors
    ///
    /// No certificate in the text, or one that is not usable.
    pub fn trust_roots_pem(mut self, pem: &[u8]) -> Result<Self, OAuthError> {
        self.fetcher.trust_pem(pem).map_err(OAuthError::Tls)?;
        Ok(self)
    }

    /// Also ask over plain `http`, but only a loopback host. Off unless set.
    #[must_use]
    pub fn allow_loopback_http(mut self, allow: bool) -> Self {
        self.fetcher.loopback_http = allow;
        self
    }

    /// The introspection endpoint.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Expiring<AccessToken>> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refusals(&self) -> std::sync::MutexGuard<'_, Expiring<VerifyError>> {
        self.refusals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached answer for `token`, if there is one still good (an active answer, or a
    /// refusal): `None` when the server must be asked. Allocates nothing.
    pub(super) fn cached(&self, token: &str) -> Option<Result<AccessToken, VerifyError>> {
        if self.cache_time.is_zero() && self.refusal_time.is_zero() {
            return None;
        }
        let (key, now) = (digest(token), now_micros());
        if !self.cache_time.is_zero()
            && let Some(t) = self.lock().get(&key, now)
        {
            return Some(Ok(t));
        }
        if self.refusal_time.is_zero() {
            return None;
        }
        self.refusals().get(&key, now).map(Err)
    }

    /// Keeps the server's refusal of `token` for the refusal cache time.
    fn refused(&self, token: &str, e: VerifyError) -> VerifyError {
        if !self.refusal_time.is_zero() {
            let now = now_micros();
            let until = now.saturating_add(self.refusal_time.as_micros() as u64);
            self.refusals().insert(digest(token), e.clone(), until, now);
        }
        e
    }

    /// Verifies `token`: from the cache, else by asking the server.
    ///
    /// # Errors
    ///
    /// [`VerifyError::Inactive`] when the server says so, [`VerifyError::Invalid`] when its
    /// answer does not fit this resource, [`VerifyError::Unavailable`] when it could not be
    /// asked.
    pub async fn verify(&self, token: &str) -> Result<AccessToken, VerifyError> {
        if let Some(known) = self.cached(token) {
            return known;
        }
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(VerifyError::Invalid(TokenError::Malformed));
        }
        // Held until the answer is in (or this future is dropped).
        let Ok(_permit) = self.in_flight.try_acquire() else {
            tracing::debug!(max = self.max_in_flight, "token introspection: too many in flight, not asked");
            return Err(VerifyError::Busy);
        };
        let mut form = String::with_capacity(token.len() + 40);
        form.push_str("token=");
        form_encode(token, &mut form);
        form.push_str("&token_type_hint=access_token");
        let body = match self.fetcher.post_form(&self.endpoint, &self.authorization, form).await {
            Ok(body) => body,
            // The server refuses the request for this token (say `unsupported_token_type`
            // for a JWT it does not introspect): it vouches for nothing.
            Err(FetchError::Status(_, 400)) => {
                tracing::debug!(endpoint = %self.endpoint, "token introspection: 400 for the token");
                return Err(self.refused(token, VerifyError::Inactive));
            }
            // No answer, or one saying to come back later: the client may retry.
            Err(e @ (FetchError::Timeout(_) | FetchError::Transport(..))) => {
                tracing::warn!(error = %e, "token introspection: the authorization server does not answer");
                return Err(VerifyError::Unreachable);
            }
            Err(e @ FetchError::Status(_, 429 | 500..=599)) => {
                tracing::warn!(error = %e, "token introspection: the authorization server does not answer");
                return Err(VerifyError::Unreachable);
            }
            Err(e) => {
                tracing::warn!(error = %e, "token introspection failed");
                return Err(VerifyError::Unavailable);
            }
        };
        let answer: Answer = match serde_json::from_slice(&body) {
            Ok(a) => a,
            Err(_) => {
                tracing::warn!(endpoint = %self.endpoint, "token introspection: not an introspection answer");
                return Err(VerifyError::Unavailable);
            }
        };
        let now = now_micros();
        let token_info = self.judge(answer, now).map_err(|e| self.refused(token, e))?;
        if !self.cache_time.is_zero() {
            let mut until = now.saturating_add(self.cache_time.as_micros() as u64);
            if let Some(exp) = token_info.expiry() {
                until = until.min(exp.as_micros());
            }
            self.lock().insert(digest(token), token_info.clone(), until, now);
        }
        Ok(token_info)
    }

    fn judge(&self, a: Answer, now: u64) -> Result<AccessToken, VerifyError> {
        if !a.active {
            return Err(VerifyError::Inactive);
        }
        if a.iss.as_ref().is_some_and(|iss| *iss != self.issuer) {
            return Err(VerifyError::Invalid(TokenError::Issuer));
        }
        match &a.aud {
            Some(aud) if !aud.contains(&self.resource) => {
                return Err(VerifyError::Invalid(TokenError::Audience));
            }
            None if self.require_audience => {
                return Err(VerifyError::Invalid(TokenError::MissingClaim("aud")));
            }
            _ => {}
        }
        let exp = a.exp.map(micros);
        if exp.is_some_and(|exp| exp.saturating_add(LEEWAY) <= now) {
            return Err(VerifyError::Invalid(TokenError::Expired));
        }
        if a.nbf.map(micros).is_some_and(|nbf| nbf > now.saturating_add(LEEWAY)) {
            return Err(VerifyError::Invalid(TokenError::NotYetValid));
        }
        let subject = a
            .sub
            .filter(|s| !s.is_empty())
            .or_else(|| a.client_id.clone())
            .filter(|s| !s.is_empty())
            .ok_or(VerifyError::Invalid(TokenError::MissingClaim("sub")))?;
        let tenant = [a.tid, a.tenant].into_iter().flatten().find_map(|v| match v {
            serde_json::Value::String(s) => Some(s),
            _ => None,
        });
        let principal = principal_of(&self.issuer, &subject);
        Ok(AccessToken::introspected(Arc::new(Introspected {
            issuer: self.issuer.clone(),
            subject,
            client_id: a.client_id,
            tenant,
            scope: a.scope.unwrap_or_default(),
            exp,
            principal,
        })))
    }
}

fn now_micros() -> u64 {
    UnixTime::from_system_time(SystemTime::now()).as_micros()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier() -> IntrospectionVerifier {
        IntrospectionVerifier::new(
            "https://as.example/introspect",
            "https://as.example",
            "https://rs.example/mcp",
            "rs",
            "s",
        )
    }

    fn answer(json: &str) -> Answer {
        serde_json::from_str(json).unwrap()
    }

    const NOW: u64 = 1_800_000_000_000_000;

    #[test]
    fn answers_are_judged() {
        let v = verifier();
        let good = r#"{"active":true,"iss":"https://as.example","aud":"https://rs.example/mcp","client_id":"c","scope":"a b","exp":1800000300,"tid":"t"}"#;
        let t = v.judge(answer(good), NOW).unwrap();
        assert_eq!((t.subject(), t.client_id(), t.tenant()), ("c", Some("c"), Some("t")));
        assert_eq!(t.scopes().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(t.principal(), principal_of("https://as.example", "c"));
        let refused = |json: &str| v.judge(answer(json), NOW).unwrap_err();
        assert_eq!(refused(r#"{"active":false,"sub":"x"}"#), VerifyError::Inactive);
        assert_eq!(
            refused(
                r#"{"active":true,"sub":"x","aud":"https://rs.example/mcp","iss":"https://evil.example"}"#
            ),
            VerifyError::Invalid(TokenError::Issuer)
        );
        assert_eq!(
            refused(r#"{"active":true,"sub":"x","aud":["https://other.example"]}"#),
            VerifyError::Invalid(TokenError::Audience)
        );
        assert_eq!(
            refused(r#"{"active":true,"sub":"x"}"#),
            VerifyError::Invalid(TokenError::MissingClaim("aud"))
        );
        assert_eq!(
            refused(r#"{"active":true,"sub":"x","aud":"https://rs.example/mcp","exp":1799999000}"#),
            VerifyError::Invalid(TokenError::Expired)
        );
        assert_eq!(
            refused(r#"{"active":true,"sub":"x","aud":"https://rs.example/mcp","nbf":1800001000}"#),
            VerifyError::Invalid(TokenError::NotYetValid)
        );
        assert_eq!(
            refused(r#"{"active":true,"aud":"https://rs.example/mcp"}"#),
            VerifyError::Invalid(TokenError::MissingClaim("sub"))
        );
        let lax = verifier().require_audience(false);
        assert!(lax.judge(answer(r#"{"active":true,"sub":"x"}"#), NOW).is_ok());
        assert!(serde_json::from_str::<Answer>(r#"{"sub":"x"}"#).is_err(), "active is required");
    }

    #[test]
    fn the_client_secret_stays_out_of_debug() {
        assert!(!format!("{:?}", verifier()).contains("Basic"));
    }
}
