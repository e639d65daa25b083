//! The MCP core: everything MCP means, and nothing about transport bytes.
//!
//! [`Core`] owns its parts and is the only place that sees every family:
//! - [`tickets`]: the ticket table (work handed to the host), cancellations;
//! - [`answers`]: the one handle answers and notifications are written through (a task's
//!   answers included: [`answers`] sits above the task table);
//! - [`write`]: result framing shared by the answers and the task table (below both);
//! - [`lifecycle`]: THE tables of revision and method rules, and the [`Session`] value;
//! - [`streams`]: the open `subscriptions/listen` streams and their fan-out;
//! - [`prepared`]: fragments written once per engine;
//! - [`scratch`]: the buffers a request is decoded into and its event reads;
//! - [`event`]: what the host is asked to do;
//! - [`delivery`]: the next event handed to the host ([`Core::next_event`]): a
//!   cancellation, the pending request, a request coming back with its client's input, a
//!   client's reply; the delivered event released;
//! - method handlers, each a file: [`requests`] (work for the host), [`lists`], [`subs`];
//! - [`facts`]: what a transport must know of a request before serving it, read once
//!   from the decoded request;
//! - [`mrtr`]: multi-round-trip requests (`input_required`, `requestState`);
//! - [`inputs`]: the same input asked of a session-bound client as server-to-client
//!   requests, and the request handed back to the host with the responses;
//! - [`asks`]: requests the host sends a session-bound client outside any request, and
//!   their replies handed back as events;
//! - [`tasks`]: tool calls that outlive their request (the tasks extension): the task
//!   table, `TaskOptions`, `tasks/get`, `tasks/update`, `tasks/cancel`; never `Answers`;
//! - [`scopes`]: what a request was granted and what each method and definition requires
//!   (a protected HTTP endpoint's scope policy);
//! - [`served`]: a bounded record of each request the engine answered itself (and each
//!   notification it acted on), for the adapters' spans and metrics;
//! - [`answered`]: a bounded record of each answer the host gave, when an adapter asks
//!   (the mio adapter closes its request spans with them);
//! - [`connectome`] (feature `connectome`): counting what is dispatched, answering reads of
//!   the connectome resources.
//!
//! - [`context`]: what a transport knows of one request ([`context::RequestContext`],
//!   handed to [`Core::handle`] as one value) and what the core hands back
//!   ([`context::Handled`]).
//!
//! This file holds `Core` and its only `impl` but `connectome.rs`'s: its interface to
//! the transports ([`Core::handle`] in, the outbox and getters out, [`Core::next_event`]
//! made by [`delivery`]), the handles it lends its parts through (`answers`,
//! `task_store`, `task_methods`, `host_requests`, `fanout`, the list page's `Lister`),
//! the catalog replacement and the dispatcher, which composes them (the lifecycle
//! methods are functions in [`lifecycle`]). `Core`'s fields are private to `mcp/`: the
//! transports call its methods.
//!
//! May use: `wire`, `catalog`, `content`, `error`, `config`, `connectome`, `jsonrpc`,
//! `output` and the leaf modules. May not touch: transport state (`stdio`, `http`),
//! sockets, clocks: the transports pass time in and route what the outbox holds.

pub(crate) mod answered;
pub(crate) mod answers;
pub(crate) mod asks;
#[cfg(feature = "connectome")]
pub(crate) mod connectome;
pub(crate) mod context;
pub(crate) use context::{Dispatched, Room, SessionCheck};
mod delivery;
pub(crate) mod event;
pub(crate) mod facts;
pub(crate) mod inputs;
pub(crate) mod lifecycle;
pub(crate) mod lists;
pub mod mrtr;
pub(crate) mod prepared;
pub(crate) mod requests;
pub(crate) mod scopes;
pub(crate) mod scratch;
pub(crate) mod served;
pub(crate) mod skills;
pub(crate) mod streams;
pub mod subs;
pub(crate) mod tasks;
pub(crate) mod tickets;
pub(crate) mod write;

use simd_json::Node;

use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::{Detail, PeerError};
use crate::jsonrpc::{self, Message, Reply, Req};
use crate::mcp::answers::Answers;
use crate::mcp::inputs::Inputs;
use crate::mcp::lifecycle::Method;
pub(crate) use crate::mcp::lifecycle::Mode;
use crate::mcp::lifecycle::Session;
use crate::mcp::mrtr::ClientCapabilities;
use crate::mcp::prepared::Prepared;
use crate::mcp::scratch::Scratch;
use crate::mcp::streams::Subscriptions;
use crate::mcp::tickets::Ticket;
use crate::mcp::tickets::Tickets;
use crate::output::{Outbox, Route};
use crate::revision::Revision;
use crate::time::Clock;

