//! Command-line parsing for `solver-server` (clap): modes `serve` (the
//! default), `demo`, `node` and `completions`, with `--help` and
//! `--version`. The parsed arguments become the plain option structs below,
//! which the rest of the crate (and its tests) build servers from.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Serve MCP over stdio, or over streamable HTTP when `http` is set.
    Serve(ServeOptions),
    /// Run the in-process demo.
    Demo(DemoOptions),
    /// The Slurm node helper: run the spec at this path (started by a
    /// job's batch script, not by hand).
    Node(std::ffi::OsString),
    /// Print a completion script for this shell to stdout.
    Completions(Shell),
}

/// Options shared by every mode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommonOptions {
    /// Where runs live (default: the user's state directory, else a temp dir).
    pub run_root: Option<PathBuf>,
    /// The heat1d executable (default: next to this binary).
    pub solver: Option<PathBuf>,
    /// Start even where the host lacks a containment layer (namespaces,
    /// the private file-system view, seccomp, Landlock): the explicit
    /// opt-out of the sandbox's fail-closed default.
    pub allow_weak_sandbox: bool,
    /// Run solvers as Slurm jobs instead of on this machine.
    pub slurm: Option<SlurmOptions>,
    /// `--confirm-delete`: cancelling and deleting a run ask the person
    /// behind the client first.
    pub confirm_delete: bool,
    /// Per-caller quotas and retention of the run root (defaults:
    /// [`RunLimits::default`]).
    pub run_limits: RunLimits,
}

/// The run root's per-caller quotas and retention, as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLimits {
    /// `--max-runs`: runs a caller holds at once.
    pub max_runs: usize,
    /// `--max-run-mib`: MiB a caller's finished runs hold.
    pub max_mib: u64,
    /// `--max-runs-per-minute`: runs a caller creates per minute.
    pub max_per_minute: u32,
    /// `--expire-hours`: hours after which an unused run expires.
    pub expire_hours: f64,
    /// `--expire-finished-hours`: the same for a finished run.
    pub expire_finished_hours: f64,
}

impl Default for RunLimits {
    fn default() -> Self {
        DEFAULT_LIMITS
    }
}

/// `--launcher slurm` and its resources.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlurmOptions {
    /// `--partition`; the cluster's default when absent. A job's CPUs and
    /// memory come from the run's limits.
    pub partition: Option<String>,
}

/// `serve` options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeOptions {
    /// Shared options.
    pub common: CommonOptions,
    /// Listen address for streamable HTTP; stdio when absent.
    pub http: Option<SocketAddr>,
    /// File of bearer tokens (`caller-name=token` lines) for HTTP; without
    /// it, the tokens come from [`crate::app::TOKENS_ENV`] when that is set.
    pub tokens_file: Option<PathBuf>,
    /// OAuth 2.1 access tokens of this issuer, for this resource.
    pub oauth: Option<OAuthOptions>,
}

/// `--oauth-issuer URL --oauth-resource URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthOptions {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// This server's canonical URI, the audience of its tokens.
    pub resource: String,
}

/// `demo` options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DemoOptions {
    /// Shared options.
    pub common: CommonOptions,
    /// Where to save the plot PNG (default: `heat-profile.png` in the current directory).
    pub plot: Option<PathBuf>,
}

/// The environment variable that supplies `--run-root`.
pub const RUN_ROOT_ENV: &str = "SOLVER_SERVER_RUN_ROOT";
/// The environment variable that supplies `--solver`.
pub const SOLVER_ENV: &str = "SOLVER_SERVER_SOLVER";
/// The environment variable that supplies `serve --http`.
pub const HTTP_ENV: &str = "SOLVER_SERVER_HTTP";
/// The environment variable that supplies `serve --tokens-file`.
pub const TOKENS_FILE_ENV: &str = "SOLVER_SERVER_TOKENS_FILE";

