//! OAuth 2.1 token verification for a protected resource (feature `oauth`): the
//! [`OAuthAuthorizer`], the two verifiers it uses ([`JwksVerifier`] for JWT access tokens,
//! [`IntrospectionVerifier`] for RFC 7662 introspection), and what a good token yields
//! ([`AccessToken`]).
//!
//! The engine does the protected resource's part without I/O (the metadata document, the
//! challenges, reading `Authorization`; see
//! [`HttpConfig::protected_resource`](mcp_engine::http::HttpConfig::protected_resource))
//! and the pure JWT checks ([`JwtVerifier`](mcp_engine::http::JwtVerifier)); this module
//! adds the I/O: fetching key sets and asking introspection endpoints over HTTPS, each
//! fetch bounded in time and size.

use core::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use mcp_engine::UnixTime;
use mcp_engine::http::{Grant, JwksError, Principal, Scopes, TokenError, Verdict, VerifiedToken};

use crate::auth::{AuthorizeInfo, Authorizer};

mod cache;
mod fetch;
mod introspect;
mod jwks;

pub use introspect::IntrospectionVerifier;
pub use jwks::{JwksSource, JwksVerifier};

/// A configuration or fetch error of the OAuth verifiers. Shows URLs, paths and what went
/// wrong, never a token or a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthError {
    /// A fetch failed: not an allowed URL, no answer in time, a transport error, a status
    /// other than `200`, or a body over the cap. The text says which.
    Fetch(String),
    /// The issuer's metadata is unusable: not found at either well-known URL, not JSON,
    /// another `issuer`, or without the endpoint needed.
    Metadata(String),
    /// The key set was refused by the engine's verifier.
    Jwks(JwksError),
    /// The key set file could not be read, or is over the cap.
    File(PathBuf, String),
    /// Certificates to trust could not be read.
    Tls(String),
}

impl OAuthError {
    fn fetch(e: fetch::FetchError) -> Self {
        Self::Fetch(e.to_string())
    }
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fetch(e) => write!(f, "fetch: {e}"),
            Self::Metadata(e) => write!(f, "authorization server metadata: {e}"),
            Self::Jwks(e) => write!(f, "key set: {e}"),
            Self::File(p, e) => write!(f, "key set file {}: {e}", p.display()),
            Self::Tls(e) => write!(f, "trusted certificates: {e}"),
        }
    }
}

impl std::error::Error for OAuthError {}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyError {
    /// The token is not good for this resource: the JWT checks failed, or an
    /// introspection answer does not fit (issuer, audience, times, no subject). `401`
    /// with `error="invalid_token"`.
    Invalid(TokenError),
    /// The authorization server says the token is not active (RFC 7662). `401` with
    /// `error="invalid_token"`.
    Inactive,
    /// The authorization server could not be asked (introspection): the token is neither
    /// good nor bad. `500`: this server is misconfigured (its client credentials are
    /// refused, the endpoint answers something else than introspection).
    Unavailable,
    /// The authorization server did not answer (no connection, no answer in time, a
    /// `5xx` or `429`): `503` with `Retry-After: 1`, for the client to try again.
    Unreachable,
    /// As many introspection requests as allowed are in flight already
    /// ([`IntrospectionVerifier::max_in_flight`]): the server was not asked. `503` with
    /// `Retry-After: 1`, as [`Unreachable`](Self::Unreachable).
    Busy,
}

impl VerifyError {
    /// What to tell the engine: [`Verdict::Unauthenticated`] for a bad token,
    /// [`Verdict::Failed`] when it could not be checked, [`Verdict::Unavailable`] when
    /// the authorization server did not answer.
    pub fn verdict(&self) -> Verdict {
        match self {
            Self::Invalid(_) | Self::Inactive => Verdict::Unauthenticated,
            Self::Unavailable => Verdict::Failed,
            Self::Unreachable | Self::Busy => Verdict::Unavailable,
        }
    }

