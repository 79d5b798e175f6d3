//! Direct calls that bypass the protocol are still checked: the generated
//! revalidation runs inside the tool method itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hardened_mcp::ToolError;
use hardened_mcp::args::ArgErrorCode;
use hardened_mcp::{CallerId, ToolContext};
use hardened_mcp_tests::macros_fixture::{Boundary, Solver};

fn ctx() -> ToolContext {
    ToolContext::detached(CallerId::local())
}

fn code(r: Result<impl Sized, ToolError>) -> ArgErrorCode {
    match r {
        Err(ToolError::InvalidArguments(e)) => e.code(),
        Err(other) => panic!("not an argument error: {other:?}"),
        Ok(_) => panic!("accepted"),
    }
}

#[allow(clippy::too_many_arguments)]
async fn heat(
    s: &Solver,
    cells: u32,
    steps: u64,
    length: f64,
    courant: f64,
    label: &str,
    weights: Option<Vec<f64>>,
    offset: Option<i32>,
) -> Result<hardened_mcp::Output<hardened_mcp_tests::macros_fixture::Estimate>, ToolError> {
    s.heat_estimate(
        ctx(),
        cells,
        steps,
        length,
        courant,
        Boundary::Fixed,
        label.to_owned(),
        weights,
        false,
        offset,
    )
    .await
}

#[tokio::test]
async fn direct_calls_are_revalidated() {
    let s = Solver::new();
    assert!(heat(&s, 100, 10, 1.0, 0.1, "ok", None, None).await.is_ok());
    assert_eq!(
        code(heat(&s, 4, 10, 1.0, 0.1, "ok", None, None).await),
        ArgErrorCode::BelowMinimum
    );
    assert_eq!(
        code(heat(&s, 100, 0, 1.0, 0.1, "ok", None, None).await),
        ArgErrorCode::BelowMinimum
    );
    assert_eq!(
        code(heat(&s, 100, 10, f64::NAN, 0.1, "ok", None, None).await),
        ArgErrorCode::NotFinite
    );
    assert_eq!(
        code(heat(&s, 100, 10, f64::INFINITY, 0.1, "ok", None, None).await),
        ArgErrorCode::NotFinite
    );
    assert_eq!(
        code(heat(&s, 100, 10, 1.0, 0.6, "ok", None, None).await),
        ArgErrorCode::AboveMaximum
    );
    assert_eq!(
        code(heat(&s, 100, 10, 1.0, 0.1, "a b", None, None).await),
        ArgErrorCode::CharsetMismatch
    );
    assert_eq!(
        code(heat(&s, 100, 10, 1.0, 0.1, &"x".repeat(17), None, None).await),
        ArgErrorCode::TooLong
    );
    assert_eq!(
        code(heat(&s, 100, 10, 1.0, 0.1, "ok", Some(vec![0.0; 5]), None).await),
        ArgErrorCode::TooManyItems
    );
    assert_eq!(
        code(heat(&s, 100, 10, 1.0, 0.1, "ok", Some(vec![f64::NAN]), None).await),
        ArgErrorCode::NotFinite
    );
    assert_eq!(
        code(heat(&s, 100, 10, 1.0, 0.1, "ok", None, Some(5)).await),
        ArgErrorCode::NotBelowExclusiveMaximum
    );
    // check(..) runs after the per-argument checks.
    assert_eq!(
        code(heat(&s, 100, 10, 0.01, 0.1, "ok", None, None).await),
        ArgErrorCode::CheckFailed
    );
    // The cost ceiling too.
    let r = heat(&s, 200_000, 10_000_000, 1.0, 0.1, "ok", None, None).await;
    assert!(
        matches!(r, Err(ToolError::CostExceeded { ceiling, units: "cell-steps" }) if ceiling == 2e9)
    );
}

#[test]
fn the_validation_step_is_callable_alone() {
    let w = Some(vec![0.5]);
    let label = "run".to_owned();
    assert!(
        Solver::validate_heat_estimate(
            &100,
            &10,
            &1.0,
            &0.1,
            &Boundary::Outflow,
            &label,
            &w,
            &false,
            &None
        )
        .is_ok()
    );
    let r = Solver::validate_heat_estimate(
        &100,
        &10,
        &1.0,
        &-0.1,
        &Boundary::Outflow,
        &label,
        &w,
        &false,
        &None,
    );
    assert_eq!(code(r), ArgErrorCode::BelowMinimum);
    // A sync tool and f32 arguments.
    let s = Solver::new();
    let r = s.all_kinds(
        1,
        -3,
        f32::NAN,
        1,
        "a".into(),
        vec![],
        None,
        Boundary::Fixed,
        None,
    );
    assert_eq!(code(r), ArgErrorCode::NotFinite);
    let r = s.all_kinds(
        1,
        -3,
        0.5,
        65,
        "a".into(),
        vec![],
        None,
        Boundary::Fixed,
        None,
    );
    assert_eq!(code(r), ArgErrorCode::AboveMaximum);
    let r = s.all_kinds(
        1,
        -3,
        0.5,
        1,
        "A".into(),
        vec![],
        None,
        Boundary::Fixed,
        None,
    );
    assert_eq!(code(r), ArgErrorCode::PatternMismatch);
    assert!(
        s.all_kinds(
            1,
            -3,
            0.5,
            1,
            "a-b".into(),
            vec!["x".into()],
            None,
            Boundary::Fixed,
            None
        )
        .is_ok()
    );
}

