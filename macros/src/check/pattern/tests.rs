use super::*;

#[test]
fn the_common_spellings_pass_and_the_dialect_specific_ones_are_refused() {
    for ok in [
        "^[a-z][a-z0-9]{0,15}_[A-Za-z0-9_-]{22,80}$",
        "^[A-Z]{2}-[0-9]{4}$",
        "^(?:v|V)[0-9]+(\\.[0-9]+)*$",
        "^(?<major>[0-9]+)\\.(?<minor>[0-9]+)$",
        "^[^\\n\\r]*$",
        "^\\x41\\u00e9\\u{1F600}\\t$",
        "^a+?b??c*?$",
        "^[\\-\\]\\[\\\\]$",
        "héllo|wörld",
        "",
    ] {
        assert_eq!(
            check(ok).map(|p| p.as_str().to_owned()),
            Ok(ok.to_owned()),
            "{ok}"
        );
    }
    for (bad, construct) in [
        ("^\\d+$", "\\d"),
        ("^[\\w.]+$", "\\w"),
        ("^\\S$", "\\S"),
        ("^.{3}$", "."),
        ("(?i)^abc$", "(?i)"),
        ("^(?i:abc)$", "i"),
        ("\\Aabc\\z", "\\A"),
        ("\\bword\\b", "\\b"),
        ("^\\p{L}+$", "\\p{L}"),
        ("^[[:alpha:]]+$", "[:alpha:]"),
        ("^[a-z&&[^aeiou]]$", "a-z&&[^aeiou]"),
        ("^[a[bc]]$", "[bc]"),
        ("^(?P<n>a)$", "(?P<n>a)"),
        ("^a]$", "]"),
        ("^\\#$", "\\#"),
        ("^\\-$", "\\-"),
        ("^\\U00000041$", "\\U00000041"),
        ("^\\x{41}$", "\\x{41}"),
        ("^\\a$", "\\a"),
        ("^*a", "^*"),
    ] {
        match check(bad) {
            Err(Fault::Dialect(r)) => assert_eq!(r.construct, construct, "{bad}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[path = "differential.rs"]
mod differential;

#[test]
fn a_pattern_that_does_not_parse_is_a_syntax_fault() {
    assert_eq!(check("^(unclosed$"), Err(Fault::Syntax));
    assert_eq!(check("a{,3}"), Err(Fault::Syntax));
    // Parses, but names no class: refused by the translation step.
    assert_eq!(check("^\\p{NoSuchClass}$"), Err(Fault::Syntax));
    assert_eq!(check("^[z-a]$"), Err(Fault::Syntax));
}
