//! The resource envelope against a hostile solver (`sbx_hog`): each attack
//! is run under the sandbox, where the run's envelope must stop it with the
//! limit named in the outcome, and as a plain process (the positive
//! control), where the same program goes past that limit. While each
//! attack runs, the host stays usable: it forks, and a second sandboxed run
//! (another caller's) is launched and answered.
//!
//! The tests run one at a time (a lock): the CPU-share measurement must not
//! compete with a memory bomb for the machine's cores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use hardened_mcp::runs::RunDir;
use hardened_mcp::sandbox::{
    CpuShare, EnvelopeBackend, LimitHit, Limits, Outcome, RunRequest, Sandbox, SandboxConfig,
    SandboxError, SandboxedRun, SolverRegistry, Termination,
};
use support::{caller, run_dir};
use tokio_util::sync::CancellationToken;

const HOG: &str = env!("CARGO_BIN_EXE_sbx_hog");

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const MIB: u64 = 1 << 20;

fn sandbox() -> Sandbox {
    sandbox_with(SandboxConfig::default())
}

fn sandbox_with(config: SandboxConfig) -> Sandbox {
    let registry = SolverRegistry::builder()
        .solver("hog", HOG)
        .build()
        .unwrap();
    Sandbox::new(registry, config).expect("this host enforces the envelope")
}

/// A small envelope: what each attack is tried against.
fn small() -> Limits {
    Limits {
        wall_time: Duration::from_secs(30),
        memory: 128 * MIB,
        processes: 32,
        cpu_share: CpuShare::cores(0.5).unwrap(),
        disk_bytes: 64 * MIB,
        disk_files: 1000,
        tmp_size: 16 * MIB,
        shm_size: 16 * MIB,
        ..Limits::default()
    }
}

/// Runs the attack `args` under `limits` while the host is probed: a fork
/// from the host and another caller's sandboxed run must both succeed.
async fn attack(sb: &Sandbox, dir: &RunDir, args: &[&str], limits: Limits) -> Outcome {
    let (attacker, cancel) = (caller("attacker"), CancellationToken::new());
    let run = sb.run(
        &attacker,
        dir,
        RunRequest::new("hog").args(args).limits(limits),
        &cancel,
    );
    let probe = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let forked = Command::new("/bin/true")
            .status()
            .is_ok_and(|s| s.success());
        assert!(forked, "the host could not fork during {args:?}");
        let (_probe_path, probe_dir) = run_dir();
        let o = tokio::time::timeout(
            Duration::from_secs(20),
            sb.run(
                &caller("bystander"),
                &probe_dir,
                RunRequest::new("hog").arg("ok"),
                &CancellationToken::new(),
            ),
        )
        .await
        .expect("a bystander's run is answered during the attack")
        .unwrap();
        assert!(
            o.success(),
            "a bystander's run failed during {args:?}: {o:?}"
        );
    };
    let (outcome, ()) = tokio::join!(run, probe);
    outcome.unwrap()
}

/// The positive control: the same program, unconfined, in `dir`.
fn control(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(HOG)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn tree_bytes_and_entries(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let (mut bytes, mut entries) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        let m = e.metadata().unwrap();
        entries += 1;
        bytes += m.blocks() * 512;
        if m.is_dir() {
            let (b, n) = tree_bytes_and_entries(&e.path());
            bytes += b;
            entries += n;
        }
    }
    (bytes, entries)
}

#[tokio::test]
async fn this_host_enforces_every_limit_of_the_envelope() {
    // Serial too: its sandbox's cgroups made ahead would be counted by the
    // tests that check none of this process's is left.
    let _serial = SERIAL.lock().await;
    let c = sandbox().containment();
    assert_ne!(c.envelope.backend, EnvelopeBackend::None, "{c}");
    assert!(
        c.envelope.memory && c.envelope.swap && c.envelope.processes && c.envelope.cpu,
        "{c}"
    );
    assert!(c.to_string().contains("envelope: cgroup"), "{c}");
    // The cgroup v2 guest of CI (`.ci/cgroup2-vm`) names the backend this
    // run must have found: a fallback would pass every other test.
    if let Ok(want) = std::env::var("HARDENED_MCP_EXPECT_ENVELOPE") {
        assert_eq!(c.envelope.backend.name(), want, "{c}");
    }
}

