//! The run root's boundary: every read, write and delete operation against
//! malformed, hostile, unknown, foreign, deleted and planted handles and
//! files. Each case asserts the fixed error, and that nothing outside the
//! root (and nothing inside it) changed; planted links get a positive
//! control showing their target is reachable when not confined.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt as _, symlink};
use std::path::{Path, PathBuf};

use hardened_mcp::CallerId;
use hardened_mcp::runs::{FileName, RunError, RunHandle, RunRoot};

const DATA: FileName = FileName::fixed("data.txt");
const SECRET: &[u8] = b"OUTSIDE-SECRET-7Hq2 must never be read through the run root\n";

/// The state of a tree, read without following links: kind, content or
/// link target, inode and link count, per relative path.
type Snapshot = BTreeMap<PathBuf, String>;

fn snapshot(dir: &Path) -> Snapshot {
    fn walk(base: &Path, dir: &Path, out: &mut Snapshot) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(base).unwrap().to_path_buf();
            let ft = meta.file_type();
            let desc = if ft.is_symlink() {
                format!("link -> {:?}", fs::read_link(&path).unwrap())
            } else if ft.is_dir() {
                walk(base, &path, out);
                format!("dir mode {:o}", meta.mode())
            } else {
                format!(
                    "file ino {} nlink {} mode {:o} {:?}",
                    meta.ino(),
                    meta.nlink(),
                    meta.mode(),
                    fs::read(&path).unwrap()
                )
            };
            out.insert(rel, desc);
        }
    }
    let mut out = Snapshot::new();
    walk(dir, dir, &mut out);
    out
}

/// A temporary world: the run root with one run of alice's, and an outside
/// directory holding a secret (and a copy of that run's owner record).
struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root_path: PathBuf,
    outside: PathBuf,
    root: RunRoot,
    alice: CallerId,
    bob: CallerId,
    handle: RunHandle,
}

impl World {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().to_path_buf();
        let root_path = base.join("root");
        let outside = base.join("outside");
        let root = RunRoot::open(&root_path).unwrap();
        let alice = CallerId::new("alice").unwrap();
        let bob = CallerId::new("bob").unwrap();
        let (handle, run) = root.create(&alice).unwrap();
        run.write_atomic(&DATA, b"alice's data\n").unwrap();
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("secret.txt"), SECRET).unwrap();
        fs::write(outside.join("data.txt"), SECRET).unwrap();
        fs::copy(
            root_path.join(handle.as_str()).join(".owner"),
            outside.join(".owner"),
        )
        .unwrap();
        Self {
            _tmp: tmp,
            base,
            root_path,
            outside,
            root,
            alice,
            bob,
            handle,
        }
    }

    fn run_path(&self) -> PathBuf {
        self.root_path.join(self.handle.as_str())
    }

    /// A well-formed handle that names no run.
    fn unknown_handle(&self) -> String {
        format!("run_{}", "AbCdEfGhIjKlMnOpQrStUv")
    }
}

/// Every operation that takes a handle, as a tool would perform it.
#[derive(Debug, Clone, Copy)]
enum Op {
    Resolve,
    ReadBounded,
    TailLines,
    WriteAtomic,
    CreateNew,
    RemoveFile,
    Remove,
}

const OPS: [Op; 7] = [
    Op::Resolve,
    Op::ReadBounded,
    Op::TailLines,
    Op::WriteAtomic,
    Op::CreateNew,
    Op::RemoveFile,
    Op::Remove,
];

