//! One `tracing` span per request, named and attributed as OpenTelemetry's semantic
//! conventions for MCP say (`docs/observability.md`): made where the run loop hands an
//! event to a worker, entered while the handler runs, given the outcome's `error.type`
//! when the reply comes back, and closed once the answer is written.
//!
//! The span is at level `INFO`, target `mcp_io_tokio::telemetry`. Its name is the
//! method (`tracing` span names are static); the conventions' name, `{method} {target}`,
//! is the `otel.name` field, which `tracing-opentelemetry` takes as the span's name, and
//! `otel.kind` is `server`. Every field is formatted lazily: with no subscriber (or one
//! that does not want the span) nothing is evaluated and nothing is allocated.
//!
//! Requests the engine answers itself (lists, `ping`, `initialize`, refusals) get the
//! same span, made and closed when the run loop drains the engine's records of them
//! (`served`; `mcp_engine::Engine::poll_served`), named by the engine's name for the
//! method (`_OTHER` for one it does not serve).
//!
//! With feature `otel` (the `otel` module) each span's parent is the client's context and
//! the duration histograms are recorded when the host gave a meter
//! ([`Telemetry::meter`]).
//!
//! Never recorded: argument values, `requestState`, `inputResponses`, cursors, tokens,
//! `tracestate`, `baggage`, error messages; a resource's uri only when the host opts in
//! ([`Telemetry::resource_uri`]), its scheme otherwise.

use core::fmt;
use core::net::{IpAddr, SocketAddr};

use mcp_engine::{Event, Instant, RequestId, RequestInfo, Revision, Served, TraceParent};
use tracing::Span;
use tracing::field::{Empty, display};

use crate::channel::Outcome;
use crate::conventions::server_error;
pub(crate) use crate::conventions::{Verdict, Wire};
use crate::reply::{HostFailure, ResourceReply, ToolReply};

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
    /// The duration histograms (feature `otel`, [`Telemetry::meter`]).
    #[cfg(feature = "otel")]
    pub(crate) metrics: Option<crate::otel::Metrics>,
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

    /// Records `mcp.server.operation.duration` and `mcp.server.session.duration` with
    /// `meter` (feature `otel`): histograms in seconds, with the conventions' attributes and
    /// bucket boundaries ([`DURATION_BUCKETS`](crate::DURATION_BUCKETS)).
    #[cfg(feature = "otel")]
    pub fn meter(mut self, meter: &opentelemetry::metrics::Meter) -> Self {
        self.metrics = Some(crate::otel::Metrics::new(meter));
        self
    }
}

/// The conventions' span name: `{method} {target}`, or the method alone.
struct SpanName<'a>(&'static str, Option<&'a str>);

impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(target) => write!(f, "{} {target}", self.0),
            None => f.write_str(self.0),
        }
    }
}

/// The span of a request. `$name` is the method, as a literal (span names are static).
macro_rules! request_span {
    ($name:literal, $parts:expr, $wire:expr, tool = $tool:expr, prompt = $prompt:expr, uri = $uri:expr, scheme = $scheme:expr) => {{
        let parts: &Parts<'_> = $parts;
        let wire: Wire = $wire;
        let (tool, prompt): (Option<&str>, Option<&str>) = ($tool, $prompt);
        let parent = parts.parent;
        tracing::info_span!(
            $name,
            otel.name = %SpanName($name, tool.or(prompt)),
            otel.kind = "server",
            otel.status_code = Empty,
            mcp.method.name = $name,
            gen_ai.tool.name = tool,
            gen_ai.operation.name = tool.map(|_| "execute_tool"),
            gen_ai.prompt.name = prompt,
            mcp.resource.uri = $uri,
            url.scheme = $scheme,
            mcp.protocol.version = parts.revision.map(Revision::as_str),
            mcp.session.id = parts.session_id,
            jsonrpc.request.id = parts.id.map(display),
            network.transport = wire.transport,
            network.protocol.name = wire.protocol,
            network.protocol.version = wire.version,
            client.address = parts.client.map(display),
            client.port = parts.peer.filter(|p| Some(p.ip()) == parts.client).map(|p| p.port()),
            error.type = Empty,
            rpc.response.status_code = Empty,
            parent.trace_id = parent.map(|p| display(p.trace_id())),
            parent.span_id = parent.map(|p| display(p.parent_id())),
            parent.sampled = parent.map(|p| p.sampled()),
        )
    }};
}

