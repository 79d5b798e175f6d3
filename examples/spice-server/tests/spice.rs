//! The SPICE server against the real ngspice, through an MCP client session
//! (the hardened stdio transport on an in-memory pipe): every template
//! checked against its analytic answer, hostile inputs refused without
//! echo, the plot decoded, and a looping netlist stopped by the wall limit
//! with no process left.
//!
//! Without ngspice these tests say so and pass, except where
//! `HARDENED_MCP_REQUIRE_NGSPICE` is set (CI sets it): there they fail.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::f64::consts::PI;
use std::time::Duration;

use hardened_mcp::identity::CallerId;
use hardened_mcp::runs::{FileName, RunRoot};
use hardened_mcp::sandbox::{Limits, RunRequest};
use hardened_mcp::transport::HardenedStdio;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use spice_server::{app, circuit};
use tokio_util::sync::CancellationToken;

type Client = RunningService<RoleClient, ClientConfig>;

struct Session {
    client: Client,
    _tmp: tempfile::TempDir,
}

async fn session() -> Session {
    // The server's warnings (why a raw file was refused, why a run failed)
    // go to the test's captured output: shown when a test fails.
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_ansi(false)
        .with_max_level(tracing_subscriber::filter::LevelFilter::WARN)
        .try_init();
    let tmp = tempfile::tempdir().unwrap();
    let server = app::build_at(&tmp.path().join("runs")).unwrap();
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(HardenedStdio::new(sr, sw)).await {
            let _ = running.waiting().await;
        }
    });
    let (cr, cw) = tokio::io::split(client_io);
    let client = ClientConfig::default().serve((cr, cw)).await.unwrap();
    Session { client, _tmp: tmp }
}

async fn call(s: &Session, name: &'static str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("object")
    };
    tokio::time::timeout(
        Duration::from_secs(60),
        s.client
            .call_tool(CallToolRequestParams::new(name).with_arguments(args)),
    )
    .await
    .expect("answer within 60 s")
    .unwrap()
}

