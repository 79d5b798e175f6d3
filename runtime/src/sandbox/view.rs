//! The solver's private file-system view: a mount namespace whose root is a
//! fresh, read-only tmpfs holding only what a solver needs, built by the
//! run's init between fork and exec (the way bubblewrap builds its root).
//!
//! What a solver sees:
//!
//! | path | what | mount |
//! |---|---|---|
//! | `/usr`, `/lib*`, `/bin`, `/sbin` | the host's trees ([`SandboxConfig::read_paths`](super::SandboxConfig::read_paths)) | read-only, nosuid, nodev |
//! | `/etc/ld.so.cache`, `/etc/nsswitch.conf`, `/etc/localtime`, `/etc/alternatives` … | chosen host files of `/etc` (same list) | read-only, nosuid, nodev |
//! | `/etc/passwd`, `/etc/group` | generated: the solver's user and group only | on the read-only root |
//! | paths granted to one solver | [`SolverRegistryBuilder::grant_read`](super::SolverRegistryBuilder::grant_read) | read-only, nosuid, nodev |
//! | [`VIEW_SOLVER_DIR`]`/<id>` | the solver executable checked at registration | read-only, nosuid, nodev |
//! | [`VIEW_RUN_DIR`] | the run directory, the working directory | read-write (or read-only with one writable subdirectory), nosuid, nodev |
//! | `/proc` | a fresh proc of the run's PID namespace: the run's own processes only; `/proc/sys`, `/proc/sysrq-trigger`, `/proc/irq`, `/proc/bus` read-only | nosuid, nodev, noexec |
//! | `/dev/null`, `zero`, `full`, `random`, `urandom` | the host's devices; `/dev/fd`, `stdin`, `stdout`, `stderr` link into `/proc/self/fd` | read-only, nosuid, noexec |
//! | `/tmp` | a private tmpfs of [`Limits::tmp_size`](super::Limits::tmp_size) bytes | nosuid, nodev |
//! | `/dev/shm` | a second private tmpfs of [`Limits::shm_size`](super::Limits::shm_size) bytes (POSIX shared memory, semaphores) | nosuid, nodev, noexec |
//! | anything else | absent: no host `/etc` beyond the files above, no `/home`, `/root`, `/var`, `/run`, `/sys`, `/mnt`, `/srv`, `/opt`, no run root | |
//!
//! The solver runs as uid [`SOLVER_UID`] and gid [`SOLVER_GID`] of its own
//! user namespace (the server's user outside), without capabilities.
//!
//! Every host source is cloned (`open_tree(OPEN_TREE_CLONE)`) before
//! anything is mounted, attached beneath the new root (`move_mount`) and
//! flagged (`mount_setattr`); then `pivot_root(".", ".")` swaps the root
//! and the old one is detached. The run directory is cloned from the init's
//! working directory, set by descriptor (`fchdir`) before the new mount
//! namespace: no path of the run root is ever looked up. The solver
//! executable is cloned by its registered path and refused unless it is the
//! very file (device and inode) opened at registration.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::child::{Bind, DEVICE, Node, READ_ONLY, RunMounts, SOLVER_GID, SOLVER_UID, ViewPlan};
use super::error::{ConfigError, ReadPathRule};

/// Where the run directory appears in the view: the solver's working directory.
pub const VIEW_RUN_DIR: &str = "/work";

/// The directory of the view holding the solver executable, as `<id>`.
pub const VIEW_SOLVER_DIR: &str = "/sandbox/bin";

/// Devices of the view: they hold or produce no data of the host.
pub const VIEW_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// View paths no configured read path may be, or lie beneath.
const RESERVED: &[&str] = &[
    "/proc",
    "/dev",
    "/tmp",
    VIEW_RUN_DIR,
    "/sandbox",
    "/etc/passwd",
    "/etc/group",
];

/// The host directory the new root is mounted on, in the run's own mount
/// namespace (every host source is cloned before it is covered).
const STAGE: &str = "/tmp";

