//! The values of OpenTelemetry's MCP conventions that the spans (`telemetry`) and the
//! metrics (`otel`) share: the transport a run loop records (`Wire`) and the class of an
//! answer (`Verdict`, `server_error`). See `docs/observability.md`.

/// The transport of a run loop, as the conventions record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wire {
    /// `network.transport`: `pipe` (stdio) or `tcp`.
    pub(crate) transport: &'static str,
    /// `network.protocol.name` and `network.protocol.version` (HTTP).
    pub(crate) protocol: Option<&'static str>,
    pub(crate) version: Option<&'static str>,
}

impl Wire {
    /// stdio, or any byte stream `serve` runs over.
    pub(crate) const PIPE: Self = Self { transport: "pipe", protocol: None, version: None };
    /// HTTP, version not known here (the tower service: whatever the server in front speaks).
    pub(crate) const HTTP: Self = Self { transport: "tcp", protocol: Some("http"), version: None };
    /// The HTTP/1.1 server over TCP.
    pub(crate) const HTTP1: Self = Self { transport: "tcp", protocol: Some("http"), version: Some("1.1") };
}

/// What an answer makes of a request, for its span and its metric point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A result.
    Ok,
    /// A tool result with `isError: true`.
    ToolError,
    /// An error answer with this JSON-RPC code.
    Code(i32),
    /// Cancelled by the client, or timed out, before its answer.
    Cancelled,
}

/// Whether the conventions count an answer with `code` as the server's failure: `-32700`,
/// `-32600`, `-32601`, `-32602` and `-32002` are the caller's errors; any other is.
pub(crate) fn server_error(code: i32) -> bool {
    !matches!(code, -32700 | -32600 | -32601 | -32602 | -32002)
}
