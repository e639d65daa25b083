//! What the host is asked to do: [`Event`] and its requests, answered through the event.

use core::fmt;

use serde::Serialize;

use crate::catalog::uritemplate::Captures;
use crate::catalog::{Prompt, ResourceTemplate, Tool};
use crate::content::{PromptOutput, ResourceContents, ToolOutput};
use crate::error::{AnswerError, HostError, NotifyError};
use crate::level::LogLevel;
use crate::mcp::answers::Answers;
use crate::mcp::asks::ClientReply;
use crate::mcp::mrtr::{ClientCapabilities, InputRequired, InputResponses};
use crate::mcp::tasks::TaskOptions;
use crate::mcp::tickets::Ticket;
use crate::output::Route;
use crate::revision::Revision;
use crate::wire::trace::TraceContext;

/// The arguments of a request, as compact JSON text borrowed from the engine.
#[derive(Clone, Copy)]
pub struct Arguments<'a> {
    pub(crate) raw: &'a str,
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
    /// The byte length only: argument values stay out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arguments").field("len", &self.raw.len()).finish()
    }
}

/// The variables a resource template matched, percent-decoded.
///
/// Every value has passed the template's rules (see [`ResourceTemplate`]): strictly
/// decoded UTF-8, no `.`/`..` traversal, no `/` in a `{name}` value, within its prefix
/// bound. The text lives in a buffer the engine reuses; nothing is allocated per request.
#[derive(Clone, Copy)]
pub struct TemplateVars<'a> {
    pub(crate) names: &'a [Box<str>],
    pub(crate) captures: &'a Captures,
}

impl<'a> TemplateVars<'a> {
    /// The decoded value of variable `name`; `None` if the template has no such variable,
    /// the uri left it undefined (a query variable missing from the query), or it is the
    /// exploded query variable (its pairs are in [`TemplateVars::pairs`]).
    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
    /// `(name, decoded value)` of every defined variable, in the order the template
    /// names them.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let names = self.names;
        self.captures
            .vars()
            .filter_map(move |(var, _, value)| Some((names.get(usize::from(var))?.as_ref(), value)))
    }
    /// The decoded `(key, value)` pairs an exploded query variable (`{?name*}`) collected:
    /// the query's pairs that name no other variable, in uri order (keys may repeat).
    pub fn pairs(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.captures.pairs()
    }
    /// Number of defined variables (the exploded pairs are not counted).
    pub fn len(&self) -> usize {
        self.captures.len()
    }
    /// Whether no variable is defined (a listed resource, or a template match whose
    /// variables are all undefined query variables).
    pub fn is_empty(&self) -> bool {
        self.captures.is_empty()
    }
}

impl fmt::Debug for TemplateVars<'_> {
    /// The names of the defined variables and the number of exploded pairs; no value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Names<'v>(TemplateVars<'v>);
        impl fmt::Debug for Names<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_list().entries(self.0.iter().map(|(n, _)| n)).finish()
            }
        }
        f.debug_struct("TemplateVars")
            .field("names", &Names(*self))
            .field("pairs", &self.pairs().count())
            .finish()
    }
}

/// A request's JSON-RPC `id`, as the client sent it (a string or an integer).
///
/// `Display` writes its string form, as OpenTelemetry's `jsonrpc.request.id` wants it: an
/// integer's decimal digits, a string's text (unescaped).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RequestId<'a> {
    /// The id as JSON text (`42`, `"req-7"`), as written in responses.
    pub(crate) json: &'a str,
}

impl<'a> RequestId<'a> {
    /// The id as JSON text: an integer's digits, or a quoted (escaped) string.
    pub fn as_json(&self) -> &'a str {
        self.json
    }
    /// Whether the client sent a string id.
    pub fn is_string(&self) -> bool {
        self.json.starts_with('"')
    }
}