/// The command line: a mode, or `serve`'s options with no mode (stdio
/// `serve` is the default).
#[derive(Debug, Parser)]
#[command(
    name = "solver-server",
    version,
    about = "A 1-D heat-diffusion solver behind hardened MCP tools",
    long_about = "A 1-D heat-diffusion solver behind hardened MCP tools.\n\n\
                  With no mode, serves MCP over stdio (as `serve`); the options below are \
                  serve's. `solver-server <MODE> --help` shows a mode's options.",
    args_conflicts_with_subcommands = true,
    subcommand_value_name = "MODE",
    subcommand_help_heading = "Modes"
)]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Serve the heat tools over MCP: stdio (the default), or streamable HTTP with --http
    Serve(ServeArgs),
    /// Run an in-process MCP client session that shows every protection
    ///
    /// Lists the tools, starts a run with a progress bar, shows its status and
    /// result, saves the profile plot, and sends a handful of hostile calls that
    /// are each refused with a fixed error. Finishes in seconds.
    Demo(DemoArgs),
    /// The Slurm node helper: run the spec at SPEC (started by a job's batch script)
    Node {
        /// The run spec's path, as the batch script passes it.
        spec: OsString,
    },
    /// Print a shell completion script to stdout
    ///
    /// For example: `solver-server completions bash > ~/.local/share/bash-completion/completions/solver-server`.
    Completions {
        /// The shell to complete for.
        shell: Shell,
    },
}

/// Where solver runs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LauncherKind {
    /// On this machine.
    Local,
    /// As Slurm batch jobs whose node helper (this binary's `node` mode)
    /// applies the same sandbox; the run root must be on a file system the
    /// nodes share, at the same path.
    Slurm,
}

/// The options of every mode.
#[derive(Debug, Args)]
struct CommonArgs {
    /// Directory holding the runs (created 0700) [default: $XDG_STATE_HOME or
    /// ~/.local/state, else the temp dir, + /hardened-mcp-solver; demo: a fresh
    /// temporary directory]
    #[arg(long, value_name = "DIR", env = RUN_ROOT_ENV)]
    run_root: Option<PathBuf>,
    /// The heat1d executable [default: heat1d next to this binary, else this
    /// binary itself, which runs as the solver when started as `heat1d`]
    #[arg(long, value_name = "PATH", env = SOLVER_ENV)]
    solver: Option<PathBuf>,
    /// Start even on a host that lacks a containment layer (user, PID and mount
    /// namespaces, seccomp, Landlock); by default such a host refuses to start.
    /// The log's containment line says which layers runs get
    #[arg(long)]
    allow_weak_sandbox: bool,
    /// Ask the person behind the client to approve each cancel and delete
    /// (an MCP elicitation; a client that cannot ask is refused). A guard for
    /// people, not an access control: the heat:write scope is that
    #[arg(long)]
    confirm_delete: bool,
    /// Where solver runs go [default: local]
    #[arg(long, value_name = "KIND")]
    launcher: Option<LauncherKind>,
    /// Slurm partition [default: the cluster's default]; implies --launcher slurm
    #[arg(long, value_name = "NAME")]
    partition: Option<String>,
    #[command(flatten)]
    limits: LimitArgs,
}

/// The run root's per-caller quotas and retention.
#[derive(Debug, Args)]
#[command(next_help_heading = "Quotas and retention")]
struct LimitArgs {
    /// Runs one caller may hold; more: quota_exceeded
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMITS.max_runs)]
    max_runs: usize,
    /// MiB one caller's finished runs may hold
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMITS.max_mib)]
    max_run_mib: u64,
    /// Runs one caller may create per minute
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMITS.max_per_minute)]
    max_runs_per_minute: u32,
    /// An unused run expires after H hours; expired handles answer like unknown
    /// ones and a background sweep removes them
    #[arg(long, value_name = "H", value_parser = hours, default_value_t = DEFAULT_LIMITS.expire_hours)]
    expire_hours: f64,
    /// The same for a finished run
    #[arg(long, value_name = "H", value_parser = hours, default_value_t = DEFAULT_LIMITS.expire_finished_hours)]
    expire_finished_hours: f64,
}

