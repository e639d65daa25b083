//! What several harnesses share: the reader of fuzz choices, the JSON string writer of
//! the generators, the catalog of the JSON-RPC harnesses and their checks of output lines.

use mcp_engine::internal::write_json_str;
use mcp_engine::{Catalog, Prompt, PromptArgument, Resource, ResourceTemplate, Tool};
use serde_json::Value;

/// The kind of work the engine handed out and a harness has not answered yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EvKind {
    Tool,
    Resource,
    Prompt,
    Completion,
}

/// Whether a task seen `from` may be seen `to` next: the same, or a move the status
/// machine allows (`working` and `input_required` to each other and to every terminal
/// status; nothing out of a terminal one).
pub(crate) fn task_status_may_follow(from: &str, to: &str) -> bool {
    from == to
        || matches!(
            (from, to),
            ("working", "input_required" | "completed" | "failed" | "cancelled")
                | ("input_required", "working" | "completed" | "failed" | "cancelled")
        )
}

/// Largest input the HTTP harnesses look at (bigger inputs are ignored): keeps memory and
/// the time of one run bounded.
pub(crate) const MAX_HTTP_INPUT: usize = 64 * 1024;

/// At most 600 bytes of `b`, as text, for assertion messages.
pub(crate) fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(&b[..b.len().min(600)])
}

/// Reads choices from fuzz bytes, in the manner of `arbitrary::Unstructured` (its own, so
/// that the checked-in corpus keeps decoding to the same choices). Every read succeeds:
/// past the end it yields zeros, so every input decodes, a short one to the simplest
/// choices.
pub(crate) struct Bytes<'a> {
    data: &'a [u8],
}

/// Characters that matter to JSON, URIs and templates; `text` draws mostly from these.
const TEXT_CHARS: &[char] = &[
    'a', 'b', 'x', '0', '1', '9', ' ', '/', '-', '_', '.', ':', '?', '#', '%', '+', '=', '&', '"', '\\',
    '\n', '\r', '\t', '\u{0}', '\u{1f}', '\u{7f}', 'é', '☃', '😀', '\u{2028}', '\u{feff}', '{', '}', '[',
    ']', ',', 'A', 'Z', '\u{80}', '\u{ffff}',
];

impl<'a> Bytes<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub(crate) fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub(crate) fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |v, i| v | u64::from(self.u8()) << (8 * i))
    }

    /// A number below `n` (0 when `n` is 0 or 1).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        match n {
            0 | 1 => 0,
            2..=256 => usize::from(self.u8()) % n,
            _ => usize::from(self.u16()) % n,
        }
    }

    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Up to `max` bytes: a length, then the bytes.
    pub(crate) fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = self.below(max.saturating_add(1)).min(self.data.len());
        let (taken, rest) = self.data.split_at(n);
        self.data = rest;
        taken
    }

    /// Up to `max` characters, mostly from [`TEXT_CHARS`] and printable ASCII, sometimes
    /// any scalar value; never `~` (the op_sequence harness reserves it for its markers).
    pub(crate) fn text(&mut self, max: usize) -> String {
        let n = self.below(max.saturating_add(1));
        let mut s = String::new();
        for _ in 0..n {
            if self.is_empty() {
                break;
            }
            let c = self.u8();
            let ch = match usize::from(c) {
                i if i < TEXT_CHARS.len() => TEXT_CHARS[i],
                i if i < 0xf0 => char::from(b' ' + (c % 95)),
                _ => char::from_u32(u32::from(self.u16())).unwrap_or('\u{fffd}'),
            };
            s.push(if ch == '~' { '-' } else { ch });
        }
        s
    }
}

