//! The seccomp-bpf filter every solver runs under: system calls a numerical
//! solver never needs, refused with `EPERM` (an error return, not a
//! signal). Compiled once at start and installed by the solver as its last
//! step before `exec`, as one program: a fixed prefix (the architecture,
//! x32 calls, and the two calls answered otherwise), then seccompiler's
//! compilation of the rules refused with `EPERM` (a seccompiler program
//! gives every call it matches the same answer).
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
//! read, and the C library falls back to `clone`, whose flags it can.
//! `fallocate` answers `EOPNOTSUPP`: it reserves disk blocks faster than
//! the disk monitor measures; `posix_fallocate` falls back to writing,
//! which the monitor keeps pace with. On x86-64, x32-ABI calls (bit 30 set:
//! the calls above by other numbers) are refused; any other architecture's
//! calls (a 32-bit `int 0x80`) kill the process.
//!
//! A deny list: any other call is allowed, including one the kernel gained
//! after this list was written. Landlock, the file-system view and the
//! namespaces do not depend on this filter.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::child::Filter;

/// `CLONE_NEW*` flags: a `clone` with any of them is refused.
#[rustfmt::skip]
const NAMESPACE_FLAGS: [u32; 8] = [
    libc::CLONE_NEWNS as u32, libc::CLONE_NEWUSER as u32, libc::CLONE_NEWPID as u32,
    libc::CLONE_NEWNET as u32, libc::CLONE_NEWIPC as u32, libc::CLONE_NEWUTS as u32,
    libc::CLONE_NEWCGROUP as u32, 0x80, // CLONE_NEWTIME
];

/// `personality` values a solver may set: `PER_LINUX`, `PER_LINUX32`,
/// `ADDR_NO_RANDOMIZE` (`setarch -R`) and the query `0xffffffff`; refused:
/// `READ_IMPLIES_EXEC` and the other execution domains.
const PERSONALITY_ALLOWED: [u32; 4] = [0, 8, 0x0004_0000, 0xffff_ffff];

/// Socket families a solver may open.
#[rustfmt::skip]
const SOCKET_FAMILIES: [u32; 3] =
    [libc::AF_UNIX as u32, libc::AF_INET as u32, libc::AF_INET6 as u32];

/// `socketpair` families a solver may use.
const SOCKETPAIR_FAMILIES: [u32; 1] = [libc::AF_UNIX as u32];

/// System calls refused whatever their arguments; each family of the module docs' table
/// starts a line.
#[rustfmt::skip]
const DENIED: &[libc::c_long] = { use libc::*; &[
    SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_process_madvise, SYS_kcmp,
    SYS_pidfd_getfd,
    SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_move_mount, SYS_open_tree, SYS_fsopen,
    SYS_fsconfig, SYS_fsmount, SYS_fspick, SYS_mount_setattr,
    SYS_unshare, SYS_setns,
    SYS_keyctl, SYS_add_key, SYS_request_key,
    SYS_bpf, SYS_perf_event_open, SYS_userfaultfd, SYS_io_uring_setup, SYS_io_uring_enter,
    SYS_io_uring_register, SYS_fanotify_init, SYS_open_by_handle_at, SYS_name_to_handle_at,
    SYS_kexec_load, SYS_kexec_file_load, SYS_init_module, SYS_finit_module, SYS_delete_module,
    SYS_reboot, SYS_swapon, SYS_swapoff, SYS_acct, SYS_syslog, SYS_quotactl, SYS_vhangup,
    SYS_settimeofday, SYS_clock_settime, SYS_clock_adjtime,
    #[cfg(target_arch = "x86_64")] SYS_iopl,
    #[cfg(target_arch = "x86_64")] SYS_ioperm,
] };

/// `ioctl` requests refused (they push input into a terminal).
const DENIED_IOCTLS: [u32; 2] = [libc::TIOCSTI as u32, libc::TIOCLINUX as u32];

/// One compiled BPF program.
pub(crate) type Program = Vec<libc::sock_filter>;

/// Why the filter could not be compiled (an unknown architecture, or rules seccompiler refuses).
#[derive(Debug, thiserror::Error)]
#[error("seccomp filter not compiled: {0}")]
pub(crate) struct FilterError(String);

impl From<seccompiler::BackendError> for FilterError {
    fn from(e: seccompiler::BackendError) -> Self {
        Self(e.to_string())
    }
}

