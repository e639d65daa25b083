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
///
/// ```
/// use mcp_engine::Base64;
/// use mcp_io_tokio::OwnedBase64;
///
/// let raw = OwnedBase64::Bytes(b"hi".to_vec());
/// let encoded = OwnedBase64::Encoded("aGk=".into());
/// assert_eq!(raw.as_base64(), Base64::Bytes(b"hi"));
/// // Both are written as the same base64 text.
/// let json = |data: &OwnedBase64| serde_json::to_string(&data.as_base64());
/// assert_eq!(json(&raw)?, r#""aGk=""#);
/// assert_eq!(json(&encoded)?, json(&raw)?);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedBase64 {
    /// Already base64-encoded text (standard alphabet, padded); written as is.
    Encoded(String),
    /// Raw bytes, encoded while written.
    Bytes(Vec<u8>),
}

impl OwnedBase64 {
    /// The borrowed form the engine serializes.
    ///
    /// ```
    /// use mcp_engine::Base64;
    /// use mcp_io_tokio::OwnedBase64;
    ///
    /// let data = OwnedBase64::Encoded("aGk=".into());
    /// assert_eq!(data.as_base64(), Base64::Encoded("aGk="));
    /// ```
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
///
/// ```
/// use mcp_engine::ResourceContents;
/// use mcp_io_tokio::OwnedResourceContents;
///
/// let md = Some("text/markdown");
/// let readme = OwnedResourceContents::text("notes://readme", md, "# Notes");
/// assert_eq!(readme.as_contents(), ResourceContents::text("notes://readme", md, "# Notes"));
///
/// // Raw bytes are encoded while written: a blob given either way goes out alike.
/// let logo = OwnedResourceContents::blob("notes://logo", Some("image/png"), vec![0x89, b'P', b'N', b'G']);
/// let same_logo = OwnedResourceContents::blob_base64("notes://logo", Some("image/png"), "iVBORw==");
/// let json = |c: &OwnedResourceContents| serde_json::to_string(&c.as_contents());
/// assert_eq!(json(&logo)?, json(&same_logo)?);
/// # Ok::<(), serde_json::Error>(())
/// ```
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
    ///
    /// ```
    /// use mcp_engine::ResourceContents;
    /// use mcp_io_tokio::OwnedResourceContents;
    ///
    /// let readme = OwnedResourceContents::text("notes://readme", None, "# Notes");
    /// assert_eq!(readme.as_contents(), ResourceContents::text("notes://readme", None, "# Notes"));
    /// ```
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        Self::Text { uri: uri.into(), mime_type: mime_type.map(str::to_owned), text: text.into() }
    }
    /// Binary contents of `uri`, given as raw bytes.
    ///
    /// ```
    /// use mcp_io_tokio::OwnedResourceContents;
    ///
    /// let logo = OwnedResourceContents::blob("notes://logo", Some("image/png"), b"hi");
    /// let json = serde_json::to_string(&logo.as_contents())?;
    /// assert_eq!(json, r#"{"uri":"notes://logo","mimeType":"image/png","blob":"aGk="}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn blob(uri: impl Into<String>, mime_type: Option<&str>, bytes: impl Into<Vec<u8>>) -> Self {
        Self::Blob {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            blob: OwnedBase64::Bytes(bytes.into()),
        }
    }
    /// Binary contents of `uri`, given already base64-encoded.
    ///
    /// ```
    /// use mcp_engine::ResourceContents;
    /// use mcp_io_tokio::OwnedResourceContents;
    ///
    /// let logo = OwnedResourceContents::blob_base64("notes://logo", None, "aGk=");
    /// assert_eq!(logo.as_contents(), ResourceContents::blob_base64("notes://logo", None, "aGk="));
    /// ```
    pub fn blob_base64(uri: impl Into<String>, mime_type: Option<&str>, base64: impl Into<String>) -> Self {
        Self::Blob {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            blob: OwnedBase64::Encoded(base64.into()),
        }
    }
    /// The borrowed form the engine serializes.
    ///
    /// ```
    /// use mcp_io_tokio::OwnedResourceContents;
    ///
    /// let note = OwnedResourceContents::text("notes://7", Some("text/plain"), "Buy tea.");
    /// let json = serde_json::to_string(&note.as_contents())?;
    /// assert_eq!(json, r#"{"uri":"notes://7","mimeType":"text/plain","text":"Buy tea."}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
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
///
/// ```
/// use mcp_io_tokio::{OwnedContent, OwnedResourceContents};
/// use serde_json::json;
///
/// let blocks = [
///     OwnedContent::text("Found note 7."),
///     OwnedContent::image(vec![1, 2, 3], "image/png"),
///     OwnedContent::resource_link("notes://7", "note-7"),
///     OwnedContent::embedded(OwnedResourceContents::text("notes://7", None, "Buy tea.")),
/// ];
/// let wire: Vec<_> = blocks.iter().map(OwnedContent::as_content).collect();
/// let wire = serde_json::to_value(wire)?;
/// assert_eq!(wire[1], json!({ "type": "image", "data": "AQID", "mimeType": "image/png" }));
/// assert_eq!(wire[2], json!({ "type": "resource_link", "uri": "notes://7", "name": "note-7" }));
/// # Ok::<(), serde_json::Error>(())
/// ```
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
    ///
    /// ```
    /// use std::borrow::Cow;
    ///
    /// use mcp_io_tokio::OwnedContent;
    ///
    /// let fixed = OwnedContent::text("Saved."); // a `&'static str`: not copied
    /// assert!(matches!(fixed, OwnedContent::Text { text: Cow::Borrowed("Saved.") }));
    /// let made = OwnedContent::text(format!("{} notes", 3)); // a `String`: moved in
    /// assert!(matches!(made, OwnedContent::Text { text: Cow::Owned(ref t) } if t == "3 notes"));
    /// ```
    pub fn text(text: impl Into<Cow<'static, str>>) -> Self {
        Self::Text { text: text.into() }
    }
    /// An image from raw bytes.
    ///
    /// ```
    /// use mcp_engine::Content;
    /// use mcp_io_tokio::OwnedContent;
    ///
    /// let image = OwnedContent::image(vec![1, 2, 3], "image/png");
    /// assert_eq!(image.as_content(), Content::image(&[1, 2, 3], "image/png"));
    /// ```
    pub fn image(bytes: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::Image { data: OwnedBase64::Bytes(bytes.into()), mime_type: mime_type.into() }
    }
    /// An image given already base64-encoded.
    ///
    /// ```
    /// use mcp_engine::Content;
    /// use mcp_io_tokio::OwnedContent;
    ///
    /// let image = OwnedContent::image_base64("AQID", "image/png");
    /// assert_eq!(image.as_content(), Content::image_base64("AQID", "image/png"));
    /// ```
    pub fn image_base64(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image { data: OwnedBase64::Encoded(base64.into()), mime_type: mime_type.into() }
    }
    /// Audio from raw bytes.
    ///
    /// ```
    /// use mcp_engine::Content;
    /// use mcp_io_tokio::OwnedContent;
    ///
    /// let audio = OwnedContent::audio(vec![0, 0], "audio/wav");
    /// assert_eq!(audio.as_content(), Content::audio(&[0, 0], "audio/wav"));
    /// ```
    pub fn audio(bytes: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::Audio { data: OwnedBase64::Bytes(bytes.into()), mime_type: mime_type.into() }
    }
    /// Audio given already base64-encoded.
    ///
    /// ```
    /// use mcp_engine::Content;
    /// use mcp_io_tokio::OwnedContent;
    ///
    /// let audio = OwnedContent::audio_base64("AAA=", "audio/wav");
    /// assert_eq!(audio.as_content(), Content::audio_base64("AAA=", "audio/wav"));
    /// ```
    pub fn audio_base64(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio { data: OwnedBase64::Encoded(base64.into()), mime_type: mime_type.into() }
    }
    /// A link to the resource `uri`.
    ///
    /// The description and MIME type are left out; set them through the variant's fields:
    ///
    /// ```
    /// use mcp_io_tokio::OwnedContent;
    ///
    /// let mut link = OwnedContent::resource_link("notes://7", "note-7");
    /// if let OwnedContent::ResourceLink { description, .. } = &mut link {
    ///     *description = Some("Note 7".into());
    /// }
    /// let json = serde_json::to_string(&link.as_content())?;
    /// let expected = r#"{"type":"resource_link","uri":"notes://7","name":"note-7","description":"Note 7"}"#;
    /// assert_eq!(json, expected);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink { uri: uri.into(), name: name.into(), description: None, mime_type: None }
    }
    /// An embedded resource.
    ///
    /// ```
    /// use mcp_engine::{Content, ResourceContents};
    /// use mcp_io_tokio::{OwnedContent, OwnedResourceContents};
    ///
    /// let note = OwnedContent::embedded(OwnedResourceContents::text("notes://7", None, "Buy tea."));
    /// let contents = ResourceContents::text("notes://7", None, "Buy tea.");
    /// assert_eq!(note.as_content(), Content::embedded(contents));
    /// ```
    pub fn embedded(resource: OwnedResourceContents) -> Self {
        Self::Resource(resource)
    }
    /// The borrowed form the engine serializes.
    ///
    /// ```
    /// use mcp_io_tokio::OwnedContent;
    ///
    /// let json = serde_json::to_string(&OwnedContent::text("hi").as_content())?;
    /// assert_eq!(json, r#"{"type":"text","text":"hi"}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
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
///
/// ```
/// use mcp_io_tokio::{ContentBlocks, OwnedContent};
///
/// let one = ContentBlocks::from(OwnedContent::text("a")); // no `Vec`
/// let mut many: ContentBlocks = ["a", "b"].into_iter().map(OwnedContent::text).collect();
/// many.push(OwnedContent::text("c"));
/// assert_eq!(one.len(), 1);
/// assert_eq!(many[2], OwnedContent::text("c"));
/// assert!(many.iter().all(|block| matches!(block, OwnedContent::Text { .. })));
/// ```
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
    ///
    /// ```
    /// use mcp_io_tokio::ContentBlocks;
    ///
    /// let blocks = ContentBlocks::new();
    /// assert!(blocks.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `block` at the end.
    ///
    /// ```
    /// use mcp_io_tokio::{ContentBlocks, OwnedContent};
    ///
    /// let mut blocks = ContentBlocks::new();
    /// blocks.push(OwnedContent::text("a"));
    /// blocks.push(OwnedContent::text("b"));
    /// assert_eq!(blocks, vec![OwnedContent::text("a"), OwnedContent::text("b")]);
    /// ```
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
    ///
    /// ```
    /// use mcp_io_tokio::{ContentBlocks, OwnedContent};
    ///
    /// let blocks = ContentBlocks::from(OwnedContent::text("a"));
    /// assert_eq!(blocks.into_vec(), vec![OwnedContent::text("a")]);
    /// ```
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
///
/// ```
/// use mcp_io_tokio::{HostFailure, OwnedContent, ToolReply, ToolResult};
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
    /// use mcp_io_tokio::{OwnedContent, ToolReply};
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
    /// use mcp_io_tokio::{OwnedContent, ToolReply};
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
    /// use mcp_io_tokio::{OwnedContent, ToolReply};
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
    /// use mcp_io_tokio::{OwnedContent, ToolReply};
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
    /// use mcp_io_tokio::{OwnedContent, ToolReply};
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
    /// [`InputContext::response`](crate::InputContext::response).
    ///
    /// ```
    /// use mcp_engine::InputRequestBuf;
    /// use mcp_io_tokio::{InputRequiredReply, ToolReply};
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
    /// use mcp_io_tokio::{OwnedContent, ToolReply};
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
/// use mcp_io_tokio::{OwnedResourceContents, ResourceReply};
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
    /// use mcp_io_tokio::{OwnedResourceContents, ResourceReply};
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
    /// use mcp_io_tokio::{OwnedResourceContents, ResourceReply};
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
    /// use mcp_io_tokio::{OwnedBase64, OwnedResourceContents, ResourceReply};
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
    /// use mcp_io_tokio::{OwnedResourceContents, ResourceReply};
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
/// use mcp_io_tokio::{OwnedContent, OwnedPromptMessage};
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
    /// use mcp_io_tokio::OwnedPromptMessage;
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
    /// use mcp_io_tokio::OwnedPromptMessage;
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
    /// use mcp_io_tokio::OwnedPromptMessage;
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
/// use mcp_io_tokio::{OwnedPromptMessage, PromptReply};
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
    /// use mcp_io_tokio::{OwnedPromptMessage, PromptReply};
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
    /// use mcp_io_tokio::{OwnedContent, PromptReply};
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
    /// use mcp_engine::InputRequestBuf;
    /// use mcp_io_tokio::{InputRequiredReply, PromptReply};
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
///
/// ```
/// use mcp_engine::InputRequestBuf;
/// use mcp_io_tokio::{InputRequiredReply, ToolReply};
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
    /// use mcp_engine::InputRequestBuf;
    /// use mcp_io_tokio::InputRequiredReply;
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
    /// use mcp_engine::InputRequestBuf;
    /// use mcp_io_tokio::InputRequiredReply;
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
/// [`mcp_engine::HostError`], answered as a JSON-RPC error.
///
/// The message is sent to the client; keep secrets out of it.
///
/// ```
/// use mcp_engine::HostError;
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
    /// use mcp_engine::HostError;
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
    /// [`HostFailure::Internal`] with `message`.
    ///
    /// ```
    /// use mcp_io_tokio::HostFailure;
    ///
    /// let failure = HostFailure::internal("the database is down");
    /// assert_eq!(failure.to_string(), "internal error: the database is down");
    /// ```
    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal(message.into())
    }
    /// The borrowed form the engine answers with.
    ///
    /// ```
    /// use mcp_engine::HostError;
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
///
/// ```
/// use mcp_io_tokio::CompletionReply;
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
    /// use mcp_io_tokio::CompletionReply;
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
/// use mcp_io_tokio::{HostFailure, ToolCall, ToolReply, ToolResult};
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
/// use mcp_io_tokio::{HostFailure, ResourceRead, ResourceReply, ResourceResult};
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
/// use mcp_io_tokio::{HostFailure, PromptGet, PromptReply, PromptResult};
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
/// use mcp_io_tokio::{CompleteResult, CompletionReply};
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
