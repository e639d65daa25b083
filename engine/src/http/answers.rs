//! The host's answers and notifications for tickets of HTTP requests: each is handed to
//! the core, which writes it for its route, and what the core wrote is then moved into
//! the connections' output (`collect_answers`). Catalog replacements and resource updates
//! also reach the sessions' standalone streams here.

use crate::catalog::Catalog;
use crate::content::{PromptOutput, ResourceContents, ToolOutput};
use crate::error::{AnswerError, HostError};
use crate::http::HttpEngine;
use crate::mcp::tickets::Ticket;
use crate::output::Route;

impl HttpEngine {
    /// Answers a tool call (see [`Engine::answer_tool`](crate::Engine::answer_tool)).
    pub fn answer_tool<S: serde::Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        output: &ToolOutput<'_, S>,
    ) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answers().answer_tool(ticket, output);
        self.collect_answers();
        self.process();
        r
    }

    /// Answers a resource read.
    pub fn answer_resource(
        &mut self,
        ticket: Ticket,
        contents: &[ResourceContents<'_>],
    ) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answers().answer_resource(ticket, contents);
        self.collect_answers();
        self.process();
        r
    }

    /// Answers a prompt.
    pub fn answer_prompt(&mut self, ticket: Ticket, output: &PromptOutput<'_>) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answers().answer_prompt(ticket, output);
        self.collect_answers();
        self.process();
        r
    }

    /// Sends `notifications/progress` for a ticket whose request carried
    /// `_meta.progressToken`: the response becomes an SSE stream that carries it before the
    /// result (see [`Engine::notify_progress`](crate::Engine::notify_progress)).
    ///
    /// A `2025-11-25` task's progress (under the creating call's token, tagged with the
    /// task) goes on the stream of a `tasks/result` the creating session has waiting for
    /// the task, else on the
    /// standalone `GET` stream of the session that created it; with neither open here it
    /// is not sent. `Err(Backpressure)` when that stream's connection is not reading.
    pub fn notify_progress(
        &mut self,
        ticket: Ticket,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), crate::error::NotifyError> {
        self.tick(self.last_now);
        if self.backlogged(ticket) || self.task_backlogged(ticket) {
            return Err(crate::error::NotifyError::Backpressure);
        }
        let r = self.core.answers().notify_progress(ticket, progress, total, message);
        self.collect_answers();
        r
    }

    /// Whether the stream a `2025-11-25` task's progress would go on (a waiting
    /// `tasks/result`'s, else its session's standalone stream) holds as much unsent as a
    /// connection may.
    fn task_backlogged(&self, ticket: Ticket) -> bool {
        let Some(r) = self.core.tasks.get(ticket).filter(|r| r.sends_progress()) else { return false };
        let route = match r.session_waiter() {
            Some(route) => Some(route),
            None => self
                .sessions
                .with_streams()
                .find(|e| e.session.serial == r.session)
                .and_then(|e| e.stream)
                .map(|(conn, generation)| Route::Http { conn, generation }),
        };
        let Some(Route::Http { conn, generation }) = route else { return false };
        self.conn(crate::http::ConnId { slot: conn, generation })
            .is_some_and(|c| c.out.len() >= super::MAX_UNSENT)
    }

    /// Lets the connection of `ticket`'s request go while the host works on it: over a
    /// session-bound stream (`2025-11-25`, `2025-06-18`) the response becomes an SSE
    /// stream if it is not one yet, ends with a `retry:` field of `retry`, and the
    /// request goes on; the client comes back with `GET` and `Last-Event-ID` and gets
    /// what was written meanwhile, then the rest (SSE polling). Returns `Ok(false)` where
    /// there is no such stream (stateless requests, HTTP/1.0): nothing changes.
    pub fn reconnect_later(
        &mut self,
        ticket: Ticket,
        retry: core::time::Duration,
    ) -> Result<bool, crate::error::NotifyError> {
        self.tick(self.last_now);
        let r = self.core.answers().reconnect_later(ticket, retry);
        self.collect_answers();
        self.process();
        r
    }

    /// Answers a completion request (see
    /// [`Engine::answer_completion`](crate::Engine::answer_completion)).
    pub fn answer_completion(
        &mut self,
        ticket: Ticket,
        values: &[&str],
        total: Option<u64>,
        has_more: bool,
    ) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answers().answer_completion(ticket, values, total, has_more);
        self.collect_answers();
        self.process();
        r
    }

    /// Sends `notifications/message` for a ticket (see
    /// [`Engine::notify_log`](crate::Engine::notify_log)); over HTTP the response becomes
    /// an SSE stream that carries it before the result.
    pub fn notify_log<S: serde::Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        level: crate::level::LogLevel,
        logger: Option<&str>,
        data: &S,
    ) -> Result<(), crate::error::NotifyError> {
        self.tick(self.last_now);
        if self.backlogged(ticket) {
            return Err(crate::error::NotifyError::Backpressure);
        }
        let r = self.core.answers().notify_log(ticket, level, logger, data);
        self.collect_answers();
        r
    }

    /// Answers a ticket with an error.
    pub fn answer_error(&mut self, ticket: Ticket, error: HostError<'_>) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answers().answer_error(ticket, None, error);
        self.collect_answers();
        self.process();
        r
    }

    /// Answers a tool call, prompt or resource read with input requests (see
    /// [`crate::Engine::answer_input_required`]).
    pub fn answer_input_required(
        &mut self,
        ticket: Ticket,
        input: &crate::mcp::mrtr::InputRequired<'_>,
    ) -> Result<(), AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answers().answer_input_required(ticket, input);
        self.collect_answers();
        self.process();
        r
    }

    /// Turns a live tool call into a task (see [`Engine::start_task`](crate::Engine::start_task)):
    /// its response is the task's handle, and the task outlives the connection.
    pub fn start_task(
        &mut self,
        ticket: Ticket,
        options: &crate::mcp::tasks::TaskOptions<'_>,
    ) -> Result<Ticket, AnswerError> {
        self.tick(self.last_now);
        let r = self.core.answers().start_task(ticket, options);
        self.collect_answers();
        self.process();
        r
    }

    /// Sets a task's `statusMessage` (see [`Engine::task_status`](crate::Engine::task_status)).
    pub fn task_status(
        &mut self,
        ticket: Ticket,
        message: Option<&str>,
    ) -> Result<(), crate::error::NotifyError> {
        self.tick(self.last_now);
        self.core.answers().task_message(ticket, message)
    }

    /// How many tasks the engine holds (finished ones included, until their TTL).
    pub fn tasks(&self) -> usize {
        self.core.tasks.len()
    }

    /// Replaces the catalog (see [`crate::Engine::replace_catalog`]); listen streams that
    /// asked for the changed lists get their notifications.
    pub fn replace_catalog(
        &mut self,
        catalog: Catalog,
    ) -> Result<crate::mcp::subs::CatalogChange, crate::mcp::subs::ReplaceError> {
        self.tick(self.last_now);
        let r = self.core.replace_catalog(catalog);
        if let Ok(change) = r {
            self.sessions_list_changed(change);
        }
        self.collect_answers();
        self.process();
        r
    }

    /// Announces that lists changed without replacing the catalog: another node sharing
    /// this deployment's clients changed its catalog (its host said so through a shared
    /// store), or this node may have missed such news. The listen streams that asked for
    /// the lists in `change` and the standalone streams of initialized sessions get their
    /// `notifications/*/list_changed`, exactly as after [`replace_catalog`](Self::replace_catalog)
    /// (a family this catalog does not have is left out; nothing is sent unless
    /// `Config::list_changed` is on). Clients then list again, from this node's catalog.
    /// Returns the change as announced.
    pub fn announce_list_changed(
        &mut self,
        change: crate::mcp::subs::CatalogChange,
    ) -> crate::mcp::subs::CatalogChange {
        self.tick(self.last_now);
        let change = self.core.announce_list_changed(change);
        self.sessions_list_changed(change);
        self.collect_answers();
        self.process();
        change
    }

    /// Sessions hear of a list change on their standalone streams.
    fn sessions_list_changed(&mut self, change: crate::mcp::subs::CatalogChange) {
        for e in self.sessions.with_streams() {
            if let Some((conn, generation)) = e.stream {
                self.core.session_list_changed(Route::Http { conn, generation }, &e.session, change);
            }
        }
    }

    /// Routes the core's notifications for sessions' standalone streams (`2025-11-25`
    /// `notifications/tasks/status`, see `legacy::changed`, and a task's
    /// `notifications/progress` when no `tasks/result` waits for it): each to the standalone
    /// stream of its session, if one is open on this engine; otherwise it is dropped
    /// (clients must not rely on them, and poll). Called first thing when answers are
    /// collected; a scan of the sessions with streams per message.
    pub(super) fn route_session_notes(&mut self) {
        let outbox = self.core.outbox_mut();
        if outbox.session_notes.ends.is_empty() {
            // None (nearly always): nothing to move, and the buffers stay where they are.
            outbox.session_notes.bytes.clear();
            return;
        }
        let notes = core::mem::take(&mut outbox.session_notes);
        let mut from = 0;
        for &(serial, end) in &notes.ends {
            let msg = notes.bytes.get(from..end).unwrap_or_default();
            from = end;
            let mut streams = self.sessions.with_streams();
            let Some((conn, generation)) =
                streams.find(|e| e.session.serial == serial).and_then(|e| e.stream)
            else {
                continue;
            };
            let outbox = self.core.outbox_mut();
            let start = outbox.out.len();
            outbox.out.extend_from_slice(msg);
            outbox.interim(Route::Http { conn, generation }, start, true);
        }
        // The buffers go back, emptied (no allocation from one collection to the next).
        let outbox = self.core.outbox_mut();
        outbox.session_notes = notes;
        outbox.session_notes.bytes.clear();
        outbox.session_notes.ends.clear();
    }

    /// Notifies the subscribers of `uri` (see [`crate::Engine::notify_resource_updated`]).
    pub fn notify_resource_updated(&mut self, uri: &str) -> usize {
        self.tick(self.last_now);
        let mut n = self.core.notify_resource_updated(uri);
        for e in self.sessions.with_streams() {
            if let Some((conn, generation)) = e.stream {
                let route = Route::Http { conn, generation };
                n += usize::from(self.core.session_resource_updated(route, &e.session, uri));
            }
        }
        self.collect_answers();
        n
    }

    /// Ends every listen stream with its graceful result (see
    /// [`crate::Engine::end_subscriptions`]).
    pub fn end_subscriptions(&mut self) -> usize {
        self.tick(self.last_now);
        let n = self.core.end_subscriptions();
        self.collect_answers();
        self.process();
        n
    }
}
