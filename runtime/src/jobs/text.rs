//! A solver's own plain-text result file, read as lines of words: what a
//! [`FromResultFile`](super::FromResultFile) of a text format is written
//! with, without indexing that could panic on what the solver wrote.

use std::str::FromStr;

/// A text result file: UTF-8 lines of words separated by blanks.
///
/// ```
/// use hardened_mcp::jobs::TextResult;
///
/// let file = TextResult::new(b"c a comment\ns bas 3 2 f f -10\nj 1 b 2 0\n")?;
/// let mut x = Vec::new();
/// for line in file.lines() {
///     match line.word(0) {
///         Some("s") => assert_eq!(line.number(6)?, -10.0),
///         Some("j") => x.push(line.number(3)?),
///         _ => {}
///     }
/// }
/// assert_eq!(x, [2.0]);
/// let short = TextResult::new(b"j 1\nj 1 b nan 0\n")?;
/// assert!(short.lines().all(|l| l.number(3).is_err())); // absent; not finite
/// # Ok::<(), &'static str>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TextResult<'a> {
    text: &'a str,
}

impl<'a> TextResult<'a> {
    /// The file's bytes as text; bytes that are not UTF-8 are refused.
    pub fn new(bytes: &'a [u8]) -> Result<Self, &'static str> {
        let text = std::str::from_utf8(bytes).map_err(|_| "the result file is not UTF-8 text")?;
        Ok(Self { text })
    }

    /// Its lines, each split into words (blank lines have none).
    pub fn lines(&self) -> impl Iterator<Item = ResultLine<'a>> + 'a {
        self.text.lines().map(|line| ResultLine {
            words: line.split_ascii_whitespace().collect(),
        })
    }
}

/// One line of a [`TextResult`], as words.
#[derive(Debug, Clone)]
pub struct ResultLine<'a> {
    words: Vec<&'a str>,
}

impl<'a> ResultLine<'a> {
    /// Word `i` (from 0), if the line has it.
    pub fn word(&self, i: usize) -> Option<&'a str> {
        self.words.get(i).copied()
    }

    /// The line's words.
    pub fn words(&self) -> &[&'a str] {
        &self.words
    }

    /// Word `i` read as a finite number; absent, unreadable, NaN or
    /// infinite is refused with a fixed text.
    pub fn number(&self, i: usize) -> Result<f64, &'static str> {
        self.parse::<f64>(i).and_then(|x| {
            x.is_finite()
                .then_some(x)
                .ok_or("a number in the result file is not finite")
        })
    }

    /// Word `i` read as a `T` (an integer, a token); absent or unreadable is
    /// refused with a fixed text.
    pub fn parse<T: FromStr>(&self, i: usize) -> Result<T, &'static str> {
        self.word(i)
            .ok_or("a line of the result file is too short")?
            .parse()
            .map_err(|_| "a word of the result file is not of its kind")
    }
}
