//! The run loop: one task owns the engine, handler futures run in their own tasks.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use mcp_engine::{
    Content, Engine, Event, HostError, Instant, PromptMessage, PromptOutput, ResourceContents, Ticket,
    ToolOutput,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tracing::Instrument;

use crate::handler::{Handler, PromptResult, ResourceResult, ToolResult};
use crate::reply::{OwnedContent, OwnedPromptMessage, OwnedResourceContents, ResourceReply};
use crate::request::{PromptGet, ResourceRead, ToolCall};

/// Bytes read from the client at a time.
const READ_BUF_LEN: usize = 64 * 1024;

/// Serves one MCP stream: reads newline-delimited JSON-RPC from `reader`, writes the
/// engine's output to `writer`, and runs the work the engine hands out on `handler`.
///
/// The calling task owns the engine. Each tool call, resource read or prompt request
/// becomes a [`tokio::spawn`]ed task running the [`Handler`] future; its reply comes back
/// over a channel and is answered on the engine, in whatever order replies finish. A
/// request the client cancels (`notifications/cancelled`) has its task aborted and is
/// never answered.
///
/// # Backpressure
///
/// Input is read only while the engine can take it. When the engine pauses (its
/// in-flight limit, [`Config::max_in_flight`](mcp_engine::Config::max_in_flight), is
/// reached, or too much output waits for a slow client) the bytes it did not take are
/// kept and offered again once it resumes, and nothing more is read meanwhile. So the
/// number of handler tasks running at once never exceeds the in-flight limit, and at
/// most one read buffer (64 KiB) plus the engine's one-frame input buffer are held.
///
/// Output is written with cancel-safe partial writes while input is still being read,
/// and `writer` is flushed whenever the engine has no more output.
///
/// # Termination
///
/// Returns `Ok(())` once `reader` hit end of file, every request was answered (or
/// cancelled) and all output was written and flushed. `writer` is flushed but not shut
/// down; it is dropped on return. Returns the first I/O error of `reader` or `writer`
/// otherwise. Handler tasks still running when `serve` returns (or is dropped) are
/// aborted.
///
/// Must run inside a tokio runtime (it spawns tasks).
pub async fn serve<R, W, H>(engine: Engine, handler: Arc<H>, mut reader: R, mut writer: W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    H: Handler,
{
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut d = Driver {
        engine,
        handler,
        tx,
        tasks: Tasks(HashMap::new()),
        start: std::time::Instant::now(),
        read_buf: vec![0; READ_BUF_LEN].into_boxed_slice(),
        held: 0..0,
        read_eof: false,
        eof_sent: false,
    };
    let mut need_flush = false;
    tracing::debug!("serving");
    loop {
        d.pump();
        if d.engine.is_finished() && !need_flush {
            break;
        }
        let can_read = !d.read_eof && d.held.is_empty() && d.engine.input_capacity() > 0;
        let has_output = !d.engine.pending_output().is_empty();
        let waiting = !d.tasks.0.is_empty();
        tokio::select! {
            biased;
            Some(done) = rx.recv(), if waiting => d.complete(done),
            written = write_or_flush(&mut writer, d.engine.pending_output()), if has_output || need_flush => {
                match written? {
                    Some(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Some(n) => {
                        tracing::trace!(bytes = n, "wrote");
                        d.engine.consume_output(n);
                        need_flush = true;
                    }
                    None => need_flush = false,
                }
            }
            read = reader.read(&mut d.read_buf), if can_read => match read {
                Ok(0) => {
                    tracing::debug!("input closed");
                    d.read_eof = true;
                }
                Ok(n) => {
                    tracing::trace!(bytes = n, "read");
                    d.held = 0..n;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            },
            else => {
                // Nothing to read, write or wait for, yet the engine is not finished.
                tracing::error!(engine = ?d.engine, "the engine stalled");
                return Err(io::Error::other("mcp-io-tokio: the engine stalled with nothing to do"));
            }
        }
    }
    writer.flush().await?;
    tracing::debug!(frames = d.engine.frames_processed(), "finished");
    Ok(())
}

/// Serves one MCP stream over the process's standard input and output
/// ([`tokio::io::stdin`], [`tokio::io::stdout`]); see [`serve`].
///
/// Nothing but JSON-RPC is written to stdout: log through `tracing` to stderr.
///
/// tokio reads stdin on a blocking thread, and a runtime being dropped waits for its
/// blocking threads. When `serve_stdio` returns an error, a read of stdin may still be
/// pending: end the runtime with
/// [`Runtime::shutdown_background`](tokio::runtime::Runtime::shutdown_background) (or
/// exit the process) rather than dropping it, or the process lingers until stdin closes.
pub async fn serve_stdio<H: Handler>(engine: Engine, handler: Arc<H>) -> io::Result<()> {
    serve(engine, handler, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Writes some of `out`, or flushes when it is empty: `Some(bytes written)` or `None`
/// (flushed). Cancel-safe, so it can sit in `select!`: a `write` dropped before it completes
/// wrote nothing, and a dropped `flush` is simply tried again (unlike `write_all`, which
/// loses track of a partial write when dropped).
async fn write_or_flush<W: AsyncWrite + Unpin>(writer: &mut W, out: &[u8]) -> io::Result<Option<usize>> {
    if out.is_empty() {
        writer.flush().await?;
        Ok(None)
    } else {
        writer.write(out).await.map(Some)
    }
}

/// What a handler task sends back.
struct Completion {
    ticket: Ticket,
    outcome: Outcome,
}

enum Outcome {
    Tool(ToolResult),
    Resource(ResourceResult),
    Prompt(PromptResult),
    /// The task ended without a reply: it panicked, or was aborted.
    Dropped,
}

/// Sends [`Outcome::Dropped`] if the task ends without sending its reply, so a panicking
/// handler is answered rather than leaving its ticket open forever.
struct Guard {
    tx: Option<mpsc::UnboundedSender<Completion>>,
    ticket: Ticket,
}

impl Guard {
    fn send(mut self, outcome: Outcome) {
        if let Some(tx) = self.tx.take() {
            // The receiver is gone only once `serve` has returned.
            let _ = tx.send(Completion { ticket: self.ticket, outcome });
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Completion { ticket: self.ticket, outcome: Outcome::Dropped });
        }
    }
}

/// The running handler tasks, by ticket. Aborts them all when dropped.
struct Tasks(HashMap<Ticket, AbortHandle>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for (_, task) in self.0.drain() {
            task.abort();
        }
    }
}

struct Driver<H> {
    engine: Engine,
    handler: Arc<H>,
    tx: mpsc::UnboundedSender<Completion>,
    tasks: Tasks,
    start: std::time::Instant,
    read_buf: Box<[u8]>,
    /// The part of `read_buf` the engine has not taken yet.
    held: Range<usize>,
    read_eof: bool,
    eof_sent: bool,
}

impl<H: Handler> Driver<H> {
    fn now(&self) -> Instant {
        Instant::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// Offers held input (and the end of input once all of it is taken), then drains
    /// events, until neither makes progress.
    fn pump(&mut self) {
        loop {
            let now = self.now();
            let mut progress = false;
            if !self.held.is_empty() {
                let taken = self.engine.handle_input(now, &self.read_buf[self.held.clone()]);
                self.held.start += taken;
                progress |= taken > 0;
            }
            if self.read_eof && self.held.is_empty() && !self.eof_sent {
                self.eof_sent = true;
                self.engine.handle_eof(now);
                progress = true;
            }
            while let Some(event) = self.engine.poll_event() {
                progress = true;
                dispatch(&mut self.tasks, &self.handler, &self.tx, event);
            }
            if !progress {
                break;
            }
        }
    }

    /// Answers a finished handler task's ticket.
    fn complete(&mut self, done: Completion) {
        let Completion { ticket, outcome } = done;
        if self.tasks.0.remove(&ticket).is_none() {
            // Cancelled while its reply was on its way: the engine must not answer it.
            tracing::debug!(?ticket, "dropping the reply of a cancelled request");
            return;
        }
        let engine = &mut self.engine;
        let result = match outcome {
            Outcome::Tool(Ok(reply)) => {
                let content: Vec<Content<'_>> = reply.content.iter().map(OwnedContent::as_content).collect();
                let output = ToolOutput {
                    content: &content,
                    structured_content: reply.structured_content.as_ref(),
                    is_error: reply.is_error,
                };
                engine.answer_tool(ticket, &output)
            }
            Outcome::Resource(Ok(ResourceReply::Contents(contents))) => {
                let contents: Vec<ResourceContents<'_>> =
                    contents.iter().map(OwnedResourceContents::as_contents).collect();
                engine.answer_resource(ticket, &contents)
            }
            Outcome::Resource(Ok(ResourceReply::NotFound)) => {
                engine.answer_error(ticket, HostError::NotFound)
            }
            Outcome::Prompt(Ok(reply)) => {
                let messages: Vec<PromptMessage<'_>> =
                    reply.messages.iter().map(OwnedPromptMessage::as_message).collect();
                let output = PromptOutput { description: reply.description.as_deref(), messages: &messages };
                engine.answer_prompt(ticket, &output)
            }
            Outcome::Tool(Err(failure)) | Outcome::Resource(Err(failure)) | Outcome::Prompt(Err(failure)) => {
                tracing::debug!(?ticket, %failure, "handler failed");
                engine.answer_error(ticket, failure.as_host_error())
            }
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

/// Starts the work of one event, or aborts the task of a cancelled one.
fn dispatch<H: Handler>(
    tasks: &mut Tasks,
    handler: &Arc<H>,
    tx: &mpsc::UnboundedSender<Completion>,
    event: Event<'_>,
) {
    match event {
        Event::CallTool(call) => {
            let request = ToolCall::from_event(&call);
            let span = tracing::debug_span!("tools/call", tool = %request.name);
            let h = Arc::clone(handler);
            spawn(
                tasks,
                tx,
                call.ticket,
                async move { Outcome::Tool(h.call_tool(request).await) }.instrument(span),
            );
        }
        Event::ReadResource(read) => {
            let request = ResourceRead::from_event(&read);
            let span = tracing::debug_span!("resources/read", uri = %request.uri);
            let h = Arc::clone(handler);
            spawn(
                tasks,
                tx,
                read.ticket,
                async move { Outcome::Resource(h.read_resource(request).await) }.instrument(span),
            );
        }
        Event::GetPrompt(get) => {
            let request = PromptGet::from_event(&get);
            let span = tracing::debug_span!("prompts/get", prompt = %request.name);
            let h = Arc::clone(handler);
            spawn(
                tasks,
                tx,
                get.ticket,
                async move { Outcome::Prompt(h.get_prompt(request).await) }.instrument(span),
            );
        }
        Event::Cancelled(ticket) => match tasks.0.remove(&ticket) {
            Some(task) => {
                tracing::debug!(?ticket, "request cancelled: aborting its handler");
                task.abort();
            }
            None => tracing::debug!(?ticket, "request cancelled after its reply"),
        },
        other => tracing::warn!(event = ?other, "ignoring an event this adapter does not know"),
    }
}

fn spawn(
    tasks: &mut Tasks,
    tx: &mpsc::UnboundedSender<Completion>,
    ticket: Ticket,
    work: impl Future<Output = Outcome> + Send + 'static,
) {
    let guard = Guard { tx: Some(tx.clone()), ticket };
    let task = tokio::spawn(async move {
        let guard = guard;
        let outcome = work.await;
        guard.send(outcome);
    });
    tasks.0.insert(ticket, task.abort_handle());
}
