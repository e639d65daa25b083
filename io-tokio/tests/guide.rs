//! The guide's promise: a server written as `docs/guide.md` says builds with `mcp-io-tokio`
//! as its only MCP dependency. The guide's code blocks are compiled as doctests of this
//! crate (`GuideDoctests` in `src/lib.rs`); these tests check that what compiles there
//! names no crate its dependency block does not list (so never `mcp_engine`: the engine is
//! reached through `mcp_io_tokio::engine`), that the READMEs say the same, and that the
//! crate's root stays small.

use std::collections::BTreeSet;
use std::path::Path;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced blocks of a markdown text: (info string, body).
fn blocks(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in md.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// The crates a Rust block names: the first segment of every path (`tokio::main`,
/// `use serde::…`), leaving out the standard library, the primitive types and the
/// block's own items.
fn crates_named(code: &str) -> BTreeSet<String> {
    const NOT_CRATES: &[&str] = &[
        "std", "core", "alloc", "crate", "self", "super", "f32", "f64", "u8", "u16", "u32", "u64", "usize",
        "i32", "i64", "isize", "str", "bool", "char",
    ];
    let mut found = BTreeSet::new();
    for line in code.lines() {
        let code = line.split("//").next().unwrap_or("");
        let bytes = code.as_bytes();
        let mut i = 0;
        while let Some(at) = code[i..].find("::") {
            let end = i + at;
            let start =
                code[..end].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |s| s + 1);
            let before = start.checked_sub(1).map(|s| bytes[s]);
            let word = &code[start..end];
            let is_path_start = !matches!(before, Some(b':' | b'.' | b'<'));
            if is_path_start
                && word.starts_with(|c: char| c.is_ascii_lowercase())
                && !NOT_CRATES.contains(&word)
            {
                found.insert(word.to_owned());
            }
            i = end + 2;
        }
    }
    found
}

/// Whether a dependency block has a line (commented out or not) for `mcp-engine`.
fn names_engine(toml: &str) -> bool {
    toml.lines().any(|l| l.trim_start_matches(['#', ' ']).starts_with("mcp-engine"))
}

#[test]
fn the_guide_server_needs_only_mcp_io_tokio() {
    let guide = read("docs/guide.md");
    let blocks = blocks(&guide);
    let toml = blocks
        .iter()
        .find(|(info, body)| info == "toml" && body.contains("[dependencies]"))
        .map(|(_, body)| body.clone())
        .expect("the guide's dependency block");
    let listed: BTreeSet<String> = toml
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split('=').next())
        .map(|name| name.trim().replace('-', "_"))
        .filter(|name| !name.is_empty() && !name.starts_with('['))
        .collect();
    let mcp: Vec<&String> = listed.iter().filter(|n| n.starts_with("mcp")).collect();
    assert_eq!(mcp, ["mcp_io_tokio"], "the guide's dependency block lists one MCP crate: {toml}");
    assert!(!names_engine(&toml), "not even commented out: {toml}");

    let rust: Vec<&(String, String)> = blocks.iter().filter(|(info, _)| info.starts_with("rust")).collect();
    assert!(rust.len() >= 6, "the guide's Rust blocks: {}", rust.len());
    for (info, body) in &rust {
        assert!(!body.contains("mcp_engine"), "a guide block names mcp_engine ({info}):\n{body}");
        if info.contains("ignore") {
            continue; // not compiled (the axum mount needs feature `tower` and axum)
        }
        for name in crates_named(body) {
            assert!(
                listed.contains(&name),
                "a compiled guide block uses `{name}`, not in the dependency block:\n{body}"
            );
        }
    }
    // The server itself, compiled with the guide: the engine's types through the re-export.
    let server =
        rust.iter().find(|(_, b)| b.contains("async fn main") && b.contains("Router::new(Notes")).unwrap();
    assert!(server.1.contains("use mcp_io_tokio::engine::{"), "{}", server.1);
    assert!(guide.contains("The code blocks of this guide are compiled as doctests of `mcp-io-tokio`"));
    assert!(read("io-tokio/src/lib.rs").contains("#[doc = include_str!(\"../../docs/guide.md\")]"));
}

