//! Streamable HTTP: [`serve_http`] over a [`TcpListener`], and the engine-owning core it
//! shares with the tower service.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use mcp_engine::Instant;
use mcp_engine::http::{ConnId, HttpEngine, HttpEvent, Loaded, Verdict};
use tokio::io::ReadBuf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::auth::{AuthorizeInfo, Authorizer, NoAuthorizer};
use crate::channel::{Completion, Publisher};
use crate::handler::Handler;
use crate::readiness::{Ready, ReadyQueue};
use crate::store::{EventStore, SessionStore, StoreError, StoreNotice, StoreNotices};
use crate::stream_events::{self, Appender};
use crate::task_store::{TaskDecided, TaskStore};
use crate::telemetry::{Telemetry, Wire};
use crate::work::Tasks;

/// The one buffer every connection is read into (by the engine task).
const READ_BUF_LEN: usize = 64 * 1024;

/// Bytes one readiness report reads at most from one connection before it yields to the
/// others.
const READ_BUDGET: usize = 1 << 20;

/// How long a connection the server ends keeps draining what the client still sends,
/// after its last response, so that the client reads that response rather than a reset.
const LINGER: Duration = Duration::from_secs(2);

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
/// its own, as with [`serve`](crate::serve). Closing a connection cancels its request and
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
    pub(crate) handler: Arc<H>,
    pub(crate) auth: A,
    pub(crate) max_in_flight: usize,
    pub(crate) max_body: usize,
    /// Where sessions are kept beyond the engine's memory, if anywhere.
    pub(crate) store: Option<Arc<dyn SessionStore>>,
    /// Where session streams' events are kept, if anywhere.
    pub(crate) events: Option<Arc<dyn EventStore>>,
    /// Where task records are kept, if anywhere.
    pub(crate) task_store: Option<Arc<dyn TaskStore>>,
    /// Whether publications are announced to the other nodes sharing the store.
    pub(crate) announce: bool,
    /// What the request spans record beyond the default.
    pub(crate) telemetry: Telemetry,
    /// The channel handler replies and publications come back on (made early so that
    /// [`HttpServer::publisher`] works before serving).
    pub(crate) done: (mpsc::UnboundedSender<Completion>, mpsc::UnboundedReceiver<Completion>),
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
    /// `Authorize` events ([`AllowAll`](crate::AllowAll) for an engine configured with
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
    /// ([`StoreNotice::TaskChanged`]). See [`TaskStore`].
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
        let (mut host, mut done_rx, mut decided_rx) = Host::new(self);
        // Connections this server reads itself speak HTTP/1.1.
        host.tasks.set_telemetry(Wire::HTTP1, telemetry);
        // Other nodes' news is heard before the first connection is taken.
        host.listen_first().await;
        let ready = Arc::new(ReadyQueue::default());
        let mut tcp = Tcp {
            host,
            conns: HashMap::new(),
            waiting: VecDeque::new(),
            ready: Arc::clone(&ready),
            reports: Vec::new(),
            reading: true,
            accept_paused: false,
            scratch: Vec::new(),
            buf: vec![0; READ_BUF_LEN].into_boxed_slice(),
        };
        let mut shutdown = std::pin::pin!(shutdown);
        let mut shutting_down = false;
        // Set after running out of file descriptors: accept again from then on.
        let mut accept_after: Option<tokio::time::Instant> = None;
        tracing::debug!(addr = ?listener.local_addr().ok(), "serving HTTP");
        loop {
            tcp.pump();
            if shutting_down && tcp.drained() {
                tracing::debug!("shut down");
                return Ok(());
            }
            let timer = tcp.host.next_timeout();
            tokio::select! {
                biased;
                () = &mut shutdown, if !shutting_down => {
                    tracing::debug!("shutting down: no more connections or requests");
                    shutting_down = true;
                    tcp.reading = false;
                }
                Some(done) = done_rx.recv() => tcp.host.complete(done),
                Some(decided) = decided_rx.recv() => tcp.host.decided(decided),
                notice = tcp.host.notice() => tcp.host.noticed(notice),
                // Every report queued, before one pump: a burst of readiness (thousands
                // of slow clients each sending a byte) costs one pass of the loop.
                () = ready.wait() => tcp.take_ready(),
                () = tokio::time::sleep_until(timer.unwrap_or_else(tokio::time::Instant::now)), if timer.is_some() => {
                    tcp.host.handle_timeout();
                }
                () = tokio::time::sleep_until(accept_after.unwrap_or_else(tokio::time::Instant::now)), if accept_after.is_some() => {
                    accept_after = None;
                }
                accepted = listener.accept(), if !shutting_down && !tcp.accept_paused && accept_after.is_none() => match accepted {
                    Ok((stream, peer)) => tcp.open(stream, peer),
                    Err(e) if is_transient(&e) => tracing::debug!(%e, "accept failed"),
                    Err(e) if is_resource_shortage(&e) => {
                        tracing::warn!(%e, "accept failed; accepting again in 100 ms");
                        accept_after = Some(tokio::time::Instant::now() + Duration::from_millis(100));
                    }
                    Err(e) => return Err(e),
                },
            }
        }
    }
}

