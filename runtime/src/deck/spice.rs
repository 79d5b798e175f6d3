//! The SPICE netlist deck format (ngspice dialect), whose comments,
//! continuations, includes, control blocks and `shell` are control syntax.

use super::format::{check_shape, has_line_break, has_path_syntax, has_word};
use super::{ControlSyntax, DeckError, DeckFormat, DeckValue, ValueKind};

/// A SPICE netlist: a title line, element and dot-command lines, `.end`.
///
/// Control syntax in the ngspice dialect: `*` comment lines (and `#`),
/// `;`, `$` and `//` inline comments, `+` continuation lines, `.include`,
/// `.inc`, `.lib`, `.endl`, `.control` … `.endc` blocks (in which `shell`
/// runs a command), `.if` conditionals, `{…}` and quoted expressions.
/// Fields are separated by blanks, `,`, `=`, `(` and `)`, so free text may
/// contain none of them.
///
/// | item | rule |
/// |---|---|
/// | key (`.param key = value`) | `[a-z][a-z0-9_]*`, at most 32 bytes |
/// | statement head | an allowlisted dot command (`.tran`, `.op`, `.dc`, `.ac`, `.model`, `.subckt`, `.ends`, `.ic`, `.nodeset`, `.options`, `.option`, `.temp`, `.save`, `.print`, `.meas`, `.measure`, `.four`, `.noise`, `.tf`, `.global`; `.param` only through `Deck::set`), or an element name `[A-Za-z][A-Za-z0-9_]*` of at most 32 bytes that is not an interactive command (`shell`, `source`, …) |
/// | identifier (node, model name) | `[A-Za-z0-9_]+`, at most 32 bytes |
/// | token | `[A-Za-z0-9_][A-Za-z0-9_.+-]*`, at most 32 bytes, no `..` |
/// | free text | at most 64 bytes of ASCII letters, digits and `_ . + -`, not starting with `.`; refused: line breaks, `* ; $ #`, directive words (`.inc…`, `.lib`, `.control`, `.endc`, `.end`, `shell`), `/`, `\`, `~`, `..` |
///
/// Deck keys are written as `.param key = value`, numbers only (ngspice
/// evaluates the right-hand side as an expression); statements as the head
/// followed by space-separated arguments; named arguments as `key=value`,
/// with a number or a token as value.
#[derive(Debug, Clone, Copy)]
pub struct Spice;

const DOT_COMMANDS: &[&str] = &[
    ".tran", ".op", ".dc", ".ac", ".model", ".subckt", ".ends", ".ic", ".nodeset", ".options",
    ".option", ".temp", ".save", ".print", ".meas", ".measure", ".four", ".noise", ".tf",
    ".global",
];

/// Interactive (control-block) commands; refused as statement heads and
/// reported as control syntax at the start of a line.
const CONTROL_COMMANDS: &[&str] = &[
    "shell", "source", "exec", "cd", "write", "wrdata", "load", "echo", "set", "let", "run",
    "quit", "exit",
];

const DIRECTIVE_FRAGMENTS: &[&str] = &[".inc", ".lib", ".control", ".endc", ".end", ".exec"];

