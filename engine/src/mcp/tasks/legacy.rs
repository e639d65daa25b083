//! The `2025-11-25` tasks utility on session-bound streams (stdio, and HTTP sessions):
//! `tasks/result` (the task's result or error once it ends; a request for an unfinished
//! task waits for it), `tasks/list` (the caller's tasks, a page at a time), and what the
//! records write under that revision: the nested `CreateTaskResult`, `ttl` /
//! `pollInterval`, `notifications/tasks/status`, and
//! `_meta["io.modelcontextprotocol/related-task"]` on `tasks/result`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::error::{PeerError, code};
use crate::jsonrpc::{Reply, Req, field, write_error};
use crate::mcp::tasks::Record;
use crate::mcp::tasks::Status;
use crate::mcp::tasks::write::task_members;
use crate::mcp::tasks::{TaskMethods, Tasks};
use crate::mcp::tickets::{IdBuf, Ticket};
use crate::mcp::write::{result_end, result_start};
use crate::output::{Outbox, Route};
use crate::revision::Revision;
use crate::wire::json;

/// The `_meta` key that ties a `tasks/result` answer to its task.
const RELATED: &str = "io.modelcontextprotocol/related-task";
/// Bytes of a `tasks/list` cursor before base64url: the slot to start at, a tag.
const CURSOR_RAW: usize = 4 + 16;
const CURSOR_LABEL: &[u8] = b"mcp-engine/task-list-cursor";

/// Writes the answer `tasks/result` gets for the finished task `r`: what the call would
/// have returned (its result, with the related-task `_meta`, or its JSON-RPC error); a
/// cancelled task has neither (`-32602`).
pub(crate) fn write_result(out: &mut Vec<u8>, r: &Record, reply: Reply<'_, '_>) {
    match r.status() {
        Status::Cancelled => write_error(
            out,
            reply,
            code::INVALID_PARAMS,
            format_args!("Invalid params: the task was cancelled: it has no result"),
            |_| {},
        ),
        _ if r.error_outcome => {
            out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
            reply.write(out);
            out.extend_from_slice(b",\"error\":");
            out.extend_from_slice(&r.outcome);
            out.extend_from_slice(b"}\n");
        }
        _ => {
            out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
            reply.write(out);
            out.extend_from_slice(b",\"result\":");
            // The result object without its closing brace, then its `_meta`.
            let body = r.outcome.strip_suffix(b"}").unwrap_or(b"{");
            out.extend_from_slice(body);
            field(out, "_meta");
            out.extend_from_slice(b"{\"");
            out.extend_from_slice(RELATED.as_bytes());
            out.extend_from_slice(b"\":{\"taskId\":");
            json::write_str(out, r.id_str());
            out.extend_from_slice(b"}}}}\n");
        }
    }
}

/// Answers every `tasks/result` waiting for `r`: with its outcome once it has ended, or
/// with `-32602` and `gone` when the task is deleted first.
pub(crate) fn answer_waiters(outbox: &mut Outbox, r: &mut Record, gone: Option<&str>) {
    let waiters = core::mem::take(&mut r.waiters);
    for (route, id, _) in &waiters {
        let mark = outbox.out.len();
        let reply = Reply::Stored(id.as_bytes());
        match gone {
            Some(why) => write_error(
                &mut outbox.out,
                reply,
                code::INVALID_PARAMS,
                format_args!("Invalid params: {why}"),
                |_| {},
            ),
            None => write_result(&mut outbox.out, r, reply),
        }
        outbox.routed(*route, mark);
    }
}

/// After a `2025-11-25` task's status changed: the requests waiting for its end are
/// answered once it has one, and the session that created it hears
/// `notifications/tasks/status` (the full task): on stdio at once; over HTTP on the
/// session's standalone `GET` stream, through the HTTP layer (`Outbox::session_notes`),
/// dropped when none is open here.
pub(crate) fn changed(outbox: &mut Outbox, r: &mut Record) {
    if r.revision.is_none_or(Revision::is_stateless) {
        return;
    }
    if r.status().is_terminal() {
        answer_waiters(outbox, r, None);
    }
    let out = match r.route {
        Some(Route::Stdio) => &mut outbox.out,
        // A copy of another node's task (no session here) tells no one.
        Some(_) if r.session != 0 => &mut outbox.session_notes.bytes,
        _ => return,
    };
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tasks/status\",\"params\":{");
    task_members(out, r, true);
    out.extend_from_slice(b"}}\n");
    if r.route != Some(Route::Stdio) {
        let end = outbox.session_notes.bytes.len();
        outbox.session_notes.ends.push((r.session, end));
    }
}

