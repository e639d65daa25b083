//! `Publisher::ask_client` over real TCP: server code asks a session's client for input
//! outside any request; the request goes on the session's standalone `GET` stream, the
//! client answers with a `POST` (`202`), and the call resolves with the result (or the
//! client's error, or the session's end); what the engine refuses is an error at once.

mod http_support;
mod store_support;

use std::net::SocketAddr;

use http_support::{Conn, Probe, catalog, patient};
use mcp_engine::Config;
use mcp_engine::event::AskError;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
use mcp_engine::mrtr::{InputKind, InputRequestBuf};
use mcp_io_tokio::HttpServer;
use mcp_io_tokio::handler::{AskClientError, Publisher};
use mcp_io_tokio::http::AllowAll;
use serde_json::{Value, json};
use store_support::{delete, legacy, read_until, stream};
use tokio::net::TcpListener;

async fn server() -> (SocketAddr, Publisher) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let engine = HttpEngine::new(Config::new("ask-client-test", "0.0.1"), http, catalog());
    let server = HttpServer::new(engine, Probe::new(), AllowAll);
    let publisher = server.publisher();
    tokio::spawn(server.serve(listener));
    (addr, publisher)
}

/// Opens a `2025-11-25` session whose client declares `caps`; returns its id.
async fn open(addr: SocketAddr, caps: &Value) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": { "name": "t", "version": "1" } } });
    let mut c = Conn::open(addr).await;
    c.send(&legacy(addr, None, &init.to_string())).await;
    let r = c.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    c.send(&legacy(addr, Some(&id), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)).await;
    assert_eq!(c.response().await.status, 202);
    id
}

/// The JSON of the last `data:` line of `text` (an SSE stream read so far).
fn last_event(text: &str) -> Value {
    let data = text.lines().filter_map(|l| l.strip_prefix("data: ")).rfind(|d| !d.is_empty());
    serde_json::from_str(data.unwrap_or_else(|| panic!("no event: {text}"))).expect("JSON")
}

#[tokio::test]
async fn server_code_asks_a_sessions_client_and_gets_its_result() {
    patient("ask a client", async {
        let (addr, publisher) = server().await;
        let id = open(addr, &json!({ "roots": {}, "elicitation": {} })).await;
        let mut s = stream(addr, &id).await;
        let asking = {
            let (publisher, id) = (publisher.clone(), id.clone());
            tokio::spawn(
                async move { publisher.ask_client(Some(&id), InputRequestBuf::list_roots("r")).await },
            )
        };
        let text = read_until(&mut s, |t| t.contains("roots/list")).await;
        assert!(text.contains("id: "), "the request is an event with an id: {text}");
        let sent = last_event(&text);
        assert_eq!(sent["method"], "roots/list");
        let response =
            json!({ "jsonrpc": "2.0", "id": sent["id"], "result": { "roots": [{ "uri": "file:///w" }] } });
        let mut c = Conn::open(addr).await;
        c.send(&legacy(addr, Some(&id), &response.to_string())).await;
        assert_eq!(c.response().await.status, 202);
        let result = asking.await.expect("the task").expect("a result");
        assert_eq!(result, json!({ "roots": [{ "uri": "file:///w" }] }));

        // The client's error is the caller's.
        let asking = {
            let (publisher, id) = (publisher.clone(), id.clone());
            let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
            tokio::spawn(async move {
                publisher.ask_client(Some(&id), InputRequestBuf::elicit("e", "Name?", &schema)).await
            })
        };
        let text = read_until(&mut s, |t| t.contains("elicitation/create")).await;
        let sent = last_event(&text);
        let response =
            json!({ "jsonrpc": "2.0", "id": sent["id"], "error": { "code": -1, "message": "no" } });
        c.send(&legacy(addr, Some(&id), &response.to_string())).await;
        assert_eq!(c.response().await.status, 202);
        let failed = asking.await.expect("the task");
        assert_eq!(failed, Err(AskClientError::Failed { code: -1, message: "no".into() }));

        // Deleted while its client is asked: the caller hears -32000.
        let asking = {
            let (publisher, id) = (publisher.clone(), id.clone());
            tokio::spawn(
                async move { publisher.ask_client(Some(&id), InputRequestBuf::list_roots("r2")).await },
            )
        };
        read_until(&mut s, |t| t.matches("roots/list").count() >= 1).await;
        c.send(&delete(addr, &id)).await;
        assert_eq!(c.response().await.status, 200);
        match asking.await.expect("the task") {
            Err(AskClientError::Failed { code: -32000, .. }) => {}
            other => panic!("{other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn what_the_engine_refuses_is_an_error_at_once() {
    patient("refusals", async {
        let (addr, publisher) = server().await;
        let id = open(addr, &json!({ "roots": {} })).await;
        let roots = || InputRequestBuf::list_roots("r");
        assert_eq!(
            publisher.ask_client(Some(&id), roots()).await,
            Err(AskClientError::Refused(AskError::NoStream)),
            "no standalone stream open"
        );
        assert_eq!(
            publisher.ask_client(Some("nope"), roots()).await,
            Err(AskClientError::Refused(AskError::NoSession))
        );
        assert_eq!(
            publisher.ask_client(None, roots()).await,
            Err(AskClientError::Refused(AskError::NoSession))
        );
        let _s = stream(addr, &id).await;
        assert_eq!(
            publisher.ask_client(Some(&id), InputRequestBuf::sample_text("s", "2+2?", 5)).await,
            Err(AskClientError::Refused(AskError::NotDeclared(InputKind::Sampling)))
        );
    })
    .await;
}
