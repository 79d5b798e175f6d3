//! The solver server over HTTP on loopback with bearer tokens, a finished
//! run of `alice`, and `heat_status` calls on it over fresh connections:
//! shared by the load test and the load benchmark.

use std::net::SocketAddr;
use std::time::Duration;

use hardened_mcp::sandbox::Containment;
use hardened_mcp::transport::{BearerAuth, HttpConfig, HttpServer, RunningHttpServer};
use hardened_mcp_tests::tr_support::{HttpClient, call};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub const ALICE: &str = "alice-tok-Q7rT2vX9pL4mN8kJ";

pub struct Fixture {
    pub server: RunningHttpServer,
    pub alice: HttpClient,
    pub handle: String,
    _dir: tempfile::TempDir,
}

/// The solver server over HTTP on loopback, over the run root `root`,
/// with alice's bearer token and no SSE
/// keep-alive; several calls over one `root` make replicas of one server.
/// Also answers the containment its runs get.
pub async fn serve(root: &std::path::Path) -> (RunningHttpServer, Containment) {
    let heat = solver_server::app::build_at(root, env!("CARGO_BIN_EXE_heat1d").as_ref()).unwrap();
    let containment = heat.service().containment();
    let config = HttpConfig::new()
        .auth(BearerAuth::parse(&format!("alice={ALICE}")).unwrap())
        .sse_keep_alive(None);
    let server = HttpServer::new(move || Ok(heat.clone()), config)
        .unwrap()
        .start(CancellationToken::new())
        .await
        .unwrap();
    (server, containment)
}

/// Starts the server, opens alice's session and runs one small solve.
pub async fn start() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = serve(&dir.path().join("runs")).await;
    let mut alice = HttpClient::new(server.local_addr(), Some(ALICE));
    alice.connect().await;
    let cells = 64u32;
    let dx = 1.0 / f64::from(cells);
    let start = json!({"cells": cells, "steps": 200, "length": 1.0, "diffusivity": 1.0,
                       "dt": 0.4 * dx * dx});
    let reply = alice.post(&call(2, "heat_start", start)).await;
    let data = data_of(&reply.rpc().unwrap());
    let handle = data["run_handle"].as_str().unwrap().to_owned();
    Fixture {
        server,
        alice,
        handle,
        _dir: dir,
    }
}

/// The `data` of a successful tool result.
pub fn data_of(rpc: &Value) -> Value {
    let result = &rpc["result"];
    assert_ne!(result["isError"], json!(true), "{rpc}");
    result["structuredContent"]["data"].clone()
}

impl Fixture {
    pub fn addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// One `heat_status` call, checked; returns its latency.
    pub async fn status(&mut self, id: i64) -> Duration {
        let started = std::time::Instant::now();
        let reply = self
            .alice
            .post(&call(id, "heat_status", json!({"run": self.handle})))
            .await;
        let took = started.elapsed();
        assert_eq!(reply.status, 200, "{}", reply.text());
        let data = data_of(&reply.rpc().unwrap());
        assert_eq!(data["run_handle"], json!(self.handle), "{data}");
        self.alice.seen.clear();
        took
    }
}
