//! Building the example binaries (`everything`, `notes`), shared by the example tests.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// Builds the `everything` example with the cargo running these tests and returns its path.
#[allow(dead_code)] // not every test binary runs this example
pub(crate) fn example_binary() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| build_example("everything"))
}

/// Builds the example `name` with the cargo running these tests and returns its path.
pub(crate) fn build_example(name: &str) -> PathBuf {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "--message-format=json", "--example", name, "--manifest-path", manifest]);
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    let out = cmd.stderr(Stdio::inherit()).output().expect("run cargo build");
    assert!(out.status.success(), "cargo build --example {name} failed");
    let stdout = String::from_utf8(out.stdout).expect("cargo prints UTF-8");
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo reports the example's executable")
}
