//! Handler tasks, shared by every run loop: starting the work of an engine [`Event`],
//! aborting it when cancelled, and answering its ticket when it finishes.

use mcp_engine::Commands;
use std::collections::HashMap;
use std::sync::Arc;

use mcp_engine::error::{AnswerError, HostError};
use mcp_engine::event::{AskError, ClientAsk};
use mcp_engine::http::HttpEngine;
use mcp_engine::mrtr::{InputRequest, InputRequestBuf, InputRequired};
use mcp_engine::{Content, Engine, Event, PromptMessage, PromptOutput, ResourceContents, Ticket, ToolOutput};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::task::AbortHandle;
use tracing::Instrument;

use crate::host::channel::{AskClientError, Completion, Outcome, Progress, Publish};
use crate::host::handler::Handler;
use crate::host::reply::{
    OwnedContent, OwnedPromptMessage, OwnedResourceContents, PromptReply, ResourceReply, ToolReply,
};
use crate::host::request::{CompletionRequest, Pools, PromptGet, ResourceRead, ToolCall};
use crate::host::strings::Names;
use crate::telemetry::{self, Telemetry, Wire};

/// Sends [`Outcome::Dropped`] if the work ends without sending its reply (its task
/// panicked, or was aborted), so a panicking handler is answered rather than leaving its
/// ticket open forever.
struct Guard<'a> {
    tx: Option<&'a mpsc::UnboundedSender<Completion>>,
    ticket: Ticket,
}

impl Guard<'_> {
    fn send(mut self, outcome: Outcome) {
        if let Some(tx) = self.tx.take() {
            // The receiver is gone only once the run loop has returned.
            let _ = tx.send(Completion { ticket: Some(self.ticket), outcome });
        }
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Completion { ticket: Some(self.ticket), outcome: Outcome::Dropped });
        }
    }
}

/// The work of one request, for a worker.
struct Job {
    ticket: Ticket,
    /// Made where the request was dispatched, so that it has the run loop's span as parent.
    span: tracing::Span,
    work: Work,
}

enum Work {
    Tool(ToolCall),
    Resource(ResourceRead),
    Prompt(PromptGet),
    Complete(CompletionRequest),
}

impl Work {
    /// The method and the tool or prompt it names, as its metric point records them.
    #[cfg(feature = "otel")]
    fn target(&self) -> telemetry::otel::Target {
        use crate::telemetry::otel::Target;
        match self {
            Self::Tool(call) => Target::Tool(call.name.clone()),
            Self::Prompt(get) => Target::Prompt(get.name.clone()),
            Self::Resource(_) => Target::Method("resources/read"),
            Self::Complete(_) => Target::Method("completion/complete"),
        }
    }
}

/// A task that runs handler futures, one request at a time, and waits for the next
/// request in between: a request needs no task (nor a heap allocation) of its own.
struct Worker {
    jobs: mpsc::Sender<Job>,
    task: AbortHandle,
}

impl Worker {
    fn start<H: Handler>(handler: &Arc<H>, tx: &mpsc::UnboundedSender<Completion>) -> Self {
        // One job at a time: a worker is given one only while idle.
        let (jobs, rx) = mpsc::channel(1);
        let task = tokio::spawn(work(Arc::clone(handler), rx, tx.clone()));
        Self { jobs, task: task.abort_handle() }
    }
}

/// A worker's loop: runs each job's handler future and sends its outcome, until the
/// run loop drops the worker (or aborts its task, to cancel the request it runs).
async fn work<H: Handler>(
    handler: Arc<H>,
    mut jobs: mpsc::Receiver<Job>,
    tx: mpsc::UnboundedSender<Completion>,
) {
    while let Some(Job { ticket, span, work }) = jobs.recv().await {
        let guard = Guard { tx: Some(&tx), ticket };
        let outcome = async {
            match work {
                Work::Tool(call) => Outcome::Tool(handler.call_tool(call).await),
                Work::Resource(read) => Outcome::Resource(handler.read_resource(read).await),
                Work::Prompt(get) => Outcome::Prompt(handler.get_prompt(get).await),
                Work::Complete(request) => Outcome::Complete(handler.complete(request).await),
            }
        }
        .instrument(span)
        .await;
        guard.send(outcome);
    }
}

