//! A sync method, a renamed router, annotations, and a merge with rmcp's
//! own `#[tool_router]` served through `#[tool_handler]`.
use hardened_mcp::prelude::*;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::{ServerHandler, tool, tool_handler, tool_router};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    total: f64,
}

struct S {
    router: ToolRouter<Self>,
}

#[tool_router]
impl S {
    #[tool(description = "Plain rmcp tool.")]
    fn hello(&self) -> String {
        "hi".into()
    }
}

#[hardened_tools(router = hardened)]
impl S {
    /// Adds two numbers.
    #[hardened_tool(max_cost = 1, units = "additions", cost = 1.0, name = "add",
                    description = "Adds a and b.",
                    annotations(read_only, destructive = false, idempotent, open_world = false, title = "Add"))]
    fn add(
        &self,
        #[bounded(min = -1e6, max = 1e6)] a: f64,
        #[bounded(min = -1e6, max = 1e6)] b: f64,
    ) -> Result<Output<Sum>, ToolError> {
        Ok(Output::new(Sum { total: a + b }).with_warning("rounded"))
    }
}

#[tool_handler(router = self.router)]
impl ServerHandler for S {}

fn main() {
    let s = S { router: S::hardened() + S::tool_router() };
    assert!(s.router.has_route("add") && s.router.has_route("hello"));
    assert!(S::try_hardened().is_ok());
    assert_eq!(S::hardened_set().tools().len(), 1);
}
