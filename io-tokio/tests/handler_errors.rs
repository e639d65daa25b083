//! `?` in a handler: an `std::io::Error` (or a boxed error) becomes an internal error
//! (`-32603` with its text), a `serde_json::Error` invalid params, anything else
//! `.map_err(HostFailure::internal)`.

mod common;

use std::sync::Arc;

use common::{Client, call};
use mcp_engine::{Config, Engine, Tool};
use mcp_io_tokio::{HostFailure, Router, ToolReply};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Path {
    path: String,
}

/// Reads a file: `?` on the `io::Error`.
async fn read_file(_: (), args: Path) -> Result<ToolReply, HostFailure> {
    let text = std::fs::read_to_string(&args.path)?;
    Ok(ToolReply::text(text))
}

/// Parses a number: any `Display` error through `HostFailure::internal`.
async fn parse(_: (), args: Path) -> Result<ToolReply, HostFailure> {
    let n: u8 = args.path.parse().map_err(HostFailure::internal)?;
    Ok(ToolReply::text(n.to_string()))
}

/// A boxed error from a helper, then `?`.
async fn boxed(_: (), _: Path) -> Result<ToolReply, HostFailure> {
    let failing =
        || -> Result<(), Box<dyn std::error::Error + Send + Sync>> { Err("the cache is cold".into()) };
    failing()?;
    Ok(ToolReply::text("unreachable"))
}

#[tokio::test]
async fn question_mark_on_an_io_error_answers_an_internal_error() {
    let (catalog, handler) = Router::new(())
        .tool(Tool::new("read_file"), read_file)
        .tool(Tool::new("parse"), parse)
        .tool(Tool::new("boxed"), boxed)
        .build()
        .expect("a valid router");
    let mut client =
        Client::start_with(Engine::new(Config::new("errors", "1"), catalog), Arc::clone(&handler), 64 * 1024);
    let missing = std::env::temp_dir().join("mcp-io-tokio-no-such-file-3b9f");
    client.send(&call(1, "read_file", &json!({ "path": missing.to_str().unwrap() }))).await;
    let r = client.recv().await;
    assert_eq!(r["id"], 1);
    assert_eq!(r["error"]["code"], -32603, "{r}");
    // The operating system's message, as `std::fs` gives it.
    let io = std::fs::read_to_string(&missing).unwrap_err();
    assert_eq!(r["error"]["message"], format!("Internal error: {io}"));
    // A file that is there is read.
    let here = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    client.send(&call(2, "read_file", &json!({ "path": here }))).await;
    let r = client.recv().await;
    assert!(r["result"]["content"][0]["text"].as_str().unwrap().contains("mcp-io-tokio"), "{r}");

    client.send(&call(3, "parse", &json!({ "path": "300" }))).await;
    let r = client.recv().await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert_eq!(r["error"]["message"], "Internal error: number too large to fit in target type");

    client.send(&call(4, "boxed", &json!({ "path": "" }))).await;
    let r = client.recv().await;
    assert_eq!(r["error"]["message"], "Internal error: the cache is cold", "{r}");
    assert!(client.finish().await.is_empty());
}

#[test]
fn conversions() {
    let io = std::io::Error::other("disk on fire");
    assert_eq!(HostFailure::from(io), HostFailure::Internal("disk on fire".into()));
    let boxed: Box<dyn std::error::Error + Send + Sync> = "nope".into();
    assert_eq!(HostFailure::from(boxed), HostFailure::Internal("nope".into()));
    let bad = serde_json::from_str::<u32>("\"x\"").unwrap_err();
    assert!(matches!(HostFailure::from(bad), HostFailure::InvalidParams(_)));
}
