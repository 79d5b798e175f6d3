//! Strict tool arguments: raw JSON values → typed, bounded Rust values, and
//! the same bounds as JSON Schema fragments, from one declaration.
//!
//! Every argument kind implements [`Arg`]. Its `Spec` is the declared bounds
//! (built by the macros as a `static`); [`Arg::parse`], [`Arg::check`] and
//! [`Arg::schema`] all read the same spec, so the advertised schema and the
//! checks cannot disagree.
//!
//! Decisions, consistent with JSON Schema draft 2020-12:
//! - an integer field accepts a JSON number with a zero fractional part
//!   (`5.0`), because `"type": "integer"` accepts it; `5.5` is a wrong type;
//! - a float field accepts integers (`5`), because `"type": "number"` does;
//! - `null` is a wrong type everywhere (an `Option` argument is omitted, not
//!   null), booleans are never numbers, numeric strings are never numbers;
//! - string lengths count Unicode scalar values, as JSON Schema does;
//! - `pattern` is searched, not anchored, as in JSON Schema: write `^…$`.

use std::fmt;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

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
            Self::BelowMinimum => "below_minimum",
            Self::AboveMaximum => "above_maximum",
            Self::NotAboveExclusiveMinimum => "not_above_exclusive_minimum",
            Self::NotBelowExclusiveMaximum => "not_below_exclusive_maximum",
            Self::TooShort => "too_short",
            Self::TooLong => "too_long",
            Self::PatternMismatch => "pattern_mismatch",
            Self::CharsetMismatch => "charset_mismatch",
            Self::TooManyItems => "too_many_items",
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
    fn to_json(self) -> Value {
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
/// declared argument name, the declared bound, a `check` rule's reason —
/// never the caller's value or an unknown key's name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArgError {
    code: ArgErrorCode,
    argument: Option<&'static str>,
    bound: Option<Bound>,
    reason: Option<&'static str>,
}

impl ArgError {
    /// An error about a declared argument.
    pub const fn new(code: ArgErrorCode, argument: &'static str, bound: Option<Bound>) -> Self {
        Self {
            code,
            argument: Some(argument),
            bound,
            reason: None,
        }
    }

    /// The arguments are not a JSON object.
    pub const fn not_object() -> Self {
        Self {
            code: ArgErrorCode::NotObject,
            argument: None,
            bound: None,
            reason: None,
        }
    }

    /// A key that is not declared. Its name is deliberately not kept.
    pub const fn unknown_argument() -> Self {
        Self {
            code: ArgErrorCode::UnknownArgument,
            argument: None,
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

    /// The declared bound that was violated, if any (for an unknown key:
    /// the declared names, when the tool's parser gave them).
    pub const fn bound(&self) -> Option<Bound> {
        self.bound
    }

    /// The server-authored reason of a failed `check` rule.
    pub const fn reason(&self) -> Option<&'static str> {
        self.reason
    }

    /// The structured form sent to the caller: `code`, `argument`, `bound`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("code".into(), Value::from(self.code.as_str()));
        if let Some(a) = self.argument {
            m.insert("argument".into(), Value::from(a));
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
        let a = self.argument.unwrap_or("argument");
        let b = self.bound.map(|b| b.to_string()).unwrap_or_default();
        match self.code {
            C::NotObject => f.write_str("expected a JSON object"),
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
            C::BelowMinimum => write!(f, "`{a}` is below its minimum {b}"),
            C::AboveMaximum => write!(f, "`{a}` is above its maximum {b}"),
            C::NotAboveExclusiveMinimum => write!(f, "`{a}` must be greater than {b}"),
            C::NotBelowExclusiveMaximum => write!(f, "`{a}` must be less than {b}"),
            C::TooShort => write!(f, "`{a}` is shorter than {b} characters"),
            C::TooLong => write!(f, "`{a}` is longer than {b} characters"),
            C::PatternMismatch => write!(f, "`{a}` does not match the pattern {b}"),
            C::CharsetMismatch => write!(f, "`{a}` has characters outside the {b} set"),
            C::TooManyItems => write!(f, "`{a}` has more than {b} items"),
            C::NotAllowed => write!(f, "`{a}` must be one of: {b}"),
            C::CheckFailed => f.write_str(self.reason.unwrap_or("a check of the arguments failed")),
        }
    }
}

impl std::error::Error for ArgError {}

/// Description and units of an argument, shared by every spec.
#[derive(Debug, Clone, Copy, Default)]
pub struct Doc {
    /// What the argument means (server-authored).
    pub description: Option<&'static str>,
    /// The physical units of a number, shown to the model.
    pub units: Option<&'static str>,
}

impl Doc {
    /// No description, no units.
    pub const NONE: Doc = Doc {
        description: None,
        units: None,
    };

