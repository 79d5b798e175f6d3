//! `hardened-mcp-audit` against servers nobody here wrote: the official reference
//! servers `server-everything`, `server-filesystem` and `server-memory`
//! (npm) and `mcp-server-time` (PyPI), installed pinned by
//! `.ci/setup-audit-servers` (run here on first use). Default options, the
//! ones safe against production: only calls the schema forbids are sent.
//! And the archived reference `mcp-server-sqlite` (PyPI, 2025.4.25) on a
//! scratch database with `--allow-valid-calls --scratch`: its known defect,
//! a `write_query` that refuses only `SELECT` and so runs `ATTACH` and
//! `VACUUM INTO` wherever they point, is found. And the reference
//! `mcp-server-fetch` (PyPI, 2026.10.24) in the audit's private network:
//! it reads the whole of any response (found), refuses internal addresses
//! by default (nothing found) and fetches them with `--allow-private-ips`
//! (found). And the reference `mcp-server-git` 2025.7.1, before two of
//! its published defects were fixed: both are found; and `server-filesystem`
//! 2025.3.28, before its path-prefix defect was fixed: found; and
//! `mcp-server-motherduck` 1.1.0, whose read-only query writes files.
//!
//! For each: the audit completes, every tool gets a baseline (no
//! `no-baseline`, no `schema-unsatisfiable`), and the findings are held
//! exactly against `tests/audit-servers/snapshots/<server>.txt`, one
//! finding a line (severity, rule, tool, property, mutation). A change is a
//! test failure to look at: a new finding of the audit, or a changed
//! server. `HARDENED_MCP_UPDATE_AUDIT_SNAPSHOTS=1` rewrites the snapshots
//! (then read the diff).
//!
//! Without Node.js the Node servers are skipped (said so), unless
//! `HARDENED_MCP_REQUIRE_NODE` is set (CI sets it).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use hardened_mcp_audit::Report;
use hardened_mcp_audit::run::{Options, audit_stdio};
use hardened_mcp_tests::node::REQUIRE_ENV;
use hardened_mcp_tests::python::workspace;

/// Where `.ci/setup-audit-servers` installs, installed on first use.
fn servers() -> PathBuf {
    static SETUP: Mutex<()> = Mutex::new(());
    let _once = SETUP.lock().unwrap_or_else(|p| p.into_inner());
    let dest = std::env::var_os("HARDENED_MCP_AUDIT_SERVERS")
        .map_or_else(|| workspace().join("target/audit-servers"), PathBuf::from);
    let ready = dest
        .join("node/node_modules/@modelcontextprotocol/server-memory/package.json")
        .exists()
        && dest
            .join("node/node_modules/server-filesystem-2025.3.28/package.json")
            .exists()
        && dest.join("venv/bin/mcp-server-time").exists()
        && dest.join("venv-sqlite/bin/mcp-server-sqlite").exists()
        && dest.join("venv-fetch/bin/mcp-server-fetch").exists()
        && dest.join("venv-git/bin/mcp-server-git").exists()
        && dest
            .join("venv-motherduck/bin/mcp-server-motherduck")
            .exists();
    if !ready {
        let status = Command::new("bash")
            .arg(workspace().join(".ci/setup-audit-servers"))
            .env("HARDENED_MCP_AUDIT_SERVERS", &dest)
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            ".ci/setup-audit-servers could not install the pinned servers"
        );
    }
    dest
}

fn has_node() -> bool {
    let ok = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os(REQUIRE_ENV).is_none(),
            "Node.js is required here ({REQUIRE_ENV} is set) but `node` is not on PATH"
        );
        eprintln!("Node.js is not installed: skipped");
    }
    ok
}

/// The audit of `program args`, each exchange bounded by 10 s (a server
/// answers in milliseconds; the margin is for a loaded CI machine), the whole
/// by 400 s.
async fn audit(program: &str, args: &[String]) -> Report {
    let opts = Options {
        timeout: Duration::from_secs(10),
        ..Options::default()
    };
    tokio::time::timeout(Duration::from_secs(400), audit_stdio(program, args, &opts))
        .await
        .expect("the audit did not finish within 400 s")
}

/// One line per finding, sorted.
fn lines(report: &Report) -> Vec<String> {
    report
        .keys()
        .into_iter()
        .map(|(sev, rule, tool, prop, what)| {
            format!("{} {rule} {tool} {prop} {what}", sev.as_str())
                .trim_end()
                .to_owned()
        })
        .collect()
}

