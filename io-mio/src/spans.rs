//! The request spans (feature `tracing`): one `tracing` span per request, named and
//! attributed as OpenTelemetry's MCP conventions say by the mapping the tokio adapter
//! shares (crate `mcp-spans`), on top of what the engine exposes:
//!
//! - a request handed to the host: the span is made from the event's
//!   [`RequestInfo`](mcp_engine::event::RequestInfo) before the host callback, entered while the
//!   callback runs (spans the host makes there are its children), and, when a subscriber
//!   wants it, kept by the event's ticket until the engine reports the host's answer
//!   ([`Observer::poll_answered`](mcp_engine::observe::Observer::poll_answered), turned on here with [`Observer::record_answers`](mcp_engine::observe::Observer::record_answers)): then it
//!   gets the outcome's `error.type` and closes. A cancellation closes it with
//!   `error.type` `cancelled`;
//! - a request (or notification) the engine answered itself: the span of its record
//!   ([`Observer::poll_served`](mcp_engine::observe::Observer::poll_served)), made and closed at once.
//!
//! The client's `traceparent` is recorded as the plain fields `parent.*` (this adapter has
//! no OpenTelemetry parent); no argument, uri (unless the host opts in), cursor, token,
//! `requestState`, `tracestate` or `baggage` is recorded. With no subscriber, nothing is
//! kept and nothing allocated. Without the feature this module is a no-op of the same
//! shape. No metrics: see `docs/observability.md`.

#[cfg(feature = "tracing")]
use std::collections::VecDeque;

use mcp_engine::Commands;
use mcp_engine::Event;
#[cfg(feature = "tracing")]
use mcp_engine::Ticket;
#[cfg(feature = "tracing")]
use mcp_spans::{Attributes, StatusCodeKey, Verdict, Wire};
#[cfg(feature = "tracing")]
use tracing::Span;

/// Spans kept for requests the host has not answered yet, at most: past that, the
/// oldest is closed without an outcome (a host that keeps that many tickets is rare).
#[cfg(feature = "tracing")]
const MAX_OPEN: usize = 4096;

/// The open request spans of one server, and what they record.
pub(crate) struct Spans {
    #[cfg(feature = "tracing")]
    open: VecDeque<(Ticket, Span)>,
    #[cfg(feature = "tracing")]
    wire: Wire,
    #[cfg(feature = "tracing")]
    pub(crate) resource_uri: bool,
    #[cfg(feature = "tracing")]
    pub(crate) status_code: StatusCodeKey,
}

/// Turns on `engine`'s records of the host's answers, which close the spans (feature
/// `tracing`; else nothing).
pub(crate) fn keep_answers(engine: &mut impl Commands) {
    #[cfg(feature = "tracing")]
    engine.observe().record_answers(true);
    #[cfg(not(feature = "tracing"))]
    let _ = engine;
}

/// The span options of a server (feature `tracing`), as methods of its type: both
/// servers have them, on their `spans` field.
macro_rules! span_options {
    () => {
        /// Records the full uri of each `resources/read` as `mcp.resource.uri` on its
        /// span (feature `tracing`; off by default: a uri can carry what the client sent,
        /// and it is high-cardinality).
        #[cfg(feature = "tracing")]
        pub fn record_resource_uri(&mut self, on: bool) {
            self.spans.resource_uri = on;
        }

        /// The attribute name(s) the spans record a JSON-RPC error code under (feature
        /// `tracing`; default `rpc.response.status_code`).
        #[cfg(feature = "tracing")]
        pub fn status_code_key(&mut self, key: mcp_spans::StatusCodeKey) {
            self.spans.status_code = key;
        }
    };
}
pub(crate) use span_options;

impl Spans {
    /// The spans of a server over stdio (`http` false) or HTTP/1.1 over TCP.
    pub(crate) fn new(http: bool) -> Self {
        #[cfg(not(feature = "tracing"))]
        let _ = http;
        Self {
            #[cfg(feature = "tracing")]
            open: VecDeque::new(),
            #[cfg(feature = "tracing")]
            wire: if http { Wire::HTTP1 } else { Wire::PIPE },
            #[cfg(feature = "tracing")]
            resource_uri: false,
            #[cfg(feature = "tracing")]
            status_code: StatusCodeKey::default(),
        }
    }

    /// Hands `event` to `host` inside its request's span; a cancellation closes the
    /// cancelled request's span.
    pub(crate) fn call<R>(&mut self, event: Event<'_>, host: impl FnOnce(Event<'_>) -> R) -> R {
        #[cfg(feature = "tracing")]
        {
            let ticket = event.ticket();
            let Some(attrs) = Attributes::of_event(&event, self.resource_uri) else {
                self.close(ticket, Verdict::Cancelled);
                return host(event);
            };
            let span = mcp_spans::request_span!(&attrs, self.wire);
            if span.is_disabled() {
                return host(event);
            }
            mcp_spans::record_parent(&span, attrs.parent);
            let r = span.in_scope(|| host(event));
            if self.open.len() >= MAX_OPEN {
                self.open.pop_front();
            }
            self.open.push_back((ticket, span));
            r
        }
        #[cfg(not(feature = "tracing"))]
        host(event)
    }

    /// Closes the span of every request the host answered since the last call, with its
    /// outcome, and makes (and closes) the span of every request the engine answered
    /// itself.
    pub(crate) fn drain(&mut self, engine: &mut impl Commands) {
        #[cfg(feature = "tracing")]
        {
            while let Some(a) = engine.observe().poll_answered() {
                self.close(a.ticket(), Verdict::of(a.is_tool_error(), a.error_code()));
            }
            while let Some(s) = engine.observe().poll_served() {
                let attrs = Attributes::of_served(&s);
                let span = mcp_spans::request_span!(&attrs, self.wire);
                mcp_spans::record_parent(&span, attrs.parent);
                mcp_spans::record_outcome(
                    &span,
                    Verdict::of(s.is_tool_error(), s.error_code()),
                    self.status_code,
                );
            }
        }
        #[cfg(not(feature = "tracing"))]
        let _ = engine;
    }

    /// Logs every request the HTTP engine refused since the last call at `DEBUG`, with its
    /// reason (`mcp_spans::refused!`, target `mcp_io_mio::spans`; feature `tracing`).
    /// Without the feature they stay in the engine for the host
    /// ([`HttpEngine::poll_refusal`](mcp_engine::http::HttpEngine::poll_refusal)).
    pub(crate) fn refusals(&mut self, engine: &mut mcp_engine::http::HttpEngine) {
        #[cfg(feature = "tracing")]
        while let Some(r) = engine.poll_refusal() {
            mcp_spans::refused!(&r);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = engine;
    }

    /// Records `verdict` on `ticket`'s open span and closes it.
    #[cfg(feature = "tracing")]
    fn close(&mut self, ticket: Ticket, verdict: Verdict) {
        if let Some(at) = self.open.iter().position(|(t, _)| *t == ticket)
            && let Some((_, span)) = self.open.remove(at)
        {
            mcp_spans::record_outcome(&span, verdict, self.status_code);
        }
    }
}
