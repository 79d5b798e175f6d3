//! The jobs capability: a solver job declared once ([`SolverJob`]) and its
//! life-cycle tools mounted on a server type, driven through the same
//! entry points a route calls (parser, revalidation, scopes, output
//! envelope), against a probe solver in the real sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hardened_mcp::jobs::{
    JobScopes, JobService, Launcher, Prepared, ResultFile, SolverJob, read_job_record,
};
use hardened_mcp::prelude::*;
use hardened_mcp::rmcp::model::CallToolResult;
use hardened_mcp::runs::FileName;
use hardened_mcp::sandbox::{Limits, RunRequest, Sandbox, SandboxConfig, SolverRegistry};
use hardened_mcp::transport::oauth::GrantedScopes;
use serde_json::{Value, json};

const PROBE: &str = env!("CARGO_BIN_EXE_sbx_job");
const DECK: FileName = FileName::fixed("input.txt");
const OUT: FileName = FileName::fixed("out");
const CANARY: &str = "CANARY-7f3a";

/// What a start hands the job: the probe's mode and the result it writes.
struct ProbeParams {
    mode: &'static str,
    result: Value,
}

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProbeResult {
    value: f64,
    steps: u32,
}

struct Probe;

impl SolverJob for Probe {
    type Params = ProbeParams;
    type Result = ProbeResult;
    const RESULT_FILE: ResultFile = ResultFile::in_dir(OUT, FileName::fixed("result.json"));
    const PROGRESS_UNIT: &'static str = "probe steps";

    fn prepare(&self, p: &ProbeParams) -> Result<Prepared, ToolError> {
        let request = RunRequest::new("probe")
            .args([DECK.as_str(), "out/result.json"])
            .write_only_in(OUT)
            .limits(Limits {
                wall_time: Duration::from_secs(90),
                ..Limits::default()
            });
        Ok(Prepared::new(request).input(DECK, format!("{}\n{}", p.mode, p.result)))
    }

    fn check_result(&self, r: &ProbeResult) -> Result<(), &'static str> {
        if r.steps <= 100 {
            Ok(())
        } else {
            Err("too many steps")
        }
    }
}

/// A server type holding the service, as a real server would.
struct Lab {
    jobs: JobService<Probe>,
}

fn launcher() -> Launcher {
    let registry = SolverRegistry::builder()
        .solver("probe", PROBE)
        .build()
        .unwrap();
    Launcher::local(Sandbox::new(registry, SandboxConfig::default()).unwrap())
}

fn lab(root: &std::path::Path) -> Lab {
    Lab {
        jobs: JobService::new(Probe, RunRoot::open(root).unwrap(), launcher()),
    }
}

fn tools() -> ToolSet<Lab> {
    JobService::<Probe>::tools(
        "probe",
        |l: &Lab| &l.jobs,
        JobScopes {
            read: &["p:read"],
            write: &["p:write"],
        },
    )
}

fn alice() -> CallerId {
    CallerId::new("alice").unwrap()
}

async fn call(
    set: &ToolSet<Lab>,
    lab: &Lab,
    tool: &str,
    args: Value,
    ctx: ToolContext,
) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("object")
    };
    set.get(tool).expect(tool).call(lab, Some(args), ctx).await
}

/// The `data` of a successful call, after checking the envelope against
/// the advertised output schema.
async fn ok(set: &ToolSet<Lab>, lab: &Lab, tool: &str, args: Value) -> Value {
    let r = call(set, lab, tool, args, ToolContext::detached(alice())).await;
    assert_ne!(r.is_error, Some(true), "{tool}: {r:?}");
    let structured = r.structured_content.expect("structured");
    let schema = Value::Object(
        (**set
            .get(tool)
            .unwrap()
            .tool()
            .output_schema
            .as_ref()
            .unwrap())
        .clone(),
    );
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&structured)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{tool}: {errors:?} in {structured}");
    structured["data"].clone()
}

/// The `(kind, message)` of a refused call; nothing of the canary in it.
async fn err(set: &ToolSet<Lab>, lab: &Lab, tool: &str, args: Value) -> (String, String) {
    let r = call(set, lab, tool, args, ToolContext::detached(alice())).await;
    assert_eq!(r.is_error, Some(true), "{tool} accepted: {r:?}");
    let wire = serde_json::to_string(&r).unwrap();
    assert!(!wire.contains(CANARY), "{tool} echoed solver text: {wire}");
    let e = &r.structured_content.unwrap()["error"];
    (
        e["kind"].as_str().unwrap().into(),
        e["message"].as_str().unwrap().into(),
    )
}

