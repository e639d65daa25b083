//! The internals the fuzz harnesses (the `mcp-engine-fuzz` crate in `fuzz/`) need beyond
//! the public API, exported only under `--cfg fuzzing` (which `cargo fuzz` sets). Not an
//! API: nothing here is stable. Re-exports only; every harness lives in the fuzz crate
//! but the four below that need the deepest internals.

// The harnesses that stay with the code they check.
pub use crate::catalog::schema::fuzz_schema_differential;
pub use crate::http::record::fuzz_session_record;
pub use crate::mcp::mrtr::fuzz_request_state;
pub use crate::wire::cursor::fuzz_cursor;

// Resource templates.
pub use crate::catalog::uritemplate::{
    Captures, MAX_PATH_EXPRESSIONS, MAX_QUERY_PAIRS, MAX_TEMPLATE_LEN, MAX_TEMPLATE_VARS, UriTemplate,
};

// Pagination cursors.
pub use crate::wire::cursor::{CURSOR_LEN, CursorError, ListKind};

// The MCP header matcher.
pub use crate::wire::headers::{
    BodyValue, Expected, HeaderName, MAX_DECODED_LEN, Mismatch, MismatchReason, ParamCheck,
    check as check_headers, decode_value as decode_header_value,
};

// The HTTP/1.1 connection codec.
pub use crate::wire::http1::{BodyKind, Conn, Head, HttpError, Input, Limits};

// The JSON string writer.
pub use crate::wire::json::write_str as write_json_str;

/// Whether `bytes`, a task record as `HttpEvent::SaveTask` handed it to a store, decodes
/// back (the `task_store` harness checks every record its store keeps).
pub fn task_record_decodes(bytes: &[u8]) -> bool {
    let mut r = crate::mcp::tasks::Record::default();
    crate::mcp::tasks::record::decode(bytes, &mut r).is_ok()
}
