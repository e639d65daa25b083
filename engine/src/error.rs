//! Error codes and the errors of the engine's commands.

use core::fmt;

use crate::revision::Revision;
use crate::wire::json;

/// Longest request id the engine keeps for an outstanding ticket, in bytes of its JSON
/// form (quotes and escapes included). A request with a longer id that needs the host is
/// answered `-32600` at once.
pub const MAX_TICKET_ID_LEN: usize = 128;

/// Longest uri a `resources/read` ticket keeps, in bytes, for the `data.uri` of a
/// "Resource not found" the host reports ([`HostError::NotFound`]); a longer uri is cut
/// on a char boundary. Fixed, so per-ticket memory does not depend on client input.
pub(crate) const MAX_NOT_FOUND_URI_LEN: usize = 256;

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
    /// Session-bound HTTP: the `Mcp-Session-Id` names no live session (the code the
    /// TypeScript SDK's server uses, so clients keyed on it re-initialize).
    pub const SESSION_NOT_FOUND: i32 = -32001;
    /// A request the host did not answer within `HttpConfig::request_timeout` (the code
    /// the TypeScript SDK uses for a request timeout).
    pub const REQUEST_TIMEOUT: i32 = -32001;
    /// An HTTP header disagrees with the body (`2026-07-28`).
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The request needs a client capability it did not declare (`2026-07-28`).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// The request names a protocol revision the server does not speak (`2026-07-28`).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
    /// Over a protected HTTP endpoint: the token lacks the scopes the method needs (`403`
    /// with an `insufficient_scope` challenge naming them). From the implementation range
    /// (`docs/decisions.md`).
    pub const INSUFFICIENT_SCOPE: i32 = -32011;
}

/// A tool result whose `structuredContent` did not match the tool's output schema: the
/// client was answered with a generic tool error instead (a host bug must not become
/// invalid output). Taken with `engine.observe().take_output_mismatch()`
/// ([`Observer::take_output_mismatch`](crate::observe::Observer::take_output_mismatch)), for the host's log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputMismatch {
    /// The tool's name.
    pub tool: String,
    /// Where in `structuredContent` the first error is (a JSON pointer; empty for the
    /// whole value).
    pub path: String,
    /// What the validator says is wrong there.
    pub message: String,
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
    /// An input-required answer without input requests (state only: "retry later") to a
    /// session-bound request (before `2026-07-28`): nobody retries it, so there is
    /// nothing to wait for. The ticket stays open.
    InputRequiredUnsupported,
    /// An input-required answer to a session-bound request whose client can no longer
    /// be asked: its stream has ended (stdio end of input). Answer the ticket another
    /// way; it stays open.
    ClientGone,
    /// An input-required answer that cannot be sent (the reason says why). The ticket
    /// stays open.
    InvalidInputRequest(&'static str),
    /// The call cannot become a task (see [`TaskRefusal`]); the ticket stays open, to be
    /// answered as a plain call.
    TaskRefused(TaskRefusal),
}

/// Why a tool call could not become a task ([`AnswerError::TaskRefused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskRefusal {
    /// Tasks are off ([`crate::Config::tasks`]), or the engine has no entropy to draw
    /// task ids from (`set_entropy` was not called).
    Off,
    /// The ticket is not a tool call, or is a task already.
    NotACall,
    /// The tool is declared [`crate::TaskSupport::Forbidden`].
    Forbidden,
    /// The client did not declare the `io.modelcontextprotocol/tasks` extension on this
    /// request (`2026-07-28`).
    NotDeclared,
    /// The caller already holds [`crate::Config::max_tasks_per_principal`] tasks.
    PrincipalFull,
    /// The engine holds [`crate::Config::max_tasks`] tasks.
    Full,
}

