//! The chapter's server driven by rmcp's client over stdio: the plain
//! tools, a job as a 2026-era MCP task (the tasks extension), the task
//! answered again by a restarted server, and what the interpreter sees.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hardened_mcp_tests::tasks::{TaskClient as Client, connect_stdio};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, TaskPayload,
    TaskStatus,
};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

const SERVER: &str = env!("CARGO_BIN_EXE_poisson-server");

async fn connect(root: &std::path::Path, tasks: bool) -> RunningService<RoleClient, Client> {
    connect_stdio(SERVER, &["--run-root".as_ref(), root.as_os_str()], tasks).await
}

fn params(tool: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(args) = args else { panic!() };
    CallToolRequestParams::new(tool.to_owned()).with_arguments(args)
}

async fn ok(c: &RunningService<RoleClient, Client>, tool: &str, args: Value) -> Value {
    let r = c.call_tool(params(tool, args)).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{tool}: {r:?}");
    r.structured_content.unwrap()["data"].clone()
}

/// The advertised output schema of `tool` accepts `structured`.
async fn conforms(c: &RunningService<RoleClient, Client>, tool: &str, structured: &Value) {
    let tools = c.list_all_tools().await.unwrap();
    let t = tools.iter().find(|t| t.name == tool).unwrap();
    let schema = Value::Object((**t.output_schema.as_ref().unwrap()).clone());
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(structured).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}: {structured}");
}

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .expect("test within its time budget");
}

#[tokio::test]
async fn the_plain_tools_run_a_script_in_the_sandbox() {
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let c = connect(&tmp.path().join("runs"), false).await;
        let started = ok(
            &c,
            "poisson_start",
            json!({"n": 16, "tolerance": 1e-10, "max_iterations": 5000}),
        )
        .await;
        let run = started["run_handle"].as_str().unwrap().to_owned();
        let done = ok(&c, "poisson_wait", json!({"run": run, "seconds": 60})).await;
        assert_eq!(done["state"], "succeeded", "{done}");
        let result = ok(&c, "poisson_result", json!({"run": run})).await;
        assert_eq!(result["result"]["converged"], true, "{result}");
        assert!(
            result["result"]["max_error"].as_f64().unwrap() < 1e-2,
            "{result}"
        );
        // argv[0] is the solver's place in the view; sys.executable is the
        // real interpreter the kernel ran for the `#!` line.
        let log = ok(
            &c,
            "poisson_log",
            json!({"run": run, "from_line": 0, "lines": 1}),
        )
        .await;
        let first = log["log"]["data"][0].as_str().unwrap().to_owned();
        assert!(
            first.starts_with("argv0=/sandbox/bin/poisson executable=/usr/bin/python3"),
            "{first}"
        );
        // A solve without tasks waits and answers the result itself.
        let solved = ok(
            &c,
            "poisson_solve",
            json!({"n": 8, "tolerance": 1e-8, "max_iterations": 2000}),
        )
        .await;
        assert_eq!(solved["report"]["state"], "succeeded", "{solved}");
        assert!(solved["result"]["iterations"].as_u64().unwrap() > 0);
        // A long run is cancelled: its whole tree is killed.
        let long = ok(
            &c,
            "poisson_start",
            json!({"n": 2000, "tolerance": 1e-14, "max_iterations": 100000}),
        )
        .await;
        let long = long["run_handle"].as_str().unwrap().to_owned();
        assert_eq!(
            ok(&c, "poisson_cancel", json!({"run": long})).await["outcome"],
            "cancelled"
        );
        let st = ok(&c, "poisson_wait", json!({"run": long, "seconds": 30})).await;
        assert_eq!(st["state"], "cancelled", "{st}");
        let refused = c
            .call_tool(params("poisson_result", json!({"run": long})))
            .await
            .unwrap();
        assert_eq!(refused.is_error, Some(true));
        c.cancel().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_solve_is_a_task_for_a_client_that_takes_tasks_and_outlives_its_server() {
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("runs");
        let c = connect(&root, true).await;
        let info = c.peer_info().unwrap();
        assert!(
            info.capabilities.supports_tasks(),
            "the server declares the tasks extension"
        );
        let created = c
            .call_tool_once(params(
                "poisson_solve",
                json!({"n": 16, "tolerance": 1e-10, "max_iterations": 5000}),
            ))
            .await
            .unwrap();
        let CallToolResponse::Task(created) = created else {
            panic!("not a task: {created:?}")
        };
        let id = created.task.task_id.clone();
        assert_eq!(created.task.status, TaskStatus::Working);
        let completed =
            hardened_mcp_tests::tasks::completed(&c, &id, Duration::from_millis(100)).await;
        let structured = completed["structuredContent"].clone();
        assert_eq!(
            structured["data"]["report"]["state"], "succeeded",
            "{structured}"
        );
        assert_eq!(structured["data"]["result"]["converged"], true);
        conforms(&c, "poisson_solve", &structured).await;
        // An id that is no task of this caller, or none at all: one answer.
        let unknown = c
            .get_task(GetTaskParams::new("poisson_AAAAAAAAAAAAAAAAAAAAAAAAAA"))
            .await
            .unwrap_err();
        let plain_run = ok(
            &c,
            "poisson_start",
            json!({"n": 8, "tolerance": 1e-8, "max_iterations": 10}),
        )
        .await;
        let not_a_task = c
            .get_task(GetTaskParams::new(
                plain_run["run_handle"].as_str().unwrap(),
            ))
            .await
            .unwrap_err();
        assert_eq!(unknown.to_string(), not_a_task.to_string());
        // A long task is cancelled through tasks/cancel.
        let long = c
            .call_tool_once(params(
                "poisson_solve",
                json!({"n": 2000, "tolerance": 1e-14, "max_iterations": 100000}),
            ))
            .await
            .unwrap();
        let CallToolResponse::Task(long) = long else {
            panic!()
        };
        c.cancel_task(CancelTaskParams::new(long.task.task_id.clone()))
            .await
            .unwrap();
        let t0 = std::time::Instant::now();
        while c
            .get_task(GetTaskParams::new(long.task.task_id.clone()))
            .await
            .unwrap()
            .task
            .status()
            != TaskStatus::Cancelled
        {
            assert!(t0.elapsed() < Duration::from_secs(20));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        c.cancel().await.unwrap();

        // A new server process on the same run root answers the same task.
        let again = connect(&root, true).await;
        let t = again.get_task(GetTaskParams::new(id)).await.unwrap().task;
        let TaskPayload::Completed { result } = t.payload else {
            panic!("{:?}", t.payload)
        };
        assert_eq!(result["structuredContent"], structured);
        again.cancel().await.unwrap();
    })
    .await;
}
