//! The layering rule, on the source of every crate of the workspace (the checker is
//! `mcp_tests::layers`).

use std::path::Path;

use mcp_tests::layers;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn assert_layers(krate: &str, order: &[&[&str]]) {
    let problems = layers::check(&root().join(krate).join("src"), order);
    assert!(problems.is_empty(), "{krate}: layering problems:\n{}", problems.join("\n"));
}

#[test]
fn engine_modules_import_only_lower_layers() {
    // docs/architecture.md, "Module map": lowest first.
    assert_layers(
        "engine",
        &[
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
            &["stdio"],
            &["http"],
            &["internal"],
        ],
    );
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
fn the_checker_sees_an_upward_import_and_a_cycle() {
    let dir = std::env::temp_dir().join(format!("mcp-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("low")).unwrap();
    std::fs::write(dir.join("low/mod.rs"), "use crate::high::X;\n").unwrap();
    std::fs::write(dir.join("low/a.rs"), "use crate::low::b::Y;\n").unwrap();
    std::fs::write(dir.join("low/b.rs"), "use crate::low::a::Z;\n// crate::high in a comment\n").unwrap();
    std::fs::write(dir.join("high.rs"), "use crate::Face;\n").unwrap();
    let problems = layers::check(&dir, &[&["low"], &["high"]]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(problems.iter().any(|p| p == "low imports a higher layer: crate::high"), "{problems:?}");
    assert!(problems.iter().any(|p| p == "high imports the crate face (crate::Face)"), "{problems:?}");
    assert!(problems.iter().any(|p| p.starts_with("import cycle: low::a -> low::b")), "{problems:?}");
    assert_eq!(problems.len(), 3, "{problems:?}");
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
