//! Solver input decks built from typed values only: numbers checked finite
//! and written with round-trip precision, enums mapped to fixed tokens,
//! identifiers and free text admitted only through per-format constructors.
//!
//! A deck is code for the solver. Nothing here concatenates caller text into
//! it: statement keys and heads are `&'static str` written by the server
//! and checked against the format, and every value is a [`DeckValue`] whose
//! rendering cannot contain the format's control syntax (line breaks,
//! comments, includes, control blocks, shell escapes, paths). As a last line
//! of defence, [`Deck::render`] scans every rendered line with the format's
//! [`DeckFormat::control_syntax`] and refuses the deck if one matches.
//!
//! ```
//! use hardened_mcp::deck::{Deck, DeckText, DeckToken, KeyValue};
//!
//! #[derive(Clone, Copy)]
//! enum Boundary { Dirichlet, Periodic }
//!
//! impl DeckToken for Boundary {
//!     fn token(&self) -> &'static str {
//!         match self { Boundary::Dirichlet => "dirichlet", Boundary::Periodic => "periodic" }
//!     }
//! }
//!
//! let mut deck = Deck::<KeyValue>::new();
//! deck.set("cells", 200_u32)?
//!     .set("courant", 0.45)?
//!     .set("boundary", Boundary::Periodic)?
//!     .set("label", DeckText::new("rod A, run 3")?)?;
//! assert_eq!(
//!     String::from_utf8(deck.render()?).unwrap(),
//!     "cells = 200\ncourant = 0.45\nboundary = periodic\nlabel = rod A, run 3\n",
//! );
//!
//! // Caller text with control meaning is refused with a fixed error.
//! assert!(DeckText::<KeyValue>::new("x\ninclude /etc/passwd").is_err());
//! assert!(deck.set("courant", f64::NAN).is_err());
//! # Ok::<(), hardened_mcp::deck::DeckError>(())
//! ```

mod format;
mod key_value;
mod spice;
mod value;
mod words;

use std::collections::BTreeSet;

#[cfg(feature = "runs")]
use crate::runs::{FileName, RunDir, RunError};

pub use format::{ControlSyntax, DeckFormat};
pub use key_value::KeyValue;
pub use spice::Spice;
pub use value::{DeckIdent, DeckText, DeckToken, DeckValue, IntoDeckValue, ValueKind, format_f64};
pub use words::Words;

/// The arguments of one statement as a tuple of values of mixed kinds
/// (up to twelve), for [`Deck::line`]: each an [`IntoDeckValue`].
pub trait DeckArgs<F: DeckFormat> {
    /// The checked values, in order; the first that fails its check is
    /// the error.
    fn into_values(self) -> Result<Vec<DeckValue<F>>, DeckError>;
}

macro_rules! deck_args {
    ($($v:ident),*) => {
        impl<F: DeckFormat, $($v: IntoDeckValue<F>),*> DeckArgs<F> for ($($v,)*) {
            #[allow(non_snake_case)]
            fn into_values(self) -> Result<Vec<DeckValue<F>>, DeckError> {
                let ($($v,)*) = self;
                Ok(vec![$($v.into_deck_value()?),*])
            }
        }
    };
}
deck_args!();
deck_args!(A);
deck_args!(A, B);
deck_args!(A, B, C);
deck_args!(A, B, C, D);
deck_args!(A, B, C, D, E);
deck_args!(A, B, C, D, E, G);
deck_args!(A, B, C, D, E, G, H);
deck_args!(A, B, C, D, E, G, H, I);
deck_args!(A, B, C, D, E, G, H, I, J);
deck_args!(A, B, C, D, E, G, H, I, J, K);
deck_args!(A, B, C, D, E, G, H, I, J, K, L);
deck_args!(A, B, C, D, E, G, H, I, J, K, L, M);

/// Ceiling on the statements of one deck.
pub const MAX_DECK_STATEMENTS: usize = 10_000;
/// Ceiling on the rendered size of one deck, in bytes.
pub const MAX_DECK_BYTES: usize = 1024 * 1024;

