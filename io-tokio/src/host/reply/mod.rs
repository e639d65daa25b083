//! Owned answers a [`Handler`](crate::Handler) returns, the results it resolves to
//! ([`ToolResult`] and the like: a reply or a [`HostFailure`]), and their conversion to
//! the engine's borrowed answer types.
//!
//! - `content`: the content blocks replies carry ([`OwnedContent`], [`ContentBlocks`],
//!   [`OwnedResourceContents`], [`OwnedBase64`]).
//! - this file: the replies themselves, one per request kind, and [`HostFailure`].

mod content;

pub use content::{ContentBlocks, OwnedBase64, OwnedContent, OwnedResourceContents};

use core::fmt;
use std::borrow::Cow;
use std::sync::Arc;

use mcp_engine::error::HostError;
use mcp_engine::mrtr::InputRequestBuf;
use mcp_engine::{PromptMessage, Role};

/// The outcome of a tool call (MCP `CallToolResult`), owned.
///
/// A business failure the model should see is a reply with `is_error` set
/// ([`ToolReply::error`]); a failure of the server itself is an
/// `Err(`[`HostFailure`]`)` instead.
///
/// ```
/// use mcp_io_tokio::{HostFailure, ToolReply};
/// use mcp_io_tokio::reply::{OwnedContent, ToolResult};
/// use serde_json::json;
///
/// let saved = ToolReply::text("Saved.");
/// let missing = ToolReply::error("There is no note 7."); // the model reads it
/// assert!(!saved.is_error && missing.is_error);
///
/// let found = ToolReply::structured(json!({ "count": 2 }));
/// assert_eq!(found.structured_content, Some(json!({ "count": 2 })));
/// assert_eq!(found.content, vec![OwnedContent::text(r#"{"count":2}"#)]);
///
/// let broken: ToolResult = Err(HostFailure::internal("the database is down")); // a JSON-RPC error
/// # let _ = broken;
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolReply {
    /// The content blocks.
    pub content: ContentBlocks,
    /// Structured output, sent as `structuredContent`.
    pub structured_content: Option<serde_json::Value>,
    /// Whether the tool failed (sent as `isError: true`).
    pub is_error: bool,
    /// Input the client must give first: when set, the call is answered
    /// `resultType: "input_required"` and the rest of the reply is not sent.
    pub input_required: Option<InputRequiredReply>,
}

