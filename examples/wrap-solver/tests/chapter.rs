//! The guide's chapter "Wrap an external solver" shows this server in
//! parts: every Rust block of the chapter must be in `src/main.rs` as it is
//! (its visible lines: the `# ` lines rustdoc hides only supply the context
//! the block is compiled in, as a doctest of hardened-mcp-tests), and the
//! server must stay about as short as the chapter says. A block that shows
//! another job says so on its first line (`// not in poisson-server`).

const GUIDE: &str = include_str!("../../../docs/guide.md");
const MAIN: &str = include_str!("../src/main.rs");

#[test]
fn every_block_of_the_chapter_is_in_the_server() {
    let mut blocks = 0;
    for block in hardened_mcp_tests::chapter::visible_blocks(GUIDE, "## Wrap an external solver") {
        if block.starts_with("    // not in poisson-server") {
            continue;
        }
        assert!(MAIN.contains(&block), "not in src/main.rs:\n{block}");
        blocks += 1;
    }
    assert!(blocks >= 4, "{blocks} blocks");
    let lines = MAIN.lines().count();
    assert!(
        lines <= 155,
        "src/main.rs has {lines} lines; the chapter says 150"
    );
}
