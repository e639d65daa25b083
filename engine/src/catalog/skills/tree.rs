//! Skills from an in-memory tree of files: the pure half of loading a skills folder (the
//! tokio adapter's loader reads the folder and hands its files here; a host with its own
//! I/O does the same).

use std::sync::Arc;

use super::{SKILL_MD, Skill, encode_path};

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
