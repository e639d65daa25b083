//! Who may call over Streamable HTTP: the host's authorization hook, [`Authorizer`] (with
//! [`AllowAll`], [`NoAuthorizer`] and a closure over an [`AuthorizeInfo`]), and the OAuth
//! 2.1 resource server's verification of access tokens (`oauth`, feature `oauth`).

use core::fmt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};

use mcp_engine::http::{HeaderList, Scopes, Verdict};

#[cfg(feature = "oauth")]
pub(crate) mod oauth;

/// An owned copy of what an authorization hook decides on: the peer and the request's
/// headers (the engine's [`AuthorizeRequest`](mcp_engine::http::AuthorizeRequest), made
/// owned so that it can move into a task).
///
/// ```
/// use std::net::{IpAddr, SocketAddr};
///
/// use mcp_io_tokio::http::AuthorizeInfo;
///
/// let peer: SocketAddr = "192.0.2.7:50000".parse()?;
/// let info = AuthorizeInfo::new(Some(peer), [("Authorization", "Bearer s3cret"), ("X-Tenant", "acme")]);
/// assert_eq!(info.client, Some(IpAddr::from([192, 0, 2, 7])));
/// assert_eq!(info.bearer_token(), Some("s3cret"));
/// assert_eq!(info.header_str("x-tenant"), Some("acme"));
/// assert!(!format!("{info:?}").contains("s3cret")); // `Debug` leaves header values out
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizeInfo {
    /// The peer's address, when known (always, over [`serve_http`](crate::serve_http);
    /// for the tower service, when the request carries a [`SocketAddr`] extension).
    pub peer: Option<SocketAddr>,
    /// The client's address: the peer's, or the one a trusted proxy forwarded
    /// ([`HttpConfig::trusted_proxies`](mcp_engine::http::HttpConfig::trusted_proxies)).
    /// Key rate limits and logs on this, not on `peer`.
    pub client: Option<IpAddr>,
    /// The request's headers, in order, repeated ones included. Names are as the client
    /// sent them (compare them case-insensitively, or use [`header`](Self::header)).
    pub headers: Vec<(String, Vec<u8>)>,
    /// The server's scope names ([`HttpEngine::scopes`](mcp_engine::http::HttpEngine::scopes)):
    /// turn a token's scopes into a [`Grant`](mcp_engine::http::Grant)'s with
    /// [`Scopes::set_of`]. Empty without a scope policy.
    pub scopes: Scopes,
}

impl AuthorizeInfo {
    /// A request from `peer` with `headers`. Useful to test an [`Authorizer`].
    ///
    /// ```
    /// use mcp_engine::http::Verdict;
    /// use mcp_io_tokio::Authorizer;
    /// use mcp_io_tokio::http::AuthorizeInfo;
    ///
    /// let auth = |req: &AuthorizeInfo| match req.bearer_token() {
    ///     Some("s3cret") => Verdict::Allow,
    ///     _ => Verdict::Unauthenticated,
    /// };
    /// let request = AuthorizeInfo::new(None, [("authorization", "Bearer s3cret")]);
    /// assert_eq!(auth.authorize_now(&request), Some(Verdict::Allow));
    /// ```
    pub fn new<N: Into<String>, V: Into<Vec<u8>>>(
        peer: Option<SocketAddr>,
        headers: impl IntoIterator<Item = (N, V)>,
    ) -> Self {
        Self {
            peer,
            client: peer.map(|p| p.ip()),
            headers: headers.into_iter().map(|(n, v)| (n.into(), v.into())).collect(),
            scopes: Scopes::default(),
        }
    }

    /// Refills `self` with the engine's view of a request, reusing the strings and
    /// vectors it already holds: a request with no more headers than an earlier one
    /// allocates nothing.
    pub(crate) fn refill(
        &mut self,
        peer: Option<SocketAddr>,
        client: Option<IpAddr>,
        headers: &HeaderList<'_>,
        scopes: &Scopes,
    ) {
        self.peer = peer;
        self.client = client;
        self.scopes.clone_from(scopes);
        let headers = headers.as_slice();
        self.headers.truncate(headers.len());
        for (i, h) in headers.iter().enumerate() {
            match self.headers.get_mut(i) {
                Some((name, value)) => {
                    name.clear();
                    name.push_str(h.name);
                    value.clear();
                    value.extend_from_slice(h.value);
                }
                None => self.headers.push((h.name.to_owned(), h.value.to_vec())),
            }
        }
    }

