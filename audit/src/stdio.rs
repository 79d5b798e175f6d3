//! The stdio target: a child process, JSON-RPC lines out, lines in, every
//! wait bounded.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, timeout_at};

use crate::client::{Awaited, ClientError, Overlap};
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
    /// What tells the server's processes (its group, its mark), kept past
    /// its reaping: what it started may outlive it.
    lineage: Option<Lineage>,
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
    /// Starts `program` with `args` in a process group of its own, marked
    /// ([`LINEAGE`]), the tail of its standard error kept (what is left of
    /// its group and its mark killed when dropped), isolated as
    /// `isolation` says.
    pub fn spawn(
        program: &str,
        args: &[String],
        timeout: Duration,
        isolation: Isolation<'_>,
    ) -> Result<Self, ClientError> {
        let mut tag = [0u8; 8];
        getrandom::fill(&mut tag)
            .map_err(|e| ClientError::Spawn(std::io::Error::other(e.to_string())))?;
        let tag: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        let mut command = Command::new(program);
        command
            .args(args)
            .env(LINEAGE, &tag)
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
        let lineage = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(|group| Lineage::new(group, &tag));
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
            lineage,
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
    /// deadline, or what `awaited` says; each with when it came, from the
    /// first's sending. A first left unanswered is skipped when it comes.
    pub async fn overlapped(
        &mut self,
        lines: [&[u8]; 2],
        ids: [&Value; 2],
        gap: Duration,
        awaited: Awaited,
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
        let decided = |a: &[Option<(Value, Duration)>; 2]| match awaited {
            Awaited::Both => a.iter().all(Option::is_some),
            Awaited::Second => a[1].is_some(),
        };
        while end.is_none() && !decided(&answers) {
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
        let unawaited = end.is_none();
        let [first, second] = answers.map(|a| {
            a.ok_or_else(|| match unawaited {
                true => ClientError::NotAwaited,
                false => lost(end.as_ref()),
            })
        });
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
    /// started and left running once it has exited by itself (or had
    /// already died), given a moment to follow, is returned (each
    /// process's name, as the kernel has it: escape before showing) and
    /// killed: the live members of its process group and the processes
    /// that carry its mark wherever they went (`setsid`, a daemon's double
    /// fork). A server that had to be killed is not held to what its
    /// children do; they are killed all the same. A process that left the
    /// group and cleared its environment is not seen.
    pub async fn shut_down(&mut self, grace: Duration) -> Vec<String> {
        let Some(lineage) = &self.lineage else {
            return Vec::new();
        };
        let group = lineage.group;
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
        let mut left = lineage.members();
        let settle = Instant::now() + LINGER;
        while !left.is_empty() && Instant::now() < settle {
            tokio::time::sleep(Duration::from_millis(20)).await;
            left = lineage.members();
        }
        lineage.kill();
        match ended {
            true => left.into_iter().map(|m| m.name).collect(),
            false => Vec::new(),
        }
    }
}

/// The variable every process of an audited server is started with, its
/// value one of its own per server (its mark): a process that left the
/// server's group is still told by it, as long as it kept its environment.
pub const LINEAGE: &str = "HARDENED_MCP_AUDIT_SERVER";

/// What tells the processes of one server the audit started.
struct Lineage {
    /// Its process group (the server's pid).
    group: i32,
    /// `LINEAGE=TAG`, as `/proc/PID/environ` holds it.
    mark: Vec<u8>,
}

/// A live process of a server's.
#[derive(Debug)]
struct Member {
    pid: i32,
    name: String,
    in_group: bool,
}

impl Lineage {
    fn new(group: i32, tag: &str) -> Self {
        Self {
            group,
            mark: format!("{LINEAGE}={tag}").into_bytes(),
        }
    }

    /// The live processes of the group and those carrying the mark, by
    /// name.
    fn members(&self) -> Vec<Member> {
        let mut found = processes(|pid, s, own| {
            (s.group == self.group && Some(s.session) == own)
                .then_some(true)
                .or_else(|| self.carried_by(pid).then_some(false))
        });
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }

    /// Whether the process `pid` has the mark in its environment.
    fn carried_by(&self, pid: i32) -> bool {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == self.mark.as_slice()))
    }

    /// Kills what is left: the group, if it has a live member (which keeps
    /// its id from being given to a new process, so the signal reaches
    /// only them; none is sent to an empty group, whose id could have been
    /// given again), and each marked process outside it through a pidfd,
    /// the mark read again once the pidfd holds the process (a pid given
    /// again in between is not signalled).
    fn kill(&self) {
        use rustix::process::{Pid, PidfdFlags, Signal};
        let members = self.members();
        if members.iter().any(|m| m.in_group)
            && let Some(id) = Pid::from_raw(self.group)
        {
            let _ = rustix::process::kill_process_group(id, Signal::KILL);
        }
        for m in members.iter().filter(|m| !m.in_group) {
            if let Some(pid) = Pid::from_raw(m.pid)
                && let Ok(fd) = rustix::process::pidfd_open(pid, PidfdFlags::empty())
                && self.carried_by(m.pid)
            {
                let _ = rustix::process::pidfd_send_signal(&fd, Signal::KILL);
            }
        }
    }
}

