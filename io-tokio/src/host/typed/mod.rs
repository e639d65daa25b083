//! The typed router (feature `schemars`): each tool, resource, resource template and
//! prompt declared once, with its handler and its Rust argument type, from which both the
//! catalog entry (schemas derived by schemars) and the dispatch are built.
//!
//! - `output`: what a typed tool returns ([`IntoToolReply`], [`Structured`]) and
//!   [`NoArgs`].
//! - `route` (imports `output`): the routes and the list that dispatches to them
//!   ([`routes`](crate::routes)).
//! - this file: [`Router`], [`TypedHandler`], [`RouterError`].

pub(crate) mod output;
pub(crate) mod route;

use core::fmt;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use mcp_engine::skills::Skill;
use mcp_engine::{Catalog, CatalogBuilder, CatalogError, Prompt, Resource, ResourceTemplate, Tool};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::host::handler::Handler;
use crate::host::reply::{HostFailure, PromptReply, PromptResult, ResourceResult, ToolResult};
use crate::host::request::{PromptGet, ResourceRead, ToolCall};
use crate::host::typed::output::IntoToolReply;
use crate::host::typed::route::{
    PromptRoute, ResourceRoute, RouteList, TemplateRoute, ToolCallRoute, ToolRoute,
};

/// Declares a server's tools, resources, resource templates and prompts, each once with
/// its handler, and builds both the [`Catalog`] the engine serves and the [`Handler`]
/// that answers it ([`TypedHandler`]).
///
/// - A tool's input schema is derived from its argument type (schemars), so the engine
///   enforces what the type declares (required fields, ranges, enums) before the handler
///   runs, and the handler gets the arguments already deserialized. A handler returning
///   [`Structured<T>`](crate::Structured) gives the tool its output schema, derived from `T`.
/// - A template's variables are deserialized into a struct, checked against the template
///   when the router is built ([`RouterError::TemplateVariable`]).
/// - A prompt's arguments are declared from its argument struct (its fields, strings).
///
/// Every handler gets a clone of the router's state `S` (make it cheap to clone: an
/// `Arc`, or a struct of them). Dispatch finds the route by name and awaits its handler
/// in place: the router allocates nothing per request.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// use mcp_engine::{Config, Engine, Tool};
/// use mcp_io_tokio::{HostFailure, Router, Structured};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Add {
///     /// How much to add.
///     #[schemars(range(min = 1, max = 100))]
///     amount: u32,
/// }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Total {
///     total: u64,
/// }
///
/// let counter = Arc::new(Mutex::new(0u64));
/// let (catalog, handler) = Router::new(counter)
///     .tool(Tool::new("add").description("Adds to the counter."), |counter, args: Add| async move {
///         let mut total = counter.lock().map_err(|_| HostFailure::internal("poisoned"))?;
///         *total += u64::from(args.amount);
///         Ok(Structured(Total { total: *total }))
///     })
///     .build()?;
/// let add = catalog.tool("add").unwrap();
/// assert_eq!(add.input_schema.as_ref().unwrap()["properties"]["amount"]["maximum"], 100);
/// assert!(add.output_schema.is_some());
/// let engine = Engine::new(Config::new("counter", "1.0"), catalog);
/// // serve_stdio(engine, handler).await
/// # let _ = (engine, handler);
/// # Ok::<(), mcp_io_tokio::routes::RouterError>(())
/// ```
pub struct Router<S, L = ()> {
    state: S,
    routes: L,
    catalog: CatalogBuilder,
    names: Names,
    /// `(uri template, its variable struct's schema)`, checked once the catalog is built.
    templates: Vec<(String, Value)>,
    /// The first declaration refused before the catalog could see it.
    error: Option<RouterError>,
}

/// Each declared item's position in the route list, by name (tools, prompts), uri
/// (resources) or uri template (templates).
#[derive(Default)]
struct Names {
    tools: HashMap<Box<str>, usize>,
    resources: HashMap<Box<str>, usize>,
    templates: HashMap<Box<str>, usize>,
    prompts: HashMap<Box<str>, usize>,
}

impl<S, L> fmt::Debug for Router<S, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router").field("catalog", &self.catalog).finish_non_exhaustive()
    }
}