impl ToolReply {
    /// A successful result made of `content`: a `Vec<OwnedContent>`, or one
    /// [`OwnedContent`] (which needs no heap allocation).
    ///
    /// ```
    /// use mcp_io_tokio::ToolReply;
    /// use mcp_io_tokio::reply::OwnedContent;
    ///
    /// let chart = OwnedContent::image(vec![1], "image/png");
    /// let reply = ToolReply::new(vec![OwnedContent::text("A chart:"), chart]);
    /// assert_eq!(reply.content.len(), 2);
    /// assert!(!reply.is_error && reply.structured_content.is_none());
    /// ```
    pub fn new(content: impl Into<ContentBlocks>) -> Self {
        Self { content: content.into(), structured_content: None, is_error: false, input_required: None }
    }
    /// A successful result made of one text block (see [`OwnedContent::text`]: a
    /// `&'static str` is not copied).
    ///
    /// ```
    /// use mcp_io_tokio::ToolReply;
    /// use mcp_io_tokio::reply::OwnedContent;
    ///
    /// let reply = ToolReply::text("Saved.");
    /// assert_eq!(reply.content, vec![OwnedContent::text("Saved.")]);
    /// assert!(!reply.is_error);
    /// ```
    pub fn text(text: impl Into<Cow<'static, str>>) -> Self {
        Self::new(OwnedContent::text(text))
    }
    /// A failed result (`isError: true`) made of one text block the model can read.
    ///
    /// ```
    /// use mcp_io_tokio::ToolReply;
    /// use mcp_io_tokio::reply::OwnedContent;
    ///
    /// let reply = ToolReply::error("There is no note 7.");
    /// assert!(reply.is_error);
    /// assert_eq!(reply.content[0], OwnedContent::text("There is no note 7."));
    /// ```
    pub fn error(text: impl Into<Cow<'static, str>>) -> Self {
        Self { is_error: true, ..Self::text(text) }
    }
    /// A failed result (`isError: true`) made of `content`.
    ///
    /// ```
    /// use mcp_io_tokio::ToolReply;
    /// use mcp_io_tokio::reply::OwnedContent;
    ///
    /// let scan = OwnedContent::image(vec![0], "image/png");
    /// let reply = ToolReply::error_content(vec![OwnedContent::text("Unreadable:"), scan]);
    /// assert!(reply.is_error);
    /// assert_eq!(reply.content.len(), 2);
    /// ```
    pub fn error_content(content: impl Into<ContentBlocks>) -> Self {
        Self { is_error: true, ..Self::new(content) }
    }
    /// A successful result carrying `value` as `structuredContent` and, for clients that
    /// do not read structured output, its JSON text as one text block.
    ///
    /// ```
    /// use mcp_io_tokio::ToolReply;
    /// use mcp_io_tokio::reply::OwnedContent;
    /// use serde_json::json;
    ///
    /// let reply = ToolReply::structured(json!({ "count": 2 }));
    /// assert_eq!(reply.structured_content, Some(json!({ "count": 2 })));
    /// assert_eq!(reply.content, vec![OwnedContent::text(r#"{"count":2}"#)]);
    /// ```
    pub fn structured(value: serde_json::Value) -> Self {
        Self::text(value.to_string()).with_structured_content(value)
    }
    /// Asks the client for input first (see [`InputRequiredReply`]): the handler is called
    /// again with the client's responses, which it finds in
    /// [`InputContext::response`](crate::handler::InputContext::response).
    ///
    /// ```
    /// use mcp_engine::mrtr::InputRequestBuf;
    /// use mcp_io_tokio::ToolReply;
    /// use mcp_io_tokio::reply::InputRequiredReply;
    ///
    /// let ask = InputRequiredReply::new([InputRequestBuf::list_roots("roots")]);
    /// let reply = ToolReply::input_required(ask);
    /// assert_eq!(reply.input_required.map(|input| input.requests.len()), Some(1));
    /// ```
    pub fn input_required(input: InputRequiredReply) -> Self {
        Self { input_required: Some(input), ..Self::default() }
    }
    /// Sets `structuredContent`.
    ///
    /// ```
    /// use mcp_io_tokio::ToolReply;
    /// use mcp_io_tokio::reply::OwnedContent;
    /// use serde_json::json;
    ///
    /// let reply = ToolReply::text("2 notes").with_structured_content(json!({ "count": 2 }));
    /// assert_eq!(reply.structured_content, Some(json!({ "count": 2 })));
    /// assert_eq!(reply.content, vec![OwnedContent::text("2 notes")]);
    /// ```
    pub fn with_structured_content(mut self, value: serde_json::Value) -> Self {
        self.structured_content = Some(value);
        self
    }
}

/// The outcome of a resource read, owned.
///
/// ```
/// use mcp_io_tokio::ResourceReply;
/// use mcp_io_tokio::reply::OwnedResourceContents;
///
/// let readme = ResourceReply::text("notes://readme", Some("text/markdown"), "# Notes");
/// let contents = OwnedResourceContents::text("notes://readme", Some("text/markdown"), "# Notes");
/// assert_eq!(readme, ResourceReply::contents(vec![contents]));
/// assert_eq!(ResourceReply::not_found(), ResourceReply::NotFound);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceReply {
    /// The contents. Empty contents are answered as "resource not found".
    Contents(Vec<OwnedResourceContents>),
    /// There is no such resource: answered "Resource not found" (`-32602` under
    /// `2026-07-28`, `-32002` under earlier revisions).
    NotFound,
    /// Input the client must give first (`resultType: "input_required"`).
    InputRequired(InputRequiredReply),
}

