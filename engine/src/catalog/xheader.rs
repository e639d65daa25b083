//! Validation of the `x-mcp-header` tool-schema annotation (MCP 2026-07-28).
//!
//! On the Streamable HTTP transport a tool's `inputSchema` may mark a
//! property with `"x-mcp-header": "Name"`; clients then mirror that
//! argument into an `Mcp-Param-Name` HTTP header. The specification
//! constrains the annotation, and clients drop tools that break the
//! constraints, so the server refuses such tools when its catalog is built:
//!
//! * the value is a non-empty RFC 9110 `token` (`1*tchar`);
//! * values are unique, compared case-insensitively, within one schema;
//! * the annotated property's `type` is exactly `"string"`, `"integer"` or
//!   `"boolean"`;
//! * the annotated property is reachable from the schema root through
//!   `properties` keys alone; an annotation anywhere else in the schema
//!   document (under `items`, a composition or conditional keyword, `$defs`,
//!   `additionalProperties`, `patternProperties`, at the root, ...) is
//!   refused.

use core::fmt::{self, Write as _};

use serde_json::{Map, Value};

/// The annotation keyword.
const ANNOTATION: &str = "x-mcp-header";

/// Deepest nesting of JSON objects and arrays the walk enters; a deeper
/// schema is refused (as [`XHeaderReason::NotReachable`]) instead of risking
/// the stack.
pub use crate::wire::headers::HeaderParamKind;

pub(crate) const MAX_SCHEMA_DEPTH: usize = 128;

/// One argument mirrored into an `Mcp-Param-{header}` HTTP header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The annotation's value: the part of the header name after
    /// `Mcp-Param-`, as written in the schema.
    pub header: Box<str>,
    /// Property names from the schema root down to the annotated property
    /// (the argument's location inside `arguments`); never empty.
    pub path: Box<[Box<str>]>,
    /// The annotated property's JSON type.
    pub kind: HeaderParamKind,
}

/// Why an `x-mcp-header` annotation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XHeaderError {
    /// RFC 6901 JSON pointer of the offending annotation within the schema
    /// (for [`XHeaderReason::NotReachable`] caused by excessive nesting, of
    /// the first container too deep to check).
    pub pointer: String,
    /// What is wrong with it.
    pub reason: XHeaderReason,
}

/// What is wrong with an `x-mcp-header` annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum XHeaderReason {
    /// The value is not a JSON string.
    NotAString,
    /// The value is the empty string.
    Empty,
    /// The value is not an RFC 9110 token (it holds a space, `:`, a control
    /// character, a non-ASCII character, ...).
    NotAToken,
    /// The value repeats another annotation's value, compared
    /// case-insensitively.
    Duplicate,
    /// The annotation is not on a property reachable from the schema root
    /// through `properties` alone (or the schema nests too deeply to check).
    NotReachable,
    /// The annotated property's `type` is not exactly `"string"`,
    /// `"integer"` or `"boolean"`.
    BadType,
}

impl XHeaderReason {
    /// The reason in plain words.
    fn describe(self) -> &'static str {
        match self {
            Self::NotAString => "the value is not a string",
            Self::Empty => "the value is empty",
            Self::NotAToken => {
                "the value is not an HTTP token (only ASCII letters, digits and \
                 !#$%&'*+-.^_`|~ are allowed)"
            }
            Self::Duplicate => {
                "the value repeats another x-mcp-header value of this schema \
                 (compared case-insensitively)"
            }
            Self::NotReachable => {
                "it is not on a property reachable from the schema root through \
                 `properties` alone (or the schema nests too deeply to check)"
            }
            Self::BadType => {
                "the annotated property's `type` is not exactly \"string\", \"integer\" \
                 or \"boolean\""
            }
        }
    }
}

impl fmt::Display for XHeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid x-mcp-header annotation at `{}` in the input schema: {}",
            self.pointer,
            self.reason.describe()
        )
    }
}

