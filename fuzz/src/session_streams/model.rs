//! What the stdio and HTTP halves of `session_streams` share: the host's input requests
//! and what `answer_input_required` must do with them, the client's responses to the
//! server's requests and what each must become under its key, and the requests the
//! harnesses send.

use mcp_engine::error::AnswerError;
use mcp_engine::mrtr::InputRequestBuf;
use mcp_engine::{Catalog, Instant, Prompt, PromptArgument, ResourceTemplate, Tool};
use serde_json::Value;

use crate::common::Bytes;

/// What the host can ask a session-bound client for, one key each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Sample,
    Form,
    Roots,
}

pub(crate) const KINDS: [Kind; 3] = [Kind::Sample, Kind::Form, Kind::Roots];

impl Kind {
    pub(crate) fn method(self) -> &'static str {
        match self {
            Self::Sample => "sampling/createMessage",
            Self::Form => "elicitation/create",
            Self::Roots => "roots/list",
        }
    }

    /// Its bit in a set of declared capabilities.
    pub(crate) fn bit(self) -> u8 {
        match self {
            Self::Sample => 1,
            Self::Form => 2,
            Self::Roots => 4,
        }
    }

    /// The key the host asks for it under.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::Sample => "s",
            Self::Form => "f",
            Self::Roots => "r",
        }
    }

    pub(crate) fn request(self) -> InputRequestBuf {
        match self {
            Self::Sample => InputRequestBuf::sample_text("s", "2+2?", 5),
            Self::Form => InputRequestBuf::elicit(
                "f",
                "Name?",
                &serde_json::json!({ "type": "object", "properties": { "n": { "type": "string" } } }),
            ),
            Self::Roots => InputRequestBuf::list_roots("r"),
        }
    }
}

/// The `capabilities` an `initialize` declares for the kinds in `caps`.
pub(crate) fn caps_json(caps: u8) -> String {
    let mut members = Vec::new();
    if caps & Kind::Sample.bit() != 0 {
        members.push("\"sampling\":{}");
    }
    if caps & Kind::Form.bit() != 0 {
        members.push("\"elicitation\":{}");
    }
    if caps & Kind::Roots.bit() != 0 {
        members.push("\"roots\":{}");
    }
    format!("{{{}}}", members.join(","))
}

/// The session-bound revisions.
pub(crate) const REVISIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

/// The catalog of both halves: a tool, a prompt and a template the host may ask input
/// for, and a tool the HTTP half adds and takes away (list changes).
pub(crate) fn catalog(extra: bool) -> Catalog {
    let mut b = Catalog::builder()
        .tool(Tool::new("ask"))
        .prompt(Prompt::new("p").argument(PromptArgument::new("a")))
        .template(ResourceTemplate::new("x://r/{id}", "r"));
    if extra {
        b = b.tool(Tool::new("extra"));
    }
    b.build().unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"))
}

/// A request that reaches the host (and may ask its client for input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReqKind {
    Tool,
    Prompt,
    Resource,
}

/// A request the client sends: a `tools/call`, `prompts/get` or `resources/read` carrying
/// its sequence number where the host sees it, or one the engine answers itself. Returns
/// the frame and the kind of work it becomes.
pub(crate) fn request(seq: u64, id: &str, pick: u8, token: bool) -> (String, Option<ReqKind>) {
    let meta = if token { format!(",\"_meta\":{{\"progressToken\":\"~p{seq}\"}}") } else { String::new() };
    let (method, params, kind) = match pick % 6 {
        0 | 1 => (
            "tools/call",
            format!("{{\"name\":\"ask\",\"arguments\":{{\"m\":{seq}}}{meta}}}"),
            Some(ReqKind::Tool),
        ),
        2 => (
            "prompts/get",
            format!("{{\"name\":\"p\",\"arguments\":{{\"a\":\"~{seq}\"}}{meta}}}"),
            Some(ReqKind::Prompt),
        ),
        3 => ("resources/read", format!("{{\"uri\":\"x://r/{seq}\"{meta}}}"), Some(ReqKind::Resource)),
        4 => ("ping", "{}".to_owned(), None),
        _ => ("tools/call", "{\"name\":\"nope\"}".to_owned(), None),
    };
    (format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{params}}}"), kind)
}

