//! Launches from premade inits (`Sandbox::make_ahead`): when a sandbox has
//! them, that a launch finds its run directory by the descriptor the
//! server resolved and never by a name that now leads elsewhere, and that
//! what was made ahead goes with the sandbox. The attack suites run on this
//! path in their `*_premade` twins.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_support/mod.rs"]
mod support;

use hardened_mcp::runs::RunDir;
use hardened_mcp::sandbox::{Requirements, RunRequest, SandboxConfig, Termination, VIEW_RUN_DIR};
use support::*;
use tokio_util::sync::CancellationToken;

/// The tests of this file fork and count the process's children: one at a
/// time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn premade_inits_need_the_view_at_the_whole_tree_level_and_made_ahead() {
    let _serial = SERIAL.lock().await;
    let (_path, dir) = run_dir();
    let root = dir.root();
    // The positive control: the default has them.
    assert!(sandbox().make_ahead("escape", &root));
    assert!(!sandbox().make_ahead("no-such-solver", &root));
    let none_ahead = sandbox_with(SandboxConfig {
        made_ahead: 0,
        ..SandboxConfig::default()
    });
    assert!(!none_ahead.make_ahead("escape", &root));
    let process_group = sandbox_with(SandboxConfig {
        allow_pid_namespace: false,
        allow_cgroups: false,
        require: Requirements::none(),
        ..SandboxConfig::default()
    });
    assert!(!process_group.make_ahead("escape", &root));
    // Both still launch, the ordinary way.
    for sb in [none_ahead, process_group] {
        let run =
            sb.0.launch(
                &caller("a"),
                &dir,
                RunRequest::new("escape").args(["exit", "0"]),
                &CancellationToken::new(),
            )
            .unwrap();
        assert!(!run.premade());
        assert_eq!(run.wait().await.termination, Termination::Exited(0));
    }
}

/// A premade init opens the run directory by its name beneath the run
/// root and checks it against the server's (device and inode). Moved away,
/// with another directory put at its name, the launch must still run in
/// the directory the server resolved (the ordinary path, by descriptor),
/// never in the one now at the name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_premade_launch_runs_in_the_resolved_directory_not_the_one_at_its_name() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let marker = format!("{VIEW_RUN_DIR}/marker");
    // Launched on the sandbox itself: no check of the path taken.
    let launch = |dir: &RunDir| {
        let request = RunRequest::new("escape").args(["write", &marker]);
        let cancel = CancellationToken::new();
        sb.0.launch(&caller("a"), dir, request, &cancel).unwrap()
    };

    // The positive control: untouched, the launch is premade and writes
    // into its run directory.
    let (path, dir) = run_dir();
    assert!(sb.0.make_ahead("escape", &dir.root()));
    let run = launch(&dir);
    assert!(run.premade(), "the control did not take the premade path");
    assert_eq!(run.wait().await.termination, Termination::Exited(0));
    assert!(path.path().join("marker").is_file());

    let (path, dir) = run_dir();
    assert!(sb.0.make_ahead("escape", &dir.root()));
    let moved = path.path().with_extension("moved");
    std::fs::rename(path.path(), &moved).unwrap();
    std::fs::create_dir(path.path()).unwrap();
    let run = launch(&dir);
    assert!(!run.premade(), "launched in the directory now at the name");
    assert_eq!(run.wait().await.termination, Termination::Exited(0));
    assert!(
        moved.join("marker").is_file(),
        "not run in its own directory"
    );
    assert!(!path.path().join("marker").exists(), "run in the decoy");
}

/// The pids of this process's children.
fn children() -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        out.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    out
}

/// The premade inits' monitors among this process's children: those whose
/// working directory is the run root `root` (a monitor's stays there; the
/// pools' other helpers are short-lived and elsewhere).
fn monitors_under(root: &std::path::Path) -> Vec<u32> {
    children()
        .into_iter()
        .filter(|p| std::fs::read_link(format!("/proc/{p}/cwd")).is_ok_and(|c| c == root))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_sandbox_leaves_no_premade_init_behind() {
    let _serial = SERIAL.lock().await;
    let (path, dir) = run_dir();
    let root = path.path().parent().unwrap().to_path_buf();
    let sb = sandbox();
    assert!(monitors_under(&root).is_empty());
    assert!(sb.make_ahead("escape", &dir.root()));
    let made = monitors_under(&root);
    // The positive control: the premade inits' monitors are children here.
    assert!(!made.is_empty(), "no premade init among the children");
    drop(sb);
    let left: Vec<u32> = made.into_iter().filter(|&p| pid_exists(p)).collect();
    assert!(left.is_empty(), "left behind (or unreaped): {left:?}");
}

/// The pool of a run root removed since holds premade inits that can never
/// be used: the next pair to start a pool ends them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_of_a_removed_run_root_is_ended() {
    let _serial = SERIAL.lock().await;
    let sb = sandbox();
    let (gone_path, gone_dir) = run_dir();
    let gone_root = gone_path.path().parent().unwrap().to_path_buf();
    assert!(sb.make_ahead("escape", &gone_dir.root()));
    let made = monitors_under(&gone_root);
    assert!(!made.is_empty(), "no premade init among the children");
    let (_kept_path, kept_dir) = run_dir();
    // The control: while its run root exists, another pair's pool leaves
    // the first alone.
    assert!(sb.make_ahead("forker", &gone_dir.root()));
    assert!(
        made.iter().all(|&p| pid_exists(p)),
        "ended while its root lives"
    );
    drop(gone_path);
    assert!(sb.make_ahead("escape", &kept_dir.root()));
    let left: Vec<u32> = made.into_iter().filter(|&p| pid_exists(p)).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
