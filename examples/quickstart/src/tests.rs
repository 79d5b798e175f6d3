//! Testing tools without a client: direct calls (revalidated like a
//! protocol call), calls with JSON arguments, and the advertised schema.

use hardened_mcp::prelude::*;
use hardened_mcp::serde_json::json;

use super::{Beam, Support};

fn ctx() -> ToolContext {
    ToolContext::detached(CallerId::local())
}

#[tokio::test]
async fn a_direct_call_computes_and_is_revalidated() {
    // 5 kN at mid-span of a 4 m steel beam, I = 8356 cm⁴ (an IPE 300).
    let out = Beam
        .beam_deflection(Support::SimplySupported, 4.0, 5e3, 200.0, 8356.0)
        .await
        .unwrap();
    let d = out.data();
    assert!(
        (d.deflection_mm - 0.3989).abs() < 1e-3,
        "{}",
        d.deflection_mm
    );
    // A direct call gets the same bounds as a protocol call.
    let refused = Beam
        .beam_deflection(Support::Cantilever, 400.0, 5e3, 200.0, 8356.0)
        .await;
    assert!(matches!(refused, Err(ToolError::InvalidArguments(_))));
}

#[tokio::test]
async fn json_arguments_go_through_the_strict_parser() {
    let tools = Beam::hardened_tool_router_set();
    let stress = tools.get("beam_stress").unwrap();
    let call = |args: hardened_mcp::serde_json::Value| {
        let args = args.as_object().cloned();
        async move { stress.call(&Beam, args, ctx()).await }
    };
    let ok =
        call(json!({"length_m": 2.0, "load_n": 1e3, "width_mm": 50.0, "height_mm": 100.0})).await;
    assert_eq!(ok.is_error, Some(false));
    // σ = (P L / 4) / (b h² / 6) = 500 N·m / 8.33e-5 m³ = 6 MPa
    let data = &ok.structured_content.unwrap()["data"];
    assert!((data["stress_mpa"].as_f64().unwrap() - 6.0).abs() < 1e-9);

    for bad in [
        json!({"length_m": 2.0, "load_n": -1.0, "width_mm": 50.0, "height_mm": 100.0}),
        json!({"length_m": 2.0, "load_n": 1e3, "width_mm": 50.0, "height_mm": 100.0, "extra": 1}),
        json!({"length_m": 0.5, "load_n": 1e3, "width_mm": 50.0, "height_mm": 900.0}),
        json!({"support": "fixed", "length_m": 2.0, "load_n": 1e3, "width_mm": 50.0, "height_mm": 100.0}),
    ] {
        let r = call(bad.clone()).await;
        assert_eq!(r.is_error, Some(true), "{bad}");
        let kind = &r.structured_content.unwrap()["error"]["kind"];
        assert_eq!(kind, "invalid_arguments", "{bad}");
    }
}

#[test]
fn the_schema_bounds_every_argument() {
    let router = Beam::try_hardened_tool_router().unwrap();
    for tool in router.list_all() {
        let props = tool.input_schema["properties"].as_object().unwrap();
        for (name, prop) in props {
            let bounded = prop.get("enum").is_some()
                || (prop.get("minimum").is_some() && prop.get("maximum").is_some());
            assert!(bounded, "{}: {name} unbounded", tool.name);
        }
        assert_eq!(tool.input_schema["additionalProperties"], json!(false));
        assert!(tool.output_schema.is_some(), "{}", tool.name);
    }
}
