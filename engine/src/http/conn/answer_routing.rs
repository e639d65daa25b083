//! Where the host's answers and notifications for tickets of HTTP requests go: the
//! commands ([`Commands`], written once over the core) are this engine's through its
//! [`Output`], which moves what the core wrote into the connections' output
//! (`collect_answers`), says when a connection is backlogged, and carries catalog
//! replacements and resource updates to the sessions' standalone streams.

use crate::commands::Commands;
use crate::commands::sealed::{Lent, Output, Shown};
use crate::http::HttpEngine;
use crate::mcp::subs::CatalogChange;
use crate::mcp::tickets::Ticket;
use crate::output::Route;

impl HttpEngine {
    /// Whether the stream a `2025-11-25` task's progress would go on (a waiting
    /// `tasks/result`'s, else its session's standalone stream) holds as much unsent as a
    /// connection may.
    fn task_backlogged(&self, ticket: Ticket) -> bool {
        let Some(r) = self.core.progress_task(ticket) else { return false };
        let route = match r.session_waiter() {
            Some(route) => Some(route),
            None => self
                .sessions
                .with_streams()
                .find(|e| e.session.serial == r.session)
                .and_then(|e| e.stream)
                .map(|(conn, generation)| Route::Http { conn, generation }),
        };
        let Some(Route::Http { conn, generation }) = route else { return false };
        self.conn(crate::http::ConnId { slot: conn, generation })
            .is_some_and(|c| c.out.len() >= crate::http::MAX_UNSENT)
    }

    /// Announces that lists changed without replacing the catalog: another node sharing
    /// this deployment's clients changed its catalog (its host said so through a shared
    /// store), or this node may have missed such news. The listen streams that asked for
    /// the lists in `change` and the standalone streams of initialized sessions get their
    /// `notifications/*/list_changed`, exactly as after [`replace_catalog`](Commands::replace_catalog)
    /// (a family this catalog does not have is left out; nothing is sent unless
    /// `Config::list_changed` is on). Clients then list again, from this node's catalog.
    /// Returns the change as announced.
    pub fn announce_list_changed(&mut self, change: CatalogChange) -> CatalogChange {
        self.tick(self.last_now);
        let change = self.core.announce_list_changed(change);
        self.sessions_list_changed(change);
        self.collect_answers();
        self.process();
        change
    }

    /// Sessions hear of a list change on their standalone streams.
    fn sessions_list_changed(&mut self, change: CatalogChange) {
        for e in self.sessions.with_streams() {
            if let Some((conn, generation)) = e.stream {
                self.core.session_list_changed(Route::Http { conn, generation }, &e.session, change);
            }
        }
    }

    /// Routes the core's notifications for sessions' standalone streams (`2025-11-25`
    /// `notifications/tasks/status`, see `legacy::changed`, and a task's
    /// `notifications/progress` when no `tasks/result` waits for it): each to the standalone
    /// stream of its session, if one is open on this engine; otherwise it is dropped
    /// (clients must not rely on them, and poll). Called first thing when answers are
    /// collected; a scan of the sessions with streams per message.
    pub(in crate::http) fn route_session_notes(&mut self) {
        let outbox = self.core.outbox_mut();
        if outbox.session_notes.ends.is_empty() {
            // None (nearly always): nothing to move, and the buffers stay where they are.
            outbox.session_notes.bytes.clear();
            return;
        }
        let notes = core::mem::take(&mut outbox.session_notes);
        let mut from = 0;
        for &(serial, end) in &notes.ends {
            let msg = notes.bytes.get(from..end).unwrap_or_default();
            from = end;
            let mut streams = self.sessions.with_streams();
            let Some((conn, generation)) =
                streams.find(|e| e.session.serial == serial).and_then(|e| e.stream)
            else {
                continue;
            };
            let outbox = self.core.outbox_mut();
            let start = outbox.out.len();
            outbox.out.extend_from_slice(msg);
            outbox.interim(Route::Http { conn, generation }, start, true);
        }
        // The buffers go back, emptied (no allocation from one collection to the next).
        let outbox = self.core.outbox_mut();
        outbox.session_notes = notes;
        outbox.session_notes.bytes.clear();
        outbox.session_notes.ends.clear();
    }
}

impl Output for HttpEngine {
    #[inline]
    fn lent(&mut self) -> Lent<'_> {
        Lent(&mut self.core)
    }

    #[inline]
    fn shown(&self) -> Shown<'_> {
        Shown(&self.core)
    }

    #[inline]
    fn begin(&mut self) {
        self.tick(self.last_now);
    }

    #[inline]
    fn end(&mut self, resume: bool) {
        self.collect_answers();
        if resume {
            self.process();
        }
    }

    fn backlogged(&self, ticket: Ticket, task_progress: bool) -> bool {
        self.backlogged(ticket) || (task_progress && self.task_backlogged(ticket))
    }

    fn list_changed(&mut self, change: CatalogChange) {
        self.sessions_list_changed(change);
    }

    /// Sessions that subscribed with `resources/subscribe` hear of it on their standalone
    /// streams.
    fn resource_updated(&mut self, uri: &str) -> usize {
        let mut n = 0;
        for e in self.sessions.with_streams() {
            if let Some((conn, generation)) = e.stream {
                let route = Route::Http { conn, generation };
                n += usize::from(self.core.session_resource_updated(route, &e.session, uri));
            }
        }
        n
    }
}

/// The commands written once ([`Commands`]), over the connections above.
impl Commands for HttpEngine {}
