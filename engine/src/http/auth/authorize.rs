//! Who may call: [`Authorization`], the host's [`Verdict`], the [`Principal`] a request
//! acts for, and what the host sees of a request to decide ([`HeaderList`],
//! [`AuthorizeRequest`], [`AuthorizeBody`]).

use core::fmt;
use core::net::{IpAddr, SocketAddr};

use crate::http::ConnId;
use crate::mcp::scopes::{ScopeSet, Scopes};
use crate::time::UnixTime;
use crate::wire::http1::MAX_HEADERS;

/// Who decides whether a request may proceed. There is no default: a server must say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Authorization {
    /// The host decides on every request, from its head and peer, before the body is
    /// read: the engine emits [`HttpEvent::Authorize`](crate::http::HttpEvent::Authorize) and waits for
    /// [`HttpEngine::authorize`](crate::http::HttpEngine::authorize).
    Host,
    /// Every caller may call every tool. Choose it deliberately.
    Everyone,
}

/// The host's decision on a request ([`HttpEngine::authorize`](crate::http::HttpEngine::authorize),
/// [`HttpEngine::authorize_body`](crate::http::HttpEngine::authorize_body)). Reasons are the host's to log: the caller learns only
/// the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Proceed.
    Allow,
    /// Proceed, acting for this principal: the engine binds the `requestState` and the
    /// list cursors it issues to it, so another principal cannot replay them (`-32602`).
    /// Under a scope policy ([`HttpConfig::scope_policy`](crate::http::HttpConfig::scope_policy))
    /// it grants no scope, as [`Verdict::Allow`] does: only what requires none is reachable.
    AllowAs(Principal),
    /// Proceed, acting for the grant's principal with its scopes (a verified token): what
    /// [`Verdict::AllowAs`] does, plus the scope policy's checks against the grant's
    /// scopes, and a `subscriptions/listen` stream (or a session's standalone `GET` stream)
    /// that ends when the grant expires.
    Grant(Grant),
    /// `401 Unauthorized` (no or bad credentials).
    Unauthenticated,
    /// `403 Forbidden` (credentials that may not do this).
    Forbidden,
    /// `500 Internal Server Error`: the hook itself failed.
    Failed,
    /// `503 Service Unavailable` with `Retry-After: 1`: the host cannot decide now (say
    /// its authorization server does not answer); the client may try again. Not counted
    /// as an authentication failure.
    Unavailable,
}

impl Verdict {
    /// Whether the request may proceed.
    pub fn allows(self) -> bool {
        matches!(self, Self::Allow | Self::AllowAs(_) | Self::Grant(_))
    }

    pub(in crate::http) fn principal(self) -> Option<Principal> {
        match self {
            Self::AllowAs(p) => Some(p),
            Self::Grant(g) => Some(g.principal),
            _ => None,
        }
    }
}

/// What a verified token grants a request ([`Verdict::Grant`]): who it acts for, the
/// scopes it carries (as the server's [`Scopes`] table reads them) and, optionally, when
/// it expires. `Copy`; building one allocates nothing.
///
/// ```
/// use mcp_engine::http::{Grant, Principal, Verdict};
/// use mcp_engine::UnixTime;
/// use mcp_engine::http::ScopeSet;
/// let grant = Grant::new(Principal::of(b"alice"))
///     .scopes(ScopeSet::EMPTY)
///     .expires(UnixTime::from_secs(1_900_000_000));
/// assert!(Verdict::Grant(grant).allows());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub(crate) principal: Principal,
    pub(crate) scopes: ScopeSet,
    pub(crate) expires: Option<UnixTime>,
}

impl Grant {
    /// A grant for `principal` with no scope and no expiry.
    pub fn new(principal: Principal) -> Self {
        Self { principal, scopes: ScopeSet::EMPTY, expires: None }
    }
    /// Sets the scopes ([`Scopes::set_of`], from the engine's [`HttpEngine::scopes`]).
    ///
    /// [`HttpEngine::scopes`]: crate::http::HttpEngine::scopes
    #[must_use]
    pub fn scopes(mut self, scopes: ScopeSet) -> Self {
        self.scopes = scopes;
        self
    }
    /// Sets when the token expires (its `exp`): a listen stream or a session's standalone
    /// stream opened with it ends then.
    #[must_use]
    pub fn expires(mut self, at: UnixTime) -> Self {
        self.expires = Some(at);
        self
    }
    /// The principal.
    pub fn principal(&self) -> Principal {
        self.principal
    }
    /// The scopes.
    pub fn scope_set(&self) -> ScopeSet {
        self.scopes
    }
}

/// Who a request acts for, as the host's authorization established it: a SHA-256 digest
/// of the host's identifier (a user id, a token subject), so the engine keeps 32 bytes
/// and never the identifier itself.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Principal(pub(crate) [u8; 32]);

impl Principal {
    /// The principal the host identifies as `id`.
    pub fn of(id: &[u8]) -> Self {
        use sha2::Digest as _;
        Self(sha2::Sha256::digest(id).into())
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Principal({:02x}{:02x}{:02x}{:02x}..)", self.0[0], self.0[1], self.0[2], self.0[3])
    }
}

/// The headers of a request head, parsed with httparse into a fixed array.
pub struct HeaderList<'a> {
    headers: [httparse::Header<'a>; MAX_HEADERS],
    len: usize,
}

