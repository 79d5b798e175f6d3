//! Sandbox test probe: a hostile solver. One attack per invocation; exit 0
//! means the attack had its effect (the positive control, run unconfined,
//! expects 0), exit 1 that it was refused, exit 2 a usage error. Every
//! attack names its target on the command line, as an attacker who knows
//! the host layout would.
//!
//! Attacks: `chmod <path> <octal>`, `chown <path>`, `utime <path>`,
//! `setxattr <path>`, `flock <path>`, `read <path>`, `contains <path>
//! <text>`, `find-comm <name>` (a process of that name is visible),
//! `unix <path>`, `unix-abstract <name>`, `tcp <port>`, `udp <port>`,
//! `ptrace-child`, `userns`, `clone-newuser`, `mount-tmpfs`, `io-uring`,
//! `netlink`, `packet`, `keyctl`, `bpf`, `perf`, `personality`,
//! `daemon <marker> <delay-ms>` (a setsid double fork that writes the marker
//! after the delay), `fill <path> <max-bytes>` (writes until an error; exit
//! 0 only if all `max-bytes` were written), `reopen-fd <n>` (reopens an
//! inherited descriptor for writing through /proc/self/fd and writes),
//! `netns <hold-ms>` (prints the inode of its network namespace and stays
//! alive that long; not an attack: what the test compares across runs),
//! `mem <pid>` (reads the first mapping of that process's memory through
//! `/proc/<pid>/maps` and `/proc/<pid>/mem`), `proc-shows <text>` (the
//! command line, name or environment of pid 1 or of any other process in
//! `/proc` but the probe itself, whose arguments hold the text, contains
//! it).

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

fn verdict(ok: bool) -> ! {
    std::process::exit(if ok { 0 } else { 1 })
}

fn usage() -> ! {
    std::process::exit(2)
}

fn c(path: &str) -> CString {
    CString::new(path).unwrap_or_else(|_| usage())
}

