//! Telemetry: one `tracing` span per request (this module) and, with feature `otel`,
//! OpenTelemetry (`otel`: the client's context as the parent, the histograms, OTLP export).
//!
//! One `tracing` span per request, named and attributed as OpenTelemetry's semantic
//! conventions for MCP say (`docs/observability.md`): made where the run loop hands an
//! event to a worker, entered while the handler runs, given the outcome's `error.type`
//! when the reply comes back, and closed once the answer is written.
//!
//! The span's name and attributes come from the mapping both adapters share
//! (`mcp_spans`). It is at level `INFO`, target `mcp_io_tokio::telemetry`. Its name is the
//! method (`tracing` span names are static); the conventions' name, `{method} {target}`,
//! is the `otel.name` field, which `tracing-opentelemetry` takes as the span's name, and
//! `otel.kind` is `server`. Every field is formatted lazily: with no subscriber (or one
//! that does not want the span) nothing is evaluated and nothing is allocated.
//!
//! Requests the engine answers itself (lists, `ping`, `initialize`, refusals) and the
//! notifications it acts on get the same span, made and closed when the run loop drains
//! the engine's records of them (`served`; `mcp_engine::observe::Observer::poll_served`), named by
//! the engine's name for the method (`mcp`, without `mcp.method.name`, for one it does
//! not serve).
//!
//! With feature `otel` (the `otel` module) each span's parent is the client's context and
//! the duration histograms are recorded when the host gave a meter
//! (`Telemetry::meter`).
//!
//! Never recorded: argument values, `requestState`, `inputResponses`, cursors, tokens,
//! `tracestate`, `baggage`, error messages; a resource's uri only when the host opts in
//! ([`Telemetry::resource_uri`]).

use mcp_engine::Commands;
use mcp_engine::http::{HttpEngine, Refusal};
use mcp_engine::observe::{Served, TraceContext};
use mcp_engine::{Event, Instant, Revision};
use mcp_spans::Attributes;
pub use mcp_spans::StatusCodeKey;
pub(crate) use mcp_spans::{Verdict, Wire};
use tracing::Span;

#[cfg(feature = "otel")]
pub mod otel;

use crate::host::channel::Outcome;
use crate::host::reply::{HostFailure, ResourceReply, ToolReply};

/// What the request spans of a server record beyond the default (see
/// [`HttpServer::telemetry`](crate::HttpServer::telemetry)). The default records no value
/// that came from the client other than the names the catalog declares, the request id,
/// the session id and the trace context's ids.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Telemetry {
    /// Record `mcp.resource.uri`, the full uri of a `resources/read` (off by default: a
    /// uri can carry what the client sent, and it is high-cardinality).
    pub resource_uri: bool,
    /// The attribute name(s) of a JSON-RPC error code ([`Telemetry::status_code_key`]).
    pub status_code: StatusCodeKey,
    /// The duration histograms (feature `otel`, [`Telemetry::meter`]).
    #[cfg(feature = "otel")]
    pub(crate) metrics: Option<otel::Metrics>,
}

impl Telemetry {
    /// The default: no uri.
    pub fn new() -> Self {
        Self::default()
    }
    /// Records the full uri of each `resources/read` as `mcp.resource.uri` (on the span;
    /// never on a metric point).
    pub fn resource_uri(mut self, on: bool) -> Self {
        self.resource_uri = on;
        self
    }

    /// Records a JSON-RPC error code under `key`'s name(s), on spans and metric points:
    /// `rpc.response.status_code` (the default, as the pinned conventions say),
    /// `rpc.status_code` (the core conventions' newer name), or both.
    pub fn status_code_key(mut self, key: StatusCodeKey) -> Self {
        self.status_code = key;
        #[cfg(feature = "otel")]
        if let Some(metrics) = &mut self.metrics {
            metrics.key = key;
        }
        self
    }

    /// Records `mcp.server.operation.duration` and `mcp.server.session.duration` with
    /// `meter` (feature `otel`): histograms in seconds, with the conventions' attributes and
    /// bucket boundaries ([`DURATION_BUCKETS`](crate::telemetry::otel::DURATION_BUCKETS)).
    #[cfg(feature = "otel")]
    pub fn meter(mut self, meter: &opentelemetry::metrics::Meter) -> Self {
        self.metrics = Some(otel::Metrics::new(meter, self.status_code));
        self
    }
}

/// The span of `event`'s request (a disabled span for a cancellation, or when nothing
/// listens), made by the shared mapping (`mcp_spans`). With feature `otel`, its parent is
/// the client's context; without it (or with no OpenTelemetry layer) the client's ids
/// are the plain `parent.*` fields.
pub(crate) fn request_span(event: &Event<'_>, wire: Wire, telemetry: &Telemetry) -> Span {
    let (Some(attrs), Some(info)) = (Attributes::of_event(event, telemetry.resource_uri), event.request())
    else {
        return Span::none();
    };
    let span = mcp_spans::request_span!(&attrs, wire);
    parent(&span, &info.trace);
    span
}

/// Makes the client's context the span's parent (feature `otel`, with an OpenTelemetry
/// layer), else records its ids as plain fields.
fn parent(span: &Span, trace: &TraceContext<'_>) {
    #[cfg(feature = "otel")]
    if otel::set_parent(span, trace) {
        return;
    }
    mcp_spans::record_parent(span, trace.parent());
}

/// The span of a request the engine answered itself, closed at once.
fn served_span(s: &Served<'_>, wire: Wire) -> Span {
    let attrs = Attributes::of_served(s);
    let span = mcp_spans::request_span!(&attrs, wire);
    parent(&span, &TraceContext::new(attrs.parent, None, None));
    span
}

