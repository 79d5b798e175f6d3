//! Disk full: a run whose directory is on a full file system ends with the
//! fixed "out of disk space" error while a run elsewhere, at the same time,
//! succeeds. The tmpfs is mounted by a helper process in its own mount
//! namespace (never inside the multithreaded test harness): `unshare
//! --mount` as root, else `unshare --user --map-root-user --mount`, so the
//! test also runs unprivileged where user namespaces are allowed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use hardened_mcp_tests::UNSHARE_ATTEMPTS as ATTEMPTS;

/// Runs the helper under the first `unshare` that lets it complete.
fn run_helper() -> Output {
    let mut failures = Vec::new();
    for flags in ATTEMPTS {
        let out = Command::new("unshare")
            .args(flags)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_sbx_diskfull"))
            .arg(env!("CARGO_BIN_EXE_sbx_escape"))
            .output()
            .expect("unshare runs (util-linux)");
        if out.status.success() {
            return out;
        }
        failures.push(format!(
            "unshare {flags:?}: {}: {} {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    panic!("no mount namespace for the helper: {failures:#?}");
}

#[test]
fn full_run_dir_gives_a_fixed_error_and_other_runs_are_unaffected() {
    let out = run_helper();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("full=the run ran out of disk space\n"),
        "{stdout}"
    );
    assert!(stdout.contains("other=ok\n"), "{stdout}");
}

/// Positive control: the same writer succeeds unsandboxed on a file system
/// with room, so the failure above is the full disk, not the probe.
#[test]
fn control_same_writer_with_room_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new(env!("CARGO_BIN_EXE_sbx_escape"))
        .args(["fsize", "1048576"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(st.success());
}