impl fmt::Display for RequestId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(inner) = self.json.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
            return f.write_str(self.json);
        };
        // The text was written by `serde_json`: `\"`, `\\`, the short escapes and `\u00XX`.
        let mut rest = inner;
        while let Some(at) = rest.find('\\') {
            f.write_str(&rest[..at])?;
            let esc = &rest[at + 1..];
            let (c, used) = match esc.as_bytes().first() {
                Some(b'n') => ('\n', 1),
                Some(b'r') => ('\r', 1),
                Some(b't') => ('\t', 1),
                Some(b'b') => ('\u{8}', 1),
                Some(b'f') => ('\u{c}', 1),
                Some(b'u') => {
                    let code = esc.get(1..5).and_then(|h| u32::from_str_radix(h, 16).ok());
                    (code.and_then(char::from_u32).unwrap_or('\u{fffd}'), 5)
                }
                Some(&other) => (char::from(other), 1),
                None => break,
            };
            fmt::Write::write_char(f, c)?;
            rest = esc.get(used..).unwrap_or_default();
        }
        f.write_str(rest)
    }
}

impl fmt::Debug for RequestId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.json)
    }
}

/// What identifies a request and where it came from, beside what the event already says
/// (the tool, prompt or resource, the revision): what a log line or a trace span of the
/// request needs (see `docs/observability.md`).
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct RequestInfo<'a> {
    /// The JSON-RPC method: `tools/call`, `resources/read`, `prompts/get` or
    /// `completion/complete`.
    pub method: &'static str,
    /// The request's JSON-RPC id.
    pub id: RequestId<'a>,
    /// The W3C trace context the client sent in `params._meta` (`traceparent`,
    /// `tracestate`, `baggage`), each part only if valid. A request coming back with its
    /// client's input (a session-bound client's responses) keeps its `traceparent` only.
    pub trace: TraceContext<'a>,
    /// The `Mcp-Session-Id` of the session the request was made in: HTTP's session-bound
    /// revisions (`2025-11-25`, `2025-06-18`) only. A bearer of the session: keep it out of
    /// places other principals read.
    pub session_id: Option<&'a str>,
    /// The TCP peer (HTTP; `None` over stdio, or when the host gave none).
    pub peer: Option<core::net::SocketAddr>,
    /// The client's address (HTTP): the peer's, or the one a trusted proxy forwarded
    /// ([`HttpConfig::trusted_proxies`](crate::http::HttpConfig::trusted_proxies)).
    pub client: Option<core::net::IpAddr>,
    /// Where the answer goes (the HTTP layer finds the connection from it).
    pub(crate) route: Route,
}

impl fmt::Debug for RequestInfo<'_> {
    /// The session id's length only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestInfo")
            .field("method", &self.method)
            .field("id", &self.id)
            .field("trace", &self.trace)
            .field("session_id", &self.session_id.map(|s| Redacted("bytes", s.len())))
            .field("peer", &self.peer)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

/// Stand-in, in `Debug` output, for what must not reach logs: its size only.
struct Redacted(&'static str, usize);

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} {}>", self.1, self.0)
    }
}

/// `Debug` of `inputResponses`: how many, no content.
fn responses(r: &InputResponses<'_>) -> Redacted {
    Redacted("responses", r.len())
}

/// `Debug` of a `requestState`'s host part: its byte length, no content.
fn state(s: &Option<&[u8]>) -> Option<Redacted> {
    s.map(|s| Redacted("bytes", s.len()))
}

