//! End to end with the official MCP Python SDK: runs
//! `tests/python/test_e2e.py` against the built `solver-server` binary over
//! stdio and over streamable HTTP with bearer tokens, in both protocol eras.
//!
//! The SDK lives in a venv (`target/mcp-venv`, or `$HARDENED_MCP_VENV`) that
//! `.ci/setup-python` creates with the pinned `mcp` package; this test runs
//! that script itself when the venv is missing, so `cargo test` works on a
//! fresh machine with access to the package registries.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use hardened_mcp_tests::python::run_script;

const SERVER: &str = env!("CARGO_BIN_EXE_solver-server");
const SOLVER: &str = env!("CARGO_BIN_EXE_heat1d");

/// Upper bound of one script run, against hangs only.
const BUDGET: Duration = Duration::from_secs(240);

/// `era`: `legacy` (the `initialize` handshake, 2025-11-25) or `modern`
/// (2026-07-28: `server/discover`, per-request metadata, no session).
fn run(transport: &str, era: &str) {
    run_script(
        "test_e2e.py",
        &[
            "--server",
            SERVER,
            "--solver",
            SOLVER,
            "--transport",
            transport,
            "--era",
            era,
        ],
        &format!("{transport} {era}"),
        BUDGET,
    );
}

#[test]
fn python_sdk_over_stdio() {
    run("stdio", "legacy");
}

#[test]
fn python_sdk_over_http_with_tokens() {
    run("http", "legacy");
}

#[test]
fn python_sdk_over_stdio_2026_era() {
    run("stdio", "modern");
}

#[test]
fn python_sdk_over_http_with_tokens_2026_era() {
    run("http", "modern");
}
