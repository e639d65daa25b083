//! What the host answers with: tool results, resource contents and prompt messages.
//!
//! These types borrow everything they carry and are serialized straight into the
//! engine's output buffer, so answering allocates nothing. Binary data can be given
//! already base64-encoded ([`Base64::Encoded`]) or as raw bytes ([`Base64::Bytes`]),
//! which are encoded while they are written.

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::wire::json;

/// Binary data on the wire (base64, standard alphabet, padded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Base64<'a> {
    /// Already base64-encoded text; written as is.
    Encoded(&'a str),
    /// Raw bytes, encoded while written.
    Bytes(&'a [u8]),
}

impl Serialize for Base64<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Encoded(text) => s.serialize_str(text),
            Self::Bytes(bytes) => s.collect_str(&base64::display::Base64Display::new(
                bytes,
                &base64::engine::general_purpose::STANDARD,
            )),
        }
    }
}

/// The contents of a resource (MCP `TextResourceContents` / `BlobResourceContents`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceContents<'a> {
    /// Text contents.
    Text {
        /// The uri of the resource.
        uri: &'a str,
        /// MIME type.
        mime_type: Option<&'a str>,
        /// The text.
        text: &'a str,
    },
    /// Binary contents.
    Blob {
        /// The uri of the resource.
        uri: &'a str,
        /// MIME type.
        mime_type: Option<&'a str>,
        /// The bytes.
        blob: Base64<'a>,
    },
}

impl<'a> ResourceContents<'a> {
    /// Text contents of `uri`.
    pub fn text(uri: &'a str, mime_type: Option<&'a str>, text: &'a str) -> Self {
        Self::Text { uri, mime_type, text }
    }
    /// Binary contents of `uri`, given as raw bytes.
    pub fn blob(uri: &'a str, mime_type: Option<&'a str>, bytes: &'a [u8]) -> Self {
        Self::Blob { uri, mime_type, blob: Base64::Bytes(bytes) }
    }
    /// Binary contents of `uri`, given already base64-encoded.
    pub fn blob_base64(uri: &'a str, mime_type: Option<&'a str>, base64: &'a str) -> Self {
        Self::Blob { uri, mime_type, blob: Base64::Encoded(base64) }
    }
}

impl Serialize for ResourceContents<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text { uri, mime_type, text } => {
                let mut st = s.serialize_struct("TextResourceContents", 3)?;
                st.serialize_field("uri", uri)?;
                if let Some(m) = mime_type {
                    st.serialize_field("mimeType", m)?;
                }
                st.serialize_field("text", text)?;
                st.end()
            }
            Self::Blob { uri, mime_type, blob } => {
                let mut st = s.serialize_struct("BlobResourceContents", 3)?;
                st.serialize_field("uri", uri)?;
                if let Some(m) = mime_type {
                    st.serialize_field("mimeType", m)?;
                }
                st.serialize_field("blob", blob)?;
                st.end()
            }
        }
    }
}

/// One content block of a tool result or prompt message (MCP `ContentBlock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Content<'a> {
    /// Text.
    Text {
        /// The text.
        text: &'a str,
    },
    /// An image.
    Image {
        /// The image bytes.
        data: Base64<'a>,
        /// MIME type, e.g. `image/png`.
        mime_type: &'a str,
    },
    /// Audio.
    Audio {
        /// The audio bytes.
        data: Base64<'a>,
        /// MIME type, e.g. `audio/wav`.
        mime_type: &'a str,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The uri.
        uri: &'a str,
        /// Programmatic name.
        name: &'a str,
        /// Description.
        description: Option<&'a str>,
        /// MIME type.
        mime_type: Option<&'a str>,
    },
    /// A resource embedded in the result.
    Resource(ResourceContents<'a>),
}

impl<'a> Content<'a> {
    /// A text block.
    pub fn text(text: &'a str) -> Self {
        Self::Text { text }
    }
    /// An image from raw bytes.
    pub fn image(bytes: &'a [u8], mime_type: &'a str) -> Self {
        Self::Image { data: Base64::Bytes(bytes), mime_type }
    }
    /// An image given already base64-encoded.
    pub fn image_base64(base64: &'a str, mime_type: &'a str) -> Self {
        Self::Image { data: Base64::Encoded(base64), mime_type }
    }
    /// Audio from raw bytes.
    pub fn audio(bytes: &'a [u8], mime_type: &'a str) -> Self {
        Self::Audio { data: Base64::Bytes(bytes), mime_type }
    }
    /// Audio given already base64-encoded.
    pub fn audio_base64(base64: &'a str, mime_type: &'a str) -> Self {
        Self::Audio { data: Base64::Encoded(base64), mime_type }
    }
    /// A link to the resource `uri`.
    pub fn resource_link(uri: &'a str, name: &'a str) -> Self {
        Self::ResourceLink { uri, name, description: None, mime_type: None }
    }
    /// An embedded resource.
    pub fn embedded(resource: ResourceContents<'a>) -> Self {
        Self::Resource(resource)
    }
}