/// Everything but the input buffer and the parser, so a parsed frame (which borrows
/// those two) can be handled with `&mut Core`.
pub(crate) struct Core {
    cfg: Config,
    catalog: Catalog,
    prepared: Prepared,
    scratch: Scratch,
    mode: Mode,
    tickets: Tickets,
    outbox: Outbox,
    /// The session-bound state of the stream (stdio), or of the HTTP session the request
    /// being handled belongs to (handed in by the HTTP layer, see [`SessionCheck`]).
    session: Session,
    subs: Subscriptions,
    /// Input asked of session-bound clients, and the requests waiting for it.
    inputs: Inputs,
    /// Requests the host sent session-bound clients outside any request.
    asks: asks::Asks,
    /// The tasks: tool calls that outlive their request.
    tasks: tasks::Tasks,
    /// Sessions opened so far (each gets the next serial).
    sessions_opened: u64,
    /// What the transport said of the request being dispatched (see
    /// [`context::RequestContext`]); idle between requests.
    request: context::Current,
    /// Frames processed (blank lines excluded).
    frames: u64,
    /// The latest time the engine was given, in microseconds.
    now: u64,
    /// The wall clock the host set (microseconds since the Unix epoch) and the `now` it
    /// was set at: the wall clock reads that plus the time since.
    wall: Option<(u64, u64)>,
    /// Advances with every catalog replacement.
    catalog_revision: u64,
    /// The scope rules of a protected HTTP endpoint (`None`: nothing is scoped).
    rules: Option<scopes::Rules>,
    /// The method slot whose scopes the latest request lacked (its challenge).
    denied: Option<usize>,
    /// The requests answered without the host, for the adapters' spans.
    served: served::Log,
    /// The host's answers, recorded when an adapter asks (see [`answered`]).
    answered: answered::AnswerLog,
    /// The observed counts and the host's declared edges.
    #[cfg(feature = "connectome")]
    connectome: connectome::Connectome,
    /// The request being dispatched waits for a task to end (`tasks/result`).
    waiting: bool,
}

/// A core for `mode`, with every buffer at its working size.
pub(crate) fn new_core(cfg: Config, catalog: Catalog, mode: Mode) -> Core {
    let prepared = Prepared::new(&cfg, &catalog);
    let frame = cfg.max_frame_len;
    Core {
        prepared,
        mode,
        // What a slow reader can leave buffered (the limit, past which input waits, plus
        // the responses that crossed it and what was sent but not yet moved out): reserved
        // at once, so a reader falling behind costs no reallocation. Pages are only touched
        // as they are used.
        outbox: Outbox {
            out: Vec::with_capacity(cfg.max_buffered_output.min(16 << 20) + 192 * 1024),
            out_pos: 0,
            routed: Vec::with_capacity(cfg.max_in_flight),
            detail: Detail::default(),
            mismatch: None,
            session_notes: crate::output::SessionNotes::default(),
        },
        tickets: Tickets::new(cfg.max_in_flight),
        session: Session::default(),
        subs: Subscriptions { list: Vec::with_capacity(cfg.max_subscriptions), subscribed: false },
        inputs: Inputs::new(cfg.max_in_flight, cfg.input_timeout),
        asks: asks::Asks::new(cfg.max_in_flight, cfg.input_timeout),
        tasks: tasks::Tasks::new(cfg.max_tasks, cfg.max_tasks_per_principal),
        sessions_opened: 0,
        request: context::Current::idle(mode),
        frames: 0,
        now: 0,
        wall: None,
        catalog_revision: 0,
        rules: None,
        denied: None,
        served: served::Log::new(),
        answered: answered::AnswerLog::default(),
        #[cfg(feature = "connectome")]
        connectome: connectome::Connectome::new(&catalog),
        waiting: false,
        scratch: Scratch::new(frame),
        catalog,
        cfg,
    }
}

impl Core {
    // The interface the transports (stdio, HTTP) use: getters, time, and the outbox's
    // contents. They never touch the core's fields (private to `mcp/`).