    /// The first value of header `name` (case-insensitive).
    ///
    /// ```
    /// use mcp_io_tokio::http::AuthorizeInfo;
    ///
    /// let info = AuthorizeInfo::new(None, [("X-Tenant", "acme"), ("x-tenant", "other")]);
    /// assert_eq!(info.header("x-TENANT"), Some(&b"acme"[..]));
    /// assert_eq!(info.header("x-missing"), None);
    /// ```
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_slice())
    }

    /// The first value of header `name` as text, if it is UTF-8.
    ///
    /// ```
    /// use mcp_io_tokio::http::AuthorizeInfo;
    ///
    /// let info = AuthorizeInfo::new(None, [("X-Tenant", b"acme".to_vec()), ("X-Raw", vec![0xff])]);
    /// assert_eq!(info.header_str("x-tenant"), Some("acme"));
    /// assert_eq!(info.header_str("x-raw"), None); // not UTF-8
    /// ```
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| core::str::from_utf8(v).ok())
    }

    /// The token of an `Authorization: Bearer <token>` header (the scheme compared
    /// case-insensitively), if there is one.
    ///
    /// ```
    /// use mcp_io_tokio::http::AuthorizeInfo;
    ///
    /// let request = AuthorizeInfo::new(None, [("Authorization", "bearer  s3cret ")]);
    /// assert_eq!(request.bearer_token(), Some("s3cret")); // any case of `Bearer`, spaces trimmed
    /// let basic = AuthorizeInfo::new(None, [("Authorization", "Basic dXNlcjpwdw==")]);
    /// assert_eq!(basic.bearer_token(), None);
    /// ```
    pub fn bearer_token(&self) -> Option<&str> {
        let value = self.header_str("authorization")?.trim();
        let (scheme, token) = value.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
    }
}

impl fmt::Debug for AuthorizeInfo {
    /// Header values are left out: they may hold credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizeInfo")
            .field("peer", &self.peer)
            .field("client", &self.client)
            .field("headers", &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .finish()
    }
}

/// Decides whether HTTP requests may proceed: the host's side of
/// [`Authorization::Host`](mcp_engine::http::Authorization::Host).
///
/// [`authorize`](Self::authorize) sees each request's head before its body is read
/// ([`HttpEvent::Authorize`](mcp_engine::http::HttpEvent::Authorize));
/// [`authorize_body`](Self::authorize_body) sees the body exactly as received, when the
/// engine is configured with
/// [`HttpConfig::authorize_body`](mcp_engine::http::HttpConfig::authorize_body). A refusal
/// tells the caller only its status; log the reason yourself.
///
/// Both may be asynchronous (look a token up, ask another service). A future that is
/// ready when first polled is answered at once, without spawning a task; any other runs
/// in its own task, aborted if the client goes away. An authorizer that panics refuses
/// with [`Verdict::Failed`] (`500`).
///
/// An authorizer that can decide without waiting also says so through
/// [`authorize_now`](Self::authorize_now) (and [`authorize_body_now`](Self::authorize_body_now)):
/// such a decision costs no allocation (the request's headers are lent from a reused
/// [`AuthorizeInfo`], the body is borrowed), where a future is boxed. Closures and
/// [`AllowAll`] do this.
///
/// A closure `Fn(&AuthorizeInfo) -> Verdict` is an authorizer (with bodies always
/// allowed), and so is [`AllowAll`] (for engines configured with
/// [`Authorization::Everyone`](mcp_engine::http::Authorization::Everyone), which never
/// ask):
///
/// ```
/// use mcp_engine::http::Verdict;
/// use mcp_io_tokio::Authorizer;
/// use mcp_io_tokio::http::AuthorizeInfo;
///
/// fn check<A: Authorizer>(_: &A) {}
/// check(&|req: &AuthorizeInfo| match req.bearer_token() {
///     Some("s3cret") => Verdict::Allow,
///     Some(_) => Verdict::Forbidden,
///     None => Verdict::Unauthenticated,
/// });
/// ```
pub trait Authorizer: Send + Sync + 'static {
    /// Decides on a request from its head.
    fn authorize(&self, request: &AuthorizeInfo) -> impl Future<Output = Verdict> + Send;

    /// Decides on a request's body (only asked when the engine is configured to). The
    /// default allows every body.
    fn authorize_body(&self, request: &AuthorizeInfo, body: &[u8]) -> impl Future<Output = Verdict> + Send {
        let _ = (request, body);
        std::future::ready(Verdict::Allow)
    }

    /// Decides on a head at once, if this authorizer can; `None` (the default) asks
    /// [`authorize`](Self::authorize). When it returns `Some`, `authorize` is not called.
    fn authorize_now(&self, request: &AuthorizeInfo) -> Option<Verdict> {
        let _ = request;
        None
    }

    /// Decides on a body at once, if this authorizer can; `None` (the default) asks
    /// [`authorize_body`](Self::authorize_body).
    fn authorize_body_now(&self, request: &AuthorizeInfo, body: &[u8]) -> Option<Verdict> {
        let _ = (request, body);
        None
    }
}

