//! The quickstart's server driven by real MCP clients over stdio, as a
//! desktop client starts it: the official Python SDK (and, in
//! `tests/node`, the official TypeScript SDK).
#![allow(missing_docs)]

use std::time::Duration;

use hardened_mcp_tests::python::run_script;

#[test]
fn python_sdk_over_stdio() {
    run_script(
        "test_quickstart.py",
        &["--server", env!("CARGO_BIN_EXE_beam-server")],
        "quickstart",
        Duration::from_secs(120),
    );
}
