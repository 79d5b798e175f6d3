//! The admitted subset against an ECMA-262 engine: patterns generated from
//! the subset's grammar must compile in Node.js with the `u` flag and
//! accept exactly the strings Rust's `regex` accepts, on matches of the
//! pattern and on strings chosen where the dialects part (non-ASCII
//! digits, `\r`, U+2028, astral characters, case variants). The positive
//! control: each refused construct does part them on the same strings.
//!
//! Needs `node` on PATH; without it the test says so and passes, unless
//! `HARDENED_MCP_REQUIRE_NODE` is set (CI sets it).

use std::io::Write as _;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use proptest::test_runner::TestRunner;

use super::super::check;

/// Where `\d`, `.`, `\w`, `\s`, `\b` and case folding differ.
const TRICKY: &[&str] = &[
    "", "a", "z", "A", "_", "-", " ", "3", "٣", "７", "\r", "\n", "\t", "\u{2028}", "\u{a0}",
    "\u{85}", "\u{feff}", "😀", "ſ", "s", "S", "K", "k", "\u{212a}", "é", "és", "e\u{301}", "ab12",
    "a b", "x.y",
];

/// ECMA-262 results (`null` where the pattern does not compile) of each
/// pattern on each input, from Node.js; `None` without Node.js.
fn ecma(cases: &[(String, Vec<String>)]) -> Option<Vec<Option<Vec<bool>>>> {
    const SCRIPT: &str = r#"
        const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
        const out = cases.map(([p, xs]) => {
            let r;
            try { r = new RegExp(p, "u"); } catch (e) { return null; }
            return xs.map((x) => r.test(x));
        });
        process.stdout.write(JSON.stringify(out));
    "#;
    let child = Command::new("node")
        .args(["-e", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let Ok(mut child) = child else {
        assert!(
            std::env::var_os("HARDENED_MCP_REQUIRE_NODE").is_none(),
            "Node.js is required (HARDENED_MCP_REQUIRE_NODE is set) but `node` is not on PATH"
        );
        eprintln!("Node.js is not installed: the ECMA-262 differential test is skipped");
        return None;
    };
    let input = serde_json::to_vec(cases).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "node failed");
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn rust(pattern: &str, inputs: &[String]) -> Option<Vec<bool>> {
    let r = regex::Regex::new(pattern).ok()?;
    Some(inputs.iter().map(|x| r.is_match(x)).collect())
}

/// Patterns of the admitted subset.
fn subset() -> impl Strategy<Value = String> {
    let literal = prop_oneof![
        proptest::char::range('a', 'f').prop_map(String::from),
        proptest::char::range('0', '4').prop_map(String::from),
        prop::sample::select(vec!["_", "-", " ", "@", ":", "é", "٣", "ſ", "K", "😀", "/"])
            .prop_map(String::from),
        prop::sample::select(vec![
            "\\.", "\\+", "\\(", "\\)", "\\[", "\\]", "\\{", "\\}", "\\|", "\\/", "\\$"
        ])
        .prop_map(String::from),
        prop::sample::select(vec!["\\x41", "\\u00e9", "\\u{1F600}", "\\t", "\\n", "\\r"])
            .prop_map(String::from),
    ];
    let class_item = prop::sample::select(vec![
        "a-z", "A-Z", "0-9", "a-c", "_", "\\-", "\\]", "\\\\", "é", "٣", "\\u2028", "\\r", " ",
        "😀",
    ]);
    let class = (any::<bool>(), prop::collection::vec(class_item, 1..4))
        .prop_map(|(neg, items)| format!("[{}{}]", if neg { "^" } else { "" }, items.concat()));
    let atom = prop_oneof![3 => literal, 2 => class];
    let quant = prop::sample::select(vec![
        "", "", "", "*", "+", "?", "{2}", "{1,3}", "{2,}", "*?", "+?", "??",
    ]);
    let piece = (atom, quant).prop_map(|(a, q)| format!("{a}{q}"));
    let seq = prop::collection::vec(piece, 1..4).prop_map(|p| p.concat());
    let leaf = seq.clone();
    let expr = leaf.prop_recursive(2, 12, 3, move |inner| {
        prop_oneof![
            // Groups are optional, never repeated: a repeated group of
            // repetitions backtracks exponentially in V8 (and its
            // linear-time fallback does not take the `u` flag).
            (
                inner.clone(),
                prop::sample::select(vec!["", "?"]),
                any::<bool>()
            )
                .prop_map(|(e, q, cap)| format!("({}{e}){q}", if cap { "" } else { "?:" })),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| v.join("|")),
            prop::collection::vec(inner, 2..3).prop_map(|v| v.concat()),
        ]
    });
    (any::<bool>(), expr, any::<bool>()).prop_map(|(a, e, z)| {
        format!(
            "{}{e}{}",
            if a { "^" } else { "" },
            if z { "$" } else { "" }
        )
    })
}

/// Inputs for `pattern`: some of its matches, each also with a tricky
/// character inserted, and the tricky strings themselves.
fn inputs(pattern: &str, runner: &mut TestRunner) -> Vec<String> {
    let mut out: Vec<String> = TRICKY.iter().map(|s| (*s).to_owned()).collect();
    let body = pattern.strip_prefix('^').unwrap_or(pattern);
    let body = body
        .strip_suffix('$')
        .filter(|b| !b.ends_with('\\'))
        .unwrap_or(body);
    if let Ok(matches) = proptest::string::string_regex(body) {
        for i in 0..6 {
            if let Ok(tree) = matches.new_tree(runner) {
                let m = tree.current();
                let tricky = TRICKY[(i * 7 + m.len()) % TRICKY.len()];
                let cut = m
                    .char_indices()
                    .nth(m.chars().count() / 2)
                    .map_or(m.len(), |(j, _)| j);
                out.push(format!("{}{tricky}{}", &m[..cut], &m[cut..]));
                out.push(m);
            }
        }
    }
    out
}

/// The runtime checks a `pattern` with `regex-lite` (smaller than `regex`,
/// and without Unicode classes): on the admitted subset it must compile
/// every pattern `regex` compiles and accept exactly the same strings.
#[test]
fn the_admitted_subset_means_the_same_to_regex_lite() {
    let mut runner = TestRunner::deterministic();
    let strategy = subset();
    let mut checked = 0;
    while checked < 2000 {
        let p = strategy.new_tree(&mut runner).unwrap().current();
        let Ok(full) = regex::Regex::new(&p) else {
            continue;
        };
        assert!(check(&p).is_ok(), "the generator left the subset: {p}");
        let lite = regex_lite::Regex::new(&p)
            .unwrap_or_else(|e| panic!("regex-lite refuses an admitted pattern {p:?}: {e}"));
        for x in inputs(&p, &mut runner) {
            assert_eq!(
                lite.is_match(&x),
                full.is_match(&x),
                "regex-lite and regex part on {p:?} against {x:?}"
            );
        }
        checked += 1;
    }
    // The positive control: outside the subset the two engines part (the
    // rule refuses these: Unicode classes and digits).
    for (p, x) in [("^\\d$", "٣"), ("^\\w$", "é")] {
        let full = regex::Regex::new(p).unwrap().is_match(x);
        let lite = regex_lite::Regex::new(p).unwrap().is_match(x);
        assert_ne!(full, lite, "{p} on {x}");
        assert!(check(p).is_err(), "{p} is refused by the rule");
    }
}

#[test]
fn the_admitted_subset_means_the_same_in_rust_and_in_ecma_262() {
    let mut runner = TestRunner::deterministic();
    let strategy = subset();
    let mut cases = Vec::new();
    while cases.len() < 1000 {
        let p = strategy.new_tree(&mut runner).unwrap().current();
        if regex::Regex::new(&p).is_err() {
            continue;
        }
        assert!(check(&p).is_ok(), "the generator left the subset: {p}");
        let xs = inputs(&p, &mut runner);
        cases.push((p, xs));
    }
    // The positive control: what the rule refuses parts the two engines.
    let refused = [
        "^\\d$",
        "^.$",
        "^\\w$",
        "^\\s$",
        "\\bs",
        "^[[:digit:]]$",
        "(?i)^s$",
        "^\\p{Greek}$",
        "^[a[b]]$",
    ];
    for p in refused {
        assert!(check(p).is_err(), "{p}");
        cases.push((
            p.to_owned(),
            TRICKY.iter().map(|s| (*s).to_owned()).collect(),
        ));
    }
    let Some(node) = ecma(&cases) else { return };
    assert_eq!(node.len(), cases.len());
    let mut differ = Vec::new();
    for ((pattern, xs), ecma) in cases.iter().zip(&node) {
        let rust = rust(pattern, xs);
        let same = match (&rust, ecma) {
            (Some(r), Some(e)) => r == e,
            _ => false,
        };
        if refused.contains(&pattern.as_str()) {
            assert!(
                !same,
                "the control {pattern} reads the same in both: the harness sees nothing"
            );
        } else if !same {
            let detail: Vec<String> = match (&rust, ecma) {
                (Some(r), Some(e)) => xs
                    .iter()
                    .zip(r.iter().zip(e))
                    .filter(|(_, (a, b))| a != b)
                    .map(|(x, (a, b))| format!("{x:?}: rust {a}, ecma {b}"))
                    .collect(),
                _ => vec![format!(
                    "compiles in rust: {}, in ecma: {}",
                    rust.is_some(),
                    ecma.is_some()
                )],
            };
            differ.push(format!("{pattern:?}: {}", detail.join("; ")));
        }
    }
    assert!(
        differ.is_empty(),
        "admitted patterns that differ:\n{}",
        differ.join("\n")
    );
}
