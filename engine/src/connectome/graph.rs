//! The graph both connectomes are: typed nodes, typed edges with an optional label and
//! count, the notes on what the graph cannot see, and its canonical bytes (RFC 8785 JSON,
//! by `serde_json_canonicalizer`) with their SHA-256.
//!
//! Nodes and edges are kept in sorted maps, so the bytes depend only on what the graph
//! holds, never on the order it was built in.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

/// The version of the export format, written as `format`.
pub const FORMAT: &str = "mcp-engine/connectome/1";

/// What a graph is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum GraphKind {
    /// What can happen: the catalog and the edges the host declares on it.
    Declared,
    /// What did happen: the edges recorded as requests were dispatched, with counts.
    Observed,
}

impl GraphKind {
    /// `declared` or `observed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Declared => "declared",
            Self::Observed => "observed",
        }
    }
}

/// What a node stands for. A node's id is `kind:name`, say `tool:echo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum NodeKind {
    /// Any caller acting for no principal (stdio, or HTTP without authorization): `client`.
    Client,
    /// A caller acting for an HTTP principal, named by the first 8 bytes of its digest in
    /// hex (`other` for those past the storage's principal slots).
    Principal,
    /// An MCP method that reaches a definition: `tools/call`, `resources/read`,
    /// `prompts/get`, `completion/complete`.
    Method,
    /// A tool of the catalog, by name.
    Tool,
    /// A listed resource, by uri.
    Resource,
    /// A resource template, by uri template.
    Template,
    /// A prompt, by name.
    Prompt,
    /// A named effect a tool performs (declared by the host).
    Effect,
    /// A named check a tool is gated by (declared by the host).
    Gate,
}

impl NodeKind {
    /// The kind as written in ids and in the export.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Principal => "principal",
            Self::Method => "method",
            Self::Tool => "tool",
            Self::Resource => "resource",
            Self::Template => "template",
            Self::Prompt => "prompt",
            Self::Effect => "effect",
            Self::Gate => "gate",
        }
    }
}

/// What an edge says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum EdgeKind {
    /// A caller calls a method.
    Calls,
    /// A method reaches a definition.
    Dispatches,
    /// A tool reads a resource (or a resource of a template).
    Reads,
    /// A tool performs an effect.
    Performs,
    /// A tool is gated by a check: a path through the tool crosses the gate.
    GatedBy,
}

impl EdgeKind {
    /// Every kind, in order.
    pub const ALL: [Self; 5] = [Self::Calls, Self::Dispatches, Self::Reads, Self::Performs, Self::GatedBy];

    /// The kind as written in the export.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Calls => "calls",
            Self::Dispatches => "dispatches",
            Self::Reads => "reads",
            Self::Performs => "performs",
            Self::GatedBy => "gated_by",
        }
    }
}

/// A node: its kind and name (its id is `kind:name`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Node {
    /// What it stands for.
    pub kind: NodeKind,
    /// Its name within its kind.
    pub name: String,
}

impl Node {
    /// The node's id, `kind:name`.
    pub fn id(&self) -> String {
        node_id(self.kind, &self.name)
    }
}

/// The id of the node of `kind` called `name`.
pub fn node_id(kind: NodeKind, name: &str) -> String {
    format!("{}:{name}", kind.as_str())
}

/// What identifies an edge: the ids of its ends and its kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EdgeKey {
    /// The id of the node it leaves.
    pub from: String,
    /// What it says.
    pub kind: EdgeKind,
    /// The id of the node it reaches.
    pub to: String,
}

/// What an edge carries besides its identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EdgeData {
    /// A label the host (or a consumer) puts on the edge; the diff compares them.
    pub label: Option<String>,
    /// How often it was seen (observed graphs); `None` in a declared graph.
    pub count: Option<u64>,
}

/// A connectome: nodes, edges, notes on what it cannot see, and counters.
///
/// ```
/// use mcp_engine::connectome::{EdgeKind, Graph, GraphKind, NodeKind};
///
/// let mut a = Graph::new(GraphKind::Declared);
/// a.edge((NodeKind::Tool, "b"), EdgeKind::Performs, (NodeKind::Effect, "mail"));
/// a.edge((NodeKind::Tool, "a"), EdgeKind::Reads, (NodeKind::Resource, "x://1"));
/// let mut b = Graph::new(GraphKind::Declared);
/// b.edge((NodeKind::Tool, "a"), EdgeKind::Reads, (NodeKind::Resource, "x://1"));
/// b.edge((NodeKind::Tool, "b"), EdgeKind::Performs, (NodeKind::Effect, "mail"));
/// assert_eq!(a.canonical_bytes(), b.canonical_bytes());
/// assert_eq!(a.sha256_hex().len(), 64);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    kind: GraphKind,
    nodes: BTreeMap<String, Node>,
    edges: BTreeMap<EdgeKey, EdgeData>,
    notes: BTreeSet<String>,
    counters: BTreeMap<String, u64>,
}

