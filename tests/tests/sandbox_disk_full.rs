//! Disk full: a run whose directory is on a full file system ends with the
//! fixed "out of disk space" error while a run elsewhere, at the same time,
//! succeeds. The tmpfs is mounted by a helper process in its own mount
//! namespace (never inside the multithreaded test harness).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn full_run_dir_gives_a_fixed_error_and_other_runs_are_unaffected() {
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private"])
        .arg(env!("CARGO_BIN_EXE_sbx_diskfull"))
        .arg(env!("CARGO_BIN_EXE_sbx_escape"))
        .output()
        .expect("unshare runs (util-linux; tests run as root)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "helper failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
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
