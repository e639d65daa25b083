//! The adapters' `everything` demos as child processes: built with the cargo running the
//! tests (the tokio one with this test build's features), started with arguments, their
//! address read from what they print.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::http_support::PATIENCE;

/// Which adapter's demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    Tokio,
    Mio,
}

impl Adapter {
    fn package(self) -> &'static str {
        match self {
            Self::Tokio => "mcp-io-tokio",
            Self::Mio => "mcp-io-mio",
        }
    }
}

/// The demo of `adapter`, built once per test run.
pub fn binary(adapter: Adapter) -> &'static Path {
    static TOKIO: OnceLock<PathBuf> = OnceLock::new();
    static MIO: OnceLock<PathBuf> = OnceLock::new();
    let cell = match adapter {
        Adapter::Tokio => &TOKIO,
        Adapter::Mio => &MIO,
    };
    cell.get_or_init(|| {
        // Another cargo (a build of the other demo) may replace the shared uplifted file
        // between a build and the lookup of its hashed twin: check what was found.
        for _ in 0..3 {
            let path = build(adapter);
            if is(adapter, &path) {
                return path;
            }
        }
        panic!("could not build the {adapter:?} demo (another build keeps replacing it?)")
    })
}

/// Whether `path` is `adapter`'s demo (the tokio one with the `oauth` feature), by its
/// `--help`.
fn is(adapter: Adapter, path: &Path) -> bool {
    let Ok(out) = Command::new(path).arg("--help").stdin(Stdio::null()).output() else { return false };
    let help = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    match adapter {
        Adapter::Tokio => {
            help.contains("Fetched again") && !help.contains("need a build with --features oauth")
        }
        Adapter::Mio => help.contains("from a file, or a plain"),
    }
}

/// Builds the demo and returns a path that stays its own: both demos are uplifted to the
/// same `target/.../examples/everything`, so the path is the hashed file that is the same
/// file (its hard link), or a copy.
fn build(adapter: Adapter) -> PathBuf {
    // One build (and lookup) at a time: the uplifted path is shared.
    static ONE: Mutex<()> = Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "--message-format=json", "--manifest-path", manifest]);
    cmd.args(["-p", adapter.package(), "--example", "everything"]);
    if adapter == Adapter::Tokio {
        // This test build's features: the library is not built again.
        let mut features = vec!["oauth"];
        if cfg!(feature = "schemars") {
            features.push("schemars");
        }
        if cfg!(feature = "tower") {
            features.push("tower");
        }
        if cfg!(feature = "postgres") {
            features.push("postgres");
        }
        cmd.args(["--no-default-features", "--features", &features.join(",")]);
    }
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    let out = cmd.stderr(Stdio::inherit()).output().expect("run cargo build");
    assert!(out.status.success(), "cargo build -p {} --example everything failed", adapter.package());
    let stdout = String::from_utf8(out.stdout).expect("cargo prints UTF-8");
    let uplifted = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "everything")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo reports the example's executable");
    own_path(&uplifted, adapter)
}

#[cfg(unix)]
fn own_path(uplifted: &Path, adapter: Adapter) -> PathBuf {
    use std::os::unix::fs::MetadataExt as _;
    let ino = std::fs::metadata(uplifted).expect("the example").ino();
    let dir = uplifted.parent().expect("a directory");
    let hashed = std::fs::read_dir(dir).expect("the examples directory").filter_map(Result::ok).find(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.starts_with("everything-") && !name.contains('.') && e.metadata().is_ok_and(|m| m.ino() == ino)
    });
    hashed.map_or_else(|| copy(uplifted, adapter), |e| e.path())
}

#[cfg(not(unix))]
fn own_path(uplifted: &Path, adapter: Adapter) -> PathBuf {
    copy(uplifted, adapter)
}

fn copy(uplifted: &Path, adapter: Adapter) -> PathBuf {
    let to = std::env::temp_dir().join(format!("mcp-demo-{adapter:?}-{}", std::process::id()));
    std::fs::copy(uplifted, &to).expect("copy the example");
    to
}

/// A running demo, killed when dropped.
pub struct Demo {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Everything it printed on stderr so far.
    pub log: Arc<Mutex<String>>,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the demo of `adapter` on `--http 127.0.0.1:0` with `args`, and waits until it
/// says where it listens (panicking with what it printed if it exits first).
pub fn start(adapter: Adapter, args: &[&str]) -> Demo {
    let mut child = Command::new(binary(adapter))
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the demo");
    let stderr = child.stderr.take().expect("stderr");
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("listening on http://") {
                let _ = tx.send(url.trim_end_matches("/mcp").to_owned());
            }
            let mut log = sink.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    let addr = rx.recv_timeout(PATIENCE).unwrap_or_else(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        panic!("the {adapter:?} demo did not start:\n{}", log.lock().unwrap())
    });
    Demo { child, addr: addr.parse().expect("a socket address"), log }
}

/// A keys file of hex keys (the first seals), removed when dropped.
pub struct KeysFile(PathBuf);

impl KeysFile {
    pub fn new(name: &str, bytes: &[u8]) -> Self {
        let path = std::env::temp_dir().join(format!("mcp-scale-{name}-{}", std::process::id()));
        let lines: String = bytes.iter().map(|&b| format!("{}\n", hex(&[b; 32]))).collect();
        std::fs::write(&path, lines).expect("write the keys file");
        Self(path)
    }
    pub fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 path")
    }
}

impl Drop for KeysFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
