//! Numbers a JSON parser rounds into integers.
//!
//! serde_json reads a number written with a fraction or an exponent as the
//! nearest `f64`, so `1.00000000000000001` arrives as `1.0`, and an integer
//! argument would take it as `1`: rounded, not refused. The transports see
//! the text of a `tools/call` before it is parsed; they record where its
//! arguments hold such a number ([`scan_call`]), and the route refuses the
//! call when the tool's input schema declares an integer there
//! (`inexact_integer`), while a float argument keeps the nearest `f64`, as
//! JSON Schema validators read it.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::Value;

/// Deepest nesting the scan follows (serde_json refuses deeper messages
/// before they get here).
const MAX_DEPTH: usize = 160;
/// Most places one call records.
const MAX_FOUND: usize = 64;
/// Deepest `$ref` chain followed in a schema.
const MAX_REFS: usize = 8;

/// The JSON pointers, relative to a call's `arguments`, of the numbers
/// whose text is not an integer but whose nearest `f64` is one. Put in a
/// request's extensions by the transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InexactNumbers(pub(crate) Arc<[String]>);

/// The numbers of the `params.arguments` of the JSON-RPC message `message`
/// that only look integral after rounding; `None` when there are none (or
/// the text is not what it should be: the parser then refuses it anyway).
pub(crate) fn scan_call(message: &[u8]) -> Option<InexactNumbers> {
    // Cheap test first: such a number has a fraction or an exponent, so a
    // digit followed by `.`, `e` or `E` (JSON numbers always have a digit
    // before either); a letter `e` alone, in every key, is not one.
    if !message
        .windows(2)
        .any(|w| w[0].is_ascii_digit() && matches!(w[1], b'.' | b'e' | b'E'))
    {
        return None;
    }
    let mut scan = Scan {
        b: message,
        i: 0,
        path: Vec::new(),
        found: Vec::new(),
    };
    scan.value(0)?;
    (!scan.found.is_empty()).then(|| InexactNumbers(scan.found.into()))
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    path: Vec<String>,
    found: Vec<String>,
}

