//! End to end with the official MCP Python SDK: runs
//! `tests/python/test_spice_e2e.py` against the built `spice-server` binary
//! over stdio (the same pinned venv as the heat example's).
#![allow(missing_docs)]

mod support;

use std::time::Duration;

use hardened_mcp_tests::python::run_script;

#[test]
fn python_sdk_over_stdio() {
    if !support::ngspice_present() {
        return;
    }
    run_script(
        "test_spice_e2e.py",
        &["--server", env!("CARGO_BIN_EXE_spice-server")],
        "stdio",
        Duration::from_secs(240),
    );
}
