//! Agent Skills the server offers (the `io.modelcontextprotocol/skills` extension, SEP-2640).
//!
//! A [`Skill`] is a folder of files whose root holds `SKILL.md`, addressed by the uri of that
//! `SKILL.md` (`skill://<skill-path>/SKILL.md`, the last segment of the path being the
//! skill's name). The host declares each skill with its files' bytes ([`Skill::file`]), or as
//! [`Skill::dynamic`] when its files change and are read through the host. Building the
//! catalog parses every `SKILL.md`'s frontmatter once (`frontmatter`), checks the naming and
//! size rules, digests every file (SHA-256) and prepares everything a request is answered
//! with: the `skills/list` entry, each file's `resources/read` contents and each folder's
//! children. [`skills_in`] turns an in-memory tree of files into skills (each folder holding a
//! `SKILL.md` one skill), for hosts that read a skills folder themselves.

mod frontmatter;
mod rules;

use std::sync::Arc;

use base64::Engine as _;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::Digest as _;

pub use rules::SkillError;
pub(crate) use rules::{MAX_BYTES, MAX_FILES, SKILL_MD};

/// The MIME type of a folder in `resources/directory/read`.
pub(crate) const DIRECTORY_MIME: &str = "inode/directory";

/// A skill the server offers: its uri, its files, and optional `_meta`.
///
/// ```
/// use mcp_engine::skills::Skill;
///
/// let skill = Skill::new("skill://acme/pdf")
///     .file("SKILL.md", "---\nname: pdf\ndescription: Fill PDF forms.\n---\n# PDF\n")
///     .file("reference/forms.md", "Field types...")
///     .file("logo.png", b"\x89PNG\r\n\x1a\n");
/// assert_eq!(skill.uri(), "skill://acme/pdf/SKILL.md");
/// ```
#[derive(Clone, Debug)]
pub struct Skill {
    /// The uri of the skill's folder, without a trailing `/` (`skill://acme/pdf`).
    pub root: String,
    /// The files, by path relative to the folder (`/`-separated), with their bytes. For a
    /// dynamic skill, only `SKILL.md` (its frontmatter is listed).
    pub files: Vec<(String, Arc<[u8]>)>,
    /// Whether the files change: the entry lists `"resources": "dynamic"` and every read of
    /// the skill's files is asked of the host.
    pub dynamic: bool,
    /// The entry's `_meta` (keys namespaced, e.g. `io.modelcontextprotocol.skills/…`).
    pub meta: Map<String, Value>,
    /// Scopes a caller needs to see and load the skill over a protected HTTP endpoint
    /// ([`Skill::requires_scopes`]).
    pub required_scopes: Vec<Vec<String>>,
}

impl Skill {
    /// A skill whose folder is `root` (`skill://acme/pdf`: the last segment is the skill's
    /// name, which its frontmatter's `name` must equal).
    pub fn new(root: impl Into<String>) -> Self {
        let mut root = root.into();
        while root.ends_with('/') {
            root.pop();
        }
        Self { root, files: Vec::new(), dynamic: false, meta: Map::new(), required_scopes: Vec::new() }
    }

    /// A skill whose files change: only its `SKILL.md` is given (for the frontmatter it is
    /// listed with); the entry says `"resources": "dynamic"` and reads of its files, the
    /// `SKILL.md` included, are asked of the host as any resource read.
    pub fn dynamic(root: impl Into<String>, skill_md: impl AsRef<[u8]>) -> Self {
        let mut skill = Self::new(root).file(SKILL_MD, skill_md);
        skill.dynamic = true;
        skill
    }

    /// Adds a file at `path` (relative to the skill's folder, `/`-separated) with its bytes.
    #[must_use]
    pub fn file(mut self, path: impl Into<String>, bytes: impl AsRef<[u8]>) -> Self {
        self.files.push((path.into(), Arc::from(bytes.as_ref())));
        self
    }

    /// Sets one `_meta` member of the skill's entry.
    #[must_use]
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// The uri the skill is addressed by: its `SKILL.md`.
    pub fn uri(&self) -> String {
        format!("{}/{SKILL_MD}", self.root)
    }