/// What a request span records of its request beside the method and its target.
struct Parts<'a> {
    revision: Option<Revision>,
    id: Option<RequestId<'a>>,
    session_id: Option<&'a str>,
    peer: Option<SocketAddr>,
    client: Option<IpAddr>,
    parent: Option<TraceParent>,
}

impl<'a> Parts<'a> {
    fn of(info: &RequestInfo<'a>, revision: Revision) -> Self {
        Self {
            revision: Some(revision),
            id: Some(info.id),
            session_id: info.session_id,
            peer: info.peer,
            client: info.client,
            parent: info.trace.parent(),
        }
    }
}

/// The span of `event`'s request (a disabled span for a cancellation, or when nothing
/// listens). With feature `otel`, its parent is the client's context.
pub(crate) fn request_span(event: &Event<'_>, wire: Wire, telemetry: &Telemetry) -> Span {
    let (span, info) = match event {
        Event::CallTool(call) => (
            request_span!(
                "tools/call",
                &Parts::of(&call.request, call.revision),
                wire,
                tool = Some(call.tool.name.as_str()),
                prompt = None,
                uri = None::<&str>,
                scheme = None::<&str>
            ),
            &call.request,
        ),
        Event::GetPrompt(get) => (
            request_span!(
                "prompts/get",
                &Parts::of(&get.request, get.revision),
                wire,
                tool = None,
                prompt = Some(get.prompt.name.as_str()),
                uri = None::<&str>,
                scheme = None::<&str>
            ),
            &get.request,
        ),
        Event::ReadResource(read) => {
            let scheme = read.uri.split_once(':').map(|(s, _)| s);
            let span = request_span!(
                "resources/read",
                &Parts::of(&read.request, read.revision),
                wire,
                tool = None,
                prompt = None,
                uri = telemetry.resource_uri.then_some(read.uri),
                scheme = scheme
            );
            (span, &read.request)
        }
        Event::Complete(complete) => (
            request_span!(
                "completion/complete",
                &Parts::of(&complete.request, complete.revision),
                wire,
                tool = None,
                prompt = None,
                uri = None::<&str>,
                scheme = None::<&str>
            ),
            &complete.request,
        ),
        _ => return Span::none(),
    };
    #[cfg(feature = "otel")]
    crate::otel::set_parent(&span, &info.trace);
    #[cfg(not(feature = "otel"))]
    let _ = info;
    span
}

/// The span of a request the engine answered itself, closed at once: the method is
/// matched to its literal (span names are static), any other is `_OTHER`.
fn served_span(s: &Served<'_>, wire: Wire) -> Span {
    let parts = Parts {
        revision: s.revision(),
        id: s.id(),
        session_id: s.session_id(),
        peer: s.peer(),
        client: s.client(),
        parent: s.trace_parent(),
    };
    macro_rules! by_method {
        ($($name:literal),*) => {
            match s.method() {
                $($name => request_span!(
                    $name, &parts, wire, tool = s.tool(), prompt = s.prompt(), uri = None::<&str>, scheme = None::<&str>
                ),)*
                _ => request_span!(
                    "_OTHER", &parts, wire, tool = None, prompt = None, uri = None::<&str>, scheme = None::<&str>
                ),
            }
        };
    }
    let span = by_method!(
        "initialize",
        "ping",
        "logging/setLevel",
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "subscriptions/listen",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
        "tasks/result",
        "tasks/list"
    );
    #[cfg(feature = "otel")]
    crate::otel::set_parent(&span, &mcp_engine::TraceContext::new(parts.parent, None, None));
    span
}