/// A tool call the host must perform.
///
/// Answer it now with [`CallTool::answer`] (the arguments stay borrowed, nothing is
/// copied), or keep [`CallTool::ticket`] and answer later with [`Commands::answer_tool`](crate::Commands::answer_tool).
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
    /// The request's id, method, trace context and origin.
    pub request: RequestInfo<'a>,
    /// Responses to input requests this request carries (`2026-07-28` retries; empty on
    /// a first round), see [`Commands::answer_input_required`](crate::Commands::answer_input_required).
    pub input_responses: InputResponses<'a>,
    /// The host state of a verified `requestState`, as the host sealed it.
    pub request_state: Option<&'a [u8]>,
    /// The input kinds the client declared on this request (`2026-07-28`).
    pub client: ClientCapabilities,
    /// The engine's connectome counts, for [`CallTool::report_read`].
    #[cfg(feature = "connectome")]
    pub(crate) observed: &'a mut crate::connectome::Observed,
    /// Whether the call may become a task ([`CallTool::start_task`]): tasks are on
    /// ([`Config::tasks`](crate::Config::tasks)), the tool is not
    /// [`TaskSupport::Forbidden`](crate::TaskSupport::Forbidden), and the client declared
    /// the tasks extension on this request. `false` for a task's call coming back with
    /// its client's input ([`Ticket::is_task`]).
    pub can_start_task: bool,
    pub(crate) responder: Answers<'a>,
}

impl CallTool<'_> {
    /// Reports that this call read the resource at `uri` (matched as `resources/read`
    /// matches it): the connectome counts the edge `tool reads resource`, counts only,
    /// without allocating (see [`Connectome::report_read`](crate::observe::Connectome::report_read), which
    /// does the same once the event is gone). Returns `false` for a uri the catalog has
    /// no resource for (feature `connectome`).
    #[cfg(feature = "connectome")]
    pub fn report_read(&mut self, uri: &str) -> bool {
        self.observed.record_read(self.responder.catalog, &self.tool.name, uri)
    }

    /// Turns the call into a task (see [`Commands::start_task`](crate::Commands::start_task)):
    /// the client gets the task's handle now, and [`CallTool::ticket`] becomes the task's
    /// ticket, so the event's other methods answer the task.
    pub fn start_task(&mut self, options: &TaskOptions<'_>) -> Result<Ticket, AnswerError> {
        let task = self.responder.start_task(self.ticket, options)?;
        self.ticket = task;
        Ok(task)
    }
    /// Asks the client for input first (see [`Commands::answer_input_required`](crate::Commands::answer_input_required)).
    pub fn input_required(mut self, input: &InputRequired<'_>) -> Result<(), AnswerError> {
        self.responder.answer_input_required(self.ticket, input)
    }
    /// Sends `notifications/message` now (see [`Commands::notify_log`](crate::Commands::notify_log)).
    pub fn log<S: Serialize + ?Sized>(
        &mut self,
        level: LogLevel,
        logger: Option<&str>,
        data: &S,
    ) -> Result<(), NotifyError> {
        self.responder.notify_log(self.ticket, level, logger, data)
    }
    /// Sends `notifications/progress` now (see [`Commands::notify_progress`](crate::Commands::notify_progress)).
    pub fn progress(
        &mut self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), NotifyError> {
        self.responder.notify_progress(self.ticket, progress, total, message)
    }
    /// Lets the client's connection go while the call runs (see
    /// [`Commands::reconnect_later`](crate::Commands::reconnect_later)).
    pub fn reconnect_later(&mut self, retry: core::time::Duration) -> Result<bool, NotifyError> {
        self.responder.reconnect_later(self.ticket, retry)
    }
    /// Answers with a tool result now.
    pub fn answer<S: Serialize + ?Sized>(mut self, output: &ToolOutput<'_, S>) -> Result<(), AnswerError> {
        self.responder.answer_tool(self.ticket, output)
    }
    /// Answers with an error now.
    pub fn fail(mut self, error: HostError<'_>) -> Result<(), AnswerError> {
        self.responder.answer_error(self.ticket, None, error)
    }
}

/// A resource read the host must perform.
///
/// Answer it now with [`ReadResource::answer`], or keep [`ReadResource::ticket`] and
/// answer later with [`Commands::answer_resource`](crate::Commands::answer_resource).
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
    /// The request's id, method, trace context and origin.
    pub request: RequestInfo<'a>,
    /// Responses to input requests this request carries (`2026-07-28` retries; empty on
    /// a first round), see [`Commands::answer_input_required`](crate::Commands::answer_input_required).
    pub input_responses: InputResponses<'a>,
    /// The host state of a verified `requestState`, as the host sealed it.
    pub request_state: Option<&'a [u8]>,
    /// The input kinds the client declared on this request (`2026-07-28`).
    pub client: ClientCapabilities,
    pub(crate) responder: Answers<'a>,
}

