//! The run table: validated specs, solver decks, launching through the
//! sandbox, persisted status.

use super::*;

/// One validated simulation.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec {
    pub(super) cells: u32,
    pub(super) steps: u64,
    pub(super) length: f64,
    pub(super) diffusivity: f64,
    pub(super) dt: f64,
    pub(super) boundary: Boundary,
    pub(super) initial: Initial,
    pub(super) mode: u32,
}

impl Spec {
    pub(super) fn courant(&self) -> f64 {
        courant(self.diffusivity, self.dt, self.length, self.cells)
    }

    pub(super) fn deck(&self) -> Result<Vec<u8>, ToolError> {
        let mut deck = Deck::<KeyValue>::new();
        deck.set("cells", self.cells)?
            .set("steps", self.steps)?
            .set("length", self.length)?
            .set("alpha", self.diffusivity)?
            .set("dt", self.dt)?
            .set("boundary", self.boundary)?
            .set("initial", self.initial)?
            .set("mode", self.mode)?;
        Ok(deck.render()?)
    }
}

/// Where a run is in its life, as the server tracks it.
#[derive(Debug, Clone)]
pub(super) enum Slot {
    /// A sweep point waiting for the previous point to finish.
    Queued,
    /// Launched as this sandbox job.
    Job(JobId),
    /// Never launched: cancelled while queued, or the sweep it belonged to
    /// stopped early.
    Abandoned,
    /// Its launch failed (logged with the reason).
    NotLaunched,
}

/// The solver's result file, as the server reads it.
#[derive(Debug, Deserialize)]
pub(super) struct SolverResult {
    pub(super) cells: u64,
    pub(super) steps: u64,
    pub(super) t_final: f64,
    pub(super) courant: f64,
    pub(super) x: Vec<f64>,
    pub(super) u: Vec<f64>,
    pub(super) l2_error: Option<f64>,
    pub(super) max_error: Option<f64>,
    /// "dirichlet" or "neumann" (anything else is not drawn).
    #[serde(default)]
    pub(super) boundary: Option<String>,
    /// The diffusivity, m²/s.
    #[serde(default)]
    pub(super) alpha: Option<f64>,
    /// The exact solution at the nodes, where one is known.
    #[serde(default)]
    pub(super) exact: Option<Vec<f64>>,
}

impl SolverResult {
    /// The boundary, as one of the server's own tokens.
    pub(super) fn boundary(&self) -> Option<Boundary> {
        self.boundary.as_deref().and_then(Boundary::from_token)
    }
}

/// A sweep's record ([`SWEEP_FILE`]): its points in order.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SweepRecord {
    pub(super) points: Vec<SweepRecordPoint>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SweepRecordPoint {
    pub(super) run_handle: String,
    pub(super) diffusivity: f64,
}

// ---- construction --------------------------------------------------------

impl HeatServer {
    /// A server on `runs`, launching `heat1d` through `launcher` (whose
    /// registry must hold [`SOLVER_ID`]).
    pub fn new(runs: RunRoot, launcher: Launcher) -> Self {
        Self {
            inner: Arc::new(Inner {
                runs,
                launcher,
                jobs: Jobs::new(1024),
                slots: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The MCP server: these tools, under this server's name and
    /// instructions; or every startup fault of the tool declarations.
    pub fn into_mcp(self) -> Result<Server<Self>, RouterError> {
        let tools = Self::try_hardened_tool_router()?;
        Ok(
            Server::new("solver-server", env!("CARGO_PKG_VERSION"), self, tools)
                .instructions(INSTRUCTIONS),
        )
    }

    /// The containment level solver runs get on this host.
    pub fn containment(&self) -> Containment {
        self.inner.launcher.sandbox().containment()
    }

    /// Starts the run root's expiry sweeper: every `every`, a bounded
    /// sweep (at most `budget` index entries) on the blocking pool. A run
    /// queued in a sweep or whose job still runs is never removed. Stops
    /// when the returned handle is dropped.
    pub fn start_expiry_sweeper(
        &self,
        every: Duration,
        budget: usize,
    ) -> tokio_util::task::AbortOnDropHandle<()> {
        let inner = Arc::clone(&self.inner);
        let is_live: Arc<dyn Fn(&hardened_mcp::runs::RunHandle) -> bool + Send + Sync> =
            Arc::new(move |h| {
                let slots = inner.slots.lock().unwrap_or_else(PoisonError::into_inner);
                match slots.get(h.as_str()) {
                    Some(Slot::Queued) => true,
                    Some(Slot::Job(job)) => inner.jobs.is_live(job),
                    _ => false,
                }
            });
        let runs = self.inner.runs.clone();
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                match runs.sweep_expired_async(budget, Arc::clone(&is_live)).await {
                    Ok(r) if r.removed > 0 => {
                        tracing::info!(
                            removed = r.removed,
                            examined = r.examined,
                            "expired runs removed"
                        );
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "expiry sweep failed"),
                }
            }
        }))
    }

