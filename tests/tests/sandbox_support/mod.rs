//! Shared fixtures of the sandbox integration tests: a sandbox whose solvers
//! are the `sbx_*` probe binaries, run directories (of a run root), lock and
//! process checks.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use hardened_mcp::identity::CallerId;
use hardened_mcp::runs::{RunDir, RunRoot};
use hardened_mcp::sandbox::{Sandbox, SandboxConfig, SolverRegistry};
use rustix::fs::{FlockOperation, flock};

pub const FORKER: &str = env!("CARGO_BIN_EXE_sbx_forker");
pub const ESCAPE: &str = env!("CARGO_BIN_EXE_sbx_escape");
pub const SPAM: &str = env!("CARGO_BIN_EXE_sbx_spam");

pub fn registry() -> SolverRegistry {
    SolverRegistry::builder()
        .solver("forker", FORKER)
        .solver("escape", ESCAPE)
        .solver("spam", SPAM)
        .build()
        .expect("probe solvers are acceptable")
}

pub fn sandbox_with(config: SandboxConfig) -> Sandbox {
    Sandbox::new(registry(), config).expect("sandbox starts")
}

pub fn sandbox() -> Sandbox {
    sandbox_with(SandboxConfig::default())
}

pub fn caller(name: &str) -> CallerId {
    CallerId::new(name).unwrap()
}

/// A run directory's path, and the temporary directory (holding its run
/// root) that lives as long as this does. For checks and positive controls
/// from outside the sandbox only: runs are launched on the [`RunDir`].
pub struct RunPath {
    path: PathBuf,
    _tmp: tempfile::TempDir,
}

impl RunPath {
    /// The run directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A fresh run of a fresh run root (in a temporary directory): its path and
/// the resolved [`RunDir`] to launch in.
pub fn run_dir() -> (RunPath, RunDir) {
    let tmp = tempfile::tempdir().unwrap();
    let root_path = tmp.path().join("runs");
    let root = RunRoot::open(&root_path).unwrap();
    let (handle, dir) = root.create(&CallerId::local()).unwrap();
    let path = root_path.join(handle.as_str());
    assert!(path.is_dir(), "run root layout as expected by these tests");
    (RunPath { path, _tmp: tmp }, dir)
}

/// Whether an exclusive lock on `path` can be taken right now: true only
/// when no process holds a shared lock on it.
pub fn lock_is_free(path: &Path) -> bool {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    flock(&f, FlockOperation::NonBlockingLockExclusive).is_ok()
}

/// A blocking exclusive acquire, bounded by `limit` (a thread blocks in
/// `flock`; if it has not returned by then, the lock is still held).
pub fn lock_acquired_within(path: &Path, limit: Duration) -> bool {
    let path = path.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let ok = flock(&f, FlockOperation::LockExclusive).is_ok();
        let _ = tx.send(ok);
    });
    rx.recv_timeout(limit).unwrap_or(false)
}

/// Pids recorded by the forker's holders (`held.<pid>` markers).
pub fn holder_pids(dir: &Path) -> Vec<i32> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("held.")?.parse().ok())
        .collect()
}

/// Kills leftover holders of a control run (cleanup only).
pub fn kill_pids(pids: &[i32]) {
    for &p in pids {
        if let Some(pid) = rustix::process::Pid::from_raw(p) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    // Wait (bounded) until they are reaped, so later tests see none.
    let t0 = std::time::Instant::now();
    while pids.iter().any(|&p| u32::try_from(p).is_ok_and(pid_exists))
        && t0.elapsed() < Duration::from_secs(3)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Processes (alive or zombie) whose command name is `comm`.
pub fn processes_named(comm: &str) -> Vec<(i32, char)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = &stat[open + 1..close];
        let state = stat[close + 1..].trim_start().chars().next().unwrap_or('?');
        if name == comm {
            found.push((pid, state));
        }
    }
    found
}

/// Whether `pid` still exists (alive or zombie).
pub fn pid_exists(pid: u32) -> bool {
    PathBuf::from(format!("/proc/{pid}")).exists()
}