impl Scan<'_> {
    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn next(&mut self) -> Option<u8> {
        self.ws();
        let c = *self.b.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    fn under_arguments(&self) -> bool {
        self.path.len() >= 2 && self.path[0] == "params" && self.path[1] == "arguments"
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        match *self.b.get(self.i)? {
            b'{' => {
                self.i += 1;
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.ws();
                    let key = self.string()?;
                    (self.next()? == b':').then_some(())?;
                    self.path.push(key);
                    self.value(depth + 1)?;
                    self.path.pop();
                    match self.next()? {
                        b',' => {}
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Some(());
                }
                let mut index = 0usize;
                loop {
                    self.path.push(index.to_string());
                    self.value(depth + 1)?;
                    self.path.pop();
                    index += 1;
                    match self.next()? {
                        b',' => {}
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'"' => self.skip_string(),
            b't' | b'f' | b'n' => {
                while self.b.get(self.i).is_some_and(u8::is_ascii_lowercase) {
                    self.i += 1;
                }
                Some(())
            }
            _ => {
                let start = self.i;
                while self
                    .b
                    .get(self.i)
                    .is_some_and(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                {
                    self.i += 1;
                }
                let lexeme = self.b.get(start..self.i)?;
                if lexeme.is_empty() {
                    return None;
                }
                if self.under_arguments()
                    && self.found.len() < MAX_FOUND
                    && hides_a_fraction(lexeme)
                {
                    self.found.push(pointer(&self.path[2..]));
                }
                Some(())
            }
        }
    }

    /// The end of the string starting at `self.i` (its opening quote).
    fn string_end(&self) -> Option<usize> {
        let mut j = self.i + 1;
        loop {
            match *self.b.get(j)? {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
    }

    fn skip_string(&mut self) -> Option<()> {
        self.i = self.string_end()?;
        Some(())
    }

    /// The string at `self.i`, decoded.
    fn string(&mut self) -> Option<String> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        let end = self.string_end()?;
        let text = serde_json::from_slice::<String>(self.b.get(self.i..end)?).ok()?;
        self.i = end;
        Some(text)
    }
}

/// The JSON pointer of `tokens`.
fn pointer(tokens: &[String]) -> String {
    tokens
        .iter()
        .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Whether the number written `lexeme` (with a fraction or an exponent) is
/// not an integer, while its nearest `f64` is one.
fn hides_a_fraction(lexeme: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(lexeme) else {
        return false;
    };
    let body = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], exponent_of(&body[at + 1..])),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if frac.is_empty() && exponent == 0 && !body.contains(['e', 'E']) {
        return false; // a plain integer: read exactly
    }
    let digits = format!("{int}{frac}");
    let significant = digits.trim_start_matches('0');
    let trimmed = significant.trim_end_matches('0');
    if trimmed.is_empty() {
        return false; // zero
    }
    let trailing_zeros = (significant.len() - trimmed.len()) as i64;
    // value = trimmed × 10^scale
    let scale = exponent
        .saturating_sub(frac.len() as i64)
        .saturating_add(trailing_zeros);
    if scale >= 0 {
        return false; // an integer, exactly
    }
    text.parse::<f64>()
        .is_ok_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// An exponent's value, saturated far beyond any `f64`'s.
fn exponent_of(text: &str) -> i64 {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = digits.bytes().fold(0i64, |acc, d| {
        acc.saturating_mul(10)
            .saturating_add(i64::from(d.wrapping_sub(b'0')).min(9))
            .min(1 << 40)
    });
    if negative { -magnitude } else { magnitude }
}

/// Whether `schema` (a tool's input schema) declares an integer at the
/// argument location `tokens` (a pointer's tokens, the argument name
/// first): through `properties`, `items`, `prefixItems`,
/// `additionalProperties`, the branches of `anyOf`/`oneOf`/`allOf` and
/// local `$ref`s.
pub(crate) fn integer_at(schema: &JsonObject, tokens: &[&str]) -> bool {
    integer_in(schema, schema, tokens, 0)
}

fn integer_in(root: &JsonObject, node: &JsonObject, tokens: &[&str], refs: usize) -> bool {
    if let Some(target) = node.get("$ref").and_then(Value::as_str)
        && refs < MAX_REFS
        && let Some(next) = target.strip_prefix('#').and_then(|p| resolve(root, p))
        && integer_in(root, next, tokens, refs + 1)
    {
        return true;
    }
    let branch = |key: &str| {
        node.get(key).and_then(Value::as_array).is_some_and(|bs| {
            bs.iter()
                .filter_map(Value::as_object)
                .any(|b| integer_in(root, b, tokens, refs))
        })
    };
    if branch("anyOf") || branch("oneOf") || branch("allOf") {
        return true;
    }
    let Some((first, rest)) = tokens.split_first() else {
        return match node.get("type") {
            Some(Value::String(t)) => t == "integer",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
            _ => false,
        };
    };
    let child = |v: Option<&Value>| {
        v.and_then(Value::as_object)
            .is_some_and(|c| integer_in(root, c, rest, refs))
    };
    if child(node.get("properties").and_then(|p| p.get(*first))) {
        return true;
    }
    if child(node.get("additionalProperties")) {
        return true;
    }
    if let Ok(index) = first.parse::<usize>()
        && (child(node.get("prefixItems").and_then(|p| p.get(index))) || child(node.get("items")))
    {
        return true;
    }
    false
}

/// The object at `pointer` in `root` (a local `$ref` target).
fn resolve<'a>(root: &'a JsonObject, pointer: &str) -> Option<&'a JsonObject> {
    let mut at = root;
    for t in tokens(pointer) {
        at = at.get(&t)?.as_object()?;
    }
    Some(at)
}

/// The tokens of JSON pointer `pointer`, unescaped.
pub(crate) fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn found(message: &str) -> Vec<String> {
        scan_call(message.as_bytes()).map_or_else(Vec::new, |f| f.0.to_vec())
    }

    #[test]
    fn only_numbers_that_round_into_integers_are_recorded() {
        for (lexeme, hidden) in [
            ("1.00000000000000001", true),
            ("-7.0000000000000000001", true),
            ("5e-400", true),
            ("123456789.0000000001e0", true),
            ("10000000000000000000000.5", true),
            ("1.0", false),
            ("5e0", false),
            ("1.5e1", false),
            ("0.0", false),
            ("-0e5", false),
            ("5.5", false),
            ("0.1", false),
            ("12", false),
            ("1e99999999999999999999999", false),
        ] {
            assert_eq!(hides_a_fraction(lexeme.as_bytes()), hidden, "{lexeme}");
        }
    }

    #[test]
    fn the_pointers_are_those_of_the_arguments() {
        let msg = r#"{"jsonrpc":"2.0","id":1.00000000000000001,"method":"tools/call","params":{
            "name":"t","_meta":{"x":1.00000000000000001},
            "arguments":{"n":1.00000000000000001,"ok":2.0,"v":[1,2.00000000000000001],
                         "a/b~":{"c":3.00000000000000001},"s":"1.00000000000000001"}}}"#;
        assert_eq!(found(msg), ["/n", "/v/1", "/a~1b~0/c"]);
        assert!(found(r#"{"params":{"arguments":{"n":1}}}"#).is_empty());
        // Text that is not JSON records nothing.
        assert!(found(r#"{"params":{"arguments":{"n":1.00000000000000001"#).is_empty());
    }

    #[test]
    fn the_schema_says_where_integers_are() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "o": {"type": ["integer", "null"]},
                "x": {"type": "number"},
                "v": {"type": "array", "items": {"type": "integer"}},
                "p": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "integer"}]},
                "r": {"$ref": "#/$defs/Inner"},
                "u": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
            },
            "$defs": {"Inner": {"type": "object", "properties": {"k": {"type": "integer"}}}},
        });
        let Value::Object(schema) = schema else {
            panic!()
        };
        for (ptr, integer) in [
            ("/n", true),
            ("/o", true),
            ("/x", false),
            ("/v/3", true),
            ("/p/0", false),
            ("/p/1", true),
            ("/r/k", true),
            ("/r/z", false),
            ("/u", true),
            ("/missing", false),
        ] {
            let t = tokens(ptr);
            let t: Vec<&str> = t.iter().map(String::as_str).collect();
            assert_eq!(integer_at(&schema, &t), integer, "{ptr}");
        }
    }
}
