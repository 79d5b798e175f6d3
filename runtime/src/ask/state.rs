//! The sealed `requestState` of an input-required result (2026-07-28).
//!
//! The server keeps nothing between the rounds of a call: what the next
//! round needs (the answers given so far) travels in `requestState`, which
//! the client holds and could alter. It is sealed with XChaCha20-Poly1305
//! under the server's [`StateKey`]: encrypted, and authenticated together
//! with what it is bound to (the caller, the tool, the original arguments),
//! so that a state altered, forged, moved to another caller, tool or
//! argument set fails to open. Inside it: an expiry and a nonce; a nonce
//! opens one call only ([`Spent`]), so a state cannot be replayed.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The prefix of every sealed state (the format's version).
const PREFIX: &str = "hm1.";
/// Longest `requestState` opened, in bytes; a longer one is refused unread.
pub(crate) const MAX_STATE_BYTES: usize = 64 * 1024;
/// XChaCha20 nonce length.
const NONCE_LEN: usize = 24;
/// Domain separation of the associated data.
const LABEL: &[u8] = b"hardened-mcp/request-state/v1";
/// Most nonces remembered as spent; at the ceiling the ones expiring first
/// are forgotten (they are refused by their expiry soon anyway).
const MAX_SPENT: usize = 65_536;

/// The key that seals `requestState` (input-required results).
///
/// A server makes a random one at start, so a state opens only in the
/// process that sealed it. Replicas behind one address share a key: read
/// it from a secret file with [`StateKey::from_bytes`], or derive it from
/// the run root they share (`Server::states_in`, feature `runs`).
#[derive(Clone)]
pub struct StateKey(Arc<[u8; 32]>);

impl StateKey {
    /// A fresh random key. `None` when the operating system has no
    /// randomness to give.
    pub fn random() -> Option<Self> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        Some(Self(Arc::new(key)))
    }

    /// A key from 32 secret bytes (for replicas: the same bytes in each).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(Arc::new(bytes))
    }

    fn cipher(&self) -> Option<XChaCha20Poly1305> {
        XChaCha20Poly1305::new_from_slice(&*self.0).ok()
    }
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(..)")
    }
}

/// What a state is bound to: it opens only for the same caller, method,
/// tool (or prompt, or resource) and arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Binding {
    aad: Vec<u8>,
}

impl Binding {
    /// The binding of a call: `caller`, `target` (e.g. `tools/call:heat_start`)
    /// and the canonical form of `arguments` (object keys sorted at every
    /// depth, so a client that reorders them still matches).
    pub(crate) fn new(
        caller: &str,
        target: &str,
        arguments: Option<&serde_json::Map<String, Value>>,
    ) -> Self {
        let mut canonical = Vec::new();
        if let Some(a) = arguments {
            write_object(a, &mut canonical);
        }
        let mut aad = Vec::with_capacity(LABEL.len() + caller.len() + target.len() + 32);
        for part in [LABEL, caller.as_bytes(), target.as_bytes(), &canonical] {
            aad.extend_from_slice(&(part.len() as u64).to_be_bytes());
            aad.extend_from_slice(part);
        }
        Self { aad }
    }
}

/// `value` as JSON with object keys sorted at every depth.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(m) => write_object(m, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_object(m: &serde_json::Map<String, Value>, out: &mut Vec<u8>) {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    out.push(b'{');
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_scalar(&Value::from(k.as_str()), out);
        out.push(b':');
        if let Some(v) = m.get(k) {
            write_canonical(v, out);
        }
    }
    out.push(b'}');
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Writing a scalar into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// The content of a state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    /// A random nonce (hex): a state opens one call.
    #[serde(rename = "n")]
    pub(crate) nonce: String,
    /// Expiry, in milliseconds since the Unix epoch.
    #[serde(rename = "e")]
    pub(crate) expires_ms: u64,
    /// The answers accepted in earlier rounds, by request key (each as the
    /// client sent it, checked when it was accepted and checked again when
    /// the tool asks for it).
    #[serde(rename = "a")]
    pub(crate) answers: BTreeMap<String, Value>,
}

