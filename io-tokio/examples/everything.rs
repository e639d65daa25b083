//! Serves the conformance `everything` fixture with async handlers, over Streamable HTTP
//! (the default) or stdio.
//!
//! ```text
//! cargo run --release -p mcp-io-tokio --example everything                       # http://127.0.0.1:3000/mcp
//! cargo run --release -p mcp-io-tokio --example everything -- --http 127.0.0.1:0 # any free port
//! cargo run --release -p mcp-io-tokio --example everything -- --stdio
//! cargo run --release -p mcp-io-tokio --example everything -- --connectome      # + connectome://…
//! cargo run --release -p mcp-io-tokio --example everything -- --connectome-export declared.json
//! # as an OAuth 2.1 protected resource (feature `oauth`):
//! cargo run --release -p mcp-io-tokio --features oauth --example everything -- \
//!     --oauth-issuer https://auth.example.com --public-url https://mcp.example.com/mcp
//! # spans and metrics to an OpenTelemetry collector, OTLP over HTTP (feature `otel`):
//! cargo run --release -p mcp-io-tokio --features otel --example everything -- --otlp http://127.0.0.1:4318
//! ```
//!
//! Over HTTP the server listens on a loopback address only (it accepts any `Origin`, and
//! without `--oauth-issuer` has no authorization) and prints `listening on
//! http://ADDR/mcp` to stderr once bound. With `--oauth-issuer` it verifies JWT access
//! tokens with the adapter's `JwksVerifier` (the key set from `--oauth-jwks`, else the
//! issuer's metadata) through an `OAuthAuthorizer`, and the fixture requires scopes
//! (`mcp_fixture::oauth`). Logs go to stderr (`RUST_LOG` filters them, default `info`);
//! over stdio, stdout carries only JSON-RPC.

mod fixture;

use mcp_engine::Commands;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, Rate};
use mcp_engine::{Config, Engine};
use mcp_fixture::connectome::ConnectomeOptions;
use mcp_fixture::edge::EdgeOptions;
use mcp_fixture::oauth::OAuthOptions;
use mcp_fixture::scale::ScaleOptions;
use mcp_io_tokio::telemetry::Telemetry;
use mcp_io_tokio::{Authorizer, HttpServer};
use tracing_subscriber::EnvFilter;

use crate::fixture::Everything;

const USAGE: &str = "\
usage: everything [--http [ADDR] | --stdio]

Serves the MCP conformance `everything` fixture.

  --http [ADDR]  serve Streamable HTTP at http://ADDR/mcp (the default; ADDR defaults
                 to 127.0.0.1:3000 and must be a loopback address; port 0 picks one)
  --stdio        serve one client over stdin/stdout
  --otlp URL     export the request spans and the metrics (durations, refusals) to an
                 OpenTelemetry collector at URL, OTLP over HTTP (http://127.0.0.1:4318:
                 URL/v1/traces and URL/v1/metrics; feature `otel`)
  -h, --help     print this help

Over HTTP:
";

const DEFAULT_ADDR: &str = "127.0.0.1:3000";

enum Mode {
    Http(SocketAddr, Box<(EdgeOptions, OAuthOptions, ScaleOptions)>, ConnectomeOptions),
    Stdio(ConnectomeOptions),
}

/// This demo's `--oauth-jwks`.
const JWKS_USAGE: &str = "from a file, or a URL
                                  (https; plain http only on a loopback host); default:
                                  the jwks_uri of the issuer's metadata. Fetched again
                                  (at most once a minute) for a token signed by a key it
                                  does not hold";

/// This demo's `--store`.
const STORE_USAGE: &str = "keep sessions, their streams' events and task records in
                                  this PostgreSQL database (postgres://...; feature
                                  `postgres`) as well as in memory, so that several
                                  nodes on one database serve the same sessions and tasks;
                                  each session opened is a record, so one client may open
                                  60 a minute unless --rate-initialize says otherwise";

