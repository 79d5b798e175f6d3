//! The heat example through Slurm: `solver-server demo --launcher slurm`
//! submits its run as a batch job whose node helper is the server binary
//! itself (`node` mode), applying the same sandbox; the result is checked
//! against the exact solution. Needs the single-node cluster of
//! `.ci/slurm-up`; without one the test says so and passes, except where
//! `HARDENED_MCP_REQUIRE_SLURM` is set (CI): there it fails.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;

const SERVER: &str = env!("CARGO_BIN_EXE_solver-server");
const SOLVER: &str = env!("CARGO_BIN_EXE_heat1d");

fn cluster() -> bool {
    let up = Command::new("sinfo")
        .args(["--noheader", "--format=%T"])
        .output()
        .is_ok_and(|o| {
            o.status.success()
                && String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|l| matches!(l.trim(), "idle" | "mixed" | "allocated"))
        });
    if !up {
        assert!(
            std::env::var_os("HARDENED_MCP_REQUIRE_SLURM").is_none(),
            "a Slurm cluster is required here (HARDENED_MCP_REQUIRE_SLURM is set)"
        );
        eprintln!("no Slurm cluster: skipped");
    }
    up
}

#[test]
fn a_heat_run_through_slurm_matches_the_exact_solution() {
    if !cluster() {
        return;
    }
    // On disk, not in a tmpfs: the launcher refuses a run root nodes cannot share.
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = Command::new(SERVER)
        .args(["demo", "--launcher", "slurm", "--solver", SOLVER])
        .arg("--run-root")
        .arg(tmp.path().join("runs"))
        .arg("--plot")
        .arg(tmp.path().join("plot.png"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("state: \"succeeded\""), "{stdout}");
    let l2: f64 = stdout
        .split("L2 error ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN);
    assert!(l2 < 1e-6, "L2 error {l2}: {stdout}");
    assert!(
        std::fs::metadata(tmp.path().join("plot.png"))
            .unwrap()
            .len()
            > 0
    );
}
