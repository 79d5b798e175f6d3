//! A child process that says where it listens: a server bound to a port the
//! kernel picked prints it, and the test reads it from the child's standard
//! output (no port is chosen first and bound later, which another test
//! could take in between).

use std::io::BufRead as _;
use std::time::Duration;

/// The text after `prefix` on the first line of `stdout` that starts with
/// it, within `timeout`; `None` when the stream ends or the time passes
/// first. The stream is read on a thread of its own, which keeps draining
/// it afterwards, so a chatty child never blocks on a full pipe.
pub fn announced(
    stdout: impl std::io::Read + Send + 'static,
    prefix: &'static str,
    timeout: Duration,
) -> Option<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(rest) = line.strip_prefix(prefix) {
                let _ = tx.send(rest.to_owned());
            }
        }
    });
    rx.recv_timeout(timeout).ok()
}
