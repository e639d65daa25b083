//! JSON Schema `format`s are asserted (`CatalogBuilder::validate_formats`, on by default)
//! on tool arguments and structured output, and are annotations when a host turns them
//! off.

use mcp_engine::Commands;
use mcp_engine::{Catalog, Content, Engine, Event, Tool, ToolOutput};
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::{drain_with, legacy_open, lines, modern, request};
use serde_json::{Value, json};

/// `plan`: a `due` date, an `at` date-time and an `owner` email; answered with its
/// arguments as text. `report`: structured output with a `when` date-time.
fn catalog(validate: bool) -> Catalog {
    let input = json!({
        "type": "object",
        "properties": {
            "due": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "owner": {"type": "string", "format": "email"},
            "count": {"type": "integer", "format": "uint32"}
        },
        "required": ["due"]
    });
    let output = json!({
        "type": "object",
        "properties": {"when": {"type": "string", "format": "date-time"}},
        "required": ["when"]
    });
    Catalog::builder()
        .validate_formats(validate)
        .tool(Tool::new("plan").input_schema(input))
        .tool(Tool::new("report").output_schema(output))
        .build()
        .expect("a valid catalog")
}

/// Serves `input`: `plan` echoes its arguments, `report` answers `{"when": <when>}`.
fn serve(catalog: Catalog, input: &str, when: &str) -> (Vec<Value>, Engine) {
    let mut e = Engine::new(mcp_engine::Config::new("formats", "1"), catalog);
    let mut out = Vec::new();
    let structured = json!({ "when": when });
    let mut host = |ev: Event<'_>| {
        if let Event::CallTool(call) = ev {
            if call.tool.name == "plan" {
                let args = call.arguments.raw().to_owned();
                call.answer(&ToolOutput::new(&[Content::text(&args)])).unwrap();
            } else {
                let text = structured.to_string();
                call.answer(&ToolOutput::new(&[Content::text(&text)]).structured(&structured)).unwrap();
            }
        }
    };
    let mut fed = 0;
    while fed < input.len() {
        fed += e.handle_input(mcp_engine::Instant::ZERO, &input.as_bytes()[fed..]);
        drain_with(&mut e, &mut host, &mut out);
    }
    e.handle_eof(mcp_engine::Instant::ZERO);
    drain_with(&mut e, &mut host, &mut out);
    (lines(&out), e)
}

fn plan(args: Value) -> Value {
    json!({"name": "plan", "arguments": args})
}

#[test]
fn a_bad_date_is_refused_before_the_handler_runs() {
    let bad = plan(json!({"due": "not-a-date"}));
    // 2026-07-28 (and 2025-11-25): a tool result with isError naming the value and format.
    let (out, _) = serve(catalog(true), &modern(1, "tools/call", bad.clone()), "");
    assert_eq!(out[0]["result"]["isError"], true, "{out:?}");
    let text = out[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, r#"Invalid arguments for tool plan: "not-a-date" is not a "date" (at "/due")"#);
    assert_valid(Rev::V2026_07_28, "CallToolResult", &out[0]["result"]);
    let (out, _) = serve(
        catalog(true),
        &format!("{}{}", legacy_open("2025-11-25"), request(1, "tools/call", bad.clone())),
        "",
    );
    assert_eq!(out[1]["result"]["isError"], true, "{out:?}");
    // 2025-06-18: `-32602`, the same message.
    let (out, _) =
        serve(catalog(true), &format!("{}{}", legacy_open("2025-06-18"), request(1, "tools/call", bad)), "");
    assert_eq!(out[1]["id"], 1);
    assert_eq!(out[1]["error"]["code"], -32602, "{out:?}");
    let message = out[1]["error"]["message"].as_str().unwrap();
    assert!(message.contains(r#""not-a-date" is not a "date""#) && message.contains("/due"), "{message}");
    // The other formats, each at its path.
    for (args, says) in [
        (json!({"due": "2026-02-30"}), r#""2026-02-30" is not a "date""#),
        (json!({"due": "2026-07-28", "at": "tomorrow"}), r#""tomorrow" is not a "date-time""#),
        (json!({"due": "2026-07-28", "owner": "nobody"}), r#""nobody" is not a "email""#),
    ] {
        let (out, _) = serve(catalog(true), &modern(1, "tools/call", plan(args.clone())), "");
        let text = out[0]["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(says), "{args}: {text}");
    }
}

#[test]
fn valid_values_pass_and_unknown_formats_are_annotations() {
    let args = json!({"due": "2026-07-28", "at": "2026-07-28T09:00:00+02:00", "owner": "ada@example.com", "count": 3});
    let (out, _) = serve(catalog(true), &modern(1, "tools/call", plan(args.clone())), "");
    assert!(out[0]["result"].get("isError").is_none(), "{out:?}");
    let echoed: Value =
        serde_json::from_str(out[0]["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(echoed, args);
}

#[test]
fn formats_switched_off_are_annotations_only() {
    let (out, _) = serve(catalog(false), &modern(1, "tools/call", plan(json!({"due": "not-a-date"}))), "");
    assert!(out[0]["result"].get("isError").is_none(), "{out:?}");
    let echoed: Value =
        serde_json::from_str(out[0]["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(echoed, json!({"due": "not-a-date"}));
    // The schema the client sees still carries the format.
    let (out, _) = serve(catalog(false), &modern(2, "tools/list", json!({})), "");
    let tools = out[0]["result"]["tools"].as_array().unwrap();
    let plan = tools.iter().find(|t| t["name"] == "plan").unwrap();
    assert_eq!(plan["inputSchema"]["properties"]["due"]["format"], "date");
    // Output formats too.
    let (out, _) = serve(catalog(false), &modern(3, "tools/call", json!({"name": "report"})), "whenever");
    assert_eq!(out[0]["result"]["structuredContent"]["when"], "whenever");
}

#[test]
fn structured_output_that_breaks_a_format_is_a_failed_call() {
    let call = json!({"name": "report"});
    let (out, mut e) = serve(catalog(true), &modern(1, "tools/call", call.clone()), "whenever");
    assert_eq!(out[0]["result"]["isError"], true, "{out:?}");
    assert!(out[0]["result"].get("structuredContent").is_none());
    let mismatch = e.observe().take_output_mismatch().expect("reported to the host");
    assert_eq!(mismatch.path, "/when");
    assert!(mismatch.message.contains("is not a \"date-time\""), "{}", mismatch.message);
    let (out, _) = serve(catalog(true), &modern(1, "tools/call", call), "2026-07-28T09:00:00Z");
    assert_eq!(out[0]["result"]["structuredContent"]["when"], "2026-07-28T09:00:00Z");
}
