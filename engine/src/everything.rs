//! The `everything` fixture: the catalog and answers the MCP conformance suite and our
//! examples, tests and benchmarks use (feature `everything`).
//!
//! Names and payloads follow the official conformance fixture vocabulary.

use serde_json::json;

use crate::{
    Catalog, ClientCapabilities, CompletionRef, Config, Content, Event, HostError, InputKind,
    InputRequestBuf, InputRequired, LogLevel, Prompt, PromptArgument, PromptMessage, PromptOutput, Resource,
    ResourceContents, ResourceTemplate, Tool, ToolOutput,
};

/// A 1×1 PNG, base64.
pub const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV, base64.
pub const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
/// Text of `test_simple_text`.
pub const SIMPLE_TEXT: &str = "This is a simple text response for testing.";
/// Text of `test://static-text`.
pub const STATIC_TEXT: &str = "This is the content of the static text resource.";
/// What the multi-round-trip fixtures answer under revisions without them.
pub const NEEDS_MRTR: &str = "This needs multi-round-trip requests (protocol revision 2026-07-28).";
/// Text of `test_error_handling`.
pub const ERROR_TEXT: &str = "This tool intentionally returns an error for testing";

/// The fixture configuration: logging, completions, list changes and resource
/// subscriptions on, a fresh random `requestState` key.
pub fn config() -> Config {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).unwrap_or_else(|e| panic!("no OS randomness for the requestState key: {e}"));
    let mut config = Config::new("mcp-engine-everything", env!("CARGO_PKG_VERSION"));
    config
        .logging(true)
        .completions(true)
        .list_changed(true)
        .resource_subscriptions(true)
        .request_state_key(key);
    config
}

/// The fixture catalog.
pub fn catalog() -> Catalog {
    catalog_with(Dynamic::default())
}

/// The items the trigger tools add and remove.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dynamic {
    /// `test_dynamic_tool` is listed.
    pub tool: bool,
    /// `test_dynamic_prompt` is listed.
    pub prompt: bool,
}

/// What a trigger tool asks the host to publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// `test_trigger_tool_change`: add or remove `test_dynamic_tool`.
    ToolChange,
    /// `test_trigger_prompt_change`: add or remove `test_dynamic_prompt`.
    PromptChange,
    /// `test_trigger_resource_update`: `test://watched-resource` changed.
    ResourceUpdate,
}

impl Trigger {
    /// The trigger a tool call is, if any.
    pub fn of(tool: &str) -> Option<Self> {
        match tool {
            "test_trigger_tool_change" => Some(Self::ToolChange),
            "test_trigger_prompt_change" => Some(Self::PromptChange),
            "test_trigger_resource_update" => Some(Self::ResourceUpdate),
            _ => None,
        }
    }

    /// The items after this trigger, or `None` if it changes no list.
    pub fn apply(self, d: Dynamic) -> Option<Dynamic> {
        match self {
            Self::ToolChange => Some(Dynamic { tool: !d.tool, ..d }),
            Self::PromptChange => Some(Dynamic { prompt: !d.prompt, ..d }),
            Self::ResourceUpdate => None,
        }
    }
}

/// The uri `test_trigger_resource_update` announces.
pub const WATCHED: &str = "test://watched-resource";

