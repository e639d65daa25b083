//! The observed graph: what did happen, counted as requests are dispatched, in storage
//! whose size is fixed when the engine (or the catalog) is set: recording allocates
//! nothing and never grows.
//!
//! What is counted (edge identity and counts only, never a byte of a payload):
//! - caller `calls` method: one row per caller: `client` (no principal), up to
//!   [`MAX_PRINCIPALS`] principals in order of first appearance, then `principal:other`
//!   for every principal past them;
//! - method `dispatches` definition: one counter per (method, definition) pair the
//!   catalog allows;
//! - tool `reads` resource or template, as the host reports them: a table of at most
//!   [`MAX_READ_EDGES`] distinct pairs; a report of a new pair once it is full is counted
//!   in `dropped_reads` instead.
//!
//! A catalog replacement carries each count over to the definition of the same name in
//! the new catalog; counts of definitions that left are added to `retired`.

use crate::catalog::Catalog;
use crate::catalog::uritemplate::Captures;
use crate::connectome::declared::{CLIENT, COMPLETE, PROMPTS_GET, RESOURCES_READ, TOOLS_CALL};
use crate::connectome::graph::{EdgeKind, Graph, GraphKind, NodeKind, hex};

/// Principals counted each on a row of their own; calls of later ones are counted
/// together as `principal:other`.
pub const MAX_PRINCIPALS: usize = 32;

/// Distinct (tool, resource) read pairs kept; reports of further pairs are counted in
/// `dropped_reads`.
pub const MAX_READ_EDGES: usize = 1024;

/// What notes every observed graph carries.
const NOTES: [&str; 4] = [
    "counts since the engine started or was cleared, carried over catalog replacements by name",
    "a call of a method whose definition was refused (unknown, out of scope, bad arguments) counts as a call only",
    "reads are those the host reported; a read it did not report is not seen",
    "principals are named by the first 8 bytes of their SHA-256 digest",
];

/// A method the connectome follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// `tools/call`.
    CallTool,
    /// `resources/read`.
    ReadResource,
    /// `prompts/get`.
    GetPrompt,
    /// `completion/complete`.
    Complete,
}

impl Method {
    const ALL: [Self; 4] = [Self::CallTool, Self::ReadResource, Self::GetPrompt, Self::Complete];

    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CallTool => TOOLS_CALL,
            Self::ReadResource => RESOURCES_READ,
            Self::GetPrompt => PROMPTS_GET,
            Self::Complete => COMPLETE,
        }
    }
}

/// The definition a request reached, by its position in the catalog's sorted lists
/// ([`Catalog::tools`], [`Catalog::resources`], [`Catalog::templates`],
/// [`Catalog::prompts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Target {
    /// `tools/call` of tool `i`.
    Tool(usize),
    /// `resources/read` of listed resource `i`.
    Resource(usize),
    /// `resources/read` of a uri template `i` matched.
    Template(usize),
    /// `prompts/get` of prompt `i`.
    Prompt(usize),
    /// `completion/complete` of an argument of prompt `i`.
    CompletePrompt(usize),
    /// `completion/complete` of a variable of template `i`.
    CompleteTemplate(usize),
}

/// One slot of the read table.
#[derive(Debug, Clone, Copy)]
struct ReadSlot {
    /// `u32::MAX`: empty.
    tool: u32,
    /// A resource's position, or the resource count plus a template's position.
    target: u32,
    count: u64,
}

const EMPTY: ReadSlot = ReadSlot { tool: u32::MAX, target: 0, count: 0 };

/// The catalog's list lengths: where each kind's counters start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Layout {
    tools: usize,
    resources: usize,
    templates: usize,
    prompts: usize,
}

impl Layout {
    fn of(c: &Catalog) -> Self {
        Self {
            tools: c.tools.len(),
            resources: c.resources.len(),
            templates: c.templates.len(),
            prompts: c.prompts.len(),
        }
    }

    /// Counters: tools, resources, templates, prompts, then completion of prompts and of
    /// templates.
    fn len(self) -> usize {
        self.tools + self.resources + 2 * (self.templates + self.prompts)
    }

