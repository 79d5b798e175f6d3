//! The protocol between a run's processes and the server: the word that
//! asks for the tree's death, and the fixed-size record of the solver's
//! end, checked field by field on the server's side.

use std::os::fd::{BorrowedFd, RawFd};
use std::time::Duration;

/// What the server writes on a run's control pipe to have the tree killed
/// (any byte, or the pipe's hang-up, does; this is the one it writes).
pub(crate) const KILL_WORD: u8 = b'k';

/// Length of an encoded [`ExitRecord`] on the status pipe.
pub(crate) const RECORD_LEN: usize = 24;
const RECORD_MAGIC: u32 = 0x5342_5852;

/// How the solver ended, as its parent (init or monitor) saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExitRecord {
    /// The raw `wait` status of the solver process.
    pub(crate) wait_status: i32,
    /// User + system CPU time of the solver and of every descendant its
    /// parent reaped: with a PID namespace, every process of the run (the
    /// init kills and reaps what the solver left before it reports).
    pub(crate) cpu: Duration,
}

impl ExitRecord {
    fn encode(wait_status: i32, cpu_us: u64) -> [u8; RECORD_LEN] {
        let mut out = [0u8; RECORD_LEN];
        out[0..4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
        out[4..8].copy_from_slice(&wait_status.to_le_bytes());
        out[8..16].copy_from_slice(&cpu_us.to_le_bytes());
        out
    }

    /// Decodes a record; `None` unless `buf` is exactly one well-formed record.
    pub(crate) fn decode(buf: &[u8]) -> Option<Self> {
        let buf: &[u8; RECORD_LEN] = buf.try_into().ok()?;
        if u32::from_le_bytes(buf[0..4].try_into().ok()?) != RECORD_MAGIC {
            return None;
        }
        Some(Self {
            wait_status: i32::from_le_bytes(buf[4..8].try_into().ok()?),
            cpu: Duration::from_micros(u64::from_le_bytes(buf[8..16].try_into().ok()?)),
        })
    }
}

pub(super) fn write_record(fd: RawFd, wait_status: libc::c_int, cpu_us: u64) {
    if fd < 0 {
        return;
    }
    let rec = ExitRecord::encode(wait_status, cpu_us);
    // SAFETY: a descriptor the caller owns and keeps open.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    // A record is smaller than PIPE_BUF, so the write is atomic; a failure
    // leaves no record, which the server reads as "killed".
    let _ = rustix::io::write(fd, &rec);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips_and_rejects_garbage() {
        let r = ExitRecord::encode(0x0900, 1_234_567);
        assert_eq!(
            ExitRecord::decode(&r),
            Some(ExitRecord {
                wait_status: 0x0900,
                cpu: Duration::from_micros(1_234_567)
            })
        );
        assert_eq!(ExitRecord::decode(&r[..RECORD_LEN - 1]), None);
        let mut bad = r;
        bad[0] ^= 1;
        assert_eq!(ExitRecord::decode(&bad), None);
    }
}
