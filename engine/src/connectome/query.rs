//! Questions asked of a graph, answered with petgraph's algorithms: can an entry reach a
//! node, can it without crossing a gate (with a witness path of the graph's own edges),
//! does a gate dominate a node, and which nodes every path crosses.
//!
//! Paths follow every edge kind except `gated_by`: a gate is not a step on a path but a
//! condition on the node it gates. A path *crosses* gate `g` when it passes through a node
//! with a `gated_by` edge to `g` (its ends included).

use std::collections::BTreeMap;

use petgraph::algo::{astar, dominators, has_path_connecting};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::NodeFiltered;

use crate::connectome::graph::{EdgeKey, EdgeKind, Graph};

/// A graph as petgraph sees it: one node per node id, one edge per path step.
struct Flow<'g> {
    graph: DiGraph<&'g str, &'g EdgeKey>,
    index: BTreeMap<&'g str, NodeIndex>,
    /// The gates of each gated node.
    gates: BTreeMap<NodeIndex, Vec<&'g str>>,
}

impl<'g> Flow<'g> {
    fn of(g: &'g Graph) -> Self {
        let mut graph = DiGraph::new();
        let mut index = BTreeMap::new();
        for (id, _) in g.nodes() {
            index.insert(id, graph.add_node(id));
        }
        let mut gates: BTreeMap<NodeIndex, Vec<&str>> = BTreeMap::new();
        for (k, _) in g.edges() {
            let (Some(&a), Some(&b)) = (index.get(k.from.as_str()), index.get(k.to.as_str())) else {
                continue;
            };
            if k.kind == EdgeKind::GatedBy {
                gates.entry(a).or_default().push(k.to.as_str());
            } else {
                graph.add_edge(a, b, k);
            }
        }
        Self { graph, index, gates }
    }

    fn ends(&self, from: &str, to: &str) -> Option<(NodeIndex, NodeIndex)> {
        Some((*self.index.get(from)?, *self.index.get(to)?))
    }

    /// Whether node `n` is gated (by `gate`, or by any gate with `None`).
    fn gated(&self, n: NodeIndex, gate: Option<&str>) -> bool {
        self.gates.get(&n).is_some_and(|gs| gate.is_none_or(|g| gs.contains(&g)))
    }
}

impl Graph {
    /// Whether a path leads from node `entry` to node `target` (ids such as `client` and
    /// `effect:email`). A node reaches itself.
    pub fn reaches(&self, entry: &str, target: &str) -> bool {
        let flow = Flow::of(self);
        flow.ends(entry, target).is_some_and(|(a, b)| has_path_connecting(&flow.graph, a, b, None))
    }

    /// A shortest path from `entry` to `target` that crosses no gate, as the graph's own
    /// edges in order (empty when `entry` is `target`); `None` when every path crosses a
    /// gate, or none leads there.
    ///
    /// ```
    /// use mcp_engine::connectome::{EdgeKind, Graph, GraphKind, NodeKind};
    ///
    /// let mut g = Graph::new(GraphKind::Declared);
    /// g.edge((NodeKind::Method, "tools/call"), EdgeKind::Dispatches, (NodeKind::Tool, "pay"));
    /// g.edge((NodeKind::Method, "tools/call"), EdgeKind::Dispatches, (NodeKind::Tool, "refund"));
    /// g.edge((NodeKind::Tool, "pay"), EdgeKind::Performs, (NodeKind::Effect, "payment"));
    /// g.edge((NodeKind::Tool, "refund"), EdgeKind::Performs, (NodeKind::Effect, "payment"));
    /// g.edge((NodeKind::Tool, "pay"), EdgeKind::GatedBy, (NodeKind::Gate, "approval"));
    /// let path = g.reach_avoiding_gates("method:tools/call", "effect:payment").unwrap();
    /// assert_eq!(path[0].to, "tool:refund");
    /// assert!(!g.gate_dominates("method:tools/call", "gate:approval", "effect:payment"));
    /// ```
    pub fn reach_avoiding_gates(&self, entry: &str, target: &str) -> Option<Vec<EdgeKey>> {
        let flow = Flow::of(self);
        let (a, b) = flow.ends(entry, target)?;
        let open = NodeFiltered::from_fn(&flow.graph, |n| !flow.gated(n, None));
        if flow.gated(a, None) || flow.gated(b, None) {
            return None;
        }
        let (_, nodes) = astar(&open, a, |n| n == b, |_| 1u32, |_| 0)?;
        let steps = nodes.windows(2).filter_map(|w| {
            let e = flow.graph.edges_connecting(w[0], w[1]).next()?;
            Some((*e.weight()).clone())
        });
        Some(steps.collect())
    }

    /// Whether every path from `entry` to `target` crosses gate `gate` (an id such as
    /// `gate:approval`): `target` is reachable, and no longer once the nodes `gate` gates
    /// are taken out. A gate that gates one node dominates `target` exactly when that node
    /// does.
    pub fn gate_dominates(&self, entry: &str, gate: &str, target: &str) -> bool {
        let flow = Flow::of(self);
        let Some((a, b)) = flow.ends(entry, target) else { return false };
        if !has_path_connecting(&flow.graph, a, b, None) {
            return false;
        }
        if flow.gated(a, Some(gate)) || flow.gated(b, Some(gate)) {
            return true;
        }
        let open = NodeFiltered::from_fn(&flow.graph, |n| !flow.gated(n, Some(gate)));
        !has_path_connecting(&open, a, b, None)
    }

    /// The nodes every path from `entry` to `target` crosses, in path order, `entry` and
    /// `target` included (the dominators of `target` from `entry`, by petgraph's
    /// Cooper–Harvey–Kennedy algorithm); `None` when no path leads there.
    pub fn crossed_by_every_path(&self, entry: &str, target: &str) -> Option<Vec<String>> {
        let flow = Flow::of(self);
        let (a, b) = flow.ends(entry, target)?;
        let doms = dominators::simple_fast(&flow.graph, a);
        let mut chain: Vec<String> = doms.dominators(b)?.map(|n| flow.graph[n].to_owned()).collect();
        chain.reverse();
        Some(chain)
    }
}
