//! `mcp-audit [options] -- <server command> [args...]` audits a stdio MCP
//! server, `mcp-audit [options] --url <endpoint> [--bearer-file F]` a
//! streamable HTTP one, and prints the report; the exit status is 1 when a
//! finding at or above `--fail-on` exists, 2 on a usage error.

use std::process::ExitCode;
use std::time::Duration;

use mcp_audit::run::{Options, audit_http, audit_stdio};
use mcp_audit::{Report, Severity};

const USAGE: &str = "\
mcp-audit: a black-box hardening audit of an MCP server

USAGE:
    mcp-audit [OPTIONS] -- <server command> [args...]
    mcp-audit [OPTIONS] --url <http(s) endpoint> [--bearer-file FILE]

OPTIONS:
    --url URL            audit the streamable HTTP server at URL instead of
                         starting a stdio one
    --bearer-file FILE   send the token in FILE as Authorization: Bearer
                         (a file, so the token is never in the process list)
    --json               print the report as JSON
    --sarif FILE         also write the report as SARIF 2.1.0 to FILE
    --fail-on LEVEL      exit 1 when a finding at LEVEL or above exists:
                         info, low, medium, high (default: high)
    --timeout-ms N       deadline of each exchange (default 10000)
    --max-calls N        most forbidden calls per tool (default 60)
    --no-wire            skip the raw wire checks
    --allow-valid-calls  also send one schema-valid call to each tool annotated
                         read-only and not destructive (off by default: only
                         calls the schema forbids are sent)
";

struct Cli {
    json: bool,
    sarif: Option<String>,
    fail_on: Severity,
    options: Options,
    target: Target,
}

enum Target {
    Stdio(Vec<String>),
    Http {
        url: String,
        bearer_file: Option<String>,
    },
}

fn parse(args: Vec<String>) -> Result<Cli, &'static str> {
    let mut cli = Cli {
        json: false,
        sarif: None,
        fail_on: Severity::High,
        options: Options::default(),
        target: Target::Stdio(Vec::new()),
    };
    let mut command = Vec::new();
    let mut url = None;
    let mut bearer_file = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--" => {
                command = it.by_ref().collect();
                break;
            }
            "--url" => url = Some(it.next().ok_or("--url takes the endpoint")?),
            "--bearer-file" => bearer_file = Some(it.next().ok_or("--bearer-file takes a file")?),
            "--json" => cli.json = true,
            "--sarif" => cli.sarif = Some(it.next().ok_or("--sarif takes a file")?),
            "--fail-on" => {
                cli.fail_on = it
                    .next()
                    .as_deref()
                    .and_then(Severity::parse)
                    .ok_or("--fail-on takes info, low, medium or high")?;
            }
            "--timeout-ms" => {
                let ms: u64 = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|ms| (1..=600_000).contains(ms))
                    .ok_or("--timeout-ms takes 1 to 600000")?;
                cli.options.timeout = Duration::from_millis(ms);
            }
            "--max-calls" => {
                cli.options.max_calls_per_tool = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|n| (1..=10_000).contains(n))
                    .ok_or("--max-calls takes 1 to 10000")?;
            }
            "--no-wire" => cli.options.wire = false,
            "--allow-valid-calls" => cli.options.allow_valid_calls = true,
            "--help" | "-h" => return Err(""),
            _ => return Err("unknown option (the server command goes after --)"),
        }
    }
    cli.target = match (url, command.is_empty()) {
        (Some(_), false) => return Err("give either --url or a server command, not both"),
        (Some(url), true) => Target::Http { url, bearer_file },
        (None, _) if bearer_file.is_some() => return Err("--bearer-file goes with --url"),
        (None, true) => {
            return Err(
                "no target: mcp-audit [options] -- <command> [args...], or --url <endpoint>",
            );
        }
        (None, false) => Target::Stdio(command),
    };
    Ok(cli)
}

fn main() -> ExitCode {
    let cli = match parse(std::env::args().skip(1).collect()) {
        Ok(cli) => cli,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("mcp-audit: {msg}");
            }
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        eprintln!("mcp-audit: could not start the async runtime");
        return ExitCode::from(2);
    };
    let report: Report = match &cli.target {
        Target::Stdio(command) => {
            let (program, args) = command
                .split_first()
                .map_or(("", &[][..]), |(p, a)| (p.as_str(), a));
            runtime.block_on(audit_stdio(program, args, &cli.options))
        }
        Target::Http { url, bearer_file } => {
            let bearer = match bearer_file.as_deref().map(std::fs::read_to_string) {
                None => None,
                Some(Ok(token)) => Some(token),
                Some(Err(e)) => {
                    eprintln!("mcp-audit: could not read the bearer file: {e}");
                    return ExitCode::from(2);
                }
            };
            runtime.block_on(audit_http(url, bearer, &cli.options))
        }
    };
    if cli.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}", report.text());
    }
    if let Some(path) = &cli.sarif
        && let Err(e) = std::fs::write(
            path,
            serde_json::to_vec_pretty(&report.sarif()).unwrap_or_default(),
        )
    {
        eprintln!("mcp-audit: could not write {path}: {e}");
        return ExitCode::from(2);
    }
    if report.fails(cli.fail_on) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
