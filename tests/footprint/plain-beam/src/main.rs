//! The quickstart's two tools (beam deflection and bending stress) on plain
//! rmcp over stdio, the same arguments and results, with no hardening: the
//! footprint baseline.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Support {
    SimplySupported,
    Cantilever,
}

#[derive(Deserialize, JsonSchema)]
struct DeflectionArgs {
    support: Support,
    length_m: f64,
    load_n: f64,
    modulus_gpa: f64,
    inertia_cm4: f64,
}

#[derive(Deserialize, JsonSchema)]
struct StressArgs {
    support: Support,
    length_m: f64,
    load_n: f64,
    width_mm: f64,
    height_mm: f64,
}

#[derive(Serialize, JsonSchema)]
struct Deflection {
    deflection_mm: f64,
    span_ratio: f64,
}

#[derive(Serialize, JsonSchema)]
struct Stress {
    moment_knm: f64,
    stress_mpa: f64,
}

#[derive(Clone)]
struct Beam {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Beam {
    /// Largest deflection of a linear-elastic beam under one point load.
    #[tool]
    async fn beam_deflection(
        &self,
        Parameters(a): Parameters<DeflectionArgs>,
    ) -> Result<Json<Deflection>, ErrorData> {
        let k = match a.support {
            Support::SimplySupported => 48.0,
            Support::Cantilever => 3.0,
        };
        let ei = a.modulus_gpa * 1e9 * a.inertia_cm4 * 1e-8;
        let d = a.load_n * a.length_m.powi(3) / (k * ei);
        Ok(Json(Deflection {
            deflection_mm: d * 1e3,
            span_ratio: d / a.length_m,
        }))
    }

    /// Largest bending stress in a solid rectangular beam under one point load.
    #[tool]
    async fn beam_stress(
        &self,
        Parameters(a): Parameters<StressArgs>,
    ) -> Result<Json<Stress>, ErrorData> {
        let moment = match a.support {
            Support::SimplySupported => a.load_n * a.length_m / 4.0,
            Support::Cantilever => a.load_n * a.length_m,
        };
        let (b, h) = (a.width_mm * 1e-3, a.height_mm * 1e-3);
        Ok(Json(Stress {
            moment_knm: moment / 1e3,
            stress_mpa: moment / (b * h * h / 6.0) / 1e6,
        }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Beam {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let beam = Beam {
        tool_router: Beam::tool_router(),
    };
    let running = beam.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
