//! The report: a readable summary, JSON, and SARIF 2.1.0 for code-scanning
//! dashboards.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::finding::{Finding, Severity, owasp_category};
use crate::text::printable as escape;

/// Where a finding was seen: a tool's property and the argument a
/// forbidden call changed, each `null` when it does not apply (one JSON
/// shape for every finding).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Place {
    /// The tool (`null`: the server as a whole).
    pub tool: Option<String>,
    /// The property, a JSON pointer into the tool's input schema.
    pub property: Option<String>,
    /// The argument a forbidden call changed, a JSON pointer into the
    /// arguments.
    pub argument: Option<String>,
    /// The call that showed it there and the answer, escaped and cut.
    pub exchange: Option<String>,
}

/// One root cause: the findings of one rule at one severity, shown the
/// same way (the same forbidden call, message and evidence), with every
/// place they were seen. What the report lists: a server whose 64 strings
/// lack a `maxLength` has one such cause, not 64.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Cause {
    /// How much it matters.
    pub severity: Severity,
    /// The rule id.
    pub rule: &'static str,
    /// The forbidden call that showed it, when one did.
    pub mutation: Option<&'static str>,
    /// Why it matters.
    pub message: String,
    /// The OWASP MCP Top 10 (2025) category, where one applies.
    pub owasp: Option<&'static str>,
    /// What showed it, escaped.
    pub evidence: Option<String>,
    /// Every place it was seen, in the audit's order.
    pub places: Vec<Place>,
}

