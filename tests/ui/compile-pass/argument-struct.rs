//! One argument struct instead of flat parameters.
use hardened_mcp::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ToolEnum)]
enum Shape {
    Square,
    Strip,
}

/// Grid arguments.
#[derive(HardenedArgs)]
struct Grid {
    /// Points along x.
    #[bounded(min = 2, max = 1000, units = "points")]
    nx: u32,
    #[bounded(min = 0.0, exclusive_max = 1.0)]
    spacing: f64,
    #[bounded(max_len = 16, charset = "identifier", default = "g")]
    name: String,
    #[bounded(max_items = 8, min = 0, max = 9)]
    levels: Vec<u8>,
    shape: Option<Shape>,
}

struct S;

#[hardened_tools]
impl S {
    /// A grid.
    #[hardened_tool(max_cost = 1e6, units = "points", cost = args.nx as f64,
                    check(args.spacing * args.nx as f64 <= 100.0, "the grid is too long"))]
    async fn grid(&self, ctx: ToolContext, #[args] args: Grid) -> Result<Output<u32>, ToolError> {
        let _ = (ctx, &args.name, &args.levels, args.shape);
        Ok(Output::new(args.nx))
    }
}

fn main() {
    let set = S::hardened_tool_router_set();
    let tool = set.get("grid").unwrap();
    assert!(tool.check_arguments(&serde_json::json!({"nx": 10, "spacing": 0.5, "levels": []})).is_ok());
    assert!(tool.check_arguments(&serde_json::json!({"nx": 10, "spacing": 0.5, "levels": [], "x": 1})).is_err());
    let g = Grid { nx: 1, spacing: 0.5, name: "g".into(), levels: vec![], shape: None };
    assert!(g.validate().is_err());
}
