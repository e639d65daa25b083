//! The connectome (feature `connectome`, off by default): the server's wiring diagram,
//! twice. The *declared* graph says what can happen (the catalog's definitions, the
//! methods that reach them, and the edges the host declares: a tool reads a resource,
//! performs a named effect, is gated by a named check), with a note of what a declaration
//! cannot see. The *observed* graph says what did happen: the engine counts, as it
//! dispatches requests, which caller called which method and which definition each
//! reached, and the tool-to-resource reads the host reports, in fixed-size storage
//! ([`Observed`]: recording allocates nothing).
//!
//! Both export as canonical bytes (RFC 8785 JSON, by `serde_json_canonicalizer`) with a
//! SHA-256 over them: the same graph gives the same bytes whatever order it was built in.
//! [`diff`] puts every edge of either graph in one of four classes with coverage counts;
//! the queries ([`Graph::reaches`], [`Graph::reach_avoiding_gates`],
//! [`Graph::gate_dominates`], [`Graph::crossed_by_every_path`]) use petgraph's
//! algorithms.
//!
//! On the wire, as the host chooses: a catalog that lists the resources of
//! [`resources`] (`connectome://declared`, `connectome://observed`,
//! `connectome://diff`) has their reads answered by the engine itself with the canonical
//! bytes (`application/json`), the declared graph drawn with the declarations given to
//! `engine.connectome().set_declarations(..)`. Nothing else on the wire changes.
//!
//! This layer owns the graphs, their bytes, the diff, the queries and the observed
//! counts. May use: `catalog`, `config` and the leaf modules. May not touch: requests,
//! tickets, transports (the core records into [`Observed`] and answers the reads).

mod declared;
mod diff;
mod graph;
mod observed;
mod query;

pub use declared::{DeclarationError, Declarations, declared};
pub use diff::{Coverage, Diff, DiffEdge, EdgeClass, diff};
pub use graph::{EdgeData, EdgeKey, EdgeKind, FORMAT, Graph, GraphKind, Node, NodeKind, node_id};
pub use observed::{MAX_PRINCIPALS, MAX_READ_EDGES, Method, Observed, Target};

pub(crate) use declared::declared_lenient;

use crate::catalog::Resource;

/// The uri of the declared graph's resource.
pub const DECLARED_URI: &str = "connectome://declared";
/// The uri of the observed graph's resource.
pub const OBSERVED_URI: &str = "connectome://observed";
/// The uri of the diff's resource.
pub const DIFF_URI: &str = "connectome://diff";

/// Which of the three connectome resources a uri names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    Declared,
    Observed,
    Diff,
}

impl Which {
    pub(crate) fn of(uri: &str) -> Option<Self> {
        match uri {
            DECLARED_URI => Some(Self::Declared),
            OBSERVED_URI => Some(Self::Observed),
            DIFF_URI => Some(Self::Diff),
            _ => None,
        }
    }
}

/// The three read-only resources, for a host to add to its catalog: the engine answers
/// their reads with the canonical bytes (`application/json`).
///
/// ```
/// use mcp_engine::{Catalog, Tool, connectome};
///
/// let mut builder = Catalog::builder().tool(Tool::new("echo"));
/// for r in connectome::resources() {
///     builder = builder.resource(r);
/// }
/// let catalog = builder.build()?;
/// assert_eq!(catalog.resources().count(), 3);
/// # Ok::<(), mcp_engine::CatalogError>(())
/// ```
pub fn resources() -> [Resource; 3] {
    let r = |uri: &str, name: &str, description: &str| {
        Resource::new(uri, name).description(description).mime_type("application/json")
    };
    [
        r(DECLARED_URI, "connectome-declared", "What can happen: the declared graph (RFC 8785 JSON)."),
        r(
            OBSERVED_URI,
            "connectome-observed",
            "What did happen: the observed graph, with counts (RFC 8785 JSON).",
        ),
        r(
            DIFF_URI,
            "connectome-diff",
            "Declared against observed: every edge in one of four classes (RFC 8785 JSON).",
        ),
    ]
}

#[cfg(test)]
mod tests;
