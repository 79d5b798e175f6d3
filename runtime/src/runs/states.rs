//! Spent request states, shared by every server process over one run
//! root: one empty file per sealed `requestState` that opened a call,
//! named by the state's expiry and nonce, in `.request-states`. Creating
//! the file is the claim (`O_EXCL`: of two replicas presenting one state,
//! one wins); names past their expiry are swept now and then.

use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::{AtFlags, Dir, Mode, OFlags};
use rustix::io::Errno;

use super::sys::{is_private_dir, open_dir_beneath, storage_error};
use super::{RunError, RunRoot};

/// The directory of spent states, in the root (not a run handle: the
/// index and the sweeps pass it by).
const STATES_DIR: &str = ".request-states";

impl RunRoot {
    /// Claims the state of `nonce` (32 lowercase hex digits), valid until
    /// `expires_ms`: `true` the first time, by any process over this root;
    /// `false` after.
    pub(crate) fn claim_state(
        &self,
        nonce: &str,
        expires_ms: u64,
        now_ms: u64,
    ) -> Result<bool, RunError> {
        if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(false);
        }
        let root = self.inner.fd.as_fd();
        match rustix::fs::mkdirat(root, STATES_DIR, Mode::RWXU) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(storage_error("create the spent-state directory", e)),
        }
        let dir = open_dir_beneath(root, STATES_DIR)
            .map_err(|e| storage_error("open the spent-state directory", e))?;
        let st = rustix::fs::fstat(&dir)
            .map_err(|e| storage_error("stat the spent-state directory", e))?;
        if !is_private_dir(&st, self.inner.uid) {
            return Err(storage_error(
                "the spent-state directory is not private",
                Errno::PERM,
            ));
        }
        let name = format!("{expires_ms}-{nonce}");
        let flags =
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        match rustix::fs::openat(&dir, name.as_str(), flags, Mode::RUSR | Mode::WUSR) {
            Ok(_) => {}
            Err(Errno::EXIST) => return Ok(false),
            Err(e) => return Err(storage_error("record a spent state", e)),
        }
        // One claim in 256 (the nonce is random) sweeps the expired names.
        if nonce.starts_with("00") {
            sweep(dir.as_fd(), now_ms);
        }
        Ok(true)
    }
}

/// Removes the names whose expiry has passed.
fn sweep(dir: BorrowedFd<'_>, now_ms: u64) {
    let Ok(mut reader) = Dir::read_from(dir) else {
        return;
    };
    let mut expired = Vec::new();
    while let Some(Ok(entry)) = reader.read() {
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        let expiry = name
            .split_once('-')
            .and_then(|(e, _)| e.parse::<u64>().ok());
        if expiry.is_some_and(|e| e <= now_ms) {
            expired.push(name.to_owned());
        }
    }
    for name in expired {
        let _ = rustix::fs::unlinkat(dir, name.as_str(), AtFlags::empty());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_state_is_claimed_once_across_openers_of_one_root() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("runs");
        let one = RunRoot::open(&path).unwrap();
        let two = RunRoot::open(&path).unwrap();
        let nonce = "0123456789abcdef0123456789abcdef";
        assert!(one.claim_state(nonce, 2_000, 1_000).unwrap());
        assert!(
            !two.claim_state(nonce, 2_000, 1_000).unwrap(),
            "a replay at another opener"
        );
        assert!(!one.claim_state(nonce, 2_000, 1_000).unwrap());
        assert!(
            two.claim_state("fedcba9876543210fedcba9876543210", 2_000, 1_000)
                .unwrap()
        );
        assert!(!one.claim_state("../../etc/passwd", 2_000, 1_000).unwrap());
        // A claim starting with 00 sweeps the expired names.
        let sweeper = "00000000000000000000000000000000";
        assert!(one.claim_state(sweeper, 9_000, 5_000).unwrap());
        assert!(
            one.claim_state(nonce, 2_000, 1_000).unwrap(),
            "expired, swept, forgotten"
        );
    }
}
