//! When the disk monitor measures, and how much it looks at.

use std::time::{Duration, Instant};

use super::{Look, Usage};

/// Measuring time the monitor may save up (a quarter of each wait) and
/// spend on measurements closer together than its usual pace.
const BURST: Duration = Duration::from_millis(200);

/// When the disk monitor measures next, and how: a whole measurement
/// ([`Look::Stat`]) at its interval, or four times as long as the last one
/// took, whichever is longer. Sooner where the growth between two
/// measurements says the run reaches a limit before then: at half the time
/// left, less the measurement's own, down to back to back; when it is the
/// entries limit that is near (and no [`Floor`](super::Floor) follows the
/// entries), by counting entries alone ([`Look::Names`]), which takes a
/// fraction of the time. A run that makes bytes fast is thereby stopped
/// within about what it makes during one measurement.
/// The time spent measuring stays below a quarter of the time spent
/// waiting plus [`BURST`], so a run that hovers below its limits cannot
/// keep the monitor busy.
#[derive(Debug)]
pub(crate) struct Pace {
    interval: Duration,
    credit: Duration,
    /// The last measurement's start and the entries it found.
    entries: Option<(Instant, u64)>,
    /// The last whole measurement's start and the bytes it found.
    bytes: Option<(Instant, u64)>,
    /// When the bytes limit is reached at the growth last seen.
    bytes_due: Option<Instant>,
    /// When the next whole measurement is due at the usual pace.
    next_whole: Option<Instant>,
    /// How long the last whole measurement took.
    whole_took: Duration,
    /// When the last measurement ended.
    last_end: Option<Instant>,
}

impl Pace {
    pub(crate) fn new(interval: Duration) -> Self {
        Self {
            interval,
            credit: BURST,
            entries: None,
            bytes: None,
            bytes_due: None,
            next_whole: None,
            whole_took: Duration::ZERO,
            last_end: None,
        }
    }

    /// Whether the monitor may measure before the wait [`Pace::next`]
    /// said (its credit is not spent).
    pub(crate) fn may_hurry(&self) -> bool {
        !self.credit.is_zero()
    }

    /// The wait before the next measurement and what it looks at, given
    /// one that started at `at`, took `took` and found `usage` below
    /// `limits` (bytes, entries); `followed`: a floor follows the entries
    /// between measurements, which then need not hurry for them.
    pub(crate) fn next(
        &mut self,
        at: Instant,
        took: Duration,
        usage: Usage,
        (max_bytes, max_entries): (u64, u64),
        followed: bool,
    ) -> (Duration, Look) {
        let end = at + took;
        let idle = self.last_end.map(|e| at.saturating_duration_since(e));
        self.credit = BURST.min(self.credit + idle.unwrap_or_default() / 4);
        self.credit = self.credit.saturating_sub(took);
        self.last_end = Some(end);
        let entries_due = due(self.entries, (at, usage.entries), max_entries).filter(|_| !followed);
        self.entries = Some((at, usage.entries));
        if let Some(bytes) = usage.bytes {
            self.bytes_due = due(self.bytes, (at, bytes), max_bytes);
            self.bytes = Some((at, bytes));
            self.whole_took = took;
            self.next_whole = Some(end + self.interval.max(took.saturating_mul(4)));
        }
        let halfway = |due: Instant, took: Duration| {
            (end + due.saturating_duration_since(end) / 2).checked_sub(took)
        };
        let usual = self.next_whole.unwrap_or(end);
        let hurry_bytes = self.bytes_due.and_then(|d| halfway(d, self.whole_took));
        let hurry_entries = entries_due.and_then(|d| halfway(d, took));
        // Entries come first where a whole measurement, started when due,
        // would end after the run reached its entries limit.
        let entries_first = entries_due.is_some_and(|d| d < usual + self.whole_took);
        let hurry = self.may_hurry();
        let (start, look) = match (hurry_bytes, hurry_entries) {
            (Some(b), e) if hurry && b < usual && e.is_none_or(|e| b <= e) => (b, Look::Stat),
            (_, Some(e)) if hurry && (e < usual || entries_first) => (e, Look::Names),
            _ => (usual, Look::Stat),
        };
        (start.saturating_duration_since(end), look)
    }
}

