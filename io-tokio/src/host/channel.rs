//! The channel between handler futures and the task driving the engine: what a handler
//! task sends back ([`Completion`], [`Outcome`]), and the handles a handler (or the host)
//! sends on it with ([`Progress`], [`Publisher`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(feature = "connectome")]
use mcp_engine::connectome::Graph;
use mcp_engine::event::AskError;
use mcp_engine::mrtr::InputRequestBuf;
use mcp_engine::subs::{CatalogChange, ReplaceError};
use mcp_engine::{Catalog, Ticket};
use tokio::sync::{mpsc, oneshot};

use crate::host::reply::{CompleteResult, PromptResult, ResourceResult, ToolResult};

/// What a handler task (or a [`Publisher`]) sends back.
pub(crate) struct Completion {
    /// `None` for a publication.
    pub(crate) ticket: Option<Ticket>,
    pub(crate) outcome: Outcome,
}

/// A change the host publishes to the engine: applied by the run loop, between events.
pub(crate) enum Publish {
    Catalog(Box<Catalog>, oneshot::Sender<Result<CatalogChange, ReplaceError>>),
    ResourceUpdated(String),
    EndSubscriptions,
    /// The engine's observed connectome graph, asked for.
    #[cfg(feature = "connectome")]
    Observed(oneshot::Sender<Graph>),
    /// A request to a session's client outside any request; its reply comes on `reply`.
    AskClient {
        session: Option<String>,
        request: InputRequestBuf,
        reply: oneshot::Sender<Result<serde_json::Value, AskClientError>>,
    },
}

/// Why [`Publisher::ask_client`] has no result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AskClientError {
    /// The engine refused to send the request (nothing was sent): no such session, a
    /// capability its client did not declare, no standalone stream open, ... (see
    /// [`AskError`]).
    Refused(AskError),
    /// The request was sent and got no result: the client's JSON-RPC error, or the
    /// engine's (`-32602` the result did not fit the request, `-32001` no response within
    /// [`Config::input_timeout`](mcp_engine::Config::input_timeout), `-32000` the session
    /// was deleted or expired, or the stream ended).
    Failed {
        /// The error's code.
        code: i64,
        /// The error's message.
        message: String,
    },
    /// The server is not running (any more).
    Stopped,
}

impl std::fmt::Display for AskClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(e) => write!(f, "refused: {e}"),
            Self::Failed { code, message } => write!(f, "the client's request failed ({code}): {message}"),
            Self::Stopped => f.write_str("the server is not running"),
        }
    }
}

impl std::error::Error for AskClientError {}

/// Publishes catalog changes and resource updates to the clients of a running server:
/// the server's run loop applies them to its engine between events
/// ([`Engine::replace_catalog`], [`Engine::notify_resource_updated`],
/// [`Engine::end_subscriptions`]). Get one from [`ToolCall::publisher`] inside a
/// handler, or from [`HttpServer::publisher`](crate::HttpServer::publisher) before
/// serving. Cheap to clone; it does nothing once the server has stopped.
///
/// [`Engine::replace_catalog`]: mcp_engine::Commands::replace_catalog
/// [`Engine::notify_resource_updated`]: mcp_engine::Commands::notify_resource_updated
/// [`Engine::end_subscriptions`]: mcp_engine::Commands::end_subscriptions
/// [`ToolCall::publisher`]: crate::ToolCall::publisher
#[derive(Clone)]
pub struct Publisher {
    tx: mpsc::UnboundedSender<Completion>,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher").field("closed", &self.tx.is_closed()).finish()
    }
}

/// Why a publication did not take effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublishError {
    /// The engine refused it and kept what it had.
    Refused(ReplaceError),
    /// The server is not running (any more).
    Stopped,
}

impl std::fmt::Display for PublishError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(e) => write!(f, "refused: {e}"),
            Self::Stopped => f.write_str("the server is not running"),
        }
    }
}

impl std::error::Error for PublishError {}

impl Publisher {
    pub(crate) fn new(tx: mpsc::UnboundedSender<Completion>) -> Self {
        Self { tx }
    }

    fn send(&self, p: Publish) -> bool {
        let done = Completion { ticket: None, outcome: Outcome::Publish(p) };
        self.tx.send(done).is_ok()
    }

