//! Canary test: no error text of the run root — nor its server log —
//! contains any part of a caller's input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use hardened_mcp::CallerId;
use hardened_mcp::runs::{FileName, RunError, RunRoot};

/// Canary text: unusual enough that any 5-character window of it appearing
/// in an error or log line can only have come from the input.
const CANARY: &str = "QzXkCANARYvW";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn windows(input: &str, len: usize) -> Vec<String> {
    let chars: Vec<char> = input.chars().collect();
    if chars.len() < len {
        return vec![input.to_owned()];
    }
    chars.windows(len).map(|w| w.iter().collect()).collect()
}

fn assert_no_echo(input: &str, text: &str) {
    for w in windows(input, 5) {
        if w.trim().len() < 5 {
            continue;
        }
        assert!(!text.contains(&w), "{text:?} echoes {w:?} of {input:?}");
    }
}

#[test]
fn no_error_or_log_line_contains_the_input() {
    let log = Captured::default();
    let sink = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let tmp = tempfile::tempdir().unwrap();
    let root = RunRoot::open(tmp.path().join("root")).unwrap();
    let alice = CallerId::new("alice").unwrap();
    let (handle, run) = root.create(&alice).unwrap();
    run.write_atomic(&FileName::new("data.txt").unwrap(), b"x")
        .unwrap();

    let handles = [
        format!("run_{CANARY}{CANARY}"),
        format!("run_{CANARY}/../{CANARY}"),
        format!("../{CANARY}"),
        format!("/{CANARY}/etc"),
        format!("{CANARY}\0{CANARY}"),
        format!("{CANARY}\n{CANARY}"),
        format!("run_{CANARY}é{CANARY}"),
        format!("run_{}", CANARY.repeat(8)),
        format!("-{CANARY}"),
    ];
    let mut errors = Vec::new();
    for h in &handles {
        errors.push((h.clone(), root.resolve(h, &alice).unwrap_err()));
    }
    // A foreign caller whose name is itself a canary.
    let canary_caller = CallerId::new(&format!("{CANARY}-caller")).unwrap();
    errors.push((
        canary_caller.as_str().to_owned(),
        root.resolve(handle.as_str(), &canary_caller).unwrap_err(),
    ));
    let names = [
        format!("../{CANARY}"),
        format!("{CANARY}/x"),
        format!(".{CANARY}"),
        format!("{CANARY}..x"),
        format!("{CANARY}\0"),
        CANARY.repeat(6),
    ];
    for n in &names {
        errors.push((n.clone(), FileName::new(n).unwrap_err()));
    }
    // File errors for well-formed names that carry a canary.
    let missing = FileName::new(&format!("{CANARY}.dat")).unwrap();
    errors.push((
        missing.to_string(),
        run.read_bounded(&missing, 10).unwrap_err(),
    ));
    errors.push((
        missing.to_string(),
        run.tail_lines(&missing, 1, 10).unwrap_err(),
    ));
    errors.push((missing.to_string(), run.remove_file(&missing).unwrap_err()));
    std::fs::write(
        tmp.path()
            .join("root")
            .join(handle.as_str())
            .join(missing.as_str()),
        CANARY.repeat(4),
    )
    .unwrap();
    errors.push((
        missing.to_string(),
        run.read_bounded(&missing, 10).unwrap_err(),
    ));
    errors.push((missing.to_string(), run.create_new(&missing).unwrap_err()));
    let run_path = tmp.path().join("root").join(handle.as_str());
    let linked = FileName::new(&format!("{CANARY}-hard")).unwrap();
    std::fs::hard_link(
        run_path.join(missing.as_str()),
        run_path.join(linked.as_str()),
    )
    .unwrap();
    errors.push((
        linked.to_string(),
        run.read_bounded(&linked, 100).unwrap_err(),
    ));
    errors.push((
        linked.to_string(),
        run.write_atomic(&linked, b"y").unwrap_err(),
    ));

    // Positive control: the harness sees errors, and the log captured
    // something, so "no echo" is not vacuous.
    assert!(errors.len() > 15);
    assert!(errors.iter().any(|(_, e)| *e == RunError::UnknownRun));
    assert!(errors.iter().any(|(_, e)| *e == RunError::TooLarge));

    assert!(errors.iter().any(|(_, e)| *e == RunError::FileRefused));
    let log_text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert!(log_text.contains("refused"), "{log_text}");
    for (input, err) in &errors {
        assert_no_echo(input, &err.to_string());
        assert_no_echo(input, &format!("{err:?}"));
        assert_no_echo(input, &log_text);
    }
    // The run's handle never reaches the log either.
    assert!(!log_text.contains(handle.as_str()));
}

#[test]
fn every_error_text_is_fixed() {
    use hardened_mcp::runs::RootProblem;
    let all = [
        RunError::UnknownRun,
        RunError::InvalidFileName,
        RunError::InvalidPrefix,
        RunError::FileNotFound,
        RunError::FileRefused,
        RunError::FileExists,
        RunError::TooLarge,
        RunError::NoSpace,
        RunError::InvalidRoot(RootProblem::Symlink),
        RunError::InvalidRoot(RootProblem::NotDirectory),
        RunError::InvalidRoot(RootProblem::NotOwned),
        RunError::InvalidRoot(RootProblem::Permissions),
        RunError::InvalidRoot(RootProblem::KeyUnusable),
        RunError::InvalidRoot(RootProblem::Unavailable),
        RunError::Io,
    ];
    for e in all {
        let text = e.to_string();
        assert!(!text.is_empty() && text.len() < 80, "{text}");
        assert!(text.is_ascii() && !text.contains('/'), "{text}");
        assert!(std::error::Error::source(&e).is_none());
    }
}