fn usage() -> String {
    let oauth = mcp_fixture::oauth::usage(JWKS_USAGE);
    let scale = mcp_fixture::scale::usage(STORE_USAGE);
    let feature = if cfg!(feature = "oauth") {
        ""
    } else {
        "\n  (the --oauth-* options need a build with --features oauth)"
    };
    let connectome = mcp_fixture::connectome::USAGE;
    format!("{USAGE}{}\n{oauth}{feature}\n{scale}\n\nBoth:\n{connectome}\n", mcp_fixture::edge::USAGE)
}

/// The mode the arguments ask for, or the exit code to leave with.
fn parse_args() -> Result<Mode, ExitCode> {
    let mut args = std::env::args().skip(1).peekable();
    let mut mode = None;
    let mut edge = EdgeOptions::default();
    let mut oauth = OAuthOptions::default();
    let mut scale = ScaleOptions::default();
    let mut connectome = ConnectomeOptions::default();
    while let Some(arg) = args.next() {
        let taken = edge
            .take(&arg, || args.next())
            .and_then(|taken| Ok(taken || oauth.take(&arg, || args.next())?))
            .and_then(|taken| Ok(taken || scale.take(&arg, || args.next())?))
            .and_then(|taken| Ok(taken || connectome.take(&arg, || args.next())?));
        match taken {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => {
                eprint!("everything: {e}\n\n{}", usage());
                return Err(ExitCode::from(2));
            }
        }
        if arg == "--otlp" {
            let Some(url) = args.next_if(|a| !a.starts_with('-')) else {
                eprint!("everything: --otlp needs the collector's URL\n\n{}", usage());
                return Err(ExitCode::from(2));
            };
            let _ = OTLP.set(url);
            continue;
        }
        let next = match arg.as_str() {
            "--stdio" => Mode::Stdio(ConnectomeOptions::default()),
            "--http" => {
                let addr = args.next_if(|a| !a.starts_with('-')).unwrap_or_else(|| DEFAULT_ADDR.to_owned());
                match addr.parse::<SocketAddr>() {
                    Ok(addr) if addr.ip().is_loopback() => {
                        Mode::Http(addr, Box::default(), ConnectomeOptions::default())
                    }
                    Ok(addr) => {
                        eprintln!(
                            "everything: {addr} is not a loopback address: this server accepts any origin \
                             and has no authorization, so it listens on loopback only"
                        );
                        return Err(ExitCode::from(2));
                    }
                    Err(e) => {
                        eprint!("everything: bad address {addr:?}: {e}\n\n{}", usage());
                        return Err(ExitCode::from(2));
                    }
                }
            }
            "-h" | "--help" => {
                print!("{}", usage());
                return Err(ExitCode::SUCCESS);
            }
            other => {
                eprint!("everything: unknown argument {other:?}\n\n{}", usage());
                return Err(ExitCode::from(2));
            }
        };
        if mode.replace(next).is_some() {
            eprint!("everything: give one of --http and --stdio\n\n{}", usage());
            return Err(ExitCode::from(2));
        }
    }
    let refuse = |e: String| {
        eprint!("everything: {e}\n\n{}", usage());
        Err(ExitCode::from(2))
    };
    if let Err(e) = oauth.check(&edge) {
        return refuse(e);
    }
    if OTLP.get().is_some() && !cfg!(feature = "otel") {
        return refuse(
            "--otlp needs a build with the `otel` feature: \
             cargo run -p mcp-io-tokio --features otel --example everything -- ..."
                .to_owned(),
        );
    }
    if oauth.is_on() && !cfg!(feature = "oauth") {
        return refuse(
            "--oauth-issuer needs a build with the `oauth` feature: \
             cargo run -p mcp-io-tokio --features oauth --example everything -- ..."
                .to_owned(),
        );
    }
    if scale.node_name().is_some() && scale.store().is_none() {
        return refuse("--node-name names this node in the task records of --store: give both".to_owned());
    }
    if scale.store().is_some() && !cfg!(feature = "postgres") {
        return refuse(
            "--store needs a build with the `postgres` feature: \
             cargo run -p mcp-io-tokio --features postgres --example everything -- ..."
                .to_owned(),
        );
    }
    if let Some(path) = connectome.export_to() {
        // The declared graph the demo would serve as connectome://declared, and exit.
        let d = connectome.dynamic(mcp_fixture::Dynamic { connectome: true, ..oauth.dynamic() });
        let catalog = mcp_fixture::catalog_with(d);
        return match mcp_fixture::connectome::export(path, &catalog, &config(), d) {
            Ok(hash) => {
                println!("{hash}  {}", path.display());
                Err(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("everything: {e}");
                Err(ExitCode::FAILURE)
            }
        };
    }
    match mode {
        Some(Mode::Stdio(_)) if oauth.is_on() || scale.store().is_some() => {
            refuse("--oauth-issuer and --store are for --http".to_owned())
        }
        Some(Mode::Stdio(_)) => Ok(Mode::Stdio(connectome)),
        Some(Mode::Http(addr, ..)) => Ok(Mode::Http(addr, Box::new((edge, oauth, scale)), connectome)),
        None => Ok(Mode::Http(
            DEFAULT_ADDR.parse().expect("a valid default address"),
            Box::new((edge, oauth, scale)),
            connectome,
        )),
    }
}

fn config() -> Config {
    mcp_fixture::config()
}

/// Raises this process's open-file soft limit to its hard limit, so that the server can
/// hold as many connections as the system lets it (the default soft limit is often 1,024,
/// the engine's default `max_connections`).
fn raise_open_file_limit() {
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("cannot raise the open-file limit: {e}");
    }
}

