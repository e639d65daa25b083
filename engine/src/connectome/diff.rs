//! The diff of a declared and an observed graph: every edge of either in exactly one of
//! four classes, with coverage counts per edge kind.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::connectome::graph::{
    EdgeData, EdgeKey, EdgeKind, FORMAT, Graph, canonical, edge_json, hex, sha256,
};

/// The class of an edge in a [`Diff`]. An edge is identified by its two ends and its
/// kind; its label is what may differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum EdgeClass {
    /// Declared and observed, with the same label (or none on both sides).
    DeclaredAndObserved,
    /// Declared, never observed: authority nothing used (or an edge no observer can see,
    /// such as an effect).
    DeclaredNeverObserved,
    /// Observed, not declared: drift.
    ObservedUndeclared,
    /// In both, with a different label.
    Relabeled,
}

impl EdgeClass {
    /// Every class, in order.
    pub const ALL: [Self; 4] =
        [Self::DeclaredAndObserved, Self::DeclaredNeverObserved, Self::ObservedUndeclared, Self::Relabeled];

    /// The class as written in the export.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DeclaredAndObserved => "declared_and_observed",
            Self::DeclaredNeverObserved => "declared_never_observed",
            Self::ObservedUndeclared => "observed_undeclared",
            Self::Relabeled => "relabeled",
        }
    }
}

/// How many edges fall where, for one edge kind or for all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Coverage {
    /// Edges of the declared graph.
    pub declared: u64,
    /// Edges of the observed graph.
    pub observed: u64,
    /// [`EdgeClass::DeclaredAndObserved`] edges.
    pub declared_and_observed: u64,
    /// [`EdgeClass::DeclaredNeverObserved`] edges.
    pub declared_never_observed: u64,
    /// [`EdgeClass::ObservedUndeclared`] edges.
    pub observed_undeclared: u64,
    /// [`EdgeClass::Relabeled`] edges.
    pub relabeled: u64,
}

impl Coverage {
    fn add(&mut self, class: EdgeClass) {
        let n = match class {
            EdgeClass::DeclaredAndObserved => &mut self.declared_and_observed,
            EdgeClass::DeclaredNeverObserved => &mut self.declared_never_observed,
            EdgeClass::ObservedUndeclared => &mut self.observed_undeclared,
            EdgeClass::Relabeled => &mut self.relabeled,
        };
        *n += 1;
        if class != EdgeClass::ObservedUndeclared {
            self.declared += 1;
        }
        if class != EdgeClass::DeclaredNeverObserved {
            self.observed += 1;
        }
    }

    fn to_json(self) -> Value {
        json!({
            "declared": self.declared,
            "observed": self.observed,
            "declared_and_observed": self.declared_and_observed,
            "declared_never_observed": self.declared_never_observed,
            "observed_undeclared": self.observed_undeclared,
            "relabeled": self.relabeled,
        })
    }
}

/// One edge of a [`Diff`]: its class, and what each side says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiffEdge {
    /// Where it falls.
    pub class: EdgeClass,
    /// The declared graph's label and count, if it has the edge.
    pub declared: Option<EdgeData>,
    /// The observed graph's label and count, if it has the edge.
    pub observed: Option<EdgeData>,
}

/// The four-class diff of a declared and an observed graph ([`diff`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    edges: BTreeMap<EdgeKey, DiffEdge>,
    declared_sha256: [u8; 32],
    observed_sha256: [u8; 32],
}

