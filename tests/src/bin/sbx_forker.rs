//! Sandbox test probe: a process tree that holds a lock file.
//!
//! `sbx_forker <hang|exit> <lockfile>`: takes a shared `flock` on the lock
//! file, starts a child holder and a "detacher" that calls `setsid` and
//! starts a grandchild holder before exiting (a double fork out of the
//! session). Once both holders hold the lock (each leaves a `held.<pid>`
//! marker next to the lock file), prints `READY` and then sleeps forever
//! (`hang`) or exits 0 (`exit`). `storm` starts two breeders instead, each
//! in a session of its own, which start holders without pause (a failed
//! start is retried: the run's process ceiling does not stop them) and
//! never wait; breeders and their holders hold neither log pipe (their end
//! does not show in the logs' end); it exits 0 while they are forking. Internal modes: `hold`,
//! `detach`, `breed`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rustix::fs::{FlockOperation, flock};

fn lock_shared(path: &Path) -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|_| std::process::exit(20));
    if flock(&f, FlockOperation::LockShared).is_err() {
        std::process::exit(21);
    }
    f
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn spawn_self(mode: &str, lock: &Path) {
    let exe = std::env::current_exe().unwrap_or_else(|_| std::process::exit(22));
    // Holders keep the log pipes open too: an escaped holder keeps them open.
    // Never waited for on purpose: the probe leaves its descendants behind.
    #[allow(clippy::zombie_processes)]
    Command::new(exe)
        .arg(mode)
        .arg(lock)
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|_| std::process::exit(23));
}

fn markers(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("held."))
            .count()
    })
}

/// Waits (up to 5 s) until `holders` holders have left their marker in
/// `dir`, then prints `READY <markers>`.
fn ready_when_held(dir: &Path, holders: usize) {
    for _ in 0..500 {
        if markers(dir) >= holders {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut out = std::io::stdout();
    let _ = writeln!(out, "READY {}", markers(dir));
    let _ = out.flush();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(lock)) = (args.get(1), args.get(2)) else {
        std::process::exit(2);
    };
    let lock = PathBuf::from(lock);
    let dir = lock.parent().map(Path::to_path_buf).unwrap_or_default();
    match mode.as_str() {
        "hold" => {
            let _f = lock_shared(&lock);
            let marker = dir.join(format!("held.{}", std::process::id()));
            let _ = std::fs::write(marker, b"");
            sleep_forever();
        }
        "detach" => {
            if rustix::process::setsid().is_err() {
                std::process::exit(24);
            }
            spawn_self("hold", &lock);
            std::process::exit(0);
        }
        "breed" => {
            if rustix::process::setsid().is_err() {
                std::process::exit(24);
            }
            let _f = lock_shared(&lock);
            let exe = std::env::current_exe().unwrap_or_else(|_| std::process::exit(22));
            loop {
                // Never waited for: the holders outlive the breeder's loop.
                #[allow(clippy::zombie_processes)]
                let _ = Command::new(&exe)
                    .arg("hold")
                    .arg(&lock)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn();
            }
        }
        "storm" => {
            let _f = lock_shared(&lock);
            for _ in 0..2 {
                // Off the log pipes: the logs' end says nothing of them.
                #[allow(clippy::zombie_processes)]
                Command::new(std::env::current_exe().unwrap_or_else(|_| std::process::exit(22)))
                    .arg("breed")
                    .arg(&lock)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap_or_else(|_| std::process::exit(23));
            }
            ready_when_held(&dir, 4);
        }
        "hang" | "exit" => {
            let _f = lock_shared(&lock);
            spawn_self("hold", &lock);
            spawn_self("detach", &lock);
            ready_when_held(&dir, 2);
            if mode == "hang" {
                sleep_forever();
            }
        }
        _ => std::process::exit(2),
    }
}
