use hardened_mcp::prelude::*;

/// A probe.
#[derive(HardenedArgs)]
struct Probe {
    #[bounded(min = 0.0, max = 1.0)]
    x: f64,
}

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(
        &self,
        #[bounded(default = "origin")] probe: Option<Probe>,
        #[bounded(header = "Probe")] other: Probe,
    ) -> Result<Output<u32>, ToolError> {
        let _ = (probe, other.x);
        Ok(Output::new(0))
    }
}

fn main() {}