#[tokio::test]
async fn a_memory_bomb_in_one_process_is_killed_at_the_memory_limit() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (path, dir) = run_dir();
    let o = attack(&sb, &dir, &["mem", "512"], small()).await;
    assert_eq!(o.limit, Some(LimitHit::Memory), "{o:?}");
    assert_eq!(o.error(), Some(SandboxError::MemoryLimit));
    assert_eq!(
        o.error().unwrap().to_string(),
        "the solver run exceeded its memory limit"
    );
    let (code, out) = control(path.path(), &["mem", "512"]);
    assert_eq!(code, 0, "control: {out}");
    assert!(out.contains(&format!("touched={}", 512 * MIB)), "{out}");
}

#[tokio::test]
async fn memory_spread_over_many_processes_is_bounded_as_one() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (path, dir) = run_dir();
    // Six processes of 48 MiB each: each alone is far below the limit.
    let args = ["mem-spread", "6", "48"];
    let o = attack(&sb, &dir, &args, small()).await;
    assert_eq!(o.limit, Some(LimitHit::Memory), "{o:?}");
    assert!(!o.success());
    let (code, out) = control(path.path(), &args);
    assert_eq!(code, 0, "control: {out}");
}

#[tokio::test]
async fn a_fork_bomb_stops_at_the_process_limit_and_the_host_forks_after() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (path, dir) = run_dir();
    let args = ["forks", "200"];
    let o = attack(&sb, &dir, &args, small()).await;
    assert_eq!(o.termination, Termination::Exited(3), "{o:?}");
    assert_eq!(o.limit, Some(LimitHit::Processes), "{o:?}");
    assert_eq!(o.error(), Some(SandboxError::ProcessLimit));
    assert!(Command::new("/bin/true").status().unwrap().success());
    let (code, out) = control(path.path(), &args);
    assert_eq!(code, 0, "control forked all 200: {out}");
}

#[tokio::test]
async fn a_disk_filler_is_killed_near_the_byte_limit() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (path, dir) = run_dir();
    let limits = small();
    // 32 files of 16 MiB: 512 MiB against a 64 MiB limit.
    let args = ["files", "32", "16384"];
    let o = attack(&sb, &dir, &args, limits).await;
    assert_eq!(o.limit, Some(LimitHit::DiskBytes), "{o:?}");
    assert_eq!(o.error(), Some(SandboxError::DiskLimit));
    let (bytes, _) = tree_bytes_and_entries(path.path());
    eprintln!(
        "disk filler: {bytes} bytes left against {}",
        limits.disk_bytes
    );
    // The stated overshoot (docs/threat-model.md): what a run writes in one
    // check interval; on this machine kind well under 128 MiB.
    assert!(
        bytes <= limits.disk_bytes + 128 * MIB,
        "{bytes} bytes left against a {} limit",
        limits.disk_bytes
    );
    let control_dir = tempfile::tempdir().unwrap();
    let (code, _) = control(control_dir.path(), &args);
    assert_eq!(code, 0);
    let (bytes, _) = tree_bytes_and_entries(control_dir.path());
    assert!(bytes >= 32 * 16 * MIB, "control wrote {bytes}");
}

#[tokio::test]
async fn an_inode_filler_is_killed_at_the_file_limit() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    // The default file limit (10,000) and a whole core: the creator runs
    // as fast as this machine lets one process make files.
    let limits = Limits {
        disk_files: 10_000,
        cpu_share: CpuShare::cores(1.0).unwrap(),
        ..small()
    };
    let mut left = Vec::new();
    for _ in 0..5 {
        let (path, dir) = run_dir();
        let o = attack(&sb, &dir, &["inodes", "2000000"], limits).await;
        assert_eq!(o.limit, Some(LimitHit::DiskFiles), "{o:?}");
        assert_eq!(o.error(), Some(SandboxError::FileCountLimit));
        left.push(tree_bytes_and_entries(path.path()).1);
    }
    left.sort_unstable();
    eprintln!(
        "inode filler: {left:?} entries left against {}",
        limits.disk_files
    );
    // How far past the limit a run gets is a matter of timing: what it
    // makes before the monitor's thread is scheduled (typically a few
    // hundred entries; the measured spread is in docs/threat-model.md, and
    // the line above prints this run's). A pass/fail test holds no timing,
    // so it holds the kill itself, with a margin an order of magnitude
    // above the overshoot: the filler, told to make 2,000,000 entries (and
    // making all it is told unconfined: the control below), is stopped
    // before twice the limit in every run.
    assert!(left[4] < 2 * limits.disk_files, "{left:?}");
    // Control: the same program makes more entries than the limit.
    let control_dir = tempfile::tempdir().unwrap();
    let (code, _) = control(control_dir.path(), &["inodes", "15000"]);
    assert_eq!(code, 0);
    assert_eq!(tree_bytes_and_entries(control_dir.path()).1, 15_000);
}

