//! The audit of one server, over stdio or streamable HTTP: handshake,
//! schema review, forbidden calls per tool, wire checks; every wait
//! bounded, the whole bounded in count.

use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{Awaited, Client, ClientError, Overlap};
use crate::confine::Confinement;
use crate::fetch::Reach;
use crate::finding::{Finding, Severity};
use crate::mutate::{self, Canary};
use crate::netns::PrivateNetwork;
use crate::pin::{self, PinFile};
use crate::report::Report;
use crate::schema::NoBaseline;
use crate::stdio::Isolation;
use crate::traversal::{Aim, PlantedLink, Sibling};
use crate::{poisoning, review};

/// What the audit may do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Deadline of each exchange.
    pub timeout: Duration,
    /// Deadline of the first answer (`initialize`), which includes the
    /// server's start: an interpreter, a package runner. As given, shorter
    /// than [`Options::timeout`] too.
    pub startup_timeout: Duration,
    /// Most forbidden calls per tool.
    pub max_calls_per_tool: usize,
    /// Most tools audited.
    pub max_tools: usize,
    /// Run the wire checks (raw lines).
    pub wire: bool,
    /// Also send the schema-valid baseline, to tools annotated read-only
    /// and not destructive only.
    pub allow_valid_calls: bool,
    /// The pins of a pin file to compare the tools listed against.
    pub pinned: Option<PinFile>,
    /// Over HTTP, check the authorization and origin surface
    /// ([`crate::auth`]).
    pub auth_checks: bool,
    /// Over HTTP, a token the server's issuer minted for another resource
    /// (a test issuer's): it must be refused.
    pub other_audience_token: Option<String>,
    /// Write every exchange with the server to this file (`--trace`).
    pub trace: Option<std::path::PathBuf>,
    /// The server runs on a scratch copy of what it serves: the
    /// schema-valid calls of [`Options::allow_valid_calls`] go to every
    /// tool, not only those annotated read-only (`--scratch`).
    pub scratch: bool,
    /// The directory the server serves (a scratch copy): with
    /// [`Options::allow_valid_calls`], a symbolic link to `/etc` is planted
    /// there for the path probes and removed at the end (`--scope`).
    pub scope: Option<std::path::PathBuf>,
    /// Start a stdio server under Landlock, writing only in
    /// [`Options::scope`], a scratch home and the audit's own directory
    /// (`--confine`); refused, the server not started, where Landlock
    /// cannot enforce it.
    pub confine: bool,
    /// Start a stdio server in a network namespace of the audit's
    /// ([`crate::netns`]): nothing it sends leaves the machine, the URL
    /// probes also try private and cloud-metadata addresses, and what it
    /// sends elsewhere is counted (`--private-network`); refused, the
    /// server not started, where the namespace cannot be made.
    pub private_network: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            startup_timeout: Duration::from_secs(60),
            max_calls_per_tool: 120,
            max_tools: 200,
            wire: true,
            allow_valid_calls: false,
            pinned: None,
            auth_checks: true,
            other_audience_token: None,
            trace: None,
            scratch: false,
            scope: None,
            confine: false,
            private_network: false,
        }
    }
}

/// How the server answered a forbidden call; `echo`: the answer repeats
/// a string or number the caller sent.
enum Answer {
    Rejected {
        echo: bool,
    },
    Accepted {
        echo: bool,
    },
    /// A result not marked `isError` whose text is all error messages:
    /// refused, but told as a success.
    ErrorAsResult,
    Silent,
    Dead,
}

/// How much an accepted forbidden call matters, by what it broke: a value
/// of another type (a string for a number, the valid value itself as a
/// string or in an array, a non-finite literal, a fraction for an
/// integer), a path or a command where the schema forbids one is acted on
/// as if valid: high. A value outside its declared range,
/// length, pattern or set, a missing or an extra key: medium.
fn accepted_severity(what: &str) -> Severity {
    let wrong_kind = what.starts_with("wrong type")
        || matches!(
            what,
            "path traversal"
                | "shell metacharacters"
                | "non-finite literal 1e999"
                | "NaN literal"
                | "huge literal 1e308"
                | "fraction for an integer"
                | "null"
        );
    if wrong_kind {
        Severity::High
    } else {
        Severity::Medium
    }
}

/// Audits the stdio server `program args` (started here, killed at the
/// end).
pub async fn audit_stdio(program: &str, args: &[String], opts: &Options) -> Report {
    let target = std::iter::once(program.to_owned())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let own = own_dir(opts);
    let sibling = sibling(opts);
    let confinement = match opts.confine {
        true => match Confinement::new(
            opts.scope.as_deref(),
            own.iter()
                .map(tempfile::TempDir::path)
                .chain(sibling.iter().flatten().map(Sibling::path)),
        ) {
            Ok(c) => Some(c),
            Err(e) => return not_started(target, UNCONFINABLE, &e),
        },
        false => None,
    };
    let network = match opts.private_network {
        true => match PrivateNetwork::new() {
            Ok(n) => Some(n),
            Err(e) => return not_started(target, NO_PRIVATE_NETWORK, &e),
        },
        false => None,
    };
    let isolation = Isolation {
        confinement: confinement.as_ref(),
        network: network.as_ref(),
    };
    let client = Client::stdio(program, args, opts.timeout, isolation);
    let planted = Planted { own, sibling };
    audit(target, client, opts, planted, isolation).await
}

/// Why an isolation asked for could not be had (the server not started).
const UNCONFINABLE: (&str, &str) = (
    "confinement-unavailable",
    "--confine or --private-network was asked for and cannot be had here: the server was not \
     started",
);
const NO_PRIVATE_NETWORK: (&str, &str) = (
    "private-network-unavailable",
    "--private-network was asked for and no network namespace could be made here (it takes \
     root, or CAP_SYS_ADMIN, and iproute2's ip): the server was not started",
);

