//! The filter's one BPF program: a binary search over the listed system
//! call numbers, each leaf either a fixed answer or a short check of one
//! argument.
//!
//! Why not seccompiler: it compiles a list of calls to a chain of
//! comparisons, one per call. When a filter is installed, the kernel runs
//! it once for every system call number of every architecture it serves
//! (to cache the calls it always allows), so a chain of about fifty
//! comparisons costs tens of thousands of emulated instructions per solver
//! launch: measurably a tenth of a millisecond and more on the machines in
//! `docs/benchmarks.md`. A search costs about six comparisons per number,
//! at launch and on every call the solver makes. And one program is
//! installed (converted, checked and compiled by the kernel) once: the
//! argument checks seccompiler would compile live in the same program.
//! seccompiler stays the oracle: the tests compare this program with its
//! compilation of the same rules for every number.
//!
//! Layout (x86-64; other architectures lack the x32 step):
//!
//! ```text
//!   A = arch;  if A != AUDIT_ARCH  -> KILL_PROCESS
//!   A = nr;    if A >= X32_BIT     -> EPERM
//!   search tree over the listed numbers -> EPERM | ENOSYS | EOPNOTSUPP
//!                                        | the number's argument check
//!   ALLOW
//!   argument checks: A = low word of one argument; compare -> ALLOW | EPERM
//! ```

use super::{Answer, ArgCheck, FilterError, Program, Verdict};

/// x32-ABI system calls are the x86-64 numbers with bit 30 set: refused
/// before anything else, since they would name listed calls by other
/// numbers.
#[cfg(target_arch = "x86_64")]
const X32_BIT: Option<u32> = Some(0x4000_0000);
#[cfg(not(target_arch = "x86_64"))]
const X32_BIT: Option<u32> = None;

/// A search range of at most this many numbers is tested one by one.
const LEAF: usize = 3;

/// Offsets of `struct seccomp_data`.
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;
const ARGS_OFFSET: u32 = 16;

/// Offset of the low 32 bits within a 64-bit argument: what the kernel
/// reads of an `int` or `unsigned int` argument, and of `clone`'s flags.
const LOW_WORD: u32 = if cfg!(target_endian = "big") { 4 } else { 0 };

const LD_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JSET: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// Where a jump goes: the next instruction, or one of the final returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Next,
    Label(usize),
    Allow,
    Kill,
    Verdict(Verdict),
}

/// An instruction before jump offsets are known; `Label` is a position
/// marker of no length.
#[derive(Debug, Clone, Copy)]
enum Op {
    Load(u32),
    Jump {
        code: u16,
        k: u32,
        jt: Target,
        jf: Target,
    },
    Always(Target),
    Label(usize),
}

/// Compiles the program: `entries` (number, answer), in any order,
/// numbers distinct; `audit_arch` is the only architecture allowed.
pub(crate) fn compile(audit_arch: u32, entries: &[(u32, Answer)]) -> Result<Program, FilterError> {
    let mut sorted = entries.to_vec();
    sorted.sort_unstable_by_key(|&(nr, _)| nr);
    if sorted.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(FilterError("a system call listed twice".to_owned()));
    }
    let mut ops = vec![
        Op::Load(ARCH_OFFSET),
        Op::Jump {
            code: JEQ,
            k: audit_arch,
            jt: Target::Next,
            jf: Target::Kill,
        },
        Op::Load(NR_OFFSET),
    ];
    if let Some(bit) = X32_BIT {
        ops.push(Op::Jump {
            code: JGE,
            k: bit,
            jt: Target::Verdict(Verdict::Eperm),
            jf: Target::Next,
        });
    }
    // The argument checks' labels come first, in the order of `sorted`;
    // the search numbers its own after them.
    let checks: Vec<ArgCheck> = sorted
        .iter()
        .filter_map(|&(_, answer)| match answer {
            Answer::ByArgument(check) => Some(check),
            Answer::Always(_) => None,
        })
        .collect();
    let mut labels = checks.len();
    let mut next_check = 0;
    let leaves: Vec<(u32, Target)> = sorted
        .iter()
        .map(|&(nr, answer)| match answer {
            Answer::Always(v) => (nr, Target::Verdict(v)),
            Answer::ByArgument(_) => {
                next_check += 1;
                (nr, Target::Label(next_check - 1))
            }
        })
        .collect();
    search(&leaves, &mut ops, &mut labels);
    for (label, check) in checks.iter().enumerate() {
        ops.push(Op::Label(label));
        argument_check(check, &mut ops);
    }
    assemble(&ops)
}

