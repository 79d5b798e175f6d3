//! Whole-tree kill: a solver whose descendants (one of them after `setsid`
//! and a double fork) hold a lock file. After a timeout, a cancellation, a
//! drop or a normal exit, the lock must be free: every holder is dead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use hardened_mcp::sandbox::{
    Limits, Outcome, RunRequest, SandboxedRun, Termination, TreeKill, VIEW_RUN_DIR,
};
use support::*;
use tokio_util::sync::CancellationToken;

/// The tests of this file run one at a time, so that "no `sbx_forker`
/// process exists" is a statement about the test that checks it.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The forker, holding `lock` (a file of the run directory), which it
/// names by its path in the solver's view.
fn forker(mode: &str, lock: &std::path::Path, wall: Duration) -> RunRequest {
    let in_view = std::path::Path::new(VIEW_RUN_DIR).join(lock.file_name().unwrap());
    RunRequest::new("forker")
        .arg(mode)
        .arg(in_view)
        .limits(Limits {
            wall_time: wall,
            ..Limits::default()
        })
}

async fn wait_ready(run: &SandboxedRun) {
    let log = run.stdout_log();
    let t0 = Instant::now();
    while !log
        .snapshot()
        .head
        .as_untrusted_bytes()
        .starts_with(b"READY")
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "forker never got ready"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn assert_ready_with_two_holders(stdout: &[u8], dir: &std::path::Path) {
    assert!(
        stdout.starts_with(b"READY 2"),
        "{:?}",
        String::from_utf8_lossy(stdout)
    );
    assert_eq!(holder_pids(dir).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_the_whole_tree_including_setsid_grandchild() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    assert_eq!(
        sb.containment().tree_kill,
        TreeKill::PidNamespace,
        "host supports PID namespaces"
    );
    let (dir, rundir) = run_dir();
    let lock = dir.path().join("tree.lock");
    let wall = Duration::from_secs(2);
    let t0 = Instant::now();
    let run = sb
        .launch(
            &caller("t"),
            &rundir,
            forker("hang", &lock, wall),
            &CancellationToken::new(),
        )
        .unwrap();
    let monitor = run.monitor_pid().unwrap();
    let out = run.wait().await;
    let took = t0.elapsed();
    assert!(
        took >= wall && took < wall + Duration::from_secs(3),
        "{took:?}"
    );
    assert!(out.timed_out && !out.cancelled);
    assert_eq!(out.termination, Termination::Killed);
    assert!(
        out.logs_complete,
        "no pipe holder can outlive the namespace"
    );
    assert_ready_with_two_holders(out.stdout.head.as_untrusted_bytes(), dir.path());
    assert!(lock_is_free(&lock), "a holder survived the kill");
    assert!(lock_acquired_within(&lock, Duration::from_secs(1)));
    assert!(
        reaped_within(monitor, Duration::from_secs(2)),
        "monitor left unreaped"
    );
    assert!(
        processes_named("sbx_forker").is_empty(),
        "{:?}",
        processes_named("sbx_forker")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_kills_the_whole_tree() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (dir, rundir) = run_dir();
    let lock = dir.path().join("tree.lock");
    let cancel = CancellationToken::new();
    let run = sb
        .launch(
            &caller("c"),
            &rundir,
            forker("hang", &lock, Duration::from_secs(30)),
            &cancel,
        )
        .unwrap();
    let monitor = run.monitor_pid().unwrap();
    wait_ready(&run).await;
    assert!(!lock_is_free(&lock), "holders hold the lock while running");
    let t0 = Instant::now();
    cancel.cancel();
    let out = run.wait().await;
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(out.cancelled && !out.timed_out);
    assert_eq!(out.termination, Termination::Killed);
    assert!(
        out.logs_complete,
        "no pipe holder can outlive the namespace"
    );
    assert_ready_with_two_holders(out.stdout.head.as_untrusted_bytes(), dir.path());
    assert!(lock_is_free(&lock), "a holder survived the cancellation");
    assert!(lock_acquired_within(&lock, Duration::from_secs(1)));
    assert!(
        reaped_within(monitor, Duration::from_secs(2)),
        "monitor left unreaped"
    );
    let left = processes_named("sbx_forker");
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_run_kills_the_whole_tree() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (dir, rundir) = run_dir();
    let lock = dir.path().join("tree.lock");
    let run = sb
        .launch(
            &caller("d"),
            &rundir,
            forker("hang", &lock, Duration::from_secs(30)),
            &CancellationToken::new(),
        )
        .unwrap();
    wait_ready(&run).await;
    drop(run);
    assert!(
        lock_acquired_within(&lock, Duration::from_secs(5)),
        "a holder survived the drop"
    );
    assert_eq!(sb.limiter().in_use(), 0, "the slot is returned on drop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_die_when_the_solver_exits() {
    let _serial = SERIAL.lock().await;
    let (dir, out) = forker_to_its_end("exit").await;
    assert!(out.success());
    assert!(out.cpu_time.is_some());
    assert_ready_with_two_holders(out.stdout.head.as_untrusted_bytes(), dir.path());
    assert_tree_dead(&dir.path().join("tree.lock"));
}

/// Runs the forker in `mode` to its end (it exits 0 on its own).
async fn forker_to_its_end(mode: &str) -> (RunPath, Outcome) {
    let sb = sandbox();
    let (dir, rundir) = run_dir();
    let lock = dir.path().join("tree.lock");
    let out = sb
        .run(
            &caller("e"),
            &rundir,
            forker(mode, &lock, Duration::from_secs(30)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    (dir, out)
}

/// Right after the answer: no holder of `lock` and no forker is alive.
fn assert_tree_dead(lock: &std::path::Path) {
    assert!(lock_is_free(lock), "a holder outlived the answer");
    let left = processes_named("sbx_forker");
    assert!(left.is_empty(), "{left:?}");
}

/// The solver exits while its leftovers are still forking (two breeders,
/// each in a session of its own, starting holders without pause, none of
/// them holding a log pipe, so the logs end with the solver): the answer
/// comes only once every one of them is dead, those born during the kill
/// included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_forking_while_the_solver_exits_die_before_the_answer() {
    let _serial = SERIAL.lock().await;
    let (dir, out) = forker_to_its_end("storm").await;
    let stdout = String::from_utf8_lossy(out.stdout.head.as_untrusted_bytes()).into_owned();
    let holders: usize = stdout
        .strip_prefix("READY ")
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    // The positive control: the storm was under way (holders alive and
    // holding the lock) when the solver exited.
    assert!(holders >= 4, "{stdout:?}");
    assert_tree_dead(&dir.path().join("tree.lock"));
}

/// The monitor is reaped in the background right after the answer (its
/// exit tears the run's namespaces down): its pid is gone soon after.
fn reaped_within(pid: u32, limit: Duration) -> bool {
    let t0 = Instant::now();
    while pid_exists(pid) {
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}
