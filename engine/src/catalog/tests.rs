//! The catalog's unit tests: what a build refuses, and what it prepares.

use super::*;
use serde_json::json;

#[test]
fn duplicates_are_refused_by_name() {
    let e = Catalog::builder().tool(Tool::new("a")).tool(Tool::new("a")).build().unwrap_err();
    assert!(matches!(e, CatalogError::DuplicateTool(n) if n == "a"));
    let e = Catalog::builder()
        .resource(Resource::new("x://1", "one"))
        .resource(Resource::new("x://1", "uno"))
        .build()
        .unwrap_err();
    assert!(matches!(e, CatalogError::DuplicateResource(u) if u == "x://1"));
    let e = Catalog::builder().prompt(Prompt::new("p")).prompt(Prompt::new("p")).build().unwrap_err();
    assert!(matches!(e, CatalogError::DuplicatePrompt(_)));
    let e = Catalog::builder()
        .prompt(Prompt::new("p").argument(PromptArgument::new("a")).argument(PromptArgument::new("a")))
        .build()
        .unwrap_err();
    assert!(matches!(e, CatalogError::DuplicatePromptArgument { .. }));
}

#[test]
fn templates_and_header_annotations_are_checked_at_build() {
    for bad in
        ["x://{a,b}", "x://{#frag}", "x://{a}{b}", "x://{id:0}", "x://{?q}/x", "x://no-variables", "x://{"]
    {
        let e = Catalog::builder().template(ResourceTemplate::new(bad, "t")).build().unwrap_err();
        assert!(
            matches!(&e, CatalogError::InvalidTemplate { template, .. } if template == bad),
            "{bad}: {e}"
        );
    }
    assert!(Catalog::builder().template(ResourceTemplate::new("x://{a}/{+rest}", "t")).build().is_ok());
    assert!(
        Catalog::builder().template(ResourceTemplate::new("x://{id:3}/{+p}{?q,rest*}", "t")).build().is_ok()
    );
    let bad_header = json!({
        "type": "object",
        "properties": { "n": { "type": "number", "x-mcp-header": "N" } }
    });
    let e = Catalog::builder().tool(Tool::new("t").input_schema(bad_header)).build().unwrap_err();
    assert!(matches!(e, CatalogError::InvalidHeaderAnnotation { .. }), "{e}");
    let good = json!({
        "type": "object",
        "properties": { "region": { "type": "string", "x-mcp-header": "Region" } }
    });
    let c = Catalog::builder().tool(Tool::new("t").input_schema(good)).build().unwrap();
    assert_eq!(&*c.tool_header_params("t").unwrap()[0].header, "Region");
    let e = Catalog::builder()
        .tool(Tool::new("t").input_schema(json!({"type": "object", "minProperties": "x"})))
        .build()
        .unwrap_err();
    assert!(matches!(e, CatalogError::InvalidSchema { .. }), "{e}");
}

#[test]
fn input_schema_root_must_be_object() {
    for bad in [json!(true), json!({"type": "string"}), json!({}), json!({"type": ["object"]})] {
        let e = Catalog::builder().tool(Tool::new("t").input_schema(bad)).build().unwrap_err();
        assert!(matches!(e, CatalogError::InputSchemaNotObject(_)), "{e}");
    }
}

#[test]
fn tool_names_follow_the_spec_pattern() {
    for bad in ["", "has space", "slash/name", &"x".repeat(129)] {
        let e = Catalog::builder().tool(Tool::new(bad)).build().unwrap_err();
        assert!(matches!(e, CatalogError::InvalidToolName(_)));
    }
    assert!(Catalog::builder().tool(Tool::new("a.b-c_D9")).build().is_ok());
}

#[test]
fn lists_are_sorted_and_icons_dropped_for_0618() {
    let c = Catalog::builder()
        .tool(Tool::new("b").icon(Icon::new("https://x/i.png")))
        .tool(Tool::new("a"))
        .build()
        .unwrap();
    let names: Vec<_> = c.tools().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(c.list_fragment(ListKind::Tools, 1, true).contains("icons"));
    assert!(!c.list_fragment(ListKind::Tools, 1, false).contains("icons"));
    assert_eq!(c.list_fragment(ListKind::Tools, 0, true), r#"{"name":"a","inputSchema":{"type":"object"}}"#);
    // The digest of a list changes with its contents, and only its own.
    let d = Catalog::builder().tool(Tool::new("b")).tool(Tool::new("a")).build().unwrap();
    assert_ne!(c.list_digests()[0], d.list_digests()[0]);
    assert_eq!(c.list_digests()[1..], d.list_digests()[1..]);
    let same =
        Catalog::builder().tool(Tool::new("a")).tool(Tool::new("b").icon(Icon::new("https://x/i.png")));
    assert_eq!(same.build().unwrap().list_digests(), c.list_digests());
}

#[test]
fn prompt_argument_schema_is_closed() {
    let p = Prompt::new("p").argument(PromptArgument::required("a")).argument(PromptArgument::new("b"));
    assert_eq!(
        p.argument_schema(),
        json!({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false})
    );
}
