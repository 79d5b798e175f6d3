//! Records (`T: HardenedArgs` as a parameter, a field or an array's
//! items), the declarative
//! length rules (`same_len_as`, `items(same_len_as)`) and the ceiling on a
//! matrix's cells (`max_total`): in the schema where JSON Schema can say
//! it, in the parser and in revalidation, on tool parameters and struct
//! fields alike; refusals that name the parameter (and the record's field)
//! and the rule, never a value or an item's position.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hardened_mcp::args::{ArgError, ArgErrorCode, Bound, HardenedArgs};
use hardened_mcp::prelude::*;
use serde_json::{Map, Value, json};

/// A probe position.
#[derive(Debug, Clone, PartialEq, HardenedArgs)]
#[hardened_args(check(x <= y, "a probe's x may not exceed its y"))]
struct Probe {
    /// Position along the rod.
    #[bounded(min = 0.0, max = 1.0)]
    x: f64,
    /// A second coordinate.
    #[bounded(min = 0.0, max = 1.0)]
    y: f64,
    /// A label.
    #[bounded(max_len = 8, charset = "identifier")]
    label: Option<String>,
}

/// A list of records holding records.
#[derive(Debug, HardenedArgs)]
struct Survey {
    /// The probes, in order.
    #[bounded(min_items = 1, max_items = 3)]
    probes: Vec<Probe>,
    /// Groups of probes.
    #[bounded(max_items = 2)]
    groups: Option<Vec<Group>>,
    /// A reference probe, one record of its own.
    reference: Option<Probe>,
}

/// A named group of probes.
#[derive(Debug, HardenedArgs)]
struct Group {
    #[bounded(max_items = 2)]
    members: Vec<Probe>,
}

/// A linear system, its shape declared.
#[derive(Debug, HardenedArgs)]
struct System {
    /// The matrix, by rows: each row as long as `b`.
    #[bounded(min_items = 1, max_items = 4, items(max_items = 4, same_len_as = b),
              max_total = 6, min = -1e3, max = 1e3)]
    a: Vec<Vec<f64>>,
    /// The right-hand side.
    #[bounded(min_items = 1, max_items = 4, min = -1e3, max = 1e3)]
    b: Vec<f64>,
    /// Optional weights, one per row of `a`.
    #[bounded(max_items = 4, same_len_as = a, min = 0, max = 9)]
    w: Option<Vec<u8>>,
}

fn object(v: Value) -> Map<String, Value> {
    let Value::Object(m) = v else {
        panic!("not an object")
    };
    m
}

/// The parser, then revalidation, as a tool call runs them.
fn parse<T: HardenedArgs>(v: Value) -> Result<T, ArgError> {
    let t = T::parse(&object(v))?;
    t.validate()?;
    Ok(t)
}

/// The refusal of `v`, whose message holds none of the values written.
fn refused<T: HardenedArgs + std::fmt::Debug>(v: Value) -> ArgError {
    let e = parse::<T>(v.clone()).expect_err("refused");
    let message = e.to_string();
    for secret in ["0.777", "4321", "evil"] {
        assert!(
            !message.contains(secret) && !e.to_json().to_string().contains(secret),
            "{message}"
        );
    }
    e
}

#[test]
fn a_list_of_records_parses_into_the_records() {
    let s: Survey =
        parse(json!({"probes": [{"x": 0.1, "y": 0.5}, {"x": 0.2, "y": 0.2, "label": "p_2"}]}))
            .unwrap();
    assert_eq!(s.probes.len(), 2);
    assert_eq!(
        s.probes[1],
        Probe {
            x: 0.2,
            y: 0.2,
            label: Some("p_2".into())
        }
    );
    assert!(s.groups.is_none() && s.reference.is_none());
    let e = refused::<Survey>(
        json!({"probes": [{"x": 0.1, "y": 0.5}], "reference": {"x": 0.777, "y": 0.5, "label": 4321}}),
    );
    assert_eq!(
        (e.code(), e.argument(), e.field()),
        (ArgErrorCode::WrongType, Some("reference"), Some("label"))
    );
    let s: Survey = parse(json!({"probes": [{"x": 0.0, "y": 0.0}],
                                 "groups": [{"members": [{"x": 0.3, "y": 0.4}]}, {"members": []}]}))
    .unwrap();
    assert_eq!(s.groups.unwrap()[0].members[0].y, 0.4);
}

