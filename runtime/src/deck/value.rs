//! Typed deck values: finite numbers, fixed tokens, checked identifiers and
//! checked free text, each bound to one deck format.

use std::fmt;
use std::marker::PhantomData;

use super::{DeckError, DeckFormat};

/// An enum whose variants map to fixed, server-authored deck tokens.
///
/// ```
/// use hardened_mcp::deck::DeckToken;
///
/// enum Scheme { Explicit, CrankNicolson }
///
/// impl DeckToken for Scheme {
///     fn token(&self) -> &'static str {
///         match self { Scheme::Explicit => "explicit", Scheme::CrankNicolson => "crank_nicolson" }
///     }
/// }
/// ```
pub trait DeckToken {
    /// The token written into the deck; checked against the format when
    /// the value is added.
    fn token(&self) -> &'static str;
}

impl<T: DeckToken + ?Sized> DeckToken for &T {
    fn token(&self) -> &'static str {
        (**self).token()
    }
}

/// Formats a finite `f64` so that parsing the text gives the same value
/// back (bit for bit, including `-0.0`), and the text always reads as a
/// float (it contains `.` or `e`).
///
/// Magnitudes in `[1e-4, 1e15)` and zero use Rust's shortest round-trip
/// decimal form (`Display`), with `.0` appended to integral values; others
/// use the shortest round-trip exponent form (`LowerExp`, e.g. `1e-7`,
/// `2.5e20`). Callers check finiteness first ([`DeckValue::number`] does).
///
/// ```
/// use hardened_mcp::deck::format_f64;
///
/// assert_eq!(format_f64(0.45), "0.45");
/// assert_eq!(format_f64(200.0), "200.0");
/// assert_eq!(format_f64(-0.0), "-0.0");
/// assert_eq!(format_f64(1.5e-7), "1.5e-7");
/// assert_eq!(format_f64(0.1 + 0.2).parse::<f64>().unwrap(), 0.1 + 0.2);
/// ```
pub fn format_f64(x: f64) -> String {
    let magnitude = x.abs();
    if magnitude == 0.0 || (1e-4..1e15).contains(&magnitude) {
        let mut s = format!("{x}");
        if !s.contains('.') {
            s.push_str(".0");
        }
        s
    } else {
        format!("{x:e}")
    }
}

#[derive(Clone, PartialEq)]
pub(crate) enum Repr {
    Float(f64),
    Int(i128),
    Token(&'static str),
    Ident(String),
    Text(String),
    Named(&'static str, Box<Repr>),
}

impl Repr {
    fn write(&self, out: &mut String) {
        match self {
            Repr::Float(x) => out.push_str(&format_f64(*x)),
            Repr::Int(i) => out.push_str(&i.to_string()),
            Repr::Token(t) => out.push_str(t),
            Repr::Ident(s) | Repr::Text(s) => out.push_str(s),
            Repr::Named(key, value) => {
                out.push_str(key);
                out.push('=');
                value.write(out);
            }
        }
    }
}

/// A checked value for a deck of format `F`.
pub struct DeckValue<F> {
    repr: Repr,
    format: PhantomData<fn() -> F>,
}

impl<F: DeckFormat> DeckValue<F> {
    fn new(repr: Repr) -> Self {
        Self {
            repr,
            format: PhantomData,
        }
    }

    /// A float; NaN and infinities are refused.
    pub fn number(x: f64) -> Result<Self, DeckError> {
        if x.is_finite() {
            Ok(Self::new(Repr::Float(x)))
        } else {
            Err(DeckError::NonFinite)
        }
    }

    /// An integer.
    pub fn integer(i: impl Into<i128>) -> Self {
        Self::new(Repr::Int(i.into()))
    }

    /// The fixed token of an enum value, checked against `F`.
    pub fn token(value: &impl DeckToken) -> Result<Self, DeckError> {
        let token = value.token();
        F::check_token(token)?;
        Ok(Self::new(Repr::Token(token)))
    }

    /// A fixed word of the server's (a keyword of the solver's format,
    /// `"lp"`, `"u"`), checked against `F` as a token. Only a `&'static
    /// str`: text from a caller is an identifier or free text, never a word.
    pub fn word(word: &'static str) -> Result<Self, DeckError> {
        F::check_token(word)?;
        Ok(Self::new(Repr::Token(word)))
    }

    /// A named argument `key=value` inside a statement (SPICE model and
    /// option parameters); `key` is checked as a token.
    pub fn named(key: &'static str, value: impl IntoDeckValue<F>) -> Result<Self, DeckError> {
        F::check_token(key)?;
        let value = value.into_deck_value()?;
        F::check_named(&value)?;
        Ok(Self::new(Repr::Named(key, Box::new(value.repr))))
    }

    /// An identifier checked for `F`.
    pub fn from_ident(ident: DeckIdent<F>) -> Self {
        Self::new(Repr::Ident(ident.ident))
    }

    /// Free text checked for `F`.
    pub fn from_text(text: DeckText<F>) -> Self {
        Self::new(Repr::Text(text.text))
    }

    /// Appends the rendered value.
    pub fn write(&self, out: &mut String) {
        self.repr.write(out);
    }

    /// What kind of value this is.
    pub fn kind(&self) -> ValueKind {
        match self.repr {
            Repr::Float(_) => ValueKind::Number,
            Repr::Int(_) => ValueKind::Integer,
            Repr::Token(_) => ValueKind::Token,
            Repr::Ident(_) => ValueKind::Ident,
            Repr::Text(_) => ValueKind::Text,
            Repr::Named(..) => ValueKind::Named,
        }
    }
}

/// The kind of a [`DeckValue`], for formats that admit only some kinds in
/// some places ([`DeckFormat::check_assignment`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueKind {
    /// A finite float.
    Number,
    /// An integer.
    Integer,
    /// A fixed token of a [`DeckToken`].
    Token,
    /// A [`DeckIdent`].
    Ident,
    /// A [`DeckText`].
    Text,
    /// A named argument `key=value`.
    Named,
}

impl<F> Clone for DeckValue<F> {
    fn clone(&self) -> Self {
        Self {
            repr: self.repr.clone(),
            format: PhantomData,
        }
    }
}

impl<F> PartialEq for DeckValue<F> {
    fn eq(&self, other: &Self) -> bool {
        self.repr == other.repr
    }
}

impl<F: DeckFormat> fmt::Debug for DeckValue<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.repr.write(&mut s);
        f.debug_tuple("DeckValue").field(&s).finish()
    }
}

