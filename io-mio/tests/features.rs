//! Which of this crate's tests a build without feature `tracing` leaves out, said in the
//! test output (an ignored test whose reason names them and the command that runs them).

#[cfg(not(feature = "tracing"))]
#[test]
#[ignore = "feature `tracing` is off: tests/spans.rs and tests/refusal_log.rs ran nothing; \
            `cargo test --workspace --all-features` runs them"]
fn tracing_tests_skipped() {}