#[test]
fn a_record_refusal_names_the_argument_and_the_field() {
    let e = refused::<Survey>(json!({"probes": [{"x": 0.1, "y": 0.5}, {"x": 1.777, "y": 0.777}]}));
    assert_eq!(e.code(), ArgErrorCode::AboveMaximum);
    assert_eq!((e.argument(), e.field()), (Some("probes"), Some("x")));
    assert_eq!(e.bound(), Some(Bound::Float(1.0)));
    assert_eq!(e.to_json()["field"], "x");
    assert!(e.to_string().contains("`x` of an item of `probes`"), "{e}");
    // Missing field, wrong type of item, unknown key (its name never said).
    let e = refused::<Survey>(json!({"probes": [{"x": 0.1}]}));
    assert_eq!(
        (e.code(), e.field()),
        (ArgErrorCode::MissingArgument, Some("y"))
    );
    let e = refused::<Survey>(json!({"probes": [[0.1, 0.2]]}));
    assert_eq!(
        (e.code(), e.argument(), e.bound()),
        (
            ArgErrorCode::WrongType,
            Some("probes"),
            Some(Bound::Text("object"))
        )
    );
    let e = refused::<Survey>(json!({"probes": [{"x": 0.1, "y": 0.2, "evil": 1}]}));
    assert_eq!(
        (e.code(), e.argument()),
        (ArgErrorCode::UnknownArgument, Some("probes"))
    );
    assert!(e.to_string().contains("x, y, label"), "{e}");
    let e = refused::<Survey>(json!({"probes": [{"x": 0.1, "y": 0.2, "label": "evil!"}]}));
    assert_eq!(
        (e.code(), e.field()),
        (ArgErrorCode::CharsetMismatch, Some("label"))
    );
    // The record's own rule, with its reason.
    let e = refused::<Survey>(json!({"probes": [{"x": 0.777, "y": 0.5}]}));
    assert_eq!(e.code(), ArgErrorCode::CheckFailed);
    assert_eq!(e.reason(), Some("a probe's x may not exceed its y"));
    assert_eq!(e.argument(), Some("probes"));
    // A record within a record: the innermost field, the outer argument.
    let e = refused::<Survey>(json!({"probes": [{"x": 0.0, "y": 0.0}],
                                     "groups": [{"members": [{"x": -0.777, "y": 0.0}]}]}));
    assert_eq!(
        (e.code(), e.argument(), e.field()),
        (ArgErrorCode::BelowMinimum, Some("groups"), Some("x"))
    );
    // The list's own bounds.
    let e = refused::<Survey>(json!({"probes": []}));
    assert_eq!((e.code(), e.field()), (ArgErrorCode::TooFewItems, None));
}

#[test]
fn revalidation_holds_typed_records_to_their_bounds_and_rules() {
    let good = Probe {
        x: 0.1,
        y: 0.2,
        label: None,
    };
    let survey = |probes: Vec<Probe>| Survey {
        probes,
        groups: None,
        reference: None,
    };
    assert!(survey(vec![good.clone()]).validate().is_ok());
    let nan = Probe {
        x: f64::NAN,
        ..good.clone()
    };
    let e = survey(vec![good.clone(), nan]).validate().unwrap_err();
    assert_eq!((e.code(), e.field()), (ArgErrorCode::NotFinite, Some("x")));
    let crossed = Probe {
        x: 0.9,
        ..good.clone()
    };
    let e = survey(vec![crossed]).validate().unwrap_err();
    assert_eq!(e.code(), ArgErrorCode::CheckFailed);
    let e = survey(vec![good; 4]).validate().unwrap_err();
    assert_eq!(e.code(), ArgErrorCode::TooManyItems);
}