    /// The configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.cfg
    }

    /// The catalog being served.
    pub(crate) fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The stream's session (stdio).
    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// Tickets handed out and not yet answered or cancelled.
    pub(crate) fn in_flight(&self) -> usize {
        self.tickets.in_flight
    }

    /// Whether every ticket slot is busy.
    pub(crate) fn slots_full(&self) -> bool {
        self.tickets.in_flight >= self.cfg.max_in_flight
    }

    /// Whether a request waits to be polled as an event (processing is paused).
    pub(crate) fn is_paused(&self) -> bool {
        // A request coming back with its client's input pauses like a new one: what the
        // client sends after its response is served after the host has seen it, so the
        // outcome never depends on how the input was split.
        self.tickets.pending.is_some()
            || self.inputs.has_resume()
            || self.tasks.has_resume()
            || self.asks.has_reply()
    }

    /// Whether [`Self::next_event`] has something.
    pub(crate) fn has_event(&self) -> bool {
        self.is_paused() || !self.tickets.cancels.is_empty()
    }

    /// Frames processed so far.
    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    /// Open `subscriptions/listen` streams.
    pub(crate) fn subscriptions(&self) -> usize {
        self.subs.list.len()
    }

    /// Ends the listen streams of `route` without a word (their connection is gone or
    /// cannot take more).
    pub(crate) fn drop_subscriptions(&mut self, route: Route) {
        self.subs.list.retain(|s| s.route != route);
    }

    /// The catalog revision: one more with every replacement.
    pub(crate) fn catalog_revision(&self) -> u64 {
        self.catalog_revision
    }

    /// The engine's time, in microseconds (never earlier than before: the transports
    /// clamp it).
    pub(crate) fn set_now(&mut self, micros: u64) {
        self.now = micros;
    }

    /// The wall clock reads `unix_micros` at the current `now`; it advances with `now`
    /// until it is set again.
    pub(crate) fn set_wall_clock(&mut self, unix_micros: u64) {
        self.wall = Some((unix_micros, self.now));
    }

    /// The clocks `requestState` and cursor expiry are sealed and judged on.
    pub(crate) fn clock(&self) -> Clock {
        Clock { mono: self.now, wall: self.wall.map(|(w, at)| w.saturating_add(self.now.saturating_sub(at))) }
    }

    /// The route a live ticket answers on.
    pub(crate) fn route_of(&self, ticket: Ticket) -> Option<Route> {
        self.tickets.route_of(ticket)
    }

    /// Whether the stdio output holds `max_buffered_output` or more unread.
    pub(crate) fn output_backlogged(&self) -> bool {
        self.outbox.buffered() >= self.cfg.max_buffered_output
    }

    /// The outbox (stdio: the byte stream; HTTP: messages tagged with their route).
    pub(crate) fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// The outbox, to take what was sent.
    pub(crate) fn outbox_mut(&mut self) -> &mut Outbox {
        &mut self.outbox
    }

    /// The next request the engine answered itself (see [`served`]).
    pub(crate) fn poll_served(&mut self) -> Option<served::Served<'_>> {
        self.served.poll(&self.catalog, self.catalog_revision)
    }

    /// Records that session `id` (of revision `rev`) ended now.
    pub(crate) fn session_ended(
        &mut self,
        id: [u8; crate::wire::session_id::SESSION_ID_LEN],
        rev: Option<Revision>,
    ) {
        self.served.session_ended(id, rev, self.now);
    }

    /// The next session that ended (see [`served`]).
    pub(crate) fn poll_session_end(&mut self) -> Option<served::SessionEnd<'_>> {
        self.served.poll_session_end()
    }

    /// Records waiting to be polled: those of the next message handled come after.
    pub(crate) fn served_len(&mut self) -> usize {
        self.served.len()
    }

    /// Says what the HTTP layer knows of the records from `from` on (those of the message
    /// it handed in just now): its session and addresses.
    pub(crate) fn fill_served(
        &mut self,
        from: usize,
        session_id: Option<[u8; crate::wire::session_id::SESSION_ID_LEN]>,
        peer: Option<core::net::SocketAddr>,
        client: Option<core::net::IpAddr>,
    ) {
        self.served.fill(from, session_id, peer, client);
    }

    /// Keeps a record of each answer the host gives from now on (`on`), for
    /// [`Self::poll_answered`].
    pub(crate) fn record_answers(&mut self, on: bool) {
        self.answered.record(on);
    }

    /// The next answer of the host recorded (see [`served`]).
    pub(crate) fn poll_answered(&mut self) -> Option<answered::Answered> {
        self.answered.poll()
    }

    /// Records of requests answered by the engine dropped because nobody polled them.
    pub(crate) fn served_dropped(&self) -> u64 {
        self.served.dropped() + self.answered.dropped()
    }

    /// The next event: a cancellation, else the pending request (marked delivered; see
    /// [`delivery`]).
    pub(crate) fn next_event(&mut self) -> Option<event::Event<'_>> {
        let clock = self.clock();
        delivery::Delivery {
            cfg: &self.cfg,
            catalog: &self.catalog,
            prepared: &self.prepared,
            scratch: &mut self.scratch,
            tickets: &mut self.tickets,
            outbox: &mut self.outbox,
            inputs: &mut self.inputs,
            tasks: &mut self.tasks,
            asks: &mut self.asks,
            answered: &mut self.answered,
            #[cfg(feature = "connectome")]
            observed: &mut self.connectome.observed,
            clock,
        }
        .next()
    }

    /// Forgets the delivered event (its borrow has ended).
    pub(crate) fn release(&mut self) {
        self.asks.release();
        if self.tickets.delivered {
            self.tickets.delivered = false;
            self.tickets.pending = None;
        }
    }

    /// The subscriptions' fan-out, over the parts it uses (see [`subs::Fanout`]).
    fn fanout(&mut self) -> subs::Fanout<'_> {
        self.subscriber().0
    }

    /// The fan-out with what a listen or a subscribe of the request being dispatched also
    /// uses: the caller (its grant in it), the session, the capture buffer.
    fn subscriber(
        &mut self,
    ) -> (subs::Fanout<'_>, subs::Listener<'_>, &mut Session, &mut crate::catalog::uritemplate::Captures)
    {
        let fanout = subs::Fanout {
            cfg: &self.cfg,
            catalog: &self.catalog,
            prepared: &self.prepared,
            outbox: &mut self.outbox,
            subs: &mut self.subs,
        };
        let who = self.request.listener(self.rules.as_ref());
        (fanout, who, &mut self.session, &mut self.scratch.captures)
    }

    /// Replaces the catalog (see [`Engine::replace_catalog`](crate::Engine::replace_catalog)).
    pub(crate) fn replace_catalog(
        &mut self,
        catalog: Catalog,
    ) -> Result<subs::CatalogChange, subs::ReplaceError> {
        if self.tickets.pending.is_some() {
            return Err(subs::ReplaceError::EventPending);
        }
        let (old, new) = (&self.catalog, &catalog);
        let rules = subs::replacement_rules(old, new, self.rules.as_ref())?;
        let change = subs::CatalogChange::between(old, new);
        self.tickets.retarget(old, new);
        #[cfg(feature = "connectome")]
        self.connectome.observed.replace_catalog(&self.catalog, &catalog);
        self.catalog = catalog;
        self.rules = rules;
        self.catalog_revision += 1;
        self.announce_list_changed(change);
        Ok(change)
    }

    /// The `notifications/*/list_changed` of `change` (see
    /// [`subs::Fanout::announce_list_changed`]); the stdio stream's session-bound client is
    /// told once it is initialized.
    pub(crate) fn announce_list_changed(&mut self, change: subs::CatalogChange) -> subs::CatalogChange {
        let stdio = self.mode == Mode::Stdio && self.session.legacy.is_some() && self.session.initialized;
        self.fanout().announce_list_changed(change, stdio)
    }

    /// Notifies the subscribers of `uri` (see [`subs::Fanout::notify_resource_updated`]).
    pub(crate) fn notify_resource_updated(&mut self, uri: &str) -> usize {
        let stdio = self.mode == Mode::Stdio && subs::wants_update(&self.session, uri);
        self.fanout().notify_resource_updated(uri, stdio)
    }

    /// The session-bound list changes for an HTTP session (see
    /// [`subs::Fanout::session_list_changed`]).
    pub(crate) fn session_list_changed(
        &mut self,
        route: Route,
        session: &Session,
        change: subs::CatalogChange,
    ) {
        self.fanout().session_list_changed(route, session, change);
    }

    /// A resource update for an HTTP session (see
    /// [`subs::Fanout::session_resource_updated`]).
    pub(crate) fn session_resource_updated(&mut self, route: Route, session: &Session, uri: &str) -> bool {
        self.fanout().session_resource_updated(route, session, uri)
    }

    /// Ends every subscription gracefully (see [`subs::Fanout::end_subscriptions`]).
    pub(crate) fn end_subscriptions(&mut self) -> usize {
        self.fanout().end_subscriptions()
    }

    /// The methods that reach the host, over the parts they use, for the request being
    /// dispatched (see [`requests::HostRequests`]).
    fn host_requests(&mut self) -> requests::HostRequests<'_> {
        let clock = self.clock();
        requests::HostRequests {
            cfg: &self.cfg,
            catalog: &self.catalog,
            prepared: &self.prepared,
            scratch: &mut self.scratch,
            tickets: &mut self.tickets,
            outbox: &mut self.outbox,
            inputs: &mut self.inputs,
            tasks: &mut self.tasks,
            served: &mut self.served,
            answered: &mut self.answered,
            session: &self.session,
            caller: self.request.caller(self.rules.as_ref()),
            clock,
        }
    }

    /// The skills extension's answers for the request being dispatched (see
    /// [`skills::SkillAnswers`]).
    fn skill_answers(&mut self) -> skills::SkillAnswers<'_> {
        skills::SkillAnswers {
            catalog: &self.catalog,
            cfg: &self.cfg,
            meta: &self.prepared.meta,
            grant: scopes::Grant { rules: self.rules.as_ref(), granted: self.request.granted },
            out: &mut self.outbox.out,
        }
    }

    /// The handle every answer and notification for a ticket goes through.
    pub(crate) fn answers(&mut self) -> Answers<'_> {
        let clock = self.clock();
        Answers {
            tickets: &mut self.tickets,
            outbox: &mut self.outbox,
            inputs: &mut self.inputs,
            tasks: &mut self.tasks,
            prepared: &self.prepared,
            catalog: &self.catalog,
            resources_cache: self.cfg.resources_cache,
            clock,
            log: &mut self.answered,
        }
    }

    /// The task store's port: the table's side of a host's task store (see
    /// [`tasks::store::TaskStore`]).
    pub(crate) fn task_store(&mut self) -> tasks::store::TaskStore<'_> {
        let wall = self.wall_now();
        tasks::store::TaskStore {
            tasks: &mut self.tasks,
            tickets: &mut self.tickets,
            outbox: &mut self.outbox,
            catalog: &self.catalog,
            prepared: &self.prepared,
            cfg: &self.cfg,
            now: self.now,
            wall,
        }
    }

    /// The task methods' view of the core for the request being dispatched (see
    /// [`tasks::TaskMethods`]).
    pub(crate) fn task_methods(&mut self) -> tasks::TaskMethods<'_> {
        let wall = self.wall_now();
        tasks::TaskMethods {
            tasks: &mut self.tasks,
            tickets: &mut self.tickets,
            outbox: &mut self.outbox,
            prepared: &self.prepared,
            principal: self.request.principal,
            token: self.session.token,
            serial: self.session.serial,
            page_size: self.cfg.page_size,
            wall,
        }
    }

    /// The wall clock now (microseconds since the Unix epoch; the engine's time until the
    /// host sets the wall clock).
    pub(crate) fn wall_now(&self) -> u64 {
        self.clock().wall.unwrap_or(self.now)
    }

    /// Deletes the tasks past their TTL; the host is told of those it still works on.
    pub(crate) fn expire_tasks(&mut self) {
        self.tasks.expire_due(self.now, &mut self.tickets, &mut self.outbox);
    }

    /// Whether a task store is attached (see [`Self::task_store`]).
    pub(crate) fn task_store_attached(&self) -> bool {
        self.tasks.store.is_some()
    }

    /// When the task store's earliest lease renewal or retry is due.
    pub(crate) fn task_store_deadline(&self) -> Option<crate::time::Instant> {
        self.tasks.store_deadline()
    }

    /// The task `ticket` names, if it is one whose progress notifications are sent
    /// (`2025-11-25`, held by the host, with a progress token).
    pub(crate) fn progress_task(&self, ticket: Ticket) -> Option<&tasks::Record> {
        self.tasks.get(ticket).filter(|r| r.sends_progress())
    }

    /// How many tasks the engine holds (finished ones included, until their TTL).
    pub(crate) fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the server waits for a reply of the client of session `serial` to a
    /// request the host sent it.
    pub(crate) fn asks_waiting_in(&self, serial: u64) -> bool {
        self.asks.waiting_in(serial)
    }

    // ------------------------------------------------------------ deadlines, client asks and cancellation
    /// When the earliest task's TTL passes.
    pub(crate) fn task_deadline(&self) -> Option<u64> {
        self.tasks.deadline().map(crate::time::Instant::as_micros)
    }

    /// Seeds the task ids with 32 bytes of the host's entropy.
    pub(crate) fn seed_tasks(&mut self, entropy: &[u8; 32]) {
        self.tasks.seed(entropy);
    }

    /// When the earliest request sent to a session-bound client times out.
    pub(crate) fn input_deadline(&self) -> Option<u64> {
        [self.inputs.deadline(&self.tickets), self.asks.deadline()].into_iter().flatten().min()
    }

    /// Fails the requests sent to clients that are past their deadline: their tickets
    /// come back to the host (see [`inputs`]).
    pub(crate) fn expire_inputs(&mut self) {
        self.inputs.expire(&self.tickets, self.now);
        self.asks.expire(self.now);
    }

    /// The client of session `serial` (every client, with `None`: the stream ended)
    /// can no longer answer: what it was asked fails, and the requests come back.
    pub(crate) fn inputs_gone(&mut self, serial: Option<u64>) {
        self.inputs.gone(&self.tickets, serial);
        self.asks.gone(serial);
    }

    /// Sends `request` to the client of the session `session` names (its serial and
    /// declared capabilities; `None`: the stdio stream's own session) on `route`.
    pub(crate) fn ask_client(
        &mut self,
        route: Route,
        session: Option<(u64, ClientCapabilities)>,
        request: &mrtr::InputRequest<'_>,
    ) -> Result<asks::ClientAsk, asks::AskError> {
        let (serial, caps) = match session {
            Some(s) => s,
            None if self.session.legacy.is_some() => (self.session.serial, self.session.caps),
            None => return Err(asks::AskError::NoSession),
        };
        if self.inputs.closed() {
            return Err(asks::AskError::ClientGone);
        }
        if route == Route::Stdio && self.output_backlogged() {
            return Err(asks::AskError::Backpressure);
        }
        self.asks.ask_client(&mut self.inputs, &mut self.outbox, route, (serial, caps), request, self.now)
    }

    /// Cancels every ticket of `route` (its HTTP response stream closed): the host
    /// learns through [`Event::Cancelled`](event::Event::Cancelled) and nothing more is
    /// written for it.
    pub(crate) fn cancel_route(&mut self, route: Route) {
        self.subs.list.retain(|s| s.route != route);
        self.tasks.drop_waiters(route);
        self.tickets.cancel_route(route);
    }

    /// Answers every request on `route` with "Request timed out" and tells the host it is
    /// cancelled (a request whose event the host has not polled yet is withdrawn), and
    /// ends a listen stream on it (its grant expired) with its closing result.
    pub(crate) fn time_out_route(&mut self, route: Route) {
        tasks::legacy::time_out_waiters(&mut self.tasks, &mut self.outbox, route);
        // A listen stream on the route ends as the server ends it (its grant expired).
        self.subs.end_route(&mut self.outbox, &self.prepared, route);
        for slot in 0..self.tickets.slots.len() {
            let s = self.tickets.slots[slot];
            if s.busy.is_some_and(|b| b.route == route) {
                let ticket = Ticket { slot: slot as u16, generation: s.generation, task: false };
                if self.answers().answer_timeout(ticket).is_ok() {
                    self.tickets.tell_cancelled(ticket);
                }
            }
        }
    }

    /// Moves the tickets of `from` to `to`: what is written for them from now on goes
    /// there (a session's stream parked when its connection went away, or resumed on
    /// another).
    pub(crate) fn reroute(&mut self, from: Route, to: Route) {
        self.tickets.reroute(from, to);
    }

    /// Whether the request being dispatched may use item `i` of list `kind` (a
    /// definition it may not use does not exist for it): the connectome's reads ask.
    #[cfg(feature = "connectome")]
    pub(crate) fn may_use(&self, kind: crate::wire::cursor::ListKind, i: usize) -> bool {
        self.request.grant(self.rules.as_ref()).may_use(kind, i)
    }

    /// Installs the scope rules of a protected endpoint (built for the current catalog).
    pub(crate) fn set_rules(&mut self, rules: scopes::Rules) {
        self.rules = Some(rules);
    }

    /// Tickets held by requests acting for `principal`.
    pub(crate) fn in_flight_for(&self, principal: &[u8; 32]) -> usize {
        self.tickets.in_flight_for(principal)
    }

    /// Whether a live ticket answers on `route`.
    pub(crate) fn has_route(&self, route: Route) -> bool {
        self.tickets.has_route(route)
    }

    /// Whether the cancellation notification `n` names a request holding a ticket.
    pub(crate) fn cancel_is_live(&self, n: &[Node<'_>]) -> bool {
        self.tickets.cancel_is_live(n)
    }
    /// Numbers a session that comes back from a session store, as `initialize` numbers
    /// a new one.
    pub(crate) fn number_session(&mut self, session: &mut Session) {
        self.sessions_opened += 1;
        session.serial = self.sessions_opened;
    }

    // ------------------------------------------------------------ the dispatcher

    /// Answers a frame that is not valid JSON (or nests too deep).
    fn parse_failure(&mut self, e: &simd_json::Error) -> u16 {
        let e = if matches!(e.error(), simd_json::ErrorType::DepthLimitExceeded) {
            PeerError::TooDeep(self.cfg.max_depth)
        } else {
            PeerError::Parse
        };
        self.refused(None, &e);
        self.outbox.reject(Reply::None, &e)
    }

    /// Answers a stdio frame longer than the limit, with the request's `id` (raw JSON)
    /// when it could be read from the frame.
    pub(crate) fn oversized(&mut self, id: Option<&[u8]>) {
        let e = PeerError::Oversized(self.cfg.max_frame_len);
        self.refused(None, &e);
        self.outbox.reject(id.map_or(Reply::None, Reply::Stored), &e);
    }

    /// Records a request (`None`: a message that never became one) answered with `e`.
    fn refused(&mut self, req: Option<&Req<'_, '_>>, e: &PeerError<'_>) {
        self.served.refused((&self.catalog, self.catalog_revision), req, e, self.now);
    }

    /// Serves one parsed message (or answers its parse failure) for the request `ctx`
    /// describes (its route, principal, grant, session): the one entry point of both
    /// transports. `headers` are the HTTP request's (empty on stdio).
    pub(crate) fn handle<'t>(
        &mut self,
        ctx: context::RequestContext<'_>,
        parsed: Result<&[Node<'t>], simd_json::Error>,
        headers: &'t [httparse::Header<'t>],
    ) -> context::Handled {
        self.handle_gated(ctx, parsed, headers, |_, _| None)
    }

    /// [`Self::handle`], with the message decoded once and shown to `gate` first (with
    /// the core, for its counts): the transport decides its limits on what the request
    /// is ([`RequestFacts::of`](facts::RequestFacts::of) the decoded message), never on
    /// the tape. A gate that refuses the message writes its own answer and returns what
    /// the message became; the core then never sees it (nothing is counted or recorded).
    pub(crate) fn handle_gated<'t>(
        &mut self,
        ctx: context::RequestContext<'_>,
        parsed: Result<&[Node<'t>], simd_json::Error>,
        headers: &'t [httparse::Header<'t>],
        gate: impl FnOnce(&Self, &Message<'_, 't>) -> Option<Dispatched>,
    ) -> context::Handled {
        let opens = ctx.check == SessionCheck::Absent(Room::Yes);
        // Decoded in place and lent by reference: the message is never moved.
        let message;
        let decoded = match parsed {
            Ok(n) => {
                message = jsonrpc::decode(n, &mut self.scratch.names);
                if let Some(refused) = gate(self, &message) {
                    return context::Handled {
                        dispatched: refused,
                        denied: None,
                        opened: self.opened(opens),
                    };
                }
                Ok((n, &message))
            }
            Err(e) => Err(e),
        };
        self.frames += 1;
        self.request = context::Current::of(&ctx);
        self.denied = None;
        // The session's state is the core's while it serves the request.
        let mut attached = ctx.session;
        if let Some(s) = attached.as_deref_mut() {
            core::mem::swap(&mut self.session, s);
        }
        let dispatched = match decoded {
            Ok((n, message)) => self.dispatch(n, message, headers),
            Err(e) => Dispatched::Answered(self.parse_failure(&e)),
        };
        if let Some(s) = attached {
            core::mem::swap(&mut self.session, s);
        }
        self.request = context::Current::idle(self.mode);
        context::Handled { dispatched, denied: self.denied, opened: self.opened(opens) }
    }

    /// The session an `initialize` without `Mcp-Session-Id` opened (`opens`: one could),
    /// taken for the transport's table.
    fn opened(&mut self, opens: bool) -> Option<Session> {
        (opens && self.session.legacy.is_some()).then(|| core::mem::take(&mut self.session))
    }

    /// What the transport must know of the message on tape `n` before it is served
    /// (decoded here; a message looked at before it is served, and parsed again then).
    pub(crate) fn preview<'t>(&mut self, n: &[Node<'t>]) -> facts::RequestFacts<'t> {
        facts::RequestFacts::of(&jsonrpc::decode(n, &mut self.scratch.names))
    }

    /// Serves one message, decoded.
    fn dispatch<'t>(
        &mut self,
        n: &[Node<'t>],
        message: &Message<'_, 't>,
        headers: &'t [httparse::Header<'t>],
    ) -> Dispatched {
        let mark = self.outbox.out.len();
        self.served.begin();
        let status = match message {
            Message::Refused(reply, e) => {
                self.refused(None, e);
                self.outbox.reject(*reply, e)
            }
            // Whatever it is, a message for a session that is not there finds nothing.
            Message::Request(req) if self.request.check == SessionCheck::Unknown => {
                self.refused(Some(req), &PeerError::SessionNotFound);
                self.outbox.reject(Reply::Id(req.id), &PeerError::SessionNotFound)
            }
            Message::Notification { .. } | Message::Ignored | Message::Response { .. }
                if self.request.check == SessionCheck::Unknown =>
            {
                self.outbox.reject(Reply::None, &PeerError::SessionNotFound)
            }
            Message::Ignored => 200,
            &Message::Response { id, outcome } => {
                let session = self.session.serial;
                let names = &mut self.scratch.names;
                let r = inputs::Response { n, id, outcome };
                if !self.inputs.response(&self.tickets, session, r, names)
                    && !self.asks.response(session, r, names)
                {
                    // Or the answer to what a 2025-11-25 task asked.
                    self.task_methods().task_response(n, id, outcome);
                }
                200
            }
            &Message::Notification { method, params } => {
                let (mode, now) = (self.request.mode, self.now);
                let (session, served) = (&mut self.session, &mut self.served);
                if let Some((id, of)) = lifecycle::notified(
                    mode,
                    session,
                    |m, rev| served.notified(m, rev, now),
                    n,
                    method,
                    params,
                ) {
                    // The client ends a request (or a listen stream): nothing more is sent for it.
                    self.tickets.cancel_named(&id, of);
                    self.subs.list.retain(|s| s.id.as_bytes() != id.as_bytes());
                }
                200
            }
            Message::Request(req) if self.id_in_flight(req) => {
                self.refused(Some(req), &PeerError::IdInUse);
                self.outbox.reject(Reply::Id(req.id), &PeerError::IdInUse)
            }
            Message::Request(req) => {
                self.scratch.round.reset();
                match self.serve(req, headers) {
                    // Answered here, or a listen stream opened: the engine served it.
                    Ok(()) if self.tickets.pending.is_none() => {
                        // `initialize` is served before a revision; it negotiates one.
                        if let ("initialize", Some(rev)) = (req.method, self.session.legacy) {
                            self.served.revision(rev);
                        }
                        let catalog = (&self.catalog, self.catalog_revision);
                        self.served.answered(catalog, Some(req), None, self.now);
                        200
                    }
                    Ok(()) => 200,
                    Err(e) => {
                        self.refused(Some(req), &e);
                        self.outbox.reject(Reply::Id(req.id), &e)
                    }
                }
            }
        };
        if self.tickets.pending.is_some() || core::mem::take(&mut self.waiting) {
            Dispatched::Pending
        } else if core::mem::take(&mut self.subs.subscribed) {
            Dispatched::Listening
        } else if self.outbox.out.len() > mark {
            Dispatched::Answered(status)
        } else {
            Dispatched::Accepted
        }
    }

    /// Whether `req`'s id is that of a request still in flight on the same route (a
    /// ticket or an open listen stream): two answers must never share an id. Over HTTP a
    /// route is one connection, which serves one request at a time, so ids are per
    /// connection there.
    fn id_in_flight(&self, req: &Req<'_, '_>) -> bool {
        if self.tickets.in_flight == 0 && self.subs.list.is_empty() {
            return false;
        }
        // An id too long for a slot is in no slot.
        let Some(id) = tickets::IdBuf::of(req.id) else { return false };
        self.tickets.id_in_flight(&id, self.request.route) || self.subs.id_in_flight(&id, self.request.route)
    }

    /// Decides the request's revision and method (the lifecycle tables), then runs it.
    fn serve<'t>(
        &mut self,
        req: &Req<'_, 't>,
        headers: &'t [httparse::Header<'t>],
    ) -> Result<(), PeerError<'t>> {
        let rules = self.request.mode.rules();
        if let Some(method) = lifecycle::opener(rules, req, &self.session) {
            return self.run(method, req, Revision::LATEST_LEGACY);
        }
        let rev =
            lifecycle::revision(rules, req, &self.session, &self.catalog, headers, &mut self.outbox.detail)?;
        let method = lifecycle::method(req.method, rev, &self.prepared.features)
            .ok_or(PeerError::MethodNotFound(req.method))?;
        self.run(method, req, rev)
    }

    /// Runs `method` for `req` under `rev`: the one place that sees every family.
    fn run<'t>(&mut self, method: Method, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        self.served.revision(rev);
        if let (Some(rules), Some(granted)) = (&self.rules, self.request.granted)
            && !rules.method(method, granted)
        {
            self.denied = Some(scopes::slot(method));
            return Err(PeerError::InsufficientScope);
        }
        #[cfg(feature = "connectome")]
        let before = self.tickets.pending.map(|p| p.ticket);
        let outcome = match method {
            Method::Discover => {
                let (fragment, cache) =
                    (self.prepared.discover_for(self.request.mode), self.cfg.discover_cache);
                lifecycle::write_discover(&mut self.outbox.out, req, fragment, &self.prepared.meta, cache);
                Ok(())
            }
            Method::Initialize => {
                let (full, lists) =
                    (self.request.check == SessionCheck::Absent(Room::Full), self.request.lists_tasks());
                let (out, prepared) = (&mut self.outbox.out, &self.prepared);
                let fragment = |rev| prepared.initialize_for(rev, lists);
                lifecycle::initialize(out, req, &mut self.session, &mut self.sessions_opened, full, fragment)
            }
            Method::Ping => {
                lifecycle::write_empty_result(&mut self.outbox.out, Reply::Id(req.id));
                Ok(())
            }
            Method::SetLevel => lifecycle::set_level(&mut self.outbox.out, req, &mut self.session),
            Method::List(kind) => {
                let clock = self.clock();
                let grant = self.request.grant(self.rules.as_ref());
                let lister = lists::Lister {
                    catalog: &self.catalog,
                    prepared: &mut self.prepared,
                    cfg: &self.cfg,
                    grant,
                    principal: self.request.principal.as_ref(),
                    clock,
                };
                lister.list(&mut self.outbox.out, req, rev, kind)
            }
            Method::CallTool => self.host_requests().call_tool(req, rev),
            Method::ReadResource => {
                #[cfg(feature = "connectome")]
                if let Some(served) = self.connectome_read(req, rev) {
                    return served; // counted as it was served
                }
                match self.skill_answers().read(req, rev) {
                    Some(served) => served,
                    None => self.host_requests().read_resource(req, rev),
                }
            }
            Method::GetSkill => self.skill_answers().get(req, rev),
            Method::ReadDirectory => self.skill_answers().directory(req, rev),
            Method::GetPrompt => self.host_requests().get_prompt(req, rev),
            Method::Complete => self.host_requests().complete(req, rev),
            Method::Listen => {
                let (fanout, who, _, captures) = self.subscriber();
                fanout.listen(req, &who, captures)
            }
            Method::GetTask => self.task_methods().get(req, rev),
            Method::UpdateTask => self.task_methods().update(req, rev),
            Method::CancelTask => self.task_methods().cancel(req, rev),
            Method::TaskResult => {
                let route = self.request.route;
                let waits = self.task_methods().result(req, rev, route);
                if let Ok(Some(ticket)) = waits {
                    self.waiting = true;
                    // A copy of another node's task: read again should its owner fall silent.
                    self.task_store().watch_copy(ticket);
                }
                waits.map(|_| ())
            }
            // Not offered (`initialize` left `tasks.list` out): a method this server does
            // not support for the caller.
            Method::ListTasks if !self.request.lists_tasks() => Err(PeerError::MethodNotFound(req.method)),
            // With a task store the list is the store's (`listing`): the table holds only
            // this engine's tasks, not every task the caller can read.
            Method::ListTasks if self.tasks.store.is_some() => {
                let (principal, route) = (self.request.principal, self.request.route);
                self.task_store().list_stored(req, rev, principal, route)
            }
            Method::ListTasks => self.task_methods().list(req, rev),
            Method::Subscribe | Method::Unsubscribe => {
                let (fanout, who, session, captures) = self.subscriber();
                fanout.legacy_subscribe(req, rev, method == Method::Subscribe, session, who.grant, captures)
            }
        };
        #[cfg(feature = "connectome")]
        self.observe(method, before);
        outcome
    }
}
