//! Bounded HTTPS fetches for the OAuth verifiers: a `GET` of a metadata document or a key
//! set, a form `POST` to an introspection endpoint. Every fetch has a deadline covering
//! the connection, the request and the whole body, and a cap on the body's size; redirects
//! are not followed; plain `http` is refused unless allowed, and then only to a loopback
//! host.

use core::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The deadline of one fetch unless set.
pub(super) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest response body unless set (bytes).
pub(super) const DEFAULT_MAX_BYTES: usize = 256 * 1024;

/// Why a fetch failed. Shows the URL and what went wrong, never a request body (an
/// introspection request carries the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FetchError {
    /// Not an absolute `https` URL (or `http` to a loopback host, when allowed).
    Url(String),
    /// No answer within the deadline.
    Timeout(String),
    /// The connection, TLS or HTTP exchange failed.
    Transport(String, String),
    /// An answer other than `200 OK` (redirects are not followed).
    Status(String, u16),
    /// A body over the cap.
    TooLarge(String, usize),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Url(u) => {
                write!(f, "{u:?} is not an https URL (http only to a loopback host, when allowed)")
            }
            Self::Timeout(u) => write!(f, "{u}: no answer in time"),
            Self::Transport(u, e) => write!(f, "{u}: {e}"),
            Self::Status(u, s) => write!(f, "{u}: status {s}"),
            Self::TooLarge(u, max) => write!(f, "{u}: the response is over {max} bytes"),
        }
    }
}

/// The HTTP client of a verifier, with its bounds.
pub(super) struct Fetcher {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    /// The certificates trusted: the OS's, and any added.
    roots: rustls::RootCertStore,
    pub(super) timeout: Duration,
    pub(super) max_bytes: usize,
    pub(super) loopback_http: bool,
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetcher")
            .field("timeout", &self.timeout)
            .field("max_bytes", &self.max_bytes)
            .field("loopback_http", &self.loopback_http)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A client trusting the operating system's root certificates (rustls, ring).
    pub(super) fn new() -> Self {
        let mut roots = rustls::RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        for e in &found.errors {
            tracing::warn!(error = %e, "loading the OS root certificates");
        }
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            tracing::warn!("no OS root certificate found: https fetches will fail");
        }
        Self {
            client: client(roots.clone()),
            roots,
            timeout: DEFAULT_TIMEOUT,
            max_bytes: DEFAULT_MAX_BYTES,
            loopback_http: false,
        }
    }

    /// Also trusts the certificates of `pem` (a private authority's, say); returns how
    /// many it added.
    pub(super) fn trust_pem(&mut self, pem: &[u8]) -> Result<usize, String> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("not PEM certificates: {e}"))?;
            self.roots.add(cert).map_err(|e| format!("not a usable certificate: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err("no certificate in the PEM text".into());
        }
        self.client = client(self.roots.clone());
        Ok(added)
    }

    /// `url` if it may be fetched: absolute, `https`, or `http` to a loopback host when
    /// allowed; no user info.
    pub(super) fn check(&self, url: &str) -> Result<Uri, FetchError> {
        let bad = || FetchError::Url(url.to_owned());
        let uri: Uri = url.parse().map_err(|_| bad())?;
        let authority = uri.authority().ok_or_else(bad)?;
        if authority.as_str().contains('@') || authority.host().is_empty() {
            return Err(bad());
        }
        match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("https") => Ok(uri),
            Some(s)
                if s.eq_ignore_ascii_case("http") && self.loopback_http && is_loopback(authority.host()) =>
            {
                Ok(uri)
            }
            _ => Err(bad()),
        }
    }

    /// `GET url`, expecting JSON.
    pub(super) async fn get(&self, url: &str) -> Result<Bytes, FetchError> {
        let uri = self.check(url)?;
        let req = Request::builder()
            .method(Method::GET)
            .uri(uri)
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|e| FetchError::Transport(url.to_owned(), e.to_string()))?;
        self.send(url, req).await
    }

    /// `POST url` with a form body and an `Authorization` header, expecting JSON.
    pub(super) async fn post_form(
        &self,
        url: &str,
        authorization: &str,
        form: String,
    ) -> Result<Bytes, FetchError> {
        let uri = self.check(url)?;
        let req = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header(header::ACCEPT, "application/json")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::AUTHORIZATION, authorization)
            .body(Full::new(Bytes::from(form)))
            // The error of a bad header value would not show the value; say nothing more.
            .map_err(|_| FetchError::Transport(url.to_owned(), "the request could not be built".into()))?;
        self.send(url, req).await
    }

    async fn send(&self, url: &str, req: Request<Full<Bytes>>) -> Result<Bytes, FetchError> {
        let max = self.max_bytes;
        let exchange = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| FetchError::Transport(url.to_owned(), error_chain(&e)))?;
            if resp.status() != StatusCode::OK {
                return Err(FetchError::Status(url.to_owned(), resp.status().as_u16()));
            }
            let declared = resp
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > max as u64) {
                return Err(FetchError::TooLarge(url.to_owned(), max));
            }
            match Limited::new(resp.into_body(), max).collect().await {
                Ok(body) => Ok(body.to_bytes()),
                Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                    Err(FetchError::TooLarge(url.to_owned(), max))
                }
                Err(e) => Err(FetchError::Transport(url.to_owned(), e.to_string())),
            }
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(r) => r,
            Err(_) => Err(FetchError::Timeout(url.to_owned())),
        }
    }
}

