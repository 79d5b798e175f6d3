//! The stdio target: a child process, JSON-RPC lines out, lines in, every
//! wait bounded.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, timeout_at};

use crate::client::{ClientError, Overlap};
use crate::confine::Confinement;
use crate::netns::PrivateNetwork;

/// How a stdio server is started: under Landlock ([`Confinement`]), in a
/// network namespace of the audit's ([`PrivateNetwork`]), both or neither.
#[derive(Clone, Copy, Default)]
pub struct Isolation<'a> {
    /// `--confine`.
    pub confinement: Option<&'a Confinement>,
    /// `--private-network`.
    pub network: Option<&'a PrivateNetwork>,
}

/// Longest line read from the server; a longer one counts as a broken
/// answer.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// Most bytes of the server's standard error kept (its last ones).
const STDERR_TAIL: usize = 8 * 1024;

/// A running stdio server and the line channel to it.
pub struct StdioClient {
    child: Child,
    /// The server's process group (its pid when started), kept past its
    /// reaping: what it started may outlive it.
    group: Option<i32>,
    /// `None` once closed, the server's cue to end.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The last `STDERR_TAIL` bytes the server wrote to its standard
    /// error, read all along so that it never blocks on a full pipe.
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The task reading it, until the pipe closes.
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
    /// The deadline of each exchange.
    pub timeout: Duration,
}