#[test]
fn the_schema_describes_the_records_as_closed_objects() {
    let schema = hardened_mcp::schema::InputSchema::new()
        .with::<Survey>()
        .finish(1.0, "surveys");
    let probes = &schema["properties"]["probes"];
    assert_eq!(probes["type"], "array");
    assert_eq!(probes["minItems"], 1);
    let item = &probes["items"];
    assert_eq!(item["type"], "object");
    assert_eq!(item["additionalProperties"], false);
    assert_eq!(item["required"], json!(["x", "y"]));
    assert_eq!(item["properties"]["x"]["maximum"], json!(1.0));
    assert_eq!(item["properties"]["label"]["description"], "A label.");
    let nested = &schema["properties"]["groups"]["items"]["properties"]["members"]["items"];
    assert_eq!(nested["type"], "object");
    // The schema and the parser agree where the schema can say it.
    let validator = jsonschema::validator_for(&Value::Object(Map::clone(&schema))).unwrap();
    for args in [
        json!({"probes": [{"x": 0.1, "y": 0.2}]}),
        json!({"probes": [{"x": 2.0, "y": 0.2}]}),
        json!({"probes": [{"x": 0.1, "y": 0.2, "z": 0}]}),
        json!({"probes": [{"x": 0.1}]}),
        json!({"probes": [{"x": 0.1, "y": 0.2}], "groups": [{"members": [{"x": 0.1, "y": 0.2, "q": 1}]}]}),
    ] {
        assert_eq!(
            validator.is_valid(&args),
            parse::<Survey>(args.clone()).is_ok(),
            "{args}"
        );
    }
}

#[test]
fn lengths_declared_against_another_array_are_checked() {
    let ok: System =
        parse(json!({"a": [[1.0, 2.0], [3.0, 4.0]], "b": [1.0, 2.0], "w": [1, 2]})).unwrap();
    assert_eq!(ok.a.len(), 2);
    // A row shorter than b, though the matrix is rectangular.
    let e = refused::<System>(json!({"a": [[1.0], [3.0]], "b": [1.0, 2.0]}));
    assert_eq!(
        (e.code(), e.argument(), e.bound()),
        (
            ArgErrorCode::RowLengthMismatch,
            Some("a"),
            Some(Bound::Text("b"))
        )
    );
    assert!(e.to_string().contains("every row of `a`"), "{e}");
    // w as long as a (absent: nothing to compare).
    let e = refused::<System>(json!({"a": [[1.0, 2.0]], "b": [1.0, 2.0], "w": [1, 2]}));
    assert_eq!(
        (e.code(), e.argument(), e.bound()),
        (
            ArgErrorCode::LengthMismatch,
            Some("w"),
            Some(Bound::Text("a"))
        )
    );
    // More cells in all than max_total, each level within its own bounds.
    let row = json!([1.0, 2.0]);
    let e = refused::<System>(json!({"a": [row, row, row, row], "b": [1.0, 2.0]}));
    assert_eq!(
        (e.code(), e.bound()),
        (ArgErrorCode::TooManyInTotal, Some(Bound::Count(6)))
    );
    // Revalidation: the same rules on a typed value.
    let typed = System {
        a: vec![vec![1.0, 2.0]],
        b: vec![1.0],
        w: None,
    };
    assert_eq!(
        typed.validate().unwrap_err().code(),
        ArgErrorCode::RowLengthMismatch
    );
    let schema = hardened_mcp::schema::InputSchema::new()
        .with::<System>()
        .finish(1.0, "solves");
    let a = schema["properties"]["a"]["description"].as_str().unwrap();
    assert!(a.contains("At most 6 items in all the rows."), "{a}");
}

struct Lab;

