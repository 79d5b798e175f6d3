//! The heat example through Slurm: `solver-server demo --launcher slurm`
//! submits its run as a batch job whose node helper is the server binary
//! itself (`node` mode), applying the same sandbox; the result is checked
//! against the exact solution. Needs the single-node cluster of
//! `.ci/slurm-up`; without one the test says so and passes, except where
//! `HARDENED_MCP_REQUIRE_SLURM` is set (CI): there it fails.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::{Command, Stdio};
use std::time::Duration;

use hardened_mcp_tests::slurm::cluster;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

const SERVER: &str = env!("CARGO_BIN_EXE_solver-server");
const SOLVER: &str = env!("CARGO_BIN_EXE_heat1d");

#[test]
fn a_heat_run_through_slurm_matches_the_exact_solution() {
    if !cluster() {
        return;
    }
    // On disk, not in a tmpfs: the launcher refuses a run root nodes cannot share.
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = Command::new(SERVER)
        .args(["demo", "--launcher", "slurm", "--solver", SOLVER])
        .arg("--run-root")
        .arg(tmp.path().join("runs"))
        .arg("--plot")
        .arg(tmp.path().join("plot.png"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("state: \"succeeded\""), "{stdout}");
    let l2: f64 = stdout
        .split("L2 error ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN);
    assert!(l2 < 1e-6, "L2 error {l2}: {stdout}");
    assert!(
        std::fs::metadata(tmp.path().join("plot.png"))
            .unwrap()
            .len()
            > 0
    );
}

/// A `serve --launcher slurm` process on the run root `root`, as an MCP
/// client session over its stdio.
async fn server(root: &std::path::Path) -> RunningService<RoleClient, ()> {
    let mut cmd = tokio::process::Command::new(SERVER);
    cmd.args(["serve", "--launcher", "slurm", "--solver", SOLVER])
        .arg("--run-root")
        .arg(root)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ().serve(transport).await.unwrap()
}

async fn ok(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> Value {
    let Value::Object(args) = args else {
        panic!("object")
    };
    let r = tokio::time::timeout(
        Duration::from_secs(90),
        client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args)),
    )
    .await
    .expect("an answer")
    .unwrap();
    assert_ne!(r.is_error, Some(true), "{tool}: {r:?}");
    r.structured_content.unwrap()["data"].clone()
}

fn slurm(args: &[&str]) -> String {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The server is restarted while its run's job waits in the queue (a
/// blocker job holds every CPU of the node): the new server finds the job
/// through the run directory, follows it to the end, and the result is
/// right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_finds_its_queued_job() {
    if !cluster() {
        return;
    }
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = tmp.path().join("runs");
    let cpus = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .to_string();
    let blocker = slurm(&[
        "sbatch",
        "--parsable",
        "--job-name=blocker",
        "--output=/dev/null",
        &format!("--cpus-per-task={cpus}"),
        "--wrap=sleep 120",
    ]);
    // Until the blocker runs, a new job could still start first.
    for _ in 0..100 {
        if slurm(&["squeue", "--noheader", "--format=%T", "--jobs", &blocker]) == "RUNNING" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = server(&root).await;
    let started = ok(
        &first,
        "heat_start",
        json!({"cells": 64, "steps": 2000, "length": 1.0, "diffusivity": 1.0, "dt": 9.765625e-5}),
    )
    .await;
    let handle = started["run_handle"].as_str().unwrap().to_owned();
    // The job record: `<hmac>\n<job id> <nonce>`.
    let record = std::fs::read_to_string(root.join(&handle).join("slurm-job")).unwrap();
    let job = record
        .lines()
        .nth(1)
        .and_then(|l| l.split(' ').next())
        .unwrap()
        .to_owned();
    assert_eq!(
        slurm(&["squeue", "--noheader", "--format=%T", "--jobs", &job]),
        "PENDING"
    );
    // The first server goes away; its queued job stays.
    first.cancel().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        slurm(&["squeue", "--noheader", "--format=%T", "--jobs", &job]),
        "PENDING"
    );

    let second = server(&root).await;
    let status = ok(&second, "heat_status", json!({"run": handle})).await;
    assert_eq!(status["state"], "queued", "{status}");
    slurm(&["scancel", &blocker]);
    let waited = ok(&second, "heat_wait", json!({"run": handle, "seconds": 60})).await;
    assert_eq!(waited["state"], "succeeded", "{waited}");
    let result = ok(
        &second,
        "heat_result",
        json!({"run": handle, "max_points": 65}),
    )
    .await;
    assert!(result["l2_error"].as_f64().unwrap() < 1e-3, "{result}");
    second.cancel().await.unwrap();
}