mod edges {
    use hardened_mcp::prelude::*;

    /// A tool whose 64-bit integers span their whole types, and a small one.
    pub struct Edges;

    #[hardened_tools]
    impl Edges {
        /// Integers at the edges of their types.
        #[hardened_tool(max_cost = 1, units = "calls", cost = 1.0)]
        async fn edges(
            &self,
            #[bounded(min = -9223372036854775808, max = 9223372036854775807)] signed: i64,
            #[bounded(min = 0, max = 18446744073709551615)] unsigned: u64,
            #[bounded(min = -128, max = 127)] small: i8,
        ) -> Result<Output<u32>, ToolError> {
            let _ = (signed, unsigned, small);
            Ok(Output::new(0))
        }
    }
}
use edges::Edges;

/// The parser of the route, fed the text a request would carry.
fn parse_edges(text: &str) -> Result<(), ArgErrorCode> {
    let set = Edges::hardened_tool_router_set();
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    match set.get("edges").unwrap().check_arguments(&v) {
        Ok(()) => Ok(()),
        Err(ToolError::InvalidArguments(e)) => Err(e.code()),
        Err(other) => panic!("{other:?}"),
    }
}

#[test]
fn integers_beyond_their_type_are_refused_never_rounded() {
    let obj =
        |s: &str, u: &str, i: &str| format!(r#"{{"signed": {s}, "unsigned": {u}, "small": {i}}}"#);
    assert_eq!(
        parse_edges(&obj("-9223372036854775808", "18446744073709551615", "-128")),
        Ok(())
    );
    assert_eq!(parse_edges(&obj("9223372036854775807", "0", "127")), Ok(()));
    // The issue's case: one below i64::MIN would read as i64::MIN.
    assert_eq!(
        parse_edges(&obj("-9223372036854775809", "0", "0")),
        Err(ArgErrorCode::InexactInteger)
    );
    assert_eq!(
        parse_edges(&obj("9223372036854775808", "0", "0")),
        Err(ArgErrorCode::AboveMaximum)
    );
    assert_eq!(
        parse_edges(&obj("0", "18446744073709551616", "0")),
        Err(ArgErrorCode::InexactInteger)
    );
    assert_eq!(
        parse_edges(&obj("0", "1e19", "0")),
        Err(ArgErrorCode::InexactInteger)
    );
    assert_eq!(
        parse_edges(&obj("9007199254740993.0", "0", "0")),
        Err(ArgErrorCode::InexactInteger)
    );
    assert_eq!(
        parse_edges(&obj("9007199254740993", "9007199254740993", "0")),
        Ok(())
    );
    assert_eq!(
        parse_edges(&obj("0", "-1", "0")),
        Err(ArgErrorCode::BelowMinimum)
    );
    assert_eq!(
        parse_edges(&obj("0", "0", "128")),
        Err(ArgErrorCode::AboveMaximum)
    );
    assert_eq!(
        parse_edges(&obj("0", "0", "-129")),
        Err(ArgErrorCode::BelowMinimum)
    );
    assert_eq!(parse_edges(&obj("-0", "-0", "1.27e2")), Ok(()));
    assert_eq!(parse_edges(&obj("1.0", "1.0", "-1.28e2")), Ok(()));
    assert_eq!(
        parse_edges(&obj("0", "0", "1.28e2")),
        Err(ArgErrorCode::AboveMaximum)
    );
    assert_eq!(
        parse_edges(&obj("0", "100000000000000000000", "0")),
        Err(ArgErrorCode::AboveMaximum)
    );
    // Handler-side revalidation of typed values at the edges is exact.
    assert!(Edges::validate_edges(&i64::MIN, &u64::MAX, &i8::MIN).is_ok());
    assert!(Edges::validate_edges(&i64::MAX, &u64::MIN, &i8::MAX).is_ok());
}

/// The validator's first pass only asks whether everything holds; the error
/// of a refused call is still the first failing check, in declaration
/// order, then the `check(..)` rules, then the cost.
#[test]
fn a_refusal_names_the_first_failing_check() {
    let w = Some(vec![0.5]);
    let label = "run".to_owned();
    let v = |cells: u32, steps: u64, length: f64, courant: f64| {
        Solver::validate_heat_estimate(
            &cells,
            &steps,
            &length,
            &courant,
            &Boundary::Outflow,
            &label,
            &w,
            &false,
            &None,
        )
        .map_err(|e| match e {
            ToolError::InvalidArguments(a) => (a.code(), a.argument()),
            other => panic!("{other:?}"),
        })
    };
    // cells, then courant, both out of range: cells is named.
    assert_eq!(
        v(4, 10, 1.0, 0.9),
        Err((ArgErrorCode::BelowMinimum, Some("cells")))
    );
    assert_eq!(
        v(100, 10, f64::NAN, 0.9),
        Err((ArgErrorCode::NotFinite, Some("length")))
    );
    // Every argument valid but the cross-argument rule fails.
    assert_eq!(
        v(100, 10, 0.01, 0.1),
        Err((ArgErrorCode::CheckFailed, None))
    );
    assert!(v(100, 10, 1.0, 0.1).is_ok());
}
