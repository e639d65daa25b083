//! JSON Schema validation over the simd-json tape.
//!
//! The engine parses every frame into a reused simd-json tape. This module implements
//! jsonschema's `json` traits over a slice of that tape ([`TapeJson`]), so the arguments of a
//! `tools/call` or `prompts/get` are validated where they already lie, without building a
//! `serde_json::Value` and without allocating.
//!
//! # Same verdicts as the `serde_json::Value` path
//!
//! Before this module the engine wrote the arguments from the tape as compact JSON,
//! parsed that text into a `serde_json::Value` and validated the value. The tape path keeps
//! every verdict of that path:
//!
//! - **Numbers** are reported as the `serde_json::Number` that parsing the written text
//!   would give: a tape `I64` is `Number::from(i64)` (`PosInt` when non-negative), a `U64` is
//!   `PosInt`, an `F64` is `Number::from_f64` (a `Float`, which is how serde_json parses any
//!   literal with a fraction or an exponent, and how it parses an integer past `u64`). The
//!   jsonschema number semantics then run unchanged: `1.0` is an integer for `"type":
//!   "integer"` except under draft 4, which asks whether the number is *written* as one.
//!   A non-finite `F64` (never produced by simd-json, which refuses such literals) would be
//!   written as `null`, and is therefore reported as `null`.
//! - **Repeated member names**: serde_json keeps the last value of a repeated name, and the
//!   host then receives the arguments rewritten from that value. The tape cannot express
//!   "last one wins" cheaply, so [`SchemaValidator::verdict`] reports
//!   [`SchemaVerdict::Duplicates`] for any object in the instance that repeats a name, and the
//!   caller takes the `Value` path for that request.
//! - **Error messages** are always produced by the `serde_json::Value` validator, so their
//!   text and order are those of the old path: the tape path only decides validity.
//!
//! # Allocation
//!
//! Deciding validity allocates nothing, except where jsonschema itself does for any
//! representation (a recursive `$ref` keeps a cycle guard, a regex engine may warm a
//! cache, `format: email` parses into an owned address and `format: regex` translates
//! the pattern; every other format checks the string in place) and `uniqueItems` over
//! more than [`UNIQUE_PAIRWISE_MAX`] items, which hashes
//! converted values as jsonschema's default does. Objects of more than 16 members are
//! checked for repeated names by sorting their key indices in a reused thread-local
//! buffer, which only allocates while it grows.

use std::borrow::Cow;
use std::cell::Cell;
use std::ops::ControlFlow;

use jsonschema::JsonType;
use jsonschema::json::{self, NodeIdentity};
use serde_json::{Map, Number, Value};
use simd_json::{Node, StaticNode};

/// The tape representation: a node is an index into a borrowed slice of tape nodes.
pub(crate) struct TapeJson;

/// One value on a tape: `nodes[i]` and, for a container, the nodes after it.
#[derive(Clone, Copy)]
pub(crate) struct TapeNode<'a> {
    nodes: &'a [Node<'a>],
    i: usize,
}

/// An object on a tape with `len` members.
#[derive(Clone, Copy)]
pub(crate) struct TapeObject<'a> {
    nodes: &'a [Node<'a>],
    i: usize,
    len: usize,
}

/// An array on a tape with `len` elements.
#[derive(Clone, Copy)]
pub(crate) struct TapeArray<'a> {
    nodes: &'a [Node<'a>],
    i: usize,
    len: usize,
}

/// The value of `{}`, for a request without `arguments`.
static EMPTY_OBJECT: [Node<'static>; 1] = [Node::Object { len: 0, count: 0 }];

/// The number of tape nodes below node `i` (0 for scalars).
fn children(nodes: &[Node<'_>], i: usize) -> usize {
    crate::wire::json::children(nodes, i)
}

/// What a tape node means, as serde_json would have parsed its written form.
enum Kind<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(&'a str),
    Object(usize),
    Array(usize),
}

fn kind<'a>(nodes: &[Node<'a>], i: usize) -> Kind<'a> {
    match nodes.get(i) {
        Some(Node::String(s)) => Kind::String(s),
        Some(Node::Object { len, .. }) => Kind::Object(*len),
        Some(Node::Array { len, .. }) => Kind::Array(*len),
        Some(Node::Static(StaticNode::Bool(b))) => Kind::Bool(*b),
        Some(Node::Static(StaticNode::I64(n))) => Kind::Number(Number::from(*n)),
        Some(Node::Static(StaticNode::U64(n))) => Kind::Number(Number::from(*n)),
        // serde_json writes a non-finite float as `null`.
        Some(Node::Static(StaticNode::F64(f))) => Number::from_f64(*f).map_or(Kind::Null, Kind::Number),
        Some(Node::Static(StaticNode::Null)) | None => Kind::Null,
    }
}

