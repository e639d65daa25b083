//! The host's verdicts on a request ([`HttpEvent::Authorize`] on its head,
//! [`HttpEvent::AuthorizeBody`] on its body), and what each leads to: the body read, the
//! request served, or the refusal (`401` / `403` with a protected resource's challenge,
//! `500`, `503`); failed authentications counted for the client's rate.

use crate::http::auth::authorize::Verdict;
use crate::http::auth::limits::Limiter;
use crate::http::auth::resource::{Challenge, ProtectedResource};
use crate::http::config::HttpConfig;
use crate::http::conn::conns;
use crate::http::conn::exchange::{Exchange, Phase, refuse, respond_empty, start_body};
use crate::http::conn::refusal::Refusal;
use crate::mcp::scopes::ScopeSet;
use crate::time::{Instant, UnixTime};

#[cfg(doc)]
use crate::http::HttpEvent;

/// What a verdict needs beside its exchange: the settings (the body's deadline, the
/// protected resource, the limits), the rate limiter that counts failed authentications,
/// and the pool of output buffers a refusal writes into.
pub(in crate::http) struct Gate<'a> {
    pub(in crate::http) http: &'a HttpConfig,
    pub(in crate::http) limiter: &'a mut Limiter,
    pub(in crate::http) outs: &'a mut Vec<Vec<u8>>,
}

impl Gate<'_> {
    /// Applies an [`HttpEvent::Authorize`] to `c` at `now`: `None` if `c` waits for no
    /// verdict on its head; else whether its body is to be read now (the request goes to
    /// work), `false` when it was refused (the connection ends).
    pub(in crate::http) fn head(&mut self, c: &mut Exchange, now: Instant, verdict: Verdict) -> Option<bool> {
        if c.phase != Phase::Authorizing {
            return None;
        }
        c.principal = verdict.principal();
        c.grant = granted(verdict);
        conns::lend_out(self.outs, c);
        if matches!(verdict, Verdict::Unauthenticated | Verdict::Forbidden) {
            self.limiter.failed(&self.http.limits, c.client, now);
        }
        match verdict {
            Verdict::Allow | Verdict::AllowAs(_) | Verdict::Grant(_) => {
                // The deadline counts from the request's first byte; the host's time to
                // decide is not the client's fault, so it starts again for the body.
                start_body(c, now);
                c.deadline = Some(now + self.http.body_deadline);
                return Some(true);
            }
            // Refused before the body is read: the connection ends.
            Verdict::Unauthenticated | Verdict::Forbidden if self.http.protected.is_some() => {
                challenge(c, self.http.protected.as_ref(), verdict);
                let why =
                    if verdict == Verdict::Forbidden { Refusal::Forbidden } else { Refusal::Unauthenticated };
                refuse(c, now, why, &[]);
            }
            Verdict::Unauthenticated => {
                refuse(c, now, Refusal::Unauthenticated, &[("www-authenticate", "Bearer")])
            }
            Verdict::Forbidden => refuse(c, now, Refusal::Forbidden, &[]),
            Verdict::Failed => refuse(c, now, Refusal::AuthorizerFailed, &[]),
            Verdict::Unavailable => refuse(c, now, Refusal::Unavailable, &[("retry-after", "1")]),
        }
        Some(false)
    }

    /// Applies an [`HttpEvent::AuthorizeBody`] to `c` at `now`: whether `c` waited for it
    /// (then the request goes to work: served, or its refusal sent). A refusal here keeps
    /// the connection: the body was read, so the next request can follow.
    pub(in crate::http) fn body(&mut self, c: &mut Exchange, now: Instant, verdict: Verdict) -> bool {
        if c.phase != Phase::AuthorizingBody {
            return false;
        }
        if let Some(p) = verdict.principal() {
            c.principal = Some(p);
        }
        // The body's verdict narrows the head's: a grant replaces it, a plain allow keeps it.
        if let Verdict::Grant(_) = verdict {
            c.grant = granted(verdict);
        }
        conns::lend_out(self.outs, c);
        if matches!(verdict, Verdict::Unauthenticated | Verdict::Forbidden) {
            self.limiter.failed(&self.http.limits, c.client, now);
        }
        match verdict {
            Verdict::Allow | Verdict::AllowAs(_) | Verdict::Grant(_) => c.phase = Phase::Ready,
            Verdict::Unauthenticated | Verdict::Forbidden if self.http.protected.is_some() => {
                challenge(c, self.http.protected.as_ref(), verdict);
                respond_empty(c, now, if verdict == Verdict::Forbidden { 403 } else { 401 }, &[]);
            }
            Verdict::Unauthenticated => respond_empty(c, now, 401, &[("www-authenticate", "Bearer")]),
            Verdict::Forbidden => respond_empty(c, now, 403, &[]),
            Verdict::Failed => respond_empty(c, now, 500, &[]),
            Verdict::Unavailable => respond_empty(c, now, 503, &[("retry-after", "1")]),
        }
        true
    }
}

/// What a verdict that allows grants: the scopes and expiry of a [`Verdict::Grant`],
/// nothing for `Allow` and `AllowAs` (the scope policy then lets through only what
/// requires no scope).
fn granted(verdict: Verdict) -> Option<(ScopeSet, Option<UnixTime>)> {
    match verdict {
        Verdict::Grant(g) => Some((g.scopes, g.expires)),
        _ => Some((ScopeSet::EMPTY, None)),
    }
}

/// Puts on `c`'s response the challenge of a protected resource for the host's refusal
/// of a request that presented a token: `invalid_token`, or `insufficient_scope`.
fn challenge(c: &mut Exchange, protected: Option<&ProtectedResource>, verdict: Verdict) {
    let kind =
        if verdict == Verdict::Forbidden { Challenge::InsufficientScope } else { Challenge::InvalidToken };
    c.challenge = protected.map(|p| std::sync::Arc::clone(p.challenge(kind)));
}
