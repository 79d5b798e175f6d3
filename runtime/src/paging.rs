//! Bounded readers: hard ceilings, line pages, tails and decimation of
//! numeric series, each reporting totals and whether anything was left out.
//!
//! The ceilings are `u32` constants, the type of the parameters that carry
//! them. A tool declares the same bound on its parameter (`#[bounded(min =
//! 1, max = 1000)] tail_lines: u32`; the attribute takes literals, so the
//! schema is computed at compile time), and the helpers clamp to the
//! constants again, so a caller that skips or loosens the attribute still
//! cannot ask for more.

use schemars::JsonSchema;
use serde::Serialize;

/// Ceiling on the lines of one page (`limit`).
pub const MAX_PAGE_LINES: u32 = 1_000;
/// Ceiling on `tail_lines`.
pub const MAX_TAIL_LINES: u32 = 1_000;
/// Lines returned when a tool does not ask for a number.
pub const DEFAULT_TEXT_LINES: u32 = 100;
/// Ceiling on the bytes of text returned in one result.
pub const MAX_TEXT_BYTES: u32 = 256 * 1024;
/// Bytes of text returned when a tool does not ask for a number.
pub const DEFAULT_TEXT_BYTES: u32 = 16 * 1024;
/// Ceiling on `max_points` of a decimated series.
pub const MAX_POINTS: u32 = 10_000;
/// The fewest points a decimated series keeps (its two endpoints).
pub const MIN_POINTS: u32 = 2;
/// Points returned when a tool does not ask for a number.
pub const DEFAULT_POINTS: u32 = 500;
/// Ceiling on the bytes of a file read before parsing it (the reader must
/// stop there and report truncation, not parse a larger file).
pub const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;

fn clamp(value: u32, min: u32, max: u32) -> usize {
    value.clamp(min, max) as usize
}

/// One page of a sequence, with its position and the total.
///
/// ```
/// use hardened_mcp::paging::page;
///
/// let p = page(["a", "b", "c", "d", "e"], 1, 2);
/// assert_eq!(p.items, ["b", "c"]);
/// assert_eq!((p.offset, p.total, p.truncated, p.next_offset), (1, 5, true, Some(3)));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Page<T> {
    /// The items shown.
    pub items: Vec<T>,
    /// Index of the first item shown in the whole sequence.
    pub offset: u64,
    /// Number of items in the whole sequence.
    pub total: u64,
    /// Whether items of the sequence are left out of `items`.
    pub truncated: bool,
    /// Offset of the next page, if there is one.
    pub next_offset: Option<u64>,
}

/// Items `offset .. offset + limit` of a sequence; `limit` is clamped to
/// `1..=`[`MAX_PAGE_LINES`]. The whole sequence is walked to count it, but
/// only the page is kept.
pub fn page<I: IntoIterator>(items: I, offset: u64, limit: u32) -> Page<I::Item> {
    let limit = clamp(limit, 1, MAX_PAGE_LINES);
    let mut shown = Vec::new();
    let mut total: u64 = 0;
    for item in items {
        if total >= offset && shown.len() < limit {
            shown.push(item);
        }
        total += 1;
    }
    let end = offset.saturating_add(shown.len() as u64);
    Page {
        truncated: (shown.len() as u64) < total,
        next_offset: (end < total).then_some(end),
        items: shown,
        offset: offset.min(total),
        total,
    }
}

/// The last `n` items of a sequence; `n` is clamped to
/// `1..=`[`MAX_TAIL_LINES`]. Memory is bounded by `n`.
///
/// ```
/// use hardened_mcp::paging::tail;
///
/// let t = tail(1..=10, 3);
/// assert_eq!(t.items, [8, 9, 10]);
/// assert_eq!((t.offset, t.total, t.truncated, t.next_offset), (7, 10, true, None));
/// ```
pub fn tail<I: IntoIterator>(items: I, n: u32) -> Page<I::Item> {
    let n = clamp(n, 1, MAX_TAIL_LINES);
    let mut ring = std::collections::VecDeque::with_capacity(n.min(64));
    let mut total: u64 = 0;
    for item in items {
        if ring.len() == n {
            ring.pop_front();
        }
        ring.push_back(item);
        total += 1;
    }
    let shown = ring.len() as u64;
    Page {
        items: ring.into(),
        offset: total - shown,
        total,
        truncated: shown < total,
        next_offset: None,
    }
}

