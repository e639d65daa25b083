//! Owned answers a [`Handler`](crate::Handler) returns, the results it resolves to
//! ([`ToolResult`] and the like: a reply or a [`HostFailure`]), and their conversion to
//! the engine's borrowed answer types.

use core::fmt;
use std::borrow::Cow;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use mcp_engine::{Base64, Content, HostError, InputRequestBuf, PromptMessage, ResourceContents, Role};

/// Binary data, owned: raw bytes or text already base64-encoded.
///
/// The owned counterpart of [`mcp_engine::Base64`]. Raw bytes are encoded by the engine
/// while it writes the answer, so there is no need to encode them yourself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedBase64 {
    /// Already base64-encoded text (standard alphabet, padded); written as is.
    Encoded(String),
    /// Raw bytes, encoded while written.
    Bytes(Vec<u8>),
}

impl OwnedBase64 {
    /// The borrowed form the engine serializes.
    pub fn as_base64(&self) -> Base64<'_> {
        match self {
            Self::Encoded(text) => Base64::Encoded(text),
            Self::Bytes(bytes) => Base64::Bytes(bytes),
        }
    }
}

/// The contents of a resource, owned (MCP `TextResourceContents` /
/// `BlobResourceContents`).
///
/// The owned counterpart of [`mcp_engine::ResourceContents`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedResourceContents {
    /// Text contents.
    Text {
        /// The uri of the resource.
        uri: String,
        /// MIME type.
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Binary contents.
    Blob {
        /// The uri of the resource.
        uri: String,
        /// MIME type.
        mime_type: Option<String>,
        /// The bytes.
        blob: OwnedBase64,
    },
}

impl OwnedResourceContents {
    /// Text contents of `uri`.
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        Self::Text { uri: uri.into(), mime_type: mime_type.map(str::to_owned), text: text.into() }
    }
    /// Binary contents of `uri`, given as raw bytes.
    pub fn blob(uri: impl Into<String>, mime_type: Option<&str>, bytes: impl Into<Vec<u8>>) -> Self {
        Self::Blob {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            blob: OwnedBase64::Bytes(bytes.into()),
        }
    }
    /// Binary contents of `uri`, given already base64-encoded.
    pub fn blob_base64(uri: impl Into<String>, mime_type: Option<&str>, base64: impl Into<String>) -> Self {
        Self::Blob {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            blob: OwnedBase64::Encoded(base64.into()),
        }
    }
    /// The borrowed form the engine serializes.
    pub fn as_contents(&self) -> ResourceContents<'_> {
        match self {
            Self::Text { uri, mime_type, text } => ResourceContents::text(uri, mime_type.as_deref(), text),
            Self::Blob { uri, mime_type, blob } => {
                ResourceContents::Blob { uri, mime_type: mime_type.as_deref(), blob: blob.as_base64() }
            }
        }
    }
}

/// One content block of a tool result or prompt message, owned (MCP `ContentBlock`).
///
/// The owned counterpart of [`mcp_engine::Content`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedContent {
    /// Text.
    Text {
        /// The text: borrowed when `'static` (no copy), owned otherwise.
        text: Cow<'static, str>,
    },
    /// An image.
    Image {
        /// The image bytes.
        data: OwnedBase64,
        /// MIME type, e.g. `image/png`.
        mime_type: String,
    },
    /// Audio.
    Audio {
        /// The audio bytes.
        data: OwnedBase64,
        /// MIME type, e.g. `audio/wav`.
        mime_type: String,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The uri.
        uri: String,
        /// Programmatic name.
        name: String,
        /// Description.
        description: Option<String>,
        /// MIME type.
        mime_type: Option<String>,
    },
    /// A resource embedded in the result.
    Resource(OwnedResourceContents),
}

impl OwnedContent {
    /// A text block: a `&'static str` is kept as it is, a `String` moved in.
    pub fn text(text: impl Into<Cow<'static, str>>) -> Self {
        Self::Text { text: text.into() }
    }
    /// An image from raw bytes.
    pub fn image(bytes: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::Image { data: OwnedBase64::Bytes(bytes.into()), mime_type: mime_type.into() }
    }
    /// An image given already base64-encoded.
    pub fn image_base64(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image { data: OwnedBase64::Encoded(base64.into()), mime_type: mime_type.into() }
    }
    /// Audio from raw bytes.
    pub fn audio(bytes: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::Audio { data: OwnedBase64::Bytes(bytes.into()), mime_type: mime_type.into() }
    }
    /// Audio given already base64-encoded.
    pub fn audio_base64(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio { data: OwnedBase64::Encoded(base64.into()), mime_type: mime_type.into() }
    }
    /// A link to the resource `uri`.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink { uri: uri.into(), name: name.into(), description: None, mime_type: None }
    }
    /// An embedded resource.
    pub fn embedded(resource: OwnedResourceContents) -> Self {
        Self::Resource(resource)
    }
    /// The borrowed form the engine serializes.
    pub fn as_content(&self) -> Content<'_> {
        match self {
            Self::Text { text } => Content::text(text),
            Self::Image { data, mime_type } => Content::Image { data: data.as_base64(), mime_type },
            Self::Audio { data, mime_type } => Content::Audio { data: data.as_base64(), mime_type },
            Self::ResourceLink { uri, name, description, mime_type } => Content::ResourceLink {
                uri,
                name,
                description: description.as_deref(),
                mime_type: mime_type.as_deref(),
            },
            Self::Resource(contents) => Content::embedded(contents.as_contents()),
        }
    }
}

