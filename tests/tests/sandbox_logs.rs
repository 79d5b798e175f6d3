//! Bounded log capture: 200 MiB on each of stdout and stderr at once. The
//! buffers stay within their ceiling, head and tail are kept, totals are
//! exact, nothing deadlocks; and the progress protocol on stdout arrives.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sandbox_support/mod.rs"]
mod support;

use std::time::Duration;

use hardened_mcp::sandbox::{Limits, ProgressReport, RunRequest};
use support::*;
use tokio_util::sync::CancellationToken;

const MIB: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_mib_per_stream_is_bounded_and_exact() {
    let sb = sandbox();
    let (_dir, rundir) = run_dir();
    let limits = Limits {
        wall_time: Duration::from_secs(120),
        log_head: 4096,
        log_tail: 8192,
        ..Limits::default()
    };
    let run = sb
        .launch(
            &caller("logs"),
            &rundir,
            RunRequest::new("spam").arg(MIB.to_string()).limits(limits),
            &CancellationToken::new(),
        )
        .unwrap();
    let (out_log, err_log) = (run.stdout_log(), run.stderr_log());
    let o = run.wait().await;
    assert!(o.success(), "{o:?}");
    assert!(o.logs_complete);
    let expected = (MIB as u64) * (1 << 20) + 18;
    for (log, tag, live) in [(&o.stdout, "OUT", &out_log), (&o.stderr, "ERR", &err_log)] {
        assert_eq!(log.total_bytes, expected, "{tag}");
        assert!(log.truncated);
        assert_eq!(log.head.len(), 4096);
        assert_eq!(log.tail.len(), 8192);
        assert!(
            log.head
                .as_untrusted_bytes()
                .starts_with(format!("HEAD-{tag}\n").as_bytes())
        );
        assert!(
            log.tail
                .as_untrusted_bytes()
                .ends_with(format!("TAIL-{tag}\n").as_bytes())
        );
        // Capacity never shrinks, so the final figure is the peak.
        let (reserved, ceiling) = live.with(|b| (b.reserved_bytes(), b.reserved_ceiling()));
        assert!(reserved <= ceiling, "{tag}: {reserved} > {ceiling}");
        assert!(ceiling < 64 << 10);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_output_is_kept_whole() {
    let (_dir, rundir) = run_dir();
    let o = sandbox()
        .run(
            &caller("logs"),
            &rundir,
            RunRequest::new("spam").arg("0"),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(o.stdout.head.as_untrusted_bytes(), b"HEAD-OUT\nTAIL-OUT\n");
    assert!(o.stdout.tail.is_empty() && !o.stdout.truncated);
    assert_eq!(o.stderr.total_bytes, 18);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_lines_are_published() {
    let (_dir, rundir) = run_dir();
    let run = sandbox()
        .launch(
            &caller("progress"),
            &rundir,
            RunRequest::new("escape").args(["progress", "5"]),
            &CancellationToken::new(),
        )
        .unwrap();
    let mut rx = run.progress();
    let seen = tokio::spawn(async move {
        let mut seen = Vec::new();
        while rx.changed().await.is_ok() {
            if let Some(r) = *rx.borrow_and_update() {
                seen.push(r);
            }
        }
        seen
    });
    let o = run.wait().await;
    assert!(o.success());
    let seen = tokio::time::timeout(Duration::from_secs(5), seen)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.last(), Some(&ProgressReport { done: 5, total: 5 }));
    assert!(seen.windows(2).all(|w| w[0].done < w[1].done));
}
