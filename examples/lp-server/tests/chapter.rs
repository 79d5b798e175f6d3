//! The guide's chapter "Wrap a compiled solver" shows this server in
//! parts: every Rust block of the chapter is in `src/main.rs` as it is (its
//! visible lines; the hidden ones only supply the context a block is
//! compiled in, as a doctest of hardened-mcp-tests), and together they are
//! the whole server but its imports and constants.

const GUIDE: &str = include_str!("../../../docs/guide.md");
const MAIN: &str = include_str!("../src/main.rs");

#[test]
fn every_block_of_the_chapter_is_in_the_server() {
    let blocks = hardened_mcp_tests::chapter::visible_blocks(GUIDE, "## Wrap a compiled solver");
    assert_eq!(blocks.len(), 4, "{blocks:?}");
    let mut shown = 0;
    for block in &blocks {
        assert!(
            MAIN.contains(block.as_str()),
            "not in src/main.rs:\n{block}"
        );
        shown += block.lines().filter(|l| !l.is_empty()).count();
    }
    let start = MAIN.find("/// Minimize or maximize").unwrap_or(0);
    assert_eq!(
        shown,
        MAIN[start..].lines().filter(|l| !l.is_empty()).count(),
        "every item of src/main.rs after its imports is in a block of the chapter"
    );
}
