//! The Slurm launcher against a real single-node cluster (`.ci/slurm-up`
//! starts one: munged, slurmctld, slurmd). Runs go through `sbatch`, the
//! fixed batch script and the node helper, which applies the same sandbox
//! as a local run. Without a cluster these tests say so and pass, except
//! where `HARDENED_MCP_REQUIRE_SLURM` is set (CI sets it): there they fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_support/mod.rs"]
mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use hardened_mcp::jobs::{BATCH_SCRIPT_FILE, Launcher, SLURM_JOB_FILE, SlurmConfig};
use hardened_mcp::sandbox::{
    LimitHit, Limits, RunRequest, Sandbox, SandboxConfig, SandboxError, VIEW_RUN_DIR,
};
use hardened_mcp_tests::slurm::cluster;
use support::{ESCAPE, FORKER, caller, holder_pids, lock_acquired_within, run_dir};
use tokio_util::sync::CancellationToken;

const NODE: &str = env!("CARGO_BIN_EXE_slurm_node");
const HOG: &str = env!("CARGO_BIN_EXE_sbx_hog");

fn slurm_launcher(per_caller_runs: usize) -> Launcher {
    let mut slurm = SlurmConfig::new(NODE);
    slurm.poll_interval = Duration::from_millis(200);
    let registry = hardened_mcp::sandbox::SolverRegistry::builder()
        .solver("escape", ESCAPE)
        .solver("forker", FORKER)
        .solver("hog", HOG)
        .build()
        .unwrap();
    let sandbox = Sandbox::new(
        registry,
        SandboxConfig {
            per_caller_runs,
            ..SandboxConfig::default()
        },
    )
    .unwrap();
    Launcher::slurm(sandbox, slurm).unwrap()
}

/// The one file of the run directory whose name starts with `prefix`.
fn file_with_prefix(dir: &Path, prefix: &str) -> std::path::PathBuf {
    let found: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    assert_eq!(found.len(), 1, "{prefix}*: {found:?}");
    found.into_iter().next().unwrap()
}

/// The job id of the run's job record (`<hmac>\n<id> <nonce>`).
fn recorded_job(dir: &Path) -> String {
    let record = std::fs::read_to_string(dir.join(SLURM_JOB_FILE.as_str())).unwrap();
    let body = record.lines().nth(1).unwrap();
    body.split(' ').next().unwrap().to_owned()
}

