//! Multi-round-trip requests (`2026-07-28` `InputRequiredResult`) over stdio and HTTP:
//! round trips, the sealed `requestState` (tampering, binding, expiry), input-response
//! validation, capability gating, and the refusals of `answer_input_required`.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_engine::error::AnswerError;
use mcp_engine::mrtr::{InputKind, InputRequest, InputRequired};
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, Prompt, Resource, ResourceContents, Ticket, Tool,
    ToolOutput,
};
use mcp_fixture as everything;
use mcp_tests::peer::{Peer, WIRES, Wire, meta_with};
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::wire::Host;
use mcp_tests::{drain, legacy_open, lines, request};
use serde_json::{Value, json};

const KEY: [u8; 32] = [7; 32];

fn fixture_config() -> Config {
    let mut c = Config::new("mcp-engine-everything", "0.1.0");
    c.request_state_key(KEY);
    c
}

/// The fixture on `w`, with a request-state key.
fn fixture(w: Wire) -> Peer {
    Peer::new(w, fixture_config(), everything::catalog(), Box::new(everything::respond))
}

fn caps(c: Value) -> Value {
    meta_with(c)
}

fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

fn result_type(v: &Value) -> &str {
    v["result"]["resultType"].as_str().unwrap_or_else(|| panic!("no result: {v}"))
}

fn error_code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error: {v}"))
}

#[test]
fn an_elicitation_round_trip_completes_on_both_wires() {
    for w in WIRES {
        let mut p = fixture(w);
        let tool = "test_input_required_result_elicitation";
        let (status, r1) = p.call(1, "tools/call", json!({ "name": tool, "arguments": {} }));
        assert_eq!(status, 200);
        assert_eq!(result_type(&r1), "input_required", "{w:?}");
        assert_valid(Rev::V2026_07_28, "InputRequiredResult", &r1["result"]);
        assert_valid(Rev::V2026_07_28, "JSONRPCResultResponse", &r1);
        let ask = &r1["result"]["inputRequests"]["user_name"];
        assert_eq!(ask["method"], "elicitation/create");
        assert_eq!(ask["params"]["requestedSchema"]["required"], json!(["name"]));
        let state = r1["result"]["requestState"].as_str().expect("a requestState").to_owned();
        assert!(state.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "base64url");

        let (_, r2) = p.call(
            2,
            "tools/call",
            json!({
                "name": tool, "arguments": {}, "requestState": state,
                "inputResponses": { "user_name": accept(json!({ "name": "Alice" })) }
            }),
        );
        assert_eq!(result_type(&r2), "complete", "{w:?}: {r2}");
        assert_eq!(r2["result"]["content"][0]["text"], "Hello, Alice!");
        assert_valid(Rev::V2026_07_28, "CallToolResult", &r2["result"]);
    }
}

