//! The jobs capability: a solver job declared once ([`SolverJob`]) and its
//! life-cycle tools mounted on a server type, driven through the same
//! entry points a route calls (parser, revalidation, scopes, output
//! envelope), against a probe solver in the real sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hardened_mcp::jobs::{
    JobScopes, JobService, Launcher, PagedFile, Prepared, ResultFile, SolverJob, read_job_record,
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
    const PAGED_FILES: &'static [PagedFile] = &[PagedFile::new(
        "trace",
        ResultFile::in_dir(OUT, FileName::fixed("trace.txt")),
    )];

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

async fn start(lab: &Lab, mode: &'static str, result: Value) -> String {
    lab.jobs
        .start(&alice(), &ProbeParams { mode, result })
        .await
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
            "probe_file",
            "probe_result",
            "probe_list",
            "probe_cancel",
            "probe_delete"
        ]
    );
    let started = lab
        .jobs
        .start(
            &alice(),
            &ProbeParams {
                mode: "ok",
                result: json!({"value": 2.5, "steps": 3}),
            },
        )
        .await
        .unwrap();
    // The containment is said once, at the start; reports leave it out.
    assert!(
        started.containment.contains("tree kill"),
        "{}",
        started.containment
    );
    let run = started.run_handle;
    let done = ok(&set, &lab, "probe_wait", json!({"run": run, "seconds": 30})).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    assert_eq!(done["exit_code"], 0);
    assert!(done.get("containment").is_none(), "{done}");
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
    let failed = start(&lab, "fail", json!({})).await;
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
    )
    .await;
    wait_for(&set, &lab, &chatty, "succeeded").await;
    let (_, msg) = err(&set, &lab, "probe_result", json!({"run": chatty})).await;
    assert_eq!(msg, "the solver's result file is malformed");
    // Well-formed, but outside the server's check.
    let wild = start(&lab, "ok", json!({"value": 1.0, "steps": 1000})).await;
    wait_for(&set, &lab, &wild, "succeeded").await;
    let (_, msg) = err(&set, &lab, "probe_result", json!({"run": wild})).await;
    assert_eq!(msg, "the solver's result failed the server's checks");
    // Positive control: the same job, in range, is served.
    let fine = start(&lab, "ok", json!({"value": 1.0, "steps": 100})).await;
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
    let run = start(&a, "slow", json!({"value": 0.0, "steps": 1})).await;
    wait_for(&set, &a, &run, "running").await;
    let seen = ok(&set, &b, "probe_status", json!({"run": run})).await;
    assert_eq!(seen["state"], "running", "{seen}");
    assert_eq!(
        seen["note"],
        "another server process sharing the run root follows this run; its progress is known there"
    );
    // Cancelled through b: a, which follows the run, carries it out, and b
    // answers once the end is recorded.
    let cancelled = ok(&set, &b, "probe_cancel", json!({"run": run})).await;
    assert_eq!(cancelled["outcome"], "cancelled", "{cancelled}");
    let st = ok(&set, &a, "probe_status", json!({"run": run})).await;
    assert_eq!(st["state"], "cancelled", "{st}");
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