/// The lines of a byte buffer, split at `\n`; a final line feed ends the
/// last line rather than starting an empty one (so `b"a\nb\n"` has two
/// lines and `b""` none). A `\r` before the `\n` is kept.
pub fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let empty = bytes.is_empty();
    body.split(|b| *b == b'\n').filter(move |_| !empty)
}

/// Number of lines of a byte buffer, counted as [`lines`] splits them.
pub fn count_lines(bytes: &[u8]) -> u64 {
    let feeds = bytes.iter().filter(|b| **b == b'\n').count() as u64;
    match bytes.last() {
        None | Some(b'\n') => feeds,
        Some(_) => feeds + 1,
    }
}

/// A numeric series reduced to at most `max_points` points.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Decimated<P> {
    /// The points kept, in their original order.
    pub points: Vec<P>,
    /// The index of each kept point in the original series.
    pub indices: Vec<u64>,
    /// Number of points of the original series.
    pub total: u64,
    /// Whether points were dropped.
    pub truncated: bool,
}

impl<P> Decimated<P> {
    /// The same selection with every point converted, e.g. to
    /// `Option<f64>` so that a non-finite value (which `Output` refuses to
    /// send as a number) is returned as `null`:
    /// `decimated.map(|y| y.is_finite().then_some(y))`.
    pub fn map<Q>(self, f: impl FnMut(P) -> Q) -> Decimated<Q> {
        Decimated {
            points: self.points.into_iter().map(f).collect(),
            indices: self.indices,
            total: self.total,
            truncated: self.truncated,
        }
    }
}

/// Decimates a series to exactly `max_points` points (clamped to
/// [`MIN_POINTS`]`..=`[`MAX_POINTS`]) when it has more, preserving its
/// shape: the right choice for a plot or for finding extremes. For a table
/// of a smooth curve, [`sample`] (evenly spaced) reads better.
///
/// Rule: the first and last points are always kept. The interior is cut
/// into `(max_points - 2) / 2` buckets of (nearly) equal length, and each
/// bucket keeps its minimum and its maximum by `value` (one point when they
/// coincide). The slots left over (one when `max_points` is odd, one per
/// bucket whose minimum and maximum coincide) are filled with the interior
/// points nearest to evenly spaced positions that are not kept already. The
/// result is in the original order. Spikes therefore survive, which a plain
/// stride would drop. Values are compared with [`f64::total_cmp`], so a
/// NaN counts as an extreme and is kept, making a blow-up visible (map it
/// with [`Decimated::map`] before returning it through `Output`, which does
/// not send non-finite numbers). A series of at most `max_points` points is
/// returned whole.
///
/// ```
/// use hardened_mcp::paging::decimate;
///
/// let mut ys: Vec<f64> = (0..1000).map(|i| (i as f64 / 50.0).sin()).collect();
/// ys[500] = 42.0; // a spike
/// let d = decimate(&ys, 20, |y| *y);
/// assert!(d.points.len() <= 20 && d.truncated && d.total == 1000);
/// assert_eq!((d.indices[0], *d.indices.last().unwrap()), (0, 999));
/// assert!(d.points.contains(&42.0));
/// ```
pub fn decimate<P: Clone>(
    points: &[P],
    max_points: u32,
    value: impl Fn(&P) -> f64,
) -> Decimated<P> {
    let n = points.len();
    let m = clamp(max_points, MIN_POINTS, MAX_POINTS);
    if n <= m {
        return Decimated::whole(points);
    }
    // n > m >= 2, so there are at least one interior point and two endpoints.
    let interior = n - 2;
    let buckets = (m - 2) / 2;
    let mut keep: Vec<usize> = Vec::with_capacity(m);
    keep.push(0);
    for k in 0..buckets {
        let start = 1 + bucket_bound(k, interior, buckets);
        let end = 1 + bucket_bound(k + 1, interior, buckets);
        let mut lo = start;
        let mut hi = start;
        for i in start..end {
            let v = value(&points[i]);
            if v.total_cmp(&value(&points[lo])).is_lt() {
                lo = i;
            }
            if v.total_cmp(&value(&points[hi])).is_gt() {
                hi = i;
            }
        }
        if start < end {
            keep.push(lo.min(hi));
            if lo != hi {
                keep.push(lo.max(hi));
            }
        }
    }
    keep.push(n - 1);
    fill_evenly(&mut keep, n, m);
    Decimated::picked(points, &keep)
}