    fn apply(&self, m: &mut Map<String, Value>) {
        let text = match (self.description, self.units) {
            (Some(d), Some(u)) => Some(format!("{d} (units: {u})")),
            (None, Some(u)) => Some(format!("Units: {u}.")),
            (Some(d), None) => Some(d.to_owned()),
            (None, None) => None,
        };
        if let Some(t) = text {
            m.insert("description".into(), Value::from(t));
        }
        if let Some(u) = self.units {
            m.insert("x-units".into(), Value::from(u));
        }
    }
}

/// One argument kind: how it is parsed, checked and described.
///
/// Implemented for the integer types, `f32`, `f64`, `bool`, `String`,
/// `Vec<T>`, `Option<T>` and (through `#[derive(ToolEnum)]`) unit enums.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool argument kind",
    label = "no schema, parser or bounds for this type",
    note = "tool arguments are integers, f32/f64, bool, String, Vec/Option of those, or unit enums with `#[derive(Clone, Copy, ToolEnum)]`"
)]
pub trait Arg: Sized {
    /// The declared bounds of this kind.
    type Spec: 'static;

    /// Parses a raw JSON value, applying every check of `spec`.
    fn parse(value: &Value, spec: &Self::Spec, name: &'static str) -> Result<Self, ArgError>;

    /// Checks an already typed value (revalidation of direct calls).
    fn check(&self, spec: &Self::Spec, name: &'static str) -> Result<(), ArgError>;

    /// The JSON Schema of this argument.
    fn schema(spec: &Self::Spec) -> Map<String, Value>;

    /// The value used when the argument is absent, or `None` if it is required.
    fn absent(spec: &Self::Spec, name: &'static str) -> Option<Result<Self, ArgError>>;

    /// Checks the spec itself when the router is built: the default obeys
    /// the bounds, patterns compile. Returns a fixed description of the fault.
    fn self_test(spec: &Self::Spec) -> Result<(), &'static str> {
        match Self::absent(spec, "default") {
            Some(Err(_)) => Err("its default violates its own bounds"),
            _ => Ok(()),
        }
    }
}

/// Bounds of an integer argument; exclusive bounds are kept as declared.
#[derive(Debug, Clone, Copy)]
pub struct IntSpec {
    /// Inclusive minimum.
    pub min: Option<i128>,
    /// Inclusive maximum.
    pub max: Option<i128>,
    /// Exclusive minimum.
    pub exclusive_min: Option<i128>,
    /// Exclusive maximum.
    pub exclusive_max: Option<i128>,
    /// Value when absent.
    pub default: Option<i128>,
    /// Description and units.
    pub doc: Doc,
}

impl IntSpec {
    fn check_i128(&self, v: i128, name: &'static str) -> Result<(), ArgError> {
        use ArgErrorCode as C;
        if let Some(m) = self.min
            && v < m
        {
            return Err(ArgError::new(C::BelowMinimum, name, Some(Bound::Int(m))));
        }
        if let Some(m) = self.exclusive_min
            && v <= m
        {
            return Err(ArgError::new(
                C::NotAboveExclusiveMinimum,
                name,
                Some(Bound::Int(m)),
            ));
        }
        if let Some(m) = self.max
            && v > m
        {
            return Err(ArgError::new(C::AboveMaximum, name, Some(Bound::Int(m))));
        }
        if let Some(m) = self.exclusive_max
            && v >= m
        {
            return Err(ArgError::new(
                C::NotBelowExclusiveMaximum,
                name,
                Some(Bound::Int(m)),
            ));
        }
        Ok(())
    }

    fn schema(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), Value::from("integer"));
        let num = |i: i128| Bound::Int(i).to_json();
        if let Some(v) = self.min {
            m.insert("minimum".into(), num(v));
        }
        if let Some(v) = self.max {
            m.insert("maximum".into(), num(v));
        }
        if let Some(v) = self.exclusive_min {
            m.insert("exclusiveMinimum".into(), num(v));
        }
        if let Some(v) = self.exclusive_max {
            m.insert("exclusiveMaximum".into(), num(v));
        }
        if let Some(v) = self.default {
            m.insert("default".into(), num(v));
        }
        self.doc.apply(&mut m);
        m
    }
}