/// What differs between the two engines for a handler's reply: `ask_client`, whose
/// signatures differ. Everything else is answered over [`Commands`], written once.
pub(crate) trait AskClient: Commands {
    /// Sends `request` to a session's client outside any request (`session`: over HTTP,
    /// the session id; ignored on stdio).
    fn ask(&mut self, session: Option<&str>, request: &InputRequest<'_>) -> Result<ClientAsk, AskError>;
}

impl AskClient for Engine {
    fn ask(&mut self, _session: Option<&str>, request: &InputRequest<'_>) -> Result<ClientAsk, AskError> {
        self.ask_client(request)
    }
}

impl AskClient for HttpEngine {
    fn ask(&mut self, session: Option<&str>, request: &InputRequest<'_>) -> Result<ClientAsk, AskError> {
        self.ask_client(session.ok_or(AskError::NoSession)?, request)
    }
}

/// Answers a tool call; an output that does not match the tool's schema is logged (the
/// client got a generic tool error; the developer gets the reason).
fn answer_tool(
    engine: &mut impl Commands,
    ticket: Ticket,
    output: &ToolOutput<'_, serde_json::Value>,
) -> Result<(), AnswerError> {
    let r = engine.answer_tool(ticket, output);
    if let Some(m) = engine.observe().take_output_mismatch() {
        tracing::warn!(
            tool = %m.tool,
            path = %m.path,
            error = %m.message,
            "the tool's structuredContent does not match its output schema"
        );
    }
    r
}

/// Carries out what a [`Publisher`](crate::handler::Publisher) sent (but `AskClient`, which
/// [`Tasks::complete`] takes: it keeps the reply's sender).
fn publish(engine: &mut impl Commands, p: Publish) {
    match p {
        #[cfg(feature = "connectome")]
        Publish::Observed(reply) => {
            let _ = reply.send(engine.connectome().observed());
        }
        Publish::Catalog(catalog, reply) => {
            let r = engine.replace_catalog(*catalog);
            if let Err(e) = &r {
                tracing::warn!(%e, "catalog replacement refused");
            }
            let _ = reply.send(r);
        }
        Publish::ResourceUpdated(uri) => {
            let n = engine.notify_resource_updated(&uri);
            // The scheme only, as for reads: the host's uri may name private things.
            let scheme = uri.split_once(':').map_or("", |(s, _)| s);
            tracing::debug!(scheme, uri_len = uri.len(), subscribers = n, "resource updated");
        }
        Publish::EndSubscriptions => {
            let n = engine.end_subscriptions();
            tracing::debug!(subscriptions = n, "subscriptions ended");
        }
        Publish::AskClient { reply, .. } => {
            let _ = reply.send(Err(AskClientError::Stopped));
        }
    }
}

/// A request with the handler: its worker, its span (given the outcome once the reply
/// comes back) and its revision.
struct Running {
    worker: Worker,
    span: tracing::Span,
    revision: mcp_engine::Revision,
    /// Its `mcp.server.operation.duration` point, begun (feature `otel`, with a meter).
    #[cfg(feature = "otel")]
    point: Option<telemetry::otel::Point>,
}

/// The workers running handler futures, by ticket, the idle ones, and the channel their
/// replies come back on. Aborts them all when dropped.
pub(crate) struct Tasks {
    running: HashMap<Ticket, Running>,
    /// Workers waiting for a request: as many as ran at once, at most.
    idle: Vec<Worker>,
    tx: mpsc::UnboundedSender<Completion>,
    /// The catalog names handed to handlers, one shared copy each.
    names: Names,
    /// Buffers for the text copied out of requests (and the client's input responses),
    /// back once a handler drops them.
    pools: Pools,
    /// Room for the borrowed form of a reply of several blocks, kept empty between uses.
    scratch: Scratch,
    /// Progress and log reports of every running call waiting for the run loop.
    reports: Arc<std::sync::atomic::AtomicUsize>,
    /// The transport, and what the request spans record (see `telemetry`).
    wire: Wire,
    telemetry: Telemetry,
    /// When the run loop last read input (the engine's time): where the points of the
    /// requests the engine answers itself begin.
    received: mcp_engine::Instant,
    /// The sessions timed for their duration point.
    sessions: telemetry::SessionClock,
    /// Calls whose handler made them tasks: the call's ticket (what its worker still
    /// reports with) to the task's, until the worker's reply comes back.
    became: HashMap<Ticket, Ticket>,
    /// Requests sent to clients outside any request, waiting for their replies.
    asks: HashMap<ClientAsk, tokio::sync::oneshot::Sender<Result<serde_json::Value, AskClientError>>>,
}

/// Vectors reused, empty, for the borrowed forms of replies. They hold `'static` items
/// between uses and are turned into vectors of borrowed items (the same layout) in place.
#[derive(Default)]
struct Scratch {
    content: Vec<Content<'static>>,
    resources: Vec<ResourceContents<'static>>,
    messages: Vec<PromptMessage<'static>>,
    values: Vec<&'static str>,
    requests: Vec<InputRequest<'static>>,
}

/// Evaluates `$body` with `$items`, the scratch vector `$v` turned into a vector of items
/// of a shorter lifetime, then takes its allocation back, emptied. (Collecting a vector's
/// `into_iter` into a vector of items of the same layout reuses its allocation: the
/// allocation test of a reply of two blocks checks it.)
macro_rules! with_scratch {
    ($v:expr, |$items:ident| $body:expr) => {{
        let mut $items: Vec<_> = std::mem::take(&mut $v).into_iter().filter_map(|_| None).collect();
        let out = $body;
        $items.clear();
        $v = $items.into_iter().filter_map(|_| None).collect();
        out
    }};
}

impl Drop for Tasks {
    fn drop(&mut self) {
        for (_, running) in self.running.drain() {
            running.worker.task.abort();
        }
        for worker in self.idle.drain(..) {
            worker.task.abort();
        }
    }
}

impl Tasks {
    /// No tasks yet, and the receiver their replies come back on. The channel is
    /// unbounded: it holds one reply per running task (the engine's in-flight limit bounds
    /// those) plus the progress reports handlers send, which the run loop takes as they come.
    pub(crate) fn new() -> (Self, mpsc::UnboundedReceiver<Completion>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self::with_sender(tx), rx)
    }

