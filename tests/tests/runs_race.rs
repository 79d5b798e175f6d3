//! The symlink-swap race: an attacker thread keeps exchanging a run
//! directory with a symlink to a directory outside the root
//! (`renameat2(RENAME_EXCHANGE)`) while the resolver resolves the handle and
//! creates files in the run. Zero files may land outside the root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use hardened_mcp::CallerId;
use hardened_mcp::runs::{FileName, RunError, RunRoot};
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

const ATTEMPTS: u64 = 100_000;
const NAIVE_ATTEMPTS: u64 = 20_000;
const PROBE: FileName = FileName::fixed("probe");
/// The attacker's symlink, a hidden name next to the run directory.
const DECOY: &str = ".decoy";

fn open_dir(path: &Path) -> OwnedFd {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap()
}

fn exchange(root: &OwnedFd, a: &str, b: &str) {
    rustix::fs::renameat_with(root, a, root, b, RenameFlags::EXCHANGE).unwrap();
}

fn exists_in(dir: &OwnedFd, name: &str) -> bool {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => true,
        Err(Errno::NOENT) => false,
        Err(e) => panic!("stat: {e}"),
    }
}

/// Starts the attacker: exchanges `handle` and [`DECOY`] in a tight loop
/// until `stop`, counting swaps. Leaves the original arrangement on exit.
fn spawn_attacker(
    root_path: &Path,
    handle: String,
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
) -> thread::JoinHandle<()> {
    let root = open_dir(root_path);
    thread::spawn(move || {
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            exchange(&root, &handle, DECOY);
            n += 1;
        }
        if n % 2 == 1 {
            exchange(&root, &handle, DECOY);
        }
        swaps.store(n, Ordering::Relaxed);
    })
}

