//! Sandbox benchmarks, each against a baseline measured in the same run:
//! sandboxed spawn + wait of a trivial binary against a bare
//! `tokio::process::Command`, and bounded log capture against reading the
//! same bytes from a pipe without bounds.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hardened_mcp::identity::CallerId;
use hardened_mcp::runs::RunRoot;
use hardened_mcp::sandbox::{Limits, RunRequest, Sandbox};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

#[path = "support/levels.rs"]
mod levels;
use levels::{HEAD, Level, TRUE, bare_true, sandbox, sandboxed_true};

const LOG_BYTES: u64 = 64 << 20;

fn spawn_wait(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let who = CallerId::local();
    let root = RunRoot::open(dir.path().join("runs")).unwrap();
    let (_handle, run_dir) = root.create(&who).unwrap();
    let token = CancellationToken::new();
    let full = sandbox(Level::Full);
    let no_cgroup = sandbox(Level::NoCgroup);
    let host_net = sandbox(Level::HostNetwork);
    let pg = sandbox(Level::ProcessGroup);
    let mut g = c.benchmark_group("spawn_wait_true");
    g.sample_size(40).measurement_time(Duration::from_secs(6));
    g.bench_function("bare_tokio_command", |b| {
        b.iter(|| rt.block_on(bare_true()))
    });
    g.bench_function("bare_tokio_command_piped", |b| {
        b.iter(|| {
            rt.block_on(async {
                let out = tokio::process::Command::new(TRUE)
                    .stdin(Stdio::null())
                    .output()
                    .await
                    .unwrap();
                assert!(out.status.success());
            })
        })
    });
    for (name, sb) in [
        ("sandbox_full", &full),
        ("sandbox_full_without_cgroup", &no_cgroup),
        ("sandbox_full_host_network", &host_net),
        ("sandbox_process_group", &pg),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| rt.block_on(sandboxed_true(sb, &who, &run_dir, &token)))
        });
    }
    g.finish();
    spawn_wait_spaced(c, &rt, &who, &run_dir, &token, &full, &pg);
}

/// Pause before each timed launch of [`spawn_wait_spaced`]: longer than
/// the pools need to make the next network namespace and run cgroup, and
/// than the kernel's teardown of the last run's namespaces.
const IDLE: Duration = Duration::from_millis(20);

/// The same launches one at a time, each after [`IDLE`] (not timed), the
/// bare spawn alike: the latency of a launch on a server that is not
/// already busy launching, where the back-to-back loop of [`spawn_wait`]
/// also charges each launch with the work the previous one left to the
/// pools' threads and the kernel on the same cores.
fn spawn_wait_spaced(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    who: &CallerId,
    run_dir: &hardened_mcp::runs::RunDir,
    token: &CancellationToken,
    full: &Sandbox,
    pg: &Sandbox,
) {
    let mut g = c.benchmark_group("spawn_wait_true_spaced");
    g.sample_size(40).measurement_time(Duration::from_secs(8));
    g.bench_function("bare_tokio_command", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                std::thread::sleep(IDLE);
                let start = std::time::Instant::now();
                rt.block_on(bare_true());
                total += start.elapsed();
            }
            total
        })
    });
    for (name, sb) in [("sandbox_full", full), ("sandbox_process_group", pg)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    std::thread::sleep(IDLE);
                    let start = std::time::Instant::now();
                    rt.block_on(sandboxed_true(sb, who, run_dir, token));
                    total += start.elapsed();
                }
                total
            })
        });
    }
    g.finish();
}

fn log_capture(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let who = CallerId::local();
    let root = RunRoot::open(dir.path().join("runs")).unwrap();
    let (_handle, run_dir) = root.create(&who).unwrap();
    let token = CancellationToken::new();
    let ns = sandbox(Level::Full);
    let n = LOG_BYTES.to_string();
    let mut g = c.benchmark_group("log_capture_64MiB");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Bytes(LOG_BYTES));
    g.bench_function("bare_pipe_unbounded_read", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut child = tokio::process::Command::new(HEAD)
                    .args(["-c", &n, "/dev/zero"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap();
                let mut out = child.stdout.take().unwrap();
                let mut all = Vec::new();
                out.read_to_end(&mut all).await.unwrap();
                assert!(child.wait().await.unwrap().success());
                assert_eq!(all.len() as u64, LOG_BYTES);
            })
        })
    });
    g.bench_function("sandbox_bounded_capture", |b| {
        b.iter(|| {
            rt.block_on(async {
                let o = ns
                    .run(
                        &who,
                        &run_dir,
                        RunRequest::new("head")
                            .args(["-c", n.as_str(), "/dev/zero"])
                            .limits(Limits::default()),
                        &token,
                    )
                    .await
                    .unwrap();
                assert!(o.success());
                assert_eq!(o.stdout.total_bytes, LOG_BYTES);
            })
        })
    });
    g.finish();
}

criterion_group!(benches, spawn_wait, log_capture);
criterion_main!(benches);
