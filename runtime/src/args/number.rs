//! Integers and floats: one range spec, checked in the JSON value's own
//! precision and again in the parameter's type.

use serde_json::{Map, Value};

use super::error::{ArgError, ArgErrorCode, Bound};
use super::kind::{Arg, Doc};

/// A number a range is declared in: `i128` for every integer type (wide
/// enough for all of them, so no bound is rounded), `f64` for floats.
pub trait RangeValue: Copy + PartialOrd {
    /// The JSON Schema type of arguments with such bounds.
    const JSON_TYPE: &'static str;
    /// The bound, as reported in an error and written into the schema.
    fn bound(self) -> Bound;
}

impl RangeValue for i128 {
    const JSON_TYPE: &'static str = "integer";
    fn bound(self) -> Bound {
        Bound::Int(self)
    }
}

impl RangeValue for f64 {
    const JSON_TYPE: &'static str = "number";
    fn bound(self) -> Bound {
        Bound::Float(self)
    }
}

/// The refusal of a value outside a declared bound. Inlined, so that a
/// caller that only asks whether a check holds (the validator's first
/// pass) drops it altogether.
#[inline(always)]
fn out_of_range(code: ArgErrorCode, name: &'static str, bound: Bound) -> ArgError {
    ArgError::new(code, name, Some(bound))
}

/// The declared range of a numeric argument; exclusive bounds are kept as
/// declared. One spec for every numeric kind: [`IntSpec`] and
/// [`FloatSpec`] are its two instances.
#[derive(Debug, Clone, Copy)]
pub struct RangeSpec<N> {
    /// Inclusive minimum.
    pub min: Option<N>,
    /// Inclusive maximum.
    pub max: Option<N>,
    /// Exclusive minimum.
    pub exclusive_min: Option<N>,
    /// Exclusive maximum.
    pub exclusive_max: Option<N>,
    /// Value when absent.
    pub default: Option<N>,
    /// Description and units.
    pub doc: Doc,
}

/// The range of an integer argument (any integer type).
pub type IntSpec = RangeSpec<i128>;

/// The range of a float argument. Floats are always checked finite.
pub type FloatSpec = RangeSpec<f64>;

impl<N: RangeValue> RangeSpec<N> {
    /// Checks `v` against every bound, each bound first brought into `v`'s
    /// type by `into` (the identity, or the rounding to `f32`); an error
    /// names the bound as declared.
    #[inline(always)]
    fn check_in<T: PartialOrd>(
        &self,
        v: T,
        into: impl Fn(N) -> T,
        name: &'static str,
    ) -> Result<(), ArgError> {
        use ArgErrorCode as C;
        let fail = |code, m: N| Err(out_of_range(code, name, m.bound()));
        if let Some(m) = self.min
            && v < into(m)
        {
            return fail(C::BelowMinimum, m);
        }
        if let Some(m) = self.exclusive_min
            && v <= into(m)
        {
            return fail(C::NotAboveExclusiveMinimum, m);
        }
        if let Some(m) = self.max
            && v > into(m)
        {
            return fail(C::AboveMaximum, m);
        }
        if let Some(m) = self.exclusive_max
            && v >= into(m)
        {
            return fail(C::NotBelowExclusiveMaximum, m);
        }
        Ok(())
    }

    /// Checks `v` against every bound, in `N`.
    #[inline(always)]
    fn check_range(&self, v: N, name: &'static str) -> Result<(), ArgError> {
        self.check_in(v, |m| m, name)
    }

    pub(super) fn schema(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), Value::from(N::JSON_TYPE));
        for (key, v) in [
            ("minimum", self.min),
            ("maximum", self.max),
            ("exclusiveMinimum", self.exclusive_min),
            ("exclusiveMaximum", self.exclusive_max),
            ("default", self.default),
        ] {
            if let Some(v) = v {
                m.insert(key.into(), v.bound().to_json());
            }
        }
        self.doc.apply(&mut m);
        m
    }
}

