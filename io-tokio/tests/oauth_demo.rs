//! Both adapters' `everything` demos run as OAuth 2.1 protected resources
//! (`--oauth-issuer`, `--oauth-jwks`, `--oauth-resource`), against the real authorization
//! server of `tests/oauth_as` (`oidc-provider` on Node 22, RFC 9068 JWT access tokens with
//! resource indicators): the metadata document, the `401` and `403` challenges, the
//! fixture's scope policy (`mcp:read` for lists, `mcp:tools` for calls), `admin_echo`
//! seen and called only with `mcp:admin`, and sessions and list cursors bound to the
//! token's principal, over stateless `2026-07-28` requests and a `2025-11-25` session.
//!
//! The tokio demo reads the key set from a file (the adapter's `JwksVerifier`), the mio
//! demo fetches it from the AS's `jwks_uri` at start (the engine's `JwtVerifier`). The AS
//! runs as in `oauth.rs` (installed by `npm ci` when missing; `MCP_OAUTH_AS_SKIP=1` skips
//! outside CI only).

#![cfg(feature = "oauth")]

mod http_support;
mod oauth_support;

use std::net::SocketAddr;
use std::sync::OnceLock;

use http_support::{Conn, HttpResponse, body, call_body, first_text, post};
use oauth_support::demo::{self, Adapter};
use oauth_support::legacy_post;
use oauth_support::server::{self, AuthServer};
use serde_json::{Value, json};

/// The demo's resource identifier (the tokens' audience).
const RESOURCE: &str = "https://mcp.example.test/mcp";
/// Another resource the AS issues JWTs for.
const OTHER: &str = "https://other.example.test/mcp";
/// A resource the AS issues opaque tokens for (unused here).
const OPAQUE: &str = "https://mcp.example.test/opaque";
/// Where the demo says its metadata is.
const METADATA: &str = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp";

fn authorization_server() -> Option<&'static AuthServer> {
    static AS: OnceLock<Option<AuthServer>> = OnceLock::new();
    AS.get_or_init(|| server::node().map(|n| server::start(n, RESOURCE, OTHER, OPAQUE, false))).as_ref()
}

/// The AS's `jwks_uri`, from its metadata.
async fn jwks_uri(issuer: &str) -> String {
    let (status, body) = server::get(issuer, "/.well-known/openid-configuration").await;
    assert_eq!(status, 200);
    let meta: Value = serde_json::from_slice(&body).expect("metadata");
    meta["jwks_uri"].as_str().expect("a jwks_uri").to_owned()
}

/// Starts `adapter`'s demo as a protected resource of `issuer`, with pages of 5.
async fn start_demo(adapter: Adapter, issuer: &str) -> (demo::Demo, Option<tempfile::Path>) {
    let uri = jwks_uri(issuer).await;
    let (jwks, file) = match adapter {
        Adapter::Tokio => {
            // The key set saved to a file.
            let path = uri.strip_prefix(issuer).expect("a jwks_uri on the issuer");
            let (status, keys) = server::get(issuer, path).await;
            assert_eq!(status, 200);
            let file = tempfile::Path::new("jwks.json");
            std::fs::write(&file.0, keys).expect("write the key set");
            (file.0.to_string_lossy().into_owned(), Some(file))
        }
        Adapter::Mio => (uri, None),
    };
    let args =
        ["--oauth-issuer", issuer, "--oauth-jwks", &jwks, "--oauth-resource", RESOURCE, "--page-size", "5"];
    (demo::start(adapter, &args), file)
}

/// A file removed when dropped.
mod tempfile {
    pub(crate) struct Path(pub(crate) std::path::PathBuf);

    impl Path {
        pub(crate) fn new(name: &str) -> Self {
            Self(std::env::temp_dir().join(format!("mcp-oauth-demo-{}-{name}", std::process::id())))
        }
    }

