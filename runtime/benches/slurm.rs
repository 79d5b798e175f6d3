//! What the cluster path costs, against a local run measured in the same
//! run: a sandboxed `/usr/bin/true` submitted through Slurm (sbatch, the
//! node helper applying the sandbox, polling until the job ends) against
//! the same run launched locally; and one status query (`scontrol show
//! job`, what the launcher asks each poll) against a local job-table
//! status read. Needs the cluster of `.ci/slurm-up`; without one it prints
//! so and measures nothing.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use hardened_mcp::identity::CallerId;
use hardened_mcp::jobs::{Jobs, Launcher, SlurmConfig};
use hardened_mcp::runs::RunRoot;
use hardened_mcp::sandbox::{RunRequest, Sandbox, SandboxConfig, SolverRegistry};
use tokio_util::sync::CancellationToken;

const TRUE: &str = "/usr/bin/true";
const NODE: &str = env!("CARGO_BIN_EXE_hardened-mcp-node");

fn cluster() -> bool {
    std::process::Command::new("sinfo")
        .args(["--noheader", "--format=%T"])
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("idle"))
}

fn sandbox() -> Sandbox {
    let registry = SolverRegistry::builder()
        .solver("true", TRUE)
        .build()
        .unwrap();
    Sandbox::new(
        registry,
        SandboxConfig {
            per_caller_runs: 64,
            ..SandboxConfig::default()
        },
    )
    .unwrap()
}

fn slurm_vs_local(c: &mut Criterion) {
    if !cluster() {
        eprintln!("no idle Slurm node: nothing measured");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // On disk beside the build: the node reads the run root by its path.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let who = CallerId::local();
    let root = RunRoot::open(dir.path().join("runs")).unwrap();
    let (_handle, run_dir) = root.create(&who).unwrap();
    let token = CancellationToken::new();
    let local = Launcher::local(sandbox());
    let mut config = SlurmConfig::new(NODE);
    config.poll_interval = Duration::from_millis(20);
    let slurm = Launcher::slurm(sandbox(), config).unwrap();

    let mut g = c.benchmark_group("run_true");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for (name, sb) in [("local", &local), ("slurm", &slurm)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let o = sb
                        .run(&who, &run_dir, RunRequest::new("true"), &token)
                        .await
                        .unwrap();
                    assert!(o.success(), "{o:?}");
                })
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("status_query");
    g.sample_size(30).measurement_time(Duration::from_secs(5));
    let job = rt.block_on(async {
        let r = slurm
            .launch(&who, &run_dir, RunRequest::new("true"), &token)
            .unwrap();
        let id = r.slurm_job().unwrap();
        r.wait().await;
        id
    });
    g.bench_function("slurm_scontrol_show_job", |b| {
        b.iter(|| {
            let out = std::process::Command::new("/usr/bin/scontrol")
                .args(["show", "job", "--oneliner", &job.to_string()])
                .output()
                .unwrap();
            assert!(out.status.success());
        })
    });
    let jobs = Jobs::new(16);
    let id = rt.block_on(async {
        let r = local
            .launch(&who, &run_dir, RunRequest::new("true"), &token)
            .unwrap();
        jobs.start(&who, r, None).unwrap()
    });
    g.bench_function("local_job_table_status", |b| {
        b.iter(|| std::hint::black_box(jobs.status(&who, &id).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, slurm_vs_local);
criterion_main!(benches);
