//! The seccomp-bpf filter every solver runs under: system calls a numerical
//! solver never needs, refused with `EPERM` so that a solver which tries one
//! fails cleanly (an error return, not a signal). Compiled once at start
//! and installed by the solver as its last step before `exec`, as two
//! programs: a table of the calls refused whatever their arguments, searched
//! by number ([`table`]: a binary search, cheap for the kernel to install),
//! and seccompiler's program (Firecracker's filter compiler) of the calls
//! refused by their arguments.
//!
//! Refused (`EPERM`):
//!
//! | family | system calls |
//! |---|---|
//! | other processes' memory | `ptrace`, `process_vm_readv`, `process_vm_writev`, `process_madvise`, `kcmp`, `pidfd_getfd` |
//! | the mount table | `mount`, `umount2`, `pivot_root`, `chroot`, `move_mount`, `open_tree`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr` |
//! | namespaces | `unshare`, `setns`, and `clone` with any `CLONE_NEW*` flag |
//! | kernel keyrings | `keyctl`, `add_key`, `request_key` |
//! | kernel attack surface | `bpf`, `perf_event_open`, `userfaultfd`, `io_uring_setup`, `io_uring_enter`, `io_uring_register`, `fanotify_init`, `open_by_handle_at`, `name_to_handle_at` |
//! | the machine | `kexec_load`, `kexec_file_load`, `init_module`, `finit_module`, `delete_module`, `reboot`, `swapon`, `swapoff`, `acct`, `syslog`, `quotactl`, `vhangup`, `settimeofday`, `clock_settime`, `clock_adjtime` (`iopl`, `ioperm` on x86-64) |
//! | execution domain | `personality` other than `PER_LINUX`, `PER_LINUX32`, `ADDR_NO_RANDOMIZE` or a query |
//! | sockets | `socket` of any family but `AF_UNIX`, `AF_INET`, `AF_INET6`; `socketpair` of any family but `AF_UNIX` (Landlock confines TCP; the file-system view hides pathname sockets outside the run) |
//! | terminals | `ioctl(TIOCSTI)`, `ioctl(TIOCLINUX)` (typing into a terminal) |
//!
//! `clone3` answers `ENOSYS`: its flags live in memory a filter cannot
//! read, and the C library then falls back to `clone`, whose flags it can.
//! `fallocate` answers `EOPNOTSUPP`: it reserves disk blocks far faster
//! than a solver can write them, outrunning the disk monitor of the run's
//! envelope between two measurements; `posix_fallocate` then falls back to
//! writing, which the monitor keeps pace with.
//! On x86-64, x32-ABI system calls (numbers with bit 30 set, which would
//! name the calls above by other numbers) are refused, and any other
//! architecture's calls (a 32-bit `int 0x80`) kill the process.
//!
//! A deny list, not an allow list: a solver may use any other call, so a
//! system call added to the kernel after this list was written is allowed
//! until it is added here. Landlock, the file-system view and the
//! namespaces do not depend on this filter.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

mod table;

/// `CLONE_NEW*` flags: a `clone` with any of them is refused.
const NAMESPACE_FLAGS: [u64; 8] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
    0x80, // CLONE_NEWTIME
];

/// `personality` values a solver may set: `PER_LINUX`, `PER_LINUX32`,
/// `ADDR_NO_RANDOMIZE` (its own address-space layout: `setarch -R`), and
/// the query `0xffffffff`. Refused: `READ_IMPLIES_EXEC` and the other
/// execution domains.
const PERSONALITY_ALLOWED: [u64; 4] = [0, 8, 0x0004_0000, 0xffff_ffff];

/// Socket families a solver may open.
const SOCKET_FAMILIES: [u64; 3] = [
    libc::AF_UNIX as u64,
    libc::AF_INET as u64,
    libc::AF_INET6 as u64,
];

/// System calls refused whatever their arguments.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_process_madvise,
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_fanotify_init,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_syslog,
    libc::SYS_quotactl,
    libc::SYS_vhangup,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// `ioctl` requests refused (they push input into a terminal).
const DENIED_IOCTLS: [u64; 2] = [libc::TIOCSTI, libc::TIOCLINUX];