    /// A short reason for a log line: no token, no claim's value, no key id.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Invalid(e) => match e {
                TokenError::Malformed => "malformed token",
                TokenError::UnknownKid(_) => "unknown key id",
                TokenError::NoKey => "no key for the token",
                TokenError::Algorithm => "algorithm not allowed",
                TokenError::Type => "not an access token (typ)",
                TokenError::Signature => "bad signature",
                TokenError::Issuer => "wrong issuer",
                TokenError::Audience => "wrong audience",
                TokenError::Expired => "expired",
                TokenError::NotYetValid => "not yet valid",
                TokenError::IssuedInFuture => "issued in the future",
                TokenError::MissingClaim(c) => c,
                _ => "invalid token",
            },
            Self::Inactive => "inactive token",
            Self::Unavailable => "the authorization server could not be asked",
            Self::Unreachable => "the authorization server does not answer",
            Self::Busy => "too many introspection requests in flight",
        }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(TokenError::MissingClaim(c)) => write!(f, "missing claim {c}"),
            _ => f.write_str(self.reason()),
        }
    }
}

impl std::error::Error for VerifyError {}

/// A token that verified, whichever way: who it acts for (subject, client, tenant),
/// with which scopes, from which issuer, until when. Cloning it shares it (no
/// allocation). Its `Debug` shows the principal's digest, never a claim.
#[derive(Clone)]
pub struct AccessToken(Repr);

#[derive(Clone)]
enum Repr {
    Jwt(VerifiedToken),
    Introspected(Arc<Introspected>),
}

/// What an introspection answer said of an active token.
struct Introspected {
    issuer: String,
    subject: String,
    client_id: Option<String>,
    tenant: Option<String>,
    /// Space-separated.
    scope: String,
    /// Microseconds since the Unix epoch.
    exp: Option<u64>,
    principal: Principal,
}

impl AccessToken {
    fn jwt(t: VerifiedToken) -> Self {
        Self(Repr::Jwt(t))
    }

    fn introspected(t: Arc<Introspected>) -> Self {
        Self(Repr::Introspected(t))
    }

    /// The subject: `sub` (for an introspected token without one, its `client_id`).
    pub fn subject(&self) -> &str {
        match &self.0 {
            Repr::Jwt(t) => t.subject(),
            Repr::Introspected(t) => &t.subject,
        }
    }

    /// The client the token was issued to (`client_id`, for a JWT else `azp`).
    pub fn client_id(&self) -> Option<&str> {
        match &self.0 {
            Repr::Jwt(t) => t.client_id(),
            Repr::Introspected(t) => t.client_id.as_deref(),
        }
    }

    /// The scopes granted.
    pub fn scopes(&self) -> impl Iterator<Item = &str> + '_ {
        let text: Option<&str> = match &self.0 {
            Repr::Jwt(_) => None,
            Repr::Introspected(t) => Some(&t.scope),
        };
        let jwt = match &self.0 {
            Repr::Jwt(t) => Some(t.scopes()),
            Repr::Introspected(_) => None,
        };
        jwt.into_iter().flatten().chain(text.into_iter().flat_map(|s| s.split(' ').filter(|s| !s.is_empty())))
    }

    /// Whether `scope` is one of the token's scopes (exactly).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes().any(|s| s == scope)
    }

    /// The issuer (the configured one: a token of another is refused).
    pub fn issuer(&self) -> &str {
        match &self.0 {
            Repr::Jwt(t) => t.issuer(),
            Repr::Introspected(t) => &t.issuer,
        }
    }

    /// When the token expires (`exp`; an introspection answer may not say).
    pub fn expiry(&self) -> Option<UnixTime> {
        match &self.0 {
            Repr::Jwt(t) => Some(t.expiry()),
            Repr::Introspected(t) => t.exp.map(UnixTime::from_micros),
        }
    }

    /// The tenant (`tid`, else `tenant`, when a string).
    pub fn tenant(&self) -> Option<&str> {
        match &self.0 {
            Repr::Jwt(t) => t.tenant(),
            Repr::Introspected(t) => t.tenant.as_deref(),
        }
    }

    /// Who the token acts for, as the engine keeps it: the same digest of issuer and
    /// subject whichever verifier found it ([`VerifiedToken::principal`]).
    pub fn principal(&self) -> Principal {
        match &self.0 {
            Repr::Jwt(t) => t.principal(),
            Repr::Introspected(t) => t.principal,
        }
    }

    /// What the token grants, read with the server's scope names: its principal, its
    /// scopes (those the server knows, with what they imply), its expiry.
    pub fn grant(&self, scopes: &Scopes) -> Grant {
        let grant = Grant::new(self.principal()).scopes(scopes.set_of(self.scopes()));
        match self.expiry() {
            Some(at) => grant.expires(at),
            None => grant,
        }
    }

    /// What to tell the engine: [`Verdict::Grant`] of [`Self::grant`].
    pub fn verdict(&self, scopes: &Scopes) -> Verdict {
        Verdict::Grant(self.grant(scopes))
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessToken")
            .field("principal", &self.principal())
            .field("scopes", &self.scopes().count())
            .field("expiry", &self.expiry())
            .finish_non_exhaustive()
    }
}

