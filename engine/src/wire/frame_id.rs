//! The request id of a stdio frame too long to parse, read from its bytes as they pass.
//!
//! A frame over `Config::max_frame_len` is never parsed, but its bytes go by anyway (the
//! first ones are buffered, the rest discarded as they arrive). [`FrameId`] follows them
//! with a few bytes of state: the nesting depth, whether it is inside a string, and, at
//! the top level of the frame's object, the member it is in. It keeps the raw JSON of
//! the top-level `"id"` member's value (an integer, or a string, of at most
//! [`MAX_ID_LEN`] bytes with its quotes: the longest id the engine keeps for a ticket) and
//! notes whether a top-level `"method"` member came by: then the frame is a request, and
//! its refusal can carry its id, so the client learns which of its requests failed
//! instead of waiting for an answer that never comes.
//!
//! It needs no allocation, never panics on any bytes, and gives the same verdict
//! however the frame is split across calls. It is not a validator: a frame it reads an
//! id from may still be invalid JSON elsewhere (the frame is refused either way; only
//! the id is taken, and only when it is valid JSON on its own). A repeated top-level
//! `"id"` gives no id (which one the client meant is unknowable).

/// The longest id kept, in bytes of its JSON form (`error::MAX_TICKET_ID_LEN`, which
/// the stdio engine checks it equals).
pub(crate) const MAX_ID_LEN: usize = 128;

/// Where the reader is in the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the top-level value (whitespace).
    Start,
    /// In the top-level object, before a member name (or its `}`).
    Name,
    /// In a top-level member name.
    InName,
    /// After a top-level member name, before its `:`.
    Colon,
    /// After the `:`, before the member's value.
    Value,
    /// In a top-level member's value that is not kept: a string, a scalar, or a nested
    /// container (see [`FrameId::depth`]).
    Skip,
    /// In the `"id"` member's value, being kept.
    Keep,
    /// After a top-level member's value, before its `,` or the object's `}`.
    Comma,
    /// Nothing more to learn: the top-level object ended, or the frame is not an object.
    Done,
}

/// Which top-level member name is being read (`"id"`, `"method"`, or another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Id,
    Method,
    Other,
}

/// What is known of the top-level `"id"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Id {
    /// None seen (yet).
    Absent,
    /// Being read into `buf[..len]`.
    Reading,
    /// Kept: `buf[..len]`.
    Kept,
    /// Seen, and not usable: not an integer or a string, too long, invalid, or repeated.
    Unusable,
}

/// Follows a frame's bytes for its top-level `"id"` and `"method"` (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct FrameId {
    at: At,
    /// Nesting depth inside a skipped value (0: not in a container).
    depth: u32,
    /// In a string (of a skipped value, a name, or the kept id).
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escaped: bool,
    /// The top-level member name being read, and how many of its bytes matched.
    name: Member,
    matched: u8,
    /// The member whose value comes next.
    member: Member,
    method: bool,
    id: Id,
    buf: [u8; MAX_ID_LEN],
    len: usize,
}

impl Default for FrameId {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameId {
    /// A reader at the start of a frame.
    pub(crate) const fn new() -> Self {
        Self {
            at: At::Start,
            depth: 0,
            in_string: false,
            escaped: false,
            name: Member::Other,
            matched: 0,
            member: Member::Other,
            method: false,
            id: Id::Absent,
            buf: [0; MAX_ID_LEN],
            len: 0,
        }
    }

    /// Back to the start of a frame.
    pub(crate) fn reset(&mut self) {
        *self = Self::new();
    }

    /// Whether the bytes still to come can change [`request_id`](Self::request_id): the
    /// top-level object has not ended.
    pub(crate) fn is_done(&self) -> bool {
        self.at == At::Done
    }

    /// Whether the answer is known already: the frame is a request (a `"method"` came
    /// by) and its id is kept, and no later byte could take it back but a repeated `"id"`,
    /// which a client does not send.
    pub(crate) fn is_settled(&self) -> bool {
        self.is_done() || (self.method && self.id == Id::Kept)
    }

