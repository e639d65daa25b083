//! The host's side of a session store shared by several servers (nodes): listening to the
//! store's notices of what the other nodes did and handing each to the engine, announcing
//! this node's catalog changes and resource updates to the others, and touching sessions
//! in use (see `docs/scale-out.md`). Methods of the engine task's `Host`, which the run
//! loops of `http` and `tower` call.

use std::time::Duration;

use mcp_engine::{CatalogChange, ReplaceError};

use crate::auth::Authorizer;
use crate::channel::{Completion, Outcome, Publish};
use crate::handler::Handler;
use crate::http::{Decided, Host};
use crate::store::{CatalogNews, SessionStore, StoreNotice};

/// The first pause before asking a store for its notices again; doubled after each
/// failure, up to [`NOTICES_RETRY_MAX`].
const NOTICES_RETRY_FIRST: Duration = Duration::from_millis(200);
const NOTICES_RETRY_MAX: Duration = Duration::from_secs(10);

/// How long [`HttpServer::serve`] waits for its store to listen before it takes its first
/// connection.
const NOTICES_FIRST_WAIT: Duration = Duration::from_secs(10);

impl<H: Handler, A: Authorizer> Host<H, A> {
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