#[tokio::test]
async fn a_solver_that_rewrites_its_result_is_not_counted_past_what_it_holds() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (path, dir) = run_dir();
    // 2,000 files made and renamed over one result against a limit of 16
    // entries: the run never holds more than two (few enough for the
    // emulated cgroup v2 guest of CI to finish well within the timeout).
    let limits = Limits {
        disk_files: 16,
        ..small()
    };
    let o = attack(&sb, &dir, &["rewrite", "2000"], limits).await;
    assert_eq!(o.termination, Termination::Exited(0), "{o:?}");
    assert_eq!(o.limit, None, "{o:?}");
    // `result`, and the run directory's owner record.
    assert_eq!(tree_bytes_and_entries(path.path()).1, 2);
    // Control: making as many files as it renames is stopped.
    let (_path, dir) = run_dir();
    let o = attack(&sb, &dir, &["inodes", "2000"], limits).await;
    assert_eq!(o.limit, Some(LimitHit::DiskFiles), "{o:?}");
}

#[tokio::test]
async fn a_run_that_ends_before_the_monitor_looks_is_judged_by_what_it_left() {
    let _serial = SERIAL.lock().await;
    // The monitor's first look is a quarter interval in: 2.5 s here, long
    // after a run of 200 files has ended. What it left is measured then.
    let sb = sandbox_with(SandboxConfig {
        disk_check_interval: Duration::from_secs(10),
        ..SandboxConfig::default()
    });
    let limits = Limits {
        disk_files: 16,
        ..small()
    };
    let (_path, dir) = run_dir();
    let o = attack(&sb, &dir, &["inodes", "200"], limits).await;
    assert_eq!(o.termination, Termination::Exited(0), "{o:?}");
    assert_eq!(o.limit, Some(LimitHit::DiskFiles), "{o:?}");
    assert_eq!(o.error(), Some(SandboxError::FileCountLimit));
    // Control: the same run within its limit succeeds.
    let (_path, dir) = run_dir();
    let roomy = Limits {
        disk_files: 1000,
        ..small()
    };
    let o = attack(&sb, &dir, &["inodes", "200"], roomy).await;
    assert!(o.success(), "{o:?}");
}

#[tokio::test]
async fn a_deleted_file_held_open_counts_against_the_byte_limit() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (_path, dir) = run_dir();
    // 40 MiB deleted + 40 MiB visible: each below the 64 MiB limit, the
    // two together above it; only the open-file scan sees the first.
    let o = attack(&sb, &dir, &["unlinked", "40"], small()).await;
    assert_eq!(o.limit, Some(LimitHit::DiskBytes), "{o:?}");
    // Control: with a limit above both, the same run completes.
    let (_path, dir) = run_dir();
    let roomy = Limits {
        disk_bytes: 256 * MIB,
        ..small()
    };
    let o = attack(&sb, &dir, &["unlinked", "40"], roomy).await;
    assert!(o.success(), "{o:?}");
}

