//! `HttpServer::session_store` over real TCP: two servers sharing a key and one
//! `MemorySessionStore` serve each other's sessions; a store that fails makes the
//! request `503` with `Retry-After`, and nothing is kept that the client was not told of.

mod http_support;
mod store_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http_support::{Conn, patient};
use mcp_io_tokio::store::{MemorySessionStore, SessionStore, StoreError, StoreFuture};
use store_support::{INITIALIZE, legacy, node, open, ping};

#[tokio::test]
async fn a_session_opened_on_one_server_is_served_by_another_sharing_the_store() {
    patient("two nodes", async {
        let store = Arc::new(MemorySessionStore::default());
        let (a, b) = (node(Arc::clone(&store)).await, node(Arc::clone(&store)).await);
        let id = open(a).await;
        assert_eq!(store.len(), 1, "stored before the client was told");
        assert_eq!(ping(b, &id).await.0, 200, "b loads it from the store");
        let mut c = Conn::open(b).await;
        c.send(&format!(
            "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nMcp-Session-Id: {id}\r\n\r\n",
            b.port()
        ))
        .await;
        assert_eq!(c.response().await.status, 200);
        assert!(store.is_empty(), "deleted from the store before the 200");
        assert_eq!(ping(b, &id).await.0, 404);
        assert_eq!(ping(b, "A".repeat(44).as_str()).await.0, 404, "a forged id");
    })
    .await;
}

/// A store that fails every call while `down` is set.
#[derive(Default)]
struct Flaky {
    down: AtomicBool,
    inner: MemorySessionStore,
}

impl Flaky {
    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) { Err(StoreError::new("down")) } else { Ok(()) }
    }
}

impl SessionStore for Flaky {
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            self.check()?;
            self.inner.load(id).await
        })
    }
    fn save<'a>(&'a self, id: &'a str, record: &'a [u8]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.check()?;
            self.inner.save(id, record).await
        })
    }
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.check()?;
            self.inner.remove(id).await
        })
    }
}

#[tokio::test]
async fn a_store_that_fails_makes_the_request_503_and_keeps_nothing_untold() {
    patient("a failing store", async {
        let store = Arc::new(Flaky::default());
        let (a, b) = (node(Arc::clone(&store)).await, node(Arc::clone(&store)).await);
        store.down.store(true, Ordering::SeqCst);
        let mut c = Conn::open(a).await;
        c.send(&legacy(a, None, INITIALIZE)).await;
        let r = c.response().await;
        assert_eq!((r.status, r.header("retry-after")), (503, Some("1")), "{r:?}");
        assert!(r.header("mcp-session-id").is_none());
        store.down.store(false, Ordering::SeqCst);
        let id = open(a).await;
        store.down.store(true, Ordering::SeqCst);
        assert_eq!(ping(b, &id).await.0, 503, "b cannot load it now");
        store.down.store(false, Ordering::SeqCst);
        assert_eq!(ping(b, &id).await.0, 200, "and can once the store is back");
    })
    .await;
}
