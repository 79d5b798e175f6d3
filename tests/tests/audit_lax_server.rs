//! `hardened-mcp-audit` against the two habits of issue 43
//! (`src/bin/lax_server.rs`): an integer and a boolean that a lax parser
//! takes as `"7"`, `[7]`, `"true"`, `[true]`, and a synchronous handler
//! that leaves every other request, `ping` included, unanswered while it
//! runs. Each is found where it is, and not on the same server's strict
//! tool or asynchronous slow tool. A path parameter read as given
//! returns `/etc/passwd`; the same parameter that refuses `..` and a
//! leading `/` does not.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use hardened_mcp_audit::run::{Options, audit_stdio};
use hardened_mcp_audit::{Report, Severity};

/// With the schema-valid calls (the responsiveness probe sends the
/// baseline), each exchange bounded by 5 s (a call takes 3 s), the whole by
/// 120 s.
async fn audit_lax_server() -> Report {
    audit(&audit_options_valid(), &[]).await
}

/// Each exchange bounded by 5 s, no wire checks.
fn options() -> Options {
    Options {
        timeout: Duration::from_secs(5),
        wire: false,
        ..Options::default()
    }
}

/// The audit of the lax server started with `args`, bounded by 120 s.
async fn audit(opts: &Options, args: &[String]) -> Report {
    tokio::time::timeout(
        Duration::from_secs(120),
        audit_stdio(env!("CARGO_BIN_EXE_lax_server"), args, opts),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coerced_values_and_a_blocking_call_are_found_where_they_are() {
    let report = audit_lax_server().await;
    let text = report.text();
    assert_eq!(report.tools, 18, "{text}");
    // Without the wire checks, the non-JSON literals left unanswered are
    // still told as the parse drop they are (rmcp drops the line), by
    // their one line each and no other of the wire checks.
    let unanswered = |rule: &str| -> Vec<(Severity, &str)> {
        let mut found: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == rule)
            .map(|f| (f.severity, f.mutation.unwrap_or_default()))
            .collect();
        found.sort();
        found.dedup();
        found
    };
    let literals = [
        (Severity::Info, "NaN literal"),
        (Severity::Info, "non-finite literal 1e999"),
    ];
    assert_eq!(unanswered("call-unanswered"), literals, "{text}");
    assert_eq!(unanswered("wire-unanswered"), literals, "{text}");
    let mut coerced: Vec<_> = report
        .findings
        .iter()
        .filter(|f| {
            f.mutation.is_some_and(|m| {
                matches!(
                    m,
                    "wrong type (numeric string)"
                        | "wrong type (boolean string)"
                        | "wrong type (one-element array)"
                )
            })
        })
        .map(|f| {
            (
                f.severity,
                f.rule,
                f.tool.as_deref().unwrap_or_default(),
                f.argument.as_deref().unwrap_or_default(),
                f.mutation.unwrap_or_default(),
            )
        })
        .collect();
    coerced.sort();
    let accepted = |argument, what| {
        (
            Severity::High,
            "forbidden-call-accepted",
            "tally",
            argument,
            what,
        )
    };
    // `strict` refuses all four: no finding there.
    assert_eq!(
        coerced,
        [
            accepted("/n", "wrong type (numeric string)"),
            accepted("/n", "wrong type (one-element array)"),
            accepted("/verbose", "wrong type (boolean string)"),
            accepted("/verbose", "wrong type (one-element array)"),
        ],
        "{text}"
    );
    // The baseline's own value holds no canary: nothing is a reflection.
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.rule == "canary-reflected" && f.tool.as_deref() == Some("tally")),
        "{text}"
    );

    // `lookup` holds the server's only thread: the ping waits for it.
    // `wait` takes as long, and the ping is answered meanwhile.
    let blocked: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule == "server-blocked-by-call")
        .collect();
    assert_eq!(blocked.len(), 1, "{text}");
    assert_eq!(blocked[0].severity, Severity::Medium);
    assert_eq!(blocked[0].tool.as_deref(), Some("lookup"));
    let evidence = blocked[0].evidence.as_deref().unwrap_or_default();
    assert!(
        evidence.starts_with("lookup: the call took ")
            && evidence.contains("; a ping sent ")
            && evidence.contains(" ms into it was answered after "),
        "{evidence}"
    );
    // The call's time: about the 3 s it sleeps.
    let took: f64 = evidence["lookup: the call took ".len()..]
        .split(' ')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!((2.9..5.0).contains(&took), "{evidence}");
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.rule == "valid-call-unanswered"),
        "{text}"
    );
}

