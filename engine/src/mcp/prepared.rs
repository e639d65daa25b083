//! Values prepared once per engine from its config and catalog.

use crate::catalog::Catalog;
use crate::config::Config;
use crate::mcp::lifecycle::{Features, HTTP, Mode, STDIO};
use crate::revision::Revision;
use crate::time::Lifetime;
use crate::wire::cursor::CursorKey;
use crate::wire::json;

/// The tasks extension's name, under `capabilities.extensions` (and a client's
/// `clientCapabilities.extensions`, `tasks::methods`).
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The skills extension's name, under `capabilities.extensions` (both eras).
pub(crate) const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// Values prepared once per engine (they depend only on config and catalog).
pub(crate) struct Prepared {
    /// `"_meta":{"io.modelcontextprotocol/serverInfo":{..}}` or empty.
    pub(crate) meta: Vec<u8>,
    /// The body of the `server/discover` result, between braces (stdio: every revision).
    pub(crate) discover: Vec<u8>,
    /// The same over HTTP, where only `2026-07-28` is served.
    pub(crate) discover_http: Vec<u8>,
    /// The body of the `initialize` result for 2025-11-25 and 2025-06-18, without
    /// `protocolVersion`.
    pub(crate) initialize: Vec<u8>,
    /// The same for 2025-11-25 with tasks on: the `tasks` capability added.
    pub(crate) initialize_tasks: Vec<u8>,
    /// The same without `tasks.list`: for an HTTP session without a principal, whose
    /// requestor cannot be told from another's (`Core::lists_tasks`).
    pub(crate) initialize_tasks_unlisted: Vec<u8>,
    /// The `requestState` key and lifetime.
    pub(crate) state_key: Option<crate::mcp::mrtr::StateKeys>,
    pub(crate) state_life: Lifetime,
    /// The key list cursors are sealed with (the same secret), and their lifetime.
    pub(crate) cursor_key: Option<CursorKey>,
    pub(crate) cursor_life: Lifetime,
    /// What the configuration and the catalog offer, as the method table asks it.
    pub(crate) features: Features,
    /// The longest `ttlMs` and the default `pollIntervalMs` of a task.
    pub(crate) task_ttl_ms: u64,
    pub(crate) task_poll_ms: u64,
}

pub(crate) fn capabilities(cfg: &Config, catalog: &Catalog) -> String {
    let mut caps = serde_json::Map::new();
    if cfg.logging {
        caps.insert("logging".into(), serde_json::json!({}));
    }
    if cfg.completions {
        caps.insert("completions".into(), serde_json::json!({}));
    }
    let changes = cfg.list_changed;
    if catalog.has_prompts() {
        caps.insert("prompts".into(), serde_json::json!({ "listChanged": changes }));
    }
    if catalog.has_resources() {
        let subscribe = cfg.resource_subscriptions;
        caps.insert(
            "resources".into(),
            serde_json::json!({ "subscribe": subscribe, "listChanged": changes }),
        );
    }
    if catalog.has_tools() {
        caps.insert("tools".into(), serde_json::json!({ "listChanged": changes }));
    }
    if catalog.has_skills() {
        // Its settings sit directly under its name; `{}` is "supported, no optional feature".
        let settings = if cfg.skills_directory_read {
            serde_json::json!({ "directoryRead": true })
        } else {
            serde_json::json!({})
        };
        caps.insert("extensions".into(), serde_json::json!({ SKILLS_EXTENSION: settings }));
    }
    serde_json::Value::Object(caps).to_string()
}

impl Prepared {
    /// The `server/discover` fragment of `mode`'s transport.
    pub(crate) fn discover_for(&self, mode: Mode) -> &[u8] {
        match mode {
            Mode::Stdio | Mode::HttpSessions => &self.discover,
            Mode::Http => &self.discover_http,
        }
    }

    /// The `initialize` answer's fragment for revision `rev` (`lists_tasks`: `tasks/list`
    /// is offered to the caller; the tasks utility is 2025-11-25's).
    pub(crate) fn initialize_for(&self, rev: Revision, lists_tasks: bool) -> &[u8] {
        let tasks = rev == Revision::V2025_11_25 && self.features.tasks;
        match (tasks, lists_tasks) {
            (true, true) => &self.initialize_tasks,
            (true, false) => &self.initialize_tasks_unlisted,
            (false, _) => &self.initialize,
        }
    }

