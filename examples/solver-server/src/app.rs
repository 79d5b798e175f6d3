//! Building the heat server from the command line's options.

use std::path::Path;

use hardened_mcp::cli::{BoxError, ServerArgs, Setup, StartError};
use hardened_mcp::prelude::*;
use hardened_mcp::sandbox::SolverRegistry;

use crate::cli::HeatOptions;
use crate::config;
use crate::server::{HeatServer, SOLVER_ID};

/// The run handle prefix, also the default run root's name
/// (`hardened-mcp-heat`).
pub const PREFIX: &str = "heat";

/// The OAuth scopes the tools declare: reading runs, and starting,
/// cancelling or deleting them.
pub const SCOPES: [&str; 2] = ["heat:read", "heat:write"];

/// Opens the run root, the sandbox holding heat1d and the launcher, as
/// `setup`'s options say, and builds the server.
pub fn build(setup: &mut Setup<'_>, heat: &HeatOptions) -> Result<Server<HeatServer>, BoxError> {
    let runs = setup.run_root(PREFIX)?;
    let solver = config::solver_path(heat.solver.as_deref())
        .ok_or_else(|| StartError::new("cannot locate the heat1d solver; pass --solver"))?;
    let registry = SolverRegistry::builder()
        .solver(SOLVER_ID, solver)
        .build()?;
    let launcher = setup.launcher(setup.sandbox(registry)?)?;
    HeatServer::new(runs, launcher, heat.confirm_delete).into_mcp()
}

/// The server over the run root at `root`, with the solver at `solver`
/// and every other option at its default: for tests and benchmarks.
pub fn build_at(root: &Path, solver: &Path) -> Result<Server<HeatServer>, BoxError> {
    let mut args = ServerArgs::default();
    args.runs.run_root = Some(root.to_path_buf());
    let heat = HeatOptions {
        solver: Some(solver.to_path_buf()),
        ..HeatOptions::default()
    };
    build(&mut args.setup(), &heat)
}
