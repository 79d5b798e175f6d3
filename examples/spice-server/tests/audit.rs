//! `hardened-mcp-audit` finds nothing above info in the SPICE server. Without
//! ngspice this test says so and passes, unless
//! `HARDENED_MCP_REQUIRE_NGSPICE` is set (CI).
#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::time::Duration;

use hardened_mcp_audit::Severity;
use hardened_mcp_audit::run::{Options, audit_stdio};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spice_server_audits_clean() {
    if !support::ngspice_present() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let args = [
        "serve".to_owned(),
        "--run-root".to_owned(),
        root.path().join("runs").to_string_lossy().into_owned(),
    ];
    let report = tokio::time::timeout(
        Duration::from_secs(180),
        audit_stdio(
            env!("CARGO_BIN_EXE_spice-server"),
            &args,
            &Options::default(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(report.tools, 8);
    assert!(!report.fails(Severity::Low), "{}", report.text());
}