    /// The skill's name: the last segment of its folder's uri.
    pub fn name(&self) -> &str {
        self.root.rsplit('/').next().unwrap_or("")
    }
}

/// Whether `name` follows the Agent Skills naming rules.
pub(crate) fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    (1..=64).contains(&b.len())
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
        && !name.contains("--")
}

/// One file of a prepared skill.
#[derive(Debug)]
pub(crate) struct SkillFile {
    /// Its path in the skill's folder, as given.
    pub(crate) path: Box<str>,
    /// Its uri (the folder's uri, `/`, the path with each segment percent-encoded).
    pub(crate) uri: Box<str>,
    pub(crate) mime_type: &'static str,
    /// `sha256:` and 64 lowercase hex digits of its bytes.
    pub(crate) digest: Box<str>,
    pub(crate) size: u64,
    /// The `resources/read` contents item (`{"uri", "mimeType", "text" | "blob"}`), serialized.
    /// `None` for a dynamic skill (read through the host).
    pub(crate) contents: Option<Box<str>>,
}

/// A folder of a prepared skill (its root and every subfolder), for
/// `resources/directory/read`.
#[derive(Debug)]
pub(crate) struct SkillDir {
    /// Its uri (without a trailing `/`).
    pub(crate) uri: Box<str>,
    /// Its direct children as `Resource` objects, serialized and comma-joined.
    pub(crate) children: Box<str>,
}

/// A skill as the catalog serves it: checked, digested, with its wire forms prepared.
#[derive(Debug)]
pub(crate) struct SkillEntry {
    pub(crate) skill: Skill,
    /// The uri of its `SKILL.md`.
    pub(crate) uri: Box<str>,
    /// The files, `SKILL.md` first, then by path.
    pub(crate) files: Vec<SkillFile>,
    pub(crate) dirs: Vec<SkillDir>,
    /// The `skills/list` entry (`{"uri", "frontmatter", "resources", "_meta"?}`), serialized.
    pub(crate) wire: Box<str>,
    /// The `SKILL.md` as a `resources/list` item (name and description from the frontmatter).
    pub(crate) listed: Box<str>,
}

#[cfg(test)]
impl SkillEntry {
    /// The skill's name (its frontmatter's, equal to its uri's last segment).
    pub(crate) fn name(&self) -> &str {
        self.skill.name()
    }

    /// The file at `uri`, if it is one of this skill's.
    pub(crate) fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.files.iter().find(|f| &*f.uri == uri)
    }

    /// The folder at `uri` (with or without a trailing `/`), if it is one of this skill's.
    pub(crate) fn dir(&self, uri: &str) -> Option<&SkillDir> {
        let uri = uri.strip_suffix('/').unwrap_or(uri);
        self.dirs.iter().find(|d| &*d.uri == uri)
    }
}

