//! The context parameter and a run-handle parameter.
use hardened_mcp::prelude::*;

struct S {
    runs: RunRoot,
}

impl HasRunRoot for S {
    fn run_root(&self) -> &RunRoot {
        &self.runs
    }
}

#[hardened_tools]
impl S {
    /// Reads nothing; shows the parameter kinds.
    #[hardened_tool(max_cost = 1, units = "runs", cost = 1.0, timeout_s = 30, concurrency = 2)]
    async fn status(&self, ctx: ToolContext, run: RunDir) -> Result<Output<String>, ToolError> {
        let _ = ctx.caller();
        Ok(Output::new(run.handle().as_str().to_owned()))
    }
}

fn main() {
    let set = S::hardened_tool_router_set();
    let schema = set.get("status").unwrap().tool().input_schema.clone();
    assert_eq!(schema["required"], serde_json::json!(["run"]));
}
