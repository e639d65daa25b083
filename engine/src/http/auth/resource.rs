//! The server as an OAuth 2.1 protected resource (MCP authorization; RFC 9728, RFC 6750):
//! [`ProtectedResource`], its metadata document and the `WWW-Authenticate` challenges.
//!
//! With a protected resource configured ([`HttpConfig::protected_resource`]), the engine
//! serves the metadata document without authentication at the path-suffixed well-known
//! path of the resource (`/.well-known/oauth-protected-resource/mcp` for
//! `https://host/mcp`) and at the root one, takes the token only from the
//! `Authorization` header, answers a request without one `401` with a challenge naming
//! the metadata (the host is not asked), a malformed one `400`, and turns the host's
//! refusals into the RFC's challenges (`401 error="invalid_token"`, `403
//! error="insufficient_scope"`). Everything here is built once, when configured.
//!
//! [`HttpConfig::protected_resource`]: crate::http::HttpConfig::protected_resource

use core::fmt;
use std::sync::Arc;

/// The root well-known path of protected-resource metadata (RFC 9728 §3).
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// How long clients may cache the metadata document.
const MAX_AGE: &str = "public, max-age=3600";

/// The server's identity as an OAuth protected resource: its canonical URL (the token
/// audience clients ask for), the authorization servers that issue its tokens, and the
/// scopes a client needs for basic use.
#[derive(Clone)]
pub struct ProtectedResource {
    resource: String,
    servers: Vec<String>,
    scopes: Vec<String>,
    name: Option<String>,
    /// The path-suffixed well-known path, and the metadata URL built on it.
    path: String,
    url: String,
    /// Built on [`Self::finish`]: the document and the challenges.
    document: Arc<[u8]>,
    missing: Arc<str>,
    invalid_token: Arc<str>,
    invalid_request: Arc<str>,
    insufficient_scope: Arc<str>,
}

impl fmt::Debug for ProtectedResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtectedResource")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.servers)
            .field("scopes_supported", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// Why a [`ProtectedResource`] setting was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceError {
    /// The resource is not an absolute URL.
    NotAUrl(String),
    /// The resource must be `https` (or `http` on a loopback host, for development).
    NotHttps(String),
    /// The resource carries a query or a fragment (RFC 8707 §2).
    QueryOrFragment(String),
    /// No authorization server, or one that is not an absolute `https` URL (or `http`
    /// on a loopback host).
    AuthorizationServer(String),
    /// A scope with characters RFC 6750 does not allow (space, `"`, `\`, controls), or
    /// empty.
    Scope(String),
}

impl fmt::Display for ResourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAUrl(s) => write!(f, "the protected resource {s:?} is not an absolute URL"),
            Self::NotHttps(s) => {
                write!(f, "the protected resource {s:?} must be https (http only on loopback)")
            }
            Self::QueryOrFragment(s) => {
                write!(f, "the protected resource {s:?} must not carry a query or fragment")
            }
            Self::AuthorizationServer(s) => {
                write!(f, "authorization server {s:?} is not an https URL (http only on loopback)")
            }
            Self::Scope(s) => write!(f, "scope {s:?} has characters RFC 6750 does not allow"),
        }
    }
}

impl std::error::Error for ResourceError {}

/// Which challenge a refusal carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// No credentials (or another scheme): `401`, no `error`.
    Missing,
    /// A token that does not verify: `401 error="invalid_token"`.
    InvalidToken,
    /// A malformed `Authorization` header: `400 error="invalid_request"`.
    InvalidRequest,
    /// A token without the scopes this needs: `403 error="insufficient_scope"`.
    InsufficientScope,
}

impl Challenge {
    pub(crate) fn status(self) -> u16 {
        match self {
            Self::Missing | Self::InvalidToken => 401,
            Self::InvalidRequest => 400,
            Self::InsufficientScope => 403,
        }
    }
}

/// An absolute `https` URL with a host (or `http` on a loopback host), parsed as RFC 3986
/// says (`fluent-uri`).
fn parse_https(text: &str) -> Option<fluent_uri::Uri<&str>> {
    let u = fluent_uri::Uri::parse(text).ok()?;
    let host = u.authority()?.host();
    if host.is_empty() {
        return None;
    }
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let loopback = host.eq_ignore_ascii_case("localhost")
        || bare.parse::<core::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    let scheme = u.scheme().as_str();
    (scheme.eq_ignore_ascii_case("https") || (scheme.eq_ignore_ascii_case("http") && loopback)).then_some(u)
}

