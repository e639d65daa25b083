//! The engine: framing, JSON-RPC, MCP semantics, tickets and output.

use core::fmt;
use std::collections::VecDeque;

use serde::Serialize;
use simd_json::{Buffers, Node, StaticNode, Tape};

use crate::catalog::{Catalog, Prompt, ResourceTemplate, Tool};
use crate::content::{self, Content, PromptMessage, PromptOutput, ResourceContents, ToolOutput};
use crate::cursor::{self, CursorError, ListKind};
use crate::error::{AnswerError, HostError, NotifyError, code};
use crate::http_headers;
use crate::json;
use crate::mrtr::{self, ClientCapabilities, InputRequired, InputResponses, MAX_INPUT_REQUESTS, Method};
use crate::revision::Revision;
use crate::subs::{self, CatalogChange, ReplaceError};
use crate::time::Instant;
use crate::uritemplate::Captures;

/// Longest request id the engine keeps for an outstanding ticket, in bytes of its JSON
/// form (quotes and escapes included). A request with a longer id that needs the host is
/// answered `-32600` at once.
pub const MAX_TICKET_ID_LEN: usize = 128;

/// Who the server says it is (MCP `Implementation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerInfo {
    /// Programmatic name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Who may reuse a cacheable result (MCP `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheScope {
    /// Holds nothing user-specific; shared caches may serve it to anyone.
    Public,
    /// Reusable only within the same authorization context.
    Private,
}

impl CacheScope {
    fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Private => "private",
        }
    }
}

/// The caching hints a family of `2026-07-28` results carries (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    /// How long the result stays fresh, in milliseconds. `0`: stale at once.
    pub ttl_ms: u64,
    /// Who may reuse it.
    pub scope: CacheScope,
}

impl Default for CachePolicy {
    /// `0` / `"private"`: nothing is reused unless the host says so.
    fn default() -> Self {
        Self { ttl_ms: 0, scope: CacheScope::Private }
    }
}

/// A key that `Debug` does not print.
#[derive(Clone)]
pub(crate) struct SecretKey(pub(crate) [u8; 32]);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Engine settings. Every limit says what happens when it is reached.
#[derive(Debug, Clone)]
pub struct Config {
    server_info: ServerInfo,
    instructions: Option<String>,
    max_frame_len: usize,
    max_in_flight: usize,
    max_depth: usize,
    max_buffered_output: usize,
    page_size: usize,
    server_info_meta: bool,
    logging: bool,
    completions: bool,
    state_key: Option<SecretKey>,
    state_ttl: core::time::Duration,
    list_changed: bool,
    resource_subscriptions: bool,
    max_subscriptions: usize,
    discover_cache: CachePolicy,
    tools_cache: CachePolicy,
    resources_cache: CachePolicy,
    prompts_cache: CachePolicy,
}

impl Config {
    /// Defaults for a server called `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            server_info: ServerInfo { name: name.into(), version: version.into(), title: None },
            instructions: None,
            max_frame_len: 64_000,
            max_in_flight: 64,
            max_depth: 64,
            max_buffered_output: 1 << 20,
            page_size: 50,
            server_info_meta: true,
            logging: false,
            completions: false,
            state_key: None,
            state_ttl: core::time::Duration::from_secs(600),
            list_changed: false,
            resource_subscriptions: false,
            max_subscriptions: 16,
            discover_cache: CachePolicy::default(),
            tools_cache: CachePolicy::default(),
            resources_cache: CachePolicy::default(),
            prompts_cache: CachePolicy::default(),
        }
    }
    /// Display title of the server.
    pub fn title(&mut self, title: impl Into<String>) -> &mut Self {
        self.server_info.title = Some(title.into());
        self
    }
    /// Instructions for the client, sent in `server/discover` and `initialize` results.
    pub fn instructions(&mut self, instructions: impl Into<String>) -> &mut Self {
        self.instructions = Some(instructions.into());
        self
    }
    /// Longest stdio frame in bytes, newline excluded (default 64,000). A longer frame is
    /// answered `-32600` with no id as soon as its length passes the limit; its remaining
    /// bytes are discarded unread up to the next newline, where the stream resumes.
    /// Clamped to at least 512. At most this much input (plus a line break) is buffered;
    /// the stdio engine's input buffer takes twice that, allocated once.
    pub fn max_frame_len(&mut self, bytes: usize) -> &mut Self {
        self.max_frame_len = bytes.max(512);
        self
    }
    /// Most tickets outstanding at once (default 64). While that many are unanswered, a
    /// request that needs a ticket waits, and so does every frame after it, except
    /// cancellations of requests that hold a ticket, which are taken out of order so the
    /// client can free a slot. Frames at the head that need no ticket (a `ping`, a list)
    /// are still served. Waiting frames stay buffered (one frame's worth of bytes); once
    /// that buffer is full, [`Engine::handle_input`] accepts no more bytes, and a
    /// cancellation sent after that is read only when a slot frees. Clamped to
    /// 1..=65,535.
    pub fn max_in_flight(&mut self, n: usize) -> &mut Self {
        self.max_in_flight = n.clamp(1, u16::MAX as usize);
        self
    }
    /// Deepest JSON nesting accepted in a frame (default 64). A deeper frame is answered
    /// `-32600`. Clamped to 8..=128 (128 is what `serde_json`, which validates and
    /// deserializes arguments, accepts).
    pub fn max_depth(&mut self, depth: usize) -> &mut Self {
        self.max_depth = depth.clamp(8, 128);
        self
    }
    /// Output bytes the engine holds before it stops processing input until the caller
    /// drains some with [`Engine::poll_transmit`] (default 1 MiB). Answers to tickets are
    /// always written; only new frames wait. The output buffer reserves this much (at
    /// most 16 MiB) plus 192 KiB when the engine is made, so a client that reads slowly
    /// costs no reallocation; its pages are only touched as they are used.
    pub fn max_buffered_output(&mut self, bytes: usize) -> &mut Self {
        self.max_buffered_output = bytes.max(1);
        self
    }
    /// Items per list page (default 50). Clamped to 1..=10,000.
    pub fn page_size(&mut self, n: usize) -> &mut Self {
        self.page_size = n.clamp(1, 10_000);
        self
    }
    /// Whether `2026-07-28` results carry `_meta["io.modelcontextprotocol/serverInfo"]`
    /// (default true).
    pub fn server_info_in_meta(&mut self, on: bool) -> &mut Self {
        self.server_info_meta = on;
        self
    }
    /// Whether the server sends log messages (`notifications/message`, default off). On,
    /// `logging` is advertised, `logging/setLevel` is served on session-bound streams, and
    /// [`Engine::notify_log`] sends a message for a request whose client asked for logs
    /// at that level (`_meta["io.modelcontextprotocol/logLevel"]` in 2026-07-28, the
    /// stream's `logging/setLevel` before).
    pub fn logging(&mut self, on: bool) -> &mut Self {
        self.logging = on;
        self
    }
    /// Whether the host completes prompt and resource-template arguments
    /// (`completion/complete`, default off). On, `completions` is advertised and each
    /// request reaches the host as [`Event::Complete`].
    pub fn completions(&mut self, on: bool) -> &mut Self {
        self.completions = on;
        self
    }
    /// The secret that seals `requestState` of multi-round-trip requests (HMAC-SHA256,
    /// [`Engine::answer_input_required`]). Without one the engine issues no
    /// `requestState`, refuses host state, and answers `-32602` to any `requestState` it is
    /// sent. Every server instance that may receive a retry needs the same key; draw it
    /// from a cryptographic source and keep it out of logs.
    pub fn request_state_key(&mut self, key: [u8; 32]) -> &mut Self {
        self.state_key = Some(SecretKey(key));
        self
    }
    /// How long a `requestState` stays valid after it is issued (default 10 minutes),
    /// measured on the [`Instant`]s the engine is given. A retry after it is `-32602`.
    pub fn request_state_ttl(&mut self, ttl: core::time::Duration) -> &mut Self {
        self.state_ttl = ttl;
        self
    }
    /// Whether the catalog may change while the server runs (default off). On,
    /// `listChanged: true` is advertised for every family the catalog has, clients may open
    /// `subscriptions/listen` streams for list changes (`2026-07-28`), and
    /// [`Engine::replace_catalog`] notifies them (and a session-bound stdio client).
    pub fn list_changed(&mut self, on: bool) -> &mut Self {
        self.list_changed = on;
        self
    }
    /// Whether clients may subscribe to resource updates (default off). On,
    /// `resources.subscribe: true` is advertised (when the catalog has resources),
    /// `subscriptions/listen` honours `resourceSubscriptions`, session-bound clients get
    /// `resources/subscribe` and `resources/unsubscribe`, and
    /// [`Engine::notify_resource_updated`] notifies the subscribers of a uri.
    pub fn resource_subscriptions(&mut self, on: bool) -> &mut Self {
        self.resource_subscriptions = on;
        self
    }
    /// The most `subscriptions/listen` streams open at once (default 16, at least 1). One
    /// more is answered `-32603` and not opened.
    pub fn max_subscriptions(&mut self, n: usize) -> &mut Self {
        self.max_subscriptions = n.max(1);
        self
    }
    /// Whether a request-state key is set.
    pub fn has_request_state_key(&self) -> bool {
        self.state_key.is_some()
    }
    /// Caching hints of `server/discover`.
    pub fn discover_cache(&mut self, policy: CachePolicy) -> &mut Self {
        self.discover_cache = policy;
        self
    }
    /// Caching hints of `tools/list`.
    pub fn tools_cache(&mut self, policy: CachePolicy) -> &mut Self {
        self.tools_cache = policy;
        self
    }
    /// Caching hints of `resources/list`, `resources/templates/list` and `resources/read`.
    pub fn resources_cache(&mut self, policy: CachePolicy) -> &mut Self {
        self.resources_cache = policy;
        self
    }
    /// Caching hints of `prompts/list`.
    pub fn prompts_cache(&mut self, policy: CachePolicy) -> &mut Self {
        self.prompts_cache = policy;
        self
    }
    /// The configured server identity.
    pub fn server_info(&self) -> &ServerInfo {
        &self.server_info
    }
    /// The configured frame limit.
    pub fn frame_limit(&self) -> usize {
        self.max_frame_len
    }
    /// The configured JSON depth limit.
    pub fn depth_limit(&self) -> usize {
        self.max_depth
    }
    /// The configured in-flight limit.
    pub fn in_flight_limit(&self) -> usize {
        self.max_in_flight
    }
}

/// A handle on work the engine asked the host to do. Answer it once: through the event
/// while it is held ([`CallTool::answer`], ...), or later with [`Engine::answer_tool`],
/// [`Engine::answer_resource`], [`Engine::answer_prompt`] or [`Engine::answer_error`]. Tickets are small `Copy` values and may be moved to any
/// thread or event loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ticket {
    slot: u16,
    generation: u32,
}

/// The arguments of a request, as compact JSON text borrowed from the engine.
#[derive(Clone, Copy)]
pub struct Arguments<'a> {
    raw: &'a str,
}

impl<'a> Arguments<'a> {
    /// The arguments as a JSON object text (`{}` when the request had none).
    pub fn raw(&self) -> &'a str {
        self.raw
    }
    /// Deserializes the arguments into `T`, borrowing strings where `T` allows.
    pub fn deserialize<T: serde::Deserialize<'a>>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.raw)
    }
}

impl fmt::Debug for Arguments<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.raw)
    }
}

/// The variables a resource template matched, in the order the template names them.
#[derive(Clone, Copy)]
pub struct TemplateVars<'a> {
    uri: &'a str,
    names: &'a [Box<str>],
    captures: &'a Captures,
}

impl<'a> TemplateVars<'a> {
    /// The value of variable `name`, as it appears in the uri (not percent-decoded).
    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
    /// `(name, value)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let (uri, names) = (self.uri, self.names);
        self.captures.iter().filter_map(move |&(var, start, end)| {
            Some((names.get(var as usize)?.as_ref(), uri.get(start as usize..end as usize)?))
        })
    }
    /// Number of variables.
    pub fn len(&self) -> usize {
        self.captures.len()
    }
    /// Whether there are none (a listed resource rather than a template match).
    pub fn is_empty(&self) -> bool {
        self.captures.is_empty()
    }
}

impl fmt::Debug for TemplateVars<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Answers the event's ticket while the event (and the input it borrows) is held.
struct Responder<'a> {
    st: &'a mut State,
    prepared: &'a Prepared,
    catalog: &'a Catalog,
    resources_cache: CachePolicy,
}

/// A tool call the host must perform.
///
/// Answer it now with [`CallTool::answer`] (the arguments stay borrowed, nothing is
/// copied), or keep [`CallTool::ticket`] and answer later with [`Engine::answer_tool`].
#[non_exhaustive]
pub struct CallTool<'a> {
    /// The ticket, for answering later.
    pub ticket: Ticket,
    /// The tool, as declared in the catalog.
    pub tool: &'a Tool,
    /// The arguments, already validated against the tool's input schema.
    pub arguments: Arguments<'a>,
    /// The revision the request was made under.
    pub revision: Revision,
    /// Responses to input requests this request carries (`2026-07-28` retries; empty on
    /// a first round), see [`Engine::answer_input_required`].
    pub input_responses: InputResponses<'a>,
    /// The host state of a verified `requestState`, as the host sealed it.
    pub request_state: Option<&'a [u8]>,
    /// The input kinds the client declared on this request (`2026-07-28`).
    pub client: ClientCapabilities,
    responder: Responder<'a>,
}

impl CallTool<'_> {
    /// Asks the client for input first (see [`Engine::answer_input_required`]).
    pub fn input_required(self, input: &InputRequired<'_>) -> Result<(), AnswerError> {
        self.responder.st.answer_input_required(self.responder.prepared, self.ticket, input)
    }
    /// Sends `notifications/message` now (see [`Engine::notify_log`]).
    pub fn log<S: Serialize + ?Sized>(
        &mut self,
        level: LogLevel,
        logger: Option<&str>,
        data: &S,
    ) -> Result<(), NotifyError> {
        self.responder.st.notify_log(self.ticket, level, logger, data)
    }
    /// Sends `notifications/progress` now (see [`Engine::notify_progress`]).
    pub fn progress(
        &mut self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), NotifyError> {
        self.responder.st.notify_progress(self.ticket, progress, total, message)
    }
    /// Answers with a tool result now.
    pub fn answer<S: Serialize + ?Sized>(self, output: &ToolOutput<'_, S>) -> Result<(), AnswerError> {
        self.responder.st.answer_tool(self.responder.prepared, self.responder.catalog, self.ticket, output)
    }
    /// Answers with an error now.
    pub fn fail(self, error: HostError<'_>) -> Result<(), AnswerError> {
        self.responder.st.answer_error(self.ticket, None, error)
    }
}

/// A resource read the host must perform.
///
/// Answer it now with [`ReadResource::answer`], or keep [`ReadResource::ticket`] and
/// answer later with [`Engine::answer_resource`].
#[non_exhaustive]
pub struct ReadResource<'a> {
    /// The ticket, for answering later.
    pub ticket: Ticket,
    /// The uri, a listed resource or a match of [`ReadResource::template`].
    pub uri: &'a str,
    /// The template that matched, or `None` for a listed resource.
    pub template: Option<&'a ResourceTemplate>,
    /// The template's variables (empty for a listed resource).
    pub variables: TemplateVars<'a>,
    /// The revision the request was made under.
    pub revision: Revision,
    /// Responses to input requests this request carries (`2026-07-28` retries; empty on
    /// a first round), see [`Engine::answer_input_required`].
    pub input_responses: InputResponses<'a>,
    /// The host state of a verified `requestState`, as the host sealed it.
    pub request_state: Option<&'a [u8]>,
    /// The input kinds the client declared on this request (`2026-07-28`).
    pub client: ClientCapabilities,
    responder: Responder<'a>,
}

impl ReadResource<'_> {
    /// Asks the client for input first (see [`Engine::answer_input_required`]).
    pub fn input_required(self, input: &InputRequired<'_>) -> Result<(), AnswerError> {
        self.responder.st.answer_input_required(self.responder.prepared, self.ticket, input)
    }
    /// Answers with the resource's contents now (empty contents answer "not found").
    pub fn answer(self, contents: &[ResourceContents<'_>]) -> Result<(), AnswerError> {
        let r = self.responder;
        r.st.answer_resource(r.prepared, r.resources_cache, self.ticket, contents)
    }
    /// Answers with an error now.
    pub fn fail(self, error: HostError<'_>) -> Result<(), AnswerError> {
        self.responder.st.answer_error(self.ticket, None, error)
    }
}

