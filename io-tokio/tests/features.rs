//! Which of this crate's tests a build without some feature leaves out, said in the test
//! output: each feature that is off is one ignored test here whose reason names the test
//! binaries that ran nothing and the command that runs them (the README's:
//! `cargo test --workspace --all-features`).

#[cfg(not(feature = "tower"))]
#[test]
#[ignore = "feature `tower` is off: tests/tower.rs, tests/tower_streams.rs and the tower test of \
            tests/refusal_log.rs ran nothing; `cargo test --workspace --all-features` runs them"]
fn tower_tests_skipped() {}

#[cfg(not(feature = "otel"))]
#[test]
#[ignore = "feature `otel` is off: tests/otel.rs, tests/otlp.rs and the counter test of \
            tests/refusal_log.rs ran nothing; `cargo test --workspace --all-features` runs them"]
fn otel_tests_skipped() {}

#[cfg(not(feature = "oauth"))]
#[test]
#[ignore = "feature `oauth` is off: tests/oauth.rs, tests/oauth_demo.rs, tests/oauth_jwks.rs and \
            tests/scale_out*.rs ran nothing; `cargo test --workspace --all-features` runs them \
            (the authorization server's: with Node 22, see the README)"]
fn oauth_tests_skipped() {}

#[cfg(not(feature = "postgres"))]
#[test]
#[ignore = "feature `postgres` is off: tests/postgres_*.rs and tests/scale_out*.rs ran nothing; \
            `cargo test --workspace --all-features` runs them (with PostgreSQL, see the README)"]
fn postgres_tests_skipped() {}
