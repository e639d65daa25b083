//! Subscriptions: `subscriptions/listen` streams (`2026-07-28`) and the legacy
//! `resources/subscribe` set of a session-bound stdio stream, and what the engine fans out
//! to them (list changes after a catalog replacement, resource updates).

use simd_json::{Node, StaticNode};

use crate::catalog::Catalog;
use crate::catalog::uritemplate::Captures;
use crate::config::Config;
use crate::error::PeerError;
use crate::jsonrpc::{Reply, Req, field};
use crate::mcp::lifecycle::{Session, write_empty_result};
use crate::mcp::prepared::Prepared;
use crate::mcp::scopes::{Grant, Rules};
use crate::mcp::streams::{Sub, SubFilter, Subscriptions, teardown};
use crate::mcp::tickets::IdBuf;
use crate::output::{Outbox, Route};
use crate::revision::Revision;
use crate::wire::cursor::ListKind;
use crate::wire::json;

/// The most resource uris one subscription (or a legacy session) watches; more are not
/// honoured (left out of the acknowledgement).
pub const MAX_SUBSCRIBED_URIS: usize = 64;

/// Which lists changed in a catalog replacement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CatalogChange {
    /// The tool list changed (`notifications/tools/list_changed`).
    pub tools: bool,
    /// The resource or resource-template list changed
    /// (`notifications/resources/list_changed`).
    pub resources: bool,
    /// The prompt list changed (`notifications/prompts/list_changed`).
    pub prompts: bool,
}

/// The scope rules (`rules`, built for `old`) rebuilt for `new`, if `new` may replace
/// `old`: the same capabilities, no scope the rules name unknown to it.
pub(crate) fn replacement_rules(
    old: &Catalog,
    new: &Catalog,
    rules: Option<&Rules>,
) -> Result<Option<Rules>, ReplaceError> {
    if old.has_tools() != new.has_tools()
        || old.has_resources() != new.has_resources()
        || old.has_skills() != new.has_skills()
        || old.has_prompts() != new.has_prompts()
    {
        return Err(ReplaceError::CapabilitiesChanged);
    }
    rules.map(|r| r.for_catalog(new).map_err(|_| ReplaceError::UnknownScope)).transpose()
}

impl CatalogChange {
    /// Compares two catalogs list by list, as clients see them.
    pub(crate) fn between(old: &Catalog, new: &Catalog) -> Self {
        let same = |kind: ListKind| {
            let (a, b) = (old.list_len(kind), new.list_len(kind));
            a == b && (0..a).all(|i| old.list_fragment(kind, i, true) == new.list_fragment(kind, i, true))
        };
        Self {
            tools: !same(ListKind::Tools),
            // A skill is resources: a changed skill is announced as a resource list change.
            resources: !same(ListKind::Resources)
                || !same(ListKind::ResourceTemplates)
                || !same(ListKind::Skills),
            prompts: !same(ListKind::Prompts),
        }
    }

    /// Every list changed (what a node announces when it may have missed changes).
    pub const ALL: Self = Self { tools: true, resources: true, prompts: true };

    /// A change of the lists named: tools, resources (and templates), prompts (for a
    /// change another node announces, `HttpEngine::announce_list_changed`).
    pub const fn of(tools: bool, resources: bool, prompts: bool) -> Self {
        Self { tools, resources, prompts }
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        !(self.tools || self.resources || self.prompts)
    }
}

/// Why a catalog replacement was refused; the engine keeps the catalog it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplaceError {
    /// The new catalog adds or drops a whole family (tools, resources, prompts), which
    /// would change the capabilities clients were told about.
    CapabilitiesChanged,
    /// An event is waiting to be polled; its data refers to the current catalog. Drain
    /// [`crate::Engine::poll_event`] first.
    EventPending,
    /// A definition of the new catalog requires a scope the server's scope policy did not
    /// know when the engine was built (name it in `ScopePolicy::known`).
    UnknownScope,
}

impl core::fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::CapabilitiesChanged => {
                "the new catalog adds or drops a family of items, which would change the advertised capabilities"
            }
            Self::EventPending => "an event is waiting to be polled; drain poll_event first",
            Self::UnknownScope => {
                "a definition requires a scope the scope policy did not know when the engine was built"
            }
        })
    }
}

impl std::error::Error for ReplaceError {}

