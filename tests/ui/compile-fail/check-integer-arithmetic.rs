use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(
        max_cost = 1e6,
        units = "cells",
        cost = nx * ny,
        check(nx * ny <= 1_000_000, "at most a million cells"),
        check(-offset < 10, "offset above -10"),
        check(sizes.iter().sum::<u32>() <= 64, "at most 64 in all"),
    )]
    async fn grid(
        &self,
        #[bounded(min = 1, max = 4_000_000_000)] nx: u32,
        #[bounded(min = 1, max = 4_000_000_000)] ny: u32,
        #[bounded(min = -2_000_000_000, max = 2_000_000_000)] offset: i32,
        #[bounded(max_items = 8, min = 0, max = 64)] sizes: Vec<u32>,
    ) -> Result<Output<u64>, ToolError> {
        Ok(Output::new(u64::from(nx) * u64::from(ny) + offset.unsigned_abs() as u64 + sizes.len() as u64))
    }
}

fn main() {}
