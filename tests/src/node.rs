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
/// `calls` may instead be a whole plan (`{"calls": [..], "person": ..}`,
/// see `tests/node/ts_client.mjs`), to which `tools` is added.
pub fn run_ts_client(
    label: &str,
    tools: &[&str],
    calls: &serde_json::Value,
    server: &str,
    args: &[&str],
) {
    let Some(dir) = client_dir() else { return };
    let plan = match calls {
        serde_json::Value::Object(plan) => {
            let mut plan = plan.clone();
            plan.insert("tools".into(), serde_json::json!(tools));
            serde_json::Value::Object(plan)
        }
        calls => serde_json::json!({ "tools": tools, "calls": calls }),
    };
    let mut cmd = Command::new("node");
    cmd.current_dir(&dir)
        .arg("ts_client.mjs")
        .arg(label)
        .arg(plan.to_string())
        .arg(server)
        .args(args);
    run_client(cmd, label, Duration::from_secs(150));
}

/// Drives the tool `plan["tool"]` of `server` (with `args`) as an MCP task
/// with the TypeScript SDK (`tests/node/ts_task.mjs`, 2025-11-25 tasks):
/// the task to its result, a second one (`plan["long_arguments"]`)
/// cancelled, both listed. Returns the report the script prints
/// (`result`: the task's structured result; `statuses`: what `tasks/get`
/// said along the way); `None` without Node.js (when not required).
/// `server` may be the `http://` URL of a streamable HTTP endpoint; then
/// `args` is at most the bearer token to present.
pub fn run_ts_task(
    label: &str,
    plan: &serde_json::Value,
    server: &str,
    args: &[&str],
) -> Option<serde_json::Value> {
    let dir = client_dir()?;
    let mut cmd = Command::new("node");
    cmd.current_dir(&dir)
        .arg("ts_task.mjs")
        .arg(label)
        .arg(plan.to_string())
        .arg(server)
        .args(args);
    let stdout = run_client(cmd, label, Duration::from_secs(150));
    let line = stdout.lines().find(|l| l.starts_with('{'))?;
    serde_json::from_str(line).ok()
}

/// A real OpenID provider (`tests/node/oidc.mjs`, the `oidc-provider`
/// package) on a loopback port, killed when dropped.
pub struct OidcProvider {
    child: std::process::Child,
    /// Its issuer identifier, `http://127.0.0.1:<port>`.
    pub issuer: String,
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the provider for `resource` with one client (`mcp-test`,
/// `secret`, client-credentials grant) that may ask for `scopes`, signing
/// with ES256; `None` (after saying so) without Node.js, when not required.
pub fn start_oidc(resource: &str, secret: &str, scopes: &str) -> Option<OidcProvider> {
    start_oidc_signing(resource, secret, scopes, "ES256")
}

/// [`start_oidc`], signing access tokens with `alg` (`ES256` or `RS256`).
pub fn start_oidc_signing(
    resource: &str,
    secret: &str,
    scopes: &str,
    alg: &str,
) -> Option<OidcProvider> {
    let dir = client_dir()?;
    let mut child = Command::new("node")
        .current_dir(&dir)
        .arg("oidc.mjs")
        .arg(resource)
        .arg(secret)
        .arg(scopes)
        .arg(alg)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let stdout = child.stdout.take()?;
    let Some(issuer) = crate::announce::announced(stdout, "listening ", Duration::from_secs(30))
    else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the OpenID provider did not start within 30 s");
    };
    Some(OidcProvider { child, issuer })
}
