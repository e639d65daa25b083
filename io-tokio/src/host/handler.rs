//! The host's asynchronous work: the [`Handler`] trait and [`tool_fn`] for closures.

use core::fmt;
use std::future::Future;

use crate::host::reply::{
    CompleteResult, CompletionReply, HostFailure, PromptResult, ResourceResult, ToolResult,
};
use crate::host::request::{CompletionRequest, PromptGet, ResourceRead, ToolCall};

/// The work only the host can do, done asynchronously.
///
/// [`serve`](crate::stdio::serve) runs each request's future in a tokio task of its own, so many run
/// at once (up to the engine's [`in_flight_limit`](mcp_engine::Config::in_flight_limit))
/// and finish in any order. A task whose request the client cancels is aborted: the
/// future is dropped at its next `.await`.
///
/// Requests reach a handler only after the engine has validated them against the
/// catalog: the tool, prompt or resource exists and the arguments match the declared
/// schema. Every method has a default that answers `-32603` ("Internal error"), so a
/// handler implements only what its catalog declares.
///
/// A handler that panics is answered `-32603` as well; the server goes on.
pub trait Handler: Send + Sync + 'static {
    /// Performs a tool call.
    fn call_tool(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send {
        let _ = call;
        async { Err(HostFailure::internal("this server does not implement tools/call")) }
    }

    /// Reads a resource.
    fn read_resource(&self, read: ResourceRead) -> impl Future<Output = ResourceResult> + Send {
        let _ = read;
        async { Err(HostFailure::internal("this server does not implement resources/read")) }
    }

    /// Renders a prompt.
    fn get_prompt(&self, get: PromptGet) -> impl Future<Output = PromptResult> + Send {
        let _ = get;
        async { Err(HostFailure::internal("this server does not implement prompts/get")) }
    }

    /// Completes an argument (only called when `Config::completions` is on). The default
    /// offers no candidates.
    fn complete(&self, request: CompletionRequest) -> impl Future<Output = CompleteResult> + Send {
        let _ = request;
        async { Ok(CompletionReply::default()) }
    }
}

/// A [`Handler`] answering tool calls with a closure (and resources and prompts with the
/// defaults). Made by [`tool_fn`].
#[derive(Clone)]
pub struct ToolFn<F>(F);

impl<F> fmt::Debug for ToolFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ToolFn")
    }
}

/// A [`Handler`] whose tool calls run `f`, for servers that only have tools.
///
/// ```
/// use mcp_io_tokio::ToolReply;
/// use mcp_io_tokio::handler::tool_fn;
///
/// let handler = tool_fn(|call| async move {
///     match call.name.as_str() {
///         "now" => Ok(ToolReply::text("It is now.")),
///         _ => Ok(ToolReply::error(format!("unknown tool {}", call.name))),
///     }
/// });
/// # let _ = handler;
/// ```
pub fn tool_fn<F, Fut>(f: F) -> ToolFn<F>
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    ToolFn(f)
}

impl<F, Fut> Handler for ToolFn<F>
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    fn call_tool(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send {
        (self.0)(call)
    }
}
