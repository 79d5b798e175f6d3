//! What the host lets the sandbox do, detected once at server start: how a
//! run's process tree is killed (PID namespace or process group), whether a
//! private file-system view can be built (user + mount namespace), whether
//! the seccomp filter installs, which Landlock ABI confines the run, whether
//! cgroup v2 is mounted. The detected level is reported as is, never more;
//! by default a host that lacks a layer refuses to start
//! ([`Requirements::default`]), unless the operator opts out explicitly
//! ([`Requirements::none`]).

use std::fmt;

use super::error::ConfigError;

/// How a run's process tree is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TreeKill {
    /// `killpg` of the solver's session: a descendant that calls `setsid`
    /// (or `setpgid`) escapes the kill and can keep the log pipes open; the
    /// log readers are then abandoned after a grace period.
    ProcessGroup,
    /// A new user + PID namespace whose pid 1 is the sandbox's init: when it
    /// is killed or exits, the kernel kills every process in it.
    PidNamespace,
}

impl TreeKill {
    /// A short fixed description.
    pub fn describe(self) -> &'static str {
        match self {
            Self::ProcessGroup => "process group (a descendant that calls setsid escapes the kill)",
            Self::PidNamespace => "PID namespace (the whole tree is killed)",
        }
    }
}

/// The containment runs get on this host, as detected at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Containment {
    /// How the tree is killed.
    pub tree_kill: TreeKill,
    /// Whether each run gets its private file-system view (a mount
    /// namespace with a fresh root, see the `view` section of the sandbox
    /// docs). Without it a solver sees the host's file system, limited by
    /// Landlock alone.
    pub fs_view: bool,
    /// Whether each run has a network namespace of its own (with the view,
    /// unless `SandboxConfig::host_network`): no traffic leaves the run.
    pub private_network: bool,
    /// Whether the seccomp filter is installed before each solver's exec.
    pub seccomp: bool,
    /// Landlock ABI version in use (0: Landlock unavailable, no file-system
    /// or network confinement beyond rlimits and uid).
    pub landlock_abi: u32,
    /// Whether a cgroup v2 hierarchy is mounted. Reported only: this version
    /// does not create cgroups (no `cgroup.kill`, no memory or pids limit).
    pub cgroup_v2_mounted: bool,
}

/// What the start-up probes found the host able to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct HostSupport {
    pub(crate) pid_namespace: bool,
    pub(crate) fs_view: bool,
    pub(crate) seccomp: bool,
    pub(crate) landlock_abi: u32,
}

impl Containment {
    /// The containment from what the probes found. `namespaces: false`
    /// forces the process-group level and no view (for hosts where creating
    /// namespaces is unwanted).
    pub(crate) fn from_support(host: HostSupport, namespaces: bool, private_network: bool) -> Self {
        let ns = namespaces && host.pid_namespace;
        let c = Self {
            tree_kill: if ns {
                TreeKill::PidNamespace
            } else {
                TreeKill::ProcessGroup
            },
            fs_view: ns && host.fs_view,
            private_network: ns && host.fs_view && private_network,
            seccomp: host.seccomp,
            landlock_abi: host.landlock_abi,
            cgroup_v2_mounted: cgroup_v2_mounted(),
        };
        tracing::info!(containment = %c, "sandbox containment detected");
        c
    }

    /// Whether file-system writes are confined to the run directory.
    pub fn confines_filesystem(&self) -> bool {
        self.landlock_abi >= 1
    }

    /// Whether TCP bind and connect are denied (Landlock ABI 4 or later).
    pub fn denies_tcp(&self) -> bool {
        self.landlock_abi >= 4
    }

    /// Checks the detected level against what the configuration requires;
    /// the error names the first missing layer and the opt-out.
    pub fn check(&self, required: &Requirements) -> Result<(), ConfigError> {
        if self.tree_kill < required.tree_kill {
            return Err(ConfigError::ContainmentUnavailable {
                required: required.tree_kill.describe(),
                available: self.tree_kill.describe(),
            });
        }
        if required.fs_view && !self.fs_view {
            return Err(ConfigError::LayerUnavailable(
                "a private file-system view (user and mount namespaces)",
            ));
        }
        if required.seccomp && !self.seccomp {
            return Err(ConfigError::LayerUnavailable("a seccomp filter"));
        }
        if self.landlock_abi < required.landlock_abi {
            return Err(ConfigError::LandlockUnavailable {
                required: required.landlock_abi,
                available: self.landlock_abi,
            });
        }
        Ok(())
    }
}

