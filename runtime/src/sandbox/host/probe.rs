//! The start-up probes: what the host supports, found by doing it.

use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use super::super::SandboxConfig;
use super::super::child::{self, Filter, IdMaps, RunMounts, ViewPlan};
use super::super::containment::HostSupport;
use super::super::error::ConfigError;
use super::super::limits::Limits;
use super::netns::NetPool;

/// Runs the start-up probes: namespaces, the view ([`probe_view`]), seccomp, the Landlock ABI.
pub(crate) fn probe_host(
    config: &SandboxConfig,
    filter: Option<&Filter>,
) -> Result<HostSupport, ConfigError> {
    let maps = IdMaps::for_server();
    let (pid_namespace, fs_view, seccomp) = if config.allow_pid_namespace {
        let (plan, run, root) = probe_view(config)?;
        child::probe_host(Some((&plan, run, &root)), None, &maps, filter)
    } else {
        child::probe_host(None, None, &maps, filter)
    };
    Ok(HostSupport {
        pid_namespace,
        fs_view,
        seccomp,
        landlock_abi: child::landlock_abi(),
    })
}

/// The probes' view: a plan of the configured read paths, `/dev/null`
/// standing in for a solver, and `/` for a run directory.
fn probe_view(config: &SandboxConfig) -> Result<(ViewPlan, RunMounts, OwnedFd), ConfigError> {
    let unusable = |e: rustix::io::Errno| {
        tracing::error!(error = %e, "sandbox probe could not start");
        ConfigError::LayerUnavailable("the start-up probe's files (/ and /dev/null)")
    };
    let null = rustix::fs::stat("/dev/null").map_err(unusable)?;
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let root = rustix::fs::open("/", flags, Mode::empty()).map_err(unusable)?;
    let root_id = rustix::fs::fstat(&root).map_err(unusable)?;
    let plan = ViewPlan::new(
        &config.read_paths,
        &[],
        "probe",
        Path::new("/dev/null"),
        (null.st_dev, null.st_ino),
        !config.host_network,
    )?;
    let (tmp, shm) = (Limits::default().tmp_size, Limits::default().shm_size);
    let run = plan.run_mounts((root_id.st_dev, root_id.st_ino), None, tmp, shm)?;
    Ok((plan, run, root))
}

/// Starts the pool of network namespaces and checks, with the start-up
/// probe, that a launch can enter one. `None` when the host refuses.
pub(crate) fn start_net_pool(config: &SandboxConfig, filter: Option<&Filter>) -> Option<NetPool> {
    let pool = NetPool::start(config.made_ahead)?;
    let ns = pool.take()?;
    let (plan, run, root) = probe_view(config).ok()?;
    let maps = IdMaps::for_server();
    let (_, view, _) = child::probe_host(Some((&plan, run, &root)), Some(&ns), &maps, filter);
    if view {
        Some(pool)
    } else {
        tracing::info!(
            "network namespaces are made per launch (the pooled ones cannot be entered)"
        );
        None
    }
}
