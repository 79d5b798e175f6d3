//! The refusal of an argument: a stable code, the declared name and bound,
//! never the caller's value.

use std::fmt;

use serde_json::{Map, Value};

/// What went wrong with the arguments, as a stable machine-readable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArgErrorCode {
    /// The arguments are not a JSON object.
    NotObject,
    /// A key that the tool does not declare (its name is never reported).
    UnknownArgument,
    /// A required argument is absent.
    MissingArgument,
    /// The JSON type does not match (bool for a number, numeric string, null, …).
    WrongType,
    /// A float is NaN or infinite.
    NotFinite,
    /// An integer argument given as a number that cannot be read exactly:
    /// with a fraction or an exponent at or beyond ±2^50 (`1e19`,
    /// `9007199254740993.0`), or beyond the 64-bit range, where JSON
    /// numbers are read as an approximate `f64`. It is refused, never
    /// rounded.
    InexactInteger,
    /// Below the inclusive minimum.
    BelowMinimum,
    /// Above the inclusive maximum.
    AboveMaximum,
    /// Not above the exclusive minimum.
    NotAboveExclusiveMinimum,
    /// Not below the exclusive maximum.
    NotBelowExclusiveMaximum,
    /// Fewer characters than `min_len`.
    TooShort,
    /// More characters than `max_len`.
    TooLong,
    /// The string does not match the declared `pattern`.
    PatternMismatch,
    /// The string has a character outside the declared `charset`.
    CharsetMismatch,
    /// The array has more than `max_items` elements.
    TooManyItems,
    /// The array has fewer than `min_items` elements.
    TooFewItems,
    /// An array of arrays declared `rectangular` has rows of different
    /// lengths.
    NotRectangular,
    /// An array of arrays holds more items in all its rows than its
    /// declared `max_total`.
    TooManyInTotal,
    /// An array declared `same_len_as = other` has a different number of
    /// items than `other` (the bound names it).
    LengthMismatch,
    /// A row of an array of arrays declared `items(same_len_as = other)`
    /// has a different number of items than `other` (the bound names it).
    RowLengthMismatch,
    /// Not one of the enum's tokens.
    NotAllowed,
    /// A cross-argument `check(..)` rule failed.
    CheckFailed,
}

impl ArgErrorCode {
    /// The code as a `snake_case` string, as it appears in the structured error.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotObject => "not_object",
            Self::UnknownArgument => "unknown_argument",
            Self::MissingArgument => "missing_argument",
            Self::WrongType => "wrong_type",
            Self::NotFinite => "not_finite",
            Self::InexactInteger => "inexact_integer",
            Self::BelowMinimum => "below_minimum",
            Self::AboveMaximum => "above_maximum",
            Self::NotAboveExclusiveMinimum => "not_above_exclusive_minimum",
            Self::NotBelowExclusiveMaximum => "not_below_exclusive_maximum",
            Self::TooShort => "too_short",
            Self::TooLong => "too_long",
            Self::PatternMismatch => "pattern_mismatch",
            Self::CharsetMismatch => "charset_mismatch",
            Self::TooManyItems => "too_many_items",
            Self::TooFewItems => "too_few_items",
            Self::NotRectangular => "not_rectangular",
            Self::TooManyInTotal => "too_many_in_total",
            Self::LengthMismatch => "length_mismatch",
            Self::RowLengthMismatch => "row_length_mismatch",
            Self::NotAllowed => "not_allowed",
            Self::CheckFailed => "check_failed",
        }
    }
}

/// A declared bound, reported with an error. Always authored in code.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Bound {
    /// An integer bound.
    Int(i128),
    /// A float bound.
    Float(f64),
    /// A length or item count.
    Count(usize),
    /// A declared text: expected type, pattern, charset name, check reason.
    Text(&'static str),
    /// The allowed tokens of an enum.
    Tokens(&'static [&'static str]),
}

