//! Unit tests of the run root. The adversarial matrix, the race and the
//! disk-full tests live in the `hardened-mcp-tests` crate (`runs_*`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};

use super::*;
use crate::identity::CallerId;

const DATA: FileName = FileName::fixed("data.txt");

fn caller(name: &str) -> CallerId {
    CallerId::new(name).unwrap()
}

fn fresh() -> (tempfile::TempDir, PathBuf, RunRoot) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("runs");
    let root = RunRoot::open(&path).unwrap();
    (tmp, path, root)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<RunRoot>();
    check::<RunDir>();
    check::<RunHandle>();
    check::<RunError>();
}

#[test]
fn open_creates_private_root() {
    let (_tmp, path, _root) = fresh();
    let meta = fs::symlink_metadata(&path).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
}

#[test]
fn open_refuses_bad_roots() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    RunRoot::open(&real).unwrap();

    let link = tmp.path().join("link");
    symlink(&real, &link).unwrap();
    assert_eq!(
        RunRoot::open(&link).err(),
        Some(RunError::InvalidRoot(RootProblem::Symlink))
    );

    let mut trailing = link.clone().into_os_string();
    trailing.push("/");
    assert_eq!(
        RunRoot::open(&trailing).err(),
        Some(RunError::InvalidRoot(RootProblem::Symlink))
    );
    let mut dotted = link.clone().into_os_string();
    dotted.push("/.");
    assert_eq!(
        RunRoot::open(&dotted).err(),
        Some(RunError::InvalidRoot(RootProblem::Symlink))
    );

    let file = tmp.path().join("file");
    fs::write(&file, b"x").unwrap();
    assert_eq!(
        RunRoot::open(&file).err(),
        Some(RunError::InvalidRoot(RootProblem::NotDirectory))
    );

    let open = tmp.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o750)).unwrap();
    assert_eq!(
        RunRoot::open(&open).err(),
        Some(RunError::InvalidRoot(RootProblem::Permissions))
    );

    let missing_parent = tmp.path().join("no/such/dir");
    assert_eq!(
        RunRoot::open(&missing_parent).err(),
        Some(RunError::InvalidRoot(RootProblem::Unavailable))
    );
}

#[test]
fn open_refuses_foreign_owned_root() {
    if rustix::process::geteuid().as_raw() != 0 {
        return; // only root can hand a directory to another user
    }
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    fs::set_permissions(&other, fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&other, Some(65534), None).unwrap();
    assert_eq!(
        RunRoot::open(&other).err(),
        Some(RunError::InvalidRoot(RootProblem::NotOwned))
    );
}

#[test]
fn create_then_resolve_round_trip() {
    let (_tmp, path, root) = fresh();
    let alice = caller("alice");
    let (handle, run) = root.create(&alice).unwrap();
    assert!(handle.as_str().starts_with("run_"));
    assert_eq!(run.handle(), &handle);
    run.write_atomic(&DATA, b"hello").unwrap();

    let again = root.resolve(handle.as_str(), &alice).unwrap();
    assert_eq!(again.read_bounded(&DATA, 5).unwrap(), b"hello");

    let dir = path.join(handle.as_str());
    let meta = fs::symlink_metadata(&dir).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    let data = fs::symlink_metadata(dir.join("data.txt")).unwrap();
    assert_eq!(data.permissions().mode() & 0o777, 0o600);
    assert_eq!(names_in(&dir), [".owner", "data.txt"]);
}

#[test]
fn custom_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let root =
        RunRoot::open_with(tmp.path().join("r"), HandlePrefix::new("heat").unwrap()).unwrap();
    let (handle, _) = root.create(&caller("a")).unwrap();
    assert!(handle.as_str().starts_with("heat_"));
    assert_eq!(root.handle_pattern(), "^heat_[A-Za-z0-9_-]{22,80}$");
    let run_style = format!("run_{}", &handle.as_str()[5..]);
    assert_eq!(
        root.resolve(&run_style, &caller("a")).err(),
        Some(RunError::UnknownRun)
    );
}

