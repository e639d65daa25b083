//! Owned requests handed to a [`Handler`](crate::Handler): copies of what an engine
//! [`Event`](mcp_engine::Event) borrowed, so they can move into a task.

use core::fmt;
use std::ops::Range;

use mcp_engine::Revision;
use mcp_engine::event::{CallTool, GetPrompt, ReadResource};
use mcp_engine::mrtr::{ClientCapabilities, InputResponses};
use mcp_engine::observe::{TraceContext, TraceParent};
use serde::Deserialize;

use crate::host::channel::{Progress, Publisher};
use crate::host::strings::{Name, Names, Pool, Pooled, PooledString, Reuse, StringPool};

/// The W3C trace context a request carried in `params._meta`, as the engine validated
/// it ([`TraceContext`]): the client's `traceparent`, the `tracestate` beside it and the
/// `baggage`, each only if valid. The two texts sit in buffers the server reuses once the
/// request is dropped (none is taken when the request carried none).
///
/// With feature `otel` the request's span already has this context as its parent and is
/// current while the handler runs (`opentelemetry::Context::current()` holds the span
/// and the baggage); this is the same context for handlers that propagate it themselves.
/// `Debug` shows the `traceparent` and only the lengths of the others.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RequestTrace {
    parent: Option<TraceParent>,
    tracestate: Option<PooledString>,
    baggage: Option<PooledString>,
}

impl RequestTrace {
    /// The context as the engine hands it out.
    pub fn context(&self) -> TraceContext<'_> {
        TraceContext::new(self.parent, self.tracestate.as_deref(), self.baggage.as_deref())
    }

    /// A context of these parts (for tests of a handler without an engine); a
    /// `tracestate` without a parent is dropped, as the engine drops it.
    pub fn new(parent: Option<TraceParent>, tracestate: Option<&str>, baggage: Option<&str>) -> Self {
        Self {
            parent,
            tracestate: tracestate.filter(|_| parent.is_some()).map(PooledString::from),
            baggage: baggage.map(PooledString::from),
        }
    }

    pub(crate) fn from_event(trace: &TraceContext<'_>, pools: &Pools) -> Self {
        Self {
            parent: trace.parent(),
            tracestate: trace.tracestate().map(|s| pools.strings.copy(s)),
            baggage: trace.baggage().map(|s| pools.strings.copy(s)),
        }
    }
}

impl fmt::Debug for RequestTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.context(), f)
    }
}

/// A value `Debug` output must not show (arguments, responses, state): its length.
struct Bytes(usize);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} bytes>", self.0)
    }
}

/// What a request brings back after its handler asked for input
/// ([`InputRequiredReply`](crate::reply::InputRequiredReply)): the client's responses, the
/// handler's own state, and the input kinds the client can answer.
///
/// The same under every revision: a `2026-07-28` client retries the request with its
/// responses and the state (verified by the engine); in a `2025-11-25` / `2025-06-18`
/// session the engine sends the requests to the client itself and hands the request
/// back with the responses, or with an error under the key of each request that got none
/// ([`error`](Self::error)).
///
/// The responses, error messages and state sit in buffers the server reuses once the
/// request is dropped, so that handing them over allocates nothing in steady state; read
/// them as borrowed text ([`response`](Self::response), [`responses`](Self::responses),
/// [`error`](Self::error), [`request_state`](Self::request_state)). A first request
/// (nothing asked yet) has none of them and takes no buffer.
///
/// `Debug` shows the keys of the responses and the byte lengths of the responses and of
/// the state, never their contents (they carry what users typed, and state the client
/// can read anyway but logs should not).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct InputContext {
    /// The input kinds the client declared: on this request (`2026-07-28`), or in its
    /// session's `initialize` (earlier revisions).
    pub client: ClientCapabilities,
    /// Responses, errors and state, copied out of the engine's event.
    buf: Pooled<InputBuf>,
}

/// The text and bytes of an [`InputContext`], kept by the server between requests.
#[derive(Clone, Default)]
struct InputBuf {
    /// Keys, responses (JSON text) and error messages, back to back.
    text: String,
    /// Where each response or error sits in `text`: responses first, in the client's
    /// order, then errors.
    entries: Vec<InputEntry>,
    /// The handler's state, when `has_state`.
    state: Vec<u8>,
    has_state: bool,
}

