//! The open `subscriptions/listen` streams and the fan-out of notifications to them.

use crate::jsonrpc::Reply;
use crate::mcp::prepared::Prepared;
use crate::mcp::tickets::IdBuf;
use crate::mcp::write::result_start;
use crate::output::{Outbox, Route, Routed};

/// Whether a subscription asked for one kind of notification.
pub(crate) type SubFilter = fn(&Sub) -> bool;

/// An open `subscriptions/listen` stream.
pub(crate) struct Sub {
    /// The listen request's id, as JSON (the subscription id).
    pub(crate) id: IdBuf,
    pub(crate) route: Route,
    /// The principal the listen request acted for (HTTP), for the per-peer limit.
    pub(crate) principal: Option<[u8; 32]>,
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) uris: Vec<Box<str>>,
}

/// The open `subscriptions/listen` streams.
pub(crate) struct Subscriptions {
    pub(crate) list: Vec<Sub>,
    /// The request just dispatched opened a subscription (HTTP: its stream stays open).
    pub(crate) subscribed: bool,
}

impl Subscriptions {
    /// Whether a stream of `route` was opened by a request with id `id`.
    pub(crate) fn id_in_flight(&self, id: &IdBuf, route: Route) -> bool {
        self.list.iter().any(|s| s.route == route && s.id.as_bytes() == id.as_bytes())
    }

    /// Ends the streams of `route` as the server ends them ([`teardown`]: its grant
    /// expired).
    pub(crate) fn end_route(&mut self, outbox: &mut Outbox, prepared: &Prepared, route: Route) {
        let mut i = 0;
        while i < self.list.len() {
            if self.list[i].route == route {
                let sub = self.list.remove(i);
                teardown(outbox, prepared, &sub);
            } else {
                i += 1;
            }
        }
    }

    /// Writes a notification for every subscription `wants` chooses (`write` gets its id);
    /// returns how many were written. A stdio subscription whose client reads too slowly
    /// (more than `max_buffered` bytes waiting) is ended instead; an HTTP one is dropped by
    /// the HTTP layer when its connection holds too much unsent.
    pub(crate) fn publish(
        &mut self,
        outbox: &mut Outbox,
        max_buffered: usize,
        prepared: &Prepared,
        wants: impl Fn(&Sub) -> bool,
        write: impl Fn(&mut Vec<u8>, &[u8]),
    ) -> usize {
        let mut sent = 0;
        let mut i = 0;
        while i < self.list.len() {
            if !wants(&self.list[i]) {
                i += 1;
                continue;
            }
            let route = self.list[i].route;
            if route == Route::Stdio && outbox.buffered() > max_buffered {
                let sub = self.list.remove(i);
                teardown(outbox, prepared, &sub);
                continue;
            }
            let start = outbox.out.len();
            write(&mut outbox.out, self.list[i].id.as_bytes());
            outbox.interim(route, start, true);
            sent += 1;
            i += 1;
        }
        sent
    }
}

/// Ends `sub` from the server's side: the graceful `SubscriptionsListenResult`, and on
/// stdio `notifications/cancelled` naming the listen request (DIGEST Part D item 1).
pub(crate) fn teardown(outbox: &mut Outbox, prepared: &Prepared, sub: &Sub) {
    let out = &mut outbox.out;
    let start = out.len();
    result_start(out, Reply::Stored(sub.id.as_bytes()));
    out.extend_from_slice(
        b"\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":",
    );
    out.extend_from_slice(sub.id.as_bytes());
    if let Some(info) = prepared.meta.strip_prefix(b"\"_meta\":{").and_then(|m| m.strip_suffix(b"}")) {
        out.push(b',');
        out.extend_from_slice(info);
    }
    out.extend_from_slice(b"}}}\n");
    match sub.route {
        Route::Stdio => {
            out.extend_from_slice(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":",
            );
            out.extend_from_slice(sub.id.as_bytes());
            out.extend_from_slice(b",\"reason\":\"The server ended the subscription.\"}}\n");
        }
        Route::Http { .. } | Route::Parked { .. } => {
            let end = out.len();
            outbox.routed.push(Routed {
                route: sub.route,
                start,
                end,
                interim: false,
                status: 0,
                sub: true,
                retry_ms: 0,
            });
        }
    }
}