impl ViewPlan {
    /// Plans the view (see the module docs) of the solver `id` (executable
    /// `solver_path`, device and inode `solver_id`) with the configured
    /// `read_paths` and its own `grants`; `private_network`: a network
    /// namespace of its own (a down loopback only). Missing read paths are
    /// skipped; those [`check_read_path`] refuses are refused.
    pub(crate) fn new(
        read_paths: &[PathBuf],
        grants: &[PathBuf],
        id: &str,
        solver_path: &Path,
        solver_id: (u64, u64),
        private_network: bool,
    ) -> Result<Self, ConfigError> {
        let mut b = Builder::default();
        for p in ["/proc", "/tmp", VIEW_RUN_DIR, "/dev", "/dev/shm", "/etc"] {
            b.dirs(Path::new(p), true)?;
        }
        let mut shown: Vec<PathBuf> = Vec::new();
        for p in read_paths.iter().chain(grants) {
            check_read_path(p)?;
            if shown.iter().any(|s| p.starts_with(s)) {
                continue; // visible through a tree above it
            }
            let Ok(meta) = std::fs::symlink_metadata(p) else {
                tracing::debug!(path = %p.display(), "sandbox read path absent, skipped");
                continue;
            };
            if meta.file_type().is_symlink() {
                let target =
                    std::fs::read_link(p).map_err(|_| refused(p, ReadPathRule::Unreadable))?;
                b.symlink(p, target.as_os_str().as_bytes())?;
            } else if meta.is_dir() {
                b.dirs(p, true)?;
                b.bind(p, p, READ_ONLY, true, None)?;
            } else {
                b.file(p)?;
                b.bind(p, p, READ_ONLY, false, None)?;
            }
            shown.push(p.clone());
        }
        for d in VIEW_DEVICES {
            let d = Path::new(d);
            b.file(d)?;
            b.bind(d, d, DEVICE, false, None)?;
        }
        for (link, target) in [
            ("/dev/fd", "/proc/self/fd"),
            ("/dev/stdin", "/proc/self/fd/0"),
            ("/dev/stdout", "/proc/self/fd/1"),
            ("/dev/stderr", "/proc/self/fd/2"),
        ] {
            b.symlink(Path::new(link), target.as_bytes())?;
        }
        let in_view = Path::new(VIEW_SOLVER_DIR).join(id);
        b.file(&in_view)?;
        b.bind(solver_path, &in_view, READ_ONLY, false, Some(solver_id))?;
        let passwd = format!(
            "solver:x:{SOLVER_UID}:{SOLVER_GID}:solver:/tmp:/usr/sbin/nologin\n\
             nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        );
        let group = format!("solver:x:{SOLVER_GID}:\nnogroup:x:65534:\n");
        let files = vec![
            (staged(Path::new("/etc/passwd"))?, passwd.into_bytes()),
            (staged(Path::new("/etc/group"))?, group.into_bytes()),
        ];
        Ok(Self {
            nodes: b.nodes,
            binds: b.binds,
            files,
            solver: cstring(in_view.as_os_str().as_bytes())?,
            solver_id,
            run_target: staged(Path::new(VIEW_RUN_DIR))?,
            private_network,
        })
    }

    /// The run's part: `run_dir` (device, inode), the optional writable
    /// subdirectory (name, (device, inode)), the `/tmp` and `/dev/shm` sizes.
    pub(crate) fn run_mounts(
        &self,
        run_dir: (u64, u64),
        writable: Option<(&str, (u64, u64))>,
        tmp_size: u64,
        shm_size: u64,
    ) -> Result<RunMounts, ConfigError> {
        let writable = match writable {
            Some((name, id)) => Some((
                cstring(name.as_bytes())?,
                staged(&Path::new(VIEW_RUN_DIR).join(name))?,
                id,
            )),
            None => None,
        };
        Ok(RunMounts {
            run_dir,
            writable,
            tmp_options: tmpfs_options(tmp_size)?,
            shm_options: tmpfs_options(shm_size)?,
            slots: (0..self.binds.len() + 2).map(|_| None).collect(),
        })
    }
}

/// Mount options of a private tmpfs of `size` bytes and one inode per 4 KiB (at least 64).
fn tmpfs_options(size: u64) -> Result<CString, ConfigError> {
    let inodes = (size / 4096).max(64);
    cstring(format!("mode=0700,size={size},nr_inodes={inodes}").as_bytes())
}

#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    binds: Vec<Bind>,
    dirs: BTreeSet<PathBuf>,
}