#[test]
fn a_tampered_or_foreign_state_is_invalid_params() {
    for w in WIRES {
        let mut p = fixture(w);
        let tool = "test_input_required_result_tampered_state";
        let (_, r1) = p.call(1, "tools/call", json!({ "name": tool, "arguments": {} }));
        let state = r1["result"]["requestState"].as_str().unwrap().to_owned();
        let ok = accept(json!({ "ok": true }));
        let mut flipped = state.clone().into_bytes();
        let mid = flipped.len() / 2;
        flipped[mid] = if flipped[mid] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        for bad in [format!("{state}-TAMPERED"), flipped, String::new(), "!!".into(), "A".repeat(20_000)] {
            let (status, r) = p.call(
                2,
                "tools/call",
                json!({ "name": tool, "arguments": {}, "requestState": bad, "inputResponses": { "confirm": ok } }),
            );
            assert_eq!(error_code(&r), -32602, "{w:?}: {r}");
            assert_eq!(r["id"], 2);
            assert_eq!(status, 200, "a method-level -32602 is HTTP 200");
            assert!(r["error"]["message"].as_str().unwrap().contains("requestState"));
        }
        // A state for one tool is refused by another (method and params are bound).
        let other = "test_input_required_result_request_state";
        let (_, r) = p.call(
            3,
            "tools/call",
            json!({ "name": other, "arguments": {}, "requestState": state, "inputResponses": { "confirm": ok } }),
        );
        assert_eq!(error_code(&r), -32602, "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("different request"), "{r}");
        // ... and by a prompt of the same name bound to another method.
        let (_, r) = p.call(4, "tools/call", json!({ "name": tool, "requestState": 7 }));
        assert_eq!(error_code(&r), -32602);
        // The untouched state still verifies.
        let (_, r) = p.call(
            5,
            "tools/call",
            json!({ "name": tool, "arguments": {}, "requestState": state, "inputResponses": { "confirm": ok } }),
        );
        assert_eq!(result_type(&r), "complete", "{r}");
    }
}

#[test]
fn a_state_is_bound_to_the_arguments() {
    let catalog = || {
        Catalog::builder()
            .tool(
                Tool::new("ask")
                    .input_schema(json!({ "type": "object", "properties": { "n": { "type": "integer" } } })),
            )
            .build()
            .unwrap()
    };
    for w in WIRES {
        let host: Host = Box::new(|ev| {
            if let Event::CallTool(call) = ev {
                if call.input_responses.get("k").is_some() {
                    let _ = call.answer(&ToolOutput::new(&[Content::text("done")]));
                } else {
                    let _ = call.input_required(&InputRequired::new(&[InputRequest::list_roots("k")]));
                }
            }
        });
        let mut p = Peer::new(w, fixture_config(), catalog(), host);
        let (_, r1) = p.call(1, "tools/call", json!({ "name": "ask", "arguments": { "n": 1 } }));
        let state = r1["result"]["requestState"].as_str().unwrap().to_owned();
        let roots = json!({ "roots": [{ "uri": "file:///r" }] });
        let (_, r) = p.call(
            2,
            "tools/call",
            json!({ "name": "ask", "arguments": { "n": 2 }, "requestState": state, "inputResponses": { "k": roots } }),
        );
        assert_eq!(error_code(&r), -32602, "other arguments: {r}");
        // Whitespace and escapes do not matter: the arguments are compared as re-serialized.
        let (_, r) = p.call(
            3,
            "tools/call",
            json!({ "name": "ask", "arguments": { "n": 1 }, "requestState": state, "inputResponses": { "k": roots } }),
        );
        assert_eq!(result_type(&r), "complete", "{w:?}: {r}");
    }
}

#[test]
fn a_state_expires_after_its_ttl() {
    for w in WIRES {
        let mut config = fixture_config();
        config.request_state_ttl(Duration::from_secs(60));
        let mut p = Peer::new(w, config, everything::catalog(), Box::new(everything::respond));
        p.advance(Duration::from_secs(1000));
        let tool = "test_input_required_result_request_state";
        let (_, r1) = p.call(1, "tools/call", json!({ "name": tool, "arguments": {} }));
        let state = r1["result"]["requestState"].as_str().unwrap().to_owned();
        let retry = json!({
            "name": tool, "arguments": {}, "requestState": state,
            "inputResponses": { "confirm": accept(json!({ "ok": true })) }
        });
        p.advance(Duration::from_secs(60));
        let (_, r) = p.call(2, "tools/call", retry.clone());
        assert_eq!(result_type(&r), "complete", "at the expiry it still holds: {r}");
        assert!(r["result"]["content"][0]["text"].as_str().unwrap().contains("state-ok"));
        p.advance(Duration::from_millis(1));
        let (_, r) = p.call(3, "tools/call", retry);
        assert_eq!(error_code(&r), -32602, "{w:?}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("expired"), "{r}");
    }
}

#[test]
fn multi_round_issues_a_new_state_each_round() {
    for w in WIRES {
        let mut p = fixture(w);
        let tool = "test_input_required_result_multi_round";
        let (_, r1) = p.call(1, "tools/call", json!({ "name": tool, "arguments": {} }));
        let s1 = r1["result"]["requestState"].as_str().unwrap().to_owned();
        let (_, r2) = p.call(
            2,
            "tools/call",
            json!({ "name": tool, "arguments": {}, "requestState": s1,
                    "inputResponses": { "step1": accept(json!({ "name": "Alice" })) } }),
        );
        assert_eq!(result_type(&r2), "input_required", "{r2}");
        let s2 = r2["result"]["requestState"].as_str().unwrap().to_owned();
        assert_ne!(s1, s2);
        assert!(r2["result"]["inputRequests"]["step2"].is_object());
        // The first round's answer under the second round's key is not what was asked:
        // the engine drops `step1` (not asked in round 2), so the host asks again.
        let (_, again) = p.call(
            3,
            "tools/call",
            json!({ "name": tool, "arguments": {}, "requestState": s2,
                    "inputResponses": { "step1": accept(json!({ "name": "Bob" })) } }),
        );
        assert_eq!(result_type(&again), "input_required", "{again}");
        let (_, r3) = p.call(
            4,
            "tools/call",
            json!({ "name": tool, "arguments": {}, "requestState": s2,
                    "inputResponses": { "step2": accept(json!({ "color": "blue" })) } }),
        );
        assert_eq!(result_type(&r3), "complete", "{r3}");
        assert_eq!(r3["result"]["content"][0]["text"], "Alice likes blue.");
    }
}

/// A host that records what each tool call brought and asks for `k` (roots) until it
/// has it.
/// What the host saw on each call: the response keys and the verified state.
type Seen = Rc<RefCell<Vec<(Vec<String>, Option<Vec<u8>>)>>>;

fn recording_host(seen: Seen) -> Host {
    Box::new(move |ev| {
        if let Event::CallTool(call) = ev {
            let keys = call.input_responses.iter().map(|(k, _)| k.to_owned()).collect();
            seen.borrow_mut().push((keys, call.request_state.map(<[u8]>::to_vec)));
            if call.input_responses.get("k").is_some() {
                let _ = call.answer(&ToolOutput::new(&[Content::text("done")]));
            } else {
                let reqs = [InputRequest::list_roots("k")];
                let _ = call.input_required(&InputRequired::new(&reqs).state(b"host-state"));
            }
        }
    })
}

fn one_tool() -> Catalog {
    Catalog::builder().tool(Tool::new("t")).build().unwrap()
}

#[test]
fn responses_are_checked_and_unknown_keys_dropped() {
    for w in WIRES {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let mut p = Peer::new(w, fixture_config(), one_tool(), recording_host(Rc::clone(&seen)));
        let (_, r1) = p.call(1, "tools/call", json!({ "name": "t" }));
        let state = r1["result"]["requestState"].as_str().unwrap().to_owned();
        let roots = json!({ "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] });

        // A response that does not fit its request's kind: -32602, the host never sees it.
        for bad in [json!(12345), json!({ "roots": "nope" }), json!({ "roots": [{ "name": "no uri" }] })] {
            let (_, r) = p.call(
                2,
                "tools/call",
                json!({ "name": "t", "requestState": state, "inputResponses": { "k": bad } }),
            );
            assert_eq!(error_code(&r), -32602, "{w:?}: {r}");
            assert!(r["error"]["message"].as_str().unwrap().contains("inputResponses.k"), "{r}");
        }
        for bad in [json!(null), json!([]), json!("x")] {
            let (_, r) = p.call(3, "tools/call", json!({ "name": "t", "inputResponses": bad }));
            assert_eq!(error_code(&r), -32602, "{r}");
        }
        assert_eq!(seen.borrow().len(), 1, "refused retries never reach the host");

        // Unknown keys are dropped, with or without extra members; the host gets its state.
        let (_, r) = p.call(
            4,
            "tools/call",
            json!({ "name": "t", "requestState": state,
                    "inputResponses": { "extra": { "action": "accept" }, "k": roots, "more": 1 } }),
        );
        assert_eq!(result_type(&r), "complete", "{r}");
        let last = seen.borrow().last().cloned().unwrap();
        assert_eq!(last.0, vec!["k".to_owned()]);
        assert_eq!(last.1.as_deref(), Some(&b"host-state"[..]));

        // A missing response is not an error: the host asks again.
        let (_, r) = p.call(
            5,
            "tools/call",
            json!({ "name": "t", "requestState": state, "inputResponses": { "wrong_key": roots } }),
        );
        assert_eq!(result_type(&r), "input_required", "{r}");
    }
}

#[test]
fn the_client_is_asked_only_for_what_it_declared() {
    let asks_everything: fn() -> Host = || {
        Box::new(|ev| {
            if let Event::CallTool(call) = ev {
                let schema =
                    serde_json::value::to_raw_value(&json!({ "type": "object", "properties": {} })).unwrap();
                let msgs = [mcp_engine::PromptMessage::user(Content::text("hi"))];
                let reqs = [
                    InputRequest::elicit("e", "Name?", &schema),
                    InputRequest::sample("s", &msgs, 10).system_prompt("be brief"),
                    InputRequest::list_roots("r"),
                ];
                let _ = call.input_required(&InputRequired::new(&reqs));
            }
        })
    };
    for w in WIRES {
        let mut p = Peer::new(w, fixture_config(), one_tool(), asks_everything());
        let (_, r) =
            p.call(1, "tools/call", json!({ "name": "t", "_meta": caps(json!({ "sampling": {} })) }));
        let asked = r["result"]["inputRequests"].as_object().expect("input requests");
        assert_eq!(asked.keys().collect::<Vec<_>>(), ["s"], "{w:?}: {r}");
        assert_eq!(asked["s"]["params"]["systemPrompt"], "be brief");
        assert_eq!(asked["s"]["params"]["maxTokens"], 10);
        assert_valid(Rev::V2026_07_28, "InputRequiredResult", &r["result"]);

        let (_, r) = p.call(
            2,
            "tools/call",
            json!({ "name": "t", "_meta": caps(json!({ "elicitation": { "url": {} } })) }),
        );
        assert!(r["error"].is_object(), "url-only elicitation cannot answer a form: {r}");

        let (status, r) = p.call(3, "tools/call", json!({ "name": "t", "_meta": caps(json!({})) }));
        assert_eq!(error_code(&r), -32021, "{r}");
        assert_eq!(
            r["error"]["data"]["requiredCapabilities"],
            json!({ "elicitation": {}, "sampling": {}, "roots": {} })
        );
        assert_valid(Rev::V2026_07_28, "JSONRPCErrorResponse", &r);
        if w == Wire::Http {
            assert_eq!(status, 400, "-32021 is HTTP 400, also when the host answers it");
        }

        let (_, r) = p.call(
            4,
            "tools/call",
            json!({ "name": "t", "_meta": caps(json!({ "elicitation": {}, "sampling": {}, "roots": {} })) }),
        );
        assert_eq!(r["result"]["inputRequests"].as_object().unwrap().len(), 3, "{r}");
        assert_eq!(r["result"]["inputRequests"]["e"]["params"]["mode"], "form");
        assert_valid(Rev::V2026_07_28, "InputRequiredResult", &r["result"]);
    }
}

#[test]
fn prompts_and_resource_reads_take_several_rounds_too() {
    let catalog =
        || Catalog::builder().resource(Resource::new("x://r", "r")).prompt(Prompt::new("p")).build().unwrap();
    let host: fn() -> Host = || {
        Box::new(|ev| match ev {
            Event::ReadResource(read) if read.input_responses.get("k").is_some() => {
                let _ = read.answer(&[ResourceContents::text("x://r", None, "read")]);
            }
            Event::ReadResource(read) => {
                let _ = read.input_required(&InputRequired::new(&[InputRequest::list_roots("k")]));
            }
            Event::GetPrompt(get) if get.input_responses.get("k").is_some() => {
                let m = [mcp_engine::PromptMessage::user(Content::text("rendered"))];
                let _ = get.answer(&mcp_engine::PromptOutput::new(&m));
            }
            Event::GetPrompt(get) => {
                let _ = get.input_required(&InputRequired::new(&[InputRequest::list_roots("k")]));
            }
            _ => {}
        })
    };
    let roots = json!({ "roots": [] });
    for w in WIRES {
        let mut p = Peer::new(w, fixture_config(), catalog(), host());
        for (method, params) in
            [("resources/read", json!({ "uri": "x://r" })), ("prompts/get", json!({ "name": "p" }))]
        {
            let (_, r1) = p.call(1, method, params.clone());
            assert_eq!(result_type(&r1), "input_required", "{method}: {r1}");
            assert_valid(Rev::V2026_07_28, "InputRequiredResult", &r1["result"]);
            let mut retry = params.clone();
            retry["requestState"] = r1["result"]["requestState"].clone();
            retry["inputResponses"] = json!({ "k": roots });
            let (_, r2) = p.call(2, method, retry);
            assert_eq!(result_type(&r2), "complete", "{method}: {r2}");
            // A resource state is not a prompt state.
            let mut swapped =
                if method == "prompts/get" { json!({ "uri": "x://r" }) } else { json!({ "name": "p" }) };
            swapped["requestState"] = r1["result"]["requestState"].clone();
            let other = if method == "prompts/get" { "resources/read" } else { "prompts/get" };
            let (_, r) = p.call(3, other, swapped);
            assert_eq!(error_code(&r), -32602, "{other} with a {method} state: {r}");
        }
        // Lists never take several rounds.
        for method in ["resources/list", "prompts/list"] {
            let (_, r) = p.call(4, method, json!({}));
            assert_eq!(result_type(&r), "complete");
        }
    }
}

/// An engine with one pending tool-call ticket (the host kept it), for `answer_*` tests.
fn held_ticket(config: Config, first: &str) -> (Engine, Ticket) {
    let mut e = Engine::new(
        config,
        Catalog::builder().tool(Tool::new("t")).prompt(Prompt::new("p")).build().unwrap(),
    );
    let mut input = String::from(first);
    input.push_str(&request(
        9,
        "tools/call",
        if first.is_empty() {
            json!({ "name": "t", "_meta": caps(json!({ "roots": {} })) })
        } else {
            json!({ "name": "t" })
        },
    ));
    let mut ticket = None;
    let mut fed = 0;
    while fed < input.len() {
        fed += e.handle_input(Instant::ZERO, &input.as_bytes()[fed..]);
        while let Some(ev) = e.poll_event() {
            ticket = Some(ev.ticket());
        }
        let n = e.pending_output().len();
        e.consume_output(n);
    }
    (e, ticket.expect("a tool call"))
}

fn output(e: &mut Engine) -> Vec<Value> {
    let mut out = Vec::new();
    drain(e, &mut out);
    lines(&out)
}

#[test]
fn refusals_leave_the_ticket_open() {
    let roots = [InputRequest::list_roots("k")];
    for rev in ["2025-11-25", "2025-06-18"] {
        // Nobody retries a session-bound request: "retry later" has no meaning there.
        let (mut e, t) = held_ticket(fixture_config(), &legacy_open(rev));
        assert_eq!(
            e.answer_input_required(t, &InputRequired::retry_later(b"later")),
            Err(AnswerError::InputRequiredUnsupported)
        );
        assert!(output(&mut e).is_empty(), "nothing written");
        e.answer_tool(t, &ToolOutput::new(&[Content::text("ok")])).unwrap();
        assert_eq!(output(&mut e)[0]["result"]["content"][0]["text"], "ok");
        // A client that declared no roots capability cannot be asked for them: -32021, as
        // under 2026-07-28.
        let (mut e, t) = held_ticket(fixture_config(), &legacy_open(rev));
        e.answer_input_required(t, &InputRequired::new(&roots)).unwrap();
        let out = output(&mut e);
        assert_eq!(out[0]["error"]["code"], -32021, "{}", out[0]);
        assert_eq!(out[0]["error"]["data"]["requiredCapabilities"], json!({ "roots": {} }));
        assert_eq!(e.in_flight(), 0);
    }
    // Malformed answers.
    let (mut e, t) = held_ticket(fixture_config(), "");
    let long = "k".repeat(65);
    let many: Vec<String> = (0..17).map(|i| format!("k{i}")).collect();
    let many: Vec<InputRequest<'_>> = many.iter().map(|k| InputRequest::list_roots(k)).collect();
    let big = vec![0u8; mcp_engine::mrtr::MAX_HOST_STATE_LEN + 1];
    for bad in [
        InputRequired::new(&[]),
        InputRequired::new(&[InputRequest::list_roots("a"), InputRequest::list_roots("a")]),
        InputRequired::new(&[InputRequest::list_roots("")]),
        InputRequired::new(&[InputRequest::list_roots(&long)]),
        InputRequired::new(&many),
        InputRequired::new(&roots).state(&big),
    ] {
        assert!(matches!(e.answer_input_required(t, &bad), Err(AnswerError::InvalidInputRequest(_))));
    }
    assert!(output(&mut e).is_empty());
    // Load shedding: state only, then the ticket is answered and gone.
    e.answer_input_required(t, &InputRequired::retry_later(b"later")).unwrap();
    let out = output(&mut e);
    assert_eq!(out[0]["result"]["resultType"], "input_required");
    assert!(out[0]["result"]["requestState"].is_string() && out[0]["result"].get("inputRequests").is_none());
    assert_valid(Rev::V2026_07_28, "InputRequiredResult", &out[0]["result"]);
    assert_eq!(e.answer_input_required(t, &InputRequired::new(&roots)), Err(AnswerError::UnknownTicket));

    // Without a key: no requestState, host state refused, a sent state refused.
    let (mut e, t) = held_ticket(Config::new("s", "1"), "");
    assert!(matches!(
        e.answer_input_required(t, &InputRequired::new(&roots).state(b"s")),
        Err(AnswerError::InvalidInputRequest(_))
    ));
    e.answer_input_required(t, &InputRequired::new(&roots)).unwrap();
    let out = output(&mut e);
    assert_eq!(out[0]["result"]["inputRequests"]["k"]["method"], "roots/list");
    assert!(out[0]["result"].get("requestState").is_none(), "{}", out[0]);
}

#[test]
fn a_completion_cannot_ask_for_input() {
    let mut config = fixture_config();
    config.completions(true);
    let mut e = Engine::new(config, everything::catalog());
    let line = request(
        1,
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" },
                "argument": { "name": "arg1", "value": "te" }, "_meta": caps(json!({ "roots": {} })) }),
    );
    e.handle_input(Instant::ZERO, line.as_bytes());
    let t = e.poll_event().expect("a completion").ticket();
    assert_eq!(
        e.answer_input_required(t, &InputRequired::new(&[InputRequest::list_roots("k")])),
        Err(AnswerError::WrongKind)
    );
    e.answer_completion(t, &["test"], None, false).unwrap();
}

#[test]
fn a_kept_ticket_is_answered_later_with_input_requests() {
    let (mut e, t) = held_ticket(fixture_config(), "");
    e.answer_input_required(t, &InputRequired::new(&[InputRequest::list_roots("k")]).state(b"s")).unwrap();
    let out = output(&mut e);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], 9);
    assert_eq!(out[0]["result"]["inputRequests"]["k"], json!({ "method": "roots/list", "params": {} }));
}

