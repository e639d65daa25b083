//! Multi-round-trip requests (`2026-07-28`, `InputRequiredResult`).
//!
//! A host that cannot finish `tools/call`, `prompts/get` or `resources/read` without
//! something from the client answers the ticket with [`InputRequired`]: input requests
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) under keys it picks, and
//! optionally its own state. The engine writes `resultType: "input_required"` and a
//! `requestState` it seals with HMAC-SHA256: the method, a digest of the request's
//! identifying params (tool or prompt name and arguments, or the uri), an expiry, the keys
//! it asked for and the host's state. The client retries with `inputResponses` and the
//! state; the engine verifies the state (a tampered, expired or foreign one is `-32602`),
//! checks the responses to the keys it asked for, drops the keys it did not ask for, and
//! hands the host its state back with the responses ([`InputResponses`]).

use core::fmt;
use core::ops::Range;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use simd_json::Node;

use crate::content::PromptMessage;
use crate::time::{Clock, Expiry, Lifetime};
use crate::wire::json;

/// At most this many input requests in one answer, and input responses kept per request.
pub const MAX_INPUT_REQUESTS: usize = 16;
/// The longest key of an input request, in bytes.
pub const MAX_INPUT_KEY_LEN: usize = 64;
/// The most host state bytes one `requestState` carries.
pub const MAX_HOST_STATE_LEN: usize = 4096;

/// The format version (byte 0, low seven bits; `0x80` set: the expiry is on the wall
/// clock, microseconds since the Unix epoch, else on the engine's `Instant`s).
const VERSION: u8 = 2;
const WALL: u8 = 0x80;
const TAG_LEN: usize = 32;
/// version, method, expiry, digest, key count.
const HEADER_LEN: usize = 1 + 1 + 8 + 32 + 1;
/// The longest sealed state, in bytes before base64.
pub(crate) const MAX_SEALED_LEN: usize =
    HEADER_LEN + MAX_INPUT_REQUESTS * (2 + MAX_INPUT_KEY_LEN) + MAX_HOST_STATE_LEN + TAG_LEN;
/// The longest `requestState` text the engine can have issued.
const MAX_STATE_TEXT_LEN: usize = MAX_SEALED_LEN.div_ceil(3) * 4;

/// What an input request asks the client for; each needs its own client capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputKind {
    /// `elicitation/create` in form mode: needs `elicitation` (or `elicitation.form`).
    Elicitation,
    /// `elicitation/create` in url mode: needs `elicitation.url`.
    ElicitationUrl,
    /// `sampling/createMessage`: needs `sampling`; one that carries `tools` or
    /// `toolChoice` also needs `sampling.tools`, and one whose `includeContext` is not
    /// `"none"` also needs `sampling.context`.
    Sampling,
    /// `roots/list`: needs `roots`.
    Roots,
}

impl InputKind {
    /// The JSON-RPC method of the request.
    pub fn method(self) -> &'static str {
        match self {
            Self::Elicitation | Self::ElicitationUrl => "elicitation/create",
            Self::Sampling => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Self::Elicitation => 1,
            Self::ElicitationUrl => 2,
            Self::Sampling => 4,
            Self::Roots => 8,
        }
    }

    fn code(self) -> u8 {
        match self {
            Self::Elicitation => 1,
            Self::ElicitationUrl => 2,
            Self::Sampling => 3,
            Self::Roots => 4,
        }
    }

    fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            1 => Self::Elicitation,
            2 => Self::ElicitationUrl,
            3 => Self::Sampling,
            4 => Self::Roots,
            _ => return None,
        })
    }
}

/// `sampling.tools`: sampling requests that carry `tools` or `toolChoice`.
const SAMPLING_TOOLS: u8 = 16;
/// `sampling.context`: sampling requests whose `includeContext` is not `"none"`.
const SAMPLING_CONTEXT: u8 = 32;

/// The input kinds a client declared in `_meta["io.modelcontextprotocol/clientCapabilities"]`
/// of the request at hand (`2026-07-28`; empty for earlier revisions).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ClientCapabilities {
    bits: u8,
}

impl ClientCapabilities {
    /// No input kinds.
    pub const NONE: Self = Self { bits: 0 };

    /// The capability bits (as a session record keeps them).
    pub(crate) fn bits(self) -> u8 {
        self.bits
    }

