//! `#[tool_output]` with serde and schemars attributes, in a crate that
//! names neither serde nor schemars: the derives come through hardened-mcp.
use hardened_mcp::prelude::*;

/// A result with renamed and skipped fields.
#[tool_output]
#[serde(rename_all = "camelCase")]
struct Report {
    /// Cells in the mesh.
    cell_count: u32,
    #[serde(skip)]
    #[allow(dead_code)]
    scratch: Vec<u8>,
}

/// A result that is an enum.
#[tool_output]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Verdict {
    Converged { residual: f64 },
    Diverged,
}

fn main() {
    let schema = hardened_mcp::schemars::schema_for!(Report);
    let text = hardened_mcp::serde_json::to_string(&schema).unwrap();
    assert!(text.contains("cellCount") && !text.contains("scratch"), "{text}");
    let out = Output::new(Verdict::Converged { residual: 1e-9 });
    let _ = (out, Verdict::Diverged, Report { cell_count: 3, scratch: Vec::new() });
}
