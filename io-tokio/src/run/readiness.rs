//! Socket readiness for the engine task of [`serve_http`](crate::serve_http): one waker
//! per connection and direction that queues the connection's id and wakes the engine
//! task. The task waits on thousands of sockets with no task per socket, and re-arming a
//! socket is a call in the engine task (`poll_read_ready`), not a message to another task.

use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Wake, Waker};

use mcp_engine::http::ConnId;
use tokio::sync::Notify;

/// A socket's report: `conn` may have bytes (`read`) or may take bytes (`!read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ready {
    pub(crate) conn: ConnId,
    pub(crate) read: bool,
}

/// The reports not yet taken by the engine task. It holds at most two per connection: a
/// waker fires once per registration, and the engine task registers a direction again
/// only after taking its report.
#[derive(Debug, Default)]
pub(crate) struct ReadyQueue {
    queue: Mutex<Vec<Ready>>,
    notify: Notify,
}

impl ReadyQueue {
    /// The waker that reports `conn` ready for reading (`read`) or writing.
    pub(crate) fn waker(self: &Arc<Self>, conn: ConnId, read: bool) -> Waker {
        Waker::from(Arc::new(ConnWaker { queue: Arc::clone(self), ready: Ready { conn, read } }))
    }

    /// Queues a report and wakes the engine task when the queue was empty (a report
    /// behind others is taken with them).
    pub(crate) fn push(&self, ready: Ready) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.push(ready);
        if queue.len() == 1 {
            self.notify.notify_one();
        }
    }

    /// Waits until a report may be queued (it may be gone already: [`take`](Self::take)
    /// then finds none).
    pub(crate) async fn wait(&self) {
        self.notify.notified().await;
    }

    /// Moves every queued report to the end of `into`.
    pub(crate) fn take(&self, into: &mut Vec<Ready>) {
        into.append(&mut self.queue.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

/// See [`ReadyQueue::waker`].
struct ConnWaker {
    queue: Arc<ReadyQueue>,
    ready: Ready,
}

impl Wake for ConnWaker {
    fn wake(self: Arc<Self>) {
        self.queue.push(self.ready);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.queue.push(self.ready);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_woken_waker_queues_its_report_and_wakes_the_waiter() {
        let q = Arc::new(ReadyQueue::default());
        use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
        let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
        let catalog = mcp_engine::Catalog::builder().build().expect("a catalog");
        let mut engine = HttpEngine::new(mcp_engine::Config::new("t", "1"), http, catalog);
        let conn = engine.open(mcp_engine::Instant::from_micros(0), None).expect("a connection");
        let (r, w) = (q.waker(conn, true), q.waker(conn, false));
        r.wake_by_ref();
        w.wake();
        q.wait().await; // the first push stored a permit
        let mut got = Vec::new();
        q.take(&mut got);
        assert_eq!(got, [Ready { conn, read: true }, Ready { conn, read: false }]);
        q.take(&mut got);
        assert_eq!(got.len(), 2, "taken once");
    }
}
