//! `hardened-mcp-audit [options] -- <server command> [args...]` audits a stdio MCP
//! server, `hardened-mcp-audit [options] --url <endpoint> [--bearer-file F]` a
//! streamable HTTP one, and prints the report; the exit status is 1 when a
//! finding at or above `--fail-on` exists, 2 on a usage error.
//! `hardened-mcp-audit completions <shell>` prints a completion script.

use std::process::ExitCode;

use hardened_mcp_audit::Report;
use hardened_mcp_audit::pin::PinFile;
use hardened_mcp_audit::run::{audit_http, audit_stdio};
use hardened_mcp_audit::suppress::{self, Suppression};

use cli::{Audit, Parsed, Target};

mod cli;

/// Reads the other-audience token and the pin file (when it exists) into
/// the options, and the suppressions; an error is a usage error.
fn load(cli: &mut Audit) -> Result<Vec<Suppression>, String> {
    if let Some(path) = &cli.other_audience_token_file {
        let token = std::fs::read_to_string(path)
            .map_err(|_| "could not read --other-audience-token-file".to_owned())?;
        cli.options.other_audience_token = Some(token.trim().to_owned());
    }
    if let Some(path) = &cli.pin {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let file: PinFile = serde_json::from_str(&text)
                    .map_err(|e| format!("{path} is not a pin file: {e}"))?;
                cli.options.pinned = Some(file);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("could not read {path}: {e}")),
        }
    }
    match &cli.suppress {
        None => Ok(Vec::new()),
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("could not read {path}: {e}"))?;
            suppress::parse(&text).map_err(|e| format!("{path}: {e}"))
        }
    }
}

fn main() -> ExitCode {
    let mut cli = match cli::parse(std::env::args_os().skip(1)) {
        Ok(Parsed::Audit(cli)) => *cli,
        Ok(Parsed::Completions(shell)) => {
            cli::completions(shell, &mut std::io::stdout());
            return ExitCode::SUCCESS;
        }
        // Help and version to stdout (exit 0), usage errors to stderr (2).
        Err(e) => e.exit(),
    };
    let suppressions = match load(&mut cli) {
        Ok(s) => s,
        Err(msg) => {
            eprintln!("hardened-mcp-audit: {msg}");
            return ExitCode::from(2);
        }
    };
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        eprintln!("hardened-mcp-audit: could not start the async runtime");
        return ExitCode::from(2);
    };
    let mut report: Report = match &cli.target {
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
                    eprintln!("hardened-mcp-audit: could not read the bearer file: {e}");
                    return ExitCode::from(2);
                }
            };
            runtime.block_on(audit_http(url, bearer, &cli.options))
        }
    };
    suppress::apply(&mut report, &suppressions, suppress::today());
    if let (Some(path), Some(pins)) = (&cli.pin, &report.pins)
        && (cli.options.pinned.is_none() || cli.pin_update)
    {
        let text = serde_json::to_string_pretty(pins).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!("hardened-mcp-audit: could not write {path}: {e}");
            return ExitCode::from(2);
        }
        eprintln!(
            "hardened-mcp-audit: pinned {} tools in {path}",
            pins.tools.len()
        );
    }
    if cli.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report.json()).unwrap_or_default()
        );
    } else {
        print!("{}", report.text());
    }
    if let Some(path) = &cli.sarif
        && let Err(e) = std::fs::write(
            path,
            serde_json::to_vec_pretty(&report.sarif(cli.sarif_artifact.as_deref()))
                .unwrap_or_default(),
        )
    {
        eprintln!("hardened-mcp-audit: could not write {path}: {e}");
        return ExitCode::from(2);
    }
    if report.fails(cli.fail_on) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
