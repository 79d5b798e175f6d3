//! Arrays of arrays (`Vec<Vec<T>>`) and item floors: bounds on both levels,
//! the rectangular rule, a row rule over another parameter declared on the
//! struct; the same in the schema (where JSON Schema can say it), the
//! parser and revalidation; refusals that name the parameter and the rule,
//! never a value.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hardened_mcp::args::{ArgErrorCode, Bound, HardenedArgs};
use hardened_mcp::prelude::*;
use serde_json::{Map, Value, json};

/// A linear system `a x = b`.
#[derive(Debug, HardenedArgs)]
#[hardened_args(check(self.rows_as_long_as_b(), "every row of a must be as long as b"))]
struct System {
    /// The matrix, by rows.
    #[bounded(min_items = 1, max_items = 4, items(min_items = 1, max_items = 3),
              rectangular, min = -1e3, max = 1e3, finite)]
    a: Vec<Vec<f64>>,
    /// The right-hand side.
    #[bounded(min_items = 1, max_items = 3, min = -1e3, max = 1e3)]
    b: Vec<f64>,
    /// Optional weights, rows of any length.
    #[bounded(max_items = 2, items(max_items = 2), min = 0, max = 9)]
    w: Option<Vec<Vec<u8>>>,
}

impl System {
    fn rows_as_long_as_b(&self) -> bool {
        self.a.iter().all(|row| row.len() == self.b.len())
    }
}

/// The parser, then the struct's rules, as a tool call runs them.
fn parse(v: Value) -> Result<System, hardened_mcp::args::ArgError> {
    let Value::Object(m) = v else { panic!() };
    let s = System::parse(&m)?;
    s.validate()?;
    Ok(s)
}

fn refused(v: Value) -> (ArgErrorCode, Option<&'static str>, Option<Bound>, String) {
    let text = v.to_string();
    let e = parse(v).expect_err("refused");
    let message = e.to_string();
    for number in ["4000", "12345"] {
        assert!(
            !message.contains(number) || !text.contains(number),
            "{message}"
        );
    }
    (e.code(), e.argument(), e.bound(), message)
}

#[test]
fn a_matrix_within_its_bounds_parses() {
    let s = parse(json!({"a": [[1.0, 2.0], [3.0, 4.0]], "b": [5.0, 6.0]})).unwrap();
    assert_eq!(s.a, [[1.0, 2.0], [3.0, 4.0]]);
    assert!(s.w.is_none());
    let s = parse(json!({"a": [[1.0]], "b": [1.0], "w": [[1, 2], [3]]})).unwrap();
    assert_eq!(s.w, Some(vec![vec![1, 2], vec![3]]), "w is not rectangular");
}

#[test]
fn both_levels_have_a_floor_and_a_ceiling() {
    let row = json!([1.0, 2.0]);
    let cases = [
        (json!({"a": [], "b": [1.0]}), ArgErrorCode::TooFewItems, 1),
        (
            json!({"a": [row, row, row, row, row], "b": [1.0, 2.0]}),
            ArgErrorCode::TooManyItems,
            4,
        ),
        (json!({"a": [[]], "b": [1.0]}), ArgErrorCode::TooFewItems, 1),
        (
            json!({"a": [[1.0, 2.0, 3.0, 4.0]], "b": [1.0]}),
            ArgErrorCode::TooManyItems,
            3,
        ),
        (json!({"a": [[1.0]], "b": []}), ArgErrorCode::TooFewItems, 1),
    ];
    for (args, code, bound) in cases {
        let (c, arg, b, _) = refused(args.clone());
        assert_eq!(c, code, "{args}");
        assert_eq!(b, Some(Bound::Count(bound)), "{args}");
        assert!(matches!(arg, Some("a" | "b")), "{args}");
    }
}

