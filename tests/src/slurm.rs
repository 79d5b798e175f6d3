//! Whether the tests have a Slurm cluster (`.ci/slurm-up` starts a
//! single-node one), for any crate's tests.

use std::process::Command;
use std::time::{Duration, Instant};

/// How long [`cluster`] waits for a node that is momentarily unusable (one
/// that is `down` while `slurmd` re-registers, say) before it decides.
const SETTLE: Duration = Duration::from_secs(20);

/// Whether `sinfo` shows a usable node. Without one the caller's test says
/// so and passes, except where `HARDENED_MCP_REQUIRE_SLURM` is set (CI):
/// there this panics.
///
/// A node that is busy with another test's job is usable: `allocated`,
/// `mixed`, and `completing` (a cancelled job's processes still being
/// reaped, which the tests that cancel jobs cause for a second or two) all
/// accept new jobs, which then queue. Only a node the controller will not
/// schedule on counts as none; see `usable`.
pub fn cluster() -> bool {
    let required = std::env::var_os("HARDENED_MCP_REQUIRE_SLURM").is_some();
    let Some(first) = states() else {
        // No sinfo, or no controller answering it: no cluster to wait for.
        assert!(
            !required,
            "a Slurm cluster is required here (HARDENED_MCP_REQUIRE_SLURM is set) but sinfo does not answer"
        );
        eprintln!("no Slurm cluster: skipped");
        return false;
    };
    let deadline = Instant::now() + SETTLE;
    let mut seen = first;
    while !seen.iter().any(|s| usable(s)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        seen = states().unwrap_or_default();
    }
    let up = seen.iter().any(|s| usable(s));
    assert!(
        up || !required,
        "a Slurm cluster is required here (HARDENED_MCP_REQUIRE_SLURM is set) but sinfo shows no usable node: {seen:?}"
    );
    if !up {
        eprintln!("no usable Slurm node ({seen:?}): skipped");
    }
    up
}

/// The nodes' states as `sinfo` prints them (`%T`, one per line), or `None`
/// when `sinfo` is missing or fails.
fn states() -> Option<Vec<String>> {
    let out = Command::new("sinfo")
        .args(["--noheader", "--format=%T"])
        .output()
        .ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect()
    })
}

/// Whether a node in state `state` (sinfo's `%T`) takes jobs: not down,
/// drained, failed or powered off, and responding (no `*` suffix).
fn usable(state: &str) -> bool {
    if state.ends_with('*') {
        return false;
    }
    let base = state.trim_end_matches(|c: char| !c.is_ascii_alphabetic() && c != '_');
    !matches!(
        base,
        "down"
            | "drained"
            | "draining"
            | "drain"
            | "fail"
            | "failing"
            | "future"
            | "inval"
            | "unknown"
            | "powered_down"
            | "powering_down"
            | "powering_up"
            | "maint"
            | "reboot_issued"
            | "reboot_requested"
    )
}

#[cfg(test)]
mod tests {
    use super::usable;

    #[test]
    fn busy_nodes_are_usable_and_unschedulable_ones_are_not() {
        for s in [
            "idle",
            "mixed",
            "allocated",
            "completing",
            "allocated+",
            "planned",
        ] {
            assert!(usable(s), "{s}");
        }
        for s in [
            "down",
            "down*",
            "idle*",
            "drained",
            "draining",
            "fail",
            "unknown",
            "powered_down~",
        ] {
            assert!(!usable(s), "{s}");
        }
    }
}
