//! Writing decks into a run directory: atomic, to a fixed name, and a
//! refused deck leaves the file exactly as it was.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hardened_mcp::CallerId;
use hardened_mcp::deck::{Deck, DeckError, DeckText, KeyValue, MAX_DECK_BYTES};
use hardened_mcp::runs::{FileName, RunDir, RunError, RunRoot};

const DECK: FileName = FileName::fixed("input.deck");

fn run() -> (tempfile::TempDir, RunDir) {
    let tmp = tempfile::tempdir().unwrap();
    let root = RunRoot::open(tmp.path().join("runs")).unwrap();
    let (_handle, run) = root.create(&CallerId::local()).unwrap();
    (tmp, run)
}

/// What a tool body does with its (hostile) arguments.
fn write_deck(run: &RunDir, cells: u32, courant: f64, label: &str) -> Result<(), DeckError> {
    let mut deck = Deck::<KeyValue>::new();
    deck.set("cells", cells)?
        .set("courant", courant)?
        .set("label", DeckText::new(label))?;
    deck.write_to(run, &DECK)
}

#[test]
fn a_deck_is_written_to_its_fixed_name() {
    let (_tmp, run) = run();
    write_deck(&run, 200, 0.45, "rod A").unwrap();
    assert_eq!(
        run.read_bounded(&DECK, 4096).unwrap(),
        b"cells = 200\ncourant = 0.45\nlabel = rod A\n"
    );
    // Positive control for the tests below: a good write replaces the file.
    write_deck(&run, 300, 0.25, "rod B").unwrap();
    assert_eq!(
        run.read_bounded(&DECK, 4096).unwrap(),
        b"cells = 300\ncourant = 0.25\nlabel = rod B\n"
    );
}

#[test]
fn refused_decks_leave_the_file_unchanged() {
    let (_tmp, run) = run();
    write_deck(&run, 200, 0.45, "rod A").unwrap();
    let before = run.read_bounded(&DECK, 4096).unwrap();
    let attempts: [(f64, &str, DeckError); 8] = [
        (0.3, "x\ninclude /etc/shadow", DeckError::LineBreak),
        (0.3, "x # cells = 1e12", DeckError::Comment),
        (0.3, "include", DeckError::Directive),
        (0.3, "../../other_run/input", DeckError::Path),
        (0.3, "C:\\x", DeckError::Path),
        (0.3, &"a".repeat(1000), DeckError::TooLong),
        (f64::NAN, "ok", DeckError::NonFinite),
        (f64::INFINITY, "ok", DeckError::NonFinite),
    ];
    for (courant, label, expected) in attempts {
        assert_eq!(write_deck(&run, 999, courant, label).unwrap_err(), expected);
        assert_eq!(run.read_bounded(&DECK, 4096).unwrap(), before);
    }

    // Rendering fails after the values were accepted: nothing is written.
    let mut big = Deck::<KeyValue>::new();
    let long = "a".repeat(<KeyValue as hardened_mcp::deck::DeckFormat>::MAX_TEXT_LEN);
    for i in 0..(MAX_DECK_BYTES / long.len() + 10) {
        let key: &'static str = Box::leak(format!("k{i}").into_boxed_str());
        big.set(key, DeckText::new(&long)).unwrap();
    }
    assert_eq!(big.write_to(&run, &DECK).unwrap_err(), DeckError::TooLarge);
    assert_eq!(run.read_bounded(&DECK, 4096).unwrap(), before);
}

#[test]
fn a_planted_symlink_is_refused_not_followed() {
    let (tmp, run) = run();
    let target = tmp.path().join("outside.txt");
    std::fs::write(&target, b"precious").unwrap();
    let run_path = tmp.path().join("runs").join(run.handle().as_str());
    std::os::unix::fs::symlink(&target, run_path.join("input.deck")).unwrap();
    let err = write_deck(&run, 200, 0.45, "rod A").unwrap_err();
    assert_eq!(err, DeckError::Storage(RunError::FileRefused));
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    assert_eq!(
        err.to_string(),
        "the deck could not be written: run file refused"
    );
}
