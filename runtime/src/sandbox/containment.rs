//! What the host lets the sandbox do, detected at server start: tree kill
//! (PID namespace or process group), the private view (user + mount
//! namespace), seccomp, the Landlock ABI, the envelope's cgroup backend; and
//! what a configuration requires of it ([`Requirements`]).

use std::fmt;

use super::error::ConfigError;
use super::host::cgroup::EnvelopeSupport;

/// The layers [`Containment::check`] names when the host lacks them.
const FS_VIEW: &str = "a private file-system view (user and mount namespaces)";
const MEMORY: &str = "a memory limit for the run's whole process tree, swap included (the memory controller of a cgroup v2 subtree delegated to the server, or the cgroup v1 memory hierarchy, writable by the server, with swap accounting where the host swaps)";
const PROCESSES: &str = "a process limit for the run's whole tree (the pids controller of a cgroup v2 subtree delegated to the server, or the cgroup v1 pids hierarchy, writable by the server)";
const CPU_SHARE: &str = "a CPU share for the run's whole tree (the cpu controller of a cgroup v2 subtree delegated to the server, or the cgroup v1 cpu hierarchy, writable by the server)";

/// How a run's process tree is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TreeKill {
    /// `killpg` of the solver's session: a descendant that calls `setsid` or
    /// `setpgid` escapes it (and may hold the log pipes until the log grace).
    ProcessGroup,
    /// A user + PID namespace with the sandbox's init: when it dies, the kernel kills the rest.
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
    /// Whether each run gets its private file-system view (mount namespace,
    /// fresh root); without it a solver sees the host's, limited by Landlock.
    pub fs_view: bool,
    /// Whether each run has a network namespace of its own (with the view,
    /// unless `SandboxConfig::host_network`): no traffic leaves the run.
    pub private_network: bool,
    /// Whether the seccomp filter is installed before each solver's exec.
    pub seccomp: bool,
    /// Landlock ABI version in use (0: unavailable).
    pub landlock_abi: u32,
    /// The cgroup backend bounding the tree's memory, processes and CPU
    /// share, if any (the disk monitor and tmpfs caps need none).
    pub envelope: EnvelopeSupport,
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
    /// forces the process-group level and no view.
    pub(crate) fn from_support(
        host: HostSupport,
        namespaces: bool,
        private_network: bool,
        envelope: EnvelopeSupport,
    ) -> Self {
        let ns = namespaces && host.pid_namespace;
        // A cgroup limit holds only if the solver cannot write its cgroup
        // (no cgroupfs in its view, or Landlock); else it is made, not claimed.
        let guarded = (ns && host.fs_view) || host.landlock_abi >= 1;
        let envelope = if guarded {
            envelope
        } else {
            EnvelopeSupport {
                backend: envelope.backend,
                ..EnvelopeSupport::NONE
            }
        };
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
            envelope,
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
        if self.landlock_abi < required.landlock_abi {
            return Err(ConfigError::LandlockUnavailable {
                required: required.landlock_abi,
                available: self.landlock_abi,
            });
        }
        let e = &self.envelope;
        let layers = [
            (required.fs_view, self.fs_view, FS_VIEW),
            (required.seccomp, self.seccomp, "a seccomp filter"),
            (required.memory, e.memory && e.swap, MEMORY),
            (required.processes, e.processes, PROCESSES),
            (required.cpu_share, e.cpu, CPU_SHARE),
        ];
        for (required, held, layer) in layers {
            if required && !held {
                return Err(ConfigError::LayerUnavailable(layer));
            }
        }
        Ok(())
    }
}

