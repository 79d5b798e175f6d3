//! The Landlock policy of a run: read (and execute) beneath configured
//! system directories and the solver executable, full access beneath the run
//! directory, nothing else; TCP bind and connect denied (ABI 4+); signals
//! and abstract unix sockets scoped to the run (ABI 6+).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};
use rustix::fs::{Mode, OFlags};

use super::error::{ConfigError, SandboxError};

/// The newest ABI whose rights this policy requests; newer kernels keep
/// working (Landlock is backward compatible), older ones get the subset
/// they know.
const POLICY_ABI: ABI = ABI::V6;

/// System directories (and device files) a solver may read by default.
/// Home directories, /tmp, /var, /run, /srv, /mnt and /root are not among
/// them, nor is /dev as a whole: only the data-less devices below are, so a
/// run root under /dev/shm (its `.key`, other runs) stays out of reach. The
/// run directory is granted separately, wherever it is. `/dev/null` is
/// readable and writable (see `WRITABLE_DEVICES`); `/dev/fd`, `/dev/stdin`
/// and friends are symlinks into /proc, which is readable.
pub const DEFAULT_READ_PATHS: &[&str] = &[
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/proc",
    "/sys",
];

/// Files a solver may also write (they discard or produce no data).
const WRITABLE_DEVICES: &[&str] = &["/dev/null"];

/// Directories and files opened (`O_PATH`) at start, to which rules refer.
#[derive(Debug)]
pub(crate) struct FsPolicy {
    read: Vec<OwnedFd>,
    devices: Vec<OwnedFd>,
}

impl FsPolicy {
    /// Opens the read paths; missing ones are skipped (and logged).
    pub(crate) fn open(read_paths: &[PathBuf]) -> Result<Self, ConfigError> {
        let mut read = Vec::new();
        for p in read_paths {
            if !p.is_absolute() {
                return Err(ConfigError::RelativeReadPath);
            }
            match open_path(p) {
                Some(fd) => read.push(fd),
                None => tracing::debug!(path = %p.display(), "sandbox read path absent, skipped"),
            }
        }
        let devices = WRITABLE_DEVICES
            .iter()
            .filter_map(|d| open_path(std::path::Path::new(d)))
            .collect();
        Ok(Self { read, devices })
    }

    /// Builds a ruleset for one run; `None` when the kernel has no Landlock.
    /// `writable` is where the solver may write (the run directory itself,
    /// or a subdirectory of it, in which case the run directory is only
    /// readable).
    pub(crate) fn ruleset(
        &self,
        run_dir: BorrowedFd<'_>,
        writable: Option<BorrowedFd<'_>>,
        solver: BorrowedFd<'_>,
    ) -> Result<Option<OwnedFd>, SandboxError> {
        self.build(run_dir, writable, solver).map_err(|e| {
            tracing::error!(error = %e, "landlock ruleset not built");
            SandboxError::Internal
        })
    }

    fn build(
        &self,
        run_dir: BorrowedFd<'_>,
        writable: Option<BorrowedFd<'_>>,
        solver: BorrowedFd<'_>,
    ) -> Result<Option<OwnedFd>, landlock::RulesetError> {
        let all = AccessFs::from_all(POLICY_ABI);
        let read = AccessFs::from_read(POLICY_ABI);
        let file_read: BitFlags<AccessFs> = AccessFs::ReadFile | AccessFs::Execute;
        let device: BitFlags<AccessFs> =
            AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
        let mut rs = Ruleset::default()
            .handle_access(all)?
            .handle_access(AccessNet::from_all(POLICY_ABI))?
            .scope(Scope::from_all(POLICY_ABI))?
            .create()?
            .add_rule(PathBeneath::new(solver, file_read))?;
        rs = match writable {
            None => rs.add_rule(PathBeneath::new(run_dir, all))?,
            Some(w) => rs
                .add_rule(PathBeneath::new(run_dir, read))?
                .add_rule(PathBeneath::new(w, all))?,
        };
        for fd in &self.read {
            rs = rs.add_rule(PathBeneath::new(fd.as_fd(), read))?;
        }
        for fd in &self.devices {
            rs = rs.add_rule(PathBeneath::new(fd.as_fd(), device))?;
        }
        Ok(rs.into())
    }
}

fn open_path(p: &std::path::Path) -> Option<OwnedFd> {
    rustix::fs::open(p, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()
}
