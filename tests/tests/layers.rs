//! The runtime's layers hold: no module of `runtime/src` uses a module of
//! a layer above its own, as `docs/architecture.md`'s table lays them out.
//! Every `crate::…` path in the code is read (comments and the test
//! modules at the end of a file aside); an item the crate root re-exports
//! (`crate::ToolError`) counts for the module it comes from.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// Module → layer number, from the table's rows `| N. name | `m`, `m` | … |`.
fn layers(doc: &str) -> BTreeMap<String, u32> {
    let mut layers = BTreeMap::new();
    for row in doc.lines() {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Some(n) = cells
            .get(1)
            .and_then(|c| c.split_once('.'))
            .and_then(|(n, _)| n.parse::<u32>().ok())
        else {
            continue;
        };
        for module in cells[2].split(',') {
            let module = module.trim().trim_matches('`');
            assert!(
                layers.insert(module.to_owned(), n).is_none(),
                "{module} is in two layers"
            );
        }
    }
    layers
}

/// Items re-exported at the crate root (`pub use module::{A, B}`), by name.
fn root_items(lib: &str) -> BTreeMap<String, String> {
    let mut items = BTreeMap::new();
    let mut text = String::new();
    for line in lib.lines().filter(|l| !l.trim_start().starts_with("//")) {
        text.push_str(line);
        text.push(' ');
    }
    for statement in text.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        let names = rest.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.split(" as ").last().unwrap_or("").trim();
            let name = name.rsplit("::").next().unwrap_or("");
            if !name.is_empty() {
                items.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    items
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `crate::` paths of `source`'s code: comment lines and everything
/// from a trailing `#[cfg(test)] mod …` on are left out. Each is the
/// path's first segment, with its line number.
fn crate_paths(source: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        if *line == "#[cfg(test)]" && lines.get(i + 1).is_some_and(|l| l.starts_with("mod ")) {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let mut rest = *line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let segment: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '{')
                .collect();
            found.push((i + 1, segment));
        }
    }
    found
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let repo = repo();
    let doc = std::fs::read_to_string(repo.join("docs/architecture.md")).unwrap();
    let layers = layers(&doc);
    assert!(layers.len() > 10, "the table was not read: {layers:?}");
    let src = repo.join("runtime/src");
    let items = root_items(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    assert_eq!(items.get("ToolError").map(String::as_str), Some("error"));
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut broken = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap();
        let first = first.as_os_str().to_str().unwrap();
        // The crate root declares the modules; binaries and test files
        // are not the library's code.
        if relative == Path::new("lib.rs")
            || first == "bin"
            || relative.file_name().is_some_and(|n| n == "tests.rs")
        {
            continue;
        }
        let module = first.trim_end_matches(".rs");
        let Some(&own) = layers.get(module) else {
            broken.push(format!(
                "{}: module `{module}` is in no layer",
                relative.display()
            ));
            continue;
        };
        for (line, segment) in crate_paths(&std::fs::read_to_string(file).unwrap()) {
            if segment.starts_with('{') {
                broken.push(format!(
                    "{}:{line}: `crate::{{…}}`: write one path per import so that its layer can be read",
                    relative.display()
                ));
                continue;
            }
            let used = match layers.get(&segment) {
                Some(_) => segment.clone(),
                None => match items.get(&segment) {
                    Some(module) => module.clone(),
                    // A macro or an item of the crate root itself.
                    None => continue,
                },
            };
            let Some(&theirs) = layers.get(&used) else {
                continue;
            };
            if theirs > own {
                broken.push(format!(
                    "{}:{line}: `{module}` (layer {own}) uses `{used}` (layer {theirs})",
                    relative.display()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

#[test]
fn the_check_sees_a_use_from_above() {
    // The positive control: the reader finds the paths a layer breach
    // would take, and leaves comments and trailing tests alone.
    let source = "use crate::jobs::Jobs;\n// crate::server in a comment\nfn f() { crate::ToolError::x(); }\n#[cfg(test)]\nmod tests {\n    use crate::transport::X;\n}\n";
    let paths: Vec<String> = crate_paths(source).into_iter().map(|(_, s)| s).collect();
    assert_eq!(paths, ["jobs", "ToolError"]);
    let doc = std::fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    let layers = layers(&doc);
    assert!(layers["jobs"] > layers["sandbox"]);
    assert!(layers["runs"] < layers["sandbox"]);
}

/// The code lines of `source`: comment lines and a trailing
/// `#[cfg(test)] mod …` left out, each with its number.
fn code_lines(source: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = source.lines().collect();
    let mut code = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if *line == "#[cfg(test)]" && lines.get(i + 1).is_some_and(|l| l.starts_with("mod ")) {
            break;
        }
        if !line.trim_start().starts_with("//") {
            code.push((i + 1, *line));
        }
    }
    code
}

/// The runtime's dependencies, as the names its code writes them.
fn dependencies() -> Vec<String> {
    let manifest = std::fs::read_to_string(repo().join("runtime/Cargo.toml")).unwrap();
    let section = manifest.split("[dependencies]").nth(1).unwrap();
    let section = section.split("\n[").next().unwrap();
    section
        .lines()
        .filter_map(|l| l.split(['.', ' ', '=']).next())
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .map(|name| name.replace('-', "_"))
        .collect()
}

/// What breaks the child side's rule in the file `relative` (a path
/// under `sandbox/child/`): a path out of the module (`crate::`, or
/// `super::` from its root) or a dependency other than libc and rustix.
fn child_breaches(relative: &str, source: &str, dependencies: &[String]) -> Vec<String> {
    let root = relative.ends_with("child/mod.rs");
    let mut broken = Vec::new();
    for (n, line) in code_lines(source) {
        let mut why = Vec::new();
        if line.contains("crate::") || line.contains("super::super") {
            why.push("a path out of `child`".to_owned());
        }
        if root && line.contains("super::") {
            why.push("a path out of `child` from its root".to_owned());
        }
        for dep in dependencies {
            if dep != "libc" && dep != "rustix" {
                let used = line.match_indices(&format!("{dep}::")).any(|(at, _)| {
                    !line[..at]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                });
                if used {
                    why.push(format!("the dependency `{dep}`"));
                }
            }
        }
        broken.extend(why.into_iter().map(|w| format!("{relative}:{n}: {w}")));
    }
    broken
}

#[test]
fn the_child_side_uses_nothing_outside_itself_and_holds_the_only_unsafe_code() {
    let src = repo().join("runtime/src");
    let dependencies = dependencies();
    assert!(
        dependencies.iter().any(|d| d == "tokio"),
        "{dependencies:?}"
    );
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut broken = Vec::new();
    let mut child_files = 0;
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap().to_str().unwrap();
        let source = std::fs::read_to_string(file).unwrap();
        if relative.starts_with("sandbox/child/") {
            child_files += 1;
            broken.extend(child_breaches(relative, &source, &dependencies));
            continue;
        }
        for (n, line) in code_lines(&source) {
            let without_lint = line.replace("unsafe_op_in_unsafe_fn", "");
            if without_lint.contains("unsafe") {
                broken.push(format!("{relative}:{n}: `unsafe` outside `sandbox/child`"));
            }
        }
    }
    assert!(child_files >= 5, "the child side was not found");
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

#[test]
fn the_child_check_sees_a_way_out() {
    // The positive control: each way out of the module is found, and
    // what is allowed is not.
    let deps = ["tokio".to_owned(), "libc".to_owned(), "rustix".to_owned()];
    let source = "use super::sys::cvt;\nuse crate::runs::RunDir;\nfn f() { tokio::spawn(x); libc::_exit(0); rustix::io::write(a, b); }\nuse super::super::view;\n// crate::jobs in a comment\n";
    let found = child_breaches("sandbox/child/solver.rs", source, &deps);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].contains(":2:") && found[1].contains("`tokio`") && found[2].contains(":4:"));
    let root = child_breaches(
        "sandbox/child/mod.rs",
        "use super::limits::Limits;\n",
        &deps,
    );
    assert_eq!(root.len(), 1, "{root:?}");
}