/// The report of a server that was not started because the isolation
/// asked for could not be had: `(rule, message)`, and the error escaped.
fn not_started(
    target: String,
    (rule, message): (&'static str, &str),
    e: &std::io::Error,
) -> Report {
    let mut report = Report::empty(target);
    report.findings.push(
        Finding::new(Severity::High, rule, message).evidence(&crate::text::escape(&e.to_string())),
    );
    report
}

/// The audit's own directory (with `--allow-valid-calls`): where the SQL
/// and write probes point, removed with what is in it at the end.
fn own_dir(opts: &Options) -> Option<tempfile::TempDir> {
    opts.allow_valid_calls
        .then(|| {
            tempfile::Builder::new()
                .prefix("hardened-mcp-audit-")
                .tempdir()
                .ok()
        })
        .flatten()
}

/// The directory planted beside `--scope` (with `--allow-valid-calls`)
/// for the path probes, or why it could not be.
fn sibling(opts: &Options) -> Option<std::io::Result<Sibling>> {
    let scope = opts.scope.as_deref().filter(|_| opts.allow_valid_calls)?;
    Some(Sibling::plant(scope))
}

/// What the audit made for its probes, outside what the server serves,
/// removed at the end: its own directory and the scope's sibling.
struct Planted {
    own: Option<tempfile::TempDir>,
    sibling: Option<std::io::Result<Sibling>>,
}

/// Audits the streamable HTTP server at `url`, sending `bearer` (the token
/// itself, never printed) as `Authorization: Bearer` when given.
pub async fn audit_http(url: &str, bearer: Option<String>, opts: &Options) -> Report {
    let auth = if opts.auth_checks {
        let marker = Canary::fresh();
        crate::auth::checks(
            url,
            bearer.as_deref(),
            opts.other_audience_token.as_deref(),
            opts.timeout,
            &marker.text,
        )
        .await
    } else {
        Vec::new()
    };
    let mut report = audit(
        url.to_owned(),
        Client::http(url, bearer, opts.timeout),
        opts,
        Planted {
            own: own_dir(opts),
            sibling: sibling(opts),
        },
        Isolation::default(),
    )
    .await;
    report.findings.extend(auth);
    report.sort();
    report
}

async fn audit(
    target: String,
    client: Result<Client, ClientError>,
    opts: &Options,
    Planted {
        own: scratch,
        sibling,
    }: Planted,
    isolation: Isolation<'_>,
) -> Report {
    let network = isolation.network;
    let mut report = Report::empty(target);
    let mut client = match client {
        Ok(c) => c,
        Err(ClientError::Confine(e)) => return not_started(report.target, UNCONFINABLE, &e),
        Err(e) => {
            report.findings.push(Finding::new(
                Severity::High,
                "server-unreachable",
                e.to_string(),
            ));
            return report;
        }
    };
    if let Some(path) = &opts.trace
        && client.trace_to(path).is_err()
    {
        report.findings.push(Finding::new(
            Severity::Info,
            "trace-not-written",
            "the --trace file could not be created: the exchanges were not recorded",
        ));
    }
    let capabilities = match client.handshake_within(opts.startup_timeout).await {
        Ok(result) => result.get("capabilities").cloned().unwrap_or(Value::Null),
        Err(e) => {
            let mut finding = Finding::new(
                Severity::High,
                "handshake-failed",
                format!("the server did not complete the initialize handshake: {e}"),
            );
            // Why a server did not start is in what it wrote to stderr.
            if let Some(tail) = client.stderr_tail().await.filter(|t| !t.trim().is_empty()) {
                let lines: Vec<&str> = tail.lines().rev().take(20).collect();
                let shown: Vec<&str> = lines.into_iter().rev().collect();
                finding = finding.evidence(&format!(
                    "the server's stderr ends: {}",
                    crate::text::escape(&shown.join("\n"))
                ));
            }
            report.findings.push(finding);
            return report;
        }
    };
    let tools = match client.list_tools(20).await {
        Ok(t) => t,
        Err(e) => {
            report.findings.push(Finding::new(
                Severity::High,
                "tools-list-failed",
                format!("tools/list failed: {e}"),
            ));
            return report;
        }
    };
    report.tools = tools.len();
    report.findings.extend(review::review(&tools));
    report.findings.extend(poisoning::review(&tools));
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    other_surfaces(&mut client, &capabilities, &names, &mut report).await;
    let listed = pin::pins(&tools);
    if let Some(pinned) = &opts.pinned {
        report
            .findings
            .extend(pin::compare(pinned, &listed, pin::AGAINST_PIN));
    }

    let canary = Canary::fresh();
    // Where a tool that fetches any URL it is given would come.
    let listener = match opts.allow_valid_calls {
        true => crate::fetch::Listener::bind(network).await.ok(),
        false => None,
    };
    // The audit's own directory, where the probes of a tool that may write
    // point, by its real path (a link planted to it is left by that path).
    let own = scratch.as_ref().and_then(|d| d.path().canonicalize().ok());
    // The links through which the path probes leave the served directory:
    // to `/etc` for reads, to the audit's directory for writes.
    let scope = opts.scope.as_deref().filter(|_| opts.allow_valid_calls);
    let link = scope.and_then(|s| plant(s, std::path::Path::new("/etc"), &mut report));
    let write_link = match (scope, &own) {
        (Some(s), Some(own)) if opts.scratch => plant(s, own, &mut report),
        _ => None,
    };
    let sibling = sibling.and_then(|planted| {
        planted_or_told(
            planted,
            "scope-sibling-not-planted",
            "no directory could be made beside the --scope directory: the path probes did not \
             try a path that shares its prefix",
            &mut report,
        )
    });
    // What the server does outside its scope (decoys opened, the network
    // reached), told by the part of the audit it happened in.
    let decoys = isolation.confinement.map(Confinement::decoys);
    let port = listener.as_ref().map(crate::fetch::Listener::port);
    let mut watch = crate::effects::Watch::new(network, decoys, port);
    // Set when the server stopped answering: nothing after is judged.
    let mut silent = false;
    'tools: for tool in tools.iter().take(opts.max_tools) {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(schema) = tool.get("inputSchema") else {
            continue;
        };
        if let Some(w) = &mut watch {
            let next = crate::effects::Part::Tool {
                name: name.clone(),
                fetches: crate::traversal::has_url_params(schema),
            };
            report.findings.extend(w.next(next));
        }
        let baseline = match mutate::baseline(schema) {
            Ok(b) => b,
            Err(NoBaseline::Unsatisfiable { pointer, reason }) => {
                report.findings.push(
                    Finding::new(
                        Severity::Medium,
                        "schema-unsatisfiable",
                        format!(
                            "the input schema admits no arguments at all ({reason}): \
                             every call fails, and a model keeps trying"
                        ),
                    )
                    .tool(&name)
                    .property(&pointer),
                );
                continue;
            }
            Err(NoBaseline::Underived { reason }) => {
                report.findings.push(
                    Finding::new(
                        Severity::Info,
                        "no-baseline",
                        format!("{reason}: forbidden calls were not sent"),
                    )
                    .tool(&name),
                );
                continue;
            }
        };
        if opts.allow_valid_calls && (opts.scratch || is_harmless(tool)) {
            valid_calls(&mut client, &name, schema, &baseline, &canary, &mut report).await;
            long_query_probe(&mut client, &name, schema, &baseline, &mut report).await;
            sql_read_probes(&mut client, &name, schema, &baseline, &mut report).await;
            // A tool that may write is pointed only at the audit's own
            // directory, and only where its files are the audit's to see.
            let tool_dir = match (is_harmless(tool), &own) {
                (false, Some(own)) if client.is_stdio() => tempfile::Builder::new()
                    .prefix("tool-")
                    .tempdir_in(own)
                    .ok(),
                _ => None,
            };
            let aim = match &tool_dir {
                _ if is_harmless(tool) => Some(Aim::Read {
                    link: link.as_ref(),
                    sibling: sibling.as_ref(),
                }),
                Some(dir) => Some(Aim::Write {
                    dir: dir.path(),
                    link: write_link.as_ref(),
                    sibling: sibling.as_ref(),
                }),
                None => None,
            };
            if let Some(aim) = &aim {
                traversal_probes(&mut client, &name, schema, &baseline, aim, &mut report).await;
            }
            if let Some(listener) = &listener {
                fetch_probes(
                    &mut client,
                    &name,
                    schema,
                    &baseline,
                    listener,
                    &canary,
                    &mut report,
                )
                .await;
            }
            if let Some(dir) = scratch.as_ref().filter(|_| client.is_stdio()) {
                sql_probes(
                    &mut client,
                    &name,
                    schema,
                    &baseline,
                    dir.path(),
                    &mut report,
                )
                .await;
            }
        }
        let all = mutate::mutations(schema, &baseline, &canary);
        if all.len() > opts.max_calls_per_tool {
            report.findings.push(
                Finding::new(
                    Severity::Info,
                    "max-calls-reached",
                    format!(
                        "{} of the tool's {} forbidden calls were not sent (--max-calls {})",
                        all.len() - opts.max_calls_per_tool,
                        all.len(),
                        opts.max_calls_per_tool
                    ),
                )
                .tool(&name),
            );
        }
        for m in all.into_iter().take(opts.max_calls_per_tool) {
            report.calls += 1;
            let before = client.silence().map(str::to_owned);
            let (answer, reply) = send(&mut client, &name, &m, &canary.text).await;
            // Dead, and silent since an earlier request: that one is
            // where it stopped, not this call.
            if let (Answer::Dead, Some(since)) = (&answer, &before) {
                let stopped = stopped_answering(since);
                // Its valid call unanswered, or holding a ping, is the
                // same cause.
                report.findings.retain(|f| {
                    !matches!(f.rule, "valid-call-unanswered" | BLOCKED)
                        || f.tool.is_none()
                        || f.tool != stopped.tool
                });
                report.findings.push(stopped);
                silent = true;
                break 'tools;
            }
            let (severity, rule, message) = match answer {
                // A strict refusal that names the key it refused is what
                // a closed schema should answer, not a reflection.
                Answer::Rejected { echo: false } => continue,
                Answer::Rejected { echo: true } if m.what == "unknown argument" => continue,
                Answer::Rejected { echo: true } => (
                    Severity::Low,
                    "canary-reflected",
                    format!(
                        "the refusal of a forbidden call ({}) repeats a string or number the \
                         caller sent: harmless to that caller, a carrier for text meant for \
                         whoever reads the answer next",
                        m.what
                    ),
                ),
                Answer::Accepted { echo } => (
                    accepted_severity(m.what),
                    "forbidden-call-accepted",
                    format!(
                        "a call the schema forbids ({}) was accepted and run{}",
                        m.what,
                        if echo {
                            ", its answer repeating what the caller sent"
                        } else {
                            ""
                        }
                    ),
                ),
                Answer::ErrorAsResult => (
                    Severity::Low,
                    "error-as-result",
                    format!(
                        "a call the schema forbids ({}) was refused with an error message in an \
                         ordinary result, not marked isError: a model may read the failure as a \
                         success",
                        m.what
                    ),
                ),
                Answer::Silent => (
                    Severity::High,
                    "call-unanswered",
                    format!(
                        "a forbidden call ({}) got no answer within the deadline",
                        m.what
                    ),
                ),
                Answer::Dead => (
                    Severity::High,
                    "server-died",
                    format!(
                        "the server stopped answering after a forbidden call ({})",
                        m.what
                    ),
                ),
            };
            report.findings.push(
                Finding::new(severity, rule, message)
                    .tool(&name)
                    .property(&m.property)
                    .argument(&m.argument)
                    .mutation(m.what)
                    .exchange(&m.arguments, reply.as_ref()),
            );
            if matches!(answer, Answer::Dead) {
                silent = true;
                break 'tools;
            }
        }
    }
    report
        .findings
        .extend(watch.map(crate::effects::Watch::finish).unwrap_or_default());
    // A second tools/list, after the calls: a server that changes its
    // tools once it has been looked at (a rug pull) shows it here.
    if !client.exited()
        && !silent
        && let Ok(again) = client.list_tools(20).await
    {
        report
            .findings
            .extend(pin::compare(&listed, &pin::pins(&again), pin::IN_SESSION));
    }
    for rule in [BLOCKED, "path-traversal-read", "url-file-read"] {
        one_cause(&mut report, rule);
    }
    report.pins = Some(listed);
    // Without the wire checks, the one line of each non-JSON literal a
    // call left unanswered still tells a parse drop from a hang.
    let literals = unanswered_literals(&report);
    let only = (!opts.wire).then_some(literals.as_slice());
    if (opts.wire || !literals.is_empty()) && !client.exited() && !silent {
        wire_checks(&mut client, &canary.text, &mut report, only).await;
        same_cause_as_the_wire(&mut report);
    }
    left_behind(&mut client, opts, &mut report).await;
    report.sort();
    report
}

