//! The root key: 32 random bytes kept in the run root (outside every run
//! directory) that authenticate owner records.
//!
//! A process that can write a run directory but cannot read the root — a
//! sandboxed solver — cannot forge a record naming another caller, nor move
//! a record from one run to another: each record carries
//! HMAC-SHA256(key, handle, owner).

use std::io::Read as _;
use std::os::fd::BorrowedFd;

use sha2::{Digest as _, Sha256};

use super::RunError;
use super::error::RootProblem;
use super::file::{open_plain_at, write_atomic_new_at};

/// The key's file name in the root.
const KEY_FILE: &str = ".key";
/// Key length in bytes.
pub(crate) const KEY_LEN: usize = 32;
/// SHA-256 block size, for HMAC.
const BLOCK: usize = 64;

/// The root key.
pub(crate) struct RootKey([u8; KEY_LEN]);

impl RootKey {
    /// Reads the root's key, creating it (atomically, never replacing one a
    /// concurrent opener created first) if the root has none.
    pub(crate) fn load_or_create(root: BorrowedFd<'_>, uid: u32) -> Result<Self, RunError> {
        match read_key(root, uid) {
            Err(RunError::FileNotFound) => {}
            other => return other,
        }
        let mut key = [0u8; KEY_LEN];
        getrandom::fill(&mut key).map_err(|e| {
            tracing::error!(error = %e, "run root: no randomness for the root key");
            RunError::InvalidRoot(RootProblem::KeyUnusable)
        })?;
        match write_atomic_new_at(root, KEY_FILE, &key) {
            Ok(()) => Ok(Self(key)),
            // Another opener created it meanwhile: use theirs.
            Err(RunError::FileExists) => read_key(root, uid),
            Err(e) => {
                tracing::error!(%e, "run root: cannot create the root key");
                Err(RunError::InvalidRoot(RootProblem::KeyUnusable))
            }
        }
    }

    /// Reads the root's key; a root without one is unusable (never created
    /// here).
    pub(crate) fn load(root: BorrowedFd<'_>, uid: u32) -> Result<Self, RunError> {
        read_key(root, uid).map_err(|e| match e {
            RunError::FileNotFound => RunError::InvalidRoot(RootProblem::KeyUnusable),
            other => other,
        })
    }

    /// HMAC-SHA256 (RFC 2104) of `parts`, each length-prefixed so that no
    /// two different part lists give the same message.
    pub(crate) fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut block = [0u8; BLOCK];
        block[..KEY_LEN].copy_from_slice(&self.0);
        let mut inner = Sha256::new();
        inner.update(block.map(|b| b ^ 0x36));
        for part in parts {
            inner.update((part.len() as u64).to_be_bytes());
            inner.update(part);
        }
        let inner = inner.finalize();
        let mut outer = Sha256::new();
        outer.update(block.map(|b| b ^ 0x5c));
        outer.update(inner);
        outer.finalize().into()
    }
}

fn read_key(root: BorrowedFd<'_>, uid: u32) -> Result<RootKey, RunError> {
    let (file, st) = match open_plain_at(root, uid, KEY_FILE) {
        Ok(x) => x,
        Err(RunError::FileNotFound) => return Err(RunError::FileNotFound),
        Err(e) => {
            tracing::error!(%e, "run root: the root key is not a plain file of ours");
            return Err(RunError::InvalidRoot(RootProblem::KeyUnusable));
        }
    };
    let mut key = [0u8; KEY_LEN];
    let mut extra = [0u8; 1];
    let mut file = file;
    let ok = st.st_size == KEY_LEN as i64
        && file.read_exact(&mut key).is_ok()
        && matches!(file.read(&mut extra), Ok(0));
    if !ok {
        tracing::error!("run root: the root key has the wrong size");
        return Err(RunError::InvalidRoot(RootProblem::KeyUnusable));
    }
    Ok(RootKey(key))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// RFC 4231 test case 2 is for arbitrary keys; our key is fixed-length,
    /// so check the construction against a direct computation instead.
    #[test]
    fn mac_is_hmac_sha256_of_length_prefixed_parts() {
        let key = RootKey([7u8; KEY_LEN]);
        let mut msg = Vec::new();
        for p in [&b"ab"[..], b"c"] {
            msg.extend_from_slice(&(p.len() as u64).to_be_bytes());
            msg.extend_from_slice(p);
        }
        let mut k = [0u8; BLOCK];
        k[..KEY_LEN].copy_from_slice(&[7u8; KEY_LEN]);
        let inner = Sha256::new()
            .chain_update(k.map(|b| b ^ 0x36))
            .chain_update(&msg)
            .finalize();
        let expect: [u8; 32] = Sha256::new()
            .chain_update(k.map(|b| b ^ 0x5c))
            .chain_update(inner)
            .finalize()
            .into();
        assert_eq!(key.mac(&[b"ab", b"c"]), expect);
        assert_ne!(key.mac(&[b"ab", b"c"]), key.mac(&[b"a", b"bc"]));
        assert_ne!(key.mac(&[b"ab"]), RootKey([8u8; KEY_LEN]).mac(&[b"ab"]));
    }

    #[test]
    fn key_file_is_created_once_and_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::File::open(tmp.path()).unwrap();
        let uid = rustix::process::geteuid().as_raw();
        let fd = std::os::fd::AsFd::as_fd(&dir);
        let a = RootKey::load_or_create(fd, uid).map(|k| k.0);
        let b = RootKey::load_or_create(fd, uid).map(|k| k.0);
        assert!(a.is_ok());
        assert_eq!(a, b);
        std::fs::write(tmp.path().join(KEY_FILE), b"short").unwrap();
        assert_eq!(
            RootKey::load_or_create(fd, uid).err(),
            Some(RunError::InvalidRoot(RootProblem::KeyUnusable))
        );
    }
}
