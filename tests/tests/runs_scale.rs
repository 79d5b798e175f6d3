//! The run root at scale: the per-caller index (listing costs the
//! caller's runs only; a forged, stale or torn index never hides or leaks a
//! run), quotas, retention and the sweeper, and work kept off the async
//! workers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hardened_mcp::CallerId;
use hardened_mcp::runs::{
    FileName, Quota, Quotas, Retention, RootOptions, RunError, RunHandle, RunRoot,
};

fn caller(name: &str) -> CallerId {
    CallerId::new(name).unwrap()
}

fn fresh() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("runs");
    (tmp, path)
}

fn open(path: &Path, quotas: Quotas, retention: Option<Retention>) -> RunRoot {
    RunRoot::open_with_options(
        path,
        RootOptions {
            quotas,
            retention,
            ..RootOptions::default()
        },
    )
    .unwrap()
}

/// The index's caller directories, by name.
fn caller_dirs(path: &Path) -> BTreeSet<String> {
    fs::read_dir(path.join(".index"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// The ground truth: every run directory of the root whose owner record
/// names `who`, found by resolving every entry (no index involved).
fn truth(root: &RunRoot, path: &Path, who: &CallerId) -> BTreeSet<String> {
    fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('.'))
        .filter(|n| root.resolve(n, who).is_ok())
        .collect()
}

fn listed(root: &RunRoot, who: &CallerId) -> BTreeSet<String> {
    root.list(who)
        .unwrap()
        .iter()
        .map(|h| h.as_str().to_owned())
        .collect()
}

#[test]
fn listing_names_only_the_callers_runs_whatever_the_index_holds() {
    let (_tmp, path) = fresh();
    let root = RunRoot::open(&path).unwrap();
    let (alice, bob) = (caller("alice"), caller("bob"));
    let (first, _) = root.create(&alice).unwrap();
    let alice_dir = path
        .join(".index")
        .join(caller_dirs(&path).pop_first().unwrap());
    let mut mine: BTreeSet<String> = [first.as_str().to_owned()].into();
    for _ in 0..2 {
        mine.insert(root.create(&alice).unwrap().0.as_str().to_owned());
    }
    let theirs: Vec<RunHandle> = (0..4).map(|_| root.create(&bob).unwrap().0).collect();
    assert_eq!(listed(&root, &alice), mine);
    assert_eq!(listed(&root, &bob).len(), 4);

    // A forged entry naming bob's run in alice's index lists nothing.
    fs::write(alice_dir.join(theirs[0].as_str()), b"").unwrap();
    assert_eq!(listed(&root, &alice), mine);
    // A stale entry (its run gone) lists nothing and is dropped.
    let ghost = format!("run_{}", "G".repeat(22));
    fs::write(alice_dir.join(&ghost), b"").unwrap();
    assert_eq!(listed(&root, &alice), mine);
    assert!(!alice_dir.join(&ghost).exists(), "stale entry dropped");
    // Removing a run removes its entry.
    let one = root.resolve(first.as_str(), &alice).unwrap();
    one.remove().unwrap();
    assert!(!alice_dir.join(first.as_str()).exists());
    mine.remove(first.as_str());
    assert_eq!(listed(&root, &alice), mine);
    // No caller id appears in the index.
    for d in caller_dirs(&path) {
        assert!(!d.contains("alice") && !d.contains("bob"), "{d}");
    }
}

#[test]
fn a_root_without_an_index_gets_one_built_from_the_owner_records() {
    let (_tmp, path) = fresh();
    let root = RunRoot::open(&path).unwrap();
    let (alice, bob) = (caller("alice"), caller("bob"));
    for _ in 0..3 {
        root.create(&alice).unwrap();
        root.create(&bob).unwrap();
    }
    let before = (listed(&root, &alice), listed(&root, &bob));
    drop(root);
    fs::remove_dir_all(path.join(".index")).unwrap();
    let root = RunRoot::open(&path).unwrap();
    assert_eq!((listed(&root, &alice), listed(&root, &bob)), before);
    assert_eq!(caller_dirs(&path).len(), 2);
}

/// A writer killed at arbitrary points of create and remove: after each
/// kill, the listing is exactly the runs whose owner record names the
/// caller (nothing hidden), and the other caller sees none of them.
#[test]
fn a_writer_killed_mid_update_never_hides_or_leaks_a_run() {
    let (_tmp, path) = fresh();
    drop(RunRoot::open(&path).unwrap());
    let (alice, bob) = (caller("alice"), caller("bob"));
    let mut seen_runs = 0;
    for round in 0..24u64 {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_runs_writer"))
            .arg(&path)
            .arg("alice")
            .spawn()
            .unwrap();
        // Kill points spread over a few milliseconds of creates/removes.
        std::thread::sleep(Duration::from_micros(3000 + (round * 7919) % 9000));
        child.kill().unwrap();
        child.wait().unwrap();
        let root = RunRoot::open(&path).unwrap();
        let truth = truth(&root, &path, &alice);
        assert_eq!(listed(&root, &alice), truth, "round {round}");
        assert!(listed(&root, &bob).is_empty());
        seen_runs += truth.len();
    }
    assert!(seen_runs > 0, "the writer never got to create a run");
}

#[test]
fn quotas_refuse_new_runs_with_the_quota_named() {
    let (_tmp, path) = fresh();
    let root = open(
        &path,
        Quotas {
            max_runs: Some(2),
            ..Quotas::default()
        },
        None,
    );
    let (alice, bob) = (caller("alice"), caller("bob"));
    let (h, _) = root.create(&alice).unwrap();
    root.create(&alice).unwrap();
    assert_eq!(
        root.create(&alice).err(),
        Some(RunError::QuotaExceeded(Quota::Runs))
    );
    root.create(&bob).unwrap();
    root.resolve(h.as_str(), &alice).unwrap().remove().unwrap();
    root.create(&alice).unwrap();

    let (_tmp, path) = fresh();
    let root = open(
        &path,
        Quotas {
            max_creates_per_minute: Some(3),
            ..Quotas::default()
        },
        None,
    );
    for _ in 0..3 {
        let (_, run) = root.create(&alice).unwrap();
        run.remove().unwrap();
    }
    assert_eq!(
        root.create(&alice).err(),
        Some(RunError::QuotaExceeded(Quota::CreateRate))
    );
    root.create(&bob).unwrap();

    let (_tmp, path) = fresh();
    let root = open(
        &path,
        Quotas {
            max_bytes: Some(64 * 1024),
            ..Quotas::default()
        },
        None,
    );
    let (_, run) = root.create(&alice).unwrap();
    run.write_atomic(&FileName::fixed("big.bin"), &vec![7u8; 256 * 1024])
        .unwrap();
    // Not measured yet: not counted.
    let (_, second) = root.create(&alice).unwrap();
    assert!(run.record_usage(false).unwrap() >= 256 * 1024);
    assert_eq!(
        root.create(&alice).err(),
        Some(RunError::QuotaExceeded(Quota::Bytes))
    );
    root.create(&bob).unwrap();
    run.remove().unwrap();
    drop(second);
    root.create(&alice).unwrap();
}

#[test]
fn an_expired_run_answers_like_an_unknown_one_and_is_swept() {
    let (_tmp, path) = fresh();
    let idle = Duration::from_millis(300);
    let root = open(
        &path,
        Quotas::default(),
        Some(Retention {
            max_idle: idle,
            max_idle_finished: None,
        }),
    );
    let alice = caller("alice");
    let (old, _) = root.create(&alice).unwrap();
    let (live, _) = root.create(&alice).unwrap();
    std::thread::sleep(idle * 2);
    let (fresh_run, _) = root.create(&alice).unwrap();
    assert_eq!(
        root.resolve(old.as_str(), &alice).err(),
        Some(RunError::UnknownRun)
    );
    assert_eq!(
        listed(&root, &alice),
        [fresh_run.as_str().to_owned()].into()
    );
    let report = root
        .sweep_expired(100, &|h: &RunHandle| h == &live)
        .unwrap();
    assert_eq!((report.removed, report.kept_live), (1, 1), "{report:?}");
    assert!(!path.join(old.as_str()).exists(), "expired run removed");
    assert!(
        path.join(live.as_str()).exists(),
        "a live run is never removed"
    );
    assert!(root.resolve(fresh_run.as_str(), &alice).is_ok());
}

/// A run another process follows (it holds the run's lease) is kept past
/// its retention, whatever this process's `is_live` says; once the lease
/// is released the next sweep removes it.
#[test]
fn a_leased_run_is_never_swept() {
    let (_tmp, path) = fresh();
    let idle = Duration::from_millis(300);
    let root = open(
        &path,
        Quotas::default(),
        Some(Retention {
            max_idle: idle,
            max_idle_finished: None,
        }),
    );
    let alice = caller("alice");
    let (followed, dir) = root.create(&alice).unwrap();
    let lease = dir.lease().unwrap().expect("a fresh run's lease is free");
    assert!(dir.is_leased().unwrap());
    std::thread::sleep(idle * 2);
    let report = root.sweep_expired(100, &|_: &RunHandle| false).unwrap();
    assert_eq!((report.removed, report.kept_live), (0, 1), "{report:?}");
    assert!(
        path.join(followed.as_str()).exists(),
        "a leased run is kept"
    );
    drop(lease);
    assert!(!dir.is_leased().unwrap());
    let report = root.sweep_expired(100, &|_: &RunHandle| false).unwrap();
    assert_eq!(report.removed, 1, "{report:?}");
    assert!(!path.join(followed.as_str()).exists());
}

#[test]
fn a_use_resets_the_expiry_clock_and_a_listing_does_not() {
    let (_tmp, path) = fresh();
    let idle = Duration::from_millis(1000);
    let root = open(
        &path,
        Quotas::default(),
        Some(Retention {
            max_idle: idle,
            max_idle_finished: None,
        }),
    );
    let alice = caller("alice");
    let (used, _) = root.create(&alice).unwrap();
    let (listed_only, _) = root.create(&alice).unwrap();
    std::thread::sleep(idle * 6 / 10);
    root.resolve(used.as_str(), &alice).unwrap();
    assert_eq!(listed(&root, &alice).len(), 2);
    std::thread::sleep(idle * 6 / 10);
    assert!(
        root.resolve(used.as_str(), &alice).is_ok(),
        "used 0.6 s ago"
    );
    assert_eq!(
        root.resolve(listed_only.as_str(), &alice).err(),
        Some(RunError::UnknownRun),
        "only listed: idle 1.2 s"
    );
}

#[test]
fn finished_runs_expire_sooner() {
    let (_tmp, path) = fresh();
    let root = open(
        &path,
        Quotas::default(),
        Some(Retention {
            max_idle: Duration::from_secs(3600),
            max_idle_finished: Some(Duration::from_millis(300)),
        }),
    );
    let alice = caller("alice");
    let (done, run) = root.create(&alice).unwrap();
    let (busy, _) = root.create(&alice).unwrap();
    run.record_usage(true).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        root.resolve(done.as_str(), &alice).err(),
        Some(RunError::UnknownRun)
    );
    assert!(root.resolve(busy.as_str(), &alice).is_ok());
}

#[test]
fn a_sweep_looks_at_no_more_entries_than_its_budget() {
    let (_tmp, path) = fresh();
    let root = open(
        &path,
        Quotas::default(),
        Some(Retention {
            max_idle: Duration::from_millis(1),
            max_idle_finished: None,
        }),
    );
    for who in ["a", "b", "c"] {
        for _ in 0..4 {
            root.create(&caller(who)).unwrap();
        }
    }
    std::thread::sleep(Duration::from_millis(20));
    let mut removed = 0;
    for _ in 0..10 {
        let r = root.sweep_expired(5, &|_: &RunHandle| false).unwrap();
        assert!(r.examined <= 5, "{r:?}");
        removed += r.removed;
        if r.pass_complete && removed == 12 {
            break;
        }
    }
    assert_eq!(removed, 12);
    let left: Vec<String> = fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Removing a run of 100,000 files through `remove_async` leaves a
/// single-threaded runtime free to serve other calls meanwhile; the same
/// removal done synchronously in a task holds the thread until it is done
/// (the positive control).
#[test]
fn removal_of_a_huge_run_does_not_hold_the_async_worker() {
    fn huge_run(root: &RunRoot, path: &Path, who: &CallerId) -> hardened_mcp::runs::RunDir {
        let (h, run) = root.create(who).unwrap();
        for i in 0..100_000 {
            fs::write(path.join(h.as_str()).join(format!("f{i}")), b"").unwrap();
        }
        run
    }
    let (_tmp, path) = fresh();
    let root = RunRoot::open(&path).unwrap();
    let (alice, bob) = (caller("alice"), caller("bob"));
    let (probe, _) = root.create(&bob).unwrap();

    // How many quick calls complete while the removal is under way.
    let served_during = |asynchronous: bool| -> usize {
        let run = huge_run(&root, &path, &alice);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = done.clone();
            let removal = tokio::spawn(async move {
                if asynchronous {
                    run.remove_async().await.unwrap();
                } else {
                    run.remove().unwrap();
                }
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            let mut served = 0;
            for _ in 0..20 {
                tokio::task::yield_now().await;
                if done.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                root.resolve(probe.as_str(), &bob).unwrap();
                served += 1;
            }
            removal.await.unwrap();
            served
        })
    };
    assert_eq!(
        served_during(true),
        20,
        "calls served while removing off the worker"
    );
    assert_eq!(
        served_during(false),
        0,
        "control: a synchronous removal holds the thread"
    );
}

/// Replicas: each opener of the root is a server process of its own. A
/// caller's quotas hold across all of them: the creation rate counts every
/// process's creations, and concurrent creations through several never
/// take the caller past `max_runs`.
#[test]
fn quotas_hold_across_every_process_of_the_root() {
    let (_tmp, path) = fresh();
    let rate = Quotas {
        max_creates_per_minute: Some(3),
        ..Quotas::default()
    };
    let (a, b) = (open(&path, rate, None), open(&path, rate, None));
    let alice = caller("alice");
    a.create(&alice).unwrap();
    b.create(&alice).unwrap();
    a.create(&alice).unwrap();
    for replica in [&a, &b] {
        assert_eq!(
            replica.create(&alice).err(),
            Some(RunError::QuotaExceeded(Quota::CreateRate))
        );
    }
    // A third process opened later sees the same count.
    assert_eq!(
        open(&path, rate, None).create(&alice).err(),
        Some(RunError::QuotaExceeded(Quota::CreateRate))
    );
    b.create(&caller("bob")).unwrap();

    let (_tmp, path) = fresh();
    let held = Quotas {
        max_runs: Some(5),
        ..Quotas::default()
    };
    let replicas: Vec<RunRoot> = (0..3).map(|_| open(&path, held, None)).collect();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(12));
    let made: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..12)
            .map(|i| {
                let (root, barrier, alice) = (&replicas[i % 3], barrier.clone(), alice.clone());
                s.spawn(move || {
                    barrier.wait();
                    usize::from(root.create(&alice).is_ok())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(made, 5, "the caller holds exactly its ceiling");
}
