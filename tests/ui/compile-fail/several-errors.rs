use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(units = "calls")]
    async fn t(&self, cells: u32, path: std::path::PathBuf, #[bounded(min = 5, max = 1)] steps: u64, label: String) -> Result<u32, ToolError> {
        let _ = (path, steps, label);
        Ok(cells)
    }
}

fn main() {}