    /// Capabilities from their bits; `None` when a bit means nothing.
    pub(crate) fn from_bits(bits: u8) -> Option<Self> {
        (bits & !(1 | 2 | 4 | 8 | SAMPLING_TOOLS | SAMPLING_CONTEXT) == 0).then_some(Self { bits })
    }

    /// These capabilities and `kind` (to build requests in tests).
    #[must_use]
    pub fn with(self, kind: InputKind) -> Self {
        Self { bits: self.bits | kind.bit() }
    }

    /// These capabilities and `sampling.tools` (implies `sampling`).
    #[must_use]
    pub fn with_sampling_tools(self) -> Self {
        Self { bits: self.bits | InputKind::Sampling.bit() | SAMPLING_TOOLS }
    }

    /// These capabilities and `sampling.context` (implies `sampling`).
    #[must_use]
    pub fn with_sampling_context(self) -> Self {
        Self { bits: self.bits | InputKind::Sampling.bit() | SAMPLING_CONTEXT }
    }

    /// Whether the client can answer an input request of `kind` (for sampling: one that
    /// uses neither tools nor context, see [`Self::sampling_tools`] and
    /// [`Self::sampling_context`]).
    pub fn supports(self, kind: InputKind) -> bool {
        self.bits & kind.bit() != 0
    }

    /// Whether the client declared `sampling.tools`: it can answer sampling requests that
    /// carry `tools` or `toolChoice`.
    pub fn sampling_tools(self) -> bool {
        self.bits & SAMPLING_TOOLS != 0
    }

    /// Whether the client declared `sampling.context`: it can answer sampling requests
    /// whose `includeContext` is `"thisServer"` or `"allServers"`.
    pub fn sampling_context(self) -> bool {
        self.bits & SAMPLING_CONTEXT != 0
    }

    /// Reads the capabilities object at node `caps`.
    pub(crate) fn from_tape(n: &[Node<'_>], caps: usize) -> Self {
        let mut bits = 0;
        if let Some(s) = json::get(n, caps, "sampling").filter(|&i| json::is_object(n, i)) {
            bits |= InputKind::Sampling.bit();
            let [tools, context] = json::members(n, s, ["tools", "context"]);
            if tools.is_some_and(|i| json::is_object(n, i)) {
                bits |= SAMPLING_TOOLS;
            }
            if context.is_some_and(|i| json::is_object(n, i)) {
                bits |= SAMPLING_CONTEXT;
            }
        }
        if json::get(n, caps, "roots").is_some_and(|i| json::is_object(n, i)) {
            bits |= InputKind::Roots.bit();
        }
        if let Some(e) = json::get(n, caps, "elicitation").filter(|&i| json::is_object(n, i)) {
            // An empty object means form mode only (the revision's default).
            let form = json::get(n, e, "form").is_some();
            let url = json::get(n, e, "url").is_some();
            if form || !url {
                bits |= InputKind::Elicitation.bit();
            }
            if url {
                bits |= InputKind::ElicitationUrl.bit();
            }
        }
        Self { bits }
    }
}

impl fmt::Debug for ClientCapabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (InputKind::Elicitation.bit(), "Elicitation"),
            (InputKind::ElicitationUrl.bit(), "ElicitationUrl"),
            (InputKind::Sampling.bit(), "Sampling"),
            (SAMPLING_TOOLS, "SamplingTools"),
            (SAMPLING_CONTEXT, "SamplingContext"),
            (InputKind::Roots.bit(), "Roots"),
        ];
        /// A name printed as it is (no quotes), like a unit variant.
        struct Bare(&'static str);
        impl fmt::Debug for Bare {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
        }
        let set = names.iter().filter(|(bit, _)| self.bits & bit != 0).map(|(_, name)| Bare(name));
        f.debug_set().entries(set).finish()
    }
}

#[derive(Clone, Copy)]
enum InputBody<'a> {
    Elicit { message: &'a str, schema: &'a RawValue },
    ElicitUrl { message: &'a str, url: &'a str, elicitation_id: &'a str },
    Sample { messages: &'a [PromptMessage<'a>], max_tokens: u32, system_prompt: Option<&'a str> },
    Roots,
    Raw { kind: InputKind, params: &'a RawValue },
}

/// One request the client must fulfil before the work can go on, under a key the host
/// picks (unique within the answer, 1 to [`MAX_INPUT_KEY_LEN`] bytes).
#[derive(Clone, Copy)]
pub struct InputRequest<'a> {
    key: &'a str,
    body: InputBody<'a>,
}