/// `serve` options.
#[derive(Debug, Args)]
struct ServeArgs {
    /// Listen for streamable HTTP on ADDR (e.g. 127.0.0.1:8080) instead of
    /// stdio; the MCP endpoint is http://ADDR/mcp
    #[arg(long, value_name = "ADDR", env = HTTP_ENV)]
    http: Option<SocketAddr>,
    /// Bearer tokens for HTTP, one `caller-name=token` per line, in a file
    /// readable by its owner only (else: the SOLVER_SERVER_TOKENS environment
    /// variable, same format, comma-separated; tokens are never taken on the
    /// command line); required when ADDR is not loopback unless OAuth is
    /// configured
    #[arg(long, value_name = "FILE", env = TOKENS_FILE_ENV)]
    tokens_file: Option<PathBuf>,
    /// Accept OAuth 2.1 access tokens (JWTs) of this authorization server
    /// (https, or http on loopback); its metadata and keys are fetched at start
    #[arg(long, value_name = "URL", requires = "oauth_resource")]
    oauth_issuer: Option<String>,
    /// This server's canonical URI, e.g. https://mcp.example.org/mcp: the
    /// audience the tokens must carry. Tools need scope heat:read (reading) or
    /// heat:write (starting, cancelling, deleting runs)
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    oauth_resource: Option<String>,
    #[command(flatten)]
    common: CommonArgs,
}

/// `demo` options.
#[derive(Debug, Args)]
struct DemoArgs {
    /// Where to save the profile plot [default: heat-profile.png]
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
}

/// The defaults of [`RunLimits`], also the command line's.
const DEFAULT_LIMITS: RunLimits = RunLimits {
    max_runs: 500,
    max_mib: 20 * 1024,
    max_per_minute: 120,
    expire_hours: 7.0 * 24.0,
    expire_finished_hours: 3.0 * 24.0,
};

/// A positive, finite number of hours (at most ten years).
fn hours(v: &str) -> Result<f64, &'static str> {
    v.parse::<f64>()
        .ok()
        .filter(|h| h.is_finite() && *h > 0.0 && *h <= 24.0 * 3660.0)
        .ok_or("takes a positive number of hours (at most ten years)")
}

impl CommonArgs {
    fn into_options(self) -> Result<CommonOptions, clap::Error> {
        let slurm = match (self.launcher, self.partition) {
            (Some(LauncherKind::Local), Some(_)) => {
                return Err(Cli::command().error(
                    ErrorKind::ArgumentConflict,
                    "--partition goes with --launcher slurm",
                ));
            }
            (Some(LauncherKind::Local), None) | (None, None) => None,
            (Some(LauncherKind::Slurm) | None, partition) => Some(SlurmOptions { partition }),
        };
        let l = self.limits;
        Ok(CommonOptions {
            run_root: self.run_root,
            solver: self.solver,
            allow_weak_sandbox: self.allow_weak_sandbox,
            slurm,
            confirm_delete: self.confirm_delete,
            run_limits: RunLimits {
                max_runs: l.max_runs,
                max_mib: l.max_run_mib,
                max_per_minute: l.max_runs_per_minute,
                expire_hours: l.expire_hours,
                expire_finished_hours: l.expire_finished_hours,
            },
        })
    }
}

impl ServeArgs {
    fn into_options(self) -> Result<ServeOptions, clap::Error> {
        // Both or neither: the `requires` of each says so.
        let oauth = match (self.oauth_issuer, self.oauth_resource) {
            (Some(issuer), Some(resource)) => Some(OAuthOptions { issuer, resource }),
            _ => None,
        };
        Ok(ServeOptions {
            common: self.common.into_options()?,
            http: self.http,
            tokens_file: self.tokens_file,
            oauth,
        })
    }
}

/// The clap command, for help, completions and tests.
pub fn command() -> clap::Command {
    Cli::command()
}

/// Writes the completion script for `shell` to `out`.
pub fn completions(shell: Shell, out: &mut dyn std::io::Write) {
    clap_complete::generate(shell, &mut command(), "solver-server", out);
}

