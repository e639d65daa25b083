//! What the host declares: [`Tool`] (with its [`ToolAnnotations`] and [`TaskSupport`]),
//! [`Resource`], [`ResourceTemplate`], [`Prompt`] (with its [`PromptArgument`]s) and
//! their [`Icon`]s, each with its constructors and `with_*` setters. Nothing here is
//! checked: [`CatalogBuilder`](super::CatalogBuilder) refuses what does not hold.

use serde::Serialize;
use serde_json::Value;

/// An icon a client may show for an item (MCP `Icon`). Omitted on the wire for
/// revision `2025-06-18`, which has no icons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// A URI of the image: `https:` or a `data:` URI.
    pub src: String,
    /// MIME type override.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// `"light"` or `"dark"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

impl Icon {
    /// An icon at `src` with no other attribute.
    pub fn new(src: impl Into<String>) -> Self {
        Self { src: src.into(), mime_type: None, sizes: Vec::new(), theme: None }
    }
}

/// Behaviour hints of a tool (MCP `ToolAnnotations`). Hints, not guarantees.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling the tool twice with the same arguments has no further effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// A tool the host offers (MCP `Tool`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Unique name: 1 to 128 characters of `[A-Za-z0-9_.-]`.
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// What the tool does.
    pub description: Option<String>,
    /// JSON Schema of the arguments; its root must be `"type": "object"`. `None` means
    /// the tool takes no declared arguments: it is listed with `{"type":"object"}` and
    /// its arguments are not validated.
    pub input_schema: Option<Value>,
    /// JSON Schema of `structuredContent`.
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    pub annotations: Option<ToolAnnotations>,
    /// Icons (not sent to `2025-06-18` clients).
    pub icons: Vec<Icon>,
    /// Client capabilities (top-level names such as `"sampling"` or `"elicitation"`) a
    /// `2026-07-28` call must declare in its `_meta`; a call that lacks one is refused with
    /// `-32021` and `data.requiredCapabilities` before the host is asked.
    pub required_client_capabilities: Vec<String>,
    /// Scopes a caller needs to see and call the tool over a protected HTTP endpoint:
    /// alternative sets, any one of which suffices; empty: none beyond the method's
    /// ([`Tool::requires_scopes`]).
    pub required_scopes: Vec<Vec<String>>,
    /// Whether calls may run as tasks (with [`Config::tasks`](crate::Config::tasks) on):
    /// [`TaskSupport::Forbidden`] by default.
    pub task_support: TaskSupport,
}

/// Whether a tool's calls may run as tasks ([`Tool::task_support`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task: the host answers every call as a plain call.
    #[default]
    Forbidden,
    /// The host may turn a call into a task when the client can take one
    /// ([`CallTool::can_start_task`](crate::event::CallTool::can_start_task)).
    Optional,
    /// Only as a task: a `2026-07-28` call from a client that did not declare the tasks
    /// extension is refused `-32021` before the host is asked.
    Required,
}

impl Tool {
    /// A tool named `name` with no schema, title or description.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            input_schema: None,
            output_schema: None,
            annotations: None,
            icons: Vec::new(),
            required_client_capabilities: Vec::new(),
            required_scopes: Vec::new(),
            task_support: TaskSupport::Forbidden,
        }
    }
    /// Sets the title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Declares a client capability every call needs (see
    /// [`Tool::required_client_capabilities`]).
    #[must_use]
    pub fn requires_client_capability(mut self, capability: impl Into<String>) -> Self {
        self.required_client_capabilities.push(capability.into());
        self
    }
    /// Says whether calls may run as tasks (see [`TaskSupport`]).
    #[must_use]
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }
    /// Sets the input schema.
    #[must_use]
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }
    /// Sets the output schema.
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }
    /// Sets the annotations.
    #[must_use]
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
    /// Adds an icon.
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }
}

/// A concrete resource (MCP `Resource`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// Unique uri.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// MIME type.
    pub mime_type: Option<String>,
    /// Size in bytes, if known.
    pub size: Option<u64>,
    /// Icons (not sent to `2025-06-18` clients).
    pub icons: Vec<Icon>,
    /// Scopes a caller needs to see and read it ([`Resource::requires_scopes`]).
    pub required_scopes: Vec<Vec<String>>,
}