impl<'a> InputRequest<'a> {
    /// `elicitation/create` in form mode: ask the user for data matching
    /// `requested_schema` (a flat object schema, see the spec's `ElicitRequestFormParams`).
    pub fn elicit(key: &'a str, message: &'a str, requested_schema: &'a RawValue) -> Self {
        Self { key, body: InputBody::Elicit { message, schema: requested_schema } }
    }

    /// `elicitation/create` in url mode: send the user to `url`.
    pub fn elicit_url(key: &'a str, message: &'a str, url: &'a str, elicitation_id: &'a str) -> Self {
        Self { key, body: InputBody::ElicitUrl { message, url, elicitation_id } }
    }

    /// `sampling/createMessage`: ask the client's model to answer `messages`.
    pub fn sample(key: &'a str, messages: &'a [PromptMessage<'a>], max_tokens: u32) -> Self {
        Self { key, body: InputBody::Sample { messages, max_tokens, system_prompt: None } }
    }

    /// Adds a system prompt to a sampling request (no effect on other kinds).
    #[must_use]
    pub fn system_prompt(mut self, prompt: &'a str) -> Self {
        if let InputBody::Sample { system_prompt, .. } = &mut self.body {
            *system_prompt = Some(prompt);
        }
        self
    }

    /// `roots/list`: ask for the client's roots.
    pub fn list_roots(key: &'a str) -> Self {
        Self { key, body: InputBody::Roots }
    }

    /// A request of `kind` with `params` written as they are (they must be the params
    /// object of that method; the engine does not check them).
    pub fn raw(key: &'a str, kind: InputKind, params: &'a RawValue) -> Self {
        Self { key, body: InputBody::Raw { kind, params } }
    }

    /// The key.
    pub fn key(&self) -> &'a str {
        self.key
    }

    /// The kind.
    pub fn kind(&self) -> InputKind {
        match self.body {
            InputBody::Elicit { .. } => InputKind::Elicitation,
            InputBody::ElicitUrl { .. } => InputKind::ElicitationUrl,
            InputBody::Sample { .. } => InputKind::Sampling,
            InputBody::Roots => InputKind::Roots,
            InputBody::Raw { kind, .. } => kind,
        }
    }

    /// The capability bits a client needs to answer this request: its kind's, and for a
    /// sampling request with raw params that carry `tools`/`toolChoice` or an
    /// `includeContext` other than `"none"`, `sampling.tools` / `sampling.context`.
    fn needs(&self) -> u8 {
        let kind = self.kind();
        let InputBody::Raw { kind: InputKind::Sampling, params } = self.body else { return kind.bit() };
        #[derive(serde::Deserialize)]
        struct Uses<'b> {
            tools: Option<serde::de::IgnoredAny>,
            #[serde(rename = "toolChoice")]
            tool_choice: Option<serde::de::IgnoredAny>,
            #[serde(rename = "includeContext", borrow)]
            include_context: Option<std::borrow::Cow<'b, str>>,
        }
        let mut needs = kind.bit();
        // Most sampling params name none of these: decided without parsing (a parse
        // allocates). A key spelled with escapes could hide one, so `\u` parses too.
        let text = params.get().as_bytes();
        let may_name = |key: &[u8]| memchr::memmem::find(text, key).is_some();
        if !may_name(b"tools")
            && !may_name(b"toolChoice")
            && !may_name(b"includeContext")
            && !may_name(b"\\u")
        {
            return needs;
        }
        // Params that are not an object are not sampling params: nothing more is asked.
        if let Ok(u) = serde_json::from_str::<Uses<'_>>(params.get()) {
            if u.tools.is_some() || u.tool_choice.is_some() {
                needs |= SAMPLING_TOOLS;
            }
            if u.include_context.is_some_and(|c| c != "none") {
                needs |= SAMPLING_CONTEXT;
            }
        }
        needs
    }

    /// Whether a client that declared `caps` can answer this request (every capability
    /// it needs, see [`Self::needs`]).
    pub(crate) fn declared_by(&self, caps: ClientCapabilities) -> bool {
        let needs = self.needs();
        caps.bits & needs == needs
    }

    /// Writes `{"method":..,"params":{..}}`.
    fn write(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.push(b'{');
        self.write_members(out)?;
        out.push(b'}');
        Ok(())
    }

    /// Writes `"method":..,"params":{..}` (the members of a request, without braces).
    pub(crate) fn write_members(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.extend_from_slice(b"\"method\":");
        json::write_str(out, self.kind().method());
        if let InputBody::Raw { params, .. } = self.body {
            out.extend_from_slice(b",\"params\":");
            out.extend_from_slice(params.get().as_bytes());
            return Ok(());
        }
        out.extend_from_slice(b",\"params\":{");
        match self.body {
            InputBody::Elicit { message, schema } => {
                out.extend_from_slice(b"\"mode\":\"form\",\"message\":");
                json::write_str(out, message);
                out.extend_from_slice(b",\"requestedSchema\":");
                out.extend_from_slice(schema.get().as_bytes());
            }
            InputBody::ElicitUrl { message, url, elicitation_id } => {
                out.extend_from_slice(b"\"mode\":\"url\",\"message\":");
                json::write_str(out, message);
                out.extend_from_slice(b",\"url\":");
                json::write_str(out, url);
                out.extend_from_slice(b",\"elicitationId\":");
                json::write_str(out, elicitation_id);
            }
            InputBody::Sample { messages, max_tokens, system_prompt } => {
                out.extend_from_slice(b"\"messages\":");
                serde_json::to_writer(&mut *out, messages)?;
                out.extend_from_slice(b",\"maxTokens\":");
                json::write_u64(out, u64::from(max_tokens));
                if let Some(p) = system_prompt {
                    out.extend_from_slice(b",\"systemPrompt\":");
                    json::write_str(out, p);
                }
            }
            InputBody::Roots | InputBody::Raw { .. } => {}
        }
        out.push(b'}');
        Ok(())
    }
}

