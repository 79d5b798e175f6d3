#![allow(clippy::unwrap_used)]
use serde_json::json;

use super::kind::{Arg, Doc};
use super::number::{FloatSpec, IntSpec};
use super::text::{Charset, StrSpec};
use super::*;

/// A float spec with no bound: the base the tests add their bounds to.
const UNBOUNDED_FLOAT: FloatSpec = FloatSpec {
    min: None,
    max: None,
    exclusive_min: None,
    exclusive_max: None,
    default: None,
    doc: Doc::NONE,
};

#[test]
fn f32_bounds_hold_after_rounding() {
    let open = UNBOUNDED_FLOAT;
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

/// `text` as the JSON value a request would carry.
fn num(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// Every integer type over its whole range, at both edges: the edges in
/// every form that is exact, one beyond them refused, and never a rounded
/// value.
macro_rules! integer_edges {
    ($($t:ty),*) => {$({
        let spec = IntSpec {
            min: Some(<$t>::MIN as i128),
            max: Some(<$t>::MAX as i128),
            exclusive_min: None,
            exclusive_max: None,
            default: None,
            doc: Doc::NONE,
        };
        let parse = |text: &str| <$t as Arg>::parse(&num(text), &spec, "n").map_err(|e| e.code());
        let (lo, hi) = (<$t>::MIN as i128, <$t>::MAX as i128);
        let ty = stringify!($t);
        // The edges, written as plain integers: exact.
        assert_eq!(parse(&lo.to_string()), Ok(<$t>::MIN), "{ty}");
        assert_eq!(parse(&hi.to_string()), Ok(<$t>::MAX), "{ty}");
        // One beyond: refused (out of range, or not exactly readable
        // beyond the 64-bit range), never the edge.
        for beyond in [lo - 1, hi + 1] {
            let r = parse(&beyond.to_string());
            assert!(
                matches!(
                    r,
                    Err(ArgErrorCode::BelowMinimum
                        | ArgErrorCode::AboveMaximum
                        | ArgErrorCode::InexactInteger)
                ),
                "{ty} {beyond}: {r:?}"
            );
        }
        // More than 19 digits, both signs.
        assert_eq!(parse("100000000000000000000"), Err(ArgErrorCode::AboveMaximum), "{ty}");
        assert_eq!(parse("-100000000000000000000"), Err(ArgErrorCode::BelowMinimum), "{ty}");
        assert_eq!(parse("18446744073709551616"), Err(if hi > i128::from(i64::MAX) {
            ArgErrorCode::InexactInteger
        } else {
            ArgErrorCode::AboveMaximum
        }), "{ty}");
        // Float forms and exponents of the edges: exact below 2^50, refused
        // (not rounded) at or beyond it.
        let exact = hi < (1i128 << 50);
        for text in [format!("{hi}.0"), format!("{hi}e0"), format!("{hi}0e-1")] {
            let want = if exact { Ok(<$t>::MAX) } else { Err(ArgErrorCode::InexactInteger) };
            assert_eq!(parse(&text), want, "{ty} {text}");
        }
        if lo < 0 {
            let want = if -lo < (1i128 << 50) { Ok(<$t>::MIN) } else { Err(ArgErrorCode::InexactInteger) };
            assert_eq!(parse(&format!("{lo}.0")), want, "{ty}");
        } else {
            assert_eq!(parse("-1"), Err(ArgErrorCode::BelowMinimum), "{ty}");
            assert_eq!(parse("-1.0"), Err(ArgErrorCode::BelowMinimum), "{ty}");
            assert_eq!(parse("-1e0"), Err(ArgErrorCode::BelowMinimum), "{ty}");
        }
        if exact {
            assert_eq!(parse(&format!("{}.0", hi + 1)), Err(ArgErrorCode::AboveMaximum), "{ty}");
        }
        // Zero in every form, `-0` included; integral floats as the schema
        // allows; a fraction is a wrong type.
        for zero in ["0", "-0", "0.0", "-0.0", "0e5", "-0E-3"] {
            assert_eq!(parse(zero), Ok(0), "{ty} {zero}");
        }
        assert_eq!(parse("1.0"), Ok(1), "{ty}");
        assert_eq!(parse("1e0"), Ok(1), "{ty}");
        assert_eq!(parse("1.5"), Err(ArgErrorCode::WrongType), "{ty}");
        assert_eq!(parse("1e-1"), Err(ArgErrorCode::WrongType), "{ty}");
        // Revalidation of typed values at the edges is exact too.
        assert_eq!(<$t>::MIN.check(&spec, "n"), Ok(()), "{ty}");
        assert_eq!(<$t>::MAX.check(&spec, "n"), Ok(()), "{ty}");
        let inner = IntSpec { min: Some(lo + 1), max: Some(hi - 1), ..spec };
        assert_eq!(<$t>::MIN.check(&inner, "n").map_err(|e| e.code()), Err(ArgErrorCode::BelowMinimum), "{ty}");
        assert_eq!(<$t>::MAX.check(&inner, "n").map_err(|e| e.code()), Err(ArgErrorCode::AboveMaximum), "{ty}");
    })*};
}

#[test]
fn integers_at_the_edges_of_every_type_are_exact_or_refused() {
    integer_edges!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);
}

#[test]
fn sixty_four_bit_integers_are_never_rounded() {
    let full = |min: i128, max: i128| IntSpec {
        min: Some(min),
        max: Some(max),
        exclusive_min: None,
        exclusive_max: None,
        default: None,
        doc: Doc::NONE,
    };
    let i = full(i64::MIN.into(), i64::MAX.into());
    let u = full(0, u64::MAX.into());
    let pi = |t: &str| i64::parse(&num(t), &i, "n").map_err(|e| e.code());
    let pu = |t: &str| u64::parse(&num(t), &u, "n").map_err(|e| e.code());
    // The case: one below i64::MIN read as the nearest f64, which
    // is i64::MIN itself; refused, not accepted as i64::MIN.
    assert_eq!(
        pi("-9223372036854775809"),
        Err(ArgErrorCode::InexactInteger)
    );
    assert_eq!(pi("-9223372036854775808"), Ok(i64::MIN));
    assert_eq!(
        pu("18446744073709551616"),
        Err(ArgErrorCode::InexactInteger)
    );
    // Beyond f64's precision: exact when written as an integer, refused in
    // a float form (it would read as 9007199254740992).
    assert_eq!(pi("9007199254740993"), Ok(9_007_199_254_740_993));
    assert_eq!(pu("9007199254740993"), Ok(9_007_199_254_740_993));
    assert_eq!(pi("-9007199254740993"), Ok(-9_007_199_254_740_993));
    for t in [
        "9007199254740993.0",
        "9.007199254740993e15",
        "9007199254740992.0",
    ] {
        assert_eq!(pi(t), Err(ArgErrorCode::InexactInteger), "{t}");
        assert_eq!(pu(t), Err(ArgErrorCode::InexactInteger), "{t}");
    }
    assert_eq!(pi("-9007199254740993.0"), Err(ArgErrorCode::InexactInteger));
    // serde_json reads this one as 9007199254740990: refused, not rounded.
    assert_eq!(pu("9007199254740991.0"), Err(ArgErrorCode::InexactInteger));
    // Below 2^50 a float form is exact; at 2^50 it is refused.
    assert_eq!(pu("1125899906842623.0"), Ok(1_125_899_906_842_623));
    assert_eq!(pi("-1125899906842623.0"), Ok(-1_125_899_906_842_623));
    assert_eq!(pu("1.125899906842623e15"), Ok(1_125_899_906_842_623));
    assert_eq!(pu("1125899906842624.0"), Err(ArgErrorCode::InexactInteger));
    assert_eq!(pu("1125899906842624"), Ok(1_125_899_906_842_624));
    // `1e19` is within u64 but only its f64 is known: refused, not rounded.
    assert_eq!(pu("1e19"), Err(ArgErrorCode::InexactInteger));
    assert_eq!(pu("10000000000000000000"), Ok(10_000_000_000_000_000_000));
    // Surely beyond the range: the range's own code, with the bound.
    assert_eq!(pu("1.9e19"), Err(ArgErrorCode::AboveMaximum));
    assert_eq!(pi("-1e19"), Err(ArgErrorCode::BelowMinimum));
    let small = full(8, 200);
    let e = u64::parse(&num("1e300"), &small, "n").unwrap_err();
    assert_eq!(e.code(), ArgErrorCode::AboveMaximum);
    assert_eq!(e.bound(), Some(Bound::Int(200)));
    let e = i64::parse(&num("-1e20"), &small, "n").unwrap_err();
    assert_eq!(
        (e.code(), e.bound()),
        (ArgErrorCode::BelowMinimum, Some(Bound::Int(8)))
    );
    // Exclusive bounds too.
    let excl = IntSpec {
        min: None,
        max: None,
        exclusive_min: Some(0),
        exclusive_max: Some(10),
        ..small
    };
    assert_eq!(
        u64::parse(&num("1e16"), &excl, "n").unwrap_err().code(),
        ArgErrorCode::NotBelowExclusiveMaximum
    );
    // The error never carries the value.
    let text = ArgError::new(ArgErrorCode::InexactInteger, "n", None).to_string();
    assert!(!text.contains("9007"), "{text}");
}

/// The two-comparison path of a float bounded on both sides gives the same
/// answer as finiteness then every bound, whatever the bounds (inclusive,
/// exclusive, one-sided, infinite in a hand-built spec).
#[test]
fn float_checks_agree_with_finiteness_then_every_bound() {
    let none = UNBOUNDED_FLOAT;
    let specs = [
        FloatSpec {
            min: Some(0.0),
            max: Some(0.5),
            ..none
        },
        FloatSpec {
            exclusive_min: Some(0.0),
            max: Some(1.0),
            ..none
        },
        FloatSpec {
            min: Some(-1.0),
            exclusive_max: Some(1.0),
            ..none
        },
        FloatSpec {
            exclusive_min: Some(-1.0),
            exclusive_max: Some(1.0),
            ..none
        },
        FloatSpec {
            min: Some(f64::NEG_INFINITY),
            max: Some(f64::INFINITY),
            ..none
        },
        FloatSpec {
            min: Some(0.0),
            ..none
        },
        none,
    ];
    let values = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -1.0,
        -0.0,
        0.0,
        0.25,
        0.5,
        0.5000001,
        1.0,
        f64::MAX,
        f64::MIN_POSITIVE,
    ];
    for spec in &specs {
        for &v in &values {
            let reference = if !v.is_finite() {
                Err(ArgErrorCode::NotFinite)
            } else if spec.min.is_some_and(|m| v < m) {
                Err(ArgErrorCode::BelowMinimum)
            } else if spec.exclusive_min.is_some_and(|m| v <= m) {
                Err(ArgErrorCode::NotAboveExclusiveMinimum)
            } else if spec.max.is_some_and(|m| v > m) {
                Err(ArgErrorCode::AboveMaximum)
            } else if spec.exclusive_max.is_some_and(|m| v >= m) {
                Err(ArgErrorCode::NotBelowExclusiveMaximum)
            } else {
                Ok(())
            };
            assert_eq!(
                v.check(spec, "x").map_err(|e| e.code()),
                reference,
                "{v} in {spec:?}"
            );
        }
    }
}