fn ok(r: libc::c_long) -> bool {
    r >= 0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_else(|| usage());
    let num = |i: usize| arg(i).parse::<u64>().unwrap_or_else(|_| usage());
    let Some(mode) = args.get(1) else { usage() };
    // SAFETY (all blocks below): plain system calls on C strings and locals
    // that outlive them; this is a test probe.
    #[allow(unsafe_code)]
    unsafe {
        match mode.as_str() {
            "chmod" => {
                let mode = u32::from_str_radix(arg(3), 8).unwrap_or_else(|_| usage());
                verdict(libc::chmod(c(arg(2)).as_ptr(), mode) == 0)
            }
            "chown" => {
                verdict(libc::chown(c(arg(2)).as_ptr(), libc::geteuid(), libc::getegid()) == 0)
            }
            "utime" => {
                let times = [libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                }; 2];
                verdict(libc::utimensat(libc::AT_FDCWD, c(arg(2)).as_ptr(), times.as_ptr(), 0) == 0)
            }
            "setxattr" => {
                let v = b"escaped";
                verdict(
                    libc::setxattr(
                        c(arg(2)).as_ptr(),
                        c"user.hardened_probe".as_ptr(),
                        v.as_ptr().cast(),
                        v.len(),
                        0,
                    ) == 0,
                )
            }
            "flock" => {
                let fd = libc::open(c(arg(2)).as_ptr(), libc::O_RDONLY);
                verdict(fd >= 0 && libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) == 0)
            }
            "read" => verdict(std::fs::read(arg(2)).is_ok_and(|b| !b.is_empty())),
            "mem" => {
                use std::os::unix::fs::FileExt;
                let pid = num(2);
                let start = std::fs::read_to_string(format!("/proc/{pid}/maps"))
                    .ok()
                    .and_then(|m| {
                        let first = m.lines().next()?.split('-').next()?.to_owned();
                        u64::from_str_radix(&first, 16).ok()
                    });
                let mut buf = [0u8; 16];
                verdict(start.is_some_and(|at| {
                    std::fs::File::open(format!("/proc/{pid}/mem"))
                        .and_then(|f| f.read_exact_at(&mut buf, at))
                        .is_ok()
                }))
            }
            "contains" => {
                let text = arg(3).as_bytes();
                verdict(
                    std::fs::read(arg(2)).is_ok_and(|b| {
                        !text.is_empty() && b.windows(text.len()).any(|w| w == text)
                    }),
                )
            }
            "proc-shows" => {
                let text = arg(2).as_bytes();
                let me = std::process::id().to_string();
                let mut pids: Vec<String> = std::fs::read_dir("/proc")
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.bytes().all(|b| b.is_ascii_digit()) && *n != me)
                    .collect();
                pids.push("1".to_owned());
                verdict(pids.iter().any(|pid| {
                    ["cmdline", "comm", "environ"].iter().any(|f| {
                        std::fs::read(format!("/proc/{pid}/{f}")).is_ok_and(|b| {
                            !text.is_empty() && b.windows(text.len()).any(|w| w == text)
                        })
                    })
                }))
            }
            "find-comm" => {
                let name = arg(2);
                let found = std::fs::read_dir("/proc").is_ok_and(|d| {
                    d.filter_map(Result::ok).any(|e| {
                        std::fs::read_to_string(e.path().join("comm"))
                            .is_ok_and(|s| s.trim_end() == name)
                    })
                });
                verdict(found)
            }
            "unix" => verdict(std::os::unix::net::UnixStream::connect(arg(2)).is_ok()),
            "unix-abstract" => {
                use std::os::linux::net::SocketAddrExt;
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(arg(2).as_bytes())
                    .unwrap_or_else(|_| usage());
                verdict(std::os::unix::net::UnixStream::connect_addr(&addr).is_ok())
            }
            "tcp" => {
                let port = u16::try_from(num(2)).unwrap_or_else(|_| usage());
                let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                verdict(std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok())
            }
            "netns" => {
                use std::os::unix::fs::MetadataExt;
                let ino = std::fs::metadata("/proc/self/ns/net").map(|m| m.ino());
                match ino {
                    Ok(ino) => {
                        println!("{ino}");
                        let _ = std::io::stdout().flush();
                        std::thread::sleep(Duration::from_millis(num(2)));
                        verdict(true)
                    }
                    Err(_) => verdict(false),
                }
            }
            "udp" => {
                // Sends a datagram; the test checks from outside whether it
                // arrived.
                let port = u16::try_from(num(2)).unwrap_or_else(|_| usage());
                let sent = std::net::UdpSocket::bind("127.0.0.1:0")
                    .and_then(|s| s.send_to(b"escaped", ("127.0.0.1", port)));
                verdict(sent.is_ok())
            }
            "ptrace-child" => {
                let child = libc::fork();
                if child == 0 {
                    libc::pause();
                    libc::_exit(0);
                }
                if child < 0 {
                    verdict(false);
                }
                let r = libc::ptrace(libc::PTRACE_ATTACH, child, 0, 0);
                libc::kill(child, libc::SIGKILL);
                verdict(r == 0)
            }
            "userns" => verdict(libc::unshare(libc::CLONE_NEWUSER) == 0),
            "clone-newuser" => {
                let r = libc::syscall(
                    libc::SYS_clone,
                    (libc::CLONE_NEWUSER | libc::SIGCHLD) as libc::c_ulong,
                    0usize,
                    0usize,
                    0usize,
                    0usize,
                );
                if r == 0 {
                    libc::_exit(0);
                }
                if r > 0 {
                    let mut ws = 0;
                    libc::waitpid(r as libc::pid_t, &mut ws, 0);
                }
                verdict(r > 0)
            }
            "mount-tmpfs" => {
                // In a fresh user + mount namespace of its own, unless that
                // is refused too; then on the spot.
                let _ = libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS);
                verdict(
                    libc::mount(
                        c"tmpfs".as_ptr(),
                        c"/tmp".as_ptr(),
                        c"tmpfs".as_ptr(),
                        0,
                        std::ptr::null(),
                    ) == 0,
                )
            }
            "io-uring" => {
                let mut params = [0u8; 120];
                let r = libc::syscall(libc::SYS_io_uring_setup, 4u32, params.as_mut_ptr());
                verdict(ok(r))
            }
            "netlink" => verdict(libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, 0) >= 0),
            "packet" => verdict(
                libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM, 0) >= 0
                    || libc::socket(libc::AF_VSOCK, libc::SOCK_STREAM, 0) >= 0,
            ),
            "keyctl" => {
                let r = libc::syscall(
                    libc::SYS_add_key,
                    c"user".as_ptr(),
                    c"hardened-probe".as_ptr(),
                    b"x".as_ptr(),
                    1usize,
                    -3i32, // KEY_SPEC_SESSION_KEYRING
                );
                verdict(ok(r))
            }
            "bpf" => {
                // BPF_PROG_LOAD of nothing: EINVAL when the call is allowed,
                // EPERM when it is refused.
                let mut attr = [0u8; 128];
                let r = libc::syscall(libc::SYS_bpf, 5i32, attr.as_mut_ptr(), attr.len());
                verdict(
                    r >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EPERM),
                )
            }
            "perf" => {
                // A software clock counter of this process.
                let mut attr = [0u8; 128];
                attr[4..8].copy_from_slice(&128u32.to_ne_bytes()); // size
                // type = PERF_TYPE_SOFTWARE (1), config = CPU_CLOCK (0)
                attr[0..4].copy_from_slice(&1u32.to_ne_bytes());
                // exclude_kernel | exclude_hv
                attr[40] = 0b0110_0000;
                let r = libc::syscall(libc::SYS_perf_event_open, attr.as_ptr(), 0, -1, -1, 0);
                verdict(ok(r))
            }
            "personality" => {
                // READ_IMPLIES_EXEC: every readable mapping executable.
                verdict(libc::personality(0x0400000) != -1)
            }
            "daemon" => {
                let marker = arg(2).to_owned();
                let delay = num(3);
                if libc::fork() == 0 {
                    libc::setsid();
                    if libc::fork() == 0 {
                        std::thread::sleep(Duration::from_millis(delay));
                        let _ = std::fs::write(&marker, b"survived");
                        libc::_exit(0);
                    }
                    libc::_exit(0);
                }
                verdict(true)
            }
            "fill" => {
                let max = num(3);
                let Ok(mut f) = std::fs::File::create(arg(2)) else {
                    verdict(false)
                };
                let chunk = vec![0x5a_u8; 64 << 10];
                let mut written = 0u64;
                while written < max {
                    let n = (max - written).min(chunk.len() as u64) as usize;
                    if f.write_all(&chunk[..n]).is_err() {
                        break;
                    }
                    written += n as u64;
                }
                let _ = writeln!(std::io::stdout(), "WROTE {written}");
                verdict(written >= max && f.sync_all().is_ok())
            }
            "reopen-fd" => {
                let path = format!("/proc/self/fd/{}", num(2));
                let p = std::ffi::OsStr::new(&path).as_bytes();
                let cp = CString::new(p).unwrap_or_else(|_| usage());
                let fd = libc::open(cp.as_ptr(), libc::O_WRONLY | libc::O_APPEND);
                verdict(fd >= 0 && libc::write(fd, b"escaped".as_ptr().cast(), 7) == 7)
            }
            _ => usage(),
        }
    }
}