impl fmt::Display for AnswerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnknownTicket => "unknown ticket: already answered, cancelled, or never issued",
            Self::WrongKind => "the answer does not match the kind of work the ticket is for",
            Self::InputRequiredUnsupported => {
                "a session-bound request is never retried: ask for input with requests, not state alone"
            }
            Self::ClientGone => "the client's stream has ended: it can no longer be asked for input",
            Self::InvalidInputRequest(why) => why,
            Self::TaskRefused(TaskRefusal::Off) => "tasks are off, or the engine has no entropy for task ids",
            Self::TaskRefused(TaskRefusal::NotACall) => {
                "only a tool call that is not a task yet can become one"
            }
            Self::TaskRefused(TaskRefusal::Forbidden) => "the tool is declared TaskSupport::Forbidden",
            Self::TaskRefused(TaskRefusal::NotDeclared) => {
                "the client did not declare the io.modelcontextprotocol/tasks extension on this request"
            }
            Self::TaskRefused(TaskRefusal::PrincipalFull) => {
                "the caller already holds Config::max_tasks_per_principal tasks"
            }
            Self::TaskRefused(TaskRefusal::Full) => "the engine holds Config::max_tasks tasks",
        })
    }
}

impl std::error::Error for AnswerError {}

/// A failure the host reports instead of a result ([`Commands::answer_error`](crate::Commands::answer_error)).
///
/// The message is sent to the client; keep secrets out of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostError<'a> {
    /// The thing asked for does not exist. For a resource read this is "Resource not
    /// found": `-32602` under `2026-07-28`, `-32002` under earlier revisions, with
    /// `data.uri`: the requested uri, its first 256 bytes at most (cut on a char
    /// boundary) when it is longer.
    NotFound,
    /// The request is wrong in a way the catalog could not see: `-32602`.
    InvalidParams(&'a str),
    /// The host failed: `-32603`. (A tool's business failure is a result with
    /// `isError`, see [`crate::ToolOutput::error`].)
    Internal(&'a str),
}

/// Why a notification for a ticket was refused. Nothing was written, with one exception:
/// on a task's ticket a message still becomes the task's status message when the
/// progress itself is refused for [`NoProgressToken`](Self::NoProgressToken) or
/// [`NotIncreasing`](Self::NotIncreasing).
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
    /// The client has not read what was sent before (stdio: more than
    /// `Config::max_buffered_output` waits; HTTP: 64 KiB waits on the request's
    /// connection): the notification is not written. Try again later, or send less.
    Backpressure,
}

impl fmt::Display for NotifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnknownTicket => "unknown ticket: answered, cancelled, or never issued",
            Self::NoProgressToken => "the request asked for no progress notifications",
            Self::NotIncreasing => "progress must increase",
            Self::NotFinite => "progress and total must be finite",
            Self::Filtered => "the client asked for no log messages at this level",
            Self::Backpressure => "the client has not read what was sent before",
        })
    }
}

impl std::error::Error for NotifyError {}

