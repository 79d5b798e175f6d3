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

/// How a job's result type is read from its result file
/// ([`SolverJob::parse_result`]'s default). Every `Deserialize` type is read
/// as JSON; a result in the solver's own format implements this by hand
/// and derives no `Deserialize`:
///
/// ```
/// use hardened_mcp::jobs::FromResultFile;
///
/// /// `iterations residual` on one line, as the solver prints it.
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Solution { iterations: u32, residual: f64 }
///
/// impl FromResultFile for Solution {
///     fn from_result_file(bytes: &[u8]) -> Result<Self, &'static str> {
///         let text = std::str::from_utf8(bytes).map_err(|_| "not text")?;
///         let mut words = text.split_whitespace();
///         let mut next = || words.next().ok_or("too few numbers");
///         let iterations = next()?.parse().map_err(|_| "iterations: not a count")?;
///         let residual = next()?.parse().map_err(|_| "residual: not a number")?;
///         Ok(Solution { iterations, residual })
///     }
/// }
/// # assert_eq!(Solution::from_result_file(b"12 1e-9\n").unwrap().iterations, 12);
/// # assert!(Solution::from_result_file(b"12").is_err());
///
/// // ... and is a job's result as it is.
/// # use hardened_mcp::jobs::{Prepared, ResultFile, SolverJob};
/// # use hardened_mcp::runs::FileName;
/// # struct Poisson;
/// impl SolverJob for Poisson {
///     type Params = u32;
///     type Result = Solution;
///     const RESULT_FILE: ResultFile = ResultFile::in_dir(
///         FileName::fixed("out"), FileName::fixed("result.txt"));
/// #   fn prepare(&self, _: &u32) -> Result<Prepared, hardened_mcp::ToolError> { unimplemented!() }
/// }
/// # assert!(Poisson.parse_result(b"3 0.5").is_ok());
/// ```
///
/// A refusal is a fixed text of the server's (logged, never sent: the
/// caller reads that the result file is malformed).
pub trait FromResultFile: Sized {
    /// Reads the whole result file (at most
    /// [`SolverJob::MAX_RESULT_BYTES`]).
    fn from_result_file(bytes: &[u8]) -> Result<Self, &'static str>;
}

impl<T: DeserializeOwned> FromResultFile for T {
    fn from_result_file(bytes: &[u8]) -> Result<Self, &'static str> {
        serde_json::from_slice(bytes).map_err(|e| {
            tracing::warn!(error = %e, "a solver's result file is not the declared JSON");
            "not the declared JSON"
        })
    }
}

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
    ///
    /// The result file is JSON when the type implements `Deserialize`; a
    /// solver's own format (a table of text, a SPICE raw file) is read by an
    /// implementation of [`FromResultFile`] for the type, which then needs
    /// no `Deserialize`.
    type Result: FromResultFile + Serialize + JsonSchema + Send + 'static;

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
    /// with its own format (a SPICE raw file, HDF5) parses it here, or
    /// (simpler, when the job's own state is not needed) in
    /// [`FromResultFile`] for its result type. A refusal is a fixed server
    /// text (logged; the caller reads that the result file is malformed).
    fn parse_result(&self, bytes: &[u8]) -> Result<Self::Result, &'static str> {
        Self::Result::from_result_file(bytes)
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
