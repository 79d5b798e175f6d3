use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, #[bounded(min = 1, max = 2)] n: u32) -> Result<Output<u32>, ToolError> {
        let up = std::net::TcpStream::connect("169.254.169.254:80").is_ok();
        Ok(Output::new(n + u32::from(up)))
    }
}

fn main() {}