impl<S: Clone + Send + Sync + 'static> Router<S> {
    /// A router with no routes yet, whose handlers get a clone of `state`.
    ///
    /// ```
    /// let (catalog, _handler) = mcp_io_tokio::Router::new(()).build()?;
    /// assert_eq!(catalog.tools().count(), 0);
    /// # Ok::<(), mcp_io_tokio::routes::RouterError>(())
    /// ```
    pub fn new(state: S) -> Self {
        Self {
            state,
            routes: (),
            catalog: Catalog::builder(),
            names: Names::default(),
            templates: Vec::new(),
            error: None,
        }
    }
}

impl<S: Clone + Send + Sync + 'static, L: RouteList<S>> Router<S, L> {
    /// Adds a route; `declare` records its name and catalog entry.
    fn route<R>(
        mut self,
        route: R,
        declare: impl FnOnce(&mut Names, CatalogBuilder, usize) -> CatalogBuilder,
    ) -> Router<S, (R, L)> {
        self.catalog = declare(&mut self.names, self.catalog, L::LEN);
        Router {
            state: self.state,
            routes: (route, self.routes),
            catalog: self.catalog,
            names: self.names,
            templates: self.templates,
            error: self.error,
        }
    }

    /// Declares `tool` with the handler `f`, which gets the state and the arguments
    /// deserialized into `A`. The tool's input schema is derived from `A` (any schema set
    /// on `tool` is replaced), and its output schema from the handler's return type when
    /// that is [`Structured<T>`](crate::Structured) ([`IntoToolReply::output_schema`]).
    ///
    /// `A` must be a struct (its schema an object; [`NoArgs`](crate::NoArgs) for none):
    /// otherwise [`build`](Self::build) fails with
    /// [`CatalogError::InputSchemaNotObject`].
    ///
    /// ```
    /// use mcp_engine::Tool;
    /// use mcp_io_tokio::Router;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Greet {
    ///     name: String,
    /// }
    ///
    /// let router = Router::new(()).tool(Tool::new("greet"), |(), args: Greet| async move {
    ///     Ok(format!("Hello, {}!", args.name))
    /// });
    /// let (catalog, _) = router.build()?;
    /// assert_eq!(catalog.tool("greet").unwrap().input_schema.as_ref().unwrap()["required"][0], "name");
    /// # Ok::<(), mcp_io_tokio::routes::RouterError>(())
    /// ```
    pub fn tool<F, A, Fut, R>(self, tool: Tool, f: F) -> Router<S, (ToolRoute<F, A>, L)>
    where
        F: Fn(S, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, HostFailure>> + Send,
        A: DeserializeOwned + JsonSchema + 'static,
        R: IntoToolReply,
    {
        let tool = typed_tool::<A, R>(tool);
        self.route(ToolRoute::new(f), |names, catalog, at| {
            names.tools.insert(tool.name.as_str().into(), at);
            catalog.tool(tool)
        })
    }

    /// Declares `tool` like [`tool`](Self::tool), with a handler that also gets the
    /// [`ToolCall`]: to report progress, log, ask the client for input or publish.
    ///
    /// ```
    /// use mcp_engine::Tool;
    /// use mcp_io_tokio::{NoArgs, Router, ToolCall};
    ///
    /// let router = Router::new(()).tool_with_call(Tool::new("work"), |(), _: NoArgs, call: ToolCall| async move {
    ///     for step in 1..=3 {
    ///         call.progress(f64::from(step), Some(3.0), None);
    ///     }
    ///     Ok("done")
    /// });
    /// # router.build()?;
    /// # Ok::<(), mcp_io_tokio::routes::RouterError>(())
    /// ```
    pub fn tool_with_call<F, A, Fut, R>(self, tool: Tool, f: F) -> Router<S, (ToolCallRoute<F, A>, L)>
    where
        F: Fn(S, A, ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, HostFailure>> + Send,
        A: DeserializeOwned + JsonSchema + 'static,
        R: IntoToolReply,
    {
        let tool = typed_tool::<A, R>(tool);
        self.route(ToolCallRoute::new(f), |names, catalog, at| {
            names.tools.insert(tool.name.as_str().into(), at);
            catalog.tool(tool)
        })
    }

    /// Declares the listed `resource`, read by `f`.
    ///
    /// ```
    /// use mcp_engine::Resource;
    /// use mcp_io_tokio::{ResourceRead, ResourceReply, Router};
    ///
    /// let router = Router::new(()).resource(
    ///     Resource::new("app://readme", "readme").mime_type("text/plain"),
    ///     |(), read: ResourceRead| async move { Ok(ResourceReply::text(read.uri.as_str(), Some("text/plain"), "Hi.")) },
    /// );
    /// let (catalog, _) = router.build()?;
    /// assert_eq!(catalog.resources().count(), 1);
    /// # Ok::<(), mcp_io_tokio::routes::RouterError>(())
    /// ```
    pub fn resource<F, Fut>(self, resource: Resource, f: F) -> Router<S, (ResourceRoute<F>, L)>
    where
        F: Fn(S, ResourceRead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ResourceResult> + Send,
    {
        self.route(ResourceRoute::new(f), |names, catalog, at| {
            names.resources.insert(resource.uri.as_str().into(), at);
            catalog.resource(resource)
        })
    }

    /// Declares the resource `template`, read by `f` with the template's variables
    /// deserialized into `V` (fields of strings, `Option` for query variables).
    ///
    /// [`build`](Self::build) checks `V` against the template
    /// ([`RouterError::TemplateVariable`]): every variable the template names (but an
    /// exploded `{?rest*}`, whose pairs are in
    /// [`ResourceRead::query_pairs`]) is a field of `V` taking a string, and every field
    /// `V` requires is a path variable, which every match defines. A uri whose values `V`
    /// refuses anyway (an enum variant it does not know) is answered "resource not found".
    ///
    /// ```
    /// use mcp_engine::ResourceTemplate;
    /// use mcp_io_tokio::{ResourceRead, ResourceReply, Router};
    /// use mcp_io_tokio::routes::RouterError;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct NoteId {
    ///     id: String,
    /// }
    ///
    /// let read = |(), v: NoteId, read: ResourceRead| async move {
    ///     Ok(ResourceReply::text(read.uri.as_str(), None, format!("note {}", v.id)))
    /// };
    /// Router::new(()).template(ResourceTemplate::new("note://{id}", "note"), read).build()?;
    /// // A variable the struct lacks is refused:
    /// let e = Router::new(()).template(ResourceTemplate::new("note://{key}", "note"), read).build().unwrap_err();
    /// assert!(matches!(e, RouterError::TemplateVariable { .. }));
    /// # Ok::<(), RouterError>(())
    /// ```
    pub fn template<F, V, Fut>(
        mut self,
        template: ResourceTemplate,
        f: F,
    ) -> Router<S, (TemplateRoute<F, V>, L)>
    where
        F: Fn(S, V, ResourceRead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ResourceResult> + Send,
        V: DeserializeOwned + JsonSchema + 'static,
    {
        self.templates.push((template.uri_template.clone(), mcp_engine::input_schema_of::<V>()));
        self.route(TemplateRoute::new(f), |names, catalog, at| {
            names.templates.insert(template.uri_template.as_str().into(), at);
            catalog.template(template)
        })
    }

    /// Declares `prompt` with one argument per field of `A` (strings; see
    /// [`Prompt::arguments_for`]), rendered by `f` with the arguments deserialized into
    /// `A`. A field that is not a string makes [`build`](Self::build) fail.
    ///
    /// ```
    /// use mcp_engine::Prompt;
    /// use mcp_io_tokio::{PromptReply, Router};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Topic {
    ///     /// What to write about.
    ///     topic: String,
    /// }
    ///
    /// let router = Router::new(()).prompt(Prompt::new("essay"), |(), args: Topic| async move {
    ///     Ok(PromptReply::user_text(format!("Write an essay about {}.", args.topic)))
    /// });
    /// let (catalog, _) = router.build()?;
    /// assert!(catalog.prompts().next().unwrap().arguments[0].required);
    /// # Ok::<(), mcp_io_tokio::routes::RouterError>(())
    /// ```
    pub fn prompt<F, A, Fut>(mut self, prompt: Prompt, f: F) -> Router<S, (PromptRoute<F, A>, L)>
    where
        F: Fn(S, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<PromptReply, HostFailure>> + Send,
        A: DeserializeOwned + JsonSchema + 'static,
    {
        let name = prompt.name.clone();
        let prompt = match prompt.arguments_for::<A>() {
            Ok(prompt) => Some(prompt),
            Err(e) => {
                self.error.get_or_insert(RouterError::Catalog(e));
                None
            }
        };
        self.route(PromptRoute::new(f), |names, catalog, at| {
            names.prompts.insert(name.into(), at);
            match prompt {
                Some(prompt) => catalog.prompt(prompt),
                None => catalog,
            }
        })
    }

    /// Serves the skills of the folder `dir` (the skills extension), each folder holding a
    /// `SKILL.md` one skill, addressed as `skill://<folder>/SKILL.md`
    /// ([`skills::load_dir`](crate::skills::load_dir) reads it, once, now). The engine
    /// answers every skill request itself: no handler is involved. A folder that cannot be
    /// read is refused by [`build`](Self::build) ([`RouterError::Skills`]), a skill that
    /// breaks a rule as the catalog refuses it.
    ///
    /// ```no_run
    /// let (catalog, _handler) = mcp_io_tokio::Router::new(()).skills_dir("skills").build()?;
    /// assert!(catalog.has_skills());
    /// # Ok::<(), mcp_io_tokio::routes::RouterError>(())
    /// ```
    #[must_use]
    pub fn skills_dir(mut self, dir: impl AsRef<std::path::Path>) -> Self {
        match crate::host::skills::load_dir(dir, "skill://") {
            Ok(skills) => self.catalog = self.catalog.skills(skills),
            Err(e) => {
                self.error.get_or_insert(RouterError::Skills(e));
            }
        }
        self
    }

    /// Serves these skills (the skills extension; see [`skills_dir`](Self::skills_dir)).
    #[must_use]
    pub fn skills(mut self, skills: impl IntoIterator<Item = Skill>) -> Self {
        self.catalog = self.catalog.skills(skills);
        self
    }

    /// Whether the `format`s of the tools' schemas are checked (default: yes); off, they
    /// are annotations only. See [`CatalogBuilder::validate_formats`].
    ///
    /// ```
    /// let (catalog, _handler) = mcp_io_tokio::Router::new(()).validate_formats(false).build()?;
    /// # let _ = catalog;
    /// # Ok::<(), mcp_io_tokio::routes::RouterError>(())
    /// ```
    #[must_use]
    pub fn validate_formats(mut self, on: bool) -> Self {
        self.catalog = self.catalog.validate_formats(on);
        self
    }

    /// Builds the catalog (refusing what [`CatalogBuilder::build`] refuses) and checks
    /// every template against its variable struct; returns the catalog, to make engines
    /// with, and the handler that answers it.
    ///
    /// ```
    /// use mcp_engine::{CatalogError, Tool};
    /// use mcp_io_tokio::{NoArgs, Router};
    /// use mcp_io_tokio::routes::RouterError;
    ///
    /// let now = |(), _: NoArgs| async { Ok("now") };
    /// let e = Router::new(()).tool(Tool::new("now"), now).tool(Tool::new("now"), now).build().unwrap_err();
    /// assert!(matches!(e, RouterError::Catalog(CatalogError::DuplicateTool(_))));
    /// ```
    pub fn build(self) -> Result<(Catalog, Arc<TypedHandler<S, L>>), RouterError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let catalog = self.catalog.build().map_err(RouterError::Catalog)?;
        for (template, schema) in &self.templates {
            check_template(&catalog, template, schema)?;
        }
        let handler = TypedHandler { state: self.state, routes: self.routes, names: self.names };
        Ok((catalog, Arc::new(handler)))
    }
}

/// `tool` with its schemas derived from its argument type `A` and its reply type `R`.
fn typed_tool<A: JsonSchema, R: IntoToolReply>(tool: Tool) -> Tool {
    let tool = tool.input_schema_for::<A>();
    match R::output_schema() {
        Some(schema) => tool.output_schema(schema),
        None => tool,
    }
}

/// Checks the variable struct of `template` (its `schema`) against the template.
fn check_template(catalog: &Catalog, template: &str, schema: &Value) -> Result<(), RouterError> {
    let refuse = |variable: &str, reason: &'static str| RouterError::TemplateVariable {
        template: template.to_owned(),
        variable: variable.to_owned(),
        reason,
    };
    // The catalog was built from this very template: it is there.
    let Some(variables) = catalog.template_variables(template) else {
        return Err(refuse("", "the template is not in the catalog"));
    };
    let variables: Vec<(&str, bool)> = variables.collect();
    let properties = schema.get("properties").and_then(Value::as_object);
    for &(name, _) in &variables {
        match properties.and_then(|p| p.get(name)) {
            None => return Err(refuse(name, "the template names it, but its struct has no such field")),
            Some(p) if !takes_string(p) => return Err(refuse(name, "its field does not take a string")),
            Some(_) => {}
        }
    }
    let required = schema.get("required").and_then(Value::as_array).into_iter().flatten();
    for field in required.filter_map(Value::as_str) {
        match variables.iter().find(|(name, _)| *name == field) {
            None => {
                return Err(refuse(
                    field,
                    "its struct requires this field, but the template has no such variable",
                ));
            }
            Some((_, false)) => {
                return Err(refuse(
                    field,
                    "its struct requires this field, but a query variable may be absent",
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Whether a field's schema admits a string (template variables are strings).
fn takes_string(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
        // An enum of strings, or a `$ref` to one: the uri's value is checked on each read.
        _ => schema.get("enum").is_some() || schema.get("$ref").is_some() || schema.get("oneOf").is_some(),
    }
}

/// Why a [`Router`] was not built.
///
/// ```
/// use mcp_engine::ResourceTemplate;
/// use mcp_io_tokio::{ResourceReply, Router};
/// use mcp_io_tokio::routes::RouterError;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Vars {
///     id: String,
/// }
///
/// let e = Router::new(())
///     .template(ResourceTemplate::new("note://{id}/{rev}", "note"), |(), _: Vars, _| async {
///         Ok(ResourceReply::not_found())
///     })
///     .build()
///     .unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "resource template `note://{id}/{rev}`, variable `rev`: the template names it, but its struct has no such field"
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum RouterError {
    /// The catalog was refused.
    Catalog(CatalogError),
    /// A template and the struct of its variables do not agree.
    TemplateVariable {
        /// The uri template.
        template: String,
        /// The variable (or field).
        variable: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A skills folder could not be read ([`Router::skills_dir`]).
    Skills(crate::host::skills::LoadError),
}

impl fmt::Display for RouterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Catalog(e) => fmt::Display::fmt(e, f),
            Self::TemplateVariable { template, variable, reason } => {
                write!(f, "resource template `{template}`, variable `{variable}`: {reason}")
            }
            Self::Skills(e) => write!(f, "skills folder: {e}"),
        }
    }
}

impl std::error::Error for RouterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Catalog(e) => Some(e),
            Self::TemplateVariable { .. } => None,
            Self::Skills(e) => Some(e),
        }
    }
}

impl From<CatalogError> for RouterError {
    fn from(e: CatalogError) -> Self {
        Self::Catalog(e)
    }
}

/// The [`Handler`] a [`Router`] builds: finds each request's route by name and awaits
/// its handler. Serve it like any handler ([`serve_stdio`](crate::serve_stdio),
/// [`serve_http`](crate::serve_http), `McpService`), with an engine made from the
/// catalog built with it.
///
/// ```no_run
/// use mcp_engine::{Config, Engine, Tool};
/// use mcp_io_tokio::{NoArgs, Router, serve_stdio};
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let (catalog, handler) = Router::new(()).tool(Tool::new("now"), |(), _: NoArgs| async { Ok("now") }).build()?;
///     serve_stdio(Engine::new(Config::new("clock", "1.0"), catalog), handler).await?;
///     Ok(())
/// }
/// ```
pub struct TypedHandler<S, L> {
    state: S,
    routes: L,
    names: Names,
}

impl<S, L> fmt::Debug for TypedHandler<S, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedHandler")
            .field("tools", &self.names.tools.len())
            .field("resources", &self.names.resources.len())
            .field("templates", &self.names.templates.len())
            .field("prompts", &self.names.prompts.len())
            .finish_non_exhaustive()
    }
}