impl<P: Clone> Decimated<P> {
    /// A series returned whole.
    fn whole(points: &[P]) -> Self {
        Self {
            points: points.to_vec(),
            indices: (0..points.len() as u64).collect(),
            total: points.len() as u64,
            truncated: false,
        }
    }

    /// The points at `keep` (sorted indices) of a longer series.
    fn picked(points: &[P], keep: &[usize]) -> Self {
        Self {
            points: keep.iter().map(|&i| points[i].clone()).collect(),
            indices: keep.iter().map(|&i| i as u64).collect(),
            total: points.len() as u64,
            truncated: true,
        }
    }
}

/// Adds to `keep` (sorted, distinct indices into `0..n`, `n > m`) the
/// indices nearest to evenly spaced positions that are not in it yet, until
/// it holds `m`; leaves it sorted.
fn fill_evenly(keep: &mut Vec<usize>, n: usize, m: usize) {
    let short = m.saturating_sub(keep.len());
    if short == 0 {
        return;
    }
    let mut kept: std::collections::BTreeSet<usize> = keep.iter().copied().collect();
    for j in 1..=short {
        let target = bucket_bound(j, n - 1, short + 1);
        // The nearest index not kept yet: there are n - kept > short of
        // them, so the search ends.
        let found = (0..n).find_map(|d| {
            [
                target.checked_sub(d),
                target.checked_add(d).filter(|&i| i < n),
            ]
            .into_iter()
            .flatten()
            .find(|i| !kept.contains(i))
        });
        if let Some(i) = found {
            kept.insert(i);
        }
    }
    *keep = kept.into_iter().collect();
}

/// Samples a series at `max_points` evenly spaced indices (clamped to
/// [`MIN_POINTS`]`..=`[`MAX_POINTS`]) when it has more: index
/// `round(j · (n − 1) / (max_points − 1))` for `j = 0 .. max_points`, so the
/// first and last points are kept and the gaps differ by at most one. The
/// right choice for a table of a smooth curve (a profile at regular x);
/// [`decimate`] keeps extremes instead. A series of at most `max_points`
/// points is returned whole.
///
/// ```
/// use hardened_mcp::paging::sample;
///
/// let xs: Vec<u32> = (0..101).collect();
/// let s = sample(&xs, 11);
/// assert_eq!(s.points, [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
/// assert!(s.truncated && s.total == 101);
/// ```
pub fn sample<P: Clone>(points: &[P], max_points: u32) -> Decimated<P> {
    let n = points.len();
    let m = clamp(max_points, MIN_POINTS, MAX_POINTS);
    if n <= m {
        return Decimated::whole(points);
    }
    // n > m >= 2: the step (n - 1) / (m - 1) exceeds one, so the rounded
    // indices are strictly increasing.
    let index = |j: usize| {
        let num = j as u128 * (n - 1) as u128 + (m - 1) as u128 / 2;
        (num / (m - 1) as u128) as usize
    };
    let keep: Vec<usize> = (0..m).map(index).collect();
    Decimated::picked(points, &keep)
}