/// Parses the arguments after the program name. `--help` and `--version`
/// come back as errors of their kinds ([`clap::Error::exit`] prints them
/// to stdout and exits 0; usage errors go to stderr with exit status 2).
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, clap::Error> {
    let argv = std::iter::once(OsString::from("solver-server")).chain(args);
    let cli = Cli::try_parse_from(argv)?;
    Ok(match cli.mode {
        None => Command::Serve(cli.serve.into_options()?),
        Some(Mode::Serve(s)) => Command::Serve(s.into_options()?),
        Some(Mode::Demo(d)) => Command::Demo(DemoOptions {
            common: d.common.into_options()?,
            plot: d.plot,
        }),
        Some(Mode::Node { spec }) => Command::Node(spec),
        Some(Mode::Completions { shell }) => Command::Completions(shell),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Command, clap::Error> {
        parse(args.iter().map(OsString::from))
    }

    fn kind(args: &[&str]) -> ErrorKind {
        p(args).err().map(|e| e.kind()).expect("an error")
    }

    #[test]
    fn parses_oauth_as_a_pair() {
        let Ok(Command::Serve(s)) = p(&[
            "serve",
            "--oauth-issuer",
            "https://idp.example.org",
            "--oauth-resource",
            "https://mcp.example.org/mcp",
        ]) else {
            panic!("not serve")
        };
        assert_eq!(
            s.oauth,
            Some(OAuthOptions {
                issuer: "https://idp.example.org".into(),
                resource: "https://mcp.example.org/mcp".into()
            })
        );
        assert_eq!(
            kind(&["serve", "--oauth-issuer", "https://idp.example.org"]),
            ErrorKind::MissingRequiredArgument
        );
        assert_eq!(
            kind(&["--oauth-resource", "https://mcp.example.org/mcp"]),
            ErrorKind::MissingRequiredArgument
        );
    }

    #[test]
    fn run_limits_parse_and_refuse_nonsense() {
        let Ok(Command::Serve(o)) = p(&[
            "serve",
            "--max-runs",
            "7",
            "--max-run-mib",
            "64",
            "--max-runs-per-minute",
            "3",
            "--expire-hours",
            "0.5",
            "--expire-finished-hours",
            "0.25",
        ]) else {
            panic!("parses")
        };
        assert_eq!(
            o.common.run_limits,
            RunLimits {
                max_runs: 7,
                max_mib: 64,
                max_per_minute: 3,
                expire_hours: 0.5,
                expire_finished_hours: 0.25,
            }
        );
        // A negative number reads as an unknown option.
        assert_eq!(
            kind(&["serve", "--max-runs", "-1"]),
            ErrorKind::UnknownArgument
        );
        for bad in [
            &["serve", "--max-runs", "x"][..],
            &["serve", "--expire-hours", "0"],
            &["serve", "--expire-hours", "NaN"],
            &["serve", "--expire-finished-hours", "inf"],
        ] {
            assert_eq!(kind(bad), ErrorKind::ValueValidation, "{bad:?}");
        }
        let e = p(&["serve", "--expire-hours", "NaN"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("takes a positive number of hours"), "{e}");
    }

    #[test]
    fn run_limits_default_to_the_documented_values() {
        let Ok(Command::Serve(o)) = p(&[]) else {
            panic!("serve")
        };
        assert_eq!(o.common.run_limits, RunLimits::default());
        assert_eq!(RunLimits::default().max_runs, 500);
        let help = command()
            .find_subcommand_mut("serve")
            .expect("serve")
            .render_long_help()
            .to_string();
        assert!(help.contains("[default: 500]"), "{help}");
        assert!(help.contains("[default: 168]"), "{help}");
    }

    #[test]
    fn launcher_options() {
        let Ok(Command::Serve(s)) = p(&["serve", "--launcher", "slurm", "--partition", "debug"])
        else {
            panic!("serve")
        };
        assert_eq!(
            s.common.slurm,
            Some(SlurmOptions {
                partition: Some("debug".into()),
            })
        );
        let Ok(Command::Demo(d)) = p(&["demo", "--partition", "debug"]) else {
            panic!("demo")
        };
        assert!(d.common.slurm.is_some(), "--partition implies slurm");
        let Ok(Command::Serve(s)) = p(&["serve", "--launcher", "local"]) else {
            panic!("serve")
        };
        assert_eq!(s.common.slurm, None);
        assert_eq!(
            kind(&["serve", "--launcher", "pbs"]),
            ErrorKind::InvalidValue
        );
        assert_eq!(
            kind(&["serve", "--launcher", "local", "--partition", "x"]),
            ErrorKind::ArgumentConflict
        );
        assert_eq!(
            kind(&["serve", "--cpus", "2"]),
            ErrorKind::UnknownArgument,
            "the job's CPUs come from the run"
        );
        assert_eq!(
            p(&["node", "/x/slurm-spec"]).unwrap(),
            Command::Node("/x/slurm-spec".into())
        );
        assert_eq!(kind(&["node"]), ErrorKind::MissingRequiredArgument);
        assert_eq!(kind(&["node", "a", "b"]), ErrorKind::UnknownArgument);
    }

    #[test]
    fn weak_sandbox_opt_out_is_explicit() {
        let Ok(Command::Serve(s)) = p(&["serve"]) else {
            panic!("serve")
        };
        assert!(!s.common.allow_weak_sandbox, "fail closed by default");
        let Ok(Command::Demo(d)) = p(&["demo", "--allow-weak-sandbox"]) else {
            panic!("demo")
        };
        assert!(d.common.allow_weak_sandbox);
        let sandbox_env = command()
            .find_subcommand("serve")
            .and_then(|s| {
                s.get_arguments()
                    .find(|a| a.get_id() == "allow_weak_sandbox")
                    .map(|a| a.get_env().is_some())
            })
            .expect("the flag exists");
        assert!(!sandbox_env, "no environment variable weakens the sandbox");
    }

    #[test]
    fn defaults_to_stdio_serve() {
        assert_eq!(p(&[]).unwrap(), Command::Serve(ServeOptions::default()));
        // serve's options without the mode, as before.
        let Ok(Command::Serve(s)) = p(&["--run-root", "/r", "--http", "127.0.0.1:1"]) else {
            panic!("serve")
        };
        assert_eq!(s.common.run_root, Some(PathBuf::from("/r")));
        assert_eq!(s.http, Some(SocketAddr::from(([127, 0, 0, 1], 1))));
        // ... but not mixed with a mode.
        assert!(p(&["--run-root", "/r", "demo"]).is_err());
    }

    #[test]
    fn parses_http_and_tokens() {
        let Ok(Command::Serve(s)) = p(&["serve", "--http", "127.0.0.1:9000", "--tokens-file", "t"])
        else {
            panic!("not serve")
        };
        assert_eq!(s.http, Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(s.tokens_file, Some(PathBuf::from("t")));
        assert_eq!(
            kind(&["serve", "--http", "not-an-addr"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(kind(&["serve", "--http"]), ErrorKind::InvalidValue);
        assert_eq!(
            kind(&["serve", "--tokens", "a=b"]),
            ErrorKind::UnknownArgument
        );
    }

    #[test]
    fn help_for_every_mode() {
        let e = p(&["--help"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DisplayHelp);
        let top = e.to_string();
        for mode in ["serve", "demo", "node", "completions"] {
            assert!(top.contains(mode), "{mode} missing from\n{top}");
        }
        assert!(top.contains("--version"), "{top}");
        let serve = p(&["serve", "--help"]).unwrap_err().to_string();
        assert!(serve.contains("--tokens-file"), "{serve}");
        assert!(serve.contains("SOLVER_SERVER_RUN_ROOT"), "{serve}");
        assert!(!serve.contains("--plot"), "{serve}");
        let demo = p(&["demo", "-h"]).unwrap_err().to_string();
        assert!(
            demo.contains("--plot") && !demo.contains("--http"),
            "{demo}"
        );
        assert_eq!(kind(&["help", "demo"]), ErrorKind::DisplayHelp);
    }

    #[test]
    fn version_is_the_crate_version() {
        let e = p(&["--version"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DisplayVersion);
        assert_eq!(
            e.to_string().trim(),
            format!("solver-server {}", env!("CARGO_PKG_VERSION"))
        );
    }

    #[test]
    fn misspellings_get_a_suggestion() {
        let e = p(&["serve", "--run-rot", "/r"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownArgument);
        assert!(e.to_string().contains("--run-root"), "{e}");
        let e = p(&["dmeo"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidSubcommand);
        assert!(e.to_string().contains("demo"), "{e}");
    }

    #[test]
    fn rejects_unknown_things() {
        for bad in [
            &["bogus"][..],
            &["serve", "--plot", "x"],
            &["demo", "--http", "1.2.3.4:1"],
            &["demo", "--tokens-file", "t"],
        ] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn completions_for_each_shell() {
        assert_eq!(
            p(&["completions", "bash"]).unwrap(),
            Command::Completions(Shell::Bash)
        );
        assert_eq!(kind(&["completions", "tcsh"]), ErrorKind::InvalidValue);
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut out = Vec::new();
            completions(shell, &mut out);
            let script = String::from_utf8(out).unwrap();
            assert!(script.contains("solver-server"), "{shell}");
            assert!(script.contains("run-root"), "{shell}");
        }
    }

    #[test]
    fn the_command_is_well_formed() {
        command().debug_assert();
    }
}
