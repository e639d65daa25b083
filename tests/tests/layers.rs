//! The layering rule, on the source of every crate of the workspace (the checker is
//! `mcp_tests::layers`), and the engine's ratchets: the import circles, the files adding
//! methods to `HttpEngine` or `Core` outside their `mod.rs`, and the transports' reaches into
//! the core's fields, each listed exactly as it is today so a list can only shrink (a new
//! entry fails, and so does one that went away and is still listed: remove it).

use std::collections::BTreeMap;
use std::path::Path;

use mcp_tests::layers;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The import circles each crate has today (`layers::cycles`: strongly connected
/// components of the file-level import graph, `super::` and full paths resolved), each as
/// `layers::cycle_line` writes it. Only ever remove lines.
const KNOWN_CYCLES: &[(&str, &[&str])] = &[
    (
        "engine",
        &[
            "catalog <-> catalog::derive <-> catalog::scopes",
            "http <-> http::auth::authorize <-> http::auth::client <-> http::auth::jwt <-> http::auth::limits <-> \
             http::auth::scope_policy <-> http::auth::verdicts <-> http::config <-> http::conn::answer_routing <-> \
             http::conn::conns <-> http::conn::exchange <-> \
             http::conn::in_flight <-> http::conn::refusal <-> http::session::parked <-> \
             http::session::session_streams <-> http::session::sessions <-> http::session::shares <-> \
             http::session::stream_shares <-> http::store <-> http::store::event_store <-> http::store::port <-> http::store::session_record <-> \
             http::store::session_store <-> http::store::task_misses <-> http::store::task_store",
            "mcp <-> mcp::connectome",
            "mcp::tasks <-> mcp::tasks::legacy <-> mcp::tasks::listing <-> mcp::tasks::record <-> \
             mcp::tasks::store <-> mcp::tasks::write",
        ],
    ),
    (
        "io-tokio",
        &[
            "auth::oauth <-> auth::oauth::introspect <-> auth::oauth::jwks",
            "store::postgres <-> store::postgres::events <-> store::postgres::tasks",
        ],
    ),
];

/// Fails unless `found` is exactly `expected`, naming what is new and what went away.
fn assert_exact(what: &str, found: &[String], expected: &[String]) {
    let new: Vec<&String> = found.iter().filter(|f| !expected.contains(f)).collect();
    let gone: Vec<&String> = expected.iter().filter(|e| !found.contains(e)).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "{what}: {} today, {} listed\nnew (not listed; remove the cause, this list only shrinks):\n  {}\n\
         gone (still listed; remove them from the list):\n  {}\ntoday:\n  {}",
        found.len(),
        expected.len(),
        join(&new),
        join(&gone),
        join(&found.iter().collect::<Vec<_>>()),
    );
}

fn join(items: &[&String]) -> String {
    items.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n  ")
}

fn assert_layers(krate: &str, order: &[&[&str]]) {
    let src = root().join(krate).join("src");
    let problems = layers::check(&src, order);
    assert!(problems.is_empty(), "{krate}: layering problems:\n{}", problems.join("\n"));
    let found: Vec<String> = layers::cycles(&src).iter().map(|c| layers::cycle_line(c)).collect();
    let known = KNOWN_CYCLES.iter().find(|(k, _)| *k == krate).map_or(&[][..], |(_, c)| *c);
    let expected: Vec<String> =
        known.iter().map(|c| c.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    assert_exact(&format!("{krate}: import circles"), &found, &expected);
}

/// The engine's layers, lowest first (`docs/architecture.md`, "Module map"; `lib.rs`'s
/// `mod` groups).
const ENGINE_LAYERS: &[&[&str]] = &[
    &["time", "revision", "level"],
    &["timer"],
    &["wire"],
    &["content"],
    &["catalog"],
    &["config", "error"],
    &["connectome"],
    &["jsonrpc"],
    &["output"],
    &["mcp"],
    &["observe"],
    &["commands"],
    &["stdio"],
    &["http"],
    &["internal"],
];

#[test]
fn engine_modules_import_only_lower_layers() {
    assert_layers("engine", ENGINE_LAYERS);
}

#[test]
fn engine_lib_rs_declares_its_modules_grouped_by_layer() {
    // `lib.rs`'s `mod` lines, in groups apart by blank lines: the groups are the layers, in
    // their order (so its comment saying so stays true, and rustfmt keeps the order).
    let text = std::fs::read_to_string(root().join("engine/src/lib.rs")).unwrap();
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        let line = line.trim();
        let name =
            line.strip_prefix("pub ").unwrap_or(line).strip_prefix("mod ").and_then(|m| m.strip_suffix(';'));
        match name {
            Some(name) => {
                if !open {
                    groups.push(Vec::new());
                    open = true;
                }
                groups.last_mut().unwrap().push(name.to_owned());
            }
            None if line.is_empty() => open = false,
            None => {} // attributes and comments keep the group open
        }
    }
    let mut expected: Vec<Vec<String>> =
        ENGINE_LAYERS.iter().map(|l| l.iter().map(|m| m.to_string()).collect()).collect();
    for g in groups.iter_mut().chain(expected.iter_mut()) {
        g.sort();
    }
    assert_eq!(groups, expected, "engine/src/lib.rs: its `mod` groups are not the layers, lowest first");
}