impl std::error::Error for XHeaderError {}

/// Whether `c` is an RFC 9110 `tchar`.
fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

/// Append one RFC 6901 reference token to `pointer`.
fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// Where a schema being walked sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The schema root.
    Root,
    /// A property schema reached from the root through `properties` alone.
    Property,
    /// Anywhere else.
    Other,
}

/// State of one schema walk.
struct Walker<'s> {
    /// JSON pointer of the value being walked.
    pointer: String,
    /// Property names from the root, meaningful while in [`Place::Property`].
    path: Vec<&'s str>,
    /// Annotations collected so far.
    out: Vec<HeaderParam>,
}

impl<'s> Walker<'s> {
    /// An error at the current pointer, extended by `token` if given.
    fn error(&self, token: Option<&str>, reason: XHeaderReason) -> XHeaderError {
        let mut pointer = self.pointer.clone();
        if let Some(token) = token {
            push_token(&mut pointer, token);
        }
        XHeaderError { pointer, reason }
    }

    /// Refuse a container at `depth` enclosing containers if it is too deep.
    fn check_depth(&self, value: &Value, depth: usize) -> Result<(), XHeaderError> {
        let container = matches!(value, Value::Object(_) | Value::Array(_));
        if container && depth >= MAX_SCHEMA_DEPTH {
            return Err(self.error(None, XHeaderReason::NotReachable));
        }
        Ok(())
    }

    /// Check the annotation `ann` found in schema object `schema` at `place`.
    fn annotation(
        &mut self,
        ann: &Value,
        schema: &Map<String, Value>,
        place: Place,
    ) -> Result<(), XHeaderError> {
        let fail = |w: &Self, reason| Err(w.error(Some(ANNOTATION), reason));
        if place != Place::Property {
            return fail(self, XHeaderReason::NotReachable);
        }
        let Value::String(header) = ann else {
            return fail(self, XHeaderReason::NotAString);
        };
        if header.is_empty() {
            return fail(self, XHeaderReason::Empty);
        }
        if !header.bytes().all(is_tchar) {
            return fail(self, XHeaderReason::NotAToken);
        }
        let kind = match schema.get("type") {
            Some(Value::String(t)) if t == "string" => HeaderParamKind::String,
            Some(Value::String(t)) if t == "integer" => HeaderParamKind::Integer,
            Some(Value::String(t)) if t == "boolean" => HeaderParamKind::Boolean,
            _ => return fail(self, XHeaderReason::BadType),
        };
        if self.out.iter().any(|p| p.header.eq_ignore_ascii_case(header)) {
            return fail(self, XHeaderReason::Duplicate);
        }
        self.out.push(HeaderParam {
            header: header.as_str().into(),
            path: self.path.iter().map(|&s| s.into()).collect(),
            kind,
        });
        Ok(())
    }