fn main() -> ExitCode {
    let mode = match parse_args() {
        Ok(mode) => mode,
        Err(code) => return code,
    };

    if let Err(e) = init_logs() {
        eprintln!("everything: {e}");
        return ExitCode::FAILURE;
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(%e, "cannot start the tokio runtime");
            return ExitCode::FAILURE;
        }
    };
    let code = match mode {
        Mode::Http(addr, options, connectome) => {
            let (edge, oauth, scale) = *options;
            runtime.block_on(serve_http(addr, edge, oauth, scale, connectome))
        }
        Mode::Stdio(connectome) => runtime.block_on(stdio(connectome)),
    };
    // A read of stdin may still be pending after an error: do not wait for it.
    runtime.shutdown_background();
    #[cfg(feature = "otel")]
    if let Some(otel) = OTEL.get() {
        // What is left goes to the collector before the process ends.
        let _ = (otel.tracer_provider().shutdown(), otel.meter_provider().shutdown());
    }
    code
}

/// The collector of `--otlp`.
static OTLP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
/// The exporter to it (feature `otel`), made once the arguments are read.
#[cfg(feature = "otel")]
static OTEL: std::sync::OnceLock<mcp_io_tokio::telemetry::otel::Otel> = std::sync::OnceLock::new();

/// Logs to stderr (`RUST_LOG` filters them, default `info`); with `--otlp`, the spans
/// also go to the collector as OpenTelemetry spans, and the metrics with them.
fn init_logs() -> Result<(), String> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let logs = tracing_subscriber::registry().with(filter).with(fmt);
    #[cfg(feature = "otel")]
    if let Some(url) = OTLP.get() {
        let otel = mcp_io_tokio::telemetry::otel::Otel::builder()
            .endpoint(url.as_str())
            .service_name("mcp-everything")
            .metrics_interval(std::time::Duration::from_secs(10))
            .build()
            .map_err(|e| format!("--otlp {url}: {e}"))?;
        let layer = otel.layer();
        let _ = OTEL.set(otel);
        logs.with(layer).init();
        tracing::info!(collector = %url, "exporting spans and metrics (OTLP over HTTP)");
        return Ok(());
    }
    logs.init();
    Ok(())
}

