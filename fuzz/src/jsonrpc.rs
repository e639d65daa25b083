//! jsonrpc: one generated JSON-RPC frame; and the generator of JSON-RPC messages (with the
//! model of what the engine must answer) the op_sequence harness shares.

use mcp_engine::Commands;
use std::collections::HashMap;

use mcp_engine::error::{AnswerError, HostError, MAX_TICKET_ID_LEN, NotifyError};
use mcp_engine::internal::{CURSOR_LEN, ListKind, write_json_str};
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, LogLevel, PromptMessage, PromptOutput,
    ResourceContents, Ticket, Tool, ToolOutput,
};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::common::{Bytes, EvKind, check_line, lossy, output_lines, rich_catalog, write_styled};

/// The engine writes strings and content blocks itself; they must be `serde_json`'s bytes.
/// Strings are checked on the writer itself; content blocks as a tool's answer writes them
/// (the block writers are not exported: they are checked where the engine uses them).
fn writers_match_serde(text: &str) {
    let mut ours = Vec::new();
    write_json_str(&mut ours, text);
    assert_eq!(ours, serde_json::to_vec(text).unwrap_or_default(), "string {text:?}");
    let half = text.char_indices().nth(text.chars().count() / 2).map_or(text.len(), |(i, _)| i);
    let (a, b) = text.split_at(half);
    let blocks = [
        Content::text(text),
        Content::image(a.as_bytes(), b),
        Content::ResourceLink { uri: a, name: b, description: Some(text), mime_type: None },
        Content::embedded(ResourceContents::text(a, Some(b), text)),
        Content::embedded(ResourceContents::blob_base64(b, None, a)),
    ];
    let catalog = Catalog::builder()
        .tool(Tool::new("w"))
        .build()
        .unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"));
    let mut cfg = Config::new("fuzz", "0");
    cfg.max_frame_len(512);
    let mut e = Engine::new(cfg, catalog);
    let call = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w","arguments":{},"#,
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
        r#""io.modelcontextprotocol/clientCapabilities":{}}}}"#,
        "\n"
    );
    assert_eq!(e.handle_input(Instant::ZERO, call.as_bytes()), call.len());
    let Some(Event::CallTool(c)) = e.poll_event() else { panic!("no tool call for {call}") };
    c.answer(&ToolOutput::new(&blocks)).unwrap_or_else(|e| panic!("the answer is refused: {e}"));
    let line = output_lines(e.pending_output())[0];
    let raw = |json: &str, key: &str| -> String {
        let map: HashMap<String, &RawValue> = serde_json::from_str(json)
            .unwrap_or_else(|e| panic!("{e}: not a JSON object: {:?}", lossy(json.as_bytes())));
        map.get(key).unwrap_or_else(|| panic!("no {key:?} in {:?}", lossy(json.as_bytes()))).get().to_owned()
    };
    let line = core::str::from_utf8(line).unwrap_or_else(|e| panic!("{e}: {:?}", lossy(line)));
    let content = raw(&raw(line, "result"), "content");
    let written: Vec<&RawValue> = serde_json::from_str(&content).unwrap_or_else(|e| panic!("{e}: {content}"));
    assert_eq!(written.len(), blocks.len(), "{content}");
    for (ours, block) in written.iter().zip(&blocks) {
        assert_eq!(ours.get().as_bytes(), serde_json::to_vec(block).unwrap_or_default(), "{block:?}");
    }
}

/// Renders JSON text from fuzz choices and records what the engine's parser will make of
/// it: how deep it nests, and whether it is broken (not valid UTF-8 JSON).
pub(crate) struct Json<'b, 'a> {
    pub(crate) b: &'b mut Bytes<'a>,
    /// Whitespace between tokens (bits 0-1) and string escaping (bits 2-3).
    pub(crate) style: u8,
    /// Deepest container written (the top-level value is at depth 1).
    pub(crate) depth: usize,
    /// Containers are written only up to this depth.
    pub(crate) max_nest: usize,
    /// Something that makes the text invalid JSON was written (a lone surrogate, a raw
    /// control character, invalid UTF-8, a bad escape).
    pub(crate) broken: bool,
    /// Prefer well-formed requests (see [`Json::choose`]).
    pub(crate) bias: bool,
}

/// Object keys the engine looks for, and a few it does not.
const KEYS: &[&str] = &[
    "name",
    "uri",
    "arguments",
    "_meta",
    "cursor",
    "text",
    "a",
    "b",
    "ref",
    "argument",
    "value",
    "type",
    "level",
    "requestId",
    "progressToken",
    "protocolVersion",
    "capabilities",
    "id",
    "method",
    "jsonrpc",
    "params",
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/logLevel",
    "sampling",
    "n",
    "context",
    "",
];

impl Json<'_, '_> {
    /// A choice below `n`: with `bias`, `good` most of the time (so that most generated
    /// requests are well-formed and reach the host), else any.
    pub(crate) fn choose(&mut self, n: usize, good: usize) -> usize {
        if !self.bias {
            return self.b.below(n);
        }
        match self.b.u8() {
            v if v < 208 => good,
            v => usize::from(v) % n,
        }
    }

    pub(crate) fn ws(&self, out: &mut Vec<u8>) {
        match self.style & 3 {
            0 => {}
            1 => out.push(b' '),
            2 => out.extend_from_slice(b"\t "),
            _ => out.extend_from_slice(b" \r\t"),
        }
    }

    pub(crate) fn string(&self, out: &mut Vec<u8>, s: &str) {
        write_styled(out, s, self.style >> 2);
    }

    /// A string that is not valid JSON.
    pub(crate) fn broken_string(&mut self, out: &mut Vec<u8>) {
        const BROKEN: [&[u8]; 8] = [
            b"\"\\ud800\"",
            b"\"\\udc00x\"",
            b"\"a\x01b\"",
            b"\"a\xffb\"",
            b"\"\xc3\"",
            b"\"\\x\"",
            b"\"\\u12\"",
            b"\"\\ud83d\\u0041\"",
        ];
        out.extend_from_slice(self.b.pick(&BROKEN));
        self.broken = true;
    }

