//! The layering rule of `docs/architecture.md`, checked on a crate's source: a module
//! imports only modules of a lower layer or of its own folder (never the crate face, never
//! a higher layer), and no files import each other in a circle, at any depth.
//!
//! Every path in code is resolved to the file it names: `use` trees (brace groups at any
//! depth, `self` in a group), and paths in expressions, types and attributes, starting at
//! `crate::`, `super::` (any number), `self::`, or a child module of the file. The longest
//! prefix of the path that is a file of the crate is the module imported, so
//! `crate::mcp::tasks::record::decode` names `mcp/tasks/record.rs`, and `super::X` in
//! `mcp/tasks/legacy.rs` names `mcp/tasks/mod.rs`. Inline modules (`mod tests { .. }`)
//! count: their `super::` is the file itself. Declaring a child (`mod x;`) is not an
//! import; using it is. Comments, strings and `pub(in path)` are not paths.

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

/// The module path of a file below `src` (`mcp/mod.rs` -> `mcp`, `wire/json.rs` -> `wire::json`,
/// `lib.rs` -> `lib`).
pub fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).filter(|p| *p != "mod").collect();
    parts.join("::")
}

/// The crate root's module name as [`module_of`] gives it.
const ROOT: &str = "lib";

/// `text` with comments, string and character literals blanked out (each replaced by a
/// space, so tokens on either side stay apart).
pub fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if (c == b'r' || c == b'b') && (i == 0 || !ident(b[i - 1])) && raw_string_at(b, i).is_some() {
            i = raw_string_at(b, i).unwrap_or(i + 1);
            out.push(' ');
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if c == b'\'' {
            // A character literal ('a', '\n', '\u{1F600}', b'x'), or a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b.get(i + 3..).and_then(|r| r.iter().position(|&x| x == b'\'')).map(|p| i + 3 + p + 1)
            } else {
                let ch_len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch_len) == Some(&b'\'')).then_some(i + 2 + ch_len)
            };
            match end {
                Some(end) => {
                    i = end;
                    out.push(' ');
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Where a raw (or byte) string literal starting at `i` ends, if one starts there.
fn raw_string_at(b: &[u8], mut i: usize) -> Option<usize> {
    if b[i] == b'b' {
        i += 1;
        if b.get(i) == Some(&b'"') {
            return None; // b"..": an ordinary string after the prefix
        }
    }
    if b.get(i) != Some(&b'r') {
        return None;
    }
    i += 1;
    let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
    i += hashes;
    if b.get(i) != Some(&b'"') {
        return None;
    }
    i += 1;
    loop {
        let q = i + b.get(i..)?.iter().position(|&c| c == b'"')?;
        if b[q + 1..].iter().take(hashes).filter(|&&c| c == b'#').count() == hashes
            && b.len() >= q + 1 + hashes
        {
            return Some(q + 1 + hashes);
        }
        i = q + 1;
    }
}

/// The tokens of code: identifiers (keywords included), `::`, and single punctuation.
fn tokens(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            // `r#ident`
            out.push(&code[start..i]);
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            out.push("::");
            i += 2;
        } else {
            let len = code[i..].chars().next().map_or(1, char::len_utf8);
            out.push(&code[i..i + len]);
            i += len;
        }
    }
    out
}

/// One path found in a file: the module it is written in (inline modules included), the
/// path's segments as written, and whether it starts at a keyword (`crate`, `super`, `self`)
/// or at a plain name.
#[derive(Debug, Clone)]
struct Written {
    scope: Vec<String>,
    segs: Vec<String>,
}