impl StdioClient {
    /// Starts `program` with `args` in a process group of its own (the
    /// tail of its standard error kept; the group killed when dropped, if
    /// the server still leads it), isolated as `isolation` says.
    pub fn spawn(
        program: &str,
        args: &[String],
        timeout: Duration,
        isolation: Isolation<'_>,
    ) -> Result<Self, ClientError> {
        let mut command = Command::new(program);
        command
            .args(args)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let spawn = |command: &mut Command| match isolation.confinement {
            Some(c) => c.spawn(command).map_err(ClientError::Confine),
            None => command.spawn().map_err(ClientError::Spawn),
        };
        let mut child = match isolation.network {
            None => spawn(&mut command)?,
            // Started from a thread in the namespace, the server is born there.
            Some(net) => {
                let runtime = tokio::runtime::Handle::try_current()
                    .map_err(|e| ClientError::Confine(std::io::Error::other(e)))?;
                let started = net.within(|| {
                    let _entered = runtime.enter();
                    Ok(spawn(&mut command))
                });
                started.map_err(ClientError::Confine)??
            }
        };
        let group = child.id().and_then(|id| i32::try_from(id).ok());
        let (Some(stdin), Some(stdout), Some(mut err)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ClientError::Spawn(std::io::Error::other("no pipes")));
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let tail = Arc::clone(&stderr);
        let stderr_reader = tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = err.read(&mut chunk).await {
                let Ok(mut kept) = tail.lock() else { return };
                kept.extend_from_slice(&chunk[..n]);
                let over = kept.len().saturating_sub(STDERR_TAIL);
                kept.drain(..over);
            }
        });
        Ok(Self {
            child,
            group,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            stderr,
            stderr_reader: Some(stderr_reader),
            timeout,
        })
    }

    /// The last lines the server wrote to its standard error (at most
    /// `STDERR_TAIL` bytes), as it wrote them: escape before showing.
    /// Waits at most half a second for the pipe to close first, so that
    /// a server that just exited has its last words read (one still
    /// running, or a child it left holding the pipe, costs that wait).
    pub async fn stderr_tail(&mut self) -> String {
        if let Some(reader) = self.stderr_reader.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
        }
        self.stderr
            .lock()
            .map(|kept| String::from_utf8_lossy(&kept).into_owned())
            .unwrap_or_default()
    }

    /// Writes `line` and a newline.
    pub async fn send_line(&mut self, line: &[u8]) -> Result<(), ClientError> {
        let deadline = Instant::now() + self.timeout;
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(ClientError::Write);
        };
        let write = async {
            stdin.write_all(line).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        match timeout_at(deadline, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(ClientError::Write),
            Err(_) => Err(ClientError::Timeout),
        }
    }

    /// The next response whose id is `id` (or `null`, for a line the
    /// server could not read an id from), skipping notifications and
    /// answering the server's own requests with "method not found".
    pub async fn response_to(&mut self, id: &Value) -> Result<Value, ClientError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let message = self.next_response(deadline).await?;
            let got = message.get("id").cloned().unwrap_or(Value::Null);
            if &got == id || got.is_null() {
                return Ok(message);
            }
        }
    }

    /// Sends `lines[0]`, then `lines[1]` `gap` later, and reads the answers
    /// to both (matched by `ids`, in whatever order they come) until the
    /// deadline; each with when it came, from the first's sending.
    pub async fn overlapped(
        &mut self,
        lines: [&[u8]; 2],
        ids: [&Value; 2],
        gap: Duration,
    ) -> Overlap {
        let start = Instant::now();
        let deadline = start + self.timeout;
        let mut second_sent = Duration::ZERO;
        let mut end = self.send_line(lines[0]).await.err();
        if end.is_none() {
            tokio::time::sleep(gap).await;
            second_sent = start.elapsed();
            end = self.send_line(lines[1]).await.err();
        }
        let mut answers: [Option<(Value, Duration)>; 2] = [None, None];
        while end.is_none() && answers.iter().any(Option::is_none) {
            match self.next_response(deadline).await {
                Err(e) => end = Some(e),
                Ok(message) => {
                    let got = message.get("id").cloned().unwrap_or(Value::Null);
                    // A `null` id (one the server could not read): the
                    // first request still unanswered.
                    let slot = match ids.iter().position(|id| **id == got) {
                        Some(i) => answers.get_mut(i),
                        None if got.is_null() => answers.iter_mut().find(|a| a.is_none()),
                        None => None,
                    };
                    if let Some(slot) = slot
                        && slot.is_none()
                    {
                        *slot = Some((message, start.elapsed()));
                    }
                }
            }
        }
        let [first, second] = answers.map(|a| a.ok_or_else(|| lost(end.as_ref())));
        Overlap {
            first,
            second,
            second_sent,
        }
    }

    /// The next response the server sends by `deadline`, skipping
    /// notifications and answering the server's own requests with "method
    /// not found".
    async fn next_response(&mut self, deadline: Instant) -> Result<Value, ClientError> {
        loop {
            let message = self.read_message(deadline).await?;
            if message.get("result").is_some() || message.get("error").is_some() {
                return Ok(message);
            }
            if let (Some(req_id), Some(_)) = (message.get("id"), message.get("method")) {
                let refusal = json!({"jsonrpc": "2.0", "id": req_id,
                                     "error": {"code": -32601, "message": "Method not found"}});
                self.send_line(refusal.to_string().as_bytes()).await?;
            }
        }
    }

    async fn read_message(&mut self, deadline: Instant) -> Result<Value, ClientError> {
        loop {
            let mut line = Vec::new();
            let read = timeout_at(deadline, async {
                let mut limited = (&mut self.stdout).take(MAX_LINE as u64);
                limited.read_until(b'\n', &mut line).await
            });
            match read.await {
                Err(_) => return Err(ClientError::Timeout),
                Ok(Err(_)) | Ok(Ok(0)) => return Err(ClientError::Closed),
                Ok(Ok(_)) => {}
            }
            if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                return Ok(v);
            }
            // A line that is not JSON on the protocol channel: skipped here,
            // reported by the wire checks' accounting of unanswered lines.
        }
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Ends the server the way the protocol asks a client to: its input
    /// closed, `grace` to exit, then `SIGTERM` and `grace` again. What it
    /// started and left running in its process group once it has exited
    /// by itself (or had already died), given a moment to follow, is
    /// returned (each process's name, as the kernel has it: escape before
    /// showing) and killed. A server that had to be killed is not held to
    /// what its children do; they are killed all the same. A process that
    /// left the group (`setsid`, a daemon's double fork) is not seen.
    pub async fn shut_down(&mut self, grace: Duration) -> Vec<String> {
        let Some(group) = self.group else {
            return Vec::new();
        };
        self.stdin = None;
        let mut ended = tokio::time::timeout(grace, self.child.wait()).await.is_ok();
        if !ended {
            if let Some(pid) = rustix::process::Pid::from_raw(group) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            ended = tokio::time::timeout(grace, self.child.wait()).await.is_ok();
        }
        if !ended {
            let _ = self.child.kill().await;
        }
        let mut left = group_members(group);
        let settle = Instant::now() + LINGER;
        while !left.is_empty() && Instant::now() < settle {
            tokio::time::sleep(Duration::from_millis(20)).await;
            left = group_members(group);
        }
        kill_group(group);
        if ended { left } else { Vec::new() }
    }
}

/// Kills what is left in `group`, the group of a server the audit started,
/// if anything is: its live members keep its id from being given to a new
/// process, so the signal reaches only them (and none is sent to an empty
/// group, whose id could have been given again).
fn kill_group(group: i32) {
    if !group_members(group).is_empty()
        && let Some(id) = rustix::process::Pid::from_raw(group)
    {
        let _ = rustix::process::kill_process_group(id, rustix::process::Signal::KILL);
    }
}

