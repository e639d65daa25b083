//! The typed router: what it refuses at build, and how it routes (handlers called
//! directly, without an engine; `example_notes.rs` drives one end to end).
#![cfg(feature = "schemars")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_engine::{CatalogError, Prompt, Resource, ResourceTemplate, Tool};
use mcp_io_tokio::routes::RouterError;
use mcp_io_tokio::{
    Handler, HostFailure, NoArgs, PromptGet, PromptReply, ResourceRead, ResourceReply, Router, Structured,
    ToolCall, ToolReply,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Id {
    id: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // read by serde and schemars only
struct IdAndRev {
    id: String,
    rev: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // read by serde and schemars only
struct NumericId {
    id: u64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Shade {
    Light,
    Dark,
}

#[derive(Deserialize, JsonSchema)]
struct Themed {
    shade: Shade,
}

async fn read_id(_: (), v: Id, _: ResourceRead) -> Result<ResourceReply, HostFailure> {
    Ok(ResourceReply::text("x", None, v.id))
}

fn template_error<V: for<'de> Deserialize<'de> + JsonSchema + 'static>(template: &str) -> String {
    let read = |(), _: V, _: ResourceRead| async { Ok(ResourceReply::not_found()) };
    match Router::new(()).template(ResourceTemplate::new(template, "t"), read).build() {
        Ok(_) => panic!("{template} was accepted"),
        Err(e @ RouterError::TemplateVariable { .. }) => e.to_string(),
        Err(e) => panic!("{template}: another error: {e}"),
    }
}

#[test]
fn a_template_variable_missing_from_its_struct_is_refused_at_build() {
    let e = template_error::<Id>("note://{id}/{rev}");
    assert_eq!(
        e,
        "resource template `note://{id}/{rev}`, variable `rev`: the template names it, but its struct has no such field"
    );
    // A query variable too.
    let e = template_error::<Id>("note://{id}{?rev}");
    assert!(e.contains("variable `rev`"), "{e}");
    // An exploded query variable's pairs are not fields: no field is needed for it.
    Router::new(()).template(ResourceTemplate::new("note://{id}{?rest*}", "t"), read_id).build().unwrap();
}

#[test]
fn a_struct_field_the_template_cannot_fill_is_refused_at_build() {
    // Required, but the template has no such variable.
    let e = template_error::<IdAndRev>("note://{rev}");
    assert!(e.contains("variable `id`") && e.contains("no such variable"), "{e}");
    // Required, but a query variable may be absent.
    let e = template_error::<Id>("note://x{?id}");
    assert!(e.contains("query variable may be absent"), "{e}");
    // A variable's value is a string: a number field cannot take it.
    let e = template_error::<NumericId>("note://{id}");
    assert!(e.contains("does not take a string"), "{e}");
    // An optional field for a query variable, and an enum of strings, are fine.
    let read = |(), _: IdAndRev, _: ResourceRead| async { Ok(ResourceReply::not_found()) };
    Router::new(()).template(ResourceTemplate::new("note://{id}{?rev}", "t"), read).build().unwrap();
    let read = |(), _: Themed, _: ResourceRead| async { Ok(ResourceReply::not_found()) };
    Router::new(()).template(ResourceTemplate::new("theme://{shade}", "t"), read).build().unwrap();
}

#[test]
fn catalog_mistakes_and_non_string_prompt_arguments_are_refused() {
    let now = |(), _: NoArgs| async { Ok("now") };
    let e = Router::new(()).tool(Tool::new("bad name"), now).build().unwrap_err();
    assert!(matches!(e, RouterError::Catalog(CatalogError::InvalidToolName(_))), "{e}");
    // A tool whose argument type is not an object.
    let e = Router::new(()).tool(Tool::new("t"), |(), _: Shade| async { Ok("x") }).build().unwrap_err();
    assert!(matches!(e, RouterError::Catalog(CatalogError::InputSchemaNotObject(_))), "{e}");
    #[derive(Deserialize, JsonSchema)]
    struct Count {
        #[allow(dead_code)]
        n: u32,
    }
    let e = Router::new(())
        .prompt(Prompt::new("p"), |(), _: Count| async { Ok(PromptReply::user_text("x")) })
        .build()
        .unwrap_err();
    assert!(matches!(e, RouterError::Catalog(CatalogError::InvalidPromptArguments { .. })), "{e}");
    assert_eq!(e.to_string(), "prompt `p`: argument `n` is not a string (prompt arguments are strings)");
}

#[derive(Deserialize, JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

/// A router of two of each kind (tools, resources, templates, prompts), each answering
/// with its own name, sharing a counter of calls as state.
fn many() -> (mcp_engine::Catalog, Arc<impl Handler>, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let count = |calls: &Arc<AtomicUsize>| calls.fetch_add(1, Ordering::SeqCst);
    let (catalog, handler) = Router::new(Arc::clone(&calls))
        .tool(Tool::new("add"), move |calls, args: Add| async move {
            count(&calls);
            Ok(Structured(Sum { sum: args.a + args.b }))
        })
        .resource(Resource::new("x://one", "one"), move |calls, read: ResourceRead| async move {
            count(&calls);
            Ok(ResourceReply::text(read.uri.as_str(), None, "one"))
        })
        .tool_with_call(Tool::new("echo_name"), move |calls, _: NoArgs, call: ToolCall| async move {
            count(&calls);
            Ok(format!("called as {}", call.name))
        })
        .prompt(Prompt::new("first"), move |calls, _: NoArgs| async move {
            count(&calls);
            Ok(PromptReply::user_text("first"))
        })
        .template(ResourceTemplate::new("x://items/{id}", "item"), move |calls, v: Id, _| async move {
            count(&calls);
            Ok(ResourceReply::text("x://items", None, format!("item {}", v.id)))
        })
        .template(ResourceTemplate::new("theme://{shade}", "theme"), move |calls, v: Themed, _| async move {
            count(&calls);
            Ok(ResourceReply::text(
                "theme://",
                None,
                if matches!(v.shade, Shade::Dark) { "dark" } else { "light" },
            ))
        })
        .resource(Resource::new("x://two", "two"), move |calls, read: ResourceRead| async move {
            count(&calls);
            Ok(ResourceReply::text(read.uri.as_str(), None, "two"))
        })
        .prompt(Prompt::new("second"), move |calls, args: Id| async move {
            count(&calls);
            Ok(PromptReply::user_text(format!("second {}", args.id)))
        })
        .build()
        .expect("a valid router");
    (catalog, handler, calls)
}

fn text(reply: &ResourceReply) -> &str {
    match reply {
        ResourceReply::Contents(c) => match &c[0] {
            mcp_io_tokio::reply::OwnedResourceContents::Text { text, .. } => text,
            other => panic!("not text: {other:?}"),
        },
        other => panic!("no contents: {other:?}"),
    }
}

#[tokio::test]
async fn every_request_reaches_the_handler_declared_for_it() {
    let (catalog, handler, calls) = many();
    assert_eq!(catalog.tools().count(), 2);
    assert!(catalog.tool("add").unwrap().output_schema.is_some());
    assert!(catalog.tool("echo_name").unwrap().output_schema.is_none());

    let r = handler.call_tool(ToolCall::new("add", r#"{"a":2,"b":40}"#)).await.unwrap();
    assert_eq!(r.structured_content, Some(serde_json::json!({ "sum": 42 })));
    let r = handler.call_tool(ToolCall::new("echo_name", "{}")).await.unwrap();
    assert_eq!(r, ToolReply::text("called as echo_name"));

    for (uri, want) in [("x://one", "one"), ("x://two", "two")] {
        assert_eq!(text(&handler.read_resource(ResourceRead::new(uri)).await.unwrap()), want);
    }
    let read = ResourceRead::new("x://items/7").with_template("x://items/{id}", [("id", "7")]);
    assert_eq!(text(&handler.read_resource(read).await.unwrap()), "item 7");
    let read = ResourceRead::new("theme://dark").with_template("theme://{shade}", [("shade", "dark")]);
    assert_eq!(text(&handler.read_resource(read).await.unwrap()), "dark");

    let first = handler.get_prompt(PromptGet::new("first", "{}")).await.unwrap();
    assert_eq!(first, PromptReply::user_text("first"));
    let second = handler.get_prompt(PromptGet::new("second", r#"{"id":"x"}"#)).await.unwrap();
    assert_eq!(second, PromptReply::user_text("second x"));
    assert_eq!(calls.load(Ordering::SeqCst), 8, "each handler ran once");
}

#[tokio::test]
async fn what_no_handler_can_take_is_answered_without_one() {
    let (_, handler, calls) = many();
    // Arguments that do not deserialize (the engine validates first; this is what a
    // handler sees without an engine): invalid params, the handler not called.
    let e = handler.call_tool(ToolCall::new("add", r#"{"a":"two"}"#)).await.unwrap_err();
    assert!(matches!(e, HostFailure::InvalidParams(_)), "{e:?}");
    // A value the variable's type refuses: no such resource.
    let read = ResourceRead::new("theme://pink").with_template("theme://{shade}", [("shade", "pink")]);
    assert_eq!(handler.read_resource(read).await.unwrap(), ResourceReply::not_found());
    // Names nothing was declared under (a catalog replaced behind the router's back).
    let e = handler.call_tool(ToolCall::new("gone", "{}")).await.unwrap_err();
    assert_eq!(e, HostFailure::internal("no handler for tool `gone`"));
    assert_eq!(
        handler.read_resource(ResourceRead::new("x://three")).await.unwrap_err(),
        HostFailure::NotFound
    );
    assert!(handler.get_prompt(PromptGet::new("third", "{}")).await.is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no handler ran");
}
