//! The quickstart's server driven by real MCP clients over stdio, as a
//! desktop client starts it: the official Python SDK (and, in
//! the official TypeScript SDK, `tests/node`).
#![allow(missing_docs)]

use std::time::Duration;

use hardened_mcp_tests::python::run_script;

fn python(era: &str) {
    run_script(
        "test_quickstart.py",
        &["--server", env!("CARGO_BIN_EXE_beam-server"), "--era", era],
        &format!("quickstart {era}"),
        Duration::from_secs(120),
    );
}

/// The 2025-11-25 era: the `initialize` handshake.
#[test]
fn python_sdk_over_stdio() {
    python("legacy");
}

/// The 2026-07-28 era: `server/discover`, per-request metadata.
#[test]
fn python_sdk_over_stdio_2026_era() {
    python("modern");
}

#[test]
fn typescript_sdk_over_stdio() {
    let stress = hardened_mcp::serde_json::json!({
        "length_m": 2, "load_n": 1000, "width_mm": 50, "height_mm": 100
    });
    let calls = hardened_mcp::serde_json::json!([
        {"tool": "beam_stress", "arguments": stress, "expect": "ok"},
        {"tool": "beam_deflection", "arguments": {"support": "cantilever", "length_m": 2,
         "load_n": 1000, "modulus_gpa": 200, "inertia_cm4": 1000}, "expect": "ok"},
        {"tool": "beam_stress", "arguments": {"length_m": -2}, "expect": "invalid_arguments"},
        {"tool": "beam_shear", "arguments": {}, "expect": "unknown_tool"},
    ]);
    hardened_mcp_tests::node::run_ts_client(
        "quickstart",
        &["beam_deflection", "beam_stress"],
        &calls,
        env!("CARGO_BIN_EXE_beam-server"),
        &[],
    );
}
