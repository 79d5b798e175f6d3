//! Accepting a known finding with a reason, so CI stays green on an
//! exception someone decided to live with, and only on that one.
//!
//! A suppression file is JSON:
//!
//! ```json
//! {"suppressions": [
//!   {"rule": "object-open", "tool": "count", "property": "/",
//!    "reason": "the SDK cannot close it yet; see issue 12",
//!    "expires": "2027-01-31"}
//! ]}
//! ```
//!
//! `rule`, `tool` (`null` for a finding about the server) and a non-empty
//! `reason` are required; `property` and `mutation`, when given, must match
//! too (absent: any). `expires` (`YYYY-MM-DD`, optional) ends it: from the
//! day after, it suppresses nothing and is itself reported
//! (`suppression-expired`), as is one that matched no finding
//! (`suppression-unused`), so the file cannot silently outlive the fault.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::finding::{Finding, Severity};
use crate::report::Report;
use crate::text::escape;

/// A calendar day, `(year, month, day)`.
pub type Day = (i64, u32, u32);

/// One accepted finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suppression {
    /// The rule id of the finding.
    pub rule: String,
    /// The tool (`None`: a finding about the server).
    pub tool: Option<String>,
    /// The property (JSON pointer), when only that one is meant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
    /// The mutation, when only that one is meant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<String>,
    /// Why it is accepted (required, not empty).
    pub reason: String,
    /// The last day it applies (`YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
}

/// A finding a suppression accepted, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suppressed {
    /// The finding.
    pub finding: Finding,
    /// The suppression's reason.
    pub reason: String,
    /// The suppression's expiry, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
}

/// Reads a suppression file; an error names what is wrong with it.
pub fn parse(text: &str) -> Result<Vec<Suppression>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let list = v
        .get("suppressions")
        .and_then(Value::as_array)
        .ok_or("the file must be {\"suppressions\": [...]}")?;
    let mut out = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        if entry.get("tool").is_none() {
            return Err(format!(
                "suppression {i}: `tool` is required (null for a finding about the server)"
            ));
        }
        let s: Suppression =
            serde_json::from_value(entry.clone()).map_err(|e| format!("suppression {i}: {e}"))?;
        if s.reason.trim().is_empty() {
            return Err(format!("suppression {i}: `reason` must say why"));
        }
        if let Some(d) = &s.expires
            && parse_day(d).is_none()
        {
            return Err(format!("suppression {i}: `expires` must be YYYY-MM-DD"));
        }
        out.push(s);
    }
    Ok(out)
}