#[derive(Clone)]
struct InputEntry {
    key: Range<usize>,
    /// The response's JSON text, or the error's message.
    value: Range<usize>,
    error: bool,
}

impl Reuse for InputBuf {
    fn room(&self) -> usize {
        self.text.capacity() + self.state.capacity() + self.entries.capacity() * size_of::<InputEntry>()
    }
    fn clear(&mut self) {
        self.text.clear();
        self.entries.clear();
        self.state.clear();
        self.has_state = false;
    }
}

impl InputBuf {
    fn push(&mut self, key: &str, value: &str, error: bool) {
        let ks = self.text.len();
        self.text.push_str(key);
        let vs = self.text.len();
        self.text.push_str(value);
        self.entries.push(InputEntry { key: ks..vs, value: vs..self.text.len(), error });
    }

    fn set_state(&mut self, state: &[u8]) {
        self.state.clear();
        self.state.extend_from_slice(state);
        self.has_state = true;
    }

    fn entries(&self, error: bool) -> impl Iterator<Item = (&str, &str)> + Clone {
        self.entries
            .iter()
            .filter(move |e| e.error == error)
            .map(|e| (&self.text[e.key.clone()], &self.text[e.value.clone()]))
    }
}

/// The pools of the buffers a server copies requests into.
#[derive(Default)]
pub(crate) struct Pools {
    strings: StringPool,
    inputs: Pool<InputBuf>,
}

/// `(key, byte length)` of each entry, for `Debug`.
struct Lengths<'a, I>(&'a I);

impl<'a, I: Iterator<Item = (&'a str, &'a str)> + Clone> fmt::Debug for Lengths<'_, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.clone().map(|(k, v)| (k, Bytes(v.len())))).finish()
    }
}

impl fmt::Debug for InputContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputContext")
            .field("responses", &Lengths(&self.responses()))
            .field("errors", &Lengths(&self.errors()))
            .field("request_state", &self.request_state().map(|s| Bytes(s.len())))
            .field("client", &self.client)
            .finish()
    }
}

impl PartialEq for InputContext {
    fn eq(&self, other: &Self) -> bool {
        self.client == other.client
            && self.request_state() == other.request_state()
            && self.responses().eq(other.responses())
            && self.errors().eq(other.errors())
    }
}

impl Eq for InputContext {}

impl InputContext {
    /// Responses (`(key, response as JSON text)`), state and capabilities: to test a
    /// handler without an engine. (Add errors with [`with_error`](Self::with_error).)
    pub fn new<K: AsRef<str>, V: AsRef<str>>(
        responses: impl IntoIterator<Item = (K, V)>,
        request_state: Option<&[u8]>,
        client: ClientCapabilities,
    ) -> Self {
        let mut buf = InputBuf::default();
        for (k, v) in responses {
            buf.push(k.as_ref(), v.as_ref(), false);
        }
        if let Some(state) = request_state {
            buf.set_state(state);
        }
        Self { client, buf: Pooled::unpooled(buf) }
    }

    /// Adds an error `message` under `key`: the input request under `key` got no response
    /// (to test a handler without an engine).
    #[must_use]
    pub fn with_error(mut self, key: &str, message: &str) -> Self {
        self.buf.push(key, message, true);
        self
    }

    fn from_event(
        responses: InputResponses<'_>,
        state: Option<&[u8]>,
        client: ClientCapabilities,
        pools: &Pools,
    ) -> Self {
        if responses.is_empty() && state.is_none() {
            // A first request: nothing to copy, no buffer taken.
            return Self { client, buf: Pooled::default() };
        }
        let mut buf = pools.inputs.take();
        for (k, v) in responses.iter() {
            buf.push(k, v.raw(), false);
        }
        for (k, e) in responses.errors() {
            buf.push(k, &e.message(), true);
        }
        if let Some(state) = state {
            buf.set_state(state);
        }
        Self { client, buf }
    }