#[tokio::test]
async fn block_reservation_is_refused_so_the_monitor_keeps_pace() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (path, dir) = run_dir();
    // 64 files of 32 MiB reserved at once: 2 GiB against a 64 MiB limit,
    // in far less than one check interval if it were allowed.
    let args = ["falloc", "64", "32"];
    let o = attack(&sb, &dir, &args, small()).await;
    assert_eq!(o.termination, Termination::Exited(4), "{o:?}");
    let (bytes, _) = tree_bytes_and_entries(path.path());
    assert!(bytes < MIB, "{bytes} bytes reserved");
    // Control: unconfined, the reservations succeed.
    let control_dir = tempfile::tempdir().unwrap();
    let (code, _) = control(control_dir.path(), &args);
    assert_eq!(code, 0);
    assert!(tree_bytes_and_entries(control_dir.path()).0 >= 64 * 32 * MIB);
}

#[tokio::test]
async fn tmp_and_shm_fillers_hit_their_size() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    for target in ["/tmp", "/dev/shm"] {
        let (_path, dir) = run_dir();
        let o = attack(&sb, &dir, &["fill", target, "64"], small()).await;
        assert_eq!(o.termination, Termination::Exited(4), "{target}: {o:?}");
        // Within the memory limit: a write refused, not a process killed.
        assert_eq!(o.limit, None, "{target}: {o:?}");
        let control_dir = tempfile::tempdir().unwrap();
        let (code, _) = control(
            control_dir.path(),
            &["fill", control_dir.path().to_str().unwrap(), "64"],
        );
        assert_eq!(code, 0, "control filled 64 MiB");
    }
}

fn cpu_ratio(stdout: &str) -> f64 {
    let field = |k: &str| -> f64 {
        stdout
            .split_whitespace()
            .find_map(|f| f.strip_prefix(k))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {stdout:?}"))
    };
    field("cpu_ms=") / field("wall_ms=")
}

#[tokio::test]
async fn many_spinning_threads_get_their_cpu_share_and_no_more() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (path, dir) = run_dir();
    let limits = small();
    let args = ["spin", "4", "1500"];
    let o = attack(&sb, &dir, &args, limits).await;
    assert!(o.success(), "{o:?}");
    let out = String::from_utf8_lossy(o.stdout.head.as_untrusted_bytes()).into_owned();
    let ratio = cpu_ratio(&out);
    eprintln!("spinner: {ratio:.2} cores against a 0.5 share");
    assert!(ratio <= 0.5 + 0.2, "cores used {ratio} against a 0.5 share");
    let (code, out) = control(path.path(), &args);
    assert_eq!(code, 0);
    let ratio = cpu_ratio(&out);
    eprintln!("spinner, unconfined: {ratio:.2} cores");
    assert!(ratio >= 0.9, "control used {ratio} cores");
}

#[tokio::test]
async fn a_run_timed_out_while_throttled_names_its_cpu_share() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (_path, dir) = run_dir();
    let limits = Limits {
        wall_time: Duration::from_secs(1),
        ..small()
    };
    let o = attack(&sb, &dir, &["spin", "4", "5000"], limits).await;
    assert!(o.timed_out, "{o:?}");
    assert_eq!(o.limit, Some(LimitHit::CpuShare), "{o:?}");
    assert_eq!(o.error(), Some(SandboxError::CpuShareLimit));
    // Control: a run that times out asleep is a plain timeout.
    let (_path, dir) = run_dir();
    let o = attack(&sb, &dir, &["sleep"], limits).await;
    assert!(o.timed_out, "{o:?}");
    assert_eq!(o.limit, None, "{o:?}");
    assert_eq!(o.error(), Some(SandboxError::TimedOut));
}

#[tokio::test]
async fn the_solver_sees_no_cgroup_file_system_and_no_host_cgroup_path() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (path, dir) = run_dir();
    // A cgroup file the host shows: v1's pids hierarchy, or v2's root.
    let file = match sb.containment().envelope.backend {
        EnvelopeBackend::CgroupV2 => "/sys/fs/cgroup/cgroup.procs",
        _ => "/sys/fs/cgroup/pids/cgroup.procs",
    };
    let o = sb
        .run(
            &caller("attacker"),
            &dir,
            RunRequest::new("hog").args(["cgroup", file]),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(o.termination, Termination::Exited(5), "{o:?}");
    let seen = String::from_utf8_lossy(o.stdout.head.as_untrusted_bytes()).into_owned();
    assert!(!seen.is_empty());
    for line in seen.lines() {
        assert!(line.ends_with(":/"), "a host cgroup path shows: {seen}");
    }
    // Control: unconfined, the file is readable and the host's own paths
    // show (the test process's, with this run's cgroup beneath them).
    let (code, out) = control(path.path(), &["cgroup", file]);
    assert_eq!(code, 0);
    assert_eq!(out, std::fs::read_to_string("/proc/self/cgroup").unwrap());
}

