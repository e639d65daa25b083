//! Pure codecs: bytes to values and back, with no MCP state and no knowledge of the
//! layers above: JSON tape helpers and writers (`json`), list cursors (`cursor`), sealed session ids (`session_id`), the
//! HTTP/1.1 codec and SSE writers (`http1`), and the `Mcp-*` header matcher (`headers`).
//!
//! May use: the leaf modules (`time`, `revision`, `level`) and its own files only.

// Their `pub` items are exported to the fuzz harnesses by `crate::internal` (`cfg(fuzzing)`).
#![cfg_attr(not(fuzzing), allow(unreachable_pub))]

pub(crate) mod cursor;
pub(crate) mod headers;
pub(crate) mod http1;
pub(crate) mod json;
pub(crate) mod session_id;
