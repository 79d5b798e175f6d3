//! The audit's command line (clap): the target (a stdio server command after
//! `--`, or `--url`), the report's forms, the gate and the limits; and
//! `completions <shell>`.

use std::ffi::OsString;
use std::time::Duration;

use clap::{ArgGroup, Args, CommandFactory, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;
use hardened_mcp_audit::Severity;
use hardened_mcp_audit::run::Options;

/// The command line as clap reads it.
#[derive(Debug, Parser)]
#[command(
    name = "hardened-mcp-audit",
    version,
    about = "A black-box hardening audit of an MCP server",
    long_about = "A black-box hardening audit of an MCP server: schema review, adversarial \
                  calls derived from the schemas, wire and HTTP auth checks.\n\n\
                  The exit status is 1 when a finding at or above --fail-on exists, 2 on a \
                  usage error.",
    override_usage = "hardened-mcp-audit [OPTIONS] -- <SERVER COMMAND> [ARGS]...\n       \
                      hardened-mcp-audit [OPTIONS] --url <URL> [--bearer-file <FILE>]\n       \
                      hardened-mcp-audit completions <SHELL>",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    group(ArgGroup::new("target").args(["url", "command"]).required(true))
)]
struct Cli {
    #[command(subcommand)]
    sub: Option<Sub>,
    #[command(flatten)]
    audit: AuditArgs,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Print a shell completion script to stdout
    Completions {
        /// The shell to complete for.
        shell: Shell,
    },
}

/// `--fail-on`'s levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Level {
    Info,
    Low,
    Medium,
    High,
}

/// The options of an audit.
#[derive(Debug, Args)]
struct AuditArgs {
    /// Audit the streamable HTTP server at URL instead of starting a stdio one
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// With --url: send the token in FILE as Authorization: Bearer (a file, so
    /// the token is never in the process list)
    #[arg(
        long,
        value_name = "FILE",
        requires = "url",
        conflicts_with = "command"
    )]
    bearer_file: Option<OsString>,
    /// With --url: a token the server's (test) issuer minted for another
    /// resource; it must be refused
    #[arg(
        long,
        value_name = "FILE",
        requires = "url",
        conflicts_with = "command"
    )]
    other_audience_token_file: Option<OsString>,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
    /// Also write the report as SARIF 2.1.0 to FILE
    #[arg(long, value_name = "FILE")]
    sarif: Option<String>,
    /// With --sarif: the repository file each result is located at (the
    /// server's manifest or entry point), as a code-scanning upload needs;
    /// default: the first word of the server command that names a file under
    /// the working directory
    #[arg(long, value_name = "PATH", requires = "sarif")]
    sarif_artifact: Option<String>,
    /// Exit 1 when a finding at LEVEL or above exists
    #[arg(long, value_name = "LEVEL", value_enum, default_value_t = Level::High)]
    fail_on: Level,
    /// Deadline of each exchange, in milliseconds
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    timeout_ms: u64,
    /// Deadline of the first answer (the handshake, which includes the
    /// server's start), in milliseconds
    #[arg(long, value_name = "N", default_value_t = 60_000,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    startup_timeout_ms: u64,
    /// Most forbidden calls per tool
    #[arg(long, value_name = "N", default_value_t = 120,
          value_parser = clap::value_parser!(u16).range(1..=10_000))]
    max_calls: u16,
    /// Skip the raw wire checks
    #[arg(long)]
    no_wire: bool,
    /// Write every exchange with the server to FILE, one JSON object a line
    /// (what was sent, what came back or that nothing did, milliseconds
    /// since the start)
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// Over HTTP, skip the checks of the authorization and origin surface (no
    /// token, a made-up token, the RFC 9728 metadata, a foreign Origin and Host)
    #[arg(long)]
    no_auth_checks: bool,
    /// Pin every tool (a digest of its name, description, schemas and
    /// annotations) in FILE when it does not exist; when it does, report tools
    /// added, removed or changed since
    #[arg(long, value_name = "FILE")]
    pin: Option<String>,
    /// With --pin: rewrite FILE with the tools listed now (after reporting the
    /// changes)
    #[arg(long, requires = "pin")]
    pin_update: bool,
    /// Accept the findings FILE lists (JSON: rule, tool, property, a required
    /// reason, an optional expiry); expired or unused suppressions are reported
    #[arg(long, value_name = "FILE")]
    suppress: Option<String>,
    /// Also send one schema-valid call to each tool annotated read-only and not
    /// destructive, with a ping beside it to see whether the call blocks the
    /// server (off by default: only calls the schema forbids are sent)
    #[arg(long)]
    allow_valid_calls: bool,
    /// The server runs on a scratch copy of what it serves: with
    /// --allow-valid-calls, send the schema-valid calls and probes to every
    /// tool, not only to those annotated read-only (they may change what
    /// the server serves)
    #[arg(long, requires = "allow_valid_calls")]
    scratch: bool,
    /// The directory the server serves, a scratch copy of it: with
    /// --allow-valid-calls, the audit plants a symbolic link to /etc there
    /// (removed at the end) and asks path parameters to read through it
    #[arg(long, value_name = "DIR", requires = "allow_valid_calls")]
    scope: Option<std::path::PathBuf>,
    /// Start the stdio server under Landlock: it may write only in --scope,
    /// a scratch home (HOME, XDG_*, TMPDIR) and the audit's own directory;
    /// where Landlock cannot enforce that, the server is not started
    #[arg(long, conflicts_with = "url")]
    confine: bool,
    /// Start the stdio server in a network namespace of its own where every
    /// address is local: nothing it sends leaves the machine, the URL probes
    /// also try private and cloud-metadata addresses, and what it sends
    /// elsewhere is reported (needs root or CAP_SYS_ADMIN, and iproute2's
    /// ip; where missing, the server is not started)
    #[arg(long, conflicts_with = "url")]
    private_network: bool,
    /// The stdio server to start, and its arguments (after `--`)
    #[arg(last = true, value_name = "SERVER COMMAND", conflicts_with = "url")]
    command: Vec<String>,
}