#[test]
fn ragged_rows_and_bad_cells_are_refused() {
    let (code, arg, _, message) = refused(json!({"a": [[1.0, 2.0], [1.0]], "b": [1.0, 2.0]}));
    assert_eq!(code, ArgErrorCode::NotRectangular);
    assert_eq!(arg, Some("a"));
    assert!(message.contains("rows of `a`"), "{message}");
    let (code, _, _, _) = refused(json!({"a": [[1.0, 4000.0]], "b": [1.0, 2.0]}));
    assert_eq!(code, ArgErrorCode::AboveMaximum);
    let (code, _, _, _) = refused(json!({"a": [[1.0, "2"]], "b": [1.0, 2.0]}));
    assert_eq!(code, ArgErrorCode::WrongType);
    let (code, _, _, _) = refused(json!({"a": [1.0, 2.0], "b": [1.0, 2.0]}));
    assert_eq!(
        code,
        ArgErrorCode::WrongType,
        "a flat array is not a matrix"
    );
    // A rectangular matrix whose rows are not as long as b: the struct's rule.
    let (code, _, _, message) = refused(json!({"a": [[1.0, 2.0, 3.0]], "b": [1.0, 2.0]}));
    assert_eq!(code, ArgErrorCode::CheckFailed);
    assert!(
        message.ends_with("every row of a must be as long as b"),
        "{message}"
    );
}

#[test]
fn revalidation_holds_a_typed_value_to_the_same_rules() {
    let ok = System {
        a: vec![vec![1.0, 2.0]],
        b: vec![1.0, 2.0],
        w: None,
    };
    assert!(ok.validate().is_ok());
    let ragged = System {
        a: vec![vec![1.0, 2.0], vec![1.0]],
        ..ok
    };
    assert_eq!(
        ragged.validate().unwrap_err().code(),
        ArgErrorCode::NotRectangular
    );
    let empty_row = System {
        a: vec![vec![]],
        b: vec![],
        w: None,
    };
    assert_eq!(
        empty_row.validate().unwrap_err().code(),
        ArgErrorCode::TooFewItems
    );
    let long_row = System {
        a: vec![vec![0.0; 4]],
        b: vec![0.0; 4],
        w: None,
    };
    assert_eq!(
        long_row.validate().unwrap_err().code(),
        ArgErrorCode::TooManyItems
    );
}

#[test]
fn the_schema_says_what_json_schema_can() {
    let schema = hardened_mcp::schema::InputSchema::new()
        .with::<System>()
        .finish(1.0, "solves");
    let a = &schema["properties"]["a"];
    assert_eq!(a["type"], "array");
    assert_eq!(
        (a["minItems"].clone(), a["maxItems"].clone()),
        (json!(1), json!(4))
    );
    let row = &a["items"];
    assert_eq!(row["type"], "array");
    assert_eq!(
        (row["minItems"].clone(), row["maxItems"].clone()),
        (json!(1), json!(3))
    );
    assert_eq!(row["items"]["type"], "number");
    assert_eq!(row["items"]["maximum"], json!(1e3));
    let description = a["description"].as_str().unwrap();
    assert!(
        description.starts_with("The matrix, by rows."),
        "{description}"
    );
    assert!(
        description.contains("as many items as the first"),
        "{description}"
    );
    let w = &schema["properties"]["w"];
    assert!(w.get("minItems").is_none(), "no floor declared: {w}");
    assert!(!w["description"].as_str().unwrap_or("").contains("first"));
    // A document the schema admits and the parser refuses only for the
    // rules JSON Schema cannot state (the shape, the struct's rule).
    let validator = jsonschema::validator_for(&Value::Object(Map::clone(&schema))).unwrap();
    assert!(validator.is_valid(&json!({"a": [[1.0, 2.0], [1.0]], "b": [1.0]})));
    assert!(!validator.is_valid(&json!({"a": [[]], "b": [1.0]})));
    assert!(!validator.is_valid(&json!({"a": [[1.0, 2.0, 3.0, 4.0]], "b": [1.0]})));
}
