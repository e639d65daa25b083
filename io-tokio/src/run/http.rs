//! The Streamable HTTP server's face: [`serve_http`], and [`HttpServer`], the builder of its
//! settings (stores, telemetry, bounds), served over TCP (`tcp`) or, with feature `tower`,
//! as a tower service (`tower`); both run an [`Owner`] made of these settings.

use mcp_engine::Commands;
use std::future::Future;
use std::io;
use std::sync::Arc;

use mcp_engine::http::HttpEngine;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::auth::{Authorizer, NoAuthorizer};
use crate::host::channel::{Completion, Publisher};
use crate::host::handler::Handler;
use crate::run::owner::{Decided, Owner, Parts};
use crate::run::tcp;
use crate::store::sessions::{EventStore, SessionStore};
use crate::store::tasks::TaskStore;
use crate::telemetry::Telemetry;

/// Serves Streamable HTTP on `listener`: see [`HttpServer`], whose defaults this uses.
///
/// Returns only on an error of `listener` (use [`HttpServer::serve_with_shutdown`] to stop
/// it). Must run inside a tokio runtime.
pub async fn serve_http<H: Handler, A: Authorizer>(
    listener: TcpListener,
    engine: HttpEngine,
    handler: Arc<H>,
    auth: A,
) -> io::Result<()> {
    HttpServer::new(engine, handler, auth).serve(listener).await
}

/// A Streamable HTTP server: an [`HttpEngine`], the [`Handler`] doing its work and the
/// [`Authorizer`] deciding its `Authorize` events, served over TCP
/// ([`serve`](Self::serve)) or, with feature `tower`, as a tower service
/// (`into_service`, see `McpService`).
///
/// # Design
///
/// One task owns the engine and does all the reading and writing, into one read buffer
/// for every connection. It waits on every socket itself: each connection registers a
/// waker of its own for the readiness the engine task waits for (readable while the
/// connection's input is wanted, writable while its output waits for the socket), which
/// queues the connection's id when it fires; a burst of reports from thousands of
/// connections is taken in one pass, with no task per connection. A connection is
/// read only while the engine takes its bytes, each read asking for at most what it takes
/// now ([`HttpEngine::input_capacity`]), so every byte read is taken at once, in order,
/// and no connection holds input of its own; one the engine reads nothing from (a
/// pipelined request behind one the handler works on, a head the authorizer decides on)
/// is not read until that changes (a client that closes it is still noticed), nor while
/// output it was answered waits to be written, so a client that does not read its
/// responses stops being read. Output leaves
/// the engine only as far as the socket takes it ([`HttpEngine::consume_output`] of what
/// was written), so the engine's bound on unsent output (the slow-subscriber rule) and its
/// write timeout hold. Each tool call, resource read or prompt request runs in a task of
/// its own, as with [`serve`](crate::stdio::serve). Closing a connection cancels its request and
/// aborts the task; a client that shuts down only its sending side is taken to have gone
/// away too (once the server reads the end of its input). The engine's timers (head,
/// body, keep-alive idle and write deadlines, SSE keep-alives) run on one timer; the
/// connections the engine ends on its own ([`HttpEngine::poll_ended`]) are closed.
///
/// A connection the engine ends (`connection: close`, a refusal, a `408`) has its response
/// written, its sending side shut down, and what the client still sends drained for up to
/// two seconds before the socket closes, so the client sees the response rather than a
/// reset.
///
/// # Bounds
///
/// At most [`max_in_flight`](Self::max_in_flight) requests are with the handler at once:
/// at that many, no input is offered to the engine and no request authorized, until one
/// finishes. A waiting connection holds no buffer of its own. At
/// [`HttpConfig::max_connections`](mcp_engine::http::HttpConfig::max_connections) the
/// engine makes room by ending the connection idle longest; when every connection is
/// busy, an accepted connection is closed at once and the listener is not polled again
/// until a connection ends.
#[must_use = "an HttpServer does nothing until served"]
pub struct HttpServer<H, A> {
    pub(crate) engine: HttpEngine,
    handler: Arc<H>,
    auth: A,
    max_in_flight: usize,
    pub(crate) max_body: usize,
    /// Where sessions are kept beyond the engine's memory, if anywhere.
    store: Option<Arc<dyn SessionStore>>,
    /// Where session streams' events are kept, if anywhere.
    events: Option<Arc<dyn EventStore>>,
    /// Where task records are kept, if anywhere.
    task_store: Option<Arc<dyn TaskStore>>,
    /// Whether publications are announced to the other nodes sharing the store.
    announce: bool,
    /// What the request spans record beyond the default.
    telemetry: Telemetry,
    /// The channel handler replies and publications come back on (made early so that
    /// [`HttpServer::publisher`] works before serving).
    done: (mpsc::UnboundedSender<Completion>, mpsc::UnboundedReceiver<Completion>),
}

