//! Named regression tests: each reproduces a defect found in review or by fuzzing, and
//! pins the fix.

use mcp_engine::Commands;
use mcp_engine::{Catalog, Config, Content, Engine, Event, Instant, Resource, Tool, ToolOutput};
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::{drive, legacy_open, lines, modern, notification, request, run};
use serde_json::{Value, json};

/// A writer that always leaves a few bytes behind must not make the output buffer grow.
#[test]
fn partial_writes_do_not_grow_the_output_buffer() {
    let mut e = Engine::new(Config::new("s", "1"), Catalog::empty());
    let ping =
        request(1, "ping", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}}));
    // Warm up, then count allocations over many rounds that each leave 10 bytes unsent.
    for _ in 0..2_000 {
        e.handle_input(Instant::ZERO, ping.as_bytes());
        let n = e.pending_output().len().saturating_sub(10);
        e.consume_output(n);
    }
    let info = allocation_counter::measure(|| {
        for _ in 0..20_000 {
            e.handle_input(Instant::ZERO, ping.as_bytes());
            let n = e.pending_output().len().saturating_sub(10);
            e.consume_output(n);
        }
    });
    assert_eq!(info.count_total, 0, "{info:?}");
    assert_eq!(e.pending_output().len(), 10);
}

/// A cancellation read from behind a waiting request must not be lost when it names that
/// waiting request: it waits with it.
#[test]
fn a_cancel_of_a_waiting_request_is_not_lost() {
    let mut cfg = Config::new("s", "1");
    cfg.max_in_flight(1);
    let mut e = Engine::new(cfg, Catalog::builder().tool(Tool::new("slow")).build().unwrap());
    let input = [
        modern("A", "tools/call", json!({"name": "slow"})),
        modern("B", "tools/call", json!({"name": "slow"})),
        notification("notifications/cancelled", json!({"requestId": "B"})),
    ]
    .concat();
    e.handle_input(Instant::ZERO, input.as_bytes());
    let mut tickets = Vec::new();
    while let Some(ev) = e.poll_event() {
        tickets.push(ev.ticket());
    }
    assert_eq!(tickets.len(), 1, "only A holds a slot");
    e.answer_tool(tickets[0], &ToolOutput::new(&[])).unwrap();
    let mut events = Vec::new();
    while let Some(ev) = e.poll_event() {
        events.push(matches!(ev, Event::Cancelled(_)));
    }
    assert_eq!(events, [false, true], "B is handed out, then cancelled");
    let out = lines(e.pending_output());
    assert_eq!(out.len(), 1, "only A is answered: {out:?}");
    assert_eq!(out[0]["id"], "A");
}

/// Integers beyond 64 bits in arguments are not a parse error.
#[test]
fn big_integers_in_arguments_are_accepted() {
    // (A number beyond the range of f64, such as 1e309, stays a parse error, as in serde_json.)
    for n in ["18446744073709551616", "-9223372036854775809", "1e308"] {
        let frame = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"test_simple_text\",\"arguments\":{{\"n\":{n}}},\"_meta\":{}}}}}\n",
            mcp_tests::modern_meta()
        );
        let out = run(&frame);
        assert_eq!(out[0]["id"], 1, "{n}: {}", out[0]);
    }
}

/// A repeated member name in the arguments is refused before validation, so the value
/// that was validated and the value the host receives cannot differ (they used to: the
/// last one was validated and delivered, the first one mirrored into headers).
#[test]
fn duplicate_argument_names_are_refused_before_validation() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let catalog = Catalog::builder().tool(Tool::new("t").input_schema(schema)).build().unwrap();
    let mut e = Engine::new(Config::new("s", "1"), catalog);
    let frame = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"t\",\"arguments\":{{\"n\":\"not an integer\",\"n\":1}},\"_meta\":{}}}}}\n",
        mcp_tests::modern_meta()
    );
    e.handle_input(Instant::ZERO, frame.as_bytes());
    assert!(e.poll_event().is_none(), "the call never reaches the host");
    let out = lines(e.pending_output());
    assert_eq!(out[0]["id"], 1);
    assert_eq!(out[0]["error"]["code"], -32602, "{}", out[0]);
}

/// A key a cursor cannot carry is refused when the catalog is built, not silently
/// truncating pagination later.
#[test]
fn over_long_keys_are_refused_at_build() {
    let long = format!("test://{}", "a".repeat(1100));
    assert!(Catalog::builder().resource(Resource::new(long, "r")).build().is_err());
}

/// Host-serialized values may hold line breaks; a stdio frame must not.
#[test]
fn structured_content_with_line_breaks_stays_one_frame() {
    let mut e = Engine::new(Config::new("s", "1"), Catalog::builder().tool(Tool::new("t")).build().unwrap());
    e.handle_input(Instant::ZERO, modern(1, "tools/call", json!({"name": "t"})).as_bytes());
    let Some(Event::CallTool(call)) = e.poll_event() else { panic!() };
    let raw = serde_json::value::RawValue::from_string("{\n  \"a\": 1\r\n}".to_owned()).unwrap();
    call.answer(&ToolOutput::new(&[Content::text("multi\nline")]).structured(&*raw)).unwrap();
    let out = lines(e.pending_output());
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["result"]["structuredContent"], json!({"a": 1}));
    assert_eq!(
        out[0]["result"]["content"][0]["text"], "multi\nline",
        "escaped newlines in strings are untouched"
    );
}

