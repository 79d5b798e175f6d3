//! What the kernel loads to run a solver besides the solver file: a
//! script's interpreter (`#!`) and a dynamic program's loader (ELF
//! `PT_INTERP`), checked at start against what the solver may read. A
//! solver whose interpreter lies outside its view would fail every run
//! (exit 127, "not found"); it is refused at start, with the path and fix.
//!
//! The check follows `execve`: a `#!` interpreter is itself exec'd (a
//! script, or an ELF program with a loader), up to the kernel's nesting
//! limit. What a program does once running (the libraries a loader maps,
//! the programs a script calls) is left to its view's read paths.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::error::{ConfigError, Unrunnable};

/// Files followed at most: the solver and three interpreters (the kernel stops later, `ELOOP`).
const MAX_DEPTH: usize = 4;

/// Bytes of a `#!` line the kernel reads (`BINPRM_BUF_SIZE`).
const SHEBANG_MAX: usize = 256;

/// Program headers read at most (a real program has a dozen).
const MAX_PHDRS: u64 = 512;

/// Longest loader path read from `PT_INTERP`.
const MAX_INTERP: u64 = 4096;

/// Checks that everything the kernel loads to exec the solver `id` at
/// `path` (device and inode `file_id`) is readable in its view: beneath one
/// of `readable` (the sandbox's read paths and the solver's grants).
pub(crate) fn check_runnable(
    id: &str,
    path: &Path,
    file_id: (u64, u64),
    readable: &[&Path],
) -> Result<(), ConfigError> {
    let refuse = |why| {
        tracing::error!(solver = %id, reason = %why, "solver cannot run in its view");
        Err(ConfigError::NotRunnable {
            id: id.to_owned(),
            why,
        })
    };
    let mut program = path.to_path_buf();
    let mut expect = Some(file_id);
    for _ in 0..MAX_DEPTH {
        let head = match read_head(&program, expect) {
            Ok(h) => h,
            Err(e) => {
                tracing::error!(solver = %id, file = %program.display(), error = %e, "solver file unreadable");
                return refuse(Unrunnable::Unreadable { file: program });
            }
        };
        let (interpreter, kind) = match head {
            Head::Script(line) => match shebang(&line) {
                Ok(i) => (i, InterpreterKind::Script),
                Err(why) => return refuse(why(program)),
            },
            Head::Elf(Some(loader)) => (loader, InterpreterKind::Loader),
            // A static program, or a format the kernel runs without one.
            Head::Elf(None) | Head::Other => return Ok(()),
        };
        if !interpreter.is_absolute() {
            return refuse(Unrunnable::RelativeInterpreter {
                program,
                interpreter,
            });
        }
        if kind == InterpreterKind::Script && interpreter.file_name().is_some_and(|n| n == "env") {
            return refuse(Unrunnable::EnvInterpreter { script: program });
        }
        let Ok(real) = std::fs::canonicalize(&interpreter) else {
            return refuse(Unrunnable::MissingInterpreter {
                program,
                interpreter,
            });
        };
        let visible = |p: &Path| readable.iter().any(|r| p.starts_with(r));
        if !visible(&interpreter) || !visible(&real) {
            return refuse(Unrunnable::OutsideView {
                program,
                interpreter: real,
                loader: kind == InterpreterKind::Loader,
            });
        }
        if kind == InterpreterKind::Loader {
            return Ok(()); // mapped, not exec'd: its header is not followed
        }
        let executable = std::fs::metadata(&real)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        if !executable {
            return refuse(Unrunnable::MissingInterpreter {
                program,
                interpreter: real,
            });
        }
        program = real;
        expect = None;
    }
    refuse(Unrunnable::TooDeep {
        interpreter: program,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InterpreterKind {
    /// Named on a `#!` line: exec'd in turn.
    Script,
    /// An ELF program's `PT_INTERP`: mapped by the kernel.
    Loader,
}

/// The start of an executable file, as `execve` tells formats apart.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    /// A `#!` line, without the `#!` (at most [`SHEBANG_MAX`] bytes).
    Script(Vec<u8>),
    /// An ELF file, with its loader if it names one.
    Elf(Option<PathBuf>),
    /// Anything else (refused, or run by a `binfmt_misc` handler): not followed.
    Other,
}

/// Reads the head of `path` (no last-component link followed); `expect`: its device and inode.
fn read_head(path: &Path, expect: Option<(u64, u64)>) -> io::Result<Head> {
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || expect.is_some_and(|id| id != (meta.dev(), meta.ino())) {
        return Err(io::Error::other("not the file checked"));
    }
    let mut buf = Vec::with_capacity(SHEBANG_MAX);
    (&file).take(SHEBANG_MAX as u64).read_to_end(&mut buf)?;
    if let Some(line) = buf.strip_prefix(b"#!") {
        return Ok(Head::Script(line.to_vec()));
    }
    if buf.starts_with(b"\x7fELF") {
        return elf_loader(&file, &buf).map(Head::Elf);
    }
    Ok(Head::Other)
}

/// The interpreter a `#!` line names (the bytes after `#!` of a
/// [`SHEBANG_MAX`] buffer), or why it is refused. As the kernel reads it:
/// the line ends at a newline or the file's end; a line that fills the
/// buffer must show a blank after the path, else the path may be cut.
fn shebang(line: &[u8]) -> Result<PathBuf, fn(PathBuf) -> Unrunnable> {
    let bad = |script| Unrunnable::BadInterpreterLine { script };
    let filled = line.len() + 2 >= SHEBANG_MAX;
    let (line, cut) = match line.iter().position(|&b| b == b'\n') {
        Some(end) => (&line[..end], false),
        None => (line, filled),
    };
    let is_blank = |b: &u8| *b == b' ' || *b == b'\t';
    let Some(start) = line.iter().position(|b| !is_blank(b)) else {
        return Err(bad);
    };
    let rest = &line[start..];
    let end = rest
        .iter()
        .position(|b| is_blank(b) || *b == 0)
        .unwrap_or(rest.len());
    if cut && end == rest.len() {
        return Err(bad);
    }
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&rest[..end])))
}

