//! The host's stores, sans-IO: the engine hands the host what to keep and asks it for what
//! it does not hold, and never does the I/O itself. The session store (`session_store`,
//! with the record format in `session_record`), the event store for resuming a stream on
//! another node (`event_store`), and the task store (`task_store`, with what an unknown
//! task id may cost in `task_misses`).
//!
//! The store protocol's public types live here and nowhere else: the payloads of the store's
//! events ([`LoadSession`], [`SaveSession`], [`SessionExpired`], [`TouchSession`],
//! [`AppendEvent`], [`LoadEvents`], [`SaveTask`], [`LoadTask`], [`TaskExpired`],
//! [`ListTasks`]) and what the host answers or is handed with them ([`Loaded`],
//! [`LoadedEvents`], [`StoredEvent`], [`TaskPosition`], [`TaskQuery`], [`TaskRow`]).

pub(super) mod event_store;
pub(super) mod port;
pub(crate) mod session_record;
pub(super) mod session_store;
pub(super) mod task_misses;
pub(super) mod task_store;

pub use event_store::{AppendEvent, LoadEvents, LoadedEvents, StoredEvent};
pub use session_store::{LoadSession, Loaded, SaveSession, SessionExpired, TouchSession};
pub use task_store::{ListTasks, LoadTask, SaveTask, TaskExpired, TaskPosition, TaskQuery, TaskRow};