impl Filter {
    /// Compiles the filter for this build's architecture (at start: it allocates).
    pub(crate) fn compile() -> Result<Self, FilterError> {
        let arch = std::env::consts::ARCH;
        let target = TargetArch::try_from(arch).map_err(|e| FilterError(e.to_string()))?;
        let eperm = SeccompAction::Errno(libc::EPERM as u32);
        let refused = SeccompFilter::new(rules()?, SeccompAction::Allow, eperm, target)?;
        let compiled = BpfProgram::try_from(refused)?;
        let mut program = prefix(audit_arch(arch)?);
        program.extend(compiled.into_iter().map(|i| insn(i.code, i.jt, i.jf, i.k)));
        Ok(Self::new(program))
    }
}

/// The calls refused with `EPERM`, as seccompiler rules: a call matches
/// when any of its rules does (always, without rules), a rule when all its
/// conditions do. Arguments are compared on their low 32 bits (`Dword`):
/// what the kernel reads of an `int` or `unsigned int`, and of `clone`'s
/// flags.
fn rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, FilterError> {
    let arg = |index: u8, op: SeccompCmpOp, value: u32| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, u64::from(value))
    };
    // Refused unless the first argument is one of `allowed`.
    let unless = |allowed: &[u32]| -> Result<Vec<SeccompRule>, FilterError> {
        let all_differ = allowed
            .iter()
            .map(|&v| arg(0, SeccompCmpOp::Ne, v))
            .collect::<Result<_, _>>()?;
        Ok(vec![SeccompRule::new(all_differ)?])
    };
    // Refused when argument `index` compares with any of `values` by `op`.
    let any = |index: u8, values: &[u32], op: fn(u32) -> SeccompCmpOp| {
        let rule = |&v: &u32| Ok(SeccompRule::new(vec![arg(index, op(v), v)?])?);
        values.iter().map(rule).collect::<Result<_, FilterError>>()
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    let masked = |f| SeccompCmpOp::MaskedEq(u64::from(f));
    let eq = |_| SeccompCmpOp::Eq;
    rules.insert(libc::SYS_clone, any(0, &NAMESPACE_FLAGS, masked)?);
    rules.insert(libc::SYS_personality, unless(&PERSONALITY_ALLOWED)?);
    rules.insert(libc::SYS_socket, unless(&SOCKET_FAMILIES)?);
    rules.insert(libc::SYS_socketpair, unless(&SOCKETPAIR_FAMILIES)?);
    rules.insert(libc::SYS_ioctl, any(1, &DENIED_IOCTLS, eq)?);
    Ok(rules)
}

