use hardened_mcp::prelude::*;

#[tool_output]
fn report() -> u32 {
    1
}

fn main() {}
