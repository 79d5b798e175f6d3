//! A server's standard command line (feature `cli`, on clap): one
//! [`ServerArgs`] to flatten into the server's own arguments, and one call,
//! [`ServerArgs::serve`], to serve with them.
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! use hardened_mcp::cli::{self, ServerArgs};
//! # use hardened_mcp::prelude::*;
//! # struct Beam;
//! # #[hardened_tools]
//! # impl Beam {
//! #     /// A tool.
//! #     #[hardened_tool(max_cost = 1, units = "evaluations", cost = 1.0)]
//! #     async fn one(&self) -> Result<Output<u8>, ToolError> { Ok(Output::new(1)) }
//! # }
//!
//! /// A beam solver behind hardened MCP tools.
//! #[derive(clap::Parser)]
//! #[command(version, about)]
//! struct Args {
//!     #[command(flatten)]
//!     server: ServerArgs,
//!     /// Ask before deleting a run.
//!     #[arg(long)]
//!     confirm_delete: bool,
//! }
//!
//! fn main() -> ExitCode {
//!     let args: Args = cli::parse();
//!     args.server.serve(|_setup| {
//!         Ok(Server::new("beam", env!("CARGO_PKG_VERSION"), Beam, Beam::hardened_tool_router()))
//!     })
//! }
//! ```
//!
//! The command line this gives (`--help` lists it, grouped):
//!
//! | options | what they set |
//! |---|---|
//! | `--run-root DIR`, `--max-runs`, `--max-run-mib`, `--max-runs-per-minute`, `--expire-hours`, `--expire-finished-hours` | the run root and its per-caller quotas and retention ([`Setup::run_root`]) |
//! | `--allow-weak-sandbox`, `--max-running`, `--max-running-per-caller`, `--launcher local\|slurm`, `--partition` | the sandbox and where solvers run ([`Setup::sandbox`], [`Setup::launcher`]) |
//! | `--http ADDR`, `--tokens-file`, `--oauth-issuer`, `--oauth-resource`, `--allow-host`, `--allow-origin`, `--trusted-proxy`, `--forwarded-header`, `--max-connections`, `--max-connections-per-caller`, `--max-sessions-per-caller` | the transport: stdio unless `--http` is given ([`HttpArgs::config`]) |
//! | `--completions SHELL` | prints a completion script and exits ([`parse`]) |
//!
//! With [`parse`] (rather than clap's own `Parser::parse`), `--run-root`,
//! `--http` and `--tokens-file` can also come from the environment, named
//! after the command: `SOLVER_SERVER_RUN_ROOT` for `solver-server`. No
//! environment variable weakens the sandbox, and bearer tokens are never
//! taken on the command line (a file readable by its owner only).
//!
//! The options of the Slurm launcher need the feature `slurm`, those of
//! OAuth the feature `oauth`; without them the options do not exist.
//!
//! A server with a demo mode takes [`App`]: the modes `serve` (the
//! default) and `demo`, read into a [`Mode`]; a demo runs the server
//! over [`DemoArgs::server_args`] (a temporary run root) and talks to it
//! through [`InProcess`].

mod args;
mod install;
mod modes;
mod setup;

pub use args::{HttpArgs, RunArgs, SandboxArgs, ServerArgs};
#[cfg(feature = "slurm")]
#[cfg_attr(docsrs, doc(cfg(feature = "slurm")))]
pub use args::{LauncherKind, SLURM_NODE_FLAG};
pub use args::{ProxyHeader, defaults};
pub use clap_complete::Shell;
pub use install::{data_dirs, find_on_path};
pub use modes::{App, DemoArgs, DemoServerArgs, InProcess, Mode, ServeArgs};
pub use setup::{Setup, StartError, default_run_root};

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{ArgMatches, Command, FromArgMatches, Parser};

/// An error a server's start-up may meet, for the operator.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The options [`parse`] gives an environment variable: `(argument id,
/// variable suffix)`. The variable is the command's name in upper case,
/// `-` as `_`, then `_` and the suffix.
const FROM_ENV: [(&str, &str); 3] = [
    ("run_root", "RUN_ROOT"),
    ("http", "HTTP"),
    ("tokens_file", "TOKENS_FILE"),
];

/// Parses the process's arguments into the server's `C`, exiting as
/// command-line programs do: `--help` and `--version` print to standard
/// output (status 0), a usage error to standard error (status 2, with a
/// suggestion for a misspelled option), `--completions SHELL` prints
/// the completion script of the whole command and exits 0, and (feature
/// `slurm`) `--slurm-node SPEC` runs the node helper and exits with its
/// status.
pub fn parse<C: Parser>() -> C {
    finish(try_parse_from::<C, _, _>(std::env::args_os()))
}

/// The arguments of a parse, or the exit its other outcomes call for.
fn finish<C>(parsed: Result<Parsed<C>, clap::Error>) -> C {
    match parsed {
        Ok(Parsed::Args(c)) => c,
        #[cfg(feature = "slurm")]
        Ok(Parsed::SlurmNode(spec)) => {
            std::process::exit(i32::from(crate::jobs::slurm::node_status(Some(spec))))
        }
        Ok(Parsed::Completions(script)) => {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let written = out.write_all(script.as_bytes()).and_then(|()| out.flush());
            std::process::exit(if written.is_ok() { 0 } else { 1 })
        }
        Err(e) => e.exit(),
    }
}

