//! Verifying JWT access tokens (RFC 9068; feature `jwt`): [`JwtVerifier`], what a good
//! token yields ([`VerifiedToken`]) and why a token is refused ([`TokenError`]).
//!
//! The checks, their order and the cache are documented on [`JwtVerifier`].

use core::fmt;
use core::ops::Range;
use core::time::Duration;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::Digest as _;

use crate::http::auth::authorize::{Principal, Verdict};
use crate::http::auth::jwt_parts::{Claims, Header, OneOrMany, Str, json_object, unbase64};
use crate::http::auth::token_cache::{TokenCache, TokenDigest};
use crate::time::UnixTime;

/// The leeway unless set.
const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

/// The cache capacity unless set.
const DEFAULT_CACHE: usize = 1024;

/// The largest cache capacity: a larger setting is cut to this.
const MAX_CACHE: usize = 1 << 20;

/// The longest `kid` an [`TokenError::UnknownKid`] keeps (bytes).
const MAX_KID_SHOWN: usize = 64;

/// RSA moduli accepted from a key set, in bits (RFC 7518 §3.3: at least 2048).
const RSA_BITS: Range<usize> = 2048..8193;

/// A JWS signature algorithm (RFC 7518 §3.1, RFC 8037). `none` is not one of them.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JwsAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (the algorithm RFC 9068 requires support for).
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512.
    PS512,
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// Ed25519 (`EdDSA` with an `OKP` key on the `Ed25519` curve).
    EdDSA,
    /// HMAC with SHA-256: a shared secret ([`JwtVerifier::shared_secret`]).
    HS256,
    /// HMAC with SHA-384: a shared secret.
    HS384,
    /// HMAC with SHA-512: a shared secret.
    HS512,
}

impl JwsAlgorithm {
    /// The asymmetric algorithms, the default allow-list.
    pub const ASYMMETRIC: &'static [Self] = &[
        Self::RS256,
        Self::RS384,
        Self::RS512,
        Self::PS256,
        Self::PS384,
        Self::PS512,
        Self::ES256,
        Self::ES384,
        Self::EdDSA,
    ];

    /// The algorithm a JOSE header's `alg` names, if it is one of these.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "RS256" => Self::RS256,
            "RS384" => Self::RS384,
            "RS512" => Self::RS512,
            "PS256" => Self::PS256,
            "PS384" => Self::PS384,
            "PS512" => Self::PS512,
            "ES256" => Self::ES256,
            "ES384" => Self::ES384,
            "EdDSA" => Self::EdDSA,
            "HS256" => Self::HS256,
            "HS384" => Self::HS384,
            "HS512" => Self::HS512,
            _ => return None,
        })
    }

    /// Its name in a JOSE header.
    pub fn name(self) -> &'static str {
        match self {
            Self::RS256 => "RS256",
            Self::RS384 => "RS384",
            Self::RS512 => "RS512",
            Self::PS256 => "PS256",
            Self::PS384 => "PS384",
            Self::PS512 => "PS512",
            Self::ES256 => "ES256",
            Self::ES384 => "ES384",
            Self::EdDSA => "EdDSA",
            Self::HS256 => "HS256",
            Self::HS384 => "HS384",
            Self::HS512 => "HS512",
        }
    }

    /// Whether it is an HMAC (a secret shared with the issuer).
    pub fn is_symmetric(self) -> bool {
        matches!(self, Self::HS256 | Self::HS384 | Self::HS512)
    }

    /// The kind of key it verifies with; `None` for HMAC.
    fn family(self) -> Option<Family> {
        match self {
            Self::RS256 | Self::RS384 | Self::RS512 | Self::PS256 | Self::PS384 | Self::PS512 => {
                Some(Family::Rsa)
            }
            Self::ES256 => Some(Family::P256),
            Self::ES384 => Some(Family::P384),
            Self::EdDSA => Some(Family::Ed25519),
            Self::HS256 | Self::HS384 | Self::HS512 => None,
        }
    }

    /// The shortest secret it accepts (RFC 7518 §3.2: at least the hash's size).
    fn min_secret(self) -> usize {
        match self {
            Self::HS384 => 48,
            Self::HS512 => 64,
            _ => 32,
        }
    }

    fn to_jsonwebtoken(self) -> Algorithm {
        match self {
            Self::RS256 => Algorithm::RS256,
            Self::RS384 => Algorithm::RS384,
            Self::RS512 => Algorithm::RS512,
            Self::PS256 => Algorithm::PS256,
            Self::PS384 => Algorithm::PS384,
            Self::PS512 => Algorithm::PS512,
            Self::ES256 => Algorithm::ES256,
            Self::ES384 => Algorithm::ES384,
            Self::EdDSA => Algorithm::EdDSA,
            Self::HS256 => Algorithm::HS256,
            Self::HS384 => Algorithm::HS384,
            Self::HS512 => Algorithm::HS512,
        }
    }
}

impl fmt::Display for JwsAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind of a public key, as the algorithms need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Rsa,
    P256,
    P384,
    Ed25519,
}

/// A usable key of the key set.
struct Key {
    kid: Option<Box<str>>,
    family: Family,
    /// The key's own `alg`, when the JWK names one: then only that algorithm uses it.
    alg: Option<JwsAlgorithm>,
    key: DecodingKey,
}

impl Key {
    fn fits(&self, alg: JwsAlgorithm) -> bool {
        alg.family() == Some(self.family) && self.alg.is_none_or(|a| a == alg)
    }
}

/// The shared secret HMAC tokens are checked with, and the algorithms allowed with it.
struct Secret {
    key: DecodingKey,
    algorithms: Vec<JwsAlgorithm>,
}