    pub(crate) fn key(&mut self) -> String {
        if self.b.u8() < 200 { self.b.pick(KEYS).to_owned() } else { self.b.text(8) }
    }

    /// A random value at nesting `depth` (containers count from 1 at the top level).
    pub(crate) fn value(&mut self, out: &mut Vec<u8>, depth: usize) {
        let container = depth <= self.max_nest;
        match self.b.below(24) {
            0 | 1 => out.extend_from_slice(b"null"),
            2 => out.extend_from_slice(b"true"),
            3 => out.extend_from_slice(b"false"),
            4 | 5 => out.extend_from_slice(i64::from(self.b.u8() as i8).to_string().as_bytes()),
            6 => out.extend_from_slice((self.b.u64() as i64).to_string().as_bytes()),
            7 => out.extend_from_slice(self.b.u64().to_string().as_bytes()),
            8 => {
                const FLOATS: [&str; 10] = [
                    "1.5",
                    "-0",
                    "1e3",
                    "1E-7",
                    "-2.5e+10",
                    "0.1",
                    "1e400",
                    "-0.0",
                    "1.7976931348623157e308",
                    "5e-324",
                ];
                let f = self.b.pick(&FLOATS);
                // Out of the range of an f64: the parser refuses it (JSON lets it).
                self.broken |= f == "1e400";
                out.extend_from_slice(f.as_bytes());
            }
            9..=13 => {
                let s = self.b.text(24);
                self.string(out, &s);
            }
            14 if self.b.u8() < 16 => self.broken_string(out),
            15..=17 if container => {
                self.depth = self.depth.max(depth);
                out.push(b'[');
                for i in 0..self.b.below(4) {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.ws(out);
                    self.value(out, depth + 1);
                }
                self.ws(out);
                out.push(b']');
            }
            18..=21 if container => {
                self.depth = self.depth.max(depth);
                let mut members = Vec::new();
                for _ in 0..self.b.below(5) {
                    let k = self.key();
                    let mut v = Vec::new();
                    self.value(&mut v, depth + 1);
                    members.push((k, v));
                }
                self.object(out, &members);
            }
            _ => out.extend_from_slice(b"0"),
        }
    }

    /// A value that is not a container.
    pub(crate) fn scalar(&mut self, out: &mut Vec<u8>) {
        match self.b.below(4) {
            0 => out.extend_from_slice(b"null"),
            1 => out.extend_from_slice(b"-12.5e3"),
            2 => {
                let s = self.b.text(8);
                self.string(out, &s);
            }
            _ => out.extend_from_slice(self.b.u64().to_string().as_bytes()),
        }
    }

    /// Writes an object of already rendered members (the caller records its depth).
    pub(crate) fn object(&mut self, out: &mut Vec<u8>, members: &[(String, Vec<u8>)]) {
        out.push(b'{');
        for (i, (k, v)) in members.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.ws(out);
            self.string(out, k);
            self.ws(out);
            out.push(b':');
            self.ws(out);
            out.extend_from_slice(v);
        }
        self.ws(out);
        out.push(b'}');
    }

    /// An object at `depth` from members, recording the depth.
    pub(crate) fn object_at(&mut self, depth: usize, members: &[(String, Vec<u8>)]) -> Vec<u8> {
        self.depth = self.depth.max(depth);
        let mut out = Vec::new();
        self.object(&mut out, members);
        out
    }

    pub(crate) fn str_value(&self, s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        self.string(&mut out, s);
        out
    }

    /// A value that is neither an object nor a string.
    pub(crate) fn non_object(&mut self, depth: usize) -> Vec<u8> {
        self.depth = self.depth.max(depth);
        let choices: [&[u8]; 6] = [b"[]", b"[1,2]", b"7", b"null", b"true", b"-1.5"];
        self.b.pick(&choices).to_vec()
    }

    /// A value that is neither a string nor an integer (an invalid id).
    pub(crate) fn invalid_id(&mut self, depth: usize) -> Vec<u8> {
        self.depth = self.depth.max(depth);
        let choices: [&[u8]; 7] = [b"[]", b"[1,2]", b"{}", b"null", b"true", b"-1.5", b"1e0"];
        self.b.pick(&choices).to_vec()
    }

    /// `v` (an id or a token) as JSON, strings escaped in the writer's style.
    pub(crate) fn id_value(&self, v: &Value) -> Vec<u8> {
        match v {
            Value::String(s) => self.str_value(s),
            other => other.to_string().into_bytes(),
        }
    }
}

/// The methods the engine knows, and a few it does not.
const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "resources/subscribe",
    "sampling/createMessage",
    "tasks/get",
    "",
];

/// The methods whose requests reach the host.
const TICKETED: &[&str] = &["tools/call", "resources/read", "prompts/get", "completion/complete"];

pub(crate) const REVISIONS: &[&str] = &["2026-07-28", "2025-11-25", "2025-06-18", "2024-11-05"];

/// What the engine must write for one frame.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expect {
    /// Nothing: a notification, or a response (this server sends no requests).
    Nothing,
    /// One error without an id: not JSON, not an object, a bad id, too deep.
    Anonymous,
    /// One `-32600` error for a frame past the cap: with the frame's first id when the engine
    /// could read it from the bytes up to the cap (`wire/frame_id.rs`), else without an id;
    /// never another id.
    TooLong(Option<Value>),
    /// Exactly one response (result or error) carrying this id.
    Reply(Value),
}

/// One generated frame (without its newline) and what the engine must make of it.
pub(crate) struct Frame {
    pub(crate) bytes: Vec<u8>,
    pub(crate) expect: Expect,
    /// The method (first occurrence), when it is a string.
    pub(crate) method: Option<String>,
    /// The request's `_meta.progressToken`, when the engine can keep it.
    pub(crate) token: Option<Value>,
}

