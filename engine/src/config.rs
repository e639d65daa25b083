//! The engine's configuration: [`Config`], [`ServerInfo`], cache policies and the secret key.

use core::fmt;

use serde::Serialize;

/// Who the server says it is (MCP `Implementation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerInfo {
    /// Programmatic name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Who may reuse a cacheable result (MCP `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheScope {
    /// Holds nothing user-specific; shared caches may serve it to anyone.
    Public,
    /// Reusable only within the same authorization context.
    Private,
}

impl CacheScope {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Private => "private",
        }
    }
}

/// The caching hints a family of `2026-07-28` results carries (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    /// How long the result stays fresh, in milliseconds. `0`: stale at once.
    pub ttl_ms: u64,
    /// Who may reuse it.
    pub scope: CacheScope,
}

impl Default for CachePolicy {
    /// `0` / `"private"`: nothing is reused unless the host says so.
    fn default() -> Self {
        Self { ttl_ms: 0, scope: CacheScope::Private }
    }
}

/// A key that `Debug` does not print.
#[derive(Clone)]
pub(crate) struct SecretKey(pub(crate) [u8; 32]);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Engine settings. Every limit says what happens when it is reached.
///
/// The setters take `&mut self` and return it, so they chain; a chain that starts from
/// [`Config::new`] ends in `.to_owned()` (a `Config` is `Clone`) to hand the result over by
/// value. One configuration can serve several engines: clone it.
///
/// ```
/// use mcp_engine::{Catalog, Commands, Config, Engine};
///
/// let config = Config::new("notes", "1.0.0").instructions("Keeps notes.").logging(true).to_owned();
/// let engine = Engine::new(config.clone(), Catalog::empty());
/// assert_eq!(engine.config().server_info().name, "notes");
///
/// let mut config = config;
/// config.max_in_flight(8);
/// assert_eq!(config.in_flight_limit(), 8);
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) server_info: ServerInfo,
    pub(crate) instructions: Option<String>,
    pub(crate) max_frame_len: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) max_depth: usize,
    pub(crate) max_buffered_output: usize,
    pub(crate) page_size: usize,
    pub(crate) server_info_meta: bool,
    pub(crate) logging: bool,
    pub(crate) completions: bool,
    pub(crate) state_key: Option<SecretKey>,
    pub(crate) previous_keys: Vec<SecretKey>,
    pub(crate) state_ttl: core::time::Duration,
    pub(crate) cursor_ttl: core::time::Duration,
    pub(crate) input_timeout: core::time::Duration,
    pub(crate) clock_skew: core::time::Duration,
    pub(crate) list_changed: bool,
    pub(crate) resource_subscriptions: bool,
    pub(crate) max_subscriptions: usize,
    pub(crate) max_subscriptions_per_peer: usize,
    pub(crate) max_subscribed_uri_len: usize,
    pub(crate) max_subscribed_bytes: usize,
    pub(crate) discover_cache: CachePolicy,
    pub(crate) tools_cache: CachePolicy,
    pub(crate) resources_cache: CachePolicy,
    pub(crate) prompts_cache: CachePolicy,
    pub(crate) tasks: bool,
    pub(crate) skills_directory_read: bool,
    pub(crate) max_tasks: usize,
    pub(crate) max_tasks_per_principal: usize,
    pub(crate) task_ttl: core::time::Duration,
    pub(crate) task_poll_interval: core::time::Duration,
}

