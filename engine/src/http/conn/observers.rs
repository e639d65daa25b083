//! What the core answered itself, handed to the adapters for their spans and metrics
//! (`mcp/served.rs` keeps the records): each request with its connection's session and
//! addresses, and the sessions that ended.

use crate::http::HttpEngine;
use crate::mcp::served::{Served, SessionEnd};

impl HttpEngine {
    /// The next request the engine answered itself, without the host (lists, `ping`,
    /// `initialize`, refusals the core wrote, ...), with the session and addresses of
    /// its connection, for a span and a metric point like those of the requests the host
    /// serves; `None` when none is waiting. As [`Engine::poll_served`](crate::Engine::poll_served):
    /// poll until `None` after handing in input, else later records are dropped and
    /// counted ([`served_dropped`](Self::served_dropped)). Refusals decided on the HTTP
    /// request alone (its head, its size, authorization, rate limits) are responses of
    /// the HTTP layer, not served requests: they are not recorded.
    pub fn poll_served(&mut self) -> Option<Served<'_>> {
        self.core.poll_served()
    }

    /// How many records of [`poll_served`](Self::poll_served) and
    /// [`poll_session_end`](Self::poll_session_end) were dropped because their queue was
    /// full.
    pub fn served_dropped(&self) -> u64 {
        self.core.served_dropped()
    }

    /// Keeps a record of each answer the host gives to a request it was handed (`on`;
    /// off by default), as [`Engine::record_answers`](crate::Engine::record_answers).
    pub fn record_answers(&mut self, on: bool) {
        self.core.record_answers(on);
    }

    /// The next answer the host gave ([`record_answers`](Self::record_answers)), as
    /// [`Engine::poll_answered`](crate::Engine::poll_answered).
    pub fn poll_answered(&mut self) -> Option<crate::mcp::answered::Answered> {
        self.core.poll_answered()
    }

    /// The next session that ended here (`DELETE`, idle expiry, ended by another node),
    /// for the `mcp.server.session.duration` point of an adapter that saw it open (the
    /// `initialize` record of [`poll_served`](Self::poll_served) names it); `None` when
    /// none is waiting. Bounded as `poll_served` is. A session that only left memory for
    /// the store has not ended.
    pub fn poll_session_end(&mut self) -> Option<SessionEnd<'_>> {
        self.core.poll_session_end()
    }
}