fn limits(wall_s: u64) -> Limits {
    Limits {
        wall_time: Duration::from_secs(wall_s),
        ..Limits::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_completes_on_the_cluster_under_the_same_sandbox() {
    if !cluster() {
        return;
    }
    let (run, dir) = run_dir();
    let sb = slurm_launcher(2);
    let out = format!("{VIEW_RUN_DIR}/out.txt");
    let running = sb
        .launch(
            &caller("slurm"),
            &dir,
            RunRequest::new("escape")
                .args(["write", &out])
                .limits(limits(60)),
            &CancellationToken::new(),
        )
        .unwrap();
    let job = running.slurm_job().expect("a slurm job");
    assert_eq!(
        recorded_job(run.path()),
        job.to_string(),
        "the handle → job mapping is persisted"
    );
    let o = tokio::time::timeout(Duration::from_secs(120), running.wait())
        .await
        .expect("the job ends");
    let helper_log =
        std::fs::read_to_string(file_with_prefix(run.path(), "slurm-stderr-")).unwrap_or_default();
    assert!(o.success(), "{o:?}\nhelper: {helper_log}");
    assert_eq!(
        std::fs::read(run.path().join("out.txt")).unwrap(),
        b"escaped"
    );
    // On the node the helper ran the solver under every local layer.
    assert!(
        helper_log.contains("private view") && helper_log.contains("seccomp: filter on"),
        "{helper_log}"
    );

    // The same confinement holds there: writing outside the run is refused.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let o = sb
        .run(
            &caller("slurm"),
            &dir,
            RunRequest::new("escape")
                .args(["write", target.to_str().unwrap()])
                .limits(limits(60)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        o.termination,
        hardened_mcp::sandbox::Termination::Exited(1),
        "{o:?}"
    );
    assert!(!target.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_comes_back_bounded_after_the_job() {
    if !cluster() {
        return;
    }
    let (_run, dir) = run_dir();
    let o = slurm_launcher(2)
        .run(
            &caller("slurm"),
            &dir,
            RunRequest::new("escape")
                .args(["progress", "5"])
                .limits(limits(60)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(o.success(), "{o:?}");
    let text = String::from_utf8_lossy(o.stdout.head.as_untrusted_bytes()).into_owned();
    assert!(text.contains("PROGRESS 5 5"), "{text}");
}

/// A cancelled job leaves no process behind on the node: every holder of
/// the forker's lock (one after `setsid` and a double fork) is dead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_job_leaves_no_process() {
    if !cluster() {
        return;
    }
    let (run, dir) = run_dir();
    let lock = format!("{VIEW_RUN_DIR}/tree.lock");
    let cancel = CancellationToken::new();
    let running = slurm_launcher(2)
        .launch(
            &caller("slurm"),
            &dir,
            RunRequest::new("forker")
                .args(["hang", &lock])
                .limits(limits(120)),
            &cancel,
        )
        .unwrap();
    let t0 = Instant::now();
    while holder_pids(run.path()).len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the job never started its holders"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let lock_path = run.path().join("tree.lock");
    cancel.cancel();
    let o = tokio::time::timeout(Duration::from_secs(90), running.wait())
        .await
        .expect("the cancelled job ends");
    assert!(o.cancelled, "{o:?}");
    assert!(
        lock_acquired_within(&lock_path, Duration::from_secs(10)),
        "a holder survived the cancellation"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wall_limit_ends_a_job() {
    if !cluster() {
        return;
    }
    let (_run, dir) = run_dir();
    let t0 = Instant::now();
    let o = slurm_launcher(2)
        .run(
            &caller("slurm"),
            &dir,
            RunRequest::new("escape")
                .args(["sleep", "60000"])
                .limits(limits(2)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(o.timed_out, "{o:?}");
    assert_eq!(o.error(), Some(SandboxError::TimedOut));
    assert!(t0.elapsed() < Duration::from_secs(50), "{:?}", t0.elapsed());
}

/// A hostile argument value travels in the run spec (data), never in a file
/// Slurm executes: not in the batch script, not in the job's stored script,
/// not in the job's name or command line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_argument_never_reaches_what_slurm_executes() {
    if !cluster() {
        return;
    }
    let (run, dir) = run_dir();
    let canary = "CANARY9q2'\"; touch /tmp/pwned-$(id -u) `reboot` \n#";
    let running = slurm_launcher(2)
        .launch(
            &caller("slurm"),
            &dir,
            RunRequest::new("escape")
                .args(["env", canary])
                .limits(limits(60)),
            &CancellationToken::new(),
        )
        .unwrap();
    let job = running.slurm_job().unwrap();
    let o = running.wait().await;
    assert_eq!(
        o.termination,
        hardened_mcp::sandbox::Termination::Exited(1),
        "{o:?}"
    );
    let script = std::fs::read(run.path().join(BATCH_SCRIPT_FILE.as_str())).unwrap();
    let needle = b"CANARY9q2";
    let has = |bytes: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(!has(&script), "the batch script holds caller text");
    let stored = Command::new("scontrol")
        .args(["write", "batch_script", &job.to_string(), "-"])
        .output()
        .unwrap();
    assert!(stored.status.success() && !stored.stdout.is_empty());
    assert!(
        !has(&stored.stdout),
        "the job's stored script holds caller text"
    );
    let shown = Command::new("scontrol")
        .args(["show", "job", &job.to_string()])
        .output()
        .unwrap();
    assert!(!has(&shown.stdout), "the job record holds caller text");
    // The value is in the spec, as data.
    let spec = std::fs::read(file_with_prefix(run.path(), "slurm-spec-")).unwrap();
    assert!(has(&spec), "control: the spec carries the argument");
    assert!(!Path::new("/tmp/pwned-0").exists());
}

/// A spec that does not carry the run root's authentication is refused by
/// the helper before anything runs. Control: the authentic spec runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_helper_refuses_a_forged_spec() {
    if !cluster() {
        return;
    }
    let (run, dir) = run_dir();
    let out = format!("{VIEW_RUN_DIR}/forged.txt");
    let o = slurm_launcher(2)
        .run(
            &caller("slurm"),
            &dir,
            RunRequest::new("escape")
                .args(["write", &out])
                .limits(limits(60)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(o.success(), "control: {o:?}");
    std::fs::remove_file(run.path().join("forged.txt")).unwrap();
    let spec_path = file_with_prefix(run.path(), "slurm-spec-");
    // Same spec with the argument changed and the old MAC line kept.
    let spec = std::fs::read_to_string(&spec_path).unwrap();
    assert!(spec.contains("forged.txt"));
    std::fs::write(&spec_path, spec.replace("forged.txt", "forger.txt")).unwrap();
    let st = Command::new(NODE).arg(&spec_path).status().unwrap();
    assert_eq!(st.code(), Some(2), "the helper ran a forged spec");
    assert!(!run.path().join("forger.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_and_running_jobs_count_against_the_callers_ceiling() {
    if !cluster() {
        return;
    }
    let (_r1, d1) = run_dir();
    let (_r2, d2) = run_dir();
    let sb = slurm_launcher(1);
    let first = sb
        .launch(
            &caller("slurm-ceiling"),
            &d1,
            RunRequest::new("escape")
                .args(["sleep", "1000"])
                .limits(limits(60)),
            &CancellationToken::new(),
        )
        .unwrap();
    let second = sb.launch(
        &caller("slurm-ceiling"),
        &d2,
        RunRequest::new("escape")
            .args(["sleep", "1"])
            .limits(limits(60)),
        &CancellationToken::new(),
    );
    assert_eq!(second.err(), Some(SandboxError::CallerBusy));
    assert!(first.wait().await.success());
}

/// The node helper applies the run's envelope in a cgroup of its own on the
/// node (this cluster has no Slurm cgroup plugin: `proctrack/linuxproc`,
/// `task/none`), and the job asked Slurm for the run's memory and CPUs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_helper_applies_the_runs_envelope() {
    if !cluster() {
        return;
    }
    let sb = slurm_launcher(2);
    let small = Limits {
        memory: 128 << 20,
        ..limits(60)
    };
    let (run, dir) = run_dir();
    let running = sb
        .launch(
            &caller("slurm-envelope"),
            &dir,
            RunRequest::new("hog").args(["mem", "512"]).limits(small),
            &CancellationToken::new(),
        )
        .unwrap();
    let job = running.slurm_job().expect("a slurm job").to_string();
    let o = tokio::time::timeout(Duration::from_secs(120), running.wait())
        .await
        .expect("the job ends");
    let helper_log =
        std::fs::read_to_string(file_with_prefix(run.path(), "slurm-stderr-")).unwrap_or_default();
    assert_eq!(
        o.limit,
        Some(LimitHit::Memory),
        "{o:?}\nhelper: {helper_log}"
    );
    assert_eq!(o.error(), Some(SandboxError::MemoryLimit));
    assert!(
        helper_log.contains("envelope: cgroup"),
        "the helper's containment line names its backend: {helper_log}"
    );
    // 128 MiB for the run, 64 MiB for the helper; one CPU for one core.
    let shown = Command::new("scontrol")
        .args(["show", "job", "--oneliner", &job])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if !shown.is_empty() {
        assert!(shown.contains("MinMemoryNode=192M"), "{shown}");
        assert!(shown.contains("NumCPUs=1"), "{shown}");
    }
    // Control: with room for it, the same run succeeds on the node.
    let (_run, dir) = run_dir();
    let roomy = Limits {
        memory: 1 << 30,
        ..limits(60)
    };
    let o = sb
        .run(
            &caller("slurm-envelope"),
            &dir,
            RunRequest::new("hog").args(["mem", "512"]).limits(roomy),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(o.success(), "{o:?}");
}
