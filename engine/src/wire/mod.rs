//! Pure codecs: bytes to values and back, with no MCP state and no knowledge of the
//! layers above: JSON tape helpers and writers (`json`), list cursors (`cursor`), sealed
//! session ids (`session_id`), the input of a newline-delimited stream (`ndjson`), the HTTP/1.1 codec (`http1`), the Server-Sent Events written
//! in its chunks (`sse`), the `Mcp-*` header matcher (`headers`), and W3C trace context and
//! baggage values (`trace`).
//!
//! May use: the leaf modules (`time`, `revision`, `level`) and its own files only.

// Their `pub` items are exported to the fuzz harnesses by `crate::internal` (`cfg(fuzzing)`).
#![cfg_attr(not(fuzzing), allow(unreachable_pub))]

pub(crate) mod cursor;
pub(crate) mod frame_id;
pub(crate) mod headers;
pub(crate) mod http1;
pub(crate) mod json;
pub(crate) mod ndjson;
pub(crate) mod record;
pub(crate) mod session_id;
pub(crate) mod sse;
pub(crate) mod trace;

/// The most earlier keys a sealed value (session id, event id, cursor, `requestState`)
/// is tried against after the sealing key (key rotation: `Config::previous_secret_keys`).
pub(crate) const MAX_PREVIOUS_KEYS: usize = 4;