/// A prompt the host must render.
///
/// Answer it now with [`GetPrompt::answer`], or keep [`GetPrompt::ticket`] and answer
/// later with [`Engine::answer_prompt`].
#[non_exhaustive]
pub struct GetPrompt<'a> {
    /// The ticket, for answering later.
    pub ticket: Ticket,
    /// The prompt, as declared in the catalog.
    pub prompt: &'a Prompt,
    /// The arguments: an object of strings, validated against the declared arguments.
    pub arguments: Arguments<'a>,
    /// The revision the request was made under.
    pub revision: Revision,
    /// Responses to input requests this request carries (`2026-07-28` retries; empty on
    /// a first round), see [`Engine::answer_input_required`].
    pub input_responses: InputResponses<'a>,
    /// The host state of a verified `requestState`, as the host sealed it.
    pub request_state: Option<&'a [u8]>,
    /// The input kinds the client declared on this request (`2026-07-28`).
    pub client: ClientCapabilities,
    responder: Responder<'a>,
}

impl GetPrompt<'_> {
    /// Asks the client for input first (see [`Engine::answer_input_required`]).
    pub fn input_required(self, input: &InputRequired<'_>) -> Result<(), AnswerError> {
        self.responder.st.answer_input_required(self.responder.prepared, self.ticket, input)
    }
    /// Answers with the rendered prompt now.
    pub fn answer(self, output: &PromptOutput<'_>) -> Result<(), AnswerError> {
        self.responder.st.answer_prompt(self.responder.prepared, self.ticket, output)
    }
    /// Answers with an error now.
    pub fn fail(self, error: HostError<'_>) -> Result<(), AnswerError> {
        self.responder.st.answer_error(self.ticket, None, error)
    }
}

/// What a completion is for.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum CompletionRef<'a> {
    /// An argument of this prompt.
    Prompt(&'a Prompt),
    /// A variable of this resource template.
    Template(&'a ResourceTemplate),
}

/// A completion request (`completion/complete`) the host answers with candidate values.
///
/// Answer it now with [`Complete::answer`], or keep [`Complete::ticket`] and answer later
/// with [`Engine::answer_completion`].
#[non_exhaustive]
pub struct Complete<'a> {
    /// The ticket, for answering later.
    pub ticket: Ticket,
    /// The prompt or template, as declared in the catalog.
    pub reference: CompletionRef<'a>,
    /// The argument (prompt) or variable (template) being completed; a declared one.
    pub argument: &'a str,
    /// What the user typed so far.
    pub value: &'a str,
    /// `context.arguments`: values already given for other arguments (`{}` if none).
    pub context: Arguments<'a>,
    /// The revision the request was made under.
    pub revision: Revision,
    responder: Responder<'a>,
}

impl Complete<'_> {
    /// Answers now (see [`Engine::answer_completion`]).
    pub fn answer(self, values: &[&str], total: Option<u64>, has_more: bool) -> Result<(), AnswerError> {
        let r = self.responder;
        r.st.answer_completion(r.prepared, self.ticket, values, total, has_more)
    }
    /// Answers with an error now.
    pub fn fail(self, error: HostError<'_>) -> Result<(), AnswerError> {
        self.responder.st.answer_error(self.ticket, None, error)
    }
}

macro_rules! debug_fields {
    ($t:ident: $($f:ident),*) => {
        impl fmt::Debug for $t<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($t))$(.field(stringify!($f), &self.$f))*.finish_non_exhaustive()
            }
        }
    };
}
debug_fields!(CallTool: ticket, tool, arguments, revision, input_responses, request_state, client);
debug_fields!(ReadResource: ticket, uri, template, variables, revision, input_responses, request_state, client);
debug_fields!(GetPrompt: ticket, prompt, arguments, revision, input_responses, request_state, client);
debug_fields!(Complete: ticket, reference, argument, value, context, revision);