#[test]
fn an_array_of_arrays_checks_both_levels_and_its_own_spec() {
    use super::container::VecSpec;
    let cell = IntSpec {
        min: Some(0),
        max: Some(9),
        exclusive_min: None,
        exclusive_max: None,
        default: None,
        doc: Doc::NONE,
    };
    let rows = |min_items, rectangular| VecSpec {
        min_items,
        max_items: 3,
        rectangular,
        max_total: None,
        item: VecSpec {
            min_items: 1,
            max_items: 2,
            rectangular: false,
            max_total: None,
            item: cell,
            doc: Doc::NONE,
        },
        doc: Doc::NONE,
    };
    let spec = rows(1, true);
    assert!(<Vec<Vec<u8>>>::self_test(&spec).is_ok());
    assert_eq!(
        <Vec<Vec<u8>>>::self_test(&rows(4, true)),
        Err("its min_items is above its max_items")
    );
    let parse = |v: Value| <Vec<Vec<u8>>>::parse(&v, &spec, "m").map_err(|e| e.code());
    assert_eq!(
        parse(json!([[1, 2], [3, 4]])),
        Ok(vec![vec![1, 2], vec![3, 4]])
    );
    assert_eq!(parse(json!([])), Err(ArgErrorCode::TooFewItems));
    assert_eq!(
        parse(json!([[1], [1, 2]])),
        Err(ArgErrorCode::NotRectangular)
    );
    assert_eq!(parse(json!([[]])), Err(ArgErrorCode::TooFewItems));
    assert_eq!(parse(json!([[1, 2, 3]])), Err(ArgErrorCode::TooManyItems));
    assert_eq!(parse(json!([[10]])), Err(ArgErrorCode::AboveMaximum));
    // Not rectangular: ragged rows are fine.
    let ragged = rows(0, false);
    assert!(<Vec<Vec<u8>>>::parse(&json!([[1], [1, 2]]), &ragged, "m").is_ok());
    assert!(<Vec<Vec<u8>>>::parse(&json!([]), &ragged, "m").is_ok());
    let schema = <Vec<Vec<u8>>>::schema(&spec);
    assert_eq!(schema["minItems"], 1);
    assert_eq!(schema["items"]["maxItems"], 2);
    assert!(ragged_schema_has_no_floor(&<Vec<Vec<u8>>>::schema(&ragged)));
    // A ceiling on the cells of all the rows, checked before any cell is
    // parsed (a bad cell beyond it is not reached) and on revalidation.
    let capped = VecSpec {
        max_total: Some(4),
        ..rows(0, false)
    };
    let parse = |v: Value| <Vec<Vec<u8>>>::parse(&v, &capped, "m").map_err(|e| e.code());
    assert!(parse(json!([[1, 2], [3, 4]])).is_ok());
    assert_eq!(
        parse(json!([[1, 2], [3, 4], [99]])),
        Err(ArgErrorCode::TooManyInTotal)
    );
    let five = vec![vec![1, 2], vec![3, 4], vec![5]];
    assert_eq!(
        five.check(&capped, "m").map_err(|e| e.code()),
        Err(ArgErrorCode::TooManyInTotal)
    );
    let said = <Vec<Vec<u8>>>::schema(&capped);
    assert_eq!(said["description"], "At most 4 items in all the rows.");
}

fn ragged_schema_has_no_floor(schema: &serde_json::Map<String, Value>) -> bool {
    schema.get("minItems").is_none() && schema.get("description").is_none()
}
