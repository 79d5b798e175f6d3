//! Calls per second of the quickstart's two tools over streamable HTTP,
//! served by the framework (`HttpServer`, defaults: the Host/Origin gate,
//! connection admission, body screening, the strict parser and
//! revalidation) and by plain rmcp (`StreamableHttpService` under
//! `axum::serve`, `TCP_NODELAY` set, the same tools as rmcp `#[tool]`s),
//! side by side in one run: 1, 8 and 32 keep-alive connections, answers
//! as event streams and as JSON bodies, in a 2025-11-25 session and as
//! 2026-07-28 requests. Every answer is checked. Prints a table of
//! calls/s and the server CPU time per call of each side (the CPU time of
//! the threads of the runtime serving it, from `/proc/self/task/*/schedstat`),
//! their ratios hardened / plain, and each side's `write` system calls per
//! call (socket writes and wake-ups of parked workers, from
//! `/proc/self/task/*/io`).
//!
//! Client and servers share this process and the machine's cores: the
//! client's own work is the same for both sides, so it narrows the ratio
//! of calls/s; the CPU time per call is each server's alone, and holds
//! steadier on a busy machine.
//!
//! `cargo bench --profile release -p beam-server --bench http`
//! (`-- 2` for a window of 2 s per measurement; default 1 s; words
//! choose the lines: `-- stateless json` measures only 2026-07-28 calls
//! answered as JSON). Each line is the median of five paired rounds,
//! alternately first.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hardened_mcp::prelude::*;
use hardened_mcp::transport::{HttpConfig, HttpServer};
use hardened_mcp_tests::keep_alive::KeepAlive;
use hardened_mcp_tests::tr_support::{
    call, initialize_request, initialized_notification, modern_call, modern_headers,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

// The quickstart's own tools, as `src/main.rs` declares them (its `main`
// unused here; its unit tests' module compiled without its tests).
#[path = "../src/main.rs"]
#[allow(dead_code, unused_imports)]
mod quickstart;

#[derive(Debug, Clone, Copy, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum PlainSupport {
    SimplySupported,
    Cantilever,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct DeflectionArgs {
    support: Option<PlainSupport>,
    length_m: f64,
    load_n: f64,
    modulus_gpa: f64,
    inertia_cm4: f64,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct StressArgs {
    support: Option<PlainSupport>,
    length_m: f64,
    load_n: f64,
    width_mm: f64,
    height_mm: f64,
}

#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct PlainDeflection {
    deflection_mm: f64,
    span_ratio: f64,
}

#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct PlainStress {
    moment_knm: f64,
    stress_mpa: f64,
}

/// The quickstart's tools on plain rmcp: the same formulas, serde's
/// parsing, no bounds.
#[derive(Clone)]
struct PlainBeam {
    tool_router: ToolRouter<Self>,
}

#[rmcp::tool_router]
impl PlainBeam {
    #[rmcp::tool(description = "Largest deflection of a beam under one point load")]
    async fn beam_deflection(
        &self,
        Parameters(a): Parameters<DeflectionArgs>,
    ) -> Json<PlainDeflection> {
        let k = match a.support.unwrap_or(PlainSupport::SimplySupported) {
            PlainSupport::SimplySupported => 48.0,
            PlainSupport::Cantilever => 3.0,
        };
        let ei = a.modulus_gpa * 1e9 * a.inertia_cm4 * 1e-8;
        let d = a.load_n * a.length_m.powi(3) / (k * ei);
        Json(PlainDeflection {
            deflection_mm: d * 1e3,
            span_ratio: d / a.length_m,
        })
    }

    #[rmcp::tool(description = "Largest bending stress in a rectangular beam")]
    async fn beam_stress(&self, Parameters(a): Parameters<StressArgs>) -> Json<PlainStress> {
        let moment = match a.support.unwrap_or(PlainSupport::SimplySupported) {
            PlainSupport::SimplySupported => a.load_n * a.length_m / 4.0,
            PlainSupport::Cantilever => a.load_n * a.length_m,
        };
        let (b, h) = (a.width_mm * 1e-3, a.height_mm * 1e-3);
        Json(PlainStress {
            moment_knm: moment / 1e3,
            stress_mpa: moment / (b * h * h / 6.0) / 1e6,
        })
    }
}

#[rmcp::tool_handler(router = self.tool_router)]
impl rmcp::ServerHandler for PlainBeam {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// How answers travel.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Stream,
    Json,
}

/// How requests are made.
#[derive(Debug, Clone, Copy)]
enum Era {
    /// A 2025-11-25 session (`initialize`, then calls with its id).
    Session,
    /// 2026-07-28 requests: no handshake, the version in every request.
    Stateless,
}

