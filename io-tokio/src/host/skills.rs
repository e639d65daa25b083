//! Loading a skills folder from disk ([`load_dir`]): the files under a folder, read
//! once, handed to the engine's pure [`skills_in`](mcp_engine::skills::skills_in), which
//! makes each folder holding a `SKILL.md` a skill.
//!
//! Hidden entries (a name beginning with `.`) are skipped. A symbolic link is followed only
//! when what it points to lies inside the folder (a link out of it is refused, not skipped:
//! the operator sees it). A file that changes while it is read (its length or modification
//! time differ before and after) is refused, so that no skill is served with a digest of
//! bytes that were never on disk together. Every bound the catalog enforces on a skill is
//! enforced here on bytes seen: a file larger than a skill may be is not read.

use std::fmt;
use std::fs;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use mcp_engine::skills::{Skill, skills_in};

/// The most bytes one file may hold (a skill's whole budget, 16 MiB).
const MAX_FILE: u64 = 16 * 1024 * 1024;
/// The most files a skills folder may hold, and the deepest nesting walked.
const MAX_FILES: usize = 65_536;
const MAX_DEPTH: usize = 32;

/// Why a skills folder could not be loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading an entry failed.
    Io {
        /// The entry.
        path: PathBuf,
        /// The error.
        error: io::Error,
    },
    /// A symbolic link points outside the folder.
    LinkOutside(PathBuf),
    /// A file changed while it was read.
    Changed(PathBuf),
    /// A name that is not UTF-8.
    NotUtf8(PathBuf),
    /// A file larger than 16 MiB, more than 65,536 files, or folders nested more than 32 deep.
    TooLarge(PathBuf),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, error } => write!(f, "{}: {error}", path.display()),
            Self::LinkOutside(p) => write!(f, "{}: a symbolic link out of the skills folder", p.display()),
            Self::Changed(p) => write!(f, "{}: changed while it was read", p.display()),
            Self::NotUtf8(p) => write!(f, "{}: a name that is not UTF-8", p.display()),
            Self::TooLarge(p) => {
                write!(f, "{}: past a bound (16 MiB a file, 65,536 files, 32 levels)", p.display())
            }
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The skills in the folder `dir`, addressed under `root_uri` (`skill://` gives
/// `skill://<folder>/SKILL.md` for each skill folder; `skill://acme` gives
/// `skill://acme/<folder>/SKILL.md`). Blocking: call it at start, or from
/// `spawn_blocking`. The catalog checks each skill when it is built
/// ([`CatalogBuilder::skills`](mcp_engine::CatalogBuilder::skills)).
///
/// ```no_run
/// use mcp_io_tokio::engine::Catalog;
/// use mcp_io_tokio::skills;
///
/// let catalog = Catalog::builder().skills(skills::load_dir("skills", "skill://")?).build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_dir(dir: impl AsRef<Path>, root_uri: &str) -> Result<Vec<Skill>, LoadError> {
    let dir = dir.as_ref();
    let root = fs::canonicalize(dir).map_err(|error| LoadError::Io { path: dir.to_owned(), error })?;
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    walk(&root, &root, "", 0, &mut files)?;
    Ok(skills_in(root_uri, files))
}

fn walk(
    root: &Path,
    dir: &Path,
    rel: &str,
    depth: usize,
    out: &mut Vec<(String, Vec<u8>)>,
) -> Result<(), LoadError> {
    if depth > MAX_DEPTH {
        return Err(LoadError::TooLarge(dir.to_owned()));
    }
    let mut entries: Vec<fs::DirEntry> =
        fs::read_dir(dir).map_err(io(dir))?.collect::<Result<_, _>>().map_err(io(dir))?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name();
        let Some(name) = name.to_str() else { return Err(LoadError::NotUtf8(path)) };
        if name.starts_with('.') {
            continue;
        }
        let child = if rel.is_empty() { name.to_owned() } else { format!("{rel}/{name}") };
        let mut kind = entry.file_type().map_err(io(&path))?;
        if kind.is_symlink() {
            let target = fs::canonicalize(&path).map_err(io(&path))?;
            if !target.starts_with(root) {
                return Err(LoadError::LinkOutside(path));
            }
            kind = fs::metadata(&target).map_err(io(&path))?.file_type();
        }
        if kind.is_dir() {
            walk(root, &path, &child, depth + 1, out)?;
        } else if kind.is_file() {
            if out.len() >= MAX_FILES {
                return Err(LoadError::TooLarge(path));
            }
            out.push((child, read_whole(&path)?));
        }
    }
    Ok(())
}