/// An accept error that concerns one connection only.
fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// Out of file descriptors or memory: waiting may help.
fn is_resource_shortage(e: &io::Error) -> bool {
    // ENFILE, EMFILE (the same numbers on Linux, the BSDs and macOS); ENOBUFS, ENOMEM.
    matches!(e.raw_os_error(), Some(23 | 24)) || e.kind() == io::ErrorKind::OutOfMemory
}

/// A decision of the [`Authorizer`] on connection `conn`.
pub(crate) struct VerdictMsg {
    conn: ConnId,
    body: bool,
    verdict: Verdict,
}

/// Sends [`Verdict::Failed`] if an authorization task ends without deciding (it
/// panicked), so the request is answered `500` rather than left waiting.
struct VerdictGuard {
    tx: Option<mpsc::UnboundedSender<Decided>>,
    conn: ConnId,
    body: bool,
}

impl VerdictGuard {
    fn send(mut self, verdict: Verdict) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Decided::Verdict(VerdictMsg { conn: self.conn, body: self.body, verdict }));
        }
    }
}

impl Drop for VerdictGuard {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Decided::Verdict(VerdictMsg {
                conn: self.conn,
                body: self.body,
                verdict: Verdict::Failed,
            }));
        }
    }
}

type BoxVerdict = Pin<Box<dyn Future<Output = Verdict> + Send>>;

/// What a task of the host's (an authorizer's decision, a session store's answer)
/// brings back to the engine's task.
pub(crate) enum Decided {
    /// The authorizer's verdict.
    Verdict(VerdictMsg),
    /// The store's answer to a `LoadSession`.
    Loaded(ConnId, Result<Option<Vec<u8>>, StoreError>),
    /// The store's answer to a `SaveSession`.
    Saved(ConnId, Result<(), StoreError>),
    /// The event store's answer to a `LoadEvents`.
    Events(ConnId, stream_events::Loaded),
    /// The store's notices of other nodes' changes, once it listens.
    Listening(StoreNotices),
    /// A task store's answer.
    Task(TaskDecided),
}

/// What an `Authorize` or `AuthorizeBody` event leads to.
enum Ask {
    /// The authorizer decided at once.
    Now(VerdictMsg),
    /// Its future decides: the connection, the head and the body (for a body check).
    Later(ConnId, AuthorizeInfo, Option<Vec<u8>>),
}

/// The engine and what runs its work: handler tasks, authorization tasks, the clock. Used
/// by the TCP loop and the tower service's task alike.
pub(crate) struct Host<H, A> {
    pub(crate) engine: HttpEngine,
    handler: Arc<H>,
    auth: Arc<A>,
    tasks: Tasks,
    pub(crate) verdict_tx: mpsc::UnboundedSender<Decided>,
    /// Where sessions are kept beyond the engine's memory (see `HttpServer::session_store`).
    pub(crate) store: Option<Arc<dyn SessionStore>>,
    /// A store event arrived with no store: said once.
    warned_no_store: bool,
    /// Where session streams' events go (see `HttpServer::event_store`).
    events: Option<Appender>,
    /// Where task records are kept (see `HttpServer::task_store`).
    pub(crate) task_store: Option<Arc<dyn TaskStore>>,
    /// What other nodes sharing the store do, once the store listens (see `listen`).
    pub(crate) notices: Option<StoreNotices>,
    /// Whether this node's publications are announced (`HttpServer::announce_changes`).
    pub(crate) announce: bool,
    /// Authorization tasks still deciding, by connection.
    authorizing: HashMap<ConnId, AbortHandle>,
    /// The request an authorizer is asked about at once, refilled in place.
    asking: AuthorizeInfo,
    /// Allowed requests waiting for room under the in-flight limit.
    deferred: VecDeque<VerdictMsg>,
    /// Connections whose head verdict was delivered since [`Host::take_decided`].
    decided: Vec<ConnId>,
    max_in_flight: usize,
    start: tokio::time::Instant,
}

