//! The lifecycle: every rule about which revision a request is served under and which
//! methods exist under it, for stdio and HTTP alike, in one place.
//!
//! - [`Rules`]: what a transport allows ([`STDIO`], [`HTTP`]).
//! - [`OPENERS`]: requests served before a revision is decided (the era probe, the
//!   session opener, a `ping` before `initialize`).
//! - [`revision`]: the `_meta` checks that decide the revision (one implementation for
//!   both transports).
//! - [`METHODS`]: which method exists under which revision and what it needs.
//! - [`NOTIFICATIONS`]: which notifications the core acts on.
//! - [`Session`]: what a session-bound client set up (stdio owns one; HTTP sessions are
//!   looked up by id), opened by `initialize` ([`Session::open`]), its log level set by
//!   `logging/setLevel`.
//! - The lifecycle methods, as functions over the parts they use: [`initialize`],
//!   [`set_level`], `ping` ([`write_empty_result`]) and the notifications
//!   acted on ([`notified`]); their answers: [`write_initialized`], [`write_discover`].
//!
//! `docs/architecture.md` shows these tables; a test keeps it identical to the rows here.

use simd_json::{Node, StaticNode};

use crate::catalog::Catalog;
use crate::config::CachePolicy;
use crate::error::{Detail, Detailed, PeerError};
use crate::jsonrpc::{Reply, Req};
use crate::level::{LOG_LEVELS, LogLevel};
use crate::mcp::mrtr::ClientCapabilities;
use crate::mcp::tickets::{IdBuf, cancelled_id};
use crate::mcp::write::{result_end, result_start};
use crate::revision::Revision;
use crate::wire::cursor::ListKind;
use crate::wire::{headers, json};

/// What a session-bound client set up on its stream (`2025-11-25` / `2025-06-18`): stdio
/// owns one; HTTP sessions are looked up by id.
#[derive(Debug, Default)]
pub(crate) struct Session {
    /// The revision `initialize` negotiated.
    pub(crate) legacy: Option<Revision>,
    /// The level `logging/setLevel` set.
    pub(crate) log_level: Option<LogLevel>,
    /// `notifications/initialized` was received.
    pub(crate) initialized: bool,
    /// The uris subscribed with `resources/subscribe`: at most 64, each at most
    /// `Config::max_subscribed_uri_len` bytes, `Config::max_subscribed_bytes` in all.
    pub(crate) uris: Vec<Box<str>>,
    /// The input kinds the client declared in `initialize` (`capabilities`): what the
    /// engine may ask it for (sampling, elicitation, roots).
    pub(crate) caps: ClientCapabilities,
    /// Names this session among every session the core opened (never 0 once opened):
    /// a client's response to a request the engine sent is taken only from the session
    /// the request went to.
    pub(crate) serial: u64,
    /// The HTTP session's token (set by the HTTP layer for each request it serves in the
    /// session; `None` on stdio): a `2025-11-25` task made in the session without a
    /// principal is bound to it (`tasks::session_key`).
    pub(crate) token: Option<[u8; 16]>,
    /// Counts the changes to what a session record keeps (`initialized`, the log level,
    /// the uris): a session store is told of a session whose count moved.
    pub(crate) changes: u32,
}

impl Session {
    /// What a session record keeps changed.
    pub(crate) fn touch(&mut self) {
        self.changes = self.changes.wrapping_add(1);
    }

    /// `initialize`: opens the session under the requested revision if it is a
    /// session-bound one we speak, else our latest; numbered `serial`, with the input
    /// kinds the client declared. Refused without `protocolVersion`, on a session already
    /// initialized, and when `full` (the live sessions are at their cap). Returns the
    /// revision opened.
    pub(crate) fn open<'t>(
        &mut self,
        req: &Req<'_, 't>,
        full: bool,
        serial: u64,
    ) -> Result<Revision, PeerError<'t>> {
        let requested = req.str_at(req.param("protocolVersion")).ok_or(PeerError::InitializeNeedsVersion)?;
        if self.legacy.is_some() {
            return Err(PeerError::AlreadyInitialized);
        }
        if full {
            return Err(PeerError::TooManySessions);
        }
        let rev = Revision::parse(requested).filter(|r| !r.is_stateless()).unwrap_or(Revision::LATEST_LEGACY);
        self.legacy = Some(rev);
        self.caps = match req.param("capabilities") {
            Some(c) if json::is_object(req.n, c) => ClientCapabilities::from_tape(req.n, c),
            _ => ClientCapabilities::NONE,
        };
        self.serial = serial;
        self.touch();
        Ok(rev)
    }

    /// `logging/setLevel`: the level later requests of the session log at.
    pub(crate) fn set_level<'t>(&mut self, req: &Req<'_, 't>) -> Result<(), PeerError<'t>> {
        let level =
            req.str_at(req.param("level")).and_then(LogLevel::parse).ok_or(PeerError::UnknownLogLevel)?;
        if self.log_level != Some(level) {
            self.log_level = Some(level);
            self.touch();
        }
        Ok(())
    }
}

/// Writes an empty result (`ping`, `logging/setLevel`, ...): `{"jsonrpc":"2.0","id":..,"result":{}}`.
pub(crate) fn write_empty_result(out: &mut Vec<u8>, reply: Reply<'_, '_>) {
    result_start(out, reply);
    out.extend_from_slice(b"}}\n");
}

