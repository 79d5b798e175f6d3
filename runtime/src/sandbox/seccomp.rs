//! The seccomp-bpf filter every solver runs under: system calls a numerical
//! solver never needs, refused with `EPERM` (an error return, not a
//! signal). Compiled once at start, installed by the solver as its last
//! step before `exec`: a fixed prefix (the architecture, x32 calls, the two
//! calls answered otherwise), then seccompiler's program of the `EPERM` rules.
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

/// Refused whatever the arguments; one line per family of the module docs' table.
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

/// The calls refused with `EPERM`: a call matches when any of its rules
/// does (always, without rules), a rule when all its conditions do.
/// Arguments are compared on their low 32 bits (`Dword`): what the kernel
/// reads of an `int` or `unsigned int`, and of `clone`'s flags.
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

    /// The program's answer for a `seccomp_data` (nr, arch, args), without
    /// installing it (the hostile suite's `refused_system_calls` does).
    fn run(program: &[libc::sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
        let word = |offset: u32| -> u32 {
            match offset {
                0 => nr,
                4 => arch,
                8 | 12 => 0,
                o if (16..64).contains(&o) => {
                    let shift = if (o - 16) % 8 == 0 { 0 } else { 32 };
                    (args[((o - 16) / 8) as usize] >> shift) as u32
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
        use libc::{SYS_clone, SYS_ioctl, SYS_personality, SYS_socket, SYS_socketpair};
        let allow = libc::SECCOMP_RET_ALLOW;
        let sigchld = libc::SIGCHLD as u64;
        let thread = (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64;
        let ns = |flag: libc::c_int| flag as u64 | sigchld;
        let family = |f: libc::c_int| f as u64;
        // (call, first argument, second argument, answer)
        let cases: &[(libc::c_long, u64, u64, u32)] = &[
            (libc::SYS_read, 0, 0, allow),
            (libc::SYS_write, 0, 0, allow),
            (libc::SYS_openat, 0, 0, allow),
            (libc::SYS_exit_group, 0, 0, allow),
            (SYS_clone, sigchld, 0, allow),
            (SYS_clone, thread, 0, allow),
            (SYS_clone, ns(libc::CLONE_NEWUSER), 0, eperm),
            (SYS_clone, ns(libc::CLONE_NEWNS), 0, eperm),
            (SYS_clone, ns(libc::CLONE_NEWNET), 0, eperm),
            (SYS_clone, ns(0x80), 0, eperm), // CLONE_NEWTIME
            (SYS_socket, family(libc::AF_UNIX), 0, allow),
            (SYS_socket, family(libc::AF_INET), 0, allow),
            (SYS_socket, family(libc::AF_INET6), 0, allow),
            (SYS_socket, family(libc::AF_NETLINK), 0, eperm),
            (SYS_socket, family(libc::AF_PACKET), 0, eperm),
            (SYS_socket, family(libc::AF_VSOCK), 0, eperm),
            (SYS_socketpair, family(libc::AF_UNIX), 0, allow),
            (SYS_socketpair, family(libc::AF_INET), 0, eperm),
            (SYS_personality, 0, 0, allow),
            (SYS_personality, 0xffff_ffff, 0, allow),
            (SYS_personality, 0x0040_0000, 0, eperm), // READ_IMPLIES_EXEC
            (SYS_ioctl, 1, libc::TCGETS, allow),
            (SYS_ioctl, 1, libc::TIOCSTI, eperm),
            (SYS_ioctl, 1, libc::TIOCLINUX, eperm),
            // The upper half of a 64-bit argument is not what the kernel reads.
            (SYS_ioctl, 1, libc::TIOCSTI | 1 << 32, eperm),
        ];
        for &(nr, a0, a1, expected) in cases {
            let got = answer(nr, [a0, a1, 0, 0, 0, 0]);
            assert_eq!(got, expected, "{nr}: {a0:#x} {a1:#x}");
        }
    }
}