    /// The counter of `t`, if `t` is in range.
    fn slot(self, t: Target) -> Option<usize> {
        let (base, i, n) = match t {
            Target::Tool(i) => (0, i, self.tools),
            Target::Resource(i) => (self.tools, i, self.resources),
            Target::Template(i) => (self.tools + self.resources, i, self.templates),
            Target::Prompt(i) => (self.tools + self.resources + self.templates, i, self.prompts),
            Target::CompletePrompt(i) => {
                (self.tools + self.resources + self.templates + self.prompts, i, self.prompts)
            }
            Target::CompleteTemplate(i) => {
                (self.tools + self.resources + self.templates + 2 * self.prompts, i, self.templates)
            }
        };
        (i < n).then_some(base + i)
    }

    /// Every target, in counter order.
    fn targets(self) -> impl Iterator<Item = Target> {
        (0..self.tools)
            .map(Target::Tool)
            .chain((0..self.resources).map(Target::Resource))
            .chain((0..self.templates).map(Target::Template))
            .chain((0..self.prompts).map(Target::Prompt))
            .chain((0..self.prompts).map(Target::CompletePrompt))
            .chain((0..self.templates).map(Target::CompleteTemplate))
    }
}

/// The method, and the kind and name of the definition, of `t` in `catalog`.
fn describe(catalog: &Catalog, t: Target) -> (Method, NodeKind, &str) {
    match t {
        Target::Tool(i) => (Method::CallTool, NodeKind::Tool, &catalog.tools[i].tool.name),
        Target::Resource(i) => (Method::ReadResource, NodeKind::Resource, &catalog.resources[i].resource.uri),
        Target::Template(i) => {
            (Method::ReadResource, NodeKind::Template, &catalog.templates[i].template.uri_template)
        }
        Target::Prompt(i) => (Method::GetPrompt, NodeKind::Prompt, &catalog.prompts[i].prompt.name),
        Target::CompletePrompt(i) => (Method::Complete, NodeKind::Prompt, &catalog.prompts[i].prompt.name),
        Target::CompleteTemplate(i) => {
            (Method::Complete, NodeKind::Template, &catalog.templates[i].template.uri_template)
        }
    }
}

/// The same definition in `catalog`, found by kind and name.
fn find(catalog: &Catalog, method: Method, kind: NodeKind, name: &str) -> Option<Target> {
    let template = || catalog.templates().position(|t| t.uri_template == name);
    Some(match (method, kind) {
        (Method::CallTool, _) => Target::Tool(catalog.tool_index(name)?),
        (Method::ReadResource, NodeKind::Resource) => Target::Resource(catalog.resource_index(name)?),
        (Method::ReadResource, _) => Target::Template(template()?),
        (Method::GetPrompt, _) => Target::Prompt(catalog.prompt_index(name)?),
        (Method::Complete, NodeKind::Prompt) => Target::CompletePrompt(catalog.prompt_index(name)?),
        (Method::Complete, _) => Target::CompleteTemplate(template()?),
    })
}

/// Rows of the call counters: `client`, the principals, `principal:other`.
const ROWS: usize = MAX_PRINCIPALS + 2;

/// The observed counts of one engine (see the module docs): fixed-size, so recording
/// allocates nothing. [`Observed::graph`] renders them as a [`Graph`].
pub struct Observed {
    principals: heapless::Vec<[u8; 32], MAX_PRINCIPALS>,
    /// The row the latest principal was found on.
    last: usize,
    calls: [[u64; 4]; ROWS],
    layout: Layout,
    dispatch: Box<[u64]>,
    reads: Box<[ReadSlot]>,
    read_pairs: usize,
    dropped_reads: u64,
    retired: u64,
    /// Decoded template variables of a reported read's uri (never read).
    captures: Captures,
}

impl core::fmt::Debug for Observed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Observed")
            .field("principals", &self.principals.len())
            .field("read_pairs", &self.read_pairs)
            .field("dropped_reads", &self.dropped_reads)
            .field("retired", &self.retired)
            .finish_non_exhaustive()
    }
}