/// Why a deck value or deck was refused. The texts are fixed and never
/// contain the offending value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeckError {
    /// A float is NaN or infinite.
    #[error("a deck number is not finite")]
    NonFinite,
    /// A text or identifier is empty.
    #[error("a deck text value is empty")]
    Empty,
    /// A text or identifier is longer than the format allows.
    #[error("a deck text value is longer than the deck format allows")]
    TooLong,
    /// A text contains a line break (LF, CR, VT, FF, NEL, U+2028, U+2029).
    #[error("a deck text value contains a line break")]
    LineBreak,
    /// A text contains the format's comment syntax.
    #[error("a deck text value contains comment syntax")]
    Comment,
    /// A text contains include, library, control-block or shell syntax.
    #[error("a deck text value contains include or directive syntax")]
    Directive,
    /// A text contains path syntax (`/`, `\`, `~`, `..`, or is `.`).
    #[error("a deck text value contains path syntax")]
    Path,
    /// A text contains a character outside the format's allowlist.
    #[error("a deck text value contains a character the deck format does not allow")]
    ForbiddenCharacter,
    /// A key is not valid for the format (a server-side mistake).
    #[error("a deck key is not valid for this deck format")]
    InvalidKey,
    /// A statement head is not allowed by the format (a server-side mistake).
    #[error("a deck statement is not allowed in this deck format")]
    InvalidHead,
    /// A token is not valid for the format (a server-side mistake).
    #[error("a deck token is not valid for this deck format")]
    InvalidToken,
    /// A value of a kind the format does not admit in this place (text in
    /// a SPICE `.param`, which ngspice evaluates as an expression).
    #[error("a deck value of this kind is not allowed here")]
    ValueNotAllowed,
    /// A key is set twice.
    #[error("a deck key is set twice")]
    DuplicateKey,
    /// The deck exceeds [`MAX_DECK_STATEMENTS`] or [`MAX_DECK_BYTES`].
    #[error("the deck exceeds its size limit")]
    TooLarge,
    /// A rendered line matched the format's control syntax (a bug in a
    /// format's rules; never expected).
    #[error("the deck was refused by its final control-syntax check")]
    ControlSyntax,
    /// Writing the deck to the run directory failed; the run error's text
    /// is fixed too (detail in the server log). The previous file content is
    /// intact.
    #[error("the deck could not be written: {0}")]
    #[cfg(feature = "runs")]
    #[cfg_attr(docsrs, doc(cfg(feature = "runs")))]
    Storage(#[from] RunError),
}