/// Checks `skill`, digests its files and prepares its wire forms.
pub(crate) fn prepare(skill: Skill) -> Result<SkillEntry, SkillError> {
    let segments = split_root(&skill.root).ok_or(SkillError::InvalidUri)?;
    let name = segments.last().copied().unwrap_or("");
    if !valid_name(name) {
        return Err(SkillError::InvalidName);
    }
    let mut files: Vec<(&str, &Arc<[u8]>)> = Vec::with_capacity(skill.files.len());
    for (path, bytes) in &skill.files {
        if !valid_path(path) {
            return Err(SkillError::InvalidPath(path.clone()));
        }
        files.push((path.as_str(), bytes));
    }
    files.sort_by(|a, b| (a.0 != SKILL_MD, a.0).cmp(&(b.0 != SKILL_MD, b.0)));
    if let Some(w) = files.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(SkillError::DuplicatePath(w[0].0.to_owned()));
    }
    let Some(&(_, skill_md)) = files.first().filter(|f| f.0 == SKILL_MD) else {
        return Err(SkillError::NoSkillMd);
    };
    if files.len() > MAX_FILES {
        return Err(SkillError::TooManyFiles(files.len()));
    }
    let total: u64 = files.iter().map(|f| f.1.len() as u64).sum();
    if total > MAX_BYTES {
        return Err(SkillError::TooLarge(total));
    }
    let frontmatter = frontmatter::parse(skill_md)?;
    let fm_name = frontmatter.get("name").and_then(Value::as_str).unwrap_or("");
    if fm_name != name {
        return Err(SkillError::NameMismatch { segment: name.to_owned(), name: fm_name.to_owned() });
    }
    if let Some(Value::Object(metadata)) = frontmatter.get("metadata")
        && let Some(k) = metadata.keys().find(|k| k.starts_with("io.modelcontextprotocol/"))
    {
        return Err(SkillError::ReservedKey(k.clone()));
    }
    if let Some(k) = skill.meta.keys().find(|k| !namespaced(k)) {
        return Err(SkillError::ReservedKey(k.clone()));
    }

    let prepared: Vec<SkillFile> = files
        .iter()
        .map(|(path, bytes)| {
            let uri = file_uri(&skill.root, path);
            let mime_type = mime_of(path, bytes);
            let digest = format!("sha256:{}", hex(&sha2::Sha256::digest(&bytes[..])));
            let contents = (!skill.dynamic).then(|| contents_of(&uri, mime_type, bytes));
            SkillFile {
                path: (*path).into(),
                uri: uri.into(),
                mime_type,
                digest: digest.into(),
                size: bytes.len() as u64,
                contents,
            }
        })
        .collect();
    let uri: Box<str> = skill.uri().into();
    let wire = serde_json::to_string(&EntryWire {
        uri: &uri,
        frontmatter: &frontmatter,
        resources: if skill.dynamic { Resources::Dynamic } else { Resources::Files(&prepared) },
        meta: (!skill.meta.is_empty()).then_some(&skill.meta),
    })
    .unwrap_or_default()
    .into_boxed_str();
    let listed = serde_json::to_string(&ListedWire {
        uri: &uri,
        name: fm_name,
        description: frontmatter.get("description").and_then(Value::as_str).unwrap_or(""),
        mime_type: "text/markdown",
        size: (!skill.dynamic).then(|| skill_md.len() as u64),
    })
    .unwrap_or_default()
    .into_boxed_str();
    let dirs = if skill.dynamic { Vec::new() } else { dirs_of(&skill.root, &prepared) };
    Ok(SkillEntry { uri, files: prepared, dirs, wire, listed, skill })
}

/// The `<skill-path>` segments of a skill folder's uri, when it is `scheme://seg[/seg…]` in
/// uri characters with no empty segment.
fn split_root(root: &str) -> Option<Vec<&str>> {
    let at = root.find("://")?;
    let scheme = &root[..at];
    let scheme_ok = scheme.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    let path = &root[at + 3..];
    let segments: Vec<&str> = path.split('/').collect();
    let ok = scheme_ok
        && crate::catalog::uritemplate::is_uri_text(root)
        && !root.contains(['?', '#'])
        && segments.iter().all(|s| !s.is_empty() && *s != "." && *s != "..");
    ok.then_some(segments)
}

/// Whether a file path is relative, `/`-separated, of named segments without controls or
/// backslashes.
fn valid_path(path: &str) -> bool {
    !path.is_empty()
        && path.split('/').all(|s| !s.is_empty() && s != "." && s != "..")
        && !path.chars().any(|c| c.is_control() || c == '\\')
}

/// Whether a `_meta` key has a namespace prefix (`example.com/key`, `io.modelcontextprotocol.skills/key`).
fn namespaced(key: &str) -> bool {
    let Some((prefix, rest)) = key.split_once('/') else { return false };
    let labels: Vec<&str> = prefix.split('.').collect();
    !rest.is_empty()
        && labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

/// The uri of a file: the folder's uri, `/`, the path percent-encoded ([`encode_path`]).
fn file_uri(root: &str, path: &str) -> String {
    format!("{root}/{}", encode_path(path))
}

/// A `/`-separated path with each segment percent-encoded as a uri path segment needs
/// (RFC 3986 `pchar`; `/` kept between segments).
pub(crate) fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 15)]));
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    s
}

/// Whether bytes are sent as text: UTF-8 without NUL (a NUL makes it a blob, as clients
/// treat text with NUL bytes as binary).
fn is_text(bytes: &[u8]) -> bool {
    core::str::from_utf8(bytes).is_ok() && memchr::memchr(0, bytes).is_none()
}