/// What a command line asked for.
#[derive(Debug)]
#[non_exhaustive]
pub enum Parsed<C> {
    /// Run with these arguments.
    Args(C),
    /// Print this completion script (`--completions SHELL`).
    Completions(String),
    /// Run as the Slurm node helper on the run spec at this path
    /// (`--slurm-node SPEC`): the server's own arguments are not read.
    #[cfg(feature = "slurm")]
    #[cfg_attr(docsrs, doc(cfg(feature = "slurm")))]
    SlurmNode(OsString),
}

/// [`parse`] without exiting: `args` start with the program name; help,
/// version and usage errors come back as [`clap::Error`]s of their kinds
/// ([`clap::Error::exit`] prints and exits as [`parse`] does).
pub fn try_parse_from<C, I, T>(args: I) -> Result<Parsed<C>, clap::Error>
where
    C: Parser,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    matched::<C, _, _>(command::<C>(), args)
}

impl<C> Parsed<C> {
    /// The arguments mapped by `f`; the other outcomes as they are.
    pub fn map<D>(self, f: impl FnOnce(C) -> D) -> Parsed<D> {
        match self {
            Parsed::Args(c) => Parsed::Args(f(c)),
            Parsed::Completions(script) => Parsed::Completions(script),
            #[cfg(feature = "slurm")]
            Parsed::SlurmNode(spec) => Parsed::SlurmNode(spec),
        }
    }
}

/// `args` matched against `command` (which is `C`'s, with changes), then
/// read into `C`.
fn matched<C, I, T>(mut command: Command, args: I) -> Result<Parsed<C>, clap::Error>
where
    C: FromArgMatches,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = command.try_get_matches_from_mut(args)?;
    #[cfg(feature = "slurm")]
    if let Some(spec) = find::<OsString>(&matches, args::SLURM_NODE_ID) {
        return Ok(Parsed::SlurmNode(spec));
    }
    if let Some(shell) = find::<Shell>(&matches, args::COMPLETIONS_ID) {
        let mut script = Vec::new();
        let name = command.get_name().to_owned();
        clap_complete::generate(shell, &mut command, name, &mut script);
        return Ok(Parsed::Completions(
            String::from_utf8_lossy(&script).into_owned(),
        ));
    }
    let mut matches = matches;
    C::from_arg_matches_mut(&mut matches)
        .map(Parsed::Args)
        .map_err(|e| e.format(&mut command))
}

/// `C`'s clap command with the environment variables of [`parse`]: for
/// help, completions and tests.
pub fn command<C: Parser>() -> Command {
    with_env(C::command())
}

/// Gives the arguments of [`FROM_ENV`] their variables, named after
/// `command`'s name, in it and every subcommand that has them.
fn with_env(command: Command) -> Command {
    let prefix: String = command
        .get_name()
        .chars()
        .map(|c| match c {
            'a'..='z' => c.to_ascii_uppercase(),
            'A'..='Z' | '0'..='9' => c,
            _ => '_',
        })
        .collect();
    with_env_as(command, &prefix)
}

fn with_env_as(mut command: Command, prefix: &str) -> Command {
    for (id, suffix) in FROM_ENV {
        if command.get_arguments().any(|a| a.get_id() == id) {
            command = command.mut_arg(id, |a| a.env(format!("{prefix}_{suffix}")));
        }
    }
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        command = command.mut_subcommand(name, |s| with_env_as(s, prefix));
    }
    command
}

/// The value of the argument `id` anywhere in the matched command line.
fn find<T: Clone + Send + Sync + 'static>(matches: &ArgMatches, id: &str) -> Option<T> {
    let here = matches.try_get_one::<T>(id).ok().flatten().cloned();
    here.or_else(|| matches.subcommand().and_then(|(_, sub)| find::<T>(sub, id)))
}

/// The name the process was started under (its file name), for messages
/// to the operator.
fn program_name() -> String {
    std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "server".to_owned())
}

/// Runs `main` to its end on a fresh multi-threaded tokio runtime, with
/// logs to standard error at `log_level` (`RUST_LOG` overrides it): the
/// frame of a mode of the server's own, such as a demo, as
/// [`ServerArgs::serve`] is that of serving. A failure is printed to
/// standard error with its causes, prefixed by the program's name, and is
/// exit status 1.
pub fn block_on<F>(log_level: &str, main: F) -> ExitCode
where
    F: std::future::Future<Output = Result<(), BoxError>>,
{
    crate::logging::init(log_level);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{}: cannot start the async runtime: {e}", program_name());
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(main) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let mut text = format!("{}: {e}", program_name());
            let mut cause = e.source();
            while let Some(c) = cause {
                text.push_str(&format!(": {c}"));
                cause = c.source();
            }
            eprintln!("{text}");
            ExitCode::FAILURE
        }
    }
}
