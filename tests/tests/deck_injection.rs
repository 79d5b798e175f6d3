//! Deck injection: caller text with control meaning is refused with fixed
//! errors, refused values leave the deck unchanged, and no accepted value
//! can produce a line the format treats as control syntax.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hardened_mcp::deck::{
    Deck, DeckError, DeckFormat, DeckIdent, DeckText, DeckToken, DeckValue, KeyValue, Spice, Words,
    format_f64,
};
use proptest::prelude::*;

#[derive(Clone, Copy)]
enum Boundary {
    Dirichlet,
    Periodic,
}

impl DeckToken for Boundary {
    fn token(&self) -> &'static str {
        match self {
            Boundary::Dirichlet => "dirichlet",
            Boundary::Periodic => "periodic",
        }
    }
}

struct Broken(&'static str);

impl DeckToken for Broken {
    fn token(&self) -> &'static str {
        self.0
    }
}

fn text<F: DeckFormat>(s: &str) -> Result<DeckText<F>, DeckError> {
    DeckText::<F>::new(s)
}

#[test]
fn key_value_text_injection_is_refused_with_fixed_errors() {
    use DeckError::*;
    let long = "a".repeat(KeyValue::MAX_TEXT_LEN + 1);
    let cases: &[(&str, DeckError)] = &[
        ("", Empty),
        (&long, TooLong),
        ("rod\ninclude /etc/passwd", LineBreak),
        ("rod\rcells = 1", LineBreak),
        ("rod\u{2028}x", LineBreak),
        ("rod\u{85}x", LineBreak),
        ("rod\u{b}x", LineBreak),
        ("rod # cells = 1e12", Comment),
        ("#", Comment),
        ("include", Directive),
        ("please INCLUDE this", Directive),
        ("a/b", Path),
        ("../../secrets", Path),
        ("..", Path),
        (".", Path),
        ("C:\\deck", Path),
        ("~root", Path),
        ("x = y", ForbiddenCharacter),
        ("say \"hi\"", ForbiddenCharacter),
        ("$HOME", ForbiddenCharacter),
        ("rod\0", ForbiddenCharacter),
        ("rod\t1", ForbiddenCharacter),
        ("\u{1b}[2J", ForbiddenCharacter),
        ("stäbchen", ForbiddenCharacter),
        (" padded", ForbiddenCharacter),
        ("padded ", ForbiddenCharacter),
    ];
    for (input, expected) in cases {
        assert_eq!(text::<KeyValue>(input).unwrap_err(), *expected, "{input:?}");
    }
    assert_eq!(
        text::<KeyValue>(&"a".repeat(KeyValue::MAX_TEXT_LEN))
            .unwrap()
            .as_str()
            .len(),
        256
    );
    assert!(text::<KeyValue>("rod A, run 3 (copper) +5% @ 300K: v1.2").is_ok());
    assert!(text::<KeyValue>("included").is_ok());
}

#[test]
fn spice_text_injection_is_refused_with_fixed_errors() {
    use DeckError::*;
    let long = "a".repeat(Spice::MAX_TEXT_LEN + 1);
    let cases: &[(&str, DeckError)] = &[
        ("", Empty),
        (&long, TooLong),
        ("1k\n.control", LineBreak),
        ("1k\r\nshell rm -rf x", LineBreak),
        ("*", Comment),
        ("1k;x", Comment),
        ("1k$x", Comment),
        (".include", Directive),
        (".INC", Directive),
        (".lib", Directive),
        (".control", Directive),
        ("x.endc", Directive),
        (".end", Directive),
        ("shell", Directive),
        ("SHELL", Directive),
        (".5", Directive),
        ("models/x.lib", Directive),
        ("a/b", Path),
        ("a..b", Path),
        ("a\\b", Path),
        ("~x", Path),
        ("1k 2k", ForbiddenCharacter),
        ("a=b", ForbiddenCharacter),
        ("a,b", ForbiddenCharacter),
        ("f(x)", ForbiddenCharacter),
        ("{x}", ForbiddenCharacter),
        ("'x'", ForbiddenCharacter),
    ];
    for (input, expected) in cases {
        assert_eq!(text::<Spice>(input).unwrap_err(), *expected, "{input:?}");
    }
    assert!(text::<Spice>("2N2222-fast_v1.5").is_ok());
    assert!(text::<Spice>("shells").is_ok());
}