/// Holds `report` against the snapshot of `name`.
fn hold(name: &str, report: &Report, tools: usize) {
    assert_eq!(report.tools, tools, "{}", report.text());
    for f in &report.findings {
        assert!(
            !matches!(
                f.rule,
                "no-baseline" | "schema-unsatisfiable" | "handshake-failed" | "tools-list-failed"
            ),
            "{}",
            report.text()
        );
    }
    let path = workspace().join(format!("tests/audit-servers/snapshots/{name}.txt"));
    let got = lines(report);
    if std::env::var_os("HARDENED_MCP_UPDATE_AUDIT_SNAPSHOTS").is_some() {
        std::fs::write(&path, got.join("\n") + "\n").unwrap();
        return;
    }
    let want: Vec<String> = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    let missing: Vec<&String> = want.iter().filter(|l| !got.contains(l)).collect();
    let new: Vec<&String> = got.iter().filter(|l| !want.contains(l)).collect();
    assert!(
        got == want,
        "the findings on {name} changed (HARDENED_MCP_UPDATE_AUDIT_SNAPSHOTS=1 rewrites {}):\n\
         no longer found: {missing:#?}\nnewly found: {new:#?}\n{}",
        path.display(),
        report.text()
    );
}

fn node_server(dir: &std::path::Path, package: &str) -> String {
    dir.join(format!(
        "node/node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ))
    .to_string_lossy()
    .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything() {
    if !has_node() {
        return;
    }
    let dir = servers();
    let report = audit("node", &[node_server(&dir, "server-everything")]).await;
    hold("server-everything", &report, 13);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem() {
    if !has_node() {
        return;
    }
    let dir = servers();
    let root = tempfile::tempdir().unwrap();
    let args = [
        node_server(&dir, "server-filesystem"),
        root.path().to_string_lossy().into_owned(),
    ];
    let report = audit("node", &args).await;
    hold("server-filesystem", &report, 14);
    // Only forbidden calls were sent, and the server refused them: nothing
    // was written in the directory it was given.
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}

/// The same server probed on a scratch directory, confined, with every
/// probe that may change state (`--allow-valid-calls --scratch --confine
/// --scope`): it resolves each path, links and all, and refuses what lies
/// outside its directories, so no traversal, link or `file:` probe reads
/// or writes anything, and it leaves no process behind; in the audit's
/// private network it fetches no other machine and sends nothing, and it
/// opens none of the credential decoys. (The positive controls of those
/// probes are the lax server's tools.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_probed_confined_escapes_nothing() {
    if !has_node() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let report = probed_confined(node_server(&servers(), "server-filesystem"), root.path()).await;
    let text = report.text();
    assert_eq!(report.tools, 14, "{text}");
    assert!(escapes(&report).is_empty(), "{text}");
    // The schema-valid calls did write, where the server serves.
    assert!(
        std::fs::read_dir(root.path()).unwrap().count() > 0,
        "{text}"
    );
}

/// `server-filesystem` 2025.3.28, before its published path-prefix defect
/// (CVE-2025-53110, fixed in 2025.7.1), probed the same way: it resolves
/// links, then checks that the path's text begins with its directory's,
/// so in the directory the audit plants beside its `--scope` (the scope's
/// name and a suffix) `read_file` reads the audit's file, `write_file`
/// writes and `create_directory` makes directories, and nowhere else: the
/// traversals and the planted links are refused, as by the version after
/// it. (Its tools carry no annotations, so each is probed as one that may
/// write, which is also asked to read the audit's own file there.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_before_its_prefix_fix_is_left_beside_its_directory() {
    if !has_node() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let server = servers().join("node/node_modules/server-filesystem-2025.3.28/dist/index.js");
    let report = probed_confined(server.display().to_string(), root.path()).await;
    let text = report.text();
    assert_eq!(
        escapes(&report),
        [
            ("path-prefix-escape-read", "read_file"),
            ("path-prefix-escape-write", "create_directory"),
            ("path-prefix-escape-write", "write_file"),
        ],
        "{text}"
    );
    // What the audit planted beside the scope is gone.
    let left = hardened_mcp_tests::planted::beside(root.path());
    assert!(left.is_empty(), "{left:?}\n{text}");
}

/// The Node server `script` serving `root`, audited with every probe that
/// may change state, confined, in the private network, `root` its scope.
async fn probed_confined(script: String, root: &std::path::Path) -> Report {
    let args = [script, root.display().to_string()];
    let opts = Options {
        timeout: Duration::from_secs(10),
        allow_valid_calls: true,
        scratch: true,
        confine: true,
        private_network: true,
        scope: Some(root.to_owned()),
        wire: false,
        ..Options::default()
    };
    tokio::time::timeout(Duration::from_secs(400), audit_stdio("node", &args, &opts))
        .await
        .expect("the audit did not finish within 400 s")
}

/// The findings of an effect outside the server's scope (files read or
/// written, URLs fetched, the network reached, decoys opened, processes
/// left), as rule and tool, sorted.
fn escapes(report: &Report) -> Vec<(&'static str, &str)> {
    let mut escapes: Vec<(&'static str, &str)> = report
        .findings
        .iter()
        .filter(|f| {
            let r = f.rule;
            r.ends_with("-read")
                || r.ends_with("-write")
                || r.ends_with("-written")
                || r.starts_with("url-")
                || r.starts_with("network-")
                || r == "credential-file-opened"
                || r == "process-left-behind"
        })
        .map(|f| (f.rule, f.tool.as_deref().unwrap_or_default()))
        .collect();
    escapes.sort_unstable();
    escapes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_memory() {
    if !has_node() {
        return;
    }
    let dir = servers();
    let state = tempfile::tempdir().unwrap();
    let memory = state.path().join("memory.jsonl");
    let args = [
        format!("MEMORY_FILE_PATH={}", memory.display()),
        "node".to_owned(),
        node_server(&dir, "server-memory"),
    ];
    let report = audit("env", &args).await;
    hold("server-memory", &report, 9);
    assert!(!memory.exists(), "a forbidden call was stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_time() {
    let dir = servers();
    let program = dir.join("venv/bin/mcp-server-time");
    let report = audit(
        &program.to_string_lossy(),
        &["--local-timezone".to_owned(), "UTC".to_owned()],
    )
    .await;
    hold("mcp-server-time", &report, 2);
}

/// The archived reference SQLite server, on a database of its own in a
/// scratch directory, audited with the probes that may change state: its
/// `write_query`, which refuses only statements starting with `SELECT`,
/// makes a file where the audit's `ATTACH` points (`sql-file-written`);
/// `read_query`, which takes `SELECT` statements only, one at a time,
/// makes none. Its other findings are those checked by hand: numbers
/// accepted for strings by `describe_table` and `append_insight`, unknown
/// keys accepted, and refusals sent as ordinary results (`error-as-result`).
/// Its `read_query` runs SQLite on the event loop, so the long query leaves
/// a `ping` waiting (`server-blocked-by-call`).
/// Confined (`--confine`, its scratch directory as `--scope`): the audit's
/// `ATTACH` still lands in the audit's own directory, and nothing else
/// outside the scratch directory can be written; in the audit's private
/// network it sends nothing and opens no credential decoy (no finding of
/// either: the highs above are all it has).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_servers_write_query_writes_files_anywhere() {
    let program = servers().join("venv-sqlite/bin/mcp-server-sqlite");
    let scratch = tempfile::tempdir().unwrap();
    let db = scratch.path().join("scratch.db").display().to_string();
    let opts = Options {
        timeout: Duration::from_secs(10),
        allow_valid_calls: true,
        scratch: true,
        scope: Some(scratch.path().to_owned()),
        confine: true,
        private_network: true,
        wire: false,
        ..Options::default()
    };
    let report = tokio::time::timeout(
        Duration::from_secs(400),
        audit_stdio(
            &program.to_string_lossy(),
            &["--db-path".to_owned(), db],
            &opts,
        ),
    )
    .await
    .expect("the audit did not finish within 400 s");
    let text = report.text();
    let written: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.rule == "sql-file-written")
        .filter_map(|f| f.tool.as_deref())
        .collect();
    assert_eq!(written, ["write_query"], "{text}");
    let mut highs: Vec<(&str, &str)> = report
        .findings
        .iter()
        .filter(|f| f.severity == hardened_mcp_audit::Severity::High)
        .map(|f| (f.rule, f.tool.as_deref().unwrap_or_default()))
        .collect();
    highs.sort();
    assert_eq!(
        highs,
        [
            ("forbidden-call-accepted", "append_insight"),
            ("forbidden-call-accepted", "describe_table"),
            ("sql-file-written", "write_query"),
        ],
        "{text}"
    );
    assert!(
        report.findings.iter().any(|f| f.rule == "error-as-result"),
        "{text}"
    );
    // Its handler runs SQLite on the event loop: a long query stalls it.
    let blocked: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.rule == "server-blocked-by-call")
        .filter_map(|f| f.tool.as_deref())
        .collect();
    assert_eq!(blocked, ["read_query"], "{text}");
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.rule.starts_with("network-")),
        "{text}"
    );
}