/// Reads a JSON number as an integer, accepting integral floats (`5.0`).
fn json_integer(value: &Value, name: &'static str) -> Result<i128, ArgError> {
    let Value::Number(n) = value else {
        return Err(ArgError::wrong_type(name, "integer"));
    };
    if let Some(i) = n.as_i64() {
        return Ok(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Ok(i128::from(u));
    }
    match n.as_f64() {
        Some(f) if !f.is_finite() => Err(ArgError::new(ArgErrorCode::NotFinite, name, None)),
        // |f| < 2^126 fits i128 exactly, since an integral f64 is exact.
        Some(f) if f.fract() == 0.0 && f.abs() < 8.5e37 => Ok(f as i128),
        // Integral but astronomically large: out of any declared range.
        Some(f) if f.fract() == 0.0 => Ok(if f < 0.0 { i128::MIN } else { i128::MAX }),
        _ => Err(ArgError::wrong_type(name, "integer")),
    }
}

macro_rules! int_arg {
    ($($t:ty),*) => {$(
        impl Arg for $t {
            type Spec = IntSpec;
            fn parse(value: &Value, spec: &IntSpec, name: &'static str) -> Result<Self, ArgError> {
                let v = json_integer(value, name)?;
                spec.check_i128(v, name)?;
                // The macro keeps declared bounds inside the type's range, so
                // this only fails for a spec built by hand.
                <$t>::try_from(v).map_err(|_| {
                    let code = if v < 0 { ArgErrorCode::BelowMinimum } else { ArgErrorCode::AboveMaximum };
                    ArgError::new(code, name, None)
                })
            }
            #[inline]
            fn check(&self, spec: &IntSpec, name: &'static str) -> Result<(), ArgError> {
                spec.check_i128(*self as i128, name)
            }
            fn schema(spec: &IntSpec) -> Map<String, Value> {
                spec.schema()
            }
            fn absent(spec: &IntSpec, name: &'static str) -> Option<Result<Self, ArgError>> {
                spec.default.map(|d| Self::parse(&Bound::Int(d).to_json(), spec, name))
            }
        }
    )*};
}
int_arg!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

/// Bounds of a float argument. Floats are always checked finite.
#[derive(Debug, Clone, Copy)]
pub struct FloatSpec {
    /// Inclusive minimum.
    pub min: Option<f64>,
    /// Inclusive maximum.
    pub max: Option<f64>,
    /// Exclusive minimum.
    pub exclusive_min: Option<f64>,
    /// Exclusive maximum.
    pub exclusive_max: Option<f64>,
    /// Value when absent.
    pub default: Option<f64>,
    /// Description and units.
    pub doc: Doc,
}

impl FloatSpec {
    #[inline]
    fn check_f64(&self, v: f64, name: &'static str) -> Result<(), ArgError> {
        use ArgErrorCode as C;
        if !v.is_finite() {
            return Err(ArgError::new(C::NotFinite, name, None));
        }
        if let Some(m) = self.min
            && v < m
        {
            return Err(ArgError::new(C::BelowMinimum, name, Some(Bound::Float(m))));
        }
        if let Some(m) = self.exclusive_min
            && v <= m
        {
            return Err(ArgError::new(
                C::NotAboveExclusiveMinimum,
                name,
                Some(Bound::Float(m)),
            ));
        }
        if let Some(m) = self.max
            && v > m
        {
            return Err(ArgError::new(C::AboveMaximum, name, Some(Bound::Float(m))));
        }
        if let Some(m) = self.exclusive_max
            && v >= m
        {
            return Err(ArgError::new(
                C::NotBelowExclusiveMaximum,
                name,
                Some(Bound::Float(m)),
            ));
        }
        Ok(())
    }

    fn parse_f64(&self, value: &Value, name: &'static str) -> Result<f64, ArgError> {
        let Value::Number(n) = value else {
            return Err(ArgError::wrong_type(name, "number"));
        };
        let v = n.as_f64().ok_or(ArgError::wrong_type(name, "number"))?;
        self.check_f64(v, name)?;
        Ok(v)
    }

    fn schema(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), Value::from("number"));
        let num = |f: f64| Bound::Float(f).to_json();
        if let Some(v) = self.min {
            m.insert("minimum".into(), num(v));
        }
        if let Some(v) = self.max {
            m.insert("maximum".into(), num(v));
        }
        if let Some(v) = self.exclusive_min {
            m.insert("exclusiveMinimum".into(), num(v));
        }
        if let Some(v) = self.exclusive_max {
            m.insert("exclusiveMaximum".into(), num(v));
        }
        if let Some(v) = self.default {
            m.insert("default".into(), num(v));
        }
        self.doc.apply(&mut m);
        m
    }
}