/// Appends the search over `entries` (sorted by number): a range of at
/// most [`LEAF`] numbers compares each, then allows; a larger one splits
/// at its middle number (`>=` goes right).
fn search(entries: &[(u32, Target)], ops: &mut Vec<Op>, labels: &mut usize) {
    if entries.len() <= LEAF {
        compare_each(ops, entries.iter().copied(), Target::Allow);
        return;
    }
    let mid = entries.len() / 2;
    let right = *labels;
    *labels += 1;
    ops.push(Op::Jump {
        code: JGE,
        k: entries[mid].0,
        jt: Target::Label(right),
        jf: Target::Next,
    });
    search(&entries[..mid], ops, labels);
    ops.push(Op::Label(right));
    search(&entries[mid..], ops, labels);
}

/// Appends one argument check: loads the low word of the argument, then
/// answers `EPERM` or allows.
fn argument_check(check: &ArgCheck, ops: &mut Vec<Op>) {
    let eperm = Target::Verdict(Verdict::Eperm);
    ops.push(Op::Load(
        ARGS_OFFSET + 8 * u32::from(check.arg()) + LOW_WORD,
    ));
    match *check {
        ArgCheck::AnyBit { mask, .. } => {
            ops.push(Op::Jump {
                code: JSET,
                k: mask,
                jt: eperm,
                jf: Target::Allow,
            });
        }
        ArgCheck::Unless { allowed, .. } => {
            compare_each(ops, allowed.iter().map(|&v| (v, Target::Allow)), eperm);
        }
        ArgCheck::OneOf { refused, .. } => {
            compare_each(ops, refused.iter().map(|&v| (v, eperm)), Target::Allow);
        }
    }
}

/// Appends, for each `(value, target)`, a jump to `target` when the
/// accumulator equals `value`, then a jump to `otherwise`.
fn compare_each(
    ops: &mut Vec<Op>,
    cases: impl IntoIterator<Item = (u32, Target)>,
    otherwise: Target,
) {
    for (k, target) in cases {
        ops.push(Op::Jump {
            code: JEQ,
            k,
            jt: target,
            jf: Target::Next,
        });
    }
    ops.push(Op::Always(otherwise));
}