impl fmt::Debug for InputRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputRequest").field("key", &self.key).field("kind", &self.kind()).finish()
    }
}

/// An owned input request, for hosts that build requests away from the event (async
/// handlers, say); [`InputRequestBuf::as_request`] borrows it as an [`InputRequest`].
#[derive(Debug, Clone)]
pub struct InputRequestBuf {
    key: String,
    kind: InputKind,
    params: Box<RawValue>,
}

impl PartialEq for InputRequestBuf {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.kind == other.kind && self.params.get() == other.params.get()
    }
}

impl Eq for InputRequestBuf {}

impl InputRequestBuf {
    /// `elicitation/create` in form mode.
    pub fn elicit(key: impl Into<String>, message: &str, requested_schema: &serde_json::Value) -> Self {
        let params =
            serde_json::json!({ "mode": "form", "message": message, "requestedSchema": requested_schema });
        Self::new(key, InputKind::Elicitation, &params)
    }

    /// `sampling/createMessage` with one user text message.
    pub fn sample_text(key: impl Into<String>, text: &str, max_tokens: u32) -> Self {
        let params = serde_json::json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
            "maxTokens": max_tokens
        });
        Self::new(key, InputKind::Sampling, &params)
    }

    /// `roots/list`.
    pub fn list_roots(key: impl Into<String>) -> Self {
        Self::new(key, InputKind::Roots, &serde_json::json!({}))
    }

    /// A request of `kind` with these params (see [`InputRequest::raw`]).
    pub fn new(key: impl Into<String>, kind: InputKind, params: &serde_json::Value) -> Self {
        let params = serde_json::value::to_raw_value(params)
            .unwrap_or_else(|_| unreachable!("a Value always serializes"));
        Self { key: key.into(), kind, params }
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The kind.
    pub fn kind(&self) -> InputKind {
        self.kind
    }

    /// The params, as JSON.
    pub fn params(&self) -> &RawValue {
        &self.params
    }

    /// Borrows it as an [`InputRequest`].
    pub fn as_request(&self) -> InputRequest<'_> {
        InputRequest::raw(&self.key, self.kind, &self.params)
    }
}

/// An answer that asks the client for input before the work can complete
/// (`resultType: "input_required"`), see [`Commands::answer_input_required`](crate::Commands::answer_input_required).
#[derive(Debug, Clone, Copy)]
pub struct InputRequired<'a> {
    pub(crate) requests: &'a [InputRequest<'a>],
    pub(crate) state: Option<&'a [u8]>,
}

impl<'a> InputRequired<'a> {
    /// Asks for `requests` (at most [`MAX_INPUT_REQUESTS`]).
    pub fn new(requests: &'a [InputRequest<'a>]) -> Self {
        Self { requests, state: None }
    }

    /// No input, only state: the client retries later with it (load shedding).
    pub fn retry_later(state: &'a [u8]) -> Self {
        Self { requests: &[], state: Some(state) }
    }

    /// Host state (at most [`MAX_HOST_STATE_LEN`] bytes) the engine seals into
    /// `requestState` and hands back, verified, on the retry
    /// ([`crate::event::CallTool::request_state`]). The client can read it (it is signed, not
    /// encrypted): keep secrets out. Needs [`crate::Config::request_state_key`].
    #[must_use]
    pub fn state(mut self, state: &'a [u8]) -> Self {
        self.state = Some(state);
        self
    }
}

