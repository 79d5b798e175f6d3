//! The guide's chapter "Wrap an external solver" shows this server in
//! parts: every Rust block of the chapter must be in `src/main.rs` as it is,
//! and the server must stay about as short as the chapter says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

const GUIDE: &str = include_str!("../../../docs/guide.md");
const MAIN: &str = include_str!("../src/main.rs");

#[test]
fn every_block_of_the_chapter_is_in_the_server() {
    let start = GUIDE
        .find("## Wrap an external solver")
        .expect("the chapter");
    let chapter = &GUIDE[start..];
    let end = chapter[3..].find("\n## ").map_or(chapter.len(), |i| i + 3);
    let mut blocks = 0;
    for part in chapter[..end].split("```rust\n").skip(1) {
        let block = part.split("```").next().unwrap();
        assert!(MAIN.contains(block), "not in src/main.rs:\n{block}");
        blocks += 1;
    }
    assert!(blocks >= 4, "{blocks} blocks");
    let lines = MAIN.lines().count();
    assert!(
        lines <= 155,
        "src/main.rs has {lines} lines; the chapter says 150"
    );
}
