//! The outbox: where finished messages go, tagged with their route; refusals are
//! written here, in one place, with their HTTP status.

use crate::error::{Detail, PeerError};
use crate::jsonrpc::{Reply, write_error};

/// Where the answer of a ticket goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// The one stdio output.
    Stdio,
    /// An HTTP exchange: connection slot and generation, and the request's sequence on it.
    Http { conn: u32, generation: u32 },
    /// A session-bound HTTP stream whose connection went away (disconnection is not
    /// cancellation there): what is written for it is kept for the client to resume
    /// (slot and generation in the HTTP layer's table of parked streams).
    Parked { slot: u32, generation: u32 },
}

impl Route {
    /// Whether messages for it are taken by the HTTP layer (through `Outbox::routed`)
    /// rather than being the stdio stream itself.
    pub(crate) fn is_http(self) -> bool {
        !matches!(self, Self::Stdio)
    }
}

/// An answer written into `State::out` for an HTTP route: `out[start..end]` is one
/// JSON-RPC message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Routed {
    pub(crate) route: Route,
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// A notification sent before the final answer (the response becomes a stream).
    pub(crate) interim: bool,
    /// The HTTP status of a final answer sent as JSON (0: 200).
    pub(crate) status: u16,
    /// A message of a `subscriptions/listen` stream (dropped, with the stream, when the
    /// connection cannot take it).
    pub(crate) sub: bool,
    /// Not a message (`start == end`): the host asked the client to reconnect to the
    /// request's stream after this many milliseconds (see `Answers::reconnect_later`).
    pub(crate) retry_ms: u32,
}

/// The outbox: one reused buffer of finished messages (stdio: the byte stream itself;
/// HTTP: messages the HTTP layer takes per route through `routed`).
pub(crate) struct Outbox {
    pub(crate) out: Vec<u8>,
    pub(crate) out_pos: usize,
    /// Answers to tickets written since the HTTP layer last looked (HTTP mode only).
    pub(crate) routed: Vec<Routed>,
    /// Where a refusal with a rich account is rendered (see [`crate::error::Detailed`]).
    pub(crate) detail: Detail,
    /// The last tool result replaced for not matching its output schema, for the host.
    pub(crate) mismatch: Option<crate::error::OutputMismatch>,
    /// Notifications for an HTTP session's standalone stream, which the HTTP layer routes.
    pub(crate) session_notes: SessionNotes,
}

/// Notifications for the standalone `GET` stream of an HTTP session that only the HTTP
/// layer can find (`2025-11-25` `notifications/tasks/status`, and a `2025-11-25` task's
/// `notifications/progress` when no `tasks/result` waits for it), kept apart from `out`
/// (whose tail may be a response being written) until the HTTP layer next collects the
/// answers: it routes each to its session's stream, or drops it. The messages back to
/// back in `bytes`, and per message its session's serial and its end. Cleared at every
/// collection: what one engine call writes (one message per status change) bounds it.
#[derive(Default)]
pub(crate) struct SessionNotes {
    pub(crate) bytes: Vec<u8>,
    pub(crate) ends: Vec<(u64, usize)>,
}

impl Outbox {
    /// Writes the refusal of a request; returns the HTTP status of a response that
    /// carries it at once.
    pub(crate) fn reject(&mut self, reply: Reply<'_, '_>, e: &PeerError<'_>) -> u16 {
        if let PeerError::Detailed { code, status } = *e {
            let d = &self.detail;
            write_error(&mut self.out, reply, code, format_args!("{}", d.message), |out| {
                out.extend_from_slice(&d.data)
            });
            return status;
        }
        write_error(&mut self.out, reply, e.code(), format_args!("{e}"), |out| e.write_data(out));
        e.status()
    }

    /// Records that `out[start..]` is the answer for `route` (HTTP routes only).
    pub(crate) fn routed(&mut self, route: Route, start: usize) {
        self.routed_with(route, start, 0);
    }

    /// Records that `out[start..]` is an interim message for `route` (HTTP routes only):
    /// a notification or request before the answer of a request, or a message of a stream
    /// (`sub`: dropped with the stream when its connection cannot take it).
    pub(crate) fn interim(&mut self, route: Route, start: usize, sub: bool) {
        if route.is_http() {
            let end = self.out.len();
            self.routed.push(Routed { route, start, end, interim: true, status: 0, sub, retry_ms: 0 });
        }
    }

    /// [`Self::routed`] with the HTTP status of an error answer.
    pub(crate) fn routed_with(&mut self, route: Route, start: usize, status: u16) {
        if route.is_http() {
            let end = self.out.len();
            self.routed.push(Routed { route, start, end, interim: false, status, sub: false, retry_ms: 0 });
        }
    }

    /// What is written and not yet taken.
    pub(crate) fn pending(&self) -> &[u8] {
        &self.out[self.out_pos..]
    }

    /// How many bytes wait to be taken.
    pub(crate) fn buffered(&self) -> usize {
        self.out.len() - self.out_pos
    }

    /// Marks `n` bytes of [`Self::pending`] as taken.
    pub(crate) fn consume(&mut self, n: usize) {
        self.out_pos = self.out_pos.saturating_add(n).min(self.out.len());
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        } else if self.out_pos >= 64 * 1024 || self.out_pos * 2 >= self.out.len() {
            // A writer that always leaves a little behind must not make the buffer grow:
            // move the unsent tail to the front (no allocation).
            let len = self.out.len();
            self.out.copy_within(self.out_pos..len, 0);
            self.out.truncate(len - self.out_pos);
            self.out_pos = 0;
        }
    }

    /// The message `r` routes, without its newline.
    pub(crate) fn message(&self, r: &Routed) -> &[u8] {
        let msg = &self.out[r.start..r.end];
        msg.strip_suffix(b"\n").unwrap_or(msg)
    }

    /// Where the answer of the request being served starts, when it was written from
    /// `mark` on: after the last message routed elsewhere meanwhile (a `2025-11-25`
    /// `tasks/cancel` answers the `tasks/result` requests waiting on its task before it
    /// writes its own answer), else at `mark`.
    pub(crate) fn answer_start(&self, mark: usize) -> usize {
        self.routed.iter().rev().take_while(|r| r.start >= mark).map(|r| r.end).max().unwrap_or(mark)
    }

    /// What was written from `mark` on.
    pub(crate) fn written_since(&self, mark: usize) -> &[u8] {
        &self.out[mark..]
    }

    /// Forgets what was written from `mark` on (the HTTP layer took it).
    pub(crate) fn discard_since(&mut self, mark: usize) {
        self.out.truncate(mark);
    }

    /// Forgets every routed message (the HTTP layer took them).
    pub(crate) fn clear(&mut self) {
        self.routed.clear();
        self.out.clear();
    }
}