/// `mcp-server-motherduck` 1.1.0 (DuckDB) on a local database file, in its
/// default read-only mode, audited with `--allow-valid-calls` only (no
/// `--scratch`: its `execute_query` says it is read-only, so a schema-valid
/// call is what the annotation invites), confined, in the private network:
/// DuckDB runs `COPY (SELECT 1) TO 'FILE'` on a connection opened
/// read-only, so the tool that refuses `CREATE` and `INSERT` writes a file
/// wherever a caller says (`sql-file-written`), and returns any file
/// `read_text` is given (`sql-file-read`), while the database is left as
/// it was. The control: the same server given `--init-sql "SET
/// enable_external_access = false"`, DuckDB's own switch for both, refuses
/// the statements, and nothing is found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_motherduck_servers_read_only_query_writes_files_anywhere() {
    let venv = servers().join("venv-motherduck/bin");
    let scratch = tempfile::tempdir().unwrap();
    let db = scratch.path().join("data.duckdb");
    let made = Command::new(venv.join("python"))
        .arg("-c")
        .arg("import duckdb, sys; c = duckdb.connect(sys.argv[1]); c.execute('CREATE TABLE notes (id INTEGER, body VARCHAR)'); c.execute(\"INSERT INTO notes VALUES (1, 'a')\"); c.close()")
        .arg(&db)
        .status()
        .unwrap();
    assert!(made.success());
    let before = std::fs::read(&db).unwrap();
    let opts = Options {
        timeout: Duration::from_secs(10),
        allow_valid_calls: true,
        scope: Some(scratch.path().to_owned()),
        confine: true,
        private_network: true,
        wire: false,
        ..Options::default()
    };
    let program = venv.join("mcp-server-motherduck").display().to_string();
    let args = ["--db-path".to_owned(), db.display().to_string()];
    let report = tokio::time::timeout(
        Duration::from_secs(400),
        audit_stdio(&program, &args, &opts),
    )
    .await
    .expect("the audit did not finish within 400 s");
    let text = report.text();
    let highs: Vec<(&str, &str)> = report
        .findings
        .iter()
        .filter(|f| f.severity == hardened_mcp_audit::Severity::High)
        .map(|f| (f.rule, f.tool.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(
        highs,
        [
            ("sql-file-read", "execute_query"),
            ("sql-file-written", "execute_query")
        ],
        "{text}"
    );
    let written = &report.findings[report
        .findings
        .iter()
        .position(|f| f.rule == "sql-file-written")
        .unwrap()];
    let evidence = written.evidence.as_deref().unwrap_or_default();
    assert!(
        evidence.starts_with("`sql` = \"COPY (SELECT 1) TO '/"),
        "{evidence}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), before, "{text}");
    let closed = [
        args.to_vec(),
        vec![
            "--init-sql".to_owned(),
            "SET enable_external_access = false".to_owned(),
        ],
    ]
    .concat();
    let report = tokio::time::timeout(
        Duration::from_secs(400),
        audit_stdio(&program, &closed, &opts),
    )
    .await
    .expect("the audit did not finish within 400 s");
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.severity == hardened_mcp_audit::Severity::High),
        "{}",
        report.text()
    );
}

