//! Replicas with real processes: three `solver-server serve --http`
//! processes on loopback over one run root, driven by the official MCP
//! Python SDK (`tests/python/test_replicas.py`) in both protocol eras, with
//! local runs and through the single-node Slurm cluster of
//! `.ci/slurm-up`; one replica is killed with SIGKILL mid-run.
//!
//! The Slurm tests say so and pass without a cluster, except where
//! `HARDENED_MCP_REQUIRE_SLURM` is set (CI): there they fail.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use hardened_mcp_tests::python::run_script;
use hardened_mcp_tests::slurm::cluster;

const SERVER: &str = env!("CARGO_BIN_EXE_solver-server");
const SOLVER: &str = env!("CARGO_BIN_EXE_heat1d");

/// Upper bound of one script run, against hangs only.
const BUDGET: Duration = Duration::from_secs(480);

fn run(launcher: &str, era: &str) {
    // On disk, not in a tmpfs: the Slurm launcher refuses a run root the
    // nodes cannot share.
    let tmp = env!("CARGO_TARGET_TMPDIR");
    run_script(
        "test_replicas.py",
        &[
            "--server",
            SERVER,
            "--solver",
            SOLVER,
            "--launcher",
            launcher,
            "--era",
            era,
            "--tmp",
            tmp,
        ],
        &format!("3 replicas {launcher} {era}"),
        BUDGET,
    );
}

#[test]
fn three_replicas_with_local_runs_2026_era() {
    run("local", "modern");
}

#[test]
fn three_replicas_with_local_runs_2025_era() {
    run("local", "legacy");
}

#[test]
fn three_replicas_through_slurm_2026_era() {
    if cluster() {
        run("slurm", "modern");
    }
}

#[test]
fn three_replicas_through_slurm_2025_era() {
    if cluster() {
        run("slurm", "legacy");
    }
}
