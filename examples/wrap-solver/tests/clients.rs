//! The chapter's server driven by the official SDKs over stdio: the Python
//! SDK through the plain tools, the TypeScript SDK through a 2025-11-25
//! MCP task (`callToolStream`) to its result, and a cancelled one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hardened_mcp_tests::node::run_ts_task;
use hardened_mcp_tests::python::run_script;
use serde_json::json;

const SERVER: &str = env!("CARGO_BIN_EXE_poisson-server");

#[test]
fn the_python_sdk_drives_the_plain_tools() {
    run_script(
        "test_wrap.py",
        &["--server", SERVER],
        "wrap",
        Duration::from_secs(120),
    );
}

#[test]
fn the_typescript_sdk_drives_a_solve_as_a_task() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("runs");
    let plan = json!({
        "tool": "poisson_solve",
        "arguments": {"n": 24, "tolerance": 1e-10, "max_iterations": 20000},
        "long_arguments": {"n": 2000, "tolerance": 1e-14, "max_iterations": 100000},
    });
    let Some(report) = run_ts_task(
        "wrap task",
        &plan,
        SERVER,
        &["--run-root", root.to_str().unwrap()],
    ) else {
        return;
    };
    let data = &report["result"]["data"];
    assert_eq!(data["report"]["state"], "succeeded", "{report}");
    assert_eq!(data["result"]["converged"], true, "{report}");
    assert_eq!(data["run_handle"], data["report"]["run_handle"]);
    let statuses = report["statuses"].as_array().unwrap();
    assert_eq!(statuses.last().unwrap(), "completed", "{report}");
}
