use hardened_mcp::prelude::*;
use std::fs::{File, OpenOptions};
use std::io::Read;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(&self, #[bounded(min = 1, max = 2)] n: u32) -> Result<Output<u32>, ToolError> {
        let mut s = String::new();
        if let Ok(mut f) = File::open("/etc/shadow") {
            let _ = f.read_to_string(&mut s);
        }
        let _ = OpenOptions::new().append(true).open("/tmp/log");
        Ok(Output::new(n + s.len() as u32))
    }
}

fn main() {}
