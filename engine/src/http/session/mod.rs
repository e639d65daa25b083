//! The sessions of session-bound Streamable HTTP (`2025-11-25`, `2025-06-18`): the session
//! table (`sessions`: sealed ids, expiry, caps, which wire a request is served on), the
//! sessions each client holds (`shares`), the session streams (`session_streams`: the
//! standalone `GET` stream, event ids, resumption), what they sent lately for
//! `Last-Event-ID` (`replay`), the streams parked when their connection went away
//! (`parked`), and who holds the long-lived streams (`stream_shares`).

pub(super) mod parked;
pub(super) mod replay;
pub(super) mod session_streams;
pub(super) mod sessions;
pub(super) mod shares;
pub(super) mod stream_shares;