#[test]
fn foreign_unknown_and_deleted_are_one_answer() {
    let (_tmp, _path, root) = fresh();
    let alice = caller("alice");
    let (handle, run) = root.create(&alice).unwrap();
    let unknown = format!("run_{}", "Q".repeat(22));
    assert_eq!(
        root.resolve(handle.as_str(), &caller("bob")).err(),
        Some(RunError::UnknownRun)
    );
    assert_eq!(
        root.resolve(&unknown, &alice).err(),
        Some(RunError::UnknownRun)
    );
    run.remove().unwrap();
    assert_eq!(
        root.resolve(handle.as_str(), &alice).err(),
        Some(RunError::UnknownRun)
    );
}

#[test]
fn write_atomic_replaces_and_leaves_no_temp() {
    let (_tmp, path, root) = fresh();
    let (handle, run) = root.create(&caller("a")).unwrap();
    run.write_atomic(&DATA, b"one").unwrap();
    run.write_atomic(&DATA, b"two two").unwrap();
    assert_eq!(run.read_bounded(&DATA, 100).unwrap(), b"two two");
    assert_eq!(
        names_in(&path.join(handle.as_str())),
        [".owner", "data.txt"]
    );
}

#[test]
fn read_bounded_refuses_rather_than_cuts() {
    let (_tmp, _path, root) = fresh();
    let (_, run) = root.create(&caller("a")).unwrap();
    run.write_atomic(&DATA, b"12345").unwrap();
    assert_eq!(run.read_bounded(&DATA, 5).unwrap(), b"12345");
    assert_eq!(run.read_bounded(&DATA, 4).err(), Some(RunError::TooLarge));
    let missing = FileName::new("missing").unwrap();
    assert_eq!(
        run.read_bounded(&missing, 4).err(),
        Some(RunError::FileNotFound)
    );
}

#[test]
fn file_checks_refuse_links_and_dirs() {
    let (tmp, path, root) = fresh();
    let (handle, run) = root.create(&caller("a")).unwrap();
    let dir = path.join(handle.as_str());
    let outside = tmp.path().join("outside.txt");
    fs::write(&outside, b"secret").unwrap();

    symlink(&outside, dir.join("sym")).unwrap();
    fs::hard_link(&outside, dir.join("hard")).unwrap();
    fs::create_dir(dir.join("sub")).unwrap();
    for n in ["sym", "hard", "sub"] {
        let name = FileName::new(n).unwrap();
        assert_eq!(
            run.read_bounded(&name, 100).err(),
            Some(RunError::FileRefused),
            "{n}"
        );
        assert_eq!(
            run.tail_lines(&name, 1, 100).err(),
            Some(RunError::FileRefused),
            "{n}"
        );
        assert_eq!(
            run.write_atomic(&name, b"x").err(),
            Some(RunError::FileRefused),
            "{n}"
        );
    }
    assert_eq!(fs::read(&outside).unwrap(), b"secret");
    assert_eq!(names_in(&dir), [".owner", "hard", "sub", "sym"]);
}

#[test]
fn create_new_is_exclusive_and_private() {
    let (tmp, path, root) = fresh();
    let (handle, run) = root.create(&caller("a")).unwrap();
    let log = FileName::new("solver.log").unwrap();
    drop(run.create_new(&log).unwrap());
    assert_eq!(run.create_new(&log).err(), Some(RunError::FileExists));
    let mode = fs::metadata(path.join(handle.as_str()).join("solver.log")).unwrap();
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);

    // A planted dangling symlink is not followed to create its target.
    let target = tmp.path().join("created-through-link");
    symlink(&target, path.join(handle.as_str()).join("planted")).unwrap();
    let planted = FileName::new("planted").unwrap();
    assert_eq!(run.create_new(&planted).err(), Some(RunError::FileExists));
    assert!(!target.exists());
}

