//! # mcp-spans
//!
//! The one mapping from what the engine tells an adapter about a request (a host-facing
//! [`Event`]'s [`RequestInfo`](mcp_engine::event::RequestInfo), a [`Served`] record of what the
//! engine answered itself) to a `tracing` span named and attributed as OpenTelemetry's
//! semantic conventions for MCP say (`open-telemetry/semantic-conventions-genai`,
//! `docs/gen-ai/mcp.md` at `4172e394`; see `docs/observability.md`). Both adapters use it:
//! `mcp-io-tokio` always, `mcp-io-mio` with its feature `tracing`. The engine itself stays
//! free of `tracing`.
//!
//! - [`Attributes`]: the values of a request's span, taken from an event or a record;
//!   no value the client sent but the request id, the names the catalog declares, the
//!   session id (session-bound revisions only) and the `traceparent`'s ids (a resource's
//!   uri only when the host opts in).
//! - [`request_span!`]: the span of [`Attributes`] on a [`Wire`], at level `INFO`, with the
//!   invoking module as its target. Its `tracing` name is the method (`mcp` for a message
//!   with no method the engine serves: the conventions have no value for it, and a
//!   client's method string is never recorded); `otel.name` is the conventions' name
//!   (`{method} {tool or prompt}`), `otel.kind` `server`.
//! - [`record_outcome`]: `error.type`, the JSON-RPC code (under the name [`StatusCodeKey`]
//!   chooses) and the span status of a [`Verdict`]; [`record_parent`]: the client's ids
//!   as plain fields, for output without OpenTelemetry (never on an exported span).
//! - [`refused!`]: the `DEBUG` event of a request the HTTP engine refused, with its
//!   reason.
//!
//! Every field is formatted lazily: with no subscriber (or one that does not want the
//! span) nothing is evaluated and nothing is allocated.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "testing")]
pub mod testing;

use core::fmt;
use core::net::{IpAddr, SocketAddr};

use mcp_engine::event::RequestId;
#[doc(hidden)]
pub use mcp_engine::http::Refused;
use mcp_engine::observe::{Served, TraceParent};
use mcp_engine::{Event, Revision};
#[doc(hidden)]
pub use tracing;
use tracing::Span;
use tracing::field::display;

/// The transport of a run loop, as the conventions record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    /// `network.transport`: `pipe` (stdio) or `tcp`.
    pub transport: &'static str,
    /// `network.protocol.name` (HTTP).
    pub protocol: Option<&'static str>,
    /// `network.protocol.version` (HTTP, when the adapter knows it).
    pub version: Option<&'static str>,
}

impl Wire {
    /// stdio, or any byte stream served as one.
    pub const PIPE: Self = Self { transport: "pipe", protocol: None, version: None };
    /// HTTP, version not known here (a service behind a server that knows it).
    pub const HTTP: Self = Self { transport: "tcp", protocol: Some("http"), version: None };
    /// An HTTP/1.1 server over TCP.
    pub const HTTP1: Self = Self { transport: "tcp", protocol: Some("http"), version: Some("1.1") };
}

/// What an answer makes of a request, for its span and its metric point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A result (also `input_required`).
    Ok,
    /// A tool result with `isError: true`.
    ToolError,
    /// An error answer with this JSON-RPC code.
    Code(i32),
    /// Cancelled by the client, or timed out, before its answer.
    Cancelled,
}

impl Verdict {
    /// The verdict of a record of the engine's: a tool error, an error code or a result.
    pub fn of(tool_error: bool, code: Option<i32>) -> Self {
        match (tool_error, code) {
            (true, _) => Self::ToolError,
            (false, Some(code)) => Self::Code(code),
            (false, None) => Self::Ok,
        }
    }
}

/// Whether the conventions count an answer with `code` as the server's failure: `-32700`,
/// `-32600`, `-32601`, `-32602` and `-32002` are the caller's errors; any other is.
pub fn server_error(code: i32) -> bool {
    !matches!(code, -32700 | -32600 | -32601 | -32602 | -32002)
}

