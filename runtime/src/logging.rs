//! Logging set up the one safe way for an MCP server.
//!
//! A stdio server's standard output *is* the JSON-RPC channel: one stray
//! log line there and the client stops parsing the session. [`init`]
//! installs a `tracing` subscriber that
//!
//! - writes to **standard error**, never standard output;
//! - formats fields through [`RedactingFields`] (secret-like fields
//!   redacted, values shortened, control characters and escapes
//!   neutralised, so a logged value cannot forge a line);
//! - uses ANSI colours only when standard error is a terminal;
//! - takes its levels from `RUST_LOG`, else from the given default:
//!   a default level and `target=level` directives, comma-separated
//!   (`warn,hardened_mcp=debug`); a value it cannot read (span or field
//!   directives, which need `tracing-subscriber`'s `EnvFilter` and its
//!   regex engine) leaves the default in force;
//! - keeps the MCP SDK's own lines (target `rmcp`) at `warn` and above
//!   whatever `RUST_LOG` says, and writes them without their field values:
//!   below `warn` rmcp logs every message it receives (the client's name
//!   and version, method names, tool names and arguments), and its warnings
//!   carry request ids and error texts that quote the peer. An rmcp line
//!   says where in rmcp it was logged and which fields it had;
//! - leaves out rmcp's error about an answer it could not send because the
//!   client had gone ("failed to send pending response during drain"): a
//!   client closing its connection mid-call is an ordinary event of a
//!   network server, and the HTTP transport logs it at `debug` where the
//!   connection ends.
//!
//! Internal errors carry a reference id ([`crate::error::ReferenceId`]) that
//! points into this log: without a logger the id points at nothing.
//!
//! ```no_run
//! // First thing in `main`:
//! hardened_mcp::logging::init("info");
//! // … build the server and serve it over stdio …
//! ```

use std::fmt;
use std::io::IsTerminal as _;

use tracing::{Event, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::{Format, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::redact::RedactingFields;

/// The environment variable [`init`] reads the level from.
pub const LEVEL_ENV: &str = "RUST_LOG";

/// The log target of the MCP SDK, whose lines quote its peer.
const PEER_QUOTING_TARGET: &str = "rmcp";

/// The most rmcp may log (see the module documentation).
const PEER_QUOTING_CAP: LevelFilter = LevelFilter::WARN;

/// rmcp's messages (at `error`) that report a peer gone before its answer
/// was sent: see the module documentation.
const PEER_GONE: [&str; 1] = ["failed to send pending response during drain"];

/// Installs the process-wide subscriber (see the module documentation).
/// `default_level` applies when `RUST_LOG` is unset or invalid, e.g.
/// `"info"` or `"warn,hardened_mcp=info"`. Returns `false` (and changes
/// nothing) when a subscriber was already installed.
pub fn init(default_level: &str) -> bool {
    let subscriber = subscriber(
        default_level,
        std::io::stderr,
        std::io::stderr().is_terminal(),
    );
    // `try_init` also forwards the `log` crate's records (rustls, hyper …)
    // into this subscriber.
    subscriber.try_init().is_ok()
}

/// The subscriber [`init`] installs, writing to `writer` (with ANSI colours
/// when `ansi`): for a server that logs somewhere else than standard
/// error, or a test that reads what the server logged.
pub fn subscriber<W>(default_level: &str, writer: W, ansi: bool) -> impl Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let from_env = std::env::var(LEVEL_ENV).ok();
    with_filter(levels(from_env.as_deref(), default_level), writer, ansi)
}

/// The levels of `from_env` (`RUST_LOG`) when set and readable, else of
/// `default_level`, else `info`.
fn levels(from_env: Option<&str>, default_level: &str) -> Targets {
    from_env
        .filter(|v| !v.trim().is_empty())
        .and_then(|v| v.parse().ok())
        .or_else(|| default_level.parse().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO))
}

/// `filter` with rmcp and its modules held to [`PEER_QUOTING_CAP`]: a
/// directive for them (or the default, when none names rmcp) above the cap
/// is lowered to it; a stricter one stays.
fn capped(filter: Targets) -> Targets {
    let within = |level: LevelFilter| level.min(PEER_QUOTING_CAP);
    let rmcp = filter
        .iter()
        .find(|(t, _)| *t == PEER_QUOTING_TARGET)
        .map(|(_, l)| l)
        .or_else(|| filter.default_level())
        .unwrap_or(LevelFilter::OFF);
    let modules: Vec<(String, LevelFilter)> = filter
        .iter()
        .filter(|(t, _)| {
            t.strip_prefix(PEER_QUOTING_TARGET)
                .is_some_and(|rest| rest.starts_with("::"))
        })
        .map(|(t, l)| (t.to_owned(), within(l)))
        .collect();
    filter
        .with_target(PEER_QUOTING_TARGET, within(rmcp))
        .with_targets(modules)
}

/// [`subscriber`] with `filter` in place of the one `RUST_LOG` or the
/// default level gives; rmcp's cap is added to it.
fn with_filter<W>(filter: Targets, writer: W, ansi: bool) -> impl Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = capped(filter);
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .fmt_fields(RedactingFields)
        .event_format(WithheldPeerFields(Format::default()))
        .with_writer(writer);
    tracing_subscriber::registry()
        .with(filter)
        .with(PeerGoneIsOrdinary)
        .with(layer)
}

fn is_rmcp(target: &str) -> bool {
    target == PEER_QUOTING_TARGET
        || target
            .strip_prefix(PEER_QUOTING_TARGET)
            .is_some_and(|rest| rest.starts_with("::"))
}

/// Drops rmcp's [`PEER_GONE`] errors (see the module documentation).
struct PeerGoneIsOrdinary;

