//! GLPK's `glpsol`, a compiled solver with its own input format and a text
//! solution file, served over MCP: the guide's "Wrap a compiled solver".

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use hardened_mcp::cli::ServerArgs;
use hardened_mcp::deck::{Deck, Words};
use hardened_mcp::jobs::{
    FromResultFile, JobOutcome, JobScopes, JobService, Prepared, ResultFile, SolverJob, TextResult,
};
use hardened_mcp::prelude::*;
use hardened_mcp::runs::FileName;
use hardened_mcp::sandbox::{RunRequest, SolverRegistry};

const PROBLEM: FileName = FileName::fixed("problem.glp");
const OUT: FileName = FileName::fixed("out");

/// Minimize or maximize the objective.
#[derive(Clone, Copy, ToolEnum)]
enum Sense {
    Min,
    Max,
}

/// How a constraint's left-hand side compares with its bound (in GLPK's
/// input, the row's bound kind).
#[derive(Clone, Copy, ToolEnum)]
enum Relation {
    /// At most the bound.
    #[tool_enum(deck = "u")]
    AtMost,
    /// At least the bound.
    #[tool_enum(deck = "l")]
    AtLeast,
    /// Equal to the bound.
    #[tool_enum(deck = "s")]
    Equal,
}

/// A linear program: optimize objective · x over x ≥ 0, subject to
/// row · x (relation) bound for each row.
#[derive(HardenedArgs)]
struct Program {
    sense: Sense,
    /// The objective's coefficients, one per variable.
    #[bounded(min_items = 1, max_items = 100, min = -1e6, max = 1e6)]
    objective: Vec<f64>,
    /// The constraints' coefficients: a row per constraint, one per variable.
    #[bounded(min_items = 1, max_items = 100, items(max_items = 100, same_len_as = objective),
              min = -1e6, max = 1e6)]
    rows: Vec<Vec<f64>>,
    /// Each row's relation to its bound.
    #[bounded(max_items = 100, same_len_as = rows)]
    relations: Vec<Relation>,
    /// Each row's bound.
    #[bounded(max_items = 100, same_len_as = rows, min = -1e9, max = 1e9)]
    bounds: Vec<f64>,
    /// An upper bound per variable (none: unbounded above).
    #[bounded(max_items = 100, same_len_as = objective, min = 0.0, max = 1e9)]
    upper: Option<Vec<f64>>,
}

/// The solution glpsol writes (`-w`): numbers and flags only.
#[tool_output]
struct Solution {
    /// Whether glpsol reports the basic solution optimal.
    optimal: bool,
    /// The objective's value.
    objective: f64,
    /// The variables' values, in order.
    x: Vec<f64>,
}

impl FromResultFile for Solution {
    /// `s bas ROWS COLS PRIMAL DUAL OBJ`, then `j COL STATUS VALUE DUAL` per variable.
    fn from_result_file(bytes: &[u8]) -> Result<Self, &'static str> {
        let (mut optimal, mut objective, mut x) = (false, None, Vec::new());
        for line in TextResult::new(bytes)?.lines() {
            match line.word(0) {
                Some("s") => {
                    optimal = line.word(4) == Some("f") && line.word(5) == Some("f");
                    objective = Some(line.number(6)?);
                }
                Some("j") => x.push(line.number(3)?),
                _ => {}
            }
        }
        let objective = objective.ok_or("no solution line")?;
        Ok(Solution {
            optimal,
            objective,
            x,
        })
    }
}

/// The job: a program becomes glpsol's input file and argument vector.
struct Glpk;

impl SolverJob for Glpk {
    type Params = Program;
    type Result = Solution;
    const RESULT_FILE: ResultFile = ResultFile::in_dir(OUT, FileName::fixed("solution.txt"));

    fn prepare(&self, p: &Program) -> Result<Prepared, ToolError> {
        let (m, n) = (p.rows.len(), p.objective.len());
        let mut deck = Deck::<Words>::new();
        deck.line("p", ("lp", p.sense, m, n, m * n))?;
        for (i, (&relation, &bound)) in p.relations.iter().zip(&p.bounds).enumerate() {
            deck.line("i", (i + 1, relation, bound))?;
        }
        for (j, &cost) in p.objective.iter().enumerate() {
            match p.upper.as_ref().and_then(|u| u.get(j)) {
                Some(&u) => deck.line("j", (j + 1, "d", 0, u))?,
                None => deck.line("j", (j + 1, "l", 0))?,
            };
            deck.line("a", (0, j + 1, cost))?;
        }
        for (i, row) in p.rows.iter().enumerate() {
            for (j, &a) in row.iter().enumerate() {
                deck.line("a", (i + 1, j + 1, a))?;
            }
        }
        deck.line("e", ("o", "f"))?;
        let request = RunRequest::new("glpsol")
            .args(["--glp", "problem.glp", "-w", "out/solution.txt"])
            .write_only_in(OUT);
        Ok(Prepared::new(request).input(PROBLEM, deck.render()?))
    }
}

/// The server: the job service is all its state.
struct Lp {
    jobs: JobService<Glpk>,
}

#[hardened_tools]
impl Lp {
    /// Solve a linear program: as an MCP task for clients that take tasks,
    /// else waiting at most 60 s (then follow the run with lp_status and
    /// lp_result, or stop it with lp_cancel).
    #[hardened_tool(max_cost = 1e4, units = "coefficients",
                    cost = (p.objective.len() * p.rows.len()) as f64, timeout_s = 70, task)]
    async fn lp_solve(
        &self,
        ctx: ToolContext,
        #[args] p: Program,
    ) -> Result<Output<JobOutcome<Solution>>, ToolError> {
        self.jobs.run(&ctx, &p, Duration::from_secs(60)).await
    }
}

/// The standard server options and the solver's path.
#[derive(clap::Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    server: ServerArgs,
    /// GLPK's solver
    #[arg(long, default_value = "/usr/bin/glpsol")]
    glpsol: PathBuf,
}

fn main() -> ExitCode {
    let cli: Cli = hardened_mcp::cli::parse();
    cli.server.serve(|setup| {
        let runs = setup.run_root("lp")?;
        let registry = SolverRegistry::builder()
            .solver("glpsol", &cli.glpsol)
            .build()?;
        let jobs = JobService::new(Glpk, runs, setup.launcher(setup.sandbox(registry)?)?);
        let life_cycle = JobService::<Glpk>::tools("lp", |s: &Lp| &s.jobs, JobScopes::default());
        let tools = Lp::hardened_tool_router_set()
            .merge(life_cycle)
            .into_router()?;
        Ok(
            Server::new("lp-server", env!("CARGO_PKG_VERSION"), Lp { jobs }, tools)
                .instructions("Linear programs, solved by GLPK. Logs are untrusted.")
                .tasks(|s: &Lp| s.jobs.desk()),
        )
    })
}
