//! The host's stores, sans-IO: the engine hands the host what to keep and asks it for what it does
//! not hold, and never does the I/O itself. The session store (`session_store`, with the record
//! format in `session_record`), the event store for resuming a stream on another node
//! (`event_store`), and the task store (`task_store`, with what an unknown task id may cost in
//! `task_misses`).
//!
//! The store protocol's public types live here and nowhere else: the events the host's stores are
//! handed ([`StoreEvent`], from [`HttpEngine::poll_store`](crate::http::HttpEngine::poll_store)),
//! their payloads ([`LoadSession`], [`SaveSession`], [`SessionExpired`], [`TouchSession`],
//! [`AppendEvent`], [`LoadEvents`], [`SaveTask`], [`LoadTask`], [`TaskExpired`], [`ListTasks`]) and
//! what the host answers or is handed with them ([`Loaded`], [`LoadedEvents`], [`StoredEvent`],
//! [`TaskPosition`], [`TaskQuery`], [`TaskRow`]).

pub(super) mod event_store;
pub(super) mod port;
pub(crate) mod session_record;
pub(super) mod session_store;
pub(super) mod task_misses;
pub(super) mod task_store;

pub use event_store::{AppendEvent, LoadEvents, LoadedEvents, StoredEvent};
pub use session_store::{LoadSession, Loaded, SaveSession, SessionExpired, TouchSession};
pub use task_store::{ListTasks, LoadTask, SaveTask, TaskExpired, TaskPosition, TaskQuery, TaskRow};

/// Work for the host's stores from an [`HttpEngine`](crate::http::HttpEngine), drained with
/// [`HttpEngine::poll_store`](crate::http::HttpEngine::poll_store) beside the request path's
/// [`HttpEvent`](crate::http::HttpEvent)s.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreEvent<'a> {
    /// Find this session in the session store; answer with
    /// [`HttpEngine::session_loaded`](crate::http::HttpEngine::session_loaded) (only with
    /// [`HttpConfig::session_store`](crate::http::HttpConfig::session_store) on).
    LoadSession(LoadSession<'a>),
    /// Store this session's record, or forget the session; answer with
    /// [`HttpEngine::session_saved`](crate::http::HttpEngine::session_saved) (only with
    /// [`HttpConfig::session_store`](crate::http::HttpConfig::session_store) on).
    SaveSession(SaveSession<'a>),
    /// This engine ended a session that sat idle past
    /// [`HttpConfig::session_idle_timeout`](crate::http::HttpConfig::session_idle_timeout): no
    /// answer (only with [`HttpConfig::session_store`](crate::http::HttpConfig::session_store) on;
    /// see [`SessionExpired`]).
    SessionExpired(SessionExpired<'a>),
    /// Keep this event of a session stream: no answer (only with
    /// [`HttpConfig::event_store`](crate::http::HttpConfig::event_store) on; see [`AppendEvent`]).
    AppendEvent(AppendEvent<'a>),
    /// Find the events a resuming client missed; answer with
    /// [`HttpEngine::events_loaded`](crate::http::HttpEngine::events_loaded) (only with
    /// [`HttpConfig::event_store`](crate::http::HttpConfig::event_store) on).
    LoadEvents(LoadEvents<'a>),
    /// Push the expiry of a session in use in the store: no answer (only with
    /// [`HttpConfig::session_store`](crate::http::HttpConfig::session_store) on; see
    /// [`TouchSession`]).
    TouchSession(TouchSession<'a>),
    /// Store this task's record; answer with
    /// [`HttpEngine::task_saved`](crate::http::HttpEngine::task_saved) (only with
    /// [`HttpConfig::task_store`](crate::http::HttpConfig::task_store) on).
    SaveTask(SaveTask<'a>),
    /// Find this task in the task store; answer with
    /// [`HttpEngine::task_loaded`](crate::http::HttpEngine::task_loaded) (only with
    /// [`HttpConfig::task_store`](crate::http::HttpConfig::task_store) on).
    LoadTask(LoadTask<'a>),
    /// This engine deleted a task at its TTL: no answer (only with
    /// [`HttpConfig::task_store`](crate::http::HttpConfig::task_store) on; see [`TaskExpired`]).
    TaskExpired(TaskExpired<'a>),
    /// List the caller's tasks for a `2025-11-25` `tasks/list`; answer with
    /// [`HttpEngine::tasks_listed`](crate::http::HttpEngine::tasks_listed) (only with
    /// [`HttpConfig::task_store`](crate::http::HttpConfig::task_store) on).
    ListTasks(ListTasks<'a>),
}

/// A connection whose request waits to ask the host's stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::http) enum StoreAsk {
    /// Load the session the request names.
    Load(u32),
    /// Save the session the request changed (or forget it).
    Save(u32),
    /// Load the events a resuming `GET` missed.
    Events(u32),
}

impl StoreAsk {
    /// The slot of the connection that asks.
    pub(in crate::http) fn slot(self) -> u32 {
        let (Self::Load(s) | Self::Save(s) | Self::Events(s)) = self;
        s
    }
}
