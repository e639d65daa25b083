//! The declared graph: what can happen. The catalog's definitions and the methods that
//! reach them, plus the edges the host declares on its tools ([`Declarations`]), and a
//! completeness note listing what a declaration cannot see.

use core::fmt;

use crate::catalog::Catalog;
use crate::catalog::uritemplate::Captures;
use crate::config::Config;
use crate::connectome::graph::{EdgeKind, Graph, GraphKind, NodeKind};

/// The methods the connectome follows: each reaches a definition.
pub(crate) const TOOLS_CALL: &str = "tools/call";
pub(crate) const RESOURCES_READ: &str = "resources/read";
pub(crate) const PROMPTS_GET: &str = "prompts/get";
pub(crate) const COMPLETE: &str = "completion/complete";

/// The one entry node of a declared graph: whoever calls.
pub(crate) const CLIENT: &str = "client";

/// What no declaration can see, written into every declared graph.
const UNSEEN: [&str; 6] = [
    "callers: the declaration has one entry, client; which principals call is only observed",
    "effects and gates exist as the host declares them; the engine performs and checks neither",
    "resource reads a tool makes without declaring them (or without reporting them, when observed)",
    "which concrete uris a tool's reads of a template name",
    "work a handler does outside the catalog: other servers, files, the network",
    "methods that reach no definition: lists, subscriptions, ping, discovery, the lifecycle",
];

/// The edges a host declares on its tools: which resources a tool reads, which named
/// effects it performs and which named checks gate it. Checked against the catalog when
/// the graph is built ([`declared`]).
///
/// ```
/// use mcp_engine::connectome::{Declarations, declared};
/// use mcp_engine::{Catalog, Config, Resource, Tool};
///
/// let catalog = Catalog::builder()
///     .tool(Tool::new("send_report"))
///     .resource(Resource::new("db://orders", "orders"))
///     .build()?;
/// let decl = Declarations::new()
///     .reads("send_report", "db://orders")
///     .performs("send_report", "email")
///     .labeled("external")
///     .gated_by("send_report", "manager_approval");
/// let graph = declared(&catalog, &Config::new("demo", "1"), &decl)?;
/// assert!(graph.get_node("effect:email").is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declarations {
    edges: Vec<Declared>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Declared {
    tool: String,
    kind: EdgeKind,
    /// A uri (reads), an effect or a gate name.
    to: String,
    label: Option<String>,
}

impl Declarations {
    /// No declared edges.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(mut self, tool: impl Into<String>, kind: EdgeKind, to: impl Into<String>) -> Self {
        self.edges.push(Declared { tool: tool.into(), kind, to: to.into(), label: None });
        self
    }

    /// `tool` reads `uri`: a listed resource, a template's uri template, or a uri a
    /// template matches (the edge then reaches the template).
    #[must_use]
    pub fn reads(self, tool: impl Into<String>, uri: impl Into<String>) -> Self {
        self.push(tool, EdgeKind::Reads, uri)
    }

    /// `tool` performs the named `effect` (say `email`, `payment`, `delete_rows`).
    #[must_use]
    pub fn performs(self, tool: impl Into<String>, effect: impl Into<String>) -> Self {
        self.push(tool, EdgeKind::Performs, effect)
    }

    /// `tool` is gated by the named `check` (say `manager_approval`): a path through the
    /// tool crosses the gate (see [`Graph::reach_avoiding_gates`]).
    #[must_use]
    pub fn gated_by(self, tool: impl Into<String>, check: impl Into<String>) -> Self {
        self.push(tool, EdgeKind::GatedBy, check)
    }

    /// Labels the edge declared last (the diff compares labels). Does nothing before
    /// the first edge.
    #[must_use]
    pub fn labeled(mut self, label: impl Into<String>) -> Self {
        if let Some(last) = self.edges.last_mut() {
            last.label = Some(label.into());
        }
        self
    }

    /// How many edges are declared.
    pub fn len(&self) -> usize {
        self.edges.len()
    }

    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.edges.is_empty()
    }
}

/// Why a declaration was refused: it names something the catalog does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeclarationError {
    /// No tool of that name.
    UnknownTool(String),
    /// A read of a uri that is neither listed nor a template's, nor matched by one.
    UnknownResource {
        /// The tool.
        tool: String,
        /// The uri.
        uri: String,
    },
    /// An empty effect or gate name.
    EmptyName {
        /// The tool.
        tool: String,
    },
}

impl fmt::Display for DeclarationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTool(t) => write!(f, "the catalog has no tool `{t}`"),
            Self::UnknownResource { tool, uri } => {
                write!(f, "tool `{tool}` reads `{uri}`, which no resource or template of the catalog is")
            }
            Self::EmptyName { tool } => write!(f, "tool `{tool}` declares an effect or gate with no name"),
        }
    }
}

