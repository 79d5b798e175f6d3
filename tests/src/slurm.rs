//! Whether the tests have a Slurm cluster (`.ci/slurm-up` starts a
//! single-node one), for any crate's tests.

use std::process::Command;

/// Whether `sinfo` shows a usable node. Without one the caller's test says
/// so and passes, except where `HARDENED_MCP_REQUIRE_SLURM` is set (CI):
/// there this panics.
pub fn cluster() -> bool {
    let up = Command::new("sinfo")
        .args(["--noheader", "--format=%T"])
        .output()
        .is_ok_and(|o| {
            o.status.success()
                && String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|l| matches!(l.trim(), "idle" | "mixed" | "allocated"))
        });
    assert!(
        up || std::env::var_os("HARDENED_MCP_REQUIRE_SLURM").is_none(),
        "a Slurm cluster is required here (HARDENED_MCP_REQUIRE_SLURM is set) but sinfo shows no usable node"
    );
    if !up {
        eprintln!("no Slurm cluster: skipped");
    }
    up
}
