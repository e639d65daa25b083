//! Schemas derived from Rust types (feature `schemars`): a tool's input and output
//! schemas and a prompt's arguments, from types that implement [`schemars::JsonSchema`].
//!
//! The derived schema is JSON Schema draft 2020-12 (the default dialect of MCP), with
//! nested types under `$defs` and `$ref`: the catalog compiles it like any other schema,
//! so what the type declares (ranges, enums, required fields) is what the engine enforces
//! before the host sees a call. Input schemas describe the type as serde deserializes
//! it, output schemas as serde serializes it.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::catalog::{CatalogError, Prompt, PromptArgument, Tool};

/// The JSON Schema of `T` as serde deserializes it (draft 2020-12): what a tool's
/// arguments of type `T` must look like.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Search {
///     /// What to look for.
///     query: String,
///     #[schemars(range(min = 1, max = 50))]
///     limit: Option<u32>,
/// }
///
/// let schema = mcp_engine::input_schema_of::<Search>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"], serde_json::json!(["query"]));
/// assert_eq!(schema["properties"]["limit"]["maximum"], 50);
/// ```
pub fn input_schema_of<T: JsonSchema + ?Sized>() -> Value {
    SchemaSettings::draft2020_12().for_deserialize().into_generator().into_root_schema_for::<T>().into()
}

/// The JSON Schema of `T` as serde serializes it (draft 2020-12): what a tool's
/// `structuredContent` of type `T` looks like.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Found {
///     ids: Vec<u64>,
/// }
///
/// let schema = mcp_engine::output_schema_of::<Found>();
/// assert_eq!(schema["properties"]["ids"]["type"], "array");
/// ```
pub fn output_schema_of<T: JsonSchema + ?Sized>() -> Value {
    SchemaSettings::draft2020_12().for_serialize().into_generator().into_root_schema_for::<T>().into()
}

impl Tool {
    /// Sets the input schema to the one derived from `T` ([`input_schema_of`]).
    ///
    /// `T` must be a struct (or another type whose schema is an object): the catalog
    /// refuses any other root ([`CatalogError::InputSchemaNotObject`]).
    ///
    /// ```
    /// use mcp_engine::{Catalog, Tool};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct AddNote {
    ///     title: String,
    ///     body: String,
    /// }
    ///
    /// let tool = Tool::new("add_note").input_schema_for::<AddNote>();
    /// assert_eq!(tool.input_schema.as_ref().unwrap()["required"], serde_json::json!(["title", "body"]));
    /// Catalog::builder().tool(tool).build()?;
    /// # Ok::<(), mcp_engine::CatalogError>(())
    /// ```
    #[must_use]
    pub fn input_schema_for<T: JsonSchema + ?Sized>(self) -> Self {
        self.input_schema(input_schema_of::<T>())
    }

    /// Sets the output schema to the one derived from `T` ([`output_schema_of`]): the
    /// engine checks every `structuredContent` of this tool against it.
    ///
    /// ```
    /// use mcp_engine::Tool;
    ///
    /// #[derive(serde::Serialize, schemars::JsonSchema)]
    /// struct Found {
    ///     ids: Vec<u64>,
    /// }
    ///
    /// let tool = Tool::new("search").output_schema_for::<Found>();
    /// assert_eq!(tool.output_schema.as_ref().unwrap()["type"], "object");
    /// ```
    #[must_use]
    pub fn output_schema_for<T: JsonSchema + ?Sized>(self) -> Self {
        self.output_schema(output_schema_of::<T>())
    }
}

