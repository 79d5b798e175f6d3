//! MCP tasks over streamable HTTP, both protocol eras on one server: a
//! session that initialized with 2025-11-25 gets that era's declarations
//! and methods (`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`,
//! a `tools/call` with `task`), a 2026-07-28 request with the tasks
//! extension gets the extension's shapes, a session of an older era gets
//! neither; each task answers only its own caller. Then the official
//! TypeScript SDK drives a task to its result over HTTP. Against a probe
//! solver in the real sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hardened_mcp::ask::Elicited;
use hardened_mcp::jobs::{JobOutcome, JobService, Launcher, Prepared, ResultFile, SolverJob};
use hardened_mcp::prelude::*;
use hardened_mcp::runs::{FileName, Retention, RootOptions};
use hardened_mcp::sandbox::{Limits, RunRequest, Sandbox, SandboxConfig, SolverRegistry};
use hardened_mcp::transport::{BearerAuth, HttpConfig, HttpServer, RunningHttpServer};
use hardened_mcp_tests::node::run_ts_task;
use hardened_mcp_tests::tr_support::{
    HttpClient, HttpReply, MODERN_VERSION, initialized_notification, modern_headers,
};
use serde_json::{Value, json};

const PROBE: &str = env!("CARGO_BIN_EXE_sbx_job");
const DECK: FileName = FileName::fixed("input.txt");
const OUT: FileName = FileName::fixed("out");
const ALICE: &str = "alice-tok-Tq8Lw2Zr5Nc7Vb3X";
const BOB: &str = "bob-tok-Hy4Ks9Pd1Mf6Rg0J";

/// The probe's arguments: quick (three steps) or slow (a minute).
#[derive(HardenedArgs)]
struct Ask {
    /// Whether the probe runs for a minute.
    slow: bool,
    /// The value the probe reports.
    #[bounded(min = -1e6, max = 1e6)]
    value: f64,
    /// Whether the probe fails (exit 3, no result).
    #[bounded(default = false)]
    fail: bool,
}

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProbeResult {
    value: f64,
    steps: u32,
}

struct Probe;

/// The person's go-ahead.
#[derive(HardenedArgs)]
struct GoAhead {
    /// Whether to run.
    ok: bool,
}

impl SolverJob for Probe {
    type Params = Ask;
    type Result = ProbeResult;
    const RESULT_FILE: ResultFile = ResultFile::in_dir(OUT, FileName::fixed("result.json"));
    const PROGRESS_UNIT: &'static str = "probe steps";

    fn prepare(&self, a: &Ask) -> Result<Prepared, ToolError> {
        let request = RunRequest::new("probe")
            .args([DECK.as_str(), "out/result.json"])
            .write_only_in(OUT)
            .limits(Limits {
                wall_time: Duration::from_secs(90),
                ..Limits::default()
            });
        let mode = match (a.fail, a.slow) {
            (true, _) => "fail",
            (false, true) => "slow",
            (false, false) => "ok",
        };
        let result = json!({"value": a.value, "steps": 3});
        Ok(Prepared::new(request).input(DECK, format!("{mode}\n{result}")))
    }
}

/// A second job kind on the same run root: its result has another shape,
/// so a task answered through the wrong desk would fail its parse.
struct Doubler;

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Doubled {
    doubled: f64,
}

impl SolverJob for Doubler {
    type Params = Ask;
    type Result = Doubled;
    const RESULT_FILE: ResultFile = ResultFile::in_dir(OUT, FileName::fixed("result.json"));

    fn prepare(&self, a: &Ask) -> Result<Prepared, ToolError> {
        let request = RunRequest::new("probe")
            .args([DECK.as_str(), "out/result.json"])
            .write_only_in(OUT);
        let result = json!({"doubled": 2.0 * a.value});
        Ok(Prepared::new(request).input(DECK, format!("ok\n{result}")))
    }
}

#[derive(Clone)]
struct Lab {
    jobs: JobService<Probe>,
    doubler: JobService<Doubler>,
}