/// The principal of `sub` from `iss`, as [`VerifiedToken::principal`] documents it: the
/// issuer's length as 8 big-endian bytes, the issuer, the subject.
fn principal_of(iss: &str, sub: &str) -> Principal {
    let mut bytes = Vec::with_capacity(8 + iss.len() + sub.len());
    bytes.extend_from_slice(&(iss.len() as u64).to_be_bytes());
    bytes.extend_from_slice(iss.as_bytes());
    bytes.extend_from_slice(sub.as_bytes());
    Principal::of(&bytes)
}

/// How an [`OAuthAuthorizer`] verifies tokens.
#[derive(Debug, Clone)]
enum Verifier {
    Jwt(Arc<JwksVerifier>),
    Introspection(Arc<IntrospectionVerifier>),
}

/// An [`Authorizer`] for an endpoint that is an OAuth 2.1 protected resource (feature
/// `oauth`): takes the `Authorization: Bearer` token, verifies it as a JWT access token
/// ([`OAuthAuthorizer::jwt`]) or by introspection ([`OAuthAuthorizer::introspection`]),
/// checks the scopes every request needs ([`require_scopes`](Self::require_scopes)), and
/// answers the engine:
///
/// | the token | verdict | with [`HttpConfig::protected_resource`](mcp_engine::http::HttpConfig::protected_resource) |
/// |---|---|---|
/// | good, with the required scopes | [`Verdict::Grant`] its principal, scopes and expiry | the request proceeds, bound to the principal, within the scope policy ([`HttpConfig::scope_policy`](mcp_engine::http::HttpConfig::scope_policy)) |
/// | good, a required scope missing | [`Verdict::Forbidden`] | `403`, `error="insufficient_scope"` |
/// | none (not asked when protected: the engine answers itself) | [`Verdict::Unauthenticated`] | `401` with the challenge, no `error` |
/// | bad, expired, inactive, for another resource or issuer | [`Verdict::Unauthenticated`] | `401`, `error="invalid_token"` |
/// | not checkable (the introspection endpoint refuses this server's credentials, or answers something else) | [`Verdict::Failed`] | `500` |
/// | the authorization server does not answer (no connection, no answer in time, `5xx`, `429`), or [`IntrospectionVerifier::max_in_flight`] requests to it are in flight already | [`Verdict::Unavailable`] | `503`, `Retry-After: 1` |
///
/// A refusal is logged at `debug` with its reason ([`VerifyError::reason`]): never the
/// token, a claim's value or a key id.
///
/// A token that verified before (and has not expired) is answered at once on the
/// engine's task, from the verifiers' caches: no future, no signature check, no
/// allocation; so is a token the authorization server said is inactive, for a while
/// ([`IntrospectionVerifier::refusal_cache_time`]). Any other token is verified in a task of its own, so a signature check or
/// a request to the authorization server never holds up the engine's task.
///
/// ```no_run
/// use std::sync::Arc;
///
/// use mcp_engine::http::{JwtVerifier, ProtectedResource};
/// use mcp_io_tokio::http::oauth::{JwksVerifier, OAuthAuthorizer};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let resource = "https://mcp.example.com/mcp";
/// let issuer = "https://auth.example.com";
/// let _metadata = ProtectedResource::new(resource, [issuer])?.scopes_supported(["mcp:read"])?;
/// let keys = JwksVerifier::new(JwtVerifier::new(issuer, resource));
/// keys.load().await?; // the issuer's metadata, then its jwks_uri
/// let auth = OAuthAuthorizer::jwt(Arc::new(keys)).require_scopes(["mcp:read"]);
/// // HttpServer::new(engine, handler, auth) ...
/// # let _ = auth;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct OAuthAuthorizer {
    verifier: Verifier,
    required: Arc<[Box<str>]>,
}