/// Writes the answer to `server/discover`: the revisions this transport speaks and the
/// capabilities (`fragment`, prepared once per transport), the `_meta` members, `cache`.
pub(crate) fn write_discover(
    out: &mut Vec<u8>,
    req: &Req<'_, '_>,
    fragment: &[u8],
    meta: &[u8],
    cache: CachePolicy,
) {
    result_start(out, Reply::Id(req.id));
    out.extend_from_slice(fragment);
    result_end(out, meta, Revision::V2026_07_28, Some(cache));
}

/// Writes the answer to `initialize`: the revision opened, then the server's capabilities
/// and info (`fragment`, prepared once per engine for what the revision shows).
pub(crate) fn write_initialized(out: &mut Vec<u8>, req: &Req<'_, '_>, rev: Revision, fragment: &[u8]) {
    result_start(out, Reply::Id(req.id));
    out.extend_from_slice(b"\"protocolVersion\":");
    json::write_str(out, rev.as_str());
    out.push(b',');
    out.extend_from_slice(fragment);
    out.extend_from_slice(b"}}\n");
}

/// Acts on notification `method` (never answered) under `mode`'s rules, `record`ing it
/// (its name and the session's revision): `initialized` marks `session`; a `cancelled`
/// names the request it ends, and the session it must
/// belong to (`None`: any; stdio is one stream, whatever it opened), for the core to end
/// it. Over HTTP only a request of the same session is ended (two sessions may use the
/// same ids), and none outside a session (stateless requests are cancelled by closing
/// their stream).
pub(crate) fn notified(
    mode: Mode,
    session: &mut Session,
    record: impl FnOnce(&'static str, Option<Revision>),
    n: &[Node<'_>],
    method: &str,
    params: Option<usize>,
) -> Option<(IdBuf, Option<u64>)> {
    match notification(mode.rules(), method, session)? {
        Notification::Initialized => {
            record("notifications/initialized", session.legacy);
            if !session.initialized {
                session.initialized = true;
                session.touch();
            }
            None
        }
        Notification::Cancelled => {
            record("notifications/cancelled", session.legacy);
            let id = cancelled_id(n, params)?;
            let of = (mode != Mode::Stdio).then_some(session.serial);
            (of != Some(0)).then_some((id, of))
        }
    }
}

/// `initialize` ([`Session::open`], [`write_initialized`]): `session` opened (refused
/// when the sessions are `full`), numbered among the `opened` so far, the answer with
/// the capabilities `fragment` shows for the revision negotiated.
pub(crate) fn initialize<'t, 'p>(
    out: &mut Vec<u8>,
    req: &Req<'_, 't>,
    session: &mut Session,
    opened: &mut u64,
    full: bool,
    fragment: impl FnOnce(Revision) -> &'p [u8],
) -> Result<(), PeerError<'t>> {
    let rev = session.open(req, full, *opened + 1)?;
    *opened += 1;
    write_initialized(out, req, rev, fragment(rev));
    Ok(())
}

/// `logging/setLevel` ([`Session::set_level`]), answered with an empty result.
pub(crate) fn set_level<'t>(
    out: &mut Vec<u8>,
    req: &Req<'_, 't>,
    session: &mut Session,
) -> Result<(), PeerError<'t>> {
    session.set_level(req)?;
    write_empty_result(out, Reply::Id(req.id));
    Ok(())
}

/// Which transport the core serves: the rules differ (DIGEST A.8, beam_mcp "dual-era is a
/// stdio fact").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Dual-era, newline-delimited JSON-RPC.
    Stdio,
    /// Stateless 2026-07-28 only, with mirrored headers.
    Http,
    /// Streamable HTTP where `initialize` opens a session named by `Mcp-Session-Id`:
    /// the stateless wire for requests naming `2026-07-28`, the session-bound one for the
    /// rest (the HTTP layer picks this per request, and hands the core the session).
    HttpSessions,
}
/// What a transport allows (DIGEST A.8: dual-era is a stdio fact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rules {
    /// The revisions a request may name in `_meta`, newest first.
    pub(crate) supported: &'static [Revision],
    /// `initialize` opens a session on the stream, and a request naming no revision is
    /// served under the session's.
    pub(crate) sessions: bool,
    /// The `Mcp-*` and `MCP-Protocol-Version` headers must mirror the body; checked,
    /// with `clientCapabilities`, before the revision (the conformance suite's order,
    /// DIGEST Part D item 2).
    pub(crate) mirrored_headers: bool,
    /// The client cancels a request with `notifications/cancelled` (over stateless HTTP
    /// it closes the response stream instead).
    pub(crate) cancel_by_message: bool,
    /// Sessions are named by a header (`Mcp-Session-Id`): a request naming no revision
    /// outside a session lacks it, and a session's requests must not name another
    /// revision in `MCP-Protocol-Version`.
    pub(crate) session_header: bool,
}

/// Newline-delimited JSON-RPC: every revision, sessions opened with `initialize`.
pub(crate) const STDIO: Rules = Rules {
    supported: &Revision::ALL,
    sessions: true,
    mirrored_headers: false,
    cancel_by_message: true,
    session_header: false,
};