/// `read_note` joins the path as given: the traversal reads
/// `/etc/passwd`, one finding for the parameter. `read_safe` refuses
/// both values: nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_read_as_given_is_found_and_a_checked_one_is_not() {
    let report = audit_lax_server().await;
    let text = report.text();
    let read: Vec<_> = report
        .findings
        .iter()
        .filter(|f| matches!(f.rule, "path-traversal-read" | "url-file-read"))
        .collect();
    assert_eq!(read.len(), 1, "{text}");
    let f = read[0];
    assert_eq!(
        (f.severity, f.rule, f.tool.as_deref(), f.argument.as_deref()),
        (
            Severity::High,
            "path-traversal-read",
            Some("read_note"),
            Some("/path")
        ),
        "{text}"
    );
    let evidence = f.evidence.as_deref().unwrap_or_default();
    assert!(
        evidence.starts_with(
            "read_note: `path` = \"../../../../../../../../etc/passwd\" (a path outside the \
             tool's files) answered: "
        ) && evidence.contains(":0:0:"),
        "{evidence}"
    );
    // `read_safe`: none (the one finding is `read_note`'s).
}

/// The resource template `note:///{+path}` and the prompt `review_note`
/// read the note as given: each reads `/etc/passwd` through a traversal in
/// its variable or argument, one finding each. Their controls
/// (`safe-note:///{+path}`, `review_safe`) refuse every value: nothing.
/// These are reads by the protocol, found without `--allow-valid-calls`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_and_a_prompt_that_read_as_given_are_found_and_their_controls_not() {
    let report = audit(&options(), &[]).await;
    let text = report.text();
    let mut read: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule.ends_with("traversal-read"))
        .map(|f| {
            (
                f.severity,
                f.rule,
                f.property.as_deref().unwrap_or_default(),
                f.argument.as_deref().unwrap_or_default(),
                f.evidence.as_deref().unwrap_or_default(),
            )
        })
        .collect();
    read.sort();
    assert_eq!(read.len(), 2, "{text}");
    let (sev, rule, property, argument, evidence) = read[0];
    assert_eq!(
        (sev, rule, property, argument),
        (
            Severity::High,
            "prompt-traversal-read",
            "/prompts/0/arguments",
            "/path"
        ),
        "{text}"
    );
    assert!(
        evidence.starts_with("`path` = \"../../../../../../../../etc/passwd\" answered: ")
            && evidence.contains(":0:0:"),
        "{evidence}"
    );
    let (sev, rule, property, argument, evidence) = read[1];
    assert_eq!(
        (sev, rule, property, argument),
        (
            Severity::High,
            "resource-template-traversal-read",
            "/resourceTemplates/0/uriTemplate",
            "/path"
        ),
        "{text}"
    );
    assert!(
        evidence.starts_with("`path` = \"note:///../../../../../../../../etc/passwd\" answered: ")
            && evidence.contains(":0:0:"),
        "{evidence}"
    );
    // No tool was called with a schema-valid value (read_note's own
    // traversal needs --allow-valid-calls).
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.rule == "path-traversal-read"),
        "{text}"
    );
}

/// With `--scope` naming the notes' directory, a link to `/etc` is planted
/// there: `read_safe`, which refuses `..` and a leading `/` in the text,
/// reads `/etc/passwd` through it; `read_resolved`, which resolves the path
/// and checks where it lands, does not. A directory is planted beside the
/// notes, its name theirs and a suffix: `read_prefixed`, which compares the
/// resolved path's text with the notes' as a prefix, reads the file there;
/// `read_resolved`, comparing components, does not. Link and directory are
/// gone at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confinement_on_the_paths_text_is_left_through_a_planted_link() {
    let notes = tempfile::tempdir().unwrap();
    let opts = Options {
        allow_valid_calls: true,
        scope: Some(notes.path().to_path_buf()),
        ..options()
    };
    let args = ["--notes".to_owned(), notes.path().display().to_string()];
    let report = audit(&opts, &args).await;
    let text = report.text();
    let mut read: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule.ends_with("-read") && f.tool.is_some())
        .map(|f| (f.rule, f.tool.as_deref().unwrap_or_default()))
        .collect();
    read.sort();
    assert_eq!(
        read,
        [
            ("path-prefix-escape-read", "read_prefixed"),
            ("path-traversal-read", "read_note"),
            ("symlink-escape-read", "read_safe")
        ],
        "{text}"
    );
    let beside = report
        .findings
        .iter()
        .find(|f| f.rule == "path-prefix-escape-read")
        .unwrap();
    assert_eq!(beside.severity, Severity::High);
    let evidence = beside.evidence.as_deref().unwrap_or_default();
    assert!(
        evidence.starts_with(&format!("`path` = \"../{}-hardened-mcp-audit-", {
            notes.path().file_name().unwrap().to_string_lossy()
        })) && evidence.contains("answered: root:x:0:0:hardened-mcp-audit-"),
        "{evidence}"
    );
    let left = hardened_mcp_tests::planted::beside(notes.path());
    assert!(left.is_empty(), "the planted sibling is removed: {left:?}");
    let link = report
        .findings
        .iter()
        .find(|f| f.rule == "symlink-escape-read")
        .unwrap();
    assert_eq!(link.severity, Severity::High);
    let evidence = link.evidence.as_deref().unwrap_or_default();
    assert!(
        evidence.contains("`path` = \"hardened-mcp-audit-") && evidence.contains(":0:0:"),
        "{evidence}"
    );
    assert_eq!(
        std::fs::read_dir(notes.path()).unwrap().count(),
        0,
        "the planted link is removed"
    );
}