/// Anything that becomes a [`DeckValue`] of format `F`, checked.
pub trait IntoDeckValue<F: DeckFormat> {
    /// The checked value.
    fn into_deck_value(self) -> Result<DeckValue<F>, DeckError>;
}

impl<F: DeckFormat> IntoDeckValue<F> for DeckValue<F> {
    fn into_deck_value(self) -> Result<DeckValue<F>, DeckError> {
        Ok(self)
    }
}

/// A checked value that may have failed its check: the error is passed on,
/// so `deck.set("label", DeckText::new(text))` reports the text's error.
impl<F: DeckFormat, V: IntoDeckValue<F>> IntoDeckValue<F> for Result<V, DeckError> {
    fn into_deck_value(self) -> Result<DeckValue<F>, DeckError> {
        self?.into_deck_value()
    }
}

impl<F: DeckFormat> IntoDeckValue<F> for f64 {
    fn into_deck_value(self) -> Result<DeckValue<F>, DeckError> {
        DeckValue::number(self)
    }
}

impl<F: DeckFormat> IntoDeckValue<F> for f32 {
    fn into_deck_value(self) -> Result<DeckValue<F>, DeckError> {
        DeckValue::number(f64::from(self))
    }
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl<F: DeckFormat> IntoDeckValue<F> for $t {
            fn into_deck_value(self) -> Result<DeckValue<F>, DeckError> {
                Ok(DeckValue::integer(self))
            }
        }
    )*};
}
integers!(u8, u16, u32, u64, i8, i16, i32, i64);

impl<F: DeckFormat> IntoDeckValue<F> for usize {
    fn into_deck_value(self) -> Result<DeckValue<F>, DeckError> {
        Ok(DeckValue::new(Repr::Int(self as i128)))
    }
}

impl<F: DeckFormat, T: DeckToken> IntoDeckValue<F> for T {
    fn into_deck_value(self) -> Result<DeckValue<F>, DeckError> {
        DeckValue::token(&self)
    }
}

/// A fixed word of the server's: [`DeckValue::word`].
impl<F: DeckFormat> IntoDeckValue<F> for &'static str {
    fn into_deck_value(self) -> Result<DeckValue<F>, DeckError> {
        DeckValue::word(self)
    }
}

impl<F: DeckFormat> IntoDeckValue<F> for DeckIdent<F> {
    fn into_deck_value(self) -> Result<DeckValue<F>, DeckError> {
        Ok(DeckValue::from_ident(self))
    }
}

impl<F: DeckFormat> IntoDeckValue<F> for DeckText<F> {
    fn into_deck_value(self) -> Result<DeckValue<F>, DeckError> {
        Ok(DeckValue::from_text(self))
    }
}

/// An identifier (a name, a SPICE node) admitted by format `F`.
pub struct DeckIdent<F> {
    ident: String,
    format: PhantomData<fn() -> F>,
}

impl<F: DeckFormat> DeckIdent<F> {
    /// Checks `ident` against `F` ([`DeckFormat::check_ident`]).
    pub fn new(ident: &str) -> Result<Self, DeckError> {
        F::check_ident(ident)?;
        Ok(Self {
            ident: ident.to_owned(),
            format: PhantomData,
        })
    }

    /// The identifier.
    pub fn as_str(&self) -> &str {
        &self.ident
    }
}

/// Free text admitted by format `F`: length and character allowlist
/// enforced, line breaks, comments, directives and paths refused.
pub struct DeckText<F> {
    text: String,
    format: PhantomData<fn() -> F>,
}

impl<F: DeckFormat> DeckText<F> {
    /// Checks `text` against `F` ([`DeckFormat::check_text`]).
    pub fn new(text: &str) -> Result<Self, DeckError> {
        F::check_text(text)?;
        Ok(Self {
            text: text.to_owned(),
            format: PhantomData,
        })
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

macro_rules! common_impls {
    ($name:ident, $field:ident) => {
        impl<F> Clone for $name<F> {
            fn clone(&self) -> Self {
                Self {
                    $field: self.$field.clone(),
                    format: PhantomData,
                }
            }
        }

        impl<F> PartialEq for $name<F> {
            fn eq(&self, other: &Self) -> bool {
                self.$field == other.$field
            }
        }

        impl<F> Eq for $name<F> {}

        impl<F> fmt::Debug for $name<F> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($name))
                    .field(&self.$field)
                    .finish()
            }
        }
    };
}
common_impls!(DeckIdent, ident);
common_impls!(DeckText, text);
