//! Resource templates through the engine: a `resources/read` whose uri breaks a
//! template's value rules (traversal, an encoded `/`, a malformed escape) is "resource
//! not found" and never reaches the host; a good one hands the host decoded variables
//! and exploded query pairs. And the `Debug` of every event keeps what the client sent
//! (argument values, `inputResponses`, `requestState`, template values) out of logs.

use std::cell::RefCell;
use std::rc::Rc;

use mcp_engine::mrtr::{InputRequest, InputRequired};
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, Prompt, PromptArgument, PromptOutput, ResourceContents,
    ResourceTemplate, Tool, ToolOutput,
};
use mcp_tests::peer::{Peer, WIRES};
use mcp_tests::wire::Host;
use mcp_tests::{drain_with, legacy_open, lines, request};
use serde_json::json;

/// What the host saw of one read: (variable, decoded value) and the exploded pairs.
type Read = (Vec<(String, String)>, Vec<(String, String)>);
type Reads = Rc<RefCell<Vec<Read>>>;

fn template_catalog() -> Catalog {
    Catalog::builder()
        .template(ResourceTemplate::new("file:///a/{name}", "one"))
        .template(ResourceTemplate::new("file:///r/{+path}", "tree"))
        .template(ResourceTemplate::new("s://search{?q,limit:3,rest*}", "search"))
        .build()
        .unwrap()
}

/// Records every read's variables and answers it with one text.
fn recording_reader(reads: Reads) -> Host {
    Box::new(move |ev| {
        if let Event::ReadResource(r) = ev {
            let vars = r.variables.iter().map(|(n, v)| (n.to_owned(), v.to_owned())).collect();
            let pairs = r.variables.pairs().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
            reads.borrow_mut().push((vars, pairs));
            let uri = r.uri.to_owned();
            let _ = r.answer(&[ResourceContents::text(&uri, None, "ok")]);
        }
    })
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

#[test]
fn a_template_read_with_traversal_or_an_encoded_slash_is_not_found() {
    let bad = [
        "file:///a/..",
        "file:///a/.",
        "file:///a/%2e%2e",
        "file:///a/%2F",
        "file:///a/x%2fy",
        "file:///a/x%5Cy",
        "file:///a/%zz",
        "file:///a/%C3",
        "file:///a/%FF",
        "file:///r/../etc/passwd",
        "file:///r/a/%2e%2e/b",
        "file:///r/a%2F..%2Fb",
        "s://search?q=a&q=b",
        "s://search?q=..",
        "s://search?limit=1000",
        "s://search?",
    ];
    for w in WIRES {
        let reads = Rc::new(RefCell::new(Vec::new()));
        let mut p =
            Peer::new(w, Config::new("s", "1"), template_catalog(), recording_reader(Rc::clone(&reads)));
        for (i, uri) in bad.iter().enumerate() {
            let (_, r) = p.call(i as i64, "resources/read", json!({ "uri": uri }));
            assert_eq!(r["error"]["code"], -32602, "{w:?} {uri}: {r}");
            assert_eq!(r["error"]["message"], "Resource not found", "{w:?} {uri}: {r}");
            assert_eq!(r["error"]["data"]["uri"], *uri, "{w:?}: {r}");
        }
        assert!(reads.borrow().is_empty(), "{w:?}: the host saw {:?}", reads.borrow());
    }
}

#[test]
fn a_legacy_template_read_with_dot_dot_is_resource_not_found() {
    let reads = Rc::new(RefCell::new(Vec::new()));
    let mut host = recording_reader(Rc::clone(&reads));
    let mut e = Engine::new(Config::new("s", "1"), template_catalog());
    let mut input = legacy_open("2025-11-25");
    input.push_str(&request(1, "resources/read", json!({ "uri": "file:///a/%2E%2E" })));
    input.push_str(&request(2, "resources/read", json!({ "uri": "file:///a/ok" })));
    e.handle_input(Instant::ZERO, input.as_bytes());
    let mut out = Vec::new();
    drain_with(&mut e, &mut host, &mut out);
    let out = lines(&out);
    let by_id = |id: i64| out.iter().find(|v| v["id"] == id).unwrap_or_else(|| panic!("no {id}: {out:?}"));
    assert_eq!(by_id(1)["error"]["code"], -32002, "{out:?}");
    assert_eq!(by_id(2)["result"]["contents"][0]["text"], "ok", "{out:?}");
    assert_eq!(*reads.borrow(), vec![(owned(&[("name", "ok")]), vec![])]);
}

#[test]
fn a_template_read_hands_decoded_variables_to_the_host() {
    let cases: [(&str, Read); 5] = [
        ("file:///a/caf%C3%A9%20x", (owned(&[("name", "café x")]), vec![])),
        ("file:///a/...", (owned(&[("name", "...")]), vec![])),
        ("file:///r/a/b%3Fc/d.txt", (owned(&[("path", "a/b?c/d.txt")]), vec![])),
        (
            "s://search?limit=5&x=1&q=a%20b&y=%2A",
            (owned(&[("q", "a b"), ("limit", "5")]), owned(&[("x", "1"), ("y", "*")])),
        ),
        ("s://search", (vec![], vec![])),
    ];
    for w in WIRES {
        let reads = Rc::new(RefCell::new(Vec::new()));
        let mut p =
            Peer::new(w, Config::new("s", "1"), template_catalog(), recording_reader(Rc::clone(&reads)));
        for (i, (uri, _)) in cases.iter().enumerate() {
            let (_, r) = p.call(i as i64, "resources/read", json!({ "uri": uri }));
            assert_eq!(r["result"]["contents"][0]["uri"], *uri, "{w:?}: {r}");
        }
        let want: Vec<Read> = cases.iter().map(|(_, read)| read.clone()).collect();
        assert_eq!(*reads.borrow(), want, "{w:?}");
    }
}

const SECRET: &str = "hunter2-secret";
const STATE: &[u8] = b"host-state-secret";

fn debug_catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("t"))
        .prompt(Prompt::new("p").argument(PromptArgument::new("a")).argument(PromptArgument::new("b")))
        .template(ResourceTemplate::new("x://vault/{key}", "vault"))
        .build()
        .unwrap()
}