    impl Drop for Path {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// A `2026-07-28` request of `method` (naming `name`) with `body`, with `Authorization:
/// Bearer token` when given.
async fn request(
    addr: SocketAddr,
    token: Option<&str>,
    method: &str,
    name: Option<&str>,
    body: &str,
) -> HttpResponse {
    let mut req = post(addr, method, name, body);
    if let Some(t) = token {
        req = req.replacen("\r\n", &format!("\r\nAuthorization: Bearer {t}\r\n"), 1);
    }
    let mut c = Conn::open(addr).await;
    c.send(&req).await;
    c.response().await
}

/// `tools/call` of `tool` with `{"text": text}`.
async fn call(addr: SocketAddr, token: &str, id: u64, tool: &str, text: &str) -> HttpResponse {
    request(addr, Some(token), "tools/call", Some(tool), &call_body(id, tool, &json!({ "text": text }))).await
}

/// One page of `tools/list` (after `cursor`).
async fn tools_page(addr: SocketAddr, token: &str, id: u64, cursor: Option<&str>) -> HttpResponse {
    let params = cursor.map(|c| format!(r#""cursor":"{c}""#)).unwrap_or_default();
    request(addr, Some(token), "tools/list", None, &body(id, "tools/list", &params)).await
}

/// Every tool name `token` is shown, page after page.
async fn all_tools(addr: SocketAddr, token: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 100.. {
        let r = tools_page(addr, token, id, cursor.as_deref()).await;
        assert_eq!(r.status, 200, "{r:?}");
        let page = r.json();
        let tools = page["result"]["tools"].as_array().unwrap_or_else(|| panic!("tools: {page}"));
        assert!(tools.len() <= 5, "pages of 5: {page}");
        names.extend(tools.iter().map(|t| t["name"].as_str().expect("a name").to_owned()));
        match page["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    names
}

/// The `WWW-Authenticate` of `r`.
fn challenge(r: &HttpResponse) -> &str {
    r.header("www-authenticate").unwrap_or_else(|| panic!("no challenge: {r:?}"))
}

/// A response as a client sees it, the tool's name replaced by `NAME`.
fn unnamed(r: &HttpResponse, name: &str) -> (u16, String) {
    (r.status, String::from_utf8_lossy(&r.body).replace(name, "NAME"))
}

async fn the_demo_is_a_protected_resource(adapter: Adapter) {
    let Some(auth) = authorization_server() else { return };
    let issuer = auth.issuer.as_str();
    let (demo, _jwks) = start_demo(adapter, issuer).await;
    let addr = demo.addr;
    let log = || demo.log.lock().unwrap().clone();
    assert!(
        log().contains(&format!("protected resource {RESOURCE}, its metadata at {METADATA}")),
        "{}",
        log()
    );

    // The metadata document, without a token, at the path-suffixed well-known path.
    let mut c = Conn::open(addr).await;
    c.send(&format!(
        "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        addr.port()
    ))
    .await;
    let r = c.response().await;
    assert_eq!(r.status, 200, "{r:?}");
    let doc = r.json();
    assert_eq!(doc["resource"], RESOURCE, "{doc}");
    assert_eq!(doc["authorization_servers"], json!([issuer]), "{doc}");
    assert_eq!(doc["scopes_supported"], json!(["mcp:read", "mcp:tools"]), "{doc}");
    assert_eq!(doc["bearer_methods_supported"], json!(["header"]), "{doc}");

    // No token: 401, naming the metadata and the scopes.
    let r = request(addr, None, "tools/list", None, &body(1, "tools/list", "")).await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(
        challenge(&r),
        format!(r#"Bearer scope="mcp:read mcp:tools", resource_metadata="{METADATA}""#)
    );
    // A token for another resource: 401 invalid_token.
    let other = server::token(issuer, "good", OTHER, "mcp:read mcp:tools").await;
    let r = request(addr, Some(&other), "tools/list", None, &body(2, "tools/list", "")).await;
    assert_eq!(r.status, 401, "{r:?}");
    assert!(challenge(&r).starts_with(r#"Bearer error="invalid_token""#), "{r:?}");

    // mcp:read only: lists, but no calls (403 naming mcp:tools, -32011 echoing the id).
    let read = server::token(issuer, "good", RESOURCE, "mcp:read").await;
    let names = all_tools(addr, &read).await;
    assert!(names.iter().any(|n| n == "echo") && !names.iter().any(|n| n == "admin_echo"), "{names:?}");
    let r = call(addr, &read, 7, "echo", "hi").await;
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(
        challenge(&r),
        format!(r#"Bearer error="insufficient_scope", scope="mcp:tools", resource_metadata="{METADATA}""#)
    );
    let e = r.json();
    assert_eq!((&e["error"]["code"], &e["id"]), (&json!(-32011), &json!(7)), "{e}");

    // mcp:read and mcp:tools: calls, but admin_echo is neither listed nor known.
    let tools = server::token(issuer, "good", RESOURCE, "mcp:read mcp:tools").await;
    let names = all_tools(addr, &tools).await;
    assert!(names.iter().any(|n| n == "echo") && !names.iter().any(|n| n == "admin_echo"), "{names:?}");
    let r = call(addr, &tools, 8, "echo", "hello").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_text(&r.json()), "hello");
    let hidden = call(addr, &tools, 9, "admin_echo", "hello").await;
    let unknown = call(addr, &tools, 9, "no_such_tool", "hello").await;
    assert!(
        unknown.json().get("error").is_some() || unknown.json()["result"]["isError"] == true,
        "{unknown:?}"
    );
    assert_eq!(unnamed(&hidden, "admin_echo"), unnamed(&unknown, "no_such_tool"));
    assert_eq!(hidden.header("www-authenticate"), None);

    // With mcp:admin too: listed and callable, with echo's answer.
    let admin = server::token(issuer, "good", RESOURCE, "mcp:read mcp:tools mcp:admin").await;
    let names = all_tools(addr, &admin).await;
    assert_eq!(names.iter().filter(|n| *n == "admin_echo").count(), 1, "{names:?}");
    let r = call(addr, &admin, 10, "admin_echo", "as admin").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(first_text(&r.json()), "as admin");

    // A list cursor issued to one principal (client `good`) is refused to another (`rs`).
    let bob = server::token(issuer, "rs", RESOURCE, "mcp:read mcp:tools").await;
    let first = tools_page(addr, &tools, 11, None).await.json();
    let cursor = first["result"]["nextCursor"].as_str().expect("a second page").to_owned();
    let r = tools_page(addr, &tools, 12, Some(&cursor)).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.json()["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{r:?}");
    let stolen = tools_page(addr, &bob, 13, Some(&cursor)).await.json();
    assert_eq!((&stolen["error"]["code"], &stolen["id"]), (&json!(-32602), &json!(13)), "{stolen}");

    // A 2025-11-25 session: bound to its principal, and scoped per request.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = legacy_post(addr, &tools, &init, None, None).await;
    assert_eq!(r.status, 200, "{r:?}");
    let session = r.header("mcp-session-id").expect("a session").to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = legacy_post(addr, &tools, &initialized, Some("2025-11-25"), Some(&session)).await;
    assert_eq!(r.status, 202, "{r:?}");
    let v = Some("2025-11-25");
    let list = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
    let call = |id: u64, tool: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": {"text": "in session"}}})
    };
    let r = legacy_post(addr, &tools, &list(2), v, Some(&session)).await;
    assert_eq!(r.status, 200, "{r:?}");
    let r = legacy_post(addr, &tools, &call(3, "echo"), v, Some(&session)).await;
    assert_eq!((r.status, first_text(&r.json())), (200, "in session"), "{r:?}");
    // Another principal's token: the session is not found.
    let r = legacy_post(addr, &bob, &list(4), v, Some(&session)).await;
    assert_eq!(r.status, 404, "{r:?}");
    // The same principal with mcp:read only: 403 for a call.
    let r = legacy_post(addr, &read, &call(5, "echo"), v, Some(&session)).await;
    assert_eq!(r.status, 403, "{r:?}");
    assert!(challenge(&r).contains(r#"scope="mcp:tools""#), "{r:?}");
    assert_eq!((&r.json()["error"]["code"], &r.json()["id"]), (&json!(-32011), &json!(5)));
    // admin_echo without mcp:admin: an unknown tool here too; with it, answered.
    let hidden = legacy_post(addr, &tools, &call(6, "admin_echo"), v, Some(&session)).await;
    let unknown = legacy_post(addr, &tools, &call(6, "no_such_tool"), v, Some(&session)).await;
    assert_eq!(unnamed(&hidden, "admin_echo"), unnamed(&unknown, "no_such_tool"));
    let r = legacy_post(addr, &admin, &call(7, "admin_echo"), v, Some(&session)).await;
    assert_eq!((r.status, first_text(&r.json())), (200, "in session"), "{r:?}");
}

#[tokio::test]
async fn the_tokio_demo_is_a_protected_resource() {
    the_demo_is_a_protected_resource(Adapter::Tokio).await;
}

#[tokio::test]
async fn the_mio_demo_is_a_protected_resource() {
    the_demo_is_a_protected_resource(Adapter::Mio).await;
}

#[tokio::test]
async fn a_demo_that_cannot_load_its_key_set_does_not_start() {
    let Some(auth) = authorization_server() else { return };
    for adapter in [Adapter::Tokio, Adapter::Mio] {
        let out = std::process::Command::new(demo::binary(adapter))
            .args(["--http", "127.0.0.1:0", "--oauth-issuer", &auth.issuer])
            .args(["--oauth-jwks", "/nonexistent/jwks.json"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run the demo");
        assert!(!out.status.success(), "{adapter:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("/nonexistent/jwks.json"), "{adapter:?}: {stderr}");
        // --oauth-jwks without --oauth-issuer is refused as a usage error.
        let out = std::process::Command::new(demo::binary(adapter))
            .args(["--http", "127.0.0.1:0", "--oauth-jwks", "jwks.json"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run the demo");
        assert_eq!(out.status.code(), Some(2), "{adapter:?}");
    }
}