/// `fetch_url` requests any URL, so the audit's loopback listener gets the
/// request it was sent: one finding. `fetch_filtered` refuses the URL's
/// text `127.0.0.1` and `localhost`, so it is found by the next spelling
/// (`127.1`); `fetch_public` refuses loopback addresses and names in every
/// spelling: none. Without `--allow-valid-calls`, no URL is sent.
/// `fetch_url` also reads the whole of the listener's 64 MiB answer:
/// `url-response-unbounded`; `fetch_filtered` reads 4 KiB of it: not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_fetches_a_loopback_url_is_found_and_its_control_not() {
    let report = audit_lax_server().await;
    let text = report.text();
    let mut fetched: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule == "url-fetch-loopback")
        .map(|f| {
            (
                f.severity,
                f.tool.as_deref().unwrap_or_default(),
                f.argument.as_deref().unwrap_or_default(),
                f.evidence.as_deref().unwrap_or_default(),
            )
        })
        .collect();
    fetched.sort_by_key(|f| f.1);
    let [spelt, plain] = fetched.as_slice() else {
        panic!("{text}");
    };
    assert_eq!(
        (plain.0, plain.1, plain.2),
        (Severity::High, "fetch_url", "/url"),
        "{text}"
    );
    assert!(
        plain.3.starts_with("`url` = \"http://127.0.0.1:")
            && plain.3.contains("-fetch_url-url-0\" was requested"),
        "{text}"
    );
    assert_eq!(
        (spelt.0, spelt.1, spelt.2),
        (Severity::High, "fetch_filtered", "/url"),
        "{text}"
    );
    assert!(
        spelt.3.starts_with("`url` = \"http://127.1:")
            && spelt.3.contains("-fetch_filtered-url-2\" was requested"),
        "{text}"
    );
    let unbounded: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule == "url-response-unbounded")
        .map(|f| (f.severity, f.tool.as_deref(), f.argument.as_deref()))
        .collect();
    assert_eq!(
        unbounded,
        [(Severity::Medium, Some("fetch_url"), Some("/url"))],
        "{text}"
    );
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.rule == "server-stopped-answering"),
        "{text}"
    );
    // Outside a private network the machines around are not asked for,
    // and what the server sends is not counted.
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.rule == "url-fetch-private" || f.rule.starts_with("network-reached")),
        "{text}"
    );
    let quiet = audit(&options(), &[]).await;
    assert!(
        !quiet
            .findings
            .iter()
            .any(|f| f.rule == "url-fetch-loopback"),
        "{}",
        quiet.text()
    );
}