impl ResourceReply {
    /// Contents made of `contents`.
    ///
    /// ```
    /// use mcp_io_tokio::ResourceReply;
    /// use mcp_io_tokio::reply::OwnedResourceContents;
    ///
    /// let reply = ResourceReply::contents(vec![
    ///     OwnedResourceContents::text("notes://7", Some("text/plain"), "Buy tea."),
    ///     OwnedResourceContents::blob("notes://7", Some("image/png"), vec![1, 2, 3]),
    /// ]);
    /// assert!(matches!(reply, ResourceReply::Contents(c) if c.len() == 2));
    /// ```
    pub fn contents(contents: Vec<OwnedResourceContents>) -> Self {
        Self::Contents(contents)
    }
    /// One text contents of `uri`.
    ///
    /// ```
    /// use mcp_io_tokio::ResourceReply;
    /// use mcp_io_tokio::reply::OwnedResourceContents;
    ///
    /// let reply = ResourceReply::text("notes://7", None, "Buy tea.");
    /// let contents = OwnedResourceContents::text("notes://7", None, "Buy tea.");
    /// assert_eq!(reply, ResourceReply::Contents(vec![contents]));
    /// ```
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        Self::Contents(vec![OwnedResourceContents::text(uri, mime_type, text)])
    }
    /// One binary contents of `uri`, given as raw bytes.
    ///
    /// ```
    /// use mcp_io_tokio::ResourceReply;
    /// use mcp_io_tokio::reply::{OwnedBase64, OwnedResourceContents};
    ///
    /// let reply = ResourceReply::blob("notes://logo", Some("image/png"), vec![1, 2, 3]);
    /// let ResourceReply::Contents(contents) = reply else { unreachable!() };
    /// let OwnedResourceContents::Blob { blob, .. } = &contents[0] else { unreachable!() };
    /// assert_eq!(blob, &OwnedBase64::Bytes(vec![1, 2, 3]));
    /// ```
    pub fn blob(uri: impl Into<String>, mime_type: Option<&str>, bytes: impl Into<Vec<u8>>) -> Self {
        Self::Contents(vec![OwnedResourceContents::blob(uri, mime_type, bytes)])
    }
    /// One binary contents of `uri`, given already base64-encoded.
    ///
    /// ```
    /// use mcp_io_tokio::ResourceReply;
    /// use mcp_io_tokio::reply::OwnedResourceContents;
    ///
    /// let reply = ResourceReply::blob_base64("notes://logo", Some("image/png"), "AQID");
    /// let logo = OwnedResourceContents::blob_base64("notes://logo", Some("image/png"), "AQID");
    /// assert_eq!(reply, ResourceReply::Contents(vec![logo]));
    /// ```
    pub fn blob_base64(uri: impl Into<String>, mime_type: Option<&str>, base64: impl Into<String>) -> Self {
        Self::Contents(vec![OwnedResourceContents::blob_base64(uri, mime_type, base64)])
    }
    /// "Resource not found".
    ///
    /// ```
    /// use mcp_io_tokio::ResourceReply;
    ///
    /// assert_eq!(ResourceReply::not_found(), ResourceReply::NotFound);
    /// ```
    pub fn not_found() -> Self {
        Self::NotFound
    }
}

/// One message of a rendered prompt, owned (MCP `PromptMessage`).
///
/// The owned counterpart of [`mcp_engine::PromptMessage`].
///
/// ```
/// use mcp_engine::Role;
/// use mcp_io_tokio::reply::{OwnedContent, OwnedPromptMessage};
///
/// let ask = OwnedPromptMessage::user("Summarize my notes."); // a `&str` is copied
/// let answer = OwnedPromptMessage::assistant(OwnedContent::text("You have 2 notes."));
/// assert_eq!((ask.role, answer.role), (Role::User, Role::Assistant));
/// assert_eq!(ask.content, OwnedContent::text("Summarize my notes."));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedPromptMessage {
    /// The speaker.
    pub role: Role,
    /// The content.
    pub content: OwnedContent,
}