/// The MIME type of a skill file: `SKILL.md` and Markdown `text/markdown`, a few common
/// extensions by name, else `text/plain` for text and `application/octet-stream` for the rest.
fn mime_of(path: &str, bytes: &[u8]) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let by_ext = match ext.as_deref() {
        Some("md" | "markdown") => Some("text/markdown"),
        Some("txt") => Some("text/plain"),
        Some("json") => Some("application/json"),
        Some("yaml" | "yml") => Some("application/yaml"),
        Some("py") => Some("text/x-python"),
        Some("sh") => Some("application/x-sh"),
        Some("js" | "mjs") => Some("text/javascript"),
        Some("html" | "htm") => Some("text/html"),
        Some("csv") => Some("text/csv"),
        Some("xml") => Some("application/xml"),
        Some("png") => Some("image/png"),
        Some("jpg" | "jpeg") => Some("image/jpeg"),
        Some("gif") => Some("image/gif"),
        Some("svg") => Some("image/svg+xml"),
        Some("pdf") => Some("application/pdf"),
        Some("zip") => Some("application/zip"),
        _ => None,
    };
    by_ext.unwrap_or(if is_text(bytes) { "text/plain" } else { "application/octet-stream" })
}

/// The `resources/read` contents item of a file: text when [`is_text`], else a base64 blob.
fn contents_of(uri: &str, mime_type: &str, bytes: &[u8]) -> Box<str> {
    let blob;
    let (text, blob) = match core::str::from_utf8(bytes) {
        Ok(text) if is_text(bytes) => (Some(text), None),
        _ => {
            blob = base64::engine::general_purpose::STANDARD.encode(bytes);
            (None, Some(blob.as_str()))
        }
    };
    serde_json::to_string(&ContentsWire { uri, mime_type, text, blob }).unwrap_or_default().into_boxed_str()
}

/// Every folder of a skill (its root and each subfolder) with its direct children.
fn dirs_of(root: &str, files: &[SkillFile]) -> Vec<SkillDir> {
    // Folder paths ("" for the root), sorted, each once.
    let mut folders: Vec<&str> = vec![""];
    for f in files {
        let mut at = 0;
        while let Some(i) = f.path[at..].find('/') {
            folders.push(&f.path[..at + i]);
            at += i + 1;
        }
    }
    folders.sort_unstable();
    folders.dedup();
    folders
        .iter()
        .map(|&folder| {
            let uri = if folder.is_empty() { root.to_owned() } else { file_uri(root, folder) };
            let within = |p: &str| -> bool {
                let rest = if folder.is_empty() {
                    Some(p)
                } else {
                    p.strip_prefix(folder).and_then(|r| r.strip_prefix('/'))
                };
                rest.is_some_and(|r| !r.contains('/'))
            };
            let mut children: Vec<String> = Vec::new();
            for sub in folders.iter().filter(|s| !s.is_empty()) {
                if within(sub) {
                    let name = sub.rsplit('/').next().unwrap_or(sub);
                    let child =
                        ChildWire { uri: &file_uri(root, sub), name, mime_type: DIRECTORY_MIME, size: None };
                    children.push(serde_json::to_string(&child).unwrap_or_default());
                }
            }
            for f in files {
                if within(&f.path) {
                    let name = f.path.rsplit('/').next().unwrap_or(&f.path);
                    let child = ChildWire { uri: &f.uri, name, mime_type: f.mime_type, size: Some(f.size) };
                    children.push(serde_json::to_string(&child).unwrap_or_default());
                }
            }
            SkillDir { uri: uri.into(), children: children.join(",").into() }
        })
        .collect()
}

enum Resources<'a> {
    Dynamic,
    Files(&'a [SkillFile]),
}

impl Serialize for Resources<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self {
            Self::Dynamic => s.serialize_str("dynamic"),
            Self::Files(files) => {
                let mut seq = s.serialize_seq(Some(files.len()))?;
                for f in *files {
                    seq.serialize_element(&TripleWire { uri: &f.uri, digest: &f.digest, size: f.size })?;
                }
                seq.end()
            }
        }
    }
}

#[derive(Serialize)]
struct TripleWire<'a> {
    uri: &'a str,
    digest: &'a str,
    size: u64,
}

