//! The connectome through the engine: what the dispatcher counts (callers, methods,
//! definitions, reported reads), the `connectome://` resources answered with their
//! canonical bytes, and a transcript showing that adding them changes nothing on the wire
//! but their own list entries.

use mcp_engine::Commands;
use mcp_engine::connectome::{self, DeclarationError, Declarations, EdgeClass, EdgeKey, EdgeKind, Graph};
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, Principal, Verdict};
use mcp_engine::{Catalog, Config, Engine, Tool};
use mcp_fixture as everything;
use mcp_tests::peer::{Peer, WIRES, Wire};
use mcp_tests::{drive, legacy_open, lines, modern, wire};
use serde_json::{Value, json};

fn key(from: &str, kind: EdgeKind, to: &str) -> EdgeKey {
    EdgeKey { from: from.into(), kind, to: to.into() }
}

fn count(g: &Graph, from: &str, kind: EdgeKind, to: &str) -> Option<u64> {
    g.get_edge(&key(from, kind, to)).and_then(|e| e.count)
}

/// The fixture's catalog with its connectome items (the demos' `--connectome`).
fn demo() -> everything::Dynamic {
    everything::Dynamic { connectome: true, ..Default::default() }
}

fn engine() -> Engine {
    let mut e = Engine::new(everything::config(), everything::catalog_with(demo()));
    e.connectome().set_declarations(everything::connectome::declarations(demo())).unwrap();
    e
}

fn call(id: u32, name: &str, arguments: Value) -> String {
    modern(id, "tools/call", json!({ "name": name, "arguments": arguments }))
}

fn read(id: u32, uri: &str) -> String {
    modern(id, "resources/read", json!({ "uri": uri }))
}

#[test]
fn the_dispatcher_counts_callers_methods_and_the_definitions_reached() {
    let mut e = engine();
    let input = [
        call(1, "echo", json!({ "text": "a" })),
        call(2, "echo", json!({ "text": "b" })),
        call(3, "no_such_tool", json!({})),
        call(4, "echo", json!({ "wrong": 1 })), // answered at once: isError, no dispatch
        read(5, "test://static-text"),
        read(6, "test://template/42/data"),
        read(7, "test://nowhere"),
        modern(8, "prompts/get", json!({ "name": "test_simple_prompt" })),
        modern(
            9,
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" },
                    "argument": { "name": "arg1", "value": "te" } }),
        ),
        modern(10, "tools/list", json!({})),
    ]
    .concat();
    let out = lines(&drive(&mut e, input.as_bytes(), &[usize::MAX]));
    assert_eq!(out.len(), 10);
    // The host reports what its tools read.
    assert!(e.connectome().report_read(everything::connectome::READ_TOOL, "test://template/7/data"));
    assert!(e.connectome().report_read(everything::connectome::READ_TOOL, "test://template/8/data"));
    assert!(
        !e.connectome().report_read(everything::connectome::READ_TOOL, "test://nowhere"),
        "no such resource"
    );
    assert!(!e.connectome().report_read("no_such_tool", "test://static-text"), "no such tool");

    let g = e.connectome().observed();
    assert_eq!(count(&g, "client:client", EdgeKind::Calls, "method:tools/call"), Some(4));
    assert_eq!(count(&g, "client:client", EdgeKind::Calls, "method:resources/read"), Some(3));
    assert_eq!(count(&g, "client:client", EdgeKind::Calls, "method:prompts/get"), Some(1));
    assert_eq!(count(&g, "client:client", EdgeKind::Calls, "method:completion/complete"), Some(1));
    assert_eq!(count(&g, "method:tools/call", EdgeKind::Dispatches, "tool:echo"), Some(2));
    let template = "template:test://template/{id}/data";
    assert_eq!(
        count(&g, "method:resources/read", EdgeKind::Dispatches, "resource:test://static-text"),
        Some(1)
    );
    assert_eq!(count(&g, "method:resources/read", EdgeKind::Dispatches, template), Some(1));
    assert_eq!(count(&g, "method:prompts/get", EdgeKind::Dispatches, "prompt:test_simple_prompt"), Some(1));
    let completed = "prompt:test_prompt_with_arguments";
    assert_eq!(count(&g, "method:completion/complete", EdgeKind::Dispatches, completed), Some(1));
    assert_eq!(count(&g, "tool:test_read_resource", EdgeKind::Reads, template), Some(2));
    assert!(g.get_node("method:tools/list").is_none(), "lists reach no definition");
    assert_eq!(g.edges().len(), 10, "{:#?}", g.edges().collect::<Vec<_>>());
    assert_eq!(e.connectome().counts().calls(connectome::Method::CallTool), 4);

    // The diff sees what was used and what was not.
    let diff = e.connectome().diff();
    let class = |f: &str, k, t: &str| diff.class_of(&key(f, k, t));
    assert_eq!(
        class("method:tools/call", EdgeKind::Dispatches, "tool:echo"),
        Some(EdgeClass::DeclaredAndObserved)
    );
    assert_eq!(
        class("method:tools/call", EdgeKind::Dispatches, "tool:test_sampling"),
        Some(EdgeClass::DeclaredNeverObserved)
    );
    assert_eq!(
        class("tool:test_read_resource", EdgeKind::Reads, template),
        Some(EdgeClass::DeclaredAndObserved)
    );
    assert_eq!(diff.coverage(None).observed_undeclared, 0, "everything seen was declared");

    e.connectome().clear_observed();
    assert_eq!(e.connectome().observed().edges().len(), 0);
}