/// Records the `Debug` text of every event and answers it.
fn debug_host(seen: Rc<RefCell<Vec<String>>>) -> Host {
    Box::new(move |ev| {
        seen.borrow_mut().push(format!("{ev:?}"));
        match ev {
            Event::CallTool(call) if call.request_state.is_none() => {
                let reqs = [InputRequest::list_roots("k")];
                let _ = call.input_required(&InputRequired::new(&reqs).state(STATE));
            }
            Event::CallTool(call) => {
                // The responses' own `Debug` (a host may log them): keys and sizes.
                let responses = format!("{:?}", call.input_responses);
                let _ = call.answer(&ToolOutput::new(&[Content::text("done")]));
                seen.borrow_mut().push(responses);
            }
            Event::GetPrompt(p) => {
                let _ = p.answer(&PromptOutput::new(&[]));
            }
            Event::ReadResource(r) => {
                let uri = r.uri.to_owned();
                let _ = r.answer(&[ResourceContents::text(&uri, None, "x")]);
            }
            Event::Complete(c) => {
                let _ = c.answer(&[], None, false);
            }
            _ => {}
        }
    })
}

#[test]
fn event_debug_prints_no_argument_values_input_responses_or_request_state() {
    for w in WIRES {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let mut config = Config::new("s", "1");
        config.request_state_key([9; 32]).completions(true);
        let mut p = Peer::new(w, config, debug_catalog(), debug_host(Rc::clone(&seen)));
        let args = json!({ "password": SECRET });
        let (_, r1) = p.call(1, "tools/call", json!({ "name": "t", "arguments": args }));
        let state = r1["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{w:?}: {r1}")).to_owned();
        let roots = json!({ "roots": [{ "uri": format!("file:///{SECRET}") }] });
        let (_, r2) = p.call(
            2,
            "tools/call",
            json!({ "name": "t", "arguments": args, "requestState": state, "inputResponses": { "k": roots } }),
        );
        assert_eq!(r2["result"]["content"][0]["text"], "done", "{w:?}: {r2}");
        let (_, r) = p.call(3, "prompts/get", json!({ "name": "p", "arguments": { "a": SECRET } }));
        assert!(r.get("result").is_some(), "{w:?}: {r}");
        let (_, r) = p.call(4, "resources/read", json!({ "uri": format!("x://vault/{SECRET}") }));
        assert!(r.get("result").is_some(), "{w:?}: {r}");
        let (_, r) = p.call(
            5,
            "completion/complete",
            json!({
                "ref": { "type": "ref/prompt", "name": "p" },
                "argument": { "name": "a", "value": SECRET },
                "context": { "arguments": { "b": SECRET } }
            }),
        );
        assert!(r.get("result").is_some(), "{w:?}: {r}");

        let mut seen = seen.borrow_mut();
        assert_eq!(seen.len(), 6, "{w:?}: {seen:?}");
        let responses = seen.remove(2);
        assert!(responses.starts_with("{\"k\": <") && responses.ends_with(" bytes>}"), "{w:?}: {responses}");
        let state_text = String::from_utf8_lossy(STATE);
        for text in seen.iter() {
            assert!(!text.contains(SECRET), "{w:?}: a value reached Debug: {text}");
            assert!(!text.contains(&*state_text), "{w:?}: the host state reached Debug: {text}");
        }
        // What is printed instead: sizes, names and the declarations.
        let args_len = args.to_string().len();
        assert!(seen[0].contains(&format!("Arguments {{ len: {args_len} }}")), "{}", seen[0]);
        assert!(seen[0].contains("input_responses: <0 responses>"), "{}", seen[0]);
        assert!(seen[0].contains("request_state: None"), "{}", seen[0]);
        assert!(seen[1].contains("input_responses: <1 responses>"), "{}", seen[1]);
        assert!(seen[1].contains(&format!("request_state: Some(<{} bytes>)", STATE.len())), "{}", seen[1]);
        assert!(
            seen[2].starts_with("GetPrompt(GetPrompt {") && seen[2].contains("prompt: \"p\""),
            "{}",
            seen[2]
        );
        assert!(seen[3].contains("template: \"x://vault/{key}\""), "{}", seen[3]);
        assert!(seen[3].contains("TemplateVars { names: [\"key\"], pairs: 0 }"), "{}", seen[3]);
        assert!(seen[4].contains(&format!("value: <{} bytes>", SECRET.len())), "{}", seen[4]);
    }
}