impl Arg for f64 {
    type Spec = FloatSpec;
    fn parse(value: &Value, spec: &FloatSpec, name: &'static str) -> Result<Self, ArgError> {
        spec.parse_f64(value, name)
    }
    #[inline]
    fn check(&self, spec: &FloatSpec, name: &'static str) -> Result<(), ArgError> {
        spec.check_f64(*self, name)
    }
    fn schema(spec: &FloatSpec) -> Map<String, Value> {
        spec.schema()
    }
    fn absent(spec: &FloatSpec, name: &'static str) -> Option<Result<Self, ArgError>> {
        spec.default.map(|d| spec.check_f64(d, name).map(|()| d))
    }
}

/// `f32` arguments are parsed and checked as the JSON (f64) value, then
/// rounded. Revalidation of an `f32` compares in `f32` with the bounds
/// rounded to `f32` (rounding is monotone, so every parsed value passes);
/// an exclusive bound is therefore checked inclusively after rounding.
impl Arg for f32 {
    type Spec = FloatSpec;
    /// Checked in `f64`, then again after the conversion: rounding to `f32`
    /// can land a value on an exclusive bound (`1e-50` becomes `0.0`) or
    /// overflow to infinity.
    fn parse(value: &Value, spec: &FloatSpec, name: &'static str) -> Result<Self, ArgError> {
        let v = spec.parse_f64(value, name)? as f32;
        v.check(spec, name)?;
        Ok(v)
    }
    fn check(&self, spec: &FloatSpec, name: &'static str) -> Result<(), ArgError> {
        use ArgErrorCode as C;
        let v = *self;
        if !v.is_finite() {
            return Err(ArgError::new(C::NotFinite, name, None));
        }
        // The bounds as `f32` (rounding is monotonic, so a value within an
        // inclusive bound in `f64` stays within it).
        if let Some(m) = spec.min
            && v < m as f32
        {
            return Err(ArgError::new(C::BelowMinimum, name, Some(Bound::Float(m))));
        }
        if let Some(m) = spec.exclusive_min
            && v <= m as f32
        {
            let code = C::NotAboveExclusiveMinimum;
            return Err(ArgError::new(code, name, Some(Bound::Float(m))));
        }
        if let Some(m) = spec.max
            && v > m as f32
        {
            return Err(ArgError::new(C::AboveMaximum, name, Some(Bound::Float(m))));
        }
        if let Some(m) = spec.exclusive_max
            && v >= m as f32
        {
            let code = C::NotBelowExclusiveMaximum;
            return Err(ArgError::new(code, name, Some(Bound::Float(m))));
        }
        Ok(())
    }
    fn schema(spec: &FloatSpec) -> Map<String, Value> {
        spec.schema()
    }
    fn absent(spec: &FloatSpec, name: &'static str) -> Option<Result<Self, ArgError>> {
        spec.default
            .map(|d| spec.check_f64(d, name).map(|()| d as f32))
    }
}

/// A boolean argument: only `true` and `false`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BoolSpec {
    /// Value when absent.
    pub default: Option<bool>,
    /// Description.
    pub doc: Doc,
}

impl Arg for bool {
    type Spec = BoolSpec;
    fn parse(value: &Value, _: &BoolSpec, name: &'static str) -> Result<Self, ArgError> {
        value.as_bool().ok_or(ArgError::wrong_type(name, "boolean"))
    }
    fn check(&self, _: &BoolSpec, _: &'static str) -> Result<(), ArgError> {
        Ok(())
    }
    fn schema(spec: &BoolSpec) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), Value::from("boolean"));
        if let Some(d) = spec.default {
            m.insert("default".into(), Value::from(d));
        }
        spec.doc.apply(&mut m);
        m
    }
    fn absent(spec: &BoolSpec, _: &'static str) -> Option<Result<Self, ArgError>> {
        spec.default.map(Ok)
    }
}

/// A named character set for string arguments (`#[bounded(charset = "…")]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Charset {
    /// `A-Z a-z 0-9`.
    Alnum,
    /// `A-Z a-z 0-9 _ . -` (identifiers, labels).
    Identifier,
    /// Printable ASCII, space included (`0x20..=0x7E`).
    Printable,
    /// Any character except control characters (Unicode `Cc`).
    Text,
}

