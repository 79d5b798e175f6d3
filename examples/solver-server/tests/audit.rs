//! `hardened-mcp-audit` finds nothing above info in the solver server: every
//! forbidden call refused with a fixed text, every bad line answered.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use hardened_mcp_audit::Severity;
use hardened_mcp_audit::run::{Options, audit_stdio};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_solver_server_audits_clean() {
    let root = tempfile::tempdir().unwrap();
    let args = [
        "serve".to_owned(),
        "--run-root".to_owned(),
        root.path().join("runs").to_string_lossy().into_owned(),
        "--solver".to_owned(),
        env!("CARGO_BIN_EXE_heat1d").to_owned(),
    ];
    let report = tokio::time::timeout(
        Duration::from_secs(180),
        audit_stdio(
            env!("CARGO_BIN_EXE_solver-server"),
            &args,
            // The read-only tools also get the schema-valid calls: a made-up
            // run handle and an unknown key must be refused too.
            &Options {
                allow_valid_calls: true,
                ..Options::default()
            },
        ),
    )
    .await
    .unwrap();
    assert_eq!(report.tools, 12);
    assert!(!report.fails(Severity::Low), "{}", report.text());
}

#[path = "support/http_fixture.rs"]
#[allow(dead_code)]
mod http_fixture;

/// The same over streamable HTTP, with a bearer token: every forbidden
/// call refused, every bad message answered (with an HTTP refusal or a
/// JSON-RPC error), nothing repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_solver_server_audits_clean_over_http() {
    let fixture = http_fixture::start().await;
    let url = format!("http://{}/mcp", fixture.addr());
    let report = tokio::time::timeout(
        Duration::from_secs(180),
        hardened_mcp_audit::run::audit_http(
            &url,
            Some(http_fixture::ALICE.to_owned()),
            &Options::default(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(report.tools, 12, "{}", report.text());
    assert!(report.calls > 100, "{}", report.calls);
    assert!(!report.fails(Severity::Low), "{}", report.text());
    // Without the token the audit stops at the handshake, and says why.
    let refused = hardened_mcp_audit::run::audit_http(&url, None, &Options::default()).await;
    assert_eq!(refused.tools, 0);
    let above_info = refused
        .findings
        .iter()
        .filter(|f| f.severity > Severity::Info);
    assert_eq!(above_info.count(), 1, "{}", refused.text());
    assert!(
        refused.findings[0].message.contains("401"),
        "{}",
        refused.text()
    );
}