/// Work for the host, returned by [`Engine::poll_event`]. It borrows the engine: answer
/// through it, or copy what must outlive it (the ticket, the arguments) and answer later.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// Call a tool.
    CallTool(CallTool<'a>),
    /// Read a resource.
    ReadResource(ReadResource<'a>),
    /// Render a prompt.
    GetPrompt(GetPrompt<'a>),
    /// Complete an argument of a prompt or resource template.
    Complete(Complete<'a>),
    /// The client cancelled this ticket. Stop the work if you can; an answer given
    /// later is discarded ([`AnswerError::UnknownTicket`]).
    Cancelled(Ticket),
}

impl Event<'_> {
    /// The ticket this event is about.
    pub fn ticket(&self) -> Ticket {
        match self {
            Self::CallTool(c) => c.ticket,
            Self::ReadResource(r) => r.ticket,
            Self::GetPrompt(p) => p.ticket,
            Self::Complete(c) => c.ticket,
            Self::Cancelled(t) => *t,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tool,
    Resource,
    Prompt,
    Completion,
}

#[derive(Clone, Copy)]
struct IdBuf {
    len: u8,
    bytes: [u8; MAX_TICKET_ID_LEN],
}

impl IdBuf {
    fn of(id: IdRef<'_>) -> Option<Self> {
        let mut bytes = [0u8; MAX_TICKET_ID_LEN];
        let mut cur = std::io::Cursor::new(&mut bytes[..]);
        let ok = match id {
            IdRef::Str(s) => serde_json::to_writer(&mut cur, s),
            IdRef::I(n) => serde_json::to_writer(&mut cur, &n),
            IdRef::U(n) => serde_json::to_writer(&mut cur, &n),
        };
        let len = cur.position() as usize;
        ok.ok()?;
        Some(Self { len: len as u8, bytes })
    }
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

#[derive(Clone, Copy)]
struct Busy {
    kind: Kind,
    revision: Revision,
    id: IdBuf,
    route: Route,
    /// The catalog index of the tool (tool calls only).
    target: u32,
    /// The request's `_meta.progressToken`, as JSON, and the last progress sent for it.
    progress: Option<IdBuf>,
    last_progress: Option<f64>,
    /// The lowest level the client wants logs at for this request, if any.
    log_level: Option<LogLevel>,
    /// The input kinds the client declared on this request (2026-07-28).
    caps: ClientCapabilities,
    /// The digest a `requestState` for this request is bound to (when a key is set).
    digest: [u8; 32],
}

#[derive(Clone, Copy)]
pub(crate) struct Slot {
    generation: u32,
    busy: Option<Busy>,
}

#[derive(Clone, Copy)]
pub(crate) enum PendingKind {
    Tool(usize),
    Resource(Option<usize>),
    Prompt(usize),
    /// A completion for a prompt (`Ok`) or a resource template (`Err`).
    Complete(Result<usize, usize>),
}

#[derive(Clone, Copy)]
pub(crate) struct Pending {
    kind: PendingKind,
    ticket: Ticket,
    revision: Revision,
}

#[derive(Clone, Copy)]
enum IdRef<'t> {
    Str(&'t str),
    I(i64),
    U(u64),
}

impl IdRef<'_> {
    fn write(self, out: &mut Vec<u8>) {
        match self {
            Self::Str(s) => json::write_str(out, s),
            Self::I(n) => {
                let _ = serde_json::to_writer(&mut *out, &n);
            }
            Self::U(n) => json::write_u64(out, n),
        }
    }
}

/// A request (or the id of one) whose response goes out now or later.
#[derive(Clone, Copy)]
enum Reply<'a, 't> {
    /// No id could be read: the error carries none.
    None,
    /// The request's id, from the frame.
    Id(IdRef<'t>),
    /// A stored ticket id.
    Stored(&'a [u8]),
}

impl Reply<'_, '_> {
    fn write(self, out: &mut Vec<u8>) {
        match self {
            Self::None => {}
            Self::Id(id) => {
                out.extend_from_slice(b",\"id\":");
                id.write(out);
            }
            Self::Stored(raw) => {
                out.extend_from_slice(b",\"id\":");
                out.extend_from_slice(raw);
            }
        }
    }
}

/// Writes `{"jsonrpc":"2.0","id":..,"error":{..}}\n`.
fn write_error(
    out: &mut Vec<u8>,
    reply: Reply<'_, '_>,
    code: i32,
    message: fmt::Arguments<'_>,
    data: impl FnOnce(&mut Vec<u8>),
) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
    reply.write(out);
    out.extend_from_slice(b",\"error\":{\"code\":");
    let _ = serde_json::to_writer(&mut *out, &code);
    out.extend_from_slice(b",\"message\":");
    let _ = serde::Serializer::collect_str(&mut serde_json::Serializer::new(&mut *out), &message);
    let mark = out.len();
    out.extend_from_slice(b",\"data\":");
    let before = out.len();
    data(out);
    if out.len() == before {
        out.truncate(mark);
    }
    out.extend_from_slice(b"}}\n");
}

fn field(out: &mut Vec<u8>, key: &str) {
    if out.last() != Some(&b'{') {
        out.push(b',');
    }
    json::write_str(out, key);
    out.push(b':');
}

/// Values prepared once per engine (they depend only on config and catalog).
struct Prepared {
    /// `"_meta":{"io.modelcontextprotocol/serverInfo":{..}}` or empty.
    meta: Vec<u8>,
    /// The body of the `server/discover` result, between braces (stdio: every revision).
    discover: Vec<u8>,
    /// The same over HTTP, where only `2026-07-28` is served.
    discover_http: Vec<u8>,
    /// The body of the `initialize` result for 2025-11-25 and 2025-06-18, without
    /// `protocolVersion`.
    initialize: Vec<u8>,
    /// The `requestState` key and lifetime.
    state_key: Option<[u8; 32]>,
    state_ttl: u64,
}

fn capabilities(cfg: &Config, catalog: &Catalog) -> String {
    let mut caps = serde_json::Map::new();
    if cfg.logging {
        caps.insert("logging".into(), serde_json::json!({}));
    }
    if cfg.completions {
        caps.insert("completions".into(), serde_json::json!({}));
    }
    let changes = cfg.list_changed;
    if catalog.has_prompts() {
        caps.insert("prompts".into(), serde_json::json!({ "listChanged": changes }));
    }
    if catalog.has_resources() {
        let subscribe = cfg.resource_subscriptions;
        caps.insert(
            "resources".into(),
            serde_json::json!({ "subscribe": subscribe, "listChanged": changes }),
        );
    }
    if catalog.has_tools() {
        caps.insert("tools".into(), serde_json::json!({ "listChanged": changes }));
    }
    serde_json::Value::Object(caps).to_string()
}

impl Prepared {
    fn new(cfg: &Config, catalog: &Catalog) -> Self {
        let info = serde_json::to_string(&cfg.server_info).unwrap_or_default();
        let caps = capabilities(cfg, catalog);
        let mut meta = Vec::new();
        if cfg.server_info_meta {
            meta.extend_from_slice(b"\"_meta\":{\"io.modelcontextprotocol/serverInfo\":");
            meta.extend_from_slice(info.as_bytes());
            meta.push(b'}');
        }
        let discover_for = |revisions: &[Revision]| {
            let mut discover = Vec::new();
            discover.extend_from_slice(b"\"supportedVersions\":[");
            for (i, r) in revisions.iter().enumerate() {
                if i > 0 {
                    discover.push(b',');
                }
                json::write_str(&mut discover, r.as_str());
            }
            discover.extend_from_slice(b"],\"capabilities\":");
            discover.extend_from_slice(caps.as_bytes());
            if let Some(text) = &cfg.instructions {
                discover.extend_from_slice(b",\"instructions\":");
                json::write_str(&mut discover, text);
            }
            discover
        };
        let discover = discover_for(&Revision::ALL);
        let discover_http = discover_for(&[Revision::V2026_07_28]);
        let mut initialize = Vec::new();
        initialize.extend_from_slice(b"\"capabilities\":");
        initialize.extend_from_slice(caps.as_bytes());
        initialize.extend_from_slice(b",\"serverInfo\":");
        initialize.extend_from_slice(info.as_bytes());
        if let Some(text) = &cfg.instructions {
            initialize.extend_from_slice(b",\"instructions\":");
            json::write_str(&mut initialize, text);
        }
        Self {
            meta,
            discover,
            discover_http,
            initialize,
            state_key: cfg.state_key.as_ref().map(|k| k.0),
            state_ttl: u64::try_from(cfg.state_ttl.as_micros()).unwrap_or(u64::MAX),
        }
    }
}

/// Everything but the input buffer and the parser, so a parsed frame (which borrows
/// those two) can be handled with `&mut Core`.
pub(crate) struct Core {
    pub(crate) cfg: Config,
    pub(crate) catalog: Catalog,
    prepared: Prepared,
    scratch: Scratch,
    pub(crate) st: State,
    pub(crate) mode: Mode,
}

/// Which transport the core serves: the rules differ (DIGEST A.8, beam_mcp "dual-era is a
/// stdio fact").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Dual-era, newline-delimited JSON-RPC.
    Stdio,
    /// Stateless 2026-07-28 only, with mirrored headers.
    Http,
}

/// Where the answer of a ticket goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// The one stdio output.
    Stdio,
    /// An HTTP exchange: connection slot and generation, and the request's sequence on it.
    Http { conn: u32, generation: u32 },
}

/// An answer written into `State::out` for an HTTP route: `out[start..end]` is one
/// JSON-RPC message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Routed {
    pub(crate) route: Route,
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// A notification sent before the final answer (the response becomes a stream).
    pub(crate) interim: bool,
    /// The HTTP status of a final answer sent as JSON (0: 200).
    pub(crate) status: u16,
    /// A message of a `subscriptions/listen` stream (dropped, with the stream, when the
    /// connection cannot take it).
    pub(crate) sub: bool,
}

/// Whether a subscription asked for one kind of notification.
type SubFilter = fn(&Sub) -> bool;

/// An open `subscriptions/listen` stream.
pub(crate) struct Sub {
    /// The listen request's id, as JSON (the subscription id).
    id: IdBuf,
    pub(crate) route: Route,
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<Box<str>>,
}

/// Where the data of the current event lives (read by the event while it is held).
struct Scratch {
    args: Vec<u8>,
    uri: String,
    captures: Captures,
    /// The argument name and value of a completion request.
    completion: (String, String),
    /// What the current request brings for a multi-round-trip request.
    round: Round,
    /// The decoded `requestState`.
    state: Vec<u8>,
    /// `inputResponses`: keys and values (compact JSON), back to back.
    responses: Vec<u8>,
}

impl Round {
    fn reset(&mut self) {
        self.caps = ClientCapabilities::default();
        self.host_state = None;
        self.entries.clear();
    }
}

/// The multi-round-trip part of the request being dispatched.
#[derive(Default)]
struct Round {
    caps: ClientCapabilities,
    digest: [u8; 32],
    /// The host's part of a verified `requestState`, in `Scratch::state`.
    host_state: Option<core::ops::Range<usize>>,
    /// Key and value ranges in `Scratch::responses`.
    entries: heapless::Vec<(core::ops::Range<usize>, core::ops::Range<usize>), MAX_INPUT_REQUESTS>,
}

/// Output and ticket state (written by answers, also while an event is held).
pub(crate) struct State {
    pub(crate) out: Vec<u8>,
    pub(crate) out_pos: usize,
    /// HTTP status of the message the current request wrote at once (HTTP mode).
    pub(crate) http_status: u16,
    /// The route of the request being dispatched (becomes its ticket's route).
    pub(crate) route: Route,
    /// Answers to tickets written since the HTTP layer last looked (HTTP mode only).
    pub(crate) routed: Vec<Routed>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) in_flight: usize,
    pub(crate) pending: Option<Pending>,
    pub(crate) delivered: bool,
    pub(crate) cancels: VecDeque<Ticket>,
    legacy: Option<Revision>,
    /// The level `logging/setLevel` set on a session-bound stream.
    session_log_level: Option<LogLevel>,
    initialized: bool,
    frames: u64,
    /// The latest time the engine was given, in microseconds.
    pub(crate) now: u64,
    /// Open `subscriptions/listen` streams.
    pub(crate) subs: Vec<Sub>,
    /// The uris a session-bound stdio client subscribed to (`resources/subscribe`).
    legacy_uris: Vec<Box<str>>,
    /// The request just dispatched opened a subscription (HTTP: its stream stays open).
    pub(crate) subscribed: bool,
    /// Advances with every catalog replacement.
    catalog_revision: u64,
    /// The principal of the HTTP request being dispatched (see `http::Principal`).
    pub(crate) principal: Option<[u8; 32]>,
}

/// The simd-json buffers and tape, reused for every message.
pub(crate) struct Parser {
    buffers: Buffers,
    tape: Tape<'static>,
}

impl Parser {
    pub(crate) fn new(max_len: usize, max_depth: usize) -> Self {
        Self { buffers: Buffers::with_max_depth(max_len, max_depth), tape: Tape(Vec::new()) }
    }

    /// Parses `bytes` in place and runs `f` over the tape (or the parse error).
    pub(crate) fn parse<R>(
        &mut self,
        bytes: &mut [u8],
        f: impl FnOnce(Result<&[Node<'_>], simd_json::Error>) -> R,
    ) -> R {
        let mut tape = core::mem::replace(&mut self.tape, Tape(Vec::new())).reset();
        let r = match simd_json::fill_tape(bytes, &mut self.buffers, &mut tape) {
            Ok(()) => f(Ok(&tape.0)),
            Err(e) => f(Err(e)),
        };
        self.tape = tape.reset();
        r
    }
}

/// A core for `mode`, with every buffer at its working size.
pub(crate) fn new_core(cfg: Config, catalog: Catalog, mode: Mode) -> Core {
    let prepared = Prepared::new(&cfg, &catalog);
    let frame = cfg.max_frame_len;
    let slots = vec![Slot { generation: 0, busy: None }; cfg.max_in_flight];
    Core {
        prepared,
        mode,
        st: State {
            // What a slow reader can leave buffered (the limit, past which input waits, plus
            // the responses that crossed it and what was sent but not yet moved out):
            // reserved at once, so a reader falling behind costs no reallocation. Pages
            // are only touched as they are used.
            out: Vec::with_capacity(cfg.max_buffered_output.min(16 << 20) + 192 * 1024),
            out_pos: 0,
            http_status: 200,
            route: Route::Stdio,
            routed: Vec::with_capacity(cfg.max_in_flight),
            slots,
            in_flight: 0,
            pending: None,
            delivered: false,
            cancels: VecDeque::with_capacity(cfg.max_in_flight),
            legacy: None,
            session_log_level: None,
            initialized: false,
            frames: 0,
            now: 0,
            subs: Vec::with_capacity(cfg.max_subscriptions),
            legacy_uris: Vec::new(),
            subscribed: false,
            catalog_revision: 0,
            principal: None,
        },
        scratch: Scratch {
            args: Vec::with_capacity(frame),
            uri: String::with_capacity(1024),
            captures: Captures::new(),
            completion: (String::with_capacity(64), String::with_capacity(256)),
            round: Round::default(),
            state: Vec::with_capacity(mrtr::MAX_SEALED_LEN + 8),
            responses: Vec::with_capacity(frame),
        },
        catalog,
        cfg,
    }
}

/// The MCP server state machine.
///
/// # Method classes
///
/// - **Input** (`handle_*`): [`handle_input`](Self::handle_input) takes bytes read from the
///   client, [`handle_eof`](Self::handle_eof) says the client closed its side.
/// - **Commands** (`answer_*`): [`answer_tool`](Self::answer_tool),
///   [`answer_resource`](Self::answer_resource), [`answer_prompt`](Self::answer_prompt) and
///   [`answer_error`](Self::answer_error) answer a [`Ticket`], in any order, at any time.
/// - **Output** (`poll_*`): [`poll_event`](Self::poll_event) yields work for the host,
///   [`poll_transmit`](Self::poll_transmit) copies bytes to send into a caller buffer
///   ([`pending_output`](Self::pending_output) / [`consume_output`](Self::consume_output)
///   do the same without a copy), [`poll_timeout`](Self::poll_timeout) says when to call
///   [`handle_timeout`](Self::handle_timeout).
/// - **Getters** (`&self`): [`is_finished`](Self::is_finished),
///   [`in_flight`](Self::in_flight), [`input_capacity`](Self::input_capacity), ...
///
/// # The drain rule
///
/// After every input or command, drain [`poll_event`](Self::poll_event) until it returns
/// `None`, then [`poll_transmit`](Self::poll_transmit) until it returns `0`. The engine
/// processes frames one at a time and pauses at each host event until that event has
/// been polled, so a loop that does not drain stops making progress (it never loses
/// input: [`handle_input`](Self::handle_input) then accepts fewer bytes).
///
/// ```
/// use mcp_engine::{Catalog, Config, Content, Engine, Event, Instant, Tool, ToolOutput};
///
/// let catalog = Catalog::builder().tool(Tool::new("hello")).build().unwrap();
/// let mut engine = Engine::new(Config::new("demo", "1.0"), catalog);
/// let input = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
/// "#;
/// let mut out = Vec::new();
/// let mut buf = [0u8; 4096];
/// let mut fed = 0;
/// while fed < input.len() {
///     fed += engine.handle_input(Instant::ZERO, &input[fed..]);
///     while let Some(event) = engine.poll_event() {
///         if let Event::CallTool(call) = event {
///             call.answer(&ToolOutput::new(&[Content::text("hi")])).unwrap();
///         }
///     }
///     loop {
///         let n = engine.poll_transmit(&mut buf);
///         if n == 0 { break }
///         out.extend_from_slice(&buf[..n]);
///     }
/// }
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains(r#""content":[{"type":"text","text":"hi"}]"#));
/// ```
///
/// # Time
///
/// Every input takes `now`, a monotonic [`Instant`] the caller reads from its clock.
/// The engine never reads a clock; over stdio it arms no timer, so
/// [`poll_timeout`](Self::poll_timeout) is `None`.
///
/// # Errors and panics
///
/// Nothing the peer sends makes the engine panic or stop: every malformed frame is
/// answered with its JSON-RPC error and the stream goes on at the next frame. Misuse of
/// a ticket is reported as an [`AnswerError`].
pub struct Engine {
    inbuf: Vec<u8>,
    in_start: usize,
    scan_from: usize,
    discarding: bool,
    eof: bool,
    /// While the ticket slots are full: bytes after `in_start` already looked at (each
    /// frame in them waits for a slot, or is in `held_cancels`).
    held: usize,
    /// Where (from `in_start`) the frames in `held` that may be cancellations start: one
    /// that names a request still waiting for a slot is looked at again each time, since
    /// that request may have got its slot meanwhile.
    held_cancels: heapless::Vec<usize, 8>,
    /// A copy of a frame examined while the slots are full (parsing mutates its input).
    peek: Vec<u8>,
    /// Finds `cancelled` in frames held behind the in-flight limit (built once).
    cancelled: memchr::memmem::Finder<'static>,
    last_now: Instant,
    parser: Parser,
    core: Core,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("buffered_input", &(self.inbuf.len() - self.in_start))
            .field("pending_output", &(self.core.st.out.len() - self.core.st.out_pos))
            .field("in_flight", &self.core.st.in_flight)
            .field("legacy", &self.core.st.legacy)
            .field("eof", &self.eof)
            .finish()
    }
}

impl Engine {
    /// A new engine serving `catalog`. All buffers are allocated here, at their working
    /// size, so a steady stream of requests allocates nothing more.
    pub fn new(cfg: Config, catalog: Catalog) -> Self {
        let frame = cfg.max_frame_len;
        Self {
            // Twice what may be buffered: see `handle_input`.
            inbuf: Vec::with_capacity(2 * (frame + 2)),
            in_start: 0,
            scan_from: 0,
            discarding: false,
            eof: false,
            held: 0,
            held_cancels: heapless::Vec::new(),
            peek: Vec::with_capacity(frame),
            cancelled: memchr::memmem::Finder::new(b"cancelled"),
            last_now: Instant::ZERO,
            parser: Parser::new(frame + 2, cfg.max_depth),
            core: new_core(cfg, catalog, Mode::Stdio),
        }
    }

    /// The configuration the engine was built with.
    pub fn config(&self) -> &Config {
        &self.core.cfg
    }

    /// The catalog being served.
    pub fn catalog(&self) -> &Catalog {
        &self.core.catalog
    }

    /// The revision `initialize` negotiated on this stream, if any.
    pub fn negotiated_revision(&self) -> Option<Revision> {
        self.core.st.legacy
    }

    /// Whether the client sent `notifications/initialized` after `initialize`. Tracked,
    /// not enforced: requests are served before it, as they are over a stateless stream.
    pub fn is_initialized(&self) -> bool {
        self.core.st.initialized
    }

    /// Tickets handed out and not yet answered or cancelled.
    pub fn in_flight(&self) -> usize {
        self.core.st.in_flight
    }

    /// Frames processed so far (blank lines excluded).
    pub fn frames_processed(&self) -> u64 {
        self.core.st.frames
    }

    /// How many bytes [`handle_input`](Self::handle_input) would accept now.
    pub fn input_capacity(&self) -> usize {
        if self.eof {
            return 0;
        }
        (self.core.cfg.max_frame_len + 2).saturating_sub(self.inbuf.len() - self.in_start)
    }

    /// Whether the stream is over: the client closed its side, every ticket is answered
    /// or cancelled, every buffered frame is processed and all output was taken.
    pub fn is_finished(&self) -> bool {
        self.eof
            && self.core.st.in_flight == 0
            && self.core.st.pending.is_none()
            && self.in_start == self.inbuf.len()
            && self.core.st.out_pos == self.core.st.out.len()
    }

    fn clamp_now(&mut self, now: Instant) {
        if now > self.last_now {
            self.last_now = now;
        }
        self.core.st.now = self.last_now.as_micros();
    }

    /// Feeds bytes read from the client and processes every complete frame it can.
    ///
    /// Returns how many bytes were taken; the caller keeps the rest and offers them
    /// again after draining. Fewer than all are taken only while the engine is paused (a
    /// host event not yet polled, the in-flight limit reached, or too much output
    /// buffered) and its input buffer (one frame) is full. A partial frame is buffered,
    /// not an error; bytes of an over-long frame are discarded as they arrive.
    pub fn handle_input(&mut self, now: Instant, mut data: &[u8]) -> usize {
        self.clamp_now(now);
        self.release();
        if self.eof {
            return 0;
        }
        let total = data.len();
        while !data.is_empty() {
            if self.discarding {
                match memchr::memchr(b'\n', data) {
                    Some(i) => {
                        self.discarding = false;
                        data = &data[i + 1..];
                    }
                    None => data = &[],
                }
                continue;
            }
            let room = self.input_capacity();
            if room == 0 {
                break;
            }
            let take = room.min(data.len());
            // The buffered bytes move to the front only when the new ones do not fit
            // behind them. The buffer holds twice what may be buffered, so that happens
            // after about a buffer's worth was consumed: no byte moves more than about
            // once, even while a full buffer of frames waits for ticket slots and each
            // answer lets a few more bytes in. (Moving them on every call cost a
            // pipelining async host 12 % of its CPU time.) It never grows.
            if self.inbuf.len() + take > self.inbuf.capacity() {
                self.compact();
            }
            self.inbuf.extend_from_slice(&data[..take]);
            data = &data[take..];
            self.process();
        }
        total - data.len()
    }

    /// Says the client closed its side. A final frame without a newline is processed;
    /// then [`is_finished`](Self::is_finished) turns true once the work is done.
    pub fn handle_eof(&mut self, now: Instant) {
        self.clamp_now(now);
        self.release();
        if self.eof {
            return;
        }
        self.eof = true;
        self.process();
    }

    /// When [`handle_timeout`](Self::handle_timeout) should next be called. The stdio
    /// engine arms no timer, so this is `None`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// Advances timers to `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.clamp_now(now);
    }

    /// The next piece of work for the host, or `None` when there is none.
    ///
    /// Cancellations come first (they refer to earlier requests), then the event of
    /// the frame the engine paused at. Polling resumes frame processing, so it can
    /// produce output and further events.
    pub fn poll_event(&mut self) -> Option<Event<'_>> {
        self.release();
        self.process();
        self.core.next_event()
    }

    /// Copies output into `buf`; returns how many bytes were written (0: none pending).
    /// Output is a byte stream of newline-terminated frames; a frame may be split
    /// across calls.
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> usize {
        let pending = self.pending_output();
        let n = pending.len().min(buf.len());
        buf[..n].copy_from_slice(&pending[..n]);
        self.consume_output(n);
        n
    }

    /// The output not yet taken, without copying. Pair with
    /// [`consume_output`](Self::consume_output).
    pub fn pending_output(&self) -> &[u8] {
        &self.core.st.out[self.core.st.out_pos..]
    }

    /// Marks `n` bytes of [`pending_output`](Self::pending_output) as sent, then resumes
    /// processing if output was what held it back.
    pub fn consume_output(&mut self, n: usize) {
        let c = &mut self.core.st;
        c.out_pos = c.out_pos.saturating_add(n).min(c.out.len());
        if c.out_pos == c.out.len() {
            c.out.clear();
            c.out_pos = 0;
        } else if c.out_pos >= 64 * 1024 || c.out_pos * 2 >= c.out.len() {
            // A writer that always leaves a little behind must not make the buffer grow:
            // move the unsent tail to the front (no allocation).
            let len = c.out.len();
            c.out.copy_within(c.out_pos..len, 0);
            c.out.truncate(len - c.out_pos);
            c.out_pos = 0;
        }
        if n > 0 {
            self.release();
            self.process();
        }
    }

    /// Answers a tool call. The result is written to the output at once.
    pub fn answer_tool<S: Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        output: &ToolOutput<'_, S>,
    ) -> Result<(), AnswerError> {
        self.release();
        let r = self.core.st.answer_tool(&self.core.prepared, &self.core.catalog, ticket, output);
        self.process();
        r
    }

    /// Answers a resource read with its contents. Empty `contents` are never sent: they
    /// are answered as "resource not found".
    pub fn answer_resource(
        &mut self,
        ticket: Ticket,
        contents: &[ResourceContents<'_>],
    ) -> Result<(), AnswerError> {
        self.release();
        let c = &mut self.core;
        let r = c.st.answer_resource(&c.prepared, c.cfg.resources_cache, ticket, contents);
        self.process();
        r
    }

    /// Answers a prompt with its messages.
    pub fn answer_prompt(&mut self, ticket: Ticket, output: &PromptOutput<'_>) -> Result<(), AnswerError> {
        self.release();
        let r = self.core.st.answer_prompt(&self.core.prepared, ticket, output);
        self.process();
        r
    }

    /// Sends `notifications/progress` for a ticket whose request carried
    /// `_meta.progressToken`. `progress` must increase with every call; nothing can be
    /// sent once the ticket is answered or cancelled.
    pub fn notify_progress(
        &mut self,
        ticket: Ticket,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), NotifyError> {
        self.release();
        self.core.st.notify_progress(ticket, progress, total, message)
    }

    /// Answers a completion request with candidate values, most relevant first. At most
    /// 100 are sent; duplicates are dropped (the first kept); `total` (when known) and
    /// `has_more` are corrected so that they never claim less than was given.
    pub fn answer_completion(
        &mut self,
        ticket: Ticket,
        values: &[&str],
        total: Option<u64>,
        has_more: bool,
    ) -> Result<(), AnswerError> {
        self.release();
        let r = self.core.st.answer_completion(&self.core.prepared, ticket, values, total, has_more);
        self.process();
        r
    }

    /// Sends `notifications/message` for a ticket, if the client asked for logs at `level`
    /// or below on that request ([`Config::logging`] must be on): otherwise
    /// [`NotifyError::Filtered`], and nothing is written. Nothing can be sent once the
    /// ticket is answered or cancelled.
    pub fn notify_log<S: Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        level: LogLevel,
        logger: Option<&str>,
        data: &S,
    ) -> Result<(), NotifyError> {
        self.release();
        self.core.st.notify_log(ticket, level, logger, data)
    }

    /// Answers a ticket with an error instead of a result (see [`HostError`] for the
    /// code each variant becomes).
    pub fn answer_error(&mut self, ticket: Ticket, error: HostError<'_>) -> Result<(), AnswerError> {
        self.release();
        let r = self.core.st.answer_error(ticket, None, error);
        self.process();
        r
    }

    /// Answers a `tools/call`, `prompts/get` or `resources/read` ticket of a `2026-07-28`
    /// request with `resultType: "input_required"`: the client must fulfil `input`'s
    /// requests and retry the request with their responses (the host then sees them in
    /// the event's `input_responses`, and its own state, verified, in `request_state`).
    ///
    /// Requests of a kind the client did not declare on that request are left out; when
    /// that leaves none, the client gets `-32021` with `data.requiredCapabilities` (check
    /// the event's `client` first to ask only for what it can give). With
    /// [`Config::request_state_key`] the answer carries a `requestState` sealed with
    /// HMAC-SHA256 and bound to the method, the request's name and arguments (or uri), an
    /// expiry and the keys asked for.
    ///
    /// # Errors
    ///
    /// [`AnswerError::InputRequiredUnsupported`] for a request under an earlier revision,
    /// [`AnswerError::WrongKind`] for a completion,
    /// [`AnswerError::InvalidInputRequest`] for duplicate or over-long keys, too many
    /// requests, nothing to send, or host state without a key; nothing is written and the
    /// ticket stays open for another answer.
    pub fn answer_input_required(
        &mut self,
        ticket: Ticket,
        input: &InputRequired<'_>,
    ) -> Result<(), AnswerError> {
        self.release();
        let r = self.core.st.answer_input_required(&self.core.prepared, ticket, input);
        self.process();
        r
    }

    /// Replaces the catalog atomically and tells the clients that watch for it which
    /// lists changed: every `subscriptions/listen` stream that asked for that kind of
    /// change (and, with [`Config::list_changed`] on, a session-bound client gets the
    /// legacy `notifications/*/list_changed`). The catalog revision advances.
    ///
    /// Requests already handed to the host keep going; a tool call answered later is
    /// checked against the output schema of the tool of the same name in the new catalog
    /// (none if it is gone). List cursors stay valid (they are keys, not offsets).
    ///
    /// # Errors
    ///
    /// Refused, with nothing changed, when the new catalog adds or drops a whole family
    /// (the advertised capabilities would change) or while an event waits to be polled.
    pub fn replace_catalog(&mut self, catalog: Catalog) -> Result<CatalogChange, ReplaceError> {
        self.release();
        let r = self.core.replace_catalog(catalog);
        self.process();
        r
    }

    /// Sends `notifications/resources/updated` for `uri` to every subscription that
    /// watches it or a uri it is a sub-resource of (`uri` continues the subscribed one
    /// after `/`, `?` or `#`), and to a session-bound client that subscribed with
    /// `resources/subscribe`. Returns how many notifications were written. Nothing is
    /// sent unless [`Config::resource_subscriptions`] is on.
    pub fn notify_resource_updated(&mut self, uri: &str) -> usize {
        self.release();
        self.core.notify_resource_updated(uri)
    }

    /// Ends every `subscriptions/listen` stream from the server's side (before a shutdown,
    /// say): each gets its graceful result, and on stdio `notifications/cancelled` naming
    /// it. Returns how many were ended.
    pub fn end_subscriptions(&mut self) -> usize {
        self.release();
        self.core.end_subscriptions()
    }

    /// How many `subscriptions/listen` streams are open.
    pub fn subscriptions(&self) -> usize {
        self.core.st.subs.len()
    }

    /// The catalog revision: 0 at start, one more with every replacement.
    pub fn catalog_revision(&self) -> u64 {
        self.core.st.catalog_revision
    }

    /// Forgets the event the caller has polled: its borrow has ended by now.
    fn release(&mut self) {
        if self.core.st.delivered {
            self.core.st.delivered = false;
            self.core.st.pending = None;
        }
    }

    fn compact(&mut self) {
        if self.in_start == 0 {
            return;
        }
        let len = self.inbuf.len();
        self.inbuf.copy_within(self.in_start..len, 0);
        self.inbuf.truncate(len - self.in_start);
        self.in_start = 0;
    }

    /// Processes complete frames until the buffer is exhausted or the engine pauses.
    fn process(&mut self) {
        let max = self.core.cfg.max_frame_len;
        loop {
            let c = &self.core;
            if c.st.pending.is_some() || c.st.out.len() - c.st.out_pos >= c.cfg.max_buffered_output {
                break;
            }
            if c.st.in_flight >= c.cfg.max_in_flight {
                if self.process_held() {
                    continue;
                }
                break;
            }
            let rest = &self.inbuf[self.in_start..];
            match memchr::memchr(b'\n', &rest[self.scan_from..]) {
                Some(i) => {
                    let start = self.in_start;
                    let mut end = start + self.scan_from + i;
                    self.in_start = end + 1;
                    self.scan_from = 0;
                    self.shift_held(end + 1 - start);
                    if end > start && self.inbuf[end - 1] == b'\r' {
                        end -= 1;
                    }
                    if end - start > max {
                        self.core.oversized();
                    } else {
                        self.frame(start, end);
                    }
                }
                None => {
                    self.scan_from = rest.len();
                    if rest.len() > max + 1 {
                        // Too long already: answer now and drop the rest unread.
                        self.core.oversized();
                        self.in_start = self.inbuf.len();
                        self.scan_from = 0;
                        self.discarding = true;
                    } else if self.eof && !rest.is_empty() {
                        let (start, mut end) = (self.in_start, self.inbuf.len());
                        self.in_start = end;
                        self.scan_from = 0;
                        if self.inbuf[end - 1] == b'\r' {
                            end -= 1;
                        }
                        if end - start > max {
                            self.core.oversized();
                        } else {
                            self.frame(start, end);
                        }
                    }
                    break;
                }
            }
        }
        if self.in_start == self.inbuf.len() {
            self.inbuf.clear();
            self.in_start = 0;
            self.scan_from = 0;
            self.forget_held();
        }
    }

    /// The head frame, `consumed` bytes, was taken: what was looked at behind it moves up.
    fn shift_held(&mut self, consumed: usize) {
        self.held = self.held.saturating_sub(consumed);
        let mut kept = heapless::Vec::new();
        for &c in &self.held_cancels {
            if c >= consumed {
                let _ = kept.push(c - consumed);
            }
        }
        self.held_cancels = kept;
    }

    /// Everything after `in_start` is to be looked at again.
    fn forget_held(&mut self) {
        self.held = 0;
        self.held_cancels.clear();
    }

    /// The frame at `pos..=nl` (behind the head) was taken out of order.
    fn take_from_behind(&mut self, pos: usize, nl: usize) {
        // Taken out of order: remove it (no allocation, a move within the buffer).
        self.inbuf.drain(pos..=nl);
        let (at, len) = (pos - self.in_start, nl + 1 - pos);
        if at < self.held {
            self.held -= len;
        }
        let mut kept = heapless::Vec::new();
        for &c in &self.held_cancels {
            if c != at {
                let _ = kept.push(if c > at { c - len } else { c });
            }
        }
        self.held_cancels = kept;
    }

    /// While every ticket slot is busy: frames at the head that need no ticket are served
    /// in order, and notifications (cancellations above all) are taken from behind the
    /// requests that wait for a slot, so a client can always cancel what it started.
    /// Requests that need a ticket, and anything behind them, stay where they are.
    /// Returns whether a frame was consumed.
    fn process_held(&mut self) -> bool {
        let max = self.core.cfg.max_frame_len;
        // The head: served in order if it needs no slot (it may have moved up since).
        let head = self.in_start;
        let Some(i) = memchr::memchr(b'\n', &self.inbuf[head..]) else {
            if self.inbuf.len() - head > max + 1 {
                // An over-long frame at the head: answered and dropped as on the normal path.
                self.core.oversized();
                self.in_start = self.inbuf.len();
                self.scan_from = 0;
                self.discarding = true;
                self.forget_held();
                return true;
            }
            return false;
        };
        let nl = head + i;
        let end = if nl > head && self.inbuf[nl - 1] == b'\r' { nl - 1 } else { nl };
        let blank = self.inbuf[head..end].iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'));
        if blank || end - head > max || self.peek_frame(head, end, true) {
            if !blank && end - head > max {
                self.core.oversized();
            }
            self.in_start = nl + 1;
            self.scan_from = 0;
            self.shift_held(nl + 1 - head);
            return true;
        }
        // Cancellations seen before, whose request may hold a slot by now.
        for k in 0..self.held_cancels.len() {
            let pos = self.in_start + self.held_cancels[k];
            let Some(i) = memchr::memchr(b'\n', &self.inbuf[pos..]) else { continue };
            let nl = pos + i;
            let end = if nl > pos && self.inbuf[nl - 1] == b'\r' { nl - 1 } else { nl };
            if self.peek_frame(pos, end, false) {
                self.take_from_behind(pos, nl);
                return true;
            }
        }
        // Frames not looked at yet. From behind, only a cancellation can be served: a frame
        // that cannot be one is not parsed (one whose text has escapes is, to be sure).
        let mut pos = (self.in_start + self.held).max(nl + 1);
        while let Some(i) = memchr::memchr(b'\n', &self.inbuf[pos..]) {
            let nl = pos + i;
            let end = if nl > pos && self.inbuf[nl - 1] == b'\r' { nl - 1 } else { nl };
            let frame = &self.inbuf[pos..end];
            let candidate = end - pos <= max
                && (self.cancelled.find(frame).is_some() || memchr::memchr(b'\\', frame).is_some());
            if candidate {
                if self.peek_frame(pos, end, false) {
                    self.held = pos - self.in_start;
                    self.take_from_behind(pos, nl);
                    return true;
                }
                if self.held_cancels.push(pos - self.in_start).is_err() {
                    // Too many to remember: looked at again from here next time.
                    self.held = pos - self.in_start;
                    return false;
                }
            }
            pos = nl + 1;
            self.held = pos - self.in_start;
        }
        false
    }

    /// Parses a copy of a frame; serves it if it needs no ticket and either sits at the
    /// head or is a notification. Returns whether it was served.
    fn peek_frame(&mut self, start: usize, end: usize, at_head: bool) -> bool {
        self.peek.clear();
        self.peek.extend_from_slice(&self.inbuf[start..end]);
        let parser = &mut self.parser;
        let mut tape = core::mem::replace(&mut parser.tape, Tape(Vec::new())).reset();
        let served = match simd_json::fill_tape(&mut self.peek, &mut parser.buffers, &mut tape) {
            Ok(()) => {
                let n = &tape.0;
                let notification = json::is_object(n, 0) && json::get(n, 0, "id").is_none();
                let method = json::get(n, 0, "method").and_then(|m| json::str_at(n, m));
                let ticketed = matches!(
                    method,
                    Some("tools/call" | "resources/read" | "prompts/get" | "completion/complete")
                );
                // In order at the head; from behind a waiting request only a cancellation
                // of a request that already holds a ticket (any other frame could depend on
                // what waits before it, and a cancel of a waiting request must wait with it).
                let serve = if at_head {
                    notification || !ticketed
                } else {
                    notification && method == Some("notifications/cancelled") && self.core.cancel_is_live(n)
                };
                if serve {
                    self.core.st.frames += 1;
                    self.core.dispatch(n, &[]);
                }
                serve
            }
            Err(e) if at_head => {
                self.core.st.frames += 1;
                self.core.parse_failure(&e);
                true
            }
            Err(_) => false,
        };
        self.parser.tape = tape.reset();
        served
    }

    fn frame(&mut self, start: usize, end: usize) {
        let bytes = &mut self.inbuf[start..end];
        if bytes.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            return;
        }
        self.core.st.frames += 1;
        let parser = &mut self.parser;
        let mut tape = core::mem::replace(&mut parser.tape, Tape(Vec::new())).reset();
        match simd_json::fill_tape(bytes, &mut parser.buffers, &mut tape) {
            Ok(()) => self.core.dispatch(&tape.0, &[]),
            Err(e) => self.core.parse_failure(&e),
        }
        self.parser.tape = tape.reset();
    }
}