/// The method a state is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    CallTool = 1,
    GetPrompt = 2,
    ReadResource = 3,
}

/// A digest of what identifies a request: the principal (when the host's authorization
/// named one), its method, then the tool or prompt name and the arguments as the engine
/// re-serialized them (compact), or the uri. A retry by the same principal with the same
/// params in the same member order digests the same.
pub(crate) fn params_digest(
    method: Method,
    name: &str,
    args: &[u8],
    principal: Option<&[u8; 32]>,
) -> [u8; 32] {
    let mut h = Sha256::new();
    // The principal an HTTP host's authorization named: a state is good for it only.
    match principal {
        Some(p) => {
            h.update([1]);
            h.update(p);
        }
        None => h.update([0]),
    }
    h.update([method as u8]);
    h.update((name.len() as u64).to_le_bytes());
    h.update(name.as_bytes());
    h.update(args);
    h.finalize().into()
}

/// Why a `requestState` was refused (all answered `-32602`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateError {
    /// Not issued by this server (bad encoding, bad tag, unknown version), or no key.
    Forged,
    /// Issued for another method or other params.
    Mismatch,
    /// Past its expiry.
    Expired,
}

impl StateError {
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::Forged => "Invalid params: requestState failed verification",
            Self::Mismatch => "Invalid params: requestState was issued for a different request",
            Self::Expired => "Invalid params: requestState has expired; retry the request without it",
        }
    }
}

/// What a verified state holds: ranges into the decoded buffer.
#[derive(Debug, Default)]
pub(crate) struct Opened {
    pub(crate) asked: heapless::Vec<(InputKind, Range<usize>), MAX_INPUT_REQUESTS>,
    pub(crate) host: Range<usize>,
}

/// The keys of `requestState`: the one that seals, and earlier ones that still open
/// (`Config::previous_secret_keys`).
#[derive(Debug, Clone)]
pub(crate) struct StateKeys {
    pub(crate) sign: [u8; 32],
    pub(crate) previous: heapless::Vec<[u8; 32], { crate::wire::MAX_PREVIOUS_KEYS }>,
}

fn mac(key: &[u8; 32]) -> Hmac<Sha256> {
    // HMAC takes keys of any length.
    <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!())
}

/// Verifies `text` and decodes it into `buf`.
pub(crate) fn open(
    key: Option<&StateKeys>,
    text: &str,
    clock: Clock,
    life: Lifetime,
    method: Method,
    digest: &[u8; 32],
    buf: &mut Vec<u8>,
) -> Result<Opened, StateError> {
    let key = key.ok_or(StateError::Forged)?;
    if text.len() > MAX_STATE_TEXT_LEN {
        return Err(StateError::Forged);
    }
    buf.clear();
    // `decode_vec` writes into the Vec's spare capacity (reserved up front, so no growth).
    URL_SAFE_NO_PAD.decode_vec(text.as_bytes(), buf).map_err(|_| StateError::Forged)?;
    if buf.len() < HEADER_LEN + TAG_LEN {
        return Err(StateError::Forged);
    }
    let (payload, tag) = buf.split_at(buf.len() - TAG_LEN);
    let verifies = |k: &[u8; 32]| {
        let mut m = mac(k);
        m.update(payload);
        m.verify_slice(tag).is_ok()
    };
    if !verifies(&key.sign) && !key.previous.iter().any(verifies) {
        return Err(StateError::Forged);
    }
    if payload[0] & !WALL != VERSION {
        return Err(StateError::Forged);
    }
    if payload[1] != method as u8 || payload[10..42] != digest[..] {
        return Err(StateError::Mismatch);
    }
    let at = u64::from_le_bytes(payload[2..10].try_into().unwrap_or_default());
    if !clock.holds(Expiry { wall: payload[0] & WALL != 0, at }, life) {
        return Err(StateError::Expired);
    }
    let mut opened = Opened::default();
    let mut at = HEADER_LEN;
    for _ in 0..payload[HEADER_LEN - 1] {
        let (Some(&kind), Some(&len)) = (payload.get(at), payload.get(at + 1)) else {
            return Err(StateError::Forged);
        };
        let kind = InputKind::from_code(kind).ok_or(StateError::Forged)?;
        let range = at + 2..at + 2 + usize::from(len);
        if range.end > payload.len() || opened.asked.push((kind, range.clone())).is_err() {
            return Err(StateError::Forged);
        }
        at = range.end;
    }
    opened.host = at..payload.len();
    Ok(opened)
}

