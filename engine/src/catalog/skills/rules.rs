//! The bounds a skill must keep and why a skill is refused ([`SkillError`]): a leaf the
//! skill's other files (the frontmatter parser, the catalog's checks) name.

use core::fmt;

/// The file every skill holds at its root.
pub(crate) const SKILL_MD: &str = "SKILL.md";
/// The most files one skill may have, `SKILL.md` included.
pub(crate) const MAX_FILES: usize = 512;
/// The most bytes one skill's files may hold together (16 MiB).
pub(crate) const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Why a skill was refused (in [`CatalogError::InvalidSkill`](crate::CatalogError::InvalidSkill)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkillError {
    /// The folder's uri is not `scheme://<skill-path>` with at least one path segment, or holds
    /// characters a uri may not.
    InvalidUri,
    /// The skill's name (the uri's last segment) is not 1–64 lowercase letters, digits and
    /// hyphens, without a hyphen first, last or twice in a row.
    InvalidName,
    /// The skill has no `SKILL.md` at its root.
    NoSkillMd,
    /// `SKILL.md` is not UTF-8.
    SkillMdNotUtf8,
    /// `SKILL.md` does not begin with a `---` frontmatter block.
    NoFrontmatter,
    /// The frontmatter is not valid YAML (or breaks a parsing bound, or repeats a key).
    FrontmatterYaml(String),
    /// The frontmatter is not a mapping.
    FrontmatterNotMapping,
    /// The frontmatter lacks `name` or `description` as a non-empty string.
    MissingField(&'static str),
    /// The frontmatter's `name` is not the uri's last segment.
    NameMismatch {
        /// The uri's last segment.
        segment: String,
        /// The frontmatter's `name`.
        name: String,
    },
    /// A file path that is empty, absolute, has an empty, `.` or `..` segment, or a
    /// backslash or control character.
    InvalidPath(String),
    /// Two files share a path.
    DuplicatePath(String),
    /// More than 512 files (`SKILL.md` included).
    TooManyFiles(usize),
    /// More than 16 MiB over all files.
    TooLarge(u64),
    /// A frontmatter `metadata` key under the reserved `io.modelcontextprotocol/` prefix
    /// (none is defined), or a `_meta` key without a namespace prefix (`example.com/key`).
    ReservedKey(String),
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidUri => f.write_str("the uri is not scheme://<skill-path> in uri characters"),
            Self::InvalidName => f.write_str(
                "the name (the uri's last segment) is not 1-64 of [a-z0-9-] without a hyphen first, last or twice",
            ),
            Self::NoSkillMd => write!(f, "no {SKILL_MD} at the skill's root"),
            Self::SkillMdNotUtf8 => write!(f, "{SKILL_MD} is not UTF-8"),
            Self::NoFrontmatter => write!(f, "{SKILL_MD} does not begin with a --- frontmatter block"),
            Self::FrontmatterYaml(m) => write!(f, "the frontmatter is not valid YAML: {m}"),
            Self::FrontmatterNotMapping => f.write_str("the frontmatter is not a mapping"),
            Self::MissingField(field) => write!(f, "the frontmatter has no non-empty string `{field}`"),
            Self::NameMismatch { segment, name } => {
                write!(f, "the frontmatter's name `{name}` is not the uri's last segment `{segment}`")
            }
            Self::InvalidPath(p) => write!(f, "file path `{p}` is not a relative path of named segments"),
            Self::DuplicatePath(p) => write!(f, "file `{p}` is given twice"),
            Self::TooManyFiles(n) => write!(f, "{n} files, more than {MAX_FILES}"),
            Self::TooLarge(n) => write!(f, "{n} bytes of files, more than {MAX_BYTES}"),
            Self::ReservedKey(k) => write!(f, "key `{k}` is reserved or not namespaced"),
        }
    }
}

impl std::error::Error for SkillError {}