impl Serialize for Content<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text { text } => {
                let mut st = s.serialize_struct("TextContent", 2)?;
                st.serialize_field("type", "text")?;
                st.serialize_field("text", text)?;
                st.end()
            }
            Self::Image { data, mime_type } | Self::Audio { data, mime_type } => {
                let kind = if matches!(self, Self::Image { .. }) { "image" } else { "audio" };
                let mut st = s.serialize_struct("MediaContent", 3)?;
                st.serialize_field("type", kind)?;
                st.serialize_field("data", data)?;
                st.serialize_field("mimeType", mime_type)?;
                st.end()
            }
            Self::ResourceLink { uri, name, description, mime_type } => {
                let mut st = s.serialize_struct("ResourceLink", 5)?;
                st.serialize_field("type", "resource_link")?;
                st.serialize_field("uri", uri)?;
                st.serialize_field("name", name)?;
                if let Some(d) = description {
                    st.serialize_field("description", d)?;
                }
                if let Some(m) = mime_type {
                    st.serialize_field("mimeType", m)?;
                }
                st.end()
            }
            Self::Resource(contents) => {
                let mut st = s.serialize_struct("EmbeddedResource", 2)?;
                st.serialize_field("type", "resource")?;
                st.serialize_field("resource", contents)?;
                st.end()
            }
        }
    }
}

/// The outcome of a tool call (MCP `CallToolResult`).
///
/// `S` is the type of `structuredContent`; [`ToolOutput::new`] leaves it out.
#[derive(Debug, Clone, Copy)]
pub struct ToolOutput<'a, S: ?Sized = ()> {
    /// The content blocks.
    pub content: &'a [Content<'a>],
    /// Structured output, serialized as `structuredContent`.
    pub structured_content: Option<&'a S>,
    /// Whether the tool failed (a business failure the model should see, not a protocol error).
    pub is_error: bool,
}

impl<'a> ToolOutput<'a, ()> {
    /// A successful result made of `content`.
    pub fn new(content: &'a [Content<'a>]) -> Self {
        Self { content, structured_content: None, is_error: false }
    }
    /// A failed result (`isError: true`) made of `content`.
    pub fn error(content: &'a [Content<'a>]) -> Self {
        Self { content, structured_content: None, is_error: true }
    }
}

impl<'a, S: ?Sized> ToolOutput<'a, S> {
    /// Adds `structuredContent`.
    pub fn structured<T: ?Sized + Serialize>(self, value: &'a T) -> ToolOutput<'a, T> {
        ToolOutput { content: self.content, structured_content: Some(value), is_error: self.is_error }
    }
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

impl Role {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// One message of a rendered prompt (MCP `PromptMessage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptMessage<'a> {
    /// The speaker.
    pub role: Role,
    /// The content.
    pub content: Content<'a>,
}

impl<'a> PromptMessage<'a> {
    /// A user message.
    pub fn user(content: Content<'a>) -> Self {
        Self { role: Role::User, content }
    }
    /// An assistant message.
    pub fn assistant(content: Content<'a>) -> Self {
        Self { role: Role::Assistant, content }
    }
}

impl Serialize for PromptMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("PromptMessage", 2)?;
        st.serialize_field("role", self.role.as_str())?;
        st.serialize_field("content", &self.content)?;
        st.end()
    }
}

/// A rendered prompt (MCP `GetPromptResult`).
#[derive(Debug, Clone, Copy)]
pub struct PromptOutput<'a> {
    /// Description of the rendered prompt.
    pub description: Option<&'a str>,
    /// The messages.
    pub messages: &'a [PromptMessage<'a>],
}

impl<'a> PromptOutput<'a> {
    /// A prompt made of `messages`.
    pub fn new(messages: &'a [PromptMessage<'a>]) -> Self {
        Self { description: None, messages }
    }
}

// Direct writers: the same bytes the `Serialize` impls above give through `serde_json`
// (`tests::direct_writers_match_serde`), without going through a serializer. Strings
// that need no escape (nearly all) are copied whole.

impl Base64<'_> {
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Self::Encoded(text) => json::write_str(out, text),
            // Writing into a Vec cannot fail; base64 text needs no escape.
            Self::Bytes(_) => {
                let _ = serde_json::to_writer(&mut *out, self);
            }
        }
    }
}

impl ResourceContents<'_> {
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        let (uri, mime_type) = match self {
            Self::Text { uri, mime_type, .. } | Self::Blob { uri, mime_type, .. } => (uri, mime_type),
        };
        out.extend_from_slice(b"{\"uri\":");
        json::write_str(out, uri);
        if let Some(m) = mime_type {
            out.extend_from_slice(b",\"mimeType\":");
            json::write_str(out, m);
        }
        match self {
            Self::Text { text, .. } => {
                out.extend_from_slice(b",\"text\":");
                json::write_str(out, text);
            }
            Self::Blob { blob, .. } => {
                out.extend_from_slice(b",\"blob\":");
                blob.write_json(out);
            }
        }
        out.push(b'}');
    }
}

