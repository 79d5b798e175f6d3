//! The command line: the framework's two modes, `serve` (the default) and
//! `demo` ([`App`]), with the SPICE server's own options and the demo's.

use std::path::PathBuf;

use clap::Args;
use hardened_mcp::cli::App;

/// The environment variable that supplies `--ngspice`.
pub const NGSPICE_ENV: &str = "SPICE_SERVER_NGSPICE";

/// The command.
pub const APP: App = App::new(
    "spice-server",
    env!("CARGO_PKG_VERSION"),
    "Circuit simulation with ngspice behind hardened MCP tools",
)
.demo("Run an in-process client session: simulations and refused attacks");

/// The mode chosen, with its options.
pub type Mode = hardened_mcp::cli::Mode<SpiceOptions, DemoOptions>;

/// What only the SPICE server has (in both modes).
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

/// What only the demo has.
#[derive(Debug, Clone, Default, PartialEq, Args)]
#[command(next_help_heading = "Demo")]
pub struct DemoOptions {
    /// Where to save the AC plot [default: spice-ac.png]
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;
    use hardened_mcp::cli::Parsed;

    use super::*;

    fn p(args: &[&str]) -> Result<Mode, clap::Error> {
        let argv = std::iter::once("spice-server").chain(args.iter().copied());
        match APP.try_parse_from(argv)? {
            Parsed::Args(mode) => Ok(mode),
            _ => panic!("not arguments"),
        }
    }

    #[test]
    fn modes_and_options() {
        let argv = [
            "--ngspice",
            "/usr/bin/ngspice",
            "--grant",
            "/a",
            "--grant",
            "/b",
        ];
        let Mode::Serve(o) = p(&argv).unwrap() else {
            panic!("serve is the default")
        };
        assert_eq!(o.own.ngspice, Some("/usr/bin/ngspice".into()));
        assert_eq!(o.own.grants, [PathBuf::from("/a"), PathBuf::from("/b")]);
        let Mode::Demo(d) = p(&["demo", "--plot", "x.png", "--grant", "/a"]).unwrap() else {
            panic!("demo")
        };
        assert_eq!(
            (d.demo.plot, d.own.grants),
            (Some("x.png".into()), vec!["/a".into()])
        );
        assert!(!d.sandbox.allow_weak_sandbox, "fail closed by default");
        let Mode::Serve(o) = p(&["serve", "--http", "127.0.0.1:1"]).unwrap() else {
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
            NGSPICE_ENV,
        ] {
            assert!(help.contains(word), "{word} missing from\n{help}");
        }
        APP.command::<SpiceOptions, DemoOptions>().debug_assert();
    }
}