/// When a quantity that went from `before` to `now` reaches past `max` at
/// the same rate; `None` if it did not grow (or the time is unrepresentable).
fn due(before: Option<(Instant, u64)>, (at, now): (Instant, u64), max: u64) -> Option<Instant> {
    let (then, was) = before?;
    let grew = now.checked_sub(was).filter(|&g| g > 0)?;
    let dt = at.checked_duration_since(then)?.as_secs_f64();
    let left = Duration::try_from_secs_f64(max.saturating_sub(now) as f64 * dt / grew as f64);
    at.checked_add(left.ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: u64) -> Usage {
        Usage {
            entries: n,
            bytes: Some(0),
            ..Usage::default()
        }
    }

    const MS: Duration = Duration::from_millis(1);
    const LIMITS: (u64, u64) = (u64::MAX, 10_000);

    #[test]
    fn pace_keeps_its_interval_for_a_run_that_does_not_grow() {
        let (mut pace, t) = (Pace::new(20 * MS), Instant::now());
        let usual = (20 * MS, Look::Stat);
        assert_eq!(pace.next(t, MS, entries(9_999), LIMITS, false), usual);
        for i in 1..100 {
            assert_eq!(
                pace.next(t + i * 21 * MS, MS, entries(9_999), LIMITS, false),
                usual
            );
        }
        // A measurement slower than a quarter of the interval spaces them.
        let slow = pace.next(t + 3000 * MS, 10 * MS, entries(9_999), LIMITS, false);
        assert_eq!(slow, (40 * MS, Look::Stat));
    }

    #[test]
    fn pace_closes_in_on_a_limit_at_the_rate_the_run_grows() {
        let (mut pace, t) = (Pace::new(20 * MS), Instant::now());
        pace.next(t, MS, entries(0), LIMITS, false);
        // 1,000 entries in 20 ms: 9,000 left is 180 ms away; half of it is
        // beyond the usual pace.
        let far = pace.next(t + 20 * MS, MS, entries(1_000), LIMITS, false);
        assert_eq!(far, (20 * MS, Look::Stat));
        // 6,000 left at 150 per ms: 40 ms from the start, 39 from the end;
        // half of that less the measurement, counting entries alone.
        let near = pace.next(t + 40 * MS, MS, entries(4_000), LIMITS, false);
        assert_eq!(near, (Duration::from_micros(18_500), Look::Names));
        // A count that finds no growth leaves the whole measurement where
        // it was: due 20 ms after the last whole one ended (t + 41).
        let names = |n| Usage {
            bytes: None,
            ..entries(n)
        };
        let idle = pace.next(t + 45 * MS, MS, names(4_000), LIMITS, false);
        assert_eq!(idle, (15 * MS, Look::Stat));
        // 100 left at 393 per ms: back to back.
        let names = names(9_900);
        let next = pace.next(t + 60 * MS, 2 * MS, names, LIMITS, false);
        assert_eq!(next, (Duration::ZERO, Look::Names));
        // Entries stopped growing: the usual whole measurement is next,
        // and overdue (20 ms after the last whole one ended at t + 41).
        let whole = pace.next(t + 62 * MS, MS, names, LIMITS, false);
        assert_eq!(whole, (Duration::ZERO, Look::Stat));
        // Followed by a floor, the entries do not hurry the pace.
        let mut pace = Pace::new(20 * MS);
        pace.next(t, MS, entries(0), LIMITS, true);
        let followed = pace.next(t + 20 * MS, MS, entries(9_000), LIMITS, true);
        assert_eq!(followed, (20 * MS, Look::Stat));
    }

    #[test]
    fn pace_hurries_toward_the_bytes_limit_with_whole_measurements() {
        let (mut pace, t) = (Pace::new(20 * MS), Instant::now());
        let bytes = |b| Usage {
            bytes: Some(b),
            ..Usage::default()
        };
        let limits = (10 << 20, u64::MAX);
        pace.next(t, MS, bytes(0), limits, false);
        let (wait, look) = pace.next(t + 20 * MS, MS, bytes(9 << 20), limits, false);
        assert!(wait < 2 * MS, "{wait:?}");
        assert_eq!(look, Look::Stat);
    }

    #[test]
    fn pace_spends_at_most_its_burst_then_a_fifth_of_the_time() {
        // A run that grows fast toward its limit and never reaches it: the
        // monitor measures back to back only while its credit lasts.
        let (mut pace, mut t, took) = (Pace::new(20 * MS), Instant::now(), 5 * MS);
        let (mut measuring, mut waiting) = (Duration::ZERO, Duration::ZERO);
        let mut hurried = 0;
        pace.next(t, took, entries(0), LIMITS, false);
        for i in 1..1000u64 {
            let (w, _) = pace.next(t, took, entries(9_000 + i % 2 * 900), LIMITS, false);
            measuring += took;
            waiting += w;
            t += took + w;
            hurried += u32::from(w < 4 * took);
        }
        assert!(hurried > 0, "the monitor never hurried");
        assert!(
            measuring <= waiting / 4 + BURST + took,
            "{measuring:?} measuring, {waiting:?} waiting"
        );
    }
}
