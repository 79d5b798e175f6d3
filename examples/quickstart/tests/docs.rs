//! docs/quickstart.md shows this crate's code: it must show it exactly, so
//! the page cannot drift from what CI compiles, tests and serves.
#![allow(missing_docs)]

const DOC: &str = include_str!("../../../docs/quickstart.md");

/// The fenced blocks of `lang` in `doc`, in order.
fn blocks<'a>(doc: &'a str, lang: &str) -> Vec<&'a str> {
    let open = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = doc;
    while let Some(start) = rest.find(&open) {
        let body = &rest[start + open.len()..];
        let Some(end) = body.find("\n```") else { break };
        out.push(&body[..=end]);
        rest = &body[end..];
    }
    out
}

#[test]
fn the_page_shows_main_rs_and_tests_rs_exactly() {
    let rust = blocks(DOC, "rust");
    assert_eq!(rust.len(), 2, "two Rust blocks: main.rs and tests.rs");
    assert_eq!(
        rust[0],
        include_str!("../src/main.rs"),
        "main.rs differs from the page"
    );
    assert_eq!(
        rust[1],
        include_str!("../src/tests.rs"),
        "tests.rs differs from the page"
    );
}

#[test]
fn the_page_declares_the_crates_dependencies() {
    let manifest = include_str!("../Cargo.toml");
    let toml = blocks(DOC, "toml");
    assert_eq!(toml.len(), 1);
    let deps: Vec<&str> = toml[0]
        .lines()
        .filter(|l| !l.starts_with('[') && !l.trim().is_empty())
        .collect();
    let names: Vec<&str> = deps
        .iter()
        .filter_map(|l| l.split_once(" = ").map(|(name, _)| name))
        .collect();
    assert_eq!(
        names,
        ["hardened-mcp", "tokio"],
        "the framework and a runtime only"
    );
    // The default features, as the crate builds: no feature on the page,
    // none in the crate's manifest.
    assert!(
        deps.iter()
            .any(|l| l.starts_with("hardened-mcp = ") && !l.contains("features")),
        "{deps:?}"
    );
    assert!(
        manifest
            .lines()
            .any(|l| l == "hardened-mcp.workspace = true"),
        "the quickstart names no feature of the runtime"
    );
    // The runtime line is the crate's own, word for word.
    assert!(
        deps.iter()
            .any(|l| l.starts_with("tokio = ") && manifest.contains(l))
    );
    // And the crate itself depends on nothing more.
    let section = manifest
        .split("[dependencies]\n")
        .nth(1)
        .and_then(|s| s.split("\n[").next())
        .unwrap_or_default();
    let declared: Vec<&str> = section
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split([' ', '.', '=']).next())
        .collect();
    assert_eq!(declared, ["hardened-mcp", "tokio"]);
}
