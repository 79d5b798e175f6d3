//! Sandbox test helper for the disk-full case. Run it inside a private mount
//! namespace (`unshare -m --propagation private sbx_diskfull <escape-probe>`,
//! with `--user --map-root-user` added when not root): it mounts a small tmpfs, fills it, then runs two sandboxed writers at the
//! same time, one whose run directory (of a run root) is on the full tmpfs
//! and one on the ordinary temporary directory. Prints `full=<error>` and `other=<error or
//! ok>` and exits 0 when it could perform the experiment.

use std::io::Write;
use std::path::{Path, PathBuf};

use hardened_mcp::identity::CallerId;
use hardened_mcp::runs::{RunDir, RunRoot};
use hardened_mcp::sandbox::{Limits, RunRequest, Sandbox, SandboxConfig, SolverRegistry};
use rustix::mount::{MountFlags, UnmountFlags, mount, unmount};
use tokio_util::sync::CancellationToken;

fn fail(step: &str) -> ! {
    eprintln!("sbx_diskfull: {step} failed");
    std::process::exit(3);
}

fn private_dir(base: &Path, name: &str) -> PathBuf {
    let p = base.join(name);
    std::fs::create_dir(&p).unwrap_or_else(|_| fail("mkdir"));
    p
}

/// A run root `runs` under `base`, and a fresh run in it.
fn new_run(base: &Path, who: &CallerId) -> RunDir {
    let root = RunRoot::open(base.join("runs")).unwrap_or_else(|_| fail("run root"));
    let (_handle, run) = root.create(who).unwrap_or_else(|_| fail("run"));
    run
}

fn fill(dir: &Path) {
    let mut f = std::fs::File::create(dir.join("filler")).unwrap_or_else(|_| fail("filler"));
    let chunk = vec![0u8; 4096];
    while f.write_all(&chunk).is_ok() {}
}

fn main() {
    let probe = std::env::args().nth(1).unwrap_or_else(|| fail("usage"));
    let base = std::env::temp_dir().join(format!("sbx-diskfull-{}", std::process::id()));
    std::fs::create_dir(&base).unwrap_or_else(|_| fail("base"));
    let full = private_dir(&base, "full");
    if mount(
        "tmpfs",
        &full,
        "tmpfs",
        MountFlags::empty(),
        c"size=256k,mode=0700",
    )
    .is_err()
    {
        fail("mount");
    }
    // One run root on the small tmpfs (its key and the run's owner record
    // written before the fill), one on the ordinary temporary directory.
    let who = CallerId::local();
    let full_run = new_run(&full, &who);
    fill(&full);
    let other_run = new_run(&base, &who);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|_| fail("runtime"));
    let (full_result, other_result) = rt.block_on(async {
        let registry = SolverRegistry::builder()
            .solver("escape", &probe)
            .build()
            .unwrap_or_else(|_| fail("registry"));
        let sb =
            Sandbox::new(registry, SandboxConfig::default()).unwrap_or_else(|_| fail("sandbox"));
        let req = || {
            RunRequest::new("escape")
                .args(["fsize", "1048576"])
                .limits(Limits::default())
        };
        let t = CancellationToken::new();
        let (a, b) = tokio::join!(
            sb.run(&who, &full_run, req(), &t),
            sb.run(&who, &other_run, req(), &t)
        );
        let show =
            |r: Result<hardened_mcp::sandbox::Outcome, _>| match r.and_then(|o| o.into_result()) {
                Ok(_) => "ok".to_owned(),
                Err(e) => e.to_string(),
            };
        (show(a), show(b))
    });
    println!("full={full_result}");
    println!("other={other_result}");
    let _ = unmount(&full, UnmountFlags::DETACH);
    let _ = std::fs::remove_dir_all(&base);
}
