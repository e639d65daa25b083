//! What the core answered itself, handed to the adapters for their spans and metrics
//! through the [`Observer`] (`mcp/served.rs` keeps the records; the HTTP layer fills in
//! each request's session and addresses as it hands the request in).

use super::HttpEngine;
use crate::observe::Observer;

impl HttpEngine {
    /// The engine's records for the adapter's spans and metrics: requests the engine
    /// answered itself (with the session and addresses of their connection), the host's
    /// answers when asked, the sessions that ended, output mismatches (see [`Observer`]).
    #[inline]
    pub fn observe(&mut self) -> Observer<'_> {
        Observer::new(&mut self.core)
    }
}
