//! `tasks/list` (`2025-11-25`) with a host's task store: the list comes from the store,
//! which holds every task of every node sharing it, not from this engine's table, which
//! holds only the tasks it made and the copies it reads at the moment.
//!
//! The HTTP layer asks the store for a page before the request is served
//! (`HttpEvent::ListTasks`: the caller's tasks after a position, in the order
//! `createdAt` then id; a caller with a principal only: a session without one is not offered
//! `tasks/list`); the store's rows are read into the page's wire form, kept for the
//! request's route ([`Listed`]), and written when the request is served again (the store
//! port's `list_query`, `page` and `list_stored`, `store.rs`: this file holds the types
//! and the position cursor).
//! A row is read as a copy is (`record::judge`: a dead owner's unfinished task is
//! `failed`) and not kept; a task this engine holds is shown as the table has it (its
//! latest state, which the store may not have yet). Rows of another principal, of
//! `2026-07-28` (whose tasks are never listed), past their TTL, or that this engine
//! cannot read are left out. The next page is named by a cursor sealed with the secret
//! key and bound to the caller, naming the position of the page's last row.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::mcp::tasks::TASK_ID_LEN;
use crate::output::Route;

/// Bytes of a position cursor before base64url: `createdAt` (microseconds, 8), the task
/// id (22), a tag (16).
const RAW: usize = 8 + TASK_ID_LEN + 16;
const LABEL: &[u8] = b"mcp-engine/task-list-position";

/// A position in a principal's tasks as the store orders them: `createdAt`, then id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    /// Microseconds since the Unix epoch.
    pub(crate) created: u64,
    pub(crate) id: [u8; TASK_ID_LEN],
}

/// One row of a store's page: the task's id, its `createdAt` as the store orders it,
/// and its record.
pub(crate) struct Row<'a> {
    pub(crate) id: &'a str,
    pub(crate) created: u64,
    pub(crate) record: &'a [u8],
}

/// A page read from the store for the `tasks/list` request on `route`, waiting to be
/// written when the request is served again.
pub(crate) struct Listed {
    pub(crate) route: Route,
    /// The tasks' objects, comma-separated.
    pub(crate) items: Vec<u8>,
    /// Where the next page starts, when there is one.
    pub(crate) next: Option<Position>,
}

/// The MAC of a cursor naming `pos` for `principal`.
fn mac(key: &[u8; 32], principal: Option<&[u8; 32]>, pos: &Position) -> Hmac<Sha256> {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    m.update(LABEL);
    m.update(principal.map_or(&[0u8; 32][..], |p| &p[..]));
    m.update(&pos.created.to_be_bytes());
    m.update(&pos.id);
    m
}

/// Writes a quoted cursor naming `pos` for `principal`.
pub(crate) fn seal(out: &mut Vec<u8>, key: &[u8; 32], principal: Option<&[u8; 32]>, pos: &Position) {
    let mut raw = [0u8; RAW];
    raw[..8].copy_from_slice(&pos.created.to_be_bytes());
    raw[8..8 + TASK_ID_LEN].copy_from_slice(&pos.id);
    raw[8 + TASK_ID_LEN..].copy_from_slice(&mac(key, principal, pos).finalize().into_bytes()[..16]);
    let mut text = [0u8; RAW.div_ceil(3) * 4];
    let n = URL_SAFE_NO_PAD.encode_slice(raw, &mut text).unwrap_or(0);
    out.push(b'"');
    out.extend_from_slice(&text[..n]);
    out.push(b'"');
}

/// The position a cursor of `principal`'s names, if this key sealed it.
pub(crate) fn open(key: &[u8; 32], principal: Option<&[u8; 32]>, text: &str) -> Option<Position> {
    let mut raw = [0u8; RAW + 2];
    let n = URL_SAFE_NO_PAD.decode_slice(text.as_bytes(), &mut raw).ok()?;
    if n != RAW {
        return None;
    }
    let pos = Position {
        created: u64::from_be_bytes(raw[..8].try_into().ok()?),
        id: raw[8..8 + TASK_ID_LEN].try_into().ok()?,
    };
    mac(key, principal, &pos).verify_truncated_left(&raw[8 + TASK_ID_LEN..RAW]).ok()?;
    Some(pos)
}

/// What a `tasks/list` asks of the store: the caller's tasks after a position, a page
/// and one more (to know whether there is a next page).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Query {
    pub(crate) principal: Option<[u8; 32]>,
    pub(crate) after: Option<Position>,
    /// Tasks on a page: the store is asked for one more.
    pub(crate) page: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_cursor_opens_for_its_principal_and_key_only() {
        let key = [4; 32];
        let pos = Position { created: 1_700_000_000_123_456, id: *b"AAAAAAAAAAAAAAAAAAAAAA" };
        let mut out = Vec::new();
        seal(&mut out, &key, Some(&[1; 32]), &pos);
        let text = core::str::from_utf8(&out[1..out.len() - 1]).unwrap_or_default();
        assert_eq!(open(&key, Some(&[1; 32]), text), Some(pos));
        assert_eq!(open(&key, Some(&[2; 32]), text), None);
        assert_eq!(open(&key, None, text), None);
        assert_eq!(open(&[5; 32], Some(&[1; 32]), text), None);
        assert_eq!(open(&key, Some(&[1; 32]), "garbage"), None);
        // A table cursor (slot and tag) is not a position.
        assert_eq!(open(&key, Some(&[1; 32]), "AAAAAAAAAAAAAAAAAAAAAAAAAA"), None);
    }
}
