//! The process-group fallback level and the positive control of the tree
//! kill tests: outside a PID namespace, a grandchild that calls `setsid`
//! escapes a process-group kill. These tests leave (and then kill) escaped
//! processes, so they live apart from `sandbox_tree_kill`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hardened_mcp::sandbox::{Limits, Requirements, RunRequest, SandboxConfig, TreeKill};
use support::*;
use tokio_util::sync::CancellationToken;

fn forker(mode: &str, lock: &std::path::Path, wall: Duration) -> RunRequest {
    RunRequest::new("forker")
        .arg(mode)
        .arg(lock)
        .limits(Limits {
            wall_time: wall,
            ..Limits::default()
        })
}

/// Positive control: outside the sandbox, killing the solver's process
/// group (what killpg-based kill-on-drop does) leaves the setsid grandchild
/// holding the lock. Without this, the tests above would prove nothing.
#[test]
fn control_killpg_misses_the_setsid_grandchild() {
    let (dir, _rundir) = run_dir();
    let lock = dir.path().join("tree.lock");
    let mut child = std::os::unix::process::CommandExt::process_group(
        Command::new(FORKER)
            .arg("hang")
            .arg(&lock)
            .stdout(Stdio::piped()),
        0,
    )
    .spawn()
    .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.starts_with("READY 2"), "{line:?}");
    let pgid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL).unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let survived = !lock_is_free(&lock);
    kill_pids(&holder_pids(dir.path()));
    assert!(
        survived,
        "the control did not escape: the probe proves nothing"
    );
}

/// The process-group level, as reported: the run still ends within its
/// time limit plus the log grace even though an escaped grandchild holds
/// the pipes, and the report says the logs were abandoned. Without the
/// run's cgroup too: its removal after the run kills what is left in it,
/// the escaped grandchild included, at a moment this test cannot order
/// against its check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_group_level_is_reported_and_cannot_hang_the_server() {
    let sb = sandbox_with(SandboxConfig {
        allow_pid_namespace: false,
        allow_cgroups: false,
        require: Requirements::none(),
        ..SandboxConfig::default()
    });
    assert_eq!(sb.containment().tree_kill, TreeKill::ProcessGroup);
    assert!(sb.containment().to_string().contains("setsid escapes"));
    let (dir, rundir) = run_dir();
    let lock = dir.path().join("tree.lock");
    let t0 = Instant::now();
    let out = sb
        .run(
            &caller("g"),
            &rundir,
            forker("hang", &lock, Duration::from_secs(2)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let took = t0.elapsed();
    let leftovers = holder_pids(dir.path());
    let escaped = !lock_is_free(&lock);
    kill_pids(&leftovers);
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(out.timed_out);
    assert!(!out.logs_complete, "the escaped grandchild held the pipes");
    assert!(
        escaped,
        "documented limitation: setsid escapes a process-group kill"
    );
}
