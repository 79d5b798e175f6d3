//! The `demo` mode: an in-process MCP client session against the server,
//! over the hardened stdio transport on an in-memory pipe. It shows a real
//! run end to end and then a handful of hostile calls, each refused with a
//! fixed error.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, NumberOrString, ProgressNotificationParam,
    ProgressToken, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use serde_json::{Value, json};

use hardened_mcp::cli::{BoxError, DemoArgs, InProcess, StartError};

use crate::app;
use crate::cli::{DemoOptions, HeatOptions};

/// Prints progress notifications as a bar.
#[derive(Default, Clone)]
struct ProgressBar {
    last_permille: Arc<AtomicU64>,
}

impl ClientHandler for ProgressBar {
    /// A client that can put questions to its person (elicitation).
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.capabilities.elicitation = Some(ElicitationCapability::default());
        config
    }

    /// The person behind this client: shown the server's question, they
    /// approve (the demo plays them).
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        println!("  the server asks: {message}");
        println!("  -> approved (the demo plays the person behind the client)");
        let mut answer = ElicitResult::new(ElicitationAction::Accept);
        answer.content = Some(json!({ "approve": true }));
        Ok(answer)
    }

    async fn on_progress(&self, p: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        let Some(total) = p.total.filter(|t| *t > 0.0) else {
            return;
        };
        let permille = ((p.progress / total).clamp(0.0, 1.0) * 1000.0) as u64;
        if permille <= self.last_permille.swap(permille, Ordering::Relaxed) && permille != 1000 {
            return;
        }
        let filled = (permille * 40 / 1000) as usize;
        print!(
            "\r  [{}{}] {:5.1}%",
            "#".repeat(filled),
            ".".repeat(40 - filled),
            permille as f64 / 10.0
        );
        let _ = std::io::stdout().flush();
    }
}

type Client = InProcess<ProgressBar>;

/// Runs the demo; errors are start-up or protocol failures.
pub async fn run(o: DemoArgs<HeatOptions, DemoOptions>) -> Result<(), BoxError> {
    let args = o.server_args()?;
    // The demo's server asks before cancelling or deleting a run, too.
    let heat = HeatOptions {
        confirm_delete: true,
        ..o.own.clone()
    };
    let mut setup = args.setup();
    let server = app::build(&mut setup, &heat)?;
    let containment = server.service().containment().to_string();
    let client = InProcess::connect(server, ProgressBar::default()).await?;
    let result = session(&client, &o.demo, &containment).await;
    client.close().await;
    Ok(result?)
}