/// The names and values of the members of a tape object, in tape order.
#[derive(Clone)]
pub(crate) struct Members<'a> {
    nodes: &'a [Node<'a>],
    next: usize,
    left: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, TapeNode<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let k = self.next;
        let v = k + 1;
        self.next = v + 1 + children(self.nodes, v);
        let name = match self.nodes.get(k) {
            Some(Node::String(s)) => s,
            _ => "",
        };
        Some((name, TapeNode { nodes: self.nodes, i: v }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// The elements of a tape array, in order.
#[derive(Clone)]
pub(crate) struct Elements<'a> {
    nodes: &'a [Node<'a>],
    next: usize,
    left: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = TapeNode<'a>;

    fn next(&mut self) -> Option<TapeNode<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let e = self.next;
        self.next = e + 1 + children(self.nodes, e);
        Some(TapeNode { nodes: self.nodes, i: e })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

fn members<'a>(nodes: &'a [Node<'a>], obj: usize, len: usize) -> Members<'a> {
    Members { nodes, next: obj + 1, left: len }
}

fn elements<'a>(nodes: &'a [Node<'a>], arr: usize, len: usize) -> Elements<'a> {
    Elements { nodes, next: arr + 1, left: len }
}

/// Whether the tape value at `i` equals `expected` under JSON Schema equality (numbers
/// compare mathematically), as `jsonschema::json::cmp::equal` decides for values.
fn equals_value(nodes: &[Node<'_>], i: usize, expected: &Value) -> bool {
    match (kind(nodes, i), expected) {
        (Kind::Null, Value::Null) => true,
        (Kind::Bool(a), Value::Bool(b)) => a == *b,
        (Kind::String(a), Value::String(b)) => a == b,
        (Kind::Number(a), Value::Number(b)) => json::cmp::equal_numbers(&a, b),
        (Kind::Array(len), Value::Array(items)) => {
            len == items.len() && elements(nodes, i, len).zip(items).all(|(e, x)| equals_value(nodes, e.i, x))
        }
        // Names are distinct on both sides (the tape path refuses repeated names), so equal
        // sizes and every member found equal in `expected` make the objects equal.
        (Kind::Object(len), Value::Object(map)) => {
            len == map.len()
                && members(nodes, i, len)
                    .all(|(name, v)| map.get(name).is_some_and(|x| equals_value(nodes, v.i, x)))
        }
        _ => false,
    }
}

/// Whether two tape values are equal under JSON Schema equality.
fn equal_nodes(nodes: &[Node<'_>], a: usize, b: usize) -> bool {
    match (kind(nodes, a), kind(nodes, b)) {
        (Kind::Null, Kind::Null) => true,
        (Kind::Bool(x), Kind::Bool(y)) => x == y,
        (Kind::String(x), Kind::String(y)) => x == y,
        (Kind::Number(x), Kind::Number(y)) => json::cmp::equal_numbers(&x, &y),
        (Kind::Array(la), Kind::Array(lb)) => {
            la == lb
                && elements(nodes, a, la)
                    .zip(elements(nodes, b, lb))
                    .all(|(x, y)| equal_nodes(nodes, x.i, y.i))
        }
        (Kind::Object(la), Kind::Object(lb)) => {
            la == lb
                && members(nodes, a, la).all(|(name, x)| {
                    members(nodes, b, lb).any(|(other, y)| other == name && equal_nodes(nodes, x.i, y.i))
                })
        }
        _ => false,
    }
}

/// Arrays up to this many items are checked for `uniqueItems` pair by pair, on the tape;
/// longer ones through converted values, as jsonschema's default does (and allocating).
pub(crate) const UNIQUE_PAIRWISE_MAX: usize = 64;

/// The value at `i` as a `serde_json::Value`, built the way parsing its written form would
/// build it (a repeated member name keeps its last value). Cold paths only.
fn to_value(nodes: &[Node<'_>], i: usize) -> Value {
    match kind(nodes, i) {
        Kind::Null => Value::Null,
        Kind::Bool(b) => Value::Bool(b),
        Kind::Number(n) => Value::Number(n),
        Kind::String(s) => Value::String(s.to_owned()),
        Kind::Array(len) => Value::Array(elements(nodes, i, len).map(|e| to_value(nodes, e.i)).collect()),
        Kind::Object(len) => {
            let mut map = Map::new();
            for (name, v) in members(nodes, i, len) {
                map.insert(name.to_owned(), to_value(nodes, v.i));
            }
            Value::Object(map)
        }
    }
}

impl json::Json for TapeJson {
    type Node<'a> = TapeNode<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = ();

    // A lookup scans the members, so one pass over them never costs more than a lookup.
    const KEYS_PER_LOOKUP: usize = 1 << 16;
    // Tape nodes never contain themselves.
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>((): &mut (), string: &str, f: impl FnOnce(TapeNode<'_>) -> T) -> T {
        let one = [Node::String(string)];
        f(TapeNode { nodes: &one, i: 0 })
    }
}

impl<'a> json::Node<'a, TapeJson> for TapeNode<'a> {
    type Object = TapeObject<'a>;
    type Array = TapeArray<'a>;
    type Number = Number;

    fn as_object(&self) -> Option<TapeObject<'a>> {
        match self.nodes.get(self.i) {
            Some(Node::Object { len, .. }) => Some(TapeObject { nodes: self.nodes, i: self.i, len: *len }),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<TapeArray<'a>> {
        match self.nodes.get(self.i) {
            Some(Node::Array { len, .. }) => Some(TapeArray { nodes: self.nodes, i: self.i, len: *len }),
            _ => None,
        }
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        match self.nodes.get(self.i) {
            Some(Node::String(s)) => Some(Cow::Borrowed(s)),
            _ => None,
        }
    }

    fn as_number(&self) -> Option<Number> {
        match kind(self.nodes, self.i) {
            Kind::Number(n) => Some(n),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.nodes.get(self.i) {
            Some(Node::Static(StaticNode::Bool(b))) => Some(*b),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(kind(self.nodes, self.i), Kind::Null)
    }

    fn is_number(&self) -> bool {
        matches!(kind(self.nodes, self.i), Kind::Number(_))
    }

    fn is_string(&self) -> bool {
        matches!(self.nodes.get(self.i), Some(Node::String(_)))
    }

    fn json_type(&self) -> JsonType {
        match kind(self.nodes, self.i) {
            Kind::Null => JsonType::Null,
            Kind::Bool(_) => JsonType::Boolean,
            Kind::Number(_) => JsonType::Number,
            Kind::String(_) => JsonType::String,
            Kind::Array(_) => JsonType::Array,
            Kind::Object(_) => JsonType::Object,
        }
    }

    fn string_length(&self) -> Option<u64> {
        match self.nodes.get(self.i) {
            Some(Node::String(s)) => Some(code_points(s)),
            _ => None,
        }
    }

    fn string_length_within(&self, min: u64, max: u64) -> Option<bool> {
        let Some(Node::String(s)) = self.nodes.get(self.i) else { return None };
        // A code point takes one to four bytes, so the count lies in `ceil(bytes / 4)..=bytes`.
        let bytes = s.len() as u64;
        let fewest = bytes.div_ceil(4);
        if bytes < min || fewest > max {
            return Some(false);
        }
        if min <= fewest && bytes <= max {
            return Some(true);
        }
        Some((min..=max).contains(&code_points(s)))
    }

    fn equals_value(&self, expected: &Value) -> bool {
        equals_value(self.nodes, self.i, expected)
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(to_value(self.nodes, self.i))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        // The node's own address: distinct for every node alive in one validation.
        self.nodes.get(self.i).map(|n| NodeIdentity::new(std::ptr::from_ref(n) as usize))
    }
}

/// The number of Unicode code points in `s`: the bytes that do not continue a sequence.
fn code_points(s: &str) -> u64 {
    s.bytes().filter(|b| b & 0xC0 != 0x80).count() as u64
}

impl<'a> json::Object<'a, TapeJson> for TapeObject<'a> {
    type Node = TapeNode<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, key: &Box<str>) -> Option<TapeNode<'a>> {
        members(self.nodes, self.i, self.len).find(|(name, _)| *name == &**key).map(|(_, v)| v)
    }

    fn members(&self) -> Members<'a> {
        members(self.nodes, self.i, self.len)
    }

    fn try_for_each_name_node<B>(
        &self,
        (): &mut (),
        mut f: impl FnMut(TapeNode<'_>) -> ControlFlow<B>,
    ) -> ControlFlow<B> {
        // The names are string nodes on the tape already: hand them over.
        let mut k = self.i + 1;
        for _ in 0..self.len {
            f(TapeNode { nodes: self.nodes, i: k })?;
            let v = k + 1;
            k = v + 1 + children(self.nodes, v);
        }
        ControlFlow::Continue(())
    }
}

impl<'a> json::Array<'a, TapeJson> for TapeArray<'a> {
    type Node = TapeNode<'a>;
    type ElementsIter = Elements<'a>;

    fn len(&self) -> usize {
        self.len
    }

    fn elements(&self) -> Elements<'a> {
        elements(self.nodes, self.i, self.len)
    }

    fn is_unique(&self) -> bool {
        if self.len > UNIQUE_PAIRWISE_MAX {
            let values: Vec<Value> = self.elements().map(|e| to_value(self.nodes, e.i)).collect();
            return json::unique::is_unique(&values);
        }
        let mut rest = self.elements();
        while let Some(a) = rest.next() {
            if rest.clone().any(|b| equal_nodes(self.nodes, a.i, b.i)) {
                return false;
            }
        }
        true
    }
}

/// Objects up to this many members are checked for repeated names pair by pair.
const SMALL_OBJECT: usize = 16;

thread_local! {
    /// Key indices of a large object, sorted to find repeated names; reused.
    static KEY_INDICES: Cell<Vec<usize>> = const { Cell::new(Vec::new()) };
}

/// Whether any object in the value at `root` (itself included) repeats a member name.
pub(crate) fn has_duplicate_names(nodes: &[Node<'_>], root: usize) -> bool {
    let end = (root + 1 + children(nodes, root)).min(nodes.len());
    (root..end).any(|j| match nodes[j] {
        Node::Object { len, .. } if len > 1 => object_repeats_a_name(nodes, j, len),
        _ => false,
    })
}

fn object_repeats_a_name(nodes: &[Node<'_>], obj: usize, len: usize) -> bool {
    if len <= SMALL_OBJECT {
        let mut names = [""; SMALL_OBJECT];
        for (slot, (name, _)) in names.iter_mut().zip(members(nodes, obj, len)) {
            *slot = name;
        }
        let names = &names[..len];
        return names.iter().enumerate().any(|(n, a)| names[n + 1..].contains(a));
    }
    let name = |k: usize| match nodes.get(k) {
        Some(Node::String(s)) => *s,
        _ => "",
    };
    let mut keys = KEY_INDICES.take();
    keys.clear();
    let mut k = obj + 1;
    for _ in 0..len {
        keys.push(k);
        let v = k + 1;
        k = v + 1 + children(nodes, v);
    }
    keys.sort_unstable_by(|&a, &b| name(a).cmp(name(b)));
    let repeated = keys.windows(2).any(|w| name(w[0]) == name(w[1]));
    KEY_INDICES.set(keys);
    repeated
}

/// What the tape path decided about an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchemaVerdict {
    /// Valid; the instance repeats no member name.
    Valid,
    /// Invalid; the instance repeats no member name.
    Invalid,
    /// An object repeats a member name: the tape was not validated (take the `Value` path).
    Duplicates,
}

/// A schema compiled twice: for the tape (deciding validity) and for `serde_json::Value`
/// (error messages, and instances with repeated member names).
pub(crate) struct SchemaValidator {
    tape: jsonschema::Validator<TapeJson>,
    value: jsonschema::Validator,
}

impl SchemaValidator {
    /// Compiles `schema` for both representations; with `formats`, the `format`s
    /// jsonschema knows are asserted (under every draft), else they are annotations.
    pub(crate) fn new(schema: &Value, formats: bool) -> Result<Self, jsonschema::ValidationError<'static>> {
        let value = jsonschema::options().should_validate_formats(formats).build(schema)?;
        let tape = jsonschema::options_for::<TapeJson>().should_validate_formats(formats).build(schema)?;
        Ok(Self { tape, value })
    }

    /// The validator over `serde_json::Value`: error messages and the fallback path.
    pub(crate) fn value(&self) -> &jsonschema::Validator {
        &self.value
    }

    /// Decides the value at `nodes[at]` (`{}` when `at` is `None`) on the tape.
    pub(crate) fn verdict(&self, nodes: &[Node<'_>], at: Option<usize>) -> SchemaVerdict {
        let node = match at {
            Some(i) if i < nodes.len() => {
                if has_duplicate_names(nodes, i) {
                    return SchemaVerdict::Duplicates;
                }
                TapeNode { nodes, i }
            }
            _ => TapeNode { nodes: &EMPTY_OBJECT, i: 0 },
        };
        if self.tape.is_valid(node) { SchemaVerdict::Valid } else { SchemaVerdict::Invalid }
    }

    /// Whether the value at `nodes[at]` (`{}` when `at` is `None`) is valid and repeats no
    /// member name: then it may be passed on as it is, without building a `Value`.
    pub(crate) fn passes(&self, nodes: &[Node<'_>], at: Option<usize>) -> bool {
        self.verdict(nodes, at) == SchemaVerdict::Valid
    }
}

impl std::fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaValidator").finish_non_exhaustive()
    }
}

/// The differential check of the `schema_differential` fuzz target: one generated
/// (schema, instance) pair, decided on the tape and by jsonschema over the
/// `serde_json::Value` the engine used to build.
#[cfg(any(test, fuzzing))]
mod differential {
    use serde_json::{Map, Value, json};

    use super::{SchemaValidator, SchemaVerdict, TapeJson};

    /// Reads generator choices from fuzzer bytes; zeros once they run out.
    struct Choices<'a> {
        data: &'a [u8],
        pos: usize,
        /// Draft 4 has no boolean schemas: write `{}` and `{"not": {}}` instead.
        draft4: bool,
    }

    impl Choices<'_> {
        fn byte(&mut self) -> u8 {
            let b = self.data.get(self.pos).copied().unwrap_or(0);
            self.pos += 1;
            b
        }
        fn below(&mut self, n: usize) -> usize {
            self.byte() as usize % n
        }
        fn pick<T: Clone>(&mut self, from: &[T]) -> T {
            from[self.below(from.len())].clone()
        }
    }

    const NAMES: &[&str] = &["a", "b", "c", "d", "é", "", "a\u{0}"];
    /// String literals exactly as an instance writes them (with escapes the tape resolves).
    const STRING_LITERALS: &[&str] = &[
        r#""""#,
        r#""a""#,
        r#""ab""#,
        r#""abc""#,
        r#""b""#,
        r#""é""#,
        r#""\u00e9""#,
        r#""\ud83e\udd80\ud83e\udd80""#,
        r#""a\nb""#,
        r#""\u0000""#,
        r#""2024-01-31""#,
        r#""2024-13-01""#,
        r#""2024-01-31T12:00:00Z""#,
        r#""12:00:00Z""#,
        r#""x@example.com""#,
        r#""not an email""#,
        r#""127.0.0.1""#,
        r#""::1""#,
        r#""https://e.x/p?q#f""#,
        r#""00000000-0000-0000-0000-000000000000""#,
        r#""P1D""#,
        r#""/a/b~1c""#,
        r#""^a+$""#,
        r#""(""#,
        r#""123""#,
    ];
    /// String values a schema uses (`const`, `enum`).
    const STRINGS: &[&str] = &["", "a", "ab", "abc", "é", "🦀🦀", "a\nb", "\u{0}", "123", "2024-01-31"];
    /// Number literals exactly as an instance writes them.
    const NUMBER_LITERALS: &[&str] = &[
        "0",
        "-0",
        "1",
        "-1",
        "1.0",
        "-1.0",
        "-0.0",
        "1.5",
        "2",
        "3",
        "10",
        "1e2",
        "1E2",
        "1.5e1",
        "100",
        "0.1",
        "0.30000000000000004",
        "2.5",
        "1e17",
        "1e20",
        "9007199254740993",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "123456789012345678901234567890",
        "1e308",
        "5e-324",
        "-1e-7",
    ];
    const TYPES: &[&str] = &["null", "boolean", "integer", "number", "string", "array", "object"];
    const PATTERNS: &[&str] =
        &["^a", "b$", "^[a-c]*$", "é", "\\d+", "^(a|b)+$", "(?i)A", "^.{2}$", "^\\p{L}+$", "(a)\\1", "x*"];
    const FORMATS: &[&str] = &[
        "date",
        "date-time",
        "time",
        "email",
        "ipv4",
        "ipv6",
        "uri",
        "uuid",
        "regex",
        "hostname",
        "duration",
        "json-pointer",
        "unknown-format",
    ];
    const DRAFTS: &[&str] = &[
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ];

    fn schema_number(c: &mut Choices<'_>) -> Value {
        match c.below(12) {
            0 => json!(0),
            1 => json!(1),
            2 => json!(1.0),
            3 => json!(-1),
            4 => json!(2.5),
            5 => json!(0.1),
            6 => json!(u64::MAX),
            7 => json!(i64::MIN),
            8 => json!(1e20),
            9 => json!(2),
            10 => json!(10),
            _ => json!(9_007_199_254_740_993_u64),
        }
    }

    fn small(c: &mut Choices<'_>) -> Value {
        json!(c.below(5))
    }

    /// A value a schema compares against (`const`, `enum`).
    fn schema_value(c: &mut Choices<'_>, depth: u32) -> Value {
        match c.below(if depth == 0 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => Value::Bool(c.byte() & 1 == 1),
            2 => schema_number(c),
            3 => Value::String(c.pick(STRINGS).to_owned()),
            4 => Value::Array((0..c.below(3)).map(|_| schema_value(c, depth - 1)).collect()),
            _ => {
                let mut m = Map::new();
                for _ in 0..c.below(3) {
                    m.insert(c.pick(NAMES).to_owned(), schema_value(c, depth - 1));
                }
                Value::Object(m)
            }
        }
    }

    fn schemas(c: &mut Choices<'_>, depth: u32) -> Value {
        Value::Array((0..1 + c.below(3)).map(|_| schema(c, depth)).collect())
    }

    fn schema_map(c: &mut Choices<'_>, depth: u32) -> Value {
        let mut m = Map::new();
        for _ in 0..1 + c.below(3) {
            m.insert(c.pick(NAMES).to_owned(), schema(c, depth));
        }
        Value::Object(m)
    }

    /// Distinct names (repeated ones would not compile).
    fn names(c: &mut Choices<'_>) -> Value {
        let mut names: Vec<Value> = Vec::new();
        for _ in 0..c.below(4) {
            let name = Value::String(c.pick(NAMES).to_owned());
            if !names.contains(&name) {
                names.push(name);
            }
        }
        Value::Array(names)
    }

    /// A subschema of the grammar: a boolean, or an object of one to four keywords.
    fn schema(c: &mut Choices<'_>, depth: u32) -> Value {
        let b = c.byte();
        if depth == 0 || b.is_multiple_of(9) {
            return match b % 4 {
                0 if c.draft4 => json!({}),
                1 if c.draft4 => json!({"not": {}}),
                0 => Value::Bool(true),
                1 => Value::Bool(false),
                2 => json!({}),
                _ => json!({ "type": c.pick(TYPES) }),
            };
        }
        let d = depth - 1;
        let mut m = Map::new();
        for _ in 0..1 + c.below(4) {
            let (k, v) = match c.below(31) {
                0 => ("type", json!(c.pick(TYPES))),
                1 => ("type", {
                    let first = c.below(TYPES.len());
                    let second = (first + 1 + c.below(TYPES.len() - 1)) % TYPES.len();
                    json!([TYPES[first], TYPES[second]])
                }),
                2 => ("properties", schema_map(c, d)),
                3 => ("required", names(c)),
                4 => ("enum", Value::Array((0..1 + c.below(4)).map(|_| schema_value(c, 2)).collect())),
                5 => ("const", schema_value(c, 2)),
                6 => ("minimum", schema_number(c)),
                7 => ("maximum", schema_number(c)),
                8 => ("exclusiveMinimum", schema_number(c)),
                9 => ("exclusiveMaximum", schema_number(c)),
                10 => ("minLength", small(c)),
                11 => ("maxLength", small(c)),
                12 => ("pattern", json!(c.pick(PATTERNS))),
                13 => ("items", schema(c, d)),
                14 => ("prefixItems", schemas(c, d)),
                15 => ("additionalProperties", schema(c, d)),
                16 => ("anyOf", schemas(c, d)),
                17 => ("oneOf", schemas(c, d)),
                18 => ("allOf", schemas(c, d)),
                19 => ("not", schema(c, d)),
                20 => ("$ref", json!(["#/$defs/d0", "#/$defs/d1", "#", "#/definitions/d0"][c.below(4)])),
                21 => ("format", json!(c.pick(FORMATS))),
                22 => (
                    "multipleOf",
                    json!([json!(2), json!(0.5), json!(3), json!(0.1), json!(1e-7)][c.below(5)]),
                ),
                23 => ("uniqueItems", json!(c.byte() & 1 == 0)),
                24 => (["minItems", "maxItems"][c.below(2)], small(c)),
                25 => (["minProperties", "maxProperties"][c.below(2)], small(c)),
                26 => ("propertyNames", schema(c, d)),
                27 => ("patternProperties", {
                    let mut p = Map::new();
                    p.insert(c.pick(PATTERNS).to_owned(), schema(c, d));
                    Value::Object(p)
                }),
                28 => ("contains", schema(c, d)),
                29 => ("dependentRequired", {
                    let mut p = Map::new();
                    p.insert(c.pick(NAMES).to_owned(), names(c));
                    Value::Object(p)
                }),
                _ => {
                    m.insert("if".to_owned(), schema(c, d));
                    m.insert("then".to_owned(), schema(c, d));
                    ("else", schema(c, d))
                }
            };
            m.insert(k.to_owned(), v);
        }
        Value::Object(m)
    }

    /// A root schema: a subschema with `$defs` (and `definitions`), sometimes a `$schema`.
    fn root_schema(c: &mut Choices<'_>) -> Value {
        // Zero bytes (an exhausted input) choose no `$schema`: the default draft, 2020-12.
        let draft = match c.below(8) {
            n @ 1..=5 => Some(DRAFTS[n - 1]),
            _ => None,
        };
        c.draft4 = draft == Some(DRAFTS[0]);
        let mut root = match schema(c, 4) {
            Value::Object(m) => m,
            other => {
                let mut m = Map::new();
                m.insert("allOf".to_owned(), json!([other]));
                m
            }
        };
        let defs = json!({ "d0": schema(c, 3), "d1": schema(c, 3) });
        root.insert("definitions".to_owned(), defs.clone());
        root.insert("$defs".to_owned(), defs);
        if let Some(draft) = draft {
            root.insert("$schema".to_owned(), json!(draft));
        }
        Value::Object(root)
    }

    /// An instance as JSON text: literals written as a client might (escapes, `1.0`, `-0`,
    /// integers past 64 bits), objects that may repeat a name.
    fn instance(c: &mut Choices<'_>, depth: u32, out: &mut String) {
        match c.below(if depth == 0 { 5 } else { 8 }) {
            0 => out.push_str("null"),
            1 => out.push_str(if c.byte() & 1 == 0 { "true" } else { "false" }),
            2 => out.push_str(c.pick(NUMBER_LITERALS)),
            3 | 4 => out.push_str(c.pick(STRING_LITERALS)),
            5 => {
                out.push('[');
                for i in 0..c.below(5) {
                    if i > 0 {
                        out.push(',');
                    }
                    instance(c, depth - 1, out);
                }
                out.push(']');
            }
            _ => {
                out.push('{');
                for i in 0..c.below(5) {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(c.pick(NAMES)).unwrap_or_default());
                    out.push(':');
                    instance(c, depth - 1, out);
                }
                out.push('}');
            }
        }
    }

    /// Whether some object in `text`'s value repeats a member name (a slow, obvious check).
    fn repeats_a_name(nodes: &[simd_json::Node<'_>], root: usize) -> bool {
        let end = root + 1 + crate::wire::json::children(nodes, root);
        (root..end).any(|j| {
            let simd_json::Node::Object { len, .. } = nodes[j] else { return false };
            let mut seen: Vec<&str> = Vec::new();
            let mut k = j + 1;
            for _ in 0..len {
                let simd_json::Node::String(name) = nodes[k] else { unreachable!("a key") };
                if seen.contains(&name) {
                    return true;
                }
                seen.push(name);
                k += 2 + crate::wire::json::children(nodes, k + 1);
            }
            false
        })
    }

    /// Builds one (schema, instance) pair from `data` and asserts that the tape path and
    /// jsonschema over `serde_json::Value` agree.
    ///
    /// `data` starting with `{` is read as two JSON texts, a schema and an instance, on two
    /// lines (for readable seeds); anything else drives a schema and instance grammar.
    #[cfg_attr(not(fuzzing), allow(unreachable_pub))] // exported by the crate under `cfg(fuzzing)`
    pub fn fuzz_schema_differential(data: &[u8]) {
        let (schema, text) = if data.first() == Some(&b'{') {
            let text = String::from_utf8_lossy(data);
            let Some((schema, instance)) = text.split_once('\n') else { return };
            let Ok(schema) = serde_json::from_str::<Value>(schema) else { return };
            (schema, instance.trim_end_matches('\n').to_owned())
        } else {
            let mut c = Choices { data, pos: 0, draft4: false };
            let schema = root_schema(&mut c);
            let mut text = String::new();
            instance(&mut c, 4, &mut text);
            (schema, text)
        };
        check(&schema, &text);
    }

    /// The assertions for one pair, with `format` asserted and as an annotation;
    /// `instance` is JSON text.
    pub(super) fn check(schema: &Value, instance: &str) {
        for formats in [true, false] {
            check_with(schema, instance, formats);
        }
    }

    fn check_with(schema: &Value, instance: &str, formats: bool) {
        let by_value = jsonschema::options().should_validate_formats(formats).build(schema);
        let by_tape = jsonschema::options_for::<TapeJson>().should_validate_formats(formats).build(schema);
        assert_eq!(by_value.is_ok(), by_tape.is_ok(), "compiles for one representation only: {schema}");
        let Ok(both) = SchemaValidator::new(schema, formats) else { return };

        // The arguments sit inside a request on the engine's tape: embed them likewise.
        let mut frame =
            format!(r#"{{"id":1,"arguments":{instance},"after":{{"k":[1,{{"m":null}}]}}}}"#).into_bytes();
        let Ok(tape) = simd_json::to_tape(&mut frame) else { return };
        let nodes = &tape.0;
        let Some(at) = crate::wire::json::get(nodes, 0, "arguments") else { return };
        // What the engine validated before: the value parsed from the tape's written form.
        let mut written = Vec::new();
        crate::wire::json::write_value(nodes, at, &mut written);
        let value: Value = serde_json::from_slice(&written).expect("the written form of a tape parses");
        assert_eq!(super::to_value(nodes, at), value, "tape to_value differs for {instance}");

        let expected = both.value().is_valid(&value);
        match both.verdict(nodes, Some(at)) {
            SchemaVerdict::Duplicates => {
                assert!(repeats_a_name(nodes, at), "false duplicate report: {instance}")
            }
            verdict => {
                assert!(!repeats_a_name(nodes, at), "missed a repeated name: {instance}");
                assert_eq!(
                    verdict == SchemaVerdict::Valid,
                    expected,
                    "verdicts differ (formats asserted: {formats})\nschema:   {schema}\ninstance: {instance}\nwritten:  {}",
                    String::from_utf8_lossy(&written)
                );
            }
        }
    }
}

#[cfg(fuzzing)]
pub use differential::fuzz_schema_differential;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::differential::check;
    use super::*;

    fn verdict_of(schema: &Value, instance: &str) -> SchemaVerdict {
        let v = SchemaValidator::new(schema, true).unwrap();
        let mut b = instance.as_bytes().to_vec();
        let tape = simd_json::to_tape(&mut b).unwrap();
        v.verdict(&tape.0, Some(0))
    }

    #[test]
    fn integers_and_floats_decide_as_serde_json_values_do() {
        let int = json!({"type": "integer"});
        let int4 = json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"});
        for (text, integer, integer_draft4) in [
            ("1", true, true),
            ("1.0", true, false),
            ("-0", true, true),
            ("-0.0", true, false),
            ("1e2", true, false),
            ("1.5", false, false),
            ("18446744073709551615", true, true),
            ("18446744073709551616", true, true),
            ("1e17", true, false),
            ("1e20", true, true),
        ] {
            assert_eq!(verdict_of(&int, text) == SchemaVerdict::Valid, integer, "{text}");
            assert_eq!(verdict_of(&int4, text) == SchemaVerdict::Valid, integer_draft4, "{text} (draft 4)");
            check(&int, text);
            check(&int4, text);
        }
        for (schema, text) in [
            (json!({"const": 1}), "1.0"),
            (json!({"enum": [[1, {"a": 2.0}]]}), r#"[1.0,{"a":2}]"#),
            (json!({"maximum": 9007199254740992_u64}), "9007199254740993"),
            (json!({"multipleOf": 0.1}), "0.30000000000000004"),
            (json!({"uniqueItems": true}), r#"[1,1.0]"#),
            (json!({"uniqueItems": true}), r#"[{"a":1,"b":2},{"b":2,"a":1.0}]"#),
            (json!({"minLength": 2, "maxLength": 2}), r#""\ud83e\udd80\u00e9""#),
            (json!({"propertyNames": {"pattern": "^a"}}), r#"{"ab":1,"b":2}"#),
        ] {
            check(&schema, text);
        }
    }

    #[test]
    fn repeated_names_are_reported_not_decided() {
        let s = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(verdict_of(&s, r#"{"a":"x"}"#), SchemaVerdict::Valid);
        assert_eq!(verdict_of(&s, r#"{"a":1}"#), SchemaVerdict::Invalid);
        assert_eq!(verdict_of(&s, r#"{"a":1,"a":"x"}"#), SchemaVerdict::Duplicates);
        assert_eq!(verdict_of(&s, r#"{"b":[{"c":1,"c":2}]}"#), SchemaVerdict::Duplicates);
        let many: Vec<String> = (0..40).map(|i| format!(r#""k{i}":{i}"#)).collect();
        assert_eq!(verdict_of(&s, &format!("{{{}}}", many.join(","))), SchemaVerdict::Valid);
        let repeated = format!(r#"{{{},"k17":0}}"#, many.join(","));
        assert_eq!(verdict_of(&s, &repeated), SchemaVerdict::Duplicates);
        check(&s, &repeated);
    }

    #[test]
    fn absent_arguments_are_an_empty_object() {
        let v = SchemaValidator::new(&json!({"type": "object", "required": ["a"]}), true).unwrap();
        assert_eq!(v.verdict(&[], None), SchemaVerdict::Invalid);
        let v = SchemaValidator::new(&json!({"type": "object", "maxProperties": 0}), true).unwrap();
        assert_eq!(v.verdict(&[], None), SchemaVerdict::Valid);
    }

    #[test]
    fn recursive_refs_and_cycles_agree() {
        let tree = json!({
            "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}, "v": {"type": "integer"}}}},
            "$ref": "#/$defs/node"
        });
        check(&tree, r#"{"v":1,"kids":[{"v":2,"kids":[]},{"v":3,"kids":[{"v":4}]}]}"#);
        check(&tree, r#"{"v":1,"kids":[{"v":2.5}]}"#);
        check(&json!({"$ref": "#"}), r#"{"a":1}"#);
        check(&json!({"properties": {"a": {"$ref": "#"}}, "type": "object"}), r#"{"a":{"a":{"a":1}}}"#);
    }

    #[test]
    fn the_grammar_agrees_on_pseudo_random_inputs() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for n in 0..3000 {
            let len = 8 + n % 120;
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 24) as u8
                })
                .map(|b| if b == b'{' { 0 } else { b })
                .collect();
            differential::fuzz_schema_differential(&data);
        }
    }

    #[test]
    fn validity_on_the_tape_allocates_nothing() {
        let v = SchemaValidator::new(
            &json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"},
                    "n": {"type": "integer", "minimum": 0, "multipleOf": 2},
                    "tags": {"type": "array", "items": {"enum": ["x", "y", {"k": 1}]}, "uniqueItems": true},
                    "mode": {"const": "fast"},
                    "opt": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/pos"}]}
                },
                "required": ["name", "n"],
                "additionalProperties": false,
                "propertyNames": {"maxLength": 8},
                "$defs": {"pos": {"type": "number", "exclusiveMinimum": 0}}
            }),
            true,
        )
        .unwrap();
        let mut text = br#"{"name":"abc","n":4,"tags":["x",{"k":1.0}],"mode":"fast","opt":0.5}"#.to_vec();
        let tape = simd_json::to_tape(&mut text).unwrap();
        assert_eq!(v.verdict(&tape.0, Some(0)), SchemaVerdict::Valid);
        let info = allocation_counter::measure(|| {
            for _ in 0..100 {
                assert_eq!(v.verdict(&tape.0, Some(0)), SchemaVerdict::Valid);
            }
        });
        assert_eq!(info.count_total, 0, "{info:?}");
    }
}

#[cfg(test)]
mod formats {
    use serde_json::json;

    use super::*;

    /// A one-property schema `{"v": {"type": "string", "format": format}}` and the verdict
    /// on `{"v": value}`, with formats asserted or not.
    fn verdict(format: &str, value: &str, formats: bool) -> SchemaVerdict {
        let schema = json!({"type": "object", "properties": {"v": {"type": "string", "format": format}}});
        let v = SchemaValidator::new(&schema, formats).unwrap();
        let mut text = serde_json::to_vec(&json!({ "v": value })).unwrap();
        let tape = simd_json::to_tape(&mut text).unwrap();
        let verdict = v.verdict(&tape.0, Some(0));
        // The `Value` path (error messages) agrees.
        let value = serde_json::json!({ "v": value });
        assert_eq!(verdict == SchemaVerdict::Valid, v.value().is_valid(&value), "{format} {value}");
        verdict
    }

    /// Each format with a valid value and an invalid one.
    const CASES: &[(&str, &str, &str)] = &[
        ("date", "2026-07-28", "not-a-date"),
        ("date-time", "2026-07-28T12:30:00Z", "2026-07-28 noon"),
        ("time", "12:30:00+02:00", "25:00:00Z"),
        ("email", "ada@example.com", "ada.example.com"),
        ("uri", "https://example.com/a?b=c", "not a uri"),
        ("uri-reference", "../a/b", "\\\\x y"),
        ("uuid", "67e55044-10b1-426f-9247-bb680e5fe0c8", "67e55044-10b1"),
        ("ipv4", "192.0.2.1", "192.0.2.300"),
        ("ipv6", "2001:db8::1", "2001:db8:::1"),
        ("hostname", "mcp.example.com", "-bad-.example"),
        ("duration", "P3DT4H", "3 days"),
        ("json-pointer", "/a/b~1c", "a/b"),
        ("regex", "^a+$", "(unclosed"),
    ];

    #[test]
    fn known_formats_are_asserted_and_switch_off_to_annotations() {
        for &(format, good, bad) in CASES {
            assert_eq!(verdict(format, good, true), SchemaVerdict::Valid, "{format} {good}");
            assert_eq!(verdict(format, bad, true), SchemaVerdict::Invalid, "{format} {bad}");
            assert_eq!(verdict(format, bad, false), SchemaVerdict::Valid, "{format} {bad} (annotation)");
        }
        // A format jsonschema does not know (schemars writes `uint32`, `int64`, ...) is an
        // annotation either way.
        assert_eq!(verdict("uint32", "anything", true), SchemaVerdict::Valid);
    }

    #[test]
    fn valid_formats_on_the_tape_allocate_nothing() {
        // `email` (its parser builds an owned address) and `regex` (a cache of patterns)
        // allocate inside jsonschema; every other format checks in place.
        for &(format, good, _) in CASES.iter().filter(|(f, ..)| !matches!(*f, "email" | "regex")) {
            let schema = json!({"type": "object", "properties": {"v": {"type": "string", "format": format}}});
            let v = SchemaValidator::new(&schema, true).unwrap();
            let mut text = serde_json::to_vec(&json!({ "v": good })).unwrap();
            let tape = simd_json::to_tape(&mut text).unwrap();
            assert_eq!(v.verdict(&tape.0, Some(0)), SchemaVerdict::Valid);
            let info = allocation_counter::measure(|| {
                for _ in 0..10 {
                    assert_eq!(v.verdict(&tape.0, Some(0)), SchemaVerdict::Valid);
                }
            });
            assert_eq!(info.count_total, 0, "{format}: {info:?}");
        }
    }
}
