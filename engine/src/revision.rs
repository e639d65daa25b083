//! Protocol revisions the engine speaks.

use core::fmt;

/// An MCP protocol revision.
///
/// `2026-07-28` is stateless: every request names its revision and the client's
/// capabilities in `params._meta`. The two earlier revisions are session-bound: the client
/// opens with `initialize`, which fixes the revision for the rest of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Revision {
    /// `2025-06-18`, session-bound.
    V2025_06_18,
    /// `2025-11-25`, session-bound.
    V2025_11_25,
    /// `2026-07-28`, stateless.
    V2026_07_28,
}

impl Revision {
    /// Every supported revision, newest first (the order of `supportedVersions`).
    pub const ALL: [Self; 3] = [Self::V2026_07_28, Self::V2025_11_25, Self::V2025_06_18];
    /// The newest session-bound revision, offered when `initialize` asks for one the
    /// engine does not speak.
    pub const LATEST_LEGACY: Self = Self::V2025_11_25;

    /// The wire name, e.g. `"2026-07-28"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire name; `None` for anything the engine does not speak (`2024-11-05`
    /// included).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Whether this is the stateless revision (results carry `resultType` and `_meta`).
    pub const fn is_stateless(self) -> bool {
        matches!(self, Self::V2026_07_28)
    }

    /// Whether icons exist in this revision (they do not in `2025-06-18`).
    pub const fn has_icons(self) -> bool {
        !matches!(self, Self::V2025_06_18)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
