//! Configuration checked at start: bad solver entries are refused with a
//! message naming the solver id; unknown ids, out-of-bounds limits and a
//! removed run directory at launch get fixed errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_support/mod.rs"]
mod support;

use std::os::unix::fs::PermissionsExt;

use hardened_mcp::sandbox::{
    ConfigError, Limits, MAX_MADE_AHEAD, Requirements, RunRequest, SandboxConfig, SandboxError,
    SolverRegistry, TreeKill,
};
use support::*;
use tokio_util::sync::CancellationToken;

fn build(id: &str, path: &std::path::Path) -> Result<SolverRegistry, ConfigError> {
    SolverRegistry::builder().solver(id, path).build()
}

/// A copy of a probe in a private directory, with the given mode.
fn copy_with_mode(dir: &std::path::Path, mode: u32) -> std::path::PathBuf {
    let p = dir.join("solver");
    std::fs::copy(ESCAPE, &p).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

#[test]
fn a_good_solver_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let p = copy_with_mode(dir.path(), 0o755);
    let r = build("heat", &p).unwrap();
    assert_eq!(r.ids().collect::<Vec<_>>(), ["heat"]);
}

#[test]
fn relative_path_is_refused() {
    let e = build("heat", std::path::Path::new("bin/solver")).unwrap_err();
    assert_eq!(e, ConfigError::RelativePath("heat".into()));
    assert_eq!(
        e.to_string(),
        "solver `heat`: the executable path must be absolute"
    );
}

#[test]
fn symlinked_solver_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let real = copy_with_mode(dir.path(), 0o755);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let e = build("heat", &link).unwrap_err();
    assert_eq!(e, ConfigError::Symlink("heat".into()));
    assert!(e.to_string().contains("`heat`") && !e.to_string().contains("/tmp"));
}

#[test]
fn world_or_group_writable_solver_is_refused() {
    for mode in [0o777, 0o775, 0o757] {
        let dir = tempfile::tempdir().unwrap();
        let p = copy_with_mode(dir.path(), mode);
        assert_eq!(
            build("heat", &p).unwrap_err(),
            ConfigError::Writable("heat".into()),
            "{mode:o}"
        );
    }
}

#[test]
fn solver_in_a_world_writable_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = copy_with_mode(dir.path(), 0o755);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(
        build("heat", &p).unwrap_err(),
        ConfigError::Writable("heat".into())
    );
}

#[test]
fn missing_and_non_executable_solvers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        build("heat", &dir.path().join("nope")).unwrap_err(),
        ConfigError::Missing("heat".into())
    );
    let p = copy_with_mode(dir.path(), 0o644);
    assert_eq!(
        build("heat", &p).unwrap_err(),
        ConfigError::NotExecutable("heat".into())
    );
    assert_eq!(
        build("heat", dir.path()).unwrap_err(),
        ConfigError::NotRegularFile("heat".into())
    );
}

#[test]
fn bad_ids_and_duplicates_are_refused() {
    assert!(matches!(
        build("Bad Id", std::path::Path::new(ESCAPE)),
        Err(ConfigError::InvalidSolverId(_))
    ));
    let e = SolverRegistry::builder()
        .solver("a", ESCAPE)
        .solver("a", ESCAPE)
        .build()
        .unwrap_err();
    assert_eq!(e, ConfigError::DuplicateSolver("a".into()));
}

#[test]
fn more_made_ahead_than_the_ceiling_refuses_to_start() {
    let with = |made_ahead| {
        hardened_mcp::sandbox::Sandbox::new(
            registry(),
            SandboxConfig {
                made_ahead,
                ..SandboxConfig::default()
            },
        )
    };
    assert_eq!(
        with(MAX_MADE_AHEAD + 1).unwrap_err(),
        ConfigError::InvalidLimit("made_ahead")
    );
    assert!(with(MAX_MADE_AHEAD).is_ok());
    assert!(with(0).is_ok());
}

