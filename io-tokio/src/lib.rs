//! tokio adapter (in progress).
