//! Where the data of the current event lives ([`Scratch`]): the buffers a request is
//! decoded into and the event reads while it is held, each reserved at its bound, and the
//! multi-round-trip part of the request being dispatched ([`Round`]). The core owns one;
//! the event delivery (`delivery.rs`) refills it for a request coming back with its
//! client's input.

use crate::catalog::uritemplate::Captures;
use crate::mcp::mrtr::{self, ClientCapabilities, MAX_INPUT_REQUESTS};
use crate::mcp::tickets;
use crate::wire::trace::TraceParent;
use crate::wire::{json, trace};

/// Where the data of the current event lives (read by the event while it is held).
pub(crate) struct Scratch {
    pub(crate) args: Vec<u8>,
    pub(crate) uri: String,
    pub(crate) captures: Captures,
    /// The argument name and value of a completion request.
    pub(crate) completion: (String, String),
    /// What the current request brings for a multi-round-trip request.
    pub(crate) round: Round,
    /// The decoded `requestState`.
    pub(crate) state: Vec<u8>,
    /// `inputResponses`: keys and values (compact JSON), back to back.
    pub(crate) responses: Vec<u8>,
    /// The buffer of the repeated-member-name check (`jsonrpc::decode`).
    pub(crate) names: json::Names,
    /// The trace context of the request handed over last.
    pub(crate) trace: TraceScratch,
    /// The id of the event's request, as JSON (copied from its ticket slot).
    pub(crate) id: tickets::IdBuf,
}

/// Members of one object the repeated-name check holds without growing its buffer (16 KiB).
const NAMES_RESERVED: usize = 1024;

impl Scratch {
    /// The buffers at their working size for frames of up to `frame` bytes.
    pub(crate) fn new(frame: usize) -> Self {
        Self {
            args: Vec::with_capacity(frame),
            uri: String::with_capacity(1024),
            // The decoded template variables: no longer than the uri.
            captures: Captures::with_capacity(1024),
            completion: (String::with_capacity(64), String::with_capacity(256)),
            round: Round::default(),
            state: Vec::with_capacity(mrtr::MAX_SEALED_LEN + 8),
            responses: Vec::with_capacity(frame),
            // Objects of up to this many members are checked without growing it.
            names: json::Names::with_capacity(NAMES_RESERVED.min(frame / 4 + 1)),
            // No longer than the frame, nor than their bounds.
            trace: TraceScratch {
                parent: None,
                state: String::with_capacity(trace::MAX_TRACESTATE_LEN.min(frame)),
                has_state: false,
                baggage: String::with_capacity(trace::MAX_BAGGAGE_LEN.min(frame)),
                has_baggage: false,
            },
            id: tickets::IdBuf { len: 0, bytes: [0; crate::error::MAX_TICKET_ID_LEN] },
        }
    }
}

/// The W3C trace context of the request handed over last (see `requests::take_trace`):
/// its buffers are reserved at their bounds, so copying one never allocates.
pub(crate) struct TraceScratch {
    pub(crate) parent: Option<TraceParent>,
    pub(crate) state: String,
    pub(crate) has_state: bool,
    pub(crate) baggage: String,
    pub(crate) has_baggage: bool,
}

impl Round {
    pub(crate) fn reset(&mut self) {
        self.caps = ClientCapabilities::default();
        self.host_state = None;
        self.entries.clear();
        self.tasks = false;
    }
}

/// The multi-round-trip part of the request being dispatched.
#[derive(Default)]
pub(crate) struct Round {
    pub(crate) caps: ClientCapabilities,
    pub(crate) digest: [u8; 32],
    /// The host's part of a verified `requestState`, in `Scratch::state`.
    pub(crate) host_state: Option<core::ops::Range<usize>>,
    /// Key and value ranges in `Scratch::responses`.
    pub(crate) entries: heapless::Vec<mrtr::Entry, MAX_INPUT_REQUESTS>,
    /// The tool call may become a task (see `tasks::methods::task_offer`).
    pub(crate) tasks: bool,
}