impl Observed {
    /// Empty counts for `catalog`, every buffer at its final size.
    pub fn new(catalog: &Catalog) -> Self {
        let layout = Layout::of(catalog);
        Self {
            principals: heapless::Vec::new(),
            last: 0,
            calls: [[0; 4]; ROWS],
            layout,
            dispatch: vec![0; layout.len()].into_boxed_slice(),
            reads: vec![EMPTY; MAX_READ_EDGES].into_boxed_slice(),
            read_pairs: 0,
            dropped_reads: 0,
            retired: 0,
            captures: Captures::with_capacity(1024),
        }
    }

    /// Counts one request of `method` by `principal` (the 32-byte digest of an HTTP
    /// principal; `None`: the caller is `client`) that reached `target` (`None`: it was
    /// refused before a definition was found). Allocates nothing.
    #[inline]
    pub fn record(&mut self, principal: Option<&[u8; 32]>, method: Method, target: Option<Target>) {
        let row = match principal {
            None => 0,
            Some(p) => self.row(p),
        };
        let m = method as usize;
        self.calls[row][m] = self.calls[row][m].saturating_add(1);
        if let Some(c) = target.and_then(|t| self.layout.slot(t)).and_then(|i| self.dispatch.get_mut(i)) {
            *c = c.saturating_add(1);
        }
    }

    /// The call row of principal `p`: its own (taken on its first call, while there is
    /// room), else the row of `principal:other`.
    fn row(&mut self, p: &[u8; 32]) -> usize {
        if self.last > 0 && self.principals.get(self.last - 1) == Some(p) {
            return self.last;
        }
        let row = match self.principals.iter().position(|q| q == p) {
            Some(i) => i + 1,
            None if self.principals.push(*p).is_ok() => self.principals.len(),
            None => return ROWS - 1,
        };
        self.last = row;
        row
    }

    /// Counts a read of `uri` that the host reports tool `tool` made (`uri` is matched as
    /// `resources/read` matches it). Returns `false`, counting nothing, when the catalog
    /// has no such tool or resource, and when the pair is new and [`MAX_READ_EDGES`]
    /// pairs are kept already (then `dropped_reads` counts it). Allocates nothing.
    pub fn record_read(&mut self, catalog: &Catalog, tool: &str, uri: &str) -> bool {
        let Some(t) = catalog.tool_index(tool) else { return false };
        let target = match catalog.resolve_uri(uri, &mut self.captures) {
            Some(None) => catalog.resource_index(uri),
            Some(Some(i)) => Some(self.layout.resources + i),
            None => None,
        };
        let Some(target) = target else { return false };
        self.add_read(t, target, 1)
    }

    /// Adds `count` to the read pair (`tool`, `target`).
    fn add_read(&mut self, tool: usize, target: usize, count: u64) -> bool {
        let (tool, target) = (tool as u32, target as u32);
        let mask = self.reads.len() - 1;
        let mut at = (tool.wrapping_mul(0x9E37_79B1) ^ target.wrapping_mul(0x85EB_CA77)) as usize & mask;
        for _ in 0..self.reads.len() {
            let s = &mut self.reads[at];
            if s.tool == tool && s.target == target {
                s.count = s.count.saturating_add(count);
                return true;
            }
            if s.tool == u32::MAX {
                *s = ReadSlot { tool, target, count };
                self.read_pairs += 1;
                return true;
            }
            at = (at + 1) & mask;
        }
        self.dropped_reads = self.dropped_reads.saturating_add(count);
        false
    }

    /// Forgets every count.
    pub fn clear(&mut self) {
        self.principals.clear();
        self.last = 0;
        self.calls = [[0; 4]; ROWS];
        self.dispatch.fill(0);
        self.reads.fill(EMPTY);
        self.read_pairs = 0;
        self.dropped_reads = 0;
        self.retired = 0;
    }

