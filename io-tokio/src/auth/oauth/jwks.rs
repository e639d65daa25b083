//! JWT access tokens against the issuer's key set: [`JwksVerifier`], the engine's
//! [`JwtVerifier`] with its keys fetched, cached and refreshed.

use core::fmt;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use mcp_engine::UnixTime;
use mcp_engine::http::{JwtVerifier, TokenError};
use serde::Deserialize;
use tokio::io::AsyncReadExt as _;

use super::cache::{Expiring, digest};
use super::fetch::Fetcher;
use super::{AccessToken, OAuthError, VerifyError};

/// How many verified tokens are known to be in the engine verifier's cache (decided at
/// once) unless set.
const DEFAULT_KNOWN: usize = 1024;

/// The shortest time between two refreshes of the key set unless set.
const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

/// Where the key set comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwksSource {
    /// The `jwks_uri` of the issuer's metadata: RFC 8414
    /// (`/.well-known/oauth-authorization-server`, inserted before the issuer's path),
    /// else OpenID Connect Discovery (`/.well-known/openid-configuration`, appended). The
    /// document's `issuer` must be the configured issuer exactly.
    Discover,
    /// This URL.
    Url(String),
    /// This file (read at most as far as the size cap).
    File(PathBuf),
}

/// Verifies JWT access tokens (RFC 9068) of one issuer for one resource, with the
/// issuer's key set fetched over HTTPS (feature `oauth`): the engine's pure
/// [`JwtVerifier`] (every check, the cache of verified tokens) fed by this adapter's I/O.
///
/// - [`load`](Self::load) fetches the key set from the [`JwksSource`]: the issuer's
///   metadata by default ([`JwksSource::Discover`]), a URL, or a file. Call it once before
///   serving (an error then is a configuration error); it may be called again at any time
///   to refresh.
/// - A token naming a key (`kid`) the set does not hold makes the verifier fetch the set
///   again, at most once per [`refresh_interval`](Self::refresh_interval) (60 s unless
///   set), whoever asks: a flood of unknown `kid`s costs one fetch per interval. Other
///   tokens are verified meanwhile with the keys there are.
/// - A refresh that fails (no answer, a bad document, no usable key) keeps the last good
///   set, and is logged.
/// - Every fetch is `https` (plain `http` only to a loopback host, and only when
///   [`allow_loopback_http`](Self::allow_loopback_http)), bounded in time
///   ([`timeout`](Self::timeout), 10 s unless set, for the whole exchange) and in size
///   ([`max_response_bytes`](Self::max_response_bytes), 256 KiB unless set); redirects
///   are not followed.
///
/// A token presented again is found in the engine verifier's cache: no signature is
/// checked and nothing is allocated, and the [`OAuthAuthorizer`](crate::http::oauth::OAuthAuthorizer)
/// decides it at once on the engine's task. A token not seen before (or one with a bad
/// signature, which is never cached) is verified in a task of its own. Nothing of a
/// token, its claims or its signature is logged.
pub struct JwksVerifier {
    verifier: RwLock<JwtVerifier>,
    source: JwksSource,
    fetcher: Fetcher,
    refresh_interval: Duration,
    /// When the key set was last fetched (or tried), and the `jwks_uri` discovery found.
    state: Mutex<RefreshState>,
    /// Held while a refresh runs, so that concurrent unknown `kid`s make one fetch.
    refreshing: tokio::sync::Mutex<()>,
    /// The digests of tokens that verified, until their `exp`: these are decided at once
    /// (the engine verifier finds them in its cache); any other token is verified in a
    /// task, off the engine's, so that a flood of bad signatures does not hold it up.
    known: Mutex<Expiring<()>>,
}

#[derive(Default)]
struct RefreshState {
    last_attempt: Option<Instant>,
    jwks_uri: Option<String>,
}

impl fmt::Debug for JwksVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwksVerifier")
            .field("verifier", &*self.verifier.read().unwrap_or_else(PoisonError::into_inner))
            .field("source", &self.source)
            .field("fetcher", &self.fetcher)
            .field("refresh_interval", &self.refresh_interval)
            .finish_non_exhaustive()
    }
}

/// The members of an authorization server's metadata read here (RFC 8414 §2).
#[derive(Deserialize)]
pub(super) struct ServerMetadata {
    pub(super) issuer: String,
    #[serde(default)]
    pub(super) jwks_uri: Option<String>,
    #[serde(default)]
    pub(super) introspection_endpoint: Option<String>,
}

impl JwksVerifier {
    /// Verifies with `verifier` (its issuer, audience, algorithms, leeway and cache as
    /// configured; any keys it holds are replaced by [`load`](Self::load)), keys from the
    /// issuer's metadata ([`JwksSource::Discover`]).
    pub fn new(verifier: JwtVerifier) -> Self {
        Self {
            verifier: RwLock::new(verifier),
            source: JwksSource::Discover,
            fetcher: Fetcher::new(),
            refresh_interval: DEFAULT_REFRESH_INTERVAL,
            state: Mutex::new(RefreshState::default()),
            refreshing: tokio::sync::Mutex::new(()),
            known: Mutex::new(Expiring::new(DEFAULT_KNOWN)),
        }
    }