/// The arguments (tool, prompt) or uri (read) the host sees for request `seq`.
pub(crate) fn expected_args(kind: ReqKind, seq: u64) -> String {
    match kind {
        ReqKind::Tool => format!("{{\"m\":{seq}}}"),
        ReqKind::Prompt => format!("{{\"a\":\"~{seq}\"}}"),
        ReqKind::Resource => format!("x://r/{seq}"),
    }
}

/// The sequence number of the request an event is for, from what the host sees.
pub(crate) fn seq_of(kind: ReqKind, seen: &str) -> u64 {
    let digits: String = match kind {
        ReqKind::Tool | ReqKind::Prompt => seen.chars().filter(char::is_ascii_digit).collect(),
        ReqKind::Resource => seen.rsplit('/').next().unwrap_or_default().to_owned(),
    };
    digits.parse().unwrap_or_else(|_| panic!("an event without its request's number: {seen:?}"))
}

/// One `answer_input_required` the host gives.
pub(crate) struct Ask {
    pub(crate) bufs: Vec<InputRequestBuf>,
    /// The kind of each request (`None`: one with an invalid key).
    pub(crate) kinds: Vec<Option<Kind>>,
    pub(crate) state: Option<Vec<u8>>,
    pub(crate) invalid: bool,
}

impl Ask {
    /// From a choice byte: which kinds, a repeated or empty key (refused), host state.
    pub(crate) fn new(choice: u8, tag: u64) -> Self {
        let mut bufs = Vec::new();
        let mut kinds = Vec::new();
        for k in KINDS {
            if choice & k.bit() != 0 {
                bufs.push(k.request());
                kinds.push(Some(k));
            }
        }
        let mut invalid = false;
        if choice & 0x18 == 0x18 && !kinds.is_empty() {
            bufs.push(bufs[0].clone());
            kinds.push(kinds[0]);
            invalid = true;
        }
        if choice & 0x60 == 0x60 {
            bufs.push(InputRequestBuf::list_roots(""));
            kinds.push(None);
            invalid = true;
        }
        let state = (choice & 0x80 != 0).then(|| format!("st{tag}").into_bytes());
        Self { bufs, kinds, state, invalid }
    }
}

/// One request sent to the client for a round.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked {
    pub(crate) id: u64,
    pub(crate) kind: Kind,
}

/// What `answer_input_required` must do.
#[derive(Debug)]
pub(crate) enum AskResult {
    /// Refused, nothing written, the ticket stays.
    Err(AnswerError),
    /// Answered with `-32021` (nothing the client can be sent): the ticket is over.
    Refused,
    /// These requests go out (ids from `next_id`); the ticket waits for the client.
    Asked(Vec<Asked>),
}

/// What `answer_input_required` does with `ask` for a live session-bound ticket whose
/// client declared `caps` (0 when the request cannot stream), once the stream ended
/// when `gone`. `next_id` is the id the engine gives its next request to a client.
pub(crate) fn expect_ask(ask: &Ask, caps: u8, gone: bool, next_id: &mut u64) -> AskResult {
    if ask.bufs.is_empty() {
        return AskResult::Err(AnswerError::InputRequiredUnsupported);
    }
    if gone {
        return AskResult::Err(AnswerError::ClientGone);
    }
    if ask.invalid {
        return AskResult::Err(AnswerError::InvalidInputRequest(""));
    }
    let sendable: Vec<Kind> = ask.kinds.iter().flatten().copied().filter(|k| caps & k.bit() != 0).collect();
    if sendable.is_empty() {
        return AskResult::Refused;
    }
    let asked = sendable
        .into_iter()
        .map(|kind| {
            let id = *next_id;
            *next_id += 1;
            Asked { id, kind }
        })
        .collect();
    AskResult::Asked(asked)
}

/// Whether an actual result of `answer_input_required` is the expected one (the reason
/// of an `InvalidInputRequest` is not compared).
pub(crate) fn same_error(got: &AnswerError, want: &AnswerError) -> bool {
    match (got, want) {
        (AnswerError::InvalidInputRequest(_), AnswerError::InvalidInputRequest(_)) => true,
        _ => got == want,
    }
}

