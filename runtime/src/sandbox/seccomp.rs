//! The seccomp-bpf filter every solver runs under: system calls a numerical
//! solver never needs, refused with `EPERM` so that a solver which tries one
//! fails cleanly (an error return, not a signal). Compiled once at start
//! with seccompiler (Firecracker's filter compiler) and installed by the
//! solver as its last step before `exec`.
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
    /// Compiles the filter for the architecture this crate was built for.
    pub(crate) fn compile() -> Result<Self, FilterError> {
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(err)?;
        let eperm = SeccompAction::Errno(libc::EPERM as u32);
        let mut denied = deny_rules().map_err(err)?;
        let main = SeccompFilter::new(
            std::mem::take(&mut denied),
            SeccompAction::Allow,
            eperm,
            arch,
        )
        .map_err(err)?;
        let mut clone3 = BTreeMap::new();
        clone3.insert(libc::SYS_clone3, Vec::new());
        let clone3 = SeccompFilter::new(
            clone3,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )
        .map_err(err)?;
        let mut programs = Vec::new();
        for filter in [main, clone3] {
            let bpf = BpfProgram::try_from(filter).map_err(err)?;
            let mut program = x32_prefix();
            program.extend(bpf.into_iter().map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            }));
            programs.push(program);
        }
        Ok(Self { programs })
    }

    /// The programs, in installation order.
    pub(crate) fn programs(&self) -> &[Program] {
        &self.programs
    }
}

fn err(e: impl std::fmt::Display) -> FilterError {
    FilterError(e.to_string())
}

fn deny_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, seccompiler::BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &nr in DENIED {
        // No rule: the call matches whatever its arguments.
        rules.insert(nr, Vec::new());
    }
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

/// On x86-64: refuse x32-ABI calls (number ≥ 2^30) before anything else,
/// since the same audit architecture carries them under other numbers.
#[cfg(target_arch = "x86_64")]
fn x32_prefix() -> Program {
    const X32_BIT: u32 = 0x4000_0000;
    vec![
        // A = seccomp_data.nr
        bpf_stmt((libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, 0),
        // if A >= X32_BIT fall through to the refusal, else skip it
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: X32_BIT,
        },
        bpf_stmt(
            (libc::BPF_RET | libc::BPF_K) as u16,
            libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        ),
    ]
}

#[cfg(not(target_arch = "x86_64"))]
fn x32_prefix() -> Program {
    Vec::new()
}

#[cfg(target_arch = "x86_64")]
fn bpf_stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_compiles_on_this_architecture() {
        let f = Filter::compile().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.programs().len(), 2);
        for p in f.programs() {
            assert!(!p.is_empty() && p.len() < 4096, "{}", p.len());
        }
    }
}
