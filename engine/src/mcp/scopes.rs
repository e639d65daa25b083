//! Scopes as the core enforces them: [`ScopeSet`] (what a request was granted, one bit per
//! scope name the server knows), [`Scopes`] (the names, shared with the host so that it can
//! turn a token's scopes into a set without allocating), and the prepared [`Rules`]: for each
//! method and each catalog definition, the alternative sets that suffice.
//!
//! Built once from the host's policy (`http::ScopePolicy`) and the catalog, and again for a
//! catalog that replaces it; checking a request is a few mask tests. The core asks
//! [`Rules::method`] before it runs a method, and [`Rules::item`] wherever it finds a
//! definition by name or uri, in a list, a call, a read, a `get`, a completion or a
//! subscription, so that what a request may not use is exactly what does not exist for it.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::mcp::lifecycle::Method;
use crate::wire::cursor::{LISTS, ListKind};

pub(crate) use crate::catalog::scopes::MAX_SCOPE_NAMES;

/// How many methods a policy may scope ([`METHOD_NAMES`]).
pub(crate) const METHOD_SLOTS: usize = 18;

/// The methods a policy may scope, by their JSON-RPC names, in slot order.
pub(crate) const METHOD_NAMES: [&str; METHOD_SLOTS] = [
    "server/discover",
    "initialize",
    "ping",
    "logging/setLevel",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "tools/call",
    "resources/read",
    "prompts/get",
    "completion/complete",
    "subscriptions/listen",
    "resources/subscribe",
    "resources/unsubscribe",
    "skills/list",
    "skills/get",
    "resources/directory/read",
];

/// The slot of `method` in [`METHOD_NAMES`].
pub(crate) fn slot(method: Method) -> usize {
    match method {
        Method::Discover => 0,
        Method::Initialize => 1,
        Method::Ping => 2,
        Method::SetLevel => 3,
        Method::List(ListKind::Skills) => 15,
        Method::List(kind) => 4 + kind.index(),
        // A task is a tool call: whoever may call tools may read, answer and cancel theirs.
        Method::CallTool
        | Method::GetTask
        | Method::UpdateTask
        | Method::CancelTask
        | Method::TaskResult
        | Method::ListTasks => 8,
        Method::ReadResource => 9,
        Method::GetPrompt => 10,
        Method::Complete => 11,
        Method::Listen => 12,
        Method::Subscribe => 13,
        Method::Unsubscribe => 14,
        Method::GetSkill => 16,
        Method::ReadDirectory => 17,
    }
}

/// The scopes a request was granted, as bits of the server's [`Scopes`]: built by
/// [`Scopes::set_of`] from the scope names a token carries (names the server does not know
/// are left out: nothing requires them). `Copy`, 16 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct ScopeSet(pub(crate) u128);

impl ScopeSet {
    /// No scope.
    pub const EMPTY: Self = Self(0);

    /// Whether the set holds no scope.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl core::fmt::Debug for ScopeSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ScopeSet({} scopes)", self.0.count_ones())
    }
}

/// The scope names a server knows, each a bit of a [`ScopeSet`], with the implications its
/// policy declares (a broader scope grants the narrower ones). Cloning shares it.
#[derive(Clone)]
pub struct Scopes(Arc<Table>);

struct Table {
    /// Sorted, unique: a name's bit is its position.
    names: Box<[Box<str>]>,
    /// For each bit, the bits it grants (itself and what it implies, transitively).
    grants: Box<[u128]>,
}

impl core::fmt::Debug for Scopes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.0.names.iter()).finish()
    }
}

impl PartialEq for Scopes {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || (self.0.names == other.0.names && self.0.grants == other.0.grants)
    }
}

impl Eq for Scopes {}

impl Default for Scopes {
    fn default() -> Self {
        Self(Arc::new(Table { names: Box::new([]), grants: Box::new([]) }))
    }
}