/// A run deleted through another server process of the run root is
/// cancelled by the process that follows it first, then removed; a request
/// written by anyone without the root's key cancels nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_followed_elsewhere_is_deleted_after_its_follower_cancels_it() {
    let tmp = tempfile::tempdir().unwrap();
    let a = lab(&tmp.path().join("runs"));
    let b = lab(&tmp.path().join("runs"));
    let set = tools();
    let run = start(&a, "slow", json!({"value": 0.0, "steps": 1})).await;
    wait_for(&set, &a, &run, "running").await;
    // A forged request (no valid seal) is ignored.
    let dir = a.jobs.runs().resolve(&run, &alice()).unwrap();
    dir.write_atomic(&FileName::fixed("cancel-request"), b"{}")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let st = ok(&set, &a, "probe_status", json!({"run": run})).await;
    assert_eq!(
        st["state"], "running",
        "a forged request cancelled the run: {st}"
    );
    let gone = ok(&set, &b, "probe_delete", json!({"run": run})).await;
    assert_eq!(gone["outcome"], "deleted", "{gone}");
    let (kind, _) = err(&set, &a, "probe_status", json!({"run": run})).await;
    assert_eq!(kind, "unknown_run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequence_runs_its_steps_in_turn_and_a_queued_step_can_be_cancelled() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = lab(&tmp.path().join("runs"));
    let set = tools();
    let mut steps = Vec::new();
    for i in 0..3 {
        let planned = lab.jobs.plan(&alice()).await.unwrap();
        let mode = if i == 0 { "slow" } else { "ok" };
        steps.push((
            planned,
            ProbeParams {
                mode,
                result: json!({"value": f64::from(i), "steps": 1}),
            },
        ));
    }
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
    let run = start(&lab, "ok", json!({"value": 1.0, "steps": 1})).await;
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
    // A job that pages no file gets no file tool.
    let names: Vec<String> =
        JobService::<ChattyJob>::tools("chat", |c: &Chat| &c.jobs, JobScopes::default())
            .tools()
            .iter()
            .map(|t| t.name().to_owned())
            .collect();
    assert!(!names.iter().any(|n| n == "chat_file"), "{names:?}");
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
    let plain = start(&lab, "ok", json!({"value": 1.0, "steps": 1})).await;
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
    assert!(desk.cancel_task(&bob, &plain).await.is_err());
    assert!(desk.list_tasks(&bob).await.unwrap().is_empty());
}