    /// Replaces the engine's catalog; list-change notifications go to the subscriptions
    /// that asked for them. Resolves once the engine applied (or refused) it.
    pub async fn replace_catalog(&self, catalog: Catalog) -> Result<CatalogChange, PublishError> {
        let (tx, rx) = oneshot::channel();
        if !self.send(Publish::Catalog(Box::new(catalog), tx)) {
            return Err(PublishError::Stopped);
        }
        match rx.await {
            Ok(r) => r.map_err(PublishError::Refused),
            Err(_) => Err(PublishError::Stopped),
        }
    }

    /// Tells the subscribers of `uri` it changed (`notifications/resources/updated`).
    /// Returns `false` if the server is not running.
    pub fn resource_updated(&self, uri: impl Into<String>) -> bool {
        self.send(Publish::ResourceUpdated(uri.into()))
    }

    /// Ends every `subscriptions/listen` stream gracefully. Returns `false` if the server
    /// is not running.
    pub fn end_subscriptions(&self) -> bool {
        self.send(Publish::EndSubscriptions)
    }

    /// Sends `request` (`sampling/createMessage`, `elicitation/create` in form or url
    /// mode, `roots/list`) to a session-bound client outside any request, and resolves
    /// with its result: over HTTP to the session `session_id` names, on its standalone
    /// `GET` stream ([`HttpEngine::ask_client`](mcp_engine::http::HttpEngine::ask_client));
    /// on stdio (`session_id` is ignored) on the output stream
    /// ([`Engine::ask_client`](mcp_engine::Engine::ask_client); the stdio run loop hears
    /// publishers while a handler runs, so ask from one). Errors: refused by the
    /// engine (nothing sent), the client's or engine's error (a timeout after
    /// [`Config::input_timeout`](mcp_engine::Config::input_timeout), the session ended),
    /// or the server stopped.
    pub async fn ask_client(
        &self,
        session_id: Option<&str>,
        request: InputRequestBuf,
    ) -> Result<serde_json::Value, AskClientError> {
        let (tx, rx) = oneshot::channel();
        let session = session_id.map(str::to_owned);
        if !self.send(Publish::AskClient { session, request, reply: tx }) {
            return Err(AskClientError::Stopped);
        }
        rx.await.unwrap_or(Err(AskClientError::Stopped))
    }

    /// The engine's observed connectome graph as it is now
    /// ([`Connectome::observed`](mcp_engine::observe::Connectome::observed)): which callers
    /// called which methods, the definitions they reached and the reads handlers
    /// reported ([`ToolCall::report_read`](crate::ToolCall::report_read)), with counts
    /// (feature `connectome`).
    #[cfg(feature = "connectome")]
    pub async fn observed_graph(&self) -> Result<Graph, PublishError> {
        let (tx, rx) = oneshot::channel();
        if !self.send(Publish::Observed(tx)) {
            return Err(PublishError::Stopped);
        }
        rx.await.map_err(|_| PublishError::Stopped)
    }
}

/// What a [`Completion`] carries.
pub(crate) enum Outcome {
    /// A progress report; the task goes on.
    Progress {
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
        /// Counts the report as queued until the run loop has handled it.
        _permit: Permit,
    },
    /// A log message; the task goes on.
    Log {
        level: mcp_engine::LogLevel,
        logger: Option<String>,
        data: serde_json::Value,
        _permit: Permit,
    },
    /// The call read a resource (the connectome's observed edge); it goes on.
    #[cfg(feature = "connectome")]
    Read {
        tool: crate::host::strings::Name,
        uri: String,
        _permit: Permit,
    },
    /// The call lets its client's connection go for now (SSE polling); it goes on.
    Reconnect {
        retry: std::time::Duration,
    },
    /// The call becomes a task (see [`ToolCall::start_task`](crate::ToolCall::start_task));
    /// it goes on, the engine's answer comes back on `reply`.
    StartTask {
        options: crate::host::task::TaskStart,
        reply: oneshot::Sender<Result<(), mcp_engine::error::AnswerError>>,
    },
    /// The task's status message; it goes on.
    TaskStatus {
        message: Option<String>,
        _permit: Permit,
    },
    Tool(ToolResult),
    Resource(ResourceResult),
    Prompt(PromptResult),
    Complete(CompleteResult),
    /// The task ended without a reply: it panicked, or was aborted.
    Dropped,
    /// Not a task's: a change the host publishes.
    Publish(Publish),
}