#[test]
fn the_readmes_show_one_dependency_for_a_tokio_server() {
    let readme = read("io-tokio/README.md");
    let toml = blocks(&readme).into_iter().find(|(info, _)| info == "toml").expect("a dependency block").1;
    assert!(toml.contains("mcp-io-tokio"), "{toml}");
    assert!(!names_engine(&toml), "{toml}");

    let top = read("README.md");
    let from = top.find("## With tokio").expect("the README's tokio section");
    let to = top.find("## Your own event loop").expect("the section after it");
    let tokio_blocks = blocks(&top[from..to]);
    assert!(tokio_blocks.len() >= 2);
    for (_, body) in tokio_blocks {
        assert!(!body.contains("mcp_engine"), "a README tokio block names mcp_engine:\n{body}");
        assert!(body.contains("mcp_io_tokio::engine::"), "{body}");
    }
}

/// The names at the crate's root: every name a root `pub use` brings in, every root
/// `pub mod` and every public item declared in `lib.rs` (with every feature; the guide's
/// doctest holder, `cfg(doctest)`, left out).
fn root_names(lib: &str) -> Vec<String> {
    let code: String =
        lib.lines().filter(|l| !l.trim_start().starts_with("//")).map(|l| format!("{l}\n")).collect();
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut rest = code.as_str();
    let mut doctest_only = false;
    while !rest.is_empty() {
        if rest.starts_with('{') {
            depth += 1;
            rest = &rest[1..];
        } else if rest.starts_with('}') {
            depth -= 1;
            rest = &rest[1..];
        } else if rest.starts_with("#[cfg(") && depth == 0 {
            let end = rest.find(']').unwrap();
            doctest_only = rest[..end].contains("doctest");
            rest = &rest[end..];
        } else if depth == 0 && rest.starts_with("pub use ") {
            let end = rest.find(';').unwrap();
            leaves(rest["pub use ".len()..end].trim(), &mut names);
            rest = &rest[end + 1..];
        } else if depth == 0 && rest.starts_with("pub ") {
            let words: Vec<&str> = rest.split_whitespace().take(4).collect();
            let name = if words[1] == "async" { words[3] } else { words[2] };
            let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !doctest_only {
                names.push(name);
            }
            doctest_only = false;
            rest = &rest[4..];
        } else {
            let step = rest.chars().next().unwrap().len_utf8();
            rest = &rest[step..];
        }
    }
    names
}

/// The names a `use` tree brings in (`a::{b, c::{d, e as f}}` gives b, d, f).
fn leaves(tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let inner = &tree[open + 1..tree.rfind('}').unwrap()];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    leaves(&inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        leaves(&inner[start..], out);
    } else if !tree.is_empty() {
        let name = tree.rsplit(" as ").next().unwrap().rsplit("::").next().unwrap();
        out.push(name.to_owned());
    }
}

#[test]
fn the_root_holds_what_the_guide_names_and_modules_for_the_rest() {
    let names = root_names(&read("io-tokio/src/lib.rs"));
    // 24: the `skills` module (loading a skills folder from disk) joined the 23 of the
    // house step; the issue asks for about 20.
    assert!(names.len() <= 24, "{} root names: {names:?}", names.len());
    for name in [
        "engine",
        "Handler",
        "ToolCall",
        "ResourceRead",
        "ToolReply",
        "ResourceReply",
        "PromptReply",
        "HostFailure",
        "Router",
        "Structured",
        "NoArgs",
        "serve_stdio",
        "serve_http",
        "HttpServer",
        "Authorizer",
        "store",
        "reply",
        "routes",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not at the root: {names:?}");
    }
    let unique: BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "a name twice at the root: {names:?}");
}

#[test]
fn root_names_counts_uses_modules_and_items() {
    let lib = "pub use a::{B, c::{D, E as F}};\n#[cfg(feature = \"x\")]\npub use g::H;\npub mod m {\n    pub use \
               crate::a::Z;\n}\npub async fn run() {}\n#[cfg(doctest)]\npub struct Hidden;\npub use k as engine;\n";
    assert_eq!(root_names(lib), ["B", "D", "F", "H", "m", "run", "engine"]);
}