/// The loader path of an ELF file whose first bytes are `head`: the
/// `PT_INTERP` segment, if any. A malformed header is an error.
fn elf_loader(file: &File, head: &[u8]) -> io::Result<Option<PathBuf>> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed ELF header");
    // EI_CLASS (1: 32-bit, 2: 64-bit), EI_DATA (1: little-endian, 2: big).
    let (Some(&class @ 1..=2), Some(&data @ 1..=2)) = (head.get(4), head.get(5)) else {
        return Err(bad());
    };
    let (class64, little) = (class == 2, data == 1);
    let num = |bytes: &[u8]| -> u64 {
        let mut v = 0u64;
        for (i, b) in bytes.iter().enumerate() {
            let shift = if little { i } else { bytes.len() - 1 - i };
            v |= u64::from(*b) << (8 * shift);
        }
        v
    };
    let field = |at: usize, len: usize| head.get(at..at + len).map(num).ok_or_else(bad);
    // e_phoff, e_phentsize, e_phnum.
    let (phoff, phentsize, phnum) = if class64 {
        (field(32, 8)?, field(54, 2)?, field(56, 2)?)
    } else {
        (field(28, 4)?, field(42, 2)?, field(44, 2)?)
    };
    let min_entry = if class64 { 56 } else { 32 };
    if phnum > MAX_PHDRS || phentsize < min_entry || phentsize > 256 {
        return Err(bad());
    }
    const PT_INTERP: u64 = 3;
    for i in 0..phnum {
        let mut ph = [0u8; 56];
        let len = usize::try_from(min_entry).map_err(|_| bad())?;
        let at = phoff
            .checked_add(i.checked_mul(phentsize).ok_or_else(bad)?)
            .ok_or_else(bad)?;
        file.read_exact_at(&mut ph[..len], at).map_err(|_| bad())?;
        if num(&ph[0..4]) != PT_INTERP {
            continue;
        }
        // p_offset, p_filesz.
        let (offset, size) = if class64 {
            (num(&ph[8..16]), num(&ph[32..40]))
        } else {
            (num(&ph[4..8]), num(&ph[16..20]))
        };
        if size == 0 || size > MAX_INTERP {
            return Err(bad());
        }
        let mut path = vec![0u8; usize::try_from(size).map_err(|_| bad())?];
        file.read_exact_at(&mut path, offset).map_err(|_| bad())?;
        // The segment ends in one NUL.
        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
        path.truncate(end);
        if path.is_empty() {
            return Err(bad());
        }
        return Ok(Some(PathBuf::from(std::ffi::OsStr::from_bytes(&path))));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn write_exec(path: &Path, body: &[u8]) {
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn id_of(p: &Path) -> (u64, u64) {
        let m = std::fs::metadata(p).unwrap();
        (m.dev(), m.ino())
    }

    /// Why the solver at `path` cannot run with `readable` (`None`: it can).
    fn check(path: &Path, readable: &[&Path]) -> Option<Unrunnable> {
        match check_runnable("s", path, id_of(path), readable) {
            Err(ConfigError::NotRunnable { why, .. }) => Some(why),
            Err(e) => panic!("unexpected error {e}"),
            Ok(()) => None,
        }
    }

    /// The interpreter of an `OutsideView` refusal, and whether a loader.
    fn outside_view(w: Option<Unrunnable>) -> (PathBuf, bool) {
        match w {
            Some(Unrunnable::OutsideView {
                interpreter,
                loader,
                ..
            }) => (interpreter, loader),
            other => panic!("{other:?}"),
        }
    }

    const SYSTEM: &[&str] = &["/usr", "/lib", "/lib64", "/bin"];

    fn system() -> Vec<&'static Path> {
        SYSTEM.iter().map(Path::new).collect()
    }

    #[test]
    fn a_dynamic_program_of_the_system_trees_runs() {
        assert_eq!(check(Path::new("/usr/bin/true"), &system()), None);
    }

    #[test]
    fn a_program_whose_loader_is_not_readable_is_refused() {
        // Only /usr/bin is readable: the loader (/usr/lib or /lib64) is not.
        let w = check(Path::new("/usr/bin/true"), &[Path::new("/usr/bin")]);
        assert!(outside_view(w).1, "the loader");
    }

    #[test]
    fn scripts_are_followed_to_their_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("solve.py");
        write_exec(&script, b"#!/usr/bin/true -x\nprint(1)\n");
        assert_eq!(check(&script, &system()), None);
        // The same script whose interpreter is outside the view.
        let interp = dir.path().join("python3");
        write_exec(&interp, b"\x7fELF-not-really");
        let outside = dir.path().join("outside.py");
        write_exec(&outside, format!("#!{}\n", interp.display()).as_bytes());
        let real = std::fs::canonicalize(&interp).unwrap();
        assert_eq!(
            outside_view(check(&outside, &system())),
            (real.clone(), false)
        );
        // Granting the interpreter's directory makes it visible (its fake
        // ELF header is then refused as unreadable: it was followed).
        let mut with_grant = system();
        with_grant.push(dir.path());
        let w = check(&outside, &with_grant);
        assert!(matches!(w, Some(Unrunnable::Unreadable { file }) if file == real));
    }

    #[test]
    fn env_relative_missing_and_cut_interpreters_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("#!/usr/bin/{}", "x".repeat(300));
        // Each body with the `Debug` start of its refusal.
        let cases: [(&[u8], &str); 5] = [
            (b"#!/usr/bin/env bash\n", "EnvInterpreter {"),
            (b"#!python3\n", "RelativeInterpreter {"),
            (b"#!/usr/bin/no-such-interpreter\n", "MissingInterpreter {"),
            (b"#!   \n", "BadInterpreterLine {"),
            // An interpreter path longer than the kernel reads: cut.
            (long.as_bytes(), "BadInterpreterLine {"),
        ];
        for (i, (body, expected)) in cases.iter().enumerate() {
            let script = dir.path().join(format!("s{i}"));
            write_exec(&script, body);
            let w = check(&script, &system());
            let named = w.as_ref().map(|w| format!("{w:?}"));
            assert!(named.is_some_and(|n| n.starts_with(expected)), "{i}: {w:?}");
        }
    }

    #[test]
    fn a_short_script_without_a_newline_still_names_its_interpreter() {
        // The kernel reads a line that ends with the file.
        let true_ = Some(PathBuf::from("/usr/bin/true"));
        assert_eq!(shebang(b"/usr/bin/true").ok(), true_);
        assert_eq!(shebang(b" /usr/bin/true -x").ok(), true_);
        // A full buffer whose path is followed by a space is not cut.
        let mut full = b"/usr/bin/true ".to_vec();
        full.resize(SHEBANG_MAX - 2, b'a');
        assert_eq!(shebang(&full).ok(), true_);
        let mut cut = b"/usr/bin/".to_vec();
        cut.resize(SHEBANG_MAX - 2, b'a');
        assert!(shebang(&cut).is_err());
    }

    #[test]
    fn a_symlinked_interpreter_counts_where_it_leads() {
        let dir = tempfile::tempdir().unwrap();
        // A link inside the view to a file outside it: refused.
        let target = dir.path().join("real-interp");
        write_exec(&target, b"#!/usr/bin/true\n");
        let granted = tempfile::tempdir().unwrap();
        let link = granted.path().join("interp");
        symlink(&target, &link).unwrap();
        let script = granted.path().join("s");
        write_exec(&script, format!("#!{}\n", link.display()).as_bytes());
        let mut readable = system();
        readable.push(granted.path());
        let real = std::fs::canonicalize(&target).unwrap();
        assert_eq!(outside_view(check(&script, &readable)), (real, false));
    }

    #[test]
    fn interpreters_nest_only_as_deep_as_the_kernel_follows() {
        let dir = tempfile::tempdir().unwrap();
        let mut prev = PathBuf::from("/usr/bin/true");
        for i in 0..MAX_DEPTH {
            let s = dir.path().join(format!("l{i}"));
            write_exec(&s, format!("#!{}\n", prev.display()).as_bytes());
            prev = s;
        }
        let mut readable = system();
        readable.push(dir.path());
        let w = check(&prev, &readable);
        assert!(matches!(w, Some(Unrunnable::TooDeep { .. })), "{w:?}");
    }

    #[test]
    fn elf_headers_are_read_bounded() {
        let dir = tempfile::tempdir().unwrap();
        // Truncated, wrong class, absurd header counts: errors, no panic.
        let mut absurd = vec![0u8; 64];
        absurd[..6].copy_from_slice(b"\x7fELF\x02\x01");
        (absurd[54], absurd[56], absurd[57]) = (56, 0xff, 0xff);
        let bodies = [b"\x7fELF".to_vec(), b"\x7fELF\x03\x01".to_vec(), absurd];
        for (i, body) in bodies.iter().enumerate() {
            let p = dir.path().join(format!("e{i}"));
            write_exec(&p, body);
            let f = File::open(&p).unwrap();
            assert!(elf_loader(&f, body).is_err(), "{i}");
        }
    }
}