/// The directories that hold this test process's runs' cgroups: v1, one
/// under this process's cgroup in each of the `memory`, `pids` and `cpu`
/// hierarchies; v2, one under this process's cgroup (above the leaf the
/// server moved itself into), in the unified hierarchy.
fn my_runs_dirs() -> Vec<PathBuf> {
    let unified = if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        PathBuf::from("/sys/fs/cgroup")
    } else {
        PathBuf::from("/sys/fs/cgroup/unified")
    };
    let mut dirs = Vec::new();
    for line in std::fs::read_to_string("/proc/self/cgroup")
        .unwrap()
        .lines()
    {
        let mut f = line.splitn(3, ':');
        let (_, ctl, p) = (f.next(), f.next().unwrap(), f.next().unwrap());
        let p = p.trim_start_matches('/');
        if ctl.is_empty() {
            let own = p.strip_suffix("hardened-mcp.server").unwrap_or(p);
            dirs.push(unified.join(own).join("hardened-mcp.runs"));
        }
        for c in ctl
            .split(',')
            .filter(|c| ["memory", "pids", "cpu"].contains(c))
        {
            dirs.push(
                Path::new("/sys/fs/cgroup")
                    .join(c)
                    .join(p)
                    .join("hardened-mcp.runs"),
            );
        }
    }
    dirs.retain(|d| d.is_dir());
    dirs
}

/// Whether a cgroup directory holds a process.
fn has_members(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|s| !s.trim().is_empty())
}

/// The runs' cgroup directories of this test process.
fn my_run_cgroups() -> Vec<PathBuf> {
    let prefix = format!("r{}-{}-", my_pid_namespace(), std::process::id());
    let mut found = Vec::new();
    for runs in my_runs_dirs() {
        for e in std::fs::read_dir(&runs).into_iter().flatten().flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(e.path());
            }
        }
    }
    found
}

#[tokio::test]
async fn run_cgroups_are_removed_and_stale_ones_swept() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (_path, dir) = run_dir();
    let running = forking_run(&sb, &dir).await;
    // The run's own cgroups are the ones with members; the others are
    // made ahead for the next runs, never joined.
    let (live, ahead): (Vec<PathBuf>, Vec<PathBuf>) =
        my_run_cgroups().into_iter().partition(|d| has_members(d));
    assert!(!live.is_empty(), "a live run has its cgroup");
    assert!(running.wait().await.success());
    let t0 = std::time::Instant::now();
    while live.iter().any(|d| d.exists()) && t0.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for d in &live {
        assert!(
            !d.exists(),
            "a run's cgroup outlived the run: {}",
            d.display()
        );
    }
    // Those made ahead go with the sandbox.
    assert!(ahead.iter().all(|d| d.exists()));
    drop(sb);
    assert_eq!(my_run_cgroups(), Vec::<PathBuf>::new());

    // A dead server's leftover (pid 1 with another start time): swept by
    // the next sandbox's start; a live server's (ours) is kept.
    let runs = my_memory_runs_dir();
    let ns = my_pid_namespace();
    let pid = std::process::id();
    let stale = runs.join(format!("r{ns}-1-999999999999-0"));
    let reused = runs.join(format!("r{ns}-{pid}-0-999"));
    let ours = runs.join(format!("r{ns}-{pid}-{}-999999", my_start_time()));
    let foreign = runs.join(format!("r{}-1-999999999999-0", ns + 1));
    for d in [&stale, &reused, &ours, &foreign] {
        std::fs::create_dir(d).unwrap();
    }
    let _ = sandbox();
    assert!(!stale.exists(), "the stale cgroup was swept");
    assert!(!reused.exists(), "ours by pid, not by start time: swept");
    assert!(ours.exists(), "a live server's cgroup is kept");
    assert!(
        foreign.exists(),
        "another PID namespace's cgroup is never judged"
    );
    std::fs::remove_dir(&ours).unwrap();
    std::fs::remove_dir(&foreign).unwrap();
}

