//! What the body rules leave alone: pure path manipulation, build
//! constants, address types, a run directory's own methods, and string
//! parameters whose names only contain a path word or use one of the
//! words refused only as a whole name beside another part.
use hardened_mcp::prelude::*;
use std::path::Path;

struct S {
    runs: RunRoot,
}

impl HasRunRoot for S {
    fn run_root(&self) -> &RunRoot {
        &self.runs
    }
}

#[hardened_tools]
impl S {
    /// Names things; touches no file outside the run.
    #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0, check(src_lang.len() <= 8, "short"))]
    async fn describe(
        &self,
        run: RunDir,
        #[bounded(max_len = 8, charset = "identifier")] src_lang: String,
        #[bounded(max_len = 16, charset = "identifier")] profile: String,
        #[bounded(max_len = 16, charset = "identifier")] source: String,
    ) -> Result<Output<String>, ToolError> {
        let name = Path::new("out").join("result.json");
        let stem = name.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let ext = name.extension().is_some();
        let version = env!("CARGO_PKG_VERSION");
        let os = std::env::consts::OS;
        let local: std::net::IpAddr = std::net::Ipv4Addr::LOCALHOST.into();
        Ok(Output::new(format!(
            "{} {src_lang} {profile} {source} {stem} {ext} {version} {os} {local}",
            run.handle().as_str()
        )))
    }
}

fn main() {
    let set = S::hardened_tool_router_set();
    assert!(set.get("describe").is_some());
}
