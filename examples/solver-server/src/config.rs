//! Where the solver executable is when no option names it.

use std::path::{Path, PathBuf};

/// The solver's file name, looked up next to the server binary; also the
/// solver id, the file name of the `argv[0]` the sandbox passes.
pub const SOLVER_FILE: &str = crate::server::SOLVER_ID;

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
