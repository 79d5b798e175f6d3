//! End to end with the official MCP TypeScript SDK (`tests/node`): every
//! input and output schema compiles in the SDK's validator (ajv) without a
//! warning, and results are validated by the SDK against their output
//! schemas.
#![allow(clippy::unwrap_used, missing_docs)]

use hardened_mcp_tests::node::run_ts_client;
use serde_json::json;

/// The tools the heat server lists.
const TOOLS: [&str; 12] = [
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

/// A run above the server's approval threshold (1e8 cell-steps): 2000
/// cells x 60000 steps.
fn costly_run() -> serde_json::Value {
    let dx = 1.0 / 2000.0;
    json!({"cells": 2000, "steps": 60_000, "length": 1.0, "diffusivity": 1.0, "dt": 0.4 * dx * dx})
}

/// The SDK's client answers the server's approval question: a costly run
/// is asked about and goes ahead when approved, is refused when declined;
/// a small run is not asked about; a client that cannot ask is refused.
#[test]
fn typescript_sdk_answers_the_approval_of_a_costly_run() {
    let root = tempfile::tempdir().unwrap();
    let runs = root.path().join("runs");
    let args = [
        "serve",
        "--run-root",
        runs.to_str().unwrap(),
        "--solver",
        env!("CARGO_BIN_EXE_heat1d"),
    ];
    let dx = 1.0 / 64.0;
    let small =
        json!({"cells": 64, "steps": 10, "length": 1.0, "diffusivity": 1.0, "dt": 0.4 * dx * dx});
    for (person, outcome) in [("approve", "ok"), ("decline", "not_approved")] {
        let plan = json!({
            "person": person,
            "calls": [
                {"tool": "heat_start", "arguments": costly_run(), "expect": outcome, "asked": true},
                {"tool": "heat_start", "arguments": small, "expect": "ok", "asked": false},
            ],
        });
        run_ts_client(
            &format!("solver-server approval ({person})"),
            &TOOLS,
            &plan,
            env!("CARGO_BIN_EXE_solver-server"),
            &args,
        );
    }
}

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
    run_ts_client(
        "solver-server",
        &TOOLS,
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
