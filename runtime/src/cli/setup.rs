//! From arguments to a served server: the run root, the sandbox and the
//! launcher a server's build function asks its [`Setup`] for, then the
//! transport.

#[cfg(feature = "slurm")]
use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::task::AbortOnDropHandle;

use super::BoxError;
use super::args::{HttpArgs, RunArgs, SandboxArgs, ServerArgs};
use crate::Server;
use crate::jobs::Launcher;
use crate::runs::{HandlePrefix, Quotas, Retention, RootOptions, RunHandle, RunRoot};
use crate::sandbox::{Requirements, Sandbox, SandboxConfig, SolverRegistry};
use crate::transport::http::TrustedProxies;
use crate::transport::{BearerAuth, HttpConfig};

/// How often a run root's expiry sweeper runs, and how many index entries
/// one sweep looks at (a pass over 100,000 runs takes about seven minutes).
const SWEEP_EVERY: Duration = Duration::from_secs(2);
const SWEEP_BUDGET: usize = 512;

/// A failure to start, for the operator: what could not be set up, and
/// why (the source). Printed to standard error, never sent to a client.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct StartError {
    what: String,
    #[source]
    source: Option<BoxError>,
}

impl StartError {
    /// A failure described by `what` alone.
    pub fn new(what: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            source: None,
        }
    }

    /// `what` failed because of `source`.
    pub fn because(what: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self {
            what: what.into(),
            source: Some(source.into()),
        }
    }
}

/// What a server's build function gets from [`ServerArgs::serve`]: the
/// parts the command line configures, each made as the options say.
/// Run roots it opens are swept for expired runs until it is dropped.
pub struct Setup<'a> {
    args: &'a ServerArgs,
    sweepers: Vec<AbortOnDropHandle<()>>,
    /// The run root opened last, which a Slurm launcher checks.
    root: Option<PathBuf>,
    /// Whether the build asked for a launcher.
    launcher_made: bool,
}

impl std::fmt::Debug for Setup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("args", self.args)
            .field("sweepers", &self.sweepers.len())
            .finish()
    }
}

impl<'a> Setup<'a> {
    /// The arguments this setup follows.
    pub fn args(&self) -> &'a ServerArgs {
        self.args
    }

    /// Opens the run root (`--run-root`, else [`default_run_root`] of
    /// `prefix`) with handles named `prefix_…`, the quotas and retention
    /// of the command line, and starts its expiry sweeper (a run whose
    /// lease a process holds, as a job's does while it runs, is kept) when
    /// called inside a tokio runtime, as [`ServerArgs::serve`] calls the
    /// build function; outside one, expired runs answer like unknown ones
    /// but stay on disk, which the log says.
    pub fn run_root(&mut self, prefix: &str) -> Result<RunRoot, StartError> {
        let prefix_ok =
            HandlePrefix::new(prefix).map_err(|e| StartError::because("run handle prefix", e))?;
        let path = match &self.args.runs.run_root {
            Some(path) => path.clone(),
            None => default_run_root(prefix),
        };
        let runs = RunRoot::open_with_options(&path, root_options(&self.args.runs, prefix_ok))
            .map_err(|e| StartError::because(format!("run root {}", path.display()), e))?;
        self.root = Some(path);
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::warn!("no expiry sweeper: the run root was opened outside a tokio runtime");
            return Ok(runs);
        }
        // Only leases say a run is live here (a job holds its run's lease).
        let not_live: Arc<dyn Fn(&RunHandle) -> bool + Send + Sync> = Arc::new(|_| false);
        self.sweepers
            .push(runs.start_expiry_sweeper(SWEEP_EVERY, SWEEP_BUDGET, not_live));
        Ok(runs)
    }

    /// The sandbox for `registry`'s solvers with the default
    /// [`SandboxConfig`] and the command line's ceilings.
    pub fn sandbox(&self, registry: SolverRegistry) -> Result<Sandbox, StartError> {
        self.sandbox_with(registry, SandboxConfig::default())
    }

    /// The sandbox for `registry`'s solvers with `config`, whose concurrency
    /// ceilings the command line sets (`--max-running`,
    /// `--max-running-per-caller`) and whose containment requirements
    /// `--allow-weak-sandbox` drops. The log says which layers runs get.
    pub fn sandbox_with(
        &self,
        registry: SolverRegistry,
        mut config: SandboxConfig,
    ) -> Result<Sandbox, StartError> {
        let a: &SandboxArgs = &self.args.sandbox;
        config.global_runs = Some(a.max_running);
        config.per_caller_runs = a.max_running_per_caller;
        if a.allow_weak_sandbox {
            config.require = Requirements::none();
            tracing::warn!(
                "--allow-weak-sandbox: solver runs get whatever containment this host has"
            );
        }
        let sandbox =
            Sandbox::new(registry, config).map_err(|e| StartError::because("sandbox", e))?;
        tracing::info!(containment = %sandbox.containment(), "solver runs are contained");
        Ok(sandbox)
    }

    /// Where `sandbox`'s runs go: this machine, or with `--launcher slurm`
    /// (feature `slurm`) Slurm batch jobs whose node helper is this binary
    /// started with [`SLURM_NODE_FLAG`](super::SLURM_NODE_FLAG), which
    /// [`ServerArgs::serve`] turns into the node helper. With Slurm, the
    /// run root must be opened first ([`run_root`](Self::run_root)), and
    /// one in memory (tmpfs) is refused: the nodes could not share it.
    pub fn launcher(&mut self, sandbox: Sandbox) -> Result<Launcher, StartError> {
        self.launcher_made = true;
        #[cfg(feature = "slurm")]
        {
            use super::args::LauncherKind;
            let a = &self.args.sandbox;
            let kind = match (a.launcher, &a.partition) {
                (Some(LauncherKind::Local), Some(_)) => {
                    return Err(StartError::new("--partition goes with --launcher slurm"));
                }
                (Some(k), _) => k,
                (None, Some(_)) => LauncherKind::Slurm,
                (None, None) => LauncherKind::Local,
            };
            if kind == LauncherKind::Slurm {
                return self.slurm(sandbox);
            }
        }
        Ok(Launcher::local(sandbox))
    }

    #[cfg(feature = "slurm")]
    fn slurm(&self, sandbox: Sandbox) -> Result<Launcher, StartError> {
        let root = self.root.as_deref().ok_or_else(|| {
            StartError::new(
                "--launcher slurm: open the run root (Setup::run_root) before the launcher",
            )
        })?;
        refuse_memory_root(root)?;
        let helper =
            std::env::current_exe().map_err(|e| StartError::because("the node helper", e))?;
        let mut config = crate::jobs::SlurmConfig::new(helper);
        config.helper_args = vec![super::SLURM_NODE_FLAG.to_owned()];
        config.partition = self.args.sandbox.partition.clone();
        Launcher::slurm(sandbox, config).map_err(|e| StartError::because("slurm launcher", e))
    }
}

