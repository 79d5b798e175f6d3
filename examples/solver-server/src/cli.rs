//! The command line: the framework's standard server options
//! ([`ServerArgs`]) and the heat server's own, in modes `serve` (the
//! default) and `demo`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use hardened_mcp::cli::{RunArgs, SandboxArgs, ServerArgs};

/// The environment variable that supplies `--solver`.
pub const SOLVER_ENV: &str = "SOLVER_SERVER_SOLVER";

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
pub struct Cli {
    /// The mode; `serve` when absent.
    #[command(subcommand)]
    pub mode: Option<Mode>,
    /// `serve`'s options, given without the mode.
    #[command(flatten)]
    pub serve: Options,
}

/// The modes.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Mode {
    /// Serve the heat tools over MCP: stdio (the default), or streamable HTTP with --http
    Serve(Options),
    /// Run an in-process MCP client session that shows every protection
    ///
    /// Lists the tools, starts a run with a progress bar, shows its status and
    /// result, saves the profile plot, and sends a handful of hostile calls that
    /// are each refused with a fixed error. Finishes in seconds.
    Demo(DemoOptions),
}

/// `serve`'s options: the standard ones and the heat server's.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct Options {
    /// Run root, sandbox, launcher, transport.
    #[command(flatten)]
    pub server: ServerArgs,
    /// The heat server's own.
    #[command(flatten)]
    pub heat: HeatOptions,
}

/// What only the heat server has.
#[derive(Debug, Clone, Default, PartialEq, Args)]
#[command(next_help_heading = "Heat")]
pub struct HeatOptions {
    /// The heat1d executable [default: heat1d next to this binary, else this
    /// binary itself, which runs as the solver when started as `heat1d`]
    #[arg(long, value_name = "PATH", env = SOLVER_ENV)]
    pub solver: Option<PathBuf>,
    /// Ask the person behind the client to approve each cancel and delete
    /// (an MCP elicitation; a client that cannot ask is refused). A guard for
    /// people, not an access control: the heat:write scope is that
    #[arg(long)]
    pub confirm_delete: bool,
}

/// `demo`'s options: where runs go and how they are contained, no transport.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct DemoOptions {
    /// The run root [default: a fresh temporary directory, removed after].
    #[command(flatten)]
    pub runs: RunArgs,
    /// The sandbox and the launcher.
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// The heat server's own.
    #[command(flatten)]
    pub heat: HeatOptions,
    /// Where to save the profile plot [default: heat-profile.png]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use clap::error::ErrorKind;
    use hardened_mcp::cli::{Parsed, try_parse_from};

    use super::*;

    fn p(args: &[&str]) -> Result<Cli, clap::Error> {
        let argv = std::iter::once("solver-server").chain(args.iter().copied());
        match try_parse_from::<Cli, _, _>(argv.map(OsString::from))? {
            Parsed::Args(cli) => Ok(cli),
            _ => panic!("not arguments"),
        }
    }

    fn kind(args: &[&str]) -> ErrorKind {
        p(args).err().map(|e| e.kind()).expect("an error")
    }

    #[test]
    fn serve_is_the_default_mode_and_takes_the_heat_options() {
        let cli = p(&["--solver", "/s", "--confirm-delete", "--run-root", "/r"]).unwrap();
        assert!(cli.mode.is_none());
        assert_eq!(cli.serve.heat.solver, Some(PathBuf::from("/s")));
        assert!(cli.serve.heat.confirm_delete);
        assert_eq!(cli.serve.server.runs.run_root, Some(PathBuf::from("/r")));
        let Some(Mode::Serve(o)) = p(&["serve", "--http", "127.0.0.1:1"]).unwrap().mode else {
            panic!("serve")
        };
        assert!(o.server.http.http.is_some());
        // ... but not mixed with a mode.
        assert!(p(&["--run-root", "/r", "demo"]).is_err());
    }

    #[test]
    fn demo_takes_runs_and_sandbox_options_but_no_transport() {
        let Some(Mode::Demo(d)) = p(&["demo", "--plot", "x.png", "--max-runs", "3"])
            .unwrap()
            .mode
        else {
            panic!("demo")
        };
        assert_eq!(d.plot, Some(PathBuf::from("x.png")));
        assert_eq!(d.runs.max_runs, 3);
        for bad in [
            &["demo", "--http", "127.0.0.1:1"][..],
            &["demo", "--tokens-file", "t"],
            &["serve", "--plot", "x"],
        ] {
            assert_eq!(kind(bad), ErrorKind::UnknownArgument, "{bad:?}");
        }
    }

    #[test]
    fn help_names_the_modes_and_the_solver_variable() {
        let help = p(&["--help"]).unwrap_err();
        assert_eq!(help.kind(), ErrorKind::DisplayHelp);
        let help = help.to_string();
        for word in [
            "serve",
            "demo",
            "--completions",
            "SOLVER_SERVER_SOLVER",
            "SOLVER_SERVER_RUN_ROOT",
        ] {
            assert!(help.contains(word), "{word} missing from\n{help}");
        }
        hardened_mcp::cli::command::<Cli>().debug_assert();
    }
}