impl Graph {
    /// An empty graph of `kind`.
    pub fn new(kind: GraphKind) -> Self {
        Self {
            kind,
            nodes: BTreeMap::new(),
            edges: BTreeMap::new(),
            notes: BTreeSet::new(),
            counters: BTreeMap::new(),
        }
    }

    /// What the graph is of.
    pub fn kind(&self) -> GraphKind {
        self.kind
    }

    /// Adds the node of `kind` called `name` (once) and returns its id.
    pub fn node(&mut self, kind: NodeKind, name: &str) -> String {
        let id = node_id(kind, name);
        self.nodes.entry(id.clone()).or_insert_with(|| Node { kind, name: name.to_owned() });
        id
    }

    /// The edge `from -kind-> to` (added, with its two nodes, if it is not there yet), to
    /// set its label or count.
    pub fn edge(&mut self, from: (NodeKind, &str), kind: EdgeKind, to: (NodeKind, &str)) -> &mut EdgeData {
        let from = self.node(from.0, from.1);
        let to = self.node(to.0, to.1);
        self.edges.entry(EdgeKey { from, kind, to }).or_default()
    }

    /// Adds a note on what the graph cannot see (or on what its storage dropped).
    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.insert(text.into());
    }

    /// Sets the counter `name` (observed graphs: what fixed-size storage could not keep).
    pub fn set_counter(&mut self, name: &str, value: u64) {
        self.counters.insert(name.to_owned(), value);
    }

    /// The nodes, by id.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = (&str, &Node)> {
        self.nodes.iter().map(|(id, n)| (id.as_str(), n))
    }

    /// The node with id `id`.
    pub fn get_node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// The edges, sorted by `(from, kind, to)`.
    pub fn edges(&self) -> impl ExactSizeIterator<Item = (&EdgeKey, &EdgeData)> {
        self.edges.iter()
    }

    /// The edge `key`, if present.
    pub fn get_edge(&self, key: &EdgeKey) -> Option<&EdgeData> {
        self.edges.get(key)
    }

    /// The notes on what the graph cannot see, sorted.
    pub fn notes(&self) -> impl ExactSizeIterator<Item = &str> {
        self.notes.iter().map(String::as_str)
    }

    /// The counters, by name.
    pub fn counters(&self) -> impl ExactSizeIterator<Item = (&str, u64)> {
        self.counters.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// The graph as a JSON value: `format`, `graph`, `nodes` (sorted by id), `edges`
    /// (sorted by from, kind, to; `label` and `count` only when set), `completeness` (the
    /// notes) and `counters`.
    pub fn to_json(&self) -> Value {
        let nodes: Vec<Value> = self
            .nodes
            .iter()
            .map(|(id, n)| json!({ "id": id, "kind": n.kind.as_str(), "name": n.name }))
            .collect();
        let edges: Vec<Value> = self.edges.iter().map(|(k, d)| edge_json(k, d)).collect();
        json!({
            "format": FORMAT,
            "graph": self.kind.as_str(),
            "nodes": nodes,
            "edges": edges,
            "completeness": self.notes.iter().collect::<Vec<_>>(),
            "counters": self.counters,
        })
    }

    /// The canonical bytes: [`Self::to_json`] written as RFC 8785 (JCS) JSON. The same
    /// graph gives the same bytes whatever order it was built in.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        canonical(&self.to_json())
    }

    /// The SHA-256 of [`Self::canonical_bytes`].
    pub fn sha256(&self) -> [u8; 32] {
        sha256(&self.canonical_bytes())
    }

    /// [`Self::sha256`] in lowercase hex.
    pub fn sha256_hex(&self) -> String {
        hex(&self.sha256())
    }
}

/// An edge as JSON: `from`, `kind`, `to`, and `label` and `count` when set.
pub(crate) fn edge_json(k: &EdgeKey, d: &EdgeData) -> Value {
    let mut m = Map::new();
    m.insert("from".into(), k.from.clone().into());
    m.insert("kind".into(), k.kind.as_str().into());
    m.insert("to".into(), k.to.clone().into());
    if let Some(l) = &d.label {
        m.insert("label".into(), l.clone().into());
    }
    if let Some(c) = d.count {
        m.insert("count".into(), c.into());
    }
    Value::Object(m)
}

/// `value` as RFC 8785 canonical JSON.
pub(crate) fn canonical(value: &Value) -> Vec<u8> {
    // A `Value` holds no non-finite number and only string keys: canonicalizing it
    // cannot fail.
    serde_json_canonicalizer::to_vec(value).unwrap_or_default()
}

/// The SHA-256 of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).into()
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use core::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}
