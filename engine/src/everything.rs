//! The `everything` fixture: the catalog and answers the MCP conformance suite and our
//! examples, tests and benchmarks use (feature `everything`).
//!
//! Names and payloads follow the official conformance fixture vocabulary.

use serde_json::json;

use crate::{
    Catalog, CompletionRef, Content, Event, HostError, LogLevel, Prompt, PromptArgument, PromptMessage,
    PromptOutput, Resource, ResourceContents, ResourceTemplate, Tool, ToolOutput,
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
/// Text of `test_error_handling`.
pub const ERROR_TEXT: &str = "This tool intentionally returns an error for testing";

/// The fixture catalog.
pub fn catalog() -> Catalog {
    let no_args = || json!({ "type": "object", "properties": {} });
    Catalog::builder()
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
        .build()
        .unwrap_or_else(|e| unreachable!("the fixture catalog is valid: {e}"))
}

/// Answers one fixture event synchronously, through the event itself (nothing is
/// copied out of the engine). Cancellations need no answer.
pub fn respond(event: Event<'_>) {
    // Answers go to live tickets just polled, so they cannot fail.
    let _ = match event {
        Event::CallTool(mut call) => {
            let name = call.tool.name.as_str();
            let args = call.arguments;
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