/// Every path written in `code` of the module `file_module` (segments; empty for the root).
fn written_paths(code: &str, file_module: &[String]) -> Vec<Written> {
    let toks = tokens(code);
    let mut found = Vec::new();
    let mut scope: Vec<String> = file_module.to_vec();
    // Inline modules open: (depth of their `{`, name).
    let mut inline: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        match t {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last() == Some(&depth) {
                    inline.pop();
                    scope.pop();
                }
            }
            "mod" if toks.get(i + 2) == Some(&"{") => {
                scope.push(toks[i + 1].to_owned());
                inline.push(depth);
                depth += 1;
                i += 3;
                continue;
            }
            "pub" if toks.get(i + 1) == Some(&"(") => {
                // `pub(crate)`, `pub(super)`, `pub(in crate::a)`: a visibility, not a path.
                while i < toks.len() && toks[i] != ")" {
                    i += 1;
                }
            }
            "use" => {
                let mut j = i + 1;
                let mut leaves = Vec::new();
                use_tree(&toks, &mut j, &[], &mut leaves);
                for segs in leaves {
                    found.push(Written { scope: scope.clone(), segs });
                }
                i = j;
                continue;
            }
            _ if is_ident(t)
                && toks.get(i + 1) == Some(&"::")
                && !matches!(toks.get(i.wrapping_sub(1)), Some(&"::") | Some(&"."))
                && t != "Self" =>
            {
                let mut j = i;
                let mut segs = Vec::new();
                while j < toks.len() && is_ident(toks[j]) {
                    segs.push(toks[j].to_owned());
                    if toks.get(j + 1) == Some(&"::") && toks.get(j + 2).is_some_and(|n| is_ident(n)) {
                        j += 2;
                    } else {
                        j += 1;
                        break;
                    }
                }
                found.push(Written { scope: scope.clone(), segs });
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

fn is_ident(t: &str) -> bool {
    t.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Reads a use tree at `toks[*j]` under `prefix`, pushing each leaf path (a `self` leaf
/// is the prefix itself; `*` the prefix; `as x` dropped).
fn use_tree(toks: &[&str], j: &mut usize, prefix: &[String], leaves: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    if toks.get(*j) == Some(&"::") {
        *j += 1; // `use ::std::x`
    }
    loop {
        match toks.get(*j).copied() {
            Some("{") => {
                *j += 1;
                while *j < toks.len() && toks[*j] != "}" {
                    use_tree(toks, j, &path, leaves);
                    if toks.get(*j) == Some(&",") {
                        *j += 1;
                    }
                }
                *j += 1; // `}`
                break;
            }
            Some("*") => {
                *j += 1;
                leaves.push(path.clone());
                break;
            }
            Some("self") if !path.is_empty() => {
                *j += 1;
                leaves.push(path.clone());
                break;
            }
            Some(t) if is_ident(t) => {
                path.push(t.to_owned());
                *j += 1;
                if toks.get(*j) == Some(&"::") {
                    *j += 1;
                    continue;
                }
                leaves.push(path.clone());
                break;
            }
            _ => break,
        }
    }
    if toks.get(*j) == Some(&"as") {
        *j += 2;
    }
    if toks.get(*j) == Some(&";") && prefix.is_empty() {
        *j += 1;
    }
}

/// An import found: the module that imports, the module it names, and the path as written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Import {
    /// The importing file's module (`mcp::tasks::legacy`).
    pub from: String,
    /// The file's module the path names (`mcp::tasks`; `lib` for the crate face).
    pub to: String,
    /// The path as written (`super::Record`).
    pub written: String,
}

/// Every import between files of the crate in `src` (a file naming itself left out).
pub fn imports(src: &Path) -> Vec<Import> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let mut out = BTreeSet::new();
    for file in &files {
        let module = module_of(src, file);
        let own: Vec<String> =
            if module == ROOT { Vec::new() } else { module.split("::").map(str::to_owned).collect() };
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for w in written_paths(&code_only(&text), &own) {
            let Some(to) = resolve(&w, &modules) else { continue };
            if to != module {
                out.insert(Import { from: module.clone(), to, written: w.segs.join("::") });
            }
        }
    }
    out.into_iter().collect()
}

/// The file a written path names: its longest prefix that is a module of the crate.
/// `None` for paths outside the crate (`std::..`, a local name, a type's associated item).
fn resolve(w: &Written, modules: &BTreeSet<String>) -> Option<String> {
    let mut segs = w.segs.iter().map(String::as_str).peekable();
    let mut base: Vec<String> = match segs.peek().copied() {
        Some("crate") => {
            segs.next();
            Vec::new()
        }
        Some("self") => {
            segs.next();
            w.scope.clone()
        }
        Some("super") => {
            let mut base = w.scope.clone();
            while segs.peek() == Some(&"super") {
                segs.next();
                base.pop();
            }
            base
        }
        Some(first) => {
            // A plain name: a child module of the scope, else not the crate's.
            let mut child = w.scope.clone();
            child.push(first.to_owned());
            if !modules.contains(&child.join("::")) {
                return None;
            }
            w.scope.clone()
        }
        None => return None,
    };
    let name = |b: &[String]| if b.is_empty() { ROOT.to_owned() } else { b.join("::") };
    // The scope may be an inline module: step out to the nearest file.
    while !base.is_empty() && !modules.contains(&base.join("::")) {
        base.pop();
    }
    for seg in segs {
        base.push(seg.to_owned());
        if !modules.contains(&base.join("::")) {
            base.pop();
            break;
        }
    }
    Some(name(&base))
}

/// The import circles of the crate in `src`: each strongly connected component of the
/// file-level import graph with more than one file, its files sorted; sorted.
pub fn cycles(src: &Path) -> Vec<Vec<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for i in imports(src) {
        edges.entry(i.from).or_default().insert(i.to);
    }
    strongly_connected(&edges)
}

/// The circles among siblings: [`cycles`] with every import of a file's own ancestor left
/// out (a child's `super::X` of its parent's type, the arrows up that parts owning their
/// methods remove), so what remains are files of one level importing each other.
pub fn sibling_cycles(src: &Path) -> Vec<Vec<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for i in imports(src) {
        if i.to == ROOT || i.from.starts_with(&format!("{}::", i.to)) {
            continue;
        }
        edges.entry(i.from).or_default().insert(i.to);
    }
    strongly_connected(&edges)
}

