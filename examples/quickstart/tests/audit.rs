//! `hardened-mcp-audit` finds nothing above info in the quickstart's server.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use hardened_mcp_audit::Severity;
use hardened_mcp_audit::run::{Options, audit_stdio};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quickstart_server_audits_clean() {
    let report = tokio::time::timeout(
        Duration::from_secs(120),
        audit_stdio(env!("CARGO_BIN_EXE_beam-server"), &[], &Options::default()),
    )
    .await
    .unwrap();
    assert_eq!(report.tools, 2);
    assert!(report.calls > 40, "{}", report.calls);
    assert!(!report.fails(Severity::Low), "{}", report.text());
}
