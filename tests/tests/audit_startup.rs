//! The audit of a stdio server that does not start: the finding carries
//! what the server wrote to its standard error (escaped), and the startup
//! deadline is the one given, shorter than the exchange deadline too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hardened_mcp_audit::run::{Options, audit_stdio};

fn options(startup: Duration) -> Options {
    Options {
        timeout: Duration::from_secs(60),
        startup_timeout: startup,
        ..Options::default()
    }
}

#[tokio::test]
async fn a_server_that_exits_at_start_is_reported_with_its_stderr() {
    let script = "printf 'starting\\nerror: no such module \\033[31mfoo\\033[0m\\n' >&2; exit 3";
    let report = tokio::time::timeout(
        Duration::from_secs(30),
        audit_stdio(
            "sh",
            &["-c".into(), script.into()],
            &options(Duration::from_secs(20)),
        ),
    )
    .await
    .expect("the audit ends when the server exits");
    let f = report
        .findings
        .iter()
        .find(|f| f.rule == "handshake-failed")
        .expect("the failed start is a finding");
    let evidence = f.evidence.as_deref().expect("the stderr tail as evidence");
    assert!(
        evidence.contains("error: no such module \\u{1b}[31mfoo"),
        "escaped, never raw: {evidence}"
    );
    assert!(!evidence.contains('\u{1b}'));
    // A positive control: the same server silent on stderr has no evidence.
    let report = audit_stdio(
        "sh",
        &["-c".into(), "exit 3".into()],
        &options(Duration::from_secs(20)),
    )
    .await;
    let f = report
        .findings
        .iter()
        .find(|f| f.rule == "handshake-failed")
        .unwrap();
    assert!(f.evidence.is_none(), "{f:?}");
}

#[tokio::test]
async fn the_startup_deadline_is_the_one_given() {
    // A server that never answers: with a 300 ms startup deadline the
    // audit gives up long before the 60 s exchange deadline.
    let report = tokio::time::timeout(
        Duration::from_secs(20),
        audit_stdio(
            "sleep",
            &["120".into()],
            &options(Duration::from_millis(300)),
        ),
    )
    .await
    .expect("the startup deadline, not the exchange deadline, applies");
    assert!(
        report.findings.iter().any(|f| f.rule == "handshake-failed"),
        "{}",
        report.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_records_every_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let opts = Options {
        timeout: Duration::from_secs(1),
        trace: Some(trace.clone()),
        ..Options::default()
    };
    let server = env!("CARGO_BIN_EXE_weak_server");
    let report = audit_stdio(server, &[], &opts).await;
    let text = std::fs::read_to_string(&trace).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert!(
        records[0]["sent"]
            .as_str()
            .unwrap()
            .contains("\"initialize\"")
    );
    assert!(records[1]["received"]["result"]["serverInfo"].is_object());
    let sent = records.iter().filter(|r| r.get("sent").is_some()).count();
    let answered = records
        .iter()
        .filter(|r| r.get("received").is_some())
        .count();
    let failed = records.iter().filter(|r| r.get("failed").is_some()).count();
    // Every exchange sent is answered or recorded as unanswered, and the
    // calls the report counts are among them.
    assert_eq!(sent, answered + failed, "{text}");
    assert!(sent >= report.calls, "{sent} < {}", report.calls);
    assert!(failed >= 1, "the weak server leaves calls unanswered");
    // The 12 MiB wire check is cut in the trace, with its length.
    assert!(records.iter().any(|r| r["bytes"].as_u64() > Some(12 << 20)));
    assert!(text.len() < 4 << 20, "the trace holds no 12 MiB line");
}
