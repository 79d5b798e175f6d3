//! Building the server from options, and the `serve` mode over stdio or
//! streamable HTTP.

use std::path::Path;
use std::time::Duration;

use hardened_mcp::jobs::{Launcher, SlurmConfig};
use hardened_mcp::prelude::*;
use hardened_mcp::runs::{HandlePrefix, Quotas, Retention, RootOptions};
use hardened_mcp::sandbox::{Requirements, Sandbox, SandboxConfig, SolverRegistry};
use hardened_mcp::transport::{
    BearerAuth, HardenedStdio, HttpConfig, HttpServer, OAuth, OAuthConfig,
};
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::cli::{CommonOptions, RunLimits, ServeOptions};
use crate::config;
use crate::server::{HeatServer, SOLVER_ID};

/// The environment variable holding bearer tokens (`caller=token`, comma
/// or newline separated) when no tokens file is given.
pub const TOKENS_ENV: &str = "SOLVER_SERVER_TOKENS";

/// A start-up failure, with a message for the operator.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(String);

impl StartError {
    fn new(what: &str, e: impl std::fmt::Display) -> Self {
        Self(format!("{what}: {e}"))
    }

    /// A failure of the demo session.
    pub(crate) fn new_demo(what: &str, e: impl std::fmt::Display) -> Self {
        Self::new(what, e)
    }
}

/// Opens the run root and the sandbox and builds the server.
pub fn build(
    common: &CommonOptions,
    default_root: &Path,
) -> Result<Server<HeatServer>, StartError> {
    let root_path = common.run_root.as_deref().unwrap_or(default_root);
    let prefix = HandlePrefix::new("heat").map_err(|e| StartError::new("run handle prefix", e))?;
    let runs = RunRoot::open_with_options(root_path, root_options(&common.run_limits, prefix))
        .map_err(|e| StartError::new(&format!("run root {}", root_path.display()), e))?;
    let solver = config::solver_path(common.solver.as_deref())
        .ok_or_else(|| StartError("cannot locate the heat1d solver; pass --solver".into()))?;
    let registry = SolverRegistry::builder()
        .solver(SOLVER_ID, solver)
        .build()
        .map_err(|e| StartError::new("solver registry", e))?;
    let mut config = SandboxConfig::default();
    if common.allow_weak_sandbox {
        config.require = Requirements::none();
        tracing::warn!("--allow-weak-sandbox: solver runs get whatever containment this host has");
    }
    let sandbox = Sandbox::new(registry, config).map_err(|e| StartError::new("sandbox", e))?;
    let launcher = match &common.slurm {
        Some(slurm) => {
            check_shared_root(root_path)?;
            let helper =
                std::env::current_exe().map_err(|e| StartError::new("the node helper", e))?;
            let mut c = SlurmConfig::new(helper);
            c.helper_args = vec!["node".to_owned()];
            c.partition = slurm.partition.clone();
            Launcher::slurm(sandbox, c).map_err(|e| StartError::new("slurm launcher", e))?
        }
        None => Launcher::local(sandbox),
    };
    HeatServer::new(runs, launcher, common.confirm_delete)
        .into_mcp()
        .map_err(|e| StartError::new("tool router", e))
}

/// The run root's options from the configured limits.
fn root_options(limits: &RunLimits, prefix: HandlePrefix) -> RootOptions {
    let hours = |h: f64| Duration::from_secs_f64(h * 3600.0);
    RootOptions {
        prefix,
        quotas: Quotas {
            max_runs: Some(limits.max_runs),
            max_bytes: Some(limits.max_mib.saturating_mul(1024 * 1024)),
            max_creates_per_minute: Some(limits.max_per_minute),
        },
        retention: Some(Retention {
            max_idle: hours(limits.expire_hours),
            max_idle_finished: Some(hours(limits.expire_finished_hours)),
        }),
    }
}

/// How often the expiry sweeper runs, and how many index entries one
/// sweep looks at (a pass over 100,000 runs takes about seven minutes).
const SWEEP_EVERY: Duration = Duration::from_secs(2);
const SWEEP_BUDGET: usize = 512;

/// Refuses a run root the nodes of a cluster cannot share: one in memory
/// (tmpfs, ramfs) exists on this machine only. Whether a disk file system
/// is exported to the nodes cannot be told from here: the operator's part
/// (docs/scale-out.md).
fn check_shared_root(root: &Path) -> Result<(), StartError> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let st = rustix::fs::statfs(root).map_err(|e| StartError::new("run root", e))?;
    let kind = st.f_type as i64;
    if kind == TMPFS_MAGIC || kind == RAMFS_MAGIC {
        return Err(StartError(
            "--launcher slurm: the run root is in memory on this machine (tmpfs); put it on a file system the nodes share".into(),
        ));
    }
    Ok(())
}

/// The OAuth scopes the tools declare: reading runs, and starting,
/// cancelling or deleting them.
pub const SCOPES: [&str; 2] = ["heat:read", "heat:write"];

/// Serves MCP over stdio or streamable HTTP until the client leaves or the
/// process is interrupted.
pub async fn serve(opts: ServeOptions) -> Result<(), StartError> {
    let server = build(&opts.common, &config::default_run_root())?;
    tracing::info!(containment = %server.service().containment(), "solver runs are contained");
    let _sweeper = server
        .service()
        .start_expiry_sweeper(SWEEP_EVERY, SWEEP_BUDGET);
    match opts.http {
        None => {
            let running = server
                .serve(HardenedStdio::stdio())
                .await
                .map_err(|e| StartError::new("stdio session", e))?;
            running
                .waiting()
                .await
                .map_err(|e| StartError::new("stdio session", e))?;
            Ok(())
        }
        Some(addr) => {
            let auth = match (&opts.tokens_file, std::env::var_os(TOKENS_ENV)) {
                (Some(file), _) => Some(
                    BearerAuth::from_file(file).map_err(|e| StartError::new("tokens file", e))?,
                ),
                (None, Some(_)) => Some(
                    BearerAuth::from_env(TOKENS_ENV).map_err(|e| StartError::new(TOKENS_ENV, e))?,
                ),
                (None, None) => None,
            };
            let mut config = HttpConfig::new().bind(addr);
            let has_auth = auth.is_some() || opts.oauth.is_some();
            if let Some(auth) = auth {
                config = config.auth(auth);
            }
            if let Some(o) = &opts.oauth {
                let oauth = OAuth::discover(
                    OAuthConfig::new(&o.issuer, &o.resource).scopes_supported(SCOPES),
                )
                .await
                .map_err(|e| StartError::new("OAuth", e))?;
                config = config.oauth(oauth);
            }
            if !has_auth {
                tracing::warn!(
                    "no bearer tokens configured: every loopback client is the same caller"
                );
            }
            let ct = CancellationToken::new();
            let running = HttpServer::new(move || Ok(server.clone()), config)
                .map_err(|e| StartError::new("http", e))?
                .start(ct.clone())
                .await
                .map_err(|e| StartError::new("http", e))?;
            eprintln!(
                "solver-server: MCP endpoint http://{}/mcp",
                running.local_addr()
            );
            tokio::select! {
                r = tokio::signal::ctrl_c() => {
                    if let Err(e) = r {
                        tracing::warn!(error = %e, "no interrupt handler");
                    }
                }
                _ = ct.cancelled() => {}
            }
            ct.cancel();
            running
                .shutdown()
                .await
                .map_err(|e| StartError::new("http shutdown", e))
        }
    }
}
