//! Validation of JSON values against the official MCP JSON schemas.
//!
//! The schema files of three protocol revisions live in `<spec dir>/<rev>/schema.json`
//! (see [`spec_dir`]); the official 2026-07-28 example messages live in
//! `<spec dir>/2026-07-28/examples/<TypeName>/*.json`.
//!
//! * 2026-07-28 and 2025-11-25 are JSON Schema 2020-12 documents whose types sit under
//!   `$defs`; 2025-06-18 is a draft-07 document whose types sit under `definitions`.
//!   The draft is read from each file's `$schema` keyword and set explicitly on the
//!   validator, so each revision is checked with its own draft's semantics.
//! * A validator for one definition is compiled from a small wrapper schema
//!   `{"$schema": <file's>, "allOf": [{"$ref": "#/<container>/<Def>"}], "<container>": <file's>}`.
//!   Every `$ref` in the official files is a local JSON pointer (`#/$defs/...` or
//!   `#/definitions/...`), so with the definitions copied into the wrapper's root every
//!   reference resolves inside the wrapper document, without any network or file access.
//! * `format` is asserted in every revision (draft-07 does so by default, 2020-12 only
//!   annotates it unless asked), so e.g. a `uri` field that holds no URI is reported
//!   whichever revision is checked. Unknown formats (the schemas' `byte`) are ignored.
//! * Each parsed schema file and each compiled (revision, definition) validator is cached
//!   for the life of the process.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, ValidationError, Validator};
use serde_json::{Value, json};

/// A protocol revision whose schema we validate against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rev {
    /// The stateless 2026-07-28 revision (JSON Schema 2020-12, `$defs`).
    V2026_07_28,
    /// The 2025-11-25 revision (JSON Schema 2020-12, `$defs`).
    V2025_11_25,
    /// The 2025-06-18 revision (JSON Schema draft-07, `definitions`).
    V2025_06_18,
}

impl Rev {
    /// Every revision, newest first.
    pub const ALL: [Self; 3] = [Self::V2026_07_28, Self::V2025_11_25, Self::V2025_06_18];

    /// The revision's name as it appears on the wire and as the schema folder name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2026_07_28 => "2026-07-28",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2025_06_18 => "2025-06-18",
        }
    }
}

impl std::fmt::Display for Rev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Directory holding `<rev>/schema.json`: `$MCP_SPEC_DIR` if set (and not empty),
/// else the `spec` folder of this crate.
#[must_use]
pub fn spec_dir() -> PathBuf {
    match std::env::var_os("MCP_SPEC_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("spec"),
    }
}

/// A parsed schema file: its `$schema` value, the draft it selects, the name of the
/// member that holds the definitions, and the definitions themselves.
struct SchemaDoc {
    meta: Value,
    draft: Draft,
    container: &'static str,
    defs: Value,
}

fn read_json(path: &Path) -> Value {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) => panic!(
            "cannot read {}: {err}\n(MCP schema files are read from $MCP_SPEC_DIR when it is set, \
             else from the `spec` folder of the mcp-tests crate; set MCP_SPEC_DIR to a directory \
             holding <rev>/schema.json to use another copy)",
            path.display()
        ),
    };
    match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(err) => panic!("{} is not valid JSON: {err}", path.display()),
    }
}

fn load_doc(rev: Rev) -> SchemaDoc {
    let path = spec_dir().join(rev.as_str()).join("schema.json");
    let mut root = read_json(&path);
    let meta = root.get("$schema").cloned().unwrap_or(Value::Null);
    let draft = match meta.as_str().map(|s| s.trim_end_matches('#')) {
        Some("https://json-schema.org/draft/2020-12/schema") => Draft::Draft202012,
        Some("https://json-schema.org/draft/2019-09/schema") => Draft::Draft201909,
        Some("http://json-schema.org/draft-07/schema") => Draft::Draft7,
        other => panic!("{}: unsupported or missing $schema {other:?}", path.display()),
    };
    let container =
        if matches!(draft, Draft::Draft202012 | Draft::Draft201909) { "$defs" } else { "definitions" };
    let Some(defs @ Value::Object(_)) = root.get_mut(container).map(Value::take) else {
        panic!("{}: no `{container}` object", path.display())
    };
    SchemaDoc { meta, draft, container, defs }
}

