//! The child side: all code that runs between `fork` (or `clone`) and
//! `exec` (or `_exit`): a run's monitor, its init and the solver before
//! its `exec`, the child that makes a network namespace for the pool, and
//! the start-up probes. It holds the only `unsafe` code of the runtime and
//! uses nothing of the crate outside this module, only `std`, `libc` and
//! `rustix` (`tests/tests/layers.rs` checks both). The host side prepares a
//! [`ChildPlan`] and hands it to [`install`]; the run's processes answer on
//! the pipes that `record` describes.
//!
//! **The rule after the fork.** A child of the (multithreaded) server makes
//! system calls on values prepared before the fork and nothing else: it
//! never allocates, never takes a lock, and runs no signal handler (every
//! disposition is reset first). A child that shares its parent's memory
//! (`CLONE_VM`) also keeps off the C library's per-thread state, `errno`
//! first, while its parent runs (the monitor beside its init: see
//! `monitor::spawn_init`).
//!
//! Process layout with a PID namespace (the whole-tree level):
//!
//! ```text
//! server ── monitor (P) ── init (C, pid 1 of a new PID namespace) ── solver (G)
//! ```
//!
//! * The **monitor** is the process the server's `tokio::process::Child`
//!   owns. It moves its working directory to the run directory (by
//!   descriptor), `unshare`s a user + PID (+ mount, for the file-system
//!   view) namespace, maps the solver's ids in it, starts the init, closes
//!   every descriptor except its control pipe and waits. When the control pipe
//!   carries the [`KILL_WORD`] or hangs up (timeout, cancellation, a disk
//!   limit passed, drop of the run, or the server died), it sends `SIGKILL`
//!   to the init. The init is its
//!   unreaped child, so that pid cannot have been reused.
//! * The **init** is pid 1 of the namespace: it builds the private
//!   file-system view and enters it (`mount`), starts the
//!   solver and reaps every process of the namespace. When the solver
//!   exits, it kills every other process of the namespace (grandchildren
//!   that called `setsid` and double-forked included), reaps them all, and
//!   only then writes one fixed-size [`ExitRecord`] to the status pipe and
//!   exits: the record means the whole tree is dead, and the server answers
//!   on it. When pid 1 of a PID namespace exits for any other reason (the
//!   monitor's kill), the kernel kills every process in it.
//! * The **solver** hardens itself (`setsid`, working directory in the run
//!   directory, rlimits, no-new-privs, no capabilities, Landlock,
//!   `close_range(CLOEXEC)`, the seccomp filter last) and `exec`s the solver
//!   executable from a descriptor (`execveat(AT_EMPTY_PATH)`): the file
//!   checked at registration, never a path looked up again.
//!
//! Without a PID namespace (the process-group level) the monitor forks the
//! solver directly, kills its process group, and writes the exit record
//! itself; a descendant that calls `setsid` escapes that kill.
//!
//! The server's fork of the monitor is the only copy of the server's memory a
//! launch makes. The init is started with `clone(CLONE_VM)` on a stack
//! mapped before that fork ([`CloneStack`]): it shares the monitor's memory
//! (a private, non-dumpable copy of the server's) for its whole life, so
//! that copy is neither copied again nor torn down twice; the two run side
//! by side, and the monitor then keeps off the C library's per-thread
//! state (`monitor::spawn_init`). The solver is started with
//! `clone(CLONE_VM | CLONE_VFORK)` on another such stack: it shares its
//! parent's memory until its `exec`, while the parent waits.

#![allow(unsafe_code)]

mod monitor;
mod mount;
mod netns;
mod plan;
mod probe;
mod record;
mod solver;
mod stack;
mod sys;

pub(crate) use monitor::install;
#[cfg(test)]
pub(crate) use mount::VIEW_RUN_DIR_C;
pub(crate) use mount::{Bind, DEVICE, Node, READ_ONLY, RunMounts, ViewPlan};
pub use mount::{SOLVER_GID, SOLVER_UID};
pub(crate) use netns::make as make_netns;
pub(crate) use plan::{
    CStrArray, ChildPlan, ExecPlan, Filter, IdMaps, NetNs, RlimitPlan, ServerStrings, ViewChild,
    ViewRules,
};
pub(crate) use probe::{landlock_abi, probe_cgroup_join, probe_host};
pub(crate) use record::{ExitRecord, KILL_WORD, RECORD_LEN};
pub(crate) use stack::CloneStack;
pub(crate) use sys::block_all_signals;
