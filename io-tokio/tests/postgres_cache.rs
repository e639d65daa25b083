//! Sessions cached in memory (issue 16, item 4), against a real PostgreSQL (`pg_support`):
//! a counting store in front of a `PgSessionStore` shows what each request costs in store
//! operations (each one statement, one round trip):
//!
//! - a request in a session whose state does not change: none (pings, tool calls, lists,
//!   many of them, on the node holding the session);
//! - a request that changes the session (`logging/setLevel`, `DELETE`): one;
//! - on a node that does not hold the session: one load, then none;
//! - a session in use for long on one node is touched in the store off the request path
//!   (`HttpConfig::session_touch_every`), so its row does not expire while it is served.

#![cfg(feature = "postgres")]

mod http_support;
mod pg_support;
mod store_support;

use std::sync::Arc;
use std::time::Duration;

use http_support::{Conn, patient};
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig};
use mcp_io_tokio::store::SessionStore;
use pg_support::{config, connect, fresh};
use serde_json::json;
use store_support::{Counting, delete, heard_so_far, legacy, node, node_with, open, ping};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_session_costs_no_round_trip_and_a_change_costs_one() {
    let schema = "t_c_cost";
    let Some(db) = fresh(schema).await else { return };
    patient("the cache", async {
        let sa = Counting::new(config(&db.url, schema).build().await.expect("store"));
        let sb = Counting::new(config(&db.url, schema).build().await.expect("store"));
        let (a, b) = (node(Arc::clone(&sa)).await, node(Arc::clone(&sb)).await);

        let id = open(a).await;
        assert_eq!(sa.counts(), (0, 2, 0), "created, then initialized: a save each");
        // Steady state on the node holding it: nothing reaches the store.
        let mut c = Conn::open(a).await;
        for i in 0..20 {
            c.send(&legacy(a, Some(&id), store_support::PING)).await;
            assert_eq!(c.response().await.status, 200);
            let call = http_support::call_body(100 + i, "echo", &json!({ "text": "x" }));
            let call = call.replace(&format!(",{}", http_support::META), "");
            c.send(&legacy(a, Some(&id), &call)).await;
            let r = c.response().await;
            assert_eq!(r.status, 200, "{r:?}");
            assert_eq!(http_support::first_text(&r.json()), "x");
            let list = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
            c.send(&legacy(a, Some(&id), list)).await;
            assert_eq!(c.response().await.status, 200);
        }
        assert_eq!(sa.counts(), (0, 2, 0), "60 requests changing nothing: no round trip");
        // A change: exactly one.
        let level = r#"{"jsonrpc":"2.0","id":8,"method":"logging/setLevel","params":{"level":"info"}}"#;
        c.send(&legacy(a, Some(&id), level)).await;
        assert_eq!(c.response().await.status, 200);
        assert_eq!(sa.counts(), (0, 3, 0), "logging/setLevel: one save");
        c.send(&legacy(a, Some(&id), store_support::PING)).await;
        assert_eq!(c.response().await.status, 200);
        assert_eq!(sa.counts(), (0, 3, 0));

        // Another node: one load the first time, then served from its memory (once it
        // heard node A's writes, which would make it drop a copy loaded before them).
        heard_so_far(a, b).await;
        let before = sb.counts();
        for _ in 0..10 {
            assert_eq!(ping(b, &id).await.0, 200);
        }
        assert_eq!(sb.counts().0 - before.0, 1, "one load, then nothing");
        assert_eq!((sb.counts().1, sb.counts().2), (before.1, before.2));
        // The end: one round trip.
        let mut d = Conn::open(b).await;
        d.send(&delete(b, &id)).await;
        assert_eq!(d.response().await.status, 200);
        assert_eq!(sb.counts().2 - before.2, 1, "DELETE: one removal");
        assert_eq!(sa.touches.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing due a touch");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_use_is_touched_off_the_request_path_and_its_row_lives_on() {
    let schema = "t_c_touch";
    let Some(db) = fresh(schema).await else { return };
    patient("the touch", async {
        let store = Counting::new(config(&db.url, schema).build().await.expect("store"));
        let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
        http.session_touch_every(Duration::from_millis(1));
        let a = node_with(Arc::clone(&store), http).await;
        let id = open(a).await;
        // The row is about to expire (as it would, ttl after its last save, with the
        // session served from memory since).
        let admin = connect(&db.url).await;
        let sql = format!(
            "UPDATE \"{schema}\".sessions SET expires_at = now() + interval '1 second' WHERE id = $1"
        );
        assert_eq!(admin.execute(&sql, &[&id]).await.expect("shorten"), 1);
        let before = store.counts();
        let left = format!(
            "SELECT extract(epoch FROM expires_at - now())::float8 FROM \"{schema}\".sessions WHERE id = $1"
        );
        let mut lives = 0.0;
        for _ in 0..200 {
            // Apart by more than the touch interval (not a measurement: the engine's
            // clock must move past it between two requests).
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert_eq!(ping(a, &id).await.0, 200);
            lives = admin.query_one(&left, &[&id]).await.expect("expiry").get(0);
            if lives > 60.0 {
                break;
            }
        }
        assert!(lives > 60.0, "the touch pushed the row's expiry to the ttl ({lives} s left)");
        assert_eq!(store.counts(), before, "no load or save for it: the touch is its own, off the request");
        assert!(store.touches.load(std::sync::atomic::Ordering::SeqCst) >= 1);
        // A touch brings no removed session back.
        let mut c = Conn::open(a).await;
        c.send(&delete(a, &id)).await;
        assert_eq!(c.response().await.status, 200);
        store.inner.touch(&id).await.expect("touch");
        assert!(store.inner.load(&id).await.expect("load").is_none());
    })
    .await;
}