/// Runs the header matcher over what the body says; writes the `-32020` error and
/// returns false on a mismatch.
fn check_headers(
    catalog: &Catalog,
    req: &Req<'_, '_>,
    method: &str,
    version: &str,
    headers: &[httparse::Header<'_>],
    out: &mut Vec<u8>,
) -> bool {
    let n = req.n;
    let param_str =
        |key: &str| req.params.and_then(|p| json::get(n, p, key)).and_then(|i| json::str_at(n, i));
    let name = match method {
        "tools/call" | "prompts/get" => param_str("name"),
        "resources/read" => param_str("uri"),
        _ => None,
    };
    let declared = match (method, name) {
        ("tools/call", Some(tool)) => catalog.tool_header_params(tool).unwrap_or(&[]),
        _ => &[],
    };
    let args = req.params.and_then(|p| json::get(n, p, "arguments"));
    // Checked in groups so that no tool, however many annotations it has, needs a
    // heap-allocated list.
    const GROUP: usize = 8;
    let mut groups = declared.chunks(GROUP).peekable();
    loop {
        let mut checks: heapless::Vec<http_headers::ParamCheck<'_>, GROUP> = heapless::Vec::new();
        if let Some(group) = groups.next() {
            for param in group {
                let value = body_value(n, args, &param.path);
                // `GROUP` elements at most: cannot overflow.
                let _ =
                    checks.push(http_headers::ParamCheck { header: &param.header, kind: param.kind, value });
            }
        }
        let expected = http_headers::Expected { protocol_version: version, method, name, params: &checks };
        if let Err(mismatch) = http_headers::check(headers, &expected) {
            write_error(out, Reply::Id(req.id), code::HEADER_MISMATCH, format_args!("{mismatch}"), |_| {});
            return false;
        }
        if groups.peek().is_none() {
            return true;
        }
    }
}

/// The request id a `notifications/cancelled` frame names, in its stored form.
fn cancelled_id(n: &[Node<'_>]) -> Option<IdBuf> {
    let p = json::get(n, 0, "params")?;
    let ri = json::get(n, p, "requestId")?;
    let id = match n.get(ri)? {
        Node::String(s) => IdRef::Str(s),
        Node::Static(StaticNode::I64(v)) => IdRef::I(*v),
        Node::Static(StaticNode::U64(v)) => IdRef::U(*v),
        _ => return None,
    };
    IdBuf::of(id)
}

/// Whether `structuredContent` conforms to the tool's output schema (and, before
/// 2026-07-28, is an object as those revisions require).
fn structured_conforms<S: Serialize + ?Sized>(
    validator: &jsonschema::Validator,
    structured: Option<&S>,
    revision: Revision,
) -> bool {
    let Some(s) = structured else { return false };
    let Ok(value) = serde_json::to_value(s) else { return false };
    (revision.is_stateless() || value.is_object()) && validator.is_valid(&value)
}

/// Writes a JSON number: integral values without a fraction (`50`, not `50.0`).
fn write_number(out: &mut Vec<u8>, v: f64) {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        let _ = serde_json::to_writer(&mut *out, &(v as i64));
    } else {
        let _ = serde_json::to_writer(&mut *out, &v);
    }
}

/// A log level (syslog severities, RFC 5424), lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    const ALL: [Self; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        LOG_LEVELS[self as usize]
    }
    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// The log level a 2026-07-28 request asks for in its `_meta`.
fn request_log_level(req: &Req<'_, '_>) -> Option<LogLevel> {
    let n = req.n;
    let m = req.meta?;
    let l = json::get(n, m, "io.modelcontextprotocol/logLevel")?;
    LogLevel::parse(json::str_at(n, l)?)
}

/// The levels `io.modelcontextprotocol/logLevel` may name.
const LOG_LEVELS: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// The body value at `path` below the `arguments` object, as the header matcher sees it.
fn body_value<'t>(n: &[Node<'t>], args: Option<usize>, path: &[Box<str>]) -> http_headers::BodyValue<'t> {
    use http_headers::BodyValue;
    let Some(mut at) = args else { return BodyValue::Absent };
    for key in path {
        match json::get(n, at, key) {
            Some(next) => at = next,
            None => return BodyValue::Absent,
        }
    }
    match n.get(at) {
        Some(Node::String(s)) => BodyValue::Str(s),
        Some(Node::Static(StaticNode::I64(v))) => BodyValue::I64(*v),
        Some(Node::Static(StaticNode::U64(v))) => BodyValue::U64(*v),
        Some(Node::Static(StaticNode::F64(v))) => BodyValue::F64(*v),
        Some(Node::Static(StaticNode::Bool(b))) => BodyValue::Bool(*b),
        Some(Node::Static(StaticNode::Null)) => BodyValue::Null,
        _ => BodyValue::Other,
    }
}