impl OwnedPromptMessage {
    /// A user message.
    ///
    /// ```
    /// use mcp_engine::Role;
    /// use mcp_io_tokio::reply::OwnedPromptMessage;
    ///
    /// let message = OwnedPromptMessage::user("Summarize my notes.");
    /// assert_eq!(message.role, Role::User);
    /// ```
    pub fn user(content: impl Into<OwnedContent>) -> Self {
        Self { role: Role::User, content: content.into() }
    }
    /// An assistant message.
    ///
    /// ```
    /// use mcp_engine::Role;
    /// use mcp_io_tokio::reply::OwnedPromptMessage;
    ///
    /// let message = OwnedPromptMessage::assistant(format!("You have {} notes.", 2));
    /// assert_eq!(message.role, Role::Assistant);
    /// ```
    pub fn assistant(content: impl Into<OwnedContent>) -> Self {
        Self { role: Role::Assistant, content: content.into() }
    }
    /// The borrowed form the engine serializes.
    ///
    /// ```
    /// use mcp_io_tokio::reply::OwnedPromptMessage;
    ///
    /// let json = serde_json::to_string(&OwnedPromptMessage::user("hi").as_message())?;
    /// assert_eq!(json, r#"{"role":"user","content":{"type":"text","text":"hi"}}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn as_message(&self) -> PromptMessage<'_> {
        PromptMessage { role: self.role, content: self.content.as_content() }
    }
}

/// A rendered prompt (MCP `GetPromptResult`), owned.
///
/// ```
/// use mcp_io_tokio::PromptReply;
/// use mcp_io_tokio::reply::OwnedPromptMessage;
///
/// let reply = PromptReply::new(vec![
///     OwnedPromptMessage::user("Summarize my notes."),
///     OwnedPromptMessage::assistant("Which ones?"),
/// ])
/// .with_description("A summary of the notes");
/// assert_eq!(reply.messages.len(), 2);
/// assert_eq!(reply.description.as_deref(), Some("A summary of the notes"));
/// assert_eq!(PromptReply::user_text("Hi"), PromptReply::new(vec![OwnedPromptMessage::user("Hi")]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PromptReply {
    /// Description of the rendered prompt.
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<OwnedPromptMessage>,
    /// Input the client must give first: when set, the request is answered
    /// `resultType: "input_required"` and the messages are not sent.
    pub input_required: Option<InputRequiredReply>,
}