    pub(super) fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The run's slot. A run this process has no slot for whose Slurm job
    /// is still queued or running (the server restarted) is re-attached
    /// here and tracked like a run this process launched.
    pub(super) fn slot(&self, caller: &CallerId, run: &RunDir) -> Option<Slot> {
        let mut slots = self.slots();
        if let Some(s) = slots.get(run.handle().as_str()) {
            return Some(s.clone());
        }
        let running = match self
            .inner
            .launcher
            .reattach(caller, run, &CancellationToken::new())
        {
            Ok(Some(r)) => r,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "a run's cluster job could not be re-attached");
                return None;
            }
        };
        let sink = run
            .try_clone()
            .ok()
            .map(|r| Arc::new(r) as Arc<dyn StatusSink>);
        let job = self.inner.jobs.start(caller, running, sink).ok()?;
        slots.insert(run.handle().as_str().to_owned(), Slot::Job(job.clone()));
        Some(Slot::Job(job))
    }

    /// Writes the deck and launches the solver detached in `run`.
    pub(super) fn launch(
        &self,
        caller: &CallerId,
        run: RunDir,
        spec: &Spec,
    ) -> Result<(), ToolError> {
        run.write_atomic(&DECK_FILE, &spec.deck()?)?;
        // The heat solver is one small process: its envelope is narrowed
        // well below the server's defaults.
        let limits = Limits {
            wall_time: RUN_WALL_TIME,
            memory: 256 << 20,
            processes: 4,
            disk_bytes: 64 << 20,
            disk_files: 256,
            tmp_size: 1 << 20,
            shm_size: 1 << 20,
            ..Limits::default()
        };
        let request = RunRequest::new(SOLVER_ID)
            .args(["--input", DECK_FILE.as_str(), "--output", "out/result.json"])
            .write_only_in(OUT_DIR)
            .limits(limits);
        let running =
            self.inner
                .launcher
                .launch(caller, &run, request, &CancellationToken::new())?;
        let handle = run.handle().as_str().to_owned();
        let job = self
            .inner
            .jobs
            .start(caller, running, Some(Arc::new(UsageSink(run))))?;
        self.slots().insert(handle, Slot::Job(job));
        Ok(())
    }

    pub(super) fn status_of(&self, caller: &CallerId, run: &RunDir) -> RunStatus {
        let mut status =
            RunStatus::unknown(run.handle().to_string(), self.containment().to_string());
        match self.slot(caller, run) {
            Some(Slot::Queued) => status.state = RunState::Queued,
            Some(Slot::Abandoned) => status.state = RunState::Cancelled,
            Some(Slot::NotLaunched) => status.state = RunState::Failed,
            Some(Slot::Job(job)) => match self.inner.jobs.status(caller, &job) {
                Ok(js) => match js.state {
                    JobState::Running { elapsed, progress } => {
                        status.state = RunState::Running;
                        status.wall_seconds = Some(elapsed.as_secs_f64());
                        status.progress = progress.map(|p| StepProgress {
                            done: p.done,
                            total: p.total,
                        });
                    }
                    JobState::Queued { elapsed } => {
                        status.state = RunState::Queued;
                        status.wall_seconds = Some(elapsed.as_secs_f64());
                    }
                    JobState::Finished(outcome) => fill_outcome(&mut status, &outcome),
                },
                Err(_) => fill_persisted(&mut status, run),
            },
            None => fill_persisted(&mut status, run),
        }
        status
    }
}

