//! The line-oriented `key = value` deck format with `#` comments and an
//! `include` directive (the example heat1d solver reads it).

use super::format::{check_shape, has_line_break, has_path_syntax, has_word};
use super::{ControlSyntax, DeckError, DeckFormat, DeckValue};

/// `key = value` lines; `#` starts a comment (anywhere on a line);
/// `include <file>` at the start of a line reads another file.
///
/// | item | rule |
/// |---|---|
/// | key | `[a-z][a-z0-9_]*`, at most 64 bytes, not `include` |
/// | identifier | `[A-Za-z][A-Za-z0-9_-]*`, at most 64 bytes |
/// | token | `[A-Za-z0-9_+-][A-Za-z0-9_.+-]*`, at most 64 bytes, no `..` |
/// | free text | at most 256 bytes of ASCII letters, digits, space and `_ - . , : ( ) + % @`; no leading or trailing space; refused: line breaks, `#`, the word `include`, `/`, `\`, `~`, `..`, a bare `.` |
///
/// Statements other than assignments are not part of the format.
#[derive(Debug, Clone, Copy)]
pub struct KeyValue;

const DIRECTIVE: &str = "include";

fn text_char(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b' ' | b'_' | b'-' | b'.' | b',' | b':' | b'(' | b')' | b'+' | b'%' | b'@'
        )
}

impl DeckFormat for KeyValue {
    const NAME: &'static str = "key-value";
    const MAX_IDENT_LEN: usize = 64;
    const MAX_TEXT_LEN: usize = 256;
    const PROLOGUE: &'static str = "";
    const EPILOGUE: &'static str = "";

    fn check_key(key: &str) -> Result<(), DeckError> {
        check_shape(
            key,
            64,
            |b| b.is_ascii_lowercase(),
            |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_',
        )
        .map_err(|_| DeckError::InvalidKey)?;
        if key == DIRECTIVE {
            return Err(DeckError::InvalidKey);
        }
        Ok(())
    }

    fn check_head(_head: &str) -> Result<(), DeckError> {
        Err(DeckError::InvalidHead)
    }

    fn check_token(token: &str) -> Result<(), DeckError> {
        check_shape(
            token,
            64,
            |b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-'),
            |b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-'),
        )
        .map_err(|_| DeckError::InvalidToken)?;
        if token.contains("..") || has_word(token, DIRECTIVE) {
            return Err(DeckError::InvalidToken);
        }
        Ok(())
    }

    fn check_ident(ident: &str) -> Result<(), DeckError> {
        check_shape(
            ident,
            Self::MAX_IDENT_LEN,
            |b| b.is_ascii_alphabetic(),
            |b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'),
        )?;
        if has_word(ident, DIRECTIVE) {
            return Err(DeckError::Directive);
        }
        Ok(())
    }

    fn check_text(text: &str) -> Result<(), DeckError> {
        if text.is_empty() {
            return Err(DeckError::Empty);
        }
        if text.len() > Self::MAX_TEXT_LEN {
            return Err(DeckError::TooLong);
        }
        if has_line_break(text) {
            return Err(DeckError::LineBreak);
        }
        if text.contains('#') {
            return Err(DeckError::Comment);
        }
        if has_word(text, DIRECTIVE) {
            return Err(DeckError::Directive);
        }
        if has_path_syntax(text) {
            return Err(DeckError::Path);
        }
        if !text.bytes().all(text_char) || text.starts_with(' ') || text.ends_with(' ') {
            return Err(DeckError::ForbiddenCharacter);
        }
        Ok(())
    }

    fn write_assignment(out: &mut String, key: &str, value: &DeckValue<Self>) {
        out.push_str(key);
        out.push_str(" = ");
        value.write(out);
    }

    fn control_syntax(line: &str) -> Option<ControlSyntax> {
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') {
            return Some(ControlSyntax::Comment);
        }
        if line.contains('#') {
            return Some(ControlSyntax::InlineComment);
        }
        let first = trimmed.split([' ', '\t', '=']).next().unwrap_or("");
        if first.eq_ignore_ascii_case(DIRECTIVE) {
            return Some(ControlSyntax::Include);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        for good in ["cells", "t_end", "a1"] {
            assert_eq!(KeyValue::check_key(good), Ok(()), "{good}");
        }
        for bad in ["", "Cells", "1a", "_a", "a-b", "a b", "include", "a\n", "ä"] {
            assert_eq!(
                KeyValue::check_key(bad),
                Err(DeckError::InvalidKey),
                "{bad}"
            );
        }
    }

    #[test]
    fn control_lines() {
        assert_eq!(
            KeyValue::control_syntax("# x"),
            Some(ControlSyntax::Comment)
        );
        assert_eq!(
            KeyValue::control_syntax("  #x"),
            Some(ControlSyntax::Comment)
        );
        assert_eq!(
            KeyValue::control_syntax("a = b # c"),
            Some(ControlSyntax::InlineComment)
        );
        assert_eq!(
            KeyValue::control_syntax("include x"),
            Some(ControlSyntax::Include)
        );
        assert_eq!(
            KeyValue::control_syntax("INCLUDE=x"),
            Some(ControlSyntax::Include)
        );
        assert_eq!(KeyValue::control_syntax("label = include"), None);
        assert_eq!(KeyValue::control_syntax("cells = 200"), None);
    }
}
