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
    /// The argument a forbidden call changed (a JSON pointer into the
    /// arguments, `/` for the whole object), when the finding comes from
    /// one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument: Option<String>,
    /// The forbidden call that showed it, e.g. `above maximum`, when the
    /// finding comes from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutation: Option<&'static str>,
    /// Why it matters, in a sentence.
    pub message: String,
    /// The OWASP MCP Top 10 (2025) category the finding belongs to, where
    /// one applies, e.g. `MCP03:2025 Tool Poisoning`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owasp: Option<&'static str>,
    /// What showed it, escaped (never raw server text): the offending span
    /// of a description, the HTTP exchange of an auth check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// The call that showed it and the answer, escaped and cut, when one
    /// call did (a place's own: not part of what makes two findings one
    /// cause).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exchange: Option<String>,
}

impl Finding {
    /// A finding of `rule` at `severity`.
    pub fn new(severity: Severity, rule: &'static str, message: impl Into<String>) -> Self {
        Self {
            severity,
            rule,
            tool: None,
            property: None,
            argument: None,
            mutation: None,
            message: message.into(),
            owasp: owasp_category(rule, None),
            evidence: None,
            exchange: None,
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
        self.owasp = owasp_category(self.rule, Some(what));
        self
    }

    /// Shown by changing the argument at `pointer`.
    pub fn argument(mut self, pointer: &str) -> Self {
        self.argument = Some(pointer.to_owned());
        self
    }

    /// Shown by `evidence` (already escaped).
    pub fn evidence(mut self, evidence: &str) -> Self {
        self.evidence = Some(evidence.to_owned());
        self
    }

    /// Shown by the call whose arguments were `sent` (raw JSON text) and
    /// the answer `answer` (`None`: none came): kept escaped, each cut to
    /// [`EXCHANGE_CUT`] characters.
    pub fn exchange(mut self, sent: &str, answer: Option<&serde_json::Value>) -> Self {
        let cut = |t: &str| {
            let escaped = crate::text::escape(t);
            match escaped.char_indices().nth(EXCHANGE_CUT) {
                Some((at, _)) => format!("{}...", &escaped[..at]),
                None => escaped,
            }
        };
        let answered = match answer {
            Some(a) => cut(&a.to_string()),
            None => "nothing".to_owned(),
        };
        self.exchange = Some(format!("sent {}; answered {answered}", cut(sent)));
        self
    }

    /// About `property` of the tool.
    pub fn property(mut self, property: &str) -> Self {
        self.property = Some(property.to_owned());
        self
    }
}

/// Most characters of each side of a finding's exchange kept (escaped).
pub const EXCHANGE_CUT: usize = 240;

/// The OWASP MCP Top 10 (2025) category of a finding of `rule` (shown by
/// `mutation`), where one applies.
pub fn owasp_category(rule: &str, mutation: Option<&str>) -> Option<&'static str> {
    const SECRETS: &str = "MCP01:2025 Token Mismanagement & Secret Exposure";
    const POISONING: &str = "MCP03:2025 Tool Poisoning";
    const INJECTION: &str = "MCP05:2025 Command Injection & Execution";
    const PROMPT: &str = "MCP06:2025 Prompt Injection via Contextual Payloads";
    const AUTH: &str = "MCP07:2025 Insufficient Authentication & Authorization";
    Some(match rule {
        "output-secret-like" | "credential-file-opened" => SECRETS,
        "free-text-path-or-command"
        | "path-traversal-read"
        | "url-file-read"
        | "resource-template-traversal-read"
        | "prompt-traversal-read"
        | "sql-file-written"
        | "sql-file-read"
        | "symlink-escape-read"
        | "path-prefix-escape-read"
        | "url-fetch-loopback"
        | "url-fetch-private"
        | "path-traversal-write"
        | "symlink-escape-write"
        | "path-prefix-escape-write"
        | "option-injection-write"
        | "url-file-write" => INJECTION,
        "forbidden-call-accepted"
            if matches!(mutation, Some("path traversal" | "shell metacharacters")) =>
        {
            INJECTION
        }
        "canary-reflected" | "wire-reflected" => PROMPT,
        "made-up-handle-accepted" => AUTH,
        r if r.starts_with("description-") && r != "description-names-other-tool" => POISONING,
        "pin-tool-changed"
        | "pin-tool-added"
        | "tool-changed-in-session"
        | "tool-added-in-session" => POISONING,
        r if r.starts_with("auth-") || r.starts_with("origin-") || r.starts_with("host-") => AUTH,
        _ => return None,
    })
}