    pub(crate) fn new(cfg: &Config, catalog: &Catalog) -> Self {
        let info = serde_json::to_string(&cfg.server_info).unwrap_or_default();
        let caps = capabilities(cfg, catalog);
        let mut meta = Vec::new();
        if cfg.server_info_meta {
            meta.extend_from_slice(b"\"_meta\":{\"io.modelcontextprotocol/serverInfo\":");
            meta.extend_from_slice(info.as_bytes());
            meta.push(b'}');
        }
        // `server/discover` (the 2026-07-28 probe) declares the tasks extension; the
        // session-bound capabilities of `initialize` never do.
        let tasks = cfg.tasks && catalog.has_tools();
        let discover_caps = if tasks {
            let mut v: serde_json::Value = serde_json::from_str(&caps).unwrap_or_default();
            v["extensions"][TASKS_EXTENSION] = serde_json::json!({});
            v.to_string()
        } else {
            caps.clone()
        };
        let discover_for = |revisions: &[Revision]| {
            let mut discover = Vec::new();
            discover.extend_from_slice(b"\"supportedVersions\":[");
            for (i, r) in revisions.iter().enumerate() {
                if i > 0 {
                    discover.push(b',');
                }
                json::write_str(&mut discover, r.as_str());
            }
            discover.extend_from_slice(b"],\"capabilities\":");
            discover.extend_from_slice(discover_caps.as_bytes());
            if let Some(text) = &cfg.instructions {
                discover.extend_from_slice(b",\"instructions\":");
                json::write_str(&mut discover, text);
            }
            discover
        };
        let discover = discover_for(STDIO.supported);
        let discover_http = discover_for(HTTP.supported);
        let initialize_with = |caps: &str| {
            let mut initialize = Vec::new();
            initialize.extend_from_slice(b"\"capabilities\":");
            initialize.extend_from_slice(caps.as_bytes());
            initialize.extend_from_slice(b",\"serverInfo\":");
            initialize.extend_from_slice(info.as_bytes());
            if let Some(text) = &cfg.instructions {
                initialize.extend_from_slice(b",\"instructions\":");
                json::write_str(&mut initialize, text);
            }
            initialize
        };
        let initialize = initialize_with(&caps);
        let initialize_tasks_with = |tasks: serde_json::Value| {
            let mut v: serde_json::Value = serde_json::from_str(&caps).unwrap_or_default();
            v["tasks"] = tasks;
            initialize_with(&v.to_string())
        };
        let initialize_tasks = initialize_tasks_with(
            serde_json::json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
        );
        let initialize_tasks_unlisted = initialize_tasks_with(
            serde_json::json!({ "cancel": {}, "requests": { "tools": { "call": {} } } }),
        );
        Self {
            meta,
            discover,
            discover_http,
            initialize,
            initialize_tasks,
            initialize_tasks_unlisted,
            state_key: cfg.state_key.as_ref().map(|k| crate::mcp::mrtr::StateKeys {
                sign: k.0,
                previous: cfg.previous_keys.iter().map(|p| p.0).collect(),
            }),
            state_life: Lifetime { ttl: micros(cfg.state_ttl), skew: micros(cfg.clock_skew) },
            cursor_key: cfg.state_key.as_ref().map(|k| {
                let previous: Vec<[u8; 32]> = cfg.previous_keys.iter().map(|p| p.0).collect();
                CursorKey::new(&k.0).with_previous(&previous)
            }),
            cursor_life: Lifetime { ttl: micros(cfg.cursor_ttl), skew: micros(cfg.clock_skew) },
            features: Features {
                tools: catalog.has_tools(),
                resources: catalog.has_resources(),
                prompts: catalog.has_prompts(),
                logging: cfg.logging,
                completions: cfg.completions,
                list_changed: cfg.list_changed,
                resource_subscriptions: cfg.resource_subscriptions,
                tasks,
                skills: catalog.has_skills(),
                directory_read: catalog.has_skills() && cfg.skills_directory_read,
            },
            task_ttl_ms: u64::try_from(cfg.task_ttl.as_millis()).unwrap_or(u64::MAX),
            task_poll_ms: u64::try_from(cfg.task_poll_interval.as_millis()).unwrap_or(u64::MAX).max(1),
        }
    }
}

/// A duration in microseconds (saturating).
fn micros(d: core::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