/// Reports (progress and log messages) of all running calls that may wait for the run
/// loop at once; more are dropped (the handler sees `false`), so a handler that reports in
/// a tight loop cannot grow the channel without bound.
pub(crate) const MAX_QUEUED_REPORTS: usize = 1024;

/// One queued report of a call; dropping it (once the run loop handled the report) frees
/// its place.
pub(crate) struct Permit(Arc<AtomicUsize>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Lets a running tool call report progress to the run loop.
#[derive(Clone)]
pub(crate) struct Progress {
    tx: mpsc::UnboundedSender<Completion>,
    ticket: Ticket,
    queued: Arc<AtomicUsize>,
}

impl Progress {
    /// The reports of the request `ticket`, sent on `tx`; `queued` counts the reports of
    /// every call waiting for the run loop.
    pub(crate) fn new(
        tx: mpsc::UnboundedSender<Completion>,
        ticket: Ticket,
        queued: Arc<AtomicUsize>,
    ) -> Self {
        Self { tx, ticket, queued }
    }

    /// A place for one more report, if fewer than [`MAX_QUEUED_REPORTS`] wait.
    fn permit(&self) -> Option<Permit> {
        if self.queued.fetch_add(1, Ordering::AcqRel) >= MAX_QUEUED_REPORTS {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Permit(Arc::clone(&self.queued)))
    }

    pub(crate) fn send(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let Some(permit) = self.permit() else { return false };
        let outcome =
            Outcome::Progress { progress, total, message: message.map(str::to_owned), _permit: permit };
        // The receiver is gone only once the run loop has returned.
        self.tx.send(Completion { ticket: Some(self.ticket), outcome }).is_ok()
    }
}

impl Progress {
    pub(crate) fn publisher(&self) -> Publisher {
        Publisher::new(self.tx.clone())
    }

    pub(crate) fn log(
        &self,
        level: mcp_engine::LogLevel,
        logger: Option<&str>,
        data: serde_json::Value,
    ) -> bool {
        let Some(permit) = self.permit() else { return false };
        let outcome = Outcome::Log { level, logger: logger.map(str::to_owned), data, _permit: permit };
        // The receiver is gone only once the run loop has returned.
        self.tx.send(Completion { ticket: Some(self.ticket), outcome }).is_ok()
    }
}

impl Progress {
    /// Reports that the call of `tool` read `uri`.
    #[cfg(feature = "connectome")]
    pub(crate) fn report_read(&self, tool: &crate::host::strings::Name, uri: &str) -> bool {
        let Some(permit) = self.permit() else { return false };
        let outcome = Outcome::Read { tool: tool.clone(), uri: uri.to_owned(), _permit: permit };
        // The receiver is gone only once the run loop has returned.
        self.tx.send(Completion { ticket: Some(self.ticket), outcome }).is_ok()
    }

    pub(crate) fn reconnect_later(&self, retry: std::time::Duration) -> bool {
        let outcome = Outcome::Reconnect { retry };
        self.tx.send(Completion { ticket: Some(self.ticket), outcome }).is_ok()
    }
}

impl Progress {
    /// Asks the run loop to turn the call into a task; the answer comes on the receiver.
    pub(crate) fn start_task(
        &self,
        options: crate::host::task::TaskStart,
    ) -> Option<oneshot::Receiver<Result<(), mcp_engine::error::AnswerError>>> {
        let (reply, rx) = oneshot::channel();
        let outcome = Outcome::StartTask { options, reply };
        self.tx.send(Completion { ticket: Some(self.ticket), outcome }).ok()?;
        Some(rx)
    }

    /// Queues the task's status message.
    pub(crate) fn task_status(&self, message: Option<&str>) -> bool {
        let Some(permit) = self.permit() else { return false };
        let outcome = Outcome::TaskStatus { message: message.map(str::to_owned), _permit: permit };
        self.tx.send(Completion { ticket: Some(self.ticket), outcome }).is_ok()
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").field("ticket", &self.ticket).finish_non_exhaustive()
    }
}

impl PartialEq for Progress {
    fn eq(&self, other: &Self) -> bool {
        self.ticket == other.ticket
    }
}

impl Eq for Progress {}
