//! The tools: bounds, cost and checks of each, and its body.

use super::*;

// ---- the tools -------------------------------------------------------------

#[hardened_tools]
impl HeatServer {
    /// Start a 1-D heat-diffusion run (explicit finite differences for
    /// u_t = α·u_xx on [0, L]). Returns the run handle at once; the run
    /// continues in the background: follow it with heat_wait (which sends MCP
    /// progress notifications when the call carries a progress token) or
    /// heat_status.
    #[hardened_tool(
        max_cost = 2e9,
        units = "cell-steps",
        cost = spec.cells as f64 * spec.steps as f64,
        confirm_above = 1e8,
        timeout_s = 10,
        scopes = "heat:write"
    )]
    pub async fn heat_start(
        &self,
        ctx: ToolContext,
        #[args] spec: Spec,
    ) -> Result<Output<RunStarted>, ToolError> {
        let Spec {
            cells, steps, dt, ..
        } = spec;
        let JobStarted {
            run_handle,
            containment,
        } = self.jobs.start(ctx.caller(), &spec).await?;
        Ok(Output::new(RunStarted {
            run_handle,
            containment,
            cost: f64::from(cells) * steps as f64,
            courant: spec.courant(),
            t_final: dt * steps as f64,
        }))
    }

    /// Run a 1-D heat-diffusion simulation to its end and answer its
    /// result: as an MCP task for a client that takes tasks (follow it
    /// with tasks/get), else waiting at most 100 s (then follow the run
    /// handle with heat_wait). At most 20 000 cells: the whole profile is
    /// in the answer (heat_start runs larger grids).
    #[hardened_tool(
        max_cost = 2e9,
        units = "cell-steps",
        cost = spec.cells as f64 * spec.steps as f64,
        confirm_above = 1e8,
        check(spec.cells <= 20_000,
              "heat_solve answers the whole profile: at most 20000 cells (use heat_start for more)"),
        timeout_s = 110,
        task,
        scopes = "heat:write"
    )]
    pub async fn heat_solve(
        &self,
        ctx: ToolContext,
        #[args] spec: Spec,
    ) -> Result<Output<JobOutcome<SolverResult>>, ToolError> {
        self.jobs.run(&ctx, &spec, Duration::from_secs(100)).await
    }

    /// Sweep the diffusivity over `points` evenly spaced values from
    /// `diffusivity_start` to `diffusivity_stop`: one run per point, run one
    /// after the other in the background. Returns the runs' handles at once.
    #[hardened_tool(
        max_cost = 4e9,
        units = "cell-steps",
        cost = cells as f64 * steps as f64 * points as f64,
        confirm_above = 1e8,
        check(diffusivity_start < diffusivity_stop, "diffusivity_start must be below diffusivity_stop"),
        check(courant(diffusivity_stop, dt, length, cells) <= 0.5,
              "unstable time step at diffusivity_stop: diffusivity * dt / dx^2 must not exceed 0.5"),
        timeout_s = 10,
        scopes = "heat:write"
    )]
    #[allow(clippy::too_many_arguments)]
    pub async fn heat_sweep(
        &self,
        ctx: ToolContext,
        #[bounded(min = 8, max = 200_000, description = "Grid cells")] cells: u32,
        #[bounded(min = 1, max = 10_000_000, description = "Time steps")] steps: u64,
        #[bounded(min = 1e-3, max = 1e3, units = "m", description = "Rod length")] length: f64,
        #[bounded(exclusive_min = 0.0, max = 1e3, units = "s", description = "Time step")] dt: f64,
        #[bounded(min = 1e-9, max = 1e3, units = "m^2/s")] diffusivity_start: f64,
        #[bounded(min = 1e-9, max = 1e3, units = "m^2/s")] diffusivity_stop: f64,
        #[bounded(min = 2, max = 16, description = "Sweep points")] points: u32,
        #[bounded(default = "dirichlet")] boundary: Boundary,
        #[bounded(default = "sine")] initial: Initial,
    ) -> Result<Output<SweepStarted>, ToolError> {
        let mut planned = Vec::new();
        for i in 0..points {
            let f = f64::from(i) / f64::from(points - 1);
            let spec = Spec {
                cells,
                steps,
                length,
                diffusivity: diffusivity_start + f * (diffusivity_stop - diffusivity_start),
                dt,
                boundary,
                initial,
                mode: 1,
            };
            planned.push((self.jobs.plan(ctx.caller()).await?, spec));
        }
        let points_out: Vec<SweepPoint> = planned
            .iter()
            .map(|(run, s)| SweepPoint {
                run_handle: run.handle().to_string(),
                diffusivity: s.diffusivity,
            })
            .collect();
        let record = SweepRecord {
            points: points_out
                .iter()
                .map(|p| SweepRecordPoint {
                    run_handle: p.run_handle.clone(),
                    diffusivity: p.diffusivity,
                })
                .collect(),
        };
        let record = serde_json::to_vec(&record).map_err(ToolError::internal)?;
        for (run, _) in &planned {
            run.dir().write_atomic(&SWEEP_FILE, &record)?;
        }
        // One point at a time, in the background.
        self.jobs.run_sequence(planned);
        Ok(Output::new(SweepStarted {
            points: points_out,
            cost: f64::from(cells) * steps as f64 * f64::from(points),
        }))
    }

    /// The result of a finished run: the profile at `max_points` evenly
    /// spaced nodes (or all of them), summary statistics, and the error
    /// against the exact solution where one is known.
    #[hardened_tool(max_cost = 10000, units = "points", cost = max_points as f64, annotations(read_only), scopes = "heat:read")]
    pub async fn heat_result(
        &self,
        ctx: ToolContext,
        run: RunDir,
        #[bounded(min = 2, max = 10000, default = 101)] max_points: u32,
    ) -> Result<Output<RunResult>, ToolError> {
        let r = self.jobs.result(ctx.caller(), &run).await?;
        let (min, max, mean) = summary_stats(&r.u);
        let all: Vec<ProfilePoint> =
            r.x.iter()
                .zip(&r.u)
                .map(|(&x, &u)| ProfilePoint { x, u })
                .collect();
        // A table of a smooth profile: evenly spaced nodes (the extremes
        // are in `min` and `max`).
        let d = paging::sample(&all, max_points);
        Ok(Output::new(RunResult {
            run_handle: run.handle().to_string(),
            cells: r.cells,
            steps: r.steps,
            t_final: r.t_final,
            courant: r.courant,
            decimated: d.truncated,
            total_points: d.total,
            profile: d.points,
            min,
            max,
            mean,
            l2_error: r.l2_error,
            max_error: r.max_error,
        })
        .with_run_file(&RESULT_RESOURCE, &run))
    }

    /// A PNG plot of a finished run's temperature profile (image content):
    /// u over x with labelled axes, the run's parameters in the title, the
    /// exact solution as a second series where one is known, and the L2
    /// error in the caption.
    #[hardened_tool(
        max_cost = 1,
        units = "plots",
        cost = 1.0,
        annotations(read_only),
        scopes = "heat:read"
    )]
    pub async fn heat_plot(
        &self,
        ctx: ToolContext,
        run: RunDir,
    ) -> Result<Output<PlotInfo>, ToolError> {
        let r = self.jobs.result(ctx.caller(), &run).await?;
        let png = plot::render(&profile_figure(&r)).map_err(plot_error)?;
        plot_output(&run, png)
    }

    /// A PNG plot of a whole sweep (image content): one profile per point
    /// that has a result, coloured by diffusivity, with a legend of the
    /// diffusivities. `run` is any point of the sweep; points deleted or
    /// still running are left out.
    #[hardened_tool(
        max_cost = 1,
        units = "plots",
        cost = 1.0,
        annotations(read_only),
        scopes = "heat:read"
    )]
    pub async fn heat_sweep_plot(
        &self,
        ctx: ToolContext,
        run: RunDir,
    ) -> Result<Output<PlotInfo>, ToolError> {
        let record = match run.read_bounded(&SWEEP_FILE, MAX_SWEEP_BYTES) {
            Ok(b) => b,
            Err(hardened_mcp::runs::RunError::FileNotFound) => {
                return Err(ToolError::rejected("the run is not part of a sweep"));
            }
            Err(e) => return Err(e.into()),
        };
        let record: SweepRecord = serde_json::from_slice(&record)
            .map_err(|e| ToolError::internal(format_args!("sweep record: {e}")))?;
        if record.points.len() > MAX_SWEEP_POINTS
            || record.points.iter().any(|p| !p.diffusivity.is_finite())
        {
            return Err(ToolError::internal("sweep record: over its bounds"));
        }
        let mut done = Vec::new();
        for point in &record.points {
            // Resolved as the caller: the record can only name the caller's
            // own runs, whatever it says.
            let Ok(dir) = self.jobs.runs().resolve(&point.run_handle, ctx.caller()) else {
                continue;
            };
            match self.jobs.result(ctx.caller(), &dir).await {
                Ok(r) => done.push((point.diffusivity, r)),
                Err(ToolError::Rejected(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        if done.is_empty() {
            return Err(ToolError::rejected(
                "no point of the sweep has a result yet",
            ));
        }
        let png = plot::render(&sweep_figure(&done, record.points.len())).map_err(plot_error)?;
        plot_output(&run, png)
    }
}