/// One line of a deck, already validated.
#[derive(Debug, Clone)]
enum Statement<F: DeckFormat> {
    Assign(&'static str, DeckValue<F>),
    Line(&'static str, Vec<DeckValue<F>>),
}

/// A solver input deck in format `F`, built from typed values.
///
/// Keys, statement heads and tokens are server-authored `&'static str` and
/// checked against `F`; values come in as [`IntoDeckValue`] (numbers,
/// [`DeckToken`] enums, [`DeckIdent`], [`DeckText`]). Every check runs when
/// a value is added, so a refused value leaves the deck as it was.
#[derive(Debug, Clone)]
pub struct Deck<F: DeckFormat> {
    statements: Vec<Statement<F>>,
    keys: BTreeSet<&'static str>,
}

impl<F: DeckFormat> Default for Deck<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: DeckFormat> Deck<F> {
    /// An empty deck.
    pub fn new() -> Self {
        Self {
            statements: Vec::new(),
            keys: BTreeSet::new(),
        }
    }

    /// Sets `key` to `value`: `key = value` in [`KeyValue`], `.param key =
    /// value` in [`Spice`] (numbers only: ngspice evaluates a `.param`
    /// right-hand side as an expression). Each key may be set once.
    pub fn set(
        &mut self,
        key: &'static str,
        value: impl IntoDeckValue<F>,
    ) -> Result<&mut Self, DeckError> {
        F::check_key(key)?;
        let value = value.into_deck_value()?;
        F::check_assignment(&value)?;
        if self.keys.contains(key) {
            return Err(DeckError::DuplicateKey);
        }
        self.room()?;
        self.keys.insert(key);
        self.statements.push(Statement::Assign(key, value));
        Ok(self)
    }

    /// Adds a statement: `head` followed by its arguments, space-separated
    /// (a SPICE element line `R1 in out 1000.0`, or `.tran 1e-6 1e-3`).
    /// Formats without statements ([`KeyValue`]) refuse every head.
    pub fn statement(
        &mut self,
        head: &'static str,
        args: impl IntoIterator<Item = DeckValue<F>>,
    ) -> Result<&mut Self, DeckError> {
        F::check_head(head)?;
        let args: Vec<DeckValue<F>> = args.into_iter().collect();
        self.room()?;
        self.statements.push(Statement::Line(head, args));
        Ok(self)
    }

    /// Adds a statement whose arguments are a tuple of values of any
    /// kinds, each checked as it becomes a [`DeckValue`]: numbers (`f64`,
    /// finite), integers, enum tokens ([`DeckToken`], which `ToolEnum`
    /// derives), fixed words of the server's (`&'static str`), checked
    /// identifiers and texts. `deck.line("i", (row, "u", bound))` is
    /// `deck.statement("i", [DeckValue::integer(row), DeckValue::word("u")?,
    /// DeckValue::number(bound)?])`.
    ///
    /// ```
    /// use hardened_mcp::deck::{Deck, DeckToken, Words};
    ///
    /// #[derive(Clone, Copy)]
    /// enum Sense { Min, Max }
    ///
    /// impl DeckToken for Sense {
    ///     fn token(&self) -> &'static str {
    ///         match self { Sense::Min => "min", Sense::Max => "max" }
    ///     }
    /// }
    ///
    /// let mut deck = Deck::<Words>::new();
    /// deck.line("p", ("lp", Sense::Max, 1_u32, 2_u32, 2_u32))?
    ///     .line("i", (1_u32, "u", 4.5))?
    ///     .line("e", ("o", "f"))?;
    /// assert_eq!(deck.render()?, b"p lp max 1 2 2\ni 1 u 4.5\ne o f\n");
    /// assert!(deck.line("i", (1_u32, "u", f64::NAN)).is_err());
    /// assert!(deck.line("i", (1_u32, "u v", 4.5)).is_err()); // not a word
    /// # Ok::<(), hardened_mcp::deck::DeckError>(())
    /// ```
    pub fn line(
        &mut self,
        head: &'static str,
        args: impl DeckArgs<F>,
    ) -> Result<&mut Self, DeckError> {
        self.statement(head, args.into_values()?)
    }

    fn room(&self) -> Result<(), DeckError> {
        if self.statements.len() >= MAX_DECK_STATEMENTS {
            return Err(DeckError::TooLarge);
        }
        Ok(())
    }

    /// Renders the deck: the format's prologue, one line per statement, the
    /// epilogue. Each statement line is checked once more against
    /// [`DeckFormat::control_syntax`].
    pub fn render(&self) -> Result<Vec<u8>, DeckError> {
        let mut out = String::from(F::PROLOGUE);
        let mut line = String::new();
        for statement in &self.statements {
            line.clear();
            match statement {
                Statement::Assign(key, value) => F::write_assignment(&mut line, key, value),
                Statement::Line(head, args) => F::write_statement(&mut line, head, args),
            }
            if line.contains(['\n', '\r']) || F::control_syntax(&line).is_some() {
                tracing::error!(
                    format = F::NAME,
                    "deck line refused by the final control-syntax check"
                );
                return Err(DeckError::ControlSyntax);
            }
            out.push_str(&line);
            out.push('\n');
            if out.len() > MAX_DECK_BYTES {
                return Err(DeckError::TooLarge);
            }
        }
        out.push_str(F::EPILOGUE);
        if out.len() > MAX_DECK_BYTES {
            return Err(DeckError::TooLarge);
        }
        Ok(out.into_bytes())
    }

    /// Renders the deck and writes it atomically to the fixed file `name`
    /// in the run directory ([`RunDir::write_atomic`]: a temporary file,
    /// fsync, rename, mode 0600). Nothing is written when rendering fails,
    /// and a failed write leaves the previous content of `name` intact.
    ///
    /// ```
    /// use hardened_mcp::CallerId;
    /// use hardened_mcp::deck::{Deck, KeyValue};
    /// use hardened_mcp::runs::{FileName, RunRoot};
    ///
    /// const DECK: FileName = FileName::fixed("input.deck");
    ///
    /// # let tmp = tempfile::tempdir()?;
    /// let root = RunRoot::open(tmp.path().join("runs"))?;
    /// let (_handle, run) = root.create(&CallerId::local())?;
    /// let mut deck = Deck::<KeyValue>::new();
    /// deck.set("cells", 200_u32)?;
    /// deck.write_to(&run, &DECK)?;
    /// assert_eq!(run.read_bounded(&DECK, 1024)?, b"cells = 200\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "runs")]
    #[cfg_attr(docsrs, doc(cfg(feature = "runs")))]
    pub fn write_to(&self, dir: &RunDir, name: &FileName) -> Result<(), DeckError> {
        let bytes = self.render()?;
        dir.write_atomic(name, &bytes).map_err(|e| {
            tracing::warn!(format = F::NAME, error = %e, "deck write failed");
            DeckError::Storage(e)
        })
    }
}
impl From<DeckError> for crate::ToolError {
    /// Values that came from the caller (free text, identifiers, numbers)
    /// and were refused by the deck format become a fixed refusal naming
    /// the rule; keys, heads, tokens and the final control-syntax check are
    /// server-authored, so their failure is a bug: internal, logged. Storage
    /// failures follow the run root's mapping.
    fn from(e: DeckError) -> Self {
        match e {
            DeckError::NonFinite => {
                crate::ToolError::Rejected("a solver input number is not finite")
            }
            DeckError::Empty => crate::ToolError::Rejected("a solver input text is empty"),
            DeckError::TooLong => crate::ToolError::Rejected("a solver input text is too long"),
            DeckError::LineBreak => {
                crate::ToolError::Rejected("a solver input text contains a line break")
            }
            DeckError::Comment => {
                crate::ToolError::Rejected("a solver input text contains comment syntax")
            }
            DeckError::Directive => crate::ToolError::Rejected(
                "a solver input text contains include or directive syntax",
            ),
            DeckError::Path => {
                crate::ToolError::Rejected("a solver input text contains path syntax")
            }
            DeckError::ForbiddenCharacter => crate::ToolError::Rejected(
                "a solver input text contains a character that is not allowed",
            ),
            #[cfg(feature = "runs")]
            DeckError::Storage(run) => run.into(),
            other => crate::ToolError::internal(format_args!("deck: {other}")),
        }
    }
}