/// The program before seccompiler's part (the architecture, x32 calls,
/// `clone3`, `fallocate`: see the module docs). Each jump skips at most the
/// one return after it.
fn prefix(audit_arch: u32) -> Program {
    const LD_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    // Offsets of `nr` and `arch` in `struct seccomp_data`.
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    let errno = |e: libc::c_int| libc::SECCOMP_RET_ERRNO | e as u32;
    let mut program = vec![
        insn(LD_ABS, 0, 0, ARCH),
        insn(JEQ, 1, 0, audit_arch),
        insn(RET, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
        insn(LD_ABS, 0, 0, NR),
    ];
    #[cfg(target_arch = "x86_64")]
    {
        const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
        const X32_BIT: u32 = 0x4000_0000;
        program.push(insn(JGE, 0, 1, X32_BIT));
        program.push(insn(RET, 0, 0, errno(libc::EPERM)));
    }
    for (nr, answer) in [
        (libc::SYS_clone3, errno(libc::ENOSYS)),
        (libc::SYS_fallocate, errno(libc::EOPNOTSUPP)),
    ] {
        program.push(insn(JEQ, 0, 1, nr as u32));
        program.push(insn(RET, 0, 0, answer));
    }
    program
}

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The `AUDIT_ARCH_*` value (`seccomp_data.arch`) of a `std::env::consts::ARCH`.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn arch() -> u32 {
        audit_arch(std::env::consts::ARCH).unwrap()
    }

    /// A classic-BPF interpreter for the program's instructions over a
    /// `seccomp_data` (nr, arch, args): its answers without installing it
    /// (the hostile suite's `refused_system_calls` installs it).
    fn run(program: &[libc::sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
        let word = |offset: u32| -> u32 {
            match offset {
                0 => nr,
                4 => arch,
                8 | 12 => 0,
                o if (16..64).contains(&o) => {
                    let a = args[((o - 16) / 8) as usize];
                    if (o - 16) % 8 == 0 {
                        a as u32
                    } else {
                        (a >> 32) as u32
                    }
                }
                o => panic!("load at {o}"),
            }
        };
        let (mut acc, mut pc) = (0u32, 0usize);
        loop {
            let i = program[pc];
            pc += 1;
            let code = u32::from(i.code);
            match code {
                c if c == (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) => acc = word(i.k),
                c if c == (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) => acc &= i.k,
                c if c == (libc::BPF_JMP | libc::BPF_JA) => pc += i.k as usize,
                c if c == (libc::BPF_RET | libc::BPF_K) => return i.k,
                c => {
                    let taken = match c {
                        c if c == (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) => acc == i.k,
                        c if c == (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) => acc >= i.k,
                        c if c == (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) => acc > i.k,
                        c if c == (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) => acc & i.k != 0,
                        c => panic!("instruction {c:#x}"),
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
            }
        }
    }

    #[test]
    fn refusals_are_the_documented_ones() {
        let arch = arch();
        let filter = Filter::compile().unwrap();
        let answer =
            |nr: libc::c_long, args: [u64; 6]| run(filter.program(), nr as u32, arch, args);
        let errno = |e: libc::c_int| libc::SECCOMP_RET_ERRNO | e as u32;
        let eperm = errno(libc::EPERM);
        for &nr in DENIED {
            assert_eq!(answer(nr, [0; 6]), eperm, "{nr}");
        }
        // Another architecture's calls are killed, whatever the number.
        for nr in [0u32, 1, 101, 300] {
            let r = run(filter.program(), nr, 0x4000_0003, [0; 6]);
            assert_eq!(r, libc::SECCOMP_RET_KILL_PROCESS);
        }
        // x32-ABI calls are refused, whatever the number.
        #[cfg(target_arch = "x86_64")]
        for nr in [0x4000_0000u32, 0x4000_0000 | libc::SYS_getpid as u32] {
            assert_eq!(run(filter.program(), nr, arch, [0; 6]), eperm, "{nr:#x}");
        }
        assert_eq!(answer(libc::SYS_clone3, [0; 6]), errno(libc::ENOSYS));
        assert_eq!(answer(libc::SYS_fallocate, [0; 6]), errno(libc::EOPNOTSUPP));
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_exit_group,
        ] {
            assert_eq!(answer(nr, [0; 6]), libc::SECCOMP_RET_ALLOW, "{nr}");
        }
        let a = |a0: i64, a1: u64| [a0 as u64, a1, 0, 0, 0, 0];
        let allow = libc::SECCOMP_RET_ALLOW;
        let clone = libc::SYS_clone;
        let sigchld = i64::from(libc::SIGCHLD);
        assert_eq!(answer(clone, a(sigchld, 0)), allow);
        let thread = i64::from(libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND);
        assert_eq!(answer(clone, a(thread, 0)), allow);
        for ns in [
            libc::CLONE_NEWUSER,
            libc::CLONE_NEWNS,
            libc::CLONE_NEWNET,
            0x80,
        ] {
            let flags = i64::from(ns) | sigchld;
            assert_eq!(answer(clone, a(flags, 0)), eperm, "{ns:#x}");
        }
        let socket = libc::SYS_socket;
        for family in [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6] {
            assert_eq!(answer(socket, a(i64::from(family), 0)), allow, "{family}");
        }
        for family in [libc::AF_NETLINK, libc::AF_PACKET, libc::AF_VSOCK] {
            assert_eq!(answer(socket, a(i64::from(family), 0)), eperm, "{family}");
        }
        let unix = i64::from(libc::AF_UNIX);
        assert_eq!(answer(libc::SYS_socketpair, a(unix, 0)), allow);
        let inet = i64::from(libc::AF_INET);
        assert_eq!(answer(libc::SYS_socketpair, a(inet, 0)), eperm);
        assert_eq!(answer(libc::SYS_personality, a(0, 0)), allow);
        assert_eq!(answer(libc::SYS_personality, a(0xffff_ffff, 0)), allow);
        // READ_IMPLIES_EXEC.
        assert_eq!(answer(libc::SYS_personality, a(0x0040_0000, 0)), eperm);
        let ioctl = libc::SYS_ioctl;
        assert_eq!(answer(ioctl, a(1, libc::TCGETS)), allow);
        assert_eq!(answer(ioctl, a(1, libc::TIOCSTI)), eperm);
        assert_eq!(answer(ioctl, a(1, libc::TIOCLINUX)), eperm);
        // The upper half of a 64-bit argument is not what the kernel reads.
        assert_eq!(answer(ioctl, a(1, libc::TIOCSTI | 1 << 32)), eperm);
    }
}