/// Whether `s` is a scope token RFC 6750 §3 allows: `%x21 / %x23-5B / %x5D-7E`.
fn is_scope(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

impl ProtectedResource {
    /// The resource `resource` (the MCP endpoint's public URL exactly as clients address
    /// it, say `https://mcp.example.com/mcp`; never derived from a request's `Host`),
    /// whose tokens `authorization_servers` issue (their issuer identifiers; at least
    /// one).
    ///
    /// # Errors
    ///
    /// A resource that is not an absolute `https` URL without query or fragment (`http`
    /// is accepted on a loopback host, for development), or no authorization server, or
    /// one that is not an `https` URL.
    pub fn new<S: Into<String>>(
        resource: &str,
        authorization_servers: impl IntoIterator<Item = S>,
    ) -> Result<Self, ResourceError> {
        let u = fluent_uri::Uri::parse(resource).map_err(|_| ResourceError::NotAUrl(resource.to_owned()))?;
        if u.authority().is_none() {
            return Err(ResourceError::NotAUrl(resource.to_owned()));
        }
        if u.query().is_some() || u.fragment().is_some() {
            return Err(ResourceError::QueryOrFragment(resource.to_owned()));
        }
        let u = parse_https(resource).ok_or_else(|| ResourceError::NotHttps(resource.to_owned()))?;
        let servers: Vec<String> = authorization_servers.into_iter().map(Into::into).collect();
        if servers.is_empty() {
            return Err(ResourceError::AuthorizationServer(String::new()));
        }
        if let Some(bad) = servers.iter().find(|s| parse_https(s).is_none()) {
            return Err(ResourceError::AuthorizationServer(bad.clone()));
        }
        // The identifier exactly as configured (RFC 9728 §3.3 compares code points); the
        // well-known path is inserted between the authority and the path (§3.1), a
        // terminating `/` after the host dropped.
        let resource = resource.to_owned();
        let suffix = u.path().as_str().trim_end_matches('/');
        let path = format!("{WELL_KNOWN}{suffix}");
        let authority = u.authority().map_or("", |a| a.as_str());
        let url = format!("{}://{authority}{path}", u.scheme().as_str().to_ascii_lowercase());
        let mut r = Self {
            resource,
            servers,
            scopes: Vec::new(),
            name: None,
            path,
            url,
            document: Arc::from(&[][..]),
            missing: Arc::from(""),
            invalid_token: Arc::from(""),
            invalid_request: Arc::from(""),
            insufficient_scope: Arc::from(""),
        };
        r.finish();
        Ok(r)
    }

    /// The scopes a client needs for basic use (`scopes_supported`, and the `scope` of
    /// the challenges).
    ///
    /// # Errors
    ///
    /// A scope that is empty or has characters RFC 6750 §3 does not allow.
    pub fn scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Result<Self, ResourceError> {
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        if let Some(bad) = scopes.iter().find(|s| !is_scope(s)) {
            return Err(ResourceError::Scope(bad.clone()));
        }
        self.scopes = scopes;
        self.finish();
        Ok(self)
    }

    /// A human-readable name for the document (`resource_name`).
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self.finish();
        self
    }

    /// The resource identifier (the token audience).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The URL of the metadata document (the challenges' `resource_metadata`).
    pub fn metadata_url(&self) -> &str {
        &self.url
    }

    /// The path of the metadata document on this server (path-suffixed; the root
    /// `/.well-known/oauth-protected-resource` is served too).
    pub fn metadata_path(&self) -> &str {
        &self.path
    }

    /// The metadata document (JSON).
    pub fn document(&self) -> &[u8] {
        &self.document
    }

    /// Whether `path` names the metadata document.
    pub(crate) fn is_metadata_path(&self, path: &str) -> bool {
        path == self.path || path == WELL_KNOWN
    }

    /// The `Cache-Control` of the document.
    pub(crate) const fn cache_control() -> &'static str {
        MAX_AGE
    }

    /// The `WWW-Authenticate` value of `challenge`.
    pub(crate) fn challenge(&self, challenge: Challenge) -> &Arc<str> {
        match challenge {
            Challenge::Missing => &self.missing,
            Challenge::InvalidToken => &self.invalid_token,
            Challenge::InvalidRequest => &self.invalid_request,
            Challenge::InsufficientScope => &self.insufficient_scope,
        }
    }

    /// Builds the document and the challenges from the settings.
    fn finish(&mut self) {
        let mut doc = serde_json::Map::new();
        doc.insert("resource".into(), self.resource.clone().into());
        doc.insert("authorization_servers".into(), self.servers.clone().into());
        // Parameters with zero values are omitted (RFC 9728 §3.2).
        if !self.scopes.is_empty() {
            doc.insert("scopes_supported".into(), self.scopes.clone().into());
        }
        doc.insert("bearer_methods_supported".into(), vec!["header"].into());
        if let Some(name) = &self.name {
            doc.insert("resource_name".into(), name.clone().into());
        }
        self.document = Arc::from(serde_json::to_vec(&doc).unwrap_or_default());
        let scope = self.scopes.join(" ");
        let with = |error: Option<&str>, scope_too: bool| {
            let mut parts = Vec::new();
            if let Some(e) = error {
                parts.push(format!("error=\"{e}\""));
            }
            if scope_too && !scope.is_empty() {
                parts.push(format!("scope=\"{scope}\""));
            }
            // A valid RFC 3986 URI holds no `"` or `\`.
            parts.push(format!("resource_metadata=\"{}\"", self.url));
            Arc::from(format!("Bearer {}", parts.join(", ")))
        };
        self.missing = with(None, true);
        self.invalid_token = with(Some("invalid_token"), true);
        self.invalid_request = with(Some("invalid_request"), false);
        self.insufficient_scope = with(Some("insufficient_scope"), true);
    }
}