/// The finding of a server that answered nothing, pings included, from the
/// request `since` on (as sent: a probe or a schema-valid call, before the
/// call that found it so).
fn stopped_answering(since: &str) -> Finding {
    let sent: Option<Value> = serde_json::from_str(since).ok();
    let tool = sent
        .as_ref()
        .and_then(|v| v.pointer("/params/name"))
        .and_then(Value::as_str);
    let finding = Finding::new(
        Severity::High,
        "server-stopped-answering",
        "the server answered nothing, pings included, from this request on (a call the \
         schema allows): one call left it unable to serve anyone (blocked, hung or waiting \
         forever), and the audit's later checks were not judged",
    )
    .exchange(since, None);
    match tool {
        Some(t) => finding.tool(t),
        None => finding,
    }
}

/// Most the audit waits for a stdio server to exit once its input is
/// closed, and again after `SIGTERM`.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Ends a stdio server as a client should and reports what it started and
/// left running after it exited (killed since).
async fn left_behind(client: &mut Client, opts: &Options, report: &mut Report) {
    let left = client.shut_down(EXIT_GRACE.min(opts.timeout)).await;
    if left.is_empty() {
        return;
    }
    let mut named: Vec<(String, usize)> = Vec::new();
    for name in left.iter().take(64) {
        match named.iter_mut().find(|(n, _)| n == name) {
            Some((_, count)) => *count += 1,
            None => named.push((name.clone(), 1)),
        }
    }
    let names: Vec<String> = named
        .iter()
        .map(|(n, count)| format!("`{}` x{count}", crate::text::escape(n)))
        .collect();
    report.findings.push(
        Finding::new(
            Severity::Medium,
            "process-left-behind",
            format!(
                "after its input closed and it exited, the server left {} process(es) running \
                 that it had started: work and resources nobody can reach any more",
                left.len()
            ),
        )
        .evidence(&format!("still running: {}", names.join(", "))),
    );
}

/// The prompts and resources the server declares: what they say to the
/// model is reviewed as a tool's is, and a resource it never listed
/// (`file:///etc/passwd`) must not be read.
async fn other_surfaces(
    client: &mut Client,
    capabilities: &Value,
    tools: &[&str],
    report: &mut Report,
) {
    let declared = |k: &str| capabilities.get(k).is_some_and(Value::is_object);
    let mut lists = Vec::new();
    if declared("prompts") {
        lists.push(("prompts/list", "prompts"));
    }
    if declared("resources") {
        lists.push(("resources/list", "resources"));
        lists.push(("resources/templates/list", "resourceTemplates"));
    }
    let mut listed = Vec::new();
    for (method, key) in lists {
        report.calls += 1;
        match client.list(method, key, 20).await {
            Ok(items) => {
                report
                    .findings
                    .extend(poisoning::review_listed(key, &items, tools));
                listed.push((key, items));
            }
            Err(ClientError::Timeout) => report.findings.push(Finding::new(
                Severity::Medium,
                "list-unanswered",
                format!(
                    "{method} got no answer within the deadline, though the server declares it"
                ),
            )),
            Err(_) => {}
        }
    }
    for (key, items) in &listed {
        surface_reads(client, key, items, report).await;
    }
    if !declared("resources") {
        return;
    }
    report.calls += 1;
    let id = client.id();
    let read = json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                      "params": {"uri": "file:///etc/passwd"}});
    if let Ok(reply) = client.request(&read).await
        && reply.get("result").is_some()
        && reply.to_string().contains("root:")
    {
        report.findings.push(
            Finding::new(
                Severity::High,
                "resource-outside-listing",
                "resources/read of a URI the server never listed (file:///etc/passwd) returned \
                 the file: a caller reads any file the server can",
            )
            .mutation("unlisted file URI"),
        );
    }
}

