//! Reading what the client answered: an elicitation's action and content,
//! a sampled message, a list of roots. Every answer is untrusted input:
//! its shape is checked here, an elicitation's content goes through the
//! same strict parser and revalidation as tool arguments, and text from a
//! model or a client comes back framed as [`Untrusted`].

use serde_json::{Map, Value};

use crate::args::{ArgError, HardenedArgs};
use crate::untrusted::{TextLimits, Untrusted};

/// The outcome of a question put to the person behind the client
/// ([`ToolContext::elicit`](crate::ToolContext::elicit)).
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// They answered; the answer passed the type's parser and bounds.
    Accepted(T),
    /// They refused to answer.
    Declined,
    /// They dismissed the question without choosing.
    Cancelled,
}

impl<T> Elicited<T> {
    /// The answer, if there is one.
    pub fn accepted(self) -> Option<T> {
        match self {
            Self::Accepted(t) => Some(t),
            Self::Declined | Self::Cancelled => None,
        }
    }
}

/// What the client's model answered to a sampling request
/// ([`ToolContext::sample`](crate::ToolContext::sample)): text from a
/// model, framed as untrusted data.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Sampled {
    /// The text of the answer (its text blocks, joined by newlines).
    pub text: Untrusted<String>,
    /// The model the client says answered.
    pub model: Untrusted<String>,
}

/// The roots the client shares ([`ToolContext::roots`](crate::ToolContext::roots)):
/// their URIs, one per line, framed as untrusted data. A root whose URI
/// is not a string of printable characters is left out.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Roots {
    /// The roots' URIs.
    pub uris: Untrusted<Vec<String>>,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AnswerFault {
    /// The value is not an answer of the kind asked for: the client broke
    /// the protocol (a JSON-RPC error).
    Malformed,
    /// An elicitation's content failed the type's parser or bounds (a tool
    /// error naming the field and the rule, never the value).
    Refused(ArgError),
}

/// Most roots read from an answer.
const MAX_ROOTS: usize = 256;
/// Longest root URI kept, in bytes.
const MAX_ROOT_URI: usize = 2048;
/// Longest model name kept, in bytes (one line).
const MAX_MODEL_NAME: u32 = 256;

/// An elicitation result (`{action, content?}`), its content parsed as `T`.
pub(crate) fn elicited<T: HardenedArgs>(value: &Value) -> Result<Elicited<T>, AnswerFault> {
    let Value::Object(m) = value else {
        return Err(AnswerFault::Malformed);
    };
    match m.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let empty = Map::new();
            let content = match m.get("content") {
                Some(Value::Object(c)) => c,
                None | Some(Value::Null) => &empty,
                Some(_) => return Err(AnswerFault::Malformed),
            };
            let t = T::parse(content).map_err(AnswerFault::Refused)?;
            t.validate().map_err(AnswerFault::Refused)?;
            Ok(Elicited::Accepted(t))
        }
        Some("decline") => Ok(Elicited::Declined),
        Some("cancel") => Ok(Elicited::Cancelled),
        _ => Err(AnswerFault::Malformed),
    }
}

/// The outcome of a URL-mode elicitation: whether the person agreed to
/// open the page (what they did there, the server learns out of band).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visited {
    /// They agreed to open it.
    Accepted,
    /// They refused.
    Declined,
    /// They dismissed the question.
    Cancelled,
}

/// A URL-mode elicitation result (`{action}`; content is ignored).
pub(crate) fn visited(value: &Value) -> Result<Visited, AnswerFault> {
    match value.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(Visited::Accepted),
        Some("decline") => Ok(Visited::Declined),
        Some("cancel") => Ok(Visited::Cancelled),
        _ => Err(AnswerFault::Malformed),
    }
}