impl From<String> for OwnedContent {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

/// Copies the text (use [`OwnedContent::text`] to keep a `&'static str` as it is).
impl From<&str> for OwnedContent {
    fn from(text: &str) -> Self {
        Self::text(text.to_owned())
    }
}

impl From<Cow<'static, str>> for OwnedContent {
    fn from(text: Cow<'static, str>) -> Self {
        Self::text(text)
    }
}

/// The content blocks of a [`ToolReply`]: a list of [`OwnedContent`] that holds one block
/// without a heap allocation, and more in a `Vec`.
///
/// Reads as a slice ([`Deref`]); made from a `Vec<OwnedContent>`, one `OwnedContent`, or
/// an iterator; [`push`](Self::push) adds a block.
#[derive(Clone, Default)]
pub struct ContentBlocks(Blocks);

#[derive(Clone)]
enum Blocks {
    One(OwnedContent),
    Many(Vec<OwnedContent>),
}

impl Default for Blocks {
    fn default() -> Self {
        Self::Many(Vec::new())
    }
}

impl ContentBlocks {
    /// No blocks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `block` at the end.
    pub fn push(&mut self, block: OwnedContent) {
        match &mut self.0 {
            Blocks::Many(v) if v.is_empty() => self.0 = Blocks::One(block),
            Blocks::Many(v) => v.push(block),
            Blocks::One(_) => {
                let Blocks::One(first) = std::mem::take(&mut self.0) else { unreachable!() };
                self.0 = Blocks::Many(vec![first, block]);
            }
        }
    }

    /// The blocks as a `Vec`.
    pub fn into_vec(self) -> Vec<OwnedContent> {
        match self.0 {
            Blocks::One(block) => vec![block],
            Blocks::Many(v) => v,
        }
    }
}

impl Deref for ContentBlocks {
    type Target = [OwnedContent];
    fn deref(&self) -> &[OwnedContent] {
        match &self.0 {
            Blocks::One(block) => std::slice::from_ref(block),
            Blocks::Many(v) => v,
        }
    }
}

impl DerefMut for ContentBlocks {
    fn deref_mut(&mut self) -> &mut [OwnedContent] {
        match &mut self.0 {
            Blocks::One(block) => std::slice::from_mut(block),
            Blocks::Many(v) => v,
        }
    }
}