impl Charset {
    /// The charset's name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Alnum => "alnum",
            Self::Identifier => "identifier",
            Self::Printable => "printable",
            Self::Text => "text",
        }
    }

    /// The equivalent JSON Schema `pattern` (ECMA-262 and Rust regex agree on it).
    pub const fn pattern(self) -> &'static str {
        match self {
            Self::Alnum => "^[A-Za-z0-9]*$",
            Self::Identifier => "^[A-Za-z0-9_.-]*$",
            Self::Printable => "^[\\x20-\\x7E]*$",
            Self::Text => "^[^\\x00-\\x1F\\x7F-\\x9F]*$",
        }
    }

    /// Whether `c` belongs to the set.
    #[inline]
    pub fn contains(self, c: char) -> bool {
        match self {
            Self::Alnum => c.is_ascii_alphanumeric(),
            Self::Identifier => c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'),
            Self::Printable => matches!(c, ' '..='~'),
            Self::Text => !c.is_control(),
        }
    }
}

/// A regular expression compiled on first use. JSON Schema `pattern`
/// semantics: searched, not anchored.
#[derive(Debug)]
pub struct Pattern {
    source: &'static str,
    compiled: OnceLock<Option<regex::Regex>>,
}

impl Pattern {
    /// A pattern from its source text.
    pub const fn new(source: &'static str) -> Self {
        Self {
            source,
            compiled: OnceLock::new(),
        }
    }

    /// The source text, as advertised in the schema.
    pub const fn source(&self) -> &'static str {
        self.source
    }

    /// Compiles the pattern; `false` if it is not a valid regex.
    pub fn compiles(&self) -> bool {
        self.regex().is_some()
    }

    fn regex(&self) -> Option<&regex::Regex> {
        self.compiled
            .get_or_init(|| regex::Regex::new(self.source).ok())
            .as_ref()
    }

    /// Whether `s` matches. An invalid pattern matches nothing (fail closed);
    /// building the router reports it first.
    pub fn is_match(&self, s: &str) -> bool {
        self.regex().is_some_and(|r| r.is_match(s))
    }
}

/// Bounds of a string argument.
#[derive(Debug)]
pub struct StrSpec {
    /// Fewest characters.
    pub min_len: Option<usize>,
    /// Most characters.
    pub max_len: Option<usize>,
    /// A regex the string must match.
    pub pattern: Option<Pattern>,
    /// A named character set.
    pub charset: Option<Charset>,
    /// Value when absent.
    pub default: Option<&'static str>,
    /// Description.
    pub doc: Doc,
}

impl StrSpec {
    /// The patterns this spec uses, for checks when the router is built.
    pub fn pattern(&self) -> Option<&Pattern> {
        self.pattern.as_ref()
    }

    fn check_str(&self, s: &str, name: &'static str) -> Result<(), ArgError> {
        use ArgErrorCode as C;
        if self.min_len.is_some() || self.max_len.is_some() {
            // Count at most max_len + 1 characters: a huge string costs no more.
            let limit = self.max_len.map_or(usize::MAX, |m| m.saturating_add(1));
            let n = s.chars().take(limit).count();
            if let Some(m) = self.max_len
                && n > m
            {
                return Err(ArgError::new(C::TooLong, name, Some(Bound::Count(m))));
            }
            if let Some(m) = self.min_len
                && n < m
            {
                return Err(ArgError::new(C::TooShort, name, Some(Bound::Count(m))));
            }
        }
        if let Some(cs) = self.charset
            && !s.chars().all(|c| cs.contains(c))
        {
            return Err(ArgError::new(
                C::CharsetMismatch,
                name,
                Some(Bound::Text(cs.name())),
            ));
        }
        if let Some(p) = &self.pattern
            && !p.is_match(s)
        {
            return Err(ArgError::new(
                C::PatternMismatch,
                name,
                Some(Bound::Text(p.source)),
            ));
        }
        Ok(())
    }
}

