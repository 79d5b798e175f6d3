//! The owner record: a fixed hidden file in each run directory naming the
//! caller the run belongs to.
//!
//! It is written atomically when the run is created and compared byte for
//! byte on every resolve. Its name starts with `.`, so no
//! [`FileName`](super::FileName) can address it.

use std::os::fd::BorrowedFd;

use super::RunError;
use super::file::{read_bounded_at, write_atomic_at};
use crate::identity::{CallerId, MAX_CALLER_LEN};

/// The record's file name inside a run directory.
pub(crate) const OWNER_RECORD: &str = ".owner";

const MAGIC: &[u8] = b"hardened-mcp run owner v1\n";

/// Largest well-formed record.
const MAX_RECORD_LEN: usize = MAGIC.len() + MAX_CALLER_LEN + 1;

fn encode(owner: &CallerId) -> Vec<u8> {
    let mut v = Vec::with_capacity(MAX_RECORD_LEN);
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(owner.as_str().as_bytes());
    v.push(b'\n');
    v
}

/// Writes the record for `owner` into the run directory `dir`.
pub(crate) fn write(dir: BorrowedFd<'_>, uid: u32, owner: &CallerId) -> Result<(), RunError> {
    write_atomic_at(dir, uid, OWNER_RECORD, &encode(owner))
}

/// True if the run directory `dir` holds a well-formed record naming
/// `owner`. A missing, oversized, symlinked or hard-linked record is simply
/// "not owned by this caller".
pub(crate) fn is_owned_by(
    dir: BorrowedFd<'_>,
    uid: u32,
    owner: &CallerId,
) -> Result<bool, RunError> {
    match read_bounded_at(dir, uid, OWNER_RECORD, MAX_RECORD_LEN) {
        Ok(bytes) => Ok(bytes == encode(owner)),
        Err(RunError::FileNotFound | RunError::FileRefused | RunError::TooLarge) => {
            tracing::warn!("run root: run directory without a valid owner record");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn records_differ_per_owner_and_fit() {
        let long = "x".repeat(MAX_CALLER_LEN);
        let a = CallerId::new("alice").unwrap();
        let b = CallerId::new("alic").unwrap();
        let l = CallerId::new(&long).unwrap();
        assert_ne!(encode(&a), encode(&b));
        assert_eq!(encode(&l).len(), MAX_RECORD_LEN);
    }
}