impl<H, A> std::fmt::Debug for HttpServer<H, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("engine", &self.engine)
            .field("max_in_flight", &self.max_in_flight)
            .field("max_body", &self.max_body)
            .finish_non_exhaustive()
    }
}

impl<H: Handler> HttpServer<H, NoAuthorizer> {
    /// A server of `engine` under
    /// [`Authorization::Everyone`](mcp_engine::http::Authorization::Everyone), with
    /// `handler` doing its work: no authorizer to give, since the engine never asks (were
    /// it configured with `Authorization::Host`, every request would be refused `500`, see
    /// [`NoAuthorizer`]). Otherwise as [`new`](HttpServer::new).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use mcp_engine::{Catalog, Config};
    /// # use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
    /// # use mcp_io_tokio::{Handler, HttpServer};
    /// # struct Tools;
    /// # impl Handler for Tools {}
    /// # async fn run() -> std::io::Result<()> {
    /// let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    /// let engine = HttpEngine::new(Config::new("tools", "1"), http, Catalog::empty());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    /// HttpServer::without_authorizer(engine, Arc::new(Tools)).serve(listener).await
    /// # }
    /// ```
    pub fn without_authorizer(engine: HttpEngine, handler: Arc<H>) -> Self {
        Self::new(engine, handler, NoAuthorizer)
    }
}

impl<H: Handler, A: Authorizer> HttpServer<H, A> {
    /// A server of `engine`, with `handler` doing its work and `auth` deciding its
    /// `Authorize` events ([`AllowAll`](crate::http::AllowAll) for an engine configured with
    /// [`Authorization::Everyone`](mcp_engine::http::Authorization::Everyone)).
    ///
    /// It turns the engine's sessions on ([`HttpEngine::set_entropy`], 32 bytes from the
    /// OS random source), so `initialize` opens a session-bound session; should the OS
    /// give no randomness, it logs a warning and the engine serves the stateless wire
    /// only.
    pub fn new(mut engine: HttpEngine, handler: Arc<H>, auth: A) -> Self {
        let mut entropy = [0u8; 32];
        match getrandom::fill(&mut entropy) {
            Ok(()) => engine.set_entropy(&entropy),
            Err(e) => tracing::warn!(%e, "no OS randomness: HTTP sessions stay off"),
        }
        let (max_in_flight, max_body) =
            (engine.config().in_flight_limit(), engine.http_config().body_limit());
        Self {
            engine,
            handler,
            auth,
            max_in_flight,
            max_body,
            store: None,
            events: None,
            task_store: None,
            announce: true,
            telemetry: Telemetry::default(),
            done: mpsc::unbounded_channel(),
        }
    }

