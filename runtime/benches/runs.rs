//! Run-root benchmark: `resolve` of an existing handle and `create`, against
//! the naive canonicalize-and-prefix approach measured in the same run;
//! `list` of one caller's runs among many other callers' runs, against a
//! scan of the whole root (what `list` did before the per-caller index);
//! the expiry sweep per expired run.
//!
//! `cargo bench -p hardened-mcp --bench runs -- --warm-up-time 1 --measurement-time 3`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use criterion::{Criterion, criterion_group, criterion_main};
use hardened_mcp::CallerId;
use hardened_mcp::runs::{Quotas, Retention, RootOptions, RunHandle, RunRoot};

const OWNER_RECORD: &[u8] = b"hardened-mcp run owner v1\nalice\n";

/// The textbook check: pattern, canonicalize, prefix-compare, then use the
/// path (here: read and compare the owner record by path). It races.
fn naive_resolve(root: &Path, canon_root: &Path, handle: &str) -> Option<PathBuf> {
    let body = handle.strip_prefix("run_")?;
    if !(22..=80).contains(&body.len())
        || !body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return None;
    }
    let joined = root.join(handle);
    let canon = fs::canonicalize(&joined).ok()?;
    if !canon.starts_with(canon_root) || !canon.is_dir() {
        return None;
    }
    (fs::read(joined.join(".owner")).ok()? == OWNER_RECORD).then_some(joined)
}

/// The naive create with the same durability as `RunRoot::create`: a random
/// directory, an owner record written to a temporary file and renamed, file,
/// run directory and root fsynced.
fn naive_create(root: &Path) -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).unwrap();
    let handle = format!("run_{}", URL_SAFE_NO_PAD.encode(bytes));
    let dir = root.join(&handle);
    fs::create_dir(&dir).unwrap();
    let tmp = dir.join(".owner.tmp");
    let mut f = fs::File::create(&tmp).unwrap();
    f.write_all(OWNER_RECORD).unwrap();
    f.sync_all().unwrap();
    fs::rename(&tmp, dir.join(".owner")).unwrap();
    fs::File::open(&dir).unwrap().sync_all().unwrap();
    fs::File::open(root).unwrap().sync_all().unwrap();
    handle
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let alice = CallerId::new("alice").unwrap();

    let ours = RunRoot::open(tmp.path().join("ours")).unwrap();
    let (handle, _) = ours.create(&alice).unwrap();
    let naive_root = tmp.path().join("naive");
    fs::create_dir(&naive_root).unwrap();
    let canon_root = fs::canonicalize(&naive_root).unwrap();
    let naive_handle = naive_create(&naive_root);

    let mut g = c.benchmark_group("runs/resolve");
    g.bench_function("run_root", |b| {
        b.iter(|| ours.resolve(black_box(handle.as_str()), &alice).unwrap())
    });
    g.bench_function("naive_canonicalize_prefix", |b| {
        b.iter(|| naive_resolve(&naive_root, &canon_root, black_box(&naive_handle)).unwrap())
    });
    g.finish();

    let mut g = c.benchmark_group("runs/create");
    g.sample_size(20);
    g.bench_function("run_root", |b| b.iter(|| ours.create(&alice).unwrap()));
    g.bench_function("naive_mkdir_write", |b| {
        b.iter(|| naive_create(black_box(&naive_root)))
    });
    g.finish();

    // The same on tmpfs, where fsync is nearly free: the cost of the
    // confinement work itself rather than of the disk.
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let tmp = tempfile::tempdir_in(shm).unwrap();
        let ours = RunRoot::open(tmp.path().join("ours")).unwrap();
        let naive_root = tmp.path().join("naive");
        fs::create_dir(&naive_root).unwrap();
        let mut g = c.benchmark_group("runs/create_tmpfs");
        g.bench_function("run_root", |b| b.iter(|| ours.create(&alice).unwrap()));
        g.bench_function("naive_mkdir_write", |b| {
            b.iter(|| naive_create(black_box(&naive_root)))
        });
        g.finish();
    }
}

/// The list of the index-less design, for the same-run baseline: every
/// entry of the root, each resolved as the caller.
fn scan_list(root: &RunRoot, path: &Path, who: &CallerId) -> usize {
    fs::read_dir(path)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .filter(|n| root.resolve(n, who).is_ok())
        .count()
}

/// `list` against the number of other callers' runs (flat is the target)
/// and against the caller's own, on tmpfs (100,000 runs are made in
/// seconds there; the index's cost does not depend on fsync).
fn list(c: &mut Criterion) {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return;
    }
    let tmp = tempfile::tempdir_in(shm).unwrap();
    let path = tmp.path().join("runs");
    let root = RunRoot::open(&path).unwrap();
    let (alice, bob) = (
        CallerId::new("alice").unwrap(),
        CallerId::new("bob").unwrap(),
    );
    for _ in 0..10 {
        root.create(&alice).unwrap();
    }
    let mut g = c.benchmark_group("runs/list_10_own");
    g.sample_size(20);
    let mut foreign = 0;
    for target in [0usize, 10_000, 100_000] {
        while foreign < target {
            root.create(&bob).unwrap();
            foreign += 1;
        }
        g.bench_function(format!("index_{target}_foreign"), |b| {
            b.iter(|| assert_eq!(root.list(&alice).unwrap().len(), 10))
        });
        if target <= 10_000 {
            g.bench_function(format!("scan_{target}_foreign"), |b| {
                b.iter(|| assert_eq!(scan_list(&root, &path, &alice), 10))
            });
        }
    }
    g.finish();
    let mut g = c.benchmark_group("runs/list_own_among_100k_foreign");
    g.sample_size(20);
    let mut own = 10;
    for target in [10usize, 100, 1000] {
        while own < target {
            root.create(&alice).unwrap();
            own += 1;
        }
        g.bench_function(format!("own_{target}"), |b| {
            b.iter(|| assert_eq!(root.list(&alice).unwrap().len(), target))
        });
    }
    g.finish();
    // resolve and create with 100,000 other runs in the root.
    let (h, _) = root.create(&alice).unwrap();
    let mut g = c.benchmark_group("runs/with_100k_foreign_tmpfs");
    g.bench_function("resolve", |b| {
        b.iter(|| root.resolve(black_box(h.as_str()), &alice).unwrap())
    });
    g.bench_function("create", |b| b.iter(|| root.create(&alice).unwrap()));
    g.finish();
}

/// The expiry sweep, per expired run removed (tmpfs; each iteration makes
/// 100 runs that are expired by the time the sweep looks).
fn sweep(c: &mut Criterion) {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return;
    }
    let tmp = tempfile::tempdir_in(shm).unwrap();
    let root = RunRoot::open_with_options(
        tmp.path().join("runs"),
        RootOptions {
            quotas: Quotas::default(),
            retention: Some(Retention {
                max_idle: std::time::Duration::from_nanos(1),
                max_idle_finished: None,
            }),
            ..RootOptions::default()
        },
    )
    .unwrap();
    let alice = CallerId::new("alice").unwrap();
    let never = |_: &RunHandle| false;
    let mut g = c.benchmark_group("runs/sweep_expired");
    g.sample_size(20);
    g.bench_function("per_expired_run", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                for _ in 0..100 {
                    root.create(&alice).unwrap();
                }
                let t = std::time::Instant::now();
                let mut removed = 0;
                while removed < 100 {
                    removed += root.sweep_expired(1000, &never).unwrap().removed;
                }
                total += t.elapsed() / 100;
            }
            total
        })
    });
    g.finish();
}

criterion_group!(benches, bench, list, sweep);
criterion_main!(benches);
