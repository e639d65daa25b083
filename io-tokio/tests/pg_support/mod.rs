//! A real PostgreSQL server for the store tests.
//!
//! [`database`] is the server CI started (`MCP_TEST_PG_URL`, set by `.ci/postgres.sh`;
//! each test then works in a schema of its own), else one started for the test.
//! [`PgServer::start`] is always a server of the test's own (a test that stops and
//! restarts the database). A server started here runs the distribution's PostgreSQL (`initdb` on
//! `PATH` or under `/usr/lib/postgresql/*/bin`) as the invoking user, or as `postgres`
//! when run as root (PostgreSQL refuses root), with a data directory under the temp dir,
//! listening on a free loopback port only. Without PostgreSQL (neither `MCP_TEST_PG_URL`
//! nor the server's binaries) the tests skip, saying so in the test output, outside CI;
//! in CI (`CI` set) they fail instead. `MCP_PG_SKIP=1` skips them even where PostgreSQL
//! is installed (never in CI).

#![allow(dead_code, unreachable_pub)]

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use deadpool_postgres::tokio_postgres::{self, Client, NoTls};

/// The directory holding `initdb`, `pg_ctl`, `postgres`.
fn bin_dir() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Some(dir);
            }
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop()
}

/// Whether the tests should run: PostgreSQL is there. Outside CI, without it (or with
/// `MCP_PG_SKIP=1`) they skip, said once per test binary in the test output (written
/// to stderr directly, past the test harness's capture). In CI it panics with the way
/// out: there they never skip.
pub fn available() -> bool {
    let ci = std::env::var_os("CI").is_some();
    let skip = std::env::var_os("MCP_PG_SKIP").is_some_and(|v| !v.is_empty() && v != "0");
    let there = std::env::var_os("MCP_TEST_PG_URL").is_some() || bin_dir().is_some();
    if there && (ci || !skip) {
        return true;
    }
    let why = if there {
        "MCP_PG_SKIP is set"
    } else {
        "MCP_TEST_PG_URL is not set and PostgreSQL is not installed"
    };
    assert!(
        !ci,
        "the PostgreSQL tests need a PostgreSQL server ({why}): set MCP_TEST_PG_URL=postgres://... \
         (.ci/postgres.sh start DIR prints one), or install PostgreSQL (initdb on PATH or under \
         /usr/lib/postgresql/*/bin; Debian: apt-get install postgresql). In CI they never skip."
    );
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        let bar = "!".repeat(78);
        let _ = writeln!(
            std::io::stderr(),
            "\n{bar}\nskipped: the PostgreSQL tests of this binary ({why}).\n\
             To run them: install PostgreSQL's server (Debian: apt-get install postgresql; the tests\n\
             start servers of their own), or set MCP_TEST_PG_URL=postgres://USER@HOST:PORT/DB\n\
             (.ci/postgres.sh start DIR starts one and prints it). .ci/run runs every test.\n{bar}\n"
        );
    });
    false
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A PostgreSQL server of this process's, stopped and deleted when dropped.
pub struct PgServer {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    root: bool,
}