#[hardened_tools]
impl Lab {
    /// Run the probe and answer its result (an MCP task where offered).
    #[hardened_tool(max_cost = 1, units = "runs", cost = 1.0, timeout_s = 100, task)]
    async fn probe_solve(
        &self,
        ctx: ToolContext,
        #[args] ask: Ask,
    ) -> Result<Output<JobOutcome<ProbeResult>>, ToolError> {
        self.jobs.run(&ctx, &ask, Duration::from_secs(60)).await
    }

    /// Double a value through the probe (an MCP task where offered).
    #[hardened_tool(max_cost = 1, units = "runs", cost = 1.0, timeout_s = 100, task)]
    async fn probe_double(
        &self,
        ctx: ToolContext,
        #[args] ask: Ask,
    ) -> Result<Output<JobOutcome<Doubled>>, ToolError> {
        self.doubler.run(&ctx, &ask, Duration::from_secs(60)).await
    }

    /// Run the probe only as an MCP task.
    #[hardened_tool(
        max_cost = 1,
        units = "runs",
        cost = 1.0,
        timeout_s = 100,
        task = "required"
    )]
    async fn probe_task(
        &self,
        ctx: ToolContext,
        #[args] ask: Ask,
    ) -> Result<Output<JobOutcome<ProbeResult>>, ToolError> {
        self.jobs.run(&ctx, &ask, Duration::from_secs(60)).await
    }

    /// Ask for a go-ahead, then run the probe: for a client that takes
    /// tasks, the whole body is the task.
    #[hardened_tool(
        max_cost = 1,
        units = "runs",
        cost = 1.0,
        timeout_s = 100,
        asks = "elicitation",
        task(detached)
    )]
    async fn probe_confirmed(
        &self,
        ctx: ToolContext,
        #[args] ask: Ask,
    ) -> Result<Output<f64>, ToolError> {
        match ctx.elicit::<GoAhead>("go", "Run the probe?").await? {
            Elicited::Accepted(GoAhead { ok: true }) => {
                let (_, result) = self.jobs.run_to_end(&ctx, &ask).await?;
                Ok(Output::new(result.value))
            }
            _ => Err(ToolError::NotApproved),
        }
    }

    /// Panics: a detached body that does fails its task.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, task(required, detached))]
    async fn probe_panics(&self) -> Result<Output<u32>, ToolError> {
        std::panic::panic_any("probe_panics: a deliberate panic")
    }

    /// Not a task tool.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, annotations(read_only))]
    async fn probe_ping(&self) -> Result<Output<u32>, ToolError> {
        Ok(Output::new(1))
    }
}

async fn start(root: &std::path::Path, session_mode: bool) -> RunningHttpServer {
    start_serving(root, session_mode, true).await
}

/// The lab over HTTP; `tasks`: whether the server serves its tasks.
async fn start_serving(
    root: &std::path::Path,
    session_mode: bool,
    tasks: bool,
) -> RunningHttpServer {
    let registry = SolverRegistry::builder()
        .solver("probe", PROBE)
        .build()
        .unwrap();
    let sandbox = Sandbox::new(registry, SandboxConfig::default()).unwrap();
    let launcher = Launcher::local(sandbox);
    let options = RootOptions {
        retention: Some(Retention {
            max_idle: Duration::from_secs(3600),
            max_idle_finished: None,
        }),
        ..RootOptions::default()
    };
    let runs = RunRoot::open_with_options(root.join("runs"), options).unwrap();
    let lab = Lab {
        jobs: JobService::new(Probe, runs.clone(), launcher.clone()),
        doubler: JobService::new(Doubler, runs, launcher),
    };
    let tools = Lab::hardened_tool_router_set().into_router().unwrap();
    let mut server = Server::new("tasks-http", "1", lab, tools);
    if tasks {
        server = server
            .tasks(|l: &Lab| l.jobs.desk())
            .tasks(|l: &Lab| l.doubler.desk());
    }
    let auth = BearerAuth::parse(&format!("alice={ALICE}\nbob={BOB}")).unwrap();
    let config = HttpConfig::new()
        .auth(auth)
        .session_mode(session_mode)
        .sse_keep_alive(None);
    HttpServer::new(move || Ok(server.clone()), config)
        .unwrap()
        .start(tokio_util::sync::CancellationToken::new())
        .await
        .unwrap()
}