/// Why a setting of a [`JwtVerifier`] was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtConfigError {
    /// An empty list of algorithms.
    NoAlgorithm,
    /// An `HS*` algorithm in [`JwtVerifier::algorithms`]: symmetric algorithms are allowed
    /// only with their secret, by [`JwtVerifier::shared_secret`].
    Symmetric(JwsAlgorithm),
    /// An asymmetric algorithm given to [`JwtVerifier::shared_secret`].
    NotSymmetric(JwsAlgorithm),
    /// A secret shorter than the algorithm's hash (RFC 7518 §3.2).
    ShortSecret {
        /// The algorithm.
        algorithm: JwsAlgorithm,
        /// The fewest bytes it takes.
        min: usize,
    },
}

impl fmt::Display for JwtConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAlgorithm => f.write_str("no algorithm allowed"),
            Self::Symmetric(a) => write!(f, "{a} is symmetric: allow it with shared_secret"),
            Self::NotSymmetric(a) => write!(f, "{a} is not an HMAC algorithm"),
            Self::ShortSecret { algorithm, min } => {
                write!(f, "a secret for {algorithm} must be at least {min} bytes")
            }
        }
    }
}

impl std::error::Error for JwtConfigError {}

/// Why a key set ([`JwtVerifier::set_jwks`]) was refused; the verifier keeps the keys it
/// had.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwksError {
    /// Not a JSON object with a `keys` array (RFC 7517 §5).
    Malformed,
    /// No key in the set is usable: of a family the allowed algorithms verify with, for
    /// signatures, well formed (RSA of 2048 to 8192 bits, EC on P-256 or P-384, Ed25519).
    NoUsableKey {
        /// How many keys the document held.
        skipped: usize,
    },
}

impl fmt::Display for JwksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed => f.write_str("the key set is not a JSON object with a keys array"),
            Self::NoUsableKey { skipped } => write!(f, "none of the {skipped} keys of the key set is usable"),
        }
    }
}

impl std::error::Error for JwksError {}

/// Why a token was refused. Every variant is `401` with `error="invalid_token"` for the
/// client ([`Self::verdict`]); they differ for the host's logs. None shows the token or a
/// claim's value; [`Self::UnknownKid`] shows the `kid`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a signed JWT this verifier reads: not three base64url parts, a header or claims
    /// that are not a JSON object, a repeated or wrongly typed claim, a `crit` header, or
    /// longer than [`JwtVerifier::MAX_TOKEN_LEN`].
    Malformed,
    /// The header names a key (`kid`, cut to 64 bytes) the key set does not hold: the key
    /// set may be stale. Refresh it (at most once per interval) and verify again.
    UnknownKid(String),
    /// The header names no key and the key set does not hold exactly one key for its
    /// algorithm.
    NoKey,
    /// `alg` is not allowed (`none`, an unknown name, `HS*` without a shared secret), or is
    /// not the algorithm of the key the `kid` names.
    Algorithm,
    /// `typ` is not `at+jwt` (or missing, unless allowed).
    Type,
    /// The signature does not verify with the key.
    Signature,
    /// `iss` is not the configured issuer.
    Issuer,
    /// `aud` does not contain the configured audience.
    Audience,
    /// `exp` is past (beyond the leeway).
    Expired,
    /// `nbf` is ahead (beyond the leeway).
    NotYetValid,
    /// `iat` is ahead (beyond the leeway).
    IssuedInFuture,
    /// A required claim is absent: `iss`, `aud`, `exp` or `sub` (an empty `sub` counts as
    /// absent).
    MissingClaim(&'static str),
}

impl TokenError {
    /// What to tell the engine: [`Verdict::Unauthenticated`], for every variant (`401`,
    /// `error="invalid_token"` on a protected resource).
    pub fn verdict(&self) -> Verdict {
        Verdict::Unauthenticated
    }

    fn unknown_kid(kid: &str) -> Self {
        let mut end = kid.len().min(MAX_KID_SHOWN);
        while !kid.is_char_boundary(end) {
            end -= 1;
        }
        Self::UnknownKid(kid[..end].to_owned())
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed => f.write_str("malformed token"),
            Self::UnknownKid(kid) => write!(f, "unknown key id {kid:?}"),
            Self::NoKey => f.write_str("no key id, and no single key for the algorithm"),
            Self::Algorithm => f.write_str("algorithm not allowed"),
            Self::Type => f.write_str("not an access token (typ)"),
            Self::Signature => f.write_str("bad signature"),
            Self::Issuer => f.write_str("wrong issuer"),
            Self::Audience => f.write_str("wrong audience"),
            Self::Expired => f.write_str("expired"),
            Self::NotYetValid => f.write_str("not yet valid"),
            Self::IssuedInFuture => f.write_str("issued in the future"),
            Self::MissingClaim(c) => write!(f, "missing claim {c}"),
        }
    }
}

impl std::error::Error for TokenError {}

/// A token that verified: who it is for, for which client, with which scopes, until when.
/// Cloning it shares it (no allocation). Its `Debug` shows the principal's digest, never
/// a claim.
#[derive(Clone)]
pub struct VerifiedToken(Arc<Verified>);

struct Verified {
    issuer: Arc<str>,
    /// The subject, then the client id, the tenant and the scopes (space-separated).
    text: String,
    subject: Range<usize>,
    client_id: Option<Range<usize>>,
    tenant: Option<Range<usize>>,
    scopes: Range<usize>,
    /// Microseconds since the Unix epoch.
    exp: u64,
    nbf: Option<u64>,
    iat: Option<u64>,
    principal: Principal,
}

impl VerifiedToken {
    /// `sub`: the resource owner, or the client for a client-credentials grant.
    pub fn subject(&self) -> &str {
        &self.0.text[self.0.subject.clone()]
    }