impl PromptReply {
    /// A prompt made of `messages`.
    ///
    /// ```
    /// use mcp_io_tokio::PromptReply;
    /// use mcp_io_tokio::reply::OwnedPromptMessage;
    ///
    /// let reply = PromptReply::new(vec![OwnedPromptMessage::user("Summarize my notes.")]);
    /// assert_eq!(reply.messages.len(), 1);
    /// assert!(reply.description.is_none() && reply.input_required.is_none());
    /// ```
    pub fn new(messages: Vec<OwnedPromptMessage>) -> Self {
        Self { description: None, messages, input_required: None }
    }
    /// A prompt made of one user text message.
    ///
    /// ```
    /// use mcp_engine::Role;
    /// use mcp_io_tokio::PromptReply;
    /// use mcp_io_tokio::reply::OwnedContent;
    ///
    /// let reply = PromptReply::user_text("Summarize my notes.");
    /// assert_eq!(reply.messages[0].role, Role::User);
    /// assert_eq!(reply.messages[0].content, OwnedContent::text("Summarize my notes."));
    /// ```
    pub fn user_text(text: impl Into<Cow<'static, str>>) -> Self {
        Self::new(vec![OwnedPromptMessage::user(OwnedContent::text(text))])
    }
    /// Asks the client for input first (see [`ToolReply::input_required`]).
    ///
    /// ```
    /// use mcp_engine::mrtr::InputRequestBuf;
    /// use mcp_io_tokio::PromptReply;
    /// use mcp_io_tokio::reply::InputRequiredReply;
    ///
    /// let ask = InputRequiredReply::new([InputRequestBuf::list_roots("roots")]);
    /// let reply = PromptReply::input_required(ask);
    /// assert!(reply.input_required.is_some() && reply.messages.is_empty());
    /// ```
    pub fn input_required(input: InputRequiredReply) -> Self {
        Self { input_required: Some(input), ..Self::default() }
    }
    /// Sets the description.
    ///
    /// ```
    /// use mcp_io_tokio::PromptReply;
    ///
    /// let reply = PromptReply::user_text("Summarize my notes.").with_description("A summary");
    /// assert_eq!(reply.description.as_deref(), Some("A summary"));
    /// ```
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// Input a handler needs from the client before it can answer, under every revision: the
/// requests, and state handed back with the responses
/// ([`InputContext::request_state`](crate::handler::InputContext::request_state)). Under
/// `2026-07-28` the engine seals the state into `requestState` and the client retries
/// the request; in a session-bound revision the engine sends the requests to the client
/// itself and hands the request back once they are answered.
/// The engine leaves out requests the client did not declare it can answer, and answers
/// `-32021` when that leaves none (check [`InputContext::client`](crate::handler::InputContext::client) first).
///
/// The requests are shared (`Arc<[InputRequestBuf]>`): a handler that asks the same thing
/// every time builds them once and hands out a clone of the `Arc`, which allocates
/// nothing.
///
/// ```
/// use mcp_engine::mrtr::InputRequestBuf;
/// use mcp_io_tokio::ToolReply;
/// use mcp_io_tokio::reply::InputRequiredReply;
/// use serde_json::json;
///
/// let schema = json!({ "type": "object", "properties": { "sure": { "type": "boolean" } } });
/// let confirm = InputRequestBuf::elicit("confirm", "Delete note 7?", &schema);
/// let input = InputRequiredReply::new([confirm]).with_state("note=7");
/// assert_eq!(input.requests[0].key(), "confirm");
/// assert_eq!(input.state.as_deref(), Some(&b"note=7"[..]));
/// let reply = ToolReply::input_required(input);
/// # let _ = reply;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputRequiredReply {
    /// The requests, each under its own key.
    pub requests: Arc<[InputRequestBuf]>,
    /// Host state (at most 4,096 bytes; under `2026-07-28` it needs
    /// `Config::request_state_key`, and is signed, not encrypted).
    pub state: Option<Vec<u8>>,
}

impl InputRequiredReply {
    /// Asks for `requests`: a `Vec` or an array of them (copied into an `Arc`), or an
    /// `Arc<[InputRequestBuf]>` (shared, no copy).
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcp_engine::mrtr::InputRequestBuf;
    /// use mcp_io_tokio::reply::InputRequiredReply;
    ///
    /// let roots: Arc<[InputRequestBuf]> = Arc::new([InputRequestBuf::list_roots("roots")]);
    /// let input = InputRequiredReply::new(Arc::clone(&roots)); // shared, not copied
    /// assert!(Arc::ptr_eq(&input.requests, &roots));
    /// ```
    pub fn new(requests: impl Into<Arc<[InputRequestBuf]>>) -> Self {
        Self { requests: requests.into(), state: None }
    }
    /// Adds host state.
    ///
    /// ```
    /// use mcp_engine::mrtr::InputRequestBuf;
    /// use mcp_io_tokio::reply::InputRequiredReply;
    ///
    /// let input = InputRequiredReply::new([InputRequestBuf::list_roots("roots")]).with_state(b"step=2");
    /// assert_eq!(input.state, Some(b"step=2".to_vec()));
    /// ```
    pub fn with_state(mut self, state: impl Into<Vec<u8>>) -> Self {
        self.state = Some(state.into());
        self
    }
}