    /// No tasks yet; replies go to `tx` (whose receiver the caller already has).
    pub(crate) fn with_sender(tx: mpsc::UnboundedSender<Completion>) -> Self {
        Self {
            running: HashMap::new(),
            idle: Vec::new(),
            tx,
            names: Names::default(),
            pools: Pools::default(),
            scratch: Scratch::default(),
            reports: Arc::default(),
            wire: Wire::PIPE,
            telemetry: Telemetry::default(),
            received: mcp_engine::Instant::ZERO,
            sessions: telemetry::SessionClock::default(),
            became: HashMap::new(),
            asks: HashMap::new(),
        }
    }

    /// The transport the request spans name, and what they record.
    pub(crate) fn set_telemetry(&mut self, wire: Wire, telemetry: Telemetry) {
        self.wire = wire;
        self.telemetry = telemetry;
    }

    /// Says the run loop read input at `now` (the engine's time).
    pub(crate) fn received(&mut self, now: mcp_engine::Instant) {
        self.received = now;
    }

    /// Makes the spans (and metric points) of the requests `engine` answered itself.
    pub(crate) fn served(&mut self, engine: &mut impl Commands) {
        telemetry::served(engine, self.wire, &self.telemetry, self.received, &mut self.sessions);
    }

    /// Logs (and, with feature `otel`, counts) the requests the HTTP engine refused.
    pub(crate) fn refusals(&mut self, engine: &mut HttpEngine) {
        telemetry::refusals(engine, &self.telemetry, &mut self.sessions);
    }