impl Bound {
    pub(super) fn to_json(self) -> Value {
        match self {
            // Always a JSON number (a schema bound must be one): i64, then
            // u64 (bounds up to `u64::MAX`), else the nearest f64 (only a
            // hand-built spec can hold an `i128` beyond both).
            Self::Int(i) => i64::try_from(i)
                .map(Value::from)
                .or_else(|_| u64::try_from(i).map(Value::from))
                .unwrap_or_else(|_| {
                    serde_json::Number::from_f64(i as f64).map_or(Value::Null, Value::Number)
                }),
            Self::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
            Self::Count(n) => Value::from(n),
            Self::Text(t) => Value::from(t),
            Self::Tokens(t) => Value::from(t.to_vec()),
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(x) => write!(f, "{x}"),
            Self::Count(n) => write!(f, "{n}"),
            Self::Text(t) => f.write_str(t),
            Self::Tokens(t) => f.write_str(&t.join(", ")),
        }
    }
}

/// An argument was refused. Carries only declared data: a code, the
/// declared argument name (and, inside a record, the field's), the
/// declared bound, a `check` rule's reason — never the caller's value, an
/// unknown key's name or an item's position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArgError {
    code: ArgErrorCode,
    argument: Option<&'static str>,
    field: Option<&'static str>,
    bound: Option<Bound>,
    reason: Option<&'static str>,
}

impl ArgError {
    /// An error about a declared argument.
    pub const fn new(code: ArgErrorCode, argument: &'static str, bound: Option<Bound>) -> Self {
        Self {
            code,
            argument: Some(argument),
            field: None,
            bound,
            reason: None,
        }
    }

    /// The arguments are not a JSON object.
    pub const fn not_object() -> Self {
        Self {
            code: ArgErrorCode::NotObject,
            argument: None,
            field: None,
            bound: None,
            reason: None,
        }
    }

    /// A key that is not declared. Its name is deliberately not kept.
    pub const fn unknown_argument() -> Self {
        Self {
            code: ArgErrorCode::UnknownArgument,
            argument: None,
            field: None,
            bound: None,
            reason: None,
        }
    }

