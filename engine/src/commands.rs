//! The commands both engines take, written once: [`Commands`], the answers and
//! notifications for a [`Ticket`], the catalog's replacement and resource updates, the
//! observers, and the getters the two share. Each body is here, over the core; an engine
//! says only where its output goes (the sealed [`Output`](sealed::Output): what to do
//! before a command and after it, whether a ticket's output is backlogged, and how news
//! reaches its sessions' own streams).
//!
//! May use: `observe`, `mcp` and the lower layers.

use serde::Serialize;

use crate::catalog::Catalog;
use crate::config::Config;
use crate::content::{PromptOutput, ResourceContents, ToolOutput};
use crate::error::{AnswerError, HostError, NotifyError};
use crate::level::LogLevel;
use crate::mcp::mrtr::InputRequired;
use crate::mcp::subs::{CatalogChange, ReplaceError};
use crate::mcp::tasks::TaskOptions;
use crate::mcp::tickets::Ticket;
use crate::observe::Observer;

/// What an engine tells the commands' bodies: nameable inside the crate only, so that
/// [`Commands`] is implemented by [`Engine`](crate::Engine) and
/// [`HttpEngine`](crate::http::HttpEngine) alone.
pub(crate) mod sealed {
    use crate::mcp::Core;
    use crate::mcp::subs::CatalogChange;
    use crate::mcp::tickets::Ticket;

    /// The core, lent to a command's body.
    pub struct Lent<'a>(pub(crate) &'a mut Core);

    /// The core, shown to a getter.
    pub struct Shown<'a>(pub(crate) &'a Core);

    /// Where an engine's output goes: the part of each command that differs by transport.
    pub trait Output {
        /// The core, to command.
        fn lent(&mut self) -> Lent<'_>;
        /// The core, to read.
        fn shown(&self) -> Shown<'_>;
        /// Before a command: the polled event is released (HTTP: and the time catches
        /// up, what the core wrote meanwhile is collected).
        fn begin(&mut self);
        /// After a command: what the core wrote goes to the transport's output (HTTP: to
        /// the connections), and, with `resume`, processing resumes where the command
        /// may have freed a slot.
        fn end(&mut self, resume: bool);
        /// Whether a notification for `ticket` would find its output backlogged
        /// (`task_progress`: a task's progress, which may go elsewhere than its request).
        fn backlogged(&self, ticket: Ticket, task_progress: bool) -> bool;
        /// The lists in `change` changed: sessions' own streams hear of it (HTTP).
        fn list_changed(&mut self, change: CatalogChange);
        /// `uri` was updated: sessions' own streams that subscribed hear of it (HTTP);
        /// returns how many notifications were written.
        fn resource_updated(&mut self, uri: &str) -> usize;
    }
}

use sealed::Output;

/// The commands and getters [`Engine`](crate::Engine) (stdio) and
/// [`HttpEngine`](crate::http::HttpEngine) share, written once: bring it into scope
/// (`use mcp_engine::Commands;`) to answer a [`Ticket`], notify, replace the catalog or
/// take the [`observe()`](Self::observe) handle. What differs by transport (input,
/// output, timers, events, `ask_client`) stays on each engine.
///
/// A command answers or notifies at once: its output is written when it returns (drain
/// the engine's output then, as its docs say). Misuse of a ticket is reported as an
/// [`AnswerError`] or a [`NotifyError`], never a panic.
///
/// ```
/// use mcp_engine::{Catalog, Commands, Config, Content, Engine, Event, Instant, Tool, ToolOutput};
///
/// let catalog = Catalog::builder().tool(Tool::new("slow")).build()?;
/// let mut engine = Engine::new(Config::new("demo", "1.0"), catalog);
/// let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
/// "#;
/// engine.handle_input(Instant::ZERO, call);
/// let Some(Event::CallTool(event)) = engine.poll_event() else { unreachable!() };
/// let ticket = event.ticket; // kept: the host answers later
/// engine.answer_tool(ticket, &ToolOutput::new(&[Content::text("done")]))?;
/// assert!(std::str::from_utf8(engine.pending_output())?.contains("done"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// This trait is sealed: only the engines of this crate implement it.
pub trait Commands: Output {
    /// The configuration the engine was built with.
    #[inline]
    fn config(&self) -> &Config {
        self.shown().0.config()
    }

