//! HTTP sessions that survive a restart: the engine's session store events answered from
//! a directory, one file per session, inside the mio server's own loop.
//!
//! The engine does no I/O: with `HttpConfig::session_store` on, it asks for a session it
//! does not hold (`StoreEvent::LoadSession`), holds the answer to a request that changed a
//! session until the host stored it (`StoreEvent::SaveSession`), and reports the sessions
//! it expired (`StoreEvent::SessionExpired`). This host takes those from
//! `HttpEngine::poll_store` after each batch (`run_timed`'s `after`), where it has the
//! engine, and answers them there.
//! The sealing key lives in the same directory, so a restarted process accepts the ids
//! the last one handed out.
//!
//! ```text
//! cargo run -p mcp-io-mio --example session_store -- --dir /tmp/mcp-sessions --addr 127.0.0.1:3001
//! ```
//!
//! A real store would do its I/O on a thread of its own (or another process) and wake
//! the loop; files read and written in the loop keep the example short.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use mcp_engine::http::store::{Loaded, StoreEvent};
use mcp_engine::http::{AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent};
use mcp_fixture as everything;

/// What the engine asked of the store, kept until the loop can answer it.
enum Ask {
    Load(ConnId, String),
    Save(ConnId, String, Option<Vec<u8>>),
    Expired(String),
}

fn main() -> io::Result<()> {
    let mut dir = std::env::temp_dir().join("mcp-engine-sessions");
    let mut addr: SocketAddr = "127.0.0.1:3001".parse().map_err(io::Error::other)?;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--dir", Some(d)) => dir = PathBuf::from(d),
            ("--addr", Some(a)) => addr = a.parse().map_err(io::Error::other)?,
            _ => return Err(io::Error::other("usage: session_store [--dir DIR] [--addr HOST:PORT]")),
        }
    }
    std::fs::create_dir_all(&dir)?;

    let mut config = everything::config();
    config.secret_key(key(&dir)?);
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.session_store(true);
    let engine = HttpEngine::new(config, http, everything::catalog());
    let listener = mio::net::TcpListener::bind(addr)?;
    eprintln!("listening on http://{}/mcp, sessions in {}", listener.local_addr()?, dir.display());

    let server = mcp_io_mio::HttpServer::new(listener, engine);
    server.run_timed(
        |event| {
            if let HttpEvent::Mcp(event) = event {
                everything::respond(event);
            }
            None // `Authorization::Everyone`: no authorization events
        },
        |engine, _| {
            // The store's work, taken where the engine is, then answered.
            let mut batch = Vec::new();
            while let Some(event) = engine.poll_store() {
                match event {
                    StoreEvent::LoadSession(l) => batch.push(Ask::Load(l.conn, l.id.to_owned())),
                    StoreEvent::SaveSession(s) => {
                        batch.push(Ask::Save(s.conn, s.id.to_owned(), s.record.map(<[u8]>::to_vec)));
                    }
                    StoreEvent::SessionExpired(x) => batch.push(Ask::Expired(x.id.to_owned())),
                    _ => {}
                }
            }
            let any = !batch.is_empty();
            for ask in batch {
                answer(engine, &dir, ask);
            }
            // Answers may lead to more asks (a pipelined request): come back at once.
            any.then(std::time::Instant::now)
        },
    )
}

/// Does what `ask` says with the session files in `dir`, and tells the engine.
fn answer(engine: &mut HttpEngine, dir: &Path, ask: Ask) {
    let now = engine.now(); // the time the server passed in last
    match ask {
        Ask::Load(conn, id) => match std::fs::read(file(dir, &id)) {
            Ok(record) => engine.session_loaded(now, conn, Loaded::Record(&record)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                engine.session_loaded(now, conn, Loaded::Missing)
            }
            Err(e) => {
                eprintln!("load {id}: {e}");
                engine.session_loaded(now, conn, Loaded::Unavailable);
            }
        },
        Ask::Save(conn, id, record) => {
            let done = match record {
                // Written whole, then renamed over the old file: a crash leaves one or the other.
                Some(record) => {
                    let tmp = file(dir, &id).with_extension("tmp");
                    std::fs::write(&tmp, record).and_then(|()| std::fs::rename(&tmp, file(dir, &id)))
                }
                None => remove(&file(dir, &id)),
            };
            if let Err(e) = &done {
                eprintln!("save {id}: {e}");
            }
            engine.session_saved(now, conn, done.is_ok());
        }
        Ask::Expired(id) => {
            if let Err(e) = remove(&file(dir, &id)) {
                eprintln!("expire {id}: {e}");
            }
        }
    }
}

/// A session's file: its id is URL-safe base64, fit for a file name.
fn file(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.session"))
}

fn remove(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The key sealing session ids, made once per directory from the OS random source.
fn key(dir: &Path) -> io::Result<[u8; 32]> {
    let path = dir.join("key");
    if let Ok(bytes) = std::fs::read(&path)
        && let Ok(key) = <[u8; 32]>::try_from(bytes.as_slice())
    {
        return Ok(key);
    }
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| io::Error::other(e.to_string()))?;
    std::fs::write(&path, key)?;
    Ok(key)
}
