//! Serves the conformance `everything` fixture over stdio with async handlers.
//!
//! ```text
//! cargo run --release -p mcp-io-tokio --example everything -- --stdio
//! ```
//!
//! Logs go to stderr (`RUST_LOG` filters them, default `info`); stdout carries only
//! JSON-RPC.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use mcp_engine::everything::{self, ERROR_TEXT, PNG_BASE64, SIMPLE_TEXT, STATIC_TEXT, WAV_BASE64};
use mcp_engine::{Config, Engine};
use mcp_io_tokio::{
    Handler, HostFailure, OwnedContent, OwnedPromptMessage, OwnedResourceContents, PromptGet, PromptReply,
    ResourceRead, ResourceReply, ToolCall, ToolReply, serve_stdio,
};
use tracing_subscriber::EnvFilter;

const USAGE: &str = "\
usage: everything [--stdio]

Serves the MCP conformance `everything` fixture.

  --stdio    serve one client over stdin/stdout (the default)
  -h, --help print this help
";

/// The fixture's answers, given asynchronously.
struct Everything;

impl Handler for Everything {
    async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostFailure> {
        Ok(match call.name.as_str() {
            "echo" => {
                #[derive(serde::Deserialize)]
                struct Echo {
                    text: String,
                }
                let Echo { text } =
                    call.deserialize().map_err(|_| HostFailure::invalid_params("text must be a string"))?;
                ToolReply::text(text)
            }
            "test_simple_text" => ToolReply::text(SIMPLE_TEXT),
            "test_image_content" => ToolReply::new(vec![OwnedContent::image_base64(PNG_BASE64, "image/png")]),
            "test_audio_content" => ToolReply::new(vec![OwnedContent::audio_base64(WAV_BASE64, "audio/wav")]),
            "test_embedded_resource" => {
                ToolReply::new(vec![OwnedContent::embedded(OwnedResourceContents::text(
                    "test://embedded-resource",
                    Some("text/plain"),
                    "This is an embedded resource content.",
                ))])
            }
            "test_multiple_content_types" => ToolReply::new(vec![
                OwnedContent::text("Multiple content types test:"),
                OwnedContent::image_base64(PNG_BASE64, "image/png"),
                OwnedContent::embedded(OwnedResourceContents::text(
                    "test://mixed-content-resource",
                    Some("application/json"),
                    r#"{"test":"data","value":123}"#,
                )),
            ]),
            "test_error_handling" => ToolReply::error(ERROR_TEXT),
            _ => return Err(HostFailure::internal("no handler for this tool")),
        })
    }

    async fn read_resource(&self, read: ResourceRead) -> Result<ResourceReply, HostFailure> {
        if let Some(id) = read.variable("id") {
            let body =
                serde_json::json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
            return Ok(ResourceReply::text(read.uri.as_str(), Some("application/json"), body.to_string()));
        }
        Ok(match read.uri.as_str() {
            "test://static-text" => {
                ResourceReply::text("test://static-text", Some("text/plain"), STATIC_TEXT)
            }
            "test://static-binary" => {
                ResourceReply::blob_base64("test://static-binary", Some("image/png"), PNG_BASE64)
            }
            _ => ResourceReply::not_found(),
        })
    }

    async fn get_prompt(&self, get: PromptGet) -> Result<PromptReply, HostFailure> {
        let args: BTreeMap<String, String> = get.deserialize().unwrap_or_default();
        let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
        Ok(match get.name.as_str() {
            "test_simple_prompt" => PromptReply::user_text("This is a simple prompt for testing."),
            "test_prompt_with_arguments" => PromptReply::user_text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            )),
            "test_prompt_with_embedded_resource" => PromptReply::new(vec![
                OwnedPromptMessage::user(OwnedContent::embedded(OwnedResourceContents::text(
                    arg("resourceUri"),
                    Some("text/plain"),
                    "Embedded resource content for testing.",
                ))),
                OwnedPromptMessage::user("Please process the embedded resource above."),
            ]),
            "test_prompt_with_image" => PromptReply::new(vec![
                OwnedPromptMessage::user(OwnedContent::image_base64(PNG_BASE64, "image/png")),
                OwnedPromptMessage::user("Please analyze the image above."),
            ]),
            _ => return Err(HostFailure::internal("no handler for this prompt")),
        })
    }
}

fn main() -> ExitCode {
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--stdio" => {}
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprint!("everything: unknown argument {other:?}\n\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }

    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .init();

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(%e, "cannot start the tokio runtime");
            return ExitCode::FAILURE;
        }
    };
    let engine =
        Engine::new(Config::new("mcp-engine-everything", env!("CARGO_PKG_VERSION")), everything::catalog());
    tracing::info!("serving the everything fixture on stdio");
    let result = runtime.block_on(serve_stdio(engine, Arc::new(Everything)));
    // A read of stdin may still be pending after an error: do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(()) => {
            tracing::info!("client closed the stream; bye");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!(%e, "serving failed");
            ExitCode::FAILURE
        }
    }
}
