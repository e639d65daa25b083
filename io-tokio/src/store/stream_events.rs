//! The server's side of an [`EventStore`](crate::store::EventStore): the events the engine
//! hands over ([`StoreEvent::AppendEvent`](mcp_engine::http::store::StoreEvent::AppendEvent))
//! appended in the order they were written by one task (`Appender`, a bounded queue),
//! and a store's answer to a `LoadEvents` handed to the engine (`answer`).

use std::sync::Arc;

use mcp_engine::http::store::AppendEvent;
use tokio::sync::mpsc;

use crate::store::sessions::{EventStore, KeptEvent, StoreError, StreamEvent};

/// At most this many events wait for the appending task; beyond, an event is dropped
/// (and logged): a later replay from the store reports the hole as a gap.
const QUEUE: usize = 4096;

/// Events appended in one call at most.
const BATCH: usize = 256;

/// The server's side of an event store: the events the engine hands over, appended in
/// the order they were written by one task (started with the first event).
pub(crate) struct Appender {
    store: Arc<dyn EventStore>,
    tx: Option<mpsc::Sender<StreamEvent>>,
    /// Events dropped since the last warning.
    dropped: u64,
}

impl Appender {
    pub(crate) fn new(store: Arc<dyn EventStore>) -> Self {
        Self { store, tx: None, dropped: 0 }
    }

    /// The store, for loads.
    pub(crate) fn store(&self) -> Arc<dyn EventStore> {
        Arc::clone(&self.store)
    }

    /// Queues `e` for the store.
    pub(crate) fn push(&mut self, e: &AppendEvent<'_>) {
        let tx = self.tx.get_or_insert_with(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            tokio::spawn(append_all(Arc::clone(&self.store), rx));
            tx
        });
        if tx.try_send(StreamEvent::new(e.session, e.stream, e.seq, e.data, e.last)).is_err() {
            self.dropped += 1;
            if self.dropped.is_power_of_two() {
                tracing::warn!(dropped = self.dropped, "the event store falls behind: events not kept");
            }
        }
    }
}

/// Appends what `rx` brings, in order, in batches of what has arrived meanwhile.
async fn append_all(store: Arc<dyn EventStore>, mut rx: mpsc::Receiver<StreamEvent>) {
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        if let Err(e) = store.append(&batch).await {
            tracing::warn!(%e, events = batch.len(), "session stream events were not stored");
        }
        batch.clear();
    }
}

/// The answer to a `LoadEvents`, for the engine.
pub(crate) type Loaded = Result<Vec<KeptEvent>, StoreError>;

/// Hands `found` to the engine for the `GET` of `conn`.
pub(crate) fn answer(
    engine: &mut mcp_engine::http::HttpEngine,
    now: mcp_engine::Instant,
    conn: mcp_engine::http::ConnId,
    found: Loaded,
) {
    use mcp_engine::http::store::{LoadedEvents, StoredEvent};
    match found {
        Ok(kept) => {
            let events: Vec<StoredEvent<'_>> =
                kept.iter().map(|e| StoredEvent { seq: e.seq, data: &e.data, last: e.last }).collect();
            engine.events_loaded(now, conn, LoadedEvents::Events(&events));
        }
        Err(e) => {
            tracing::warn!(%e, "stream events could not be loaded");
            engine.events_loaded(now, conn, LoadedEvents::Unavailable);
        }
    }
}