/// A job's declared files are paged by their keys while the run goes on and
/// after; nothing else in the run is reachable through the file tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_declared_files_are_paged_by_key_and_only_those() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = lab(&tmp.path().join("runs"));
    let set = tools();
    let schema = &set.get("probe_file").unwrap().tool().input_schema;
    assert_eq!(schema["properties"]["name"]["enum"], json!(["trace"]));
    let run = start(&lab, "ok", json!({"value": 1.0, "steps": 3})).await;
    wait_for(&set, &lab, &run, "succeeded").await;
    let tail = ok(
        &set,
        &lab,
        "probe_file",
        json!({"run": run, "name": "trace", "lines": 2}),
    )
    .await;
    assert_eq!(tail["name"], "trace");
    assert_eq!(
        tail["lines"]["data"],
        json!(["step 2 of 3", "step 3 of 3"]),
        "{tail}"
    );
    let head = ok(
        &set,
        &lab,
        "probe_file",
        json!({"run": run, "name": "trace", "from_line": 0, "lines": 1}),
    )
    .await;
    assert_eq!(head["lines"]["data"], json!(["step 1 of 3"]), "{head}");
    // The result file is in the same directory but not offered; the
    // refusal does not echo the name asked for.
    let (_, refused) = err(
        &set,
        &lab,
        "probe_file",
        json!({"run": run, "name": "result"}),
    )
    .await;
    assert!(refused.contains("pages no file of that name"), "{refused}");
    let (_, refused) = err(
        &set,
        &lab,
        "probe_file",
        json!({"run": run, "name": "zqcanaryq"}),
    )
    .await;
    assert!(!refused.contains("zqcanaryq"), "{refused}");
    // No path: the argument is a key.
    let (kind, _) = err(
        &set,
        &lab,
        "probe_file",
        json!({"run": run, "name": "../trace.txt"}),
    )
    .await;
    assert_eq!(kind, "invalid_arguments");
    // A run that never wrote the file says so.
    let failed = start(&lab, "fail", json!({})).await;
    wait_for(&set, &lab, &failed, "failed").await;
    let (_, missing) = err(
        &set,
        &lab,
        "probe_file",
        json!({"run": failed, "name": "trace"}),
    )
    .await;
    assert!(missing.contains("has not written that file"), "{missing}");
    // A slow run's file is paged while it runs.
    let slow = start(&lab, "slow", json!({"value": 1.0, "steps": 3})).await;
    let t0 = Instant::now();
    loop {
        let call = call(
            &set,
            &lab,
            "probe_file",
            json!({"run": slow, "name": "trace", "from_line": 0}),
            ToolContext::detached(alice()),
        )
        .await;
        if call.is_error != Some(true) {
            let data = &call.structured_content.unwrap()["data"];
            if data["lines"]["data"][0] == "step 1 of 60" {
                break;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the trace never appeared"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ok(&set, &lab, "probe_cancel", json!({"run": slow})).await;
}

/// Malformed and repeated file keys are startup faults of the file tool.
#[test]
fn bad_paged_file_keys_are_startup_faults() {
    struct Files;
    impl SolverJob for Files {
        type Params = ();
        type Result = ProbeResult;
        const RESULT_FILE: ResultFile = ResultFile::new(FileName::fixed("r.json"));
        const PAGED_FILES: &'static [PagedFile] = &[
            PagedFile::new("Bad-Key", ResultFile::new(FileName::fixed("a.txt"))),
            PagedFile::new("twice", ResultFile::new(FileName::fixed("b.txt"))),
            PagedFile::new("twice", ResultFile::new(FileName::fixed("c.txt"))),
        ];
        fn prepare(&self, (): &()) -> Result<Prepared, ToolError> {
            Ok(Prepared::new(RunRequest::new("probe")))
        }
    }
    struct F {
        jobs: JobService<Files>,
    }
    let set = JobService::<Files>::tools("f", |f: &F| &f.jobs, JobScopes::default());
    let faults = set.faults();
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert!(
        faults.iter().all(|f| f.starts_with("tool `f_file`")),
        "{faults:?}"
    );
    assert!(
        faults.iter().any(|f| f.contains("`Bad-Key` must be")),
        "{faults:?}"
    );
    assert!(
        faults
            .iter()
            .any(|f| f.contains("`twice` is declared twice")),
        "{faults:?}"
    );
}

/// Starting a run never holds the async worker, even when the launch is a
/// slow cluster submission: on a current-thread runtime, other tasks keep
/// being served while `sbatch` (a stand-in that takes a second) runs. The
/// positive control: the same submission made synchronously serves none.
#[test]
fn a_slow_submission_does_not_hold_the_async_worker() {
    use std::os::unix::fs::PermissionsExt as _;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for (name, body) in [
        ("sbatch", "sleep 1\necho 4242\n"),
        ("scontrol", "echo 'JobId=4242 JobState=PENDING'\n"),
        ("scancel", "exit 0\n"),
    ] {
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let registry = SolverRegistry::builder()
        .solver("probe", PROBE)
        .build()
        .unwrap();
    let mut slurm = hardened_mcp::jobs::SlurmConfig::new(env!("CARGO_BIN_EXE_slurm_node"));
    slurm.bin_dir = bin;
    let sandbox = Sandbox::new(registry, SandboxConfig::default()).unwrap();
    let launcher = Launcher::slurm(sandbox, slurm).unwrap();
    let jobs = JobService::new(
        Probe,
        RunRoot::open(tmp.path().join("runs")).unwrap(),
        launcher.clone(),
    );
    let params = || ProbeParams {
        mode: "ok",
        result: json!({"value": 1.0, "steps": 1}),
    };

    // How many quick tasks are served while the submission is under way.
    let served_during = |asynchronous: bool| -> usize {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let done = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&done);
            let (jobs, launcher) = (jobs.clone(), launcher.clone());
            let p = params();
            let submit = tokio::spawn(async move {
                if asynchronous {
                    jobs.start(&alice(), &p).await.unwrap();
                } else {
                    let (_, dir) = jobs.runs().create(&alice()).unwrap();
                    let _ = &p;
                    let request = RunRequest::new("probe").args([DECK.as_str(), "out/result.json"]);
                    let cancel = tokio_util::sync::CancellationToken::new();
                    drop(launcher.launch(&alice(), &dir, request, &cancel).unwrap());
                }
                flag.store(true, Ordering::SeqCst);
            });
            let mut served = 0;
            for _ in 0..20 {
                tokio::task::yield_now().await;
                if done.load(Ordering::SeqCst) {
                    break;
                }
                served += 1;
            }
            submit.await.unwrap();
            served
        })
    };
    assert_eq!(served_during(true), 20, "the start held the worker");
    assert_eq!(served_during(false), 0, "the control did not block");
}