    /// The raw JSON of the frame's request id, if the frame (as far as it was read) is a
    /// request with a usable id.
    pub(crate) fn request_id(&self) -> Option<&[u8]> {
        (self.method && self.id == Id::Kept).then(|| &self.buf[..self.len])
    }

    /// Reads the next bytes of the frame.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() && self.at != At::Done {
            if self.at == At::Skip && (self.in_string || self.depth > 0) {
                // The bulk of a long frame: jump to the next byte that matters.
                let rest = &bytes[i..];
                let next = if self.in_string && !self.escaped {
                    memchr::memchr2(b'"', b'\\', rest)
                } else if self.in_string {
                    Some(0)
                } else {
                    rest.iter().position(|b| matches!(b, b'"' | b'{' | b'[' | b'}' | b']'))
                };
                match next {
                    Some(n) => i += n,
                    None => return,
                }
            }
            self.byte(bytes[i]);
            i += 1;
        }
    }

    fn byte(&mut self, b: u8) {
        match self.at {
            At::Start => match b {
                b' ' | b'\t' | b'\r' | b'\n' => {}
                b'{' => self.at = At::Name,
                _ => self.at = At::Done,
            },
            At::Name => match b {
                b' ' | b'\t' | b'\r' | b'\n' => {}
                b'"' => {
                    self.at = At::InName;
                    self.name = Member::Id;
                    self.matched = 0;
                }
                _ => self.at = At::Done,
            },
            At::InName => self.name_byte(b),
            At::Colon => match b {
                b' ' | b'\t' | b'\r' | b'\n' => {}
                b':' => self.at = At::Value,
                _ => self.at = At::Done,
            },
            At::Value => self.value_start(b),
            At::Skip => self.skip_byte(b),
            At::Keep => self.keep_byte(b),
            At::Comma => self.after_value(b),
            At::Done => {}
        }
    }

    /// A byte of a top-level member name: matched against `id` and `method` as it comes
    /// (a name with an escape matches neither).
    fn name_byte(&mut self, b: u8) {
        if self.escaped {
            self.escaped = false;
            self.name = Member::Other;
            return;
        }
        match b {
            b'\\' => {
                self.escaped = true;
                self.name = Member::Other;
            }
            b'"' => {
                let whole = match self.name {
                    Member::Id => self.matched == 2,
                    Member::Method => self.matched == 6,
                    Member::Other => false,
                };
                self.member = if whole { self.name } else { Member::Other };
                self.at = At::Colon;
            }
            _ => {
                let m = usize::from(self.matched);
                self.name = match self.name {
                    Member::Id if b"id".get(m) == Some(&b) => Member::Id,
                    // `i` also starts nothing else; `m` starts `method`.
                    Member::Id if m == 0 && b == b'm' => Member::Method,
                    Member::Method if b"method".get(m) == Some(&b) => Member::Method,
                    _ => Member::Other,
                };
                self.matched = self.matched.saturating_add(1);
            }
        }
    }

    /// The first byte of a top-level member's value.
    fn value_start(&mut self, b: u8) {
        if matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
            return;
        }
        match self.member {
            Member::Method => self.method = true,
            Member::Id => {
                if self.id != Id::Absent {
                    // A repeated `"id"`: neither is taken.
                    self.id = Id::Unusable;
                } else if b == b'"' || b == b'-' || b.is_ascii_digit() {
                    self.id = Id::Reading;
                    self.len = 0;
                    self.push(b);
                    self.in_string = b == b'"';
                    self.at = At::Keep;
                    return;
                } else {
                    // `null`, a fraction-less float aside, an object...: not an id to echo.
                    self.id = Id::Unusable;
                }
            }
            Member::Other => {}
        }
        self.at = At::Skip;
        self.skip_byte(b);
    }

    /// A byte of a value that is not kept.
    fn skip_byte(&mut self, b: u8) {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.depth == 0 {
                    self.at = At::Comma;
                }
            }
            return;
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth = self.depth.saturating_add(1),
            b'}' | b']' if self.depth > 0 => {
                self.depth -= 1;
                if self.depth == 0 {
                    self.at = At::Comma;
                }
            }
            // A scalar (number, `true`, `null`, ...) ends at what follows it.
            _ if self.depth == 0 => {
                if matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b',' | b'}' | b']') {
                    self.at = At::Comma;
                    self.after_value(b);
                }
            }
            _ => {}
        }
    }

    /// A byte of the kept id.
    fn keep_byte(&mut self, b: u8) {
        if self.buf.first() == Some(&b'"') {
            if b < 0x20 {
                self.id = Id::Unusable;
                self.at = At::Skip;
                self.in_string = true;
                self.escaped = false;
                return;
            }
            self.push(b);
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                self.at = At::Comma;
                self.check();
            }
            return;
        }
        if b.is_ascii_digit() {
            self.push(b);
            return;
        }
        self.check();
        if self.id == Id::Kept && !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b',' | b'}') {
            // `1.5`, `1e3`, `12abc`: not an integer id.
            self.id = Id::Unusable;
        }
        self.at = At::Skip;
        self.skip_byte(b);
    }

    /// After a top-level member's value.
    fn after_value(&mut self, b: u8) {
        match b {
            b' ' | b'\t' | b'\r' | b'\n' => {}
            b',' => self.at = At::Name,
            _ => self.at = At::Done,
        }
    }

    fn push(&mut self, b: u8) {
        if self.id != Id::Reading {
            return;
        }
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = b;
                self.len += 1;
            }
            None => self.id = Id::Unusable,
        }
    }

    /// Keeps the id only if it is valid JSON on its own: an integer without leading
    /// zeros, or a UTF-8 string whose escapes are JSON's.
    fn check(&mut self) {
        if self.id != Id::Reading {
            return;
        }
        let raw = &self.buf[..self.len];
        let ok = match raw.first() {
            Some(b'"') => valid_string(raw),
            Some(_) => valid_integer(raw),
            None => false,
        };
        self.id = if ok { Id::Kept } else { Id::Unusable };
    }
}

