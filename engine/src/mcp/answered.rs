//! The host's answers to the requests it was handed, recorded when an adapter asks
//! (`engine.observe().record_answers(true)`): one fixed-size record per answer (the ticket of the
//! request's event, and whether it was a result, a tool error or an error with a code),
//! for an adapter that does not see the host's answers itself (the host answers through
//! the engine, as with mio) and closes each request's span with its outcome
//! (`docs/observability.md`). The queue is reserved when recording is turned on, so
//! recording never allocates; past its bound, records are dropped and counted.
//!
//! May use: its own folder (`tickets`' [`Ticket`]).

use std::collections::VecDeque;

use crate::mcp::tickets::Ticket;

/// The host's answers the engine keeps for the adapter between two drains, when asked
/// to ([`Observer::record_answers`](crate::observe::Observer::record_answers)): past that many, an
/// answer's record is dropped and counted.
pub const ANSWERED_CAPACITY: usize = 256;

/// The host's answer to a request it was handed, recorded when the adapter asked
/// ([`Observer::record_answers`](crate::observe::Observer::record_answers)), polled with
/// [`Observer::poll_answered`](crate::observe::Observer::poll_answered): the ticket of the request's
/// event and what the answer was, for an adapter that closes the request's span when
/// the answer is written (the mio adapter; the tokio one sees its handlers' replies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    ticket: Ticket,
    code: Option<i32>,
    tool_error: bool,
}

impl Answered {
    /// The ticket of the request's event.
    pub fn ticket(&self) -> Ticket {
        self.ticket
    }
    /// The JSON-RPC error code of the answer (`None`: a result, also `input_required`).
    pub fn error_code(&self) -> Option<i32> {
        self.code
    }
    /// Whether the answer was a tool result with `isError: true` (the host's, or the
    /// engine's for a result its output schema refused).
    pub fn is_tool_error(&self) -> bool {
        self.tool_error
    }
}

/// The records waiting for the adapter (none unless turned on).
#[derive(Default)]
pub(crate) struct AnswerLog {
    answers: VecDeque<Answered>,
    on: bool,
    dropped: u64,
}

impl AnswerLog {
    /// Keeps the host's answers from now on (`on`); the queue is reserved the first time.
    pub(crate) fn record(&mut self, on: bool) {
        if on && self.answers.capacity() == 0 {
            self.answers.reserve_exact(ANSWERED_CAPACITY);
        }
        self.on = on;
    }

    /// Records the host's answer to `ticket`: a result (`code` `None`, `tool_error` for
    /// a tool result with `isError: true`) or an error with `code`. Nothing unless asked.
    pub(crate) fn answered(&mut self, ticket: Ticket, code: Option<i32>, tool_error: bool) {
        if !self.on {
            return;
        }
        if self.answers.len() >= ANSWERED_CAPACITY {
            self.dropped += 1;
            return;
        }
        self.answers.push_back(Answered { ticket, code, tool_error });
    }

    /// The next answer recorded.
    pub(crate) fn poll(&mut self) -> Option<Answered> {
        self.answers.pop_front()
    }

    /// Records dropped so far because the queue was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}