#[test]
fn declarations_must_fit_the_catalog_and_survive_its_replacement() {
    let mut e = engine();
    let err = e.connectome().set_declarations(Declarations::new().performs("nope", "x")).unwrap_err();
    assert_eq!(err, DeclarationError::UnknownTool("nope".into()));
    // The good declarations stay.
    assert!(e.connectome().declared().get_node("effect:catalog_replacement").is_some());
    let input = call(1, "echo", json!({ "text": "a" }));
    drive(&mut e, input.as_bytes(), &[usize::MAX]);
    // A replacement without `test_sampling`: its declared edges are left out and noted,
    // and the count of echo follows echo.
    let mut b = Catalog::builder();
    for t in e.catalog().tools().filter(|t| t.name != "test_sampling") {
        b = b.tool(t.clone());
    }
    for r in e.catalog().resources() {
        b = b.resource(r.clone());
    }
    for t in e.catalog().templates() {
        b = b.template(t.clone());
    }
    for p in e.catalog().prompts() {
        b = b.prompt(p.clone());
    }
    // The skills stay: a replacement may not drop the last one (the extension was declared).
    b = b.skills(e.catalog().skills().cloned());
    e.replace_catalog(b.tool(Tool::new("aaa_first")).build().unwrap()).unwrap();
    let declared = e.connectome().declared();
    assert!(declared.get_node("tool:test_sampling").is_none());
    assert!(
        declared.notes().any(|n| n.contains("test_sampling")),
        "{:?}",
        declared.notes().collect::<Vec<_>>()
    );
    let g = e.connectome().observed();
    assert_eq!(count(&g, "method:tools/call", EdgeKind::Dispatches, "tool:echo"), Some(1));
    assert_eq!(count(&g, "method:tools/call", EdgeKind::Dispatches, "tool:aaa_first"), None);
}