/// What the peer did wrong: each variant is one refusal, with its JSON-RPC code
/// ([`Self::code`]), the HTTP status of a response that carries it at once
/// ([`Self::status`]), its message (`Display`) and its `data` ([`Self::write_data`]).
/// Method handlers return it; the outbox writes it, in one place.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PeerError<'a> {
    // The frame and the JSON-RPC envelope.
    /// Not valid UTF-8 JSON.
    Parse,
    /// Nested deeper than the configured limit.
    TooDeep(usize),
    /// A stdio frame longer than the configured limit.
    Oversized(usize),
    Batch,
    NotAnObject,
    BadId,
    BadJsonrpc,
    NoMethod,
    MethodNotString,
    TopLevelMeta,
    ParamsNotObject,
    /// The message repeats a member name at its top level (the name).
    RepeatedMember(&'a str),
    /// An object in `params` repeats a member name (the name).
    RepeatedParam(&'a str),
    /// The request's id is the id of a request still in flight on the same route.
    IdInUse,
    MethodNotFound(&'a str),
    // The revision rules (`mcp::lifecycle`).
    MetaNotObject,
    /// No revision named, no session: `true` when the stream could open one with `initialize`.
    MetaMissing(bool),
    /// HTTP: a session-bound request without `Mcp-Session-Id`.
    SessionRequired,
    /// HTTP: `Mcp-Session-Id` names no live session of this caller (unknown, ended,
    /// expired, another principal's, or forged).
    SessionNotFound,
    /// HTTP: `MCP-Protocol-Version` names another revision than the session's.
    SessionVersionMismatch,
    /// HTTP: `initialize` while the live sessions are at the cap.
    TooManySessions,

    VersionNotString,
    UnsupportedVersion {
        requested: &'a str,
        supported: &'static [Revision],
    },
    CapabilitiesMissing,
    UnknownMetaLogLevel,
    /// A refusal rendered into the outbox's [`Detail`] when it happened (its account
    /// borrows what a handler cannot return): see [`Detailed`].
    Detailed {
        code: i32,
        status: u16,
    },
    InitializeNeedsVersion,
    AlreadyInitialized,
    UnknownLogLevel,
    // Method parameters.
    NotAString(&'static str),
    ArgumentsNotObject,
    IdTooLong,
    NoFreeSlot,
    UnknownTool(&'a str),
    /// An internal failure while checking the request.
    Internal,
    RefNameNotString,
    RefUriNotString,
    BadRefType,
    /// A completion for a prompt the catalog does not have.
    UnknownPrompt(&'a str),
    /// `prompts/get` of a prompt the catalog does not have (names it in `data`).
    PromptNotFound(&'a str),
    NoTemplate(&'a str),
    CompletionArgument,
    UnknownArgument(&'a str),
    RequestStateNotString,
    /// A `requestState` refused (forged, foreign or expired): the reason.
    RequestState(&'static str),
    InputResponsesNotObject,
    BadInputResponse {
        key: &'a str,
        expected: &'static str,
    },
    /// `-32602` under `2026-07-28`, `-32002` before; names the uri in `data`.
    ResourceNotFound {
        uri: &'a str,
        stateless: bool,
    },
    /// `skills/get` of a uri that names no skill the caller may use (names it in `data`).
    SkillNotFound(&'a str),
    /// `resources/directory/read` of a uri that is no skill folder the caller may use.
    NotADirectory(&'a str),
    CursorNotString,
    CursorOtherList {
        cursor: &'static str,
        list: &'static str,
    },
    InvalidCursor,
    /// A cursor this server issued, past its lifetime.
    CursorExpired,
    NotificationsNotObject,
    TooManySubscriptions(usize),
    /// More listen streams for one peer (connection or principal) than allowed.
    TooManySubscriptionsForPeer(usize),
    /// A listen stream on a response that cannot carry one (HTTP/1.0).
    ListenNeedsStream,
    /// The caller's token lacks the scopes the method needs (HTTP `403`).
    InsufficientScope,
    SubscriptionsNotStrings,
    TooManyUris(usize),
    /// A `resources/subscribe` uri longer than `Config::max_subscribed_uri_len` bytes.
    SubscribedUriTooLong(usize),
    /// A `resources/subscribe` that would take the session's subscribed uris past
    /// `Config::max_subscribed_bytes`.
    SubscribedBytes(usize),
    /// A `subscriptions/listen` from a client (principal, else address) that holds
    /// `HttpConfig::max_streams_per_client` streams open already.
    TooManyStreamsForClient(usize),
    /// `tasks/*` (or a listen stream's `taskIds`) from a client that did not declare the
    /// tasks extension on this request (`-32021`, `400`).
    TasksNotDeclared,
    /// A task-only tool called by a client that did not declare the tasks extension.
    TaskToolNeedsTasks(&'a str),
    /// No task of this caller has this id (unknown, expired, another principal's).
    TaskNotFound,
    /// `2025-11-25`: a task-augmented call of a tool that never runs as a task, or a plain
    /// call of one that runs only as a task (`-32601`).
    TaskAugmentation {
        tool: &'a str,
        required: bool,
    },
    /// `2025-11-25`: `tasks/cancel` of a task already in this terminal status.
    TaskFinished(&'static str),
    /// `2025-11-25`: more `tasks/result` requests wait for one task than allowed.
    TooManyWaiters,
}

impl PeerError<'_> {
    /// The JSON-RPC error code.
    pub(crate) fn code(&self) -> i32 {
        use PeerError as E;
        match self {
            E::Parse => code::PARSE_ERROR,
            E::TooDeep(_)
            | E::Oversized(_)
            | E::Batch
            | E::NotAnObject
            | E::BadId
            | E::BadJsonrpc
            | E::NoMethod
            | E::MethodNotString
            | E::AlreadyInitialized
            | E::RepeatedMember(_)
            | E::IdInUse
            | E::IdTooLong
            | E::ListenNeedsStream
            | E::SessionRequired
            | E::SessionVersionMismatch => code::INVALID_REQUEST,
            E::SessionNotFound => code::SESSION_NOT_FOUND,
            E::InsufficientScope => code::INSUFFICIENT_SCOPE,
            E::TooManySessions => code::INTERNAL_ERROR,
            E::MethodNotFound(_) | E::TaskAugmentation { .. } => code::METHOD_NOT_FOUND,
            E::TooManyWaiters => code::INTERNAL_ERROR,
            E::TasksNotDeclared | E::TaskToolNeedsTasks(_) => code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            E::UnsupportedVersion { .. } => code::UNSUPPORTED_PROTOCOL_VERSION,
            E::Detailed { code, .. } => *code,
            E::NoFreeSlot
            | E::Internal
            | E::TooManySubscriptions(_)
            | E::TooManySubscriptionsForPeer(_)
            | E::TooManyStreamsForClient(_) => code::INTERNAL_ERROR,
            E::ResourceNotFound { stateless: false, .. } => code::RESOURCE_NOT_FOUND,
            _ => code::INVALID_PARAMS,
        }
    }

    /// The HTTP status of a response that carries this error at once: `400` for a
    /// refused envelope or revision, `404` for an unknown method, `200` for an error
    /// about a method's parameters (the request was valid JSON-RPC).
    pub(crate) fn status(&self) -> u16 {
        use PeerError as E;
        match self {
            E::MethodNotFound(_) => 404,
            E::MetaNotObject
            | E::MetaMissing(_)
            | E::VersionNotString
            | E::UnsupportedVersion { .. }
            | E::CapabilitiesMissing
            | E::UnknownMetaLogLevel
            | E::RepeatedParam(_)
            | E::SessionRequired
            | E::SessionVersionMismatch
            | E::TasksNotDeclared
            | E::TaskToolNeedsTasks(_) => 400,
            E::SessionNotFound => 404,
            E::InsufficientScope => 403,
            E::TooManySessions => 503,
            E::Detailed { status, .. } => *status,
            e if e.code() == code::INVALID_REQUEST || e.code() == code::PARSE_ERROR => 400,
            _ => 200,
        }
    }

    /// Writes the error's `data` value; writes nothing when it has none.
    pub(crate) fn write_data(&self, out: &mut Vec<u8>) {
        use PeerError as E;
        match self {
            E::UnsupportedVersion { requested, supported } => {
                out.extend_from_slice(b"{\"supported\":[");
                for (i, r) in supported.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    json::write_str(out, r.as_str());
                }
                out.extend_from_slice(b"],\"requested\":");
                json::write_str(out, requested);
                out.push(b'}');
            }
            E::PromptNotFound(name) => {
                out.extend_from_slice(b"{\"name\":");
                json::write_str(out, name);
                out.push(b'}');
            }
            E::ResourceNotFound { uri, .. } | E::SkillNotFound(uri) | E::NotADirectory(uri) => {
                out.extend_from_slice(b"{\"uri\":");
                json::write_str(out, uri);
                out.push(b'}');
            }
            E::TasksNotDeclared | E::TaskToolNeedsTasks(_) => out.extend_from_slice(TASKS_REQUIRED),
            _ => {}
        }
    }
}

impl fmt::Display for PeerError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PeerError as E;
        match self {
            E::Parse => f.write_str("Parse error: not valid UTF-8 JSON"),
            E::TooDeep(max) => write!(f, "Invalid Request: JSON nested deeper than {max} levels"),
            E::Oversized(max) => write!(f, "Invalid Request: frame longer than {max} bytes"),
            E::Batch => f.write_str("Invalid Request: batches are not supported; send one message per line"),
            E::NotAnObject => f.write_str("Invalid Request: a message must be a JSON object"),
            E::BadId => f.write_str("Invalid Request: id must be a string or an integer"),
            E::BadJsonrpc => f.write_str("Invalid Request: jsonrpc must be \"2.0\""),
            E::NoMethod => f.write_str("Invalid Request: method is missing"),
            E::MethodNotString => f.write_str("Invalid Request: method must be a string"),
            E::TopLevelMeta => {
                f.write_str("Invalid params: _meta belongs inside params, not at the top level of the request")
            }
            E::ParamsNotObject => f.write_str("Invalid params: params must be an object"),
            E::RepeatedMember(name) => {
                write!(f, "Invalid Request: the member name \"{}\" appears more than once", Capped(name))
            }
            E::RepeatedParam(name) => write!(
                f,
                "Invalid params: the member name \"{}\" appears more than once in an object of params",
                Capped(name)
            ),
            E::IdInUse => f.write_str(
                "Invalid Request: this id is already in use by a request in flight; wait for its answer or use another id",
            ),
            E::MethodNotFound(method) => write!(f, "Method not found: {method}"),
            E::MetaNotObject => f.write_str("Invalid params: params._meta must be an object"),
            E::MetaMissing(can_initialize) => {
                f.write_str(
                    "Invalid params: params._meta must carry io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities",
                )?;
                if *can_initialize {
                    f.write_str(" (or open the stream with initialize)")?;
                }
                Ok(())
            }
            E::SessionRequired => f.write_str(
                "Bad Request: the Mcp-Session-Id header is required (open a session with initialize, or name 2026-07-28 in params._meta)",
            ),
            E::SessionNotFound => {
                f.write_str("Session not found: it ended or expired; open a new one with initialize")
            }
            E::SessionVersionMismatch => f.write_str(
                "Bad Request: the MCP-Protocol-Version header names another revision than the session's",
            ),
            E::TooManySessions => f.write_str("Service unavailable: too many sessions are open; retry later"),
            E::VersionNotString => {
                f.write_str("Invalid params: io.modelcontextprotocol/protocolVersion must be a string")
            }
            E::UnsupportedVersion { requested, .. } => write!(f, "Unsupported protocol version: {requested}"),
            E::CapabilitiesMissing => f.write_str(
                "Invalid params: params._meta must carry io.modelcontextprotocol/clientCapabilities as an object",
            ),
            E::UnknownMetaLogLevel => f.write_str("Invalid params: unknown io.modelcontextprotocol/logLevel"),
            E::Detailed { .. } => f.write_str("(rendered in the outbox's detail)"),
            E::InitializeNeedsVersion => f.write_str("Invalid params: initialize needs params.protocolVersion"),
            E::AlreadyInitialized => {
                f.write_str("Invalid Request: initialize was already received on this stream")
            }
            E::UnknownLogLevel => f.write_str("Invalid params: unknown log level"),
            E::NotAString(key) => write!(f, "Invalid params: params.{key} must be a string"),
            E::ArgumentsNotObject => f.write_str("Invalid params: params.arguments must be an object"),
            E::IdTooLong => write!(f, "Invalid Request: id longer than {MAX_TICKET_ID_LEN} bytes"),
            E::NoFreeSlot => f.write_str("Internal error: no free slot for this request; retry it"),
            E::UnknownTool(name) => write!(f, "Unknown tool: {name}"),
            E::Internal => f.write_str("Internal error"),
            E::RefNameNotString => f.write_str("Invalid params: ref.name must be a string"),
            E::RefUriNotString => f.write_str("Invalid params: ref.uri must be a string"),
            E::BadRefType => f.write_str("Invalid params: ref.type must be \"ref/prompt\" or \"ref/resource\""),
            E::UnknownPrompt(name) | E::PromptNotFound(name) => write!(f, "Unknown prompt: {name}"),
            E::SkillNotFound(_) => f.write_str("Invalid params: no skill has this uri"),
            E::NotADirectory(_) => f.write_str("Invalid params: not a skill directory"),
            E::NoTemplate(uri) => write!(f, "Invalid params: no resource template {uri}"),
            E::CompletionArgument => f.write_str("Invalid params: argument must carry name and value strings"),
            E::UnknownArgument(name) => write!(f, "Invalid params: unknown argument {name}"),
            E::RequestStateNotString => f.write_str("Invalid params: requestState must be a string"),
            E::RequestState(why) => f.write_str(why),
            E::InputResponsesNotObject => f.write_str("Invalid params: inputResponses must be an object"),
            E::BadInputResponse { key, expected } => {
                write!(f, "Invalid params: inputResponses.{key} is not a valid response to {expected}")
            }
            E::ResourceNotFound { .. } => f.write_str("Resource not found"),
            E::CursorNotString => f.write_str("Invalid params: cursor must be a string"),
            E::CursorOtherList { cursor, list } => {
                write!(f, "Invalid params: this cursor belongs to {cursor}, not {list}")
            }
            E::InvalidCursor => f.write_str(
                "Invalid params: invalid cursor (not issued for this caller, revision and list as it is now); list again without it",
            ),
            E::CursorExpired => f.write_str("Invalid params: this cursor has expired; list again without it"),
            E::NotificationsNotObject => f.write_str("Invalid params: params.notifications must be an object"),
            E::TooManySubscriptions(max) => {
                write!(f, "Internal error: too many open subscriptions (at most {max})")
            }
            E::TooManySubscriptionsForPeer(max) => {
                write!(f, "Internal error: too many open subscriptions for this client (at most {max})")
            }
            E::InsufficientScope => f.write_str("Insufficient scope"),
            E::ListenNeedsStream => f.write_str(
                "Invalid Request: subscriptions/listen needs a stream, which an HTTP/1.0 response cannot carry",
            ),
            E::SubscriptionsNotStrings => {
                f.write_str("Invalid params: resourceSubscriptions must be an array of strings")
            }
            E::TooManyUris(max) => write!(f, "Invalid params: at most {max} resource subscriptions"),
            E::SubscribedUriTooLong(max) => {
                write!(f, "Invalid params: a subscribed uri is at most {max} bytes")
            }
            E::SubscribedBytes(max) => {
                write!(f, "Invalid params: at most {max} bytes of subscribed uris per session")
            }
            E::TooManyStreamsForClient(max) => {
                write!(f, "Internal error: too many open streams for this client (at most {max})")
            }
            E::TasksNotDeclared => f.write_str(
                "Missing required client capability: the io.modelcontextprotocol/tasks extension (declare it in this request's clientCapabilities.extensions)",
            ),
            E::TaskToolNeedsTasks(tool) => write!(
                f,
                "Missing required client capability: tool {} runs only as a task, which needs the io.modelcontextprotocol/tasks extension",
                Capped(tool)
            ),
            E::TaskNotFound => f.write_str("Invalid params: Task not found (unknown, or expired)"),
            E::TaskAugmentation { tool, required: false } => write!(
                f,
                "Method not found: tool {} does not run as a task (call it without params.task)",
                Capped(tool)
            ),
            E::TaskAugmentation { tool, required: true } => {
                write!(f, "Method not found: tool {} runs only as a task (call it with params.task)", Capped(tool))
            }
            E::TaskFinished(status) => write!(f, "Invalid params: the task is already {status}; it cannot be cancelled"),
            E::TooManyWaiters => f.write_str("Internal error: too many requests wait for this task's result"),
        }
    }
}

/// The `data` of a refusal for want of the tasks extension.
pub(crate) const TASKS_REQUIRED: &[u8] =
    br#"{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}"#;

/// The longest member name an error message quotes, in bytes; a longer one is cut on a
/// char boundary and ends with `...`.
pub(crate) const MAX_QUOTED_NAME_LEN: usize = 64;

/// A name as an error message quotes it: at most [`MAX_QUOTED_NAME_LEN`] bytes.
struct Capped<'a>(&'a str);

impl fmt::Display for Capped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        if s.len() <= MAX_QUOTED_NAME_LEN {
            return f.write_str(s);
        }
        f.write_str(cut(s, MAX_QUOTED_NAME_LEN))?;
        f.write_str("...")
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub(crate) fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut at = max;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[..at]
}

/// A refusal whose account borrows what a handler cannot return (the catalog's
/// declarations, a value built to validate the arguments). It is rendered into a
/// [`Detail`] when it happens, and travels on as [`PeerError::Detailed`].
#[derive(Clone, Copy)]
pub(crate) enum Detailed<'a> {
    /// The tool needs client capabilities the request did not declare.
    MissingCapability { tool: &'a str, required: &'a [String] },
    /// Arguments that fail the tool's input schema (`2025-06-18`; later revisions answer
    /// with a tool result the model can read).
    ToolArguments { tool: &'a str, problems: &'a dyn fmt::Display },
    /// Arguments that fail a prompt's declared arguments.
    PromptArguments { prompt: &'a str, problems: &'a dyn fmt::Display },
    /// A header that does not mirror the body: the matcher's account of it.
    HeaderMismatch(&'a dyn fmt::Display),
}

impl Detailed<'_> {
    fn code(&self) -> i32 {
        match self {
            Self::MissingCapability { .. } => code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            Self::HeaderMismatch(_) => code::HEADER_MISMATCH,
            Self::ToolArguments { .. } | Self::PromptArguments { .. } => code::INVALID_PARAMS,
        }
    }

    fn status(&self) -> u16 {
        match self {
            Self::MissingCapability { .. } | Self::HeaderMismatch(_) => 400,
            Self::ToolArguments { .. } | Self::PromptArguments { .. } => 200,
        }
    }

    fn write_data(&self, out: &mut Vec<u8>) {
        if let Self::MissingCapability { required, .. } = self {
            out.extend_from_slice(b"{\"requiredCapabilities\":{");
            for (i, c) in required.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json::write_str(out, c);
                out.extend_from_slice(b":{}");
            }
            out.extend_from_slice(b"}}");
        }
    }
}

impl fmt::Display for Detailed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Detailed as E;
        match self {
            E::MissingCapability { tool, required } => {
                f.write_str("Missing required client capability: tool ")?;
                f.write_str(tool)?;
                f.write_str(" needs ")?;
                for (i, c) in required.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(c)?;
                }
                Ok(())
            }
            E::ToolArguments { tool, problems } => {
                write!(
                    f,
                    "Invalid params: arguments of tool {tool} do not match its input schema: {problems}"
                )
            }
            E::PromptArguments { prompt, problems } => write!(
                f,
                "Invalid params: arguments of prompt {prompt} do not match its declared arguments: {problems}"
            ),
            E::HeaderMismatch(m) => write!(f, "{m}"),
        }
    }
}

/// Where a [`Detailed`] refusal is rendered: reused, so refusals allocate nothing once
/// the buffers have grown.
#[derive(Default)]
pub(crate) struct Detail {
    pub(crate) message: String,
    pub(crate) data: Vec<u8>,
}

impl Detail {
    /// Renders `d`; the returned error stands for it until the next rendering.
    pub(crate) fn render(&mut self, d: Detailed<'_>) -> PeerError<'static> {
        use core::fmt::Write as _;
        self.message.clear();
        let _ = write!(self.message, "{d}");
        self.data.clear();
        d.write_data(&mut self.data);
        PeerError::Detailed { code: d.code(), status: d.status() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_quoted_cut_on_a_char_boundary() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("héllo", 3), "hé");
        assert_eq!(cut("abc", 10), "abc");
        let long = "é".repeat(40);
        let message = PeerError::RepeatedParam(&long).to_string();
        let quoted = message.split('"').nth(1).unwrap();
        assert_eq!(quoted, format!("{}...", "é".repeat(MAX_QUOTED_NAME_LEN / 2)));
        assert_eq!(PeerError::RepeatedParam("a").status(), 400);
        assert_eq!(PeerError::RepeatedParam("a").code(), code::INVALID_PARAMS);
        assert_eq!(PeerError::RepeatedMember("a").code(), code::INVALID_REQUEST);
        assert_eq!(PeerError::IdInUse.code(), code::INVALID_REQUEST);
        assert_eq!(PeerError::IdInUse.status(), 400);
    }
}