/// Whether an update of `updated` concerns a subscription to `subscribed`: the same uri,
/// or a sub-resource of it (`subscribed` followed by `/`, `?` or `#`).
pub(crate) fn uri_matches(subscribed: &str, updated: &str) -> bool {
    match updated.strip_prefix(subscribed) {
        Some("") => true,
        Some(rest) => subscribed.ends_with('/') || rest.starts_with(['/', '?', '#']),
        None => false,
    }
}

/// Who asks for a `subscriptions/listen` stream, and what the transport said of it.
pub(crate) struct Listener<'a> {
    /// The request's route (the stream's).
    pub(crate) route: Route,
    /// Its principal (a peer's streams are counted by route and by principal).
    pub(crate) principal: Option<[u8; 32]>,
    /// What it was granted (it subscribes only to resources it may read).
    pub(crate) grant: Grant<'a>,
    /// Its response cannot be a stream (HTTP/1.0).
    pub(crate) no_stream: bool,
    /// Why its transport refuses the stream, if it does.
    pub(crate) refusal: Option<PeerError<'static>>,
}

/// What the subscription methods and the fan-out use: the configuration, the catalog,
/// the prepared fragments, the outbox and the open listen streams (lent by the core).
pub(crate) struct Fanout<'a> {
    pub(crate) cfg: &'a Config,
    pub(crate) catalog: &'a Catalog,
    pub(crate) prepared: &'a Prepared,
    pub(crate) outbox: &'a mut Outbox,
    pub(crate) subs: &'a mut Subscriptions,
}

