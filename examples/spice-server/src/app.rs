//! Building the server from options: the run root, ngspice's registration
//! with exactly the files it needs, the sandbox; and the `serve` mode.

use std::path::{Path, PathBuf};

use hardened_mcp::prelude::*;
use hardened_mcp::runs::HandlePrefix;
use hardened_mcp::sandbox::{
    DEFAULT_READ_PATHS, Requirements, Sandbox, SandboxConfig, SolverRegistry,
};
use hardened_mcp::transport::HardenedStdio;
use rmcp::ServiceExt;

use crate::cli::Options;
use crate::server::{SOLVER_ID, SpiceServer};

/// The directory name of the default run root.
pub const RUN_ROOT_DIR: &str = "hardened-mcp-spice";

/// A start-up failure, with a message for the operator.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(String);

impl StartError {
    /// A failure of `what`.
    pub fn new(what: &str, e: impl std::fmt::Display) -> Self {
        Self(format!("{what}: {e}"))
    }
}

/// The default run root: `$XDG_STATE_HOME/hardened-mcp-spice`, else
/// `$HOME/.local/state/hardened-mcp-spice`, else the temp directory.
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

/// Opens the run root and the sandbox and builds the server.
pub fn build(o: &Options, default_root: &Path) -> Result<Server<SpiceServer>, StartError> {
    let root_path = o.run_root.as_deref().unwrap_or(default_root);
    let prefix = HandlePrefix::new("spice").map_err(|e| StartError::new("run handle prefix", e))?;
    let runs = RunRoot::open_with(root_path, prefix)
        .map_err(|e| StartError::new(&format!("run root {}", root_path.display()), e))?;
    let sandbox = sandbox(o)?;
    SpiceServer::new(runs, sandbox)
        .into_mcp()
        .map_err(|e| StartError::new("tool router", e))
}

/// The sandbox holding ngspice (found on `PATH` unless `--ngspice` names
/// it), granted its data directories outside the system trees and the
/// `--grant` paths, nothing else; `HOME` is the run's private `/tmp`.
pub fn sandbox(o: &Options) -> Result<Sandbox, StartError> {
    let ngspice = o.ngspice.clone().or_else(find_ngspice).ok_or_else(|| {
        StartError(
            "cannot find ngspice on PATH; install it (Debian: apt-get install ngspice) or pass --ngspice"
                .into(),
        )
    })?;
    let mut registry = SolverRegistry::builder().solver(SOLVER_ID, &ngspice);
    for dir in ngspice_data_dirs(&ngspice)
        .into_iter()
        .chain(o.grants.iter().cloned())
    {
        registry = registry.grant_read(SOLVER_ID, dir);
    }
    let registry = registry
        .build()
        .map_err(|e| StartError::new("solver registry", e))?;
    let mut config = SandboxConfig::default();
    // ngspice 39 crashes when HOME is unset; the view's /tmp is the run's own.
    config.fixed_env.push(("HOME".to_owned(), "/tmp".into()));
    if o.allow_weak_sandbox {
        config.require = Requirements::none();
        tracing::warn!("--allow-weak-sandbox: simulations get whatever containment this host has");
    }
    Sandbox::new(registry, config).map_err(|e| StartError::new("sandbox", e))
}

/// Serves MCP over stdio until the client leaves.
pub async fn serve(o: Options) -> Result<(), StartError> {
    let server = build(&o, &default_run_root())?;
    tracing::info!(containment = %server.service().containment(), "simulations are contained");
    let running = server
        .serve(HardenedStdio::stdio())
        .await
        .map_err(|e| StartError::new("stdio session", e))?;
    running
        .waiting()
        .await
        .map_err(|e| StartError::new("stdio session", e))?;
    Ok(())
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