/// Writes `s` as a JSON string, escaped in one of four ways: as `serde_json` does; every
/// character but ASCII alphanumerics as `\uXXXX` (UTF-16, surrogate pairs included);
/// short escapes where JSON has them and `\/`; every character as `\uXXXX`, upper case.
pub(crate) fn write_styled(out: &mut Vec<u8>, s: &str, style: u8) {
    fn unicode(out: &mut Vec<u8>, c: char, upper: bool) {
        let mut units = [0u16; 2];
        for u in c.encode_utf16(&mut units) {
            let text = if upper { format!("\\u{u:04X}") } else { format!("\\u{u:04x}") };
            out.extend_from_slice(text.as_bytes());
        }
    }
    match style & 3 {
        0 => write_json_str(out, s),
        1 => {
            out.push(b'"');
            for c in s.chars() {
                if c.is_ascii_alphanumeric() {
                    out.push(c as u8);
                } else {
                    unicode(out, c, false);
                }
            }
            out.push(b'"');
        }
        2 => {
            out.push(b'"');
            for c in s.chars() {
                match c {
                    '/' => out.extend_from_slice(b"\\/"),
                    '"' => out.extend_from_slice(b"\\\""),
                    '\\' => out.extend_from_slice(b"\\\\"),
                    '\u{8}' => out.extend_from_slice(b"\\b"),
                    '\u{c}' => out.extend_from_slice(b"\\f"),
                    '\n' => out.extend_from_slice(b"\\n"),
                    '\r' => out.extend_from_slice(b"\\r"),
                    '\t' => out.extend_from_slice(b"\\t"),
                    c if c < ' ' => unicode(out, c, false),
                    c => {
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
            }
            out.push(b'"');
        }
        _ => {
            out.push(b'"');
            for c in s.chars() {
                unicode(out, c, true);
            }
            out.push(b'"');
        }
    }
}

/// The catalog of the JSON-RPC harnesses: every kind of item, a tool with an input schema,
/// one that needs a client capability, one with an output schema, two templates, a
/// prompt with a required and an optional argument.
pub(crate) fn rich_catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("plain"))
        .tool(Tool::new("typed").input_schema(serde_json::json!({
            "type": "object",
            "properties": { "text": { "type": "string", "maxLength": 8 } },
            "required": ["text"]
        })))
        .tool(Tool::new("needs").requires_client_capability("sampling"))
        .tool(Tool::new("out").output_schema(serde_json::json!({
            "type": "object",
            "properties": { "n": { "type": "integer" } },
            "required": ["n"]
        })))
        .resource(Resource::new("x://r", "r"))
        .resource(Resource::new("x://s", "s"))
        .template(ResourceTemplate::new("x://t/{id}/{+rest}", "t"))
        .template(ResourceTemplate::new("x://u/{a}", "u"))
        .prompt(Prompt::new("p").argument(PromptArgument::required("a")).argument(PromptArgument::new("b")))
        .prompt(Prompt::new("q"))
        .build()
        .unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"))
}

/// Checks one output line: a JSON-RPC 2.0 object, a response (exactly one of `result` and
/// `error`, an error with an integer code and a string message) or a notification
/// (progress, log or a task's status, without an id). Returns the parsed value.
pub(crate) fn check_line(line: &[u8]) -> Value {
    let v: Value =
        serde_json::from_slice(line).unwrap_or_else(|e| panic!("{e}: not JSON: {:?}", lossy(line)));
    let Some(obj) = v.as_object() else { panic!("not an object: {v}") };
    assert_eq!(obj.get("jsonrpc"), Some(&Value::from("2.0")), "{v}");
    match obj.get("method") {
        Some(m) => {
            assert!(
                m == "notifications/progress"
                    || m == "notifications/message"
                    || m == "notifications/tasks/status",
                "the server sent a request or an unknown notification: {v}"
            );
            assert!(!obj.contains_key("id"), "a notification with an id: {v}");
            assert!(obj.get("params").is_some_and(Value::is_object), "{v}");
        }
        None => {
            assert!(obj.contains_key("result") != obj.contains_key("error"), "{v}");
            if let Some(id) = obj.get("id") {
                assert!(id.is_string() || id.is_i64() || id.is_u64(), "a response id of the wrong type: {v}");
            }
            if let Some(err) = obj.get("error") {
                assert!(err["code"].is_i64() && err["message"].is_string(), "{v}");
            } else {
                assert!(obj["result"].is_object(), "{v}");
            }
        }
    }
    v
}

/// Splits output into lines: every output ends with a newline.
pub(crate) fn output_lines(out: &[u8]) -> Vec<&[u8]> {
    assert!(out.is_empty() || out.ends_with(b"\n"), "output does not end a line: {:?}", lossy(out));
    out.split(|&c| c == b'\n').filter(|l| !l.is_empty()).collect()
}