/// The job summary the sandbox persists in the run directory
/// (`job-status.json`), as far as a status report needs it.
#[derive(Deserialize)]
pub(super) struct PersistedJob {
    pub(super) state: String,
    #[serde(default)]
    pub(super) termination: Option<String>,
    #[serde(default)]
    pub(super) code: Option<i32>,
    #[serde(default)]
    pub(super) success: bool,
    #[serde(default)]
    pub(super) timed_out: bool,
    #[serde(default)]
    pub(super) cancelled: bool,
    #[serde(default)]
    pub(super) limit: Option<String>,
    #[serde(default)]
    pub(super) wall_ms: Option<u64>,
    #[serde(default)]
    pub(super) cpu_ms: Option<u64>,
}

/// Largest `job-status.json` read.
pub(super) const MAX_JOB_STATUS_BYTES: usize = 4096;

/// A run this server process has no job for (it restarted, or the job table
/// evicted the finished job): the state persisted in the run directory, if
/// the run finished. A run persisted as still running was killed with the
/// server that ran it and stays `unknown`.
pub(super) fn fill_persisted(status: &mut RunStatus, run: &RunDir) {
    let Ok(bytes) = run.read_bounded(&JOB_STATUS_FILE, MAX_JOB_STATUS_BYTES) else {
        return;
    };
    let Ok(job) = serde_json::from_slice::<PersistedJob>(&bytes) else {
        tracing::warn!(run = %run.handle(), "unreadable job status file");
        return;
    };
    if job.state != "finished" {
        return;
    }
    status.state = finished_state(job.cancelled, job.timed_out, job.success);
    match job.termination.as_deref() {
        Some("exited") => status.exit_code = job.code,
        Some("signaled") => status.signal = job.code,
        _ => {}
    }
    status.limit = job
        .limit
        .as_deref()
        .and_then(LimitHit::from_token)
        .map(|l| l.describe().to_owned());
    status.wall_seconds = job.wall_ms.map(|ms| ms as f64 / 1000.0);
    status.cpu_seconds = job.cpu_ms.map(|ms| ms as f64 / 1000.0);
}

/// The state of a finished run, live or persisted: a cancel or a timeout
/// says why it ended, before its exit status does.
pub(super) fn finished_state(cancelled: bool, timed_out: bool, success: bool) -> RunState {
    if cancelled {
        RunState::Cancelled
    } else if timed_out {
        RunState::TimedOut
    } else if success {
        RunState::Succeeded
    } else {
        RunState::Failed
    }
}

pub(super) fn fill_outcome(status: &mut RunStatus, o: &Outcome) {
    status.state = finished_state(o.cancelled, o.timed_out, o.success());
    match o.termination {
        Termination::Exited(code) => status.exit_code = Some(code),
        Termination::Signaled(sig) => status.signal = Some(sig),
        Termination::Killed | Termination::Unknown => {}
    }
    status.limit = o.limit.map(|l| l.describe().to_owned());
    status.wall_seconds = Some(o.wall_time.as_secs_f64());
    status.cpu_seconds = o.cpu_time.map(|d| d.as_secs_f64());
}

pub(super) fn summary_stats(u: &[f64]) -> (f64, f64, f64) {
    let min = u.iter().copied().fold(f64::INFINITY, f64::min);
    let max = u.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = u.iter().sum::<f64>() / u.len().max(1) as f64;
    (min, max, mean)
}

/// A run's status sink that also records, when the run ends, the bytes it
/// holds (the run root's byte quota and the shorter retention of finished
/// runs read it). The job table calls it on the blocking pool.
pub(super) struct UsageSink(pub(super) RunDir);

impl StatusSink for UsageSink {
    fn write_status(&self, json: &[u8]) -> std::io::Result<()> {
        self.0.write_status(json)
    }

    fn write_logs(&self, outcome: &hardened_mcp::sandbox::Outcome) -> std::io::Result<()> {
        let logs = self.0.write_logs(outcome);
        if let Err(e) = self.0.record_usage(true) {
            tracing::warn!(error = %e, "run usage not recorded");
        }
        logs
    }
}
