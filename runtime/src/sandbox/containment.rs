//! What the host lets the sandbox do, detected once at server start: how a
//! run's process tree is killed (PID namespace or process group), which
//! Landlock ABI confines it, whether cgroup v2 is mounted. The detected
//! level is reported as is, never more; a configuration demanding more than
//! the host offers is refused.

use std::fmt;

use super::error::ConfigError;
use super::spawn;

/// How a run's process tree is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TreeKill {
    /// `killpg` of the solver's session: a descendant that calls `setsid`
    /// (or `setpgid`) escapes the kill and can keep the log pipes open; the
    /// log readers are then abandoned after a grace period.
    ProcessGroup,
    /// A new user + PID namespace whose pid 1 is the sandbox's init: when it
    /// is killed or exits, the kernel kills every process in the namespace.
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

/// The containment the host offers, as detected at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Containment {
    /// How the tree is killed.
    pub tree_kill: TreeKill,
    /// Landlock ABI version in use (0: Landlock unavailable, no file-system
    /// or network confinement beyond rlimits and uid).
    pub landlock_abi: u32,
    /// Whether a cgroup v2 hierarchy is mounted. Reported only: this version
    /// does not create cgroups (no `cgroup.kill`, no memory or pids limit).
    pub cgroup_v2_mounted: bool,
}

impl Containment {
    /// Probes the host. `allow_pid_namespace: false` forces the process-group
    /// level (for hosts where creating namespaces is unwanted).
    pub fn detect(allow_pid_namespace: bool) -> Self {
        let tree_kill = if allow_pid_namespace && spawn::probe_pid_namespace() {
            TreeKill::PidNamespace
        } else {
            TreeKill::ProcessGroup
        };
        let c = Self {
            tree_kill,
            landlock_abi: spawn::landlock_abi(),
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

    /// Checks the detected level against what the configuration requires.
    pub fn check(&self, required: &Requirements) -> Result<(), ConfigError> {
        if self.tree_kill < required.tree_kill {
            return Err(ConfigError::ContainmentUnavailable {
                required: required.tree_kill.describe(),
                available: self.tree_kill.describe(),
            });
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
    /// Minimum Landlock ABI (0: Landlock optional).
    pub landlock_abi: u32,
}

impl Default for Requirements {
    /// Requires nothing beyond the process-group level.
    fn default() -> Self {
        Self {
            tree_kill: TreeKill::ProcessGroup,
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

    #[test]
    fn requirement_above_detection_is_refused() {
        let weak = Containment {
            tree_kill: TreeKill::ProcessGroup,
            landlock_abi: 0,
            cgroup_v2_mounted: false,
        };
        let need_ns = Requirements {
            tree_kill: TreeKill::PidNamespace,
            landlock_abi: 0,
        };
        assert!(matches!(
            weak.check(&need_ns),
            Err(ConfigError::ContainmentUnavailable { .. })
        ));
        let need_ll = Requirements {
            tree_kill: TreeKill::ProcessGroup,
            landlock_abi: 4,
        };
        assert_eq!(
            weak.check(&need_ll),
            Err(ConfigError::LandlockUnavailable {
                required: 4,
                available: 0
            })
        );
        assert_eq!(weak.check(&Requirements::default()), Ok(()));
    }
}
