//! What every hardened tool needs, with no feature of the runtime: tools
//! with strict arguments, an enum, a structured output, a deck rendered
//! from typed values, a server served over stdio.
use hardened_mcp::deck::{Deck, KeyValue};
use hardened_mcp::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, ToolEnum)]
enum Support {
    Pinned,
    Clamped,
}

#[tool_output]
struct Deflection {
    metres: f64,
    deck_bytes: u64,
}

#[derive(Clone)]
struct Beam;

#[hardened_tools]
impl Beam {
    /// Tip deflection of a cantilever beam under a point load.
    #[hardened_tool(max_cost = 1, units = "evaluations", cost = 1.0)]
    fn beam_deflection(
        &self,
        #[bounded(min = 0.01, max = 100.0, units = "m")] length: f64,
        #[bounded(min = 0.0, max = 1e7, units = "N")] load: f64,
        #[bounded(default = "clamped")] support: Support,
    ) -> Result<Output<Deflection>, ToolError> {
        let mut deck = Deck::<KeyValue>::new();
        deck.set("length", length)?.set("load", load)?;
        let factor = if support == Support::Clamped {
            3.0
        } else {
            48.0
        };
        Ok(Output::new(Deflection {
            metres: load * length.powi(3) / (factor * 2e11 * 1e-6),
            deck_bytes: deck.render()?.len() as u64,
        }))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::new("beam", "1", Beam, Beam::hardened_tool_router());
    assert!(server.tools().has_route("beam_deflection"));
    // `core serve` speaks MCP over stdio (the check only builds it).
    if std::env::args().nth(1).as_deref() == Some("serve") {
        tokio::runtime::Runtime::new()?.block_on(hardened_mcp::serve_stdio(server))?;
    }
    Ok(())
}