impl Arg for String {
    type Spec = StrSpec;
    fn parse(value: &Value, spec: &StrSpec, name: &'static str) -> Result<Self, ArgError> {
        let Value::String(s) = value else {
            return Err(ArgError::wrong_type(name, "string"));
        };
        spec.check_str(s, name)?;
        Ok(s.clone())
    }
    fn check(&self, spec: &StrSpec, name: &'static str) -> Result<(), ArgError> {
        spec.check_str(self, name)
    }
    fn schema(spec: &StrSpec) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), Value::from("string"));
        if let Some(v) = spec.min_len {
            m.insert("minLength".into(), Value::from(v));
        }
        if let Some(v) = spec.max_len {
            m.insert("maxLength".into(), Value::from(v));
        }
        match (spec.charset, &spec.pattern) {
            (Some(cs), Some(p)) => {
                m.insert("pattern".into(), Value::from(p.source));
                m.insert("allOf".into(), json!([{ "pattern": cs.pattern() }]));
            }
            (Some(cs), None) => {
                m.insert("pattern".into(), Value::from(cs.pattern()));
            }
            (None, Some(p)) => {
                m.insert("pattern".into(), Value::from(p.source));
            }
            (None, None) => {}
        }
        if let Some(d) = spec.default {
            m.insert("default".into(), Value::from(d));
        }
        spec.doc.apply(&mut m);
        m
    }
    fn absent(spec: &StrSpec, name: &'static str) -> Option<Result<Self, ArgError>> {
        spec.default
            .map(|d| spec.check_str(d, name).map(|()| d.to_owned()))
    }
    fn self_test(spec: &StrSpec) -> Result<(), &'static str> {
        if spec.pattern.as_ref().is_some_and(|p| !p.compiles()) {
            return Err("its pattern is not a valid regular expression");
        }
        match Self::absent(spec, "default") {
            Some(Err(_)) => Err("its default violates its own bounds"),
            _ => Ok(()),
        }
    }
}

/// Bounds of an array argument: an item ceiling and the items' own spec.
#[derive(Debug)]
pub struct VecSpec<S: 'static> {
    /// Most items.
    pub max_items: usize,
    /// The spec every item is checked against.
    pub item: S,
    /// Description.
    pub doc: Doc,
}

impl<T: Arg> Arg for Vec<T> {
    type Spec = VecSpec<T::Spec>;
    fn parse(value: &Value, spec: &Self::Spec, name: &'static str) -> Result<Self, ArgError> {
        let Value::Array(items) = value else {
            return Err(ArgError::wrong_type(name, "array"));
        };
        if items.len() > spec.max_items {
            return Err(ArgError::new(
                ArgErrorCode::TooManyItems,
                name,
                Some(Bound::Count(spec.max_items)),
            ));
        }
        items
            .iter()
            .map(|v| T::parse(v, &spec.item, name))
            .collect()
    }
    fn check(&self, spec: &Self::Spec, name: &'static str) -> Result<(), ArgError> {
        if self.len() > spec.max_items {
            return Err(ArgError::new(
                ArgErrorCode::TooManyItems,
                name,
                Some(Bound::Count(spec.max_items)),
            ));
        }
        self.iter().try_for_each(|v| v.check(&spec.item, name))
    }
    fn schema(spec: &Self::Spec) -> Map<String, Value> {
        let mut item = T::schema(&spec.item);
        // The item's description is the array's; units stay on the item.
        item.remove("description");
        let mut m = Map::new();
        m.insert("type".into(), Value::from("array"));
        m.insert("maxItems".into(), Value::from(spec.max_items));
        m.insert("items".into(), Value::Object(item));
        spec.doc.apply(&mut m);
        m
    }
    fn absent(_: &Self::Spec, _: &'static str) -> Option<Result<Self, ArgError>> {
        None
    }
    fn self_test(spec: &Self::Spec) -> Result<(), &'static str> {
        T::self_test(&spec.item)
    }
}

/// An optional argument: omitted means `None` (or `Some(default)` when the
/// inner spec declares one). `null` is a wrong type, as in the schema.
impl<T: Arg> Arg for Option<T> {
    type Spec = T::Spec;
    fn parse(value: &Value, spec: &T::Spec, name: &'static str) -> Result<Self, ArgError> {
        T::parse(value, spec, name).map(Some)
    }
    fn check(&self, spec: &T::Spec, name: &'static str) -> Result<(), ArgError> {
        self.as_ref().map_or(Ok(()), |v| v.check(spec, name))
    }
    fn schema(spec: &T::Spec) -> Map<String, Value> {
        T::schema(spec)
    }
    fn absent(spec: &T::Spec, name: &'static str) -> Option<Result<Self, ArgError>> {
        Some(T::absent(spec, name).transpose())
    }
    fn self_test(spec: &T::Spec) -> Result<(), &'static str> {
        T::self_test(spec)
    }
}