#[hardened_tools]
impl Lab {
    /// Places probes, one weight per probe, around an origin.
    #[hardened_tool(max_cost = 100, units = "probes",
                    cost = probes.len() as f64 + if origin.x > 0.5 { 10.0 } else { 0.0 },
                    check(probes.iter().all(|p| p.x >= origin.x), "probes lie beyond the origin"),
                    check(guide.is_none_or(|g| g.y >= origin.y), "the guide lies beyond the origin"))]
    async fn place(
        &self,
        #[bounded(min_items = 1, max_items = 8)] probes: Vec<Probe>,
        #[bounded(max_items = 8, same_len_as = probes, min = 0.0, max = 1.0)] weights: Vec<f64>,
        #[bounded(description = "Where the probes start from.")] origin: Probe,
        guide: Option<Probe>,
    ) -> Result<Output<u32>, ToolError> {
        let guided = u32::from(guide.is_some());
        let _ = origin.label;
        Ok(Output::new(
            u32::try_from(probes.len() + weights.len()).unwrap_or(0) + guided,
        ))
    }
}

#[test]
fn a_tool_takes_a_list_of_records_with_its_rules() {
    let set = Lab::hardened_tool_router_set();
    let tool = set.get("place").expect("the tool");
    let check = |v: Value| tool.check_arguments(&v);
    let origin = json!({"x": 0.0, "y": 0.0});
    let ok = json!({"probes": [{"x": 0.1, "y": 0.2}], "weights": [0.5], "origin": origin});
    assert!(check(ok).is_ok());
    let refusal = |v: Value| match check(v) {
        Err(ToolError::InvalidArguments(e)) => (e.code(), e.argument(), e.reason()),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refusal(json!({"probes": [{"x": 0.1, "y": 0.2}], "weights": [0.5, 0.5], "origin": origin})),
        (ArgErrorCode::LengthMismatch, Some("weights"), None)
    );
    assert_eq!(
        refusal(json!({"probes": [{"x": 0.9, "y": 0.2}], "weights": [0.5], "origin": origin})),
        (
            ArgErrorCode::CheckFailed,
            Some("probes"),
            Some("a probe's x may not exceed its y")
        )
    );
    assert_eq!(
        refusal(json!({"probes": [{"x": 0.1, "y": 0.2}], "weights": [0.5]})),
        (ArgErrorCode::MissingArgument, Some("origin"), None)
    );
    assert_eq!(
        refusal(json!({"probes": [{"x": 0.1, "y": 0.2}], "weights": [0.5],
                       "origin": {"x": 0.2, "y": 0.2}})),
        (
            ArgErrorCode::CheckFailed,
            None,
            Some("probes lie beyond the origin")
        )
    );
    assert_eq!(
        refusal(
            json!({"probes": [{"x": 0.1, "y": 0.2}], "weights": [0.5], "origin": origin,
                       "guide": {"x": 0.1, "y": 2.0}})
        ),
        (ArgErrorCode::AboveMaximum, Some("guide"), None)
    );
    assert_eq!(
        refusal(json!({"probes": [{"x": 0.6, "y": 0.7}], "weights": [0.5],
                       "origin": {"x": 0.2, "y": 0.3}, "guide": {"x": 0.1, "y": 0.2}})),
        (
            ArgErrorCode::CheckFailed,
            None,
            Some("the guide lies beyond the origin")
        )
    );
    let schema = &tool.tool().input_schema;
    assert_eq!(schema["properties"]["probes"]["items"]["type"], "object");
    assert_eq!(schema["properties"]["origin"]["type"], "object");
    assert_eq!(
        schema["properties"]["origin"]["description"],
        "Where the probes start from."
    );
    assert_eq!(schema["required"], json!(["probes", "weights", "origin"]));
    let origin = Probe {
        x: 0.0,
        y: 0.0,
        label: None,
    };
    assert_eq!(
        Lab::validate_place(&vec![], &vec![], &origin, &None)
            .unwrap_err()
            .to_string(),
        ToolError::InvalidArguments(ArgError::new(
            ArgErrorCode::TooFewItems,
            "probes",
            Some(Bound::Count(1))
        ))
        .to_string()
    );
}