    /// The stream ended at `now` (the engine's time): its session, if any, did too.
    pub(crate) fn stream_ended(&mut self, now: mcp_engine::Instant) {
        telemetry::stream_ended(self.wire, &self.telemetry, now, &mut self.sessions);
    }

    /// Whether any task is running.
    pub(crate) fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Whether a client is asked something outside any request (its reply is awaited).
    pub(crate) fn asking(&self) -> bool {
        !self.asks.is_empty()
    }

    /// Starts the work of one event, or aborts the work of a cancelled one.
    pub(crate) fn dispatch<H: Handler>(&mut self, handler: &Arc<H>, event: Event<'_>) {
        // The request's span (`telemetry`): nothing is evaluated unless a subscriber wants it.
        let span = telemetry::request_span(&event, self.wire, &self.telemetry);
        let revision = match &event {
            Event::CallTool(c) => c.revision,
            Event::ReadResource(r) => r.revision,
            Event::GetPrompt(p) => p.revision,
            Event::Complete(c) => c.revision,
            _ => mcp_engine::Revision::LATEST_LEGACY,
        };
        let (ticket, work) = match event {
            Event::CallTool(call) => {
                let progress = Progress::new(self.tx.clone(), call.ticket, Arc::clone(&self.reports));
                let request = ToolCall::from_event(&call, progress, &mut self.names, &self.pools);
                (call.ticket, Work::Tool(request))
            }
            Event::ReadResource(read) => {
                let request = ResourceRead::from_event(&read, &mut self.names, &self.pools);
                (read.ticket, Work::Resource(request))
            }
            Event::GetPrompt(get) => {
                let request = PromptGet::from_event(&get, &mut self.names, &self.pools);
                (get.ticket, Work::Prompt(request))
            }
            Event::Complete(complete) => {
                let request = CompletionRequest::from_event(&complete, &self.pools);
                (complete.ticket, Work::Complete(request))
            }
            Event::ClientReply(reply) => {
                let outcome = match reply.result {
                    Ok(v) => serde_json::from_str(v.raw())
                        .map_err(|e| AskClientError::Failed { code: -32700, message: e.to_string() }),
                    Err(e) => {
                        Err(AskClientError::Failed { code: e.code(), message: e.message().into_owned() })
                    }
                };
                match self.asks.remove(&reply.ask) {
                    Some(tx) => {
                        let _ = tx.send(outcome);
                    }
                    None => tracing::debug!(ask = ?reply.ask, "a client's reply nobody waits for"),
                }
                return;
            }
            Event::Cancelled(ticket) => {
                match self.running.remove(&ticket) {
                    Some(running) => {
                        // Its worker goes with it (it may have finished already, its reply on
                        // the way): a new one starts when needed.
                        tracing::debug!(?ticket, "request cancelled: aborting its handler");
                        let verdict = telemetry::Verdict::Cancelled;
                        telemetry::record_outcome(&running.span, verdict, &self.telemetry);
                        #[cfg(feature = "otel")]
                        if let (Some(metrics), Some(point)) = (&self.telemetry.metrics, running.point) {
                            metrics.finished(point, verdict, self.wire);
                        }
                        running.worker.task.abort();
                    }
                    None => tracing::debug!(?ticket, "request cancelled after its reply"),
                }
                return;
            }
            other => {
                tracing::warn!(event = ?other, "ignoring an event this adapter does not know");
                return;
            }
        };
        #[cfg(feature = "otel")]
        let point =
            self.telemetry.metrics.as_ref().map(|_| telemetry::otel::Point::begin(work.target(), revision));
        let mut job = Job { ticket, span: span.clone(), work };
        loop {
            let worker = self.idle.pop().unwrap_or_else(|| Worker::start(handler, &self.tx));
            match worker.jobs.try_send(job) {
                Ok(()) => {
                    #[cfg(feature = "otel")]
                    let running = Running { worker, span, revision, point };
                    #[cfg(not(feature = "otel"))]
                    let running = Running { worker, span, revision };
                    self.running.insert(ticket, running);
                    return;
                }
                // Not a worker that is waiting: it is dropped, and another one tried.
                Err(TrySendError::Full(back) | TrySendError::Closed(back)) => {
                    worker.task.abort();
                    job = back;
                }
            }
        }
    }

