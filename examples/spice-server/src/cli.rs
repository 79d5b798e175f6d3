//! Command-line parsing for `spice-server`: modes `serve` and `demo`, each
//! with `--help`.

use std::ffi::OsString;
use std::path::PathBuf;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Serve MCP over stdio.
    Serve(Options),
    /// Run the in-process demo.
    Demo(Options),
    /// Print this help text and exit.
    Help(&'static str),
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

/// Top-level help.
pub const HELP: &str = "\
spice-server: circuit simulation with ngspice behind hardened MCP tools

USAGE:
    spice-server [serve] [OPTIONS]     serve MCP over stdio (the default)
    spice-server demo [OPTIONS]        run an in-process client session: simulations and refused attacks

OPTIONS:
    --run-root DIR        directory holding the runs (created 0700; default: $XDG_STATE_HOME or
                          ~/.local/state, else the temp dir, + /hardened-mcp-spice; demo: a fresh
                          temporary directory)
    --ngspice PATH        the ngspice executable (default: ngspice on PATH)
    --grant PATH          a host path ngspice may also read, bound read-only in its view only
                          (repeatable; its data directories beside the executable are granted
                          automatically when they lie outside the system trees)
    --allow-weak-sandbox  start even on a host that lacks a containment layer (namespaces,
                          seccomp, Landlock); by default such a host refuses to start
    --plot FILE           demo: where to save the AC plot (default: spice-ac.png)
";

/// A command line that does not parse; the text is fixed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}; see spice-server --help")]
pub struct UsageError(&'static str);

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, UsageError> {
    let mut args = args.into_iter().peekable();
    let demo = match args.peek().and_then(|a| a.to_str()) {
        Some("serve") => {
            args.next();
            false
        }
        Some("demo") => {
            args.next();
            true
        }
        Some("--help" | "-h" | "help") => return Ok(Command::Help(HELP)),
        Some(a) if !a.starts_with("--") => return Err(UsageError("unknown mode")),
        None | Some(_) => false,
    };
    let mut o = Options::default();
    while let Some(flag) = args.next() {
        let flag = flag
            .to_str()
            .ok_or(UsageError("unknown option"))?
            .to_owned();
        let mut value = || {
            args.next()
                .ok_or(UsageError("an option is missing its value"))
        };
        match flag.as_str() {
            "--help" | "-h" => return Ok(Command::Help(HELP)),
            "--run-root" => o.run_root = Some(value()?.into()),
            "--ngspice" => o.ngspice = Some(value()?.into()),
            "--grant" => o.grants.push(value()?.into()),
            "--allow-weak-sandbox" => o.allow_weak_sandbox = true,
            "--plot" if demo => o.plot = Some(value()?.into()),
            _ => return Err(UsageError("unknown option")),
        }
    }
    Ok(if demo {
        Command::Demo(o)
    } else {
        Command::Serve(o)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Command, UsageError> {
        parse(args.iter().map(OsString::from))
    }

    #[test]
    fn modes_and_options() {
        assert_eq!(p(&[]), Ok(Command::Serve(Options::default())));
        let Ok(Command::Demo(o)) = p(&[
            "demo", "--plot", "x.png", "--grant", "/opt/a", "--grant", "/opt/b",
        ]) else {
            panic!("demo")
        };
        assert_eq!(o.plot, Some("x.png".into()));
        assert_eq!(o.grants, [PathBuf::from("/opt/a"), PathBuf::from("/opt/b")]);
        assert!(!o.allow_weak_sandbox, "fail closed by default");
        assert!(p(&["serve", "--plot", "x"]).is_err());
        assert!(p(&["serve", "--ngspice"]).is_err());
        assert!(p(&["bogus"]).is_err());
        assert_eq!(p(&["--help"]), Ok(Command::Help(HELP)));
    }
}