/// The round of input a ticket waits for.
#[derive(Debug, Clone)]
pub(crate) struct Round {
    pub(crate) asked: Vec<Asked>,
    pub(crate) deadline: Instant,
    pub(crate) state: Option<Vec<u8>>,
}

/// What a client's response becomes under its key, when it is the one that counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The result, carrying this tag.
    Response(u32),
    /// The client's error: its code, its message carrying this tag.
    ClientError(i64, u32),
    /// The engine's `-32602`: the response does not fit its request.
    Misfit,
}

/// A response frame the client sends.
pub(crate) struct Reply {
    pub(crate) bytes: Vec<u8>,
    /// The request it answers, and what it becomes if it counts (`None`: it answers
    /// nothing, whatever its id).
    pub(crate) counted: Option<(u64, Outcome)>,
}

/// A result that fits a request of `kind`, tagged.
fn fit(kind: Kind, tag: u32) -> String {
    match kind {
        Kind::Sample => format!(
            "{{\"role\":\"assistant\",\"content\":{{\"type\":\"text\",\"text\":\"z{tag}z\"}},\"model\":\"m\"}}"
        ),
        Kind::Form => format!("{{\"action\":\"accept\",\"content\":{{\"n\":\"z{tag}z\"}}}}"),
        Kind::Roots => format!("{{\"roots\":[{{\"uri\":\"file:///z{tag}z\",\"name\":\"r\"}}]}}"),
    }
}

/// A result object that does not fit a request of `kind`.
fn misfit(kind: Kind, pick: u8) -> String {
    match (pick % 4, kind) {
        (0, _) => "{}".to_owned(),
        (1, Kind::Sample) => r#"{"role":"assistant","content":{"type":"text","text":"4"}}"#.to_owned(),
        (1, Kind::Form) => r#"{"action":"maybe"}"#.to_owned(),
        (1, Kind::Roots) => r#"{"roots":[{"name":"no uri"}]}"#.to_owned(),
        // The right shape with a member repeated inside: unusable.
        (2, Kind::Sample) => {
            r#"{"role":"assistant","role":"user","content":{"type":"text","text":"4"},"model":"m"}"#
                .to_owned()
        }
        (2, Kind::Form) => r#"{"action":"accept","content":{"n":"a","n":"b"}}"#.to_owned(),
        (2, Kind::Roots) => r#"{"roots":[{"uri":"file:///a","uri":"file:///b"}]}"#.to_owned(),
        // Another kind's result.
        (_, Kind::Sample) => r#"{"roots":[]}"#.to_owned(),
        (_, Kind::Form) => fit(Kind::Roots, 0),
        (_, Kind::Roots) => fit(Kind::Form, 0),
    }
}

/// Error codes a client's error carries (some the engine uses itself: the tag in the
/// message tells them apart).
const CODES: [i64; 6] = [-1, 0, 42, -32601, -32001, -32000];

/// The client's response to request `target` (of `kind`), tagged `tag`: a result that
/// fits, one that does not, not an object, the client's error, an error that is not an
/// object (these count), or one that answers nothing: a string id, both `result` and
/// `error`, no `jsonrpc`, a repeated top-level member, an id the engine never used.
pub(crate) fn reply(b: &mut Bytes<'_>, target: Option<(u64, Kind)>, tag: u32) -> Reply {
    let shape = b.u8();
    let Some((id, kind)) = target else {
        // An id the engine never sent (it counts up from 1 by at most 16 a round).
        let id = match shape % 4 {
            0 => "1000000000".to_owned(),
            1 => "-1".to_owned(),
            2 => "0".to_owned(),
            _ => "null".to_owned(),
        };
        let bytes = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{}}}",
            fit(KINDS[usize::from(shape) % 3], tag)
        );
        return Reply { bytes: bytes.into_bytes(), counted: None };
    };
    let env = |id: &str, member: &str| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},{member}}}");
    let n = id.to_string();
    let (text, outcome) = match shape % 12 {
        0..=3 => (env(&n, &format!("\"result\":{}", fit(kind, tag))), Some(Outcome::Response(tag))),
        4 => (env(&n, &format!("\"result\":{}", misfit(kind, b.u8()))), Some(Outcome::Misfit)),
        5 => {
            let v = ["5", "\"x\"", "[]", "null", "true"][usize::from(b.u8()) % 5];
            (env(&n, &format!("\"result\":{v}")), Some(Outcome::Misfit))
        }
        6 | 7 => {
            let code = CODES[usize::from(b.u8()) % CODES.len()];
            let member =
                format!("\"error\":{{\"code\":{code},\"message\":\"z{tag}z\",\"data\":{{\"k\":1}}}}");
            (env(&n, &member), Some(Outcome::ClientError(code, tag)))
        }
        8 => (env(&n, "\"error\":\"no\""), Some(Outcome::Misfit)),
        9 => (env(&format!("\"{id}\""), &format!("\"result\":{}", fit(kind, tag))), None),
        10 => {
            let member = format!("\"result\":{},\"error\":{{\"code\":1,\"message\":\"m\"}}", fit(kind, tag));
            (env(&n, &member), None)
        }
        _ => match b.u8() % 3 {
            0 => (format!("{{\"id\":{id},\"result\":{}}}", fit(kind, tag)), None),
            1 => (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"id\":{id},\"result\":{}}}", fit(kind, tag)),
                None,
            ),
            _ => (format!("{{\"jsonrpc\":\"1.0\",\"id\":{id},\"result\":{}}}", fit(kind, tag)), None),
        },
    };
    Reply { bytes: text.into_bytes(), counted: outcome.map(|o| (id, o)) }
}