/// What a run loop keeps between its records: the sessions it times for
/// `mcp.server.session.duration` (feature `otel`), and the refusals it has counted.
#[derive(Default)]
pub(crate) struct SessionClock {
    #[cfg(feature = "otel")]
    sessions: otel::Sessions,
    /// The engine's refusal counts when last looked at, by `Refusal::index`.
    refused: [u64; Refusal::ALL.len()],
}

/// Makes the span (and, with feature `otel` and a meter, the metric point) of every
/// request `engine` answered itself since the last call, and the points of the sessions
/// that ended (over HTTP; none over stdio). `received` is when the adapter read the input
/// they came in (the engine's time): a request's duration runs from there to the engine's
/// answer.
pub(crate) fn served(
    engine: &mut impl Commands,
    wire: Wire,
    telemetry: &Telemetry,
    received: Instant,
    clock: &mut SessionClock,
) {
    while let Some(s) = engine.observe().poll_served() {
        let span = served_span(&s, wire);
        let verdict = Verdict::of(s.is_tool_error(), s.error_code());
        mcp_spans::record_outcome(&span, verdict, telemetry.status_code);
        #[cfg(feature = "otel")]
        if let Some(metrics) = &telemetry.metrics {
            metrics.served(&s, verdict, wire, s.at().saturating_duration_since(received));
            if s.method() == Some("initialize") && verdict == Verdict::Ok {
                clock.sessions.opened(s.session_id(), s.at(), s.revision());
            }
        }
    }
    while let Some(end) = engine.observe().poll_session_end() {
        #[cfg(feature = "otel")]
        if let Some(metrics) = &telemetry.metrics
            && let Some((revision, took)) = clock.sessions.ended(Some(end.id()), end.at())
        {
            metrics.session_ended(revision, wire, took);
        }
        #[cfg(not(feature = "otel"))]
        let _ = end;
    }
    #[cfg(not(feature = "otel"))]
    let _ = (telemetry, received, clock);
}

/// Logs every request `engine` refused since the last call at `DEBUG` with its reason
/// (`mcp_spans::refused!`, target `mcp_io_tokio::telemetry`), and with feature `otel` and
/// a meter counts them by reason in `mcp.server.http.refusals` (from the engine's counts:
/// exact even when more were refused than the engine keeps for the log).
/// Called after [`served`] by the HTTP run loops (stdio refuses nothing this way).
pub(crate) fn refusals(engine: &mut HttpEngine, telemetry: &Telemetry, clock: &mut SessionClock) {
    let mut logged = 0u64;
    while let Some(r) = engine.poll_refusal() {
        mcp_spans::refused!(&r);
        logged += 1;
    }
    if logged == 0 {
        return;
    }
    let mut refused = 0;
    for (refusal, n) in engine.refusal_counts().iter() {
        let seen = &mut clock.refused[refusal.index()];
        let more = n.saturating_sub(*seen);
        *seen = n;
        refused += more;
        #[cfg(feature = "otel")]
        if more > 0
            && let Some(metrics) = &telemetry.metrics
        {
            metrics.refused(refusal, more);
        }
    }
    if refused > logged {
        tracing::debug!(
            not_logged = refused - logged,
            "more requests refused than the engine keeps for the log"
        );
    }
    #[cfg(not(feature = "otel"))]
    let _ = telemetry;
}

/// The stream a run loop served ended at `now`: the point of its session, if it opened
/// one (feature `otel`, with a meter).
pub(crate) fn stream_ended(wire: Wire, telemetry: &Telemetry, now: Instant, clock: &mut SessionClock) {
    #[cfg(feature = "otel")]
    if let Some(metrics) = &telemetry.metrics
        && let Some((revision, took)) = clock.sessions.ended(None, now)
    {
        metrics.session_ended(revision, wire, took);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (wire, telemetry, now, clock);
}

/// The JSON-RPC error code a host failure is answered with.
pub(crate) fn code_of(failure: &HostFailure, resource: bool, revision: Revision) -> i32 {
    match failure {
        HostFailure::NotFound if resource && !revision.is_stateless() => -32002,
        HostFailure::NotFound | HostFailure::InvalidParams(_) => -32602,
        HostFailure::Internal(_) => -32603,
    }
}

/// The outcome's verdict: `tool_error` for a tool result with `isError: true`, the
/// JSON-RPC code for an error answer, `-32603` for a handler that ended without a reply.
/// `revision` is the request's.
pub(crate) fn verdict(outcome: &Outcome, revision: Revision) -> Verdict {
    match outcome {
        Outcome::Tool(Ok(ToolReply { is_error: true, input_required: None, .. })) => Verdict::ToolError,
        Outcome::Resource(Ok(ResourceReply::NotFound)) => {
            Verdict::Code(code_of(&HostFailure::NotFound, true, revision))
        }
        Outcome::Resource(Err(f)) => Verdict::Code(code_of(f, true, revision)),
        Outcome::Tool(Err(f)) | Outcome::Prompt(Err(f)) | Outcome::Complete(Err(f)) => {
            Verdict::Code(code_of(f, false, revision))
        }
        Outcome::Dropped => Verdict::Code(-32603),
        _ => Verdict::Ok,
    }
}

/// Records what a handler's outcome makes of the request (see [`verdict`]).
pub(crate) fn record_outcome(span: &Span, verdict: Verdict, telemetry: &Telemetry) {
    mcp_spans::record_outcome(span, verdict, telemetry.status_code);
}

#[cfg(feature = "otel")]
impl otel::Otel {
    /// What a server records with this exporter: the default [`Telemetry`] with the
    /// histograms on this exporter's meter.
    pub fn telemetry(&self) -> Telemetry {
        Telemetry::new().meter(&self.meter())
    }
}
