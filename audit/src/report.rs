//! The report: a readable summary, JSON, and SARIF 2.1.0 for code-scanning
//! dashboards.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::finding::{Finding, Severity, owasp_category};
use crate::text::printable as escape;

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
    /// The findings a suppression file accepted, each with its reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suppressed: Vec<crate::suppress::Suppressed>,
    /// The pins of the tools listed (written by `--pin` when its file
    /// does not exist yet).
    #[serde(skip)]
    pub pins: Option<crate::pin::PinFile>,
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

    /// The readable report. Every text that came from the server (tool
    /// names, pointers into its schemas) is escaped: a tool named with an
    /// ANSI escape cannot rewrite the terminal that shows the report.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "hardened-mcp-audit: {}", escape(&self.target));
        let _ = writeln!(out, "  {} tools, {} calls", self.tools, self.calls);
        let _ = writeln!(out);
        let _ = writeln!(out, "  severity  findings");
        for (s, n) in self.counts() {
            let _ = writeln!(out, "  {:<8}  {n}", s.as_str());
        }
        if !self.suppressed.is_empty() {
            let _ = writeln!(out, "  suppressed {}", self.suppressed.len());
        }
        if !self.findings.is_empty() {
            let _ = writeln!(out);
        }
        for f in &self.findings {
            let _ = writeln!(
                out,
                "  [{}] {} ({}): {}",
                f.severity.as_str(),
                f.rule,
                location(f),
                escape(&f.message)
            );
            if let Some(e) = &f.evidence {
                let _ = writeln!(out, "      evidence: {}", escape(e));
            }
        }
        out
    }

    /// SARIF 2.1.0: one result per finding, the suppressed ones with
    /// their justification; the rule ids as rules, tagged with their OWASP
    /// MCP Top 10 category where one applies.
    pub fn sarif(&self) -> Value {
        let all = self
            .findings
            .iter()
            .map(|f| (f, None))
            .chain(self.suppressed.iter().map(|s| (&s.finding, Some(s))));
        let mut rules: Vec<(&'static str, Option<&'static str>)> = all
            .clone()
            .map(|(f, _)| (f.rule, owasp_category(f.rule, None).or(f.owasp)))
            .collect();
        rules.sort_unstable();
        rules.dedup_by_key(|r| r.0);
        let level = |s: Severity| match s {
            Severity::High => "error",
            Severity::Medium => "warning",
            Severity::Low | Severity::Info => "note",
        };
        let results: Vec<Value> = all
            .map(|(f, suppressed)| {
                let name = match (&f.tool, &f.property) {
                    (Some(t), Some(p)) => format!("tools/{t}{p}"),
                    (Some(t), None) => format!("tools/{t}"),
                    (None, Some(p)) => format!("server{p}"),
                    (None, None) => "server".to_owned(),
                };
                let mut text = f.message.clone();
                if let Some(e) = &f.evidence {
                    text.push_str(&format!(" Evidence: {e}"));
                }
                let mut r = json!({
                    "ruleId": f.rule,
                    "level": level(f.severity),
                    "message": {"text": text},
                    "locations": [{"logicalLocations": [{"fullyQualifiedName": name, "kind": "member"}]}],
                    "partialFingerprints": {"mcpFinding/v1": fingerprint(f)},
                    "properties": {"severity": f.severity.as_str()},
                });
                if let Some(c) = f.owasp {
                    r["properties"]["owasp"] = json!(c);
                    r["properties"]["tags"] = json!(["owasp-mcp-top-10", owasp_id(c)]);
                }
                if let Some(m) = f.mutation {
                    r["properties"]["mutation"] = json!(m);
                }
                if let Some(a) = &f.argument {
                    r["properties"]["argument"] = json!(a);
                }
                if let Some(s) = suppressed {
                    r["suppressions"] = json!([{"kind": "external", "status": "accepted", "justification": s.reason}]);
                }
                r
            })
            .collect();
        json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": "hardened-mcp-audit",
                    "version": env!("CARGO_PKG_VERSION"),
                    "informationUri": "https://example.invalid/hardened-mcp/docs/audit.md",
                    "rules": rules.iter().map(|(id, owasp)| {
                        let mut rule = json!({"id": id});
                        if let Some(c) = owasp {
                            rule["properties"] = json!({"tags": ["owasp-mcp-top-10", owasp_id(c)], "owasp": c});
                        }
                        rule
                    }).collect::<Vec<_>>(),
                }},
                "results": results,
            }],
        })
    }
}

/// Where a finding is, for the readable report (escaped).
fn location(f: &Finding) -> String {
    let mut at = match (&f.tool, &f.property) {
        (Some(t), Some(p)) => format!("{} {}", escape(t), escape(p)),
        (Some(t), None) => escape(t),
        (None, Some(p)) => format!("server {}", escape(p)),
        (None, None) => "server".to_owned(),
    };
    // The argument, where the schema pointer does not already say it
    // (`/properties/n` is the argument `/n`).
    let plain = f
        .property
        .as_deref()
        .map(|p| p.replace("/properties/", "/"));
    if let Some(a) = f
        .argument
        .as_deref()
        .filter(|a| Some(*a) != plain.as_deref())
    {
        at.push_str(&format!(" argument {}", escape(a)));
    }
    at
}

/// `MCP03:2025` of `MCP03:2025 Tool Poisoning`.
fn owasp_id(category: &str) -> &str {
    category.split(' ').next().unwrap_or(category)
}

/// A finding's identity across runs: rule, tool, property, mutation.
fn fingerprint(f: &Finding) -> String {
    format!(
        "{}|{}|{}|{}",
        f.rule,
        f.tool.as_deref().unwrap_or_default(),
        f.property.as_deref().unwrap_or_default(),
        f.mutation.unwrap_or_default()
    )
}