/// Most resource templates and prompts whose reads are probed.
const MAX_SURFACE_PROBED: usize = 16;

/// Reads of the listed resource templates (`key` `resourceTemplates`) and
/// prompts (`prompts`) with a path outside what they serve in a variable
/// or an argument ([`crate::traversal`]): reads by the protocol, so sent
/// without `--allow-valid-calls`. One finding per template or prompt that
/// answers with a line of /etc/passwd, at the first such answer.
async fn surface_reads(client: &mut Client, key: &str, items: &[Value], report: &mut Report) {
    for (i, item) in items.iter().enumerate().take(MAX_SURFACE_PROBED) {
        let probes: Vec<(String, Vec<Value>)> = match key {
            "resourceTemplates" => {
                let Some(template) = item.get("uriTemplate").and_then(Value::as_str) else {
                    continue;
                };
                crate::traversal::template_probes(template)
                    .into_iter()
                    .map(|(var, uris)| {
                        let reads = uris.into_iter().map(|uri| json!({"uri": uri})).collect();
                        (var, reads)
                    })
                    .collect()
            }
            "prompts" => {
                let Some(name) = item.get("name").and_then(Value::as_str) else {
                    continue;
                };
                crate::traversal::prompt_probes(item)
                    .into_iter()
                    .map(|(arg, sets)| {
                        let gets = sets
                            .into_iter()
                            .map(|args| json!({"name": name, "arguments": args}))
                            .collect();
                        (arg, gets)
                    })
                    .collect()
            }
            _ => return,
        };
        let method = if key == "prompts" {
            "prompts/get"
        } else {
            "resources/read"
        };
        'item: for (var, requests) in probes {
            for params in requests {
                if client.exited() {
                    return;
                }
                report.calls += 1;
                let id = client.id();
                let request =
                    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                let Ok(reply) = client.request(&request).await else {
                    continue;
                };
                let Some(line) = reply.get("result").and_then(crate::traversal::passwd_line) else {
                    continue;
                };
                let sent = match key {
                    "prompts" => params["arguments"][var.as_str()].clone(),
                    _ => params["uri"].clone(),
                };
                let (rule, pointer, what) = match key {
                    "prompts" => (
                        "prompt-traversal-read",
                        format!("/prompts/{i}/arguments"),
                        "prompts/get with a path outside what the prompt serves in one argument",
                    ),
                    _ => (
                        "resource-template-traversal-read",
                        format!("/resourceTemplates/{i}/uriTemplate"),
                        "resources/read of a URI of a listed template with a path outside what \
                         it serves in one variable",
                    ),
                };
                report.findings.push(
                    Finding::new(
                        Severity::High,
                        rule,
                        format!(
                            "{what} returned a line of /etc/passwd: a caller reads any file the \
                             server can"
                        ),
                    )
                    .property(&pointer)
                    .argument(&format!("/{}", crate::schema::segment(&var)))
                    .evidence(&format!(
                        "`{}` = {} answered: {line}",
                        crate::text::escape(&var),
                        crate::text::escape(&sent.to_string())
                    )),
                );
                break 'item;
            }
        }
    }
}

/// The non-JSON literals (`NaN`, `1e999`) of the calls left unanswered.
fn unanswered_literals(report: &Report) -> Vec<&'static str> {
    let mut literals: Vec<&'static str> = report
        .findings
        .iter()
        .filter(|f| f.rule == "call-unanswered")
        .filter_map(|f| f.mutation)
        .filter(|m| matches!(*m, "NaN literal" | "non-finite literal 1e999"))
        .collect();
    literals.sort_unstable();
    literals.dedup();
    literals
}

/// A tool call holding `NaN` or `1e999` is not JSON: a server that leaves
/// it unanswered, and leaves the same literal unanswered in a plain
/// message of the wire checks, drops what it cannot parse (an SDK's
/// convention), whatever the tool. Those calls are that one cause, a note,
/// not a hang of each tool. (A server whose reader takes the literal, as
/// Python's does, and then leaves the call unanswered keeps the finding.)
fn same_cause_as_the_wire(report: &mut Report) {
    let dropped: Vec<&'static str> = report
        .findings
        .iter()
        .filter(|f| f.rule == "wire-unanswered")
        .filter_map(|f| f.mutation)
        .collect();
    for f in &mut report.findings {
        if f.rule == "call-unanswered" && f.mutation.is_some_and(|m| dropped.contains(&m)) {
            f.severity = Severity::Info;
            f.message = format!(
                "a call holding a literal that is not JSON ({}) got no answer, as the same \
                 literal on the wire did: the server drops what it cannot parse (JSON-RPC asks \
                 for a parse error)",
                f.mutation.unwrap_or_default()
            );
        }
    }
}

/// The schema-valid calls, sent only with `--allow-valid-calls` and only to
/// harmless tools: the baseline (it must be answered), then, where the
/// schema leaves the object open, the baseline with an unknown key (a
/// server that runs it silently drops what a model may have misspelt).
async fn valid_calls(
    client: &mut Client,
    name: &str,
    schema: &Value,
    baseline: &serde_json::Map<String, Value>,
    canary: &Canary,
    report: &mut Report,
) {
    report.calls += 1;
    let id = client.id();
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": name, "arguments": Value::Object(baseline.clone())}});
    // A ping alone, for the server's own pace; then one sent while the
    // call runs.
    let started = std::time::Instant::now();
    let pace = client.alive().await.then(|| started.elapsed());
    let ping = json!({"jsonrpc": "2.0", "id": client.id(), "method": "ping"});
    let overlap = client
        .overlapped(&call, &ping, PING_GAP, Awaited::Both)
        .await;
    if let Some(evidence) = pace.and_then(|p| held_ping(&overlap, p, client.timeout()))
        && !client.exited()
    {
        report.findings.push(
            Finding::new(Severity::Medium, BLOCKED, BLOCKED_MESSAGE)
                .tool(name)
                .evidence(&evidence),
        );
    }
    let pinged = overlap.second.is_ok();
    match overlap.first.map(|(reply, _)| reply) {
        // The server went on answering: a slow tool, not a stalled server.
        Err(ClientError::Timeout) if pinged => report.findings.push(
            Finding::new(
                Severity::Info,
                "valid-call-slow",
                "a schema-valid call got no answer within the deadline while the server went \
                 on answering a ping: a tool that takes long (a client's own deadline may cut \
                 it off), not a stalled server",
            )
            .tool(name),
        ),
        Err(ClientError::Timeout) => report.findings.push(
            Finding::new(
                Severity::Medium,
                "valid-call-unanswered",
                "a schema-valid call got no answer within the deadline, nor did a ping sent \
                 while it ran",
            )
            .tool(name),
        ),
        Ok(reply)
            if matches!(
                classify(&reply, &canary.text, None),
                Answer::Accepted { .. }
            ) =>
        {
            // The baseline's handles were made up here: a server that runs
            // the call does not check handles against what it issued.
            for key in handle_like(schema, baseline) {
                report.findings.push(
                    Finding::new(
                        Severity::High,
                        "made-up-handle-accepted",
                        "a call naming a handle the server never issued was run: \
                         handles must be checked against what this caller was given",
                    )
                    .tool(name)
                    .property(&format!("/properties/{key}")),
                );
            }
        }
        _ => {}
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        return;
    }
    report.calls += 1;
    let mut arguments = baseline.clone();
    arguments.insert(format!("{}_key", canary.text), json!(1));
    let id = client.id();
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": name, "arguments": Value::Object(arguments)}});
    if let Ok(reply) = client.request(&call).await
        && matches!(
            classify(&reply, &canary.text, None),
            Answer::Accepted { .. }
        )
    {
        report.findings.push(
            Finding::new(
                Severity::Low,
                "unknown-key-accepted",
                "a call with an argument the tool does not have was run without a word: \
                 a model's misspelt argument is silently dropped and the default used",
            )
            .tool(name)
            .property("/"),
        );
    }
}