/// `YYYY-MM-DD` as a day.
pub fn parse_day(s: &str) -> Option<Day> {
    let mut parts = s.splitn(3, '-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let d: u32 = parts.next()?.parse().ok()?;
    (s.len() == 10 && (1..=12).contains(&m) && (1..=31).contains(&d)).then_some((y, m, d))
}

/// Today (UTC).
pub fn today() -> Day {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_from_days(i64::try_from(secs / 86_400).unwrap_or(0))
}

/// The calendar day `days` after 1970-01-01 (the proleptic Gregorian
/// calendar; Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> Day {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

fn matches(s: &Suppression, f: &Finding) -> bool {
    s.rule == f.rule
        && s.tool.as_deref() == f.tool.as_deref()
        && s.property
            .as_deref()
            .is_none_or(|p| Some(p) == f.property.as_deref())
        && s.mutation.as_deref().is_none_or(|m| Some(m) == f.mutation)
}

/// Moves the findings `suppressions` accept (on `today`) from the
/// report's findings to its suppressed ones, and reports each expired or
/// unused suppression.
pub fn apply(report: &mut Report, suppressions: &[Suppression], today: Day) {
    let live: Vec<bool> = suppressions
        .iter()
        .map(|s| {
            s.expires
                .as_deref()
                .and_then(parse_day)
                .is_none_or(|last| today <= last)
        })
        .collect();
    let mut used = vec![false; suppressions.len()];
    let mut kept = Vec::new();
    for f in std::mem::take(&mut report.findings) {
        let hit = suppressions
            .iter()
            .enumerate()
            .find(|(i, s)| live[*i] && matches(s, &f));
        match hit {
            Some((i, s)) => {
                used[i] = true;
                report.suppressed.push(Suppressed {
                    finding: f,
                    reason: s.reason.clone(),
                    expires: s.expires.clone(),
                });
            }
            None => kept.push(f),
        }
    }
    for (i, s) in suppressions.iter().enumerate() {
        let what = format!(
            "{} at {}{}",
            escape(&s.rule),
            s.tool.as_deref().map_or("server".to_owned(), escape),
            s.property
                .as_deref()
                .map_or(String::new(), |p| format!(" {}", escape(p)))
        );
        let at = format!("/suppressions/{i}");
        if !live[i] {
            kept.push(
                Finding::new(
                    Severity::Medium,
                    "suppression-expired",
                    format!(
                        "the suppression of {what} expired on {}: fix the finding or renew it with a reason",
                        s.expires.as_deref().unwrap_or_default()
                    ),
                )
                .property(&at),
            );
        } else if !used[i] {
            kept.push(
                Finding::new(
                    Severity::Low,
                    "suppression-unused",
                    format!("the suppression of {what} matched no finding: remove it"),
                )
                .property(&at),
            );
        }
    }
    report.findings = kept;
    report.sort();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        Report {
            target: "t".into(),
            tools: 1,
            calls: 0,
            findings: vec![
                Finding::new(Severity::Low, "object-open", "m")
                    .tool("count")
                    .property("/"),
                Finding::new(Severity::High, "forbidden-call-accepted", "m")
                    .tool("count")
                    .property("/properties/n")
                    .mutation("above maximum"),
                Finding::new(Severity::Medium, "wire-unanswered", "m"),
            ],
            suppressed: Vec::new(),
            pins: None,
        }
    }

    #[test]
    fn a_matching_live_suppression_moves_the_finding_with_its_reason() {
        let s = parse(r#"{"suppressions": [
            {"rule": "object-open", "tool": "count", "property": "/", "reason": "SDK limit", "expires": "2027-01-31"},
            {"rule": "wire-unanswered", "tool": null, "reason": "rmcp drops bad lines"}]}"#)
        .unwrap();
        let mut r = report();
        apply(&mut r, &s, (2027, 1, 31));
        let left: Vec<&str> = r.findings.iter().map(|f| f.rule).collect();
        assert_eq!(left, ["forbidden-call-accepted"]);
        assert_eq!(r.suppressed.len(), 2);
        assert_eq!(r.suppressed[0].reason, "SDK limit");
        assert!(!r.fails(Severity::Medium) || r.fails(Severity::High));
    }

    #[test]
    fn expired_and_unused_suppressions_are_reported_and_suppress_nothing() {
        let s = parse(r#"{"suppressions": [
            {"rule": "object-open", "tool": "count", "reason": "was fine", "expires": "2026-06-30"},
            {"rule": "forbidden-call-accepted", "tool": "count", "mutation": "below minimum", "reason": "other mutation"}]}"#)
        .unwrap();
        let mut r = report();
        apply(&mut r, &s, (2026, 7, 1));
        let mut rules: Vec<(&str, Option<&str>)> = r
            .findings
            .iter()
            .map(|f| (f.rule, f.property.as_deref()))
            .collect();
        rules.sort();
        assert_eq!(
            rules,
            [
                ("forbidden-call-accepted", Some("/properties/n")),
                ("object-open", Some("/")),
                ("suppression-expired", Some("/suppressions/0")),
                ("suppression-unused", Some("/suppressions/1")),
                ("wire-unanswered", None),
            ]
        );
        assert!(r.suppressed.is_empty());
    }

    #[test]
    fn a_suppression_needs_a_rule_a_location_and_a_reason() {
        assert!(parse(r#"{"suppressions": [{"rule": "x", "reason": "r"}]}"#).is_err());
        assert!(
            parse(r#"{"suppressions": [{"rule": "x", "tool": "t", "reason": "  "}]}"#).is_err()
        );
        assert!(parse(r#"{"suppressions": [{"tool": "t", "reason": "r"}]}"#).is_err());
        assert!(parse(r#"{"suppressions": [{"rule": "x", "tool": "t", "reason": "r", "expires": "soon"}]}"#).is_err());
        assert!(parse(r#"{"suppressions": [{"rule": "x", "tool": null, "reason": "r"}]}"#).is_ok());
    }

    #[test]
    fn days_are_counted_from_the_epoch() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        assert_eq!(parse_day("2026-12-01"), Some((2026, 12, 1)));
        assert_eq!(parse_day("2026-13-01"), None);
    }
}
