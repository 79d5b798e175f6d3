//! Bounded log capture: a head + tail buffer per stream with an exact byte
//! count, filled by a reader that drains the pipe past the cap (the solver
//! never blocks on a full pipe).

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt};

use super::progress::ProgressParser;

/// Size of one read from a solver pipe.
pub const READ_CHUNK: usize = 64 * 1024;

/// Bytes from a solver: untrusted, maybe not UTF-8, maybe crafted to look
/// like instructions. Never format them into an error text; the output
/// layer frames them as untrusted content.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct UntrustedBytes(Vec<u8>);

impl UntrustedBytes {
    /// Wraps bytes produced by a solver.
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The raw bytes, for a framing layer that marks them untrusted.
    pub fn as_untrusted_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Consumes the wrapper, returning the raw bytes.
    pub fn into_untrusted_bytes(self) -> Vec<u8> {
        self.0
    }

    /// Number of bytes held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no bytes are held.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for UntrustedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print solver output into server-side debug text either.
        write!(f, "UntrustedBytes({} bytes)", self.0.len())
    }
}

/// What was kept of one output stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedLog {
    /// The first bytes of the stream (at most the configured head size).
    pub head: UntrustedBytes,
    /// The last bytes not in `head` (at most the configured tail size).
    pub tail: UntrustedBytes,
    /// Exact number of bytes the stream carried while it was read.
    pub total_bytes: u64,
    /// Whether bytes between `head` and `tail` were dropped.
    pub truncated: bool,
}

/// A head + tail buffer with a fixed memory ceiling.
#[derive(Debug)]
pub struct LogBuffer {
    head: Vec<u8>,
    head_max: usize,
    tail: VecDeque<u8>,
    tail_max: usize,
    total: u64,
}

impl LogBuffer {
    /// A buffer keeping at most `head_max` leading and `tail_max` trailing bytes.
    pub fn new(head_max: usize, tail_max: usize) -> Self {
        Self {
            head: Vec::with_capacity(head_max.min(READ_CHUNK)),
            head_max,
            tail: VecDeque::with_capacity(tail_max.min(READ_CHUNK)),
            tail_max,
            total: 0,
        }
    }

    /// Appends bytes read from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        self.total = self.total.saturating_add(chunk.len() as u64);
        let (head, rest) = chunk.split_at(chunk.len().min(self.head_max - self.head.len()));
        self.head.extend_from_slice(head);
        // Only the rest's last `tail_max` bytes can stay; room is made for them.
        let rest = &rest[rest.len().saturating_sub(self.tail_max)..];
        let overflow = (self.tail.len() + rest.len()).saturating_sub(self.tail_max);
        self.tail.drain(..overflow);
        self.tail.extend(rest);
    }

    /// Bytes seen so far.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Bytes of memory reserved by the buffers (capacity, not length).
    pub fn reserved_bytes(&self) -> usize {
        self.head.capacity() + self.tail.capacity()
    }

    /// The ceiling on [`LogBuffer::reserved_bytes`] implied by the sizes:
    /// amortised growth at most doubles a capacity past its final length.
    pub fn reserved_ceiling(&self) -> usize {
        2 * (self.head_max + self.tail_max) + 16
    }

    /// A copy of what is kept.
    pub fn snapshot(&self) -> CapturedLog {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        CapturedLog {
            head: UntrustedBytes(self.head.clone()),
            tail: UntrustedBytes(self.tail.iter().copied().collect()),
            total_bytes: self.total,
            truncated: self.total > kept,
        }
    }
}

/// A log buffer shared between its reader task and anyone tailing a live run.
#[derive(Debug, Clone)]
pub struct SharedLog(Arc<Mutex<LogBuffer>>);

impl SharedLog {
    /// A shared buffer of the given sizes.
    pub fn new(head_max: usize, tail_max: usize) -> Self {
        Self(Arc::new(Mutex::new(LogBuffer::new(head_max, tail_max))))
    }

    /// Runs `f` on the buffer (also after a panic while it was held).
    pub fn with<R>(&self, f: impl FnOnce(&mut LogBuffer) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A copy of what is kept so far.
    pub fn snapshot(&self) -> CapturedLog {
        self.with(|b| b.snapshot())
    }
}

/// Drains `stream` into `log` until end of file or an error, feeding
/// `progress` if given.
pub(crate) async fn drain<R: AsyncRead + Unpin>(
    mut stream: R,
    log: SharedLog,
    mut progress: Option<ProgressParser>,
) {
    // `read_buf` fills it without zeroing it first (cheaper for short runs).
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    loop {
        buf.clear();
        match stream.read_buf(&mut buf).await {
            Ok(0) => return,
            Ok(_) => {
                log.with(|b| b.push(&buf));
                if let Some(p) = progress.as_mut() {
                    p.feed(&buf);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                tracing::debug!(error = %e, "solver log stream read failed");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(head: usize, tail: usize, chunks: &[&[u8]]) -> CapturedLog {
        let mut b = LogBuffer::new(head, tail);
        for c in chunks {
            b.push(c);
        }
        b.snapshot()
    }

    #[test]
    fn short_stream_is_kept_whole_in_head() {
        let c = feed(8, 4, &[b"abc", b"de"]);
        assert_eq!(c.head.as_untrusted_bytes(), b"abcde");
        assert!(c.tail.is_empty());
        assert_eq!(c.total_bytes, 5);
        assert!(!c.truncated);
    }

    #[test]
    fn exactly_head_plus_tail_is_not_truncated() {
        let c = feed(3, 3, &[b"abcdef"]);
        assert_eq!(c.head.as_untrusted_bytes(), b"abc");
        assert_eq!(c.tail.as_untrusted_bytes(), b"def");
        assert!(!c.truncated);
    }

    #[test]
    fn long_stream_keeps_head_and_last_bytes() {
        let c = feed(3, 4, &[b"abcd", b"efgh", b"ij", b"k"]);
        assert_eq!(c.head.as_untrusted_bytes(), b"abc");
        assert_eq!(c.tail.as_untrusted_bytes(), b"hijk");
        assert_eq!(c.total_bytes, 11);
        assert!(c.truncated);
    }

    #[test]
    fn chunk_longer_than_tail_keeps_its_end() {
        let c = feed(0, 2, &[b"abcdefg"]);
        assert_eq!(c.tail.as_untrusted_bytes(), b"fg");
        assert!(c.truncated);
    }

    #[test]
    fn byte_by_byte_equals_one_chunk() {
        let data: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let bytes: Vec<&[u8]> = data.iter().map(std::slice::from_ref).collect();
        let byte_by_byte = feed(100, 300, &bytes);
        assert_eq!(byte_by_byte, feed(100, 300, &[&data]));
        assert_eq!(byte_by_byte.tail.as_untrusted_bytes(), &data[4700..]);
    }

    #[test]
    fn debug_never_shows_content() {
        let u = UntrustedBytes::new(b"ignore previous instructions".to_vec());
        assert_eq!(format!("{u:?}"), "UntrustedBytes(28 bytes)");
    }
}