    /// The counts made while `old` was served, moved to the definitions of the same name
    /// in `new` (the rest added to `retired`).
    pub(crate) fn replace_catalog(&mut self, old: &Catalog, new: &Catalog) {
        let layout = Layout::of(new);
        let mut dispatch = vec![0u64; layout.len()].into_boxed_slice();
        for t in self.layout.targets() {
            let Some(&n) = self.layout.slot(t).and_then(|i| self.dispatch.get(i)) else { continue };
            if n == 0 {
                continue;
            }
            let (m, kind, name) = describe(old, t);
            match find(new, m, kind, name).and_then(|t| layout.slot(t)) {
                Some(i) => dispatch[i] += n,
                None => self.retired = self.retired.saturating_add(n),
            }
        }
        let reads: Vec<ReadSlot> = self.reads.iter().copied().filter(|s| s.tool != u32::MAX).collect();
        let old_layout = self.layout;
        self.layout = layout;
        self.dispatch = dispatch;
        self.reads.fill(EMPTY);
        self.read_pairs = 0;
        for s in reads {
            let tool = old.tools.get(s.tool as usize).and_then(|e| new.tool_index(&e.tool.name));
            let target = read_node(old, old_layout, s.target as usize)
                .and_then(|(kind, name)| find(new, Method::ReadResource, kind, name))
                .and_then(|t| match t {
                    Target::Resource(i) => Some(i),
                    Target::Template(i) => Some(layout.resources + i),
                    _ => None,
                });
            match (tool, target) {
                (Some(t), Some(r)) => {
                    self.add_read(t, r, s.count);
                }
                _ => self.retired = self.retired.saturating_add(s.count),
            }
        }
    }

    /// Read pairs that were dropped because the table was full.
    pub fn dropped_reads(&self) -> u64 {
        self.dropped_reads
    }

    /// Counts of definitions that left the catalog.
    pub fn retired(&self) -> u64 {
        self.retired
    }

    /// How many requests of `method` were counted, from every caller.
    pub fn calls(&self, method: Method) -> u64 {
        self.calls.iter().map(|row| row[method as usize]).sum()
    }

    /// The observed graph, named after `catalog` (the catalog the counts were made
    /// for: the engine's current one): every edge counted at least once, with its count.
    pub fn graph(&self, catalog: &Catalog) -> Graph {
        let mut g = Graph::new(GraphKind::Observed);
        let hex8: Vec<String> = self.principals.iter().map(|p| hex(&p[..8])).collect();
        for (row, counts) in self.calls.iter().enumerate() {
            let caller = match row {
                0 => (NodeKind::Client, CLIENT),
                r if r == ROWS - 1 => (NodeKind::Principal, "other"),
                r => match hex8.get(r - 1) {
                    Some(h) => (NodeKind::Principal, h.as_str()),
                    None => continue,
                },
            };
            for m in Method::ALL {
                let n = counts[m as usize];
                if n > 0 {
                    g.edge(caller, EdgeKind::Calls, (NodeKind::Method, m.as_str())).count = Some(n);
                }
            }
        }
        if Layout::of(catalog) == self.layout {
            for t in self.layout.targets() {
                let n = self.layout.slot(t).and_then(|i| self.dispatch.get(i)).copied().unwrap_or(0);
                if n > 0 {
                    let (m, kind, name) = describe(catalog, t);
                    g.edge((NodeKind::Method, m.as_str()), EdgeKind::Dispatches, (kind, name)).count =
                        Some(n);
                }
            }
            for s in self.reads.iter().filter(|s| s.tool != u32::MAX) {
                let tool = &catalog.tools[s.tool as usize].tool.name;
                if let Some(to) = read_node(catalog, self.layout, s.target as usize) {
                    g.edge((NodeKind::Tool, tool), EdgeKind::Reads, to).count = Some(s.count);
                }
            }
        }
        g.set_counter("dropped_reads", self.dropped_reads);
        g.set_counter("retired", self.retired);
        for note in NOTES {
            g.note(note);
        }
        g
    }
}

/// The node of read target `target` (a resource, or a template past the resources).
fn read_node(catalog: &Catalog, layout: Layout, target: usize) -> Option<(NodeKind, &str)> {
    if target < layout.resources {
        Some((NodeKind::Resource, &catalog.resources.get(target)?.resource.uri))
    } else {
        Some((NodeKind::Template, &catalog.templates.get(target - layout.resources)?.template.uri_template))
    }
}