/// Why a state did not open. The caller sees one fixed text for all of
/// them; the server log says which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StateFault {
    /// Not a state of this format, or too long.
    #[error("malformed")]
    Malformed,
    /// It does not open under this key and binding: altered, forged, or
    /// sealed for another caller, tool or argument set.
    #[error("does not open for this call")]
    Forged,
    /// Past its expiry.
    #[error("expired")]
    Expired,
    /// Its nonce opened a call before.
    #[error("already used")]
    Replayed,
    /// No randomness or no cipher: nothing can be sealed.
    #[error("no key")]
    NoKey,
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A random nonce, as hex.
pub(crate) fn fresh_nonce() -> Result<String, StateFault> {
    let mut n = [0u8; 16];
    getrandom::fill(&mut n).map_err(|_| StateFault::NoKey)?;
    Ok(n.iter().map(|b| format!("{b:02x}")).collect())
}

/// Seals `state` for `binding`.
pub(crate) fn seal(
    key: &StateKey,
    binding: &Binding,
    state: &Sealed,
) -> Result<String, StateFault> {
    let cipher = key.cipher().ok_or(StateFault::NoKey)?;
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).map_err(|_| StateFault::NoKey)?;
    let body = serde_json::to_vec(state).map_err(|_| StateFault::NoKey)?;
    let sealed = cipher
        .encrypt(
            &XNonce::from(nonce),
            Payload {
                msg: &body,
                aad: &binding.aad,
            },
        )
        .map_err(|_| StateFault::NoKey)?;
    let mut raw = nonce.to_vec();
    raw.extend_from_slice(&sealed);
    Ok(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(raw)))
}

/// Opens `text` for `binding` at time `now_ms`: its content, or why not.
pub(crate) fn open(
    key: &StateKey,
    binding: &Binding,
    text: &str,
    now_ms: u64,
) -> Result<Sealed, StateFault> {
    if text.len() > MAX_STATE_BYTES {
        return Err(StateFault::Malformed);
    }
    let encoded = text.strip_prefix(PREFIX).ok_or(StateFault::Malformed)?;
    let raw = URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| StateFault::Malformed)?;
    if raw.len() <= NONCE_LEN {
        return Err(StateFault::Malformed);
    }
    let (nonce, sealed) = raw.split_at(NONCE_LEN);
    let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| StateFault::Malformed)?;
    let cipher = key.cipher().ok_or(StateFault::NoKey)?;
    let body = cipher
        .decrypt(
            &XNonce::from(nonce),
            Payload {
                msg: sealed,
                aad: &binding.aad,
            },
        )
        .map_err(|_| StateFault::Forged)?;
    // Sealed by this server: its content is well formed.
    let state: Sealed = serde_json::from_slice(&body).map_err(|_| StateFault::Forged)?;
    if now_ms >= state.expires_ms {
        return Err(StateFault::Expired);
    }
    Ok(state)
}

/// The nonces of states that opened a call, until they expire.
#[derive(Debug, Default)]
pub(crate) struct Spent {
    nonces: Mutex<HashMap<String, u64>>,
}

impl Spent {
    /// Marks `state`'s nonce spent: `false` if it was already (the state
    /// is a replay). Atomic: of two calls presenting one state, one wins.
    pub(crate) fn claim(&self, state: &Sealed, now_ms: u64) -> bool {
        let mut nonces = match self.nonces.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if nonces.contains_key(&state.nonce) {
            return false;
        }
        if nonces.len() >= MAX_SPENT {
            nonces.retain(|_, expires| *expires > now_ms);
        }
        if nonces.len() >= MAX_SPENT {
            // Still full of live nonces: forget the tenth expiring first.
            let mut expiries: Vec<u64> = nonces.values().copied().collect();
            expiries.sort_unstable();
            let cut = expiries[MAX_SPENT / 10];
            nonces.retain(|_, expires| *expires > cut);
            tracing::warn!(
                "request states: the spent-nonce ledger is full; the oldest are forgotten"
            );
        }
        nonces.insert(state.nonce.clone(), state.expires_ms);
        true
    }
}

