//! Building the server from options: the run root, ngspice's registration
//! with exactly the files it needs, the sandbox.

use std::path::{Path, PathBuf};

use hardened_mcp::cli::{BoxError, ServerArgs, Setup, StartError};
use hardened_mcp::prelude::*;
use hardened_mcp::sandbox::{DEFAULT_READ_PATHS, Sandbox, SandboxConfig, SolverRegistry};

use crate::cli::SpiceOptions;
use crate::server::{SOLVER_ID, SpiceServer};

/// The run handle prefix, also the default run root's name
/// (`hardened-mcp-spice`).
pub const PREFIX: &str = "spice";

/// `ngspice` on `PATH`, if any.
pub fn find_ngspice() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("ngspice"))
        .find(|p| p.is_file())
}

/// The data directories of an ngspice installed as `<prefix>/bin/ngspice`
/// (its `spinit` under `share/ngspice`, its code models under
/// `lib/ngspice` or `lib/<multiarch>/ngspice`) that exist and that the
/// default read paths do not already show: what this solver must be
/// granted, and nothing more.
pub fn ngspice_data_dirs(exe: &Path) -> Vec<PathBuf> {
    let Some(prefix) = exe.parent().and_then(Path::parent) else {
        return Vec::new();
    };
    let mut candidates = vec![
        prefix.join("share/ngspice"),
        prefix.join("lib/ngspice"),
        prefix.join("lib64/ngspice"),
    ];
    if let Ok(entries) = std::fs::read_dir(prefix.join("lib")) {
        for e in entries.flatten() {
            let p = e.path().join("ngspice");
            if e.file_name().to_string_lossy().ends_with("-linux-gnu") {
                candidates.push(p);
            }
        }
    }
    candidates.sort();
    candidates
        .into_iter()
        .filter(|p| p.is_dir())
        .filter(|p| !DEFAULT_READ_PATHS.iter().any(|r| p.starts_with(r)))
        .collect()
}

/// Opens the run root and the sandbox as `setup`'s options say, and
/// builds the server.
pub fn build(setup: &mut Setup<'_>, o: &SpiceOptions) -> Result<Server<SpiceServer>, BoxError> {
    let runs = setup.run_root(PREFIX)?;
    let sandbox = setup.sandbox_with(registry(o)?, config())?;
    SpiceServer::new(runs, sandbox).into_mcp()
}

/// The server over the run root at `root` with every other option at its
/// default: for tests.
pub fn build_at(root: &Path) -> Result<Server<SpiceServer>, BoxError> {
    let mut args = ServerArgs::default();
    args.runs.run_root = Some(root.to_path_buf());
    build(&mut args.setup(), &SpiceOptions::default())
}

/// The sandbox with the default options: for tests.
pub fn sandbox() -> Result<Sandbox, BoxError> {
    Ok(ServerArgs::default()
        .setup()
        .sandbox_with(registry(&SpiceOptions::default())?, config())?)
}

/// ngspice (found on `PATH` unless `--ngspice` names it), granted its data
/// directories outside the system trees and the `--grant` paths, nothing
/// else.
fn registry(o: &SpiceOptions) -> Result<SolverRegistry, StartError> {
    let ngspice = o.ngspice.clone().or_else(find_ngspice).ok_or_else(|| {
        StartError::new(
            "cannot find ngspice on PATH; install it (Debian: apt-get install ngspice) or pass --ngspice",
        )
    })?;
    let mut registry = SolverRegistry::builder().solver(SOLVER_ID, &ngspice);
    for dir in ngspice_data_dirs(&ngspice)
        .into_iter()
        .chain(o.grants.iter().cloned())
    {
        registry = registry.grant_read(SOLVER_ID, dir);
    }
    registry
        .build()
        .map_err(|e| StartError::because("solver registry", e))
}

/// The sandbox's configuration: `HOME` is the run's private `/tmp`
/// (ngspice 39 crashes when HOME is unset).
fn config() -> SandboxConfig {
    let mut config = SandboxConfig::default();
    config.fixed_env.push(("HOME".to_owned(), "/tmp".into()));
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_dirs_outside_the_system_trees_are_granted_and_no_others() {
        let tmp = tempfile::tempdir().unwrap();
        let prefix = tmp.path().join("ngspice-43");
        for d in [
            "bin",
            "share/ngspice/scripts",
            "lib/x86_64-linux-gnu/ngspice",
            "lib/other",
        ] {
            std::fs::create_dir_all(prefix.join(d)).unwrap();
        }
        let exe = prefix.join("bin/ngspice");
        assert_eq!(
            ngspice_data_dirs(&exe),
            [
                prefix.join("lib/x86_64-linux-gnu/ngspice"),
                prefix.join("share/ngspice")
            ]
        );
        // Debian's ngspice: everything is under /usr, already in the view.
        assert!(ngspice_data_dirs(Path::new("/usr/bin/ngspice")).is_empty());
    }
}
