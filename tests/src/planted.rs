//! What an audit plants outside the directory it was given (`--scope`):
//! for the tests that hold it removed at the end.

use std::path::{Path, PathBuf};

/// The entries beside `dir` whose path is `dir`'s followed by `-` (the
/// audit's sibling directories, `DIR-hardened-mcp-audit-…`).
pub fn beside(dir: &Path) -> Vec<PathBuf> {
    let prefix = format!("{}-", dir.display());
    let parent = dir.parent().unwrap_or(Path::new("/"));
    std::fs::read_dir(parent)
        .unwrap_or_else(|e| panic!("{}: {e}", parent.display()))
        .filter_map(Result::ok)
        .map(|e| parent.join(e.file_name()))
        .filter(|p| p.display().to_string().starts_with(&prefix))
        .collect()
}
