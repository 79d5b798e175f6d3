//! A `pattern` means one thing to the server and another to a client when
//! the two regex dialects disagree: the server checks with Rust's `regex`
//! (Unicode-aware: `\d` matches `٣`), the schema advertises the same text
//! to clients that read it as ECMA-262 (as JSON Schema says; validators
//! such as Ajv compile it with the `u` flag, where `\d` is `[0-9]`). This
//! rule admits only the part of the syntax where both read the same:
//! literals, the escapes both know, bracketed classes of literals and
//! ranges, groups without flags, `^`/`$`, and the usual repetitions. The
//! rest is refused with the spelling that means the same in both.
//!
//! The admitted subset is tested against an ECMA-262 engine (Node.js) in
//! this module's tests.

use crate::model::Pattern;
use regex_syntax::ast::{
    self, AssertionKind, Ast, ClassSet, ClassSetItem, GroupKind, HexLiteralKind, LiteralKind,
    SpecialLiteralKind,
};

/// Why a pattern is refused: the construct as written, why it differs, and
/// what to write instead.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub construct: String,
    pub why: &'static str,
    pub fix: &'static str,
}

/// Why a pattern is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Fault {
    /// It does not parse as a regular expression.
    Syntax,
    /// It uses a construct the two dialects read differently.
    Dialect(Refusal),
}

/// Checks `source`: it must parse (as Rust's `regex` parses it) and use
/// only constructs that Rust's `regex` and ECMA-262 (`u` flag) read alike.
pub fn check(source: &str) -> Result<Pattern, Fault> {
    // Parsed once: the syntax, then the translation `regex` makes of it
    // (class names, ranges), which is what `regex_syntax::Parser` does.
    let Ok(ast) = ast::parse::Parser::new().parse(source) else {
        return Err(Fault::Syntax);
    };
    if regex_syntax::hir::translate::Translator::new()
        .translate(source, &ast)
        .is_err()
    {
        return Err(Fault::Syntax);
    }
    Walk { src: source }.ast(&ast).map_err(Fault::Dialect)?;
    Ok(Pattern::checked(source.to_owned()))
}

struct Walk<'a> {
    src: &'a str,
}

/// Escaped characters both dialects read as the character itself
/// (ECMA-262's syntax characters and `/`).
const SYNTAX: &str = "^$\\.*+?()[]{}|/";

