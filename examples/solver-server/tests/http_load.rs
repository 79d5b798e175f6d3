//! The solver server over HTTP under unauthenticated load, on loopback:
//! 300 connections that start a request and never finish it (from 20
//! addresses, reopened when the server closes them) and bursts of
//! wrong-token requests, while alice calls `heat_status` in a loop, each
//! call on a fresh connection. Every one of alice's calls is answered.
//! Bounded: 100 calls, a 60 s ceiling; the load stops by itself.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use hardened_mcp_tests::http_load::{self, LoadShape};

#[path = "support/http_fixture.rs"]
mod http_fixture;

const CALLS: i64 = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_authenticated_call_is_answered_under_unauthenticated_load() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let mut f = http_fixture::start().await;
        let idle = f.status(10).await;
        let load = http_load::start(f.addr(), LoadShape::default()).await;
        // Let the unfinished requests fill the unauthenticated pool.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut slowest = Duration::ZERO;
        for id in 0..CALLS {
            slowest = slowest.max(f.status(100 + id).await);
        }
        let report = load.stop().await;
        eprintln!("idle call {idle:?}; slowest under load {slowest:?}; {report:?}");
        // The load was real: more unfinished requests than the pool holds
        // (so the server closed some and they came back), and refused
        // wrong-token requests.
        assert!(report.slow_opened >= 300, "{report:?}");
        assert!(
            report.slow_closed_by_server > 0,
            "the pool never filled: {report:?}"
        );
        assert!(report.bad_401 > 0, "{report:?}");
        f.server.shutdown().await.unwrap();
    })
    .await
    .expect("bounded");
}