#[test]
fn the_resources_answer_their_canonical_bytes() {
    for wire in WIRES {
        let host: wire::Host = Box::new(everything::respond);
        let mut p = Peer::new(wire, everything::config(), everything::catalog_with(demo()), host);
        let declared = everything::connectome::declarations(demo());
        match wire {
            Wire::Stdio => p.stdio_engine().connectome().set_declarations(declared).unwrap(),
            Wire::Http => p.http_engine().connectome().set_declarations(declared).unwrap(),
        }
        let (_, r) = p.call(1, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } }));
        assert_eq!(r["result"]["content"][0]["text"], "x");
        let text = |r: &Value| r["result"]["contents"][0]["text"].as_str().expect("text").to_owned();
        let (status, r) = p.call(2, "resources/read", json!({ "uri": connectome::DECLARED_URI }));
        assert_eq!(status, 200);
        let contents = &r["result"]["contents"][0];
        assert_eq!(
            (&contents["uri"], &contents["mimeType"]),
            (&json!("connectome://declared"), &json!("application/json"))
        );
        assert_eq!(r["result"]["resultType"], "complete", "the 2026-07-28 envelope");
        let expected = match wire {
            Wire::Stdio => p.stdio_engine().connectome().declared(),
            Wire::Http => p.http_engine().connectome().declared(),
        };
        assert_eq!(text(&r).as_bytes(), expected.canonical_bytes(), "{wire:?}");
        // The export is the same bytes.
        let file = std::env::temp_dir().join(format!("connectome-{}-{wire:?}.json", std::process::id()));
        let config = everything::config();
        let hash = everything::connectome::export(&file, &everything::catalog_with(demo()), &config, demo())
            .unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), expected.canonical_bytes());
        assert_eq!(hash, expected.sha256_hex());
        let _ = std::fs::remove_file(&file);

        // The observed graph counts its own read, made before the bytes were drawn.
        let (_, r) = p.call(3, "resources/read", json!({ "uri": connectome::OBSERVED_URI }));
        let observed: Value = serde_json::from_str(&text(&r)).unwrap();
        assert_eq!(observed["graph"], "observed");
        let edges = observed["edges"].as_array().unwrap();
        let edge = |to: &str| edges.iter().find(|e| e["to"] == to && e["kind"] == "dispatches").cloned();
        assert_eq!(edge("tool:echo").unwrap()["count"], 1);
        assert_eq!(edge("resource:connectome://declared").unwrap()["count"], 1);
        assert_eq!(edge("resource:connectome://observed").unwrap()["count"], 1);
        let calls =
            edges.iter().find(|e| e["to"] == "method:resources/read" && e["kind"] == "calls").unwrap();
        assert_eq!(calls["count"], 2);

        let (_, r) = p.call(4, "resources/read", json!({ "uri": connectome::DIFF_URI }));
        let diff: Value = serde_json::from_str(&text(&r)).unwrap();
        assert_eq!(diff["graph"], "diff");
        let hit = &diff["classes"]["declared_and_observed"];
        assert!(hit.as_array().unwrap().iter().any(|e| e["to"] == "resource:connectome://diff"), "{hit}");
        assert!(diff["coverage"]["all"]["declared_never_observed"].as_u64().unwrap() > 0);
        // Under a session-bound revision too.
        if wire == Wire::Stdio {
            let mut e = engine();
            let input = [
                legacy_open("2025-11-25"),
                mcp_tests::request(5, "resources/read", json!({ "uri": "connectome://declared" })),
            ]
            .concat();
            let out = lines(&drive(&mut e, input.as_bytes(), &[usize::MAX]));
            assert_eq!(
                out[1]["result"]["contents"][0]["text"].as_str().unwrap().as_bytes(),
                e.connectome().declared().canonical_bytes()
            );
            assert!(out[1]["result"].get("resultType").is_none());
        }
    }
}

#[test]
fn without_the_resources_in_the_catalog_their_uris_are_not_found() {
    let mut e = Engine::new(everything::config(), everything::catalog());
    let out = lines(&drive(&mut e, read(1, connectome::OBSERVED_URI).as_bytes(), &[usize::MAX]));
    assert_eq!(out[0]["error"]["code"], -32602, "{}", out[0]);
    // It still counts as a call of resources/read that reached nothing.
    let g = e.connectome().observed();
    assert_eq!(count(&g, "client:client", EdgeKind::Calls, "method:resources/read"), Some(1));
    assert_eq!(g.edges().len(), 1);
}

#[test]
fn a_principal_is_its_own_caller() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    http.loopback(true);
    let host: wire::Host = Box::new(everything::respond);
    let mut c = wire::client_of(everything::config(), http, everything::catalog_with(demo()), host);
    let alice = Principal::of(b"alice");
    c.verdict = Verdict::AllowAs(alice);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": "x" }, "_meta": mcp_tests::modern_meta() } });
    let out = c.feed(&wire::post(&body, &[]), usize::MAX);
    assert!(String::from_utf8_lossy(&out).contains("200 OK"), "{}", String::from_utf8_lossy(&out));
    let g = c.e.connectome().observed();
    let caller =
        g.nodes().find(|(_, n)| n.kind == connectome::NodeKind::Principal).map(|(id, _)| id.to_owned());
    let caller = caller.expect("a principal node");
    assert_eq!(caller.len(), "principal:".len() + 16, "the first 8 bytes of the digest, in hex: {caller}");
    assert_eq!(count(&g, &caller, EdgeKind::Calls, "method:tools/call"), Some(1));
    assert_eq!(count(&g, "client:client", EdgeKind::Calls, "method:tools/call"), None);
}

// ------------------------------------------------------------------ the transcript

/// The fixture's catalog, with the three connectome resources added when `with` is set
/// (and nothing else).
fn fixture_catalog(with: bool) -> Catalog {
    let base = everything::catalog();
    let mut b = Catalog::builder();
    for t in base.tools() {
        b = b.tool(t.clone());
    }
    for r in base.resources() {
        b = b.resource(r.clone());
    }
    for t in base.templates() {
        b = b.template(t.clone());
    }
    for p in base.prompts() {
        b = b.prompt(p.clone());
    }
    if with {
        for r in connectome::resources() {
            b = b.resource(r);
        }
    }
    b.build().unwrap()
}

/// A fixed config (no random key: both runs must write the same bytes).
fn fixed_config() -> Config {
    let mut c = Config::new("transcript", "1");
    c.logging(true).completions(true).list_changed(true).resource_subscriptions(true);
    c.request_state_key([9; 32]);
    c
}