impl fmt::Debug for ContentBlocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl PartialEq for ContentBlocks {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for ContentBlocks {}

impl PartialEq<[OwnedContent]> for ContentBlocks {
    fn eq(&self, other: &[OwnedContent]) -> bool {
        **self == *other
    }
}

impl PartialEq<Vec<OwnedContent>> for ContentBlocks {
    fn eq(&self, other: &Vec<OwnedContent>) -> bool {
        **self == **other
    }
}

impl From<Vec<OwnedContent>> for ContentBlocks {
    fn from(blocks: Vec<OwnedContent>) -> Self {
        Self(Blocks::Many(blocks))
    }
}

impl From<OwnedContent> for ContentBlocks {
    fn from(block: OwnedContent) -> Self {
        Self(Blocks::One(block))
    }
}

impl<const N: usize> From<[OwnedContent; N]> for ContentBlocks {
    fn from(blocks: [OwnedContent; N]) -> Self {
        blocks.into_iter().collect()
    }
}

impl FromIterator<OwnedContent> for ContentBlocks {
    fn from_iter<I: IntoIterator<Item = OwnedContent>>(iter: I) -> Self {
        let mut iter = iter.into_iter();
        let Some(first) = iter.next() else { return Self::new() };
        match iter.next() {
            None => Self(Blocks::One(first)),
            Some(second) => {
                let mut v = Vec::with_capacity(2 + iter.size_hint().0);
                v.extend([first, second]);
                v.extend(iter);
                Self(Blocks::Many(v))
            }
        }
    }
}

impl Extend<OwnedContent> for ContentBlocks {
    fn extend<I: IntoIterator<Item = OwnedContent>>(&mut self, iter: I) {
        for block in iter {
            self.push(block);
        }
    }
}

impl<'a> IntoIterator for &'a ContentBlocks {
    type Item = &'a OwnedContent;
    type IntoIter = std::slice::Iter<'a, OwnedContent>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl IntoIterator for ContentBlocks {
    type Item = OwnedContent;
    type IntoIter = std::vec::IntoIter<OwnedContent>;
    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

/// The outcome of a tool call (MCP `CallToolResult`), owned.
///
/// A business failure the model should see is a reply with `is_error` set
/// ([`ToolReply::error`]); a failure of the server itself is an
/// `Err(`[`HostFailure`]`)` instead.
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
    pub fn new(content: impl Into<ContentBlocks>) -> Self {
        Self { content: content.into(), structured_content: None, is_error: false, input_required: None }
    }
    /// A successful result made of one text block (see [`OwnedContent::text`]: a
    /// `&'static str` is not copied).
    pub fn text(text: impl Into<Cow<'static, str>>) -> Self {
        Self::new(OwnedContent::text(text))
    }
    /// A failed result (`isError: true`) made of one text block the model can read.
    pub fn error(text: impl Into<Cow<'static, str>>) -> Self {
        Self { is_error: true, ..Self::text(text) }
    }
    /// A failed result (`isError: true`) made of `content`.
    pub fn error_content(content: impl Into<ContentBlocks>) -> Self {
        Self { is_error: true, ..Self::new(content) }
    }
    /// A successful result carrying `value` as `structuredContent` and, for clients that
    /// do not read structured output, its JSON text as one text block.
    pub fn structured(value: serde_json::Value) -> Self {
        Self::text(value.to_string()).with_structured_content(value)
    }
    /// Asks the client for input first (see [`InputRequiredReply`]): the handler is called
    /// again with the client's responses, which it finds in
    /// [`InputContext::response`](crate::InputContext::response).
    pub fn input_required(input: InputRequiredReply) -> Self {
        Self { input_required: Some(input), ..Self::default() }
    }
    /// Sets `structuredContent`.
    pub fn with_structured_content(mut self, value: serde_json::Value) -> Self {
        self.structured_content = Some(value);
        self
    }
}

/// The outcome of a resource read, owned.
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
    pub fn contents(contents: Vec<OwnedResourceContents>) -> Self {
        Self::Contents(contents)
    }
    /// One text contents of `uri`.
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        Self::Contents(vec![OwnedResourceContents::text(uri, mime_type, text)])
    }
    /// One binary contents of `uri`, given as raw bytes.
    pub fn blob(uri: impl Into<String>, mime_type: Option<&str>, bytes: impl Into<Vec<u8>>) -> Self {
        Self::Contents(vec![OwnedResourceContents::blob(uri, mime_type, bytes)])
    }
    /// One binary contents of `uri`, given already base64-encoded.
    pub fn blob_base64(uri: impl Into<String>, mime_type: Option<&str>, base64: impl Into<String>) -> Self {
        Self::Contents(vec![OwnedResourceContents::blob_base64(uri, mime_type, base64)])
    }
    /// "Resource not found".
    pub fn not_found() -> Self {
        Self::NotFound
    }
}

/// One message of a rendered prompt, owned (MCP `PromptMessage`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedPromptMessage {
    /// The speaker.
    pub role: Role,
    /// The content.
    pub content: OwnedContent,
}

impl OwnedPromptMessage {
    /// A user message.
    pub fn user(content: impl Into<OwnedContent>) -> Self {
        Self { role: Role::User, content: content.into() }
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<OwnedContent>) -> Self {
        Self { role: Role::Assistant, content: content.into() }
    }
    /// The borrowed form the engine serializes.
    pub fn as_message(&self) -> PromptMessage<'_> {
        PromptMessage { role: self.role, content: self.content.as_content() }
    }
}

/// A rendered prompt (MCP `GetPromptResult`), owned.
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
    pub fn new(messages: Vec<OwnedPromptMessage>) -> Self {
        Self { description: None, messages, input_required: None }
    }
    /// A prompt made of one user text message.
    pub fn user_text(text: impl Into<Cow<'static, str>>) -> Self {
        Self::new(vec![OwnedPromptMessage::user(OwnedContent::text(text))])
    }
    /// Asks the client for input first (see [`ToolReply::input_required`]).
    pub fn input_required(input: InputRequiredReply) -> Self {
        Self { input_required: Some(input), ..Self::default() }
    }
    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// Input a handler needs from the client before it can answer, under every revision: the