    /// What each request's span records beyond the default (see `docs/observability.md`
    /// and [`Telemetry`]): the default records no argument value, token, cursor,
    /// `requestState` or resource uri.
    pub fn telemetry(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Keeps sessions in `store` as well as in the engine's memory (turning the engine's
    /// [`HttpConfig::session_store`](mcp_engine::http::HttpConfig::session_store) on): a
    /// session survives the engine dropping it from memory at its cap, and, with a store
    /// shared by several servers and the same
    /// [`Config::secret_key`](mcp_engine::Config::secret_key), is served by any of them.
    /// The store is asked when a request names a session the engine does not hold, and
    /// when a session is created, changed (`initialized`, `logging/setLevel`,
    /// `resources/subscribe`), deleted or expires; the answer to a change waits until
    /// the store has it. A store that hears the other servers
    /// ([`SessionStore::notices`]) is listened to: [`serve`](Self::serve) takes its first
    /// connection once the store listens (or after 10 s, then keeps trying), the tower
    /// service from when the store listens; each notice goes to the engine, and this
    /// server's catalog news to the others ([`announce_changes`](Self::announce_changes)).
    /// A session in use is touched in the store now and then
    /// ([`HttpConfig::session_touch_every`](mcp_engine::http::HttpConfig::session_touch_every),
    /// [`SessionStore::touch`]). See [`SessionStore`].
    pub fn session_store<S: SessionStore>(mut self, store: Arc<S>) -> Self {
        self.engine.set_session_store(true);
        self.store = Some(store);
        self
    }

    /// Keeps the events of session streams in `store` too (turning the engine's
    /// [`HttpConfig::event_store`](mcp_engine::http::HttpConfig::event_store) on; it
    /// needs a [`session_store`](Self::session_store), usually the same object): every
    /// event written on a session's SSE stream is appended to it in the background, in
    /// order, and a client resuming with a `Last-Event-ID` of a stream this server does
    /// not hold (another node wrote it) gets what it missed from it. See [`EventStore`].
    pub fn event_store<S: EventStore>(mut self, store: Arc<S>) -> Self {
        self.engine.set_event_store(true);
        self.events = Some(store);
        self
    }

    /// Keeps task records in `store` as well as in the engine's memory (turning the
    /// engine's [`HttpConfig::task_store`](mcp_engine::http::HttpConfig::task_store) on):
    /// a task's handle is sent once its record is saved, a task is read, answered and
    /// cancelled on any server sharing the store (give each server its own
    /// [`node_name`](mcp_engine::http::HttpConfig::node_name)), a `2025-11-25` `tasks/list`
    /// lists the caller's tasks of every server from the store ([`TaskStore::list_tasks`];
    /// give the servers the same secret key for its cursors), and a task's result outlives
    /// this process. A change another server makes to a task this server runs is heard
    /// through the [`session_store`](Self::session_store)'s notices
    /// ([`StoreNotice::TaskChanged`](crate::store::StoreNotice::TaskChanged)). See [`TaskStore`].
    pub fn task_store<S: TaskStore>(mut self, store: Arc<S>) -> Self {
        self.engine.set_task_store(true);
        self.task_store = Some(store);
        self
    }

    /// Whether this server's catalog replacements and resource updates
    /// ([`Publisher`]) are announced to the other servers sharing its
    /// [`session_store`](Self::session_store) ([`SessionStore::announce`]; default on), whose
    /// streams then tell their clients. Turn it off when every server's host makes each
    /// change on its own server (a catalog read from a shared source, say): each
    /// server's streams are told by its own replacement then. News the other servers
    /// announce is heard either way.
    pub fn announce_changes(mut self, on: bool) -> Self {
        self.announce = on;
        self
    }

    /// A [`Publisher`] to this server once it runs: replace its catalog, announce
    /// resource updates, end its subscriptions (from any task).
    pub fn publisher(&self) -> Publisher {
        Publisher::new(self.done.0.clone())
    }

    /// The most requests with the handler at once (default: the engine's own
    /// [`Config::max_in_flight`](mcp_engine::Config::max_in_flight), which bounds them anyway: the engine holds a request
    /// that needs a ticket until one frees). Set it lower to run fewer handler tasks.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// The largest body the tower service takes (default: the engine's
    /// [`HttpConfig::max_body`](mcp_engine::http::HttpConfig::max_body), which the engine
    /// enforces itself): a longer one is refused `413`, a declared length at once and a
    /// body without one as it passes the cap. Useful only below the engine's cap. Not used
    /// by [`serve`](Self::serve).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes.max(1);
        self
    }

    /// Serves connections accepted on `listener`. Returns only on an error of `listener`
    /// (a failed accept that concerns one connection, or a lack of file descriptors, is
    /// logged and serving goes on). Must run inside a tokio runtime.
    pub async fn serve(self, listener: TcpListener) -> io::Result<()> {
        self.serve_with_shutdown(listener, std::future::pending()).await
    }

    /// Serves connections accepted on `listener` until `shutdown` completes, then stops
    /// accepting connections and reading requests, waits for the requests with the
    /// handler to be answered and their responses written, and returns `Ok(())`;
    /// connections still open are then closed. Wrap the call in a timeout to bound the
    /// wait.
    pub async fn serve_with_shutdown(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        let telemetry = self.telemetry.clone();
        let (owner, done_rx, decided_rx) = self.into_owner();
        tcp::serve(owner, done_rx, decided_rx, telemetry, listener, shutdown).await
    }

    /// The engine's owner this server's settings make, and the channels it is answered on.
    #[allow(clippy::type_complexity)]
    pub(crate) fn into_owner(
        self,
    ) -> (Owner<H, A>, mpsc::UnboundedReceiver<Completion>, mpsc::UnboundedReceiver<Decided>) {
        Owner::new(Parts {
            engine: self.engine,
            handler: self.handler,
            auth: self.auth,
            max_in_flight: self.max_in_flight,
            store: self.store,
            events: self.events,
            task_store: self.task_store,
            announce: self.announce,
            telemetry: self.telemetry,
            done: self.done,
        })
    }
}