/// Which id a generated message carries.
#[derive(Debug, Clone)]
pub(crate) enum IdPlan {
    /// Any: absent, valid of every type, invalid.
    Random,
    /// This one (a valid id).
    Use(Value),
    /// None: a notification.
    Absent,
    /// One of an invalid type.
    Invalid,
}

/// Settings of the message generator.
pub(crate) struct MsgCfg<'c> {
    pub(crate) depth_limit: usize,
    pub(crate) frame_limit: usize,
    pub(crate) id: IdPlan,
    /// Embedded where the host sees it (tool and prompt arguments, the uri, the completion
    /// value) so that the harness can tell which request an event is for.
    pub(crate) marker: Option<&'c str>,
    /// The progress token to send (`Random`: any).
    pub(crate) token: Option<Value>,
    /// Prefer the methods that reach the host, and well-formed requests.
    pub(crate) ticketed: bool,
}

/// The meaning of one top-level member, for the model.
enum Sem {
    /// `id`: the id when it is valid (a string or an integer).
    Id(Option<Value>),
    /// `jsonrpc`: whether it is the string "2.0".
    Jsonrpc(bool),
    /// `method`: the method when it is a string.
    Method(Option<String>),
    /// `result` or `error`.
    Response,
    Other,
}

/// A generated JSON-RPC message (or, rarely, a batch or a scalar), and what the engine
/// must answer: the model follows JSON-RPC 2.0 as the engine applies it (the first of
/// repeated member names counts; a response is never answered; a notification, even a
/// malformed one, is never answered; an id that is neither a string nor an integer makes
/// the error anonymous).
pub(crate) fn message(b: &mut Bytes<'_>, cfg: &MsgCfg<'_>) -> Frame {
    let style = b.u8();
    let mut j = Json { b, style, depth: 0, max_nest: cfg.depth_limit + 2, broken: false, bias: cfg.ticketed };
    let shape = j.choose(32, 2);
    if shape < 2 {
        let mut out = Vec::new();
        if shape == 0 {
            // A batch.
            j.depth = 1;
            out.push(b'[');
            for i in 0..j.b.below(3) {
                if i > 0 {
                    out.push(b',');
                }
                j.value(&mut out, 2);
            }
            out.push(b']');
        } else {
            j.scalar(&mut out);
        }
        return Frame { bytes: out, expect: Expect::Anonymous, method: None, token: None };
    }
    let mut members: Vec<(String, Vec<u8>, Sem)> = Vec::new();
    // The id.
    let id = match &cfg.id {
        IdPlan::Use(v) => Some((j.id_value(v), Some(v.clone()))),
        IdPlan::Absent => None,
        IdPlan::Invalid => Some((j.invalid_id(2), None)),
        IdPlan::Random => random_id(&mut j),
    };
    if let Some((text, valid)) = id {
        members.push(("id".into(), text, Sem::Id(valid)));
    }
    // The version.
    match j.choose(16, 3) {
        0 => {}
        1 => {
            let wrong = j.b.pick(&["1.0", "2.00", "", "2.0 ", "2"]);
            members.push(("jsonrpc".into(), j.str_value(wrong), Sem::Jsonrpc(false)));
        }
        2 => members.push(("jsonrpc".into(), b"2.0".to_vec(), Sem::Jsonrpc(false))),
        _ => members.push(("jsonrpc".into(), j.str_value("2.0"), Sem::Jsonrpc(true))),
    }
    // The method.
    let method = match j.choose(16, 3) {
        0 => None,
        1 => {
            let v = j.non_object(2);
            members.push(("method".into(), v, Sem::Method(None)));
            None
        }
        2 => Some(j.b.text(16)),
        n if cfg.ticketed && n < 10 => Some(j.b.pick(TICKETED).to_owned()),
        _ => Some(j.b.pick(METHODS).to_owned()),
    };
    let mut token = None;
    if let Some(m) = &method {
        members.push(("method".into(), j.str_value(m), Sem::Method(Some(m.clone()))));
        // The params.
        match j.choose(10, 2) {
            0 => {}
            1 => {
                let v = j.non_object(2);
                members.push(("params".into(), v, Sem::Other));
            }
            _ => {
                let (p, t) = params(&mut j, m, cfg);
                token = t;
                members.push(("params".into(), p, Sem::Other));
            }
        }
    }
    // Extra members: misplaced `_meta`, response members, repeated names, noise.
    for _ in 0..j.choose(3, 0) {
        match j.b.below(8) {
            0 => {
                let v = j.object_at(2, &[]);
                members.push(("_meta".into(), v, Sem::Other));
            }
            1 => members.push(("result".into(), b"{}".to_vec(), Sem::Response)),
            2 => members.push(("error".into(), b"{\"code\":1,\"message\":\"m\"}".to_vec(), Sem::Response)),
            3 => {
                let v = j.invalid_id(2);
                members.push(("id".into(), v, Sem::Id(None)));
            }
            4 => members.push(("jsonrpc".into(), j.str_value("1.0"), Sem::Jsonrpc(false))),
            5 => members.push(("method".into(), j.str_value("ping"), Sem::Method(Some("ping".into())))),
            _ => {
                let k = j.key();
                if !matches!(k.as_str(), "id" | "jsonrpc" | "method" | "result" | "error" | "params") {
                    let mut v = Vec::new();
                    j.value(&mut v, 2);
                    members.push((k, v, Sem::Other));
                }
            }
        }
    }
    // Member order.
    if j.b.u8() & 1 == 1 {
        for i in 0..members.len() {
            let k = i + j.b.below(members.len() - i);
            members.swap(i, k);
        }
    }
    let rendered: Vec<(String, Vec<u8>)> = members.iter().map(|(k, v, _)| (k.clone(), v.clone())).collect();
    let bytes = j.object_at(1, &rendered);
    let (depth, broken) = (j.depth, j.broken);

    // The model.
    let first_id =
        members.iter().find_map(|(_, _, s)| if let Sem::Id(v) = s { Some(v.clone()) } else { None });
    let jsonrpc_ok =
        members.iter().find_map(|(_, _, s)| if let Sem::Jsonrpc(ok) = s { Some(*ok) } else { None });
    let first_method =
        members.iter().find_map(|(_, _, s)| if let Sem::Method(m) = s { Some(m.clone()) } else { None });
    let response = members.iter().any(|(_, _, s)| matches!(s, Sem::Response));
    let expect = if bytes.len() > cfg.frame_limit {
        Expect::TooLong(first_id.clone().flatten())
    } else if broken || depth > cfg.depth_limit {
        Expect::Anonymous
    } else if first_method.is_none() && response {
        Expect::Nothing
    } else {
        match first_id {
            Some(None) => Expect::Anonymous,
            id => {
                let id = id.flatten();
                let reply = id.clone().map_or(Expect::Anonymous, Expect::Reply);
                if jsonrpc_ok != Some(true) {
                    if id.is_none() && first_method.is_some() { Expect::Nothing } else { reply }
                } else {
                    match (&first_method, id) {
                        (None, _) => reply,
                        (Some(_), None) => Expect::Nothing,
                        (Some(_), Some(_)) => reply,
                    }
                }
            }
        }
    };
    let method = first_method.flatten();
    Frame { bytes, expect, method, token }
}