impl Builder {
    /// Adds `p`'s ancestors, and `p` itself if `with_p`, as directories,
    /// outermost first (each once).
    fn dirs(&mut self, p: &Path, with_p: bool) -> Result<(), ConfigError> {
        let chain: Vec<&Path> = p.ancestors().skip(usize::from(!with_p)).collect();
        for a in chain.into_iter().rev().filter(|a| *a != Path::new("/")) {
            if self.dirs.insert(a.to_path_buf()) {
                self.nodes.push(Node::Dir(staged(a)?));
            }
        }
        Ok(())
    }

    fn file(&mut self, p: &Path) -> Result<(), ConfigError> {
        self.dirs(p, false)?;
        self.nodes.push(Node::File(staged(p)?));
        Ok(())
    }

    /// Adds `link`, and its ancestors as directories, pointing to `target`.
    fn symlink(&mut self, link: &Path, target: &[u8]) -> Result<(), ConfigError> {
        self.dirs(link, false)?;
        self.nodes.push(Node::Symlink {
            target: cstring(target)?,
            link: staged(link)?,
        });
        Ok(())
    }

    fn bind(
        &mut self,
        source: &Path,
        target: &Path,
        attrs: u64,
        recursive: bool,
        expect: Option<(u64, u64)>,
    ) -> Result<(), ConfigError> {
        self.binds.push(Bind {
            source: cstring(source.as_os_str().as_bytes())?,
            target: staged(target)?,
            attrs,
            recursive,
            expect,
        });
        Ok(())
    }
}

/// A read path must be absolute, normal (no `.`, `..`, repeated or
/// trailing separators), not `/`, and not a reserved view path.
pub(crate) fn check_read_path(p: &Path) -> Result<(), ConfigError> {
    let refuse = |rule| Err(refused(p, rule));
    if !p.is_absolute() {
        return refuse(ReadPathRule::Relative);
    }
    // On the bytes: `Path::components` hides `.` and repeated separators.
    let bytes = p.as_os_str().as_bytes();
    if bytes == b"/" {
        return refuse(ReadPathRule::Root);
    }
    let plain = bytes[1..]
        .split(|&b| b == b'/')
        .all(|c| !c.is_empty() && c != b"." && c != b"..");
    if !plain {
        return refuse(ReadPathRule::NotPlain);
    }
    if bytes.contains(&0) {
        return refuse(ReadPathRule::Unreadable);
    }
    // Neither a reserved path, beneath one, nor above one (`/etc` would
    // cover the generated passwd and group files).
    if let Some(r) = RESERVED.iter().find(|r| p.starts_with(r)) {
        return refuse(ReadPathRule::Within(r));
    }
    if let Some(r) = RESERVED.iter().find(|r| Path::new(r).starts_with(p)) {
        return refuse(ReadPathRule::Holds(r));
    }
    Ok(())
}

/// The refusal of the read path `p` for `rule`.
pub(crate) fn refused(p: &Path, rule: ReadPathRule) -> ConfigError {
    ConfigError::ReadPathRefused {
        path: p.to_path_buf(),
        rule,
    }
}