/// `-?(0|[1-9][0-9]*)` within `i64` or `u64` (the ids the request path reads), and not `-0`
/// (JSON parsers read these others as floats, so the echoed id would not be an integer).
fn valid_integer(raw: &[u8]) -> bool {
    let digits = raw.strip_prefix(b"-").unwrap_or(raw);
    let shaped = !digits.is_empty()
        && digits.iter().all(u8::is_ascii_digit)
        && (digits == b"0" || digits[0] != b'0')
        && raw != b"-0";
    shaped
        && core::str::from_utf8(raw)
            .is_ok_and(|text| text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok())
}

/// A whole JSON string (quotes included) of UTF-8 text, no raw controls, JSON escapes.
fn valid_string(raw: &[u8]) -> bool {
    let Some(inner) = raw.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\"")) else { return false };
    if raw.len() < 2 || core::str::from_utf8(inner).is_err() {
        return false;
    }
    let mut i = 0;
    while i < inner.len() {
        match inner[i] {
            b'\\' => match inner.get(i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                Some(b'u') => match hex4(inner, i + 2) {
                    // A high surrogate stands only before a low one; a low one never alone
                    // (JSON parsers refuse both, so the echoed id would not parse).
                    Some(0xD800..=0xDBFF) => {
                        let low = (inner.get(i + 6..i + 8) == Some(&b"\\u"[..]))
                            .then(|| hex4(inner, i + 8))
                            .flatten();
                        if !matches!(low, Some(0xDC00..=0xDFFF)) {
                            return false;
                        }
                        i += 12;
                    }
                    Some(0xDC00..=0xDFFF) | None => return false,
                    Some(_) => i += 6,
                },
                _ => return false,
            },
            b'"' => return false,
            c if c < 0x20 => return false,
            _ => i += 1,
        }
    }
    true
}