impl fmt::Display for Containment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pick = |on: bool, yes: &'static str, no: &'static str| if on { yes } else { no };
        write!(
            f,
            "tree kill: {}; file system: {}; network: {}; seccomp: {}; ",
            self.tree_kill.describe(),
            pick(
                self.fs_view,
                "private view (mount namespace, fresh root)",
                "the host's (no private view)"
            ),
            pick(
                self.private_network,
                "none (a namespace of its own)",
                "the host's"
            ),
            pick(self.seccomp, "filter on", "off"),
        )?;
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
            "; envelope: {}; run directory bytes and entries: disk monitor",
            self.envelope
        )?;
        if self.fs_view {
            f.write_str("; /tmp and /dev/shm: size-capped tmpfs")?;
        }
        Ok(())
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
    /// Whether the run's tree must be bounded in memory, swap included
    /// ([`Limits::memory`](super::Limits::memory)).
    pub memory: bool,
    /// Whether the run's tree must be bounded in processes and threads
    /// ([`Limits::processes`](super::Limits::processes)).
    pub processes: bool,
    /// Whether the run's tree must be held to its CPU share
    /// ([`Limits::cpu_share`](super::Limits::cpu_share)).
    pub cpu_share: bool,
}

impl Default for Requirements {
    /// Every layer: PID namespace, private view, seccomp, Landlock, and the
    /// envelope's cgroup limits. A host that lacks one refuses to start.
    fn default() -> Self {
        Self {
            tree_kill: TreeKill::PidNamespace,
            fs_view: true,
            seccomp: true,
            landlock_abi: 1,
            memory: true,
            processes: true,
            cpu_share: true,
        }
    }
}

impl Requirements {
    /// The explicit opt-out: start with whatever layers the host has (logged).
    /// Without namespaces a solver sees the host's file system and `setsid`
    /// escapes the tree kill; without cgroups a run can take the host's
    /// memory, processes and CPU. For trusted solvers only.
    pub fn none() -> Self {
        Self {
            tree_kill: TreeKill::ProcessGroup,
            fs_view: false,
            seccomp: false,
            landlock_abi: 0,
            ..Self::without_envelope()
        }
    }

    /// Every layer but the envelope's cgroup limits (a host with no writable
    /// cgroup): a run can take the host's memory, processes and CPU. Disk
    /// limits hold, but not for deleted files held open.
    pub fn without_envelope() -> Self {
        Self {
            memory: false,
            processes: false,
            cpu_share: false,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_above_detection_is_refused() {
        let weak = Containment {
            tree_kill: TreeKill::ProcessGroup,
            fs_view: false,
            private_network: false,
            seccomp: false,
            landlock_abi: 0,
            envelope: EnvelopeSupport::NONE,
        };
        assert!(matches!(
            weak.check(&Requirements::default()),
            Err(ConfigError::ContainmentUnavailable { .. })
        ));
        let need_ll = Requirements {
            landlock_abi: 4,
            ..Requirements::none()
        };
        let refused = ConfigError::LandlockUnavailable {
            required: 4,
            available: 0,
        };
        assert_eq!(weak.check(&need_ll), Err(refused));
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
            envelope: EnvelopeSupport {
                backend: super::super::host::cgroup::EnvelopeBackend::CgroupV1,
                memory: true,
                swap: true,
                processes: true,
                cpu: true,
            },
        };
        assert_eq!(full.check(&Requirements::default()), Ok(()));
        type Remove = fn(&mut Containment);
        let cases: [(Remove, &str); 6] = [
            (|c| c.fs_view = false, "file-system view"),
            (|c| c.seccomp = false, "seccomp"),
            (|c| c.envelope.memory = false, "memory limit"),
            (|c| c.envelope.swap = false, "swap included"),
            (|c| c.envelope.processes = false, "process limit"),
            (|c| c.envelope.cpu = false, "CPU share"),
        ];
        for (i, (remove, word)) in cases.into_iter().enumerate() {
            let mut c = full;
            remove(&mut c);
            let e = c.check(&Requirements::default()).unwrap_err();
            assert!(e.to_string().contains(word), "{e}");
            assert!(e.to_string().contains("Requirements::none()"), "{e}");
            let without = c.check(&Requirements::without_envelope());
            assert_eq!(without.is_ok(), i >= 2, "{i}");
        }
        let mut no_landlock = full;
        no_landlock.landlock_abi = 0;
        assert!(no_landlock.check(&Requirements::default()).is_err());
    }
}