/// The HTTP client: TLS by rustls with the ring provider (never the process-wide default,
/// which panics when a binary holds two providers), trusting `roots`; HTTP/1.1; a few
/// idle connections kept per host.
fn client(roots: rustls::RootCertStore) -> Client<HttpsConnector<HttpConnector>, Full<Bytes>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|b| b.with_root_certificates(roots).with_no_client_auth());
    let tls = match tls {
        Ok(tls) => tls,
        Err(e) => {
            // The ring provider supports the default versions; should it ever not, every
            // https fetch fails (plain loopback http still works).
            tracing::error!(error = %e, "no TLS configuration: https fetches will fail");
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_protocol_versions(&[&rustls::version::TLS13])
                .map(|b| b.with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth())
                .unwrap_or_else(|_| unreachable!("ring supports TLS 1.3"))
        }
    };
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(DEFAULT_TIMEOUT));
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new()).pool_max_idle_per_host(4).build(connector)
}

/// The error and its sources, for a log line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Whether `host` (as in a URL: an IPv6 address in brackets) is a loopback host.
fn is_loopback(host: &str) -> bool {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    host.eq_ignore_ascii_case("localhost") || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `s` encoded for an `application/x-www-form-urlencoded` body (and for the client
/// credentials of HTTP Basic authentication, RFC 6749 §2.3.1): unreserved characters kept,
/// every other byte `%XX`.
pub(super) fn form_encode(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_https_or_allowed_loopback_http_is_fetched() {
        let mut f = Fetcher::new();
        assert!(f.check("https://as.example/jwks").is_ok());
        for bad in [
            "http://as.example/jwks",
            "http://127.0.0.1:8080/jwks",
            "ftp://as.example/",
            "/jwks",
            "https://user:pw@as.example/",
            "not a url",
        ] {
            assert!(matches!(f.check(bad), Err(FetchError::Url(_))), "{bad}");
        }
        f.loopback_http = true;
        for ok in
            ["http://127.0.0.1:8080/jwks", "http://[::1]:80/", "http://localhost/x", "http://127.3.2.1/"]
        {
            assert!(f.check(ok).is_ok(), "{ok}");
        }
        assert!(f.check("http://10.0.0.1/jwks").is_err(), "not loopback");
        assert!(f.check("http://localhost.example/jwks").is_err(), "not loopback");
    }

    #[test]
    fn form_encoding() {
        let mut out = String::new();
        form_encode("a b+c/=é~._-", &mut out);
        assert_eq!(out, "a%20b%2Bc%2F%3D%C3%A9~._-");
    }
}
