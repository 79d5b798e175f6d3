//! End to end with the official MCP TypeScript SDK (`tests/node`): every
//! input and output schema compiles in the SDK's validator (ajv) without a
//! warning, and results are validated by the SDK against their output
//! schemas.
#![allow(clippy::unwrap_used, missing_docs)]

use hardened_mcp_tests::node::run_ts_client;
use serde_json::json;

#[test]
fn typescript_sdk_over_stdio() {
    let root = tempfile::tempdir().unwrap();
    let runs = root.path().join("runs");
    let cells = 64;
    let dx = 1.0 / f64::from(cells);
    let start = json!({"cells": cells, "steps": 200, "length": 1.0, "diffusivity": 1.0,
                       "dt": 0.4 * dx * dx});
    let calls = json!([
        {"tool": "heat_list", "arguments": {}, "expect": "ok"},
        {"tool": "heat_start", "arguments": start, "expect": "ok"},
        {"tool": "heat_list", "arguments": {}, "expect": "ok"},
        {"tool": "heat_status", "arguments": {"run": "r_doesnotexist"}, "expect": "invalid_arguments"},
        {"tool": "heat_start", "arguments": {"cells": 3}, "expect": "invalid_arguments"},
        {"tool": "heat_stop", "arguments": {}, "expect": "unknown_tool"},
    ]);
    let tools = [
        "heat_start",
        "heat_solve",
        "heat_sweep",
        "heat_status",
        "heat_wait",
        "heat_log",
        "heat_result",
        "heat_plot",
        "heat_sweep_plot",
        "heat_cancel",
        "heat_delete",
        "heat_list",
    ];
    run_ts_client(
        "solver-server",
        &tools,
        &calls,
        env!("CARGO_BIN_EXE_solver-server"),
        &[
            "serve",
            "--run-root",
            runs.to_str().unwrap(),
            "--solver",
            env!("CARGO_BIN_EXE_heat1d"),
        ],
    );
}