#[test]
fn identifiers_are_narrow() {
    assert!(DeckIdent::<Spice>::new("0").is_ok());
    assert!(DeckIdent::<Spice>::new("out_1").is_ok());
    for bad in [
        "",
        "a b",
        "a.b",
        "a-b",
        "a\n",
        "*a",
        "+a",
        ".inc",
        &"a".repeat(33),
    ] {
        assert!(DeckIdent::<Spice>::new(bad).is_err(), "{bad:?}");
    }
    assert!(DeckIdent::<KeyValue>::new("rod-A_1").is_ok());
    for bad in ["1a", "-a", "a.b", "a/b", "include", "a#", "a b"] {
        assert!(DeckIdent::<KeyValue>::new(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn non_finite_numbers_are_refused() {
    let mut deck = Deck::<KeyValue>::new();
    for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -f64::NAN] {
        assert_eq!(deck.set("length", x).unwrap_err(), DeckError::NonFinite);
    }
    assert_eq!(
        deck.set("length", f32::NAN).unwrap_err(),
        DeckError::NonFinite
    );
    assert_eq!(
        DeckValue::<Spice>::number(f64::INFINITY).unwrap_err(),
        DeckError::NonFinite
    );
    assert_eq!(
        DeckValue::<Spice>::named("is", f64::NAN).unwrap_err(),
        DeckError::NonFinite
    );
    assert!(deck.render().unwrap().is_empty());
}

#[test]
fn server_mistakes_are_refused_too() {
    let mut kv = Deck::<KeyValue>::new();
    for key in ["include", "Cells", "a b", "a\nb", "", "a#"] {
        assert_eq!(
            kv.set(key, 1).unwrap_err(),
            DeckError::InvalidKey,
            "{key:?}"
        );
    }
    for token in ["a\nb", "x # y", "../x", "include", "", "a b"] {
        assert_eq!(
            kv.set("b", Broken(token)).unwrap_err(),
            DeckError::InvalidToken,
            "{token:?}"
        );
    }
    assert_eq!(
        kv.statement("cells", []).unwrap_err(),
        DeckError::InvalidHead
    );
    kv.set("cells", 10).unwrap();
    assert_eq!(kv.set("cells", 20).unwrap_err(), DeckError::DuplicateKey);

    let mut sp = Deck::<Spice>::new();
    for head in [
        ".include", ".lib", ".control", ".endc", ".end", "shell", "*R1", "+", "R1;x",
    ] {
        assert_eq!(
            sp.statement(head, []).unwrap_err(),
            DeckError::InvalidHead,
            "{head:?}"
        );
    }
    assert_eq!(
        DeckValue::<Spice>::named(".include", 1).unwrap_err(),
        DeckError::InvalidToken
    );
    // `.param` goes through `set` (numbers only); named values are numbers
    // or tokens, never caller text, which ngspice could evaluate.
    assert_eq!(
        sp.statement(".param", []).unwrap_err(),
        DeckError::InvalidHead
    );
    assert_eq!(
        DeckValue::<Spice>::named("file", DeckText::<Spice>::new("x.txt")).unwrap_err(),
        DeckError::ValueNotAllowed
    );
    assert_eq!(
        DeckValue::<Spice>::named("file", DeckIdent::<Spice>::new("x")).unwrap_err(),
        DeckError::ValueNotAllowed
    );
    assert!(DeckValue::<Spice>::named("level", 3).is_ok());
}

#[test]
fn spice_params_take_numbers_only() {
    let mut deck = Deck::<Spice>::new();
    deck.set("rload", 1e3).unwrap().set("n", 4_u32).unwrap();
    for refused in [
        deck.set("a", DeckText::<Spice>::new("rload")).unwrap_err(),
        deck.set("b", DeckIdent::<Spice>::new("x")).unwrap_err(),
        deck.set("c", Broken("fast")).unwrap_err(),
        deck.set("d", DeckValue::<Spice>::named("is", 1.0))
            .unwrap_err(),
    ] {
        assert_eq!(refused, DeckError::ValueNotAllowed);
    }
    assert_eq!(
        String::from_utf8(deck.render().unwrap()).unwrap(),
        "hardened-mcp generated netlist\n.param rload = 1000.0\n.param n = 4\n.end\n"
    );
}

#[test]
fn refused_values_leave_the_deck_unchanged() {
    let mut deck = Deck::<KeyValue>::new();
    deck.set("cells", 200_u32)
        .unwrap()
        .set("boundary", Boundary::Dirichlet)
        .unwrap();
    let before = deck.render().unwrap();
    assert!(deck.set("label", text::<KeyValue>("x\ninclude y")).is_err());
    let _ = text::<KeyValue>("x\ninclude y").map(|t| deck.set("label", t));
    assert!(deck.set("length", f64::NAN).is_err());
    assert!(deck.set("cells", 1).is_err());
    assert!(deck.set("include", 1).is_err());
    assert_eq!(deck.render().unwrap(), before);
}

#[test]
fn error_texts_never_echo_the_value() {
    let canary = "CANARY-7f3a";
    for input in [
        format!("{canary}\n"),
        format!("{canary}#"),
        format!("{canary}/x"),
        format!("include {canary}"),
        format!("{canary}{}", "a".repeat(300)),
        format!("{canary}\""),
    ] {
        let kv = text::<KeyValue>(&input).unwrap_err().to_string();
        let sp = text::<Spice>(&input).unwrap_err().to_string();
        assert!(!kv.contains(canary) && !sp.contains(canary));
        assert!(kv.starts_with("a deck text value"), "{kv}");
    }
}

#[test]
fn a_spice_deck_renders_as_expected() {
    let mut deck = Deck::<Spice>::new();
    let node_in = DeckIdent::<Spice>::new("in").unwrap();
    let node_out = DeckIdent::<Spice>::new("out").unwrap();
    let ground = DeckIdent::<Spice>::new("0").unwrap();
    deck.set("rload", 1.0e3).unwrap();
    deck.statement(
        "V1",
        [
            DeckValue::from_ident(node_in.clone()),
            DeckValue::from_ident(ground.clone()),
            DeckValue::number(5.0).unwrap(),
        ],
    )
    .unwrap();
    deck.statement(
        "R1",
        [
            DeckValue::from_ident(node_in),
            DeckValue::from_ident(node_out.clone()),
            DeckValue::number(1.5e-7).unwrap(),
        ],
    )
    .unwrap();
    deck.statement(
        ".model",
        [
            DeckValue::from_text(text::<Spice>("dmod").unwrap()),
            DeckValue::token(&Broken("D")).unwrap(),
            DeckValue::named("is", 1e-14).unwrap(),
        ],
    )
    .unwrap();
    deck.statement(
        ".tran",
        [DeckValue::number(1e-6).unwrap(), DeckValue::integer(1)],
    )
    .unwrap();
    let rendered = String::from_utf8(deck.render().unwrap()).unwrap();
    assert_eq!(
        rendered,
        "hardened-mcp generated netlist\n\
         .param rload = 1000.0\n\
         V1 in 0 5.0\n\
         R1 in out 1.5e-7\n\
         .model dmod D is=1e-14\n\
         .tran 1e-6 1\n\
         .end\n"
    );
    let _ = (node_out, ground);
}

/// Control syntax, judged independently of the formats' own scanners.
fn kv_line_is_control(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('#')
        || line.contains('#')
        || t.to_ascii_lowercase().starts_with("include")
        || line.contains(['\n', '\r'])
}

fn spice_line_is_control(line: &str) -> bool {
    let t = line.trim_start().to_ascii_lowercase();
    t.starts_with(['*', '+', '#'])
        || line.contains([';', '$', '\n', '\r', '{', '}', '\''])
        || line.contains("//")
        || [".inc", ".lib", ".control", ".endc", ".end", "shell"]
            .iter()
            .any(|w| t.starts_with(w))
}

fn hostile_text() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        12 => "[a-zA-Z0-9 _.,:()+%@-]{1,8}",
        1 => Just("include".to_owned()),
        1 => Just(".include".to_owned()),
        1 => Just(".control".to_owned()),
        1 => Just("shell".to_owned()),
        1 => Just(".lib".to_owned()),
        1 => Just("..".to_owned()),
        1 => Just(".".to_owned()),
        1 => "[#;$*+/\\\\~\n\r{}'\"=\t\u{2028}\u{85}\u{0}]",
        1 => any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(pieces, 1..8).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn accepted_key_value_text_never_forms_control_syntax(s in hostile_text()) {
        if let Ok(t) = DeckText::<KeyValue>::new(&s) {
            let mut deck = Deck::<KeyValue>::new();
            deck.set("label", t).unwrap();
            let rendered = String::from_utf8(deck.render().unwrap()).unwrap();
            let lines: Vec<&str> = rendered.lines().collect();
            prop_assert_eq!(lines.len(), 1);
            prop_assert_eq!(lines[0], format!("label = {s}"));
            prop_assert!(!kv_line_is_control(lines[0]));
            prop_assert!(KeyValue::control_syntax(lines[0]).is_none());
            prop_assert!(!s.contains(['/', '\\', '~']) && !s.contains(".."));
        }
        if let Ok(i) = DeckIdent::<KeyValue>::new(&s) {
            let mut deck = Deck::<KeyValue>::new();
            deck.set("name", i).unwrap();
            let rendered = String::from_utf8(deck.render().unwrap()).unwrap();
            prop_assert_eq!(rendered.lines().count(), 1);
            prop_assert!(!kv_line_is_control(rendered.trim_end()));
        }
    }

    #[test]
    fn words_admit_no_text_and_identifiers_stay_one_word(s in hostile_text()) {
        // Free text is never a value of a words deck, whatever it holds.
        prop_assert!(DeckText::<Words>::new(&s).is_err());
        if let Ok(i) = DeckIdent::<Words>::new(&s) {
            let mut deck = Deck::<Words>::new();
            deck.statement("NAME", [DeckValue::from_ident(i)]).unwrap();
            let rendered = String::from_utf8(deck.render().unwrap()).unwrap();
            prop_assert_eq!(rendered, format!("NAME {s}\n"));
            prop_assert!(s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        }
    }

    #[test]
    fn accepted_spice_text_never_forms_control_syntax(s in hostile_text()) {
        if let Ok(t) = DeckText::<Spice>::new(&s) {
            let mut deck = Deck::<Spice>::new();
            // ngspice evaluates `.param` right-hand sides: text never goes there.
            prop_assert_eq!(deck.set("label", t.clone()).unwrap_err(), DeckError::ValueNotAllowed);
            deck.statement("R1", [DeckValue::from_text(t.clone()), DeckValue::from_text(t)]).unwrap();
            let rendered = String::from_utf8(deck.render().unwrap()).unwrap();
            let lines: Vec<&str> = rendered.lines().collect();
            prop_assert_eq!(lines.len(), 3);
            prop_assert_eq!(lines[1], format!("R1 {s} {s}"));
            prop_assert!(!spice_line_is_control(lines[1]));
            prop_assert!(Spice::control_syntax(lines[1]).is_none());
            // Exactly the fields written: text adds none.
            prop_assert_eq!(lines[1].split_whitespace().count(), 3);
        }
        if let Ok(i) = DeckIdent::<Spice>::new(&s) {
            let mut deck = Deck::<Spice>::new();
            deck.statement("C1", [DeckValue::from_ident(i), DeckValue::integer(0)]).unwrap();
            let rendered = String::from_utf8(deck.render().unwrap()).unwrap();
            prop_assert_eq!(rendered.lines().count(), 3);
            prop_assert!(!spice_line_is_control(rendered.lines().nth(1).unwrap()));
        }
    }

    #[test]
    fn numbers_round_trip_and_read_as_floats(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        if x.is_finite() {
            let s = format_f64(x);
            prop_assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits());
            prop_assert!(s.contains(['.', 'e']));
            prop_assert!(s.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'-')));
            prop_assert!(s.len() <= 25, "{}", s);
            let mut deck = Deck::<Spice>::new();
            deck.set("x", x).unwrap();
            let rendered = String::from_utf8(deck.render().unwrap()).unwrap();
            prop_assert!(Spice::control_syntax(rendered.lines().nth(1).unwrap()).is_none());
        } else {
            prop_assert_eq!(DeckValue::<KeyValue>::number(x).unwrap_err(), DeckError::NonFinite);
        }
    }
}