/// A sampling result (`{role, content, model, stopReason?}`), its text
/// blocks joined. Content other than text is left out.
pub(crate) fn sampled(value: &Value) -> Result<Sampled, AnswerFault> {
    let Value::Object(m) = value else {
        return Err(AnswerFault::Malformed);
    };
    if m.get("role").and_then(Value::as_str) != Some("assistant") {
        return Err(AnswerFault::Malformed);
    }
    let blocks: Vec<&Value> = match m.get("content") {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(one @ Value::Object(_)) => vec![one],
        _ => return Err(AnswerFault::Malformed),
    };
    let mut text = String::new();
    for block in blocks {
        if !block.is_object() {
            return Err(AnswerFault::Malformed);
        }
        if block.get("type").and_then(Value::as_str) == Some("text") {
            let t = block
                .get("text")
                .and_then(Value::as_str)
                .ok_or(AnswerFault::Malformed)?;
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(t);
        }
    }
    let model = m
        .get("model")
        .and_then(Value::as_str)
        .ok_or(AnswerFault::Malformed)?;
    Ok(Sampled {
        text: Untrusted::text(text),
        model: Untrusted::text_head(model, TextLimits::new(MAX_MODEL_NAME, 1)),
    })
}

/// A roots result (`{roots: [{uri, name?}]}`).
pub(crate) fn roots(value: &Value) -> Result<Roots, AnswerFault> {
    let list = value
        .get("roots")
        .and_then(Value::as_array)
        .ok_or(AnswerFault::Malformed)?;
    let mut uris = String::new();
    for root in list.iter().take(MAX_ROOTS) {
        let uri = root
            .get("uri")
            .and_then(Value::as_str)
            .ok_or(AnswerFault::Malformed)?;
        if uri.is_empty() || uri.len() > MAX_ROOT_URI || uri.chars().any(char::is_control) {
            continue;
        }
        uris.push_str(uri);
        uris.push('\n');
    }
    Ok(Roots {
        uris: Untrusted::lines(uris),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::server::test_args::Note;
    use serde_json::json;

    #[test]
    fn an_elicitation_answer_is_parsed_like_arguments() {
        let ok = json!({"action": "accept", "content": {"owner": "ada", "note": "n1"}});
        let Elicited::Accepted(n) = elicited::<Note>(&ok).unwrap() else {
            panic!("accepted")
        };
        assert_eq!((n.owner.as_str(), n.note.as_str()), ("ada", "n1"));
        // Out of its pattern: refused, naming the field, not the value.
        let bad = json!({"action": "accept", "content": {"owner": "ADA!", "note": "n1"}});
        let Err(AnswerFault::Refused(e)) = elicited::<Note>(&bad) else {
            panic!("refused")
        };
        assert_eq!(e.argument(), Some("owner"));
        assert!(!e.to_string().contains("ADA!"));
        assert_eq!(
            elicited::<Note>(&json!({"action": "decline"})).unwrap(),
            Elicited::Declined
        );
        assert_eq!(
            elicited::<Note>(&json!({"action": "cancel"})).unwrap(),
            Elicited::Cancelled
        );
        for malformed in [
            json!(12345),
            json!(null),
            json!({"action": "yes"}),
            json!({"action": "accept", "content": "x"}),
        ] {
            assert_eq!(elicited::<Note>(&malformed), Err(AnswerFault::Malformed));
        }
    }

    #[test]
    fn a_sampled_answer_is_untrusted_text() {
        let v = json!({"role": "assistant", "content": {"type": "text", "text": "Paris\u{1b}[31m"},
            "model": "m", "stopReason": "endTurn"});
        let s = sampled(&v).unwrap();
        assert!(s.text.data().starts_with("Paris"));
        assert!(!s.text.data().contains('\u{1b}'));
        assert!(sampled(&json!({"role": "user", "content": [], "model": "m"})).is_err());
        assert!(sampled(&json!({"role": "assistant", "content": 5, "model": "m"})).is_err());
    }

    #[test]
    fn roots_keep_printable_uris_only() {
        let v = json!({"roots": [{"uri": "file:///a", "name": "A"}, {"uri": "file:///b\nx"}]});
        assert_eq!(
            roots(&v).unwrap().uris.data(),
            &vec!["file:///a".to_owned()]
        );
        assert!(roots(&json!({"roots": [{"name": "no uri"}]})).is_err());
        assert!(roots(&json!([])).is_err());
    }
}