/// `made_ahead: 0` (a process that launches one run): no cgroup is made
/// before a launch asks, and the run still gets its own, with the same
/// containment as the default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_made_ahead_still_gives_each_run_its_envelope() {
    let _serial = SERIAL.lock().await;
    // The positive control: by default, cgroups are made ahead.
    let default = sandbox();
    assert!(
        settles(|| !my_run_cgroups().is_empty()).await,
        "the default makes none ahead"
    );
    let containment = default.containment().to_string();
    drop(default);
    assert_eq!(my_run_cgroups(), Vec::<PathBuf>::new());

    let sb = sandbox_with(SandboxConfig {
        made_ahead: 0,
        ..SandboxConfig::default()
    });
    assert_eq!(sb.containment().to_string(), containment);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(my_run_cgroups(), Vec::<PathBuf>::new(), "made ahead");
    let (_path, dir) = run_dir();
    let running = forking_run(&sb, &dir).await;
    let cgroups = my_run_cgroups();
    assert!(!cgroups.is_empty(), "the run has no cgroup");
    assert!(cgroups.iter().all(|d| has_members(d)), "{cgroups:?}");
    assert!(running.wait().await.success());
    drop(sb);
    settles(|| my_run_cgroups().is_empty()).await;
    assert_eq!(my_run_cgroups(), Vec::<PathBuf>::new());
}

/// A run of the hog that forks three processes, 200 ms after its launch
/// (its processes have joined its cgroup by then).
async fn forking_run(sb: &Sandbox, dir: &RunDir) -> SandboxedRun {
    let running = sb
        .launch(
            &caller("attacker"),
            dir,
            RunRequest::new("hog").args(["forks", "3"]),
            &CancellationToken::new(),
        )
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    running
}

/// Whether `cond` holds within 5 s (polled every 10 ms).
async fn settles(cond: impl Fn() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while !cond() {
        if t0.elapsed() > Duration::from_secs(5) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

fn my_pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").unwrap().ino()
}

fn my_start_time() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// One directory holding runs' cgroups: where the sweep of stale ones is
/// tried (v1: the memory hierarchy's, as the sandbox sweeps each).
fn my_memory_runs_dir() -> PathBuf {
    let dirs = my_runs_dirs();
    dirs.iter()
        .find(|d| d.starts_with("/sys/fs/cgroup/memory"))
        .or(dirs.first())
        .cloned()
        .expect("this process has a runs' cgroup directory")
}

#[tokio::test]
async fn a_callers_byte_quota_counts_live_runs_at_their_disk_limit() {
    use hardened_mcp::runs::{Quota, Quotas, RootOptions, RunError, RunRoot};
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let tmp = tempfile::tempdir().unwrap();
    let root = RunRoot::open_with_options(
        tmp.path().join("runs"),
        RootOptions {
            quotas: Quotas {
                max_bytes: Some(100 * MIB),
                ..Quotas::default()
            },
            ..RootOptions::default()
        },
    )
    .unwrap();
    let who = caller("quota");
    let limits = Limits {
        disk_bytes: 64 * MIB,
        ..small()
    };
    let (_, first) = root.create(&who).unwrap();
    let running = sb
        .launch(
            &who,
            &first,
            RunRequest::new("hog").arg("sleep").limits(limits),
            &CancellationToken::new(),
        )
        .unwrap();
    // 64 MiB reserved by the live run: a second run fits below 100 MiB …
    let (_, second) = root.create(&who).unwrap();
    let also = sb
        .launch(
            &who,
            &second,
            RunRequest::new("hog").arg("sleep").limits(limits),
            &CancellationToken::new(),
        )
        .unwrap();
    // … a third does not while both run, though neither wrote a byte.
    assert!(matches!(
        root.create(&who),
        Err(RunError::QuotaExceeded(Quota::Bytes))
    ));
    assert!(running.wait().await.success());
    assert!(also.wait().await.success());
    // Control: once the runs' real usage is recorded, the quota has room.
    first.record_usage(true).unwrap();
    second.record_usage(true).unwrap();
    assert!(root.create(&who).is_ok());
}