/// A random id: absent, valid (integers, strings, long strings), invalid, broken.
fn random_id(j: &mut Json<'_, '_>) -> Option<(Vec<u8>, Option<Value>)> {
    Some(match j.b.below(16) {
        0..=2 => return None,
        3..=5 => {
            let n = i64::from(j.b.u8() as i8);
            (n.to_string().into_bytes(), Some(Value::from(n)))
        }
        6 => {
            let n = j.b.u64() as i64;
            (n.to_string().into_bytes(), Some(Value::from(n)))
        }
        7 => {
            let n = j.b.u64() | 1 << 63;
            (n.to_string().into_bytes(), Some(Value::from(n)))
        }
        8..=10 => {
            let s = j.b.text(12);
            (j.str_value(&s), Some(Value::String(s)))
        }
        11 => {
            let s = format!("{}{}", "l".repeat(120), j.b.text(40));
            (j.str_value(&s), Some(Value::String(s)))
        }
        12 => (b"-0".to_vec(), Some(Value::from(0))),
        13 => {
            let text = j.b.pick(&["1.0", "1e2", "-1.5", "18446744073709551616", "-9223372036854775809"]);
            (text.as_bytes().to_vec(), None)
        }
        14 => (j.invalid_id(2), None),
        _ => {
            let mut out = Vec::new();
            j.broken_string(&mut out);
            (out, None)
        }
    })
}

/// `_meta`: the revision, the client capabilities, a log level, a progress token.
fn meta(j: &mut Json<'_, '_>, cfg: &MsgCfg<'_>, depth: usize) -> Option<(Vec<u8>, Option<Value>)> {
    match j.choose(10, 2) {
        0 => return None,
        1 => return Some((j.non_object(depth), None)),
        _ => {}
    }
    let mut m: Vec<(String, Vec<u8>)> = Vec::new();
    match j.choose(8, 7) {
        0 => {}
        1 => m.push(("io.modelcontextprotocol/protocolVersion".into(), b"2026".to_vec())),
        2 => {
            let t = j.b.text(12);
            m.push(("io.modelcontextprotocol/protocolVersion".into(), j.str_value(&t)));
        }
        n => {
            let r = REVISIONS[[3, 2, 1, 0, 0][n - 3]];
            m.push(("io.modelcontextprotocol/protocolVersion".into(), j.str_value(r)));
        }
    }
    match j.choose(6, 2) {
        0 => {}
        1 => m.push(("io.modelcontextprotocol/clientCapabilities".into(), j.str_value("yes"))),
        2 | 3 => {
            let caps = j.object_at(depth + 1, &[]);
            m.push(("io.modelcontextprotocol/clientCapabilities".into(), caps));
        }
        _ => {
            let sampling = j.object_at(depth + 2, &[]);
            let caps = j.object_at(depth + 1, &[("sampling".into(), sampling)]);
            m.push(("io.modelcontextprotocol/clientCapabilities".into(), caps));
        }
    }
    match j.b.below(8) {
        0..=3 => {}
        4 | 5 => {
            let level = j.b.pick(&LOG_LEVEL_NAMES);
            m.push(("io.modelcontextprotocol/logLevel".into(), j.str_value(level)));
        }
        6 => {
            let t = j.b.text(8);
            m.push(("io.modelcontextprotocol/logLevel".into(), j.str_value(&t)));
        }
        _ => m.push(("io.modelcontextprotocol/logLevel".into(), b"3".to_vec())),
    }
    let token = match &cfg.token {
        Some(t) => {
            m.push(("progressToken".into(), j.id_value(t)));
            Some(t.clone())
        }
        None => match j.b.below(8) {
            0..=3 => None,
            4 => {
                let t = j.b.text(10);
                m.push(("progressToken".into(), j.str_value(&t)));
                Some(Value::String(t))
            }
            5 => {
                let t = i64::from(j.b.u16() as i16);
                m.push(("progressToken".into(), t.to_string().into_bytes()));
                Some(Value::from(t))
            }
            6 => {
                let v = j.invalid_id(depth + 1);
                m.push(("progressToken".into(), v));
                None
            }
            _ => {
                // Too long for the engine to keep: no progress can be sent.
                let t = "p".repeat(130);
                m.push(("progressToken".into(), j.str_value(&t)));
                None
            }
        },
    };
    // The engine keeps a token of at most 128 bytes of JSON.
    let token = token.filter(|t| t.to_string().len() <= MAX_TICKET_ID_LEN);
    if j.b.below(4) == 0 {
        let k = j.key();
        if !k.starts_with("io.") && k != "progressToken" {
            let mut v = Vec::new();
            j.value(&mut v, depth + 1);
            m.push((k, v));
        }
    }
    Some((j.object_at(depth, &m), token))
}