/// The long query ([`crate::sql::LONG_QUERY`]) in each SQL parameter of
/// `name` in turn, with a `ping` in flight beside it, as the baseline was
/// sent: a server that leaves the ping waiting for the query is blocked
/// by it. Not sent to a tool already found blocked.
async fn long_query_probe(
    client: &mut Client,
    name: &str,
    schema: &Value,
    baseline: &serde_json::Map<String, Value>,
    report: &mut Report,
) {
    let blocked = |r: &Report| {
        r.findings
            .iter()
            .any(|f| f.rule == BLOCKED && f.tool.as_deref() == Some(name))
    };
    for (key, arguments) in crate::sql::long_queries(schema, baseline) {
        if client.exited() || blocked(report) {
            return;
        }
        report.calls += 1;
        let started = std::time::Instant::now();
        let pace = client.alive().await.then(|| started.elapsed());
        let call = json!({"jsonrpc": "2.0", "id": client.id(), "method": "tools/call",
                          "params": {"name": name, "arguments": Value::Object(arguments)}});
        let ping = json!({"jsonrpc": "2.0", "id": client.id(), "method": "ping"});
        // The ping's answer decides: a query still running then (an
        // engine that runs it off the event loop) is not waited out.
        let overlap = client
            .overlapped(&call, &ping, PING_GAP, Awaited::Second)
            .await;
        if let Some(evidence) = pace.and_then(|p| held_ping(&overlap, p, client.timeout()))
            && !client.exited()
        {
            report.findings.push(
                Finding::new(Severity::Medium, BLOCKED, BLOCKED_MESSAGE)
                    .tool(name)
                    .evidence(&format!(
                        "`{}` = a long query: {evidence}",
                        crate::text::escape(&key)
                    )),
            );
        }
        // A query still running past the deadline: the next probes wait
        // until the server answers again, so that they are not taken for
        // unanswered.
        if overlap.first.is_err() {
            for _ in 0..SETTLE_PINGS {
                if client.exited() || client.alive().await {
                    break;
                }
            }
        }
    }
}

/// Most pings (each within the deadline) a server still busy with the long
/// query is given to answer again.
const SETTLE_PINGS: usize = 3;

/// The rule of a server that leaves a ping unanswered while a call runs.
const BLOCKED: &str = "server-blocked-by-call";

/// What a server blocked by a call is told.
const BLOCKED_MESSAGE: &str = "while a schema-valid call ran, the server left a ping unanswered \
                               for seconds: one slow call stalls every request of every caller \
                               (a synchronous handler)";

/// How long after a call its ping is sent.
const PING_GAP: Duration = Duration::from_millis(50);

/// The least wait of a ping held behind a call that counts (and at least
/// ten times a ping's own time, so that a server slow at everything is not
/// called blocked).
const HELD: Duration = Duration::from_secs(2);

/// Whether the ping of `o` was held while the call ran: sent before the
/// call's answer, it waited at least [`HELD`] and ten times `pace` (or got
/// no answer within `deadline`). The evidence: how long each took.
fn held_ping(o: &Overlap, pace: Duration, deadline: Duration) -> Option<String> {
    let secs = |d: Duration| format!("{:.1} s", d.as_secs_f64());
    let within = format!("was not answered within {}", secs(deadline));
    let (waited, ping) = match &o.second {
        Ok((_, at)) => {
            let waited = at.saturating_sub(o.second_sent);
            (waited, format!("was answered after {}", secs(waited)))
        }
        Err(ClientError::Timeout) => (deadline.saturating_sub(o.second_sent), within.clone()),
        Err(_) => return None,
    };
    let call = match &o.first {
        Ok((_, took)) if *took <= o.second_sent => return None,
        Ok((_, took)) => format!("took {}", secs(*took)),
        Err(ClientError::Timeout) => within,
        Err(ClientError::NotAwaited) => "was still running".to_owned(),
        Err(_) => return None,
    };
    let sent = o.second_sent.as_millis();
    (waited >= HELD.max(pace.saturating_mul(10)))
        .then(|| format!("the call {call}; a ping sent {sent} ms into it {ping}"))
}

/// The path and URL probes of `name` ([`crate::traversal`]): per
/// parameter, the first value whose answer (not a refusal) holds a passwd
/// root entry is a finding.
async fn traversal_probes(
    client: &mut Client,
    name: &str,
    schema: &Value,
    baseline: &serde_json::Map<String, Value>,
    aim: &Aim<'_>,
    report: &mut Report,
) {
    for of_key in crate::traversal::probes(schema, baseline, aim) {
        for p in of_key {
            if client.exited() {
                return;
            }
            if p.rule == "path-prefix-escape-read"
                && let Some(sibling) = aim.sibling()
                && sibling.replant().is_err()
            {
                continue;
            }
            let reply = probe_call(client, report, name, p.arguments).await;
            let shown = crate::text::escape(&Value::String(p.value).to_string());
            let key = crate::text::escape(&p.key);
            // Aimed to write: whatever the answer says, the file is the
            // effect.
            if let Some(made) = &p.made {
                if made.symlink_metadata().is_err() {
                    continue;
                }
                let message = match p.rule {
                    "url-file-write" => {
                        "a schema-valid call with a file: URL in a URL parameter made that file, \
                         outside anything the server serves: a caller writes files wherever the \
                         server can"
                    }
                    "symlink-escape-write" => {
                        "a schema-valid call with a path within the served directory, through a \
                         symbolic link planted there, made a file outside it: the confinement \
                         checks the path's text, not where it leads"
                    }
                    "path-prefix-escape-write" => {
                        "a schema-valid call with a path in a directory beside the served one, \
                         whose name begins with the served directory's, made a file there: the \
                         confinement compares the path's text as a prefix, not its components"
                    }
                    "option-injection-write" => {
                        "a schema-valid value that begins with `--` was read as an option by a \
                         command the tool runs, and `--output=` made its file: a caller gives \
                         that command whatever options it has (files written, commands run); \
                         end the options with `--` or refuse a leading `-`"
                    }
                    _ => {
                        "a schema-valid call with a path outside the tool's files made a file \
                         there: a caller writes files wherever the server can"
                    }
                };
                report.findings.push(
                    at_parameter(p.rule, message, name, &p.key)
                        .evidence(&format!("`{key}` = {shown} made that file")),
                );
                break;
            }
            let Some(line) = reply.ok().as_ref().and_then(passwd_answered) else {
                continue;
            };
            let (what, message) = if p.rule == "url-file-read" {
                (
                    "a file: URL",
                    "a schema-valid call with a file: URL in a URL parameter returned a line of \
                     /etc/passwd: a caller reads any file the server can",
                )
            } else if p.rule == "path-prefix-escape-read" {
                (
                    "a path in a directory beside the served one, sharing its prefix",
                    "a schema-valid call with a path in a directory beside the served one, whose \
                     name begins with the served directory's, returned the file planted there: \
                     the confinement compares the path's text as a prefix, not its components",
                )
            } else if p.rule == "symlink-escape-read" {
                (
                    "a path within the served directory, through a link planted there",
                    "a schema-valid call with a path within the served directory, through a \
                     symbolic link to /etc planted there, returned a line of /etc/passwd: the \
                     confinement checks the path's text, not where it leads",
                )
            } else {
                (
                    "a path outside the tool's files",
                    "a schema-valid call with a path outside the tool's files returned a line of \
                     /etc/passwd: a caller reads any file the server can",
                )
            };
            report.findings.push(
                at_parameter(p.rule, message, name, &p.key)
                    .evidence(&format!("`{key}` = {shown} ({what}) answered: {line}")),
            );
            break;
        }
    }
}

