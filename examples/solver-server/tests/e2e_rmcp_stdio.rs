//! End to end over stdio with the rmcp client: spawns the built
//! `solver-server` binary, drives every tool with good and hostile calls,
//! validates every good result against the tool's advertised output schema,
//! and checks every refusal is a structured tool error that echoes nothing
//! from the input. A second part writes raw lines on the pipe to check the
//! transport answers malformed JSON and keeps serving.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ProtocolVersion, ReadResourceRequestParams,
    ResourceContents, Tool,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientLifecycleMode, ClientServiceExt as _, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::time::timeout;

const SERVER: &str = env!("CARGO_BIN_EXE_solver-server");
const SOLVER: &str = env!("CARGO_BIN_EXE_heat1d");

/// Upper bound of every test, against hangs only.
const TEST_BUDGET: Duration = Duration::from_secs(90);

/// Marker placed in hostile values and key names; no response may contain it.
const CANARY: &str = "CANARYq7Zx";

const TOOLS: [&str; 12] = [
    "heat_cancel",
    "heat_delete",
    "heat_list",
    "heat_log",
    "heat_plot",
    "heat_result",
    "heat_solve",
    "heat_start",
    "heat_status",
    "heat_sweep",
    "heat_sweep_plot",
    "heat_wait",
];

/// How the client opens its session.
#[derive(Debug, Clone, Copy)]
enum Era {
    /// The `initialize` handshake (up to 2025-11-25).
    Handshake,
    /// 2026-07-28: `server/discover`, then per-request metadata.
    Discover,
}

/// The client of the tests: its person approves every question (the
/// server asks before a run above 1e8 cell-steps).
#[derive(Debug, Clone, Copy)]
struct Approver;

impl rmcp::ClientHandler for Approver {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut config = rmcp::model::ClientConfig::default();
        config.capabilities.elicitation = Some(rmcp::model::ElicitationCapability::default());
        config
    }

    async fn create_elicitation(
        &self,
        _: rmcp::model::ElicitRequestParams,
        _: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let mut yes = rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept);
        yes.content = Some(json!({"approve": true}));
        Ok(yes)
    }
}

/// A spawned server with an rmcp client session on its stdio.
struct Session {
    client: RunningService<RoleClient, Approver>,
    tools: HashMap<String, Tool>,
    _root: Option<tempfile::TempDir>,
}

fn server_command(root: &std::path::Path) -> Command {
    let mut cmd = Command::new(SERVER);
    cmd.arg("serve")
        .arg("--run-root")
        .arg(root.join("runs"))
        .arg("--solver")
        .arg(SOLVER)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    cmd
}

impl Session {
    async fn start() -> Self {
        Self::start_in_era(Era::Handshake).await
    }

    async fn start_in_era(era: Era) -> Self {
        let root = tempfile::tempdir().unwrap();
        let mut s = Self::start_with_era(root.path(), &[], era).await;
        s._root = Some(root);
        s
    }

    /// A server on the run root under `root` (kept by the caller).
    async fn start_in(root: &std::path::Path) -> Self {
        Self::start_with(root, &[]).await
    }

    /// A server on the run root under `root`, with extra `serve` options.
    async fn start_with(root: &std::path::Path, options: &[&str]) -> Self {
        Self::start_with_era(root, options, Era::Handshake).await
    }

    async fn start_with_era(root: &std::path::Path, options: &[&str], era: Era) -> Self {
        let mut cmd = server_command(root);
        cmd.args(options);
        let (transport, _stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let client = match era {
            Era::Handshake => Approver.serve(transport).await.unwrap(),
            Era::Discover => {
                let mode = ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                };
                let client = Approver
                    .serve_with_lifecycle(transport, mode)
                    .await
                    .unwrap();
                let info = client.peer_info().expect("discovered");
                assert!(
                    info.capabilities.tools.is_some(),
                    "2026 era: tools capability"
                );
                client
            }
        };
        let tools = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| (t.name.to_string(), t))
            .collect();
        Self {
            client,
            tools,
            _root: None,
        }
    }

    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        self.client.call_tool(params).await.unwrap()
    }

    /// Calls `tool`, asserts success, validates the structured result against
    /// the advertised output schema, and returns its `data`.
    async fn ok(&self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args).await;
        assert_ne!(r.is_error, Some(true), "{tool} failed: {r:?}");
        let structured = r.structured_content.clone().expect("structured content");
        self.conforms(tool, &structured);
        structured["data"].clone()
    }

    /// Calls `tool`, asserts a structured tool error, returns `(kind, message)`.
    /// Also validates the error result against the advertised output schema:
    /// error results are one of the two shapes it admits.
    async fn err(&self, tool: &str, args: Value) -> (String, String) {
        let r = self.call(tool, args).await;
        let e = refusal(tool, &r);
        self.conforms(tool, r.structured_content.as_ref().unwrap());
        e
    }

    fn conforms(&self, tool: &str, structured: &Value) {
        let schema = Value::Object(
            self.tools[tool]
                .output_schema
                .as_deref()
                .cloned()
                .expect("output schema"),
        );
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(structured)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{tool}: result does not match its output schema: {errors:?}\n{structured}"
        );
    }

    async fn shutdown(self) {
        let _ = self.client.cancel().await;
    }
}