pub(crate) const LOG_LEVEL_NAMES: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// `text` with the marker, if any, somewhere in it.
fn marked(j: &mut Json<'_, '_>, cfg: &MsgCfg<'_>) -> String {
    let t = j.b.text(6);
    match cfg.marker {
        Some(m) => format!("{m}{t}"),
        None => t,
    }
}

/// The params object of `method` (at depth 2), and the progress token it carries.
fn params(j: &mut Json<'_, '_>, method: &str, cfg: &MsgCfg<'_>) -> (Vec<u8>, Option<Value>) {
    let mut p: Vec<(String, Vec<u8>)> = Vec::new();
    let marked_mode = cfg.marker.is_some();
    match method {
        "initialize" => {
            match j.b.below(8) {
                0 => {}
                1 => p.push(("protocolVersion".into(), b"20251125".to_vec())),
                2 => {
                    let t = j.b.text(12);
                    p.push(("protocolVersion".into(), j.str_value(&t)));
                }
                _ => {
                    let r = j.b.pick(REVISIONS);
                    p.push(("protocolVersion".into(), j.str_value(r)));
                }
            }
            p.push(("capabilities".into(), j.object_at(3, &[])));
            let info = [("name".to_owned(), j.str_value("f")), ("version".to_owned(), j.str_value("1"))];
            p.push(("clientInfo".into(), j.object_at(3, &info)));
        }
        "tools/call" => {
            let name = match j.choose(10, 3) {
                0 => None,
                1 => Some(j.non_object(3)),
                2 => {
                    let t = j.b.text(10);
                    Some(j.str_value(&t))
                }
                6 => Some(j.str_value("typed")),
                7 => Some(j.str_value("needs")),
                8 => Some(j.str_value("out")),
                _ => Some(j.str_value("plain")),
            };
            if let Some(n) = name {
                p.push(("name".into(), n));
            }
            let args = match j.choose(8, 2) {
                0 if !marked_mode => None,
                0 | 1 => Some(j.non_object(3)),
                _ => {
                    let mut a: Vec<(String, Vec<u8>)> = Vec::new();
                    if let Some(m) = cfg.marker {
                        a.push(("seq".into(), j.str_value(m)));
                    }
                    match j.b.below(4) {
                        0 => {}
                        1 => a.push(("text".into(), b"12".to_vec())),
                        _ => {
                            let t = j.b.text(10);
                            a.push(("text".into(), j.str_value(&t)));
                        }
                    }
                    for _ in 0..j.b.below(3) {
                        let k = j.key();
                        if k != "seq" {
                            let mut v = Vec::new();
                            j.value(&mut v, 4);
                            a.push((k, v));
                        }
                    }
                    Some(j.object_at(3, &a))
                }
            };
            if let Some(a) = args {
                p.push(("arguments".into(), a));
            }
        }
        "resources/read" => {
            let uri = match (j.choose(8, 2), marked_mode) {
                (0, false) => None,
                (0, true) | (1, false) => Some(j.non_object(3)),
                (1, true) | (4, false) => {
                    let t = marked(j, cfg);
                    Some(j.str_value(&t))
                }
                (2, false) => Some(j.str_value("x://r")),
                (3, false) => Some(j.str_value("x://s")),
                (2..=6, _) => {
                    let id = marked(j, cfg);
                    let rest = j.b.text(10);
                    Some(j.str_value(&format!("x://t/{id}/{rest}")))
                }
                _ => {
                    let a = marked(j, cfg);
                    Some(j.str_value(&format!("x://u/{a}")))
                }
            };
            if let Some(u) = uri {
                p.push(("uri".into(), u));
            }
        }
        "prompts/get" => {
            match j.choose(8, 3) {
                0 if !marked_mode => {}
                1 => {
                    let t = j.b.text(6);
                    p.push(("name".into(), j.str_value(&t)));
                }
                2 => p.push(("name".into(), j.str_value("q"))),
                _ => p.push(("name".into(), j.str_value("p"))),
            }
            let args = match j.choose(8, 5) {
                0 if !marked_mode => None,
                0 | 1 => Some(j.non_object(3)),
                2 => {
                    let m = marked(j, cfg);
                    Some(j.object_at(3, &[("a".into(), b"1".to_vec()), ("seq".into(), j.str_value(&m))]))
                }
                3 => {
                    let (a, t) = (marked(j, cfg), j.b.text(6));
                    Some(j.object_at(3, &[("a".into(), j.str_value(&a)), ("b".into(), j.str_value(&t))]))
                }
                4 => {
                    let (a, t) = (marked(j, cfg), j.b.text(6));
                    Some(j.object_at(3, &[("a".into(), j.str_value(&a)), ("c".into(), j.str_value(&t))]))
                }
                _ => {
                    let a = marked(j, cfg);
                    Some(j.object_at(3, &[("a".into(), j.str_value(&a))]))
                }
            };
            if let Some(a) = args {
                p.push(("arguments".into(), a));
            }
        }
        "completion/complete" => {
            let good = 1 + 3 * usize::from(j.b.u8() & 1);
            let reference: Option<Vec<(String, Vec<u8>)>> = match j.choose(7, good) {
                0 => None,
                1 | 2 => {
                    Some(vec![("type".into(), j.str_value("ref/prompt")), ("name".into(), j.str_value("p"))])
                }
                3 => {
                    let t = j.b.text(6);
                    Some(vec![("type".into(), j.str_value("ref/prompt")), ("name".into(), j.str_value(&t))])
                }
                4 | 5 => Some(vec![
                    ("type".into(), j.str_value("ref/resource")),
                    ("uri".into(), j.str_value("x://t/{id}/{+rest}")),
                ]),
                _ => {
                    let t = j.b.text(12);
                    Some(vec![("type".into(), j.str_value("ref/resource")), ("uri".into(), j.str_value(&t))])
                }
            };
            let prompt_ref = reference.as_ref().is_some_and(|r| r.len() == 2 && r[1].0 == "name");
            if let Some(r) = reference {
                p.push(("ref".into(), j.object_at(3, &r)));
            }
            match j.choose(8, 2) {
                0 => {}
                1 => p.push(("argument".into(), j.non_object(3))),
                _ => {
                    let fits: &[&str] = if prompt_ref { &["a", "b"] } else { &["id", "rest"] };
                    let name =
                        if j.choose(2, 0) == 0 { j.b.pick(fits) } else { j.b.pick(&["a", "id", "zz"]) };
                    let value = marked(j, cfg);
                    let arg =
                        [("name".to_owned(), j.str_value(name)), ("value".to_owned(), j.str_value(&value))];
                    p.push(("argument".into(), j.object_at(3, &arg)));
                }
            }
            match j.b.below(4) {
                0 | 1 => {}
                2 => {
                    let t = j.b.text(6);
                    let args = j.object_at(5, &[("a".into(), j.str_value(&t))]);
                    p.push(("context".into(), j.object_at(3, &[("arguments".into(), args)])));
                }
                _ => p.push(("context".into(), j.object_at(3, &[("arguments".into(), b"5".to_vec())]))),
            }
        }
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            let kinds = [
                ListKind::Tools,
                ListKind::Resources,
                ListKind::ResourceTemplates,
                ListKind::Prompts,
                ListKind::Skills,
            ];
            let own = match method {
                "tools/list" => ListKind::Tools,
                "resources/list" => ListKind::Resources,
                "resources/templates/list" => ListKind::ResourceTemplates,
                _ => ListKind::Prompts,
            };
            match j.b.below(8) {
                0..=3 => {}
                n @ (4 | 5) => {
                    let kind = if n == 4 { own } else { j.b.pick(&kinds) };
                    // Cursor-shaped (the version byte, the list's tag, then anything, as
                    // 40 base64url characters): what a client forging one would send. It
                    // must be refused, not panic, whatever the list.
                    let tag = match kind {
                        ListKind::Tools => b't',
                        ListKind::Resources => b'r',
                        ListKind::ResourceTemplates => b'u',
                        ListKind::Skills => b's',
                        ListKind::Prompts => b'p',
                    };
                    let mut raw = [0u8; 30];
                    raw[0] = 2 | (j.b.u8() & 0x80);
                    raw[1] = tag;
                    for b in &mut raw[2..] {
                        *b = j.b.u8();
                    }
                    let c = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, raw);
                    debug_assert_eq!(c.len(), CURSOR_LEN);
                    p.push(("cursor".into(), j.str_value(&c)));
                }
                6 => {
                    let t = j.b.text(12);
                    p.push(("cursor".into(), j.str_value(&t)));
                }
                _ => p.push(("cursor".into(), j.non_object(3))),
            }
        }
        "logging/setLevel" => match j.b.below(4) {
            0 => {}
            1 => {
                let t = j.b.text(8);
                p.push(("level".into(), j.str_value(&t)));
            }
            _ => {
                let level = j.b.pick(&LOG_LEVEL_NAMES);
                p.push(("level".into(), j.str_value(level)));
            }
        },
        "notifications/cancelled" => {
            if let Some((id, _)) = random_id(j) {
                p.push(("requestId".into(), id));
            }
        }
        _ => {}
    }
    let mut token = None;
    if (method != "initialize" || j.b.below(4) == 0)
        && let Some((m, t)) = meta(j, cfg, 3)
    {
        p.push(("_meta".into(), m));
        token = t;
    }
    if j.b.below(4) == 0 {
        let k = j.key();
        if k != "_meta" && !p.iter().any(|(x, _)| *x == k) {
            let mut v = Vec::new();
            j.value(&mut v, 3);
            p.push((k, v));
        }
    }
    (j.object_at(2, &p), token)
}