/// Why an input-required answer was refused (nothing written, the ticket stays open).
/// `in_memory`: the host state stays in the engine (a session-bound request), so it needs
/// no key.
pub(crate) fn check(
    ir: &InputRequired<'_>,
    key: Option<&StateKeys>,
    in_memory: bool,
) -> Result<(), crate::error::AnswerError> {
    use crate::error::AnswerError::InvalidInputRequest as Invalid;
    if ir.requests.is_empty() && ir.state.is_none() {
        return Err(Invalid("an input-required answer needs input requests or state"));
    }
    if ir.requests.len() > MAX_INPUT_REQUESTS {
        return Err(Invalid("more than MAX_INPUT_REQUESTS input requests"));
    }
    for (i, r) in ir.requests.iter().enumerate() {
        if r.key.is_empty() || r.key.len() > MAX_INPUT_KEY_LEN {
            return Err(Invalid("an input request key must be 1 to MAX_INPUT_KEY_LEN bytes"));
        }
        if ir.requests[..i].iter().any(|o| o.key == r.key) {
            return Err(Invalid("input request keys must be unique"));
        }
    }
    if let Some(s) = ir.state {
        if key.is_none() && !in_memory {
            return Err(Invalid("host state needs Config::request_state_key"));
        }
        if s.len() > MAX_HOST_STATE_LEN {
            return Err(Invalid("host state longer than MAX_HOST_STATE_LEN"));
        }
    }
    Ok(())
}

/// Seals the state (`requests` are those actually sent) and writes it as a JSON string.
pub(crate) fn seal(
    out: &mut Vec<u8>,
    key: &StateKeys,
    expiry: Expiry,
    method: Method,
    digest: &[u8; 32],
    requests: &[&InputRequest<'_>],
    host: &[u8],
) {
    let mut payload = heapless::Vec::<u8, MAX_SEALED_LEN>::new();
    let _ = payload.push(VERSION | if expiry.wall { WALL } else { 0 });
    let _ = payload.push(method as u8);
    let _ = payload.extend_from_slice(&expiry.at.to_le_bytes());
    let _ = payload.extend_from_slice(digest);
    let _ = payload.push(requests.len() as u8);
    for r in requests {
        let _ = payload.push(r.kind().code());
        let _ = payload.push(r.key.len() as u8);
        let _ = payload.extend_from_slice(r.key.as_bytes());
    }
    let _ = payload.extend_from_slice(host);
    let mut m = mac(&key.sign);
    m.update(&payload);
    let tag = m.finalize().into_bytes();
    let _ = payload.extend_from_slice(&tag);
    out.push(b'"');
    let start = out.len();
    out.resize(start + base64::encoded_len(payload.len(), false).unwrap_or(0), 0);
    let n = URL_SAFE_NO_PAD.encode_slice(&payload, &mut out[start..]).unwrap_or(0);
    out.truncate(start + n);
    out.push(b'"');
}

/// The client capabilities that the requests left out of an answer needed and the
/// client did not declare.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Missing(u8);

/// Writes the body of an `InputRequiredResult` after `{"resultType":"input_required"`:
/// `,"inputRequests":{..}` for the requests the client can answer (it declared every
/// capability each needs). Returns what the dropped ones needed and the client lacks.
pub(crate) fn write_requests<'r, 'a>(
    out: &mut Vec<u8>,
    ir: &'r InputRequired<'a>,
    caps: ClientCapabilities,
    sent: &mut heapless::Vec<&'r InputRequest<'a>, MAX_INPUT_REQUESTS>,
) -> Result<Missing, serde_json::Error> {
    let missing = sendable(ir, caps, sent);
    if !sent.is_empty() {
        out.extend_from_slice(b",\"inputRequests\":{");
        for (i, r) in sent.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json::write_str(out, r.key);
            out.push(b':');
            r.write(out)?;
        }
        out.push(b'}');
    }
    Ok(missing)
}

