//! The host's side of a request, what a handler is given and what it returns: the
//! [`Handler`](handler::Handler) trait, the owned requests copied out of engine events
//! (`request`), the owned replies and failures (`reply/`), the typed router built on them
//! (`typed/`, feature `schemars`), the shared names and reused text buffers (`strings`),
//! the channel from handler tasks back to the engine's task with the [`Publisher`](channel::Publisher)
//! (`channel`), and how a call becomes a task (`task`). Nothing here knows a run loop, a
//! store or a transport.
//!
//! Layers, lowest first: `strings`, `reply/`, `task`; `channel`; `request`; `handler`;
//! `typed/`.

pub(crate) mod channel;
pub(crate) mod handler;
pub(crate) mod reply;
pub(crate) mod request;
pub(crate) mod skills;
pub(crate) mod strings;
pub(crate) mod task;
#[cfg(feature = "schemars")]
pub(crate) mod typed;
