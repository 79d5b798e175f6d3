//! Cost of framing untrusted text, against the unavoidable work on the same
//! input in the same run: counting its lines (a totals pass) and a lossy
//! UTF-8 decode of the whole input.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hardened_mcp::deck::{Deck, DeckText, KeyValue};
use hardened_mcp::untrusted::{TextLimits, Untrusted};

fn log_10mb() -> Vec<u8> {
    let mut log = Vec::with_capacity(10 * 1024 * 1024 + 64);
    let line = b"step 000123 residual 1.234e-05 dt 1.0e-03 \x1b[32mok\x1b[0m\n";
    while log.len() < 10 * 1024 * 1024 {
        log.extend_from_slice(line);
    }
    log
}

fn untrusted(c: &mut Criterion) {
    let log = log_10mb();
    let mut g = c.benchmark_group("untrusted_10MB");
    g.sample_size(20);
    g.bench_function("baseline_count_lines", |b| {
        b.iter(|| black_box(&log).iter().filter(|b| **b == b'\n').count())
    });
    g.bench_function("baseline_from_utf8_lossy", |b| {
        b.iter(|| String::from_utf8_lossy(black_box(&log)).len())
    });
    g.bench_function("text_head_default", |b| {
        b.iter(|| Untrusted::text(black_box(&log)))
    });
    g.bench_function("text_tail_default", |b| {
        b.iter(|| Untrusted::text_tail(black_box(&log), TextLimits::DEFAULT))
    });
    g.finish();
}

fn deck(c: &mut Criterion) {
    c.bench_function("deck_keyvalue_8_values_render", |b| {
        b.iter(|| {
            let mut deck = Deck::<KeyValue>::new();
            deck.set("cells", black_box(200_u32))
                .and_then(|d| d.set("steps", black_box(100_000_u64)))
                .and_then(|d| d.set("length", black_box(1.25)))
                .and_then(|d| d.set("courant", black_box(0.45)))
                .and_then(|d| d.set("t_left", black_box(300.0)))
                .and_then(|d| d.set("t_right", black_box(273.15)))
                .and_then(|d| d.set("alpha", black_box(1.1e-4)))
                .and_then(|d| d.set("label", DeckText::new(black_box("rod A, run 3"))))
                .unwrap();
            deck.render().unwrap()
        })
    });
}

criterion_group!(benches, untrusted, deck);
criterion_main!(benches);
