//! Concurrency ceilings and detached jobs: 50 simultaneous launches from
//! one caller with a per-caller limit of 2; job status, tail, cancel, and
//! the same answer for a foreign and an unknown handle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use hardened_mcp::jobs::{JobId, JobState, Jobs, StatusSink};
use hardened_mcp::sandbox::{RunRequest, SandboxConfig, SandboxError, Termination};
use support::*;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_launches_with_a_per_caller_limit_of_two() {
    let sb = sandbox_with(SandboxConfig {
        per_caller_runs: 2,
        global_runs: Some(64),
        ..SandboxConfig::default()
    });
    let (_dir, rundir) = run_dir();
    let rundir = Arc::new(rundir);
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (sb, rundir, barrier) = (sb.clone(), Arc::clone(&rundir), Arc::clone(&barrier));
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let r = sb.launch(
                &caller("one"),
                &rundir,
                RunRequest::new("escape").args(["sleep", "1500"]),
                &CancellationToken::new(),
            );
            let max_seen = sb.limiter().in_use_by(&caller("one"));
            match r {
                Ok(run) => (Ok(run.wait().await), max_seen),
                Err(e) => (Err(e), max_seen),
            }
        }));
    }
    let mut ok = 0;
    let mut busy = 0;
    for t in tasks {
        let (r, seen) = t.await.unwrap();
        assert!(seen <= 2, "{seen} runs at once");
        match r {
            Ok(o) => {
                assert!(o.success(), "{o:?}");
                ok += 1;
            }
            Err(e) => {
                assert_eq!(e, SandboxError::CallerBusy);
                assert_eq!(
                    e.to_string(),
                    "too many solver runs for this caller at once: wait for one to end, or cancel one"
                );
                // A tool that passes it on names the run ceiling, not calls.
                let tool = hardened_mcp::ToolError::from(e);
                assert_eq!(tool.to_string(), e.to_string());
                assert_eq!(tool.to_json()["concurrency"], "caller_runs");
                busy += 1;
            }
        }
    }
    assert_eq!((ok, busy), (2, 48));
    assert_eq!(sb.limiter().in_use(), 0, "every permit returned");
    // Another caller is unaffected by the first caller's ceiling.
    let (_d2, rundir2) = run_dir();
    assert!(
        sb.run(
            &caller("two"),
            &rundir2,
            RunRequest::new("escape").args(["exit", "0"]),
            &CancellationToken::new()
        )
        .await
        .unwrap()
        .success()
    );
}

#[derive(Default)]
struct MemorySink(std::sync::Mutex<Vec<Vec<u8>>>);

impl StatusSink for MemorySink {
    fn write_status(&self, json: &[u8]) -> std::io::Result<()> {
        self.0.lock().unwrap().push(json.to_vec());
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detached_jobs_report_status_and_cancel() {
    let sb = sandbox();
    let jobs = Jobs::new(8);
    let alice = caller("alice");
    let (_dir, rundir) = run_dir();
    let sink = Arc::new(MemorySink::default());
    let run = sb
        .launch(
            &alice,
            &rundir,
            RunRequest::new("escape").args(["sleep", "30000"]),
            &CancellationToken::new(),
        )
        .unwrap();
    let id = jobs.start(&alice, run, Some(sink.clone())).unwrap();
    assert!(id.as_str().starts_with("job_"));
    let st = jobs.status(&alice, &id).unwrap();
    assert!(matches!(st.state, JobState::Running { .. }));
    // Foreign and unknown handles get the same answer.
    let foreign = jobs.status(&caller("mallory"), &id).unwrap_err();
    let unknown = jobs
        .status(&alice, &JobId::parse("job_AAAAAAAAAAAAAAAAAAAAAA").unwrap())
        .unwrap_err();
    assert_eq!(foreign, unknown);
    assert_eq!(
        jobs.cancel(&caller("mallory"), &id).unwrap_err(),
        SandboxError::UnknownJob
    );
    assert!(
        jobs.cancel(&alice, &id).unwrap(),
        "a running job is cancelled"
    );
    let t0 = std::time::Instant::now();
    let finished = loop {
        if let JobState::Finished(o) = jobs.status(&alice, &id).unwrap().state {
            break o;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "job did not end after cancel"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(finished.cancelled);
    assert_eq!(finished.termination, Termination::Killed);
    assert!(
        !jobs.cancel(&alice, &id).unwrap(),
        "cancelling an ended job reports that it was not running"
    );
    assert_eq!(sb.limiter().in_use(), 0);
    let written = sink.0.lock().unwrap().clone();
    assert_eq!(written.len(), 2);
    let last: serde_json::Value = serde_json::from_slice(&written[1]).unwrap();
    assert_eq!(last["state"], "finished");
    assert_eq!(last["cancelled"], true);
    jobs.forget(&alice, &id).unwrap();
    assert!(jobs.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_table_refuses_when_full_of_running_jobs() {
    let sb = sandbox_with(SandboxConfig {
        per_caller_runs: 4,
        ..SandboxConfig::default()
    });
    let jobs = Jobs::new(1);
    let a = caller("a");
    let (_dir, rundir) = run_dir();
    let launch = || {
        sb.launch(
            &a,
            &rundir,
            RunRequest::new("escape").args(["sleep", "30000"]),
            &CancellationToken::new(),
        )
        .unwrap()
    };
    let id = jobs.start(&a, launch(), None).unwrap();
    assert_eq!(
        jobs.start(&a, launch(), None).unwrap_err(),
        SandboxError::TooManyJobs
    );
    jobs.forget(&a, &id).unwrap();
    let t0 = std::time::Instant::now();
    while sb.limiter().in_use() > 0 {
        assert!(t0.elapsed() < Duration::from_secs(5), "slots not returned");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