/// A failure a handler reports instead of a reply: the owned counterpart of
/// [`mcp_engine::error::HostError`], answered as a JSON-RPC error.
///
/// The message is sent to the client; keep secrets out of it.
///
/// `?` works in a handler on the common error types: a [`std::io::Error`] or a boxed
/// error (`Box<dyn Error + Send + Sync>`) is [`Internal`](Self::Internal) with the
/// error's text, a `tokio_postgres::Error` (feature `postgres`) is `Internal` with its
/// SQLSTATE only (the whole error is logged at `warn`: a database's message can name
/// tables and values), and a [`serde_json::Error`] is
/// [`InvalidParams`](Self::InvalidParams). Any other error goes through
/// `.map_err(HostFailure::internal)` (any `Display`).
///
/// ```
/// use mcp_engine::error::HostError;
/// use mcp_io_tokio::HostFailure;
///
/// let failure = HostFailure::invalid_params("`limit` must be at most 100");
/// assert_eq!(failure.as_host_error(), HostError::InvalidParams("`limit` must be at most 100"));
/// assert_eq!(failure.to_string(), "invalid params: `limit` must be at most 100");
/// // Arguments that do not deserialize are invalid params too (so `?` works on them).
/// let bad = serde_json::from_str::<u32>(r#""seven""#).unwrap_err();
/// assert!(matches!(HostFailure::from(bad), HostFailure::InvalidParams(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostFailure {
    /// The thing asked for does not exist. For a resource read this is "Resource not
    /// found" (`-32602` under `2026-07-28`, `-32002` earlier); otherwise `-32602`.
    NotFound,
    /// The request is wrong in a way the catalog could not see: `-32602`.
    InvalidParams(String),
    /// The server failed: `-32603`. (A tool's business failure is a
    /// [`ToolReply::error`], not this.)
    Internal(String),
}

impl HostFailure {
    /// [`HostFailure::NotFound`].
    ///
    /// ```
    /// use mcp_engine::error::HostError;
    /// use mcp_io_tokio::HostFailure;
    ///
    /// assert_eq!(HostFailure::not_found().as_host_error(), HostError::NotFound);
    /// ```
    pub fn not_found() -> Self {
        Self::NotFound
    }
    /// [`HostFailure::InvalidParams`] with `message`.
    ///
    /// ```
    /// use mcp_io_tokio::HostFailure;
    ///
    /// let failure = HostFailure::invalid_params("`limit` must be at most 100");
    /// assert_eq!(failure, HostFailure::InvalidParams("`limit` must be at most 100".into()));
    /// ```
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::InvalidParams(message.into())
    }
    /// [`HostFailure::Internal`] with `message`: any `Display`, so that
    /// `.map_err(HostFailure::internal)?` turns any error into this one.
    ///
    /// ```
    /// use mcp_io_tokio::HostFailure;
    ///
    /// let failure = HostFailure::internal("the database is down");
    /// assert_eq!(failure.to_string(), "internal error: the database is down");
    /// let parsed: Result<u8, HostFailure> = "300".parse::<u8>().map_err(HostFailure::internal);
    /// assert_eq!(parsed, Err(HostFailure::internal("number too large to fit in target type")));
    /// ```
    pub fn internal(message: impl fmt::Display) -> Self {
        Self::Internal(message.to_string())
    }
    /// The borrowed form the engine answers with.
    ///
    /// ```
    /// use mcp_engine::error::HostError;
    /// use mcp_io_tokio::HostFailure;
    ///
    /// let failure = HostFailure::internal("the database is down");
    /// assert_eq!(failure.as_host_error(), HostError::Internal("the database is down"));
    /// ```
    pub fn as_host_error(&self) -> HostError<'_> {
        match self {
            Self::NotFound => HostError::NotFound,
            Self::InvalidParams(m) => HostError::InvalidParams(m),
            Self::Internal(m) => HostError::Internal(m),
        }
    }
}

impl fmt::Display for HostFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound => f.write_str("not found"),
            Self::InvalidParams(m) => write!(f, "invalid params: {m}"),
            Self::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

impl std::error::Error for HostFailure {}