impl Setup<'_> {
    /// Refuses options the build never used, which would otherwise be
    /// silently ignored: `--run-root` of a server that keeps no runs, a
    /// launcher of one whose solvers run in its own sandbox only.
    pub fn refuse_unused(&self) -> Result<(), StartError> {
        if self.args.runs.run_root.is_some() && self.root.is_none() {
            return Err(StartError::new(
                "this server keeps no runs: --run-root does not apply",
            ));
        }
        #[cfg(feature = "slurm")]
        if (self.args.sandbox.launcher.is_some() || self.args.sandbox.partition.is_some())
            && !self.launcher_made
        {
            return Err(StartError::new(
                "this server runs its solvers on this machine only: --launcher and --partition do not apply",
            ));
        }
        Ok(())
    }
}

/// Refuses a run root in memory (tmpfs, ramfs): it exists on this machine
/// only. Whether a disk file system is exported to the nodes cannot be
/// told from here: the operator's part (docs/scale-out.md).
#[cfg(feature = "slurm")]
fn refuse_memory_root(root: &Path) -> Result<(), StartError> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let st = rustix::fs::statfs(root).map_err(|e| StartError::because("run root", e))?;
    #[allow(clippy::unnecessary_cast)] // the field's type differs between targets
    let kind = st.f_type as i64;
    if kind == TMPFS_MAGIC || kind == RAMFS_MAGIC {
        return Err(StartError::new(
            "--launcher slurm: the run root is in memory on this machine (tmpfs); put it on a file system the nodes share",
        ));
    }
    Ok(())
}

/// The run root's options from the command line.
fn root_options(a: &RunArgs, prefix: HandlePrefix) -> RootOptions {
    let hours = |h: f64| Duration::from_secs_f64(h * 3600.0);
    RootOptions {
        prefix,
        quotas: Quotas {
            max_runs: Some(a.max_runs),
            max_bytes: Some(a.max_run_mib.saturating_mul(1024 * 1024)),
            max_creates_per_minute: Some(a.max_runs_per_minute),
        },
        retention: Some(Retention {
            max_idle: hours(a.expire_hours),
            max_idle_finished: Some(hours(a.expire_finished_hours)),
        }),
    }
}

/// The default run root of a server whose handles are named `prefix_…`:
/// `$XDG_STATE_HOME/hardened-mcp-PREFIX`, else
/// `$HOME/.local/state/hardened-mcp-PREFIX`, else the same name in the
/// temp directory (the state directory is created when missing).
pub fn default_run_root(prefix: &str) -> PathBuf {
    let name = format!("hardened-mcp-{prefix}");
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".local").join("state"))
        });
    match state {
        Some(dir) if std::fs::create_dir_all(&dir).is_ok() => dir.join(name),
        _ => std::env::temp_dir().join(name),
    }
}

