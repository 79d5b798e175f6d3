//! The launch's cost over a bare spawn, measured in pairs: each sandboxed
//! spawn + wait of `/usr/bin/true` is timed next to a bare
//! `tokio::process::Command` spawn + wait of the same binary (alternately
//! first and second), and the result is the median of the pairs'
//! differences with its 95 % confidence interval.
//!
//! Why not criterion's two separate measurements: on a shared host the
//! bare spawn alone drifts by a factor of two within minutes
//! (`docs/benchmarks.md`), so the difference of two medians taken seconds
//! apart mixes the drift into the overhead. A pair is taken within a few
//! milliseconds, under the same load.
//!
//! Each level is measured twice: with the pairs spaced (20 ms idle before
//! each: what the sandbox makes ahead is ready, as on a server that is not
//! saturated) and back to back (the refill of what was made ahead takes
//! the cores from the launches measured, as on a saturated host).
//!
//! ```sh
//! cargo bench --profile release -p hardened-mcp --features sandbox --bench launch_overhead
//! LAUNCH_PAIRS=1000 cargo bench ... # more pairs, a narrower interval
//! LAUNCH_GAP_MS=50 cargo bench ...   # another idle time between spaced pairs
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hardened_mcp::identity::CallerId;
use hardened_mcp::runs::{RunDir, RunRoot};
use hardened_mcp::sandbox::Sandbox;
use tokio_util::sync::CancellationToken;

#[path = "support/levels.rs"]
mod levels;
use levels::{Level, TRUE, bare_true, sandbox, sandboxed_true};

/// Pairs measured per level unless `LAUNCH_PAIRS` says otherwise.
const PAIRS: usize = 400;

/// Pairs run first and not counted (pools filled, caches warm).
const WARM_UP: usize = 40;

/// Idle time before each pair when spaced, unless `LAUNCH_GAP_MS` says
/// otherwise: long enough for what is made ahead to be made again.
const GAP_MS: u64 = 20;

/// How the pairs follow each other.
#[derive(Debug, Clone, Copy)]
enum Pace {
    /// Each pair after an idle time: the pools have refilled (cgroups,
    /// network namespaces), as on a server that is not saturated.
    Spaced(Duration),
    /// One pair right after the other: the pools' refill shares the
    /// cores with the launches measured (a saturated host).
    BackToBack,
}

struct Bench {
    rt: tokio::runtime::Runtime,
    who: CallerId,
    run_dir: RunDir,
    token: CancellationToken,
}

impl Bench {
    fn bare(&self) -> Duration {
        let start = Instant::now();
        self.rt.block_on(bare_true());
        start.elapsed()
    }

    fn sandboxed(&self, sb: &Sandbox) -> Duration {
        let start = Instant::now();
        self.rt
            .block_on(sandboxed_true(sb, &self.who, &self.run_dir, &self.token));
        start.elapsed()
    }

    /// (bare, sandboxed) times of `n` pairs, alternately bare first, each
    /// after `gap` of idle time if given.
    fn pairs(&self, sb: &Sandbox, n: usize, gap: Option<Duration>) -> Vec<(Duration, Duration)> {
        (0..n)
            .map(|i| {
                if let Some(gap) = gap {
                    std::thread::sleep(gap);
                }
                if i % 2 == 0 {
                    let b = self.bare();
                    (b, self.sandboxed(sb))
                } else {
                    let s = self.sandboxed(sb);
                    (self.bare(), s)
                }
            })
            .collect()
    }
}

fn ms(d: f64) -> String {
    format!("{:.3} ms", d * 1e3)
}

fn median(sorted: &[f64]) -> f64 {
    sorted[sorted.len() / 2]
}

fn main() {
    let n = std::env::var("LAUNCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n >= 20)
        .unwrap_or(PAIRS);
    let dir = tempfile::tempdir().unwrap();
    let root = RunRoot::open(dir.path().join("runs")).unwrap();
    let who = CallerId::local();
    let (_handle, run_dir) = root.create(&who).unwrap();
    let bench = Bench {
        rt: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
        who,
        run_dir,
        token: CancellationToken::new(),
    };
    let gap = Duration::from_millis(
        std::env::var("LAUNCH_GAP_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(GAP_MS),
    );
    println!("{n} pairs per level, each a bare spawn + wait and a sandboxed one of {TRUE}");
    for (level, pace) in [
        (Level::Full, Pace::Spaced(gap)),
        (Level::Full, Pace::BackToBack),
        (Level::ProcessGroup, Pace::Spaced(gap)),
        (Level::ProcessGroup, Pace::BackToBack),
    ] {
        let sb = sandbox(level);
        let gap = match pace {
            Pace::Spaced(gap) => Some(gap),
            Pace::BackToBack => None,
        };
        bench.pairs(&sb, WARM_UP, gap);
        let pairs = bench.pairs(&sb, n, gap);
        let mut bare: Vec<f64> = pairs.iter().map(|p| p.0.as_secs_f64()).collect();
        let mut boxed: Vec<f64> = pairs.iter().map(|p| p.1.as_secs_f64()).collect();
        let mut diff: Vec<f64> = pairs
            .iter()
            .map(|(b, s)| s.as_secs_f64() - b.as_secs_f64())
            .collect();
        for v in [&mut bare, &mut boxed, &mut diff] {
            v.sort_by(f64::total_cmp);
        }
        // Ranks of a 95 % interval for the median: n/2 ± 1.96·√n/2
        // (the binomial distribution of the count below the median).
        let half = 0.98 * (n as f64).sqrt();
        let lo = ((n as f64 / 2.0 - half).floor().max(0.0)) as usize;
        let hi = ((n as f64 / 2.0 + half).ceil() as usize).min(n - 1);
        println!(
            "{level:?}, {pace:?}: bare {} sandboxed {} | over bare: median {} (95 % {} to {}), \
             quartiles {} to {}",
            ms(median(&bare)),
            ms(median(&boxed)),
            ms(median(&diff)),
            ms(diff[lo]),
            ms(diff[hi]),
            ms(diff[n / 4]),
            ms(diff[3 * n / 4]),
        );
    }
}
