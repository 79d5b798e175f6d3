//! A hostile solver against the whole sandbox (`SandboxConfig::default()`:
//! private file-system view, seccomp, Landlock, namespaces, rlimits). Every
//! attack names its host target the way an attacker who knows the layout
//! would, and runs twice: confined, where it must have no effect that can
//! be observed from outside, and unconfined as the positive control, where
//! the same probe with the same arguments must have its effect (or the test
//! proves nothing).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_support/mod.rs"]
mod support;

use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use hardened_mcp::runs::RunDir;
use hardened_mcp::sandbox::{
    Limits, Outcome, RunRequest, Sandbox, SandboxConfig, SolverRegistry, Termination, VIEW_RUN_DIR,
};
use support::{FORKER, caller, run_dir};
use tokio_util::sync::CancellationToken;

const HOSTILE: &str = env!("CARGO_BIN_EXE_sbx_hostile");

fn sandbox_with(config: SandboxConfig) -> Sandbox {
    let registry = SolverRegistry::builder()
        .solver("hostile", HOSTILE)
        .solver("forker", FORKER)
        .build()
        .unwrap();
    Sandbox::new(registry, config).expect("this host offers every layer")
}

fn sandbox() -> Sandbox {
    sandbox_with(SandboxConfig::default())
}

async fn confined_in(sb: &Sandbox, dir: &RunDir, args: &[&str]) -> Outcome {
    sb.run(
        &caller("hostile"),
        dir,
        RunRequest::new("hostile").args(args),
        &CancellationToken::new(),
    )
    .await
    .unwrap()
}

/// Runs the attack confined and asserts it was refused.
async fn refused(dir: &RunDir, args: &[&str]) {
    let o = confined_in(&sandbox(), dir, args).await;
    assert_eq!(o.termination, Termination::Exited(1), "{args:?}: {o:?}");
}

/// The positive control: the same probe, unconfined, in the run directory.
fn control(cwd: &Path, args: &[&str]) -> i32 {
    Command::new(HOSTILE)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .status()
        .unwrap()
        .code()
        .unwrap_or(-1)
}

fn succeeds(cwd: &Path, args: &[&str]) {
    assert_eq!(control(cwd, args), 0, "control {args:?} had no effect");
}