fn initialize(version: &str, capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": capabilities,
        "clientInfo": {"name": "raw-tasks", "version": "0"},
    }})
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A session of `version` for `token`; the initialize answer.
async fn session(addr: std::net::SocketAddr, token: &str, version: &str) -> (HttpClient, Value) {
    let mut c = HttpClient::new(addr, Some(token));
    let reply = c.post(&initialize(version, json!({}))).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    c.session = reply.header("mcp-session-id").map(str::to_owned);
    assert!(c.session.is_some(), "no session id");
    assert_eq!(c.post(&initialized_notification()).await.status, 202);
    (c, reply.rpc().unwrap())
}

/// POSTs `message` with the client's protocol-version header; the JSON-RPC
/// answer.
async fn rpc(c: &mut HttpClient, version: &str, message: &Value) -> Value {
    let body = serde_json::to_vec(message).unwrap();
    let reply: HttpReply = c
        .request("POST", &[("MCP-Protocol-Version", version)], &body)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.rpc().unwrap()
}

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(150), f)
        .await
        .expect("test within its time budget");
}

const V2025: &str = "2025-11-25";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_session_gets_the_2025_task_shapes_over_http() {
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let server = start(tmp.path(), true).await;
        let addr = server.local_addr();
        let (mut alice, init) = session(addr, ALICE, V2025).await;
        assert_eq!(
            init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
            json!({}),
            "{init}"
        );
        let list = rpc(&mut alice, V2025, &request(2, "tools/list", json!({}))).await;
        let tools = list["result"]["tools"].as_array().unwrap();
        let support = |name: &str| {
            tools.iter().find(|t| t["name"] == name).unwrap()["execution"]["taskSupport"].clone()
        };
        assert_eq!(support("probe_solve"), "optional", "{list}");
        assert_eq!(support("probe_task"), "required", "{list}");
        assert_eq!(support("probe_ping"), Value::Null, "{list}");
        // A task-only tool called without `task` is refused, as the
        // revision asks (Method not found); with `task` it is a task.
        let args = json!({"slow": false, "value": 1.0});
        let plain = request(
            20,
            "tools/call",
            json!({"name": "probe_task", "arguments": args}),
        );
        let refused = rpc(&mut alice, V2025, &plain).await;
        assert_eq!(refused["error"]["code"], -32601, "{refused}");
        let tasked = request(
            21,
            "tools/call",
            json!({"name": "probe_task", "arguments": args, "task": {}}),
        );
        let tasked = rpc(&mut alice, V2025, &tasked).await;
        assert!(tasked["result"]["task"]["taskId"].is_string(), "{tasked}");

        // A task-augmented call answers the task at once.
        let call = request(
            3,
            "tools/call",
            json!({"name": "probe_solve", "arguments": {"slow": false, "value": 2.5},
                   "task": {"ttl": 60000}}),
        );
        let created = rpc(&mut alice, V2025, &call).await;
        let task = &created["result"]["task"];
        let id = task["taskId"].as_str().expect("a task id").to_owned();
        assert_eq!(task["status"], "working", "{created}");
        // A task lives as long as its run: the root keeps an unused run an hour.
        assert_eq!(task["ttl"], 3_600_000, "{task}");
        assert!(task["createdAt"].is_string(), "{task}");

        // tasks/get answers the task itself (no nesting), until it is done.
        let get = request(4, "tasks/get", json!({"taskId": id}));
        loop {
            let got = rpc(&mut alice, V2025, &get).await;
            assert_eq!(got["result"]["taskId"], id.as_str(), "{got}");
            match got["result"]["status"].as_str().unwrap() {
                "working" => tokio::time::sleep(Duration::from_millis(100)).await,
                "completed" => break,
                other => panic!("{other}: {got}"),
            }
        }
        let result = rpc(
            &mut alice,
            V2025,
            &request(5, "tasks/result", json!({"taskId": id})),
        )
        .await;
        let data = &result["result"]["structuredContent"]["data"];
        assert_eq!(data["report"]["state"], "succeeded", "{result}");
        assert_eq!(data["result"]["value"], 2.5, "{result}");
        assert_eq!(
            result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            id.as_str()
        );

        // A slow one, cancelled; both listed, with their states.
        let slow = request(
            6,
            "tools/call",
            json!({"name": "probe_solve", "arguments": {"slow": true, "value": 1.0}, "task": {}}),
        );
        let slow = rpc(&mut alice, V2025, &slow).await;
        let slow_id = slow["result"]["task"]["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        let cancelled = rpc(
            &mut alice,
            V2025,
            &request(7, "tasks/cancel", json!({"taskId": slow_id})),
        )
        .await;
        assert_eq!(
            cancelled["result"]["taskId"],
            slow_id.as_str(),
            "{cancelled}"
        );
        assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
        // 2025-11-25 refuses to cancel a task that has ended.
        let again = rpc(
            &mut alice,
            V2025,
            &request(14, "tasks/cancel", json!({"taskId": slow_id})),
        )
        .await;
        assert_eq!(again["error"]["code"], -32602, "{again}");
        let listed = rpc(&mut alice, V2025, &request(8, "tasks/list", json!({}))).await;
        let states: Vec<(String, String)> = listed["result"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["taskId"].as_str().unwrap().to_owned(),
                    t["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert!(
            states.contains(&(id.clone(), "completed".to_owned())),
            "{listed}"
        );
        assert!(
            states.contains(&(slow_id.clone(), "cancelled".to_owned())),
            "{listed}"
        );

        // A task of the other job kind is answered by its own desk.
        let double = request(
            11,
            "tools/call",
            json!({"name": "probe_double", "arguments": {"slow": false, "value": 2.5}, "task": {}}),
        );
        let double = rpc(&mut alice, V2025, &double).await;
        let double_id = double["result"]["task"]["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        let doubled = rpc(
            &mut alice,
            V2025,
            &request(12, "tasks/result", json!({"taskId": double_id})),
        )
        .await;
        assert_eq!(
            doubled["result"]["structuredContent"]["data"]["result"]["doubled"], 5.0,
            "{doubled}"
        );
        let listed = rpc(&mut alice, V2025, &request(13, "tasks/list", json!({}))).await;
        assert_eq!(
            listed["result"]["tasks"].as_array().unwrap().len(),
            4,
            "{listed}"
        );

        // Bob, in a 2025 session of his own: Alice's task is unknown to him,
        // with the very answer of an id that never existed; his list is empty.
        let (mut bob, _) = session(addr, BOB, V2025).await;
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            let foreign = rpc(&mut bob, V2025, &request(9, method, json!({"taskId": id}))).await;
            let unknown = rpc(
                &mut bob,
                V2025,
                &request(9, method, json!({"taskId": "run_AAAAAAAAAAAAAAAAAAAAAA"})),
            )
            .await;
            assert!(foreign.get("error").is_some(), "{method}: {foreign}");
            assert_eq!(foreign, unknown, "{method}");
            assert!(!foreign.to_string().contains(&id), "{foreign}");
        }
        let bobs = rpc(&mut bob, V2025, &request(10, "tasks/list", json!({}))).await;
        assert_eq!(bobs["result"]["tasks"], json!([]), "{bobs}");
        // Alice's task is intact.
        let still = rpc(&mut alice, V2025, &get).await;
        assert_eq!(still["result"]["status"], "completed", "{still}");
        server.shutdown().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_eras_get_their_own_shapes_and_never_the_2025_ones() {
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let server = start(tmp.path(), true).await;
        let addr = server.local_addr();

        // A 2025-06-18 session: no task declarations, no 2025 task methods
        // (the fixed answer of an unknown method), a plain call is plain.
        let old = "2025-06-18";
        let (mut c, init) = session(addr, ALICE, old).await;
        assert!(
            init["result"]["capabilities"].get("tasks").is_none(),
            "{init}"
        );
        let list = rpc(&mut c, old, &request(2, "tools/list", json!({}))).await;
        for t in list["result"]["tools"].as_array().unwrap() {
            assert!(t.get("execution").is_none(), "{t}");
        }
        let listed = rpc(&mut c, old, &request(3, "tasks/list", json!({}))).await;
        assert_eq!(listed["error"]["code"], -32601, "{listed}");
        assert_eq!(listed["error"]["message"], "Method not found", "{listed}");
        // Nor can a client name the adapter's private methods itself.
        let private = request(4, "dev.hardened-mcp/2025/tasks/list", json!({}));
        let private = rpc(&mut c, old, &private).await;
        assert_eq!(private["error"]["code"], -32601, "{private}");
        let call = request(
            5,
            "tools/call",
            json!({"name": "probe_solve", "arguments": {"slow": false, "value": 1.0}, "task": {}}),
        );
        let plain = rpc(&mut c, old, &call).await;
        assert_eq!(
            plain["result"]["structuredContent"]["data"]["report"]["state"], "succeeded",
            "{plain}"
        );

        // A 2025-11-25 session declaring the 2026 extension speaks that one.
        let ext = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        let mut e = HttpClient::new(addr, Some(ALICE));
        let init = e.post(&initialize(V2025, ext)).await;
        e.session = init.header("mcp-session-id").map(str::to_owned);
        let init = init.rpc().unwrap();
        assert!(
            init["result"]["capabilities"].get("tasks").is_none(),
            "{init}"
        );
        assert!(
            init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
                .is_object(),
            "{init}"
        );
        assert_eq!(e.post(&initialized_notification()).await.status, 202);
        let listed = rpc(&mut e, V2025, &request(2, "tasks/list", json!({}))).await;
        assert_eq!(listed["error"]["code"], -32601, "{listed}");

        // A 2026-07-28 request with the extension: the call is a task in the
        // extension's shape, and tasks/get answers it nested.
        let mut m = HttpClient::new(addr, Some(ALICE));
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "raw-tasks", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities":
                {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        });
        let modern = |id: i64, method: &str, mut params: Value| {
            params["_meta"] = meta.clone();
            serde_json::to_vec(&request(id, method, params)).unwrap()
        };
        let body = modern(
            1,
            "tools/call",
            json!({"name": "probe_solve", "arguments": {"slow": false, "value": 4.0}}),
        );
        let created = m
            .request(
                "POST",
                &modern_headers("tools/call", Some("probe_solve")),
                &body,
            )
            .await;
        let created = created.rpc().unwrap();
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        let id = created["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("not a task: {created}"))
            .to_owned();
        let get_headers = [
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", "tasks/get"),
            ("Mcp-Name", id.as_str()),
        ];
        loop {
            let body = modern(2, "tasks/get", json!({"taskId": id}));
            let got = m.request("POST", &get_headers, &body).await;
            let got = got.rpc().unwrap();
            match got["result"]["status"].as_str() {
                Some("working") => tokio::time::sleep(Duration::from_millis(100)).await,
                Some("completed") => break,
                _ => panic!("{got}"),
            }
        }
        server.shutdown().await.unwrap();
    })
    .await;
}