fn doc(rev: Rev) -> &'static SchemaDoc {
    static DOCS: [OnceLock<SchemaDoc>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = match rev {
        Rev::V2026_07_28 => &DOCS[0],
        Rev::V2025_11_25 => &DOCS[1],
        Rev::V2025_06_18 => &DOCS[2],
    };
    slot.get_or_init(|| load_doc(rev))
}

/// Names of every definition in the schema of `rev`, sorted.
#[must_use]
pub fn definitions(rev: Rev) -> Vec<String> {
    let mut names: Vec<String> =
        doc(rev).defs.as_object().map(|defs| defs.keys().cloned().collect()).unwrap_or_default();
    names.sort();
    names
}

fn compile(rev: Rev, def: &str) -> Validator {
    let doc = doc(rev);
    assert!(
        doc.defs.get(def).is_some(),
        "schema {rev} has no definition `{def}` (under `{}`)",
        doc.container
    );
    let pointer = format!("#/{}/{}", doc.container, pointer_escape(def));
    // `allOf` rather than a bare sibling `$ref`: in draft-07 keywords beside `$ref` are
    // ignored, and although `definitions` is only a container there, keeping the
    // reference inside `allOf` makes the wrapper mean the same thing in every draft.
    let mut wrapper = json!({
        "$schema": doc.meta,
        "allOf": [{ "$ref": pointer }],
    });
    wrapper[doc.container] = doc.defs.clone();
    match jsonschema::options()
        .with_draft(doc.draft)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(true)
        .build(&wrapper)
    {
        Ok(validator) => validator,
        Err(err) => panic!("cannot compile schema {rev} `{def}`: {err}"),
    }
}

fn pointer_escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn validator(rev: Rev, def: &str) -> Arc<Validator> {
    type Cache = Mutex<HashMap<(Rev, String), Arc<Validator>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Cache::default);
    let key = (rev, def.to_owned());
    if let Some(found) = cache.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Arc::clone(found);
    }
    // Compile without holding the lock; if two threads race, the first insert wins.
    let compiled = Arc::new(compile(rev, def));
    let mut map = cache.lock().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(map.entry(key).or_insert(compiled))
}

/// Validate `instance` against the schema definition `def` (e.g. `ListToolsResult`,
/// `JSONRPCResponse`, `CallToolResult`) of revision `rev`.
///
/// # Errors
///
/// `Err` lists every validation error, one per line, each with its instance path
/// (`/` is the root) and the schema path that rejected it; the alternatives of a failed
/// `anyOf`/`oneOf` are expanded below it.
///
/// # Panics
///
/// If the schema file is missing or unreadable, or `def` is not a definition of `rev`.
pub fn check(rev: Rev, def: &str, instance: &Value) -> Result<(), String> {
    let validator = validator(rev, def);
    let mut out = String::new();
    let mut count = 0usize;
    for err in validator.iter_errors(instance) {
        count += 1;
        write_error(&mut out, &err, 1);
    }
    if count == 0 {
        Ok(())
    } else {
        Err(format!("{count} error(s) against {rev} `{def}`:\n{}", out.trim_end()))
    }
}

/// How deep `anyOf`/`oneOf` alternatives are expanded in an error report.
const MAX_DEPTH: usize = 4;
/// Longest error message kept whole (messages quote the offending value).
const MAX_MESSAGE: usize = 300;