#[test]
fn a_listed_resource_read_prints_its_uri_in_debug() {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let catalog =
        Catalog::builder().resource(mcp_engine::Resource::new("x://listed", "listed")).build().unwrap();
    let mut p = Peer::new(WIRES[0], Config::new("s", "1"), catalog, debug_host(Rc::clone(&seen)));
    let (_, r) = p.call(1, "resources/read", json!({ "uri": "x://listed" }));
    assert!(r.get("result").is_some(), "{r}");
    let seen = seen.borrow();
    assert!(seen[0].contains("uri: \"x://listed\"") && seen[0].contains("template: None"), "{seen:?}");
}

/// The tokio adapter's `ResourceRead` carries the decoded variables and the exploded pairs.
#[test]
fn the_tokio_adapter_hands_decoded_variables_and_query_pairs() {
    use std::sync::Arc;

    use mcp_io_tokio::reply::ResourceResult;
    use mcp_io_tokio::{Handler, ResourceRead, ResourceReply};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    struct Echo;
    impl Handler for Echo {
        async fn read_resource(&self, read: ResourceRead) -> ResourceResult {
            let text = format!("{:?} {:?}", read.variables, read.query_pairs);
            Ok(ResourceReply::text(read.uri.to_string(), None, text))
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(async {
        let (client, server) = tokio::io::duplex(4096);
        let (read_half, write_half) = tokio::io::split(server);
        let engine = Engine::new(Config::new("s", "1"), template_catalog());
        let serving = tokio::spawn(mcp_io_tokio::stdio::serve(engine, Arc::new(Echo), read_half, write_half));
        let (mut rx, mut tx) = tokio::io::split(client);
        let uri = "s://search?x=%2A&q=caf%C3%A9&x=2";
        tx.write_all(mcp_tests::modern(1, "resources/read", json!({ "uri": uri })).as_bytes()).await.unwrap();
        tx.shutdown().await.unwrap();
        let mut out = Vec::new();
        rx.read_to_end(&mut out).await.unwrap();
        serving.await.unwrap().unwrap();
        out
    });
    let out = lines(&out);
    assert_eq!(
        out[0]["result"]["contents"][0]["text"], r#"[("q", "café")] [("x", "*"), ("x", "2")]"#,
        "{out:?}"
    );
}