impl Scopes {
    /// The table of `names` (at most 128; more are cut), where each `(broader, narrower)`
    /// pair of `implies` makes a grant of `broader` a grant of `narrower`.
    pub(crate) fn new<'a>(
        names: impl IntoIterator<Item = &'a str>,
        implies: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    ) -> Self {
        let mut sorted: Vec<Box<str>> = names.into_iter().map(Box::from).collect();
        sorted.sort_unstable();
        sorted.dedup();
        sorted.truncate(128);
        let bit = |name: &str| sorted.binary_search_by(|n| (**n).cmp(name)).ok();
        let mut grants: Vec<u128> = (0..sorted.len()).map(|i| 1u128 << i).collect();
        // The transitive closure: at most one pass per name.
        for _ in 0..sorted.len() {
            let mut changed = false;
            for (broad, narrow) in implies.clone() {
                if let (Some(b), Some(n)) = (bit(broad), bit(narrow)) {
                    let add = grants[n] & !grants[b];
                    if add != 0 {
                        grants[b] |= add;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        Self(Arc::new(Table { names: sorted.into(), grants: grants.into() }))
    }

    /// The bit of `name`, if the server knows it.
    fn bit(&self, name: &str) -> Option<usize> {
        self.0.names.binary_search_by(|n| (**n).cmp(name)).ok()
    }

    /// The set a token carrying `names` is granted: each known name with what it implies.
    /// Unknown names are skipped. Allocates nothing.
    ///
    /// ```
    /// use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, ScopePolicy};
    /// use mcp_engine::{Catalog, Config};
    ///
    /// let policy = ScopePolicy::new()
    ///     .require("tools/call", ["mcp:tools"])?
    ///     .implies("mcp:admin", ["mcp:tools"])?;
    /// let mut http = HttpConfig::new(AllowedOrigins::List(vec![]), Authorization::Host);
    /// http.scope_policy(policy);
    /// let engine = HttpEngine::new(Config::new("demo", "1.0"), http, Catalog::empty());
    /// let scopes = engine.scopes();
    /// assert!(scopes.set_of(["mcp:admin"]).contains(scopes.set_of(["mcp:tools"])));
    /// assert!(scopes.set_of(["openid", "profile"]).is_empty());
    /// # Ok::<(), mcp_engine::http::ScopePolicyError>(())
    /// ```
    pub fn set_of<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> ScopeSet {
        let mut set = 0;
        for name in names {
            if let Some(b) = self.bit(name) {
                set |= self.0.grants[b];
            }
        }
        ScopeSet(set)
    }

    /// The set of one space-separated `scope` value (RFC 6749 §3.3), as a token's `scope`
    /// claim or an introspection answer carries it.
    pub fn set_of_claim(&self, scope: &str) -> ScopeSet {
        self.set_of(scope.split(' ').filter(|s| !s.is_empty()))
    }

    /// Every scope the server knows.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.names.iter().map(|n| &**n)
    }

    /// The mask of one alternative set of names, if every name is known.
    fn mask<S: AsRef<str>>(&self, set: &[S]) -> Option<u128> {
        set.iter().try_fold(0u128, |m, s| Some(m | 1u128 << self.bit(s.as_ref())?))
    }
}

impl ScopeSet {
    /// Whether every scope of `other` is in this set.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

/// What one method or definition requires: alternative masks, any one of which suffices
/// (none: nothing required).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Need(Box<[u128]>);

impl Need {
    pub(crate) fn allows(&self, granted: ScopeSet) -> bool {
        // Some set has no scope missing from the grant.
        self.0.is_empty() || self.0.iter().any(|&m| m & !granted.0 == 0)
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Why a catalog cannot be scoped by the server's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnknownScope;

/// What the request being dispatched was granted, against the endpoint's rules: the
/// scope check of its definitions (everything, without rules or without a grant).
#[derive(Clone, Copy)]
pub(crate) struct Grant<'a> {
    pub(crate) rules: Option<&'a Rules>,
    pub(crate) granted: Option<ScopeSet>,
}

impl Grant<'_> {
    /// Whether the request may use item `i` of list `kind` (a definition it may not use
    /// does not exist for it).
    pub(crate) fn may_use(self, kind: ListKind, i: usize) -> bool {
        match (self.rules, self.granted) {
            (Some(rules), Some(granted)) => rules.item(kind, i, granted),
            _ => true,
        }
    }

    /// Whether the request may read `uri`, resolved to `target` (a template's position,
    /// or `None` for a listed resource) in `catalog`.
    pub(crate) fn may_read(self, catalog: &Catalog, uri: &str, target: Option<usize>) -> bool {
        if self.rules.is_none() || self.granted.is_none() {
            return true;
        }
        match target {
            Some(t) => self.may_use(ListKind::ResourceTemplates, t),
            None => {
                catalog.resource_index(uri).is_none_or(|i| self.may_use(ListKind::Resources, i))
                    && catalog.dynamic_skill_of(uri).is_none_or(|i| self.may_use(ListKind::Skills, i))
            }
        }
    }

    /// Whether a page of list `kind` depends on the caller's scopes (it is then the
    /// caller's alone).
    pub(crate) fn scoped_list(self, kind: ListKind) -> bool {
        self.granted.is_some() && self.rules.is_some_and(|r| r.scoped_list(kind))
    }
}

/// The prepared rules: what each method and each definition requires, and the challenge
/// (`scope` value) naming what each method needs.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    pub(crate) scopes: Scopes,
    methods: [Need; METHOD_SLOTS],
    /// The first alternative set of each method, space-separated (the `scope` of its
    /// `insufficient_scope` challenge).
    challenges: [Box<str>; METHOD_SLOTS],
    /// Per definition, by `ListKind::index` and position.
    items: [Box<[Need]>; LISTS],
    /// Whether a list has a definition that requires a scope (its pages then depend on
    /// the caller: `cacheScope: "private"`).
    scoped_lists: [bool; LISTS],
}

impl Rules {
    /// The rules of `methods` (one `Vec` of alternative sets per slot) over `scopes`, with
    /// the requirements `catalog` declares. `None` if a name is not in `scopes`.
    pub(crate) fn new(
        scopes: Scopes,
        methods: &[Vec<Vec<String>>; METHOD_SLOTS],
        catalog: &Catalog,
    ) -> Result<Self, UnknownScope> {
        let need = |sets: &[Vec<String>]| -> Result<Need, UnknownScope> {
            sets.iter().map(|s| scopes.mask(s).ok_or(UnknownScope)).collect::<Result<_, _>>().map(Need)
        };
        let mut m: [Need; METHOD_SLOTS] = Default::default();
        let mut challenges: [Box<str>; METHOD_SLOTS] = Default::default();
        for (i, sets) in methods.iter().enumerate() {
            m[i] = need(sets)?;
            challenges[i] = sets.first().map(|s| s.join(" ")).unwrap_or_default().into();
        }
        let mut rules =
            Self { methods: m, challenges, items: Default::default(), scoped_lists: [false; LISTS], scopes };
        rules.items = rules.items_of(catalog)?;
        rules.scoped_lists = core::array::from_fn(|k| rules.items[k].iter().any(|n| !n.is_empty()));
        Ok(rules)
    }

    /// The same rules for a catalog that replaces the current one.
    pub(crate) fn for_catalog(&self, catalog: &Catalog) -> Result<Self, UnknownScope> {
        let items = self.items_of(catalog)?;
        let scoped_lists = core::array::from_fn(|k| items[k].iter().any(|n| !n.is_empty()));
        Ok(Self { items, scoped_lists, ..self.clone() })
    }

    fn items_of(&self, catalog: &Catalog) -> Result<[Box<[Need]>; LISTS], UnknownScope> {
        let need = |sets: &[Vec<String>]| -> Result<Need, UnknownScope> {
            sets.iter().map(|s| self.scopes.mask(s).ok_or(UnknownScope)).collect::<Result<_, _>>().map(Need)
        };
        let tools = catalog.tools().map(|t| need(&t.required_scopes)).collect::<Result<_, _>>()?;
        // The resources list ends with the skills' `SKILL.md` files, each as its skill requires.
        let resources = catalog
            .resources()
            .map(|r| need(&r.required_scopes))
            .chain(catalog.skills().map(|s| need(&s.required_scopes)))
            .collect::<Result<_, _>>()?;
        let templates = catalog.templates().map(|t| need(&t.required_scopes)).collect::<Result<_, _>>()?;
        let prompts = catalog.prompts().map(|p| need(&p.required_scopes)).collect::<Result<_, _>>()?;
        let skills = catalog.skills().map(|s| need(&s.required_scopes)).collect::<Result<_, _>>()?;
        Ok([tools, resources, templates, prompts, skills])
    }

    /// Whether `granted` may run `method`.
    pub(crate) fn method(&self, method: Method, granted: ScopeSet) -> bool {
        self.methods[slot(method)].allows(granted)
    }

    /// The `scope` value of the challenge of `method`.
    pub(crate) fn challenge(&self, slot: usize) -> &str {
        &self.challenges[slot]
    }

    /// Whether `granted` may use item `i` of list `kind`.
    pub(crate) fn item(&self, kind: ListKind, i: usize, granted: ScopeSet) -> bool {
        self.items[kind.index()].get(i).is_none_or(|n| n.allows(granted))
    }

    /// Whether the pages of list `kind` depend on the caller's scopes.
    pub(crate) fn scoped_list(&self, kind: ListKind) -> bool {
        self.scoped_lists[kind.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implications_are_transitive_and_unknown_names_grant_nothing() {
        let s = Scopes::new(["a", "b", "c", "d"], [("a", "b"), ("b", "c")]);
        let a = s.set_of(["a"]);
        assert!(a.contains(s.set_of(["b"])) && a.contains(s.set_of(["c"])));
        assert!(!a.contains(s.set_of(["d"])));
        assert!(!s.set_of(["c"]).contains(s.set_of(["b"])));
        assert!(s.set_of(["zz", "openid"]).is_empty());
        assert_eq!(s.set_of_claim(" a  d "), s.set_of(["a", "d"]));
    }

    #[test]
    fn any_one_alternative_set_suffices_and_an_empty_need_allows_all() {
        let s = Scopes::new(["r", "w", "x"], []);
        let need = Need(vec![s.mask(&["r", "w"]).unwrap(), s.mask(&["x"]).unwrap()].into());
        assert!(need.allows(s.set_of(["r", "w"])));
        assert!(need.allows(s.set_of(["x"])));
        assert!(!need.allows(s.set_of(["r"])));
        assert!(!need.allows(ScopeSet::EMPTY));
        assert!(Need::default().allows(ScopeSet::EMPTY));
    }
}