impl ServerArgs {
    /// A [`Setup`] following these arguments, for a server that builds
    /// outside [`serve`](Self::serve) (a demo mode, a test).
    pub fn setup(&self) -> Setup<'_> {
        Setup {
            args: self,
            sweepers: Vec::new(),
            root: None,
            launcher_made: false,
        }
    }

    /// The whole program of a server: builds the server with `build` and
    /// serves it over stdio, or over streamable HTTP with `--http`, until
    /// the client leaves (stdio) or the process gets SIGINT or SIGTERM
    /// (HTTP). Logs go to standard error ([`logging::init`](crate::logging::init)
    /// at `info`); a failure to start is printed there, with its causes,
    /// and is exit status 1. Started as the Slurm node helper
    /// (`--slurm-node SPEC`), it is [`node_main`](crate::jobs::node_main)
    /// and `build` is not called.
    pub fn serve<S, F>(&self, build: F) -> ExitCode
    where
        S: Send + Sync + 'static,
        F: FnOnce(&mut Setup<'_>) -> Result<Server<S>, BoxError>,
    {
        #[cfg(feature = "slurm")]
        if let Some(spec) = &self.slurm_node {
            return crate::jobs::node_main(Some(spec.clone()));
        }
        if self.completions.is_some() {
            eprintln!(
                "{}: --completions needs the command line read by hardened_mcp::cli::parse",
                super::program_name()
            );
            return ExitCode::from(2);
        }
        super::block_on(crate::serve::DEFAULT_LOG_LEVEL, self.serve_async(build))
    }

    /// [`serve`](Self::serve) inside a running tokio runtime: builds, then
    /// serves until the end, returning why it failed rather than printing it.
    pub async fn serve_async<S, F>(&self, build: F) -> Result<(), BoxError>
    where
        S: Send + Sync + 'static,
        F: FnOnce(&mut Setup<'_>) -> Result<Server<S>, BoxError>,
    {
        let mut setup = self.setup();
        let server = build(&mut setup)?;
        setup.refuse_unused()?;
        let Some(addr) = self.http.http else {
            // Logging is set up already: `serve_stdio`'s set-up keeps it.
            return Ok(crate::serve_stdio(server).await?);
        };
        let config = self.http.config(&server.scopes()).await?.bind(addr);
        crate::serve::http_until_signal(server, config, |local| {
            eprintln!("{}: MCP endpoint http://{local}/mcp", super::program_name());
        })
        .await?;
        drop(setup);
        Ok(())
    }
}

impl HttpArgs {
    /// The HTTP configuration these options give, the bind address aside:
    /// bearer tokens from `--tokens-file`, OAuth with `--oauth-issuer`
    /// (its metadata and keys fetched now; `scopes` published as the
    /// scopes supported), hosts, origins, trusted proxies and connection
    /// ceilings. Without any authentication every loopback client is one
    /// caller, which the log says.
    pub async fn config(&self, scopes: &[String]) -> Result<HttpConfig, StartError> {
        let mut config = HttpConfig::new()
            .max_connections(self.max_connections)
            .max_connections_per_caller(self.max_connections_per_caller)
            .max_sessions_per_caller(self.max_sessions_per_caller);
        let mut authenticated = false;
        if let Some(file) = &self.tokens_file {
            let auth =
                BearerAuth::from_file(file).map_err(|e| StartError::because("tokens file", e))?;
            config = config.auth(auth);
            authenticated = true;
        }
        #[cfg(feature = "oauth")]
        if let (Some(issuer), Some(resource)) = (&self.oauth_issuer, &self.oauth_resource) {
            use crate::transport::{OAuth, OAuthConfig};
            let oauth = OAuth::discover(
                OAuthConfig::new(issuer, resource).scopes_supported(scopes.iter().cloned()),
            )
            .await
            .map_err(|e| StartError::because("OAuth", e))?;
            config = config.oauth(oauth);
            authenticated = true;
        }
        #[cfg(not(feature = "oauth"))]
        let _ = scopes;
        if !self.allow_hosts.is_empty() {
            config = config.allowed_hosts(self.allow_hosts.iter().cloned());
        }
        if !self.allow_origins.is_empty() {
            config = config.allowed_origins(self.allow_origins.iter().cloned());
        }
        if !self.trusted_proxies.is_empty() {
            config = config.trusted_proxies(TrustedProxies::new(
                self.forwarded_header.into(),
                self.trusted_proxies.iter().copied(),
            ));
        }
        if !authenticated {
            tracing::warn!("no bearer tokens configured: every loopback client is the same caller");
        }
        Ok(config)
    }
}