#[test]
fn the_deck_size_is_bounded() {
    let mut deck = Deck::<KeyValue>::new();
    let mut refused = false;
    for i in 0..20_000u32 {
        let key: &'static str = Box::leak(format!("k{i}").into_boxed_str());
        if deck.set(key, i).is_err() {
            refused = true;
            break;
        }
    }
    assert!(refused);
    assert!(deck.render().unwrap().len() <= hardened_mcp::deck::MAX_DECK_BYTES);

    let long = "a".repeat(KeyValue::MAX_TEXT_LEN);
    let mut deck = Deck::<KeyValue>::new();
    for i in 0..5_000u32 {
        let key: &'static str = Box::leak(format!("k{i}").into_boxed_str());
        deck.set(key, DeckText::new(&long)).unwrap();
    }
    assert_eq!(deck.render().unwrap_err(), DeckError::TooLarge);
}

#[test]
fn tokens_map_enums_to_fixed_text() {
    let mut deck = Deck::<KeyValue>::new();
    deck.set("left", Boundary::Dirichlet).unwrap();
    // A reference to a token enum is a token too.
    #[allow(clippy::needless_borrows_for_generic_args)]
    deck.set("right", &Boundary::Periodic).unwrap();
    assert_eq!(
        String::from_utf8(deck.render().unwrap()).unwrap(),
        "left = dirichlet\nright = periodic\n"
    );
}
