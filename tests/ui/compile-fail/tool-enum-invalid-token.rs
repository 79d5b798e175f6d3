use hardened_mcp::prelude::*;

#[derive(Clone, Copy, ToolEnum)]
enum Mode {
    #[tool_enum(rename = "two words")]
    Fast,
}

fn main() {}
