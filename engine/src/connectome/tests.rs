//! The connectome's unit and property tests: canonical bytes, the four-class diff, the
//! queries with their witness paths, and the observed counts' fixed-size storage.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::catalog::{Catalog, Prompt, PromptArgument, Resource, ResourceTemplate, Tool};
use crate::config::Config;

fn key(from: &str, kind: EdgeKind, to: &str) -> EdgeKey {
    EdgeKey { from: from.into(), kind, to: to.into() }
}

// ------------------------------------------------------------------ canonical bytes

#[test]
fn canonical_bytes_are_rfc8785_json() {
    let mut g = Graph::new(GraphKind::Observed);
    g.edge((NodeKind::Tool, "é\u{1f600}\"q"), EdgeKind::Reads, (NodeKind::Resource, "x://a")).count = Some(2);
    g.note("z last");
    g.note("a first");
    g.set_counter("dropped_reads", 0);
    let bytes = g.canonical_bytes();
    // Members sorted by UTF-16 code units, no whitespace, non-ASCII written as is, only
    // `"` and `\` (and controls) escaped.
    let expected = concat!(
        r#"{"completeness":["a first","z last"],"counters":{"dropped_reads":0},"#,
        r#""edges":[{"count":2,"from":"tool:é😀\"q","kind":"reads","to":"resource:x://a"}],"#,
        r#""format":"mcp-engine/connectome/1","graph":"observed","#,
        r#""nodes":[{"id":"resource:x://a","kind":"resource","name":"x://a"},"#,
        r#"{"id":"tool:é😀\"q","kind":"tool","name":"é😀\"q"}]}"#
    );
    assert_eq!(std::str::from_utf8(&bytes).unwrap(), expected);
    // The hash is the SHA-256 of exactly these bytes.
    use sha2::Digest as _;
    let direct: [u8; 32] = sha2::Sha256::digest(expected.as_bytes()).into();
    assert_eq!(g.sha256(), direct);
    assert_eq!(g.sha256_hex(), graph::hex(&direct));
    // And they parse back to the graph's JSON value.
    let back: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(back, g.to_json());
}

