//! Why a request was refused, for the host's log and metrics: every HTTP response with a
//! status of 400 or more is recorded with its [`Refusal`] reason (the body stays what it
//! is: empty where it is empty), counted per reason ([`RefusalCounts`]) and kept in a
//! bounded queue the adapter drains ([`HttpEngine::poll_refusal`](crate::http::HttpEngine::poll_refusal)) to log each one.
//!
//! Recording costs no allocation: a refusal is noted on its exchange as its head is
//! written, and moved to the engine's queue (reserved at [`REFUSALS_KEPT`] when the
//! engine is made) the next time the engine looks at the connection.

use core::net::IpAddr;

use crate::http::ConnId;
use crate::http::auth::resource::Challenge;
use crate::http::conn::exchange::Exchange;
use crate::wire::http1::HttpError;

/// Refusals kept for [`HttpEngine::poll_refusal`](crate::http::HttpEngine::poll_refusal); past that the oldest is dropped (it is
/// still counted).
pub const REFUSALS_KEPT: usize = 256;

/// Why a request was refused. [`reason`](Self::reason) says it in a few words for a log
/// line, [`name`](Self::name) is a stable identifier for a metric attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// `404`: the path is not the endpoint (nor the protected-resource metadata).
    PathNotFound,
    /// `405`: a method the endpoint does not serve.
    MethodNotAllowed,
    /// `403`: an `Origin` not in [`AllowedOrigins::List`](crate::http::AllowedOrigins::List).
    OriginNotAllowed,
    /// `403`: no `Host`, or one that is neither loopback (while loopback-only serving is
    /// on) nor in [`HttpConfig::allowed_hosts`](crate::http::HttpConfig::allowed_hosts).
    HostNotAllowed,
    /// `403`: with any origin allowed and `Host` checks on, an `Origin` whose host is not
    /// an allowed `Host` (a page on a rebinding domain).
    OriginHostNotAllowed,
    /// `400`: the request breaks HTTP/1.1 framing (a malformed head or chunk, conflicting
    /// lengths, an unknown transfer coding, two `Host`s).
    Malformed,
    /// `431`: the head did not end within `max_head_bytes`.
    HeadTooLarge,
    /// `431`: more headers than allowed.
    TooManyHeaders,
    /// `413`: the body is over [`HttpConfig::max_body`](crate::http::HttpConfig::max_body).
    BodyTooLarge,
    /// `505`: not HTTP/1.0 or 1.1 (an HTTP/2 preface, say).
    VersionNotSupported,
    /// `408`: the head did not arrive within its deadline.
    HeadTimeout,
    /// `408`: the body did not arrive within its deadline.
    BodyTimeout,
    /// `429`: the client's address failed to authenticate too often
    /// ([`Limits`](crate::http::Limits)).
    AuthFailures,
    /// `401`: a protected resource's request without a bearer token.
    TokenMissing,
    /// `400`: a malformed `Authorization` (a protected resource).
    TokenMalformed,
    /// `401`: the host's authorization said `Unauthenticated` (an invalid token).
    Unauthenticated,
    /// `403`: the host's authorization said `Forbidden`, or the token lacks a scope the
    /// method needs.
    Forbidden,
    /// `500`: the host's authorization failed.
    AuthorizerFailed,
    /// `503`: unavailable: the host's authorization, its session store (in time), or room
    /// for one more session.
    Unavailable,
    /// `429`: over a rate limit or the requests in flight allowed a principal.
    RateLimited,
    /// `404`: no such session (or a method the server does not have).
    NotFound,
    /// `429`: an `initialize` of a client holding its share of sessions
    /// ([`HttpConfig::max_sessions_per_client`](crate::http::HttpConfig::max_sessions_per_client)),
    /// each of them busy.
    TooManySessions,
    /// `429`: a standalone `GET` stream of a client holding as many long-lived streams as
    /// it may ([`HttpConfig::max_streams_per_client`](crate::http::HttpConfig::max_streams_per_client)).
    TooManyStreams,
    /// `429`: a request that needs a ticket, of a client holding as many requests with the
    /// host as it may ([`HttpConfig::max_in_flight_per_client`](crate::http::HttpConfig::max_in_flight_per_client)).
    TooManyInFlight,
    /// `406`: the `Accept` header rules out every response type.
    NotAcceptable,
    /// `409`: a session's standalone stream is already open.
    Conflict,
    /// `400`: the message or its headers are invalid (the JSON-RPC error in the body says
    /// how).
    BadMessage,
    /// Another status of 400 or more.
    Other,
}

