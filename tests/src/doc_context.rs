//! What the pages' doctests ([`crate::doc_pages`]) take as given: the types
//! of the guide's chapter "Wrap an external solver" (as
//! `examples/wrap-solver/src/main.rs` declares them) and a server holding a
//! run root, so a block that shows one part compiles against the others.
#![allow(missing_docs)]

use std::time::Duration;

use hardened_mcp::deck::{Deck, KeyValue};
use hardened_mcp::jobs::{JobPhase, JobService, Prepared, ResultFile, SolverJob};
use hardened_mcp::prelude::*;
use hardened_mcp::runs::FileName;
use hardened_mcp::sandbox::{Limits, RunRequest};
use hardened_mcp::untrusted::Untrusted;

pub const DECK: FileName = FileName::fixed("input.deck");
pub const OUT: FileName = FileName::fixed("out");

/// One problem: the arguments of both tools, validated once.
#[derive(HardenedArgs)]
pub struct Grid {
    /// Grid cells.
    #[bounded(min = 4, max = 2000)]
    pub n: u32,
    /// Stop when no update exceeds this.
    #[bounded(min = 1e-14, max = 1e-2)]
    pub tolerance: f64,
    /// Most Gauss-Seidel sweeps.
    #[bounded(min = 1, max = 1_000_000)]
    pub max_iterations: u32,
}

/// What the script writes to `out/result.json`.
#[tool_output]
#[derive(hardened_mcp::serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Solution {
    /// Gauss-Seidel sweeps done.
    pub iterations: u32,
    /// Largest residual of the discrete equations.
    pub residual: f64,
    /// Largest error against the exact solution sin(πx).
    pub max_error: f64,
    /// Whether the update fell below the tolerance.
    pub converged: bool,
}

/// The job: how a grid becomes the script's deck and argument vector.
pub struct Poisson;

impl SolverJob for Poisson {
    type Params = Grid;
    type Result = Solution;
    const RESULT_FILE: ResultFile = ResultFile::in_dir(OUT, FileName::fixed("result.json"));
    const PROGRESS_UNIT: &'static str = "sweeps";

    fn prepare(&self, g: &Grid) -> Result<Prepared, ToolError> {
        let mut deck = Deck::<KeyValue>::new();
        deck.set("n", g.n)?
            .set("tolerance", g.tolerance)?
            .set("max_iterations", g.max_iterations)?;
        let limits = Limits {
            wall_time: Duration::from_secs(300),
            ..Limits::default()
        };
        let request = RunRequest::new("poisson")
            .args([DECK.as_str(), "out/result.json"])
            .write_only_in(OUT)
            .limits(limits);
        Ok(Prepared::new(request).input(DECK, deck.render()?))
    }
}

/// The server: the job service is all its state.
pub struct Lab {
    pub jobs: JobService<Poisson>,
}

#[hardened_tools]
impl Lab {
    /// Start solving; returns the run handle at once.
    #[hardened_tool(max_cost = 2e8, units = "cell-sweeps",
                    cost = grid.n as f64 * grid.max_iterations as f64)]
    async fn poisson_start(
        &self,
        ctx: ToolContext,
        #[args] grid: Grid,
    ) -> Result<Output<hardened_mcp::jobs::JobStarted>, ToolError> {
        Ok(Output::new(self.jobs.start(ctx.caller(), &grid).await?))
    }
}

/// The README's beam calculator: a server of one tool.
pub struct Beam;

#[hardened_tools]
impl Beam {
    /// Mid-span deflection, in metres, of a simply supported steel IPE 300 beam.
    #[hardened_tool(max_cost = 1, units = "evaluations", cost = 1.0)]
    async fn deflection(
        &self,
        #[bounded(min = 0.1, max = 100.0, units = "m")] length: f64,
        #[bounded(min = 0.0, max = 1e7, units = "N")] load: f64,
    ) -> Result<Output<f64>, ToolError> {
        Ok(Output::new(
            load * length.powi(3) / (48.0 * 200e9 * 8.356e-5),
        ))
    }
}

/// The beam calculator as a complete MCP server.
pub fn beam_server() -> Server<Beam> {
    Server::new("beam", "0.1.0", Beam, Beam::hardened_tool_router())
}

/// The guide's log page: a run's phase and the tail of its standard error.
#[tool_output]
pub struct RunLog {
    pub phase: JobPhase,
    pub stderr_tail: Untrusted<String>,
}
