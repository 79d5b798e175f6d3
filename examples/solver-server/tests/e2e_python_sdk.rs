//! End to end with the official MCP Python SDK: runs
//! `tests/python/test_e2e.py` against the built `solver-server` binary, once
//! over stdio and once over streamable HTTP with bearer tokens.
//!
//! The SDK lives in a venv (`target/mcp-venv`, or `$HARDENED_MCP_VENV`) that
//! `.ci/setup-python` creates with the pinned `mcp` package; this test runs
//! that script itself when the venv is missing, so `cargo test` works on a
//! fresh machine with access to the package registries.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_solver-server");
const SOLVER: &str = env!("CARGO_BIN_EXE_heat1d");

/// Upper bound of one script run, against hangs only.
const BUDGET: Duration = Duration::from_secs(240);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the example sits two levels below the workspace")
        .to_path_buf()
}

/// The venv's python, created by `.ci/setup-python` on first use.
fn python() -> PathBuf {
    static SETUP: Mutex<()> = Mutex::new(());
    let _once = SETUP.lock().unwrap_or_else(|p| p.into_inner());
    let venv = std::env::var_os("HARDENED_MCP_VENV")
        .map_or_else(|| workspace().join("target/mcp-venv"), PathBuf::from);
    let python = venv.join("bin/python");
    let ready = || {
        Command::new(&python)
            .args(["-c", "import mcp, httpx2, jsonschema, anyio"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ready() {
        let status = Command::new("bash")
            .arg(workspace().join(".ci/setup-python"))
            .env("HARDENED_MCP_VENV", &venv)
            .status()
            .expect("run .ci/setup-python");
        assert!(
            status.success() && ready(),
            ".ci/setup-python could not create the venv with the pinned MCP SDK"
        );
    }
    python
}

/// Runs the script for one transport; fails with its output on any failed check.
fn run_script(transport: &str) {
    let mut child = Command::new(python())
        .arg(workspace().join("tests/python/test_e2e.py"))
        .args([
            "--server",
            SERVER,
            "--solver",
            SOLVER,
            "--transport",
            transport,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start python");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + BUDGET;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (stdout, stderr) = (out_reader.join().unwrap(), err_reader.join().unwrap());
    print!("{stdout}");
    eprint!("{stderr}");
    let status = status.unwrap_or_else(|| panic!("{transport}: the script exceeded {BUDGET:?}"));
    assert!(
        status.success(),
        "{transport}: the Python SDK checks failed"
    );
    assert!(
        stdout.contains(&format!("ok: {transport}")),
        "{transport}: the script did not report success"
    );
}

#[test]
fn python_sdk_over_stdio() {
    run_script("stdio");
}

#[test]
fn python_sdk_over_http_with_tokens() {
    run_script("http");
}