    /// `client_id`, else `azp`.
    pub fn client_id(&self) -> Option<&str> {
        self.0.client_id.clone().map(|r| &self.0.text[r])
    }

    /// The scopes: `scope` (space-separated), else `scp` (an array, or a space-separated
    /// string). None if neither is present.
    pub fn scopes(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.text[self.0.scopes.clone()].split(' ').filter(|s| !s.is_empty())
    }

    /// Whether `scope` is one of the token's scopes (exactly).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes().any(|s| s == scope)
    }

    /// `iss`: the configured issuer.
    pub fn issuer(&self) -> &str {
        &self.0.issuer
    }

    /// `exp`.
    pub fn expiry(&self) -> UnixTime {
        UnixTime::from_micros(self.0.exp)
    }

    /// `tid`, else `tenant`, when a string.
    pub fn tenant(&self) -> Option<&str> {
        self.0.tenant.clone().map(|r| &self.0.text[r])
    }

    /// Who the token acts for: [`Principal::of`] the issuer's length in UTF-8 bytes as 8
    /// big-endian bytes, then the issuer, then the subject. The issuer is part of it, so
    /// the same `sub` from two issuers is two principals; the length prefix keeps
    /// (`https://a`, `b/c`) and (`https://ab`, `/c`) apart.
    pub fn principal(&self) -> Principal {
        self.0.principal
    }

    /// What to tell the engine: [`Verdict::AllowAs`] the principal.
    pub fn verdict(&self) -> Verdict {
        Verdict::AllowAs(self.0.principal)
    }
}

impl fmt::Debug for VerifiedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifiedToken")
            .field("principal", &self.0.principal)
            .field("scopes", &self.scopes().count())
            .field("expiry", &self.expiry())
            .finish_non_exhaustive()
    }
}

/// The principal of `sub` from `iss` (see [`VerifiedToken::principal`]).
fn principal_of(iss: &str, sub: &str) -> Principal {
    let mut h = sha2::Sha256::new();
    h.update((iss.len() as u64).to_be_bytes());
    h.update(iss.as_bytes());
    h.update(sub.as_bytes());
    Principal(h.finalize().into())
}

/// Verifies JWT access tokens of one issuer for one resource (RFC 9068; feature `jwt`).
/// Built once; the key set is replaced as the issuer rotates its keys
/// ([`Self::set_jwks`]). `Send + Sync`: share it.
///
/// Pure: no I/O, no clock. The host (or an adapter) gives the authorization server's
/// keys as a JWKS document ([`JwtVerifier::set_jwks`], bytes it fetched) and the time of
/// each verification ([`JwtVerifier::verify`], a [`UnixTime`] it read). Signatures are
/// checked by `jsonwebtoken` (its RustCrypto backend, called directly rather than through
/// its process-wide provider); everything else is checked here, in this order:
///
/// 1. the token: at most 16 KiB, three base64url parts (a JWE's five are refused), the
///    header a JSON object without a repeated member; a header with `crit` is refused (no
///    extension is understood); `jku`, `x5u`, `jwk` and `x5c` are never used to find a key;
/// 2. `alg` in the allow-list ([`JwtVerifier::algorithms`]; `none` is not an algorithm
///    here, and `HS*` only with [`JwtVerifier::shared_secret`]);
/// 3. `typ`: `at+jwt` or `application/at+jwt`, case-insensitive (RFC 9068 §4), unless
///    [`JwtVerifier::accept_missing_typ`];
/// 4. the key: by `kid` from the key set, of the type `alg` needs (and whose own `alg`, if
///    the key names one, is this one); without a `kid`, the one key of that type, if there
///    is exactly one;
/// 5. the claims a JSON object without a repeated member, each claim read of its type;
/// 6. the signature;
/// 7. the claims judged: `iss` exactly the configured issuer; `aud` (a string or an array)
///    containing the configured audience (RFC 8707); `exp` required and later than now
///    minus the leeway; `nbf`, if present, no later than now plus the leeway; `iat`, if
///    present, likewise; `sub` required and not empty. RFC 9068 also requires
///    `client_id`, `iat` and `jti`; their absence is tolerated (not every issuer sets
///    them), and `jti` is not read.
///
/// Every [`TokenError`] means the same to the client: `401` with
/// `WWW-Authenticate: Bearer error="invalid_token"` (return [`TokenError::verdict`],
/// [`Verdict::Unauthenticated`], to the engine). The variants are for the host's logs and
/// for tests; none carries the token or a claim's value, only, for an unknown key, the
/// `kid` (cut to 64 bytes, printed escaped).
///
/// A token verified once is kept in a bounded cache (by the SHA-256 digest of its bytes,
/// until its `exp` plus the leeway; [`JwtVerifier::cache_capacity`]): presented again, it
/// is not verified cryptographically again, and the lookup allocates nothing. Its time
/// claims are judged again against the time given. Replacing the key set empties the
/// cache, so a token signed by a key rotated away stops being accepted at once.
///
/// ```
/// use mcp_engine::UnixTime;
/// use mcp_engine::http::{JwtVerifier, TokenError, Verdict};
///
/// let mut verifier = JwtVerifier::new("https://auth.example.com", "https://mcp.example.com/mcp");
/// // What the adapter fetched from the issuer's `jwks_uri`:
/// let jwks = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1",
///     "x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
/// assert_eq!(verifier.set_jwks(jwks), Ok(1));
/// // On each request: the bearer token, and the wall clock.
/// let verdict = match verifier.verify("not.a.token", UnixTime::from_secs(1_800_000_000)) {
///     Ok(token) => token.verdict(),
///     // Refresh the key set (at most once per interval) and verify again; until then:
///     Err(e @ TokenError::UnknownKid(_)) => e.verdict(),
///     Err(e) => e.verdict(),
/// };
/// assert_eq!(verdict, Verdict::Unauthenticated);
/// ```
pub struct JwtVerifier {
    issuer: Arc<str>,
    audience: Box<str>,
    algorithms: Vec<JwsAlgorithm>,
    secret: Option<Secret>,
    /// Microseconds.
    leeway: u64,
    accept_missing_typ: bool,
    keys: Vec<Key>,
    /// Whether the cache can hold anything (its capacity is not zero).
    caching: bool,
    cache: Mutex<TokenCache<VerifiedToken>>,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kids: Vec<Option<&str>> = self.keys.iter().map(|k| k.kid.as_deref()).collect();
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("algorithms", &self.algorithms)
            .field("shared_secret", &self.secret.as_ref().map(|s| &s.algorithms))
            .field("leeway", &Duration::from_micros(self.leeway))
            .field("accept_missing_typ", &self.accept_missing_typ)
            .field("keys", &kids)
            .field("cache_capacity", &self.lock().capacity())
            .finish()
    }
}

