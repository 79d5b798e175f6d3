//! `mcp-audit` finds nothing above info in the solver server: every
//! forbidden call refused with a fixed text, every bad line answered.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use mcp_audit::Severity;
use mcp_audit::run::{Options, audit_stdio};

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
            &Options::default(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(report.tools, 11);
    assert!(!report.fails(Severity::Low), "{}", report.text());
}
