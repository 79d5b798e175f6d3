//! Run-root benchmark: `resolve` of an existing handle and `create`, against
//! the naive canonicalize-and-prefix approach measured in the same run.
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
use hardened_mcp::runs::RunRoot;

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

criterion_group!(benches, bench);
criterion_main!(benches);