/// Tarjan's algorithm over `edges`: the components of more than one node.
fn strongly_connected(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let lw = s.low[w.as_str()];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w.as_str()) {
                let iw = s.index[w.as_str()];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found.sort();
    s.found
}

/// One circle as a line: its files joined by ` <-> ` (`mcp::answers <-> mcp::tasks`).
pub fn cycle_line(cycle: &[String]) -> String {
    cycle.join(" <-> ")
}

/// Checks the crate whose sources are in `src` against `layers` (lowest first; each a
/// list of top-level modules): every import goes to a lower layer or the importer's own
/// folder (never the crate face, never another folder of the same layer); returns the
/// problems found (none: the rule holds). Import circles are [`cycles`]'s.
pub fn check(src: &Path, layers: &[&[&str]]) -> Vec<String> {
    let rank = |top: &str| layers.iter().position(|l| l.contains(&top));
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut problems = BTreeSet::new();
    for file in &files {
        let module = module_of(src, file);
        if module != ROOT && rank(module.split("::").next().unwrap_or_default()).is_none() {
            problems.insert(format!("{module}: not in a layer (add it where it belongs)"));
        }
    }
    for Import { from, to, written } in imports(src) {
        if from == ROOT {
            continue; // the face: declares and re-exports
        }
        let top = from.split("::").next().unwrap_or_default();
        let Some(own) = rank(top) else { continue };
        if to == ROOT {
            problems.insert(format!("{from} imports the crate face ({written})"));
            continue;
        }
        let a = to.split("::").next().unwrap_or_default();
        match rank(a) {
            Some(r) if r > own => {
                problems.insert(format!("{from} imports a higher layer: {to} ({written})"));
            }
            Some(r) if r == own && a != top => {
                problems
                    .insert(format!("{from} imports {to} ({written}), of its own layer but another folder"));
            }
            _ => {}
        }
    }
    problems.into_iter().collect()
}

/// Each file of `src` (relative path, sorted) holding `impl <ty>` or `impl <Trait> for <ty>`
/// in code, for a type named exactly `ty`.
pub fn files_with_impl(src: &Path, ty: &str) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out: Vec<String> = files
        .iter()
        .filter(|f| {
            let code = code_only(&std::fs::read_to_string(f).unwrap_or_default());
            let toks = tokens(&code);
            toks.iter().enumerate().any(|(i, &t)| {
                if t != "impl" {
                    return false;
                }
                // The impl's head: up to its `{`, generics skipped.
                let head: Vec<&str> = toks[i + 1..].iter().copied().take_while(|&x| x != "{").collect();
                let mut angle = 0i32;
                let top: Vec<&str> = head
                    .into_iter()
                    .filter(|&x| {
                        match x {
                            "<" => angle += 1,
                            ">" => angle -= 1,
                            _ => return angle == 0,
                        }
                        false
                    })
                    .collect();
                let self_ty = match top.iter().position(|&x| x == "for") {
                    Some(p) => top.get(p + 1),
                    None => top.first(),
                };
                self_ty == Some(&ty)
            })
        })
        .map(|f| f.strip_prefix(src).unwrap_or(f).to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// How often the code of `file` reaches into a field of a value named `core`
/// (`core.tasks.get(..)`, `&mut self.core.tasks`): `core.<name>` not followed by `(`.
pub fn core_field_reaches(file: &Path) -> usize {
    let code = code_only(&std::fs::read_to_string(file).unwrap_or_default());
    let toks = tokens(&code);
    (0..toks.len())
        .filter(|&i| {
            toks[i] == "core"
                && toks.get(i.wrapping_sub(1)) != Some(&"::")
                && toks.get(i + 1) == Some(&".")
                && toks.get(i + 2).is_some_and(|t| is_ident(t))
                && toks.get(i + 3) != Some(&"(")
                && toks.get(i + 3) != Some(&"::")
        })
        .count()
}
