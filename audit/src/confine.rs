//! `--confine`: the stdio server started under Landlock, writing only into
//! the directory it serves (`--scope`), a scratch home of its own (with
//! credential decoys in it, [`crate::decoy`]), the
//! audit's own directory (where the write probes aim), the null devices
//! and `/dev/shm`. Reads are left open: a server needs its interpreter,
//! libraries and packages wherever they are, and the read probes see what
//! it reads. Where the kernel has Landlock ABI 6 (Linux 6.12), the server
//! is also kept from signalling processes outside its confinement and from
//! reaching abstract Unix sockets made outside it. Landlock does not hold
//! back the network and Unix sockets on paths, `chmod` and `chown`, device
//! ioctls.
//!
//! The rules are put on a thread of the audit's made for the purpose, which
//! then starts the server and ends: the server inherits the thread's
//! Landlock domain (and `no_new_privs`), the rest of the audit is not
//! confined, and no code runs between fork and exec.

use std::io;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};
use tokio::process::{Child, Command};

use crate::decoy::Decoys;

/// The rights a confined server has only where the rules give them: every
/// write, up to truncation (ABI 3). Device ioctls (ABI 5) are not held back.
const ABI_WRITES: ABI = ABI::V3;

/// Device files every process may write, and the shared-memory directory
/// (Python's `multiprocessing` locks, Chromium).
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/shm"];

/// Variables that lead a process to services of the user's session that
/// act for it outside the confinement (a session bus that starts commands,
/// an SSH agent that signs): removed from the server's environment.
const SESSION_VARIABLES: &[&str] = &[
    "DBUS_SESSION_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "XDG_RUNTIME_DIR",
];

/// The confinement of one audited server: where it may write, and its
/// scratch home (removed with this).
pub struct Confinement {
    home: tempfile::TempDir,
    /// The credential decoys planted in the home.
    decoys: Decoys,
    writable: Vec<PathBuf>,
    /// Whether signals and abstract Unix sockets are scoped too.
    scoped: bool,
}

impl Confinement {
    /// A confinement that lets the server write in `scope` (where given),
    /// in each of `own` (the audit's directories for its probes) and in a
    /// fresh scratch home. Fails where the kernel has no Landlock that can
    /// hold back writes.
    pub fn new<'a>(
        scope: Option<&'a Path>,
        own: impl IntoIterator<Item = &'a Path>,
    ) -> io::Result<Self> {
        writes_ruleset(false)
            .and_then(|r| r.create())
            .map_err(io::Error::other)?;
        let scoped = writes_ruleset(true).and_then(|r| r.create()).is_ok();
        let home = tempfile::Builder::new()
            .prefix("hardened-mcp-audit-home-")
            .tempdir()?;
        for sub in [".config", ".cache", ".local/share", ".local/state", "tmp"] {
            std::fs::create_dir_all(home.path().join(sub))?;
        }
        let decoys = Decoys::plant(home.path(), &crate::mutate::Canary::fresh().text)?;
        let mut writable: Vec<PathBuf> = scope.into_iter().chain(own).map(Path::to_owned).collect();
        writable.push(home.path().to_owned());
        Ok(Self {
            home,
            decoys,
            writable,
            scoped,
        })
    }

    /// The credential decoys of the scratch home ([`crate::decoy`]).
    pub fn decoys(&self) -> &Decoys {
        &self.decoys
    }

    /// Whether the server is also kept from signalling processes and from
    /// reaching abstract Unix sockets outside its confinement (where the
    /// kernel has Landlock ABI 6, Linux 6.12).
    pub fn scoped(&self) -> bool {
        self.scoped
    }

    /// The environment that points the server's home, its XDG directories
    /// and its temporary directory into the scratch home.
    pub fn env(&self) -> Vec<(&'static str, PathBuf)> {
        let home = self.home.path();
        vec![
            ("HOME", home.to_owned()),
            ("XDG_CONFIG_HOME", home.join(".config")),
            ("XDG_CACHE_HOME", home.join(".cache")),
            ("XDG_DATA_HOME", home.join(".local/share")),
            ("XDG_STATE_HOME", home.join(".local/state")),
            ("TMPDIR", home.join("tmp")),
        ]
    }

    /// Starts `command` confined (its environment set by
    /// [`Confinement::env`], the session's services removed from it): from
    /// a thread that restricts itself first. Fails, starting nothing, where
    /// Landlock cannot enforce the rules.
    pub fn spawn(&self, command: &mut Command) -> io::Result<Child> {
        for (name, value) in self.env() {
            command.env(name, value);
        }
        for name in SESSION_VARIABLES {
            command.env_remove(name);
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        std::thread::scope(|s| {
            s.spawn(|| {
                let _entered = runtime.enter();
                self.restrict_this_thread()?;
                command.spawn()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the confining thread panicked")))
        })
    }

    /// Puts the rules on the calling thread, and on what it starts from
    /// now on.
    fn restrict_this_thread(&self) -> io::Result<()> {
        let status = writes_ruleset(self.scoped)
            .and_then(|r| r.create())
            .and_then(|r| {
                r.add_rules(path_beneath_rules(
                    &self.writable,
                    AccessFs::from_write(ABI_WRITES),
                ))
            })
            .and_then(|r| {
                r.add_rules(path_beneath_rules(
                    DEVICES,
                    AccessFs::from_write(ABI_WRITES),
                ))
            })
            .and_then(|r| r.restrict_self())
            .map_err(io::Error::other)?;
        match status.ruleset {
            RulesetStatus::FullyEnforced => Ok(()),
            _ => Err(io::Error::other("Landlock did not enforce every rule")),
        }
    }
}

/// The rules' frame: every file write held back, and with `scoped` signals
/// and abstract Unix sockets too; an error where the kernel cannot.
fn writes_ruleset(scoped: bool) -> Result<Ruleset, landlock::RulesetError> {
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_write(ABI_WRITES))?;
    match scoped {
        true => ruleset.scope(Scope::from_all(ABI::V6)),
        false => Ok(ruleset),
    }
}