impl PgServer {
    /// Initializes a data directory and starts a server on a free loopback port.
    pub fn start() -> Self {
        let bin = bin_dir().expect("PostgreSQL's initdb (see pg_support)");
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("mcp-pg-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let root = is_root();
        if root {
            run(Command::new("chown").arg("postgres:").arg(&dir), "chown");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = Self { dir, bin, port, root };
        server.pg(
            "initdb",
            &[
                "-D",
                &server.data(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
        );
        server.up();
        server
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// Runs a PostgreSQL binary (as `postgres` when we are root).
    fn pg(&self, tool: &str, args: &[&str]) {
        let exe = self.bin.join(tool);
        let mut cmd = if self.root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args).current_dir(&self.dir);
        run(&mut cmd, tool);
    }

    /// Starts the server (again), waiting until it accepts connections.
    pub fn up(&self) {
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c max_connections=200",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("log").display().to_string();
        self.pg("pg_ctl", &["-D", &self.data(), "-l", &log, "-o", &opts, "-w", "-t", "60", "start"]);
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`).
    pub fn kill(&self) {
        self.pg("pg_ctl", &["-D", &self.data(), "-m", "immediate", "-w", "stop"]);
    }

    /// Kills the server and every one of its processes with `SIGKILL` (it reaches frozen
    /// processes too), as a crash of the database host would; once they are gone (or
    /// zombies no one reaped), the stale `postmaster.pid` and socket lock file are removed,
    /// as a rebooted host would not have them. [`up`](Self::up) then starts the server with crash recovery.
    pub fn crash(&self) {
        let pids = self.pids().expect("the server's processes (postmaster.pid)");
        run(Command::new("kill").arg("-KILL").args(&pids), "kill");
        let running = |pid: &String| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
            state.is_some_and(|s| s != "Z" && s != "X")
        };
        for _ in 0..200 {
            if !pids.iter().any(running) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        assert!(!pids.iter().any(running), "the killed server's processes are gone");
        let _ = std::fs::remove_file(self.dir.join("data/postmaster.pid"));
        // The socket and its lock file name the dead postmaster too.
        for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(".s.PGSQL.") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// Freezes (`STOP`) or thaws (`CONT`) the server and all its processes, as a stalled
    /// database host would be: connections stay open, nothing answers.
    pub fn signal(&self, sig: &str) {
        let pids = self.pids().expect("the server's processes (postmaster.pid)");
        run(Command::new("kill").arg(format!("-{sig}")).args(&pids), "kill");
    }

    /// The postmaster's pid and its children's.
    fn pids(&self) -> Option<Vec<String>> {
        let pid = std::fs::read_to_string(self.dir.join("data/postmaster.pid")).ok()?;
        let postmaster = pid.lines().next()?.trim().to_owned();
        let mut pids = vec![postmaster.clone()];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // `pid (comm) state ppid ...`: the fields after the last `)`.
            let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
            if after.split_whitespace().nth(1) == Some(postmaster.as_str()) {
                pids.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Some(pids)
    }

    /// The connection URL.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // A test that failed while the server was frozen.
        if let Some(pids) = self.pids() {
            let _ = Command::new("kill").arg("-CONT").args(&pids).stderr(Stdio::null()).status();
        }
        let mut cmd = if self.root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(self.bin.join("pg_ctl"));
            c
        } else {
            Command::new(self.bin.join("pg_ctl"))
        };
        let _ = cmd
            .args(["-D", &self.data(), "-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A database for one test: CI's server (`MCP_TEST_PG_URL`), else a server of the
/// test's own, stopped and deleted with the returned value.
pub struct Db {
    pub url: String,
    _server: Option<PgServer>,
}

pub fn database() -> Db {
    match std::env::var("MCP_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Db { url, _server: None },
        _ => {
            let server = PgServer::start();
            Db { url: server.url(), _server: Some(server) }
        }
    }
}

/// A plain connection to `url`, for the tests' own queries.
pub async fn connect(url: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(url, NoTls).await.expect("connect to the test database");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// A database for a test (or `None`: skipped, loudly, outside CI) and a schema name of
/// its own, dropped first so the test starts from nothing.
pub async fn fresh(schema: &str) -> Option<Db> {
    if !available() {
        return None;
    }
    let db = database();
    let c = connect(&db.url).await;
    c.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await.expect("drop schema");
    Some(db)
}

/// The secret key the tests' nodes share (their engines' `Config::secret_key` where
/// they set one).
pub const SECRET: [u8; 32] = [7; 32];

/// A store's settings for `schema` of `url`, without the periodic cleanup (tests run it),
/// with the nodes' [`SECRET`].
pub fn config(url: &str, schema: &str) -> mcp_io_tokio::store::PgStoreConfig {
    mcp_io_tokio::store::PgStoreConfig::new(url)
        .expect("url")
        .schema(schema)
        .cleanup_every(None)
        .secret_key(SECRET)
}

/// A store built from [`config`].
pub async fn store(url: &str, schema: &str) -> mcp_io_tokio::store::PgSessionStore {
    config(url, schema).build().await.expect("build the store")
}