/// A unit-variant enum accepted as one of fixed tokens. Derive it with
/// `#[derive(ToolEnum)]`; the tokens are the variant names in `snake_case`
/// unless renamed with `#[tool_enum(rename = "…")]`.
pub trait ToolEnum: Sized + Copy + 'static {
    /// Every accepted token, in declaration order.
    const TOKENS: &'static [&'static str];
    /// The enum's own documentation (its doc comment, with the derive).
    const DOC: Option<&'static str> = None;
    /// Each token's documentation (its variant's doc comment, with the
    /// derive), in the order of [`ToolEnum::TOKENS`].
    const TOKEN_DOCS: &'static [Option<&'static str>] = &[];
    /// The variant for a token.
    fn from_token(token: &str) -> Option<Self>;
    /// The token of a variant.
    fn token(self) -> &'static str;
}

/// Description and default of an enum argument.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnumSpec {
    /// Token used when absent.
    pub default: Option<&'static str>,
    /// Description.
    pub doc: Doc,
}

/// `Arg::parse` for a [`ToolEnum`] (used by the derive).
pub fn enum_parse<E: ToolEnum>(value: &Value, name: &'static str) -> Result<E, ArgError> {
    let Value::String(s) = value else {
        return Err(ArgError::wrong_type(name, "string"));
    };
    E::from_token(s).ok_or(ArgError::new(
        ArgErrorCode::NotAllowed,
        name,
        Some(Bound::Tokens(E::TOKENS)),
    ))
}

/// `Arg::schema` for a [`ToolEnum`] (used by the derive).
///
/// The description is the argument's own (`#[bounded(description = ..)]`),
/// else the enum's doc comment, followed by each documented token and its
/// variant's doc comment: `Values: \`a\`: …; \`b\`: ….`
pub fn enum_schema<E: ToolEnum>(spec: &EnumSpec) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("string"));
    m.insert("enum".into(), Value::from(E::TOKENS.to_vec()));
    if let Some(d) = spec.default {
        m.insert("default".into(), Value::from(d));
    }
    spec.doc.apply(&mut m);
    let values: Vec<String> = E::TOKENS
        .iter()
        .zip(E::TOKEN_DOCS)
        .filter_map(|(t, d)| d.map(|d| format!("`{t}`: {}", d.trim_end_matches('.'))))
        .collect();
    let base = match m.get("description") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => E::DOC.map(str::to_owned),
    };
    let text = match (base, values.is_empty()) {
        (Some(b), true) => Some(b),
        (Some(b), false) => Some(format!("{b} Values: {}.", values.join("; "))),
        (None, false) => Some(format!("Values: {}.", values.join("; "))),
        (None, true) => None,
    };
    if let Some(t) = text {
        m.insert("description".into(), Value::from(t));
    }
    m
}

/// `Arg::absent` for a [`ToolEnum`] (used by the derive).
pub fn enum_absent<E: ToolEnum>(
    spec: &EnumSpec,
    name: &'static str,
) -> Option<Result<E, ArgError>> {
    spec.default.map(|d| enum_parse::<E>(&Value::from(d), name))
}

/// Reads one argument from the object: parse if present, else its absent
/// value, else a missing-argument error.
#[inline]
pub fn take<T: Arg>(
    slot: Option<&Value>,
    spec: &T::Spec,
    name: &'static str,
) -> Result<T, ArgError> {
    match slot {
        Some(v) => T::parse(v, spec, name),
        None => T::absent(spec, name).unwrap_or(Err(ArgError::missing(name))),
    }
}

/// Whether an argument of this kind must be present.
pub fn is_required<T: Arg>(spec: &T::Spec) -> bool {
    T::absent(spec, "").is_none()
}