/// The sessions a run loop times for `mcp.server.session.duration` (feature `otel`).
#[derive(Default)]
pub(crate) struct SessionClock {
    #[cfg(feature = "otel")]
    sessions: crate::otel::Sessions,
}

/// Makes the span (and, with feature `otel` and a meter, the metric point) of every
/// request `engine` answered itself since the last call, and the points of the sessions
/// that ended. `received` is when the adapter read the input they came in (the engine's
/// time): a request's duration runs from there to the engine's answer.
pub(crate) fn served(
    engine: &mut impl ServedBy,
    wire: Wire,
    telemetry: &Telemetry,
    received: Instant,
    clock: &mut SessionClock,
) {
    while let Some(s) = engine.poll_served() {
        let span = served_span(&s, wire);
        let verdict = match (s.is_tool_error(), s.error_code()) {
            (true, _) => Verdict::ToolError,
            (false, Some(code)) => Verdict::Code(code),
            (false, None) => Verdict::Ok,
        };
        record_outcome(&span, &verdict);
        #[cfg(feature = "otel")]
        if let Some(metrics) = &telemetry.metrics {
            metrics.served(&s, verdict, wire, s.at().saturating_duration_since(received));
            if s.method() == "initialize" && verdict == Verdict::Ok {
                clock.sessions.opened(s.session_id(), s.at(), s.revision());
            }
        }
    }
    while let Some(end) = engine.poll_session_end() {
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

/// The engines that record what they answered themselves.
pub(crate) trait ServedBy {
    fn poll_served(&mut self) -> Option<Served<'_>>;
    /// The next HTTP session that ended (a stream's ends with the stream).
    fn poll_session_end(&mut self) -> Option<mcp_engine::SessionEnd<'_>>;
}

impl ServedBy for mcp_engine::Engine {
    fn poll_served(&mut self) -> Option<Served<'_>> {
        Self::poll_served(self)
    }
    fn poll_session_end(&mut self) -> Option<mcp_engine::SessionEnd<'_>> {
        None
    }
}

impl ServedBy for mcp_engine::http::HttpEngine {
    fn poll_served(&mut self) -> Option<Served<'_>> {
        Self::poll_served(self)
    }
    fn poll_session_end(&mut self) -> Option<mcp_engine::SessionEnd<'_>> {
        Self::poll_session_end(self)
    }
}

/// Marks `span` failed with `error_type` (span status `ERROR`).
fn failed(span: &Span, error_type: impl tracing::Value) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

/// The JSON-RPC error code a host failure is answered with.
pub(crate) fn code_of(failure: &HostFailure, resource: bool, revision: Revision) -> i32 {
    match failure {
        HostFailure::NotFound if resource && !revision.is_stateless() => -32002,
        HostFailure::NotFound | HostFailure::InvalidParams(_) => -32602,
        HostFailure::Internal(_) => -32603,
    }
}

/// Records an error answer: the code, and, when it is the server's failure, `error.type`
/// the code too.
fn answered_with(span: &Span, code: i32) {
    span.record("rpc.response.status_code", display(code));
    if server_error(code) {
        failed(span, display(code));
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
pub(crate) fn record_outcome(span: &Span, verdict: &Verdict) {
    if span.is_disabled() {
        return;
    }
    match verdict {
        Verdict::ToolError => failed(span, "tool_error"),
        Verdict::Code(code) => answered_with(span, *code),
        // The conventions name no value for it; not the server's failure.
        Verdict::Cancelled => {
            span.record("error.type", "cancelled");
        }
        Verdict::Ok => {}
    }
}

#[cfg(feature = "otel")]
impl crate::otel::Otel {
    /// What a server records with this exporter: the default [`Telemetry`] with the
    /// histograms on this exporter's meter.
    pub fn telemetry(&self) -> Telemetry {
        Telemetry::new().meter(&self.meter())
    }
}