impl Refusal {
    /// Every reason, in [`index`](Self::index) order.
    pub const ALL: [Self; 28] = [
        Self::PathNotFound,
        Self::MethodNotAllowed,
        Self::OriginNotAllowed,
        Self::HostNotAllowed,
        Self::OriginHostNotAllowed,
        Self::Malformed,
        Self::HeadTooLarge,
        Self::TooManyHeaders,
        Self::BodyTooLarge,
        Self::VersionNotSupported,
        Self::HeadTimeout,
        Self::BodyTimeout,
        Self::AuthFailures,
        Self::TokenMissing,
        Self::TokenMalformed,
        Self::Unauthenticated,
        Self::Forbidden,
        Self::AuthorizerFailed,
        Self::Unavailable,
        Self::RateLimited,
        Self::NotFound,
        Self::TooManySessions,
        Self::TooManyStreams,
        Self::TooManyInFlight,
        Self::NotAcceptable,
        Self::Conflict,
        Self::BadMessage,
        Self::Other,
    ];

    /// The position of this reason in [`ALL`](Self::ALL).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The reason in a few words, for a log line.
    ///
    /// ```
    /// use mcp_engine::http::Refusal;
    /// assert_eq!(Refusal::HostNotAllowed.reason(), "Host not allowed (neither loopback nor in allowed_hosts)");
    /// ```
    pub fn reason(self) -> &'static str {
        match self {
            Self::PathNotFound => "path is not the endpoint",
            Self::MethodNotAllowed => "method not allowed",
            Self::OriginNotAllowed => "Origin not in the allowed origins",
            Self::HostNotAllowed => "Host not allowed (neither loopback nor in allowed_hosts)",
            Self::OriginHostNotAllowed => "Origin's host is not an allowed Host (DNS rebinding guard)",
            Self::Malformed => "malformed HTTP/1.1 request",
            Self::HeadTooLarge => "head too large",
            Self::TooManyHeaders => "too many headers",
            Self::BodyTooLarge => "body over the cap (max_body)",
            Self::VersionNotSupported => "HTTP version not supported",
            Self::HeadTimeout => "head not received in time (head_timeout)",
            Self::BodyTimeout => "body not received in time (body_deadline)",
            Self::AuthFailures => "too many failed authentications from this client",
            Self::TokenMissing => "no bearer token",
            Self::TokenMalformed => "malformed Authorization header",
            Self::Unauthenticated => "not authenticated (the authorizer's verdict)",
            Self::Forbidden => "forbidden (the authorizer's verdict, or a scope the token lacks)",
            Self::AuthorizerFailed => "the authorizer failed",
            Self::Unavailable => "unavailable (the authorizer, the session store, or the session cap)",
            Self::RateLimited => "rate limited",
            Self::NotFound => "no such session or method",
            Self::TooManySessions => {
                "the client holds its share of sessions, each busy (max_sessions_per_client)"
            }
            Self::TooManyStreams => {
                "the client holds as many long-lived streams as it may (max_streams_per_client)"
            }
            Self::TooManyInFlight => {
                "the client has as many requests with the host as it may (max_in_flight_per_client)"
            }
            Self::NotAcceptable => "not acceptable (Accept)",
            Self::Conflict => "conflict (the session's stream is already open)",
            Self::BadMessage => "invalid message or headers (see the JSON-RPC error)",
            Self::Other => "refused",
        }
    }

    /// A stable snake-case name, for a metric attribute.
    ///
    /// ```
    /// use mcp_engine::http::Refusal;
    /// assert_eq!(Refusal::BodyTooLarge.name(), "body_too_large");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::PathNotFound => "path_not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::OriginNotAllowed => "origin_not_allowed",
            Self::HostNotAllowed => "host_not_allowed",
            Self::OriginHostNotAllowed => "origin_host_not_allowed",
            Self::Malformed => "malformed",
            Self::HeadTooLarge => "head_too_large",
            Self::TooManyHeaders => "too_many_headers",
            Self::BodyTooLarge => "body_too_large",
            Self::VersionNotSupported => "version_not_supported",
            Self::HeadTimeout => "head_timeout",
            Self::BodyTimeout => "body_timeout",
            Self::AuthFailures => "auth_failures",
            Self::TokenMissing => "token_missing",
            Self::TokenMalformed => "token_malformed",
            Self::Unauthenticated => "unauthenticated",
            Self::Forbidden => "forbidden",
            Self::AuthorizerFailed => "authorizer_failed",
            Self::Unavailable => "unavailable",
            Self::RateLimited => "rate_limited",
            Self::NotFound => "not_found",
            Self::TooManySessions => "too_many_sessions",
            Self::TooManyStreams => "too_many_streams",
            Self::TooManyInFlight => "too_many_in_flight",
            Self::NotAcceptable => "not_acceptable",
            Self::Conflict => "conflict",
            Self::BadMessage => "bad_message",
            Self::Other => "other",
        }
    }

    /// The status this refusal is answered with (`0` for [`Other`](Self::Other)).
    pub(in crate::http) fn status(self) -> u16 {
        match self {
            Self::PathNotFound | Self::NotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::OriginNotAllowed | Self::HostNotAllowed | Self::OriginHostNotAllowed | Self::Forbidden => {
                403
            }
            Self::Malformed | Self::TokenMalformed | Self::BadMessage => 400,
            Self::HeadTooLarge | Self::TooManyHeaders => 431,
            Self::BodyTooLarge => 413,
            Self::VersionNotSupported => 505,
            Self::HeadTimeout | Self::BodyTimeout => 408,
            Self::AuthFailures
            | Self::RateLimited
            | Self::TooManySessions
            | Self::TooManyStreams
            | Self::TooManyInFlight => 429,
            Self::TokenMissing | Self::Unauthenticated => 401,
            Self::AuthorizerFailed => 500,
            Self::Unavailable => 503,
            Self::NotAcceptable => 406,
            Self::Conflict => 409,
            Self::Other => 0,
        }
    }

    /// The reason of a response with `status` written where the engine had no more
    /// precise one (a response after the body was read).
    pub(in crate::http) fn of_status(status: u16) -> Self {
        match status {
            400 => Self::BadMessage,
            401 => Self::Unauthenticated,
            403 => Self::Forbidden,
            404 => Self::NotFound,
            405 => Self::MethodNotAllowed,
            406 => Self::NotAcceptable,
            408 => Self::BodyTimeout,
            409 => Self::Conflict,
            413 => Self::BodyTooLarge,
            429 => Self::RateLimited,
            431 => Self::HeadTooLarge,
            500 => Self::AuthorizerFailed,
            503 => Self::Unavailable,
            505 => Self::VersionNotSupported,
            _ => Self::Other,
        }
    }
}

