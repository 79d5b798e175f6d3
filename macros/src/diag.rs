//! Diagnostics: every compile error states what is wrong, why it is unsafe
//! and how to fix it, and all errors of an item are reported together.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};

use crate::rules::Rule;

/// Where an error points: one token, or a whole token range.
pub enum At {
    Span(Span),
    Tokens(TokenStream),
}

impl From<Span> for At {
    fn from(s: Span) -> Self {
        At::Span(s)
    }
}

/// The whole range of `t` (a type, a path).
pub fn at(t: &impl ToTokens) -> At {
    At::Tokens(t.to_token_stream())
}

/// Collected errors of one macro invocation.
#[derive(Default)]
pub struct Errors {
    tokens: TokenStream,
    count: usize,
    /// Kept for the unit tests, which assert which rules an input raises.
    #[cfg_attr(not(test), allow(dead_code))]
    fired: Vec<Rule>,
}

impl Errors {
    /// Records a rule violation: `what` happened, `why` it is unsafe, `fix`.
    pub fn rule(
        &mut self,
        rule: Rule,
        at: impl Into<At>,
        what: impl AsRef<str>,
        why: &str,
        fix: impl AsRef<str>,
    ) {
        let msg = format!(
            "{}\n  = note: {why}\n  = help: {}",
            what.as_ref(),
            fix.as_ref()
        );
        self.push(
            rule,
            match at.into() {
                At::Span(s) => syn::Error::new(s, msg),
                At::Tokens(t) => syn::Error::new_spanned(t, msg),
            },
        );
    }

    fn push(&mut self, rule: Rule, e: syn::Error) {
        self.tokens.extend(e.to_compile_error());
        self.count += 1;
        self.fired.push(rule);
    }

    /// The rules raised so far, in order.
    #[cfg(test)]
    pub fn fired(&self) -> &[Rule] {
        &self.fired
    }

    /// Records darling's errors of `#[attr(...)]`. Unknown and duplicated
    /// keys keep darling's text ("did you mean") and gain the reason and a
    /// fix; other errors (malformed values) are kept as darling wrote them.
    pub fn darling(&mut self, e: darling::Error, attr: &str) {
        for e in e.flatten() {
            // darling's own text and span (a location path only when the
            // error has no span of its own).
            let e = syn::Error::from(e);
            let (span, msg) = (e.span(), e.to_string());
            if msg.starts_with("Unknown field: ") {
                self.rule(
                    Rule::UnknownKey,
                    span,
                    &msg,
                    "an unknown key declares nothing: the bound or setting it was meant to \
                     declare would silently not be enforced",
                    format!(
                        "fix or remove the key; the keys of `#[{attr}(...)]` are listed in \
                         docs/attributes.md"
                    ),
                );
            } else if let Some(rest) = msg.strip_prefix("Duplicate field ") {
                let key = rest.split('`').nth(1).unwrap_or("the key");
                self.rule(
                    Rule::DuplicateKey,
                    span,
                    &msg,
                    "two values of one key could disagree, and only one of them would be enforced",
                    format!("keep one `{key}` in `#[{attr}(...)]`"),
                );
            } else {
                self.malformed(span, &msg, attr);
            }
        }
    }

    /// A value of the wrong form in `#[attr(...)]`: the parser's own text
    /// (darling's or syn's), with the reason and where the forms are listed.
    pub fn malformed(&mut self, span: Span, msg: &str, attr: &str) {
        self.rule(
            Rule::MalformedValue,
            span,
            msg,
            "a setting that cannot be read is not enforced; the attribute is refused as a whole",
            format!("write each key in its documented form (docs/attributes.md lists the keys of `#[{attr}(...)]`)"),
        );
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn into_tokens(self) -> TokenStream {
        self.tokens
    }
}

/// The closest candidate to `given`, for "did you mean".
pub fn did_you_mean<'a>(given: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (levenshtein(given, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// `#[hardened_tool]` / `#[bounded]` used outside `#[hardened_tools]`.
pub fn outside_hardened_tools(name: &str, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    errors.rule(
        Rule::OutsideHardenedTools,
        Span::call_site(),
        format!("`#[{name}]` is only meaningful inside a `#[hardened_tools]` impl block"),
        "without `#[hardened_tools]` nothing generates the strict parser, the checks or the route, \
         so the declared bounds would silently not be enforced",
        "put `#[hardened_tools]` on the enclosing `impl` block",
    );
    let errs = errors.into_tokens();
    let mut out = item.into_token_stream();
    out.extend(quote! { #errs });
    out
}