/// The JSON-RPC decoder and dispatcher, one frame at a time.
///
/// Input: a settings byte (frame limit 512-4096, depth limit, logging, completions, slots),
/// a prelude byte (opening the stream with `initialize` under a session-bound revision,
/// `notifications/initialized`, `logging/setLevel`; the page size), then a generated
/// message (`message`: ids of every type, known and unknown methods with well- and
/// ill-shaped params and `_meta`, repeated member names, member order, whitespace, four
/// string escapings, broken strings, batches, scalars), whether it ends at end of input
/// instead of a newline, then how the host answers the event, if any (at once or later,
/// an error, the wrong kind first, progress and log notifications first, twice).
///
/// Asserts: no panic; every output line is a JSON-RPC 2.0 object, a response with exactly
/// one of `result` and `error`, or a progress or log notification; at most one event, of
/// the kind the method calls for; the output is exactly what the message calls for: a
/// request with a valid id gets exactly one response echoing the id, a notification or a
/// response none, anything else one error without an id; progress notifications carry
/// the request's token, one per accepted `notify_progress`; a second answer, or a wrong
/// kind of answer, is refused and writes nothing. Also: the engine's direct JSON writers
/// give `serde_json`'s bytes for the input read as text (a string, each content block).
pub fn jsonrpc(data: &[u8]) {
    writers_match_serde(&String::from_utf8_lossy(data));
    let mut b = Bytes::new(data);
    let setup = b.u8();
    let prelude = b.u8();
    let frame_limit = 512usize << (setup & 3);
    let depth_limit = [8, 12, 16, 40][usize::from(setup >> 2) & 3];
    let mut cfg = Config::new("fuzz", "0");
    cfg.max_frame_len(frame_limit)
        .max_depth(depth_limit)
        .max_in_flight(1 + usize::from(setup >> 6))
        .logging(setup & 0x10 != 0)
        .completions(setup & 0x20 != 0)
        .page_size(1 + usize::from(prelude >> 6))
        .secret_key([0x11; 32])
        .server_info_in_meta(prelude & 0x20 == 0);
    let mut e = Engine::new(cfg, rich_catalog());

    // The prelude: open a session-bound stream.
    let mut pre = String::new();
    if prelude & 3 != 0 {
        let rev = ["", "2025-11-25", "2025-06-18", "2024-11-05"][usize::from(prelude & 3)];
        pre.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"{rev}\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"f\",\"version\":\"1\"}}}}}}\n"
        ));
        if prelude & 4 != 0 {
            pre.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        }
        if prelude & 8 != 0 {
            let level = LOG_LEVEL_NAMES[usize::from(prelude >> 4) & 7];
            pre.push_str(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":\"lvl\",\"method\":\"logging/setLevel\",\"params\":{{\"level\":\"{level}\"}}}}\n"
            ));
        }
    }
    assert_eq!(e.handle_input(Instant::ZERO, pre.as_bytes()), pre.len());
    assert!(e.poll_event().is_none(), "the prelude needs no host");
    let n = e.pending_output().len();
    for line in output_lines(e.pending_output()) {
        let v = check_line(line);
        assert!(v.get("id").is_some(), "the prelude's requests carry ids: {v}");
    }
    e.consume_output(n);

    let mcfg =
        MsgCfg { depth_limit, frame_limit, id: IdPlan::Random, marker: None, token: None, ticketed: false };
    let frame = message(&mut b, &mcfg);
    let at_eof = b.u8() & 7 == 0;
    let mut input = frame.bytes.clone();
    if !at_eof {
        input.push(b'\n');
    }

    let mut host = JsonRpcHost { events: 0, progress: 0, logs: 0, deferred: None };
    let mut fed = 0;
    for round in 0.. {
        assert!(round < 100, "the engine does not take the frame");
        fed += e.handle_input(Instant::ZERO, &input[fed..]);
        host.drain(&mut e, &mut b, &frame);
        if fed == input.len() {
            break;
        }
    }
    if at_eof {
        e.handle_eof(Instant::ZERO);
        host.drain(&mut e, &mut b, &frame);
    }
    host.finish(&mut e, &mut b);
    assert!(e.poll_event().is_none());
    assert_eq!(e.in_flight(), 0, "the ticket outlives its answer");

    // The output the frame called for.
    let out = e.pending_output();
    let lines: Vec<Value> = output_lines(out).into_iter().map(check_line).collect();
    let (notes, responses): (Vec<&Value>, Vec<&Value>) =
        lines.iter().partition(|v| v.get("method").is_some());
    let progress = notes.iter().filter(|v| v["method"] == "notifications/progress").count();
    assert_eq!(progress, host.progress, "progress notifications written and accepted differ");
    assert_eq!(notes.len() - progress, host.logs, "log notifications written and accepted differ");
    let frame_text = String::from_utf8_lossy(&frame.bytes);
    for note in &notes {
        if note["method"] == "notifications/progress" {
            assert_eq!(
                Some(&note["params"]["progressToken"]),
                frame.token.as_ref(),
                "{frame_text} -> {note}"
            );
        }
    }
    match &frame.expect {
        Expect::Nothing => assert!(lines.is_empty(), "output for a notification or response {frame_text}"),
        Expect::Anonymous => {
            assert_eq!(responses.len(), 1, "{frame_text} -> {lines:?}");
            let r = responses[0];
            assert!(r.get("id").is_none(), "{frame_text} -> {r}");
            let code = &r["error"]["code"];
            assert!(*code == -32700 || *code == -32600, "{frame_text} -> {r}");
        }
        Expect::TooLong(id) => {
            assert_eq!(responses.len(), 1, "{frame_text} -> {lines:?}");
            let r = responses[0];
            assert_eq!(r["error"]["code"], -32600, "{frame_text} -> {r}");
            if let Some(echoed) = r.get("id") {
                assert_eq!(
                    Some(echoed),
                    id.as_ref(),
                    "an id the frame did not open with: {frame_text} -> {r}"
                );
            }
        }
        Expect::Reply(id) => {
            assert_eq!(responses.len(), 1, "{frame_text} -> {lines:?}");
            assert_eq!(responses[0].get("id"), Some(id), "{frame_text} -> {}", responses[0]);
        }
    }
    if host.events > 0 {
        assert!(matches!(frame.expect, Expect::Reply(_)), "an event for {frame_text}");
    }
}