impl<S: Subscriber> tracing_subscriber::Layer<S> for PeerGoneIsOrdinary {
    fn event_enabled(
        &self,
        event: &Event<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        let meta = event.metadata();
        if *meta.level() != tracing::Level::ERROR || !is_rmcp(meta.target()) {
            return true;
        }
        let mut message = Message(None);
        event.record(&mut message);
        !message.0.is_some_and(|m| PEER_GONE.contains(&m.as_str()))
    }
}

/// The `message` field of an event, as text.
struct Message(Option<String>);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

/// Formats events as `F` does, except rmcp's: those are written as their
/// time, level, target, source location and field names, values withheld.
struct WithheldPeerFields<F>(F);

impl<S, N, F> FormatEvent<S, N> for WithheldPeerFields<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let target = meta.target();
        if !is_rmcp(target) {
            return self.0.format_event(ctx, writer, event);
        }
        SystemTime.format_time(&mut writer)?;
        write!(
            writer,
            " {:>5} {target}: {}:{} (values withheld:",
            meta.level(),
            meta.file().unwrap_or("?"),
            meta.line().unwrap_or(0)
        )?;
        for field in meta.fields() {
            write!(writer, " {}", field.name())?;
        }
        writeln!(writer, ")")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Capture {
        type Writer = Capture;
        fn make_writer(&'a self) -> Capture {
            self.clone()
        }
    }

    fn logged(f: impl FnOnce()) -> String {
        logged_at("trace", f)
    }

    fn logged_at(levels: &str, f: impl FnOnce()) -> String {
        let out = Capture::default();
        let sub = with_filter(levels.parse().unwrap(), out.clone(), false);
        tracing::subscriber::with_default(sub, f);
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn rmcp_lines_keep_their_place_and_lose_their_values() {
        let text = logged(|| {
            tracing::warn!(target: "rmcp::service", id = "PEER-ID", "rejected {}", "PEER-TEXT");
            tracing::debug!(target: "rmcp", peer = "PEER-INFO", "received");
        });
        assert!(!text.contains("PEER"), "{text}");
        assert!(text.contains("WARN rmcp::service: "), "{text}");
        assert!(text.contains("(values withheld: message id)"), "{text}");
        // Below warn, rmcp is not logged at all, whatever the level.
        assert_eq!(text.lines().count(), 1, "{text}");
    }

    #[test]
    fn a_peer_gone_before_its_answer_is_not_an_error() {
        let text = logged(|| {
            tracing::error!(target: "rmcp::service", error = "closed", "failed to send pending response during drain");
            // The positive control: rmcp's other errors stay, and so does
            // the same text from anyone else.
            tracing::error!(target: "rmcp::service", error = "panic", "response send task failed during drain");
            tracing::error!(target: "ours", "failed to send pending response during drain");
        });
        assert_eq!(text.lines().count(), 2, "{text}");
        assert_eq!(text.matches("rmcp::service").count(), 1, "{text}");
        assert!(
            text.contains("ours: failed to send pending response during drain"),
            "{text}"
        );
    }

    #[test]
    fn other_lines_are_formatted_as_before() {
        // The positive control: a target that merely starts with "rmcp"
        // is not rmcp's, and its values are written.
        let text = logged(|| {
            tracing::info!(target: "rmcpx", kind = "VISIBLE", "shown");
            tracing::info!(run = "VISIBLE-TOO", "ours");
        });
        assert!(text.contains("VISIBLE"), "{text}");
        assert!(text.contains("VISIBLE-TOO"), "{text}");
        assert!(!text.contains("withheld"), "{text}");
    }

    #[test]
    fn rmcp_stays_capped_whatever_the_directives_say() {
        let emit = || {
            tracing::info!(target: "rmcp", "RMCP-INFO");
            tracing::debug!(target: "rmcp::service", "SERVICE-DEBUG");
            tracing::warn!(target: "rmcp::transport", "TRANSPORT-WARN");
            tracing::debug!(target: "ours", "OURS-DEBUG");
        };
        for levels in ["trace", "rmcp=trace,debug", "debug,rmcp::service=trace"] {
            let text = logged_at(levels, emit);
            assert!(
                !text.contains("RMCP") && !text.contains("SERVICE"),
                "{levels}: {text}"
            );
            assert!(text.contains("rmcp::transport"), "{levels}: {text}");
            // The positive control: the same levels let other targets through.
            assert!(text.contains("OURS-DEBUG"), "{levels}: {text}");
        }
        // A stricter level for rmcp is kept: its warning is gone too.
        let text = logged_at("debug,rmcp=error", emit);
        assert!(!text.contains("rmcp::transport"), "{text}");
        assert!(text.contains("OURS-DEBUG"), "{text}");
    }

    #[test]
    fn levels_come_from_the_environment_else_the_default() {
        let on = |t: &Targets, target: &str, level| t.would_enable(target, &level);
        let t = levels(Some("warn,app=debug"), "info");
        assert!(on(&t, "app", tracing::Level::DEBUG));
        assert!(!on(&t, "other", tracing::Level::INFO));
        // Unset, empty, or a directive this filter cannot read (a span or
        // field directive): the default applies.
        for env in [None, Some(""), Some("[span{field=1}]=trace")] {
            let t = levels(env, "info,app=trace");
            assert!(on(&t, "app", tracing::Level::TRACE), "{env:?}");
            assert!(on(&t, "other", tracing::Level::INFO), "{env:?}");
            assert!(!on(&t, "other", tracing::Level::DEBUG), "{env:?}");
        }
        // An unreadable default: info.
        let t = levels(None, "app=loud");
        assert!(on(&t, "x", tracing::Level::INFO) && !on(&t, "x", tracing::Level::DEBUG));
    }
}