/// How long the processes of a server that exited are given to end after
/// it before they count as left behind.
const LINGER: Duration = Duration::from_millis(500);

/// The names of the live (not zombie) processes whose process group is
/// `group` and whose session is the audit's own (a server is started in the
/// audit's session), read from `/proc` (empty where there is none).
fn group_members(group: i32) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // The audit's own session as `/proc` gives it: `getsid` answers 0 where
    // the session's leader is outside this PID namespace (a container's
    // process started by a runner outside it), and `/proc` says 0 too, so
    // both sides of the comparison come from the same place.
    let own = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| parse_stat(&stat).map(|s| s.session));
    let mut names = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(s) = parse_stat(&stat)
            && s.group == group
            && Some(s.session) == own
            && s.state != "Z"
        {
            names.push(s.name.to_owned());
        }
    }
    names.sort();
    names
}

/// What `/proc/PID/stat` says of a process, as far as the audit needs.
#[derive(Debug, PartialEq, Eq)]
struct Stat<'a> {
    name: &'a str,
    state: &'a str,
    group: i32,
    session: i32,
}

/// Reads `PID (NAME) STATE PPID PGRP SESSION …`, the name itself possibly
/// holding `)` and spaces (so read up to the last `)`).
fn parse_stat(stat: &str) -> Option<Stat<'_>> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?;
    let mut rest = stat.get(close + 1..)?.split_ascii_whitespace();
    let state = rest.next()?;
    let _ppid = rest.next()?;
    let group = rest.next()?.parse().ok()?;
    let session = rest.next()?.parse().ok()?;
    Some(Stat {
        name,
        state,
        group,
        session,
    })
}

impl Drop for StdioClient {
    /// Kills the server (`kill_on_drop`) and whatever is left in its group.
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if let Some(group) = self.group {
            kill_group(group);
        }
    }
}

/// Why a request left unanswered got no answer: the error that ended the
/// reading (`None`: the deadline).
fn lost(end: Option<&ClientError>) -> ClientError {
    match end {
        None | Some(ClientError::Timeout) => ClientError::Timeout,
        Some(ClientError::Write) => ClientError::Write,
        Some(_) => ClientError::Closed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_parentheses_and_spaces() {
        let line = "4242 (a) b (c)) S 1 4240 4100 0 -1 4194560 ...";
        let stat = |name, state, group, session| Stat {
            name,
            state,
            group,
            session,
        };
        assert_eq!(parse_stat(line), Some(stat("a) b (c)", "S", 4240, 4100)));
        assert_eq!(
            parse_stat("4242 (sleep) Z 1 77 78"),
            Some(stat("sleep", "Z", 77, 78))
        );
        // A session (or parent) outside this PID namespace reads as 0.
        assert_eq!(
            parse_stat("4242 (sh) S 0 4242 0"),
            Some(stat("sh", "S", 4242, 0))
        );
        assert_eq!(parse_stat("4242 sleep S 1 77 78"), None);
        assert_eq!(parse_stat("4242 (sleep) S 1 77"), None);
    }

    #[test]
    fn the_members_of_a_group_are_this_process_s_own_group_s() {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let own = parse_stat(&stat).unwrap().group;
        assert!(!group_members(own).is_empty());
        // No process group has the id of a pid that cannot exist.
        assert!(group_members(i32::MAX).is_empty());
    }

    /// A server that starts a `sleep` and dies at once, seen dead (reaped).
    async fn dead_server_with_a_child() -> StdioClient {
        let args = ["-c".to_owned(), "sleep 4244 & exit 0".to_owned()];
        let mut c =
            StdioClient::spawn("sh", &args, Duration::from_secs(5), Isolation::default()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !c.exited() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(c.exited());
        c
    }

    /// Waits up to 5 s for `group` to be empty.
    async fn emptied(group: i32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !group_members(group).is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        group_members(group).is_empty()
    }

    #[tokio::test]
    async fn what_a_dead_server_left_is_named_and_killed() {
        let mut c = dead_server_with_a_child().await;
        let group = c.group.unwrap();
        assert_eq!(c.shut_down(Duration::from_secs(1)).await, ["sleep"]);
        assert!(emptied(group).await);
    }

    #[tokio::test]
    async fn dropping_the_client_kills_what_a_dead_server_left() {
        let c = dead_server_with_a_child().await;
        let group = c.group.unwrap();
        assert_eq!(group_members(group), ["sleep"], "the positive control");
        drop(c);
        assert!(emptied(group).await);
    }
}
