//! The fuzz harnesses of `mcp-engine`. Each target in `fuzz_targets/` is a one-line call
//! into one of these functions.
//!
//! The harnesses drive the engine through its public API wherever it suffices, and
//! through `mcp_engine::internal` (the internals they need, exported only under
//! `--cfg fuzzing`, which `cargo fuzz` sets) otherwise: build them with `cargo fuzz`.

mod common;
mod cursor;
mod http_codec;
mod http_engine;
mod http_headers;
mod http_timers;
mod jsonrpc;
mod op_sequence;
mod session_streams;
mod skills;
mod stdio;
mod task_store;
mod tasks;
mod uritemplate;

pub use cursor::cursor;
pub use http_codec::http_codec;
pub use http_engine::http_engine;
pub use http_headers::http_headers;
pub use http_timers::http_timers;
pub use jsonrpc::jsonrpc;
pub use op_sequence::op_sequence;
pub use session_streams::session_streams;
pub use skills::skills;
pub use stdio::stdio_frames;
pub use task_store::task_store;
pub use tasks::tasks;
pub use uritemplate::uritemplate;

/// `requestState` sealing and verification; the harness is the engine's (`internal`), as it
/// needs the sealing internals.
pub fn request_state(data: &[u8]) {
    mcp_engine::internal::fuzz_request_state(data);
}

/// Session records as a session store hands them back; the harness lives with the
/// record format.
pub fn session_record(data: &[u8]) {
    mcp_engine::internal::fuzz_session_record(data);
}

/// The engine's tape schema validator against `jsonschema`; the harness lives with the
/// validator (its unit tests run it too).
pub fn schema_differential(data: &[u8]) {
    mcp_engine::internal::fuzz_schema_differential(data);
}