/// How long the processes of a server that exited are given to end after
/// it before they count as left behind.
const LINGER: Duration = Duration::from_millis(500);

/// The live (not zombie) processes of `/proc` that `member` takes, given
/// each one's pid, its stat and the audit's own session (a server is
/// started in the audit's session): `Some(in_group)` for a member. Empty
/// where `/proc` is not.
fn processes(member: impl Fn(i32, &Stat<'_>, Option<i32>) -> Option<bool>) -> Vec<Member> {
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
    let this = std::process::id();
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
            .filter(|pid| u32::try_from(*pid).is_ok_and(|p| p != this))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(s) = parse_stat(&stat).filter(|s| s.state != "Z")
            && let Some(in_group) = member(pid, &s, own)
        {
            found.push(Member {
                pid,
                name: s.name.to_owned(),
                in_group,
            });
        }
    }
    found
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
    /// Kills the server (`kill_on_drop`) and whatever is left of its group
    /// and its mark.
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if let Some(lineage) = &self.lineage {
            lineage.kill();
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

    /// A process in a group of its own, with `LINEAGE=tag` only where
    /// `marked`.
    fn sleeper(tag: &str, marked: bool) -> std::process::Child {
        use std::os::unix::process::CommandExt as _;
        let mut command = std::process::Command::new("sleep");
        command.arg("4243").process_group(0);
        if marked {
            command.env(LINEAGE, tag);
        }
        command.spawn().unwrap()
    }

    #[test]
    fn a_lineage_is_its_group_and_its_mark() {
        let (mut marked, mut unmarked) = (sleeper("t1", true), sleeper("t1", false));
        let pid = |c: &std::process::Child| i32::try_from(c.id()).unwrap();
        let seen = |l: &Lineage| -> Vec<(i32, bool)> {
            l.members().iter().map(|m| (m.pid, m.in_group)).collect()
        };
        // By its group (this test's session), the mark being another's.
        assert_eq!(
            seen(&Lineage::new(pid(&unmarked), "t2")),
            [(pid(&unmarked), true)]
        );
        // By its mark, in no group of the lineage's.
        assert_eq!(seen(&Lineage::new(i32::MAX, "t1")), [(pid(&marked), false)]);
        assert!(seen(&Lineage::new(i32::MAX, "t2")).is_empty());
        Lineage::new(i32::MAX, "t1").kill();
        assert!(
            marked.wait().unwrap().code().is_none(),
            "killed by its mark"
        );
        assert!(
            unmarked.try_wait().unwrap().is_none(),
            "the unmarked one lives"
        );
        unmarked.kill().unwrap();
        unmarked.wait().unwrap();
    }

    /// A server that starts a `sleep` (with `setsid`: out of its group and
    /// session) and dies at once, seen dead (reaped).
    async fn dead_server_with_a_child(setsid: bool) -> StdioClient {
        let script = match setsid {
            false => "sleep 4244 & exit 0",
            true => "setsid sleep 4245 & exit 0",
        };
        let args = ["-c".to_owned(), script.to_owned()];
        let mut c =
            StdioClient::spawn("sh", &args, Duration::from_secs(5), Isolation::default()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !c.exited() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(c.exited());
        c
    }

    /// What is left of `c`'s server, by process and whether in its group,
    /// waited for (5 s at most) to be `want` (a process seen before its
    /// `exec` has another name).
    async fn left(c: &StdioClient, want: &[(&str, bool)]) -> Vec<(String, bool)> {
        let lineage = c.lineage.as_ref().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left: Vec<_> = lineage
                .members()
                .into_iter()
                .map(|m| (m.name, m.in_group))
                .collect();
            let same = left.len() == want.len()
                && left.iter().zip(want).all(|(l, w)| l.0 == w.0 && l.1 == w.1);
            if same || Instant::now() > deadline {
                return left;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn what_a_dead_server_left_is_named_and_killed() {
        for setsid in [false, true] {
            let mut c = dead_server_with_a_child(setsid).await;
            // The control: `setsid` took it out of the group.
            let want = [("sleep", !setsid)];
            assert_eq!(left(&c, &want).await, [("sleep".to_owned(), !setsid)]);
            assert_eq!(c.shut_down(Duration::from_secs(1)).await, ["sleep"]);
            assert!(left(&c, &[]).await.is_empty(), "{setsid}");
        }
    }

    #[tokio::test]
    async fn dropping_the_client_kills_what_a_dead_server_left() {
        for setsid in [false, true] {
            let c = dead_server_with_a_child(setsid).await;
            let lineage = Lineage {
                group: c.lineage.as_ref().unwrap().group,
                mark: c.lineage.as_ref().unwrap().mark.clone(),
            };
            assert_eq!(lineage.members().len(), 1, "the positive control");
            drop(c);
            let deadline = Instant::now() + Duration::from_secs(5);
            while !lineage.members().is_empty() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(lineage.members().is_empty(), "{setsid}");
        }
    }
}
