use hardened_mcp::prelude::*;
use std::path::Path;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, #[bounded(min = 1, max = 2)] n: u32) -> Result<Output<u32>, ToolError> {
        // However the path was built, and whatever the receiver's type.
        let there = std::path::Path::new("/etc/passwd").exists();
        let p = Path::new("/etc").join("shadow");
        let size = p.metadata().map(|m| m.len()).unwrap_or(0);
        // Pure path manipulation is fine.
        let name = p.file_name().is_some();
        Ok(Output::new(n + u32::from(there) + u32::from(name) + size as u32))
    }
}

fn main() {}