impl core::fmt::Display for Refusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.reason())
    }
}

impl From<HttpError> for Refusal {
    fn from(e: HttpError) -> Self {
        match e {
            HttpError::BadRequest => Self::Malformed,
            HttpError::HeadTooLarge => Self::HeadTooLarge,
            HttpError::TooManyHeaders => Self::TooManyHeaders,
            HttpError::BodyTooLarge => Self::BodyTooLarge,
            HttpError::UnsupportedVersion => Self::VersionNotSupported,
        }
    }
}

impl From<Challenge> for Refusal {
    fn from(c: Challenge) -> Self {
        let r = match c {
            Challenge::Missing => Self::TokenMissing,
            Challenge::InvalidRequest => Self::TokenMalformed,
            Challenge::InvalidToken => Self::Unauthenticated,
            Challenge::InsufficientScope => Self::Forbidden,
        };
        // The challenge's status is the refusal's.
        debug_assert_eq!(r.status(), c.status());
        r
    }
}

/// What a request is answered before its body is read: a refusal, or a CORS preflight's
/// `204` (which ends the exchange the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::http) enum Early {
    Refused(Refusal),
    Preflight,
}

impl From<Refusal> for Early {
    fn from(r: Refusal) -> Self {
        Self::Refused(r)
    }
}