impl Fanout<'_> {
    /// `subscriptions/listen`: acknowledges the subset of `params.notifications` the
    /// server honours and keeps the stream open for later notifications.
    pub(crate) fn listen<'t>(
        self,
        req: &Req<'_, 't>,
        who: &Listener<'_>,
        captures: &mut Captures,
    ) -> Result<(), PeerError<'t>> {
        let n = req.n;
        let f = req
            .param("notifications")
            .filter(|&f| json::is_object(n, f))
            .ok_or(PeerError::NotificationsNotObject)?;
        // Task status notifications need the tasks extension on this request (none are
        // sent yet: the acknowledgement lists no task ids).
        if json::get(n, f, "taskIds").is_some()
            && !crate::mcp::tasks::methods::declares(n, req.meta.capabilities)
        {
            return Err(PeerError::TasksNotDeclared);
        }
        let id = IdBuf::of(req.id).ok_or(PeerError::IdTooLong)?;
        if who.no_stream {
            return Err(PeerError::ListenNeedsStream);
        }
        if let Some(refusal) = who.refusal {
            return Err(refusal);
        }
        if self.subs.list.len() >= self.cfg.max_subscriptions {
            return Err(PeerError::TooManySubscriptions(self.cfg.max_subscriptions));
        }
        let (route, principal) = (who.route, who.principal);
        let same_peer = |s: &&Sub| s.route == route || (principal.is_some() && s.principal == principal);
        if self.subs.list.iter().filter(same_peer).count() >= self.cfg.max_subscriptions_per_peer {
            return Err(PeerError::TooManySubscriptionsForPeer(self.cfg.max_subscriptions_per_peer));
        }
        let wants = |key: &str| {
            matches!(json::get(n, f, key).and_then(|i| n.get(i)), Some(Node::Static(StaticNode::Bool(true))))
        };
        let (c, changes) = (&self.catalog, self.cfg.list_changed);
        let tools = changes && c.has_tools() && wants("toolsListChanged");
        let prompts = changes && c.has_prompts() && wants("promptsListChanged");
        let resources = changes && c.has_resources() && wants("resourcesListChanged");
        let mut uris: Vec<Box<str>> = Vec::new();
        let asked = json::get(n, f, "resourceSubscriptions");
        if let Some(a) = asked {
            let Some(Node::Array { len, .. }) = n.get(a) else {
                return Err(PeerError::SubscriptionsNotStrings);
            };
            let honour = self.cfg.resource_subscriptions && self.catalog.has_resources();
            let (max_len, max_bytes) = (self.cfg.max_subscribed_uri_len, self.cfg.max_subscribed_bytes);
            let mut bytes = 0;
            for i in a + 1..a + 1 + len {
                let uri = json::str_at(n, i).ok_or(PeerError::SubscriptionsNotStrings)?;
                // Only uris that can be honoured are matched against the catalog: at most
                // `MAX_SUBSCRIBED_URIS` of them, each within the length bound and all
                // within the byte bound, none while resource subscriptions are off.
                if !honour
                    || uris.len() >= MAX_SUBSCRIBED_URIS
                    || uri.len() > max_len
                    || bytes + uri.len() > max_bytes
                    || uris.iter().any(|u| **u == *uri)
                {
                    continue;
                }
                if let Some(t) = self.catalog.resolve_uri(uri, captures)
                    && who.grant.may_read(self.catalog, uri, t)
                {
                    bytes += uri.len();
                    uris.push(uri.into());
                }
            }
        }
        let out = &mut self.outbox.out;
        let start = out.len();
        out.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":",
        );
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(b"},\"notifications\":{");
        for (on, key) in [
            (tools, "toolsListChanged"),
            (prompts, "promptsListChanged"),
            (resources, "resourcesListChanged"),
        ] {
            if on {
                field(out, key);
                out.extend_from_slice(b"true");
            }
        }
        if asked.is_some() && self.cfg.resource_subscriptions && self.catalog.has_resources() {
            field(out, "resourceSubscriptions");
            let _ = serde_json::to_writer(&mut *out, &uris);
        }
        out.extend_from_slice(b"}}}\n");
        self.outbox.interim(route, start, true);
        if route.is_http() {
            self.subs.subscribed = true;
        }
        self.subs.list.push(Sub { id, route, principal, tools, prompts, resources, uris });
        Ok(())
    }

    /// Legacy `resources/subscribe` and `resources/unsubscribe` on a session-bound stream.
    /// `session` is the stream's; `grant` what the request was granted.
    pub(crate) fn legacy_subscribe<'t>(
        self,
        req: &Req<'_, 't>,
        rev: Revision,
        subscribe: bool,
        session: &mut Session,
        grant: Grant<'_>,
        captures: &mut Captures,
    ) -> Result<(), PeerError<'t>> {
        let uri = req.str_at(req.uri).ok_or(PeerError::NotAString("uri"))?;
        if subscribe {
            // Bounded before anything else is done with it (resolving a uri costs its length).
            if uri.len() > self.cfg.max_subscribed_uri_len {
                return Err(PeerError::SubscribedUriTooLong(self.cfg.max_subscribed_uri_len));
            }
            let found = self.catalog.resolve_uri(uri, captures);
            if !found.is_some_and(|t| grant.may_read(self.catalog, uri, t)) {
                return Err(PeerError::ResourceNotFound { uri, stateless: rev.is_stateless() });
            }
            if !session.uris.iter().any(|u| &**u == uri) {
                if session.uris.len() >= MAX_SUBSCRIBED_URIS {
                    return Err(PeerError::TooManyUris(MAX_SUBSCRIBED_URIS));
                }
                let held: usize = session.uris.iter().map(|u| u.len()).sum();
                if held + uri.len() > self.cfg.max_subscribed_bytes {
                    return Err(PeerError::SubscribedBytes(self.cfg.max_subscribed_bytes));
                }
                session.uris.push(uri.into());
                session.touch();
            }
        } else {
            let before = session.uris.len();
            session.uris.retain(|u| &**u != uri);
            if session.uris.len() != before {
                session.touch();
            }
        }
        write_empty_result(&mut self.outbox.out, Reply::Id(req.id));
        Ok(())
    }

    /// The `notifications/*/list_changed` of `change` to the subscriptions that asked for
    /// them (and to a session-bound stdio client), when `Config::list_changed` is on:
    /// after a replacement, or for a change another node made (see
    /// `HttpEngine::announce_list_changed`). A family the catalog does not have is not
    /// announced (`stdio`: the stdio stream's session-bound client, initialized, is told
    /// too). Returns the change as announced.
    pub(crate) fn announce_list_changed(self, change: CatalogChange, stdio: bool) -> CatalogChange {
        let c = &self.catalog;
        let change = CatalogChange {
            tools: change.tools && c.has_tools(),
            resources: change.resources && c.has_resources(),
            prompts: change.prompts && c.has_prompts(),
        };
        if self.cfg.list_changed {
            let kinds: [(bool, &str, SubFilter); 3] = [
                (change.tools, "notifications/tools/list_changed", |s| s.tools),
                (change.prompts, "notifications/prompts/list_changed", |s| s.prompts),
                (change.resources, "notifications/resources/list_changed", |s| s.resources),
            ];
            for (on, method, wants) in kinds {
                if !on {
                    continue;
                }
                if stdio {
                    legacy_notice(self.outbox, Route::Stdio, method, None);
                }
                self.subs.publish(
                    self.outbox,
                    self.cfg.max_buffered_output,
                    self.prepared,
                    wants,
                    |out, id| {
                        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
                        json::write_str(out, method);
                        out.extend_from_slice(
                            b",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":",
                        );
                        out.extend_from_slice(id);
                        out.extend_from_slice(b"}}}\n");
                    },
                );
            }
        }
        change
    }

    /// Notifies the subscribers of `uri` (see [`Engine::notify_resource_updated`]);
    /// `stdio`: the stdio stream's session-bound client subscribed to it
    /// ([`wants_update`]).
    pub(crate) fn notify_resource_updated(self, uri: &str, stdio: bool) -> usize {
        if !self.cfg.resource_subscriptions {
            return 0;
        }
        let mut sent = 0;
        if stdio {
            legacy_notice(self.outbox, Route::Stdio, "notifications/resources/updated", Some(uri));
            sent += 1;
        }
        let wants = |s: &Sub| s.uris.iter().any(|u| uri_matches(u, uri));
        sent +=
            self.subs.publish(self.outbox, self.cfg.max_buffered_output, self.prepared, wants, |out, id| {
                out.extend_from_slice(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":",
            );
                json::write_str(out, uri);
                out.extend_from_slice(b",\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":");
                out.extend_from_slice(id);
                out.extend_from_slice(b"}}}\n");
            });
        sent
    }

    /// The session-bound `notifications/*/list_changed` of `change` for an HTTP session
    /// (`session`, swapped out of the HTTP layer's table), on its standalone stream at
    /// `route`: sent once the client is initialized, when `Config::list_changed` is on.
    pub(crate) fn session_list_changed(self, route: Route, session: &Session, change: CatalogChange) {
        if !self.cfg.list_changed || session.legacy.is_none() || !session.initialized {
            return;
        }
        for (on, method) in [
            (change.tools, "notifications/tools/list_changed"),
            (change.prompts, "notifications/prompts/list_changed"),
            (change.resources, "notifications/resources/list_changed"),
        ] {
            if on {
                legacy_notice(self.outbox, route, method, None);
            }
        }
    }

    /// `notifications/resources/updated` for an HTTP session that subscribed to `uri`
    /// (`resources/subscribe`), on its standalone stream at `route`. Returns whether it
    /// was sent.
    pub(crate) fn session_resource_updated(self, route: Route, session: &Session, uri: &str) -> bool {
        let send = self.cfg.resource_subscriptions && wants_update(session, uri);
        if send {
            legacy_notice(self.outbox, route, "notifications/resources/updated", Some(uri));
        }
        send
    }

    /// Ends every subscription gracefully (see [`Engine::end_subscriptions`]).
    pub(crate) fn end_subscriptions(self) -> usize {
        let n = self.subs.list.len();
        for sub in core::mem::take(&mut self.subs.list) {
            teardown(self.outbox, self.prepared, &sub);
        }
        n
    }
}

