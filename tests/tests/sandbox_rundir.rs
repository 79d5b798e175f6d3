//! The sandbox on a `RunDir` of the run root: a detached job whose status
//! and logs are persisted in its run directory, and the run root's records
//! (owner record, root key) kept from the solver.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use hardened_mcp::jobs::{
    JOB_STATUS_FILE, JobState, Jobs, RecordedState, STDERR_LOG_FILE, STDOUT_LOG_FILE,
    read_job_record,
};
use hardened_mcp::runs::{FileName, RunRoot};
use hardened_mcp::sandbox::{Requirements, RunRequest, SandboxConfig, Termination, VIEW_RUN_DIR};
use support::*;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detached_job_persists_status_and_logs_in_its_run_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let root = RunRoot::open(tmp.path().join("runs")).unwrap();
    let alice = caller("alice");
    let (handle, dir) = root.create(&alice).unwrap();
    let sb = sandbox();
    let jobs = Jobs::new(4);
    let run = sb
        .launch(
            &alice,
            &dir,
            RunRequest::new("spam").arg("1"),
            &CancellationToken::new(),
        )
        .unwrap();
    let id = jobs
        .start(&alice, run, Some(Arc::new(dir.try_clone().unwrap())))
        .unwrap();
    let t0 = std::time::Instant::now();
    while !matches!(
        jobs.status(&alice, &id).unwrap().state,
        JobState::Finished(_)
    ) {
        assert!(t0.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Another tool, later, finds everything through the handle alone.
    let again = root.resolve(handle.as_str(), &alice).unwrap();
    // The status file is written after the logs; wait for it to say finished.
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(r) = read_job_record(&again)
            && r.state == RecordedState::Finished
        {
            break r;
        }
        assert!(t0.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(status.success);
    // The record is authenticated: its body follows the MAC line.
    let bytes = again.read_bounded(&JOB_STATUS_FILE, 4096).unwrap();
    let body = &bytes[bytes.iter().position(|&b| b == b'\n').unwrap() + 1..];
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(v["stdout_bytes"], (1u64 << 20) + 18);
    let out = again.read_bounded(&STDOUT_LOG_FILE, 1 << 20).unwrap();
    assert!(out.starts_with(b"HEAD-OUT\n") && out.ends_with(b"TAIL-OUT\n"));
    assert!(out.len() < 200 << 10, "only head and tail are persisted");
    let err = again.read_bounded(&STDERR_LOG_FILE, 1 << 20).unwrap();
    assert!(err.starts_with(b"HEAD-ERR\n") && err.ends_with(b"TAIL-ERR\n"));
    let omitted = (1u64 << 20) + 18 - 2 * (64 << 10);
    let marker = format!("\n[hardened-mcp: {omitted} bytes omitted]\n");
    assert!(err.windows(marker.len()).any(|w| w == marker.as_bytes()));
}

/// With `write_only_in`, the server's records in the run directory (here
/// the run root's owner record) are read-only to the solver; the control
/// shows that without it a solver can rewrite them and lose the run for its
/// owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_only_in_protects_the_run_records() {
    const WORK: FileName = FileName::fixed("work");
    let tmp = tempfile::tempdir().unwrap();
    let root = RunRoot::open(tmp.path().join("runs")).unwrap();
    let alice = caller("alice");
    let (handle, dir) = root.create(&alice).unwrap();
    let path = tmp.path().join("runs").join(handle.as_str());
    assert!(
        path.join(".owner").exists(),
        "run layout as expected by this test"
    );
    // The same files by their paths in the solver's view.
    let owner = format!("{VIEW_RUN_DIR}/.owner");
    let inside = format!("{VIEW_RUN_DIR}/work/out.txt");
    let sb = sandbox();
    let t = CancellationToken::new();
    let confined = |target: &str| {
        RunRequest::new("escape")
            .args(["write", target])
            .write_only_in(WORK)
    };
    let o = sb.run(&alice, &dir, confined(&owner), &t).await.unwrap();
    assert_eq!(o.termination, Termination::Exited(1), "{o:?}");
    assert!(root.resolve(handle.as_str(), &alice).is_ok());
    let o = sb.run(&alice, &dir, confined(&inside), &t).await.unwrap();
    assert!(o.success(), "{o:?}");
    // Control: the whole run directory writable.
    let o = sb
        .run(
            &alice,
            &dir,
            RunRequest::new("escape").args(["write", owner.as_str()]),
            &t,
        )
        .await
        .unwrap();
    assert!(o.success(), "{o:?}");
    assert!(
        root.resolve(handle.as_str(), &alice).is_err(),
        "the solver rewrote the owner record"
    );
}

/// A run root under /dev/shm (as the tests and benches use): the solver may
/// not read the root's `.key` (the HMAC key of the owner records), though
/// its own run directory, on /dev/shm too, stays fully usable. Control: the
/// same probe unconfined reads the key. A configuration that makes all of
/// /dev readable (the old default) is refused at launch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_root_under_dev_shm_keeps_its_key_from_the_solver() {
    let shm = std::path::Path::new("/dev/shm");
    assert!(shm.is_dir(), "this host class has /dev/shm");
    let tmp = tempfile::tempdir_in(shm).unwrap();
    let root_path = tmp.path().join("runs");
    let root = RunRoot::open(&root_path).unwrap();
    let alice = caller("alice");
    let (handle, dir) = root.create(&alice).unwrap();
    let key_path = root_path.join(".key");
    assert!(
        key_path.is_file(),
        "run root layout as expected by this test"
    );
    let key = key_path.to_str().unwrap();
    let run_path = root_path.join(handle.as_str());
    std::fs::write(run_path.join("input.txt"), b"deck").unwrap();
    let output = run_path.join("out.txt");
    let (input_in_view, output_in_view) = (
        format!("{VIEW_RUN_DIR}/input.txt"),
        format!("{VIEW_RUN_DIR}/out.txt"),
    );
    let probe = |args: [&str; 2]| RunRequest::new("escape").args(args);
    let t = CancellationToken::new();
    let sb = sandbox();

    let o = sb
        .run(&alice, &dir, probe(["read", key]), &t)
        .await
        .unwrap();
    assert_eq!(o.termination, Termination::Exited(1), "{o:?}");
    let o = sb
        .run(&alice, &dir, probe(["read", &input_in_view]), &t)
        .await
        .unwrap();
    assert!(o.success(), "{o:?}");
    let o = sb
        .run(&alice, &dir, probe(["write", &output_in_view]), &t)
        .await
        .unwrap();
    assert!(o.success(), "{o:?}");
    assert_eq!(std::fs::read(&output).unwrap(), b"escaped");

    let st = std::process::Command::new(ESCAPE)
        .args(["read", key])
        .current_dir(&run_path)
        .stdin(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(0), "control could not read the key");
    // A configuration whose read paths hold the run root (all of /dev, the
    // old default, without the private view) would let the key leak: the
    // sandbox refuses to launch in it.
    let mut read_paths = SandboxConfig::default().read_paths;
    read_paths.push("/dev".into());
    let wide = sandbox_with(SandboxConfig {
        read_paths,
        allow_pid_namespace: false,
        require: Requirements::none(),
        ..SandboxConfig::default()
    });
    let refused = wide.run(&alice, &dir, probe(["read", key]), &t).await;
    assert_eq!(
        refused.err(),
        Some(hardened_mcp::sandbox::SandboxError::RunDirUnusable)
    );
}