/// Puts in `sent` the requests of `ir` the client can answer (it declared every
/// capability each needs); returns what the others needed and the client lacks.
pub(crate) fn sendable<'r, 'a>(
    ir: &'r InputRequired<'a>,
    caps: ClientCapabilities,
    sent: &mut heapless::Vec<&'r InputRequest<'a>, MAX_INPUT_REQUESTS>,
) -> Missing {
    let mut missing = 0;
    for r in ir.requests {
        let needs = r.needs();
        if caps.bits & needs == needs {
            let _ = sent.push(r);
        } else {
            missing |= needs & !caps.bits;
        }
    }
    Missing(missing)
}

/// Writes `{"requiredCapabilities":{..}}` (a `ClientCapabilities` object) for `missing`:
/// each top-level capability once, with the sub-capabilities it lacks inside.
pub(crate) fn write_required(out: &mut Vec<u8>, missing: Missing) {
    let m = missing.0;
    let has = |bit: u8| m & bit != 0;
    out.extend_from_slice(b"{\"requiredCapabilities\":{");
    let mut members: heapless::Vec<&[u8], 3> = heapless::Vec::new();
    let (form, url) = (has(InputKind::Elicitation.bit()), has(InputKind::ElicitationUrl.bit()));
    if form || url {
        let _ = members.push(match (form, url) {
            (true, false) => b"\"elicitation\":{}".as_slice(),
            (false, true) => b"\"elicitation\":{\"url\":{}}",
            _ => b"\"elicitation\":{\"form\":{},\"url\":{}}",
        });
    }
    let (tools, context) = (has(SAMPLING_TOOLS), has(SAMPLING_CONTEXT));
    if has(InputKind::Sampling.bit()) || tools || context {
        let _ = members.push(match (tools, context) {
            (false, false) => b"\"sampling\":{}".as_slice(),
            (true, false) => b"\"sampling\":{\"tools\":{}}",
            (false, true) => b"\"sampling\":{\"context\":{}}",
            (true, true) => b"\"sampling\":{\"context\":{},\"tools\":{}}",
        });
    }
    if has(InputKind::Roots.bit()) {
        let _ = members.push(b"\"roots\":{}");
    }
    for (i, member) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(member);
    }
    out.extend_from_slice(b"}}");
}

/// Whether `n[v]` has the shape of a response to a request of `kind` (the members the
/// schema requires, with their types; extra members are allowed).
pub(crate) fn response_fits(n: &[Node<'_>], v: usize, kind: InputKind) -> bool {
    let s = |key| json::get(n, v, key).and_then(|i| json::str_at(n, i));
    match kind {
        InputKind::Elicitation | InputKind::ElicitationUrl => {
            matches!(s("action"), Some("accept" | "decline" | "cancel"))
                && json::get(n, v, "content").is_none_or(|c| json::is_object(n, c))
        }
        InputKind::Sampling => {
            matches!(s("role"), Some("user" | "assistant"))
                && s("model").is_some()
                && json::get(n, v, "content")
                    .is_some_and(|c| matches!(n.get(c), Some(Node::Object { .. } | Node::Array { .. })))
        }
        InputKind::Roots => {
            let Some(a) = json::get(n, v, "roots") else { return false };
            let Some(Node::Array { len, .. }) = n.get(a) else { return false };
            let mut i = a + 1;
            for _ in 0..*len {
                if !json::is_object(n, i) || json::get(n, i, "uri").and_then(|u| json::str_at(n, u)).is_none()
                {
                    return false;
                }
                i += 1 + json::children(n, i);
            }
            true
        }
    }
}

/// The client's responses to input requests (`params.inputResponses`) that the host can
/// use: with a verified `requestState`, only the keys the engine asked for (each checked
/// against the shape its request kind requires); without one, every member that is an
/// object. Unknown keys are dropped.
#[derive(Clone, Copy)]
pub struct InputResponses<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) entries: &'a [Entry],
}

/// One response kept for the host: where its key and value sit in a buffer, and whether
/// the value is a JSON-RPC error object instead of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) key: Range<usize>,
    pub(crate) value: Range<usize>,
    pub(crate) error: bool,
}

