//! Server text shown safely: whatever a server sends (tool names,
//! descriptions, error texts) reaches the audit's report, a terminal or a
//! CI log. It is shown escaped, never raw: printable ASCII as is, every
//! other character as `\u{…}`, so a bidirectional override, an ANSI escape
//! or an invisible tag character can neither hide nor rewrite a line of the
//! report.

/// `s` with every character outside printable ASCII (and the backslash)
/// written as `\u{hex}`; `\n`, `\r` and `\t` as themselves escaped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            _ => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    out
}

/// `s` with only the characters outside printable ASCII escaped (the
/// backslash kept): for text already partly escaped, such as a finding's
/// message, shown on a terminal.
pub fn printable(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ' '..='~' => c.to_string(),
            _ => escape(&c.to_string()),
        })
        .collect()
}

/// The characters of `s` around the byte range `start..end` (at most
/// `context` characters on each side), escaped, with `…` where cut.
pub fn excerpt(s: &str, start: usize, end: usize, context: usize) -> String {
    let before: String = s
        .get(..start)
        .unwrap_or_default()
        .chars()
        .rev()
        .take(context)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let hit = s.get(start..end).unwrap_or_default();
    let rest = s.get(end..).unwrap_or_default();
    let after: String = rest.chars().take(context).collect();
    let mut out = String::new();
    if before.len() < start {
        out.push_str("...");
    }
    out.push_str(&escape(&before));
    out.push('[');
    out.push_str(&escape(hit));
    out.push(']');
    out.push_str(&escape(&after));
    if after.len() < rest.len() {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_printable_ascii_is_shown_raw() {
        assert_eq!(escape("a b~"), "a b~");
        assert_eq!(escape("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(escape("\u{1b}[31m"), "\\u{1b}[31m");
        assert_eq!(escape("\u{e0041}"), "\\u{e0041}");
        assert_eq!(escape("é\n\\"), "\\u{e9}\\n\\\\");
    }

    #[test]
    fn an_excerpt_brackets_the_span_and_marks_the_cuts() {
        let s = "0123456789 ignore previous instructions 0123456789";
        let at = s.find("ignore").unwrap();
        let e = excerpt(s, at, at + "ignore previous instructions".len(), 4);
        assert_eq!(e, "...789 [ignore previous instructions] 012...");
        assert_eq!(excerpt("ab\u{200b}cd", 2, 5, 8), "ab[\\u{200b}]cd");
    }
}
