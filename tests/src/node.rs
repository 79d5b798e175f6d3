//! Running `tests/node/ts_client.mjs`, the official MCP TypeScript SDK
//! client (pinned in `tests/node/package.json`), against a server over
//! stdio. `.ci/setup-node` installs the pinned packages (`npm ci`) on first
//! use. Without Node.js the tests that need it say so and pass, unless
//! `HARDENED_MCP_REQUIRE_NODE` is set (CI sets it).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use crate::python::{run_client, workspace};

/// The environment variable that makes a missing Node.js a failure.
pub const REQUIRE_ENV: &str = "HARDENED_MCP_REQUIRE_NODE";

/// `tests/node`, with its packages installed; `None` (after saying so)
/// when Node.js is not on this machine and not required.
pub fn client_dir() -> Option<PathBuf> {
    static SETUP: Mutex<()> = Mutex::new(());
    let _once = SETUP.lock().unwrap_or_else(|p| p.into_inner());
    let has_node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_node {
        assert!(
            std::env::var_os(REQUIRE_ENV).is_none(),
            "Node.js is required here ({REQUIRE_ENV} is set) but `node` is not on PATH"
        );
        eprintln!("Node.js is not installed: skipped");
        return None;
    }
    let dir = workspace().join("tests/node");
    let sdk = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    if !sdk.exists() {
        let status = Command::new("bash")
            .arg(workspace().join(".ci/setup-node"))
            .status();
        assert!(
            status.is_ok_and(|s| s.success()) && sdk.exists(),
            ".ci/setup-node could not install the pinned TypeScript SDK"
        );
    }
    Some(dir)
}

/// Drives `server` (with `args`) with the TypeScript SDK client: `tools`
/// must be exactly the tools listed, every schema must compile without a
/// warning, and each of `calls` (`{"tool", "arguments", "expect": "ok" |
/// "<error kind>"}`) must end as expected, its result validated by the SDK.
pub fn run_ts_client(
    label: &str,
    tools: &[&str],
    calls: &serde_json::Value,
    server: &str,
    args: &[&str],
) {
    let Some(dir) = client_dir() else { return };
    let plan = serde_json::json!({ "tools": tools, "calls": calls });
    let mut cmd = Command::new("node");
    cmd.current_dir(&dir)
        .arg("ts_client.mjs")
        .arg(label)
        .arg(plan.to_string())
        .arg(server)
        .args(args);
    run_client(cmd, label, Duration::from_secs(150));
}