impl<'a> InputResponses<'a> {
    /// The response under `key` (`None` when there is none, or the client's answer to it
    /// was an error: see [`Self::error`]).
    pub fn get(&self, key: &str) -> Option<InputResponse<'a>> {
        self.iter().find(|(k, _)| *k == key).map(|(_, r)| r)
    }

    /// `(key, response)` pairs, in the client's order (errors left out).
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, InputResponse<'a>)> + 'a {
        self.all().filter(|(_, _, error)| !error).map(|(k, raw, _)| (k, InputResponse { raw }))
    }

    /// Why the input request under `key` got no response, when it got none
    /// (session-bound revisions only, where the engine sends the requests itself): the
    /// client answered with a JSON-RPC error, its response did not fit the request, it
    /// did not answer within [`Config::input_timeout`](crate::Config::input_timeout), or
    /// the stream or session ended first.
    pub fn error(&self, key: &str) -> Option<InputError<'a>> {
        self.errors().find(|(k, _)| *k == key).map(|(_, e)| e)
    }

    /// `(key, error)` pairs of the requests that got no response (see [`Self::error`]).
    pub fn errors(&self) -> impl Iterator<Item = (&'a str, InputError<'a>)> + 'a {
        self.all().filter(|(_, _, error)| *error).map(|(k, raw, _)| (k, InputError { raw }))
    }

    fn all(&self) -> impl Iterator<Item = (&'a str, &'a str, bool)> + 'a {
        let buf = self.buf;
        self.entries.iter().filter_map(move |e| {
            let key = core::str::from_utf8(buf.get(e.key.clone())?).ok()?;
            let raw = core::str::from_utf8(buf.get(e.value.clone())?).ok()?;
            Some((key, raw, e.error))
        })
    }

    /// Number of responses (errors included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none (a first round, or nothing usable was sent).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Why an input request got no response: a JSON-RPC error object (`code`, `message`,
/// optional `data`), the client's own or one the engine made (`-32001` timed out,
/// `-32000` the client went away, `-32602` its response did not fit the request).
#[derive(Clone, Copy)]
pub struct InputError<'a> {
    raw: &'a str,
}

impl<'a> InputError<'a> {
    pub(crate) fn new(raw: &'a str) -> Self {
        Self { raw }
    }

    /// The error object as compact JSON text.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// The error's `code` (`0` if the client sent none that fits an `i64`).
    pub fn code(&self) -> i64 {
        self.parts().0
    }

    /// The error's `message` (empty if the client sent none).
    pub fn message(&self) -> std::borrow::Cow<'a, str> {
        self.parts().1
    }

    fn parts(&self) -> (i64, std::borrow::Cow<'a, str>) {
        #[derive(serde::Deserialize)]
        struct Parts<'b> {
            code: Option<i64>,
            #[serde(borrow)]
            message: Option<std::borrow::Cow<'b, str>>,
        }
        match serde_json::from_str::<Parts<'a>>(self.raw) {
            Ok(p) => (p.code.unwrap_or(0), p.message.unwrap_or_default()),
            Err(_) => (0, std::borrow::Cow::Borrowed("")),
        }
    }
}

impl fmt::Debug for InputError<'_> {
    /// The code only: a client's message may echo what the user typed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputError").field("code", &self.code()).finish_non_exhaustive()
    }
}

impl fmt::Debug for InputResponses<'_> {
    /// The keys and the size of each response: a response carries what the user typed
    /// or the model wrote, so its text is left out (use [`InputResponse::raw`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).entries(self.errors()).finish()
    }
}

/// One response, as compact JSON text (an `ElicitResult`, `CreateMessageResult` or
/// `ListRootsResult` object).
#[derive(Clone, Copy)]
pub struct InputResponse<'a> {
    raw: &'a str,
}

impl<'a> InputResponse<'a> {
    pub(crate) fn new(raw: &'a str) -> Self {
        Self { raw }
    }

    /// The response as JSON text.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// Deserializes the response into `T`, borrowing strings where `T` allows.
    pub fn deserialize<T: serde::Deserialize<'a>>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.raw)
    }

    /// For an accepted elicitation, the submitted `content` as JSON text.
    pub fn accepted_content(&self) -> Option<&'a str> {
        #[derive(serde::Deserialize)]
        struct Elicit<'b> {
            action: &'b str,
            #[serde(borrow)]
            content: Option<&'b RawValue>,
        }
        let e: Elicit<'a> = serde_json::from_str(self.raw).ok()?;
        if e.action == "accept" { e.content.map(RawValue::get) } else { None }
    }
}

impl fmt::Debug for InputResponse<'_> {
    /// Its size only (see [`InputResponses`]'s `Debug`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} bytes>", self.raw.len())
    }
}

impl Serialize for InputResponse<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match serde_json::from_str::<&RawValue>(self.raw) {
            Ok(r) => r.serialize(s),
            Err(_) => s.serialize_unit(),
        }
    }
}
