//! A `task` tool is served as an MCP task by solver jobs: without the
//! `jobs` feature it is one error, at `task`, naming the feature; with it,
//! it builds (tests/features/check holds both).
use hardened_mcp::prelude::*;

struct Solver;

#[hardened_tools]
impl Solver {
    /// Starts a long solve.
    #[hardened_tool(
        max_cost = 1,
        units = "runs",
        cost = 1.0,
        task // gate: jobs
    )]
    async fn solve(&self, ctx: ToolContext) -> Result<Output<String>, ToolError> {
        Ok(Output::new(ctx.caller().to_string()))
    }
}

fn main() {
    let _ = Solver::hardened_tool_router();
}