/// Puts every edge of `declared` and of `observed` in exactly one [`EdgeClass`].
///
/// ```
/// use mcp_engine::connectome::{EdgeClass, EdgeKind, Graph, GraphKind, NodeKind, diff};
///
/// let mut d = Graph::new(GraphKind::Declared);
/// d.edge((NodeKind::Method, "tools/call"), EdgeKind::Dispatches, (NodeKind::Tool, "a"));
/// d.edge((NodeKind::Method, "tools/call"), EdgeKind::Dispatches, (NodeKind::Tool, "b"));
/// let mut o = Graph::new(GraphKind::Observed);
/// o.edge((NodeKind::Method, "tools/call"), EdgeKind::Dispatches, (NodeKind::Tool, "a")).count = Some(3);
/// let diff = diff(&d, &o);
/// assert_eq!(diff.coverage(None).declared_and_observed, 1);
/// assert_eq!(diff.coverage(None).declared_never_observed, 1);
/// ```
pub fn diff(declared: &Graph, observed: &Graph) -> Diff {
    let mut edges = BTreeMap::new();
    for (k, d) in declared.edges() {
        let class = match observed.get_edge(k) {
            None => EdgeClass::DeclaredNeverObserved,
            Some(o) if o.label == d.label => EdgeClass::DeclaredAndObserved,
            Some(_) => EdgeClass::Relabeled,
        };
        let o = observed.get_edge(k).cloned();
        edges.insert(k.clone(), DiffEdge { class, declared: Some(d.clone()), observed: o });
    }
    for (k, o) in observed.edges() {
        if declared.get_edge(k).is_none() {
            let e =
                DiffEdge { class: EdgeClass::ObservedUndeclared, declared: None, observed: Some(o.clone()) };
            edges.insert(k.clone(), e);
        }
    }
    Diff { edges, declared_sha256: declared.sha256(), observed_sha256: observed.sha256() }
}

impl Diff {
    /// Every edge of either graph, sorted by `(from, kind, to)`.
    pub fn edges(&self) -> impl ExactSizeIterator<Item = (&EdgeKey, &DiffEdge)> {
        self.edges.iter()
    }

    /// The class of edge `key`, if either graph has it.
    pub fn class_of(&self, key: &EdgeKey) -> Option<EdgeClass> {
        self.edges.get(key).map(|e| e.class)
    }

    /// The coverage counts of edges of `kind` (`None`: of all edges).
    pub fn coverage(&self, kind: Option<EdgeKind>) -> Coverage {
        let mut c = Coverage::default();
        for (k, e) in &self.edges {
            if kind.is_none_or(|kind| k.kind == kind) {
                c.add(e.class);
            }
        }
        c
    }

    /// The diff as JSON: `format`, `graph` (`diff`), the SHA-256 of both graphs'
    /// canonical bytes, the edges of each class (an edge's `label` and `count` as the
    /// observed graph has them, a relabeled edge's `declared_label` beside), and the
    /// coverage counts (`all`, and `by_kind`).
    pub fn to_json(&self) -> Value {
        let mut classes: BTreeMap<&str, Vec<Value>> =
            EdgeClass::ALL.iter().map(|c| (c.as_str(), Vec::new())).collect();
        for (k, e) in &self.edges {
            let side = e.observed.as_ref().or(e.declared.as_ref()).cloned().unwrap_or_default();
            let mut v = edge_json(k, &side);
            if e.class == EdgeClass::Relabeled
                && let Some(obj) = v.as_object_mut()
            {
                let label = e.declared.as_ref().and_then(|d| d.label.clone());
                obj.insert("declared_label".into(), label.map_or(Value::Null, Value::String));
            }
            classes.entry(e.class.as_str()).or_default().push(v);
        }
        let by_kind: BTreeMap<&str, Value> =
            EdgeKind::ALL.iter().map(|k| (k.as_str(), self.coverage(Some(*k)).to_json())).collect();
        json!({
            "format": FORMAT,
            "graph": "diff",
            "declared_sha256": hex(&self.declared_sha256),
            "observed_sha256": hex(&self.observed_sha256),
            "classes": classes,
            "coverage": { "all": self.coverage(None).to_json(), "by_kind": by_kind },
        })
    }

    /// [`Self::to_json`] as RFC 8785 canonical bytes.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        canonical(&self.to_json())
    }

    /// The SHA-256 of [`Self::canonical_bytes`], in lowercase hex.
    pub fn sha256_hex(&self) -> String {
        hex(&sha256(&self.canonical_bytes()))
    }
}