/// Whether a session-bound client subscribed (`resources/subscribe`) to `uri`.
pub(crate) fn wants_update(session: &Session, uri: &str) -> bool {
    session.initialized && session.uris.iter().any(|u| uri_matches(u, uri))
}

/// Writes a session-bound notification (`method`, with `params.uri` when given) for
/// `route`: on the stdio stream, or an HTTP standalone stream (an interim message of a
/// stream, dropped with it if its connection cannot take it).
fn legacy_notice(outbox: &mut Outbox, route: Route, method: &str, uri: Option<&str>) {
    let out = &mut outbox.out;
    let start = out.len();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    json::write_str(out, method);
    if let Some(uri) = uri {
        out.extend_from_slice(b",\"params\":{\"uri\":");
        json::write_str(out, uri);
        out.push(b'}');
    }
    out.extend_from_slice(b"}\n");
    outbox.interim(route, start, true);
}

#[cfg(test)]
mod tests {
    use super::uri_matches;

    #[test]
    fn sub_resources_match_at_a_boundary() {
        assert!(uri_matches("file:///a", "file:///a"));
        assert!(uri_matches("file:///a", "file:///a/b"));
        assert!(uri_matches("file:///a", "file:///a#x"));
        assert!(uri_matches("file:///a/", "file:///a/b"));
        assert!(!uri_matches("file:///a", "file:///ab"));
        assert!(!uri_matches("file:///a/b", "file:///a"));
    }
}
