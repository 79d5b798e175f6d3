//! The arguments: what a server's command line holds, in groups that
//! `--help` shows under their own headings.

#[cfg(feature = "slurm")]
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::builder::TypedValueParser as _;
use clap::{ArgMatches, Args, Command, FromArgMatches, ValueEnum};
use clap_complete::Shell;

use crate::transport::http::{ForwardedHeader, IpNet};

/// The id of `--completions`, which [`super::parse`] looks for.
pub(super) const COMPLETIONS_ID: &str = "completions";
/// The id of `--slurm-node`, which [`super::parse`] looks for.
#[cfg(feature = "slurm")]
pub(super) const SLURM_NODE_ID: &str = "slurm_node";

/// The flag before the spec path with which the Slurm launcher starts the
/// server's own binary on a node as its node helper
/// ([`SlurmConfig::helper_args`](crate::jobs::SlurmConfig::helper_args)).
#[cfg(feature = "slurm")]
pub const SLURM_NODE_FLAG: &str = "--slurm-node";

/// The defaults of the options, also shown by `--help`.
pub mod defaults {
    /// `--max-runs`: runs one caller holds at once.
    pub const MAX_RUNS: usize = 500;
    /// `--max-run-mib`: MiB one caller's finished runs hold.
    pub const MAX_RUN_MIB: u64 = 20 * 1024;
    /// `--max-runs-per-minute`: runs one caller creates per minute.
    pub const MAX_RUNS_PER_MINUTE: u32 = 120;
    /// `--expire-hours`: an unused run expires after this long (a week).
    pub const EXPIRE_HOURS: f64 = 7.0 * 24.0;
    /// `--expire-finished-hours`: the same for a finished run (three days).
    pub const EXPIRE_FINISHED_HOURS: f64 = 3.0 * 24.0;
    /// `--max-running`: solver runs at once, in all (the sandbox's own
    /// default).
    pub const MAX_RUNNING: usize = crate::sandbox::DEFAULT_GLOBAL_RUNS;
    /// `--max-running-per-caller`: solver runs one caller has at once.
    pub const MAX_RUNNING_PER_CALLER: usize = crate::sandbox::DEFAULT_PER_CALLER_RUNS;
}

/// Everything a server's standard command line sets: flatten it into the
/// server's own `clap::Parser` and serve with [`ServerArgs::serve`].
/// `--help` shows its options under the headings Runs, Sandbox and HTTP,
/// and the server's own options after them under the usual one.
///
/// `Default` is what an empty command line gives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerArgs {
    /// The run root.
    pub runs: RunArgs,
    /// The sandbox and the launcher.
    pub sandbox: SandboxArgs,
    /// The transport.
    pub http: HttpArgs,
    /// `--completions SHELL`: print a completion script and exit.
    pub completions: Option<Shell>,
    /// `--slurm-node SPEC`: run as the Slurm node helper.
    #[cfg(feature = "slurm")]
    pub slurm_node: Option<OsString>,
}

/// The options of [`ServerArgs`] outside the groups, under no heading.
#[derive(Args)]
struct Tail {
    /// Print a completion script for SHELL to stdout and exit, e.g.
    /// `--completions bash > ~/.local/share/bash-completion/completions/NAME`
    #[arg(long, value_name = "SHELL", exclusive = true, id = COMPLETIONS_ID)]
    completions: Option<Shell>,
    /// The Slurm node helper: run the spec at SPEC (the launcher's batch
    /// script passes it; not for people).
    #[cfg(feature = "slurm")]
    #[arg(long, value_name = "SPEC", exclusive = true, hide = true, id = SLURM_NODE_ID)]
    slurm_node: Option<OsString>,
}

