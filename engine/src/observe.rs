//! What an adapter observes of either engine, written once for both: the requests the
//! engine answered itself ([`Served`]), the host's answers when asked ([`Answered`]), the
//! HTTP sessions that ended ([`SessionEnd`]), the records dropped for want of a poll, the
//! tool results refused by their output schema ([`OutputMismatch`]),
//! and (feature `connectome`) the engine's [`Connectome`]; the W3C trace context a
//! request carried ([`TraceParent`], [`TraceContext`]) for its span.
//!
//! Each is a short-lived handle over the engine's core, taken with `observe()` or
//! `connectome()` on [`Engine`](crate::Engine) or
//! [`HttpEngine`](crate::http::HttpEngine) (both through [`Commands`](crate::Commands)):
//!
//! ```
//! use mcp_engine::{Catalog, Commands, Config, Engine, Instant, Tool};
//!
//! let catalog = Catalog::builder().tool(Tool::new("hello")).build()?;
//! let mut engine = Engine::new(Config::new("demo", "1.0"), catalog);
//! let ping = br#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! "#;
//! engine.handle_input(Instant::ZERO, ping);
//! let served = engine.observe().poll_served().expect("ping is answered by the engine");
//! assert_eq!(served.method(), Some("ping"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The records cost no allocation: their queues are reserved when the engine is built
//! ([`SERVED_CAPACITY`]) or when recording answers is turned on ([`ANSWERED_CAPACITY`]).
//!
//! May use: `mcp` (the core and its records), and the lower layers.

use crate::error::OutputMismatch;
use crate::mcp::Core;

pub use crate::mcp::answered::{ANSWERED_CAPACITY, Answered};
pub use crate::mcp::served::{SERVED_CAPACITY, Served, SessionEnd};
pub use crate::wire::trace::{SpanId, TraceContext, TraceId, TraceParent};

/// The engine's records for the adapter's spans and metrics, borrowed from the engine
/// for one call (`engine.observe().poll_served()`): each method takes the handle, so what
/// it returns may borrow the engine as long as the handle would have.
pub struct Observer<'a> {
    core: &'a mut Core,
}

impl core::fmt::Debug for Observer<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Observer").field("dropped", &self.core.served_dropped()).finish()
    }
}

impl<'a> Observer<'a> {
    #[inline]
    pub(crate) fn new(core: &'a mut Core) -> Self {
        Self { core }
    }

    /// The next request the engine answered itself, without the host (lists, `ping`,
    /// `initialize`, refusals the core wrote, ...), for a span and a metric point like
    /// those of the requests the host serves; `None` when none is waiting. Over HTTP each
    /// record carries the session and addresses of its connection; refusals decided on
    /// the HTTP request alone (its head, its size, authorization, rate limits) are
    /// responses of the HTTP layer, not served requests, and are not recorded.
    ///
    /// Poll it until `None` after handing in input: at most [`SERVED_CAPACITY`] wait,
    /// later ones are dropped and counted ([`dropped`](Self::dropped)). A host that wants
    /// none never polls; recording costs no allocation either way.
    #[inline]
    pub fn poll_served(self) -> Option<Served<'a>> {
        self.core.poll_served()
    }

    /// The next HTTP session that ended (`DELETE`, idle expiry, ended by another node),
    /// for the `mcp.server.session.duration` point of an adapter that saw it open (the
    /// `initialize` record of [`poll_served`](Self::poll_served) names it); `None` when
    /// none is waiting (always, over stdio). Bounded as `poll_served` is. A session that
    /// only left memory for the store has not ended.
    #[inline]
    pub fn poll_session_end(self) -> Option<SessionEnd<'a>> {
        self.core.poll_session_end()
    }

    /// Keeps a record of each answer the host gives to a request it was handed (`on`;
    /// off by default), for [`poll_answered`](Self::poll_answered): an adapter that does
    /// not see the host's answers (the host answers through the engine) closes the
    /// request's span with them. At most [`ANSWERED_CAPACITY`] wait; the queue is
    /// reserved when this is first turned on, so recording never allocates.
    #[inline]
    pub fn record_answers(self, on: bool) {
        self.core.record_answers(on);
    }

    /// The next answer the host gave ([`record_answers`](Self::record_answers)): the
    /// ticket of the request's event, and whether it was a result, a tool error or an
    /// error with a code. A call made a task is recorded when the task is made (its request
    /// is answered then, with the task's handle); the task's later result is not.
    #[inline]
    pub fn poll_answered(self) -> Option<Answered> {
        self.core.poll_answered()
    }

    /// How many records of [`poll_served`](Self::poll_served),
    /// [`poll_session_end`](Self::poll_session_end) and
    /// [`poll_answered`](Self::poll_answered) were dropped because their queue was full.
    #[inline]
    pub fn dropped(self) -> u64 {
        self.core.served_dropped()
    }

    /// The last tool result the engine replaced with a generic tool error because its
    /// `structuredContent` did not match the tool's output schema (see
    /// [`OutputMismatch`]): log it, it is a bug in the host.
    #[inline]
    pub fn take_output_mismatch(self) -> Option<OutputMismatch> {
        self.core.outbox_mut().mismatch.take()
    }
}

