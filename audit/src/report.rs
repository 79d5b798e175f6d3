//! The report: a readable summary, JSON, and SARIF 2.1.0 for code-scanning
//! dashboards.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::finding::{Finding, Severity};

/// Everything the audit found, with what it did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The server audited, as named on the command line.
    pub target: String,
    /// Tools listed.
    pub tools: usize,
    /// Calls sent (forbidden ones, and valid ones when allowed).
    pub calls: usize,
    /// The findings, most severe first.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Sorts the findings, most severe first (stable within a severity).
    pub fn sort(&mut self) {
        self.findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    }

    /// How many findings of each severity, most severe first.
    pub fn counts(&self) -> [(Severity, usize); 4] {
        [
            Severity::High,
            Severity::Medium,
            Severity::Low,
            Severity::Info,
        ]
        .map(|s| (s, self.findings.iter().filter(|f| f.severity == s).count()))
    }

    /// Each finding as (severity, rule, tool, property, mutation), the
    /// absent ones empty, sorted: what two audits of one server compare.
    pub fn keys(&self) -> Vec<(Severity, &'static str, &str, &str, &'static str)> {
        let mut v: Vec<_> = self
            .findings
            .iter()
            .map(|f| {
                (
                    f.severity,
                    f.rule,
                    f.tool.as_deref().unwrap_or_default(),
                    f.property.as_deref().unwrap_or_default(),
                    f.mutation.unwrap_or_default(),
                )
            })
            .collect();
        v.sort();
        v
    }

    /// Whether any finding is at `level` or above.
    pub fn fails(&self, level: Severity) -> bool {
        self.findings.iter().any(|f| f.severity >= level)
    }

    /// The readable report.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "mcp-audit: {}", self.target);
        let _ = writeln!(out, "  {} tools, {} calls", self.tools, self.calls);
        let _ = writeln!(out);
        let _ = writeln!(out, "  severity  findings");
        for (s, n) in self.counts() {
            let _ = writeln!(out, "  {:<8}  {n}", s.as_str());
        }
        if !self.findings.is_empty() {
            let _ = writeln!(out);
        }
        for f in &self.findings {
            let at = match (&f.tool, &f.property) {
                (Some(t), Some(p)) => format!("{t} {p}"),
                (Some(t), None) => t.clone(),
                _ => "server".to_owned(),
            };
            let _ = writeln!(
                out,
                "  [{}] {} ({at}): {}",
                f.severity.as_str(),
                f.rule,
                f.message
            );
        }
        out
    }

    /// SARIF 2.1.0: one result per finding, the rule ids as rules.
    pub fn sarif(&self) -> Value {
        let mut rules: Vec<&'static str> = self.findings.iter().map(|f| f.rule).collect();
        rules.sort_unstable();
        rules.dedup();
        let level = |s: Severity| match s {
            Severity::High => "error",
            Severity::Medium => "warning",
            Severity::Low | Severity::Info => "note",
        };
        let results: Vec<Value> = self
            .findings
            .iter()
            .map(|f| {
                let name = match (&f.tool, &f.property) {
                    (Some(t), Some(p)) => format!("tools/{t}{p}"),
                    (Some(t), None) => format!("tools/{t}"),
                    _ => "server".to_owned(),
                };
                json!({
                    "ruleId": f.rule,
                    "level": level(f.severity),
                    "message": {"text": f.message},
                    "locations": [{"logicalLocations": [{"fullyQualifiedName": name, "kind": "member"}]}],
                    "properties": {"severity": f.severity.as_str()},
                })
            })
            .collect();
        json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": "mcp-audit",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules.iter().map(|r| json!({"id": r})).collect::<Vec<_>>(),
                }},
                "results": results,
            }],
        })
    }
}