fn start(lab: &Lab, mode: &'static str, result: Value) -> String {
    lab.jobs
        .start(&alice(), &ProbeParams { mode, result })
        .unwrap()
        .run_handle
}

async fn wait_for(set: &ToolSet<Lab>, lab: &Lab, run: &str, state: &str) -> Value {
    let t0 = Instant::now();
    loop {
        let st = ok(set, lab, "probe_status", json!({"run": run})).await;
        if st["state"] == state {
            return st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "never {state}: {st}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_goes_through_its_whole_life_cycle() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = lab(&tmp.path().join("runs"));
    let set = tools();
    let names: Vec<&str> = set.tools().iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "probe_status",
            "probe_wait",
            "probe_log",
            "probe_result",
            "probe_list",
            "probe_cancel",
            "probe_delete"
        ]
    );
    let run = start(&lab, "ok", json!({"value": 2.5, "steps": 3}));
    let done = ok(&set, &lab, "probe_wait", json!({"run": run, "seconds": 30})).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    assert_eq!(done["exit_code"], 0);
    let result = ok(&set, &lab, "probe_result", json!({"run": run})).await;
    assert_eq!(
        result,
        json!({"run_handle": run, "result": {"value": 2.5, "steps": 3}})
    );
    // The typed read gives the same.
    let dir = lab.jobs.runs().resolve(&run, &alice()).unwrap();
    assert_eq!(lab.jobs.result(&alice(), &dir).await.unwrap().steps, 3);
    let log = ok(
        &set,
        &lab,
        "probe_log",
        json!({"run": run, "stream": "stdout", "lines": 2}),
    )
    .await;
    assert_eq!(log["log"]["data"], json!(["PROGRESS 2 3", "PROGRESS 3 3"]));
    let head = ok(
        &set,
        &lab,
        "probe_log",
        json!({"run": run, "stream": "stdout", "from_line": 0, "lines": 1}),
    )
    .await;
    assert_eq!(head["log"]["data"], json!(["PROGRESS 1 3"]));
    let list = ok(&set, &lab, "probe_list", json!({})).await;
    assert_eq!(
        list["runs"],
        json!([{"run_handle": run, "state": "succeeded"}])
    );
    // The record persisted in the run says the same, authenticated.
    assert!(read_job_record(&dir).is_some_and(|r| r.success));
    let gone = ok(&set, &lab, "probe_delete", json!({"run": run})).await;
    assert_eq!(gone["outcome"], "deleted");
    let (kind, _) = err(&set, &lab, "probe_status", json!({"run": run})).await;
    assert_eq!(kind, "unknown_run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_served_only_when_the_run_succeeded_and_passed_its_checks() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = lab(&tmp.path().join("runs"));
    let set = tools();
    let failed = start(&lab, "fail", json!({}));
    wait_for(&set, &lab, &failed, "failed").await;
    let (kind, msg) = err(&set, &lab, "probe_result", json!({"run": failed})).await;
    assert_eq!(
        (kind.as_str(), msg.as_str()),
        (
            "rejected",
            "the run did not succeed, so it has no result: its status and log say why"
        )
    );
    // A field the type does not declare (here, text meant for the model).
    let chatty = start(
        &lab,
        "ok",
        json!({"value": 1.0, "steps": 1, "note": CANARY}),
    );
    wait_for(&set, &lab, &chatty, "succeeded").await;
    let (_, msg) = err(&set, &lab, "probe_result", json!({"run": chatty})).await;
    assert_eq!(msg, "the solver's result file is malformed");
    // Well-formed, but outside the server's check.
    let wild = start(&lab, "ok", json!({"value": 1.0, "steps": 1000}));
    wait_for(&set, &lab, &wild, "succeeded").await;
    let (_, msg) = err(&set, &lab, "probe_result", json!({"run": wild})).await;
    assert_eq!(msg, "the solver's result failed the server's checks");
    // Positive control: the same job, in range, is served.
    let fine = start(&lab, "ok", json!({"value": 1.0, "steps": 100}));
    wait_for(&set, &lab, &fine, "succeeded").await;
    ok(&set, &lab, "probe_result", json!({"run": fine})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_record_written_by_anyone_but_the_server_is_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = lab(&tmp.path().join("runs"));
    let set = tools();
    let (handle, dir) = lab.jobs.runs().create(&alice()).unwrap();
    // A plain (unauthenticated) record claiming success, as a solver with
    // write access to its run directory could leave.
    dir.write_atomic(
        &FileName::fixed("job-status.json"),
        br#"{"state":"finished","termination":"exited","code":0,"success":true}"#,
    )
    .unwrap();
    assert!(read_job_record(&dir).is_none());
    let st = ok(&set, &lab, "probe_status", json!({"run": handle.as_str()})).await;
    assert_eq!(st["state"], "interrupted", "{st}");
    assert_eq!(st["note"], "the server stopped before the run was launched");
    let (kind, _) = err(&set, &lab, "probe_result", json!({"run": handle.as_str()})).await;
    assert_eq!(kind, "rejected");
}

/// Two services on one run root stand for two server processes: the one
/// that does not follow a run says who does, refuses to cancel it, and
/// reads its end from the record once it is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_followed_by_another_server_is_reported_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let a = lab(&tmp.path().join("runs"));
    let b = lab(&tmp.path().join("runs"));
    let set = tools();
    let run = start(&a, "slow", json!({"value": 0.0, "steps": 1}));
    wait_for(&set, &a, &run, "running").await;
    let seen = ok(&set, &b, "probe_status", json!({"run": run})).await;
    assert_eq!(seen["state"], "running", "{seen}");
    assert_eq!(
        seen["note"],
        "another server process sharing the run root follows this run; its progress is known there"
    );
    let (kind, _) = err(&set, &b, "probe_cancel", json!({"run": run})).await;
    assert_eq!(kind, "rejected");
    let cancelled = ok(&set, &a, "probe_cancel", json!({"run": run})).await;
    assert_eq!(cancelled["outcome"], "cancelled");
    wait_for(&set, &a, &run, "cancelled").await;
    // The lease goes when the end is recorded: then b reads the record.
    let t0 = Instant::now();
    loop {
        let st = ok(&set, &b, "probe_status", json!({"run": run})).await;
        if st["state"] == "cancelled" {
            assert!(st["note"].is_null(), "{st}");
            break;
        }
        assert_eq!(st["state"], "running", "{st}");
        assert!(t0.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequence_runs_its_steps_in_turn_and_a_queued_step_can_be_cancelled() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = lab(&tmp.path().join("runs"));
    let set = tools();
    let steps: Vec<_> = (0..3)
        .map(|i| {
            let planned = lab.jobs.plan(&alice()).unwrap();
            let mode = if i == 0 { "slow" } else { "ok" };
            (
                planned,
                ProbeParams {
                    mode,
                    result: json!({"value": f64::from(i), "steps": 1}),
                },
            )
        })
        .collect();
    let handles: Vec<String> = steps.iter().map(|(p, _)| p.handle().to_string()).collect();
    for h in &handles {
        assert_eq!(
            ok(&set, &lab, "probe_status", json!({"run": h})).await["state"],
            "queued"
        );
    }
    lab.jobs.run_sequence(steps);
    wait_for(&set, &lab, &handles[0], "running").await;
    // The second waits for the first.
    assert_eq!(
        ok(&set, &lab, "probe_status", json!({"run": handles[1]})).await["state"],
        "queued"
    );
    let third = ok(&set, &lab, "probe_cancel", json!({"run": handles[2]})).await;
    assert_eq!(third["outcome"], "cancelled");
    ok(&set, &lab, "probe_cancel", json!({"run": handles[0]})).await;
    wait_for(&set, &lab, &handles[0], "cancelled").await;
    wait_for(&set, &lab, &handles[1], "succeeded").await;
    let st = ok(&set, &lab, "probe_status", json!({"run": handles[2]})).await;
    assert_eq!(st["state"], "cancelled");
    assert_eq!(st["note"], "the run was cancelled before it was launched");
    let dir = lab.jobs.runs().resolve(&handles[2], &alice()).unwrap();
    assert!(dir.subdir(&OUT).is_err(), "the abandoned step never ran");
    // Positive control: a step that ran has its output directory.
    let ran = lab.jobs.runs().resolve(&handles[1], &alice()).unwrap();
    assert!(ran.subdir(&OUT).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mounted_tools_require_their_scopes() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = lab(&tmp.path().join("runs"));
    let set = tools();
    let cancel = set.get("probe_cancel").unwrap().tool();
    assert_eq!(
        cancel.meta.as_ref().unwrap().0[hardened_mcp::transport::oauth::SCOPES_META_KEY],
        json!(["p:write"])
    );
    let run = start(&lab, "ok", json!({"value": 1.0, "steps": 1}));
    let reader =
        || ToolContext::detached(alice()).with_scopes(GrantedScopes::new(["p:read".to_owned()]));
    let refused = call(&set, &lab, "probe_cancel", json!({"run": run}), reader()).await;
    assert_eq!(
        refused.structured_content.unwrap()["error"]["kind"],
        "insufficient_scope"
    );
    let allowed = call(&set, &lab, "probe_status", json!({"run": run}), reader()).await;
    assert_ne!(allowed.is_error, Some(true), "{allowed:?}");
    // Without an access token (stdio), no scope applies.
    ok(&set, &lab, "probe_cancel", json!({"run": run})).await;
}

/// A result type the solver could fill with text for the model is refused
/// when the tools are built, naming the field; a server that serves its
/// own result tool drops the generic one and its fault.
#[test]
fn a_result_type_with_free_text_is_a_startup_fault() {
    #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
    struct Chatty {
        value: f64,
        comment: String,
    }
    struct ChattyJob;
    impl SolverJob for ChattyJob {
        type Params = ();
        type Result = Chatty;
        const RESULT_FILE: ResultFile = ResultFile::new(FileName::fixed("r.json"));
        fn prepare(&self, (): &()) -> Result<Prepared, ToolError> {
            Ok(Prepared::new(RunRequest::new("probe")))
        }
    }
    struct Chat {
        jobs: JobService<ChattyJob>,
    }
    let set = JobService::<ChattyJob>::tools("chat", |c: &Chat| &c.jobs, JobScopes::default());
    let faults = set.faults();
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert!(
        faults[0].starts_with("tool `chat_result`: result field `result.comment`"),
        "{faults:?}"
    );
    assert!(set.into_router().is_err());
    let kept = JobService::<ChattyJob>::tools("chat", |c: &Chat| &c.jobs, JobScopes::default())
        .retain(|n| n != "chat_result");
    assert!(kept.into_router().is_ok());
    // Positive control: the probe's numeric result passes.
    assert!(tools().faults().is_empty());
}

#[test]
fn a_bad_prefix_and_a_name_served_twice_are_startup_faults() {
    let bad = JobService::<Probe>::tools("9 bad", |l: &Lab| &l.jobs, JobScopes::default());
    assert!(
        bad.faults().iter().any(|f| f.contains("prefix")),
        "{:?}",
        bad.faults()
    );
    let twice = tools().merge(tools());
    assert!(
        twice
            .faults()
            .iter()
            .any(|f| f == "tool `probe_status`: declared twice"),
        "{:?}",
        twice.faults()
    );
}

/// A task answers its own caller only: another caller, a run that is no
/// task, and an id that never existed all get one answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_answers_only_its_caller() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = lab(&tmp.path().join("runs"));
    let set = tools();
    // A plain run is no task.
    let plain = start(&lab, "ok", json!({"value": 1.0, "steps": 1}));
    wait_for(&set, &lab, &plain, "succeeded").await;
    let desk = lab.jobs.desk();
    let bob = CallerId::new("bob").unwrap();
    let no_task = desk.get_task(&alice(), &plain).await.unwrap_err();
    let foreign = desk.get_task(&bob, &plain).await.unwrap_err();
    let never = desk
        .get_task(&alice(), "run_AAAAAAAAAAAAAAAAAAAAAA")
        .await
        .unwrap_err();
    let garbage = desk.get_task(&alice(), "../../etc").await.unwrap_err();
    for e in [&foreign, &never, &garbage] {
        assert_eq!(e.code, no_task.code);
        assert_eq!(e.message, no_task.message);
    }
    assert!(desk.cancel_task(&bob, &plain).is_err());
    assert!(desk.list_tasks(&bob).await.unwrap().is_empty());
}