/// What to do.
#[derive(Debug)]
pub enum Parsed {
    /// Audit a server.
    Audit(Box<Audit>),
    /// Print a completion script.
    Completions(Shell),
}

/// An audit's settings.
#[derive(Debug)]
pub struct Audit {
    /// `--json`.
    pub json: bool,
    /// `--sarif FILE`.
    pub sarif: Option<String>,
    /// `--sarif-artifact PATH`, or the command's first word naming a file
    /// under the working directory.
    pub sarif_artifact: Option<String>,
    /// `--pin FILE`.
    pub pin: Option<String>,
    /// `--pin-update`.
    pub pin_update: bool,
    /// `--suppress FILE`.
    pub suppress: Option<String>,
    /// `--fail-on LEVEL`.
    pub fail_on: Severity,
    /// The audit's options; the other-audience token is read by the caller
    /// from [`Audit::other_audience_token_file`].
    pub options: Options,
    /// `--other-audience-token-file FILE`.
    pub other_audience_token_file: Option<OsString>,
    /// What to audit.
    pub target: Target,
}

/// The server under audit.
#[derive(Debug, PartialEq, Eq)]
pub enum Target {
    /// A stdio server: the program and its arguments.
    Stdio(Vec<String>),
    /// A streamable HTTP server.
    Http {
        /// Its endpoint.
        url: String,
        /// The file holding the bearer token to send.
        bearer_file: Option<OsString>,
    },
}

/// The clap command, for help, completions and tests.
pub fn command() -> clap::Command {
    Cli::command()
}

/// Writes the completion script for `shell` to `out`.
pub fn completions(shell: Shell, out: &mut dyn std::io::Write) {
    clap_complete::generate(shell, &mut command(), "hardened-mcp-audit", out);
}