#[test]
fn remove_unlinks_links_without_following() {
    let (tmp, path, root) = fresh();
    let (handle, run) = root.create(&caller("a")).unwrap();
    let dir = path.join(handle.as_str());
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("keep.txt"), b"keep").unwrap();
    symlink(&outside, dir.join("dirlink")).unwrap();
    symlink(outside.join("keep.txt"), dir.join("filelink")).unwrap();
    fs::create_dir_all(dir.join("a/b/c")).unwrap();
    fs::write(dir.join("a/b/c/deep.txt"), b"x").unwrap();
    symlink(&outside, dir.join("a/b/inner-link")).unwrap();
    // positive control: the outside file is reachable through the links
    assert_eq!(fs::read(dir.join("dirlink/keep.txt")).unwrap(), b"keep");

    run.remove().unwrap();
    assert_eq!(names_in(&path), [".index", ".key"]);
    assert_eq!(names_in(&outside), ["keep.txt"]);
    assert_eq!(fs::read(outside.join("keep.txt")).unwrap(), b"keep");
}

#[test]
fn remove_refuses_when_entry_was_replaced() {
    let (tmp, path, root) = fresh();
    let (handle, run) = root.create(&caller("a")).unwrap();
    let dir = path.join(handle.as_str());
    let moved = path.join(".elsewhere");
    fs::rename(&dir, &moved).unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("keep.txt"), b"keep").unwrap();
    symlink(&outside, &dir).unwrap();

    assert_eq!(run.remove().err(), Some(RunError::UnknownRun));
    assert!(fs::symlink_metadata(&dir).unwrap().file_type().is_symlink());
    assert_eq!(names_in(&outside), ["keep.txt"]);
    assert_eq!(names_in(&moved), [".owner"]);
}

#[test]
fn run_dir_follows_the_directory_not_the_name() {
    let (_tmp, path, root) = fresh();
    let (handle, run) = root.create(&caller("a")).unwrap();
    let moved = path.join(".moved");
    fs::rename(path.join(handle.as_str()), &moved).unwrap();
    run.write_atomic(&DATA, b"still here").unwrap();
    assert_eq!(fs::read(moved.join("data.txt")).unwrap(), b"still here");
}

#[test]
fn list_shows_only_own_runs() {
    let (_tmp, path, root) = fresh();
    let (a, b) = (caller("alice"), caller("bob"));
    let mut mine = vec![root.create(&a).unwrap().0, root.create(&a).unwrap().0];
    let (theirs, _) = root.create(&b).unwrap();
    mine.sort();
    fs::create_dir(path.join(".not-a-run")).unwrap();
    assert_eq!(root.list(&a).unwrap(), mine);
    assert_eq!(root.list(&b).unwrap(), [theirs]);
    assert_eq!(root.list_bounded(&a, 1).unwrap(), mine[..1]);
    assert!(root.list(&caller("carol")).unwrap().is_empty());
}

#[test]
fn tampered_owner_record_is_unknown() {
    let (_tmp, path, root) = fresh();
    let a = caller("alice");
    let (handle, _run) = root.create(&a).unwrap();
    let record = path.join(handle.as_str()).join(".owner");
    fs::remove_file(&record).unwrap();
    assert_eq!(
        root.resolve(handle.as_str(), &a).err(),
        Some(RunError::UnknownRun)
    );
    fs::write(&record, vec![b'x'; 4096]).unwrap();
    assert_eq!(
        root.resolve(handle.as_str(), &a).err(),
        Some(RunError::UnknownRun)
    );
}

#[test]
fn run_dir_with_loose_mode_is_unknown() {
    let (_tmp, path, root) = fresh();
    let a = caller("alice");
    let (handle, _run) = root.create(&a).unwrap();
    let dir = path.join(handle.as_str());
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        root.resolve(handle.as_str(), &a).err(),
        Some(RunError::UnknownRun)
    );
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    assert!(root.resolve(handle.as_str(), &a).is_ok());
}

#[test]
fn open_sweeps_tombstones() {
    let (_tmp, path, root) = fresh();
    let tomb = path.join(".tomb-leftover");
    fs::create_dir_all(tomb.join("x/y")).unwrap();
    fs::write(tomb.join("x/y/z"), b"1").unwrap();
    drop(root);
    // A fresh tombstone may be another opener's work in progress: kept.
    let _root = RunRoot::open(&path).unwrap();
    assert_eq!(names_in(&path), [".index", ".key", ".tomb-leftover"]);
    // Once it is old enough to be a crash's leftover, it goes.
    let dir = fs::File::open(&path).unwrap();
    super::root::sweep_tombstones(std::os::fd::AsFd::as_fd(&dir), std::time::Duration::ZERO);
    assert_eq!(names_in(&path), [".index", ".key"]);
}

