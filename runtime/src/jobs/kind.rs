//! What a server declares about a solver job, once: how validated
//! arguments become the run's input files and request ([`SolverJob::prepare`]),
//! and the typed result the solver writes ([`SolverJob::Result`],
//! [`SolverJob::RESULT_FILE`], [`SolverJob::check_result`]).

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ToolError;
use crate::runs::FileName;
use crate::sandbox::RunRequest;

/// A solver job: everything the [`JobService`](super::JobService) needs to
/// start runs of one solver and to read their results.
///
/// ```
/// use hardened_mcp::jobs::{Prepared, ResultFile, SolverJob};
/// use hardened_mcp::runs::FileName;
/// use hardened_mcp::sandbox::RunRequest;
/// use hardened_mcp::ToolError;
///
/// const DECK: FileName = FileName::fixed("input.txt");
/// const OUT: FileName = FileName::fixed("out");
///
/// /// The validated arguments of a start call.
/// struct Grid { n: u32 }
///
/// /// What the solver writes to `out/result.json`.
/// #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
/// #[serde(deny_unknown_fields)]
/// struct Solution { iterations: u32, residual: f64 }
///
/// struct Poisson;
///
/// impl SolverJob for Poisson {
///     type Params = Grid;
///     type Result = Solution;
///     const RESULT_FILE: ResultFile = ResultFile::in_dir(OUT, FileName::fixed("result.json"));
///     const PROGRESS_UNIT: &'static str = "iterations";
///
///     fn prepare(&self, grid: &Grid) -> Result<Prepared, ToolError> {
///         let request = RunRequest::new("poisson")
///             .args(["--input", DECK.as_str(), "--output", "out/result.json"])
///             .write_only_in(OUT);
///         Ok(Prepared::new(request).input(DECK, format!("n = {}\n", grid.n)))
///     }
///
///     fn check_result(&self, s: &Solution) -> Result<(), &'static str> {
///         if s.residual.is_finite() && s.residual >= 0.0 { Ok(()) } else { Err("residual out of range") }
///     }
/// }
/// ```
pub trait SolverJob: Send + Sync + 'static {
    /// What a start tool hands over: its arguments after the strict parser
    /// and revalidation (a server type, not a caller's JSON).
    type Params: Send + 'static;

    /// The solver's result file, as the server reads it: parsed strictly
    /// (use `#[serde(deny_unknown_fields)]`), then [`SolverJob::check_result`].
    /// It reaches the model as structured content: it may hold numbers,
    /// booleans, enums and their containers, never free text (the solver
    /// wrote it; a `String` field is a startup fault of the result tool).
    type Result: DeserializeOwned + Serialize + JsonSchema + Send + 'static;

    /// Where the solver writes its result in the run directory (inside the
    /// directory it may write in: see [`RunRequest::write_only_in`]).
    const RESULT_FILE: ResultFile;

    /// The largest result file read; a larger one is refused, never cut.
    const MAX_RESULT_BYTES: usize = 1 << 20;

    /// What the solver's `PROGRESS <done> <total>` lines count (shown with
    /// the progress in status reports and notifications).
    const PROGRESS_UNIT: &'static str = "steps";

    /// The text files of a run a caller may page through, besides its
    /// logs: each under a name of the server's (`<prefix>_file` with
    /// `name`), read as untrusted data. None by default (then that tool is
    /// not mounted).
    const PAGED_FILES: &'static [PagedFile] = &[];

    /// The run for `params`: the request (solver id, argument vector,
    /// limits, the directory it may write in) and the input files written
    /// into the run directory before launch, each atomically. Pure: no file
    /// or process work here, the service does it.
    fn prepare(&self, params: &Self::Params) -> Result<Prepared, ToolError>;

    /// Parses the result file's bytes (at most [`SolverJob::MAX_RESULT_BYTES`]).
    /// The default reads JSON strictly into [`SolverJob::Result`]; a solver
    /// with its own format (a SPICE raw file, HDF5) parses it here. A
    /// refusal is a fixed server text (logged; the caller reads that the
    /// result file is malformed).
    fn parse_result(&self, bytes: &[u8]) -> Result<Self::Result, &'static str> {
        serde_json::from_slice(bytes).map_err(|e| {
            tracing::warn!(error = %e, "a solver's result file is not the declared JSON");
            "not the declared JSON"
        })
    }

    /// Checks a parsed result (ranges, lengths, consistency). A refusal is
    /// a fixed server text; the result is then not served.
    fn check_result(&self, result: &Self::Result) -> Result<(), &'static str> {
        let _ = result;
        Ok(())
    }
}

