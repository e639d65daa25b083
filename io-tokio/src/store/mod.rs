//! Where a server keeps what outlives its engine's memory: sessions and their streams'
//! events ([`SessionStore`], [`EventStore`] within [`EventBounds`], both in memory in
//! [`MemorySessionStore`]), what servers sharing a store tell each other
//! ([`StoreNotice`], [`CatalogNews`]), and task records ([`TaskStore`], in memory in
//! [`MemoryTaskStore`]); with feature `postgres`, all three in PostgreSQL
//! (`PgSessionStore`, `PgStoreConfig`). An [`HttpServer`](crate::HttpServer) is given
//! them with `session_store`, `event_store` and `task_store`.
//!
//! Inside: `sessions` (the session and event stores), `tasks` (the task store),
//! `stream_events` (the task appending a stream's events in order, and a load's answer
//! for the engine) and `postgres/`. Nothing here knows the run loops.

pub(crate) mod sessions;
pub(crate) mod stream_events;
pub(crate) mod tasks;

#[cfg(feature = "postgres")]
pub(crate) mod postgres;

#[cfg(feature = "postgres")]
pub use postgres::{IgnoredNotices, PgSessionStore, PgStoreConfig};
pub use sessions::{
    CatalogNews, EventBounds, EventStore, KeptEvent, MemorySessionStore, SessionStore, StoreError,
    StoreFuture, StoreNotice, StoreNotices, StreamEvent,
};
pub use tasks::{ListedTask, MemoryTaskStore, TaskListQuery, TaskSave, TaskStore};
