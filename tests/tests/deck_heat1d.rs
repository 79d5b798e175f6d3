//! Differential test against the example solver's real deck reader: every
//! deck the `KeyValue` writer accepts reads back, through heat1d's parser,
//! as exactly the values written, and never triggers an include.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::collections::BTreeMap;

use hardened_mcp::deck::{Deck, DeckIdent, DeckText, KeyValue};
use proptest::prelude::*;

#[allow(dead_code, missing_docs, clippy::all)]
#[path = "../../examples/solver-server/src/heat1d/deck.rs"]
mod heat1d;

/// Serves only the deck under test and records every other file the
/// parser asks for (an include).
struct OneFile {
    deck: String,
    requested: RefCell<Vec<String>>,
}

impl heat1d::Source for OneFile {
    fn read(&self, name: &str) -> Result<String, heat1d::DeckError> {
        if name == "input.deck" {
            return Ok(self.deck.clone());
        }
        self.requested.borrow_mut().push(name.to_owned());
        Err(heat1d::DeckError {
            line: 0,
            what: "cannot open deck file",
        })
    }
}

fn read_back(
    deck: &[u8],
) -> (
    Result<BTreeMap<String, String>, heat1d::DeckError>,
    Vec<String>,
) {
    let src = OneFile {
        deck: String::from_utf8(deck.to_vec()).unwrap(),
        requested: RefCell::new(Vec::new()),
    };
    let parsed = heat1d::parse(&src, "input.deck");
    (parsed, src.requested.into_inner())
}

#[test]
fn positive_control_raw_concatenation_is_caught() {
    // What the deck writer prevents: caller text pasted into a line.
    let label = "rod\ninclude secrets.deck";
    let raw = format!("cells = 10\nlabel = {label}\n");
    let (parsed, requested) = read_back(raw.as_bytes());
    assert!(parsed.is_err());
    assert_eq!(requested, ["secrets.deck"]);
    // The same text through the writer is refused before any deck exists.
    assert!(DeckText::<KeyValue>::new(label).is_err());
}

fn hostile_text() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        12 => "[a-zA-Z0-9 _.,:()+%@-]{1,8}",
        1 => Just("include".to_owned()),
        1 => Just(" include x".to_owned()),
        1 => Just("=".to_owned()),
        1 => "[#\n\r\t\u{b}\u{c}\u{85}\u{2028}/\\\\~]",
        1 => any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(pieces, 1..6).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn accepted_decks_read_back_exactly(
        label in hostile_text(),
        name in hostile_text(),
        x in any::<f64>(),
        cells in any::<u32>(),
    ) {
        let mut deck = Deck::<KeyValue>::new();
        deck.set("cells", cells).unwrap();
        let mut expected = BTreeMap::from([("cells".to_owned(), cells.to_string())]);
        if deck.set("dt", x).is_ok() {
            expected.insert("dt".to_owned(), String::new());
        }
        if let Ok(t) = DeckText::<KeyValue>::new(&label) {
            deck.set("label", t).unwrap();
            expected.insert("label".to_owned(), label.clone());
        }
        if let Ok(i) = DeckIdent::<KeyValue>::new(&name) {
            deck.set("name", i).unwrap();
            expected.insert("name".to_owned(), name.clone());
        }
        let (parsed, requested) = read_back(&deck.render().unwrap());
        prop_assert!(requested.is_empty(), "include attempted: {:?}", requested);
        let parsed = parsed.unwrap();
        prop_assert_eq!(parsed.len(), expected.len());
        for (key, value) in &expected {
            if key == "dt" {
                prop_assert!(x.is_finite());
                prop_assert_eq!(parsed["dt"].parse::<f64>().unwrap().to_bits(), x.to_bits());
            } else {
                prop_assert_eq!(&parsed[key], value);
            }
        }
        prop_assert_eq!(expected.contains_key("dt"), x.is_finite());
    }
}