/// The run root (parent of the run directory), its key, and a directory
/// outside every run root: the targets of the metadata attacks.
fn targets(run: &Path) -> (PathBuf, PathBuf, tempfile::TempDir) {
    let root = run.parent().unwrap().to_path_buf();
    let key = root.join(".key");
    assert!(key.is_file(), "run root layout as expected by this test");
    (root, key, tempfile::tempdir().unwrap())
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn set_mode(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chmod_of_the_run_root_its_key_and_outside_directories_has_no_effect() {
    let (run, dir) = run_dir();
    let (root, key, outside) = targets(run.path());
    let cases: [(PathBuf, &str); 4] = [
        (root.clone(), "0777"),
        (key.clone(), "0644"),
        (outside.path().to_path_buf(), "0777"),
        (root.clone(), "0777"), // as `..` from the working directory
    ];
    for (i, (target, m)) in cases.iter().enumerate() {
        let arg = if i == 3 {
            "..".to_owned()
        } else {
            target.to_str().unwrap().to_owned()
        };
        let before = mode(target);
        refused(&dir, &["chmod", &arg, m]).await;
        assert_eq!(mode(target), before, "{arg}: mode changed");
        succeeds(run.path(), &["chmod", &arg, m]);
        assert_ne!(mode(target), before, "{arg}: control changed nothing");
        set_mode(target, before);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chown_utime_setxattr_and_flock_outside_have_no_effect() {
    let (run, dir) = run_dir();
    let (root, key, outside) = targets(run.path());
    for target in [&root, &key, &outside.path().to_path_buf()] {
        let t = target.to_str().unwrap();
        let before = std::fs::symlink_metadata(target).unwrap();
        for attack in ["chown", "utime", "setxattr"] {
            refused(&dir, &[attack, t]).await;
        }
        let after = std::fs::symlink_metadata(target).unwrap();
        assert_eq!(
            (after.ctime(), after.ctime_nsec(), after.mtime()),
            (before.ctime(), before.ctime_nsec(), before.mtime()),
            "{t}: metadata changed"
        );
        assert!(
            rustix::fs::getxattr(target.as_path(), "user.hardened_probe", &mut [0u8; 64]).is_err()
        );
        for attack in ["chown", "utime", "setxattr"] {
            succeeds(run.path(), &[attack, t]);
        }
        assert_eq!(std::fs::symlink_metadata(target).unwrap().mtime(), 0);
        assert!(
            rustix::fs::getxattr(target.as_path(), "user.hardened_probe", &mut [0u8; 64]).is_ok()
        );
    }
    // flock: the key (a file); Landlock does not mediate flock, the view
    // hides the file.
    let k = key.to_str().unwrap();
    refused(&dir, &["flock", k]).await;
    succeeds(run.path(), &["flock", k]);
}

/// A 0600 file of the server's user in /etc (where a tokens file or a TLS
/// key could be) is not in the view; the view binds only the named files of
/// /etc. Needs a writable /etc (CI runs as root); skipped otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_secret_in_etc_is_not_visible() {
    let secret = PathBuf::from(format!(
        "/etc/hardened-mcp-probe-secret-{}",
        std::process::id()
    ));
    if std::fs::write(&secret, b"server-secret-canary").is_err() {
        eprintln!("/etc is not writable here: nothing to check");
        return;
    }
    set_mode(&secret, 0o600);
    let (run, dir) = run_dir();
    let s = secret.to_str().unwrap();
    let args = ["contains", s, "server-secret-canary"];
    let o = confined_in(&sandbox(), &dir, &args).await;
    let c = control(run.path(), &args);
    let _ = std::fs::remove_file(&secret);
    assert_eq!(o.termination, Termination::Exited(1), "{o:?}");
    assert_eq!(c, 0, "control could not read the secret");
    // Nor the host's accounts: the view's passwd lists the solver only.
    refused(&dir, &["contains", "/etc/passwd", "root:"]).await;
    succeeds(run.path(), &["contains", "/etc/passwd", "root:"]);
}

/// The init (pid 1 of the run's namespace, the one process of the run's
/// `/proc` besides the solver's own) runs in a copy of the server's memory:
/// neither that memory nor its environment is readable (two layers hold
/// it: the copy is non-dumpable, and the init is outside the solver's
/// Landlock domain, which alone refused the probe when the copy was made
/// dumpable for a trial). The control reads both from a same-uid process of
/// the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inits_copy_of_the_server_memory_is_not_readable() {
    let (run, dir) = run_dir();
    let sb = sandbox();
    for args in [&["mem", "1"][..], &["contains", "/proc/1/environ", "PATH="]] {
        let o = confined_in(&sb, &dir, args).await;
        assert_eq!(o.termination, Termination::Exited(1), "{args:?}: {o:?}");
    }
    let mut victim = Command::new("sleep")
        .arg("30")
        .env("PATH", "/usr/bin:/bin")
        .spawn()
        .unwrap();
    let pid = victim.id().to_string();
    let environ = format!("/proc/{pid}/environ");
    let mem = control(run.path(), &["mem", &pid]);
    let env = control(run.path(), &["contains", &environ, "PATH="]);
    let _ = victim.kill();
    let _ = victim.wait();
    assert_eq!(mem, 0, "control could not read a process's memory");
    assert_eq!(env, 0, "control could not read a process's environment");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_proc_and_sys_are_not_visible() {
    let (run, dir) = run_dir();
    let me = std::process::id();
    let name = std::fs::read_to_string("/proc/self/comm").unwrap();
    let name = name.trim_end();
    let env_canary = format!(
        "CARGO_MANIFEST_DIR={}",
        std::env::var("CARGO_MANIFEST_DIR").unwrap()
    );
    let cmdline = format!("/proc/{me}/cmdline");
    let environ = format!("/proc/{me}/environ");
    let maps = format!("/proc/{me}/maps");
    let attacks: [Vec<&str>; 5] = [
        vec!["contains", &cmdline, "sandbox_hostile"],
        vec!["contains", &environ, &env_canary],
        vec!["contains", &maps, "sandbox_hostile"],
        vec!["find-comm", name],
        vec!["read", "/sys/kernel/mm/transparent_hugepage/enabled"],
    ];
    for a in &attacks {
        if a[0] == "read" && !Path::new(a[1]).exists() {
            continue;
        }
        refused(&dir, a).await;
        succeeds(run.path(), a);
    }
}

/// What this process (the server) shows of itself in `/proc`: its
/// command line's first argument, an environment entry cargo set for it,
/// and its name.
fn server_canaries() -> [String; 3] {
    let argv0 = std::env::args().next().unwrap();
    let env = format!(
        "CARGO_MANIFEST_DIR={}",
        std::env::var("CARGO_MANIFEST_DIR").unwrap()
    );
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
    [argv0, env, comm.trim_end().to_owned()]
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// The run's init (pid 1) is a copy of the server that never `exec`s: its
/// command line, environment and name are hidden from the run, as is every
/// other process's the run can see.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_the_server_shows_in_the_runs_processes() {
    let (run, dir) = run_dir();
    let sb = sandbox();
    let me = std::fs::read(format!("/proc/{}/cmdline", std::process::id())).unwrap();
    for canary in server_canaries() {
        let o = confined_in(&sb, &dir, &["proc-shows", &canary]).await;
        assert_eq!(o.termination, Termination::Exited(1), "{canary}: {o:?}");
        // The positive control finds this process's.
        succeeds(run.path(), &["proc-shows", &canary]);
    }
    assert!(contains(&me, &server_canaries()[0]));
    // The probe does read pid 1, the init, by the name it has instead.
    let o = confined_in(&sb, &dir, &["contains", "/proc/1/comm", "sandbox-init"]).await;
    assert_eq!(o.termination, Termination::Exited(0), "{o:?}");
}

/// Seen from the host, a run's monitor and init show a command line of one
/// NUL byte, a name of their own and (to root) an environment of NULs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_monitor_and_init_show_nothing_of_the_server_on_the_host() {
    let (_run, dir) = run_dir();
    let sb = sandbox();
    let running = sb
        .launch(
            &caller("hostile"),
            &dir,
            RunRequest::new("forker").args(["hang", &format!("{VIEW_RUN_DIR}/l")]),
            &CancellationToken::new(),
        )
        .unwrap();
    let monitor = running.monitor_pid().unwrap();
    // The init: the monitor's only child (its parent pid, field 4 of stat,
    // after the name).
    let init = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(monitor)
            })
        })
        .expect("the run's init is the monitor's child");
    let [argv0, env, _] = server_canaries();
    // The positive control: this process shows them.
    let me = std::process::id();
    assert!(contains(
        &std::fs::read(format!("/proc/{me}/cmdline")).unwrap(),
        &argv0
    ));
    assert!(contains(
        &std::fs::read(format!("/proc/{me}/environ")).unwrap(),
        &env
    ));
    for (pid, name) in [(monitor, "sandbox-monitor"), (init, "sandbox-init")] {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        assert_eq!(cmdline, b"\0", "{name}");
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
        assert_eq!(comm.trim_end(), name);
        // Non-dumpable: only root reads its environment.
        match std::fs::read(format!("/proc/{pid}/environ")) {
            Ok(environ) => assert!(environ.iter().all(|&b| b == 0), "{name}"),
            Err(_) => assert!(!rustix::process::geteuid().is_root(), "{name}"),
        }
    }
    drop(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_runs_processes_are_not_visible() {
    let (run, dir) = run_dir();
    let (_other, other_dir) = run_dir();
    let sb = sandbox();
    let other = sb
        .launch(
            &caller("other"),
            &other_dir,
            RunRequest::new("forker").args(["hang", &format!("{VIEW_RUN_DIR}/l")]),
            &CancellationToken::new(),
        )
        .unwrap();
    // Wait until the other run's solver is up (its comm is visible here).
    let t0 = std::time::Instant::now();
    while support::processes_named("forker").is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "other run never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let o = confined_in(&sb, &dir, &["find-comm", "forker"]).await;
    assert_eq!(o.termination, Termination::Exited(1), "{o:?}");
    succeeds(run.path(), &["find-comm", "forker"]);
    drop(other);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_sockets_outside_the_run_are_unreachable() {
    let (run, dir) = run_dir();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("service.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let p = path.to_str().unwrap();
    refused(&dir, &["unix", p]).await;
    assert!(listener.accept().is_err(), "a confined solver connected");
    succeeds(run.path(), &["unix", p]);
    assert!(listener.accept().is_ok());

    use std::os::linux::net::SocketAddrExt;
    let name = format!("hardened-mcp-probe-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    refused(&dir, &["unix-abstract", &name]).await;
    assert!(abstract_listener.accept().is_err());
    succeeds(run.path(), &["unix-abstract", &name]);
    assert!(abstract_listener.accept().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_network_traffic_reaches_the_host() {
    let (run, dir) = run_dir();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_port = tcp.local_addr().unwrap().port().to_string();
    refused(&dir, &["tcp", &tcp_port]).await;
    succeeds(run.path(), &["tcp", &tcp_port]);
    // UDP: Landlock does not confine it; the run's own network namespace
    // does. Observed from outside: no datagram arrives.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port().to_string();
    let _ = confined_in(&sandbox(), &dir, &["udp", &udp_port]).await;
    let mut buf = [0u8; 16];
    assert!(udp.recv_from(&mut buf).is_err(), "a datagram left the run");
    succeeds(run.path(), &["udp", &udp_port]);
    assert!(udp.recv_from(&mut buf).is_ok());
}

/// Every run has a network namespace of its own, never the host's and
/// never another run's, whether it was made ahead (the pool, which holds
/// fewer than the runs started here) or at launch. The runs are alive
/// together, so no namespace can have been freed and its number reused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_has_a_network_namespace_of_its_own() {
    use std::os::unix::fs::MetadataExt;
    let host = std::fs::metadata("/proc/self/ns/net").unwrap().ino();
    let sb = sandbox();
    let mut runs = Vec::new();
    for i in 0..6 {
        let (keep, d) = run_dir();
        let r = sb
            .launch(
                &caller(&format!("netns-{i}")),
                &d,
                RunRequest::new("hostile").args(["netns", "1500"]),
                &CancellationToken::new(),
            )
            .unwrap();
        runs.push((keep, r));
    }
    let mut seen = std::collections::BTreeSet::from([host]);
    for (_keep, r) in runs {
        let o = r.wait().await;
        assert_eq!(o.termination, Termination::Exited(0), "{o:?}");
        let ns: u64 = String::from_utf8_lossy(o.stdout.head.as_untrusted_bytes())
            .trim()
            .parse()
            .unwrap();
        assert!(seen.insert(ns), "network namespace {ns} seen twice");
    }
    // The positive control: unconfined, the probe reports the host's.
    let (run, _dir) = run_dir();
    let out = Command::new(HOSTILE)
        .args(["netns", "0"])
        .current_dir(run.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        host.to_string()
    );
}

/// The host's System V IPC objects (of the server's uid) are out of reach:
/// the run has an IPC namespace of its own. Made with util-linux `ipcmk`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_sysv_ipc_is_not_visible() {
    let Ok(out) = Command::new("ipcmk").args(["-M", "4096"]).output() else {
        eprintln!("ipcmk is not installed: nothing to check");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let id: String = text.chars().filter(char::is_ascii_digit).collect();
    assert!(out.status.success() && !id.is_empty(), "{text}");
    let (run, dir) = run_dir();
    let needle = format!(" {id} ");
    let args = ["contains", "/proc/sysvipc/shm", needle.as_str()];
    let o = confined_in(&sandbox(), &dir, &args).await;
    let c = control(run.path(), &args);
    let _ = Command::new("ipcrm").args(["-m", &id]).status();
    assert_eq!(o.termination, Termination::Exited(1), "{o:?}");
    assert_eq!(c, 0, "control: the segment is visible on the host");
}

/// System calls the seccomp filter refuses (and that a solver never needs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_system_calls() {
    let (run, dir) = run_dir();
    let io_uring_enabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map_or(true, |s| s.trim() == "0");
    for attack in [
        "ptrace-child",
        "userns",
        "clone-newuser",
        "mount-tmpfs",
        "io-uring",
        "netlink",
        "packet",
        "keyctl",
        "bpf",
        "perf",
        "personality",
    ] {
        refused(&dir, &[attack]).await;
        let controllable = match attack {
            "io-uring" => io_uring_enabled,
            // perf_event_open needs a paranoia level this host may not have.
            "perf" => std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .is_ok_and(|s| s.trim().parse::<i32>().is_ok_and(|v| v < 3)),
            _ => true,
        };
        if controllable {
            succeeds(run.path(), &[attack]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_double_fork_does_not_outlive_its_run() {
    let (run, dir) = run_dir();
    let marker_in_view = format!("{VIEW_RUN_DIR}/daemon.marker");
    let o = confined_in(&sandbox(), &dir, &["daemon", &marker_in_view, "500"]).await;
    assert!(o.success(), "{o:?}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !run.path().join("daemon.marker").exists(),
        "the daemon survived"
    );
    // Control: unconfined, the daemon outlives its parent and writes.
    let marker = run.path().join("control.marker");
    succeeds(run.path(), &["daemon", marker.to_str().unwrap(), "200"]);
    let t0 = std::time::Instant::now();
    while !marker.exists() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(marker.exists(), "control daemon never wrote");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filling_tmp_fills_only_the_runs_own_capped_tmp() {
    let (run, dir) = run_dir();
    let cap: u64 = 4 << 20;
    let sb = sandbox();
    let name = format!("/tmp/hardened-mcp-fill-{}", std::process::id());
    let want = (64u64 << 20).to_string();
    let o = sb
        .run(
            &caller("hostile"),
            &dir,
            RunRequest::new("hostile")
                .args(["fill", &name, &want])
                .limits(Limits {
                    tmp_size: cap,
                    ..Limits::default()
                }),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(o.termination, Termination::Exited(1), "{o:?}");
    let out = String::from_utf8_lossy(o.stdout.head.as_untrusted_bytes()).into_owned();
    let wrote: u64 = out
        .trim()
        .strip_prefix("WROTE ")
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(wrote <= cap, "wrote {wrote} bytes into a {cap}-byte /tmp");
    assert!(
        !Path::new(&name).exists(),
        "the file reached the host's /tmp"
    );
    // Control: unconfined, the file lands in the host's /tmp (1 MiB only).
    succeeds(run.path(), &["fill", &name, "1048576"]);
    assert!(Path::new(&name).exists());
    std::fs::remove_file(&name).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inherited_descriptor_cannot_be_reopened_for_writing() {
    let (run, dir) = run_dir();
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("server-file.txt");
    std::fs::write(&target, b"original").unwrap();
    // A read-only descriptor a careless server leaked (not close-on-exec).
    let f = std::fs::File::open(&target).unwrap();
    rustix::io::fcntl_setfd(&f, rustix::io::FdFlags::empty()).unwrap();
    let n = f.as_raw_fd().to_string();
    refused(&dir, &["reopen-fd", &n]).await;
    assert_eq!(std::fs::read(&target).unwrap(), b"original");
    succeeds(run.path(), &["reopen-fd", &n]);
    assert_ne!(std::fs::read(&target).unwrap(), b"original");
}

/// The same attacks through `Limits` with tight rlimits still refuse: the
/// layers stack (a tight descriptor limit does not stop the sandbox's own
/// setup).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layers_hold_under_tight_limits() {
    let (_run, dir) = run_dir();
    let o = sandbox()
        .run(
            &caller("hostile"),
            &dir,
            RunRequest::new("hostile").args(["userns"]).limits(Limits {
                open_files: 4,
                ..Limits::default()
            }),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(o.termination, Termination::Exited(1), "{o:?}");
}
