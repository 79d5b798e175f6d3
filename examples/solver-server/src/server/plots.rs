//! The figures of `heat_plot` and `heat_sweep_plot`.

use super::*;

/// The profile plot of one run: u over x, the exact solution dashed where
/// there is one, the run's parameters in the title, the errors and the
/// diffusivity in the caption. Every text is built from fixed words and
/// validated numbers.
pub(super) fn profile_figure(r: &SolverResult) -> plot::Figure<'_> {
    let mut series = vec![plot::Series {
        name: plot::Text::new("numerical"),
        x: &r.x,
        y: &r.u,
        rgb: [200, 40, 40],
        stroke: plot::Stroke::Solid,
    }];
    if let Some(exact) = &r.exact {
        series.push(plot::Series {
            name: plot::Text::new("exact"),
            x: &r.x,
            y: exact,
            rgb: [20, 20, 20],
            stroke: plot::Stroke::Dashed,
        });
    }
    let mut caption = match (r.l2_error, r.max_error) {
        (Some(l2), Some(max)) => plot::Text::new("L2 error against the exact solution: ")
            .num(l2)
            .lit(" (max ")
            .num(max)
            .lit(")"),
        _ => plot::Text::new("No exact solution for this initial profile and boundary"),
    };
    if let Some(alpha) = r.alpha {
        caption = caption.lit(";  diffusivity ").num(alpha).lit(" m²/s");
    }
    caption = caption.lit(";  Courant ").num(r.courant);
    plot::Figure {
        title: title(r, plot::Text::new("Heat profile: ")),
        x: plot::Axis::linear(plot::Text::new("x [m]")),
        y: plot::Axis::linear(plot::Text::new("u (temperature)")),
        series,
        markers: Vec::new(),
        caption: Some(caption),
    }
}

/// The plot of a sweep: one profile per finished point (`points`, in sweep
/// order, with their diffusivities), coloured from blue (lowest) to red.
pub(super) fn sweep_figure(points: &[(f64, SolverResult)], total: usize) -> plot::Figure<'_> {
    let n = points.len();
    let series = points
        .iter()
        .enumerate()
        .map(|(i, (alpha, r))| plot::Series {
            name: plot::Text::new("diffusivity ").num(*alpha).lit(" m²/s"),
            x: &r.x,
            y: &r.u,
            rgb: ramp(if n > 1 {
                i as f64 / (n - 1) as f64
            } else {
                0.0
            }),
            stroke: plot::Stroke::Solid,
        })
        .collect();
    let first = &points[0].1;
    let caption = plot::Text::new("Points with a result: ")
        .int(n as u64)
        .lit(" of ")
        .int(total as u64)
        .lit(" (running or deleted points are left out)");
    plot::Figure {
        title: title(first, plot::Text::new("Diffusivity sweep: ")),
        x: plot::Axis::linear(plot::Text::new("x [m]")),
        y: plot::Axis::linear(plot::Text::new("u (temperature)")),
        series,
        markers: Vec::new(),
        caption: Some(caption),
    }
}

/// `prefix` followed by the run's cells, steps, final time and boundary.
pub(super) fn title(r: &SolverResult, prefix: plot::Text) -> plot::Text {
    let t = prefix
        .int(r.cells)
        .lit(" cells, ")
        .int(r.steps)
        .lit(" steps, t = ")
        .num(r.t_final)
        .lit(" s");
    match r.boundary() {
        Some(Boundary::Dirichlet) => t.lit(", Dirichlet ends (u = 0)"),
        Some(Boundary::Neumann) => t.lit(", Neumann ends (no flux)"),
        None => t,
    }
}

/// A colour from blue (0) through purple to red (1).
pub(super) fn ramp(f: f64) -> [u8; 3] {
    let f = f.clamp(0.0, 1.0);
    let mix = |a: f64, b: f64| (a + (b - a) * f).round() as u8;
    [mix(30.0, 210.0), mix(80.0, 40.0), mix(200.0, 40.0)]
}

/// A plot tool's answer: the PNG checked by `Image::png`, sent as image
/// content with its size.
pub(super) fn plot_output(run: &RunDir, png: Vec<u8>) -> Result<Output<PlotInfo>, ToolError> {
    let image = Image::png(png).map_err(ToolError::internal)?;
    Ok(Output::new(PlotInfo {
        run_handle: run.handle().to_string(),
        width: image.width(),
        height: image.height(),
        bytes: image.as_bytes().len() as u64,
    })
    .with_image(image))
}

pub(super) fn plot_error(e: plot::PlotError) -> ToolError {
    match e {
        plot::PlotError::NothingToPlot => {
            ToolError::rejected("the run's result has nothing to plot")
        }
        e => ToolError::internal(e),
    }
}