/// What the request spans record: with `--otlp`, the metrics on its exporter's meter.
fn telemetry() -> Telemetry {
    #[cfg(feature = "otel")]
    if let Some(otel) = OTEL.get() {
        return otel.telemetry();
    }
    Telemetry::new()
}

async fn serve_http(
    addr: SocketAddr,
    edge: EdgeOptions,
    oauth: OAuthOptions,
    scale: ScaleOptions,
    connectome: ConnectomeOptions,
) -> ExitCode {
    raise_open_file_limit();
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!(%addr, %e, "cannot listen");
            return ExitCode::FAILURE;
        }
    };
    let bound = listener.local_addr().unwrap_or(addr);
    // Loopback `Host` checks stay on (the default).
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let mut config = config();
    let mut edge = edge;
    if scale.store().is_some() {
        // Each session opened is a record written: one client may open 60 a minute
        // (`--rate-initialize` sets another rate).
        edge.default_initialize_rate(Rate::per_minute(60));
    }
    edge.apply(&mut config, &mut http);
    if let Some(name) = scale.node_name() {
        http.node_name(name);
    }
    if let Err(e) = scale.apply(&mut config) {
        tracing::error!(%e, "cannot read the key");
        return ExitCode::FAILURE;
    }
    let resource = oauth.resource(&edge, bound);
    let metadata = match oauth.apply(&resource, &mut http) {
        Ok(url) => url,
        Err(e) => {
            tracing::error!(%e, "cannot be a protected resource");
            return ExitCode::FAILURE;
        }
    };
    if let Some(url) = metadata {
        eprintln!("protected resource {resource}, its metadata at {url}");
    }
    let dynamic = connectome.dynamic(oauth.dynamic());
    let mut engine = HttpEngine::new(config, http, mcp_fixture::catalog_with(dynamic));
    if let Err(e) = engine.connectome().set_declarations(mcp_fixture::connectome::declarations(dynamic)) {
        tracing::error!(%e, "the fixture's connectome declarations do not fit its catalog");
        return ExitCode::FAILURE;
    }
    let handler = Arc::new(Everything::new(dynamic));
    if !oauth.is_on() {
        let server = HttpServer::without_authorizer(engine, handler).telemetry(telemetry());
        let server = match with_store(server, &scale).await {
            Ok(server) => server,
            Err(e) => {
                tracing::error!(%e, "cannot open the session store");
                return ExitCode::FAILURE;
            }
        };
        eprintln!("listening on http://{bound}/mcp");
        return serve(server, listener).await;
    }
    #[cfg(feature = "oauth")]
    {
        let auth = match authorizer(&oauth, &resource).await {
            Ok(auth) => auth,
            Err(e) => {
                tracing::error!(%e, "cannot verify tokens");
                return ExitCode::FAILURE;
            }
        };
        let server =
            match with_store(HttpServer::new(engine, handler, auth).telemetry(telemetry()), &scale).await {
                Ok(server) => server,
                Err(e) => {
                    tracing::error!(%e, "cannot open the session store");
                    return ExitCode::FAILURE;
                }
            };
        eprintln!("listening on http://{bound}/mcp");
        serve(server, listener).await
    }
    #[cfg(not(feature = "oauth"))]
    unreachable!("refused when the arguments were read")
}

/// The key the demo's stores sign announcements with when no `--keys-file` is given: in
/// this source, so not a secret (nodes started without a keys file still hear each other;
/// a deployment gives its keys).
#[cfg(feature = "postgres")]
const DEMO_NOTICE_KEY: [u8; 32] = *b"mcp-demo public notice key 00000";

