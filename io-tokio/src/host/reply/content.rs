//! The owned content a reply carries: [`OwnedContent`] blocks (text, images, audio,
//! resource links, embedded resources) in [`ContentBlocks`], [`OwnedResourceContents`]
//! and [`OwnedBase64`], each with its conversion to the engine's borrowed type.

use core::fmt;
use std::borrow::Cow;
use std::ops::{Deref, DerefMut};

use mcp_engine::{Base64, Content, ResourceContents};

/// Binary data, owned: raw bytes or text already base64-encoded.
///
/// The owned counterpart of [`mcp_engine::Base64`]. Raw bytes are encoded by the engine
/// while it writes the answer, so there is no need to encode them yourself.
///
/// ```
/// use mcp_engine::Base64;
/// use mcp_io_tokio::reply::OwnedBase64;
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
    /// use mcp_io_tokio::reply::OwnedBase64;
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
/// use mcp_io_tokio::reply::OwnedResourceContents;
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
    /// use mcp_io_tokio::reply::OwnedResourceContents;
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
    /// use mcp_io_tokio::reply::OwnedResourceContents;
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
    /// use mcp_io_tokio::reply::OwnedResourceContents;
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
    /// use mcp_io_tokio::reply::OwnedResourceContents;
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
/// use mcp_io_tokio::reply::{OwnedContent, OwnedResourceContents};
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
    /// use mcp_io_tokio::reply::OwnedContent;
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
    /// use mcp_io_tokio::reply::OwnedContent;
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
    /// use mcp_io_tokio::reply::OwnedContent;
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
    /// use mcp_io_tokio::reply::OwnedContent;
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
    /// use mcp_io_tokio::reply::OwnedContent;
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
    /// use mcp_io_tokio::reply::OwnedContent;
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
    /// use mcp_io_tokio::reply::{OwnedContent, OwnedResourceContents};
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
    /// use mcp_io_tokio::reply::OwnedContent;
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

/// The content blocks of a [`ToolReply`](super::ToolReply): a list of [`OwnedContent`] that holds one block
/// without a heap allocation, and more in a `Vec`.
///
/// Reads as a slice ([`Deref`]); made from a `Vec<OwnedContent>`, one `OwnedContent`, or
/// an iterator; [`push`](Self::push) adds a block.
///
/// ```
/// use mcp_io_tokio::reply::{ContentBlocks, OwnedContent};
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
    /// use mcp_io_tokio::reply::ContentBlocks;
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
    /// use mcp_io_tokio::reply::{ContentBlocks, OwnedContent};
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
    /// use mcp_io_tokio::reply::{ContentBlocks, OwnedContent};
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
    }
}
