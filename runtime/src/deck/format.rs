//! The deck format trait: what a deck language treats as control syntax,
//! and how it writes keys, statements and values.

use super::{DeckError, DeckValue};

/// Syntax that changes how a deck is read, found in a rendered line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlSyntax {
    /// A whole-line comment.
    Comment,
    /// An inline comment delimiter.
    InlineComment,
    /// A continuation of the previous line.
    Continuation,
    /// An include or library directive (reads another file).
    Include,
    /// A control block (interactive commands inside the deck).
    ControlBlock,
    /// A shell escape.
    Shell,
    /// An expression the reader evaluates.
    Expression,
    /// A character that is not part of a word, or spacing other than one
    /// space between words (formats that admit words only, [`Words`](super::Words)).
    NotAWord,
}

/// A deck language: its character rules and its dangerous syntax.
///
/// Implementations describe, per format, which identifiers, tokens and free
/// text are admitted ([`check_ident`](Self::check_ident),
/// [`check_token`](Self::check_token), [`check_text`](Self::check_text)),
/// which keys and statement heads server code may use, how lines are
/// written, and which lines are control syntax
/// ([`control_syntax`](Self::control_syntax)). The checks must admit nothing
/// that, written where the format puts it, forms control syntax; the
/// `deck_*` property tests check this for the built-in formats.
pub trait DeckFormat: Sized + 'static {
    /// The format's name, for logs.
    const NAME: &'static str;
    /// Longest identifier, in bytes.
    const MAX_IDENT_LEN: usize;
    /// Longest free text, in bytes.
    const MAX_TEXT_LEN: usize;
    /// Fixed text written before the statements.
    const PROLOGUE: &'static str;
    /// Fixed text written after the statements.
    const EPILOGUE: &'static str;

    /// Checks a key of [`Deck::set`](super::Deck::set).
    fn check_key(key: &str) -> Result<(), DeckError>;
    /// Checks a head of [`Deck::statement`](super::Deck::statement).
    fn check_head(head: &str) -> Result<(), DeckError>;
    /// Checks a fixed token ([`DeckToken`](super::DeckToken) values and
    /// named-argument keys).
    fn check_token(token: &str) -> Result<(), DeckError>;
    /// Checks an identifier ([`DeckIdent`](super::DeckIdent)).
    fn check_ident(ident: &str) -> Result<(), DeckError>;
    /// Checks free text ([`DeckText`](super::DeckText)).
    fn check_text(text: &str) -> Result<(), DeckError>;

    /// Checks the value of a [`Deck::set`](super::Deck::set): formats whose
    /// assignments evaluate their right-hand side (SPICE `.param`) admit
    /// only numbers there. Admits every kind by default.
    fn check_assignment(value: &DeckValue<Self>) -> Result<(), DeckError> {
        let _ = value;
        Ok(())
    }

    /// Checks the value of a named argument `key=value`
    /// ([`DeckValue::named`](super::DeckValue::named)). Admits every kind by
    /// default.
    fn check_named(value: &DeckValue<Self>) -> Result<(), DeckError> {
        let _ = value;
        Ok(())
    }

    /// Writes the line of `key = value`, without line feed.
    fn write_assignment(out: &mut String, key: &str, value: &DeckValue<Self>);
    /// Writes the line of a statement, without line feed: by default the
    /// head and each argument, separated by single spaces.
    fn write_statement(out: &mut String, head: &str, args: &[DeckValue<Self>]) {
        out.push_str(head);
        for arg in args {
            out.push(' ');
            arg.write(out);
        }
    }

    /// The control syntax a line (without line feed) contains, if any.
    fn control_syntax(line: &str) -> Option<ControlSyntax>;
}

/// A line break in any of the forms readers honour.
pub(crate) fn has_line_break(text: &str) -> bool {
    text.contains([
        '\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}',
    ])
}

/// Path syntax: separators, home, parent, or a bare `.`.
pub(crate) fn has_path_syntax(text: &str) -> bool {
    text.contains(['/', '\\', '~']) || text.contains("..") || text == "."
}

/// Whether `word` occurs in `text` as a whole word (ASCII letters, digits
/// and `_` are word characters), ignoring ASCII case.
pub(crate) fn has_word(text: &str, word: &str) -> bool {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = text.as_bytes();
    let n = word.len();
    if n == 0 || bytes.len() < n {
        return false;
    }
    (0..=bytes.len() - n).any(|i| {
        bytes[i..i + n].eq_ignore_ascii_case(word.as_bytes())
            && (i == 0 || !is_word(bytes[i - 1]))
            && (i + n == bytes.len() || !is_word(bytes[i + n]))
    })
}

/// `text` is non-empty, at most `max` bytes, starts with a byte in `first`
/// and continues with bytes in `rest`.
pub(crate) fn check_shape(
    text: &str,
    max: usize,
    first: impl Fn(u8) -> bool,
    rest: impl Fn(u8) -> bool,
) -> Result<(), DeckError> {
    let bytes = text.as_bytes();
    let Some((&head, tail)) = bytes.split_first() else {
        return Err(DeckError::Empty);
    };
    if bytes.len() > max {
        return Err(DeckError::TooLong);
    }
    if has_line_break(text) {
        return Err(DeckError::LineBreak);
    }
    if !first(head) || !tail.iter().all(|b| rest(*b)) {
        return Err(DeckError::ForbiddenCharacter);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words() {
        assert!(has_word("include", "include"));
        assert!(has_word("x INCLUDE y", "include"));
        assert!(has_word("a,include", "include"));
        assert!(!has_word("included", "include"));
        assert!(!has_word("my_include", "include"));
        assert!(!has_word("inc", "include"));
    }
}
