//! Placeholder; replaced by the real module.
/// Kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)] #[non_exhaustive]
pub enum HeaderParamKind { /// s
String, /// i
Integer, /// b
Boolean }
/// Param.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam { /// h
pub header: Box<str>, /// p
pub path: Box<[Box<str>]>, /// k
pub kind: HeaderParamKind }
/// Err.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XHeaderError { /// p
pub pointer: String, /// r
pub reason: XHeaderReason }
/// Reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)] #[non_exhaustive]
pub enum XHeaderReason { /// x
NotAString, /// x
Empty, /// x
NotAToken, /// x
Duplicate, /// x
NotReachable, /// x
BadType }
impl core::fmt::Display for XHeaderError { fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result { write!(f, "bad x-mcp-header at {}", self.pointer) } }
impl std::error::Error for XHeaderError {}
pub(crate) fn collect_header_params(_schema: &serde_json::Value) -> Result<Vec<HeaderParam>, XHeaderError> { Ok(vec![]) }