    /// Answers a finished handler task's ticket on `engine`.
    pub(crate) fn complete(&mut self, engine: &mut impl AskClient, done: Completion) {
        let Completion { ticket, outcome } = done;
        let outcome = match outcome {
            Outcome::Publish(Publish::AskClient { session, request, reply }) => {
                match engine.ask(session.as_deref(), &request.as_request()) {
                    Ok(ask) => {
                        self.asks.insert(ask, reply);
                    }
                    Err(e) => {
                        let _ = reply.send(Err(AskClientError::Refused(e)));
                    }
                }
                return;
            }
            Outcome::Publish(p) => {
                if let Publish::Catalog(..) = p {
                    // Names of the old catalog are not needed any more.
                    self.names.clear();
                }
                return publish(engine, p);
            }
            other => other,
        };
        let Some(mut ticket) = ticket else { return };
        // A call its handler made a task: what its worker sends is the task's.
        let reports = matches!(
            outcome,
            Outcome::Progress { .. }
                | Outcome::Log { .. }
                | Outcome::Reconnect { .. }
                | Outcome::StartTask { .. }
                | Outcome::TaskStatus { .. }
        );
        let renamed = if reports { self.became.get(&ticket).copied() } else { self.became.remove(&ticket) };
        ticket = renamed.unwrap_or(ticket);
        if let Outcome::StartTask { options, reply } = outcome {
            let r = match self.running.contains_key(&ticket) {
                true => engine.start_task(ticket, &options.as_options()),
                false => Err(AnswerError::UnknownTicket),
            };
            let started = r.map(|task| {
                if let Some(running) = self.running.remove(&ticket) {
                    self.running.insert(task, running);
                }
                self.became.insert(ticket, task);
                tracing::debug!(?ticket, ?task, "the call became a task");
            });
            let _ = reply.send(started);
            return;
        }
        if let Outcome::TaskStatus { message, .. } = &outcome {
            if self.running.contains_key(&ticket)
                && let Err(e) = engine.task_status(ticket, message.as_deref())
            {
                tracing::debug!(?ticket, %e, "task status dropped");
            }
            return;
        }
        if let Outcome::Progress { progress, total, message, .. } = &outcome {
            if self.running.contains_key(&ticket)
                && let Err(e) = engine.notify_progress(ticket, *progress, *total, message.as_deref())
            {
                tracing::debug!(?ticket, %e, "progress report dropped");
            }
            return;
        }
        #[cfg(feature = "connectome")]
        if let Outcome::Read { tool, uri, .. } = &outcome {
            // Counted even for a call cancelled since: the read happened.
            if !engine.connectome().report_read(tool, uri) {
                tracing::debug!(?ticket, %tool, uri_len = uri.len(), "read report not counted");
            }
            return;
        }
        if let Outcome::Reconnect { retry } = &outcome {
            if self.running.contains_key(&ticket)
                && let Err(e) = engine.reconnect_later(ticket, *retry)
            {
                tracing::debug!(?ticket, %e, "reconnect request dropped");
            }
            return;
        }
        if let Outcome::Log { level, logger, data, .. } = &outcome {
            if self.running.contains_key(&ticket)
                && let Err(e) = engine.notify_log(ticket, *level, logger.as_deref(), data)
            {
                tracing::trace!(?ticket, %e, "log message dropped");
            }
            return;
        }
        let Some(running) = self.running.remove(&ticket) else {
            // Cancelled while its reply was on its way: the engine must not answer it.
            tracing::debug!(?ticket, "dropping the reply of a cancelled request");
            return;
        };
        let verdict = telemetry::verdict(&outcome, running.revision);
        telemetry::record_outcome(&running.span, verdict, &self.telemetry);
        #[cfg(feature = "otel")]
        if let (Some(metrics), Some(point)) = (&self.telemetry.metrics, running.point) {
            metrics.finished(point, verdict, self.wire);
        }
        let Running { worker, span: _span, .. } = running;
        if !matches!(outcome, Outcome::Dropped) {
            // Done with this request, the worker waits for the next one (one that ended
            // without a reply is gone).
            self.idle.push(worker);
        }
        let result = match outcome {
            Outcome::Tool(Ok(ToolReply { input_required: Some(input), .. }))
            | Outcome::Prompt(Ok(PromptReply { input_required: Some(input), .. }))
            | Outcome::Resource(Ok(ResourceReply::InputRequired(input))) => {
                let answered = with_scratch!(self.scratch.requests, |v| {
                    v.extend(input.requests.iter().map(InputRequestBuf::as_request));
                    let mut ir = InputRequired::new(&v);
                    if let Some(state) = &input.state {
                        ir = ir.state(state);
                    }
                    engine.answer_input_required(ticket, &ir)
                });
                answered.or_else(|e| {
                    // The ticket is still open: answer it rather than leave it hanging.
                    tracing::warn!(?ticket, %e, "the engine refused an input-required reply");
                    engine.answer_error(
                        ticket,
                        HostError::Internal("the handler asked for input this request cannot carry"),
                    )
                })
            }
            Outcome::Tool(Ok(reply)) => {
                let mut answer = |content: &[Content<'_>]| {
                    let output = ToolOutput {
                        content,
                        structured_content: reply.structured_content.as_ref(),
                        is_error: reply.is_error,
                    };
                    answer_tool(engine, ticket, &output)
                };
                match &*reply.content {
                    [one] => answer(&[one.as_content()]),
                    many => with_scratch!(self.scratch.content, |v| {
                        v.extend(many.iter().map(OwnedContent::as_content));
                        answer(&v)
                    }),
                }
            }
            Outcome::Resource(Ok(ResourceReply::Contents(contents))) => match &*contents {
                [one] => engine.answer_resource(ticket, &[one.as_contents()]),
                many => with_scratch!(self.scratch.resources, |v| {
                    v.extend(many.iter().map(OwnedResourceContents::as_contents));
                    engine.answer_resource(ticket, &v)
                }),
            },
            Outcome::Resource(Ok(ResourceReply::NotFound)) => {
                engine.answer_error(ticket, HostError::NotFound)
            }
            Outcome::Prompt(Ok(reply)) => {
                let mut answer = |messages: &[PromptMessage<'_>]| {
                    let output = PromptOutput { description: reply.description.as_deref(), messages };
                    engine.answer_prompt(ticket, &output)
                };
                match &*reply.messages {
                    [one] => answer(&[one.as_message()]),
                    many => with_scratch!(self.scratch.messages, |v| {
                        v.extend(many.iter().map(OwnedPromptMessage::as_message));
                        answer(&v)
                    }),
                }
            }
            Outcome::Complete(Ok(reply)) => with_scratch!(self.scratch.values, |v| {
                v.extend(reply.values.iter().map(String::as_str));
                engine.answer_completion(ticket, &v, reply.total, reply.has_more)
            }),
            Outcome::Tool(Err(failure))
            | Outcome::Resource(Err(failure))
            | Outcome::Prompt(Err(failure))
            | Outcome::Complete(Err(failure)) => {
                tracing::debug!(?ticket, %failure, "handler failed");
                engine.answer_error(ticket, failure.as_host_error())
            }
            Outcome::Progress { .. }
            | Outcome::Log { .. }
            | Outcome::Reconnect { .. }
            | Outcome::StartTask { .. }
            | Outcome::TaskStatus { .. }
            | Outcome::Publish(_) => Ok(()),
            #[cfg(feature = "connectome")]
            Outcome::Read { .. } => Ok(()),
            Outcome::Dropped => {
                tracing::error!(?ticket, "a handler task ended without a reply (did it panic?)");
                engine.answer_error(ticket, HostError::Internal("the handler failed"))
            }
        };
        if let Err(e) = result {
            tracing::warn!(?ticket, %e, "the engine refused an answer");
        }
    }
}
