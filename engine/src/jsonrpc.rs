//! JSON-RPC framing shared by every layer: the reused simd-json tape ([`Parser`]), the
//! request view ([`Req`]), ids and the reply writers.

use core::fmt;

use simd_json::{Buffers, Node, StaticNode, Tape};

use crate::error::PeerError;

use crate::wire::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdRef<'t> {
    Str(&'t str),
    I(i64),
    U(u64),
}

impl IdRef<'_> {
    pub(crate) fn write(self, out: &mut Vec<u8>) {
        match self {
            Self::Str(s) => json::write_str(out, s),
            Self::I(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
            Self::U(n) => json::write_u64(out, n),
        }
    }
}

/// A request (or the id of one) whose response goes out now or later.
#[derive(Clone, Copy)]
pub(crate) enum Reply<'a, 't> {
    /// No id could be read: the error carries none.
    None,
    /// The request's id, from the frame.
    Id(IdRef<'t>),
    /// A stored ticket id.
    Stored(&'a [u8]),
}

impl Reply<'_, '_> {
    pub(crate) fn write(self, out: &mut Vec<u8>) {
        match self {
            Self::None => {}
            Self::Id(id) => {
                out.extend_from_slice(b",\"id\":");
                id.write(out);
            }
            Self::Stored(raw) => {
                out.extend_from_slice(b",\"id\":");
                out.extend_from_slice(raw);
            }
        }
    }
}

/// Writes `{"jsonrpc":"2.0","id":..,"error":{..}}\n`.
pub(crate) fn write_error(
    out: &mut Vec<u8>,
    reply: Reply<'_, '_>,
    code: i32,
    message: fmt::Arguments<'_>,
    data: impl FnOnce(&mut Vec<u8>),
) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
    reply.write(out);
    out.extend_from_slice(b",\"error\":{\"code\":");
    let _ = serde_json::to_writer(&mut *out, &code);
    out.extend_from_slice(b",\"message\":");
    let _ = serde::Serializer::collect_str(&mut serde_json::Serializer::new(&mut *out), &message);
    let mark = out.len();
    out.extend_from_slice(b",\"data\":");
    let before = out.len();
    data(out);
    if out.len() == before {
        out.truncate(mark);
    }
    out.extend_from_slice(b"}}\n");
}

pub(crate) fn field(out: &mut Vec<u8>, key: &str) {
    if out.last() != Some(&b'{') {
        out.push(b',');
    }
    json::write_str(out, key);
    out.push(b':');
}

/// The simd-json buffers and tape, reused for every message.
pub(crate) struct Parser {
    pub(crate) buffers: Buffers,
    pub(crate) tape: Tape<'static>,
}

impl Parser {
    pub(crate) fn new(max_len: usize, max_depth: usize) -> Self {
        Self { buffers: Buffers::with_max_depth(max_len, max_depth), tape: Tape(Vec::new()) }
    }

