//! The seccomp-bpf filter every solver runs under: system calls a numerical
//! solver never needs, refused with `EPERM` so that a solver which tries one
//! fails cleanly (an error return, not a signal). Compiled once at start
//! and installed by the solver as its last step before `exec`, as one
//! program ([`table`]): a binary search on the call number, whose leaves
//! answer at once or check one argument (cheap for the kernel to install
//! and to run). Tested against seccompiler's (Firecracker's filter
//! compiler) compilation of the same rules.
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

mod table;

/// `CLONE_NEW*` flags: a `clone` with any of them is refused.
const NAMESPACE_FLAGS: [u32; 8] = [
    libc::CLONE_NEWNS as u32,
    libc::CLONE_NEWUSER as u32,
    libc::CLONE_NEWPID as u32,
    libc::CLONE_NEWNET as u32,
    libc::CLONE_NEWIPC as u32,
    libc::CLONE_NEWUTS as u32,
    libc::CLONE_NEWCGROUP as u32,
    0x80, // CLONE_NEWTIME
];

/// `personality` values a solver may set: `PER_LINUX`, `PER_LINUX32`,
/// `ADDR_NO_RANDOMIZE` (its own address-space layout: `setarch -R`), and
/// the query `0xffffffff`. Refused: `READ_IMPLIES_EXEC` and the other
/// execution domains.
const PERSONALITY_ALLOWED: [u32; 4] = [0, 8, 0x0004_0000, 0xffff_ffff];

/// Socket families a solver may open.
const SOCKET_FAMILIES: [u32; 3] = [
    libc::AF_UNIX as u32,
    libc::AF_INET as u32,
    libc::AF_INET6 as u32,
];

/// `socketpair` families a solver may use.
const SOCKETPAIR_FAMILIES: [u32; 1] = [libc::AF_UNIX as u32];

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
const DENIED_IOCTLS: [u32; 2] = [libc::TIOCSTI as u32, libc::TIOCLINUX as u32];

/// The calls refused by their arguments.
const BY_ARGUMENT: [(libc::c_long, ArgCheck); 5] = [
    (
        libc::SYS_clone,
        ArgCheck::AnyBit {
            arg: 0,
            mask: {
                let mut mask = 0;
                let mut i = 0;
                while i < NAMESPACE_FLAGS.len() {
                    mask |= NAMESPACE_FLAGS[i];
                    i += 1;
                }
                mask
            },
        },
    ),
    (
        libc::SYS_personality,
        ArgCheck::Unless {
            arg: 0,
            allowed: &PERSONALITY_ALLOWED,
        },
    ),
    (
        libc::SYS_socket,
        ArgCheck::Unless {
            arg: 0,
            allowed: &SOCKET_FAMILIES,
        },
    ),
    (
        libc::SYS_socketpair,
        ArgCheck::Unless {
            arg: 0,
            allowed: &SOCKETPAIR_FAMILIES,
        },
    ),
    (
        libc::SYS_ioctl,
        ArgCheck::OneOf {
            arg: 1,
            refused: &DENIED_IOCTLS,
        },
    ),
];

/// One compiled BPF program.
pub(crate) type Program = Vec<libc::sock_filter>;

/// The compiled filter: one program.
pub(crate) struct Filter {
    program: Program,
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter")
            .field("instructions", &self.program.len())
            .finish()
    }
}

/// Why the filter could not be compiled (an architecture this crate does
/// not know, or a program whose jumps do not fit classic BPF).
#[derive(Debug, thiserror::Error)]
#[error("seccomp filter not compiled: {0}")]
pub(crate) struct FilterError(String);

impl Filter {
    /// Compiles the filter for the architecture this crate was built for.
    pub(crate) fn compile() -> Result<Self, FilterError> {
        let arch = audit_arch(std::env::consts::ARCH)?;
        let program = table::compile(arch, &entries())?;
        Ok(Self { program })
    }

    /// The program to install.
    pub(crate) fn program(&self) -> &Program {
        &self.program
    }
}

/// Every listed call and its answer.
fn entries() -> Vec<(u32, Answer)> {
    let mut entries: Vec<(u32, Answer)> = DENIED
        .iter()
        .map(|&nr| (nr as u32, Answer::Always(Verdict::Eperm)))
        .collect();
    entries.push((libc::SYS_clone3 as u32, Answer::Always(Verdict::Enosys)));
    entries.push((
        libc::SYS_fallocate as u32,
        Answer::Always(Verdict::Eopnotsupp),
    ));
    entries.extend(
        BY_ARGUMENT
            .iter()
            .map(|&(nr, check)| (nr as u32, Answer::ByArgument(check))),
    );
    entries
}

/// What the filter answers for a call it lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The same answer whatever the arguments.
    Always(Verdict),
    /// Refused (`EPERM`) or allowed by one argument.
    ByArgument(ArgCheck),
}

/// A check of the low 32 bits of one argument: what the kernel reads of an
/// `int` or `unsigned int` argument, and of `clone`'s flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgCheck {
    /// Refused when any bit of `mask` is set.
    AnyBit { arg: u8, mask: u32 },
    /// Refused unless the argument is one of `allowed`.
    Unless { arg: u8, allowed: &'static [u32] },
    /// Refused when the argument is one of `refused`.
    OneOf { arg: u8, refused: &'static [u32] },
}

impl ArgCheck {
    /// The index of the argument checked.
    pub(crate) fn arg(&self) -> u8 {
        match *self {
            Self::AnyBit { arg, .. } | Self::Unless { arg, .. } | Self::OneOf { arg, .. } => arg,
        }
    }
}

/// A fixed answer of the filter.
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

/// The `AUDIT_ARCH_*` value (`seccomp_data.arch`) of the architecture
/// named as `std::env::consts::ARCH` names it.
fn audit_arch(arch: &str) -> Result<u32, FilterError> {
    const ARCH_64: u32 = 0x8000_0000;
    const ARCH_LE: u32 = 0x4000_0000;
    let machine = match arch {
        "x86_64" => 62,
        "aarch64" => 183,
        "riscv64" => 243,
        other => return Err(FilterError(format!("no seccomp filter for {other}"))),
    };
    Ok(machine | ARCH_64 | ARCH_LE)
}
