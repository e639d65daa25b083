//! Result framing shared by the answers and the task table: the JSON-RPC result envelope
//! (`result_start` / `result_end` with the `2026-07-28` members), a tool result's members,
//! numbers. Below both: it knows neither `Answers` nor the tasks, so `answers/` sits
//! above the task table and the task table never sees `Answers`.

use serde::Serialize;

use crate::config::CachePolicy;
use crate::content::{self, Content, ToolOutput};
use crate::jsonrpc::{Reply, field};
use crate::revision::Revision;
use crate::wire::json;

/// Writes `{"jsonrpc":"2.0","id":..,"result":{`.
pub(crate) fn result_start(out: &mut Vec<u8>, reply: Reply<'_, '_>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
    reply.write(out);
    out.extend_from_slice(b",\"result\":{");
}

/// Closes a result object: the `2026-07-28` envelope fields (`meta`: the server's `_meta`
/// members as [`Prepared`](crate::mcp::prepared::Prepared) wrote them), then `}}\n`.
pub(crate) fn result_end(out: &mut Vec<u8>, meta: &[u8], rev: Revision, cache: Option<CachePolicy>) {
    if rev.is_stateless() {
        field(out, "resultType");
        out.extend_from_slice(b"\"complete\"");
        if let Some(c) = cache {
            field(out, "ttlMs");
            json::write_u64(out, c.ttl_ms);
            field(out, "cacheScope");
            json::write_str(out, c.scope.as_str());
        }
        if !meta.is_empty() {
            out.push(b',');
            out.extend_from_slice(meta);
        }
    }
    out.extend_from_slice(b"}}\n");
}

/// Writes a JSON number: integral values without a fraction (`50`, not `50.0`).
pub(crate) fn write_number(out: &mut Vec<u8>, v: f64) {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        let _ = serde_json::to_writer(&mut *out, &(v as i64));
    } else {
        let _ = serde_json::to_writer(&mut *out, &v);
    }
}

/// The members of the tool result that stands for one whose `structuredContent` does not
/// match the tool's output schema.
pub(crate) const MISMATCH_RESULT: &[u8] = b"\"content\":[{\"type\":\"text\",\"text\":\"Internal error: the tool's result does not match its output schema\"}],\"isError\":true";

/// Writes the members of a `CallToolResult` (no braces).
pub(crate) fn write_tool_members<S: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    output: &ToolOutput<'_, S>,
) -> Result<(), serde_json::Error> {
    field(out, "content");
    content::write_array(out, output.content, Content::write_json);
    if let Some(s) = output.structured_content {
        field(out, "structuredContent");
        serde_json::to_writer(&mut *out, s)?;
    }
    if output.is_error {
        field(out, "isError");
        out.extend_from_slice(b"true");
    }
    Ok(())
}