    /// `(key, response as JSON text)` pairs, in the client's order: only keys the engine
    /// asked for (or, on a `2026-07-28` request without `requestState`, every object the
    /// client sent).
    pub fn responses(&self) -> impl Iterator<Item = (&str, &str)> + Clone {
        self.buf.entries(false)
    }

    /// The response under `key`, as JSON text.
    pub fn response(&self, key: &str) -> Option<&str> {
        self.responses().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The response under `key`, deserialized (`None` if absent or not a `T`).
    pub fn response_as<'a, T: Deserialize<'a>>(&'a self, key: &str) -> Option<T> {
        serde_json::from_str(self.response(key)?).ok()
    }

    /// `(key, error message)` of the input requests that got no response: a
    /// session-bound client answered with an error, with a response that does not fit the
    /// request, or not at all (timed out, or gone); see
    /// [`InputResponses::error`](mcp_engine::mrtr::InputResponses::error).
    pub fn errors(&self) -> impl Iterator<Item = (&str, &str)> + Clone {
        self.buf.entries(true)
    }

    /// Why the input request under `key` got no response, if it got none: the error
    /// message (see [`errors`](Self::errors)).
    pub fn error(&self, key: &str) -> Option<&str> {
        self.errors().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The state the handler gave with its input request
    /// ([`InputRequiredReply::state`](crate::reply::InputRequiredReply::state)), back (under
    /// `2026-07-28` sealed into `requestState` and verified by the engine).
    pub fn request_state(&self) -> Option<&[u8]> {
        self.buf.has_state.then_some(&*self.buf.state)
    }
}

/// A tool call to perform. The engine has already checked that the tool exists and that
/// the arguments match its input schema.
///
/// `Debug` shows the byte length of the arguments, not their values.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool's name, as declared in the catalog (shared with the server: no copy).
    pub name: Name,
    /// The arguments as compact JSON object text (`{}` when the request had none), in a
    /// buffer the server reuses once the call is dropped.
    pub arguments: PooledString,
    /// The revision the request was made under.
    pub revision: Revision,
    /// Multi-round-trip input (responses, state, client capabilities).
    pub input: InputContext,
    /// The client's W3C trace context (`params._meta`), as the engine validated it.
    pub trace: RequestTrace,
    pub(crate) progress: Option<Progress>,
    /// The call may become a task; it is one (`task.rs`).
    pub(crate) task_offer: bool,
    pub(crate) is_task: bool,
}

impl fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCall")
            .field("name", &self.name)
            .field("arguments", &Bytes(self.arguments.len()))
            .field("revision", &self.revision)
            .field("input", &self.input)
            .field("trace", &self.trace)
            .field("progress", &self.progress)
            .field("task_offer", &self.task_offer)
            .field("is_task", &self.is_task)
            .finish()
    }
}

impl ToolCall {
    /// A call of tool `name` with `arguments` (JSON object text), made under the newest
    /// revision. Useful to test a handler without an engine.
    pub fn new(name: impl Into<Name>, arguments: impl Into<PooledString>) -> Self {
        Self {
            name: name.into(),
            arguments: arguments.into(),
            revision: Revision::V2026_07_28,
            input: InputContext::default(),
            trace: RequestTrace::default(),
            progress: None,
            task_offer: false,
            is_task: false,
        }
    }

    pub(crate) fn from_event(
        call: &CallTool<'_>,
        progress: Progress,
        names: &mut Names,
        pools: &Pools,
    ) -> Self {
        Self {
            name: names.get(&call.tool.name),
            arguments: pools.strings.copy(call.arguments.raw()),
            revision: call.revision,
            input: InputContext::from_event(call.input_responses, call.request_state, call.client, pools),
            trace: RequestTrace::from_event(&call.request.trace, pools),
            progress: Some(progress),
            task_offer: call.can_start_task,
            is_task: call.ticket.is_task(),
        }
    }

