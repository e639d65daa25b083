//! What a typed tool returns ([`IntoToolReply`]: a [`ToolReply`], text, or
//! [`Structured`] output whose schema is derived from its type), and [`NoArgs`] for a tool
//! that takes no arguments.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::host::reply::{HostFailure, ToolReply, ToolResult};

/// What a typed tool's handler may return (inside `Ok`): it becomes the call's
/// [`ToolReply`], and may declare the tool's output schema.
///
/// Implemented for [`ToolReply`] (sent as it is), for text (`String`, `&'static str`,
/// `Cow<'static, str>`: one text block), and for [`Structured<T>`] (structured output
/// with the output schema derived from `T`).
///
/// ```
/// use mcp_io_tokio::{Structured, ToolReply};
/// use mcp_io_tokio::routes::IntoToolReply;
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Sum {
///     total: i64,
/// }
///
/// assert!(<ToolReply as IntoToolReply>::output_schema().is_none());
/// assert_eq!(<Structured<Sum>>::output_schema().unwrap()["type"], "object");
/// let reply = Structured(Sum { total: 3 }).into_reply()?;
/// assert_eq!(reply.structured_content, Some(serde_json::json!({ "total": 3 })));
/// assert_eq!("done".into_reply()?, ToolReply::text("done"));
/// # Ok::<(), mcp_io_tokio::HostFailure>(())
/// ```
pub trait IntoToolReply {
    /// The tool's output schema (`outputSchema`), if this type has one. The engine checks
    /// every `structuredContent` of the tool against it.
    fn output_schema() -> Option<Value> {
        None
    }

    /// The reply to send (or a failure, if the value cannot be sent).
    fn into_reply(self) -> ToolResult;
}

impl IntoToolReply for ToolReply {
    fn into_reply(self) -> ToolResult {
        Ok(self)
    }
}

impl IntoToolReply for String {
    fn into_reply(self) -> ToolResult {
        Ok(ToolReply::text(self))
    }
}

impl IntoToolReply for &'static str {
    fn into_reply(self) -> ToolResult {
        Ok(ToolReply::text(self))
    }
}

impl IntoToolReply for Cow<'static, str> {
    fn into_reply(self) -> ToolResult {
        Ok(ToolReply::text(self))
    }
}

/// Structured output of type `T`: sent as `structuredContent` (and, for clients that
/// do not read structured output, as its JSON text in one text block), with the tool's
/// output schema derived from `T` (as serde serializes it).
///
/// A tool whose handler returns `Structured<T>` cannot send output its schema does not
/// describe: both come from `T`.
///
/// ```
/// use mcp_io_tokio::Structured;
/// use mcp_io_tokio::routes::IntoToolReply;
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Found {
///     ids: Vec<u32>,
/// }
///
/// let reply = Structured(Found { ids: vec![1, 2] }).into_reply()?;
/// assert_eq!(reply.structured_content.unwrap()["ids"][1], 2);
/// # Ok::<(), mcp_io_tokio::HostFailure>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Structured<T>(pub T);

impl<T: Serialize + JsonSchema> IntoToolReply for Structured<T> {
    fn output_schema() -> Option<Value> {
        Some(mcp_engine::output_schema_of::<T>())
    }

    fn into_reply(self) -> ToolResult {
        let value = serde_json::to_value(&self.0)
            .map_err(|e| HostFailure::internal(format!("structured output does not serialize: {e}")))?;
        Ok(ToolReply::structured(value))
    }
}

/// The arguments of a tool that takes none: any object (its members are ignored), with
/// the schema `{"type": "object"}`.
///
/// ```
/// use mcp_io_tokio::NoArgs;
///
/// let _: NoArgs = serde_json::from_str("{}")?;
/// let schema = mcp_engine::input_schema_of::<NoArgs>();
/// assert_eq!(schema["type"], "object");
/// assert!(schema.get("properties").is_none() && schema.get("description").is_none());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct NoArgs {}

impl JsonSchema for NoArgs {
    fn schema_name() -> Cow<'static, str> {
        "NoArgs".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object" })
    }
}
