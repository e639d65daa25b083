//! The routes a [`Router`](crate::Router) collects: one value per declared tool, resource,
//! template or prompt, holding its handler and its argument type, chained into a list
//! whose type records every handler.
//!
//! Dispatch goes down that list to the route's position (found by name when the
//! request arrives) and awaits the handler's own future in place: no box, no trait
//! object, no allocation of the router's own. These types are named only by the
//! compiler; a [`Router`](crate::Router) builds them:
//!
//! ```
//! use mcp_io_tokio::{NoArgs, Router};
//!
//! // The router's type records the route: `Router<(), (ToolRoute<{closure}, NoArgs>, ())>`.
//! let router = Router::new(()).tool(mcp_engine::Tool::new("now"), |(), _: NoArgs| async { Ok("now") });
//! # let _ = router;
//! ```

use std::future::Future;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::de::value::MapDeserializer;

use crate::host::reply::{HostFailure, PromptReply, PromptResult, ResourceReply, ResourceResult, ToolResult};
use crate::host::request::{PromptGet, ResourceRead, ToolCall};
use crate::host::typed::output::IntoToolReply;

mod sealed {
    pub trait Sealed {}
}

/// One declared item's handler. Implemented by the route types of this module only.
///
/// ```
/// use mcp_io_tokio::routes::{Route, ToolRoute};
/// use mcp_io_tokio::NoArgs;
///
/// fn is_route<S, R: Route<S>>(_: &R) {}
/// let route = ToolRoute::new(|(), _: NoArgs| async { Ok("now") });
/// is_route::<(), _>(&route);
/// ```
pub trait Route<S>: sealed::Sealed + Send + Sync + 'static {
    /// Performs a tool call (a tool route), or fails.
    fn call_tool(&self, state: &S, call: ToolCall) -> impl Future<Output = ToolResult> + Send;
    /// Reads a resource (a resource or template route), or fails.
    fn read_resource(&self, state: &S, read: ResourceRead) -> impl Future<Output = ResourceResult> + Send;
    /// Renders a prompt (a prompt route), or fails.
    fn get_prompt(&self, state: &S, get: PromptGet) -> impl Future<Output = PromptResult> + Send;
}

/// The list of a router's routes: `()`, or a route followed by a list. Implemented by
/// this crate only.
///
/// ```
/// use mcp_io_tokio::routes::{RouteList, ToolRoute};
/// use mcp_io_tokio::NoArgs;
///
/// let list = (ToolRoute::new(|(), _: NoArgs| async { Ok("now") }), ());
/// assert_eq!(<_ as RouteList<()>>::len(&list), 1);
/// ```
pub trait RouteList<S>: sealed::Sealed + Send + Sync + 'static {
    /// How many routes the list holds.
    const LEN: usize;

    /// How many routes the list holds ([`Self::LEN`]).
    fn len(&self) -> usize {
        Self::LEN
    }

    /// Whether the list holds no route.
    fn is_empty(&self) -> bool {
        Self::LEN == 0
    }

    /// Calls the tool route at position `at` (in the order the routes were declared).
    fn call_tool(&self, at: usize, state: &S, call: ToolCall) -> impl Future<Output = ToolResult> + Send;
    /// Reads through the resource or template route at position `at`.
    fn read_resource(
        &self,
        at: usize,
        state: &S,
        read: ResourceRead,
    ) -> impl Future<Output = ResourceResult> + Send;
    /// Renders through the prompt route at position `at`.
    fn get_prompt(&self, at: usize, state: &S, get: PromptGet) -> impl Future<Output = PromptResult> + Send;
}

/// Answers a request that reached a route of another kind (the router's name tables
/// make this unreachable).
async fn misrouted<T>() -> Result<T, HostFailure> {
    Err(HostFailure::internal("request routed to a handler of another kind"))
}

impl sealed::Sealed for () {}

impl<S: Sync + 'static> RouteList<S> for () {
    const LEN: usize = 0;
    fn call_tool(&self, _: usize, _: &S, _: ToolCall) -> impl Future<Output = ToolResult> + Send {
        misrouted()
    }
    fn read_resource(&self, _: usize, _: &S, _: ResourceRead) -> impl Future<Output = ResourceResult> + Send {
        misrouted()
    }
    fn get_prompt(&self, _: usize, _: &S, _: PromptGet) -> impl Future<Output = PromptResult> + Send {
        misrouted()
    }
}

impl<H, T> sealed::Sealed for (H, T) {}