impl ReadResource<'_> {
    /// Asks the client for input first (see [`Commands::answer_input_required`](crate::Commands::answer_input_required)).
    pub fn input_required(mut self, input: &InputRequired<'_>) -> Result<(), AnswerError> {
        self.responder.answer_input_required(self.ticket, input)
    }
    /// Answers with the resource's contents now (empty contents answer "not found").
    pub fn answer(mut self, contents: &[ResourceContents<'_>]) -> Result<(), AnswerError> {
        self.responder.answer_resource(self.ticket, contents)
    }
    /// Answers with an error now.
    pub fn fail(mut self, error: HostError<'_>) -> Result<(), AnswerError> {
        self.responder.answer_error(self.ticket, None, error)
    }
}

/// A prompt the host must render.
///
/// Answer it now with [`GetPrompt::answer`], or keep [`GetPrompt::ticket`] and answer
/// later with [`Commands::answer_prompt`](crate::Commands::answer_prompt).
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
    /// The request's id, method, trace context and origin.
    pub request: RequestInfo<'a>,
    /// Responses to input requests this request carries (`2026-07-28` retries; empty on
    /// a first round), see [`Commands::answer_input_required`](crate::Commands::answer_input_required).
    pub input_responses: InputResponses<'a>,
    /// The host state of a verified `requestState`, as the host sealed it.
    pub request_state: Option<&'a [u8]>,
    /// The input kinds the client declared on this request (`2026-07-28`).
    pub client: ClientCapabilities,
    pub(crate) responder: Answers<'a>,
}

impl GetPrompt<'_> {
    /// Asks the client for input first (see [`Commands::answer_input_required`](crate::Commands::answer_input_required)).
    pub fn input_required(mut self, input: &InputRequired<'_>) -> Result<(), AnswerError> {
        self.responder.answer_input_required(self.ticket, input)
    }
    /// Answers with the rendered prompt now.
    pub fn answer(mut self, output: &PromptOutput<'_>) -> Result<(), AnswerError> {
        self.responder.answer_prompt(self.ticket, output)
    }
    /// Answers with an error now.
    pub fn fail(mut self, error: HostError<'_>) -> Result<(), AnswerError> {
        self.responder.answer_error(self.ticket, None, error)
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
/// with [`Commands::answer_completion`](crate::Commands::answer_completion).
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
    /// The request's id, method, trace context and origin.
    pub request: RequestInfo<'a>,
    pub(crate) responder: Answers<'a>,
}

impl Complete<'_> {
    /// Answers now (see [`Commands::answer_completion`](crate::Commands::answer_completion)).
    pub fn answer(mut self, values: &[&str], total: Option<u64>, has_more: bool) -> Result<(), AnswerError> {
        self.responder.answer_completion(self.ticket, values, total, has_more)
    }
    /// Answers with an error now.
    pub fn fail(mut self, error: HostError<'_>) -> Result<(), AnswerError> {
        self.responder.answer_error(self.ticket, None, error)
    }
}

