//! The solver allowlist: fixed ids mapped to executables checked at server
//! start, and the extra host paths each solver may read. Tools name an id,
//! never a path.

use std::collections::BTreeMap;
use std::fs::Metadata;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use super::error::{ConfigError, SandboxError};

/// Longest solver id, in bytes.
pub const MAX_SOLVER_ID_LEN: usize = 64;

/// One allowlisted solver executable.
#[derive(Debug)]
pub struct Solver {
    id: String,
    path: PathBuf,
    file_id: (u64, u64),
    fd: OwnedFd,
    grants: Vec<PathBuf>,
    grant_fds: Vec<OwnedFd>,
}

impl Solver {
    /// The configured id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The checked absolute path (server-side only; never show it to a caller).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// An `O_PATH` descriptor of the executable, opened at start.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Device and inode of the executable checked at start.
    pub(crate) fn file_id(&self) -> (u64, u64) {
        self.file_id
    }

    /// The extra host paths this solver may read ([`SolverRegistryBuilder::grant_read`]).
    pub fn grants(&self) -> &[PathBuf] {
        &self.grants
    }

    /// `O_PATH` descriptors of the grants that exist (Landlock without a view).
    pub(crate) fn grant_fds(&self) -> &[OwnedFd] {
        &self.grant_fds
    }

    /// Re-checks before a launch that the path names the checked file, not writable by others.
    pub(crate) fn verify_unchanged(&self) -> Result<(), SandboxError> {
        let ok = std::fs::symlink_metadata(&self.path).is_ok_and(|m| {
            m.file_type().is_file() && (m.dev(), m.ino()) == self.file_id && !writable_by_others(&m)
        });
        if !ok {
            tracing::error!(solver = %self.id, "solver executable changed since start");
            return Err(SandboxError::SolverChanged);
        }
        Ok(())
    }
}

/// Fixed solver ids mapped to checked executables.
#[derive(Debug, Default)]
pub struct SolverRegistry {
    solvers: BTreeMap<String, Solver>,
}

/// Collects solver entries; [`SolverRegistryBuilder::build`] checks them all.
#[derive(Debug, Default)]
pub struct SolverRegistryBuilder {
    entries: Vec<(String, PathBuf)>,
    grants: Vec<(String, PathBuf)>,
}

impl SolverRegistry {
    /// Starts a registry.
    pub fn builder() -> SolverRegistryBuilder {
        SolverRegistryBuilder::default()
    }

    /// The solver configured under `id`, or [`SandboxError::UnknownSolver`].
    pub fn get(&self, id: &str) -> Result<&Solver, SandboxError> {
        self.solvers.get(id).ok_or(SandboxError::UnknownSolver)
    }

    /// The configured solver ids.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.solvers.keys().map(String::as_str)
    }
}

impl SolverRegistryBuilder {
    /// Adds a solver: `id` is what tools name, `path` its executable's path.
    pub fn solver(mut self, id: &str, path: impl Into<PathBuf>) -> Self {
        self.entries.push((id.to_owned(), path.into()));
        self
    }

    /// Lets the solver `id` also read the host path `path` (a directory
    /// tree or a file), bound read-only at the same path in its view and
    /// granted by Landlock; no other solver sees it. The path must be
    /// absolute and plain, not within `/proc`, `/dev`, `/tmp`, `/work` or
    /// `/sandbox` (which the view provides), and not hold `/etc/passwd` or
    /// `/etc/group` (so not `/etc`); a refusal names the rule
    /// ([`ReadPathRule`](super::ReadPathRule)). A script solver's
    /// interpreter must be readable too ([`ConfigError::NotRunnable`]).
    ///
    /// ```no_run
    /// use hardened_mcp::sandbox::SolverRegistry;
    ///
    /// let registry = SolverRegistry::builder()
    ///     .solver("ngspice", "/usr/bin/ngspice")
    ///     .grant_read("ngspice", "/opt/pdk/models")
    ///     .build()?;
    /// # Ok::<(), hardened_mcp::sandbox::ConfigError>(())
    /// ```
    pub fn grant_read(mut self, id: &str, path: impl Into<PathBuf>) -> Self {
        self.grants.push((id.to_owned(), path.into()));
        self
    }