impl JwtVerifier {
    /// The longest token verified (bytes): a longer one is [`TokenError::Malformed`].
    pub const MAX_TOKEN_LEN: usize = 16 * 1024;

    /// The most keys a key set keeps: further usable keys in a document are ignored.
    pub const MAX_KEYS: usize = 64;

    /// The largest leeway for `exp`, `nbf` and `iat`: a larger setting is cut to this.
    pub const MAX_LEEWAY: Duration = Duration::from_secs(300);

    /// A verifier of tokens issued by `issuer` (compared exactly with `iss`: the issuer
    /// identifier of the authorization server's metadata, RFC 8414) for `audience` (the
    /// resource identifier: the protected resource's URL, RFC 8707), with the defaults:
    /// every asymmetric algorithm ([`JwsAlgorithm::ASYMMETRIC`]), no shared secret, 60 s of
    /// leeway, `typ` required, a cache of 1,024 tokens, and no keys yet.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            issuer: Arc::from(issuer.into()),
            audience: audience.into().into_boxed_str(),
            algorithms: JwsAlgorithm::ASYMMETRIC.to_vec(),
            secret: None,
            leeway: DEFAULT_LEEWAY.as_micros() as u64,
            accept_missing_typ: false,
            keys: Vec::new(),
            caching: true,
            cache: Mutex::new(TokenCache::new(DEFAULT_CACHE)),
        }
    }

    /// The asymmetric algorithms allowed (replacing the default list). `HS*` is refused
    /// here: see [`Self::shared_secret`].
    pub fn algorithms(mut self, algorithms: &[JwsAlgorithm]) -> Result<Self, JwtConfigError> {
        if algorithms.is_empty() {
            return Err(JwtConfigError::NoAlgorithm);
        }
        if let Some(&a) = algorithms.iter().find(|a| a.is_symmetric()) {
            return Err(JwtConfigError::Symmetric(a));
        }
        self.algorithms = algorithms.to_vec();
        self.keys.retain(|k| algorithms.iter().any(|&a| k.fits(a)));
        self.forget();
        Ok(self)
    }

    /// Allows tokens signed with HMAC (`algorithms`, only `HS*`) by `secret`, a key the
    /// issuer shares with this server. Off unless called: a symmetric algorithm is never
    /// taken from a token on its own say (RFC 8725 §2.1), and public keys of the key set
    /// are never used as HMAC secrets. The secret must be at least as long as the
    /// algorithm's hash (32, 48 or 64 bytes).
    pub fn shared_secret(
        mut self,
        secret: &[u8],
        algorithms: &[JwsAlgorithm],
    ) -> Result<Self, JwtConfigError> {
        if algorithms.is_empty() {
            return Err(JwtConfigError::NoAlgorithm);
        }
        for &a in algorithms {
            if !a.is_symmetric() {
                return Err(JwtConfigError::NotSymmetric(a));
            }
            if secret.len() < a.min_secret() {
                return Err(JwtConfigError::ShortSecret { algorithm: a, min: a.min_secret() });
            }
        }
        let key = DecodingKey::from_secret(secret)
            .map_err(|_| JwtConfigError::ShortSecret { algorithm: algorithms[0], min: 32 })?;
        self.secret = Some(Secret { key, algorithms: algorithms.to_vec() });
        self.forget();
        Ok(self)
    }

    /// How far `exp`, `nbf` and `iat` may be off (the clocks of issuer and server
    /// differ): 60 s unless set, cut to [`Self::MAX_LEEWAY`] (5 minutes).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway.min(Self::MAX_LEEWAY).as_micros() as u64;
        self.forget();
        self
    }

    /// For issuers that do not mark their access tokens `typ: at+jwt`: also accept a token
    /// with no `typ`, or with the generic `typ: JWT` (RFC 7519 §5.1, which says only "a
    /// JWT"). Any other `typ` is still refused. Off unless set: the `typ` check is what
    /// keeps an OpenID Connect ID token from passing as an access token (RFC 9068 §5);
    /// with it off, the audience check alone does (an ID token's audience is the client).
    pub fn accept_missing_typ(mut self, accept: bool) -> Self {
        self.accept_missing_typ = accept;
        self.forget();
        self
    }

    /// How many verified tokens to keep (1,024 unless set; zero keeps none; at most
    /// 1,048,576). The table is allocated at this size now.
    pub fn cache_capacity(mut self, capacity: usize) -> Self {
        self.caching = capacity > 0;
        self.cache = Mutex::new(TokenCache::new(capacity.min(MAX_CACHE)));
        self
    }

    /// The configured issuer.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The configured audience.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// How many keys the key set holds.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Replaces the key set with the usable keys of `jwks_json`, a JWKS document (RFC 7517
    /// §5, as fetched from the issuer's `jwks_uri`); returns how many it kept (at most
    /// [`Self::MAX_KEYS`]). A key is skipped when it is not for signatures (`use` other than
    /// `sig`, `key_ops` without `verify`), names an `alg` that is not allowed or not of its
    /// type, is of a type no allowed algorithm uses, or is not well formed (RSA below 2048
    /// or above 8192 bits, EC off P-256 and P-384, OKP other than Ed25519, symmetric
    /// `oct` keys always). Keys are found by `kid`. The cache of verified tokens is
    /// emptied. On an error the verifier keeps the keys (and the cache) it had, so a bad
    /// refresh does not stop a running server.
    pub fn set_jwks(&mut self, jwks_json: &[u8]) -> Result<usize, JwksError> {
        #[derive(Deserialize)]
        struct Set<'a> {
            #[serde(borrow)]
            keys: Vec<&'a RawValue>,
        }
        let set: Set<'_> = serde_json::from_slice(jwks_json).map_err(|_| JwksError::Malformed)?;
        let mut keys = Vec::new();
        for raw in &set.keys {
            if keys.len() == Self::MAX_KEYS {
                break;
            }
            if let Some(k) = self.usable_key(raw.get()) {
                keys.push(k);
            }
        }
        if keys.is_empty() {
            return Err(JwksError::NoUsableKey { skipped: set.keys.len() });
        }
        self.keys = keys;
        self.forget();
        Ok(self.keys.len())
    }

    /// One JWK of a key set, if usable.
    fn usable_key(&self, jwk: &str) -> Option<Key> {
        #[derive(Deserialize)]
        struct Jwk<'a> {
            #[serde(borrow)]
            kty: Str<'a>,
            #[serde(borrow, default)]
            kid: Option<Str<'a>>,
            #[serde(borrow, default)]
            alg: Option<Str<'a>>,
            #[serde(borrow, default, rename = "use")]
            use_: Option<Str<'a>>,
            #[serde(borrow, default)]
            key_ops: Option<Vec<Str<'a>>>,
            #[serde(borrow, default)]
            crv: Option<Str<'a>>,
            #[serde(borrow, default)]
            n: Option<Str<'a>>,
            #[serde(borrow, default)]
            e: Option<Str<'a>>,
            #[serde(borrow, default)]
            x: Option<Str<'a>>,
            #[serde(borrow, default)]
            y: Option<Str<'a>>,
        }
        let jwk: Jwk<'_> = serde_json::from_str(jwk).ok()?;
        if jwk.use_.as_ref().is_some_and(|u| u.0 != "sig") {
            return None;
        }
        if jwk.key_ops.as_ref().is_some_and(|ops| !ops.iter().any(|o| o.0 == "verify")) {
            return None;
        }
        let alg = match &jwk.alg {
            Some(a) => Some(JwsAlgorithm::from_name(&a.0).filter(|a| self.algorithms.contains(a))?),
            None => None,
        };
        let unb64 = |s: &Option<Str<'_>>| URL_SAFE_NO_PAD.decode(s.as_ref()?.0.as_bytes()).ok();
        let crv = jwk.crv.as_ref().map(|c| &*c.0);
        let (family, key) = match (&*jwk.kty.0, crv) {
            ("RSA", _) => {
                let (n, e) = (unb64(&jwk.n)?, unb64(&jwk.e)?);
                let n = &n[n.iter().position(|&b| b != 0)?..];
                let bits = n.len() * 8 - n[0].leading_zeros() as usize;
                if !RSA_BITS.contains(&bits) || e.is_empty() || e.len() > 8 {
                    return None;
                }
                (Family::Rsa, DecodingKey::from_rsa_raw_components(n, &e))
            }
            ("EC", Some(curve @ ("P-256" | "P-384"))) => {
                let (family, len) = if curve == "P-256" { (Family::P256, 32) } else { (Family::P384, 48) };
                let (x, y) = (unb64(&jwk.x)?, unb64(&jwk.y)?);
                if x.len() != len || y.len() != len {
                    return None;
                }
                let mut point = Vec::with_capacity(1 + 2 * len);
                point.push(0x04);
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                (family, DecodingKey::from_ec_der(&point))
            }
            ("OKP", Some("Ed25519")) => {
                let x = unb64(&jwk.x)?;
                if x.len() != 32 {
                    return None;
                }
                (Family::Ed25519, DecodingKey::from_ed_der(&x))
            }
            _ => return None,
        };
        let key = Key { kid: jwk.kid.map(|k| k.0.into_owned().into_boxed_str()), family, alg, key };
        // Some allowed algorithm must use it, and the backend must take it (a point off
        // the curve is refused here, not on every token).
        let usable = self.algorithms.iter().find(|&&a| key.fits(a))?;
        verifier(*usable, &key.key).ok()?;
        Some(key)
    }

    /// Empties the cache: what it holds was accepted under the settings or keys that are
    /// being changed.
    fn forget(&mut self) {
        self.cache.get_mut().unwrap_or_else(PoisonError::into_inner).clear();
    }

    fn lock(&self) -> MutexGuard<'_, TokenCache<VerifiedToken>> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Verifies `token` (the `Authorization: Bearer` credential) at `now`, the host's
    /// wall clock. A token verified before (and still in the cache) is not verified
    /// cryptographically again: only its time claims are judged again, and nothing is
    /// allocated.
    pub fn verify(&self, token: &str, now: UnixTime) -> Result<VerifiedToken, TokenError> {
        if token.len() > Self::MAX_TOKEN_LEN {
            return Err(TokenError::Malformed);
        }
        let now = now.as_micros();
        let digest = if self.caching {
            let key: TokenDigest = sha2::Sha256::digest(token.as_bytes()).into();
            let mut cache = self.lock();
            if let Some(hit) = cache.get(&key) {
                return match self.check_times(&hit.0, now) {
                    Ok(()) => Ok(hit.clone()),
                    Err(e) => {
                        if e == TokenError::Expired {
                            cache.remove(&key);
                        }
                        Err(e)
                    }
                };
            }
            Some(key)
        } else {
            None
        };
        // The lock is not held while the signature is checked.
        let verified = self.verify_uncached(token, now)?;
        if let Some(key) = digest {
            let until = verified.0.exp.saturating_add(self.leeway);
            self.lock().insert(key, verified.clone(), until, now);
        }
        Ok(verified)
    }

    fn check_times(&self, t: &Verified, now: u64) -> Result<(), TokenError> {
        if t.exp.saturating_add(self.leeway) <= now {
            return Err(TokenError::Expired);
        }
        let ahead = now.saturating_add(self.leeway);
        if t.nbf.is_some_and(|nbf| nbf > ahead) {
            return Err(TokenError::NotYetValid);
        }
        if t.iat.is_some_and(|iat| iat > ahead) {
            return Err(TokenError::IssuedInFuture);
        }
        Ok(())
    }

    fn verify_uncached(&self, token: &str, now: u64) -> Result<VerifiedToken, TokenError> {
        // 1. Three parts: header, claims, signature.
        let bytes = token.as_bytes();
        let mut parts = bytes.split(|&b| b == b'.');
        let (Some(head), Some(body), Some(sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        if head.is_empty() || body.is_empty() {
            return Err(TokenError::Malformed);
        }
        let signed = &bytes[..head.len() + 1 + body.len()];

        let mut head_buf = [0u8; 512];
        let head_json = unbase64(head, &mut head_buf).ok_or(TokenError::Malformed)?;
        let header: Header<'_> = json_object(&head_json).ok_or(TokenError::Malformed)?;
        if header.crit.is_some() {
            return Err(TokenError::Malformed);
        }

        // 2. The algorithm.
        let alg =
            header.alg.as_ref().and_then(|a| JwsAlgorithm::from_name(&a.0)).ok_or(TokenError::Algorithm)?;

        // 3. The type.
        match &header.typ {
            Some(t) if is_access_token_type(&t.0) => {}
            Some(t) if self.accept_missing_typ && t.0.eq_ignore_ascii_case("JWT") => {}
            None if self.accept_missing_typ => {}
            _ => return Err(TokenError::Type),
        }

        // 4. The key.
        let key = if alg.is_symmetric() {
            match &self.secret {
                Some(s) if s.algorithms.contains(&alg) => &s.key,
                _ => return Err(TokenError::Algorithm),
            }
        } else {
            if !self.algorithms.contains(&alg) {
                return Err(TokenError::Algorithm);
            }
            &self.key_for(alg, header.kid.as_ref().map(|k| &*k.0))?.key
        };

        // 5. The claims are read now (a malformed token is that, whatever its signature)
        // and judged once the signature holds.
        let mut body_buf = [0u8; 2048];
        let body_json = unbase64(body, &mut body_buf).ok_or(TokenError::Malformed)?;
        let claims: Claims<'_> = json_object(&body_json).ok_or(TokenError::Malformed)?;

        // 6. The signature.
        let signature = URL_SAFE_NO_PAD.decode(sig).map_err(|_| TokenError::Signature)?;
        if signature.is_empty() {
            return Err(TokenError::Signature);
        }
        let v = verifier(alg, key).map_err(|_| TokenError::Signature)?;
        v.verify(signed, &signature).map_err(|_| TokenError::Signature)?;

        // 7. The claims.
        self.judge(claims, now)
    }

    /// The key for `alg` named by `kid`, or the only one of its family.
    fn key_for(&self, alg: JwsAlgorithm, kid: Option<&str>) -> Result<&Key, TokenError> {
        match kid {
            Some(kid) => {
                let mut named = self.keys.iter().filter(|k| k.kid.as_deref() == Some(kid)).peekable();
                if named.peek().is_none() {
                    return Err(TokenError::unknown_kid(kid));
                }
                named.find(|k| k.fits(alg)).ok_or(TokenError::Algorithm)
            }
            None => {
                let mut fitting = self.keys.iter().filter(|k| k.fits(alg));
                match (fitting.next(), fitting.next()) {
                    (Some(k), None) => Ok(k),
                    _ => Err(TokenError::NoKey),
                }
            }
        }
    }

    /// The claims of a token whose signature verified.
    fn judge(&self, c: Claims<'_>, now: u64) -> Result<VerifiedToken, TokenError> {
        let iss = c.iss.ok_or(TokenError::MissingClaim("iss"))?;
        if iss.0.is_empty() || *iss.0 != *self.issuer {
            return Err(TokenError::Issuer);
        }
        let aud = c.aud.ok_or(TokenError::MissingClaim("aud"))?;
        if !aud.contains(&self.audience) {
            return Err(TokenError::Audience);
        }
        let exp = c.exp.ok_or(TokenError::MissingClaim("exp"))?.0;
        let sub = c.sub.filter(|s| !s.0.is_empty()).ok_or(TokenError::MissingClaim("sub"))?;
        let client = c.client_id.or(c.azp);
        let tenant = [c.tid, c.tenant]
            .into_iter()
            .flatten()
            .find_map(|raw| serde_json::from_str::<Str<'_>>(raw.get()).ok());
        // `scope` is a space-separated string (RFC 8693 §4.2); `scp`, where used instead, is
        // an array or such a string. An array item that is empty or holds a space is not a
        // scope token (RFC 6749 §3.3): the claims are malformed.
        let scp_items = match (&c.scope, &c.scp) {
            (None, Some(OneOrMany::Many(items))) => {
                if items.iter().any(|s| s.0.is_empty() || s.0.contains(' ')) {
                    return Err(TokenError::Malformed);
                }
                Some(items)
            }
            _ => None,
        };
        let scope = match (&c.scope, &c.scp) {
            (Some(s), _) | (None, Some(OneOrMany::One(s))) => Some(&*s.0),
            _ => None,
        };

        let mut verified = Verified {
            issuer: Arc::clone(&self.issuer),
            text: String::new(),
            subject: 0..0,
            client_id: None,
            tenant: None,
            scopes: 0..0,
            exp,
            nbf: c.nbf.map(|s| s.0),
            iat: c.iat.map(|s| s.0),
            principal: principal_of(&self.issuer, &sub.0),
        };
        self.check_times(&verified, now)?;

        let scp_len = scp_items.map_or(0, |items| items.iter().map(|s| s.0.len() + 1).sum());
        let len = sub.0.len()
            + client.as_ref().map_or(0, |s| s.0.len())
            + tenant.as_ref().map_or(0, |s| s.0.len())
            + scope.map_or(0, str::len)
            + scp_len;
        let mut text = String::with_capacity(len);
        let mut push = |s: &str| {
            let start = text.len();
            text.push_str(s);
            start..text.len()
        };
        verified.subject = push(&sub.0);
        verified.client_id = client.as_ref().map(|s| push(&s.0));
        verified.tenant = tenant.as_ref().map(|s| push(&s.0));
        let start = text.len();
        if let Some(s) = scope {
            text.push_str(s);
        }
        for item in scp_items.into_iter().flatten() {
            if text.len() > start {
                text.push(' ');
            }
            text.push_str(&item.0);
        }
        verified.scopes = start..text.len();
        verified.text = text;
        Ok(VerifiedToken(Arc::new(verified)))
    }
}

/// The backend's verifier for `alg` with `key` (RustCrypto, called directly: no
/// process-wide provider to be missing or ambiguous).
fn verifier(
    alg: JwsAlgorithm,
    key: &DecodingKey,
) -> jsonwebtoken::errors::Result<Box<dyn jsonwebtoken::crypto::JwtVerifier>> {
    (jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.verifier_factory)(&alg.to_jsonwebtoken(), key)
}

/// `at+jwt` or `application/at+jwt`, case-insensitive (RFC 9068 §4).
fn is_access_token_type(typ: &str) -> bool {
    typ.eq_ignore_ascii_case("at+jwt") || typ.eq_ignore_ascii_case("application/at+jwt")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        URL_SAFE_NO_PAD.encode(s)
    }

    fn verifier_with_ed_key() -> JwtVerifier {
        // The Ed25519 public key of RFC 8037 §A.2.
        let jwks = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
        let mut v = JwtVerifier::new("https://as.example", "https://rs.example/mcp");
        assert_eq!(v.set_jwks(jwks), Ok(1));
        v
    }

    #[test]
    fn algorithm_names_round_trip_and_none_is_not_one() {
        for &a in JwsAlgorithm::ASYMMETRIC.iter().chain(&[
            JwsAlgorithm::HS256,
            JwsAlgorithm::HS384,
            JwsAlgorithm::HS512,
        ]) {
            assert_eq!(JwsAlgorithm::from_name(a.name()), Some(a));
        }
        assert_eq!(JwsAlgorithm::from_name("none"), None);
        assert_eq!(JwsAlgorithm::from_name("rs256"), None);
        assert!(JwsAlgorithm::ASYMMETRIC.iter().all(|a| !a.is_symmetric()));
    }

    #[test]
    fn settings_are_checked_and_bounded() {
        let v = JwtVerifier::new("i", "a");
        assert_eq!(v.leeway, 60_000_000);
        assert_eq!(JwtVerifier::new("i", "a").leeway(Duration::from_secs(3600)).leeway, 300_000_000);
        assert_eq!(JwtVerifier::new("i", "a").algorithms(&[]).err(), Some(JwtConfigError::NoAlgorithm));
        let hs = [JwsAlgorithm::RS256, JwsAlgorithm::HS256];
        assert_eq!(
            JwtVerifier::new("i", "a").algorithms(&hs).err(),
            Some(JwtConfigError::Symmetric(JwsAlgorithm::HS256))
        );
        let rs = [JwsAlgorithm::RS256];
        assert_eq!(
            JwtVerifier::new("i", "a").shared_secret(&[1; 64], &rs).err(),
            Some(JwtConfigError::NotSymmetric(JwsAlgorithm::RS256))
        );
        assert_eq!(
            JwtVerifier::new("i", "a")
                .shared_secret(&[1; 40], &[JwsAlgorithm::HS256, JwsAlgorithm::HS384])
                .err(),
            Some(JwtConfigError::ShortSecret { algorithm: JwsAlgorithm::HS384, min: 48 })
        );
        assert!(JwtVerifier::new("i", "a").shared_secret(&[1; 32], &[JwsAlgorithm::HS256]).is_ok());
        assert_eq!(JwtVerifier::new("i", "a").cache_capacity(usize::MAX).lock().capacity(), MAX_CACHE);
    }

    #[test]
    fn key_sets_skip_what_they_cannot_use() {
        let mut v = JwtVerifier::new("i", "a");
        assert_eq!(v.set_jwks(b"[]"), Err(JwksError::Malformed));
        assert_eq!(v.set_jwks(b"{\"keys\":{}}"), Err(JwksError::Malformed));
        assert_eq!(v.set_jwks(b"{\"keys\":[]}"), Err(JwksError::NoUsableKey { skipped: 0 }));
        let x = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
        let unusable = format!(
            r#"{{"keys":[
                {{"kty":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}},
                {{"kty":"OKP","crv":"Ed25519","x":"{x}","use":"enc"}},
                {{"kty":"OKP","crv":"Ed25519","x":"{x}","key_ops":["encrypt"]}},
                {{"kty":"OKP","crv":"Ed25519","x":"{x}","alg":"RS256"}},
                {{"kty":"OKP","crv":"Ed25519","x":"{x}","alg":"none"}},
                {{"kty":"OKP","crv":"Ed448","x":"{x}"}},
                {{"kty":"OKP","crv":"Ed25519","x":"AAAA"}},
                {{"kty":"RSA","n":"AQAB","e":"AQAB"}},
                {{"kty":"EC","crv":"P-521","x":"{x}","y":"{x}"}},
                {{"kty":"EC","crv":"P-256","x":"{x}","y":"{x}"}},
                {{"kty":"OKP","crv":"Ed25519","x":"{x}=="}},
                {{"kty":7}}
            ]}}"#
        );
        assert_eq!(v.set_jwks(unusable.as_bytes()), Err(JwksError::NoUsableKey { skipped: 12 }));
        let good = format!(
            r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"k","use":"sig","key_ops":["verify"],"alg":"EdDSA"}}]}}"#
        );
        assert_eq!(v.set_jwks(good.as_bytes()), Ok(1));
        // An Ed25519 key is of no use when only RSA is allowed.
        let mut rsa_only = JwtVerifier::new("i", "a").algorithms(&[JwsAlgorithm::RS256]).unwrap();
        assert_eq!(rsa_only.set_jwks(good.as_bytes()), Err(JwksError::NoUsableKey { skipped: 1 }));
        // A refused set keeps the keys there were.
        assert_eq!(v.set_jwks(b"{}"), Err(JwksError::Malformed));
        assert_eq!(v.key_count(), 1);
    }

    #[test]
    fn malformed_tokens_are_refused_before_the_signature_is_checked() {
        let v = verifier_with_ed_key();
        let now = UnixTime::from_secs(1_000);
        let head = b64(r#"{"alg":"EdDSA","typ":"at+jwt"}"#);
        let long = "a".repeat(JwtVerifier::MAX_TOKEN_LEN + 1);
        for token in [
            "",
            ".",
            "..",
            "a.b",
            "a.b.c.d",
            "a.b.c.d.e",
            "!!!.b.c",
            &format!("{}.e30.c", b64("[\"EdDSA\"]")),
            &format!("{}.e30.c", b64("not json")),
            &format!("{}.e30.c", b64(r#"{"alg":"EdDSA","alg":"EdDSA"}"#)),
            &format!("{}.e30.c", b64(r#"{"alg":"EdDSA","typ":"at+jwt","crit":["exp"]}"#)),
            &format!("{head}.e30=.c"),
            &format!(".{head}.c"),
            &long,
        ] {
            assert_eq!(v.verify(token, now).unwrap_err(), TokenError::Malformed, "{token:.40}");
        }
        assert_eq!(
            v.verify(&format!("{}.e30.", b64(r#"{"alg":"none"}"#)), now).unwrap_err(),
            TokenError::Algorithm
        );
        assert_eq!(
            v.verify(&format!("{}.e30.", b64(r#"{"typ":"at+jwt"}"#)), now).unwrap_err(),
            TokenError::Algorithm
        );
        assert_eq!(v.verify(&format!("{head}.e30."), now).unwrap_err(), TokenError::Signature);
        assert_eq!(v.verify(&format!("{head}.e30.!!"), now).unwrap_err(), TokenError::Signature);
    }

    #[test]
    fn the_typ_rule() {
        assert!(is_access_token_type("at+jwt"));
        assert!(is_access_token_type("application/AT+JWT"));
        assert!(!is_access_token_type("JWT"));
        assert!(!is_access_token_type("at+jwt "));
    }

    #[test]
    fn numeric_dates_and_strings_with_escapes() {
        let c: Claims<'_> = serde_json::from_str(
            r#"{"iss":"https:\/\/as","exp":1.5,"nbf":-3,"iat":18446744073709551615,"aud":["x","y"],"tid":{"no":1},"tenant":"t"}"#,
        )
        .unwrap();
        assert_eq!(c.iss.unwrap().0, "https://as");
        assert_eq!(c.exp.unwrap().0, 1_500_000);
        assert_eq!(c.nbf.unwrap().0, 0);
        assert_eq!(c.iat.unwrap().0, u64::MAX);
        assert!(c.aud.as_ref().unwrap().contains("y") && !c.aud.unwrap().contains("z"));
        assert!(serde_json::from_str::<Str<'_>>(c.tid.unwrap().get()).is_err());
        assert!(serde_json::from_str::<Claims<'_>>(r#"{"exp":"soon"}"#).is_err());
        assert!(serde_json::from_str::<Claims<'_>>(r#"{"sub":"a","sub":"b"}"#).is_err());
    }

    #[test]
    fn errors_show_the_kid_and_nothing_else() {
        let e = TokenError::unknown_kid(&"é".repeat(40));
        let TokenError::UnknownKid(kid) = &e else { panic!() };
        assert!(kid.len() <= MAX_KID_SHOWN && kid.chars().all(|c| c == 'é'));
        assert_eq!(TokenError::unknown_kid("k\n1").to_string(), "unknown key id \"k\\n1\"");
        assert_eq!(TokenError::MissingClaim("sub").to_string(), "missing claim sub");
        assert_eq!(TokenError::Expired.verdict(), Verdict::Unauthenticated);
    }

    #[test]
    fn the_principal_is_the_digest_of_the_documented_bytes() {
        let mut bytes = 9u64.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"https://aalice");
        assert_eq!(principal_of("https://a", "alice"), Principal::of(&bytes));
        assert_ne!(principal_of("https://a", "b/c"), principal_of("https://ab", "/c"));
    }
}
