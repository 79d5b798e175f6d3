//! End to end with the official MCP TypeScript SDK (`tests/node`): every
//! schema compiles in the SDK's validator without a warning, and results
//! (a real ngspice run among them) are validated by the SDK.
#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use hardened_mcp_tests::node::run_ts_client;
use serde_json::json;

#[test]
fn typescript_sdk_over_stdio() {
    if !support::ngspice_present() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let runs = root.path().join("runs");
    let calls = json!([
        {"tool": "spice_op", "arguments": {"template": "diode_clipper", "resistance": 1e3,
         "amplitude": 5.0}, "expect": "ok"},
        {"tool": "spice_ac", "arguments": {"template": "rc_lowpass", "resistance": 1e3,
         "capacitance": 1e-7, "f_start": 10.0, "f_stop": 1e6, "points_per_decade": 20},
         "expect": "ok"},
        {"tool": "spice_ac", "arguments": {"template": "rc_lowpass", "resistance": -1.0},
         "expect": "invalid_arguments"},
        {"tool": "spice_netlist", "arguments": {}, "expect": "unknown_tool"},
    ]);
    run_ts_client(
        "spice-server",
        &[
            "spice_ac",
            "spice_tran",
            "spice_op",
            "spice_plot",
            "spice_status",
            "spice_log",
            "spice_list",
            "spice_delete",
        ],
        &calls,
        env!("CARGO_BIN_EXE_spice-server"),
        &["serve", "--run-root", runs.to_str().unwrap()],
    );
}