impl<'a> HeaderList<'a> {
    pub(in crate::http) fn parse(head: &'a [u8]) -> Self {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        // The head was parsed once already, so this succeeds; a failure just yields none.
        let ok = matches!(req.parse(head), Ok(httparse::Status::Complete(_)));
        let len = if ok { req.headers.len() } else { 0 };
        Self { headers, len }
    }
    /// The headers where the codec found them (`spans`, from [`http1::Conn`]), without
    /// parsing the head again.
    /// The names are taken as text from one check of the bytes that hold them all (the
    /// head from the first name to the last), not one check per name; a head whose
    /// values are not all UTF-8 falls back to checking each name.
    pub(in crate::http) fn from_spans(head: &'a [u8], spans: &[[u32; 4]]) -> Self {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut len = 0;
        let (first, last) = (spans.first().map_or(0, |s| s[0]), spans.last().map_or(0, |s| s[1]));
        let names = head.get(first as usize..last as usize).and_then(|b| core::str::from_utf8(b).ok());
        for (slot, &[ns, ne, vs, ve]) in headers.iter_mut().zip(spans) {
            let name = names
                .and_then(|text| text.get(ns.wrapping_sub(first) as usize..ne.wrapping_sub(first) as usize))
                .or_else(|| head.get(ns as usize..ne as usize).and_then(|n| core::str::from_utf8(n).ok()));
            let value = head.get(vs as usize..ve as usize);
            let (Some(name), Some(value)) = (name, value) else { break };
            *slot = httparse::Header { name, value };
            len += 1;
        }
        Self { headers, len }
    }
    /// The headers, in order, repeated ones included.
    pub fn as_slice(&self) -> &[httparse::Header<'a>] {
        &self.headers[..self.len]
    }
    /// The first value of header `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.as_slice().iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    }
}

impl fmt::Debug for HeaderList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice().iter().map(|h| h.name)).finish()
    }
}

/// A request the host authorizes before its body is read ([`HttpEvent::Authorize`](crate::http::HttpEvent::Authorize)).
#[non_exhaustive]
pub struct AuthorizeRequest<'a> {
    /// The connection: pass it to [`HttpEngine::authorize`](crate::http::HttpEngine::authorize).
    pub conn: ConnId,
    /// The peer's address, as given to [`HttpEngine::open`](crate::http::HttpEngine::open).
    pub peer: Option<SocketAddr>,
    /// The client's address: the peer's, or the one a trusted proxy forwarded
    /// ([`HttpConfig::trusted_proxies`](crate::http::HttpConfig::trusted_proxies)).
    pub client: Option<IpAddr>,
    /// The request's headers.
    pub headers: HeaderList<'a>,
    /// The server's scope names, to build a [`Grant`]'s scopes with ([`Scopes::set_of`]).
    pub scopes: &'a Scopes,
}

impl fmt::Debug for AuthorizeRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizeRequest")
            .field("conn", &self.conn)
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

/// A body the host checks before it is decoded ([`HttpEvent::AuthorizeBody`](crate::http::HttpEvent::AuthorizeBody)).
#[non_exhaustive]
pub struct AuthorizeBody<'a> {
    /// The connection: pass it to [`HttpEngine::authorize_body`](crate::http::HttpEngine::authorize_body).
    pub conn: ConnId,
    /// The peer's address.
    pub peer: Option<SocketAddr>,
    /// The client's address (see [`AuthorizeRequest::client`]).
    pub client: Option<IpAddr>,
    /// The request's headers.
    pub headers: HeaderList<'a>,
    /// The body exactly as received (de-chunked, never re-encoded): a signature over it
    /// can be checked.
    pub body: &'a [u8],
    /// The server's scope names (see [`AuthorizeRequest::scopes`]).
    pub scopes: &'a Scopes,
}

impl fmt::Debug for AuthorizeBody<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizeBody")
            .field("conn", &self.conn)
            .field("len", &self.body.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::HeaderList;

    /// The spans the codec records for `head`: `[name start, name end, value start,
    /// value end]` per header line.
    fn spans_of(head: &[u8]) -> Vec<[u32; 4]> {
        let mut spans = Vec::new();
        let mut at = head.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
        while !head[at..].starts_with(b"\r\n") {
            let end = at + head[at..].windows(2).position(|w| w == b"\r\n").unwrap();
            let colon = at + head[at..end].iter().position(|&b| b == b':').unwrap();
            let value = colon + 1 + head[colon + 1..end].iter().take_while(|&&b| b == b' ').count();
            spans.push([at as u32, colon as u32, value as u32, end as u32]);
            at = end + 2;
        }
        spans
    }

    fn pairs<'a>(list: &HeaderList<'a>) -> Vec<(&'a str, &'a [u8])> {
        list.as_slice().iter().map(|h| (h.name, h.value)).collect()
    }

    #[test]
    fn names_from_spans_equal_a_fresh_parse_with_text_values_and_with_obs_text() {
        let text: &[u8] =
            b"POST /mcp HTTP/1.1\r\nHost: a\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n\r\n";
        let obs: &[u8] =
            b"POST /mcp HTTP/1.1\r\nX-Raw: caf\xe9\xff\r\nMcp-Method: tools/call\r\nMcp-Name: e\r\n\r\n";
        for head in [text, obs] {
            let spans = spans_of(head);
            let fast = HeaderList::from_spans(head, &spans);
            let parsed = HeaderList::parse(head);
            assert_eq!(pairs(&fast), pairs(&parsed));
            assert_eq!(fast.as_slice().len(), 3);
            assert_eq!(fast.get("mcp-method"), Some(&b"tools/call"[..]));
        }
        // No headers at all: nothing, and no panic.
        assert!(HeaderList::from_spans(b"GET / HTTP/1.1\r\n\r\n", &[]).as_slice().is_empty());
    }
}