/// Sends what a `2025-11-25` task asks (its `asked` requests) to the client on `route`,
/// as server-to-client requests whose params carry the related-task `_meta`.
pub(crate) fn ask(outbox: &mut Outbox, r: &Record, route: Route) {
    for a in &r.asked {
        let out = &mut outbox.out;
        let start = out.len();
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        json::write_u64(out, a.id);
        out.push(b',');
        // `{"method":..,"params":{..}}` without its braces, then `_meta` inside `params`.
        let body = &r.requests[a.body.clone()];
        let members = body.get(1..body.len().saturating_sub(2)).unwrap_or_default();
        out.extend_from_slice(members);
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        out.extend_from_slice(b"\"_meta\":{\"");
        out.extend_from_slice(RELATED.as_bytes());
        out.extend_from_slice(b"\":{\"taskId\":");
        json::write_str(out, r.id_str());
        out.extend_from_slice(b"}}}}\n");
        outbox.interim(route, start, false);
    }
}

/// Answers every `tasks/result` waiting on `route` with "Request timed out" (the
/// connection's request timeout passed).
pub(crate) fn time_out_waiters(tasks: &mut Tasks, out: &mut Outbox, route: Route) {
    tasks.each_mut(|r| {
        r.waiters.retain(|(at, id, _)| {
            if *at != route {
                return true;
            }
            let mark = out.out.len();
            let reply = Reply::Stored(id.as_bytes());
            write_error(
                &mut out.out,
                reply,
                code::REQUEST_TIMEOUT,
                format_args!("Request timed out"),
                |_| {},
            );
            out.routed(route, mark);
            false
        });
    });
}

impl TaskMethods<'_> {
    /// A client's response (`id` at tape index `id`, `Ok(result)` or `Err(error)`) to a
    /// request a `2025-11-25` task sent: kept under its key (one that does not fit its
    /// request is kept as an error); once every request is answered the task is `working`
    /// again and its call comes back to the host. A response to nothing is ignored.
    pub(crate) fn task_response(
        &mut self,
        n: &[simd_json::Node<'_>],
        id: usize,
        outcome: Result<usize, usize>,
    ) {
        let Some(simd_json::Node::Static(simd_json::StaticNode::U64(id))) = n.get(id).copied() else {
            return;
        };
        let Some(ticket) = self.tasks.asked_by(self.serial, id) else { return };
        let wall = self.wall;
        let Some(r) = self.tasks.get_mut(ticket) else { return };
        let Some(at) = r.asked.iter().position(|a| a.id == id) else { return };
        let kind = r.asked[at].kind;
        let key = r.asked[at].key.clone();
        let ks = r.responses.len();
        // The key as the host gave it (its JSON string, unquoted: keys need no escapes to
        // be matched, and one with escapes is kept as written).
        let quoted = &r.requests[key];
        let raw = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_vec();
        r.responses.extend_from_slice(&raw);
        let vs = r.responses.len();
        let error = match outcome {
            Ok(v) if json::is_object(n, v) && crate::mcp::mrtr::response_fits(n, v, kind) => {
                json::write_value(n, v, &mut r.responses);
                false
            }
            Err(e) if json::is_object(n, e) => {
                json::write_value(n, e, &mut r.responses);
                true
            }
            _ => {
                r.responses
                    .extend_from_slice(b"{\"code\":-32602,\"message\":\"Invalid response: it does not fit ");
                r.responses.extend_from_slice(kind.method().as_bytes());
                r.responses.extend_from_slice(b"\"}");
                true
            }
        };
        let ve = r.responses.len();
        let _ = r.entries.push(crate::mcp::mrtr::Entry { key: ks..vs, value: vs..ve, error });
        r.asked[at].answered = true;
        r.changes += 1;
        if r.asked.iter().all(|a| a.answered) && r.move_to(Status::Working, wall) {
            changed(self.outbox, r);
            self.tasks.resume_later(ticket);
        }
    }

    /// `tasks/result` (`2025-11-25`): a finished task's result or error now; for a
    /// task still running, the request waits (at most [`MAX_WAITERS`](super::MAX_WAITERS)
    /// per task) and is answered when it ends, or `-32602` when it is deleted first.
    /// Returns the task a request on `route` now waits on.
    pub(crate) fn result<'t>(
        &mut self,
        req: &Req<'_, 't>,
        rev: Revision,
        route: Route,
    ) -> Result<Option<Ticket>, PeerError<'t>> {
        let ticket = self.task_of(req, rev)?;
        let r = self.tasks.get_mut(ticket).ok_or(PeerError::TaskNotFound)?;
        if r.status().is_terminal() {
            write_result(&mut self.outbox.out, r, Reply::Id(req.id));
            return Ok(None);
        }
        let id = IdBuf::of(req.id).ok_or(PeerError::IdTooLong)?;
        r.waiters.push((route, id, self.serial)).map_err(|_| PeerError::TooManyWaiters)?;
        Ok(Some(ticket))
    }

    /// `tasks/list` (`2025-11-25`): the caller's tasks of that revision, `page_size` at a
    /// time in table order, the next page named by a cursor sealed with the secret key
    /// and bound to the caller (without a key, every task on one page).
    /// Without a task store only (with one, the list is the store's).
    pub(crate) fn list<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let key = self.prepared.state_key.as_ref().map(|k| k.sign);
        let principal = self.principal;
        let session = crate::mcp::tasks::session_key_of(self.principal.as_ref(), self.token, rev);
        let start = match req.param("cursor") {
            None => 0,
            Some(ci) => {
                let text = json::str_at(req.n, ci).ok_or(PeerError::CursorNotString)?;
                key.and_then(|k| open_cursor(&k, principal.as_ref(), text)).ok_or(PeerError::InvalidCursor)?
            }
        };
        let page = if key.is_some() { self.page_size } else { usize::MAX };
        let out = &mut self.outbox.out;
        result_start(out, Reply::Id(req.id));
        out.extend_from_slice(b"\"tasks\":[");
        let mut next = None;
        let mine = |r: &Record| {
            r.belongs_to(principal.as_ref(), session.as_ref())
                && r.revision.is_some_and(|v| !v.is_stateless())
        };
        for (shown, (slot, r)) in self.tasks.iter_from(start).filter(|(_, r)| mine(r)).enumerate() {
            if shown == page {
                next = Some(slot);
                break;
            }
            if shown > 0 {
                out.push(b',');
            }
            out.push(b'{');
            task_members(out, r, true);
            out.push(b'}');
        }
        out.push(b']');
        if let (Some(slot), Some(k)) = (next, key) {
            field(out, "nextCursor");
            seal_cursor(out, &k, principal.as_ref(), slot);
        }
        result_end(out, &self.prepared.meta, rev, None);
        Ok(())
    }
}

