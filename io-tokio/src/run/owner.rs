//! The engine's owner on the HTTP side, [`Owner`]: the [`HttpEngine`] and what runs its
//! work (handler tasks, authorization tasks, the session, event and task stores' tasks,
//! the clock), shared by the TCP loop (`tcp`) and the tower service's task (`tower`).
//! Every method of `Owner` is in this file: the engine's events handed out, the
//! authorizer's verdicts, the stores' answers back to the engine (`Decided`), the notices
//! of the other nodes sharing a session store and this node's news to them (see
//! `docs/scale-out.md`), and the task store's side of the engine's `SaveTask`, `LoadTask`,
//! `TaskExpired` and `ListTasks`.

use mcp_engine::Commands;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use mcp_engine::http::store::{Loaded, StoreEvent, TaskQuery, TaskRow};
use mcp_engine::http::{ConnId, HttpEngine, HttpEvent, Verdict};
use mcp_engine::subs::{CatalogChange, ReplaceError};
use mcp_engine::{Instant, UnixTime};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::auth::{AuthorizeInfo, Authorizer};
use crate::host::channel::{Completion, Outcome, Publish};
use crate::host::handler::Handler;
use crate::run::work::Tasks;
use crate::store::sessions::{CatalogNews, EventStore, SessionStore, StoreError, StoreNotice, StoreNotices};
use crate::store::stream_events::{self, Appender};
use crate::store::tasks::{TaskDecided, TaskListQuery, TaskSave, TaskStore};
use crate::telemetry::{Telemetry, Wire};

/// The first pause before asking a store for its notices again; doubled after each
/// failure, up to [`NOTICES_RETRY_MAX`].
const NOTICES_RETRY_FIRST: Duration = Duration::from_millis(200);
const NOTICES_RETRY_MAX: Duration = Duration::from_secs(10);

/// How long [`HttpServer::serve`](crate::HttpServer::serve) waits for its store to listen before it takes its first
/// connection.
const NOTICES_FIRST_WAIT: Duration = Duration::from_secs(10);