#[test]
fn the_key_never_shows_in_debug_output() {
    let c = fixture_config();
    let text = format!("{c:?}");
    assert!(text.contains("<redacted>") && !text.contains("[7, 7"), "{text}");
    assert!(c.has_request_state_key());
}

#[test]
fn input_kinds_name_their_methods() {
    assert_eq!(InputKind::Elicitation.method(), "elicitation/create");
    assert_eq!(InputKind::ElicitationUrl.method(), "elicitation/create");
    assert_eq!(InputKind::Sampling.method(), "sampling/createMessage");
    assert_eq!(InputKind::Roots.method(), "roots/list");
}

/// Over HTTP a host's authorization may name the principal a request acts for: a state
/// issued to one principal is refused for another.
#[test]
fn a_state_is_bound_to_the_principal_the_host_named() {
    use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, Principal, Verdict};
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let host: Host = Box::new(everything::respond);
    let mut c = mcp_tests::wire::client_of(fixture_config(), http, everything::catalog(), host);
    c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    let tool = "test_input_required_result_request_state";
    let call = |id: i64, extra: Value| {
        let mut params =
            json!({ "name": tool, "arguments": {}, "_meta": caps(json!({ "elicitation": {} })) });
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
    };
    let r1 = mcp_tests::wire::one(&mut c, &mcp_tests::wire::post(&call(1, json!({})), &[])).json();
    let state = r1["result"]["requestState"].clone();
    let retry = call(
        2,
        json!({ "requestState": state, "inputResponses": { "confirm": accept(json!({ "ok": true })) } }),
    );
    c.verdict = Verdict::AllowAs(Principal::of(b"mallory"));
    let r = mcp_tests::wire::one(&mut c, &mcp_tests::wire::post(&retry, &[])).json();
    assert_eq!(error_code(&r), -32602, "another principal: {r}");
    c.verdict = Verdict::Allow;
    let r = mcp_tests::wire::one(&mut c, &mcp_tests::wire::post(&retry, &[])).json();
    assert_eq!(error_code(&r), -32602, "no principal: {r}");
    c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    let r = mcp_tests::wire::one(&mut c, &mcp_tests::wire::post(&retry, &[])).json();
    assert_eq!(result_type(&r), "complete", "the same principal: {r}");
}