impl Prompt {
    /// Declares one argument per field of `T` (prompt arguments are strings): its name,
    /// its title and description from the field's schema (doc comments become
    /// descriptions), required unless the field is optional. Arguments declared before
    /// are kept.
    ///
    /// Refused with [`CatalogError::InvalidPromptArguments`] when `T`'s schema is not an
    /// object of string properties (`String`, `Option<String>`, or another type whose
    /// schema is `"type": "string"`).
    ///
    /// ```
    /// use mcp_engine::{CatalogError, Prompt};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Summarize {
    ///     /// The note to summarize.
    ///     id: String,
    ///     /// How to write it.
    ///     style: Option<String>,
    /// }
    ///
    /// let prompt = Prompt::new("summarize").arguments_for::<Summarize>()?;
    /// assert_eq!(prompt.arguments.len(), 2);
    /// assert!(prompt.arguments[0].required && !prompt.arguments[1].required);
    /// assert_eq!(prompt.arguments[0].description.as_deref(), Some("The note to summarize."));
    ///
    /// #[derive(schemars::JsonSchema)]
    /// struct Count {
    ///     n: u32,
    /// }
    /// assert!(matches!(
    ///     Prompt::new("count").arguments_for::<Count>(),
    ///     Err(CatalogError::InvalidPromptArguments { .. })
    /// ));
    /// # Ok::<(), CatalogError>(())
    /// ```
    pub fn arguments_for<T: JsonSchema + ?Sized>(mut self) -> Result<Self, CatalogError> {
        let schema = input_schema_of::<T>();
        let refuse =
            |reason: String| CatalogError::InvalidPromptArguments { prompt: self.name.clone(), reason };
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(refuse("the argument type's schema is not an object".into()));
        }
        let required: Vec<&str> = match schema.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let empty = serde_json::Map::new();
        let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let mut arguments = Vec::with_capacity(properties.len());
        for (name, property) in properties {
            if !is_string_schema(property) {
                return Err(refuse(format!(
                    "argument `{name}` is not a string (prompt arguments are strings)"
                )));
            }
            let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_owned);
            arguments.push(PromptArgument {
                name: name.clone(),
                title: text("title"),
                description: text("description"),
                required: required.contains(&name.as_str()),
            });
        }
        self.arguments.extend(arguments);
        Ok(self)
    }
}

/// Whether `schema` admits only strings (and maybe `null`, for an optional field).
fn is_string_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => {
            types.iter().any(|t| t == "string") && types.iter().all(|t| t == "string" || t == "null")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde_json::json;

    use crate::catalog::{Catalog, CatalogError, Prompt, Tool};

    #[derive(JsonSchema)]
    #[allow(dead_code)] // only the schema is read
    struct Nested {
        kind: Kind,
        #[schemars(range(min = 1, max = 50))]
        limit: Option<u32>,
        tags: Vec<Tag>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    enum Kind {
        Draft,
        Final,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Tag {
        name: String,
    }

    #[test]
    fn derived_schemas_with_refs_compile_into_a_catalog() {
        let tool = Tool::new("t").input_schema_for::<Nested>().output_schema_for::<Nested>();
        let input = tool.input_schema.clone().unwrap();
        assert_eq!(input["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert!(input["$defs"].get("Kind").is_some() && input["$defs"].get("Tag").is_some(), "{input}");
        assert_eq!(input["required"], json!(["kind", "tags"]));
        let catalog = Catalog::builder().tool(tool).build().unwrap();
        assert_eq!(catalog.tool("t").unwrap().input_schema.as_ref(), Some(&input));
    }

    #[test]
    fn a_type_that_is_not_an_object_is_refused_as_input() {
        let e = Catalog::builder().tool(Tool::new("t").input_schema_for::<Kind>()).build().unwrap_err();
        assert!(matches!(e, CatalogError::InputSchemaNotObject(n) if n == "t"));
    }

    #[test]
    fn prompt_arguments_need_a_struct_of_strings() {
        let e = Prompt::new("p").arguments_for::<Nested>().unwrap_err();
        assert!(e.to_string().contains("`kind` is not a string"), "{e}");
        let e = Prompt::new("p").arguments_for::<Kind>().unwrap_err();
        assert!(e.to_string().contains("prompt `p`"), "{e}");
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Args {
            /// Title of the argument.
            #[schemars(title = "Note")]
            id: String,
        }
        let p = Prompt::new("p").arguments_for::<Args>().unwrap();
        assert_eq!(p.arguments[0].title.as_deref(), Some("Note"));
        assert!(p.arguments[0].required);
        Catalog::builder().prompt(p).build().unwrap();
    }
}