/// What the host found under one key when its request came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// A result carrying this tag.
    Response(u32),
    /// The client's error (code, tag).
    ClientError(i64, u32),
    Misfit,
    TimedOut,
    Gone,
}

/// The tag `z<n>z` inside `text`.
fn tag_in(text: &str) -> Option<u32> {
    let at = text.find('z')?;
    let rest = &text[at + 1..];
    let end = rest.find('z')?;
    rest[..end].parse().ok()
}

/// Classifies the entry under a key: a response's raw JSON, or an error's code, message
/// and raw JSON.
pub(crate) fn classify(error: bool, raw: &str, code: i64, message: &str) -> Found {
    if !error {
        let v: Value =
            serde_json::from_str(raw).unwrap_or_else(|e| panic!("{e}: a response that is not JSON: {raw}"));
        assert!(v.is_object(), "a response that is not an object: {raw}");
        let tag = tag_in(raw).unwrap_or_else(|| panic!("a response the client never sent: {raw}"));
        return Found::Response(tag);
    }
    let v: Value =
        serde_json::from_str(raw).unwrap_or_else(|e| panic!("{e}: an error that is not JSON: {raw}"));
    assert!(v.is_object(), "an error that is not an object: {raw}");
    if let Some(tag) = tag_in(message) {
        return Found::ClientError(code, tag);
    }
    match code {
        -32001 if message.starts_with("Request timed out") => Found::TimedOut,
        -32000 if message.starts_with("Connection closed") => Found::Gone,
        -32602 if message.starts_with("Invalid response: it does not fit ") => Found::Misfit,
        _ => panic!("an error neither the client nor the engine wrote: {raw}"),
    }
}

/// Whether `found` is what `outcome` becomes.
pub(crate) fn is(found: &Found, outcome: Outcome) -> bool {
    match (found, outcome) {
        (Found::Response(a), Outcome::Response(b)) => *a == b,
        (Found::ClientError(c, a), Outcome::ClientError(d, b)) => *c == d && *a == b,
        (Found::Misfit, Outcome::Misfit) => true,
        _ => false,
    }
}

/// What the host saw when a request came back: each entry (key, what it is).
pub(crate) fn entries(r: &mcp_engine::mrtr::InputResponses<'_>) -> Vec<(String, Found)> {
    let mut out: Vec<(String, Found)> =
        r.iter().map(|(k, v)| (k.to_owned(), classify(false, v.raw(), 0, ""))).collect();
    for (k, e) in r.errors() {
        out.push((k.to_owned(), classify(true, e.raw(), e.code(), &e.message())));
    }
    assert_eq!(out.len(), r.len(), "entries that are neither responses nor errors");
    out
}

/// Checks the keys of a request that came back: exactly the round's, once each.
pub(crate) fn check_keys(found: &[(String, Found)], round: &Round) {
    let mut want: Vec<&str> = round.asked.iter().map(|a| a.kind.key()).collect();
    let mut got: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want, "the keys that came back are not the ones asked: {found:?}");
}
