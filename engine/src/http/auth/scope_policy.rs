//! The scope policy of a protected endpoint ([`ScopePolicy`]): which scopes each method
//! needs, which scope implies which, and the names the server knows. Validated as it is
//! built; compiled with the catalog's per-definition requirements into the core's rules
//! (`mcp::scopes`) when the engine is built.
//!
//! Defaults: no method needs a scope (any request the host allows may run any method), and
//! no scope implies another. A policy applies to requests the host allowed with
//! [`Verdict::Grant`](crate::http::Verdict::Grant) (checked against the grant's scopes) and
//! with `Allow` / `AllowAs` (which grant none); [`Authorization::Everyone`] and stdio are
//! not scoped.
//!
//! [`Authorization::Everyone`]: crate::http::Authorization::Everyone

use core::fmt;

use crate::catalog::scopes::is_scope_token;
use crate::mcp::scopes::{MAX_SCOPE_NAMES, METHOD_NAMES, Scopes};

/// The most scopes one alternative set may hold.
const MAX_SET: usize = 16;
/// The most alternative sets one method may have.
const MAX_ALTERNATIVES: usize = 8;

/// Which scopes each method needs, and which scope implies which. Built with chained
/// calls, each refusing what it cannot honour.
///
/// ```
/// use mcp_engine::http::ScopePolicy;
/// // Reads need `mcp:read`, tool calls `mcp:tools`; `mcp:admin` implies both.
/// let policy = ScopePolicy::new()
///     .require_all(
///         ["tools/list", "resources/list", "resources/templates/list", "prompts/list",
///          "resources/read", "prompts/get", "completion/complete"],
///         ["mcp:read"],
///     )?
///     .require("tools/call", ["mcp:tools"])?
///     .implies("mcp:admin", ["mcp:read", "mcp:tools"])?;
/// assert!(ScopePolicy::new().require("tools/cal", ["mcp:tools"]).is_err());
/// # Ok::<(), mcp_engine::http::ScopePolicyError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ScopePolicy {
    /// Per method slot: alternative sets.
    pub(crate) methods: [Vec<Vec<String>>; crate::mcp::scopes::METHOD_SLOTS],
    /// `(broader, narrower)`.
    pub(crate) implies: Vec<(String, String)>,
    /// Every name the policy mentions or declares.
    pub(crate) known: Vec<String>,
}

/// Why a [`ScopePolicy`] setting was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScopePolicyError {
    /// Not a method a policy can scope (a JSON-RPC method name the engine serves).
    UnknownMethod(String),
    /// Not an RFC 6750 scope token.
    InvalidScope(String),
    /// An empty set, a set of more than 16 scopes, or more than 8 alternative sets for one
    /// method.
    Oversize(String),
    /// More than 64 distinct scope names.
    TooManyScopes,
}

impl fmt::Display for ScopePolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownMethod(m) => write!(f, "`{m}` is not a method a scope policy can name"),
            Self::InvalidScope(s) => write!(f, "`{s}` is not an RFC 6750 scope token"),
            Self::Oversize(m) => {
                write!(f, "`{m}`: a scope set holds 1 to 16 scopes, and a method at most 8 alternatives")
            }
            Self::TooManyScopes => write!(f, "a scope policy names at most {MAX_SCOPE_NAMES} scopes"),
        }
    }
}

impl std::error::Error for ScopePolicyError {}

impl ScopePolicy {
    /// The default policy: no method needs a scope, no scope implies another.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a set of scopes that lets a caller run `method` (a JSON-RPC method name such
    /// as `tools/call`). Each call for the same method adds an alternative: a caller with
    /// every scope of any one set may run it; one without gets `403` with an
    /// `insufficient_scope` challenge naming the method's first set.
    pub fn require<S: Into<String>>(
        mut self,
        method: &str,
        scopes: impl IntoIterator<Item = S>,
    ) -> Result<Self, ScopePolicyError> {
        let slot = METHOD_NAMES
            .iter()
            .position(|m| *m == method)
            .ok_or_else(|| ScopePolicyError::UnknownMethod(method.to_owned()))?;
        let set: Vec<String> = scopes.into_iter().map(Into::into).collect();
        if set.is_empty() || set.len() > MAX_SET || self.methods[slot].len() >= MAX_ALTERNATIVES {
            return Err(ScopePolicyError::Oversize(method.to_owned()));
        }
        for s in &set {
            self.know(s)?;
        }
        self.methods[slot].push(set);
        Ok(self)
    }