    /// Sends a log message (`notifications/message`) while the call runs, if the client
    /// asked for logs at `level` or below (and the engine's `Config::logging` is on);
    /// otherwise, and once the call is answered or cancelled, the message is dropped.
    /// Returns whether the message was queued for the server: `false` for a call made
    /// without a server, or while 1,024 reports of the running calls wait for the server's
    /// loop (the channel is bounded; the report is dropped). The server may still drop it (the
    /// client asked for no logs at this level, or has not read 64 KiB sent before).
    pub fn log(&self, level: mcp_engine::LogLevel, logger: Option<&str>, data: serde_json::Value) -> bool {
        self.progress.as_ref().is_some_and(|p| p.log(level, logger, data))
    }

    /// Reports progress (`notifications/progress`) while the call runs, if the client
    /// asked for it with a progress token; otherwise (and once the call is answered or
    /// cancelled) the report is dropped. `progress` must increase from one report to the
    /// next. Over HTTP the first report turns the response into an SSE stream. Returns
    /// whether the report was queued, as for [`log`](Self::log).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        self.progress.as_ref().is_some_and(|p| p.send(progress, total, message))
    }

    /// Lets the client's connection go while the call runs (SSE polling, session-bound
    /// HTTP only; see `HttpEngine::reconnect_later`): the response ends with `retry:`,
    /// the client comes back with `Last-Event-ID` and gets the rest. Elsewhere nothing
    /// changes. Returns whether the request was queued for the server.
    pub fn reconnect_later(&self, retry: std::time::Duration) -> bool {
        self.progress.as_ref().is_some_and(|p| p.reconnect_later(retry))
    }

    /// Reports that this call read the resource at `uri` (as `resources/read` matches
    /// it: a listed resource or a template's): the engine counts the connectome edge
    /// `tool reads resource` (see [`mcp_engine::connectome`]). Counts only; nothing of
    /// what was read is sent. Returns whether the report was queued, as for
    /// [`log`](Self::log); the engine ignores a uri its catalog has no resource for.
    /// Feature `connectome`.
    #[cfg(feature = "connectome")]
    pub fn report_read(&self, uri: &str) -> bool {
        self.progress.as_ref().is_some_and(|p| p.report_read(&self.name, uri))
    }

    /// A [`Publisher`] to the server running this call: replace the catalog, announce
    /// resource updates. `None` for a call built with [`ToolCall::new`].
    pub fn publisher(&self) -> Option<Publisher> {
        self.progress.as_ref().map(Progress::publisher)
    }

    /// Deserializes the arguments into `T`. `T` may borrow strings from the call when
    /// they contain no escapes; prefer `String` or `Cow<str>` fields otherwise.
    ///
    /// A [`serde_json::Error`] converts into [`HostFailure::InvalidParams`] with `?`.
    ///
    /// [`HostFailure::InvalidParams`]: crate::HostFailure::InvalidParams
    pub fn deserialize<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.arguments)
    }
}

/// Tasks (see the `task` module): whether the call may become one, whether it is one,
/// starting one, its status message.
impl ToolCall {
    /// Whether this call may become a task ([`start_task`](Self::start_task)): tasks are
    /// on in the engine, the tool is not `TaskSupport::Forbidden`, and the client declared
    /// the tasks extension on this request.
    pub fn can_start_task(&self) -> bool {
        self.task_offer
    }

    /// Whether this call is a task already: one that came back with its client's input.
    pub fn is_task(&self) -> bool {
        self.is_task
    }

    /// Turns this call into a task: the client is answered now with the task's handle,
    /// and the handler goes on; what it returns then finishes the task instead of the
    /// request. The task outlives the client's connection.
    ///
    /// # Errors
    ///
    /// What the engine refused ([`AnswerError::TaskRefused`](mcp_engine::error::AnswerError::TaskRefused): the call cannot be a task,
    /// or the bounds are reached): nothing was sent, and the call goes on as a plain call.
    /// A call made without a server ([`ToolCall::new`]) is refused with
    /// [`TaskRefusal::Off`](mcp_engine::error::TaskRefusal::Off).
    pub async fn start_task(
        &self,
        options: crate::host::task::TaskStart,
    ) -> Result<(), mcp_engine::error::AnswerError> {
        let off = mcp_engine::error::AnswerError::TaskRefused(mcp_engine::error::TaskRefusal::Off);
        let Some(rx) = self.progress.as_ref().and_then(|p| p.start_task(options)) else { return Err(off) };
        rx.await.unwrap_or(Err(off))
    }