/// `k * len / buckets` without overflow.
fn bucket_bound(k: usize, len: usize, buckets: usize) -> usize {
    ((k as u128 * len as u128) / buckets as u128) as usize
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn line_splitting() {
        assert_eq!(lines(b"").count(), 0);
        assert_eq!(lines(b"\n").collect::<Vec<_>>(), [b"".as_slice()]);
        assert_eq!(lines(b"a\nb").collect::<Vec<_>>(), [b"a".as_slice(), b"b"]);
        assert_eq!(
            lines(b"a\nb\n").collect::<Vec<_>>(),
            [b"a".as_slice(), b"b"]
        );
        for input in [&b""[..], b"\n", b"a", b"a\n", b"a\n\n", b"\n\nx"] {
            assert_eq!(count_lines(input), lines(input).count() as u64);
        }
    }

    #[test]
    fn page_past_the_end_and_clamped_limit() {
        let p = page(0..5, 10, 3);
        assert!(p.items.is_empty());
        assert_eq!(
            (p.offset, p.total, p.truncated, p.next_offset),
            (5, 5, true, None)
        );
        let p = page(0..5_000, 0, u32::MAX);
        assert_eq!(p.items.len(), MAX_PAGE_LINES as usize);
        assert_eq!(p.next_offset, Some(MAX_PAGE_LINES as u64));
        let p = page(0..3, 0, 0);
        assert_eq!(p.items, [0]);
    }

    #[test]
    fn whole_sequence_is_not_truncated() {
        let p = page(0..3, 0, 10);
        assert_eq!((p.truncated, p.next_offset), (false, None));
        let t = tail(0..3, 10);
        assert_eq!((t.items, t.offset, t.truncated), (vec![0, 1, 2], 0, false));
    }

    #[test]
    fn decimation_bounds_and_order() {
        for n in [0usize, 1, 2, 3, 10, 11, 1000, 12_345] {
            for m in [0u32, 1, 2, 3, 4, 5, 10, 11, 500, u32::MAX] {
                let ys: Vec<f64> = (0..n).map(|i| ((i * 7919) % 101) as f64).collect();
                let d = decimate(&ys, m, |y| *y);
                let cap = m.clamp(MIN_POINTS, MAX_POINTS) as usize;
                assert_eq!(d.points.len(), n.min(cap), "n={n} m={m}");
                assert_eq!(d.points.len(), d.indices.len());
                assert_eq!(d.total, n as u64);
                assert_eq!(d.truncated, n > cap);
                assert!(d.indices.windows(2).all(|w| w[0] < w[1]));
                if n > 0 {
                    assert_eq!(d.indices[0], 0);
                    assert_eq!(*d.indices.last().unwrap(), n as u64 - 1);
                }
                for (p, i) in d.points.iter().zip(&d.indices) {
                    assert_eq!(*p, ys[*i as usize]);
                }
            }
        }
    }

    #[test]
    fn decimation_keeps_global_extremes_and_nan() {
        let mut ys: Vec<f64> = (0..10_000).map(|i| (i as f64).cos()).collect();
        ys[1234] = -50.0;
        ys[8765] = 50.0;
        ys[4321] = f64::NAN;
        let d = decimate(&ys, 30, |y| *y);
        assert!(d.indices.contains(&1234));
        assert!(d.indices.contains(&8765));
        assert!(d.indices.contains(&4321));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// `decimate`: exactly min(n, m) points, in order, endpoints kept,
        /// the global minimum and maximum kept, each point the series'
        /// own.
        #[test]
        fn decimate_returns_exactly_the_requested_points(
            ys in proptest::collection::vec(-1e6f64..1e6, 0..1500),
            m in 0u32..600,
        ) {
            let d = decimate(&ys, m, |y| *y);
            let n = ys.len();
            let cap = m.clamp(MIN_POINTS, MAX_POINTS) as usize;
            proptest::prop_assert_eq!(d.points.len(), n.min(cap));
            proptest::prop_assert!(d.indices.windows(2).all(|w| w[0] < w[1]));
            for (p, i) in d.points.iter().zip(&d.indices) {
                proptest::prop_assert_eq!(*p, ys[*i as usize]);
            }
            if n > 0 {
                proptest::prop_assert_eq!(d.indices[0], 0);
                proptest::prop_assert_eq!(*d.indices.last().unwrap(), n as u64 - 1);
            }
            // With at least one bucket (four points), the extremes survive.
            if n > 0 && (cap >= 4 || n <= cap) {
                let max = ys.iter().copied().fold(f64::MIN, f64::max);
                let min = ys.iter().copied().fold(f64::MAX, f64::min);
                proptest::prop_assert!(d.points.contains(&max) && d.points.contains(&min));
            }
        }

        /// `sample`: exactly min(n, m) points, in order, endpoints kept,
        /// gaps within one of each other.
        #[test]
        fn sample_is_evenly_spaced(n in 0usize..5000, m in 0u32..700) {
            let xs: Vec<usize> = (0..n).collect();
            let s = sample(&xs, m);
            let cap = m.clamp(MIN_POINTS, MAX_POINTS) as usize;
            proptest::prop_assert_eq!(s.points.len(), n.min(cap));
            proptest::prop_assert_eq!(s.truncated, n > cap);
            proptest::prop_assert!(s.points.windows(2).all(|w| w[0] < w[1]));
            if n > 0 {
                proptest::prop_assert_eq!(s.points[0], 0);
                proptest::prop_assert_eq!(*s.points.last().unwrap(), n - 1);
            }
            let gaps: Vec<usize> = s.points.windows(2).map(|w| w[1] - w[0]).collect();
            if let (Some(lo), Some(hi)) = (gaps.iter().min(), gaps.iter().max()) {
                proptest::prop_assert!(hi - lo <= 1, "{lo} {hi}");
            }
        }
    }
}