impl Content<'_> {
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Self::Text { text } => {
                out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                json::write_str(out, text);
            }
            Self::Image { data, mime_type } | Self::Audio { data, mime_type } => {
                out.extend_from_slice(if matches!(self, Self::Image { .. }) {
                    b"{\"type\":\"image\",\"data\":"
                } else {
                    b"{\"type\":\"audio\",\"data\":"
                });
                data.write_json(out);
                out.extend_from_slice(b",\"mimeType\":");
                json::write_str(out, mime_type);
            }
            Self::ResourceLink { uri, name, description, mime_type } => {
                out.extend_from_slice(b"{\"type\":\"resource_link\",\"uri\":");
                json::write_str(out, uri);
                out.extend_from_slice(b",\"name\":");
                json::write_str(out, name);
                if let Some(d) = description {
                    out.extend_from_slice(b",\"description\":");
                    json::write_str(out, d);
                }
                if let Some(m) = mime_type {
                    out.extend_from_slice(b",\"mimeType\":");
                    json::write_str(out, m);
                }
            }
            Self::Resource(contents) => {
                out.extend_from_slice(b"{\"type\":\"resource\",\"resource\":");
                contents.write_json(out);
            }
        }
        out.push(b'}');
    }
}

impl PromptMessage<'_> {
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"role\":");
        json::write_str(out, self.role.as_str());
        out.extend_from_slice(b",\"content\":");
        self.content.write_json(out);
        out.push(b'}');
    }
}

/// Writes `items` as a JSON array, each with `write`.
pub(crate) fn write_array<T>(out: &mut Vec<u8>, items: &[T], write: impl Fn(&T, &mut Vec<u8>)) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(item, out);
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_wire_forms() {
        let s = |c: &Content<'_>| serde_json::to_string(c).unwrap();
        assert_eq!(s(&Content::text("hi")), r#"{"type":"text","text":"hi"}"#);
        assert_eq!(
            s(&Content::image(&[1, 2, 3], "image/png")),
            r#"{"type":"image","data":"AQID","mimeType":"image/png"}"#
        );
        assert_eq!(
            s(&Content::audio_base64("AAA=", "audio/wav")),
            r#"{"type":"audio","data":"AAA=","mimeType":"audio/wav"}"#
        );
        assert_eq!(
            s(&Content::resource_link("x://a", "a")),
            r#"{"type":"resource_link","uri":"x://a","name":"a"}"#
        );
        assert_eq!(
            s(&Content::embedded(ResourceContents::text("x://a", Some("text/plain"), "t"))),
            r#"{"type":"resource","resource":{"uri":"x://a","mimeType":"text/plain","text":"t"}}"#
        );
        assert_eq!(
            s(&Content::embedded(ResourceContents::blob("x://b", None, b"hi"))),
            r#"{"type":"resource","resource":{"uri":"x://b","blob":"aGk="}}"#
        );
    }

    #[test]
    fn direct_writers_match_serde() {
        let texts = ["", "hi", "12°C, light rain", "a\"b\\c\nd\u{1}", "é"];
        let mut blocks = Vec::new();
        for t in texts {
            blocks.push(Content::text(t));
            blocks.push(Content::image(t.as_bytes(), t));
            blocks.push(Content::audio_base64(t, "audio/wav"));
            blocks.push(Content::ResourceLink {
                uri: t,
                name: "n",
                description: Some(t),
                mime_type: Some(t),
            });
            blocks.push(Content::ResourceLink { uri: "x://a", name: t, description: None, mime_type: None });
            blocks.push(Content::embedded(ResourceContents::text(t, Some(t), t)));
            blocks.push(Content::embedded(ResourceContents::text(t, None, t)));
            blocks.push(Content::embedded(ResourceContents::blob(t, Some("a/b"), t.as_bytes())));
            blocks.push(Content::embedded(ResourceContents::blob_base64(t, None, t)));
        }
        for b in &blocks {
            let mut out = Vec::new();
            b.write_json(&mut out);
            assert_eq!(out, serde_json::to_vec(b).unwrap(), "{b:?}");
        }
        let mut out = Vec::new();
        write_array(&mut out, &blocks, Content::write_json);
        assert_eq!(out, serde_json::to_vec(&blocks).unwrap());
        let mut out = Vec::new();
        write_array(&mut out, &blocks[..0], Content::write_json);
        assert_eq!(out, b"[]");
        let messages: Vec<_> =
            blocks.iter().flat_map(|c| [PromptMessage::user(*c), PromptMessage::assistant(*c)]).collect();
        let mut out = Vec::new();
        write_array(&mut out, &messages, PromptMessage::write_json);
        assert_eq!(out, serde_json::to_vec(&messages).unwrap());
    }
}
