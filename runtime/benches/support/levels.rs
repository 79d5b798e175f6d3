//! The sandbox levels the launch benchmarks compare (`sandbox.rs`,
//! `launch_overhead.rs`), and the two launches they time.

use std::process::Stdio;

use hardened_mcp::identity::CallerId;
use hardened_mcp::runs::RunDir;
use hardened_mcp::sandbox::{Requirements, RunRequest, Sandbox, SandboxConfig, SolverRegistry};
use tokio_util::sync::CancellationToken;

/// The solver every launch benchmark runs.
pub const TRUE: &str = "/usr/bin/true";

/// The solver of the log benchmarks.
pub const HEAD: &str = "/usr/bin/head";

/// The sandbox at one of four levels: `Full` (the default: namespaces,
/// private view with its own network, seccomp, Landlock, a cgroup per run
/// and the disk monitor), `NoCgroup` (the same without the run's cgroup),
/// `HostNetwork` (the same as `Full` without the network namespace),
/// `ProcessGroup` (the explicit opt-out without namespaces: Landlock,
/// seccomp, rlimits, the run's cgroup where the host has one).
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)] // Each bench uses the levels it compares.
pub enum Level {
    Full,
    NoCgroup,
    HostNetwork,
    ProcessGroup,
}

/// A sandbox at `level` with `true` and `head` registered.
pub fn sandbox(level: Level) -> Sandbox {
    let registry = SolverRegistry::builder()
        .solver("true", TRUE)
        .solver("head", HEAD)
        .build()
        .unwrap();
    let base = SandboxConfig {
        per_caller_runs: 64,
        ..SandboxConfig::default()
    };
    let config = match level {
        Level::Full => base,
        Level::NoCgroup => SandboxConfig {
            allow_cgroups: false,
            require: Requirements::without_envelope(),
            ..base
        },
        Level::HostNetwork => SandboxConfig {
            host_network: true,
            ..base
        },
        Level::ProcessGroup => SandboxConfig {
            allow_pid_namespace: false,
            require: Requirements::none(),
            ..base
        },
    };
    Sandbox::new(registry, config).unwrap()
}

/// The baseline: a bare `tokio::process::Command` spawn + wait of
/// [`TRUE`], no pipes.
pub async fn bare_true() {
    let st = tokio::process::Command::new(TRUE)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .unwrap();
    assert!(st.success());
}

/// A sandboxed run of the solver `true`, to its outcome.
pub async fn sandboxed_true(
    sb: &Sandbox,
    who: &CallerId,
    run_dir: &RunDir,
    token: &CancellationToken,
) {
    let o = sb
        .run(who, run_dir, RunRequest::new("true"), token)
        .await
        .unwrap();
    assert!(o.success());
}