/// Resolves jump targets to offsets and appends the returns.
fn assemble(ops: &[Op]) -> Result<Program, FilterError> {
    // Positions of the instructions and of the labels.
    let mut label_at = Vec::new();
    let mut len = 0usize;
    for op in ops {
        match op {
            Op::Label(id) => {
                if label_at.len() <= *id {
                    label_at.resize(*id + 1, 0);
                }
                label_at[*id] = len;
            }
            _ => len += 1,
        }
    }
    let returns = [
        (Target::Allow, libc::SECCOMP_RET_ALLOW),
        (Target::Kill, libc::SECCOMP_RET_KILL_PROCESS),
        (
            Target::Verdict(Verdict::Eperm),
            libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        ),
        (
            Target::Verdict(Verdict::Enosys),
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        ),
        (
            Target::Verdict(Verdict::Eopnotsupp),
            libc::SECCOMP_RET_ERRNO | libc::EOPNOTSUPP as u32,
        ),
    ];
    let position = |t: Target, pc: usize| -> Result<usize, FilterError> {
        match t {
            Target::Next => Ok(pc + 1),
            Target::Label(id) => label_at
                .get(id)
                .copied()
                .ok_or_else(|| FilterError("a jump to no label".to_owned())),
            other => returns
                .iter()
                .position(|(r, _)| *r == other)
                .map(|i| len + i)
                .ok_or_else(|| FilterError("a jump to no return".to_owned())),
        }
    };
    let offset = |t: Target, pc: usize| -> Result<u8, FilterError> {
        let to = position(t, pc)?;
        to.checked_sub(pc + 1)
            .and_then(|d| u8::try_from(d).ok())
            .ok_or_else(|| FilterError("a jump out of reach".to_owned()))
    };
    let mut program = Vec::with_capacity(len + returns.len());
    for op in ops {
        let pc = program.len();
        let insn = match *op {
            Op::Label(_) => continue,
            Op::Load(offset) => insn(LD_ABS, 0, 0, offset),
            Op::Jump { code, k, jt, jf } => insn(code, offset(jt, pc)?, offset(jf, pc)?, k),
            Op::Always(t) => {
                let to = position(t, pc)?;
                let d = to
                    .checked_sub(pc + 1)
                    .and_then(|d| u32::try_from(d).ok())
                    .ok_or_else(|| FilterError("a jump backwards".to_owned()))?;
                insn(JA, 0, 0, d)
            }
        };
        program.push(insn);
    }
    for (_, value) in returns {
        program.push(insn(RET, 0, 0, value));
    }
    Ok(program)
}

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::super::{
        DENIED, DENIED_IOCTLS, Filter, NAMESPACE_FLAGS, PERSONALITY_ALLOWED, SOCKET_FAMILIES,
        SOCKETPAIR_FAMILIES, audit_arch,
    };
    use super::*;

    fn arch() -> u32 {
        audit_arch(std::env::consts::ARCH).unwrap()
    }

    /// The calls refused by their arguments as seccompiler rules, written
    /// from the same lists as the filter but in seccompiler's terms (one
    /// masked comparison per namespace flag, chains of `!=`).
    fn argument_rules() -> BTreeMap<i64, Vec<SeccompRule>> {
        let arg = |index: u8, op: SeccompCmpOp, value: u32| {
            SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, u64::from(value)).unwrap()
        };
        let all_ne = |values: &[u32]| {
            vec![
                SeccompRule::new(
                    values
                        .iter()
                        .map(|&v| arg(0, SeccompCmpOp::Ne, v))
                        .collect(),
                )
                .unwrap(),
            ]
        };
        let mut rules = BTreeMap::new();
        rules.insert(
            libc::SYS_clone,
            NAMESPACE_FLAGS
                .iter()
                .map(|&f| {
                    SeccompRule::new(vec![arg(0, SeccompCmpOp::MaskedEq(u64::from(f)), f)]).unwrap()
                })
                .collect(),
        );
        rules.insert(libc::SYS_personality, all_ne(&PERSONALITY_ALLOWED));
        rules.insert(libc::SYS_socket, all_ne(&SOCKET_FAMILIES));
        rules.insert(libc::SYS_socketpair, all_ne(&SOCKETPAIR_FAMILIES));
        rules.insert(
            libc::SYS_ioctl,
            DENIED_IOCTLS
                .iter()
                .map(|&r| SeccompRule::new(vec![arg(1, SeccompCmpOp::Eq, r)]).unwrap())
                .collect(),
        );
        rules
    }

    /// A classic-BPF interpreter for the instructions seccompiler and the
    /// table emit, over a `seccomp_data` (nr, arch, args). Test-only: the
    /// oracle that lets the table be compared with seccompiler's output.
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

    /// The kernel's answer for a stack of filters: the lowest action
    /// (as a signed number: `KILL_PROCESS` lowest, `ALLOW` highest) wins.
    fn strictest(results: impl IntoIterator<Item = u32>) -> u32 {
        results
            .into_iter()
            .min_by_key(|r| (r & 0xffff_0000) as i32)
            .unwrap()
    }

    fn x32_prefix() -> Program {
        match X32_BIT {
            Some(bit) => vec![
                insn(LD_ABS, 0, 0, NR_OFFSET),
                insn(JGE, 0, 1, bit),
                insn(RET, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
            ],
            None => Vec::new(),
        }
    }

    /// The filter as seccompiler alone compiles it (every listed call in
    /// its chain; `clone3` in a program of its own), as before the table.
    fn reference() -> Vec<Program> {
        let arch = TargetArch::try_from(std::env::consts::ARCH).unwrap();
        let mut rules = argument_rules();
        for &nr in DENIED {
            rules.insert(nr, Vec::<SeccompRule>::new());
        }
        let main = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .unwrap();
        let clone3 = SeccompFilter::new(
            BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )
        .unwrap();
        let fallocate = SeccompFilter::new(
            BTreeMap::from([(libc::SYS_fallocate, Vec::new())]),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EOPNOTSUPP as u32),
            arch,
        )
        .unwrap();
        [main, clone3, fallocate]
            .into_iter()
            .map(|f| {
                let mut p = x32_prefix();
                p.extend(
                    BpfProgram::try_from(f)
                        .unwrap()
                        .into_iter()
                        .map(|i| insn(i.code, i.jt, i.jf, i.k)),
                );
                p
            })
            .collect()
    }

    #[test]
    fn the_program_answers_as_seccompiler_does_for_every_call() {
        let arch = arch();
        let filter = Filter::compile().unwrap();
        let reference = reference();
        let mut numbers: Vec<u32> = (0..1024).collect();
        if let Some(bit) = X32_BIT {
            numbers.extend((0..600).map(|n| bit | n));
        }
        numbers.extend([u32::MAX, 0x7fff_ffff, 0x8000_0000]);
        // Arguments that the argument rules tell apart: namespace flags,
        // personalities, socket families, terminal requests.
        let interesting: Vec<u64> = [
            0u64,
            1,
            2,
            8,
            10,
            16,
            17,
            u64::from(libc::SIGCHLD as u32),
            (libc::CLONE_VM | libc::CLONE_THREAD) as u64,
            0x80,
            0x0004_0000,
            0x0040_0000,
            0xffff_ffff,
            libc::TIOCSTI,
            libc::TIOCLINUX,
            libc::TCGETS,
        ]
        .into_iter()
        .chain(
            [
                libc::CLONE_NEWNS,
                libc::CLONE_NEWUSER,
                libc::CLONE_NEWPID,
                libc::CLONE_NEWNET,
                libc::CLONE_NEWIPC,
                libc::CLONE_NEWUTS,
                libc::CLONE_NEWCGROUP,
            ]
            .map(|f| (f | libc::SIGCHLD) as u64),
        )
        .collect();
        let mut compared = 0u64;
        for &nr in &numbers {
            for &a0 in &interesting {
                for &a1 in &[0u64, libc::TIOCSTI, libc::TIOCLINUX, libc::TCGETS] {
                    let args = [a0, a1, 0, 0, 0, 0];
                    let got = run(filter.program(), nr, arch, args);
                    let want = strictest(reference.iter().map(|p| run(p, nr, arch, args)));
                    assert_eq!(got, want, "nr {nr:#x} args {args:x?}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 100_000);
        // Another architecture's calls are killed, whatever the number.
        for nr in [0u32, 1, 101, 300] {
            let r = run(filter.program(), nr, 0x4000_0003, [0; 6]);
            assert_eq!(r, libc::SECCOMP_RET_KILL_PROCESS);
        }
    }

    #[test]
    fn refusals_are_the_documented_ones() {
        let arch = arch();
        let filter = Filter::compile().unwrap();
        let answer =
            |nr: libc::c_long, args: [u64; 6]| run(filter.program(), nr as u32, arch, args);
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        for &nr in DENIED {
            assert_eq!(answer(nr, [0; 6]), eperm, "{nr}");
        }
        assert_eq!(
            answer(libc::SYS_clone3, [0; 6]),
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32
        );
        assert_eq!(
            answer(libc::SYS_fallocate, [0; 6]),
            libc::SECCOMP_RET_ERRNO | libc::EOPNOTSUPP as u32
        );
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
            assert_eq!(
                answer(clone, a(i64::from(ns) | sigchld, 0)),
                eperm,
                "{ns:#x}"
            );
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
        assert_eq!(answer(libc::SYS_ioctl, a(1, libc::TCGETS)), allow);
        assert_eq!(answer(libc::SYS_ioctl, a(1, libc::TIOCSTI)), eperm);
        assert_eq!(answer(libc::SYS_ioctl, a(1, libc::TIOCLINUX)), eperm);
        // The upper half of a 64-bit argument is not what the kernel reads.
        assert_eq!(
            answer(libc::SYS_ioctl, a(1, libc::TIOCSTI | 1 << 32)),
            eperm
        );
    }

    #[test]
    fn the_search_is_short() {
        let arch = arch();
        let entries: Vec<(u32, Answer)> = DENIED
            .iter()
            .map(|&nr| (nr as u32, Answer::Always(Verdict::Eperm)))
            .collect();
        let program = compile(arch, &entries).unwrap();
        // About two instructions per entry: no chain of comparisons hidden
        // behind the search.
        assert!(program.len() < 2 * entries.len() + 16, "{}", program.len());
        let twice = [
            (1, Answer::Always(Verdict::Eperm)),
            (1, Answer::Always(Verdict::Enosys)),
        ];
        assert!(compile(arch, &twice).is_err());
    }
}