/// The path `p` of the view, staged beneath the new root's mount point.
fn staged(p: &Path) -> Result<CString, ConfigError> {
    let rel = p
        .strip_prefix("/")
        .map_err(|_| refused(p, ReadPathRule::Relative))?;
    cstring(Path::new(STAGE).join(rel).as_os_str().as_bytes())
}

/// A path of the view as a C string; a NUL byte refuses it.
fn cstring(bytes: &[u8]) -> Result<CString, ConfigError> {
    CString::new(bytes).map_err(|_| {
        refused(
            Path::new(std::ffi::OsStr::from_bytes(bytes)),
            ReadPathRule::Unreadable,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_dir_constants_agree() {
        let c = super::super::child::VIEW_RUN_DIR_C;
        assert_eq!(c.to_str(), Ok(VIEW_RUN_DIR));
    }

    #[test]
    fn read_paths_must_be_plain_absolute_and_unreserved() {
        for ok in ["/usr", "/etc/ld.so.cache", "/opt/ngspice/lib"] {
            assert_eq!(check_read_path(Path::new(ok)), Ok(()), "{ok}");
        }
        let bad = "/ /proc /proc/1 /dev/shm /tmp /tmp/x /work /work/a /sandbox /etc/passwd \
            /usr/../etc /usr/./bin /usr/ //usr";
        for bad in bad.split_whitespace() {
            assert!(check_read_path(Path::new(bad)).is_err(), "{bad}");
        }
        let rule = |p: &str| match check_read_path(Path::new(p)) {
            Err(ConfigError::ReadPathRefused { path, rule }) => {
                assert_eq!(path, Path::new(p));
                Some(rule)
            }
            _ => None,
        };
        assert_eq!(rule("usr"), Some(ReadPathRule::Relative));
        assert_eq!(rule("/"), Some(ReadPathRule::Root));
        assert_eq!(rule("/usr/../etc"), Some(ReadPathRule::NotPlain));
        assert_eq!(rule("/tmp/solver"), Some(ReadPathRule::Within("/tmp")));
        assert_eq!(rule("/tmp"), Some(ReadPathRule::Within("/tmp")));
        assert_eq!(rule("/etc"), Some(ReadPathRule::Holds("/etc/passwd")));
        assert_eq!(rule("/opt/solver"), None);
        // The text names the path and the rule, and says what to do.
        let e = check_read_path(Path::new("/tmp/poisson"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`/tmp/poisson`"), "{e}");
        assert!(e.contains("within /tmp") && e.contains("/opt/"), "{e}");
        // Each reserved path has a text that names it.
        for r in RESERVED {
            let text = super::super::error::within_text(r);
            let named = if r.starts_with("/etc/") {
                "/etc/passwd"
            } else {
                r
            };
            assert!(text.contains(named), "{r}: {text}");
        }
    }

    #[test]
    fn plan_creates_parents_first_and_stages_every_path() {
        let plan = ViewPlan::new(
            &["/usr", "/etc/ld.so.cache", "/usr/share"].map(PathBuf::from),
            &[],
            "heat",
            Path::new("/usr/bin/true"),
            (1, 2),
            true,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut seen: Vec<&[u8]> = Vec::new();
        for n in &plan.nodes {
            let p = match n {
                Node::Dir(p) | Node::File(p) => p.as_bytes(),
                Node::Symlink { link, .. } => link.as_bytes(),
            };
            assert!(p.starts_with(b"/tmp/"), "{p:?}");
            let parent = &p[..p.iter().rposition(|&b| b == b'/').unwrap_or(0)];
            assert!(
                parent == b"/tmp" || seen.contains(&parent),
                "parent of {p:?} first"
            );
            seen.push(p);
        }
        // /usr/share is visible through /usr: no second bind.
        let usr = plan
            .binds
            .iter()
            .filter(|b| b.source.as_bytes().starts_with(b"/usr"));
        assert_eq!(usr.count(), 2); // /usr and the solver /usr/bin/true
        assert_eq!(plan.solver.as_c_str(), c"/sandbox/bin/heat");
    }
}