#[test]
fn a_label_a_count_or_a_note_changes_the_hash() {
    let base = || {
        let mut g = Graph::new(GraphKind::Declared);
        g.edge((NodeKind::Tool, "t"), EdgeKind::Performs, (NodeKind::Effect, "e"));
        g
    };
    let h = base().sha256();
    let mut labeled = base();
    labeled.edge((NodeKind::Tool, "t"), EdgeKind::Performs, (NodeKind::Effect, "e")).label = Some("x".into());
    let mut counted = base();
    counted.edge((NodeKind::Tool, "t"), EdgeKind::Performs, (NodeKind::Effect, "e")).count = Some(1);
    let mut noted = base();
    noted.note("n");
    let mut observed = Graph::new(GraphKind::Observed);
    observed.edge((NodeKind::Tool, "t"), EdgeKind::Performs, (NodeKind::Effect, "e"));
    let hashes = [h, labeled.sha256(), counted.sha256(), noted.sha256(), observed.sha256()];
    for (i, a) in hashes.iter().enumerate() {
        for b in &hashes[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

/// One edge to build: ends (kind index, name index), kind index, label and count.
type Spec = ((u8, u8), u8, (u8, u8), Option<u8>, Option<u8>);

const KINDS: [NodeKind; 9] = [
    NodeKind::Client,
    NodeKind::Principal,
    NodeKind::Method,
    NodeKind::Tool,
    NodeKind::Resource,
    NodeKind::Template,
    NodeKind::Prompt,
    NodeKind::Effect,
    NodeKind::Gate,
];
const NAMES: [&str; 5] = ["a", "b", "é", "x://1", "tools/call"];

fn build(specs: &[Spec], notes: &[u8]) -> Graph {
    let mut g = Graph::new(GraphKind::Observed);
    for &((fk, fname), kind, (tk, tname), label, count) in specs {
        let from = (KINDS[fk as usize % 9], NAMES[fname as usize % 5]);
        let to = (KINDS[tk as usize % 9], NAMES[tname as usize % 5]);
        let e = g.edge(from, EdgeKind::ALL[kind as usize % 5], to);
        // The last writer wins: the same graph means the same final values, so each
        // edge's values are a function of its identity here.
        e.label = label.map(|_| format!("{fk}-{tk}"));
        e.count = count.map(|_| u64::from(fname) + u64::from(tname));
    }
    for n in notes {
        g.note(format!("note {n}"));
    }
    g
}

proptest! {
    /// The same graph gives the same bytes in any order of construction.
    #[test]
    fn the_same_graph_gives_the_same_bytes_in_any_order(
        specs in proptest::collection::vec(((0u8..9, 0u8..5), 0u8..5, (0u8..9, 0u8..5), any::<Option<u8>>(), any::<Option<u8>>()), 0..24),
        notes in proptest::collection::vec(0u8..4, 0..4),
        seed in any::<u64>(),
    ) {
        // Make each edge's label and count a function of its identity, so that any
        // order describes the same graph.
        let mut specs = specs;
        for i in 0..specs.len() {
            let (a, k, b, ..) = specs[i];
            if let Some(first) = specs.iter().position(|s| (s.0, s.1, s.2) == (a, k, b)) {
                specs[i].3 = specs[first].3;
                specs[i].4 = specs[first].4;
            }
        }
        let g = build(&specs, &notes);
        let mut shuffled = specs.clone();
        let mut notes2 = notes.clone();
        // A deterministic shuffle from the seed.
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        notes2.reverse();
        let h = build(&shuffled, &notes2);
        prop_assert_eq!(&g, &h);
        prop_assert_eq!(g.canonical_bytes(), h.canonical_bytes());
        prop_assert_eq!(g.sha256(), h.sha256());
        // And the bytes are the canonical form of the graph's value, whatever it holds.
        let reparsed: serde_json::Value = serde_json::from_slice(&g.canonical_bytes()).unwrap();
        prop_assert_eq!(serde_json_canonicalizer::to_vec(&reparsed).unwrap(), g.canonical_bytes());
    }
}

// ------------------------------------------------------------------ declared

fn catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("pay"))
        .tool(Tool::new("refund"))
        .tool(Tool::new("report"))
        .resource(Resource::new("db://orders", "orders"))
        .resource(Resource::new("db://users", "users"))
        .template(ResourceTemplate::new("db://orders/{id}", "order"))
        .prompt(Prompt::new("summary").argument(PromptArgument::required("topic")))
        .prompt(Prompt::new("plain"))
        .build()
        .unwrap()
}

fn declarations() -> Declarations {
    Declarations::new()
        .reads("pay", "db://orders/17")
        .reads("report", "db://orders")
        .performs("pay", "payment")
        .labeled("irreversible")
        .gated_by("pay", "approval")
        .performs("refund", "payment")
        .performs("report", "email")
}

#[test]
fn the_declared_graph_has_the_catalog_the_declarations_and_the_note() {
    let mut config = Config::new("t", "1");
    config.completions(true);
    let g = declared(&catalog(), &config, &declarations()).unwrap();
    let has = |from: &str, kind, to: &str| g.get_edge(&key(from, kind, to)).is_some();
    for m in ["tools/call", "resources/read", "prompts/get", "completion/complete"] {
        assert!(has("client:client", EdgeKind::Calls, &format!("method:{m}")), "{m}");
    }
    for t in ["pay", "refund", "report"] {
        assert!(has("method:tools/call", EdgeKind::Dispatches, &format!("tool:{t}")));
    }
    assert!(has("method:resources/read", EdgeKind::Dispatches, "template:db://orders/{id}"));
    assert!(has("method:completion/complete", EdgeKind::Dispatches, "prompt:summary"));
    assert!(has("method:completion/complete", EdgeKind::Dispatches, "template:db://orders/{id}"));
    assert!(!has("method:completion/complete", EdgeKind::Dispatches, "prompt:plain"), "no arguments");
    // A concrete uri a template matches reaches the template.
    assert!(has("tool:pay", EdgeKind::Reads, "template:db://orders/{id}"));
    assert!(has("tool:report", EdgeKind::Reads, "resource:db://orders"));
    assert!(has("tool:pay", EdgeKind::GatedBy, "gate:approval"));
    let pay = g.get_edge(&key("tool:pay", EdgeKind::Performs, "effect:payment")).unwrap();
    assert_eq!(pay.label.as_deref(), Some("irreversible"));
    assert_eq!(pay.count, None, "declared edges carry no count");
    assert!(g.notes().any(|n| n.contains("effects and gates")), "the completeness note");
    assert_eq!(g.kind(), GraphKind::Declared);
    // Completions off: no completion method.
    let g = declared(&catalog(), &Config::new("t", "1"), &declarations()).unwrap();
    assert!(g.get_node("method:completion/complete").is_none());
}

#[test]
fn a_declaration_of_what_the_catalog_lacks_is_refused() {
    let c = catalog();
    let cfg = Config::new("t", "1");
    let err = |d: Declarations| declared(&c, &cfg, &d).unwrap_err();
    assert_eq!(err(Declarations::new().performs("nope", "x")), DeclarationError::UnknownTool("nope".into()));
    assert_eq!(
        err(Declarations::new().reads("pay", "db://nowhere")),
        DeclarationError::UnknownResource { tool: "pay".into(), uri: "db://nowhere".into() }
    );
    assert_eq!(
        err(Declarations::new().gated_by("pay", "")),
        DeclarationError::EmptyName { tool: "pay".into() }
    );
    // Leniently (after a catalog replacement), it is left out and noted.
    let g = declared_lenient(&c, &cfg, &Declarations::new().performs("gone", "x").performs("pay", "payment"));
    assert!(g.get_node("effect:x").is_none() && g.get_node("effect:payment").is_some());
    assert!(g.notes().any(|n| n.contains("`gone`")));
}

// ------------------------------------------------------------------ observed

#[test]
fn recording_counts_callers_methods_definitions_and_reads() {
    let c = catalog();
    let mut o = Observed::new(&c);
    let alice = [1u8; 32];
    o.record(None, Method::CallTool, Some(Target::Tool(0)));
    o.record(None, Method::CallTool, Some(Target::Tool(0)));
    o.record(Some(&alice), Method::CallTool, Some(Target::Tool(2)));
    o.record(Some(&alice), Method::ReadResource, Some(Target::Template(0)));
    o.record(None, Method::CallTool, None); // refused before a definition was found
    o.record(None, Method::Complete, Some(Target::CompletePrompt(1)));
    assert!(o.record_read(&c, "pay", "db://orders/9"));
    assert!(o.record_read(&c, "pay", "db://orders/10"));
    assert!(o.record_read(&c, "report", "db://users"));
    assert!(!o.record_read(&c, "nope", "db://users"));
    assert!(!o.record_read(&c, "pay", "db://nowhere"));
    assert_eq!(o.calls(Method::CallTool), 4);
    let g = o.graph(&c);
    let count = |from: &str, kind, to: &str| g.get_edge(&key(from, kind, to)).and_then(|e| e.count);
    assert_eq!(count("client:client", EdgeKind::Calls, "method:tools/call"), Some(3));
    assert_eq!(count("principal:0101010101010101", EdgeKind::Calls, "method:tools/call"), Some(1));
    assert_eq!(count("principal:0101010101010101", EdgeKind::Calls, "method:resources/read"), Some(1));
    assert_eq!(count("method:tools/call", EdgeKind::Dispatches, "tool:pay"), Some(2));
    assert_eq!(count("method:tools/call", EdgeKind::Dispatches, "tool:report"), Some(1));
    assert_eq!(count("method:tools/call", EdgeKind::Dispatches, "tool:refund"), None, "never counted");
    assert_eq!(count("method:resources/read", EdgeKind::Dispatches, "template:db://orders/{id}"), Some(1));
    assert_eq!(count("method:completion/complete", EdgeKind::Dispatches, "prompt:summary"), Some(1));
    assert_eq!(count("tool:pay", EdgeKind::Reads, "template:db://orders/{id}"), Some(2));
    assert_eq!(count("tool:report", EdgeKind::Reads, "resource:db://users"), Some(1));
    assert_eq!(g.edges().len(), 10, "four calls, four dispatches, two reads");
    o.clear();
    assert_eq!(o.graph(&c).edges().len(), 0);
}

#[test]
fn principals_past_the_slots_share_one_row() {
    let c = catalog();
    let mut o = Observed::new(&c);
    for i in 0..MAX_PRINCIPALS + 5 {
        let mut p = [0u8; 32];
        p[..8].copy_from_slice(&(i as u64).to_be_bytes());
        o.record(Some(&p), Method::CallTool, Some(Target::Tool(1)));
        o.record(Some(&p), Method::CallTool, Some(Target::Tool(1)));
    }
    let g = o.graph(&c);
    let callers: Vec<_> = g.nodes().filter(|(_, n)| n.kind == NodeKind::Principal).collect();
    assert_eq!(callers.len(), MAX_PRINCIPALS + 1);
    let other = g.get_edge(&key("principal:other", EdgeKind::Calls, "method:tools/call")).unwrap();
    assert_eq!(other.count, Some(10), "five principals past the slots, twice each");
    let first = g.get_edge(&key("principal:0000000000000000", EdgeKind::Calls, "method:tools/call"));
    assert_eq!(first.unwrap().count, Some(2));
}

#[test]
fn a_full_read_table_drops_new_pairs_and_counts_them() {
    // Enough tools and resources for more distinct pairs than the table holds.
    let mut b = Catalog::builder();
    for i in 0..40 {
        b = b
            .tool(Tool::new(format!("t{i:02}")))
            .resource(Resource::new(format!("r://{i:02}"), format!("r{i}")));
    }
    let c = b.build().unwrap();
    let mut o = Observed::new(&c);
    let mut kept = 0;
    for t in 0..40 {
        for r in 0..40 {
            kept += usize::from(o.record_read(&c, &format!("t{t:02}"), &format!("r://{r:02}")));
        }
    }
    assert_eq!(kept, MAX_READ_EDGES);
    assert_eq!(o.dropped_reads(), 1600 - MAX_READ_EDGES as u64);
    // A pair already kept is still counted.
    let (t, r) = (0..40 * 40)
        .map(|i| (format!("t{:02}", i / 40), format!("r://{:02}", i % 40)))
        .find(|(t, r)| {
            o.graph(&c)
                .get_edge(&key(&format!("tool:{t}"), EdgeKind::Reads, &format!("resource:{r}")))
                .is_some()
        })
        .unwrap();
    assert!(o.record_read(&c, &t, &r));
    let g = o.graph(&c);
    assert_eq!(g.edges().filter(|(k, _)| k.kind == EdgeKind::Reads).count(), MAX_READ_EDGES);
    assert_eq!(g.counters().find(|(n, _)| *n == "dropped_reads").map(|(_, v)| v), Some(576));
}

#[test]
fn counts_follow_their_definitions_across_a_catalog_replacement() {
    let old = catalog();
    let mut o = Observed::new(&old);
    o.record(None, Method::CallTool, Some(Target::Tool(0))); // pay
    o.record(None, Method::CallTool, Some(Target::Tool(1))); // refund
    o.record(None, Method::ReadResource, Some(Target::Resource(1))); // db://users
    assert!(o.record_read(&old, "pay", "db://users"));
    assert!(o.record_read(&old, "refund", "db://users"));
    // The new catalog drops `refund` and adds tools sorted before `pay`.
    let new = Catalog::builder()
        .tool(Tool::new("aaa"))
        .tool(Tool::new("pay"))
        .tool(Tool::new("report"))
        .resource(Resource::new("db://a", "a"))
        .resource(Resource::new("db://users", "users"))
        .build()
        .unwrap();
    o.replace_catalog(&old, &new);
    let g = o.graph(&new);
    let count = |from: &str, kind, to: &str| g.get_edge(&key(from, kind, to)).and_then(|e| e.count);
    assert_eq!(count("method:tools/call", EdgeKind::Dispatches, "tool:pay"), Some(1));
    assert_eq!(count("method:tools/call", EdgeKind::Dispatches, "tool:aaa"), None);
    assert_eq!(count("method:resources/read", EdgeKind::Dispatches, "resource:db://users"), Some(1));
    assert_eq!(count("tool:pay", EdgeKind::Reads, "resource:db://users"), Some(1));
    assert_eq!(o.retired(), 2, "refund's call and its read");
    // Calls are the callers', whatever the catalog.
    assert_eq!(count("client:client", EdgeKind::Calls, "method:tools/call"), Some(2));
}

// ------------------------------------------------------------------ diff

#[test]
fn every_edge_falls_in_exactly_one_of_four_classes() {
    let mut d = Graph::new(GraphKind::Declared);
    d.edge((NodeKind::Method, "tools/call"), EdgeKind::Dispatches, (NodeKind::Tool, "a"));
    d.edge((NodeKind::Method, "tools/call"), EdgeKind::Dispatches, (NodeKind::Tool, "b"));
    d.edge((NodeKind::Tool, "a"), EdgeKind::Reads, (NodeKind::Resource, "r")).label = Some("pii".into());
    d.edge((NodeKind::Tool, "a"), EdgeKind::Performs, (NodeKind::Effect, "mail"));
    let mut o = Graph::new(GraphKind::Observed);
    o.edge((NodeKind::Method, "tools/call"), EdgeKind::Dispatches, (NodeKind::Tool, "a")).count = Some(4);
    o.edge((NodeKind::Tool, "a"), EdgeKind::Reads, (NodeKind::Resource, "r")).count = Some(1);
    o.edge((NodeKind::Tool, "a"), EdgeKind::Reads, (NodeKind::Resource, "s")).count = Some(2);
    let x = diff(&d, &o);
    let class = |f: &str, k, t: &str| x.class_of(&key(f, k, t));
    assert_eq!(
        class("method:tools/call", EdgeKind::Dispatches, "tool:a"),
        Some(EdgeClass::DeclaredAndObserved)
    );
    assert_eq!(
        class("method:tools/call", EdgeKind::Dispatches, "tool:b"),
        Some(EdgeClass::DeclaredNeverObserved)
    );
    assert_eq!(class("tool:a", EdgeKind::Performs, "effect:mail"), Some(EdgeClass::DeclaredNeverObserved));
    assert_eq!(class("tool:a", EdgeKind::Reads, "resource:s"), Some(EdgeClass::ObservedUndeclared));
    assert_eq!(class("tool:a", EdgeKind::Reads, "resource:r"), Some(EdgeClass::Relabeled));
    assert_eq!(class("tool:b", EdgeKind::Reads, "resource:r"), None);
    // Exactly one class each: the union of both graphs' edges, no more.
    let union: std::collections::BTreeSet<_> = d.edges().chain(o.edges()).map(|(k, _)| k.clone()).collect();
    assert_eq!(x.edges().map(|(k, _)| k.clone()).collect::<std::collections::BTreeSet<_>>(), union);
    let all = x.coverage(None);
    assert_eq!(
        (
            all.declared,
            all.observed,
            all.declared_and_observed,
            all.declared_never_observed,
            all.observed_undeclared,
            all.relabeled
        ),
        (4, 3, 1, 2, 1, 1)
    );
    let reads = x.coverage(Some(EdgeKind::Reads));
    assert_eq!((reads.declared, reads.observed, reads.relabeled, reads.observed_undeclared), (1, 2, 1, 1));
    // The export lists each class and the counts.
    let v = x.to_json();
    assert_eq!(v["graph"], "diff");
    assert_eq!(v["declared_sha256"], json!(d.sha256_hex()));
    assert_eq!(v["observed_sha256"], json!(o.sha256_hex()));
    assert_eq!(v["classes"]["relabeled"][0]["declared_label"], "pii");
    assert_eq!(v["classes"]["relabeled"][0]["count"], 1);
    assert_eq!(v["classes"]["observed_undeclared"][0]["to"], "resource:s");
    assert_eq!(v["classes"]["declared_never_observed"].as_array().unwrap().len(), 2);
    assert_eq!(v["coverage"]["by_kind"]["dispatches"]["declared_never_observed"], 1);
    assert_eq!(x.canonical_bytes(), graph::canonical(&v));
}

proptest! {
    /// Whatever the two graphs, each edge of either lands in exactly one class, and the
    /// coverage counts add up.
    #[test]
    fn the_classes_partition_both_graphs(
        a in proptest::collection::vec(((0u8..9, 0u8..5), 0u8..5, (0u8..9, 0u8..5), any::<Option<u8>>(), any::<Option<u8>>()), 0..16),
        b in proptest::collection::vec(((0u8..9, 0u8..5), 0u8..5, (0u8..9, 0u8..5), any::<Option<u8>>(), any::<Option<u8>>()), 0..16),
    ) {
        let (d, o) = (build(&a, &[]), build(&b, &[]));
        let x = diff(&d, &o);
        for (k, e) in x.edges() {
            let (in_d, in_o) = (d.get_edge(k), o.get_edge(k));
            let expected = match (in_d, in_o) {
                (Some(p), Some(q)) if p.label == q.label => EdgeClass::DeclaredAndObserved,
                (Some(_), Some(_)) => EdgeClass::Relabeled,
                (Some(_), None) => EdgeClass::DeclaredNeverObserved,
                (None, Some(_)) => EdgeClass::ObservedUndeclared,
                (None, None) => unreachable!("an edge of neither graph"),
            };
            prop_assert_eq!(e.class, expected);
        }
        let c = x.coverage(None);
        prop_assert_eq!(c.declared as usize, d.edges().len());
        prop_assert_eq!(c.observed as usize, o.edges().len());
        prop_assert_eq!(
            (c.declared_and_observed + c.declared_never_observed + c.observed_undeclared + c.relabeled) as usize,
            x.edges().len()
        );
        let by_kind: u64 = EdgeKind::ALL.iter().map(|k| x.coverage(Some(*k)).declared).sum();
        prop_assert_eq!(by_kind, c.declared);
    }
}

// ------------------------------------------------------------------ queries

/// client -> tools/call -> pay (gated by approval) -> payment;
/// tools/call -> refund -> payment; tools/call -> report -> email (gated by approval and
/// audit) ; tools/call -> wipe -> delete (gated by audit only).
fn flow() -> Graph {
    let mut g = Graph::new(GraphKind::Declared);
    let call = (NodeKind::Method, "tools/call");
    g.edge((NodeKind::Client, "client"), EdgeKind::Calls, call);
    for t in ["pay", "refund", "report", "wipe"] {
        g.edge(call, EdgeKind::Dispatches, (NodeKind::Tool, t));
    }
    g.edge((NodeKind::Tool, "pay"), EdgeKind::Performs, (NodeKind::Effect, "payment"));
    g.edge((NodeKind::Tool, "refund"), EdgeKind::Performs, (NodeKind::Effect, "payment"));
    g.edge((NodeKind::Tool, "report"), EdgeKind::Reads, (NodeKind::Resource, "db://orders"));
    g.edge((NodeKind::Tool, "report"), EdgeKind::Performs, (NodeKind::Effect, "email"));
    g.edge((NodeKind::Tool, "wipe"), EdgeKind::Performs, (NodeKind::Effect, "delete"));
    g.edge((NodeKind::Tool, "pay"), EdgeKind::GatedBy, (NodeKind::Gate, "approval"));
    g.edge((NodeKind::Tool, "report"), EdgeKind::GatedBy, (NodeKind::Gate, "approval"));
    g.edge((NodeKind::Tool, "report"), EdgeKind::GatedBy, (NodeKind::Gate, "audit"));
    g.edge((NodeKind::Tool, "wipe"), EdgeKind::GatedBy, (NodeKind::Gate, "audit"));
    g.node(NodeKind::Effect, "unreachable");
    g
}

#[test]
fn reachability_follows_the_edges_but_not_gates() {
    let g = flow();
    assert!(g.reaches("client:client", "effect:payment"));
    assert!(g.reaches("client:client", "resource:db://orders"));
    assert!(g.reaches("tool:pay", "tool:pay"), "a node reaches itself");
    assert!(!g.reaches("client:client", "effect:unreachable"));
    assert!(!g.reaches("tool:pay", "effect:email"), "edges have a direction");
    assert!(!g.reaches("client:client", "gate:approval"), "a gate is no step on a path");
    assert!(!g.reaches("client:client", "effect:nonexistent"));
}

#[test]
fn a_path_avoiding_gates_is_a_witness_of_the_graphs_own_edges() {
    let g = flow();
    let path = g.reach_avoiding_gates("client:client", "effect:payment").unwrap();
    assert_eq!(
        path,
        [
            key("client:client", EdgeKind::Calls, "method:tools/call"),
            key("method:tools/call", EdgeKind::Dispatches, "tool:refund"),
            key("tool:refund", EdgeKind::Performs, "effect:payment"),
        ]
    );
    for step in &path {
        assert!(g.get_edge(step).is_some(), "the witness uses the graph's own edges: {step:?}");
    }
    for w in path.windows(2) {
        assert_eq!(w[0].to, w[1].from, "the steps join");
    }
    // Every path to email or delete crosses a gate.
    assert_eq!(g.reach_avoiding_gates("client:client", "effect:email"), None);
    assert_eq!(g.reach_avoiding_gates("client:client", "effect:delete"), None);
    // From a gated node there is none; to itself, the empty path.
    assert_eq!(g.reach_avoiding_gates("tool:pay", "effect:payment"), None);
    assert_eq!(g.reach_avoiding_gates("tool:refund", "tool:refund"), Some(vec![]));
    assert_eq!(g.reach_avoiding_gates("client:client", "effect:unreachable"), None);
}

#[test]
fn a_gate_dominates_what_every_path_reaches_through_it() {
    let g = flow();
    assert!(g.gate_dominates("client:client", "gate:approval", "effect:email"));
    assert!(g.gate_dominates("client:client", "gate:audit", "effect:email"));
    assert!(g.gate_dominates("client:client", "gate:audit", "effect:delete"));
    assert!(!g.gate_dominates("client:client", "gate:approval", "effect:delete"));
    assert!(!g.gate_dominates("client:client", "gate:approval", "effect:payment"), "refund bypasses it");
    assert!(!g.gate_dominates("client:client", "gate:approval", "effect:unreachable"), "no path at all");
    assert!(g.gate_dominates("tool:pay", "gate:approval", "effect:payment"), "starting behind the gate");
    // Once refund is gated as well, approval dominates payment.
    let mut h = flow();
    h.edge((NodeKind::Tool, "refund"), EdgeKind::GatedBy, (NodeKind::Gate, "approval"));
    assert!(h.gate_dominates("client:client", "gate:approval", "effect:payment"));
    assert_eq!(h.reach_avoiding_gates("client:client", "effect:payment"), None);
}

#[test]
fn the_nodes_every_path_crosses_are_the_dominators() {
    let g = flow();
    assert_eq!(
        g.crossed_by_every_path("client:client", "effect:email").unwrap(),
        ["client:client", "method:tools/call", "tool:report", "effect:email"]
    );
    // Two tools perform payment: only the method is on every path.
    assert_eq!(
        g.crossed_by_every_path("client:client", "effect:payment").unwrap(),
        ["client:client", "method:tools/call", "effect:payment"]
    );
    assert_eq!(g.crossed_by_every_path("client:client", "effect:unreachable"), None);
    assert_eq!(g.crossed_by_every_path("client:client", "client:client").unwrap(), ["client:client"]);
}

#[test]
fn the_queries_work_on_the_declared_graph_of_a_catalog() {
    let g = declared(&catalog(), &Config::new("t", "1"), &declarations()).unwrap();
    let witness = g.reach_avoiding_gates("client:client", "effect:payment").unwrap();
    assert_eq!(witness[1].to, "tool:refund");
    assert!(!g.gate_dominates("client:client", "gate:approval", "effect:payment"));
    assert!(g.reach_avoiding_gates("client:client", "effect:email").is_some());
    assert_eq!(
        g.crossed_by_every_path("client:client", "effect:email").unwrap(),
        ["client:client", "method:tools/call", "tool:report", "effect:email"]
    );
}

// ------------------------------------------------------------------ queries, by property

/// A graph of eight tools (`tool:0` .. `tool:7`) with path edges between them (`steps`:
/// from, kind, to) and gates (`gates`: the tool, one of three gates).
fn random_flow(steps: &[(u8, u8, u8)], gates: &[(u8, u8)]) -> Graph {
    const PATH_KINDS: [EdgeKind; 4] =
        [EdgeKind::Calls, EdgeKind::Dispatches, EdgeKind::Reads, EdgeKind::Performs];
    let names = ["0", "1", "2", "3", "4", "5", "6", "7"];
    let mut g = Graph::new(GraphKind::Declared);
    for n in names {
        g.node(NodeKind::Tool, n);
    }
    for &(a, kind, b) in steps {
        let (a, b) = (names[a as usize % 8], names[b as usize % 8]);
        g.edge((NodeKind::Tool, a), PATH_KINDS[kind as usize % 4], (NodeKind::Tool, b));
    }
    for &(t, gate) in gates {
        g.edge(
            (NodeKind::Tool, names[t as usize % 8]),
            EdgeKind::GatedBy,
            (NodeKind::Gate, ["g0", "g1", "g2"][gate as usize % 3]),
        );
    }
    g
}

/// The reference: breadth-first search over the graph's own edge list (no petgraph),
/// following every kind but `gated_by`, never entering a node `blocked` says.
fn bfs(g: &Graph, from: &str, to: &str, blocked: &dyn Fn(&str) -> bool) -> bool {
    if g.get_node(from).is_none() || g.get_node(to).is_none() || blocked(from) || blocked(to) {
        return false;
    }
    let mut seen = std::collections::BTreeSet::from([from.to_owned()]);
    let mut queue = std::collections::VecDeque::from([from.to_owned()]);
    while let Some(n) = queue.pop_front() {
        if n == to {
            return true;
        }
        for (k, _) in g.edges() {
            if k.kind != EdgeKind::GatedBy && k.from == n && !blocked(&k.to) && seen.insert(k.to.clone()) {
                queue.push_back(k.to.clone());
            }
        }
    }
    false
}

/// Whether node `n` is gated (by `gate`, or by any with `None`), from the edge list.
fn gated_by(g: &Graph, n: &str, gate: Option<&str>) -> bool {
    g.edges().any(|(k, _)| k.kind == EdgeKind::GatedBy && k.from == n && gate.is_none_or(|x| k.to == x))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_queries_agree_with_a_search_over_the_edge_list(
        steps in proptest::collection::vec((0u8..8, 0u8..4, 0u8..8), 0..20),
        gates in proptest::collection::vec((0u8..8, 0u8..3), 0..4),
    ) {
        let g = random_flow(&steps, &gates);
        let ids: Vec<String> = g.nodes().map(|(id, _)| id.to_owned()).filter(|id| id.starts_with("tool:")).collect();
        let none = |_: &str| false;
        for a in &ids {
            for b in &ids {
                let reachable = bfs(&g, a, b, &none);
                prop_assert_eq!(g.reaches(a, b), reachable, "reaches {} {}", a, b);

                // A witness: the graph's own path edges, chained from a to b, through no gated node.
                match g.reach_avoiding_gates(a, b) {
                    Some(path) => {
                        let mut at = a.clone();
                        for step in &path {
                            prop_assert!(g.get_edge(step).is_some(), "{:?} is an edge of the graph", step);
                            prop_assert!(step.kind != EdgeKind::GatedBy);
                            prop_assert_eq!(&step.from, &at);
                            prop_assert!(!gated_by(&g, &step.from, None) && !gated_by(&g, &step.to, None));
                            at = step.to.clone();
                        }
                        prop_assert_eq!(&at, b, "the path ends at the target");
                        prop_assert!(!gated_by(&g, a, None));
                    }
                    None => prop_assert!(
                        !bfs(&g, a, b, &|n| gated_by(&g, n, None)),
                        "a gate-free path {} -> {} exists", a, b
                    ),
                }

                // Gate dominance: reachable, and not once the gate's nodes are out.
                for gate in ["gate:g0", "gate:g1", "gate:g2"] {
                    let expected = reachable
                        && (gated_by(&g, a, Some(gate))
                            || gated_by(&g, b, Some(gate))
                            || !bfs(&g, a, b, &|n| gated_by(&g, n, Some(gate))));
                    prop_assert_eq!(g.gate_dominates(a, gate, b), expected, "{} dominates {} -> {}", gate, a, b);
                }

                // Dominators: from a to b, each on every path (b unreachable without it).
                match g.crossed_by_every_path(a, b) {
                    Some(chain) => {
                        prop_assert!(reachable);
                        prop_assert_eq!(chain.first(), Some(a));
                        prop_assert_eq!(chain.last(), Some(b));
                        for d in chain.iter().filter(|d| *d != a && *d != b) {
                            prop_assert!(!bfs(&g, a, b, &|n| n == d), "{} -> {} avoids {}", a, b, d);
                        }
                        // And none is missing: a path avoids every other node.
                        for n in ids.iter().filter(|n| !chain.contains(n)) {
                            prop_assert!(bfs(&g, a, b, &|m| m == n), "every {} -> {} path crosses {}", a, b, n);
                        }
                    }
                    None => prop_assert!(!reachable, "{} reaches {} but has no dominators", a, b),
                }
            }
        }
    }
}