impl<F> Authorizer for F
where
    F: Fn(&AuthorizeInfo) -> Verdict + Send + Sync + 'static,
{
    fn authorize(&self, request: &AuthorizeInfo) -> impl Future<Output = Verdict> + Send {
        std::future::ready(self(request))
    }

    fn authorize_now(&self, request: &AuthorizeInfo) -> Option<Verdict> {
        Some(self(request))
    }

    fn authorize_body_now(&self, _: &AuthorizeInfo, _: &[u8]) -> Option<Verdict> {
        Some(Verdict::Allow)
    }
}

/// An [`Authorizer`] that allows every request. Use it with engines configured with
/// [`Authorization::Everyone`](mcp_engine::http::Authorization::Everyone), which never ask.
///
/// ```
/// use mcp_engine::http::Verdict;
/// use mcp_io_tokio::Authorizer;
/// use mcp_io_tokio::http::{AllowAll, AuthorizeInfo};
///
/// let anyone = AuthorizeInfo::new(None, [("User-Agent", "curl")]);
/// assert_eq!(AllowAll.authorize_now(&anyone), Some(Verdict::Allow));
/// assert_eq!(AllowAll.authorize_body_now(&anyone, b"{}"), Some(Verdict::Allow));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl Authorizer for AllowAll {
    fn authorize(&self, request: &AuthorizeInfo) -> impl Future<Output = Verdict> + Send {
        let _ = request;
        std::future::ready(Verdict::Allow)
    }

    fn authorize_now(&self, _: &AuthorizeInfo) -> Option<Verdict> {
        Some(Verdict::Allow)
    }

    fn authorize_body_now(&self, _: &AuthorizeInfo, _: &[u8]) -> Option<Verdict> {
        Some(Verdict::Allow)
    }
}

/// The authorizer of a server built without one
/// ([`HttpServer::without_authorizer`](crate::HttpServer::without_authorizer)): an engine
/// under [`Authorization::Everyone`](mcp_engine::http::Authorization::Everyone) never asks
/// it. Should the engine ask (it was configured with `Authorization::Host`), every request
/// is refused `500` and an error is logged: a server never allows by omission.
///
/// ```
/// use mcp_engine::http::Verdict;
/// use mcp_io_tokio::Authorizer;
/// use mcp_io_tokio::http::{AuthorizeInfo, NoAuthorizer};
///
/// let request = AuthorizeInfo::new(None, [("Authorization", "Bearer s3cret")]);
/// assert_eq!(NoAuthorizer.authorize_now(&request), Some(Verdict::Failed)); // and logs an error
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAuthorizer;

impl NoAuthorizer {
    fn refuse() -> Verdict {
        tracing::error!(
            "the engine asks for authorization (Authorization::Host), but the server was built \
             without an authorizer: refusing (give one with HttpServer::new)"
        );
        Verdict::Failed
    }
}

impl Authorizer for NoAuthorizer {
    fn authorize(&self, _: &AuthorizeInfo) -> impl Future<Output = Verdict> + Send {
        std::future::ready(Self::refuse())
    }

    fn authorize_now(&self, _: &AuthorizeInfo) -> Option<Verdict> {
        Some(Self::refuse())
    }

    fn authorize_body_now(&self, _: &AuthorizeInfo, _: &[u8]) -> Option<Verdict> {
        Some(Self::refuse())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_bearer_tokens() {
        let info = AuthorizeInfo::new(None, [("Authorization", "bearer  abc "), ("X-A", "1"), ("x-a", "2")]);
        assert_eq!(info.bearer_token(), Some("abc"));
        assert_eq!(info.header("x-a"), Some(&b"1"[..]));
        assert_eq!(info.header_str("X-A"), Some("1"));
        assert_eq!(info.header("nope"), None);
        assert!(!format!("{info:?}").contains("abc"), "values stay out of Debug");
        assert_eq!(AuthorizeInfo::new(None, [("authorization", "Basic x")]).bearer_token(), None);
        assert_eq!(AuthorizeInfo::new(None, [("authorization", "Bearer ")]).bearer_token(), None);
    }
}