/// The outcome of validating a request's revision.
enum Era {
    Legacy(Revision),
    Modern,
}

impl Core {
    /// Cancels every ticket of `route` (its HTTP response stream closed): the host
    /// learns through [`Event::Cancelled`] and nothing more is written for it.
    pub(crate) fn cancel_route(&mut self, route: Route) {
        self.st.subs.retain(|s| s.route != route);
        for slot in 0..self.st.slots.len() {
            let s = self.st.slots[slot];
            if s.busy.is_some_and(|b| b.route == route) {
                self.st.free(slot);
                self.st.cancels.push_back(Ticket { slot: slot as u16, generation: s.generation });
            }
        }
    }

    /// Whether the cancellation notification `n` names a request holding a ticket.
    fn cancel_is_live(&self, n: &[Node<'_>]) -> bool {
        let Some(id) = cancelled_id(n) else { return false };
        self.st.slots.iter().any(|s| s.busy.is_some_and(|b| b.id.as_bytes() == id.as_bytes()))
    }

    /// Forgets the delivered event (its borrow has ended).
    pub(crate) fn release(&mut self) {
        if self.st.delivered {
            self.st.delivered = false;
            self.st.pending = None;
        }
    }

    pub(crate) fn answer_tool<S: Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        output: &ToolOutput<'_, S>,
    ) -> Result<(), AnswerError> {
        self.st.answer_tool(&self.prepared, &self.catalog, ticket, output)
    }

    pub(crate) fn answer_resource(
        &mut self,
        ticket: Ticket,
        contents: &[ResourceContents<'_>],
    ) -> Result<(), AnswerError> {
        self.st.answer_resource(&self.prepared, self.cfg.resources_cache, ticket, contents)
    }

    pub(crate) fn answer_prompt(
        &mut self,
        ticket: Ticket,
        output: &PromptOutput<'_>,
    ) -> Result<(), AnswerError> {
        self.st.answer_prompt(&self.prepared, ticket, output)
    }

    pub(crate) fn answer_error(&mut self, ticket: Ticket, error: HostError<'_>) -> Result<(), AnswerError> {
        self.st.answer_error(ticket, None, error)
    }

    pub(crate) fn answer_input_required(
        &mut self,
        ticket: Ticket,
        input: &InputRequired<'_>,
    ) -> Result<(), AnswerError> {
        self.st.answer_input_required(&self.prepared, ticket, input)
    }

    pub(crate) fn notify_progress(
        &mut self,
        ticket: Ticket,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), NotifyError> {
        self.st.notify_progress(ticket, progress, total, message)
    }

    pub(crate) fn notify_log<S: Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        level: LogLevel,
        logger: Option<&str>,
        data: &S,
    ) -> Result<(), NotifyError> {
        self.st.notify_log(ticket, level, logger, data)
    }

    pub(crate) fn answer_completion(
        &mut self,
        ticket: Ticket,
        values: &[&str],
        total: Option<u64>,
        has_more: bool,
    ) -> Result<(), AnswerError> {
        self.st.answer_completion(&self.prepared, ticket, values, total, has_more)
    }