/// How long a sealed state stays valid unless the server says otherwise:
/// time for a person to read a question and answer it.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(600);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn state() -> Sealed {
        Sealed {
            nonce: fresh_nonce().unwrap(),
            expires_ms: now_ms() + 60_000,
            answers: BTreeMap::from([("name".to_owned(), json!({"action": "accept"}))]),
        }
    }

    fn args(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn binding() -> Binding {
        Binding::new(
            "alice",
            "tools/call:greet",
            Some(&args(json!({"b": 1, "a": [2]}))),
        )
    }

    #[test]
    fn a_state_opens_for_its_binding_and_not_for_another() {
        let key = StateKey::random().unwrap();
        let s = state();
        let sealed = seal(&key, &binding(), &s).unwrap();
        assert_eq!(open(&key, &binding(), &sealed, now_ms()), Ok(s));
        // The same arguments written in another key order still match.
        let reordered = Binding::new(
            "alice",
            "tools/call:greet",
            Some(&args(json!({"a": [2], "b": 1}))),
        );
        assert!(open(&key, &reordered, &sealed, now_ms()).is_ok());
        for other in [
            Binding::new(
                "bob",
                "tools/call:greet",
                Some(&args(json!({"b": 1, "a": [2]}))),
            ),
            Binding::new(
                "alice",
                "tools/call:delete",
                Some(&args(json!({"b": 1, "a": [2]}))),
            ),
            Binding::new(
                "alice",
                "tools/call:greet",
                Some(&args(json!({"b": 2, "a": [2]}))),
            ),
            Binding::new("alice", "tools/call:greet", None),
        ] {
            assert_eq!(
                open(&key, &other, &sealed, now_ms()),
                Err(StateFault::Forged)
            );
        }
        let stranger = StateKey::random().unwrap();
        assert_eq!(
            open(&stranger, &binding(), &sealed, now_ms()),
            Err(StateFault::Forged)
        );
    }

    #[test]
    fn an_altered_expired_or_malformed_state_does_not_open() {
        let key = StateKey::random().unwrap();
        let s = state();
        let sealed = seal(&key, &binding(), &s).unwrap();
        // Every single-character change in the body is refused.
        let body_start = PREFIX.len();
        for i in body_start..sealed.len() {
            let mut b = sealed.clone().into_bytes();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(b).unwrap();
            if altered != sealed {
                assert!(open(&key, &binding(), &altered, now_ms()).is_err(), "{i}");
            }
        }
        assert!(open(&key, &binding(), &format!("{sealed}-TAMPERED"), now_ms()).is_err());
        assert_eq!(
            open(&key, &binding(), &sealed, s.expires_ms),
            Err(StateFault::Expired)
        );
        for bad in [
            "",
            "hm1.",
            "hm1.!!!",
            "hm2.AAAA",
            &"A".repeat(MAX_STATE_BYTES + 1),
        ] {
            assert_eq!(
                open(&key, &binding(), bad, now_ms()),
                Err(StateFault::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_content_is_not_readable_in_the_sealed_text() {
        let key = StateKey::random().unwrap();
        let mut s = state();
        s.answers
            .insert("secret".into(), json!("CANARY-answer-typed-by-a-person"));
        let sealed = seal(&key, &binding(), &s).unwrap();
        let raw = URL_SAFE_NO_PAD.decode(&sealed[PREFIX.len()..]).unwrap();
        assert!(!String::from_utf8_lossy(&raw).contains("CANARY"));
    }

    #[test]
    fn a_nonce_is_claimed_once() {
        let spent = Spent::default();
        let s = state();
        assert!(spent.claim(&s, now_ms()));
        assert!(!spent.claim(&s, now_ms()));
        assert!(spent.claim(&state(), now_ms()));
    }
}
