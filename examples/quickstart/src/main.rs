//! A beam calculator served over MCP: two hardened tools and a few lines
//! of `main`. This file is shown whole in docs/quickstart.md.

use hardened_mcp::prelude::*;

/// How the beam is held.
#[derive(Clone, Copy, Debug, PartialEq, ToolEnum)]
enum Support {
    /// Pinned at both ends, the load at mid-span.
    SimplySupported,
    /// Clamped at one end, the load at the free end.
    Cantilever,
}

impl Support {
    /// The deflection coefficient k in δ = P L³ / (k E I).
    fn k(self) -> f64 {
        match self {
            Support::SimplySupported => 48.0,
            Support::Cantilever => 3.0,
        }
    }

    /// The largest bending moment under load P on span L.
    fn max_moment(self, load: f64, length: f64) -> f64 {
        match self {
            Support::SimplySupported => load * length / 4.0,
            Support::Cantilever => load * length,
        }
    }
}

/// The result of `beam_deflection`.
#[tool_output]
struct Deflection {
    /// Largest deflection, in millimetres.
    deflection_mm: f64,
    /// Deflection over span; 1/360 is a common serviceability limit.
    span_ratio: f64,
}

/// The result of `beam_stress`.
#[tool_output]
struct Stress {
    /// Largest bending moment, in kN·m.
    moment_knm: f64,
    /// Largest bending stress of the rectangular section, in MPa.
    stress_mpa: f64,
}

/// The server: no state, so a unit struct.
pub struct Beam;

#[hardened_tools]
impl Beam {
    /// Largest deflection of a linear-elastic beam under one point load.
    #[hardened_tool(
        max_cost = 1,
        units = "evaluations",
        cost = 1.0,
        annotations(read_only, idempotent)
    )]
    async fn beam_deflection(
        &self,
        #[bounded(default = "simply_supported")] support: Support,
        #[bounded(min = 0.1, max = 100.0, units = "m", description = "Span length.")] length_m: f64,
        #[bounded(min = 0.0, max = 1e7, units = "N", description = "Point load.")] load_n: f64,
        #[bounded(
            min = 1.0,
            max = 1000.0,
            units = "GPa",
            description = "Young's modulus (steel: 200)."
        )]
        modulus_gpa: f64,
        #[bounded(
            min = 1e-3,
            max = 1e8,
            units = "cm^4",
            description = "Second moment of area."
        )]
        inertia_cm4: f64,
    ) -> Result<Output<Deflection>, ToolError> {
        let ei = modulus_gpa * 1e9 * inertia_cm4 * 1e-8; // N·m²
        let deflection_m = load_n * length_m.powi(3) / (support.k() * ei);
        Ok(Output::new(Deflection {
            deflection_mm: deflection_m * 1e3,
            span_ratio: deflection_m / length_m,
        }))
    }

    /// Largest bending stress in a solid rectangular beam under one point load.
    #[hardened_tool(
        max_cost = 1,
        units = "evaluations",
        cost = 1.0,
        annotations(read_only, idempotent),
        check(height_mm <= 1000.0 * length_m, "the section must be shallower than the span")
    )]
    async fn beam_stress(
        &self,
        #[bounded(default = "simply_supported")] support: Support,
        #[bounded(min = 0.1, max = 100.0, units = "m", description = "Span length.")] length_m: f64,
        #[bounded(min = 0.0, max = 1e7, units = "N", description = "Point load.")] load_n: f64,
        #[bounded(min = 1.0, max = 2000.0, units = "mm", description = "Section width.")]
        width_mm: f64,
        #[bounded(min = 1.0, max = 5000.0, units = "mm", description = "Section depth.")]
        height_mm: f64,
    ) -> Result<Output<Stress>, ToolError> {
        let moment = support.max_moment(load_n, length_m); // N·m
        let (b, h) = (width_mm * 1e-3, height_mm * 1e-3);
        let section_modulus = b * h * h / 6.0; // m³
        Ok(Output::new(Stress {
            moment_knm: moment / 1e3,
            stress_mpa: moment / section_modulus / 1e6,
        }))
    }
}

#[tokio::main]
async fn main() -> Result<(), hardened_mcp::ServeError> {
    let server = Server::new(
        "beam",
        env!("CARGO_PKG_VERSION"),
        Beam,
        Beam::hardened_tool_router(),
    )
    .instructions("Beam formulas for one point load: SI units as each argument states.");
    hardened_mcp::serve_stdio(server).await
}

#[cfg(test)]
mod tests;
