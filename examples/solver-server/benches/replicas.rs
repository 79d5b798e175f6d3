//! Calls per second of one status tool through 1, 2 and 3 replicas over
//! HTTP, against as many plain rmcp streamable-HTTP servers, measured in the
//! same run.
//!
//! The hardened side is the real `heat_status` of the solver server: each
//! replica is a server built as `solver-server serve --http` builds it
//! (`app::build`: its own run root handle, job service and sandbox) over
//! one shared run root, behind bearer tokens. The plain side is the same
//! status work as a plain rmcp `#[tool]` (no authentication, no framework
//! layer) on rmcp's `StreamableHttpService` under `axum::serve`, each
//! server opening the same root. `CALLERS` callers, each with a session on
//! every replica, call in turn through the replicas (a fresh connection per
//! call, as a client behind a load balancer without keep-alive would), for
//! `WINDOW` per configuration. Every call is checked.
//!
//! The replicas share this process, and this machine has two cores: more
//! replicas cannot add CPU here. What the numbers show is the cost per
//! call of replicas sharing one root (its index, owner records and leases
//! read from disk by every replica) against the plain baseline.
//!
//! `cargo bench --profile release -p solver-server --bench replicas`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hardened_mcp::identity::CallerId;
use hardened_mcp::runs::RunRoot;
use hardened_mcp::transport::RunningHttpServer;
use hardened_mcp_tests::tr_support::{HttpClient, call};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[path = "../tests/support/http_fixture.rs"]
#[allow(dead_code)]
mod http_fixture;
#[path = "support/plain_status.rs"]
mod plain_status;
use plain_status::PlainStatus;

use http_fixture::ALICE;
const CALLERS: usize = 8;
const WINDOW: Duration = Duration::from_secs(3);

/// The replicas of one side: their addresses and how to call the tool.
struct Side {
    addrs: Vec<SocketAddr>,
    token: Option<&'static str>,
    tool: &'static str,
    handle: String,
}

/// `n` hardened replicas over `root`.
async fn hardened(root: &std::path::Path, n: usize) -> (Vec<RunningHttpServer>, Side) {
    let mut servers = Vec::new();
    for _ in 0..n {
        let (server, _containment) = http_fixture::serve(root).await;
        servers.push(server);
    }
    // One finished run of alice's, started through the first replica.
    let mut alice = HttpClient::new(servers[0].local_addr(), Some(ALICE));
    alice.connect().await;
    let dx = 1.0 / 64.0;
    let start =
        json!({"cells": 64, "steps": 100, "length": 1.0, "diffusivity": 1.0, "dt": 0.4 * dx * dx});
    let reply = alice.post(&call(2, "heat_start", start)).await;
    let rpc = reply.rpc().unwrap();
    let handle = rpc["result"]["structuredContent"]["data"]["run_handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let addrs = servers.iter().map(RunningHttpServer::local_addr).collect();
    let side = Side {
        addrs,
        token: Some(ALICE),
        tool: "heat_status",
        handle,
    };
    (servers, side)
}

/// `n` plain rmcp servers over `root`.
async fn plain(root: &std::path::Path, n: usize) -> (Vec<CancellationToken>, Side) {
    let mut stops = Vec::new();
    let mut addrs = Vec::new();
    let first = RunRoot::open(root).unwrap();
    let (handle, _) = first.create(&CallerId::local()).unwrap();
    for _ in 0..n {
        let runs = RunRoot::open(root).unwrap();
        let status = PlainStatus::new(runs);
        let ct = CancellationToken::new();
        let config = StreamableHttpServerConfig::default()
            .with_cancellation_token(ct.child_token())
            .with_sse_keep_alive(None);
        let service = StreamableHttpService::new(
            move || Ok(status.clone()),
            std::sync::Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        addrs.push(listener.local_addr().unwrap());
        let stop = ct.clone();
        tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
                .unwrap();
        });
        stops.push(ct);
    }
    let side = Side {
        addrs,
        token: None,
        tool: "status",
        handle: handle.to_string(),
    };
    (stops, side)
}

/// Calls completed in `WINDOW` by `CALLERS` callers, each going round the
/// replicas; every reply is checked.
async fn calls_per_second(side: &Side) -> f64 {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for caller in 0..CALLERS {
        let mut clients = Vec::new();
        for addr in &side.addrs {
            let mut c = HttpClient::new(*addr, side.token);
            c.connect().await;
            clients.push(c);
        }
        let (tool, handle) = (side.tool, side.handle.clone());
        tasks.spawn(async move {
            let mut done = 0u64;
            let mut i = caller;
            while started.elapsed() < WINDOW {
                let at = i % clients.len();
                let c = &mut clients[at];
                i += 1;
                let reply = c.post(&call(3, tool, json!({"run": handle}))).await;
                assert_eq!(reply.status, 200, "{}", reply.text());
                let rpc = reply.rpc().unwrap();
                assert_ne!(rpc["result"]["isError"], json!(true), "{rpc}");
                assert!(rpc.to_string().contains(&handle), "{rpc}");
                c.seen.clear();
                done += 1;
            }
            done
        });
    }
    let mut total = 0u64;
    while let Some(n) = tasks.join_next().await {
        total += n.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    // `cargo bench` passes `--bench`; a filter or `--list` runs nothing.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("runs");
        println!("replicas | hardened calls/s | plain rmcp calls/s | hardened / plain");
        println!("---|---|---|---");
        for n in 1..=3 {
            let (servers, h) = hardened(&root, n).await;
            let (stops, p) = plain(&root, n).await;
            let hardened_rate = calls_per_second(&h).await;
            let plain_rate = calls_per_second(&p).await;
            println!(
                "{n} | {hardened_rate:.0} | {plain_rate:.0} | {:.2}",
                hardened_rate / plain_rate
            );
            for s in servers {
                s.shutdown().await.unwrap();
            }
            for s in stops {
                s.cancel();
            }
        }
    });
}