async fn session(client: &Client, opts: &DemoOptions, containment: &str) -> Result<(), StartError> {
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
    println!("  solver containment: {containment}");

    heading(
        "2. Start a run (2000 cells x 200000 steps, sine initial profile, Dirichlet ends): \
         above 1e8 cell-steps, the server asks the person to approve it first",
    );
    let started = call(
        client,
        "heat_start",
        json!({"cells": 2000, "steps": 200000, "length": 1.0, "diffusivity": 1.0, "dt": 1e-7}),
        None,
    )
    .await?;
    let handle = data(&started)["run_handle"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    println!("  run handle: {handle}   (opaque: no path ever leaves the server)");
    println!(
        "  courant number {}, t_final {} s",
        data(&started)["courant"],
        data(&started)["t_final"]
    );

    heading("3. Wait for it, with MCP progress notifications");
    let status = call(
        client,
        "heat_wait",
        json!({"run": handle, "seconds": 60}),
        Some(1),
    )
    .await?;
    println!();
    let s = data(&status);
    println!(
        "  state: {}   exit code: {}   wall: {:.2} s   cpu: {:.2} s",
        s["state"],
        s["exit_code"],
        s["wall_seconds"].as_f64().unwrap_or(0.0),
        s["cpu_seconds"].as_f64().unwrap_or(0.0)
    );

    heading("4. The result, decimated to 11 points, against the exact solution");
    let result = call(
        client,
        "heat_result",
        json!({"run": handle, "max_points": 11}),
        None,
    )
    .await?;
    let r = data(&result);
    let t = r["t_final"].as_f64().unwrap_or(0.0);
    println!("  {:>8}  {:>12}  {:>12}", "x", "u(x, t)", "exact");
    for p in r["profile"].as_array().into_iter().flatten() {
        let x = p["x"].as_f64().unwrap_or(f64::NAN);
        let exact = (-std::f64::consts::PI.powi(2) * t).exp() * (std::f64::consts::PI * x).sin();
        println!(
            "  {:>8.3}  {:>12.6}  {:>12.6}",
            x,
            p["u"].as_f64().unwrap_or(f64::NAN),
            exact
        );
    }
    println!(
        "  {} of {} points shown; min {:.4}, max {:.4}, mean {:.4}; L2 error {:.2e}",
        r["profile"].as_array().map_or(0, Vec::len),
        r["total_points"],
        r["min"].as_f64().unwrap_or(f64::NAN),
        r["max"].as_f64().unwrap_or(f64::NAN),
        r["mean"].as_f64().unwrap_or(f64::NAN),
        r["l2_error"].as_f64().unwrap_or(f64::NAN),
    );

    heading("5. The profile as an MCP image");
    let plot = call(client, "heat_plot", json!({"run": handle}), None).await?;
    let png = plot
        .content
        .iter()
        .find_map(|c| c.as_image().map(|i| i.data.clone()));
    let path = opts
        .plot
        .clone()
        .unwrap_or_else(|| PathBuf::from("heat-profile.png"));
    match png.and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok()) {
        Some(bytes) => match std::fs::write(&path, &bytes) {
            Ok(()) => println!("  saved {} ({} bytes)", path.display(), bytes.len()),
            Err(e) => println!("  could not save the plot: {e}"),
        },
        None => println!("  no image in the result"),
    }

    heading("6. The solver's log, framed as untrusted data");
    let log = call(client, "heat_log", json!({"run": handle, "lines": 3}), None).await?;
    let l = &data(&log)["log"];
    println!("  notice: {}", l["notice"].as_str().unwrap_or(""));
    for line in l["data"].as_array().into_iter().flatten() {
        println!("  | {}", line.as_str().unwrap_or(""));
    }

    heading("7. Hostile calls, each refused with a fixed error that echoes nothing");
    let hostile: [(&str, &str, Value); 6] = [
        (
            "path-traversal handle",
            "heat_status",
            json!({"run": "../../etc/passwd"}),
        ),
        (
            "NaN-like string for a number",
            "heat_start",
            json!({"cells": "NaN", "steps": 10, "length": 1, "diffusivity": 1, "dt": 1e-6}),
        ),
        (
            "bool for a number",
            "heat_start",
            json!({"cells": true, "steps": 10, "length": 1, "diffusivity": 1, "dt": 1e-6}),
        ),
        (
            "oversized mesh (cost ceiling)",
            "heat_start",
            json!({"cells": 200000, "steps": 10000000, "length": 1, "diffusivity": 1e-9, "dt": 1e-6}),
        ),
        (
            "unstable time step",
            "heat_start",
            json!({"cells": 1000, "steps": 100, "length": 1, "diffusivity": 1, "dt": 0.01}),
        ),
        (
            "unknown key",
            "heat_start",
            json!({"cells": 100, "steps": 10, "length": 1, "diffusivity": 1, "dt": 1e-6, "shell": "rm -rf /"}),
        ),
    ];
    for (what, tool, args) in hostile {
        let r = call_raw(client, tool, args, None).await?;
        let text = r
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        let verdict = if r.is_error == Some(true) {
            "->"
        } else {
            "ACCEPTED (a bug):"
        };
        println!("  {what:<32} {verdict} {text}");
        if r.is_error != Some(true) {
            return Err(StartError::because(
                "hostile call",
                "a hostile call was accepted",
            ));
        }
    }

    heading("8. Clean up: deleting a run asks the person first");
    let _ = call(client, "heat_delete", json!({"run": handle}), None).await?;
    let gone = call_raw(client, "heat_status", json!({"run": handle}), None).await?;
    println!(
        "  deleted; the handle now answers like any unknown one: {}",
        gone.content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.as_str())
            .unwrap_or("")
    );
    Ok(())
}

fn heading(s: &str) {
    println!("\n{s}");
}

fn data(r: &CallToolResult) -> &Value {
    r.structured_content
        .as_ref()
        .map_or(&Value::Null, |v| &v["data"])
}

async fn call_raw(
    client: &Client,
    tool: &'static str,
    args: Value,
    progress: Option<i64>,
) -> Result<CallToolResult, StartError> {
    let Value::Object(args) = args else {
        return Err(StartError::because("demo", "arguments must be an object"));
    };
    let mut params = CallToolRequestParams::new(tool).with_arguments(args);
    if let Some(token) = progress {
        params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
            NumberOrString::Number(token),
        )));
    }
    client
        .call_tool(params)
        .await
        .map_err(|e| StartError::because(tool, e))
}

async fn call(
    client: &Client,
    tool: &'static str,
    args: Value,
    progress: Option<i64>,
) -> Result<CallToolResult, StartError> {
    let r = call_raw(client, tool, args, progress).await?;
    if r.is_error == Some(true) {
        let text = r
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        return Err(StartError::because(tool, format!("tool error: {text}")));
    }
    Ok(r)
}