fn write_error(out: &mut String, err: &ValidationError<'_>, depth: usize) {
    let indent = "  ".repeat(depth);
    let at = err.instance_path().to_string();
    let at = if at.is_empty() { "/" } else { at.as_str() };
    let schema_path = err.schema_path();
    let (keyword, alternatives) = match err.kind() {
        ValidationErrorKind::AnyOf { context } => ("anyOf", context),
        ValidationErrorKind::OneOfNotValid { context } => ("oneOf", context),
        _ => {
            let mut message = err.to_string();
            if message.len() > MAX_MESSAGE {
                let mut end = MAX_MESSAGE;
                while !message.is_char_boundary(end) {
                    end -= 1;
                }
                message.truncate(end);
                message.push_str("...");
            }
            let _ = writeln!(out, "{indent}at {at}: {message} (schema path {schema_path})");
            return;
        }
    };
    let _ = writeln!(
        out,
        "{indent}at {at}: matches none of the {} alternatives of `{keyword}` (schema path {schema_path})",
        alternatives.len()
    );
    if depth >= MAX_DEPTH {
        return;
    }
    for (i, branch) in alternatives.iter().enumerate() {
        let _ = writeln!(out, "{indent}  alternative {}:", i + 1);
        for sub in branch {
            write_error(out, sub, depth + 2);
        }
    }
}

/// Panic with a readable message (revision, definition, every error and the pretty
/// instance) if `instance` is not a valid `def` of revision `rev`.
///
/// # Panics
///
/// If `instance` is invalid, and in the cases where [`check`] panics.
#[track_caller]
pub fn assert_valid(rev: Rev, def: &str, instance: &Value) {
    if let Err(errors) = check(rev, def, instance) {
        let pretty = serde_json::to_string_pretty(instance).unwrap_or_else(|_| instance.to_string());
        panic!("schema violation ({rev} `{def}`): {errors}\ninstance:\n{pretty}");
    }
}

/// Every example message under `2026-07-28/examples/<TypeName>/*.json` of [`spec_dir`]:
/// (type name, file name, parsed value), sorted by type name and then file name.
///
/// # Panics
///
/// If the examples folder cannot be read or an example is not valid JSON.
#[must_use]
pub fn examples_2026() -> Vec<(String, String, Value)> {
    let root = spec_dir().join(Rev::V2026_07_28.as_str()).join("examples");
    let mut out = Vec::new();
    for type_dir in read_dir_sorted(&root) {
        if !type_dir.is_dir() {
            continue;
        }
        let type_name = file_name(&type_dir);
        for file in read_dir_sorted(&type_dir) {
            if file.extension().is_some_and(|ext| ext == "json") && file.is_file() {
                let value = read_json(&file);
                out.push((type_name.clone(), file_name(&file), value));
            }
        }
    }
    out
}