    /// Where the key set comes from ([`JwksSource::Discover`] unless set).
    #[must_use]
    pub fn source(mut self, source: JwksSource) -> Self {
        self.source = source;
        self
    }

    /// The shortest time between two fetches of the key set prompted by unknown `kid`s
    /// (60 s unless set).
    #[must_use]
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// How many verified tokens are answered at once, on the engine's task, without a
    /// task of their own (1,024 unless set; match the engine verifier's
    /// [`cache_capacity`](JwtVerifier::cache_capacity)). Any other token is verified in a
    /// task: a signature check (tens to hundreds of microseconds) never holds up the
    /// engine's task.
    #[must_use]
    pub fn answered_at_once(mut self, tokens: usize) -> Self {
        self.known = Mutex::new(Expiring::new(tokens.min(1 << 20)));
        self
    }

    /// The deadline of one fetch, connection, request and body together (10 s unless
    /// set).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.fetcher.timeout = timeout;
        self
    }

    /// The largest document fetched or read, in bytes (256 KiB unless set): a longer one
    /// is an error.
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

    /// Also fetch over plain `http`, but only from a loopback host (an authorization
    /// server on the same machine, a test). Off unless set.
    #[must_use]
    pub fn allow_loopback_http(mut self, allow: bool) -> Self {
        self.fetcher.loopback_http = allow;
        self
    }

    /// The configured issuer.
    pub fn issuer(&self) -> String {
        self.read().issuer().to_owned()
    }

    /// How many keys the key set holds.
    pub fn key_count(&self) -> usize {
        self.read().key_count()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, JwtVerifier> {
        self.verifier.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RefreshState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fetches the key set now and replaces the keys with it; returns how many keys it
    /// kept. On an error the keys there were stay.
    ///
    /// # Errors
    ///
    /// The metadata or the key set could not be fetched or read (see [`OAuthError`]), or
    /// the key set holds no usable key.
    pub async fn load(&self) -> Result<usize, OAuthError> {
        let _one = self.refreshing.lock().await;
        self.refresh_locked().await
    }

    /// Fetches and installs the key set; the caller holds `refreshing`.
    async fn refresh_locked(&self) -> Result<usize, OAuthError> {
        self.state().last_attempt = Some(Instant::now());
        let jwks = match &self.source {
            JwksSource::File(path) => self.read_file(path).await?,
            JwksSource::Url(url) => self.fetcher.get(url).await.map_err(OAuthError::fetch)?,
            JwksSource::Discover => {
                let known = self.state().jwks_uri.clone();
                let url = match known {
                    Some(url) => url,
                    None => {
                        let meta = discover(&self.fetcher, &self.issuer()).await?;
                        let url = meta.jwks_uri.ok_or_else(|| {
                            OAuthError::Metadata("the issuer's metadata has no jwks_uri".into())
                        })?;
                        self.fetcher.check(&url).map_err(OAuthError::fetch)?;
                        self.state().jwks_uri = Some(url.clone());
                        url
                    }
                };
                match self.fetcher.get(&url).await {
                    Ok(body) => body,
                    Err(e) => {
                        // The issuer may have moved its keys: discover again next time.
                        self.state().jwks_uri = None;
                        return Err(OAuthError::fetch(e));
                    }
                }
            }
        };
        let mut verifier = self.verifier.write().unwrap_or_else(PoisonError::into_inner);
        let kept = verifier.set_jwks(&jwks).map_err(OAuthError::Jwks)?;
        // The engine verifier emptied its cache.
        self.known.lock().unwrap_or_else(PoisonError::into_inner).clear();
        tracing::debug!(keys = kept, "key set loaded");
        Ok(kept)
    }

    async fn read_file(&self, path: &std::path::Path) -> Result<bytes::Bytes, OAuthError> {
        let file_error = |e: std::io::Error| OAuthError::File(path.to_owned(), e.to_string());
        let file = tokio::fs::File::open(path).await.map_err(file_error)?;
        let max = self.fetcher.max_bytes;
        let mut buf = Vec::new();
        file.take(max as u64 + 1).read_to_end(&mut buf).await.map_err(file_error)?;
        if buf.len() > max {
            return Err(OAuthError::File(path.to_owned(), format!("over {max} bytes")));
        }
        Ok(buf.into())
    }

    /// Whether an unknown `kid` may prompt a refresh now.
    fn refresh_due(&self) -> bool {
        self.state().last_attempt.is_none_or(|t| t.elapsed() >= self.refresh_interval)
    }

    /// Verifies `token` at once with the keys there are (the engine verifier's checks and
    /// cache).
    ///
    /// # Errors
    ///
    /// Why the token was refused.
    pub fn verify_now(&self, token: &str) -> Result<AccessToken, TokenError> {
        self.read().verify(token, UnixTime::from_system_time(SystemTime::now())).map(AccessToken::jwt)
    }

    /// Verifies `token`; a token naming a key the set does not hold prompts a refresh of
    /// the set (at most once per interval) and is verified again. While a refresh runs,
    /// such a token waits for it.
    ///
    /// # Errors
    ///
    /// [`VerifyError::Invalid`] with why the token was refused.
    pub async fn verify(&self, token: &str) -> Result<AccessToken, VerifyError> {
        let outcome = self.verify_refreshing(token).await;
        if let Ok(t) = &outcome
            && let Some(exp) = t.expiry()
        {
            let now = UnixTime::from_system_time(SystemTime::now()).as_micros();
            self.known.lock().unwrap_or_else(PoisonError::into_inner).insert(
                digest(token),
                (),
                exp.as_micros(),
                now,
            );
        }
        outcome
    }

    async fn verify_refreshing(&self, token: &str) -> Result<AccessToken, VerifyError> {
        match self.verify_now(token) {
            Err(TokenError::UnknownKid(_)) => {
                if !self.refresh_due() && self.refreshing.try_lock().is_ok() {
                    // No refresh due, none running: the keys may have changed meanwhile.
                    return self.verify_now(token).map_err(VerifyError::Invalid);
                }
                {
                    let _one = self.refreshing.lock().await;
                    // Another task may have refreshed while this one waited.
                    if self.refresh_due() {
                        match self.refresh_locked().await {
                            Ok(keys) => tracing::info!(keys, "key set refreshed for an unknown key id"),
                            Err(e) => {
                                tracing::warn!(error = %e, "refreshing the key set failed: the last good set stays");
                            }
                        }
                    }
                }
                self.verify_now(token).map_err(VerifyError::Invalid)
            }
            r => r.map_err(VerifyError::Invalid),
        }
    }

    /// The verdict on a token that verified before and has not expired (the engine
    /// verifier's cache: no signature check, no allocation); `None` for any other, which
    /// the caller verifies with [`verify`](Self::verify) in a task.
    pub(super) fn verify_known(&self, token: &str) -> Option<Result<AccessToken, VerifyError>> {
        let now = UnixTime::from_system_time(SystemTime::now()).as_micros();
        self.known.lock().unwrap_or_else(PoisonError::into_inner).get(&digest(token), now)?;
        Some(self.verify_now(token).map_err(VerifyError::Invalid))
    }
}

/// The issuer's metadata: RFC 8414 first, then OpenID Connect Discovery. Its `issuer`
/// must be `issuer` exactly (RFC 8414 §3.3).
pub(super) async fn discover(fetcher: &Fetcher, issuer: &str) -> Result<ServerMetadata, OAuthError> {
    let (rfc8414, oidc) = well_known(issuer)
        .ok_or_else(|| OAuthError::Metadata(format!("the issuer {issuer:?} is not a URL")))?;
    let mut failures = Vec::new();
    for url in [rfc8414, oidc] {
        match fetcher.get(&url).await {
            Ok(body) => {
                let meta: ServerMetadata = serde_json::from_slice(&body).map_err(|e| {
                    OAuthError::Metadata(format!("{url}: not authorization server metadata ({e})"))
                })?;
                if meta.issuer != issuer {
                    return Err(OAuthError::Metadata(format!(
                        "{url}: names the issuer {:?}, not {issuer:?}",
                        meta.issuer
                    )));
                }
                return Ok(meta);
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    Err(OAuthError::Metadata(format!("no metadata for the issuer: {}", failures.join("; "))))
}

/// The RFC 8414 and OpenID Connect metadata URLs of `issuer`.
fn well_known(issuer: &str) -> Option<(String, String)> {
    let uri: http::Uri = issuer.parse().ok()?;
    let scheme = uri.scheme_str()?;
    let authority = uri.authority()?;
    let path = uri.path().trim_end_matches('/');
    Some((
        format!("{scheme}://{authority}/.well-known/oauth-authorization-server{path}"),
        format!("{scheme}://{authority}{path}/.well-known/openid-configuration"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_insert_or_append_the_well_known_path() {
        assert_eq!(
            well_known("https://as.example").unwrap(),
            (
                "https://as.example/.well-known/oauth-authorization-server".into(),
                "https://as.example/.well-known/openid-configuration".into()
            )
        );
        assert_eq!(
            well_known("https://as.example:8443/tenant/1/").unwrap(),
            (
                "https://as.example:8443/.well-known/oauth-authorization-server/tenant/1".into(),
                "https://as.example:8443/tenant/1/.well-known/openid-configuration".into()
            )
        );
        assert!(well_known("as.example").is_none());
    }
}