async fn hardened(mode: Mode, ct: &CancellationToken) -> SocketAddr {
    // Every connection of the bench is the same local caller from one
    // address: its ceilings are raised to hold them all.
    let config = HttpConfig::new()
        .sse_keep_alive(None)
        .max_sessions_per_caller(256)
        .max_connections_per_peer(256)
        .json_response(matches!(mode, Mode::Json));
    let server = Server::new(
        "beam",
        "0",
        quickstart::Beam,
        quickstart::Beam::hardened_tool_router(),
    );
    let running = HttpServer::new(move || Ok(server.clone()), config)
        .unwrap()
        .start(ct.child_token())
        .await
        .unwrap();
    running.local_addr()
}

async fn plain(mode: Mode, ct: &CancellationToken) -> SocketAddr {
    use axum::serve::ListenerExt as _;
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(ct.child_token())
        .with_sse_keep_alive(None)
        .with_json_response(matches!(mode, Mode::Json));
    let service = StreamableHttpService::new(
        || {
            Ok(PlainBeam {
                tool_router: PlainBeam::tool_router(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let stop = ct.clone();
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
            .unwrap();
    });
    addr
}

/// The `i`-th call: the two tools in turn, with arguments that vary.
fn request(era: Era, id: i64) -> (Vec<u8>, &'static str, &'static str) {
    let x = 1.0 + (id % 50) as f64 / 10.0;
    let (tool, args, key) = if id % 2 == 0 {
        (
            "beam_deflection",
            json!({"length_m": x, "load_n": 1e4, "modulus_gpa": 200.0, "inertia_cm4": 8356.0}),
            "deflection_mm",
        )
    } else {
        (
            "beam_stress",
            json!({"support": "cantilever", "length_m": x, "load_n": 1e4,
                   "width_mm": 100.0, "height_mm": 300.0}),
            "stress_mpa",
        )
    };
    let message = match era {
        Era::Session => call(id, tool, args),
        Era::Stateless => modern_call(id, tool, args),
    };
    (serde_json::to_vec(&message).unwrap(), tool, key)
}

/// Paired measurements per configuration; the table shows their medians.
const ROUNDS: usize = 5;

/// One connection calling for `window`; returns the calls answered.
async fn caller(addr: SocketAddr, era: Era, window: Duration) -> u64 {
    let mut conn = KeepAlive::connect(addr, None).await.unwrap();
    if let Era::Session = era {
        let body = serde_json::to_vec(&initialize_request(1)).unwrap();
        assert_eq!(conn.post(&[], &body).await.unwrap().status, 200);
        let body = serde_json::to_vec(&initialized_notification()).unwrap();
        assert_eq!(conn.post(&[], &body).await.unwrap().status, 202);
    }
    let started = Instant::now();
    let mut done = 0u64;
    let mut id = 2i64;
    while started.elapsed() < window {
        let (body, tool, key) = request(era, id);
        let headers = match era {
            Era::Session => vec![],
            Era::Stateless => modern_headers("tools/call", Some(tool)),
        };
        let reply = conn.post(&headers, &body).await.unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text());
        let rpc: Value = reply.rpc().unwrap();
        assert_eq!(rpc["id"], json!(id), "{rpc}");
        // The framework's answers put the tool's output under `data`.
        let out = &rpc["result"]["structuredContent"];
        assert!(
            out[key].is_number() || out["data"][key].is_number(),
            "{rpc}"
        );
        assert_ne!(rpc["result"]["isError"], json!(true), "{rpc}");
        id += 1;
        done += 1;
    }
    done
}

/// What one side did in one measurement.
struct Measured {
    calls_per_second: f64,
    /// CPU time of the serving runtime's threads per call.
    server_cpu_per_call: Duration,
    /// `write` system calls of the serving runtime's threads per call:
    /// its socket writes and its wake-ups of parked workers (`eventfd`).
    writes_per_call: f64,
}

async fn measure(side: &Side, era: Era, connections: usize, window: Duration) -> Measured {
    let before = side.usage();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        tasks.spawn(caller(side.addr, era, window));
    }
    let mut total = 0;
    while let Some(n) = tasks.join_next().await {
        total += n.unwrap();
    }
    let elapsed = started.elapsed();
    let after = side.usage();
    let calls = total.max(1);
    Measured {
        calls_per_second: total as f64 / elapsed.as_secs_f64(),
        server_cpu_per_call: after.cpu.saturating_sub(before.cpu)
            / u32::try_from(calls).unwrap_or(u32::MAX),
        writes_per_call: after.writes.saturating_sub(before.writes) as f64 / calls as f64,
    }
}

/// One server and the runtime it runs on.
struct Side {
    runtime: tokio::runtime::Runtime,
    /// The name of the runtime's threads.
    threads: &'static str,
    addr: SocketAddr,
}

impl Side {
    /// A runtime whose threads are named `threads`, and the server `serve`
    /// starts on it.
    fn start<F>(threads: &'static str, serve: F) -> Self
    where
        F: std::future::Future<Output = SocketAddr>,
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(threads)
            .enable_all()
            .build()
            .unwrap();
        let addr = runtime.block_on(serve);
        Self {
            runtime,
            threads,
            addr,
        }
    }

    /// The CPU time the threads of this side's runtime have had so far
    /// (the first field of each thread's `schedstat`, in nanoseconds) and
    /// the `write` system calls they made (`syscw` of their `io`; reads
    /// from sockets are not counted there).
    fn usage(&self) -> Usage {
        let mut total = Usage::default();
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() != self.threads {
                continue;
            }
            let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            total.cpu += Duration::from_nanos(
                stat.split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0),
            );
            let io = std::fs::read_to_string(task.path().join("io")).unwrap_or_default();
            total.writes += io
                .lines()
                .find_map(|l| l.strip_prefix("syscw:"))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        total
    }
}

