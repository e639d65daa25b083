//! What a transport must know of a request before it serves it ([`RequestFacts`]), read
//! once from the request as the core decodes it (`jsonrpc::decode`): its kind for the
//! transport's rate limits, whether it takes a ticket, what it needs of a task store.
//! The HTTP layer decides on these, never on the tape (`Core::handle_gated`,
//! `Core::preview`).
//!
//! May use: `jsonrpc`, `wire`. A leaf of `mcp/`: it knows no part of the core.

use crate::jsonrpc::{IdRef, Message};
use crate::wire::json;

/// What a transport must know of a request before it is served, read once from the
/// decoded request ([`RequestFacts::of`]): the transport decides its rate limits, its
/// in-flight caps and its task-store lookups on these, never on the tape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestFacts<'t> {
    /// What the request asks for, as far as the transport's limits tell them apart.
    pub(crate) kind: RequestKind,
    /// The request asks the host for work (it takes a ticket): `tools/call`,
    /// `resources/read`, `prompts/get`, `completion/complete`.
    pub(crate) ticketed: bool,
    /// What it needs of a task store, if anything.
    pub(crate) task: Option<NamedTask<'t>>,
    /// Its id (echoed by a refusal the transport writes itself, such as a `429`).
    pub(crate) id: Option<IdRef<'t>>,
}

/// The kinds of request a transport's limits tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    /// `tools/call`.
    Call,
    /// `completion/complete`.
    Completion,
    /// `subscriptions/listen` or `resources/subscribe`.
    Subscription,
    /// `initialize`.
    Initialize,
    /// Any other request, a notification, a response, a refused message.
    Other,
}

/// What a `tasks/*` request needs of a task store before it is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NamedTask<'t> {
    /// The task it names (`tasks/get`, `tasks/update`, `tasks/cancel`, `tasks/result`
    /// with `params.taskId` a string; a task store is asked only for one of an id's
    /// length).
    Task(&'t str),
    /// A page of the caller's tasks: `tasks/list`, with its cursor if it has one (`Err`: a
    /// cursor that is not a string).
    List(Result<Option<&'t str>, ()>),
}

impl<'t> RequestFacts<'t> {
    /// The facts of a decoded message (a message that is not a request has none).
    pub(crate) fn of(message: &Message<'_, 't>) -> Self {
        let Message::Request(req) = message else {
            return Self { kind: RequestKind::Other, ticketed: false, task: None, id: None };
        };
        let kind = match req.method {
            "tools/call" => RequestKind::Call,
            "completion/complete" => RequestKind::Completion,
            "subscriptions/listen" | "resources/subscribe" => RequestKind::Subscription,
            "initialize" => RequestKind::Initialize,
            _ => RequestKind::Other,
        };
        let ticketed =
            matches!(req.method, "tools/call" | "resources/read" | "prompts/get" | "completion/complete");
        let task = match req.method {
            "tasks/list" => Some(NamedTask::List(match req.param("cursor") {
                None => Ok(None),
                Some(c) => json::str_at(req.n, c).map(Some).ok_or(()),
            })),
            "tasks/get" | "tasks/update" | "tasks/cancel" | "tasks/result" => {
                req.str_at(req.param("taskId")).map(NamedTask::Task)
            }
            _ => None,
        };
        Self { kind, ticketed, task, id: Some(req.id) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{Parser, decode};

    /// The facts of the message `text`.
    fn facts_of(text: &str, f: impl FnOnce(RequestFacts<'_>)) {
        let mut bytes = text.as_bytes().to_vec();
        let mut parser = Parser::new(bytes.len() + 2, 64);
        parser.parse(&mut bytes, |parsed| {
            let n = parsed.expect("valid JSON");
            f(RequestFacts::of(&decode(n, &mut json::Names::with_capacity(0))));
        });
    }

    fn req(method: &str, params: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#)
    }

    #[test]
    fn the_kind_and_the_ticket_come_from_the_method() {
        for (method, kind, ticketed) in [
            ("tools/call", RequestKind::Call, true),
            ("completion/complete", RequestKind::Completion, true),
            ("resources/read", RequestKind::Other, true),
            ("prompts/get", RequestKind::Other, true),
            ("subscriptions/listen", RequestKind::Subscription, false),
            ("resources/subscribe", RequestKind::Subscription, false),
            ("initialize", RequestKind::Initialize, false),
            ("tools/list", RequestKind::Other, false),
        ] {
            facts_of(&req(method, "{}"), |f| {
                assert_eq!((f.kind, f.ticketed, f.task), (kind, ticketed, None), "{method}");
            });
        }
    }

    #[test]
    fn a_notification_a_response_and_a_refused_message_have_no_facts() {
        let none = RequestFacts { kind: RequestKind::Other, ticketed: false, task: None, id: None };
        for text in [
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]"#,
        ] {
            facts_of(text, |f| assert_eq!(f, none, "{text}"));
        }
    }

    #[test]
    fn a_request_carries_its_id_as_decoded() {
        facts_of(&req("tools/call", "{}"), |f| assert_eq!(f.id, Some(IdRef::U(1))));
        facts_of(r#"{"jsonrpc":"2.0","id":"a\"b","method":"ping"}"#, |f| {
            assert_eq!(f.id, Some(IdRef::Str("a\"b")))
        });
    }

    #[test]
    fn a_task_request_names_its_task_or_its_page() {
        facts_of(&req("tasks/get", r#"{"taskId":"abc"}"#), |f| {
            assert_eq!(f.task, Some(NamedTask::Task("abc")))
        });
        facts_of(&req("tasks/result", r#"{"taskId":7}"#), |f| assert_eq!(f.task, None));
        facts_of(&req("tasks/list", "{}"), |f| assert_eq!(f.task, Some(NamedTask::List(Ok(None)))));
        facts_of(&req("tasks/list", r#"{"cursor":"c1"}"#), |f| {
            assert_eq!(f.task, Some(NamedTask::List(Ok(Some("c1")))));
        });
        facts_of(&req("tasks/list", r#"{"cursor":3}"#), |f| {
            assert_eq!(f.task, Some(NamedTask::List(Err(()))))
        });
    }
}