impl<H: Handler, A: Authorizer> Host<H, A> {
    #[allow(clippy::type_complexity)]
    pub(crate) fn new(
        server: HttpServer<H, A>,
    ) -> (Self, mpsc::UnboundedReceiver<Completion>, mpsc::UnboundedReceiver<Decided>) {
        let (done_tx, done_rx) = server.done;
        let mut tasks = Tasks::with_sender(done_tx);
        tasks.set_telemetry(Wire::HTTP, server.telemetry.clone());
        let (verdict_tx, verdict_rx) = mpsc::unbounded_channel();
        let host = Self {
            engine: server.engine,
            handler: server.handler,
            auth: Arc::new(server.auth),
            tasks,
            verdict_tx,
            store: server.store,
            warned_no_store: false,
            events: server.events.map(Appender::new),
            task_store: server.task_store,
            notices: None,
            announce: server.announce,
            authorizing: HashMap::new(),
            asking: AuthorizeInfo::new(None, core::iter::empty::<(String, Vec<u8>)>()),
            deferred: VecDeque::new(),
            decided: Vec::new(),
            max_in_flight: server.max_in_flight,
            start: tokio::time::Instant::now(),
        };
        (host, done_rx, verdict_rx)
    }

    /// The engine's time, and the wall clock set to match it.
    pub(crate) fn now(&mut self) -> Instant {
        let now = Instant::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX));
        self.engine.set_wall_clock(now, mcp_engine::UnixTime::from_system_time(std::time::SystemTime::now()));
        now
    }

    /// Says input was read at `now`: the requests the engine answers from it begin there.
    pub(crate) fn received(&mut self, now: Instant) {
        self.tasks.received(now);
    }

    /// Whether the engine may start one more request without passing the in-flight limit.
    pub(crate) fn room(&self) -> bool {
        self.engine.in_flight() < self.max_in_flight
    }

    /// Whether nothing is with the handler or the authorizer.
    pub(crate) fn idle(&self) -> bool {
        self.engine.in_flight() == 0 && self.tasks.is_empty()
    }

    /// When the engine's next deadline falls.
    pub(crate) fn next_timeout(&self) -> Option<tokio::time::Instant> {
        let at = self.engine.poll_timeout()?;
        Some(self.start + Duration::from_micros(at.as_micros()))
    }

    pub(crate) fn handle_timeout(&mut self) {
        let now = self.now();
        self.engine.handle_timeout(now);
    }

    /// Drains the engine's events: starts handler and authorization work, aborts cancelled
    /// work. Returns whether there was any.
    pub(crate) fn drain(&mut self) -> bool {
        let mut any = false;
        // The requests the engine answered itself get their spans first (they came first).
        self.tasks.served(&mut self.engine);
        loop {
            // A decision taken at once (no allocation), or an owned copy for a task.
            let ask = match self.engine.poll_event() {
                None => break,
                Some(HttpEvent::Mcp(event)) => {
                    self.tasks.dispatch(&self.handler, event);
                    None
                }
                Some(HttpEvent::Authorize(req)) => {
                    self.asking.refill(req.peer, req.client, &req.headers, req.scopes);
                    Some(match self.auth.authorize_now(&self.asking) {
                        Some(verdict) => Ask::Now(VerdictMsg { conn: req.conn, body: false, verdict }),
                        None => Ask::Later(req.conn, self.asking.clone(), None),
                    })
                }
                Some(HttpEvent::AuthorizeBody(req)) => {
                    self.asking.refill(req.peer, req.client, &req.headers, req.scopes);
                    Some(match self.auth.authorize_body_now(&self.asking, req.body) {
                        Some(verdict) => Ask::Now(VerdictMsg { conn: req.conn, body: true, verdict }),
                        None => Ask::Later(req.conn, self.asking.clone(), Some(req.body.to_vec())),
                    })
                }
                Some(HttpEvent::LoadSession(load)) => {
                    let (conn, id) = (load.conn, load.id.to_owned());
                    self.load(conn, id);
                    None
                }
                Some(HttpEvent::SaveSession(save)) => {
                    let (conn, id, record) = (save.conn, save.id.to_owned(), save.record.map(<[u8]>::to_vec));
                    self.save(conn, id, record);
                    None
                }
                Some(HttpEvent::TouchSession(t)) => {
                    let id = t.id.to_owned();
                    self.touch(id);
                    None
                }
                Some(HttpEvent::SessionExpired(gone)) => {
                    let id = gone.id.to_owned();
                    if let Some(store) = self.store.clone() {
                        tokio::spawn(async move {
                            if let Err(e) = store.expired(&id).await {
                                tracing::warn!(%e, "an expired session stays in the store");
                            }
                        });
                    }
                    None
                }
                Some(HttpEvent::AppendEvent(e)) => {
                    if let Some(events) = self.events.as_mut() {
                        events.push(&e);
                    }
                    None
                }
                Some(HttpEvent::LoadEvents(load)) => {
                    let (conn, id, stream, from) =
                        (load.conn, load.session.to_owned(), load.stream, load.from);
                    let tx = self.verdict_tx.clone();
                    let store = self.events.as_ref().map(Appender::store);
                    tokio::spawn(async move {
                        let found = match store {
                            Some(store) => store.load_events(&id, stream, from).await,
                            None => Err(StoreError::new("no event store")),
                        };
                        let _ = tx.send(Decided::Events(conn, found));
                    });
                    None
                }
                Some(HttpEvent::SaveTask(save)) => {
                    let save = crate::task_store::TaskSave::of(&save);
                    self.save_task(save);
                    None
                }
                Some(HttpEvent::LoadTask(load)) => {
                    let id = load.id.to_owned();
                    self.load_task(id);
                    None
                }
                Some(HttpEvent::TaskExpired(gone)) => {
                    let id = gone.id.to_owned();
                    self.task_expired(id);
                    None
                }
                Some(HttpEvent::ListTasks(list)) => {
                    let (query, ask) = (list.query, crate::task_store::TaskListQuery::of(&list));
                    self.list_tasks(query, ask);
                    None
                }
                Some(other) => {
                    tracing::warn!(event = ?other, "ignoring an event this adapter does not know");
                    None
                }
            };
            any = true;
            match ask {
                None => {}
                Some(Ask::Now(msg)) => self.verdict(msg),
                Some(Ask::Later(conn, info, body)) => self.authorize(conn, info, body),
            }
        }
        any
    }

    /// The store, or `None` after saying once that there is none (the engine was
    /// configured for a store the server was not given: sessions then live in memory).
    fn store_or_warn(&mut self) -> Option<Arc<dyn SessionStore>> {
        if self.store.is_none() && !self.warned_no_store {
            self.warned_no_store = true;
            tracing::warn!("the engine asks for a session store, but the server has none: memory only");
        }
        self.store.clone()
    }

    /// Looks a session up in the store; the answer comes back as `Decided::Loaded`.
    fn load(&mut self, conn: ConnId, id: String) {
        let Some(store) = self.store_or_warn() else {
            let now = self.now();
            self.engine.session_loaded(now, conn, Loaded::Missing);
            return;
        };
        let tx = self.verdict_tx.clone();
        tokio::spawn(async move {
            let found = store.load(&id).await;
            let _ = tx.send(Decided::Loaded(conn, found));
        });
    }

    /// Stores (or, with no record, removes) a session; the answer comes back as
    /// `Decided::Saved`.
    fn save(&mut self, conn: ConnId, id: String, record: Option<Vec<u8>>) {
        let Some(store) = self.store_or_warn() else {
            let now = self.now();
            self.engine.session_saved(now, conn, true);
            return;
        };
        let tx = self.verdict_tx.clone();
        tokio::spawn(async move {
            let saved = match &record {
                Some(record) => store.save(&id, record).await,
                None => store.remove(&id).await,
            };
            let _ = tx.send(Decided::Saved(conn, saved));
        });
    }

    /// Passes on what a task of the host's decided.
    pub(crate) fn decided(&mut self, decided: Decided) {
        match decided {
            Decided::Verdict(msg) => self.verdict(msg),
            Decided::Loaded(conn, found) => {
                let now = self.now();
                match found {
                    Ok(Some(record)) => self.engine.session_loaded(now, conn, Loaded::Record(&record)),
                    Ok(None) => self.engine.session_loaded(now, conn, Loaded::Missing),
                    Err(e) => {
                        tracing::warn!(%e, "a session could not be loaded");
                        self.engine.session_loaded(now, conn, Loaded::Unavailable);
                    }
                }
            }
            Decided::Saved(conn, saved) => {
                let now = self.now();
                if let Err(e) = &saved {
                    tracing::warn!(%e, "a session could not be stored");
                }
                self.engine.session_saved(now, conn, saved.is_ok());
            }
            Decided::Events(conn, found) => {
                let now = self.now();
                stream_events::answer(&mut self.engine, now, conn, found);
            }
            Decided::Task(decided) => self.task_decided(decided),
            Decided::Listening(notices) => {
                self.notices = Some(notices);
                // What other nodes did before this node listened was not heard.
                self.noticed(Some(StoreNotice::Missed));
            }
        }
    }

    /// Asks the authorizer about a head (`body` is `None`) or a body.
    fn authorize(&mut self, conn: ConnId, info: AuthorizeInfo, body: Option<Vec<u8>>) {
        let auth = Arc::clone(&self.auth);
        let is_body = body.is_some();
        let mut decision: BoxVerdict = match body {
            None => Box::pin(async move { auth.authorize(&info).await }),
            Some(body) => Box::pin(async move { auth.authorize_body(&info, &body).await }),
        };
        // A synchronous decision is taken at once.
        if let Poll::Ready(verdict) = decision.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            self.verdict(VerdictMsg { conn, body: is_body, verdict });
            return;
        }
        let guard = VerdictGuard { tx: Some(self.verdict_tx.clone()), conn, body: is_body };
        let task = tokio::spawn(async move {
            let guard = guard;
            let verdict = decision.await;
            guard.send(verdict);
        });
        self.authorizing.insert(conn, task.abort_handle());
    }

    /// Delivers a decision, or keeps an `Allow` until the in-flight limit has room.
    pub(crate) fn verdict(&mut self, msg: VerdictMsg) {
        self.authorizing.remove(&msg.conn);
        if msg.verdict.allows() && !self.room() {
            self.deferred.push_back(msg);
        } else {
            self.deliver(&msg);
        }
    }

    fn deliver(&mut self, msg: &VerdictMsg) {
        let now = self.now();
        tracing::trace!(conn = ?msg.conn, verdict = ?msg.verdict, body = msg.body, "authorized");
        if msg.body {
            self.engine.authorize_body(now, msg.conn, msg.verdict);
        } else {
            self.engine.authorize(now, msg.conn, msg.verdict);
            // Its body may be read now (`HttpEngine::input_capacity`).
            self.decided.push(msg.conn);
        }
    }

    /// Moves the connections whose head was decided since the last call into `out`:
    /// the engine may take their body now.
    pub(crate) fn take_decided(&mut self, out: &mut Vec<ConnId>) {
        out.append(&mut self.decided);
    }

    /// Delivers the kept decisions there is room for. Returns whether it delivered any.
    pub(crate) fn deliver_deferred(&mut self) -> bool {
        let mut any = false;
        while self.room() {
            let Some(msg) = self.deferred.pop_front() else { break };
            self.deliver(&msg);
            any = true;
            // Starting the request may have taken the room: drain before the next one.
            self.drain();
        }
        any
    }

    /// Answers a finished handler task, or applies a publication (announced to the other
    /// nodes sharing the store once applied, see `announced`).
    pub(crate) fn complete(&mut self, done: Completion) {
        let done = self.announced(done);
        self.tasks.complete(&mut self.engine, done);
    }

    /// Forgets `conn`, cancelling its request if it has one.
    pub(crate) fn closed(&mut self, conn: ConnId) {
        let now = self.now();
        self.engine.handle_closed(now, conn);
        if let Some(task) = self.authorizing.remove(&conn) {
            task.abort();
        }
        self.deferred.retain(|m| m.conn != conn);
    }
}