/// requests, and state handed back with the responses
/// ([`InputContext::request_state`](crate::InputContext::request_state)). Under
/// `2026-07-28` the engine seals the state into `requestState` and the client retries
/// the request; in a session-bound revision the engine sends the requests to the client
/// itself and hands the request back once they are answered.
/// The engine leaves out requests the client did not declare it can answer, and answers
/// `-32021` when that leaves none (check [`InputContext::client`](crate::InputContext::client) first).
///
/// The requests are shared (`Arc<[InputRequestBuf]>`): a handler that asks the same thing
/// every time builds them once and hands out a clone of the `Arc`, which allocates
/// nothing.
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
    pub fn new(requests: impl Into<Arc<[InputRequestBuf]>>) -> Self {
        Self { requests: requests.into(), state: None }
    }
    /// Adds host state.
    pub fn with_state(mut self, state: impl Into<Vec<u8>>) -> Self {
        self.state = Some(state.into());
        self
    }
}

/// A failure a handler reports instead of a reply: the owned counterpart of
/// [`mcp_engine::HostError`], answered as a JSON-RPC error.
///
/// The message is sent to the client; keep secrets out of it.
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
    pub fn not_found() -> Self {
        Self::NotFound
    }
    /// [`HostFailure::InvalidParams`] with `message`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::InvalidParams(message.into())
    }
    /// [`HostFailure::Internal`] with `message`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal(message.into())
    }
    /// The borrowed form the engine answers with.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_content_converts_to_the_engine_wire_form() {
        let s = |c: &OwnedContent| serde_json::to_string(&c.as_content()).unwrap();
        assert_eq!(s(&OwnedContent::text("hi")), r#"{"type":"text","text":"hi"}"#);
        assert_eq!(
            s(&OwnedContent::image(vec![1, 2, 3], "image/png")),
            r#"{"type":"image","data":"AQID","mimeType":"image/png"}"#
        );
        assert_eq!(
            s(&OwnedContent::audio_base64("AAA=", "audio/wav")),
            r#"{"type":"audio","data":"AAA=","mimeType":"audio/wav"}"#
        );
        assert_eq!(
            s(&OwnedContent::resource_link("x://a", "a")),
            r#"{"type":"resource_link","uri":"x://a","name":"a"}"#
        );
        assert_eq!(
            s(&OwnedContent::embedded(OwnedResourceContents::text("x://a", Some("text/plain"), "t"))),
            r#"{"type":"resource","resource":{"uri":"x://a","mimeType":"text/plain","text":"t"}}"#
        );
        assert_eq!(
            s(&OwnedContent::embedded(OwnedResourceContents::blob("x://b", None, b"hi".to_vec()))),
            r#"{"type":"resource","resource":{"uri":"x://b","blob":"aGk="}}"#
        );
        let m = OwnedPromptMessage::assistant("yo");
        assert_eq!(
            serde_json::to_string(&m.as_message()).unwrap(),
            r#"{"role":"assistant","content":{"type":"text","text":"yo"}}"#
        );
    }

    #[test]
    fn content_blocks_hold_one_block_inline() {
        let mut blocks = ContentBlocks::new();
        assert!(blocks.is_empty());
        blocks.push(OwnedContent::text("a"));
        assert!(matches!(blocks.0, Blocks::One(_)));
        blocks.push(OwnedContent::text("b"));
        blocks.extend([OwnedContent::text("c")]);
        assert_eq!(blocks, vec![OwnedContent::text("a"), OwnedContent::text("b"), OwnedContent::text("c")]);
        assert_eq!(blocks.iter().count(), 3);
        let one: ContentBlocks = [OwnedContent::text("x")].into();
        assert!(matches!(one.0, Blocks::One(_)));
        assert_eq!(one, ContentBlocks::from(vec![OwnedContent::text("x")]));
        assert_eq!(one.into_vec(), vec![OwnedContent::text("x")]);
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

/// Candidate values for a completion, most relevant first. The engine sends at most 100,
/// drops duplicates and keeps `total` and `has_more` truthful.
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
    pub fn new(values: Vec<String>) -> Self {
        Self { values, total: None, has_more: false }
    }
}

/// What a tool call resolves to: a reply, or a failure answered as a JSON-RPC error.
pub type ToolResult = Result<ToolReply, HostFailure>;
/// What a resource read resolves to.
pub type ResourceResult = Result<ResourceReply, HostFailure>;
/// What a prompt request resolves to.
pub type PromptResult = Result<PromptReply, HostFailure>;
/// What a completion request resolves to.
pub type CompleteResult = Result<CompletionReply, HostFailure>;
