//! The demo mode (the README's first command) runs to completion: a real
//! run, the plot written, every hostile call refused with its fixed error.
//! Once with the separate `heat1d` executable, once with the server binary
//! as its own solver (what `cargo run -p solver-server -- demo` uses, since
//! `cargo run` builds only the server binary).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_solver-server");
const SOLVER: &str = env!("CARGO_BIN_EXE_heat1d");

/// Upper bound of one demo, against hangs only.
const BUDGET: Duration = Duration::from_secs(300);

fn demo(solver: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let plot = tmp.path().join("profile.png");
    let mut child = Command::new(SERVER)
        .arg("demo")
        .arg("--run-root")
        .arg(tmp.path().join("runs"))
        .arg("--plot")
        .arg(&plot)
        .arg("--solver")
        .arg(solver)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > BUDGET {
            let _ = child.kill();
            panic!("the demo exceeded {BUDGET:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed: {stdout}\n{stderr}");
    let png = std::fs::read(&plot).expect("the plot was saved");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    stdout
}

fn assert_complete(stdout: &str) {
    assert!(stdout.contains("state: \"succeeded\""), "{stdout}");
    assert!(stdout.contains("untrusted"), "{stdout}");
    for what in [
        "path-traversal handle",
        "NaN-like string",
        "bool for a number",
        "oversized mesh",
        "unstable time step",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(what))
            .unwrap_or_else(|| panic!("no `{what}` line: {stdout}"));
        assert!(line.contains("->") && !line.contains("ACCEPTED"), "{line}");
    }
    assert!(stdout.contains("unknown run handle"), "{stdout}");
}

#[test]
fn demo_with_the_heat1d_executable() {
    assert_complete(&demo(SOLVER));
}

#[test]
fn demo_with_the_server_binary_as_its_own_solver() {
    assert_complete(&demo(SERVER));
}