    /// Sets the task's `statusMessage` (`None` clears it). Returns whether it was queued
    /// for the server; dropped once the task is finished, and for a call that is no task.
    pub fn task_status(&self, message: Option<&str>) -> bool {
        self.progress.as_ref().is_some_and(|p| p.task_status(message))
    }
}

/// A resource read to perform. The engine has already checked that the uri is listed or
/// matches a template of the catalog.
///
/// `Debug` shows the template, the variable names and byte lengths: never the uri or a
/// variable's value (they can carry what the client sent), and of the multi-round-trip
/// input only byte lengths ([`InputContext`]).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceRead {
    /// The uri asked for, in a buffer the server reuses once the read is dropped.
    pub uri: PooledString,
    /// The uri template (`uriTemplate`) that matched, or `None` for a listed resource
    /// (shared with the server: no copy).
    pub template: Option<Name>,
    /// The template's defined variables, `(name, value)` in the order the template names
    /// them, percent-decoded (see [`mcp_engine::event::TemplateVars`]). Empty for a listed resource.
    pub variables: Vec<(String, String)>,
    /// The decoded `(key, value)` pairs an exploded query variable (`{?name*}`) collected,
    /// in uri order. Empty when the template has none.
    pub query_pairs: Vec<(String, String)>,
    /// The revision the request was made under.
    pub revision: Revision,
    /// Multi-round-trip input (responses, state, client capabilities).
    pub input: InputContext,
    /// The client's W3C trace context (`params._meta`), as the engine validated it.
    pub trace: RequestTrace,
}

impl std::fmt::Debug for ResourceRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.variables.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("ResourceRead")
            .field("uri_len", &self.uri.len())
            .field("template", &self.template)
            .field("variables", &names)
            .field("query_pairs", &self.query_pairs.len())
            .field("revision", &self.revision)
            .field("input", &self.input)
            .field("trace", &self.trace)
            .finish()
    }
}

impl ResourceRead {
    /// A read of the listed resource `uri`, made under the newest revision. Useful to test
    /// a handler without an engine.
    pub fn new(uri: impl Into<PooledString>) -> Self {
        Self {
            uri: uri.into(),
            template: None,
            variables: Vec::new(),
            query_pairs: Vec::new(),
            revision: Revision::V2026_07_28,
            input: InputContext::default(),
            trace: RequestTrace::default(),
        }
    }

    /// Adds a template match: the template and its variables.
    pub fn with_template<N: Into<String>, V: Into<String>>(
        mut self,
        template: impl Into<Name>,
        variables: impl IntoIterator<Item = (N, V)>,
    ) -> Self {
        self.template = Some(template.into());
        self.variables = variables.into_iter().map(|(n, v)| (n.into(), v.into())).collect();
        self
    }

    pub(crate) fn from_event(read: &ReadResource<'_>, names: &mut Names, pools: &Pools) -> Self {
        Self {
            uri: pools.strings.copy(read.uri),
            template: read.template.map(|t| names.get(&t.uri_template)),
            variables: read.variables.iter().map(|(n, v)| (n.to_owned(), v.to_owned())).collect(),
            query_pairs: read.variables.pairs().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
            revision: read.revision,
            input: InputContext::from_event(read.input_responses, read.request_state, read.client, pools),
            trace: RequestTrace::from_event(&read.request.trace, pools),
        }
    }

    /// The value of template variable `name`, if the uri matched a template naming it.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A prompt to render. The engine has already checked that the prompt exists and that
/// the arguments are strings matching its declared arguments.
///
/// `Debug` shows the byte length of the arguments, not their values.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PromptGet {
    /// The prompt's name, as declared in the catalog (shared with the server: no copy).
    pub name: Name,
    /// The arguments as compact JSON object text, an object of strings (`{}` when the
    /// request had none), in a buffer the server reuses once the request is dropped.
    pub arguments: PooledString,
    /// The revision the request was made under.
    pub revision: Revision,
    /// Multi-round-trip input (responses, state, client capabilities).
    pub input: InputContext,
    /// The client's W3C trace context (`params._meta`), as the engine validated it.
    pub trace: RequestTrace,
}