/// What a side's threads have used so far.
#[derive(Default)]
struct Usage {
    cpu: Duration,
    writes: u64,
}

fn main() {
    // `cargo bench` passes `--bench`; `--list` runs nothing.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let window = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<u64>().ok())
        .map_or(Duration::from_secs(1), Duration::from_secs);
    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-client")
        .enable_all()
        .build()
        .unwrap();
    println!(
        "era | answers | connections | hardened calls/s | plain rmcp calls/s | ratio | \
         hardened server CPU/call | plain server CPU/call | ratio | \
         hardened writes/call | plain writes/call"
    );
    println!("---|---|---|---|---|---|---|---|---|---|---");
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-') && a.parse::<u64>().is_err())
        .collect();
    for era in [Era::Session, Era::Stateless] {
        for mode in [Mode::Stream, Mode::Json] {
            let names = [format!("{era:?}"), format!("{mode:?}")];
            if !only
                .iter()
                .all(|o| names.iter().any(|n| n.eq_ignore_ascii_case(o)))
            {
                continue;
            }
            let ct = CancellationToken::new();
            let ours = Side::start("bench-hardened", hardened(mode, &ct));
            let theirs = Side::start("bench-plain", plain(mode, &ct));
            client.block_on(async {
                // Warm both up (allocations, the first sessions).
                measure(&ours, era, 8, window / 4).await;
                measure(&theirs, era, 8, window / 4).await;
                for connections in [1, 8, 32] {
                    // Paired rounds, alternately first: a disturbance of
                    // the machine hits both sides of a round alike.
                    let mut rounds = Vec::new();
                    for round in 0..ROUNDS {
                        let (h, p) = if round % 2 == 1 {
                            let p = measure(&theirs, era, connections, window).await;
                            (measure(&ours, era, connections, window).await, p)
                        } else {
                            let h = measure(&ours, era, connections, window).await;
                            (h, measure(&theirs, era, connections, window).await)
                        };
                        rounds.push((h, p));
                    }
                    let median = |f: &dyn Fn(&(Measured, Measured)) -> f64| {
                        let mut v: Vec<f64> = rounds.iter().map(f).collect();
                        v.sort_by(f64::total_cmp);
                        v[v.len() / 2]
                    };
                    let cpu = |m: &Measured| m.server_cpu_per_call.as_secs_f64() * 1e6;
                    println!(
                        "{era:?} | {mode:?} | {connections} | {:.0} | {:.0} | {:.2} | {:.1} µs | {:.1} µs | {:.2} | {:.2} | {:.2}",
                        median(&|(h, _)| h.calls_per_second),
                        median(&|(_, p)| p.calls_per_second),
                        median(&|(h, p)| h.calls_per_second / p.calls_per_second),
                        median(&|(h, _)| cpu(h)),
                        median(&|(_, p)| cpu(p)),
                        median(&|(h, p)| cpu(h) / cpu(p)),
                        median(&|(h, _)| h.writes_per_call),
                        median(&|(_, p)| p.writes_per_call),
                    );
                }
            });
            ct.cancel();
            ours.runtime.shutdown_timeout(Duration::from_secs(5));
            theirs.runtime.shutdown_timeout(Duration::from_secs(5));
        }
    }
}