/// Streamable HTTP: stateless `2026-07-28` only, headers mirrored.
pub(crate) const HTTP: Rules = Rules {
    supported: &[Revision::V2026_07_28],
    sessions: false,
    mirrored_headers: true,
    cancel_by_message: false,
    session_header: false,
};

/// Streamable HTTP with sessions: every revision; `initialize` opens a session named by
/// `Mcp-Session-Id`; `2026-07-28` requests keep their mirrored headers.
pub(crate) const HTTP_SESSIONS: Rules = Rules {
    // A request naming a revision in `_meta` is stateless: only `2026-07-28` can be named.
    supported: &[Revision::V2026_07_28],
    sessions: true,
    mirrored_headers: true,
    cancel_by_message: true,
    session_header: true,
};

impl Mode {
    /// The rules of this transport.
    pub(crate) fn rules(self) -> &'static Rules {
        match self {
            Self::Stdio => &STDIO,
            Self::Http => &HTTP,
            Self::HttpSessions => &HTTP_SESSIONS,
        }
    }
}

/// A method the core serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Discover,
    Initialize,
    Ping,
    SetLevel,
    List(ListKind),
    CallTool,
    ReadResource,
    GetPrompt,
    Complete,
    Listen,
    Subscribe,
    Unsubscribe,
    GetTask,
    UpdateTask,
    CancelTask,
    TaskResult,
    ListTasks,
    /// `skills/get` (the skills extension).
    GetSkill,
    /// `resources/directory/read` (the skills extension, `directoryRead`).
    ReadDirectory,
}

/// Under which revisions a method exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eras {
    Any,
    /// `2026-07-28` only.
    Stateless,
    /// `2025-11-25` and `2025-06-18` only.
    Session,
    /// `2026-07-28` (the tasks extension) and `2025-11-25` (the tasks utility).
    Tasks,
    /// `2025-11-25` only (the tasks utility).
    SessionTasks,
}

impl Eras {
    fn admits(self, rev: Revision) -> bool {
        match self {
            Self::Any => true,
            Self::Stateless => rev.is_stateless(),
            Self::Session => !rev.is_stateless(),
            Self::Tasks => rev != Revision::V2025_06_18,
            Self::SessionTasks => rev == Revision::V2025_11_25,
        }
    }
}

/// What a method needs from the configuration and the catalog (else `-32601`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    Nothing,
    Tools,
    Resources,
    Prompts,
    /// [`Config::logging`](crate::Config::logging).
    Logging,
    /// [`Config::completions`](crate::Config::completions).
    Completions,
    /// [`Config::list_changed`](crate::Config::list_changed) or
    /// [`Config::resource_subscriptions`](crate::Config::resource_subscriptions).
    Notifications,
    /// Resources and [`Config::resource_subscriptions`](crate::Config::resource_subscriptions).
    ResourceSubscriptions,
    /// Tools and [`Config::tasks`](crate::Config::tasks).
    Tasks,
    /// Skills in the catalog.
    Skills,
    /// Skills and [`Config::skills_directory_read`](crate::Config::skills_directory_read).
    DirectoryRead,
}

/// What the configuration and the catalog offer, as [`Needs`] asks it (fixed for an
/// engine's life: a catalog replacement keeps every family).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Features {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
    pub(crate) logging: bool,
    pub(crate) completions: bool,
    pub(crate) list_changed: bool,
    pub(crate) resource_subscriptions: bool,
    pub(crate) tasks: bool,
    pub(crate) skills: bool,
    pub(crate) directory_read: bool,
}

impl Features {
    fn meet(&self, needs: Needs) -> bool {
        match needs {
            Needs::Nothing => true,
            Needs::Tools => self.tools,
            Needs::Resources => self.resources,
            Needs::Prompts => self.prompts,
            Needs::Logging => self.logging,
            Needs::Completions => self.completions,
            Needs::Notifications => self.list_changed || self.resource_subscriptions,
            Needs::ResourceSubscriptions => self.resources && self.resource_subscriptions,
            Needs::Tasks => self.tools && self.tasks,
            Needs::Skills => self.skills,
            Needs::DirectoryRead => self.directory_read,
        }
    }
}

/// One row of [`METHODS`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row {
    pub(crate) name: &'static str,
    pub(crate) method: Method,
    pub(crate) eras: Eras,
    pub(crate) needs: Needs,
}

const fn row(name: &'static str, method: Method, eras: Eras, needs: Needs) -> Row {
    Row { name, method, eras, needs }
}