/// `server` with the session store of `--store` (also its event store and task store), connected and its schema migrated now
/// (an error is a configuration error); `server` as it is without the option.
async fn with_store<H, A>(server: HttpServer<H, A>, scale: &ScaleOptions) -> Result<HttpServer<H, A>, String>
where
    H: mcp_io_tokio::Handler,
    A: Authorizer,
{
    let Some(url) = scale.store() else { return Ok(server) };
    #[cfg(feature = "postgres")]
    {
        let store = mcp_io_tokio::store::PgStoreConfig::new(url).map_err(|e| e.to_string())?;
        // The store signs its announcements to the other nodes with the nodes' keys.
        let keys = scale.keys()?;
        let store = match keys.split_first() {
            Some((key, previous)) => store.secret_key(*key).previous_secret_keys(previous.iter().copied()),
            None => {
                tracing::warn!(
                    "--store without --keys-file: announcements between nodes are signed with the \
                     demo's public key, so any database role can forge them: give --keys-file"
                );
                store.secret_key(DEMO_NOTICE_KEY)
            }
        };
        let store = store.build().await;
        let store = store.map_err(|e| e.to_string())?;
        tracing::info!("sessions, their streams' events and task records kept in PostgreSQL");
        let store = Arc::new(store);
        Ok(server.session_store(Arc::clone(&store)).event_store(Arc::clone(&store)).task_store(store))
    }
    #[cfg(not(feature = "postgres"))]
    {
        let _ = (server, url);
        unreachable!("refused when the arguments were read")
    }
}

/// The authorizer of `--oauth-issuer`: JWT access tokens for `resource`, verified with the
/// issuer's key set (loaded now: an error is a configuration error).
#[cfg(feature = "oauth")]
async fn authorizer(
    oauth: &OAuthOptions,
    resource: &str,
) -> Result<mcp_io_tokio::http::oauth::OAuthAuthorizer, String> {
    use mcp_fixture::oauth::Jwks;
    use mcp_io_tokio::http::oauth::{JwksSource, JwksVerifier, OAuthAuthorizer};

    let issuer = oauth.issuer().ok_or("no issuer")?;
    let source = match oauth.jwks() {
        Some(Jwks::File(path)) => JwksSource::File(path.clone()),
        Some(Jwks::Url(url)) => JwksSource::Url(url.clone()),
        None => JwksSource::Discover,
    };
    let keys = JwksVerifier::new(mcp_engine::http::JwtVerifier::new(issuer, resource))
        .source(source)
        // Plain http only to a loopback host (the verifier refuses any other).
        .allow_loopback_http(true);
    let n = keys.load().await.map_err(|e| e.to_string())?;
    tracing::info!(keys = n, %issuer, "key set loaded");
    Ok(OAuthAuthorizer::jwt(Arc::new(keys)))
}

/// Serves until Ctrl-C.
async fn serve<A: Authorizer>(
    server: HttpServer<Everything, A>,
    listener: tokio::net::TcpListener,
) -> ExitCode {
    let shutdown = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    match server.serve_with_shutdown(listener, shutdown).await {
        Ok(()) => {
            tracing::info!("interrupted; bye");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!(%e, "serving failed");
            ExitCode::FAILURE
        }
    }
}

async fn stdio(connectome: ConnectomeOptions) -> ExitCode {
    let dynamic = connectome.dynamic(mcp_fixture::Dynamic::default());
    let mut engine = Engine::new(config(), mcp_fixture::catalog_with(dynamic));
    if let Err(e) = engine.connectome().set_declarations(mcp_fixture::connectome::declarations(dynamic)) {
        tracing::error!(%e, "the fixture's connectome declarations do not fit its catalog");
        return ExitCode::FAILURE;
    }
    tracing::info!("serving the everything fixture on stdio");
    let (stdin, stdout) = (tokio::io::stdin(), tokio::io::stdout());
    match mcp_io_tokio::stdio::serve_with(
        engine,
        Arc::new(Everything::new(dynamic)),
        stdin,
        stdout,
        telemetry(),
    )
    .await
    {
        Ok(()) => {
            tracing::info!("client closed the stream; bye");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!(%e, "serving failed");
            ExitCode::FAILURE
        }
    }
}
