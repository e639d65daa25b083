//! mio adapter (in progress).
