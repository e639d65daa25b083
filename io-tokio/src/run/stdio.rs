//! The run loop: one task owns the engine, handler futures run in tasks of their own.

use std::io;
use std::ops::Range;
use std::sync::Arc;

use mcp_engine::{Engine, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::host::handler::Handler;
use crate::run::work::Tasks;
use crate::telemetry::{Telemetry, Wire};

/// Bytes read from the client at a time.
const READ_BUF_LEN: usize = 64 * 1024;

/// Serves one MCP stream: reads newline-delimited JSON-RPC from `reader`, writes the
/// engine's output to `writer`, and runs the work the engine hands out on `handler`.
///
/// The calling task owns the engine. Each tool call, resource read or prompt request
/// runs its [`Handler`] future in a [`tokio::spawn`]ed task of its own (tasks are kept
/// once their request is answered, and run the next requests); its reply comes back over
/// a channel and is answered on the engine, in whatever order replies finish. A request
/// the client cancels (`notifications/cancelled`) has its task aborted and is never
/// answered.
///
/// # Backpressure
///
/// Input is read only while the engine can take it, and each read asks for at most what
/// it takes now ([`Engine::input_capacity`]), so every byte read is taken at once, in
/// order. When the engine pauses (its in-flight limit,
/// [`Config::max_in_flight`](mcp_engine::Config::max_in_flight), is reached, or too much
/// output waits for a slow client) and its one-frame input buffer is full, nothing is read
/// until it resumes. So the number of handler tasks (running or kept) never exceeds the
/// in-flight limit, and the engine's input buffer is the only input held.
///
/// Output is written with cancel-safe partial writes while input is still being read,
/// and `writer` is flushed whenever the engine has no more output.
///
/// # Termination
///
/// Returns `Ok(())` once `reader` hit end of file, every request was answered (or
/// cancelled) and all output was written and flushed. `writer` is flushed but not shut
/// down; it is dropped on return. Returns the first I/O error of `reader` or `writer`
/// otherwise. Handler tasks still running (or kept) when `serve` returns (or is dropped)
/// are aborted.
///
/// Must run inside a tokio runtime (it spawns tasks).
pub async fn serve<R, W, H>(engine: Engine, handler: Arc<H>, reader: R, writer: W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    H: Handler,
{
    serve_with(engine, handler, reader, writer, Telemetry::default()).await
}

/// [`serve`] with what the request spans record ([`Telemetry`]: with feature `otel`, the
/// duration histograms on a meter). The uri opt-in ([`Telemetry::resource_uri`]) applies
/// here as over HTTP.
pub async fn serve_with<R, W, H>(
    engine: Engine,
    handler: Arc<H>,
    mut reader: R,
    mut writer: W,
    telemetry: Telemetry,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    H: Handler,
{
    let mut engine = engine;
    // Task ids are drawn from the OS random source.
    let mut entropy = [0u8; 32];
    match getrandom::fill(&mut entropy) {
        Ok(()) => engine.set_entropy(&entropy),
        Err(e) => tracing::warn!(%e, "no OS randomness: tool calls cannot become tasks"),
    }
    let (mut tasks, mut rx) = Tasks::new();
    tasks.set_telemetry(Wire::PIPE, telemetry);
    let mut d = Driver {
        engine,
        handler,
        tasks,
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
        // At most what the engine takes now: every byte read is taken at once, in order.
        let room = d.engine.input_capacity().min(READ_BUF_LEN);
        let can_read = !d.read_eof && d.held.is_empty() && room > 0;
        let has_output = !d.engine.pending_output().is_empty();
        // Handler tasks report on the channel; so does a publisher asking the client.
        let waiting = !d.tasks.is_empty() || d.tasks.asking();
        // The engine's timer: requests sent to the client for input time out.
        let deadline = d.engine.poll_timeout().map(|t| d.instant_of(t));
        tokio::select! {
            biased;
            Some(done) = rx.recv(), if waiting => d.tasks.complete(&mut d.engine, done),
            () = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)), if deadline.is_some() => {
                let now = d.now();
                d.engine.handle_timeout(now);
            }
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
            read = reader.read(&mut d.read_buf[..room]), if can_read => match read {
                Ok(0) => {
                    tracing::debug!("input closed");
                    d.read_eof = true;
                }
                Ok(n) => {
                    tracing::trace!(bytes = n, "read");
                    d.held = 0..n;
                    d.tasks.received(d.now());
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
    let now = d.now();
    d.tasks.stream_ended(now);
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

struct Driver<H> {
    engine: Engine,
    handler: Arc<H>,
    tasks: Tasks,
    start: std::time::Instant,
    read_buf: Box<[u8]>,
    /// The part of `read_buf` the engine has not taken yet: offered first, and nothing is
    /// read while it holds any. (Empty while the engine keeps its word: it takes what a
    /// read sized by its capacity brings.)
    held: Range<usize>,
    read_eof: bool,
    eof_sent: bool,
}

impl<H: Handler> Driver<H> {
    fn now(&self) -> Instant {
        Instant::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// The tokio instant of the engine's time `t`.
    fn instant_of(&self, t: Instant) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.start) + std::time::Duration::from_micros(t.as_micros())
    }

    /// Offers held input (and the end of input once all of it is taken), then drains
    /// events, until neither makes progress.
    fn pump(&mut self) {
        loop {
            let now = self.now();
            self.engine
                .set_wall_clock(now, mcp_engine::UnixTime::from_system_time(std::time::SystemTime::now()));
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
            // The requests the engine answered itself get their spans (polling events
            // processes more frames: the next round takes theirs).
            self.tasks.served(&mut self.engine);
            while let Some(event) = self.engine.poll_event() {
                progress = true;
                self.tasks.dispatch(&self.handler, event);
            }
            self.tasks.served(&mut self.engine);
            if !progress {
                break;
            }
        }
    }
}
