//! The server's side of the engine's task store events
//! ([`HttpEvent::SaveTask`](mcp_engine::http::HttpEvent::SaveTask),
//! [`LoadTask`](mcp_engine::http::HttpEvent::LoadTask),
//! [`TaskExpired`](mcp_engine::http::HttpEvent::TaskExpired),
//! [`ListTasks`](mcp_engine::http::HttpEvent::ListTasks)): each is handed to the
//! [`TaskStore`](crate::TaskStore) in a task of its own, and the answer comes back to the
//! engine's task (`Decided::Task`).

use mcp_engine::UnixTime;
use mcp_engine::http::{Loaded, TaskQuery, TaskRow};

use crate::auth::Authorizer;
use crate::handler::Handler;
use crate::http::{Decided, Host};
use crate::task_store::{TaskDecided, TaskListQuery, TaskSave};

impl<H: Handler, A: Authorizer> Host<H, A> {
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