fn read_dir_sorted(dir: &Path) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => panic!(
            "cannot read {}: {err}\n(set MCP_SPEC_DIR to a directory holding \
             2026-07-28/examples/ to use another copy)",
            dir.display()
        ),
    };
    let mut paths: Vec<PathBuf> = entries
        .map(|entry| match entry {
            Ok(entry) => entry.path(),
            Err(err) => panic!("cannot read {}: {err}", dir.display()),
        })
        .collect();
    paths.sort();
    paths
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> Value {
        json!({ "name": "echo", "inputSchema": { "type": "object" } })
    }

    #[test]
    fn rev_names_and_files() {
        assert_eq!(Rev::ALL.map(Rev::as_str), ["2026-07-28", "2025-11-25", "2025-06-18"]);
        for rev in Rev::ALL {
            assert!(spec_dir().join(rev.as_str()).join("schema.json").is_file(), "missing schema for {rev}");
        }
    }

    #[test]
    fn drafts_follow_the_schema_keyword() {
        assert_eq!(doc(Rev::V2026_07_28).draft, Draft::Draft202012);
        assert_eq!(doc(Rev::V2025_11_25).draft, Draft::Draft202012);
        assert_eq!(doc(Rev::V2025_06_18).draft, Draft::Draft7);
        assert_eq!(doc(Rev::V2026_07_28).container, "$defs");
        assert_eq!(doc(Rev::V2025_06_18).container, "definitions");
    }

    #[test]
    fn every_2026_example_validates_against_its_folder_type() {
        let examples = examples_2026();
        let types: std::collections::BTreeSet<&str> = examples.iter().map(|(ty, _, _)| ty.as_str()).collect();
        assert_eq!(types.len(), 88, "example type folders");
        assert_eq!(examples.len(), 129, "example files");
        let mut failures = Vec::new();
        for (ty, file, value) in &examples {
            if let Err(errors) = check(Rev::V2026_07_28, ty, value) {
                failures.push(format!("{ty}/{file}: {errors}"));
            }
        }
        assert!(
            failures.is_empty(),
            "{} official example(s) are invalid:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    #[test]
    fn examples_are_checked_for_real() {
        // Guards against a vacuous pass: a mangled official example is rejected, and
        // examples of other types are not CallToolResults.
        let examples = examples_2026();
        let (_, _, list) =
            examples.iter().find(|(ty, _, _)| ty == "ListToolsResult").expect("a ListToolsResult example");
        let mut mangled = list.clone();
        mangled.as_object_mut().unwrap().remove("tools");
        assert!(check(Rev::V2026_07_28, "ListToolsResult", &mangled).is_err());
        let others_rejected = examples
            .iter()
            .filter(|(ty, _, v)| {
                ty != "CallToolResult" && check(Rev::V2026_07_28, "CallToolResult", v).is_err()
            })
            .count();
        let others = examples.iter().filter(|(ty, _, _)| ty != "CallToolResult").count();
        assert_eq!(others_rejected, others);
    }

    #[test]
    fn cached_validators_are_reused() {
        let first = validator(Rev::V2025_11_25, "CallToolResult");
        let second = validator(Rev::V2025_11_25, "CallToolResult");
        assert!(Arc::ptr_eq(&first, &second));
    }

    #[test]
    fn tool_without_input_schema_is_rejected_in_every_revision() {
        for rev in Rev::ALL {
            let mut result = json!({
                "tools": [{ "name": "echo" }],
                "resultType": "complete",
                "ttlMs": 0,
                "cacheScope": "public",
            });
            let err = check(rev, "ListToolsResult", &result).unwrap_err();
            assert!(err.contains("/tools/0"), "{rev}: {err}");
            assert!(err.contains("inputSchema"), "{rev}: {err}");
            result["tools"][0] = tool();
            assert_valid(rev, "ListToolsResult", &result);
        }
    }

    #[test]
    fn every_error_is_listed_with_its_path() {
        let bad = json!({ "content": [{ "type": "text" }], "isError": "yes" });
        let err = check(Rev::V2025_06_18, "CallToolResult", &bad).unwrap_err();
        assert!(err.contains("at /isError"), "{err}");
        assert!(err.contains("at /content/0"), "{err}");
    }

    #[test]
    #[should_panic(expected = "schema violation (2025-11-25 `CallToolResult`)")]
    fn assert_valid_panics_on_invalid() {
        assert_valid(Rev::V2025_11_25, "CallToolResult", &json!({}));
    }

    #[test]
    #[should_panic(expected = "has no definition `NoSuchType`")]
    fn unknown_definition_panics() {
        let _ = check(Rev::V2025_06_18, "NoSuchType", &json!({}));
    }

    #[test]
    fn empty_tool_list_is_valid_before_2026() {
        for rev in [Rev::V2025_06_18, Rev::V2025_11_25] {
            assert_valid(rev, "ListToolsResult", &json!({ "tools": [] }));
            assert_valid(rev, "ListToolsResult", &json!({ "tools": [tool()], "nextCursor": "c" }));
        }
    }

    #[test]
    fn list_tools_result_2026_requires_result_type_ttl_and_cache_scope() {
        let rev = Rev::V2026_07_28;
        let full = json!({ "tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "public" });
        assert_valid(rev, "ListToolsResult", &full);
        for field in ["tools", "resultType", "ttlMs", "cacheScope"] {
            let mut partial = full.clone();
            partial.as_object_mut().unwrap().remove(field);
            let err = check(rev, "ListToolsResult", &partial).unwrap_err();
            assert!(err.contains(&format!("\"{field}\" is a required property")), "{err}");
        }
        assert!(check(rev, "ListToolsResult", &json!({ "tools": [] })).is_err());
        // ttlMs is a non-negative integer and cacheScope is "public" or "private".
        for (field, bad) in [("ttlMs", json!(-1)), ("ttlMs", json!(1.5)), ("cacheScope", json!("global"))] {
            let mut wrong = full.clone();
            wrong[field] = bad;
            assert!(check(rev, "ListToolsResult", &wrong).is_err(), "{field}");
        }
        let mut private = full.clone();
        private["cacheScope"] = json!("private");
        private["ttlMs"] = json!(60_000);
        assert_valid(rev, "ListToolsResult", &private);
    }

    #[test]
    fn result_type_2026_is_required_on_every_result_but_is_any_string() {
        let rev = Rev::V2026_07_28;
        assert_valid(rev, "CallToolResult", &json!({ "content": [], "resultType": "complete" }));
        assert!(check(rev, "CallToolResult", &json!({ "content": [] })).is_err());
        // The schema types `resultType` as a plain string (no enum).
        assert_valid(rev, "CallToolResult", &json!({ "content": [], "resultType": "whatever" }));
        assert_valid(rev, "EmptyResult", &json!({ "resultType": "complete" }));
        assert!(check(rev, "EmptyResult", &json!({})).is_err());
        // The response envelope's `result` is a `Result`, so it needs `resultType` too.
        let ok = json!({ "jsonrpc": "2.0", "id": 1, "result": { "resultType": "complete" } });
        assert_valid(rev, "JSONRPCResponse", &ok);
        let bare = json!({ "jsonrpc": "2.0", "id": 1, "result": {} });
        assert!(check(rev, "JSONRPCResponse", &bare).is_err());
        for old in [Rev::V2025_11_25, Rev::V2025_06_18] {
            assert_valid(old, "JSONRPCResponse", &bare);
            assert_valid(old, "EmptyResult", &json!({}));
        }
    }

    #[test]
    fn error_response_id_rules() {
        let error = json!({ "code": -32700, "message": "Parse error" });
        let no_id = json!({ "jsonrpc": "2.0", "error": error });
        let null_id = json!({ "jsonrpc": "2.0", "id": null, "error": error });
        let with_id = json!({ "jsonrpc": "2.0", "id": "a", "error": error });
        // 2026-07-28 and 2025-11-25: `id` is optional, but when present it is a string or integer.
        for rev in [Rev::V2026_07_28, Rev::V2025_11_25] {
            assert_valid(rev, "JSONRPCErrorResponse", &no_id);
            assert_valid(rev, "JSONRPCErrorResponse", &with_id);
            assert!(check(rev, "JSONRPCErrorResponse", &null_id).is_err());
            assert_valid(rev, "JSONRPCResponse", &no_id);
            assert_valid(rev, "JSONRPCMessage", &no_id);
        }
        // 2025-06-18: the error envelope is `JSONRPCError`, `id` is required and not null;
        // `JSONRPCResponse` there is the result envelope only.
        let rev = Rev::V2025_06_18;
        assert_valid(rev, "JSONRPCError", &with_id);
        assert!(check(rev, "JSONRPCError", &no_id).is_err());
        assert!(check(rev, "JSONRPCError", &null_id).is_err());
        assert!(check(rev, "JSONRPCResponse", &with_id).is_err());
        assert_valid(rev, "JSONRPCMessage", &with_id);
    }

    #[test]
    fn formats_are_asserted_in_every_revision() {
        for rev in Rev::ALL {
            let mut link = json!({ "type": "resource_link", "name": "x", "uri": "file:///tmp/x" });
            assert_valid(rev, "ResourceLink", &link);
            link["uri"] = json!("not a uri");
            assert!(check(rev, "ResourceLink", &link).is_err(), "{rev}");
        }
    }

    #[test]
    fn definition_lists() {
        let results =
            |rev| -> Vec<String> { definitions(rev).into_iter().filter(|d| d.ends_with("Result")).collect() };
        assert!(results(Rev::V2026_07_28).contains(&"DiscoverResult".to_owned()));
        assert!(!results(Rev::V2026_07_28).contains(&"InitializeResult".to_owned()));
        assert!(results(Rev::V2025_06_18).contains(&"InitializeResult".to_owned()));
    }
}
