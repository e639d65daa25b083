//! The `everything` fixture's answers, in a form a host callback can use.
//!
//! `mcp_engine::everything::respond(&mut Engine, Event<'_>)` cannot be called with an
//! event polled from that same engine: the event borrows the engine mutably, so the
//! `&mut Engine` argument is a second mutable borrow (E0499). Until the engine offers a
//! callable form, this module copies each event into an owned [`Work`] and answers it
//! exactly as `everything::respond` does, using the fixture's public constants.

use mcp_engine::everything::{ERROR_TEXT, PNG_BASE64, SIMPLE_TEXT, STATIC_TEXT, WAV_BASE64};
use mcp_engine::{
    Content, Engine, Event, HostError, PromptMessage, PromptOutput, ResourceContents, Ticket, ToolOutput,
};

/// An event's data, copied out of the engine.
#[derive(Debug, Clone)]
pub(crate) enum Work {
    /// A tool call: name and arguments (JSON object text).
    Tool { ticket: Ticket, name: String, arguments: String },
    /// A resource read: uri and the `id` template variable, if a template matched.
    Resource { ticket: Ticket, uri: String, id: Option<String> },
    /// A prompt: name and arguments (JSON object text).
    Prompt { ticket: Ticket, name: String, arguments: String },
}

impl Work {
    /// Copies what answering `event` needs; `None` for a cancellation.
    pub(crate) fn of(event: Event<'_>) -> Option<Self> {
        Some(match event {
            Event::CallTool(c) => {
                Self::Tool { ticket: c.ticket, name: c.tool.name.clone(), arguments: c.arguments.raw().to_owned() }
            }
            Event::ReadResource(r) => Self::Resource {
                ticket: r.ticket,
                uri: r.uri.to_owned(),
                id: r.variables.get("id").map(str::to_owned),
            },
            Event::GetPrompt(g) => Self::Prompt {
                ticket: g.ticket,
                name: g.prompt.name.clone(),
                arguments: g.arguments.raw().to_owned(),
            },
            _ => return None,
        })
    }
}

/// A host callback: drains the engine's events and answers each with the fixture.
pub(crate) fn respond(engine: &mut Engine) {
    while let Some(event) = engine.poll_event() {
        if let Some(work) = Work::of(event) {
            answer(engine, &work);
        }
    }
}

/// Answers `work` as `mcp_engine::everything::respond` would.
pub(crate) fn answer(engine: &mut Engine, work: &Work) {
    // Answers go to live tickets just polled (or to cancelled ones, which is harmless).
    let _ = match work {
        Work::Tool { ticket, name, arguments } => {
            let ticket = *ticket;
            match name.as_str() {
                "echo" => {
                    #[derive(serde::Deserialize)]
                    struct Echo {
                        text: String,
                    }
                    match serde_json::from_str::<Echo>(arguments) {
                        Ok(Echo { text }) => engine.answer_tool(ticket, &ToolOutput::new(&[Content::text(&text)])),
                        Err(_) => engine.answer_error(ticket, HostError::InvalidParams("text must be a string")),
                    }
                }
                "test_simple_text" => engine.answer_tool(ticket, &ToolOutput::new(&[Content::text(SIMPLE_TEXT)])),
                "test_image_content" => {
                    engine.answer_tool(ticket, &ToolOutput::new(&[Content::image_base64(PNG_BASE64, "image/png")]))
                }
                "test_audio_content" => {
                    engine.answer_tool(ticket, &ToolOutput::new(&[Content::audio_base64(WAV_BASE64, "audio/wav")]))
                }
                "test_embedded_resource" => engine.answer_tool(
                    ticket,
                    &ToolOutput::new(&[Content::embedded(ResourceContents::text(
                        "test://embedded-resource",
                        Some("text/plain"),
                        "This is an embedded resource content.",
                    ))]),
                ),
                "test_multiple_content_types" => engine.answer_tool(
                    ticket,
                    &ToolOutput::new(&[
                        Content::text("Multiple content types test:"),
                        Content::image_base64(PNG_BASE64, "image/png"),
                        Content::embedded(ResourceContents::text(
                            "test://mixed-content-resource",
                            Some("application/json"),
                            r#"{"test":"data","value":123}"#,
                        )),
                    ]),
                ),
                "test_error_handling" => engine.answer_tool(ticket, &ToolOutput::error(&[Content::text(ERROR_TEXT)])),
                _ => engine.answer_error(ticket, HostError::Internal("no handler for this tool")),
            }
        }
        Work::Resource { ticket, uri, id } => {
            let ticket = *ticket;
            if let Some(id) = id {
                let body = serde_json::json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") })
                    .to_string();
                engine.answer_resource(ticket, &[ResourceContents::text(uri, Some("application/json"), &body)])
            } else {
                match uri.as_str() {
                    "test://static-text" => engine.answer_resource(
                        ticket,
                        &[ResourceContents::text("test://static-text", Some("text/plain"), STATIC_TEXT)],
                    ),
                    "test://static-binary" => engine.answer_resource(
                        ticket,
                        &[ResourceContents::blob_base64("test://static-binary", Some("image/png"), PNG_BASE64)],
                    ),
                    _ => engine.answer_error(ticket, HostError::NotFound),
                }
            }
        }
        Work::Prompt { ticket, name, arguments } => {
            let ticket = *ticket;
            let args: std::collections::BTreeMap<String, String> =
                serde_json::from_str(arguments).unwrap_or_default();
            let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
            match name.as_str() {
                "test_simple_prompt" => engine.answer_prompt(
                    ticket,
                    &PromptOutput::new(&[PromptMessage::user(Content::text("This is a simple prompt for testing."))]),
                ),
                "test_prompt_with_arguments" => {
                    let text = format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2"));
                    engine.answer_prompt(ticket, &PromptOutput::new(&[PromptMessage::user(Content::text(&text))]))
                }
                "test_prompt_with_embedded_resource" => {
                    let uri = arg("resourceUri");
                    engine.answer_prompt(
                        ticket,
                        &PromptOutput::new(&[
                            PromptMessage::user(Content::embedded(ResourceContents::text(
                                &uri,
                                Some("text/plain"),
                                "Embedded resource content for testing.",
                            ))),
                            PromptMessage::user(Content::text("Please process the embedded resource above.")),
                        ]),
                    )
                }
                "test_prompt_with_image" => engine.answer_prompt(
                    ticket,
                    &PromptOutput::new(&[
                        PromptMessage::user(Content::image_base64(PNG_BASE64, "image/png")),
                        PromptMessage::user(Content::text("Please analyze the image above.")),
                    ]),
                ),
                _ => engine.answer_error(ticket, HostError::Internal("no handler for this prompt")),
            }
        }
    };
}
