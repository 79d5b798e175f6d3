//! Unit-variant enums as fixed tokens, renamed and defaulted.
use hardened_mcp::prelude::*;

/// The time integration scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToolEnum)]
#[tool_enum(output)]
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
    // One declaration of the tokens: decks and outputs use them too.
    use hardened_mcp::deck::DeckToken;
    assert_eq!(DeckToken::token(&Scheme::CrankNicolson), "cn");
    assert_eq!(serde_json::to_value(Scheme::CrankNicolson).unwrap(), "cn");
    let schema = hardened_mcp::schemars::schema_for!(Scheme);
    assert_eq!(schema.get("enum").unwrap(), &serde_json::json!(["explicit_euler", "cn"]));
    assert_eq!(schema.get("description").unwrap(), "The time integration scheme.");
}