impl Config {
    /// Defaults for a server called `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            server_info: ServerInfo { name: name.into(), version: version.into(), title: None },
            instructions: None,
            max_frame_len: 1 << 20,
            max_in_flight: 64,
            max_depth: 64,
            max_buffered_output: 1 << 20,
            page_size: 50,
            server_info_meta: true,
            logging: false,
            completions: false,
            state_key: None,
            previous_keys: Vec::new(),
            state_ttl: core::time::Duration::from_secs(600),
            cursor_ttl: core::time::Duration::from_secs(600),
            input_timeout: core::time::Duration::from_secs(300),
            clock_skew: core::time::Duration::from_secs(30),
            list_changed: false,
            resource_subscriptions: false,
            max_subscriptions: 16,
            max_subscriptions_per_peer: 4,
            max_subscribed_uri_len: 2048,
            max_subscribed_bytes: 32 * 1024,
            discover_cache: CachePolicy::default(),
            tools_cache: CachePolicy::default(),
            resources_cache: CachePolicy::default(),
            prompts_cache: CachePolicy::default(),
            tasks: false,
            skills_directory_read: false,
            max_tasks: 1024,
            max_tasks_per_principal: 32,
            task_ttl: core::time::Duration::from_secs(3600),
            task_poll_interval: core::time::Duration::from_secs(1),
        }
    }
    /// Display title of the server.
    pub fn title(&mut self, title: impl Into<String>) -> &mut Self {
        self.server_info.title = Some(title.into());
        self
    }
    /// Instructions for the client, sent in `server/discover` and `initialize` results.
    pub fn instructions(&mut self, instructions: impl Into<String>) -> &mut Self {
        self.instructions = Some(instructions.into());
        self
    }
    /// Longest stdio frame in bytes, newline excluded (default 1 MiB, 1,048,576, as
    /// HTTP's body cap, [`HttpConfig::max_body`](crate::http::HttpConfig::max_body)). A
    /// longer frame is answered `-32600`, with the request's id when it can be read from
    /// the frame's bytes (its top-level `"id"`, next to a `"method"`; read as the bytes
    /// pass, wherever in the frame it is), else with none. The answer goes as soon as the
    /// id is known (or the frame's top-level object ended), else when the frame ends; the
    /// frame's bytes past the limit are discarded unread (but for that look) up to the
    /// next newline, where the stream resumes. Clamped to at least 512. At most this much
    /// input (plus a line break) is buffered; the stdio engine's input buffer takes twice
    /// that, reserved once (pages are touched only as frames that long arrive).
    pub fn max_frame_len(&mut self, bytes: usize) -> &mut Self {
        self.max_frame_len = bytes.max(512);
        self
    }
    /// Most tickets outstanding at once (default 64). While that many are unanswered, a
    /// request that needs a ticket waits, and so does every frame after it, except
    /// cancellations of requests that hold a ticket and the client's responses to the
    /// server's requests (a request holding a slot may wait for one), which are taken
    /// out of order. Frames at the head that need no ticket (a `ping`, a list) are still
    /// served. Over HTTP each request waits on its own connection, and only requests that
    /// need a ticket wait: a response, a notification, a `GET` or a `DELETE` is served. Waiting frames stay buffered (one frame's worth of bytes); once
    /// that buffer is full, [`Engine::handle_input`](crate::Engine::handle_input) accepts no more bytes, and a
    /// cancellation sent after that is read only when a slot frees. Clamped to
    /// 1..=65,535.
    pub fn max_in_flight(&mut self, n: usize) -> &mut Self {
        self.max_in_flight = n.clamp(1, u16::MAX as usize);
        self
    }
    /// Deepest JSON nesting accepted in a frame (default 64). A deeper frame is answered
    /// `-32600`. Clamped to 8..=128 (128 is what `serde_json`, which validates and
    /// deserializes arguments, accepts).
    pub fn max_depth(&mut self, depth: usize) -> &mut Self {
        self.max_depth = depth.clamp(8, 128);
        self
    }
    /// Output bytes the engine holds before it stops processing input until the caller
    /// drains some with [`Engine::poll_transmit`](crate::Engine::poll_transmit) (default 1 MiB). Answers to tickets are
    /// always written; only new frames wait. The output buffer reserves this much (at
    /// most 16 MiB) plus 192 KiB when the engine is made, so a client that reads slowly
    /// costs no reallocation; its pages are only touched as they are used.
    pub fn max_buffered_output(&mut self, bytes: usize) -> &mut Self {
        self.max_buffered_output = bytes.max(1);
        self
    }
    /// Items per list page (default 50). Clamped to 1..=10,000. A list longer than a page
    /// ends its page with a `nextCursor` sealed with the [secret key](Self::secret_key);
    /// without a key no cursor can be sealed, so each list is served whole, in one page.
    pub fn page_size(&mut self, n: usize) -> &mut Self {
        self.page_size = n.clamp(1, 10_000);
        self
    }
    /// Whether `2026-07-28` results carry `_meta["io.modelcontextprotocol/serverInfo"]`
    /// (default true).
    pub fn server_info_in_meta(&mut self, on: bool) -> &mut Self {
        self.server_info_meta = on;
        self
    }
    /// Whether the server sends log messages (`notifications/message`, default off). On,
    /// `logging` is advertised, `logging/setLevel` is served on session-bound streams, and
    /// [`Commands::notify_log`](crate::Commands::notify_log) sends a message for a request whose client asked for logs
    /// at that level (`_meta["io.modelcontextprotocol/logLevel"]` in 2026-07-28, the
    /// stream's `logging/setLevel` before).
    pub fn logging(&mut self, on: bool) -> &mut Self {
        self.logging = on;
        self
    }
    /// Whether the host completes prompt and resource-template arguments
    /// (`completion/complete`, default off). On, `completions` is advertised and each
    /// request reaches the host as [`Event::Complete`](crate::Event::Complete).
    pub fn completions(&mut self, on: bool) -> &mut Self {
        self.completions = on;
        self
    }
    /// The secret that seals what the engine hands clients to bring back (HMAC-SHA256):
    /// the `requestState` of multi-round-trip requests
    /// ([`Commands::answer_input_required`](crate::Commands::answer_input_required)) and list
    /// cursors (`nextCursor`). Without one the engine issues no `requestState`, refuses
    /// host state, and answers `-32602` to any `requestState` it is sent; and it serves
    /// each list whole, with no cursor (any cursor it is sent is `-32602`). Every server
    /// instance that may receive a retry or a next-page request needs the same key; draw
    /// it from a cryptographic source and keep it out of logs.
    pub fn secret_key(&mut self, key: [u8; 32]) -> &mut Self {
        self.state_key = Some(SecretKey(key));
        self
    }
    /// The most earlier keys [`Self::previous_secret_keys`] keeps.
    pub const MAX_PREVIOUS_KEYS: usize = crate::wire::MAX_PREVIOUS_KEYS;
    /// Earlier secret keys that still open what they sealed, for rotating the key without
    /// refusing what clients hold: every node first learns the new key as a previous one,
    /// then seals with it ([`Self::secret_key`]) while the old one stays here until what it
    /// sealed has expired (at most the longest of the `requestState` and cursor lifetimes,
    /// and the session idle timeout for session ids). Nothing is sealed with these. At
    /// most [`Self::MAX_PREVIOUS_KEYS`] are kept (the first ones given); they count only
    /// with a [`Self::secret_key`].
    ///
    /// ```
    /// use mcp_engine::Config;
    /// let mut config = Config::new("demo", "1.0");
    /// config.secret_key([2; 32]).previous_secret_keys([[1; 32]]);
    /// ```
    pub fn previous_secret_keys(&mut self, keys: impl IntoIterator<Item = [u8; 32]>) -> &mut Self {
        self.previous_keys = keys.into_iter().take(Self::MAX_PREVIOUS_KEYS).map(SecretKey).collect();
        self
    }
    /// The same as [`Self::secret_key`] (its older name).
    pub fn request_state_key(&mut self, key: [u8; 32]) -> &mut Self {
        self.secret_key(key)
    }
    /// How long a `requestState` stays valid after it is issued (default 10 minutes). A
    /// retry after it is `-32602`. Measured on the wall clock once the host has set it
    /// ([`Engine::set_wall_clock`](crate::Engine::set_wall_clock)), with the
    /// [skew allowance](Self::clock_skew); until then on the [`Instant`](crate::Instant)s
    /// the engine is given, which only this engine can judge (see `docs/decisions.md`).
    pub fn request_state_ttl(&mut self, ttl: core::time::Duration) -> &mut Self {
        self.state_ttl = ttl;
        self
    }
    /// How long a list cursor (`nextCursor`) stays valid after it is issued (default 10
    /// minutes, clamped to 1 second..=24 hours). A cursor sent after it is `-32602`, and the
    /// client lists again from the first page. Measured like
    /// [`Self::request_state_ttl`].
    pub fn cursor_ttl(&mut self, ttl: core::time::Duration) -> &mut Self {
        self.cursor_ttl =
            ttl.clamp(core::time::Duration::from_secs(1), core::time::Duration::from_secs(86_400));
        self
    }
    /// How long a session-bound client (`2025-11-25`, `2025-06-18`) has to answer the
    /// requests the engine sends it for a host's
    /// [`InputRequired`](crate::mrtr::InputRequired) answer (sampling, elicitation, roots;
    /// default 5 minutes, clamped to 1 second..=24 hours: elicitation waits on a person).
    /// A request still unanswered then reaches the host as an error response under its
    /// key ([`InputResponses::error`](crate::mrtr::InputResponses::error), code `-32001`).
    pub fn input_timeout(&mut self, timeout: core::time::Duration) -> &mut Self {
        self.input_timeout =
            timeout.clamp(core::time::Duration::from_secs(1), core::time::Duration::from_secs(86_400));
        self
    }
    /// How far apart the wall clocks of the server instances that share a
    /// [secret key](Self::secret_key) may be (default 30 seconds, clamped to at most 10
    /// minutes). A `requestState` or cursor sealed on the wall clock is accepted until its
    /// expiry plus this, and refused if its expiry is further ahead than its lifetime plus
    /// this (sealed by a clock that far ahead). Not applied to expiries on
    /// [`Instant`](crate::Instant)s, which come from this engine's one clock.
    pub fn clock_skew(&mut self, skew: core::time::Duration) -> &mut Self {
        self.clock_skew = skew.min(core::time::Duration::from_secs(600));
        self
    }
    /// Whether the catalog may change while the server runs (default off). On,
    /// `listChanged: true` is advertised for every family the catalog has, clients may open
    /// `subscriptions/listen` streams for list changes (`2026-07-28`), and
    /// [`Commands::replace_catalog`](crate::Commands::replace_catalog) notifies them (and a session-bound stdio client).
    pub fn list_changed(&mut self, on: bool) -> &mut Self {
        self.list_changed = on;
        self
    }
    /// Whether clients may subscribe to resource updates (default off). On,
    /// `resources.subscribe: true` is advertised (when the catalog has resources),
    /// `subscriptions/listen` honours `resourceSubscriptions`, session-bound clients get
    /// `resources/subscribe` and `resources/unsubscribe`, and
    /// [`Commands::notify_resource_updated`](crate::Commands::notify_resource_updated) notifies the subscribers of a uri.
    pub fn resource_subscriptions(&mut self, on: bool) -> &mut Self {
        self.resource_subscriptions = on;
        self
    }
    /// The most `subscriptions/listen` streams one peer may hold open at once (default 4,
    /// at least 1): on one stdio stream, or over HTTP for one client (the principal the host
    /// named, `Verdict::AllowAs`, else the client's address, IPv6 by `/64`) and on one
    /// connection. One more is answered `-32603` and not opened, so that one client cannot
    /// take every stream of [`max_subscriptions`](Self::max_subscriptions).
    pub fn max_subscriptions_per_peer(&mut self, n: usize) -> &mut Self {
        self.max_subscriptions_per_peer = n.max(1);
        self
    }
    /// The longest uri a client may subscribe to, in bytes (default 2,048; between 1 and
    /// 65,535, what a session record can hold). A longer uri in `resources/subscribe` is
    /// answered `-32602` naming the bound, and nothing is kept; in a
    /// `subscriptions/listen`'s `resourceSubscriptions` it is not honoured (left out of
    /// the acknowledgement).
    pub fn max_subscribed_uri_len(&mut self, bytes: usize) -> &mut Self {
        self.max_subscribed_uri_len = bytes.clamp(1, usize::from(u16::MAX));
        self
    }
    /// The most bytes of subscribed uris one session (`resources/subscribe`, with at most
    /// 64 uris) or one `subscriptions/listen` stream keeps (default 32 KiB: 64 uris of
    /// 512 bytes, or fewer longer ones; at least 1). A `resources/subscribe` that would go
    /// past it is answered `-32602` naming the bound, and nothing is kept; a listen's uris
    /// past it are not honoured.
    pub fn max_subscribed_bytes(&mut self, bytes: usize) -> &mut Self {
        self.max_subscribed_bytes = bytes.max(1);
        self
    }
    /// The most `subscriptions/listen` streams open at once (default 16, at least 1). One
    /// more is answered `-32603` and not opened.
    pub fn max_subscriptions(&mut self, n: usize) -> &mut Self {
        self.max_subscriptions = n.max(1);
        self
    }
    /// Whether tool calls may become tasks (default off). On, `2026-07-28` clients see the
    /// `io.modelcontextprotocol/tasks` extension in `server/discover` and get `tasks/get`,
    /// `tasks/update` and `tasks/cancel`; the host turns a call into a task with
    /// [`CallTool::start_task`](crate::event::CallTool::start_task) (see `docs/features.md`).
    /// Task ids are drawn from the entropy given to `set_entropy`.
    pub fn tasks(&mut self, on: bool) -> &mut Self {
        self.tasks = on;
        self
    }
    /// Whether the skills extension offers `resources/directory/read` (default: no): the
    /// direct children of a skill's folder or subfolder (`inode/directory` for folders),
    /// declared as `directoryRead: true`. Only with skills in the catalog
    /// ([`CatalogBuilder::skill`](crate::CatalogBuilder::skill)).
    pub fn skills_directory_read(&mut self, on: bool) -> &mut Self {
        self.skills_directory_read = on;
        self
    }
    /// The most tasks the engine holds at once, finished ones included until their TTL
    /// (default 1,024, at least 1). A call that would be one more is not made a task
    /// ([`TaskRefusal::Full`](crate::error::TaskRefusal::Full)): the host answers it as
    /// a plain call, or with an error.
    pub fn max_tasks(&mut self, n: usize) -> &mut Self {
        self.max_tasks = n.clamp(1, u32::MAX as usize / 2);
        self
    }
    /// The most tasks one principal holds at once (default 32, at least 1); every caller
    /// that names none (stdio, an endpoint that does not authenticate) counts as one
    /// principal. One more is refused as [`max_tasks`](Self::max_tasks) refuses it
    /// ([`TaskRefusal::PrincipalFull`](crate::error::TaskRefusal::PrincipalFull)).
    pub fn max_tasks_per_principal(&mut self, n: usize) -> &mut Self {
        self.max_tasks_per_principal = n.max(1);
        self
    }
    /// How long a task lives from its creation, at most (default 1 hour, at least 1
    /// second): its `ttlMs`. The host may ask for less per task; never more. When it
    /// passes the task is deleted, its work cancelled if it still runs
    /// ([`Event::Cancelled`](crate::Event::Cancelled)), and its id is not found any more.
    pub fn task_ttl(&mut self, ttl: core::time::Duration) -> &mut Self {
        self.task_ttl = ttl.max(core::time::Duration::from_secs(1));
        self
    }
    /// The `pollIntervalMs` tasks suggest unless the host gives one (default 1 second, at
    /// least 1 millisecond).
    pub fn task_poll_interval(&mut self, interval: core::time::Duration) -> &mut Self {
        self.task_poll_interval = interval.max(core::time::Duration::from_millis(1));
        self
    }
    /// Whether a secret key is set ([`Self::secret_key`]).
    pub fn has_request_state_key(&self) -> bool {
        self.state_key.is_some()
    }
    /// Caching hints of `server/discover`.
    pub fn discover_cache(&mut self, policy: CachePolicy) -> &mut Self {
        self.discover_cache = policy;
        self
    }
    /// Caching hints of `tools/list`.
    pub fn tools_cache(&mut self, policy: CachePolicy) -> &mut Self {
        self.tools_cache = policy;
        self
    }
    /// Caching hints of `resources/list`, `resources/templates/list` and `resources/read`.
    pub fn resources_cache(&mut self, policy: CachePolicy) -> &mut Self {
        self.resources_cache = policy;
        self
    }
    /// Caching hints of `prompts/list`.
    pub fn prompts_cache(&mut self, policy: CachePolicy) -> &mut Self {
        self.prompts_cache = policy;
        self
    }
    /// The configured server identity.
    pub fn server_info(&self) -> &ServerInfo {
        &self.server_info
    }
    /// The configured frame limit.
    pub fn frame_limit(&self) -> usize {
        self.max_frame_len
    }
    /// The configured JSON depth limit.
    pub fn depth_limit(&self) -> usize {
        self.max_depth
    }
    /// The configured in-flight limit.
    pub fn in_flight_limit(&self) -> usize {
        self.max_in_flight
    }
}