impl From<HttpError> for Early {
    fn from(e: HttpError) -> Self {
        Self::Refused(e.into())
    }
}

/// One refused request, as [`HttpEngine::poll_refusal`](crate::http::HttpEngine::poll_refusal) gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refused {
    /// The connection (or embedded exchange) it came on.
    pub conn: ConnId,
    /// Why.
    pub refusal: Refusal,
    /// The status it was answered with.
    pub status: u16,
    /// The client's address: the peer's, or what a trusted proxy forwarded.
    pub client: Option<IpAddr>,
}

/// How many requests were refused, per reason, since the engine started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefusalCounts {
    counts: [u64; Refusal::ALL.len()],
}

impl RefusalCounts {
    /// Refusals for `refusal`.
    pub fn get(&self, refusal: Refusal) -> u64 {
        self.counts[refusal.index()]
    }
    /// Refusals of every reason.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
    /// Each reason with its count (zeros included), in [`Refusal::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Refusal, u64)> + '_ {
        Refusal::ALL.iter().map(|&r| (r, self.counts[r.index()]))
    }
}

/// The engine's refusals: counts, and the latest ones for the adapter to log.
pub(in crate::http) struct RefusalLog {
    counts: RefusalCounts,
    queue: std::collections::VecDeque<Refused>,
}

impl Default for RefusalLog {
    fn default() -> Self {
        Self {
            counts: RefusalCounts::default(),
            queue: std::collections::VecDeque::with_capacity(REFUSALS_KEPT),
        }
    }
}

impl RefusalLog {
    /// Moves the refusal noted on `c` (connection `slot`), if any, into the log. Called
    /// wherever the engine looks at a connection: the common case, nothing noted, is one
    /// check.
    #[inline]
    pub(in crate::http) fn collect(&mut self, slot: u32, c: &mut Exchange) {
        if let Some((refusal, status)) = c.refused.take() {
            let conn = ConnId { slot, generation: c.generation };
            self.record(Refused { conn, refusal, status, client: c.client });
        }
    }

    #[cold]
    fn record(&mut self, r: Refused) {
        self.counts.counts[r.refusal.index()] += 1;
        if self.queue.len() == REFUSALS_KEPT {
            self.queue.pop_front();
        }
        self.queue.push_back(r);
    }

    /// The oldest refusal kept, taken.
    pub(in crate::http) fn next(&mut self) -> Option<Refused> {
        self.queue.pop_front()
    }

    /// The counts per reason.
    pub(in crate::http) fn counts(&self) -> &RefusalCounts {
        &self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::Refusal;

    #[test]
    fn all_is_in_index_order_and_names_are_distinct() {
        for (i, r) in Refusal::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
            assert!(!r.reason().is_empty());
        }
        let mut names: Vec<&str> = Refusal::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Refusal::ALL.len());
    }

    #[test]
    fn a_status_maps_back_to_a_reason_of_that_status() {
        for r in Refusal::ALL {
            if r != Refusal::Other {
                assert_eq!(Refusal::of_status(r.status()).status(), r.status(), "{r:?}");
            }
        }
        assert_eq!(Refusal::of_status(418), Refusal::Other);
    }
}
