use hardened_mcp::prelude::*;

struct S;

#[hardened_tools]
impl S {
    #[hardened_tool(max_cost = 10, units = "calls", cost = 1.0)]
    async fn t(
        &self,
        #[bounded(max_len = 200)] fname: String,
        #[bounded(max_len = 200)] output_dir_2: String,
        #[bounded(max_len = 200)] dst: String,
        // Not path-like: `src_lang` names a language, `profile` is not `file`.
        #[bounded(max_len = 8)] src_lang: String,
        #[bounded(max_len = 8)] profile: String,
    ) -> Result<Output<u32>, ToolError> {
        let _ = (fname, output_dir_2, dst, src_lang, profile);
        Ok(Output::new(0))
    }
}

fn main() {}