/// Arguments that do not deserialize are invalid params; the message names the problem.
impl From<serde_json::Error> for HostFailure {
    fn from(e: serde_json::Error) -> Self {
        Self::InvalidParams(e.to_string())
    }
}

/// An I/O error is the server's failure: [`HostFailure::Internal`] with its text (the
/// operating system's message, say `No such file or directory (os error 2)`).
///
/// ```
/// use mcp_io_tokio::HostFailure;
///
/// fn read(path: &str) -> Result<String, HostFailure> {
///     Ok(std::fs::read_to_string(path)?)
/// }
/// assert!(matches!(read("/no/such/file"), Err(HostFailure::Internal(_))));
/// ```
impl From<std::io::Error> for HostFailure {
    fn from(e: std::io::Error) -> Self {
        Self::Internal(e.to_string())
    }
}

/// A boxed error (what many libraries and `?` on mixed errors give) is
/// [`HostFailure::Internal`] with its text.
impl From<Box<dyn std::error::Error + Send + Sync>> for HostFailure {
    fn from(e: Box<dyn std::error::Error + Send + Sync>) -> Self {
        Self::Internal(e.to_string())
    }
}

/// A database error (feature `postgres`) is [`HostFailure::Internal`] naming only its
/// SQLSTATE, if it has one (`database error (SQLSTATE 23505)`); the whole error is
/// logged at `warn`, for the host's operator: a database's message can carry table
/// names and values the client should not see.
#[cfg(feature = "postgres")]
impl From<tokio_postgres::Error> for HostFailure {
    fn from(e: tokio_postgres::Error) -> Self {
        tracing::warn!(error = %e, "a handler failed on a database error");
        match e.code() {
            Some(code) => Self::Internal(format!("database error (SQLSTATE {})", code.code())),
            None => Self::Internal("database error".to_owned()),
        }
    }
}

/// Candidate values for a completion, most relevant first. The engine sends at most 100,
/// drops duplicates and keeps `total` and `has_more` truthful.
///
/// ```
/// use mcp_io_tokio::reply::CompletionReply;
///
/// let first: Vec<String> = (1..=100).map(|n| format!("note-{n}")).collect();
/// let reply = CompletionReply { total: Some(250), has_more: true, ..CompletionReply::new(first) };
/// assert_eq!(reply.values.len(), 100);
/// assert_eq!(reply.values[0], "note-1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompletionReply {
    /// The candidates.
    pub values: Vec<String>,
    /// How many candidates exist in all, if known.
    pub total: Option<u64>,
    /// Whether more exist than were given.
    pub has_more: bool,
}

impl CompletionReply {
    /// A reply with these candidates.
    ///
    /// ```
    /// use mcp_io_tokio::reply::CompletionReply;
    ///
    /// let reply = CompletionReply::new(vec!["tea".into(), "tee".into()]);
    /// assert_eq!(reply.values, ["tea", "tee"]);
    /// assert!(reply.total.is_none() && !reply.has_more);
    /// ```
    pub fn new(values: Vec<String>) -> Self {
        Self { values, total: None, has_more: false }
    }
}