impl OAuthAuthorizer {
    /// Verifies JWT access tokens with `verifier` (call its [`load`](JwksVerifier::load)
    /// before serving).
    pub fn jwt(verifier: Arc<JwksVerifier>) -> Self {
        Self { verifier: Verifier::Jwt(verifier), required: Arc::from([]) }
    }

    /// Verifies tokens by introspection with `verifier`.
    pub fn introspection(verifier: Arc<IntrospectionVerifier>) -> Self {
        Self { verifier: Verifier::Introspection(verifier), required: Arc::from([]) }
    }

    /// Scopes every request needs, all of them (none unless set): a good token without
    /// one is refused [`Verdict::Forbidden`].
    #[must_use]
    pub fn require_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.required = scopes.into_iter().map(|s| s.into().into_boxed_str()).collect();
        self
    }

    /// Verifies `token` with this authorizer's verifier.
    ///
    /// # Errors
    ///
    /// Why the token was not accepted.
    pub async fn verify(&self, token: &str) -> Result<AccessToken, VerifyError> {
        match &self.verifier {
            Verifier::Jwt(v) => v.verify(token).await,
            Verifier::Introspection(v) => v.verify(token).await,
        }
    }

    /// The verdict on a verification's outcome.
    fn decide(&self, outcome: Result<AccessToken, VerifyError>, scopes: &Scopes) -> Verdict {
        match outcome {
            Ok(t) => {
                if self.required.iter().all(|s| t.has_scope(s)) {
                    t.verdict(scopes)
                } else {
                    tracing::debug!(principal = ?t.principal(), "token refused: a required scope is missing");
                    Verdict::Forbidden
                }
            }
            Err(e) => {
                tracing::debug!(reason = e.reason(), "token refused");
                e.verdict()
            }
        }
    }
}

impl Authorizer for OAuthAuthorizer {
    async fn authorize(&self, request: &AuthorizeInfo) -> Verdict {
        match request.bearer_token() {
            Some(token) => self.decide(self.verify(token).await, &request.scopes),
            None => Verdict::Unauthenticated,
        }
    }

    fn authorize_now(&self, request: &AuthorizeInfo) -> Option<Verdict> {
        let Some(token) = request.bearer_token() else { return Some(Verdict::Unauthenticated) };
        let outcome = match &self.verifier {
            Verifier::Jwt(v) => v.verify_known(token)?,
            Verifier::Introspection(v) => v.cached(token)?,
        };
        Some(self.decide(outcome, &request.scopes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_principal_matches_the_engines() {
        // The engine's own derivation, through a JWT it verified, is tested in the
        // integration tests; here the documented bytes.
        let mut bytes = 9u64.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"https://aalice");
        assert_eq!(principal_of("https://a", "alice"), Principal::of(&bytes));
    }

    #[test]
    fn verdicts_and_reasons() {
        assert_eq!(VerifyError::Inactive.verdict(), Verdict::Unauthenticated);
        assert_eq!(VerifyError::Invalid(TokenError::Expired).verdict(), Verdict::Unauthenticated);
        assert_eq!(VerifyError::Unavailable.verdict(), Verdict::Failed);
        assert_eq!(VerifyError::Unreachable.verdict(), Verdict::Unavailable);
        assert_eq!(VerifyError::Busy.verdict(), Verdict::Unavailable);
        assert_eq!(
            VerifyError::Invalid(TokenError::UnknownKid("secret-ish".into())).to_string(),
            "unknown key id"
        );
    }
}
