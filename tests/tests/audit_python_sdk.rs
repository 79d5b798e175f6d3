//! `hardened-mcp-audit` against a server written the obvious way with the official
//! MCP Python SDK (`tests/python/weak_sdk_server.py`, the pinned SDK of
//! `tests/python/constraints.txt`), over stdio and over streamable HTTP:
//! the SDK's default gaps are found, each where it is, and nothing else.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::{Ipv4Addr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hardened_mcp_audit::Severity;
use hardened_mcp_audit::run::{Options, audit_http, audit_stdio};
use hardened_mcp_tests::announce::announced;
use hardened_mcp_tests::python::{python, workspace};

fn script() -> String {
    workspace()
        .join("tests/python/weak_sdk_server.py")
        .to_string_lossy()
        .into_owned()
}

fn options() -> Options {
    Options {
        timeout: Duration::from_secs(5),
        allow_valid_calls: true,
        ..Options::default()
    }
}

/// The findings both transports share: the SDK's defaults.
type Key = (
    Severity,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

fn sdk_gaps() -> Vec<Key> {
    let f = |sev, rule, tool, prop, what| (sev, rule, tool, prop, what);
    use Severity::{High, Low, Medium};
    vec![
        // Schema review: what pydantic's schemas leave open.
        f(
            Medium,
            "free-text-path-or-command",
            "read_file",
            "/properties/path",
            "",
        ),
        f(Low, "number-unbounded", "scale", "/properties/factor", ""),
        f(Low, "string-unbounded", "read_file", "/properties/path", ""),
        f(Low, "object-open", "count", "/", ""),
        f(Low, "object-open", "read_file", "/", ""),
        f(Low, "object-open", "scale", "/", ""),
        // Unknown keys accepted and dropped (probed on the read-only
        // tools, with --allow-valid-calls).
        f(Low, "unknown-key-accepted", "count", "/", ""),
        f(Low, "unknown-key-accepted", "scale", "/", ""),
        // pydantic's lax mode: `true` is a number, and so is the number
        // as a string (`"7"`, though not `[7]`); Python's json reads NaN.
        f(
            High,
            "forbidden-call-accepted",
            "count",
            "/properties/n",
            "wrong type (bool)",
        ),
        f(
            High,
            "forbidden-call-accepted",
            "count",
            "/properties/n",
            "wrong type (numeric string)",
        ),
        f(
            High,
            "forbidden-call-accepted",
            "scale",
            "/properties/factor",
            "wrong type (numeric string)",
        ),
        f(
            High,
            "forbidden-call-accepted",
            "scale",
            "/properties/factor",
            "wrong type (bool)",
        ),
        f(
            High,
            "forbidden-call-accepted",
            "scale",
            "/properties/factor",
            "NaN literal",
        ),
        // The validation error, sent back as the tool result, quotes the
        // value: strings and numbers alike (a refusal's echo: low).
        f(
            Low,
            "canary-reflected",
            "count",
            "/properties/n",
            "above maximum",
        ),
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
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_defaults_are_found_over_stdio() {
    let python = python().to_string_lossy().into_owned();
    let report = tokio::time::timeout(
        Duration::from_secs(180),
        audit_stdio(&python, &[script()], &options()),
    )
    .await
    .unwrap();
    assert_eq!(report.tools, 3, "{}", report.text());
    let mut expected = sdk_gaps();
    // Over stdio the SDK drops a line it cannot parse without a word: a
    // note. (Python's reader takes NaN and 1e999, so those are answered.)
    for what in ["unparsable line", "truncated JSON"] {
        expected.push((Severity::Info, "wire-unanswered", "", "", what));
    }
    expected.sort();
    assert_eq!(report.keys(), expected, "{}", report.text());
}

/// The Python server over HTTP on a loopback port, killed when dropped.
struct HttpServer(Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_defaults_are_found_over_http() {
    // The script binds a port the kernel picks and names it once it
    // listens: no other test can take the port in between.
    let mut server = HttpServer(
        Command::new(python())
            .args([script(), "--http".into()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdout = server.0.stdout.take().unwrap();
    let port: u16 = announced(stdout, "listening ", Duration::from_secs(60))
        .and_then(|p| p.parse().ok())
        .expect("the Python server did not say where it listens");
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the Python server did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let report = tokio::time::timeout(Duration::from_secs(180), audit_http(&url, None, &options()))
        .await
        .unwrap();
    assert_eq!(report.tools, 3, "{}", report.text());
    // Over HTTP every bad message gets an HTTP answer (400, 413): no wire
    // findings, the same call findings. No authentication (on loopback:
    // information); a foreign Origin and Host are refused (the SDK's DNS
    // rebinding protection), so neither is a finding.
    let mut expected = sdk_gaps();
    expected.push((Severity::Info, "auth-none", "", "", ""));
    expected.sort();
    assert_eq!(report.keys(), expected, "{}", report.text());
    // Given a token, the audit expects it to be required: the SDK server,
    // written without auth, takes calls without one.
    let with_token = Options {
        wire: false,
        ..options()
    };
    let report = tokio::time::timeout(
        Duration::from_secs(180),
        audit_http(&url, Some("a-token-it-never-checks".into()), &with_token),
    )
    .await
    .unwrap();
    let auth: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.rule.starts_with("auth-") || f.rule.ends_with("-not-checked"))
        .map(|f| f.rule)
        .collect();
    assert_eq!(auth, ["auth-not-required"], "{}", report.text());
    let evidence = report
        .findings
        .iter()
        .find(|f| f.rule == "auth-not-required")
        .and_then(|f| f.evidence.as_deref())
        .unwrap_or_default();
    assert!(evidence.contains("(no Authorization) -> 200"), "{evidence}");
}
