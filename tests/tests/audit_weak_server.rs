//! `hardened-mcp-audit` against a deliberately weak plain-rmcp server
//! (`src/bin/weak_server.rs`): every gap it was built with is found, and
//! nothing else.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use hardened_mcp_audit::run::{Options, audit_stdio};
use hardened_mcp_audit::{Report, Severity};

/// The audit of the weak server, each exchange bounded by 1 s, the whole
/// by 120 s.
async fn audit_weak_server(allow_valid_calls: bool) -> Report {
    let opts = Options {
        timeout: Duration::from_secs(1),
        allow_valid_calls,
        ..Options::default()
    };
    tokio::time::timeout(
        Duration::from_secs(120),
        audit_stdio(env!("CARGO_BIN_EXE_weak_server"), &[], &opts),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_gap_of_the_weak_server_is_found_and_nothing_else() {
    let report = audit_weak_server(false).await;
    let found = report.keys();
    let f = |sev, rule, tool, prop, what| (sev, rule, tool, prop, what);
    use Severity::{High, Info, Low, Medium};
    let mut expected = vec![
        f(
            High,
            "output-secret-like",
            "credentials",
            "/properties/api_key",
            "",
        ),
        f(
            Medium,
            "free-text-path-or-command",
            "read_file",
            "/properties/path",
            "",
        ),
        // Advertised maximum 10, not enforced: 10 + the numeric canary is run.
        f(
            Medium,
            "forbidden-call-accepted",
            "count",
            "/properties/n",
            "above maximum",
        ),
        // serde's error text, sent back by rmcp, quotes the value: the
        // string canary, and the numeric one (below the minimum by it, and
        // as the fraction of an integer).
        f(
            Low,
            "canary-reflected",
            "count",
            "/properties/n",
            "below minimum",
        ),
        f(
            Low,
            "canary-reflected",
            "count",
            "/properties/n",
            "fraction for an integer",
        ),
        f(
            Low,
            "canary-reflected",
            "count",
            "/properties/n",
            "wrong type (string)",
        ),
        f(
            Low,
            "canary-reflected",
            "scale",
            "/properties/factor",
            "wrong type (string)",
        ),
        // rmcp's own stdio transport never answers a line it cannot parse
        // (a note: the same cause as the wire checks' unparsable lines).
        f(
            Info,
            "call-unanswered",
            "count",
            "/properties/n",
            "non-finite literal 1e999",
        ),
        f(
            Info,
            "call-unanswered",
            "count",
            "/properties/n",
            "NaN literal",
        ),
        f(
            Info,
            "call-unanswered",
            "scale",
            "/properties/factor",
            "NaN literal",
        ),
        f(Low, "string-unbounded", "read_file", "/properties/path", ""),
        f(Low, "number-unbounded", "scale", "/properties/factor", ""),
        // rmcp drops every line it cannot parse: a note, and the calls
        // above holding NaN or 1e999 are that same cause.
        f(Info, "wire-unanswered", "", "", "unparsable line"),
        f(Info, "wire-unanswered", "", "", "non-finite literal 1e999"),
        f(Info, "wire-unanswered", "", "", "NaN literal"),
        f(Info, "wire-unanswered", "", "", "truncated JSON"),
        f(Low, "object-open", "count", "/", ""),
        f(Low, "object-open", "credentials", "/", ""),
        f(Low, "object-open", "read_file", "/", ""),
        f(Low, "object-open", "scale", "/", ""),
        f(Low, "output-schema-missing", "count", "", ""),
        f(Low, "output-schema-missing", "read_file", "", ""),
        f(Low, "output-schema-missing", "scale", "", ""),
        // The run pattern is advertised, not enforced.
        f(
            High,
            "forbidden-call-accepted",
            "status",
            "/properties/run",
            "path traversal",
        ),
        f(
            High,
            "forbidden-call-accepted",
            "status",
            "/properties/run",
            "shell metacharacters",
        ),
        f(
            Medium,
            "forbidden-call-accepted",
            "status",
            "/properties/run",
            "outside the enum",
        ),
        f(Low, "object-open", "status", "/", ""),
        f(Low, "output-schema-missing", "status", "", ""),
        // `plan`: an enum and a nested struct, as schemars emits them
        // (`$defs`, `$ref`): the mutations reach into both, each named by
        // the node it breaks. `x`'s maximum is advertised, not enforced;
        // serde's errors quote the value.
        f(Low, "object-open", "plan", "/", ""),
        f(Low, "output-schema-missing", "plan", "", ""),
        f(
            Medium,
            "forbidden-call-accepted",
            "plan",
            "/$defs/Inner/properties/x",
            "above maximum",
        ),
        f(
            Low,
            "canary-reflected",
            "plan",
            "/$defs/Inner/properties/x",
            "below minimum",
        ),
        f(
            Low,
            "canary-reflected",
            "plan",
            "/$defs/Inner/properties/x",
            "wrong type (string)",
        ),
        f(
            Low,
            "canary-reflected",
            "plan",
            "/$defs/Inner/properties/x",
            "fraction for an integer",
        ),
        f(
            Info,
            "call-unanswered",
            "plan",
            "/$defs/Inner/properties/x",
            "non-finite literal 1e999",
        ),
        f(
            Info,
            "call-unanswered",
            "plan",
            "/$defs/Inner/properties/x",
            "NaN literal",
        ),
        // `Inner` denies unknown fields, and serde names the one it saw:
        // a strict refusal naming the refused key, no finding.
        f(
            Low,
            "canary-reflected",
            "plan",
            "/$defs/Inner",
            "wrong type (string)",
        ),
        f(
            Low,
            "canary-reflected",
            "plan",
            "/$defs/Mode",
            "path traversal",
        ),
        f(
            Low,
            "canary-reflected",
            "plan",
            "/$defs/Mode",
            "shell metacharacters",
        ),
        f(
            Low,
            "canary-reflected",
            "plan",
            "/$defs/Mode",
            "outside the enum",
        ),
    ];
    // Its prompt tells the model its rules no longer hold, and any file
    // can be read as a resource.
    expected.push(f(
        High,
        "description-overrides-rules",
        "",
        "/prompts/0/description",
        "",
    ));
    expected.push(f(
        High,
        "resource-outside-listing",
        "",
        "",
        "unlisted file URI",
    ));
    expected.sort();
    assert_eq!(found, expected, "{}", report.text());
    assert_eq!(report.tools, 6);
    assert!(report.fails(Severity::High));
    // SARIF carries one result per cause, errors for the high ones.
    let sarif = report.sarif(None);
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), report.causes().len());
    assert!(results.len() < report.findings.len());
    // The high causes: traversal and shell metacharacters accepted, a
    // secret-like output, a prompt lifting the model's rules, a resource
    // read outside the listing (a free-text path is a medium: a place to
    // look, not an escape shown).
    assert_eq!(results.iter().filter(|r| r["level"] == "error").count(), 5);
    let nan = report
        .causes()
        .into_iter()
        .find(|c| c.rule == "call-unanswered" && c.mutation == Some("NaN literal"))
        .unwrap();
    assert_eq!(nan.places.len(), 3, "{nan:?}");
    let text = report.text();
    assert_eq!(
        text.matches("call-unanswered (NaN literal)").count(),
        1,
        "{text}"
    );
    // Each call finding names the argument it changed, at any depth.
    let nested = report
        .findings
        .iter()
        .find(|f| f.tool.as_deref() == Some("plan") && f.rule == "forbidden-call-accepted")
        .unwrap();
    assert_eq!(nested.argument.as_deref(), Some("/inner/x"));
}