/// Performs `op` on the run `handle` names for `owner`. Returns what the
/// operation read (if anything) so the caller can check no secret leaked.
fn attempt(root: &RunRoot, op: Op, handle: &str, owner: &CallerId) -> Result<Vec<u8>, RunError> {
    let run = root.resolve(handle, owner)?;
    let fresh = FileName::new("fresh.txt").unwrap();
    match op {
        Op::Resolve => Ok(Vec::new()),
        Op::ReadBounded => run.read_bounded(&DATA, 1 << 16),
        Op::TailLines => run
            .tail_lines(&DATA, 10, 1 << 16)
            .map(|t| t.lines.join("\n").into_bytes()),
        Op::WriteAtomic => run.write_atomic(&DATA, b"overwritten").map(|()| Vec::new()),
        Op::CreateNew => run.create_new(&fresh).map(|_| Vec::new()),
        Op::RemoveFile => run.remove_file(&DATA).map(|()| Vec::new()),
        Op::Remove => run.remove().map(|()| Vec::new()),
    }
}

/// Asserts every operation on `handle` by `owner` gives `UnknownRun` and
/// changes nothing anywhere under the world's base directory.
fn assert_refused_everywhere(w: &World, handle: &str, owner: &CallerId, what: &str) {
    let before = snapshot(&w.base);
    for op in OPS {
        let got = attempt(&w.root, op, handle, owner);
        assert_eq!(
            got,
            Err(RunError::UnknownRun),
            "{what}: {op:?} on {handle:?}"
        );
    }
    assert!(
        !list_for(&w.root, owner).contains(&handle.to_owned()),
        "{what}: listed"
    );
    assert_eq!(snapshot(&w.base), before, "{what}: something changed");
}

fn list_for(root: &RunRoot, owner: &CallerId) -> Vec<String> {
    root.list(owner)
        .unwrap()
        .into_iter()
        .map(|h| h.as_str().to_owned())
        .collect()
}

#[test]
fn positive_control_every_op_works_on_a_good_handle() {
    for op in OPS {
        let w = World::new();
        let got = attempt(&w.root, op, w.handle.as_str(), &w.alice);
        assert!(got.is_ok(), "{op:?}: {got:?}");
        if matches!(op, Op::ReadBounded) {
            assert_eq!(got.unwrap(), b"alice's data\n");
        }
    }
}

#[test]
fn malformed_handles_are_unknown_for_every_op() {
    let w = World::new();
    let h = w.handle.as_str().to_owned();
    let body = &h["run_".len()..];
    let abs_root = w.root_path.display().to_string();
    let abs_outside = w.outside.display().to_string();
    let cases: Vec<(&str, String)> = vec![
        ("../", "../".into()),
        ("..", "..".into()),
        (".", ".".into()),
        ("../ + handle", format!("../{h}")),
        ("handle/..", format!("{h}/..")),
        ("handle/../handle", format!("{h}/../{h}")),
        ("../outside", "../outside".into()),
        ("absolute root/handle", format!("{abs_root}/{h}")),
        ("absolute outside", abs_outside.clone()),
        ("/", "/".into()),
        ("/etc/passwd", "/etc/passwd".into()),
        (
            "slash inside",
            format!("run_{}/{}", &body[..10], &body[11..]),
        ),
        ("backslash", format!("run_{}\\{}", &body[..10], &body[11..])),
        ("backslash traversal", "..\\..\\outside".into()),
        ("trailing slash", format!("{h}/")),
        ("NUL", format!("{h}\0")),
        ("NUL inside", format!("run_\0{}", &body[1..])),
        ("newline", format!("{h}\n")),
        ("CR", format!("{h}\r")),
        ("leading -", format!("-{h}")),
        ("leading space", format!(" {h}")),
        ("trailing space", format!("{h} ")),
        ("empty", String::new()),
        ("prefix only", "run_".into()),
        ("too short", format!("run_{}", &body[..21])),
        ("too long", format!("run_{}", "A".repeat(81))),
        ("wrong prefix", format!("job_{body}")),
        ("upper prefix", format!("RUN_{body}")),
        ("dash separator", format!("run-{body}")),
        (
            "cyrillic a look-alike",
            format!("run_{}\u{0430}", &body[..21]),
        ),
        ("fullwidth", format!("run_{}", "\u{ff21}".repeat(22))),
        ("division slash", format!("run_{}\u{2215}x", &body[..21])),
        ("percent-encoded", format!("run_%2e%2e%2f{}", &body[9..])),
        ("dots in body", format!("run_..{}", &body[2..])),
        ("hidden", ".owner".into()),
        ("tilde", "~".into()),
        ("glob", "run_*".into()),
    ];
    for (what, handle) in &cases {
        assert_refused_everywhere(&w, handle, &w.alice, what);
    }
    // The run itself is untouched and still usable by its owner.
    assert_eq!(
        attempt(&w.root, Op::ReadBounded, &h, &w.alice).unwrap(),
        b"alice's data\n"
    );
}