    /// A key that is not declared, with the names that are (server text,
    /// safe to show; they become the error's `bound` and its message). The
    /// unknown key's name is deliberately not kept.
    pub const fn unknown_argument_of(declared: &'static [&'static str]) -> Self {
        Self {
            code: ArgErrorCode::UnknownArgument,
            argument: None,
            field: None,
            bound: Some(Bound::Tokens(declared)),
            reason: None,
        }
    }

    /// A required argument is absent.
    pub const fn missing(argument: &'static str) -> Self {
        Self::new(ArgErrorCode::MissingArgument, argument, None)
    }

    /// The JSON type is wrong; `expected` names the declared type.
    pub const fn wrong_type(argument: &'static str, expected: &'static str) -> Self {
        Self::new(
            ArgErrorCode::WrongType,
            argument,
            Some(Bound::Text(expected)),
        )
    }

    /// A `check(..)` rule failed; `reason` is its server-authored text.
    pub const fn check_failed(reason: &'static str) -> Self {
        Self {
            code: ArgErrorCode::CheckFailed,
            argument: None,
            field: None,
            bound: None,
            reason: Some(reason),
        }
    }

    /// The error code.
    pub const fn code(&self) -> ArgErrorCode {
        self.code
    }

    /// The declared name of the argument concerned, if any.
    pub const fn argument(&self) -> Option<&'static str> {
        self.argument
    }

    /// Inside a record (an argument struct as a parameter, a field or an
    /// array's items): the declared name of the record's field whose rule
    /// failed; [`ArgError::argument`] names the argument that holds it.
    pub const fn field(&self) -> Option<&'static str> {
        self.field
    }

    /// The same refusal seen from the argument `argument` that holds the
    /// record it was about: the record's field (its innermost one, for
    /// records within records) becomes [`ArgError::field`].
    pub(crate) const fn within(mut self, argument: &'static str) -> Self {
        if self.field.is_none() {
            self.field = self.argument;
        }
        self.argument = Some(argument);
        self
    }

    /// The declared bound that was violated, if any (for an unknown key:
    /// the declared names, when the tool's parser gave them).
    pub const fn bound(&self) -> Option<Bound> {
        self.bound
    }

    /// The server-authored reason of a failed `check` rule.
    pub const fn reason(&self) -> Option<&'static str> {
        self.reason
    }

    /// The structured form sent to the caller: `code`, `argument`,
    /// `field`, `bound`, `reason`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("code".into(), Value::from(self.code.as_str()));
        if let Some(a) = self.argument {
            m.insert("argument".into(), Value::from(a));
        }
        if let Some(f) = self.field {
            m.insert("field".into(), Value::from(f));
        }
        if let Some(b) = self.bound {
            m.insert("bound".into(), b.to_json());
        }
        if let Some(r) = self.reason {
            m.insert("reason".into(), Value::from(r));
        }
        Value::Object(m)
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ArgErrorCode as C;
        f.write_str("invalid arguments: ")?;
        // Inside a record, "`x` of an item of `points`": the field, then
        // the argument (both declared names).
        let a = match (self.field, self.argument) {
            (Some(field), Some(argument)) => format!("{field}` of an item of `{argument}"),
            (None, argument) => argument.unwrap_or("argument").to_owned(),
            (Some(field), None) => field.to_owned(),
        };
        let b = self.bound.map(|b| b.to_string()).unwrap_or_default();
        match self.code {
            C::NotObject => f.write_str("expected a JSON object"),
            C::UnknownArgument if self.argument.is_some() => match self.bound {
                Some(Bound::Tokens(names)) => write!(
                    f,
                    "unknown key in an item of `{a}`; its keys are: {}",
                    names.join(", ")
                ),
                _ => write!(f, "unknown key in an item of `{a}`"),
            },
            C::UnknownArgument => match self.bound {
                Some(Bound::Tokens([])) => f.write_str("unknown argument; this tool takes none"),
                Some(Bound::Tokens(names)) => {
                    write!(
                        f,
                        "unknown argument; the arguments are: {}",
                        names.join(", ")
                    )
                }
                _ => f.write_str("unknown argument"),
            },
            C::MissingArgument => write!(f, "missing required argument `{a}`"),
            C::WrongType => write!(f, "`{a}` must be of type {b}"),
            C::NotFinite => write!(f, "`{a}` must be a finite number"),
            C::InexactInteger => write!(
                f,
                "`{a}` cannot be read exactly as an integer: write it without a fraction or an \
                 exponent, within its type's range"
            ),
            C::BelowMinimum => write!(f, "`{a}` is below its minimum {b}"),
            C::AboveMaximum => write!(f, "`{a}` is above its maximum {b}"),
            C::NotAboveExclusiveMinimum => write!(f, "`{a}` must be greater than {b}"),
            C::NotBelowExclusiveMaximum => write!(f, "`{a}` must be less than {b}"),
            C::TooShort => write!(f, "`{a}` is shorter than {b} characters"),
            C::TooLong => write!(f, "`{a}` is longer than {b} characters"),
            C::PatternMismatch => write!(f, "`{a}` does not match the pattern {b}"),
            C::CharsetMismatch => write!(f, "`{a}` has characters outside the {b} set"),
            C::TooManyItems => write!(f, "`{a}` has more than {b} items"),
            C::TooFewItems => write!(f, "`{a}` has fewer than {b} items"),
            C::NotRectangular => write!(f, "the rows of `{a}` must all be as long as the first"),
            C::TooManyInTotal => write!(f, "`{a}` has more than {b} items in all its rows"),
            C::LengthMismatch => write!(f, "`{a}` must have as many items as `{b}`"),
            C::RowLengthMismatch => {
                write!(f, "every row of `{a}` must have as many items as `{b}`")
            }
            C::NotAllowed => write!(f, "`{a}` must be one of: {b}"),
            C::CheckFailed => f.write_str(self.reason.unwrap_or("a check of the arguments failed")),
        }
    }
}

impl std::error::Error for ArgError {}