/// With `--allow-valid-calls`, the read-only `status` (and only it: the
/// other tools are not annotated read-only) gets the schema-valid calls: a
/// handle made up from the advertised pattern is run, and so is an
/// unknown key; a ping sent while the call runs is answered (rmcp runs
/// each request as a task of its own): not `server-blocked-by-call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_calls_find_made_up_handles_and_dropped_keys_on_read_only_tools_only() {
    let report = audit_weak_server(true).await;
    let mut extra: Vec<(&str, &str, &str)> = report
        .findings
        .iter()
        .filter(|f| {
            matches!(
                f.rule,
                "made-up-handle-accepted" | "unknown-key-accepted" | "server-blocked-by-call"
            )
        })
        .map(|f| {
            (
                f.rule,
                f.tool.as_deref().unwrap_or_default(),
                f.property.as_deref().unwrap_or_default(),
            )
        })
        .collect();
    extra.sort();
    assert_eq!(
        extra,
        [
            ("made-up-handle-accepted", "status", "/properties/run"),
            ("unknown-key-accepted", "status", "/"),
        ],
        "{}",
        report.text()
    );
}

/// Each place of a cause shown by a call carries that call and its answer,
/// escaped and cut: the weak server's accepted traversal shows the value
/// sent and the answer that ran it; the JSON gives every place the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cause_shown_by_a_call_carries_the_exchange() {
    let report = audit_weak_server(false).await;
    let causes = report.causes();
    let traversal = causes
        .iter()
        .find(|c| c.rule == "forbidden-call-accepted" && c.mutation == Some("path traversal"))
        .unwrap();
    let exchange = traversal.places[0].exchange.as_deref().unwrap_or_default();
    assert!(
        exchange.starts_with("sent {\"run\":\"../../../etc/passwdMCPAUDIT")
            && exchange.contains("; answered {\"content\":")
            && exchange.contains("done"),
        "{exchange}"
    );
    assert!(report.text().contains("      exchange: sent {"));
    // Schema review findings have no call: the key is there, null.
    let json = report.json();
    let places: Vec<&serde_json::Value> = json["causes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["places"].as_array().unwrap())
        .collect();
    assert!(places.iter().all(|p| p.get("exchange").is_some()));
    assert!(places.iter().any(|p| p["exchange"].is_null()));
    // Cut: no side longer than the limit (and its ellipsis).
    for p in &places {
        if let Some(x) = p["exchange"].as_str() {
            let sent = x.split("; answered ").next().unwrap_or_default();
            assert!(sent.chars().count() <= 5 + 240 + 3, "{x}");
        }
    }
}
