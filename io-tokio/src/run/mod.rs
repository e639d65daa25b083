//! The run loops: what owns an engine, reads and writes its bytes and runs its work.
//!
//! - `stdio`: one stream (stdin and stdout, or any reader and writer) and its engine,
//!   [`serve`](stdio::serve), [`serve_with`](stdio::serve_with), [`serve_stdio`](stdio::serve_stdio).
//! - `http`: the Streamable HTTP server's face, [`HttpServer`](http::HttpServer) (the
//!   builder of its settings) and [`serve_http`](http::serve_http).
//! - `owner`: the HTTP engine's owner, `Owner`, shared by both HTTP loops: the engine's
//!   events handed out, the authorizer's verdicts, the stores' answers and the other
//!   nodes' notices back to the engine.
//! - `tcp`: the TCP loop (accepting, reading into one buffer, writing, lingering).
//! - `tower` (feature `tower`): the same endpoint as a tower `Service`, `McpService`.
//! - `work`: the handler tasks every loop shares (started, aborted, answered).
//! - `readiness`: the per-connection wakers the TCP loop waits on.
//!
//! Layers, lowest first: `readiness`, `work`; `stdio`, `owner`; `tcp`, `tower`; `http`.

pub(crate) mod http;
pub(crate) mod owner;
pub(crate) mod readiness;
pub(crate) mod stdio;
pub(crate) mod tcp;
#[cfg(feature = "tower")]
pub(crate) mod tower;
pub(crate) mod work;