#[test]
fn demanding_more_than_the_host_offers_refuses_to_start() {
    let e = hardened_mcp::sandbox::Sandbox::new(
        registry(),
        SandboxConfig {
            allow_pid_namespace: false,
            require: Requirements {
                tree_kill: TreeKill::PidNamespace,
                ..Requirements::none()
            },
            ..SandboxConfig::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(e, ConfigError::ContainmentUnavailable { .. }),
        "{e}"
    );
    let e = hardened_mcp::sandbox::Sandbox::new(
        registry(),
        SandboxConfig {
            require: Requirements {
                landlock_abi: 1000,
                ..Requirements::none()
            },
            ..SandboxConfig::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(e, ConfigError::LandlockUnavailable { required: 1000, .. }),
        "{e}"
    );
}

#[tokio::test]
async fn launch_errors_are_fixed_texts() {
    let sb = sandbox();
    let (_dir, rundir) = run_dir();
    let c = caller("cfg");
    let t = CancellationToken::new();
    let unknown = sb
        .run(&c, &rundir, RunRequest::new("../../bin/sh"), &t)
        .await
        .unwrap_err();
    assert_eq!(unknown, SandboxError::UnknownSolver);
    assert_eq!(unknown.to_string(), "unknown solver");
    let too_long = Limits {
        wall_time: std::time::Duration::from_secs(100_000),
        ..Limits::default()
    };
    let e = sb
        .run(&c, &rundir, RunRequest::new("escape").limits(too_long), &t)
        .await
        .unwrap_err();
    assert_eq!(e, SandboxError::LimitOutOfBounds);
    let e = sb
        .run(&c, &rundir, RunRequest::new("escape").arg("a\0b"), &t)
        .await
        .unwrap_err();
    assert_eq!(e, SandboxError::InvalidArgument);
    // A descriptor that is not a run directory (a regular file, a directory
    // outside the run root) no longer reaches `launch`: it takes a `RunDir`,
    // which only the run root hands out (see the `compile_fail` example on
    // `Sandbox::launch`).
    assert_eq!(
        sb.limiter().in_use(),
        0,
        "failed launches return their slot"
    );
}

/// A run removed after it was resolved (another tool deleted it while this
/// one still held its `RunDir`) is refused with a fixed error, with and
/// without a write subdirectory, and the slot is returned.
#[tokio::test]
async fn a_run_dir_removed_before_launch_is_refused() {
    let sb = sandbox();
    let (path, rundir) = run_dir();
    let held = rundir.try_clone().unwrap();
    rundir.remove().unwrap();
    assert!(!path.path().exists(), "the run is gone");
    let c = caller("cfg");
    let t = CancellationToken::new();
    let requests = [
        RunRequest::new("escape").args(["exit", "0"]),
        RunRequest::new("escape")
            .args(["exit", "0"])
            .write_only_in(hardened_mcp::runs::FileName::fixed("out")),
    ];
    for request in requests {
        let e = sb.run(&c, &held, request, &t).await.unwrap_err();
        assert_eq!(e, SandboxError::RunDirUnusable);
        assert_eq!(e.to_string(), "the run directory cannot be used");
    }
    assert_eq!(sb.limiter().in_use(), 0);
    // Control: the same request in a live run directory succeeds.
    let (_live, live) = run_dir();
    let o = sb
        .run(&c, &live, RunRequest::new("escape").args(["exit", "0"]), &t)
        .await
        .unwrap();
    assert!(o.success(), "{o:?}");
}

#[tokio::test]
async fn a_solver_replaced_after_start_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = copy_with_mode(dir.path(), 0o755);
    let sb =
        hardened_mcp::sandbox::Sandbox::new(build("heat", &p).unwrap(), SandboxConfig::default())
            .unwrap();
    std::fs::remove_file(&p).unwrap();
    std::fs::copy(ESCAPE, &p).unwrap();
    let (_run, rundir) = run_dir();
    let e = sb
        .run(
            &caller("x"),
            &rundir,
            RunRequest::new("heat"),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(e, SandboxError::SolverChanged);
}

#[tokio::test]
async fn an_exec_failure_is_a_fixed_error_and_returns_the_slot() {
    let dir = tempfile::tempdir().unwrap();
    let p = copy_with_mode(dir.path(), 0o755);
    let sb =
        hardened_mcp::sandbox::Sandbox::new(build("heat", &p).unwrap(), SandboxConfig::default())
            .unwrap();
    // Same inode, still not writable by others, but no longer executable.
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (_run, rundir) = run_dir();
    let t0 = std::time::Instant::now();
    let e = sb
        .run(
            &caller("x"),
            &rundir,
            RunRequest::new("heat"),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(e, SandboxError::SpawnFailed);
    assert_eq!(e.to_string(), "the solver could not be started");
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(sb.limiter().in_use(), 0);
}

/// A directory outside /tmp and /work (read grants within either are
/// refused: the view has its own), private to this test.
fn private_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp").unwrap()
}

fn write_exec(path: &std::path::Path, body: &[u8]) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn a_script_whose_interpreter_is_outside_the_view_is_refused_at_start() {
    use hardened_mcp::sandbox::{Sandbox, Unrunnable};
    let dir = private_dir();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let interp = bin.join("interp");
    std::fs::copy("/usr/bin/true", &interp).unwrap();
    let script = dir.path().join("solve");
    write_exec(
        &script,
        format!("#!{} --flag\n", interp.display()).as_bytes(),
    );

    // Without a grant the view shows no interpreter: refused at start, the
    // text naming the interpreter and the fix.
    let registry = SolverRegistry::builder()
        .solver("solve", &script)
        .build()
        .unwrap();
    let e = Sandbox::new(registry, SandboxConfig::default()).unwrap_err();
    match &e {
        ConfigError::NotRunnable {
            id,
            why: Unrunnable::OutsideView { interpreter, .. },
        } => {
            assert_eq!(id, "solve");
            assert_eq!(interpreter, &interp);
        }
        other => panic!("{other:?}"),
    }
    let text = e.to_string();
    assert!(text.contains(&interp.display().to_string()), "{text}");
    assert!(text.contains("grant_read"), "{text}");

    // Positive control: the same script with its interpreter's directory
    // granted starts, and runs in the view to a clean exit.
    let registry = SolverRegistry::builder()
        .solver("solve", &script)
        .grant_read("solve", &bin)
        .build()
        .unwrap();
    let sb = Sandbox::new(registry, SandboxConfig::default()).unwrap();
    let (_run, rundir) = run_dir();
    let o = sb
        .run(
            &caller("x"),
            &rundir,
            RunRequest::new("solve"),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(o.success(), "{o:?}");
}

#[test]
fn a_script_run_through_env_is_refused_at_start() {
    use hardened_mcp::sandbox::{Sandbox, Unrunnable};
    let dir = private_dir();
    let script = dir.path().join("shim");
    // What a pyenv or conda shim starts with.
    write_exec(&script, b"#!/usr/bin/env bash\nexec python3 \"$@\"\n");
    let registry = SolverRegistry::builder()
        .solver("shim", &script)
        .build()
        .unwrap();
    let e = Sandbox::new(registry, SandboxConfig::default()).unwrap_err();
    assert!(
        matches!(
            &e,
            ConfigError::NotRunnable {
                why: Unrunnable::EnvInterpreter { .. },
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("#!/usr/bin/python3.11"), "{e}");
}

#[test]
fn a_read_grant_within_tmp_is_refused_naming_path_and_rule() {
    use hardened_mcp::sandbox::ReadPathRule;
    let dir = tempfile::tempdir().unwrap();
    let p = copy_with_mode(dir.path(), 0o755);
    let grant = std::path::Path::new("/tmp/poisson-solver");
    let e = SolverRegistry::builder()
        .solver("poisson", &p)
        .grant_read("poisson", grant)
        .build()
        .unwrap_err();
    assert_eq!(
        e,
        ConfigError::ReadPathRefused {
            path: grant.to_path_buf(),
            rule: ReadPathRule::Within("/tmp"),
        }
    );
    let text = e.to_string();
    assert!(text.contains("`/tmp/poisson-solver`"), "{text}");
    assert!(text.contains("within /tmp"), "{text}");
    // Positive control: the same grant outside /tmp is taken.
    let ok = private_dir();
    SolverRegistry::builder()
        .solver("poisson", &p)
        .grant_read("poisson", ok.path())
        .build()
        .unwrap();
}

/// An interpreter registered as the solver finds itself in the view:
/// `argv[0]` is its path there, so Python's `sys.executable` (which
/// `multiprocessing` and `subprocess` re-exec) is a file the view has.
#[tokio::test]
async fn an_interpreter_in_the_view_knows_its_own_executable() {
    use hardened_mcp::sandbox::{Sandbox, VIEW_SOLVER_DIR};
    const PYTHON: &str = "/usr/bin/python3.11";
    if !std::path::Path::new(PYTHON).is_file() {
        eprintln!("no {PYTHON}: skipped");
        return;
    }
    let registry = SolverRegistry::builder()
        .solver("python", PYTHON)
        .build()
        .unwrap();
    let sb = Sandbox::new(registry, SandboxConfig::default()).unwrap();
    let (_run, rundir) = run_dir();
    let script = "import os, sys, subprocess; print(sys.executable); \
                  print(os.path.exists(sys.executable)); \
                  print(subprocess.run([sys.executable, '-c', 'print(7)'], capture_output=True).stdout.decode().strip())";
    let o = sb
        .run(
            &caller("x"),
            &rundir,
            RunRequest::new("python").args(["-I", "-c", script]),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(o.success(), "{o:?}");
    let out = String::from_utf8_lossy(o.stdout.head.as_untrusted_bytes()).into_owned();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [format!("{VIEW_SOLVER_DIR}/python").as_str(), "True", "7"],
        "{out}"
    );
}