#[test]
fn symlink_swap_race_never_escapes() {
    let tmp = tempfile::tempdir().unwrap();
    let root_path = tmp.path().join("root");
    let outside_path = tmp.path().join("outside");
    let root = RunRoot::open(&root_path).unwrap();
    let alice = CallerId::new("alice").unwrap();
    let (handle, run) = root.create(&alice).unwrap();
    drop(run);
    let h = handle.as_str().to_owned();

    // The outside directory even carries a valid owner record for alice, so
    // only confinement (not the owner check) stands between a resolver that
    // followed the link and a write outside.
    fs::create_dir(&outside_path).unwrap();
    fs::copy(
        root_path.join(&h).join(".owner"),
        outside_path.join(".owner"),
    )
    .unwrap();
    symlink(&outside_path, root_path.join(DECOY)).unwrap();
    let outside = open_dir(&outside_path);
    let root_fd = open_dir(&root_path);

    // Positive control: in the swapped state, a path-based write through the
    // handle lands outside.
    exchange(&root_fd, &h, DECOY);
    fs::write(root_path.join(&h).join("probe"), b"x").unwrap();
    assert!(exists_in(&outside, "probe"));
    fs::remove_file(outside_path.join("probe")).unwrap();
    exchange(&root_fd, &h, DECOY);

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let attacker = spawn_attacker(&root_path, h.clone(), stop.clone(), swaps.clone());

    let started = Instant::now();
    let (mut resolved, mut refused, mut escapes) = (0u64, 0u64, 0u64);
    for _ in 0..ATTEMPTS {
        match root.resolve(&h, &alice) {
            Ok(run) => {
                resolved += 1;
                drop(run.create_new(&PROBE).unwrap());
                if exists_in(&outside, "probe") {
                    escapes += 1;
                }
                run.remove_file(&PROBE).unwrap();
            }
            Err(RunError::UnknownRun) => refused += 1,
            Err(e) => panic!("unexpected error under race: {e:?}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    attacker.join().unwrap();
    let elapsed = started.elapsed();

    let mut outside_entries: Vec<_> = fs::read_dir(&outside_path)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    outside_entries.sort();
    eprintln!(
        "race: {ATTEMPTS} attempts in {elapsed:?}: {resolved} resolved, {refused} refused, \
         {} swaps, {escapes} escapes",
        swaps.load(Ordering::Relaxed)
    );
    assert_eq!(escapes, 0, "files were created outside the root");
    assert_eq!(outside_entries, [".owner"], "outside directory changed");
    // The attack really ran: both states of the entry were observed.
    assert!(resolved > 0 && refused > 0, "the swap never interleaved");
    assert!(swaps.load(Ordering::Relaxed) > 1000);
    assert!(elapsed < Duration::from_secs(300), "hang guard");
    // Afterwards the run is intact and still resolves.
    assert!(root.resolve(&h, &alice).is_ok());
}

/// For comparison only (not asserted: timing-dependent): the naive
/// canonicalize-prefix-then-open-by-path resolver under the same attack.
#[test]
fn naive_resolver_under_the_same_race_for_comparison() {
    let tmp = tempfile::tempdir().unwrap();
    let root_path = tmp.path().join("root");
    let outside_path = tmp.path().join("outside");
    let root = RunRoot::open(&root_path).unwrap();
    let (handle, _) = root.create(&CallerId::new("alice").unwrap()).unwrap();
    let h = handle.as_str().to_owned();
    fs::create_dir(&outside_path).unwrap();
    symlink(&outside_path, root_path.join(DECOY)).unwrap();
    let outside = open_dir(&outside_path);
    let canon_root = fs::canonicalize(&root_path).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let attacker = spawn_attacker(&root_path, h.clone(), stop.clone(), swaps.clone());
    let mut escapes = 0u64;
    for _ in 0..NAIVE_ATTEMPTS {
        let joined = root_path.join(&h);
        let Ok(canon) = fs::canonicalize(&joined) else {
            continue;
        };
        if !canon.starts_with(&canon_root) {
            continue;
        }
        if fs::File::create(joined.join("probe")).is_ok() {
            if exists_in(&outside, "probe") {
                escapes += 1;
                let _ = rustix::fs::unlinkat(outside.as_fd(), "probe", AtFlags::empty());
            } else {
                let _ = fs::remove_file(canon.join("probe"));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    attacker.join().unwrap();
    eprintln!("naive: {escapes} of {NAIVE_ATTEMPTS} attempts escaped the root");
}

const REMOVE_RUNS: usize = 500;

/// A temporary directory on tmpfs where there is one (creating and removing
/// runs fsyncs; on a disk that would dominate the test's time).
fn fast_tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().unwrap()
}
const REMOVE_TRIES_PER_RUN: usize = 50;

/// Deletion under the same attack: while runs are removed, an attacker keeps
/// exchanging the current run's entry with a symlink to an outside
/// directory. A removal either deletes the run or answers `UnknownRun`; the
/// outside directory is never touched and no tombstone is left behind.
#[test]
fn symlink_swap_race_never_deletes_outside() {
    use std::sync::Mutex;

    let tmp = fast_tempdir();
    let root_path = tmp.path().join("root");
    let outside_path = tmp.path().join("outside");
    let root = RunRoot::open(&root_path).unwrap();
    let alice = CallerId::new("alice").unwrap();
    fs::create_dir(&outside_path).unwrap();
    fs::write(outside_path.join("secret.txt"), b"keep me").unwrap();
    symlink(&outside_path, root_path.join(DECOY)).unwrap();
    // Positive control: through the decoy, the outside file is deletable.
    fs::write(root_path.join(DECOY).join("victim"), b"x").unwrap();
    fs::remove_file(root_path.join(DECOY).join("victim")).unwrap();
    assert!(!outside_path.join("victim").exists());

    let current = Arc::new(Mutex::new(String::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let attacker = {
        let root_fd = open_dir(&root_path);
        let (current, stop, swaps) = (current.clone(), stop.clone(), swaps.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // The lock is held across the exchange so the main thread's
                // restoration below is never interleaved with a swap.
                let h = current.lock().unwrap();
                if !h.is_empty()
                    && rustix::fs::renameat_with(
                        &root_fd,
                        &*h,
                        &root_fd,
                        DECOY,
                        RenameFlags::EXCHANGE,
                    )
                    .is_ok()
                {
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };

    let payload = FileName::fixed("payload");
    let (mut removed, mut refused) = (0usize, 0u64);
    let started = Instant::now();
    for _ in 0..REMOVE_RUNS {
        let (handle, run) = root.create(&alice).unwrap();
        run.write_atomic(&payload, b"run data").unwrap();
        drop(run);
        *current.lock().unwrap() = handle.as_str().to_owned();
        // Let the attacker get going on this run before removing it.
        let target = swaps.load(Ordering::Relaxed) + 20;
        while swaps.load(Ordering::Relaxed) < target {
            thread::yield_now();
        }
        for _ in 0..REMOVE_TRIES_PER_RUN {
            match root
                .resolve(handle.as_str(), &alice)
                .map(|run| run.remove())
            {
                Ok(Ok(())) => {
                    removed += 1;
                    break;
                }
                Ok(Err(RunError::UnknownRun)) | Err(RunError::UnknownRun) => refused += 1,
                Ok(Err(e)) | Err(e) => panic!("unexpected error under race: {e:?}"),
            }
        }
        // Restore the plain arrangement before the next run.
        let mut cur = current.lock().unwrap();
        let decoy_is_link = fs::symlink_metadata(root_path.join(DECOY))
            .unwrap()
            .file_type()
            .is_symlink();
        if !decoy_is_link {
            let root_fd = open_dir(&root_path);
            exchange(&root_fd, &cur, DECOY);
        }
        cur.clear();
    }
    stop.store(true, Ordering::Relaxed);
    attacker.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    eprintln!(
        "remove race: {REMOVE_RUNS} runs, {removed} removed, {refused} refused, {swaps} swaps, {:?}",
        started.elapsed()
    );

    let mut outside_entries: Vec<_> = fs::read_dir(&outside_path)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    outside_entries.sort();
    assert_eq!(outside_entries, ["secret.txt"]);
    assert_eq!(
        fs::read(outside_path.join("secret.txt")).unwrap(),
        b"keep me"
    );
    assert!(
        fs::symlink_metadata(root_path.join(DECOY))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let tombs = fs::read_dir(&root_path)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".tomb-")
        })
        .count();
    assert_eq!(tombs, 0, "tombstones left behind");
    assert!(removed > 0 && refused > 0, "the swap never interleaved");
}

/// Replicas start together on a fresh root: every opener succeeds, and all
/// of them use the one key (a run one creates, another resolves). A
/// concurrent opener's staged key file is never swept as a crash's
/// leftover.
#[test]
fn openers_racing_on_a_fresh_root_all_succeed_with_one_key() {
    const OPENERS: usize = 6;
    const ROUNDS: usize = 40;
    let alice = CallerId::new("alice").unwrap();
    for round in 0..ROUNDS {
        let tmp = fast_tempdir();
        let path = tmp.path().join("runs");
        let barrier = Arc::new(std::sync::Barrier::new(OPENERS));
        let opened: Vec<Result<RunRoot, RunError>> = (0..OPENERS)
            .map(|_| {
                let (path, barrier) = (path.clone(), Arc::clone(&barrier));
                thread::spawn(move || {
                    barrier.wait();
                    RunRoot::open(&path)
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        let roots: Vec<RunRoot> = opened
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| panic!("round {round}: an opener failed: {e:?}")))
            .collect();
        let (run, _) = roots[0].create(&alice).unwrap();
        for other in &roots[1..] {
            other
                .resolve(run.as_str(), &alice)
                .unwrap_or_else(|e| panic!("round {round}: another key: {e:?}"));
        }
    }
}
