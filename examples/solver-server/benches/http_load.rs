//! Latency of one authenticated `heat_status` call over HTTP (a fresh
//! connection per call, bearer token, session) while the endpoint is idle,
//! and while 300 unfinished requests from 20 addresses and bursts of 40
//! wrong-token requests every 100 ms hit it (`hardened_mcp_tests::http_load`),
//! measured in the same run. Prints the ratio under load / idle.
//!
//! `cargo bench --profile release -p solver-server --bench http_load -- --warm-up-time 1 --measurement-time 5`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use hardened_mcp_tests::http_load::{self, LoadShape};

#[path = "../tests/support/http_fixture.rs"]
mod http_fixture;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn status_under_load(c: &mut Criterion) {
    let rt = runtime();
    let mut fixture = rt.block_on(http_fixture::start());
    let mut means = Vec::new();
    let mut group = c.benchmark_group("http_status");
    for loaded in [false, true] {
        let addr = fixture.addr();
        let load = loaded.then(|| rt.block_on(http_load::start(addr, LoadShape::default())));
        if loaded {
            // Let the unfinished requests fill the pool of slow connections.
            rt.block_on(async { tokio::time::sleep(Duration::from_millis(500)).await });
        }
        let mut total = (Duration::ZERO, 0u64);
        group.bench_function(if loaded { "under_load" } else { "idle" }, |b| {
            b.iter_custom(|iters| {
                let sum = rt.block_on(async {
                    let mut sum = Duration::ZERO;
                    for i in 0..iters {
                        sum += fixture.status(i64::try_from(i).unwrap_or(0)).await;
                    }
                    sum
                });
                total.0 += sum;
                total.1 += iters;
                sum
            })
        });
        if let Some(load) = load {
            let report = rt.block_on(load.stop());
            eprintln!("load: {report:?}");
        }
        let (sum, n) = total;
        means.push(sum.as_secs_f64() / n.max(1) as f64);
    }
    group.finish();
    eprintln!(
        "http_status: idle {:.3} ms, under load {:.3} ms, ratio {:.2}",
        means[0] * 1e3,
        means[1] * 1e3,
        means[1] / means[0]
    );
    rt.block_on(fixture.server.shutdown()).unwrap();
}

criterion_group!(benches, status_under_load);
criterion_main!(benches);