/// In the audit's private network (`--private-network`, root here):
/// `fetch_nearby`, which refuses every loopback spelling, fetches the
/// cloud metadata address, the first of the machines around that the
/// audit asks for: one `url-fetch-private`. `fetch_public` refuses those
/// too: none. The loopback findings are the same as on the host's
/// network. `word_count`, which takes no URL, sends two datagrams (one a
/// DNS query) and tries a connection as it counts: one `network-reached`
/// naming the three destinations and the name looked up, and none for
/// the tools that send nothing or were given URLs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_network_finds_the_machines_around_fetched_and_traffic_elsewhere() {
    let opts = Options {
        private_network: true,
        ..audit_options_valid()
    };
    let report = audit(&opts, &[]).await;
    let text = report.text();
    let of = |rule: &str| -> Vec<(&str, &str)> {
        let mut found: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == rule)
            .map(|f| {
                (
                    f.tool.as_deref().unwrap_or_default(),
                    f.evidence.as_deref().unwrap_or_default(),
                )
            })
            .collect();
        found.sort();
        found
    };
    let private = of("url-fetch-private");
    let [(tool, evidence)] = private.as_slice() else {
        panic!("{text}");
    };
    assert_eq!(*tool, "fetch_nearby", "{text}");
    assert!(
        evidence.starts_with("`url` = \"http://169.254.169.254:"),
        "{text}"
    );
    let loopback: Vec<&str> = of("url-fetch-loopback").iter().map(|f| f.0).collect();
    assert_eq!(loopback, ["fetch_filtered", "fetch_url"], "{text}");
    let reached = of("network-reached");
    let [(tool, evidence)] = reached.as_slice() else {
        panic!("{text}");
    };
    assert_eq!(*tool, "word_count", "{text}");
    assert!(
        !evidence.starts_with("0 TCP connection(s) and 0 "),
        "{text}"
    );
    let seen = evidence.split_once("; seen: ").map(|(_, s)| s);
    assert_eq!(
        seen,
        Some(
            "TCP to 127.0.0.1:1, UDP to 127.0.0.1:9, \
             UDP to 127.0.0.1:53 (a DNS lookup of `usage.lax.invalid`)"
        ),
        "{text}"
    );
    assert!(of("network-reached-at-start").is_empty(), "{text}");
}

/// With `--wait-secs 8`, the schema-valid call to the asynchronous `wait`
/// outlasts the 5 s deadline while its ping is answered: `valid-call-slow`
/// (info), not `valid-call-unanswered` nor `server-blocked-by-call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_call_that_takes_long_while_pings_are_answered_is_a_note() {
    let report = audit(
        &audit_options_valid(),
        &["--wait-secs".to_owned(), "8".to_owned()],
    )
    .await;
    let text = report.text();
    let at_wait: Vec<(hardened_mcp_audit::Severity, &str)> = report
        .findings
        .iter()
        .filter(|f| f.tool.as_deref() == Some("wait"))
        .filter(|f| f.rule.starts_with("valid-call-") || f.rule.starts_with("server-"))
        .map(|f| (f.severity, f.rule))
        .collect();
    assert_eq!(
        at_wait,
        [(hardened_mcp_audit::Severity::Info, "valid-call-slow")],
        "{text}"
    );
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.rule == "server-stopped-answering" || f.rule == "server-died"),
        "{text}"
    );
}

/// With `--lock-up`, the schema-valid call to `word_count` blocks the
/// server's only thread: one `server-stopped-answering` at that tool, with
/// that call, and nothing after it judged (no `server-died` of the
/// forbidden call that found it dead, no wire finding). The control: the
/// same server without the flag answers on (in
/// `a_tool_that_fetches_a_loopback_url_is_found_and_its_control_not`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_answering_is_told_by_the_call_it_stopped_at() {
    let opts = Options {
        wire: true,
        ..audit_options_valid()
    };
    let report = audit(&opts, &["--lock-up".to_owned()]).await;
    let text = report.text();
    let stopped: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule == "server-stopped-answering")
        .collect();
    let [stopped] = stopped.as_slice() else {
        panic!("{text}");
    };
    assert_eq!(stopped.tool.as_deref(), Some("word_count"), "{text}");
    let exchange = stopped.exchange.as_deref().unwrap_or_default();
    assert!(
        exchange.contains("\"name\":\"word_count\"") && exchange.ends_with("answered nothing"),
        "{text}"
    );
    for rule in ["server-died", "valid-call-unanswered"] {
        assert!(
            !report.findings.iter().any(|f| f.rule == rule),
            "{rule}: {text}"
        );
    }
    // The tools before it were judged (the NaN lines the SDK drops stay
    // unanswered calls: the wire line that tells a drop from a hang is not
    // sent to a silent server); at `word_count`, nothing but its silence
    // and its schema's review.
    let judged = |tool: &str| {
        report
            .findings
            .iter()
            .any(|f| f.tool.as_deref() == Some(tool))
    };
    assert!(judged("lookup") && judged("tally"), "{text}");
    let at_word_count: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.tool.as_deref() == Some("word_count"))
        .map(|f| f.rule)
        .filter(|r| !r.ends_with("-unbounded") && *r != "output-schema-missing")
        .collect();
    assert_eq!(at_word_count, ["server-stopped-answering"], "{text}");
    assert!(
        !report.findings.iter().any(|f| f.rule.starts_with("wire-")),
        "{text}"
    );
}