/// What a client sends: discovery, the four lists, a call, a read, a prompt, a
/// completion, then a session-bound stream opened and listed again.
fn script() -> String {
    [
        modern(1, "server/discover", json!({})),
        modern(2, "tools/list", json!({})),
        modern(3, "resources/list", json!({})),
        modern(4, "resources/templates/list", json!({})),
        modern(5, "prompts/list", json!({})),
        call(6, "echo", json!({ "text": "hi" })),
        read(7, "test://static-text"),
        modern(8, "prompts/get", json!({ "name": "test_simple_prompt" })),
        legacy_open("2025-11-25"),
        mcp_tests::request(9, "resources/list", json!({})),
        mcp_tests::request(10, "tools/list", json!({})),
    ]
    .concat()
}

/// Compares the transcripts of a catalog without and with the connectome resources: every
/// message is the same but the resource lists, which differ by exactly the three entries.
fn assert_only_the_entries_differ(before: &[Value], after: &[Value]) {
    assert_eq!(before.len(), after.len());
    let mut entries: Vec<Value> = connectome::resources()
        .iter()
        .map(|r| json!({ "uri": r.uri, "name": r.name, "description": r.description, "mimeType": r.mime_type }))
        .collect();
    entries.sort_by(|x, y| x["uri"].as_str().cmp(&y["uri"].as_str()));
    let mut lists = 0;
    for (b, a) in before.iter().zip(after) {
        let Some(listed) = a["result"]["resources"].as_array() else {
            assert_eq!(b, a, "only the resource lists may differ");
            continue;
        };
        lists += 1;
        let (ours, theirs): (Vec<&Value>, Vec<&Value>) =
            listed.iter().partition(|r| r["uri"].as_str().is_some_and(|u| u.starts_with("connectome://")));
        assert_eq!(ours.into_iter().cloned().collect::<Vec<_>>(), entries, "the three entries, in uri order");
        let mut a = a.clone();
        a["result"]["resources"] = Value::Array(theirs.into_iter().cloned().collect());
        assert_eq!(b, &a, "the rest of the list is the same");
    }
    assert_eq!(lists, 2, "one list under each revision");
}

#[test]
fn adding_the_resources_changes_nothing_on_the_wire_but_their_entries() {
    // Stdio: the bytes, message by message.
    let run = |with: bool| {
        let mut e = Engine::new(fixed_config(), fixture_catalog(with));
        let out = drive(&mut e, script().as_bytes(), &[usize::MAX]);
        String::from_utf8(out).unwrap().lines().map(str::to_owned).collect::<Vec<_>>()
    };
    let (before, after) = (run(false), run(true));
    let differ: Vec<usize> = (0..before.len()).filter(|&i| before[i] != after[i]).collect();
    let listed = |l: &String| serde_json::from_str::<Value>(l).unwrap()["result"]["resources"].is_array();
    assert!(differ.iter().all(|&i| listed(&after[i])), "only list lines differ: {differ:?}");
    let parse = |v: &[String]| v.iter().map(|l| serde_json::from_str(l).unwrap()).collect::<Vec<Value>>();
    assert_only_the_entries_differ(&parse(&before), &parse(&after));
    for line in &before {
        println!("S: {line}");
    }

    // Streamable HTTP: the same, message by message, on one keep-alive connection.
    let run = |with: bool| {
        let host: wire::Host = Box::new(everything::respond);
        let mut p = Peer::new(Wire::Http, fixed_config(), fixture_catalog(with), host);
        let mut out = Vec::new();
        for (id, method) in
            [(1, "server/discover"), (2, "tools/list"), (3, "resources/list"), (4, "prompts/list")]
        {
            out.extend(p.send(id, method, json!({ "_meta": mcp_tests::modern_meta() })));
        }
        out.extend(p.send(
            5,
            "resources/read",
            json!({ "uri": "test://static-text", "_meta": mcp_tests::modern_meta() }),
        ));
        out.extend(p.send(6, "resources/list", json!({ "_meta": mcp_tests::modern_meta() })));
        out
    };
    assert_only_the_entries_differ(&run(false), &run(true));
}

// ------------------------------------------------------------------ the doc

/// `docs/observability.md`, whose last section shows the demo's connectome.
const DOC: &str = include_str!("../../docs/observability.md");