    /// Walk a value in schema position.
    fn schema(&mut self, value: &'s Value, place: Place, depth: usize) -> Result<(), XHeaderError> {
        self.check_depth(value, depth)?;
        match value {
            Value::Object(map) => {
                if let Some(ann) = map.get(ANNOTATION) {
                    self.annotation(ann, map, place)?;
                }
                for (key, child) in map {
                    let mark = self.pointer.len();
                    push_token(&mut self.pointer, key);
                    match key.as_str() {
                        ANNOTATION => {}
                        // Instance data, not schemas: their keys are not keywords.
                        "const" | "enum" | "default" | "examples" => {}
                        "properties" => {
                            let inner = match place {
                                Place::Root | Place::Property => Place::Property,
                                Place::Other => Place::Other,
                            };
                            self.name_map(child, inner, depth + 1)?;
                        }
                        "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
                        | "dependencies" => self.name_map(child, Place::Other, depth + 1)?,
                        _ => self.schema(child, Place::Other, depth + 1)?,
                    }
                    self.pointer.truncate(mark);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    let mark = self.pointer.len();
                    // Writing to a String cannot fail.
                    let _ = write!(self.pointer, "/{i}");
                    self.schema(child, Place::Other, depth + 1)?;
                    self.pointer.truncate(mark);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Walk a map from names (property names, patterns, definition names)
    /// to schemas; `place` is where its schemas sit.
    fn name_map(&mut self, value: &'s Value, place: Place, depth: usize) -> Result<(), XHeaderError> {
        let Value::Object(map) = value else {
            // Malformed: still look inside, as an ordinary location.
            return self.schema(value, Place::Other, depth);
        };
        self.check_depth(value, depth)?;
        for (name, child) in map {
            let mark = self.pointer.len();
            push_token(&mut self.pointer, name);
            self.path.push(name);
            let result = self.schema(child, place, depth + 1);
            self.path.pop();
            result?;
            self.pointer.truncate(mark);
        }
        Ok(())
    }
}

/// Walk a tool's inputSchema and collect every x-mcp-header annotation,
/// refusing invalid ones.
///
/// Returns the annotations in the order the walk meets them (the schema
/// objects' key order), or the first violation found.
pub(crate) fn collect_header_params(schema: &Value) -> Result<Vec<HeaderParam>, XHeaderError> {
    let mut walker = Walker { pointer: String::new(), path: Vec::new(), out: Vec::new() };
    walker.schema(schema, Place::Root, 0)?;
    Ok(walker.out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Shorthand for the expected error.
    fn err(pointer: &str, reason: XHeaderReason) -> Result<Vec<HeaderParam>, XHeaderError> {
        Err(XHeaderError { pointer: pointer.to_owned(), reason })
    }

    /// Shorthand for one expected parameter.
    fn param(header: &str, path: &[&str], kind: HeaderParamKind) -> HeaderParam {
        HeaderParam { header: header.into(), path: path.iter().map(|&s| s.into()).collect(), kind }
    }

    /// Build an object without `json!`, which re-serializes interpolated
    /// values (recursively, so not for deep ones).
    fn obj(pairs: Vec<(&str, Value)>) -> Value {
        Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// A one-property schema whose property is `prop`.
    fn one(prop: Value) -> Value {
        json!({"type": "object", "properties": {"p": prop}})
    }

    #[test]
    fn valid_nested() {
        let s = json!({"type":"object","properties":{"a":{"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"}}}}});
        assert_eq!(
            collect_header_params(&s),
            Ok(vec![param("Region", &["a", "region"], HeaderParamKind::String)])
        );
    }

    #[test]
    fn valid_kinds_and_tokens() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "A"},
            "b": {"type": "integer", "x-mcp-header": "Tenant-Id"},
            "c": {"type": "boolean", "x-mcp-header": "!#$%&'*+-.^_`|~09azAZ"},
            "d": {"type": "number"},
            "x-mcp-header": {"type": "string"}
        }});
        assert_eq!(
            collect_header_params(&s),
            Ok(vec![
                param("A", &["a"], HeaderParamKind::String),
                param("Tenant-Id", &["b"], HeaderParamKind::Integer),
                param("!#$%&'*+-.^_`|~09azAZ", &["c"], HeaderParamKind::Boolean),
            ])
        );
    }

    #[test]
    fn no_annotations() {
        let s = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"Pos": {"type": "object", "properties": {"x": {"type": "number"}}}},
            "properties": {
                "at": {"$ref": "#/$defs/Pos"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["a", "b"], "default": "a"}
            },
            "required": ["at"],
            "additionalProperties": false
        });
        assert_eq!(collect_header_params(&s), Ok(vec![]));
        assert_eq!(collect_header_params(&json!(true)), Ok(vec![]));
        assert_eq!(collect_header_params(&json!({})), Ok(vec![]));
    }

    #[test]
    fn instance_data_is_not_an_annotation() {
        let s = json!({"type": "object", "properties": {"o": {
            "type": "object",
            "default": {"x-mcp-header": "A"},
            "examples": [{"x-mcp-header": "B"}],
            "const": {"x-mcp-header": 1},
            "enum": [{"x-mcp-header": ""}]
        }}});
        assert_eq!(collect_header_params(&s), Ok(vec![]));
    }

    #[test]
    fn not_a_string_and_empty() {
        let r = XHeaderReason::NotAString;
        for v in [json!(1), json!(null), json!(true), json!(["A"]), json!({"a": "A"})] {
            let s = one(json!({"type": "string", "x-mcp-header": v}));
            assert_eq!(collect_header_params(&s), err("/properties/p/x-mcp-header", r));
        }
        let s = one(json!({"type": "string", "x-mcp-header": ""}));
        assert_eq!(collect_header_params(&s), err("/properties/p/x-mcp-header", XHeaderReason::Empty));
    }

    #[test]
    fn not_a_token() {
        for v in [
            "A B", "A:B", "A\r\nB", "A\n", "\tA", "Ré", "A\u{7f}", "A\0", "(A)", "A/B", "A\"", "A,B", "A;B",
            "A=B", "A@B", "[A]", "{A}", "A?", "A\\B",
        ] {
            let s = one(json!({"type": "string", "x-mcp-header": v}));
            assert_eq!(
                collect_header_params(&s),
                err("/properties/p/x-mcp-header", XHeaderReason::NotAToken),
                "{v:?}"
            );
        }
    }

    #[test]
    fn duplicate() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "object", "properties": {
                "c": {"type": "string", "x-mcp-header": "rEGION"}}}
        }});
        assert_eq!(
            collect_header_params(&s),
            err("/properties/b/properties/c/x-mcp-header", XHeaderReason::Duplicate)
        );
    }

    #[test]
    fn bad_type() {
        for t in [
            json!(null),
            json!("number"),
            json!("object"),
            json!("array"),
            json!("null"),
            json!("String"),
            json!(["string"]),
            json!(["string", "null"]),
            json!(1),
        ] {
            let s = one(json!({"type": t, "x-mcp-header": "A"}));
            assert_eq!(
                collect_header_params(&s),
                err("/properties/p/x-mcp-header", XHeaderReason::BadType),
                "{t}"
            );
        }
        let s = one(json!({"x-mcp-header": "A"}));
        assert_eq!(collect_header_params(&s), err("/properties/p/x-mcp-header", XHeaderReason::BadType));
        let s = one(json!({"$ref": "#/$defs/S", "x-mcp-header": "A"}));
        assert_eq!(collect_header_params(&s), err("/properties/p/x-mcp-header", XHeaderReason::BadType));
    }

    #[test]
    fn not_reachable() {
        let ann = json!({"type": "string", "x-mcp-header": "A"});
        let cases = [
            (json!({"type": "string", "x-mcp-header": "A"}), "/x-mcp-header"),
            (
                json!({"properties": {"l": {"type": "array", "items": ann}}}),
                "/properties/l/items/x-mcp-header",
            ),
            (
                json!({"properties": {"l": {"type": "array", "prefixItems": [ann]}}}),
                "/properties/l/prefixItems/0/x-mcp-header",
            ),
            (json!({"oneOf": [{}, ann]}), "/oneOf/1/x-mcp-header"),
            (json!({"anyOf": [{"properties": {"a": ann}}]}), "/anyOf/0/properties/a/x-mcp-header"),
            (json!({"allOf": [{"properties": {"a": ann}}]}), "/allOf/0/properties/a/x-mcp-header"),
            (json!({"not": ann}), "/not/x-mcp-header"),
            (json!({"if": ann}), "/if/x-mcp-header"),
            (json!({"then": {"properties": {"a": ann}}}), "/then/properties/a/x-mcp-header"),
            (json!({"else": ann}), "/else/x-mcp-header"),
            (json!({"$defs": {"S": ann}}), "/$defs/S/x-mcp-header"),
            (json!({"definitions": {"S": ann}}), "/definitions/S/x-mcp-header"),
            (json!({"additionalProperties": ann}), "/additionalProperties/x-mcp-header"),
            (json!({"patternProperties": {"^a/~": ann}}), "/patternProperties/^a~1~0/x-mcp-header"),
            (json!({"dependentSchemas": {"a": ann}}), "/dependentSchemas/a/x-mcp-header"),
            (
                json!({"properties": {"a": {"properties": {"b": {"not": ann}}}}}),
                "/properties/a/properties/b/not/x-mcp-header",
            ),
            (json!({"x-vendor": {"x-mcp-header": "A"}}), "/x-vendor/x-mcp-header"),
        ];
        for (s, ptr) in cases {
            assert_eq!(collect_header_params(&s), err(ptr, XHeaderReason::NotReachable), "{s}");
        }
        // Reachability is checked before the value itself.
        let s = json!({"items": {"x-mcp-header": 5}});
        assert_eq!(collect_header_params(&s), err("/items/x-mcp-header", XHeaderReason::NotReachable));
    }

    #[test]
    fn pointer_escaping() {
        let s = json!({"properties": {"a/b~c": {"type": "string", "x-mcp-header": "A B"}}});
        assert_eq!(
            collect_header_params(&s),
            err("/properties/a~1b~0c/x-mcp-header", XHeaderReason::NotAToken)
        );
        let s = json!({"properties": {"a/b~c": {"type": "string", "x-mcp-header": "AB"}}});
        assert_eq!(collect_header_params(&s), Ok(vec![param("AB", &["a/b~c"], HeaderParamKind::String)]));
    }

    #[test]
    fn depth_is_bounded() {
        // Built by hand: serde_json's parser would refuse this nesting.
        let mut deep = json!({"type": "string"});
        for _ in 0..10_000 {
            deep = obj(vec![("not", deep)]);
        }
        let r = collect_header_params(&deep);
        let Err(e) = r else { panic!("deep schema accepted") };
        assert_eq!(e.reason, XHeaderReason::NotReachable);
        assert_eq!(e.pointer.matches('/').count(), MAX_SCHEMA_DEPTH);
        // Dropping a value this deep recurses in serde_json; unwind it here.
        let mut v = deep;
        while let Value::Object(mut m) = v {
            v = m.remove("not").unwrap_or(Value::Null);
        }

        let mut ok = json!({"type": "string", "x-mcp-header": "Deep"});
        let mut path = vec![];
        for i in 0..(MAX_SCHEMA_DEPTH / 2 - 1) {
            let name = format!("p{i}");
            let props = obj(vec![(&name, ok)]);
            ok = obj(vec![("type", json!("object")), ("properties", props)]);
            path.push(name);
        }
        path.reverse();
        let paths: Vec<&str> = path.iter().map(String::as_str).collect();
        assert_eq!(collect_header_params(&ok), Ok(vec![param("Deep", &paths, HeaderParamKind::String)]));
        let mut arrays = json!(1);
        for _ in 0..200 {
            arrays = Value::Array(vec![arrays]);
        }
        let Err(e) = collect_header_params(&obj(vec![("items", arrays)])) else {
            panic!("deep array accepted")
        };
        assert_eq!(e.reason, XHeaderReason::NotReachable);
    }

    #[test]
    fn display() {
        let e = XHeaderError { pointer: "/properties/p/x-mcp-header".into(), reason: XHeaderReason::BadType };
        let msg = e.to_string();
        assert!(msg.contains("/properties/p/x-mcp-header") && msg.contains("integer"), "{msg}");
        for r in [
            XHeaderReason::NotAString,
            XHeaderReason::Empty,
            XHeaderReason::NotAToken,
            XHeaderReason::Duplicate,
            XHeaderReason::NotReachable,
            XHeaderReason::BadType,
        ] {
            assert!(!r.describe().is_empty());
        }
    }
}
