//! Round trip of a cheap tool (`heat_status` of a run that never started)
//! through the full hardened server over stdio-style OS pipes, against the
//! same work written as a plain rmcp `#[tool]` on rmcp's own line
//! transport, measured in the same run; then throughput with 8 concurrent
//! callers (8 tasks sharing one client session) against each server. Two
//! mixed variants (each tool layer on the other transport) show which layer
//! a difference comes from, and `status_cpu_per_call` times the round trip
//! in process CPU time, which the machine's other load barely moves.
//!
//! `cargo bench --profile release -p solver-server --bench status -- --warm-up-time 1 --measurement-time 5`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hardened_mcp::prelude::*;
use hardened_mcp::transport::HardenedStdio;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use solver_server::server::HeatServer;
use tokio::net::unix::pipe;

#[path = "support/plain_status.rs"]
mod plain_status;
use plain_status::PlainStatus;

/// Concurrent callers of the throughput group.
const CALLERS: u64 = 8;

/// Which tool layer serves the call, over which transport. The two
/// benchmarks the issue asks for are `plain_rmcp` (plain tool on rmcp's line
/// transport) and `hardened_server` (the real server on `HardenedStdio`); the
/// two mixed ones split the difference into transport and tool layer.
#[derive(Clone, Copy, Debug)]
struct Side {
    hardened_tool: bool,
    hardened_stdio: bool,
}

const SIDES: [Side; 4] = [
    Side {
        hardened_tool: false,
        hardened_stdio: false,
    },
    Side {
        hardened_tool: true,
        hardened_stdio: true,
    },
    Side {
        hardened_tool: false,
        hardened_stdio: true,
    },
    Side {
        hardened_tool: true,
        hardened_stdio: false,
    },
];

impl Side {
    fn label(self) -> &'static str {
        match (self.hardened_tool, self.hardened_stdio) {
            (false, false) => "plain_rmcp",
            (true, true) => "hardened_server",
            (false, true) => "plain_tool_on_hardened_stdio",
            (true, false) => "hardened_server_on_rmcp_stdio",
        }
    }

    fn tool(self) -> &'static str {
        if self.hardened_tool {
            "heat_status"
        } else {
            "status"
        }
    }
}

/// Both servers, sharing one run root, and the handle of one run of the
/// stdio caller.
struct Fixture {
    heat: Server<HeatServer>,
    plain: PlainStatus,
    handle: String,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let heat = solver_server::app::build_at(
        &dir.path().join("runs"),
        env!("CARGO_BIN_EXE_heat1d").as_ref(),
    )
    .unwrap();
    let runs = heat.service().run_root().clone();
    // A stdio session authenticates nobody: its caller is `CallerId::local()`.
    let (handle, _run) = runs.create(&CallerId::local()).unwrap();
    let plain = PlainStatus::new(runs);
    Fixture {
        heat,
        plain,
        handle: handle.to_string(),
        _dir: dir,
    }
}

/// Serves `side` on one pair of OS pipes and returns a connected client.
async fn connect(f: &Fixture, side: Side) -> RunningService<RoleClient, ()> {
    let (cw, sr) = pipe::pipe().unwrap();
    let (sw, cr) = pipe::pipe().unwrap();
    macro_rules! spawn_server {
        ($server:expr) => {{
            let server = $server;
            let hardened_stdio = side.hardened_stdio;
            tokio::spawn(async move {
                let running = if hardened_stdio {
                    server.serve(HardenedStdio::new(sr, sw)).await.unwrap()
                } else {
                    server.serve((sr, sw)).await.unwrap()
                };
                let _ = running.waiting().await;
            });
        }};
    }
    if side.hardened_tool {
        spawn_server!(f.heat.clone());
    } else {
        spawn_server!(f.plain.clone());
    }
    ().serve((cr, cw)).await.unwrap()
}

fn params(f: &Fixture, side: Side) -> CallToolRequestParams {
    let mut args = serde_json::Map::new();
    args.insert("run".into(), f.handle.clone().into());
    CallToolRequestParams::new(side.tool()).with_arguments(args)
}

/// One call, checked: a success with the run's handle in its structured
/// content, so the benchmark measures the real path and not a refusal.
async fn check(client: &RunningService<RoleClient, ()>, p: &CallToolRequestParams, handle: &str) {
    let r = client.call_tool(p.clone()).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let text = serde_json::to_string(&r.structured_content).unwrap();
    assert!(text.contains(handle), "{text}");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Sequential awaited calls on each side, timed by `elapsed(start)` from a
/// `start = now()` taken before the batch.
fn sequential<T: Copy>(
    c: &mut Criterion,
    group_name: &str,
    now: fn() -> T,
    elapsed: fn(T) -> Duration,
) {
    let rt = runtime();
    let f = rt.block_on(async { fixture() });
    let mut group = c.benchmark_group(group_name);
    for side in SIDES {
        let client = rt.block_on(connect(&f, side));
        let p = params(&f, side);
        rt.block_on(check(&client, &p, &f.handle));
        group.bench_function(side.label(), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = now();
                    for _ in 0..iters {
                        let r = client.call_tool(p.clone()).await.unwrap();
                        std::hint::black_box(r);
                    }
                    elapsed(start)
                })
            })
        });
        rt.block_on(async { drop(client.cancel().await) });
    }
    group.finish();
}

fn round_trip(c: &mut Criterion) {
    sequential(c, "status_round_trip", Instant::now, |t| t.elapsed());
}

/// CPU time all threads of this process (client, server, runtime workers)
/// have spent on a CPU so far, summed from `/proc/self/task/*/schedstat`
/// (nanoseconds, user + kernel). Unlike wall time it barely moves with the
/// load other processes put on the machine.
fn cpu_time() -> Duration {
    let mut ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let path = task.unwrap().path().join("schedstat");
        // A thread may exit between the listing and the read.
        if let Ok(text) = std::fs::read_to_string(path) {
            ns += text
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Duration::from_nanos(ns)
}

/// The same sequential calls as `status_round_trip`, timed in CPU time of
/// the whole process instead of wall time: the work one call costs client
/// and server together.
fn cpu_per_call(c: &mut Criterion) {
    sequential(c, "status_cpu_per_call", cpu_time, |t| {
        cpu_time().saturating_sub(t)
    });
}

fn concurrent(c: &mut Criterion) {
    let rt = runtime();
    let f = rt.block_on(async { fixture() });
    let mut group = c.benchmark_group(format!("status_throughput_{CALLERS}_callers"));
    // One element per call: criterion reports calls per second.
    group.throughput(Throughput::Elements(1));
    for side in SIDES {
        let client = rt.block_on(connect(&f, side));
        let p = params(&f, side);
        rt.block_on(check(&client, &p, &f.handle));
        group.bench_function(side.label(), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    let mut tasks = tokio::task::JoinSet::new();
                    for i in 0..CALLERS {
                        // `iters` calls in all, split over the callers.
                        let n = iters / CALLERS + u64::from(i < iters % CALLERS);
                        let peer = client.peer().clone();
                        let p = p.clone();
                        tasks.spawn(async move {
                            for _ in 0..n {
                                let r = peer.call_tool(p.clone()).await.unwrap();
                                std::hint::black_box(r);
                            }
                        });
                    }
                    while let Some(r) = tasks.join_next().await {
                        r.unwrap();
                    }
                    start.elapsed()
                })
            })
        });
        rt.block_on(async { drop(client.cancel().await) });
    }
    group.finish();
}

criterion_group!(benches, round_trip, cpu_per_call, concurrent);
criterion_main!(benches);