impl Resource {
    /// A resource at `uri` called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: Vec::new(),
            required_scopes: Vec::new(),
        }
    }
    /// Sets the title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Sets the MIME type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
    /// Sets the size in bytes.
    #[must_use]
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }
    /// Adds an icon.
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }
}

/// A family of resources named by an RFC 6570 template (MCP `ResourceTemplate`).
///
/// The accepted subset, refused at [`CatalogBuilder::build`](super::CatalogBuilder::build) otherwise
/// ([`CatalogError::InvalidTemplate`](super::CatalogError::InvalidTemplate)):
///
/// * `{var}` matches a non-empty value of unreserved characters (`A-Z a-z 0-9 - . _ ~`)
///   and percent escapes: what RFC 6570 simple expansion produces, so no raw `/ ? #` and
///   no other reserved character;
/// * `{+var}` matches a non-empty value that may also hold reserved characters, `/`
///   included;
/// * `{var:3}`, `{+var:3}`: at most 3 characters after decoding;
/// * one query expression at the end, `{?q,limit}` (each variable optional, in any order,
///   at most once) with at most one exploded variable, `{?rest*}`, that collects the
///   other pairs.
///
/// At most 16 path expressions and 32 variables, every name once; two path expressions
/// need literal text between them. Values reach the host percent-decoded (strictly: a
/// malformed escape or invalid UTF-8 is no match) through [`TemplateVars`](crate::event::TemplateVars),
/// and a value that is a traversal (`.`, `..`, a `{var}` holding `/` or `%2F`, a `.`/`..`
/// segment in a `{+var}` or query value) is no match: the read is answered "resource not
/// found" and the host sees nothing. `docs/features.md` has the whole rule set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceTemplate {
    /// The template, e.g. `file:///{+path}`.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// MIME type of the matched resources.
    pub mime_type: Option<String>,
    /// Icons (not sent to `2025-06-18` clients).
    pub icons: Vec<Icon>,
    /// Scopes a caller needs to see it and read what it matches
    /// ([`ResourceTemplate::requires_scopes`]).
    pub required_scopes: Vec<Vec<String>>,
}

impl ResourceTemplate {
    /// A template `uri_template` called `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            icons: Vec::new(),
            required_scopes: Vec::new(),
        }
    }
    /// Sets the title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Sets the MIME type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
    /// Adds an icon.
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }
}

/// One declared argument of a prompt (MCP `PromptArgument`). Prompt arguments are strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    /// Name.
    pub name: String,
    /// Display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the argument must be given.
    #[serde(skip_serializing_if = "core::ops::Not::not")]
    pub required: bool,
}

impl PromptArgument {
    /// An optional argument called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), title: None, description: None, required: false }
    }
    /// A required argument called `name`.
    pub fn required(name: impl Into<String>) -> Self {
        Self { required: true, ..Self::new(name) }
    }
    /// Sets the display title.
    ///
    /// ```
    /// use mcp_engine::PromptArgument;
    ///
    /// let id = PromptArgument::required("id").title("Note id").description("Which note.");
    /// assert_eq!(id.title.as_deref(), Some("Note id"));
    /// ```
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A prompt the host renders (MCP `Prompt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// Unique name.
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Declared arguments; nothing undeclared is accepted.
    pub arguments: Vec<PromptArgument>,
    /// Icons (not sent to `2025-06-18` clients).
    pub icons: Vec<Icon>,
    /// Scopes a caller needs to see and get it ([`Prompt::requires_scopes`]).
    pub required_scopes: Vec<Vec<String>>,
}

impl Prompt {
    /// A prompt called `name` with no arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            arguments: Vec::new(),
            icons: Vec::new(),
            required_scopes: Vec::new(),
        }
    }
    /// Sets the title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Declares an argument.
    #[must_use]
    pub fn argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.push(argument);
        self
    }
    /// The JSON Schema the engine validates this prompt's `arguments` against: one
    /// `string` property per declared argument, `required` from the flags, and
    /// `additionalProperties: false`.
    pub fn argument_schema(&self) -> Value {
        let mut props = serde_json::Map::new();
        let mut required = Vec::new();
        for a in &self.arguments {
            props.insert(a.name.clone(), serde_json::json!({ "type": "string" }));
            if a.required {
                required.push(Value::String(a.name.clone()));
            }
        }
        serde_json::json!({
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": false,
        })
    }
}