/// An argument struct: the whole argument object of a tool, declared as one
/// struct with `#[derive(HardenedArgs)]` and taken as `#[args] a: T`.
pub trait ToolArgs: Sized {
    /// Strictly parses the argument object (unknown keys refused).
    fn parse(object: &serde_json::Map<String, Value>) -> Result<Self, ArgError>;
    /// Revalidates every field against its declared bounds.
    fn validate(&self) -> Result<(), ArgError>;
    /// Adds every field to an input schema.
    fn schema(into: crate::schema::InputSchema) -> crate::schema::InputSchema;
    /// Collects the startup faults of the field specs.
    fn spec_faults(faults: &mut Vec<(&'static str, &'static str)>);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn f32_bounds_hold_after_rounding() {
        let open = FloatSpec {
            min: None,
            max: None,
            exclusive_min: None,
            exclusive_max: None,
            default: None,
            doc: Doc::NONE,
        };
        let spec = FloatSpec {
            exclusive_min: Some(0.0),
            exclusive_max: Some(1.0),
            ..open
        };
        let code = |v: Value| <f32 as Arg>::parse(&v, &spec, "x").map_err(|e| e.code());
        // 1e-50 is above 0 in f64 but rounds to 0.0 in f32: on the bound.
        assert_eq!(
            code(serde_json::json!(1e-50)),
            Err(ArgErrorCode::NotAboveExclusiveMinimum)
        );
        // Just below 1 in f64, 1.0 in f32: on the other bound.
        assert_eq!(
            code(serde_json::json!(0.999_999_999_9)),
            Err(ArgErrorCode::NotBelowExclusiveMaximum)
        );
        assert_eq!(code(serde_json::json!(1e-30)), Ok(1e-30_f32));
        // Handler-side revalidation refuses the bound itself.
        assert!(0.0_f32.check(&spec, "x").is_err());
        assert!(0.5_f32.check(&spec, "x").is_ok());
        // A finite f64 beyond f32's range becomes infinite: refused.
        assert_eq!(
            <f32 as Arg>::parse(&serde_json::json!(1e39), &open, "x").map_err(|e| e.code()),
            Err(ArgErrorCode::NotFinite)
        );
    }

    const U: IntSpec = IntSpec {
        min: Some(8),
        max: Some(200),
        exclusive_min: None,
        exclusive_max: None,
        default: None,
        doc: Doc::NONE,
    };

    #[test]
    fn integers_accept_integral_floats_and_refuse_others() {
        assert_eq!(u32::parse(&json!(8), &U, "n"), Ok(8));
        assert_eq!(u32::parse(&json!(9.0), &U, "n"), Ok(9));
        for bad in [json!(8.5), json!("9"), json!(true), json!(null), json!([9])] {
            assert_eq!(
                u32::parse(&bad, &U, "n").unwrap_err().code(),
                ArgErrorCode::WrongType
            );
        }
        assert_eq!(
            u32::parse(&json!(1e300), &U, "n").unwrap_err().code(),
            ArgErrorCode::AboveMaximum
        );
        assert_eq!(
            u32::parse(&json!(-1), &U, "n").unwrap_err().code(),
            ArgErrorCode::BelowMinimum
        );
    }

    #[test]
    fn integer_bounds_are_json_numbers_up_to_u64_max() {
        let s = IntSpec {
            min: Some(i128::from(i64::MIN)),
            max: Some(i128::from(u64::MAX)),
            exclusive_min: None,
            exclusive_max: None,
            default: Some(i128::from(u64::MAX)),
            doc: Doc::NONE,
        };
        let m = s.schema();
        assert_eq!(m["maximum"], json!(u64::MAX));
        assert_eq!(m["maximum"].as_u64(), Some(u64::MAX));
        assert_eq!(m["minimum"].as_i64(), Some(i64::MIN));
        assert!(m["default"].is_number());
        // A default at `u64::MAX` parses back (it was a string before).
        assert_eq!(u64::absent(&s, "n"), Some(Ok(u64::MAX)));
        assert!(Bound::Int(i128::MAX).to_json().is_number());
        assert!(Bound::Int(i128::MIN).to_json().is_number());
    }

    #[test]
    fn float_revalidation_refuses_non_finite() {
        let s = FloatSpec {
            min: Some(0.0),
            max: Some(1.0),
            exclusive_min: None,
            exclusive_max: None,
            default: None,
            doc: Doc::NONE,
        };
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(
                v.check(&s, "x").unwrap_err().code(),
                ArgErrorCode::NotFinite
            );
            assert_eq!(
                (v as f32).check(&s, "x").unwrap_err().code(),
                ArgErrorCode::NotFinite
            );
        }
        assert_eq!(0.1f32.check(&s, "x"), Ok(()));
    }

    #[test]
    fn string_length_counts_characters_and_stops_early() {
        let s = StrSpec {
            min_len: Some(1),
            max_len: Some(3),
            pattern: None,
            charset: Some(Charset::Text),
            default: None,
            doc: Doc::NONE,
        };
        assert!(String::parse(&json!("ééé"), &s, "s").is_ok());
        assert_eq!(
            String::parse(&json!("éééé"), &s, "s").unwrap_err().code(),
            ArgErrorCode::TooLong
        );
        assert_eq!(
            String::parse(&json!("a\u{1b}"), &s, "s")
                .unwrap_err()
                .code(),
            ArgErrorCode::CharsetMismatch
        );
    }
}