/// The MAC of a cursor naming `slot` for `principal`.
fn cursor_mac(key: &[u8; 32], principal: Option<&[u8; 32]>, slot: u32) -> Hmac<Sha256> {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    m.update(CURSOR_LABEL);
    m.update(principal.map_or(&[0u8; 32][..], |p| &p[..]));
    m.update(&slot.to_le_bytes());
    m
}

/// Writes a quoted cursor naming `slot` for `principal`.
fn seal_cursor(out: &mut Vec<u8>, key: &[u8; 32], principal: Option<&[u8; 32]>, slot: usize) {
    let slot = u32::try_from(slot).unwrap_or(u32::MAX);
    let mut raw = [0u8; CURSOR_RAW];
    raw[..4].copy_from_slice(&slot.to_le_bytes());
    raw[4..].copy_from_slice(&cursor_mac(key, principal, slot).finalize().into_bytes()[..16]);
    let mut text = [0u8; 28];
    let n = URL_SAFE_NO_PAD.encode_slice(raw, &mut text).unwrap_or(0);
    out.push(b'"');
    out.extend_from_slice(&text[..n]);
    out.push(b'"');
}

/// The slot a cursor of `principal`'s names, if this engine's key sealed it.
fn open_cursor(key: &[u8; 32], principal: Option<&[u8; 32]>, text: &str) -> Option<usize> {
    let mut raw = [0u8; CURSOR_RAW + 2];
    let n = URL_SAFE_NO_PAD.decode_slice(text.as_bytes(), &mut raw).ok()?;
    if n != CURSOR_RAW {
        return None;
    }
    let slot = u32::from_le_bytes(raw[..4].try_into().ok()?);
    cursor_mac(key, principal, slot).verify_truncated_left(&raw[4..CURSOR_RAW]).ok()?;
    Some(slot as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_opens_for_its_principal_only() {
        let key = [4; 32];
        let mut out = Vec::new();
        seal_cursor(&mut out, &key, Some(&[1; 32]), 7);
        let text = core::str::from_utf8(&out[1..out.len() - 1]).unwrap_or_default();
        assert_eq!(open_cursor(&key, Some(&[1; 32]), text), Some(7));
        assert_eq!(open_cursor(&key, Some(&[2; 32]), text), None);
        assert_eq!(open_cursor(&key, None, text), None);
        assert_eq!(open_cursor(&[5; 32], Some(&[1; 32]), text), None);
        assert_eq!(open_cursor(&key, Some(&[1; 32]), "garbage"), None);
    }
}
