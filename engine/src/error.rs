//! Error codes and the errors of the engine's commands.

use core::fmt;

/// JSON-RPC and MCP error codes the engine writes.
pub mod code {
    /// Invalid JSON or invalid UTF-8.
    pub const PARSE_ERROR: i32 = -32700;
    /// Not a valid JSON-RPC request: a batch, a bad id, a missing method, an over-long
    /// frame, too deep a nesting.
    pub const INVALID_REQUEST: i32 = -32600;
    /// Unknown, removed or unadvertised method.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Invalid parameters, unknown tool or prompt, and (in `2026-07-28`) unknown resource.
    pub const INVALID_PARAMS: i32 = -32602;
    /// The host failed.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// Resource not found, in `2025-11-25` and `2025-06-18` only.
    pub const RESOURCE_NOT_FOUND: i32 = -32002;
    /// An HTTP header disagrees with the body (`2026-07-28`).
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The request needs a client capability it did not declare (`2026-07-28`).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// The request names a protocol revision the server does not speak (`2026-07-28`).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
}

/// Why an answer to a ticket was refused. Nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnswerError {
    /// The ticket was already answered, was cancelled by the client, or never existed.
    /// A late answer to a cancelled ticket lands here and is dropped, as it must be.
    UnknownTicket,
    /// The answer does not fit the work (e.g. prompt messages for a tool call).
    WrongKind,
    /// An input-required answer to a request made under a revision without
    /// multi-round-trip requests (before `2026-07-28`). The ticket stays open.
    InputRequiredUnsupported,
    /// An input-required answer that cannot be sent (the reason says why). The ticket
    /// stays open.
    InvalidInputRequest(&'static str),
}

impl fmt::Display for AnswerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnknownTicket => "unknown ticket: already answered, cancelled, or never issued",
            Self::WrongKind => "the answer does not match the kind of work the ticket is for",
            Self::InputRequiredUnsupported => {
                "input-required answers need 2026-07-28; the request was made under an earlier revision"
            }
            Self::InvalidInputRequest(why) => why,
        })
    }
}

impl std::error::Error for AnswerError {}

/// A failure the host reports instead of a result ([`crate::Engine::answer_error`]).
///
/// The message is sent to the client; keep secrets out of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostError<'a> {
    /// The thing asked for does not exist. For a resource read this is "Resource not
    /// found": `-32602` under `2026-07-28`, `-32002` under earlier revisions.
    NotFound,
    /// The request is wrong in a way the catalog could not see: `-32602`.
    InvalidParams(&'a str),
    /// The host failed: `-32603`. (A tool's business failure is a result with
    /// `isError`, see [`crate::ToolOutput::error`].)
    Internal(&'a str),
}

/// Why a notification for a ticket was refused. Nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotifyError {
    /// The ticket was answered, cancelled, or never issued: nothing more is sent for it.
    UnknownTicket,
    /// The request carried no `_meta.progressToken`: the client did not ask for progress.
    NoProgressToken,
    /// `progress` must increase with every notification.
    NotIncreasing,
    /// `progress` and `total` must be finite numbers (or the log data would not serialize).
    NotFinite,
    /// The client asked for no log messages at this level on this request (or logging
    /// is off in the configuration).
    Filtered,
}

impl fmt::Display for NotifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnknownTicket => "unknown ticket: answered, cancelled, or never issued",
            Self::NoProgressToken => "the request asked for no progress notifications",
            Self::NotIncreasing => "progress must increase",
            Self::NotFinite => "progress and total must be finite",
            Self::Filtered => "the client asked for no log messages at this level",
        })
    }
}

impl std::error::Error for NotifyError {}
