//! The owner record: a fixed hidden file in each run directory naming the
//! caller the run belongs to, authenticated with the root key.
//!
//! It is written atomically when the run is created and compared on every
//! resolve. Its name starts with `.`, so no [`FileName`](super::FileName)
//! can address it. Its MAC binds it to the run's handle and owner, so a
//! process that can write the run directory but not read the root key
//! cannot forge a record for another caller or reuse one from another run.

use std::os::fd::BorrowedFd;

use subtle::ConstantTimeEq as _;

use super::file::{read_bounded_at, write_atomic_at};
use super::key::RootKey;
use super::{RunError, RunHandle};
use crate::identity::{CallerId, MAX_CALLER_LEN};

/// The record's file name inside a run directory.
pub(crate) const OWNER_RECORD: &str = ".owner";

const MAGIC: &[u8] = b"hardened-mcp run owner v2\n";

/// Largest well-formed record: magic, owner, newline, 64 hex digits, newline.
const MAX_RECORD_LEN: usize = MAGIC.len() + MAX_CALLER_LEN + 1 + 64 + 1;

fn encode(key: &RootKey, handle: &RunHandle, owner: &CallerId) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mac = key.mac(&[MAGIC, handle.as_str().as_bytes(), owner.as_str().as_bytes()]);
    let mut v = Vec::with_capacity(MAX_RECORD_LEN);
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(owner.as_str().as_bytes());
    v.push(b'\n');
    for b in mac {
        v.push(HEX[usize::from(b >> 4)]);
        v.push(HEX[usize::from(b & 0xf)]);
    }
    v.push(b'\n');
    v
}

/// Writes the record for `owner` into the run directory `dir` of `handle`.
pub(crate) fn write(
    dir: BorrowedFd<'_>,
    uid: u32,
    key: &RootKey,
    handle: &RunHandle,
    owner: &CallerId,
) -> Result<(), RunError> {
    write_atomic_at(dir, uid, OWNER_RECORD, &encode(key, handle, owner))
}

/// True if the run directory `dir` of `handle` holds a well-formed,
/// authentic record naming `owner`. A missing, oversized, symlinked,
/// hard-linked or forged record is simply "not owned by this caller".
pub(crate) fn is_owned_by(
    dir: BorrowedFd<'_>,
    uid: u32,
    key: &RootKey,
    handle: &RunHandle,
    owner: &CallerId,
) -> Result<bool, RunError> {
    match read_bounded_at(dir, uid, OWNER_RECORD, MAX_RECORD_LEN) {
        Ok(bytes) => {
            let expected = encode(key, handle, owner);
            Ok(bytes.len() == expected.len() && bool::from(bytes.ct_eq(&expected)))
        }
        Err(RunError::FileNotFound | RunError::FileRefused | RunError::TooLarge) => {
            tracing::warn!("run root: run directory without a valid owner record");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// The caller an authentic record in the run directory `dir` of `handle`
/// names; `None` for a missing, malformed or forged record (used to build
/// the per-caller index of a root that has none).
pub(crate) fn read_owner(
    dir: BorrowedFd<'_>,
    uid: u32,
    key: &RootKey,
    handle: &RunHandle,
) -> Result<Option<CallerId>, RunError> {
    let bytes = match read_bounded_at(dir, uid, OWNER_RECORD, MAX_RECORD_LEN) {
        Ok(b) => b,
        Err(RunError::FileNotFound | RunError::FileRefused | RunError::TooLarge) => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let Some(rest) = bytes.strip_prefix(MAGIC) else {
        return Ok(None);
    };
    let Some(end) = rest.iter().position(|&b| b == b'\n') else {
        return Ok(None);
    };
    let Some(owner) = std::str::from_utf8(&rest[..end])
        .ok()
        .and_then(|s| CallerId::new(s).ok())
    else {
        return Ok(None);
    };
    let expected = encode(key, handle, &owner);
    let authentic = bytes.len() == expected.len() && bool::from(bytes.ct_eq(&expected));
    Ok(authentic.then_some(owner))
}