// By hand rather than derived: a derived flatten leaves its last group's
// heading on the options that follow it in the server's own struct.
impl Args for ServerArgs {
    fn augment_args(cmd: Command) -> Command {
        let cmd = HttpArgs::augment_args(SandboxArgs::augment_args(RunArgs::augment_args(cmd)));
        Tail::augment_args(cmd.next_help_heading(None::<&str>))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for ServerArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let tail = Tail::from_arg_matches(m)?;
        Ok(Self {
            runs: RunArgs::from_arg_matches(m)?,
            sandbox: SandboxArgs::from_arg_matches(m)?,
            http: HttpArgs::from_arg_matches(m)?,
            completions: tail.completions,
            #[cfg(feature = "slurm")]
            slurm_node: tail.slurm_node,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// The run root, with per-caller quotas and retention
/// ([`Setup::run_root`](super::Setup::run_root)).
#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Runs")]
pub struct RunArgs {
    /// Directory holding the runs (created 0700) [default: $XDG_STATE_HOME or
    /// ~/.local/state, else the temp dir, + /hardened-mcp-PREFIX, PREFIX the
    /// server's run handle prefix]
    #[arg(long, value_name = "DIR")]
    pub run_root: Option<PathBuf>,
    /// Runs one caller may hold; more: quota_exceeded
    #[arg(long, value_name = "N", default_value_t = defaults::MAX_RUNS)]
    pub max_runs: usize,
    /// MiB one caller's finished runs may hold
    #[arg(long, value_name = "N", default_value_t = defaults::MAX_RUN_MIB)]
    pub max_run_mib: u64,
    /// Runs one caller may create per minute
    #[arg(long, value_name = "N", default_value_t = defaults::MAX_RUNS_PER_MINUTE)]
    pub max_runs_per_minute: u32,
    /// An unused run expires after H hours; expired handles answer like
    /// unknown ones and a background sweep removes them
    #[arg(long, value_name = "H", value_parser = hours, default_value_t = defaults::EXPIRE_HOURS)]
    pub expire_hours: f64,
    /// The same for a finished run
    #[arg(long, value_name = "H", value_parser = hours, default_value_t = defaults::EXPIRE_FINISHED_HOURS)]
    pub expire_finished_hours: f64,
}

impl Default for RunArgs {
    fn default() -> Self {
        Self {
            run_root: None,
            max_runs: defaults::MAX_RUNS,
            max_run_mib: defaults::MAX_RUN_MIB,
            max_runs_per_minute: defaults::MAX_RUNS_PER_MINUTE,
            expire_hours: defaults::EXPIRE_HOURS,
            expire_finished_hours: defaults::EXPIRE_FINISHED_HOURS,
        }
    }
}

/// A positive, finite number of hours, at most ten years.
fn hours(v: &str) -> Result<f64, &'static str> {
    v.parse::<f64>()
        .ok()
        .filter(|h| h.is_finite() && *h > 0.0 && *h <= 24.0 * 3660.0)
        .ok_or("takes a positive number of hours (at most ten years)")
}

/// Where solvers run ([`Setup::launcher`](super::Setup::launcher)).
#[cfg(feature = "slurm")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LauncherKind {
    /// On this machine.
    Local,
    /// As Slurm batch jobs, whose node helper (this binary) applies the
    /// same sandbox; the run root must be on a
    /// file system the nodes share, at the same path.
    Slurm,
}

/// The sandbox's containment and ceilings, and where solvers run
/// ([`Setup::sandbox`](super::Setup::sandbox)).
#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Sandbox")]
pub struct SandboxArgs {
    /// Start even on a host that lacks a containment layer (user, PID and
    /// mount namespaces, seccomp, Landlock, cgroups); by default such a host
    /// refuses to start. The log's containment line says which layers runs
    /// get. No environment variable sets it
    #[arg(long)]
    pub allow_weak_sandbox: bool,
    /// Solver runs at once, in all; more wait for a place
    #[arg(long, value_name = "N", default_value_t = defaults::MAX_RUNNING,
          value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    pub max_running: usize,
    /// Solver runs one caller may have at once
    #[arg(long, value_name = "N", default_value_t = defaults::MAX_RUNNING_PER_CALLER,
          value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    pub max_running_per_caller: usize,
    /// Where solver runs go [default: local; slurm with --partition]
    #[cfg(feature = "slurm")]
    #[arg(long, value_name = "KIND", value_enum)]
    pub launcher: Option<LauncherKind>,
    /// Slurm partition [default: the cluster's default]; implies --launcher slurm
    #[cfg(feature = "slurm")]
    #[arg(long, value_name = "NAME")]
    pub partition: Option<String>,
}

impl Default for SandboxArgs {
    fn default() -> Self {
        Self {
            allow_weak_sandbox: false,
            max_running: defaults::MAX_RUNNING,
            max_running_per_caller: defaults::MAX_RUNNING_PER_CALLER,
            #[cfg(feature = "slurm")]
            launcher: None,
            #[cfg(feature = "slurm")]
            partition: None,
        }
    }
}

/// The header a trusted proxy names the client in (`--forwarded-header`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ProxyHeader {
    /// `X-Forwarded-For`.
    #[default]
    XForwardedFor,
    /// `Forwarded` (RFC 7239).
    Forwarded,
}

impl From<ProxyHeader> for ForwardedHeader {
    fn from(h: ProxyHeader) -> Self {
        match h {
            ProxyHeader::XForwardedFor => ForwardedHeader::XForwardedFor,
            ProxyHeader::Forwarded => ForwardedHeader::Forwarded,
        }
    }
}

/// The transport: stdio, or streamable HTTP with `--http`
/// ([`HttpArgs::config`]).
#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "HTTP")]
pub struct HttpArgs {
    /// Serve streamable HTTP on ADDR (e.g. 127.0.0.1:8080) instead of stdio;
    /// the MCP endpoint is http://ADDR/mcp
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Bearer tokens, one `caller-name=token` per line, in a file readable by
    /// its owner only (tokens are never taken on the command line); needed
    /// on an address that is not loopback unless OAuth is configured
    #[arg(long, value_name = "FILE", requires = "http")]
    pub tokens_file: Option<PathBuf>,
    /// Accept OAuth 2.1 access tokens (JWTs) of this authorization server
    /// (https, or http on loopback); its metadata and keys are fetched at start
    #[cfg(feature = "oauth")]
    #[arg(long, value_name = "URL", requires_all = ["oauth_resource", "http"])]
    pub oauth_issuer: Option<String>,
    /// This server's canonical URI, e.g. `https://mcp.example.org/mcp`: the
    /// audience the tokens must carry. The scopes the tools declare are
    /// published as the scopes supported
    #[cfg(feature = "oauth")]
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub oauth_resource: Option<String>,
    /// A name (`host` or `host:port`) clients reach this server under
    /// (repeatable) [default: localhost, 127.0.0.1, ::1]; others get 403
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allow_hosts: Vec<String>,
    /// A browser origin (`scheme://host[:port]`) whose pages may call this
    /// server besides its own (repeatable); other origins get 403
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,
    /// A reverse proxy's address or network (e.g. 10.0.0.5/32, repeatable):
    /// on its connections the client is the one its forwarding header names
    #[arg(long = "trusted-proxy", value_name = "NET", value_parser = net, requires = "http")]
    pub trusted_proxies: Vec<IpNet>,
    /// The header the trusted proxies name the client in
    #[arg(
        long,
        value_name = "HEADER",
        value_enum,
        default_value_t,
        requires = "trusted_proxies"
    )]
    pub forwarded_header: ProxyHeader,
    /// Authenticated connections served at once; more: 503
    #[arg(long, value_name = "N", default_value_t = crate::transport::http::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
    pub max_connections: usize,
    /// Connections one caller may hold; more: 429
    #[arg(long, value_name = "N", default_value_t = crate::transport::http::DEFAULT_MAX_CONNECTIONS_PER_CALLER,
          value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
    pub max_connections_per_caller: usize,
    /// Sessions one caller may hold; more: 429
    #[arg(long, value_name = "N", default_value_t = crate::transport::http::DEFAULT_MAX_SESSIONS_PER_CALLER,
          value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
    pub max_sessions_per_caller: usize,
}

impl Default for HttpArgs {
    fn default() -> Self {
        use crate::transport::http as h;
        Self {
            http: None,
            tokens_file: None,
            #[cfg(feature = "oauth")]
            oauth_issuer: None,
            #[cfg(feature = "oauth")]
            oauth_resource: None,
            allow_hosts: Vec::new(),
            allow_origins: Vec::new(),
            trusted_proxies: Vec::new(),
            forwarded_header: ProxyHeader::XForwardedFor,
            max_connections: h::DEFAULT_MAX_CONNECTIONS,
            max_connections_per_caller: h::DEFAULT_MAX_CONNECTIONS_PER_CALLER,
            max_sessions_per_caller: h::DEFAULT_MAX_SESSIONS_PER_CALLER,
        }
    }
}

/// An address (`/32` or `/128`) or a network.
fn net(v: &str) -> Result<IpNet, &'static str> {
    v.parse::<IpNet>()
        .or_else(|_| v.parse::<std::net::IpAddr>().map(IpNet::from))
        .map_err(|_| "takes an IP address or network, e.g. 10.0.0.5 or 10.0.0.0/24")
}