/// Parses the arguments after the program name. `--help` and `--version`
/// come back as errors of their kinds ([`clap::Error::exit`] prints them to
/// stdout and exits 0; usage errors go to stderr with exit status 2).
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Parsed, clap::Error> {
    let argv = std::iter::once(OsString::from("hardened-mcp-audit")).chain(args);
    let cli = Cli::try_parse_from(argv)?;
    if let Some(Sub::Completions { shell }) = cli.sub {
        return Ok(Parsed::Completions(shell));
    }
    let a = cli.audit;
    let options = Options {
        timeout: Duration::from_millis(a.timeout_ms),
        startup_timeout: Duration::from_millis(a.startup_timeout_ms),
        max_calls_per_tool: usize::from(a.max_calls),
        wire: !a.no_wire,
        auth_checks: !a.no_auth_checks,
        allow_valid_calls: a.allow_valid_calls,
        scope: a.scope,
        scratch: a.scratch,
        confine: a.confine,
        private_network: a.private_network,
        trace: a.trace,
        ..Options::default()
    };
    let sarif_artifact = a.sarif_artifact.or_else(|| {
        a.command
            .iter()
            .find(|w| {
                let p = std::path::Path::new(w.as_str());
                p.is_relative() && !w.starts_with("..") && !w.starts_with('-') && p.is_file()
            })
            .cloned()
    });
    // The `target` group: exactly one of --url and a command.
    let target = match a.url {
        Some(url) => Target::Http {
            url,
            bearer_file: a.bearer_file,
        },
        None => Target::Stdio(a.command),
    };
    Ok(Parsed::Audit(Box::new(Audit {
        json: a.json,
        sarif: a.sarif,
        sarif_artifact,
        pin: a.pin,
        pin_update: a.pin_update,
        suppress: a.suppress,
        fail_on: match a.fail_on {
            Level::Info => Severity::Info,
            Level::Low => Severity::Low,
            Level::Medium => Severity::Medium,
            Level::High => Severity::High,
        },
        options,
        other_audience_token_file: a.other_audience_token_file,
        target,
    })))
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    use super::*;

    fn p(args: &[&str]) -> Result<Parsed, clap::Error> {
        parse(args.iter().map(OsString::from))
    }

    fn audit(args: &[&str]) -> Audit {
        match p(args) {
            Ok(Parsed::Audit(a)) => *a,
            Ok(Parsed::Completions(_)) => panic!("completions"),
            Err(e) => panic!("{e}"),
        }
    }

    fn kind(args: &[&str]) -> ErrorKind {
        p(args).err().map(|e| e.kind()).expect("an error")
    }

    #[test]
    fn a_stdio_command_goes_after_the_double_dash() {
        let a = audit(&[
            "--fail-on",
            "low",
            "--json",
            "--",
            "server",
            "--its",
            "-x",
            "--",
            "args",
        ]);
        assert_eq!(
            a.target,
            Target::Stdio(
                ["server", "--its", "-x", "--", "args"]
                    .map(String::from)
                    .to_vec()
            )
        );
        assert_eq!(a.fail_on, Severity::Low);
        assert!(a.json);
        // A command named like the subcommand is still a command.
        let a = audit(&["--", "completions", "bash"]);
        assert_eq!(
            a.target,
            Target::Stdio(vec!["completions".into(), "bash".into()])
        );
    }

    #[test]
    fn defaults_match_the_library() {
        let a = audit(&["--", "server"]);
        let d = Options::default();
        assert_eq!(a.options.timeout, d.timeout);
        assert_eq!(a.options.startup_timeout, d.startup_timeout);
        assert_eq!(a.options.max_calls_per_tool, d.max_calls_per_tool);
        assert_eq!(a.options.wire, d.wire);
        assert_eq!(a.options.auth_checks, d.auth_checks);
        assert_eq!(a.options.allow_valid_calls, d.allow_valid_calls);
        assert_eq!(a.fail_on, Severity::High);
        let a = audit(&[
            "--timeout-ms",
            "500",
            "--max-calls",
            "7",
            "--no-wire",
            "--no-auth-checks",
            "--allow-valid-calls",
            "--",
            "s",
        ]);
        assert_eq!(a.options.timeout, Duration::from_millis(500));
        assert_eq!(a.options.max_calls_per_tool, 7);
        assert!(!a.options.wire && !a.options.auth_checks && a.options.allow_valid_calls);
        assert_eq!(a.options.scope, None);
        assert!(!a.options.scratch);
        let a = audit(&[
            "--allow-valid-calls",
            "--scratch",
            "--scope",
            "/srv/copy",
            "--",
            "s",
        ]);
        assert_eq!(a.options.scope, Some(std::path::PathBuf::from("/srv/copy")));
        assert!(a.options.scratch && !a.options.confine);
        assert!(audit(&["--confine", "--", "s"]).options.confine);
        assert!(
            audit(&["--private-network", "--", "s"])
                .options
                .private_network
        );
        assert_eq!(
            kind(&["--confine", "--url", "http://127.0.0.1:1/mcp"]),
            ErrorKind::ArgumentConflict
        );
        assert_eq!(
            kind(&["--scratch", "--", "s"]),
            ErrorKind::MissingRequiredArgument
        );
        // A link is planted only for the schema-valid calls that use it.
        assert_eq!(
            kind(&["--scope", "/srv/copy", "--", "s"]),
            ErrorKind::MissingRequiredArgument
        );
    }

    #[test]
    fn http_target_and_its_files() {
        let a = audit(&[
            "--url",
            "https://host/mcp",
            "--bearer-file",
            "token.txt",
            "--other-audience-token-file",
            "other.txt",
        ]);
        assert_eq!(
            a.target,
            Target::Http {
                url: "https://host/mcp".into(),
                bearer_file: Some("token.txt".into()),
            }
        );
        assert_eq!(a.other_audience_token_file, Some("other.txt".into()));
        assert_eq!(
            kind(&["--bearer-file", "t", "--", "server"]),
            ErrorKind::ArgumentConflict
        );
        assert_eq!(
            kind(&["--other-audience-token-file", "t", "--", "server"]),
            ErrorKind::ArgumentConflict
        );
        assert_eq!(
            kind(&["--bearer-file", "t"]),
            ErrorKind::MissingRequiredArgument
        );
        assert_eq!(
            kind(&["--url", "http://x/mcp", "--", "server"]),
            ErrorKind::ArgumentConflict
        );
        // No option takes the token itself.
        assert_eq!(
            kind(&["--url", "http://x/mcp", "--bearer", "secret"]),
            ErrorKind::UnknownArgument
        );
    }

    #[test]
    fn refuses_nonsense() {
        assert_eq!(kind(&[]), ErrorKind::MissingRequiredArgument);
        assert_eq!(kind(&["--json"]), ErrorKind::MissingRequiredArgument);
        assert_eq!(
            kind(&["--fail-on", "critical", "--", "s"]),
            ErrorKind::InvalidValue
        );
        assert_eq!(
            kind(&["--timeout-ms", "0", "--", "s"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            kind(&["--max-calls", "10001", "--", "s"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            kind(&["--pin-update", "--", "s"]),
            ErrorKind::MissingRequiredArgument
        );
        // The server command goes after `--`.
        assert_eq!(kind(&["server", "--its"]), ErrorKind::UnknownArgument);
    }

    #[test]
    fn help_version_suggestions_completions() {
        let e = p(&["--help"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DisplayHelp);
        let help = e.to_string();
        for s in [
            "completions",
            "--fail-on",
            "--bearer-file",
            "-- <SERVER COMMAND>",
        ] {
            assert!(help.contains(s), "{s} missing from\n{help}");
        }
        let v = p(&["--version"]).unwrap_err();
        assert_eq!(v.kind(), ErrorKind::DisplayVersion);
        assert_eq!(
            v.to_string().trim(),
            format!("hardened-mcp-audit {}", env!("CARGO_PKG_VERSION"))
        );
        let e = p(&["--fail-no", "low", "--", "s"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownArgument);
        assert!(e.to_string().contains("--fail-on"), "{e}");
        assert!(matches!(
            p(&["completions", "bash"]),
            Ok(Parsed::Completions(Shell::Bash))
        ));
        let mut out = Vec::new();
        completions(Shell::Bash, &mut out);
        let script = String::from_utf8(out).unwrap();
        assert!(script.contains("hardened-mcp-audit") && script.contains("--fail-on"));
        command().debug_assert();
    }
}
