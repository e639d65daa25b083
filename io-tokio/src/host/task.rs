//! Tool calls that become tasks (the `io.modelcontextprotocol/tasks` extension): how a
//! task starts ([`TaskStart`]). A handler turns its call into a task with
//! [`ToolCall::start_task`](crate::ToolCall::start_task) and goes on working;
//! the client has the task's handle at once and polls it, its connection free to go.
//!
//! A task is the same call as before for the handler: it reports with
//! [`ToolCall::task_status`](crate::ToolCall::task_status) (or [`ToolCall::progress`](crate::ToolCall::progress)'s message), asks for input by
//! returning [`ToolReply::input_required`](crate::ToolReply::input_required) (the engine
//! lists the requests in `tasks/get`, and the handler is called again with the client's
//! answers in [`ToolCall::input`](crate::ToolCall::input), [`ToolCall::is_task`](crate::ToolCall::is_task) set), learns of cancellation
//! (`tasks/cancel`, or the task's TTL) as any call does, by its future being dropped,
//! and finishes by returning its reply: a [`ToolReply`](crate::ToolReply) makes the task
//! `completed` (`is_error` included), a [`HostFailure`](crate::HostFailure) makes it
//! `failed`.

use std::time::Duration;

use mcp_engine::TaskOptions;

/// How a task starts ([`ToolCall::start_task`](crate::ToolCall::start_task)): the engine's defaults
/// ([`Config::task_ttl`](mcp_engine::Config::task_ttl),
/// [`Config::task_poll_interval`](mcp_engine::Config::task_poll_interval)) unless set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskStart {
    ttl: Option<Duration>,
    poll_interval: Option<Duration>,
    message: Option<String>,
}

impl TaskStart {
    /// The engine's defaults, no status message.
    pub fn new() -> Self {
        Self::default()
    }
    /// How long the task lives (`ttlMs`; at most the engine's `task_ttl`).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
    /// How often the client should poll (`pollIntervalMs`).
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = Some(interval);
        self
    }
    /// The task's first `statusMessage`.
    #[must_use]
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
    /// The engine's form of these options.
    pub(crate) fn as_options(&self) -> TaskOptions<'_> {
        let mut o = TaskOptions::new();
        if let Some(t) = self.ttl {
            o = o.ttl(t);
        }
        if let Some(p) = self.poll_interval {
            o = o.poll_interval(p);
        }
        if let Some(m) = &self.message {
            o = o.message(m);
        }
        o
    }
}
