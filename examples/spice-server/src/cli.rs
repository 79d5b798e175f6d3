//! Command-line parsing for `spice-server` (clap): modes `serve` (the
//! default), `demo` and `completions`, with `--help` and `--version`. The
//! parsed arguments become [`Options`], which the rest of the crate builds
//! servers from.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};
use clap_complete::Shell;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Serve MCP over stdio.
    Serve(Options),
    /// Run the in-process demo.
    Demo(Options),
    /// Print a completion script for this shell to stdout.
    Completions(Shell),
}

/// Options of both modes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// Where runs live (default: the state directory, else a temp dir; the
    /// demo: a fresh temporary directory).
    pub run_root: Option<PathBuf>,
    /// The ngspice executable (default: `ngspice` on `PATH`).
    pub ngspice: Option<PathBuf>,
    /// Extra host paths ngspice may read (its data files when installed
    /// outside the system trees).
    pub grants: Vec<PathBuf>,
    /// Start even where the host lacks a containment layer.
    pub allow_weak_sandbox: bool,
    /// Demo: where to save the plot PNG.
    pub plot: Option<PathBuf>,
}

/// The environment variable that supplies `--run-root`.
pub const RUN_ROOT_ENV: &str = "SPICE_SERVER_RUN_ROOT";
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
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    #[command(flatten)]
    serve: CommonArgs,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Serve the SPICE tools over MCP on stdio (the default)
    Serve(CommonArgs),
    /// Run an in-process client session: simulations and refused attacks
    Demo(DemoArgs),
    /// Print a shell completion script to stdout
    ///
    /// For example: `spice-server completions bash > ~/.local/share/bash-completion/completions/spice-server`.
    Completions {
        /// The shell to complete for.
        shell: Shell,
    },
}

/// The options of both modes.
#[derive(Debug, Args)]
struct CommonArgs {
    /// Directory holding the runs (created 0700) [default: $XDG_STATE_HOME or
    /// ~/.local/state, else the temp dir, + /hardened-mcp-spice; demo: a fresh
    /// temporary directory]
    #[arg(long, value_name = "DIR", env = RUN_ROOT_ENV)]
    run_root: Option<PathBuf>,
    /// The ngspice executable [default: ngspice on PATH]
    #[arg(long, value_name = "PATH", env = NGSPICE_ENV)]
    ngspice: Option<PathBuf>,
    /// A host path ngspice may also read, bound read-only in its view only
    /// (repeatable; its data directories beside the executable are granted
    /// automatically when they lie outside the system trees)
    #[arg(long = "grant", value_name = "PATH")]
    grants: Vec<PathBuf>,
    /// Start even on a host that lacks a containment layer (namespaces,
    /// seccomp, Landlock); by default such a host refuses to start
    #[arg(long)]
    allow_weak_sandbox: bool,
}

/// `demo` options.
#[derive(Debug, Args)]
struct DemoArgs {
    /// Where to save the AC plot [default: spice-ac.png]
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
}

impl CommonArgs {
    fn into_options(self, plot: Option<PathBuf>) -> Options {
        Options {
            run_root: self.run_root,
            ngspice: self.ngspice,
            grants: self.grants,
            allow_weak_sandbox: self.allow_weak_sandbox,
            plot,
        }
    }
}

/// The clap command, for help, completions and tests.
pub fn command() -> clap::Command {
    Cli::command()
}

/// Writes the completion script for `shell` to `out`.
pub fn completions(shell: Shell, out: &mut dyn std::io::Write) {
    clap_complete::generate(shell, &mut command(), "spice-server", out);
}

/// Parses the arguments after the program name. `--help` and `--version`
/// come back as errors of their kinds ([`clap::Error::exit`] prints them
/// to stdout and exits 0; usage errors go to stderr with exit status 2).
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, clap::Error> {
    let argv = std::iter::once(OsString::from("spice-server")).chain(args);
    let cli = Cli::try_parse_from(argv)?;
    Ok(match cli.mode {
        None => Command::Serve(cli.serve.into_options(None)),
        Some(Mode::Serve(s)) => Command::Serve(s.into_options(None)),
        Some(Mode::Demo(d)) => Command::Demo(d.common.into_options(d.plot)),
        Some(Mode::Completions { shell }) => Command::Completions(shell),
    })
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    use super::*;

    fn p(args: &[&str]) -> Result<Command, clap::Error> {
        parse(args.iter().map(OsString::from))
    }

    fn kind(args: &[&str]) -> ErrorKind {
        p(args).err().map(|e| e.kind()).expect("an error")
    }

    #[test]
    fn modes_and_options() {
        assert_eq!(p(&[]).unwrap(), Command::Serve(Options::default()));
        let Ok(Command::Demo(o)) = p(&[
            "demo", "--plot", "x.png", "--grant", "/opt/a", "--grant", "/opt/b",
        ]) else {
            panic!("demo")
        };
        assert_eq!(o.plot, Some("x.png".into()));
        assert_eq!(o.grants, [PathBuf::from("/opt/a"), PathBuf::from("/opt/b")]);
        assert!(!o.allow_weak_sandbox, "fail closed by default");
        let Ok(Command::Serve(o)) = p(&["--run-root", "/r", "--ngspice", "/usr/bin/ngspice"])
        else {
            panic!("serve without the mode")
        };
        assert_eq!(o.run_root, Some("/r".into()));
        assert_eq!(o.ngspice, Some("/usr/bin/ngspice".into()));
        assert_eq!(kind(&["serve", "--plot", "x"]), ErrorKind::UnknownArgument);
        assert_eq!(kind(&["--plot", "x"]), ErrorKind::UnknownArgument);
        assert_eq!(kind(&["serve", "--ngspice"]), ErrorKind::InvalidValue);
        assert_eq!(kind(&["bogus"]), ErrorKind::InvalidSubcommand);
    }

    #[test]
    fn help_version_and_suggestions() {
        let help = p(&["--help"]).unwrap_err();
        assert_eq!(help.kind(), ErrorKind::DisplayHelp);
        let help = help.to_string();
        for mode in ["serve", "demo", "completions", "SPICE_SERVER_RUN_ROOT"] {
            assert!(help.contains(mode), "{mode} missing from\n{help}");
        }
        let demo = p(&["demo", "--help"]).unwrap_err().to_string();
        assert!(demo.contains("--plot"), "{demo}");
        let v = p(&["--version"]).unwrap_err();
        assert_eq!(v.kind(), ErrorKind::DisplayVersion);
        assert_eq!(
            v.to_string().trim(),
            format!("spice-server {}", env!("CARGO_PKG_VERSION"))
        );
        let e = p(&["demo", "--grnat", "/opt"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownArgument);
        assert!(e.to_string().contains("--grant"), "{e}");
    }

    #[test]
    fn completions_for_each_shell() {
        assert_eq!(
            p(&["completions", "zsh"]).unwrap(),
            Command::Completions(Shell::Zsh)
        );
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut out = Vec::new();
            completions(shell, &mut out);
            let script = String::from_utf8(out).unwrap();
            assert!(script.contains("spice-server"), "{shell}");
            assert!(script.contains("ngspice"), "{shell}");
        }
        command().debug_assert();
    }
}
