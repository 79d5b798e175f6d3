//! `hardened-mcp-audit`'s SQL write probes against a server written with
//! the official MCP Python SDK (`tests/python/sql_server.py`): a query
//! tool that refuses only the statements that start with a writing word,
//! and one that checks the first word and then runs every statement, each
//! make a file where the audit asked (`ATTACH DATABASE`, `VACUUM INTO`,
//! alone or after a `SELECT`); the control, read-only with an authorizer,
//! makes none. Without `--allow-valid-calls`, no statement is sent. The
//! long query stalls the server where an `async` tool runs it on the event
//! loop (`count`), and not where the SDK runs a plain function on a worker
//! thread (the other three).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use hardened_mcp_audit::Severity;
use hardened_mcp_audit::run::{Options, audit_stdio};
use hardened_mcp_tests::python::{python, workspace};

async fn audit(allow_valid_calls: bool) -> hardened_mcp_audit::Report {
    let script = workspace().join("tests/python/sql_server.py");
    let opts = Options {
        timeout: Duration::from_secs(10),
        allow_valid_calls,
        wire: false,
        ..Options::default()
    };
    let python = python().to_string_lossy().into_owned();
    tokio::time::timeout(
        Duration::from_secs(240),
        audit_stdio(&python, &[script.to_string_lossy().into_owned()], &opts),
    )
    .await
    .expect("the audit ends within 240 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_that_write_files_are_found_where_they_run_and_not_in_the_control() {
    let report = audit(true).await;
    let text = report.text();
    assert_eq!(report.tools, 4, "{text}");
    let mut written: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule == "sql-file-written")
        .map(|f| {
            (
                f.severity,
                f.tool.as_deref().unwrap_or_default(),
                f.argument.as_deref().unwrap_or_default(),
                f.evidence.as_deref().unwrap_or_default(),
            )
        })
        .collect();
    written.sort();
    assert_eq!(written.len(), 2, "{text}");
    let (sev, tool, argument, evidence) = written[0];
    assert_eq!(
        (sev, tool, argument),
        (Severity::High, "query", "/sql"),
        "{text}"
    );
    // The first statement that makes its file: a plain ATTACH.
    assert!(
        evidence.starts_with("`sql` = \"ATTACH DATABASE '")
            && evidence.ends_with(" made that file"),
        "{evidence}"
    );
    let (sev, tool, argument, evidence) = written[1];
    assert_eq!(
        (sev, tool, argument),
        (Severity::High, "select", "/statement"),
        "{text}"
    );
    // Past the first-word check: stacked after a SELECT.
    assert!(
        evidence.starts_with("`statement` = \"SELECT 1; ATTACH DATABASE '"),
        "{evidence}"
    );
    // The audit's directory (a tool's directory in it) is gone with the
    // files in it.
    let file = std::path::PathBuf::from(evidence.split('\'').nth(1).unwrap());
    let dir = file.parent().and_then(std::path::Path::parent).unwrap();
    assert!(
        dir.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("hardened-mcp-audit-")),
        "{}",
        dir.display()
    );
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_valid_calls_no_statement_is_sent() {
    let report = audit(false).await;
    let text = report.text();
    assert_eq!(report.tools, 4, "{text}");
    assert!(
        !report.findings.iter().any(|f| f.rule == "sql-file-written"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_query_on_the_event_loop_stalls_the_server_and_on_a_thread_not() {
    let report = audit(true).await;
    let text = report.text();
    let blocked: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule == "server-blocked-by-call")
        .map(|f| (f.severity, f.tool.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(blocked, [(Severity::Medium, "count")], "{text}");
    let evidence = report
        .findings
        .iter()
        .find(|f| f.rule == "server-blocked-by-call")
        .and_then(|f| f.evidence.as_deref())
        .unwrap_or_default();
    assert!(
        evidence.starts_with("count: `sql` = a long query: the call "),
        "{evidence}"
    );
}
