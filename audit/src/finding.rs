//! What the audit reports: findings, each with a severity, the rule that
//! found it, where (tool, property) and why.

use serde::Serialize;

/// How much a finding matters. Ordered: `Info < Low < Medium < High`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; not a weakness by itself.
    Info,
    /// A missing safeguard with little direct impact.
    Low,
    /// A missing bound or check a model can exploit for cost or confusion.
    Medium,
    /// Input the schema forbids is acted on, caller text comes back, the
    /// server hangs or dies, or a secret is exposed.
    High,
}

impl Severity {
    /// Parses `info`, `low`, `medium`, `high`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "info" => Some(Self::Info),
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            _ => None,
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// The stable rule id, e.g. `number-unbounded`.
    pub rule: &'static str,
    /// The tool, when the finding is about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The property (a JSON pointer into the tool's schema), when about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
    /// The forbidden call that showed it, e.g. `above maximum`, when the
    /// finding comes from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutation: Option<&'static str>,
    /// Why it matters, in a sentence.
    pub message: String,
}

impl Finding {
    /// A finding of `rule` at `severity`.
    pub fn new(severity: Severity, rule: &'static str, message: impl Into<String>) -> Self {
        Self {
            severity,
            rule,
            tool: None,
            property: None,
            mutation: None,
            message: message.into(),
        }
    }

    /// About `tool`.
    pub fn tool(mut self, tool: &str) -> Self {
        self.tool = Some(tool.to_owned());
        self
    }

    /// Shown by the forbidden call `what`.
    pub fn mutation(mut self, what: &'static str) -> Self {
        self.mutation = Some(what);
        self
    }

    /// About `property` of the tool.
    pub fn property(mut self, property: &str) -> Self {
        self.property = Some(property.to_owned());
        self
    }
}