/// Asserts `r` is a tool error with a structured `error` object whose text
/// matches the text content and holds no canary; returns `(kind, message)`.
fn refusal(tool: &str, r: &CallToolResult) -> (String, String) {
    assert_eq!(r.is_error, Some(true), "{tool} accepted: {r:?}");
    let wire = serde_json::to_string(r).unwrap();
    assert!(!wire.contains(CANARY), "{tool} echoed the canary: {wire}");
    let e = &r.structured_content.as_ref().expect("structured error")["error"];
    let kind = e["kind"].as_str().expect("error.kind").to_owned();
    let message = e["message"].as_str().expect("error.message").to_owned();
    let text = r.content.first().and_then(|c| c.as_text()).expect("text");
    assert_eq!(
        text.text, message,
        "{tool}: text and structured error differ"
    );
    (kind, message)
}

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    timeout(TEST_BUDGET, f)
        .await
        .expect("test exceeded its time budget");
}

/// 2000 cells x 1e6 steps: the cost ceiling, seconds of work.
fn long_run() -> Value {
    let dx: f64 = 1.0 / 2000.0;
    json!({"cells": 2000, "steps": 1_000_000, "length": 1.0,
           "diffusivity": 1.0, "dt": 0.4 * dx * dx})
}

/// A small stable run: 64 cells, Courant number 0.4, sine mode 1, Dirichlet.
fn small_run(steps: u64) -> Value {
    let dx = 1.0 / 64.0;
    json!({"cells": 64, "steps": steps, "length": 1.0, "diffusivity": 1.0, "dt": 0.4 * dx * dx})
}

/// A run handle that is well formed but names no run.
const UNKNOWN_HANDLE: &str = "heat_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