impl<H, A> Drop for Host<H, A> {
    fn drop(&mut self) {
        for (_, task) in self.authorizing.drain() {
            task.abort();
        }
    }
}

/// The engine task's side of a TCP connection. Dropping it closes the socket.
struct TcpConn {
    stream: TcpStream,
    /// Report this connection readable, or writable (see [`ReadyQueue`]).
    read_waker: Waker,
    write_waker: Waker,
    /// A waker is registered for that direction and has not fired since.
    armed_read: bool,
    armed_write: bool,
    /// Bytes read and not yet taken by the engine: offered first, and the connection is
    /// not read while there are any. (Not used while the engine keeps its word: each read
    /// asks for at most what it takes.)
    held: Vec<u8>,
    held_at: usize,
    /// The socket was reported readable and not read to `WouldBlock` since.
    readable: bool,
    /// A write would have blocked: output waits for the socket's report.
    write_blocked: bool,
    /// Listed in [`Tcp::waiting`].
    queued: bool,
}

impl TcpConn {
    /// Whether the connection has input to offer the engine.
    fn has_input(&self) -> bool {
        self.held_at < self.held.len() || self.readable
    }
}

struct Tcp<H, A> {
    host: Host<H, A>,
    conns: HashMap<ConnId, TcpConn>,
    /// Connections with input to offer (held bytes, or a readable socket), oldest first.
    waiting: VecDeque<ConnId>,
    /// What the sockets report.
    ready: Arc<ReadyQueue>,
    /// Reports taken from [`ready`](Self::ready), reused.
    reports: Vec<Ready>,
    /// Whether input is offered to the engine (not once shutting down).
    reading: bool,
    /// Whether the engine refused a connection, and none ended since.
    accept_paused: bool,
    scratch: Vec<ConnId>,
    /// The buffer every read goes to.
    buf: Box<[u8]>,
}