/// One compiled BPF program. (seccompiler supports 64-bit architectures
/// only, where a system call number, `c_long`, is its `i64`.)
pub(crate) type Program = Vec<libc::sock_filter>;

/// The compiled filter: programs installed in order (each one only adds
/// refusals; the kernel applies the strictest answer of all).
pub(crate) struct Filter {
    programs: Vec<Program>,
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter")
            .field(
                "instructions",
                &self.programs.iter().map(Vec::len).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Why the filter could not be compiled (an architecture seccompiler does
/// not know, or a rule it refused).
#[derive(Debug, thiserror::Error)]
#[error("seccomp filter not compiled: {0}")]
pub(crate) struct FilterError(String);

impl Filter {
    /// Compiles the filter for the architecture this crate was built for:
    /// the number table (calls refused whatever their arguments, `clone3`,
    /// x32 calls) and seccompiler's program of the calls refused by their
    /// arguments.
    pub(crate) fn compile() -> Result<Self, FilterError> {
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(err)?;
        let mut entries: Vec<(u32, Verdict)> = DENIED
            .iter()
            .map(|&nr| (nr as u32, Verdict::Eperm))
            .collect();
        entries.push((libc::SYS_clone3 as u32, Verdict::Enosys));
        entries.push((libc::SYS_fallocate as u32, Verdict::Eopnotsupp));
        let table = table::compile(audit_arch(arch), &entries)?;
        let by_argument = SeccompFilter::new(
            argument_rules().map_err(err)?,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(err)?;
        let by_argument = BpfProgram::try_from(by_argument)
            .map_err(err)?
            .into_iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect();
        Ok(Self {
            programs: vec![table, by_argument],
        })
    }

    /// The programs, in installation order.
    pub(crate) fn programs(&self) -> &[Program] {
        &self.programs
    }
}

/// What the number table answers for a call it lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Verdict {
    /// `EPERM`: refused.
    Eperm,
    /// `ENOSYS`: "not implemented" (`clone3`, so that the C library falls
    /// back to `clone`).
    Enosys,
    /// `EOPNOTSUPP`: "not supported by this file system" (`fallocate`, so
    /// that `posix_fallocate` falls back to writing).
    Eopnotsupp,
}

/// The `AUDIT_ARCH_*` value of `arch` (`seccomp_data.arch`).
fn audit_arch(arch: TargetArch) -> u32 {
    const ARCH_64: u32 = 0x8000_0000;
    const ARCH_LE: u32 = 0x4000_0000;
    let machine = match arch {
        TargetArch::x86_64 => 62,
        TargetArch::aarch64 => 183,
        TargetArch::riscv64 => 243,
    };
    machine | ARCH_64 | ARCH_LE
}

fn err(e: impl std::fmt::Display) -> FilterError {
    FilterError(e.to_string())
}

/// The calls refused by their arguments (seccompiler's rules; the
/// program is short, so its linear chain of comparisons costs little).
fn argument_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, seccompiler::BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
    };
    // clone: any namespace flag in the first argument (one rule per flag,
    // rules of a call are alternatives).
    let mut clone = Vec::new();
    for flag in NAMESPACE_FLAGS {
        clone.push(SeccompRule::new(vec![arg(
            0,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )?])?);
    }
    rules.insert(libc::SYS_clone, clone);
    // personality: anything but the allowed values (conditions of a rule
    // must all hold).
    let personality = PERSONALITY_ALLOWED
        .iter()
        .map(|&v| arg(0, SeccompCmpOp::Ne, v))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_personality, vec![SeccompRule::new(personality)?]);
    let socket = SOCKET_FAMILIES
        .iter()
        .map(|&v| arg(0, SeccompCmpOp::Ne, v))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_socket, vec![SeccompRule::new(socket)?]);
    rules.insert(
        libc::SYS_socketpair,
        vec![SeccompRule::new(vec![arg(
            0,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )?])?],
    );
    let mut ioctl = Vec::new();
    for request in DENIED_IOCTLS {
        ioctl.push(SeccompRule::new(vec![arg(1, SeccompCmpOp::Eq, request)?])?);
    }
    rules.insert(libc::SYS_ioctl, ioctl);
    Ok(rules)
}