/// The attribute name(s) a JSON-RPC error code is recorded under. The conventions
/// pinned here (`4172e394`) say `rpc.response.status_code`; the core conventions renamed
/// it `rpc.status_code` after them (core PR #3921), and whether the MCP page follows is
/// not settled, so the name is the host's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatusCodeKey {
    /// `rpc.response.status_code` (the default: the pinned conventions' name).
    #[default]
    Response,
    /// `rpc.status_code` (the core conventions' newer name).
    Rpc,
    /// Both, for a transition.
    Both,
}

impl StatusCodeKey {
    /// The attribute names, in order (one or two).
    pub fn names(self) -> &'static [&'static str] {
        match self {
            Self::Response => &["rpc.response.status_code"],
            Self::Rpc => &["rpc.status_code"],
            Self::Both => &["rpc.response.status_code", "rpc.status_code"],
        }
    }
}

/// The `tracing` name (and conventions' name) of a span whose message has no method the
/// engine serves (a method it does not know, a message that is not a request).
pub const NO_METHOD: &str = "mcp";

/// The values of one request's span, as the conventions name them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Attributes<'a> {
    /// `mcp.method.name`: the engine's name for the method (`None`: not one it serves,
    /// or no method at all; the attribute is then left out).
    pub method: Option<&'static str>,
    /// `gen_ai.tool.name` (with `gen_ai.operation.name` `execute_tool`): a declared tool.
    pub tool: Option<&'a str>,
    /// `gen_ai.prompt.name`: a declared prompt.
    pub prompt: Option<&'a str>,
    /// `mcp.resource.uri`: only when the host opted in.
    pub resource_uri: Option<&'a str>,
    /// `mcp.protocol.version`.
    pub revision: Option<Revision>,
    /// `jsonrpc.request.id` (none for a notification).
    pub id: Option<RequestId<'a>>,
    /// `mcp.session.id`: session-bound revisions over HTTP only.
    pub session_id: Option<&'a str>,
    /// The TCP peer (`client.port` when `client.address` is the peer's).
    pub peer: Option<SocketAddr>,
    /// `client.address`.
    pub client: Option<IpAddr>,
    /// The client's valid `traceparent` (the span's parent with OpenTelemetry; else the
    /// `parent.*` fields of [`record_parent`]).
    pub parent: Option<TraceParent>,
}

impl<'a> Attributes<'a> {
    /// The span values of a host-facing event (`None` for a cancellation). A resource's
    /// uri is taken only when `resource_uri` (the host's opt-in).
    pub fn of_event(event: &Event<'a>, resource_uri: bool) -> Option<Self> {
        let info = event.request()?;
        let (tool, prompt, uri, revision) = match event {
            Event::CallTool(call) => (Some(call.tool.name.as_str()), None, None, call.revision),
            Event::GetPrompt(get) => (None, Some(get.prompt.name.as_str()), None, get.revision),
            Event::ReadResource(read) => (None, None, resource_uri.then_some(read.uri), read.revision),
            Event::Complete(complete) => (None, None, None, complete.revision),
            _ => return None,
        };
        Some(Self {
            method: Some(info.method),
            tool,
            prompt,
            resource_uri: uri,
            revision: Some(revision),
            id: Some(info.id),
            session_id: info.session_id,
            peer: info.peer,
            client: info.client,
            parent: info.trace.parent(),
        })
    }

    /// The span values of a request (or notification) the engine answered itself.
    pub fn of_served(s: &Served<'a>) -> Self {
        Self {
            method: s.method(),
            tool: s.tool(),
            prompt: s.prompt(),
            resource_uri: None,
            revision: s.revision(),
            id: s.id(),
            session_id: s.session_id(),
            peer: s.peer(),
            client: s.client(),
            parent: s.trace_parent(),
        }
    }

