//! A tool with a `RunDir` parameter needs the run root: without the `runs`
//! feature it is one error, at the parameter's type, naming the feature;
//! with it, it builds (tests/features/check holds both).
use hardened_mcp::prelude::*;

struct Runs;

#[hardened_tools]
impl Runs {
    /// The handle of a run the caller owns.
    #[hardened_tool(max_cost = 1, units = "runs", cost = 1.0)]
    async fn run_status(
        &self,
        run: RunDir, // gate: runs
    ) -> Result<Output<String>, ToolError> {
        Ok(Output::new(run.handle().as_str().to_owned()))
    }
}

#[cfg(feature = "runs")]
impl HasRunRoot for Runs {
    fn run_root(&self) -> &RunRoot {
        unimplemented!("built, never run")
    }
}

fn main() {
    let _ = Runs::hardened_tool_router();
}