/// Below 2^50 in magnitude, an integral `f64` read from JSON is exactly the
/// integer written, when an integer was written. serde_json reads a number
/// with a fraction or an exponent as an `f64` computed as
/// `significand as f64` times or divided by a power of ten: a relative error
/// of up to about 3·2^-53 (its default parsing is not correctly rounded).
/// Below 2^50 that is less than 1, so an integer read as an integral `f64`
/// is read exactly. At or beyond it a float form may be a different
/// integer: `9007199254740991.0` reads as `9007199254740990`, and
/// `-9223372036854775809` (beyond `i64`, read as an `f64`) as `i64::MIN`.
const EXACT_FLOAT_INTEGERS: f64 = 1_125_899_906_842_624.0;

/// The relative error allowed for a number JSON gave only as an `f64`
/// when deciding that it is surely beyond a bound: 2^-48, eight times
/// serde_json's parsing error and the rounding of the bound.
const APPROX_MARGIN: f64 = 3.552_713_678_800_501e-15;

/// An integer argument as JSON gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reading {
    /// The number written, exactly.
    Exact(i128),
    /// Only an `f64` near the number written (a float form at or beyond
    /// ±2^50, or an integer beyond the 64-bit range): never used as a
    /// value.
    Approx(f64),
}

/// Reads a JSON number as an integer, accepting integral floats (`5.0`,
/// `1e3`) where they are exact.
fn json_integer(value: &Value, name: &'static str) -> Result<Reading, ArgError> {
    let Value::Number(n) = value else {
        return Err(ArgError::wrong_type(name, "integer"));
    };
    if let Some(i) = n.as_i64() {
        return Ok(Reading::Exact(i128::from(i)));
    }
    if let Some(u) = n.as_u64() {
        return Ok(Reading::Exact(i128::from(u)));
    }
    match n.as_f64() {
        Some(f) if !f.is_finite() => Err(ArgError::new(ArgErrorCode::NotFinite, name, None)),
        Some(f) if f.fract() != 0.0 => Err(ArgError::wrong_type(name, "integer")),
        // Exact (see `EXACT_FLOAT_INTEGERS`), and so is the cast.
        Some(f) if f.abs() < EXACT_FLOAT_INTEGERS => Ok(Reading::Exact(f as i128)),
        Some(f) => Ok(Reading::Approx(f)),
        None => Err(ArgError::wrong_type(name, "integer")),
    }
}

/// Whether the number read as `f` is surely above `b`: beyond it by more
/// than [`APPROX_MARGIN`] of their size, and by more than 1.
fn surely_above(f: f64, b: i128) -> bool {
    let b = b as f64;
    f > b + b.abs().max(f.abs()) * APPROX_MARGIN + 1.0
}

/// Whether the number read as `f` is surely below `b`.
fn surely_below(f: f64, b: i128) -> bool {
    let b = b as f64;
    f < b - b.abs().max(f.abs()) * APPROX_MARGIN - 1.0
}

impl IntSpec {
    /// The refusal of an integer that JSON gave only approximately (`f`),
    /// for a type of range `lo..=hi`: the bound it is surely beyond, else
    /// the type's range it is surely beyond, else "not exact". It is never
    /// rounded into a value.
    fn refuse_approx(&self, f: f64, lo: i128, hi: i128, name: &'static str) -> ArgError {
        use ArgErrorCode as C;
        let beyond = [
            (self.max, C::AboveMaximum, true),
            (self.exclusive_max, C::NotBelowExclusiveMaximum, true),
            (self.min, C::BelowMinimum, false),
            (self.exclusive_min, C::NotAboveExclusiveMinimum, false),
        ];
        for (bound, code, upper) in beyond {
            if let Some(b) = bound
                && (if upper {
                    surely_above(f, b)
                } else {
                    surely_below(f, b)
                })
            {
                return ArgError::new(code, name, Some(b.bound()));
            }
        }
        if surely_above(f, hi) {
            ArgError::new(C::AboveMaximum, name, None)
        } else if surely_below(f, lo) {
            ArgError::new(C::BelowMinimum, name, None)
        } else {
            ArgError::new(C::InexactInteger, name, None)
        }
    }
}