/// Renders what the doc shows of the demo's connectome: the declared graph's hash and
/// make-up, the host's edges, the answers of the queries, and the observed graph and
/// coverage after a few calls. Print it with
/// `cargo test -p mcp-tests --test connectome doc -- --nocapture`.
fn demo_connectome_text() -> String {
    use std::collections::BTreeMap;
    use std::fmt::Write as _;
    let d = demo();
    let declared = connectome::declared(
        &everything::catalog_with(d),
        &everything::config(),
        &everything::connectome::declarations(d),
    )
    .unwrap();
    let mut t = String::new();
    let _ = writeln!(t, "sha256 {}", declared.sha256_hex());
    let _ = writeln!(t, "{} bytes", declared.canonical_bytes().len());
    let mut nodes: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, n) in declared.nodes() {
        *nodes.entry(n.kind.as_str()).or_default() += 1;
    }
    let nodes: Vec<String> = nodes.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(t, "nodes: {}", nodes.join(", "));
    let mut edges: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, _) in declared.edges() {
        *edges.entry(k.kind.as_str()).or_default() += 1;
    }
    let edges: Vec<String> = edges.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(t, "edges: {}", edges.join(", "));
    let _ = writeln!(t, "declared by the host:");
    for (k, _) in declared
        .edges()
        .filter(|(k, _)| matches!(k.kind, EdgeKind::Reads | EdgeKind::Performs | EdgeKind::GatedBy))
    {
        let _ = writeln!(t, "  {} -{}-> {}", k.from, k.kind.as_str(), k.to);
    }
    let path = |to: &str| match declared.reach_avoiding_gates("client:client", to) {
        Some(p) => {
            p.iter().map(|k| format!("{} -{}->", k.from, k.kind.as_str())).collect::<Vec<_>>().join(" ")
                + " "
                + to
        }
        None => "none".to_owned(),
    };
    let _ = writeln!(
        t,
        "reach_avoiding_gates(client, effect:catalog_replacement): {}",
        path("effect:catalog_replacement")
    );
    let _ = writeln!(
        t,
        "reach_avoiding_gates(client, effect:client_sampling): {}",
        path("effect:client_sampling")
    );
    for (gate, effect) in [
        ("client_capability_sampling", "client_sampling"),
        ("client_capability_elicitation", "client_sampling"),
    ] {
        let v =
            declared.gate_dominates("client:client", &format!("gate:{gate}"), &format!("effect:{effect}"));
        let _ = writeln!(t, "gate_dominates(client, gate:{gate}, effect:{effect}): {v}");
    }
    let every = declared.crossed_by_every_path("client:client", "effect:resource_update_notice").unwrap();
    let _ = writeln!(t, "crossed_by_every_path(client, effect:resource_update_notice): {}", every.join(", "));

    // A few calls, as the e2e tests make them, then the observed graph and the coverage.
    let mut e = engine();
    let input = [
        call(1, "echo", json!({ "text": "hi" })),
        call(2, "test_read_resource", json!({ "uri": "test://static-text" })),
        call(3, "test_read_resource", json!({ "uri": "test://template/5/data" })),
        call(4, "test_trigger_resource_update", json!({})),
        read(5, "test://static-text"),
    ]
    .concat();
    drive(&mut e, input.as_bytes(), &[usize::MAX]);
    let observed = e.connectome().observed();
    let _ = writeln!(t, "observed after five requests:");
    for (k, v) in observed.edges() {
        let _ = writeln!(t, "  {} -{}-> {}  x{}", k.from, k.kind.as_str(), k.to, v.count.unwrap_or(0));
    }
    let diff = e.connectome().diff();
    let _ = writeln!(t, "coverage (declared / observed / both / declared only / observed only / relabeled):");
    for kind in [None].into_iter().chain(EdgeKind::ALL.map(Some)) {
        let c = diff.coverage(kind);
        let name = kind.map_or("all", EdgeKind::as_str);
        let _ = writeln!(
            t,
            "  {name:<10} {:>3} {:>3} {:>3} {:>3} {:>3} {:>3}",
            c.declared,
            c.observed,
            c.declared_and_observed,
            c.declared_never_observed,
            c.observed_undeclared,
            c.relabeled
        );
    }
    t
}

#[test]
fn the_observability_doc_shows_the_demos_connectome() {
    let text = demo_connectome_text();
    println!("{text}");
    let hash = text.lines().next().and_then(|l| l.strip_prefix("sha256 ")).unwrap();
    let export = format!("# {hash}  declared.json");
    assert!(DOC.contains(&export), "the export's printed line in the doc: {export}");
    let block = format!("```text\n{text}```");
    assert!(
        DOC.contains(&block),
        "docs/observability.md, \"The connectome\", must show this block (the demo's catalog or \
         declarations changed?):\n{block}"
    );
}
