//! Disk-full helper for the `runs_diskfull` test.
//!
//! `runs_diskfull <mountpoint>` re-executes itself inside a private mount
//! namespace (`unshare --mount`, or `unshare --user --map-root-user --mount`
//! when that is not permitted), where `--inside <mountpoint>` mounts a small
//! tmpfs over `<mountpoint>`, fills it, and exercises the run root there.
//! The mount exists only in that namespace and disappears with the process.
//!
//! Output: one `ok: <check>` or `FAIL: <check>: <detail>` line per check.
//! Exit status: 0 all checks passed, 3 a check failed, 4 the tmpfs could not
//! be mounted, 2 no mount namespace could be created.

use std::fs;
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use hardened_mcp::CallerId;
use hardened_mcp::runs::{FileName, RunError, RunRoot};
use rustix::mount::{MountFlags, mount};

const RESULT: FileName = FileName::fixed("result.json");
const PREVIOUS: &[u8] = b"{\"previous\": true}\n";

const EXIT_OK: u8 = 0;
const EXIT_NO_NAMESPACE: u8 = 2;
const EXIT_CHECK_FAILED: u8 = 3;
const EXIT_NO_MOUNT: u8 = 4;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.as_slice() {
        [_, flag, mnt] if flag == "--inside" => ExitCode::from(inside(Path::new(mnt))),
        [me, mnt] => ExitCode::from(outside(me, mnt)),
        _ => {
            eprintln!("usage: runs_diskfull <mountpoint>");
            ExitCode::from(64)
        }
    }
}

/// Re-executes this binary in a private mount namespace.
fn outside(me: &str, mnt: &str) -> u8 {
    for flags in hardened_mcp_tests::UNSHARE_ATTEMPTS {
        let status = Command::new("unshare")
            .args(flags)
            .args(["--", me, "--inside", mnt])
            .status();
        match status.map(|s| s.code()) {
            Ok(Some(code @ (0 | 3))) => return code as u8,
            Ok(code) => eprintln!("unshare {flags:?} did not run the checks: {code:?}"),
            Err(e) => eprintln!("unshare {flags:?}: {e}"),
        }
    }
    EXIT_NO_NAMESPACE
}

struct Checks {
    failed: bool,
}

impl Checks {
    fn check(&mut self, name: &str, ok: bool, detail: impl std::fmt::Debug) {
        if ok {
            println!("ok: {name}");
        } else {
            self.failed = true;
            println!("FAIL: {name}: {detail:?}");
        }
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) => vec![format!("<unreadable: {e}>")],
    };
    v.sort();
    v
}

/// Writes into `path` until the file system reports it is full.
fn fill(path: &Path) -> std::io::Result<u64> {
    let mut f = fs::File::create(path)?;
    let chunk = [0x5au8; 4096];
    let mut written = 0u64;
    loop {
        match f.write(&chunk) {
            Ok(0) => return Ok(written),
            Ok(n) => written += n as u64,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => return Ok(written),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn inside(mnt: &Path) -> u8 {
    if let Err(e) = mount(
        "tmpfs",
        mnt,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        c"size=64k,mode=0700",
    ) {
        println!("FAIL: mount tmpfs: {e}");
        return EXIT_NO_MOUNT;
    }
    let mut c = Checks { failed: false };
    run_checks(mnt, &mut c);
    if c.failed { EXIT_CHECK_FAILED } else { EXIT_OK }
}

fn run_checks(mnt: &Path, c: &mut Checks) {
    let root_path = mnt.join("root");
    let root = match RunRoot::open(&root_path) {
        Ok(r) => r,
        Err(e) => return c.check("open root on tmpfs", false, e),
    };
    let owner = CallerId::local();
    let (handle, run) = match root.create(&owner) {
        Ok(x) => x,
        Err(e) => return c.check("create run on tmpfs", false, e),
    };
    let run_path: PathBuf = root_path.join(handle.as_str());
    let first = run.write_atomic(&RESULT, PREVIOUS);
    c.check("first write fits", first.is_ok(), first);

    let filled = fill(&mnt.join("filler"));
    c.check(
        "filesystem filled",
        matches!(filled, Ok(n) if n > 0),
        &filled,
    );

    let big = vec![b'n'; 16 * 1024];
    let full = run.write_atomic(&RESULT, &big);
    c.check(
        "write_atomic on full fs is NoSpace",
        full == Err(RunError::NoSpace),
        full,
    );
    let kept = run.read_bounded(&RESULT, 1024);
    c.check(
        "previous content intact",
        kept.as_deref() == Ok(PREVIOUS),
        kept.map(|v| v.len()),
    );
    let left = entries(&run_path);
    c.check(
        "no temporary file left",
        left == [".owner", "result.json"],
        &left,
    );

    let created = root.create(&owner);
    c.check(
        "create on full fs is NoSpace",
        matches!(created, Err(RunError::NoSpace)),
        created.as_ref().map(|(h, _)| h.as_str().len()),
    );
    let runs = entries(&root_path);
    c.check(
        "failed create leaves no partial run",
        runs == [".index", ".key", handle.as_str()]
            && root
                .list(&owner)
                .is_ok_and(|l| l.iter().map(|h| h.as_str()).eq([handle.as_str()])),
        &runs,
    );
    let still = root.resolve(handle.as_str(), &owner);
    c.check("run still resolves", still.is_ok(), still.err());

    // Positive control: with space freed, the same write succeeds.
    let freed = fs::remove_file(mnt.join("filler"));
    c.check("space freed", freed.is_ok(), &freed);
    let again = run.write_atomic(&RESULT, &big);
    c.check("write succeeds once space is free", again.is_ok(), again);
    let now = run.read_bounded(&RESULT, big.len());
    c.check(
        "new content in place",
        now.as_deref() == Ok(&big[..]),
        now.map(|v| v.len()),
    );
}
