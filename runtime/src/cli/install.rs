//! Where a solver is installed, for a server's start: its executable on
//! `PATH` and the data directories of its installation prefix. Only
//! proposals: the solver registry checks the executable and every grant.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The first executable file `name` in the directories of `PATH`, skipping
/// the relative ones (which would name different files from different
/// working directories): a default for a solver's path, which the registry
/// then checks.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The data directories of the installation prefix of the solver
/// executable `exe`, to grant it with
/// [`SolverRegistryBuilder::grant_read`](crate::sandbox::SolverRegistryBuilder::grant_read)
/// (which holds each to its rules): for `<prefix>/bin/<name>`, those of
/// `<prefix>/share/<name>`, `<prefix>/lib/<name>`, `<prefix>/lib64/<name>`
/// and `<prefix>/lib/<multiarch>/<name>` (`x86_64-linux-gnu`, …) that exist
/// and lie outside [`DEFAULT_READ_PATHS`](crate::sandbox::DEFAULT_READ_PATHS),
/// sorted. For a solver installed under a prefix of its own
/// (`/opt/ngspice-43/bin/ngspice` reads its `spinit` in
/// `/opt/ngspice-43/share/ngspice`); one installed in `/usr` needs none.
pub fn data_dirs(exe: &Path) -> Vec<PathBuf> {
    let (Some(prefix), Some(name)) = (exe.parent().and_then(Path::parent), exe.file_name()) else {
        return Vec::new();
    };
    let mut candidates: Vec<PathBuf> = ["share", "lib", "lib64"]
        .iter()
        .map(|d| prefix.join(d).join(name))
        .collect();
    if let Ok(entries) = std::fs::read_dir(prefix.join("lib")) {
        candidates.extend(
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with("-linux-gnu"))
                .map(|e| e.path().join(name)),
        );
    }
    candidates.sort();
    candidates.retain(|p| {
        p.is_dir()
            && !crate::sandbox::DEFAULT_READ_PATHS
                .iter()
                .any(|r| p.starts_with(r))
    });
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_dirs_of_a_prefix_outside_the_system_trees_and_no_others() {
        let tmp = tempfile::tempdir().unwrap();
        let prefix = tmp.path().join("ngspice-43");
        for d in [
            "bin",
            "share/ngspice/scripts",
            "share/other",
            "lib/x86_64-linux-gnu/ngspice",
            "lib/other",
        ] {
            std::fs::create_dir_all(prefix.join(d)).unwrap();
        }
        assert_eq!(
            data_dirs(&prefix.join("bin/ngspice")),
            [
                prefix.join("lib/x86_64-linux-gnu/ngspice"),
                prefix.join("share/ngspice")
            ]
        );
        // Debian's ngspice: everything is under /usr, already in the view.
        assert!(data_dirs(Path::new("/usr/bin/ngspice")).is_empty());
        assert!(data_dirs(Path::new("/ngspice")).is_empty());
    }

    #[test]
    fn a_solver_on_path_is_an_executable_file_in_an_absolute_entry() {
        // `sh` is on every PATH this runs under; a directory never is a solver.
        let sh = find_on_path("sh").expect("sh on PATH");
        assert!(sh.is_absolute() && sh.ends_with("sh"));
        assert_eq!(find_on_path("no-such-solver-anywhere"), None);
        assert_eq!(find_on_path("."), None);
    }
}