/// The head is the route declared last: its position is the length of the rest.
impl<S: Sync + 'static, H: Route<S>, T: RouteList<S>> RouteList<S> for (H, T) {
    const LEN: usize = T::LEN + 1;
    async fn call_tool(&self, at: usize, state: &S, call: ToolCall) -> ToolResult {
        if at == T::LEN {
            self.0.call_tool(state, call).await
        } else {
            self.1.call_tool(at, state, call).await
        }
    }
    async fn read_resource(&self, at: usize, state: &S, read: ResourceRead) -> ResourceResult {
        if at == T::LEN {
            self.0.read_resource(state, read).await
        } else {
            self.1.read_resource(at, state, read).await
        }
    }
    async fn get_prompt(&self, at: usize, state: &S, get: PromptGet) -> PromptResult {
        if at == T::LEN {
            self.0.get_prompt(state, get).await
        } else {
            self.1.get_prompt(at, state, get).await
        }
    }
}

/// A tool whose handler takes the state and the deserialized arguments
/// ([`Router::tool`](crate::Router::tool)).
///
/// ```
/// use mcp_io_tokio::NoArgs;
/// use mcp_io_tokio::routes::ToolRoute;
///
/// let route = ToolRoute::new(|(), _: NoArgs| async { Ok("now") });
/// # let _ = route;
/// ```
pub struct ToolRoute<F, A>(F, PhantomData<fn(A)>);

impl<F, A> ToolRoute<F, A> {
    /// The route of handler `f`.
    ///
    /// ```
    /// use mcp_io_tokio::routes::{Route, ToolRoute};
    /// use mcp_io_tokio::{NoArgs, ToolCall, ToolReply};
    ///
    /// let route = ToolRoute::new(|(), _: NoArgs| async { Ok("now") });
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// let reply = rt.block_on(route.call_tool(&(), ToolCall::new("now", "{}")))?;
    /// assert_eq!(reply, ToolReply::text("now"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<S, Fut, R>(f: F) -> Self
    where
        F: Fn(S, A) -> Fut,
        Fut: Future<Output = Result<R, HostFailure>>,
    {
        Self(f, PhantomData)
    }
}

impl<F, A> sealed::Sealed for ToolRoute<F, A> {}

