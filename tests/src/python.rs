//! Running a script of `tests/python/` with the official MCP Python SDK,
//! from any crate's tests: the pinned venv (`target/mcp-venv`, or
//! `$HARDENED_MCP_VENV`) is created by `.ci/setup-python` on first use, so
//! `cargo test` works on a fresh machine with access to the package
//! registries. Bounded in time; the script's output is shown.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The workspace root (this crate sits one level below it).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The venv's python, created by `.ci/setup-python` when it is missing or
/// lacks the SDK. Panics (a test helper) when it cannot be created.
pub fn python() -> PathBuf {
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
            .status();
        assert!(
            status.is_ok_and(|s| s.success()) && ready(),
            ".ci/setup-python could not create the venv with the pinned MCP SDK"
        );
    }
    python
}

/// Runs `tests/python/<script>` with `args` under `budget`; fails with its
/// output unless it exits 0 and prints `ok: <label>`.
pub fn run_script(script: &str, args: &[&str], label: &str, budget: Duration) {
    let mut cmd = Command::new(python());
    cmd.arg(workspace().join("tests/python").join(script))
        .args(args);
    run_client(cmd, label, budget);
}

/// Runs a client process (a script of another test language) with its
/// output captured, killed at `budget`; fails with its output unless it
/// exits 0 and prints `ok: <label>`.
pub fn run_client(mut cmd: Command, label: &str, budget: Duration) -> String {
    let spawned = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = spawned else {
        panic!("{label}: cannot start the client");
    };
    let reader = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = reader(child.stdout.take().map(|p| Box::new(p) as _));
    let err = reader(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + budget;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    print!("{stdout}");
    eprint!("{stderr}");
    let Some(status) = status else {
        panic!("{label}: the script exceeded {budget:?}");
    };
    assert!(status.success(), "{label}: the client's checks failed");
    assert!(
        stdout.contains(&format!("ok: {label}")),
        "{label}: the script did not report success"
    );
    stdout
}
