//! The guide's chapter "Wrap an external solver" shows this server in
//! parts: every Rust block of the chapter must be in `src/main.rs` as it is
//! (its visible lines: the `# ` lines rustdoc hides only supply the context
//! the block is compiled in, as a doctest of hardened-mcp-tests), and the
//! server must stay about as short as the chapter says. A block that shows
//! another job says so on its first line (`// not in poisson-server`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

const GUIDE: &str = include_str!("../../../docs/guide.md");
const MAIN: &str = include_str!("../src/main.rs");

/// A block's lines as rendered: without the lines rustdoc hides.
fn visible(block: &str) -> String {
    block
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            t != "#" && !t.starts_with("# ")
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn every_block_of_the_chapter_is_in_the_server() {
    let start = GUIDE
        .find("## Wrap an external solver")
        .expect("the chapter");
    let chapter = &GUIDE[start..];
    let end = chapter[3..].find("\n## ").map_or(chapter.len(), |i| i + 3);
    let mut blocks = 0;
    for part in chapter[..end].split("```rust").skip(1) {
        let (fence, body) = part.split_once('\n').unwrap();
        assert!(
            fence.is_empty() || fence.starts_with(','),
            "a Rust block's fence: ```rust{fence}"
        );
        let block = visible(body.split("```").next().unwrap());
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