    /// The catalog being served.
    #[inline]
    fn catalog(&self) -> &Catalog {
        self.shown().0.catalog()
    }

    /// The catalog revision: 0 at start, one more with every replacement.
    #[inline]
    fn catalog_revision(&self) -> u64 {
        self.shown().0.catalog_revision()
    }

    /// Tickets handed out and not yet answered or cancelled.
    #[inline]
    fn in_flight(&self) -> usize {
        self.shown().0.in_flight()
    }

    /// How many tasks the engine holds (finished ones included, until their TTL).
    #[inline]
    fn tasks(&self) -> usize {
        self.shown().0.task_count()
    }

    /// How many `subscriptions/listen` streams are open.
    #[inline]
    fn subscriptions(&self) -> usize {
        self.shown().0.subscriptions()
    }

    /// The engine's records for the adapter's spans and metrics: requests the engine
    /// answered itself (over HTTP with the session and addresses of their connection),
    /// the host's answers when asked, the sessions that ended, output mismatches (see
    /// [`Observer`]).
    #[inline]
    fn observe(&mut self) -> Observer<'_> {
        Observer::new(self.lent().0)
    }

    /// The engine's connectome: declared and observed graphs and their diff, the host's
    /// declarations and reported reads (feature `connectome`; see
    /// [`Connectome`](crate::observe::Connectome)).
    #[cfg(feature = "connectome")]
    #[inline]
    fn connectome(&mut self) -> crate::observe::Connectome<'_> {
        crate::observe::Connectome::new(self.lent().0)
    }

    /// Answers a tool call. The result is written to the output at once (over HTTP, to
    /// the request's connection or stream).
    #[inline]
    fn answer_tool<S: Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        output: &ToolOutput<'_, S>,
    ) -> Result<(), AnswerError> {
        self.begin();
        let r = self.lent().0.answers().answer_tool(ticket, output);
        self.end(true);
        r
    }

    /// Answers a resource read with its contents. Empty `contents` are never sent: they
    /// are answered as "resource not found".
    #[inline]
    fn answer_resource(
        &mut self,
        ticket: Ticket,
        contents: &[ResourceContents<'_>],
    ) -> Result<(), AnswerError> {
        self.begin();
        let r = self.lent().0.answers().answer_resource(ticket, contents);
        self.end(true);
        r
    }

    /// Answers a prompt with its messages.
    #[inline]
    fn answer_prompt(&mut self, ticket: Ticket, output: &PromptOutput<'_>) -> Result<(), AnswerError> {
        self.begin();
        let r = self.lent().0.answers().answer_prompt(ticket, output);
        self.end(true);
        r
    }

    /// Answers a completion request with candidate values, most relevant first. At most
    /// 100 are sent; duplicates are dropped (the first kept); `total` (when known) and
    /// `has_more` are corrected so that they never claim less than was given.
    #[inline]
    fn answer_completion(
        &mut self,
        ticket: Ticket,
        values: &[&str],
        total: Option<u64>,
        has_more: bool,
    ) -> Result<(), AnswerError> {
        self.begin();
        let r = self.lent().0.answers().answer_completion(ticket, values, total, has_more);
        self.end(true);
        r
    }

    /// Answers a ticket with an error instead of a result (see [`HostError`] for the
    /// code each variant becomes).
    #[inline]
    fn answer_error(&mut self, ticket: Ticket, error: HostError<'_>) -> Result<(), AnswerError> {
        self.begin();
        let r = self.lent().0.answers().answer_error(ticket, None, error);
        self.end(true);
        r
    }

    /// Answers a `tools/call`, `prompts/get` or `resources/read` ticket of a `2026-07-28`
    /// request with `resultType: "input_required"`: the client must fulfil `input`'s
    /// requests and retry the request with their responses (the host then sees them in
    /// the event's `input_responses`, and its own state, verified, in `request_state`).
    ///
    /// Requests of a kind the client did not declare on that request are left out; when
    /// that leaves none, the client gets `-32021` with `data.requiredCapabilities` (check
    /// the event's `client` first to ask only for what it can give). With
    /// [`Config::request_state_key`] the answer carries a `requestState` sealed with
    /// HMAC-SHA256 and bound to the method, the request's name and arguments (or uri), an
    /// expiry and the keys asked for.
    ///
    /// # Errors
    ///
    /// [`AnswerError::InputRequiredUnsupported`] for a request under an earlier revision,
    /// [`AnswerError::WrongKind`] for a completion,
    /// [`AnswerError::InvalidInputRequest`] for duplicate or over-long keys, too many
    /// requests, nothing to send, or host state without a key; nothing is written and the
    /// ticket stays open for another answer.
    #[inline]
    fn answer_input_required(
        &mut self,
        ticket: Ticket,
        input: &InputRequired<'_>,
    ) -> Result<(), AnswerError> {
        self.begin();
        let r = self.lent().0.answers().answer_input_required(ticket, input);
        self.end(true);
        r
    }

    /// Turns the live tool call `ticket` into a task (the `io.modelcontextprotocol/tasks`
    /// extension, `2026-07-28`): the client is answered at once with the task's handle
    /// (`resultType: "task"`, its id, `working`, `ttlMs`, `pollIntervalMs`), and the
    /// returned task ticket carries the work from then on, for as long as the task lives
    /// (over HTTP, beyond the request's connection): answer it as the call
    /// ([`answer_tool`](Self::answer_tool): `completed`;
    /// [`answer_error`](Self::answer_error): `failed`;
    /// [`answer_input_required`](Self::answer_input_required): `input_required`, the
    /// client's answers coming back as the call's event again, with the task's ticket),
    /// report with [`task_status`](Self::task_status) (or
    /// [`notify_progress`](Self::notify_progress)'s message), and stop on
    /// [`Event::Cancelled`](crate::Event::Cancelled) (`tasks/cancel`, or the TTL passed).
    ///
    /// # Errors
    ///
    /// [`AnswerError::TaskRefused`] (nothing written, the ticket stays open: answer it as
    /// a plain call): tasks off or no entropy (the engine's `set_entropy`), a tool declared
    /// [`TaskSupport::Forbidden`](crate::TaskSupport::Forbidden), a client that did not
    /// declare the extension on this request, or [`Config::max_tasks`] /
    /// [`Config::max_tasks_per_principal`] reached.
    #[inline]
    fn start_task(&mut self, ticket: Ticket, options: &TaskOptions<'_>) -> Result<Ticket, AnswerError> {
        self.begin();
        let r = self.lent().0.answers().start_task(ticket, options);
        self.end(true);
        r
    }

    /// Sets the `statusMessage` of the task `ticket` (a task's ticket the host still works
    /// on); `None` clears it.
    #[inline]
    fn task_status(&mut self, ticket: Ticket, message: Option<&str>) -> Result<(), NotifyError> {
        self.begin();
        self.lent().0.answers().task_message(ticket, message)
    }

    /// Sends `notifications/progress` for a ticket whose request carried
    /// `_meta.progressToken` (over HTTP the response becomes an SSE stream that carries it
    /// before the result). `progress` must increase with every call; nothing can be sent
    /// once the ticket is answered or cancelled. `Err(Backpressure)`, with nothing
    /// written, while the output it would go on holds as much unsent as it may (stdio:
    /// [`Config::max_buffered_output`]; HTTP: 64 KiB on the connection).
    ///
    /// With a task's ticket `message` becomes the task's `statusMessage`. A `2025-11-25`
    /// task also sends `notifications/progress` under the token of the `tools/call` that
    /// created it (valid for the task's whole life), with
    /// `_meta["io.modelcontextprotocol/related-task"]`: `Err(NoProgressToken)` when that
    /// call carried none and `Err(NotIncreasing)` as for a call (the status message is set
    /// all the same), `Err(UnknownTicket)` once the task has ended. Over HTTP it goes on
    /// the stream of a `tasks/result` the creating session has waiting for the task, else
    /// on the standalone `GET` stream of the session that created it; with neither open
    /// here it is not sent. A `2026-07-28` task has no progress notifications: only the
    /// status message changes.
    #[inline]
    fn notify_progress(
        &mut self,
        ticket: Ticket,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), NotifyError> {
        self.begin();
        if self.backlogged(ticket, true) {
            return Err(NotifyError::Backpressure);
        }
        let r = self.lent().0.answers().notify_progress(ticket, progress, total, message);
        self.end(false);
        r
    }

    /// Sends `notifications/message` for a ticket, if the client asked for logs at `level`
    /// or below on that request ([`Config::logging`] must be on): otherwise
    /// [`NotifyError::Filtered`], and nothing is written. Nothing can be sent once the
    /// ticket is answered or cancelled; `Err(Backpressure)` as for
    /// [`notify_progress`](Self::notify_progress). Over HTTP the response becomes an SSE
    /// stream that carries it before the result.
    #[inline]
    fn notify_log<S: Serialize + ?Sized>(
        &mut self,
        ticket: Ticket,
        level: LogLevel,
        logger: Option<&str>,
        data: &S,
    ) -> Result<(), NotifyError> {
        self.begin();
        if self.backlogged(ticket, false) {
            return Err(NotifyError::Backpressure);
        }
        let r = self.lent().0.answers().notify_log(ticket, level, logger, data);
        self.end(false);
        r
    }

    /// Lets the connection of `ticket`'s request go while the host works on it: over a
    /// session-bound HTTP stream (`2025-11-25`, `2025-06-18`) the response becomes an SSE
    /// stream if it is not one yet, ends with a `retry:` field of `retry`, and the
    /// request goes on; the client comes back with `GET` and `Last-Event-ID` and gets
    /// what was written meanwhile, then the rest (SSE polling). Returns `Ok(false)` where
    /// there is no such stream (stdio, stateless requests, HTTP/1.0): nothing changes.
    #[inline]
    fn reconnect_later(&mut self, ticket: Ticket, retry: core::time::Duration) -> Result<bool, NotifyError> {
        self.begin();
        let r = self.lent().0.answers().reconnect_later(ticket, retry);
        self.end(true);
        r
    }

    /// Replaces the catalog atomically and tells the clients that watch for it which
    /// lists changed: every `subscriptions/listen` stream that asked for that kind of
    /// change (and, with [`Config::list_changed`] on, a session-bound client gets the
    /// legacy `notifications/*/list_changed`). The catalog revision advances.
    ///
    /// Requests already handed to the host keep going; a tool call answered later is
    /// checked against the output schema of the tool of the same name in the new catalog
    /// (none if it is gone). List cursors stay valid (they are keys, not offsets).
    ///
    /// # Errors
    ///
    /// Refused, with nothing changed, when the new catalog adds or drops a whole family
    /// (the advertised capabilities would change) or while an event waits to be polled.
    #[inline]
    fn replace_catalog(&mut self, catalog: Catalog) -> Result<CatalogChange, ReplaceError> {
        self.begin();
        let r = self.lent().0.replace_catalog(catalog);
        if let Ok(change) = r {
            self.list_changed(change);
        }
        self.end(true);
        r
    }

    /// Sends `notifications/resources/updated` for `uri` to every subscription that
    /// watches it or a uri it is a sub-resource of (`uri` continues the subscribed one
    /// after `/`, `?` or `#`), and to a session-bound client that subscribed with
    /// `resources/subscribe`. Returns how many notifications were written. Nothing is
    /// sent unless [`Config::resource_subscriptions`] is on.
    #[inline]
    fn notify_resource_updated(&mut self, uri: &str) -> usize {
        self.begin();
        let n = self.lent().0.notify_resource_updated(uri) + self.resource_updated(uri);
        self.end(false);
        n
    }

    /// Ends every `subscriptions/listen` stream from the server's side (before a shutdown,
    /// say): each gets its graceful result, and on stdio `notifications/cancelled` naming
    /// it. Returns how many were ended.
    #[inline]
    fn end_subscriptions(&mut self) -> usize {
        self.begin();
        let n = self.lent().0.end_subscriptions();
        self.end(true);
        n
    }
}
