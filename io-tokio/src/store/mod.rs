//! Where a server keeps what outlives its engine's memory, and its side of each store:
//! sessions and their streams' events (`sessions`: [`SessionStore`](sessions::SessionStore), [`EventStore`](sessions::EventStore),
//! [`MemorySessionStore`](sessions::MemorySessionStore), the notices and news between nodes), task records (`tasks`:
//! [`TaskStore`](tasks::TaskStore), [`MemoryTaskStore`](tasks::MemoryTaskStore)), the task appending a stream's events in order and
//! a load's answer for the engine (`stream_events`), and the PostgreSQL store of all three
//! (`postgres`, feature `postgres`). The run loops hand the engine's store events to these
//! (`run/owner.rs`); nothing here knows the engine's owner.

pub(crate) mod sessions;
pub(crate) mod stream_events;
pub(crate) mod tasks;

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
