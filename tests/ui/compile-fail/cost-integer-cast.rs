use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 1e9, units = "cell-steps", cost = (cells as u64 * steps as u64) as f64)]
    async fn t(
        &self,
        #[bounded(min = 1, max = 4_000_000_000)] cells: u32,
        #[bounded(min = 1, max = 18_446_744_073_709_551_615)] steps: u64,
    ) -> Result<Output<u64>, ToolError> {
        Ok(Output::new(steps.saturating_mul(u64::from(cells))))
    }
}

fn main() {}