/// The reference fetch server, audited with the probes that may change
/// state (`--allow-valid-calls --scratch`, nothing of its own to change),
/// confined, in the audit's private network: its `fetch` refuses every
/// loopback, private and metadata address (checked on the resolved address
/// of each request, redirects included), so no `url-fetch-*`; but it reads
/// the whole of a response before cutting it to `max_length`, so the 64 MiB
/// answer of a public address (local to the audit's network) is read whole:
/// `url-response-unbounded`, its only medium or high. Started with
/// `--allow-private-ips` (its documented opt-out) it fetches the loopback:
/// `url-fetch-loopback`, the positive control of the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fetch_servers_fetch_reads_whole_responses() {
    let program = servers().join("venv-fetch/bin/mcp-server-fetch");
    let opts = Options {
        timeout: Duration::from_secs(10),
        allow_valid_calls: true,
        scratch: true,
        confine: true,
        private_network: true,
        wire: false,
        ..Options::default()
    };
    for args in [&[][..], &["--allow-private-ips".to_owned()][..]] {
        let report = tokio::time::timeout(
            Duration::from_secs(400),
            audit_stdio(&program.to_string_lossy(), args, &opts),
        )
        .await
        .expect("the audit did not finish within 400 s");
        let text = report.text();
        let mut serious: Vec<(&str, &str)> = report
            .findings
            .iter()
            .filter(|f| f.severity >= hardened_mcp_audit::Severity::Medium)
            .map(|f| (f.rule, f.tool.as_deref().unwrap_or_default()))
            .collect();
        serious.sort();
        let want: &[(&str, &str)] = match args.is_empty() {
            true => &[("url-response-unbounded", "fetch")],
            false => &[
                ("url-fetch-loopback", "fetch"),
                ("url-response-unbounded", "fetch"),
            ],
        };
        assert_eq!(serious, want, "{text}");
    }
}