    /// The conventions' span name: `{method} {tool or prompt}`, the method alone, or
    /// [`NO_METHOD`].
    pub fn name(&self) -> SpanName<'a> {
        SpanName(self.method.unwrap_or(NO_METHOD), self.tool.or(self.prompt))
    }

    /// `gen_ai.operation.name`: `execute_tool` for a tool call, else none.
    pub fn operation(&self) -> Option<&'static str> {
        self.tool.map(|_| "execute_tool")
    }

    /// `client.port`: the peer's, when `client.address` is the peer's address.
    pub fn client_port(&self) -> Option<u16> {
        self.peer.filter(|p| Some(p.ip()) == self.client).map(|p| p.port())
    }
}

/// The conventions' span name: `{method} {target}`, or the method alone.
#[derive(Debug, Clone, Copy)]
pub struct SpanName<'a>(&'static str, Option<&'a str>);

impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(target) => write!(f, "{} {target}", self.0),
            None => f.write_str(self.0),
        }
    }
}

/// The span of one request (`$attrs`: [`Attributes`]) on `$wire` ([`Wire`]), at level
/// `INFO`, its target the invoking module. The method is matched to its literal (`tracing`
/// span names are static); a method the engine does not serve is [`NO_METHOD`].
#[macro_export]
macro_rules! request_span {
    ($attrs:expr, $wire:expr) => {{
        let attrs: &$crate::Attributes<'_> = $attrs;
        let wire: $crate::Wire = $wire;
        $crate::request_span!(@methods attrs, wire;
            "tools/call", "resources/read", "prompts/get", "completion/complete",
            "initialize", "ping", "logging/setLevel", "server/discover", "tools/list",
            "resources/list", "resources/templates/list", "prompts/list",
            "subscriptions/listen", "resources/subscribe", "resources/unsubscribe",
            "tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list",
            "notifications/initialized", "notifications/cancelled")
    }};
    (@methods $attrs:ident, $wire:ident; $($name:literal),*) => {
        match $attrs.method {
            $(Some($name) => $crate::request_span!(@span $name, $attrs, $wire),)*
            _ => $crate::request_span!(@span "mcp", $attrs, $wire),
        }
    };
    (@span $name:literal, $attrs:ident, $wire:ident) => {
        $crate::tracing::info_span!(
            $name,
            otel.name = %$attrs.name(),
            otel.kind = "server",
            otel.status_code = $crate::tracing::field::Empty,
            mcp.method.name = $attrs.method,
            gen_ai.tool.name = $attrs.tool,
            gen_ai.operation.name = $attrs.operation(),
            gen_ai.prompt.name = $attrs.prompt,
            mcp.resource.uri = $attrs.resource_uri,
            mcp.protocol.version = $attrs.revision.map(|r| r.as_str()),
            mcp.session.id = $attrs.session_id,
            jsonrpc.request.id = $attrs.id.map($crate::tracing::field::display),
            network.transport = $wire.transport,
            network.protocol.name = $wire.protocol,
            network.protocol.version = $wire.version,
            client.address = $attrs.client.map($crate::tracing::field::display),
            client.port = $attrs.client_port(),
            error.type = $crate::tracing::field::Empty,
            rpc.response.status_code = $crate::tracing::field::Empty,
            rpc.status_code = $crate::tracing::field::Empty,
            parent.trace_id = $crate::tracing::field::Empty,
            parent.span_id = $crate::tracing::field::Empty,
            parent.sampled = $crate::tracing::field::Empty,
        )
    };
}

/// Logs one refused HTTP request (`$refused`: [`Refused`](mcp_engine::http::Refused), as
/// [`HttpEngine::poll_refusal`](mcp_engine::http::HttpEngine::poll_refusal) gives it) as
/// an event at level `DEBUG`, its target the invoking module (so
/// `RUST_LOG=mcp_io_tokio=debug` shows the tokio adapter's): `request refused` with the
/// `http.response.status_code`, the `reason` in words, its stable name as `error.type`,
/// the client's address and the connection. Both adapters log every refusal with it.
#[macro_export]
macro_rules! refused {
    ($refused:expr) => {{
        let r: &$crate::Refused = $refused;
        $crate::tracing::debug!(
            http.response.status_code = r.status,
            reason = r.refusal.reason(),
            error.type = r.refusal.name(),
            client.address = r.client.map($crate::tracing::field::display),
            conn = ?r.conn,
            "request refused"
        )
    }};
}