#[test]
fn unknown_foreign_and_deleted_handles_are_one_answer() {
    let w = World::new();
    assert_refused_everywhere(&w, &w.unknown_handle(), &w.alice, "unknown");
    assert_refused_everywhere(&w, w.handle.as_str(), &w.bob, "foreign owner");
    // Positive control: alice still reads her run.
    assert!(attempt(&w.root, Op::ReadBounded, w.handle.as_str(), &w.alice).is_ok());

    let (gone, run) = w.root.create(&w.alice).unwrap();
    run.remove().unwrap();
    assert_refused_everywhere(&w, gone.as_str(), &w.alice, "deleted");
}

/// Plants, under a well-formed handle name, a symlink to a directory outside
/// the root that is a complete, valid run of alice's (moved out of the root),
/// so that only the confinement keeps the resolver out.
fn plant_symlinked_run(w: &World, relative: bool, what: &str) {
    let (planted, run) = w.root.create(&w.alice).unwrap();
    run.write_atomic(&DATA, SECRET).unwrap();
    drop(run);
    let name = planted.as_str().to_owned();
    // Positive control 1: while inside the root, the run resolves for alice.
    assert_eq!(
        attempt(&w.root, Op::ReadBounded, &name, &w.alice).unwrap(),
        SECRET
    );

    let moved = w.outside.join("moved-run");
    fs::rename(w.root_path.join(&name), &moved).unwrap();
    let target = if relative {
        PathBuf::from("../outside/moved-run")
    } else {
        moved.clone()
    };
    symlink(&target, w.root_path.join(&name)).unwrap();
    // Positive control 2: unconfined, the planted entry reaches the run.
    assert_eq!(
        fs::read(w.root_path.join(&name).join("data.txt")).unwrap(),
        SECRET
    );

    assert_refused_everywhere(w, &name, &w.alice, what);
    // Moved back, it is a run again: the refusal came from the symlink.
    fs::remove_file(w.root_path.join(&name)).unwrap();
    fs::rename(&moved, w.root_path.join(&name)).unwrap();
    assert_eq!(
        attempt(&w.root, Op::ReadBounded, &name, &w.alice).unwrap(),
        SECRET
    );
}

#[test]
fn planted_symlinked_run_dir_absolute_target() {
    let w = World::new();
    plant_symlinked_run(&w, false, "absolute symlink");
}

#[test]
fn planted_symlinked_run_dir_relative_target() {
    let w = World::new();
    plant_symlinked_run(&w, true, "relative symlink");
}

#[test]
fn planted_symlink_to_own_run_is_refused() {
    // Even a link to a legitimate run of the same owner is not a run.
    let w = World::new();
    let alias = format!("run_{}", "AliasOfAnotherRunXYZ_-0");
    symlink(w.handle.as_str(), w.root_path.join(&alias)).unwrap();
    assert_eq!(
        fs::read(w.root_path.join(&alias).join("data.txt")).unwrap(),
        b"alice's data\n"
    );
    assert_refused_everywhere(&w, &alias, &w.alice, "alias symlink");
}

/// The file operations a tool performs on a named file of a resolved run.
fn file_ops(run: &hardened_mcp::runs::RunDir, name: &FileName) -> Vec<(&'static str, RunError)> {
    vec![
        ("read_bounded", run.read_bounded(name, 1 << 16).unwrap_err()),
        ("tail_lines", run.tail_lines(name, 10, 1 << 16).unwrap_err()),
        ("write_atomic", run.write_atomic(name, b"x").unwrap_err()),
        ("create_new", run.create_new(name).unwrap_err()),
    ]
}