/// `server-everything` with the probes that may change state, in the
/// audit's private network: its `gzip-file-as-resource` fetches the URL in
/// `data` (a URL by its format and default, not its name) from any domain
/// unless `GZIP_ALLOWED_DOMAINS` is set, so the loopback URL is requested:
/// `url-fetch-loopback`, its only high; it refuses a declared length over
/// its 10 MB cap and counts what it reads, so the 64 MiB answer is not
/// read whole (no `url-response-unbounded`), and a tool given URLs is not
/// held to the network it reached (no `network-reached`). No medium: its
/// long operation answers pings while it runs (`valid-call-slow`, info).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_probed_fetches_any_url_and_caps_what_it_reads() {
    if !has_node() {
        return;
    }
    let dir = servers();
    let opts = Options {
        timeout: Duration::from_secs(10),
        allow_valid_calls: true,
        scratch: true,
        private_network: true,
        wire: false,
        ..Options::default()
    };
    let args = [node_server(&dir, "server-everything")];
    let report = tokio::time::timeout(Duration::from_secs(400), audit_stdio("node", &args, &opts))
        .await
        .expect("the audit did not finish within 400 s");
    let text = report.text();
    let highs: Vec<(&str, &str)> = report
        .findings
        .iter()
        .filter(|f| f.severity == hardened_mcp_audit::Severity::High)
        .map(|f| (f.rule, f.tool.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(
        highs,
        [("url-fetch-loopback", "gzip-file-as-resource")],
        "{text}"
    );
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.rule == "url-response-unbounded" || f.rule.starts_with("network-")),
        "{text}"
    );
    // Its 10 s operation answers pings meanwhile: a note at most.
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.severity == hardened_mcp_audit::Severity::Medium),
        "{text}"
    );
}

/// The reference Git server as of 2025.7.1, confined, started (with
/// `env -C`) in a scratch directory that is its `--scope` and holds a
/// repository at `a`, the path of the audit's baseline: its `git_init`
/// makes a repository wherever `repo_path` says (`path-traversal-write`,
/// fixed upstream since) and its `git_diff` hands `target` to `git diff`
/// as an argument, so `--output=FILE` writes FILE (`option-injection-write`,
/// fixed since with `--`). Its other highs are integers taken as strings,
/// arrays or `NaN` (`forbidden-call-accepted`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_git_servers_init_and_diff_write_where_a_caller_says() {
    let program = servers().join("venv-git/bin/mcp-server-git");
    let scope = tempfile::tempdir().unwrap();
    let repo = scope.path().join("a");
    let git = |dir: &std::path::Path, args: &[&str]| {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=audit",
                "-c",
                "user.email=audit@example.org",
            ])
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("notes.txt"), "kept\n").unwrap();
    git(&repo, &["add", "notes.txt"]);
    git(&repo, &["commit", "-q", "-m", "scratch"]);
    let opts = Options {
        timeout: Duration::from_secs(10),
        allow_valid_calls: true,
        scratch: true,
        confine: true,
        scope: Some(scope.path().to_owned()),
        wire: false,
        ..Options::default()
    };
    let args = [
        "-C".to_owned(),
        scope.path().display().to_string(),
        program.display().to_string(),
    ];
    let report = tokio::time::timeout(Duration::from_secs(400), audit_stdio("env", &args, &opts))
        .await
        .expect("the audit did not finish within 400 s");
    let text = report.text();
    let mut highs: Vec<(&str, &str)> = report
        .findings
        .iter()
        .filter(|f| f.severity == hardened_mcp_audit::Severity::High)
        .filter(|f| f.rule != "forbidden-call-accepted")
        .map(|f| (f.rule, f.tool.as_deref().unwrap_or_default()))
        .collect();
    highs.sort();
    assert_eq!(
        highs,
        [
            ("option-injection-write", "git_diff"),
            ("path-traversal-write", "git_init"),
        ],
        "{text}"
    );
}
