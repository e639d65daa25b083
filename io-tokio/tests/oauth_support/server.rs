//! The real authorization server of `tests/oauth_as` (oidc-provider on Node 22): started
//! with the resources a test names (over HTTPS with the test authority's certificate when
//! asked), and tokens from it by the client credentials grant over plain HTTP on loopback.
//!
//! As in `oauth.rs`: the Node that `npm ci` installs in `tests/oauth_as/node_modules` runs
//! it. When that is missing, the tests run `npm ci` themselves in CI (`CI` set) or with
//! `MCP_OAUTH_AS_INSTALL=1`; otherwise they skip, saying so in the test output.
//! `MCP_OAUTH_AS_SKIP=1` skips them even where it is installed (never in CI).

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use base64::Engine as _;
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::http_support::patient;

/// A running authorization server; it exits when this process does (its standard input
/// ends).
pub struct AuthServer {
    /// `http://127.0.0.1:PORT`.
    pub issuer: String,
    _child: Mutex<Child>,
}

fn as_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oauth_as")
}

/// The Node that runs the AS, installed (`npm ci`) when missing in CI or when asked to
/// (`MCP_OAUTH_AS_INSTALL=1`); `None` when the tests are to be skipped (said once in the
/// test output; never in CI).
pub fn node() -> Option<&'static PathBuf> {
    static NODE: OnceLock<Option<PathBuf>> = OnceLock::new();
    NODE.get_or_init(|| {
        let dir = as_dir();
        let node = dir.join("node_modules/.bin/node");
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0");
        let ci = std::env::var_os("CI").is_some();
        let installed = node.exists() && dir.join("node_modules/oidc-provider").exists();
        let why = if set("MCP_OAUTH_AS_SKIP") {
            Some("MCP_OAUTH_AS_SKIP is set")
        } else if !installed && !set("MCP_OAUTH_AS_INSTALL") {
            Some("the authorization server is not installed")
        } else {
            None
        };
        if let (Some(why), false) = (why, ci) {
            let bar = "!".repeat(78);
            let _ = writeln!(
                std::io::stderr(),
                "\n{bar}\nskipped: the OAuth authorization-server tests of this binary ({why}).\n\
                 They run a real authorization server on Node 22 (oidc-provider): `npm ci` in\n\
                 {} (from the npm registry) installs it, or set MCP_OAUTH_AS_INSTALL=1\n\
                 for the tests to run it. .ci/run runs every test.\n{bar}\n",
                dir.display()
            );
            return None;
        }
        if !installed {
            eprintln!("oauth tests: installing the authorization server (npm ci in {})", dir.display());
            let status = Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir)
                .stdout(Stdio::null())
                .status();
            assert!(
                status.as_ref().is_ok_and(|s| s.success()),
                "`npm ci` in {} failed ({status:?}): the OAuth tests need Node 22 and oidc-provider \
                 from the npm registry. Set MCP_OAUTH_AS_SKIP=1 to skip them outside CI.",
                dir.display()
            );
        }
        Some(node)
    })
    .as_ref()
}

/// Starts the AS on loopback (over HTTPS with `tls`, else plain HTTP), issuing JWTs for
/// `resource` and `other` and opaque tokens for `opaque` (see `server.mjs`), and reads
/// its issuer.
pub fn start(node: &PathBuf, resource: &str, other: &str, opaque: &str, tls: bool) -> AuthServer {
    let mut cmd = Command::new(node);
    cmd.arg("server.mjs").args([resource, other, opaque]);
    if tls {
        cmd.arg("--tls");
    }
    let mut child = cmd
        .current_dir(as_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", node.display()));
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let issuer = loop {
        let line = lines.next().expect("the authorization server printed its issuer").expect("a line");
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && let Some(iss) = v["issuer"].as_str()
        {
            break iss.to_owned();
        }
    };
    // Keep draining its output, so that it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    AuthServer { issuer, _child: Mutex::new(child) }
}

/// One HTTP/1.0 exchange with `http://127.0.0.1:PORT` (`base`): the status and the body
/// (an HTTP/1.0 request is never answered chunked; the server closes after it).
pub async fn exchange(base: &str, request_head: &str, body: &str) -> (u16, Vec<u8>) {
    let authority = base.strip_prefix("http://").expect("a plain http URL");
    let mut s =
        patient("connect to the AS", tokio::net::TcpStream::connect(authority)).await.expect("connect");
    let req = format!("{request_head}Host: {authority}\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    s.write_all(req.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    patient("the AS answers", s.read_to_end(&mut answer)).await.expect("read");
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete answer");
    let status = std::str::from_utf8(&answer[9..12]).ok().and_then(|s| s.parse().ok()).expect("a status");
    (status, answer.split_off(end + 4))
}

/// A `GET` of `path` from the AS: the status and the body.
pub async fn get(issuer: &str, path: &str) -> (u16, Vec<u8>) {
    exchange(issuer, &format!("GET {path} HTTP/1.0\r\nAccept: application/json\r\n"), "").await
}

/// An access token for `client` (client credentials, secret `secret-CLIENT`), for
/// `resource`, with `scope` (space-separated).
pub async fn token(issuer: &str, client: &str, resource: &str, scope: &str) -> String {
    let enc = |s: &str| s.replace(':', "%3A").replace('/', "%2F").replace(' ', "+");
    let form = format!("grant_type=client_credentials&resource={}&scope={}", enc(resource), enc(scope));
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{client}:secret-{client}"));
    let head = format!(
        "POST /token HTTP/1.0\r\nAuthorization: Basic {basic}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nAccept: application/json\r\n"
    );
    let (status, body) = exchange(issuer, &head, &form).await;
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    assert_eq!(status, 200, "a token for {client} with {scope:?}: {json}");
    json["access_token"].as_str().expect("an access token").to_owned()
}
