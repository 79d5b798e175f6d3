use hardened_mcp::prelude::*;

struct Mesh;
struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, mesh: Mesh) -> Result<Output<u32>, ToolError> {
        let _ = mesh;
        Ok(Output::new(0))
    }
}

fn main() {}
