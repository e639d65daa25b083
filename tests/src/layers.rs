//! The layering rule of `docs/architecture.md`, checked on a crate's source: a module
//! imports only modules of a lower layer or of its own folder (never the crate face, never
//! a higher layer), and the imports inside a folder form no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file below `dir`.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file below `src` (`mcp/mod.rs` -> `mcp`, `wire/json.rs` -> `wire::json`).
pub fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).filter(|p| *p != "mod").collect();
    parts.join("::")
}

/// Every `crate::a::b` path in code (comments and doc comments left out), as its first two
/// segments; a brace group `crate::{a, b::c}` counts each member.
fn crate_paths(text: &str) -> BTreeSet<(String, Option<String>)> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let before = rest[..i].chars().last();
            rest = after;
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // e.g. `mcp_engine_crate::`
            }
            let segs = |s: &str| -> (String, Option<String>) {
                let mut it = s
                    .split("::")
                    .map(|p| p.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>());
                let a = it.next().unwrap_or_default();
                let b = it.next().filter(|b| !b.is_empty());
                (a, b)
            };
            if let Some(group) = after.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                for member in group.split(',') {
                    found.insert(segs(member.trim()));
                }
            } else {
                found.insert(segs(after));
            }
        }
    }
    found
}

/// Checks the crate whose sources are in `src` against `layers` (lowest first; each a
/// list of top-level modules); returns the problems found (none: the rule holds).
pub fn check(src: &Path, layers: &[&[&str]]) -> Vec<String> {
    let rank = |top: &str| layers.iter().position(|l| l.contains(&top));
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut problems = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        if module == "lib" {
            continue; // the face: declares and re-exports
        }
        let top = module.split("::").next().unwrap_or_default().to_owned();
        let Some(own) = rank(&top) else {
            problems.push(format!("{module}: not in a layer (add it where it belongs)"));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (a, b) in crate_paths(&text) {
            if a.is_empty() {
                continue;
            }
            match rank(&a) {
                None => problems.push(format!("{module} imports the crate face (crate::{a})")),
                Some(r) if r > own => problems.push(format!("{module} imports a higher layer: crate::{a}")),
                Some(r) if r == own && a != top => {
                    problems.push(format!("{module} imports crate::{a}, of its own layer but another folder"))
                }
                Some(_) if a == top => {
                    let target = match &b {
                        Some(b) if files.iter().any(|f| module_of(src, f) == format!("{a}::{b}")) => {
                            format!("{a}::{b}")
                        }
                        _ => a.clone(),
                    };
                    if target != module {
                        edges.entry(module.clone()).or_default().insert(target);
                    }
                }
                Some(_) => {}
            }
        }
    }
    let mut done = BTreeSet::new();
    for m in edges.keys() {
        visit(m, &edges, &mut Vec::new(), &mut done, &mut problems);
    }
    problems
}

fn visit(
    m: &str,
    edges: &BTreeMap<String, BTreeSet<String>>,
    stack: &mut Vec<String>,
    done: &mut BTreeSet<String>,
    problems: &mut Vec<String>,
) {
    if done.contains(m) {
        return;
    }
    if let Some(i) = stack.iter().position(|s| s == m) {
        problems.push(format!("import cycle: {} -> {m}", stack[i..].join(" -> ")));
        return;
    }
    stack.push(m.to_owned());
    for next in edges.get(m).into_iter().flatten() {
        visit(next, edges, stack, done, problems);
    }
    stack.pop();
    done.insert(m.to_owned());
}
