//! Strings (length, charset, pattern, default) and booleans.
use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    /// Strings.
    #[hardened_tool(max_cost = 100, units = "characters", cost = label.chars().count() as f64)]
    async fn strings(
        &self,
        #[bounded(min_len = 1, max_len = 32, charset = "identifier")] label: String,
        #[bounded(max_len = 16, pattern = "^[a-z]+$", default = "abc")] slug: String,
        #[bounded(max_len = 200, charset = "text", description = "A free-text note")] note: String,
        #[bounded(max_len = 8, charset = "printable")] code: String,
        #[bounded(max_len = 8, charset = "alnum")] tag: String,
        #[bounded(default = true)] verbose: bool,
        dry_run: bool,
    ) -> Result<Output<String>, ToolError> {
        let _ = (slug, note, code, tag, verbose, dry_run);
        Ok(Output::new(label))
    }
}

fn main() {
    S::try_hardened_tool_router().unwrap();
}