/// What an [`Owner`] is made of: the settings of the `HttpServer` it serves.
pub(crate) struct Parts<H, A> {
    pub(crate) engine: HttpEngine,
    pub(crate) handler: Arc<H>,
    pub(crate) auth: A,
    pub(crate) max_in_flight: usize,
    pub(crate) store: Option<Arc<dyn SessionStore>>,
    pub(crate) events: Option<Arc<dyn EventStore>>,
    pub(crate) task_store: Option<Arc<dyn TaskStore>>,
    pub(crate) announce: bool,
    pub(crate) telemetry: Telemetry,
    pub(crate) done: (mpsc::UnboundedSender<Completion>, mpsc::UnboundedReceiver<Completion>),
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
pub(crate) struct Owner<H, A> {
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
    /// Connections whose head verdict was delivered since [`Owner::take_decided`].
    decided: Vec<ConnId>,
    max_in_flight: usize,
    start: tokio::time::Instant,
}

impl<H: Handler, A: Authorizer> Owner<H, A> {
    #[allow(clippy::type_complexity)]
    pub(crate) fn new(
        server: Parts<H, A>,
    ) -> (Self, mpsc::UnboundedReceiver<Completion>, mpsc::UnboundedReceiver<Decided>) {
        let (done_tx, done_rx) = server.done;
        let mut tasks = Tasks::with_sender(done_tx);
        tasks.set_telemetry(Wire::HTTP, server.telemetry.clone());
        let (verdict_tx, verdict_rx) = mpsc::unbounded_channel();
        let owner = Self {
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
        (owner, done_rx, verdict_rx)
    }

    /// What the request spans record, and the transport they name (the TCP loop's
    /// connections speak HTTP/1.1; the tower service's may speak either version).
    pub(crate) fn set_telemetry(&mut self, wire: Wire, telemetry: Telemetry) {
        self.tasks.set_telemetry(wire, telemetry);
    }

    /// The engine's time, and the wall clock set to match it.
    pub(crate) fn now(&mut self) -> Instant {
        let now = Instant::from_micros(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX));
        self.engine.set_wall_clock(now, UnixTime::from_system_time(std::time::SystemTime::now()));
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
        self.tasks.refusals(&mut self.engine);
        loop {
            // A decision taken at once (no allocation), or an owned copy for a task.
            let ask = match self.engine.poll_event() {
                None => {
                    // The stores' work, then back to the request path (it may have moved).
                    if self.drain_store() {
                        any = true;
                        continue;
                    }
                    break;
                }
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

    /// Hands the engine's work for the stores to them (loads and saves answered later,
    /// through the verdict channel). Returns whether there was any.
    fn drain_store(&mut self) -> bool {
        let mut any = false;
        while let Some(event) = self.engine.poll_store() {
            any = true;
            match event {
                StoreEvent::LoadSession(load) => {
                    let (conn, id) = (load.conn, load.id.to_owned());
                    self.load(conn, id);
                }
                StoreEvent::SaveSession(save) => {
                    let (conn, id, record) = (save.conn, save.id.to_owned(), save.record.map(<[u8]>::to_vec));
                    self.save(conn, id, record);
                }
                StoreEvent::TouchSession(t) => {
                    let id = t.id.to_owned();
                    self.touch(id);
                }
                StoreEvent::SessionExpired(gone) => {
                    let id = gone.id.to_owned();
                    if let Some(store) = self.store.clone() {
                        tokio::spawn(async move {
                            if let Err(e) = store.expired(&id).await {
                                tracing::warn!(%e, "an expired session stays in the store");
                            }
                        });
                    }
                }
                StoreEvent::AppendEvent(e) => {
                    if let Some(events) = self.events.as_mut() {
                        events.push(&e);
                    }
                }
                StoreEvent::LoadEvents(load) => {
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
                }
                StoreEvent::SaveTask(save) => {
                    let save = TaskSave::of(&save);
                    self.save_task(save);
                }
                StoreEvent::LoadTask(load) => {
                    let id = load.id.to_owned();
                    self.load_task(id);
                }
                StoreEvent::TaskExpired(gone) => {
                    let id = gone.id.to_owned();
                    self.task_expired(id);
                }
                StoreEvent::ListTasks(list) => {
                    let (query, ask) = (list.query, TaskListQuery::of(&list));
                    self.list_tasks(query, ask);
                }
                other => {
                    tracing::warn!(event = ?other, "ignoring a store event this adapter does not know");
                }
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

impl<H, A> Drop for Owner<H, A> {
    fn drop(&mut self) {
        for (_, task) in self.authorizing.drain() {
            task.abort();
        }
    }
}

// The other nodes sharing a session store: their notices in, this node's news out.

impl<H: Handler, A: Authorizer> Owner<H, A> {
    /// Asks the store for its notices of other nodes' changes and waits for them (at most
    /// [`NOTICES_FIRST_WAIT`]), so that no session is served before the server hears the
    /// other nodes; when the store cannot say by then, goes on as [`listen`](Self::listen).
    pub(crate) async fn listen_first(&mut self) {
        let Some(store) = self.store.clone() else { return };
        match tokio::time::timeout(NOTICES_FIRST_WAIT, store.notices()).await {
            Ok(Ok(notices)) => self.notices = notices,
            Ok(Err(e)) => {
                tracing::warn!(%e, "not hearing other nodes' session changes yet; serving, and trying again");
                self.listen();
            }
            Err(_) => {
                tracing::warn!(wait = ?NOTICES_FIRST_WAIT, "the store does not listen yet; serving, and trying again");
                self.listen();
            }
        }
    }

    /// Asks the store for its notices of other nodes' changes (in a task: the answer
    /// comes back as `Decided::Listening`), again after a pause while that fails.
    pub(crate) fn listen(&mut self) {
        let Some(store) = self.store.clone() else { return };
        let tx = self.verdict_tx.clone();
        tokio::spawn(async move {
            let mut pause = NOTICES_RETRY_FIRST;
            loop {
                match store.notices().await {
                    Ok(Some(notices)) => {
                        let _ = tx.send(Decided::Listening(notices));
                        return;
                    }
                    Ok(None) => return,
                    Err(e) => {
                        tracing::warn!(%e, retry_in = ?pause, "not hearing other nodes' session changes")
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = tx.closed() => return,
                }
                pause = (pause * 2).min(NOTICES_RETRY_MAX);
            }
        });
    }

    /// The next notice of the store's, waiting for it (for ever when the store tells
    /// nothing). `None`: the store's notices ended (its task is gone).
    pub(crate) async fn notice(&mut self) -> Option<StoreNotice> {
        match &mut self.notices {
            Some(notices) => notices.recv().await,
            None => std::future::pending().await,
        }
    }

    /// Hands a notice of another node's change to the engine (`None`: the notices ended).
    pub(crate) fn noticed(&mut self, notice: Option<StoreNotice>) {
        let now = self.now();
        match notice {
            Some(StoreNotice::Changed(id)) => {
                let dropped = self.engine.session_changed_elsewhere(id.as_bytes());
                tracing::trace!(dropped, "a session changed on another node");
            }
            Some(StoreNotice::Ended(id)) => {
                let held = self.engine.session_ended_elsewhere(now, id.as_bytes());
                tracing::trace!(held, "a session ended on another node");
            }
            Some(StoreNotice::TaskChanged(id)) => {
                let reread = self.engine.task_changed_elsewhere(now, id.as_bytes());
                tracing::trace!(reread, "a task changed on another node");
            }
            Some(StoreNotice::Missed) => {
                let dropped = self.engine.sessions_changed_elsewhere();
                let tasks = self.engine.tasks_changed_elsewhere(now);
                tracing::trace!(tasks, "tasks this node runs or waits on read again");
                // Catalog news may be lost too: every stream's client lists again.
                let told = self.engine.announce_list_changed(CatalogChange::ALL);
                tracing::debug!(
                    dropped,
                    ?told,
                    "other nodes' news was missed: copies checked again, lists announced"
                );
            }
            Some(StoreNotice::Catalog(CatalogNews::ListChanged(change))) => {
                let told = self.engine.announce_list_changed(change);
                tracing::debug!(?told, "lists changed on another node");
            }
            Some(StoreNotice::Catalog(CatalogNews::ResourceUpdated(uri))) => {
                let n = self.engine.notify_resource_updated(&uri);
                // The scheme only, as for local updates: the uri may name private things.
                let scheme = uri.split_once(':').map_or("", |(s, _)| s);
                tracing::debug!(scheme, subscribers = n, "a resource updated on another node");
            }
            None => {
                tracing::warn!("the store's notices ended: other nodes' session changes go unheard");
                self.notices = None;
            }
        }
    }

    /// Touches a session in use in the store, in a task: nothing waits for it.
    pub(crate) fn touch(&mut self, id: String) {
        let Some(store) = self.store.clone() else { return };
        tokio::spawn(async move {
            if let Err(e) = store.touch(&id).await {
                tracing::warn!(%e, "a session in use was not touched in the store (tried again later)");
            }
        });
    }

    /// A publication of this node's, made to be announced to the other nodes sharing the
    /// store once the engine applied it ([`SessionStore::announce`], in a task: the
    /// announcement costs this loop nothing): a resource update as it is; a catalog
    /// replacement when the engine took it and a list changed, its publisher answered
    /// once the announcement was made (or failed). Anything else is returned as it is.
    pub(crate) fn announced(&mut self, done: Completion) -> Completion {
        let Some(store) = self.store.clone().filter(|_| self.announce) else { return done };
        let Completion { ticket, outcome } = done;
        let outcome = match outcome {
            Outcome::Publish(Publish::ResourceUpdated(uri)) => {
                let news = CatalogNews::ResourceUpdated(uri.clone());
                tokio::spawn(async move { announce(&*store, &news).await });
                Outcome::Publish(Publish::ResourceUpdated(uri))
            }
            Outcome::Publish(Publish::Catalog(catalog, reply)) => {
                // The engine's answer goes through here first: announced if it changed a list.
                let (tx, rx) = tokio::sync::oneshot::channel::<Result<CatalogChange, ReplaceError>>();
                // The publisher learns the outcome once the other nodes were told.
                tokio::spawn(async move {
                    let Ok(r) = rx.await else { return };
                    if let Some(&change) = r.as_ref().ok().filter(|c| !c.is_empty()) {
                        announce(&*store, &CatalogNews::ListChanged(change)).await;
                    }
                    let _ = reply.send(r);
                });
                Outcome::Publish(Publish::Catalog(catalog, tx))
            }
            other => other,
        };
        Completion { ticket, outcome }
    }
}

/// Announces `news` through `store`, logging a failure (the other nodes' clients miss it).
async fn announce(store: &dyn SessionStore, news: &CatalogNews) {
    if let Err(e) = store.announce(news).await {
        tracing::warn!(%e, "news for other nodes' streams not announced");
    }
}

// The task store: the engine's task records saved, loaded, expired and listed.

impl<H: Handler, A: Authorizer> Owner<H, A> {
    /// Saves a task record in a task of its own; the answer comes back as
    /// `Decided::Task`. Without a store the save is acknowledged (memory only).
    pub(crate) fn save_task(&mut self, save: TaskSave) {
        let Some(store) = self.task_store.clone() else {
            let now = self.now();
            self.engine.task_saved(now, &save.id, save.revision, true);
            return;
        };
        let tx = self.verdict_tx.clone();
        tokio::spawn(async move {
            let kept = store.save_task(&save).await;
            let _ = tx.send(Decided::Task(TaskDecided::Saved(save.id, save.revision, kept)));
        });
    }

    /// Looks a task up; the answer comes back as `Decided::Task`.
    pub(crate) fn load_task(&mut self, id: String) {
        let Some(store) = self.task_store.clone() else {
            let now = self.now();
            self.engine.task_loaded(now, &id, Loaded::Missing);
            return;
        };
        let tx = self.verdict_tx.clone();
        tokio::spawn(async move {
            let found = store.load_task(&id).await;
            let _ = tx.send(Decided::Task(TaskDecided::Loaded(id, found)));
        });
    }

    /// Lists a page of the caller's tasks; the answer comes back as `Decided::Task`.
    /// Without a store (the engine was configured for one the server was not given) the
    /// list is unavailable (`503`): the engine's table alone is not the list.
    pub(crate) fn list_tasks(&mut self, query: TaskQuery, ask: TaskListQuery) {
        let Some(store) = self.task_store.clone() else {
            let now = self.now();
            tracing::warn!("the engine lists tasks from a task store, but the server has none");
            self.engine.tasks_listed(now, query, None);
            return;
        };
        let tx = self.verdict_tx.clone();
        tokio::spawn(async move {
            let page = store.list_tasks(&ask).await;
            let _ = tx.send(Decided::Task(TaskDecided::Listed(query, page)));
        });
    }

    /// Tells the store of a task this server expired, in a task: nothing waits.
    pub(crate) fn task_expired(&mut self, id: String) {
        let Some(store) = self.task_store.clone() else { return };
        tokio::spawn(async move {
            if let Err(e) = store.task_expired(&id).await {
                tracing::warn!(%e, "an expired task stays in the store");
            }
        });
    }

    /// Hands a task store's answer to the engine.
    pub(crate) fn task_decided(&mut self, decided: TaskDecided) {
        let now = self.now();
        match decided {
            TaskDecided::Saved(id, revision, kept) => {
                let saved = match kept {
                    Ok(kept) => kept,
                    Err(e) => {
                        tracing::warn!(%e, "a task could not be stored");
                        false
                    }
                };
                self.engine.task_saved(now, &id, revision, saved);
            }
            TaskDecided::Loaded(id, found) => match found {
                Ok(Some(record)) => self.engine.task_loaded(now, &id, Loaded::Record(&record)),
                Ok(None) => self.engine.task_loaded(now, &id, Loaded::Missing),
                Err(e) => {
                    tracing::warn!(%e, "a task could not be loaded");
                    self.engine.task_loaded(now, &id, Loaded::Unavailable);
                }
            },
            TaskDecided::Listed(query, page) => match page {
                Ok(page) => {
                    let rows: Vec<TaskRow<'_>> = page
                        .iter()
                        .map(|t| TaskRow::new(&t.id, UnixTime::from_system_time(t.created), &t.record))
                        .collect();
                    self.engine.tasks_listed(now, query, Some(&rows));
                }
                Err(e) => {
                    tracing::warn!(%e, "tasks could not be listed");
                    self.engine.tasks_listed(now, query, None);
                }
            },
        }
    }
}