/// A uri that is not a URI is never served (it would be echoed back as a `uri`).
#[test]
fn non_uri_characters_are_not_found() {
    for uri in ["test://template/a b/data", "test://template/\"x\"/data", "test://template/é/data"] {
        let out = run(&modern(2, "resources/read", json!({"uri": uri})));
        assert_eq!(out[0]["error"]["code"], -32602, "{uri}");
    }
    let out = run(&modern(2, "resources/read", json!({"uri": "test://template/a%20b/data"})));
    assert_valid(Rev::V2026_07_28, "ReadResourceResult", &out[0]["result"]);
}

/// An unsupported revision named by `server/discover` is checked, not answered bare.
#[test]
fn discover_naming_an_unsupported_revision_is_refused() {
    let out = run(&request(
        2,
        "server/discover",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "v999.0.0", "io.modelcontextprotocol/clientCapabilities": {}}}),
    ));
    assert_eq!(out[0]["error"]["code"], -32022);
    let out = run(&request(2, "server/discover", json!({"_meta": 5})));
    assert_eq!(out[0]["error"]["code"], -32602);
}

/// `ping` before `initialize` is answered (the legacy lifecycle allows it).
#[test]
fn ping_before_initialize_is_answered() {
    let out = run("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    assert_eq!(out[0]["result"], json!({}));
}

/// Responses (even with ids no request may carry) are never answered.
#[test]
fn responses_are_never_answered() {
    let out = run(
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}\n{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}\n",
    );
    assert!(out.is_empty(), "{out:?}");
}

/// The frame limit holds for a last frame that ends at EOF, too.
#[test]
fn the_frame_limit_holds_at_eof() {
    let mut cfg = Config::new("s", "1");
    cfg.max_frame_len(600);
    let mut e = Engine::new(cfg, Catalog::empty());
    let frame = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(560)
    );
    assert!(frame.len() > 600);
    let out = lines(&drive(&mut e, frame.as_bytes(), &[usize::MAX]));
    assert_eq!(out[0]["error"]["code"], -32600);
}

/// A declared output schema is enforced: a host bug becomes an `isError` result.
#[test]
fn output_schemas_are_enforced() {
    let tool = Tool::new("t").output_schema(
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    );
    let catalog = || Catalog::builder().tool(tool.clone()).build().unwrap();
    let cases: [(Option<Value>, bool); 3] =
        [(Some(json!({"n": 1})), false), (Some(json!({"n": "x"})), true), (None, true)];
    for (structured, is_error) in cases {
        for legacy in [false, true] {
            let mut e = Engine::new(Config::new("s", "1"), catalog());
            let input = if legacy {
                format!("{}{}", legacy_open("2025-11-25"), request(1, "tools/call", json!({"name": "t"})))
            } else {
                modern(1, "tools/call", json!({"name": "t"}))
            };
            e.handle_input(Instant::ZERO, input.as_bytes());
            let ticket = e.poll_event().expect("the call reaches the host").ticket();
            let content = [Content::text("x")];
            match &structured {
                Some(v) => e.answer_tool(ticket, &ToolOutput::new(&content).structured(v)).unwrap(),
                None => e.answer_tool(ticket, &ToolOutput::new(&content)).unwrap(),
            }
            let out = lines(e.pending_output());
            let result = &out.last().unwrap()["result"];
            assert_eq!(
                result.get("isError") == Some(&json!(true)),
                is_error,
                "{structured:?} legacy={legacy}: {result}"
            );
            let rev = if legacy { Rev::V2025_11_25 } else { Rev::V2026_07_28 };
            assert_valid(rev, "CallToolResult", result);
        }
    }
}

/// Found by fuzzing (op_sequence): `consume_output` with more than is pending, after a
/// partial consume, overflowed (`out_pos + n` in `Engine::consume_output`): a panic with
/// overflow checks; without them the read position moved back a byte, which was then sent
/// twice.
#[test]
fn consuming_more_than_is_pending_after_a_partial_consume() {
    let mut e = Engine::new(Config::new("s", "1"), Catalog::empty());
    let ping =
        request(1, "ping", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}}));
    e.handle_input(Instant::ZERO, ping.as_bytes());
    let len = e.pending_output().len();
    e.consume_output(1);
    assert_eq!(e.pending_output().len(), len - 1);
    e.consume_output(usize::MAX);
    assert!(e.pending_output().is_empty(), "{:?}", String::from_utf8_lossy(e.pending_output()));
}

/// `completion/complete` takes a ticket slot like the other requests the host answers: one
/// that arrives while every slot is busy waits for a slot. (It was served at once from
/// behind the full slots, found no free slot in `Core::ticket`, and got no answer at all.)
#[test]
fn a_completion_waits_for_a_free_slot() {
    use mcp_engine::{Prompt, PromptArgument};
    let mut cfg = Config::new("s", "1");
    cfg.max_in_flight(1).completions(true);
    let catalog = Catalog::builder()
        .tool(Tool::new("slow"))
        .prompt(Prompt::new("p").argument(PromptArgument::required("a")))
        .build()
        .unwrap();
    let mut e = Engine::new(cfg, catalog);
    let complete =
        json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "x"}});
    let input =
        [modern("A", "tools/call", json!({"name": "slow"})), modern("B", "completion/complete", complete)]
            .concat();
    e.handle_input(Instant::ZERO, input.as_bytes());
    let a = e.poll_event().expect("A reaches the host").ticket();
    assert!(e.poll_event().is_none(), "B waits for the slot");
    e.answer_tool(a, &ToolOutput::new(&[])).unwrap();
    let b = e.poll_event().expect("B reaches the host once A is answered").ticket();
    e.answer_completion(b, &["x1"], None, false).unwrap();
    let ids: Vec<Value> = lines(e.pending_output()).into_iter().map(|v| v["id"].clone()).collect();
    assert_eq!(ids, [json!("A"), json!("B")]);
}