impl Walk<'_> {
    fn text(&self, span: &ast::Span) -> String {
        self.src
            .get(span.start.offset..span.end.offset)
            .unwrap_or_default()
            .to_owned()
    }

    fn refuse(
        &self,
        span: &ast::Span,
        why: &'static str,
        fix: &'static str,
    ) -> Result<(), Refusal> {
        Err(Refusal {
            construct: self.text(span),
            why,
            fix,
        })
    }

    fn ast(&self, a: &Ast) -> Result<(), Refusal> {
        match a {
            Ast::Empty(_) => Ok(()),
            Ast::Flags(f) => self.refuse(
                &f.span,
                "inline flags are Rust syntax: ECMA-262 has no `(?i)`, so clients cannot compile \
                 the advertised pattern",
                "spell the variants out (`[Ss]` for a case-insensitive `s`)",
            ),
            Ast::Literal(l) => self.literal(l, false),
            Ast::Dot(span) => self.refuse(
                span,
                "`.` excludes only `\\n` in Rust but also `\\r`, U+2028 and U+2029 in ECMA-262",
                "write the class you mean, e.g. `[^\\n]`, or `[ -~]` for printable ASCII",
            ),
            Ast::Assertion(x) => match x.kind {
                AssertionKind::StartLine | AssertionKind::EndLine => Ok(()),
                AssertionKind::StartText | AssertionKind::EndText => self.refuse(
                    &x.span,
                    "`\\A` and `\\z` are Rust syntax that ECMA-262 does not have",
                    "anchor with `^` and `$` (without flags they mean start and end of the text in \
                     both)",
                ),
                _ => self.refuse(
                    &x.span,
                    "word boundaries follow Unicode word characters in Rust and ASCII ones in \
                     ECMA-262 (and `\\<`, `\\>`, `\\b{..}` are Rust syntax)",
                    "match the neighbouring characters explicitly, e.g. `(^|[^A-Za-z0-9_])`",
                ),
            },
            Ast::ClassUnicode(c) => self.refuse(
                &c.span,
                "Unicode classes have different names and versions in the two dialects, and \
                 need ECMA-262's `u` flag that not every client sets",
                "list the characters or ranges in a bracketed class, e.g. `[A-Za-z]`",
            ),
            Ast::ClassPerl(c) => self.refuse(
                &c.span,
                "`\\d` and `\\w` are Unicode-aware in Rust (`\\d` matches `٣`) and ASCII-only \
                 in ECMA-262, and `\\s` counts different spaces (U+0085, U+FEFF): the server and \
                 the schema would accept different strings",
                "write the ASCII class: `[0-9]` for `\\d`, `[A-Za-z0-9_]` for `\\w`, `[ \\t\\n\\r]` \
                 for `\\s` (and `[^..]` for the negations)",
            ),
            Ast::ClassBracketed(c) => self.class(&c.kind),
            Ast::Repetition(r) => {
                if let Ast::Assertion(_) = &*r.ast {
                    return self.refuse(
                        &r.span,
                        "a repeated `^` or `$` is a syntax error in ECMA-262",
                        "drop the repetition",
                    );
                }
                self.ast(&r.ast)
            }
            Ast::Group(g) => {
                match &g.kind {
                    GroupKind::CaptureIndex(_) => {}
                    GroupKind::CaptureName {
                        starts_with_p,
                        name,
                    } => {
                        let plain = name.name.starts_with(|c: char| c.is_ascii_alphabetic())
                            && name.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                        if !plain {
                            return self.refuse(
                                &name.span,
                                "group names beyond ASCII letters, digits and `_` are read \
                                 differently by the two dialects",
                                "name the group with ASCII letters, digits and `_`",
                            );
                        }
                        if *starts_with_p {
                            return self.refuse(
                                &g.span,
                                "`(?P<name>..)` is Rust and Python syntax that ECMA-262 does not \
                                 have",
                                "write `(?<name>..)`, or a group without a name",
                            );
                        }
                    }
                    GroupKind::NonCapturing(flags) => {
                        if !flags.items.is_empty() {
                            return self.refuse(
                                &flags.span,
                                "inline flags are Rust syntax: ECMA-262 clients cannot compile \
                                 the advertised pattern",
                                "drop the flags and spell the variants out (`[Ss]`)",
                            );
                        }
                    }
                }
                self.ast(&g.ast)
            }
            Ast::Alternation(x) => x.asts.iter().try_for_each(|a| self.ast(a)),
            Ast::Concat(x) => x.asts.iter().try_for_each(|a| self.ast(a)),
        }
    }

    fn literal(&self, l: &ast::Literal, in_class: bool) -> Result<(), Refusal> {
        const ESCAPE_WHY: &str = "this escape is Rust syntax that ECMA-262 (`u` flag) refuses or \
                                  reads differently";
        match &l.kind {
            LiteralKind::Verbatim => {
                if matches!(l.c, ']' | '{' | '}') || (in_class && l.c == '[') {
                    return self.refuse(
                        &l.span,
                        "an unescaped bracket or brace is a literal in Rust but a syntax error \
                         or a class boundary in ECMA-262",
                        "escape it: `\\]`, `\\{`, `\\}`, `\\[`",
                    );
                }
                Ok(())
            }
            LiteralKind::Meta | LiteralKind::Superfluous => {
                if SYNTAX.contains(l.c) || (in_class && l.c == '-') {
                    Ok(())
                } else {
                    self.refuse(
                        &l.span,
                        ESCAPE_WHY,
                        "escape only `^ $ \\ . * + ? ( ) [ ] { } | /` (and `-` inside a class); \
                         other punctuation needs no escape",
                    )
                }
            }
            LiteralKind::HexFixed(HexLiteralKind::X | HexLiteralKind::UnicodeShort)
            | LiteralKind::HexBrace(HexLiteralKind::UnicodeShort) => Ok(()),
            LiteralKind::Special(
                SpecialLiteralKind::Tab
                | SpecialLiteralKind::LineFeed
                | SpecialLiteralKind::CarriageReturn
                | SpecialLiteralKind::FormFeed
                | SpecialLiteralKind::VerticalTab,
            ) => Ok(()),
            _ => self.refuse(
                &l.span,
                ESCAPE_WHY,
                "write the character as `\\xHH` or `\\uHHHH` (or `\\u{H..}`), or `\\t \\n \\r \\f \\v`",
            ),
        }
    }

    fn class(&self, set: &ClassSet) -> Result<(), Refusal> {
        match set {
            ClassSet::BinaryOp(op) => self.refuse(
                &op.span,
                "class set operations (`&&`, `--`, `~~`) are Rust syntax; ECMA-262 reads them as \
                 characters",
                "write the resulting class out",
            ),
            ClassSet::Item(item) => self.class_item(item),
        }
    }

    fn class_item(&self, item: &ClassSetItem) -> Result<(), Refusal> {
        match item {
            ClassSetItem::Empty(_) => Ok(()),
            ClassSetItem::Literal(l) => self.literal(l, true),
            ClassSetItem::Range(r) => {
                self.literal(&r.start, true)?;
                self.literal(&r.end, true)
            }
            ClassSetItem::Ascii(a) => self.refuse(
                &a.span,
                "POSIX classes (`[[:alpha:]]`) are Rust syntax; ECMA-262 reads them as a class of \
                 the characters `[:alph`",
                "write the ranges: `[A-Za-z]` for `[[:alpha:]]`, `[0-9]` for `[[:digit:]]`",
            ),
            ClassSetItem::Unicode(c) => self.refuse(
                &c.span,
                "Unicode classes have different names and versions in the two dialects",
                "list the characters or ranges",
            ),
            ClassSetItem::Perl(c) => self.refuse(
                &c.span,
                "`\\d` and `\\w` are Unicode-aware in Rust and ASCII-only in ECMA-262, and \
                 `\\s` counts different spaces",
                "write the ASCII ranges: `0-9`, `A-Za-z0-9_`, ` \\t\\n\\r`",
            ),
            ClassSetItem::Bracketed(b) => self.refuse(
                &b.span,
                "nested classes are Rust syntax; ECMA-262 reads `[a[b]]` as `[a[b]` followed by \
                 `]`",
                "merge the nested class into its parent",
            ),
            ClassSetItem::Union(u) => u.items.iter().try_for_each(|i| self.class_item(i)),
        }
    }
}

#[cfg(test)]
mod tests;
