//! Placeholder; replaced by the real module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind { Tools, Resources, ResourceTemplates, Prompts }
impl ListKind { pub(crate) fn method(self) -> &'static str { match self { Self::Tools => "tools/list", Self::Resources => "resources/list", Self::ResourceTemplates => "resources/templates/list", Self::Prompts => "prompts/list" } } }
pub(crate) const MAX_CURSOR_KEY: usize = 1024;
pub(crate) const MAX_CURSOR_LEN: usize = 1400;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CursorError { Invalid, OtherList(ListKind) }
pub(crate) fn encode<'b>(_kind: ListKind, last_key: &str, buf: &'b mut [u8; MAX_CURSOR_LEN]) -> Option<&'b str> { buf[..last_key.len()].copy_from_slice(last_key.as_bytes()); core::str::from_utf8(&buf[..last_key.len()]).ok() }
pub(crate) fn decode<'b>(_kind: ListKind, cursor: &str, buf: &'b mut [u8; MAX_CURSOR_KEY + 8]) -> Result<&'b str, CursorError> { buf[..cursor.len()].copy_from_slice(cursor.as_bytes()); core::str::from_utf8(&buf[..cursor.len()]).map_err(|_| CursorError::Invalid) }
