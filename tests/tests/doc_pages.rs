//! Every Rust block of the Markdown pages is compiled: README.md, docs/*.md
//! and the published crates' READMEs. A page with a Rust block must be
//! included (`#[doc = include_str!(..)]`) by a doctest holder, so
//! `cargo test --doc` compiles every block of it, or be one of the pages
//! whose blocks a test compares byte for byte with sources that are
//! compiled (docs/quickstart.md). No block is `ignore`d, and no fence is
//! bare (rustdoc would take a diagram for Rust). The licence texts the
//! published crates ship are the repository's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The sources that hold pages as doctests: `#[doc = include_str!(..)]`
/// under `#[cfg(doctest)]`, or a crate's `#![doc = include_str!(..)]`.
const HOLDERS: &[&str] = &["tests/src/doc_pages.rs", "runtime/src/lib.rs"];

/// Pages whose Rust blocks are compared byte for byte with compiled
/// sources, and the test that does it.
const COMPARED: &[(&str, &str)] = &[("docs/quickstart.md", "examples/quickstart/tests/docs.rs")];

/// The published crates: each ships its README and the licence texts.
const PUBLISHED: &[&str] = &["macros", "runtime", "audit"];

/// The pages: README.md, docs/*.md, the published crates' READMEs.
fn pages() -> Vec<String> {
    let root = workspace();
    let mut pages = vec!["README.md".to_owned()];
    for entry in fs::read_dir(root.join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    for krate in PUBLISHED {
        pages.push(format!("{krate}/README.md"));
    }
    pages.sort();
    pages
}

/// The info strings of a page's opening fences, with their line numbers.
fn fences(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let Some(info) = t.strip_prefix("```") else {
            continue;
        };
        match open.take() {
            None => open = Some((i + 1, info.trim().to_owned())),
            Some(fence) => out.push(fence),
        }
    }
    assert!(open.is_none(), "an unclosed fence at line {:?}", open);
    out
}

/// Whether rustdoc takes a block with this info string for Rust.
fn is_rust(info: &str) -> bool {
    const RUSTDOC: &[&str] = &[
        "rust",
        "ignore",
        "no_run",
        "compile_fail",
        "should_panic",
        "test_harness",
        "edition2015",
        "edition2018",
        "edition2021",
        "edition2024",
    ];
    info.is_empty()
        || info
            .split([',', ' '])
            .any(|w| RUSTDOC.contains(&w) || w.starts_with("ignore-"))
}

/// The pages the holders include, as workspace-relative paths.
fn included() -> BTreeSet<String> {
    let root = workspace().canonicalize().unwrap();
    let mut out = BTreeSet::new();
    for holder in HOLDERS {
        let path = root.join(holder);
        let src = fs::read_to_string(&path).unwrap();
        for part in src.split("include_str!(\"").skip(1) {
            let rel = part.split('"').next().unwrap();
            if !rel.ends_with(".md") {
                continue;
            }
            // Only a doc attribute: a page in a `const` is not compiled.
            let before = &src[..src.find(&format!("include_str!(\"{rel}\"")).unwrap()];
            let line = before.rsplit('\n').next().unwrap();
            assert!(
                line.trim_start().starts_with("#[doc = ")
                    || line.trim_start().starts_with("#![doc = "),
                "{holder}: {rel} is not included as documentation"
            );
            if line.trim_start().starts_with("#[doc = ") {
                let attrs = before.rsplit("\n\n").next().unwrap();
                assert!(
                    attrs.contains("#[cfg(doctest)]"),
                    "{holder}: the holder of {rel} is not #[cfg(doctest)]"
                );
            }
            let page = path.parent().unwrap().join(rel).canonicalize().unwrap();
            let page = page.strip_prefix(&root).unwrap();
            out.insert(page.to_str().unwrap().to_owned());
        }
    }
    out
}

#[test]
fn every_rust_block_of_every_page_is_compiled() {
    let root = workspace();
    let included = included();
    let mut faults = Vec::new();
    for page in pages() {
        let text = fs::read_to_string(root.join(&page)).unwrap();
        let mut rust = 0;
        for (line, info) in fences(&text) {
            if info.is_empty() {
                faults.push(format!(
                    "{page}:{line}: a bare fence; say the language (```text for a diagram)"
                ));
            }
            if !is_rust(&info) {
                continue;
            }
            rust += 1;
            if info.split([',', ' ']).any(|w| w.starts_with("ignore")) {
                faults.push(format!(
                    "{page}:{line}: ```{info}: a Rust block must compile \
                     (no_run for one that serves or runs a solver, compile_fail for one \
                     that must not compile, ```text for what is not Rust)"
                ));
            }
        }
        if rust == 0 || included.contains(&page) {
            continue;
        }
        match COMPARED.iter().find(|(p, _)| *p == page) {
            Some((_, test)) => {
                let src = fs::read_to_string(root.join(test)).unwrap();
                let name = Path::new(&page).file_name().unwrap().to_str().unwrap();
                if !src.contains(&format!("include_str!(\"../../../docs/{name}\")")) {
                    faults.push(format!("{test} no longer compares {page}"));
                }
            }
            None => faults.push(format!(
                "{page}: {rust} Rust blocks, not compiled: include the page in \
                 tests/src/doc_pages.rs (#[cfg(doctest)] #[doc = include_str!(..)])"
            )),
        }
    }
    assert!(faults.is_empty(), "\n{}", faults.join("\n"));
}

#[test]
fn every_page_is_included_once_and_exists() {
    let pages: BTreeSet<String> = pages().into_iter().collect();
    let included = included();
    for page in &included {
        assert!(pages.contains(page), "{page} is included but is no page");
    }
    // Every page but the compared ones is a doctest holder's, with or
    // without Rust blocks, so a block added later is compiled at once.
    for page in &pages {
        let compared = COMPARED.iter().any(|(p, _)| p == page);
        let crate_readme = PUBLISHED.iter().any(|k| *page == format!("{k}/README.md"));
        if !compared && !crate_readme {
            assert!(included.contains(page), "{page} is in no doctest holder");
        }
    }
}

#[test]
fn the_published_crates_ship_the_repositorys_licence_texts() {
    let root = workspace();
    for file in ["LICENSE-MIT", "LICENSE-APACHE"] {
        let text = fs::read(root.join(file)).unwrap();
        for krate in PUBLISHED {
            let copy = fs::read(root.join(krate).join(file))
                .unwrap_or_else(|e| panic!("{krate}/{file}: {e}"));
            assert!(copy == text, "{krate}/{file} differs from {file}");
        }
    }
}