    /// [`Self::require`] for each of `methods`.
    pub fn require_all<'m, S: Into<String> + Clone>(
        mut self,
        methods: impl IntoIterator<Item = &'m str>,
        scopes: impl IntoIterator<Item = S> + Clone,
    ) -> Result<Self, ScopePolicyError> {
        for m in methods {
            self = self.require(m, scopes.clone())?;
        }
        Ok(self)
    }

    /// Makes a grant of `broader` also a grant of each of `narrower` (transitively): a
    /// token with `broader` passes every check that asks for one of them (MCP requires
    /// servers to honour scope hierarchies).
    pub fn implies<S: Into<String>>(
        mut self,
        broader: &str,
        narrower: impl IntoIterator<Item = S>,
    ) -> Result<Self, ScopePolicyError> {
        self.know(broader)?;
        for n in narrower {
            let n = n.into();
            self.know(&n)?;
            self.implies.push((broader.to_owned(), n));
        }
        Ok(self)
    }

    /// Declares scope names that neither the policy nor the catalog at build names, so
    /// that a catalog replacing it may require them ([`crate::subs::ReplaceError::UnknownScope`]).
    pub fn known<S: AsRef<str>>(
        mut self,
        names: impl IntoIterator<Item = S>,
    ) -> Result<Self, ScopePolicyError> {
        for n in names {
            self.know(n.as_ref())?;
        }
        Ok(self)
    }

    fn know(&mut self, name: &str) -> Result<(), ScopePolicyError> {
        if !is_scope_token(name) {
            return Err(ScopePolicyError::InvalidScope(name.to_owned()));
        }
        if !self.known.iter().any(|k| k == name) {
            if self.known.len() >= MAX_SCOPE_NAMES {
                return Err(ScopePolicyError::TooManyScopes);
            }
            self.known.push(name.to_owned());
        }
        Ok(())
    }

    /// Whether the policy requires anything of anyone.
    pub(crate) fn is_empty(&self) -> bool {
        self.methods.iter().all(Vec::is_empty)
    }

    /// The table of the policy's names and `catalog_names`.
    pub(crate) fn table<'a>(&'a self, catalog_names: impl Iterator<Item = &'a str>) -> Scopes {
        Scopes::new(
            self.known.iter().map(String::as_str).chain(catalog_names),
            self.implies.iter().map(|(b, n)| (b.as_str(), n.as_str())),
        )
    }
}

/// The core's rules for `http`'s policy and `catalog`'s requirements (none when neither
/// requires anything), and the `insufficient_scope` challenge of each method that needs a
/// scope.
pub(crate) fn rules(
    http: &crate::http::HttpConfig,
    catalog: &crate::catalog::Catalog,
) -> (Option<crate::mcp::scopes::Rules>, [Option<std::sync::Arc<str>>; crate::mcp::scopes::METHOD_SLOTS]) {
    let policy = &http.scope_policy;
    let mut step_up: [Option<std::sync::Arc<str>>; crate::mcp::scopes::METHOD_SLOTS] = Default::default();
    if policy.is_empty() && catalog.scope_names().next().is_none() {
        return (None, step_up);
    }
    let table = policy.table(catalog.scope_names());
    // Every name is in the table: the policy's (at most 64) and the catalog's (at most 64).
    let Ok(rules) = crate::mcp::scopes::Rules::new(table, &policy.methods, catalog) else {
        return (None, step_up);
    };
    let metadata = http.protected.as_ref().map(|p| p.metadata_url());
    for (slot, challenge) in step_up.iter_mut().enumerate() {
        let scope = rules.challenge(slot);
        if scope.is_empty() {
            continue;
        }
        // Scope tokens and a valid URI hold no `"` or `\`.
        let mut value = format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\"");
        if let Some(url) = metadata {
            value.push_str(&format!(", resource_metadata=\"{url}\""));
        }
        *challenge = Some(value.into());
    }
    (Some(rules), step_up)
}