fn ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl DeckFormat for Spice {
    const NAME: &'static str = "spice";
    const MAX_IDENT_LEN: usize = 32;
    const MAX_TEXT_LEN: usize = 64;
    const PROLOGUE: &'static str = "hardened-mcp generated netlist\n";
    const EPILOGUE: &'static str = ".end\n";

    fn check_key(key: &str) -> Result<(), DeckError> {
        check_shape(
            key,
            32,
            |b| b.is_ascii_lowercase(),
            |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_',
        )
        .map_err(|_| DeckError::InvalidKey)
    }

    fn check_head(head: &str) -> Result<(), DeckError> {
        if head.starts_with('.') {
            return if DOT_COMMANDS.contains(&head) {
                Ok(())
            } else {
                Err(DeckError::InvalidHead)
            };
        }
        check_shape(head, 32, |b| b.is_ascii_alphabetic(), ident_char)
            .map_err(|_| DeckError::InvalidHead)?;
        if CONTROL_COMMANDS
            .iter()
            .any(|c| head.eq_ignore_ascii_case(c))
        {
            return Err(DeckError::InvalidHead);
        }
        Ok(())
    }

    fn check_token(token: &str) -> Result<(), DeckError> {
        check_shape(token, 32, ident_char, |b| {
            ident_char(b) || matches!(b, b'.' | b'+' | b'-')
        })
        .map_err(|_| DeckError::InvalidToken)?;
        if token.contains("..") {
            return Err(DeckError::InvalidToken);
        }
        Ok(())
    }

    fn check_ident(ident: &str) -> Result<(), DeckError> {
        check_shape(ident, Self::MAX_IDENT_LEN, ident_char, ident_char)
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
        if text.contains(['*', ';', '$', '#']) {
            return Err(DeckError::Comment);
        }
        let lower = text.to_ascii_lowercase();
        if text.starts_with('.')
            || DIRECTIVE_FRAGMENTS.iter().any(|d| lower.contains(d))
            || has_word(text, "shell")
        {
            return Err(DeckError::Directive);
        }
        if has_path_syntax(text) {
            return Err(DeckError::Path);
        }
        if !text
            .bytes()
            .all(|b| ident_char(b) || matches!(b, b'.' | b'+' | b'-'))
        {
            return Err(DeckError::ForbiddenCharacter);
        }
        Ok(())
    }

    /// ngspice evaluates the right-hand side of `.param` as an expression
    /// (a name in it refers to another parameter), so only numbers go there.
    fn check_assignment(value: &DeckValue<Self>) -> Result<(), DeckError> {
        match value.kind() {
            ValueKind::Number | ValueKind::Integer => Ok(()),
            _ => Err(DeckError::ValueNotAllowed),
        }
    }

    /// Model and option parameters may be expressions too: numbers and
    /// server-authored tokens only.
    fn check_named(value: &DeckValue<Self>) -> Result<(), DeckError> {
        match value.kind() {
            ValueKind::Number | ValueKind::Integer | ValueKind::Token => Ok(()),
            _ => Err(DeckError::ValueNotAllowed),
        }
    }

    fn write_assignment(out: &mut String, key: &str, value: &DeckValue<Self>) {
        out.push_str(".param ");
        out.push_str(key);
        out.push_str(" = ");
        value.write(out);
    }

    fn control_syntax(line: &str) -> Option<ControlSyntax> {
        let trimmed = line.trim_start();
        if trimmed.starts_with(['*', '#']) {
            return Some(ControlSyntax::Comment);
        }
        if trimmed.starts_with('+') || line.ends_with('\\') {
            return Some(ControlSyntax::Continuation);
        }
        if line.contains([';', '$']) || line.contains("//") {
            return Some(ControlSyntax::InlineComment);
        }
        if line.contains(['{', '}', '\'', '"']) {
            return Some(ControlSyntax::Expression);
        }
        let first = trimmed
            .split([' ', '\t', ',', '=', '(', ')'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if first.starts_with(".inc") || first.starts_with(".lib") || first == ".endl" {
            return Some(ControlSyntax::Include);
        }
        if matches!(
            first.as_str(),
            ".control" | ".endc" | ".end" | ".exec" | ".if" | ".elseif" | ".else" | ".endif"
        ) {
            return Some(ControlSyntax::ControlBlock);
        }
        if CONTROL_COMMANDS.contains(&first.as_str()) {
            return Some(ControlSyntax::Shell);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        for good in [".tran", ".model", "R1", "C_load", "Vin", "X1"] {
            assert_eq!(Spice::check_head(good), Ok(()), "{good}");
        }
        for bad in [
            ".include", ".inc", ".lib", ".control", ".endc", ".end", ".param", ".func", ".PARAM",
            "shell", "SHELL", "1R", "R-1", "", "+R1", "*R1", "R1 x",
        ] {
            assert_eq!(Spice::check_head(bad), Err(DeckError::InvalidHead), "{bad}");
        }
    }

    #[test]
    fn control_lines() {
        use ControlSyntax::*;
        for (line, kind) in [
            ("* comment", Comment),
            ("+ 1k", Continuation),
            ("R1 a b 1k ; note", InlineComment),
            ("R1 a b 1k $ note", InlineComment),
            ("R1 a b {x*2}", Expression),
            (".INCLUDE models.lib", Include),
            (".lib x", Include),
            (".control", ControlBlock),
            (".endc", ControlBlock),
            ("shell rm -rf", Shell),
        ] {
            assert_eq!(Spice::control_syntax(line), Some(kind), "{line}");
        }
        assert_eq!(Spice::control_syntax(".param r = 1000.0"), None);
        assert_eq!(Spice::control_syntax("R1 in out 1000.0"), None);
    }
}
