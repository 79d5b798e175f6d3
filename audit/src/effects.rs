//! Effects outside the server's scope, told by the part of the audit they
//! happened in: what a server in the audit's private network sent that
//! the listener did not take ([`crate::netns`]) and where it went, and the credential decoys
//! of its scratch home it opened ([`crate::decoy`]). Each part (the
//! server's start, then each tool's calls) is one finding per effect.

use crate::decoy::Decoys;
use crate::finding::{Finding, Severity};
use crate::netns::{PrivateNetwork, Traffic};
use crate::packet::Sent;

/// A part of an audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// From the server's start to its tools listed.
    Start,
    /// The calls to one tool.
    Tool {
        /// The tool's name.
        name: String,
        /// It has a URL parameter: the network is within what it was asked.
        fetches: bool,
    },
}

/// Watches one server's effects part by part.
#[derive(Debug)]
pub struct Watch<'a> {
    net: Option<(&'a PrivateNetwork, Traffic)>,
    decoys: Option<&'a Decoys>,
    /// The port of the audit's listener: connections to it are the
    /// probes' own.
    listener: Option<u16>,
    part: Part,
}

impl<'a> Watch<'a> {
    /// Watches from the server's start (a new namespace counts from zero);
    /// `None` with nothing to watch. `listener` is the port of the
    /// audit's listener in `net`, where there is one.
    pub fn new(
        net: Option<&'a PrivateNetwork>,
        decoys: Option<&'a Decoys>,
        listener: Option<u16>,
    ) -> Option<Self> {
        (net.is_some() || decoys.is_some()).then(|| Self {
            net: net.map(|n| (n, Traffic::default())),
            decoys,
            listener,
            part: Part::Start,
        })
    }

    /// Ends the current part (its findings) and begins `next`.
    pub fn next(&mut self, next: Part) -> Vec<Finding> {
        let part = std::mem::replace(&mut self.part, next);
        self.end(&part)
    }

    /// Ends the last part (its findings).
    pub fn finish(mut self) -> Vec<Finding> {
        let part = self.part.clone();
        self.end(&part)
    }

    fn end(&mut self, part: &Part) -> Vec<Finding> {
        let tool = match part {
            Part::Start => None,
            Part::Tool { name, .. } => Some(name.as_str()),
        };
        let mut found = Vec::new();
        if let Some(opened) = self.decoys.map(Decoys::opened).filter(|o| !o.is_empty()) {
            found.push(decoys_opened(tool, &opened));
        }
        if let Some((net, since)) = &mut self.net {
            // Read out either way, so the next part starts empty.
            let listener = self.listener;
            let mut to: Vec<Sent> = net
                .sent()
                .into_iter()
                .filter(|s| !matches!(s, Sent::Connect(a) if Some(a.port()) == listener))
                .collect();
            to.sort();
            to.dedup();
            if let Ok(now) = net.traffic() {
                let sent = since.sent_elsewhere(&now);
                *since = now;
                let fetches = matches!(part, Part::Tool { fetches: true, .. });
                if sent != (0, 0) && !fetches {
                    found.push(network_reached(tool, sent, &to));
                }
            }
        }
        found
    }
}

fn decoys_opened(tool: Option<&str>, opened: &[&str]) -> Finding {
    let when = match tool {
        None => "as it started, before any call",
        Some(_) => "during the calls to this tool, none of which named it",
    };
    let finding = Finding::new(
        Severity::High,
        "credential-file-opened",
        format!(
            "the server opened a credential file of its home {when} (a decoy the audit \
             planted): an effect outside everything it was asked, and with a real home the \
             user's keys in the hands of whoever calls its tools"
        ),
    );
    let names: Vec<String> = opened.iter().map(|n| format!("`~/{n}`")).collect();
    let finding = finding.evidence(&format!("opened: {}", names.join(", ")));
    match tool {
        Some(t) => finding.tool(t),
        None => finding,
    }
}

/// The most destinations a finding lists.
const SHOWN: usize = 12;

fn network_reached(
    tool: Option<&str>,
    (connections, datagrams): (u64, u64),
    to: &[Sent],
) -> Finding {
    let mut sent = format!(
        "{connections} TCP connection(s) and {datagrams} UDP datagram(s) to addresses other \
         than the audit's listener (none left the machine: the server ran in the audit's \
         private network)"
    );
    if !to.is_empty() {
        let shown: Vec<String> = to.iter().take(SHOWN).map(Sent::to_string).collect();
        sent.push_str(&format!("; seen: {}", shown.join(", ")));
        if to.len() > SHOWN {
            sent.push_str(&format!(" and {} more", to.len() - SHOWN));
        }
    }
    match tool {
        Some(t) => Finding::new(
            Severity::Medium,
            "network-reached",
            "calls to a tool with no URL parameter made the server reach the network: an \
             effect outside what it was asked to do (a lookup, a report sent home, a service \
             of its host's)",
        )
        .tool(t)
        .evidence(&sent),
        None => Finding::new(
            Severity::Low,
            "network-reached-at-start",
            "the server reached the network as it started, before any call: what it sends \
             and to whom is not the caller's to see (an update check, telemetry)",
        )
        .evidence(&sent),
    }
}
