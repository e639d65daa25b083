//! Subscriptions: `subscriptions/listen` streams (`2026-07-28`) and the legacy
//! `resources/subscribe` set of a session-bound stdio stream, and what the engine fans out
//! to them (list changes after a catalog replacement, resource updates).

use crate::catalog::Catalog;
use crate::cursor::ListKind;

/// The most resource uris one subscription (or a legacy session) watches; more are not
/// honoured (left out of the acknowledgement).
pub const MAX_SUBSCRIBED_URIS: usize = 64;

/// Which lists changed in a catalog replacement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CatalogChange {
    /// The tool list changed (`notifications/tools/list_changed`).
    pub tools: bool,
    /// The resource or resource-template list changed
    /// (`notifications/resources/list_changed`).
    pub resources: bool,
    /// The prompt list changed (`notifications/prompts/list_changed`).
    pub prompts: bool,
}

impl CatalogChange {
    /// Compares two catalogs list by list, as clients see them.
    pub(crate) fn between(old: &Catalog, new: &Catalog) -> Self {
        let same = |kind: ListKind| {
            let (a, b) = (old.list_len(kind), new.list_len(kind));
            a == b && (0..a).all(|i| old.list_fragment(kind, i, true) == new.list_fragment(kind, i, true))
        };
        Self {
            tools: !same(ListKind::Tools),
            resources: !same(ListKind::Resources) || !same(ListKind::ResourceTemplates),
            prompts: !same(ListKind::Prompts),
        }
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        !(self.tools || self.resources || self.prompts)
    }
}

/// Why a catalog replacement was refused; the engine keeps the catalog it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplaceError {
    /// The new catalog adds or drops a whole family (tools, resources, prompts), which
    /// would change the capabilities clients were told about.
    CapabilitiesChanged,
    /// An event is waiting to be polled; its data refers to the current catalog. Drain
    /// [`crate::Engine::poll_event`] first.
    EventPending,
}

impl core::fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::CapabilitiesChanged => {
                "the new catalog adds or drops a family of items, which would change the advertised capabilities"
            }
            Self::EventPending => "an event is waiting to be polled; drain poll_event first",
        })
    }
}

impl std::error::Error for ReplaceError {}

/// Whether an update of `updated` concerns a subscription to `subscribed`: the same uri,
/// or a sub-resource of it (`subscribed` followed by `/`, `?` or `#`).
pub(crate) fn uri_matches(subscribed: &str, updated: &str) -> bool {
    match updated.strip_prefix(subscribed) {
        Some("") => true,
        Some(rest) => subscribed.ends_with('/') || rest.starts_with(['/', '?', '#']),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::uri_matches;

    #[test]
    fn sub_resources_match_at_a_boundary() {
        assert!(uri_matches("file:///a", "file:///a"));
        assert!(uri_matches("file:///a", "file:///a/b"));
        assert!(uri_matches("file:///a", "file:///a#x"));
        assert!(uri_matches("file:///a/", "file:///a/b"));
        assert!(!uri_matches("file:///a", "file:///ab"));
        assert!(!uri_matches("file:///a/b", "file:///a"));
    }
}