/// Every method, once the revision is decided. A method not here, or whose row does not
/// admit the revision or whose needs are not met, is `-32601`.
pub(crate) const METHODS: [Row; 22] = [
    row("server/discover", Method::Discover, Eras::Any, Needs::Nothing),
    row("ping", Method::Ping, Eras::Session, Needs::Nothing),
    row("logging/setLevel", Method::SetLevel, Eras::Session, Needs::Logging),
    row("tools/list", Method::List(ListKind::Tools), Eras::Any, Needs::Tools),
    row("tools/call", Method::CallTool, Eras::Any, Needs::Tools),
    row("resources/list", Method::List(ListKind::Resources), Eras::Any, Needs::Resources),
    row("resources/templates/list", Method::List(ListKind::ResourceTemplates), Eras::Any, Needs::Resources),
    row("resources/read", Method::ReadResource, Eras::Any, Needs::Resources),
    row("prompts/list", Method::List(ListKind::Prompts), Eras::Any, Needs::Prompts),
    row("prompts/get", Method::GetPrompt, Eras::Any, Needs::Prompts),
    row("completion/complete", Method::Complete, Eras::Any, Needs::Completions),
    row("subscriptions/listen", Method::Listen, Eras::Stateless, Needs::Notifications),
    row("resources/subscribe", Method::Subscribe, Eras::Session, Needs::ResourceSubscriptions),
    row("resources/unsubscribe", Method::Unsubscribe, Eras::Session, Needs::ResourceSubscriptions),
    row("tasks/get", Method::GetTask, Eras::Tasks, Needs::Tasks),
    row("tasks/update", Method::UpdateTask, Eras::Stateless, Needs::Tasks),
    row("tasks/cancel", Method::CancelTask, Eras::Tasks, Needs::Tasks),
    row("tasks/result", Method::TaskResult, Eras::SessionTasks, Needs::Tasks),
    row("tasks/list", Method::ListTasks, Eras::SessionTasks, Needs::Tasks),
    row("skills/list", Method::List(ListKind::Skills), Eras::Any, Needs::Skills),
    row("skills/get", Method::GetSkill, Eras::Any, Needs::Skills),
    row("resources/directory/read", Method::ReadDirectory, Eras::Any, Needs::DirectoryRead),
];

/// The method `name` under `rev`, if it exists there and `features` meet its needs.
pub(crate) fn method(name: &str, rev: Revision, features: &Features) -> Option<Method> {
    METHODS
        .iter()
        .find(|r| r.name == name)
        .filter(|r| r.eras.admits(rev) && features.meet(r.needs))
        .map(|r| r.method)
}

/// When an opener is served before the revision is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    /// Always (on a transport with sessions).
    Always,
    /// When the request's `params._meta` is absent (else it is checked like any other).
    NoMeta,
    /// When `params._meta` is absent and no session is open.
    NoMetaNoSession,
}

/// One row of [`OPENERS`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opener {
    pub(crate) name: &'static str,
    pub(crate) when: When,
    pub(crate) method: Method,
}

/// Requests served before the revision is decided, on a transport with sessions only:
/// the era probe (answered bare), the session opener, and a `ping` before `initialize`
/// (the session-bound lifecycle allows it).
pub(crate) const OPENERS: [Opener; 3] = [
    Opener { name: "server/discover", when: When::NoMeta, method: Method::Discover },
    Opener { name: "initialize", when: When::Always, method: Method::Initialize },
    Opener { name: "ping", when: When::NoMetaNoSession, method: Method::Ping },
];

/// The opener `req` is, if it is one under `rules`.
pub(crate) fn opener(rules: &Rules, req: &Req<'_, '_>, session: &Session) -> Option<Method> {
    if !rules.sessions {
        return None;
    }
    let no_meta = req.meta.at.is_none();
    OPENERS
        .iter()
        .find(|o| o.name == req.method)
        .filter(|o| match o.when {
            When::Always => true,
            When::NoMeta => no_meta,
            When::NoMetaNoSession => no_meta && session.legacy.is_none(),
        })
        .map(|o| o.method)
}

/// Decides the revision `req` is served under, or refuses it. In order:
///
/// 1. `params._meta`, when present, is an object;
/// 2. it names `io.modelcontextprotocol/protocolVersion` (else the open session's
///    revision, if the transport has sessions and one is open);
/// 3. as a string;
/// 4. where headers are mirrored: `clientCapabilities` is an object, then the headers
///    mirror the body (`-32020`);
/// 5. the revision is one the transport supports (`-32022`, listing them);
/// 6. a session-bound revision is served as named; `2026-07-28` needs
///    `clientCapabilities` (an object) and a known `logLevel`, if any.
pub(crate) fn revision<'t>(
    rules: &Rules,
    req: &Req<'_, 't>,
    session: &Session,
    catalog: &Catalog,
    headers: &'t [httparse::Header<'t>],
    detail: &mut Detail,
) -> Result<Revision, PeerError<'t>> {
    let (n, meta) = (req.n, &req.meta);
    if meta.at.is_some_and(|m| !json::is_object(n, m)) {
        return Err(PeerError::MetaNotObject);
    }
    let Some(vi) = meta.version else {
        return match session.legacy {
            Some(r) if rules.sessions => {
                if rules.session_header && !headers_name(headers, "mcp-protocol-version", r.as_str()) {
                    return Err(PeerError::SessionVersionMismatch);
                }
                Ok(r)
            }
            _ if rules.session_header => Err(PeerError::SessionRequired),
            _ => Err(PeerError::MetaMissing(rules.sessions)),
        };
    };
    let requested = json::str_at(n, vi).ok_or(PeerError::VersionNotString)?;
    let capabilities = meta.capabilities.is_some_and(|c| json::is_object(n, c));
    if rules.mirrored_headers {
        if !capabilities {
            return Err(PeerError::CapabilitiesMissing);
        }
        check_headers(catalog, req, requested, headers, detail)?;
    }
    let rev = Revision::parse(requested)
        .filter(|r| rules.supported.contains(r))
        .ok_or(PeerError::UnsupportedVersion { requested, supported: rules.supported })?;
    if !rev.is_stateless() {
        return Ok(rev);
    }
    if !capabilities {
        return Err(PeerError::CapabilitiesMissing);
    }
    if let Some(li) = meta.log_level
        && !json::str_at(n, li).is_some_and(|l| LOG_LEVELS.contains(&l))
    {
        return Err(PeerError::UnknownMetaLogLevel);
    }
    Ok(rev)
}

