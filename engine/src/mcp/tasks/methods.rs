//! The task methods of `2026-07-28` (`tasks/get`, `tasks/update`, `tasks/cancel`), what a
//! request offers or names of the extension, and the expiry of tasks. The host's side of a
//! task (starting one, its answers) is `Answers`' (`mcp/answers/task.rs`). The methods are
//! [`TaskMethods`]'s, a view of the parts they use for the request being dispatched that
//! the core hands out (`Core::task_methods`); the `2025-11-25` ones are in `legacy.rs`.

use simd_json::Node;

use crate::catalog::{Catalog, TaskSupport};
use crate::error::PeerError;
use crate::jsonrpc::{Reply, Req};
use crate::mcp::mrtr::{self, Entry};
use crate::mcp::prepared::{Prepared, TASKS_EXTENSION as EXTENSION};
use crate::mcp::tasks::write::{detail_members, task_members};
use crate::mcp::tasks::{Record, Status, TaskMethods, session_key_of};
use crate::mcp::tickets::Ticket;
use crate::mcp::write::{result_end, result_start};
use crate::revision::Revision;
use crate::wire::json;

/// Whether the client capabilities at `caps` declare the tasks extension (an object
/// under `extensions`).
pub(crate) fn declares(n: &[Node<'_>], caps: Option<usize>) -> bool {
    caps.and_then(|c| json::get(n, c, "extensions"))
        .and_then(|e| json::get(n, e, EXTENSION))
        .is_some_and(|t| json::is_object(n, t))
}

impl TaskMethods<'_> {
    /// The task a `tasks/*` request names, for its caller: the extension declared on this
    /// request (`-32021` before anything else), `params.taskId` a string, a task of the
    /// caller's (`-32602` otherwise, whether it never existed, expired, or is another
    /// principal's or, without a principal, another session's).
    pub(crate) fn task_of<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<Ticket, PeerError<'t>> {
        if rev.is_stateless() && !declares(req.n, req.meta.capabilities) {
            return Err(PeerError::TasksNotDeclared);
        }
        let id = req.str_at(req.param("taskId")).ok_or(PeerError::NotAString("taskId"))?;
        let session = session_key_of(self.principal.as_ref(), self.token, rev);
        let ticket =
            self.tasks.find(id, self.principal.as_ref(), session.as_ref()).ok_or(PeerError::TaskNotFound)?;
        // A task lives on the wire it was made on.
        let same = |r: &Record| r.revision.is_some_and(|v| v.is_stateless() == rev.is_stateless());
        let found = self.tasks.get(ticket).filter(|r| same(r)).map(|_| ticket).ok_or(PeerError::TaskNotFound);
        if let (Ok(t), Some(st)) = (found, self.tasks.store.as_mut()) {
            st.touched = Some(t);
        }
        found
    }

    /// `tasks/get`: the task as it is now (`DetailedTask`), `resultType: "complete"`.
    pub(crate) fn get<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let ticket = self.task_of(req, rev)?;
        let r = self.tasks.get(ticket).ok_or(PeerError::TaskNotFound)?;
        let out = &mut self.outbox.out;
        result_start(out, Reply::Id(req.id));
        task_members(out, r, !rev.is_stateless());
        if rev.is_stateless() {
            detail_members(out, r);
        }
        result_end(out, &self.prepared.meta, rev, None);
        Ok(())
    }

    /// `tasks/update`: the client's answers to the task's outstanding input requests.
    /// Answers to keys not outstanding (never asked, answered already, of an earlier
    /// round) are ignored unread; an answer to an outstanding key must fit its request
    /// (`-32602`, nothing applied). Once every outstanding request is answered the task
    /// is `working` again and its call comes back to the host with the answers. The
    /// acknowledgement is empty.
    pub(crate) fn update<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let ticket = self.task_of(req, rev)?;
        let n = req.n;
        let responses = req.param("inputResponses");
        let Some(&Node::Object { len, .. }) = responses.and_then(|i| n.get(i)) else {
            return Err(PeerError::InputResponsesNotObject);
        };
        let ri = responses.unwrap_or_default();
        let wall = self.wall;
        let r = self.tasks.get_mut(ticket).ok_or(PeerError::TaskNotFound)?;
        if r.status() == Status::InputRequired {
            // Checked first, applied after: a refusal changes nothing.
            for pass in [false, true] {
                let mut i = ri + 1;
                for _ in 0..len {
                    let (k, v) = (json::str_at(n, i).unwrap_or_default(), i + 1);
                    i = v + 1 + json::children(n, v);
                    let Some(at) = outstanding(r, k) else { continue };
                    let kind = r.asked[at].kind;
                    if !pass {
                        if !(json::is_object(n, v) && mrtr::response_fits(n, v, kind)) {
                            return Err(PeerError::BadInputResponse { key: k, expected: kind.method() });
                        }
                        continue;
                    }
                    let ks = r.responses.len();
                    r.responses.extend_from_slice(k.as_bytes());
                    let vs = r.responses.len();
                    json::write_value(n, v, &mut r.responses);
                    let ve = r.responses.len();
                    let _ = r.entries.push(Entry { key: ks..vs, value: vs..ve, error: false });
                    r.asked[at].answered = true;
                    r.changes += 1;
                }
            }
            // A copy of another node's task (task store) runs nothing here: its owner
            // hears of the answers and resumes the call.
            if r.asked.iter().all(|a| a.answered) && r.move_to(Status::Working, wall) && r.held {
                self.tasks.resume_later(ticket);
            }
        }
        self.ack(req, rev);
        Ok(())
    }

    /// `tasks/cancel`: a task not yet finished is `cancelled` at once and its host told
    /// ([`Event::Cancelled`](crate::Event::Cancelled) with the task's ticket); a finished
    /// one is left as it is. Either way the acknowledgement is the same, empty.
    pub(crate) fn cancel<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let ticket = self.task_of(req, rev)?;
        let wall = self.wall;
        let r = self.tasks.get_mut(ticket).ok_or(PeerError::TaskNotFound)?;
        let held = r.held;
        let moved = r.move_to(Status::Cancelled, wall);
        if moved && held {
            self.tickets.tell_cancelled(ticket);
        }
        if rev.is_stateless() {
            self.ack(req, rev);
            return Ok(());
        }
        // 2025-11-25: a finished task cannot be cancelled; the answer is the task.
        if !moved {
            return Err(PeerError::TaskFinished(r.status().as_str()));
        }
        crate::mcp::tasks::legacy::changed(self.outbox, r);
        let out = &mut self.outbox.out;
        result_start(out, Reply::Id(req.id));
        task_members(out, r, true);
        result_end(out, &self.prepared.meta, rev, None);
        Ok(())
    }

    /// An empty result (`resultType: "complete"`).
    fn ack(&mut self, req: &Req<'_, '_>, rev: Revision) {
        let out = &mut self.outbox.out;
        result_start(out, Reply::Id(req.id));
        result_end(out, &self.prepared.meta, rev, None);
    }
}

