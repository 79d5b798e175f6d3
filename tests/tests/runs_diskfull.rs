//! Disk full: `write_atomic` on a full file system returns the fixed error,
//! keeps the previous content and leaves no temporary file. The file system
//! is a 64 KiB tmpfs mounted in a private mount namespace by the
//! `runs_diskfull` helper process (not inside this multithreaded harness).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHECKS: [&str; 11] = [
    "first write fits",
    "filesystem filled",
    "write_atomic on full fs is NoSpace",
    "previous content intact",
    "no temporary file left",
    "create on full fs is NoSpace",
    "failed create leaves no partial run",
    "run still resolves",
    "space freed",
    "write succeeds once space is free",
    "new content in place",
];

#[test]
fn write_atomic_on_a_full_filesystem() {
    let mnt = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_runs_diskfull"))
        .arg(mnt.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("disk-full helper hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    eprintln!("{out}");
    assert_eq!(
        status.code(),
        Some(0),
        "helper failed (2: no mount namespace, 3: a check failed, 4: no tmpfs):\n{out}"
    );
    for check in CHECKS {
        assert!(
            out.lines().any(|l| l == format!("ok: {check}")),
            "missing check {check:?}:\n{out}"
        );
    }
    // The tmpfs lived only in the helper's namespace: nothing reached the
    // host directory underneath it.
    assert_eq!(std::fs::read_dir(mnt.path()).unwrap().count(), 0);
}