#[test]
fn symlinked_file_is_refused_and_target_untouched() {
    let w = World::new();
    for target in [
        w.outside.join("secret.txt"),
        PathBuf::from("../../outside/secret.txt"),
    ] {
        let link = w.run_path().join("linked.txt");
        symlink(&target, &link).unwrap();
        // Positive control: unconfined, the link reaches the secret.
        assert_eq!(fs::read(&link).unwrap(), SECRET);
        let before = snapshot(&w.base);
        let run = w.root.resolve(w.handle.as_str(), &w.alice).unwrap();
        let name = FileName::new("linked.txt").unwrap();
        for (op, err) in file_ops(&run, &name) {
            let want = if op == "create_new" {
                RunError::FileExists
            } else {
                RunError::FileRefused
            };
            assert_eq!(err, want, "{op} via {target:?}");
        }
        assert_eq!(snapshot(&w.base), before);
        // Removing the file removes the link, not its target.
        run.remove_file(&name).unwrap();
        assert_eq!(fs::read(w.outside.join("secret.txt")).unwrap(), SECRET);
    }
}

#[test]
fn hardlinked_file_is_refused_and_target_untouched() {
    let w = World::new();
    let link = w.run_path().join("hard.txt");
    fs::hard_link(w.outside.join("secret.txt"), &link).unwrap();
    // Positive control: unconfined, the hard link reads the secret.
    assert_eq!(fs::read(&link).unwrap(), SECRET);
    let before = snapshot(&w.base);
    let run = w.root.resolve(w.handle.as_str(), &w.alice).unwrap();
    let name = FileName::new("hard.txt").unwrap();
    for (op, err) in file_ops(&run, &name) {
        let want = if op == "create_new" {
            RunError::FileExists
        } else {
            RunError::FileRefused
        };
        assert_eq!(err, want, "{op}");
    }
    assert_eq!(snapshot(&w.base), before);
}

#[test]
fn removing_a_run_with_planted_links_spares_the_outside() {
    let w = World::new();
    let run_path = w.run_path();
    symlink(&w.outside, run_path.join("dirlink")).unwrap();
    symlink("../../outside", run_path.join("rellink")).unwrap();
    fs::hard_link(w.outside.join("secret.txt"), run_path.join("hard.txt")).unwrap();
    fs::create_dir_all(run_path.join("sub/deeper")).unwrap();
    symlink(&w.outside, run_path.join("sub/deeper/link")).unwrap();
    // Positive control: the outside is reachable through the planted links.
    assert_eq!(
        fs::read(run_path.join("dirlink/secret.txt")).unwrap(),
        SECRET
    );
    assert_eq!(
        fs::read(run_path.join("rellink/secret.txt")).unwrap(),
        SECRET
    );
    let outside_before = snapshot(&w.outside);

    let run = w.root.resolve(w.handle.as_str(), &w.alice).unwrap();
    run.remove().unwrap();
    assert!(!run_path.exists());
    let mut left: Vec<String> = fs::read_dir(&w.root_path)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [".index", ".key"],
        "only the root key and the index remain"
    );
    // The hard link's removal drops the outside file's link count back.
    let mut expect = outside_before;
    for v in expect.values_mut() {
        *v = v.replace("nlink 2", "nlink 1");
    }
    assert_eq!(snapshot(&w.outside), expect);
}

#[test]
fn file_names_from_callers_are_allowlisted() {
    for bad in [
        "../secret.txt",
        "..",
        ".",
        "",
        "/etc/passwd",
        "a/b",
        "a\\b",
        "a\0",
        "a\n",
        "-rf",
        ".owner",
        "\u{ff41}",
        "x".repeat(65).as_str(),
    ] {
        assert_eq!(
            FileName::new(bad).err(),
            Some(RunError::InvalidFileName),
            "{bad:?}"
        );
    }
}
