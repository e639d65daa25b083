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
//! Never recorded: argument values, `requestState`, `inputResponses`, cursors, tokens,
//! `tracestate`, `baggage`, error messages; a resource's uri only when the host opts in
//! ([`Telemetry::resource_uri`]), its scheme otherwise.

use core::fmt;

use mcp_engine::{Event, RequestInfo, Revision};
use tracing::Span;
use tracing::field::Empty;

use crate::channel::Outcome;
use crate::reply::{HostFailure, ResourceReply, ToolReply};

/// What the request spans of a server record beyond the default (see
/// [`HttpServer::telemetry`](crate::HttpServer::telemetry)). The default records no value
/// that came from the client other than the names the catalog declares, the request id,
/// the session id and the trace context's ids.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Telemetry {
    /// Record `mcp.resource.uri`, the full uri of a `resources/read` (off by default: a
    /// uri can carry what the client sent, and it is high-cardinality).
    pub resource_uri: bool,
}

impl Telemetry {
    /// The default: no uri.
    pub fn new() -> Self {
        Self::default()
    }
    /// Records the full uri of each `resources/read` as `mcp.resource.uri`.
    pub fn resource_uri(mut self, on: bool) -> Self {
        self.resource_uri = on;
        self
    }
}

/// The transport of a run loop, as the conventions record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wire {
    /// `network.transport`: `pipe` (stdio) or `tcp`.
    transport: &'static str,
    /// `network.protocol.name` and `network.protocol.version` (HTTP).
    protocol: Option<&'static str>,
    version: Option<&'static str>,
}

impl Wire {
    /// stdio, or any byte stream [`serve`](crate::serve) runs over.
    pub(crate) const PIPE: Self = Self { transport: "pipe", protocol: None, version: None };
    /// HTTP, version not known here (the tower service: whatever the server in front speaks).
    pub(crate) const HTTP: Self = Self { transport: "tcp", protocol: Some("http"), version: None };
    /// The HTTP/1.1 server over TCP.
    pub(crate) const HTTP1: Self = Self { transport: "tcp", protocol: Some("http"), version: Some("1.1") };
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
    ($name:literal, $info:expr, $wire:expr, $revision:expr, tool = $tool:expr, prompt = $prompt:expr, uri = $uri:expr, scheme = $scheme:expr) => {{
        let info: &RequestInfo<'_> = $info;
        let wire: Wire = $wire;
        let (tool, prompt): (Option<&str>, Option<&str>) = ($tool, $prompt);
        let parent = info.trace.parent();
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
            mcp.protocol.version = $revision.as_str(),
            mcp.session.id = info.session_id,
            jsonrpc.request.id = %info.id,
            network.transport = wire.transport,
            network.protocol.name = wire.protocol,
            network.protocol.version = wire.version,
            client.address = info.client.map(display),
            client.port = info.peer.filter(|p| Some(p.ip()) == info.client).map(|p| p.port()),
            error.type = Empty,
            rpc.response.status_code = Empty,
            parent.trace_id = parent.map(|p| display(p.trace_id())),
            parent.span_id = parent.map(|p| display(p.parent_id())),
            parent.sampled = parent.map(|p| p.sampled()),
        )
    }};
}

/// The span of `event`'s request (a disabled span for a cancellation, or when nothing
/// listens).
pub(crate) fn request_span(event: &Event<'_>, wire: Wire, telemetry: Telemetry) -> Span {
    match event {
        Event::CallTool(call) => request_span!(
            "tools/call",
            &call.request,
            wire,
            call.revision,
            tool = Some(call.tool.name.as_str()),
            prompt = None,
            uri = None::<&str>,
            scheme = None::<&str>
        ),
        Event::GetPrompt(get) => request_span!(
            "prompts/get",
            &get.request,
            wire,
            get.revision,
            tool = None,
            prompt = Some(get.prompt.name.as_str()),
            uri = None::<&str>,
            scheme = None::<&str>
        ),
        Event::ReadResource(read) => {
            let scheme = read.uri.split_once(':').map(|(s, _)| s);
            request_span!(
                "resources/read",
                &read.request,
                wire,
                read.revision,
                tool = None,
                prompt = None,
                uri = telemetry.resource_uri.then_some(read.uri),
                scheme = scheme
            )
        }
        Event::Complete(complete) => request_span!(
            "completion/complete",
            &complete.request,
            wire,
            complete.revision,
            tool = None,
            prompt = None,
            uri = None::<&str>,
            scheme = None::<&str>
        ),
        _ => Span::none(),
    }
}

/// Marks `span` failed with `error_type` (span status `ERROR`).
fn failed(span: &Span, error_type: &'static str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

/// The JSON-RPC error code a host failure is answered with, as text.
fn code_of(failure: &HostFailure, resource: bool, revision: Revision) -> &'static str {
    match failure {
        HostFailure::NotFound if resource && !revision.is_stateless() => "-32002",
        HostFailure::NotFound | HostFailure::InvalidParams(_) => "-32602",
        HostFailure::Internal(_) => "-32603",
    }
}

/// Records the classes of error the conventions name for the server side: `-32700`,
/// `-32600`, `-32601`, `-32602` and `-32002` are the caller's (the code is recorded, the
/// span is not failed); any other code fails it with the code as `error.type`.
fn answered_with(span: &Span, code: &'static str) {
    span.record("rpc.response.status_code", code);
    if !matches!(code, "-32700" | "-32600" | "-32601" | "-32602" | "-32002") {
        failed(span, code);
    }
}

/// Records what a handler's outcome makes of the request: `error.type` `tool_error` for
/// a tool result with `isError: true`, the JSON-RPC code for an error answer, `-32603` for
/// a handler that ended without a reply. `revision` is the request's.
pub(crate) fn record_outcome(span: &Span, outcome: &Outcome, revision: Revision) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Outcome::Tool(Ok(ToolReply { is_error: true, input_required: None, .. })) => {
            failed(span, "tool_error")
        }
        Outcome::Resource(Ok(ResourceReply::NotFound)) => {
            answered_with(span, code_of(&HostFailure::NotFound, true, revision));
        }
        Outcome::Resource(Err(f)) => answered_with(span, code_of(f, true, revision)),
        Outcome::Tool(Err(f)) | Outcome::Prompt(Err(f)) | Outcome::Complete(Err(f)) => {
            answered_with(span, code_of(f, false, revision));
        }
        Outcome::Dropped => answered_with(span, "-32603"),
        _ => {}
    }
}

/// Records that the client cancelled the request (or it timed out) before its answer:
/// `error.type` `cancelled` (the conventions name no value for it).
pub(crate) fn record_cancelled(span: &Span) {
    span.record("error.type", "cancelled");
}