/// What a tool call resolves to: a reply, or a failure answered as a JSON-RPC error.
///
/// ```
/// use mcp_io_tokio::{HostFailure, ToolCall, ToolReply};
/// use mcp_io_tokio::reply::ToolResult;
///
/// #[derive(serde::Deserialize)]
/// struct Args {
///     id: u32,
/// }
///
/// fn delete(call: &ToolCall) -> ToolResult {
///     let args: Args = call.deserialize()?; // bad arguments: `HostFailure::InvalidParams`
///     match args.id {
///         7 => Ok(ToolReply::text("Deleted note 7.")),
///         id => Ok(ToolReply::error(format!("There is no note {id}."))), // the model reads it
///     }
/// }
///
/// assert_eq!(delete(&ToolCall::new("delete", r#"{"id":7}"#)), Ok(ToolReply::text("Deleted note 7.")));
/// assert!(delete(&ToolCall::new("delete", r#"{"id":8}"#))?.is_error);
/// assert!(matches!(delete(&ToolCall::new("delete", r#"{"id":"x"}"#)), Err(HostFailure::InvalidParams(_))));
/// # Ok::<(), HostFailure>(())
/// ```
pub type ToolResult = Result<ToolReply, HostFailure>;
/// What a resource read resolves to.
///
/// ```
/// use mcp_io_tokio::{HostFailure, ResourceRead, ResourceReply};
/// use mcp_io_tokio::reply::ResourceResult;
///
/// fn read(request: &ResourceRead) -> ResourceResult {
///     match request.uri.as_str() {
///         "notes://readme" => Ok(ResourceReply::text(request.uri.as_str(), None, "# Notes")),
///         "notes://archive" => Err(HostFailure::internal("the archive is offline")),
///         _ => Ok(ResourceReply::not_found()),
///     }
/// }
///
/// let readme = read(&ResourceRead::new("notes://readme"));
/// assert_eq!(readme, Ok(ResourceReply::text("notes://readme", None, "# Notes")));
/// assert_eq!(read(&ResourceRead::new("notes://gone")), Ok(ResourceReply::NotFound));
/// assert!(read(&ResourceRead::new("notes://archive")).is_err());
/// ```
pub type ResourceResult = Result<ResourceReply, HostFailure>;
/// What a prompt request resolves to.
///
/// ```
/// use mcp_io_tokio::{HostFailure, PromptGet, PromptReply};
/// use mcp_io_tokio::reply::PromptResult;
///
/// fn brainstorm(get: &PromptGet) -> PromptResult {
///     let topic = get.argument("topic").ok_or_else(|| HostFailure::invalid_params("no topic"))?;
///     Ok(PromptReply::user_text(format!("Brainstorm about {topic}.")))
/// }
///
/// let reply = brainstorm(&PromptGet::new("brainstorm", r#"{"topic":"tea"}"#));
/// assert_eq!(reply, Ok(PromptReply::user_text("Brainstorm about tea.")));
/// assert!(brainstorm(&PromptGet::new("brainstorm", "{}")).is_err());
/// ```
pub type PromptResult = Result<PromptReply, HostFailure>;
/// What a completion request resolves to.
///
/// ```
/// use mcp_io_tokio::reply::{CompleteResult, CompletionReply};
///
/// fn complete_topic(typed: &str) -> CompleteResult {
///     let topics = ["tea", "tee", "toast"];
///     let found = topics.iter().filter(|t| t.starts_with(typed)).map(|t| t.to_string());
///     Ok(CompletionReply::new(found.collect()))
/// }
///
/// assert_eq!(complete_topic("te").map(|reply| reply.values), Ok(vec!["tea".into(), "tee".into()]));
/// ```
pub type CompleteResult = Result<CompletionReply, HostFailure>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_messages_convert_to_the_engine_wire_form() {
        let m = OwnedPromptMessage::assistant("yo");
        assert_eq!(
            serde_json::to_string(&m.as_message()).unwrap(),
            r#"{"role":"assistant","content":{"type":"text","text":"yo"}}"#
        );
    }

    #[test]
    fn a_text_reply_keeps_its_static_text_borrowed() {
        let reply = ToolReply::text("static");
        assert!(matches!(&reply.content[0], OwnedContent::Text { text: Cow::Borrowed("static") }));
        assert_eq!(ToolReply::new(vec![OwnedContent::text("x")]), ToolReply::text("x"));
    }

    #[test]
    fn failures_map_to_host_errors() {
        assert_eq!(HostFailure::not_found().as_host_error(), HostError::NotFound);
        assert_eq!(HostFailure::invalid_params("x").as_host_error(), HostError::InvalidParams("x"));
        assert_eq!(HostFailure::internal("y").as_host_error(), HostError::Internal("y"));
        let e = serde_json::from_str::<u8>("\"no\"").unwrap_err();
        assert!(matches!(HostFailure::from(e), HostFailure::InvalidParams(_)));
    }
}