    /// The next event: a cancellation, else the pending request (marked delivered).
    pub(crate) fn next_event(&mut self) -> Option<Event<'_>> {
        if let Some(t) = self.st.cancels.pop_front() {
            return Some(Event::Cancelled(t));
        }
        let p = self.st.pending?;
        let Self { cfg, catalog, prepared, scratch, st, .. } = self;
        st.delivered = true;
        let responder = Responder { st, prepared, catalog, resources_cache: cfg.resources_cache };
        let args = Arguments { raw: core::str::from_utf8(&scratch.args).unwrap_or("{}") };
        let input_responses = InputResponses { buf: &scratch.responses, entries: &scratch.round.entries };
        let request_state = scratch.round.host_state.clone().and_then(|r| scratch.state.get(r));
        let client = scratch.round.caps;
        Some(match p.kind {
            PendingKind::Tool(i) => Event::CallTool(CallTool {
                ticket: p.ticket,
                tool: &catalog.tools[i].tool,
                arguments: args,
                revision: p.revision,
                input_responses,
                request_state,
                client,
                responder,
            }),
            PendingKind::Prompt(i) => Event::GetPrompt(GetPrompt {
                ticket: p.ticket,
                prompt: &catalog.prompts[i].prompt,
                arguments: args,
                revision: p.revision,
                input_responses,
                request_state,
                client,
                responder,
            }),
            PendingKind::Complete(target) => Event::Complete(Complete {
                ticket: p.ticket,
                reference: match target {
                    Ok(i) => CompletionRef::Prompt(&catalog.prompts[i].prompt),
                    Err(i) => CompletionRef::Template(&catalog.templates[i].template),
                },
                argument: &scratch.completion.0,
                value: &scratch.completion.1,
                context: args,
                revision: p.revision,
                responder,
            }),
            PendingKind::Resource(t) => {
                let entry = t.map(|t| &catalog.templates[t]);
                Event::ReadResource(ReadResource {
                    ticket: p.ticket,
                    uri: &scratch.uri,
                    template: entry.map(|e| &e.template),
                    variables: TemplateVars {
                        uri: &scratch.uri,
                        names: entry.map_or(&[][..], |e| e.parsed.var_names()),
                        captures: &scratch.captures,
                    },
                    revision: p.revision,
                    input_responses,
                    request_state,
                    client,
                    responder,
                })
            }
        })
    }

    pub(crate) fn parse_failure(&mut self, e: &simd_json::Error) {
        if matches!(e.error(), simd_json::ErrorType::DepthLimitExceeded) {
            let depth = self.cfg.max_depth;
            self.error(
                Reply::None,
                code::INVALID_REQUEST,
                format_args!("Invalid Request: JSON nested deeper than {depth} levels"),
            );
        } else {
            self.error(Reply::None, code::PARSE_ERROR, format_args!("Parse error: not valid UTF-8 JSON"));
        }
    }

    fn oversized(&mut self) {
        let max = self.cfg.max_frame_len;
        write_error(
            &mut self.st.out,
            Reply::None,
            code::INVALID_REQUEST,
            format_args!("Invalid Request: frame longer than {max} bytes"),
            |_| {},
        );
    }

    fn error(&mut self, reply: Reply<'_, '_>, code: i32, message: fmt::Arguments<'_>) {
        self.st.http_status = match code {
            code::METHOD_NOT_FOUND => 404,
            code::PARSE_ERROR | code::INVALID_REQUEST => 400,
            _ => self.st.http_status,
        };
        write_error(&mut self.st.out, reply, code, message, |_| {});
    }

    /// Writes a `-32602` that refuses the request's envelope (HTTP 400, unlike a
    /// `-32602` about a method's parameters, which HTTP answers with 200).
    fn refuse_meta(&mut self, reply: Reply<'_, '_>, message: fmt::Arguments<'_>) {
        self.st.http_status = 400;
        write_error(&mut self.st.out, reply, code::INVALID_PARAMS, message, |_| {});
    }

    /// The revision rules of Streamable HTTP (2026-07-28 only), in the order the
    /// conformance suite implies (DIGEST Part D item 2): `_meta` present (`-32602`), the
    /// headers mirror the body (`-32020`), the revision is supported (`-32022`).
    fn era_http(&mut self, req: &Req<'_, '_>, method: &str, headers: &[httparse::Header<'_>]) -> Option<Era> {
        let n = req.n;
        let reply = Reply::Id(req.id);
        let meta = req.meta;
        let Some(m) = meta.filter(|&m| json::is_object(n, m)) else {
            self.refuse_meta(
                reply,
                format_args!(
                    "Invalid params: params._meta must be an object carrying io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"
                ),
            );
            return None;
        };
        let Some(version) =
            json::get(n, m, "io.modelcontextprotocol/protocolVersion").and_then(|i| json::str_at(n, i))
        else {
            self.refuse_meta(
                reply,
                format_args!("Invalid params: params._meta must carry io.modelcontextprotocol/protocolVersion as a string"),
            );
            return None;
        };
        if !json::get(n, m, "io.modelcontextprotocol/clientCapabilities")
            .is_some_and(|c| json::is_object(n, c))
        {
            self.refuse_meta(
                reply,
                format_args!("Invalid params: params._meta must carry io.modelcontextprotocol/clientCapabilities as an object"),
            );
            return None;
        }
        if !check_headers(&self.catalog, req, method, version, headers, &mut self.st.out) {
            self.st.http_status = 400;
            return None;
        }
        if version != Revision::V2026_07_28.as_str() {
            self.st.http_status = 400;
            write_error(
                &mut self.st.out,
                reply,
                code::UNSUPPORTED_PROTOCOL_VERSION,
                format_args!("Unsupported protocol version: {version}"),
                |out| {
                    out.extend_from_slice(b"{\"supported\":[\"2026-07-28\"],\"requested\":");
                    json::write_str(out, version);
                    out.push(b'}');
                },
            );
            return None;
        }
        if let Some(li) = json::get(n, m, "io.modelcontextprotocol/logLevel")
            && !json::str_at(n, li).is_some_and(|l| LOG_LEVELS.contains(&l))
        {
            self.refuse_meta(reply, format_args!("Invalid params: unknown io.modelcontextprotocol/logLevel"));
            return None;
        }
        Some(Era::Modern)
    }

    pub(crate) fn dispatch(&mut self, n: &[Node<'_>], headers: &[httparse::Header<'_>]) {
        match n.first() {
            Some(Node::Object { .. }) => {}
            Some(Node::Array { .. }) => {
                return self.error(
                    Reply::None,
                    code::INVALID_REQUEST,
                    format_args!("Invalid Request: batches are not supported; send one message per line"),
                );
            }
            _ => {
                return self.error(
                    Reply::None,
                    code::INVALID_REQUEST,
                    format_args!("Invalid Request: a message must be a JSON object"),
                );
            }
        }
        let [jsonrpc, id, method, params, top_meta, result, error] =
            json::members(n, 0, ["jsonrpc", "id", "method", "params", "_meta", "result", "error"]);
        // A response (result or error, no method) is never answered, whatever its id:
        // this server sends no requests, so there is nothing to match it with.
        if method.is_none() && (result.is_some() || error.is_some()) {
            return;
        }
        // The id first, so every later error can echo it.
        let id = match id {
            None => None,
            Some(i) => match n[i] {
                Node::String(s) => Some(IdRef::Str(s)),
                Node::Static(StaticNode::I64(v)) => Some(IdRef::I(v)),
                Node::Static(StaticNode::U64(v)) => Some(IdRef::U(v)),
                _ => {
                    return self.error(
                        Reply::None,
                        code::INVALID_REQUEST,
                        format_args!("Invalid Request: id must be a string or an integer"),
                    );
                }
            },
        };
        let reply = id.map_or(Reply::None, Reply::Id);
        if jsonrpc.and_then(|i| json::str_at(n, i)) != Some("2.0") {
            if id.is_none() && method.is_some() {
                return; // a notification is never answered, even a malformed one
            }
            return self.error(
                reply,
                code::INVALID_REQUEST,
                format_args!("Invalid Request: jsonrpc must be \"2.0\""),
            );
        }
        let Some(mi) = method else {
            if id.is_some() && (result.is_some() || error.is_some()) {
                return; // a response: this server sends no requests, so there is nothing to match
            }
            return self.error(
                reply,
                code::INVALID_REQUEST,
                format_args!("Invalid Request: method is missing"),
            );
        };
        let Some(method) = json::str_at(n, mi) else {
            if id.is_none() {
                return;
            }
            return self.error(
                reply,
                code::INVALID_REQUEST,
                format_args!("Invalid Request: method must be a string"),
            );
        };
        let Some(id) = id else {
            return self.notification(n, method);
        };
        if top_meta.is_some() {
            return self.error(
                reply,
                code::INVALID_PARAMS,
                format_args!(
                    "Invalid params: _meta belongs inside params, not at the top level of the request"
                ),
            );
        }
        if let Some(p) = params
            && !json::is_object(n, p)
        {
            return self.error(
                reply,
                code::INVALID_PARAMS,
                format_args!("Invalid params: params must be an object"),
            );
        }
        let meta = params.and_then(|p| json::get(n, p, "_meta"));
        let req = Req { n, id, params, meta };
        self.scratch.round.reset();
        let era = match self.mode {
            Mode::Stdio => {
                // Matched before the revision switch: the era probe (answered bare unless its
                // `_meta` names a revision, which is then checked like any other), the legacy
                // opener, and a `ping` before `initialize` (the legacy lifecycle allows it).
                match method {
                    "server/discover" if meta.is_none() => return self.discover(&req),
                    "initialize" => return self.initialize(&req),
                    "ping" if meta.is_none() && self.st.legacy.is_none() => {
                        return self.pong(reply);
                    }
                    _ => {}
                }
                self.era(&req)
            }
            Mode::Http => self.era_http(&req, method, headers),
        };
        let rev = match era {
            Some(Era::Modern) => Revision::V2026_07_28,
            Some(Era::Legacy(r)) => r,
            None => return,
        };
        let c = &self.catalog;
        match method {
            "server/discover" => self.discover(&req),
            "ping" if !rev.is_stateless() => self.pong(reply),
            "logging/setLevel" if !rev.is_stateless() && self.cfg.logging => {
                let level = req
                    .params
                    .and_then(|p| json::get(n, p, "level"))
                    .and_then(|i| json::str_at(n, i))
                    .and_then(LogLevel::parse);
                match level {
                    Some(level) => {
                        self.st.session_log_level = Some(level);
                        self.pong(reply);
                    }
                    None => self.error(
                        reply,
                        code::INVALID_PARAMS,
                        format_args!("Invalid params: unknown log level"),
                    ),
                }
            }
            "tools/list" if c.has_tools() => self.list(&req, rev, ListKind::Tools),
            "tools/call" if c.has_tools() => self.call_tool(&req, rev),
            "resources/list" if c.has_resources() => self.list(&req, rev, ListKind::Resources),
            "resources/templates/list" if c.has_resources() => {
                self.list(&req, rev, ListKind::ResourceTemplates)
            }
            "resources/read" if c.has_resources() => self.read_resource(&req, rev),
            "prompts/list" if c.has_prompts() => self.list(&req, rev, ListKind::Prompts),
            "prompts/get" if c.has_prompts() => self.get_prompt(&req, rev),
            "completion/complete" if self.cfg.completions => self.complete(&req, rev),
            "subscriptions/listen"
                if rev.is_stateless() && (self.cfg.list_changed || self.cfg.resource_subscriptions) =>
            {
                self.listen(&req)
            }
            "resources/subscribe" | "resources/unsubscribe"
                if !rev.is_stateless() && self.cfg.resource_subscriptions && c.has_resources() =>
            {
                self.legacy_subscribe(&req, rev, method == "resources/subscribe")
            }
            _ => self.error(reply, code::METHOD_NOT_FOUND, format_args!("Method not found: {method}")),
        }
    }

    fn notification(&mut self, n: &[Node<'_>], method: &str) {
        match method {
            "notifications/initialized" if self.st.legacy.is_some() => self.st.initialized = true,
            "notifications/cancelled" if self.mode == Mode::Stdio => {
                let Some(idb) = cancelled_id(n) else { return };
                let found = self
                    .st
                    .slots
                    .iter()
                    .position(|s| s.busy.is_some_and(|b| b.id.as_bytes() == idb.as_bytes()));
                if let Some(slot) = found {
                    let generation = self.st.slots[slot].generation;
                    self.st.free(slot);
                    self.st.cancels.push_back(Ticket { slot: slot as u16, generation });
                }
                // The client ends a listen stream: nothing more is sent on it.
                self.st.subs.retain(|s| s.id.as_bytes() != idb.as_bytes());
            }
            _ => {}
        }
    }

    /// Decides the revision of a request; writes the error and returns `None` when the
    /// request cannot be served.
    fn era(&mut self, req: &Req<'_, '_>) -> Option<Era> {
        let n = req.n;
        let reply = Reply::Id(req.id);
        let meta = req.meta;
        let meta = match meta {
            Some(m) if json::is_object(n, m) => Some(m),
            Some(_) => {
                self.error(
                    reply,
                    code::INVALID_PARAMS,
                    format_args!("Invalid params: params._meta must be an object"),
                );
                return None;
            }
            None => None,
        };
        let version = meta.and_then(|m| json::get(n, m, "io.modelcontextprotocol/protocolVersion"));
        let Some(vi) = version else {
            if let Some(r) = self.st.legacy {
                return Some(Era::Legacy(r));
            }
            self.error(
                reply,
                code::INVALID_PARAMS,
                format_args!(
                    "Invalid params: params._meta must carry io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities (or open the stream with initialize)"
                ),
            );
            return None;
        };
        let Some(requested) = json::str_at(n, vi) else {
            self.error(
                reply,
                code::INVALID_PARAMS,
                format_args!("Invalid params: io.modelcontextprotocol/protocolVersion must be a string"),
            );
            return None;
        };
        let Some(rev) = Revision::parse(requested) else {
            write_error(
                &mut self.st.out,
                reply,
                code::UNSUPPORTED_PROTOCOL_VERSION,
                format_args!("Unsupported protocol version: {requested}"),
                |out| {
                    out.extend_from_slice(b"{\"supported\":[");
                    for (i, r) in Revision::ALL.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        json::write_str(out, r.as_str());
                    }
                    out.extend_from_slice(b"],\"requested\":");
                    json::write_str(out, requested);
                    out.push(b'}');
                },
            );
            return None;
        };
        if !rev.is_stateless() {
            return Some(Era::Legacy(rev));
        }
        let m = meta?;
        match json::get(n, m, "io.modelcontextprotocol/clientCapabilities") {
            Some(ci) if json::is_object(n, ci) => {}
            Some(_) => {
                self.error(
                    reply,
                    code::INVALID_PARAMS,
                    format_args!(
                        "Invalid params: io.modelcontextprotocol/clientCapabilities must be an object"
                    ),
                );
                return None;
            }
            None => {
                self.error(
                    reply,
                    code::INVALID_PARAMS,
                    format_args!(
                        "Invalid params: params._meta must carry io.modelcontextprotocol/clientCapabilities"
                    ),
                );
                return None;
            }
        }
        if let Some(li) = json::get(n, m, "io.modelcontextprotocol/logLevel")
            && !json::str_at(n, li).is_some_and(|l| LOG_LEVELS.contains(&l))
        {
            self.error(
                reply,
                code::INVALID_PARAMS,
                format_args!("Invalid params: unknown io.modelcontextprotocol/logLevel"),
            );
            return None;
        }
        Some(Era::Modern)
    }

    /// The legacy `ping` answer: an empty result.
    fn pong(&mut self, reply: Reply<'_, '_>) {
        result_start(&mut self.st.out, reply);
        self.st.out.extend_from_slice(b"}}\n");
    }

    fn discover(&mut self, req: &Req<'_, '_>) {
        let mut out = core::mem::take(&mut self.st.out);
        result_start(&mut out, Reply::Id(req.id));
        out.extend_from_slice(match self.mode {
            Mode::Stdio => &self.prepared.discover,
            Mode::Http => &self.prepared.discover_http,
        });
        result_end(&mut out, &self.prepared, Revision::V2026_07_28, Some(self.cfg.discover_cache));
        self.st.out = out;
    }

    fn initialize(&mut self, req: &Req<'_, '_>) {
        let n = req.n;
        let reply = Reply::Id(req.id);
        let requested =
            req.params.and_then(|p| json::get(n, p, "protocolVersion")).and_then(|i| json::str_at(n, i));
        let Some(requested) = requested else {
            return self.error(
                reply,
                code::INVALID_PARAMS,
                format_args!("Invalid params: initialize needs params.protocolVersion"),
            );
        };
        if self.st.legacy.is_some() {
            return self.error(
                reply,
                code::INVALID_REQUEST,
                format_args!("Invalid Request: initialize was already received on this stream"),
            );
        }
        // The requested revision if it is a session-bound one we speak, else our latest.
        let rev = Revision::parse(requested).filter(|r| !r.is_stateless()).unwrap_or(Revision::LATEST_LEGACY);
        self.st.legacy = Some(rev);
        let mut out = core::mem::take(&mut self.st.out);
        result_start(&mut out, reply);
        out.extend_from_slice(b"\"protocolVersion\":");
        json::write_str(&mut out, rev.as_str());
        out.push(b',');
        out.extend_from_slice(&self.prepared.initialize);
        out.extend_from_slice(b"}}\n");
        self.st.out = out;
    }

    fn cursor_param<'t>(&mut self, req: &Req<'_, 't>) -> Result<Option<&'t str>, ()> {
        let Some(ci) = req.params.and_then(|p| json::get(req.n, p, "cursor")) else { return Ok(None) };
        match json::str_at(req.n, ci) {
            Some(s) => Ok(Some(s)),
            None => {
                self.error(
                    Reply::Id(req.id),
                    code::INVALID_PARAMS,
                    format_args!("Invalid params: cursor must be a string"),
                );
                Err(())
            }
        }
    }

    fn list(&mut self, req: &Req<'_, '_>, rev: Revision, kind: ListKind) {
        let reply = Reply::Id(req.id);
        let Ok(cursor) = self.cursor_param(req) else { return };
        let len = self.catalog.list_len(kind);
        let start = match cursor {
            None => 0,
            Some(c) => {
                let mut buf = [0u8; cursor::MAX_CURSOR_KEY + 8];
                match cursor::decode(kind, c, &mut buf) {
                    Ok(key) => self.catalog.list_after(kind, key),
                    Err(CursorError::OtherList(other)) => {
                        return self.error(
                            reply,
                            code::INVALID_PARAMS,
                            format_args!(
                                "Invalid params: this cursor belongs to {}, not {}",
                                other.method(),
                                kind.method()
                            ),
                        );
                    }
                    Err(CursorError::Invalid) => {
                        return self.error(
                            reply,
                            code::INVALID_PARAMS,
                            format_args!("Invalid params: invalid cursor"),
                        );
                    }
                }
            }
        };
        let end = (start + self.cfg.page_size).min(len);
        let mut out = core::mem::take(&mut self.st.out);
        result_start(&mut out, reply);
        field(
            &mut out,
            match kind {
                ListKind::Tools => "tools",
                ListKind::Resources => "resources",
                ListKind::ResourceTemplates => "resourceTemplates",
                ListKind::Prompts => "prompts",
            },
        );
        out.push(b'[');
        for i in start..end {
            if i > start {
                out.push(b',');
            }
            out.extend_from_slice(self.catalog.list_fragment(kind, i, rev.has_icons()).as_bytes());
        }
        out.push(b']');
        if end < len && end > 0 {
            let mut buf = [0u8; cursor::MAX_CURSOR_LEN];
            if let Some(next) = cursor::encode(kind, self.catalog.list_key(kind, end - 1), &mut buf) {
                field(&mut out, "nextCursor");
                json::write_str(&mut out, next);
            }
        }
        let cache = match kind {
            ListKind::Tools => self.cfg.tools_cache,
            ListKind::Resources | ListKind::ResourceTemplates => self.cfg.resources_cache,
            ListKind::Prompts => self.cfg.prompts_cache,
        };
        result_end(&mut out, &self.prepared, rev, Some(cache));
        self.st.out = out;
    }

    /// A required string parameter; writes `-32602` and returns `None` when it is
    /// missing or not a string.
    fn required_str<'t>(&mut self, req: &Req<'_, 't>, key: &str) -> Option<&'t str> {
        let s = req.params.and_then(|p| json::get(req.n, p, key)).and_then(|i| json::str_at(req.n, i));
        if s.is_none() {
            self.error(
                Reply::Id(req.id),
                code::INVALID_PARAMS,
                format_args!("Invalid params: params.{key} must be a string"),
            );
        }
        s
    }

    /// Copies `params.arguments` into `self.scratch.args` as compact JSON (`{}` when absent).
    fn take_arguments(&mut self, req: &Req<'_, '_>) -> bool {
        self.scratch.args.clear();
        match req.params.and_then(|p| json::get(req.n, p, "arguments")) {
            None => self.scratch.args.extend_from_slice(b"{}"),
            Some(ai) if json::is_object(req.n, ai) => {
                json::write_value(req.n, ai, &mut self.scratch.args);
            }
            Some(_) => {
                self.error(
                    Reply::Id(req.id),
                    code::INVALID_PARAMS,
                    format_args!("Invalid params: params.arguments must be an object"),
                );
                return false;
            }
        }
        true
    }

    /// Takes a free slot for request `id`, or answers `-32600` if its id is too long to keep.
    fn ticket(&mut self, req: &Req<'_, '_>, kind: Kind, revision: Revision, target: usize) -> Option<Ticket> {
        let Some(id) = IdBuf::of(req.id) else {
            self.error(
                Reply::Id(req.id),
                code::INVALID_REQUEST,
                format_args!("Invalid Request: id longer than {MAX_TICKET_ID_LEN} bytes"),
            );
            return None;
        };
        // `process` pauses before a frame while every slot is busy, so one is free; should
        // that ever not hold, the request is answered rather than dropped.
        let Some(slot) = self.st.slots.iter().position(|s| s.busy.is_none()) else {
            self.error(
                Reply::Id(req.id),
                code::INTERNAL_ERROR,
                format_args!("Internal error: no free slot for this request; retry it"),
            );
            return None;
        };
        let progress =
            req.meta.and_then(|m| json::get(req.n, m, "progressToken")).and_then(|t| match req.n.get(t)? {
                Node::String(s) => IdBuf::of(IdRef::Str(s)),
                Node::Static(StaticNode::I64(v)) => IdBuf::of(IdRef::I(*v)),
                Node::Static(StaticNode::U64(v)) => IdBuf::of(IdRef::U(*v)),
                _ => None,
            });
        let s = &mut self.st.slots[slot];
        s.busy = Some(Busy {
            kind,
            revision,
            id,
            route: self.st.route,
            target: target as u32,
            progress,
            last_progress: None,
            log_level: if self.cfg.logging {
                request_log_level(req).or(if revision.is_stateless() {
                    None
                } else {
                    self.st.session_log_level
                })
            } else {
                None
            },
            caps: self.scratch.round.caps,
            digest: self.scratch.round.digest,
        });
        self.st.in_flight += 1;
        Some(Ticket { slot: slot as u16, generation: s.generation })
    }

    fn call_tool(&mut self, req: &Req<'_, '_>, rev: Revision) {
        let reply = Reply::Id(req.id);
        let Some(name) = self.required_str(req, "name") else { return };
        let Some(ti) = self.catalog.tool_index(name) else {
            return self.error(reply, code::INVALID_PARAMS, format_args!("Unknown tool: {name}"));
        };
        if rev.is_stateless() && !self.catalog.tools[ti].tool.required_client_capabilities.is_empty() {
            let n = req.n;
            let declared =
                req.meta.and_then(|m| json::get(n, m, "io.modelcontextprotocol/clientCapabilities"));
            let required = &self.catalog.tools[ti].tool.required_client_capabilities;
            if required.iter().any(|c| declared.and_then(|d| json::get(n, d, c)).is_none()) {
                self.st.http_status = 400;
                return write_error(
                    &mut self.st.out,
                    reply,
                    code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format_args!(
                        "Missing required client capability: tool {name} needs {}",
                        required.join(", ")
                    ),
                    |out| {
                        out.extend_from_slice(b"{\"requiredCapabilities\":{");
                        for (i, c) in required.iter().enumerate() {
                            if i > 0 {
                                out.push(b',');
                            }
                            json::write_str(out, c);
                            out.extend_from_slice(b":{}");
                        }
                        out.extend_from_slice(b"}}");
                    },
                );
            }
        }
        if !self.take_arguments(req) {
            return;
        }
        // Arguments that are valid and repeat no member name are decided on the request's tape
        // and passed on as written, without building a value. The rest take the
        // `serde_json::Value` path: its error messages, and the last value of a repeated name.
        let arguments = req.params.and_then(|p| json::get(req.n, p, "arguments"));
        if let Some(v) = &self.catalog.tools[ti].validator
            && !v.passes(req.n, arguments)
        {
            let v = v.value();
            let value: serde_json::Value = match serde_json::from_slice(&self.scratch.args) {
                Ok(v) => v,
                Err(_) => return self.error(reply, code::INTERNAL_ERROR, format_args!("Internal error")),
            };
            if !v.is_valid(&value) {
                let problems = Problems { validator: v, value: &value };
                if rev == Revision::V2025_06_18 {
                    return write_error(
                        &mut self.st.out,
                        reply,
                        code::INVALID_PARAMS,
                        format_args!(
                            "Invalid params: arguments of tool {name} do not match its input schema: {problems}"
                        ),
                        |_| {},
                    );
                }
                // 2025-11-25 and later: a tool result the model can read and correct.
                let mut out = core::mem::take(&mut self.st.out);
                result_start(&mut out, reply);
                out.extend_from_slice(b"\"content\":[{\"type\":\"text\",\"text\":");
                let text = format_args!("Invalid arguments for tool {name}: {problems}");
                let _ = serde::Serializer::collect_str(&mut serde_json::Serializer::new(&mut out), &text);
                out.extend_from_slice(b"}],\"isError\":true");
                result_end(&mut out, &self.prepared, rev, None);
                self.st.out = out;
                return;
            }
            // The host gets exactly what was validated: with repeated member names the
            // validated value holds the last one, so the arguments are rewritten from it.
            self.scratch.args.clear();
            let _ = serde_json::to_writer(&mut self.scratch.args, &value);
        }
        if !self.round_trip(req, rev, Method::CallTool, name) {
            return;
        }
        let Some(ticket) = self.ticket(req, Kind::Tool, rev, ti) else { return };
        self.st.pending = Some(Pending { kind: PendingKind::Tool(ti), ticket, revision: rev });
    }

    fn complete(&mut self, req: &Req<'_, '_>, rev: Revision) {
        let n = req.n;
        let reply = Reply::Id(req.id);
        let get = |obj: Option<usize>, key: &str| obj.and_then(|o| json::get(n, o, key));
        let reference = get(req.params, "ref");
        let target = match get(reference, "type").and_then(|t| json::str_at(n, t)) {
            Some("ref/prompt") => {
                let Some(name) = get(reference, "name").and_then(|i| json::str_at(n, i)) else {
                    return self.error(
                        reply,
                        code::INVALID_PARAMS,
                        format_args!("Invalid params: ref.name must be a string"),
                    );
                };
                match self.catalog.prompt_index(name) {
                    Some(i) => Ok(i),
                    None => {
                        return self.error(
                            reply,
                            code::INVALID_PARAMS,
                            format_args!("Unknown prompt: {name}"),
                        );
                    }
                }
            }
            Some("ref/resource") => {
                let Some(uri) = get(reference, "uri").and_then(|i| json::str_at(n, i)) else {
                    return self.error(
                        reply,
                        code::INVALID_PARAMS,
                        format_args!("Invalid params: ref.uri must be a string"),
                    );
                };
                match self.catalog.templates.iter().position(|t| t.template.uri_template == uri) {
                    Some(i) => Err(i),
                    None => {
                        return self.error(
                            reply,
                            code::INVALID_PARAMS,
                            format_args!("Invalid params: no resource template {uri}"),
                        );
                    }
                }
            }
            _ => {
                return self.error(
                    reply,
                    code::INVALID_PARAMS,
                    format_args!("Invalid params: ref.type must be \"ref/prompt\" or \"ref/resource\""),
                );
            }
        };
        let argument = get(req.params, "argument");
        let name = get(argument, "name").and_then(|i| json::str_at(n, i));
        let value = get(argument, "value").and_then(|i| json::str_at(n, i));
        let (Some(name), Some(value)) = (name, value) else {
            return self.error(
                reply,
                code::INVALID_PARAMS,
                format_args!("Invalid params: argument must carry name and value strings"),
            );
        };
        let known = match target {
            Ok(i) => self.catalog.prompts[i].prompt.arguments.iter().any(|a| a.name == name),
            Err(i) => self.catalog.templates[i].parsed.var_names().iter().any(|v| &**v == name),
        };
        if !known {
            return self.error(
                reply,
                code::INVALID_PARAMS,
                format_args!("Invalid params: unknown argument {name}"),
            );
        }
        self.scratch.args.clear();
        match get(get(req.params, "context"), "arguments") {
            Some(a) if json::is_object(n, a) => {
                json::write_value(n, a, &mut self.scratch.args);
            }
            _ => self.scratch.args.extend_from_slice(b"{}"),
        }
        let Some(ticket) = self.ticket(req, Kind::Completion, rev, 0) else { return };
        let (arg, val) = &mut self.scratch.completion;
        arg.clear();
        arg.push_str(name);
        val.clear();
        val.push_str(value);
        self.st.pending = Some(Pending { kind: PendingKind::Complete(target), ticket, revision: rev });
    }

    fn read_resource(&mut self, req: &Req<'_, '_>, rev: Revision) {
        let Some(uri) = self.required_str(req, "uri") else { return };
        let Some(target) = self.catalog.resolve_uri(uri, &mut self.scratch.captures) else {
            return self.not_found(Reply::Id(req.id), rev, uri);
        };
        self.scratch.args.clear();
        if !self.round_trip(req, rev, Method::ReadResource, uri) {
            return;
        }
        let Some(ticket) = self.ticket(req, Kind::Resource, rev, 0) else { return };
        self.scratch.uri.clear();
        self.scratch.uri.push_str(uri);
        self.st.pending = Some(Pending { kind: PendingKind::Resource(target), ticket, revision: rev });
    }

    /// `subscriptions/listen`: acknowledges the subset of `params.notifications` the
    /// server honours and keeps the stream open for later notifications.
    fn listen(&mut self, req: &Req<'_, '_>) {
        let (n, reply) = (req.n, Reply::Id(req.id));
        let filter =
            req.params.and_then(|p| json::get(n, p, "notifications")).filter(|&f| json::is_object(n, f));
        let Some(f) = filter else {
            return self.error(
                reply,
                code::INVALID_PARAMS,
                format_args!("Invalid params: params.notifications must be an object"),
            );
        };
        let Some(id) = IdBuf::of(req.id) else {
            return self.error(
                reply,
                code::INVALID_REQUEST,
                format_args!("Invalid Request: id longer than {MAX_TICKET_ID_LEN} bytes"),
            );
        };
        if self.st.subs.len() >= self.cfg.max_subscriptions {
            let max = self.cfg.max_subscriptions;
            return self.error(
                reply,
                code::INTERNAL_ERROR,
                format_args!("Internal error: too many open subscriptions (at most {max})"),
            );
        }
        let wants = |key: &str| {
            matches!(json::get(n, f, key).and_then(|i| n.get(i)), Some(Node::Static(StaticNode::Bool(true))))
        };
        let (c, changes) = (&self.catalog, self.cfg.list_changed);
        let tools = changes && c.has_tools() && wants("toolsListChanged");
        let prompts = changes && c.has_prompts() && wants("promptsListChanged");
        let resources = changes && c.has_resources() && wants("resourcesListChanged");
        let mut uris: Vec<Box<str>> = Vec::new();
        let asked = json::get(n, f, "resourceSubscriptions");
        if let Some(a) = asked {
            let Some(Node::Array { len, .. }) = n.get(a) else {
                return self.error(
                    reply,
                    code::INVALID_PARAMS,
                    format_args!("Invalid params: resourceSubscriptions must be an array of strings"),
                );
            };
            let honour = self.cfg.resource_subscriptions && self.catalog.has_resources();
            for i in a + 1..a + 1 + len {
                let Some(uri) = json::str_at(n, i) else {
                    return self.error(
                        reply,
                        code::INVALID_PARAMS,
                        format_args!("Invalid params: resourceSubscriptions must be an array of strings"),
                    );
                };
                let known = self.catalog.resolve_uri(uri, &mut self.scratch.captures).is_some();
                if honour
                    && known
                    && uris.len() < subs::MAX_SUBSCRIBED_URIS
                    && !uris.iter().any(|u| **u == *uri)
                {
                    uris.push(uri.into());
                }
            }
        }
        let out = &mut self.st.out;
        let start = out.len();
        out.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":",
        );
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(b"},\"notifications\":{");
        for (on, key) in [
            (tools, "toolsListChanged"),
            (prompts, "promptsListChanged"),
            (resources, "resourcesListChanged"),
        ] {
            if on {
                field(out, key);
                out.extend_from_slice(b"true");
            }
        }
        if asked.is_some() && self.cfg.resource_subscriptions && self.catalog.has_resources() {
            field(out, "resourceSubscriptions");
            let _ = serde_json::to_writer(&mut *out, &uris);
        }
        out.extend_from_slice(b"}}}\n");
        let route = self.st.route;
        if let Route::Http { .. } = route {
            let end = out.len();
            self.st.routed.push(Routed { route, start, end, interim: true, status: 0, sub: true });
            self.st.subscribed = true;
        }
        self.st.subs.push(Sub { id, route, tools, prompts, resources, uris });
    }

    /// Legacy `resources/subscribe` and `resources/unsubscribe` on a session-bound stream.
    fn legacy_subscribe(&mut self, req: &Req<'_, '_>, rev: Revision, subscribe: bool) {
        let reply = Reply::Id(req.id);
        let Some(uri) = self.required_str(req, "uri") else { return };
        if subscribe {
            if self.catalog.resolve_uri(uri, &mut self.scratch.captures).is_none() {
                return self.not_found(reply, rev, uri);
            }
            if !self.st.legacy_uris.iter().any(|u| &**u == uri) {
                if self.st.legacy_uris.len() >= subs::MAX_SUBSCRIBED_URIS {
                    let max = subs::MAX_SUBSCRIBED_URIS;
                    return self.error(
                        reply,
                        code::INVALID_PARAMS,
                        format_args!("Invalid params: at most {max} resource subscriptions"),
                    );
                }
                self.st.legacy_uris.push(uri.into());
            }
        } else {
            self.st.legacy_uris.retain(|u| &**u != uri);
        }
        self.pong(reply);
    }

    /// Replaces the catalog (see [`Engine::replace_catalog`]).
    pub(crate) fn replace_catalog(&mut self, catalog: Catalog) -> Result<CatalogChange, ReplaceError> {
        if self.st.pending.is_some() {
            return Err(ReplaceError::EventPending);
        }
        let (old, new) = (&self.catalog, &catalog);
        if old.has_tools() != new.has_tools()
            || old.has_resources() != new.has_resources()
            || old.has_prompts() != new.has_prompts()
        {
            return Err(ReplaceError::CapabilitiesChanged);
        }
        let change = CatalogChange::between(old, new);
        // Tool calls in flight keep their tool (by name) for the output-schema check.
        for slot in &mut self.st.slots {
            if let Some(b) = slot.busy.as_mut().filter(|b| b.kind == Kind::Tool) {
                let name = old.tools.get(b.target as usize).map(|t| t.tool.name.as_str());
                b.target = name.and_then(|n| new.tool_index(n)).map_or(u32::MAX, |i| i as u32);
            }
        }
        self.catalog = catalog;
        self.st.catalog_revision += 1;
        if self.cfg.list_changed {
            let kinds: [(bool, &str, SubFilter); 3] = [
                (change.tools, "notifications/tools/list_changed", |s| s.tools),
                (change.prompts, "notifications/prompts/list_changed", |s| s.prompts),
                (change.resources, "notifications/resources/list_changed", |s| s.resources),
            ];
            for (on, method, wants) in kinds {
                if !on {
                    continue;
                }
                if self.mode == Mode::Stdio && self.st.legacy.is_some() && self.st.initialized {
                    let out = &mut self.st.out;
                    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
                    json::write_str(out, method);
                    out.extend_from_slice(b"}\n");
                }
                self.st.publish(self.cfg.max_buffered_output, &self.prepared, wants, |out, id| {
                    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
                    json::write_str(out, method);
                    out.extend_from_slice(
                        b",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":",
                    );
                    out.extend_from_slice(id);
                    out.extend_from_slice(b"}}}\n");
                });
            }
        }
        Ok(change)
    }

    /// Notifies the subscribers of `uri` (see [`Engine::notify_resource_updated`]).
    pub(crate) fn notify_resource_updated(&mut self, uri: &str) -> usize {
        if !self.cfg.resource_subscriptions {
            return 0;
        }
        let mut sent = 0;
        if self.mode == Mode::Stdio
            && self.st.initialized
            && self.st.legacy_uris.iter().any(|u| subs::uri_matches(u, uri))
        {
            let out = &mut self.st.out;
            out.extend_from_slice(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":",
            );
            json::write_str(out, uri);
            out.extend_from_slice(b"}}\n");
            sent += 1;
        }
        let wants = |s: &Sub| s.uris.iter().any(|u| subs::uri_matches(u, uri));
        sent += self.st.publish(self.cfg.max_buffered_output, &self.prepared, wants, |out, id| {
            out.extend_from_slice(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":",
            );
            json::write_str(out, uri);
            out.extend_from_slice(b",\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":");
            out.extend_from_slice(id);
            out.extend_from_slice(b"}}}\n");
        });
        sent
    }

    /// Ends every subscription gracefully (see [`Engine::end_subscriptions`]).
    pub(crate) fn end_subscriptions(&mut self) -> usize {
        let n = self.st.subs.len();
        for sub in core::mem::take(&mut self.st.subs) {
            self.st.teardown(&self.prepared, &sub);
        }
        n
    }

    /// Reads what a `2026-07-28` request that may take several rounds brings: the input
    /// kinds its client declared, a `requestState` (verified: a forged, foreign or expired
    /// one is `-32602`) and `inputResponses` (each response to a key the state asked for
    /// must fit its request's kind, other keys are dropped; without a state every member
    /// must be an object). Writes the error and returns `false` when it refuses them.
    /// `name` and `self.scratch.args` identify the request for the state's digest.
    fn round_trip(&mut self, req: &Req<'_, '_>, rev: Revision, method: Method, name: &str) -> bool {
        if !rev.is_stateless() {
            return true;
        }
        let (n, reply) = (req.n, Reply::Id(req.id));
        let Some(p) = req.params else { return true };
        if let Some(caps) =
            req.meta.and_then(|m| json::get(n, m, "io.modelcontextprotocol/clientCapabilities"))
        {
            self.scratch.round.caps = ClientCapabilities::from_tape(n, caps);
        }
        let key = self.prepared.state_key.as_ref();
        if key.is_some() {
            let principal = self.st.principal.as_ref();
            self.scratch.round.digest = mrtr::params_digest(method, name, &self.scratch.args, principal);
        }
        let mut opened = None;
        if let Some(si) = json::get(n, p, "requestState") {
            let Some(text) = json::str_at(n, si) else {
                self.error(
                    reply,
                    code::INVALID_PARAMS,
                    format_args!("Invalid params: requestState must be a string"),
                );
                return false;
            };
            let digest = self.scratch.round.digest;
            match mrtr::open(key, text, self.st.now, method, &digest, &mut self.scratch.state) {
                Ok(o) => opened = Some(o),
                Err(e) => {
                    self.error(reply, code::INVALID_PARAMS, format_args!("{}", e.message()));
                    return false;
                }
            }
        }
        if let Some(ri) = json::get(n, p, "inputResponses") {
            let Some(Node::Object { len, .. }) = n.get(ri) else {
                self.error(
                    reply,
                    code::INVALID_PARAMS,
                    format_args!("Invalid params: inputResponses must be an object"),
                );
                return false;
            };
            self.scratch.responses.clear();
            let mut i = ri + 1;
            for _ in 0..*len {
                let (k, v) = (json::str_at(n, i).unwrap_or_default(), i + 1);
                i = v + 1 + json::children(n, v);
                let kind = match &opened {
                    Some(o) => {
                        let state = &self.scratch.state;
                        match o.asked.iter().find(|(_, r)| state.get(r.clone()) == Some(k.as_bytes())) {
                            Some((kind, _)) => Some(*kind),
                            None => continue, // not asked for: ignored
                        }
                    }
                    None => None,
                };
                let fits = match kind {
                    Some(kind) => json::is_object(n, v) && mrtr::response_fits(n, v, kind),
                    None => json::is_object(n, v),
                };
                if !fits {
                    let what = kind.map_or("an object", |k| k.method());
                    self.error(
                        reply,
                        code::INVALID_PARAMS,
                        format_args!("Invalid params: inputResponses.{k} is not a valid response to {what}"),
                    );
                    return false;
                }
                let buf = &self.scratch.responses;
                let seen = self
                    .scratch
                    .round
                    .entries
                    .iter()
                    .any(|(kr, _)| buf.get(kr.clone()) == Some(k.as_bytes()));
                if seen || self.scratch.round.entries.is_full() {
                    continue;
                }
                let buf = &mut self.scratch.responses;
                let ks = buf.len();
                buf.extend_from_slice(k.as_bytes());
                let vs = buf.len();
                json::write_value(n, v, buf);
                let ve = buf.len();
                let _ = self.scratch.round.entries.push((ks..vs, vs..ve));
            }
        }
        self.scratch.round.host_state = opened.map(|o| o.host);
        true
    }

    fn not_found(&mut self, reply: Reply<'_, '_>, rev: Revision, uri: &str) {
        let code = if rev.is_stateless() { code::INVALID_PARAMS } else { code::RESOURCE_NOT_FOUND };
        write_error(&mut self.st.out, reply, code, format_args!("Resource not found"), |out| {
            out.extend_from_slice(b"{\"uri\":");
            json::write_str(out, uri);
            out.push(b'}');
        });
    }

    fn get_prompt(&mut self, req: &Req<'_, '_>, rev: Revision) {
        let reply = Reply::Id(req.id);
        let Some(name) = self.required_str(req, "name") else { return };
        let Some(pi) = self.catalog.prompt_index(name) else {
            return write_error(
                &mut self.st.out,
                reply,
                code::INVALID_PARAMS,
                format_args!("Unknown prompt: {name}"),
                |out| {
                    out.extend_from_slice(b"{\"name\":");
                    json::write_str(out, name);
                    out.push(b'}');
                },
            );
        };
        if !self.take_arguments(req) {
            return;
        }
        // As for a tool: valid arguments without repeated names are decided on the tape.
        let arguments = req.params.and_then(|p| json::get(req.n, p, "arguments"));
        if !self.catalog.prompts[pi].validator.passes(req.n, arguments) {
            let value: serde_json::Value = match serde_json::from_slice(&self.scratch.args) {
                Ok(v) => v,
                Err(_) => return self.error(reply, code::INTERNAL_ERROR, format_args!("Internal error")),
            };
            let v = self.catalog.prompts[pi].validator.value();
            if !v.is_valid(&value) {
                let problems = Problems { validator: v, value: &value };
                return write_error(
                    &mut self.st.out,
                    reply,
                    code::INVALID_PARAMS,
                    format_args!(
                        "Invalid params: arguments of prompt {name} do not match its declared arguments: {problems}"
                    ),
                    |_| {},
                );
            }
        }
        if !self.round_trip(req, rev, Method::GetPrompt, name) {
            return;
        }
        let Some(ticket) = self.ticket(req, Kind::Prompt, rev, 0) else { return };
        self.st.pending = Some(Pending { kind: PendingKind::Prompt(pi), ticket, revision: rev });
    }
}