#[test]
fn try_clone_and_remove_file() {
    let (_tmp, _path, root) = fresh();
    let (_, run) = root.create(&caller("a")).unwrap();
    let twin = run.try_clone().unwrap();
    twin.write_atomic(&DATA, b"z").unwrap();
    assert_eq!(run.read_bounded(&DATA, 1).unwrap(), b"z");
    run.remove_file(&DATA).unwrap();
    assert_eq!(twin.remove_file(&DATA).err(), Some(RunError::FileNotFound));
}

#[test]
fn remove_handles_trees_deeper_than_the_descent_limit() {
    let (_tmp, path, root) = fresh();
    let (handle, run) = root.create(&caller("a")).unwrap();
    let mut deep = path.join(handle.as_str());
    for i in 0..150 {
        deep.push(format!("d{i}"));
    }
    fs::create_dir_all(&deep).unwrap();
    fs::write(deep.join("bottom.txt"), b"x").unwrap();
    run.remove().unwrap();
    assert_eq!(names_in(&path), [".index", ".key"]);
}

#[test]
fn fifo_is_refused_without_blocking() {
    let (_tmp, path, root) = fresh();
    let (handle, run) = root.create(&caller("a")).unwrap();
    let dir = fs::File::open(path.join(handle.as_str())).unwrap();
    rustix::fs::mknodat(
        &dir,
        "pipe",
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    let pipe = FileName::new("pipe").unwrap();
    assert_eq!(
        run.read_bounded(&pipe, 10).err(),
        Some(RunError::FileRefused)
    );
    assert_eq!(
        run.tail_lines(&pipe, 1, 10).err(),
        Some(RunError::FileRefused)
    );
    assert_eq!(
        run.write_atomic(&pipe, b"x").err(),
        Some(RunError::FileRefused)
    );
    run.remove().unwrap();
    assert_eq!(names_in(&path), [".index", ".key"]);
}

#[test]
fn files_lists_plain_files_only() {
    let (tmp, path, root) = fresh();
    let (handle, run) = root.create(&caller("a")).unwrap();
    let dir = path.join(handle.as_str());
    run.write_atomic(&FileName::new("b.txt").unwrap(), b"b")
        .unwrap();
    run.write_atomic(&DATA, b"d").unwrap();
    let outside = tmp.path().join("o");
    fs::write(&outside, b"o").unwrap();
    symlink(&outside, dir.join("link")).unwrap();
    fs::hard_link(&outside, dir.join("hard")).unwrap();
    fs::create_dir(dir.join("sub")).unwrap();
    fs::write(dir.join(".hidden"), b"h").unwrap();
    let names: Vec<String> = run
        .files(10)
        .unwrap()
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert_eq!(names, ["b.txt", "data.txt"]);
    assert_eq!(run.files(1).unwrap().len(), 1);
}

#[test]
fn owner_records_cannot_be_forged_or_moved() {
    let (_tmp, path, root) = fresh();
    let (a, b) = (caller("alice"), caller("bob"));
    let (ha, _) = root.create(&a).unwrap();
    let (ha2, _) = root.create(&a).unwrap();
    let (hb, _) = root.create(&b).unwrap();
    let record = |h: &RunHandle| path.join(h.as_str()).join(".owner");

    // A record moved from another run of the same owner does not verify.
    fs::copy(record(&ha2), record(&ha)).unwrap();
    assert_eq!(
        root.resolve(ha.as_str(), &a).err(),
        Some(RunError::UnknownRun)
    );

    // Nor does bob's record copied into alice's run, for bob or alice.
    let (hc, _) = root.create(&a).unwrap();
    fs::copy(record(&hb), record(&hc)).unwrap();
    assert_eq!(
        root.resolve(hc.as_str(), &b).err(),
        Some(RunError::UnknownRun)
    );
    assert_eq!(
        root.resolve(hc.as_str(), &a).err(),
        Some(RunError::UnknownRun)
    );

    // A record rewritten to name bob, with a made-up MAC, does not verify.
    let forged = fs::read(record(&ha2)).unwrap();
    let text = String::from_utf8(forged)
        .unwrap()
        .replace("\nalice\n", "\nbob\n");
    fs::write(record(&ha2), text).unwrap();
    assert_eq!(
        root.resolve(ha2.as_str(), &b).err(),
        Some(RunError::UnknownRun)
    );

    // Positive control: an untouched record still verifies.
    assert!(root.resolve(hb.as_str(), &b).is_ok());
}

#[test]
fn records_survive_reopening_the_root() {
    let (_tmp, path, root) = fresh();
    let a = caller("alice");
    let (h, _) = root.create(&a).unwrap();
    drop(root);
    let again = RunRoot::open(&path).unwrap();
    assert!(again.resolve(h.as_str(), &a).is_ok());
}

#[test]
fn unusable_key_file_refuses_the_root() {
    let (_tmp, path, root) = fresh();
    drop(root);
    fs::write(path.join(".key"), b"too short").unwrap();
    assert_eq!(
        RunRoot::open(&path).err(),
        Some(RunError::InvalidRoot(RootProblem::KeyUnusable))
    );
    fs::remove_file(path.join(".key")).unwrap();
    symlink("/dev/zero", path.join(".key")).unwrap();
    assert_eq!(
        RunRoot::open(&path).err(),
        Some(RunError::InvalidRoot(RootProblem::KeyUnusable))
    );
}

mod props {
    use std::sync::LazyLock;

    use proptest::prelude::*;

    use super::*;

    /// One root for all cases, holding one real run.
    static SHARED: LazyLock<(tempfile::TempDir, RunRoot)> = LazyLock::new(|| {
        let (tmp, _path, root) = fresh();
        root.create(&caller("alice")).unwrap();
        (tmp, root)
    });

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Arbitrary text never resolves, never panics, always gets the one
        /// answer.
        #[test]
        fn arbitrary_handles_are_unknown(text in any::<String>(), tail in "[A-Za-z0-9_./\\\\-]{0,90}") {
            let root = &SHARED.1;
            let a = caller("alice");
            for candidate in [text.clone(), format!("run_{tail}"), format!("run_{text}")] {
                prop_assert_eq!(root.resolve(&candidate, &a).err(), Some(RunError::UnknownRun));
            }
        }

        /// Every accepted file name is one harmless path component.
        #[test]
        fn accepted_file_names_are_single_plain_components(text in "[ -~]{0,70}|\\PC{0,10}") {
            if let Ok(name) = FileName::new(&text) {
                let s = name.as_str();
                prop_assert!(!s.is_empty() && s.len() <= MAX_FILE_NAME_LEN);
                prop_assert!(!s.contains('/') && !s.contains("..") && !s.starts_with(['.', '-']));
                prop_assert!(s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)));
            }
        }
    }
}