/// What the `Authorization` headers of a request say (RFC 6750 §2.1; OAuth 2.1 §5.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Credentials {
    /// One `Bearer` header with a well-formed token.
    Bearer,
    /// None, or only another scheme: the request lacks authentication.
    None,
    /// `Bearer` without a well-formed token, or two `Authorization` headers.
    Malformed,
}

/// Reads the `Authorization` headers of a request.
pub(crate) fn credentials(headers: &[httparse::Header<'_>]) -> Credentials {
    let mut found = headers.iter().filter(|h| h.name.eq_ignore_ascii_case("authorization"));
    let Some(first) = found.next() else { return Credentials::None };
    if found.next().is_some() {
        return Credentials::Malformed;
    }
    let value = first.value.trim_ascii();
    let (scheme, rest) = match value.iter().position(|&b| b == b' ') {
        Some(i) => (&value[..i], value[i..].trim_ascii_start()),
        None => (value, &b""[..]),
    };
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return Credentials::None;
    }
    if is_token68(rest) { Credentials::Bearer } else { Credentials::Malformed }
}

/// `token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_token68(t: &[u8]) -> bool {
    let body = t.iter().position(|&b| b == b'=').map_or(t, |i| &t[..i]);
    !body.is_empty()
        && body
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/'))
        && t[body.len()..].iter().all(|&b| b == b'=')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_well_known_path_is_inserted_before_the_resource_path() {
        for (resource, path, url) in [
            (
                "https://mcp.example.com/mcp",
                "/.well-known/oauth-protected-resource/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            ),
            (
                "https://mcp.example.com",
                "/.well-known/oauth-protected-resource",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ),
            (
                "https://example.com:8443/public/mcp",
                "/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com:8443/.well-known/oauth-protected-resource/public/mcp",
            ),
            (
                "http://127.0.0.1:3000/mcp",
                "/.well-known/oauth-protected-resource/mcp",
                "http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp",
            ),
        ] {
            let r = ProtectedResource::new(resource, ["https://auth.example.com"]).unwrap();
            assert_eq!((r.metadata_path(), r.metadata_url()), (path, url), "{resource}");
            assert_eq!(r.resource(), resource, "kept exactly as configured");
        }
    }

    #[test]
    fn the_document_has_the_required_fields_and_omits_empty_ones() {
        let r = ProtectedResource::new("https://mcp.example.com/mcp", ["https://auth.example.com"]).unwrap();
        let v: serde_json::Value = serde_json::from_slice(r.document()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://auth.example.com"],
                "bearer_methods_supported": ["header"]
            })
        );
        let r = r.scopes_supported(["mcp:read", "mcp:tools"]).unwrap().resource_name("Demo");
        let v: serde_json::Value = serde_json::from_slice(r.document()).unwrap();
        assert_eq!(v["scopes_supported"], serde_json::json!(["mcp:read", "mcp:tools"]));
        assert_eq!(v["resource_name"], "Demo");
    }

    #[test]
    fn challenges_follow_rfc_6750_and_rfc_9728() {
        let r = ProtectedResource::new("https://mcp.example.com/mcp", ["https://auth.example.com"])
            .unwrap()
            .scopes_supported(["mcp:read", "mcp:tools"])
            .unwrap();
        let meta = "resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"";
        assert_eq!(
            &**r.challenge(Challenge::Missing),
            format!("Bearer scope=\"mcp:read mcp:tools\", {meta}")
        );
        assert_eq!(
            &**r.challenge(Challenge::InvalidToken),
            format!("Bearer error=\"invalid_token\", scope=\"mcp:read mcp:tools\", {meta}")
        );
        assert_eq!(
            &**r.challenge(Challenge::InvalidRequest),
            format!("Bearer error=\"invalid_request\", {meta}")
        );
        assert!(r.challenge(Challenge::InsufficientScope).starts_with("Bearer error=\"insufficient_scope\""));
        let bare = ProtectedResource::new("https://a.example/mcp", ["https://auth.example"]).unwrap();
        assert!(!bare.challenge(Challenge::Missing).contains("scope="), "no empty scope");
    }

    #[test]
    fn bad_settings_are_refused() {
        let auth = ["https://auth.example.com"];
        assert!(matches!(ProtectedResource::new("mcp.example.com", auth), Err(ResourceError::NotAUrl(_))));
        assert!(matches!(
            ProtectedResource::new("http://mcp.example.com/mcp", auth),
            Err(ResourceError::NotHttps(_))
        ));
        assert!(matches!(
            ProtectedResource::new("https://mcp.example.com/mcp#x", auth),
            Err(ResourceError::QueryOrFragment(_))
        ));
        assert!(matches!(
            ProtectedResource::new("https://mcp.example.com/mcp?a=1", auth),
            Err(ResourceError::QueryOrFragment(_))
        ));
        let none: [&str; 0] = [];
        assert!(matches!(
            ProtectedResource::new("https://mcp.example.com/mcp", none),
            Err(ResourceError::AuthorizationServer(_))
        ));
        assert!(matches!(
            ProtectedResource::new("https://mcp.example.com/mcp", ["http://auth.example.com"]),
            Err(ResourceError::AuthorizationServer(_))
        ));
        let r = ProtectedResource::new("https://mcp.example.com/mcp", auth).unwrap();
        for bad in ["", "a b", "a\"b", "a\\b", "é"] {
            assert!(matches!(r.clone().scopes_supported([bad]), Err(ResourceError::Scope(_))), "{bad:?}");
        }
    }

    #[test]
    fn the_authorization_header_is_read_as_rfc_6750_says() {
        let h = |values: &[&'static str]| -> Credentials {
            let headers: Vec<httparse::Header<'_>> = values
                .iter()
                .map(|v| httparse::Header { name: "Authorization", value: v.as_bytes() })
                .collect();
            credentials(&headers)
        };
        assert_eq!(h(&[]), Credentials::None);
        assert_eq!(h(&["Bearer abc.DEF-123_~+/=="]), Credentials::Bearer);
        assert_eq!(h(&["bearer abc"]), Credentials::Bearer, "the scheme is case-insensitive");
        assert_eq!(h(&["BEARER   abc"]), Credentials::Bearer);
        assert_eq!(h(&["Basic dXNlcjpwYXNz"]), Credentials::None, "another scheme lacks authentication");
        assert_eq!(h(&["Bearer"]), Credentials::Malformed);
        assert_eq!(h(&["Bearer "]), Credentials::Malformed);
        assert_eq!(h(&["Bearer a b"]), Credentials::Malformed);
        assert_eq!(h(&["Bearer a=b"]), Credentials::Malformed);
        assert_eq!(h(&["Bearer ="]), Credentials::Malformed);
        assert_eq!(h(&["Bearer a", "Bearer b"]), Credentials::Malformed, "two headers");
    }
}