/// Closes a result object: the `2026-07-28` envelope fields, then `}}\n`.
fn result_end(out: &mut Vec<u8>, prepared: &Prepared, rev: Revision, cache: Option<CachePolicy>) {
    if rev.is_stateless() {
        field(out, "resultType");
        out.extend_from_slice(b"\"complete\"");
        if let Some(c) = cache {
            field(out, "ttlMs");
            json::write_u64(out, c.ttl_ms);
            field(out, "cacheScope");
            json::write_str(out, c.scope.as_str());
        }
        if !prepared.meta.is_empty() {
            out.push(b',');
            out.extend_from_slice(&prepared.meta);
        }
    }
    out.extend_from_slice(b"}}\n");
}

impl State {
    fn free(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        if s.busy.take().is_some() {
            s.generation = s.generation.wrapping_add(1);
            self.in_flight -= 1;
        }
    }

    /// Writes `notifications/progress` for a live ticket whose request carried a
    /// progress token.
    pub(crate) fn notify_progress(
        &mut self,
        ticket: Ticket,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), NotifyError> {
        let slot = self.slots.get_mut(ticket.slot as usize).ok_or(NotifyError::UnknownTicket)?;
        let busy = match &mut slot.busy {
            Some(b) if slot.generation == ticket.generation => b,
            _ => return Err(NotifyError::UnknownTicket),
        };
        let Some(token) = busy.progress else { return Err(NotifyError::NoProgressToken) };
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return Err(NotifyError::NotFinite);
        }
        if busy.last_progress.is_some_and(|last| progress <= last) {
            return Err(NotifyError::NotIncreasing);
        }
        busy.last_progress = Some(progress);
        let route = busy.route;
        let out = &mut self.out;
        let start = out.len();
        out.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":",
        );
        out.extend_from_slice(token.as_bytes());
        out.extend_from_slice(b",\"progress\":");
        write_number(out, progress);
        if let Some(t) = total {
            out.extend_from_slice(b",\"total\":");
            write_number(out, t);
        }
        if let Some(m) = message {
            out.extend_from_slice(b",\"message\":");
            json::write_str(out, m);
        }
        out.extend_from_slice(b"}}\n");
        if let Route::Http { .. } = route {
            let end = out.len();
            self.routed.push(Routed { route, start, end, interim: true, status: 0, sub: false });
        }
        Ok(())
    }

    /// Writes `notifications/message` for a live ticket whose client asked for logs at
    /// `level` or below.
    pub(crate) fn notify_log<S: Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        level: LogLevel,
        logger: Option<&str>,
        data: &S,
    ) -> Result<(), NotifyError> {
        let slot = self.slots.get(ticket.slot as usize).ok_or(NotifyError::UnknownTicket)?;
        let busy = match slot.busy {
            Some(b) if slot.generation == ticket.generation => b,
            _ => return Err(NotifyError::UnknownTicket),
        };
        if busy.log_level.is_none_or(|wanted| level < wanted) {
            return Err(NotifyError::Filtered);
        }
        let out = &mut self.out;
        let start = out.len();
        out.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":",
        );
        json::write_str(out, level.as_str());
        if let Some(l) = logger {
            out.extend_from_slice(b",\"logger\":");
            json::write_str(out, l);
        }
        out.extend_from_slice(b",\"data\":");
        if serde_json::to_writer(&mut *out, data).is_err() {
            out.truncate(start);
            return Err(NotifyError::NotFinite);
        }
        for b in &mut out[start..] {
            if matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
        out.extend_from_slice(b"}}\n");
        if let Route::Http { .. } = busy.route {
            let end = out.len();
            self.routed.push(Routed { route: busy.route, start, end, interim: true, status: 0, sub: false });
        }
        Ok(())
    }

    /// Answers a completion: at most 100 values, duplicates dropped (the first kept, in the
    /// host's order), `total` and `hasMore` kept truthful.
    fn answer_completion(
        &mut self,
        prepared: &Prepared,
        ticket: Ticket,
        values: &[&str],
        total: Option<u64>,
        has_more: bool,
    ) -> Result<(), AnswerError> {
        self.answer(prepared, ticket, Kind::Completion, |out, _| {
            const MAX: usize = 100;
            let mut kept: heapless::Vec<&str, MAX> = heapless::Vec::new();
            let mut unique = 0u64;
            let mut dropped = false;
            for (i, v) in values.iter().enumerate() {
                if values[..i].contains(v) {
                    continue; // a duplicate (quadratic, so bounded below)
                }
                unique += 1;
                if kept.push(v).is_err() {
                    dropped = true;
                }
                if i >= 10_000 {
                    dropped = true;
                    break;
                }
            }
            field(out, "completion");
            out.extend_from_slice(b"{\"values\":");
            serde_json::to_writer(&mut *out, &kept[..])?;
            let total = total.map_or(unique, |t| t.max(unique));
            out.extend_from_slice(b",\"total\":");
            json::write_u64(out, total);
            out.extend_from_slice(b",\"hasMore\":");
            out.extend_from_slice(if has_more || dropped || total > kept.len() as u64 {
                b"true"
            } else {
                b"false"
            });
            out.push(b'}');
            Ok(None)
        })
    }

    /// The live slot of `ticket`, without freeing it.
    fn peek(&self, ticket: Ticket, kind: Kind) -> Result<Busy, AnswerError> {
        let slot = self.slots.get(ticket.slot as usize).ok_or(AnswerError::UnknownTicket)?;
        match slot.busy {
            Some(b) if slot.generation == ticket.generation && b.kind == kind => Ok(b),
            Some(b) if slot.generation == ticket.generation && b.kind != kind => Err(AnswerError::WrongKind),
            _ => Err(AnswerError::UnknownTicket),
        }
    }

    /// Frees the slot of `ticket` if it is live and of kind `kind`.
    fn take(&mut self, ticket: Ticket, kind: Option<Kind>) -> Result<Busy, AnswerError> {
        let slot = self.slots.get(ticket.slot as usize).ok_or(AnswerError::UnknownTicket)?;
        let busy = match slot.busy {
            Some(b) if slot.generation == ticket.generation => b,
            _ => return Err(AnswerError::UnknownTicket),
        };
        if kind.is_some_and(|k| k != busy.kind) {
            return Err(AnswerError::WrongKind);
        }
        self.free(ticket.slot as usize);
        Ok(busy)
    }

    fn answer(
        &mut self,
        prepared: &Prepared,
        ticket: Ticket,
        kind: Kind,
        body: impl FnOnce(&mut Vec<u8>, Revision) -> Result<Option<CachePolicy>, serde_json::Error>,
    ) -> Result<(), AnswerError> {
        let busy = self.take(ticket, Some(kind))?;
        let out = &mut self.out;
        let mark = out.len();
        result_start(out, Reply::Stored(busy.id.as_bytes()));
        let body_start = out.len();
        match body(out, busy.revision) {
            Ok(cache) => {
                // Host-serialized values (a `RawValue`, say) may hold line breaks as JSON
                // whitespace; a frame must not. Outside strings they can only be whitespace.
                let mut at = body_start;
                while let Some(p) = memchr::memchr2(b'\n', b'\r', &out[at..]) {
                    out[at + p] = b' ';
                    at += p + 1;
                }
                result_end(out, prepared, busy.revision, cache)
            }
            Err(e) => {
                out.truncate(mark);
                write_error(
                    out,
                    Reply::Stored(busy.id.as_bytes()),
                    code::INTERNAL_ERROR,
                    format_args!("Internal error: the result could not be serialized ({e})"),
                    |_| {},
                );
            }
        }
        self.routed(busy.route, mark);
        Ok(())
    }

    /// Writes a notification for every subscription `wants` chooses (`write` gets its id);
    /// returns how many were written. A stdio subscription whose client reads too slowly
    /// (more than `max_buffered` bytes waiting) is ended instead; an HTTP one is dropped by
    /// the HTTP layer when its connection holds too much unsent.
    fn publish(
        &mut self,
        max_buffered: usize,
        prepared: &Prepared,
        wants: impl Fn(&Sub) -> bool,
        write: impl Fn(&mut Vec<u8>, &[u8]),
    ) -> usize {
        let mut sent = 0;
        let mut i = 0;
        while i < self.subs.len() {
            if !wants(&self.subs[i]) {
                i += 1;
                continue;
            }
            let route = self.subs[i].route;
            if route == Route::Stdio && self.out.len() - self.out_pos > max_buffered {
                let sub = self.subs.remove(i);
                self.teardown(prepared, &sub);
                continue;
            }
            let start = self.out.len();
            write(&mut self.out, self.subs[i].id.as_bytes());
            if let Route::Http { .. } = route {
                let end = self.out.len();
                self.routed.push(Routed { route, start, end, interim: true, status: 0, sub: true });
            }
            sent += 1;
            i += 1;
        }
        sent
    }

    /// Ends `sub` from the server's side: the graceful `SubscriptionsListenResult`, and on
    /// stdio `notifications/cancelled` naming the listen request (DIGEST Part D item 1).
    fn teardown(&mut self, prepared: &Prepared, sub: &Sub) {
        let out = &mut self.out;
        let start = out.len();
        result_start(out, Reply::Stored(sub.id.as_bytes()));
        out.extend_from_slice(
            b"\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":",
        );
        out.extend_from_slice(sub.id.as_bytes());
        if let Some(info) = prepared.meta.strip_prefix(b"\"_meta\":{").and_then(|m| m.strip_suffix(b"}")) {
            out.push(b',');
            out.extend_from_slice(info);
        }
        out.extend_from_slice(b"}}}\n");
        match sub.route {
            Route::Stdio => {
                out.extend_from_slice(
                    b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":",
                );
                out.extend_from_slice(sub.id.as_bytes());
                out.extend_from_slice(b",\"reason\":\"The server ended the subscription.\"}}\n");
            }
            Route::Http { .. } => {
                let end = out.len();
                self.routed.push(Routed {
                    route: sub.route,
                    start,
                    end,
                    interim: false,
                    status: 0,
                    sub: true,
                });
            }
        }
    }

    /// Records that `out[start..]` is the answer for `route` (HTTP routes only).
    fn routed(&mut self, route: Route, start: usize) {
        self.routed_with(route, start, 0);
    }

    /// [`Self::routed`] with the HTTP status of an error answer.
    fn routed_with(&mut self, route: Route, start: usize, status: u16) {
        if let Route::Http { .. } = route {
            let end = self.out.len();
            self.routed.push(Routed { route, start, end, interim: false, status, sub: false });
        }
    }

    fn answer_error(
        &mut self,
        ticket: Ticket,
        kind: Option<Kind>,
        error: HostError<'_>,
    ) -> Result<(), AnswerError> {
        let busy = self.take(ticket, kind)?;
        let reply = Reply::Stored(busy.id.as_bytes());
        let out = &mut self.out;
        let mark = out.len();
        match error {
            HostError::NotFound if busy.kind == Kind::Resource => {
                let code = if busy.revision.is_stateless() {
                    code::INVALID_PARAMS
                } else {
                    code::RESOURCE_NOT_FOUND
                };
                write_error(out, reply, code, format_args!("Resource not found"), |_| {});
            }
            HostError::NotFound => {
                write_error(out, reply, code::INVALID_PARAMS, format_args!("Not found"), |_| {})
            }
            HostError::InvalidParams(msg) => {
                write_error(out, reply, code::INVALID_PARAMS, format_args!("Invalid params: {msg}"), |_| {})
            }
            HostError::Internal(msg) => {
                write_error(out, reply, code::INTERNAL_ERROR, format_args!("Internal error: {msg}"), |_| {})
            }
        }
        self.routed(busy.route, mark);
        Ok(())
    }

    fn answer_tool<S: Serialize + ?Sized>(
        &mut self,
        prepared: &Prepared,
        catalog: &Catalog,
        ticket: Ticket,
        output: &ToolOutput<'_, S>,
    ) -> Result<(), AnswerError> {
        let busy = self.peek(ticket, Kind::Tool)?;
        let declared = catalog.tools.get(busy.target as usize).and_then(|t| t.output_validator.as_ref());
        if let Some(validator) = declared
            && !structured_conforms(validator, output.structured_content, busy.revision)
        {
            // A host bug must not become invalid output: the model sees a failed call.
            return self.answer(prepared, ticket, Kind::Tool, |out, _| {
                out.extend_from_slice(
                    b"\"content\":[{\"type\":\"text\",\"text\":\"Internal error: the tool's result does not match its output schema\"}],\"isError\":true",
                );
                Ok(None)
            });
        }
        self.answer(prepared, ticket, Kind::Tool, |out, _| {
            field(out, "content");
            content::write_array(out, output.content, Content::write_json);
            if let Some(s) = output.structured_content {
                field(out, "structuredContent");
                serde_json::to_writer(&mut *out, s)?;
            }
            if output.is_error {
                field(out, "isError");
                out.extend_from_slice(b"true");
            }
            Ok(None)
        })
    }

    /// Answers a tool call, prompt or resource read with `resultType: "input_required"`:
    /// the requests the client declared it can answer, and a sealed `requestState` when a
    /// key is set. When the client can answer none of the requests, the answer is `-32021`
    /// with `data.requiredCapabilities`. Refused (nothing written, ticket kept) for other
    /// work, earlier revisions and malformed answers.
    fn answer_input_required(
        &mut self,
        prepared: &Prepared,
        ticket: Ticket,
        ir: &InputRequired<'_>,
    ) -> Result<(), AnswerError> {
        let slot = self.slots.get(ticket.slot as usize).ok_or(AnswerError::UnknownTicket)?;
        let busy = match slot.busy {
            Some(b) if slot.generation == ticket.generation => b,
            _ => return Err(AnswerError::UnknownTicket),
        };
        let method = match busy.kind {
            Kind::Tool => Method::CallTool,
            Kind::Prompt => Method::GetPrompt,
            Kind::Resource => Method::ReadResource,
            Kind::Completion => return Err(AnswerError::WrongKind),
        };
        if !busy.revision.is_stateless() {
            return Err(AnswerError::InputRequiredUnsupported);
        }
        mrtr::check(ir, prepared.state_key.as_ref())?;
        let busy = self.take(ticket, None)?;
        let reply = Reply::Stored(busy.id.as_bytes());
        let out = &mut self.out;
        let mark = out.len();
        result_start(out, reply);
        out.extend_from_slice(b"\"resultType\":\"input_required\"");
        let mut sent = heapless::Vec::new();
        let dropped = match mrtr::write_requests(out, ir, busy.caps, &mut sent) {
            Ok(d) => d,
            Err(e) => {
                out.truncate(mark);
                write_error(
                    out,
                    reply,
                    code::INTERNAL_ERROR,
                    format_args!("Internal error: the input requests could not be serialized ({e})"),
                    |_| {},
                );
                self.routed(busy.route, mark);
                return Ok(());
            }
        };
        if sent.is_empty() && !ir.requests.is_empty() {
            // The work cannot go on: the client can answer none of what it needs.
            out.truncate(mark);
            write_error(
                out,
                reply,
                code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format_args!(
                    "Missing required client capability: the request needs input the client cannot give"
                ),
                |out| mrtr::write_required(out, &dropped),
            );
            self.routed_with(busy.route, mark, 400);
            return Ok(());
        }
        if let Some(key) = &prepared.state_key {
            out.extend_from_slice(b",\"requestState\":");
            let expiry = self.now.saturating_add(prepared.state_ttl);
            mrtr::seal(out, key, expiry, method, &busy.digest, &sent, ir.state.unwrap_or_default());
        }
        if !prepared.meta.is_empty() {
            out.push(b',');
            out.extend_from_slice(&prepared.meta);
        }
        out.extend_from_slice(b"}}\n");
        for b in &mut out[mark..] {
            if matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
        let end = out.len();
        out[end - 1] = b'\n';
        self.routed(busy.route, mark);
        Ok(())
    }

    fn answer_resource(
        &mut self,
        prepared: &Prepared,
        cache: CachePolicy,
        ticket: Ticket,
        contents: &[ResourceContents<'_>],
    ) -> Result<(), AnswerError> {
        if contents.is_empty() {
            return self.answer_error(ticket, Some(Kind::Resource), HostError::NotFound);
        }
        self.answer(prepared, ticket, Kind::Resource, |out, _| {
            field(out, "contents");
            content::write_array(out, contents, ResourceContents::write_json);
            Ok(Some(cache))
        })
    }

    fn answer_prompt(
        &mut self,
        prepared: &Prepared,
        ticket: Ticket,
        output: &PromptOutput<'_>,
    ) -> Result<(), AnswerError> {
        self.answer(prepared, ticket, Kind::Prompt, |out, _| {
            if let Some(d) = output.description {
                field(out, "description");
                json::write_str(out, d);
            }
            field(out, "messages");
            content::write_array(out, output.messages, PromptMessage::write_json);
            Ok(None)
        })
    }
}

/// Writes `{"jsonrpc":"2.0","id":..,"result":{`.
fn result_start(out: &mut Vec<u8>, reply: Reply<'_, '_>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
    reply.write(out);
    out.extend_from_slice(b",\"result\":{");
}

struct Req<'n, 't> {
    n: &'n [Node<'t>],
    id: IdRef<'t>,
    params: Option<usize>,
    /// `params._meta` (any type), found once.
    meta: Option<usize>,
}

/// At most three schema violations, each cut to 200 bytes.
struct Problems<'a> {
    validator: &'a jsonschema::Validator,
    value: &'a serde_json::Value,
}

impl fmt::Display for Problems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.validator.iter_errors(self.value).take(3).enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            let text = e.to_string();
            let mut cut = text.len().min(200);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            write!(f, "{} (at {:?})", &text[..cut], e.instance_path().as_str())?;
        }
        Ok(())
    }
}