/// The fixture catalog with the dynamic items `d`.
pub fn catalog_with(d: Dynamic) -> Catalog {
    let no_args = || json!({ "type": "object", "properties": {} });
    let mut builder = Catalog::builder()
        .tool(Tool::new("echo").description("Returns the text it is given as one text block.").input_schema(
            json!({
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"],
                "additionalProperties": false
            }),
        ))
        .tool(
            Tool::new("test_simple_text")
                .description("Returns a simple text response.")
                .input_schema(no_args()),
        )
        .tool(Tool::new("test_image_content").description("Returns a 1x1 PNG image.").input_schema(no_args()))
        .tool(
            Tool::new("test_audio_content")
                .description("Returns a minimal WAV clip.")
                .input_schema(no_args()),
        )
        .tool(
            Tool::new("test_embedded_resource")
                .description("Returns an embedded text resource.")
                .input_schema(no_args()),
        )
        .tool(
            Tool::new("test_multiple_content_types")
                .description("Returns text, an image and an embedded resource.")
                .input_schema(no_args()),
        )
        .tool(
            Tool::new("test_error_handling")
                .description("Always fails with isError: true.")
                .input_schema(no_args()),
        )
        .tool(
            Tool::new("test_tool_with_progress")
                .description("Reports progress 0, 50 and 100 of 100, then answers.")
                .input_schema(no_args()),
        )
        .tool(
            Tool::new("test_logging_tool")
                .description("Logs at info level while it runs (only when the request asks for logs).")
                .input_schema(no_args()),
        )
        .tool(
            Tool::new("test_streaming_elicitation")
                .description("Completes without sending the client any request.")
                .input_schema(no_args()),
        )
        .tool(
            Tool::new("test_missing_capability")
                .description("Needs the client's sampling capability.")
                .input_schema(no_args())
                .requires_client_capability("sampling"),
        )
        .tool(
            Tool::new("test_x_mcp_header")
                .description("Returns the region it is given, which HTTP clients mirror into a header.")
                .input_schema(json!({
                    "type": "object",
                    "properties": { "region": { "type": "string", "x-mcp-header": "Region" } },
                    "required": ["region"]
                })),
        )
        .tool(
            Tool::new("json_schema_2020_12_tool")
                .description("Declares a JSON Schema 2020-12 input schema, listed as written.")
                .input_schema(json_schema_2020_12()),
        )
        .tool(
            Tool::new("test_trigger_tool_change")
                .description("Adds or removes test_dynamic_tool: the tool list changes.")
                .input_schema(no_args()),
        )
        .tool(
            Tool::new("test_trigger_prompt_change")
                .description("Adds or removes test_dynamic_prompt: the prompt list changes.")
                .input_schema(no_args()),
        )
        .tool(
            Tool::new("test_trigger_resource_update")
                .description("Announces that test://watched-resource changed.")
                .input_schema(no_args()),
        )
        .resource(
            Resource::new(WATCHED, "watched-resource")
                .description("A resource clients can subscribe to.")
                .mime_type("text/plain"),
        )
        .resource(
            Resource::new("test://static-text", "static-text")
                .description("A static text resource.")
                .mime_type("text/plain"),
        )
        .resource(
            Resource::new("test://static-binary", "static-binary")
                .description("A static binary resource (a 1x1 PNG).")
                .mime_type("image/png"),
        )
        .template(
            ResourceTemplate::new("test://template/{id}/data", "template-data")
                .description("JSON data for any id.")
                .mime_type("application/json"),
        )
        .prompt(Prompt::new("test_simple_prompt").description("A prompt without arguments."))
        .prompt(
            Prompt::new("test_prompt_with_arguments")
                .description("A prompt with two required arguments.")
                .argument(PromptArgument::required("arg1").description("First argument"))
                .argument(PromptArgument::required("arg2").description("Second argument")),
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource")
                .description("A prompt that embeds a resource.")
                .argument(PromptArgument::required("resourceUri").description("The uri to embed")),
        )
        .prompt(Prompt::new("test_prompt_with_image").description("A prompt with an image."))
        .prompt(
            Prompt::new("test_input_required_result_prompt")
                .description("Asks the client for context (multi-round-trip) before it renders."),
        );
    for (name, description) in MRTR_TOOLS {
        builder = builder.tool(Tool::new(name).description(description).input_schema(no_args()));
    }
    if d.tool {
        builder = builder.tool(
            Tool::new("test_dynamic_tool")
                .description("Listed after test_trigger_tool_change.")
                .input_schema(no_args()),
        );
    }
    if d.prompt {
        builder = builder.prompt(
            Prompt::new("test_dynamic_prompt").description("Listed after test_trigger_prompt_change."),
        );
    }
    builder.build().unwrap_or_else(|e| unreachable!("the fixture catalog is valid: {e}"))
}

/// The input schema of `json_schema_2020_12_tool` (the conformance suite checks that it is
/// listed keyword for keyword).
pub fn json_schema_2020_12() -> serde_json::Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    })
}

