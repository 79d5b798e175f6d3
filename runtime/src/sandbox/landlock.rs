//! The Landlock policy of a run, at the newest ABI the `landlock` crate
//! knows (an older kernel enforces the rights it has): full access beneath
//! the run directory (or read beneath it and full access beneath its
//! writable subdirectory); TCP bind and connect denied (ABI 4+); signals
//! and abstract Unix sockets scoped to the run (ABI 6+).
//!
//! With the private file-system view (all of it chosen for the solver),
//! read and execute are granted beneath the view's root and full access
//! beneath its private `/tmp`, by rules the solver adds once inside the
//! view (their inodes exist only there). Without the view, read is granted
//! beneath each configured read path, the solver's own grants, the solver
//! executable and the host's `/proc`.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};
use rustix::fs::{Mode, OFlags};

use super::child::ViewRules;
use super::error::{ConfigError, ReadPathRule, SandboxError};

/// The newest ABI whose rights this policy requests (the crate's newest);
/// older kernels get the subset they know.
const POLICY_ABI: ABI = ABI::V7;

/// Host paths a solver may read by default, bound read-only at the same
/// path in its view: the system trees and the few files of `/etc` a
/// dynamically linked program needs. Not `/etc` as a whole (a same-uid
/// solver would read the server's credentials there), nor `/home`, `/root`,
/// `/var`, `/run`, `/srv`, `/mnt`, `/opt` or `/sys`. Absent paths are
/// skipped; symbolic links (a merged `/usr`'s `/lib`) stay links.
#[rustfmt::skip]
pub const DEFAULT_READ_PATHS: &[&str] = &[
    "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/nsswitch.conf",
    "/etc/localtime", "/etc/alternatives",
];

/// Devices a solver may read and write (they discard or produce no data of
/// the host); the view's other devices are readable as part of it.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// Read-only devices granted when there is no view.
const READABLE_DEVICES: &[&str] = &["/dev/random", "/dev/urandom"];

/// Directories and files opened (`O_PATH`) at start, to which rules refer.
#[derive(Debug)]
pub(crate) struct FsPolicy {
    /// Read paths, `/proc` and the readable devices (without the view only).
    read: Vec<OwnedFd>,
    writable_devices: Vec<OwnedFd>,
    view: bool,
    abi: ABI,
}

impl FsPolicy {
    /// Opens what the rules refer to. `view`: the solver runs in its private
    /// view (read paths need no rule). Missing paths are skipped and logged.
    pub(crate) fn open(
        read_paths: &[PathBuf],
        view: bool,
        kernel_abi: u32,
    ) -> Result<Self, ConfigError> {
        if let Some(p) = read_paths.iter().find(|p| !p.is_absolute()) {
            return Err(super::view::refused(p, ReadPathRule::Relative));
        }
        let open_all = |list: &'static [&str]| list.iter().map(Path::new).filter_map(open_path);
        let mut read = Vec::new();
        if !view {
            for p in read_paths {
                let fd = open_path(p);
                if fd.is_none() {
                    tracing::debug!(path = %p.display(), "sandbox read path absent, skipped");
                }
                read.extend(fd);
            }
            read.extend(open_path(Path::new("/proc")));
            read.extend(open_all(READABLE_DEVICES));
        }
        Ok(Self {
            read,
            writable_devices: open_all(WRITABLE_DEVICES).collect(),
            view,
            abi: ABI::from(i32::try_from(kernel_abi).unwrap_or(i32::MAX)).min(POLICY_ABI),
        })
    }

    /// The masks of the rules added inside the view.
    pub(crate) fn view_rules(&self) -> ViewRules {
        ViewRules {
            read: AccessFs::from_read(self.abi).bits(),
            all: AccessFs::from_all(self.abi).bits(),
        }
    }

    /// Builds a ruleset for one run; `None` when the kernel has no Landlock.
    /// `writable`: where the solver may write, a subdirectory of `run_dir`
    /// (then only readable), or `None` for `run_dir` itself. `solver` and
    /// `grants`: the executable and the solver's own read paths (without
    /// the view only).
    pub(crate) fn ruleset(
        &self,
        run_dir: BorrowedFd<'_>,
        writable: Option<BorrowedFd<'_>>,
        solver: BorrowedFd<'_>,
        grants: &[OwnedFd],
    ) -> Result<Option<OwnedFd>, SandboxError> {
        let build = || -> Result<Option<OwnedFd>, landlock::RulesetError> {
            let all = AccessFs::from_all(POLICY_ABI);
            let read = AccessFs::from_read(POLICY_ABI);
            let file_read: BitFlags<AccessFs> = AccessFs::ReadFile | AccessFs::Execute;
            let device: BitFlags<AccessFs> =
                AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
            let mut rs = Ruleset::default()
                .handle_access(all)?
                .handle_access(AccessNet::from_all(POLICY_ABI))?
                .scope(Scope::from_all(POLICY_ABI))?
                .create()?;
            rs = match writable {
                None => rs.add_rule(PathBeneath::new(run_dir, all))?,
                Some(w) => rs
                    .add_rule(PathBeneath::new(run_dir, read))?
                    .add_rule(PathBeneath::new(w, all))?,
            };
            for fd in &self.writable_devices {
                rs = rs.add_rule(PathBeneath::new(fd.as_fd(), device))?;
            }
            if !self.view {
                rs = rs.add_rule(PathBeneath::new(solver, file_read))?;
                for fd in self.read.iter().chain(grants) {
                    rs = rs.add_rule(PathBeneath::new(fd.as_fd(), read))?;
                }
            }
            Ok(rs.into())
        };
        build().map_err(|e| {
            tracing::error!(error = %e, "landlock ruleset not built");
            SandboxError::Internal
        })
    }
}

/// Opens `p` as an `O_PATH` descriptor, `None` when it does not exist.
pub(crate) fn open_path(p: &Path) -> Option<OwnedFd> {
    rustix::fs::open(p, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()
}