/// The [`LoadError::Io`] of `path`.
fn io(path: &Path) -> impl FnOnce(io::Error) -> LoadError + '_ {
    move |error| LoadError::Io { path: path.to_owned(), error }
}

/// The bytes of a file, refused when it changes while it is read.
fn read_whole(path: &Path) -> Result<Vec<u8>, LoadError> {
    let mut file = fs::File::open(path).map_err(io(path))?;
    let before = file.metadata().map_err(io(path))?;
    if before.len() > MAX_FILE {
        return Err(LoadError::TooLarge(path.to_owned()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(before.len()).unwrap_or(0));
    // One byte past the bound tells a file that grew past it.
    file.by_ref().take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(io(path))?;
    let after = fs::metadata(path).map_err(io(path))?;
    let same = bytes.len() as u64 == before.len()
        && after.len() == before.len()
        && after.modified().ok() == before.modified().ok();
    if !same {
        return Err(LoadError::Changed(path.to_owned()));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempdir::Dir {
        tempdir::Dir::new()
    }

    mod tempdir {
        use std::path::{Path, PathBuf};

        /// A folder under the system's temporary folder, removed on drop.
        pub(super) struct Dir(PathBuf);
        impl Dir {
            pub(super) fn new() -> Self {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let p = std::env::temp_dir().join(format!(
                    "mcp-skills-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&p).unwrap();
                Self(p)
            }
            pub(super) fn path(&self) -> &Path {
                &self.0
            }
            pub(super) fn write(&self, rel: &str, bytes: &[u8]) {
                let p = self.0.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, bytes).unwrap();
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    const PDF: &[u8] = b"---\nname: pdf\ndescription: PDFs.\n---\n# PDF\n";

    #[test]
    fn a_folder_becomes_its_skills() {
        let t = tree();
        t.write("pdf/SKILL.md", PDF);
        t.write("pdf/reference/forms.md", b"forms");
        t.write("pdf/.hidden/x", b"skipped");
        t.write("pdf/tables/SKILL.md", b"---\nname: tables\ndescription: t\n---\n");
        t.write("notes.txt", b"outside every skill");
        let skills = load_dir(t.path(), "skill://").unwrap();
        let uris: Vec<String> = skills.iter().map(Skill::uri).collect();
        assert_eq!(uris, ["skill://pdf/SKILL.md", "skill://pdf/tables/SKILL.md"]);
        let files: Vec<&str> = skills[0].files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(files, ["SKILL.md", "reference/forms.md"]);
        assert_eq!(&*skills[0].files[1].1, b"forms");
        mcp_engine::Catalog::builder().skills(skills).build().unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_inside_the_folder_only() {
        let t = tree();
        t.write("pdf/SKILL.md", PDF);
        t.write("shared/common.md", b"common");
        std::os::unix::fs::symlink(t.path().join("shared/common.md"), t.path().join("pdf/common.md"))
            .unwrap();
        let skills = load_dir(t.path(), "skill://").unwrap();
        assert!(skills[0].files.iter().any(|f| f.0 == "common.md" && &*f.1 == b"common"));

        let outside = tree();
        outside.write("secret", b"s");
        std::os::unix::fs::symlink(outside.path().join("secret"), t.path().join("pdf/secret")).unwrap();
        assert!(matches!(load_dir(t.path(), "skill://"), Err(LoadError::LinkOutside(_))));
    }

    #[test]
    fn a_missing_folder_is_an_io_error() {
        let t = tree();
        assert!(matches!(load_dir(t.path().join("none"), "skill://"), Err(LoadError::Io { .. })));
    }
}
