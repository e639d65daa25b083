//! One exchange per connection: the phase machine's state, the refusals decided on a
//! request head before dispatch (path, method, `Origin`, `Host`), and how a response is
//! written and the connection finished.

use core::net::SocketAddr;

use crate::http::auth::Principal;
use crate::http::config::{AllowedOrigins, HttpConfig};
use crate::time::Instant;
use crate::wire::http1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting for a request head.
    Head,
    /// The host decides on the head.
    Authorizing,
    /// Reading the body (deadline armed).
    Body,
    /// The host decides on the body.
    AuthorizingBody,
    /// The body is read and allowed; it waits for a free ticket slot to be dispatched.
    Ready,
    /// A ticket is outstanding; its answer is the response.
    Waiting,
    /// A final response was written; the connection closes once it is sent.
    Closing,
}

pub(super) struct Exchange {
    pub(super) generation: u32,
    pub(super) codec: http1::Conn,
    pub(super) peer: Option<SocketAddr>,
    pub(super) out: Vec<u8>,
    pub(super) phase: Phase,
    /// Keep the connection after this request's response.
    pub(super) keep_alive: bool,
    /// The client waits for `100 Continue` before it sends the body.
    pub(super) expect_continue: bool,
    /// The request came as HTTP/1.0 (no chunked responses: no streams).
    pub(super) http10: bool,
    /// The response is an SSE stream: its head and earlier events are written.
    pub(super) streaming: bool,
    /// A listen stream that could not take its notifications: close it now.
    pub(super) dropped: bool,
    /// The principal the host's authorization named for the current request.
    pub(super) principal: Option<Principal>,
    /// A listen stream: when to write a keep-alive comment if nothing else is written.
    pub(super) keepalive: Option<Instant>,
    pub(super) deadline: Option<Instant>,
}

pub(super) struct ConnSlot {
    pub(super) generation: u32,
    pub(super) conn: Option<Exchange>,
}

pub(super) fn trim_newline(msg: &[u8]) -> &[u8] {
    msg.strip_suffix(b"\n").unwrap_or(msg)
}

/// The refusals decided on a request head, before its body is read.
pub(super) fn check_head(
    http: &HttpConfig,
    head: &http1::Head<'_>,
) -> Option<(u16, &'static [(&'static str, &'static str)])> {
    let path = head.path.split('?').next().unwrap_or(head.path);
    if path != http.endpoint {
        return Some((404, &[]));
    }
    if head.method != "POST" {
        return Some((405, &[("allow", "POST")]));
    }
    let headers = head.headers;
    let header = move |name: &'static str| {
        headers.iter().filter(move |h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    };
    if let AllowedOrigins::List(list) = &http.origins {
        for origin in header("origin") {
            let ok = core::str::from_utf8(origin).is_ok_and(|o| list.iter().any(|a| a == o.trim()));
            if !ok {
                return Some((403, &[]));
            }
        }
    }
    if http.loopback {
        let mut hosts = header("host").peekable();
        if hosts.peek().is_none() {
            return Some((403, &[]));
        }
        for host in hosts {
            if !is_loopback_host(host) {
                return Some((403, &[]));
            }
        }
        // A browser on a rebinding page sends its own origin: it must be loopback too.
        if http.origins == AllowedOrigins::Any {
            for origin in header("origin") {
                if !is_loopback_origin(origin) {
                    return Some((403, &[]));
                }
            }
        }
    }
    None
}

/// `localhost`, `127.0.0.1` or `[::1]`, with an optional port.
pub(super) fn is_loopback_host(host: &[u8]) -> bool {
    let host = host.trim_ascii();
    let name = if host.starts_with(b"[") {
        match host.iter().position(|&b| b == b']') {
            Some(end) => {
                let rest = &host[end + 1..];
                if !(rest.is_empty() || rest.starts_with(b":") && rest[1..].iter().all(u8::is_ascii_digit)) {
                    return false;
                }
                &host[..=end]
            }
            None => return false,
        }
    } else {
        match host.iter().position(|&b| b == b':') {
            Some(colon) => {
                if !host[colon + 1..].iter().all(u8::is_ascii_digit) {
                    return false;
                }
                &host[..colon]
            }
            None => host,
        }
    };
    name.eq_ignore_ascii_case(b"localhost") || name == b"127.0.0.1" || name == b"[::1]"
}

/// An `Origin` whose host is loopback (`http://localhost:3000`).
pub(super) fn is_loopback_origin(origin: &[u8]) -> bool {
    let origin = origin.trim_ascii();
    let rest = origin.strip_prefix(b"http://").or_else(|| origin.strip_prefix(b"https://")).unwrap_or(b"");
    !rest.is_empty() && !rest.contains(&b'/') && is_loopback_host(rest)
}

/// The head is accepted: read the body (telling a client that waits for it to send).
pub(super) fn start_body(c: &mut Exchange) {
    c.phase = Phase::Body;
    if c.expect_continue {
        c.expect_continue = false;
        http1::write_100_continue(&mut c.out);
    }
}

/// A refusal issued before the body is read: `connection: close`, and the connection
/// ends once it is sent (the unread body is never drained on behalf of a refused caller).
pub(super) fn refuse(c: &mut Exchange, status: u16, extra: &[(&str, &str)]) {
    http1::write_head(&mut c.out, status, http1::status_reason(status), None, Some(0), extra, true);
    c.phase = Phase::Closing;
    c.keep_alive = false;
    c.deadline = None;
}

/// A response without body after the body was read: the connection survives unless the
/// client asked to close it.
pub(super) fn respond_empty(c: &mut Exchange, status: u16, extra: &[(&str, &str)]) {
    let close = !c.keep_alive;
    http1::write_head(&mut c.out, status, http1::status_reason(status), None, Some(0), extra, close);
    finish(c, close);
}

pub(super) fn respond_json(c: &mut Exchange, status: u16, body: &[u8]) {
    let close = !c.keep_alive;
    http1::write_head(
        &mut c.out,
        status,
        http1::status_reason(status),
        Some("application/json"),
        Some(body.len()),
        &[],
        close,
    );
    c.out.extend_from_slice(body);
    finish(c, close);
}

pub(super) fn finish(c: &mut Exchange, close: bool) {
    c.codec.finish_request();
    c.deadline = None;
    c.keepalive = None;
    c.phase = if close { Phase::Closing } else { Phase::Head };
}