macro_rules! int_arg {
    ($($t:ty),*) => {$(
        impl Arg for $t {
            type Spec = IntSpec;
            type Seen<'a> = &'a Self;
            fn seen(&self) -> &Self {
                self
            }
            fn parse(value: &Value, spec: &IntSpec, name: &'static str) -> Result<Self, ArgError> {
                let v = match json_integer(value, name)? {
                    Reading::Exact(v) => v,
                    Reading::Approx(f) => {
                        return Err(spec.refuse_approx(
                            f,
                            <$t>::MIN as i128,
                            <$t>::MAX as i128,
                            name,
                        ));
                    }
                };
                spec.check_range(v, name)?;
                // The macro keeps declared bounds inside the type's range, so
                // this only fails for a spec built by hand.
                <$t>::try_from(v).map_err(|_| {
                    let code = if v < 0 { ArgErrorCode::BelowMinimum } else { ArgErrorCode::AboveMaximum };
                    ArgError::new(code, name, None)
                })
            }
            #[inline(always)]
            fn check(&self, spec: &IntSpec, name: &'static str) -> Result<(), ArgError> {
                spec.check_range(*self as i128, name)
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

impl FloatSpec {
    /// Whether `v` is surely within a range bounded on both sides by finite
    /// bounds: then it is finite too (NaN fails every comparison, ±∞ is
    /// beyond a finite bound), so two comparisons decide. `false` says
    /// nothing: the full check decides.
    #[inline(always)]
    fn within_finite(&self, v: f64) -> bool {
        let above = match (self.min, self.exclusive_min) {
            (Some(m), None) => m.is_finite() && v >= m,
            (None, Some(m)) => m.is_finite() && v > m,
            _ => false,
        };
        let below = match (self.max, self.exclusive_max) {
            (Some(m), None) => m.is_finite() && v <= m,
            (None, Some(m)) => m.is_finite() && v < m,
            _ => false,
        };
        above && below
    }

    /// Finite, then within the range, in `f64`.
    #[inline(always)]
    fn check_f64(&self, v: f64, name: &'static str) -> Result<(), ArgError> {
        if self.within_finite(v) {
            return Ok(());
        }
        if !v.is_finite() {
            return Err(ArgError::new(ArgErrorCode::NotFinite, name, None));
        }
        self.check_range(v, name)
    }

    fn parse_f64(&self, value: &Value, name: &'static str) -> Result<f64, ArgError> {
        let Value::Number(n) = value else {
            return Err(ArgError::wrong_type(name, "number"));
        };
        let v = n.as_f64().ok_or(ArgError::wrong_type(name, "number"))?;
        self.check_f64(v, name)?;
        Ok(v)
    }
}

impl Arg for f64 {
    type Spec = FloatSpec;
    type Seen<'a> = &'a Self;
    fn seen(&self) -> &Self {
        self
    }
    fn parse(value: &Value, spec: &FloatSpec, name: &'static str) -> Result<Self, ArgError> {
        spec.parse_f64(value, name)
    }
    #[inline(always)]
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
    type Seen<'a> = &'a Self;
    fn seen(&self) -> &Self {
        self
    }
    /// Checked in `f64`, then again after the conversion: rounding to `f32`
    /// can land a value on an exclusive bound (`1e-50` becomes `0.0`) or
    /// overflow to infinity.
    fn parse(value: &Value, spec: &FloatSpec, name: &'static str) -> Result<Self, ArgError> {
        let v = spec.parse_f64(value, name)? as f32;
        v.check(spec, name)?;
        Ok(v)
    }
    #[inline(always)]
    fn check(&self, spec: &FloatSpec, name: &'static str) -> Result<(), ArgError> {
        if !self.is_finite() {
            return Err(ArgError::new(ArgErrorCode::NotFinite, name, None));
        }
        // The bounds as `f32` (rounding is monotonic, so a value within an
        // inclusive bound in `f64` stays within it).
        spec.check_in(*self, |m| m as f32, name)
    }
    fn schema(spec: &FloatSpec) -> Map<String, Value> {
        spec.schema()
    }
    fn absent(spec: &FloatSpec, name: &'static str) -> Option<Result<Self, ArgError>> {
        spec.default
            .map(|d| spec.check_f64(d, name).map(|()| d as f32))
    }
}
