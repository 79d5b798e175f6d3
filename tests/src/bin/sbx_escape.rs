//! Sandbox test probe: one escape attempt per invocation. Exit 0 means the
//! attempt succeeded (the control expects 0), exit 1 that it was denied.
//!
//! Modes: `write <path>`, `read <path>`, `contains <path> <text>` (the file
//! is readable and holds `text`), `env <name>`, `connect <port>`, `fd <n>`,
//! `cpu <seconds>`, `fsize <bytes>`, `nofile <count>`, `sleep <ms>`,
//! `progress <steps>`, `exit <code>`, `caps` (any capability set of this
//! process, bounding and ambient included, is not empty).

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

fn arg_u64(args: &[String]) -> u64 {
    args.get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::exit(2))
}

fn verdict(ok: bool) -> ! {
    std::process::exit(if ok { 0 } else { 1 })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(mode) = args.get(1) else {
        std::process::exit(2);
    };
    match mode.as_str() {
        "write" => {
            let path = args.get(2).unwrap_or_else(|| std::process::exit(2));
            verdict(std::fs::write(path, b"escaped").is_ok())
        }
        "caps" => {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            let sets: Vec<&str> = status
                .lines()
                .filter(|l| l.starts_with("Cap") && !l.starts_with("CapNoNew"))
                .collect();
            eprintln!("{sets:?}");
            if sets.len() != 5 {
                std::process::exit(2);
            }
            verdict(sets.iter().any(|l| {
                let hex = l.split(':').nth(1).unwrap_or_default().trim();
                u64::from_str_radix(hex, 16) != Ok(0)
            }))
        }
        "read" => {
            let path = args.get(2).unwrap_or_else(|| std::process::exit(2));
            verdict(std::fs::read(path).is_ok_and(|b| !b.is_empty()))
        }
        "contains" => {
            let (Some(path), Some(text)) = (args.get(2), args.get(3)) else {
                std::process::exit(2);
            };
            let text = text.as_bytes();
            verdict(
                std::fs::read(path)
                    .is_ok_and(|b| !text.is_empty() && b.windows(text.len()).any(|w| w == text)),
            )
        }
        "env" => {
            let name = args.get(2).unwrap_or_else(|| std::process::exit(2));
            verdict(std::env::var_os(name).is_some())
        }
        "connect" => {
            let port = u16::try_from(arg_u64(&args)).unwrap_or_else(|_| std::process::exit(2));
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            verdict(TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok())
        }
        "fd" => {
            let n = arg_u64(&args);
            verdict(std::fs::read_link(format!("/proc/self/fd/{n}")).is_ok())
        }
        "cpu" => {
            let secs = arg_u64(&args);
            let start = Instant::now();
            let mut x: u64 = 0;
            // Busy until `secs` of this process's own CPU time, however
            // loaded the host (wall time alone would fall short of a CPU
            // limit when the core is shared); wall time where the kernel
            // does not say, and never more than a minute of it.
            let want = Duration::from_secs(secs);
            loop {
                for _ in 0..100_000 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                let spent = own_cpu_time().unwrap_or_else(|| start.elapsed());
                if spent >= want || start.elapsed() > Duration::from_secs(60) {
                    break;
                }
            }
            verdict(true)
        }
        "fsize" => {
            let n = usize::try_from(arg_u64(&args)).unwrap_or_else(|_| std::process::exit(2));
            let mut f = std::fs::File::create("big.out").unwrap_or_else(|_| std::process::exit(1));
            let chunk = vec![b'x'; 64 * 1024];
            let mut left = n;
            while left > 0 {
                let k = left.min(chunk.len());
                if f.write_all(&chunk[..k]).is_err() {
                    verdict(false);
                }
                left -= k;
            }
            verdict(f.sync_all().is_ok())
        }
        "nofile" => {
            let n = arg_u64(&args);
            let mut files = Vec::new();
            for _ in 0..n {
                match std::fs::File::open("/dev/null") {
                    Ok(f) => files.push(f),
                    Err(_) => verdict(false),
                }
            }
            verdict(true)
        }
        "sleep" => {
            std::thread::sleep(Duration::from_millis(arg_u64(&args)));
            verdict(true)
        }
        "progress" => {
            let n = arg_u64(&args);
            let mut out = std::io::stdout();
            for i in 1..=n {
                let _ = writeln!(out, "PROGRESS {i} {n}");
                let _ = out.flush();
                std::thread::sleep(Duration::from_millis(20));
            }
            verdict(true)
        }
        "exit" => std::process::exit(i32::try_from(arg_u64(&args)).unwrap_or(2)),
        _ => std::process::exit(2),
    }
}

/// This process's CPU time so far (`/proc/self/schedstat`: nanoseconds on a
/// CPU), if the kernel reports it.
fn own_cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}