#[test]
fn an_attached_opener_never_creates_repairs_or_sweeps_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing");
    assert!(matches!(
        RunRoot::attach(&missing, HandlePrefix::default()),
        Err(RunError::InvalidRoot(_))
    ));
    assert!(!missing.exists(), "the root was created");
    // A root a server made: runs resolve; a leftover stays for the servers.
    let (_tmp, path, root) = fresh();
    let (handle, _) = root.create(&caller("a")).unwrap();
    fs::create_dir(path.join(".tomb-leftover")).unwrap();
    let attached = RunRoot::attach(&path, HandlePrefix::default()).unwrap();
    attached.resolve(handle.as_str(), &caller("a")).unwrap();
    assert!(path.join(".tomb-leftover").exists());
    // Without its index or key, the root is refused, not rebuilt.
    fs::remove_dir_all(path.join(".index")).unwrap();
    assert!(RunRoot::attach(&path, HandlePrefix::default()).is_err());
    assert!(!path.join(".index").exists(), "the index was rebuilt");
    RunRoot::open(&path).unwrap();
    fs::remove_file(path.join(".key")).unwrap();
    assert_eq!(
        RunRoot::attach(&path, HandlePrefix::default()).err(),
        Some(RunError::InvalidRoot(RootProblem::KeyUnusable))
    );
    assert!(!path.join(".key").exists(), "the key was created");
}
