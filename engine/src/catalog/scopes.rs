//! The scopes a definition requires over a protected HTTP endpoint: the setters
//! (`requires_scopes`) and what a catalog build refuses. The server's policy and the checks
//! are `mcp::scopes`; a definition a caller may not use does not exist for that caller.

use crate::catalog::{Catalog, CatalogError, Prompt, Resource, ResourceTemplate, Skill, Tool};

/// The most distinct scope names a catalog's definitions may name (and a server's policy:
/// each is half of a `ScopeSet`'s bits).
pub(crate) const MAX_SCOPE_NAMES: usize = 64;
/// The most scopes one alternative set may hold.
const MAX_SET: usize = 16;
/// The most alternative sets one definition may have.
const MAX_ALTERNATIVES: usize = 8;

/// Whether `s` is a scope token (RFC 6750 §3): `1*( %x21 / %x23-5B / %x5D-7E )`.
pub(crate) fn is_scope_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

fn set_of<S: Into<String>>(scopes: impl IntoIterator<Item = S>) -> Vec<String> {
    scopes.into_iter().map(Into::into).collect()
}

macro_rules! requires_scopes {
    ($ty:ty, $what:literal) => {
        impl $ty {
            #[doc = concat!("Adds a set of scopes a caller needs to ", $what, " over a protected HTTP")]
            /// endpoint (`HttpConfig::scope_policy`). Each call adds an alternative: a caller
            /// with every scope of any one set may; any other caller is answered exactly as
            /// if the definition did not exist (it is not listed, and naming it is "not
            /// found"). Stdio and unprotected endpoints are not scoped.
            ///
            /// ```
            /// use mcp_engine::{Catalog, Tool};
            /// let catalog = Catalog::builder()
            ///     .tool(Tool::new("admin_echo").requires_scopes(["mcp:tools", "mcp:admin"]))
            ///     .build()?;
            /// assert_eq!(catalog.tool("admin_echo").unwrap().required_scopes.len(), 1);
            /// # Ok::<(), mcp_engine::CatalogError>(())
            /// ```
            #[must_use]
            pub fn requires_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
                self.required_scopes.push(set_of(scopes));
                self
            }
        }
    };
}

requires_scopes!(Tool, "see and call the tool");
requires_scopes!(Resource, "see and read the resource");
requires_scopes!(ResourceTemplate, "see the template and read what it matches");
requires_scopes!(Prompt, "see and get the prompt");
requires_scopes!(Skill, "see the skill and read its files");

/// Refuses malformed or oversize requirements and a catalog naming more than
/// `MAX_SCOPE_NAMES` distinct scopes.
pub(crate) fn check(catalog: &Catalog) -> Result<(), CatalogError> {
    let items = catalog
        .tools()
        .map(|t| (&*t.name, &t.required_scopes))
        .chain(catalog.resources().map(|r| (&*r.uri, &r.required_scopes)))
        .chain(catalog.templates().map(|t| (&*t.uri_template, &t.required_scopes)))
        .chain(catalog.prompts().map(|p| (&*p.name, &p.required_scopes)))
        .chain(catalog.skills().map(|s| (&*s.root, &s.required_scopes)));
    let mut names: Vec<&str> = Vec::new();
    for (item, sets) in items {
        let refuse = |reason| Err(CatalogError::InvalidScopes { item: item.to_owned(), reason });
        if sets.len() > MAX_ALTERNATIVES {
            return refuse("more than 8 alternative scope sets");
        }
        for set in sets {
            if set.is_empty() || set.len() > MAX_SET {
                return refuse("a scope set must hold 1 to 16 scopes");
            }
            if !set.iter().all(|s| is_scope_token(s)) {
                return refuse("a scope is not an RFC 6750 scope token");
            }
            names.extend(set.iter().map(String::as_str));
        }
    }
    names.sort_unstable();
    names.dedup();
    if names.len() > MAX_SCOPE_NAMES {
        return Err(CatalogError::InvalidScopes {
            item: "catalog".into(),
            reason: "more than 64 distinct scope names",
        });
    }
    Ok(())
}

impl Catalog {
    /// Every scope name the catalog's definitions require (with repeats).
    pub(crate) fn scope_names(&self) -> impl Iterator<Item = &str> + '_ {
        let sets = self
            .tools()
            .flat_map(|t| &t.required_scopes)
            .chain(self.resources().flat_map(|r| &r.required_scopes))
            .chain(self.templates().flat_map(|t| &t.required_scopes))
            .chain(self.prompts().flat_map(|p| &p.required_scopes))
            .chain(self.skills().flat_map(|s| &s.required_scopes));
        sets.flat_map(|s| s.iter().map(String::as_str))
    }
}