/// Records the client's `traceparent` as the plain fields `parent.trace_id`,
/// `parent.span_id` and `parent.sampled`: for output without OpenTelemetry, where they
/// are the only record of the client's context. An adapter that made the context the
/// span's OpenTelemetry parent does not call it (they are not convention attributes,
/// and never exported).
pub fn record_parent(span: &Span, parent: Option<TraceParent>) {
    let Some(p) = parent else { return };
    if span.is_disabled() {
        return;
    }
    span.record("parent.trace_id", display(p.trace_id()));
    span.record("parent.span_id", display(p.parent_id()));
    span.record("parent.sampled", p.sampled());
}

/// Records what `verdict` makes of the span's request: for a tool error, `error.type`
/// `tool_error` and status `ERROR`; for an error answer, its code under `key`'s name(s),
/// and when the conventions count it as the server's failure, `error.type` the code and
/// status `ERROR`; for a cancellation, `error.type` `cancelled` (the conventions name no
/// value; not the server's failure). The status has no description: an error message can
/// carry what the client sent (a deliberate deviation, `docs/decisions.md`).
pub fn record_outcome(span: &Span, verdict: Verdict, key: StatusCodeKey) {
    if span.is_disabled() {
        return;
    }
    match verdict {
        Verdict::ToolError => failed(span, "tool_error"),
        Verdict::Code(code) => {
            for name in key.names() {
                span.record(*name, display(code));
            }
            if server_error(code) {
                failed(span, display(code));
            }
        }
        Verdict::Cancelled => {
            span.record("error.type", "cancelled");
        }
        Verdict::Ok => {}
    }
}

/// Marks `span` failed with `error_type` (span status `ERROR`).
fn failed(span: &Span, error_type: impl tracing::Value) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callers_errors_are_not_the_servers() {
        for code in [-32700, -32600, -32601, -32602, -32002] {
            assert!(!server_error(code), "{code}");
        }
        for code in [-32603, -32001, -32011, -32020, -32021, -32022, 1] {
            assert!(server_error(code), "{code}");
        }
    }

    #[test]
    fn names_follow_the_conventions() {
        let call =
            Attributes { method: Some("tools/call"), tool: Some("get_weather"), ..Attributes::default() };
        assert_eq!(call.name().to_string(), "tools/call get_weather");
        assert_eq!(call.operation(), Some("execute_tool"));
        let get =
            Attributes { method: Some("prompts/get"), prompt: Some("analyze"), ..Attributes::default() };
        assert_eq!(get.name().to_string(), "prompts/get analyze");
        assert_eq!(get.operation(), None);
        let list = Attributes { method: Some("tools/list"), ..Attributes::default() };
        assert_eq!(list.name().to_string(), "tools/list");
        assert_eq!(Attributes::default().name().to_string(), NO_METHOD);
    }

    #[test]
    fn the_port_is_the_peers_only_when_the_address_is() {
        let peer: SocketAddr = "10.0.0.1:4000".parse().unwrap();
        let own = Attributes { peer: Some(peer), client: Some(peer.ip()), ..Attributes::default() };
        assert_eq!(own.client_port(), Some(4000));
        let forwarded =
            Attributes { peer: Some(peer), client: "192.0.2.7".parse().ok(), ..Attributes::default() };
        assert_eq!(forwarded.client_port(), None);
    }

    #[test]
    fn the_status_code_goes_under_the_chosen_names() {
        assert_eq!(StatusCodeKey::default().names(), ["rpc.response.status_code"]);
        assert_eq!(StatusCodeKey::Rpc.names(), ["rpc.status_code"]);
        assert_eq!(StatusCodeKey::Both.names(), ["rpc.response.status_code", "rpc.status_code"]);
        assert_eq!(Verdict::of(true, Some(-32603)), Verdict::ToolError);
        assert_eq!(Verdict::of(false, Some(-32603)), Verdict::Code(-32603));
        assert_eq!(Verdict::of(false, None), Verdict::Ok);
    }
}