#[tokio::test]
async fn tools_are_listed_with_strict_schemas() {
    bounded(async {
        let s = Session::start().await;
        let mut names: Vec<&str> = s.tools.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, TOOLS);
        let required: HashMap<&str, &[&str]> = HashMap::from([
            (
                "heat_start",
                &["cells", "steps", "length", "diffusivity", "dt"][..],
            ),
            (
                "heat_solve",
                &["cells", "steps", "length", "diffusivity", "dt"][..],
            ),
            (
                "heat_sweep",
                &[
                    "cells",
                    "steps",
                    "length",
                    "dt",
                    "diffusivity_start",
                    "diffusivity_stop",
                    "points",
                ][..],
            ),
            ("heat_status", &["run"][..]),
            ("heat_wait", &["run"][..]),
            ("heat_log", &["run"][..]),
            ("heat_result", &["run"][..]),
            ("heat_plot", &["run"][..]),
            ("heat_sweep_plot", &["run"][..]),
            ("heat_cancel", &["run"][..]),
            ("heat_delete", &["run"][..]),
            ("heat_list", &[][..]),
        ]);
        for (name, tool) in &s.tools {
            let input = Value::Object((*tool.input_schema).clone());
            assert_eq!(input["type"], "object", "{name}");
            assert_eq!(input["additionalProperties"], false, "{name}");
            let mut got: Vec<&str> = input["required"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            got.sort_unstable();
            let mut want = required[name.as_str()].to_vec();
            want.sort_unstable();
            assert_eq!(got, want, "{name}: required");
            for (key, prop) in input["properties"].as_object().into_iter().flatten() {
                match prop["type"].as_str() {
                    Some("integer" | "number") => assert!(
                        (prop.get("minimum").is_some() || prop.get("exclusiveMinimum").is_some())
                            && prop.get("maximum").is_some(),
                        "{name}.{key} is unbounded: {prop}"
                    ),
                    Some("string") => assert!(
                        prop.get("enum").is_some() || prop.get("maxLength").is_some(),
                        "{name}.{key} is an unbounded string: {prop}"
                    ),
                    other => panic!("{name}.{key}: unexpected type {other:?}"),
                }
            }
            jsonschema::validator_for(&input).expect("input schema compiles");
            let output = Value::Object(
                tool.output_schema
                    .as_deref()
                    .cloned()
                    .unwrap_or_else(|| panic!("{name} has no output schema")),
            );
            assert_eq!(output["type"], "object", "{name}");
            jsonschema::validator_for(&output).expect("output schema compiles");
        }
        let start = Value::Object((*s.tools["heat_start"].input_schema).clone());
        assert_eq!(start["properties"]["cells"]["minimum"], 8);
        assert_eq!(start["properties"]["cells"]["maximum"], 200_000);
        assert_eq!(start["properties"]["dt"]["exclusiveMinimum"], 0.0);
        assert_eq!(start["x-cost-ceiling"]["max"], 2e9);
        s.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_run_goes_through_every_tool() {
    run_through_every_tool(Era::Handshake).await;
}

#[tokio::test]
async fn a_run_goes_through_every_tool_in_the_2026_era() {
    run_through_every_tool(Era::Discover).await;
}

async fn run_through_every_tool(era: Era) {
    bounded(async {
        let s = Session::start_in_era(era).await;
        let steps = 2000;
        let started = s.ok("heat_start", small_run(steps)).await;
        let handle = started["run_handle"].as_str().unwrap().to_owned();
        assert!((started["courant"].as_f64().unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(started["cost"], 64.0 * steps as f64);

        let waited = s
            .ok("heat_wait", json!({"run": handle, "seconds": 30}))
            .await;
        assert_eq!(waited["state"], "succeeded", "{waited}");
        let status = s.ok("heat_status", json!({"run": handle})).await;
        assert_eq!(status["state"], "succeeded");
        assert_eq!(status["exit_code"], 0);
        assert_eq!(status["run_handle"], handle.as_str());

        let result = s
            .ok("heat_result", json!({"run": handle, "max_points": 65}))
            .await;
        assert_eq!(result["cells"], 64);
        assert_eq!(result["steps"], steps);
        assert_eq!(result["total_points"], 65);
        assert_eq!(result["decimated"], false);
        let t = result["t_final"].as_f64().unwrap();
        let profile = result["profile"].as_array().unwrap();
        assert_eq!(profile.len(), 65);
        // Our own check against the exact solution e^{-π²t}·sin(πx).
        let pi = std::f64::consts::PI;
        let worst = profile
            .iter()
            .map(|p| {
                let (x, u) = (p["x"].as_f64().unwrap(), p["u"].as_f64().unwrap());
                (u - (-pi * pi * t).exp() * (pi * x).sin()).abs()
            })
            .fold(0.0, f64::max);
        assert!(worst < 1e-3, "max error {worst}");
        let reported = result["max_error"].as_f64().unwrap();
        assert!(
            reported < 1e-3 && (reported - worst).abs() < 1e-9,
            "{reported} vs {worst}"
        );
        assert!(result["l2_error"].as_f64().unwrap() < 1e-3);
        // The whole result is a resource the result links to: every node,
        // read by its owner.
        let linked = s
            .call("heat_result", json!({"run": handle, "max_points": 5}))
            .await;
        let link = linked
            .content
            .iter()
            .find_map(|c| c.as_resource_link().cloned())
            .expect("a resource link to the whole result");
        assert_eq!(link.uri, format!("heat://runs/{handle}/result.json"));
        let templates = s.client.list_all_resource_templates().await.unwrap();
        assert!(
            templates
                .iter()
                .any(|t| t.uri_template == "heat://runs/{run_handle}/result.json"),
            "{templates:?}"
        );
        let read = s
            .client
            .read_resource(ReadResourceRequestParams::new(link.uri.clone()))
            .await
            .unwrap();
        let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
            panic!("text contents: {read:?}")
        };
        let whole: Value = serde_json::from_str(text).unwrap();
        assert_eq!(whole["u"].as_array().map(Vec::len), Some(65), "{whole}");
        let decimated = s
            .ok("heat_result", json!({"run": handle, "max_points": 5}))
            .await;
        assert_eq!(decimated["decimated"], true);
        assert!(decimated["profile"].as_array().unwrap().len() <= 5);

        for stream in ["stdout", "stderr"] {
            let log = s
                .ok(
                    "heat_log",
                    json!({"run": handle, "stream": stream, "lines": 5}),
                )
                .await;
            let notice = log["log"]["notice"].as_str().unwrap_or_default();
            assert!(notice.contains("untrusted"), "{log}");
            assert!(log["log"]["data"].is_array(), "{log}");
        }

        let plot = s.call("heat_plot", json!({"run": handle})).await;
        assert_ne!(plot.is_error, Some(true));
        let b64 = plot
            .content
            .iter()
            .find_map(|c| c.as_image())
            .expect("image content");
        assert_eq!(b64.mime_type, "image/png");
        let png = base64::engine::general_purpose::STANDARD
            .decode(&b64.data)
            .unwrap();
        assert_plot(&png);
        let info = s.ok("heat_plot", json!({"run": handle})).await;
        assert_eq!(info["bytes"], png.len());
        assert_eq!(
            (info["width"].as_u64(), info["height"].as_u64()),
            (Some(800), Some(500))
        );
        // A single run is not a sweep.
        let (kind, text) = s.err("heat_sweep_plot", json!({"run": handle})).await;
        assert_eq!(
            (kind.as_str(), text.as_str()),
            ("rejected", "the run is not part of a sweep")
        );

        let list = s.ok("heat_list", json!({})).await;
        assert!(
            list["runs"]
                .as_array()
                .unwrap()
                .contains(&json!({"run_handle": handle, "state": "succeeded"})),
            "{list}"
        );

        let done = s.ok("heat_cancel", json!({"run": handle})).await;
        assert_eq!(done["outcome"], "not running");
        let deleted = s.ok("heat_delete", json!({"run": handle})).await;
        assert_eq!(deleted["outcome"], "deleted");
        let gone = s.err("heat_status", json!({"run": handle})).await;
        let never = s.err("heat_status", json!({"run": UNKNOWN_HANDLE})).await;
        assert_eq!(gone, never, "a deleted run answers like any unknown one");
        // Its resource is gone too, with the one unknown-resource answer.
        let unknown = |uri: String| async {
            s.client
                .read_resource(ReadResourceRequestParams::new(uri))
                .await
                .unwrap_err()
                .to_string()
        };
        let deleted_read = unknown(link.uri.clone()).await;
        let never_read = unknown(format!("heat://runs/{UNKNOWN_HANDLE}/result.json")).await;
        assert_eq!(deleted_read, never_read);
        let list = s.ok("heat_list", json!({})).await;
        assert!(
            !list["runs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["run_handle"] == json!(handle))
        );
        s.shutdown().await;
    })
    .await;
}

/// A finished run's status outlives the server process that ran it: a new
/// server on the same run root reads it from the run directory.
#[tokio::test]
async fn status_survives_a_server_restart() {
    bounded(async {
        let root = tempfile::tempdir().unwrap();
        let first = Session::start_in(root.path()).await;
        let started = first.ok("heat_start", small_run(500)).await;
        let run = started["run_handle"].as_str().unwrap().to_owned();
        let done = first
            .ok("heat_wait", json!({"run": run, "seconds": 30}))
            .await;
        assert_eq!(done["state"], "succeeded", "{done}");
        first.shutdown().await;

        let second = Session::start_in(root.path()).await;
        let st = second.ok("heat_status", json!({"run": run})).await;
        assert_eq!(st["state"], "succeeded", "{st}");
        assert_eq!(st["exit_code"], 0, "{st}");
        assert!(st["wall_seconds"].as_f64().is_some(), "{st}");
        let result = second.ok("heat_result", json!({"run": run})).await;
        assert_eq!(result["steps"], 500);
        second.shutdown().await;
    })
    .await;
}

/// A run still running when its server goes away is stopped with it; the
/// next server on the run root says so (`interrupted`, with the fixed
/// note), never `unknown`, and keeps saying so.
#[tokio::test]
async fn a_run_running_when_its_server_stops_reports_interrupted() {
    bounded(async {
        let root = tempfile::tempdir().unwrap();
        let first = Session::start_in(root.path()).await;
        let started = first.ok("heat_start", long_run()).await;
        let run = started["run_handle"].as_str().unwrap().to_owned();
        let st = first.ok("heat_status", json!({"run": run})).await;
        assert_eq!(st["state"], "running", "{st}");
        first.shutdown().await;

        let second = Session::start_in(root.path()).await;
        for _ in 0..2 {
            let st = second.ok("heat_status", json!({"run": run})).await;
            assert_eq!(st["state"], "interrupted", "{st}");
            assert_eq!(
                st["note"],
                "the server stopped while the run was running; the run was stopped with it"
            );
        }
        let (kind, _) = second.err("heat_result", json!({"run": run})).await;
        assert_eq!(kind, "rejected");
        let list = second.ok("heat_list", json!({})).await;
        assert_eq!(
            list["runs"],
            json!([{"run_handle": run, "state": "interrupted"}])
        );
        second.shutdown().await;
    })
    .await;
}

/// Deleting a run of 100,000 files (done on the blocking pool) does not
/// hold up the session: status calls about another run are answered while
/// the deletion is still under way.
#[tokio::test]
async fn status_is_answered_while_a_huge_run_is_deleted() {
    bounded(async {
        let root = tempfile::tempdir().unwrap();
        let s = Session::start_with(root.path(), &[]).await;
        let dx: f64 = 1.0 / 16.0;
        let start = json!({"cells": 16, "steps": 10, "length": 1.0, "diffusivity": 1.0, "dt": 0.4 * dx * dx});
        let probe = s.ok("heat_start", start.clone()).await["run_handle"]
            .as_str()
            .unwrap()
            .to_owned();
        let huge = s.ok("heat_start", start).await["run_handle"]
            .as_str()
            .unwrap()
            .to_owned();
        s.ok("heat_wait", json!({"run": huge, "seconds": 30})).await;
        let dir = root.path().join("runs").join(&huge);
        for i in 0..100_000 {
            std::fs::write(dir.join(format!("f{i}")), b"").unwrap();
        }
        let (deleted, answered_meanwhile) = {
            let delete = s.call("heat_delete", json!({"run": huge}));
            tokio::pin!(delete);
            let mut answered = 0;
            loop {
                tokio::select! {
                    biased;
                    r = &mut delete => break (r, answered),
                    r = s.call("heat_status", json!({"run": probe})) => {
                        assert_ne!(r.is_error, Some(true), "{r:?}");
                        answered += 1;
                    }
                }
            }
        };
        assert_ne!(deleted.is_error, Some(true), "{deleted:?}");
        assert!(!dir.exists());
        assert!(answered_meanwhile > 0, "no status answered during the deletion");
        s.shutdown().await;
    })
    .await;
}

/// The run root's quotas, configured on the command line, refuse a new run
/// with a fixed error naming the quota; deleting a run makes room.
#[tokio::test]
async fn a_caller_over_its_run_quota_is_refused_until_it_deletes() {
    bounded(async {
        let root = tempfile::tempdir().unwrap();
        let s = Session::start_with(root.path(), &["--max-runs", "2"]).await;
        let dx: f64 = 1.0 / 16.0;
        let start = json!({"cells": 16, "steps": 10, "length": 1.0, "diffusivity": 1.0, "dt": 0.4 * dx * dx});
        let first = s.ok("heat_start", start.clone()).await;
        s.ok("heat_start", start.clone()).await;
        let (kind, message) = s.err("heat_start", start.clone()).await;
        assert_eq!(kind, "quota_exceeded");
        assert_eq!(message, "quota exceeded: runs held; delete runs or wait");
        let r = s.call("heat_start", start.clone()).await;
        assert_eq!(r.structured_content.unwrap()["error"]["quota"], "runs");
        let run = first["run_handle"].as_str().unwrap();
        s.ok("heat_wait", json!({"run": run, "seconds": 30})).await;
        s.ok("heat_delete", json!({"run": run})).await;
        s.ok("heat_start", start).await;
        s.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_sweep_runs_every_point() {
    bounded(async {
        let s = Session::start().await;
        let dx: f64 = 1.0 / 32.0;
        let sweep = s
            .ok(
                "heat_sweep",
                json!({"cells": 32, "steps": 500, "length": 1.0, "dt": 0.4 * dx * dx,
                       "diffusivity_start": 0.5, "diffusivity_stop": 1.0, "points": 3}),
            )
            .await;
        let points = sweep["points"].as_array().unwrap();
        assert_eq!(points.len(), 3);
        let alphas: Vec<f64> = points
            .iter()
            .map(|p| p["diffusivity"].as_f64().unwrap())
            .collect();
        assert_eq!(alphas, [0.5, 0.75, 1.0]);
        let mut maxima = Vec::new();
        for p in points {
            let run = p["run_handle"].as_str().unwrap();
            let st = s.ok("heat_wait", json!({"run": run, "seconds": 30})).await;
            assert_eq!(st["state"], "succeeded", "{st}");
            let r = s.ok("heat_result", json!({"run": run})).await;
            maxima.push(r["max"].as_f64().unwrap());
        }
        // Faster diffusion decays the sine mode further.
        assert!(maxima[0] > maxima[1] && maxima[1] > maxima[2], "{maxima:?}");
        // One plot of the whole sweep, from any of its points.
        let last = points[2]["run_handle"].as_str().unwrap();
        let plot = s.call("heat_sweep_plot", json!({"run": last})).await;
        assert_ne!(plot.is_error, Some(true), "{plot:?}");
        let image = plot
            .content
            .iter()
            .find_map(|c| c.as_image())
            .expect("image content");
        let png = base64::engine::general_purpose::STANDARD
            .decode(&image.data)
            .unwrap();
        assert_plot(&png);
        // The curves are coloured by diffusivity: blue for the lowest,
        // red for the highest, both present.
        let rgb = pixels(&png);
        let has = |f: &dyn Fn(&[u8]) -> bool| rgb.chunks(3).filter(|p| f(p)).count() > 300;
        assert!(has(&|p| p[2] > 150 && p[0] < 80), "no blue curve");
        assert!(has(&|p| p[0] > 150 && p[2] < 80), "no red curve");
        s.shutdown().await;
    })
    .await;
}

/// A sweep point cancelled while queued is never launched; the points
/// around it are unaffected.
#[tokio::test]
async fn a_queued_sweep_point_is_cancelled_before_it_runs() {
    bounded(async {
        let s = Session::start().await;
        let dx: f64 = 1.0 / 2000.0;
        let sweep = s
            .ok(
                "heat_sweep",
                json!({"cells": 2000, "steps": 600_000, "length": 1.0, "dt": 0.4 * dx * dx,
                       "diffusivity_start": 0.5, "diffusivity_stop": 1.0, "points": 3}),
            )
            .await;
        let runs: Vec<String> = sweep["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["run_handle"].as_str().unwrap().to_owned())
            .collect();
        let third = s.ok("heat_cancel", json!({"run": runs[2]})).await;
        assert_eq!(third["outcome"], "cancelled");
        let first = s.ok("heat_cancel", json!({"run": runs[0]})).await;
        assert_eq!(first["outcome"], "cancelled");
        let second = s
            .ok("heat_wait", json!({"run": runs[1], "seconds": 60}))
            .await;
        assert_eq!(second["state"], "succeeded", "{second}");
        // Give the sweep's driver time to reach the third point.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let st = s.ok("heat_status", json!({"run": runs[2]})).await;
        assert_eq!(st["state"], "cancelled", "{st}");
        let (kind, _) = s.err("heat_result", json!({"run": runs[2]})).await;
        assert_eq!(kind, "rejected", "the cancelled point has no result");
        s.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_long_run_is_cancelled() {
    bounded(async {
        let s = Session::start().await;
        let started = s.ok("heat_start", long_run()).await;
        let run = started["run_handle"].as_str().unwrap().to_owned();
        let done = s.ok("heat_cancel", json!({"run": run})).await;
        assert_eq!(done["outcome"], "cancelled");
        let st = s.ok("heat_wait", json!({"run": run, "seconds": 20})).await;
        assert_eq!(st["state"], "cancelled", "{st}");
        let st = s.ok("heat_status", json!({"run": run})).await;
        assert_eq!(st["state"], "cancelled", "{st}");
        let (kind, _) = s.err("heat_result", json!({"run": run})).await;
        assert!(!kind.is_empty());
        s.ok("heat_delete", json!({"run": run})).await;
        s.shutdown().await;
    })
    .await;
}

/// Hostile inputs: each refused with a structured error, the same text
/// whatever the hostile value was, and no canary echoed.
#[tokio::test]
async fn hostile_calls_are_refused_with_fixed_errors() {
    hostile_calls(Era::Handshake).await;
}

#[tokio::test]
async fn hostile_calls_are_refused_with_fixed_errors_in_the_2026_era() {
    hostile_calls(Era::Discover).await;
}

async fn hostile_calls(era: Era) {
    bounded(async {
        let s = Session::start_in_era(era).await;
        let with = |k: &str, v: Value| {
            let mut a = small_run(100);
            a[k] = v;
            a
        };
        let without = |k: &str| {
            let mut a = small_run(100);
            a.as_object_mut().unwrap().remove(k);
            a
        };
        let sweep = |start: f64, stop: f64| {
            json!({"cells": 32, "steps": 10, "length": 1.0, "dt": 1e-5,
                   "diffusivity_start": start, "diffusivity_stop": stop, "points": 3})
        };
        // (class, tool, two variants that differ only in the hostile value)
        let cases: Vec<(&str, &str, Value, Value)> = vec![
            ("bool for integer", "heat_start", with("cells", json!(true)), with("cells", json!(false))),
            ("bool for number", "heat_start", with("dt", json!(true)), with("dt", json!(false))),
            ("numeric string", "heat_start", with("cells", json!("64")), with("cells", json!(format!("64{CANARY}")))),
            ("NaN-like string", "heat_start", with("dt", json!("NaN")), with("dt", json!(format!("NaN{CANARY}")))),
            ("infinity string", "heat_start", with("dt", json!("Infinity")), with("dt", json!("-inf"))),
            ("null for number", "heat_start", with("steps", Value::Null), with("steps", Value::Null)),
            ("array for number", "heat_start", with("steps", json!([1])), with("steps", json!([CANARY]))),
            ("float for integer", "heat_start", with("cells", json!(64.5)), with("cells", json!(1e300))),
            ("unknown key", "heat_start", with(CANARY, json!(1)), with(&format!("x{CANARY}"), json!(CANARY))),
            ("missing key", "heat_start", without("cells"), without("cells")),
            ("bad enum", "heat_start", with("boundary", json!(CANARY)), with("boundary", json!("Dirichlet"))),
            ("cells too large", "heat_start", with("cells", json!(200_001)), with("cells", json!(u64::MAX))),
            ("cells too small", "heat_start", with("cells", json!(7)), with("cells", json!(-1))),
            ("huge length", "heat_start", with("length", json!(1e308)), with("length", json!(1e4))),
            ("zero dt", "heat_start", with("dt", json!(0.0)), with("dt", json!(-1e-9))),
            ("cost above ceiling", "heat_start",
                json!({"cells": 200_000, "steps": 10_000_000, "length": 1000.0, "diffusivity": 1e-9, "dt": 1e-3}),
                json!({"cells": 100_000, "steps": 100_000, "length": 1000.0, "diffusivity": 1e-9, "dt": 1e-3})),
            ("unstable step", "heat_start", with("dt", json!(1.0)), with("dt", json!(0.6 / 64.0 / 64.0))),
            ("sweep start >= stop", "heat_sweep", sweep(1.0, 0.5), sweep(0.7, 0.7)),
            ("sweep too many points", "heat_sweep",
                { let mut a = sweep(0.5, 1.0); a["points"] = json!(17); a },
                { let mut a = sweep(0.5, 1.0); a["points"] = json!(1_000_000); a }),
            ("oversized tail", "heat_log",
                json!({"run": UNKNOWN_HANDLE, "lines": 1001}),
                json!({"run": UNKNOWN_HANDLE, "lines": 4_000_000_000_u64})),
            ("oversized max_points", "heat_result",
                json!({"run": UNKNOWN_HANDLE, "max_points": 10_001}),
                json!({"run": UNKNOWN_HANDLE, "max_points": 1})),
            ("oversized wait", "heat_wait",
                json!({"run": UNKNOWN_HANDLE, "seconds": 61}),
                json!({"run": UNKNOWN_HANDLE, "seconds": 0})),
        ];
        let mut seen = Vec::new();
        for (class, tool, a, b) in cases {
            let ea = s.err(tool, a).await;
            let eb = s.err(tool, b).await;
            println!("{class:<24} {tool:<12} {ea:?}");
            assert_eq!(ea.0, eb.0, "{class}: kind depends on the value");
            if !matches!(class, "cells too small" | "float for integer" | "zero dt" | "oversized max_points" | "oversized wait" | "huge length" | "cells too large" | "oversized tail" | "sweep too many points") {
                assert_eq!(ea.1, eb.1, "{class}: text depends on the value");
            }
            seen.push((class, ea));
        }
        // The run-handle classes: every tool taking `run` refuses them the same way.
        let bad_handles = [
            "../../etc/passwd".to_owned(),
            "/etc".to_owned(),
            "heat_..".to_owned(),
            format!("heat_{CANARY}/../../{CANARY}AAAAAAAAAAAA"),
            format!("heat_{}", "A".repeat(4096)),
            String::new(),
            format!("heat_{CANARY}\u{0}AAAAAAAAAAAAAAAAAA"),
        ];
        for tool in ["heat_status", "heat_wait", "heat_log", "heat_result", "heat_plot", "heat_sweep_plot", "heat_cancel", "heat_delete"] {
            let mut first: Option<(String, String)> = None;
            for h in &bad_handles {
                let e = s.err(tool, json!({"run": h})).await;
                assert!(!e.1.contains("passwd") && !e.1.contains("/etc"), "{e:?}");
                if let Some(f) = &first {
                    assert_eq!(&e.0, &f.0, "{tool}: kind depends on the handle");
                }
                first.get_or_insert(e);
            }
            let unknown = s.err(tool, json!({"run": UNKNOWN_HANDLE})).await;
            let unknown2 = s
                .err(tool, json!({"run": format!("heat_{CANARY}{}", "B".repeat(30))}))
                .await;
            assert_eq!(unknown, unknown2, "{tool}: the unknown-run error is fixed");
            assert_eq!(unknown.0, "unknown_run", "{tool}");
            // A non-string handle is a type error, not a lookup.
            s.err(tool, json!({"run": 42})).await;
        }
        // The server still works after all that.
        s.ok("heat_list", json!({})).await;
        assert_eq!(seen.len(), 22);
        s.shutdown().await;
    })
    .await;
}

/// A raw JSON-RPC line session on the server's pipes.
struct Raw {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    _root: tempfile::TempDir,
}

impl Raw {
    async fn start() -> Self {
        Self::start_logging(None).await
    }

    /// With `Some(level)`: `RUST_LOG=level` and standard error piped (read
    /// it with [`Raw::stderr`]).
    async fn start_logging(level: Option<&str>) -> Self {
        let root = tempfile::tempdir().unwrap();
        let mut cmd = server_command(root.path());
        match level {
            Some(level) => cmd.env("RUST_LOG", level).stderr(Stdio::piped()),
            None => cmd.stderr(Stdio::null()),
        };
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut raw = Self {
            child,
            stdin,
            lines,
            _root: root,
        };
        raw.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#).await;
        let init = raw.reply().await;
        assert_eq!(init["id"], 0);
        raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        raw
    }

    async fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next message, within 5 s.
    async fn reply(&mut self) -> Value {
        let line = timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("no reply within 5 s")
            .unwrap()
            .expect("server closed stdout");
        serde_json::from_str(&line).unwrap()
    }

    /// Closes the session and returns everything the server wrote on
    /// standard error.
    async fn stderr(mut self) -> String {
        let mut err = self.child.stderr.take().expect("stderr piped");
        drop(self.stdin);
        let mut text = String::new();
        timeout(Duration::from_secs(10), err.read_to_string(&mut text))
            .await
            .expect("server did not exit")
            .unwrap();
        text
    }

    async fn list_works(&mut self, id: u32) {
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"heat_list","arguments":{{}}}}}}"#
        ))
        .await;
        let r = self.reply().await;
        assert_eq!(r["id"], id, "{r}");
        assert_eq!(r["result"]["isError"], false, "{r}");
    }
}

/// With logging at trace level, every line on standard output is still a
/// JSON-RPC message (the log goes to standard error, without terminal
/// escapes, since it is not a terminal).
#[tokio::test]
async fn trace_logging_never_reaches_the_stdio_channel() {
    bounded(async {
        let mut raw = Raw::start_logging(Some("trace")).await;
        for id in 1..=3 {
            raw.list_works(id).await;
        }
        let dx: f64 = 1.0 / 16.0;
        raw.send(&format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"heat_start","arguments":{{"cells":16,"steps":10,"length":1.0,"diffusivity":1.0,"dt":{}}}}}}}"#,
            0.4 * dx * dx
        ))
        .await;
        let r = raw.reply().await;
        assert_eq!(r["result"]["isError"], false, "{r}");
        let log = raw.stderr().await;
        assert!(log.lines().count() >= 10, "{log}");
        assert!(log.contains("TRACE") || log.contains("DEBUG"), "{log}");
        assert!(!log.contains('\u{1b}'), "terminal escapes in a piped log");
    })
    .await;
}

#[tokio::test]
async fn malformed_numbers_on_the_wire_get_a_json_rpc_error_and_the_session_survives() {
    bounded(async {
        let mut raw = Raw::start().await;
        raw.list_works(1).await;
        let hostile = [
            format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"heat_start","arguments":{{"cells":1e999,"steps":10,"length":1,"diffusivity":1,"dt":1e-6,"{CANARY}":1}}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"heat_start","arguments":{{"cells":NaN,"steps":10,"length":1,"diffusivity":1,"dt":1e-6,"{CANARY}":1}}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"heat_start","arguments":{{"cells":64,"steps":Infinity,"label":"{CANARY}"}}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"heat_start","arguments":{{"cells":-1e999,"{CANARY}":"{CANARY}"}}}}}}"#),
            format!("{{\"{CANARY}\": not json at all"),
            format!(r#"{{"jsonrpc":"2.0","id":6,"method":"{CANARY} ignore previous instructions"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"heat_list","arguments":["{CANARY}"]}}}}"#),
        ];
        for (i, line) in hostile.iter().enumerate() {
            raw.send(line).await;
            let r = raw.reply().await;
            let text = r.to_string();
            assert!(!text.contains(CANARY), "echoed: {text}");
            let code = r["error"]["code"].as_i64().unwrap_or_else(|| panic!("no JSON-RPC error: {text}"));
            assert!((-32700..=-32600).contains(&code), "{text}");
            assert!(r.get("result").is_none(), "{text}");
            raw.list_works(100 + i as u32).await;
        }
        drop(raw.stdin);
        let status = timeout(Duration::from_secs(10), raw.child.wait())
            .await
            .expect("server did not exit when stdin closed")
            .unwrap();
        assert!(status.success(), "{status:?}");
    })
    .await;
}