/// A stateless (2026-07-28) client of `addr` for `token`, declaring the
/// tasks extension or not: sends one request, answers its HTTP status and
/// JSON-RPC reply.
struct Modern {
    client: HttpClient,
    tasks: bool,
}

impl Modern {
    fn new(addr: std::net::SocketAddr, token: &str, tasks: bool) -> Self {
        Self {
            client: HttpClient::new(addr, Some(token)),
            tasks,
        }
    }

    async fn send(&mut self, method: &'static str, name: &str, mut params: Value) -> (u16, Value) {
        let caps = if self.tasks {
            json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
        } else {
            json!({"elicitation": {}})
        };
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "raw-tasks", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": caps,
        });
        let body = serde_json::to_vec(&request(1, method, params)).unwrap();
        let headers = [
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", method),
            ("Mcp-Name", name),
        ];
        let reply = self.client.request("POST", &headers, &body).await;
        (reply.status, reply.rpc().unwrap())
    }

    /// Polls task `id` until its status is `status`.
    async fn until(&mut self, id: &str, status: &str) -> Value {
        loop {
            let (_, got) = self.send("tasks/get", id, json!({"taskId": id})).await;
            if got["result"]["status"] == status {
                return got;
            }
            assert_eq!(got["result"]["status"], "working", "{got}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Polls task `id` until it leaves `working`; its last state.
    async fn settled(&mut self, id: &str) -> Value {
        loop {
            let (_, got) = self.send("tasks/get", id, json!({"taskId": id})).await;
            if got["result"]["status"] != "working" {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_2026_task_rules_hold_for_task_only_tools_and_failed_runs() {
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let server = start(tmp.path(), false).await;
        let addr = server.local_addr();
        let mut plain = Modern::new(addr, ALICE, false);
        let mut tasked = Modern::new(addr, ALICE, true);
        let failing = json!({"name": "probe_task", "arguments": {"slow": false, "value": 1.0, "fail": true}});

        // A task-only tool, called by a client without the extension: the
        // missing capability, naming the extension; nothing ran.
        let (status, refused) = plain.send("tools/call", "probe_task", failing.clone()).await;
        assert_eq!(refused["error"]["code"], -32021, "{refused}");
        assert!(
            refused["error"]["data"]["requiredCapabilities"]["extensions"]
                ["io.modelcontextprotocol/tasks"]
                .is_object(),
            "{refused}"
        );
        assert_eq!(status, 400, "{refused}");
        // The positive control: with the extension it is a task.
        let (_, created) = tasked.send("tools/call", "probe_task", failing).await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();

        // A run that failed completes its task with an error result whose
        // report says how it ended (`failed` is for protocol errors).
        let done = tasked.settled(&id).await;
        assert_eq!(done["result"]["status"], "completed", "{done}");
        let result = &done["result"]["result"];
        assert_eq!(result["isError"], true, "{done}");
        assert_eq!(
            result["structuredContent"]["data"]["report"]["state"], "failed",
            "{done}"
        );

        // Cancelling an ended task is acknowledged again; it stays completed.
        for _ in 0..2 {
            let (_, ack) = tasked.send("tasks/cancel", &id, json!({"taskId": id})).await;
            assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
        }
        let (_, still) = tasked.send("tasks/get", &id, json!({"taskId": id})).await;
        assert_eq!(still["result"]["status"], "completed", "{still}");

        // An update is acknowledged, its keys ignored (a run asks nothing);
        // an unknown task is the unknown-task error, as a foreign one is.
        let update = json!({"taskId": id, "inputResponses": {"unknown-key": {"ignored": true}}});
        let (_, ack) = tasked.send("tasks/update", &id, update).await;
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
        let never = "run_AAAAAAAAAAAAAAAAAAAAAA";
        let (_, unknown) = tasked
            .send("tasks/update", never, json!({"taskId": never, "inputResponses": {}}))
            .await;
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        let mut bob = Modern::new(addr, BOB, true);
        let (_, foreign) = bob
            .send("tasks/update", &id, json!({"taskId": id, "inputResponses": {}}))
            .await;
        assert_eq!(foreign["error"], unknown["error"], "{foreign}");

        // The same failure answered synchronously is an error result too,
        // and a success is not.
        let sync_fail = json!({"name": "probe_solve", "arguments": {"slow": false, "value": 1.0, "fail": true}});
        let (_, failed) = plain.send("tools/call", "probe_solve", sync_fail).await;
        assert_eq!(failed["result"]["isError"], true, "{failed}");
        assert_eq!(
            failed["result"]["structuredContent"]["data"]["report"]["state"], "failed",
            "{failed}"
        );
        let sync_ok = json!({"name": "probe_solve", "arguments": {"slow": false, "value": 1.0}});
        let (_, ok) = plain.send("tools/call", "probe_solve", sync_ok).await;
        assert_ne!(ok["result"]["isError"], true, "{ok}");
        assert_eq!(
            ok["result"]["structuredContent"]["data"]["report"]["state"], "succeeded",
            "{ok}"
        );
        server.shutdown().await.unwrap();
    })
    .await;
}

/// A `task(detached)` tool's whole body is the task: its question is the
/// task's input request, answered by `tasks/update` from the task's own
/// caller only; a malformed answer fails the task (a protocol error); a
/// cancel request ends it; without the extension the same call asks
/// through an input-required result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_body_is_the_task_and_its_questions_are_the_tasks() {
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let server = start(tmp.path(), false).await;
        let addr = server.local_addr();
        let mut alice = Modern::new(addr, ALICE, true);
        let mut bob = Modern::new(addr, BOB, true);
        let call = json!({"name": "probe_confirmed", "arguments": {"slow": false, "value": 2.5}});
        let start = |c: Value| async move { c["result"]["taskId"].as_str().unwrap().to_owned() };

        // The positive control: without the extension, the question is an
        // input-required result of the call itself.
        let mut plain = Modern::new(addr, ALICE, false);
        let (_, asked) = plain
            .send("tools/call", "probe_confirmed", call.clone())
            .await;
        assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");

        let (_, created) = alice
            .send("tools/call", "probe_confirmed", call.clone())
            .await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        let id = start(created).await;
        let waiting = alice.until(&id, "input_required").await;
        let requests = &waiting["result"]["inputRequests"];
        assert_eq!(requests["go"]["method"], "elicitation/create", "{waiting}");

        // Another caller neither sees nor answers it.
        let (_, foreign) = bob.send("tasks/get", &id, json!({"taskId": id})).await;
        assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
        let yes = json!({"go": {"action": "accept", "content": {"ok": true}}});
        let (_, foreign) = bob
            .send(
                "tasks/update",
                &id,
                json!({"taskId": id, "inputResponses": yes}),
            )
            .await;
        assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
        // A key the task did not ask is acknowledged and ignored.
        let stray = json!({"taskId": id, "inputResponses": {"other": {"action": "accept"}}});
        let (_, ack) = alice.send("tasks/update", &id, stray).await;
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (_, still) = alice.send("tasks/get", &id, json!({"taskId": id})).await;
        assert_eq!(still["result"]["status"], "input_required", "{still}");

        // The owner's answer resumes the body, which runs the probe.
        let (_, ack) = alice
            .send(
                "tasks/update",
                &id,
                json!({"taskId": id, "inputResponses": yes}),
            )
            .await;
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
        let done = alice.until(&id, "completed").await;
        let result = &done["result"]["result"];
        assert_ne!(result["isError"], true, "{done}");
        assert!(
            result["structuredContent"].to_string().contains("2.5"),
            "{done}"
        );

        // An answer whose content breaks the form's bounds is the tool's
        // refusal (a completed task with an error result); a response that
        // is no answer of the kind asked fails the task with the protocol
        // error. Either way the body does not go on.
        for (response, status) in [
            (
                json!({"action": "accept", "content": {"ok": "yes"}}),
                "completed",
            ),
            (json!(12345), "failed"),
        ] {
            let (_, created) = alice
                .send("tools/call", "probe_confirmed", call.clone())
                .await;
            let id = start(created).await;
            alice.until(&id, "input_required").await;
            let update = json!({"taskId": id, "inputResponses": {"go": response}});
            alice.send("tasks/update", &id, update).await;
            let ended = alice.until(&id, status).await;
            if status == "failed" {
                assert_eq!(ended["result"]["error"]["code"], -32602, "{ended}");
                assert!(ended["result"].get("result").is_none(), "{ended}");
            } else {
                let refusal = &ended["result"]["result"]["structuredContent"]["error"];
                assert_eq!(refusal["kind"], "answer_refused", "{ended}");
                assert!(
                    !ended.to_string().contains("yes"),
                    "the answer is not echoed: {ended}"
                );
            }
        }

        // A body that panics fails its task with the fixed internal error
        // (a protocol error): the panic's text is never sent.
        let panics = json!({"name": "probe_panics", "arguments": {}});
        let (_, created) = alice.send("tools/call", "probe_panics", panics).await;
        let id = start(created).await;
        let failed = alice.until(&id, "failed").await;
        assert_eq!(failed["result"]["error"]["code"], -32603, "{failed}");
        assert!(!failed.to_string().contains("deliberate"), "{failed}");

        // A cancel request ends a waiting body for good.
        let (_, created) = alice.send("tools/call", "probe_confirmed", call).await;
        let id = start(created).await;
        alice.until(&id, "input_required").await;
        let (_, ack) = alice.send("tasks/cancel", &id, json!({"taskId": id})).await;
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (_, cancelled) = alice.send("tasks/get", &id, json!({"taskId": id})).await;
        assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
        server.shutdown().await.unwrap();
    })
    .await;
}

/// A task-only tool on a server that never serves its tasks (a server
/// mistake) is an internal error, not the client's missing capability.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_only_tool_without_served_tasks_is_the_servers_fault() {
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let server = start_serving(tmp.path(), false, false).await;
        let mut tasked = Modern::new(server.local_addr(), ALICE, true);
        let call = json!({"name": "probe_task", "arguments": {"slow": false, "value": 1.0}});
        let (_, answer) = tasked.send("tools/call", "probe_task", call).await;
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert_eq!(
            answer["result"]["structuredContent"]["error"]["kind"], "internal",
            "{answer}"
        );
        server.shutdown().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sessions_no_2025_task_support_is_declared() {
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let server = start(tmp.path(), false).await;
        let mut c = HttpClient::new(server.local_addr(), Some(ALICE));
        let init = c.post(&initialize(V2025, json!({}))).await;
        assert_eq!(init.status, 200, "{}", init.text());
        let init = init.rpc().unwrap();
        // The era of a later request is unknown without a session: a client
        // is not told of methods it could not be answered in its shapes.
        assert!(
            init["result"]["capabilities"].get("tasks").is_none(),
            "{init}"
        );
        // No adapter renames here, and a client cannot name the adapter's
        // private methods itself: they are unknown (the 2025 session test
        // above is the positive control of the renamed path).
        for (id, method) in [
            (2, "dev.hardened-mcp/2025/tasks/list"),
            (3, "dev.hardened-mcp/2025/tools/call"),
        ] {
            let params = json!({"name": "probe_solve", "arguments": {"slow": false, "value": 1.0}});
            let reply = c.post(&request(id, method, params)).await;
            let reply = reply.rpc().unwrap();
            assert_eq!(reply["error"]["code"], -32601, "{reply}");
            assert_eq!(reply["error"]["message"], "Method not found", "{reply}");
        }
        server.shutdown().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_drives_a_task_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path(), true).await;
    let url = format!("http://127.0.0.1:{}/mcp", server.local_addr().port());
    let plan = json!({
        "tool": "probe_solve",
        "arguments": {"slow": false, "value": 7.0},
        "long_arguments": {"slow": true, "value": 1.0},
    });
    let report =
        tokio::task::spawn_blocking(move || run_ts_task("tasks over http", &plan, &url, &[ALICE]))
            .await
            .unwrap();
    if let Some(report) = report {
        assert_eq!(report["ok"], true, "{report}");
        assert_eq!(report["result"]["data"]["result"]["value"], 7.0, "{report}");
    }
    server.shutdown().await.unwrap();
}
