#![allow(clippy::unwrap_used)]
use serde_json::json;

use super::kind::{Arg, Doc};
use super::number::{FloatSpec, IntSpec};
use super::text::{Charset, StrSpec};
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