/// The multi-round-trip tools (`2026-07-28`), with their descriptions.
pub const MRTR_TOOLS: [(&str, &str); 8] = [
    ("test_input_required_result_elicitation", "Asks the user's name (elicitation), then greets them."),
    ("test_input_required_result_sampling", "Asks the client's model a question (sampling), then answers."),
    ("test_input_required_result_list_roots", "Asks for the client's roots, then lists them."),
    (
        "test_input_required_result_request_state",
        "Asks for a confirmation and checks its own state on the retry.",
    ),
    ("test_input_required_result_multiple_inputs", "Asks for elicitation, sampling and roots at once."),
    ("test_input_required_result_multi_round", "Asks for a name, then a colour, over two rounds."),
    ("test_input_required_result_tampered_state", "Issues a requestState; a tampered one is refused."),
    ("test_input_required_result_capabilities", "Asks only for input the client declared it can give."),
];

/// One step of a multi-round-trip fixture tool or prompt.
#[derive(Debug)]
pub enum Step {
    /// Done: the text of the result.
    Complete(String),
    /// Ask the client for these, with this host state.
    Ask(Vec<InputRequestBuf>, Option<Vec<u8>>),
}

impl Step {
    /// Borrows the requests of an [`Step::Ask`] and hands the answer to `f`.
    pub fn with_input_required<R>(
        requests: &[InputRequestBuf],
        state: Option<&[u8]>,
        f: impl FnOnce(&InputRequired<'_>) -> R,
    ) -> R {
        let borrowed: Vec<_> = requests.iter().map(InputRequestBuf::as_request).collect();
        let mut ir = InputRequired::new(&borrowed);
        if let Some(s) = state {
            ir = ir.state(s);
        }
        f(&ir)
    }
}

/// What the multi-round-trip tool or prompt `name` does with the responses it has (`get`
/// returns the response under a key, parsed) and its verified state; `None` for other
/// names. The same logic serves the synchronous [`respond`] and async hosts.
pub fn input_required_step(
    name: &str,
    get: impl Fn(&str) -> Option<serde_json::Value>,
    state: Option<&[u8]>,
    client: ClientCapabilities,
) -> Option<Step> {
    let accepted = |key: &str, field: &str| -> Option<String> {
        let r = get(key)?;
        if r["action"] != "accept" {
            return None;
        }
        match &r["content"][field] {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Null => None,
            other => Some(other.to_string()),
        }
    };
    let sampled = |key: &str| -> Option<String> {
        let r = get(key)?;
        Some(r["content"]["text"].as_str().map_or_else(|| r["content"].to_string(), str::to_owned))
    };
    let roots = |key: &str| -> Option<Vec<String>> {
        let r = get(key)?;
        Some(r["roots"].as_array()?.iter().filter_map(|x| Some(x["uri"].as_str()?.to_owned())).collect())
    };
    let schema = |field: &str, ty: &str| {
        json!({
            "type": "object", "properties": { field: { "type": ty } }, "required": [field]
        })
    };
    let ask_name =
        |key: &str, message: &str| InputRequestBuf::elicit(key, message, &schema("name", "string"));
    let capital = || InputRequestBuf::sample_text("capital_question", "What is the capital of France?", 100);
    let ask =
        |requests: Vec<InputRequestBuf>, state: Option<&[u8]>| Step::Ask(requests, state.map(<[u8]>::to_vec));
    Some(match name {
        "test_input_required_result_elicitation" => match accepted("user_name", "name") {
            Some(n) => Step::Complete(format!("Hello, {n}!")),
            None => ask(vec![ask_name("user_name", "What is your name?")], None),
        },
        "test_input_required_result_sampling" => match sampled("capital_question") {
            Some(text) => Step::Complete(format!("The client's model says: {text}")),
            None => ask(vec![capital()], None),
        },
        "test_input_required_result_list_roots" => match roots("client_roots") {
            Some(list) => Step::Complete(format!("Client roots: {}", list.join(", "))),
            None => ask(vec![InputRequestBuf::list_roots("client_roots")], None),
        },
        "test_input_required_result_request_state" => {
            const STATE: &[u8] = b"request-state/confirm";
            match (state, get("confirm")) {
                (Some(STATE), Some(r)) if r["action"] == "accept" => {
                    Step::Complete(format!("state-ok: confirmed ({})", r["content"]["ok"]))
                }
                _ => ask(
                    vec![InputRequestBuf::elicit("confirm", "Please confirm", &schema("ok", "boolean"))],
                    Some(STATE),
                ),
            }
        }
        "test_input_required_result_multiple_inputs" => {
            const STATE: &[u8] = b"multiple-inputs";
            let name = accepted("user_name", "name");
            let greeting = sampled("greeting");
            let list = roots("client_roots");
            match (state, name, greeting, list) {
                (Some(STATE), Some(n), Some(g), Some(r)) => {
                    Step::Complete(format!("Hello, {n}! Greeting: {g}. Roots: {}", r.join(", ")))
                }
                _ => ask(
                    vec![
                        ask_name("user_name", "What is your name?"),
                        InputRequestBuf::sample_text("greeting", "Generate a greeting", 50),
                        InputRequestBuf::list_roots("client_roots"),
                    ],
                    Some(STATE),
                ),
            }
        }
        "test_input_required_result_multi_round" => {
            let round2 = state.and_then(|s| s.strip_prefix(b"multi-round/2/"));
            match (state, round2) {
                (_, Some(who)) => match accepted("step2", "color") {
                    Some(color) => Step::Complete(format!("{} likes {color}.", String::from_utf8_lossy(who))),
                    None => ask(
                        vec![InputRequestBuf::elicit(
                            "step2",
                            "Step 2: What is your favorite color?",
                            &schema("color", "string"),
                        )],
                        state,
                    ),
                },
                (Some(b"multi-round/1"), None) if accepted("step1", "name").is_some() => {
                    let who = accepted("step1", "name").unwrap_or_default();
                    let next = [b"multi-round/2/".as_slice(), who.as_bytes()].concat();
                    ask(
                        vec![InputRequestBuf::elicit(
                            "step2",
                            "Step 2: What is your favorite color?",
                            &schema("color", "string"),
                        )],
                        Some(&next),
                    )
                }
                _ => ask(vec![ask_name("step1", "Step 1: What is your name?")], Some(b"multi-round/1")),
            }
        }
        "test_input_required_result_tampered_state" => {
            const STATE: &[u8] = b"tamper-check";
            match (state, get("confirm")) {
                (Some(STATE), Some(_)) => Step::Complete("The requestState verified.".to_owned()),
                _ => ask(
                    vec![InputRequestBuf::elicit("confirm", "Please confirm", &schema("ok", "boolean"))],
                    Some(STATE),
                ),
            }
        }
        "test_input_required_result_capabilities" => {
            // Ask only for what the client can give; if it can give neither, ask anyway
            // and let the engine answer -32021 with what is missing.
            let mut wanted = Vec::new();
            let mut done = Vec::new();
            for (kind, key) in
                [(InputKind::Elicitation, "user_name"), (InputKind::Sampling, "capital_question")]
            {
                if client.supports(kind) {
                    match get(key) {
                        Some(_) => done.push(key),
                        None => wanted.push(key),
                    }
                }
            }
            if done.is_empty() && wanted.is_empty() {
                wanted = vec!["user_name", "capital_question"];
            }
            if wanted.is_empty() {
                Step::Complete(format!("Received: {}", done.join(", ")))
            } else {
                let requests = wanted
                    .iter()
                    .map(|k| if *k == "user_name" { ask_name(k, "What is your name?") } else { capital() })
                    .collect();
                ask(requests, None)
            }
        }
        "test_input_required_result_prompt" => match accepted("user_context", "context") {
            Some(c) => Step::Complete(format!("Use this context: {c}")),
            None => ask(
                vec![InputRequestBuf::elicit(
                    "user_context",
                    "What context should the prompt use?",
                    &schema("context", "string"),
                )],
                None,
            ),
        },
        _ => return None,
    })
}

/// Answers one fixture event synchronously, through the event itself (nothing is
/// copied out of the engine). Cancellations need no answer.
pub fn respond(event: Event<'_>) {
    // Answers go to live tickets just polled, so they cannot fail.
    let _ = match event {
        Event::CallTool(mut call) => {
            let name = call.tool.name.as_str();
            let args = call.arguments;
            let responses = call.input_responses;
            let get = |k: &str| responses.get(k).and_then(|r| r.deserialize().ok());
            if let Some(step) = input_required_step(name, get, call.request_state, call.client) {
                return match step {
                    _ if !call.revision.is_stateless() => {
                        let _ = call.answer(&ToolOutput::error(&[Content::text(NEEDS_MRTR)]));
                    }
                    Step::Complete(text) => {
                        let _ = call.answer(&ToolOutput::new(&[Content::text(&text)]));
                    }
                    Step::Ask(requests, state) => {
                        let _ = Step::with_input_required(&requests, state.as_deref(), |ir| {
                            call.input_required(ir)
                        });
                    }
                };
            }
            match name {
                "echo" => {
                    #[derive(serde::Deserialize)]
                    struct Echo<'a> {
                        #[serde(borrow)]
                        text: std::borrow::Cow<'a, str>,
                    }
                    match args.deserialize::<Echo<'_>>() {
                        Ok(Echo { text }) => call.answer(&ToolOutput::new(&[Content::text(&text)])),
                        Err(_) => call.fail(HostError::InvalidParams("text must be a string")),
                    }
                }
                "test_simple_text" => call.answer(&ToolOutput::new(&[Content::text(SIMPLE_TEXT)])),
                "test_image_content" => {
                    call.answer(&ToolOutput::new(&[Content::image_base64(PNG_BASE64, "image/png")]))
                }
                "test_audio_content" => {
                    call.answer(&ToolOutput::new(&[Content::audio_base64(WAV_BASE64, "audio/wav")]))
                }
                "test_embedded_resource" => {
                    call.answer(&ToolOutput::new(&[Content::embedded(ResourceContents::text(
                        "test://embedded-resource",
                        Some("text/plain"),
                        "This is an embedded resource content.",
                    ))]))
                }
                "test_multiple_content_types" => call.answer(&ToolOutput::new(&[
                    Content::text("Multiple content types test:"),
                    Content::image_base64(PNG_BASE64, "image/png"),
                    Content::embedded(ResourceContents::text(
                        "test://mixed-content-resource",
                        Some("application/json"),
                        r#"{"test":"data","value":123}"#,
                    )),
                ])),
                "test_error_handling" => call.answer(&ToolOutput::error(&[Content::text(ERROR_TEXT)])),
                "test_trigger_tool_change"
                | "test_trigger_prompt_change"
                | "test_trigger_resource_update" => {
                    // The host publishes the change once this event is answered (see `Trigger`).
                    call.answer(&ToolOutput::new(&[Content::text("Change requested.")]))
                }
                "test_dynamic_tool" => call.answer(&ToolOutput::new(&[Content::text("I come and go.")])),
                "test_logging_tool" => {
                    // Sent only when the request asked for logs at `info` or below.
                    for text in ["Tool execution started", "Tool processing data", "Tool execution completed"]
                    {
                        let _ = call.log(LogLevel::Info, Some("test_logging_tool"), text);
                    }
                    call.answer(&ToolOutput::new(&[Content::text("Logging tool finished.")]))
                }
                "test_streaming_elicitation" => {
                    call.answer(&ToolOutput::new(&[Content::text("Streaming elicitation finished.")]))
                }
                "test_missing_capability" => {
                    call.answer(&ToolOutput::new(&[Content::text("Sampling is available.")]))
                }
                "test_tool_with_progress" => {
                    // Reports are dropped when the client asked for none (no progress token).
                    for (p, m) in [(0.0, "started"), (50.0, "halfway"), (100.0, "done")] {
                        let _ = call.progress(p, Some(100.0), Some(m));
                    }
                    call.answer(&ToolOutput::new(&[Content::text("Progress tool finished.")]))
                }
                "test_x_mcp_header" => {
                    #[derive(serde::Deserialize)]
                    struct Region<'a> {
                        #[serde(borrow)]
                        region: std::borrow::Cow<'a, str>,
                    }
                    match args.deserialize::<Region<'_>>() {
                        Ok(Region { region }) => {
                            let text = format!("region: {region}");
                            call.answer(&ToolOutput::new(&[Content::text(&text)]))
                        }
                        Err(_) => call.fail(HostError::InvalidParams("region must be a string")),
                    }
                }
                _ => call.fail(HostError::Internal("no handler for this tool")),
            }
        }
        Event::ReadResource(read) => {
            let uri = read.uri;
            if let Some(id) = read.variables.get("id") {
                let body = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") })
                    .to_string();
                read.answer(&[ResourceContents::text(uri, Some("application/json"), &body)])
            } else {
                match uri {
                    "test://static-text" => read.answer(&[ResourceContents::text(
                        "test://static-text",
                        Some("text/plain"),
                        STATIC_TEXT,
                    )]),
                    WATCHED => read.answer(&[ResourceContents::text(
                        WATCHED,
                        Some("text/plain"),
                        "Watched resource content.",
                    )]),
                    "test://static-binary" => read.answer(&[ResourceContents::blob_base64(
                        "test://static-binary",
                        Some("image/png"),
                        PNG_BASE64,
                    )]),
                    _ => read.fail(HostError::NotFound),
                }
            }
        }
        Event::GetPrompt(get) => {
            let args: std::collections::BTreeMap<String, String> =
                get.arguments.deserialize().unwrap_or_default();
            let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
            let name = get.prompt.name.as_str();
            let responses = get.input_responses;
            let lookup = |k: &str| responses.get(k).and_then(|r| r.deserialize().ok());
            if let Some(step) = input_required_step(name, lookup, get.request_state, get.client) {
                return match step {
                    _ if !get.revision.is_stateless() => {
                        let _ = get.fail(HostError::InvalidParams(NEEDS_MRTR));
                    }
                    Step::Complete(text) => {
                        let _ = get.answer(&PromptOutput::new(&[PromptMessage::user(Content::text(&text))]));
                    }
                    Step::Ask(requests, state) => {
                        let _ = Step::with_input_required(&requests, state.as_deref(), |ir| {
                            get.input_required(ir)
                        });
                    }
                };
            }
            match name {
                "test_simple_prompt" => get.answer(&PromptOutput::new(&[PromptMessage::user(
                    Content::text("This is a simple prompt for testing."),
                )])),
                "test_prompt_with_arguments" => {
                    let text =
                        format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2"));
                    get.answer(&PromptOutput::new(&[PromptMessage::user(Content::text(&text))]))
                }
                "test_prompt_with_embedded_resource" => {
                    let uri = arg("resourceUri");
                    if !(crate::catalog::is_uri_text(&uri) && uri.contains(':')) {
                        let _ = get.fail(HostError::InvalidParams("resourceUri must be a URI"));
                        return;
                    }
                    get.answer(&PromptOutput::new(&[
                        PromptMessage::user(Content::embedded(ResourceContents::text(
                            &uri,
                            Some("text/plain"),
                            "Embedded resource content for testing.",
                        ))),
                        PromptMessage::user(Content::text("Please process the embedded resource above.")),
                    ]))
                }
                "test_dynamic_prompt" => {
                    get.answer(&PromptOutput::new(&[PromptMessage::user(Content::text("I come and go."))]))
                }
                "test_prompt_with_image" => get.answer(&PromptOutput::new(&[
                    PromptMessage::user(Content::image_base64(PNG_BASE64, "image/png")),
                    PromptMessage::user(Content::text("Please analyze the image above.")),
                ])),
                _ => get.fail(HostError::Internal("no handler for this prompt")),
            }
        }
        Event::Complete(complete) => {
            const CANDIDATES: [&str; 4] = ["test-value-1", "test-value-2", "testing", "other"];
            const IDS: [&str; 3] = ["1", "2", "123"];
            let candidates: &[&str] = match complete.reference {
                CompletionRef::Template(_) => &IDS,
                _ => &CANDIDATES,
            };
            let prefix = complete.value;
            let values: heapless::Vec<&str, 4> =
                candidates.iter().copied().filter(|c| c.starts_with(prefix)).collect();
            complete.answer(&values, None, false)
        }
        Event::Cancelled(_) => Ok(()),
    };
}