#[derive(Serialize)]
struct EntryWire<'a> {
    uri: &'a str,
    frontmatter: &'a Map<String, Value>,
    resources: Resources<'a>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a Map<String, Value>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListedWire<'a> {
    uri: &'a str,
    name: &'a str,
    description: &'a str,
    mime_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ChildWire<'a> {
    uri: &'a str,
    name: &'a str,
    mime_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ContentsWire<'a> {
    uri: &'a str,
    mime_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob: Option<&'a str>,
}

// ------------------------------------------------------------ skills from a tree of files

/// The skills in a tree of files, given as (`/`-separated path relative to the tree's root,
/// bytes): each folder holding a `SKILL.md` is one skill, whose uri is `root` joined with the
/// folder's path (`root` `skill://` and folder `pdf` give `skill://pdf`; `root`
/// `skill://acme` gives `skill://acme/pdf`; the tree's root folder itself, when it holds a
/// `SKILL.md`, is `root`). A file belongs to the nearest folder above it holding a
/// `SKILL.md`: a skill nested in another's folder is a skill of its own and its files are not
/// the outer skill's. Hidden entries (a path segment beginning with `.`) and files outside
/// every skill are left out. Skills come sorted by uri; the catalog checks each when it is
/// built.
///
/// ```
/// use mcp_engine::skills::skills_in;
///
/// let skills = skills_in("skill://", [
///     ("pdf/SKILL.md", "---\nname: pdf\ndescription: PDFs.\n---\n"),
///     ("pdf/reference/forms.md", "..."),
///     ("pdf/.cache/x", "skipped"),
///     ("pdf/tables/SKILL.md", "---\nname: tables\ndescription: Tables.\n---\n"),
/// ]);
/// assert_eq!(skills.len(), 2);
/// assert_eq!(skills[0].uri(), "skill://pdf/SKILL.md");
/// assert_eq!(skills[0].files.len(), 2);
/// assert_eq!(skills[1].uri(), "skill://pdf/tables/SKILL.md");
/// ```
pub fn skills_in<P, B>(root: &str, files: impl IntoIterator<Item = (P, B)>) -> Vec<Skill>
where
    P: AsRef<str>,
    B: AsRef<[u8]>,
{
    let files: Vec<(String, Arc<[u8]>)> = files
        .into_iter()
        .filter(|(p, _)| !p.as_ref().split('/').any(|s| s.starts_with('.')))
        .map(|(p, b)| (p.as_ref().trim_start_matches('/').to_owned(), Arc::from(b.as_ref())))
        .collect();
    // The folders holding a SKILL.md ("" for the tree's root), deepest match first.
    let mut folders: Vec<&str> = files
        .iter()
        .filter_map(|(p, _)| match p.rsplit_once('/') {
            Some((folder, SKILL_MD)) => Some(folder),
            None if p == SKILL_MD => Some(""),
            _ => None,
        })
        .collect();
    folders.sort_unstable();
    folders.dedup();
    let mut skills: Vec<Skill> = folders.iter().map(|f| Skill::new(join(root, f))).collect();
    for (path, bytes) in &files {
        // The nearest enclosing skill folder: the longest folder that is a prefix of the path.
        let owner = folders
            .iter()
            .enumerate()
            .filter(|(_, f)| f.is_empty() || path.strip_prefix(**f).is_some_and(|r| r.starts_with('/')))
            .max_by_key(|(_, f)| f.len());
        if let Some((i, folder)) = owner {
            let relative = if folder.is_empty() { path.as_str() } else { &path[folder.len() + 1..] };
            skills[i].files.push((relative.to_owned(), Arc::clone(bytes)));
        }
    }
    skills.sort_by(|a, b| a.root.cmp(&b.root));
    skills
}

/// `root` joined with a folder path (percent-encoded per segment).
fn join(root: &str, folder: &str) -> String {
    if folder.is_empty() {
        return root.trim_end_matches('/').to_owned();
    }
    if root.ends_with("://") {
        let mut s = root.to_owned();
        s.push_str(&encode_path(folder));
        s
    } else {
        format!("{}/{}", root.trim_end_matches('/'), encode_path(folder))
    }
}

#[cfg(test)]
mod tests;
