//! The plain deck format of many third-party solvers: one statement a
//! line, words separated by single spaces, nothing but words.

use super::format::{check_shape, has_line_break};
use super::{ControlSyntax, DeckError, DeckFormat, DeckValue};

/// Lines of space-separated words: `GRID 64 64`, `TOLERANCE 1e-8`,
/// `METHOD gauss_seidel` (a statement: a head and its values, with
/// [`Deck::statement`](super::Deck::statement)), or `cells 200` (an
/// assignment, with [`Deck::set`](super::Deck::set)). For a solver whose
/// input is words and numbers in a fixed order, without writing a
/// [`DeckFormat`] of its own.
///
/// Every character of a rendered line is a word character or the single
/// space between words, so no comment, continuation, quote, include or
/// expression syntax of any reader can appear: the format needs no
/// knowledge of the solver's own control syntax. Free text is refused.
///
/// | item | rule |
/// |---|---|
/// | key, head | `[A-Za-z][A-Za-z0-9_.-]*`, at most 64 bytes (server-authored) |
/// | identifier | `[A-Za-z][A-Za-z0-9_-]*`, at most 64 bytes |
/// | token | `[A-Za-z0-9_+-][A-Za-z0-9_.+-]*`, at most 64 bytes |
/// | number | finite, written with round-trip precision (`0.45`, `1e-8`, `200`) |
/// | free text | refused |
///
/// ```
/// use hardened_mcp::deck::{Deck, DeckText, DeckToken, DeckValue, Words};
///
/// #[derive(Clone, Copy)]
/// enum Method { GaussSeidel, Jacobi }
///
/// impl DeckToken for Method {
///     fn token(&self) -> &'static str {
///         match self { Method::GaussSeidel => "gauss_seidel", Method::Jacobi => "jacobi" }
///     }
/// }
///
/// let mut deck = Deck::<Words>::new();
/// deck.statement("GRID", [DeckValue::integer(64_u32), DeckValue::integer(32_u32)])?
///     .statement("TOLERANCE", [DeckValue::number(1e-8)?])?
///     .statement("METHOD", [DeckValue::token(&Method::GaussSeidel)?])?
///     .statement("END", [])?;
/// assert_eq!(
///     String::from_utf8(deck.render()?).unwrap(),
///     "GRID 64 32\nTOLERANCE 1e-8\nMETHOD gauss_seidel\nEND\n",
/// );
/// assert!(DeckValue::<Words>::number(f64::NAN).is_err());
/// assert!(deck.set("label", DeckText::new("rod A")).is_err()); // no free text
/// # Ok::<(), hardened_mcp::deck::DeckError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Words;

/// A byte of a word.
fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-')
}

/// A server-authored key or head.
fn check_name(name: &str) -> Result<(), DeckError> {
    check_shape(
        name,
        64,
        |b| b.is_ascii_alphabetic(),
        |b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'),
    )
}

impl DeckFormat for Words {
    const NAME: &'static str = "words";
    const MAX_IDENT_LEN: usize = 64;
    const MAX_TEXT_LEN: usize = 0;
    const PROLOGUE: &'static str = "";
    const EPILOGUE: &'static str = "";

    fn check_key(key: &str) -> Result<(), DeckError> {
        check_name(key).map_err(|_| DeckError::InvalidKey)
    }

    fn check_head(head: &str) -> Result<(), DeckError> {
        check_name(head).map_err(|_| DeckError::InvalidHead)
    }

    fn check_token(token: &str) -> Result<(), DeckError> {
        check_shape(
            token,
            64,
            |b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-'),
            word_byte,
        )
        .map_err(|_| DeckError::InvalidToken)
    }

    fn check_ident(ident: &str) -> Result<(), DeckError> {
        check_shape(
            ident,
            Self::MAX_IDENT_LEN,
            |b| b.is_ascii_alphabetic(),
            |b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'),
        )
    }

    fn check_text(text: &str) -> Result<(), DeckError> {
        if has_line_break(text) {
            return Err(DeckError::LineBreak);
        }
        Err(DeckError::ValueNotAllowed)
    }

    fn write_assignment(out: &mut String, key: &str, value: &DeckValue<Self>) {
        out.push_str(key);
        out.push(' ');
        value.write(out);
    }

    fn control_syntax(line: &str) -> Option<ControlSyntax> {
        let words_only = !line.is_empty()
            && !line.starts_with(' ')
            && !line.ends_with(' ')
            && !line.contains("  ")
            && line.bytes().all(|b| b == b' ' || word_byte(b));
        (!words_only).then_some(ControlSyntax::NotAWord)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deck::{Deck, DeckIdent, DeckText};

    #[test]
    fn names() {
        for good in ["GRID", "t_end", "a1", "x.y", "a-b"] {
            assert_eq!(Words::check_head(good), Ok(()), "{good}");
            assert_eq!(Words::check_key(good), Ok(()), "{good}");
        }
        for bad in ["", "1a", "_a", "a b", "a!", "a#", "&end", "a\n", "ä", "a;b"] {
            assert_eq!(Words::check_head(bad), Err(DeckError::InvalidHead), "{bad}");
            assert_eq!(Words::check_key(bad), Err(DeckError::InvalidKey), "{bad}");
        }
    }

    #[test]
    fn free_text_is_refused_and_identifiers_are_words() {
        assert!(DeckText::<Words>::new("rod A").is_err());
        assert!(DeckText::<Words>::new("x").is_err());
        assert!(DeckIdent::<Words>::new("rod_A").is_ok());
        for bad in ["rod A", "a!", "a/b", "-x", "a=b"] {
            assert!(DeckIdent::<Words>::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn assignments_and_statements_render_as_words() {
        let mut deck = Deck::<Words>::new();
        deck.set("cells", 200_u32)
            .unwrap()
            .set("dt", 2.5e-7)
            .unwrap()
            .statement("END", [])
            .unwrap();
        assert_eq!(
            String::from_utf8(deck.render().unwrap()).unwrap(),
            "cells 200\ndt 2.5e-7\nEND\n"
        );
        assert!(deck.set("x", f64::INFINITY).is_err());
    }

    #[test]
    fn only_words_pass_the_final_check() {
        assert_eq!(Words::control_syntax("GRID 64 32"), None);
        assert_eq!(Words::control_syntax("dt -1.5e-7"), None);
        for bad in [
            "", " GRID", "GRID ", "A  B", "A ! c", "A # c", "A 'b'", "A\tB", "A=B", "A &",
        ] {
            assert_eq!(
                Words::control_syntax(bad),
                Some(ControlSyntax::NotAWord),
                "{bad:?}"
            );
        }
    }
}