impl<H: Handler, A: Authorizer> Tcp<H, A> {
    /// Opens a connection on the engine and waits for its first bytes. When the engine refuses
    /// it (every connection is busy), closes it and pauses accepting.
    fn open(&mut self, stream: TcpStream, peer: SocketAddr) {
        let now = self.host.now();
        let conn = match self.host.engine.open(now, Some(peer)) {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(%peer, %e, "connection refused; accepting no more until one ends");
                self.accept_paused = true;
                return;
            }
        };
        tracing::debug!(%peer, ?conn, "connection opened");
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%e, "cannot set TCP_NODELAY");
        }
        let c = TcpConn {
            stream,
            read_waker: self.ready.waker(conn, true),
            write_waker: self.ready.waker(conn, false),
            armed_read: false,
            armed_write: false,
            held: Vec::new(),
            held_at: 0,
            readable: false,
            write_blocked: false,
            queued: false,
        };
        self.conns.insert(conn, c);
        self.sync(conn);
    }

    /// Takes the sockets' reports.
    fn take_ready(&mut self) {
        let mut reports = std::mem::take(&mut self.reports);
        self.ready.take(&mut reports);
        for ready in reports.drain(..) {
            let Some(c) = self.conns.get_mut(&ready.conn) else { continue };
            if ready.read {
                c.armed_read = false;
                c.readable = true;
                if !c.queued {
                    c.queued = true;
                    self.waiting.push_back(ready.conn);
                }
            } else {
                c.armed_write = false;
                c.write_blocked = false;
            }
        }
        self.reports = reports;
    }

    /// Registers `conn`'s wakers for what the engine task waits for now: bytes when it
    /// has no input, room when a write would have blocked. A socket ready at once is
    /// reported through the queue like any other.
    fn sync(&mut self, conn: ConnId) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        if !c.has_input() && !c.armed_read {
            match c.stream.poll_read_ready(&mut Context::from_waker(&c.read_waker)) {
                Poll::Pending => c.armed_read = true,
                // Ready, or an error the next read reports.
                Poll::Ready(_) => self.ready.push(Ready { conn, read: true }),
            }
        }
        if c.write_blocked && !c.armed_write {
            match c.stream.poll_write_ready(&mut Context::from_waker(&c.write_waker)) {
                Poll::Pending => c.armed_write = true,
                Poll::Ready(_) => self.ready.push(Ready { conn, read: false }),
            }
        }
    }

    /// Ends a connection on the engine (cancelling its request) and here.
    fn close(&mut self, conn: ConnId) {
        self.host.closed(conn);
        self.conns.remove(&conn);
        self.accept_paused = false;
    }

    /// The engine is done with `conn` and its output is written: forget it there, shut
    /// the sending side down and drain (in a task) what the client still sends, so
    /// that the client reads the response rather than a reset.
    fn linger(&mut self, conn: ConnId) {
        self.host.closed(conn);
        if let Some(c) = self.conns.remove(&conn) {
            tokio::spawn(linger(c.stream));
        }
        self.accept_paused = false;
    }

    /// Closes the connections the engine ended on its own (shed for room, idle past
    /// their timeout, a client that stopped reading). Returns whether there were any.
    fn reap(&mut self) -> bool {
        let mut any = false;
        while let Some(conn) = self.host.engine.poll_ended() {
            any = true;
            tracing::debug!(?conn, "the engine ended the connection");
            self.close(conn);
        }
        any
    }

    /// Runs the engine until it rests: kept decisions, input, events, output, closes.
    fn pump(&mut self) {
        loop {
            let mut progress = self.host.deliver_deferred();
            // A head allowed: its body is read now.
            let mut decided = std::mem::take(&mut self.scratch);
            self.host.take_decided(&mut decided);
            for &conn in &decided {
                self.requeue(conn);
            }
            decided.clear();
            self.scratch = decided;
            progress |= self.offer_input();
            progress |= self.host.drain();
            progress |= self.flush();
            progress |= self.reap();
            if !progress {
                break;
            }
        }
    }

    /// Offers waiting input to the engine, oldest first, where allowed. Returns whether
    /// the engine took any.
    fn offer_input(&mut self) -> bool {
        let mut progress = false;
        for _ in 0..self.waiting.len() {
            if !self.reading || !self.host.room() {
                break;
            }
            let Some(conn) = self.waiting.pop_front() else { break };
            let Some(c) = self.conns.get_mut(&conn) else { continue };
            c.queued = false;
            if !c.has_input() {
                continue;
            }
            if !self.host.engine.pending_output(conn).is_empty() {
                // A response still waits to be written: read no further for now.
                c.queued = true;
                self.waiting.push_back(conn);
                continue;
            }
            progress |= self.input(conn);
            self.sync(conn);
        }
        progress
    }

    /// Moves what `conn`'s socket has into the engine: each read asks for at most what
    /// the engine takes now ([`HttpEngine::input_capacity`]), so every byte read is taken
    /// at once, in order. Returns whether the engine took any.
    ///
    /// A connection the engine reads nothing from now (its request waits for its answer,
    /// or the authorizer decides on its head) is left out of [`Tcp::waiting`] until that
    /// changes: its output is written ([`Tcp::flush`] queues it again) or its verdict
    /// delivered ([`Host::take_decided`]).
    fn input(&mut self, conn: ConnId) -> bool {
        let now = self.host.now();
        self.host.received(now);
        let mut progress = false;
        let Some(c) = self.conns.get_mut(&conn) else { return false };
        if c.held_at < c.held.len() {
            // Not reached while the engine keeps its word (it takes what it has room
            // for): bytes it did not take go in first, and nothing is read meanwhile.
            let n = self.host.engine.handle_input(now, conn, &c.held[c.held_at..]);
            c.held_at += n;
            progress = n > 0;
            if c.held_at < c.held.len() {
                c.queued = true;
                self.waiting.push_back(conn);
                return progress;
            }
            c.held = Vec::new();
            c.held_at = 0;
        }
        let mut budget = READ_BUDGET;
        let mut buf = std::mem::take(&mut self.buf);
        while budget > 0 {
            let Some(c) = self.conns.get_mut(&conn) else { break };
            if !c.readable || !self.host.engine.pending_output(conn).is_empty() {
                break;
            }
            let room = self.host.engine.input_capacity(conn).min(buf.len());
            if room == 0 {
                // Nothing is read, but a client that went away is noticed (closing the
                // connection cancels its request): a peek that would block waits for the
                // socket's next report.
                let mut probe = [0u8; 1];
                match c
                    .stream
                    .poll_peek(&mut Context::from_waker(&c.read_waker), &mut ReadBuf::new(&mut probe))
                {
                    Poll::Pending => {
                        c.readable = false;
                        c.armed_read = true;
                    }
                    Poll::Ready(Ok(0)) => {
                        tracing::debug!(?conn, "peer closed the connection");
                        self.close(conn);
                    }
                    // Bytes wait for the engine: read once it takes them.
                    Poll::Ready(Ok(_)) => {}
                    Poll::Ready(Err(e)) => {
                        tracing::debug!(?conn, %e, "peek failed");
                        self.close(conn);
                    }
                }
                break;
            }
            match c.stream.try_read(&mut buf[..room]) {
                Ok(0) => {
                    tracing::debug!(?conn, "peer closed the connection");
                    self.close(conn);
                    break;
                }
                Ok(n) => {
                    budget = budget.saturating_sub(n);
                    tracing::trace!(?conn, bytes = n, "read");
                    let taken = self.host.engine.handle_input(now, conn, &buf[..n]);
                    progress = true;
                    if taken < n {
                        c.held.extend_from_slice(&buf[taken..n]);
                        c.held_at = 0;
                        break;
                    }
                    self.host.drain();
                    self.flush();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => c.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(?conn, %e, "read failed");
                    self.close(conn);
                    break;
                }
            }
        }
        self.buf = buf;
        self.requeue(conn);
        progress
    }

    /// Queues `conn` for [`input`](Self::input) if it has input the engine takes now (the
    /// read budget ran out, or held bytes wait), unless output holds it back (then
    /// [`flush`](Self::flush) queues it once written).
    fn requeue(&mut self, conn: ConnId) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let held = c.held_at < c.held.len();
        let wanted = held || self.host.engine.input_capacity(conn) > 0;
        if c.has_input() && wanted && !c.queued && self.host.engine.pending_output(conn).is_empty() {
            c.queued = true;
            self.waiting.push_back(conn);
        }
    }

    /// Writes every connection's output as far as its socket takes it, and ends the
    /// connections the engine is done with. Returns whether anything was written.
    fn flush(&mut self) -> bool {
        let mut conns = std::mem::take(&mut self.scratch);
        conns.clear();
        conns.extend(self.host.engine.writable());
        let mut progress = false;
        for &conn in &conns {
            let Some(c) = self.conns.get_mut(&conn) else {
                tracing::warn!(?conn, "output for an unknown connection");
                continue;
            };
            if c.write_blocked {
                continue;
            }
            let mut failed = false;
            loop {
                let out = self.host.engine.pending_output(conn);
                if out.is_empty() {
                    break;
                }
                match c.stream.try_write(out) {
                    Ok(0) => failed = true,
                    Ok(n) => {
                        tracing::trace!(?conn, bytes = n, "written");
                        // Only what the socket took leaves the engine: its limits on
                        // unsent output and its write timeout hold.
                        self.host.engine.consume_output(conn, n);
                        progress = true;
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => c.write_blocked = true,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        tracing::debug!(?conn, %e, "write failed");
                        failed = true;
                    }
                }
                break;
            }
            if failed {
                self.close(conn);
            } else if self.host.engine.wants_close(conn) {
                tracing::debug!(?conn, "closing the connection");
                self.linger(conn);
            } else {
                // Output no longer holds its input back.
                self.requeue(conn);
                self.sync(conn);
            }
        }
        self.scratch = conns;
        progress
    }

    /// Whether shutting down may finish: nothing with the handler, nothing left to write.
    fn drained(&self) -> bool {
        self.host.idle() && self.conns.keys().all(|&c| self.host.engine.pending_output(c).is_empty())
    }
}

/// Shuts the sending side of a connection the server is done with down, then reads and
/// drops what the client still sends, until it closes or [`LINGER`] passes.
async fn linger(stream: TcpStream) {
    let mut stream = stream;
    let _ = tokio::io::AsyncWriteExt::shutdown(&mut stream).await;
    let r = &stream;
    let drain = async {
        let mut sink = [0u8; 1024];
        loop {
            if r.readable().await.is_err() {
                break;
            }
            match r.try_read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                Err(_) => break,
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}
