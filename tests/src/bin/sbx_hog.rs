//! Sandbox test probe: a hostile solver that reaches for the host's
//! resources, one way per mode. Run under the sandbox it must be stopped by
//! the run's envelope; run as a plain process (the positive control) it
//! succeeds. Exit codes: 0 the attack completed, 3 a process start was
//! refused (or a started copy failed),
//! 4 a write was refused (no space, quota, file size), 2 usage.
//!
//! ```text
//! sbx_hog ok                        exit 0 at once (a responsiveness probe)
//! sbx_hog mem MIB                   allocate and touch MIB in this process
//! sbx_hog mem-spread N MIB          N processes touch MIB each, all alive at once
//!                                   (internal: mem-hold MIB)
//! sbx_hog forks N                   N processes alive at once (internal: sleep, 3 s)
//! sbx_hog files N KIB               N files of KIB each in the working directory
//! sbx_hog inodes N                  N empty files in the working directory
//! sbx_hog rewrite N                 N times: write `tmp`, rename it over `result`
//!                                   (one entry left, N made and renamed)
//! sbx_hog fill DIR MIB              one file of MIB in DIR
//! sbx_hog spin THREADS MS           THREADS busy threads for MS wall milliseconds;
//!                                   prints `cpu_ms=<process CPU> wall_ms=<wall>`
//! sbx_hog unlinked MIB              a deleted file of MIB held open, a visible one of MIB,
//!                                   then 3 s more
//! sbx_hog falloc N MIB              N files of MIB each reserved by fallocate(2)
//!                                   (exit 4 if a reservation is refused)
//! sbx_hog cgroup FILE               prints /proc/self/cgroup, then reads FILE
//!                                   (exit 0 if readable, 5 if not)
//! ```

use std::io::Write;
use std::time::{Duration, Instant};

fn usage() -> ! {
    std::process::exit(2)
}

fn num(s: Option<&String>) -> u64 {
    s.and_then(|s| s.parse().ok()).unwrap_or_else(|| usage())
}

fn touch(mib: u64) -> Vec<u8> {
    let len = usize::try_from(mib << 20).unwrap_or_else(|_| usage());
    let mut v = vec![0u8; len];
    // One write per page makes every page resident.
    for i in (0..v.len()).step_by(4096) {
        v[i] = 1;
    }
    v
}

/// Starts `n` copies of this probe with `args`, all alive at once, and
/// waits for them. Exit 3 if a start is refused or a copy fails.
fn spawn_all(n: u64, args: &[String]) -> ! {
    let exe = std::env::current_exe().unwrap_or_else(|_| std::process::exit(2));
    let mut children = Vec::new();
    let mut refused = false;
    for _ in 0..n {
        match std::process::Command::new(&exe).args(args).spawn() {
            Ok(c) => children.push(c),
            Err(_) => {
                refused = true;
                break;
            }
        }
    }
    let mut all_ok = !refused;
    for mut c in children {
        all_ok &= c.wait().is_ok_and(|s| s.success());
    }
    println!("spawned_all={all_ok}");
    std::process::exit(if all_ok { 0 } else { 3 })
}

/// This process's user + system CPU time, ms (`/proc/self/stat`, in clock
/// ticks of 10 ms).
fn cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rfind(')').map_or("", |i| &stat[i + 1..]);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) * 10
}

fn write_file(path: &std::path::Path, bytes: u64) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    let chunk = vec![0x5au8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("ok") => {}
        Some("mem") => {
            let v = touch(num(args.get(2)));
            println!("touched={}", v.len());
        }
        Some("mem-spread") => {
            let n = num(args.get(2));
            spawn_all(n, &["mem-hold".into(), num(args.get(3)).to_string()])
        }
        Some("mem-hold") => {
            let v = touch(num(args.get(2)));
            // Hold it while the siblings touch theirs.
            std::thread::sleep(Duration::from_secs(2));
            drop(v);
        }
        Some("forks") => spawn_all(num(args.get(2)), &["sleep".into()]),
        Some("sleep") => std::thread::sleep(Duration::from_secs(3)),
        Some("files") => {
            let (n, kib) = (num(args.get(2)), num(args.get(3)));
            for i in 0..n {
                if write_file(std::path::Path::new(&format!("f{i}")), kib << 10).is_err() {
                    std::process::exit(4);
                }
            }
        }
        Some("inodes") => {
            for i in 0..num(args.get(2)) {
                if std::fs::File::create(format!("i{i}")).is_err() {
                    std::process::exit(4);
                }
            }
        }
        Some("rewrite") => {
            for i in 0..num(args.get(2)) {
                let written = std::fs::write("tmp", i.to_string())
                    .and_then(|()| std::fs::rename("tmp", "result"));
                if written.is_err() {
                    std::process::exit(4);
                }
            }
        }
        Some("fill") => {
            let dir = args.get(2).unwrap_or_else(|| usage());
            let path = std::path::Path::new(dir).join("filler");
            if write_file(&path, num(args.get(3)) << 20).is_err() {
                std::process::exit(4);
            }
        }
        Some("spin") => {
            let (threads, ms) = (num(args.get(2)), num(args.get(3)));
            let t0 = Instant::now();
            let until = t0 + Duration::from_millis(ms);
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    std::thread::spawn(move || {
                        let mut x = 0u64;
                        while Instant::now() < until {
                            x = std::hint::black_box(x.wrapping_add(1));
                        }
                    })
                })
                .collect();
            for h in handles {
                let _ = h.join();
            }
            println!("cpu_ms={} wall_ms={}", cpu_ms(), t0.elapsed().as_millis());
        }
        Some("unlinked") => {
            let mib = num(args.get(2));
            let path = std::path::Path::new("hidden");
            let mut f = std::fs::File::create(path).unwrap_or_else(|_| std::process::exit(4));
            let _ = std::fs::remove_file(path);
            let chunk = vec![0x5au8; 1 << 20];
            for _ in 0..mib {
                if f.write_all(&chunk).is_err() {
                    std::process::exit(4);
                }
            }
            let _ = f.sync_all();
            if write_file(std::path::Path::new("visible"), mib << 20).is_err() {
                std::process::exit(4);
            }
            std::thread::sleep(Duration::from_secs(3));
        }
        Some("falloc") => {
            let (n, mib) = (num(args.get(2)), num(args.get(3)));
            for i in 0..n {
                let f = std::fs::File::create(format!("a{i}"))
                    .unwrap_or_else(|_| std::process::exit(4));
                let reserved =
                    rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, mib << 20);
                if reserved.is_err() {
                    std::process::exit(4);
                }
            }
        }
        Some("cgroup") => {
            print!(
                "{}",
                std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default()
            );
            let file = args.get(2).unwrap_or_else(|| usage());
            if std::fs::read(file).is_err() {
                std::process::exit(5);
            }
        }
        _ => usage(),
    }
}