/// Plants a link to `target` in `scope` (`--scope`), or says why not.
fn plant(
    scope: &std::path::Path,
    target: &std::path::Path,
    report: &mut Report,
) -> Option<PlantedLink> {
    planted_or_told(
        PlantedLink::plant(scope, target),
        "scope-link-not-planted",
        "no symbolic link could be planted in the --scope directory: the path probes did not go \
         through one",
        report,
    )
}

/// What was planted for the probes, or an info finding `rule` saying why
/// not (the OS error escaped as its evidence).
fn planted_or_told<T>(
    planted: std::io::Result<T>,
    rule: &'static str,
    message: &str,
    report: &mut Report,
) -> Option<T> {
    planted
        .map_err(|e| {
            report.findings.push(
                Finding::new(Severity::Info, rule, message)
                    .evidence(&crate::text::escape(&e.to_string())),
            );
        })
        .ok()
}

/// A schema-valid probe: `tools/call` of `name` with `arguments`, counted.
async fn probe_call(
    client: &mut Client,
    report: &mut Report,
    name: &str,
    arguments: serde_json::Map<String, Value>,
) -> Result<Value, ClientError> {
    report.calls += 1;
    let id = client.id();
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": name, "arguments": Value::Object(arguments)}});
    client.request(&call).await
}

/// A high finding of a probe that set the top-level parameter `key` of
/// the tool `name`.
fn at_parameter(rule: &'static str, message: &str, name: &str, key: &str) -> Finding {
    let segment = crate::schema::segment(key);
    Finding::new(Severity::High, rule, message)
        .tool(name)
        .property(&format!("/properties/{segment}"))
        .argument(&format!("/{segment}"))
}

/// The loopback fetch probe of one tool ([`crate::fetch`]): each URL
/// parameter in turn set to the audit's listener, a path of its own.
async fn fetch_probes(
    client: &mut Client,
    name: &str,
    schema: &Value,
    baseline: &serde_json::Map<String, Value>,
    listener: &crate::fetch::Listener,
    canary: &Canary,
    report: &mut Report,
) {
    // The canary, the tool, the key and the spelling, in plain characters:
    // a path of this parameter's.
    let tag = |key: &str, spelling: usize| -> String {
        format!("{}-{name}-{key}-{spelling}", canary.text)
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
            .collect()
    };
    let hosts = listener.hosts();
    let mut found: Vec<String> = Vec::new();
    for (i, (host, _)) in hosts.iter().enumerate() {
        let url = |key: &str| listener.url(host, &tag(key, i));
        for (key, value, arguments) in crate::traversal::url_params(schema, baseline, url) {
            if found.contains(&key) {
                continue;
            }
            if client.exited() {
                return;
            }
            // Whatever the answer says: the request that arrived is the
            // effect.
            let _ = probe_call(client, report, name, arguments).await;
            let now = listener
                .asked_for(&tag(&key, i), Duration::from_millis(500))
                .await;
            // A request of an earlier host that came after its grace (a
            // server fetching in the background) is the same finding, told
            // by the host it asked for.
            let mut arrived = now.then_some(i);
            for j in 0..i {
                if listener.asked_for(&tag(&key, j), Duration::ZERO).await {
                    arrived = Some(j);
                    break;
                }
            }
            let Some((i, (spelt, reach))) = arrived.and_then(|i| Some((i, *hosts.get(i)?))) else {
                continue;
            };
            let value = match value.contains(&tag(&key, i)) {
                true => value,
                false => listener.url(spelt, &tag(&key, i)),
            };
            let (rule, what) = match (reach, i) {
                (Reach::Loopback, 0) => ("url-fetch-loopback", "a loopback URL"),
                (Reach::Loopback, _) => (
                    "url-fetch-loopback",
                    "a loopback URL (the address spelt another way: a filter on the URL's text \
                     is passed)",
                ),
                (Reach::Private, _) => (
                    "url-fetch-private",
                    "the URL of another machine of its network (a private or cloud-metadata \
                     address, every loopback URL refused)",
                ),
            };
            report.findings.push(
                at_parameter(
                    rule,
                    &format!(
                        "a schema-valid call with {what} in a URL parameter made the server \
                         request it: the tool fetches whatever URL it is given, so a caller \
                         reaches the services of the server's host and network (SSRF)"
                    ),
                    name,
                    &key,
                )
                .evidence(&format!(
                    "`{}` = {} was requested from the audit's listener",
                    crate::text::escape(&key),
                    crate::text::escape(&Value::String(value).to_string())
                )),
            );
            let url = |k: &str| listener.whole_body_url(spelt, &tag(k, i));
            if let Some((_, _, arguments)) = crate::traversal::url_params(schema, baseline, url)
                .into_iter()
                .find(|(k, _, _)| *k == key)
            {
                whole_body_probe(
                    client,
                    report,
                    name,
                    &key,
                    arguments,
                    listener,
                    &tag(&key, i),
                )
                .await;
            }
            found.push(key);
        }
    }
    // A tool that refused every internal address may still read whole what
    // a public one sends: in the private network a public address is the
    // listener's too.
    let Some(public) = listener.public_host() else {
        return;
    };
    let url = |key: &str| listener.whole_body_url(public, &tag(key, hosts.len()));
    for (key, _, arguments) in crate::traversal::url_params(schema, baseline, url) {
        if found.contains(&key) || client.exited() {
            continue;
        }
        let tag = tag(&key, hosts.len());
        whole_body_probe(client, report, name, &key, arguments, listener, &tag).await;
    }
}

/// The whole-body probe of a URL parameter found fetching: `arguments`
/// point it at a body of [`crate::fetch::WHOLE_BODY`] bytes; taken whole,
/// it is `url-response-unbounded`.
async fn whole_body_probe(
    client: &mut Client,
    report: &mut Report,
    name: &str,
    key: &str,
    arguments: serde_json::Map<String, Value>,
    listener: &crate::fetch::Listener,
    tag: &str,
) {
    let _ = probe_call(client, report, name, arguments).await;
    let whole = crate::fetch::WHOLE_BODY;
    if listener.streamed(tag, Duration::from_secs(2)).await != Some(whole) {
        return;
    }
    let segment = crate::schema::segment(key);
    report.findings.push(
        Finding::new(
            Severity::Medium,
            "url-response-unbounded",
            "the tool read the whole of a response far larger than any page a caller needs: \
             it reads whatever a URL sends, so one call makes the server hold (or spend its \
             time on) as much as a hostile or broken site serves",
        )
        .tool(name)
        .property(&format!("/properties/{segment}"))
        .argument(&format!("/{segment}"))
        .evidence(&format!(
            "`{}` = a URL of the audit's listener whose answer declared {} MiB: all of it was \
             read",
            crate::text::escape(key),
            whole >> 20
        )),
    );
}

