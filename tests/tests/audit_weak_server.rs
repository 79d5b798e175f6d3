//! `mcp-audit` against a deliberately weak plain-rmcp server
//! (`src/bin/weak_server.rs`): every gap it was built with is found, and
//! nothing else.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use mcp_audit::Severity;
use mcp_audit::run::{Options, audit_stdio};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_gap_of_the_weak_server_is_found_and_nothing_else() {
    let opts = Options {
        timeout: Duration::from_secs(1),
        ..Options::default()
    };
    let report = tokio::time::timeout(
        Duration::from_secs(120),
        audit_stdio(env!("CARGO_BIN_EXE_weak_server"), &[], &opts),
    )
    .await
    .unwrap();
    let mut found: Vec<(Severity, &str, String, String)> = report
        .findings
        .iter()
        .map(|f| {
            (
                f.severity,
                f.rule,
                f.tool.clone().unwrap_or_default(),
                f.property.clone().unwrap_or_default(),
            )
        })
        .collect();
    found.sort();
    let s = |x: &str| x.to_owned();
    let mut expected = vec![
        (
            Severity::High,
            "output-secret-like",
            s("credentials"),
            s("/properties/api_key"),
        ),
        (
            Severity::High,
            "free-text-path-or-command",
            s("read_file"),
            s("/properties/path"),
        ),
        // Advertised maximum 10, not enforced: 1000010 is run.
        (
            Severity::High,
            "forbidden-call-accepted",
            s("count"),
            s("/properties/n"),
        ),
        // serde's error text, sent back by rmcp, quotes the value.
        (
            Severity::High,
            "canary-reflected",
            s("count"),
            s("/properties/n"),
        ),
        (
            Severity::High,
            "canary-reflected",
            s("scale"),
            s("/properties/factor"),
        ),
        // rmcp's own stdio transport never answers a line it cannot parse.
        (
            Severity::High,
            "call-unanswered",
            s("count"),
            s("/properties/n"),
        ),
        (
            Severity::Medium,
            "string-unbounded",
            s("read_file"),
            s("/properties/path"),
        ),
        (
            Severity::Medium,
            "number-unbounded",
            s("scale"),
            s("/properties/factor"),
        ),
        (Severity::Medium, "wire-unanswered", s(""), s("")),
        (Severity::Medium, "wire-unanswered", s(""), s("")),
        (Severity::Medium, "wire-unanswered", s(""), s("")),
        (Severity::Medium, "wire-unanswered", s(""), s("")),
        (Severity::Low, "object-open", s("count"), s("/")),
        (Severity::Low, "object-open", s("credentials"), s("/")),
        (Severity::Low, "object-open", s("read_file"), s("/")),
        (Severity::Low, "object-open", s("scale"), s("/")),
        (Severity::Low, "output-schema-missing", s("count"), s("")),
        (
            Severity::Low,
            "output-schema-missing",
            s("read_file"),
            s(""),
        ),
        (Severity::Low, "output-schema-missing", s("scale"), s("")),
    ];
    expected.sort();
    assert_eq!(found, expected, "{}", report.text());
    assert_eq!(report.tools, 4);
    assert!(report.fails(Severity::High));
    // SARIF carries one result per finding, errors for the high ones.
    let sarif = report.sarif();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), report.findings.len());
    assert_eq!(results.iter().filter(|r| r["level"] == "error").count(), 6);
}
