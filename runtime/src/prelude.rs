//! One import for tool authors: `use hardened_mcp::prelude::*;`.
//!
//! ```
//! use hardened_mcp::prelude::*;
//!
//! #[derive(Clone, Copy, Debug, PartialEq, ToolEnum)]
//! enum Boundary { Periodic, Fixed }
//!
//! #[tool_output]
//! struct Estimate { cells: u32, seconds: f64 }
//!
//! struct Heat;
//!
//! #[hardened_tools]
//! impl Heat {
//!     /// Estimate a 1-D heat-diffusion run.
//!     #[hardened_tool(max_cost = 2e9, units = "cell-steps", cost = cells as f64 * steps as f64,
//!                     check(courant <= 0.5, "the courant number must not exceed 0.5"))]
//!     async fn heat_estimate(
//!         &self,
//!         ctx: ToolContext,
//!         #[bounded(min = 8, max = 200_000)] cells: u32,
//!         #[bounded(min = 1, max = 10_000_000)] steps: u64,
//!         #[bounded(min = 0.0, max = 0.5, units = "1")] courant: f64,
//!         #[bounded(default = "periodic")] boundary: Boundary,
//!     ) -> Result<Output<Estimate>, ToolError> {
//!         let _ = (ctx.caller(), boundary);
//!         Ok(Output::new(Estimate { cells, seconds: steps as f64 * 1e-6 }))
//!     }
//! }
//!
//! let router = Heat::hardened_tool_router();
//! assert!(router.has_route("heat_estimate"));
//! // Direct calls are revalidated: 4 cells is below the declared minimum.
//! let ctx = ToolContext::detached(CallerId::local());
//! let r = futures::executor::block_on(Heat.heat_estimate(ctx, 4, 10, 0.1, Boundary::Fixed));
//! assert!(matches!(r, Err(ToolError::InvalidArguments(_))));
//! ```

pub use crate::args::{ArgError, ArgErrorCode, HardenedArgs, ToolEnum};
pub use crate::context::{LogLevel, ToolContext};
pub use crate::error::ToolError;
pub use crate::identity::CallerId;
pub use crate::output::{Artifact, Output};
pub use crate::route::{HardenedTool, RouterError, ToolSet};
#[cfg(feature = "runs")]
pub use crate::runs::{HasRunRoot, RunDir, RunRoot};
pub use crate::server::Server;
pub use hardened_mcp_macros::{
    HardenedArgs, ToolEnum, bounded, hardened_tool, hardened_tools, tool_output,
};