/// The host of the jsonrpc harness.
struct JsonRpcHost {
    events: usize,
    /// `notify_progress` / `notify_log` calls accepted.
    progress: usize,
    logs: usize,
    /// A ticket kept to answer later, and its kind.
    deferred: Option<(Ticket, EvKind)>,
}

impl JsonRpcHost {
    fn drain(&mut self, e: &mut Engine, b: &mut Bytes<'_>, frame: &Frame) {
        while let Some(ev) = e.poll_event() {
            self.events += 1;
            assert_eq!(self.events, 1, "two events for one frame");
            let method = frame.method.as_deref();
            let how = b.u8();
            let ticket = ev.ticket();
            let kind = match &ev {
                Event::CallTool(_) => EvKind::Tool,
                Event::ReadResource(_) => EvKind::Resource,
                Event::GetPrompt(_) => EvKind::Prompt,
                Event::Complete(_) => EvKind::Completion,
                Event::Cancelled(_) => panic!("a cancellation with no request to cancel"),
                _ => panic!("an event this harness does not know"),
            };
            let want = match kind {
                EvKind::Tool => "tools/call",
                EvKind::Resource => "resources/read",
                EvKind::Prompt => "prompts/get",
                EvKind::Completion => "completion/complete",
            };
            assert_eq!(method, Some(want), "an event of the wrong kind");
            let text = [Content::text("ok\n\u{0}\"")];
            let r = match (how % 8, ev) {
                (0, Event::CallTool(c)) => {
                    let args = c.arguments.raw();
                    assert!(serde_json::from_str::<Value>(args).is_ok_and(|v| v.is_object()), "{args}");
                    if c.tool.name == "out" {
                        let n = serde_json::json!({ "n": how >> 4 });
                        let s = serde_json::json!({ "n": "x" });
                        let structured = if how & 0x80 == 0 { &n } else { &s };
                        c.answer(&ToolOutput::new(&text).structured(structured))
                    } else {
                        c.answer(&ToolOutput::new(&[Content::text(args)]))
                    }
                }
                (0, Event::ReadResource(r)) => {
                    let uri = r.uri;
                    if r.template.is_some() {
                        assert!(!r.variables.is_empty());
                        for (name, value) in r.variables.iter() {
                            // Values are percent-decoded: verbatim unless the uri escapes.
                            assert!(
                                uri.contains(value) || uri.contains('%'),
                                "{name}={value} is not part of {uri}"
                            );
                        }
                    }
                    r.answer(&[ResourceContents::text(uri, Some("text/plain"), "x\r\n")])
                }
                (0, Event::GetPrompt(p)) => {
                    let messages = [PromptMessage::user(Content::text(p.arguments.raw()))];
                    p.answer(&PromptOutput::new(&messages))
                }
                (0, Event::Complete(c)) => {
                    let value = c.value;
                    c.answer(&[value, "x", value, "y\n"], None, how & 0x10 != 0)
                }
                (1, Event::CallTool(c)) => c.fail(HostError::Internal("boom\n")),
                (1, Event::ReadResource(r)) => r.fail(HostError::NotFound),
                (1, Event::GetPrompt(p)) => p.fail(HostError::InvalidParams("bad \"x\"")),
                (1, Event::Complete(c)) => c.fail(HostError::NotFound),
                (4, Event::CallTool(mut c)) => {
                    let p = c.progress(1.0, Some(2.0), Some("half\n"));
                    self.progress += usize::from(p.is_ok());
                    assert_eq!(p.is_ok(), frame.token.is_some(), "{p:?}");
                    let p = c.progress(1.0, None, None);
                    assert!(p.is_err(), "progress must increase");
                    let l = c.log(LogLevel::Error, Some("fuzz"), &serde_json::json!({ "line": "a\nb" }));
                    self.logs += usize::from(l.is_ok());
                    c.answer(&ToolOutput::error(&text))
                }
                (_, _) => {
                    self.deferred = Some((ticket, kind));
                    Ok(())
                }
            };
            assert_eq!(r, Ok(()), "answering a live ticket");
            if how % 8 < 2 || (how % 8 == 4 && kind == EvKind::Tool) {
                // Answered: a second answer is refused and writes nothing.
                let before = e.pending_output().len();
                assert_eq!(e.answer_error(ticket, HostError::NotFound), Err(AnswerError::UnknownTicket));
                assert_eq!(e.notify_progress(ticket, 9.0, None, None), Err(NotifyError::UnknownTicket));
                assert_eq!(e.pending_output().len(), before, "a refused answer wrote output");
            }
        }
    }

