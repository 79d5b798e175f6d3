//! A guide chapter that shows one example server in parts: its Rust
//! blocks, as a reader sees them, to check against the server's source.

/// The Rust blocks of the section headed `heading` (a `## ` line of
/// `page`, up to the next one), each as rendered: without the lines rustdoc
/// hides (`# `), which only supply the context a block is compiled in.
///
/// # Panics
///
/// When the section is missing, or a block's fence is not ```` ```rust ````
/// or ```` ```rust,<attributes> ````: the page is not what the test expects.
pub fn visible_blocks(page: &str, heading: &str) -> Vec<String> {
    let start = page
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading}"));
    let section = &page[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    section[..end]
        .split("```rust")
        .skip(1)
        .map(|part| {
            let (fence, body) = part.split_once('\n').unwrap_or(("", ""));
            assert!(
                fence.is_empty() || fence.starts_with(','),
                "a Rust block's fence: ```rust{fence}"
            );
            let body = body.split("```").next().unwrap_or("");
            body.lines()
                .filter(|l| {
                    let t = l.trim_start();
                    t != "#" && !t.starts_with("# ")
                })
                .map(|l| format!("{l}\n"))
                .collect()
        })
        .collect()
}
