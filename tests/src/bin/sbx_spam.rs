//! Sandbox test probe: writes `<mib>` MiB to stdout and to stderr at the
//! same time, each framed by markers: `HEAD-OUT\n` … `TAIL-OUT\n` on stdout,
//! `HEAD-ERR\n` … `TAIL-ERR\n` on stderr. Total per stream: mib·2^20 + 18.

use std::io::Write;

fn spam(mut w: impl Write, tag: &str, mib: usize) -> std::io::Result<()> {
    w.write_all(format!("HEAD-{tag}\n").as_bytes())?;
    let chunk = vec![b'.'; 1 << 16];
    for _ in 0..mib * 16 {
        w.write_all(&chunk)?;
    }
    w.write_all(format!("TAIL-{tag}\n").as_bytes())?;
    w.flush()
}

fn main() {
    let mib: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::exit(2));
    let err = std::thread::spawn(move || spam(std::io::stderr().lock(), "ERR", mib));
    let out_ok = spam(std::io::stdout().lock(), "OUT", mib).is_ok();
    let err_ok = err.join().is_ok_and(|r| r.is_ok());
    std::process::exit(if out_ok && err_ok { 0 } else { 1 });
}