/// The SQL write probes of one tool ([`crate::sql`]): per parameter, the
/// first statement that makes its file is the finding.
async fn sql_probes(
    client: &mut Client,
    name: &str,
    schema: &Value,
    baseline: &serde_json::Map<String, Value>,
    dir: &std::path::Path,
    report: &mut Report,
) {
    // A directory of the tool's own: a file another tool's probe made is
    // never this one's.
    let Ok(dir) = tempfile::Builder::new().prefix("tool-").tempdir_in(dir) else {
        return;
    };
    for of_key in crate::sql::probes(schema, baseline, dir.path()) {
        for p in of_key {
            if client.exited() {
                return;
            }
            // Whatever the answer says: the file is the effect.
            let _ = probe_call(client, report, name, p.arguments).await;
            if !p.file.exists() {
                continue;
            }
            report.findings.push(
                at_parameter(
                    "sql-file-written",
                    "a schema-valid SQL statement made a file at a path the audit chose, \
                     outside anything the server serves: a caller writes files wherever the \
                     server can",
                    name,
                    &p.key,
                )
                .evidence(&format!(
                    "`{}` = {} made that file",
                    crate::text::escape(&p.key),
                    crate::text::escape(&Value::String(p.statement).to_string())
                )),
            );
            break;
        }
    }
}

/// A passwd root entry in a tool's answer that is not a refusal
/// ([`crate::traversal::passwd_line`]).
fn passwd_answered(reply: &Value) -> Option<String> {
    reply
        .get("result")
        .filter(|r| r.get("isError") != Some(&Value::Bool(true)))
        .and_then(crate::traversal::passwd_line)
}

/// The SQL file reads of `name` ([`crate::sql::FILE_READS`]): per
/// parameter, the first statement whose answer (not a refusal) holds a
/// passwd root entry is a finding.
async fn sql_read_probes(
    client: &mut Client,
    name: &str,
    schema: &Value,
    baseline: &serde_json::Map<String, Value>,
    report: &mut Report,
) {
    let mut found: Vec<String> = Vec::new();
    for statement in crate::sql::FILE_READS {
        for (key, arguments) in crate::sql::with_statement(schema, baseline, statement) {
            if client.exited() {
                return;
            }
            if found.contains(&key) {
                continue;
            }
            let reply = probe_call(client, report, name, arguments).await;
            let Some(line) = reply.ok().as_ref().and_then(passwd_answered) else {
                continue;
            };
            report.findings.push(
                at_parameter(
                    "sql-file-read",
                    "a schema-valid SQL statement returned a line of /etc/passwd: the engine \
                     reads files for SQL, so a caller reads any file the database can",
                    name,
                    &key,
                )
                .evidence(&format!(
                    "`{}` = {} answered: {line}",
                    crate::text::escape(&key),
                    crate::text::escape(&Value::String((*statement).to_owned()).to_string())
                )),
            );
            found.push(key);
        }
    }
}

/// A server blocked by one call is blocked by any, one that reads any
/// file through one parameter likely does through all: one cause of
/// `rule`, whose evidence gives each tool's (the first eight).
fn one_cause(report: &mut Report, rule: &str) {
    let times: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.rule == rule)
        .map(|f| {
            let tool = crate::text::escape(f.tool.as_deref().unwrap_or_default());
            format!("{tool}: {}", f.evidence.as_deref().unwrap_or_default())
        })
        .collect();
    let mut evidence = times[..times.len().min(8)].join("; ");
    if times.len() > 8 {
        evidence.push_str(&format!("; ... ({} tools in all)", times.len()));
    }
    for f in report.findings.iter_mut().filter(|f| f.rule == rule) {
        f.evidence = Some(evidence.clone());
    }
}

/// The baseline's arguments that name something the server issued: strings
/// with a `pattern` (an opaque id format, not an enum) whose names say
/// handle, id, run, job, session or ref.
fn handle_like<'a>(
    schema: &'a Value,
    baseline: &'a serde_json::Map<String, Value>,
) -> impl Iterator<Item = &'a String> {
    let props = schema.get("properties").and_then(Value::as_object);
    baseline.keys().filter(move |key| {
        let Some(prop) = props.and_then(|p| p.get(key.as_str())) else {
            return false;
        };
        let name = key.to_ascii_lowercase();
        let named = ["handle", "run", "job", "session", "ref"]
            .iter()
            .any(|w| name.contains(w))
            || name == "id"
            || name.ends_with("_id")
            || key.ends_with("Id");
        named
            && prop.get("type").and_then(Value::as_str) == Some("string")
            && prop.get("pattern").is_some()
            && prop.get("enum").is_none()
    })
}

/// Read-only and not destructive, by its own annotations.
fn is_harmless(tool: &Value) -> bool {
    let a = tool.get("annotations");
    let flag = |k: &str| a.and_then(|a| a.get(k)).and_then(Value::as_bool);
    flag("readOnlyHint") == Some(true) && flag("destructiveHint") != Some(true)
}

/// Sends the forbidden call `m` to `name`: how it was answered, and the
/// answer's `result` or `error` where one came.
async fn send(
    client: &mut Client,
    name: &str,
    m: &mutate::Mutation,
    canary: &str,
) -> (Answer, Option<Value>) {
    let id = client.id();
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":{},\"arguments\":{}}}}}",
        Value::String(name.to_owned()),
        m.arguments
    );
    match client.exchange(line.as_bytes(), &json!(id)).await {
        Ok(reply) => {
            let answer = classify(&reply, canary, m.echo.as_deref());
            let shown = reply.get("result").or_else(|| reply.get("error")).cloned();
            (answer, shown)
        }
        Err(ClientError::Timeout) => {
            if client.alive().await {
                (Answer::Silent, None)
            } else {
                (Answer::Dead, None)
            }
        }
        // A token good for the handshake that a call is refused with.
        Err(ClientError::Unauthorized) => (Answer::Rejected { echo: false }, None),
        Err(_) => (Answer::Dead, None),
    }
}

fn classify(reply: &Value, canary: &str, digits: Option<&str>) -> Answer {
    let text = reply.to_string();
    let echo = text.contains(canary) || digits.is_some_and(|d| text.contains(d));
    let refused = reply.get("error").is_some()
        || reply.get("result").and_then(|r| r.get("isError")) == Some(&Value::Bool(true));
    if refused {
        Answer::Rejected { echo }
    } else if reply.get("result").is_some_and(is_error_text) {
        Answer::ErrorAsResult
    } else {
        Answer::Accepted { echo }
    }
}