/// Whether the tools/call `req` (of tool `tool`, named `name`) may become a task: tasks on, the tool not
/// forbidden, the extension declared on this request. A task-only tool called without
/// the extension is refused `-32021`.
pub(crate) fn task_offer<'t>(
    catalog: &Catalog,
    prepared: &Prepared,
    req: &Req<'_, 't>,
    rev: Revision,
    tool: usize,
    name: &'t str,
) -> Result<bool, PeerError<'t>> {
    let support = catalog.tools[tool].tool.task_support;
    if !prepared.features.tasks || rev == Revision::V2025_06_18 {
        return Ok(false);
    }
    if !rev.is_stateless() {
        // 2025-11-25: the client asks for a task with `params.task`.
        let asked = req.param("task").filter(|&t| json::is_object(req.n, t));
        return match (asked, support) {
            (Some(_), TaskSupport::Forbidden) => {
                Err(PeerError::TaskAugmentation { tool: name, required: false })
            }
            (None, TaskSupport::Required) => Err(PeerError::TaskAugmentation { tool: name, required: true }),
            (asked, _) => Ok(asked.is_some()),
        };
    }
    if support == TaskSupport::Forbidden {
        return Ok(false);
    }
    let declared = declares(req.n, req.meta.capabilities);
    if !declared && support == TaskSupport::Required {
        return Err(PeerError::TaskToolNeedsTasks(name));
    }
    Ok(declared)
}

/// The position in `r.asked` of the outstanding request under `key`.
fn outstanding(r: &Record, key: &str) -> Option<usize> {
    r.asked
        .iter()
        .position(|a| !a.answered && r.requests.get(a.key.clone()).is_some_and(|k| json_key_is(k, key)))
}

/// Whether `json` (a JSON string as the engine wrote it) is `key`.
fn json_key_is(json: &[u8], key: &str) -> bool {
    json.len() == key.len() + 2 && &json[1..json.len() - 1] == key.as_bytes()
}