    /// Checks every entry and builds the registry; an error names the id.
    pub fn build(self) -> Result<SolverRegistry, ConfigError> {
        let mut solvers: BTreeMap<String, Solver> = BTreeMap::new();
        for (id, path) in self.entries {
            if !valid_id(&id) {
                return Err(ConfigError::InvalidSolverId(id));
            }
            if solvers.contains_key(&id) {
                return Err(ConfigError::DuplicateSolver(id));
            }
            let solver = check(&id, path)?;
            tracing::info!(solver = %id, path = %solver.path.display(), "solver registered");
            solvers.insert(id, solver);
        }
        for (id, path) in self.grants {
            let Some(solver) = solvers.get_mut(&id) else {
                return Err(ConfigError::GrantForUnknownSolver(id));
            };
            super::view::check_read_path(&path)?;
            let fd = super::landlock::open_path(&path);
            if fd.is_none() {
                tracing::warn!(solver = %id, path = %path.display(), "granted path absent");
            }
            solver.grant_fds.extend(fd);
            tracing::info!(solver = %id, path = %path.display(), "solver may read");
            solver.grants.push(path);
        }
        Ok(SolverRegistry { solvers })
    }
}

fn valid_id(id: &str) -> bool {
    (1..=MAX_SOLVER_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

fn check(id: &str, path: PathBuf) -> Result<Solver, ConfigError> {
    let fail = |e: fn(String) -> ConfigError, why: &str| {
        tracing::error!(solver = %id, path = %path.display(), reason = why, "solver refused");
        Err(e(id.to_owned()))
    };
    if !path.is_absolute() {
        return fail(ConfigError::RelativePath, "relative path");
    }
    let meta = std::fs::symlink_metadata(&path).map_err(|e| {
        tracing::error!(solver = %id, path = %path.display(), error = %e, "solver missing");
        ConfigError::Missing(id.to_owned())
    })?;
    if meta.file_type().is_symlink() {
        return fail(ConfigError::Symlink, "symlink");
    }
    if !meta.file_type().is_file() {
        return fail(ConfigError::NotRegularFile, "not a regular file");
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return fail(ConfigError::NotExecutable, "no execute bit");
    }
    if writable_by_others(&meta) {
        return fail(ConfigError::Writable, "group/other-writable file");
    }
    let euid = rustix::process::geteuid().as_raw();
    if meta.uid() != 0 && meta.uid() != euid {
        return fail(ConfigError::BadOwner, "foreign owner");
    }
    for dir in path.ancestors().skip(1) {
        // Followed: what counts is who can replace entries in the directory
        // traversed. A sticky one (/tmp) does not let others replace ours.
        let m = std::fs::metadata(dir).map_err(|e| {
            tracing::error!(solver = %id, error = %e, "solver directory not inspectable");
            ConfigError::Missing(id.to_owned())
        })?;
        if writable_by_others(&m) && m.permissions().mode() & 0o1000 == 0 {
            return fail(ConfigError::Writable, "group/other-writable directory");
        }
    }
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(&path, flags, Mode::empty()).map_err(|e| {
        tracing::error!(solver = %id, error = %e, "solver not openable");
        ConfigError::Missing(id.to_owned())
    })?;
    // The checks hold for the opened file only if it is the inode inspected.
    let file_id = (meta.dev(), meta.ino());
    if !rustix::fs::fstat(&fd).is_ok_and(|st| (st.st_dev, st.st_ino) == file_id) {
        return fail(ConfigError::Missing, "replaced during the check");
    }
    Ok(Solver {
        id: id.to_owned(),
        path,
        file_id,
        fd,
        grants: Vec::new(),
        grant_fds: Vec::new(),
    })
}

fn writable_by_others(m: &Metadata) -> bool {
    m.permissions().mode() & 0o022 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solver_ids_are_restricted() {
        for ok in ["heat", "a", "x_1-2", &"a".repeat(MAX_SOLVER_ID_LEN)] {
            assert!(valid_id(ok), "{ok}");
        }
        let long = "a".repeat(MAX_SOLVER_ID_LEN + 1);
        for bad in ["", "Heat", "a b", "../x", "a/b", "é", &long] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn unknown_id_is_a_fixed_error() {
        let r = SolverRegistry::default();
        assert_eq!(r.get("nope").err(), Some(SandboxError::UnknownSolver));
    }
}
