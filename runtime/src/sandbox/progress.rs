//! Progress reports from a solver: `PROGRESS <done> <total>` lines on its
//! standard output, parsed with a bounded line buffer and published on a
//! watch channel. The jobs layer forwards them to MCP
//! ([`forward_progress`](crate::jobs::forward_progress)).

use tokio::sync::watch;

/// Longest progress line considered; longer lines are skipped whole.
pub const MAX_PROGRESS_LINE: usize = 96;

/// The latest progress a solver reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressReport {
    /// Units of work done.
    pub done: u64,
    /// Units of work in all; `done <= total`.
    pub total: u64,
}

/// Incremental parser of the progress protocol over raw stdout chunks.
#[derive(Debug)]
pub(crate) struct ProgressParser {
    line: [u8; MAX_PROGRESS_LINE],
    /// Bytes of the current line; past the buffer, too long (not kept).
    len: usize,
    tx: watch::Sender<Option<ProgressReport>>,
}

impl ProgressParser {
    /// A parser publishing on `tx`.
    pub(crate) fn new(tx: watch::Sender<Option<ProgressReport>>) -> Self {
        Self {
            line: [0; MAX_PROGRESS_LINE],
            len: 0,
            tx,
        }
    }

    /// Feeds bytes from the stream; publishes each valid progress line.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if b == b'\n' {
                if let Some(r) = self.line.get(..self.len).and_then(parse_line) {
                    self.tx.send_replace(Some(r));
                }
                self.len = 0;
            } else {
                if let Some(slot) = self.line.get_mut(self.len) {
                    *slot = b;
                }
                self.len = self.len.saturating_add(1);
            }
        }
    }
}

/// Parses `PROGRESS <done> <total>` (optional trailing `\r`); decimal
/// digits only, `done <= total`, `total > 0`.
pub fn parse_line(line: &[u8]) -> Option<ProgressReport> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let rest = line.strip_prefix(b"PROGRESS ")?;
    let mut parts = rest.split(|&b| b == b' ');
    let done = parse_u64(parts.next()?)?;
    let total = parse_u64(parts.next()?)?;
    (parts.next().is_none() && total > 0 && done <= total).then_some(ProgressReport { done, total })
}

/// Digits only: `str::parse` alone would take a leading `+`.
fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.len() > 20 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(done: u64, total: u64) -> Option<ProgressReport> {
        Some(ProgressReport { done, total })
    }

    #[test]
    fn parses_valid_lines_only() {
        assert_eq!(parse_line(b"PROGRESS 3 10"), report(3, 10));
        assert_eq!(parse_line(b"PROGRESS 10 10\r"), report(10, 10));
        for bad in [
            &b"PROGRESS 11 10"[..],
            b"PROGRESS 1 0",
            b"PROGRESS -1 10",
            b"PROGRESS 1 10 x",
            b"PROGRESS 1",
            b"PROGRESS  1 10",
            b"progress 1 10",
            b"PROGRESS 99999999999999999999999 1",
            b"xPROGRESS 1 2",
        ] {
            assert_eq!(parse_line(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn parser_handles_split_and_overlong_lines() {
        let (tx, rx) = watch::channel(None);
        let mut p = ProgressParser::new(tx);
        p.feed(b"noise\nPROGR");
        assert_eq!(*rx.borrow(), None);
        p.feed(b"ESS 1 4\n");
        assert_eq!(*rx.borrow(), Some(ProgressReport { done: 1, total: 4 }));
        p.feed(b"PROGRESS 2 4");
        p.feed(&[b' '; MAX_PROGRESS_LINE]);
        p.feed(b"\n");
        assert_eq!(*rx.borrow(), Some(ProgressReport { done: 1, total: 4 }));
        p.feed(b"PROGRESS 3 4\n");
        assert_eq!(*rx.borrow(), Some(ProgressReport { done: 3, total: 4 }));
    }
}
