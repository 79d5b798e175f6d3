use hardened_mcp::prelude::*;

#[tool_output(rename_all = "camelCase")]
struct Report {
    cells: u32,
}

fn main() {}