/// Whether every `name` header (if any) says `value` (surrounding whitespace ignored).
fn headers_name(headers: &[httparse::Header<'_>], name: &str, value: &str) -> bool {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(name))
        .all(|h| h.value.trim_ascii() == value.as_bytes())
}

/// Runs the header matcher over what the body says.
fn check_headers<'t>(
    catalog: &Catalog,
    req: &Req<'_, 't>,
    version: &'t str,
    headers: &'t [httparse::Header<'t>],
    detail: &mut Detail,
) -> Result<(), PeerError<'t>> {
    let n = req.n;
    let method = req.method;
    let name = match method {
        "tools/call" | "prompts/get" => req.str_at(req.name),
        "resources/read" => req.str_at(req.uri),
        // The tasks extension routes its methods by task id.
        "tasks/get" | "tasks/update" | "tasks/cancel" => req.str_at(req.param("taskId")),
        _ => None,
    };
    let declared = match (method, name) {
        ("tools/call", Some(tool)) => catalog.tool_header_params(tool).unwrap_or(&[]),
        _ => &[],
    };
    // Checked in groups so that no tool, however many annotations it has, needs a
    // heap-allocated list.
    const GROUP: usize = 8;
    let mut groups = declared.chunks(GROUP).peekable();
    loop {
        let mut checks: heapless::Vec<headers::ParamCheck<'_>, GROUP> = heapless::Vec::new();
        if let Some(group) = groups.next() {
            for param in group {
                let value = body_value(n, req.arguments, &param.path);
                // `GROUP` elements at most: cannot overflow.
                let _ = checks.push(headers::ParamCheck { header: &param.header, kind: param.kind, value });
            }
        }
        let expected = headers::Expected { protocol_version: version, method, name, params: &checks };
        headers::check(headers, &expected).map_err(|m| detail.render(Detailed::HeaderMismatch(&m)))?;
        if groups.peek().is_none() {
            return Ok(());
        }
    }
}

/// The log level a `2026-07-28` request asks for in its `_meta`.
pub(crate) fn request_log_level(req: &Req<'_, '_>) -> Option<LogLevel> {
    LogLevel::parse(req.str_at(req.meta.log_level)?)
}

/// The body value at `path` below the `arguments` object, as the header matcher sees it.
fn body_value<'t>(n: &[Node<'t>], args: Option<usize>, path: &[Box<str>]) -> headers::BodyValue<'t> {
    use headers::BodyValue;
    let Some(mut at) = args else { return BodyValue::Absent };
    for key in path {
        match json::get(n, at, key) {
            Some(next) => at = next,
            None => return BodyValue::Absent,
        }
    }
    match n.get(at) {
        Some(Node::String(s)) => BodyValue::Str(s),
        Some(Node::Static(StaticNode::I64(v))) => BodyValue::I64(*v),
        Some(Node::Static(StaticNode::U64(v))) => BodyValue::U64(*v),
        Some(Node::Static(StaticNode::F64(v))) => BodyValue::F64(*v),
        Some(Node::Static(StaticNode::Bool(b))) => BodyValue::Bool(*b),
        Some(Node::Static(StaticNode::Null)) => BodyValue::Null,
        _ => BodyValue::Other,
    }
}

/// A notification the core acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notification {
    /// `notifications/initialized`: the session is ready (tracked, not enforced).
    Initialized,
    /// `notifications/cancelled`: the host learns, nothing more is sent for the request.
    Cancelled,
}

/// When a notification is acted on (else it is ignored, as JSON-RPC asks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heeded {
    /// Once `initialize` opened a session.
    InSession,
    /// On a transport where the client cancels by message (HTTP cancels by closing the
    /// response stream).
    ByMessage,
}

/// Every notification the core acts on; all others are ignored.
pub(crate) const NOTIFICATIONS: [(&str, Notification, Heeded); 2] = [
    ("notifications/initialized", Notification::Initialized, Heeded::InSession),
    ("notifications/cancelled", Notification::Cancelled, Heeded::ByMessage),
];

/// The notification `name` is, if the core acts on it now.
pub(crate) fn notification(rules: &Rules, name: &str, session: &Session) -> Option<Notification> {
    NOTIFICATIONS
        .iter()
        .find(|(n, ..)| *n == name)
        .filter(|(_, _, when)| match when {
            Heeded::InSession => session.legacy.is_some(),
            Heeded::ByMessage => rules.cancel_by_message,
        })
        .map(|(_, kind, _)| *kind)
}

