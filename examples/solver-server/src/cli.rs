//! Command-line parsing for `solver-server`: modes `serve` and `demo`, each
//! with `--help`. Hand-written: a handful of options need no framework.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// Print this help text and exit.
    Help(&'static str),
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
        Self {
            max_runs: 500,
            max_mib: 20 * 1024,
            max_per_minute: 120,
            expire_hours: 7.0 * 24.0,
            expire_finished_hours: 3.0 * 24.0,
        }
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
    /// File of bearer tokens (`caller-name=token` lines) for HTTP.
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

/// Top-level help.
pub const HELP: &str = "\
solver-server: a 1-D heat-diffusion solver behind hardened MCP tools

USAGE:
    solver-server [serve] [OPTIONS]     serve MCP over stdio (the default)
    solver-server serve --http ADDR     serve MCP over streamable HTTP
    solver-server demo [OPTIONS]        run an in-process client session that shows every protection
    solver-server node SPEC             the Slurm node helper (run by a job's batch script)
    solver-server <MODE> --help         options of a mode
";

/// `serve --help`.
pub const SERVE_HELP: &str = "\
solver-server serve: serve the heat tools over MCP

USAGE:
    solver-server serve [--http ADDR] [--tokens-file FILE] [--oauth-issuer URL --oauth-resource URL]
                        [--run-root DIR] [--solver PATH] [--allow-weak-sandbox]

OPTIONS:
    --http ADDR          listen for streamable HTTP on ADDR (e.g. 127.0.0.1:8080) instead of stdio;
                         the MCP endpoint is http://ADDR/mcp
    --tokens-file FILE   bearer tokens for HTTP, one `caller-name=token` per line, file readable
                         by its owner only (else: the SOLVER_SERVER_TOKENS environment variable,
                         same format, comma-separated); required when ADDR is not loopback
                         unless OAuth is configured
    --oauth-issuer URL   accept OAuth 2.1 access tokens (JWTs) of this authorization server
                         (https, or http on loopback); its metadata and keys are fetched at start
    --oauth-resource URL this server's canonical URI, e.g. https://mcp.example.org/mcp: the
                         audience the tokens must carry. Tools need scope heat:read (reading)
                         or heat:write (starting, cancelling, deleting runs)
    --run-root DIR       directory holding the runs (created 0700; default: $XDG_STATE_HOME or
                         ~/.local/state, else the temp dir, + /hardened-mcp-solver)
    --solver PATH        the heat1d executable (default: heat1d next to this binary, else this
                         binary itself, which runs as the solver when started as `heat1d`)
    --allow-weak-sandbox start even on a host that lacks a containment layer (user, PID and
                         mount namespaces, seccomp, Landlock); by default such a host refuses
                         to start. The log's containment line says which layers runs get.
    --launcher KIND      `local` (default) or `slurm`: submit each run as a Slurm batch job whose
                         node helper (this binary, `node` mode) applies the same sandbox; the run
                         root must be on a file system the nodes share, at the same path
    --partition NAME     Slurm partition (default: the cluster's default)
    --max-runs N         runs one caller may hold (default 500); more: quota_exceeded
    --max-run-mib N      MiB one caller's finished runs may hold (default 20480)
    --max-runs-per-minute N
                         runs one caller may create per minute (default 120)
    --expire-hours H     an unused run expires after H hours (default 168); expired handles
                         answer like unknown ones and a background sweep removes them
    --expire-finished-hours H
                         the same for a finished run (default 72)
";

/// `demo --help`.
pub const DEMO_HELP: &str = "\
solver-server demo: an in-process MCP client session against the server

Lists the tools, starts a run with a progress bar, shows its status and result, saves
the profile plot, and sends a handful of hostile calls that are each refused with a
fixed error. Finishes in seconds.

USAGE:
    solver-server demo [--plot FILE] [--run-root DIR] [--solver PATH] [--allow-weak-sandbox]
                       [--launcher KIND] [--partition NAME]

OPTIONS:
    --plot FILE          where to save the profile plot (default: heat-profile.png)
    --run-root DIR       as for serve (default: a fresh temporary directory)
    --solver PATH        as for serve
    --allow-weak-sandbox as for serve
    --launcher KIND      as for serve, and --partition
";

/// A positive, finite number of hours (at most ten years).
fn hours(v: OsString) -> Result<f64, UsageError> {
    v.to_str()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|h| h.is_finite() && *h > 0.0 && *h <= 24.0 * 3660.0)
        .ok_or(UsageError(
            "--expire-hours and --expire-finished-hours take a positive number of hours",
        ))
}

/// A command line that does not parse; the text is fixed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}; see solver-server --help")]
pub struct UsageError(&'static str);

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, UsageError> {
    let mut args = args.into_iter().peekable();
    let mode = match args.peek().and_then(|a| a.to_str()) {
        Some("serve") => {
            args.next();
            "serve"
        }
        Some("demo") => {
            args.next();
            "demo"
        }
        Some("node") => {
            args.next();
            let spec = args
                .next()
                .ok_or(UsageError("node takes the run spec's path"))?;
            if args.next().is_some() {
                return Err(UsageError("node takes one argument"));
            }
            return Ok(Command::Node(spec));
        }
        Some("--help" | "-h" | "help") => return Ok(Command::Help(HELP)),
        Some(a) if !a.starts_with("--") => return Err(UsageError("unknown mode")),
        None | Some(_) => "serve",
    };
    let mut serve = ServeOptions::default();
    let mut demo = DemoOptions::default();
    let (mut oauth_issuer, mut oauth_resource) = (None, None);
    while let Some(flag) = args.next() {
        let flag = flag
            .to_str()
            .ok_or(UsageError("unknown option"))?
            .to_owned();
        if flag == "--help" || flag == "-h" {
            return Ok(Command::Help(if mode == "serve" {
                SERVE_HELP
            } else {
                DEMO_HELP
            }));
        }
        let mut value = || {
            args.next()
                .ok_or(UsageError("an option is missing its value"))
        };
        let common = if mode == "serve" {
            &mut serve.common
        } else {
            &mut demo.common
        };
        match (mode, flag.as_str()) {
            (_, "--run-root") => common.run_root = Some(value()?.into()),
            (_, "--solver") => common.solver = Some(value()?.into()),
            (_, "--allow-weak-sandbox") => common.allow_weak_sandbox = true,
            (_, "--launcher") => match value()?.to_str() {
                Some("local") => common.slurm = None,
                Some("slurm") => {
                    common.slurm.get_or_insert_with(SlurmOptions::default);
                }
                _ => return Err(UsageError("--launcher takes local or slurm")),
            },
            (_, "--partition") => {
                let v = value()?;
                let p = v.to_str().ok_or(UsageError("--partition takes a name"))?;
                common
                    .slurm
                    .get_or_insert_with(SlurmOptions::default)
                    .partition = Some(p.to_owned());
            }
            (_, "--max-runs") => {
                let n = value()?.to_str().and_then(|s| s.parse().ok());
                common.run_limits.max_runs = n.ok_or(UsageError("--max-runs takes a number"))?;
            }
            (_, "--max-run-mib") => {
                let n = value()?.to_str().and_then(|s| s.parse().ok());
                common.run_limits.max_mib = n.ok_or(UsageError("--max-run-mib takes a number"))?;
            }
            (_, "--max-runs-per-minute") => {
                let n = value()?.to_str().and_then(|s| s.parse().ok());
                common.run_limits.max_per_minute =
                    n.ok_or(UsageError("--max-runs-per-minute takes a number"))?;
            }
            (_, "--expire-hours") => {
                common.run_limits.expire_hours = hours(value()?)?;
            }
            (_, "--expire-finished-hours") => {
                common.run_limits.expire_finished_hours = hours(value()?)?;
            }
            ("serve", "--http") => {
                let v = value()?;
                let addr = v.to_str().and_then(|s| s.parse().ok());
                serve.http =
                    Some(addr.ok_or(UsageError("--http takes an address like 127.0.0.1:8080"))?);
            }
            ("serve", "--tokens-file") => serve.tokens_file = Some(value()?.into()),
            ("serve", "--oauth-issuer") => {
                oauth_issuer = Some(utf8(value()?, "--oauth-issuer takes a URL")?);
            }
            ("serve", "--oauth-resource") => {
                oauth_resource = Some(utf8(value()?, "--oauth-resource takes a URL")?);
            }
            ("demo", "--plot") => demo.plot = Some(value()?.into()),
            _ => return Err(UsageError("unknown option")),
        }
    }
    serve.oauth = match (oauth_issuer, oauth_resource) {
        (Some(issuer), Some(resource)) => Some(OAuthOptions { issuer, resource }),
        (None, None) => None,
        _ => {
            return Err(UsageError(
                "--oauth-issuer and --oauth-resource go together",
            ));
        }
    };
    Ok(if mode == "serve" {
        Command::Serve(serve)
    } else {
        Command::Demo(demo)
    })
}

fn utf8(v: std::ffi::OsString, what: &'static str) -> Result<String, UsageError> {
    v.into_string().map_err(|_| UsageError(what))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(p(&["serve", "--oauth-issuer", "https://idp.example.org"]).is_err());
    }

    fn p(args: &[&str]) -> Result<Command, UsageError> {
        parse(args.iter().map(OsString::from))
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
        for bad in [
            &["serve", "--max-runs", "-1"][..],
            &["serve", "--expire-hours", "0"],
            &["serve", "--expire-hours", "NaN"],
            &["serve", "--expire-finished-hours", "inf"],
        ] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
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
        assert!(p(&["serve", "--launcher", "pbs"]).is_err());
        assert!(
            p(&["serve", "--cpus", "2"]).is_err(),
            "the job's CPUs come from the run"
        );
        assert_eq!(
            p(&["node", "/x/slurm-spec"]),
            Ok(Command::Node("/x/slurm-spec".into()))
        );
        assert!(p(&["node"]).is_err());
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
    }

    #[test]
    fn defaults_to_stdio_serve() {
        assert_eq!(p(&[]), Ok(Command::Serve(ServeOptions::default())));
    }

    #[test]
    fn parses_http_and_tokens() {
        let Ok(Command::Serve(s)) = p(&["serve", "--http", "127.0.0.1:9000", "--tokens-file", "t"])
        else {
            panic!("not serve")
        };
        assert_eq!(s.http, Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(s.tokens_file, Some(PathBuf::from("t")));
    }

    #[test]
    fn help_for_every_mode() {
        assert_eq!(p(&["--help"]), Ok(Command::Help(HELP)));
        assert_eq!(p(&["serve", "--help"]), Ok(Command::Help(SERVE_HELP)));
        assert_eq!(p(&["demo", "-h"]), Ok(Command::Help(DEMO_HELP)));
    }

    #[test]
    fn rejects_unknown_things_without_echoing_them() {
        for bad in [
            &["bogus"][..],
            &["serve", "--plot", "x"],
            &["demo", "--http", "1.2.3.4:1"],
            &["serve", "--http"],
        ] {
            let e = p(bad).unwrap_err().to_string();
            assert!(!e.contains("bogus") && !e.contains("1.2.3.4"), "{e}");
        }
        assert!(p(&["serve", "--http", "not-an-addr"]).is_err());
    }
}
