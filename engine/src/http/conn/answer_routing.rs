//! Where the host's answers and notifications for tickets of HTTP requests go, beside the
//! connections: the sessions' standalone streams. The engine's [`Output`] (the commands,
//! [`Commands`], written once over the core) moves what the core wrote into the
//! connections' output, says when a connection is backlogged (`task_backlogged` for a
//! task's progress), and carries catalog replacements and resource updates to the
//! sessions' standalone streams (`sessions_list_changed`, `sessions_resource_updated`,
//! `route_session_notes`): functions over the core, the sessions and the connection table.

#[cfg(doc)]
use crate::commands::{Commands, sealed::Output};
use crate::http::conn::exchange::ConnSlot;
use crate::http::session::sessions::Sessions;
use crate::mcp::Core;
use crate::mcp::subs::CatalogChange;
use crate::mcp::tickets::Ticket;
use crate::output::Route;

/// Whether the stream a `2025-11-25` task's progress would go on (a waiting
/// `tasks/result`'s, else its session's standalone stream) holds as much unsent as a
/// connection may.
pub(in crate::http) fn task_backlogged(
    core: &Core,
    sessions: &Sessions,
    slots: &[ConnSlot],
    ticket: Ticket,
) -> bool {
    let Some(r) = core.progress_task(ticket) else { return false };
    let route = match r.session_waiter() {
        Some(route) => Some(route),
        None => sessions
            .with_streams()
            .find(|e| e.session.serial == r.session)
            .and_then(|e| e.stream)
            .map(|(conn, generation)| Route::Http { conn, generation }),
    };
    let Some(Route::Http { conn, generation }) = route else { return false };
    slots
        .get(conn as usize)
        .and_then(|s| s.conn.as_ref())
        .is_some_and(|c| c.generation == generation && c.out.len() >= crate::http::MAX_UNSENT)
}

/// Sessions hear of a list change on their standalone streams.
pub(in crate::http) fn sessions_list_changed(core: &mut Core, sessions: &Sessions, change: CatalogChange) {
    for e in sessions.with_streams() {
        if let Some((conn, generation)) = e.stream {
            core.session_list_changed(Route::Http { conn, generation }, &e.session, change);
        }
    }
}

/// Sessions that subscribed to `uri` with `resources/subscribe` hear of its update on
/// their standalone streams. Returns how many did.
pub(in crate::http) fn sessions_resource_updated(core: &mut Core, sessions: &Sessions, uri: &str) -> usize {
    let mut n = 0;
    for e in sessions.with_streams() {
        if let Some((conn, generation)) = e.stream {
            let route = Route::Http { conn, generation };
            n += usize::from(core.session_resource_updated(route, &e.session, uri));
        }
    }
    n
}

/// Routes the core's notifications for sessions' standalone streams (`2025-11-25`
/// `notifications/tasks/status`, see `legacy::changed`, and a task's
/// `notifications/progress` when no `tasks/result` waits for it): each to the standalone
/// stream of its session, if one is open on this engine; otherwise it is dropped
/// (clients must not rely on them, and poll). Called first thing when answers are
/// collected; a scan of the sessions with streams per message.
pub(in crate::http) fn route_session_notes(core: &mut Core, sessions: &Sessions) {
    let outbox = core.outbox_mut();
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
        let mut streams = sessions.with_streams();
        let Some((conn, generation)) = streams.find(|e| e.session.serial == serial).and_then(|e| e.stream)
        else {
            continue;
        };
        let outbox = core.outbox_mut();
        let start = outbox.out.len();
        outbox.out.extend_from_slice(msg);
        outbox.interim(Route::Http { conn, generation }, start, true);
    }
    // The buffers go back, emptied (no allocation from one collection to the next).
    let outbox = core.outbox_mut();
    outbox.session_notes = notes;
    outbox.session_notes.bytes.clear();
    outbox.session_notes.ends.clear();
}