/// An engine's connectome (feature `connectome`; see [`crate::connectome`]), borrowed from
/// the engine (`engine.connectome()`): the declared graph of its catalog with the host's
/// declarations, the observed counts and their graph, and the diff; the host's
/// declarations and the reads it reports go in here too.
///
/// ```
/// use mcp_engine::{Catalog, Commands, Config, Engine, Instant, Tool};
///
/// let catalog = Catalog::builder().tool(Tool::new("now")).build()?;
/// let mut engine = Engine::new(Config::new("clock", "1"), catalog);
/// let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"now","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
/// engine.handle_input(Instant::ZERO, format!("{call}\n").as_bytes());
/// while engine.poll_event().is_some() {}
/// let observed = engine.connectome().observed();
/// let edge = observed.edges().find(|(k, _)| k.to == "tool:now").unwrap();
/// assert_eq!(edge.1.count, Some(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "connectome")]
pub struct Connectome<'a> {
    core: &'a mut Core,
}

#[cfg(feature = "connectome")]
impl core::fmt::Debug for Connectome<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Connectome").field("counts", self.core.connectome_counts()).finish()
    }
}

#[cfg(feature = "connectome")]
impl<'a> Connectome<'a> {
    #[inline]
    pub(crate) fn new(core: &'a mut Core) -> Self {
        Self { core }
    }

    /// The declared graph: the current catalog and the host's declarations (those on
    /// definitions a catalog replacement removed are left out and noted).
    pub fn declared(&self) -> crate::connectome::Graph {
        self.core.connectome_declared()
    }

    /// The observed graph: what was counted, with counts.
    pub fn observed(&self) -> crate::connectome::Graph {
        self.core.connectome_observed()
    }

    /// The diff of [`Self::declared`] and [`Self::observed`].
    pub fn diff(&self) -> crate::connectome::Diff {
        self.core.connectome_diff()
    }

    /// The counts themselves.
    pub fn counts(self) -> &'a crate::connectome::Observed {
        self.core.connectome_counts()
    }

    /// Sets the edges the host declares on its tools, drawn into the declared graph.
    ///
    /// # Errors
    ///
    /// Refused, with nothing changed, when a declaration names a tool or uri the catalog
    /// does not have.
    pub fn set_declarations(
        &mut self,
        declarations: crate::connectome::Declarations,
    ) -> Result<(), crate::connectome::DeclarationError> {
        self.core.set_connectome_declarations(declarations)
    }

    /// Counts a read of `uri` (matched as `resources/read` matches it) that the host
    /// reports tool `tool` made: the observed edge `tool reads resource`. Counts only;
    /// allocates nothing. Returns `false` for a tool or uri the catalog does not have,
    /// or a new pair once the table is full ([`crate::connectome::Observed::record_read`]).
    #[inline]
    pub fn report_read(&mut self, tool: &str, uri: &str) -> bool {
        self.core.report_read(tool, uri)
    }

    /// Forgets every observed count.
    pub fn clear_observed(&mut self) {
        self.core.clear_observed();
    }
}
