//! Building the server from options: the run root, ngspice's registration
//! with exactly the files it needs, the sandbox.

use std::path::Path;

use hardened_mcp::cli::{BoxError, ServerArgs, Setup, StartError, data_dirs, find_on_path};
use hardened_mcp::prelude::*;
use hardened_mcp::sandbox::{Sandbox, SandboxConfig, SolverRegistry};

use crate::cli::SpiceOptions;
use crate::server::{SOLVER_ID, SpiceServer};

/// The run handle prefix, also the default run root's name
/// (`hardened-mcp-spice`).
pub const PREFIX: &str = "spice";

/// Opens the run root and the sandbox as `setup`'s options say, and
/// builds the server.
pub fn build(setup: &mut Setup<'_>, o: &SpiceOptions) -> Result<Server<SpiceServer>, BoxError> {
    let runs = setup.run_root(PREFIX)?;
    let sandbox = setup.sandbox_with(registry(o)?, config())?;
    SpiceServer::new(runs, sandbox).into_mcp()
}

/// The server over the run root at `root` with every other option at its
/// default: for tests.
pub fn build_at(root: &Path) -> Result<Server<SpiceServer>, BoxError> {
    let mut args = ServerArgs::default();
    args.runs.run_root = Some(root.to_path_buf());
    build(&mut args.setup(), &SpiceOptions::default())
}

/// The sandbox with the default options: for tests.
pub fn sandbox() -> Result<Sandbox, BoxError> {
    Ok(ServerArgs::default()
        .setup()
        .sandbox_with(registry(&SpiceOptions::default())?, config())?)
}

/// ngspice (found on `PATH` unless `--ngspice` names it), granted its data
/// directories outside the system trees and the `--grant` paths, nothing
/// else.
fn registry(o: &SpiceOptions) -> Result<SolverRegistry, StartError> {
    let ngspice = o.ngspice.clone().or_else(|| find_on_path("ngspice"));
    let ngspice = ngspice.ok_or_else(|| {
        StartError::new(
            "cannot find ngspice on PATH; install it (Debian: apt-get install ngspice) or pass --ngspice",
        )
    })?;
    let grants = data_dirs(&ngspice)
        .into_iter()
        .chain(o.grants.iter().cloned());
    let registry = SolverRegistry::builder().solver(SOLVER_ID, &ngspice);
    let registry = grants.fold(registry, |r, g| r.grant_read(SOLVER_ID, g));
    registry
        .build()
        .map_err(|e| StartError::because("solver registry", e))
}

/// The sandbox's configuration: `HOME` is the run's private `/tmp`
/// (ngspice 39 crashes when HOME is unset).
fn config() -> SandboxConfig {
    let mut config = SandboxConfig::default();
    config.fixed_env.push(("HOME".to_owned(), "/tmp".into()));
    config
}