    /// Answers the deferred ticket through the engine: progress and logs, maybe the wrong
    /// kind first (refused), then the answer, then a second answer (refused).
    fn finish(&mut self, e: &mut Engine, b: &mut Bytes<'_>) {
        let Some((t, kind)) = self.deferred.take() else { return };
        let how = b.u8();
        if how & 1 != 0 {
            let r = e.notify_progress(t, 0.5, None, Some("m"));
            self.progress += usize::from(r.is_ok());
            let r = e.notify_progress(t, f64::NAN, None, None);
            assert!(r.is_err(), "a NaN progress was accepted");
        }
        if how & 2 != 0 {
            let level = LogLevel::parse(LOG_LEVEL_NAMES[usize::from(how >> 5)]).unwrap_or(LogLevel::Info);
            let r = e.notify_log(t, level, None, "text");
            self.logs += usize::from(r.is_ok());
        }
        let before = e.pending_output().len();
        let wrong = match kind {
            EvKind::Tool => e.answer_prompt(t, &PromptOutput::new(&[])),
            _ => e.answer_tool(t, &ToolOutput::new(&[])),
        };
        assert_eq!(wrong, Err(AnswerError::WrongKind));
        assert_eq!(e.pending_output().len(), before, "a refused answer wrote output");
        let text = [Content::text("later")];
        let messages = [PromptMessage::assistant(Content::text("x"))];
        let r = match (how >> 2 & 3, kind) {
            (0, _) => e.answer_error(t, HostError::Internal("late")),
            (1, EvKind::Resource) => e.answer_resource(t, &[]),
            (_, EvKind::Tool) => e.answer_tool(t, &ToolOutput::new(&text)),
            (_, EvKind::Resource) => {
                e.answer_resource(t, &[ResourceContents::blob("x://r", None, b"\x00\xff")])
            }
            (_, EvKind::Prompt) => e.answer_prompt(t, &PromptOutput::new(&messages)),
            (_, EvKind::Completion) => {
                let many: Vec<String> = (0..150).map(|i| format!("v{}", i % 120)).collect();
                let refs: Vec<&str> = many.iter().map(String::as_str).collect();
                e.answer_completion(t, &refs, Some(3), false)
            }
        };
        assert_eq!(r, Ok(()), "answering a live ticket");
        let before = e.pending_output().len();
        assert_eq!(e.answer_tool(t, &ToolOutput::new(&text)), Err(AnswerError::UnknownTicket));
        assert_eq!(e.notify_log(t, LogLevel::Emergency, None, "x"), Err(NotifyError::UnknownTicket));
        assert_eq!(e.pending_output().len(), before, "a refused answer wrote output");
    }
}