impl Cause {
    /// The causes of `findings`, in their order (a cause where its first
    /// finding was).
    pub fn group<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Vec<Cause> {
        let mut causes: Vec<Cause> = Vec::new();
        for f in findings {
            let place = Place {
                tool: f.tool.clone(),
                property: f.property.clone(),
                argument: f.argument.clone(),
                exchange: f.exchange.clone(),
            };
            let same = causes.iter_mut().find(|c| {
                (c.severity, c.rule, c.mutation, &c.message, &c.evidence)
                    == (f.severity, f.rule, f.mutation, &f.message, &f.evidence)
            });
            match same {
                Some(c) => c.places.push(place),
                None => causes.push(Cause {
                    severity: f.severity,
                    rule: f.rule,
                    mutation: f.mutation,
                    message: f.message.clone(),
                    owasp: f.owasp,
                    evidence: f.evidence.clone(),
                    places: vec![place],
                }),
            }
        }
        causes
    }
}

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
    /// The report of `target` before anything was found.
    pub fn empty(target: String) -> Self {
        Self {
            target,
            tools: 0,
            calls: 0,
            findings: Vec::new(),
            suppressed: Vec::new(),
            pins: None,
        }
    }

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

    /// The findings by root cause ([`Cause`]), most severe first.
    pub fn causes(&self) -> Vec<Cause> {
        Cause::group(&self.findings)
    }

    /// The JSON report: what was audited and done, the count of causes and
    /// of findings at each severity, the causes (each with its places),
    /// and the suppressed findings with their reasons.
    pub fn json(&self) -> Value {
        let causes = self.causes();
        let count = |s: Severity| {
            json!({
                "causes": causes.iter().filter(|c| c.severity == s).count(),
                "findings": self.findings.iter().filter(|f| f.severity == s).count(),
            })
        };
        json!({
            "target": self.target,
            "tools": self.tools,
            "calls": self.calls,
            "counts": {
                "high": count(Severity::High),
                "medium": count(Severity::Medium),
                "low": count(Severity::Low),
                "info": count(Severity::Info),
            },
            "causes": causes,
            "suppressed": self.suppressed,
        })
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
        let causes = self.causes();
        let _ = writeln!(out, "  severity  causes  findings");
        for (s, n) in self.counts() {
            let c = causes.iter().filter(|c| c.severity == s).count();
            let _ = writeln!(out, "  {:<8}  {c:<6}  {n}", s.as_str());
        }
        if !self.suppressed.is_empty() {
            let _ = writeln!(out, "  suppressed {}", self.suppressed.len());
        }
        if !causes.is_empty() {
            let _ = writeln!(out);
        }
        for c in &causes {
            let shown = c.mutation.map(|m| format!(" ({m})")).unwrap_or_default();
            let _ = writeln!(
                out,
                "  [{}] {}{shown}: {}",
                c.severity.as_str(),
                c.rule,
                escape(&c.message)
            );
            let places: Vec<String> = c
                .places
                .iter()
                .take(MAX_PLACES_SHOWN)
                .map(location)
                .collect();
            let more = c.places.len().saturating_sub(MAX_PLACES_SHOWN);
            let _ = write!(out, "      at {}", places.join("; "));
            if more > 0 {
                let _ = write!(out, "; and {more} more");
            }
            let _ = writeln!(out);
            if let Some(e) = &c.evidence {
                let _ = writeln!(out, "      evidence: {}", escape(e));
            }
            // The first place's call shows the cause; the JSON has each.
            if let Some(x) = c.places.iter().find_map(|p| p.exchange.as_ref()) {
                let _ = writeln!(out, "      exchange: {}", escape(x));
            }
        }
        out
    }

    /// SARIF 2.1.0: one result per cause (every place it was seen a
    /// logical location of it), the suppressed findings with their
    /// justification; the rule ids as rules, tagged with their OWASP MCP
    /// Top 10 category where one applies. With `artifact` (a file of the
    /// audited server's repository: its manifest, its entry point), each
    /// result also has the physical location a code-scanning upload needs.
    pub fn sarif(&self, artifact: Option<&str>) -> Value {
        let all: Vec<(Cause, Option<&crate::suppress::Suppressed>)> = self
            .causes()
            .into_iter()
            .map(|c| (c, None))
            .chain(self.suppressed.iter().flat_map(|s| {
                Cause::group([&s.finding])
                    .into_iter()
                    .map(move |c| (c, Some(s)))
            }))
            .collect();
        let mut rules: Vec<(&'static str, Option<&'static str>)> = all
            .iter()
            .map(|(c, _)| (c.rule, owasp_category(c.rule, None).or(c.owasp)))
            .collect();
        rules.sort_unstable();
        rules.dedup_by_key(|r| r.0);
        let level = |s: Severity| match s {
            Severity::High => "error",
            Severity::Medium => "warning",
            Severity::Low | Severity::Info => "note",
        };
        let results: Vec<Value> = all
            .iter()
            .map(|(c, suppressed)| {
                let logical: Vec<Value> = c
                    .places
                    .iter()
                    .map(|p| {
                        let name = match (&p.tool, &p.property) {
                            (Some(t), Some(p)) => format!("tools/{t}{p}"),
                            (Some(t), None) => format!("tools/{t}"),
                            (None, Some(p)) => format!("server{p}"),
                            (None, None) => "server".to_owned(),
                        };
                        json!({"fullyQualifiedName": name, "kind": "member"})
                    })
                    .collect();
                let mut location = json!({"logicalLocations": logical});
                if let Some(uri) = artifact {
                    location["physicalLocation"] = json!({
                        "artifactLocation": {"uri": uri},
                        "region": {"startLine": 1},
                    });
                }
                let mut text = c.message.clone();
                if c.places.len() > 1 {
                    text.push_str(&format!(" (seen in {} places)", c.places.len()));
                }
                if let Some(e) = &c.evidence {
                    text.push_str(&format!(" Evidence: {e}"));
                }
                let mut r = json!({
                    "ruleId": c.rule,
                    "level": level(c.severity),
                    "message": {"text": text},
                    "locations": [location],
                    "partialFingerprints": {"mcpFinding/v2": fingerprint(c)},
                    "properties": {"severity": c.severity.as_str(), "places": c.places},
                });
                if let Some(o) = c.owasp {
                    r["properties"]["owasp"] = json!(o);
                    r["properties"]["tags"] = json!(["owasp-mcp-top-10", owasp_id(o)]);
                }
                if let Some(m) = c.mutation {
                    r["properties"]["mutation"] = json!(m);
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

/// Most places listed under one cause in the readable report (the JSON
/// and SARIF reports hold them all).
const MAX_PLACES_SHOWN: usize = 8;

/// Where a finding is, for the readable report (escaped).
fn location(f: &Place) -> String {
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

/// A cause's identity across runs: rule, forbidden call, message (which
/// names what it is about where that matters); not its places, so that a
/// cause seen in one more place is the same alert.
fn fingerprint(c: &Cause) -> String {
    format!(
        "{}|{}|{}",
        c.rule,
        c.mutation.unwrap_or_default(),
        c.message
    )
}