    /// Parses `bytes` in place and runs `f` over the tape (or the parse error).
    pub(crate) fn parse<R>(
        &mut self,
        bytes: &mut [u8],
        f: impl FnOnce(Result<&[Node<'_>], simd_json::Error>) -> R,
    ) -> R {
        let mut tape = core::mem::replace(&mut self.tape, Tape(Vec::new())).reset();
        let r = match simd_json::fill_tape(bytes, &mut self.buffers, &mut tape) {
            Ok(()) => f(Ok(&tape.0)),
            Err(e) => f(Err(e)),
        };
        self.tape = tape.reset();
        r
    }

    /// Parses a copy of `bytes` (made in `copy`, kept for reuse) and runs `f` over the
    /// tape: a look at a message that is served later, or from elsewhere.
    pub(crate) fn peek<R>(
        &mut self,
        bytes: &[u8],
        copy: &mut Vec<u8>,
        f: impl FnOnce(Result<&[Node<'_>], simd_json::Error>) -> R,
    ) -> R {
        copy.clear();
        copy.extend_from_slice(bytes);
        self.parse(copy, f)
    }
}

/// What a message is to the flow control around ticket slots: while every slot is busy
/// only [`Flow::Ticketed`] requests wait; the rest is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// A request the host is asked to do work for: it takes a ticket.
    Ticketed,
    /// `notifications/cancelled`.
    Cancel,
    /// A client's response to a request of the server's.
    Response,
    /// Anything else (another request or notification, something malformed).
    Other,
}

impl Flow {
    /// The flow class of the message on tape `n`.
    pub(crate) fn of(n: &[Node<'_>]) -> Self {
        if !json::is_object(n, 0) {
            return Self::Other;
        }
        let id = json::get(n, 0, "id").is_some();
        match json::get(n, 0, "method").and_then(|m| json::str_at(n, m)) {
            Some("tools/call" | "resources/read" | "prompts/get" | "completion/complete") if id => {
                Self::Ticketed
            }
            Some("notifications/cancelled") if !id => Self::Cancel,
            Some(_) => Self::Other,
            None if id && (json::get(n, 0, "result").is_some() || json::get(n, 0, "error").is_some()) => {
                Self::Response
            }
            None => Self::Other,
        }
    }
}

/// `params._meta`, decoded once: where each member the engine reads sits on the tape.
#[derive(Clone, Copy, Default)]
pub(crate) struct Meta {
    /// `params._meta` itself, of any type.
    pub(crate) at: Option<usize>,
    /// `io.modelcontextprotocol/protocolVersion`.
    pub(crate) version: Option<usize>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub(crate) capabilities: Option<usize>,
    /// `io.modelcontextprotocol/logLevel`.
    pub(crate) log_level: Option<usize>,
    /// `progressToken`.
    pub(crate) progress_token: Option<usize>,
    /// `traceparent`, `tracestate`, `baggage` (W3C trace context, unprefixed as SEP-414
    /// and the OpenTelemetry MCP conventions name them), of any type.
    pub(crate) traceparent: Option<usize>,
    pub(crate) tracestate: Option<usize>,
    pub(crate) baggage: Option<usize>,
}

/// A request (a message with an id and a method), decoded once: every layer reads this
/// view instead of walking the tape again for the same member.
pub(crate) struct Req<'n, 't> {
    pub(crate) n: &'n [Node<'t>],
    pub(crate) id: IdRef<'t>,
    pub(crate) method: &'t str,
    /// `params`, an object when present.
    pub(crate) params: Option<usize>,
    pub(crate) meta: Meta,
    /// `params.name`, `params.uri` and `params.arguments`, of any type.
    pub(crate) name: Option<usize>,
    pub(crate) uri: Option<usize>,
    pub(crate) arguments: Option<usize>,
}

impl<'t> Req<'_, 't> {
    /// `params.<key>` (first occurrence), of any type.
    pub(crate) fn param(&self, key: &str) -> Option<usize> {
        self.params.and_then(|p| json::get(self.n, p, key))
    }
    /// The string at tape index `at`.
    pub(crate) fn str_at(&self, at: Option<usize>) -> Option<&'t str> {
        at.and_then(|i| json::str_at(self.n, i))
    }
}

/// One JSON-RPC message, decoded once.
pub(crate) enum Message<'n, 't> {
    Request(Req<'n, 't>),
    /// A notification: a method and no id (`params` of any type).
    Notification {
        method: &'t str,
        params: Option<usize>,
    },
    /// A client's response to a request the server sent: the tape indices of its id (a
    /// number or a string) and of its `result` (`Ok`) or `error` (`Err`), exactly one.
    /// Never answered.
    Response {
        id: usize,
        outcome: Result<usize, usize>,
    },
    /// A malformed notification or response: never answered.
    Ignored,
    /// Refused before its method is looked at.
    Refused(Reply<'static, 't>, PeerError<'t>),
}

/// Decodes the envelope of the message at the root of `n`: the members of the message
/// and of its `params` and `params._meta` are found in one pass each.
///
/// One value for one name: a request whose top level repeats a member name the envelope
/// reads (`jsonrpc`, `id`, `method`, `params`, `_meta`, `result`, `error`) is `-32600`
/// (echoing the first id, as every other error does), one whose `params` repeat a member name
/// in any object at any depth is `-32602`, before any member of `params` is read by
/// anyone; a notification that does either is ignored. So the header matcher, the schema
/// validator and the host can never see different values for one name. `names` is the
/// reused buffer of that check (see [`json::Names`] for its bound).
pub(crate) fn decode<'n, 't>(n: &'n [Node<'t>], names: &mut json::Names) -> Message<'n, 't> {
    match n.first() {
        Some(Node::Object { .. }) => {}
        Some(Node::Array { .. }) => return Message::Refused(Reply::None, PeerError::Batch),
        _ => return Message::Refused(Reply::None, PeerError::NotAnObject),
    }
    // A repeated member the envelope reads is refused below, once the id is known.
    let (repeated, found) = match json::members_by(n, 0, envelope_slot) {
        Ok(found) => (None, found),
        Err(name) => {
            const ENVELOPE: [&str; 7] = ["jsonrpc", "id", "method", "params", "_meta", "result", "error"];
            (Some(name), json::members(n, 0, ENVELOPE))
        }
    };
    let [jsonrpc, id, method, params, top_meta, result, error] = found;
    if method.is_none() && (result.is_some() || error.is_some()) {
        let well_formed = repeated.is_none() && jsonrpc.and_then(|i| json::str_at(n, i)) == Some("2.0");
        return match (id, result, error) {
            (Some(id), Some(r), None) if well_formed => Message::Response { id, outcome: Ok(r) },
            (Some(id), None, Some(e)) if well_formed => Message::Response { id, outcome: Err(e) },
            _ => Message::Ignored,
        };
    }
    // The id first, so every later error can echo it.
    let id = match id {
        None => None,
        Some(i) => match n[i] {
            Node::String(s) => Some(IdRef::Str(s)),
            Node::Static(StaticNode::I64(v)) => Some(IdRef::I(v)),
            Node::Static(StaticNode::U64(v)) => Some(IdRef::U(v)),
            _ => return Message::Refused(Reply::None, PeerError::BadId),
        },
    };
    let reply = id.map_or(Reply::None, Reply::Id);
    if let Some(name) = repeated {
        if id.is_none() && method.is_some() {
            return Message::Ignored;
        }
        return Message::Refused(reply, PeerError::RepeatedMember(name));
    }
    if jsonrpc.and_then(|i| json::str_at(n, i)) != Some("2.0") {
        if id.is_none() && method.is_some() {
            return Message::Ignored; // a notification is never answered, even a malformed one
        }
        return Message::Refused(reply, PeerError::BadJsonrpc);
    }
    let Some(mi) = method else {
        return Message::Refused(reply, PeerError::NoMethod);
    };
    let Some(method) = json::str_at(n, mi) else {
        if id.is_none() {
            return Message::Ignored;
        }
        return Message::Refused(reply, PeerError::MethodNotString);
    };
    let Some(id) = id else {
        if params.is_some_and(|p| names.repeated_below(n, p).is_some()) {
            return Message::Ignored;
        }
        return Message::Notification { method, params };
    };
    if top_meta.is_some() {
        return Message::Refused(reply, PeerError::TopLevelMeta);
    }
    let [meta_at, name, uri, arguments] = match params {
        Some(p) if json::is_object(n, p) => {
            if let Some(repeated) = names.repeated_below(n, p) {
                return Message::Refused(reply, PeerError::RepeatedParam(repeated));
            }
            json::members_by(n, p, params_slot).unwrap_or_default()
        }
        Some(_) => return Message::Refused(reply, PeerError::ParamsNotObject),
        None => [None; 4],
    };
    let mut meta = Meta { at: meta_at, ..Meta::default() };
    if let Some(m) = meta_at {
        [
            meta.version,
            meta.capabilities,
            meta.log_level,
            meta.progress_token,
            meta.traceparent,
            meta.tracestate,
            meta.baggage,
        ] = json::members_by(n, m, meta_slot).unwrap_or_default();
    }
    Message::Request(Req { n, id, method, params, meta, name, uri, arguments })
}

/// Where each member of a message goes (`decode`).
fn envelope_slot(name: &str) -> Option<usize> {
    Some(match name {
        "jsonrpc" => 0,
        "id" => 1,
        "method" => 2,
        "params" => 3,
        "_meta" => 4,
        "result" => 5,
        "error" => 6,
        _ => return None,
    })
}

/// Where each member of `params` every layer reads goes (`decode`; repeated names were
/// refused before).
fn params_slot(name: &str) -> Option<usize> {
    Some(match name {
        "_meta" => 0,
        "name" => 1,
        "uri" => 2,
        "arguments" => 3,
        _ => return None,
    })
}

/// Where each member of `params._meta` the engine reads goes (`decode`).
fn meta_slot(name: &str) -> Option<usize> {
    Some(match name {
        "io.modelcontextprotocol/protocolVersion" => 0,
        "io.modelcontextprotocol/clientCapabilities" => 1,
        "io.modelcontextprotocol/logLevel" => 2,
        "progressToken" => 3,
        "traceparent" => 4,
        "tracestate" => 5,
        "baggage" => 6,
        _ => return None,
    })
}