/// The lifecycle tables as `docs/architecture.md` shows them (kept identical by a test).
#[cfg(test)]
pub(crate) fn tables_markdown() -> String {
    use core::fmt::Write as _;
    let mut s = String::new();
    s.push_str("| request | served before the revision is decided when |\n|---|---|\n");
    for o in OPENERS {
        let when = match o.when {
            When::Always => "always (stdio)",
            When::NoMeta => "no `params._meta` (stdio)",
            When::NoMetaNoSession => "no `params._meta`, no session yet (stdio)",
        };
        let _ = writeln!(s, "| `{}` | {when} |", o.name);
    }
    s.push_str("\n| method | revisions | needs |\n|---|---|---|\n");
    for r in METHODS {
        let eras = match r.eras {
            Eras::Any => "any",
            Eras::Stateless => "2026-07-28",
            Eras::Session => "2025-11-25, 2025-06-18",
            Eras::Tasks => "2026-07-28, 2025-11-25",
            Eras::SessionTasks => "2025-11-25",
        };
        let needs = match r.needs {
            Needs::Nothing => "—",
            Needs::Tools => "tools in the catalog",
            Needs::Resources => "resources, templates or skills in the catalog",
            Needs::Prompts => "prompts in the catalog",
            Needs::Logging => "`Config::logging`",
            Needs::Completions => "`Config::completions`",
            Needs::Notifications => "`Config::list_changed` or `Config::resource_subscriptions`",
            Needs::ResourceSubscriptions => "resources, and `Config::resource_subscriptions`",
            Needs::Tasks => "tools, and `Config::tasks`",
            Needs::Skills => "skills in the catalog",
            Needs::DirectoryRead => "skills, and `Config::skills_directory_read`",
        };
        let _ = writeln!(s, "| `{}` | {eras} | {needs} |", r.name);
    }
    s.push_str("\n| notification | acted on when | does |\n|---|---|---|\n");
    for (name, kind, when) in NOTIFICATIONS {
        let when = match when {
            Heeded::InSession => "a session is open",
            Heeded::ByMessage => "the transport cancels by message (stdio)",
        };
        let does = match kind {
            Notification::Initialized => "marks the session initialized (tracked, not enforced)",
            Notification::Cancelled => "frees the ticket, `Event::Cancelled`; ends a listen stream it names",
        };
        let _ = writeln!(s, "| `{name}` | {when} | {does} |");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{Message, Parser, decode};

    const ALL: Features = Features {
        tools: true,
        resources: true,
        prompts: true,
        logging: true,
        completions: true,
        list_changed: true,
        resource_subscriptions: true,
        tasks: true,
        skills: true,
        directory_read: true,
    };
    const NONE: Features = Features {
        tools: false,
        resources: false,
        prompts: false,
        logging: false,
        completions: false,
        list_changed: false,
        resource_subscriptions: false,
        tasks: false,
        skills: false,
        directory_read: false,
    };
    const NEW: Revision = Revision::V2026_07_28;
    const OLD: Revision = Revision::V2025_11_25;
    const OLDEST: Revision = Revision::V2025_06_18;

    /// `method!(name, revision, features => expected)`: one row of the method table.
    macro_rules! method {
        ($name:literal, $rev:expr, $f:expr => $expected:expr) => {
            assert_eq!(method($name, $rev, &$f), $expected, "{} under {:?}", $name, $rev);
        };
    }

    #[test]
    fn every_method_row() {
        use Method as M;
        method!("server/discover", NEW, NONE => Some(M::Discover));
        method!("server/discover", OLDEST, NONE => Some(M::Discover));
        method!("ping", OLD, NONE => Some(M::Ping));
        method!("ping", NEW, ALL => None);
        method!("logging/setLevel", OLD, ALL => Some(M::SetLevel));
        method!("logging/setLevel", OLD, Features { logging: false, ..ALL } => None);
        method!("logging/setLevel", NEW, ALL => None);
        method!("tools/list", NEW, ALL => Some(M::List(ListKind::Tools)));
        method!("tools/list", OLD, Features { tools: false, ..ALL } => None);
        method!("tools/call", OLDEST, ALL => Some(M::CallTool));
        method!("tools/call", NEW, Features { tools: false, ..ALL } => None);
        method!("resources/list", NEW, ALL => Some(M::List(ListKind::Resources)));
        method!("resources/templates/list", OLD, ALL => Some(M::List(ListKind::ResourceTemplates)));
        method!("resources/templates/list", OLD, Features { resources: false, ..ALL } => None);
        method!("resources/read", NEW, ALL => Some(M::ReadResource));
        method!("resources/read", NEW, Features { resources: false, ..ALL } => None);
        method!("prompts/list", OLDEST, ALL => Some(M::List(ListKind::Prompts)));
        method!("prompts/get", NEW, ALL => Some(M::GetPrompt));
        method!("prompts/get", NEW, Features { prompts: false, ..ALL } => None);
        method!("completion/complete", NEW, ALL => Some(M::Complete));
        method!("completion/complete", OLD, Features { completions: false, ..ALL } => None);
        method!("subscriptions/listen", NEW, Features { resource_subscriptions: false, ..ALL } => Some(M::Listen));
        method!("subscriptions/listen", NEW, Features { list_changed: false, ..ALL } => Some(M::Listen));
        method!("subscriptions/listen", NEW, Features { list_changed: false, resource_subscriptions: false, ..ALL } => None);
        method!("subscriptions/listen", OLD, ALL => None);
        method!("resources/subscribe", OLD, ALL => Some(M::Subscribe));
        method!("resources/subscribe", NEW, ALL => None);
        method!("resources/subscribe", OLD, Features { resource_subscriptions: false, ..ALL } => None);
        method!("resources/unsubscribe", OLDEST, ALL => Some(M::Unsubscribe));
        method!("resources/unsubscribe", OLDEST, Features { resources: false, ..ALL } => None);
        method!("tasks/get", NEW, ALL => Some(M::GetTask));
        method!("tasks/get", NEW, Features { tasks: false, ..ALL } => None);
        method!("tasks/get", NEW, Features { tools: false, ..ALL } => None);
        method!("tasks/get", OLD, ALL => Some(M::GetTask));
        method!("tasks/get", OLDEST, ALL => None);
        method!("tasks/update", NEW, ALL => Some(M::UpdateTask));
        method!("tasks/update", OLD, ALL => None);
        method!("tasks/cancel", NEW, ALL => Some(M::CancelTask));
        method!("tasks/cancel", OLD, ALL => Some(M::CancelTask));
        method!("tasks/cancel", OLDEST, ALL => None);
        // Removed by the extension, never part of it: the 2025-11-25 utility's only.
        method!("tasks/result", NEW, ALL => None);
        method!("tasks/list", NEW, ALL => None);
        method!("tasks/result", OLD, ALL => Some(M::TaskResult));
        method!("tasks/list", OLD, ALL => Some(M::ListTasks));
        method!("tasks/list", OLD, Features { tasks: false, ..ALL } => None);
        method!("tasks/list", OLDEST, ALL => None);
        // Not in the table at all.
        method!("initialize", OLD, ALL => None);
        method!("tools/remove", NEW, ALL => None);
        method!("", NEW, ALL => None);
        // Every row is reachable under some revision with every feature on.
        for r in METHODS {
            assert!([NEW, OLD].iter().any(|&rev| method(r.name, rev, &ALL) == Some(r.method)), "{}", r.name);
        }
    }

    /// Runs `f` over the request decoded from `json`.
    fn with_req(json: &str, f: impl FnOnce(&Req<'_, '_>)) {
        let mut bytes = json.as_bytes().to_vec();
        let mut parser = Parser::new(bytes.len() + 2, 64);
        parser.parse(&mut bytes, |parsed| {
            let n = parsed.expect("valid JSON");
            let Message::Request(req) = decode(n, &mut json::Names::with_capacity(0)) else {
                panic!("not a request: {json}")
            };
            f(&req);
        });
    }

    fn request(method: &str, meta: &str) -> String {
        let params = if meta.is_empty() { String::new() } else { format!(r#","params":{{"_meta":{meta}}}"#) };
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"{params}}}"#)
    }

    fn session(rev: Option<Revision>) -> Session {
        Session { legacy: rev, ..Session::default() }
    }

    /// `opener!(rules, method, meta, session => expected)`: one row of the opener table.
    macro_rules! opener {
        ($rules:expr, $method:literal, $meta:literal, $session:expr => $expected:expr) => {
            with_req(&request($method, $meta), |req| {
                assert_eq!(opener(&$rules, req, &session($session)), $expected, "{} {}", $method, $meta);
            });
        };
    }

    #[test]
    fn every_opener_row() {
        use Method as M;
        let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
        opener!(STDIO, "server/discover", "", None => Some(M::Discover));
        opener!(STDIO, "server/discover", "", Some(OLD) => Some(M::Discover));
        with_req(&request("server/discover", meta), |req| {
            assert_eq!(opener(&STDIO, req, &session(None)), None)
        });
        opener!(STDIO, "initialize", "", None => Some(M::Initialize));
        opener!(STDIO, "initialize", "", Some(OLD) => Some(M::Initialize));
        opener!(STDIO, "ping", "", None => Some(M::Ping));
        opener!(STDIO, "ping", "", Some(OLD) => None);
        opener!(STDIO, "tools/list", "", None => None);
        // Streamable HTTP opens no session: nothing is served before the revision.
        opener!(HTTP, "server/discover", "", None => None);
        opener!(HTTP, "initialize", "", None => None);
        opener!(HTTP, "ping", "", None => None);
    }

    #[test]
    fn every_notification_row() {
        use Notification as N;
        let (open, fresh) = (session(Some(OLD)), session(None));
        assert_eq!(notification(&STDIO, "notifications/initialized", &open), Some(N::Initialized));
        assert_eq!(notification(&STDIO, "notifications/initialized", &fresh), None);
        assert_eq!(notification(&STDIO, "notifications/cancelled", &fresh), Some(N::Cancelled));
        assert_eq!(notification(&HTTP, "notifications/cancelled", &fresh), None);
        assert_eq!(notification(&STDIO, "notifications/progress", &open), None);
    }

    /// `revision!(rules, meta, session, headers => expected)`: one step of the `_meta`
    /// rules (`Ok(revision)` or the refusal's message).
    macro_rules! revision {
        ($rules:expr, $method:literal, $meta:literal, $session:expr, $headers:expr => $expected:expr) => {
            with_req(&request($method, $meta), |req| {
                let catalog = crate::catalog::Catalog::builder().build().unwrap();
                let mut detail = Detail::default();
                let got = revision(&$rules, req, &session($session), &catalog, $headers, &mut detail)
                    .map_err(|e| {
                        if matches!(e, PeerError::Detailed { .. }) {
                            detail.message.clone()
                        } else {
                            e.to_string()
                        }
                    });
                let expected: Result<Revision, &str> = $expected;
                assert_eq!(got, expected.map_err(str::to_owned), "{} {}", $method, $meta);
            });
        };
    }

    #[test]
    fn every_revision_rule() {
        let none: &[httparse::Header<'_>] = &[];
        // 1. `_meta` must be an object.
        revision!(STDIO, "tools/list", "3", None, none => Err("Invalid params: params._meta must be an object"));
        revision!(HTTP, "tools/list", "[]", None, none => Err("Invalid params: params._meta must be an object"));
        // 2. A revision named, or the session's.
        revision!(STDIO, "tools/list", "", Some(OLDEST), none => Ok(OLDEST));
        revision!(STDIO, "tools/list", "{}", Some(OLD), none => Ok(OLD));
        revision!(STDIO, "tools/list", "", None, none => Err("Invalid params: params._meta must carry io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities (or open the stream with initialize)"));
        revision!(HTTP, "tools/list", "", Some(OLD), none => Err("Invalid params: params._meta must carry io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"));
        // 3. As a string.
        revision!(STDIO, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":7}"#, None, none => Err("Invalid params: io.modelcontextprotocol/protocolVersion must be a string"));
        // 4. Over HTTP, capabilities and headers come before the revision.
        revision!(HTTP, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}"#, None, none => Err("Invalid params: params._meta must carry io.modelcontextprotocol/clientCapabilities as an object"));
        let err = "Header mismatch: MCP-Protocol-Version header is missing; body value is '1999-01-01'";
        revision!(HTTP, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}"#, None, none => Err(err));
        // 5. A revision the transport speaks.
        revision!(STDIO, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}"#, None, none => Err("Unsupported protocol version: 1999-01-01"));
        let headers = [
            httparse::Header { name: "MCP-Protocol-Version", value: b"2025-11-25" },
            httparse::Header { name: "Mcp-Method", value: b"tools/list" },
        ];
        revision!(HTTP, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}"#, None, &headers => Err("Unsupported protocol version: 2025-11-25"));
        // 6. Session-bound revisions as named; 2026-07-28 with capabilities and a known level.
        revision!(STDIO, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}"#, Some(OLD), none => Ok(OLDEST));
        revision!(STDIO, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#, None, none => Err("Invalid params: params._meta must carry io.modelcontextprotocol/clientCapabilities as an object"));
        revision!(STDIO, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}"#, None, none => Err("Invalid params: params._meta must carry io.modelcontextprotocol/clientCapabilities as an object"));
        revision!(STDIO, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}"#, None, none => Err("Invalid params: unknown io.modelcontextprotocol/logLevel"));
        revision!(STDIO, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"}"#, Some(OLD), none => Ok(NEW));
        let headers = [
            httparse::Header { name: "MCP-Protocol-Version", value: b"2026-07-28" },
            httparse::Header { name: "Mcp-Method", value: b"tools/list" },
        ];
        revision!(HTTP, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#, None, &headers => Ok(NEW));
        // 7. HTTP's session-bound wire: a session names the revision; outside one the
        // header is missing; `MCP-Protocol-Version` must be the session's or absent; a
        // revision named in `_meta` is the stateless wire's.
        revision!(HTTP_SESSIONS, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#, Some(OLD), &headers => Ok(NEW));
        revision!(HTTP_SESSIONS, "tools/list", "", None, none => Err("Bad Request: the Mcp-Session-Id header is required (open a session with initialize, or name 2026-07-28 in params._meta)"));
        revision!(HTTP_SESSIONS, "tools/list", "", Some(OLD), none => Ok(OLD));
        let old = [httparse::Header { name: "mcp-protocol-version", value: b" 2025-11-25 " }];
        revision!(HTTP_SESSIONS, "tools/list", "", Some(OLD), &old => Ok(OLD));
        revision!(HTTP_SESSIONS, "tools/list", "", Some(OLDEST), &old => Err("Bad Request: the MCP-Protocol-Version header names another revision than the session's"));
        let mirrored = [
            httparse::Header { name: "MCP-Protocol-Version", value: b"2025-11-25" },
            httparse::Header { name: "Mcp-Method", value: b"tools/list" },
        ];
        revision!(HTTP_SESSIONS, "tools/list", r#"{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}"#, Some(OLD), &mirrored => Err("Unsupported protocol version: 2025-11-25"));
    }

    #[test]
    fn the_architecture_doc_shows_these_tables() {
        let doc = include_str!("../../../docs/architecture.md");
        for table in tables_markdown().split("\n\n") {
            assert!(
                doc.contains(table.trim_end()),
                "docs/architecture.md must show this lifecycle table as the code has it:\n{table}"
            );
        }
    }
}
