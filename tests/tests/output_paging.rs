//! Paging helpers agree with a naive model on every input, never exceed
//! their ceilings, and decimation keeps endpoints and extremes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hardened_mcp::paging::{
    MAX_PAGE_LINES, MAX_POINTS, MAX_TAIL_LINES, MIN_POINTS, Page, count_lines, decimate, lines,
    page, tail,
};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn page_matches_slicing(len in 0usize..3000, offset in 0u64..3500, limit in 0u32..1500) {
        let items: Vec<usize> = (0..len).collect();
        let p = page(items.iter().copied(), offset, limit);
        let limit = limit.clamp(1, MAX_PAGE_LINES) as usize;
        let start = (offset as usize).min(len);
        let end = (start + limit).min(len);
        prop_assert_eq!(&p.items, &items[start..end]);
        prop_assert_eq!(p.offset, start as u64);
        prop_assert_eq!(p.total, len as u64);
        prop_assert_eq!(p.truncated, end - start < len);
        prop_assert_eq!(p.next_offset, (end < len).then_some(end as u64));
    }

    #[test]
    fn tail_matches_slicing(len in 0usize..3000, n in 0u32..1500) {
        let items: Vec<usize> = (0..len).collect();
        let t = tail(items.iter().copied(), n);
        let n = n.clamp(1, MAX_TAIL_LINES) as usize;
        let start = len.saturating_sub(n);
        prop_assert_eq!(&t.items, &items[start..]);
        prop_assert_eq!((t.offset, t.total, t.truncated, t.next_offset), (start as u64, len as u64, start > 0, None));
    }

    #[test]
    fn lines_agree_with_str_lines(text in "[a\\n]{0,40}") {
        let ours: Vec<&[u8]> = lines(text.as_bytes()).collect();
        let std: Vec<&[u8]> = text.lines().map(str::as_bytes).collect();
        prop_assert_eq!(&ours, &std);
        prop_assert_eq!(count_lines(text.as_bytes()), std.len() as u64);
    }

    #[test]
    fn decimation_is_bounded_ordered_and_keeps_extremes(
        ys in proptest::collection::vec(-1e6f64..1e6, 0..5000),
        m in 0u32..300,
    ) {
        let d = decimate(&ys, m, |y| *y);
        let cap = m.clamp(MIN_POINTS, MAX_POINTS) as usize;
        prop_assert!(d.points.len() <= cap);
        prop_assert_eq!(d.total, ys.len() as u64);
        prop_assert_eq!(d.truncated, ys.len() > cap);
        prop_assert!(d.indices.windows(2).all(|w| w[0] < w[1]));
        for (p, i) in d.points.iter().zip(&d.indices) {
            prop_assert_eq!(p.to_bits(), ys[*i as usize].to_bits());
        }
        if let (Some(first), Some(last)) = (ys.first(), ys.last()) {
            prop_assert_eq!(d.points.first().unwrap().to_bits(), first.to_bits());
            prop_assert_eq!(d.points.last().unwrap().to_bits(), last.to_bits());
            // With at least one bucket, the global minimum and maximum survive.
            if cap >= 4 {
                let min = ys.iter().copied().fold(f64::INFINITY, f64::min);
                let max = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                prop_assert!(d.points.contains(&min));
                prop_assert!(d.points.contains(&max));
            }
        }
    }
}

#[test]
fn pages_serialize_with_their_schema() {
    let p: Page<String> = page(["a".to_owned(), "b".to_owned(), "c".to_owned()], 1, 1);
    let schema = serde_json::to_value(schemars::schema_for!(Page<String>)).unwrap();
    let instance = serde_json::to_value(&p).unwrap();
    assert!(jsonschema::is_valid(&schema, &instance), "{instance}");
    assert_eq!(instance["next_offset"], 2);
}