// `Debug` of the events prints what identifies the work (ticket, tool, prompt, template,
// revision) and only the size of what the client sent: argument values, `inputResponses`,
// `requestState` and the text being completed stay out of logs.
impl fmt::Debug for CallTool<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallTool")
            .field("ticket", &self.ticket)
            .field("tool", &self.tool.name)
            .field("arguments", &self.arguments)
            .field("revision", &self.revision)
            .field("request", &self.request)
            .field("input_responses", &responses(&self.input_responses))
            .field("request_state", &state(&self.request_state))
            .field("client", &self.client)
            .field("can_start_task", &self.can_start_task)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for ReadResource<'_> {
    /// A listed resource's uri is printed; a template match's is not (it holds the
    /// variables' values), only its length.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ReadResource");
        d.field("ticket", &self.ticket);
        match self.template {
            None => d.field("uri", &self.uri).field("template", &None::<&str>),
            Some(t) => d.field("uri", &Redacted("bytes", self.uri.len())).field("template", &t.uri_template),
        };
        d.field("variables", &self.variables)
            .field("revision", &self.revision)
            .field("request", &self.request)
            .field("input_responses", &responses(&self.input_responses))
            .field("request_state", &state(&self.request_state))
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for GetPrompt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GetPrompt")
            .field("ticket", &self.ticket)
            .field("prompt", &self.prompt.name)
            .field("arguments", &self.arguments)
            .field("revision", &self.revision)
            .field("request", &self.request)
            .field("input_responses", &responses(&self.input_responses))
            .field("request_state", &state(&self.request_state))
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Complete<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reference = match self.reference {
            CompletionRef::Prompt(p) => ("prompt", p.name.as_str()),
            CompletionRef::Template(t) => ("template", t.uri_template.as_str()),
        };
        f.debug_struct("Complete")
            .field("ticket", &self.ticket)
            .field("reference", &reference)
            .field("argument", &self.argument)
            .field("value", &Redacted("bytes", self.value.len()))
            .field("context", &self.context)
            .field("revision", &self.revision)
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

/// Work for the host, returned by [`Engine::poll_event`](crate::Engine::poll_event). It borrows the engine: answer
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
    /// The client cancelled this ticket (for a task's ticket: `tasks/cancel`, or the
    /// task's TTL passed). Stop the work if you can; an answer given later is discarded
    /// ([`AnswerError::UnknownTicket`]).
    Cancelled(Ticket),
    /// The reply to a request the host sent a client outside any request
    /// ([`Engine::ask_client`](crate::Engine::ask_client),
    /// [`HttpEngine::ask_client`](crate::http::HttpEngine::ask_client)): the client's
    /// result or error, a timeout, or the session or stream gone. Exactly one per ask;
    /// nothing to answer.
    ClientReply(ClientReply<'a>),
}

/// The ticket [`Event::ticket`] gives for an event about no ticket
/// ([`Event::ClientReply`]): no slot has this number, so answering it is
/// [`AnswerError::UnknownTicket`].
const NO_TICKET: Ticket = Ticket { slot: u16::MAX, task: false, generation: u32::MAX };

impl<'a> Event<'a> {
    /// The request this event is about (`None` for a cancellation).
    pub fn request(&self) -> Option<&RequestInfo<'a>> {
        match self {
            Self::CallTool(c) => Some(&c.request),
            Self::ReadResource(r) => Some(&r.request),
            Self::GetPrompt(p) => Some(&p.request),
            Self::Complete(c) => Some(&c.request),
            Self::Cancelled(_) | Self::ClientReply(_) => None,
        }
    }
    /// The request this event is about, to complete it (the HTTP layer adds the session
    /// and the addresses).
    pub(crate) fn request_mut(&mut self) -> Option<&mut RequestInfo<'a>> {
        match self {
            Self::CallTool(c) => Some(&mut c.request),
            Self::ReadResource(r) => Some(&mut r.request),
            Self::GetPrompt(p) => Some(&mut p.request),
            Self::Complete(c) => Some(&mut c.request),
            Self::Cancelled(_) | Self::ClientReply(_) => None,
        }
    }
    /// The ticket this event is about (for [`Event::ClientReply`], which is about none, a
    /// ticket that names nothing: answering it is [`AnswerError::UnknownTicket`]).
    pub fn ticket(&self) -> Ticket {
        match self {
            Self::CallTool(c) => c.ticket,
            Self::ReadResource(r) => r.ticket,
            Self::GetPrompt(p) => p.ticket,
            Self::Complete(c) => c.ticket,
            Self::Cancelled(t) => *t,
            Self::ClientReply(_) => NO_TICKET,
        }
    }
}