/// The four hex digits at `at`, if they are there.
fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let digits = bytes.get(at..at + 4)?;
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u16::from_str_radix(core::str::from_utf8(digits).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::FrameId;
    use proptest::prelude::*;

    fn read(frame: &[u8]) -> FrameId {
        let mut f = FrameId::new();
        f.feed(frame);
        f
    }

    fn id_of(frame: &str) -> Option<String> {
        read(frame.as_bytes()).request_id().map(|id| String::from_utf8(id.to_vec()).expect("utf-8"))
    }

    #[test]
    fn reads_the_top_level_id_of_a_request_wherever_it_is() {
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"#).as_deref(),
            Some("7")
        );
        // The id after the (long) params: members are unordered, a client may write it there.
        let late = r#"{"method":"tools/call","params":{"arguments":{"text":"x\"}\\","id":9}},"jsonrpc":"2.0","id":"req-1"}"#;
        assert_eq!(id_of(late).as_deref(), Some(r#""req-1""#));
        assert_eq!(id_of(r#" { "id" : -12 , "method" : "ping" }"#).as_deref(), Some("-12"));
        assert_eq!(id_of(r#"{"id":"a\u0062\"c","method":"x"}"#).as_deref(), Some(r#""a\u0062\"c""#));
        assert_eq!(id_of(r#"{"id":0,"method":"x"}"#).as_deref(), Some("0"));
    }

    #[test]
    fn nested_ids_names_with_escapes_and_non_requests_give_none() {
        // Only a top-level `id` counts.
        assert_eq!(id_of(r#"{"params":{"id":3},"method":"x","#), None);
        assert_eq!(id_of(r#"{"params":[{"id":3}],"method":"x","x":{"#), None);
        // A response (no `method`): its id is the client's answer to ours, not a request.
        assert_eq!(id_of(r#"{"jsonrpc":"2.0","id":4,"result":{"#), None);
        // `"\u0069d"` is `id` once decoded; not matched (no decoding here): no id.
        assert_eq!(id_of(r#"{"\u0069d":5,"method":"x"}"#), None);
        assert_eq!(id_of(r#"{"idx":5,"method":"x"}"#), None);
        assert_eq!(id_of(r#"{"i":5,"method":"x"}"#), None);
        assert_eq!(id_of(r#"{"id":5,"methods":"x"}"#), None);
        assert_eq!(id_of(r#"{"id":5,"metho":"x"}"#), None);
        // Not an object at all.
        assert_eq!(id_of(r#"[{"id":1,"method":"x"}]"#), None);
        assert_eq!(id_of("garbage"), None);
    }

    #[test]
    fn ids_not_valid_on_their_own_are_not_echoed() {
        for frame in [
            r#"{"id":1.5,"method":"x"}"#,
            r#"{"id":1e3,"method":"x"}"#,
            r#"{"id":01,"method":"x"}"#,
            r#"{"id":-,"method":"x"}"#,
            // JSON parsers read these as floats: echoed, the id would not be an integer.
            r#"{"id":-0,"method":"x"}"#,
            r#"{"id":18446744073709551616,"method":"x"}"#,
            r#"{"id":-9223372036854775809,"method":"x"}"#,
            r#"{"id":null,"method":"x"}"#,
            r#"{"id":true,"method":"x"}"#,
            r#"{"id":{"a":1},"method":"x"}"#,
            r#"{"id":[1],"method":"x"}"#,
            r#"{"id":"a\qb","method":"x"}"#,
            r#"{"id":"a\u12","method":"x"}"#,
            // Unpaired surrogates: JSON parsers refuse them.
            r#"{"id":"\ud83d\u0041","method":"x"}"#,
            r#"{"id":"\ud83d","method":"x"}"#,
            r#"{"id":"\ude00x","method":"x"}"#,
            "{\"id\":\"a\tb\",\"method\":\"x\"}",
            // Repeated: which one is meant is unknowable.
            r#"{"id":1,"method":"x","id":2}"#,
        ] {
            assert_eq!(id_of(frame), None, "{frame}");
        }
        let long = format!(r#"{{"id":"{}","method":"x"}}"#, "a".repeat(200));
        assert_eq!(id_of(&long), None);
        assert_eq!(id_of(r#"{"id":"\ud83d\ude00","method":"x"}"#).as_deref(), Some(r#""\ud83d\ude00""#));
        assert_eq!(
            id_of(r#"{"id":-9223372036854775808,"method":"x"}"#).as_deref(),
            Some("-9223372036854775808")
        );
        let fits = format!(r#"{{"id":"{}","method":"x"}}"#, "a".repeat(126));
        assert_eq!(id_of(&fits).map(|s| s.len()), Some(128));
        // Invalid UTF-8 inside the id.
        let mut bytes = br#"{"id":"a"#.to_vec();
        bytes.extend_from_slice(&[0xff, b'"']);
        bytes.extend_from_slice(br#","method":"x"}"#);
        assert_eq!(read(&bytes).request_id(), None);
    }

    #[test]
    fn settled_and_done() {
        let f = read(br#"{"id":1,"method":"x","params":{"#);
        assert!(f.is_settled() && !f.is_done());
        let f = read(br#"{"method":"x","params":{"#);
        assert!(!f.is_settled());
        let f = read(br#"{"method":"x"} trailing"#);
        assert!(f.is_done() && f.is_settled());
    }

    /// A request object with `id` placed among other members, and its serde_json value.
    fn request() -> impl Strategy<Value = (String, serde_json::Value)> {
        let id = prop_oneof![
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            "[a-z0-9 \"\\\\\u{e9}\u{2603}\n]{0,20}".prop_map(serde_json::Value::from),
        ];
        let junk = prop_oneof![
            Just(serde_json::json!({"id": 3, "nested": [{"id": "x"}, "]}\"{["]})),
            Just(serde_json::json!("a \"quoted\" } string")),
            Just(serde_json::json!([1, 2.5, null, true, {"method": 1}])),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(serde_json::Value::from),
        ];
        (id, junk, 0..3usize, any::<bool>()).prop_map(|(id, junk, order, pretty)| {
            let mut members: Vec<(&str, serde_json::Value)> =
                vec![("method", "tools/call".into()), ("params", junk), ("jsonrpc", "2.0".into())];
            members.insert(order, ("id", id.clone()));
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| {
                    let v = if pretty { serde_json::to_string_pretty(v) } else { serde_json::to_string(v) };
                    format!("{}: {}", serde_json::to_string(k).unwrap(), v.unwrap())
                })
                .collect();
            (format!("{{ {} }}", body.join(" ,\n ")), id)
        })
    }

    proptest! {
        /// Any bytes, split anywhere: no panic, and the same verdict as one call.
        #[test]
        fn any_bytes_any_split(bytes in proptest::collection::vec(any::<u8>(), 0..300), cut in any::<prop::sample::Index>()) {
            let whole = read(&bytes);
            let at = cut.index(bytes.len() + 1);
            let mut split = FrameId::new();
            split.feed(&bytes[..at]);
            split.feed(&bytes[at..]);
            prop_assert_eq!(whole.request_id(), split.request_id());
            prop_assert_eq!(whole.is_done(), split.is_done());
        }

        /// Odd prefixes of JSON-ish text: no panic, and an id read is always valid JSON.
        #[test]
        fn odd_prefixes(text in "[{}\\[\\]\":,\\\\ a-z0-9.\\-]{0,80}") {
            let f = read(text.as_bytes());
            if let Some(id) = f.request_id() {
                let v: serde_json::Value = serde_json::from_slice(id).expect("an id read is valid JSON");
                prop_assert!(v.is_string() || v.is_i64() || v.is_u64());
            }
        }

        /// A request whose id fits is read as serde_json reads it, wherever its members
        /// are and however the frame is split.
        #[test]
        fn requests_give_their_id((frame, id) in request(), cut in any::<prop::sample::Index>()) {
            let at = cut.index(frame.len() + 1);
            let mut f = FrameId::new();
            f.feed(&frame.as_bytes()[..at]);
            f.feed(&frame.as_bytes()[at..]);
            let expect = serde_json::to_string(&id).unwrap();
            let got = f.request_id().map(|raw| serde_json::from_slice::<serde_json::Value>(raw).unwrap());
            if expect.len() <= super::MAX_ID_LEN {
                prop_assert_eq!(got, Some(id));
            } else {
                prop_assert_eq!(got, None);
            }
            prop_assert!(f.is_done());
        }
    }
}
