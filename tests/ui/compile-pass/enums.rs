//! Unit-variant enums as fixed tokens, renamed and defaulted.
use hardened_mcp::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ToolEnum)]
enum Scheme {
    ExplicitEuler,
    #[tool_enum(rename = "cn")]
    CrankNicolson,
}

struct S;

#[hardened_tools]
impl S {
    /// Enums.
    #[hardened_tool(max_cost = 1, units = "runs", cost = 1.0,
                    check(scheme != Scheme::ExplicitEuler || fallback.is_some(), "explicit needs a fallback"))]
    async fn enums(
        &self,
        #[bounded(default = "cn")] scheme: Scheme,
        fallback: Option<Scheme>,
    ) -> Result<Output<bool>, ToolError> {
        Ok(Output::new(scheme == Scheme::CrankNicolson && fallback.is_none()))
    }
}

fn main() {
    assert_eq!(<Scheme as hardened_mcp::args::ToolEnum>::TOKENS, &["explicit_euler", "cn"]);
    let set = S::hardened_tool_router_set();
    let tool = set.get("enums").unwrap();
    assert!(tool.check_arguments(&serde_json::json!({})).is_ok());
    assert!(tool.check_arguments(&serde_json::json!({"scheme": "explicit_euler"})).is_err());
}
