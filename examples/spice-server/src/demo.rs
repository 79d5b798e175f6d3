//! The `demo` mode: an in-process MCP client session against the server
//! over the hardened stdio transport on an in-memory pipe. Three templates
//! simulated by the real ngspice, each checked against its analytic answer,
//! the AC plot saved, the solver log framed as untrusted, then a handful of
//! hostile calls, each refused with a fixed error.

use std::f64::consts::PI;
use std::path::PathBuf;

use base64::Engine as _;
use hardened_mcp::cli::{BoxError, DemoArgs, InProcess, StartError};
use rmcp::model::{CallToolResult, ClientConfig};
use serde_json::{Value, json};

use crate::app;
use crate::circuit;
use crate::cli::{DemoOptions, SpiceOptions};

type Client = InProcess<ClientConfig>;

/// Runs the demo; errors are start-up or protocol failures.
pub async fn run(o: DemoArgs<SpiceOptions, DemoOptions>) -> Result<(), BoxError> {
    let args = o.server_args()?;
    let mut setup = args.setup();
    let server = app::build(&mut setup, &o.own)?;
    let containment = server.service().containment().to_string();
    let client = InProcess::connect(server, ClientConfig::default()).await?;
    let result = session(&client, &o.demo, &containment).await;
    client.close().await;
    Ok(result?)
}

/// The structured answer: the result's `data` (success) or the whole
/// object (an error result carries `error`).
fn structured(r: &CallToolResult) -> Value {
    let v = r.structured_content.clone().unwrap_or(Value::Null);
    match v.get("data") {
        Some(data) => data.clone(),
        None => v,
    }
}

fn heading(s: &str) {
    println!("\n{s}");
}

async fn session(client: &Client, o: &DemoOptions, containment: &str) -> Result<(), StartError> {
    heading("1. The tools the model sees");
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| StartError::because("tools/list", e))?;
    for t in &tools {
        let first = t
            .description
            .as_deref()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        println!("  {:<12} {}", t.name, first);
    }
    println!("  ngspice containment: {containment}");

    heading("2. RC low-pass, AC sweep (R = 1 kΩ, C = 100 nF)");
    let (r, c) = (1e3, 100e-9);
    let ac = client
        .call(
            "spice_ac",
            json!({"template": "rc_lowpass", "resistance": r, "capacitance": c,
               "f_start": 10.0, "f_stop": 1e6, "points_per_decade": 50}),
        )
        .await?;
    let v = structured(&ac);
    let fc = 1.0 / (2.0 * PI * r * c);
    println!(
        "  −3 dB at {:.1} Hz; 1/(2πRC) = {:.1} Hz",
        v["figures"]["f_3db_high"].as_f64().unwrap_or(f64::NAN),
        fc
    );
    let handle = v["run_handle"].as_str().unwrap_or_default().to_owned();

    heading("3. Series RLC, AC sweep (R = 10 Ω, L = 1 mH, C = 1 µF)");
    let (l, c2): (f64, f64) = (1e-3, 1e-6);
    let rlc = client
        .call(
            "spice_ac",
            json!({"template": "series_rlc", "resistance": 10.0, "inductance": l, "capacitance": c2,
               "f_start": 100.0, "f_stop": 100e3, "points_per_decade": 200}),
        )
        .await?;
    let v = structured(&rlc);
    println!(
        "  resonance at {:.1} Hz; 1/(2π√(LC)) = {:.1} Hz",
        v["figures"]["peak_frequency"].as_f64().unwrap_or(f64::NAN),
        1.0 / (2.0 * PI * (l * c2).sqrt())
    );

    heading("4. RC low-pass, step response");
    let tran = client
        .call(
            "spice_tran",
            json!({"template": "rc_lowpass", "resistance": r, "capacitance": c,
               "t_step": 1e-6, "t_stop": 1e-3}),
        )
        .await?;
    let v = structured(&tran);
    println!(
        "  10–90 % rise time {:.2} µs; RC·ln 9 = {:.2} µs",
        v["figures"]["rise_time"].as_f64().unwrap_or(f64::NAN) * 1e6,
        r * c * 9f64.ln() * 1e6
    );

    heading("5. Diode clipper, operating point at 5 V through 1 kΩ");
    let op = client
        .call(
            "spice_op",
            json!({"template": "diode_clipper", "resistance": 1e3, "amplitude": 5.0}),
        )
        .await?;
    let v = structured(&op);
    println!(
        "  v(out) = {:.4} V; the diode equation gives {:.4} V",
        v["v_out"].as_f64().unwrap_or(f64::NAN),
        circuit::clipper_op(5.0, 1e3)
    );

    heading("6. The AC plot as an MCP image");
    let plot = client.call("spice_plot", json!({"run": handle})).await?;
    let png = plot
        .content
        .iter()
        .find_map(|c| c.as_image().map(|i| i.data.clone()));
    let path = o
        .plot
        .clone()
        .unwrap_or_else(|| PathBuf::from("spice-ac.png"));
    match png.map(|b64| base64::engine::general_purpose::STANDARD.decode(b64)) {
        Some(Ok(bytes)) => match std::fs::write(&path, &bytes) {
            Ok(()) => println!("  saved {} ({} bytes)", path.display(), bytes.len()),
            Err(e) => println!("  could not save the plot: {e}"),
        },
        _ => println!("  no image in the answer"),
    }

    heading("7. ngspice's output, framed as untrusted data");
    let log = structured(&ac)["log"].clone();
    println!("  notice: {}", log["notice"].as_str().unwrap_or_default());
    for line in log["data"].as_array().into_iter().flatten().take(6) {
        println!("  | {}", line.as_str().unwrap_or_default());
    }

    heading("8. Hostile calls, each refused with a fixed error that echoes nothing");
    let base = json!({"template": "rc_lowpass", "resistance": 1e3, "f_start": 10.0, "f_stop": 1e6});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    let attacks: [(&str, &'static str, Value); 6] = [
        (
            "netlist directive as template",
            "spice_ac",
            with("template", json!(".control shell rm -rf ~")),
        ),
        (
            "NaN-like string for R",
            "spice_ac",
            with("resistance", json!("NaN")),
        ),
        (
            "f_start above f_stop",
            "spice_ac",
            with("f_start", json!(1e7)),
        ),
        (
            "a trillion points (cost ceiling)",
            "spice_tran",
            json!({"template": "rc_lowpass", "resistance": 1e3, "t_step": 1e-15, "t_stop": 1.0}),
        ),
        (
            "unknown key (a title with .include)",
            "spice_ac",
            with("title", json!(".include /etc/passwd")),
        ),
        (
            "path-traversal handle",
            "spice_plot",
            json!({"run": "../../etc"}),
        ),
    ];
    for (what, tool, args) in attacks {
        let r = client.call(tool, args).await?;
        let text = structured(&r)["error"]["message"]
            .as_str()
            .unwrap_or("(no error)")
            .to_owned();
        println!("  {what:<36} -> {text}");
    }

    heading("9. Clean up");
    let d = client.call("spice_delete", json!({"run": handle})).await?;
    println!(
        "  deleted {}",
        structured(&d)["run_handle"].as_str().unwrap_or_default()
    );
    Ok(())
}