impl<S: Clone + Send + Sync + 'static, L: RouteList<S>> Handler for TypedHandler<S, L> {
    fn call_tool(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send {
        let at = self.names.tools.get(call.name.as_str()).copied();
        async move {
            match at {
                Some(at) => self.routes.call_tool(at, &self.state, call).await,
                // Only after a catalog replacement that added a tool (Publisher).
                None => Err(HostFailure::internal(format!("no handler for tool `{}`", call.name))),
            }
        }
    }

    fn read_resource(&self, read: ResourceRead) -> impl Future<Output = ResourceResult> + Send {
        let at = match &read.template {
            Some(template) => self.names.templates.get(template.as_str()),
            None => self.names.resources.get(read.uri.as_str()),
        };
        let at = at.copied();
        async move {
            match at {
                Some(at) => self.routes.read_resource(at, &self.state, read).await,
                None => Err(HostFailure::NotFound),
            }
        }
    }

    fn get_prompt(&self, get: PromptGet) -> impl Future<Output = PromptResult> + Send {
        let at = self.names.prompts.get(get.name.as_str()).copied();
        async move {
            match at {
                Some(at) => self.routes.get_prompt(at, &self.state, get).await,
                None => Err(HostFailure::internal(format!("no handler for prompt `{}`", get.name))),
            }
        }
    }
}
