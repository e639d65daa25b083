//! The official Python SDK's client (PyPI package `mcp`) against both demos over stdio
//! (`tests/interop/stdio_oversized.py`): a tool call whose frame passes the frame cap
//! gets its `-32600` error with its id, instead of a time-out, and the session goes on.
//!
//! Needs a Python with the `mcp` package: `MCP_PYTHON` names the interpreter (default
//! `python3`). Without one the test skips outside CI, saying so in the test output; in CI
//! (`CI` set) it fails (`.ci/run` installs the package in a virtual environment).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The interpreter, if it can import `mcp`; else the test skips (outside CI) or fails.
fn python() -> Option<String> {
    let python = std::env::var("MCP_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let ok = Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{python} cannot import the `mcp` package: pip install mcp (or set MCP_PYTHON to an interpreter that has it)"
    );
    let bar = "!".repeat(78);
    let _ = writeln!(
        std::io::stderr(),
        "\n{bar}\nskipped: the official Python SDK client test ({python} cannot import `mcp`).\n\
         To run it: python3 -m venv .venv && .venv/bin/pip install mcp, then\n\
         MCP_PYTHON=.venv/bin/python cargo test -p mcp-tests --test python_client. .ci/run runs it.\n{bar}\n"
    );
    None
}

/// Builds `package`'s example `everything` with the running test's profile and returns its path.
fn demo(package: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile = exe.parent().and_then(Path::parent).and_then(Path::file_name).and_then(|n| n.to_str());
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q", "-p", package, "--example", "everything", "--message-format=json"]);
    if let Some(p) = profile.filter(|p| *p != "debug") {
        cmd.args(["--profile", p]);
    }
    let out = cmd.stderr(Stdio::inherit()).output().expect("run cargo build");
    assert!(out.status.success(), "cargo build -p {package} --example everything failed");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "everything")
        .find(|m| m["package_id"].as_str().is_some_and(|id| id.contains(package)))
        .and_then(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo reported the example's executable")
}

#[test]
fn an_over_long_frame_from_the_python_sdk_gets_its_error_not_a_time_out() {
    let Some(python) = python() else { return };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/stdio_oversized.py");
    for package in ["mcp-io-tokio", "mcp-io-mio"] {
        let server = demo(package);
        let out = Command::new(&python)
            .arg(script)
            .arg(&server)
            .arg("--stdio")
            .stdin(Stdio::null())
            .output()
            .expect("run the Python client");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{package}: the Python client failed\n{stdout}\n{stderr}");
        assert!(
            stdout.contains("over the cap: -32600 Invalid Request: frame longer than 1048576 bytes"),
            "{package}: {stdout}"
        );
        assert!(stdout.contains("the session goes on"), "{package}: {stdout}");
    }
}