impl fmt::Display for Containment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tree kill: {}; ", self.tree_kill.describe())?;
        f.write_str(if self.fs_view {
            "file system: private view (mount namespace, fresh root); "
        } else {
            "file system: the host's (no private view); "
        })?;
        f.write_str(if self.private_network {
            "network: none (a namespace of its own); "
        } else {
            "network: the host's; "
        })?;
        f.write_str(if self.seccomp {
            "seccomp: filter on; "
        } else {
            "seccomp: off; "
        })?;
        match self.landlock_abi {
            0 => f.write_str("Landlock: unavailable (no file-system or network confinement)")?,
            1..=3 => write!(
                f,
                "Landlock ABI {}: file system confined, network not",
                self.landlock_abi
            )?,
            n => write!(
                f,
                "Landlock ABI {n}: file system confined, TCP bind/connect denied"
            )?,
        }
        write!(
            f,
            "; cgroup v2: {} (not used)",
            if self.cgroup_v2_mounted {
                "mounted"
            } else {
                "absent"
            }
        )
    }
}

/// The minimum containment a configuration demands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requirements {
    /// Minimum tree-kill level.
    pub tree_kill: TreeKill,
    /// Whether the private file-system view is required.
    pub fs_view: bool,
    /// Whether the seccomp filter is required.
    pub seccomp: bool,
    /// Minimum Landlock ABI (0: Landlock optional).
    pub landlock_abi: u32,
}

impl Default for Requirements {
    /// Every layer a current Linux gives: user, PID and mount namespaces
    /// (whole-tree kill and the private file-system view), the seccomp
    /// filter, and Landlock. A host that lacks one refuses to start.
    fn default() -> Self {
        Self {
            tree_kill: TreeKill::PidNamespace,
            fs_view: true,
            seccomp: true,
            landlock_abi: 1,
        }
    }
}

impl Requirements {
    /// The explicit opt-out: start on any host, with whatever layers it
    /// has (the containment line at start says which). On a host without
    /// namespaces a solver then sees the host's file system, limited only by
    /// Landlock (if any), and a descendant that calls `setsid` escapes the
    /// tree kill. Use it knowingly, for a trusted solver on a host you
    /// cannot upgrade.
    pub fn none() -> Self {
        Self {
            tree_kill: TreeKill::ProcessGroup,
            fs_view: false,
            seccomp: false,
            landlock_abi: 0,
        }
    }
}

fn cgroup_v2_mounted() -> bool {
    std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|s| {
        s.lines().any(|l| {
            l.split(" - ")
                .nth(1)
                .is_some_and(|t| t.starts_with("cgroup2 "))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weak() -> Containment {
        Containment {
            tree_kill: TreeKill::ProcessGroup,
            fs_view: false,
            private_network: false,
            seccomp: false,
            landlock_abi: 0,
            cgroup_v2_mounted: false,
        }
    }

    #[test]
    fn requirement_above_detection_is_refused() {
        let weak = weak();
        assert!(matches!(
            weak.check(&Requirements::default()),
            Err(ConfigError::ContainmentUnavailable { .. })
        ));
        let need_ll = Requirements {
            landlock_abi: 4,
            ..Requirements::none()
        };
        assert_eq!(
            weak.check(&need_ll),
            Err(ConfigError::LandlockUnavailable {
                required: 4,
                available: 0
            })
        );
        assert_eq!(weak.check(&Requirements::none()), Ok(()));
    }

    #[test]
    fn each_missing_layer_is_named_with_the_opt_out() {
        let full = Containment {
            tree_kill: TreeKill::PidNamespace,
            fs_view: true,
            private_network: true,
            seccomp: true,
            landlock_abi: 7,
            cgroup_v2_mounted: false,
        };
        assert_eq!(full.check(&Requirements::default()), Ok(()));
        let no_view = Containment {
            fs_view: false,
            ..full
        };
        let e = no_view.check(&Requirements::default()).unwrap_err();
        assert!(e.to_string().contains("file-system view"), "{e}");
        assert!(e.to_string().contains("Requirements::none()"), "{e}");
        let no_seccomp = Containment {
            seccomp: false,
            ..full
        };
        let e = no_seccomp.check(&Requirements::default()).unwrap_err();
        assert!(e.to_string().contains("seccomp"), "{e}");
        let no_landlock = Containment {
            landlock_abi: 0,
            ..full
        };
        assert!(no_landlock.check(&Requirements::default()).is_err());
    }
}
