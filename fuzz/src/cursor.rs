//! cursor: sealed pagination cursors.

/// Pagination cursors (`wire::cursor::seal`, `open`); the harness lives with the cursor
/// code (`mcp_engine::internal::fuzz_cursor`), which it needs the internals of.
///
/// Input: a mode byte, then the rest. Even modes: the rest as text is a cursor a client
/// made up, which must open for no list, on either clock. Odd modes: a cursor sealed from
/// the rest (offset, time) under a binding the mode picks (page size, revision,
/// principal, clock), which opens to its offset until its expiry (plus the skew on the
/// wall clock) and not a microsecond later, names its list to the others, and is refused
/// after any one change (a character, the key, the page size, the revision, the
/// principal, the list's digest, the other clock).
pub fn cursor(data: &[u8]) {
    mcp_engine::internal::fuzz_cursor(data);
}
