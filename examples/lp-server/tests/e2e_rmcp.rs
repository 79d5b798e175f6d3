//! The chapter's server driven by rmcp's client over stdio, with the real
//! `glpsol` in the sandbox: a program solved (the typed solution read back
//! from GLPK's text file), one without a solution, one refused for its
//! shape before anything runs, and a solve as a 2026-era MCP task.
//! Without GLPK (`/usr/bin/glpsol`, Debian's `glpk-utils`) the tests skip,
//! saying so, unless `HARDENED_MCP_REQUIRE_GLPSOL` is set (CI): there they
//! fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hardened_mcp_tests::tasks::{TaskClient, connect_stdio};
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

const SERVER: &str = env!("CARGO_BIN_EXE_lp-server");

async fn connect(root: &std::path::Path, tasks: bool) -> RunningService<RoleClient, TaskClient> {
    connect_stdio(SERVER, &["--run-root".as_ref(), root.as_os_str()], tasks).await
}

fn params(args: Value) -> CallToolRequestParams {
    let Value::Object(args) = args else { panic!() };
    CallToolRequestParams::new("lp_solve").with_arguments(args)
}

/// Maximize 3 x1 + 2 x2 with x1 + x2 ≤ 4, 2 x1 + x2 ≤ 6, x2 ≤ 3: the
/// optimum is x = (2, 2), worth 10.
fn program() -> Value {
    json!({
        "sense": "max",
        "objective": [3.0, 2.0],
        "rows": [[1.0, 1.0], [2.0, 1.0]],
        "relations": ["at_most", "at_most"],
        "bounds": [4.0, 6.0],
        "upper": [1e9, 3.0]
    })
}

/// Whether glpsol is installed where the server looks by default.
fn glpsol_present() -> bool {
    if std::path::Path::new("/usr/bin/glpsol").exists() {
        return true;
    }
    assert!(
        std::env::var_os("HARDENED_MCP_REQUIRE_GLPSOL").is_none(),
        "glpsol is required here (HARDENED_MCP_REQUIRE_GLPSOL is set) but not installed"
    );
    eprintln!("glpsol is not installed: skipped");
    false
}

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .expect("test within its time budget");
}

#[tokio::test]
async fn glpsol_solves_a_program_in_the_sandbox() {
    if !glpsol_present() {
        return;
    }
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let c = connect(&tmp.path().join("runs"), false).await;
        let r = c.call_tool(params(program())).await.unwrap();
        assert_ne!(r.is_error, Some(true), "{r:?}");
        let data = r.structured_content.unwrap()["data"].clone();
        assert_eq!(data["report"]["state"], "succeeded", "{data}");
        let solution = &data["result"];
        assert_eq!(solution["optimal"], true, "{data}");
        assert!(
            (solution["objective"].as_f64().unwrap() - 10.0).abs() < 1e-9,
            "{data}"
        );
        let x: Vec<f64> = serde_json::from_value(solution["x"].clone()).unwrap();
        assert!(
            x.len() == 2 && (x[0] - 2.0).abs() < 1e-9 && (x[1] - 2.0).abs() < 1e-9,
            "{x:?}"
        );

        // No x ≥ 0 has x1 ≥ 4 and x1 ≤ 1: solved, and not optimal.
        let mut infeasible = program();
        infeasible["relations"] = json!(["at_least", "at_most"]);
        infeasible["rows"] = json!([[1.0, 0.0], [1.0, 0.0]]);
        infeasible["bounds"] = json!([4.0, 1.0]);
        let r = c.call_tool(params(infeasible)).await.unwrap();
        let data = r.structured_content.unwrap()["data"].clone();
        assert_eq!(data["report"]["state"], "succeeded", "{data}");
        assert_eq!(data["result"]["optimal"], false, "{data}");

        // A row shorter than the objective: refused before any run, by
        // name and rule, without the values.
        let mut ragged = program();
        ragged["rows"] = json!([[1.0, 1.0], [2.5]]);
        let r = c.call_tool(params(ragged)).await.unwrap();
        assert_eq!(r.is_error, Some(true));
        let text = format!("{:?}", r.content);
        assert!(
            text.contains("every row of `rows` must have as many items as `objective`"),
            "{text}"
        );
        assert!(!text.contains("2.5"), "{text}");
        let listed = c
            .call_tool(CallToolRequestParams::new("lp_list"))
            .await
            .unwrap();
        let runs = listed.structured_content.unwrap()["data"]["runs"].clone();
        assert_eq!(
            runs.as_array().map(Vec::len),
            Some(2),
            "the refused program made no run: {runs}"
        );
        c.cancel().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_solve_is_a_task_for_a_client_that_takes_tasks() {
    if !glpsol_present() {
        return;
    }
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let c = connect(&tmp.path().join("runs"), true).await;
        let created = c.call_tool_once(params(program())).await.unwrap();
        let CallToolResponse::Task(created) = created else {
            panic!("not a task: {created:?}")
        };
        let completed = hardened_mcp_tests::tasks::completed(
            &c,
            &created.task.task_id,
            Duration::from_millis(100),
        )
        .await;
        let data = &completed["structuredContent"]["data"];
        assert_eq!(data["report"]["state"], "succeeded", "{completed:?}");
        assert_eq!(data["result"]["optimal"], true, "{completed:?}");
        c.cancel().await.unwrap();
    })
    .await;
}