#[test]
fn io_tokio_modules_import_only_lower_layers() {
    // io-tokio's crate docs, "Module map": the host's side of a request, who may call, the
    // stores and telemetry below the run loops.
    assert_layers("io-tokio", &[&["host", "auth", "store"], &["telemetry"], &["run"]]);
}

#[test]
fn io_mio_modules_import_only_lower_layers() {
    assert_layers("io-mio", &[&["wake"], &["spans"], &["stdio"], &["http"]]);
}

#[test]
fn mcp_spans_modules_import_only_lower_layers() {
    assert_layers("engine/spans", &[&["testing"]]);
}

#[test]
fn engine_circles_among_siblings_are_listed() {
    // The circles left once children stop importing their parents (`layers::sibling_cycles`):
    // files of one level importing each other.
    let found: Vec<String> =
        layers::sibling_cycles(&root().join("engine/src")).iter().map(|c| layers::cycle_line(c)).collect();
    let expected = ["http::conn::exchange <-> http::conn::refusal"];
    let expected: Vec<String> =
        expected.iter().map(|c| c.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    assert_exact("engine: import circles among siblings", &found, &expected);
}

#[test]
fn engine_impl_blocks_outside_their_mod_rs_are_listed() {
    // Parts own their methods: in the end only `http/mod.rs` has `impl HttpEngine` and only
    // `mcp/mod.rs` has `impl Core`.
    let src = root().join("engine/src");
    for (ty, home, expected) in [
        (
            "HttpEngine",
            "http/mod.rs",
            &["http/conn/conns.rs", "http/conn/dispatch.rs", "http/store/task_store.rs"][..],
        ),
        ("Core", "mcp/mod.rs", &["mcp/connectome.rs"][..]),
    ] {
        let found: Vec<String> =
            layers::files_with_impl(&src, ty).into_iter().filter(|f| f != home).collect();
        let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_exact(&format!("engine: files other than {home} with `impl {ty}`"), &found, &expected);
    }
}

#[test]
fn engine_transports_never_reach_into_core_fields() {
    // `core.<field>` (not a method call) in `http/` and `stdio.rs`: the transports go through
    // the core's methods (the task store through its port, `Core::task_store`). The fields
    // are private to `mcp/`, so the compiler refuses a reach; this check says so by name.
    let src = root().join("engine/src");
    let mut files = vec![src.join("stdio.rs")];
    layers::rust_files(&src.join("http"), &mut files);
    assert!(files.len() > 2, "engine: no transport files found under {}", src.display());
    let found: BTreeMap<String, usize> = files
        .iter()
        .map(|f| {
            (f.strip_prefix(&src).unwrap().to_string_lossy().into_owned(), layers::core_field_reaches(f))
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    assert!(
        found.is_empty(),
        "engine: core-field reaches from http/ and stdio.rs (there must be none): {found:?}"
    );
}

/// Writes `files` (path, text) below a fresh temporary directory named after `name`.
fn fixture(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-layers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn the_checker_sees_an_upward_import_and_a_cycle() {
    let dir = fixture(
        "rule",
        &[
            ("low/mod.rs", "use crate::high::X;\n"),
            ("low/a.rs", "use crate::low::b::Y;\n"),
            ("low/b.rs", "use crate::low::a::Z;\n// crate::high in a comment\n"),
            ("high.rs", "use crate::Face;\n"),
        ],
    );
    let problems = layers::check(&dir, &[&["low"], &["high"]]);
    let cycles = layers::cycles(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        problems.iter().any(|p| p == "low imports a higher layer: high (crate::high::X)"),
        "{problems:?}"
    );
    assert!(problems.iter().any(|p| p == "high imports the crate face (crate::Face)"), "{problems:?}");
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(cycles, [["low::a", "low::b"]]);
}

/// A tree whose three files import each other in a circle through `super::`, `super::super::`
/// and full paths, three levels down; with `cyclic` false the last arrow is only in places
/// that are not imports (a comment, a string, a visibility, an inline module's `super`).
fn depth_three(cyclic: bool) -> Vec<(&'static str, String)> {
    let c = if cyclic {
        "use super::super::{y::{self as why, a::A}, other};\npub fn g() {}\n"
    } else {
        "// use super::super::y::a::A;\n\
         pub(in crate::x::y) fn g() { let _ = \"crate::x::y::a::A\"; let _ = r#\"super::super::y\"#; }\n\
         mod tests { use super::*; fn t() { super::g(); let _ = '\"'; } }\n"
    };
    vec![
        ("lib.rs", "mod x;\npub use x::y::a::A;\n".to_owned()),
        ("x/mod.rs", "pub mod y;\npub mod z;\nmod other;\n".to_owned()),
        ("x/other.rs", "pub struct O;\n".to_owned()),
        ("x/y/mod.rs", "pub mod a;\npub mod b;\n".to_owned()),
        ("x/y/a.rs", "use super::b::{self, B};\npub struct A(B);\n".to_owned()),
        ("x/y/b.rs", "pub struct B;\npub fn f() { crate::x::z::c::g(); }\n".to_owned()),
        ("x/z/mod.rs", "pub mod c;\n".to_owned()),
        ("x/z/c.rs", c.to_owned()),
    ]
}

#[test]
fn the_checker_sees_a_depth_three_cycle_through_super_and_full_paths() {
    let files = depth_three(true);
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let dir = fixture("cyclic", &files);
    let cycles = layers::cycles(&dir);
    let imports = layers::imports(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(cycles, [["x::y::a", "x::y::b", "x::z::c"]], "{imports:#?}");
    assert_eq!(layers::cycle_line(&cycles[0]), "x::y::a <-> x::y::b <-> x::z::c");
}

#[test]
fn the_checker_passes_the_same_tree_without_the_cycle() {
    let files = depth_three(false);
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let dir = fixture("acyclic", &files);
    let cycles = layers::cycles(&dir);
    let imports = layers::imports(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(cycles.is_empty(), "{cycles:?}\n{imports:#?}");
    // The two arrows that remain are seen: a -> b (`super::b`), b -> c (a full path in code).
    let arrows: Vec<(&str, &str)> = imports.iter().map(|i| (i.from.as_str(), i.to.as_str())).collect();
    assert!(arrows.contains(&("x::y::a", "x::y::b")), "{arrows:?}");
    assert!(arrows.contains(&("x::y::b", "x::z::c")), "{arrows:?}");
    assert!(!arrows.iter().any(|(from, _)| *from == "x::z::c"), "{arrows:?}");
}

#[test]
fn the_architecture_doc_maps_every_engine_file() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let src = root().join("engine/src");
    let mut files = Vec::new();
    layers::rust_files(&src, &mut files);
    assert!(files.len() > 20, "found only {files:?}");
    let missing: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(&src).unwrap().to_string_lossy().into_owned())
        .filter(|rel| !doc.contains(&format!("`{rel}`")))
        .collect();
    assert!(missing.is_empty(), "docs/architecture.md's module map does not name: {missing:?}");
}

#[test]
fn the_architecture_doc_line_counts_are_the_files() {
    // Each row of the module map, `| `path` | lines | owns |`, against `wc -l` of
    // engine/src/path (its newlines). UPDATE_ARCHITECTURE=1 writes today's counts.
    let path = root().join("docs/architecture.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let src = root().join("engine/src");
    let mut wrong = Vec::new();
    let mut rows = 0;
    let mut out = String::with_capacity(doc.len());
    for line in doc.split_inclusive('\n') {
        let cells: Vec<&str> = line.split('|').collect();
        let file = cells.get(1).map(|c| c.trim()).and_then(|c| c.strip_prefix('`')?.strip_suffix('`'));
        let count = cells.get(2).and_then(|c| c.trim().parse::<usize>().ok());
        let (Some(file), Some(count)) = (file, count) else {
            out.push_str(line);
            continue;
        };
        let Ok(bytes) = std::fs::read(src.join(file)) else {
            wrong.push(format!("{file}: no such file in engine/src"));
            out.push_str(line);
            continue;
        };
        rows += 1;
        let lines = bytes.iter().filter(|&&b| b == b'\n').count();
        if lines != count {
            wrong.push(format!("{file}: {count} in the doc, {lines} in the file"));
        }
        let mut cells = cells;
        let written = format!(" {lines} ");
        cells[2] = &written;
        out.push_str(&cells.join("|"));
    }
    assert!(rows > 20, "found only {rows} rows in the module map");
    if std::env::var_os("UPDATE_ARCHITECTURE").is_some() {
        std::fs::write(&path, out).unwrap();
        return;
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's module map is out of date ({} rows); \
         `UPDATE_ARCHITECTURE=1 cargo test -p mcp-tests --test layers` writes today's counts:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