/// With `--scratch`, `start_worker` (not read-only) is called; the `sleep`
/// it starts is still running after the server exited: one finding, naming
/// it, and the audit kills it. The same server killing its workers before
/// it exits (`--own-workers`): none. Without `--scratch` the tool is not
/// called: none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_left_running_after_the_server_exits_is_found_and_killed() {
    let scratch = Options {
        allow_valid_calls: true,
        scratch: true,
        max_calls_per_tool: 0,
        ..options()
    };
    let left = |r: &Report| -> Vec<String> {
        r.findings
            .iter()
            .filter(|f| f.rule == "process-left-behind")
            .map(|f| {
                format!(
                    "{:?} {}",
                    f.severity,
                    f.evidence.as_deref().unwrap_or_default()
                )
            })
            .collect()
    };
    // This test's workers alone: a sleep no other test starts.
    let secs = "4243";
    let sleeping = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_to_string(e.path().join("cmdline"))
                    .is_ok_and(|c| c == format!("sleep\x00{secs}\x00"))
            })
            .count()
    };
    let args = ["--worker-secs".to_owned(), secs.to_owned()];
    let leaky = audit(&scratch, &args).await;
    assert_eq!(
        left(&leaky),
        ["Medium still running: `sleep` x1"],
        "{}",
        leaky.text()
    );
    // Killed: gone within seconds (a signal is delivered, not awaited).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while sleeping() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(sleeping(), 0, "the audit killed what was left");
    let owning = audit(
        &scratch,
        &[&args[..], &["--own-workers".to_owned()]].concat(),
    )
    .await;
    assert!(left(&owning).is_empty(), "{}", owning.text());
    let unprobed = audit(
        &Options {
            max_calls_per_tool: 0,
            ..audit_options_valid()
        },
        &[],
    )
    .await;
    assert!(left(&unprobed).is_empty(), "{}", unprobed.text());
}

/// With `--scratch`, `save_note` and `save_safe` (not read-only) are
/// pointed only at fresh names in the audit's own directory: `save_note`,
/// which writes where it is told, makes the file by a traversal; `save_safe`
/// refuses those, and with `--scope` (the notes) is left through the link
/// planted there to the audit's directory. `sort_words` takes
/// `--output=FILE` as sort(1)'s option; `sort_safe` does not. Nothing else is written: the
/// notes hold what was there and the baseline's note, the links are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_writes_where_it_is_told_is_found_by_a_file_of_the_audit_s() {
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(notes.path().join("kept"), "kept\n").unwrap();
    let scratch = Options {
        allow_valid_calls: true,
        scratch: true,
        max_calls_per_tool: 0,
        ..options()
    };
    let args = ["--notes".to_owned(), notes.path().display().to_string()];
    let written = |r: &Report| -> Vec<(String, String, String)> {
        let mut w: Vec<_> = r
            .findings
            .iter()
            .filter(|f| f.rule.ends_with("-write"))
            .map(|f| {
                (
                    f.rule.to_owned(),
                    f.tool.clone().unwrap_or_default(),
                    f.evidence.clone().unwrap_or_default(),
                )
            })
            .collect();
        w.sort();
        w
    };
    let plain = audit(&scratch, &args).await;
    let found = written(&plain);
    let [(option, sorted, injected), (rule, tool, evidence)] = found.as_slice() else {
        panic!("{}", plain.text());
    };
    // `sort_words` hands the value to sort(1), which takes `--output=`;
    // `sort_safe` puts `--` before it: not found.
    assert_eq!(
        (option.as_str(), sorted.as_str()),
        ("option-injection-write", "sort_words")
    );
    assert!(
        injected.starts_with("`order` = \"--output=/")
            && injected.ends_with("-option\" made that file"),
        "{injected}"
    );
    assert_eq!(
        (rule.as_str(), tool.as_str()),
        ("path-traversal-write", "save_note")
    );
    assert!(
        evidence.starts_with("`path` = \"../../../../../../../../")
            && evidence.ends_with("-traversal\" made that file"),
        "{evidence}"
    );
    let scoped = audit(
        &Options {
            scope: Some(notes.path().to_owned()),
            ..scratch
        },
        &args,
    )
    .await;
    let found = written(&scoped);
    let tools: Vec<(&str, &str)> = found
        .iter()
        .map(|(r, t, _)| (r.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        tools,
        [
            ("option-injection-write", "sort_words"),
            ("path-traversal-write", "save_note"),
            ("symlink-escape-write", "save_safe"),
        ],
        "{}",
        scoped.text()
    );
    // What was there, and the note of the schema-valid baseline (`a`):
    // no probe's file, no link.
    let mut left: Vec<_> = std::fs::read_dir(notes.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["a", "kept"]);
}