impl fmt::Debug for PromptGet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptGet")
            .field("name", &self.name)
            .field("arguments", &Bytes(self.arguments.len()))
            .field("revision", &self.revision)
            .field("input", &self.input)
            .field("trace", &self.trace)
            .finish()
    }
}

impl PromptGet {
    /// A request for prompt `name` with `arguments` (JSON object text), made under the
    /// newest revision. Useful to test a handler without an engine.
    pub fn new(name: impl Into<Name>, arguments: impl Into<PooledString>) -> Self {
        Self {
            name: name.into(),
            arguments: arguments.into(),
            revision: Revision::V2026_07_28,
            input: InputContext::default(),
            trace: RequestTrace::default(),
        }
    }

    pub(crate) fn from_event(get: &GetPrompt<'_>, names: &mut Names, pools: &Pools) -> Self {
        Self {
            name: names.get(&get.prompt.name),
            arguments: pools.strings.copy(get.arguments.raw()),
            revision: get.revision,
            input: InputContext::from_event(get.input_responses, get.request_state, get.client, pools),
            trace: RequestTrace::from_event(&get.request.trace, pools),
        }
    }

    /// Deserializes the arguments into `T` (a struct of strings, or a map such as
    /// `BTreeMap<String, String>`).
    pub fn deserialize<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.arguments)
    }

    /// The value of argument `name`, if given.
    pub fn argument(&self, name: &str) -> Option<String> {
        let mut map: std::collections::BTreeMap<String, String> = self.deserialize().ok()?;
        map.remove(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_read_owned_requests() {
        #[derive(Deserialize)]
        struct Echo {
            text: String,
        }
        let call = ToolCall::new("echo", r#"{"text":"a\"b"}"#);
        assert_eq!(call.deserialize::<Echo>().unwrap().text, "a\"b");
        assert!(call.deserialize::<u8>().is_err());

        let read = ResourceRead::new("x://t/7").with_template("x://t/{id}", [("id", "7")]);
        assert_eq!(read.variable("id"), Some("7"));
        assert_eq!(read.variable("nope"), None);

        let get = PromptGet::new("p", r#"{"arg1":"one"}"#);
        assert_eq!(get.argument("arg1").as_deref(), Some("one"));
        assert_eq!(get.argument("arg2"), None);
    }

    #[test]
    fn input_context_reads_responses_errors_and_state() {
        let empty = InputContext::default();
        assert_eq!((empty.responses().count(), empty.errors().count(), empty.request_state()), (0, 0, None));
        let client = ClientCapabilities::NONE.with(mcp_engine::mrtr::InputKind::Elicitation);
        let input = InputContext::new([("a", r#"{"action":"accept"}"#), ("b", "{}")], Some(b"s"), client)
            .with_error("c", "User rejected");
        assert_eq!(input.responses().collect::<Vec<_>>(), [("a", r#"{"action":"accept"}"#), ("b", "{}")]);
        assert_eq!(input.response("b"), Some("{}"));
        assert_eq!(input.response("c"), None, "an error is no response");
        assert_eq!(input.response_as::<serde_json::Value>("a").unwrap()["action"], "accept");
        assert_eq!(input.errors().collect::<Vec<_>>(), [("c", "User rejected")]);
        assert_eq!((input.error("c"), input.error("a")), (Some("User rejected"), None));
        assert_eq!(input.request_state(), Some(&b"s"[..]));
        assert_eq!(input.client, client);
        assert_eq!(input.clone(), input);
        assert_ne!(InputContext::new([("a", "{}")], None, client), input);
        let stateless = InputContext::new([("a", "{}")], Some(b""), client);
        assert_eq!(stateless.request_state(), Some(&b""[..]), "empty state is still state");
        assert_ne!(stateless, InputContext::new([("a", "{}")], None, client));
    }

    #[test]
    fn debug_output_shows_lengths_not_values() {
        let secret = "hunter2-secret";
        let response = format!(r#"{{"action":"accept","content":{{"pw":"{secret}"}}}}"#);
        let state = format!("state-{secret}").into_bytes();
        let input = InputContext::new([("pw", response.as_str())], Some(&state), ClientCapabilities::NONE);
        let arguments = format!(r#"{{"password":"{secret}"}}"#);
        let mut call = ToolCall::new("login", arguments.as_str());
        call.input = input.clone();
        let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        let trace = RequestTrace::new(parent, Some(&format!("k={secret}")), Some(&format!("u={secret}")));
        call.trace = trace.clone();
        let mut get = PromptGet::new("p", arguments.as_str());
        get.input = input.clone();
        let mut read = ResourceRead::new(format!("x://r/{secret}").as_str());
        read.variables.push(("key".into(), secret.into()));
        read.input = input;
        let context = format!(r#"{{"other":"{secret}"}}"#);
        let completion = CompletionRequest {
            target: CompletionTarget::Prompt("p".into()),
            argument: "arg".into(),
            value: secret.into(),
            context: context.clone(),
            revision: Revision::V2026_07_28,
            trace: trace.clone(),
        };
        assert_eq!(call.trace.context().baggage(), Some(format!("u={secret}").as_str()));
        assert_eq!(call.trace.context().parent(), parent);
        let shown = [format!("{call:?}"), format!("{get:?}"), format!("{read:?}"), format!("{completion:?}")];
        for s in &shown {
            assert!(!s.contains("hunter2"), "a value leaks into Debug: {s}");
        }
        let args = format!("arguments: <{} bytes>", arguments.len());
        let responses = format!("responses: [(\"pw\", <{} bytes>)]", response.len());
        let state = format!("request_state: Some(<{} bytes>)", state.len());
        for s in &shown[..3] {
            assert!(s.contains(&responses) && s.contains(&state), "{s}");
        }
        assert!(shown[0].contains("\"login\"") && shown[0].contains(&args), "{}", shown[0]);
        assert!(shown[1].contains(&args), "{}", shown[1]);
        assert!(
            shown[2].contains("uri_len") && shown[2].contains("\"key\""),
            "sizes and names show: {}",
            shown[2]
        );
        let value = format!("value: <{} bytes>", secret.len());
        let context = format!("context: <{} bytes>", context.len());
        assert!(shown[3].contains(&value) && shown[3].contains(&context), "{}", shown[3]);
    }
}

/// What a completion is for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompletionTarget {
    /// An argument of the prompt with this name.
    Prompt(String),
    /// A variable of the resource template with this uri template.
    Template(String),
}

/// A completion request (`completion/complete`) to answer with candidate values.
///
/// `Debug` shows the byte lengths of what the user typed and of the context arguments,
/// not their values.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The prompt or template.
    pub target: CompletionTarget,
    /// The argument or variable being completed.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// `context.arguments` as JSON object text (`{}` if none).
    pub context: String,
    /// The revision the request was made under.
    pub revision: Revision,
    /// The client's W3C trace context (`params._meta`), as the engine validated it.
    pub trace: RequestTrace,
}

impl fmt::Debug for CompletionRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionRequest")
            .field("target", &self.target)
            .field("argument", &self.argument)
            .field("value", &Bytes(self.value.len()))
            .field("context", &Bytes(self.context.len()))
            .field("revision", &self.revision)
            .field("trace", &self.trace)
            .finish()
    }
}

impl CompletionRequest {
    pub(crate) fn from_event(c: &mcp_engine::event::Complete<'_>, pools: &Pools) -> Self {
        let target = match c.reference {
            mcp_engine::event::CompletionRef::Prompt(p) => CompletionTarget::Prompt(p.name.clone()),
            mcp_engine::event::CompletionRef::Template(t) => {
                CompletionTarget::Template(t.uri_template.clone())
            }
            _ => CompletionTarget::Prompt(String::new()),
        };
        Self {
            target,
            argument: c.argument.to_owned(),
            value: c.value.to_owned(),
            context: c.context.raw().to_owned(),
            revision: c.revision,
            trace: RequestTrace::from_event(&c.request.trace, pools),
        }
    }
}