async fn ok(s: &Session, name: &'static str, args: Value) -> Value {
    let r = call(s, name, args).await;
    assert_ne!(r.is_error, Some(true), "{name}: {:?}", r.structured_content);
    r.structured_content.unwrap()["data"].clone()
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rc_lowpass_cutoff_matches_one_over_two_pi_rc() {
    if !support::ngspice_present() {
        return;
    }
    let s = session().await;
    for (r, c, ppd) in [(1e3, 100e-9, 50u32), (47.0, 2.2e-6, 20), (1e6, 1e-12, 100)] {
        let v = ok(
            &s,
            "spice_ac",
            json!({"template": "rc_lowpass", "resistance": r, "capacitance": c,
                   "f_start": 1.0, "f_stop": 1e9, "points_per_decade": ppd}),
        )
        .await;
        let fc = 1.0 / (2.0 * PI * r * c);
        let got = num(&v["figures"]["f_3db_high"]);
        // Within the sweep's resolution: one grid step.
        let step = 10f64.powf(1.0 / f64::from(ppd));
        assert!(
            got / fc < step && fc / got < step,
            "R={r} C={c}: {got} vs {fc}"
        );
        assert!(num(&v["figures"]["peak_gain_db"]).abs() < 0.01);
        assert_eq!(v["total_points"], 9 * ppd + 1, "nine decades");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn series_rlc_resonates_at_one_over_two_pi_root_lc() {
    if !support::ngspice_present() {
        return;
    }
    let s = session().await;
    for (r, l, c) in [(10.0, 1e-3, 1e-6), (50.0, 10e-6, 100e-12f64)] {
        let v = ok(
            &s,
            "spice_ac",
            json!({"template": "series_rlc", "resistance": r, "inductance": l, "capacitance": c,
                   "f_start": 10.0, "f_stop": 1e10, "points_per_decade": 100}),
        )
        .await;
        let f0 = 1.0 / (2.0 * PI * (l * c).sqrt());
        let got = num(&v["figures"]["peak_frequency"]);
        let step = 10f64.powf(1.0 / 100.0);
        assert!(got / f0 < step && f0 / got < step, "{got} vs {f0}");
        // At resonance the whole source voltage is across R: 0 dB.
        assert!(num(&v["figures"]["peak_gain_db"]).abs() < 0.05);
        // Bandwidth R/(2πL) between the two −3 dB points.
        let bw = num(&v["figures"]["f_3db_high"]) - num(&v["figures"]["f_3db_low"]);
        let want = r / (2.0 * PI * l);
        assert!((bw / want - 1.0).abs() < 0.05, "bandwidth {bw} vs {want}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rc_step_rise_time_is_rc_ln_nine() {
    if !support::ngspice_present() {
        return;
    }
    let s = session().await;
    let (r, c) = (2.2e3, 470e-9);
    let tau = r * c;
    let v = ok(
        &s,
        "spice_tran",
        json!({"template": "rc_lowpass", "resistance": r, "capacitance": c, "amplitude": 2.0,
               "t_step": tau / 100.0, "t_stop": 10.0 * tau}),
    )
    .await;
    let rise = num(&v["figures"]["rise_time"]);
    assert!((rise / (tau * 9f64.ln()) - 1.0).abs() < 0.01, "{rise}");
    assert!((num(&v["figures"]["final_value"]) - 2.0).abs() < 2e-3);
    assert!(num(&v["figures"]["overshoot"]) < 1e-3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diode_clipper_follows_the_diode_equation() {
    if !support::ngspice_present() {
        return;
    }
    let s = session().await;
    for (a, r) in [(5.0, 1e3), (12.0, 10e3), (0.2, 1e3), (-3.0, 1e3)] {
        let v = ok(
            &s,
            "spice_op",
            json!({"template": "diode_clipper", "resistance": r, "amplitude": a}),
        )
        .await;
        let want = circuit::clipper_op(a, r);
        let got = num(&v["v_out"]);
        assert!(
            (got - want).abs() < 1e-4 * want.abs().max(1e-3),
            "A={a}: {got} vs {want}"
        );
    }
    // Transient: the positive half clipped near 0.7 V, the negative passes.
    let v = ok(
        &s,
        "spice_tran",
        json!({"template": "diode_clipper", "resistance": 1e3, "amplitude": 5.0,
               "t_step": 1e-5, "t_stop": 2e-3, "max_points": 10000}),
    )
    .await;
    let outs: Vec<f64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| num(&p["v_out"]))
        .collect();
    let max = outs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = outs.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(max > 0.6 && max < 0.85, "clipped at {max}");
    assert!(min < -4.9, "negative swing {min}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plot_is_a_png_and_delete_forgets_the_run() {
    if !support::ngspice_present() {
        return;
    }
    let s = session().await;
    let v = ok(
        &s,
        "spice_ac",
        json!({"template": "rc_lowpass", "resistance": 1e3, "f_start": 10.0, "f_stop": 1e6}),
    )
    .await;
    let handle = v["run_handle"].as_str().unwrap().to_owned();
    let r = call(&s, "spice_plot", json!({"run": handle})).await;
    let image = r
        .content
        .iter()
        .find_map(|c| c.as_image())
        .expect("image content");
    assert_eq!(image.mime_type, "image/png");
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD
        .decode(&image.data)
        .unwrap();
    // The gain curve (blue) and its -3 dB marker (a dark ring) are drawn.
    let rgb = pixels(&png);
    assert!(
        count(&rgb, |p| p[2] > 150 && p[0] < 80) > 300,
        "no gain curve"
    );
    ok(&s, "spice_delete", json!({"run": handle})).await;
    // A transient: v(out) in red over the source.
    let v = ok(
        &s,
        "spice_tran",
        json!({"template": "rc_lowpass", "resistance": 1e3, "capacitance": 1e-6,
               "t_step": 1e-5, "t_stop": 5e-3}),
    )
    .await;
    let tran = v["run_handle"].as_str().unwrap().to_owned();
    let r = call(&s, "spice_plot", json!({"run": tran})).await;
    let image = r
        .content
        .iter()
        .find_map(|c| c.as_image())
        .expect("image content");
    let rgb = pixels(
        &base64::engine::general_purpose::STANDARD
            .decode(&image.data)
            .unwrap(),
    );
    assert!(
        count(&rgb, |p| p[0] > 150 && p[1] < 90 && p[2] < 90) > 300,
        "no v(out) curve"
    );
    ok(&s, "spice_delete", json!({"run": tran})).await;
    let r = call(&s, "spice_plot", json!({"run": handle})).await;
    assert_eq!(r.is_error, Some(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_files_are_resources_of_its_caller_and_linked_from_its_answer() {
    if !support::ngspice_present() {
        return;
    }
    use rmcp::model::{ReadResourceRequestParams, ResourceContents};
    let s = session().await;
    let templates = s.client.list_all_resource_templates().await.unwrap();
    let mut uris: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    uris.sort_unstable();
    assert_eq!(
        uris,
        [
            "spice://runs/{run_handle}/circuit.cir",
            "spice://runs/{run_handle}/result.raw",
            "spice://runs/{run_handle}/stdout.log"
        ]
    );
    let r = call(
        &s,
        "spice_ac",
        json!({"template": "rc_lowpass", "resistance": 1e3, "f_start": 10.0, "f_stop": 1e6,
               "max_points": 5}),
    )
    .await;
    let data = &r.structured_content.as_ref().unwrap()["data"];
    let handle = data["run_handle"].as_str().unwrap();
    let link = r
        .content
        .iter()
        .find_map(|c| c.as_resource_link())
        .expect("a resource link");
    assert_eq!(link.uri, format!("spice://runs/{handle}/result.raw"));
    let text = |uri: String| async {
        let read = s
            .client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await;
        match read.map(|r| r.contents.into_iter().next()) {
            Ok(Some(ResourceContents::TextResourceContents { text, .. })) => Ok(text),
            other => Err(format!("{other:?}")),
        }
    };
    // Every point of the sweep, where the answer holds five.
    let raw = text(link.uri.clone()).await.unwrap();
    assert!(raw.contains("AC Analysis"), "{raw:.200}");
    let points = raw.lines().find_map(|l| l.strip_prefix("No. Points:"));
    assert_eq!(
        points.map(str::trim),
        Some(data["total_points"].to_string().as_str())
    );
    let netlist = text(format!("spice://runs/{handle}/circuit.cir"))
        .await
        .unwrap();
    assert!(netlist.contains(".ac dec"), "{netlist}");
    // A run that is not there: the one unknown-resource answer.
    let forged = format!("spice://runs/{}/result.raw", "A".repeat(handle.len()));
    assert!(text(forged).await.is_err());
    ok(&s, "spice_delete", json!({"run": handle})).await;
    assert!(text(link.uri.clone()).await.is_err(), "deleted");
}

/// A 2026-07-28 client that takes tasks gets an AC sweep as a task over
/// HTTP: the whole analysis (figures and decimated points included) is
/// its result; a client that does not gets the plain answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ac_sweep_is_a_task_for_a_client_that_takes_them() {
    use hardened_mcp::transport::{HttpConfig, HttpServer};
    use hardened_mcp_tests::tr_support::{HttpClient, MODERN_VERSION};
    if !support::ngspice_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let server = app::build_at(&tmp.path().join("runs")).unwrap();
    let config = HttpConfig::new().sse_keep_alive(None);
    let running = HttpServer::new(move || Ok(server.clone()), config)
        .unwrap()
        .start(CancellationToken::new())
        .await
        .unwrap();
    let mut client = HttpClient::new(running.local_addr(), None);
    let mut send = async |method: &str, name: &str, mut params: Value, tasks: bool| {
        let extensions = if tasks {
            json!({"io.modelcontextprotocol/tasks": {}})
        } else {
            json!({})
        };
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "spice-tasks", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let headers = [
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", method),
            ("Mcp-Name", name),
        ];
        let reply = client
            .request("POST", &headers, &serde_json::to_vec(&body).unwrap())
            .await;
        reply.rpc().unwrap()["result"].clone()
    };
    let sweep = json!({"name": "spice_ac", "arguments": {"template": "rc_lowpass",
        "resistance": 1e3, "f_start": 10.0, "f_stop": 1e6, "points_per_decade": 100,
        "max_points": 5}});
    let created = send("tools/call", "spice_ac", sweep.clone(), true).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let done = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let got = send("tasks/get", &id, json!({"taskId": id}), true).await;
            if got["status"] != "working" {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the task ends within 60 s");
    assert_eq!(done["status"], "completed", "{done}");
    let data = &done["result"]["structuredContent"]["data"];
    assert_eq!(data["points"].as_array().map(Vec::len), Some(5), "{done}");
    let f_3db = num(&data["figures"]["f_3db_high"]);
    let expected = 1.0 / (2.0 * PI * 1e3 * 1e-6);
    // Within one grid step (a hundred points a decade).
    assert!(
        (f_3db / expected - 1.0).abs() < 0.03,
        "{f_3db} vs {expected}"
    );
    // The positive control: without the extension, the plain answer.
    let plain = send("tools/call", "spice_ac", sweep, false).await;
    assert_ne!(plain["resultType"], "task", "{plain}");
    assert_eq!(
        plain["structuredContent"]["data"]["points"]
            .as_array()
            .map(Vec::len),
        Some(5)
    );
    running.shutdown().await.unwrap();
}

/// Hostile values: each refused with a fixed error that echoes nothing of
/// the caller, and no simulation runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_inputs_are_refused_without_echo() {
    if !support::ngspice_present() {
        return;
    }
    let s = session().await;
    const CANARY: &str = "CANARY7781";
    let base = json!({"template": "rc_lowpass", "resistance": 1e3, "f_start": 10.0, "f_stop": 1e6});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    let injections = [
        format!(".include /etc/passwd {CANARY}"),
        format!(".control\nshell touch {CANARY}\n.endc"),
        format!("x\n.shell {CANARY}"),
        format!("+ {CANARY}"),
        format!("* {CANARY}"),
    ];
    let mut cases: Vec<(&'static str, Value)> = vec![
        ("spice_ac", with("resistance", json!(0.0))),
        ("spice_ac", with("resistance", json!(1e10))),
        ("spice_ac", with("resistance", json!("NaN"))),
        ("spice_ac", with("resistance", json!(true))),
        ("spice_ac", with("f_start", json!(1e7))),
        ("spice_ac", with("points_per_decade", json!(2.5))),
        ("spice_ac", with("capacitance", json!(-1e-6))),
        (
            "spice_tran",
            json!({"template": "rc_lowpass", "resistance": 1e3, "t_step": 1e-3, "t_stop": 1e-4}),
        ),
        (
            "spice_tran",
            json!({"template": "rc_lowpass", "resistance": 1e3, "t_step": 1e-12, "t_stop": 1.0}),
        ),
        (
            "spice_op",
            json!({"template": "rc_lowpass", "resistance": 1e3, "amplitude": 1e4}),
        ),
        ("spice_plot", json!({"run": format!("../{CANARY}")})),
        (
            "spice_plot",
            json!({"run": format!("spice_{CANARY}aaaaaaaaaaaaaaaaaaaaaaaa")}),
        ),
    ];
    for inj in &injections {
        cases.push(("spice_ac", with("template", json!(inj))));
        cases.push(("spice_ac", with("title", json!(inj))));
        cases.push(("spice_ac", with(inj, json!(1.0))));
    }
    for (tool, args) in cases {
        let r = call(&s, tool, args.clone()).await;
        assert_eq!(r.is_error, Some(true), "{tool} accepted {args}");
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains(CANARY), "{tool} echoed the canary: {text}");
        assert!(!text.contains("/etc/passwd"), "{text}");
    }
    // Nothing ran: every refusal came before a run directory was made.
    let root = RunRoot::open(s._tmp.path().join("runs")).unwrap();
    assert!(root.list(&CallerId::local()).unwrap().is_empty());
}

/// A netlist that loops forever (a `.control` block the deck writer can
/// never produce, written here by hand) is stopped by the wall-time limit
/// and leaves no ngspice process behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_ngspice_is_stopped_by_the_wall_limit() {
    if !support::ngspice_present() {
        return;
    }
    let sandbox = app::sandbox().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = RunRoot::open(tmp.path().join("runs")).unwrap();
    let who = CallerId::local();
    let (_h, run) = root.create(&who).unwrap();
    let deck = FileName::new("loop.cir").unwrap();
    run.write_atomic(
        &deck,
        b"loop\nV1 a 0 1\nR1 a 0 1\n.control\nlet i = 0\nwhile 1 > 0\nlet i = i + 1\nend\n.endc\n.end\n",
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let o = sandbox
        .run(
            &who,
            &run,
            RunRequest::new("ngspice")
                .args(["-b", "loop.cir"])
                .limits(Limits {
                    wall_time: Duration::from_secs(2),
                    ..Limits::default()
                }),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(o.timed_out, "{o:?}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    // No ngspice process is left anywhere on the host.
    let left: Vec<_> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim_end() == "ngspice")
        })
        .collect();
    assert!(left.is_empty(), "ngspice processes left: {}", left.len());
}

/// Decodes a plot: an 8-bit RGB PNG of the fixed size, neither blank nor
/// all ink. Returns its pixels.
fn pixels(png: &[u8]) -> Vec<u8> {
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (800, 500));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    let ink = count(&buf, |p| p.iter().any(|&c| c < 200));
    let total = buf.len() / 3;
    assert!(
        ink > total / 100 && ink < total / 2,
        "{ink} of {total} pixels drawn"
    );
    buf
}

fn count(rgb: &[u8], f: impl Fn(&[u8]) -> bool) -> usize {
    rgb.chunks(3).filter(|p| f(p)).count()
}