/// `--confine`: the server writes a marker at start outside all it was
/// given. Unconfined, the marker is made (the positive control); confined,
/// it is not, while the baseline's note is still written in `--scope` (the
/// notes) and `save_note`'s traversal still makes its file in the audit's
/// own directory (the write probes see through the confinement).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_server_writes_only_where_the_audit_lets_it() {
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("marker");
    let notes = tempfile::tempdir().unwrap();
    let args = [
        "--notes".to_owned(),
        notes.path().display().to_string(),
        "--marker".to_owned(),
        marker.display().to_string(),
    ];
    let free = audit(&options(), &args).await;
    assert!(marker.exists(), "{}", free.text());
    std::fs::remove_file(&marker).unwrap();
    let confined = audit(
        &Options {
            allow_valid_calls: true,
            scratch: true,
            scope: Some(notes.path().to_owned()),
            confine: true,
            max_calls_per_tool: 0,
            ..options()
        },
        &args,
    )
    .await;
    let text = confined.text();
    assert!(!marker.exists(), "{text}");
    assert!(notes.path().join("a").exists(), "{text}");
    assert!(
        confined
            .findings
            .iter()
            .any(|f| f.rule == "path-traversal-write" && f.tool.as_deref() == Some("save_note")),
        "{text}"
    );
    assert!(
        !confined
            .findings
            .iter()
            .any(|f| f.rule == "confinement-unavailable" || f.rule == "credential-file-opened"),
        "{text}"
    );
}

/// `--confine` plants credential decoys in the server's scratch home:
/// with `--read-home` the lax server reads the SSH key as it starts and
/// the AWS credentials on each call to `tally`: one finding each, told by
/// when it happened. The same server without the flag opens none (the
/// control; the probes name none either: the test above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_opens_the_keys_of_its_home_is_found_by_the_decoys() {
    let confined = Options {
        confine: true,
        ..options()
    };
    let opened = |report: &Report| -> Vec<(Option<String>, String)> {
        let mut found: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == "credential-file-opened")
            .map(|f| (f.tool.clone(), f.evidence.clone().unwrap_or_default()))
            .collect();
        found.sort();
        found
    };
    let report = audit(&confined, &["--read-home".to_owned()]).await;
    assert_eq!(
        opened(&report),
        [
            (None, "opened: `~/.ssh/id_ed25519`".to_owned()),
            (
                Some("tally".to_owned()),
                "opened: `~/.aws/credentials`".to_owned()
            ),
        ],
        "{}",
        report.text()
    );
    let control = audit(&confined, &[]).await;
    assert_eq!(opened(&control), [], "{}", control.text());
}

/// `--confine` where the kernel scopes signals (Landlock ABI 6): the
/// server sends `SIGTERM` at start to a process of the test's. Unconfined,
/// it dies of it (the positive control); confined, it lives on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_server_cannot_signal_a_process_outside() {
    if !hardened_mcp_audit::confine::Confinement::new(None, None)
        .unwrap()
        .scoped()
    {
        eprintln!("this kernel's Landlock does not scope signals: skipped");
        return;
    }
    let target = || {
        std::process::Command::new("sleep")
            .arg("4246")
            .spawn()
            .unwrap()
    };
    let args = |pid: u32| ["--signal".to_owned(), pid.to_string()];
    let ended = |c: &mut std::process::Child| {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            if c.try_wait().unwrap().is_some() {
                return true;
            }
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut free = target();
    let report = audit(&options(), &args(free.id())).await;
    assert!(ended(&mut free), "{}", report.text());
    let mut kept = target();
    let confined = Options {
        confine: true,
        ..options()
    };
    let report = audit(&confined, &args(kept.id())).await;
    let alive = kept.try_wait().unwrap().is_none();
    let _ = kept.kill();
    let _ = kept.wait();
    assert!(alive, "{}", report.text());
}

/// The schema-valid calls without `--scratch`.
fn audit_options_valid() -> Options {
    Options {
        allow_valid_calls: true,
        ..options()
    }
}