impl std::error::Error for DeclarationError {}

/// The declared graph of `catalog` served with `config`, with the host's `declarations`:
/// - the entry `client`, which `calls` each method that reaches a definition and that
///   this catalog and configuration serve (`tools/call`, `resources/read`, `prompts/get`,
///   and `completion/complete` when `Config::completions` is on);
/// - each method `dispatches` to each definition it reaches (`completion/complete`: the
///   prompts with arguments and the templates with variables);
/// - the host's `reads`, `performs` and `gated_by` edges;
/// - the completeness note: what a declaration cannot see.
///
/// Refused when a declaration names a tool or uri the catalog does not have.
pub fn declared(
    catalog: &Catalog,
    config: &Config,
    declarations: &Declarations,
) -> Result<Graph, DeclarationError> {
    build(catalog, config, declarations, true)
}

/// As [`declared`], but a declaration naming what the catalog does not have (any more:
/// the catalog was replaced) is left out and named in the graph's notes.
pub(crate) fn declared_lenient(catalog: &Catalog, config: &Config, declarations: &Declarations) -> Graph {
    match build(catalog, config, declarations, false) {
        Ok(g) => g,
        // Never: a lenient build refuses nothing.
        Err(_) => Graph::new(GraphKind::Declared),
    }
}

fn build(
    catalog: &Catalog,
    config: &Config,
    declarations: &Declarations,
    strict: bool,
) -> Result<Graph, DeclarationError> {
    let mut g = Graph::new(GraphKind::Declared);
    g.node(NodeKind::Client, CLIENT);
    let dispatch = |g: &mut Graph, method: &str, kind: NodeKind, name: &str| {
        g.edge((NodeKind::Client, CLIENT), EdgeKind::Calls, (NodeKind::Method, method));
        g.edge((NodeKind::Method, method), EdgeKind::Dispatches, (kind, name));
    };
    for t in catalog.tools() {
        dispatch(&mut g, TOOLS_CALL, NodeKind::Tool, &t.name);
    }
    for r in catalog.resources() {
        dispatch(&mut g, RESOURCES_READ, NodeKind::Resource, &r.uri);
    }
    for t in catalog.templates() {
        dispatch(&mut g, RESOURCES_READ, NodeKind::Template, &t.uri_template);
    }
    for p in catalog.prompts() {
        dispatch(&mut g, PROMPTS_GET, NodeKind::Prompt, &p.name);
    }
    if config.completions {
        for p in catalog.prompts().filter(|p| !p.arguments.is_empty()) {
            dispatch(&mut g, COMPLETE, NodeKind::Prompt, &p.name);
        }
        for (i, t) in catalog.templates().enumerate() {
            if !catalog.templates[i].parsed.var_names().is_empty() {
                dispatch(&mut g, COMPLETE, NodeKind::Template, &t.uri_template);
            }
        }
    }
    let mut captures = Captures::with_capacity(1024);
    for d in &declarations.edges {
        let to = match d.kind {
            _ if catalog.tool(&d.tool).is_none() => Err(DeclarationError::UnknownTool(d.tool.clone())),
            EdgeKind::Reads => read_target(catalog, &d.to, &mut captures)
                .ok_or_else(|| DeclarationError::UnknownResource { tool: d.tool.clone(), uri: d.to.clone() }),
            _ if d.to.is_empty() => Err(DeclarationError::EmptyName { tool: d.tool.clone() }),
            EdgeKind::GatedBy => Ok((NodeKind::Gate, d.to.as_str())),
            _ => Ok((NodeKind::Effect, d.to.as_str())),
        };
        let to = match to {
            Ok(to) => to,
            Err(e) if strict => return Err(e),
            Err(e) => {
                g.note(format!("left out, the catalog no longer has it: {e}"));
                continue;
            }
        };
        let edge = g.edge((NodeKind::Tool, &d.tool), d.kind, to);
        if d.label.is_some() {
            edge.label.clone_from(&d.label);
        }
    }
    for note in UNSEEN {
        g.note(note);
    }
    Ok(g)
}

/// The node a read of `uri` reaches: the listed resource, the template whose uri template
/// it is, or the template that matches it.
pub(crate) fn read_target<'c>(
    catalog: &'c Catalog,
    uri: &'c str,
    captures: &mut Captures,
) -> Option<(NodeKind, &'c str)> {
    if let Some(t) = catalog.templates().find(|t| t.uri_template == uri) {
        return Some((NodeKind::Template, &t.uri_template));
    }
    match catalog.resolve_uri(uri, captures)? {
        None => Some((NodeKind::Resource, uri)),
        Some(t) => Some((NodeKind::Template, &catalog.templates[t].template.uri_template)),
    }
}
