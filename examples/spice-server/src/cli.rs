//! The command line: the framework's standard server options
//! ([`ServerArgs`]) and the SPICE server's own, in modes `serve` (the
//! default) and `demo`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use hardened_mcp::cli::{RunArgs, SandboxArgs, ServerArgs};

/// The environment variable that supplies `--ngspice`.
pub const NGSPICE_ENV: &str = "SPICE_SERVER_NGSPICE";

/// The command line: a mode, or `serve`'s options with no mode (stdio
/// `serve` is the default).
#[derive(Debug, Parser)]
#[command(
    name = "spice-server",
    version,
    about = "Circuit simulation with ngspice behind hardened MCP tools",
    long_about = "Circuit simulation with ngspice behind hardened MCP tools.\n\n\
                  With no mode, serves MCP over stdio (as `serve`); the options below are \
                  serve's. `spice-server <MODE> --help` shows a mode's options.",
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
    /// Serve the SPICE tools over MCP: stdio (the default), or streamable HTTP with --http
    Serve(Options),
    /// Run an in-process client session: simulations and refused attacks
    Demo(DemoOptions),
}

/// `serve`'s options: the standard ones and the SPICE server's.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct Options {
    /// Run root, sandbox, transport.
    #[command(flatten)]
    pub server: ServerArgs,
    /// The SPICE server's own.
    #[command(flatten)]
    pub spice: SpiceOptions,
}

/// What only the SPICE server has.
#[derive(Debug, Clone, Default, PartialEq, Args)]
#[command(next_help_heading = "ngspice")]
pub struct SpiceOptions {
    /// The ngspice executable [default: ngspice on PATH]
    #[arg(long, value_name = "PATH", env = NGSPICE_ENV)]
    pub ngspice: Option<PathBuf>,
    /// A host path ngspice may also read, bound read-only in its view only
    /// (repeatable; its data directories beside the executable are granted
    /// automatically when they lie outside the system trees)
    #[arg(long = "grant", value_name = "PATH")]
    pub grants: Vec<PathBuf>,
}

/// `demo`'s options: where runs go and how they are contained, no transport.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct DemoOptions {
    /// The run root [default: a fresh temporary directory, removed after].
    #[command(flatten)]
    pub runs: RunArgs,
    /// The sandbox.
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// The SPICE server's own.
    #[command(flatten)]
    pub spice: SpiceOptions,
    /// Where to save the AC plot [default: spice-ac.png]
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
        let argv = std::iter::once("spice-server").chain(args.iter().copied());
        match try_parse_from::<Cli, _, _>(argv.map(OsString::from))? {
            Parsed::Args(cli) => Ok(cli),
            _ => panic!("not arguments"),
        }
    }

    #[test]
    fn modes_and_options() {
        let cli = p(&[
            "--ngspice",
            "/usr/bin/ngspice",
            "--grant",
            "/opt/a",
            "--grant",
            "/opt/b",
        ])
        .unwrap();
        assert!(cli.mode.is_none());
        assert_eq!(cli.serve.spice.ngspice, Some("/usr/bin/ngspice".into()));
        assert_eq!(
            cli.serve.spice.grants,
            [PathBuf::from("/opt/a"), PathBuf::from("/opt/b")]
        );
        let Some(Mode::Demo(d)) = p(&["demo", "--plot", "x.png"]).unwrap().mode else {
            panic!("demo")
        };
        assert_eq!(d.plot, Some("x.png".into()));
        assert!(!d.sandbox.allow_weak_sandbox, "fail closed by default");
        let Some(Mode::Serve(o)) = p(&["serve", "--http", "127.0.0.1:1"]).unwrap().mode else {
            panic!("serve")
        };
        assert!(o.server.http.http.is_some(), "SPICE over HTTP");
        for bad in [
            &["serve", "--plot", "x"][..],
            &["demo", "--http", "127.0.0.1:1"],
        ] {
            assert_eq!(
                p(bad).unwrap_err().kind(),
                ErrorKind::UnknownArgument,
                "{bad:?}"
            );
        }
        let help = p(&["--help"]).unwrap_err().to_string();
        for word in [
            "serve",
            "demo",
            "--completions",
            "SPICE_SERVER_RUN_ROOT",
            "SPICE_SERVER_NGSPICE",
        ] {
            assert!(help.contains(word), "{word} missing from\n{help}");
        }
        hardened_mcp::cli::command::<Cli>().debug_assert();
    }
}
