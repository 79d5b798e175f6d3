//! Defaults that make the server work with no configuration: where the run
//! root lives and where the solver executable is.

use std::path::{Path, PathBuf};

/// The directory name of the run root under the state or temp directory.
pub const RUN_ROOT_DIR: &str = "hardened-mcp-solver";
/// The solver's file name, looked up next to the server binary; also the
/// solver id, the file name of the `argv[0]` the sandbox passes.
pub const SOLVER_FILE: &str = crate::server::SOLVER_ID;

/// The default run root: `$XDG_STATE_HOME/hardened-mcp-solver`, else
/// `$HOME/.local/state/hardened-mcp-solver`, else the temp directory.
pub fn default_run_root() -> PathBuf {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".local").join("state"))
        });
    match state {
        Some(dir) if std::fs::create_dir_all(&dir).is_ok() => dir.join(RUN_ROOT_DIR),
        _ => std::env::temp_dir().join(RUN_ROOT_DIR),
    }
}

/// The default solver path: `heat1d` in the directory of the running
/// binary when it is there (a `cargo build` of the package puts it there),
/// else the running binary itself, which acts as `heat1d` when the sandbox
/// starts it under that name (`cargo run` builds only the server binary).
/// The registry checks whichever it is at start.
pub fn default_solver() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let beside = exe.parent()?.join(SOLVER_FILE);
    match std::fs::symlink_metadata(&beside) {
        Ok(m) if m.is_file() => Some(beside),
        _ => Some(exe),
    }
}

/// Whether this process was started as the solver: `argv[0]`'s file name
/// is [`SOLVER_FILE`] (the sandbox passes the solver's path in its view,
/// whose file name is the solver id, as `argv[0]`).
pub fn started_as_solver() -> bool {
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n == SOLVER_FILE))
        .unwrap_or(false)
}

/// The solver path to use: the configured one, else the default.
pub fn solver_path(configured: Option<&Path>) -> Option<PathBuf> {
    configured.map(Path::to_path_buf).or_else(default_solver)
}