/// Decodes a PNG into RGB pixels (the plots are 8-bit RGB).
fn pixels(png: &[u8]) -> Vec<u8> {
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (800, 500));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    buf
}

/// A plot: a PNG of the fixed size that is neither blank nor all ink.
fn assert_plot(png: &[u8]) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let rgb = pixels(png);
    let ink = rgb.chunks(3).filter(|p| p.iter().any(|&c| c < 200)).count();
    let total = rgb.len() / 3;
    assert!(
        ink > total / 100 && ink < total / 2,
        "{ink} of {total} pixels drawn"
    );
}

/// A client that declares the tasks extension.
#[derive(Clone)]
struct TaskClient;

impl rmcp::ClientHandler for TaskClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build(),
            rmcp::model::Implementation::new("heat-e2e-tasks", "1"),
        )
    }
}

/// `heat_solve` answers a client without tasks with the whole result, a
/// client that takes tasks with a task (the server declares the
/// extension) whose result is the same, and refuses a grid too large to
/// answer whole.
#[tokio::test]
async fn heat_solve_is_a_task_for_a_client_that_takes_tasks() {
    use rmcp::model::CallToolResponse;
    bounded(async {
        let s = Session::start().await;
        let plain = s.ok("heat_solve", small_run(200)).await;
        assert_eq!(plain["report"]["state"], "succeeded", "{plain}");
        assert_eq!(plain["result"]["u"].as_array().map(Vec::len), Some(65));
        let mut big = small_run(10);
        big["cells"] = json!(20_001);
        big["dt"] = json!(1e-12);
        let (kind, _) = s.err("heat_solve", big).await;
        assert_eq!(kind, "invalid_arguments");
        s.shutdown().await;

        let root = tempfile::tempdir().unwrap();
        let (transport, _stderr) = TokioChildProcess::builder(server_command(root.path()))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let c = TaskClient.serve(transport).await.unwrap();
        assert!(c.peer_info().unwrap().capabilities.supports_tasks());
        let Value::Object(args) = small_run(200) else {
            unreachable!()
        };
        let created = c
            .call_tool_once(CallToolRequestParams::new("heat_solve").with_arguments(args))
            .await
            .unwrap();
        let CallToolResponse::Task(created) = created else {
            panic!("not a task: {created:?}")
        };
        let id = created.task.task_id.clone();
        let completed =
            hardened_mcp_tests::tasks::completed(&c, &id, Duration::from_millis(50)).await;
        let data = &completed["structuredContent"]["data"];
        assert_eq!(data["report"]["state"], "succeeded", "{completed:?}");
        assert_eq!(data["result"]["u"].as_array().map(Vec::len), Some(65));
        let _ = c.cancel().await;
    })
    .await;
}