/// Whether `result` has no structured content and text contents only,
/// each of which begins as an error message does (`Error: …`,
/// `Database error: …`, `Invalid …`, `Missing …`, `Unknown …`).
fn is_error_text(result: &Value) -> bool {
    const OPENINGS: &[&str] = &[
        "error",
        "database error",
        "invalid",
        "missing",
        "unknown",
        "failed",
        "exception",
        "traceback",
    ];
    let Some(content) = result.get("content").and_then(Value::as_array) else {
        return false;
    };
    result.get("structuredContent").is_none_or(Value::is_null)
        && !content.is_empty()
        && content.iter().all(|c| {
            c.get("text").and_then(Value::as_str).is_some_and(|t| {
                let t = t.trim_start().to_ascii_lowercase();
                OPENINGS.iter().any(|o| t.starts_with(o))
            })
        })
}

/// Raw messages a hardened server answers (each one: with the message's
/// id, or `null` where it could not read one; over HTTP, any HTTP answer)
/// and survives; with `only`, just the messages of those names.
async fn wire_checks(
    client: &mut Client,
    canary: &str,
    report: &mut Report,
    only: Option<&[&'static str]>,
) {
    const OVERSIZED: &str = "oversized line (12 MiB)";
    let wanted = |what: &str| only.is_none_or(|o| o.contains(&what));
    // Each bad line, the id its answer must carry, the line, and whether it
    // is JSON at all (`NaN` and `1e999` are not JSON numbers).
    let mut cases: Vec<(&'static str, Value, String, bool)> = vec![
        ("unparsable line", Value::Null, format!("{canary} this is not JSON"), false),
        (
            "non-finite literal 1e999",
            json!(9101),
            "{\"jsonrpc\":\"2.0\",\"id\":9101,\"method\":\"ping\",\"params\":{\"x\":1e999}}".to_owned(),
            false,
        ),
        (
            "NaN literal",
            json!(9102),
            "{\"jsonrpc\":\"2.0\",\"id\":9102,\"method\":\"ping\",\"params\":{\"x\":NaN}}".to_owned(),
            false,
        ),
        (
            "truncated JSON",
            json!(9103),
            "{\"jsonrpc\":\"2.0\",\"id\":9103,\"method\":\"tools/li".to_owned(),
            false,
        ),
        (
            "non-object arguments",
            json!(9104),
            "{\"jsonrpc\":\"2.0\",\"id\":9104,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":[1,2]}}".to_owned(),
            true,
        ),
    ];
    cases.retain(|(what, ..)| wanted(what));
    // Made only when sent (not for `--no-wire`'s one literal).
    if wanted(OVERSIZED) {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":9105,\"method\":\"ping\",\"params\":{{\"x\":\"{}{canary}\"}}}}",
            "A".repeat(12 << 20)
        );
        cases.push((OVERSIZED, json!(9105), big, true));
    }
    let stdio = client.is_stdio();
    for (what, id, line, json) in cases {
        report.calls += 1;
        match client.exchange(line.as_bytes(), &id).await {
            Ok(reply) if reply.to_string().contains(canary) => report.findings.push(
                Finding::new(
                    Severity::High,
                    "wire-reflected",
                    format!("the reply to a bad line ({what}) repeats text from it"),
                )
                .mutation(what),
            ),
            Ok(_) => {}
            Err(ClientError::Timeout) => {
                // A line that is not JSON dropped unanswered is an SDK's
                // convention (JSON-RPC asks for a parse error): a note. A
                // JSON message left unanswered is a fault.
                let (severity, why) = if !json {
                    (
                        Severity::Info,
                        "the server drops a line it cannot parse (JSON-RPC asks for a parse error)",
                    )
                } else {
                    (Severity::Medium, "the client waits until its own timeout")
                };
                report.findings.push(
                    Finding::new(
                        severity,
                        "wire-unanswered",
                        format!("no reply to a bad line ({what}): {why}"),
                    )
                    .mutation(what),
                );
            }
            Err(_) => {}
        }
        if client.exited() || !client.alive().await {
            // A stdio server that exits on its own client's bad line stops
            // that client only; an HTTP server stops every client.
            let (severity, whom) = if stdio {
                (Severity::Low, "its only client, which sent the line")
            } else {
                (Severity::High, "every client of it")
            };
            report.findings.push(
                Finding::new(
                    severity,
                    "wire-server-died",
                    format!("the server stopped answering after a bad line ({what}), for {whom}"),
                )
                .mutation(what),
            );
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_told_as_a_result_is_neither_accepted_nor_rejected() {
        let result = |r: Value| json!({"jsonrpc": "2.0", "id": 1, "result": r});
        let text = |t: &str| json!({"content": [{"type": "text", "text": t}]});
        for t in [
            "Error: 'query'",
            "  database error: near \"x\"",
            "Invalid input",
            "Missing arguments",
        ] {
            assert!(
                matches!(classify(&result(text(t)), "C", None), Answer::ErrorAsResult),
                "{t}"
            );
        }
        for ok in [
            text("3 rows"),
            text("The error rate is 2%"),
            json!({"content": [{"type": "text", "text": "Error: x"}], "structuredContent": {"e": 1}}),
            json!({"content": []}),
        ] {
            assert!(
                matches!(
                    classify(&result(ok.clone()), "C", None),
                    Answer::Accepted { .. }
                ),
                "{ok}"
            );
        }
        let flagged = json!({"content": [{"type": "text", "text": "Error: x"}], "isError": true});
        assert!(matches!(
            classify(&result(flagged), "C", None),
            Answer::Rejected { echo: false }
        ));
    }

    fn overlap(call: Option<u64>, ping: Option<u64>) -> Overlap {
        let ms = |at: Option<u64>| {
            at.map(|ms| (json!({}), Duration::from_millis(ms)))
                .ok_or(ClientError::Timeout)
        };
        Overlap {
            first: ms(call),
            second: ms(ping),
            second_sent: Duration::from_millis(50),
        }
    }

    #[test]
    fn a_ping_held_while_the_call_ran_is_told_from_a_slow_call_or_server() {
        let (fast, ten) = (Duration::from_millis(2), Duration::from_secs(10));
        let held = |call, ping, pace| held_ping(&overlap(call, ping), pace, ten);
        // Answered after the call, or just before its answer: held.
        assert_eq!(
            held(Some(3000), Some(3001), fast).as_deref(),
            Some("the call took 3.0 s; a ping sent 50 ms into it was answered after 3.0 s")
        );
        assert!(held(Some(3001), Some(3000), fast).is_some());
        assert_eq!(
            held(None, None, fast).as_deref(),
            Some(
                "the call was not answered within 10.0 s; \
                 a ping sent 50 ms into it was not answered within 10.0 s"
            )
        );
        // A long call while pings are answered; a call done before the
        // ping; a server slow at everything: not held.
        assert_eq!(held(Some(3000), Some(60), fast), None);
        assert_eq!(held(None, Some(60), fast), None);
        assert_eq!(held(Some(20), Some(3000), fast), None);
        assert_eq!(
            held(Some(3000), Some(3001), Duration::from_millis(400)),
            None
        );
        assert_eq!(held(Some(1000), Some(1001), fast), None);
        // A call not waited for past the ping's answer (the long query):
        // the ping alone decides.
        let unawaited = |ping| {
            let mut o = overlap(None, Some(ping));
            o.first = Err(ClientError::NotAwaited);
            held_ping(&o, fast, ten)
        };
        assert_eq!(unawaited(60), None);
        assert_eq!(
            unawaited(3050).as_deref(),
            Some("the call was still running; a ping sent 50 ms into it was answered after 3.0 s")
        );
    }
}
