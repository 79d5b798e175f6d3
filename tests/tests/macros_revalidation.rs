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