impl<S, F, A, Fut, R> Route<S> for ToolRoute<F, A>
where
    S: Clone + Send + Sync + 'static,
    F: Fn(S, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, HostFailure>> + Send,
    A: DeserializeOwned + 'static,
    R: IntoToolReply,
{
    fn call_tool(&self, state: &S, call: ToolCall) -> impl Future<Output = ToolResult> + Send {
        // The arguments are read, and the call (its pooled buffer) let go, before the
        // handler runs.
        let run = call.deserialize::<A>().map(|args| (self.0)(state.clone(), args));
        async move { run?.await?.into_reply() }
    }
    fn read_resource(&self, _: &S, _: ResourceRead) -> impl Future<Output = ResourceResult> + Send {
        misrouted()
    }
    fn get_prompt(&self, _: &S, _: PromptGet) -> impl Future<Output = PromptResult> + Send {
        misrouted()
    }
}

/// A tool whose handler also takes the [`ToolCall`], to report progress, log, ask the
/// client for input or publish ([`Router::tool_with_call`](crate::Router::tool_with_call)).
///
/// ```
/// use mcp_io_tokio::routes::ToolCallRoute;
/// use mcp_io_tokio::{NoArgs, ToolCall};
///
/// let route = ToolCallRoute::new(|(), _: NoArgs, call: ToolCall| async move {
///     call.progress(1.0, Some(1.0), None);
///     Ok("done")
/// });
/// # let _ = route;
/// ```
pub struct ToolCallRoute<F, A>(F, PhantomData<fn(A)>);

impl<F, A> ToolCallRoute<F, A> {
    /// The route of handler `f`.
    ///
    /// ```
    /// use mcp_io_tokio::routes::{Route, ToolCallRoute};
    /// use mcp_io_tokio::{NoArgs, ToolCall, ToolReply};
    ///
    /// let route = ToolCallRoute::new(|(), _: NoArgs, call: ToolCall| async move {
    ///     Ok(format!("{} done", call.name)) // the call gives the tool's name, progress, input, ...
    /// });
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// let reply = rt.block_on(route.call_tool(&(), ToolCall::new("sync", "{}")))?;
    /// assert_eq!(reply, ToolReply::text("sync done"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<S, Fut, R>(f: F) -> Self
    where
        F: Fn(S, A, ToolCall) -> Fut,
        Fut: Future<Output = Result<R, HostFailure>>,
    {
        Self(f, PhantomData)
    }
}

impl<F, A> sealed::Sealed for ToolCallRoute<F, A> {}

impl<S, F, A, Fut, R> Route<S> for ToolCallRoute<F, A>
where
    S: Clone + Send + Sync + 'static,
    F: Fn(S, A, ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, HostFailure>> + Send,
    A: DeserializeOwned + 'static,
    R: IntoToolReply,
{
    fn call_tool(&self, state: &S, call: ToolCall) -> impl Future<Output = ToolResult> + Send {
        let run = call.deserialize::<A>().map(|args| (self.0)(state.clone(), args, call));
        async move { run?.await?.into_reply() }
    }
    fn read_resource(&self, _: &S, _: ResourceRead) -> impl Future<Output = ResourceResult> + Send {
        misrouted()
    }
    fn get_prompt(&self, _: &S, _: PromptGet) -> impl Future<Output = PromptResult> + Send {
        misrouted()
    }
}

/// A listed resource's handler ([`Router::resource`](crate::Router::resource)).
///
/// ```
/// use mcp_io_tokio::routes::ResourceRoute;
/// use mcp_io_tokio::{ResourceRead, ResourceReply};
///
/// let route = ResourceRoute::new(|(), read: ResourceRead| async move {
///     Ok(ResourceReply::text(read.uri.as_str(), Some("text/plain"), "hello"))
/// });
/// # let _ = route;
/// ```
pub struct ResourceRoute<F>(F);

impl<F> ResourceRoute<F> {
    /// The route of handler `f`.
    ///
    /// ```
    /// use mcp_io_tokio::routes::{ResourceRoute, Route};
    /// use mcp_io_tokio::{ResourceRead, ResourceReply};
    ///
    /// let route = ResourceRoute::new(|(), read: ResourceRead| async move {
    ///     Ok(ResourceReply::text(read.uri.as_str(), None, "# Notes"))
    /// });
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// let reply = rt.block_on(route.read_resource(&(), ResourceRead::new("notes://readme")))?;
    /// assert_eq!(reply, ResourceReply::text("notes://readme", None, "# Notes"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<S, Fut>(f: F) -> Self
    where
        F: Fn(S, ResourceRead) -> Fut,
        Fut: Future<Output = ResourceResult>,
    {
        Self(f)
    }
}

impl<F> sealed::Sealed for ResourceRoute<F> {}

impl<S, F, Fut> Route<S> for ResourceRoute<F>
where
    S: Clone + Send + Sync + 'static,
    F: Fn(S, ResourceRead) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ResourceResult> + Send,
{
    fn call_tool(&self, _: &S, _: ToolCall) -> impl Future<Output = ToolResult> + Send {
        misrouted()
    }
    fn read_resource(&self, state: &S, read: ResourceRead) -> impl Future<Output = ResourceResult> + Send {
        (self.0)(state.clone(), read)
    }
    fn get_prompt(&self, _: &S, _: PromptGet) -> impl Future<Output = PromptResult> + Send {
        misrouted()
    }
}

/// A resource template's handler, with the template's variables deserialized into `V`
/// ([`Router::template`](crate::Router::template)).
///
/// ```
/// use mcp_io_tokio::routes::TemplateRoute;
/// use mcp_io_tokio::{ResourceRead, ResourceReply};
///
/// #[derive(serde::Deserialize)]
/// struct NoteId {
///     id: String,
/// }
///
/// let route = TemplateRoute::new(|(), v: NoteId, read: ResourceRead| async move {
///     Ok(ResourceReply::text(read.uri.as_str(), None, v.id))
/// });
/// # let _ = route;
/// ```
pub struct TemplateRoute<F, V>(F, PhantomData<fn(V)>);

impl<F, V> TemplateRoute<F, V> {
    /// The route of handler `f`.
    ///
    /// A uri whose values `V` refuses (an enum variant it does not know) names no
    /// resource: the route answers [`ResourceReply::NotFound`](crate::ResourceReply::NotFound)
    /// without calling `f`.
    ///
    /// ```
    /// use mcp_io_tokio::routes::{Route, TemplateRoute};
    /// use mcp_io_tokio::{ResourceRead, ResourceReply};
    ///
    /// #[derive(serde::Deserialize)]
    /// #[serde(rename_all = "lowercase")]
    /// enum Shelf {
    ///     Inbox,
    ///     Archive,
    /// }
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Vars {
    ///     shelf: Shelf,
    /// }
    ///
    /// let route = TemplateRoute::new(|(), v: Vars, read: ResourceRead| async move {
    ///     let text = match v.shelf {
    ///         Shelf::Inbox => "3 notes",
    ///         Shelf::Archive => "40 notes",
    ///     };
    ///     Ok(ResourceReply::text(read.uri.as_str(), None, text))
    /// });
    /// let read = |shelf: &str| {
    ///     ResourceRead::new(format!("notes://{shelf}")).with_template("notes://{shelf}", [("shelf", shelf)])
    /// };
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// let reply = rt.block_on(route.read_resource(&(), read("inbox")))?;
    /// assert_eq!(reply, ResourceReply::text("notes://inbox", None, "3 notes"));
    /// assert_eq!(rt.block_on(route.read_resource(&(), read("attic")))?, ResourceReply::NotFound);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<S, Fut>(f: F) -> Self
    where
        F: Fn(S, V, ResourceRead) -> Fut,
        Fut: Future<Output = ResourceResult>,
    {
        Self(f, PhantomData)
    }
}

impl<F, V> sealed::Sealed for TemplateRoute<F, V> {}

impl<S, F, V, Fut> Route<S> for TemplateRoute<F, V>
where
    S: Clone + Send + Sync + 'static,
    F: Fn(S, V, ResourceRead) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ResourceResult> + Send,
    V: DeserializeOwned + 'static,
{
    fn call_tool(&self, _: &S, _: ToolCall) -> impl Future<Output = ToolResult> + Send {
        misrouted()
    }
    fn read_resource(&self, state: &S, read: ResourceRead) -> impl Future<Output = ResourceResult> + Send {
        let vars = read.variables.iter().map(|(name, value)| (name.as_str(), value.as_str()));
        let vars: Result<V, serde::de::value::Error> = V::deserialize(MapDeserializer::new(vars));
        // A value the type refuses (an enum variant it does not know) names no resource.
        let run = vars.map(|vars| (self.0)(state.clone(), vars, read));
        async move {
            match run {
                Ok(run) => run.await,
                Err(_) => Ok(ResourceReply::not_found()),
            }
        }
    }
    fn get_prompt(&self, _: &S, _: PromptGet) -> impl Future<Output = PromptResult> + Send {
        misrouted()
    }
}

/// A prompt's handler, with the arguments deserialized into `A`
/// ([`Router::prompt`](crate::Router::prompt)).
///
/// ```
/// use mcp_io_tokio::PromptReply;
/// use mcp_io_tokio::routes::PromptRoute;
///
/// #[derive(serde::Deserialize)]
/// struct Topic {
///     topic: String,
/// }
///
/// let route = PromptRoute::new(|(), a: Topic| async move { Ok(PromptReply::user_text(a.topic)) });
/// # let _ = route;
/// ```
pub struct PromptRoute<F, A>(F, PhantomData<fn(A)>);

impl<F, A> PromptRoute<F, A> {
    /// The route of handler `f`.
    ///
    /// ```
    /// use mcp_io_tokio::routes::{PromptRoute, Route};
    /// use mcp_io_tokio::{PromptGet, PromptReply};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Topic {
    ///     topic: String,
    /// }
    ///
    /// let route = PromptRoute::new(|(), a: Topic| async move { Ok(PromptReply::user_text(a.topic)) });
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// let reply = rt.block_on(route.get_prompt(&(), PromptGet::new("brainstorm", r#"{"topic":"tea"}"#)))?;
    /// assert_eq!(reply, PromptReply::user_text("tea"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<S, Fut>(f: F) -> Self
    where
        F: Fn(S, A) -> Fut,
        Fut: Future<Output = PromptResult>,
    {
        Self(f, PhantomData)
    }
}

impl<F, A> sealed::Sealed for PromptRoute<F, A> {}

impl<S, F, A, Fut> Route<S> for PromptRoute<F, A>
where
    S: Clone + Send + Sync + 'static,
    F: Fn(S, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<PromptReply, HostFailure>> + Send,
    A: DeserializeOwned + 'static,
{
    fn call_tool(&self, _: &S, _: ToolCall) -> impl Future<Output = ToolResult> + Send {
        misrouted()
    }
    fn read_resource(&self, _: &S, _: ResourceRead) -> impl Future<Output = ResourceResult> + Send {
        misrouted()
    }
    fn get_prompt(&self, state: &S, get: PromptGet) -> impl Future<Output = PromptResult> + Send {
        let run = get.deserialize::<A>().map(|args| (self.0)(state.clone(), args));
        async move { run?.await }
    }
}