/// A run ready to launch: its request and the input files (deck, mesh…)
/// the service writes into the fresh run directory first.
#[derive(Debug)]
pub struct Prepared {
    pub(crate) request: RunRequest,
    pub(crate) inputs: Vec<(FileName, Vec<u8>)>,
}

impl Prepared {
    /// A run of `request`, with no input file yet.
    pub fn new(request: RunRequest) -> Self {
        Self {
            request,
            inputs: Vec::new(),
        }
    }

    /// Adds an input file `name` holding `bytes` (a rendered
    /// [`Deck`](crate::deck::Deck), for instance).
    pub fn input(mut self, name: FileName, bytes: impl Into<Vec<u8>>) -> Self {
        self.inputs.push((name, bytes.into()));
        self
    }
}

/// Where a job's result file (or a [`PagedFile`]) is, relative to its run
/// directory.
#[derive(Debug, Clone)]
pub struct ResultFile {
    pub(crate) dir: Option<FileName>,
    pub(crate) name: FileName,
}

impl ResultFile {
    /// Reads the file at this place in `run`, if it holds at most
    /// `max_bytes` bytes.
    pub(crate) async fn read_bounded(
        &self,
        run: &crate::runs::RunDir,
        max_bytes: usize,
    ) -> Result<Vec<u8>, crate::runs::RunError> {
        match &self.dir {
            Some(d) => {
                run.subdir(d)?
                    .read_bounded_async(&self.name, max_bytes)
                    .await
            }
            None => run.read_bounded_async(&self.name, max_bytes).await,
        }
    }

    /// `name`, at the top of the run directory.
    pub const fn new(name: FileName) -> Self {
        Self { dir: None, name }
    }

    /// `dir/name`: the usual place, in the directory the solver may write.
    pub const fn in_dir(dir: FileName, name: FileName) -> Self {
        Self {
            dir: Some(dir),
            name,
        }
    }
}

/// A text file of a run that the life-cycle tool `<prefix>_file` pages
/// through ([`SolverJob::PAGED_FILES`]): a caller names it by `key`, never
/// by a path; its place is the server's.
///
/// ```
/// use hardened_mcp::jobs::{PagedFile, ResultFile};
/// use hardened_mcp::runs::FileName;
///
/// const HISTORY: PagedFile = PagedFile::new(
///     "residuals",
///     ResultFile::in_dir(FileName::fixed("out"), FileName::fixed("residuals.txt")),
/// );
/// ```
#[derive(Debug, Clone)]
pub struct PagedFile {
    pub(crate) key: &'static str,
    pub(crate) file: ResultFile,
}

impl PagedFile {
    /// The file at `file` (a place in the run directory, as for the
    /// result), offered under `key`: 1 to 32 characters of `a`–`z`, `0`–`9`
    /// and `_`, starting with a letter, unique in the job (checked when the
    /// tools are built: a startup fault otherwise).
    pub const fn new(key: &'static str, file: ResultFile) -> Self {
        Self { key, file }
    }

    /// The name callers use.
    pub fn key(&self) -> &'static str {
        self.key
    }
}

/// Why `files` cannot be offered, if they cannot: a key malformed or twice.
pub(crate) fn paged_file_faults(files: &[PagedFile]) -> Vec<String> {
    let mut faults = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let k = f.key.as_bytes();
        let well_formed = (1..=32).contains(&k.len())
            && k[0].is_ascii_lowercase()
            && k.iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_');
        if !well_formed {
            faults.push(format!(
                "paged file key `{}` must be 1 to 32 of a-z, 0-9 and _, starting with a letter",
                f.key.escape_default()
            ));
        }
        if files[..i].iter().any(|g| g.key == f.key) {
            faults.push(format!("paged file key `{}` is declared twice", f.key));
        }
    }
    faults
}
