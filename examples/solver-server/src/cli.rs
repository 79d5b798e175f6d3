//! The command line: the framework's two modes, `serve` (the default) and
//! `demo` ([`App`]), with the heat server's own options and the demo's.

use std::path::PathBuf;

use clap::Args;
use hardened_mcp::cli::App;

/// The environment variable that supplies `--solver`.
pub const SOLVER_ENV: &str = "SOLVER_SERVER_SOLVER";

/// The command.
pub const APP: App = App::new(
    "solver-server",
    env!("CARGO_PKG_VERSION"),
    "A 1-D heat-diffusion solver behind hardened MCP tools",
)
.demo(
    "Run an in-process MCP client session that shows every protection: a run with a \
     progress bar, its result and plot, and hostile calls each refused with a fixed error",
);

/// The mode chosen, with its options.
pub type Mode = hardened_mcp::cli::Mode<HeatOptions, DemoOptions>;

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

/// What only the demo has.
#[derive(Debug, Clone, Default, PartialEq, Args)]
#[command(next_help_heading = "Demo")]
pub struct DemoOptions {
    /// Where to save the profile plot [default: heat-profile.png]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;
    use hardened_mcp::cli::Parsed;

    use super::*;

    fn p(args: &[&str]) -> Result<Mode, clap::Error> {
        let argv = std::iter::once("solver-server").chain(args.iter().copied());
        match APP.try_parse_from(argv)? {
            Parsed::Args(mode) => Ok(mode),
            _ => panic!("not arguments"),
        }
    }

    fn kind(args: &[&str]) -> ErrorKind {
        p(args).err().map(|e| e.kind()).expect("an error")
    }

    #[test]
    fn serve_is_the_default_mode_and_takes_the_heat_options() {
        let argv = ["--solver", "/s", "--confirm-delete", "--run-root", "/r"];
        let Mode::Serve(o) = p(&argv).unwrap() else {
            panic!("serve is the default")
        };
        assert_eq!(o.own.solver, Some(PathBuf::from("/s")));
        assert!(o.own.confirm_delete);
        assert_eq!(o.server.runs.run_root, Some(PathBuf::from("/r")));
        let Mode::Serve(o) = p(&["serve", "--http", "127.0.0.1:1"]).unwrap() else {
            panic!("serve")
        };
        assert!(o.server.http.http.is_some());
        // ... but not mixed with a mode.
        assert!(p(&["--run-root", "/r", "demo"]).is_err());
    }

    #[test]
    fn demo_takes_runs_and_sandbox_options_but_no_transport() {
        let Mode::Demo(d) = p(&["demo", "--plot", "x.png", "--max-runs", "3"]).unwrap() else {
            panic!("demo")
        };
        assert_eq!(d.demo.plot, Some(PathBuf::from("x.png")));
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
        APP.command::<HeatOptions, DemoOptions>().debug_assert();
    }
}
