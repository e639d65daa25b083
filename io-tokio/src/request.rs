//! Owned requests handed to a [`Handler`](crate::Handler): copies of what an engine
//! [`Event`](mcp_engine::Event) borrowed, so they can move into a task.

use core::fmt;

use mcp_engine::{CallTool, ClientCapabilities, GetPrompt, InputResponses, ReadResource, Revision};
use serde::Deserialize;

use crate::channel::{Progress, Publisher};
use crate::strings::{Name, Names, PooledString, StringPool};

/// A value `Debug` output must not show (arguments, responses, state): its length.
struct Bytes(usize);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} bytes>", self.0)
    }
}

/// What a `2026-07-28` request brings for a multi-round-trip request: the client's
/// responses to the input a handler asked for
/// ([`InputRequiredReply`](crate::InputRequiredReply)), the handler's own state back
/// (verified by the engine), and the input kinds the client can answer.
///
/// `Debug` shows the keys of the responses and the byte lengths of the responses and of
/// the state, never their contents (they carry what users typed, and state the client
/// can read anyway but logs should not).
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct InputContext {
    /// `(key, response as JSON text)`, only for keys the engine asked for (or, on a
    /// request without `requestState`, every object the client sent).
    pub responses: Vec<(String, String)>,
    /// `(key, error message)` of the input requests that got no response (a
    /// session-bound client answered with an error or not at all; see
    /// [`InputResponses::error`](mcp_engine::InputResponses::error)).
    pub errors: Vec<(String, String)>,
    /// The state the handler sealed into `requestState`, verified.
    pub request_state: Option<Vec<u8>>,
    /// The input kinds the client declared on this request.
    pub client: ClientCapabilities,
}

impl fmt::Debug for InputContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let responses: Vec<(&str, Bytes)> =
            self.responses.iter().map(|(k, v)| (k.as_str(), Bytes(v.len()))).collect();
        f.debug_struct("InputContext")
            .field("responses", &responses)
            .field(
                "errors",
                &self.errors.iter().map(|(k, v)| (k.as_str(), Bytes(v.len()))).collect::<Vec<_>>(),
            )
            .field("request_state", &self.request_state.as_ref().map(|s| Bytes(s.len())))
            .field("client", &self.client)
            .finish()
    }
}

impl InputContext {
    /// Responses, state and capabilities (to test a handler without an engine).
    pub fn new(
        responses: Vec<(String, String)>,
        request_state: Option<Vec<u8>>,
        client: ClientCapabilities,
    ) -> Self {
        Self { responses, errors: Vec::new(), request_state, client }
    }

    fn from_event(responses: InputResponses<'_>, state: Option<&[u8]>, client: ClientCapabilities) -> Self {
        Self {
            responses: responses.iter().map(|(k, v)| (k.to_owned(), v.raw().to_owned())).collect(),
            errors: responses.errors().map(|(k, e)| (k.to_owned(), e.message().into_owned())).collect(),
            request_state: state.map(<[u8]>::to_vec),
            client,
        }
    }

    /// Why the input request under `key` got no response, if it got none: the error
    /// message (see [`Self::errors`]).
    pub fn error(&self, key: &str) -> Option<&str> {
        self.errors.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The response under `key`, as JSON text.
    pub fn response(&self, key: &str) -> Option<&str> {
        self.responses.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The response under `key`, deserialized (`None` if absent or not a `T`).
    pub fn response_as<'a, T: Deserialize<'a>>(&'a self, key: &str) -> Option<T> {
        serde_json::from_str(self.response(key)?).ok()
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
    progress: Option<Progress>,
}

impl fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCall")
            .field("name", &self.name)
            .field("arguments", &Bytes(self.arguments.len()))
            .field("revision", &self.revision)
            .field("input", &self.input)
            .field("progress", &self.progress)
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
            progress: None,
        }
    }

    pub(crate) fn from_event(
        call: &CallTool<'_>,
        progress: Progress,
        names: &mut Names,
        pool: &StringPool,
    ) -> Self {
        Self {
            name: names.get(&call.tool.name),
            arguments: pool.copy(call.arguments.raw()),
            revision: call.revision,
            input: InputContext::from_event(call.input_responses, call.request_state, call.client),
            progress: Some(progress),
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
    /// them, percent-decoded (see [`mcp_engine::TemplateVars`]). Empty for a listed resource.
    pub variables: Vec<(String, String)>,
    /// The decoded `(key, value)` pairs an exploded query variable (`{?name*}`) collected,
    /// in uri order. Empty when the template has none.
    pub query_pairs: Vec<(String, String)>,
    /// The revision the request was made under.
    pub revision: Revision,
    /// Multi-round-trip input (responses, state, client capabilities).
    pub input: InputContext,
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

    pub(crate) fn from_event(read: &ReadResource<'_>, names: &mut Names, pool: &StringPool) -> Self {
        Self {
            uri: pool.copy(read.uri),
            template: read.template.map(|t| names.get(&t.uri_template)),
            variables: read.variables.iter().map(|(n, v)| (n.to_owned(), v.to_owned())).collect(),
            query_pairs: read.variables.pairs().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
            revision: read.revision,
            input: InputContext::from_event(read.input_responses, read.request_state, read.client),
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
}

impl fmt::Debug for PromptGet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptGet")
            .field("name", &self.name)
            .field("arguments", &Bytes(self.arguments.len()))
            .field("revision", &self.revision)
            .field("input", &self.input)
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
        }
    }

    pub(crate) fn from_event(get: &GetPrompt<'_>, names: &mut Names, pool: &StringPool) -> Self {
        Self {
            name: names.get(&get.prompt.name),
            arguments: pool.copy(get.arguments.raw()),
            revision: get.revision,
            input: InputContext::from_event(get.input_responses, get.request_state, get.client),
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
    fn debug_output_shows_lengths_not_values() {
        let secret = "hunter2-secret";
        let response = format!(r#"{{"action":"accept","content":{{"pw":"{secret}"}}}}"#);
        let state = format!("state-{secret}").into_bytes();
        let input = InputContext::new(
            vec![("pw".to_owned(), response.clone())],
            Some(state.clone()),
            ClientCapabilities::NONE,
        );
        let arguments = format!(r#"{{"password":"{secret}"}}"#);
        let mut call = ToolCall::new("login", arguments.as_str());
        call.input = input.clone();
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
        };
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
}

impl fmt::Debug for CompletionRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionRequest")
            .field("target", &self.target)
            .field("argument", &self.argument)
            .field("value", &Bytes(self.value.len()))
            .field("context", &Bytes(self.context.len()))
            .field("revision", &self.revision)
            .finish()
    }
}

impl CompletionRequest {
    pub(crate) fn from_event(c: &mcp_engine::Complete<'_>) -> Self {
        let target = match c.reference {
            mcp_engine::CompletionRef::Prompt(p) => CompletionTarget::Prompt(p.name.clone()),
            mcp_engine::CompletionRef::Template(t) => CompletionTarget::Template(t.uri_template.clone()),
            _ => CompletionTarget::Prompt(String::new()),
        };
        Self {
            target,
            argument: c.argument.to_owned(),
            value: c.value.to_owned(),
            context: c.context.raw().to_owned(),
            revision: c.revision,
        }
    }
}
